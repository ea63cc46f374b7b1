//! The network: a residual tower over the input planes, a policy head over the action space and
//! a win/draw/loss value head.
//!
//! ```text
//! planes [B, planes, 10, 9]                           (16; 23 with `input_features`)
//!   └ conv 3×3 → BN → ReLU                               (input layer, `filters` channels)
//!   └ residual block × `blocks`:
//!       y = ReLU(BN(conv 3×3 (x)))
//!       [global pooling: y += Linear(mean ‖ max of ReLU(BN(conv 3×3 (x))))]   per channel
//!       z = BN(conv 3×3 (y))
//!       [squeeze-excitation: z = sigmoid(g) · z + b, (g, b) = MLP(mean of z)]  per channel
//!       x = ReLU(x + z)
//!   ├ policy: conv 1×1 → BN → ReLU → Linear → logits [B, 2166]
//!   └ value:  conv 1×1 → BN → ReLU → Linear → ReLU → Linear → WDL logits [B, 3]
//! ```
//!
//! Auxiliary heads, for training only ([`Net::forward_with_auxiliary`]; not folded, exported or
//! used in play), each when its `[network]` switch is set:
//!
//! ```text
//!   policy features (after the policy head's conv, BN, ReLU)
//!     ├ opponent_policy: Linear → opponent reply logits [B, POLICY_SIZE]   (the opponent's frame)
//!     └ soft_policy:     Linear → soft policy logits [B, POLICY_SIZE]
//!   value hidden layer (after value_fc1 and its ReLU)
//!     ├ short_term_value: Linear → WDL logits [B, 3]
//!     └ moves_left:       Linear → plies left / MOVES_LEFT_SCALE [B, 1]
//! ```
//!
//! The same definition runs on every burn device; on an autodiff device batch normalisation
//! uses the batch statistics (training), elsewhere its running statistics (inference). For fast
//! inference use [`crate::InferenceNet`], which folds the batch normalisation into the
//! convolutions.

use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::{relu, sigmoid};
use burn::tensor::{Device, Tensor, TensorData};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::env::{PLANE_FILES, PLANE_RANKS, PLANE_SIZE};
use xiangqi_search::{Encoding, GameEnv};

use crate::config::NetConfig;

/// Number of value outputs: win, draw, loss (from the side to move), in this order.
pub const WDL: usize = 3;

/// Plies per unit of the moves-left head's output: it predicts `plies left / MOVES_LEFT_SCALE`,
/// so that a typical game's remainder (tens to a few hundred plies) is of order 1.
pub const MOVES_LEFT_SCALE: f32 = 100.0;

/// A convolution without bias followed by batch normalisation.
#[derive(Module, Debug)]
pub struct ConvBn {
    /// The convolution (`[out, in, k, k]`, no bias).
    pub conv: Conv2d,
    /// Its batch normalisation.
    pub bn: BatchNorm,
}

impl ConvBn {
    /// A `kernel × kernel` convolution from `input` to `output` channels, padded to keep the
    /// board size.
    pub fn new(input: usize, output: usize, kernel: usize, device: &Device) -> ConvBn {
        let pad = kernel / 2;
        let conv = Conv2dConfig::new([input, output], [kernel, kernel])
            .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
            .with_bias(false)
            .init(device);
        ConvBn { conv, bn: BatchNormConfig::new(output).init(device) }
    }

    /// # Shapes
    /// `[B, in, 10, 9]` → `[B, out, 10, 9]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let weight = self.conv.weight.val();
        let y = if weight.dims()[2..] == [3, 3] {
            // The tower's convolutions: this crate's kernels on the CPU (`train_ops`).
            crate::train_ops::board_conv3x3(x, weight)
        } else {
            self.conv.forward(x)
        };
        if y.device().is_autodiff() && self.bn.training.is_enabled() {
            self.batch_norm_train(y)
        } else {
            self.bn.forward(y)
        }
    }

    /// `self.bn.forward(y)` in training mode, with this crate's kernels on the CPU
    /// (`train_ops`): normalises by the batch's statistics and moves the running statistics
    /// towards them by the layer's momentum, as burn's `BatchNorm` does.
    fn batch_norm_train(&self, y: Tensor<4>) -> Tensor<4> {
        let bn = &self.bn;
        let device = y.device();
        let (out, mean, var) =
            crate::train_ops::board_batch_norm_train(y, bn.gamma.val(), bn.beta.val(), bn.epsilon);
        let m = bn.momentum;
        let running_mean = bn.running_mean.value_sync().to_device(&device);
        let running_var = bn.running_var.value_sync().to_device(&device);
        let running_mean = running_mean.mul_scalar(1.0 - m).add(mean.detach().mul_scalar(m));
        let running_var = running_var.mul_scalar(1.0 - m).add(var.detach().mul_scalar(m));
        bn.running_mean.update(running_mean.detach());
        bn.running_var.update(running_var.detach());
        out
    }
}

/// Squeeze-excitation: a per-channel gate and bias computed from the board mean of the block's
/// output.
#[derive(Module, Debug)]
pub struct SqueezeExcitation {
    /// `filters → global_channels`.
    pub fc1: Linear,
    /// `global_channels → 2 · filters`: gate logits, then biases.
    pub fc2: Linear,
}

impl SqueezeExcitation {
    fn new(filters: usize, channels: usize, device: &Device) -> SqueezeExcitation {
        SqueezeExcitation {
            fc1: LinearConfig::new(filters, channels).init(device),
            fc2: LinearConfig::new(channels, 2 * filters).init(device),
        }
    }

    /// # Shapes
    /// `[B, F, 10, 9]` → `[B, F, 10, 9]`.
    pub fn forward(&self, z: Tensor<4>) -> Tensor<4> {
        let [b, f, _, _] = z.dims();
        let squeezed = z.clone().reshape([b, f, PLANE_SIZE]).mean_dim(2).reshape([b, f]);
        let t = self.fc2.forward(relu(self.fc1.forward(squeezed)));
        let gate = sigmoid(t.clone().narrow(1, 0, f)).reshape([b, f, 1, 1]);
        let bias = t.narrow(1, f, f).reshape([b, f, 1, 1]);
        z * gate + bias
    }
}

/// Global pooling (KataGo): extra channels pooled over the board into a per-channel bias.
#[derive(Module, Debug)]
pub struct GlobalPool {
    /// `filters → global_channels`, 3 × 3.
    pub conv: ConvBn,
    /// `2 · global_channels` (means, then maxima) `→ filters`.
    pub fc: Linear,
}

impl GlobalPool {
    fn new(filters: usize, channels: usize, device: &Device) -> GlobalPool {
        GlobalPool {
            conv: ConvBn::new(filters, channels, 3, device),
            fc: LinearConfig::new(2 * channels, filters).init(device),
        }
    }

    /// The pooled bias from the pooled channels `g` (after their BN and ReLU).
    ///
    /// # Shapes
    /// `[B, G, 10, 9]` → `[B, F, 1, 1]`.
    pub fn bias_from(&self, g: Tensor<4>) -> Tensor<4> {
        let [b, c, _, _] = g.dims();
        let g = g.reshape([b, c, PLANE_SIZE]);
        let pooled = Tensor::cat(vec![g.clone().mean_dim(2), g.max_dim(2)], 1).reshape([b, 2 * c]);
        let bias = self.fc.forward(pooled);
        let f = bias.dims()[1];
        bias.reshape([b, f, 1, 1])
    }
}

/// One residual block.
#[derive(Module, Debug)]
pub struct ResBlock {
    /// First convolution.
    pub conv1: ConvBn,
    /// Second convolution.
    pub conv2: ConvBn,
    /// Optional global-pooling branch.
    pub pool: Option<GlobalPool>,
    /// Optional squeeze-excitation.
    pub se: Option<SqueezeExcitation>,
}

impl ResBlock {
    /// # Shapes
    /// `[B, F, 10, 9]` → `[B, F, 10, 9]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let mut y = relu(self.conv1.forward(x.clone()));
        if let Some(pool) = &self.pool {
            y = y + pool.bias_from(relu(pool.conv.forward(x.clone())));
        }
        let mut z = self.conv2.forward(y);
        if let Some(se) = &self.se {
            z = se.forward(z);
        }
        relu(x + z)
    }
}

/// What the network answers for a batch of positions.
#[derive(Debug, Clone)]
pub struct NetOutput {
    /// Policy logits over the action space.
    ///
    /// # Shapes
    /// `[B, POLICY_SIZE]`.
    pub policy: Tensor<2>,
    /// Win/draw/loss logits for the side to move.
    ///
    /// # Shapes
    /// `[B, 3]`.
    pub wdl: Tensor<2>,
}

/// What the auxiliary heads answer (see the [module documentation](self)); `None` for a head
/// the network does not have.
#[derive(Debug, Clone)]
pub struct AuxiliaryOutput {
    /// Logits of the opponent's reply: the policy of the next position, whose side to move is
    /// the opponent, indexed in the opponent's frame (as the policy head indexes it when the
    /// opponent is to move).
    ///
    /// # Shapes
    /// `[B, POLICY_SIZE]`.
    pub opponent_policy: Option<Tensor<2>>,
    /// Logits of the soft policy: the policy target softened to `π^(1/4)` (KataGo's soft
    /// policy head), in the side to move's frame as the policy head's.
    ///
    /// # Shapes
    /// `[B, POLICY_SIZE]`.
    pub soft_policy: Option<Tensor<2>>,
    /// WDL logits of the short-term value, for the side to move.
    ///
    /// # Shapes
    /// `[B, 3]`.
    pub short_term_value: Option<Tensor<2>>,
    /// Plies left until the game's end, divided by [`MOVES_LEFT_SCALE`].
    ///
    /// # Shapes
    /// `[B, 1]`.
    pub moves_left: Option<Tensor<2>>,
}

/// The trainable network (see the [module documentation](self) for its layout).
#[derive(Module, Debug)]
pub struct Net {
    /// Input convolution.
    pub input: ConvBn,
    /// Residual blocks.
    pub tower: Vec<ResBlock>,
    /// Policy head convolution (1 × 1).
    pub policy_conv: ConvBn,
    /// Policy head linear layer, `policy_channels · 90 → POLICY_SIZE`.
    pub policy_fc: Linear,
    /// Value head convolution (1 × 1).
    pub value_conv: ConvBn,
    /// Value head hidden layer, `value_channels · 90 → value_hidden`.
    pub value_fc1: Linear,
    /// Value head output layer, `value_hidden → 3`.
    pub value_fc2: Linear,
    /// Opponent-reply head, `policy_channels · 90 → POLICY_SIZE` (`network.opponent_policy`).
    pub opponent_policy_fc: Option<Linear>,
    /// Short-term value head, `value_hidden → 3` (`network.short_term_value`).
    pub short_term_fc: Option<Linear>,
    /// Moves-left head, `value_hidden → 1` (`network.moves_left`).
    pub moves_left_fc: Option<Linear>,
    /// Soft-policy head, `policy_channels · 90 → POLICY_SIZE` (`network.soft_policy`).
    pub soft_policy_fc: Option<Linear>,
    /// The configuration the network was built from.
    #[module(skip)]
    pub config: NetConfig,
    /// The game encoding its shapes come from (input planes, policy size).
    #[module(skip)]
    pub encoding: Encoding,
}

/// Uniform `±1 / √fan_in` values (burn's default initialisation of convolutions and linear
/// layers) drawn from `rng`.
fn uniform_param<const D: usize>(
    p: &mut Param<Tensor<D>>,
    fan_in: usize,
    rng: &mut ChaCha8Rng,
    device: &Device,
) {
    let dims = p.val().dims();
    let bound = 1.0 / (fan_in as f64).sqrt();
    let values: Vec<f32> = (0..dims.iter().product::<usize>())
        .map(|_| ((rng.random::<f64>() * 2.0 - 1.0) * bound) as f32)
        .collect();
    // A trainable parameter (as initialisation makes it), with the same id.
    let mut fresh = Param::from_tensor(Tensor::from_data(TensorData::new(values, dims), device));
    fresh.id = p.id;
    *p = fresh;
}

fn reinit_conv(c: &mut Conv2d, rng: &mut ChaCha8Rng, device: &Device) {
    let [_, inputs, kh, kw] = c.weight.val().dims();
    uniform_param(&mut c.weight, inputs * kh * kw, rng, device);
    if let Some(b) = &mut c.bias {
        uniform_param(b, inputs * kh * kw, rng, device);
    }
}

/// The encoding of a net of game `G` with `config`'s inputs.
fn net_encoding<G: GameEnv>(config: &NetConfig) -> Encoding {
    Encoding::of::<G>()
        .with_features(config.input_features)
        .unwrap_or_else(|e| panic!("Net::new: {e}"))
}

fn reinit_linear(l: &mut Linear, rng: &mut ChaCha8Rng, device: &Device) {
    let [inputs, _] = l.weight.val().dims();
    uniform_param(&mut l.weight, inputs, rng, device);
    if let Some(b) = &mut l.bias {
        uniform_param(b, inputs, rng, device);
    }
}

impl Net {
    /// A freshly initialised network on `device`, its weights drawn from burn's device
    /// generator (`device.seed(..)` seeds it, but it is shared by the whole process: use
    /// [`Net::seeded`] for weights that depend on a seed alone).
    /// `G` is the game (`Net::new::<xiangqi::Game>(..)`): its [`Encoding`] sizes the input
    /// convolution and the policy head. The configuration should be valid
    /// ([`NetConfig::validate`]).
    ///
    /// # Panics
    /// If `config.input_features` is set for a game without feature planes (the loop's config
    /// refuses that before any net is built).
    pub fn new<G: GameEnv>(config: &NetConfig, device: &Device) -> Net {
        Net::for_encoding(config, net_encoding::<G>(config), device)
    }

    /// [`Net::new`] for a game's encoding given as a value: `encoding.planes` input planes and
    /// `encoding.policy_size` policy logits. The encoding decides the input planes; it should
    /// take the feature planes exactly when `config.input_features` is set
    /// ([`Encoding::for_net`]).
    pub fn for_encoding(config: &NetConfig, encoding: Encoding, device: &Device) -> Net {
        let f = config.filters;
        let tower = (0..config.blocks)
            .map(|i| {
                let global = config.block_is_global(i);
                let kind = config.global;
                ResBlock {
                    conv1: ConvBn::new(f, f, 3, device),
                    conv2: ConvBn::new(f, f, 3, device),
                    pool: (global && kind == crate::GlobalKind::GlobalPooling)
                        .then(|| GlobalPool::new(f, config.global_channels, device)),
                    se: (global && kind == crate::GlobalKind::SqueezeExcitation)
                        .then(|| SqueezeExcitation::new(f, config.global_channels, device)),
                }
            })
            .collect();
        Net {
            input: ConvBn::new(encoding.planes, f, 3, device),
            tower,
            policy_conv: ConvBn::new(f, config.policy_channels, 1, device),
            policy_fc: LinearConfig::new(config.policy_channels * PLANE_SIZE, encoding.policy_size)
                .init(device),
            value_conv: ConvBn::new(f, config.value_channels, 1, device),
            value_fc1: LinearConfig::new(config.value_channels * PLANE_SIZE, config.value_hidden)
                .init(device),
            value_fc2: LinearConfig::new(config.value_hidden, WDL).init(device),
            opponent_policy_fc: config.opponent_policy.then(|| {
                LinearConfig::new(config.policy_channels * PLANE_SIZE, encoding.policy_size)
                    .init(device)
            }),
            short_term_fc: config
                .short_term_value
                .then(|| LinearConfig::new(config.value_hidden, WDL).init(device)),
            moves_left_fc: config
                .moves_left
                .then(|| LinearConfig::new(config.value_hidden, 1).init(device)),
            soft_policy_fc: config.soft_policy.then(|| {
                LinearConfig::new(config.policy_channels * PLANE_SIZE, encoding.policy_size)
                    .init(device)
            }),
            config: config.clone(),
            encoding,
        }
    }

    /// A freshly initialised network whose weights depend on `seed` alone (not on other
    /// threads drawing from burn's process-wide generator): every convolution and linear layer
    /// uniform in `±1 / √fan_in`, as burn initialises them, from a ChaCha8 generator; batch
    /// normalisation starts as the identity.
    /// `G` is the game, as in [`Net::new`].
    ///
    /// # Panics
    /// As [`Net::new`].
    pub fn seeded<G: GameEnv>(config: &NetConfig, device: &Device, seed: u64) -> Net {
        Net::seeded_for(config, net_encoding::<G>(config), device, seed)
    }

    /// [`Net::seeded`] for a game's encoding.
    pub fn seeded_for(config: &NetConfig, encoding: Encoding, device: &Device, seed: u64) -> Net {
        let mut net = Net::for_encoding(config, encoding, device);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let rng = &mut rng;
        reinit_conv(&mut net.input.conv, rng, device);
        for b in &mut net.tower {
            reinit_conv(&mut b.conv1.conv, rng, device);
            reinit_conv(&mut b.conv2.conv, rng, device);
            if let Some(p) = &mut b.pool {
                reinit_conv(&mut p.conv.conv, rng, device);
                reinit_linear(&mut p.fc, rng, device);
            }
            if let Some(se) = &mut b.se {
                reinit_linear(&mut se.fc1, rng, device);
                reinit_linear(&mut se.fc2, rng, device);
            }
        }
        reinit_conv(&mut net.policy_conv.conv, rng, device);
        reinit_linear(&mut net.policy_fc, rng, device);
        reinit_conv(&mut net.value_conv.conv, rng, device);
        reinit_linear(&mut net.value_fc1, rng, device);
        reinit_linear(&mut net.value_fc2, rng, device);
        // After the main heads, so that a net with auxiliary heads has the same main weights
        // (and the soft-policy head last, so that it leaves the other heads' as they were).
        for l in [
            &mut net.opponent_policy_fc,
            &mut net.short_term_fc,
            &mut net.moves_left_fc,
            &mut net.soft_policy_fc,
        ]
        .into_iter()
        .flatten()
        {
            reinit_linear(l, rng, device);
        }
        net
    }

    /// The network's configuration.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// The same network without its auxiliary heads (the one that plays, as exported), its
    /// configuration's head switches cleared.
    pub fn without_auxiliary_heads(&self) -> Net {
        let mut net = self.clone();
        net.opponent_policy_fc = None;
        net.short_term_fc = None;
        net.moves_left_fc = None;
        net.soft_policy_fc = None;
        net.config = self.config.without_auxiliary_heads();
        net
    }

    /// Every batch normalisation of the network, in a fixed order.
    pub fn batch_norms(&self) -> Vec<&BatchNorm> {
        let mut out = vec![&self.input.bn];
        for b in &self.tower {
            out.push(&b.conv1.bn);
            if let Some(p) = &b.pool {
                out.push(&p.conv.bn);
            }
            out.push(&b.conv2.bn);
        }
        out.push(&self.policy_conv.bn);
        out.push(&self.value_conv.bn);
        out
    }

    /// Policy and WDL logits for a batch of encoded positions
    /// ([`xiangqi_search::NetView::encode_planes`]).
    ///
    /// # Shapes
    /// * `planes`: `[B, planes, 10, 9]` (the encoding's planes: 16 for both games, 23 for a
    ///   xiangqi net with `input_features`)
    /// * output `policy`: `[B, POLICY_SIZE]` (logits; 2166 for xiangqi, 2451 for janggi: the
    ///   game's [`xiangqi_search::Encoding`])
    /// * output `wdl`: `[B, 3]` (logits of win, draw, loss for the side to move)
    pub fn forward(&self, planes: Tensor<4>) -> NetOutput {
        self.heads(planes, false).0
    }

    /// [`Net::forward`] and the auxiliary heads (those the network has; see
    /// [`AuxiliaryOutput`]).
    ///
    /// # Shapes
    /// As [`Net::forward`]; the auxiliary outputs as [`AuxiliaryOutput`] says.
    pub fn forward_with_auxiliary(&self, planes: Tensor<4>) -> (NetOutput, AuxiliaryOutput) {
        self.heads(planes, true)
    }

    fn heads(&self, planes: Tensor<4>, auxiliary: bool) -> (NetOutput, AuxiliaryOutput) {
        let [b, c, h, w] = planes.dims();
        debug_assert_eq!([c, h, w], [self.encoding.planes, PLANE_RANKS, PLANE_FILES]);
        let mut x = relu(self.input.forward(planes));
        for block in &self.tower {
            x = block.forward(x);
        }
        let p = relu(self.policy_conv.forward(x.clone()));
        let p = p.reshape([b, self.config.policy_channels * PLANE_SIZE]);
        let v = relu(self.value_conv.forward(x));
        let v = v.reshape([b, self.config.value_channels * PLANE_SIZE]);
        let hidden = relu(self.value_fc1.forward(v));
        let mut aux = AuxiliaryOutput {
            opponent_policy: None,
            soft_policy: None,
            short_term_value: None,
            moves_left: None,
        };
        if auxiliary {
            aux.opponent_policy = self.opponent_policy_fc.as_ref().map(|l| l.forward(p.clone()));
            aux.soft_policy = self.soft_policy_fc.as_ref().map(|l| l.forward(p.clone()));
            aux.short_term_value = self.short_term_fc.as_ref().map(|l| l.forward(hidden.clone()));
            aux.moves_left = self.moves_left_fc.as_ref().map(|l| l.forward(hidden.clone()));
        }
        let policy = self.policy_fc.forward(p);
        let wdl = self.value_fc2.forward(hidden);
        (NetOutput { policy, wdl }, aux)
    }
}

#[cfg(test)]
mod tests {
    use xiangqi::env::{INPUT_SIZE, PLANES, mirror_index, mirror_planes, mirror_policy};

    use super::*;
    use crate::GlobalKind;
    use crate::infer::InferenceNet;

    /// In training mode `ConvBn` (this crate's batch norm on the CPU) gives burn's `BatchNorm`'s
    /// output and moves the running statistics as it does, over two steps.
    #[test]
    fn conv_bn_trains_its_batch_norm_as_burn_does() {
        use burn::tensor::Distribution;
        let device = crate::cpu_device().autodiff();
        let ours = ConvBn::new(5, 7, 3, &device);
        // Its own batch norm (a clone would share the running statistics' state), the same
        // convolution.
        let mut burns = ConvBn::new(5, 7, 3, &device);
        burns.conv = ours.conv.clone();
        for step in 0..2 {
            let x = Tensor::<4>::random([6, 5, 10, 9], Distribution::Normal(1.0, 2.0), &device);
            let a = ours.forward(x.clone());
            let b = burns.bn.forward(burns.conv.forward(x));
            let pairs = [
                ("output", a.into_data(), b.into_data()),
                (
                    "running mean",
                    ours.bn.running_mean.value().into_data(),
                    burns.bn.running_mean.value().into_data(),
                ),
                (
                    "running variance",
                    ours.bn.running_var.value().into_data(),
                    burns.bn.running_var.value().into_data(),
                ),
            ];
            for (what, a, b) in pairs {
                let (a, b) =
                    (a.try_to_vec::<f32>().expect("f32"), b.try_to_vec::<f32>().expect("f32"));
                assert_eq!(a.len(), b.len());
                for (k, (a, b)) in a.iter().zip(&b).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                        "step {step}, {what}[{k}]: {a} vs {b}"
                    );
                }
            }
        }
        // The statistics did move (from mean 0, variance 1).
        let mean = ours.bn.running_mean.value().into_data().try_to_vec::<f32>().expect("f32");
        assert!(mean.iter().any(|m| m.abs() > 1e-3), "{mean:?}");
    }

    fn host<const D: usize>(t: Tensor<D>) -> (Vec<f32>, [usize; D]) {
        let dims = t.dims();
        (t.try_into_vec_as::<f32>().unwrap(), dims)
    }

    fn replace<const D: usize>(p: &mut Param<Tensor<D>>, v: Vec<f32>, dims: [usize; D]) {
        let device = p.val().device();
        *p = Param::initialized(p.id, Tensor::from_data(TensorData::new(v, dims), &device));
    }

    /// Makes every kernel symmetric under the left–right mirror of its width.
    fn symmetrize_conv(c: &mut ConvBn) {
        let (w, [o, i, kh, kw]) = host(c.conv.weight.val());
        let mut s = w.clone();
        for idx in 0..o * i * kh {
            for x in 0..kw {
                s[idx * kw + x] = 0.5 * (w[idx * kw + x] + w[idx * kw + kw - 1 - x]);
            }
        }
        replace(&mut c.conv.weight, s, [o, i, kh, kw]);
    }

    /// Makes a linear layer over flattened `[C, 10, 9]` features mirror-equivariant: input
    /// `(c, r, f)` ↔ `(c, r, 8 − f)`, output `j` ↔ `mirror(j)`.
    fn symmetrize_flat_linear(l: &mut Linear, mirror_out: impl Fn(usize) -> usize) {
        let (w, [inputs, outputs]) = host(l.weight.val());
        let flip = |k: usize| k - k % PLANE_FILES + (PLANE_FILES - 1 - k % PLANE_FILES);
        let mut s = w.clone();
        for k in 0..inputs {
            for j in 0..outputs {
                s[k * outputs + j] =
                    0.5 * (w[k * outputs + j] + w[flip(k) * outputs + mirror_out(j)]);
            }
        }
        replace(&mut l.weight, s, [inputs, outputs]);
        let bias = l.bias.as_mut().unwrap();
        let (b, dims) = host(bias.val());
        let s = (0..outputs).map(|j| 0.5 * (b[j] + b[mirror_out(j)])).collect();
        replace(bias, s, dims);
    }

    fn logits(out: NetOutput) -> (Vec<f32>, Vec<f32>) {
        (host(out.policy).0, host(out.wdl).0)
    }

    #[test]
    fn seeded_weights_depend_on_the_seed_alone() {
        let device = Device::flex();
        let config =
            NetConfig { global: GlobalKind::GlobalPooling, global_every: 1, ..NetConfig::tiny() };
        let weights = |seed| {
            // Draws from burn's shared generator in between must not matter.
            device.seed(seed + 100);
            let _ = Net::new::<xiangqi::Game>(&config, &device);
            let net = Net::seeded::<xiangqi::Game>(&config, &device, seed);
            let mut all = host(net.input.conv.weight.val()).0;
            all.extend(host(net.tower[0].pool.as_ref().unwrap().fc.weight.val()).0);
            all.extend(host(net.value_fc2.bias.as_ref().unwrap().val()).0);
            all
        };
        let a = weights(1);
        assert_eq!(a, weights(1));
        assert_ne!(a, weights(2));
        let bound = 1.0 / ((PLANES * 9) as f32).sqrt();
        assert!(a[..8 * PLANES * 9].iter().all(|w| w.abs() <= bound));
    }

    #[test]
    fn a_mirror_symmetric_net_gives_mirrored_outputs_for_mirrored_inputs() {
        let device = Device::flex();
        device.seed(5);
        let config = NetConfig {
            blocks: 2,
            filters: 8,
            global: GlobalKind::SqueezeExcitation,
            global_every: 1,
            global_channels: 4,
            ..NetConfig::tiny()
        };
        for global in [GlobalKind::None, GlobalKind::SqueezeExcitation, GlobalKind::GlobalPooling] {
            // Seeded: weights drawn from the device's shared generator depend on the tests
            // running beside this one, and some draws (seed 7 here, too) leave the
            // squeeze-excitation net with every activation dead: an exactly symmetric output,
            // which the guard below rejects as a useless fixture.
            let mut net =
                Net::seeded::<xiangqi::Game>(&NetConfig { global, ..config.clone() }, &device, 3);
            symmetrize_conv(&mut net.input);
            for b in &mut net.tower {
                symmetrize_conv(&mut b.conv1);
                symmetrize_conv(&mut b.conv2);
                if let Some(p) = &mut b.pool {
                    symmetrize_conv(&mut p.conv);
                }
            }
            symmetrize_flat_linear(&mut net.policy_fc, mirror_index);
            symmetrize_flat_linear(&mut net.value_fc1, |j| j);
            let net = net.valid();

            // Two positions with asymmetric pieces and a non-zero clock.
            let mut planes = vec![0.0f32; 2 * INPUT_SIZE];
            let mut state = 12345u64;
            for x in planes.iter_mut() {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                *x = if (state >> 40) % 10 < 3 { 1.0 } else { 0.0 };
            }
            let mut mirrored = planes.clone();
            mirror_planes(&mut mirrored);
            let input = |v: Vec<f32>| {
                Tensor::<4>::from_data(
                    TensorData::new(v, [2, PLANES, PLANE_RANKS, PLANE_FILES]),
                    &device,
                )
            };
            let folded = InferenceNet::from_net(&net, &device).unwrap();
            for (name, forward) in [
                ("net", &(|x| net.forward(x)) as &dyn Fn(Tensor<4>) -> NetOutput),
                ("folded", &|x| folded.forward(x)),
            ] {
                let (p, w) = logits(forward(input(planes.clone())));
                let (pm, wm) = logits(forward(input(mirrored.clone())));
                let mut expected = vec![0.0; p.len()];
                mirror_policy(&p, &mut expected);
                let diff = pm.iter().zip(&expected).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
                assert!(diff < 1e-4, "{global:?} {name}: policy differs by {diff}");
                // 1e-4 as for the policy: the CPU backend's parallel sums may split differently
                // for the two inputs (under load a 1e-5 bound failed once).
                let diff = wm.iter().zip(&w).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
                assert!(diff < 1e-4, "{global:?} {name}: wdl differs by {diff}");
                // And the policy is not trivially symmetric.
                let asym = p.iter().zip(&expected).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
                assert!(asym > 1e-3, "{global:?} {name}: the test input is too symmetric ({asym})");
            }
        }
    }
}
