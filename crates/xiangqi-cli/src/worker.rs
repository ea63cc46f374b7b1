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

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use xiangqi::{Game, janggi};
use xiangqi_nn::{Device, InferenceNet, NnEvaluator, checkpoint};
use xiangqi_search::{
    GameEnv, GameKind, SelfPlayConfig, SelfPlayEvent, SelfPlayStats, Shard, game_rng,
    play_games_from, write_shard_to,
};
use xiangqi_store::{Created, Store};
use xiangqi_train::distributed::{self, LOCAL_SELFPLAY_WORKER, LatestWatch, RUN_CONFIG_KEY};

use crate::config::ConfigFile;

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
    config: ConfigFile,
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
    let config = ConfigFile::parse(&text, &origin)?;
    let dir = cache.join(format!("{generation:012}"));
    distributed::download_net(store, generation, &dir)?;
    let (net, manifest) = checkpoint::load_net(&dir, Some(&config.network), device)
        .with_context(|| format!("generation {generation} of {}", store.location()))?;
    manifest
        .expect_game(&dir, config.selfplay.game)
        .with_context(|| format!("generation {generation} of {}", store.location()))?;
    let net = InferenceNet::from_net(&net, device)?;
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
    selfplay: &SelfPlayConfig,
    which: &ShardGames,
    stop: &AtomicBool,
) -> anyhow::Result<Option<(Shard, SelfPlayStats)>> {
    let mut shard = Shard::new::<G>(selfplay.rules_for::<G>()?);
    let played = play_games_from::<G, _, _>(
        which.first,
        &l.config.search,
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

/// Runs the worker until stopped.
pub fn run(args: &WorkerArgs<'_>) -> anyhow::Result<ExitCode> {
    let store = crate::store::open(args.store)?;
    let device = crate::net::device(args.device)?;
    let id = new_worker_id();
    let cache: PathBuf = std::env::temp_dir().join(format!("xqz-worker-{id:016x}"));
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            errln!("\ninterrupt: dropping the games in flight and stopping");
        });
    }
    errln!("xqz selfplay: worker {id:016x} on store {} (device {})", store.location(), args.device);
    let result = work(args, &store, id, &cache, &device, &stop);
    let _ = std::fs::remove_dir_all(&cache);
    result
}

fn work(
    args: &WorkerArgs<'_>,
    store: &Store,
    id: u64,
    cache: &std::path::Path,
    device: &Device,
    stop: &AtomicBool,
) -> anyhow::Result<ExitCode> {
    let mut watch = LatestWatch::default();
    let mut loaded: Option<Loaded> = None;
    let mut told_waiting = false;
    let mut failed: Option<u64> = None;
    let mut seq = 0u64;
    let mut next_game = 0u64;
    let mut uploaded = 0u64;
    let started = Instant::now();
    while !stop.load(Ordering::SeqCst) && args.games.is_none_or(|g| uploaded < g) {
        // A newer net, between shards. A generation that cannot be used (damaged, or its config
        // unreadable) is reported once and tried again after the next shard; the worker keeps
        // playing with the net it has.
        match watch.poll(store) {
            Ok(Some(generation)) => match load_generation(store, generation, cache, device) {
                Ok(l) => {
                    errln!("worker {id:016x}: playing with generation {generation}");
                    loaded = Some(l);
                }
                Err(e) => {
                    if failed != Some(generation) {
                        errln!(
                            "worker {id:016x}: generation {generation} cannot be used ({e:#}); {}",
                            match &loaded {
                                Some(l) => format!("keeping generation {}", l.generation),
                                None => "waiting for a usable one".to_string(),
                            }
                        );
                        failed = Some(generation);
                    }
                    watch = LatestWatch::default();
                    if loaded.is_none() && !sleep_unless_stopped(Duration::from_secs(2), stop) {
                        break;
                    }
                }
            },
            Ok(None) => {}
            Err(e) => {
                errln!("worker {id:016x}: cannot read the newest generation ({e:#}); retrying");
                if !sleep_unless_stopped(Duration::from_secs(5), stop) {
                    break;
                }
                if loaded.is_none() {
                    continue;
                }
            }
        }
        let Some(l) = loaded.as_mut() else {
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
        let mut selfplay = l.config.selfplay.clone();
        if let Some(t) = args.threads {
            selfplay.threads = t;
        }
        let base = args.seed.unwrap_or(selfplay.seed);
        selfplay.seed = rand::RngExt::random(&mut game_rng(base ^ id, seq));
        let games = u64::from(selfplay.games_per_shard.max(1))
            .min(args.games.map_or(u64::MAX, |g| g - uploaded));
        let generation = u32::try_from(l.generation).unwrap_or(u32::MAX - 1);
        let shard_games = ShardGames { first: next_game, games, worker: id, generation };
        let played = match selfplay.game {
            GameKind::Xiangqi => play_shard::<Game>(l, &selfplay, &shard_games, stop)?,
            GameKind::Janggi => play_shard::<janggi::Game>(l, &selfplay, &shard_games, stop)?,
        };
        let Some((shard, stats)) = played else { break };
        let bytes =
            write_shard_to(std::io::Cursor::new(Vec::new()), &shard).context("shard")?.into_inner();
        let size = bytes.len();
        // Never overwrite. A name that exists holds these very bytes when an upload whose
        // answer was lost was retried (the client retries failed requests): done. Anything else
        // there (only if this id was used before) moves the shard to the next number.
        loop {
            let key = distributed::shard_key(id, seq);
            if store.put_new(&key, bytes.clone())? == Created::New
                || store.get(&key)?.is_some_and(|b| b == bytes)
            {
                break;
            }
            seq += 1;
        }
        seq += 1;
        next_game += games;
        uploaded += games;
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        errln!(
            "worker {id:016x}: shard {} uploaded ({games} games, {} samples, {:.1} kB, generation {}); {uploaded} games, {:.2} games/s, {:.0} sims/s this shard",
            seq - 1,
            shard.len(),
            size as f64 / 1e3,
            l.generation,
            uploaded as f64 / secs,
            stats.simulations as f64 / stats.elapsed.as_secs_f64().max(1e-9),
        );
    }
    errln!("worker {id:016x}: stopped after {uploaded} games in {seq} shard(s)");
    Ok(ExitCode::SUCCESS)
}
