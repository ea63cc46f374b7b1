//! Openings: where the games of a match begin ([`Opening`], [`parse_openings`]).

use thiserror::Error;
use xiangqi::Move;

use crate::game::{GameEnv, SearchGame};

/// Xiangqi's built-in arena openings: a name and the first moves from the start position (UCI,
/// ranks 0–9).
pub const XIANGQI_OPENINGS: [(&str, &str); 8] = [
    ("central cannon vs screen horses", "h2e2 h9g7 h0g2 i9h9 i0h0 b9c7"),
    ("same-direction cannons", "h2e2 h7e7 h0g2 h9g7"),
    ("opposite-direction cannons", "h2e2 b7e7 h0g2 b9c7"),
    ("elephant opening", "c0e2 h7e7 b0c2 h9g7"),
    ("pawn opening vs cannon behind pawn", "c3c4 b7c7 h2e2 c9e7"),
    ("horse opening", "h0g2 h9g7 g3g4 g6g5"),
    ("palace-crossing cannon", "h2d2 h9g7 h0g2 i9h9"),
    ("central cannon, chariot across the river", "h2e2 h9g7 h0g2 i9h9 i0h0 g6g5 h0h6"),
];

/// Janggi's built-in arena openings: the four horse and elephant arrangements each side may
/// choose before the game, in eight pairings, with Cho to move. A name gives Cho's arrangement,
/// then Han's, each as the pieces on files b–c and g–h read from file a to file i (H horse,
/// E elephant), not from the player's own seat. The first is the site's fixed start.
pub const JANGGI_OPENINGS: [(&str, &str); 8] = [
    ("HE-EH vs HE-EH", "rnba1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ABNR w - - 0 1"),
    ("EH-HE vs EH-HE", "rbna1anbr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RBNA1ANBR w - - 0 1"),
    ("HE-HE vs HE-HE", "rnba1anbr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ANBR w - - 0 1"),
    ("EH-EH vs EH-EH", "rbna1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RBNA1ABNR w - - 0 1"),
    ("HE-EH vs EH-HE", "rbna1anbr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ABNR w - - 0 1"),
    ("EH-HE vs HE-EH", "rnba1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RBNA1ANBR w - - 0 1"),
    ("HE-HE vs EH-EH", "rbna1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ANBR w - - 0 1"),
    ("EH-EH vs HE-HE", "rnba1anbr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RBNA1ABNR w - - 0 1"),
];

/// An opening line that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("opening {name}: {reason}")]
pub struct OpeningError {
    /// The opening's name (for a file: `line N`).
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

/// Where games of a match begin: a start position and moves already played from it (all
/// checked legal). The moves count as played: repetitions and clocks see them.
#[derive(Clone, Debug)]
pub struct Opening<G: GameEnv> {
    name: String,
    start: G::Position,
    moves: Vec<Move>,
}

impl<G: GameEnv> PartialEq for Opening<G> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.start == other.start && self.moves == other.moves
    }
}

impl<G: GameEnv> Opening<G> {
    /// An opening from a start position and moves, checked to be legal.
    ///
    /// # Errors
    /// An [`OpeningError`] naming the first illegal move.
    pub fn new(
        name: impl Into<String>,
        start: G::Position,
        moves: Vec<Move>,
    ) -> Result<Opening<G>, OpeningError> {
        let name = name.into();
        let mut game = G::new_game(start.clone(), G::default_rules());
        for (i, &m) in moves.iter().enumerate() {
            game.play_checked(m).map_err(|e| OpeningError {
                name: name.clone(),
                reason: format!("move {} '{m}': {e}", i + 1),
            })?;
        }
        Ok(Opening { name, start, moves })
    }

    /// Reads one line: a FEN, a FEN followed by `moves M1 M2 ...`, or a sequence of UCI moves
    /// (ranks 0–9) from the start position; `startpos moves ...` is accepted too.
    ///
    /// # Errors
    /// An [`OpeningError`] for a bad FEN or a malformed or illegal move.
    pub fn parse(name: impl Into<String>, line: &str) -> Result<Opening<G>, OpeningError> {
        let name = name.into();
        let err = |reason: String| OpeningError { name: name.clone(), reason };
        let line = line.trim();
        let (head, moves_text) = match line.split_once(" moves ") {
            Some((h, m)) => (h.trim(), m),
            None if line.ends_with(" moves") => (line.trim_end_matches(" moves").trim(), ""),
            None => (line, ""),
        };
        let rules = G::default_rules();
        let (start, moves_text) = if head.contains('/') {
            (G::position_from_fen(head, rules).map_err(err)?, moves_text)
        } else if head == "startpos" {
            (G::start_position(rules), moves_text)
        } else if moves_text.is_empty() {
            (G::start_position(rules), head)
        } else {
            return Err(err(format!("'{head}' is neither a FEN nor startpos")));
        };
        let mut game = G::new_game(start.clone(), rules);
        let mut moves = Vec::new();
        for (i, text) in moves_text.split_ascii_whitespace().enumerate() {
            // A character no move has (a byte-order mark inside the file, the NULs of UTF-16
            // text) is shown escaped: printed as it is, it would not be seen.
            if !text.chars().all(|c| c.is_ascii_graphic()) {
                // NULs between letters are UTF-16 text; a mark inside the text, a UTF-8 file
                // joined to another.
                let hint = if text.contains(['\0', '\u{feff}']) {
                    " (is the file UTF-8 text, with a byte-order mark only at its start?)"
                } else {
                    ""
                };
                return Err(err(format!(
                    "move {}: {text:?} holds a character that is no part of a move{hint}",
                    i + 1
                )));
            }
            let m = game.parse_move(text).map_err(|e| err(format!("move {}: {e}", i + 1)))?;
            game.play_checked(m).map_err(|e| err(format!("move {}: {e}", i + 1)))?;
            moves.push(m);
        }
        Opening::new(name, start, moves)
    }

    /// The game's built-in openings ([`Notation::OPENINGS`](crate::Notation::OPENINGS); for
    /// xiangqi [`XIANGQI_OPENINGS`]).
    pub fn builtin() -> Vec<Opening<G>> {
        G::OPENINGS.iter().filter_map(|(name, line)| Opening::parse(*name, line).ok()).collect()
    }

    /// The opening's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The start position.
    pub fn start(&self) -> &G::Position {
        &self.start
    }

    /// The moves played from the start position.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Checks that the opening's moves are legal under `rules` too (they were checked under the
    /// game's default rule set; a janggi cannon slide of `site` is illegal under
    /// `traditional`).
    ///
    /// # Errors
    /// An [`OpeningError`] naming the first move that is illegal under `rules`.
    pub fn check(&self, rules: G::Rules) -> Result<(), OpeningError> {
        let mut game = G::new_game(self.start.clone(), rules);
        for (i, &m) in self.moves.iter().enumerate() {
            game.play_checked(m).map_err(|e| OpeningError {
                name: self.name.clone(),
                reason: format!("move {} '{m}' under rule set {rules}: {e}", i + 1),
            })?;
        }
        Ok(())
    }

    /// The game after the opening moves, under `rules` (see [`Opening::check`]).
    pub fn game(&self, rules: G::Rules) -> G {
        let mut game = G::new_game(self.start.clone(), rules);
        for &m in &self.moves {
            if game.outcome().is_some() {
                break;
            }
            SearchGame::play(&mut game, m);
        }
        game
    }
}

/// Reads an openings file: one opening per line ([`Opening::parse`]); blank lines and lines
/// starting with `#` are skipped. Openings are named `line N`.
///
/// # Errors
/// The first bad line's [`OpeningError`]; an error too if the text holds no opening.
pub fn parse_openings<G: GameEnv>(text: &str) -> Result<Vec<Opening<G>>, OpeningError> {
    let mut out = Vec::new();
    // A UTF-8 byte-order mark (as some Windows editors write) marks the encoding; it is not part
    // of the first line.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(Opening::parse(format!("line {}", i + 1), line)?);
    }
    if out.is_empty() {
        return Err(OpeningError {
            name: "file".to_string(),
            reason: "no opening (one FEN or move sequence per line)".to_string(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_line() {
        let with = parse_openings::<xiangqi::Game>("\u{feff}h2e2 h9g7\r\nb2e2\r\n").unwrap();
        let without = parse_openings::<xiangqi::Game>("h2e2 h9g7\nb2e2\n").unwrap();
        assert_eq!(with.len(), 2);
        for (a, b) in with.iter().zip(&without) {
            assert_eq!(a.name(), b.name());
            assert_eq!(a.moves(), b.moves());
            assert_eq!(a.moves().len(), if a.name() == "line 1" { 2 } else { 1 });
        }
        // Only at the start: elsewhere it is a character of the line, and the error says where.
        let e = parse_openings::<xiangqi::Game>("h2e2\n\u{feff}b2e2\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        // Shown escaped, so that the message names what is wrong.
        assert!(e.to_string().contains("\\u{feff}b2e2"), "{e}");
        // UTF-16 text read as UTF-8: NULs between the letters.
        let e = parse_openings::<xiangqi::Game>("h\u{0}2\u{0}e\u{0}2\u{0}\n").unwrap_err();
        assert!(e.to_string().contains("\\0") && e.to_string().contains("UTF-8"), "{e}");
        // A visible character that is no part of a move is named, without the encoding hint.
        let e = parse_openings::<xiangqi::Game>("h2e2（\n").unwrap_err();
        assert!(e.to_string().contains("h2e2（") && !e.to_string().contains("UTF-8"), "{e}");
    }

    #[test]
    fn janggi_openings_are_checked_under_the_match_rules() {
        use xiangqi::janggi;
        // Cho's cannon b2-b1 slides without a screen: legal under `site` only.
        let o = Opening::<janggi::Game>::parse("slide", "startpos moves b2b1").unwrap();
        o.check(janggi::Rules::Site).unwrap();
        let e = o.check(janggi::Rules::Traditional).unwrap_err();
        assert!(e.reason.contains("traditional"), "{e}");
        assert_eq!(Opening::<janggi::Game>::builtin().len(), 8);
        for b in Opening::<janggi::Game>::builtin() {
            b.check(janggi::Rules::Traditional).unwrap();
            assert_eq!(b.game(janggi::Rules::Traditional).rules(), janggi::Rules::Traditional);
        }
    }

    #[test]
    fn builtin_openings_are_legal_and_distinct() {
        let all = Opening::<xiangqi::Game>::builtin();
        assert_eq!(all.len(), XIANGQI_OPENINGS.len());
        for (o, (_, line)) in all.iter().zip(XIANGQI_OPENINGS) {
            assert_eq!(o.moves().len(), line.split_whitespace().count(), "{}", o.name());
            assert!(!o.game(xiangqi::RuleSet::Asian).is_over());
        }
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i].moves(), all[j].moves());
            }
        }
    }

    #[test]
    fn opening_files_take_fens_and_moves() {
        let text = "# comment\n\nh2e2 h9g7\n\
                    4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1\n\
                    rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1 moves h2e2\n\
                    startpos moves c3c4\n";
        let o = parse_openings::<xiangqi::Game>(text).unwrap();
        assert_eq!(o.len(), 4);
        assert_eq!(o[0].name(), "line 3");
        assert_eq!(o[0].moves().len(), 2);
        assert_eq!(o[1].moves().len(), 0);
        assert_eq!(o[2].moves().len(), 1);
        assert_eq!(o[3].moves()[0].to_string(), "c3c4");
        let e = parse_openings::<xiangqi::Game>("h2e2 h2e2\n").unwrap_err();
        assert!(e.to_string().contains("line 1") && e.to_string().contains("move 2"), "{e}");
        assert!(parse_openings::<xiangqi::Game>("4k4/9 w\n").is_err());
        assert!(parse_openings::<xiangqi::Game>("# nothing\n").is_err());
    }
}
