//! PGN game collections of xiangqi and janggi, as GUIs, databases, online sites and this
//! project's own writer ([`crate::record`]) write them.
//!
//! The grammar is the chess PGN standard's (Steven J. Edwards, "Portable Game Notation
//! Specification and Implementation Guide", 1994) with the xiangqi conventions of XQStudio and
//! its successors:
//! - **tag pairs** `[Name "value"]` (`\"` and `\\` escaped), among them `[Result "1-0"]`,
//!   `[FEN "..."]` for a set-up position, and `[Format "ICCS"]`, `"WXF"` or `"Chinese"` naming
//!   the move notation (informative only: each move's notation is recognised by its shape, see
//!   [`super::ImportGame::read_move`]);
//! - **move text**: moves, move numbers (`12.`, `12...`, also glued to the move, `12.C2.5`, and
//!   full-width `１２．`), numeric annotation glyphs (`$1`), comments in braces `{...}` and from
//!   `;` to the end of the line, variations in parentheses (nested; skipped), and the game
//!   terminator `1-0`, `0-1`, `1/2-1/2` or `*`;
//! - **several games per file**: a game ends at its terminator, or where a tag follows move
//!   text.
//!
//! Text is UTF-8 or GBK ([`super::decode_text`]). The reader never fails: whatever it cannot
//! make sense of becomes a move text that the replay refuses, naming it.

use super::{GameResult, RecordedMove, SourceGame};

/// Splits a PGN collection into its games (see the [module documentation](self)). Text outside
/// any game (a file's preamble of comments) is dropped; a game with neither tags nor moves is
/// not returned.
pub fn read_pgn(text: &str) -> Vec<SourceGame> {
    let mut games = Vec::new();
    let mut current = SourceGame::default();
    let mut in_moves = false;
    let mut terminator: Option<Option<GameResult>> = None;
    let finish = |g: &mut SourceGame,
                  terminator: &mut Option<Option<GameResult>>,
                  games: &mut Vec<SourceGame>| {
        let g = std::mem::take(g);
        let t = terminator.take();
        if g.tags.is_empty() && g.moves.is_empty() {
            return;
        }
        let mut g = g;
        g.number = games.len() + 1;
        g.result = match g.tag("Result") {
            Some(r) if r.trim() != "*" && !r.trim().is_empty() => GameResult::from_pgn(r),
            _ => t.flatten(),
        };
        g.fen = g.tag("FEN").map(str::trim).filter(|f| !f.is_empty()).map(str::to_string);
        games.push(g);
    };
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let n = chars.len();
    let mut line_start = true;
    while i < n {
        let c = chars[i];
        if c == '\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let at_line_start = line_start;
        line_start = false;
        match c {
            '[' => {
                if in_moves || terminator.is_some() {
                    finish(&mut current, &mut terminator, &mut games);
                    in_moves = false;
                }
                let (tag, next) = read_tag(&chars, i + 1);
                if let Some(tag) = tag {
                    current.tags.push(tag);
                }
                i = next;
            }
            '{' => {
                i = skip_until(&chars, i + 1, '}');
            }
            ';' => {
                i = skip_until(&chars, i + 1, '\n');
                line_start = true;
            }
            '%' if at_line_start => {
                // An escape line (PGN 6.): ignored to its end.
                i = skip_until(&chars, i + 1, '\n');
                line_start = true;
            }
            '(' => {
                let mut depth = 1usize;
                i += 1;
                while i < n && depth > 0 {
                    match chars[i] {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        '{' => {
                            i = skip_until(&chars, i + 1, '}');
                            continue;
                        }
                        ';' => {
                            i = skip_until(&chars, i + 1, '\n');
                            continue;
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            ')' => i += 1,
            _ => {
                let start = i;
                while i < n
                    && !chars[i].is_whitespace()
                    && !matches!(chars[i], '{' | '(' | ';' | '[')
                {
                    i += 1;
                }
                let token: String = chars[start..i].iter().collect();
                if terminator.is_some() {
                    // Move text after a terminator without a tag between: a new game.
                    finish(&mut current, &mut terminator, &mut games);
                }
                match token.as_str() {
                    "1-0" | "0-1" | "1/2-1/2" | "½-½" | "*" => {
                        terminator = Some(GameResult::from_pgn(&token));
                        in_moves = false;
                        continue;
                    }
                    _ => {}
                }
                in_moves = true;
                let token = strip_move_number(&token);
                if token.is_empty() || token.starts_with('$') || is_annotation(token) {
                    continue;
                }
                current.moves.push(RecordedMove::Text(token.to_string()));
            }
        }
    }
    finish(&mut current, &mut terminator, &mut games);
    games
}

/// The index just past the next `end` from `i` (or the end of the text).
fn skip_until(chars: &[char], mut i: usize, end: char) -> usize {
    while i < chars.len() && chars[i] != end {
        i += 1;
    }
    (i + 1).min(chars.len())
}

/// Reads a tag pair's inside from `i` (just after `[`): `Name "value"]`. Returns the pair (if
/// well-formed) and the index after the tag (its `]`, else the end of the line).
fn read_tag(chars: &[char], mut i: usize) -> (Option<(String, String)>, usize) {
    let n = chars.len();
    while i < n && chars[i] == ' ' {
        i += 1;
    }
    let name_start = i;
    while i < n && (chars[i].is_alphanumeric() || chars[i] == '_') {
        i += 1;
    }
    let name: String = chars[name_start..i].iter().collect();
    while i < n && chars[i] == ' ' {
        i += 1;
    }
    if i >= n || chars[i] != '"' || name.is_empty() {
        return (None, skip_until(chars, i, '\n'));
    }
    i += 1;
    let mut value = String::new();
    while i < n && chars[i] != '"' && chars[i] != '\n' {
        if chars[i] == '\\' && i + 1 < n && matches!(chars[i + 1], '"' | '\\') {
            i += 1;
        }
        value.push(chars[i]);
        i += 1;
    }
    if i >= n || chars[i] != '"' {
        return (None, i);
    }
    i += 1;
    while i < n && chars[i] != ']' && chars[i] != '\n' {
        i += 1;
    }
    let end = if i < n && chars[i] == ']' { i + 1 } else { i };
    (Some((name, value)), end)
}

/// `12.C2.5` → `C2.5`, `12...` → ``, `１２．炮二平五` → `炮二平五`, `3.` → ``; other tokens unchanged.
fn strip_move_number(token: &str) -> &str {
    let digits = token.find(|c: char| !(c.is_ascii_digit() || ('０'..='９').contains(&c)));
    let Some(d) = digits else {
        // All digits: a move number without its dot.
        return "";
    };
    if d == 0 {
        return token;
    }
    let rest = &token[d..];
    let dots = rest.trim_start_matches(['.', '．', '、']);
    if dots.len() == rest.len() { token } else { dots }
}

/// Annotation glyphs written after a move as tokens of their own (`!`, `?!`, `+-`).
fn is_annotation(token: &str) -> bool {
    token.chars().all(|c| matches!(c, '!' | '?' | '=' | '+' | '-' | '∓' | '±')) && !token.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(g: &SourceGame) -> Vec<&str> {
        g.moves
            .iter()
            .map(|m| match m {
                RecordedMove::Text(t) => t.as_str(),
                RecordedMove::Points(_) => "?",
            })
            .collect()
    }

    #[test]
    fn tags_comments_variations_and_several_games() {
        let pgn = r#"; a file comment
[Game "Chinese Chess"]
[Event "Test \"cup\""]
[Result "1-0"]
[Format "ICCS"]

1. H2-E2 {centre cannon; a comment} H9-G7 $1 2. H0-G2 (2. B0-C2 (2. G3-G4) I9-H9) I9-H9
3.B2-B6!? ; to the end of the line C9-E7
B9-C7
1-0

[Event "second"]
[FEN "4k4/9/9/9/9/9/9/9/4R4/3K5 w - - 0 1"]
[Result "*"]
1. E1-E8 1/2-1/2
1. 炮二平五 马８进７ ２．马二进三 *
"#;
        let games = read_pgn(pgn);
        assert_eq!(games.len(), 3);
        let g = &games[0];
        assert_eq!(g.number, 1);
        assert_eq!(g.tag("event"), Some("Test \"cup\""));
        assert_eq!(g.result, Some(GameResult::Win(xiangqi::Color::Red)));
        assert_eq!(g.fen, None);
        assert_eq!(texts(g), ["H2-E2", "H9-G7", "H0-G2", "I9-H9", "B2-B6!?", "B9-C7"]);
        let g = &games[1];
        assert_eq!(g.tag("Event"), Some("second"));
        assert_eq!(g.fen.as_deref(), Some("4k4/9/9/9/9/9/9/9/4R4/3K5 w - - 0 1"));
        // The tag says `*`: the terminator's draw stands.
        assert_eq!(g.result, Some(GameResult::Draw));
        assert_eq!(texts(g), ["E1-E8"]);
        let g = &games[2];
        assert!(g.tags.is_empty());
        assert_eq!(g.result, None);
        assert_eq!(texts(g), ["炮二平五", "马８进７", "马二进三"]);
    }

    #[test]
    fn damaged_text_never_panics() {
        for pgn in [
            "",
            "[",
            "[Event",
            "[Event \"x",
            "{ unterminated",
            "(((",
            ")",
            "1.",
            "[A \"b\"] 1. (",
            "1-0 1-0 *",
            "[\"x\"]",
            "1.．．",
            "１２",
        ] {
            let _ = read_pgn(pgn);
        }
    }
}
