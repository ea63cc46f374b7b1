//! Records of finished self-play games: the moves, the verdict, and one training target per
//! searched position; and their PGN form for people.
//!
//! # PGN
//! [`GameRecord::write_pgn`] writes the Chinese-chess PGN dialect that xiangqi GUIs read (for
//! janggi the same form with `[Game "Janggi"]` and the players in `[Cho]` and `[Han]`; a pass is
//! the general's point twice, `E1-E1`):
//!
//! ```text
//! [Game "Chinese Chess"]
//! [Event "xqz selfplay"]
//! [Round "17"]
//! [Red "xqz"]
//! [Black "xqz"]
//! [Result "1-0"]
//! [Termination "checkmate"]
//! [Rules "asian"]
//! [Format "ICCS"]
//!
//! 1. H2-E2 H9-G7 2. H0-G2 ... 1-0
//! ```
//!
//! `Round` is the game's number counted from 1 (its `game_id` plus one). Moves are in ICCS: the
//! origin and target as an upper-case file letter `A`–`I` and a rank digit `0`–`9` counted from
//! Red's side, joined by a dash. A game that does not begin at the standard start position carries
//! `[SetUp "1"]` and `[FEN "..."]`. `Termination` holds the outcome reason (`checkmate`,
//! `repetition`, `resignation`, `length_cap`, ...). [`parse_pgn_moves`] reads the move text back.

use std::io::{self, Write};

use thiserror::Error;
use xiangqi::env::PlaneInputs;
use xiangqi::{Color, File, Move, Outcome, Rank, Square};

use crate::game::GameEnv;

/// The training target of one searched position.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleTarget {
    /// Plies from the game's start position to this one.
    pub ply: u32,
    /// What the network sees: board, side to move, halfmove clock, repetition flag.
    pub inputs: PlaneInputs,
    /// Every legal move (raw [`Move::to_u16`] codes), in the search's order.
    pub moves: Vec<u16>,
    /// The search policy over `moves` (sums to 1; entries may be 0).
    pub probs: Vec<f32>,
    /// Whether this was a full search (a policy target); cheap searches (playout cap
    /// randomization) only train the value.
    pub full_search: bool,
    /// The search's value of the position for the side to move, in `[-1, 1]`.
    pub root_value: f32,
    /// [`SearchResult::policy_surprise`](crate::SearchResult::policy_surprise) of the search,
    /// in nats (`≥ 0`); `None` where no network prior was searched (imported games).
    pub policy_surprise: Option<f32>,
}

/// A finished game.
#[derive(Clone, Debug)]
pub struct GameRecord<G: GameEnv> {
    /// The game's number in its self-play run (its random generator is seeded from it).
    pub game_id: u64,
    /// The rule set.
    pub rules: G::Rules,
    /// Where the game began.
    pub start: G::Position,
    /// Every move, opening plies included.
    pub moves: Vec<Move>,
    /// The verdict (a rule verdict, `resignation` or `length_cap`).
    pub outcome: Outcome,
    /// One target per searched position, in game order.
    pub samples: Vec<SampleTarget>,
    /// Whether resignation was disabled for this game (to measure false positives).
    pub resign_disabled: bool,
    /// In a game with resignation disabled: the first side whose value fell below the
    /// threshold, which would have resigned.
    pub would_have_resigned: Option<Color>,
    /// For the first and the second player (by [`Color::index`]): the lowest value of the
    /// best move among the side's searches, for that side, in `[-1, 1]`; `1.0` for a side
    /// that searched no move (and in arena games). The side would have resigned under any
    /// threshold above it (see [`crate::resign`]).
    pub lowest_value: [f32; 2],
    /// The final position's material balance, first player's minus second's, in half-pawns
    /// ([`Material::material_half_pawns`](crate::Material::material_half_pawns)), measured where
    /// the game was played (self-play, the arena, an import); `None` when it was not, and then
    /// [`GameRecord::final_material`] replays the moves to find it.
    pub final_material: Option<i16>,
}

/// The material balance of `game`'s position, first player's minus second's, in half-pawns.
pub(crate) fn material_of<G: GameEnv>(game: &G) -> i16 {
    G::material_half_pawns(&game.plane_inputs().board)
}

impl<G: GameEnv> PartialEq for GameRecord<G> {
    fn eq(&self, other: &Self) -> bool {
        self.game_id == other.game_id
            && self.rules == other.rules
            && self.start == other.start
            && self.moves == other.moves
            && self.outcome == other.outcome
            && self.samples == other.samples
            && self.resign_disabled == other.resign_disabled
            && self.would_have_resigned == other.would_have_resigned
            && self.lowest_value == other.lowest_value
            && self.final_material == other.final_material
    }
}

impl<G: GameEnv> GameRecord<G> {
    /// The final result for `color`: +1 win, 0 draw, -1 loss.
    pub fn result_for(&self, color: Color) -> i8 {
        match self.outcome.winner() {
            Some(w) if w == color => 1,
            Some(_) => -1,
            None => 0,
        }
    }

    /// The final position's material balance, first player's minus second's, in half-pawns:
    /// the measured one, or else found by playing the moves from the start (`None` if one of
    /// them is not legal there: a damaged record).
    pub fn final_material(&self) -> Option<i16> {
        if let Some(m) = self.final_material {
            return Some(m);
        }
        let mut last = G::new_game(self.start.clone(), self.rules);
        for &m in &self.moves {
            last.play_checked(m).ok()?;
        }
        Some(material_of(&last))
    }

    /// Whether this game shows a false positive of resignation: resignation was disabled, a
    /// side would have resigned, and that side did not lose.
    pub fn resign_false_positive(&self) -> bool {
        self.would_have_resigned.is_some_and(|c| self.outcome.winner() != Some(c.other()))
    }

    /// Writes the game as PGN (see the [module documentation](self)).
    ///
    /// # Errors
    /// I/O errors of `w`.
    pub fn write_pgn<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let result = self.outcome.result_str();
        writeln!(w, "[Game \"{}\"]", G::PGN_GAME)?;
        writeln!(w, "[Event \"xqz selfplay\"]")?;
        writeln!(w, "[Site \"?\"]")?;
        writeln!(w, "[Date \"????.??.??\"]")?;
        // Counted from 1, as people and the arena's messages count games.
        writeln!(w, "[Round \"{}\"]", self.game_id.saturating_add(1))?;
        writeln!(w, "[{} \"xqz\"]", G::SIDE_TAGS[0])?;
        writeln!(w, "[{} \"xqz\"]", G::SIDE_TAGS[1])?;
        writeln!(w, "[Result \"{result}\"]")?;
        writeln!(w, "[Termination \"{}\"]", self.outcome.reason())?;
        writeln!(w, "[Rules \"{}\"]", self.rules)?;
        writeln!(w, "[Format \"ICCS\"]")?;
        if self.start != G::start_position(self.rules) {
            writeln!(w, "[SetUp \"1\"]")?;
            writeln!(w, "[FEN \"{}\"]", G::position_fen(&self.start))?;
        }
        writeln!(w)?;
        let mut line = String::new();
        let mut number = G::position_fullmove(&self.start);
        let mut turn = G::position_turn(&self.start);
        let mut tokens: Vec<String> = Vec::with_capacity(self.moves.len() * 3 / 2 + 2);
        for (i, &m) in self.moves.iter().enumerate() {
            if turn == Color::Red {
                tokens.push(format!("{number}."));
            } else if i == 0 {
                tokens.push(format!("{number}..."));
            }
            tokens.push(iccs(m));
            if turn == Color::Black {
                number += 1;
            }
            turn = turn.other();
        }
        tokens.push(result.to_string());
        for t in tokens {
            if !line.is_empty() && line.len() + 1 + t.len() > 79 {
                writeln!(w, "{line}")?;
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&t);
        }
        writeln!(w, "{line}")?;
        writeln!(w)
    }
}

/// A move in ICCS notation: `H2-E2`.
pub fn iccs(m: Move) -> String {
    let sq = |s: Square| format!("{}{}", s.file().char().to_ascii_uppercase(), s.rank().index());
    format!("{}-{}", sq(m.from()), sq(m.to()))
}

/// Text that is not a move in ICCS notation.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PgnError {
    /// A token that should be an ICCS move is not one.
    #[error("'{0}' is not an ICCS move (expected like H2-E2)")]
    Syntax(String),
    /// A well-formed move that is illegal where it stands.
    #[error("move {index} '{text}' is illegal: {reason}")]
    Illegal {
        /// 1-based index among the moves.
        index: usize,
        /// The move as written.
        text: String,
        /// Why.
        reason: String,
    },
    /// The `[FEN]` tag could not be read.
    #[error("bad FEN tag: {0}")]
    Fen(String),
}

/// Reads one ICCS move (`H2-E2`, case-insensitive). Checks the syntax only.
///
/// # Errors
/// [`PgnError::Syntax`] if `text` is not two points joined by a dash.
pub fn parse_iccs(text: &str) -> Result<Move, PgnError> {
    let err = || PgnError::Syntax(text.chars().take(16).collect());
    let b = text.as_bytes();
    if b.len() != 5 || b[2] != b'-' {
        return Err(err());
    }
    let sq = |f: u8, r: u8| -> Option<Square> {
        let file = File::from_char(f.to_ascii_lowercase() as char)?;
        let rank = Rank::new(r.checked_sub(b'0')?)?;
        Some(Square::from_coords(file, rank))
    };
    let from = sq(b[0], b[1]).ok_or_else(err)?;
    let to = sq(b[3], b[4]).ok_or_else(err)?;
    Ok(Move::new(from, to))
}

/// Reads the moves of one PGN game (tags and move text) and checks them against the rules,
/// starting from the `[FEN]` tag if present, else the start position. Move numbers, the result,
/// comments in braces and tag lines are skipped.
///
/// # Errors
/// [`PgnError`] for a malformed or illegal move or a bad FEN tag.
pub fn parse_pgn_moves<G: GameEnv>(
    pgn: &str,
    rules: G::Rules,
) -> Result<(G::Position, Vec<Move>), PgnError> {
    let mut start = G::start_position(rules);
    let mut text = String::new();
    for line in pgn.lines() {
        let line = line.trim();
        if let Some(tag) = line.strip_prefix('[') {
            if let Some(fen) = tag.strip_prefix("FEN \"").and_then(|s| s.strip_suffix("\"]")) {
                start = G::position_from_fen(fen, rules).map_err(PgnError::Fen)?;
            }
        } else {
            text.push_str(line);
            text.push(' ');
        }
    }
    let mut game = G::new_game(start.clone(), rules);
    let mut moves = Vec::new();
    let mut in_comment = false;
    for token in text.split_ascii_whitespace() {
        if in_comment || token.starts_with('{') {
            in_comment = !token.ends_with('}');
            continue;
        }
        let is_number = token.trim_end_matches('.').bytes().all(|b| b.is_ascii_digit());
        if is_number || matches!(token, "1-0" | "0-1" | "1/2-1/2" | "*") {
            continue;
        }
        let m = parse_iccs(token)?;
        let index = moves.len() + 1;
        game.play_checked(m).map_err(|reason| PgnError::Illegal {
            index,
            text: token.to_string(),
            reason,
        })?;
        moves.push(m);
    }
    Ok((start, moves))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iccs_round_trips_every_point_pair() {
        let m = xiangqi::Position::start().parse_uci("h2e2").unwrap();
        assert_eq!(iccs(m), "H2-E2");
        assert_eq!(parse_iccs("H2-E2").unwrap(), m);
        assert_eq!(parse_iccs("h2-e2").unwrap(), m);
        for bad in ["H2E2", "J2-E2", "H2-E", "H2-EA", "", "H2—E2"] {
            assert!(parse_iccs(bad).is_err(), "{bad}");
        }
    }
}
