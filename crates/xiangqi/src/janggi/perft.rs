//! Janggi perft: the leaf count of the legal move tree, passes included (as the shared data
//! `janggi-perft.tsv` counts them). Moves at the last ply are counted, not played. The 200-ply
//! no-capture draw is not applied: perft counts legal moves only.

use super::position::Position;
use crate::moves::Move;

/// Number of leaf nodes `depth` plies below `pos`; `perft(pos, 0) == 1`.
///
/// # Examples
/// ```
/// use xiangqi::janggi::{perft, Position, Rules};
/// assert_eq!(perft(&Position::start(Rules::Traditional), 3), 33_348);
/// assert_eq!(perft(&Position::start(Rules::Site), 2), 2_914);
/// ```
pub fn perft(pos: &Position, depth: u32) -> u64 {
    match depth {
        0 => 1,
        1 => pos.count_legal_moves() as u64,
        _ => {
            let mut total = 0;
            for m in pos.legal_moves() {
                let mut next = *pos;
                next.play_unchecked(m);
                total += perft(&next, depth - 1);
            }
            total
        }
    }
}

/// perft split by first move: each legal move (the pass last) with the leaf count below it.
/// The counts add up to `perft(pos, depth)`. Empty when `depth == 0`.
pub fn divide(pos: &Position, depth: u32) -> Vec<(Move, u64)> {
    if depth == 0 {
        return Vec::new();
    }
    pos.legal_moves()
        .iter()
        .map(|&m| {
            let mut next = *pos;
            next.play_unchecked(m);
            (m, perft(&next, depth - 1))
        })
        .collect()
}
