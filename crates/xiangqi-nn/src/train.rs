//! Training: batches of samples, the loss, and the optimizer step.
//!
//! The loss of a batch of `B` samples is
//!
//! ```text
//! L = policy_weight · Σ_full CE(π_target, softmax_legal(policy logits)) / max(1, #full)
//!   + value_weight  · Σ_all  w_i · CE(wdl_target, softmax(wdl logits)) / B
//!   [+ opponent_policy_weight  · Σ_all o_i · CE(opponent π_target, softmax(opponent logits)) / B]
//!   [+ soft_policy_weight      · Σ_full CE(soft(π_target), softmax_legal(soft logits)) / max(1, #full)]
//!   [+ short_term_value_weight · Σ_all s_i · CE(short-term WDL target, softmax(its logits)) / B]
//!   [+ moves_left_weight       · Σ_all m_i · Huber_δ(moves-left output − plies left / 100) / B]
//! ```
//!
//! The bracketed terms are those of the auxiliary heads the network has
//! ([`crate::model::AuxiliaryOutput`]); `o_i`, `s_i` and `m_i` are 1 for a sample that carries
//! that target ([`AuxiliaryTargets`]) and 0 for one that does not. The opponent's softmax runs
//! over every action (its legal moves are not known to the batch). `soft(π)` is KataGo's soft
//! policy target, `π^(1/4)` renormalized ([`soft_policy_target`]). Huber_δ is `d² / 2` for
//! `|d| ≤ δ` and `δ (|d| − δ / 2)` beyond, with δ = [`MOVES_LEFT_HUBER_DELTA`] (10 plies).
//!
//! where "full" are the samples whose search was a full one: under playout cap randomization
//! (Wu 2019) only those carry a policy target, so the others add no policy loss. The policy
//! softmax runs over the sample's legal moves ([`TrainConfig::mask_illegal`]), as the search's
//! does, and `w_i` is the sample's value weight ([`TrainBatch::push_weighted`]; 1 by default). Weight decay
//! acts on the convolution and linear weights (rank ≥ 2), not on biases and batch-norm
//! parameters: decoupled in AdamW, an L2 gradient term in SGD; [`StepMetrics::weight_decay_loss`]
//! reports the equivalent L2 term `weight_decay / 2 · ‖w‖²` either way.
//!
//! Each step: optional left–right mirror of each sample with probability ½ (planes and policy
//! target together), forward and backward on the autodiff device (in micro-batches of
//! [`TrainConfig::micro_batch`] samples if set, their gradients summed), global L2 gradient-norm
//! clipping, one optimizer step at the scheduled learning rate
//! ([`TrainConfig::learning_rate_at`]).

use burn::module::ParamGroup;
use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::nn::BatchNorm;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor, TensorData};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use xiangqi::env::{PLANE_FILES, PLANE_RANKS};
use xiangqi_search::{Encoding, GameEnv};

pub use crate::batch::{AuxiliaryTargets, TrainBatch};
use crate::config::{ConfigError, NetConfig, OptimizerKind, TrainConfig};
use crate::error::NnError;
use crate::infer::{InferenceNet, Precision, to_vec};
use crate::model::{Net, WDL};
use crate::optim::FusedAdamW;
use crate::train_ops::{bf16_convolutions, with_bf16_convolutions};

/// δ of the moves-left head's Huber loss, in the head's units (0.1 = 10 plies): errors beyond it
/// count linearly, so that the long games' large errors do not dominate.
pub const MOVES_LEFT_HUBER_DELTA: f32 = 0.1;

/// The power of KataGo's soft policy target, `π^(1/T)` with its temperature `T = 4`.
pub const SOFT_POLICY_POWER: f32 = 0.25;

/// KataGo's soft policy target of one or more policy rows of `width` actions each: every
/// positive entry raised to [`SOFT_POLICY_POWER`], each row renormalized to sum 1. Zero entries
/// (actions the target gives nothing) stay 0, and a row with no positive entry stays all 0
/// (a sample without a policy target adds no loss). The moves the search liked less keep more
/// of the mass: `[16/17, 1/17]` becomes `[2/3, 1/3]`.
///
/// # Panics
/// If `policy.len()` is not a multiple of `width` (or `width` is 0).
pub fn soft_policy_target(policy: &[f32], width: usize) -> Vec<f32> {
    assert!(width > 0 && policy.len().is_multiple_of(width), "rows of {width} actions");
    let mut out: Vec<f32> =
        policy.iter().map(|&p| if p > 0.0 { p.powf(SOFT_POLICY_POWER) } else { 0.0 }).collect();
    for row in out.chunks_exact_mut(width) {
        let sum: f32 = row.iter().sum();
        if sum > 0.0 && sum.is_finite() {
            row.iter_mut().for_each(|x| *x /= sum);
        } else {
            row.fill(0.0);
        }
    }
    out
}

/// What one training step reports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepMetrics {
    /// The optimizer step this was (from 0).
    pub step: u64,
    /// Samples in the batch.
    pub samples: usize,
    /// Samples with a full search (the policy loss is over these).
    pub full_searches: usize,
    /// The loss that was minimised: the weighted policy, value and auxiliary terms (see the
    /// module docs), each term as the mean its own field reports.
    pub loss: f32,
    /// Policy cross-entropy, mean over the full-search samples (0 if there were none).
    pub policy_loss: f32,
    /// WDL cross-entropy, mean over the batch.
    pub value_loss: f32,
    /// `weight_decay / 2 · ‖w‖²` over the decayed weights, before the step.
    pub weight_decay_loss: f32,
    /// Entropy of the predicted policy over all actions, mean over the batch (nats).
    pub policy_entropy: f32,
    /// Fraction of samples whose most likely predicted WDL outcome is the target's.
    pub value_accuracy: f32,
    /// Opponent-reply cross-entropy, mean over the samples with that target (0 without the
    /// head, or without such samples).
    pub opponent_policy_loss: f32,
    /// Soft-policy cross-entropy, mean over the full-search samples (0 without the head, or
    /// without full searches).
    pub soft_policy_loss: f32,
    /// Short-term WDL cross-entropy, mean over the samples with that target (0 likewise).
    pub short_term_value_loss: f32,
    /// Moves-left Huber loss in the head's units, mean over the samples with that target (0
    /// likewise).
    pub moves_left_loss: f32,
    /// Learning rate of this step.
    pub learning_rate: f64,
    /// Global L2 norm of the gradient, before clipping.
    pub grad_norm: f32,
}

/// Owns the network on an autodiff device, the optimizer and its schedule, and the RNG of the
/// mirror augmentation.
pub struct Trainer {
    /// Always `Some` between calls; taken during an optimizer step.
    net: Option<Net>,
    optim: ModuleOptimizer,
    config: TrainConfig,
    device: Device,
    rng: ChaCha8Rng,
    step: u64,
    samples: u64,
    /// The share of the run's budget spent, for the `cosine_run` schedule.
    run_progress: Option<f64>,
}

impl std::fmt::Debug for Trainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trainer")
            .field("net", &self.net().config())
            .field("config", &self.config)
            .field("step", &self.step)
            .field("samples", &self.samples)
            .finish_non_exhaustive()
    }
}

/// The ids of the parameters weight decay acts on: every parameter of rank ≥ 2 (convolution and
/// linear weights).
struct DecayedIds(Vec<ParamId>);

impl ModuleVisitor for DecayedIds {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if D >= 2 {
            self.0.push(param.id);
        }
    }
}

/// Sums of squares of the decayed weights.
struct WeightSquares(Vec<Tensor<1>>);

impl ModuleVisitor for WeightSquares {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if D >= 2 {
            self.0.push(param.val().inner().square().sum());
        }
    }
}

/// Sums of squares of every gradient.
struct GradSquares<'a> {
    grads: &'a GradientsParams,
    sums: Vec<Tensor<1>>,
}

impl ModuleVisitor for GradSquares<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.grads.get::<D>(param.id) {
            self.sums.push(g.square().sum());
        }
    }
}

// Added to the logit of every illegal action when they are masked: far below any logit a
// network produces, small enough that `0 · offset` stays an exact 0 in f32.
use crate::kernels::ILLEGAL_LOGIT_OFFSET;

/// One micro-batch's samples (see [`TrainBatch`] for the layouts).
struct Part {
    planes: Vec<f32>,
    policy: Vec<f32>,
    wdl: Vec<f32>,
    full: Vec<f32>,
    /// `Some` when illegal actions are masked out of the policy softmax.
    legal: Option<Vec<f32>>,
    value_weight: Vec<f32>,
    /// The targets and per-sample weights of the auxiliary heads the network has (`None` for
    /// those it does not).
    opponent: Option<(Vec<f32>, Vec<f32>)>,
    short_term: Option<(Vec<f32>, Vec<f32>)>,
    moves_left: Option<(Vec<f32>, Vec<f32>)>,
    /// The soft policy target (its weights are `full`).
    soft_policy: Option<Vec<f32>>,
}

/// The factors of a pass's summed loss terms: policy, value, opponent reply, short-term value,
/// moves left, soft policy.
#[derive(Clone, Copy)]
struct Scales([f64; 6]);

/// The loss sums a pass reports: policy CE, WDL CE, policy entropy, correct WDL predictions,
/// opponent-reply CE, short-term WDL CE, moves-left Huber loss, soft-policy CE (the last four
/// unweighted by the loss weights, 0 for a head the network lacks).
type Sums = [Tensor<1>; 8];

/// Forward and backward of one (micro-)batch on `net`: the gradients of the part's share of the
/// loss (each term's sum times its scale), and the part's [`Sums`] (on the plain device).
fn pass(net: &Net, part: Part, scales: Scales, dev: &Device) -> (GradientsParams, Sums) {
    let m = part.full.len();
    let (planes, policy_size) = (net.encoding.planes, net.encoding.policy_size);
    let x = Tensor::<4>::from_data(
        TensorData::new(part.planes, [m, planes, PLANE_RANKS, PLANE_FILES]),
        dev,
    );
    let target_policy = Tensor::<2>::from_data(TensorData::new(part.policy, [m, policy_size]), dev);
    let target_wdl = Tensor::<2>::from_data(TensorData::new(part.wdl, [m, WDL]), dev);
    let legal =
        part.legal.map(|l| Tensor::<2>::from_data(TensorData::new(l, [m, policy_size]), dev));
    let xent = CrossEntropy { dev, fused: dev.clone().inner() == Device::flex() };

    let (out, aux) = net.forward_with_auxiliary(x);
    let wdl_logits = out.wdl.clone().inner();
    let (policy_ce, entropy) =
        xent.sum(out.policy, target_policy, legal.as_ref(), part.full.clone(), true);
    let (value_ce, _) = xent.sum(out.wdl, target_wdl.clone(), None, part.value_weight, false);
    let [policy_scale, value_scale, opponent_scale, short_scale, moves_scale, soft_scale] =
        scales.0;
    let mut loss =
        policy_ce.clone().mul_scalar(policy_scale) + value_ce.clone().mul_scalar(value_scale);
    let inner = dev.clone().inner();
    let mut aux_sums: [Tensor<1>; 4] = std::array::from_fn(|_| Tensor::<1>::zeros([1], &inner));
    if let (Some(logits), Some((target, weight))) = (aux.opponent_policy, part.opponent) {
        let target = Tensor::<2>::from_data(TensorData::new(target, [m, policy_size]), dev);
        let (ce, _) = xent.sum(logits, target, None, weight, false);
        loss = loss + ce.clone().mul_scalar(opponent_scale);
        aux_sums[0] = ce.inner();
    }
    if let (Some(logits), Some((target, weight))) = (aux.short_term_value, part.short_term) {
        let target = Tensor::<2>::from_data(TensorData::new(target, [m, WDL]), dev);
        let (ce, _) = xent.sum(logits, target, None, weight, false);
        loss = loss + ce.clone().mul_scalar(short_scale);
        aux_sums[1] = ce.inner();
    }
    if let (Some(out), Some((target, weight))) = (aux.moves_left, part.moves_left) {
        let column = |v: Vec<f32>| Tensor::<2>::from_data(TensorData::new(v, [m, 1]), dev);
        // Huber: q · (|d| − q / 2) with q = min(|d|, δ) is d² / 2 within δ, linear beyond.
        let d = (out - column(target)).abs();
        let q = d.clone().clamp_max(MOVES_LEFT_HUBER_DELTA);
        let huber = (q.clone() * (d - q.mul_scalar(0.5)) * column(weight)).sum();
        loss = loss + huber.clone().mul_scalar(moves_scale);
        aux_sums[2] = huber.inner();
    }
    if let (Some(logits), Some(target)) = (aux.soft_policy, part.soft_policy) {
        // Over the legal moves and the full searches, as the policy term.
        let target = Tensor::<2>::from_data(TensorData::new(target, [m, policy_size]), dev);
        let (ce, _) = xent.sum(logits, target, legal.as_ref(), part.full, false);
        loss = loss + ce.clone().mul_scalar(soft_scale);
        aux_sums[3] = ce.inner();
    }
    let grads = GradientsParams::from_grads(loss.backward(), net);

    // The argmax of the logits is that of their log-softmax.
    let hits = wdl_logits.argmax(1).equal(target_wdl.inner().argmax(1)).float().sum();
    let [opponent, short, moves, soft] = aux_sums;
    (grads, [policy_ce.inner(), value_ce.inner(), entropy, hits, opponent, short, moves, soft])
}

/// The cross-entropy terms of [`pass`]: on burn's CPU backend the fused operation of
/// [`crate::train_ops::softmax_cross_entropy`] (one pass per row, its own backward step), on
/// other devices the same sums written with burn's operations.
struct CrossEntropy<'a> {
    dev: &'a Device,
    fused: bool,
}

impl CrossEntropy<'_> {
    /// `(Σᵢ weightᵢ · Σⱼ targetᵢⱼ · −log softmax(zᵢ)ⱼ, Σᵢ entropy(softmax(zᵢ)))` with `zᵢ =
    /// logitsᵢ + (legalᵢ − 1) · ILLEGAL_LOGIT_OFFSET` where `legal` is given (the entropy, on
    /// the plain device, only where `entropy` asks for it: 0 otherwise off the CPU).
    ///
    /// # Shapes
    /// `logits`, `target`, `legal`: `[m, width]`; `weight`: `m` values → `[1]`, `[1]`.
    fn sum(
        &self,
        logits: Tensor<2>,
        target: Tensor<2>,
        legal: Option<&Tensor<2>>,
        weight: Vec<f32>,
        entropy: bool,
    ) -> (Tensor<1>, Tensor<1>) {
        let m = weight.len();
        if self.fused {
            let weight = Tensor::<1>::from_data(TensorData::new(weight, [m]), self.dev);
            return crate::train_ops::softmax_cross_entropy(logits, target, legal.cloned(), weight);
        }
        let weight = Tensor::<2>::from_data(TensorData::new(weight, [m, 1]), self.dev);
        // Illegal actions get a logit far below any real one: a softmax weight of exactly 0,
        // and so no gradient (0 · a finite log-probability in the cross-entropy).
        let z = match legal {
            Some(l) => logits + l.clone().sub_scalar(1.0).mul_scalar(ILLEGAL_LOGIT_OFFSET),
            None => logits,
        };
        let log_p = log_softmax(z, 1);
        let ce = ((target * log_p.clone()).sum_dim(1) * weight).sum().neg();
        let inner = self.dev.clone().inner();
        let h = if entropy {
            let log_p = log_p.inner();
            (log_p.clone().exp() * log_p).sum().neg()
        } else {
            Tensor::<1>::zeros([1], &inner)
        };
        (ce, h)
    }
}

/// Adds the gradients of `other` into `acc`.
struct AddGrads<'a> {
    acc: &'a mut GradientsParams,
    other: GradientsParams,
}

impl ModuleVisitor for AddGrads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.other.remove::<D>(param.id) {
            let sum = match self.acc.remove::<D>(param.id) {
                Some(a) => a + g,
                None => g,
            };
            self.acc.register(param.id, sum);
        }
    }
}

/// Scales every gradient by a factor.
struct ScaleGrads<'a> {
    grads: &'a mut GradientsParams,
    factor: f32,
}

impl ModuleVisitor for ScaleGrads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.grads.remove::<D>(param.id) {
            self.grads.register(param.id, g.mul_scalar(self.factor));
        }
    }
}

/// Builds the optimizer: decay on rank ≥ 2 parameters only.
fn build_optimizer(config: &TrainConfig, net: &Net) -> ModuleOptimizer {
    let mut ids = DecayedIds(Vec::new());
    net.visit(&mut ids);
    let decayed = ParamGroup::from_ids(ids.0);
    match config.optimizer {
        OptimizerKind::Adamw => {
            // burn's AdamW, in one pass per parameter on the CPU (`crate::optim`).
            let adamw = |wd: f64| {
                FusedAdamW::new(
                    config.momentum as f32,
                    config.beta2 as f32,
                    config.epsilon as f32,
                    wd as f32,
                )
            };
            ModuleOptimizer::from(adamw(0.0)).with_group(decayed, adamw(config.weight_decay), None)
        }
        OptimizerKind::Sgd => {
            let sgd = |wd: f64| {
                let momentum = MomentumConfig {
                    momentum: config.momentum,
                    dampening: 0.0,
                    nesterov: config.nesterov,
                };
                SgdConfig::new()
                    .with_momentum((config.momentum > 0.0).then_some(momentum))
                    .with_weight_decay(
                        (wd > 0.0).then_some(WeightDecayConfig { penalty: wd as f32 }),
                    )
            };
            sgd(0.0).init().with_group(decayed, sgd(config.weight_decay).build(), None)
        }
    }
}

/// The saved state of the trainer's RNG: a ChaCha8 seed, stream and word position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RngState {
    /// The 32-byte seed.
    pub seed: [u8; 32],
    /// The stream.
    pub stream: u64,
    /// The position in the stream, in 32-bit words.
    pub word_pos: u128,
}

impl RngState {
    fn of(rng: &ChaCha8Rng) -> RngState {
        RngState { seed: rng.get_seed(), stream: rng.get_stream(), word_pos: rng.get_word_pos() }
    }

    fn restore(&self) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::from_seed(self.seed);
        rng.set_stream(self.stream);
        rng.set_word_pos(self.word_pos);
        rng
    }
}

impl Trainer {
    /// A trainer with a freshly initialised network ([`Net::seeded`]; `G` is the game). The
    /// device is made an autodiff device if it is not one; `seed` seeds the weights and the
    /// augmentation RNG.
    ///
    /// # Errors
    /// A [`ConfigError`] if either configuration is invalid.
    pub fn new<G: GameEnv>(
        net_config: &NetConfig,
        config: &TrainConfig,
        device: &Device,
        seed: u64,
    ) -> Result<Trainer, ConfigError> {
        Trainer::for_encoding(net_config, Encoding::of::<G>(), config, device, seed)
    }

    /// [`Trainer::new`] for a game's encoding given as a value; the feature planes are taken
    /// as `net_config.input_features` says, whatever `encoding` had.
    ///
    /// # Errors
    /// A [`ConfigError`] if either configuration is invalid, or `network.input_features` is set
    /// for a game without feature planes.
    pub fn for_encoding(
        net_config: &NetConfig,
        encoding: Encoding,
        config: &TrainConfig,
        device: &Device,
        seed: u64,
    ) -> Result<Trainer, ConfigError> {
        net_config.validate()?;
        let encoding = encoding
            .with_features(net_config.input_features)
            .map_err(|reason| ConfigError { key: "network.input_features", reason })?;
        let device = autodiff(device);
        let net = Net::seeded_for(net_config, encoding, &device, seed);
        Trainer::from_net(net, config, &device, seed)
    }

    /// A trainer that starts from the weights of `net` (fine-tuning, or a weights-only
    /// checkpoint) with a fresh optimizer; `seed` seeds the augmentation RNG.
    ///
    /// # Errors
    /// A [`ConfigError`] if `config` is invalid.
    pub fn from_net(
        net: Net,
        config: &TrainConfig,
        device: &Device,
        seed: u64,
    ) -> Result<Trainer, ConfigError> {
        let rng = RngState::of(&ChaCha8Rng::seed_from_u64(seed));
        Trainer::from_parts(net, config, device, rng, 0, 0)
    }

    /// Reassembles a trainer (used by checkpoint loading) with a fresh optimizer.
    pub(crate) fn from_parts(
        net: Net,
        config: &TrainConfig,
        device: &Device,
        rng: RngState,
        step: u64,
        samples: u64,
    ) -> Result<Trainer, ConfigError> {
        config.validate()?;
        let device = autodiff(device);
        // Plain tensors on the inner device, then wrapped as fresh autodiff leaves.
        let net = net.valid().to_device(&device.clone().inner()).train();
        let optim = build_optimizer(config, &net);
        Ok(Trainer {
            net: Some(net),
            optim,
            config: config.clone(),
            device,
            rng: rng.restore(),
            step,
            samples,
            run_progress: None,
        })
    }

    /// Loads a serialised optimizer state (burnpack).
    pub(crate) fn load_optimizer_bytes(
        &mut self,
        bytes: burn::tensor::Bytes,
    ) -> Result<(), String> {
        let optim = build_optimizer(&self.config, self.net());
        self.optim = optim.from_bytes(bytes).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The network being trained (on the autodiff device). Its batch-norm running statistics
    /// may lag one update behind (burn applies an update lazily); `Module::valid`,
    /// [`InferenceNet::from_net`] and the checkpoint functions apply it.
    pub fn net(&self) -> &Net {
        self.net.as_ref().expect("the trainer always holds its network between steps")
    }

    /// The training configuration.
    pub fn config(&self) -> &TrainConfig {
        &self.config
    }

    /// The autodiff device the network trains on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The arithmetic of the tower's convolutions in [`Trainer::step`]: [`Precision::Bf16`]
    /// where `training.precision` asks for it (`"bf16"` or `"auto"`) and it can run, else
    /// [`Precision::F32`].
    pub fn precision(&self) -> Precision {
        match self.config.precision {
            Precision::Bf16 | Precision::Auto if self.bf16_unavailable().is_none() => {
                Precision::Bf16
            }
            _ => Precision::F32,
        }
    }

    /// Why bfloat16 training cannot run here, or `None` where it can: it needs the CPU device
    /// and a CPU with AMX ([`Precision::bf16_training_available`]; inference in bfloat16 also
    /// runs on AVX-512 BF16 alone).
    pub fn bf16_unavailable(&self) -> Option<&'static str> {
        if self.device.clone().inner() != Device::flex() {
            Some("bfloat16 training runs only on the CPU device")
        } else if !Precision::bf16_training_available() {
            Some("this CPU (or operating system) has no AMX with bfloat16")
        } else {
            None
        }
    }

    /// Optimizer steps taken so far.
    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// Training samples consumed so far.
    pub fn samples_seen(&self) -> u64 {
        self.samples
    }

    /// The state of the augmentation RNG.
    pub fn rng_state(&self) -> RngState {
        RngState::of(&self.rng)
    }

    /// The optimizer state, serialised (burnpack).
    pub(crate) fn optimizer_bytes(&self) -> Result<burn::tensor::Bytes, String> {
        self.optim.into_bytes().map_err(|e| e.to_string())
    }

    /// Replaces the training configuration (a new schedule, say); the optimizer's state is kept
    /// unless the optimizer kind changes.
    ///
    /// # Errors
    /// A [`ConfigError`] if `config` is invalid.
    pub fn set_config(&mut self, config: &TrainConfig) -> Result<(), ConfigError> {
        config.validate()?;
        let bytes = (config.optimizer == self.config.optimizer)
            .then(|| self.optim.into_bytes().ok())
            .flatten();
        let mut optim = build_optimizer(config, self.net());
        if let Some(bytes) = bytes {
            optim = optim.from_bytes(bytes).map_err(|e| ConfigError {
                key: "training.optimizer",
                reason: format!("the optimizer state does not carry over: {e}"),
            })?;
        }
        self.optim = optim;
        self.config = config.clone();
        Ok(())
    }

    /// Tells the trainer how much of its run's budget is spent, 0 to 1 (`None`: the run has no
    /// budget), for the `cosine_run` schedule; other schedules ignore it. It holds until the
    /// next call, and a new trainer starts with `None`.
    pub fn set_run_progress(&mut self, progress: Option<f64>) {
        self.run_progress = progress;
    }

    /// The network folded for inference on `device` (a plain device such as `Device::flex()`).
    ///
    /// # Errors
    /// [`NnError::Read`] if the weights cannot be read.
    pub fn inference_net(&self, device: &Device) -> Result<InferenceNet, NnError> {
        InferenceNet::from_net(self.net(), device)
    }

    /// One optimizer step on `batch` (see the [module documentation](self)).
    ///
    /// # Errors
    /// [`NnError::Batch`] for an empty batch; [`NnError::NotFinite`] if the loss or the
    /// gradient norm is not finite (the step is then not taken); [`NnError::Read`] if the
    /// device fails.
    pub fn step(&mut self, batch: &TrainBatch) -> Result<StepMetrics, NnError> {
        let n = batch.len();
        self.checked_encoding(batch)?;
        let inputs = self.augmented(batch);
        let mask_illegal = self.config.mask_illegal;
        let dev = &self.device;
        let inner = dev.clone().inner();
        let full_searches = batch.full_searches();
        let micro = match self.config.micro_batch {
            0 => n,
            m => m.min(n),
        };
        let c = &self.config;
        let per_sample = |w: f64| w / n as f64;
        let scales = Scales([
            c.policy_weight / full_searches.max(1) as f64,
            per_sample(c.value_weight),
            per_sample(c.opponent_policy_weight),
            per_sample(c.short_term_value_weight),
            per_sample(c.moves_left_weight),
            c.soft_policy_weight / full_searches.max(1) as f64,
        ]);
        // Samples carrying each auxiliary target, for the reported means.
        let count = |w: &[f32]| w.iter().filter(|&&x| x > 0.0).count();
        let aux_counts = [
            count(&batch.opponent_weight),
            count(&batch.short_term_weight),
            count(&batch.moves_left_weight),
            full_searches,
        ];

        let net = self.net.take().expect("the trainer always holds its network between steps");
        let heads = Heads::of(&net);
        let bf16 = self.precision() == Precision::Bf16;
        let (mut grads, sums) = with_bf16_convolutions(bf16, || {
            if micro >= n {
                pass(&net, inputs.part(batch, 0, n, mask_illegal, heads), scales, dev)
            } else {
                micro_batch_passes(&net, batch, &inputs, micro, mask_illegal, scales, dev)
            }
        });

        let report = step_report(&net, &grads, sums, n, full_searches, aux_counts, &inner);
        let r = match to_vec(report) {
            Ok(r) => r,
            Err(e) => {
                self.net = Some(net);
                return Err(e);
            }
        };
        let (policy_loss, value_loss) = (r[0], r[1]);
        let [opponent_policy_loss, short_term_value_loss, moves_left_loss, soft_policy_loss] =
            [r[6], r[7], r[8], r[9]];
        let aux_loss = |has: bool, w: f64, l: f32| if has { w * f64::from(l) } else { 0.0 };
        let loss = (c.policy_weight * f64::from(policy_loss)
            + c.value_weight * f64::from(value_loss)
            + aux_loss(heads.opponent, c.opponent_policy_weight, opponent_policy_loss)
            + aux_loss(heads.short_term, c.short_term_value_weight, short_term_value_loss)
            + aux_loss(heads.moves_left, c.moves_left_weight, moves_left_loss)
            + aux_loss(heads.soft, c.soft_policy_weight, soft_policy_loss))
            as f32;
        let grad_norm = r[2].sqrt();
        for (what, value) in [("the loss", loss), ("the gradient norm", grad_norm)] {
            if !value.is_finite() {
                self.net = Some(net);
                return Err(NnError::NotFinite { step: self.step, what, value });
            }
        }
        let clip = self.config.grad_clip_norm as f32;
        if clip > 0.0 && grad_norm > clip {
            net.visit(&mut ScaleGrads { grads: &mut grads, factor: clip / grad_norm });
        }
        let learning_rate = self.config.learning_rate_in_run(self.step, self.run_progress);
        self.net = Some(self.optim.step(learning_rate, net, grads));

        let metrics = StepMetrics {
            step: self.step,
            samples: n,
            full_searches,
            loss,
            policy_loss,
            value_loss,
            weight_decay_loss: (0.5 * self.config.weight_decay * f64::from(r[3])) as f32,
            policy_entropy: r[4],
            value_accuracy: r[5],
            opponent_policy_loss,
            soft_policy_loss,
            short_term_value_loss,
            moves_left_loss,
            learning_rate,
            grad_norm,
        };
        self.step += 1;
        self.samples += n as u64;
        Ok(metrics)
    }

    /// The encoding of a batch this trainer's network can train on.
    fn checked_encoding(&self, batch: &TrainBatch) -> Result<Encoding, NnError> {
        if batch.is_empty() {
            return Err(NnError::Batch("a training batch needs at least one sample".into()));
        }
        let enc = self.net().encoding;
        if batch.encoding != enc {
            return Err(NnError::Batch(format!(
                "a batch of {} samples (encoding {}) for a network of {} (encoding {})",
                batch.encoding.game, batch.encoding.version, enc.game, enc.version
            )));
        }
        Ok(enc)
    }

    /// Which samples of the batch are mirrored left to right: each with probability ½ when
    /// `training.mirror` is on (none otherwise). The planes, policies, legal masks and
    /// opponent-reply targets of those samples are mirrored as each micro-batch is cut
    /// ([`Inputs::part`]); the other targets do not change under the mirror.
    fn augmented(&mut self, batch: &TrainBatch) -> Inputs {
        let flips = (0..batch.len()).map(|_| self.config.mirror && self.rng.random_bool(0.5));
        Inputs { flips: flips.collect() }
    }
}

/// Which auxiliary heads a network has.
#[derive(Clone, Copy)]
struct Heads {
    opponent: bool,
    short_term: bool,
    moves_left: bool,
    soft: bool,
}

impl Heads {
    fn of(net: &Net) -> Heads {
        Heads {
            opponent: net.opponent_policy_fc.is_some(),
            short_term: net.short_term_fc.is_some(),
            moves_left: net.moves_left_fc.is_some(),
            soft: net.soft_policy_fc.is_some(),
        }
    }
}

/// A step's augmentation: which samples are mirrored.
struct Inputs {
    flips: Vec<bool>,
}

impl Inputs {
    /// Rows `start..end` of `v` (`width` values a sample; zeros for rows past its end, as the
    /// opponent-reply targets of samples before the first one with a target), each mirrored
    /// sample's row through `mirror`.
    fn rows(
        &self,
        v: &[f32],
        width: usize,
        start: usize,
        end: usize,
        mirror: fn(&mut [f32]),
    ) -> Vec<f32> {
        // Copied once, then zeros past `v`'s end (not zeroed first and then overwritten).
        let have = v.len().min(end * width).saturating_sub(start * width);
        let mut out = Vec::with_capacity((end - start) * width);
        if have > 0 {
            out.extend_from_slice(&v[start * width..start * width + have]);
        }
        out.resize((end - start) * width, 0.0);
        for (row, &flip) in out.chunks_exact_mut(width).zip(&self.flips[start..end]) {
            if flip {
                mirror(row);
            }
        }
        out
    }

    /// Samples `start..end` as a [`Part`], augmented, with the targets of the heads in `heads`.
    fn part(&self, batch: &TrainBatch, start: usize, end: usize, mask: bool, heads: Heads) -> Part {
        let enc = &batch.encoding;
        let (input_size, policy_size) = (enc.input_size(), enc.policy_size);
        let rows = |v: &[f32], width: usize| v[start * width..end * width].to_vec();
        let policy = self.rows(&batch.policy, policy_size, start, end, enc.mirror_policy);
        Part {
            planes: self.rows(&batch.planes, input_size, start, end, enc.mirror_planes),
            // From the policy target as augmented (the power commutes with the mirror).
            soft_policy: heads.soft.then(|| soft_policy_target(&policy, policy_size)),
            policy,
            wdl: rows(&batch.wdl, WDL),
            full: rows(&batch.full, 1),
            legal: mask
                .then(|| self.rows(&batch.legal, policy_size, start, end, enc.mirror_policy)),
            value_weight: rows(&batch.value_weight, 1),
            opponent: heads.opponent.then(|| {
                let targets =
                    self.rows(&batch.opponent, policy_size, start, end, enc.mirror_policy);
                (targets, rows(&batch.opponent_weight, 1))
            }),
            short_term: heads
                .short_term
                .then(|| (rows(&batch.short_term, WDL), rows(&batch.short_term_weight, 1))),
            moves_left: heads
                .moves_left
                .then(|| (rows(&batch.moves_left, 1), rows(&batch.moves_left_weight, 1))),
        }
    }
}

/// The gradients and the loss [`Sums`] of `batch` passed in micro-batches of `micro` samples:
/// each on its own copy of `net`, in parallel, the batch norms' running statistics then moved
/// once towards the mean of the copies' own.
fn micro_batch_passes(
    net: &Net,
    batch: &TrainBatch,
    inputs: &Inputs,
    micro: usize,
    mask_illegal: bool,
    scales: Scales,
    dev: &Device,
) -> (GradientsParams, Sums) {
    let n = batch.len();
    let heads = Heads::of(net);
    // The rayon threads run the passes in the caller's precision.
    let bf16 = bf16_convolutions();
    // Each micro-batch on its own copy of the network (same parameter ids, its own
    // autodiff graph and batch-norm running state), in parallel.
    let parts: Vec<(Net, Part)> = (0..n)
        .step_by(micro)
        .map(|start| {
            let end = (start + micro).min(n);
            (net.valid().train(), inputs.part(batch, start, end, mask_illegal, heads))
        })
        .collect();
    let results: Vec<(Net, GradientsParams, Sums)> = parts
        .into_par_iter()
        .map(|(copy, part)| {
            let (g, s) = with_bf16_convolutions(bf16, || pass(&copy, part, scales, dev));
            (copy, g, s)
        })
        .collect();
    // The running statistics move once, towards the mean of the micro-batches' own.
    let copies: Vec<Vec<&BatchNorm>> = results.iter().map(|r| r.0.batch_norms()).collect();
    for (j, bn) in net.batch_norms().into_iter().enumerate() {
        // Plain tensors (`valid`), averaged, and wrapped for the autodiff device again.
        let stats = |f: fn(&BatchNorm) -> Tensor<1>| {
            let all: Vec<Tensor<1>> = copies.iter().map(|c| f(c[j])).collect();
            Tensor::from_inner(Tensor::stack::<2>(all, 0).mean_dim(0).reshape([bn.gamma.dims()[0]]))
        };
        bn.running_mean.update(stats(|b| b.valid().running_mean.value()));
        bn.running_var.update(stats(|b| b.valid().running_var.value()));
    }
    drop(copies);
    let mut acc: Option<(GradientsParams, Sums)> = None;
    for (_, g, part) in results {
        acc = Some(match acc {
            None => (g, part),
            Some((mut grads, sums)) => {
                net.visit(&mut AddGrads { acc: &mut grads, other: g });
                let mut part = part.into_iter();
                let sums = sums.map(|a| a + part.next().expect("as many sums in every part"));
                (grads, sums)
            }
        });
    }
    acc.expect("a non-empty batch has at least one micro-batch")
}

/// What a step reports, as one tensor read back in one transfer: the policy and value losses
/// (means over the full searches and over the batch), the squared gradient and weight norms,
/// the mean policy entropy, the value accuracy, and the auxiliary losses (means over the
/// samples carrying each target, `aux_counts`: the opponent reply, short-term value, moves
/// left, and the soft policy's full searches). Computed before the optimizer step.
fn step_report(
    net: &Net,
    grads: &GradientsParams,
    sums: Sums,
    n: usize,
    full_searches: usize,
    aux_counts: [usize; 4],
    inner: &Device,
) -> Tensor<1> {
    let [
        policy_sum,
        value_sum,
        entropy_sum,
        hits_sum,
        opponent_sum,
        short_sum,
        moves_sum,
        soft_sum,
    ] = sums;
    let mut grad_squares = GradSquares { grads, sums: Vec::new() };
    net.visit(&mut grad_squares);
    let mut weight_squares = WeightSquares(Vec::new());
    net.visit(&mut weight_squares);
    let zero = || Tensor::<1>::zeros([1], inner);
    let sum = |v: Vec<Tensor<1>>| if v.is_empty() { zero() } else { Tensor::cat(v, 0).sum() };
    let per = |k: usize| k.max(1) as f32;
    Tensor::cat(
        vec![
            policy_sum.div_scalar(per(full_searches)),
            value_sum.div_scalar(n as f32),
            sum(grad_squares.sums),
            sum(weight_squares.0),
            entropy_sum.div_scalar(n as f32),
            hits_sum.div_scalar(n as f32),
            opponent_sum.div_scalar(per(aux_counts[0])),
            short_sum.div_scalar(per(aux_counts[1])),
            moves_sum.div_scalar(per(aux_counts[2])),
            soft_sum.div_scalar(per(aux_counts[3])),
        ],
        0,
    )
}

/// `device`, made an autodiff device if it is not one.
fn autodiff(device: &Device) -> Device {
    if device.is_autodiff() { device.clone() } else { device.clone().autodiff() }
}
