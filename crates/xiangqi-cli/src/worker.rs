//! `xqz selfplay --store URL [--threads N] [--device D] [--seed S] [--games N]`: a self-play
//! worker of a distributed run.
//!
//! It needs no config of its own: it reads the run's config (`run.toml`) and the newest net
//! from the store that `xqz train --store URL` publishes to, plays `selfplay.games_per_shard`
//! games at a time, uploads each batch as one shard (create-only, under a random worker id, so
//! that it is never overwritten and a kill mid-upload leaves nothing), and between shards takes
//! a newer net if the trainer has published one (a conditional GET of `models/latest`). It runs
//! until Ctrl-C or kill (the games in flight are dropped) or until `--games` games are uploaded.
//! Any number of workers may run on any number of machines, started and stopped at any time.
//!
//! Seeds: each worker's games are seeded by its id, so two workers never play the same games;
//! `--seed` (default `selfplay.seed`) is mixed in.
//!
//! Its files: a folder `xqz-worker-<id>` in the system's temporary directory (`TMPDIR`), where
//! it unpacks each net it downloads. It is removed on every way out the worker has: the end of
//! `--games`, an error, Ctrl-C, SIGTERM and SIGHUP (a stop, as Ctrl-C is). A `kill -9` leaves
//! it, so each worker keeps a `lock` file in its folder locked while it runs (the system drops
//! the lock of a process that ends in any way) and a worker that starts removes the folders
//! whose lock it can take: those of workers that are gone.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use xiangqi::{Game, janggi};
use xiangqi_nn::{Device, InferenceNet, NnEvaluator, checkpoint};
use xiangqi_search::{
    Checked, ForkPool, ForkPools, GameEnv, GameKind, SelfPlayConfig, SelfPlayEvent, SelfPlayStats,
    Shard, game_rng, play_games_forking, write_shard_to,
};
use xiangqi_store::{Created, Store};
use xiangqi_train::distributed::{self, LOCAL_SELFPLAY_WORKER, LatestWatch, RUN_CONFIG_KEY};
use xiangqi_train::pipeline::CheckedRunConfig;

/// What the worker was asked for on the command line.
pub struct WorkerArgs<'a> {
    /// The store's location.
    pub store: &'a str,
    /// Search threads (overrides `selfplay.threads`).
    pub threads: Option<u32>,
    /// The network's device.
    pub device: &'a str,
    /// Seed mixed into the worker's own.
    pub seed: Option<u64>,
    /// Stop after this many games uploaded.
    pub games: Option<u64>,
}

/// A random worker id: the clock, the process id and the address of a stack value, mixed; never
/// [`LOCAL_SELFPLAY_WORKER`].
fn new_worker_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let local = 0u8;
    let mix = nanos ^ u64::from(std::process::id()).rotate_left(32) ^ (&local as *const u8 as u64);
    let id = rand::RngExt::random::<u64>(&mut game_rng(mix, u64::from(std::process::id())));
    if id == LOCAL_SELFPLAY_WORKER { 1 } else { id }
}

/// The name of a worker's folder in the temporary directory, before its id.
const CACHE_PREFIX: &str = "xqz-worker-";

/// The file a worker keeps locked in its folder while it runs.
const CACHE_LOCK: &str = "lock";

/// How old a folder without a lock must be to be removed as a leftover (earlier versions
/// left such folders; a worker that is setting its folder up has its lock in it within
/// moments).
const UNLOCKED_LEFTOVER_AGE: Duration = Duration::from_secs(3600);

/// A worker's folder in the temporary directory, locked while it lives; removed when dropped.
struct Cache {
    dir: PathBuf,
    /// Locked (flock) while the worker runs; the system unlocks it however the process ends.
    _lock: fs::File,
}

impl Cache {
    /// Makes `<temp>/xqz-worker-<id>` with its lock taken. The lock file is locked before it
    /// gets its name, so another worker never finds it unlocked while this one lives.
    fn create(temp: &Path, id: u64) -> anyhow::Result<Cache> {
        let dir = temp.join(format!("{CACHE_PREFIX}{id:016x}"));
        let mut tries = 0;
        loop {
            let made = (|| -> std::io::Result<fs::File> {
                fs::create_dir_all(&dir)?;
                let staged = dir.join(format!("{CACHE_LOCK}.new"));
                let lock = fs::File::create(&staged)?;
                lock.lock()?;
                fs::rename(&staged, dir.join(CACHE_LOCK))?;
                Ok(lock)
            })();
            match made {
                Ok(lock) => return Ok(Cache { dir, _lock: lock }),
                // Another worker's sweep took the folder while it was empty: make it again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 3 => tries += 1,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("cannot make the worker's folder {}", dir.display())
                    });
                }
            }
        }
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Removes the folders of workers that are gone from `temp` (their lock can be taken; or,
/// without a lock, as an earlier version left them: empty, or untouched for an hour), other
/// than `own`. Returns the folders removed.
fn remove_stale_caches(temp: &Path, own: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(temp) else { return removed };
    for entry in entries.flatten() {
        let dir = entry.path();
        let ours = entry.file_name().to_str().is_some_and(|n| n.starts_with(CACHE_PREFIX));
        if !ours || dir == own || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let gone = match fs::File::open(dir.join(CACHE_LOCK)) {
            // Its worker holds the lock while it lives.
            Ok(lock) => lock.try_lock().is_ok(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let empty = fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_none());
                let old = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age >= UNLOCKED_LEFTOVER_AGE);
                if empty {
                    // Not remove_dir_all: a worker setting up puts its lock in at once.
                    if fs::remove_dir(&dir).is_ok() {
                        removed.push(dir);
                    }
                    continue;
                }
                old
            }
            Err(_) => false,
        };
        if gone && fs::remove_dir_all(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

/// Sleeps `d` in short slices; `false` if a stop was asked for meanwhile.
fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50).min(d));
    }
    !stop.load(Ordering::SeqCst)
}

/// The net of a generation, with the config it was published under.
struct Loaded {
    generation: u64,
    config: CheckedRunConfig,
    evaluator: NnEvaluator,
}

/// Downloads and loads `generation` and the run's config.
fn load_generation(
    store: &Store,
    generation: u64,
    cache: &std::path::Path,
    device: &Device,
) -> anyhow::Result<Loaded> {
    let text = store
        .get(RUN_CONFIG_KEY)?
        .with_context(|| format!("{}: no {RUN_CONFIG_KEY} yet", store.location()))?;
    let text = String::from_utf8(text).context("run.toml is not UTF-8")?;
    let origin = format!("{}/{RUN_CONFIG_KEY}", store.location());
    let config = crate::config::parse_checked(&text, &origin)?;
    let dir = cache.join(format!("{generation:012}"));
    distributed::download_net(store, generation, &dir)?;
    let (net, manifest) = checkpoint::load_net(&dir, Some(config.network().get()), device)
        .with_context(|| format!("generation {generation} of {}", store.location()))?;
    manifest
        .expect_game(&dir, config.game())
        .with_context(|| format!("generation {generation} of {}", store.location()))?;
    let precision = config.run().precision;
    let net = InferenceNet::from_net(&net, device)?.with_precision(precision);
    // Said once per worker, as the trainer says it once per run.
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if precision == xiangqi_nn::Precision::Bf16
        && let Some(reason) = net.bf16_unavailable()
        && !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        errln!(
            "warning: the run's loop.precision = \"bf16\" is not available here ({reason}); \
             this worker computes in f32"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Loaded { generation, config, evaluator: NnEvaluator::new(net) })
}

/// Which games a shard holds.
struct ShardGames {
    /// The first game's number.
    first: u64,
    /// How many.
    games: u64,
    /// The worker.
    worker: u64,
    /// The net's generation.
    generation: u32,
}

/// Plays one shard's games of game `G`; `None` if stopped.
fn play_shard<G: GameEnv>(
    l: &mut Loaded,
    forks: &mut ForkPool<G>,
    selfplay: &Checked<SelfPlayConfig>,
    which: &ShardGames,
    stop: &AtomicBool,
) -> anyhow::Result<Option<(Shard, SelfPlayStats)>> {
    let mut shard = Shard::new::<G>(selfplay.rules_for::<G>()?);
    let played = play_games_forking::<G, _, _>(
        which.first,
        forks,
        l.config.search(),
        selfplay,
        which.games,
        &mut l.evaluator,
        |event| {
            if let SelfPlayEvent::GameFinished(record, _) = event {
                shard.push_game_of(record, which.worker, which.generation);
            }
            if stop.load(Ordering::SeqCst) { Err("interrupted".into()) } else { Ok(()) }
        },
    );
    match played {
        Ok(stats) => Ok(Some((shard, stats))),
        Err(_) if stop.load(Ordering::SeqCst) => Ok(None),
        Err(e) => Err(e).context("self-play"),
    }
}

/// Whether `e` is a failure of the store (not of the net or the config it holds): one that
/// reaches the worker is permanent or a stop, as the store waits out the others.
fn store_failure(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<xiangqi_store::StoreError>().is_some()
            || matches!(
                c.downcast_ref::<distributed::DistributedError>(),
                Some(distributed::DistributedError::Store(_))
            )
    })
}

/// What became of a shard whose upload was stopped while retrying, given whether its key is in
/// the store (`None`: the store did not answer).
fn stopped_upload_fate(there: Option<bool>) -> &'static str {
    match there {
        Some(true) => "was uploaded after all",
        Some(false) => "was not uploaded and is dropped",
        None => "may have been uploaded (the store did not answer); if it was, the trainer uses it",
    }
}

/// Runs the worker until stopped.
pub fn run(args: &WorkerArgs<'_>) -> anyhow::Result<ExitCode> {
    // Set by Ctrl-C, SIGTERM or SIGHUP from here on (a store waiting out a failure stops); a
    // second signal more than a second after the first exits at once, removing the folder.
    let stop = Arc::new(AtomicBool::new(false));
    let folder: Arc<Mutex<Option<PathBuf>>> = Arc::new(Mutex::new(None));
    {
        let folder = Arc::clone(&folder);
        crate::store::on_stop_signal(
            &stop,
            || errln!("\ninterrupt: dropping the games in flight and stopping"),
            move || {
                let held = folder.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(dir) = held.as_ref() {
                    let _ = fs::remove_dir_all(dir);
                }
                std::process::exit(130);
            },
        );
    }
    // A worker never creates the store: a directory that is not there is a wrong path.
    crate::store::require_existing_directory(args.store)?;
    let store = match crate::store::open(args.store, &stop) {
        Ok(store) => store,
        // Stopped while the store did not answer: nothing was made yet.
        Err(e) if stop.load(Ordering::SeqCst) => {
            errln!("xqz selfplay: stopped before the store answered ({e:#})");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e),
    };
    let device = crate::net::device(args.device)?;
    let id = new_worker_id();
    let temp = std::env::temp_dir();
    let cache = Cache::create(&temp, id)?;
    *folder.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(cache.dir.clone());
    for dir in remove_stale_caches(&temp, &cache.dir) {
        errln!("xqz selfplay: removed {}, the folder of a worker that is gone", dir.display());
    }
    errln!("xqz selfplay: worker {id:016x} on store {} (device {})", store.location(), args.device);
    // The folder goes when `cache` is dropped, on every way out of here.
    work(args, &store, id, &cache.dir, &device, &stop)
}

/// The worker's loop, in stages: between shards a newer net is picked up
/// ([`NetPickup::pick_up`]), then a shard is played ([`play_next_shard`]) and uploaded
/// ([`upload_shard`]), until a stop or `--games` games uploaded.
fn work(
    args: &WorkerArgs<'_>,
    store: &Store,
    id: u64,
    cache: &std::path::Path,
    device: &Device,
    stop: &AtomicBool,
) -> anyhow::Result<ExitCode> {
    let mut nets = NetPickup::default();
    let mut told_waiting = false;
    let mut seq = 0u64;
    let mut next_game = 0u64;
    let mut uploaded = 0u64;
    // Finished games that the next shards' games fork from (`selfplay.fork_game_prob`).
    let mut forks = ForkPools::default();
    let started = Instant::now();
    while !stop.load(Ordering::SeqCst) && args.games.is_none_or(|g| uploaded < g) {
        match nets.pick_up(store, id, cache, device, stop)? {
            Next::Play => {}
            Next::Again => continue,
            Next::Stop => break,
        }
        let Some(l) = nets.loaded.as_mut() else {
            if !told_waiting {
                errln!(
                    "worker {id:016x}: waiting for a trainer to publish a net (xqz train --store {})",
                    store.location()
                );
                told_waiting = true;
            }
            if !sleep_unless_stopped(Duration::from_secs(1), stop) {
                break;
            }
            continue;
        };
        let games = u64::from(l.config.selfplay().games_per_shard.max(1))
            .min(args.games.map_or(u64::MAX, |g| g - uploaded));
        let Some((shard, stats)) =
            play_next_shard(args, l, &mut forks, id, seq, next_game, games, stop)?
        else {
            break;
        };
        let bytes =
            write_shard_to(std::io::Cursor::new(Vec::new()), &shard).context("shard")?.into_inner();
        if !upload_shard(store, id, &bytes, &mut seq, games)? {
            errln!("worker {id:016x}: stopped after {uploaded} games in {seq} shard(s)");
            return Ok(ExitCode::SUCCESS);
        }
        seq += 1;
        next_game += games;
        uploaded += games;
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        errln!(
            "worker {id:016x}: shard {} uploaded ({games} games, {} samples, {:.1} kB, generation {}); {uploaded} games, {:.2} games/s, {:.0} sims/s this shard",
            seq - 1,
            shard.len(),
            bytes.len() as f64 / 1e3,
            l.generation,
            uploaded as f64 / secs,
            stats.simulations as f64 / stats.elapsed.as_secs_f64().max(1e-9),
        );
    }
    errln!("worker {id:016x}: stopped after {uploaded} games in {seq} shard(s)");
    Ok(ExitCode::SUCCESS)
}

/// What the worker does after looking for a newer net ([`NetPickup::pick_up`]).
enum Next {
    /// Play a shard with the net in hand (or wait for one, if none is).
    Play,
    /// Look again at once.
    Again,
    /// Stop (asked to).
    Stop,
}

/// The worker's net and what it remembers of the generations it could not use.
#[derive(Default)]
struct NetPickup {
    watch: LatestWatch,
    /// The net it plays with.
    loaded: Option<Loaded>,
    /// The last generation that could not be used (reported once).
    failed: Option<u64>,
    /// The last generation found deleted before it could be downloaded.
    pruned: Option<u64>,
}

impl NetPickup {
    /// Between shards: loads a newer net if the store has one. A generation that cannot be used
    /// (damaged, or its config unreadable) is reported once and tried again after the next
    /// shard; the worker keeps playing with the net it has.
    ///
    /// # Errors
    /// The store fails for good (a bucket that does not exist, refused credentials).
    fn pick_up(
        &mut self,
        store: &Store,
        id: u64,
        cache: &std::path::Path,
        device: &Device,
        stop: &AtomicBool,
    ) -> anyhow::Result<Next> {
        match self.watch.poll(store) {
            // The net in hand (`latest` read again after a failed look): nothing to load.
            Ok(Some(generation))
                if self.loaded.as_ref().is_some_and(|l| l.generation == generation) => {}
            Ok(Some(generation)) => match load_generation(store, generation, cache, device) {
                Ok(l) => {
                    errln!("worker {id:016x}: playing with generation {generation}");
                    self.loaded = Some(l);
                }
                // The store waits out transient failures: one that comes here is for good (a
                // bucket that does not exist, refused credentials), or a stop.
                Err(_) if stop.load(Ordering::SeqCst) => return Ok(Next::Stop),
                Err(e) if store_failure(&e) => {
                    return Err(e.context(format!("worker {id:016x}: the store fails")));
                }
                // Deleted by the trainer (it keeps loop.store_keep_nets nets) after this worker
                // read `latest`: the newest is there, take it at once.
                Err(_)
                    if self.pruned != Some(generation)
                        && !store.exists(&distributed::model_key(generation)).unwrap_or(true) =>
                {
                    errln!(
                        "worker {id:016x}: generation {generation} is not in the store (the \
                         trainer keeps only the newest nets, so it was deleted before it could be \
                         downloaded, or it was never published); taking the newest"
                    );
                    self.pruned = Some(generation);
                    self.watch = LatestWatch::default();
                    return Ok(Next::Again);
                }
                Err(e) => {
                    if self.failed != Some(generation) {
                        errln!(
                            "worker {id:016x}: generation {generation} cannot be used ({e:#}); {}",
                            match &self.loaded {
                                Some(l) => format!("keeping generation {}", l.generation),
                                None => "waiting for a usable one".to_string(),
                            }
                        );
                        self.failed = Some(generation);
                    }
                    self.watch = LatestWatch::default();
                    if self.loaded.is_none() && !sleep_unless_stopped(Duration::from_secs(2), stop)
                    {
                        return Ok(Next::Stop);
                    }
                }
            },
            Ok(None) => {}
            Err(_) if stop.load(Ordering::SeqCst) => return Ok(Next::Stop),
            Err(e @ distributed::DistributedError::Store(_)) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("worker {id:016x}: reading the newest generation")));
            }
            Err(e) => {
                errln!("worker {id:016x}: cannot read the newest generation ({e:#}); retrying");
                if !sleep_unless_stopped(Duration::from_secs(5), stop) {
                    return Ok(Next::Stop);
                }
                if self.loaded.is_none() {
                    return Ok(Next::Again);
                }
            }
        }
        Ok(Next::Play)
    }
}

/// Plays the worker's next shard of `games` games with the net in hand, under the run's
/// `[selfplay]` (threads and seed as the worker was told; each shard's seed drawn from the
/// base seed, the worker id and the shard's number). `None` if stopped.
#[allow(clippy::too_many_arguments)]
fn play_next_shard(
    args: &WorkerArgs<'_>,
    l: &mut Loaded,
    forks: &mut ForkPools,
    id: u64,
    seq: u64,
    first_game: u64,
    games: u64,
    stop: &AtomicBool,
) -> anyhow::Result<Option<(Shard, SelfPlayStats)>> {
    let mut selfplay = l.config.selfplay().clone().into_inner();
    if let Some(t) = args.threads {
        selfplay.threads = t;
    }
    let base = args.seed.unwrap_or(selfplay.seed);
    selfplay.seed = rand::RngExt::random(&mut game_rng(base ^ id, seq));
    // The shard's own threads and seed: new values, checked as such.
    let selfplay = Checked::new(selfplay).context("--threads")?;
    let generation = u32::try_from(l.generation).unwrap_or(u32::MAX - 1);
    let shard_games = ShardGames { first: first_game, games, worker: id, generation };
    match selfplay.game {
        GameKind::Xiangqi => play_shard(l, forks.of::<Game>(), &selfplay, &shard_games, stop),
        GameKind::Janggi => {
            play_shard(l, forks.of::<janggi::Game>(), &selfplay, &shard_games, stop)
        }
    }
}

/// Uploads a shard's `bytes` as the worker's shard `seq`, moving to the next free number
/// (`seq` is left at the one used). `false` if a stop cut the upload short (its fate, as the
/// store tells it, is reported).
///
/// Never overwrites. A name that exists holds these very bytes when an upload whose answer
/// was lost was retried (the client retries failed requests): done. Anything else there (only
/// if this id was used before) moves the shard to the next number. The store waits out
/// transient failures (a server down, a full disk) with the shard in hand, so no game is lost
/// to them; a stop or a permanent failure drops it.
///
/// # Errors
/// A permanent store failure: the shard is dropped.
fn upload_shard(
    store: &Store,
    id: u64,
    bytes: &[u8],
    seq: &mut u64,
    games: u64,
) -> anyhow::Result<bool> {
    let upload = |seq: u64| -> Result<bool, xiangqi_store::StoreError> {
        let key = distributed::shard_key(id, seq);
        Ok(store.put_new(&key, bytes.to_vec())? == Created::New
            || store.get(&key)?.is_some_and(|b| b == bytes))
    };
    loop {
        match upload(*seq) {
            Ok(true) => return Ok(true),
            Ok(false) => *seq += 1,
            Err(e @ xiangqi_store::StoreError::Stopped { .. }) => {
                // A try that failed may have reached the store all the same: one quick look,
                // without waiting out failures, says which.
                let key = distributed::shard_key(id, *seq);
                let there = crate::store::open_impatient(store.location())
                    .and_then(|s| Ok(s.exists(&key)?));
                errln!(
                    "worker {id:016x}: {e}: shard {} ({games} games) {}",
                    *seq,
                    stopped_upload_fate(there.ok())
                );
                return Ok(false);
            }
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!(
                    "worker {id:016x}: shard {} ({games} games) cannot be uploaded and is dropped",
                    *seq
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stopped_upload_fate;

    #[test]
    fn a_stopped_upload_is_reported_by_what_the_store_says() {
        assert_eq!(stopped_upload_fate(Some(true)), "was uploaded after all");
        assert_eq!(stopped_upload_fate(Some(false)), "was not uploaded and is dropped");
        assert!(stopped_upload_fate(None).starts_with("may have been uploaded"));
    }
}
