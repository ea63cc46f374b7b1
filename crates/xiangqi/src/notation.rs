//! UCI coordinate notation (`h2e2`), in the 0–9 rank dialect of Pikafish or the 1–10 dialect of
//! Fairy-Stockfish and some GUIs.

use std::fmt::Write as _;

use crate::error::ParseMoveError;
use crate::moves::Move;
use crate::position::Position;
use crate::types::{File, Rank, Square};

/// Which numbers name the ranks in coordinate notation. The choice is always explicit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RankBase {
    /// Ranks 0–9 (Pikafish, UCCI, this project's default): `h2e2`.
    #[default]
    Zero,
    /// Ranks 1–10 (Fairy-Stockfish in UCI mode): `h3e3`, `a10a9`.
    One,
}

impl RankBase {
    fn offset(self) -> u32 {
        match self {
            RankBase::Zero => 0,
            RankBase::One => 1,
        }
    }
}

pub(crate) fn parse_square(text: &str, s: &str, base: RankBase) -> Result<Square, ParseMoveError> {
    let mut chars = s.chars();
    let file = chars
        .next()
        .and_then(File::from_char)
        .ok_or_else(|| ParseMoveError::new(text, "a square must start with a file letter a-i"))?;
    let digits = chars.as_str();
    let n: u32 =
        if !digits.is_empty() && digits.len() <= 2 && digits.bytes().all(|b| b.is_ascii_digit()) {
            digits.parse().unwrap_or(u32::MAX)
        } else {
            u32::MAX
        };
    let off = base.offset();
    let rank = n.checked_sub(off).filter(|&r| r < 10).and_then(|r| Rank::new(r as u8)).ok_or_else(
        || ParseMoveError::new(text, format!("rank '{digits}' is not in {}-{}", off, 9 + off)),
    )?;
    Ok(Square::from_coords(file, rank))
}

impl Move {
    /// Reads a coordinate move (`h2e2`; `h3e3` with [`RankBase::One`]). Checks only the syntax.
    ///
    /// # Errors
    /// A [`ParseMoveError`] if the text is not two squares in the chosen dialect.
    pub fn from_uci(text: &str, base: RankBase) -> Result<Move, ParseMoveError> {
        if !text.is_ascii() || text.len() < 4 || text.len() > 6 {
            return Err(ParseMoveError::new(text, "expected two squares such as h2e2"));
        }
        // The second square starts at the second file letter.
        let split = text[1..]
            .find(|c: char| c.is_ascii_alphabetic())
            .map(|i| i + 1)
            .ok_or_else(|| ParseMoveError::new(text, "expected two squares such as h2e2"))?;
        let from = parse_square(text, &text[..split], base)?;
        let to = parse_square(text, &text[split..], base)?;
        if from == to {
            return Err(ParseMoveError::new(text, "origin and target are the same point"));
        }
        Ok(Move::new(from, to))
    }

    /// Writes the move in coordinate notation with the chosen rank numbers.
    pub fn to_uci(self, base: RankBase) -> String {
        let mut s = String::with_capacity(6);
        let off = base.offset() as usize;
        for sq in [self.from(), self.to()] {
            let _ = write!(s, "{}{}", sq.file().char(), sq.rank().index() + off);
        }
        s
    }
}

impl Position {
    /// Reads a coordinate move with ranks 0–9 and checks that it is legal here.
    ///
    /// # Errors
    /// A [`ParseMoveError`] if the text does not parse or the move is illegal (with the reason).
    pub fn parse_uci(&self, text: &str) -> Result<Move, ParseMoveError> {
        self.parse_uci_with(text, RankBase::Zero)
    }

    /// Reads a coordinate move in the chosen rank dialect and checks that it is legal here.
    ///
    /// # Errors
    /// As [`Position::parse_uci`].
    pub fn parse_uci_with(&self, text: &str, base: RankBase) -> Result<Move, ParseMoveError> {
        let m = Move::from_uci(text, base)?;
        self.check_legal(m)
            .map_err(|reason| ParseMoveError::new(text, format!("illegal: {reason}")))?;
        Ok(m)
    }
}
