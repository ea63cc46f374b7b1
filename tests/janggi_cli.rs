//! End-to-end tests of `xqz perft --game janggi` and `xqz outcome --game janggi`: the xiangqi
//! output contract (README, "Other commands") with janggi's rules, rule sets and pass.

use std::process::{Command, Output};

fn xqz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().expect("xqz runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn janggi_perft_start_counts_per_rule_set() {
    let t = xqz(&["perft", "--game", "janggi", "--rules", "traditional", "--depth", "3"]);
    assert!(t.status.success(), "{}", stderr(&t));
    assert_eq!(stdout(&t).lines().last(), Some("Nodes searched: 33348"));
    assert!(stderr(&t).contains("nodes/s"), "timing goes to stderr: {}", stderr(&t));
    // `site` is janggi's default.
    let s = xqz(&["perft", "--game", "janggi", "--depth", "2"]);
    assert!(s.status.success(), "{}", stderr(&s));
    assert_eq!(stdout(&s).lines().last(), Some("Nodes searched: 2914"));
}

#[test]
fn janggi_perft_divide_lists_the_pass() {
    let o =
        xqz(&["perft", "--game", "janggi", "--rules", "traditional", "--depth", "2", "--divide"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 33);
    let total: u64 = lines[..32]
        .iter()
        .map(|l| l.split_once(": ").expect("MOVE: COUNT").1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 1024);
    assert!(lines.contains(&"e1e1: 32"), "the pass, answered by 32 moves");
    assert_eq!(lines[32], "Nodes searched: 1024");
}

#[test]
fn janggi_perft_from_fen() {
    // A traditional row of the shared janggi perft data: the start position, Han to move.
    let fen = "rnba1abnr/4k4/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBA1ABNR b - - 0 1";
    let o =
        xqz(&["perft", "--game", "janggi", "--rules", "traditional", "--fen", fen, "--depth", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().last(), Some("Nodes searched: 32"));
}

#[test]
fn rules_of_the_other_game_are_refused() {
    let o = xqz(&["perft", "--game", "janggi", "--rules", "asian", "--depth", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("traditional"), "{}", stderr(&o));
    let o = xqz(&["outcome", "--rules", "site"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("asian"), "{}", stderr(&o));
    let o = xqz(&["perft", "--game", "chess", "--depth", "1"]);
    assert!(!o.status.success());
}

#[test]
fn janggi_bad_fen_is_an_error_naming_the_problem() {
    let o =
        xqz(&["perft", "--game", "janggi", "--depth", "1", "--fen", "4k4/9/9/9/9/9/9/9/9/K8 w"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("outside its palace"), "{}", stderr(&o));
}

#[test]
fn janggi_outcome_rows_of_the_shared_data() {
    let rows = [
        ("3aka3/R3N4/9/9/9/CP2p4/9/9/9/3K5 w - - 0 1", "a4e4", "site", "1-0 checkmate"),
        ("4k4/9/5r3/9/9/9/9/9/2p6/3K1p3 b - - 0 1", "f7f2", "traditional", "0-1 checkmate"),
        ("3aka3/R3C4/9/9/9/CP2p4/9/9/9/3K5 w - - 0 1", "a4e4", "site", "* -"),
        (
            "8r/4k4/9/9/9/9/9/9/4K4/R8 w - - 198 120",
            "a0a1 i9i8",
            "site",
            "1/2-1/2 no_capture_limit",
        ),
    ];
    for (fen, moves, rules, expected) in rows {
        let o =
            xqz(&["outcome", "--game", "janggi", "--rules", rules, "--fen", fen, "--moves", moves]);
        assert!(o.status.success(), "{fen}: {}", stderr(&o));
        assert_eq!(stdout(&o).trim_end(), expected, "{fen} [{moves}]");
    }
}

#[test]
fn janggi_outcome_passes_and_errors() {
    let o = xqz(&["outcome", "--game", "janggi", "--moves", "e1e1 e8e8 e1e1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim_end(), "* -");
    let bad = xqz(&["outcome", "--game", "janggi", "--moves", "e1e1 a9a9"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("move 2"), "{}", stderr(&bad));
    let after = xqz(&[
        "outcome",
        "--game",
        "janggi",
        "--fen",
        "3aka3/R3N4/9/9/9/CP2p4/9/9/9/3K5 w - - 0 1",
        "--moves",
        "a4e4 e8e8",
    ]);
    assert_eq!(after.status.code(), Some(2));
    assert!(stderr(&after).contains("already over"), "{}", stderr(&after));
}
