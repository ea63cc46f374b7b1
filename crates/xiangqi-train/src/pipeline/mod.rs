//! The training loop behind `xqz train`: self-play with the current network, replay shards, a
//! sliding replay window, optimizer steps, checkpoints and a periodic arena.
//!
//! ```text
//!  iteration i:  self-play (games_per_iteration, current net) ──► shard-i.npz (atomic)
//!                     │                                              │
//!                     ▼                                              ▼
//!                replay window (the newest window_samples samples, whole shards)
//!                     │  uniform mini-batches, mirror augmentation
//!                     ▼
//!                optimizer steps: new samples · train_ratio / batch_size
//!                     │
//!                     ▼
//!                checkpoint ckpt-i (atomic), old shards and checkpoints pruned
//!                     │  every arena_every iterations
//!                     ▼
//!                arena: current net against random, greedy and the previous arena net
//! ```
//!
//! # Resuming
//! A checkpoint records the completed iterations and the optimizer steps already taken in the
//! iteration under way (non-zero only when the run was stopped in its training phase). On
//! resume the window is rebuilt from the shards on disk up to that iteration; the iteration's own
//! shard, if it was written before the stop, is used as it is instead of being played again.
//! Self-play of an iteration is seeded by `(seed, iteration)` and mini-batches by
//! `(seed, optimizer step)`, so a resumed run takes the same steps as one that was never stopped.
//! A kill at any moment loses at most the unfinished iteration phase: shards and checkpoints are
//! written to a temporary name and renamed.
//!
//! # Distributed runs
//! With a store attached ([`TrainingRun::attach_store`]) an iteration's games come from the
//! store instead: the shards of any number of workers (and `loop.local_selfplay_threads` games
//! of the trainer's own), gathered until `games_per_iteration` games are in hand and merged into
//! the iteration's shard; the rest of the iteration is as above, and its net is then published
//! to the store. Which store shards are consumed is recorded beside the merged shard (before
//! it) and in the checkpoint, so that each is trained on exactly once ([`crate::distributed`]).
//!
//! Only paths given by the caller are written; the caller decides where they are.

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use xiangqi::{Game, Move, OutcomeReason, janggi};
use xiangqi_nn::checkpoint::{self, CheckpointError};
use xiangqi_nn::config::{ConfigError, NetConfig, TrainConfig};
use xiangqi_nn::infer::NnEvaluator;
use xiangqi_nn::train::{StepMetrics, TrainBatch, Trainer};
use xiangqi_nn::{Device, InferenceNet, Precision, cpu_device};
use xiangqi_search::arena::{
    GameSettings, LocalPlayer, MatchConfig, MatchStats, MoveLimit, Opening, run_match_batched,
};
use xiangqi_search::{
    Algorithm, Checked, Encoding, GameEnv, GameKind, GameRecord, GameRules, InFlight,
    RecordedValue, ResignCalibration, SearchConfig, SelfPlayConfig, SelfPlayEvent, SelfPlayStats,
    Shard, UNKNOWN_MATERIAL, UniformEvaluator, Validate, game_rng, list_shards,
    play_games_continuing, play_games_forking, read_shard, read_shard_from, write_shard,
    write_shard_to,
};
use xiangqi_store::Store;

use crate::distributed::{
    self, DistributedError, LOCAL_SELFPLAY_WORKER, ShardCursor, pending_shards,
};

mod arena;
mod checkpoints;
mod config;
mod consumed;
mod gather;
mod heldout;
mod play;
mod pretrain;
mod report;
mod resign_state;
mod targets;
mod window;

pub use checkpoints::{CheckpointScan, list_checkpoints, scan_checkpoints};
pub use config::{CheckedRunConfig, LoopConfig, RunConfig, RunPaths};
pub use report::{
    ArenaReport, ConsumedShard, HeldOutLosses, IngestReport, IterationReport, NoObserver, Observer,
    SelfPlayReport, ShardFate, StopReason,
};

use checkpoints::*;
use config::*;
use consumed::*;
use heldout::*;
use play::*;
use resign_state::*;
use targets::*;
use window::*;

pub use pretrain::PretrainReport;

/// Why the loop stopped with an error.
#[derive(Debug, Error)]
pub enum PipelineError {
    /// A setting is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Reading or writing a checkpoint failed, or a checkpoint was refused.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// A file of the run directory could not be read or written.
    #[error("{what} '{}': {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A replay shard could not be written or read.
    #[error("replay shard '{}': {reason}", path.display())]
    Shard {
        /// The shard.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Self-play failed.
    #[error("self-play: {0}")]
    SelfPlay(String),
    /// The network failed.
    #[error(transparent)]
    Nn(#[from] xiangqi_nn::NnError),
    /// `--resume` was asked for, but the run has no checkpoint.
    #[error("nothing to resume: no checkpoint in '{}' (a run stopped before its first checkpoint was written starts again without --resume)", .0.display())]
    NothingToResume(PathBuf),
    /// An arena match could not be played.
    #[error("arena: {0}")]
    Arena(String),
    /// The store of a distributed run failed or was refused.
    #[error(transparent)]
    Store(#[from] crate::distributed::DistributedError),
    /// A new run was asked for in a directory that already holds one.
    #[error("'{}' already holds a run (checkpoints found): pass --resume to continue it, or choose another run directory", .0.display())]
    RunExists(PathBuf),
    /// The pretraining shards (`loop.pretrain_shards`) cannot be used.
    #[error("pretraining shards '{}': {reason}", path.display())]
    Pretrain {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The cause of a shard error without the shard's path (which [`PipelineError::Shard`] names).
fn shard_reason(e: &xiangqi_search::ShardError) -> String {
    match e {
        xiangqi_search::ShardError::File { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Writes a small text file atomically ([`crate::atomic::write_atomically`]).
fn write_text_atomically(path: &Path, text: &str) -> Result<(), PipelineError> {
    crate::atomic::write_atomically(path, text.as_bytes()).map_err(|source| PipelineError::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    })
}

/// A run identity: the clock and the process id, mixed. Unique enough to tell runs apart; it
/// seeds nothing.
fn new_run_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    derive_seed(nanos, 4, u64::from(std::process::id())) & (i64::MAX as u64)
}

/// The mixing of a seed with a counter (SplitMix64), for derived seeds.
fn derive_seed(seed: u64, salt: u64, n: u64) -> u64 {
    let mut rng = game_rng(seed ^ salt.rotate_left(32), n);
    rng.random()
}

/// A training run: the trainer, the replay window and the loop's counters.
pub struct TrainingRun {
    config: CheckedRunConfig,
    paths: RunPaths,
    /// Where the network trains and plays (plain, not autodiff).
    device: Device,
    trainer: Trainer,
    window: ReplayWindow,
    /// Iterations completed.
    iteration: u64,
    /// Optimizer steps already taken in iteration `iteration + 1` (its shard is on disk).
    steps_in_iteration: u64,
    total_samples: u64,
    elapsed_before: Duration,
    started: Instant,
    /// The net of the previous arena, for the "previous checkpoint" match.
    last_arena_checkpoint: Option<u64>,
    /// What `resume` passed over: entries that are not the run's checkpoints, newer
    /// checkpoints that could not be loaded and unreadable shards, each with the reason.
    skipped: Vec<(PathBuf, String)>,
    /// Whether `resume` fell back to an older checkpoint ([`TrainingRun::fell_back`]).
    fell_back: bool,
    /// Warnings of the running loop not yet taken by the caller.
    pending_warnings: Vec<String>,
    /// This run's identity ([`COUNTER_RUN_ID`]); `None` for a run of an earlier version.
    run_id: Option<u64>,
    /// Self-tuning resignation: the played-out games counted so far.
    resign: ResignCalibration,
    /// The resignation threshold of the next self-play (when self-tuning).
    resign_threshold: f32,
    /// Distributed self-play: the store (`None`: local only).
    store: Option<Store>,
    /// The store's shards consumed up to the last completed iteration (saved in checkpoints).
    cursor: ShardCursor,
    /// Whether the user was told that the trainer waits for workers.
    told_waiting: bool,
    /// The store's keys the user was told are passed over (each is named once per process).
    told_skipped: std::collections::BTreeSet<String>,
    /// The pretraining done or under way ([`LoopConfig::pretrain_shards`]), as the checkpoints
    /// record it.
    pretrained: Option<checkpoint::Pretraining>,
    /// The pretraining shards read when the run was created (checked before anything is
    /// written), for its first `run`.
    pretrain_set: Option<pretrain::PretrainSet>,
    /// Self-play's finished games that the next iteration's games fork from
    /// (`selfplay.fork_game_prob`); empty after a restart.
    fork_pools: xiangqi_search::ForkPools,
    /// The games continuous self-play carries into the next iteration
    /// (`loop.continuous_selfplay`); none after a restart.
    in_flight: Option<play::Continuing>,
}

const COUNTER_ITERATION: &str = "iteration";
const COUNTER_STEPS_IN_ITERATION: &str = "steps_in_iteration";
const COUNTER_SAMPLES: &str = "selfplay_samples";
const COUNTER_ELAPSED_MS: &str = "elapsed_ms";
const COUNTER_LAST_ARENA: &str = "last_arena_checkpoint_plus_one";
/// A random number drawn when the run is created: checkpoints of another run (copied in) are
/// told apart by it. Runs of earlier versions have none.
const COUNTER_RUN_ID: &str = "run_id";
/// The self-tuned resignation threshold `t`, saved as `round((t + 1) · 10⁶)`.
const COUNTER_RESIGN_THRESHOLD: &str = "resign_threshold_plus_one_micro";
/// Prefix of the resignation calibration's counts: `<prefix><bin>_lost`, `<prefix><bin>_kept`.
const COUNTER_RESIGN_BIN: &str = "resign_bin_";
/// Sides counted before the calibration halves its counts (a few hundred games).
const RESIGN_CALIBRATION_CAPACITY: u64 = 2000;

impl TrainingRun {
    /// Starts a new run: a freshly initialised network (seeded by `loop.seed`), saved as the
    /// initial checkpoint `ckpt-000000`.
    ///
    /// # Errors
    /// [`PipelineError::RunExists`] if the checkpoint directory already holds checkpoints;
    /// invalid settings; I/O errors.
    pub fn create(config: CheckedRunConfig, paths: RunPaths) -> Result<TrainingRun, PipelineError> {
        TrainingRun::create_on(config, paths, cpu_device())
    }

    /// [`TrainingRun::create`] with the network on `device` (training on its autodiff form,
    /// self-play and the arena on the device itself).
    ///
    /// # Errors
    /// As [`TrainingRun::create`].
    pub fn create_on(
        config: CheckedRunConfig,
        paths: RunPaths,
        device: Device,
    ) -> Result<TrainingRun, PipelineError> {
        // Plain: the trainer makes its own autodiff form.
        let device = device.inner();
        // What a start killed before its first checkpoint left behind.
        remove_stale_temporaries(&paths)?;
        let existing = list_checkpoints(&paths.checkpoints).map_err(|source| {
            PipelineError::Io { what: "reading", path: paths.checkpoints.clone(), source }
        })?;
        if !existing.is_empty() {
            return Err(PipelineError::RunExists(paths.checkpoints.clone()));
        }
        let shards = list_shards(&paths.shards).unwrap_or_default();
        if !shards.is_empty() {
            return Err(PipelineError::RunExists(paths.shards.clone()));
        }
        // Unusable pretraining shards stop the run before it writes anything.
        let mut pretrain_warnings = Vec::new();
        let pretrain_set = if config.run().pretrain_shards.is_empty() {
            None
        } else {
            Some(pretrain::read_pretrain_set(
                &config.run().pretrain_shards,
                config.selfplay().game,
                play::rules_code_of(config.selfplay())?,
                config.run().train_ratio,
                config.run().batch_size,
                config.run().pretrain_steps,
                &mut pretrain_warnings,
            )?)
        };
        for dir in [&paths.shards, &paths.checkpoints] {
            fs::create_dir_all(dir).map_err(|source| PipelineError::Io {
                what: "creating",
                path: dir.clone(),
                source,
            })?;
        }
        let encoding = Encoding::of_kind(config.selfplay().game);
        let trainer = Trainer::for_encoding(
            config.network(),
            encoding,
            config.training(),
            &device,
            config.run().seed,
        )?;
        let mut run = TrainingRun {
            config,
            paths,
            device,
            trainer,
            window: ReplayWindow::default(),
            iteration: 0,
            steps_in_iteration: 0,
            total_samples: 0,
            elapsed_before: Duration::ZERO,
            started: Instant::now(),
            last_arena_checkpoint: None,
            skipped: Vec::new(),
            fell_back: false,
            pending_warnings: Vec::new(),
            run_id: Some(new_run_id()),
            resign: ResignCalibration::new(RESIGN_CALIBRATION_CAPACITY),
            resign_threshold: -1.0,
            store: None,
            cursor: ShardCursor::default(),
            told_waiting: false,
            told_skipped: Default::default(),
            pretrained: pretrain_set.as_ref().map(|set| set.record.clone()),
            pretrain_set,
            fork_pools: Default::default(),
            in_flight: None,
        };
        run.pending_warnings.extend(pretrain_warnings);
        // `ckpt-000000` records the planned pretraining, so that a resume with another config
        // file still pretrains.
        run.save_checkpoint()?;
        Ok(run)
    }

    /// Resumes the run from its newest readable checkpoint. The network in the config must be
    /// the checkpoint's; the other sections may change (a new learning rate, a longer budget).
    /// Every entry of the checkpoint directory that is not one of the run's checkpoints, and
    /// every newer checkpoint that could not be loaded, is passed over and named with the reason
    /// in [`TrainingRun::skipped`]; the caller must tell the user.
    ///
    /// # Errors
    /// [`PipelineError::NothingToResume`] without a checkpoint; a refused checkpoint (with the
    /// reason) when the newest cannot be read and no older one can either; unreadable shards.
    pub fn resume(config: CheckedRunConfig, paths: RunPaths) -> Result<TrainingRun, PipelineError> {
        TrainingRun::resume_on(config, paths, cpu_device())
    }

    /// [`TrainingRun::resume`] with the network on `device`: a run may move between devices
    /// (checkpoints carry no device).
    ///
    /// # Errors
    /// As [`TrainingRun::resume`].
    pub fn resume_on(
        config: CheckedRunConfig,
        paths: RunPaths,
        device: Device,
    ) -> Result<TrainingRun, PipelineError> {
        // Plain: the trainer makes its own autodiff form.
        let device = device.inner();
        remove_stale_temporaries(&paths)?;
        let scan = scan_checkpoints(&paths.checkpoints).map_err(|source| PipelineError::Io {
            what: "reading",
            path: paths.checkpoints.clone(),
            source,
        })?;
        let mut skipped = scan.ignored;
        let mut last_error = None;
        for (loaded, dir) in scan.checkpoints.iter().rev() {
            match checkpoint::load_trainer(
                dir,
                Some(config.network().get()),
                Some(config.training().get()),
                &device,
            ) {
                Ok((trainer, manifest)) => {
                    // A run of another game: the config is wrong, not the checkpoint.
                    manifest.expect_game(dir, config.selfplay().game)?;
                    let c = |k: &str| manifest.counters.get(k).copied().unwrap_or(0);
                    // Fell back: a newer checkpoint failed to load, or a folder named as a newer
                    // one was passed over (a damaged or missing manifest makes it no checkpoint).
                    let fell_back = last_error.is_some()
                        || skipped
                            .iter()
                            .any(|(p, _)| numbered(p, "ckpt-", "").is_some_and(|n| n > *loaded));
                    let mut run = TrainingRun {
                        paths,
                        device: device.clone(),
                        trainer,
                        window: ReplayWindow::default(),
                        iteration: c(COUNTER_ITERATION),
                        steps_in_iteration: c(COUNTER_STEPS_IN_ITERATION),
                        total_samples: c(COUNTER_SAMPLES),
                        elapsed_before: Duration::from_millis(c(COUNTER_ELAPSED_MS)),
                        started: Instant::now(),
                        last_arena_checkpoint: c(COUNTER_LAST_ARENA).checked_sub(1),
                        config,
                        fell_back,
                        skipped,
                        pending_warnings: Vec::new(),
                        run_id: manifest.counters.get(COUNTER_RUN_ID).copied(),
                        resign: ResignCalibration::new(RESIGN_CALIBRATION_CAPACITY),
                        resign_threshold: -1.0,
                        store: None,
                        cursor: ShardCursor::from_counters(&manifest.counters),
                        told_waiting: false,
                        told_skipped: Default::default(),
                        pretrained: manifest.pretrained.clone(),
                        pretrain_set: None,
                        fork_pools: Default::default(),
                        in_flight: None,
                    };
                    run.restore_resign_calibration(&manifest.counters);
                    run.rebuild_window()?;
                    return Ok(run);
                }
                // The configured network is not the run's: the config is wrong, not the
                // checkpoint; falling back would only find the same network again.
                Err(e @ CheckpointError::NetMismatch { .. }) => return Err(e.into()),
                // A damaged newest checkpoint (corrupted on disk, or killed during a write on a
                // file system without atomic renames): fall back to the one before, saying so.
                Err(e) => {
                    skipped.push((dir.clone(), format!("cannot be loaded: {e}")));
                    last_error = Some(e);
                }
            }
        }
        match last_error {
            Some(e) => Err(e.into()),
            None => Err(PipelineError::NothingToResume(paths.checkpoints.clone())),
        }
    }

    /// What [`TrainingRun::resume`] passed over, `(path, reason)`: entries of the checkpoint
    /// directory that are not the run's checkpoints, newer checkpoints it could not load, and
    /// shards it could not read into the replay window.
    pub fn skipped(&self) -> &[(PathBuf, String)] {
        &self.skipped
    }

    /// Whether [`TrainingRun::resume`] fell back to an older checkpoint: a newer one could not
    /// be loaded, or a folder named as a newer one is no checkpoint of the run (both named in
    /// [`TrainingRun::skipped`]).
    pub fn fell_back(&self) -> bool {
        self.fell_back
    }

    /// The iteration after which the last completed arena was played, if any.
    pub fn last_arena_iteration(&self) -> Option<u64> {
        self.last_arena_checkpoint
    }

    /// Optimizer steps already taken in the iteration under way (non-zero after a resume from a
    /// checkpoint written by an interrupt during training).
    pub fn steps_in_iteration(&self) -> u64 {
        self.steps_in_iteration
    }

    /// The trainer (network, optimizer, counters).
    pub fn trainer(&self) -> &Trainer {
        &self.trainer
    }

    /// The device the network runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The settings.
    pub fn config(&self) -> &CheckedRunConfig {
        &self.config
    }

    /// Iterations completed.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// Total self-play samples generated.
    pub fn total_samples(&self) -> u64 {
        self.total_samples
    }

    /// Running time, summed over resumes.
    pub fn elapsed(&self) -> Duration {
        self.elapsed_before + self.started.elapsed()
    }

    /// Samples in the replay window.
    pub fn window_samples(&self) -> usize {
        self.window.samples
    }

    /// The share of the run's budget spent ([`LoopConfig::budget_share`]), or `None` when the
    /// config sets none: the progress the `cosine_run` learning-rate schedule follows.
    fn budget_progress(&self) -> Option<f64> {
        let elapsed = self.elapsed().as_secs_f64();
        self.config.run().budget_share(elapsed, self.trainer.step_count(), self.total_samples)
    }

    fn budget_spent(&self) -> bool {
        self.budget_progress().is_some_and(|share| share >= 1.0)
    }

    /// Runs iterations until the observer asks to stop, a budget is spent, or `max_iterations`
    /// more iterations are done (if given).
    ///
    /// # Errors
    /// Any [`PipelineError`]; the run directory stays consistent (the last checkpoint and the
    /// shards are intact) and the run can be resumed.
    pub fn run(
        &mut self,
        max_iterations: Option<u64>,
        observer: &mut dyn Observer,
    ) -> Result<StopReason, PipelineError> {
        let mut done = 0;
        // What attaching the store found (leftovers of killed writers removed).
        for w in self.take_warnings() {
            observer.warning(&w);
        }
        let precision = self.config.run().precision;
        if precision == Precision::Bf16
            && let Some(reason) = self.play_net()?.bf16_unavailable()
        {
            observer.warning(&format!(
                "loop.precision = \"bf16\" is not available ({reason}); self-play computes in f32"
            ));
        }
        if self.trainer.config().precision == Precision::Bf16
            && let Some(reason) = self.trainer.bf16_unavailable()
        {
            observer.warning(&format!(
                "training.precision = \"bf16\" is not available ({reason}); training computes in f32"
            ));
        }
        // An arena cut short by a stop or a kill after its iteration's checkpoint: play it now.
        let every = self.config.run().arena_every;
        if every > 0
            && self.iteration > 0
            && self.steps_in_iteration == 0
            && self.iteration.is_multiple_of(every)
            && self.last_arena_checkpoint != Some(self.iteration)
            && !observer.should_stop()
        {
            self.arena(observer)?;
        }
        if let Some(stop) = self.pretrain(observer)? {
            return Ok(stop);
        }
        loop {
            if self.budget_spent() {
                return Ok(StopReason::Budget);
            }
            if max_iterations.is_some_and(|m| done >= m) {
                return Ok(StopReason::Iterations);
            }
            if observer.should_stop() {
                return Ok(StopReason::Interrupted);
            }
            let iterated = self.iterate(observer);
            for w in self.take_warnings() {
                observer.warning(&w);
            }
            // A stop asked for while the store was waiting out a failure (nothing of the
            // iteration is lost: its checkpoint, or the one before it, holds the run).
            if let Err(PipelineError::Store(DistributedError::Store(
                xiangqi_store::StoreError::Stopped { .. },
            ))) = &iterated
                && observer.should_stop()
            {
                return Ok(StopReason::Interrupted);
            }
            match iterated? {
                Some(_) => {
                    done += 1;
                    if self.config.run().arena_every > 0
                        && self.iteration.is_multiple_of(self.config.run().arena_every)
                    {
                        self.arena(observer)?;
                    }
                }
                None => return Ok(StopReason::Interrupted),
            }
        }
    }

    /// One iteration; `None` if it was interrupted (after checkpointing what was done). The
    /// observer receives the iteration's report just before its checkpoint is written.
    fn iterate(
        &mut self,
        observer: &mut dyn Observer,
    ) -> Result<Option<IterationReport>, PipelineError> {
        let iteration = self.iteration + 1;
        observer.iteration_started(iteration);
        let Some(games) = self.iteration_games(iteration, observer)? else { return Ok(None) };
        if self.config.run().resign_target_false_positive > 0.0
            && let Some(counts) = &games.resign_counts
        {
            self.tune_resignation(counts);
        }
        let heldout = self.score_held_out(iteration, &games.shard)?;
        if self.steps_in_iteration == 0 {
            self.total_samples += games.shard.len() as u64;
        }
        let new_samples = games.shard.len();
        let r = self.config.run();
        self.window.push(iteration, games.shard, r.window_samples, r.policy_surprise_weight);
        self.prune_shards()?;
        let Some(training) = self.train_on_window(new_samples, observer)? else {
            return Ok(None);
        };
        self.iteration = iteration;
        self.steps_in_iteration = 0;
        if let Some(cursor) = games.consumed {
            self.cursor = cursor;
        }
        let report = IterationReport {
            iteration,
            mean: training.mean,
            steps: training.steps,
            steps_before_stop: training.steps_before_stop,
            train_samples_per_sec: training.samples_per_sec,
            window_samples: self.window.samples,
            total_samples: self.total_samples,
            total_steps: self.trainer.step_count(),
            elapsed: self.elapsed(),
            selfplay: games.report,
            heldout,
            ingest: games.ingest,
        };
        // The report first, then the checkpoint: a kill between the two leaves a report of an
        // iteration that a resume plays again, which the observer drops on resume (see
        // [`Observer::iteration`]); the other order would lose the report for good.
        observer.iteration(&report);
        self.save_checkpoint()?;
        self.prune_checkpoints()?;
        if self.store.is_some() {
            self.publish()?;
            self.tidy_store(iteration)?;
        }
        Ok(Some(report))
    }

    /// The iteration's games: its shard on disk if it was written before a stop (used as it
    /// is), else gathered from the store, else played; `None` if interrupted.
    fn iteration_games(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
    ) -> Result<Option<IterationGames>, PipelineError> {
        let path = shard_path(&self.paths, iteration);
        let read = read_shard(&path);
        if let Err(e) = &read
            && path.is_file()
        {
            // A shard of this iteration from before a stop, damaged since: said, not silent.
            self.pending_warnings.push(format!(
                "{}: unreadable ({}); the iteration's games are played again and replace it",
                path.display(),
                shard_reason(e)
            ));
        }
        match read {
            Ok(shard) => {
                self.check_shard_game(&path, &shard)?;
                let report = SelfPlayReport {
                    games: shard.games().len() as u64,
                    samples: shard.len(),
                    ..Default::default()
                };
                // The games' resignation counts, saved beside the shard; already in the
                // checkpoint when it was written during this iteration's training.
                let tuning = self.config.run().resign_target_false_positive > 0.0;
                let resign_counts = (tuning && self.steps_in_iteration == 0)
                    .then(|| read_resign_pending(&self.paths, iteration))
                    .flatten();
                // A shard gathered from a store has its record beside it, written first: the
                // cursor after it and what the iteration took from the store.
                let (consumed, ingest) = match read_consumed(&self.paths, iteration)? {
                    Some((cursor, ingest)) => (Some(cursor), ingest),
                    None => (None, None),
                };
                Ok(Some(IterationGames { shard, report, resign_counts, consumed, ingest }))
            }
            Err(_) if self.store.is_some() => {
                Ok(self.gather(iteration, observer)?.map(|g| IterationGames {
                    shard: g.shard,
                    report: g.report,
                    resign_counts: None,
                    consumed: Some(g.cursor),
                    ingest: Some(g.ingest),
                }))
            }
            Err(_) => Ok(self.self_play(iteration, observer)?.map(|p| IterationGames {
                shard: p.shard,
                report: p.report,
                resign_counts: Some(p.resign_counts),
                consumed: None,
                ingest: None,
            })),
        }
    }

    /// Self-tuning resignation: the new games' counts merged, old ones decayed, and the next
    /// threshold chosen.
    fn tune_resignation(&mut self, counts: &ResignCalibration) {
        let r = self.config.run();
        self.resign.merge(counts);
        self.resign.decay();
        self.resign_threshold =
            self.resign.choose(r.resign_target_false_positive, r.resign_min_resigners);
    }

    /// The arithmetic self-play's network computes in: `loop.precision` where this CPU and net
    /// can run it, else `f32` ([`InferenceNet::precision`]; `"auto"` resolves to one of the two).
    ///
    /// # Errors
    /// As folding the current network for self-play: [`PipelineError`].
    pub fn selfplay_precision(&self) -> Result<Precision, PipelineError> {
        Ok(self.play_net()?.precision())
    }

    /// The current network folded for self-play and the arena's games, in `loop.precision`.
    fn play_net(&self) -> Result<InferenceNet, PipelineError> {
        Ok(self.trainer.inference_net(&self.device)?.with_precision(self.config.run().precision))
    }

    /// The held-out loss: the new samples under the network before any step on them (not
    /// after a resume in the middle of the iteration's training).
    fn score_held_out(
        &self,
        iteration: u64,
        shard: &Shard,
    ) -> Result<Option<HeldOutLosses>, PipelineError> {
        if self.steps_in_iteration > 0 || self.config.run().heldout_samples == 0 {
            return Ok(None);
        }
        let net = self.trainer.inference_net(&self.device)?;
        heldout_losses(
            &net,
            shard,
            self.config.run().heldout_samples,
            &Targets::of(self.config.run(), self.trainer.net().config()),
        )
        .map_err(|reason| PipelineError::Shard { path: shard_path(&self.paths, iteration), reason })
    }

    /// The iteration's optimizer steps on the window: `new samples · train_ratio / batch_size`
    /// (at least one; none while the window is below `min_window_samples`), the ones already
    /// taken before a stop counted. `None` if interrupted (the steps so far checkpointed: in
    /// the first iteration as `ckpt-000001`, so that `ckpt-000000` stays the initial network).
    fn train_on_window(
        &mut self,
        new_samples: usize,
        observer: &mut dyn Observer,
    ) -> Result<Option<TrainingPhase>, PipelineError> {
        let r = self.config.run();
        let planned = if self.window.samples < r.min_window_samples {
            0
        } else {
            ((new_samples as f64 * r.train_ratio / r.batch_size as f64).round() as u64).max(1)
        };
        let train_start = Instant::now();
        let steps_before_stop = self.steps_in_iteration;
        let mut sums = StepMetrics::default();
        let mut taken = 0u64;
        let mut batch = TrainBatch::for_encoding(self.encoding(), r.batch_size);
        let targets = Targets::of(r, self.trainer.net().config());
        while self.steps_in_iteration < planned {
            if observer.should_stop() {
                if taken > 0 {
                    self.save_checkpoint()?;
                }
                return Ok(None);
            }
            let seed = derive_seed(r.seed, 2, self.trainer.step_count());
            self.window.fill_batch(&mut batch, r.batch_size, seed, &targets).map_err(
                |(iteration, reason)| PipelineError::Shard {
                    // Shards are numbered from 1; 0 is a failure of no one shard's.
                    path: match iteration {
                        0 => self.paths.shards.clone(),
                        n => shard_path(&self.paths, n),
                    },
                    reason,
                },
            )?;
            let progress = self.budget_progress();
            self.trainer.set_run_progress(progress);
            let m = self.trainer.step(&batch)?;
            observer.step(&m);
            accumulate(&mut sums, &m);
            taken += 1;
            self.steps_in_iteration += 1;
        }
        let secs = train_start.elapsed().as_secs_f64();
        Ok(Some(TrainingPhase {
            mean: mean(&sums, taken),
            steps: taken,
            steps_before_stop,
            samples_per_sec: if secs > 0.0 {
                (taken as usize * r.batch_size) as f64 / secs
            } else {
                0.0
            },
        }))
    }

    /// Warnings gathered since the last call (entries moved aside while checkpointing).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.pending_warnings)
    }
}

/// An iteration's games, from wherever they came ([`TrainingRun::iteration_games`]).
struct IterationGames {
    shard: Shard,
    report: SelfPlayReport,
    /// The games' resignation counts (self-tuning resignation), where known.
    resign_counts: Option<ResignCalibration>,
    /// From a store: the cursor after the shards consumed, which the checkpoint records.
    consumed: Option<ShardCursor>,
    /// From a store: what the iteration took from it.
    ingest: Option<IngestReport>,
}

/// What an iteration's training did ([`TrainingRun::train_on_window`]).
struct TrainingPhase {
    mean: StepMetrics,
    steps: u64,
    /// Steps of the iteration taken before a stop, in an earlier session.
    steps_before_stop: u64,
    samples_per_sec: f64,
}

fn accumulate(sum: &mut StepMetrics, m: &StepMetrics) {
    sum.step = m.step;
    sum.samples += m.samples;
    sum.full_searches += m.full_searches;
    sum.loss += m.loss;
    sum.policy_loss += m.policy_loss;
    sum.value_loss += m.value_loss;
    sum.weight_decay_loss += m.weight_decay_loss;
    sum.policy_entropy += m.policy_entropy;
    sum.value_accuracy += m.value_accuracy;
    sum.opponent_policy_loss += m.opponent_policy_loss;
    sum.soft_policy_loss += m.soft_policy_loss;
    sum.short_term_value_loss += m.short_term_value_loss;
    sum.moves_left_loss += m.moves_left_loss;
    sum.learning_rate = m.learning_rate;
    sum.grad_norm += m.grad_norm;
}

fn mean(sum: &StepMetrics, n: u64) -> StepMetrics {
    if n == 0 {
        return StepMetrics::default();
    }
    let k = n as f32;
    StepMetrics {
        step: sum.step,
        samples: sum.samples / n as usize,
        full_searches: sum.full_searches / n as usize,
        loss: sum.loss / k,
        policy_loss: sum.policy_loss / k,
        value_loss: sum.value_loss / k,
        weight_decay_loss: sum.weight_decay_loss / k,
        policy_entropy: sum.policy_entropy / k,
        value_accuracy: sum.value_accuracy / k,
        opponent_policy_loss: sum.opponent_policy_loss / k,
        soft_policy_loss: sum.soft_policy_loss / k,
        short_term_value_loss: sum.short_term_value_loss / k,
        moves_left_loss: sum.moves_left_loss / k,
        learning_rate: sum.learning_rate,
        grad_norm: sum.grad_norm / k,
    }
}

#[cfg(test)]
mod tests;
