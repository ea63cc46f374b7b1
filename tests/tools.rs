//! The Python tool beside the binary: `tools/check_export.py` runs an export with numpy alone.
//! It needs a Python with numpy and safetensors (`XQZ_PYTHON`, default `python3`); without
//! them the test skips, unless `XQZ_REQUIRE_PYTHON` is set.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xiangqi::janggi;

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The Python to run the tool with, or `None` (the test skips) when it lacks numpy or
/// safetensors and `XQZ_REQUIRE_PYTHON` is unset.
fn python() -> Option<String> {
    let python = std::env::var("XQZ_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = Command::new(&python)
        .args(["-c", "import numpy, safetensors"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    assert!(
        std::env::var_os("XQZ_REQUIRE_PYTHON").is_none(),
        "XQZ_REQUIRE_PYTHON is set but {python} cannot import numpy and safetensors"
    );
    eprintln!("skipped: {python} cannot import numpy and safetensors (set XQZ_PYTHON)");
    None
}

/// Trains one iteration of `config` into `dir` and exports its net to `dir/export`.
fn export(config: &str, dir: &Path) -> PathBuf {
    let _ = fs::remove_dir_all(dir);
    let o = xqz()
        .args(["train", "--iterations", "1", "--quiet", "--config"])
        .arg(repo().join("configs").join(config))
        .arg("--run-dir")
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = dir.join("export");
    let o = xqz().arg("export").arg("--checkpoint").arg(dir).arg("--out").arg(&out).output();
    let o = o.unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    out
}

fn check_export(python: &str, export: &Path) -> Output {
    Command::new(python).arg(repo().join("tools/check_export.py")).arg(export).output().unwrap()
}

/// The test vector's legal moves, as policy indices, and its policy logits.
fn test_vector(export: &Path) -> (Vec<usize>, Vec<f64>, Vec<String>) {
    let desc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(export.join("model.json")).unwrap()).unwrap();
    let tv = &desc["test_vector"];
    let legal = tv["legal_moves"].as_array().expect("legal_moves");
    let legal = legal.iter().map(|i| i.as_u64().unwrap() as usize).collect();
    let logits = tv["policy_logits"].as_array().unwrap();
    let logits = logits.iter().map(|v| v.as_f64().unwrap()).collect();
    let moves = desc["policy"]["moves"].as_array().unwrap();
    let moves = moves.iter().map(|m| m.as_str().unwrap().to_string()).collect();
    (legal, logits, moves)
}

/// The move after "top legal move " in the tool's line.
fn top_move(out: &str) -> String {
    let at = out.find("top legal move ").unwrap_or_else(|| panic!("no top legal move: {out}"));
    out[at + "top legal move ".len()..].split_whitespace().next().unwrap().to_string()
}

/// `check_export.py` masks the illegal moves as `model.json` says and names the start
/// position's top legal move, the one of highest logit among the test vector's legal moves,
/// for both games; the test vector lists exactly the start position's legal moves.
#[test]
fn check_export_names_the_top_legal_move_of_both_games() {
    let Some(python) = python() else { return };
    let base = std::env::temp_dir().join(format!("xqz-tools-{}", std::process::id()));
    for (config, game) in [("tiny.toml", "xiangqi"), ("janggi-tiny.toml", "janggi")] {
        let export = export(config, &base.join(game));
        let (legal, logits, moves) = test_vector(&export);
        // The start position's legal moves by the rules crate, as the export's move names
        // (Red/Cho to move: the names need no flip; janggi's pass is named `pass`).
        let mut expected: Vec<String> = if game == "xiangqi" {
            let pos = xiangqi::Position::start();
            pos.legal_moves().iter().map(|m| m.to_string()).collect()
        } else {
            let pos = janggi::Position::start(janggi::Rules::Site);
            let pass = pos.pass();
            let legal = pos.legal_moves();
            legal
                .iter()
                .map(|&m| if m == pass { "pass".to_string() } else { m.to_string() })
                .collect()
        };
        expected.sort();
        let mut named: Vec<String> = legal.iter().map(|&i| moves[i].clone()).collect();
        named.sort();
        assert_eq!(named, expected, "{game}: the test vector's legal moves");
        let best = legal.iter().copied().max_by(|&a, &b| logits[a].total_cmp(&logits[b])).unwrap();

        let o = check_export(&python, &export);
        let out = text(&o.stdout);
        assert!(o.status.success(), "{game}: {out}{}", text(&o.stderr));
        let top = top_move(&out);
        assert_eq!(top, moves[best], "{game}: {out}");
        assert!(expected.contains(&top), "{game}: {top} is legal");
        assert!(out.contains(&format!("of {} legal moves", expected.len())), "{game}: {out}");
    }
    let _ = fs::remove_dir_all(&base);
}
