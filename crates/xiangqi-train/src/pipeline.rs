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
use xiangqi_nn::{Device, InferenceNet, cpu_device};
use xiangqi_search::arena::{
    GameSettings, LocalPlayer, MatchConfig, MatchStats, MoveLimit, Opening, run_match_batched,
};
use xiangqi_search::{
    Encoding, GameEnv, GameKind, GameRecord, ResignCalibration, SearchConfig, SelfPlayConfig,
    SelfPlayEvent, SelfPlayStats, Shard, UNKNOWN_MATERIAL, UniformEvaluator, game_rng, list_shards,
    play_games, read_shard, read_shard_from, write_shard, write_shard_to,
};
use xiangqi_store::Store;

use crate::distributed::{
    self, DistributedError, LOCAL_SELFPLAY_WORKER, ShardCursor, pending_shards,
};

mod pretrain;

pub use pretrain::PretrainReport;

/// The `[loop]` section: how self-play and training alternate, the replay window, budgets,
/// checkpoints and the arena.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoopConfig {
    /// Self-play games per iteration.
    pub games_per_iteration: u64,
    /// Samples trained per sample generated (each iteration takes
    /// `round(new samples · train_ratio / batch_size)` optimizer steps, at least one).
    pub train_ratio: f64,
    /// Samples per optimizer step.
    pub batch_size: usize,
    /// Weight λ of the search's root value in the value target: the WDL target is
    /// `(1 − λ) · onehot(game result) + λ · (max(q, 0), 1 − |q|, max(−q, 0))`, where `q` in
    /// [-1, 1] is the root value of the sample's search for the side to move. 0 trains on game
    /// results alone (AlphaZero); a positive λ mixes in the search's own estimate, which is less
    /// noisy when most games end undecided (Leela Chess Zero's `q_ratio`; V. Abrams, "Lessons
    /// from AlphaZero part 4: improving the training target", 2018, found averaging best).
    pub value_q_weight: f64,
    /// Weight μ of the material target in the value target: the material balance of the
    /// game's final position for the side to move, `p` pawns (xiangqi: chariot 9, cannon 4.5,
    /// horse 4, advisor and elephant 2, soldier 1; janggi: chariot 6.5, cannon 3.5, horse 2.5,
    /// elephant and guard 1.5, soldier 1), as `t = tanh(p / material_scale)` and the WDL
    /// `((1 + t) / 2, 0, (1 − t) / 2)` (no draw mass invented). A dense signal that every game
    /// carries, decided or not: the analogue of KataGo's score target (Wu 2019) folded into the
    /// value. `value_q_weight + material_weight` is at most 1; the game result has the rest.
    pub material_weight: f64,
    /// Pawns of material balance that make `t = tanh(1) ≈ 0.76` in the material target.
    pub material_scale: f64,
    /// Weight in the value loss of samples from cheap searches (playout cap randomization);
    /// KataGo gives them 0 (`cheapSearchTargetWeight`). Full-search samples weigh 1.
    pub cheap_value_weight: f64,
    /// Self-tuning resignation: when above 0, the loop chooses `selfplay.resign_threshold`
    /// before each iteration's self-play as the highest threshold whose measured
    /// false-positive rate is at most this fraction (AlphaGo Zero kept it below 0.05), from
    /// the games played out without resignation ([`xiangqi_search::resign`]). Resignation
    /// stays off until `resign_min_resigners` played-out sides would have resigned under a
    /// qualifying threshold. `selfplay.resign_threshold` must then be -1. 0 = off: the
    /// configured threshold is used as it is.
    pub resign_target_false_positive: f64,
    /// Played-out sides that must have fallen below a threshold before it may be chosen.
    pub resign_min_resigners: u64,
    /// Held-out loss: this many samples of each new shard (evenly spread over it) are scored
    /// by the network before any training on them (`heldout_*` columns of `metrics.csv`);
    /// 0 = not measured.
    pub heldout_samples: usize,
    /// The replay window: the newest samples kept for training (whole shards are dropped).
    pub window_samples: usize,
    /// No training until the window holds this many samples.
    pub min_window_samples: usize,
    /// Shards kept on disk (older ones are deleted); 0 keeps them all. At least the window.
    pub max_shards_on_disk: usize,
    /// Training checkpoints kept (the initial one, `ckpt-000000`, is always kept).
    pub keep_checkpoints: usize,
    /// Run the arena every this many iterations; 0 never.
    pub arena_every: u64,
    /// Games per arena match (in colour-swapped pairs).
    pub arena_games: u32,
    /// Simulations per move of the network in the arena; 0 uses `search.simulations`.
    pub arena_simulations: u32,
    /// Games of each iteration written to the sample PGN file.
    pub pgn_games_per_iteration: usize,
    /// Stop after this many optimizer steps; 0 = no limit.
    pub max_steps: u64,
    /// Stop after this many self-play samples; 0 = no limit.
    pub max_samples: u64,
    /// Stop after this many hours of running time (summed over resumes); 0 = no limit.
    pub max_hours: f64,
    /// Master seed: weights, self-play and mini-batches are derived from it.
    pub seed: u64,
    /// The device that trains and evaluates the network: `cpu`, `wgpu`, `wgpu:N` or `cuda:N`
    /// ([`xiangqi_nn::device`]). The caller turns it into a device (`xqz train --device` wins over
    /// it); the loop runs on the device it is given.
    pub device: String,
    /// Distributed runs (`xqz train --store`): threads of the trainer's own self-play, which
    /// then plays `games_per_iteration` games each iteration beside the workers; 0 = none (the
    /// workers play every game). Without a store the trainer plays every game with
    /// `selfplay.threads` and this key is not used.
    pub local_selfplay_threads: u32,
    /// Distributed runs: shards played by a net more than this many generations older than the
    /// trainer's are discarded (consumed without training; counted in `metrics.csv`); 0 = no
    /// bound.
    pub max_generation_lag: u64,
    /// Distributed runs: seconds between the trainer's looks at the store while it waits for
    /// the workers' games (workers look for a newer net after each shard they upload).
    pub store_poll_seconds: f64,
    /// Distributed runs: keep the workers' shards in the store after the trainer has consumed
    /// them (its run directory keeps its own copy either way); `false` deletes them once the
    /// checkpoint that consumed them is written.
    pub store_keep_shards: bool,
    /// Distributed runs: the nets kept in the store (`models/N.net`), the newest; older ones
    /// are deleted after each publish. The net `models/latest` names is never deleted, and a
    /// worker whose download finds its net deleted takes the newest. At least 1.
    pub store_keep_nets: u64,
    /// Distributed runs: iterations after which the trainer forgets a worker (its entry in the
    /// consumed-shard cursor) when none of its shards was consumed in them and its folder in
    /// the store is empty (all its shards consumed and deleted; so never with
    /// `store_keep_shards`). A forgotten worker that comes back is read from its next shard on
    /// ([`crate::distributed::ShardCursor`]). 0 = never forget.
    pub store_forget_workers_after: u64,
    /// Pretraining: a directory of replay shards (or one shard file) that a new run trains on
    /// before its first self-play: games it did not play, from `xqz import` (game records) or
    /// `xqz label` (positions scored by an engine). Every `*.npz` in the directory is read into
    /// memory. Empty = no pretraining. Used only before the first iteration; the checkpoints
    /// record what the net was pretrained on ([`xiangqi_nn::checkpoint::Pretraining`]).
    pub pretrain_shards: String,
    /// Pretraining: optimizer steps of `batch_size` uniform samples (with mirror augmentation,
    /// as self-play's); 0 = as many as train each sample `train_ratio` times on average. The
    /// steps count toward `max_steps`, and their time toward `max_hours`.
    pub pretrain_steps: u64,
    /// Pretraining: the weight λ of the shards' own values (`root_value`: the engine's score
    /// `W − L` in labelled shards, the game's result in imported ones) in the value target,
    /// the game result having `1 − λ` (see `value_q_weight`). 1 trains on the shards' values
    /// alone, which is what a labelled shard is for; for imported shards it also turns an
    /// agreed draw, which has no rule verdict, into a draw target instead of teaching nothing.
    pub pretrain_value_q_weight: f64,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            games_per_iteration: 64,
            train_ratio: 4.0,
            batch_size: 256,
            value_q_weight: 0.0,
            material_weight: 0.0,
            material_scale: 4.0,
            cheap_value_weight: 1.0,
            resign_target_false_positive: 0.0,
            resign_min_resigners: 100,
            heldout_samples: 1024,
            window_samples: 100_000,
            min_window_samples: 2_000,
            max_shards_on_disk: 0,
            keep_checkpoints: 3,
            arena_every: 5,
            arena_games: 20,
            arena_simulations: 0,
            pgn_games_per_iteration: 2,
            max_steps: 0,
            max_samples: 0,
            max_hours: 0.0,
            seed: 1,
            device: "cpu".to_string(),
            local_selfplay_threads: 0,
            max_generation_lag: 0,
            store_poll_seconds: 5.0,
            store_keep_shards: false,
            store_keep_nets: 4,
            store_forget_workers_after: 100,
            pretrain_shards: String::new(),
            pretrain_steps: 0,
            pretrain_value_q_weight: 1.0,
        }
    }
}

/// The most games an iteration may play.
const MAX_GAMES_PER_ITERATION: u64 = 100_000;
/// The largest `loop.train_ratio`.
const MAX_TRAIN_RATIO: f64 = 100.0;
/// The largest replay window (samples).
const MAX_WINDOW_SAMPLES: usize = 50_000_000;
/// The most games of one arena match.
const MAX_ARENA_GAMES: u32 = 100_000;

impl LoopConfig {
    /// Checks every value.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key (`loop.<key>`) and why.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &'static str, reason: &str| Err(ConfigError { key, reason: reason.into() });
        if !(1..=MAX_GAMES_PER_ITERATION).contains(&self.games_per_iteration) {
            return bad("loop.games_per_iteration", "must be between 1 and 100000");
        }
        // Bounded so that one iteration's training ends: a sample is trained on at most
        // MAX_TRAIN_RATIO times on average (AlphaZero-style runs use about 1 to 10).
        if !(self.train_ratio.is_finite()
            && self.train_ratio > 0.0
            && self.train_ratio <= MAX_TRAIN_RATIO)
        {
            return bad("loop.train_ratio", "must be a number above 0 and at most 100");
        }
        if self.batch_size == 0 || self.batch_size > 65_536 {
            return bad("loop.batch_size", "must be between 1 and 65536");
        }
        if !(0.0..=1.0).contains(&self.value_q_weight) {
            return bad("loop.value_q_weight", "must be between 0 and 1");
        }
        if !(0.0..=1.0).contains(&self.material_weight) {
            return bad("loop.material_weight", "must be between 0 and 1");
        }
        if self.value_q_weight + self.material_weight > 1.0 + 1e-9 {
            return bad(
                "loop.material_weight",
                "loop.value_q_weight + loop.material_weight must be at most 1",
            );
        }
        if !(self.material_scale.is_finite() && self.material_scale > 0.0) {
            return bad("loop.material_scale", "must be a positive number of pawns");
        }
        if !(0.0..=1.0).contains(&self.cheap_value_weight) {
            return bad("loop.cheap_value_weight", "must be between 0 and 1");
        }
        if !(0.0..=0.5).contains(&self.resign_target_false_positive) {
            return bad("loop.resign_target_false_positive", "must be between 0 (off) and 0.5");
        }
        if self.resign_min_resigners == 0 || self.resign_min_resigners > 1_000_000 {
            return bad("loop.resign_min_resigners", "must be between 1 and 1000000");
        }
        if self.heldout_samples > 100_000 {
            return bad("loop.heldout_samples", "must be at most 100000 (0 = not measured)");
        }
        if !(1..=MAX_WINDOW_SAMPLES).contains(&self.window_samples) {
            return bad("loop.window_samples", "must be between 1 and 50000000");
        }
        if self.min_window_samples > self.window_samples {
            return bad("loop.min_window_samples", "must not exceed loop.window_samples");
        }
        if self.arena_every > 0 && self.arena_games == 0 {
            return bad("loop.arena_games", "must be at least 1 when loop.arena_every > 0");
        }
        if self.arena_games > MAX_ARENA_GAMES {
            return bad("loop.arena_games", "must be at most 100000");
        }
        // Checkpoint manifests are TOML, whose integers are signed 64-bit.
        for (key, v) in [("loop.max_steps", self.max_steps), ("loop.max_samples", self.max_samples)]
        {
            if v > i64::MAX as u64 {
                return Err(ConfigError { key, reason: format!("must be at most {}", i64::MAX) });
            }
        }
        if !(self.max_hours.is_finite() && self.max_hours >= 0.0) {
            return bad("loop.max_hours", "must be a number >= 0 (0 = no limit)");
        }
        if self.local_selfplay_threads > 1024 {
            return bad("loop.local_selfplay_threads", "must be at most 1024 (0 = none)");
        }
        if !(self.store_poll_seconds.is_finite()
            && (0.05..=3600.0).contains(&self.store_poll_seconds))
        {
            return bad("loop.store_poll_seconds", "must be between 0.05 and 3600 seconds");
        }
        if !(1..=1_000_000).contains(&self.store_keep_nets) {
            return bad("loop.store_keep_nets", "must be between 1 and 1000000 nets");
        }
        if self.store_forget_workers_after > 1_000_000_000 {
            return bad(
                "loop.store_forget_workers_after",
                "must be at most 1000000000 iterations (0 = never forget)",
            );
        }
        if self.pretrain_steps > i64::MAX as u64 {
            return bad(
                "loop.pretrain_steps",
                "must be at most 9223372036854775807 (0 = automatic)",
            );
        }
        if !(0.0..=1.0).contains(&self.pretrain_value_q_weight) {
            return bad("loop.pretrain_value_q_weight", "must be between 0 and 1");
        }
        if let Err(e) = self.device.parse::<xiangqi_nn::device::DeviceSpec>() {
            return Err(ConfigError { key: "loop.device", reason: e.to_string() });
        }
        Ok(())
    }
}

/// Everything a training run is configured by (the sections of a config file).
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// `[network]`.
    pub network: NetConfig,
    /// `[training]`.
    pub training: TrainConfig,
    /// `[search]`.
    pub search: SearchConfig,
    /// `[selfplay]`.
    pub selfplay: SelfPlayConfig,
    /// `[loop]`.
    pub run: LoopConfig,
}

impl RunConfig {
    /// Checks every section and the rules between sections (a fixed resignation threshold
    /// beside the self-tuning one, say).
    ///
    /// # Errors
    /// [`PipelineError::Config`] naming the first bad key and why.
    pub fn validate(&self) -> Result<(), PipelineError> {
        validate(self)
    }
}

/// The directories of a run, chosen by the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPaths {
    /// Replay shards (`shard-NNNNNN.npz`, N = iteration).
    pub shards: PathBuf,
    /// Checkpoints (`ckpt-NNNNNN`, N = completed iterations).
    pub checkpoints: PathBuf,
    /// Sample games of each iteration (PGN, appended).
    pub games_pgn: PathBuf,
}

impl RunPaths {
    /// The standard layout under one run directory.
    pub fn under(root: &Path) -> RunPaths {
        RunPaths {
            shards: root.join("shards"),
            checkpoints: root.join("checkpoints"),
            games_pgn: root.join("games.pgn"),
        }
    }
}

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

/// What one self-play phase produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SelfPlayReport {
    /// Games finished.
    pub games: u64,
    /// Samples written.
    pub samples: usize,
    /// Sum of game lengths in plies.
    pub plies: u64,
    /// The pool's counters (zero when the shard was reused on resume).
    pub stats: SelfPlayStats,
    /// Wall time.
    pub elapsed: Duration,
    /// The resignation threshold self-play used (`None` when the shard was reused on resume).
    pub resign_threshold: Option<f32>,
}

impl SelfPlayReport {
    /// Mean game length in plies.
    pub fn mean_game_length(&self) -> f64 {
        if self.games == 0 { 0.0 } else { self.plies as f64 / self.games as f64 }
    }

    /// Share of finished games ending for `reason`.
    pub fn reason_share(&self, reason: OutcomeReason) -> f64 {
        let total: u64 = self.stats.reasons.iter().sum();
        if total == 0 { 0.0 } else { self.stats.reasons[reason.index()] as f64 / total as f64 }
    }
}

/// What one iteration did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IterationReport {
    /// The iteration (from 1).
    pub iteration: u64,
    /// Self-play.
    pub selfplay: SelfPlayReport,
    /// Optimizer steps taken in this iteration.
    pub steps: u64,
    /// Mean of the step metrics over those steps (`step` is the last step).
    pub mean: StepMetrics,
    /// Training samples per second over the training phase.
    pub train_samples_per_sec: f64,
    /// Samples in the replay window after this iteration.
    pub window_samples: usize,
    /// Total self-play samples so far.
    pub total_samples: u64,
    /// Total optimizer steps so far.
    pub total_steps: u64,
    /// Running time so far (summed over resumes).
    pub elapsed: Duration,
    /// The new shard's losses before it was trained on (`None` when not measured).
    pub heldout: Option<HeldOutLosses>,
    /// What the iteration took from the store (`None` without a store).
    pub ingest: Option<IngestReport>,
}

/// What one iteration of a distributed run took from its store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IngestReport {
    /// Shards consumed (trained on), from how many workers.
    pub shards: u64,
    /// Distinct workers among them.
    pub workers: u64,
    /// Bytes downloaded (consumed and discarded shards).
    pub bytes: u64,
    /// Shards discarded as too old (`loop.max_generation_lag`).
    pub stale_shards: u64,
    /// Shards discarded as unreadable or of other rules (each named in a warning).
    pub bad_shards: u64,
    /// Generations between the net that played a consumed game and the trainer's (the age of
    /// the data): mean and maximum over the consumed games.
    pub age_mean: f64,
    /// See `age_mean`.
    pub age_max: u64,
    /// Seconds spent waiting for and reading shards.
    pub seconds: f64,
    /// Shards left unread in the store when the iteration's window was full (of those listed
    /// when it gathered): nonzero when the workers upload faster than the trainer consumes.
    pub waiting_shards: u64,
    /// Distinct workers among the waiting shards.
    pub waiting_workers: u64,
    /// Every shard the iteration consumed, in the order read: what its record in the run
    /// directory lists (`shards/store-consumed-N.txt`).
    pub consumed: Vec<ConsumedShard>,
}

/// What became of a store shard an iteration consumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardFate {
    /// Trained on (counted in `store_shards`).
    Trained,
    /// Played by a net too old (`loop.max_generation_lag`): not trained on (`stale_shards`).
    Stale,
    /// Unreadable, of other rules or another worker's: not trained on (`bad_shards`).
    Bad,
}

impl ShardFate {
    /// Its name in a record.
    pub fn name(self) -> &'static str {
        match self {
            ShardFate::Trained => "trained",
            ShardFate::Stale => "stale",
            ShardFate::Bad => "bad",
        }
    }

    fn parse(name: &str) -> Option<ShardFate> {
        [ShardFate::Trained, ShardFate::Stale, ShardFate::Bad]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

/// A store shard an iteration consumed, as the iteration's record lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumedShard {
    /// Its key in the store.
    pub key: String,
    /// Its samples and games (0 for a bad shard).
    pub samples: u64,
    /// See `samples`.
    pub games: u64,
    /// What became of it.
    pub fate: ShardFate,
}

/// The losses of a new shard's samples under the network that is about to train on them (so
/// never trained on yet): a held-out measure of how well the network predicts fresh games.
/// Cross-entropies in nats; `NaN` where no sample had that kind of target.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HeldOutLosses {
    /// Samples scored.
    pub samples: usize,
    /// Policy cross-entropy over the legal moves, mean over the full-search samples.
    pub policy_loss: f64,
    /// WDL cross-entropy against the training target, weighted as in training.
    pub value_loss: f64,
    /// WDL cross-entropy against the game result alone (one-hot), over samples of games that
    /// have one (not cut at the length cap).
    pub result_loss: f64,
    /// WDL cross-entropy against the material target alone (`loop.material_scale`), over
    /// samples whose final material is known.
    pub material_loss: f64,
}

/// One arena match of the current network.
#[derive(Clone, Debug, PartialEq)]
pub struct ArenaReport {
    /// The iteration after which it was played.
    pub iteration: u64,
    /// The opponent (`random`, `greedy`, `ckpt-NNNNNN`).
    pub opponent: String,
    /// Results from the current network's side.
    pub stats: MatchStats,
}

/// Receives the loop's reports (the CLI writes TensorBoard, CSV and a progress bar from them)
/// and tells it when to stop.
pub trait Observer {
    /// An iteration starts.
    fn iteration_started(&mut self, _iteration: u64) {}
    /// Self-play progress within an iteration.
    fn selfplay_progress(&mut self, _stats: &SelfPlayStats) {}
    /// The pretraining phase starts (or goes on after a resume); its steps are then reported
    /// through [`Observer::step`].
    fn pretrain_started(&mut self, _record: &checkpoint::Pretraining) {}
    /// The pretraining phase ended, finished or stopped (its checkpoint is written).
    fn pretrained(&mut self, _report: &PretrainReport) {}
    /// One optimizer step was taken.
    fn step(&mut self, _metrics: &StepMetrics) {}
    /// An iteration finished; called just before its checkpoint is written. A run killed
    /// between the two is resumed from the checkpoint before and plays the iteration again, so
    /// an observer that keeps reports (a CSV file) drops, on resume, those of iterations after
    /// [`TrainingRun::iteration`] (and arena reports after
    /// [`TrainingRun::last_arena_iteration`]).
    fn iteration(&mut self, _report: &IterationReport) {}
    /// An arena match finished.
    fn arena(&mut self, _report: &ArenaReport) {}
    /// A checkpoint was written.
    fn checkpoint(&mut self, _dir: &Path) {}
    /// Something the user should know that does not stop the run (a folder moved aside).
    fn warning(&mut self, _message: &str) {}
    /// Whether to stop now (Ctrl-C); polled between games and between steps.
    fn should_stop(&mut self) -> bool {
        false
    }
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// Why [`TrainingRun::run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The observer asked to stop; the state was checkpointed.
    Interrupted,
    /// A budget of `[loop]` (steps, samples or hours) was spent.
    Budget,
    /// The requested number of iterations was done.
    Iterations,
}

/// The samples of the replay window: whole shards, newest last.
#[derive(Debug, Default)]
struct ReplayWindow {
    shards: VecDeque<(u64, Shard)>,
    samples: usize,
}

impl ReplayWindow {
    fn push(&mut self, iteration: u64, shard: Shard, cap: usize) {
        self.samples += shard.len();
        self.shards.push_back((iteration, shard));
        while let Some((_, oldest)) = self.shards.front() {
            if self.samples - oldest.len() >= cap {
                self.samples -= oldest.len();
                self.shards.pop_front();
            } else {
                break;
            }
        }
    }

    /// Sample `i` of the window (`i < self.samples`).
    fn locate(&self, mut i: usize) -> (&Shard, usize) {
        for (_, s) in &self.shards {
            if i < s.len() {
                return (s, i);
            }
            i -= s.len();
        }
        unreachable!("sample index beyond the window")
    }
}

/// The settings of [`LoopConfig`] that shape the value target.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ValueTargets {
    q_weight: f32,
    material_weight: f32,
    material_scale: f32,
    cheap_weight: f32,
}

impl ValueTargets {
    fn of(r: &LoopConfig) -> ValueTargets {
        ValueTargets {
            q_weight: r.value_q_weight as f32,
            material_weight: r.material_weight as f32,
            material_scale: r.material_scale as f32,
            cheap_weight: r.cheap_value_weight as f32,
        }
    }
}

/// The WDL target of a sample and its weight in the value loss: the game result, mixed with
/// its search's root value `q` by `q_weight` (see [`LoopConfig::value_q_weight`]) and with the
/// final material balance (`material_pawns`, if known) by `material_weight`
/// ([`LoopConfig::material_weight`]). A game cut off at its length cap has no result: its
/// target is the other parts alone, renormalised, with their total weight (0 when there are
/// none: it teaches nothing). A cheap-search sample's weight is multiplied by `cheap_weight`.
fn value_target(
    result: i8,
    q: f32,
    material_pawns: Option<f32>,
    capped: bool,
    full_search: bool,
    t: &ValueTargets,
) -> ([f32; 3], f32) {
    let z = match result {
        1 => [1.0, 0.0, 0.0],
        0 => [0.0, 1.0, 0.0],
        _ => [0.0, 0.0, 1.0],
    };
    let q = if q.is_finite() { q.clamp(-1.0, 1.0) } else { 0.0 };
    let from_q = [q.max(0.0), 1.0 - q.abs(), (-q).max(0.0)];
    let (from_m, m_weight) = match material_pawns {
        Some(p) if p.is_finite() => {
            let m = (p / t.material_scale).tanh();
            ([(1.0 + m) / 2.0, 0.0, (1.0 - m) / 2.0], t.material_weight)
        }
        _ => ([0.0; 3], 0.0),
    };
    let result_weight = if capped { 0.0 } else { (1.0 - t.q_weight - t.material_weight).max(0.0) };
    let total = result_weight + t.q_weight + m_weight;
    let sample_weight = if full_search { 1.0 } else { t.cheap_weight };
    if total <= 0.0 {
        return (z, 0.0);
    }
    let target = std::array::from_fn(|k| {
        (result_weight * z[k] + t.q_weight * from_q[k] + m_weight * from_m[k]) / total
    });
    let weight = if capped { total } else { 1.0 };
    (target, weight * sample_weight)
}

/// Turns shard sample `i` into a training sample of `batch`.
fn push_sample(
    batch: &mut TrainBatch,
    shard: &Shard,
    i: usize,
    targets: &ValueTargets,
) -> Result<(), String> {
    let s = shard.sample(i);
    let mut policy = Vec::with_capacity(s.moves.len());
    for (&raw, &p) in s.moves.iter().zip(s.probs) {
        let m = Move::from_u16(raw).ok_or_else(|| format!("sample {i}: bad move code {raw}"))?;
        let index = (batch.encoding().move_to_index)(m, s.inputs.turn)
            .ok_or_else(|| format!("sample {i}: move {m} has no policy index"))?;
        policy.push((index as u16, p));
    }
    let capped = s.ending == OutcomeReason::LengthCap.index() as u8;
    let material =
        (s.final_material != UNKNOWN_MATERIAL).then(|| f32::from(s.final_material) / 2.0);
    let (wdl, weight) =
        value_target(s.result, s.root_value, material, capped, s.full_search, targets);
    batch
        .push_weighted(&s.inputs, &policy, wdl, s.full_search, weight)
        .map_err(|e| format!("sample {i}: {e}"))
}

/// The cross-entropy `−Σ target · ln p` of a WDL prediction (probabilities floored at 1e-12).
fn wdl_cross_entropy(target: [f32; 3], p: [f32; 3]) -> f64 {
    (0..3).map(|k| -f64::from(target[k]) * f64::from(p[k].max(1e-12)).ln()).sum()
}

/// The policy cross-entropy of one sample over its legal actions (`legal[a] > 0`), from the
/// network's logits.
fn legal_policy_cross_entropy(logits: &[f32], target: &[f32], legal: &[f32]) -> f64 {
    let max = logits
        .iter()
        .zip(legal)
        .filter(|&(_, &l)| l > 0.0)
        .map(|(&x, _)| f64::from(x))
        .fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return f64::NAN;
    }
    let sum: f64 = logits
        .iter()
        .zip(legal)
        .filter(|&(_, &l)| l > 0.0)
        .map(|(&x, _)| (f64::from(x) - max).exp())
        .sum();
    let log_z = max + sum.ln();
    logits
        .iter()
        .zip(target)
        .filter(|&(_, &t)| t > 0.0)
        .map(|(&x, &t)| -f64::from(t) * (f64::from(x) - log_z))
        .sum()
}

/// Scores up to `n` samples of `shard`, spread evenly over it, with `net` (see
/// [`HeldOutLosses`]); `None` for an empty shard or `n == 0`.
///
/// # Errors
/// A damaged sample (with its index) or a failure of the network.
fn heldout_losses(
    net: &InferenceNet,
    shard: &Shard,
    n: usize,
    targets: &ValueTargets,
) -> Result<Option<HeldOutLosses>, String> {
    let len = shard.len();
    if len == 0 || n == 0 {
        return Ok(None);
    }
    let n = n.min(len);
    let indices: Vec<usize> = (0..n).map(|k| k * len / n).collect();
    let encoding = *net.encoding();
    let policy_size = encoding.policy_size;
    let mut batch = TrainBatch::for_encoding(encoding, n);
    for &i in &indices {
        push_sample(&mut batch, shard, i, targets)?;
    }
    let logits = net.predict(batch.planes().to_vec()).map_err(|e| e.to_string())?;
    let mean = |(sum, count): (f64, f64)| if count > 0.0 { sum / count } else { f64::NAN };
    let (mut policy, mut value, mut result, mut material) =
        ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0));
    for (j, &i) in indices.iter().enumerate() {
        let s = shard.sample(i);
        let p = logits.wdl_probabilities(j);
        let range = j * policy_size..(j + 1) * policy_size;
        if batch.is_full_search(j) {
            let ce = legal_policy_cross_entropy(
                logits.policy(j),
                &batch.policy()[range.clone()],
                &batch.legal()[range],
            );
            policy.0 += ce;
            policy.1 += 1.0;
        }
        let w = f64::from(batch.value_weights()[j]);
        if w > 0.0 {
            let t = [batch.wdl()[3 * j], batch.wdl()[3 * j + 1], batch.wdl()[3 * j + 2]];
            value.0 += w * wdl_cross_entropy(t, p);
            value.1 += w;
        }
        if s.ending != OutcomeReason::LengthCap.index() as u8 {
            let t = match s.result {
                1 => [1.0, 0.0, 0.0],
                0 => [0.0, 1.0, 0.0],
                _ => [0.0, 0.0, 1.0],
            };
            result.0 += wdl_cross_entropy(t, p);
            result.1 += 1.0;
        }
        if s.final_material != UNKNOWN_MATERIAL {
            let m = (f32::from(s.final_material) / 2.0 / targets.material_scale).tanh();
            material.0 += wdl_cross_entropy([(1.0 + m) / 2.0, 0.0, (1.0 - m) / 2.0], p);
            material.1 += 1.0;
        }
    }
    Ok(Some(HeldOutLosses {
        samples: n,
        policy_loss: mean(policy),
        value_loss: mean(value),
        result_loss: mean(result),
        material_loss: mean(material),
    }))
}

/// The cause of a shard error without the shard's path (which [`PipelineError::Shard`] names).
fn shard_reason(e: &xiangqi_search::ShardError) -> String {
    match e {
        xiangqi_search::ShardError::File { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// The resignation counts of the newest self-play phase (`shards/resign-pending.txt`): a first
/// line `iteration N`, then `bin lost kept` per non-empty bin.
const RESIGN_PENDING: &str = "resign-pending.txt";

/// Saves the resignation counts of iteration `iteration`'s games, atomically.
fn write_resign_pending(
    paths: &RunPaths,
    iteration: u64,
    counts: &ResignCalibration,
) -> Result<(), PipelineError> {
    let mut text = format!("iteration {iteration}\n");
    for (bin, lost, kept) in counts.counts() {
        text.push_str(&format!("{bin} {lost} {kept}\n"));
    }
    write_text_atomically(&paths.shards.join(RESIGN_PENDING), &text)
}

/// Writes a small text file atomically: `NAME.tmp` beside it, synced, then renamed.
fn write_text_atomically(path: &Path, text: &str) -> Result<(), PipelineError> {
    use std::io::Write as _;
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let io = |source| PipelineError::Io { what: "writing", path: path.to_path_buf(), source };
    let mut f = fs::File::create(&tmp).map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    fs::rename(&tmp, path).map_err(io)
}

/// The resignation counts saved for iteration `iteration`, if the file holds that iteration's
/// (anything unreadable counts as absent: the counts of one iteration are lost, nothing else).
fn read_resign_pending(paths: &RunPaths, iteration: u64) -> Option<ResignCalibration> {
    let text = fs::read_to_string(paths.shards.join(RESIGN_PENDING)).ok()?;
    let mut lines = text.lines();
    if lines.next()? != format!("iteration {iteration}") {
        return None;
    }
    let mut counts = ResignCalibration::new(RESIGN_CALIBRATION_CAPACITY);
    for line in lines {
        let v: Vec<u64> = line.split(' ').map(str::parse).collect::<Result<_, _>>().ok()?;
        let [bin, lost, kept] = v[..] else { return None };
        if !counts.set_counts(usize::try_from(bin).ok()?, lost, kept) {
            return None;
        }
    }
    Some(counts)
}

/// The record of iteration `iteration`'s store shards: the shards it consumed, its ingest
/// counts and the cursor after it ([`write_consumed`]). Kept for the whole run (a line per
/// shard), so that every iteration's shards can be counted.
fn consumed_path(paths: &RunPaths, iteration: u64) -> PathBuf {
    paths.shards.join(format!("store-consumed-{iteration:06}.txt"))
}

/// Saves the record of iteration `iteration`'s store shards, atomically, before its merged
/// shard: a line `shard ITERATION KEY SAMPLES GAMES FATE` for each shard consumed, a line
/// `ingest NAME=VALUE ...` of the counts `metrics.csv` shows, then the cursor after them
/// ([`ShardCursor::to_text`]). A resumed iteration that finds its shard reads them back, so
/// that its `metrics.csv` row is as complete as the first attempt's would have been.
fn write_consumed(
    paths: &RunPaths,
    iteration: u64,
    ingest: &IngestReport,
    cursor: &ShardCursor,
) -> Result<(), PipelineError> {
    let mut text = format!(
        "# xqz: the store's shards consumed by iteration {iteration}, one line each (shard, \
         iteration, key, samples, games, what became of it: trained, stale or bad); the \
         iteration's ingest counts; the cursor after it (worker, next shard, last iteration \
         that read one)\n"
    );
    for c in &ingest.consumed {
        text.push_str(&format!(
            "shard {iteration} {} {} {} {}\n",
            c.key,
            c.samples,
            c.games,
            c.fate.name()
        ));
    }
    let g = ingest;
    text.push_str(&format!(
        "ingest shards={} workers={} bytes={} stale={} bad={} age_mean={} age_max={} \
         seconds={} waiting_shards={} waiting_workers={}\n",
        g.shards,
        g.workers,
        g.bytes,
        g.stale_shards,
        g.bad_shards,
        g.age_mean,
        g.age_max,
        g.seconds,
        g.waiting_shards,
        g.waiting_workers
    ));
    text.push_str(&cursor.to_text());
    write_text_atomically(&consumed_path(paths, iteration), &text)
}

/// Parses a record ([`write_consumed`]); the ingest counts are `None` in a record of an
/// earlier version (the cursor alone). `None` if anything is malformed.
fn parse_consumed(text: &str) -> Option<(ShardCursor, Option<IngestReport>)> {
    let mut cursor_text = String::new();
    let mut ingest: Option<IngestReport> = None;
    let mut consumed = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        match fields.next() {
            None => {}
            Some(f) if f.starts_with('#') => {}
            Some("shard") => {
                let f: Vec<&str> = fields.collect();
                let [_, key, samples, games, fate] = f[..] else { return None };
                consumed.push(ConsumedShard {
                    key: key.to_string(),
                    samples: samples.parse().ok()?,
                    games: games.parse().ok()?,
                    fate: ShardFate::parse(fate)?,
                });
            }
            Some("ingest") => {
                let mut g = IngestReport::default();
                for field in fields {
                    let (name, value) = field.split_once('=')?;
                    let int = || value.parse::<u64>().ok();
                    match name {
                        "shards" => g.shards = int()?,
                        "workers" => g.workers = int()?,
                        "bytes" => g.bytes = int()?,
                        "stale" => g.stale_shards = int()?,
                        "bad" => g.bad_shards = int()?,
                        "age_mean" => g.age_mean = value.parse().ok()?,
                        "age_max" => g.age_max = int()?,
                        "seconds" => g.seconds = value.parse().ok()?,
                        "waiting_shards" => g.waiting_shards = int()?,
                        "waiting_workers" => g.waiting_workers = int()?,
                        _ => {}
                    }
                }
                ingest = Some(g);
            }
            Some(_) => {
                cursor_text.push_str(line);
                cursor_text.push('\n');
            }
        }
    }
    let cursor = ShardCursor::from_text(&cursor_text)?;
    if let Some(g) = &mut ingest {
        g.consumed = consumed;
    }
    Some((cursor, ingest))
}

/// The record saved beside iteration `iteration`'s shard, if it was gathered from a store:
/// the cursor after it and, unless an earlier version wrote it, the iteration's ingest.
///
/// # Errors
/// A record that cannot be read or parsed: the shards it stands for cannot be told apart
/// from unconsumed ones, so the run stops instead of training on them twice.
#[allow(clippy::type_complexity)]
fn read_consumed(
    paths: &RunPaths,
    iteration: u64,
) -> Result<Option<(ShardCursor, Option<IngestReport>)>, PipelineError> {
    let path = consumed_path(paths, iteration);
    match fs::read_to_string(&path) {
        Ok(text) => parse_consumed(&text).map(Some).ok_or_else(|| PipelineError::Shard {
            path: path.clone(),
            reason: "the record of the store's shards in this iteration's shard is damaged; \
                     delete it and the iteration's shard to gather them again"
                .into(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PipelineError::Io { what: "reading", path, source }),
    }
}

/// The self-play report of games gathered from a store, counted from their samples.
fn gathered_report(shard: &Shard) -> SelfPlayReport {
    let mut stats = SelfPlayStats::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut plies = 0u64;
    for i in 0..shard.len() {
        if !seen.insert((shard.worker[i], shard.game_id[i])) {
            continue;
        }
        stats.games_finished += 1;
        plies += u64::from(shard.game_plies[i]);
        if let Some(reason) = OutcomeReason::ALL.get(usize::from(shard.ending[i])) {
            stats.reasons[reason.index()] += 1;
        }
        // The result for Red from the result for the side to move.
        let red = if shard.turn[i] == 0 { shard.result[i] } else { -shard.result[i] };
        let k = match red {
            1 => 0,
            0 => 1,
            _ => 2,
        };
        stats.results[k] += 1;
    }
    stats.games_started = stats.games_finished;
    stats.moves = plies;
    stats.full_searches = shard.full_search.iter().map(|&f| u64::from(f)).sum();
    SelfPlayReport {
        games: stats.games_finished,
        samples: shard.len(),
        plies,
        stats,
        elapsed: Duration::ZERO,
        resign_threshold: None,
    }
}

fn shard_path(paths: &RunPaths, iteration: u64) -> PathBuf {
    paths.shards.join(format!("shard-{iteration:06}.npz"))
}

fn checkpoint_path(paths: &RunPaths, iteration: u64) -> PathBuf {
    paths.checkpoints.join(format!("ckpt-{iteration:06}"))
}

/// Parses `prefix-NNNNNN[suffix]` names.
fn numbered(path: &Path, prefix: &str, suffix: &str) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok()
}

/// What [`scan_checkpoints`] found in a run's checkpoint directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointScan {
    /// The run's checkpoints, oldest first, as `(number in the name, dir)`.
    pub checkpoints: Vec<(u64, PathBuf)>,
    /// Everything else that is not a temporary of an interrupted write: folders and files that
    /// are not this run's checkpoints (an empty `ckpt-N`, an export, a checkpoint whose manifest
    /// is unreadable or names another iteration), with the reason. They are never read, counted
    /// or pruned.
    pub ignored: Vec<(PathBuf, String)>,
}

/// Whether the manifest of `dir`, named `ckpt-<n>`, is a training checkpoint of a run: one with
/// an optimizer state whose iteration counter is `n`, or `n − 1` with optimizer steps of
/// iteration `n` already taken (a checkpoint of an interrupted first iteration).
/// On success, the checkpoint's run id (`None` for a run of an earlier version); else why it is
/// not one of a run's checkpoints.
fn run_checkpoint_problem(dir: &Path, n: u64) -> Result<Option<u64>, String> {
    let manifest = match checkpoint::read_manifest(dir, None) {
        Ok(m) => m,
        Err(CheckpointError::NoManifest { .. }) => {
            return Err(format!("no {}: not a checkpoint", checkpoint::MANIFEST));
        }
        Err(e) => return Err(e.to_string()),
    };
    if !manifest.has_optimizer() {
        return Err("a weights-only checkpoint or an export, not a training checkpoint".into());
    }
    let it = manifest.counters.get(COUNTER_ITERATION).copied();
    let steps = manifest.counters.get(COUNTER_STEPS_IN_ITERATION).copied().unwrap_or(0);
    // Pretraining's steps come before iteration 1 and are saved as `ckpt-000001`.
    let pretrained = manifest.pretrained.as_ref().is_some_and(|p| p.steps > 0);
    match it {
        Some(i) if i == n || (i + 1 == n && steps > 0) || (i == 0 && n == 1 && pretrained) => {
            Ok(manifest.counters.get(COUNTER_RUN_ID).copied())
        }
        Some(i) => Err(format!("its manifest records iteration {i}, not {n}")),
        None => Err("its manifest has no iteration counter".into()),
    }
}

/// The checkpoints of a run, oldest first, and the entries of the directory that are not
/// ([`CheckpointScan`]). A run's checkpoint is a directory `ckpt-NNNNNN` whose manifest is a
/// training checkpoint of iteration N; only its manifest is read (a damaged weights file is found
/// when the checkpoint is loaded). Temporaries of interrupted writes (`.ckpt-*`) are skipped.
///
/// # Errors
/// An I/O error reading the directory (a missing directory gives an empty scan).
pub fn scan_checkpoints(dir: &Path) -> io::Result<CheckpointScan> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(CheckpointScan::default()),
        Err(e) => return Err(e),
    };
    let mut scan = CheckpointScan::default();
    let mut found = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let hidden = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        let problem = match numbered(&path, "ckpt-", "") {
            Some(_) if !path.is_dir() => Some("not a directory".to_string()),
            Some(n) => match run_checkpoint_problem(&path, n) {
                Ok(run_id) => {
                    found.push((n, path, run_id));
                    continue;
                }
                Err(p) => Some(p),
            },
            None => Some("not named ckpt-NNNNNN".to_string()),
        };
        if let Some(reason) = problem {
            scan.ignored.push((path, reason));
        }
    }
    // The run's identity is its initial checkpoint's; a checkpoint with another is a copy
    // from another run.
    let initial = found.iter().find(|(n, _, _)| *n == 0).and_then(|(_, _, id)| *id);
    for (n, dir, run_id) in found {
        match initial {
            Some(ours) if run_id != Some(ours) => {
                scan.ignored.push((dir, "a checkpoint of another run (its run_id differs)".into()))
            }
            _ => scan.checkpoints.push((n, dir)),
        }
    }
    scan.checkpoints.sort();
    scan.ignored.sort();
    Ok(scan)
}

/// The checkpoints of a run, oldest first, as `(number in the name, dir)`: the checkpoints of
/// [`scan_checkpoints`], without what it ignores.
///
/// # Errors
/// An I/O error reading the directory (a missing directory gives an empty list).
pub fn list_checkpoints(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    Ok(scan_checkpoints(dir)?.checkpoints)
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
    config: RunConfig,
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
    /// What `resume` passed over: entries that are not the run's checkpoints, and newer
    /// checkpoints that could not be loaded, each with the reason.
    skipped: Vec<(PathBuf, String)>,
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
    pub fn create(config: RunConfig, paths: RunPaths) -> Result<TrainingRun, PipelineError> {
        TrainingRun::create_on(config, paths, cpu_device())
    }

    /// [`TrainingRun::create`] with the network on `device` (training on its autodiff form,
    /// self-play and the arena on the device itself).
    ///
    /// # Errors
    /// As [`TrainingRun::create`].
    pub fn create_on(
        config: RunConfig,
        paths: RunPaths,
        device: Device,
    ) -> Result<TrainingRun, PipelineError> {
        // Plain: the trainer makes its own autodiff form.
        let device = device.inner();
        validate(&config)?;
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
        for dir in [&paths.shards, &paths.checkpoints] {
            fs::create_dir_all(dir).map_err(|source| PipelineError::Io {
                what: "creating",
                path: dir.clone(),
                source,
            })?;
        }
        let encoding = Encoding::of_kind(config.selfplay.game);
        let trainer = Trainer::for_encoding(
            &config.network,
            encoding,
            &config.training,
            &device,
            config.run.seed,
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
            pending_warnings: Vec::new(),
            run_id: Some(new_run_id()),
            resign: ResignCalibration::new(RESIGN_CALIBRATION_CAPACITY),
            resign_threshold: -1.0,
            store: None,
            cursor: ShardCursor::default(),
            told_waiting: false,
            told_skipped: Default::default(),
            pretrained: None,
        };
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
    pub fn resume(config: RunConfig, paths: RunPaths) -> Result<TrainingRun, PipelineError> {
        TrainingRun::resume_on(config, paths, cpu_device())
    }

    /// [`TrainingRun::resume`] with the network on `device`: a run may move between devices
    /// (checkpoints carry no device).
    ///
    /// # Errors
    /// As [`TrainingRun::resume`].
    pub fn resume_on(
        config: RunConfig,
        paths: RunPaths,
        device: Device,
    ) -> Result<TrainingRun, PipelineError> {
        // Plain: the trainer makes its own autodiff form.
        let device = device.inner();
        validate(&config)?;
        remove_stale_temporaries(&paths)?;
        let scan = scan_checkpoints(&paths.checkpoints).map_err(|source| PipelineError::Io {
            what: "reading",
            path: paths.checkpoints.clone(),
            source,
        })?;
        let mut skipped = scan.ignored;
        let mut last_error = None;
        for (_, dir) in scan.checkpoints.iter().rev() {
            match checkpoint::load_trainer(
                dir,
                Some(&config.network),
                Some(&config.training),
                &device,
            ) {
                Ok((trainer, manifest)) => {
                    // A run of another game: the config is wrong, not the checkpoint.
                    manifest.expect_game(dir, config.selfplay.game)?;
                    let c = |k: &str| manifest.counters.get(k).copied().unwrap_or(0);
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
    /// directory that are not the run's checkpoints, and newer checkpoints it could not load.
    pub fn skipped(&self) -> &[(PathBuf, String)] {
        &self.skipped
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
    pub fn config(&self) -> &RunConfig {
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

    fn budget_spent(&self) -> bool {
        let r = &self.config.run;
        (r.max_steps > 0 && self.trainer.step_count() >= r.max_steps)
            || (r.max_samples > 0 && self.total_samples >= r.max_samples)
            || (r.max_hours > 0.0 && self.elapsed().as_secs_f64() >= r.max_hours * 3600.0)
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
        // An arena cut short by a stop or a kill after its iteration's checkpoint: play it now.
        let every = self.config.run.arena_every;
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
                    if self.config.run.arena_every > 0
                        && self.iteration.is_multiple_of(self.config.run.arena_every)
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
        let path = shard_path(&self.paths, iteration);
        // The shard of this iteration may exist from before a stop: use it as it is.
        let tuning = self.config.run.resign_target_false_positive > 0.0;
        // The store's shards it consumes, when they come from a store: the cursor after them,
        // which the iteration's checkpoint records.
        let mut consumed = None;
        let mut ingest = None;
        let (shard, selfplay, resign_counts) = match read_shard(&path) {
            Ok(shard) => {
                self.check_shard_game(&path, &shard)?;
                let report = SelfPlayReport {
                    games: shard.games().len() as u64,
                    samples: shard.len(),
                    ..Default::default()
                };
                // The games' resignation counts, saved beside the shard; already in the
                // checkpoint when it was written during this iteration's training.
                let counts = (tuning && self.steps_in_iteration == 0)
                    .then(|| read_resign_pending(&self.paths, iteration))
                    .flatten();
                // A shard gathered from a store has its record beside it, written first: the
                // cursor after it and what the iteration took from the store.
                if let Some((cursor, report)) = read_consumed(&self.paths, iteration)? {
                    consumed = Some(cursor);
                    ingest = report;
                }
                (shard, report, counts)
            }
            Err(_) if self.store.is_some() => match self.gather(iteration, observer)? {
                Some((shard, report, report_ingest, cursor)) => {
                    consumed = Some(cursor);
                    ingest = Some(report_ingest);
                    (shard, report, None)
                }
                None => return Ok(None),
            },
            Err(_) => match self.self_play(iteration, observer)? {
                Some((shard, report, counts)) => (shard, report, Some(counts)),
                None => return Ok(None),
            },
        };
        if tuning && let Some(counts) = resign_counts {
            let r = &self.config.run;
            self.resign.merge(&counts);
            self.resign.decay();
            self.resign_threshold =
                self.resign.choose(r.resign_target_false_positive, r.resign_min_resigners);
        }
        // The held-out loss: the new samples under the network before any step on them (not
        // after a resume in the middle of the iteration's training).
        let heldout = if self.steps_in_iteration == 0 && self.config.run.heldout_samples > 0 {
            let net = self.trainer.inference_net(&self.device)?;
            heldout_losses(
                &net,
                &shard,
                self.config.run.heldout_samples,
                &ValueTargets::of(&self.config.run),
            )
            .map_err(|reason| PipelineError::Shard { path: path.clone(), reason })?
        } else {
            None
        };
        if self.steps_in_iteration == 0 {
            self.total_samples += shard.len() as u64;
        }
        let new_samples = shard.len();
        self.window.push(iteration, shard, self.config.run.window_samples);
        self.prune_shards()?;

        // Training.
        let r = &self.config.run;
        let planned = if self.window.samples < r.min_window_samples {
            0
        } else {
            ((new_samples as f64 * r.train_ratio / r.batch_size as f64).round() as u64).max(1)
        };
        let train_start = Instant::now();
        let mut sums = StepMetrics::default();
        let mut taken = 0u64;
        let mut batch = TrainBatch::for_encoding(self.encoding(), r.batch_size);
        while self.steps_in_iteration < planned {
            if observer.should_stop() {
                // The steps of this iteration so far (in the first iteration as `ckpt-000001`,
                // so that `ckpt-000000` stays the initial network).
                if taken > 0 {
                    self.save_checkpoint()?;
                }
                return Ok(None);
            }
            let step = self.trainer.step_count();
            let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(r.seed, 2, step));
            batch.clear();
            for _ in 0..r.batch_size {
                let (shard, i) = self.window.locate(rng.random_range(0..self.window.samples));
                push_sample(&mut batch, shard, i, &ValueTargets::of(r)).map_err(|reason| {
                    PipelineError::Shard { path: self.paths.shards.clone(), reason }
                })?;
            }
            let m = self.trainer.step(&batch)?;
            observer.step(&m);
            accumulate(&mut sums, &m);
            taken += 1;
            self.steps_in_iteration += 1;
        }
        let train_secs = train_start.elapsed().as_secs_f64();
        self.iteration = iteration;
        self.steps_in_iteration = 0;
        if let Some(cursor) = consumed {
            self.cursor = cursor;
        }
        let report = IterationReport {
            iteration,
            mean: mean(&sums, taken),
            steps: taken,
            train_samples_per_sec: if train_secs > 0.0 {
                (taken as usize * self.config.run.batch_size) as f64 / train_secs
            } else {
                0.0
            },
            window_samples: self.window.samples,
            total_samples: self.total_samples,
            total_steps: self.trainer.step_count(),
            elapsed: self.elapsed(),
            selfplay,
            heldout,
            ingest,
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

    /// Connects the run to the store of a distributed run: claims the store (one trainer per
    /// store), and publishes the current network if the store lacks it. From then on every
    /// iteration gathers the workers' shards from the store (and plays
    /// `loop.local_selfplay_threads` games of its own, if set) and publishes each new network.
    ///
    /// # Errors
    /// [`PipelineError::Store`]: a store of another run, a new run on a store that holds nets,
    /// store errors; [`PipelineError::Config`] for settings a distributed run does not support.
    pub fn attach_store(&mut self, store: Store) -> Result<(), PipelineError> {
        if self.config.run.resign_target_false_positive > 0.0 {
            return Err(ConfigError {
                key: "loop.resign_target_false_positive",
                reason: "self-tuning resignation is not supported with a store (the workers do \
                         not report their resignation counts); set it to 0 and use a fixed \
                         selfplay.resign_threshold"
                    .into(),
            }
            .into());
        }
        let run_id = self.run_id.unwrap_or_default();
        let published = distributed::latest_generation(&store)?;
        // The owner's id decides (a run resumed before its first iteration finished has
        // published generation 0 already); a new run on a store with nets of another run is
        // refused by the id too, as that run owns the store.
        distributed::claim(&store, run_id, false)?;
        // What killed writers left (a trainer killed mid-publish, workers mid-upload).
        let (removed, failed) = distributed::clean_staging(&store);
        if !removed.is_empty() {
            let n = removed.len();
            self.pending_warnings.push(format!(
                "store '{}': removed {n} file{} that killed writers left: {}",
                store.location(),
                if n == 1 { "" } else { "s" },
                removed.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        for (path, reason) in failed {
            self.pending_warnings.push(format!(
                "store '{}': cannot remove {}, which a killed writer left: {reason}",
                store.location(),
                path.display()
            ));
        }
        self.store = Some(store);
        if published.is_none_or(|g| g < self.iteration) {
            self.publish()?;
        } else {
            self.prune_nets();
        }
        Ok(())
    }

    /// The store of a distributed run, if attached.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// Publishes the current network as generation [`TrainingRun::iteration`].
    fn publish(&mut self) -> Result<(), PipelineError> {
        let Some(store) = &self.store else { return Ok(()) };
        distributed::publish_net(store, self.iteration, self.trainer.net())?;
        self.prune_nets();
        Ok(())
    }

    /// After the checkpoint of `iteration`: deletes the consumed shards from the store (unless
    /// `loop.store_keep_shards`). The records of the iterations' shards
    /// (`store-consumed-N.txt`) are kept.
    fn tidy_store(&mut self, _iteration: u64) -> Result<(), PipelineError> {
        if let Some(store) = &self.store
            && !self.config.run.store_keep_shards
        {
            distributed::delete_consumed(store, &self.cursor).map_err(DistributedError::from)?;
        }
        Ok(())
    }

    /// Deletes the nets older than the newest `loop.store_keep_nets` from the store
    /// ([`distributed::prune_nets`]); a failure is a warning (the nets are only in the way).
    fn prune_nets(&mut self) {
        let Some(store) = &self.store else { return };
        let latest = match distributed::latest_generation(store) {
            Ok(Some(g)) => g,
            Ok(None) => return,
            Err(e) => {
                self.pending_warnings.push(format!("cannot prune the store's nets: {e}"));
                return;
            }
        };
        if let Err(e) = distributed::prune_nets(store, latest, self.config.run.store_keep_nets) {
            self.pending_warnings.push(format!(
                "cannot prune the store's nets (loop.store_keep_nets = {}): {e}; tried again \
                 after the next net",
                self.config.run.store_keep_nets
            ));
        }
    }

    /// Gathers the iteration's games from the store: plays the trainer's own share first (if
    /// `loop.local_selfplay_threads` > 0) and uploads it, then reads the shards after the
    /// cursor, one of each worker in turn, until `games_per_iteration` games (or a window's
    /// worth of samples) are in hand, waiting for the workers as needed. Writes the cursor after them and then the merged
    /// shard into the run directory. `None` if interrupted.
    #[allow(clippy::type_complexity)]
    fn gather(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
    ) -> Result<Option<(Shard, SelfPlayReport, IngestReport, ShardCursor)>, PipelineError> {
        let threads = self.config.run.local_selfplay_threads;
        let mut local = None;
        if threads > 0 {
            let key = distributed::shard_key(LOCAL_SELFPLAY_WORKER, iteration);
            let store = self.store.as_ref().expect("gather runs with a store");
            // Already uploaded by this iteration's earlier attempt (a resume): not played again.
            if !store.exists(&key).map_err(DistributedError::from)? {
                match self.play_iteration_games(iteration, observer, Some(threads))? {
                    None => return Ok(None),
                    Some((shard, report, _, pgn)) => {
                        let bytes = write_shard_to(io::Cursor::new(Vec::new()), &shard)
                            .map_err(|e| PipelineError::Shard {
                                path: PathBuf::from(&key),
                                reason: shard_reason(&e),
                            })?
                            .into_inner();
                        let store = self.store.as_ref().expect("gather runs with a store");
                        store.put_new(&key, bytes).map_err(DistributedError::from)?;
                        append(&self.paths.games_pgn, &pgn)?;
                        local = Some(report);
                    }
                }
            }
        }
        let started = Instant::now();
        let store = self.store.as_ref().expect("gather runs with a store");
        let r = &self.config.run;
        let mut cursor = self.cursor.clone();
        // Workers idle for loop.store_forget_workers_after iterations whose folders are empty
        // are forgotten before the listing, so that the cursor this iteration saves (in its
        // record and checkpoint) no longer holds them ([`ShardCursor::forget_idle`]).
        if !r.store_keep_shards {
            let forgotten = cursor
                .forget_idle(iteration, r.store_forget_workers_after, |w| {
                    let (entries, unnamed) =
                        store.list_after_lossy(&distributed::worker_dir_key(w), None)?;
                    Ok::<bool, xiangqi_store::StoreError>(
                        !entries.is_empty() || !unnamed.is_empty(),
                    )
                })
                .map_err(DistributedError::from)?;
            if !forgotten.is_empty() {
                let n = forgotten.len();
                observer.warning(&format!(
                    "store '{}': forgot {n} idle worker{} (none of its shards in the last {} \
                     iterations, nothing left in its folder; loop.store_forget_workers_after): \
                     {}",
                    store.location(),
                    if n == 1 { "" } else { "s" },
                    r.store_forget_workers_after,
                    forgotten.iter().map(|w| format!("{w:016x}")).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if threads > 0 {
            // The trainer's own shards are numbered by iteration: this one is next.
            cursor.skip_to(LOCAL_SELFPLAY_WORKER, iteration);
        }
        let mut merged = Shard::empty(self.config.selfplay.game, self.rules_code()?);
        let mut ingest = IngestReport::default();
        let mut workers = std::collections::BTreeSet::new();
        // Workers with a shard that could not be read in this gather.
        let mut unreadable = std::collections::BTreeSet::new();
        let mut ages: Vec<u64> = Vec::new();
        let mut warnings = Vec::new();
        let poll = Duration::from_secs_f64(r.store_poll_seconds);
        let current = self.iteration;
        'gather: loop {
            // In rounds across the workers (`pending_shards`), so that a full window leaves
            // every worker's newer shards waiting, not all of one worker's.
            // A worker's shards come in sequence, held back behind a gap (`pending_shards`).
            let listed = pending_shards(store, &cursor).map_err(DistributedError::from)?;
            for (key, reason) in listed.skipped {
                let told = format!("store '{}': {key}: {reason}", store.location());
                if self.told_skipped.insert(told.clone()) {
                    observer.warning(&told);
                }
            }
            let pending = listed.shards;
            for (c, chunk) in pending.chunks(distributed::FETCH_CONCURRENCY).enumerate() {
                let keys: Vec<String> = chunk.iter().map(|p| p.key.clone()).collect();
                // Each key's own answer: one object that cannot be read is named and its
                // worker's shards wait (transient failures are waited out in the store).
                let fetched = store
                    .get_each(&keys, distributed::FETCH_CONCURRENCY)
                    .map_err(DistributedError::from)?;
                for (i, (p, bytes)) in chunk.iter().zip(fetched).enumerate() {
                    if merged.len() >= r.window_samples {
                        let left = &pending[c * distributed::FETCH_CONCURRENCY + i..];
                        ingest.waiting_shards = left.len() as u64;
                        ingest.waiting_workers = left
                            .iter()
                            .map(|p| p.worker)
                            .collect::<std::collections::BTreeSet<_>>()
                            .len() as u64;
                        break 'gather;
                    }
                    if unreadable.contains(&p.worker) {
                        continue;
                    }
                    let bytes = match bytes {
                        Ok(Some(bytes)) => bytes,
                        Ok(None) => continue,
                        Err(e) => {
                            // Not consumed: the cursor never passes it, and the worker's later
                            // shards wait behind it.
                            unreadable.insert(p.worker);
                            let told = format!(
                                "{e}; worker {:016x}'s shards from this one on wait (not read, \
                                 not consumed)",
                                p.worker
                            );
                            if self.told_skipped.insert(told.clone()) {
                                observer.warning(&told);
                            }
                            continue;
                        }
                    };
                    ingest.bytes += bytes.len() as u64;
                    if p.gap > 0 {
                        warnings.push(format!(
                            "{}: worker {:016x}'s {} before it never came (shards after it \
                             did); passed over",
                            p.key,
                            p.worker,
                            if p.gap == 1 {
                                format!("shard {}", p.seq - 1)
                            } else {
                                format!("shards {} to {}", p.seq - p.gap, p.seq - 1)
                            }
                        ));
                    }
                    cursor.consume(p.worker, p.seq);
                    cursor.seen_in(p.worker, iteration);
                    let bad = |ingest: &mut IngestReport| {
                        ingest.bad_shards += 1;
                        ingest.consumed.push(ConsumedShard {
                            key: p.key.clone(),
                            samples: 0,
                            games: 0,
                            fate: ShardFate::Bad,
                        });
                    };
                    let shard = match read_shard_from(io::Cursor::new(&bytes)) {
                        Ok(s) if s.game == merged.game && s.rules == merged.rules => s,
                        Ok(s) => {
                            bad(&mut ingest);
                            warnings.push(format!(
                                "{}: {} games under rule set {}, this run plays {} under rule \
                                 set {}; passed over",
                                p.key, s.game, s.rules, merged.game, merged.rules
                            ));
                            continue;
                        }
                        Err(e) => {
                            bad(&mut ingest);
                            warnings.push(format!("{}: unreadable ({e}); passed over", p.key));
                            continue;
                        }
                    };
                    if let Some(i) = shard.worker.iter().position(|&w| w != p.worker) {
                        bad(&mut ingest);
                        warnings.push(format!(
                            "{}: sample {i} was played by worker {:016x}, not by the worker \
                             whose shard this is (a copied shard?); passed over",
                            p.key, shard.worker[i]
                        ));
                        continue;
                    }
                    let generation = shard
                        .generation
                        .iter()
                        .copied()
                        .filter(|&g| g != xiangqi_search::UNKNOWN_GENERATION)
                        .min()
                        .map(u64::from);
                    let age = generation.map_or(0, |g| current.saturating_sub(g));
                    let games = shard.games();
                    let fate = if r.max_generation_lag > 0 && age > r.max_generation_lag {
                        ShardFate::Stale
                    } else {
                        ShardFate::Trained
                    };
                    ingest.consumed.push(ConsumedShard {
                        key: p.key.clone(),
                        samples: shard.len() as u64,
                        games: games.len() as u64,
                        fate,
                    });
                    if fate == ShardFate::Stale {
                        ingest.stale_shards += 1;
                        continue;
                    }
                    ages.extend(std::iter::repeat_n(age, games.len()));
                    workers.insert(p.worker);
                    ingest.shards += 1;
                    merged.append(&shard).map_err(|e| PipelineError::Shard {
                        path: PathBuf::from(&p.key),
                        reason: e.to_string(),
                    })?;
                }
            }
            if ages.len() as u64 >= r.games_per_iteration {
                break;
            }
            if !self.told_waiting {
                self.told_waiting = true;
                observer.warning(&format!(
                    "waiting for self-play workers: {} of {} games of iteration {iteration} in the \
                     store so far; start workers with `xqz selfplay --store {}` (or set \
                     loop.local_selfplay_threads to play here too)",
                    ages.len(),
                    r.games_per_iteration,
                    store.location()
                ));
            }
            let deadline = Instant::now() + poll;
            while Instant::now() < deadline {
                if observer.should_stop() {
                    self.pending_warnings.extend(warnings);
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(50).min(poll));
            }
        }
        if ingest.waiting_shards > 0 {
            let plural = |n: u64| if n == 1 { "" } else { "s" };
            let (n, w) = (ingest.waiting_shards, ingest.waiting_workers);
            warnings.push(format!(
                "the trainer is behind the workers: iteration {iteration} filled its window \
                 (loop.window_samples = {}) and left {n} shard{} of {w} worker{} waiting in the \
                 store, to be read in the next iterations, one of each worker in turn (a larger \
                 loop.window_samples or a smaller loop.train_ratio consumes faster; \
                 loop.max_generation_lag drops shards of nets too old)",
                r.window_samples,
                plural(n),
                plural(w)
            ));
        }
        self.pending_warnings.extend(warnings);
        ingest.workers = workers.len() as u64;
        ingest.age_max = ages.iter().copied().max().unwrap_or(0);
        ingest.age_mean =
            if ages.is_empty() { 0.0 } else { ages.iter().sum::<u64>() as f64 / ages.len() as f64 };
        ingest.seconds = started.elapsed().as_secs_f64();
        // The record first, then the shard: a resume that finds the shard finds its record.
        write_consumed(&self.paths, iteration, &ingest, &cursor)?;
        let path = shard_path(&self.paths, iteration);
        write_shard(&path, &merged)
            .map_err(|e| PipelineError::Shard { path: path.clone(), reason: shard_reason(&e) })?;
        // The self-play speed is the trainer's own self-play's, if it played: the workers' games
        // were played elsewhere, at a speed the trainer does not see (their time stays zero,
        // which reads as "not measured").
        let mut report = gathered_report(&merged);
        if let Some(l) = local {
            // The speed counters are the trainer's own self-play's.
            let s = &mut report.stats;
            (s.simulations, s.evaluations, s.batches, s.max_batch, s.eval_time) = (
                l.stats.simulations,
                l.stats.evaluations,
                l.stats.batches,
                l.stats.max_batch,
                l.stats.eval_time,
            );
            s.elapsed = l.stats.elapsed;
            report.elapsed = l.elapsed;
            report.resign_threshold = l.resign_threshold;
        }
        Ok(Some((merged, report, ingest, cursor)))
    }

    /// Plays the iteration's games with the current network and writes its shard; `None` if
    /// interrupted (the partial games are dropped).
    fn self_play(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
    ) -> Result<Option<(Shard, SelfPlayReport, ResignCalibration)>, PipelineError> {
        let Some((shard, report, calibration, pgn)) =
            self.play_iteration_games(iteration, observer, None)?
        else {
            return Ok(None);
        };
        let path = shard_path(&self.paths, iteration);
        if self.config.run.resign_target_false_positive > 0.0 {
            // Before the shard: a resume that finds the shard finds its counts too.
            write_resign_pending(&self.paths, iteration, &calibration)?;
        }
        write_shard(&path, &shard)
            .map_err(|e| PipelineError::Shard { path: path.clone(), reason: shard_reason(&e) })?;
        append(&self.paths.games_pgn, &pgn)?;
        Ok(Some((shard, report, calibration)))
    }

    /// Plays the iteration's games with the current network (on `threads` threads, if given,
    /// else `selfplay.threads`); `None` if interrupted. Returns the shard, the report, the
    /// games' resignation counts and the PGN of the first games.
    #[allow(clippy::type_complexity)]
    fn play_iteration_games(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
        threads: Option<u32>,
    ) -> Result<Option<(Shard, SelfPlayReport, ResignCalibration, Vec<u8>)>, PipelineError> {
        match self.config.selfplay.game {
            GameKind::Xiangqi => self.play_iteration_games_of::<Game>(iteration, observer, threads),
            GameKind::Janggi => {
                self.play_iteration_games_of::<janggi::Game>(iteration, observer, threads)
            }
        }
    }

    /// Refuses a shard of the run's directory that holds another game's samples: it would be
    /// trained on as this game's. (A shard of the same game under another rule set is the
    /// run's own history after a `--resume` that changed `selfplay.rules`: kept.)
    fn check_shard_game(&self, path: &Path, shard: &Shard) -> Result<(), PipelineError> {
        let game = self.config.selfplay.game;
        if shard.game == game {
            return Ok(());
        }
        Err(PipelineError::Shard {
            path: path.to_path_buf(),
            reason: format!("it holds {} samples; this run plays {game}", shard.game),
        })
    }

    /// The game's encoding.
    fn encoding(&self) -> Encoding {
        Encoding::of_kind(self.config.selfplay.game)
    }

    /// The shard code of the run's rule set.
    fn rules_code(&self) -> Result<u8, PipelineError> {
        let sp = &self.config.selfplay;
        Ok(match sp.game {
            GameKind::Xiangqi => Game::rules_code(sp.rules_for::<Game>()?),
            GameKind::Janggi => janggi::Game::rules_code(sp.rules_for::<janggi::Game>()?),
        })
    }

    /// [`TrainingRun::play_iteration_games`] for the run's game `G`.
    #[allow(clippy::type_complexity)]
    fn play_iteration_games_of<G: GameEnv>(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
        threads: Option<u32>,
    ) -> Result<Option<(Shard, SelfPlayReport, ResignCalibration, Vec<u8>)>, PipelineError> {
        let net = self.trainer.inference_net(&self.device)?;
        let mut evaluator = NnEvaluator::new(net);
        let mut selfplay = self.config.selfplay.clone();
        selfplay.seed = derive_seed(self.config.run.seed, 1, iteration);
        if let Some(t) = threads {
            selfplay.threads = t;
        }
        let generation = u32::try_from(self.iteration).unwrap_or(u32::MAX - 1);
        let tuning = self.config.run.resign_target_false_positive > 0.0;
        selfplay.resign_threshold = self.resign_threshold();
        let threshold = selfplay.resign_threshold;
        // This iteration's games alone; merged into the run's counts by the caller.
        let mut calibration = ResignCalibration::new(RESIGN_CALIBRATION_CAPACITY);
        let mut shard = Shard::new::<G>(selfplay.rules_for::<G>()?);
        let mut pgn = Vec::new();
        let mut plies = 0u64;
        let keep_pgn = self.config.run.pgn_games_per_iteration;
        let started = Instant::now();
        let mut games = 0u64;
        let result = play_games::<G, _, _>(
            &self.config.search,
            &selfplay,
            self.config.run.games_per_iteration,
            &mut evaluator,
            |event| {
                match event {
                    SelfPlayEvent::GameFinished(record, stats) => {
                        shard.push_game(record, generation);
                        if tuning {
                            calibration.add_game(record, threshold);
                        }
                        plies += record.moves.len() as u64;
                        games += 1;
                        if (games as usize) <= keep_pgn {
                            write_game_pgn(&mut pgn, record, iteration)?;
                        }
                        observer.selfplay_progress(stats);
                    }
                    SelfPlayEvent::Progress(stats) => observer.selfplay_progress(stats),
                }
                if observer.should_stop() { Err("interrupted".into()) } else { Ok(()) }
            },
        );
        let stats = match result {
            Ok(stats) => stats,
            Err(_) if observer.should_stop() => return Ok(None),
            Err(e) => return Err(PipelineError::SelfPlay(e.to_string())),
        };
        let report = SelfPlayReport {
            games,
            samples: shard.len(),
            plies,
            stats,
            elapsed: started.elapsed(),
            resign_threshold: Some(threshold),
        };
        Ok(Some((shard, report, calibration, pgn)))
    }

    /// Rebuilds the replay window from the shards on disk (after a resume). A shard that cannot
    /// be read (truncated, damaged) is left out of the window and named in
    /// [`TrainingRun::skipped`]; a missing shard directory is made anew (an empty window).
    fn rebuild_window(&mut self) -> Result<(), PipelineError> {
        if !self.paths.shards.is_dir() {
            fs::create_dir_all(&self.paths.shards).map_err(|source| PipelineError::Io {
                what: "creating",
                path: self.paths.shards.clone(),
                source,
            })?;
            self.skipped.push((
                self.paths.shards.clone(),
                "missing: made anew; the replay window starts empty".into(),
            ));
        }
        let shards = list_shards(&self.paths.shards).map_err(|source| PipelineError::Io {
            what: "reading",
            path: self.paths.shards.clone(),
            source,
        })?;
        let mut numbered_shards: Vec<(u64, PathBuf)> = shards
            .into_iter()
            .filter_map(|p| numbered(&p, "shard-", ".npz").map(|n| (n, p)))
            .filter(|(n, _)| *n <= self.iteration)
            .collect();
        numbered_shards.sort();
        // Newest first until the window is full, then push oldest first.
        let mut picked = Vec::new();
        let mut total = 0usize;
        for (n, path) in numbered_shards.iter().rev() {
            if total >= self.config.run.window_samples {
                break;
            }
            match read_shard(path) {
                Ok(shard) => {
                    self.check_shard_game(path, &shard)?;
                    total += shard.len();
                    picked.push((*n, shard));
                }
                Err(e) => self.skipped.push((
                    path.clone(),
                    format!(
                        "unreadable ({}), left out of the replay window; delete it to silence \
                         this warning",
                        shard_reason(&e)
                    ),
                )),
            }
        }
        for (n, shard) in picked.into_iter().rev() {
            self.window.push(n, shard, self.config.run.window_samples);
        }
        Ok(())
    }

    fn counters(&self) -> BTreeMap<String, u64> {
        let mut c = BTreeMap::new();
        c.insert(COUNTER_ITERATION.to_string(), self.iteration);
        c.insert(COUNTER_STEPS_IN_ITERATION.to_string(), self.steps_in_iteration);
        c.insert(COUNTER_SAMPLES.to_string(), self.total_samples);
        c.insert(COUNTER_ELAPSED_MS.to_string(), self.elapsed().as_millis() as u64);
        c.insert(COUNTER_LAST_ARENA.to_string(), self.last_arena_checkpoint.map_or(0, |n| n + 1));
        if let Some(id) = self.run_id {
            c.insert(COUNTER_RUN_ID.to_string(), id);
        }
        self.cursor.to_counters(&mut c);
        if self.config.run.resign_target_false_positive > 0.0 {
            let micro = ((f64::from(self.resign_threshold) + 1.0) * 1e6).round() as u64;
            c.insert(COUNTER_RESIGN_THRESHOLD.to_string(), micro);
            for (bin, lost, kept) in self.resign.counts() {
                c.insert(format!("{COUNTER_RESIGN_BIN}{bin:02}_lost"), lost);
                c.insert(format!("{COUNTER_RESIGN_BIN}{bin:02}_kept"), kept);
            }
        }
        c
    }

    /// Restores the self-tuning resignation's threshold and counts from checkpoint counters
    /// (a run saved without them starts with resignation off and no counts).
    fn restore_resign_calibration(&mut self, counters: &BTreeMap<String, u64>) {
        if let Some(&micro) = counters.get(COUNTER_RESIGN_THRESHOLD) {
            let t = (micro as f64 / 1e6 - 1.0) as f32;
            let top = xiangqi_search::resign::MAX_THRESHOLD;
            self.resign_threshold = if t.is_finite() { t.clamp(-1.0, top) } else { -1.0 };
        }
        let mut bins: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
        for (key, &count) in counters {
            let Some(rest) = key.strip_prefix(COUNTER_RESIGN_BIN) else { continue };
            let (bin, lost) = match (rest.strip_suffix("_lost"), rest.strip_suffix("_kept")) {
                (Some(b), _) => (b, true),
                (_, Some(b)) => (b, false),
                _ => continue,
            };
            let Ok(bin) = bin.parse::<usize>() else { continue };
            let entry = bins.entry(bin).or_default();
            if lost {
                entry.0 = count;
            } else {
                entry.1 = count;
            }
        }
        for (bin, (lost, kept)) in bins {
            self.resign.set_counts(bin, lost, kept);
        }
    }

    /// The resignation threshold the next self-play will use.
    pub fn resign_threshold(&self) -> f32 {
        if self.config.run.resign_target_false_positive > 0.0 {
            self.resign_threshold
        } else {
            self.config.selfplay.resign_threshold
        }
    }

    /// The self-tuning resignation's counts (empty when it is off).
    pub fn resign_calibration(&self) -> &ResignCalibration {
        &self.resign
    }

    /// Writes the checkpoint of the current state (`ckpt-<completed iterations>`, or
    /// `ckpt-000001` for steps of the first iteration), atomically.
    ///
    /// # Errors
    /// [`PipelineError::Checkpoint`].
    pub fn save_checkpoint(&mut self) -> Result<PathBuf, PipelineError> {
        // Steps of the first iteration go into `ckpt-000001` (marked by its counters as
        // iteration 0 plus steps): `ckpt-000000` stays the initial network.
        // Pretraining's steps too: they are taken before the first iteration.
        let number = if self.iteration == 0
            && (self.steps_in_iteration > 0
                || self.pretrained.as_ref().is_some_and(|p| p.steps > 0))
        {
            1
        } else {
            self.iteration
        };
        let dir = checkpoint_path(&self.paths, number);
        if let Some(aside) = self.move_aside_if_foreign(&dir, number)? {
            self.pending_warnings.push(format!(
                "{} was not a checkpoint of this run and stood where the run writes its \
                 checkpoint {number}: moved aside to {}",
                dir.display(),
                aside.display()
            ));
        }
        checkpoint::save_trainer_with(
            &self.trainer,
            &dir,
            &self.counters(),
            self.pretrained.as_ref(),
        )?;
        Ok(dir)
    }

    /// A file or folder at the path of checkpoint `number` that is not a training checkpoint of
    /// this run (a user's folder, an export, a file) is renamed to `ckpt-NNNNNN.foreign-K`
    /// instead of being replaced: the run never deletes what it did not write. A checkpoint of
    /// the run (damaged or not) is replaced as usual.
    fn move_aside_if_foreign(
        &self,
        dir: &Path,
        number: u64,
    ) -> Result<Option<PathBuf>, PipelineError> {
        let Ok(meta) = fs::symlink_metadata(dir) else { return Ok(None) };
        let ours = meta.is_dir()
            && checkpoint::read_manifest(dir, None).is_ok_and(|m| {
                m.has_optimizer() && m.counters.get(COUNTER_RUN_ID).copied() == self.run_id
            });
        if ours {
            return Ok(None);
        }
        let aside = (1..1000)
            .map(|k| self.paths.checkpoints.join(format!("ckpt-{number:06}.foreign-{k}")))
            .find(|p| fs::symlink_metadata(p).is_err())
            .unwrap_or_else(|| {
                self.paths
                    .checkpoints
                    .join(format!("ckpt-{number:06}.foreign-{}", std::process::id()))
            });
        fs::rename(dir, &aside).map_err(|source| PipelineError::Io {
            what: "moving aside",
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(Some(aside))
    }

    /// Warnings gathered since the last call (entries moved aside while checkpointing).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.pending_warnings)
    }

    /// Removes checkpoints older than the one just written (`ckpt-<iteration>`), keeping
    /// `keep_checkpoints` in all with it, the initial network and the last arena's network.
    /// Newer names (left by an earlier run that this one fell back from) and entries that are
    /// not the run's checkpoints are never touched.
    fn prune_checkpoints(&self) -> Result<(), PipelineError> {
        let all = list_checkpoints(&self.paths.checkpoints).map_err(|source| {
            PipelineError::Io { what: "reading", path: self.paths.checkpoints.clone(), source }
        })?;
        let keep_older = self.config.run.keep_checkpoints.max(1) - 1;
        let older: Vec<_> = all
            .iter()
            .filter(|(n, _)| {
                *n != 0 && *n < self.iteration && Some(*n) != self.last_arena_checkpoint
            })
            .collect();
        for (n, dir) in older.iter().take(older.len().saturating_sub(keep_older)) {
            // Renamed first, so that a kill while deleting leaves a hidden temporary that a
            // resume removes, never a half-deleted `ckpt-N`.
            let doomed =
                self.paths.checkpoints.join(format!(".ckpt-{n:06}.pruned-{}", std::process::id()));
            fs::rename(dir, &doomed).map_err(|source| PipelineError::Io {
                what: "removing",
                path: dir.clone(),
                source,
            })?;
            fs::remove_dir_all(&doomed).map_err(|source| PipelineError::Io {
                what: "removing",
                path: doomed.clone(),
                source,
            })?;
        }
        Ok(())
    }

    fn prune_shards(&self) -> Result<(), PipelineError> {
        let cap = self.config.run.max_shards_on_disk;
        if cap == 0 {
            return Ok(());
        }
        let cap = cap.max(self.window.shards.len());
        let mut shards: Vec<(u64, PathBuf)> = list_shards(&self.paths.shards)
            .map_err(|source| PipelineError::Io {
                what: "reading",
                path: self.paths.shards.clone(),
                source,
            })?
            .into_iter()
            .filter_map(|p| numbered(&p, "shard-", ".npz").map(|n| (n, p)))
            .collect();
        shards.sort();
        let excess = shards.len().saturating_sub(cap);
        for (_, path) in shards.iter().take(excess) {
            fs::remove_file(path).map_err(|source| PipelineError::Io {
                what: "removing",
                path: path.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// The current network against `random`, `greedy` and the network of the previous arena
    /// (or the initial network), `arena_games` games each.
    ///
    /// # Errors
    /// A refused checkpoint of the earlier network.
    pub fn arena(&mut self, observer: &mut dyn Observer) -> Result<(), PipelineError> {
        match self.config.selfplay.game {
            GameKind::Xiangqi => self.arena_of::<Game>(observer),
            GameKind::Janggi => self.arena_of::<janggi::Game>(observer),
        }
    }

    /// [`TrainingRun::arena`] for the run's game `G`.
    fn arena_of<G: GameEnv>(&mut self, observer: &mut dyn Observer) -> Result<(), PipelineError> {
        let r = &self.config.run;
        let mut search = self.config.search.clone();
        search.dirichlet_epsilon = 0.0;
        let sims = if r.arena_simulations > 0 { r.arena_simulations } else { search.simulations };
        search.simulations = sims;
        search.cheap_simulations = search.cheap_simulations.min(sims);
        let settings = GameSettings::<G> {
            rules: self.config.selfplay.rules_for::<G>()?,
            max_plies: self.config.selfplay.length_cap.max(1),
            limit: MoveLimit { simulations: Some(sims), ..MoveLimit::default() },
        };
        let match_config = MatchConfig { games: r.arena_games, settings, sprt: None };
        let openings = Opening::<G>::builtin();
        let seed = derive_seed(r.seed, 3, self.iteration);
        let concurrency = (self.config.selfplay.games_in_flight as usize).max(1);
        let me = LocalPlayer::Mcts { name: "current".into(), config: search.clone() };
        let mut current = NnEvaluator::new(self.trainer.inference_net(&self.device)?);
        let mut previous = self.last_arena_checkpoint.unwrap_or(0);
        if !checkpoint_path(&self.paths, previous).is_dir() {
            // Pruned (a resume from an older checkpoint): the initial network is always kept.
            previous = 0;
        }
        let mut earlier = None;
        if previous < self.iteration {
            let dir = checkpoint_path(&self.paths, previous);
            let (net, manifest) =
                checkpoint::load_net(&dir, Some(&self.config.network), &self.device)?;
            manifest.expect_game(&dir, self.config.selfplay.game)?;
            earlier = Some(NnEvaluator::new(InferenceNet::from_net(&net, &self.device)?));
        }
        let mut opponents = vec![
            ("random".to_string(), LocalPlayer::Random { seed }),
            ("greedy".to_string(), LocalPlayer::Greedy { seed }),
        ];
        if earlier.is_some() {
            let name = format!("ckpt-{previous:06}");
            opponents.push((name.clone(), LocalPlayer::Mcts { name, config: search.clone() }));
        }
        for (name, opponent) in opponents {
            let mut stopped = false;
            let on_game = |_: &_, _: &_| {
                stopped = observer.should_stop();
                !stopped
            };
            let result = match (&opponent, earlier.as_mut()) {
                (LocalPlayer::Mcts { .. }, Some(eval_b)) => run_match_batched(
                    &me,
                    &opponent,
                    &mut current,
                    eval_b,
                    &openings,
                    &match_config,
                    concurrency,
                    on_game,
                ),
                _ => run_match_batched(
                    &me,
                    &opponent,
                    &mut current,
                    &mut UniformEvaluator,
                    &openings,
                    &match_config,
                    concurrency,
                    on_game,
                ),
            };
            let played = result.map_err(|e| PipelineError::Arena(e.to_string()))?;
            if stopped {
                return Ok(());
            }
            observer.arena(&ArenaReport {
                iteration: self.iteration,
                opponent: name,
                stats: played.stats,
            });
        }
        self.last_arena_checkpoint = Some(self.iteration);
        // Record it in this iteration's checkpoint, so that a run resumed from it measures the
        // next arena against this net (and pruning keeps this net).
        self.save_checkpoint()?;
        Ok(())
    }
}

/// Removes what interrupted writes left behind: `.ckpt-*.tmp-*` and `.ckpt-*.old-*` directories
/// and `*.npz.tmp` files. None of them is ever read as valid; this only reclaims the space.
fn remove_stale_temporaries(paths: &RunPaths) -> Result<(), PipelineError> {
    for dir in [&paths.checkpoints, &paths.shards] {
        let Ok(entries) = fs::read_dir(dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            // An overwrite interrupted between its two renames leaves `.ckpt-N.old-*` and no
            // `ckpt-N`: put the old one back rather than lose it.
            if let Some(rest) =
                name.strip_prefix('.').filter(|n| n.starts_with("ckpt-") && n.contains(".old-"))
            {
                let original = dir.join(rest.split(".old-").next().unwrap_or(rest));
                if !original.exists() {
                    fs::rename(&path, &original).map_err(|source| PipelineError::Io {
                        what: "restoring",
                        path: path.clone(),
                        source,
                    })?;
                    continue;
                }
            }
            let stale = (name.starts_with(".ckpt-")
                && (name.contains(".tmp-") || name.contains(".old-") || name.contains(".pruned-")))
                || name.ends_with(".npz.tmp");
            if !stale {
                continue;
            }
            let removed =
                if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
            removed.map_err(|source| PipelineError::Io { what: "removing", path, source })?;
        }
    }
    Ok(())
}

fn validate(config: &RunConfig) -> Result<(), PipelineError> {
    config.network.validate()?;
    config.training.validate()?;
    // Checkpoint manifests are TOML, whose integers are signed 64-bit.
    let t = &config.training;
    for (key, v) in [
        ("training.warmup_steps", t.warmup_steps),
        ("training.total_steps", t.total_steps),
        ("training.decay_every", t.decay_every),
        ("loop.max_steps", config.run.max_steps),
        ("loop.max_samples", config.run.max_samples),
    ] {
        if v > i64::MAX as u64 {
            return Err(ConfigError { key, reason: format!("must be at most {}", i64::MAX) }.into());
        }
    }
    config.run.validate()?;
    config.search.validate()?;
    config.selfplay.validate()?;
    if config.run.resign_target_false_positive > 0.0 && config.selfplay.resign_threshold > -1.0 {
        return Err(ConfigError {
            key: "selfplay.resign_threshold",
            reason: "must be -1 when loop.resign_target_false_positive chooses the threshold \
                     (set one or the other)"
                .into(),
        }
        .into());
    }
    Ok(())
}

fn write_game_pgn<G: GameEnv>(
    out: &mut Vec<u8>,
    record: &GameRecord<G>,
    iteration: u64,
) -> io::Result<()> {
    use std::io::Write as _;
    writeln!(out, "[Iteration \"{iteration}\"]")?;
    record.write_pgn(out)?;
    writeln!(out)
}

fn append(path: &Path, bytes: &[u8]) -> Result<(), PipelineError> {
    use std::io::Write as _;
    if bytes.is_empty() {
        return Ok(());
    }
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| PipelineError::Io { what: "opening", path: path.into(), source })?;
    f.write_all(bytes).map_err(|source| PipelineError::Io {
        what: "writing",
        path: path.into(),
        source,
    })
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
        learning_rate: sum.learning_rate,
        grad_norm: sum.grad_norm / k,
    }
}

#[cfg(test)]
mod tests {
    use super::{ValueTargets, value_target};

    fn close(a: [f32; 3], b: [f32; 3]) -> bool {
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6)
    }

    fn t(q_weight: f32, material_weight: f32) -> ValueTargets {
        ValueTargets { q_weight, material_weight, material_scale: 4.0, cheap_weight: 1.0 }
    }

    /// The target alone, for an uncapped full-search sample with no material known.
    fn plain(result: i8, q: f32, q_weight: f32) -> [f32; 3] {
        let (target, weight) = value_target(result, q, None, false, true, &t(q_weight, 0.0));
        assert!((weight - 1.0).abs() < 1e-6, "{weight}");
        target
    }

    #[test]
    fn value_target_mixes_the_result_with_the_root_value() {
        // λ = 0: the game result alone, whatever the search said.
        assert!(close(plain(1, -0.8, 0.0), [1.0, 0.0, 0.0]));
        assert!(close(plain(0, 0.5, 0.0), [0.0, 1.0, 0.0]));
        assert!(close(plain(-1, 0.9, 0.0), [0.0, 0.0, 1.0]));
        // λ = 1: the root value alone, q = 0.4 → (0.4, 0.6, 0), q = −1 → a sure loss.
        assert!(close(plain(-1, 0.4, 1.0), [0.4, 0.6, 0.0]));
        assert!(close(plain(1, -1.0, 1.0), [0.0, 0.0, 1.0]));
        // λ = 0.5, a drawn game whose search saw a win at 0.6: 0.5·(0,1,0) + 0.5·(0.6,0.4,0).
        assert!(close(plain(0, 0.6, 0.5), [0.3, 0.7, 0.0]));
        // A lost game, q = −0.2: 0.5·(0,0,1) + 0.5·(0,0.8,0.2).
        assert!(close(plain(-1, -0.2, 0.5), [0.0, 0.4, 0.6]));
        // Out-of-range or non-finite q never makes a target that is not a distribution.
        for q in [f32::NAN, f32::INFINITY, 3.0, -7.0] {
            let t = plain(1, q, 0.5);
            assert!(t.iter().all(|x| (0.0..=1.0).contains(x)), "{q}: {t:?}");
            assert!((t.iter().sum::<f32>() - 1.0).abs() < 1e-6, "{q}: {t:?}");
        }
    }

    #[test]
    fn a_capped_game_teaches_no_result() {
        // Game result alone: a game cut at the length cap has weight 0 (it is no draw).
        let (_, w) = value_target(0, 0.3, Some(9.0), true, true, &t(0.0, 0.0));
        assert_eq!(w, 0.0);
        // With a material target of weight 0.25, a capped game teaches the material alone,
        // with that weight: 9 pawns up at scale 4 is tanh(2.25) = 0.97803.
        let (target, w) = value_target(0, 0.3, Some(9.0), true, true, &t(0.0, 0.25));
        let m = 2.25f32.tanh();
        assert!((w - 0.25).abs() < 1e-6, "{w}");
        assert!(close(target, [(1.0 + m) / 2.0, 0.0, (1.0 - m) / 2.0]), "{target:?}");
        // The same game not capped (a repetition draw): 0.75 · draw + 0.25 · material.
        let (target, w) = value_target(0, 0.3, Some(9.0), false, true, &t(0.0, 0.25));
        assert_eq!(w, 1.0);
        let expected = [0.25 * (1.0 + m) / 2.0, 0.75, 0.25 * (1.0 - m) / 2.0];
        assert!(close(target, expected), "{target:?} vs {expected:?}");
        // Unknown material (a version 1 shard): the result alone, renormalised.
        let (target, w) = value_target(-1, 0.3, None, false, true, &t(0.0, 0.25));
        assert_eq!(w, 1.0);
        assert!(close(target, [0.0, 0.0, 1.0]), "{target:?}");
    }

    #[test]
    fn cheap_search_samples_take_their_own_value_weight() {
        let targets = ValueTargets { cheap_weight: 0.0, ..t(0.0, 0.0) };
        assert_eq!(value_target(1, 0.0, None, false, false, &targets).1, 0.0);
        assert_eq!(value_target(1, 0.0, None, false, true, &targets).1, 1.0);
        let targets = ValueTargets { cheap_weight: 0.5, ..t(0.0, 0.0) };
        assert_eq!(value_target(1, 0.0, None, false, false, &targets).1, 0.5);
    }

    #[test]
    fn an_iterations_store_record_reads_back_whole_and_an_old_one_as_a_cursor() {
        use super::{ConsumedShard, IngestReport, RunPaths, ShardFate, parse_consumed};
        let dir = std::env::temp_dir().join(format!("xqz-record-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let paths = RunPaths::under(&dir);
        std::fs::create_dir_all(&paths.shards).unwrap();
        let mut cursor = crate::distributed::ShardCursor::default();
        cursor.consume(0xab, 6);
        cursor.seen_in(0xab, 3);
        let shard = |seq: u64, samples, games, fate| ConsumedShard {
            key: crate::distributed::shard_key(0xab, seq),
            samples,
            games,
            fate,
        };
        let ingest = IngestReport {
            shards: 1,
            workers: 1,
            bytes: 12345,
            stale_shards: 1,
            bad_shards: 1,
            age_mean: 1.0 / 3.0,
            age_max: 2,
            seconds: 0.1 + 0.2,
            waiting_shards: 4,
            waiting_workers: 2,
            consumed: vec![
                shard(4, 311, 4, ShardFate::Trained),
                shard(5, 0, 0, ShardFate::Bad),
                shard(6, 97, 1, ShardFate::Stale),
            ],
        };
        super::write_consumed(&paths, 3, &ingest, &cursor).unwrap();
        let text = std::fs::read_to_string(super::consumed_path(&paths, 3)).unwrap();
        // One line per shard: what a user's awk counts.
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("shard ")).collect();
        assert_eq!(
            lines,
            [
                "shard 3 shards/00000000000000ab/000000000004.npz 311 4 trained",
                "shard 3 shards/00000000000000ab/000000000005.npz 0 0 bad",
                "shard 3 shards/00000000000000ab/000000000006.npz 97 1 stale",
            ]
        );
        assert_eq!(super::read_consumed(&paths, 3).unwrap(), Some((cursor, Some(ingest))));
        // An earlier version's record: the cursor alone.
        let (old, none) = parse_consumed("00000000000000ab 7\n").unwrap();
        assert_eq!((old.next(0xab), none), (7, None));
        for bad in ["shard 3 k 1 1 eaten\n", "ingest shards=x\n", "zz 1\n", "shard 3 k 1\n"] {
            assert_eq!(parse_consumed(bad), None, "{bad}");
        }
        assert_eq!(super::read_consumed(&paths, 4).unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
