//! Janggi (Korean chess) on xiangqi's board geometry: the same 9 × 10 points ([`Square`],
//! [`File`](crate::File), [`Rank`](crate::Rank)), the same palaces, the same orthogonal rays and
//! horse tables, the same [`Move`], [`Piece`] and Zobrist keys; with janggi's own palace
//! diagonals, elephant, soldier, cannon, pass and game end.
//!
//! # Names
//! * [`CHO`] = [`Color::Red`]: moves first, sits at the bottom (ranks 0–2 hold its palace),
//!   upper case in FEN, `w` as side to move. [`HAN`] = [`Color::Black`]: the top, lower case, `b`.
//! * [`GUARD`] = [`PieceKind::Advisor`]; the other kinds keep their xiangqi names. FEN letters
//!   are xiangqi's (`K A B N R C P`), as Fairy-Stockfish's janggi dialect writes them.
//! * A **pass** is the [`Move`] whose origin and target are both the mover's general's point;
//!   written in UCI as that point twice (`e1e1`), as Fairy-Stockfish does ([`is_pass`]).
//!
//! # Rules
//! From `docs/RULES.md`, "Janggi" (a game site's rules):
//! * General and guards: one point along any line of their own palace, orthogonally or along
//!   the diagonals joining the corners through the centre; never out of the palace.
//! * Elephant: one point straight, then two diagonally outward; both points passed over empty.
//! * Horse: one point straight, then one diagonally outward; blocked on the first point.
//! * Chariot: any distance orthogonally; inside either palace also along its diagonals.
//! * Cannon: captures by jumping exactly one piece (the screen), orthogonally or along a palace
//!   diagonal; the screen may not be a cannon and a cannon never captures a cannon. Its
//!   non-capturing moves depend on the [`Rules`]: [`Rules::Site`] (the default) slides like a
//!   chariot; [`Rules::Traditional`] needs a non-cannon screen and lands on any empty point
//!   beyond it, up to the next piece.
//! * Soldier: one point forward or sideways; never backward, no palace-diagonal moves.
//! * A move may not leave the own general attacked; the generals **may** face each other.
//! * Pass: legal exactly when the side to move is not in check.
//! * Outcomes ([`Game`]): checkmate loses; 200 plies without a capture draw (passes count,
//!   only captures reset the count; a checkmate on that ply still wins). No repetition rule.
//!
//! # Example
//! ```
//! use xiangqi::janggi::{self, Game, Position, Rules};
//! use xiangqi::Outcome;
//!
//! let start = Position::start(Rules::Traditional);
//! assert_eq!(janggi::perft(&start, 2), 1024);
//! assert_eq!(janggi::perft(&Position::start(Rules::Site), 1), 54);
//!
//! let mut game = Game::new(start);
//! for uci in ["e1e1", "b9c7"] { // Cho passes, Han develops a horse
//!     let m = game.position().parse_uci(uci).unwrap();
//!     game.play(m).unwrap();
//! }
//! assert_eq!(game.outcome(), None);
//! assert_eq!(
//!     game.position().fen(),
//!     "r1ba1abnr/4k4/1cn4c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ABNR w - - 2 2"
//! );
//! ```

use std::fmt;
use std::str::FromStr;

use arrayvec::ArrayVec;

use crate::notation::parse_square;
#[doc(no_inline)]
pub use crate::{
    Color, GameError, IllegalMoveReason, Move, Outcome, OutcomeReason, ParseFenError,
    ParseMoveError, Piece, PieceKind, PlayError, RankBase, Setup, Square,
};

mod attacks;
pub mod env;
mod error;
mod game;
mod perft;
mod position;
pub(crate) mod tables;

pub use error::{FenError, ParseRulesError, PositionError};
pub use game::{Game, NO_CAPTURE_LIMIT};
pub use perft::{divide, perft};
pub use position::{Position, START_FEN};

/// Cho, the side that moves first (bottom of the board, upper case in FEN, `w`).
pub const CHO: Color = Color::Red;
/// Han, the second side (top of the board, lower case in FEN, `b`).
pub const HAN: Color = Color::Black;
/// The guard (사, sa): janggi's name for [`PieceKind::Advisor`], which it shares in FEN (`A`).
pub const GUARD: PieceKind = PieceKind::Advisor;

/// Capacity of a janggi [`MoveList`].
///
/// Worst case, with at most the initial set per side (validation enforces it): 2 chariots × 21
/// (17 orthogonal points + 4 palace diagonals from a palace centre) + 2 cannons × 21 (the `site`
/// cannon slides like a chariot) + 2 horses × 8 + 2 elephants × 8 + 2 guards × 8 + the general
/// × 8 + 5 soldiers × 3 + the pass = 156, below 160.
pub const MAX_MOVES: usize = 160;

/// Janggi moves of one position, stored inline without allocation.
pub type MoveList = ArrayVec<Move, MAX_MOVES>;

/// The two janggi rule sets. They differ only in the cannon's non-capturing moves
/// (`docs/RULES.md`, "Janggi").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Rules {
    /// The game site's rules (the default): a cannon that does not capture slides like a
    /// chariot, palace diagonals included.
    #[default]
    Site,
    /// Korean tournament play and Fairy-Stockfish: a cannon needs a non-cannon screen for every
    /// move, and lands on any empty point beyond it up to the next piece.
    Traditional,
}

impl Rules {
    /// Both rule sets.
    pub const ALL: [Rules; 2] = [Rules::Site, Rules::Traditional];

    /// The name used in configs, data files and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Rules::Site => "site",
            Rules::Traditional => "traditional",
        }
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Rules {
    type Err = ParseRulesError;

    /// Reads `site` or `traditional`.
    ///
    /// # Errors
    /// [`ParseRulesError`] naming the text and the accepted values.
    fn from_str(s: &str) -> Result<Rules, ParseRulesError> {
        match s {
            "site" => Ok(Rules::Site),
            "traditional" => Ok(Rules::Traditional),
            other => Err(ParseRulesError(other.chars().take(32).collect())),
        }
    }
}

/// Whether `m` is written as a pass (origin equals target). In a position, a pass is legal only
/// on the mover's general's point ([`Position::pass`]).
#[inline]
pub const fn is_pass(m: Move) -> bool {
    m.from().index() == m.to().index()
}

/// The move in UCI coordinates with the chosen rank numbers (`e1e1` for a pass with
/// [`RankBase::Zero`], `e2e2` with [`RankBase::One`]).
pub fn move_to_uci(m: Move, base: RankBase) -> String {
    m.to_uci(base)
}

/// Reads a coordinate move in the chosen rank dialect, a pass (the same point twice) included.
/// Checks only the syntax; [`Position::parse_uci_with`] also checks legality.
///
/// # Errors
/// [`ParseMoveError`] if the text is not two points in that dialect.
pub fn parse_uci_with(text: &str, base: RankBase) -> Result<Move, ParseMoveError> {
    if !text.is_ascii() || text.len() < 4 || text.len() > 6 {
        return Err(ParseMoveError::new(text, "expected two points such as h2e2 (e1e1 to pass)"));
    }
    let split = text[1..]
        .find(|c: char| c.is_ascii_alphabetic())
        .map(|i| i + 1)
        .ok_or_else(|| ParseMoveError::new(text, "expected two points such as h2e2"))?;
    let from = parse_square(text, &text[..split], base)?;
    let to = parse_square(text, &text[split..], base)?;
    Ok(Move::new(from, to))
}

/// Conventional janggi point values for a greedy baseline: chariot 13, cannon 7, horse 5,
/// elephant 3, guard 3, soldier 2, general 0 (the general is never captured). These are the
/// values Korean scoring uses (Han adds 1.5 komi, ignored here); not a rule of play.
pub const fn piece_value(kind: PieceKind) -> i32 {
    match kind {
        PieceKind::General => 0,
        PieceKind::Chariot => 13,
        PieceKind::Cannon => 7,
        PieceKind::Horse => 5,
        PieceKind::Elephant | PieceKind::Advisor => 3,
        PieceKind::Soldier => 2,
    }
}

/// The English name of a side in janggi: `Cho` for [`CHO`], `Han` for [`HAN`].
pub const fn side_name(color: Color) -> &'static str {
    match color {
        Color::Red => "Cho",
        Color::Black => "Han",
    }
}

/// The English name of a piece kind in janggi, lower case (`guard` for [`GUARD`]).
pub const fn kind_name(kind: PieceKind) -> &'static str {
    match kind {
        PieceKind::General => "general",
        PieceKind::Advisor => "guard",
        PieceKind::Elephant => "elephant",
        PieceKind::Horse => "horse",
        PieceKind::Chariot => "chariot",
        PieceKind::Cannon => "cannon",
        PieceKind::Soldier => "soldier",
    }
}
