//! `xqz arena`: baselines against each other, the PGN it writes, and external engines through
//! the subprocess path (`xqz uci` itself, and scripted engines that misbehave).

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

use xiangqi::{Game, RuleSet};
use xiangqi_search::parse_pgn_moves;

mod common;

fn xqz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().expect("xqz runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-arena-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// The numbers of a table row such as `A total   20   17   3   0   92.5%`.
fn row(table: &str, label: &str) -> Vec<f64> {
    let line = table.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{table}"));
    line[label.len()..]
        .split_whitespace()
        .map(|w| w.trim_end_matches('%').parse().unwrap())
        .collect()
}

/// The forfeit counts of player `who` (`A` or `B`): the row whose first word is `who`.
fn forfeits(table: &str, who: &str) -> Vec<f64> {
    let line = table
        .lines()
        .find(|l| {
            let mut words = l.split_whitespace();
            words.next() == Some(who) && words.all(|w| w.parse::<f64>().is_ok())
        })
        .unwrap_or_else(|| panic!("{table}"));
    line.split_whitespace().skip(1).map(|w| w.parse().unwrap()).collect()
}

/// Splits a PGN file into games.
fn games(pgn: &str) -> Vec<String> {
    pgn.split("[Game ").filter(|g| !g.trim().is_empty()).map(|g| format!("[Game {g}")).collect()
}

fn tag<'a>(game: &'a str, name: &str) -> Option<&'a str> {
    let prefix = format!("[{name} \"");
    game.lines().find_map(|l| l.strip_prefix(prefix.as_str())?.strip_suffix("\"]"))
}

#[test]
fn greedy_beats_random_and_the_pgn_replays() {
    let dir = scratch("greedy");
    let pgn = dir.join("games.pgn");
    let o = xqz(&[
        "arena",
        "--a",
        "greedy",
        "--b",
        "random",
        "--games",
        "20",
        "--pgn",
        pgn.to_str().unwrap(),
        "--seed",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    let total = row(&table, "A total");
    assert_eq!(total[0], 20.0, "{table}");
    assert!(total[4] > 75.0, "greedy scores {}%: {table}", total[4]);
    assert!(table.contains("Elo (A - B): +"), "{table}");
    assert_eq!(forfeits(&table, "A")[..], [0.0; 4], "no forfeits: {table}");

    let text = fs::read_to_string(&pgn).unwrap();
    let all = games(&text);
    assert_eq!(all.len(), 20);
    for (i, g) in all.iter().enumerate() {
        assert_eq!(tag(g, "Event"), Some("xqz arena"));
        let red = if i % 2 == 0 { "greedy" } else { "random" };
        assert_eq!(tag(g, "Red"), Some(red), "{g}");
        // Every move is legal, and the rules agree with the recorded verdict.
        let (start, moves) =
            parse_pgn_moves::<xiangqi::Game>(g, RuleSet::Asian).unwrap_or_else(|e| panic!("{e}"));
        let mut game = Game::new(start, RuleSet::Asian);
        for m in moves {
            game.play(m).unwrap();
        }
        let result = tag(g, "Result").unwrap();
        let reason = tag(g, "Termination").unwrap();
        match game.outcome() {
            Some(o) => {
                assert_eq!((o.result_str(), o.reason().name()), (result, reason), "{g}");
            }
            None => assert_eq!((result, reason), ("1/2-1/2", "length_cap"), "{g}"),
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn sprt_stops_a_lopsided_match_early() {
    let o = xqz(&["arena", "--a", "greedy", "--b", "random", "--games", "200", "--sprt", "0,50"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    let games = row(&table, "A total")[0];
    assert!(games < 200.0, "{table}");
    assert!(table.contains("H1 accepted"), "{table}");
}

#[test]
fn concurrent_games_are_the_games_played_one_at_a_time() {
    let dir = scratch("concurrency");
    let run = |concurrency: &str| {
        let pgn = dir.join(format!("c{concurrency}.pgn"));
        let o = xqz(&[
            "arena",
            "--a",
            "mcts",
            "--b",
            "greedy",
            "--games",
            "6",
            "--sims",
            "24",
            "--pgn",
            pgn.to_str().unwrap(),
            "--concurrency",
            concurrency,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).contains("evaluator:"), "{}", stderr(&o));
        (stdout(&o), fs::read_to_string(&pgn).unwrap())
    };
    let (table1, pgn1) = run("1");
    let (table6, pgn6) = run("6");
    assert_eq!(table1, table6);
    assert_eq!(pgn1, pgn6);
    assert_eq!(games(&pgn1).len(), 6);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn uci_engine_subprocess_plays_whole_games() {
    let engine = format!("uci:{} uci", env!("CARGO_BIN_EXE_xqz"));
    let dir = scratch("uci");
    let pgn = dir.join("games.pgn");
    let o = xqz(&[
        "arena",
        "--a",
        &engine,
        "--b",
        "greedy",
        "--games",
        "2",
        "--movetime",
        "20",
        "--max-plies",
        "40",
        "--a-option",
        "Hash=16",
        "--pgn",
        pgn.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(table.contains("A: uci:xiangqi-zero"), "{table}");
    assert_eq!(row(&table, "A total")[0], 2.0, "{table}");
    assert_eq!(forfeits(&table, "A")[..], [0.0; 4], "no forfeits: {table}");
    let text = fs::read_to_string(&pgn).unwrap();
    for g in games(&text) {
        parse_pgn_moves::<xiangqi::Game>(&g, RuleSet::Asian).unwrap_or_else(|e| panic!("{e}: {g}"));
        assert!(tag(&g, "Forfeit").is_none(), "{g}");
    }
    let _ = fs::remove_dir_all(&dir);
}

/// A fake UCI engine: handshakes, then misbehaves on `go` as `mode` says.
fn fake_engine(dir: &std::path::Path, mode: &str) -> String {
    let on_go = match mode {
        "illegal" => "echo 'bestmove e0e5'",
        "garbage" => "echo 'bestmove banana'",
        "crash" => "exit 3",
        "hang" => ":",
        _ => unreachable!(),
    };
    let script = format!(
        "#!/bin/sh\nwhile read -r line; do\n  case \"$line\" in\n    uci) echo 'id name fake'; \
         echo uciok;;\n    isready) echo readyok;;\n    go*) {on_go};;\n    quit) exit 0;;\n  esac\n\
         done\n"
    );
    script_engine(dir, &format!("fake-{mode}.sh"), &script)
}

/// Writes an executable shell script `name` into `dir` and returns it as a `uci:` player.
fn script_engine(dir: &std::path::Path, name: &str, script: &str) -> String {
    let path = dir.join(name);
    fs::write(&path, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    format!("uci:{}", path.display())
}

#[test]
fn misbehaving_engines_lose_and_are_reported() {
    let dir = scratch("fake");
    for (mode, column) in [("illegal", 0), ("garbage", 0), ("crash", 2), ("hang", 1)] {
        let engine = fake_engine(&dir, mode);
        let o = xqz(&[
            "arena",
            "--a",
            "random",
            "--b",
            &engine,
            "--games",
            "2",
            "--movetime",
            "10",
            "--margin",
            "200",
        ]);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        let table = stdout(&o);
        assert!(table.contains("B: uci:fake"), "{table}");
        let total = row(&table, "A total");
        assert_eq!((total[1], total[4]), (2.0, 100.0), "{mode}: {table}");
        let b = forfeits(&table, "B");
        assert_eq!(b[column], 2.0, "{mode}: {table}");
        assert!(stderr(&o).contains("loses by"), "{mode}: {}", stderr(&o));
    }
    // A command that cannot start is an error at once.
    let o = xqz(&["arena", "--a", "uci:/nonexistent/engine", "--b", "random", "--games", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot start"), "{}", stderr(&o));
    let o = xqz(&["arena", "--a", "nets/latest.mpk", "--b", "random"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no such directory"), "{}", stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn empty_budgets_are_refused_before_any_game() {
    for (flag, value) in
        [("--games", "0"), ("--sims", "0"), ("--movetime", "0"), ("--max-plies", "0")]
    {
        let o = xqz(&["arena", "--a", "greedy", "--b", "random", flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        assert!(stderr(&o).contains(flag), "{flag}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{flag}: a match was played");
    }
}

#[test]
fn a_run_directory_plays_its_newest_checkpoint() {
    let dir = scratch("run-player");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/tiny.toml");
    let run = dir.join("run");
    let o = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["train", "--quiet", "--threads", "1", "--iterations", "1", "--config", config])
        .arg("--run-dir")
        .arg(&run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let player = format!("net:{}", run.display());
    let o = xqz(&["arena", "--a", &player, "--b", "random", "--games", "2", "--sims", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("A: ckpt-000001"), "{}", stdout(&o));
    let _ = fs::remove_dir_all(&dir);
}

/// Runs `xqz ARGS`, killing it and failing the test if it has not ended within `limit`.
fn xqz_within(args: &[&str], limit: std::time::Duration) -> Output {
    use std::io::Read as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("xqz {args:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Output { status, stdout: out_reader.join().unwrap(), stderr: err_reader.join().unwrap() }
}

#[test]
fn flooding_engines_lose_on_time_and_their_children_are_killed() {
    use std::time::Duration;
    let dir = scratch("flood");
    // A program that writes without end and never answers the handshake.
    let o = xqz_within(
        &["arena", "--a", "uci:yes", "--b", "random", "--games", "2", "--movetime", "100"],
        Duration::from_secs(60),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("uciok"), "{}", stderr(&o));

    // An engine that answers the handshake, starts a child of its own, and floods `info`
    // lines instead of a bestmove: it loses each game on time, and its child dies with it.
    let pids = dir.join("children");
    let script = format!(
        "#!/bin/sh\nwhile read -r line; do\n  case \"$line\" in\n    uci) sleep 100 & echo $! >> \
         '{}'; echo 'id name flood'; echo uciok;;\n    isready) echo readyok;;\n    go*) while :; \
         do echo 'info depth 1 score cp 0 pv e0e1'; done;;\n    quit) exit 0;;\n  esac\ndone\n",
        pids.display()
    );
    let engine = script_engine(&dir, "flood.sh", &script);
    let o = xqz_within(
        &[
            "arena",
            "--a",
            "random",
            "--b",
            &engine,
            "--games",
            "2",
            "--movetime",
            "50",
            "--margin",
            "200",
        ],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert_eq!(row(&table, "A total")[4], 100.0, "{table}");
    assert_eq!(forfeits(&table, "B")[1], 2.0, "{table}");
    // Every child the engine started is gone (or a zombie awaiting its reaper): the kill is
    // delivered at once, but its effect is asynchronous, so allow a generous 10 s for it.
    let started = fs::read_to_string(&pids).unwrap();
    assert!(started.lines().count() >= 2, "{started}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    for pid in started.lines() {
        loop {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit(')').next().unwrap_or("").split_whitespace().next();
            if matches!(state, None | Some("Z" | "X")) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out: child {pid} still runs 10 s after the match: {stat}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn engine_commands_take_shell_quoting() {
    let dir = scratch("quoted dir");
    let engine = fake_engine(&dir, "illegal");
    let path = engine.strip_prefix("uci:").unwrap();
    // The script's path holds a space: quoted, it starts; split at white space, it would not.
    let quoted = format!("uci:'{path}'");
    let o = xqz(&["arena", "--a", "random", "--b", &quoted, "--games", "2", "--movetime", "10"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("B: uci:fake"), "{}", stdout(&o));
    let o = xqz(&["arena", "--a", "random", "--b", "uci:'unbalanced", "--games", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("quotes"), "{}", stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn an_engine_takes_its_own_node_limit() {
    // The engine writes down every `go` it receives and gives up at once (it loses each game).
    let dir = scratch("nodes");
    let log = dir.join("go.log");
    let script = format!(
        "#!/bin/sh\nwhile read -r line; do\n  case \"$line\" in\n    uci) echo 'id name counter'; \
         echo uciok;;\n    isready) echo readyok;;\n    go*) echo \"$line\" >> '{}'; echo 'bestmove \
         (none)';;\n    quit) exit 0;;\n  esac\ndone\n",
        log.display()
    );
    let engine = script_engine(&dir, "counter.sh", &script);
    let o = xqz(&[
        "arena",
        "--a",
        "mcts",
        "--b",
        &engine,
        "--b-nodes",
        "1",
        "--sims",
        "8",
        "--games",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let gos = fs::read_to_string(&log).unwrap();
    assert!(!gos.is_empty() && gos.lines().all(|l| l == "go nodes 1"), "{gos}");
    // Without it the engine gets the match's limit; a node limit on a local player is refused.
    fs::remove_file(&log).unwrap();
    let o = xqz(&["arena", "--a", "mcts", "--b", &engine, "--sims", "8", "--games", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(fs::read_to_string(&log).unwrap().lines().all(|l| l == "go nodes 8"));
    let o = xqz(&["arena", "--a", "mcts", "--a-nodes", "1", "--b", "random"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--a-nodes"), "{}", stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}

/// Fairy-Stockfish (Debian's `fairy-stockfish`, which `.ci/run` installs) as a real UCI
/// opponent at 1 node, with ranks 1–10. Run where `XQZ_FAIRY_STOCKFISH` names the binary
/// (`.ci/run` sets it, and `XQZ_REQUIRE_FAIRY_STOCKFISH` with it); elsewhere it says why it did
/// not run, or fails where `XQZ_REQUIRE_FAIRY_STOCKFISH` is set.
#[test]
fn fairy_stockfish_plays_whole_games_at_one_node() {
    let Some(fsf) = common::fairy_stockfish() else { return };
    let engine = format!("uci:{fsf}");
    let o = xqz(&[
        "arena",
        "--a",
        "greedy",
        "--b",
        &engine,
        "--b-option",
        "UCI_Variant=xiangqi",
        "--b-ranks",
        "1",
        "--b-nodes",
        "1",
        "--games",
        "4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    // Whole games, no forfeits: every move of the engine was read back as a legal move.
    assert_eq!(forfeits(&table, "B"), [0.0, 0.0, 0.0, 0.0], "{table}");
    assert_eq!(row(&table, "A total")[0], 4.0, "{table}");
    // Without the options: the arena tells it the game and reads its ranks 1-10 by itself.
    let o = xqz(&["arena", "--a", "greedy", "--b", &engine, "--b-nodes", "1", "--games", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(forfeits(&stdout(&o), "B"), [0.0, 0.0, 0.0, 0.0], "{}", stdout(&o));
    // `xqz tactics` does the same: every answer is read as a legal move (an answer read with
    // the wrong rank numbers is an illegal move, which stops the check), and at 1,000 nodes it
    // finds every mate in one.
    let o = xqz(&["tactics", "--player", &engine, "--nodes", "1000", "--count", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mate = tactics_row(&stdout(&o), "mate_in_one");
    assert_eq!(mate[..2], [4.0, 4.0], "{}", stdout(&o));
}

/// The numbers of a row of the `xqz tactics` table: positions, solved, score, interval low and
/// high, the random mover's expected score.
fn tactics_row(table: &str, kind: &str) -> Vec<f64> {
    let line = table.lines().find(|l| l.starts_with(kind)).unwrap_or_else(|| panic!("{table}"));
    line[kind.len()..]
        .split(|c: char| c.is_whitespace() || c == '–')
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_end_matches('%').parse().unwrap())
        .collect()
}

#[test]
fn tactics_greedy_always_mates_in_one_and_random_mostly_does_not() {
    let dir = scratch("tactics");
    let out = dir.join("greedy.tsv");
    let o =
        xqz(&["tactics", "--player", "greedy", "--count", "12", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    // The greedy player takes any move that wins at once: it solves every mate in one.
    let mate = tactics_row(&table, "mate_in_one");
    assert_eq!(mate[0], 12.0, "{table}");
    assert_eq!(mate[1], 12.0, "{table}");
    // It also takes the most valuable capture, so it wins a free piece in most positions (a
    // defended chariot can be worth more to it than a free horse).
    let piece = tactics_row(&table, "win_piece");
    assert_eq!(piece[0], 12.0, "{table}");
    assert!(piece[1] >= 6.0, "{table}");
    // The clear win-a-piece positions are a subset, counted in a row of their own.
    let clear = tactics_row(&table, "win_piece (clear)");
    assert!(clear[0] <= piece[0] && clear[1] <= piece[1].min(clear[0]), "{table}");
    // The file lists each position: kind, start FEN, moves, correct moves, the answer, whether
    // it is a clear win-a-piece position; the answers to the mates are among the correct moves,
    // and replaying the moves is legal.
    let text = fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 36, "{text}");
    let marked = text.lines().filter(|l| l.ends_with("\tclear")).count();
    assert_eq!(marked as f64, clear[0], "{text}");
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 6, "{line}");
        assert!(f[5] == "-" || (f[5] == "clear" && f[0] == "win_piece"), "{line}");
        let mut game = Game::new(xiangqi::Position::from_fen(f[1]).unwrap(), RuleSet::Asian);
        for uci in f[2].split_whitespace() {
            let m = game.position().parse_uci(uci).unwrap();
            assert!(game.play(m).unwrap().is_none(), "{line}");
        }
        if f[0] == "mate_in_one" {
            assert!(f[3].split_whitespace().any(|m| m == f[4]), "{line}");
            let m = game.position().parse_uci(f[4]).unwrap();
            let outcome = game.play(m).unwrap().expect("a mate ends the game");
            assert_eq!(outcome.winner(), Some(game.position().turn().other()), "{line}");
        }
    }
    let partial = dir.join("greedy.tsv.partial");
    assert!(!partial.exists(), "the finished file was renamed into place");
    // A run that fails keeps the earlier file as it was, and its own answers in FILE.partial.
    let engine = fake_engine(&dir, "illegal");
    let o = xqz(&["tactics", "--player", &engine, "--count", "2", "--out", out.to_str().unwrap()]);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert_eq!(fs::read_to_string(&out).unwrap(), text);
    assert!(partial.is_file());
    // A folder is no --out, and says so before any work.
    let o = xqz(&["tactics", "--player", "greedy", "--out", dir.to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains("is a folder"), "{}", stderr(&o));
    // A random mover solves far fewer, close to the chance the table prints.
    let o = xqz(&["tactics", "--player", "random", "--count", "12"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    let mate = tactics_row(&table, "mate_in_one");
    assert!(mate[1] < 12.0, "{table}");
    assert!(mate[5] < 50.0, "{table}");
    // A broken engine stops the check with an error naming the position, instead of being
    // scored as a weak player: an illegal move, garbage, a crash, and (under --movetime) a hang.
    for mode in ["illegal", "garbage", "crash", "hang"] {
        let engine = fake_engine(&dir, mode);
        let o = xqz(&["tactics", "--player", &engine, "--count", "2", "--movetime", "100"]);
        assert!(!o.status.success(), "{mode}: {}", stdout(&o));
        assert!(stderr(&o).contains("position 1 ("), "{mode}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{mode}: a table was printed: {}", stdout(&o));
    }
    // A bad player is an error naming it.
    let o = xqz(&["tactics", "--player", "nosuch"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nosuch"), "{}", stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}

/// An opening after which the game is already over (the side to move is checkmated) has no
/// game to play: it is skipped with a warning that names it, never scored, and the games are
/// played over the other openings; a file with no playable opening is refused.
#[test]
fn an_opening_whose_game_is_already_over_is_skipped_not_scored() {
    // Black to move: the chariot on b9 checks along rank 9, the one on a8 holds rank 8, and
    // d9/f9 are the b9 chariot's too: checkmate.
    let mated = "1R2k4/R8/9/9/9/9/9/9/9/3K5 b - - 1 1";
    let pos = xiangqi::Position::from_fen(mated).unwrap();
    let game = Game::new(pos, RuleSet::Asian);
    assert!(game.legal_moves().is_empty() && game.outcome().is_some(), "mated by hand");
    let dir = scratch("over");
    let openings = dir.join("openings.txt");
    fs::write(&openings, format!("h2e2 h9g7\n{mated}\n")).unwrap();
    let pgn = dir.join("games.pgn");
    let o = xqz(&[
        "arena",
        "--a",
        "random",
        "--b",
        "random",
        "--games",
        "4",
        "--max-plies",
        "40",
        "--openings",
        openings.to_str().unwrap(),
        "--pgn",
        pgn.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("opening line 2") && err.contains("skipped"), "{err}");
    let played = games(&fs::read_to_string(&pgn).unwrap());
    assert_eq!(played.len(), 4);
    for g in &played {
        assert_eq!(tag(g, "Opening"), Some("line 1"), "{g}");
    }
    assert_eq!(row(&stdout(&o), "A total")[0], 4.0, "{}", stdout(&o));

    fs::write(&openings, format!("{mated}\n")).unwrap();
    let o = xqz(&[
        "arena",
        "--a",
        "random",
        "--b",
        "random",
        "--games",
        "2",
        "--openings",
        openings.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no opening left to play"), "{}", stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn an_odd_game_count_is_played_with_a_warning_and_an_empty_row_has_no_score() {
    let o = xqz(&["arena", "--a", "random", "--b", "random", "--games", "1", "--max-plies", "20"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("--games 1 is odd") && err.contains("A plays Red once more"), "{err}");
    let out = stdout(&o);
    // The one game had A as Red: Black's row has no game and so no score (not 50%).
    let black =
        out.lines().find(|l| l.starts_with("A with Black")).unwrap_or_else(|| panic!("{out}"));
    let words: Vec<&str> = black["A with Black".len()..].split_whitespace().collect();
    assert_eq!(words, ["0", "0", "0", "0", "-"], "{out}");
    assert_eq!(row(&out, "A with Red")[0], 1.0, "{out}");
    assert_eq!(row(&out, "A total")[0], 1.0, "{out}");
    // An even count says nothing about it.
    let o = xqz(&["arena", "--a", "random", "--b", "random", "--games", "2", "--max-plies", "20"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("odd"), "{}", stderr(&o));
}

/// `--precision bf16`: a network plays whole games on the bfloat16 kernels where the CPU has AMX
/// or AVX-512 BF16, and in f32 with a warning where it has neither; an unknown precision is refused by name.
#[test]
fn precision_bf16_plays_where_the_cpu_can_and_warns_where_it_cannot() {
    let dir = scratch("precision");
    let run = common::train_one_iteration(&common::config("tiny.toml"), &dir.join("run"));
    let net = format!("net:{}", run.display());
    let args = ["arena", "--a", &net, "--b", "greedy", "--games", "2", "--sims", "8"];
    let mut with = args.to_vec();
    with.extend(["--precision", "bf16"]);
    let o = xqz(&with);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(row(&stdout(&o), "A total")[0], 2.0, "{}", stdout(&o));
    let warned = stderr(&o).contains("--precision bf16 is not available");
    assert_eq!(warned, !common::cpu_runs_bf16_inference(), "{}", stderr(&o));

    let mut bad = args.to_vec();
    bad.extend(["--precision", "f16"]);
    let o = xqz(&bad);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("unknown precision 'f16'"), "{}", stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}
