//! Adjudication cases: the shared data (from a reference implementation of the Asian rules and
//! the rule texts) and this project's own hand-made cases, in the same column layout:
//! `fen`, `moves` (UCI, ranks 0–9), `rules`, `result` (PGN form), `reason` (or `-`).

mod common;

use xiangqi::{Game, Position, RuleSet};

fn run_file(name: &str, data: &str) -> usize {
    let mut lines = data.lines();
    assert_eq!(lines.next(), Some("fen\tmoves\trules\tresult\treason"), "{name}: header");
    let mut failures = Vec::new();
    let mut n = 0;
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 5, "{name} line {}: {line}", i + 2);
        let (fen, moves, rules, result, reason) = (cols[0], cols[1], cols[2], cols[3], cols[4]);
        let rules: RuleSet = rules.parse().unwrap();
        let pos = Position::from_fen(fen).unwrap_or_else(|e| panic!("{name} line {}: {e}", i + 2));
        let mut game = Game::new(pos, rules);
        for (k, text) in moves.split_ascii_whitespace().enumerate() {
            assert!(
                game.outcome().is_none(),
                "{name} line {}: game over before move {}",
                i + 2,
                k + 1
            );
            let m = game
                .position()
                .parse_uci(text)
                .unwrap_or_else(|e| panic!("{name} line {}: move {}: {e}", i + 2, k + 1));
            check_winning_moves(&game, &format!("{name} line {} before move {}", i + 2, k + 1));
            game.play(m).unwrap();
        }
        let (got_result, got_reason) = match game.outcome() {
            Some(o) => (o.result_str().to_string(), o.reason().name().to_string()),
            None => ("*".to_string(), "-".to_string()),
        };
        if got_result != result || got_reason != reason {
            failures.push(format!(
                "line {}: {fen} [{moves}] {rules}: expected {result} {reason}, got {got_result} {got_reason}",
                i + 2
            ));
        }
        n += 1;
    }
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
    n
}

/// `Game::is_winning_move` agrees, for every legal move, with playing the move on a copy of the
/// game and reading the verdict (the cases' last moves include repetition verdicts for and
/// against the mover).
/// `Game::winning_moves` lists exactly those.
fn check_winning_moves(game: &Game, place: &str) {
    let legal = game.legal_moves();
    let winners = common::winning_moves_by_playing(game);
    for &m in &legal {
        assert_eq!(game.is_winning_move(m), winners.contains(&m), "{place}: is_winning_move({m})");
    }
    assert_eq!(game.winning_moves(&legal).collect::<Vec<_>>(), winners, "{place}: winning_moves");
}

#[test]
fn shared_adjudication_cases() {
    let n = run_file("xiangqi-adjudication.tsv", include_str!("data/xiangqi-adjudication.tsv"));
    assert!(n >= 30);
}

/// Hand-made cases, each derived from the rules in docs/RULES.md (see the comment above each
/// group in the file): every reason each preset can produce, the chase exceptions, both sides
/// attacking, check alternating with chase, a discovered threat, and coinciding verdicts.
#[test]
fn hand_made_adjudication_cases() {
    let n = run_file("adjudication-extra.tsv", include_str!("data/adjudication-extra.tsv"));
    assert!(n >= 30);
}
