//! The run's settings: the `[loop]` section ([`LoopConfig`]), all sections together ([`RunConfig`])
//! and the checks between them, and the run's directories ([`RunPaths`]).

use super::*;

/// The `[loop]` section: how self-play and training alternate, the replay window, budgets,
/// checkpoints and the arena.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoopConfig {
    /// Self-play games per iteration.
    pub games_per_iteration: u64,
    /// Continuous self-play (the trainer's own, without a store): the games still running when
    /// an iteration's `games_per_iteration` games have finished go on in the next iteration,
    /// played on by the next network, and every slot takes a new game as soon as its game
    /// ends, so that the evaluation batches stay full to the end of each iteration (KataGo's
    /// and Leela Chess Zero's self-play run across network updates the same way). A game's
    /// samples may then come from several networks (mostly one or two; more for a game that
    /// outlasts several iterations, likelier where `selfplay.games_in_flight` is well above
    /// `games_per_iteration`); its shard's `generation` is the network that finished it. The carried games live in memory only: a run
    /// stopped and resumed starts the next iteration's games afresh (the resumed run is then not
    /// the uninterrupted one, game for game). `false`: each iteration plays its games from start
    /// to end with its own network (and the key is not written).
    #[serde(skip_serializing_if = "is_default")]
    pub continuous_selfplay: bool,
    /// The CPU kernels' arithmetic for self-play and the arena's games: `"f32"` (the default;
    /// the key is not written), `"bf16"`, the input convolution and the residual tower in
    /// bfloat16, summed in `f32`, on Intel's AMX (Xeon Sapphire Rapids and later) or AVX-512
    /// BF16 (AMD Zen 4 and later, Intel Cooper Lake) ([`xiangqi_nn::Precision::Bf16`]), or
    /// `"auto"`, `bf16` where it can run and `f32` elsewhere. Where `"bf16"` cannot run (a CPU
    /// with neither, a tower with global pooling or squeeze-excitation blocks) the run computes in `f32` and says so when it starts.
    /// The held-out losses are always `f32`, training is as `training.precision` says, and a
    /// GPU device ignores the key.
    #[serde(skip_serializing_if = "Precision::is_f32")]
    pub precision: Precision,
    /// Samples trained per sample generated (each iteration takes
    /// `round(new samples · train_ratio / batch_size)` optimizer steps, at least one).
    pub train_ratio: f64,
    /// Samples per optimizer step.
    pub batch_size: usize,
    /// Weight λ of the search's root value in the value target: the WDL target is
    /// `(1 − λ) · onehot(game result) + λ · (max(q, 0), 1 − |q|, max(−q, 0))`, where `q` in
    /// [-1, 1] is the root value of the sample's search for the side to move (the root's mean,
    /// or the improved policy's value with `selfplay.recorded_value = "improved"`). 0 trains on
    /// game results alone (AlphaZero); a positive λ mixes in the search's own estimate, which
    /// is less noisy when most games end undecided (Leela Chess Zero's `q_ratio`; V. Abrams,
    /// "Lessons from AlphaZero part 4: improving the training target", 2018, found averaging
    /// best).
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
    /// The material target's horizon `h` in plies: with `h > 0` the material target is the
    /// balance of the position `h` plies after the sample in its game (for the sample's side to
    /// move), or of the game's final position when the game ends (or is cut off) sooner; 0
    /// takes the final position for every sample. A shorter horizon sees a hanging piece's
    /// fate within a few moves rather than at a game's end, dozens of plies and many trades
    /// later: the analogue of KataGo's short-term score targets ("Short-term Value and Score
    /// Targets", docs/KataGoMethods.md) for the material part of the value. At most 1,000.
    /// (0 is not written, so that configs of runs without it stay readable by earlier
    /// versions.)
    #[serde(skip_serializing_if = "is_default")]
    pub material_plies: u32,
    /// Weight in the value loss of samples from cheap searches (playout cap randomization);
    /// KataGo gives them 0 (`cheapSearchTargetWeight`). Full-search samples weigh 1.
    pub cheap_value_weight: f64,
    /// Policy-surprise weighting (KataGo's `policySurpriseDataWeight`, which KataGo sets to
    /// 0.5): the share `w` in `[0, 1]` of each shard's full-search sampling weight given in
    /// proportion to the sample's policy surprise, `KL(policy target ‖ network prior)`
    /// recorded by its search. A full-search sample is drawn `(1 − w) + w · s / s̄` times as
    /// often as uniformly (`s̄` the shard's mean); cheap searches and samples of unknown
    /// surprise are drawn uniformly. 0 = off: every sample is drawn uniformly (and the key is
    /// not written, so that configs of runs without it stay readable by earlier versions).
    #[serde(skip_serializing_if = "is_default")]
    pub policy_surprise_weight: f64,
    /// The horizon `h` of the short-term value target (for a network with
    /// `network.short_term_value`), in plies: the search's root values of the sample's
    /// position and of the positions after it in its game, `u_0, u_1, …` (each for the
    /// sample's side to move), averaged with weights `(1 − λ) λ^j`, `λ = 1 − 1 / h`; the game's
    /// result takes the weight left at its end (`λ^J` after `J` recorded plies). An
    /// exponentially decaying average of future search values, as KataGo's short-term value
    /// targets ("Short-term Value and Score Targets", docs/KataGoMethods.md). At most `4 h`
    /// plies are read (their weights renormalised), and a game cut off at its length cap has
    /// no result to end on (its weights are renormalised likewise). At least 1.
    pub short_term_plies: f64,
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
    /// Also keep, for every whole multiple of this many minutes of the run's time (summed over
    /// resumes), the first checkpoint written at or after it: the nets at 30, 60, 90, …
    /// minutes, to play against fixed opponents afterwards (what more training buys). 0 = none
    /// (then not written, so that configs of runs without it stay readable by earlier versions).
    #[serde(skip_serializing_if = "is_default")]
    pub keep_every_minutes: f64,
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
            continuous_selfplay: false,
            precision: Precision::F32,
            train_ratio: 4.0,
            batch_size: 256,
            value_q_weight: 0.0,
            material_weight: 0.0,
            material_scale: 4.0,
            material_plies: 0,
            cheap_value_weight: 1.0,
            policy_surprise_weight: 0.0,
            short_term_plies: 6.0,
            resign_target_false_positive: 0.0,
            resign_min_resigners: 100,
            heldout_samples: 1024,
            window_samples: 100_000,
            min_window_samples: 2_000,
            max_shards_on_disk: 0,
            keep_checkpoints: 3,
            keep_every_minutes: 0.0,
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

/// Whether a key holds its type's default (0, `false`): such keys are not written, so that the
/// configs of runs without them stay readable by earlier versions.
fn is_default<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}

/// The most games an iteration may play.
pub(super) const MAX_GAMES_PER_ITERATION: u64 = 100_000;

/// The largest `loop.train_ratio`.
pub(super) const MAX_TRAIN_RATIO: f64 = 100.0;

/// The largest replay window (samples).
pub(super) const MAX_WINDOW_SAMPLES: usize = 50_000_000;

/// The most games of one arena match.
pub(super) const MAX_ARENA_GAMES: u32 = 100_000;

impl LoopConfig {
    /// The share of the run's budget spent after `elapsed_s` seconds, `steps` optimizer steps
    /// and `samples` self-play samples: the furthest of `max_hours`, `max_steps` and
    /// `max_samples` among those set (at least 1 once one is spent), or `None` when none is set.
    pub fn budget_share(&self, elapsed_s: f64, steps: u64, samples: u64) -> Option<f64> {
        let share = |spent: f64, limit: f64| (limit > 0.0).then(|| spent / limit);
        [
            share(elapsed_s, self.max_hours * 3600.0),
            share(steps as f64, self.max_steps as f64),
            share(samples as f64, self.max_samples as f64),
        ]
        .into_iter()
        .flatten()
        .reduce(f64::max)
    }

    /// Whether any of `max_hours`, `max_steps` and `max_samples` is set.
    pub fn has_budget(&self) -> bool {
        self.budget_share(0.0, 0, 0).is_some()
    }

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
        if self.material_plies > 1000 {
            return bad("loop.material_plies", "must be a number of plies from 0 to 1000");
        }
        if !(0.0..=1.0).contains(&self.cheap_value_weight) {
            return bad("loop.cheap_value_weight", "must be between 0 and 1");
        }
        if !(0.0..=1.0).contains(&self.policy_surprise_weight) {
            return bad("loop.policy_surprise_weight", "must be between 0 and 1 (0 = off)");
        }
        if !(self.short_term_plies.is_finite() && (1.0..=1000.0).contains(&self.short_term_plies)) {
            return bad("loop.short_term_plies", "must be a number of plies from 1 to 1000");
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
        if !(self.keep_every_minutes.is_finite() && self.keep_every_minutes >= 0.0) {
            return bad("loop.keep_every_minutes", "must be a number of minutes >= 0 (0 = none)");
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

impl Validate for LoopConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        LoopConfig::validate(self)
    }
}

/// Everything a training run is configured by, as a config file holds it: the game and its rule
/// set (top-level keys), then one section per concern. Nothing here is checked yet:
/// [`RunConfig::check`] makes the [`CheckedRunConfig`] that a run takes, once.
///
/// Unknown keys are an error ([`serde`]'s `deny_unknown_fields`); absent ones take their
/// defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// `game`: the game every section is for (xiangqi when absent).
    #[serde(default)]
    pub game: GameKind,
    /// `rules`: the game's rule set by name (`asian`, `simple`; `site`, `traditional`); `None`
    /// means the game's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
    /// `[search]`.
    #[serde(default)]
    pub search: SearchConfig,
    /// `[selfplay]`. Its `game` and `rules` are filled in from the top-level keys by
    /// [`RunConfig::check`].
    #[serde(default)]
    pub selfplay: SelfPlayConfig,
    /// `[network]`.
    #[serde(default)]
    pub network: NetConfig,
    /// `[training]`.
    #[serde(default)]
    pub training: TrainConfig,
    /// `[loop]`.
    #[serde(default, rename = "loop")]
    pub run: LoopConfig,
}

impl RunConfig {
    /// Checks every section and the rules between them (a fixed resignation threshold beside
    /// the self-tuning one, say), and gives the settings a run takes. `[selfplay]`'s game and
    /// rule set become the top-level ones (a `[selfplay]` naming another game or rule set is an
    /// error: its keys are the old place, and a reader of files moves them to the top first).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key and why.
    pub fn check(mut self) -> Result<CheckedRunConfig, ConfigError> {
        // Rule-set names are read as the games read them: case and spaces aside.
        let canonical = |r: &Option<String>| r.as_ref().map(|r| r.trim().to_ascii_lowercase());
        self.rules = canonical(&self.rules);
        self.selfplay.rules = canonical(&self.selfplay.rules);
        if let Some(name) = &self.rules {
            self.game
                .check_rule_name(name)
                .map_err(|reason| ConfigError { key: "rules", reason })?;
        }
        let named_apart = [
            (
                "selfplay.game",
                self.selfplay.game != GameKind::default() && self.selfplay.game != self.game,
            ),
            ("selfplay.rules", self.selfplay.rules.is_some() && self.selfplay.rules != self.rules),
        ];
        for (key, apart) in named_apart {
            if apart {
                return Err(ConfigError {
                    key,
                    reason: "the game and its rule set are the top-level keys `game` and `rules`; \
                             [selfplay] names others"
                        .into(),
                });
            }
        }
        self.selfplay.game = self.game;
        self.selfplay.rules = self.rules.clone();
        Encoding::for_net(self.game, self.network.input_features)
            .map_err(|reason| ConfigError { key: "network.input_features", reason })?;
        // Checkpoint manifests are TOML, whose integers are signed 64-bit.
        let t = &self.training;
        for (key, v) in [
            ("training.warmup_steps", t.warmup_steps),
            ("training.total_steps", t.total_steps),
            ("training.decay_every", t.decay_every),
        ] {
            if v > i64::MAX as u64 {
                return Err(ConfigError { key, reason: format!("must be at most {}", i64::MAX) });
            }
        }
        let checked = CheckedRunConfig {
            search: Checked::new(self.search)?,
            selfplay: Checked::new(self.selfplay)?,
            network: Checked::new(self.network)?,
            training: Checked::new(self.training)?,
            run: Checked::new(self.run)?,
        };
        if checked.run.resign_target_false_positive > 0.0
            && checked.selfplay.resign_threshold > -1.0
        {
            return Err(ConfigError {
                key: "selfplay.resign_threshold",
                reason: "must be -1 when loop.resign_target_false_positive chooses the threshold \
                         (set one or the other)"
                    .into(),
            });
        }
        // PUCT's target is the visit distribution, whose value is the root's mean: "improved"
        // would record the same values and only look like it did something.
        if checked.selfplay.recorded_value == RecordedValue::Improved
            && checked.search.algorithm != Algorithm::Gumbel
        {
            return Err(ConfigError {
                key: "selfplay.recorded_value",
                reason:
                    "\"improved\" is the value of the Gumbel search's improved policy: it needs \
                         search.algorithm = \"gumbel\""
                        .into(),
            });
        }
        Ok(checked)
    }
}

/// A [`RunConfig`] that passed [`RunConfig::check`]: what [`TrainingRun`] takes. Read-only:
/// each section is a [`Checked`] value (which dereferences to the section), and a change goes
/// through [`CheckedRunConfig::to_unchecked`] and a new check.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedRunConfig {
    search: Checked<SearchConfig>,
    selfplay: Checked<SelfPlayConfig>,
    network: Checked<NetConfig>,
    training: Checked<TrainConfig>,
    run: Checked<LoopConfig>,
}

impl CheckedRunConfig {
    /// The game every section is for.
    pub fn game(&self) -> GameKind {
        self.selfplay.game
    }

    /// `[search]`.
    pub fn search(&self) -> &Checked<SearchConfig> {
        &self.search
    }

    /// `[selfplay]`, its game and rule set the config's.
    pub fn selfplay(&self) -> &Checked<SelfPlayConfig> {
        &self.selfplay
    }

    /// `[network]`.
    pub fn network(&self) -> &Checked<NetConfig> {
        &self.network
    }

    /// `[training]`.
    pub fn training(&self) -> &Checked<TrainConfig> {
        &self.training
    }

    /// `[loop]`.
    pub fn run(&self) -> &Checked<LoopConfig> {
        &self.run
    }

    /// The settings as a config file holds them (to write it, or to change a value and check
    /// again).
    pub fn to_unchecked(&self) -> RunConfig {
        RunConfig {
            game: self.selfplay.game,
            rules: self.selfplay.rules.clone(),
            search: (*self.search).clone(),
            selfplay: (*self.selfplay).clone(),
            network: (*self.network).clone(),
            training: (*self.training).clone(),
            run: (*self.run).clone(),
        }
    }

    /// Checks the settings a distributed run (a trainer with a store) does not support: today
    /// self-tuning resignation (`loop.resign_target_false_positive` > 0), as the workers do not
    /// report their resignation counts. The one check, made by
    /// [`TrainingRun::attach_store`](super::TrainingRun::attach_store) and by a caller that wants
    /// the answer before it writes anything.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the key and what to set instead.
    pub fn check_for_store(&self) -> Result<(), ConfigError> {
        if self.run.resign_target_false_positive > 0.0 {
            return Err(ConfigError {
                key: "loop.resign_target_false_positive",
                reason: "self-tuning resignation is not supported with a store (--store: the \
                         workers do not report their resignation counts); set it to 0 and use \
                         a fixed selfplay.resign_threshold"
                    .into(),
            });
        }
        Ok(())
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
