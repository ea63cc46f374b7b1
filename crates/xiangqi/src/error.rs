//! Error types: one small type per failure, each saying what was wrong and where.

use thiserror::Error;

use crate::moves::Move;
use crate::types::{Color, Piece, PieceKind, Square};

/// The fields of a FEN record, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenField {
    /// Field 1: piece placement.
    Placement,
    /// Field 2: side to move.
    Turn,
    /// Field 3: castling (always `-` in xiangqi).
    Castling,
    /// Field 4: en passant (always `-` in xiangqi).
    EnPassant,
    /// Field 5: halfmove clock (plies since the last capture).
    HalfmoveClock,
    /// Field 6: fullmove number.
    FullmoveNumber,
}

impl std::fmt::Display for FenField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FenField::Placement => "field 1 (placement)",
            FenField::Turn => "field 2 (side to move)",
            FenField::Castling => "field 3 (castling)",
            FenField::EnPassant => "field 4 (en passant)",
            FenField::HalfmoveClock => "field 5 (halfmove clock)",
            FenField::FullmoveNumber => "field 6 (fullmove number)",
        })
    }
}

/// A FEN string that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid FEN, {field}: {reason}")]
pub struct ParseFenError {
    /// The field at fault.
    pub field: FenField,
    /// What was wrong with it.
    pub reason: String,
}

/// A setup that breaks a rule of the game, found by [`crate::Position::from_setup`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PositionError {
    /// A side has no general.
    #[error("{0} has no general")]
    MissingGeneral(Color),
    /// More pieces of one kind than the set holds.
    #[error("{count} {kind}s for {color}, the set has {max}", kind = kind_name(piece.kind), color = piece.color, max = piece.kind.max_count())]
    TooManyPieces {
        /// The piece.
        piece: Piece,
        /// How many there are.
        count: u8,
    },
    /// A general or advisor outside its palace.
    #[error("{color} {kind} on {square} is outside its palace", color = piece.color, kind = kind_name(piece.kind))]
    OutsidePalace {
        /// The piece.
        piece: Piece,
        /// Where it stands.
        square: Square,
    },
    /// A piece on a point it can never reach in a game (an elephant across the river, a soldier
    /// behind its start rank, ...).
    #[error("{color} {kind} on {square}: a point it can never reach (lenient mode accepts it)", color = piece.color, kind = kind_name(piece.kind))]
    UnreachablePoint {
        /// The piece.
        piece: Piece,
        /// Where it stands.
        square: Square,
    },
    /// The two generals face each other on an open file.
    #[error("the generals face each other on an open file")]
    GeneralsFacing,
    /// A clock beyond [`crate::fen::MAX_COUNTER`].
    #[error("halfmove clock {halfmove} or fullmove number {fullmove} exceeds 1000000")]
    CounterOutOfRange {
        /// The halfmove clock given.
        halfmove: u32,
        /// The fullmove number given.
        fullmove: u32,
    },
    /// The side that is not to move is in check (it could be captured).
    #[error("{0} is in check but it is not its turn")]
    OpponentInCheck(Color),
}

/// Any reason a FEN string does not give a legal position.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FenError {
    /// The text does not parse.
    #[error(transparent)]
    Parse(#[from] ParseFenError),
    /// It parses, but the position breaks a rule.
    #[error("invalid FEN, field 1 (placement): {0}")]
    Position(PositionError),
}

impl From<PositionError> for FenError {
    fn from(e: PositionError) -> FenError {
        FenError::Position(e)
    }
}

/// Why a move is not legal in a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum IllegalMoveReason {
    /// The origin is empty.
    #[error("there is no piece on the origin")]
    NoPiece,
    /// The piece on the origin belongs to the side not to move.
    #[error("the piece on the origin belongs to the other side")]
    NotYourPiece,
    /// The target holds a piece of the mover.
    #[error("the target holds one of the mover's own pieces")]
    OwnPieceOnTarget,
    /// The piece cannot make that step from there (wrong geometry, blocked leg or eye, no
    /// screen for a cannon capture, outside the palace, across the river, ...).
    #[error("a {} cannot move that way here", kind_name(*.0))]
    NotAPieceMove(PieceKind),
    /// The move leaves the mover's general attacked.
    #[error("it leaves the own general in check")]
    GeneralAttacked,
    /// The move leaves the two generals facing on an open file.
    #[error("it leaves the generals facing each other")]
    GeneralsFacing,
}

/// A move that could not be played.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("illegal move {mv}: {reason}")]
pub struct PlayError {
    /// The move.
    pub mv: Move,
    /// Why it is illegal.
    pub reason: IllegalMoveReason,
}

/// A move string that cannot be read, or names no legal move.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid move '{text}': {reason}")]
pub struct ParseMoveError {
    /// The text that was given (truncated to 32 characters).
    pub text: String,
    /// What was wrong with it.
    pub reason: String,
}

impl ParseMoveError {
    pub(crate) fn new(text: &str, reason: impl Into<String>) -> ParseMoveError {
        ParseMoveError { text: text.chars().take(32).collect(), reason: reason.into() }
    }
}

/// The English name of a piece kind, lower case.
pub fn kind_name(kind: PieceKind) -> &'static str {
    match kind {
        PieceKind::General => "general",
        PieceKind::Advisor => "advisor",
        PieceKind::Elephant => "elephant",
        PieceKind::Horse => "horse",
        PieceKind::Chariot => "chariot",
        PieceKind::Cannon => "cannon",
        PieceKind::Soldier => "soldier",
    }
}
