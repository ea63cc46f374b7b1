//! The compact [`Move`] and the fixed-capacity [`MoveList`].

use std::fmt;

use arrayvec::ArrayVec;

use crate::types::Square;

/// A move from one point to another, packed in 16 bits (`from | to << 7`).
///
/// A `Move` carries no piece or capture information; the position it is played in supplies
/// those. Its `Display` is the UCI coordinate form with ranks 0–9, e.g. `h2e2`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Move(u16);

impl Move {
    /// Creates a move.
    #[inline]
    pub const fn new(from: Square, to: Square) -> Move {
        Move(from.index() as u16 | (to.index() as u16) << 7)
    }

    /// The origin point.
    #[inline]
    pub const fn from(self) -> Square {
        Square::from_index((self.0 & 0x7f) as usize)
    }

    /// The destination point.
    #[inline]
    pub const fn to(self) -> Square {
        Square::from_index((self.0 >> 7) as usize)
    }

    /// The raw 14-bit encoding (`from | to << 7`), stable across versions.
    #[inline]
    pub const fn to_u16(self) -> u16 {
        self.0
    }

    /// Decodes [`Move::to_u16`]; `None` if either point is off the board.
    pub const fn from_u16(v: u16) -> Option<Move> {
        let (from, to) = ((v & 0x7f) as usize, (v >> 7) as usize);
        if from < 90 && to < 90 && v >> 14 == 0 { Some(Move(v)) } else { None }
    }

    /// The same move seen in the left–right mirror of the board.
    #[must_use]
    pub const fn mirror(self) -> Move {
        Move::new(self.from().mirror(), self.to().mirror())
    }

    /// The same move seen from the other side of the board (ranks flipped).
    #[must_use]
    pub const fn flip(self) -> Move {
        Move::new(self.from().flip(), self.to().flip())
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.from(), self.to())
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Move({self})")
    }
}

/// Capacity of [`MoveList`].
///
/// Worst case: with at most the initial set per side (validation enforces it, lenient mode too),
/// one side has at most 2 chariots × 17 + 2 cannons × 17 + 2 horses × 8 + 2 elephants × 4
/// + 2 advisors × 4 + general × 4 + 5 soldiers × 3 = 119 pseudo-legal moves, below 128.
pub const MAX_MOVES: usize = 128;

/// Moves of one position, stored inline without allocation.
pub type MoveList = ArrayVec<Move, MAX_MOVES>;
