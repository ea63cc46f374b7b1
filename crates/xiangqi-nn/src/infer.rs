//! Inference: the network with batch normalisation folded into its convolutions, and the
//! search's [`Evaluator`] over it.
//!
//! [`InferenceNet::from_net`] turns every convolution + batch normalisation (running statistics)
//! into one convolution with a bias: `w' = w · γ / √(σ² + ε)`, `b' = β − μ · γ / √(σ² + ε)`. The
//! folded net computes what [`Net::forward`] computes in inference mode (up to rounding), with
//! fewer passes over the activations.
//!
//! It computes on one of two paths ([`InferencePath`]):
//! * **Kernels** (the default on the CPU device): this crate's CPU kernels over host copies of
//!   the folded weights ([`crate::kernels`]: channels-last activations on a zero-bordered
//!   board, each layer one register-tiled matrix product with its bias, residual and ReLU
//!   fused, AVX-512 where the CPU has it, no allocation per call once the buffers are grown).
//! * **Backend** (the default on every other device): burn's tensor operations on the net's
//!   device. Activations are channels-last (`[B · 90, C]`), and each 3 × 3 convolution is one
//!   matrix product of the im2col rows (`[B · 90, 9 · C]`) with the folded weights
//!   (`[9 · C, C']`).
//!
//! On the CPU a large batch runs in chunks of [`CPU_CHUNK`] positions, in parallel, so that
//! each chunk's activations stay in cache.
//!
//! [`NnEvaluator`] encodes a batch of games into a buffer it keeps and runs one forward pass
//! that computes the policy logits of each request's legal moves only
//! ([`InferenceNet::predict_chosen_into`]; the policy's linear layer, a seventh of the main
//! job's net's arithmetic, then costs about a fiftieth of itself): the prior is the softmax over
//! those (zero elsewhere, summing to 1), and the value is `P(win) − P(loss)` from the WDL
//! softmax.

use std::sync::Arc;

use burn::module::Module;
use burn::tensor::activation::{relu, sigmoid};
use burn::tensor::ops::PadMode;
use burn::tensor::{Device, Tensor, TensorData};
use rayon::prelude::*;
use xiangqi::env::{PLANE_FILES, PLANE_RANKS, PLANE_SIZE};
use xiangqi_search::{Encoding, EvalBuffer, EvalRequest, Evaluator, GameEnv};

use crate::config::NetConfig;
use crate::error::NnError;
use crate::kernels::{Bf16Tower, HostBlock, HostNet, OutputRows, Packed, PolicyOut, Winograd};
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

    /// The weights packed for this crate's CPU kernels.
    fn to_packed(&self) -> Packed {
        Packed::conv(&self.weight, &self.bias, self.shape)
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

/// A linear layer's weights on the host: `[in, out]` row-major and `[out]`.
struct HostLinear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl HostLinear {
    /// From a linear layer; with `board_channels = Some(c)`, a layer over flattened
    /// channels-first `[c, 90]` features whose rows are reordered for channels-last `[90, c]`
    /// features.
    fn read(l: &burn::nn::Linear, board_channels: Option<usize>) -> Result<HostLinear, NnError> {
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
        Ok(HostLinear { weight, bias, inputs, outputs })
    }

    fn to_packed(&self) -> Packed {
        Packed::dense(&self.weight, &self.bias, self.inputs, self.outputs)
    }

    fn to_device(&self, device: &Device) -> Dense {
        Dense {
            weight: Tensor::from_data(
                TensorData::new(self.weight.clone(), [self.inputs, self.outputs]),
                device,
            ),
            bias: Tensor::from_data(TensorData::new(self.bias.clone(), [1, self.outputs]), device),
        }
    }
}

impl Dense {
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

/// The most positions of one chunk on the CPU device (the default of
/// [`InferenceNet::chunk_size`] there): a larger batch is split into chunks, as many as a
/// multiple of the rayon pool's threads on [`InferencePath::Kernels`] and all about equal, run
/// in parallel on the pool, so that each chunk's activations stay in cache.
pub const CPU_CHUNK: usize = 16;

/// How [`InferenceNet::predict`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InferencePath {
    /// This crate's CPU kernels ([`crate::kernels`]): on the host, whatever the device the net
    /// was folded onto. The default on the CPU device.
    Kernels,
    /// Burn's tensor operations on the net's device. The default on every other device.
    Backend,
}

/// The arithmetic of [`InferencePath::Kernels`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Every layer in `f32`.
    #[default]
    F32,
    /// The input convolution and the residual tower in bfloat16, summed in `f32`, on Intel's AMX
    /// tiles (Xeon Sapphire Rapids and later) or else on AVX-512 BF16's dot products (AMD Zen 4
    /// and later, Intel Cooper Lake); the heads in `f32`. Where the CPU has neither, or the
    /// tower has global pooling or squeeze-excitation blocks, the net computes in `f32`
    /// ([`InferenceNet::precision`] says which). bfloat16 keeps 8 significant bits; on the
    /// trained test nets of `tests/bf16.rs` the policies and values moved by at most a few
    /// ten-thousandths.
    Bf16,
    /// A request, never a net's precision: [`Precision::Bf16`] where it can run, else
    /// [`Precision::F32`]. [`InferenceNet::with_precision`] treats it as `Bf16`; callers warn
    /// about a `Bf16` that falls back, not about this.
    Auto,
}

impl std::str::FromStr for Precision {
    type Err = String;

    /// `"f32"`, `"bf16"` or `"auto"`.
    fn from_str(s: &str) -> Result<Precision, String> {
        match s {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            "auto" => Ok(Precision::Auto),
            _ => Err(format!("unknown precision '{s}': expected f32, bf16 or auto")),
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Auto => "auto",
        })
    }
}

impl Precision {
    /// Whether this is [`Precision::F32`], the default (which configs leave unwritten).
    pub fn is_f32(&self) -> bool {
        *self == Precision::F32
    }

    /// Whether this CPU and operating system can run [`Precision::Bf16`] inference (AMX or
    /// AVX-512 BF16).
    pub fn bf16_available() -> bool {
        crate::kernels::bf16_available()
    }

    /// Whether this CPU and operating system can train in [`Precision::Bf16`]
    /// (`training.precision`): the training kernels run on AMX only.
    pub fn bf16_training_available() -> bool {
        crate::kernels::bf16_training_available()
    }
}

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
    /// The same folded weights packed for the CPU kernels.
    host: Arc<HostNet>,
    path: InferencePath,
    precision: Precision,
    config: NetConfig,
    encoding: Encoding,
    device: Device,
    chunk: usize,
}

impl InferenceNet {
    /// Folds `net` (its weights and batch-norm running statistics) and puts the result on
    /// `device`, which should be a plain device such as `Device::flex()`; an autodiff device is
    /// replaced by its plain inner device. On the CPU device [`InferenceNet::predict`] runs
    /// this crate's kernels ([`InferencePath::Kernels`]), elsewhere burn's operations on the
    /// device.
    ///
    /// # Errors
    /// [`NnError::Read`] if the weights cannot be read from the device they live on.
    pub fn from_net(net: &Net, device: &Device) -> Result<InferenceNet, NnError> {
        let device = if device.is_autodiff() { device.clone().inner() } else { device.clone() };
        // `valid` also applies the batch-norm statistics' pending update of the last training
        // step (burn's running state lags one update behind until synced).
        let net = &net.valid();
        let f = net.config.filters;
        let input = HostConv::fold(&net.input)?;
        let mut tower = Vec::with_capacity(net.tower.len());
        let mut host_tower = Vec::with_capacity(net.tower.len());
        // The folded 3 × 3 convolutions of a plain tower, for the AMX kernel.
        let mut plain = Vec::with_capacity(net.tower.len());
        for block in &net.tower {
            let mut conv1 = HostConv::fold(&block.conv1)?;
            let mut pool = None;
            if let Some(p) = &block.pool {
                let g = HostConv::fold(&p.conv)?;
                let channels = g.shape[0];
                conv1 = conv1.concat(g);
                pool = Some((channels, HostLinear::read(&p.fc, None)?));
            }
            debug_assert_eq!(conv1.shape[0], f + pool.as_ref().map_or(0, |p| p.0));
            let se = match &block.se {
                Some(se) => {
                    Some((HostLinear::read(&se.fc1, None)?, HostLinear::read(&se.fc2, None)?))
                }
                None => None,
            };
            let conv2 = HostConv::fold(&block.conv2)?;
            if pool.is_none() && se.is_none() {
                plain.push((
                    (conv1.weight.clone(), conv1.bias.clone(), conv1.shape),
                    (conv2.weight.clone(), conv2.bias.clone(), conv2.shape),
                ));
            }
            host_tower.push(HostBlock {
                conv1: conv1.to_packed(),
                conv2: conv2.to_packed(),
                winograd: [
                    Winograd::for_conv(&conv1.weight, &conv1.bias, conv1.shape),
                    Winograd::for_conv(&conv2.weight, &conv2.bias, conv2.shape),
                ],
                pool: pool.as_ref().map(|(g, fc)| (*g, fc.to_packed())),
                se: se.as_ref().map(|(a, b)| (a.to_packed(), b.to_packed())),
            });
            tower.push(FoldedBlock {
                conv1: conv1.to_matmul(&device),
                conv2: conv2.to_matmul(&device),
                pool: pool.map(|(g, fc)| (g, fc.to_device(&device))),
                se: se.map(|(a, b)| (a.to_device(&device), b.to_device(&device))),
            });
        }
        let c = &net.config;
        let policy_conv = HostConv::fold(&net.policy_conv)?;
        let value_conv = HostConv::fold(&net.value_conv)?;
        let policy_fc = HostLinear::read(&net.policy_fc, Some(c.policy_channels))?;
        let value_fc1 = HostLinear::read(&net.value_fc1, Some(c.value_channels))?;
        let value_fc2 = HostLinear::read(&net.value_fc2, None)?;
        let bf16_tower = if plain.len() == net.tower.len() {
            fn view(
                (w, b, shape): &(Vec<f32>, Vec<f32>, [usize; 4]),
            ) -> (&[f32], &[f32], [usize; 4]) {
                (w, b, *shape)
            }
            let blocks: Vec<_> = plain.iter().map(|(a, b)| (view(a), view(b))).collect();
            Bf16Tower::new((&input.weight, &input.bias, input.shape), &blocks)
        } else {
            None
        };
        let host = HostNet {
            planes: net.encoding.planes,
            filters: f,
            policy_size: net.encoding.policy_size,
            input: input.to_packed(),
            tower: host_tower,
            policy_conv: policy_conv.to_packed(),
            value_conv: value_conv.to_packed(),
            policy_fc: policy_fc.to_packed(),
            policy_rows: OutputRows::dense(
                &policy_fc.weight,
                &policy_fc.bias,
                policy_fc.inputs,
                policy_fc.outputs,
            ),
            value_fc1: value_fc1.to_packed(),
            value_fc2: value_fc2.to_packed(),
            bf16_tower,
        };
        debug_assert_eq!(host.value_fc2.outputs(), WDL);
        let cpu = device == Device::flex();
        Ok(InferenceNet {
            input: input.to_matmul(&device),
            tower,
            policy_conv: policy_conv.to_matmul(&device),
            value_conv: value_conv.to_matmul(&device),
            policy_fc: policy_fc.to_device(&device),
            value_fc1: value_fc1.to_device(&device),
            value_fc2: value_fc2.to_device(&device),
            host: Arc::new(host),
            path: if cpu { InferencePath::Kernels } else { InferencePath::Backend },
            precision: Precision::F32,
            config: net.config.clone(),
            encoding: net.encoding,
            device,
            chunk: if cpu { CPU_CHUNK } else { usize::MAX },
        })
    }

    /// How [`InferenceNet::predict`] computes.
    pub fn path(&self) -> InferencePath {
        self.path
    }

    /// Sets [`InferenceNet::path`]. [`InferencePath::Kernels`] computes on the host's CPU even
    /// for a net folded onto another device.
    #[must_use]
    pub fn with_path(mut self, path: InferencePath) -> InferenceNet {
        self.path = path;
        self
    }

    /// The arithmetic [`InferencePath::Kernels`] uses: [`Precision::F32`] unless
    /// [`InferenceNet::with_precision`] asked for bfloat16 and this CPU and net can run it.
    pub fn precision(&self) -> Precision {
        match self.path {
            InferencePath::Kernels => self.precision,
            InferencePath::Backend => Precision::F32,
        }
    }

    /// Why [`Precision::Bf16`] does not run on this net, or `None` where it does (or would,
    /// if asked).
    pub fn bf16_unavailable(&self) -> Option<&'static str> {
        if self.path != InferencePath::Kernels {
            Some("bfloat16 runs only on the CPU device's kernels")
        } else if !Precision::bf16_available() {
            Some("this CPU (or operating system) has neither AMX nor AVX-512 BF16")
        } else if self.host.bf16_tower.is_none() {
            Some(
                "the bfloat16 kernel runs only towers without global pooling or squeeze-excitation",
            )
        } else {
            None
        }
    }

    /// Asks for `precision` on [`InferencePath::Kernels`]. [`Precision::Bf16`] (or
    /// [`Precision::Auto`]) takes effect where this CPU has AMX or AVX-512 BF16 and the tower
    /// has neither global pooling nor squeeze-excitation; elsewhere the net stays
    /// [`Precision::F32`] (see [`InferenceNet::precision`]).
    #[must_use]
    pub fn with_precision(mut self, precision: Precision) -> InferenceNet {
        self.precision = match precision {
            Precision::Bf16 | Precision::Auto if self.bf16_unavailable().is_none() => {
                Precision::Bf16
            }
            _ => Precision::F32,
        };
        self
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
    /// batch is split into chunks of at most this size ([`CPU_CHUNK`] on the CPU, unlimited on
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
    /// * `planes`: `[B, planes, 10, 9]` (the encoding's planes: 16, or 23 with the feature
    ///   planes)
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

    /// Runs the network on planes laid end to end in a host buffer and reads the logits back
    /// (on [`InferencePath::Backend`] the buffer is moved into the input tensor, not copied).
    ///
    /// # Shapes
    /// `planes`: `[B, planes, 10, 9]` flattened, `B · planes · 90` floats (the encoding's
    /// planes).
    ///
    /// # Errors
    /// [`NnError::Batch`] if the length is not a multiple of `planes · 90`;
    /// [`NnError::Read`] if the device fails.
    pub fn predict(&self, planes: Vec<f32>) -> Result<Logits, NnError> {
        let mut out = Logits::empty(self.encoding.policy_size);
        match self.path {
            InferencePath::Kernels => self.predict_into(&planes, &mut out)?,
            InferencePath::Backend => {
                let batch = self.batch_of(planes.len())?;
                if batch > 0 {
                    let input = Tensor::from_data(
                        TensorData::new(
                            planes,
                            [batch, self.encoding.planes, PLANE_RANKS, PLANE_FILES],
                        ),
                        &self.device,
                    );
                    let logits = self.forward(input);
                    out = Logits {
                        batch,
                        policy_size: self.encoding.policy_size,
                        policy: to_vec(logits.policy)?,
                        wdl: to_vec(logits.wdl)?,
                    };
                }
            }
        }
        Ok(out)
    }

    /// [`InferenceNet::predict`] into `out`, whose buffers are reused (on
    /// [`InferencePath::Kernels`] a call allocates nothing once they are large enough).
    ///
    /// # Shapes
    /// As [`InferenceNet::predict`].
    ///
    /// # Errors
    /// As [`InferenceNet::predict`].
    pub fn predict_into(&self, planes: &[f32], out: &mut Logits) -> Result<(), NnError> {
        let batch = self.batch_of(planes.len())?;
        let policy_size = self.encoding.policy_size;
        if self.path == InferencePath::Backend {
            *out = self.predict(planes.to_vec())?;
            return Ok(());
        }
        out.batch = batch;
        out.policy_size = policy_size;
        out.policy.resize(batch * policy_size, 0.0);
        out.wdl.resize(batch * WDL, 0.0);
        let bf16 = self.precision == Precision::Bf16;
        let policy = PolicyOut::All(&mut out.policy);
        self.host.forward_into(planes, policy, &mut out.wdl, self.chunk, bf16);
        Ok(())
    }

    /// The policy logits of chosen indices only (a position's legal moves, say), and the WDL
    /// logits: what [`InferenceNet::predict_into`] computes at those indices, up to the
    /// rounding of another summation order. On [`InferencePath::Kernels`] only the chosen
    /// outputs of the policy's linear layer are computed (about 40 of 2,166 for a xiangqi
    /// position; the whole layer is a seventh of the main job's net's arithmetic), and a call
    /// allocates nothing once `policy` and `wdl` are large enough; on [`InferencePath::Backend`]
    /// the whole policy is computed and the chosen logits read from it.
    ///
    /// # Shapes
    /// * `planes`: `[B, planes, 10, 9]` flattened, as [`InferenceNet::predict`].
    /// * `offsets`: `[B + 1]`, from 0, not decreasing, ending at `indices.len()`: position
    ///   `i`'s indices are `indices[offsets[i]..offsets[i + 1]]`.
    /// * `indices`: policy indices (below the encoding's policy size), any number per position.
    /// * output `policy`: resized to `[indices.len()]`, the logit of each index.
    /// * output `wdl`: resized to `[B, 3]`, the WDL logits.
    ///
    /// # Errors
    /// [`NnError::Batch`] if the planes' length is not a multiple of `planes · 90`, if
    /// `offsets` does not fit the batch and `indices` as above, or if an index is outside the
    /// policy; [`NnError::Read`] if the device fails.
    pub fn predict_chosen_into(
        &self,
        planes: &[f32],
        offsets: &[usize],
        indices: &[u32],
        policy: &mut Vec<f32>,
        wdl: &mut Vec<f32>,
    ) -> Result<(), NnError> {
        let batch = self.batch_of(planes.len())?;
        let policy_size = self.encoding.policy_size;
        if offsets.len() != batch + 1
            || offsets[0] != 0
            || offsets[batch] != indices.len()
            || offsets.windows(2).any(|w| w[0] > w[1])
        {
            return Err(NnError::Batch(format!(
                "{} offsets for {batch} positions and {} indices: want {} offsets, from 0 to {} \
                 and not decreasing",
                offsets.len(),
                indices.len(),
                batch + 1,
                indices.len()
            )));
        }
        if let Some(k) = indices.iter().find(|&&k| k as usize >= policy_size) {
            return Err(NnError::Batch(format!(
                "policy index {k} is outside the policy's {policy_size} logits"
            )));
        }
        policy.resize(indices.len(), 0.0);
        wdl.resize(batch * WDL, 0.0);
        if self.path == InferencePath::Backend {
            let all = self.predict(planes.to_vec())?;
            for (i, w) in offsets.windows(2).enumerate() {
                let row = all.policy(i);
                for (p, &k) in policy[w[0]..w[1]].iter_mut().zip(&indices[w[0]..w[1]]) {
                    *p = row[k as usize];
                }
            }
            wdl.copy_from_slice(&all.wdl);
            return Ok(());
        }
        let bf16 = self.precision == Precision::Bf16;
        let chosen = PolicyOut::Chosen { offsets, indices, logits: policy };
        self.host.forward_into(planes, chosen, wdl, self.chunk, bf16);
        Ok(())
    }

    /// The batch size of `len` plane floats.
    fn batch_of(&self, len: usize) -> Result<usize, NnError> {
        let input_size = self.encoding.input_size();
        if !len.is_multiple_of(input_size) {
            return Err(NnError::Batch(format!(
                "{len} plane floats is not a multiple of {input_size}"
            )));
        }
        Ok(len / input_size)
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
    /// No positions yet (buffers for [`InferenceNet::predict_into`]).
    pub fn empty(policy_size: usize) -> Logits {
        Logits { batch: 0, policy_size, policy: Vec::new(), wdl: Vec::new() }
    }

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
        wdl_softmax(&self.wdl[i * WDL..(i + 1) * WDL])
    }
}

/// The softmax of three WDL logits.
fn wdl_softmax(l: &[f32]) -> [f32; 3] {
    let m = l[0].max(l[1]).max(l[2]);
    let e = [(l[0] - m).exp(), (l[1] - m).exp(), (l[2] - m).exp()];
    let s = e[0] + e[1] + e[2];
    [e[0] / s, e[1] / s, e[2] / s]
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
    for (p, &m) in priors.iter_mut().zip(moves) {
        let i = G::move_to_index(m, turn)
            .ok_or_else(|| NnError::NoPolicyIndex { mv: m.to_string() })?;
        *p = logits[i];
    }
    softmax_in_place(priors);
    Ok(())
}

/// Replaces logits by their softmax; uniform where the largest is not finite (NaN or infinite
/// logits: the search would fall back to uniform too).
fn softmax_in_place(priors: &mut [f32]) {
    let max = priors.iter().fold(f32::NEG_INFINITY, |m, &p| m.max(p));
    if !max.is_finite() {
        // NaN or infinite logits: fall back to uniform (the search would too).
        priors.fill(1.0 / priors.len() as f32);
        return;
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
}

/// The search's evaluator over a folded network (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct NnEvaluator {
    net: InferenceNet,
    /// The batch's planes, its legal moves' policy indices (`offsets` as
    /// [`InferenceNet::predict_chosen_into`] takes them), their logits and the WDL logits, reused
    /// across calls.
    planes: Vec<f32>,
    offsets: Vec<usize>,
    indices: Vec<u32>,
    policy: Vec<f32>,
    wdl: Vec<f32>,
}

impl NnEvaluator {
    /// An evaluator over `net`.
    pub fn new(net: InferenceNet) -> NnEvaluator {
        NnEvaluator {
            net,
            planes: Vec::new(),
            offsets: Vec::new(),
            indices: Vec::new(),
            policy: Vec::new(),
            wdl: Vec::new(),
        }
    }

    /// The network.
    pub fn net(&self) -> &InferenceNet {
        &self.net
    }

    /// Replaces the network (a new generation), keeping the evaluator.
    pub fn set_net(&mut self, net: InferenceNet) {
        self.net = net;
    }

    /// Encodes the requests' games into `planes`, `[B, planes, 10, 9]` of `encoding`.
    fn encode<G: GameEnv>(
        encoding: &Encoding,
        batch: &[EvalRequest<'_, G>],
        planes: &mut Vec<f32>,
    ) {
        let n = encoding.input_size();
        // No clearing: `Encoding::encode` writes every float of a position, so the zeroes
        // would only be overwritten (the memset showed in self-play's profile).
        planes.resize(batch.len() * n, 0.0);
        // Serial: spread over the global pool it ran no faster in self-play, where the tree
        // work of the other half of the games keeps the cores busy meanwhile.
        for (r, chunk) in batch.iter().zip(planes.chunks_exact_mut(n)) {
            encoding.encode(r.game, chunk);
        }
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
        let enc = *self.net.encoding();
        if enc.game != G::KIND
            || enc.base_planes != G::PLANES
            || enc.policy_size != G::POLICY_SIZE
            || Encoding::of::<G>().with_features(enc.features).ok() != Some(enc)
        {
            return Err(NnError::Batch(format!(
                "the network is for {} (encoding version {}), not {}",
                enc.game,
                enc.version,
                G::KIND
            )));
        }
        Self::encode(&enc, batch, &mut self.planes);
        self.offsets.clear();
        self.offsets.push(0);
        self.indices.clear();
        for r in batch {
            let turn = r.game.turn();
            for &m in r.moves {
                let i = G::move_to_index(m, turn)
                    .ok_or_else(|| NnError::NoPolicyIndex { mv: m.to_string() })?;
                self.indices.push(i as u32);
            }
            self.offsets.push(self.indices.len());
        }
        self.net.predict_chosen_into(
            &self.planes,
            &self.offsets,
            &self.indices,
            &mut self.policy,
            &mut self.wdl,
        )?;
        for (i, (priors, value, draw)) in out.entries_mut().enumerate() {
            priors.copy_from_slice(&self.policy[self.offsets[i]..self.offsets[i + 1]]);
            softmax_in_place(priors);
            let [w, d, l] = wdl_softmax(&self.wdl[i * WDL..(i + 1) * WDL]);
            let v = w - l;
            *value = if v.is_nan() { 0.0 } else { v.clamp(-1.0, 1.0) };
            *draw = if d.is_nan() { 0.0 } else { d.clamp(0.0, 1.0) };
        }
        Ok(())
    }
}
