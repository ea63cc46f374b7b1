//! Helpers shared by the rules crate's integration tests.
#![allow(dead_code)] // each test binary uses a part of these

use xiangqi::{Game, Move, Piece, Position, Setup, Square, Validation};

/// A deterministic 64-bit LCG (Knuth's MMIX constants); the high bits drive the choices.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn below(&mut self, n: usize) -> usize {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

/// The position seen by the other side: ranks flipped, colours swapped, the other side to move.
pub fn colour_flip(pos: &Position) -> Position {
    let mut setup = Setup::empty();
    for s in Square::all() {
        setup.board[s.flip().index()] =
            pos.piece_at(s).map(|p| Piece::new(p.color.other(), p.kind));
    }
    setup.turn = pos.turn().other();
    setup.halfmove_clock = pos.halfmove_clock();
    Position::from_setup(&setup, Validation::Strict).expect("the colour flip of a legal position")
}

/// The legal moves of `game` that win at once for the side to move, found the slow way: each
/// played on a copy of the game, the verdict read (the reference for `Game::winning_moves`).
pub fn winning_moves_by_playing(game: &Game) -> Vec<Move> {
    let mover = game.position().turn();
    game.legal_moves()
        .iter()
        .copied()
        .filter(|&m| {
            let mut copy = game.clone();
            copy.play(m).unwrap().and_then(|o| o.winner()) == Some(mover)
        })
        .collect()
}
