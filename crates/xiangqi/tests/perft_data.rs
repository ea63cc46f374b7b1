//! Every row of the shared perft data (computed by two independent reference engines).
//! Depths up to 3 always; every row with `XQZ_SLOW_TESTS=1`.

use xiangqi::{Position, Validation, perft};

const DATA: &str = include_str!("data/xiangqi-perft.tsv");

fn rows() -> Vec<(String, u32, u64)> {
    let mut lines = DATA.lines();
    assert_eq!(lines.next(), Some("fen\tdepth\tnodes"), "unexpected header");
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 3, "bad row: {l}");
            (cols[0].to_string(), cols[1].parse().unwrap(), cols[2].parse().unwrap())
        })
        .collect()
}

fn slow() -> bool {
    std::env::var_os("XQZ_SLOW_TESTS").is_some_and(|v| v != "0")
}

#[test]
fn shared_perft_rows_match() {
    let max_depth = if slow() { u32::MAX } else { 3 };
    let mut checked = 0;
    let mut failures = Vec::new();
    for (fen, depth, nodes) in rows() {
        if depth > max_depth {
            continue;
        }
        // The data come from random games, so every position must pass strict validation.
        let pos = Position::from_fen_with(&fen, Validation::Strict)
            .unwrap_or_else(|e| panic!("{fen}: {e}"));
        let got = perft(&pos, depth);
        if got != nodes {
            failures.push(format!("{fen} depth {depth}: expected {nodes}, got {got}"));
        }
        checked += 1;
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} rows differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 600, "only {checked} rows checked");
}

#[test]
fn start_position_depths_1_to_4() {
    let start = Position::start();
    let expected = [44, 1920, 79_666, 3_290_240];
    for (d, &n) in expected.iter().enumerate() {
        assert_eq!(perft(&start, d as u32 + 1), n, "depth {}", d + 1);
    }
    if slow() {
        assert_eq!(perft(&start, 5), 133_312_995);
    }
}
