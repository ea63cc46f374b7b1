//! Attack maps: which points each side attacks, which pieces hang, which are pinned.
//!
//! These are the rule-derived facts that [`crate::env`]'s tactical input planes show a network
//! (encoding version 2). They are computed from a board alone ([`AttackMap::of_board`]), so a
//! replay shard, which stores only the board, yields them as well as a live [`Position`] does.
//!
//! # Definitions
//! All sets are bit sets over square indices (bit `i` = `rank · 9 + file`, Red's view).
//! * **Attacked by a side**: the points where that side could capture a piece of the opponent
//!   standing there, by the geometry and blocking rules alone (pseudo-legal: whether the capture
//!   would leave its own general attacked is not asked). A point holding a piece of the side's
//!   own is attacked too: the piece there is *protected*.
//!   - general, advisor, soldier: their one-point steps (the general and advisor inside their
//!     palace, the soldier forward and, across the river, sideways);
//!   - elephant, horse: their steps whose eye or leg is empty;
//!   - chariot: every point along a line up to and including the first piece;
//!   - cannon: every point along a line after the first piece (the screen) up to and including
//!     the next piece;
//!   - the general also attacks the opposing general on an open file (the "flying general").
//! * **Hanging**: a piece other than the general that the opponent attacks and its own side does
//!   not (attacked and unprotected).
//! * **Pinned**: a piece other than the general whose removal would leave its own general
//!   attacked while its general is not attacked now. This covers the blocker of a chariot's,
//!   cannon's or facing general's line, the piece on a horse's leg, and one of two cannon screens.
//!   Pins are not reported for a side whose general is already in check, or that has none.
//!
//! The rules are those of `docs/RULES.md` (Asian Xiangqi Federation rules for movement).
//!
//! # Janggi
//! [`AttackMap::of_janggi_board`] gives the same facts under janggi's movement (`docs/RULES.md`,
//! "Janggi"; [`crate::janggi`]): general and guards step along their palace's lines and
//! diagonals; the elephant's two points passed over must be empty; chariots and cannons also
//! run along the palace diagonals; a cannon needs a screen that is not a cannon and attacks no
//! point holding a cannon; soldiers step forward or sideways; the generals do not attack each
//! other. Pinned pieces are found by removal, as above, over every piece of the side. It lives
//! in `janggi/attacks.rs`, beside janggi's rules, which this module does not depend on.

use crate::position::{Board, general_attacked};
use crate::tables::{
    ADVISOR_MOVES, ELEPHANT_MOVES, GENERAL_MOVES, HORSE_MOVES, NORTH, RAYS, SOLDIER_MOVES, SOUTH,
};
use crate::types::{Color, PieceKind};

/// Attack facts of one board for both sides, as bit sets over square indices (Red's view).
///
/// Index every array by [`Color::index`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AttackMap {
    /// Points each side attacks (see the module docs), own pieces' points included.
    pub attacked: [u128; 2],
    /// Pieces of each side (not the general) attacked by the opponent and not protected.
    pub hanging: [u128; 2],
    /// Pieces of each side (not the general) pinned to their general.
    pub pinned: [u128; 2],
    /// Whether each side's general is attacked (by a piece or the facing general).
    pub in_check: [bool; 2],
}

#[inline]
const fn bit(s: usize) -> u128 {
    1u128 << s
}

/// What an attack map needs of one game's movement: xiangqi's ([`XIANGQI`]) or janggi's
/// (`janggi/attacks.rs`).
pub(crate) struct Movement {
    /// The points the piece on a point attacks (empty for an empty point).
    pub(crate) piece_attacks: fn(&Board, usize) -> u128,
    /// Whether the point `s` (a general's) is attacked by side `by`.
    pub(crate) attacked_by: fn(&Board, usize, Color) -> bool,
    /// Whether a piece on the first point could be pinned to a general on the second at all
    /// (a cheap filter before the removal test).
    pub(crate) may_pin: fn(usize, usize) -> bool,
}

/// Xiangqi's movement: a pinned piece stands on its general's file or rank (a line) or on a
/// horse's leg next to it.
const XIANGQI: Movement = Movement {
    piece_attacks,
    attacked_by: general_attacked,
    may_pin: |s, g| {
        let (f, r, gf, gr) = (s % 9, s / 9, g % 9, g / 9);
        f == gf || r == gr || (f.abs_diff(gf) == 1 && r.abs_diff(gr) == 1)
    },
};

impl AttackMap {
    /// The attack map of `board`. Any board is accepted: a side without a general has no pins
    /// and is not in check.
    pub fn of_board(board: &Board) -> AttackMap {
        AttackMap::under(board, &XIANGQI)
    }

    /// The attack map of `board` under a game's `movement`: attacked points from each piece,
    /// hanging pieces from them, check and pins (by removal) from the general's attackers.
    pub(crate) fn under(board: &Board, movement: &Movement) -> AttackMap {
        let mut map = AttackMap::default();
        let mut occupied = [0u128; 2];
        let mut general = [None; 2];
        for (s, p) in board.iter().enumerate() {
            if let Some(p) = p {
                let c = p.color.index();
                occupied[c] |= bit(s);
                map.attacked[c] |= (movement.piece_attacks)(board, s);
                if p.kind == PieceKind::General && general[c].is_none() {
                    general[c] = Some(s);
                }
            }
        }
        for color in [Color::Red, Color::Black] {
            let c = color.index();
            let o = color.other().index();
            let generals = general[c].map_or(0, bit);
            map.hanging[c] = occupied[c] & !generals & map.attacked[o] & !map.attacked[c];
            let Some(g) = general[c] else {
                continue;
            };
            map.in_check[c] = (movement.attacked_by)(board, g, color.other());
            if !map.in_check[c] {
                map.pinned[c] = pinned(board, g, color, occupied[c] & !generals, movement);
            }
        }
        map
    }
}

/// The points the piece on `from` attacks (see the module docs).
fn piece_attacks(board: &Board, from: usize) -> u128 {
    let Some(piece) = board[from] else {
        return 0;
    };
    let c = piece.color.index();
    let mut out = 0u128;
    let blocked = |table: &crate::tables::BlockedSteps, out: &mut u128| {
        for k in 0..table.len as usize {
            if board[table.block[k] as usize].is_none() {
                *out |= bit(table.to[k] as usize);
            }
        }
    };
    match piece.kind {
        PieceKind::General => {
            for &t in GENERAL_MOVES[c][from].squares() {
                out |= bit(t as usize);
            }
            for d in [NORTH, SOUTH] {
                if let Some(&t) =
                    RAYS[from][d].squares().iter().find(|&&t| board[t as usize].is_some())
                {
                    let p = board[t as usize];
                    if matches!(p, Some(q) if q.kind == PieceKind::General && q.color != piece.color)
                    {
                        out |= bit(t as usize);
                    }
                }
            }
        }
        PieceKind::Advisor => {
            for &t in ADVISOR_MOVES[c][from].squares() {
                out |= bit(t as usize);
            }
        }
        PieceKind::Soldier => {
            for &t in SOLDIER_MOVES[c][from].squares() {
                out |= bit(t as usize);
            }
        }
        PieceKind::Elephant => blocked(&ELEPHANT_MOVES[c][from], &mut out),
        PieceKind::Horse => blocked(&HORSE_MOVES[from], &mut out),
        PieceKind::Chariot => {
            for ray in &RAYS[from] {
                for &t in ray.squares() {
                    out |= bit(t as usize);
                    if board[t as usize].is_some() {
                        break;
                    }
                }
            }
        }
        PieceKind::Cannon => {
            for ray in &RAYS[from] {
                let mut screened = false;
                for &t in ray.squares() {
                    let occupied = board[t as usize].is_some();
                    if screened {
                        out |= bit(t as usize);
                        if occupied {
                            break;
                        }
                    } else if occupied {
                        screened = true;
                    }
                }
            }
        }
    }
    out
}

/// Pieces among `candidates` (of `color`, general on `g` not attacked now) whose removal leaves
/// the general attacked under `movement`; only pieces that its `may_pin` lets through are
/// removed.
fn pinned(board: &Board, g: usize, color: Color, candidates: u128, movement: &Movement) -> u128 {
    let mut scratch = *board;
    let mut out = 0u128;
    let mut rest = candidates;
    while rest != 0 {
        let s = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        if !(movement.may_pin)(s, g) {
            continue;
        }
        let piece = scratch[s].take();
        if (movement.attacked_by)(&scratch, g, color.other()) {
            out |= bit(s);
        }
        scratch[s] = piece;
    }
    out
}
