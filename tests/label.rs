//! End-to-end tests of `xqz label` through the binary, with Debian's Fairy-Stockfish as the
//! engine (where `XQZ_FAIRY_STOCKFISH` names it; `.ci/run` sets it and
//! `XQZ_REQUIRE_FAIRY_STOCKFISH`, which makes a missing engine a failure instead of a skip), and
//! shell wrappers around it that crash, answer garbage or hang. The positions and their best
//! moves are worked out from the rules by hand.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xiangqi::Move;
use xiangqi_search::shard::{Shard, list_shards, read_shard};

fn xqz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().expect("xqz runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-label-{}-{name}", std::process::id()));
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

/// The Fairy-Stockfish binary that `XQZ_FAIRY_STOCKFISH` names, or `None` (and a line saying
/// why) where it names none; with `XQZ_REQUIRE_FAIRY_STOCKFISH` set, a failure instead.
fn fairy_stockfish() -> Option<String> {
    let required = std::env::var_os("XQZ_REQUIRE_FAIRY_STOCKFISH").is_some_and(|v| v != "0");
    match std::env::var("XQZ_FAIRY_STOCKFISH") {
        Ok(fsf) if Path::new(&fsf).is_file() => Some(fsf),
        other => {
            assert!(
                !required,
                "XQZ_REQUIRE_FAIRY_STOCKFISH is set but XQZ_FAIRY_STOCKFISH ({other:?}) names no \
                 file (/usr/games/fairy-stockfish)"
            );
            eprintln!("XQZ_FAIRY_STOCKFISH names no file: the labelling tests do not run");
            None
        }
    }
}

/// Imports `pgn` (written to `dir/NAME.pgn`) into `dir/NAME`.
fn import(dir: &Path, name: &str, pgn: &str, game: &str) -> PathBuf {
    let file = dir.join(format!("{name}.pgn"));
    fs::write(&file, pgn).unwrap();
    let out = dir.join(name);
    let o =
        xqz(&["import", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--game", game]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success() && stderr.is_empty(), "{stdout}{stderr}");
    out
}

/// Runs `xqz label IN --engine uci:ENGINE --out OUT EXTRA...`.
fn label(input: &Path, engine: &str, out: &Path, extra: &[&str]) -> (String, String, bool) {
    let engine = format!("uci:{engine}");
    let mut args =
        vec!["label", input.to_str().unwrap(), "--engine", &engine, "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = xqz(&args);
    let (stdout, stderr) = text(&o);
    (stdout, stderr, o.status.success())
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

/// The policy's one move of probability 1 at sample `i`, in 0–9 rank coordinates.
fn target(shard: &Shard, i: usize) -> String {
    let s = shard.sample(i);
    assert_eq!(s.probs.iter().sum::<f32>(), 1.0);
    let k = s.probs.iter().position(|&p| p == 1.0).expect("a one-hot policy");
    Move::from_u16(s.moves[k]).unwrap().to_string()
}

/// Three set-up xiangqi positions, one move each:
/// 1. Red to move mates in one: the chariot b7 to b9 checks along rank 9 (c9, d9 empty), the
///    chariot a8 holds rank 8 (d8, e8, f8), d9 is on the b9 chariot's line and on the file of
///    Red's general d0 (flying general), and f9 stays on the b9 chariot's line once e9 is left.
///    (a8-a9 leaves e8 free; b7-e7 leaves f9 free: b7-b9 is the only mate.)
/// 2. Red to move takes a free chariot: e2 to e5 up the open file (e3, e4 empty); nothing
///    of Black's guards e5, and Black's chariot would take Red's otherwise.
/// 3. The same for Black to move: e7 takes e4 down the file (e6, e5 empty).
const XIANGQI: &str = r#"[Event "mate in one"]
[FEN "4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1"]
[Result "1-0"]
1. B7-B9 1-0

[Event "a free chariot for Red"]
[FEN "3k5/9/9/9/4r4/9/9/4R4/9/4K4 w - - 0 1"]
[Result "1-0"]
1. E2-E5 1-0

[Event "a free chariot for Black"]
[FEN "4k4/9/4r4/9/9/4R4/9/9/9/3K5 b - - 0 1"]
[Result "0-1"]
1... E7-E4 0-1
"#;

/// A game from the start position: six plies, six positions.
const OPENING: &str = r#"[Event "opening"]
[Result "1/2-1/2"]
1. H2-E2 H9-G7 2. H0-G2 I9-H9 3. I0-H0 B9-C7 1/2-1/2
"#;

#[test]
fn the_label_of_a_mate_and_a_free_piece_is_the_engine_s_move_and_a_win() {
    let Some(fsf) = fairy_stockfish() else { return };
    let dir = scratch("xiangqi");
    let shards = import(&dir, "games", XIANGQI, "xiangqi");
    let out = dir.join("labelled");
    let (stdout, stderr, ok) = label(&shards, &fsf, &out, &["--nodes", "1000"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("labelled 3 of 3 positions in 1 shard(s)"), "{stdout}");
    assert!(stdout.contains("lost 0; 0 engine restart(s)"), "{stdout}");
    let before = all_samples(&shards);
    let shard = all_samples(&out);
    assert_eq!(shard.len(), 3);
    // Fairy-Stockfish was set to xiangqi and its ranks 1-10 read back: the moves are the
    // mate and the two captures, in this program's 0-9 ranks.
    assert_eq!([target(&shard, 0), target(&shard, 1), target(&shard, 2)], ["b7b9", "e2e5", "e7e4"]);
    // A mate is a certain win; a free chariot far more than the logistic's half.
    assert_eq!(shard.root_value[0], 1.0);
    assert!(shard.root_value[1] > 0.9 && shard.root_value[2] > 0.9, "{:?}", shard.root_value);
    assert!(shard.full_search.iter().all(|&f| f == 1));
    // The game's own targets stay: the result (for the side to move), the ending, the length,
    // the material, the board and the legal moves.
    assert_eq!(shard.result, before.result);
    assert_eq!(shard.result, [1, 1, 1]);
    assert_eq!(shard.ending, before.ending);
    assert_eq!(shard.game_plies, before.game_plies);
    assert_eq!(shard.final_material, before.final_material);
    assert_eq!(shard.boards, before.boards);
    assert_eq!(shard.policy_moves, before.policy_moves);

    // Run again: the shard is there, so nothing is labelled twice; a stale temporary file of a
    // killed write is removed.
    let name = list_shards(&out).unwrap()[0].file_name().unwrap().to_owned();
    let stale = out.join(format!("{}.tmp", name.to_str().unwrap()));
    fs::write(&stale, b"half a shard").unwrap();
    let (stdout, stderr, ok) = label(&shards, &fsf, &out, &["--nodes", "1000"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("labelled 0 of 0 positions in 0 shard(s)"), "{stdout}");
    assert!(stdout.contains("1 shard(s) already labelled"), "{stdout}");
    assert!(!stale.exists());
    // --out may not be the input's folder.
    let (_, stderr, ok) = label(&shards, &fsf, &shards, &[]);
    assert!(!ok && stderr.contains("folder of the input"), "{stderr}");
    let _ = fs::remove_dir_all(&dir);
}

/// Janggi in Fairy-Stockfish's FEN: Cho (upper case, `w`) to move takes Han's free chariot,
/// e2 to e5 up the open file (e3, e4 empty; ranks 0-9 in ICCS); the generals stand on d9 and
/// f0, on no common file.
const JANGGI: &str = r#"[Event "a free chariot for Cho"]
[Variant "janggi"]
[FEN "3k5/9/9/9/4r4/9/9/4R4/9/5K3 w - - 0 1"]
[Result "1-0"]
1. E2-E5 1-0
"#;

#[test]
fn janggi_positions_are_labelled_in_the_janggi_variant() {
    let Some(fsf) = fairy_stockfish() else { return };
    let dir = scratch("janggi");
    let shards = import(&dir, "games", JANGGI, "janggi");
    let out = dir.join("labelled");
    let (stdout, stderr, ok) = label(&shards, &fsf, &out, &["--nodes", "1000", "--game", "janggi"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("labelled 1 of 1 positions"), "{stdout}");
    let shard = all_samples(&out);
    assert_eq!(shard.game, xiangqi_search::GameKind::Janggi);
    assert_eq!(target(&shard, 0), "e2e5");
    assert!(shard.root_value[0] > 0.9, "{:?}", shard.root_value);
    // A janggi shard is not labelled as xiangqi.
    let (_, stderr, ok) = label(&shards, &fsf, &dir.join("x"), &["--game", "xiangqi"]);
    assert!(!ok && stderr.contains("janggi"), "{stderr}");
    let _ = fs::remove_dir_all(&dir);
}

/// An executable shell script `dir/NAME` with `body`.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_string()
}

/// The plies of the samples of `shard`.
fn plies(shard: &Shard) -> Vec<u16> {
    shard.ply.clone()
}

#[test]
fn an_engine_that_crashes_or_answers_garbage_loses_those_positions_only() {
    let Some(fsf) = fairy_stockfish() else { return };
    let dir = scratch("crash");
    let shards = import(&dir, "games", OPENING, "xiangqi");
    // Passes its input on to Fairy-Stockfish, but ends at its third `go`, before passing it on:
    // the engine sees the end of its input and exits without a bestmove. A fresh process
    // labels two positions again, then crashes on the third.
    let crash = script(
        &dir,
        "crash.sh",
        &format!(
            "n=0; while IFS= read -r l; do case \"$l\" in go*) n=$((n+1)); \
             [ $n -ge 3 ] && exit 0;; esac; printf '%s\\n' \"$l\"; done | {fsf}"
        ),
    );
    let out = dir.join("crash");
    let (stdout, stderr, ok) = label(&shards, &crash, &out, &["--nodes", "200"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("labelled 4 of 6 positions"), "{stdout}");
    assert!(stdout.contains("lost 2 (crash 2); 2 engine restart(s)"), "{stdout}");
    // Positions 3 and 6 (plies 2 and 5) are the lost ones, left out.
    assert_eq!(plies(&all_samples(&out)), [0, 1, 3, 4]);
    assert!(stderr.contains("position 2: lost (crash)"), "{stderr}");

    // Rewrites every third bestmove into garbage.
    let garbage = script(
        &dir,
        "garbage.sh",
        &format!(
            "{fsf} | {{ n=0; while IFS= read -r l; do case \"$l\" in bestmove*) n=$((n+1)); \
             [ $((n % 3)) -eq 0 ] && l='bestmove zz99';; esac; printf '%s\\n' \"$l\"; done; }}"
        ),
    );
    let out = dir.join("garbage");
    let (stdout, stderr, ok) = label(&shards, &garbage, &out, &["--nodes", "200"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("lost 2 (illegal move 2); 2 engine restart(s)"), "{stdout}");
    assert_eq!(plies(&all_samples(&out)), [0, 1, 3, 4]);

    // An engine that never gives a move stops the run after ten losses in a row, with an
    // error, and writes no shard.
    let never = script(
        &dir,
        "never.sh",
        &format!(
            "{fsf} | {{ while IFS= read -r l; do case \"$l\" in bestmove*) l='bestmove zz99';; \
             esac; printf '%s\\n' \"$l\"; done; }}"
        ),
    );
    let twelve = format!("{OPENING}\n{OPENING}");
    let shards = import(&dir, "twelve", &twelve, "xiangqi");
    let out = dir.join("never");
    let (stdout, stderr, ok) = label(&shards, &never, &out, &["--nodes", "200"]);
    assert!(!ok, "{stdout}{stderr}");
    assert!(stderr.contains("10 positions in a row"), "{stderr}");
    assert!(list_shards(&out).unwrap().is_empty());
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_hanging_engine_times_out_and_is_restarted() {
    let Some(fsf) = fairy_stockfish() else { return };
    let dir = scratch("hang");
    let shards = import(&dir, "games", OPENING, "xiangqi");
    // Swallows every second `go`: the engine never hears it and never answers. A fresh
    // process answers one, then hangs on the next.
    let hang = script(
        &dir,
        "hang.sh",
        &format!(
            "n=0; while IFS= read -r l; do case \"$l\" in go*) n=$((n+1)); \
             [ $n -eq 2 ] && continue;; esac; printf '%s\\n' \"$l\"; done | {fsf}"
        ),
    );
    let out = dir.join("hang");
    let started = std::time::Instant::now();
    let (stdout, stderr, ok) =
        label(&shards, &hang, &out, &["--nodes", "200", "--timeout", "1500"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("labelled 3 of 6 positions"), "{stdout}");
    assert!(stdout.contains("lost 3 (timeout 3); 3 engine restart(s)"), "{stdout}");
    assert_eq!(plies(&all_samples(&out)), [0, 2, 4]);
    // Three waits of 1.5 s, not the default of ten seconds each.
    assert!(started.elapsed().as_secs_f64() >= 4.5);
    assert!(started.elapsed().as_secs_f64() < 25.0, "{:?}", started.elapsed());
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn several_engines_label_every_position() {
    let Some(fsf) = fairy_stockfish() else { return };
    let dir = scratch("threads");
    let twelve = format!("{OPENING}\n{OPENING}");
    let shards = import(&dir, "games", &twelve, "xiangqi");
    let out = dir.join("labelled");
    let (stdout, stderr, ok) = label(&shards, &fsf, &out, &["--nodes", "500", "--threads", "3"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("labelled 12 of 12 positions"), "{stdout}");
    let shard = all_samples(&out);
    // Each sample keeps its own position: the labelled shard is in the input's order.
    assert_eq!(shard.boards, all_samples(&shards).boards);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_shard_is_named_and_the_others_are_labelled() {
    let Some(fsf) = fairy_stockfish() else { return };
    let dir = scratch("bad");
    let shards = import(&dir, "games", OPENING, "xiangqi");
    let good = list_shards(&shards).unwrap();
    assert_eq!(good.len(), 1);
    // One that sorts first (not a zip at all) and one that sorts last (the good one cut short).
    fs::write(shards.join("a-garbage.npz"), b"not a shard").unwrap();
    let bytes = fs::read(&good[0]).unwrap();
    fs::write(shards.join("z-truncated.npz"), &bytes[..bytes.len() / 2]).unwrap();
    // And a janggi shard, the first readable one in name order.
    let janggi = import(&dir, "janggi", JANGGI, "janggi");
    fs::copy(&list_shards(&janggi).unwrap()[0], shards.join("b-janggi.npz")).unwrap();
    let out = dir.join("labelled");
    let (stdout, stderr, ok) = label(&shards, &fsf, &out, &["--nodes", "200", "--game", "xiangqi"]);
    assert!(!ok, "a short output must fail: {stdout}{stderr}");
    assert!(stdout.contains("labelled 6 of 6 positions in 1 shard(s)"), "{stdout}");
    assert!(stdout.contains("3 shard(s) skipped"), "{stdout}");
    for bad in ["a-garbage.npz", "z-truncated.npz"] {
        assert!(stderr.contains(&format!("{bad}: skipped: cannot read it")), "{stderr}");
        assert!(stderr.matches(bad).count() >= 2, "named when skipped and at the end: {stderr}");
    }
    assert!(stderr.contains("b-janggi.npz: skipped") && stderr.contains("janggi"), "{stderr}");
    assert!(stderr.contains("3 shard(s) could not be labelled"), "{stderr}");
    let written = list_shards(&out).unwrap();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0].file_name(), good[0].file_name());
    assert_eq!(read_shard(&written[0]).unwrap().len(), 6);
    let _ = fs::remove_dir_all(&dir);
}
