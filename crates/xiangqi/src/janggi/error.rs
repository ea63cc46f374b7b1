//! Janggi's error types. A move that cannot be played is the crate's [`crate::PlayError`], move
//! text that does not parse the crate's [`crate::ParseMoveError`], a FEN that does not parse the
//! crate's [`crate::ParseFenError`]; what differs is what makes a janggi setup illegal, named
//! here with janggi's names (Cho and Han, guard).

use thiserror::Error;

use super::{kind_name, side_name};
use crate::error::ParseFenError;
use crate::position::MAX_COUNTER;
use crate::types::{Color, Piece, Square};

/// A janggi setup that breaks a rule, found by [`super::Position::from_setup`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PositionError {
    /// A side has no general.
    #[error("{} has no general", side_name(*.0))]
    MissingGeneral(Color),
    /// More pieces of one kind than the set holds (one general, two of each other kind, five
    /// soldiers).
    #[error("{count} {kind}s for {side}, the set has {max}", kind = kind_name(piece.kind), side = side_name(piece.color), max = piece.kind.max_count())]
    TooManyPieces {
        /// The piece.
        piece: Piece,
        /// How many there are.
        count: u8,
    },
    /// A general or guard outside its own palace.
    #[error("{side} {kind} on {square} is outside its palace", side = side_name(piece.color), kind = kind_name(piece.kind))]
    OutsidePalace {
        /// The piece.
        piece: Piece,
        /// Where it stands.
        square: Square,
    },
    /// A clock beyond [`MAX_COUNTER`].
    #[error("halfmove clock {halfmove} or fullmove number {fullmove} exceeds {MAX_COUNTER}")]
    CounterOutOfRange {
        /// The halfmove clock given.
        halfmove: u32,
        /// The fullmove number given.
        fullmove: u32,
    },
    /// The side that is not to move is in check (its general could be captured).
    #[error("{} is in check but it is not its turn", side_name(*.0))]
    OpponentInCheck(Color),
}

/// Any reason a FEN string does not give a legal janggi position.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FenError {
    /// The text does not parse (the field and the reason).
    #[error(transparent)]
    Parse(#[from] ParseFenError),
    /// It parses, but the position breaks a rule.
    #[error("invalid janggi FEN, field 1 (placement): {0}")]
    Position(#[from] PositionError),
}

/// An unknown janggi rule set name.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown janggi rule set '{0}' (expected 'site' or 'traditional')")]
pub struct ParseRulesError(pub String);
