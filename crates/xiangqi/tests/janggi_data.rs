//! Janggi fixtures: every row of the shared `janggi-perft.tsv` (two independent generators
//! agree on them; every depth, the whole file takes well under a second in release mode) and
//! the start's counts to depth 4 (traditional) and 3 (site), and every row of
//! `janggi-adjudication.tsv` (result and reason after the last move, none before).

use xiangqi::janggi::{self, Game, Position, Rules};

const PERFT: &str = include_str!("data/janggi-perft.tsv");
const ADJUDICATION: &str = include_str!("data/janggi-adjudication.tsv");

#[test]
fn shared_janggi_perft_rows_match() {
    let mut lines = PERFT.lines();
    assert_eq!(lines.next(), Some("fen\trules\tdepth\tnodes"), "unexpected header");
    let (mut checked, mut failures) = (0, Vec::new());
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 4, "bad row: {line}");
        let rules: Rules = cols[1].parse().unwrap();
        let depth: u32 = cols[2].parse().unwrap();
        let nodes: u64 = cols[3].parse().unwrap();
        let pos = Position::from_fen(cols[0], rules).unwrap_or_else(|e| panic!("{line}: {e}"));
        let got = janggi::perft(&pos, depth);
        if got != nodes {
            failures.push(format!("{line}: got {got}"));
        }
        checked += 1;
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} rows differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 400, "only {checked} rows checked");
}

#[test]
fn start_position_counts() {
    let t = Position::start(Rules::Traditional);
    for (d, n) in [32u64, 1024, 33_348, 1_085_579].into_iter().enumerate() {
        assert_eq!(janggi::perft(&t, d as u32 + 1), n);
    }
    let s = Position::start(Rules::Site);
    for (d, n) in [54u64, 2914, 149_974].into_iter().enumerate() {
        assert_eq!(janggi::perft(&s, d as u32 + 1), n);
    }
}

#[test]
fn divide_adds_up_to_perft() {
    let pos = Position::start(Rules::Site);
    let split = janggi::divide(&pos, 2);
    assert_eq!(split.len(), 54);
    assert_eq!(split.iter().map(|(_, n)| n).sum::<u64>(), 2914);
    assert!(janggi::is_pass(split.last().unwrap().0), "the pass comes last");
    assert!(janggi::divide(&pos, 0).is_empty());
}

#[test]
fn shared_janggi_adjudication_rows() {
    let mut lines = ADJUDICATION.lines();
    assert_eq!(lines.next(), Some("fen\tmoves\trules\tresult\treason"), "header");
    let (mut n, mut failures) = (0, Vec::new());
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let place = format!("line {}", i + 2);
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 5, "{place}: {line}");
        let rules: Rules = cols[2].parse().unwrap();
        let pos = Position::from_fen(cols[0], rules).unwrap_or_else(|e| panic!("{place}: {e}"));
        let mut game = Game::new(pos);
        let moves: Vec<&str> = cols[1].split_ascii_whitespace().collect();
        for (k, text) in moves.iter().enumerate() {
            assert_eq!(game.outcome(), None, "{place}: over before move {}", k + 1);
            let m = game
                .position()
                .parse_uci(text)
                .unwrap_or_else(|e| panic!("{place}: move {}: {e}", k + 1));
            // is_winning_move agrees with playing the move on a copy.
            let mover = game.position().turn();
            for legal in game.legal_moves() {
                let mut copy = game.clone();
                let wins = copy.play(legal).unwrap().and_then(|o| o.winner()) == Some(mover);
                assert_eq!(game.is_winning_move(legal), wins, "{place}: {legal}");
            }
            game.play(m).unwrap();
        }
        let (result, reason) = match game.outcome() {
            Some(o) => (o.result_str().to_string(), o.reason().name().to_string()),
            None => ("*".into(), "-".into()),
        };
        if result != cols[3] || reason != cols[4] {
            failures.push(format!("{place}: {line}: got {result} {reason}"));
        }
        if game.is_over() {
            assert!(game.legal_moves().is_empty(), "{place}");
            assert!(game.play(game.position().pass()).is_err(), "{place}");
        }
        n += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(n, 26);
}
