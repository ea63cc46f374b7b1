//! Every row of the shared perft data (computed by two independent reference engines), every
//! depth: in release mode the 22 depth-4 rows and the depth-5 start count take about 1.5 s
//! each on a two-core machine, so none waits behind a switch.

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

#[test]
fn shared_perft_rows_match() {
    let mut checked = 0;
    let mut deepest = 0;
    let mut failures = Vec::new();
    for (fen, depth, nodes) in rows() {
        // The data come from random games, so every position must pass strict validation.
        let pos = Position::from_fen_with(&fen, Validation::Strict)
            .unwrap_or_else(|e| panic!("{fen}: {e}"));
        let got = perft(&pos, depth);
        if got != nodes {
            failures.push(format!("{fen} depth {depth}: expected {nodes}, got {got}"));
        }
        checked += 1;
        deepest = deepest.max(depth);
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} rows differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 660, "only {checked} rows checked");
    assert_eq!(deepest, 5, "the data's deepest row is the depth-5 one");
}

#[test]
fn start_position_depths_1_to_5() {
    let start = Position::start();
    let expected = [44, 1920, 79_666, 3_290_240, 133_312_995];
    for (d, &n) in expected.iter().enumerate() {
        assert_eq!(perft(&start, d as u32 + 1), n, "depth {}", d + 1);
    }
}
