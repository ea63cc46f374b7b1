//! The store under faults, through the real binary and a real S3 server (a Ceph RADOS Gateway
//! on loopback, when `XQZ_S3_BUCKET` and the `AWS_*` variables name one; `XQZ_REQUIRE_S3` makes
//! its absence a failure, as in tests/distributed.rs):
//! * one bad object never stops the store: a symbolic link loop under `shards/` (a folder, a
//!   file linked to itself, a worker folder that is a loop) is passed over with its key named;
//!   an S3 key with a `..` segment hides none of the keys listed with it;
//! * transient failures are waited out: a gateway that stops answering for 30 s mid-run, and a
//!   directory store that is read-only or full for a while, make the trainer and the workers
//!   retry with back-off and a periodic message; the run goes on and every game is trained on
//!   exactly once;
//! * permanent failures end the process promptly with a message that names them: a bucket that
//!   does not exist, a wrong secret;
//! * (with `XQZ_SLOW_TESTS`) the time the trainer's listing and tidying take at 10,000 shards.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant};

use xiangqi_search::{read_shard, read_shard_from};
use xiangqi_store::Store;
use xiangqi_train::distributed::{self, ShardCursor, shard_key};

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-faults-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// The S3 settings of the environment (`None`: no server; a failure under `XQZ_REQUIRE_S3`).
fn s3() -> Option<(String, Vec<(String, String)>)> {
    let Ok(bucket) = std::env::var("XQZ_S3_BUCKET") else {
        assert!(
            std::env::var_os("XQZ_REQUIRE_S3").is_none(),
            "XQZ_REQUIRE_S3 is set but XQZ_S3_BUCKET is not: start the server (.ci/rgw start DIR)"
        );
        eprintln!("skipped: no S3 server (set XQZ_S3_BUCKET and AWS_*; see .ci/rgw)");
        return None;
    };
    let options = std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    Some((bucket, options))
}

fn unique() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

/// The time listing and tidying take at 10,000 shards on the S3 server: 1,000 workers of 10
/// shards and 10 workers of 1,000 (`XQZ_SLOW_TESTS`; it uploads 20,000 small objects).
#[test]
fn listing_and_tidying_ten_thousand_shards() {
    if std::env::var_os("XQZ_SLOW_TESTS").is_none() {
        eprintln!("skipped: set XQZ_SLOW_TESTS to measure 10,000 shards on the S3 server");
        return;
    }
    let Some((bucket, options)) = s3() else { return };
    for (workers, per) in [(1000u64, 10u64), (10, 1000)] {
        let url = format!("s3://{bucket}/scale-{}-{workers}", unique());
        let store = Arc::new(Store::open(&url, &options).unwrap());
        let start = Instant::now();
        let keys: Vec<String> =
            (0..workers).flat_map(|w| (0..per).map(move |s| shard_key(w + 1, s))).collect();
        let keys = Arc::new(Mutex::new(keys));
        let threads: Vec<_> = (0..32)
            .map(|_| {
                let (store, keys) = (Arc::clone(&store), Arc::clone(&keys));
                std::thread::spawn(move || {
                    loop {
                        let Some(key) = keys.lock().unwrap().pop() else { break };
                        store.put_new(&key, vec![0; 64]).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let uploaded = start.elapsed();
        let mut cursor = ShardCursor::default();
        let start = Instant::now();
        let pending = distributed::pending_shards(&store, &cursor).unwrap();
        let listed = start.elapsed();
        assert_eq!(pending.shards.len() as u64, workers * per);
        for p in &pending.shards {
            cursor.consume(p.worker, p.seq);
        }
        let start = Instant::now();
        let deleted = distributed::delete_consumed(&store, &cursor).unwrap();
        let tidied = start.elapsed();
        assert_eq!(deleted, workers * per);
        let start = Instant::now();
        let after = distributed::pending_shards(&store, &cursor).unwrap();
        let empty = start.elapsed();
        assert!(after.shards.is_empty());
        eprintln!(
            "{workers} workers x {per} shards on {url}: uploaded in {:.1} s; pending_shards \
             {:.2} s; delete_consumed {:.2} s; pending_shards of the emptied store {:.3} s",
            uploaded.as_secs_f64(),
            listed.as_secs_f64(),
            tidied.as_secs_f64(),
            empty.as_secs_f64()
        );
    }
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
    let path = dir.join("faults.toml");
    fs::write(&path, text).unwrap();
    path
}

fn worker(store: &str, log: &Path, env: &[(&str, String)]) -> Child {
    xqz()
        .args(["selfplay", "--threads", "1", "--store", store])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).unwrap())
        .spawn()
        .expect("xqz runs")
}

fn trainer(
    config: &Path,
    run: &Path,
    store: &str,
    iterations: u64,
    env: &[(&str, String)],
) -> Child {
    xqz()
        .args(["train", "--quiet", "--threads", "1", "--config"])
        .arg(config)
        .arg("--run-dir")
        .arg(run)
        .args(["--store", store, "--iterations", &iterations.to_string()])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xqz runs")
}

/// Waits for `child` to end within `limit`; its status and standard error.
fn finish(child: &mut Child, limit: Duration, what: &str) -> (bool, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            return (status.success(), err);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("{what} did not finish within {limit:?} (time limit):\n{err}");
        }
        sleep(Duration::from_millis(100));
    }
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits until `log` holds `text` (within `limit`).
fn wait_for_log(log: &Path, text: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let got = fs::read_to_string(log).unwrap_or_default();
        if got.contains(text) {
            return got;
        }
        assert!(
            start.elapsed() < limit,
            "'{text}' not in {} within {limit:?} (time limit):\n{got}",
            log.display()
        );
        sleep(Duration::from_millis(100));
    }
}

/// The cursor of the run's newest checkpoint.
fn consumed_cursor(run: &Path) -> ShardCursor {
    let scan = xiangqi_train::pipeline::list_checkpoints(&run.join("checkpoints")).unwrap();
    let (_, newest) = scan.last().expect("a checkpoint");
    let manifest = xiangqi_nn::checkpoint::read_manifest(newest, None).unwrap();
    ShardCursor::from_counters(&manifest.counters)
}

/// Every game of the run directory's shards (what the trainer trained on), with its count.
fn trained_games(run: &Path) -> BTreeMap<(u64, u64), usize> {
    let mut games = BTreeMap::new();
    for path in xiangqi_search::list_shards(&run.join("shards")).unwrap() {
        for g in read_shard(&path).unwrap().games() {
            *games.entry(g).or_default() += 1;
        }
    }
    games
}

/// Checks exactly-once: every game trained on once, and they are exactly the games of the
/// store's shards before the checkpoint's cursor; each worker's shards numbered without a
/// hole (no shard lost). Returns the number of games.
fn check_exactly_once(store: &Store, run: &Path) -> usize {
    let cursor = consumed_cursor(run);
    let trained = trained_games(run);
    assert!(trained.values().all(|&n| n == 1), "games trained on twice: {trained:?}");
    let mut consumed = BTreeSet::new();
    let mut seqs: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for e in store.list("shards").unwrap() {
        let (w, seq) = distributed::parse_shard_key(&e.key).unwrap();
        seqs.entry(w).or_default().push(seq);
        if seq < cursor.next(w) {
            let bytes = store.get(&e.key).unwrap().unwrap();
            consumed.extend(read_shard_from(std::io::Cursor::new(bytes)).unwrap().games());
        }
    }
    for (w, s) in &seqs {
        let expected: Vec<u64> = (0..s.len() as u64).collect();
        assert_eq!(s, &expected, "worker {w:016x}'s shards have a hole");
    }
    let trained: BTreeSet<(u64, u64)> = trained.into_keys().collect();
    assert_eq!(trained, consumed, "trained on must be exactly the consumed shards' games");
    trained.len()
}

/// Uploads `count` shards of 4 games for `worker` (uniform-prior self-play, generation 0).
fn upload_shards(store: &Store, worker: u64, seqs: &[u64]) {
    use xiangqi_search::{SearchConfig, SelfPlayConfig, SelfPlayEvent, Shard, UniformEvaluator};
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
    xiangqi_search::play_games::<xiangqi::Game, _, _>(
        &xiangqi_search::Checked::new(search).unwrap(),
        &xiangqi_search::Checked::new(selfplay).unwrap(),
        4 * seqs.len() as u64,
        &mut UniformEvaluator,
        |e| {
            if let SelfPlayEvent::GameFinished(record, _) = e {
                records.push(record.clone());
            }
            Ok(())
        },
    )
    .unwrap();
    for (chunk, &seq) in records.chunks(4).zip(seqs) {
        let mut shard = Shard::new::<xiangqi::Game>(rules);
        for record in chunk {
            shard.push_game_of(record, worker, 0);
        }
        let bytes = xiangqi_search::write_shard_to(std::io::Cursor::new(Vec::new()), &shard)
            .unwrap()
            .into_inner();
        store.put_new(&shard_key(worker, seq), bytes).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn symbolic_link_loops_in_a_directory_store_are_passed_over_and_named() {
    use std::os::unix::fs::symlink;
    let dir = temp("loops");
    let config = config(&dir);
    let store_dir = dir.join("store");
    let url = store_dir.to_str().unwrap().to_string();
    let store = Store::open(&url, &[]).unwrap();
    let (a, b, c) = (0xa, 0xb, 0xc);
    upload_shards(&store, a, &[0, 1, 3]);
    upload_shards(&store, b, &[0, 1]);
    let shards = store_dir.join("shards");
    // A link to itself, a worker folder that is a loop (a link to the folder above it), and a
    // file of worker a's sequence linked to itself (shard 2: a's shard 3 waits behind it).
    symlink("loop", shards.join("loop")).unwrap();
    symlink(".", shards.join(format!("{c:016x}"))).unwrap();
    let a2 = shard_key(a, 2);
    symlink("000000000002.npz", store_dir.join(&a2)).unwrap();
    let run = dir.join("run");
    let mut t = trainer(&config, &run, &url, 1, &[]);
    let (ok, log) = finish(&mut t, Duration::from_secs(180), "the trainer");
    assert!(ok, "the trainer failed:\n{log}");
    for named in ["shards/loop", &format!("shards/{c:016x}"), &a2] {
        assert!(log.contains(named), "{named} not named:\n{log}");
    }
    assert!(log.contains("loop"), "{log}");
    let cursor = consumed_cursor(&run);
    assert_eq!((cursor.next(a), cursor.next(b), cursor.next(c)), (2, 2, 0), "{log}");
    assert_eq!(trained_games(&run).len(), 16, "{log}");
    fs::remove_dir_all(&dir).unwrap();
}

/// Runs `cmd`; whether it succeeded.
fn sh(cmd: &[&str]) -> bool {
    Command::new(cmd[0])
        .args(&cmd[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A way to make a folder read-only and writable again: chmod for a user other than root
/// (root writes through it), a read-only remount of a tmpfs for root, `chattr +i` otherwise.
/// `None` where none works (the test says so and is skipped).
/// Makes the store read-only (`true`) or writable (`false`); whether that worked.
type ReadOnly = Box<dyn Fn(bool) -> bool>;

fn read_only_switch(base: &Path) -> Option<(PathBuf, ReadOnly)> {
    let store = base.join("store");
    fs::create_dir_all(&store).unwrap();
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let s = store.to_str().unwrap().to_string();
    if !root {
        return Some((
            store,
            Box::new(move |ro| sh(&["chmod", "-R", if ro { "a-w" } else { "u+w" }, &s])),
        ));
    }
    if sh(&["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", &s]) {
        return Some((
            store,
            Box::new(move |ro| {
                sh(&["mount", "-o", if ro { "remount,ro" } else { "remount,rw" }, &s])
            }),
        ));
    }
    fs::create_dir_all(store.join("shards")).unwrap();
    if sh(&["chattr", "+i", &s]) && sh(&["chattr", "-i", &s]) {
        return Some((
            store,
            Box::new(move |ro| {
                let flag = if ro { "+i" } else { "-i" };
                let mut ok = true;
                for d in walk_dirs(Path::new(&s)) {
                    ok &= sh(&["chattr", flag, d.to_str().unwrap()]);
                }
                ok
            }),
        ));
    }
    None
}

fn walk_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk_dirs(&e.path()));
        }
    }
    out
}

#[test]
fn a_read_only_directory_store_is_waited_out_and_no_game_is_lost() {
    let dir = temp("readonly");
    let config = config(&dir);
    let Some((store_dir, read_only)) = read_only_switch(&dir) else {
        eprintln!(
            "skipped: no way to make a folder read-only here (chmod as root, no mount, no chattr)"
        );
        return;
    };
    let url = store_dir.to_str().unwrap().to_string();
    let run = dir.join("run");
    let log = dir.join("worker.log");
    let mut t = trainer(&config, &run, &url, 2, &[]);
    let mut w = worker(&url, &log, &[]);
    wait_for_log(&log, "shard 0 uploaded", Duration::from_secs(180));
    assert!(read_only(true), "cannot make {} read-only", store_dir.display());
    // The worker's next upload fails and is tried again, with the shard in hand.
    let during = wait_for_log(&log, "next try in", Duration::from_secs(180));
    sleep(Duration::from_secs(4));
    assert!(read_only(false), "cannot make {} writable", store_dir.display());
    let (ok, tlog) = finish(&mut t, Duration::from_secs(300), "the trainer");
    let wlog = wait_for_log(&log, "works again", Duration::from_secs(60));
    kill(&mut w);
    assert!(ok, "the trainer failed:\n{tlog}\nworker:\n{wlog}");
    assert!(during.contains("failing since"), "{during}");
    let store = Store::open(&url, &[]).unwrap();
    let games = check_exactly_once(&store, &run);
    assert!(games >= 16, "{games} games\n{tlog}");
    let _ = sh(&["umount", store_dir.to_str().unwrap()]);
    fs::remove_dir_all(&dir).unwrap();
}

/// A TCP relay from a port of its own to `target` that can be switched off (connections cut,
/// the port closed: a client is refused, as by a stopped server) and on again.
struct Relay {
    port: u16,
    up: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(target: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let conns = Arc::new(Mutex::new(Vec::<TcpStream>::new()));
        let (u, c) = (Arc::clone(&up), Arc::clone(&conns));
        std::thread::spawn(move || {
            let mut listener = Some(listener);
            loop {
                if !u.load(Ordering::SeqCst) {
                    listener = None;
                    sleep(Duration::from_millis(20));
                    continue;
                }
                let l = match &listener {
                    Some(l) => l,
                    None => match TcpListener::bind(("127.0.0.1", port)) {
                        Ok(l) => listener.insert(l),
                        Err(_) => {
                            sleep(Duration::from_millis(20));
                            continue;
                        }
                    },
                };
                l.set_nonblocking(true).unwrap();
                match l.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let Ok(server) = TcpStream::connect(&target) else { continue };
                        let mut list = c.lock().unwrap();
                        list.push(client.try_clone().unwrap());
                        list.push(server.try_clone().unwrap());
                        for (mut from, mut to) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            std::thread::spawn(move || {
                                let mut buf = [0u8; 65536];
                                while let Ok(n) = from.read(&mut buf) {
                                    if n == 0 || to.write_all(&buf[..n]).is_err() {
                                        break;
                                    }
                                }
                                let _ = to.shutdown(Shutdown::Both);
                                let _ = from.shutdown(Shutdown::Both);
                            });
                        }
                    }
                    Err(_) => sleep(Duration::from_millis(10)),
                }
            }
        });
        Relay { port, up, conns }
    }

    fn set(&self, on: bool) {
        self.up.store(on, Ordering::SeqCst);
        if !on {
            for s in self.conns.lock().unwrap().drain(..) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// The `AWS_*` settings with the endpoint replaced by `endpoint`.
fn env_with(options: &[(String, String)], endpoint: &str) -> Vec<(&'static str, String)> {
    let _ = options;
    vec![("AWS_ENDPOINT", endpoint.to_string())]
}

#[test]
fn an_s3_gateway_that_stops_answering_for_30_s_is_waited_out_and_no_game_is_lost() {
    let Some((bucket, options)) = s3() else { return };
    let endpoint = std::env::var("AWS_ENDPOINT").expect("AWS_ENDPOINT names the server");
    let target = endpoint.trim_start_matches("http://").trim_end_matches('/').to_string();
    let relay = Relay::start(target);
    let via = env_with(&options, &format!("http://127.0.0.1:{}", relay.port));
    let dir = temp("outage");
    let config = config(&dir);
    let url = format!("s3://{bucket}/outage-{}", unique());
    let run = dir.join("run");
    let log = dir.join("worker.log");
    let mut t = trainer(&config, &run, &url, 3, &via);
    let mut w = worker(&url, &log, &via);
    wait_for_log(&log, "shard 0 uploaded", Duration::from_secs(180));
    relay.set(false);
    let down = Instant::now();
    let during = wait_for_log(&log, "next try in", Duration::from_secs(60));
    while down.elapsed() < Duration::from_secs(30) {
        assert!(t.try_wait().unwrap().is_none(), "the trainer ended while the gateway was down");
        assert!(w.try_wait().unwrap().is_none(), "the worker ended while the gateway was down");
        sleep(Duration::from_millis(200));
    }
    relay.set(true);
    let (ok, tlog) = finish(&mut t, Duration::from_secs(400), "the trainer");
    let wlog = wait_for_log(&log, "works again", Duration::from_secs(120));
    kill(&mut w);
    assert!(ok, "the trainer failed:\n{tlog}\nworker:\n{wlog}");
    assert!(during.contains("failing since") && during.contains("cannot connect"), "{during}");
    let store = Store::open(&url, &options).unwrap();
    let games = check_exactly_once(&store, &run);
    assert!(games >= 24, "{games} games\n{tlog}");
    eprintln!("outage: {games} games trained on once; trainer:\n{tlog}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_bucket_and_a_wrong_secret_end_the_worker_and_the_trainer_with_their_names() {
    let Some((bucket, _)) = s3() else { return };
    let dir = temp("permanent");
    let config = config(&dir);
    let missing = format!("s3://xqz-no-such-bucket-{}/run", std::process::id());
    let real = format!("s3://{bucket}/permanent-{}", unique());
    let wrong = vec![("AWS_SECRET_ACCESS_KEY", "not-the-secret".to_string())];
    for (store, env, named) in [
        (&missing, vec![], "bucket does not exist"),
        (&real, wrong.clone(), "SignatureDoesNotMatch"),
    ] {
        let log = dir.join("worker.log");
        let mut w = worker(store, &log, &env);
        let start = Instant::now();
        let status = loop {
            if let Some(s) = w.try_wait().unwrap() {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the worker on {store} did not end within 60 s (time limit):\n{}",
                fs::read_to_string(&log).unwrap_or_default()
            );
            sleep(Duration::from_millis(100));
        };
        let wlog = fs::read_to_string(&log).unwrap();
        assert!(!status.success() && wlog.contains(named), "{store}: {wlog}");
        let mut t = trainer(&config, &dir.join("run"), store, 1, &env);
        let (ok, tlog) = finish(&mut t, Duration::from_secs(60), "the trainer");
        assert!(!ok && tlog.contains(named), "{store}: {tlog}");
        assert!(!tlog.contains("next try"), "retried a permanent failure: {tlog}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_s3_key_with_dot_dot_hides_none_of_the_keys_listed_with_it() {
    let Some((bucket, options)) = s3() else { return };
    let prefix = format!("dotdot-{}", unique());
    let store = Store::open(&format!("s3://{bucket}/{prefix}"), &options).unwrap();
    let w = 0xa;
    for seq in 0..3 {
        store.put_new(&shard_key(w, seq), vec![seq as u8; 8]).unwrap();
    }
    store.put_new(&shard_key(0xb, 0), vec![9; 8]).unwrap();
    // object_store refuses to name such a key, so boto3 writes it, as any S3 client may.
    let bad = format!("{prefix}/shards/{w:016x}/../000000000000.npz");
    let put = Command::new("/usr/bin/python3")
        .args(["-c", "import os, sys, boto3\nfrom botocore.config import Config\ns3 = boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT'], aws_access_key_id=os.environ['AWS_ACCESS_KEY_ID'], aws_secret_access_key=os.environ['AWS_SECRET_ACCESS_KEY'], region_name=os.environ.get('AWS_REGION', 'us-east-1'), config=Config(s3={'addressing_style': 'path'}))\ns3.put_object(Bucket=sys.argv[1], Key=sys.argv[2], Body=b'x')", &bucket, &bad])
        .output()
        .expect("python3 with boto3 (installed with .ci/rgw)");
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
    let (entries, problems) = store.scan("shards", None).unwrap();
    let keys: Vec<String> = entries.into_iter().map(|e| e.key).collect();
    let expected: Vec<String> =
        [shard_key(w, 0), shard_key(w, 1), shard_key(w, 2), shard_key(0xb, 0)].into();
    assert_eq!(keys, expected, "{problems:?}");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].key.ends_with("/../000000000000.npz"), "{problems:?}");
    // The trainer's listing: every shard, the bad key named.
    let pending = distributed::pending_shards(&store, &ShardCursor::default()).unwrap();
    assert_eq!(pending.shards.len(), 4, "{pending:?}");
    assert!(pending.skipped.iter().any(|(k, _)| k.contains("/../")), "{pending:?}");
}

/// A small tmpfs mounted at a folder, unmounted when dropped (lazily if still busy).
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`mount`'s syntax: `64m`) at `dir`; `None` where that is
    /// impossible (not root, no `mount`, no permission in this container).
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        fs::create_dir_all(dir).unwrap();
        let d = dir.to_str().unwrap();
        sh(&["mount", "-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", d])
            .then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let d = self.0.to_str().unwrap();
        if !sh(&["umount", d]) {
            let _ = sh(&["umount", "-l", d]);
        }
    }
}

/// A child process killed when dropped (a failed assertion leaves no trainer or worker behind).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        kill(&mut self.0);
    }
}

/// Writes zeros to `path` until the file system says it is full (nothing left but less than a
/// page); panics on any other error.
fn fill(path: &Path) {
    let mut f = fs::File::create(path).unwrap();
    for chunk in [1 << 20, 4096] {
        let zeros = vec![0u8; chunk];
        loop {
            match f.write_all(&zeros) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("cannot fill {}: {e}", path.display()),
            }
        }
    }
}

#[test]
fn a_full_directory_store_is_waited_out_by_the_trainer_and_the_worker_and_no_game_is_lost() {
    let dir = temp("full");
    let config = config(&dir);
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let fs_dir = dir.join("fs");
    let Some(mounted) = root.then(|| Tmpfs::mount(&fs_dir, "64m")).flatten() else {
        eprintln!("skipped: a full store needs a tmpfs of its own (root and mount -t tmpfs)");
        let _ = fs::remove_dir_all(&dir);
        return;
    };
    let store_dir = fs_dir.join("store");
    // Made here: the worker, started moments after the trainer, refuses a missing directory.
    fs::create_dir_all(&store_dir).unwrap();
    let url = store_dir.to_str().unwrap().to_string();
    let run = dir.join("run");
    let (wlog_path, tlog_path) = (dir.join("worker.log"), dir.join("trainer.log"));
    let mut t = Killed(trainer(&config, &run, &url, 3, &[]));
    // The trainer's standard error, copied to a file as it comes (read while it runs).
    let mut err = t.0.stderr.take().unwrap();
    let mut copy = fs::File::create(&tlog_path).unwrap();
    let copier = std::thread::spawn(move || std::io::copy(&mut err, &mut copy).map(|_| ()));
    let mut w = Killed(worker(&url, &wlog_path, &[]));
    // Generation 0 (1.6 MB) is published and the worker plays with it: fill the file system
    // but for 128 kB (a few 16 kB shards, not a net): the worker's first shards fit, the
    // trainer's next net does not, and the worker's later shards do not either.
    wait_for_log(&wlog_path, "playing with generation 0", Duration::from_secs(180));
    let reserve = fs_dir.join("reserve");
    fs::write(&reserve, vec![1u8; 128 << 10]).unwrap();
    fill(&fs_dir.join("filler"));
    fs::remove_file(&reserve).unwrap();
    let full = "the disk is full";
    let tduring = wait_for_log(&tlog_path, full, Duration::from_secs(300));
    let wduring = wait_for_log(&wlog_path, full, Duration::from_secs(300));
    // Both wait, with their periodic message, and stay alive while the disk is full.
    let since = Instant::now();
    while since.elapsed() < Duration::from_secs(5) {
        assert!(t.0.try_wait().unwrap().is_none(), "the trainer ended on a full store");
        assert!(w.0.try_wait().unwrap().is_none(), "the worker ended on a full store");
        sleep(Duration::from_millis(200));
    }
    for during in [&tduring, &wduring] {
        assert!(during.contains("failing since") && during.contains("next try in"), "{during}");
    }
    fs::remove_file(fs_dir.join("filler")).unwrap();
    let (ok, _) = finish(&mut t.0, Duration::from_secs(400), "the trainer");
    copier.join().unwrap().unwrap();
    let tlog = fs::read_to_string(&tlog_path).unwrap();
    let wlog = wait_for_log(&wlog_path, "works again", Duration::from_secs(120));
    kill(&mut w.0);
    assert!(ok, "the trainer failed:\n{tlog}\nworker:\n{wlog}");
    assert!(tlog.contains("works again") && tlog.contains("done: 3 iterations"), "{tlog}");
    let store = Store::open(&url, &[]).unwrap();
    let games = check_exactly_once(&store, &run);
    assert!(games >= 24, "{games} games\n{tlog}");
    eprintln!("full store: {games} games trained on once; trainer:\n{tlog}\nworker:\n{wlog}");
    drop(mounted);
    fs::remove_dir_all(&dir).unwrap();
}
