//! End-to-end test of `xqz selfplay`: shards and PGN in the output directory, config errors.

mod common;

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

use xiangqi::RuleSet;
use xiangqi_search::{list_shards, parse_pgn_moves, read_shard};

fn xqz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().expect("xqz runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-cli-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn tiny() -> String {
    format!(
        "{}/configs/tiny.toml",
        env!("CARGO_MANIFEST_DIR").trim_end_matches("/crates/xiangqi-cli")
    )
}

#[test]
fn selfplay_writes_shards_and_pgn() {
    let out = scratch("out");
    let o = xqz(&[
        "selfplay",
        "--config",
        &tiny(),
        "--games",
        "3",
        "--out",
        out.to_str().unwrap(),
        "--threads",
        "2",
        "--seed",
        "5",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("3 games"), "{stderr}");
    let shards = list_shards(&out).unwrap();
    assert_eq!(shards.len(), 1, "3 games fit one shard of 32");
    let shard = read_shard(&shards[0]).unwrap();
    let mut ids = shard.game_id.clone();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids, vec![0, 1, 2]);
    let pgn = fs::read_to_string(out.join("games.pgn")).unwrap();
    let games: Vec<String> = pgn.split("[Game ").skip(1).map(|g| format!("[Game {g}")).collect();
    assert_eq!(games.len(), 3);
    for g in &games {
        let (_, moves) = parse_pgn_moves::<xiangqi::Game>(g, RuleSet::Asian).unwrap();
        assert!(!moves.is_empty());
    }
    // A second run numbers its shards after the first.
    let o = xqz(&["selfplay", "--config", &tiny(), "--games", "1", "--out", out.to_str().unwrap()]);
    assert!(o.status.success());
    let names: Vec<String> = list_shards(&out)
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["shard-000000.npz", "shard-000001.npz"]);
    fs::remove_dir_all(&out).unwrap();
}

/// Without `--config` the games are played with the built-in `configs/cpu.toml`, as `xqz train`
/// runs (its samples within that config's length cap of 200 plies).
#[test]
fn selfplay_without_a_config_plays_the_built_in_one() {
    let out = scratch("builtin");
    let dir = out.to_str().unwrap();
    let o = xqz(&["selfplay", "--games", "1", "--out", dir, "--threads", "1", "--seed", "3"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // It says which config and evaluator play.
    assert!(
        stderr.contains("1 game of xiangqi with the search of built-in configs/cpu.toml, uniform"),
        "{stderr}"
    );
    let shards = list_shards(&out).unwrap();
    assert_eq!(shards.len(), 1, "{stderr}");
    let shard = read_shard(&shards[0]).unwrap();
    assert!(!shard.game_id.is_empty() && shard.game_id.iter().all(|&g| g == 0));
    assert!(shard.ply.iter().all(|&p| p < 200), "within the built-in length cap");
    // Still refused: no output directory.
    let o = xqz(&["selfplay", "--games", "1"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--out"));
    fs::remove_dir_all(&out).unwrap();
}

/// With `--net` the first line names the network and the arithmetic it computes in: `f32` by
/// default, `bf16` under `--precision bf16` where the CPU has AMX or AVX-512 BF16 (by Linux's
/// /proc/cpuinfo; the tiny net's plain tower can use it), else `f32` with a warning.
#[test]
fn selfplay_names_the_network_and_its_precision() {
    let dir = scratch("precision");
    let run = common::train_one_iteration(&common::config("tiny.toml"), &dir.join("run"));
    let bf16 = common::cpu_runs_bf16_inference();
    for (k, (precision, want)) in
        [("f32", "f32"), ("bf16", if bf16 { "bf16" } else { "f32" })].into_iter().enumerate()
    {
        let out = dir.join(format!("out-{k}"));
        let o = xqz(&[
            "selfplay",
            "--config",
            &tiny(),
            "--games",
            "1",
            "--out",
            out.to_str().unwrap(),
            "--net",
            run.to_str().unwrap(),
            "--precision",
            precision,
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{stderr}");
        let line = format!("the network {} in {want}\n", run.display());
        assert!(stderr.contains(&line), "--precision {precision}: {stderr}");
        assert_eq!(stderr.contains("is not available"), precision == "bf16" && !bf16, "{stderr}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn selfplay_config_errors_name_file_and_key() {
    let dir = scratch("cfg");
    fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("bad.toml");
    fs::write(&cfg, "[search]\nc_pcut = 1.0\n").unwrap();
    let o = xqz(&[
        "selfplay",
        "--config",
        cfg.to_str().unwrap(),
        "--games",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr.contains("bad.toml") && stderr.contains("c_pcut"), "{stderr}");
    fs::write(&cfg, "[selfplay]\nmax_batch = 0\n").unwrap();
    let o = xqz(&[
        "selfplay",
        "--config",
        cfg.to_str().unwrap(),
        "--games",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("bad.toml") && stderr.contains("selfplay.max_batch"), "{stderr}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn zero_games_is_refused_and_writes_nothing() {
    let out = scratch("zero");
    let o = xqz(&["selfplay", "--config", &tiny(), "--games", "0", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--games 0"));
    assert!(!out.exists(), "an output directory was made");
}

/// A worker (`--store`) plays in its run's `loop.precision`: `--precision` beside `--store` is
/// refused, not silently ignored.
#[test]
fn precision_beside_store_is_refused() {
    let dir = scratch("precision-store");
    let store = dir.join("store");
    let o = xqz(&["selfplay", "--store", store.to_str().unwrap(), "--precision", "bf16"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--precision") && err.contains("--store"), "{err}");
    assert!(!store.exists(), "nothing was created");
    let _ = fs::remove_dir_all(&dir);
}
