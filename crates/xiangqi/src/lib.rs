//! Exact rules of xiangqi (Chinese chess): squares and pieces, [`Setup`] and [`Position`], FEN,
//! UCI, WXF and Chinese move notation, legal move generation, check, Zobrist keys, perft, and the
//! [`Game`] that judges checkmate, repetition (perpetual check and chase), move limits and dead
//! material under a named [`RuleSet`].
//!
//! [`janggi`] (Korean chess) shares the board geometry, the [`Square`], [`Move`], [`Piece`] and
//! [`Outcome`] types and the Zobrist tables, and brings its own position (with the pass), game,
//! rule sets ([`janggi::Rules`]: `site`, `traditional`), perft and environment view
//! ([`janggi::env`]).
//!
//! The crate does no I/O, never panics on untrusted input (FEN and move text), and never
//! allocates while generating moves.
//!
//! # Example
//! ```
//! use xiangqi::{Game, Outcome, Position, RuleSet, perft};
//!
//! let start = Position::start();
//! assert_eq!(perft(&start, 3), 79_666);
//!
//! let mut game = Game::new(start, RuleSet::Asian);
//! for uci in ["h2e2", "h9g7"] {
//!     let mv = game.position().parse_uci(uci).unwrap();
//!     game.play(mv).unwrap();
//! }
//! assert_eq!(game.outcome(), None);
//! assert_eq!(game.position().fen(), "rnbakab1r/9/1c4nc1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR w - - 2 2");
//! ```

pub mod attacks;
mod chinese;
pub mod env;
mod error;
pub mod fen;
mod game;
pub mod janggi;
mod moves;
mod notation;
mod perft;
mod position;
mod tables;
mod types;
mod wxf;

pub use error::{
    FenError, FenField, IllegalMoveReason, ParseFenError, ParseMoveError, PlayError, PositionError,
    kind_name,
};
pub use game::{Game, GameError, Outcome, OutcomeReason, RuleSet};
pub use moves::{MAX_MOVES, Move, MoveList};
pub use notation::RankBase;
pub use perft::{divide, perft};
pub use position::{Board, Position, START_FEN, Setup, Undo, Validation};
pub use types::{ByColor, Color, File, Piece, PieceKind, Rank, Square};
