//! Inference: the network with batch normalisation folded into its convolutions, and the
//! search's [`Evaluator`] over it.
//!
//! [`InferenceNet::from_net`] turns every convolution + batch normalisation (running statistics)
//! into one convolution with a bias: `w' = w · γ / √(σ² + ε)`, `b' = β − μ · γ / √(σ² + ε)`. The
//! folded net computes what [`Net::forward`] computes in inference mode (up to rounding), with
//! fewer passes over the activations, and lives on a plain (non-autodiff) device.
//!
//! Its activations are channels-last (`[B · 90, C]`), and each 3 × 3 convolution is one matrix
//! product of the im2col rows (`[B · 90, 9 · C]`, built by one strided copy of the zero-padded
//! board) with the folded weights (`[9 · C, C']`), which keeps the backend on its fastest
//! kernel (a large GEMM) and the weights pre-arranged. On the CPU backend a large batch runs in
//! chunks of [`CPU_CHUNK`] positions, in parallel, so that each chunk's activations stay in
//! cache.
//!
//! [`NnEvaluator`] encodes a batch of games straight into the buffer that becomes the input
//! tensor (moved, not copied), runs one forward pass, and reads the logits of each request's
//! legal moves only: the prior is the softmax over those (zero elsewhere, summing to 1), and the
//! value is `P(win) − P(loss)` from the WDL softmax.

use burn::module::Module;
use burn::tensor::activation::{relu, sigmoid};
use burn::tensor::ops::PadMode;
use burn::tensor::{Device, Tensor, TensorData};
use rayon::prelude::*;
use xiangqi::env::{PLANE_FILES, PLANE_RANKS, PLANE_SIZE};
use xiangqi_search::{Encoding, EvalBuffer, EvalRequest, Evaluator, GameEnv};

use crate::config::NetConfig;
use crate::error::NnError;
use crate::model::{ConvBn, Net, NetOutput, WDL};

/// Reads a float tensor back to the host.
pub(crate) fn to_vec<const D: usize>(t: Tensor<D>) -> Result<Vec<f32>, NnError> {
    t.try_into_vec_as::<f32>().map_err(|e| NnError::Read(e.to_string()))
}

/// Host copy of a convolution with its batch normalisation folded in.
struct HostConv {
    /// `[out, in, k, k]`, row-major.
    weight: Vec<f32>,
    /// `[out]`.
    bias: Vec<f32>,
    /// `[out, in, k, k]`.
    shape: [usize; 4],
}

impl HostConv {
    fn fold(cb: &ConvBn) -> Result<HostConv, NnError> {
        let shape = cb.conv.weight.val().dims();
        let mut weight = to_vec(cb.conv.weight.val())?;
        let conv_bias = match &cb.conv.bias {
            Some(b) => to_vec(b.val())?,
            None => vec![0.0; shape[0]],
        };
        let gamma = to_vec(cb.bn.gamma.val())?;
        let beta = to_vec(cb.bn.beta.val())?;
        let mean = to_vec(cb.bn.running_mean.value())?;
        let var = to_vec(cb.bn.running_var.value())?;
        let per_out = shape[1] * shape[2] * shape[3];
        let mut bias = Vec::with_capacity(shape[0]);
        for (o, w) in weight.chunks_exact_mut(per_out).enumerate() {
            let scale = f64::from(gamma[o]) / (f64::from(var[o]) + cb.bn.epsilon).sqrt();
            for x in w.iter_mut() {
                *x = (f64::from(*x) * scale) as f32;
            }
            let b = f64::from(beta[o]) + (f64::from(conv_bias[o]) - f64::from(mean[o])) * scale;
            bias.push(b as f32);
        }
        Ok(HostConv { weight, bias, shape })
    }

    /// Stacks the output channels of `self` and `other` (same input and kernel).
    fn concat(mut self, other: HostConv) -> HostConv {
        debug_assert_eq!(self.shape[1..], other.shape[1..]);
        self.weight.extend_from_slice(&other.weight);
        self.bias.extend_from_slice(&other.bias);
        self.shape[0] += other.shape[0];
        self
    }

    /// The weights as a `[k · k · in, out]` matrix whose rows follow the order of a
    /// channels-last im2col row, `(kh, kw, in)`.
    fn to_matmul(&self, device: &Device) -> MatConv {
        let [out, inp, kh, kw] = self.shape;
        let rows = inp * kh * kw;
        let mut m = vec![0.0; rows * out];
        for o in 0..out {
            for c in 0..inp {
                for y in 0..kh {
                    for x in 0..kw {
                        let row = (y * kw + x) * inp + c;
                        m[row * out + o] = self.weight[((o * inp + c) * kh + y) * kw + x];
                    }
                }
            }
        }
        MatConv {
            weight: Tensor::from_data(TensorData::new(m, [rows, out]), device),
            bias: Tensor::from_data(TensorData::new(self.bias.clone(), [1, out]), device),
            kernel: kh,
        }
    }
}

/// A folded convolution as a matrix product over im2col rows (channels-last activations).
#[derive(Debug, Clone)]
struct MatConv {
    /// `[k · k · in, out]`.
    weight: Tensor<2>,
    /// `[1, out]`.
    bias: Tensor<2>,
    /// Kernel size (1 or 3).
    kernel: usize,
}

impl MatConv {
    /// # Shapes
    /// `x`: `[n, 10, 9, in]` (channels last) → `[n · 90, out]`.
    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let [n, h, w, c] = x.dims();
        let cols = if self.kernel == 1 {
            x.reshape([n * h * w, c])
        } else {
            // im2col: one row of (kh, kw, c) per board point, from the zero-padded board.
            let padded = x.pad([(1, 1), (1, 1), (0, 0)], PadMode::Constant(0.0));
            let windows: Tensor<6> = padded.unfold::<5, _>(1, 3, 1).unfold::<6, _>(2, 3, 1);
            windows.permute([0, 1, 2, 4, 5, 3]).reshape([n * h * w, 9 * c])
        };
        cols.matmul(self.weight.clone()) + self.bias.clone()
    }
}

/// A linear layer's weights on the device (`[in, out]` and `[1, out]`).
#[derive(Debug, Clone)]
struct Dense {
    weight: Tensor<2>,
    bias: Tensor<2>,
}

impl Dense {
    /// From a linear layer; with `board_channels = Some(c)`, a layer over flattened
    /// channels-first `[c, 90]` features whose rows are reordered for channels-last `[90, c]`
    /// features.
    fn from_linear(
        l: &burn::nn::Linear,
        board_channels: Option<usize>,
        device: &Device,
    ) -> Result<Dense, NnError> {
        let [inputs, outputs] = l.weight.val().dims();
        let mut weight = to_vec(l.weight.val())?;
        if let Some(c) = board_channels {
            let original = weight.clone();
            for ch in 0..c {
                for s in 0..PLANE_SIZE {
                    let from = (ch * PLANE_SIZE + s) * outputs;
                    let to = (s * c + ch) * outputs;
                    weight[to..to + outputs].copy_from_slice(&original[from..from + outputs]);
                }
            }
        }
        let bias = match &l.bias {
            Some(b) => to_vec(b.val())?,
            None => vec![0.0; outputs],
        };
        Ok(Dense {
            weight: Tensor::from_data(TensorData::new(weight, [inputs, outputs]), device),
            bias: Tensor::from_data(TensorData::new(bias, [1, outputs]), device),
        })
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        x.matmul(self.weight.clone()) + self.bias.clone()
    }
}

#[derive(Debug, Clone)]
struct FoldedBlock {
    /// The first convolution; with global pooling its outputs are the block's `filters`
    /// channels followed by the pooled channels.
    conv1: MatConv,
    conv2: MatConv,
    /// Global pooling: pooled channel count and the linear layer of the pooled features.
    pool: Option<(usize, Dense)>,
    /// Squeeze-excitation: its two linear layers.
    se: Option<(Dense, Dense)>,
}

/// Batches larger than this run through the CPU backend in chunks of this size, in parallel on
/// the rayon pool: the activations and im2col rows of a chunk stay in cache, and the chunks'
/// single-threaded steps overlap. (Measured on 2 cores for the 6 × 64 net: chunks of 8–16
/// beat 32 by about 10 % and one pass over 256 positions by about 40 %.)
pub const CPU_CHUNK: usize = 8;

/// The network folded for inference (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct InferenceNet {
    input: MatConv,
    tower: Vec<FoldedBlock>,
    policy_conv: MatConv,
    value_conv: MatConv,
    policy_fc: Dense,
    value_fc1: Dense,
    value_fc2: Dense,
    config: NetConfig,
    encoding: Encoding,
    device: Device,
    chunk: usize,
}

impl InferenceNet {
    /// Folds `net` (its weights and batch-norm running statistics) and puts the result on
    /// `device`, which should be a plain device such as `Device::flex()`; an autodiff device is
    /// replaced by its plain inner device.
    ///
    /// # Errors
    /// [`NnError::Read`] if the weights cannot be read from the device they live on.
    pub fn from_net(net: &Net, device: &Device) -> Result<InferenceNet, NnError> {
        let device = if device.is_autodiff() { device.clone().inner() } else { device.clone() };
        // `valid` also applies the batch-norm statistics' pending update of the last training
        // step (burn's running state lags one update behind until synced).
        let net = &net.valid();
        let f = net.config.filters;
        let input = HostConv::fold(&net.input)?.to_matmul(&device);
        let mut tower = Vec::with_capacity(net.tower.len());
        for block in &net.tower {
            let mut conv1 = HostConv::fold(&block.conv1)?;
            let mut pool = None;
            if let Some(p) = &block.pool {
                let g = HostConv::fold(&p.conv)?;
                let channels = g.shape[0];
                conv1 = conv1.concat(g);
                pool = Some((channels, Dense::from_linear(&p.fc, None, &device)?));
            }
            debug_assert_eq!(conv1.shape[0], f + pool.as_ref().map_or(0, |p| p.0));
            let se = match &block.se {
                Some(se) => Some((
                    Dense::from_linear(&se.fc1, None, &device)?,
                    Dense::from_linear(&se.fc2, None, &device)?,
                )),
                None => None,
            };
            tower.push(FoldedBlock {
                conv1: conv1.to_matmul(&device),
                conv2: HostConv::fold(&block.conv2)?.to_matmul(&device),
                pool,
                se,
            });
        }
        let c = &net.config;
        let chunk = if device == Device::flex() { CPU_CHUNK } else { usize::MAX };
        Ok(InferenceNet {
            input,
            tower,
            policy_conv: HostConv::fold(&net.policy_conv)?.to_matmul(&device),
            value_conv: HostConv::fold(&net.value_conv)?.to_matmul(&device),
            policy_fc: Dense::from_linear(&net.policy_fc, Some(c.policy_channels), &device)?,
            value_fc1: Dense::from_linear(&net.value_fc1, Some(c.value_channels), &device)?,
            value_fc2: Dense::from_linear(&net.value_fc2, None, &device)?,
            config: net.config.clone(),
            encoding: net.encoding,
            device,
            chunk,
        })
    }

    /// The configuration of the network this was folded from.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// The game encoding of the network's input and output.
    pub fn encoding(&self) -> &Encoding {
        &self.encoding
    }

    /// The device the folded weights live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The most positions [`InferenceNet::forward`] runs through the network at once: a larger
    /// batch is split into chunks of this size ([`CPU_CHUNK`] on the CPU backend, unlimited on
    /// other devices).
    pub fn chunk_size(&self) -> usize {
        self.chunk
    }

    /// Sets [`InferenceNet::chunk_size`] (at least 1).
    #[must_use]
    pub fn with_chunk_size(mut self, chunk: usize) -> InferenceNet {
        self.chunk = chunk.max(1);
        self
    }

    /// Policy and WDL logits, as [`Net::forward`] computes them in inference mode.
    ///
    /// # Shapes
    /// * `planes`: `[B, PLANES, 10, 9]` (16 planes for both games)
    /// * output `policy`: `[B, POLICY_SIZE]` (logits; 2166 for xiangqi, 2451 for janggi: the
    ///   game's [`xiangqi_search::Encoding`])
    /// * output `wdl`: `[B, 3]` (logits of win, draw, loss for the side to move)
    pub fn forward(&self, planes: Tensor<4>) -> NetOutput {
        let [b, c, h, w] = planes.dims();
        debug_assert_eq!([c, h, w], [self.encoding.planes, PLANE_RANKS, PLANE_FILES]);
        if b <= self.chunk {
            return self.forward_chunk(planes);
        }
        let starts: Vec<usize> = (0..b).step_by(self.chunk).collect();
        // Chunks in parallel: each runs mostly on one thread, so the backend's single-threaded
        // copies of one chunk overlap the matrix products of another.
        let (policy, wdl): (Vec<_>, Vec<_>) = starts
            .into_par_iter()
            .map(|start| {
                let out =
                    self.forward_chunk(planes.clone().narrow(0, start, self.chunk.min(b - start)));
                (out.policy, out.wdl)
            })
            .unzip();
        NetOutput { policy: Tensor::cat(policy, 0), wdl: Tensor::cat(wdl, 0) }
    }

    /// [`InferenceNet::forward`] on one chunk. Activations are channels-last `[n · 90, c]`.
    fn forward_chunk(&self, planes: Tensor<4>) -> NetOutput {
        let n = planes.dims()[0];
        let f = self.config.filters;
        let board = |x: Tensor<2>| {
            let c = x.dims()[1];
            x.reshape([n, PLANE_RANKS, PLANE_FILES, c])
        };
        // Channels-last planes (one small copy), then the same im2col as every layer.
        let mut x = relu(self.input.forward(planes.permute([0, 2, 3, 1])));
        for block in &self.tower {
            let y = relu(block.conv1.forward(board(x.clone())));
            let y = match &block.pool {
                Some((g, fc)) => {
                    let all = y.reshape([n, PLANE_SIZE, f + g]);
                    let pooled = all.clone().narrow(2, f, *g);
                    let features =
                        Tensor::cat(vec![pooled.clone().mean_dim(1), pooled.max_dim(1)], 2)
                            .reshape([n, 2 * g]);
                    let bias = fc.forward(features).reshape([n, 1, f]);
                    (all.narrow(2, 0, f) + bias).reshape([n * PLANE_SIZE, f])
                }
                None => y,
            };
            let mut z = block.conv2.forward(board(y));
            if let Some((fc1, fc2)) = &block.se {
                let z3 = z.reshape([n, PLANE_SIZE, f]);
                let squeezed = z3.clone().mean_dim(1).reshape([n, f]);
                let t = fc2.forward(relu(fc1.forward(squeezed)));
                let gate = sigmoid(t.clone().narrow(1, 0, f)).reshape([n, 1, f]);
                z = (z3 * gate + t.narrow(1, f, f).reshape([n, 1, f])).reshape([n * PLANE_SIZE, f]);
            }
            x = relu(x + z);
        }
        let pc = self.config.policy_channels;
        let vc = self.config.value_channels;
        let p = relu(self.policy_conv.forward(board(x.clone()))).reshape([n, PLANE_SIZE * pc]);
        let v = relu(self.value_conv.forward(board(x))).reshape([n, PLANE_SIZE * vc]);
        NetOutput {
            policy: self.policy_fc.forward(p),
            wdl: self.value_fc2.forward(relu(self.value_fc1.forward(v))),
        }
    }

    /// Runs the network on planes laid end to end in a host buffer (moved into the input
    /// tensor, not copied) and reads the logits back.
    ///
    /// # Shapes
    /// `planes`: `[B, PLANES, 10, 9]` flattened, `B · INPUT_SIZE` floats (`INPUT_SIZE` = the
    /// encoding's planes · 90).
    ///
    /// # Errors
    /// [`NnError::Batch`] if the length is not a multiple of `INPUT_SIZE`;
    /// [`NnError::Read`] if the device fails.
    pub fn predict(&self, planes: Vec<f32>) -> Result<Logits, NnError> {
        let input_size = self.encoding.input_size();
        let policy_size = self.encoding.policy_size;
        if !planes.len().is_multiple_of(input_size) {
            return Err(NnError::Batch(format!(
                "{} plane floats is not a multiple of {input_size}",
                planes.len()
            )));
        }
        let batch = planes.len() / input_size;
        if batch == 0 {
            return Ok(Logits { batch, policy_size, policy: Vec::new(), wdl: Vec::new() });
        }
        let input = Tensor::from_data(
            TensorData::new(planes, [batch, self.encoding.planes, PLANE_RANKS, PLANE_FILES]),
            &self.device,
        );
        let out = self.forward(input);
        Ok(Logits { batch, policy_size, policy: to_vec(out.policy)?, wdl: to_vec(out.wdl)? })
    }
}

/// Logits of a batch, read back to the host.
#[derive(Debug, Clone, PartialEq)]
pub struct Logits {
    /// Positions in the batch.
    pub batch: usize,
    /// Policy logits per position.
    pub policy_size: usize,
    /// Policy logits.
    ///
    /// # Shapes
    /// `[batch, POLICY_SIZE]`, row-major.
    pub policy: Vec<f32>,
    /// Win/draw/loss logits for the side to move.
    ///
    /// # Shapes
    /// `[batch, 3]`, row-major.
    pub wdl: Vec<f32>,
}

impl Logits {
    /// The policy logits of position `i`.
    ///
    /// # Panics
    /// If `i >= self.batch`.
    pub fn policy(&self, i: usize) -> &[f32] {
        &self.policy[i * self.policy_size..(i + 1) * self.policy_size]
    }

    /// Win, draw and loss probabilities of position `i` (softmax of its WDL logits).
    ///
    /// # Panics
    /// If `i >= self.batch`.
    pub fn wdl_probabilities(&self, i: usize) -> [f32; 3] {
        let l = &self.wdl[i * WDL..(i + 1) * WDL];
        let m = l[0].max(l[1]).max(l[2]);
        let e = [(l[0] - m).exp(), (l[1] - m).exp(), (l[2] - m).exp()];
        let s = e[0] + e[1] + e[2];
        [e[0] / s, e[1] / s, e[2] / s]
    }
}

/// Writes into `priors` the softmax of `logits` over the policy indices of `moves` (played by
/// the side `turn`), in the order of `moves`.
///
/// # Errors
/// [`NnError::NoPolicyIndex`] for a move outside the action space (never a legal move).
pub fn legal_softmax<G: GameEnv>(
    logits: &[f32],
    moves: &[xiangqi::Move],
    turn: xiangqi::Color,
    priors: &mut [f32],
) -> Result<(), NnError> {
    debug_assert_eq!(moves.len(), priors.len());
    let mut max = f32::NEG_INFINITY;
    for (p, &m) in priors.iter_mut().zip(moves) {
        let i = G::move_to_index(m, turn).ok_or(NnError::NoPolicyIndex { mv: m.to_string() })?;
        *p = logits[i];
        max = max.max(*p);
    }
    if !max.is_finite() {
        // NaN or infinite logits: fall back to uniform (the search would too).
        priors.fill(1.0 / priors.len() as f32);
        return Ok(());
    }
    let mut sum = 0.0;
    for p in priors.iter_mut() {
        *p = (*p - max).exp();
        sum += *p;
    }
    let inv = 1.0 / sum;
    for p in priors.iter_mut() {
        *p *= inv;
    }
    Ok(())
}

/// The search's evaluator over a folded network (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct NnEvaluator {
    net: InferenceNet,
}

impl NnEvaluator {
    /// An evaluator over `net`.
    pub fn new(net: InferenceNet) -> NnEvaluator {
        NnEvaluator { net }
    }

    /// The network.
    pub fn net(&self) -> &InferenceNet {
        &self.net
    }

    /// Replaces the network (a new generation), keeping the evaluator.
    pub fn set_net(&mut self, net: InferenceNet) {
        self.net = net;
    }

    /// Encodes the requests' games into one buffer of planes, `[B, PLANES, 10, 9]`.
    fn encode<G: GameEnv>(batch: &[EvalRequest<'_, G>]) -> Vec<f32> {
        let mut planes = vec![0.0; batch.len() * G::INPUT_SIZE];
        for (r, chunk) in batch.iter().zip(planes.chunks_exact_mut(G::INPUT_SIZE)) {
            r.game.encode_planes(chunk);
        }
        planes
    }
}

/// The evaluator of any game whose encoding the network was built for.
impl<G: GameEnv> Evaluator<G> for NnEvaluator {
    type Error = NnError;

    fn evaluate(
        &mut self,
        batch: &[EvalRequest<'_, G>],
        out: &mut EvalBuffer,
    ) -> Result<(), NnError> {
        if batch.is_empty() {
            return Ok(());
        }
        let enc = self.net.encoding();
        if enc.game != G::KIND
            || enc.version != G::ENCODING_VERSION
            || enc.planes != G::PLANES
            || enc.policy_size != G::POLICY_SIZE
        {
            return Err(NnError::Batch(format!(
                "the network is for {} (encoding version {}), not {}",
                enc.game,
                enc.version,
                G::KIND
            )));
        }
        let logits = self.net.predict(Self::encode(batch))?;
        for (i, (r, (priors, value))) in batch.iter().zip(out.entries_mut()).enumerate() {
            legal_softmax::<G>(logits.policy(i), r.moves, r.game.turn(), priors)?;
            let [w, _d, l] = logits.wdl_probabilities(i);
            let v = w - l;
            *value = if v.is_nan() { 0.0 } else { v.clamp(-1.0, 1.0) };
        }
        Ok(())
    }
}
