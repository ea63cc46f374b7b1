//! FEN in the dialect of Pikafish and other UCI xiangqi engines.
//!
//! `rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1`: ten ranks from rank 9
//! (Black's home) down to rank 0, each read from file a to file i; upper case is Red. Letters
//! `K A B N R C P` (`E` and `H` are read as elephant and horse). Side to move `w` (or `r`) for Red,
//! `b` for Black. The last four fields (castling `-`, en passant `-`, halfmove clock, fullmove
//! number) are optional and default to `- - 0 1`.

use std::fmt;

use crate::error::{FenError, FenField, ParseFenError};
pub use crate::position::MAX_COUNTER;
use crate::position::{Position, Setup, Validation};
use crate::types::{Color, Piece};

fn err(field: FenField, reason: impl Into<String>) -> ParseFenError {
    ParseFenError { field, reason: reason.into() }
}

fn show(c: char) -> String {
    if c.is_ascii_graphic() { format!("'{c}'") } else { format!("{:?}", c) }
}

/// Reads a FEN string into an unvalidated [`Setup`].
///
/// # Errors
/// A [`ParseFenError`] naming the field and the reason: a wrong number of fields or ranks, a rank
/// that is not 9 points wide, an unknown letter, a bad side to move, a counter that is not a
/// number or exceeds [`MAX_COUNTER`].
pub fn parse_setup(fen: &str) -> Result<Setup, ParseFenError> {
    let mut fields = fen.split_ascii_whitespace();
    let placement = fields.next().ok_or_else(|| err(FenField::Placement, "the FEN is empty"))?;
    let mut setup = Setup::empty();
    let ranks: Vec<&str> = placement.split('/').collect();
    if ranks.len() != 10 {
        return Err(err(
            FenField::Placement,
            format!("expected 10 ranks separated by '/', found {}", ranks.len()),
        ));
    }
    for (i, text) in ranks.iter().enumerate() {
        let rank = 9 - i;
        let mut file = 0usize;
        for c in text.chars() {
            if let Some(d) = c.to_digit(10) {
                if d == 0 {
                    return Err(err(
                        FenField::Placement,
                        format!("rank {rank}: '0' is not a run of empty points"),
                    ));
                }
                file += d as usize;
            } else if let Some(p) = Piece::from_fen_char(c) {
                if file < 9 {
                    setup.board[rank * 9 + file] = Some(p);
                }
                file += 1;
            } else {
                return Err(err(
                    FenField::Placement,
                    format!("rank {rank}: unknown piece letter {}", show(c)),
                ));
            }
            if file > 9 {
                return Err(err(
                    FenField::Placement,
                    format!("rank {rank} has more than 9 points"),
                ));
            }
        }
        if file != 9 {
            return Err(err(
                FenField::Placement,
                format!("rank {rank} has {file} points, expected 9"),
            ));
        }
    }
    setup.turn = match fields.next() {
        None => return Err(err(FenField::Turn, "missing (expected 'w' or 'b')")),
        Some("w" | "r" | "W" | "R") => Color::Red,
        Some("b" | "B") => Color::Black,
        Some(other) => {
            return Err(err(
                FenField::Turn,
                format!(
                    "expected 'w' or 'b', found '{}'",
                    other.chars().take(16).collect::<String>()
                ),
            ));
        }
    };
    for field in [FenField::Castling, FenField::EnPassant] {
        match fields.next() {
            None => return Ok(setup),
            Some("-") => {}
            Some(other) => {
                return Err(err(
                    field,
                    format!("expected '-', found '{}'", other.chars().take(16).collect::<String>()),
                ));
            }
        }
    }
    for field in [FenField::HalfmoveClock, FenField::FullmoveNumber] {
        let Some(text) = fields.next() else { return Ok(setup) };
        let value: u32 = text.parse().ok().filter(|&v| v <= MAX_COUNTER).ok_or_else(|| {
            err(
                field,
                format!(
                    "expected a number from 0 to {MAX_COUNTER}, found '{}'",
                    text.chars().take(16).collect::<String>()
                ),
            )
        })?;
        match field {
            FenField::HalfmoveClock => setup.halfmove_clock = value,
            _ => setup.fullmove_number = value.max(1),
        }
    }
    if let Some(extra) = fields.next() {
        return Err(err(
            FenField::FullmoveNumber,
            format!(
                "unexpected text after the last field: '{}'",
                extra.chars().take(16).collect::<String>()
            ),
        ));
    }
    Ok(setup)
}

/// Writes a setup as a six-field FEN string.
pub fn write_fen(setup: &Setup) -> String {
    let mut out = String::with_capacity(90);
    for rank in (0..10).rev() {
        let mut empty = 0;
        for file in 0..9 {
            match setup.board[rank * 9 + file] {
                None => empty += 1,
                Some(p) => {
                    if empty > 0 {
                        out.push(char::from(b'0' + empty));
                        empty = 0;
                    }
                    out.push(p.fen_char());
                }
            }
        }
        if empty > 0 {
            out.push(char::from(b'0' + empty));
        }
        if rank > 0 {
            out.push('/');
        }
    }
    out.push(' ');
    out.push(setup.turn.fen_char());
    out.push_str(&format!(" - - {} {}", setup.halfmove_clock, setup.fullmove_number));
    out
}

impl Position {
    /// Reads and strictly validates a FEN string.
    ///
    /// # Errors
    /// A [`FenError`]: the field that does not parse, or the rule the position breaks.
    ///
    /// # Examples
    /// ```
    /// use xiangqi::Position;
    /// let pos = Position::from_fen("4k4/9/9/9/9/9/9/9/4A4/3K5 w - - 0 1").unwrap();
    /// assert_eq!(pos.legal_moves().len(), 5); // general d1, e0; advisor d2, f2, f0
    /// assert!(Position::from_fen("4k4/9/9/9/9/9/9/9/9/4K4 w - - 0 1").is_err()); // facing
    /// ```
    pub fn from_fen(fen: &str) -> Result<Position, FenError> {
        Position::from_fen_with(fen, Validation::Strict)
    }

    /// Reads a FEN string and validates it as `validation` says.
    ///
    /// # Errors
    /// As [`Position::from_fen`].
    pub fn from_fen_with(fen: &str, validation: Validation) -> Result<Position, FenError> {
        let setup = parse_setup(fen)?;
        Ok(Position::from_setup(&setup, validation)?)
    }

    /// The position as a six-field FEN string.
    pub fn fen(&self) -> String {
        write_fen(&self.to_setup())
    }
}

impl fmt::Debug for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Position({})", write_fen(&self.to_setup()))
    }
}

impl fmt::Display for Position {
    /// A text diagram, rank 9 at the top, followed by the FEN.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in (0..10).rev() {
            write!(f, "{r} ")?;
            for file in 0..9 {
                let c = self.board()[r * 9 + file].map_or('.', |p| p.fen_char());
                write!(f, " {c}")?;
            }
            writeln!(f)?;
        }
        writeln!(f, "   a b c d e f g h i")?;
        write!(f, "{}", write_fen(&self.to_setup()))
    }
}
