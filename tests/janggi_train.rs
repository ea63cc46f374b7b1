//! End-to-end tests of janggi through the real binary: self-play, training, the arena, export
//! and the engine on `configs/janggi-tiny.toml`, and the refusals that keep the two games'
//! shards, checkpoints and networks apart.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use xiangqi::janggi;
use xiangqi_search::{GameKind, list_shards, parse_pgn_moves, read_shard};

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

fn config(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs").join(name)
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-janggi-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `xqz uci ARGS` with `script` on standard input; returns its standard output.
fn uci(args: &[&str], script: &str) -> String {
    let mut child = xqz()
        .arg("uci")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xqz uci runs");
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// The move of the `bestmove` line, checked legal after `moves` from janggi's start.
fn janggi_bestmove(out: &str, moves: &[&str]) -> String {
    let best = out
        .lines()
        .find_map(|l| l.strip_prefix("bestmove "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no bestmove in {out}"))
        .to_string();
    let mut game = janggi::Game::new(janggi::Position::start(janggi::Rules::Site));
    for text in moves {
        let m = game.position().parse_uci(text).unwrap();
        game.play(m).unwrap();
    }
    let m = game.position().parse_uci(&best).unwrap_or_else(|e| panic!("{best}: {e}"));
    assert!(game.legal_moves().contains(&m), "bestmove {best} is not legal");
    best
}

#[test]
fn janggi_selfplay_writes_janggi_shards_and_pgn() {
    let out = temp("selfplay");
    let o = xqz()
        .args(["selfplay", "--games", "4", "--threads", "1", "--config"])
        .arg(config("janggi-tiny.toml"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("cho wins"), "{}", stderr(&o));
    let shards = list_shards(&out).unwrap();
    assert_eq!(shards.len(), 1);
    let shard = read_shard(&shards[0]).unwrap();
    assert_eq!(shard.game, GameKind::Janggi);
    assert_eq!(shard.rules_of::<janggi::Game>().unwrap(), janggi::Rules::Site);
    assert!(shard.rules_of::<xiangqi::Game>().is_err(), "a janggi shard is no xiangqi shard");
    assert!(!shard.is_empty());
    let pgn = fs::read_to_string(out.join("games.pgn")).unwrap();
    assert!(pgn.contains("[Game \"Janggi\"]") && pgn.contains("[Cho \"xqz\"]"), "{pgn}");
    // Every game's moves replay legally under janggi's rules.
    let games: Vec<&str> = pgn.split("[Game ").filter(|g| !g.trim().is_empty()).collect::<Vec<_>>();
    assert_eq!(games.len(), 4);
    for g in games {
        let text = format!("[Game {g}");
        let (start, moves) = parse_pgn_moves::<janggi::Game>(&text, janggi::Rules::Site)
            .unwrap_or_else(|e| {
                panic!("{e}: {text}");
            });
        assert_eq!(start, janggi::Position::start(janggi::Rules::Site));
        assert!(!moves.is_empty());
    }
    // Xiangqi shards are not numbered on after janggi ones.
    let x = xqz()
        .args(["selfplay", "--games", "1", "--threads", "1", "--config"])
        .arg(config("tiny.toml"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!x.status.success());
    assert!(stderr(&x).contains("holds janggi shards"), "{}", stderr(&x));
    assert_eq!(list_shards(&out).unwrap().len(), 1);
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn a_janggi_run_trains_plays_exports_and_refuses_to_mix_games() {
    let run = temp("run");
    let o = xqz()
        .args(["train", "--quiet", "--threads", "1", "--iterations", "2", "--config"])
        .arg(config("janggi-tiny.toml"))
        .arg("--run-dir")
        .arg(&run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let manifest = fs::read_to_string(run.join("checkpoints/ckpt-000002/manifest.toml")).unwrap();
    assert!(manifest.contains("game = \"janggi\""), "{manifest}");
    assert!(manifest.contains("policy_size = 2451"), "{manifest}");
    let shard = read_shard(&run.join("shards/shard-000001.npz")).unwrap();
    assert_eq!(shard.game, GameKind::Janggi);

    // The arena takes the game from the network's manifest.
    let a = xqz()
        .args(["arena", "--b", "greedy", "--games", "2", "--sims", "4", "--a"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(stdout(&a).contains("A with Cho"), "{}", stdout(&a));
    let x = xqz()
        .args(["arena", "--game", "xiangqi", "--b", "random", "--games", "2", "--a"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(!x.status.success());
    assert!(stderr(&x).contains("plays janggi"), "{}", stderr(&x));

    // The export says which game its network plays, and names the pass.
    let export = temp("export");
    let e = xqz().arg("export").arg("--checkpoint").arg(&run).arg("--out").arg(&export).output();
    let e = e.unwrap();
    assert!(e.status.success(), "{}", stderr(&e));
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(export.join("model.json")).unwrap()).unwrap();
    assert_eq!(json["game"], "janggi");
    assert_eq!(json["policy"]["shape"][1], 2451);
    assert_eq!(json["policy"]["moves"][2450], "pass");
    assert_eq!(json["input"]["planes"].as_array().unwrap().len(), 16);
    let fen = json["test_vector"]["fen"].as_str().unwrap();
    assert_eq!(fen, janggi::START_FEN);

    // The engine plays janggi with the janggi network, and refuses to switch game.
    let run_arg = run.to_str().unwrap();
    let out = uci(
        &["--net", run_arg],
        "uci\nsetoption name UCI_Variant value xiangqi\nposition startpos moves e3e4\n\
         go nodes 16\nquit\n",
    );
    assert!(out.contains("option name UCI_Variant type combo default janggi"), "{out}");
    assert!(out.contains("plays janggi"), "{out}");
    janggi_bestmove(&out, &["e3e4"]);
    // Without --net: a janggi network loaded by NetPath switches the engine to janggi (a GUI
    // that only sets NetPath gets a janggi engine) and then fixes the game.
    let out = uci(
        &[],
        &format!(
            "uci\nsetoption name NetPath value {run_arg}\nsetoption name UCI_Variant value janggi\n\
             setoption name UCI_Variant value xiangqi\nposition startpos\ngo nodes 8\nquit\n"
        ),
    );
    assert!(out.contains("it plays janggi: playing janggi"), "not switched to janggi: {out}");
    assert!(out.contains("network loaded"), "loaded once janggi: {out}");
    assert!(out.contains("plays janggi (its network's game)"), "kept janggi: {out}");
    janggi_bestmove(&out, &[]);

    // A xiangqi config cannot resume a janggi run.
    let r = xqz()
        .args(["train", "--quiet", "--threads", "1", "--resume", "--iterations", "3", "--config"])
        .arg(config("tiny.toml"))
        .arg("--run-dir")
        .arg(&run)
        .output()
        .unwrap();
    assert!(!r.status.success());
    assert!(stderr(&r).contains("janggi"), "{}", stderr(&r));

    // A xiangqi shard among a janggi run's shards is refused by name: as the coming
    // iteration's shard, and in the replay window.
    let xq = temp("xiangqi-shards");
    let s = xqz()
        .args(["selfplay", "--games", "1", "--threads", "1", "--config"])
        .arg(config("tiny.toml"))
        .arg("--out")
        .arg(&xq)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", stderr(&s));
    let resume = || {
        xqz()
            .args(["train", "--quiet", "--threads", "1", "--resume", "--iterations", "1"])
            .arg("--config")
            .arg(config("janggi-tiny.toml"))
            .arg("--run-dir")
            .arg(&run)
            .output()
            .unwrap()
    };
    let foreign = list_shards(&xq).unwrap()[0].clone();
    fs::copy(&foreign, run.join("shards/shard-000003.npz")).unwrap();
    let r = resume();
    assert!(!r.status.success());
    let err = stderr(&r);
    assert!(err.contains("shard-000003.npz") && err.contains("xiangqi samples"), "{err}");
    fs::remove_file(run.join("shards/shard-000003.npz")).unwrap();
    fs::copy(&foreign, run.join("shards/shard-000001.npz")).unwrap();
    let r = resume();
    assert!(!r.status.success());
    let err = stderr(&r);
    assert!(err.contains("shard-000001.npz") && err.contains("xiangqi samples"), "{err}");
    for d in [run, export, xq] {
        let _ = fs::remove_dir_all(d);
    }
}

#[test]
fn the_engine_without_a_network_switches_to_janggi() {
    let out = uci(
        &[],
        "uci\nsetoption name Simulations value 16\nsetoption name UCI_Variant value janggi\n\
         position startpos moves e3e4 e6e5\ngo\nd\nquit\n",
    );
    assert!(out.contains("option name UCI_Variant type combo default xiangqi"), "{out}");
    janggi_bestmove(&out, &["e3e4", "e6e5"]);
    assert!(out.contains("rules site"), "the display shows janggi's rule set: {out}");
}
