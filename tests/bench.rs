//! End-to-end tests of `xqz bench`: both inference paths measured on the CPU, and `--export`
//! writing the measured net only where an export may go.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml")
}

fn bench(export: &Path) -> std::process::Output {
    xqz()
        .args(["bench", "--device", "cpu", "--seconds", "0.05", "--config"])
        .arg(tiny())
        .arg("--export")
        .arg(export)
        .output()
        .unwrap()
}

#[test]
fn bench_measures_both_paths_and_exports_only_where_an_export_may_go() {
    let dir = std::env::temp_dir().join(format!("xqz-bench-test-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();

    let export = dir.join("export");
    let out = bench(&export);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for batch in [64, 256, 1024] {
        for line in
            [format!("inference  batch {batch:>5}:"), format!("inference (burn) {batch:>5}:")]
        {
            assert!(stdout.contains(&line), "no '{line}' in:\n{stdout}");
        }
    }
    // The kernels' lines give the rate with the legal moves' logits only; burn's line does not.
    for line in stdout.lines().filter(|l| l.starts_with("inference")) {
        let legal = line.contains(" positions/s (legal moves: ") && line.ends_with(')');
        assert_eq!(legal, !line.starts_with("inference (burn)"), "{line}");
    }
    assert!(stdout.contains("training   batch"), "{stdout}");
    // The bfloat16 inference lines where the CPU has AMX or AVX-512 BF16, the bfloat16 training
    // line where it has AMX (by Linux's /proc/cpuinfo), and only there.
    let bf16 = common::cpu_runs_bf16_inference();
    assert_eq!(stdout.contains("inference (bf16)    64:"), bf16, "{stdout}");
    assert_eq!(stdout.contains("training  (bf16)"), common::cpu_has_amx(), "{stdout}");
    assert!(!stdout.contains("not measured"), "{stdout}");
    for file in ["manifest.toml", "model.bpk", "model.safetensors", "model.json"] {
        assert!(export.join(file).is_file(), "the export has no {file}");
    }
    // An earlier export may be replaced.
    assert!(bench(&export).status.success());

    // Inside an export (or a checkpoint), which a later export or pruning would delete: refused.
    let inside = export.join("inside");
    let out = bench(&inside);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is inside the checkpoint or export"), "{stderr}");
    assert!(!inside.exists());

    // A directory holding something else: refused, and left as it was.
    let other = dir.join("other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("notes.txt"), "mine").unwrap();
    let out = bench(&other);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::read_to_string(other.join("notes.txt")).unwrap(), "mine");
    assert_eq!(fs::read_dir(&other).unwrap().count(), 1);

    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn bench_without_a_config_measures_the_built_in_main_job_net_from_any_directory() {
    // No `configs/` below the working directory: the default must not be a relative path.
    let cwd = std::env::temp_dir().join(format!("xqz-bench-cwd-{}", std::process::id()));
    let _ = fs::remove_dir_all(&cwd);
    fs::create_dir_all(&cwd).unwrap();
    let out = xqz()
        .current_dir(&cwd)
        .args(["bench", "--device", "cpu", "--seconds", "0.05"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // configs/cpu.toml's net, named as the config it came from.
    let first = stdout.lines().next().unwrap_or_default();
    assert_eq!(
        first, "network: 2 blocks x 24 filters for xiangqi (built-in configs/cpu.toml), device cpu",
        "{stdout}"
    );
    assert!(stdout.contains("training   batch   256:"), "{stdout}");
    assert_eq!(fs::read_dir(&cwd).unwrap().count(), 0, "bench wrote into the working directory");
    let _ = fs::remove_dir_all(&cwd);
}

#[test]
fn bench_measures_the_batches_asked_for_and_refuses_an_empty_one() {
    let out = xqz()
        .args(["bench", "--device", "cpu", "--seconds", "0.05", "--batches", "8,116", "--config"])
        .arg(tiny())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for batch in [8, 116] {
        assert!(stdout.contains(&format!("inference  batch {batch:>5}:")), "{stdout}");
    }
    assert!(!stdout.contains("batch    64:"), "a batch not asked for:\n{stdout}");
    // A negative size is refused by the option's own check, not as an unknown argument.
    for bad in ["0", "8,x", "70000", "-1", "64,-8"] {
        let out = xqz()
            .args(["bench", "--device", "cpu", "--seconds", "0.05", "--batches", bad])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--batches {bad}: {stderr}");
        assert!(
            stderr.contains("invalid value") && stderr.contains("--batches"),
            "{bad}: {stderr}"
        );
    }
}
