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
//! | `config.toml` | the resolved config (every key; the few keys that are off by default only when set) |
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

use crate::config::BUILTIN_CPU;
use xiangqi_train::pipeline::{CheckedRunConfig, RunConfig};

mod observer;

use observer::*;

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
    /// Threads for self-play and the network (overrides `selfplay.threads`; 0 = all cores;
    /// at most 1024).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1024))]
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
    let (mut config, name, origin) = load_config(args)?;
    if let Some(t) = args.threads {
        config.selfplay.threads = t;
    }
    apply_overrides(args, &mut config)?;
    // The one check of the settings: the file's, with the command line's overrides.
    let config = crate::config::check(config, &origin)?;
    let threads = match config.selfplay().threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n as usize,
    };
    // The network's CPU backend uses rayon's global pool.
    let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
    // The device is made before anything is written.
    let device = crate::net::device(&config.run().device)?;

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
    if args.store.is_some() {
        config.check_for_store()?;
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
    // Held until this process ends.
    let _lock = lock_run_dir(&run_dir)?;
    let paths = RunPaths::under(&run_dir);
    let mut training = if args.resume {
        TrainingRun::resume_on(config.clone(), paths.clone(), device)?
    } else {
        TrainingRun::create_on(config.clone(), paths.clone(), device)?
    };
    for (path, reason) in training.skipped() {
        errln!("warning: passed over {}: {reason}", path.display());
    }
    let resolved = crate::config::to_toml(&config)?;
    if args.resume {
        drop_replayed_rows(&run_dir, &training)?;
        report_config_changes(&run_dir.join("config.toml"), &resolved);
    }
    write_atomically(&run_dir.join("config.toml"), resolved.as_bytes())?;
    if let Some(store) = store {
        let location = store.location().to_string();
        training.attach_store(store)?;
        // The workers' config: written after the store is claimed (a second trainer is refused
        // before it can overwrite the owner's).
        training
            .store()
            .expect("attached")
            .put(
                xiangqi_train::distributed::RUN_CONFIG_KEY,
                crate::config::to_toml(&config)?.into_bytes(),
            )
            .context("publishing the run's config")?;
        errln!(
            "store {location}: generation {} published; start workers with: {} selfplay --store {}",
            training.iteration(),
            this_program(),
            shell_word(&location.to_string())
        );
    }

    if config.training().schedule == xiangqi_nn::LrSchedule::CosineRun && !config.run().has_budget()
    {
        errln!(
            "warning: training.schedule = \"cosine_run\" anneals over the run's budget \
             (loop.max_hours, max_steps or max_samples) and the config sets none, so the \
             learning rate stays at {} (--hours limits this invocation, not the run)",
            config.training().learning_rate
        );
    }
    if config.run().material_plies > 0 && config.run().material_weight == 0.0 {
        errln!(
            "warning: loop.material_plies = {} trains nothing while loop.material_weight is 0; \
             only the held-out material loss reads it",
            config.run().material_plies
        );
    }
    let deadline = args.hours.map(|h| started + Duration::from_secs_f64(h * 3600.0));
    let mut observer =
        CliObserver::new(&run_dir, stop, args.quiet, &config, deadline, training.elapsed())?;
    // What `loop.precision` became on this CPU ("auto" is bf16 only where there is AMX or
    // AVX-512 BF16).
    let precision = training.selfplay_precision()?;
    errln!(
        "xqz train: run '{}' in {} (config: {origin}) on device {}, self-play network in {precision} ({} iteration{} done, {} steps); TensorBoard: tensorboard --logdir {}",
        name,
        run_dir.display(),
        config.run().device,
        training.iteration(),
        if training.iteration() == 1 { "" } else { "s" },
        training.trainer().step_count(),
        run_dir.join("tensorboard").display()
    );
    let reason = training.run(args.iterations, &mut observer)?;
    observer.finish();
    report_end(args, &config, &training, &observer, reason, &paths, &run_dir);
    Ok(ExitCode::SUCCESS)
}

/// On `--resume`: names each setting of `resolved` (the config this sitting runs with) that
/// differs from the run's last resolved config at `previous`, so that a changed key (one that
/// changes what the targets or the held-out losses mean, say) is not taken silently. Says nothing
/// where nothing changed or there is no earlier config; a file that cannot be read or compared
/// is a warning, and the run goes on.
fn report_config_changes(previous: &Path, resolved: &str) {
    let old = match fs::read_to_string(previous) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            errln!("warning: cannot read {} to compare the configs: {e}", previous.display());
            return;
        }
    };
    // The old file is read through the same reader and writer as the new config, so that keys
    // an earlier version did not write compare at their defaults, not as changes. A file this
    // version cannot read as a config is compared as it is.
    let origin = previous.display().to_string();
    let old = crate::config::parse(&old, &origin)
        .ok()
        .and_then(|c| toml::to_string(&c).ok())
        .unwrap_or(old);
    match crate::config::changes(&old, &origin, resolved) {
        Ok(changes) if changes.is_empty() => {}
        Ok(changes) => {
            errln!(
                "xqz train: resuming with {} setting{} changed from the run's last config ({}):",
                changes.len(),
                if changes.len() == 1 { "" } else { "s" },
                previous.display()
            );
            for change in changes {
                errln!("  {change}");
            }
        }
        Err(e) => errln!("warning: cannot compare the configs: {e:#}"),
    }
}

/// The command line's overrides of the config: `--device`, `--pretrain`, `--pretrain-steps`;
/// a new run's pretraining shards must exist and are kept by their absolute path.
fn apply_overrides(args: &Args, config: &mut RunConfig) -> anyhow::Result<()> {
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
    Ok(())
}

/// Creates the run directory and takes its advisory lock, `RUN/lock`: one trainer per run
/// directory. The lock is held while the returned file lives (the system releases it on any
/// exit, kill -9 included).
fn lock_run_dir(run_dir: &Path) -> anyhow::Result<fs::File> {
    fs::create_dir_all(run_dir)
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
    Ok(lock)
}

/// On resume: reports of iterations (and arenas) after the checkpoint are played again, so
/// their rows are dropped and each completed iteration keeps exactly one row.
fn drop_replayed_rows(run_dir: &Path, training: &TrainingRun) -> anyhow::Result<()> {
    if training.fell_back() {
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
    Ok(())
}

/// The lines printed when the run stops: why, where its checkpoint is, and how to go on.
fn report_end(
    args: &Args,
    config: &CheckedRunConfig,
    training: &TrainingRun,
    observer: &CliObserver,
    reason: StopReason,
    paths: &RunPaths,
    run_dir: &Path,
) {
    // Every way out of `run` leaves the state in a checkpoint: the end of the last iteration,
    // or (interrupted while training) the steps taken so far.
    let dir = xiangqi_train::pipeline::list_checkpoints(&paths.checkpoints)
        .ok()
        .and_then(|c| c.last().map(|(_, d)| d.clone()))
        .unwrap_or_else(|| paths.checkpoints.clone());
    let iterations = training.iteration();
    errln!(
        "{}: {} iteration{}, {} optimizer steps, {} self-play samples, {:.1} min; checkpoint {}",
        match reason {
            StopReason::Interrupted if observer.timed_out => "time is up",
            StopReason::Interrupted => "stopped",
            StopReason::Budget => "budget spent",
            StopReason::Iterations => "done",
        },
        iterations,
        if iterations == 1 { "" } else { "s" },
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
            "to go on: {} train --resume --run-dir {}{}",
            this_program(),
            shell_word(&run_dir.to_string_lossy()),
            args.store.as_deref().map_or(String::new(), |s| format!(" --store {}", shell_word(s)))
        );
    }
    if let Some(s) = &args.store {
        errln!(
            "the workers ({} selfplay --store {}) keep playing until you stop them; their \
             newer shards wait in the store for a resumed run",
            this_program(),
            shell_word(s)
        );
    }
    if reason == StopReason::Budget {
        let r = config.run();
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
}

/// The config and its name: `--config FILE` (name = file stem); on `--resume` without
/// `--config`, the run directory's resolved `config.toml`; else the built-in CPU config. Read,
/// not checked yet (the overrides come first); the third value names it in errors.
fn load_config(args: &Args) -> anyhow::Result<(RunConfig, String, String)> {
    if let Some(path) = &args.config {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .unwrap_or("run")
            .to_string();
        return Ok((crate::config::load(path)?, name, path.display().to_string()));
    }
    if args.resume
        && let Some(dir) = &args.run_dir
    {
        let resolved = dir.join("config.toml");
        if resolved.exists() {
            let name = dir.file_name().and_then(|s| s.to_str()).unwrap_or("run").to_string();
            let origin = resolved.display().to_string();
            return Ok((crate::config::load(&resolved)?, name, origin));
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
    let origin = crate::config::BUILTIN_CPU_ORIGIN;
    Ok((crate::config::parse(BUILTIN_CPU, origin)?, "cpu".to_string(), origin.to_string()))
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

/// The program as it was started, for the commands this run tells the user to type next, as
/// one shell word: its first argument where that names it (`xqz` found on the `PATH`, or a path
/// such as `target/release/xqz` under `cargo run`), else the running executable's path (a
/// launcher may pass any name), else `xqz`.
fn this_program() -> String {
    let named = std::env::args_os().next().and_then(|a| a.into_string().ok()).filter(|a| {
        if a.is_empty() {
            false
        } else if a.contains('/') {
            Path::new(a).is_file()
        } else {
            std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(a).is_file()))
        }
    });
    let program = named
        .or_else(|| {
            std::env::current_exe().ok().and_then(|p| p.into_os_string().into_string().ok())
        })
        .unwrap_or_else(|| "xqz".to_string());
    shell_word(&program)
}

/// `word` quoted for a POSIX shell where it needs quoting (spaces, quotes, `$`, …), so that a
/// printed command can be pasted as it is.
fn shell_word(word: &str) -> String {
    // The only error is a NUL byte, which no path or argument can hold.
    shlex::try_quote(word).map_or_else(|_| word.to_string(), |w| w.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the system's shell makes of `line`: its words, one per line of `printf`.
    fn shell_words(line: &str) -> Vec<String> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' {line}"))
            .output()
            .expect("sh runs");
        assert!(out.status.success(), "sh refused {line}: {:?}", out);
        String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
    }

    #[test]
    fn shell_words_reach_the_shell_as_they_are() {
        let words =
            ["xqz", "runs/cpu", "a b", "it's", "x$1", "xqz(2)", "dir/with space/'q'", "*", "~", ""];
        let line: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
        assert_eq!(shell_words(&line.join(" ")), words, "{line:?}");
        // Plain paths stay as they are.
        assert_eq!(shell_word("target/release/xqz"), "target/release/xqz");
    }

    #[test]
    fn the_metrics_header_names_every_ending_in_order() {
        let ends: Vec<&str> =
            METRICS_HEADER.split(',').filter_map(|c| c.strip_prefix("end_")).collect();
        let names: Vec<&str> = OutcomeReason::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(ends, names);
        // 47 columns, and the four auxiliary heads' losses after them.
        assert_eq!(METRICS_HEADER.split(',').count(), 51);
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
