//! End-to-end tests of `xqz import` through the binary: hand-made PGN (UTF-8 and GBK, several
//! notations, a bad game among good ones), a hand-made XQF file, janggi PGN, and a round trip
//! of `xqz arena --pgn` output. Expected moves are worked out from the rules by hand.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xiangqi::{Move, OutcomeReason, RuleSet};
use xiangqi_search::parse_pgn_moves;
use xiangqi_search::shard::{Shard, UNKNOWN_ENDING, list_shards, read_shard};

fn xqz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().expect("xqz runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-import-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every shard of `dir`, appended in name order.
fn all_samples(dir: &Path) -> Shard {
    let mut paths = list_shards(dir).unwrap().into_iter();
    let mut shard = read_shard(&paths.next().expect("a shard")).unwrap();
    for p in paths {
        shard.append(&read_shard(&p).unwrap()).unwrap();
    }
    shard
}

/// The move played at sample `i` (the policy's one entry of probability 1).
fn played(shard: &Shard, i: usize) -> String {
    let s = shard.sample(i);
    let k = s.probs.iter().position(|&p| p == 1.0).expect("a one-hot policy");
    assert_eq!(s.probs.iter().sum::<f32>(), 1.0);
    Move::from_u16(s.moves[k]).unwrap().to_string()
}

fn import(files: &[&Path], out: &Path, extra: &[&str]) -> (String, String, bool) {
    let mut args = vec!["import".to_string()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    args.extend(["--out".to_string(), out.to_str().unwrap().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = xqz(&args);
    let (stdout, stderr) = text(&o);
    (stdout, stderr, o.status.success())
}

const HAND_MADE: &str = r#"[Game "Chinese Chess"]
[Event "one: WXF"]
[Result "1-0"]
[Format "WXF"]

1. C2.5 H8+7 2. H2+3 R9.8 1-0

[Event "two: an illegal move"]
[Result "0-1"]
1. H2-E2 H9-G7 2. E2-E9 G7-E8 0-1

[Event "three: Chinese, a comment and a variation"]
[Result "1/2-1/2"]
[Format "Chinese"]
1. 炮二平五 马８进７ {a comment} 2. 马二进三 (2. 兵七进一 卒７进１) 车９平８ 1/2-1/2

[Event "four: a set-up mate in one"]
[FEN "3k5/7R1/9/9/9/9/9/9/9/4K3R w - - 0 1"]
[Result "1-0"]
1. I0-I9 1-0
"#;

#[test]
fn hand_made_pgn_imports_and_the_bad_game_is_named_and_skipped() {
    let dir = scratch("hand");
    let pgn = dir.join("games.pgn");
    fs::write(&pgn, HAND_MADE).unwrap();
    let out = dir.join("shards");
    let (stdout, stderr, ok) = import(&[&pgn], &out, &["--games-per-shard", "2"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("imported 3 of 4 games (9 positions) into 2 shard(s)"), "{stdout}");
    assert!(stdout.contains("skipped 1 (illegal move 1)"), "{stdout}");
    // Game 2's third ply, E2-E9 (move 2), would take the general's point through pieces.
    assert!(stderr.contains("games.pgn: game 2: skipped: move 2 (ply 3) 'E2-E9'"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    let shard = all_samples(&out);
    assert_eq!(shard.len(), 9);
    // C2.5 is the cannon h2 to e2, H8+7 Black's horse h9 to g7, H2+3 Red's horse h0 to g2,
    // R9.8 Black's chariot i9 to h9; the Chinese game is the same line.
    let moves: Vec<String> = (0..9).map(|i| played(&shard, i)).collect();
    assert_eq!(moves, ["h2e2", "h9g7", "h0g2", "i9h9", "h2e2", "h9g7", "h0g2", "i9h9", "i0i9"]);
    // Results for the side to move: game one Red won, game three a draw, game four Red won.
    assert_eq!(shard.result, [1, -1, 1, -1, 0, 0, 0, 0, 1]);
    assert_eq!(shard.game_plies, [4, 4, 4, 4, 4, 4, 4, 4, 1]);
    assert_eq!(shard.ply, [0, 1, 2, 3, 0, 1, 2, 3, 0]);
    // The mate is the rules' verdict; the others' endings are not known.
    assert_eq!(&shard.ending[..8], [UNKNOWN_ENDING; 8]);
    assert_eq!(shard.ending[8], OutcomeReason::Checkmate.index() as u8);
    // Two chariots (18 half-pawns each) against a bare general, for Red to move.
    assert_eq!(shard.final_material[8], 36);
    // The start position's 44 legal moves are the policy's support.
    assert_eq!(shard.sample(0).moves.len(), 44);
    assert!(shard.full_search.iter().all(|&f| f == 1));

    // A second import into the same directory adds shards after the first ones.
    let (stdout, _, ok) = import(&[&pgn], &out, &[]);
    assert!(ok && stdout.contains("into 1 shard(s)"), "{stdout}");
    assert_eq!(list_shards(&out).unwrap().len(), 3);
    assert!(out.join("shard-000002.npz").is_file());
}

#[test]
fn gbk_pgn_and_a_plain_xqf_file() {
    let dir = scratch("gbk");
    // "1. 炮二平五 马８进７ 2. 马二进三 车９平８" in GBK (GB2312 code points of each character).
    let mut gbk = b"[Game \"Chinese Chess\"]\n[Result \"0-1\"]\n".to_vec();
    gbk.extend_from_slice(
        b"1. \xc5\xda\xb6\xfe\xc6\xbd\xce\xe5 \xc2\xed\xa3\xb8\xbd\xf8\xa3\xb7 2. \
          \xc2\xed\xb6\xfe\xbd\xf8\xc8\xfd \xb3\xb5\xa3\xb9\xc6\xbd\xa3\xb8 0-1\n",
    );
    let pgn = dir.join("gbk.pgn");
    fs::write(&pgn, &gbk).unwrap();

    // XQF version 10 (plain): the standard start, h2e2 then h9g7, Red won (result byte 1).
    let mut xqf = vec![0u8; 1024];
    xqf[..3].copy_from_slice(b"XQ\x0a");
    // Pieces as 10·file + rank: Red's back rank a0..i0, cannons b2 h2, soldiers a3 c3 e3 g3
    // i3, then Black's on ranks 9, 7 and 6.
    for (side, (back, cannon, soldier)) in [(0u8, 2u8, 3u8), (9, 7, 6)].into_iter().enumerate() {
        let base = 0x10 + side * 16;
        for x in 0..9u8 {
            xqf[base + usize::from(x)] = x * 10 + back;
        }
        xqf[base + 9] = 10 + cannon;
        xqf[base + 10] = 70 + cannon;
        for (k, x) in [0u8, 2, 4, 6, 8].into_iter().enumerate() {
            xqf[base + 11 + k] = x * 10 + soldier;
        }
    }
    xqf[0x33] = 1;
    // Records: origin + 0x18, target + 0x20, flags (0xF0: a move follows), reserved, then a
    // 32-bit comment length. The root record, h2e2 (72 → 42), h9g7 (79 → 67).
    for (from, to, flags) in [(0u8, 0u8, 0xF0u8), (72, 42, 0xF0), (79, 67, 0)] {
        xqf.extend_from_slice(&[from + 0x18, to + 0x20, flags, 0, 0, 0, 0, 0]);
    }
    let xqf_path = dir.join("game.xqf");
    fs::write(&xqf_path, &xqf).unwrap();
    // A damaged copy is reported and skipped, the rest imported.
    let damaged = dir.join("damaged.xqf");
    fs::write(&damaged, &xqf[..1030]).unwrap();

    let out = dir.join("shards");
    let (stdout, stderr, ok) = import(&[&pgn, &xqf_path, &damaged], &out, &[]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("imported 2 of 2 games (6 positions)"), "{stdout}");
    assert!(stdout.contains("1 unreadable file"), "{stdout}");
    assert!(stderr.contains("damaged.xqf: skipped: truncated"), "{stderr}");
    let shard = all_samples(&out);
    let moves: Vec<String> = (0..6).map(|i| played(&shard, i)).collect();
    assert_eq!(moves, ["h2e2", "h9g7", "h0g2", "i9h9", "h2e2", "h9g7"]);
    assert_eq!(shard.result, [-1, 1, -1, 1, 1, -1]);
}

#[test]
fn janggi_pgn_imports_as_janggi_only() {
    let dir = scratch("janggi");
    // Fairy-Stockfish's coordinates (ranks 1-10): Cho's horse h1 to g3, Han's soldier a7 to
    // b7, Cho passes (the general's point twice), Han's horse b10 to c8; then the same line as
    // pychess-variants' SAN writes it.
    let pgn = dir.join("janggi.pgn");
    fs::write(
        &pgn,
        "[Game \"Janggi\"]\n[Variant \"janggi\"]\n[Result \"0-1\"]\n\n1. h1g3 a7b7 2. e2e2 b10c8 0-1\n\n\
         [Variant \"janggi\"]\n[Result \"1-0\"]\n1. Ng3 ab7 2. @@@@ Nc8 1-0\n",
    )
    .unwrap();
    let out = dir.join("shards");
    let (stdout, stderr, ok) = import(&[&pgn], &out, &["--game", "janggi"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("imported 2 of 2 games (8 positions)"), "{stdout}");
    let shard = all_samples(&out);
    assert_eq!(shard.game, xiangqi_search::GameKind::Janggi);
    let moves: Vec<String> = (0..8).map(|i| played(&shard, i)).collect();
    assert_eq!(moves, ["h0g2", "a6b6", "e1e1", "b9c7", "h0g2", "a6b6", "e1e1", "b9c7"]);

    // As xiangqi, both are another game's records.
    let (stdout, stderr, ok) = import(&[&pgn], &dir.join("x"), &[]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("imported 0 of 2 games") && stdout.contains("another game 2"),
        "{stdout}"
    );
}

#[test]
fn arena_pgn_round_trips_and_bad_arguments_are_refused() {
    let dir = scratch("arena");
    let pgn = dir.join("arena.pgn");
    let o = xqz(&[
        "arena",
        "--a",
        "greedy",
        "--b",
        "random",
        "--games",
        "6",
        "--seed",
        "5",
        "--pgn",
        pgn.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let written = fs::read_to_string(&pgn).unwrap();
    let mut expected = Vec::new();
    for g in written.split("[Game ").filter(|g| !g.trim().is_empty()) {
        let (_, moves) =
            parse_pgn_moves::<xiangqi::Game>(&format!("[Game {g}"), RuleSet::Asian).unwrap();
        expected.extend(moves.iter().map(Move::to_string));
    }
    let out = dir.join("shards");
    let (stdout, stderr, ok) = import(&[&pgn], &out, &[]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains(&format!("imported 6 of 6 games ({} positions)", expected.len())));
    let shard = all_samples(&out);
    let moves: Vec<String> = (0..shard.len()).map(|i| played(&shard, i)).collect();
    assert_eq!(moves, expected);

    let (_, stderr, ok) = import(&[&dir.join("missing.pgn")], &out, &[]);
    assert!(!ok && stderr.contains("missing.pgn is not a file"), "{stderr}");
    let (_, stderr, ok) = import(&[&pgn], &out, &["--rules", "site"]);
    assert!(!ok && stderr.contains("--rules"), "{stderr}");
}

#[test]
fn a_collection_pretrains_a_run_that_then_plays_and_the_export_says_so() {
    let dir = scratch("pretrain");
    let pgn = dir.join("games.pgn");
    fs::write(&pgn, HAND_MADE).unwrap();
    let shards = dir.join("shards");
    let (_, stderr, ok) = import(&[&pgn], &shards, &[]);
    assert!(ok, "{stderr}");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/tiny.toml");
    let run = dir.join("run");
    let o = xqz(&[
        "train",
        "--config",
        config,
        "--run-dir",
        run.to_str().unwrap(),
        "--pretrain",
        shards.to_str().unwrap(),
        "--pretrain-steps",
        "6",
        "--iterations",
        "1",
        "--quiet",
    ]);
    let (_, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    // The nine positions of the three imported games.
    let line = format!("pretraining on {}: 1 shard, 3 games, 9 samples; 6 steps", shards.display());
    assert!(stderr.contains(&line), "{stderr}");
    assert!(stderr.contains("pretrained: step 6 of 6 (6 this session"), "{stderr}");
    assert!(stderr.contains("iteration 1"), "{stderr}");
    let ckpt = run.join("checkpoints/ckpt-000001/manifest.toml");
    let manifest = fs::read_to_string(&ckpt).unwrap();
    assert!(
        manifest.contains("[pretrained]") && manifest.contains("planned_steps = 6"),
        "{manifest}"
    );
    let resolved = fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(resolved.contains("pretrain_steps = 6"), "{resolved}");

    // The export keeps the record.
    let export = dir.join("export");
    let o =
        xqz(&["export", "--checkpoint", run.to_str().unwrap(), "--out", export.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    let manifest = fs::read_to_string(export.join("manifest.toml")).unwrap();
    assert!(manifest.contains("[pretrained]") && manifest.contains("games = 3"), "{manifest}");

    // Shards that are not there stop a new run before it makes its directory.
    let missing = dir.join("no-such-shards");
    let fresh = dir.join("fresh");
    let o = xqz(&[
        "train",
        "--config",
        config,
        "--run-dir",
        fresh.to_str().unwrap(),
        "--pretrain",
        missing.to_str().unwrap(),
    ]);
    let (_, stderr) = text(&o);
    assert!(!o.status.success() && stderr.contains("no such directory or file"), "{stderr}");
    assert!(!fresh.exists());
}
