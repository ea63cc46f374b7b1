//! End-to-end tests of `xqz train` through the real binary, on `configs/tiny.toml`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml")
}

fn run_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-train-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn train(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["train", "--quiet", "--threads", "1", "--run-dir"];
    let dir = dir.to_str().expect("utf-8 path");
    args.push(dir);
    args.extend_from_slice(extra);
    xqz().args(&args).output().expect("xqz runs")
}

/// `xqz train --quiet --threads 1 --config configs/tiny.toml --run-dir DIR EXTRA...` in the
/// background, its standard error piped.
fn spawn_tiny(dir: &Path, extra: &[&str]) -> std::process::Child {
    xqz()
        .args(["train", "--quiet", "--threads", "1", "--config"])
        .arg(tiny())
        .arg("--run-dir")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xqz runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn checkpoints(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir.join("checkpoints"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("ckpt-"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The optimizer step count recorded in a checkpoint's manifest.
fn manifest_step(ckpt: &Path) -> u64 {
    let text = fs::read_to_string(ckpt.join("manifest.toml")).expect("manifest");
    text.lines()
        .find_map(|l| l.strip_prefix("step = "))
        .and_then(|v| v.trim().parse().ok())
        .expect("a step line")
}

fn csv_rows(path: &Path) -> usize {
    fs::read_to_string(path).map(|t| t.lines().count().saturating_sub(1)).unwrap_or(0)
}

#[test]
fn a_tiny_run_writes_shards_checkpoints_events_and_resumes() {
    let dir = run_dir("basic");
    let config = tiny();
    let config = config.to_str().unwrap();
    let o = train(&dir, &["--config", config, "--iterations", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoints(&dir), ["ckpt-000000", "ckpt-000001", "ckpt-000002"]);
    let shards: Vec<_> = fs::read_dir(dir.join("shards")).unwrap().collect();
    assert_eq!(shards.len(), 2);
    let events: Vec<_> = fs::read_dir(dir.join("tensorboard")).unwrap().collect();
    assert!(!events.is_empty(), "no TensorBoard event file");
    assert!(fs::metadata(events[0].as_ref().unwrap().path()).unwrap().len() > 100);
    assert_eq!(csv_rows(&dir.join("metrics.csv")), 2);
    // tiny.toml runs the arena every 2 iterations against random, greedy and the initial net.
    assert_eq!(csv_rows(&dir.join("arena.csv")), 3);
    assert!(
        fs::read_to_string(dir.join("games.pgn")).unwrap().contains("[Game \"Chinese Chess\"]")
    );
    assert!(fs::read_to_string(dir.join("config.toml")).unwrap().contains("[loop]"));
    let step2 = manifest_step(&dir.join("checkpoints/ckpt-000002"));
    assert!(step2 > 0);

    // Without --resume, a used run directory is refused.
    let o = train(&dir, &["--config", config, "--iterations", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--resume"), "{}", stderr(&o));

    // --resume continues the step count (the resolved config of the run is used).
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let step3 = manifest_step(&dir.join("checkpoints/ckpt-000003"));
    assert!(step3 > step2, "{step3} <= {step2}");
    assert_eq!(csv_rows(&dir.join("metrics.csv")), 3);

    // The trained network plays: in the arena against random, and as a UCI engine.
    let ckpt = dir.join("checkpoints/ckpt-000003");
    let ckpt_arg = ckpt.to_str().unwrap();
    let o = xqz()
        .args(["arena", "--a", ckpt_arg, "--b", "random", "--games", "2", "--sims", "8"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("ckpt-000003") && table.contains("random"), "{table}");

    // Exported from the run directory (its newest checkpoint), the net plays the same moves in
    // the same arena, and the export is what the engine loads.
    let export = dir.join("export");
    let export_arg = export.to_str().unwrap();
    let o = xqz()
        .args(["export", "--checkpoint", dir.to_str().unwrap(), "--out", export_arg])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(report.contains("ckpt-000003") && report.contains("model.safetensors"), "{report}");
    for file in ["manifest.toml", "model.bpk", "model.safetensors", "model.json"] {
        assert!(export.join(file).is_file(), "{file} missing");
    }
    let pgn = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let arena = |player: &str, pgn: &str| {
        let o = xqz()
            .args(["arena", "--a", player, "--b", "random", "--games", "2", "--sims", "8"])
            .args(["--pgn", pgn])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        fs::read_to_string(pgn).unwrap()
    };
    let moves = |pgn: String| -> Vec<String> {
        pgn.lines().filter(|l| !l.starts_with('[')).map(str::to_string).collect()
    };
    assert_eq!(moves(arena(ckpt_arg, &pgn("a.pgn"))), moves(arena(export_arg, &pgn("b.pgn"))));
    // Refusals: the checkpoint itself, a directory with other files.
    let o = xqz().args(["export", "--checkpoint", ckpt_arg, "--out", ckpt_arg]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("the checkpoint itself"), "{}", stderr(&o));
    let o = xqz()
        .args(["export", "--checkpoint", ckpt_arg, "--out", dir.join("shards").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not an earlier export"), "{}", stderr(&o));
    assert_eq!(fs::read_dir(dir.join("shards")).unwrap().count(), 3, "shards untouched");
    let before = checkpoints(&dir);
    for (out, why) in [
        (dir.join("checkpoints"), "contains the checkpoint"),
        (ckpt.join("sub"), "is inside the checkpoint"),
        (export.join("."), "is the checkpoint itself"),
    ] {
        let source = if why.contains("itself") { &export } else { &ckpt };
        let o = xqz().arg("export").arg("--checkpoint").arg(source).arg("--out").arg(&out).output();
        let o = o.unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", out.display());
        assert!(stderr(&o).contains(why), "{}", stderr(&o));
    }
    assert_eq!(checkpoints(&dir), before, "checkpoints untouched");
    assert!(ckpt.join("optimizer.bpk").is_file());

    let mut engine = xqz()
        .args(["uci", "--net", export_arg])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let stdin = engine.stdin.as_mut().unwrap();
        writeln!(stdin, "uci\nisready\nposition startpos moves h2e2\ngo nodes 48").unwrap();
    }
    // Give the search time to finish before quitting (end of input stops a search).
    sleep(Duration::from_millis(1500));
    {
        use std::io::Write as _;
        writeln!(engine.stdin.as_mut().unwrap(), "quit").unwrap();
    }
    let out = engine.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let best = text.lines().find_map(|l| l.strip_prefix("bestmove ")).expect("a bestmove");
    let mv = best.split_whitespace().next().unwrap();
    let pos = xiangqi::Position::start();
    let mut game = xiangqi::Game::new(pos, xiangqi::RuleSet::Asian);
    game.play(game.position().parse_uci("h2e2").unwrap()).unwrap();
    assert!(game.position().parse_uci(mv).is_ok(), "illegal bestmove {mv}: {text}");

    // A GUI that cannot pass arguments sets the network through the NetPath option; the path
    // is taken as sent (runs of spaces kept).
    let spaced = dir.join("my  nets");
    fs::create_dir_all(&spaced).unwrap();
    for f in fs::read_dir(&export).unwrap() {
        let f = f.unwrap().path();
        fs::copy(&f, spaced.join(f.file_name().unwrap())).unwrap();
    }
    let spaced = spaced.to_str().unwrap();
    let mut engine = xqz().arg("uci").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    {
        use std::io::Write as _;
        let stdin = engine.stdin.as_mut().unwrap();
        writeln!(stdin, "uci\nsetoption name NetPath value {spaced}").unwrap();
        writeln!(stdin, "setoption name NetPath value {}", dir.join("nothing").display()).unwrap();
        writeln!(stdin, "setoption name NetPath value").unwrap();
        writeln!(stdin, "isready\nquit").unwrap();
    }
    let out = engine.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("info string network loaded from {spaced}")), "{text}");
    assert!(text.contains("keeping the current network") && text.contains("readyok"), "{text}");
    assert!(text.contains("no directory given"), "{text}");

    // Resumed after iteration 3, the arena of iteration 4 plays the net of the previous arena
    // (iteration 2), which the run has kept: the reference survives the stop.
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let arena = fs::read_to_string(dir.join("arena.csv")).unwrap();
    let last = arena.lines().last().unwrap();
    assert!(last.starts_with("4,") && last.contains(",ckpt-000002,"), "{arena}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_config_is_refused_with_the_file_and_key() {
    let dir = run_dir("badconfig");
    fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("[loop]\nbatch_sise = 3\n", "batch_sise"),
        ("[loop]\nbatch_size = 0\n", "loop.batch_size"),
        ("[network]\nblocks = 0\n", "network.blocks"),
        ("[training]\nlearning_rate = -1.0\n", "training.learning_rate"),
        ("[trainig]\n", "trainig"),
    ];
    for (text, key) in cases {
        let path = dir.join("bad.toml");
        fs::write(&path, text).unwrap();
        let o = train(&dir.join("run"), &["--config", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{text}");
        let err = stderr(&o);
        assert!(err.contains("bad.toml") && err.contains(key), "{text}: {err}");
    }
    assert!(!dir.join("run/checkpoints").exists(), "nothing is written for a bad config");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_run_killed_at_any_moment_resumes_cleanly() {
    let dir = run_dir("killed");
    let config = tiny();
    let config = config.to_str().unwrap();
    let o = train(&dir, &["--config", config, "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Kill -9 at moments spread over self-play, training, shard and checkpoint writes.
    for delay_ms in [700u64, 1300, 2100, 450, 1700] {
        let mut child = xqz()
            .args(["train", "--quiet", "--threads", "1", "--resume", "--run-dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        let o = train(&dir, &["--resume", "--iterations", "1"]);
        assert!(o.status.success(), "after a kill at {delay_ms} ms: {}", stderr(&o));
    }
    // The checkpoints are consistent: each newer one has taken more steps.
    let names = checkpoints(&dir);
    let steps: Vec<u64> =
        names.iter().map(|n| manifest_step(&dir.join("checkpoints").join(n))).collect();
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{names:?} {steps:?}");
    assert!(names.len() >= 3);
    // No metrics row reports self-play at zero speed: an iteration resumed from its shard
    // leaves those cells empty.
    let metrics = fs::read_to_string(dir.join("metrics.csv")).unwrap();
    for row in metrics.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), 22, "{row}");
        for (i, name) in [(6, "mean_game_length"), (7, "games_per_s"), (8, "simulations_per_s")] {
            assert!(cells[i].is_empty() || cells[i].parse::<f64>().unwrap() > 0.0, "{name}: {row}");
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_writes_a_checkpoint_and_exits_cleanly() {
    let dir = run_dir("sigint");
    let child = spawn_tiny(&dir, &[]);
    // Wait for the first iteration's checkpoint, then interrupt.
    let start = Instant::now();
    while checkpoints(&dir).len() < 2 && start.elapsed() < Duration::from_secs(60) {
        sleep(Duration::from_millis(100));
    }
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("interrupt") && err.contains("stopped"), "{err}");
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn without_a_terminal_the_progress_lines_still_reach_the_log() {
    // Not --quiet, but standard error is a pipe (nohup, a log file): the bar is hidden and the
    // iteration lines must be printed instead.
    let dir = run_dir("log");
    let config = tiny();
    let o = xqz()
        .args(["train", "--threads", "1", "--iterations", "2", "--config"])
        .arg(&config)
        .arg("--run-dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("iteration 1:") && log.contains("iteration 2:"), "{log}");
    assert!(log.contains("arena after iteration 2"), "{log}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_second_trainer_on_the_same_run_directory_is_refused() {
    let dir = run_dir("locked");
    let mut first = spawn_tiny(&dir, &["--iterations", "6"]);
    // Wait until the first one has started (its run directory has its config).
    let started = Instant::now();
    while !dir.join("config.toml").exists() && started.elapsed() < Duration::from_secs(20) {
        sleep(Duration::from_millis(20));
    }
    let second = train(&dir, &["--resume", "--iterations", "1"]);
    let first_ok = first.wait().unwrap().success();
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    assert!(stderr(&second).contains("another xqz train is using"), "{}", stderr(&second));
    assert!(first_ok);
    // Once the first has ended, the lock is free again.
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}
