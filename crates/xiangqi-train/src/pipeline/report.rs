//! What the loop reports to its caller: per self-play phase, iteration, store ingest and arena
//! match, and the [`Observer`] that receives them.

use super::*;

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
    /// Optimizer steps taken in this iteration (in this session).
    pub steps: u64,
    /// Optimizer steps of this iteration taken before a stop, in an earlier session (then
    /// resumed): not in `steps`, nor in `mean`.
    pub steps_before_stop: u64,
    /// Mean of the step metrics over `steps` (`step` is the last step).
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

    pub(super) fn parse(name: &str) -> Option<ShardFate> {
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
    /// WDL cross-entropy against the material target alone (`loop.material_scale`, at
    /// `loop.material_plies`), over samples whose material target is known.
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
