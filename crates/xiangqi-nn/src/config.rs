//! Network and training settings: the `[network]` and `[training]` sections of a config file.
//!
//! Both structs deserialize with serde, reject unknown keys (`deny_unknown_fields`), fill every
//! missing key with its default, and have a `validate` that names the offending key:
//!
//! ```
//! use xiangqi_nn::{NetConfig, TrainConfig};
//!
//! let net: NetConfig = toml::from_str("blocks = 6\nfilters = 64").unwrap();
//! assert!(net.validate().is_ok());
//! let mut train = TrainConfig::default();
//! train.learning_rate = -1.0;
//! assert_eq!(train.validate().unwrap_err().key, "training.learning_rate");
//! ```
//!
//! A [`NetConfig`] is also written into every checkpoint: it is the network's shape.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A setting with a bad value: which key (with its section, `network.blocks`) and why. The
/// same type as the search crate's, so that every section of a config reports alike.
pub use xiangqi_search::ConfigError;
use xiangqi_search::Validate;

use crate::Precision;

fn check(ok: bool, key: &'static str, reason: impl fmt::Display) -> Result<(), ConfigError> {
    if ok { Ok(()) } else { Err(ConfigError { key, reason: reason.to_string() }) }
}

/// Upper bound on a channel count, far above anything sensible, so that a typo cannot ask for
/// terabytes of weights.
const MAX_CHANNELS: usize = 4096;

/// What the residual blocks add to the plain two-convolution block, to see the whole board.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GlobalKind {
    /// Plain residual blocks: conv–BN–ReLU–conv–BN, skip connection, ReLU.
    #[default]
    None,
    /// Squeeze-excitation (as in Leela Chess Zero): the block's output is averaged over the
    /// board, passed through a bottleneck of `global_channels`, and turned into a per-channel
    /// gate (sigmoid) and bias before the skip connection.
    SqueezeExcitation,
    /// Global pooling (as in KataGo): the first convolution also produces `global_channels`
    /// extra channels whose board mean and max are mapped to a per-channel bias of the block's
    /// middle activation.
    GlobalPooling,
}

/// The `[network]` section: the shape of the network. Inputs and the policy size come from
/// the game's environment view ([`xiangqi_search::Encoding`]), not from this section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetConfig {
    /// Residual blocks in the tower.
    pub blocks: usize,
    /// Channels of every 3 × 3 convolution in the tower.
    pub filters: usize,
    /// `"none"`, `"squeeze_excitation"` or `"global_pooling"`.
    pub global: GlobalKind,
    /// Bottleneck width of a squeeze-excitation block, or pooled channels of a global-pooling
    /// block. Unused with `global = "none"`.
    pub global_channels: usize,
    /// Every how many blocks one has the global structure: block `i` (from 1) has it when
    /// `i % global_every == 0`; 1 = every block.
    pub global_every: usize,
    /// Channels of the policy head's 1 × 1 convolution before its linear layer.
    pub policy_channels: usize,
    /// Channels of the value head's 1 × 1 convolution.
    pub value_channels: usize,
    /// Width of the value head's hidden linear layer.
    pub value_hidden: usize,
    /// Whether the net also takes the game's tactical feature planes computed by the rules
    /// (attacked points, hanging and pinned pieces, check: `xiangqi::env::FEATURE_PLANES`),
    /// encoding version 2; `false` is the 16 base planes of version 1. Xiangqi only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub input_features: bool,
    /// Auxiliary head (KataGo's): the opponent's reply policy, the search policy of the next
    /// position of the game, from the policy head's features through a linear layer of its own
    /// (`policy_channels · 90 → POLICY_SIZE`). Trained with `training.opponent_policy_weight`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub opponent_policy: bool,
    /// Auxiliary head (Leela Chess Zero's): the plies left until the game's end, one output from
    /// the value head's hidden layer. Trained with `training.moves_left_weight`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub moves_left: bool,
    /// Auxiliary head (after KataGo's short-term value heads): WDL logits of the search values
    /// of the next plies, averaged with weights decaying over `loop.short_term_plies` (see
    /// `xiangqi_train`'s targets), from the value head's hidden layer. Trained with
    /// `training.short_term_value_weight`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub short_term_value: bool,
    /// Auxiliary head (KataGo's soft policy): a second policy, from the policy head's features
    /// through a linear layer of its own (`policy_channels · 90 → POLICY_SIZE`), trained on
    /// the policy target softened to `π^(1/4)` (renormalized), so that it must tell apart the
    /// moves the search liked less. Trained with `training.soft_policy_weight`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub soft_policy: bool,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            blocks: 6,
            filters: 64,
            global: GlobalKind::None,
            global_channels: 16,
            global_every: 2,
            policy_channels: 2,
            value_channels: 2,
            value_hidden: 64,
            input_features: false,
            opponent_policy: false,
            moves_left: false,
            short_term_value: false,
            soft_policy: false,
        }
    }
}

/// The largest weight of a loss term (`training.*_weight`). The terms are of order one and
/// the learning rate sets the step, so a larger weight is a mistyped value (`1e3` for `1e-3`)
/// that would only overflow the gradients a few steps into the run.
pub const MAX_LOSS_WEIGHT: f64 = 100.0;

/// The most weights of the residual tower (about 0.8 GB of f32, 3.2 GB with Adam's state and
/// the gradients): far beyond anything trainable here, well below what aborts an allocation.
const MAX_TOWER_WEIGHTS: f64 = 200e6;

impl NetConfig {
    /// A tower of `blocks` plain residual blocks of `filters` channels, default heads.
    pub fn new(blocks: usize, filters: usize) -> NetConfig {
        NetConfig { blocks, filters, ..NetConfig::default() }
    }

    /// A very small network for tests and smoke runs: 1 block of 8 filters.
    pub fn tiny() -> NetConfig {
        NetConfig { blocks: 1, filters: 8, value_hidden: 16, ..NetConfig::default() }
    }

    /// Whether residual block `i` (from 0) has the global structure.
    pub fn block_is_global(&self, i: usize) -> bool {
        self.global != GlobalKind::None && (i + 1).is_multiple_of(self.global_every)
    }

    /// Checks every value.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key (`network.<key>`) and why.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(self.blocks >= 1, "network.blocks", "must be at least 1")?;
        check(self.blocks <= 256, "network.blocks", "must be at most 256")?;
        let channels = |n: usize| (1..=MAX_CHANNELS).contains(&n);
        let reason = format!("must be between 1 and {MAX_CHANNELS}");
        check(channels(self.filters), "network.filters", &reason)?;
        check(channels(self.policy_channels), "network.policy_channels", &reason)?;
        check(channels(self.value_channels), "network.value_channels", &reason)?;
        check(channels(self.value_hidden), "network.value_hidden", &reason)?;
        // The residual tower's weights dominate: two 3×3 convolutions of filters² per block.
        // Refused before any allocation, so that a typo cannot abort the process later.
        let tower = 2.0 * 9.0 * (self.blocks as f64) * (self.filters as f64).powi(2);
        check(
            tower <= MAX_TOWER_WEIGHTS,
            "network.filters",
            format!(
                "with network.blocks = {} the tower has {:.0} million weights; at most {:.0} \
                 million fit in memory with the optimizer state",
                self.blocks,
                tower / 1e6,
                MAX_TOWER_WEIGHTS / 1e6
            ),
        )?;
        if self.global != GlobalKind::None {
            check(channels(self.global_channels), "network.global_channels", &reason)?;
            check(
                (1..=self.blocks).contains(&self.global_every),
                "network.global_every",
                format!("must be between 1 and network.blocks ({})", self.blocks),
            )?;
        }
        Ok(())
    }

    /// The settings that differ between `self` and `other`, as `key: self vs other` lines;
    /// empty when they describe the same network.
    pub fn differences(&self, other: &NetConfig) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |key: &str, a: String, b: String| {
            if a != b {
                out.push(format!("network.{key}: {a} vs {b}"));
            }
        };
        cmp("blocks", self.blocks.to_string(), other.blocks.to_string());
        cmp("filters", self.filters.to_string(), other.filters.to_string());
        cmp("global", format!("{:?}", self.global), format!("{:?}", other.global));
        if self.global != GlobalKind::None || other.global != GlobalKind::None {
            cmp(
                "global_channels",
                self.global_channels.to_string(),
                other.global_channels.to_string(),
            );
            cmp("global_every", self.global_every.to_string(), other.global_every.to_string());
        }
        cmp("policy_channels", self.policy_channels.to_string(), other.policy_channels.to_string());
        cmp("value_channels", self.value_channels.to_string(), other.value_channels.to_string());
        cmp("value_hidden", self.value_hidden.to_string(), other.value_hidden.to_string());
        cmp("input_features", self.input_features.to_string(), other.input_features.to_string());
        for (key, a, b) in [
            ("opponent_policy", self.opponent_policy, other.opponent_policy),
            ("moves_left", self.moves_left, other.moves_left),
            ("short_term_value", self.short_term_value, other.short_term_value),
            ("soft_policy", self.soft_policy, other.soft_policy),
        ] {
            cmp(key, a.to_string(), b.to_string());
        }
        out
    }

    /// Whether the network has any auxiliary head (`opponent_policy`, `moves_left`,
    /// `short_term_value`, `soft_policy`).
    pub fn has_auxiliary_heads(&self) -> bool {
        self.opponent_policy || self.moves_left || self.short_term_value || self.soft_policy
    }

    /// The network without its auxiliary heads: what plays, and what an export holds (the
    /// heads only shape the tower during training).
    pub fn without_auxiliary_heads(&self) -> NetConfig {
        NetConfig {
            opponent_policy: false,
            moves_left: false,
            short_term_value: false,
            soft_policy: false,
            ..self.clone()
        }
    }

    /// Whether two configs build the same network (the unused global settings of a network
    /// without global blocks do not count).
    pub fn same_shape(&self, other: &NetConfig) -> bool {
        self.differences(other).is_empty()
    }
}

/// Which optimizer the trainer uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptimizerKind {
    /// Adam with decoupled weight decay (Loshchilov & Hutter 2019).
    #[default]
    Adamw,
    /// Stochastic gradient descent with momentum; weight decay as an L2 term of the loss.
    Sgd,
}

/// How the learning rate changes after the warm-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LrSchedule {
    /// `learning_rate` throughout.
    #[default]
    Constant,
    /// Cosine from `learning_rate` down to `learning_rate · final_lr_fraction` at `total_steps`,
    /// then constant.
    Cosine,
    /// Multiplied by `decay_factor` every `decay_every` steps.
    Step,
    /// Cosine from `learning_rate` down to `learning_rate · final_lr_fraction` over the run's
    /// budget, as the training loop reports its progress through it (the share of
    /// `loop.max_hours`, `loop.max_steps` or `loop.max_samples` spent, whichever is furthest;
    /// see [`crate::Trainer::set_run_progress`]). Without a budget, `learning_rate` throughout.
    /// The anneal of a fixed-budget run: the net of the budget's end is trained at the floor.
    /// Measured once, on the CPU main job's 15-minute runs, where it played worse than the
    /// constant rate (`experiments/2026-12-06-lr-anneal-ab/`).
    CosineRun,
}

/// The `[training]` section: optimizer, learning-rate schedule, regularisation and the loss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// `"adamw"` or `"sgd"`.
    pub optimizer: OptimizerKind,
    /// Peak learning rate (after the warm-up).
    pub learning_rate: f64,
    /// Steps of linear warm-up from 0 to `learning_rate`; 0 = none.
    pub warmup_steps: u64,
    /// `"constant"`, `"cosine"`, `"step"` or `"cosine_run"`.
    pub schedule: LrSchedule,
    /// Cosine: the step where the learning rate reaches its floor.
    pub total_steps: u64,
    /// Cosine and cosine_run: the floor as a fraction of `learning_rate`.
    pub final_lr_fraction: f64,
    /// Step: steps between two decays.
    pub decay_every: u64,
    /// Step: factor of each decay.
    pub decay_factor: f64,
    /// Weight decay of the convolution and linear weights (not of biases and batch-norm
    /// parameters): decoupled for AdamW, an L2 term `weight_decay / 2 · ‖w‖²` for SGD.
    pub weight_decay: f64,
    /// SGD momentum; AdamW β₁.
    pub momentum: f64,
    /// AdamW β₂.
    pub beta2: f64,
    /// AdamW ε.
    pub epsilon: f64,
    /// SGD: Nesterov momentum.
    pub nesterov: bool,
    /// Rescale the gradient when its global L2 norm exceeds this; 0 = no clipping.
    pub grad_clip_norm: f64,
    /// Mirror each sample left–right with probability ½ (the one symmetry of xiangqi).
    pub mirror: bool,
    /// Take the policy softmax over the sample's legal moves only, as the search does, so
    /// that no gradient pushes illegal actions down (and the reported entropy is over legal
    /// moves). Samples added with a dense policy target ([`crate::TrainBatch::push`]) count
    /// every action as legal. `false` is the softmax over all actions of earlier versions.
    pub mask_illegal: bool,
    /// Weight of the policy cross-entropy in the loss.
    pub policy_weight: f64,
    /// Weight of the WDL cross-entropy in the loss.
    pub value_weight: f64,
    /// Weight of the opponent-reply policy cross-entropy (KataGo uses 0.15); used only by a
    /// network with `network.opponent_policy`.
    pub opponent_policy_weight: f64,
    /// Weight of the moves-left loss (Leela Chess Zero uses 0.1 for its head); used only by a
    /// network with `network.moves_left`.
    pub moves_left_weight: f64,
    /// Weight of the short-term value cross-entropy; used only by a network with
    /// `network.short_term_value`.
    pub short_term_value_weight: f64,
    /// Weight of the soft-policy cross-entropy, a mean over the full searches as the policy
    /// term's (KataGo weights it 8 times its policy term: the softened target, once learnt,
    /// gives much smaller gradients); used only by a network with `network.soft_policy`.
    pub soft_policy_weight: f64,
    /// Samples per forward/backward pass; 0 = the whole batch in one pass. With a micro-batch
    /// smaller than the batch, the micro-batches run in parallel on the rayon pool and their
    /// gradients are summed before the one optimizer step (the loss is the same), but batch
    /// normalisation normalises each micro-batch with its own statistics ("ghost batch
    /// normalisation", as Leela Chess Zero's virtual batch size), and its running statistics
    /// move once per step towards the mean of the micro-batches' statistics. On the CPU backend
    /// this is faster (smaller passes stay in cache, and they overlap; 64 gives about +35 % at
    /// batch 256 on 2 cores); on a GPU set 0. The result does not depend on the number of
    /// threads.
    pub micro_batch: usize,
    /// The arithmetic of the tower's 3 × 3 convolutions in training, forward and both
    /// gradients: `"f32"`, or `"bf16"` (bfloat16 products summed in `f32`, the mixed precision
    /// of Micikevicius et al. 2018 and Kalamkar et al. 2019) where training runs on the CPU
    /// device of a CPU with Intel's AMX, `"f32"` elsewhere; `"auto"` is the same as `"bf16"`.
    /// The weights, the optimizer's state, batch normalisation, the heads and the losses stay
    /// `f32`. The default, `"f32"`, is not written.
    #[serde(skip_serializing_if = "Precision::is_f32")]
    pub precision: Precision,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            optimizer: OptimizerKind::Adamw,
            learning_rate: 1e-3,
            warmup_steps: 200,
            schedule: LrSchedule::Constant,
            total_steps: 100_000,
            final_lr_fraction: 0.1,
            decay_every: 50_000,
            decay_factor: 0.1,
            weight_decay: 1e-4,
            momentum: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            nesterov: false,
            grad_clip_norm: 10.0,
            mirror: true,
            mask_illegal: true,
            policy_weight: 1.0,
            value_weight: 1.0,
            opponent_policy_weight: 0.15,
            moves_left_weight: 0.1,
            short_term_value_weight: 0.5,
            soft_policy_weight: 8.0,
            micro_batch: 64,
            precision: Precision::F32,
        }
    }
}

impl TrainConfig {
    /// Checks every value.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key (`training.<key>`) and why.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let non_negative = |x: f64| x.is_finite() && x >= 0.0;
        let unit_open = |x: f64| x.is_finite() && (0.0..1.0).contains(&x);
        check(positive(self.learning_rate), "training.learning_rate", "must be a positive number")?;
        // Checkpoint manifests are TOML, whose integers are signed 64-bit.
        for (key, v) in [
            ("training.warmup_steps", self.warmup_steps),
            ("training.total_steps", self.total_steps),
            ("training.decay_every", self.decay_every),
        ] {
            check(v <= i64::MAX as u64, key, format!("must be at most {}", i64::MAX))?;
        }
        check(non_negative(self.weight_decay), "training.weight_decay", "must be a number >= 0")?;
        check(unit_open(self.momentum), "training.momentum", "must be in [0, 1)")?;
        check(unit_open(self.beta2), "training.beta2", "must be in [0, 1)")?;
        check(positive(self.epsilon), "training.epsilon", "must be a positive number")?;
        check(
            non_negative(self.grad_clip_norm),
            "training.grad_clip_norm",
            "must be a number >= 0 (0 disables clipping)",
        )?;
        for (key, w) in [
            ("training.policy_weight", self.policy_weight),
            ("training.value_weight", self.value_weight),
            ("training.opponent_policy_weight", self.opponent_policy_weight),
            ("training.moves_left_weight", self.moves_left_weight),
            ("training.short_term_value_weight", self.short_term_value_weight),
            ("training.soft_policy_weight", self.soft_policy_weight),
        ] {
            check(
                non_negative(w) && w <= MAX_LOSS_WEIGHT,
                key,
                format!("must be a number from 0 to {MAX_LOSS_WEIGHT}"),
            )?;
        }
        check(
            self.policy_weight + self.value_weight > 0.0,
            "training.value_weight",
            "policy_weight and value_weight must not both be 0",
        )?;
        match self.schedule {
            LrSchedule::Constant => {}
            LrSchedule::Cosine | LrSchedule::CosineRun => {
                if self.schedule == LrSchedule::Cosine {
                    check(self.total_steps >= 1, "training.total_steps", "must be at least 1")?;
                }
                check(
                    self.final_lr_fraction.is_finite()
                        && (0.0..=1.0).contains(&self.final_lr_fraction),
                    "training.final_lr_fraction",
                    "must be between 0 and 1",
                )?;
            }
            LrSchedule::Step => {
                check(self.decay_every >= 1, "training.decay_every", "must be at least 1")?;
                check(
                    self.decay_factor.is_finite()
                        && self.decay_factor > 0.0
                        && self.decay_factor <= 1.0,
                    "training.decay_factor",
                    "must be in (0, 1]",
                )?;
            }
        }
        Ok(())
    }

    /// The learning rate of optimizer step `step` (counted from 0): linear warm-up over
    /// `warmup_steps` (step 0 gets `learning_rate / warmup_steps`), then the schedule, which
    /// counts from the end of the warm-up. `cosine_run` reads as `constant` here: its rate
    /// depends on the run's progress ([`TrainConfig::learning_rate_in_run`]).
    pub fn learning_rate_at(&self, step: u64) -> f64 {
        self.learning_rate_in_run(step, None)
    }

    /// The learning rate of optimizer step `step` when `progress` (0 to 1, clamped) of the
    /// run's budget is spent; `None` for a run without a budget. Only `cosine_run` reads
    /// `progress`. Its warm-up scales the cosine by `(step + 1) / warmup_steps` (the budget's
    /// clock runs from the start, so the rate joins the curve where the run is when the
    /// warm-up ends); the other schedules start after the warm-up.
    pub fn learning_rate_in_run(&self, step: u64, progress: Option<f64>) -> f64 {
        let base = self.learning_rate;
        let warming = step < self.warmup_steps;
        let warm_share = (step + 1) as f64 / self.warmup_steps.max(1) as f64;
        let cosine = |progress: f64| {
            let floor = base * self.final_lr_fraction;
            let progress = if progress.is_nan() { 0.0 } else { progress.clamp(0.0, 1.0) };
            floor + (base - floor) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
        };
        if self.schedule == LrSchedule::CosineRun {
            let rate = progress.map_or(base, cosine);
            return if warming { rate * warm_share } else { rate };
        }
        if warming {
            return base * warm_share;
        }
        let t = step - self.warmup_steps;
        match self.schedule {
            // `CosineRun` returned above.
            LrSchedule::Constant | LrSchedule::CosineRun => base,
            LrSchedule::Cosine => {
                let total = self.total_steps.saturating_sub(self.warmup_steps).max(1);
                cosine(t as f64 / total as f64)
            }
            LrSchedule::Step => {
                let decays = (t / self.decay_every).min(i32::MAX as u64) as i32;
                base * self.decay_factor.powi(decays)
            }
        }
    }
}

impl Validate for NetConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        NetConfig::validate(self)
    }
}

impl Validate for TrainConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        TrainConfig::validate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_round_trip_through_toml() {
        let net = NetConfig::default();
        net.validate().unwrap();
        let text = toml::to_string(&net).unwrap();
        assert_eq!(toml::from_str::<NetConfig>(&text).unwrap(), net);
        let train = TrainConfig::default();
        train.validate().unwrap();
        let text = toml::to_string(&train).unwrap();
        assert_eq!(toml::from_str::<TrainConfig>(&text).unwrap(), train);
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = toml::from_str::<NetConfig>("blocks = 2\nfliters = 3").unwrap_err();
        assert!(err.to_string().contains("fliters"), "{err}");
        let err = toml::from_str::<TrainConfig>("lr = 0.1").unwrap_err();
        assert!(err.to_string().contains("lr"), "{err}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let net = NetConfig { blocks: 0, ..NetConfig::default() };
        assert_eq!(net.validate().unwrap_err().key, "network.blocks");
        let net = NetConfig {
            global: GlobalKind::SqueezeExcitation,
            global_every: 9,
            ..NetConfig::default()
        };
        let err = net.validate().unwrap_err();
        assert_eq!(err.key, "network.global_every");
        assert!(err.to_string().contains("between 1 and network.blocks (6)"), "{err}");
        let train = TrainConfig { momentum: 1.0, ..TrainConfig::default() };
        assert_eq!(train.validate().unwrap_err().key, "training.momentum");
    }

    #[test]
    fn differences_name_the_keys() {
        let a = NetConfig::new(6, 64);
        let b = NetConfig::new(10, 64);
        assert_eq!(a.differences(&b), vec!["network.blocks: 6 vs 10".to_string()]);
        // Unused global settings do not make a difference.
        let c = NetConfig { global_channels: 99, ..a.clone() };
        assert!(a.same_shape(&c));
        // An auxiliary head does: the checkpoint holds its weights.
        let d = NetConfig { moves_left: true, ..a.clone() };
        assert_eq!(a.differences(&d), vec!["network.moves_left: false vs true".to_string()]);
        assert_eq!(d.without_auxiliary_heads(), a);
        assert!(d.has_auxiliary_heads() && !a.has_auxiliary_heads());
    }

    #[test]
    fn auxiliary_heads_are_off_by_default_and_absent_from_the_written_config() {
        let text = toml::to_string(&NetConfig::default()).unwrap();
        for key in ["opponent_policy", "moves_left", "short_term_value", "soft_policy"] {
            assert!(!text.contains(key), "{text}");
        }
        let net: NetConfig = toml::from_str("soft_policy = true").unwrap();
        assert!(net.soft_policy && net.has_auxiliary_heads());
        assert!(!net.without_auxiliary_heads().soft_policy);
        let net: NetConfig =
            toml::from_str("opponent_policy = true\nshort_term_value = true").unwrap();
        assert!(net.opponent_policy && net.short_term_value && !net.moves_left);
        let d = TrainConfig::default;
        for (key, train) in [
            ("opponent_policy_weight", TrainConfig { opponent_policy_weight: -0.5, ..d() }),
            ("moves_left_weight", TrainConfig { moves_left_weight: f64::NAN, ..d() }),
            ("short_term_value_weight", TrainConfig { short_term_value_weight: -1.0, ..d() }),
            ("moves_left_weight", TrainConfig { moves_left_weight: 1e30, ..d() }),
            ("soft_policy_weight", TrainConfig { soft_policy_weight: -8.0, ..d() }),
            ("policy_weight", TrainConfig { policy_weight: 100.5, ..d() }),
            ("value_weight", TrainConfig { value_weight: f64::INFINITY, ..d() }),
        ] {
            assert_eq!(train.validate().unwrap_err().key, format!("training.{key}"));
        }
        // The bound itself is a weight one may use.
        assert!(TrainConfig { value_weight: MAX_LOSS_WEIGHT, ..d() }.validate().is_ok());
    }

    #[test]
    fn learning_rate_schedule() {
        let mut c = TrainConfig { learning_rate: 1.0, warmup_steps: 4, ..TrainConfig::default() };
        assert_eq!(c.learning_rate_at(0), 0.25);
        assert_eq!(c.learning_rate_at(3), 1.0);
        assert_eq!(c.learning_rate_at(1000), 1.0);
        c.schedule = LrSchedule::Step;
        c.decay_every = 10;
        c.decay_factor = 0.5;
        assert_eq!(c.learning_rate_at(13), 1.0);
        assert_eq!(c.learning_rate_at(14), 0.5);
        assert_eq!(c.learning_rate_at(24), 0.25);
        c.schedule = LrSchedule::Cosine;
        c.total_steps = 104;
        c.final_lr_fraction = 0.1;
        assert!((c.learning_rate_at(4) - 1.0).abs() < 1e-12);
        assert!((c.learning_rate_at(54) - 0.55).abs() < 1e-12);
        assert!((c.learning_rate_at(104) - 0.1).abs() < 1e-12);
        assert!((c.learning_rate_at(500) - 0.1).abs() < 1e-12);
        // Over the run's budget: the cosine of the share spent (scaled down during the
        // warm-up); a run without a budget keeps the peak.
        c.schedule = LrSchedule::CosineRun;
        c.total_steps = 0;
        assert!(c.validate().is_ok(), "cosine_run needs no total_steps");
        // The warm-up scales the curve: half of the rate at 0.5 (0.55) at step 1 of 4.
        assert!((c.learning_rate_in_run(1, Some(0.5)) - 0.275).abs() < 1e-12);
        assert_eq!(c.learning_rate_in_run(1, None), 0.5);
        assert_eq!(c.learning_rate_in_run(500, None), 1.0);
        assert_eq!(c.learning_rate_at(500), 1.0);
        assert!((c.learning_rate_in_run(500, Some(0.0)) - 1.0).abs() < 1e-12);
        assert!((c.learning_rate_in_run(500, Some(0.5)) - 0.55).abs() < 1e-12);
        assert!((c.learning_rate_in_run(5, Some(1.0)) - 0.1).abs() < 1e-12);
        assert!((c.learning_rate_in_run(5, Some(3.0)) - 0.1).abs() < 1e-12, "past the budget");
        assert!((c.learning_rate_in_run(5, Some(f64::NAN)) - 1.0).abs() < 1e-12);
        let parsed: TrainConfig = toml::from_str("schedule = \"cosine_run\"").unwrap();
        assert_eq!(parsed.schedule, LrSchedule::CosineRun);
    }
}
