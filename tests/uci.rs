//! `xqz uci` driven through pipes, as a GUI would: UCI and UCCI handshakes, positions with
//! history, searches by nodes, time and clock, `stop`, banned moves, and bad input.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use xiangqi::{Game, Position, RuleSet};

mod common;

/// Red: general d0, chariot a1; Black: general e9, chariot i8. The moves below check with the
/// chariot on e1/f1 while the general steps e9-f9-e9: one more f1e1 repeats the position a third
/// time with Red checking on every move of the cycle, which loses (perpetual check).
const PERPETUAL_FEN: &str = "4k4/8r/9/9/9/9/9/9/R8/3K5 w - - 0 1";
const PERPETUAL_MOVES: &str = "a1e1 e9f9 e1f1 f9e9 f1e1 e9f9 e1f1 f9e9";

/// Red to move is checkmated (the position after b7-b9 in the search tests).
const MATED_FEN: &str = "1R2k4/R8/9/9/9/9/9/9/9/3K5 b - - 1 1";

struct Engine {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Engine {
    fn start() -> Engine {
        Engine::start_with(&[])
    }

    /// `xqz uci` with these arguments.
    fn start_with(args: &[&str]) -> Engine {
        let mut child = Command::new(env!("CARGO_BIN_EXE_xqz"))
            .arg("uci")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("xqz uci starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Engine { child, stdin, lines, seen: Vec::new() }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Lines up to and including the first one `pred` accepts; panics after `timeout`.
    fn until(&mut self, timeout: Duration, pred: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    let done = pred(&line);
                    got.push(line);
                    if done {
                        return got;
                    }
                }
                Err(e) => {
                    panic!("timed out: no expected line within {timeout:?} ({e}); got {got:?}")
                }
            }
        }
    }

    fn bestmove(&mut self, timeout: Duration) -> (Vec<String>, String) {
        let lines = self.until(timeout, |l| l.starts_with("bestmove") || l == "nobestmove");
        let last = lines.last().unwrap().clone();
        (lines, last)
    }

    fn ready(&mut self) -> Vec<String> {
        self.send("isready");
        self.until(Duration::from_secs(5), |l| l == "readyok")
    }

    fn finish(mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "xqz uci did not exit");
            thread::sleep(Duration::from_millis(10));
        }
    }
}

fn word_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let mut words = line.split_whitespace();
    words.by_ref().find(|w| *w == key)?;
    words.next()
}

fn game_after(fen: &str, moves: &str) -> Game {
    let mut game = Game::new(Position::from_fen(fen).unwrap(), RuleSet::Asian);
    for m in moves.split_whitespace() {
        let mv = game.position().parse_uci(m).unwrap();
        game.play(mv).unwrap();
    }
    game
}

fn assert_legal(game: &Game, bestmove_line: &str) -> String {
    let mv = word_after(bestmove_line, "bestmove").expect("a move").to_string();
    let m = game.position().parse_uci(&mv).unwrap_or_else(|e| panic!("{bestmove_line}: {e}"));
    assert!(game.position().legal_moves().contains(&m), "{bestmove_line}");
    mv
}

#[test]
fn uci_handshake_position_and_go_nodes() {
    let mut e = Engine::start();
    e.send("uci");
    let hello = e.until(Duration::from_secs(5), |l| l == "uciok");
    assert!(hello[0].starts_with("id name xiangqi-zero "), "{hello:?}");
    assert!(hello.iter().any(|l| l.starts_with("id author ")));
    for name in ["Threads", "Hash", "MultiPV", "Simulations", "NetPath"] {
        assert!(
            hello.iter().any(|l| l.starts_with(&format!("option name {name} type "))),
            "{name}: {hello:?}"
        );
    }
    // No `--net`: no network by default (UCI's spelling of an empty string default).
    assert!(hello.iter().any(|l| l == "option name NetPath type string default <empty>"));
    e.ready();
    e.send("ucinewgame");
    e.send("position startpos moves h2e2 h9g7");
    e.send("go nodes 300");
    let (lines, best) = e.bestmove(Duration::from_secs(10));
    assert_legal(&game_after(xiangqi::START_FEN, "h2e2 h9g7"), &best);
    let info = lines.iter().rev().find(|l| l.starts_with("info depth")).expect("an info line");
    for key in ["depth", "nodes", "nps", "score", "wdl", "pv"] {
        assert!(word_after(info, key).is_some(), "{key} in {info}");
    }
    assert_eq!(word_after(info, "score"), Some("cp"));
    let nodes: u64 = word_after(info, "nodes").unwrap().parse().unwrap();
    assert!((300..=310).contains(&nodes), "{info}");

    // MultiPV: two lines at the end.
    e.send("setoption name MultiPV value 2");
    e.send("position startpos");
    e.send("go depth 4");
    let (lines, _) = e.bestmove(Duration::from_secs(10));
    assert!(lines.iter().any(|l| l.contains(" multipv 2 ")), "{lines:?}");

    // No legal move: bestmove (none).
    e.send(&format!("position fen {MATED_FEN}"));
    e.send("go nodes 10");
    let (_, best) = e.bestmove(Duration::from_secs(5));
    assert_eq!(best, "bestmove (none)");
    e.send("quit");
    assert!(e.finish().success());
}

/// Red: general d0, chariots a8 and b7; Black: general e9 alone, to move. By hand: e9-d9 faces
/// the red general on the open d-file and e9-e8 steps onto rank 8, held by the chariot on a8, so
/// e9-f9 is Black's only move; then b7-b9 mates (rank 9 is the chariot's, f8 the a8 chariot's).
const MATED_IN_ONE_FEN: &str = "4k4/R8/1R7/9/9/9/9/9/9/3K5 b - - 0 1";
/// The same with Red to move: b7-b9 mates at once (the search tests' hand check).
const MATE_IN_ONE_FEN: &str = "4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1";

/// Mate scores count plies to the mate (or to the stalemate, which also loses in xiangqi), also
/// when the search proved the win without playing it (`win_check`): the line ends with the
/// winning move.
#[test]
fn mate_scores_count_the_plies_to_the_mate() {
    let g = game_after(MATED_IN_ONE_FEN, "");
    assert_eq!(g.legal_moves().len(), 1, "Black's only move is e9f9");
    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    for (fen, score, pv_len) in [(MATED_IN_ONE_FEN, "-1", 2), (MATE_IN_ONE_FEN, "1", 1)] {
        e.send(&format!("position fen {fen}"));
        e.send("go nodes 200");
        let (lines, best) = e.bestmove(Duration::from_secs(10));
        let info = lines.iter().rev().find(|l| l.starts_with("info depth")).expect("info");
        assert_eq!(word_after(info, "score"), Some("mate"), "{info}");
        assert_eq!(word_after(info, "mate"), Some(score), "{info}");
        let pv: Vec<&str> = info.split(" pv ").nth(1).unwrap().split_whitespace().collect();
        assert_eq!(pv.len(), pv_len, "{info}");
        // The line is legal and ends with Red's win (checkmate, or no legal move for Black).
        let mut game = game_after(fen, "");
        for m in &pv {
            let mv = game.position().parse_uci(m).unwrap();
            game.play(mv).unwrap();
        }
        assert_eq!(game.outcome().and_then(|o| o.winner()), Some(xiangqi::Color::Red), "{info}");
        assert_eq!(word_after(&best, "bestmove"), Some(pv[0]));
    }
    e.send("quit");
    assert!(e.finish().success());

    // UCCI counts plies: mated in two plies is -9998, mating in one +9999.
    let mut e = Engine::start();
    e.send("ucci");
    e.until(Duration::from_secs(5), |l| l == "ucciok");
    for (fen, score) in [(MATED_IN_ONE_FEN, "-9998"), (MATE_IN_ONE_FEN, "9999")] {
        e.send(&format!("position fen {fen}"));
        e.send("go depth 3");
        let (lines, _) = e.bestmove(Duration::from_secs(10));
        let info = lines.iter().rev().find(|l| l.starts_with("info depth")).expect("info");
        assert_eq!(word_after(info, "score"), Some(score), "{info}");
    }
    e.send("quit");
    e.until(Duration::from_secs(5), |l| l == "bye");
    assert!(e.finish().success());
}

#[test]
fn uci_history_decides_repetitions() {
    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    // With its history, f1e1 repeats the position a third time and loses by perpetual check:
    // between it and a quiet move, the search must take the quiet one.
    let game = game_after(PERPETUAL_FEN, PERPETUAL_MOVES);
    let mut check = game.clone();
    let m = check.position().parse_uci("f1e1").unwrap();
    assert_eq!(check.play(m).unwrap().map(|o| o.reason().name()), Some("perpetual_check"));
    for _ in 0..3 {
        e.send(&format!("position fen {PERPETUAL_FEN} moves {PERPETUAL_MOVES}"));
        e.send("go nodes 400 searchmoves f1e1 f1f2");
        let (_, best) = e.bestmove(Duration::from_secs(10));
        assert_eq!(word_after(&best, "bestmove"), Some("f1f2"), "{best}");
    }
    // Every searched move avoids the losing repetition.
    e.send(&format!("position fen {PERPETUAL_FEN} moves {PERPETUAL_MOVES}"));
    e.send("go nodes 2000");
    let (_, best) = e.bestmove(Duration::from_secs(10));
    assert_ne!(assert_legal(&game, &best), "f1e1");

    // A history that already repeated three times: the rules have ended the game.
    e.send("position startpos moves h0g2 h9g7 g2h0 g7h9 h0g2 h9g7 g2h0 g7h9");
    e.send("go nodes 50");
    let (lines, best) = e.bestmove(Duration::from_secs(10));
    assert!(
        lines.iter().any(|l| l.starts_with("info string") && l.contains("repetition")),
        "{lines:?}"
    );
    assert_legal(&Game::new(Position::start(), RuleSet::Asian), &best);

    // Bare generals: drawn by the position itself, yet a GUI that asks still gets a legal move.
    let bare = "4k4/9/9/9/9/9/9/9/9/3K5 w - - 0 1";
    e.send(&format!("position fen {bare}"));
    e.send("go nodes 50");
    let (_, best) = e.bestmove(Duration::from_secs(10));
    assert_legal(&Game::new(Position::from_fen(bare).unwrap(), RuleSet::Asian), &best);
    e.send("quit");
    assert!(e.finish().success());
}

#[test]
fn uci_stop_answers_at_once() {
    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    // A large tree limit: a timed search ends early once its tree is full, and the default
    // (256 MB) can fill within the 1.2 s below on a fast machine.
    e.send("setoption name Hash value 4096");
    e.send("position startpos");
    e.send("go movetime 20000");
    // Searching: three of the info lines it prints every half second, and no bestmove.
    let infos = std::cell::Cell::new(0);
    let early = e.until(Duration::from_secs(15), |l| {
        infos.set(infos.get() + usize::from(l.starts_with("info depth")));
        infos.get() >= 3 || l.starts_with("bestmove")
    });
    assert!(!early.iter().any(|l| l.starts_with("bestmove")), "ended before 20 s: {early:?}");
    // isready is answered while searching.
    let during = e.ready();
    assert!(!during.iter().any(|l| l.starts_with("bestmove")), "{during:?}");
    // Stop is honoured: the bestmove comes within seconds, long before the 20 s would end.
    let sent = Instant::now();
    e.send("stop");
    let (lines, best) = e.bestmove(Duration::from_secs(10));
    let latency = sent.elapsed();
    assert!(latency < Duration::from_secs(10), "timed out: bestmove {latency:?} after stop");
    assert_legal(&Game::new(Position::start(), RuleSet::Asian), &best);
    // At least one info line a second while searching (the lines before isready count too).
    let infos = e.seen.iter().filter(|l| l.starts_with("info depth")).count();
    assert!(infos >= 3, "{infos} info lines: {lines:?}");

    // go infinite waits for stop even when a node budget would be reached: two info lines (a
    // second of search) and no bestmove.
    e.send("go infinite");
    let infos = std::cell::Cell::new(0);
    let r = e.until(Duration::from_secs(15), |l| {
        infos.set(infos.get() + usize::from(l.starts_with("info depth")));
        infos.get() >= 2 || l.starts_with("bestmove")
    });
    assert!(!r.iter().any(|l| l.starts_with("bestmove")), "go infinite ended by itself: {r:?}");
    e.send("isready");
    let r = e.until(Duration::from_secs(5), |l| l == "readyok");
    assert!(!r.iter().any(|l| l.starts_with("bestmove")), "{r:?}");
    let sent = Instant::now();
    e.send("stop");
    e.bestmove(Duration::from_secs(10));
    assert!(sent.elapsed() < Duration::from_secs(10), "timed out: {:?} after stop", sent.elapsed());

    // Clock: 10 s left, a move takes about a thirtieth of it (333 ms), well within half.
    e.send("position startpos moves h2e2");
    let sent = Instant::now();
    e.send("go wtime 10000 btime 10000 winc 0 binc 0");
    e.bestmove(Duration::from_secs(10));
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(5), "timed out: {took:?} for a move with 10 s left");
    e.send("quit");
    assert!(e.finish().success());
}

#[test]
fn bad_input_is_explained_and_the_engine_stays_ready() {
    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    let long = format!("position startpos moves {}", "h2e2 ".repeat(300_000));
    let bad: Vec<Vec<u8>> = vec![
        b"frobnicate".to_vec(),
        b"setoption name NoSuchOption value 3".to_vec(),
        b"setoption name Hash value lots".to_vec(),
        b"setoption name Threads value 0".to_vec(),
        b"setoption name NetPath value /tmp/net.mpk".to_vec(),
        b"position fen rnbakabnr/9/1c5c1 w".to_vec(),
        b"position fen 4k4/9/9/9/9/9/9/9/9/4K4 w - - 0 1".to_vec(),
        b"position startpos moves h2e2 h2e3".to_vec(),
        b"position startpos moves h2e2 zz".to_vec(),
        b"position".to_vec(),
        b"position sideways".to_vec(),
        b"banmoves h2e2".to_vec(),
        b"go nodes many".to_vec(),
        vec![0xff, 0xfe, b' ', b'g', b'o'],
        long.into_bytes(),
    ];
    for line in bad {
        e.send_bytes(&line);
        e.send_bytes(b"\n");
        let got = e.ready();
        assert!(
            got.iter().any(|l| l.starts_with("info string ")),
            "no explanation for {:?}: {got:?}",
            String::from_utf8_lossy(&line[..line.len().min(60)])
        );
    }
    // `go nodes many` searched with the default budget: make sure its bestmove is out.
    e.send("stop");
    e.ready();
    // After the illegal second move the position is the one after h2e2 (Black to move).
    e.send("d");
    let d = e.until(Duration::from_secs(5), |l| l.starts_with("info string fen"));
    assert!(d.last().unwrap().contains("1C2C4/9/RNBAKABNR b"), "{d:?}");
    e.send("go nodes 20");
    let (_, best) = e.bestmove(Duration::from_secs(5));
    assert_legal(&game_after(xiangqi::START_FEN, "h2e2"), &best);
    // The Cyclone dialect: a bare fen line is a position command.
    e.send(&format!("fen {PERPETUAL_FEN} moves a1e1"));
    e.send("go nodes 20");
    let (_, best) = e.bestmove(Duration::from_secs(5));
    assert_legal(&game_after(PERPETUAL_FEN, "a1e1"), &best);
    drop(e.stdin);
    // End of input quits.
    let deadline = Instant::now() + Duration::from_secs(5);
    while e.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "xqz uci did not exit at end of input");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn ucci_handshake_time_banmoves_and_bye() {
    let mut e = Engine::start();
    e.send("ucci");
    let hello = e.until(Duration::from_secs(5), |l| l == "ucciok");
    assert!(hello.iter().any(|l| l == "option usemillisec type check default false"), "{hello:?}");
    e.send("setoption usemillisec true");
    e.send("setoption hashsize 64");
    e.ready();
    // Ban every legal move but one.
    let start = Game::new(Position::start(), RuleSet::Asian);
    let legal: Vec<String> = start.legal_moves().iter().map(|m| m.to_string()).collect();
    let keep = "b0c2";
    let banned: Vec<&str> = legal.iter().map(String::as_str).filter(|m| *m != keep).collect();
    e.send("position startpos");
    e.send(&format!("banmoves {}", banned.join(" ")));
    // 20 s on the clock: a thirtieth of it at most (the 64 MB tree may fill first).
    let sent = Instant::now();
    e.send("go time 20000 increment 0");
    let (lines, best) = e.bestmove(Duration::from_secs(15));
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(10), "timed out: {took:?} for a move with 20 s left");
    assert_eq!(word_after(&best, "bestmove"), Some(keep), "{lines:?}");
    let info = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
    assert!(!info.contains(" cp ") && word_after(info, "score").is_some(), "{info}");
    // The ban held for one search only.
    e.send("go depth 3");
    let (_, best) = e.bestmove(Duration::from_secs(5));
    assert_legal(&start, &best);
    // Seconds again without usemillisec: `go time 20` is 20 s, a move takes ~1/30 of it (or
    // until the 64 MB tree is full, about 0.4 s on two cores), not a thirtieth of 20 ms.
    e.send("setoption usemillisec false");
    let sent = Instant::now();
    e.send("go time 20 increment 0");
    e.bestmove(Duration::from_secs(15));
    let took = sent.elapsed();
    assert!(took > Duration::from_millis(40), "{took:?}: read as milliseconds");
    assert!(took < Duration::from_secs(10), "timed out: {took:?} for a move with 20 s left");
    // No legal move: nobestmove.
    e.send(&format!("position fen {MATED_FEN}"));
    e.send("go depth 2");
    let (_, best) = e.bestmove(Duration::from_secs(5));
    assert_eq!(best, "nobestmove");
    e.send("quit");
    e.until(Duration::from_secs(5), |l| l == "bye");
    assert!(e.finish().success());
}

#[test]
fn control_bytes_in_unknown_commands_are_never_echoed_raw() {
    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    e.send_bytes(b"\x00\x1b[2Jfrob\x07\n");
    let got = e.ready();
    let explained: Vec<&String> = got.iter().filter(|l| l.starts_with("info string ")).collect();
    assert!(!explained.is_empty(), "{got:?}");
    for line in &got {
        assert!(!line.chars().any(char::is_control), "raw control bytes echoed: {line:?}");
    }
    assert!(explained.iter().any(|l| l.contains("frob") && l.contains("\\u{1b}")), "{explained:?}");
    drop(e.stdin);
}

/// The move of a `bestmove` line, checked legal in `pos` (the side to move's).
fn assert_legal_at(pos: &Position, bestmove_line: &str) -> String {
    let mv = word_after(bestmove_line, "bestmove").expect("a move").to_string();
    let m = pos.parse_uci(&mv).unwrap_or_else(|e| panic!("{bestmove_line}: {e} in {pos}"));
    assert!(pos.legal_moves().contains(&m), "{bestmove_line}");
    mv
}

/// A GUI that does not adjudicate sends moves after the rules have ended the game: the engine
/// plays every move that is legal as a move and answers for the side to move after the last
/// one, saying that the rules have ended the game and how.
#[test]
fn moves_after_a_verdict_are_played_and_the_engine_answers_for_the_side_to_move() {
    // The cannons h2-h3, h7-h6 and back, twice: the start position a third time after 8 plies;
    // then Red plays h2-h3 once more and Black is to move.
    let moves: Vec<&str> = "h2h3 h7h6 h3h2 h6h7 h2h3 h7h6 h3h2 h6h7 h2h3".split(' ').collect();
    let mut game = Game::new(Position::start(), RuleSet::Asian);
    for m in &moves[..8] {
        assert_eq!(game.outcome(), None, "the game goes on before the 8th ply");
        game.play(game.position().parse_uci(m).unwrap()).unwrap();
    }
    let verdict = game.outcome().expect("the rules end the game with the 8th ply").to_string();
    assert!(game.play(game.position().parse_uci(moves[8]).unwrap()).is_err(), "game over");
    let mut after = Position::start();
    for m in &moves {
        after.play(after.parse_uci(m).unwrap()).unwrap();
    }
    assert_eq!(after.turn(), xiangqi::Color::Black);
    let board_and_turn = |fen: &str| fen.split_whitespace().take(2).collect::<Vec<_>>().join(" ");

    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    e.send("ucinewgame");
    e.send(&format!("position startpos moves {}", moves.join(" ")));
    e.send("d");
    let d = e.until(Duration::from_secs(5), |l| l.starts_with("info string fen"));
    let d = d.last().unwrap();
    assert!(d.contains(&board_and_turn(&after.fen())), "the GUI's position: {d}");
    assert!(d.contains(&format!("plies 9 outcome {verdict}")), "{d}");
    e.send("go nodes 20");
    let (lines, best) = e.bestmove(Duration::from_secs(10));
    assert_legal_at(&after, &best);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string the rules have ended this game")
                && l.contains(&verdict)),
        "the verdict is named: {lines:?}"
    );

    // An illegal move after the verdict (h2 is empty now) is refused as before: the position
    // is the one before it, still Black to move.
    e.send(&format!("position startpos moves {} h2h3", moves.join(" ")));
    let got = e.ready();
    assert!(got.iter().any(|l| l.starts_with("info string position: move 10 'h2h3'")), "{got:?}");
    e.send("go nodes 20");
    let (_, best) = e.bestmove(Duration::from_secs(10));
    assert_legal_at(&after, &best);

    // Two more moves after the verdict: Red to move again.
    let mut later = after;
    let black = assert_legal_at(&after, &best);
    later.play(later.parse_uci(&black).unwrap()).unwrap();
    e.send(&format!("position startpos moves {} {black}", moves.join(" ")));
    e.send("go nodes 20");
    let (_, best) = e.bestmove(Duration::from_secs(10));
    assert_legal_at(&later, &best);
    e.send("quit");
    assert!(e.finish().success());
}

/// Janggi: 200 passes end the game by the no-capture limit; a 201st pass makes it Han's turn,
/// and the engine answers with a Han move.
#[test]
fn janggi_moves_after_the_no_capture_limit_are_answered_for_the_side_to_move() {
    use xiangqi::janggi;
    let mut game = janggi::Game::new(janggi::Position::start(janggi::Rules::Site));
    let mut passes = Vec::new();
    while game.outcome().is_none() && passes.len() < 1000 {
        let pass = game.position().pass();
        passes.push(pass.to_string());
        game.play(pass).unwrap();
    }
    let verdict = game.outcome().expect("the no-capture limit ends the game").to_string();
    assert_eq!(passes.len(), 200, "{verdict}");
    let mut after = *game.position();
    let pass = after.pass();
    passes.push(pass.to_string());
    after.play(pass).unwrap();
    assert_eq!(after.turn(), xiangqi::Color::Black, "Han to move");

    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    e.send("setoption name UCI_Variant value janggi");
    e.send(&format!("position startpos moves {}", passes.join(" ")));
    e.send("go nodes 20");
    let (lines, best) = e.bestmove(Duration::from_secs(10));
    let mv = word_after(&best, "bestmove").expect("a move");
    let m = after.parse_uci(mv).unwrap_or_else(|e| panic!("{best}: {e} ({lines:?})"));
    assert!(after.legal_moves().contains(&m), "{best}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string the rules have ended this game")
                && l.contains(&verdict)),
        "the verdict is named: {lines:?}"
    );
    e.send("quit");
    assert!(e.finish().success());
}

/// Lines of the `info string` kind among `lines`.
fn info_strings(lines: &[String]) -> Vec<&String> {
    lines.iter().filter(|l| l.starts_with("info string ")).collect()
}

/// Without a network the engine says, at the end of the handshake and at every `go`, that it
/// searches with uniform priors; in both dialects.
#[test]
fn without_a_network_the_engine_says_so_at_uciok_and_at_each_go() {
    let says_uniform =
        |l: &&String| l.starts_with("info string no network loaded") && l.contains("uniform");
    for (hello, ok) in [("uci", "uciok"), ("ucci", "ucciok")] {
        let mut e = Engine::start();
        e.send(hello);
        let lines = e.until(Duration::from_secs(5), |l| l == ok);
        assert!(info_strings(&lines).iter().any(says_uniform), "{hello}: {lines:?}");
        e.send("position startpos");
        for _ in 0..2 {
            e.send("go depth 2");
            let (lines, _) = e.bestmove(Duration::from_secs(10));
            let notes = info_strings(&lines).into_iter().filter(|l| says_uniform(l)).count();
            assert_eq!(notes, 1, "{lines:?}");
        }
        e.send("quit");
        assert!(e.finish().success());
    }
}

/// `Rules` belongs to the game it was set for: switching `UCI_Variant` gives the other game
/// its own rule set (its default until set) without an error, and switching back restores
/// the one set before.
#[test]
fn each_game_keeps_its_own_rules_across_variant_switches() {
    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    let rules_now = |e: &mut Engine| -> String {
        e.send("d");
        let d = e.until(Duration::from_secs(5), |l| l.starts_with("info string fen"));
        word_after(d.last().unwrap(), "rules").unwrap().to_string()
    };
    e.send("setoption name Rules value simple");
    assert_eq!(rules_now(&mut e), "simple");
    e.send("setoption name UCI_Variant value janggi");
    let got = e.ready();
    assert!(!got.iter().any(|l| l.contains("option Rules")), "no Rules error: {got:?}");
    assert_eq!(rules_now(&mut e), "site", "janggi starts with its default");
    e.send("setoption name Rules value traditional");
    assert_eq!(rules_now(&mut e), "traditional");
    e.send("setoption name UCI_Variant value xiangqi");
    let got = e.ready();
    assert!(!got.iter().any(|l| l.contains("option Rules")), "no Rules error: {got:?}");
    assert_eq!(rules_now(&mut e), "simple", "xiangqi's own setting again");
    e.send("setoption name UCI_Variant value janggi");
    e.ready();
    assert_eq!(rules_now(&mut e), "traditional", "janggi's own setting again");
    e.send("quit");
    assert!(e.finish().success());
}

/// Negative and malformed numbers in `go` are explained in an `info string` naming the key,
/// and the engine still answers with a legal move; a negative clock is no time left.
#[test]
fn negative_and_garbage_go_values_are_explained() {
    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    e.send("position startpos");
    let start = Game::new(Position::start(), RuleSet::Asian);
    for (go, key) in [
        ("go movetime -5 nodes 30", "movetime"),
        ("go nodes -3 depth 2", "nodes"),
        ("go movetime abc nodes 30", "movetime"),
        ("go winc -10 wtime 2000 btime 2000", "winc"),
        ("go depth -1 nodes 30", "depth"),
    ] {
        e.send(go);
        let (lines, best) = e.bestmove(Duration::from_secs(10));
        assert!(
            info_strings(&lines)
                .iter()
                .any(|l| l.starts_with("info string go: bad value")
                    && l.contains(&format!("for {key}"))),
            "{go}: {lines:?}"
        );
        assert_legal(&start, &best);
    }
    e.send("go wtime -100 btime 5000");
    let (lines, best) = e.bestmove(Duration::from_secs(10));
    assert!(
        info_strings(&lines).iter().any(|l| l.contains("negative wtime") && l.contains("0 ms")),
        "{lines:?}"
    );
    assert_legal(&start, &best);
    e.send("quit");
    assert!(e.finish().success());
}

/// After a verdict of the rules `d` shows the GUI's position with its real clocks: plies since
/// the last capture and the move number go on through the verdict (the search's own copy of
/// the position starts them afresh).
#[test]
fn d_shows_the_real_clocks_after_a_verdict() {
    // The start position a third time after 8 plies, then three more quiet moves: 11 plies,
    // no capture, Black to move in move 6.
    let moves = "h2h3 h7h6 h3h2 h6h7 h2h3 h7h6 h3h2 h6h7 h2h3 h9g7 h0g2";
    let mut pos = Position::start();
    for m in moves.split(' ') {
        pos.play(pos.parse_uci(m).unwrap()).unwrap();
    }
    assert!(pos.fen().ends_with(" b - - 11 6"), "{}", pos.fen());
    // Janggi: 201 passes (the no-capture limit is reached at 200).
    let mut jpos = xiangqi::janggi::Position::start(xiangqi::janggi::Rules::Site);
    let mut passes = Vec::new();
    for _ in 0..201 {
        let pass = jpos.pass();
        passes.push(pass.to_string());
        jpos.play(pass).unwrap();
    }
    assert!(jpos.fen().ends_with(" b - - 201 101"), "{}", jpos.fen());

    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    e.send(&format!("position startpos moves {moves}"));
    e.send("d");
    let d = e.until(Duration::from_secs(5), |l| l.starts_with("info string fen"));
    let d = d.last().unwrap();
    assert!(d.starts_with(&format!("info string fen {} rules", pos.fen())), "{d}");
    assert!(d.contains("repetition"), "{d}");
    e.send("setoption name UCI_Variant value janggi");
    e.send(&format!("position startpos moves {}", passes.join(" ")));
    e.send("d");
    let d = e.until(Duration::from_secs(5), |l| l.starts_with("info string fen"));
    let d = d.last().unwrap();
    assert!(d.starts_with(&format!("info string fen {} rules", jpos.fen())), "{d}");
    e.send("quit");
    assert!(e.finish().success());
}

/// An engine started without `--net` that is given a janggi network through `NetPath` alone
/// (no `UCI_Variant`) becomes a janggi engine: the manifest names the game, an `info string`
/// says so, and the engine answers janggi positions with janggi moves.
#[test]
fn a_janggi_net_given_by_net_path_alone_switches_the_engine_to_janggi() {
    let dir = std::env::temp_dir().join(format!("xqz-uci-netpath-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    common::train_one_iteration(&common::config("janggi-tiny.toml"), &dir);

    let mut e = Engine::start();
    e.send("uci");
    e.until(Duration::from_secs(5), |l| l == "uciok");
    e.send(&format!("setoption name NetPath value {}", dir.display()));
    let got = e.ready();
    assert!(
        info_strings(&got).iter().any(|l| l.contains("network loaded") && l.contains("janggi")),
        "{got:?}"
    );
    e.send("position startpos moves e3e4");
    e.send("go nodes 30");
    let (lines, best) = e.bestmove(Duration::from_secs(20));
    assert!(
        !info_strings(&lines).iter().any(|l| l.contains("no network")),
        "the network plays: {lines:?}"
    );
    let mut jpos = xiangqi::janggi::Position::start(xiangqi::janggi::Rules::Site);
    jpos.play(jpos.parse_uci("e3e4").unwrap()).unwrap();
    let mv = word_after(&best, "bestmove").unwrap();
    let m = jpos.parse_uci(mv).unwrap_or_else(|err| panic!("{best}: {err}"));
    assert!(jpos.legal_moves().contains(&m), "{best}");
    // The network now fixes the game.
    e.send("setoption name UCI_Variant value xiangqi");
    let got = e.ready();
    assert!(info_strings(&got).iter().any(|l| l.contains("plays janggi")), "{got:?}");
    e.send("quit");
    assert!(e.finish().success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--device wgpu` names the adapter it runs on, its graphics API and kind, and says when it is
/// a software rasterizer (Mesa's llvmpipe, as CI's lavapipe is) rather than a GPU.
#[test]
fn a_wgpu_device_names_its_adapter_and_says_when_it_is_software() {
    let o = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["uci", "--device", "wgpu"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(b"uci\nquit\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success()
        && std::env::var_os("XQZ_REQUIRE_WGPU").is_none()
        && err.contains("not available")
    {
        eprintln!("skipped (no Vulkan adapter): {err}");
        return;
    }
    assert!(o.status.success(), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("device wgpu: "))
        .unwrap_or_else(|| panic!("no adapter line: {err}"));
    assert!(line.contains(" via "), "the graphics API: {line}");
    let software = line.contains("llvmpipe") || line.contains("lavapipe");
    assert_eq!(
        line.contains("a software rasterizer running on the CPU, not a GPU"),
        software,
        "{line}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("uciok"));
}

/// Commands piped in and the input closed (`printf '...go nodes 200\n' | xqz uci`): the search
/// with a limit runs to it and answers before the engine exits; an infinite one is stopped at
/// the end of input and answers too (nothing else could end it).
#[test]
fn a_search_piped_in_runs_to_its_limit_before_the_end_of_input_ends_the_engine() {
    let run = |script: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_xqz"))
            .arg("uci")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("xqz uci starts");
        child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
        // stdin is dropped: the end of input.
        let started = Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(started.elapsed() < Duration::from_secs(60), "timed out at end of input");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = run("uci\nposition startpos moves h2e2\ngo nodes 200\n");
    let nodes: Vec<u64> = out
        .lines()
        .filter_map(|l| l.split(" nodes ").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(nodes.last().is_some_and(|&n| n >= 200), "the search was cut short: {out}");
    let best = out.lines().find(|l| l.starts_with("bestmove ")).expect("a bestmove");
    assert_legal(&game_after(xiangqi::START_FEN, "h2e2"), best);

    let out = run("uci\ngo infinite\n");
    assert!(out.lines().any(|l| l.starts_with("bestmove ")), "no bestmove: {out}");
}

#[test]
fn the_engine_starts_from_its_networks_search_settings_and_options_override_them() {
    let dir = std::env::temp_dir().join(format!("xqz-uci-settings-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // configs/tiny.toml with a PUCT constant no default has, so that the engine's default can
    // only have come from the network's record.
    let tiny = common::config("tiny.toml");
    let text = std::fs::read_to_string(&tiny).unwrap().replace("c_puct = 1.5", "c_puct = 2.75");
    assert!(text.contains("c_puct = 2.75"));
    let config = dir.join("settings.toml");
    std::fs::write(&config, text).unwrap();
    let run = common::train_one_iteration(&config, &dir.join("run"));
    let manifest =
        std::fs::read_to_string(run.join("checkpoints/ckpt-000001/manifest.toml")).unwrap();
    let manifest: toml::Table = toml::from_str(&manifest).unwrap();
    let search = manifest["search"].as_table().expect("the checkpoint records [search]");
    assert_eq!(search["c_puct"].as_float(), Some(2.75));
    assert_eq!(search["algorithm"].as_str(), Some("puct"));

    let mut e = Engine::start_with(&["--net", run.to_str().unwrap()]);
    e.send("uci");
    let hello = e.until(Duration::from_secs(10), |l| l == "uciok");
    // The network it was started with is `NetPath`'s default, as engines show their default
    // network file.
    let net_path = format!("option name NetPath type string default {}", run.display());
    assert!(hello.contains(&net_path), "{net_path}: {hello:?}");
    for option in [
        "option name CPuct type string default 2.75",
        "option name UCI_ShowWDL type check default true",
        "option name Algorithm type combo default auto var auto var puct var gumbel",
        "option name WinCheck type combo default tree var off var root var tree",
    ] {
        assert!(hello.iter().any(|l| l == option), "{option}: {hello:?}");
    }
    // The network's WDL head: a draw probability beside the value, per mille summing to 1000.
    e.send("position startpos");
    e.send("go nodes 64");
    let (lines, best) = e.bestmove(Duration::from_secs(20));
    assert_legal(&Game::new(Position::start(), RuleSet::Asian), &best);
    let info = lines.iter().rev().find(|l| l.contains(" wdl ")).expect("an info line with wdl");
    let wdl: Vec<i32> = info
        .split_whitespace()
        .skip_while(|w| *w != "wdl")
        .skip(1)
        .take(3)
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(wdl.iter().sum::<i32>(), 1000, "{info}");
    assert!(wdl.iter().all(|&x| x >= 0) && wdl[1] > 0, "the head's draw share: {info}");
    // Options override the record; bad values are refused, naming the setting.
    e.send("setoption name CPuct value -1");
    e.send("setoption name Algorithm value fast");
    e.send("setoption name GumbelConsideredMoves value many");
    let got = e.ready();
    let said = info_strings(&got);
    assert!(said.iter().any(|l| l.contains("CPuct") && l.contains("search.c_puct")), "{got:?}");
    assert!(said.iter().any(|l| l.contains("Algorithm") && l.contains("fast")), "{got:?}");
    assert!(said.iter().any(|l| l.contains("GumbelConsideredMoves")), "{got:?}");
    e.send("setoption name UCI_ShowWDL value false");
    e.send("setoption name Algorithm value gumbel");
    e.send("setoption name CPuct value 1.25");
    let got = e.ready();
    assert!(info_strings(&got).is_empty(), "accepted: {got:?}");
    e.send("go nodes 48");
    let (lines, best) = e.bestmove(Duration::from_secs(20));
    assert_legal(&Game::new(Position::start(), RuleSet::Asian), &best);
    assert!(lines.iter().any(|l| l.starts_with("info depth")), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains(" wdl ")), "UCI_ShowWDL false: {lines:?}");
    // The last info line's principal variation starts with the move played (for Gumbel, the
    // sequential-halving winner, which need not be the most visited move).
    let last = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
    assert_eq!(word_after(last, "pv"), word_after(&best, "bestmove"), "{lines:?}");
    e.send("quit");
    assert!(e.finish().success());

    // UCCI spells the default after the word `default`, without `<empty>`.
    let mut e = Engine::start_with(&["--net", run.to_str().unwrap()]);
    e.send("ucci");
    let hello = e.until(Duration::from_secs(10), |l| l == "ucciok");
    let net_path = format!("option netpath type string default {}", run.display());
    assert!(hello.contains(&net_path), "{net_path}: {hello:?}");
    e.send("quit");
    assert!(e.finish().success());
    let _ = std::fs::remove_dir_all(&dir);
}
