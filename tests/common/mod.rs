//! Helpers shared by the end-to-end tests of the binary (each test file includes this module).

// Not every test file uses every helper.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's `configs/` file `name`.
pub fn config(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs").join(name)
}

/// Trains one iteration of `config` into the run directory `run` (which the caller chose and
/// emptied) and returns it: a small net for the engine tests.
///
/// # Panics
/// If `xqz train` fails (its standard error is shown).
pub fn train_one_iteration(config: &Path, run: &Path) -> PathBuf {
    let o = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["train", "--iterations", "1", "--quiet", "--config"])
        .arg(config)
        .arg("--run-dir")
        .arg(run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    run.to_path_buf()
}

/// The Fairy-Stockfish binary that `XQZ_FAIRY_STOCKFISH` names, or `None` (and a line saying
/// why) where it names none. With `XQZ_REQUIRE_FAIRY_STOCKFISH=1` (`.ci/run` sets it when the
/// install succeeded) a missing or unset engine is a failure instead of a skip.
pub fn fairy_stockfish() -> Option<String> {
    let required = std::env::var_os("XQZ_REQUIRE_FAIRY_STOCKFISH").is_some_and(|v| v != "0");
    match std::env::var("XQZ_FAIRY_STOCKFISH") {
        Ok(fsf) if std::path::Path::new(&fsf).is_file() => Some(fsf),
        Ok(fsf) => {
            assert!(
                !required,
                "XQZ_REQUIRE_FAIRY_STOCKFISH is set but XQZ_FAIRY_STOCKFISH={fsf} is no file"
            );
            eprintln!(
                "XQZ_FAIRY_STOCKFISH={fsf} is no file: the Fairy-Stockfish match is not played"
            );
            None
        }
        Err(_) => {
            assert!(
                !required,
                "XQZ_REQUIRE_FAIRY_STOCKFISH is set but XQZ_FAIRY_STOCKFISH is not: name the binary (/usr/games/fairy-stockfish)"
            );
            eprintln!("XQZ_FAIRY_STOCKFISH is not set: the Fairy-Stockfish match is not played");
            None
        }
    }
}

/// The CPU's flags, by Linux's `/proc/cpuinfo` (none elsewhere).
fn cpu_flags() -> Vec<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Whether the CPU reports Intel's AMX with bfloat16 (and AVX-512's bfloat16 conversions), by
/// Linux's `/proc/cpuinfo` (false elsewhere): an independent reading of what bfloat16 training
/// (`training.precision = "bf16"`) needs.
pub fn cpu_has_amx() -> bool {
    let flags = cpu_flags();
    ["amx_tile", "amx_bf16", "avx512_bf16"].iter().all(|f| flags.iter().any(|g| g == f))
}

/// Whether the CPU reports what bfloat16 inference (`--precision bf16`, `loop.precision =
/// "bf16"`) needs: AMX, or AVX-512 with its bfloat16 dot products (foundation, byte and word,
/// vector length, BF16), by Linux's `/proc/cpuinfo` (false elsewhere).
pub fn cpu_runs_bf16_inference() -> bool {
    let flags = cpu_flags();
    let dot = ["avx512f", "avx512bw", "avx512vl", "avx512_bf16"];
    cpu_has_amx() || dot.iter().all(|f| flags.iter().any(|g| g == f))
}
