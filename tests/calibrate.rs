//! `xqz calibrate` on the recorded nets, through the binary: the table it writes into the
//! export, what `xqz uci` and `xqz analysis` make of it, Fairy-Stockfish on the ladder, and its
//! refusals.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod common;

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A copy of the recorded net `experiment` (an export) in a fresh temporary directory.
fn copy_of(experiment: &str, name: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../experiments")
        .join(experiment)
        .join("net");
    let dir = std::env::temp_dir().join(format!("xqz-calibrate-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    for entry in fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    dir
}

/// Runs `xqz uci --net NET` on `script` and returns its output lines.
fn uci(net: &Path, script: &str) -> Vec<String> {
    let mut child = xqz()
        .args(["uci", "--net"])
        .arg(net)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn calibration_writes_a_table_that_the_engines_use() {
    let net = copy_of("2026-12-01-cpu-1h-win-check", "xiangqi");
    let json = net.with_extension("json");
    let mut args: Vec<String> =
        ["calibrate", "--simulations", "8", "--games", "2", "--threads", "1"]
            .map(String::from)
            .to_vec();
    let fsf = common::fairy_stockfish();
    if let Some(fsf) = &fsf {
        args.extend([
            "--engine".into(),
            format!("uci:{fsf}"),
            "--engine-levels".into(),
            "20".into(),
        ]);
    }
    let o = xqz().args(&args).arg("--net").arg(&net).arg("--json").arg(&json).output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("random = 0"), "{out}");
    // The table is in the manifest: 21 levels, the anchor at 0, every interval around its Elo.
    let manifest: toml::Table =
        toml::from_str(&fs::read_to_string(net.join("manifest.toml")).unwrap()).unwrap();
    let strength = manifest["strength"].as_table().unwrap();
    assert_eq!(strength["anchor"].as_str(), Some("random"));
    assert_eq!(strength["simulations"].as_integer(), Some(8));
    let levels = strength["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 21);
    for (i, l) in levels.iter().enumerate() {
        assert_eq!(l["level"].as_integer(), Some(i as i64));
        let (elo, low, high) = (
            l["elo"].as_float().unwrap(),
            l["low"].as_float().unwrap(),
            l["high"].as_float().unwrap(),
        );
        assert!(low <= elo && elo <= high, "{l:?}");
    }
    let ladder = strength["ladder"].as_array().unwrap();
    let random = ladder.iter().find(|p| p["name"].as_str() == Some("random")).unwrap();
    assert_eq!(random["elo"].as_float(), Some(0.0));
    assert!(ladder.iter().any(|p| p["name"].as_str() == Some("greedy")));
    // The report: every pairing of the schedule (20 steps, 7 levels against random, random
    // against greedy, 21 levels against greedy, and the engine's) with its games.
    let report: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let pairings = report["pairings"].as_array().unwrap();
    assert_eq!(pairings.len(), 49 + usize::from(fsf.is_some()));
    for p in pairings {
        let games = ["wins", "draws", "losses"].iter().map(|k| p[k].as_u64().unwrap()).sum::<u64>();
        assert_eq!(games, 2, "{p}");
    }
    if fsf.is_some() {
        assert!(ladder.iter().any(|p| p["name"].as_str().is_some_and(|n| n.contains("1 node"))));
    }
    // The net still loads (the manifest's checksums are untouched), and its engine offers
    // UCI_Elo over the levels' range and plays at it.
    let low = levels.iter().map(|l| l["elo"].as_float().unwrap()).fold(f64::INFINITY, f64::min);
    let out = uci(
        &net,
        &format!(
            "uci\nsetoption name UCI_LimitStrength value true\nsetoption name UCI_Elo value {}\n\
             position startpos\ngo nodes 800\n",
            low.round() as i64 + 1
        ),
    );
    assert!(out.iter().any(|l| l.starts_with("option name UCI_Elo type spin default ")), "{out:?}");
    assert!(out.iter().any(|l| l.starts_with("info string playing at UCI_Elo")), "{out:?}");
    let best = out.iter().find_map(|l| l.strip_prefix("bestmove ")).unwrap();
    let mv = best.split_whitespace().next().unwrap();
    assert!(xiangqi::Position::start().parse_uci(mv).is_ok(), "{mv}");
    // The analysis engine plays a level too: levelMove is one of the legal moves, and a
    // repeated query draws the same one.
    let query = r#"{"id":"a","level":2}"#;
    let mut child = xqz()
        .args(["analysis", "--net"])
        .arg(&net)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let bad = r#"{"id":"b","level":21}"#;
    writeln!(child.stdin.take().unwrap(), "{query}\n{query}\n{bad}").unwrap();
    let o = child.wait_with_output().unwrap();
    let answers: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let level_moves: Vec<&str> = answers.iter().filter_map(|a| a["levelMove"].as_str()).collect();
    assert_eq!(level_moves.len(), 2, "{answers:?}");
    assert_eq!(level_moves[0], level_moves[1]);
    assert!(xiangqi::Position::start().parse_uci(level_moves[0]).is_ok());
    // Level 2 searches its share of the calibrated budget, 8^(2/20) = 1 simulation (the root
    // counts one visit more, its own).
    for a in answers.iter().filter(|a| a["id"] == "a") {
        assert_eq!(a["rootInfo"]["visits"].as_u64(), Some(2), "{a}");
    }
    assert!(answers.iter().any(|a| a["id"] == "b" && a["field"] == "level"), "{answers:?}");
    let _ = fs::remove_dir_all(&net);
    let _ = fs::remove_file(&json);
}

#[test]
fn janggi_nets_calibrate_and_bad_requests_are_refused() {
    let net = copy_of("2026-12-01-janggi-cpu-1h", "janggi");
    let before = fs::read_to_string(net.join("manifest.toml")).unwrap();
    let o = xqz()
        .args(["calibrate", "--simulations", "4", "--games", "2", "--threads", "1", "--dry-run"])
        .arg("--net")
        .arg(&net)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("level 20") && out.contains("greedy"), "{out}");
    // --dry-run leaves the export alone.
    assert_eq!(fs::read_to_string(net.join("manifest.toml")).unwrap(), before);
    let o = xqz()
        .args(["calibrate", "--engine-levels", "7,25"])
        .arg("--net")
        .arg(&net)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(text(&o).1.contains("'25' is not a level"), "{}", text(&o).1);
    let o = xqz().args(["calibrate", "--net", "/nonexistent/net"]).output().unwrap();
    assert!(!o.status.success());
    assert!(text(&o).1.contains("does not exist"), "{}", text(&o).1);
    // A damaged table in a manifest is refused by name when the net is loaded.
    let mut manifest: toml::Table = toml::from_str(&before).unwrap();
    let broken: toml::Table = toml::from_str(
        "anchor = \"random\"\nsimulations = 0\ngames = 0\nlevels = []\nladder = []\n",
    )
    .unwrap();
    manifest.insert("strength".into(), toml::Value::Table(broken));
    fs::write(net.join("manifest.toml"), toml::to_string(&manifest).unwrap()).unwrap();
    // A damaged table is dropped with a warning that names it; the net still plays, without
    // UCI_Elo.
    let mut child = xqz()
        .args(["uci", "--net"])
        .arg(&net)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"uci\n").unwrap();
    let o = child.wait_with_output().unwrap();
    let (out, err) = text(&o);
    assert!(out.lines().any(|l| l == "uciok") && !out.contains("UCI_Elo"), "{out}");
    assert!(err.contains("damaged and ignored") && err.contains("strength.simulations"), "{err}");
    // Calibrating it again writes a good table over the damaged one.
    let o = xqz()
        .args(["calibrate", "--simulations", "2", "--games", "2", "--threads", "1"])
        .arg("--net")
        .arg(&net)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    let out = uci(&net, "uci\n");
    assert!(out.iter().any(|l| l.starts_with("option name UCI_Elo")), "{out:?}");
    // The report may not go inside the net, where it would replace one of its files.
    let o = xqz()
        .args(["calibrate", "--games", "2", "--json"])
        .arg(net.join("model.safetensors"))
        .arg("--net")
        .arg(&net)
        .output()
        .unwrap();
    assert!(!o.status.success() && text(&o).1.contains("is inside the network"), "{}", text(&o).1);
    // A command that is no engine fails before any game.
    let started = std::time::Instant::now();
    let o = xqz()
        .args(["calibrate", "--games", "40", "--engine", "uci:/nonexistent/engine"])
        .arg("--net")
        .arg(&net)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o).1);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    // An engine that plays an illegal move forfeits: no rating comes of it.
    let liar = net.with_extension("liar.sh");
    fs::write(
        &liar,
        "#!/bin/sh\nwhile read -r line; do\n  case \"$line\" in\n    uci) echo 'id name liar'; \
         echo uciok;;\n    isready) echo readyok;;\n    go*) echo 'bestmove a0a0';;\n    \
         quit) exit 0;;\n  esac\ndone\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&liar, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let o = xqz()
        .args(["calibrate", "--simulations", "2", "--games", "2", "--threads", "1", "--dry-run"])
        .args(["--engine-levels", "20", "--engine"])
        .arg(format!("uci:{}", liar.display()))
        .arg("--net")
        .arg(&net)
        .output()
        .unwrap();
    // The table is made without it, and says so.
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("forfeited 2 of 2 games") && err.contains("left off the ladder"), "{err}");
    assert!(out.contains("greedy") && !out.contains("liar"), "{out}");
    let _ = fs::remove_file(&liar);
    let _ = fs::remove_dir_all(&net);
}
