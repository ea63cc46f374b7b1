//! perft: the number of leaves of the legal move tree, the standard check of a move generator.
//!
//! Moves at the last ply are counted, not played ("bulk counting"), as reference engines do.
//! Game-ending rules (repetition, move limits) are not applied: perft counts legal moves only.

use crate::moves::Move;
use crate::position::Position;

/// Number of leaf nodes `depth` plies below `pos`. `perft(pos, 0) == 1`.
///
/// # Examples
/// ```
/// use xiangqi::{perft, Position};
/// assert_eq!(perft(&Position::start(), 2), 1920);
/// ```
pub fn perft(pos: &Position, depth: u32) -> u64 {
    let mut pos = *pos;
    perft_inner(&mut pos, depth)
}

fn perft_inner(pos: &mut Position, depth: u32) -> u64 {
    match depth {
        0 => 1,
        1 => pos.count_legal_moves() as u64,
        _ => {
            let moves = pos.legal_moves();
            let mut total = 0;
            for &m in &moves {
                let undo = pos.play_unchecked(m);
                total += perft_inner(pos, depth - 1);
                pos.undo(undo);
            }
            total
        }
    }
}

/// perft split by first move: each legal move with the leaf count below it, in generation
/// order. The counts add up to `perft(pos, depth)`. Empty when `depth == 0`.
pub fn divide(pos: &Position, depth: u32) -> Vec<(Move, u64)> {
    if depth == 0 {
        return Vec::new();
    }
    let mut pos = *pos;
    pos.legal_moves()
        .iter()
        .map(|&m| {
            let undo = pos.play_unchecked(m);
            let n = perft_inner(&mut pos, depth - 1);
            pos.undo(undo);
            (m, n)
        })
        .collect()
}
