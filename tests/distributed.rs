//! Distributed self-play through the real binary: `xqz train --store` and several
//! `xqz selfplay --store` workers meeting in a store, on a directory (always) and on a real S3
//! server (a Ceph RADOS Gateway on loopback, when `XQZ_S3_BUCKET` and the `AWS_*` variables
//! name one; `.ci/run` starts it and sets `XQZ_REQUIRE_S3`, which makes its absence a failure).
//!
//! What is checked, counting games in and out:
//! * every game the trainer trained on came from a worker's shard that the trainer's
//!   checkpoint records as consumed, and each such game was trained on exactly once (across a
//!   trainer killed with `kill -9` and resumed);
//! * workers switch to newer nets (their shards carry several generations);
//! * a worker killed with `kill -9` (at random moments, uploads included) leaves no partial
//!   shard: every shard in the store reads whole;
//! * the workers' seeds differ (no two workers play the same game);
//! * a trainer behind its workers reads one shard of each worker in turn (not the lowest
//!   worker id's alone), and says so in its log and in `metrics.csv`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use xiangqi_search::{Shard, read_shard, read_shard_from};
use xiangqi_store::Store;

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-dist-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// A small config: `configs/tiny.toml` with iterations of 8 games, workers' shards of 4 games,
/// fast polling, the store's shards kept (to count them), no arena.
fn config(dir: &Path) -> PathBuf {
    let tiny =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml"))
            .unwrap();
    let text = tiny
        .replace("games_per_shard = 32", "games_per_shard = 4")
        .replace("games_per_iteration = 4", "games_per_iteration = 8")
        .replace("arena_every = 2", "arena_every = 0")
        .replace(
            "max_steps = 600 ",
            "store_poll_seconds = 0.2\nstore_keep_shards = true\nmax_steps = 0 ",
        );
    assert!(text.contains("store_poll_seconds"), "configs/tiny.toml changed: adapt this test");
    fs::create_dir_all(dir).unwrap();
    let path = dir.join("dist.toml");
    fs::write(&path, text).unwrap();
    path
}

fn worker(store: &str, log: &Path) -> Child {
    xqz()
        .args(["selfplay", "--threads", "1", "--store", store])
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).unwrap())
        .spawn()
        .expect("xqz runs")
}

fn trainer(config: &Path, run: &Path, store: &str, iterations: u64, resume: bool) -> Child {
    let mut cmd = xqz();
    cmd.args(["train", "--quiet", "--threads", "1", "--config"])
        .arg(config)
        .arg("--run-dir")
        .arg(run)
        .args(["--store", store, "--iterations", &iterations.to_string()]);
    if resume {
        cmd.arg("--resume");
    }
    cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("xqz runs")
}

fn wait(child: &mut Child, limit: Duration, what: &str) -> String {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            assert!(status.success(), "{what} failed ({status}):\n{err}");
            return err;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} did not finish within {limit:?}");
        }
        sleep(Duration::from_millis(100));
    }
}

/// A child's standard error, read line by line on a thread as the child writes it.
struct StderrLines {
    lines: std::sync::mpsc::Receiver<String>,
    seen: String,
}

impl StderrLines {
    /// Takes over `child`'s piped standard error.
    fn of(child: &mut Child) -> StderrLines {
        use std::io::BufRead;
        let err = child.stderr.take().expect("standard error piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StderrLines { lines, seen: String::new() }
    }

    /// Reads until a line contains `needle`; fails, saying it timed out, after `limit`.
    fn wait_for(&mut self, needle: &str, limit: Duration) {
        use std::sync::mpsc::RecvTimeoutError;
        let deadline = Instant::now() + limit;
        while !self.seen.lines().any(|l| l.contains(needle)) {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "timed out after {limit:?} waiting for a line with {needle:?}; read so far:\n{}",
                    self.seen
                ),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("standard error closed before a line with {needle:?}:\n{}", self.seen)
                }
            }
        }
    }

    /// Everything read, up to the end of the stream (call once the child has exited).
    fn rest(mut self) -> String {
        for line in self.lines.iter() {
            self.seen.push_str(&line);
            self.seen.push('\n');
        }
        self.seen
    }
}

fn kill9(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The shards in the store: `(worker, seq) -> shard`, every one read whole.
fn store_shards(store: &Store) -> BTreeMap<(u64, u64), Shard> {
    let mut out = BTreeMap::new();
    for e in store.list("shards").unwrap() {
        let (w, seq) = xiangqi_train::distributed::parse_shard_key(&e.key)
            .unwrap_or_else(|| panic!("{}: not a shard key", e.key));
        let bytes = store.get(&e.key).unwrap().unwrap();
        let shard = read_shard_from(std::io::Cursor::new(bytes))
            .unwrap_or_else(|err| panic!("{}: a partial or damaged shard: {err}", e.key));
        out.insert((w, seq), shard);
    }
    out
}

/// The cursor of the run's newest checkpoint.
fn consumed_cursor(run: &Path) -> xiangqi_train::distributed::ShardCursor {
    let scan = xiangqi_train::pipeline::list_checkpoints(&run.join("checkpoints")).unwrap();
    let (_, newest) = scan.last().expect("a checkpoint");
    let manifest = xiangqi_nn::checkpoint::read_manifest(newest, None).unwrap();
    xiangqi_train::distributed::ShardCursor::from_counters(&manifest.counters)
}

/// Every game of the run directory's shards (what the trainer trained on), with its count.
fn trained_games(run: &Path) -> BTreeMap<(u64, u64), usize> {
    let mut games = BTreeMap::new();
    for path in xiangqi_search::list_shards(&run.join("shards")).unwrap() {
        let shard = read_shard(&path).unwrap();
        for g in shard.games() {
            *games.entry(g).or_default() += 1;
        }
    }
    games
}

fn exercise(store_url: &str, store: &Store, name: &str) {
    let dir = temp(name);
    let config = config(&dir);
    let run = dir.join("run");
    let logs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("worker-{i}.log"))).collect();

    // The trainer first (it publishes generation 0), two workers, and a third that is killed
    // and restarted at random moments.
    let mut t = trainer(&config, &run, store_url, 3, false);
    let mut w0 = worker(store_url, &logs[0]);
    let mut w1 = worker(store_url, &logs[1]);
    let mut w2 = worker(store_url, &logs[2]);
    let mut kills = 0;
    let start = Instant::now();
    while t.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(240) {
        sleep(Duration::from_millis(700 + 300 * (kills % 3)));
        kill9(&mut w2);
        kills += 1;
        w2 = worker(store_url, &logs[2]);
    }
    let first = wait(&mut t, Duration::from_secs(5), "the trainer");
    assert!(first.contains("store ") && first.contains("xqz selfplay --store"), "{first}");

    // Kill the trainer with kill -9 in its next iteration, once it has consumed the workers'
    // shards for it (its merged shard is in the run directory, the cursor beside it) and
    // before or while it trains on them; then resume it to the end.
    let mut t = trainer(&config, &run, store_url, 2, true);
    let gathered = run.join("shards/shard-000004.npz");
    let start = Instant::now();
    while !gathered.exists() {
        assert!(t.try_wait().unwrap().is_none(), "the resumed trainer ended before iteration 4");
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "timed out after 240 s waiting for the resumed trainer to gather iteration 4"
        );
        sleep(Duration::from_millis(20));
    }
    kill9(&mut t);
    let mut t = trainer(&config, &run, store_url, 2, true);
    let resumed = wait(&mut t, Duration::from_secs(240), "the resumed trainer");
    assert!(resumed.contains("done:"), "{resumed}");
    for w in [&mut w0, &mut w1, &mut w2] {
        kill9(w);
    }

    // Counting games in and out.
    let shards = store_shards(store);
    let cursor = consumed_cursor(&run);
    let trained = trained_games(&run);
    let twice: Vec<_> = trained.iter().filter(|&(_, &n)| n > 1).collect();
    assert!(twice.is_empty(), "games trained on in more than one iteration: {twice:?}");
    let mut consumed = BTreeSet::new();
    for (&(w, seq), shard) in &shards {
        if seq < cursor.next(w) {
            consumed.extend(shard.games());
        }
    }
    let trained: BTreeSet<(u64, u64)> = trained.into_keys().collect();
    assert_eq!(
        trained, consumed,
        "the games trained on must be exactly those of the shards the checkpoint consumed"
    );
    assert!(trained.len() >= 5 * 8, "5 iterations of at least 8 games: {} games", trained.len());
    // Several workers, several generations, no two workers with the same games.
    let workers: BTreeSet<u64> = shards.keys().map(|&(w, _)| w).collect();
    assert!(workers.len() >= 3, "workers: {workers:?}");
    let generations: BTreeSet<u32> =
        shards.values().flat_map(|s| s.generation.iter().copied()).collect();
    assert!(generations.len() >= 2, "the workers never took a newer net: {generations:?}");
    let mut openings: BTreeMap<Vec<[u8; 90]>, u64> = BTreeMap::new();
    for shard in shards.values() {
        // The first 6 positions of each game (random opening plies) identify it.
        let mut by_game: BTreeMap<(u64, u64), Vec<[u8; 90]>> = BTreeMap::new();
        for i in 0..shard.len() {
            let g = by_game.entry((shard.worker[i], shard.game_id[i])).or_default();
            if g.len() < 6 {
                g.push(shard.boards[i]);
            }
        }
        for (game, boards) in by_game {
            if let Some(other) = openings.insert(boards, game.0)
                && other != game.0
            {
                panic!("workers {other:016x} and {:016x} played the same game", game.0);
            }
        }
    }
    eprintln!(
        "{name}: {} games trained on, {} shards from {} workers in the store, generations \
         {generations:?}, worker kills {kills}",
        trained.len(),
        shards.len(),
        workers.len()
    );
    let log0 = fs::read_to_string(&logs[0]).unwrap();
    assert!(log0.contains("playing with generation"), "{log0}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn workers_and_a_trainer_meet_in_a_directory_store() {
    let dir = temp("dirstore");
    let store_dir = dir.join("store");
    let url = store_dir.to_str().unwrap().to_string();
    let store = Store::open(&url, &[]).unwrap();
    exercise(&url, &store, "dir");
    // No staging file of a killed upload is left under a shard's name.
    for e in walk(&store_dir) {
        let name = e.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.ends_with(".npz") || !name.contains(".npz"), "{}", e.display());
    }
    fs::remove_dir_all(&dir).unwrap();
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

#[test]
fn workers_and_a_trainer_meet_in_an_s3_store() {
    let Ok(bucket) = std::env::var("XQZ_S3_BUCKET") else {
        assert!(
            std::env::var_os("XQZ_REQUIRE_S3").is_none(),
            "XQZ_REQUIRE_S3 is set but XQZ_S3_BUCKET is not: start the server (.ci/rgw start DIR)"
        );
        eprintln!("skipped: no S3 server (set XQZ_S3_BUCKET and AWS_*; see .ci/rgw)");
        return;
    };
    let url = format!("s3://{bucket}/dist-{}", std::process::id());
    let options: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    let store = Store::open(&url, &options).unwrap();
    let start = Instant::now();
    exercise(&url, &store, "s3");
    eprintln!("the S3 run took {:.1} s", start.elapsed().as_secs_f64());
}

#[test]
fn a_store_has_one_trainer_and_a_waiting_trainer_resumes() {
    let dir = temp("owner");
    let config = config(&dir);
    let store = dir.join("store");
    let store = store.to_str().unwrap();
    // A trainer with no workers publishes generation 0 and waits; Ctrl-C stops it cleanly.
    let run_a = dir.join("a");
    let mut a = trainer(&config, &run_a, store, 1, false);
    let mut log = StderrLines::of(&mut a);
    log.wait_for("waiting for self-play workers", Duration::from_secs(120));
    assert!(Path::new(store).join("models/latest").exists(), "generation 0 was not published");
    let pid = a.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    wait(&mut a, Duration::from_secs(30), "the interrupted trainer");
    let waited = log.rest();
    assert!(waited.contains("stopped: 0 iterations"), "{waited}");
    // A new run on that store is refused before it writes anything.
    let run_b = dir.join("b");
    let out = xqz()
        .args(["train", "--quiet", "--threads", "1", "--config"])
        .arg(&config)
        .arg("--run-dir")
        .arg(&run_b)
        .args(["--store", store, "--iterations", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("already holds the nets"), "{err}");
    assert!(!run_b.join("checkpoints").exists(), "the refused run wrote {}", run_b.display());
    // Another run, resumed onto the store, is refused: the store has one owner.
    let run_c = dir.join("c");
    let made = xqz()
        .args(["train", "--quiet", "--threads", "1", "--iterations", "1", "--config"])
        .arg(&config)
        .arg("--run-dir")
        .arg(&run_c)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let mut c = trainer(&config, &run_c, store, 1, true);
    let refused = c.wait_with_output_err();
    assert!(refused.contains("belongs to another run"), "{refused}");
    // The owner resumes before its first iteration was done, and plays it with its own
    // self-play (the config may change on resume).
    let local = dir.join("local.toml");
    let text = fs::read_to_string(&config).unwrap();
    fs::write(
        &local,
        text.replace("store_poll_seconds", "local_selfplay_threads = 1\nstore_poll_seconds"),
    )
    .unwrap();
    let mut a = trainer(&local, &run_a, store, 1, true);
    let resumed = wait(&mut a, Duration::from_secs(120), "the owner, resumed");
    assert!(resumed.contains("done: 1 iteration,"), "{resumed}");
    assert_eq!(fs::read_to_string(Path::new(store).join("models/latest")).unwrap().trim(), "1");
    fs::remove_dir_all(&dir).unwrap();
}

/// Uploads `counts[k]` shards of `games` games each for worker `workers[k]` (uniform-prior
/// self-play under the asian rules, played by generation 0), as workers would. Returns each
/// shard's samples by `(worker, seq)`.
fn upload_worker_shards(
    store: &Store,
    workers: &[u64],
    counts: &[u64],
    games: usize,
) -> BTreeMap<(u64, u64), usize> {
    use xiangqi_search::{SearchConfig, SelfPlayConfig, SelfPlayEvent, UniformEvaluator};
    let search = SearchConfig { simulations: 8, cheap_simulations: 4, ..SearchConfig::default() };
    let selfplay = SelfPlayConfig {
        games_in_flight: 8,
        threads: 1,
        length_cap: 40,
        rules: Some("asian".into()),
        ..SelfPlayConfig::default()
    };
    let rules = selfplay.rules_for::<xiangqi::Game>().unwrap();
    let mut records = Vec::new();
    let total = counts.iter().sum::<u64>() * games as u64;
    xiangqi_search::play_games::<xiangqi::Game, _, _>(
        &xiangqi_search::Checked::new(search).unwrap(),
        &xiangqi_search::Checked::new(selfplay).unwrap(),
        total,
        &mut UniformEvaluator,
        |e| {
            if let SelfPlayEvent::GameFinished(record, _) = e {
                records.push(record.clone());
            }
            Ok(())
        },
    )
    .unwrap();
    let mut records = records.into_iter();
    let mut out = BTreeMap::new();
    for (&worker, &count) in workers.iter().zip(counts) {
        for seq in 0..count {
            let mut shard = Shard::new::<xiangqi::Game>(rules);
            for record in records.by_ref().take(games) {
                shard.push_game_of(&record, worker, 0);
            }
            let bytes = xiangqi_search::write_shard_to(std::io::Cursor::new(Vec::new()), &shard)
                .unwrap()
                .into_inner();
            store.put_new(&xiangqi_train::distributed::shard_key(worker, seq), bytes).unwrap();
            out.insert((worker, seq), shard.len());
        }
    }
    out
}

#[test]
fn a_trainer_behind_its_workers_reads_every_worker_in_turn_and_says_so() {
    let dir = temp("fair");
    let config = config(&dir);
    let store_dir = dir.join("store");
    let url = store_dir.to_str().unwrap().to_string();
    let store = Store::open(&url, &[]).unwrap();
    // A fast worker (the lower id) has uploaded 6 shards of 4 games, a slow one 2.
    let (fast, slow) = (0x1, 0xffff_0000_0000_0000);
    let samples = upload_worker_shards(&store, &[fast, slow], &[6, 2], 4);
    // A window that one iteration fills with the oldest two shards of each worker when it
    // takes them in turns, and with the fast worker's alone when it takes them in worker order.
    let window = samples[&(fast, 0)] + samples[&(slow, 0)] + samples[&(fast, 1)] + 1;
    assert!((0..6).map(|s| samples[&(fast, s)]).sum::<usize>() > window);
    let text = fs::read_to_string(&config).unwrap();
    let text = text.replace("window_samples = 4000", &format!("window_samples = {window}"));
    assert!(text.contains(&format!("window_samples = {window}\n")), "configs/tiny.toml changed");
    fs::write(&config, text).unwrap();

    let run = dir.join("run");
    let mut t = trainer(&config, &run, &url, 1, false);
    let log = wait(&mut t, Duration::from_secs(120), "the trainer");
    let cursor = consumed_cursor(&run);
    assert_eq!((cursor.next(fast), cursor.next(slow)), (2, 2), "{log}");
    assert!(
        log.contains("the trainer is behind the workers")
            && log.contains("left 4 shards of 1 worker"),
        "{log}"
    );
    let metrics = fs::read_to_string(run.join("metrics.csv")).unwrap();
    let header: Vec<&str> = metrics.lines().next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = metrics.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 1, "{metrics}");
    let cell = |name: &str| rows[0][header.iter().position(|&h| h == name).unwrap()];
    assert_eq!(
        (cell("store_shards"), cell("store_workers"), cell("waiting_shards")),
        ("4", "2", "4"),
        "{metrics}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// `shard` (an npz archive) with its `boards` entry replaced by an npy header that declares
/// (2^40, 90) boards, followed by one board: what a hostile or broken object could hold.
fn with_huge_boards_header(shard: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut header =
        "{'descr': '|u1', 'fortran_order': False, 'shape': (1099511627776, 90), }".to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
    npy.extend_from_slice(header.as_bytes());
    npy.extend_from_slice(&[0; 90]);
    let mut from = zip::ZipArchive::new(std::io::Cursor::new(shard)).unwrap();
    let mut to = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for i in 0..from.len() {
        let mut entry = from.by_index(i).unwrap();
        let name = entry.name().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        if name == "boards.npy" {
            bytes = std::mem::take(&mut npy);
        }
        to.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
        to.write_all(&bytes).unwrap();
    }
    assert!(npy.is_empty(), "no boards.npy in a shard");
    to.finish().unwrap().into_inner()
}

#[cfg(unix)]
#[test]
fn hostile_store_objects_are_named_and_passed_over_and_never_move_the_cursor() {
    use std::os::unix::ffi::OsStrExt;
    use xiangqi_train::distributed::shard_key;
    let dir = temp("hostile");
    let config = config(&dir);
    let store_dir = dir.join("store");
    let url = store_dir.to_str().unwrap().to_string();
    let store = Store::open(&url, &[]).unwrap();
    let (a, b, c) = (0xa, 0xb, 0xc);
    // Real shards: a 0-3, b 0-1 and 3, c 0 and 2.
    let mut samples = upload_worker_shards(&store, &[a, b, c], &[4, 4, 3], 4);
    // b's shard 2 claims 2^40 boards; a's copy of its shard 0 sits far ahead of its sequence;
    // c's shard 1 is missing (no shard after its shard 2 yet); a name that is not UTF-8.
    let b2 = store.get(&shard_key(b, 2)).unwrap().unwrap();
    store.delete(&shard_key(b, 2)).unwrap();
    store.put_new(&shard_key(b, 2), with_huge_boards_header(&b2)).unwrap();
    let far = shard_key(a, 999_999_999_999);
    store.put_new(&far, store.get(&shard_key(a, 0)).unwrap().unwrap()).unwrap();
    store.delete(&shard_key(c, 1)).unwrap();
    let worker_dir = store_dir.join(xiangqi_train::distributed::worker_dir_key(a));
    fs::write(worker_dir.join(std::ffi::OsStr::from_bytes(b"\xff.npz")), b"x").unwrap();
    samples.remove(&(b, 2));
    samples.remove(&(c, 1));

    // What the store holds before the trainer, which deletes what it consumes this time.
    let kept = store_shards_readable(&store);
    let text = fs::read_to_string(&config).unwrap();
    fs::write(&config, text.replace("store_keep_shards = true", "store_keep_shards = false"))
        .unwrap();
    let run = dir.join("run");
    let mut t = trainer(&config, &run, &url, 1, false);
    let log = wait(&mut t, Duration::from_secs(120), "the trainer");
    for named in [shard_key(b, 2).as_str(), "'boards'", far.as_str(), "%FF.npz"] {
        assert!(log.contains(named), "{named} not named:\n{log}");
    }
    assert!(log.contains(&format!("{}: worker", shard_key(c, 2))), "{log}");
    // The cursor: past every real shard read (b's bad one included), never past c's gap or to
    // a's far shard.
    let cursor = consumed_cursor(&run);
    assert_eq!((cursor.next(a), cursor.next(b), cursor.next(c)), (4, 4, 1), "{log}");
    // Every real shard before the cursor trained on once, its games each once.
    let trained = trained_games(&run);
    assert!(trained.values().all(|&n| n == 1), "{trained:?}");
    let games: BTreeSet<(u64, u64)> = trained.keys().copied().collect();
    let expected: BTreeSet<(u64, u64)> = kept
        .into_iter()
        .filter(|((w, seq), _)| *seq < cursor.next(*w) && samples.contains_key(&(*w, *seq)))
        .flat_map(|(_, s)| s.games())
        .collect();
    assert_eq!(games, expected, "{log}");
    assert_eq!(games.len(), 4 * (4 + 3 + 1), "{log}");
    // The consumed shards are deleted; the far one and those behind the gap stay.
    let left: Vec<String> =
        store.list_after_lossy("shards", None).unwrap().0.into_iter().map(|e| e.key).collect();
    assert_eq!(left, [shard_key(a, 999_999_999_999), shard_key(c, 2)], "{log}");
    fs::remove_dir_all(&dir).unwrap();
}

/// The store's shards that read, by `(worker, seq)` (the hostile ones left out).
fn store_shards_readable(store: &Store) -> BTreeMap<(u64, u64), Shard> {
    let (entries, _) = store.list_after_lossy("shards", None).unwrap();
    entries
        .iter()
        .filter_map(|e| {
            let key = xiangqi_train::distributed::parse_shard_key(&e.key)?;
            let bytes = store.get(&e.key).unwrap()?;
            Some((key, read_shard_from(std::io::Cursor::new(bytes)).ok()?))
        })
        .collect()
}

trait WaitErr {
    /// Waits for a failing process and returns its standard error.
    fn wait_with_output_err(&mut self) -> String;
}

impl WaitErr for Child {
    fn wait_with_output_err(&mut self) -> String {
        let status = self.wait().unwrap();
        let mut err = String::new();
        if let Some(mut e) = self.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        assert!(!status.success(), "expected a failure:\n{err}");
        err
    }
}

/// The `shard` lines of the run's per-iteration store records (`shards/store-consumed-N.txt`):
/// `(iteration, key, samples, games, fate)`, in iteration order.
fn consumed_records(run: &Path) -> Vec<(u64, String, u64, u64, String)> {
    let mut paths: Vec<PathBuf> = fs::read_dir(run.join("shards"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("store-consumed-") && name.ends_with(".txt")
        })
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        for line in fs::read_to_string(&path).unwrap().lines() {
            let f: Vec<&str> = line.split(' ').collect();
            if f[0] == "shard" {
                assert_eq!(f.len(), 6, "{}: {line}", path.display());
                out.push((
                    f[1].parse().unwrap(),
                    f[2].to_string(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                    f[5].to_string(),
                ));
            }
        }
    }
    out
}

/// The cells of a `metrics.csv` column, one per row.
fn metrics_column(run: &Path, name: &str) -> Vec<String> {
    let text = fs::read_to_string(run.join("metrics.csv")).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let i = header.iter().position(|&h| h == name).unwrap_or_else(|| panic!("no {name}"));
    text.lines().skip(1).map(|l| l.split(',').nth(i).unwrap_or("").to_string()).collect()
}

/// The newest `shard-N.npz` of the run directory (0 when none).
fn newest_run_shard(run: &Path) -> u64 {
    xiangqi_search::list_shards(&run.join("shards"))
        .unwrap_or_default()
        .iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            name.strip_prefix("shard-")?.strip_suffix(".npz")?.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// The README's check of exactly-once, run as a user would (its output).
fn readme_check(run: &Path) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "awk '$1 == \"shard\" {{ n[$3]++; t++ }} END {{ for (k in n) if (n[k] > 1) print \
             \"twice:\", k; print t, \"consumed,\", length(n), \"distinct\" }}' \
             {}/shards/store-consumed-*.txt",
            run.display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_trainer_killed_again_and_again_records_each_shard_once_and_metrics_add_up() {
    let dir = temp("records");
    let config = config(&dir);
    let store_dir = dir.join("store");
    let url = store_dir.to_str().unwrap().to_string();
    let store = Store::open(&url, &[]).unwrap();
    let run = dir.join("run");
    let logs: Vec<PathBuf> = (0..2).map(|i| dir.join(format!("worker-{i}.log"))).collect();
    let mut t = trainer(&config, &run, &url, 2, false);
    // Killed when the test ends, whichever way it ends.
    let _workers = [Reap(worker(&url, &logs[0])), Reap(worker(&url, &logs[1]))];
    wait(&mut t, Duration::from_secs(300), "the first trainer");
    // Killed with kill -9 as soon as an iteration has gathered its shard from the store (its
    // record and shard written, its checkpoint not yet): the resume trains on that shard.
    for kill in 0..3 {
        let before = newest_run_shard(&run);
        let mut t = Reap(trainer(&config, &run, &url, 3, true));
        let start = Instant::now();
        while newest_run_shard(&run) == before {
            assert!(t.0.try_wait().unwrap().is_none(), "the trainer ended before kill {kill}");
            assert!(
                start.elapsed() < Duration::from_secs(300),
                "kill {kill}: no new iteration gathered within 300 s (time)"
            );
            sleep(Duration::from_millis(20));
        }
        drop(t);
    }
    let mut t = trainer(&config, &run, &url, 2, true);
    let log = wait(&mut t, Duration::from_secs(300), "the last trainer");
    assert!(log.contains("done:"), "{log}");
    drop(_workers);

    // Every shard of the records once, and they are exactly the store's shards before the
    // newest checkpoint's cursor (the store keeps them in this config).
    let records = consumed_records(&run);
    let keys: Vec<&str> = records.iter().map(|r| r.1.as_str()).collect();
    let distinct: BTreeSet<&str> = keys.iter().copied().collect();
    assert_eq!(distinct.len(), keys.len(), "a shard in two records: {records:?}");
    let cursor = consumed_cursor(&run);
    let shards = store_shards(&store);
    let below: BTreeSet<String> = shards
        .keys()
        .filter(|&&(w, seq)| seq < cursor.next(w))
        .map(|&(w, seq)| xiangqi_train::distributed::shard_key(w, seq))
        .collect();
    assert_eq!(distinct, below.iter().map(String::as_str).collect(), "{records:?}");
    assert!(records.iter().all(|r| r.4 == "trained"), "{records:?}");
    // Each record's counts are its shard's, and its games are the ones trained on, each once.
    let mut games = BTreeSet::new();
    for (_, key, samples, n, _) in &records {
        let (w, seq) = xiangqi_train::distributed::parse_shard_key(key).unwrap();
        let shard = &shards[&(w, seq)];
        assert_eq!((*samples, *n), (shard.len() as u64, shard.games().len() as u64), "{key}");
        games.extend(shard.games());
    }
    let trained = trained_games(&run);
    assert!(trained.values().all(|&n| n == 1), "{trained:?}");
    assert_eq!(trained.into_keys().collect::<BTreeSet<_>>(), games);
    // metrics.csv: a row per iteration, every store cell filled, store_shards adding up to the
    // records, the resumed iterations included.
    let iterations = xiangqi_train::pipeline::list_checkpoints(&run.join("checkpoints"))
        .unwrap()
        .last()
        .unwrap()
        .0;
    let cells = metrics_column(&run, "store_shards");
    assert_eq!(cells.len() as u64, iterations, "one row per iteration: {cells:?}");
    let sum: u64 = cells
        .iter()
        .map(|c| c.parse::<u64>().unwrap_or_else(|_| panic!("an empty store cell: {cells:?}")))
        .sum();
    assert_eq!(sum, records.len() as u64, "{cells:?}");
    for column in ["store_workers", "store_mb", "data_age_mean", "ingest_s"] {
        let cells = metrics_column(&run, column);
        assert!(cells.iter().all(|c| !c.is_empty()), "{column}: {cells:?}");
    }
    let by_iteration: BTreeSet<u64> = records.iter().map(|r| r.0).collect();
    assert_eq!(by_iteration, (1..=iterations).collect(), "a record per iteration");
    // The README's one-line check says the same.
    let n = records.len();
    assert_eq!(readme_check(&run), format!("{n} consumed, {n} distinct\n"));
    eprintln!("{iterations} iterations, {n} shards consumed, each once, across 3 kills");
    fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn a_long_store_run_keeps_the_newest_nets_forgets_idle_workers_and_leaves_no_files() {
    use xiangqi_train::distributed::{model_key, shard_key};
    let dir = temp("tidy");
    let config = config(&dir);
    let store_dir = dir.join("store");
    let url = store_dir.to_str().unwrap().to_string();
    let store = Store::open(&url, &[]).unwrap();
    // Worker a uploads 2 shards and goes quiet; b uploads 6. A window that two shards fill:
    // an iteration reads 2 shards, one of each worker in turn (a0 b0 | a1 b1 | b2 b3 | b4 b5).
    let (a, b) = (0xa, 0xb);
    let n = upload_worker_shards(&store, &[a, b], &[2, 6], 4);
    let pairs = [((a, 0), (b, 0)), ((a, 1), (b, 1)), ((b, 2), (b, 3)), ((b, 4), (b, 5))];
    let window = pairs.iter().map(|(x, _)| n[x]).max().unwrap() + 1;
    assert!(pairs.iter().all(|(x, y)| n[x] + n[y] >= window), "{n:?}");
    let text = fs::read_to_string(&config)
        .unwrap()
        .replace(
            "store_keep_shards = true",
            "store_keep_shards = false\nstore_keep_nets = 2\nstore_forget_workers_after = 2",
        )
        .replace("window_samples = 4000", &format!("window_samples = {window}"));
    assert!(text.contains(&format!("window_samples = {window}\n")), "configs/tiny.toml changed");
    fs::write(&config, text).unwrap();
    // a's shards when it comes back, played now (in a store of their own until then).
    let spare = Store::open(dir.join("spare").to_str().unwrap(), &[]).unwrap();
    upload_worker_shards(&spare, &[a], &[2], 4);
    // What killed writers leave: a staged file of two hours ago, one being written now (a
    // worker mid-put), object_store's staging files of a trainer killed mid-publish.
    let staging = store_dir.join(xiangqi_store::STAGING_DIR);
    fs::create_dir_all(&staging).unwrap();
    let old = staging.join("111-1-0.part");
    fs::write(&old, b"x").unwrap();
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    fs::File::options().write(true).open(&old).unwrap().set_modified(two_hours_ago).unwrap();
    let fresh = staging.join("222-2-0.part");
    fs::write(&fresh, b"x").unwrap();
    fs::create_dir_all(store_dir.join("models")).unwrap();
    let leftovers = [store_dir.join("models/000000000007.net#1"), store_dir.join("run.toml#2")];
    for p in &leftovers {
        fs::write(p, b"x").unwrap();
    }

    let run = dir.join("run");
    let mut t = trainer(&config, &run, &url, 4, false);
    let log = wait(&mut t, Duration::from_secs(300), "the trainer");
    assert!(log.contains("removed 3 files that killed writers left"), "{log}");
    // The run's name is its directory's, at the start as on a resume (with another config).
    assert!(log.contains("run 'run' in"), "{log}");
    assert!(!old.exists() && leftovers.iter().all(|p| !p.exists()) && fresh.exists(), "{log}");
    // Nets: the newest 2 (3 and 4) and latest.
    let models: Vec<String> = store.list("models").unwrap().into_iter().map(|e| e.key).collect();
    assert_eq!(models, [model_key(3), model_key(4), "models/latest".to_string()], "{log}");
    // a: none of its shards in iterations 3 and 4, its folder empty: forgotten in iteration 4.
    assert!(log.contains("forgot 1 idle worker") && log.contains(&format!("{a:016x}")));
    let cursor = consumed_cursor(&run);
    assert!(!cursor.knows(a) && cursor.next(b) == 6, "{log}");
    // a comes back (a paused worker keeps its id and goes on far above its old cursor): its
    // shards are read from the first one it uploads, none passed over, none refused.
    for (seq, new) in [(0, 2000), (1, 2001)] {
        let bytes = spare.get(&shard_key(a, seq)).unwrap().unwrap();
        store.put_new(&shard_key(a, new), bytes).unwrap();
    }
    // (A window that holds both, whatever their sizes.)
    let text = fs::read_to_string(&config).unwrap();
    let wide = dir.join("wide.toml");
    fs::write(
        &wide,
        text.replace(&format!("window_samples = {window}\n"), "window_samples = 4000\n"),
    )
    .unwrap();
    let mut t = trainer(&wide, &run, &url, 1, true);
    let log = wait(&mut t, Duration::from_secs(300), "the resumed trainer");
    assert_eq!(consumed_cursor(&run).next(a), 2002, "{log}");
    assert!(log.contains("run 'run' in") && log.contains("(2 shards of 1 worker,"), "{log}");
    let fifth: Vec<String> =
        consumed_records(&run).into_iter().filter(|r| r.0 == 5).map(|r| r.1).collect();
    assert_eq!(fifth, [shard_key(a, 2000), shard_key(a, 2001)], "{log}");
    let models: Vec<String> = store.list("models").unwrap().into_iter().map(|e| e.key).collect();
    assert_eq!(models, [model_key(4), model_key(5), "models/latest".to_string()], "{log}");

    // A worker's folder in the temporary directory: the folders of workers that are gone
    // (unlocked lock, or an earlier version's empty folder) are removed when a worker starts,
    // a live worker's (its lock held) is kept, and SIGTERM removes the worker's own.
    let tmp = dir.join("tmp");
    let gone = tmp.join("xqz-worker-00000000deadbeef");
    fs::create_dir_all(gone.join("000000000003")).unwrap();
    fs::write(gone.join("lock"), b"").unwrap();
    fs::write(gone.join("000000000003/model.bpk"), b"x").unwrap();
    let empty = tmp.join("xqz-worker-0000000000000bad");
    fs::create_dir_all(&empty).unwrap();
    let live = tmp.join("xqz-worker-00000000cafef00d");
    fs::create_dir_all(&live).unwrap();
    let held = fs::File::create(live.join("lock")).unwrap();
    held.lock().unwrap();
    let log_path = dir.join("worker.log");
    let mut w = Reap(
        xqz()
            .args(["selfplay", "--threads", "1", "--store", &url])
            .env("TMPDIR", &tmp)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    let log = loop {
        let log = fs::read_to_string(&log_path).unwrap();
        if log.contains("playing with generation 5") {
            break log;
        }
        assert!(w.0.try_wait().unwrap().is_none(), "the worker ended:\n{log}");
        assert!(start.elapsed() < Duration::from_secs(120), "no net within 120 s (time):\n{log}");
        sleep(Duration::from_millis(50));
    };
    let id =
        log.split("xqz selfplay: worker ").nth(1).and_then(|s| s.get(..16)).unwrap().to_string();
    let own = tmp.join(format!("xqz-worker-{id}"));
    assert!(own.join("lock").exists(), "{log}");
    assert!(!gone.exists() && !empty.exists() && live.exists(), "{log}");
    assert!(
        Command::new("kill").args(["-TERM", &w.0.id().to_string()]).status().unwrap().success()
    );
    let status = w.0.wait().unwrap();
    let log = fs::read_to_string(&log_path).unwrap();
    assert!(status.success(), "SIGTERM: {status}\n{log}");
    assert!(log.contains("stopped after"), "{log}");
    assert!(!own.exists(), "the worker left {}:\n{log}", own.display());
    drop(held);
    fs::remove_dir_all(&dir).unwrap();
}

/// A child process killed (`kill -9`) when dropped, so that a failing test leaves none running.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        kill9(&mut self.0);
    }
}

fn sigterm(child: &Child) {
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
}

/// The folders of workers (`xqz-worker-*`) in `tmp`.
fn worker_folders(tmp: &Path) -> Vec<PathBuf> {
    fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("xqz-worker-"))
        .map(|e| e.path())
        .collect()
}

#[test]
fn a_worker_refuses_a_directory_store_that_does_not_exist_and_creates_nothing() {
    let dir = temp("nostore");
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let missing = dir.join("stroe");
    let url = missing.to_str().unwrap().to_string();
    let start = Instant::now();
    let out = xqz()
        .args(["selfplay", "--threads", "1", "--store", &url])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
    assert!(
        err.contains(&format!(
            "store {url}: no such directory; a trainer creates it (xqz train --store {url}); \
             check the path"
        )),
        "{err}"
    );
    assert!(!missing.exists(), "the worker created {}", missing.display());
    assert!(worker_folders(&tmp).is_empty(), "{:?}", worker_folders(&tmp));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigterm_stops_a_worker_waiting_for_a_trainer_and_removes_its_folder() {
    let dir = temp("sigwait");
    let tmp = dir.join("tmp");
    let store = dir.join("store");
    fs::create_dir_all(&tmp).unwrap();
    fs::create_dir_all(&store).unwrap();
    let mut w = xqz()
        .args(["selfplay", "--threads", "1", "--store", store.to_str().unwrap()])
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = StderrLines::of(&mut w);
    lines.wait_for("waiting for a trainer", Duration::from_secs(120));
    assert_eq!(worker_folders(&tmp).len(), 1, "the worker's folder");
    sigterm(&w);
    let status = w.wait().unwrap();
    let err = lines.rest();
    assert!(status.success(), "SIGTERM: {status}\n{err}");
    assert!(worker_folders(&tmp).is_empty(), "{:?}\n{err}", worker_folders(&tmp));
    fs::remove_dir_all(&dir).unwrap();
}

/// An S3 server that refuses every connection (nothing listens on port 1): the store is waited
/// for at startup.
fn unreachable_s3(cmd: &mut Command) -> &mut Command {
    cmd.env("AWS_ENDPOINT", "http://127.0.0.1:1")
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "nobody")
        .env("AWS_SECRET_ACCESS_KEY", "nothing")
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_SESSION_TOKEN")
}

#[test]
fn sigterm_while_the_store_is_waited_for_at_startup_stops_a_worker_and_a_trainer_cleanly() {
    let dir = temp("sigstart");
    let config = config(&dir);
    let run = dir.join("run");
    let url = "s3://xqz-unreachable/run";
    let mut cmd = xqz();
    unreachable_s3(&mut cmd).args(["selfplay", "--threads", "1", "--store", url]);
    let mut train = xqz();
    unreachable_s3(&mut train)
        .args(["train", "--quiet", "--threads", "1", "--config"])
        .arg(&config)
        .arg("--run-dir")
        .arg(&run)
        .args(["--store", url]);
    for (what, cmd) in [("worker", &mut cmd), ("trainer", &mut train)] {
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let mut lines = StderrLines::of(&mut child);
        lines.wait_for("next try in", Duration::from_secs(120));
        sigterm(&child);
        let status = child.wait().unwrap();
        let err = lines.rest();
        assert!(status.success(), "{what}, SIGTERM: {status}\n{err}");
        assert!(err.contains("stopped before the store answered"), "{what}: {err}");
    }
    assert!(!run.exists(), "the trainer wrote {}", run.display());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_quick_sigterms_to_a_trainer_are_one_stop_with_a_checkpoint() {
    let dir = temp("sigtwice");
    fs::create_dir_all(&dir).unwrap();
    let tiny = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml");
    let run = dir.join("run");
    let mut t = xqz()
        .args(["train", "--quiet", "--threads", "1", "--config"])
        .arg(&tiny)
        .arg("--run-dir")
        .arg(&run)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = StderrLines::of(&mut t);
    lines.wait_for("xqz train: run ", Duration::from_secs(120));
    // The second signal as `timeout -s TERM` may send it: moments after the first.
    sigterm(&t);
    sleep(Duration::from_millis(100));
    sigterm(&t);
    let status = t.wait().unwrap();
    let err = lines.rest();
    assert!(status.success(), "{status}\n{err}");
    assert!(!err.contains("second interrupt"), "{err}");
    let line = err.lines().find(|l| l.starts_with("stopped: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(" checkpoint "), "{line}");
    assert!(run.join("checkpoints").read_dir().unwrap().next().is_some(), "{err}");
    fs::remove_dir_all(&dir).unwrap();
}
