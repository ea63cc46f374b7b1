//! Helpers shared by the end-to-end tests of the binary (each test file includes this module).

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
