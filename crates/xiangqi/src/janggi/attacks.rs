//! Janggi's attack maps: [`AttackMap::of_janggi_board`] (see [`crate::attacks`], "Janggi").

use super::position::attacked_by;
use super::tables::{DIAG_RAYS, ELEPHANT_MOVES, PALACE_STEPS};
use crate::attacks::{AttackMap, Movement};
use crate::position::Board;
use crate::tables::{HORSE_MOVES, RAYS};
use crate::types::{Color, PieceKind};

#[inline]
const fn bit(s: usize) -> u128 {
    1u128 << s
}

/// Janggi's movement: its pieces' attacks; a pin may lie along a palace diagonal too, so
/// every piece is tried by removal.
const JANGGI: Movement =
    Movement { piece_attacks: janggi_piece_attacks, attacked_by, may_pin: |_, _| true };

impl AttackMap {
    /// The attack map of a janggi `board` (see [`crate::attacks`], "Janggi"). Any board is
    /// accepted: a side without a general has no pins and is not in check.
    pub fn of_janggi_board(board: &Board) -> AttackMap {
        AttackMap::under(board, &JANGGI)
    }
}

/// The points the janggi piece on `from` attacks (see [`crate::attacks`], "Janggi").
fn janggi_piece_attacks(board: &Board, from: usize) -> u128 {
    let Some(piece) = board[from] else {
        return 0;
    };
    let c = piece.color.index();
    let mut out = 0u128;
    let is_cannon = |t: u8| board[t as usize].is_some_and(|p| p.kind == PieceKind::Cannon);
    let along = |ray: &[u8], out: &mut u128| match piece.kind {
        PieceKind::Chariot => {
            for &t in ray {
                *out |= bit(t as usize);
                if board[t as usize].is_some() {
                    break;
                }
            }
        }
        _ => {
            // A cannon: past the first piece, which must not be a cannon, up to and including
            // the next piece unless that is a cannon.
            let Some(k) = ray.iter().position(|&t| board[t as usize].is_some()) else {
                return;
            };
            if is_cannon(ray[k]) {
                return;
            }
            for &t in &ray[k + 1..] {
                if board[t as usize].is_some() {
                    if !is_cannon(t) {
                        *out |= bit(t as usize);
                    }
                    break;
                }
                *out |= bit(t as usize);
            }
        }
    };
    match piece.kind {
        PieceKind::General | PieceKind::Advisor => {
            for &t in PALACE_STEPS[c][from].squares() {
                out |= bit(t as usize);
            }
        }
        PieceKind::Chariot | PieceKind::Cannon => {
            for ray in &RAYS[from] {
                along(ray.squares(), &mut out);
            }
            let d = &DIAG_RAYS[from];
            for k in 0..d.len as usize {
                along(d.ray(k), &mut out);
            }
        }
        PieceKind::Horse => {
            let h = &HORSE_MOVES[from];
            for k in 0..h.len as usize {
                if board[h.block[k] as usize].is_none() {
                    out |= bit(h.to[k] as usize);
                }
            }
        }
        PieceKind::Elephant => {
            let e = &ELEPHANT_MOVES[from];
            for k in 0..e.len as usize {
                if board[e.eye1[k] as usize].is_none() && board[e.eye2[k] as usize].is_none() {
                    out |= bit(e.to[k] as usize);
                }
            }
        }
        PieceKind::Soldier => {
            let forward = if piece.color == Color::Red { 9 } else { -9 };
            let ahead = from as i32 + forward;
            if (0..90).contains(&ahead) {
                out |= bit(ahead as usize);
            }
            let file = from % 9;
            if file > 0 {
                out |= bit(from - 1);
            }
            if file < 8 {
                out |= bit(from + 1);
            }
        }
    }
    out
}
