//! End-to-end tests of the `xqz` binary through its documented contracts (README.md, docs/RULES.md).

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
fn perft_prints_nodes_searched_last() {
    let o = xqz(&["perft", "--depth", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().last(), Some("Nodes searched: 79666"));
    assert!(stderr(&o).contains("nodes/s"), "timing goes to stderr: {}", stderr(&o));
}

#[test]
fn perft_divide_lists_each_move() {
    let o = xqz(&["perft", "--depth", "2", "--divide"]);
    assert!(o.status.success());
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 45);
    let mut total = 0u64;
    for line in &lines[..44] {
        let (mv, n) = line.split_once(": ").expect("MOVE: COUNT");
        assert_eq!(mv.len(), 4, "{line}");
        total += n.parse::<u64>().expect("count");
    }
    assert_eq!(total, 1920);
    assert!(lines.contains(&"a3a4: 44"), "a soldier step opens and closes no line for Black");
    assert_eq!(lines[44], "Nodes searched: 1920");
}

#[test]
fn perft_from_fen_and_lenient() {
    // A data row of the shared perft file.
    let fen = "4kcP1N/8n/3rb4/9/9/9/9/3p1A3/4K4/5CB2 w - - 0 1";
    let o = xqz(&["perft", "--depth", "2", "--fen", fen]);
    assert_eq!(stdout(&o).lines().last(), Some("Nodes searched: 272"));
    // A red elephant across the river: refused strictly, accepted leniently.
    let composed = "4k4/9/9/9/2B6/9/9/9/9/3K5 w - - 0 1";
    let strict = xqz(&["perft", "--depth", "1", "--fen", composed]);
    assert_eq!(strict.status.code(), Some(2));
    assert!(stderr(&strict).contains("elephant"), "{}", stderr(&strict));
    let lenient = xqz(&["perft", "--depth", "1", "--fen", composed, "--lenient"]);
    assert!(lenient.status.success(), "{}", stderr(&lenient));
}

#[test]
fn perft_bad_fen_names_the_field() {
    let o = xqz(&["perft", "--depth", "1", "--fen", "rnbakabnr/9/9 w"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("placement"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
}

#[test]
fn outcome_of_the_start_position_is_ongoing() {
    let o = xqz(&["outcome"]);
    assert!(o.status.success());
    assert_eq!(stdout(&o), "* -\n");
}

#[test]
fn outcome_judges_perpetual_check_under_both_rule_sets() {
    let fen = "4k4/9/R8/9/9/9/8p/9/9/3K5 w - - 0 1";
    let moves = "a7a9 e9e8 a9a8 e8e9 a8a9 e9e8 a9a8 e8e9 a8a9";
    for rules in ["asian", "simple"] {
        let o = xqz(&["outcome", "--fen", fen, "--moves", moves, "--rules", rules]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), "0-1 perpetual_check\n");
    }
    let chase = ["outcome", "--fen", "4k4/7R1/1c7/9/9/9/8p/9/9/3K5 w - - 0 1", "--moves"];
    let moves = "h8h7 b7b6 h7h6 b6b7 h6h7 b7b6 h7h6 b6b7 h6h7";
    let asian = xqz(&[&chase[..], &[moves]].concat());
    assert_eq!(stdout(&asian), "0-1 perpetual_chase\n");
    let simple = xqz(&[&chase[..], &[moves, "--rules", "simple"]].concat());
    assert_eq!(stdout(&simple), "1/2-1/2 repetition\n");
}

#[test]
fn outcome_errors_name_the_move_and_its_index() {
    // h2e2 is legal for Red; then Black cannot play h2e2 (no black piece there).
    let o = xqz(&["outcome", "--moves", "h2e2 h2e2"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("move 2") && err.contains("h2e2"), "{err}");
    assert!(stdout(&o).is_empty());

    let o = xqz(&["outcome", "--moves", "h2e2 zz99"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("move 2") && stderr(&o).contains("zz99"));

    // A move after mate.
    let o = xqz(&[
        "outcome",
        "--fen",
        "3k5/9/9/9/8P/6B2/9/R8/4K4/9 w - - 29 74",
        "--moves",
        "a2d2 d9e9",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("move 2") && stderr(&o).contains("over"), "{}", stderr(&o));
}

#[test]
fn outcome_rejects_unknown_rules() {
    let o = xqz(&["outcome", "--rules", "western"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("western"));
}

#[test]
fn a_closed_stdout_ends_the_program_quietly() {
    // `xqz perft ... | head -0`: the reader is gone before the first line is written. (The
    // pipe's reading end is closed before the program starts: closed after the spawn, a program
    // quicker than the test wrote its lines first and exited 0, one CI run in many.)
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["perft", "--depth", "4", "--divide"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(141), "{err}");
}
