//! `xqz train [--config FILE] [--run-dir DIR] [--resume] [--threads N] [--iterations N]
//! [--hours H] [--device D]`.
//!
//! Runs the training loop of `xiangqi_train::pipeline` (self-play → replay window → optimizer
//! steps → checkpoints → arena) until Ctrl-C (which checkpoints and exits cleanly), a budget of
//! the config's `[loop]` section, `--iterations` or `--hours`.
//!
//! The run directory (default `runs/<config name>`) receives:
//!
//! | path | what |
//! |---|---|
//! | `config.toml` | the resolved config (every key) |
//! | `checkpoints/ckpt-NNNNNN/` | checkpoints after N iterations (`ckpt-000000` = the initial net) |
//! | `shards/shard-NNNNNN.npz` | the replay shards of each iteration |
//! | `tensorboard/` | TensorBoard event files (`tensorboard --logdir runs/NAME/tensorboard`) |
//! | `metrics.csv`, `arena.csv` | one row per iteration, one row per arena match |
//! | `games.pgn` | sample self-play games of each iteration |
//! | `lock` | held (advisory lock) while an `xqz train` runs here: a second one is refused |
//!
//! With `--store URL` the run is distributed: `xqz selfplay --store URL` workers play the games
//! and this trainer gathers them from the store, trains, and publishes each new net there
//! (`xiangqi_train::distributed`; `loop.local_selfplay_threads` lets it play some itself).
//!
//! TensorBoard scalars: per optimizer step `loss/*`, `policy/entropy`, `value/accuracy`,
//! `train/learning_rate`, `train/grad_norm`; per iteration (x = iteration) `selfplay/*` (games/s,
//! simulations/s, evaluations/s, batch fill, mean game length, share of each ending,
//! false-resignation rate), `train/samples_per_sec`, `replay/window_samples`; per arena match
//! (x = iteration) `arena/<opponent>/score` and `arena/<opponent>/elo` (with `elo_low`, `elo_high`).

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use tensorboard_rs::summary_writer::SummaryWriter;
use xiangqi::OutcomeReason;
use xiangqi_nn::StepMetrics;
use xiangqi_search::SelfPlayStats;
use xiangqi_train::pipeline::{
    ArenaReport, IterationReport, Observer, RunPaths, StopReason, TrainingRun,
};

use crate::config::{BUILTIN_CPU, ConfigFile};

/// Arguments of `xqz train`.
#[derive(clap::Args)]
pub struct Args {
    /// Config file (TOML); default: the built-in CPU config (`configs/cpu.toml`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Run directory; default `runs/<config name>`.
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Continue the run in the run directory from its last checkpoint.
    #[arg(long)]
    resume: bool,
    /// Threads for self-play and the network (overrides `selfplay.threads`; 0 = all cores).
    #[arg(long)]
    threads: Option<u32>,
    /// Stop after this many iterations of this invocation (in addition to the config's
    /// budgets, which may stop the run first: a store run's iteration takes whole shards, so it
    /// can take more steps than `loop.games_per_iteration` alone would).
    #[arg(long)]
    iterations: Option<u64>,
    /// Stop after this many hours of wall time of this invocation (e.g. 1, or 0.25 for 15
    /// minutes): the run stops as Ctrl-C stops it, mid-iteration if need be, writes a
    /// checkpoint and can go on with --resume. The progress line shows the time left.
    #[arg(long, value_name = "H", value_parser = parse_hours)]
    hours: Option<f64>,
    /// No progress bar (log lines only).
    #[arg(long)]
    quiet: bool,
    /// The network's device: cpu, wgpu, wgpu:N or cuda:N (overrides `loop.device`).
    #[arg(long)]
    device: Option<String>,
    /// Distributed self-play: the store where `xqz selfplay --store` workers send their games
    /// and this trainer publishes its nets: a directory (also on a shared mount) or
    /// s3://bucket/prefix (credentials and endpoint from the AWS_* variables).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Pretrain a new run on these shards before its first self-play: a directory of shards
    /// that `xqz import` or `xqz label` wrote, or one shard (overrides `loop.pretrain_shards`).
    #[arg(long, value_name = "DIR")]
    pretrain: Option<PathBuf>,
    /// Optimizer steps of the pretraining (overrides `loop.pretrain_steps`; default: each
    /// sample `loop.train_ratio` times on average).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=i64::MAX as u64))]
    pretrain_steps: Option<u64>,
}

/// `--hours`: a finite number of hours above 0 and at most a year.
fn parse_hours(text: &str) -> Result<f64, String> {
    let h: f64 = text.trim().parse().map_err(|_| format!("'{text}' is not a number of hours"))?;
    if h.is_finite() && h > 0.0 && h <= 24.0 * 366.0 {
        Ok(h)
    } else {
        Err(format!("{text}: must be above 0 and at most 8784 (a year)"))
    }
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let (mut config, name) = load_config(args)?;
    if let Some(t) = args.threads {
        config.selfplay.threads = t;
        config.selfplay.validate().map_err(|e| anyhow::anyhow!("--threads {t}: {e}"))?;
    }
    let threads = match config.selfplay.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n as usize,
    };
    // The network's CPU backend uses rayon's global pool.
    let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
    if let Some(d) = &args.device {
        config.run.device = d.clone();
    }
    if let Some(dir) = &args.pretrain {
        let text = dir.to_str().with_context(|| {
            format!(
                "--pretrain {}: the path must be UTF-8 (it is kept in the run's config)",
                dir.display()
            )
        })?;
        config.run.pretrain_shards = text.to_string();
    }
    if let Some(n) = args.pretrain_steps {
        if config.run.pretrain_shards.is_empty() && !args.resume {
            anyhow::bail!(
                "--pretrain-steps needs shards to pretrain on: --pretrain DIR or loop.pretrain_shards"
            );
        }
        config.run.pretrain_steps = n;
    }
    // A new run's pretraining shards must be there before the run directory is made.
    let pretrain = Path::new(&config.run.pretrain_shards);
    if !args.resume && !config.run.pretrain_shards.is_empty() {
        if !pretrain.exists() {
            anyhow::bail!(
                "pretraining shards {}: no such directory or file (loop.pretrain_shards or --pretrain)",
                pretrain.display()
            );
        }
        // Kept absolute in the run's config and its checkpoints, so that a resume from another
        // directory finds the shards.
        let absolute = fs::canonicalize(pretrain)
            .with_context(|| format!("pretraining shards {}", pretrain.display()))?;
        if let Some(text) = absolute.to_str() {
            config.run.pretrain_shards = text.to_string();
        }
    }
    // The device is checked before anything is written.
    let device = crate::net::device(&config.run.device)?;

    let run_dir = args.run_dir.clone().unwrap_or_else(|| Path::new("runs").join(&name));
    // The run's name is its directory's (`runs/<config name>` unless --run-dir names another),
    // at the start and on every resume alike.
    let name = run_dir
        .file_name()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .map_or(name, str::to_string);
    // Nothing is created before the directory is known to be the right kind: a run to resume,
    // or a new or empty directory for a new run (a user's own files are never overwritten).
    check_run_dir(&run_dir, args.resume)?;
    // The store opens before anything is written, so that a bad location leaves nothing; a new
    // run needs a store without another run's nets.
    if args.store.is_some() && config.run.resign_target_false_positive > 0.0 {
        anyhow::bail!(
            "loop.resign_target_false_positive: self-tuning resignation is not supported with \
             --store (the workers do not report their resignation counts); set it to 0 and use \
             a fixed selfplay.resign_threshold"
        );
    }
    // Set by Ctrl-C, SIGTERM or SIGHUP, from here on (a store waiting out a failure stops); a
    // second signal more than a second after the first exits at once.
    let stop = Arc::new(AtomicBool::new(false));
    crate::store::on_stop_signal(
        &stop,
        || errln!("\ninterrupt: finishing the current step and writing a checkpoint"),
        || {
            errln!("\nsecond interrupt: exiting without a checkpoint");
            std::process::exit(130);
        },
    );
    let store = match args.store.as_deref().map(|s| crate::store::open(s, &stop)).transpose() {
        Ok(store) => store,
        // Stopped while the store did not answer: nothing is written before it does.
        Err(e) if stop.load(Ordering::SeqCst) => {
            errln!("xqz train: stopped before the store answered ({e:#}); nothing was written");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e),
    };
    if let Some(store) = &store
        && !args.resume
        && let Some(g) = xiangqi_train::distributed::latest_generation(store)?
    {
        anyhow::bail!(
            "--store {}: it already holds the nets of a run (generation {g}): resume that run \
             (--resume with its run directory), or give a new run an empty store",
            store.location()
        );
    }
    fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create the run directory {}", run_dir.display()))?;
    // One trainer per run directory: an advisory lock on `RUN/lock`, held until this process
    // ends (the system releases it on any exit, kill -9 included).
    let lock_path = run_dir.join("lock");
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => anyhow::bail!(
            "another xqz train is using the run directory {} (it holds {}); stop it first or \
             choose another --run-dir",
            run_dir.display(),
            lock_path.display()
        ),
        Err(fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", lock_path.display()));
        }
    }
    let paths = RunPaths::under(&run_dir);
    let mut training = if args.resume {
        TrainingRun::resume_on(config.run_config(), paths.clone(), device)?
    } else {
        TrainingRun::create_on(config.run_config(), paths.clone(), device)?
    };
    for (path, reason) in training.skipped() {
        errln!("warning: passed over {}: {reason}", path.display());
    }
    if args.resume {
        if !training.skipped().is_empty() {
            errln!(
                "warning: resuming from iteration {} (the newest checkpoint that loads)",
                training.iteration()
            );
        }
        // Reports of iterations (and arenas) after the checkpoint are played again: drop them,
        // so that each completed iteration has exactly one row.
        let last_arena = training.last_arena_iteration().unwrap_or(0);
        for (file, keep_to, header) in [
            ("metrics.csv", training.iteration(), METRICS_HEADER),
            ("arena.csv", last_arena, ARENA_HEADER),
        ] {
            // A file of an earlier version first gets this version's columns (or, with columns
            // of its own, is moved aside whole), so that no row of it is dropped unread.
            if let Some(aside) = upgrade_csv(&run_dir.join(file), header)? {
                errln!(
                    "warning: {file} has columns this version does not write; moved aside to {}",
                    aside.display()
                );
            }
            let dropped = truncate_csv(&run_dir.join(file), keep_to)?;
            if dropped > 0 {
                errln!(
                    "{file}: dropped {dropped} row(s) after iteration {keep_to}, which the resumed run plays again"
                );
            }
        }
    }
    write_atomically(&run_dir.join("config.toml"), config.to_toml()?.as_bytes())?;
    if let Some(store) = store {
        let location = store.location().to_string();
        training.attach_store(store)?;
        // The workers' config: written after the store is claimed (a second trainer is refused
        // before it can overwrite the owner's).
        training
            .store()
            .expect("attached")
            .put(xiangqi_train::distributed::RUN_CONFIG_KEY, config.to_toml()?.into_bytes())
            .context("publishing the run's config")?;
        errln!(
            "store {location}: generation {} published; start workers with: xqz selfplay --store {location}",
            training.iteration()
        );
    }

    let deadline = args.hours.map(|h| started + Duration::from_secs_f64(h * 3600.0));
    let mut observer = CliObserver::new(&run_dir, stop, args.quiet, &config, deadline)?;
    errln!(
        "xqz train: run '{}' in {} on device {} ({} iterations done, {} steps); TensorBoard: tensorboard --logdir {}",
        name,
        run_dir.display(),
        config.run.device,
        training.iteration(),
        training.trainer().step_count(),
        run_dir.join("tensorboard").display()
    );
    let reason = training.run(args.iterations, &mut observer)?;
    observer.finish();
    // Every way out of `run` leaves the state in a checkpoint: the end of the last iteration,
    // or (interrupted while training) the steps taken so far.
    let dir = xiangqi_train::pipeline::list_checkpoints(&paths.checkpoints)
        .ok()
        .and_then(|c| c.last().map(|(_, d)| d.clone()))
        .unwrap_or_else(|| paths.checkpoints.clone());
    errln!(
        "{}: {} iterations, {} optimizer steps, {} self-play samples, {:.1} min; checkpoint {}",
        match reason {
            StopReason::Interrupted if observer.timed_out => "time is up",
            StopReason::Interrupted => "stopped",
            StopReason::Budget => "budget spent",
            StopReason::Iterations => "done",
        },
        training.iteration(),
        training.trainer().step_count(),
        training.total_samples(),
        training.elapsed().as_secs_f64() / 60.0,
        dir.display()
    );
    if reason == StopReason::Interrupted && observer.timed_out {
        errln!(
            "--hours {}: the time limit of this invocation was reached",
            args.hours.unwrap_or(0.0)
        );
    }
    if let (Some(n), StopReason::Budget) = (args.iterations, reason)
        && observer.iterations_done < n
    {
        errln!(
            "--iterations {n}: {} done in this invocation when the config's budget stopped the run",
            observer.iterations_done
        );
    }
    if reason == StopReason::Interrupted {
        errln!(
            "to go on: xqz train --resume --run-dir {}{}",
            run_dir.display(),
            args.store.as_deref().map_or(String::new(), |s| format!(" --store {s}"))
        );
    }
    if let Some(s) = &args.store {
        errln!(
            "the workers (xqz selfplay --store {s}) keep playing until you stop them; their \
             newer shards wait in the store for a resumed run"
        );
    }
    if reason == StopReason::Budget {
        let r = &config.run;
        let mut spent = Vec::new();
        if r.max_steps > 0 && training.trainer().step_count() >= r.max_steps {
            spent.push(format!("loop.max_steps = {}", r.max_steps));
        }
        if r.max_samples > 0 && training.total_samples() >= r.max_samples {
            spent.push(format!("loop.max_samples = {}", r.max_samples));
        }
        if r.max_hours > 0.0 && training.elapsed().as_secs_f64() >= r.max_hours * 3600.0 {
            spent.push(format!("loop.max_hours = {}", r.max_hours));
        }
        errln!(
            "the config's budget is spent ({}): to go on, resume with a --config that raises it",
            spent.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The config and its name: `--config FILE` (name = file stem); on `--resume` without
/// `--config`, the run directory's resolved `config.toml`; else the built-in CPU config.
fn load_config(args: &Args) -> anyhow::Result<(ConfigFile, String)> {
    if let Some(path) = &args.config {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .unwrap_or("run")
            .to_string();
        return Ok((ConfigFile::load(path)?, name));
    }
    if args.resume
        && let Some(dir) = &args.run_dir
    {
        let resolved = dir.join("config.toml");
        if resolved.exists() {
            let name = dir.file_name().and_then(|s| s.to_str()).unwrap_or("run").to_string();
            return Ok((ConfigFile::load(&resolved)?, name));
        }
        let has_checkpoints = xiangqi_train::pipeline::list_checkpoints(&dir.join("checkpoints"))
            .is_ok_and(|c| !c.is_empty());
        if has_checkpoints {
            anyhow::bail!(
                "cannot resume {}: its resolved config {} is missing; pass the run's config with --config FILE",
                dir.display(),
                resolved.display()
            );
        }
    }
    Ok((ConfigFile::parse(BUILTIN_CPU, "built-in configs/cpu.toml")?, "cpu".to_string()))
}

/// Refuses a run directory of the wrong kind before anything is created in it: `--resume` needs
/// a run (a directory with `checkpoints/`); a new run needs a directory that does not exist or
/// is empty, so that no file of the user's (a `config.toml`, a `metrics.csv`) is overwritten or
/// appended to.
fn check_run_dir(dir: &Path, resume: bool) -> anyhow::Result<()> {
    let entries: Vec<String> = match fs::read_dir(dir) {
        Ok(e) => {
            e.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if resume {
                anyhow::bail!("cannot resume {}: no such directory", dir.display());
            }
            return Ok(());
        }
        Err(e) => {
            return Err(e)
                .with_context(|| format!("cannot read the run directory {}", dir.display()));
        }
    };
    // A run: it has written a checkpoint or a shard. A directory holding only what a start
    // killed before its first checkpoint leaves (the lock, empty checkpoints/ and shards/, an
    // empty tensorboard/) is no run and may be started again.
    let checkpoints = xiangqi_train::pipeline::scan_checkpoints(&dir.join("checkpoints"))
        .with_context(|| format!("cannot read {}", dir.join("checkpoints").display()))?;
    let shards = xiangqi_search::list_shards(&dir.join("shards")).unwrap_or_default();
    let is_run = dir.join("checkpoints").is_dir()
        && (!checkpoints.checkpoints.is_empty()
            || !checkpoints.ignored.is_empty()
            || !shards.is_empty());
    let aborted_start = !is_run
        && entries
            .iter()
            .all(|e| matches!(e.as_str(), "lock" | "checkpoints" | "shards" | "tensorboard"))
        && fs::read_dir(dir.join("tensorboard")).map_or(true, |mut d| d.next().is_none());
    if resume && !dir.join("checkpoints").is_dir() {
        anyhow::bail!(
            "cannot resume {}: it is not a run directory (no checkpoints/ in it)",
            dir.display()
        );
    }
    if !resume && is_run {
        anyhow::bail!(
            "'{}' already holds a run (checkpoints found): pass --resume to continue it, or \
             choose another run directory",
            dir.display()
        );
    }
    if resume && !is_run && dir.join("checkpoints").is_dir() {
        anyhow::bail!(
            "cannot resume {}: it holds no checkpoint yet (a start stopped before its first \
             checkpoint); start it again without --resume",
            dir.display()
        );
    }
    if !resume && !entries.is_empty() && !aborted_start {
        let mut shown: Vec<&str> = entries.iter().map(String::as_str).take(5).collect();
        shown.sort_unstable();
        anyhow::bail!(
            "'{}' is not empty and holds no run ({}{}): a new run needs a new or empty \
             directory, so that nothing in it is overwritten; choose another --run-dir",
            dir.display(),
            shown.join(", "),
            if entries.len() > 5 { ", ..." } else { "" }
        );
    }
    Ok(())
}

/// Keeps the header and the rows of a CSV file whose first field, an iteration, is at most
/// `keep_to` (and the first row of each iteration in `metrics.csv` style files: a row repeated
/// by an older version is dropped too); rewrites the file atomically if anything is dropped.
/// Returns how many rows were dropped. A missing file is left missing.
fn truncate_csv(path: &Path, keep_to: u64) -> anyhow::Result<usize> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut kept = String::with_capacity(text.len());
    let mut dropped = 0;
    for (i, line) in text.lines().enumerate() {
        let iteration = line.split(',').next().and_then(|f| f.parse::<u64>().ok());
        let keep = match iteration {
            Some(it) => it <= keep_to,
            // The header, and a line cut short by a kill while it was written (no complete
            // iteration field): only the header is kept.
            None => i == 0,
        };
        if keep && (i == 0 || line.contains(',')) {
            kept.push_str(line);
            kept.push('\n');
        } else {
            dropped += 1;
        }
    }
    // Rewritten also when the last line lacks its newline, so that the next row starts a line.
    if dropped > 0 || !text.ends_with('\n') && !text.is_empty() {
        write_atomically(path, kept.as_bytes())?;
    }
    Ok(dropped)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("cannot rename to {}", path.display()))?;
    Ok(())
}

const METRICS_HEADER: &str = "iteration,elapsed_s,total_samples,total_steps,games,samples,\
mean_game_length,games_per_s,simulations_per_s,evaluations_per_s,batch_fill,train_samples_per_s,\
loss,policy_loss,value_loss,weight_decay_loss,policy_entropy,value_accuracy,learning_rate,\
grad_norm,window_samples,false_resign_rate,end_checkmate,end_no_legal_moves,end_perpetual_check,\
end_perpetual_chase,end_repetition,end_no_capture_limit,end_move_limit,end_insufficient_material,\
end_resignation,end_length_cap,resign_threshold,heldout_samples,heldout_policy_loss,\
heldout_value_loss,heldout_result_loss,heldout_material_loss,store_shards,store_workers,store_mb,\
stale_shards,bad_shards,data_age_mean,data_age_max,ingest_s,waiting_shards";

const ARENA_HEADER: &str =
    "iteration,elapsed_s,opponent,games,wins,draws,losses,score,elo,elo_low,elo_high";

/// Writes TensorBoard events, the CSV files and the progress bar.
struct CliObserver {
    stop: Arc<AtomicBool>,
    /// `None` once writing events has failed (a full disk): the run goes on without them.
    tb: Option<SummaryWriter>,
    metrics: BufWriter<File>,
    arena: BufWriter<File>,
    bar: ProgressBar,
    quiet: bool,
    games_per_iteration: u64,
    iteration: u64,
    /// The run's elapsed seconds (summed over resumes) at the last iteration report, and when.
    elapsed_mark: (f64, Instant),
    last_flush: Instant,
    headline: String,
    /// `--hours`: when this invocation stops, and whether it stopped for that.
    deadline: Option<Instant>,
    timed_out: bool,
    /// The config's time and step budgets (0 = none), for the time left in the progress line.
    max_hours: f64,
    max_steps: u64,
    /// Iterations reported in this invocation.
    iterations_done: u64,
    /// The planned steps of the pretraining under way, if one is.
    pretraining: Option<u64>,
    /// Optimizer steps and elapsed run seconds when this invocation started, and the newest
    /// step, for the step budget's rate.
    first_step: Option<(u64, Instant)>,
}

/// Brings a CSV file written by an earlier version up to `header`: when its header is a
/// prefix of `header` (columns were added at the end), the header is replaced and every row
/// padded with empty cells, atomically; a file with any other header is renamed to
/// `<name>.old` (or `<name>.old-K`) and a new one started. Returns the new name of a file moved
/// aside.
fn upgrade_csv(path: &Path, header: &str) -> anyhow::Result<Option<PathBuf>> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let Some(old) = text.lines().next() else { return Ok(None) };
    if old == header {
        return Ok(None);
    }
    let columns = header.split(',').count();
    if header.starts_with(old) && header[old.len()..].starts_with(',') {
        let mut out = String::with_capacity(text.len() * 2);
        out.push_str(header);
        out.push('\n');
        // Each row filled with empty cells up to the header's width (a row already that wide,
        // or wider, is kept as it is).
        for line in text.lines().skip(1) {
            out.push_str(line);
            let cells = line.split(',').count();
            out.push_str(&",".repeat(columns.saturating_sub(cells)));
            out.push('\n');
        }
        write_atomically(path, out.as_bytes())?;
        return Ok(None);
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let aside = (0..)
        .map(|k| {
            path.with_file_name(if k == 0 {
                format!("{name}.old")
            } else {
                format!("{name}.old-{k}")
            })
        })
        .find(|p| !p.exists())
        .expect("some name is free");
    fs::rename(path, &aside)
        .with_context(|| format!("cannot move {} aside to {}", path.display(), aside.display()))?;
    Ok(Some(aside))
}

fn open_csv(path: &Path, header: &str) -> anyhow::Result<BufWriter<File>> {
    if let Some(aside) = upgrade_csv(path, header)? {
        errln!(
            "warning: {} has columns this version does not write; moved aside to {}",
            path.display(),
            aside.display()
        );
    }
    let new = !path.exists() || fs::metadata(path).map(|m| m.len() == 0).unwrap_or(true);
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut w = BufWriter::new(file);
    if new {
        writeln!(w, "{header}").with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(w)
}

impl CliObserver {
    fn new(
        run_dir: &Path,
        stop: Arc<AtomicBool>,
        quiet: bool,
        config: &ConfigFile,
        deadline: Option<Instant>,
    ) -> anyhow::Result<CliObserver> {
        let tb_dir = run_dir.join("tensorboard");
        fs::create_dir_all(&tb_dir)
            .with_context(|| format!("cannot create {}", tb_dir.display()))?;
        // tensorboard-rs panics when it cannot create its event file: find out first.
        let probe = tb_dir.join(format!(".write-test-{}", std::process::id()));
        fs::write(&probe, b"").with_context(|| {
            format!("cannot write TensorBoard events into {}", tb_dir.display())
        })?;
        let _ = fs::remove_file(&probe);
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        };
        Ok(CliObserver {
            stop,
            tb: Some(SummaryWriter::new(&tb_dir)),
            metrics: open_csv(&run_dir.join("metrics.csv"), METRICS_HEADER)?,
            arena: open_csv(&run_dir.join("arena.csv"), ARENA_HEADER)?,
            bar,
            quiet,
            games_per_iteration: config.run.games_per_iteration,
            iteration: 0,
            elapsed_mark: (0.0, Instant::now()),
            last_flush: Instant::now(),
            headline: String::new(),
            deadline,
            timed_out: false,
            max_hours: config.run.max_hours,
            max_steps: config.run.max_steps,
            iterations_done: 0,
            pretraining: None,
            first_step: None,
        })
    }

    /// Seconds the run has been going, summed over resumes (as `metrics.csv` counts them).
    fn run_elapsed(&self) -> f64 {
        self.elapsed_mark.0 + self.elapsed_mark.1.elapsed().as_secs_f64()
    }

    /// The time left until the run stops by itself, when it can be told: the nearest of
    /// `--hours`, `loop.max_hours` and `loop.max_steps` at this invocation's step rate so far.
    fn time_left(&self, step: Option<u64>) -> Option<Duration> {
        let mut left: Option<f64> = None;
        let mut nearest = |s: f64| left = Some(left.map_or(s, |l: f64| l.min(s)));
        if let Some(d) = self.deadline {
            nearest(d.saturating_duration_since(Instant::now()).as_secs_f64());
        }
        if self.max_hours > 0.0 {
            nearest((self.max_hours * 3600.0 - self.run_elapsed()).max(0.0));
        }
        if let (Some(step), Some((first, since))) = (step, self.first_step)
            && self.max_steps > 0
            && step > first
        {
            let rate = (step - first) as f64 / since.elapsed().as_secs_f64().max(1e-9);
            nearest(self.max_steps.saturating_sub(step) as f64 / rate);
        }
        left.map(Duration::from_secs_f64)
    }

    /// `| left 1:02:03` for the progress line, or nothing.
    fn left_text(&self, step: Option<u64>) -> String {
        self.time_left(step).map_or(String::new(), |d| {
            let s = d.as_secs();
            format!(" | left {}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
        })
    }

    fn log(&self, line: &str) {
        // A hidden bar (--quiet, or stderr not a terminal: nohup, a log file) prints nothing.
        if self.quiet || self.bar.is_hidden() {
            errln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    fn finish(&mut self) {
        self.bar.finish_and_clear();
        self.tb_flush();
        let _ = self.metrics.flush();
        let _ = self.arena.flush();
    }

    /// Runs `f` on the TensorBoard writer. tensorboard-rs panics when its event file cannot be
    /// written (a full disk): the panic is caught, TensorBoard output stops with a warning, and
    /// the writer is leaked rather than dropped (its destructor would panic again and abort).
    fn with_tb(&mut self, f: impl FnOnce(&mut SummaryWriter)) {
        let Some(tb) = self.tb.as_mut() else { return };
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(tb))).is_ok();
        if !ok {
            if let Some(tb) = self.tb.take() {
                std::mem::forget(tb);
            }
            self.log(
                "warning: TensorBoard events can no longer be written (see the message above); \
                 training goes on, metrics.csv still gets every row",
            );
        }
    }

    fn tb_flush(&mut self) {
        self.with_tb(SummaryWriter::flush);
    }

    fn scalar(&mut self, tag: &str, value: f64, step: u64) {
        if value.is_finite() {
            self.with_tb(|tb| tb.add_scalar(tag, value as f32, step as usize));
        }
    }
}

impl Observer for CliObserver {
    fn iteration_started(&mut self, iteration: u64) {
        self.iteration = iteration;
        self.bar.set_message(format!(
            "iteration {iteration}: self-play {}{}",
            self.headline,
            self.left_text(None)
        ));
    }

    fn selfplay_progress(&mut self, stats: &SelfPlayStats) {
        let secs = stats.elapsed.as_secs_f64().max(1e-9);
        self.bar.set_message(format!(
            "iteration {}: self-play {}/{} games, {:.0} sims/s, batch fill {:.0}% {}{}",
            self.iteration,
            stats.games_finished,
            self.games_per_iteration,
            stats.simulations as f64 / secs,
            100.0 * stats.batch_fill(),
            self.headline,
            self.left_text(None)
        ));
    }

    fn step(&mut self, m: &StepMetrics) {
        let s = m.step;
        self.scalar("loss/total", f64::from(m.loss), s);
        self.scalar("loss/policy", f64::from(m.policy_loss), s);
        self.scalar("loss/value", f64::from(m.value_loss), s);
        self.scalar("loss/weight_decay", f64::from(m.weight_decay_loss), s);
        self.scalar("policy/entropy", f64::from(m.policy_entropy), s);
        self.scalar("value/accuracy", f64::from(m.value_accuracy), s);
        self.scalar("train/learning_rate", m.learning_rate, s);
        self.scalar("train/grad_norm", f64::from(m.grad_norm), s);
        if self.first_step.is_none() {
            self.first_step = Some((s, Instant::now()));
        }
        if let Some(planned) = self.pretraining {
            self.bar.set_message(format!(
                "pretraining: step {s} of {planned} loss {:.3} (policy {:.3}, value {:.3}) {}{}",
                m.loss,
                m.policy_loss,
                m.value_loss,
                self.headline,
                self.left_text(Some(s))
            ));
            return;
        }
        self.bar.set_message(format!(
            "iteration {}: training step {} loss {:.3} (policy {:.3}, value {:.3}) {}{}",
            self.iteration,
            s,
            m.loss,
            m.policy_loss,
            m.value_loss,
            self.headline,
            self.left_text(Some(s))
        ));
        if self.last_flush.elapsed() > Duration::from_secs(10) {
            self.tb_flush();
            self.last_flush = Instant::now();
        }
    }

    fn iteration(&mut self, r: &IterationReport) {
        self.elapsed_mark = (r.elapsed.as_secs_f64(), Instant::now());
        self.iterations_done += 1;
        let it = r.iteration;
        let st = &r.selfplay.stats;
        let secs = r.selfplay.elapsed.as_secs_f64();
        let per_sec = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        let games_per_s = per_sec(r.selfplay.games);
        let sims_per_s = per_sec(st.simulations);
        let evals_per_s = per_sec(st.evaluations);
        // A resumed iteration whose shard was written before the stop played no games in this
        // session: its self-play figures are unknown, not zero (empty CSV cells, no scalars).
        let played = secs > 0.0 && st.games_finished > 0;
        if played {
            self.scalar("selfplay/games_per_sec", games_per_s, it);
            self.scalar("selfplay/simulations_per_sec", sims_per_s, it);
            self.scalar("selfplay/evaluations_per_sec", evals_per_s, it);
            self.scalar("selfplay/batch_fill", st.batch_fill(), it);
            self.scalar("selfplay/mean_game_length", r.selfplay.mean_game_length(), it);
            for reason in OutcomeReason::ALL {
                self.scalar(
                    &format!("selfplay/ending/{}", reason.name()),
                    r.selfplay.reason_share(reason),
                    it,
                );
            }
        }
        if let Some(t) = r.selfplay.resign_threshold.filter(|_| played) {
            self.scalar("selfplay/resign_threshold", f64::from(t), it);
        }
        if let Some(h) = &r.heldout {
            for (name, x) in [
                ("heldout/policy_loss", h.policy_loss),
                ("heldout/value_loss", h.value_loss),
                ("heldout/result_loss", h.result_loss),
                ("heldout/material_loss", h.material_loss),
            ] {
                if x.is_finite() {
                    self.scalar(name, x, it);
                }
            }
        }
        let false_resign = st.resign_false_positive_rate().filter(|_| played);
        if let Some(rate) = false_resign {
            self.scalar("selfplay/false_resign_rate", rate, it);
        }
        let known = |x: f64, digits: usize| {
            if played { format!("{x:.digits$}") } else { String::new() }
        };
        self.scalar("train/samples_per_sec", r.train_samples_per_sec, it);
        self.scalar("replay/window_samples", r.window_samples as f64, it);
        self.scalar("replay/total_samples", r.total_samples as f64, it);
        let m = &r.mean;
        let row = format!(
            "{},{:.1},{},{},{},{},{},{},{},{},{},{:.1},{:.5},{:.5},{:.5},{:.6},{:.4},{:.4},{:.6},{:.4},{},{}",
            it,
            r.elapsed.as_secs_f64(),
            r.total_samples,
            r.total_steps,
            r.selfplay.games,
            r.selfplay.samples,
            known(r.selfplay.mean_game_length(), 2),
            known(games_per_s, 4),
            known(sims_per_s, 1),
            known(evals_per_s, 1),
            known(st.batch_fill(), 4),
            r.train_samples_per_sec,
            m.loss,
            m.policy_loss,
            m.value_loss,
            m.weight_decay_loss,
            m.policy_entropy,
            m.value_accuracy,
            m.learning_rate,
            m.grad_norm,
            r.window_samples,
            false_resign.map_or(String::new(), |x| format!("{x:.4}")),
        );
        // The share of the iteration's games that ended for each reason (OutcomeReason::ALL
        // order, as in the header).
        let mut row = row;
        for reason in OutcomeReason::ALL {
            row.push(',');
            row.push_str(&known(r.selfplay.reason_share(reason), 4));
        }
        row.push(',');
        if let Some(t) = r.selfplay.resign_threshold.filter(|_| played) {
            row.push_str(&format!("{t:.2}"));
        }
        let cell = |x: f64| if x.is_finite() { format!("{x:.5}") } else { String::new() };
        match &r.heldout {
            Some(h) => row.push_str(&format!(
                ",{},{},{},{},{}",
                h.samples,
                cell(h.policy_loss),
                cell(h.value_loss),
                cell(h.result_loss),
                cell(h.material_loss)
            )),
            None => row.push_str(",,,,,"),
        }
        match &r.ingest {
            Some(g) => {
                row.push_str(&format!(
                    ",{},{},{:.3},{},{},{:.2},{},{:.2},{}",
                    g.shards,
                    g.workers,
                    g.bytes as f64 / 1e6,
                    g.stale_shards,
                    g.bad_shards,
                    g.age_mean,
                    g.age_max,
                    g.seconds,
                    g.waiting_shards
                ));
                self.scalar("store/shards", g.shards as f64, it);
                self.scalar("store/workers", g.workers as f64, it);
                self.scalar("store/megabytes", g.bytes as f64 / 1e6, it);
                self.scalar("store/stale_shards", g.stale_shards as f64, it);
                self.scalar("store/data_age_mean", g.age_mean, it);
                self.scalar("store/data_age_max", g.age_max as f64, it);
                self.scalar("store/waiting_shards", g.waiting_shards as f64, it);
            }
            None => row.push_str(",,,,,,,,,"),
        }
        // Written through to the file before the iteration's checkpoint (a kill after this line
        // and before the checkpoint replays the iteration, and the resume drops this row).
        let _ = writeln!(self.metrics, "{row}");
        let _ = self.metrics.flush();
        let _ = self.metrics.get_ref().sync_data();
        self.tb_flush();
        let games = if played {
            format!(
                "{} games ({:.1} plies avg, {:.0} sims/s)",
                r.selfplay.games,
                r.selfplay.mean_game_length(),
                sims_per_s
            )
        } else {
            match &r.ingest {
                Some(g) => format!(
                    "{} games from the store ({} shard{} of {} worker{}, data age {:.1} \
                     generations)",
                    r.selfplay.games,
                    g.shards,
                    if g.shards == 1 { "" } else { "s" },
                    g.workers,
                    if g.workers == 1 { "" } else { "s" },
                    g.age_mean
                ),
                None => format!("{} games (played before the stop)", r.selfplay.games),
            }
        };
        self.log(&format!(
            "iteration {it}: {games}, {} steps, loss {:.3} (policy {:.3}, value {:.3}), window {} samples, {:.1} min{}",
            r.steps,
            m.loss,
            m.policy_loss,
            m.value_loss,
            r.window_samples,
            r.elapsed.as_secs_f64() / 60.0,
            self.left_text(Some(r.total_steps))
        ));
    }

    fn arena(&mut self, r: &ArenaReport) {
        let wdl = &r.stats.wdl;
        let elo = wdl.elo();
        let opp = r.opponent.replace('/', "_");
        // "ckpt-NNNNNN" opponents change over time: one tag for "the previous arena net".
        let tag = if opp.starts_with("ckpt-") { "previous".to_string() } else { opp.clone() };
        self.scalar(&format!("arena/{tag}/score"), wdl.score(), r.iteration);
        self.scalar(&format!("arena/{tag}/elo"), elo.elo, r.iteration);
        self.scalar(&format!("arena/{tag}/elo_low"), elo.lower, r.iteration);
        self.scalar(&format!("arena/{tag}/elo_high"), elo.upper, r.iteration);
        let _ = writeln!(
            self.arena,
            "{},{:.1},{},{},{},{},{},{:.4},{:.1},{:.1},{:.1}",
            r.iteration,
            self.run_elapsed(),
            opp,
            wdl.wins + wdl.draws + wdl.losses,
            wdl.wins,
            wdl.draws,
            wdl.losses,
            wdl.score(),
            elo.elo,
            elo.lower,
            elo.upper
        );
        let _ = self.arena.flush();
        self.tb_flush();
        self.headline = format!("| vs {opp}: {:.0}%", 100.0 * wdl.score());
        self.log(&format!(
            "arena after iteration {}: vs {opp}: +{} ={} -{}, score {:.1}%, Elo {:+.0} [{:+.0}, {:+.0}]",
            r.iteration,
            wdl.wins,
            wdl.draws,
            wdl.losses,
            100.0 * wdl.score(),
            elo.elo,
            elo.lower,
            elo.upper
        ));
    }

    fn should_stop(&mut self) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out = true;
        }
        self.timed_out || self.stop.load(Ordering::SeqCst)
    }

    fn warning(&mut self, message: &str) {
        self.log(&format!("warning: {message}"));
    }

    fn pretrain_started(&mut self, p: &xiangqi_nn::checkpoint::Pretraining) {
        self.pretraining = Some(p.planned_steps);
        let from = if p.steps > 0 { format!(" (from step {})", p.steps) } else { String::new() };
        self.log(&format!(
            "pretraining on {}: {} shard{}, {} game{}, {} samples; {} steps{from}",
            p.source,
            p.shards,
            if p.shards == 1 { "" } else { "s" },
            p.games,
            if p.games == 1 { "" } else { "s" },
            p.samples,
            p.planned_steps
        ));
    }

    fn pretrained(&mut self, r: &xiangqi_train::pipeline::PretrainReport) {
        self.pretraining = None;
        let what = if r.finished { "pretrained" } else { "pretraining stopped" };
        self.log(&format!(
            "{what}: step {} of {} ({} this session, {:.0} samples/s), loss {:.3} (policy {:.3}, \
             value {:.3})",
            r.record.steps,
            r.record.planned_steps,
            r.steps,
            r.samples_per_sec,
            r.mean.loss,
            r.mean.policy_loss,
            r.mean.value_loss
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_header_names_every_ending_in_order() {
        let ends: Vec<&str> =
            METRICS_HEADER.split(',').filter_map(|c| c.strip_prefix("end_")).collect();
        let names: Vec<&str> = OutcomeReason::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(ends, names);
        assert_eq!(METRICS_HEADER.split(',').count(), 47);
    }

    #[test]
    fn an_older_metrics_file_is_padded_to_the_new_columns_or_moved_aside() {
        let dir = std::env::temp_dir().join(format!("xqz-upgrade-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.csv");
        fs::write(&path, "iteration,x\n1,a\n2,b\n").unwrap();
        assert_eq!(upgrade_csv(&path, "iteration,x,y,z").unwrap(), None);
        assert_eq!(fs::read_to_string(&path).unwrap(), "iteration,x,y,z\n1,a,,\n2,b,,\n");
        // Already current: untouched.
        assert_eq!(upgrade_csv(&path, "iteration,x,y,z").unwrap(), None);
        assert_eq!(fs::read_to_string(&path).unwrap(), "iteration,x,y,z\n1,a,,\n2,b,,\n");
        // A header that is not a prefix ("iteration,xy" is not "iteration,x" plus columns).
        fs::write(&path, "iteration,xy\n1,a\n").unwrap();
        let aside = upgrade_csv(&path, "iteration,x,y").unwrap().unwrap();
        assert_eq!(aside, dir.join("m.csv.old"));
        assert!(!path.exists());
        assert_eq!(fs::read_to_string(&aside).unwrap(), "iteration,xy\n1,a\n");
        fs::write(&path, "other\n").unwrap();
        assert_eq!(upgrade_csv(&path, "iteration,x,y").unwrap().unwrap(), dir.join("m.csv.old-1"));
        assert_eq!(upgrade_csv(&dir.join("missing.csv"), "a").unwrap(), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn truncating_a_csv_keeps_the_header_and_earlier_rows() {
        let dir = std::env::temp_dir().join(format!("xqz-truncate-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.csv");
        fs::write(&path, "iteration,x\n1,a\n2,b\n3,c\n3,c\n4,d\n5,partial-line-without").unwrap();
        assert_eq!(truncate_csv(&path, 2).unwrap(), 4);
        assert_eq!(fs::read_to_string(&path).unwrap(), "iteration,x\n1,a\n2,b\n");
        assert_eq!(truncate_csv(&path, 2).unwrap(), 0);
        assert_eq!(truncate_csv(&dir.join("missing.csv"), 0).unwrap(), 0);
        fs::remove_dir_all(&dir).unwrap();
    }
}
