//! Helpers shared by the network benches (included with `mod common;`).

#![allow(dead_code)] // each bench uses some of the helpers

use xiangqi::{Game, Position, RuleSet};
use xiangqi_search::{Encoding, SearchGame};

/// Planes of `n` positions along pseudo-random games (a fixed LCG), each game restarted after
/// `max_plies`, so that the inputs look like real ones.
pub fn positions(n: usize, max_plies: usize) -> Vec<f32> {
    positions_for(&Encoding::of::<Game>(), n, max_plies)
}

/// [`positions`] in `encoding` (with the tactical feature planes where it takes them).
pub fn positions_for(encoding: &Encoding, n: usize, max_plies: usize) -> Vec<f32> {
    let size = encoding.input_size();
    let mut planes = vec![0.0; n * size];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut game = Game::new(Position::start(), RuleSet::Asian);
    let mut moves = Vec::new();
    for chunk in planes.chunks_exact_mut(size) {
        moves.clear();
        game.legal_moves_into(&mut moves);
        if moves.is_empty() || game.len() > max_plies {
            game = Game::new(Position::start(), RuleSet::Asian);
            moves.clear();
            game.legal_moves_into(&mut moves);
        }
        encoding.encode(&game, chunk);
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        SearchGame::play(&mut game, moves[(state >> 33) as usize % moves.len()]);
    }
    planes
}
