//! End-to-end tests of `xqz train` through the real binary, on `configs/tiny.toml`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

mod common;

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
    // Read to the search's bestmove before quitting (end of input stops a search).
    let text = read_until_line(&mut engine, "bestmove ", Duration::from_secs(60));
    {
        use std::io::Write as _;
        writeln!(engine.stdin.as_mut().unwrap(), "quit").unwrap();
    }
    assert!(engine.wait().unwrap().success());
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
        ("[training]\nmoves_left_weight = 1e30\n", "training.moves_left_weight"),
        ("[loop]\nkeep_every_minutes = -30\n", "loop.keep_every_minutes"),
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
    let header: Vec<&str> = metrics.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|&h| h == name).unwrap();
    let mut scored = 0;
    for row in metrics.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{row}");
        for (i, name) in [(6, "mean_game_length"), (7, "games_per_s"), (8, "simulations_per_s")] {
            assert!(cells[i].is_empty() || cells[i].parse::<f64>().unwrap() > 0.0, "{name}: {row}");
        }
        // The held-out losses of the iteration's new shard, when it was scored (not after a
        // resume in the middle of its training).
        if !cells[column("heldout_samples")].is_empty() {
            scored += 1;
            for name in ["heldout_policy_loss", "heldout_material_loss"] {
                let x: f64 = cells[column(name)].parse().unwrap();
                assert!(x > 0.0 && x < 20.0, "{name}: {row}");
            }
            // tiny.toml teaches the game result alone, and a game cut at its 80-ply cap has
            // none: the value losses are empty when every scored game was capped.
            for name in ["heldout_value_loss", "heldout_result_loss"] {
                let cell = cells[column(name)];
                assert!(cell.is_empty() || cell.parse::<f64>().unwrap() > 0.0, "{name}: {row}");
            }
        }
    }
    assert!(scored > 0, "no iteration was scored before training: {metrics}");
    let _ = fs::remove_dir_all(&dir);
}

/// Reads `child`'s piped standard output (on a thread) until a line starts with `prefix`, and
/// returns every line read; fails, saying it timed out, after `limit`.
fn read_until_line(child: &mut std::process::Child, prefix: &str, limit: Duration) -> String {
    use std::io::BufRead as _;
    let out = child.stdout.take().expect("standard output piped");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + limit;
    let mut text = String::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                text.push_str(&line);
                text.push('\n');
                if line.starts_with(prefix) {
                    return text;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("timed out after {limit:?} waiting for a line {prefix:?}; read:\n{text}")
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("the output ended before a line {prefix:?}:\n{text}")
            }
        }
    }
}

/// How many optimizer steps of this run directory have reached TensorBoard: each step adds one
/// `loss/total` scalar, and tensorboard-rs writes each event to its file as it comes
/// (unbuffered), so the count follows the training as it goes.
fn logged_steps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir.join("tensorboard")) else { return 0 };
    entries
        .flatten()
        .filter_map(|e| fs::read(e.path()).ok())
        .map(|b| b.windows(10).filter(|w| *w == b"loss/total").count())
        .sum()
}

/// Polls `done` every 20 ms until it holds; fails, saying it timed out waiting for `what`, after
/// `secs` seconds (generous: the CI machine is a loaded two-core box).
fn wait_until(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "timed out after {secs} s waiting for {what}"
        );
        sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_writes_a_checkpoint_and_exits_cleanly() {
    let dir = run_dir("sigint");
    // Iterations whose training takes a few seconds (about 380 steps), so that the interrupt
    // lands in the second one's: the steps it took so far must reach a checkpoint.
    let config = tiny_with("sigint", &[("train_ratio", "40.0"), ("arena_every", "0")]);
    let child = xqz()
        .args(["train", "--quiet", "--threads", "1", "--config"])
        .arg(&config)
        .arg("--run-dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xqz runs");
    // The first iteration's checkpoint, then a step of the second iteration.
    let first = dir.join("checkpoints/ckpt-000001");
    wait_until(120, "the first iteration's checkpoint", || first.join("manifest.toml").is_file());
    let first_steps = manifest_step(&first);
    wait_until(120, "a training step of the second iteration", || {
        logged_steps(&dir) as u64 > first_steps
    });
    assert_eq!(checkpoints(&dir).len(), 2, "the second iteration ended before the interrupt");
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("interrupt") && err.contains("stopped"), "{err}");
    // The stop line: one iteration done, the steps taken, and the checkpoint that holds them.
    let line = err.lines().find(|l| l.starts_with("stopped: ")).expect("a stop line");
    let steps: u64 = line
        .split(", ")
        .find_map(|f| f.strip_suffix(" optimizer steps"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no step count in {line}"));
    assert!(line.starts_with("stopped: 1 iteration, "), "{line}");
    assert!(steps > first_steps, "{line}");
    // Checkpoints are numbered by the iterations done: the steps of the second iteration so
    // far are written over the first iteration's checkpoint, marked as steps into iteration 2.
    assert!(line.ends_with(&format!("checkpoint {}", first.display())), "{line}");
    assert_eq!(checkpoints(&dir), ["ckpt-000000", "ckpt-000001"], "{err}");
    assert_eq!(manifest_step(&first), steps, "the checkpoint holds every step taken");
    assert_eq!(manifest_counter(&first, "iteration"), 1);
    assert_eq!(manifest_counter(&first, "steps_in_iteration"), steps - first_steps);
    // A resume goes on from those steps and finishes the second iteration.
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("(1 iteration done, {steps} steps)")), "{}", stderr(&o));
    let second = dir.join("checkpoints/ckpt-000002");
    assert_eq!(manifest_counter(&second, "iteration"), 2);
    assert_eq!(manifest_counter(&second, "steps_in_iteration"), 0);
    assert!(manifest_step(&second) > steps);
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_file(&config);
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

/// `configs/tiny.toml` with `key = value` lines of `[loop]` (or any section) replaced, written
/// beside (not inside) the run directory.
fn tiny_with(name: &str, changes: &[(&str, &str)]) -> PathBuf {
    let mut text = fs::read_to_string(tiny()).unwrap();
    for (key, value) in changes {
        let start = text
            .lines()
            .find(|l| l.split('=').next().is_some_and(|k| k.trim() == *key))
            .unwrap_or_else(|| panic!("tiny.toml has no {key}"))
            .to_string();
        text = text.replace(&start, &format!("{key} = {value}"));
    }
    let path = std::env::temp_dir().join(format!("xqz-tiny-{name}-{}.toml", std::process::id()));
    fs::write(&path, text).unwrap();
    path
}

/// The iteration (first field) of every data row of a CSV file.
fn csv_iterations(path: &Path) -> Vec<u64> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().expect("an iteration"))
        .collect()
}

/// The `iteration` counter of a checkpoint's manifest.
fn manifest_counter(ckpt: &Path, name: &str) -> u64 {
    let text = fs::read_to_string(ckpt.join("manifest.toml")).expect("manifest");
    text.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{name} = ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The "N iterations done" figure of the start line of `xqz train`.
fn iterations_done(log: &str) -> u64 {
    let line = log.lines().find(|l| l.starts_with("xqz train: run")).expect("a start line");
    // "... self-play network in f32 (N iterations done, ...": the number before " iteration".
    let (head, _) = line.split_once(" iteration").expect("an iteration count");
    head.rsplit('(').next().unwrap().parse().unwrap()
}

#[test]
fn pruning_never_removes_the_newest_checkpoint_and_ignores_foreign_folders() {
    let dir = run_dir("prune");
    let config = tiny_with("prune", &[("keep_checkpoints", "1"), ("arena_every", "0")]);
    let config = config.to_str().unwrap();
    let o = train(&dir, &["--config", config, "--iterations", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoints(&dir), ["ckpt-000000", "ckpt-000003"]);
    // A folder that is not a checkpoint, named like a newer one, is passed over with a warning
    // and neither resumed from nor counted by the pruning.
    fs::create_dir(dir.join("checkpoints/ckpt-000099")).unwrap();
    let o = train(&dir, &["--resume", "--iterations", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("ckpt-000099") && log.contains("not a checkpoint"), "{log}");
    assert!(log.contains("the newest checkpoint that loads"), "{log}");
    assert_eq!(iterations_done(&log), 3, "{log}");
    assert!(log.contains("checkpoint ") && log.contains("ckpt-000005"), "{log}");
    assert_eq!(checkpoints(&dir), ["ckpt-000000", "ckpt-000005", "ckpt-000099"]);
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(iterations_done(&stderr(&o)), 5, "{}", stderr(&o));
    assert_eq!(csv_iterations(&dir.join("metrics.csv")), [1, 2, 3, 4, 5, 6]);

    // An export written into checkpoints/ under a checkpoint's name is not the run's newest
    // net: the arena plays ckpt-000006, and says what it passed over.
    let out = dir.join("checkpoints/ckpt-000100");
    let o = xqz()
        .args(["export", "--checkpoint"])
        .arg(dir.join("checkpoints/ckpt-000000"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = xqz()
        .args(["arena", "--b", "random", "--games", "2", "--sims", "4", "--a"])
        .arg(format!("net:{}", dir.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("A: ckpt-000006"), "{table}");
    assert!(stderr(&o).contains("ckpt-000100"), "{}", stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}

/// `loop.keep_every_minutes` keeps the first checkpoint of each period beside the newest
/// `keep_checkpoints`: with a period far shorter than an iteration every checkpoint is the
/// first of its own period, and with one far longer than the run none is.
#[test]
fn keep_every_minutes_keeps_the_first_checkpoint_of_each_period() {
    for (name, minutes, kept) in [
        (
            "keep-short",
            "0.00001",
            &["ckpt-000000", "ckpt-000001", "ckpt-000002", "ckpt-000003"][..],
        ),
        ("keep-long", "600", &["ckpt-000000", "ckpt-000003"][..]),
    ] {
        let dir = run_dir(name);
        // tiny.toml has no keep_every_minutes line: added after keep_checkpoints.
        let keep = format!("1\nkeep_every_minutes = {minutes}");
        let config = tiny_with(name, &[("keep_checkpoints", &keep), ("arena_every", "0")]);
        let o = train(&dir, &["--config", config.to_str().unwrap(), "--iterations", "3"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(checkpoints(&dir), kept, "keep_every_minutes = {minutes}");
        let _ = fs::remove_dir_all(&dir);
    }
}

#[test]
fn damaged_checkpoints_are_named_never_pruned_into_and_never_duplicate_metrics() {
    let dir = run_dir("damaged");
    let config = tiny_with("damaged", &[("keep_checkpoints", "1"), ("arena_every", "0")]);
    let config = config.to_str().unwrap();
    let o = train(&dir, &["--config", config, "--iterations", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));

    // A truncated weights file: the resume names the checkpoint and why, falls back to the one
    // before (here the initial net), and metrics.csv keeps one row per iteration.
    let model = dir.join("checkpoints/ckpt-000003/model.bpk");
    let f = fs::OpenOptions::new().write(true).open(&model).unwrap();
    f.set_len(1000).unwrap();
    drop(f);
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("ckpt-000003") && log.contains("truncated"), "{log}");
    assert!(log.contains("the newest checkpoint that loads"), "{log}");
    assert_eq!(iterations_done(&log), 0, "{log}");
    // The new ckpt-000001 is kept; the damaged newer one is left for the user to see.
    assert_eq!(checkpoints(&dir), ["ckpt-000000", "ckpt-000001", "ckpt-000003"]);
    assert_eq!(csv_iterations(&dir.join("metrics.csv")), [1]);

    // A flipped byte in the optimizer state: named again, and the resume now starts from the
    // newest good checkpoint (1), not from 0.
    let optim = dir.join("checkpoints/ckpt-000003/optimizer.bpk");
    let mut bytes = fs::read(&optim).unwrap();
    bytes[100] ^= 0x40;
    fs::write(&optim, bytes).unwrap();
    let o = train(&dir, &["--resume", "--iterations", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("ckpt-000003"), "{log}");
    assert_eq!(iterations_done(&log), 1, "{log}");
    // Iteration 3 was written anew over the damaged one; it loads now.
    assert_eq!(checkpoints(&dir), ["ckpt-000000", "ckpt-000004"]);
    assert_eq!(csv_iterations(&dir.join("metrics.csv")), [1, 2, 3, 4]);
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("passed over"), "{}", stderr(&o));

    // A damaged shard of the window: named and left out; the checkpoint loaded, so no word of
    // falling back to an older one.
    fs::write(dir.join("shards/shard-000004.npz"), b"not a zip archive").unwrap();
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("shard-000004.npz") && log.contains("unreadable"), "{log}");
    assert!(!log.contains("the newest checkpoint that loads"), "{log}");
    assert_eq!(iterations_done(&log), 5, "{log}");
    // A damaged shard of the iteration to come (written before a stop, its checkpoint never):
    // named, and the iteration's games played again in its place.
    let next = dir.join("shards/shard-000007.npz");
    fs::write(&next, b"not a zip archive").unwrap();
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("shard-000007.npz") && log.contains("played again"), "{log}");
    assert!(xiangqi_search::read_shard(&next).is_ok(), "{log}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn metrics_keep_one_row_per_iteration_after_kills_at_checkpoint_time() {
    let dir = run_dir("kill-rows");
    let config = tiny();
    // Kill -9 the moment a new checkpoint appears (the row used to be written after it), and
    // at a few other moments, then resume.
    let mut first = true;
    for round in 0..6 {
        let mut child = if first {
            first = false;
            xqz()
                .args(["train", "--quiet", "--threads", "1", "--iterations", "40", "--config"])
                .arg(&config)
                .arg("--run-dir")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        } else {
            xqz()
                .args(["train", "--quiet", "--threads", "1", "--resume", "--run-dir"])
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        };
        let before = checkpoints(&dir);
        let start = Instant::now();
        if round % 2 == 0 {
            while checkpoints(&dir).iter().all(|c| before.contains(c) || c == "ckpt-000000")
                && start.elapsed() < Duration::from_secs(60)
            {
                sleep(Duration::from_millis(1));
            }
        } else {
            sleep(Duration::from_millis(300 + 400 * round));
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let newest = checkpoints(&dir).last().unwrap().clone();
    let done = manifest_counter(&dir.join("checkpoints").join(&newest), "iteration");
    assert!(done >= 3, "{newest}");
    let rows = csv_iterations(&dir.join("metrics.csv"));
    assert_eq!(rows, (1..=done).collect::<Vec<_>>(), "metrics.csv iterations");
    // Arena rows: every arena (every 2 iterations) exactly once per opponent.
    let arena = fs::read_to_string(dir.join("arena.csv")).unwrap();
    let mut pairs: Vec<(u64, String)> = arena
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (cells[0].parse().unwrap(), cells[2].to_string())
        })
        .collect();
    let n = pairs.len();
    pairs.sort();
    pairs.dedup();
    assert_eq!(pairs.len(), n, "a repeated arena row: {arena}");
    for it in (2..=done).step_by(2) {
        assert_eq!(pairs.iter().filter(|(i, _)| *i == it).count(), 3, "arena {it}: {arena}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_closed_or_full_standard_error_does_not_stop_training() {
    let dir = run_dir("stderr-full");
    let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = xqz()
        .args(["train", "--quiet", "--threads", "1", "--iterations", "2", "--config"])
        .arg(tiny())
        .arg("--run-dir")
        .arg(&dir)
        .stderr(Stdio::from(full))
        .output()
        .unwrap();
    assert!(o.status.success(), "exit {:?}", o.status);
    assert_eq!(checkpoints(&dir).len(), 3);
    let _ = fs::remove_dir_all(&dir);

    // Standard error read by a reader that goes away at once (`2>&1 | head -1`).
    let dir = run_dir("stderr-closed");
    let mut child = spawn_tiny(&dir, &["--iterations", "3"]);
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit {status:?}");
    assert_eq!(csv_iterations(&dir.join("metrics.csv")), [1, 2, 3]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_in_the_first_iteration_keeps_its_steps() {
    let dir = run_dir("sigint-first");
    let config = tiny_with(
        "sigint-first",
        &[("train_ratio", "100.0"), ("batch_size", "256"), ("arena_every", "0")],
    );
    let child = xqz()
        .args(["train", "--quiet", "--threads", "1", "--config"])
        .arg(&config)
        .arg("--run-dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A step of the first iteration taken, and the iteration not yet over.
    wait_until(120, "the first training step", || logged_steps(&dir) > 0);
    assert_eq!(
        checkpoints(&dir),
        ["ckpt-000000"],
        "the first iteration ended before the interrupt"
    );
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("stopped: 0 iterations"), "interrupted too late? {err}");
    let partial = dir.join("checkpoints/ckpt-000001");
    let steps = manifest_step(&partial);
    assert!(steps > 0, "{err}");
    assert_eq!(manifest_counter(&partial, "steps_in_iteration"), steps);
    assert!(
        err.contains(&format!("{steps} optimizer steps")) && err.contains("ckpt-000001"),
        "{err}"
    );
    // The initial network is untouched, and a resume continues the first iteration's steps.
    assert_eq!(manifest_step(&dir.join("checkpoints/ckpt-000000")), 0);
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(manifest_counter(&partial, "iteration"), 1);
    assert_eq!(manifest_counter(&partial, "steps_in_iteration"), 0);
    assert!(manifest_step(&partial) > steps);
    assert_eq!(csv_iterations(&dir.join("metrics.csv")), [1]);
    let _ = fs::remove_dir_all(&dir);

    // One iteration cannot be made endless.
    let config = tiny_with("ratio", &[("train_ratio", "1e30")]);
    let o = train(&run_dir("ratio"), &["--config", config.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("loop.train_ratio"), "{}", stderr(&o));
}

#[test]
fn a_new_run_never_overwrites_or_appends_to_a_users_files() {
    let dir = run_dir("users-files");
    fs::create_dir_all(&dir).unwrap();
    let mine = "# my own notes\n[loop]\nseed = 7\n";
    fs::write(dir.join("config.toml"), mine).unwrap();
    fs::write(dir.join("metrics.csv"), "a,b\n1,2\n").unwrap();
    let o = xqz()
        .args(["train", "--quiet", "--threads", "1", "--iterations", "1", "--config"])
        .arg(dir.join("config.toml"))
        .arg("--run-dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not empty"), "{}", stderr(&o));
    assert_eq!(fs::read_to_string(dir.join("config.toml")).unwrap(), mine);
    assert_eq!(fs::read_to_string(dir.join("metrics.csv")).unwrap(), "a,b\n1,2\n");
    assert!(!dir.join("lock").exists() && !dir.join("checkpoints").exists());
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn resume_errors_say_what_is_missing_and_create_nothing() {
    let dir = run_dir("no-such-run");
    let o = train(&dir, &["--resume"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no such directory"), "{}", stderr(&o));
    assert!(!dir.exists(), "a lock or folder was left behind");

    let dir = run_dir("no-config");
    let o = train(&dir, &["--config", tiny().to_str().unwrap(), "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    fs::remove_file(dir.join("config.toml")).unwrap();
    let o = train(&dir, &["--resume", "--iterations", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let log = stderr(&o);
    assert!(log.contains("config.toml") && log.contains("missing"), "{log}");
    assert!(!log.contains("differs"), "{log}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn tiny_toml_stops_by_itself() {
    // The preset promises a smoke run that ends on its own (its budget, not --iterations).
    let dir = run_dir("tiny-budget");
    let mut child = spawn_tiny(&dir, &[]);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(240) {
            let _ = child.kill();
            panic!("configs/tiny.toml ran for four minutes without stopping");
        }
        sleep(Duration::from_millis(100));
    };
    assert!(status.success());
    let mut log = String::new();
    use std::io::Read as _;
    child.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(log.contains("budget spent"), "{log}");
    // The line names the budget that stopped it: tiny.toml's max_steps (it has no other).
    assert!(log.contains("budget is spent (loop.max_steps = 600)"), "{log}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn what_the_run_did_not_write_is_never_deleted() {
    let dir = run_dir("foreign");
    let config = tiny_with("foreign", &[("keep_checkpoints", "1"), ("arena_every", "0")]);
    let config = config.to_str().unwrap();
    let o = train(&dir, &["--config", config, "--iterations", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ckpts = dir.join("checkpoints");
    // A user's folder and a user's file where the run's next checkpoints go, a leftover of a
    // pruning killed halfway, and a checkpoint copied in from another run.
    fs::create_dir(ckpts.join("ckpt-000003")).unwrap();
    fs::write(ckpts.join("ckpt-000003/mine.txt"), "precious").unwrap();
    fs::write(ckpts.join("ckpt-000004"), "my notes").unwrap();
    fs::create_dir(ckpts.join(".ckpt-000001.pruned-1")).unwrap();
    fs::write(ckpts.join(".ckpt-000001.pruned-1/model.bpk"), "half deleted").unwrap();
    let other = run_dir("foreign-other");
    let o = train(&other, &["--config", config, "--iterations", "6"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let copy = ckpts.join("ckpt-000006");
    fs::create_dir(&copy).unwrap();
    for f in fs::read_dir(other.join("checkpoints/ckpt-000006")).unwrap() {
        let f = f.unwrap();
        fs::copy(f.path(), copy.join(f.file_name())).unwrap();
    }

    let o = train(&dir, &["--resume", "--iterations", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert_eq!(iterations_done(&log), 2, "the copied checkpoint is not this run's: {log}");
    assert!(log.contains("ckpt-000006") && log.contains("another run"), "{log}");
    assert!(log.contains("moved aside"), "{log}");
    // Nothing of the user's is lost; the run's checkpoints are in place.
    assert_eq!(
        fs::read_to_string(ckpts.join("ckpt-000003.foreign-1/mine.txt")).unwrap(),
        "precious"
    );
    assert_eq!(fs::read_to_string(ckpts.join("ckpt-000004.foreign-1")).unwrap(), "my notes");
    assert!(!ckpts.join(".ckpt-000001.pruned-1").exists(), "the pruning leftover is removed");
    assert!(copy.join("manifest.toml").exists(), "the copied checkpoint is left alone");
    assert_eq!(manifest_counter(&ckpts.join("ckpt-000005"), "iteration"), 5);
    assert_eq!(csv_iterations(&dir.join("metrics.csv")), [1, 2, 3, 4, 5]);
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_dir_all(&other);
}

#[test]
fn a_start_killed_before_its_first_checkpoint_can_be_started_again() {
    // What a kill a few milliseconds into a new run leaves: the lock, empty folders and the
    // temporary of the initial checkpoint.
    let dir = run_dir("killed-start");
    fs::create_dir_all(dir.join("checkpoints/.ckpt-000000.tmp-1-0")).unwrap();
    fs::create_dir_all(dir.join("shards")).unwrap();
    fs::write(dir.join("lock"), "").unwrap();
    let o = train(&dir, &["--resume"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("without --resume"), "{}", stderr(&o));
    let o = train(&dir, &["--config", tiny().to_str().unwrap(), "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoints(&dir), ["ckpt-000000", "ckpt-000001"]);
    assert!(!dir.join("checkpoints/.ckpt-000000.tmp-1-0").exists());
    let _ = fs::remove_dir_all(&dir);
}

/// Whether the wgpu tests must run: `.ci/run` installs lavapipe and sets `XQZ_REQUIRE_WGPU=1`.
fn wgpu_required() -> bool {
    std::env::var_os("XQZ_REQUIRE_WGPU").is_some()
}

#[test]
fn train_on_the_wgpu_device_then_resume_on_the_cpu() {
    let dir = run_dir("wgpu");
    let config = tiny();
    let config = config.to_str().unwrap();
    let o = train(&dir, &["--config", config, "--iterations", "1", "--device", "wgpu"]);
    if !o.status.success() && !wgpu_required() && stderr(&o).contains("not available") {
        eprintln!("skipped (no Vulkan adapter): {}", stderr(&o));
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoints(&dir), ["ckpt-000000", "ckpt-000001"]);
    assert_eq!(csv_rows(&dir.join("metrics.csv")), 1);
    // The resolved config records the device; a checkpoint carries none, so the run goes on
    // on the CPU.
    let resolved = fs::read_to_string(dir.join("config.toml")).unwrap();
    assert!(resolved.contains("device = \"wgpu\""), "{resolved}");
    let o = train(&dir, &["--config", config, "--iterations", "1", "--resume", "--device", "cpu"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(csv_rows(&dir.join("metrics.csv")), 2);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_device_the_build_or_the_machine_lacks_is_an_error_before_anything_is_written() {
    let config = tiny();
    let config = config.to_str().unwrap();
    for (device, expected) in [
        ("gpu", "unknown device 'gpu' (expected cpu, wgpu, wgpu:N, cuda or cuda:N)"),
        ("cuda:0", "this build has no cuda backend; CUDA is not supported"),
        ("wgpu:7", "device 'wgpu:7' is not available: wgpu:N counts discrete GPUs only"),
    ] {
        let dir = run_dir(&format!("device-{}", device.replace(':', "-")));
        let o = train(&dir, &["--config", config, "--iterations", "1", "--device", device]);
        assert!(!o.status.success(), "--device {device} ran");
        assert!(stderr(&o).contains(expected), "--device {device}: {}", stderr(&o));
        assert!(!dir.exists(), "--device {device} created the run directory");
    }
}

/// FNV-1a 64, as the manifest writes it (`fnv1a64:<16 hex digits>`).
fn fnv1a64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("fnv1a64:{h:016x}")
}

/// `xqz uci --net NET` answering `uci`, then `quit`.
fn uci_with_net(net: &Path) -> Output {
    use std::io::Write as _;
    let mut child = xqz()
        .arg("uci")
        .arg("--net")
        .arg(net)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xqz runs");
    // A refused net ends the engine before it reads: a broken pipe is part of the answer.
    let _ = child.stdin.take().unwrap().write_all(b"uci\nisready\nquit\n");
    child.wait_with_output().unwrap()
}

/// One flipped byte in any file an export's or a checkpoint's manifest lists (not only the
/// weights the engine reads) is refused when the net is loaded, by `xqz uci --net` and
/// `xqz arena`, with the file and the checksums expected and found; the unmodified ones load.
#[test]
fn a_flipped_byte_in_any_file_of_a_net_is_refused_naming_the_file() {
    let dir = run_dir("checksums");
    let o = train(&dir, &["--config", tiny().to_str().unwrap(), "--iterations", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ckpt = dir.join("checkpoints").join(checkpoints(&dir).last().expect("a checkpoint"));
    let export = dir.join("export");
    let o = xqz().arg("export").arg("--checkpoint").arg(&ckpt).arg("--out").arg(&export).output();
    let o = o.unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for net in [&ckpt, &export] {
        let o = uci_with_net(net);
        assert!(o.status.success(), "{}: {}", net.display(), stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("readyok"), "{}", net.display());
        let player = format!("net:{}", net.display());
        let a = xqz()
            .args(["arena", "--a", &player, "--b", "random", "--games", "1", "--sims", "2"])
            .output()
            .unwrap();
        assert!(a.status.success(), "{}: {}", net.display(), stderr(&a));
    }
    for (source, file) in [
        (&export, "model.safetensors"),
        (&export, "model.json"),
        (&export, "model.bpk"),
        (&ckpt, "optimizer.bpk"),
        (&ckpt, "model.bpk"),
    ] {
        let damaged = dir.join(format!("damaged-{}-{file}", source.file_name().unwrap().display()));
        fs::create_dir_all(&damaged).unwrap();
        for e in fs::read_dir(source).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), damaged.join(e.file_name())).unwrap();
        }
        let path = damaged.join(file);
        let mut bytes = fs::read(&path).unwrap();
        let expected = fnv1a64(&bytes);
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x08;
        let found = fnv1a64(&bytes);
        fs::write(&path, &bytes).unwrap();
        assert!(
            fs::read_to_string(damaged.join("manifest.toml")).unwrap().contains(&expected),
            "the manifest records {file}'s checksum"
        );
        let o = uci_with_net(&damaged);
        assert_eq!(o.status.code(), Some(2), "{file}: {}", stderr(&o));
        let err = stderr(&o);
        for what in [path.display().to_string(), expected.clone(), found.clone()] {
            assert!(err.contains(&what), "{file}: {what} not in {err}");
        }
        assert!(!String::from_utf8_lossy(&o.stdout).contains("uciok"), "{file}");
        let player = format!("net:{}", damaged.display());
        let a = xqz()
            .args(["arena", "--a", &player, "--b", "random", "--games", "1", "--sims", "2"])
            .output()
            .unwrap();
        assert_eq!(a.status.code(), Some(2), "{file}: {}", stderr(&a));
        assert!(stderr(&a).contains(&path.display().to_string()), "{file}: {}", stderr(&a));
    }
    let _ = fs::remove_dir_all(&dir);
}

/// Runs `xqz train` (started as `command`, which names the program) on `dir` with `config`
/// until a 1.8-second `--hours` limit, and returns its "to go on" line without that prefix.
fn resume_hint(mut command: Command, dir: &Path, config: &Path, extra: &[&str]) -> String {
    let out = command
        .args(["train", "--quiet", "--threads", "1", "--run-dir"])
        .arg(dir)
        .arg("--config")
        .arg(config)
        .args(["--hours", "0.0005"])
        .args(extra)
        .output()
        .expect("xqz runs");
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    log.lines()
        .find_map(|l| l.strip_prefix("to go on: "))
        .unwrap_or_else(|| panic!("no 'to go on' line:\n{log}"))
        .to_string()
}

/// What the system's shell makes of `line`: its words.
fn shell_words(line: &str) -> Vec<String> {
    let words =
        Command::new("sh").arg("-c").arg(format!("printf '%s\\n' {line}")).output().unwrap();
    assert!(words.status.success(), "the shell refused: {line}");
    String::from_utf8(words.stdout).unwrap().lines().map(str::to_string).collect()
}

/// The line `xqz train` prints to resume a stopped run, given to the shell, runs it: the
/// program as it was started and the run directory, quoted where they need it.
#[test]
fn the_resume_hint_is_a_command_the_shell_runs_as_it_is() {
    // The program started through a link whose name needs quoting, into a run directory whose
    // name does too: the printed line, given to the shell, must name that link and directory.
    let base = run_dir("hint");
    let link_dir = base.join("bin dir");
    fs::create_dir_all(&link_dir).unwrap();
    let link = link_dir.join("xqz it's $1");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_xqz"), &link).unwrap();
    let dir = base.join("run (1)");
    let config = tiny_with("hint", &[("max_steps", "100000000"), ("arena_every", "0")]);
    let line = resume_hint(Command::new(&link), &dir, &config, &[]);
    let expected =
        [link.to_str().unwrap(), "train", "--resume", "--run-dir", dir.to_str().unwrap()];
    assert_eq!(shell_words(&line), expected, "the line: {line}");

    // A launcher that passes a name which is no program (`exec -a`): the line names the
    // running executable instead.
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(env!("CARGO_BIN_EXE_xqz"));
    command.arg0("no such program");
    let line = resume_hint(command, &dir, &config, &["--resume"]);
    let program = shell_words(&line).remove(0);
    assert_eq!(
        fs::canonicalize(program).ok(),
        fs::canonicalize(env!("CARGO_BIN_EXE_xqz")).ok(),
        "the line: {line}"
    );
    let _ = fs::remove_dir_all(&base);
}

/// `--hours H` stops a run that would go on by itself after H hours of wall time, with a
/// checkpoint of the steps taken and a line that says why; the run resumes from there. A value
/// that is not a positive number of hours is refused before anything is written.
#[test]
fn hours_stops_the_run_on_time_with_a_checkpoint_that_resumes() {
    let dir = run_dir("hours");
    // Budgets far beyond what 12 seconds buy: only --hours can stop it.
    let config = tiny_with("hours", &[("max_steps", "100000000"), ("arena_every", "0")]);
    let config = config.to_str().unwrap();
    let limit = 12.0;
    let started = Instant::now();
    let out = train(&dir, &["--config", config, "--hours", &format!("{}", limit / 3600.0)]);
    let took = started.elapsed().as_secs_f64();
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("time is up:"), "no time-up line:\n{log}");
    assert!(log.contains("time limit of this invocation was reached"), "{log}");
    // The hint names the program as it was started (here the test's path to the binary), so
    // that it can be typed as it is by a user who ran `cargo run` or `target/release/xqz`.
    let hint = format!(
        "to go on: {} train --resume --run-dir {}",
        env!("CARGO_BIN_EXE_xqz"),
        dir.display()
    );
    assert!(log.contains(&hint), "no '{hint}' in:\n{log}");
    // It stopped at the limit, not at the end of a budget: at least the limit, and within one
    // optimizer step or self-play move of it (generous for a loaded machine).
    assert!(took >= limit, "stopped after {took:.1} s, before the {limit} s limit:\n{log}");
    assert!(took < limit + 60.0, "stopped {took:.1} s after the start for a {limit} s limit");
    let ckpts = checkpoints(&dir);
    let last = ckpts.last().expect("a checkpoint");
    let steps = manifest_step(&dir.join("checkpoints").join(last));
    assert!(steps > 0, "the checkpoint {last} holds no step after {took:.1} s");

    let again = train(&dir, &["--resume", "--iterations", "1"]);
    let log2 = stderr(&again);
    assert!(again.status.success(), "{log2}");
    assert!(
        log2.contains(&format!("{steps} steps)")),
        "resumed elsewhere than step {steps}:\n{log2}"
    );

    for bad in ["0", "-1", "nan", "inf", "1h", "9000"] {
        let fresh = run_dir(&format!("hours-bad-{}", bad.len()));
        let out = train(&fresh, &["--config", config, &format!("--hours={bad}")]);
        assert!(!out.status.success(), "--hours {bad} was accepted");
        assert!(stderr(&out).contains("--hours"), "--hours {bad}: {}", stderr(&out));
        assert!(!fresh.exists(), "--hours {bad} created {}", fresh.display());
    }
    let _ = fs::remove_dir_all(&dir);
}

/// Resuming a CPU run brings no GPU driver up: burn loaded the optimizer state on its default
/// device, the wgpu one, so every `--resume` started Vulkan and, without `XDG_RUNTIME_DIR`,
/// printed the loader's `XDG_RUNTIME_DIR is invalid or not set` (where a Vulkan driver is
/// installed, as lavapipe is in CI).
#[test]
fn a_cpu_resume_never_starts_a_gpu_driver() {
    let dir = run_dir("cpu-resume-driver");
    let config = tiny_with("cpu-resume-driver", &[("arena_every", "0")]);
    let config = config.to_str().unwrap();
    let first = train(&dir, &["--config", config, "--iterations", "1"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let again = xqz()
        .args(["train", "--quiet", "--threads", "1", "--resume", "--iterations", "1", "--run-dir"])
        .arg(&dir)
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let log = stderr(&again);
    assert!(again.status.success(), "{log}");
    assert!(log.contains("iteration 2:"), "{log}");
    assert!(!log.contains("XDG_RUNTIME_DIR"), "a GPU driver was started:\n{log}");
    let _ = fs::remove_dir_all(&dir);
}

/// `schedule = "cosine_run"` through the binary: with a step budget the learning rate in
/// metrics.csv falls from the peak towards the floor over the run; with no budget the start
/// warns that the rate stays at its peak (`--hours` limits the invocation, not the run).
#[test]
fn cosine_run_falls_over_the_budget_and_warns_without_one() {
    let text = fs::read_to_string(tiny()).unwrap().replace(
        "warmup_steps = 2",
        "warmup_steps = 2\nschedule = \"cosine_run\"\nfinal_lr_fraction = 0.1",
    );
    assert!(text.contains("cosine_run"), "tiny.toml changed: no warmup_steps = 2 line");
    let write = |name: &str, text: &str| {
        let path =
            std::env::temp_dir().join(format!("xqz-tiny-{name}-{}.toml", std::process::id()));
        fs::write(&path, text).unwrap();
        path
    };
    let budget = write("cosine-budget", &text.replace("max_steps = 600", "max_steps = 120"));
    let none = write("cosine-none", &text.replace("max_steps = 600", "max_steps = 0"));

    let dir = run_dir("cosine-budget");
    let out = train(&dir, &["--config", budget.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("cosine_run"), "{}", stderr(&out));
    let metrics = fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let header: Vec<&str> = metrics.lines().next().unwrap().split(',').collect();
    let column = header.iter().position(|&c| c == "learning_rate").expect("a learning_rate column");
    let rates: Vec<f64> = metrics
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(column).unwrap().parse().unwrap())
        .filter(|&r: &f64| r > 0.0)
        .collect();
    assert!(rates.len() >= 3, "{metrics}");
    // Each row holds its iteration's last rate. The peak is 0.002 and the floor 0.0002; an
    // iteration takes at most 20 steps (4 games of at most 80 plies, twice over, batches of
    // 32), so the first row is at most a sixth into the 120-step budget, and the last row at
    // its end (the budget is looked at between iterations).
    let (first, last) = (rates[0], rates[rates.len() - 1]);
    assert!(first > 0.0018 && (0.0002 - 1e-9..0.0003).contains(&last), "{rates:?}");
    assert!(rates.windows(2).all(|w| w[1] <= w[0]), "{rates:?}");
    let _ = fs::remove_dir_all(&dir);

    let dir = run_dir("cosine-none");
    let out = train(&dir, &["--config", none.to_str().unwrap(), "--iterations", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: training.schedule = \"cosine_run\"")
            && stderr(&out).contains("stays at 0.002"),
        "{}",
        stderr(&out)
    );
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_file(budget);
    let _ = fs::remove_file(none);
}

/// `loop.precision`: `"bf16"` trains an iteration (with its arena) where the CPU has AMX or
/// AVX-512 BF16, and says why it computes in f32 where it cannot (neither, or a
/// squeeze-excitation tower); `"auto"` never warns; the key is written to the run's config.toml.
#[test]
fn loop_precision_runs_bf16_where_it_can_and_says_why_where_it_cannot() {
    let text = fs::read_to_string(tiny()).unwrap();
    let dir = run_dir("precision");
    fs::create_dir_all(&dir).unwrap();
    let bf16 = common::cpu_runs_bf16_inference();
    let neither = "has neither AMX nor AVX-512 BF16";
    let cases = [
        ("bf16", "", if bf16 { None } else { Some(neither) }),
        (
            "bf16",
            "global = \"squeeze_excitation\"\nglobal_channels = 4\nglobal_every = 1\n",
            Some(if bf16 { "global pooling or squeeze-excitation" } else { neither }),
        ),
        ("auto", "", None),
    ];
    for (k, (precision, network, warning)) in cases.iter().enumerate() {
        let config = text
            .replace("[loop]\n", &format!("[loop]\nprecision = \"{precision}\"\n"))
            .replace("[network]\n", &format!("[network]\n{network}"));
        let file = dir.join(format!("config-{k}.toml"));
        fs::write(&file, config).unwrap();
        let run = dir.join(format!("run-{k}"));
        let o = train(&run, &["--config", file.to_str().unwrap(), "--iterations", "2"]);
        let err = stderr(&o);
        assert!(o.status.success(), "{precision} {network}: {err}");
        match warning {
            Some(w) => {
                assert!(err.contains(w) && err.contains("self-play computes in f32"), "{err}")
            }
            None => assert!(!err.contains("self-play computes in f32"), "{err}"),
        }
        let written = fs::read_to_string(run.join("config.toml")).unwrap();
        assert!(written.contains(&format!("precision = \"{precision}\"")), "{written}");
        assert!(checkpoints(&run).contains(&"ckpt-000002".to_string()), "{err}");
    }
    let _ = fs::remove_dir_all(&dir);
}

/// `training.precision`: bfloat16 training runs where the CPU has AMX and says why not
/// elsewhere; `auto` never warns; the key is kept in the run's `config.toml` and the run
/// resumes with it.
#[test]
fn training_precision_runs_bf16_where_it_can_and_says_why_where_it_cannot() {
    let text = fs::read_to_string(tiny()).unwrap();
    let dir = run_dir("training-precision");
    fs::create_dir_all(&dir).unwrap();
    let amx = common::cpu_has_amx();
    for (k, precision) in ["bf16", "auto"].iter().enumerate() {
        let config =
            text.replace("[training]\n", &format!("[training]\nprecision = \"{precision}\"\n"));
        assert_ne!(config, text, "tiny.toml has a [training] section");
        let file = dir.join(format!("config-{k}.toml"));
        fs::write(&file, config).unwrap();
        let run = dir.join(format!("run-{k}"));
        let o = train(&run, &["--config", file.to_str().unwrap(), "--iterations", "2"]);
        let err = stderr(&o);
        assert!(o.status.success(), "{precision}: {err}");
        let warned = err.contains("training computes in f32");
        assert_eq!(warned, *precision == "bf16" && !amx, "{precision}: {err}");
        if warned {
            assert!(err.contains("has no AMX"), "{err}");
        }
        let written = fs::read_to_string(run.join("config.toml")).unwrap();
        let training = &written[written.find("[training]").expect("a [training] section")..];
        assert!(training.contains(&format!("precision = \"{precision}\"")), "{written}");
        let o = train(&run, &["--resume", "--iterations", "1"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(checkpoints(&run).contains(&"ckpt-000003".to_string()), "{}", stderr(&o));
    }
    let _ = fs::remove_dir_all(&dir);
}

/// The start line names the arithmetic of self-play's network: `loop.precision = "auto"` is
/// bfloat16 where this CPU has AMX or AVX-512 BF16 (the tiny net's plain tower can use it) and `f32` elsewhere;
/// without the key (`f32`) it is `f32` on every CPU.
#[test]
fn the_start_line_names_the_precision_self_play_computes_in() {
    let text = fs::read_to_string(tiny()).unwrap().replacen(
        "[loop]\n",
        "[loop]\nprecision = \"auto\"\n",
        1,
    );
    assert!(text.contains("precision = \"auto\""), "tiny.toml has a [loop] section");
    let auto = std::env::temp_dir().join(format!("xqz-tiny-auto-{}.toml", std::process::id()));
    fs::write(&auto, text).unwrap();
    let resolved = if xiangqi_nn::Precision::bf16_available() { "bf16" } else { "f32" };
    for (name, config, want) in [("auto", auto.clone(), resolved), ("f32", tiny(), "f32")] {
        let dir = run_dir(&format!("precision-{name}"));
        let o = train(&dir, &["--config", config.to_str().unwrap(), "--iterations", "1"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let log = stderr(&o);
        let line = log.lines().find(|l| l.starts_with("xqz train: run")).expect("a start line");
        assert!(line.contains(&format!(", self-play network in {want} (")), "{name}: {line}");
        let _ = fs::remove_dir_all(&dir);
    }
    let _ = fs::remove_file(&auto);
}

/// A `--resume` that changes settings names each changed key with its old and new value (here
/// a key the first sitting did not set), and one without changes says nothing of the kind; the
/// start line names where the config came from. `loop.material_plies` with
/// `loop.material_weight = 0` (tiny.toml's) warns that it trains nothing.
#[test]
fn a_resume_names_the_settings_it_changes() {
    let text = fs::read_to_string(tiny())
        .unwrap()
        .replace("max_steps = 600", "max_steps = 600\nmaterial_plies = 4");
    assert!(text.contains("material_plies = 4"), "tiny.toml changed: no max_steps = 600 line");
    let changed = std::env::temp_dir().join(format!("xqz-tiny-plies-{}.toml", std::process::id()));
    fs::write(&changed, text).unwrap();
    let dir = run_dir("resume-changes");
    let out = train(&dir, &["--config", tiny().to_str().unwrap(), "--iterations", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let start = |o: &Output| {
        stderr(o)
            .lines()
            .find(|l| l.starts_with("xqz train: run"))
            .expect("a start line")
            .to_string()
    };
    assert!(start(&out).contains("tiny.toml)"), "{}", start(&out));
    assert!(!stderr(&out).contains("material_plies"), "{}", stderr(&out));

    // The run's own config: nothing changed.
    let out = train(&dir, &["--resume", "--iterations", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("resuming with"), "{}", stderr(&out));
    let own = dir.join("config.toml");
    assert!(start(&out).contains(&format!("(config: {})", own.display())), "{}", start(&out));

    let out =
        train(&dir, &["--resume", "--config", changed.to_str().unwrap(), "--iterations", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(
        log.contains(&format!(
            "resuming with 1 setting changed from the run's last config ({}):\n  loop.material_plies: (not set) -> 4\n",
            own.display()
        )),
        "{log}"
    );
    assert!(log.contains("warning: loop.material_plies = 4 trains nothing"), "{log}");
    assert!(fs::read_to_string(&own).unwrap().contains("material_plies = 4"));
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_file(changed);
}
