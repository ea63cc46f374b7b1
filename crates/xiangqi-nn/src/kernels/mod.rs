//! The CPU inference path: the folded network run by kernels of this crate instead of burn's
//! tensor operations; and, for training on the CPU, the tower's 3 × 3 convolution with its two
//! gradients and batch normalisation with its gradients (reached through burn as the operations
//! of [`crate::train_ops`]).
//!
//! Burn's CPU backend spends much of an inference call outside the matrix products (allocating
//! tensors, the im2col copies, separate passes for the bias, ReLU and residual). This path
//! keeps every activation of a chunk of positions in buffers reused across calls and runs
//! every layer through one kernel (2.3× burn's folded net for the 2 × 24 main-job net, 1.2–1.3×
//! ONNX Runtime on the same two cores: `experiments/2026-12-01-cpu-kernels/`):
//!
//! * **Layout.** Activations are channels-last on a zero-bordered board of 12 × 11 points
//!   (`[n · 132, stride]`, `stride` the channel count rounded up to 16). A 3 × 3 convolution
//!   is then nine "taps", each a fixed row offset (`dy · 11 + dx`) into the same buffer: the
//!   im2col matrix is never built, and the border rows, never written, stay zero.
//! * **Kernel** (the `gemm` module). One register-blocked matrix product,
//!   `out[r] = Σ_taps Σ_c in[row_r + tap][c] · W[tap, c]`, over a tile of `MR` output rows by `NV` SIMD vectors of output channels (5 × 64
//!   channels or 8 × 32 with AVX-512), the input broadcast one value at a time and the
//!   weights pre-packed in strips one tile wide. The bias, the residual sum and the ReLU are
//!   applied to the tile in registers before it is stored (the GEMM's epilogue). The same
//!   kernel runs the 1 × 1 convolutions of the heads (one tap) and the linear layers (one tap,
//!   a row per position). Where the caller wants only some policy logits (self-play's
//!   evaluator: those of the legal moves), the policy's linear layer is instead a dot product
//!   of the position's features with each chosen output's row of weights ([`OutputRows`]).
//! * **Winograd.** Where a tower convolution has 64 input and output channels or more, it runs
//!   by Winograd's minimal filtering F(2 × 2, 3 × 3) instead (the `winograd` module): about half
//!   the multiplications, as sixteen products of transformed inputs by transformed weights
//!   through the same kernel, the bias, residual and ReLU applied as the outputs are
//!   transformed back.
//! * **SIMD** comes from `pulp`, which detects AVX-512 or AVX2 + FMA at run time and compiles
//!   the whole chunk's computation once per instruction set (no `unsafe` outside the
//!   `bfloat16` module); other CPUs get a scalar build of the same code.
//! * **bfloat16** ([`crate::Precision::Bf16`], where the CPU has Intel's AMX or AVX-512 BF16):
//!   the input convolution and the residual tower run in bfloat16 with `f32` sums, as AMX tile
//!   products or else as AVX-512 BF16 dot products (the `bfloat16` module), the heads as above.
//! * **Threads.** A batch is split into about equal chunks of positions, as many as a multiple
//!   of the rayon pool's threads and none larger than the net's chunk size, run in parallel on
//!   the pool, each in its thread's own scratch buffers.
//!
//! The outputs equal burn's folded forward pass up to the rounding of a different summation
//! order (tested within 1e-4 on random nets and real positions of both games).
//!
//! **Training.** `board_conv3x3` takes and returns burn's `[n, c, 10, 9]` layout: each chunk of
//! positions is copied onto the padded channels-last board, run through the same kernel (no bias,
//! no ReLU; by Winograd's algorithm from 64 channels) and copied back. The input gradient is the
//! same convolution of the output gradient with the flipped, transposed weights. The weight
//! gradient is a matrix product whose long dimension is the board points: SIMD vectors along one
//! kernel row's three taps of input channels (consecutive floats on the padded board) by tiles of
//! output channels broadcast from the gradient, summed in registers over a chunk's points, the
//! chunks' sums added at the end. Batch normalisation sums each board in `f32` lanes and the boards
//! in `f64`. All of them equal burn's operations within 1e-4 (`train_ops`' tests), and the
//! convolutions their definitions with every instruction set (this module's tests). With
//! `training.precision = "bf16"` on a CPU with AMX, the three convolutions run as AMX tile products
//! in bfloat16 with `f32` sums (the `bfloat16` module); batch normalisation stays `f32`. The losses'
//! softmax cross-entropy (the policy's over the legal moves, the auxiliary heads', the value's)
//! runs in one pass per row with a vectorised `exp`, its gradient in another (the `loss` module).

use std::cell::RefCell;

use pulp::{Arch, Simd, WithSimd};
use xiangqi::env::{PLANE_FILES, PLANE_RANKS, PLANE_SIZE};

#[cfg(target_arch = "x86_64")]
mod bfloat16;
mod chosen;
mod gemm;
mod loss;
mod train;
mod winograd;

use chosen::chosen_outputs;
pub(crate) use chosen::{OutputRows, PolicyOut};
use gemm::{Io, layer, load_vector, store_vector};
pub(crate) use loss::{ILLEGAL_LOGIT_OFFSET, softmax_cross_entropy, softmax_cross_entropy_grad};

pub(crate) use winograd::Winograd;

pub(crate) use train::{
    batch_norm_train, batch_norm_train_backward, board_conv3x3, board_conv3x3_input_grad,
    board_conv3x3_weight_grad,
};

/// Files of the zero-bordered board.
const PAD_FILES: usize = PLANE_FILES + 2;
/// Points of the zero-bordered board (12 × 11).
const PAD_SIZE: usize = (PLANE_RANKS + 2) * PAD_FILES;
/// Channel strides of activation buffers are multiples of this (the widest SIMD vector).
const ALIGN: usize = 16;

fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// The padded-board row of board point `sq` (rank-major, 90 points) of position `i`.
fn padded_row(i: usize, sq: usize) -> usize {
    let (rank, file) = (sq / PLANE_FILES, sq % PLANE_FILES);
    i * PAD_SIZE + (rank + 1) * PAD_FILES + file + 1
}

/// The SIMD width (floats per vector) and register count of the instruction set `pulp` picks
/// on this CPU.
fn simd_shape() -> (usize, usize) {
    struct Shape;
    impl WithSimd for Shape {
        type Output = (usize, usize);
        #[inline(always)]
        fn with_simd<S: Simd>(self, _: S) -> (usize, usize) {
            (S::F32_LANES, S::REGISTER_COUNT)
        }
    }
    Arch::new().dispatch(Shape)
}

/// The most SIMD vectors of output columns in one register tile: with 32 registers, four
/// (tiles of 5 × 4 accumulators), with 16, two (6 × 2).
fn max_tile_vectors(lanes: usize, registers: usize) -> usize {
    if lanes == 1 || registers >= 32 { 4 } else { 2 }
}

/// A layer's weights packed for the kernel: a convolution as taps over padded-board rows, or a
/// linear layer (one tap).
#[derive(Debug, Clone)]
pub(crate) struct Packed {
    /// Row offsets of the taps in the input buffer (nine for a 3 × 3 convolution, `[0]` else).
    taps: Vec<isize>,
    /// Input channels (or features) read at each tap.
    cin: usize,
    /// Output channels.
    cout: usize,
    /// SIMD width the weights are packed for.
    lanes: usize,
    /// Strips of output columns, each `(first column, vectors)`: one register tile wide.
    strips: Vec<(usize, usize)>,
    /// The strips' weights one after another, each `[taps · cin, vectors · lanes]` row-major,
    /// zero beyond `cout`.
    weight: Vec<f32>,
    /// `[vectors · lanes]` over all strips, zero beyond `cout`.
    bias: Vec<f32>,
}

impl Packed {
    /// Packs a `[k · cin, cout]` matrix whose row `t · cin + c` holds tap `t`, channel `c`.
    fn new(taps: Vec<isize>, cin: usize, cout: usize, matrix: &[f32], bias: &[f32]) -> Packed {
        let (lanes, registers) = simd_shape();
        Packed::with_shape(taps, cin, cout, matrix, bias, lanes, registers)
    }

    /// [`Packed::new`] for a SIMD width and register count.
    fn with_shape(
        taps: Vec<isize>,
        cin: usize,
        cout: usize,
        matrix: &[f32],
        bias: &[f32],
        lanes: usize,
        registers: usize,
    ) -> Packed {
        let k = taps.len() * cin;
        debug_assert_eq!(matrix.len(), k * cout);
        debug_assert_eq!(bias.len(), cout);
        let vectors = cout.div_ceil(lanes);
        let per_tile = max_tile_vectors(lanes, registers);
        let mut strips = Vec::new();
        let mut weight = Vec::with_capacity(k * vectors * lanes);
        let mut v0 = 0;
        while v0 < vectors {
            let nv = (vectors - v0).min(per_tile);
            let (col0, width) = (v0 * lanes, nv * lanes);
            for row in 0..k {
                for col in col0..col0 + width {
                    weight.push(if col < cout { matrix[row * cout + col] } else { 0.0 });
                }
            }
            strips.push((col0, nv));
            v0 += nv;
        }
        let mut padded_bias = vec![0.0; vectors * lanes];
        padded_bias[..cout].copy_from_slice(bias);
        Packed { taps, cin, cout, lanes, strips, weight, bias: padded_bias }
    }

    /// A convolution from its folded weights `[out, in, k, k]` (k = 1 or 3) and bias `[out]`.
    pub(crate) fn conv(weight: &[f32], bias: &[f32], shape: [usize; 4]) -> Packed {
        let (lanes, registers) = simd_shape();
        Packed::conv_with_shape(weight, bias, shape, lanes, registers)
    }

    /// [`Packed::conv`] for a SIMD width and register count.
    fn conv_with_shape(
        weight: &[f32],
        bias: &[f32],
        shape: [usize; 4],
        lanes: usize,
        registers: usize,
    ) -> Packed {
        let [out, inp, kh, kw] = shape;
        debug_assert!(kh == kw && (kh == 1 || kh == 3));
        let mut m = vec![0.0; kh * kw * inp * out];
        for o in 0..out {
            for c in 0..inp {
                for y in 0..kh {
                    for x in 0..kw {
                        let row = (y * kw + x) * inp + c;
                        m[row * out + o] = weight[((o * inp + c) * kh + y) * kw + x];
                    }
                }
            }
        }
        let half = (kh / 2) as isize;
        let taps = (0..kh * kw)
            .map(|t| {
                let (dy, dx) = ((t / kw) as isize - half, (t % kw) as isize - half);
                dy * PAD_FILES as isize + dx
            })
            .collect();
        Packed::with_shape(taps, inp, out, &m, bias, lanes, registers)
    }

    /// A linear layer from its `[in, out]` weights and `[out]` bias.
    pub(crate) fn dense(weight: &[f32], bias: &[f32], inputs: usize, outputs: usize) -> Packed {
        Packed::new(vec![0], inputs, outputs, weight, bias)
    }

    /// Output channels.
    pub(crate) fn outputs(&self) -> usize {
        self.cout
    }
}

/// One block of the residual tower.
#[derive(Debug, Clone)]
pub(crate) struct HostBlock {
    /// The first convolution; with global pooling its outputs are the block's filters followed
    /// by the pooled channels.
    pub(crate) conv1: Packed,
    pub(crate) conv2: Packed,
    /// The two convolutions packed for Winograd's algorithm, where it is the faster kernel for
    /// their channel counts ([`Winograd::for_conv`]); run instead of `conv1` and `conv2`.
    pub(crate) winograd: [Option<Winograd>; 2],
    /// Global pooling: pooled channels and the linear layer of their means and maxima.
    pub(crate) pool: Option<(usize, Packed)>,
    /// Squeeze-excitation: its two linear layers.
    pub(crate) se: Option<(Packed, Packed)>,
}

/// The tower's convolutions packed for the bfloat16 kernels ([`crate::Precision::Bf16`]), and
/// the kernel this CPU runs them with.
#[derive(Debug, Clone)]
pub(crate) struct Bf16Tower {
    #[cfg(target_arch = "x86_64")]
    kernel: bfloat16::Bf16Kernel,
    #[cfg(target_arch = "x86_64")]
    input: bfloat16::Bf16Conv,
    /// Each block's two convolutions.
    #[cfg(target_arch = "x86_64")]
    blocks: Vec<(bfloat16::Bf16Conv, bfloat16::Bf16Conv)>,
}

impl Bf16Tower {
    /// The tower of a net whose blocks are plain residual blocks, from the folded weights
    /// `[out, in, 3, 3]` and biases of its input convolution and of each block's two
    /// convolutions; `None` where this CPU (or operating system) runs neither bfloat16 kernel
    /// ([`bf16_available`]).
    #[allow(clippy::type_complexity)]
    pub(crate) fn new(
        input: (&[f32], &[f32], [usize; 4]),
        blocks: &[((&[f32], &[f32], [usize; 4]), (&[f32], &[f32], [usize; 4]))],
    ) -> Option<Bf16Tower> {
        #[cfg(target_arch = "x86_64")]
        {
            let kernel = bfloat16::Bf16Kernel::best()?;
            let pack = |(w, b, shape): (&[f32], &[f32], [usize; 4])| {
                bfloat16::Bf16Conv::conv3x3(w, b, shape)
            };
            Some(Bf16Tower {
                kernel,
                input: pack(input),
                blocks: blocks.iter().map(|&(a, b)| (pack(a), pack(b))).collect(),
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (input, blocks);
            None
        }
    }
}

/// Whether this CPU and operating system run [`crate::Precision::Bf16`] inference: Intel's AMX
/// with bfloat16 (Xeon Sapphire Rapids and later) or AVX-512 BF16 (AMD Zen 4 and later, Intel
/// Cooper Lake).
pub(crate) fn bf16_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        bfloat16::Bf16Kernel::best().is_some()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU and operating system run bfloat16 training (`training.precision =
/// "bf16"`): its convolutions and weight gradients run on AMX tiles only.
pub(crate) fn bf16_training_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        bfloat16::tiles_available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The folded network's weights, packed for the kernels.
#[derive(Debug, Clone)]
pub(crate) struct HostNet {
    pub(crate) planes: usize,
    pub(crate) filters: usize,
    pub(crate) policy_size: usize,
    pub(crate) input: Packed,
    pub(crate) tower: Vec<HostBlock>,
    pub(crate) policy_conv: Packed,
    pub(crate) value_conv: Packed,
    pub(crate) policy_fc: Packed,
    /// `policy_fc` by output, for [`PolicyOut::Chosen`].
    pub(crate) policy_rows: OutputRows,
    pub(crate) value_fc1: Packed,
    pub(crate) value_fc2: Packed,
    /// The tower for [`crate::Precision::Bf16`], where the CPU has AMX or AVX-512 BF16 and the
    /// blocks are plain.
    pub(crate) bf16_tower: Option<Bf16Tower>,
}

impl HostNet {
    /// Runs the network on `planes` (`[B, planes, 10, 9]` flattened), writing the policy logits
    /// (all of them, `[B, policy_size]`, or the chosen ones of [`PolicyOut::Chosen`]) and the WDL
    /// logits (`[B, 3]`). Chunks of at most `chunk` positions, as many as a multiple of the rayon
    /// pool's threads, run in parallel on it. With `bf16` (and [`HostNet::bf16_tower`]) the
    /// tower runs on the bfloat16 kernel.
    pub(crate) fn forward_into(
        &self,
        planes: &[f32],
        policy: PolicyOut<'_>,
        wdl: &mut [f32],
        chunk: usize,
        bf16: bool,
    ) {
        let tower = if bf16 { self.bf16_tower.as_ref() } else { None };
        let n = planes.len() / (self.planes * PLANE_SIZE);
        debug_assert_eq!(planes.len(), n * self.planes * PLANE_SIZE);
        debug_assert_eq!(wdl.len(), n * 3);
        match &policy {
            PolicyOut::All(p) => debug_assert_eq!(p.len(), n * self.policy_size),
            PolicyOut::Chosen { offsets, indices, logits } => {
                debug_assert_eq!(offsets.len(), n + 1);
                debug_assert_eq!(indices.len(), logits.len());
                debug_assert!(indices.iter().all(|&k| (k as usize) < self.policy_size));
            }
        }
        let threads = rayon::current_num_threads().max(1);
        let chunk = balanced_chunk(n, chunk, threads);
        self.forward_chunks(tower, planes, policy, wdl, chunk);
    }

    /// [`HostNet::forward_into`] of `chunk`-sized chunks: halves of whole chunks in parallel
    /// (`rayon::join`), one chunk per call at the bottom.
    fn forward_chunks(
        &self,
        tower: Option<&Bf16Tower>,
        planes: &[f32],
        policy: PolicyOut<'_>,
        wdl: &mut [f32],
        chunk: usize,
    ) {
        let n = wdl.len() / 3;
        if n <= chunk {
            SCRATCH.with(|s| {
                let scratch = &mut s.borrow_mut();
                Arch::new().dispatch(Chunk { net: self, tower, planes, policy, wdl, scratch });
            });
            return;
        }
        let mid = n.div_ceil(chunk) / 2 * chunk;
        let (pa, pb) = planes.split_at(mid * self.planes * PLANE_SIZE);
        let (wa, wb) = wdl.split_at_mut(mid * 3);
        let (qa, qb) = policy.split_at(mid, self.policy_size);
        rayon::join(
            || self.forward_chunks(tower, pa, qa, wa, chunk),
            || self.forward_chunks(tower, pb, qb, wb, chunk),
        );
    }
}

/// The chunk size that splits `n` positions into a multiple of `threads` chunks of at most
/// `max` positions each, as equal as possible (so that no thread waits for another's last
/// chunk); `n` itself when one thread should do it all.
fn balanced_chunk(n: usize, max: usize, threads: usize) -> usize {
    let max = max.max(1);
    if threads <= 1 || n <= 1 {
        return n.min(max).max(1);
    }
    let rounds = n.div_ceil(threads * max);
    n.div_ceil(rounds * threads).max(1)
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// A buffer whose border rows stay zero: it is only ever grown (zeroed) and its interior rows
/// overwritten.
#[derive(Debug, Default)]
struct Buf {
    data: Vec<f32>,
    stride: usize,
}

impl Buf {
    /// Room for `rows` rows of `stride` floats; a buffer of another stride is cleared first.
    fn prepare(&mut self, rows: usize, stride: usize) {
        if self.stride != stride {
            self.data.clear();
            self.stride = stride;
        }
        if self.data.len() < rows * stride {
            self.data.resize(rows * stride, 0.0);
        }
    }
}

/// The buffers of one thread's chunk, reused across calls.
#[derive(Debug, Default)]
struct Scratch {
    /// Padded-board rows of the chunk's interior points, in order.
    rows: Vec<usize>,
    /// `0, 1, 2, …` (rows of dense buffers).
    ident: Vec<usize>,
    input: Buf,
    x: Buf,
    y: Buf,
    z: Buf,
    /// Winograd's transformed inputs and products.
    wv: Buf,
    wm: Buf,
    /// Small per-position vectors: pooled features, squeeze-excitation.
    feat: Buf,
    gate: Buf,
    policy: Buf,
    value: Buf,
    hidden: Buf,
    /// The bfloat16 tower's buffers.
    #[cfg(target_arch = "x86_64")]
    bf: BfScratch,
}

/// The bfloat16 tower's buffers: padded-board activations, each with [`Buf`]'s invariant (border
/// rows and channels past the layer's width stay zero), and the kernels' sums.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Default)]
struct BfScratch {
    input: BfBuf,
    x: BfBuf,
    y: BfBuf,
    sums: Vec<f32>,
    /// One position's planes in bfloat16, before their transposition onto the board.
    planes: Vec<u16>,
}

/// [`Buf`] of bfloat16 values.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Default)]
struct BfBuf {
    data: Vec<u16>,
    stride: usize,
}

#[cfg(target_arch = "x86_64")]
impl BfBuf {
    /// Room for `rows` rows of `stride` values; a buffer of another stride is cleared first.
    fn prepare(&mut self, rows: usize, stride: usize) {
        if self.stride != stride {
            self.data.clear();
            self.stride = stride;
        }
        if self.data.len() < rows * stride {
            self.data.resize(rows * stride, 0);
        }
    }
}

/// The input convolution and the residual tower in bfloat16 with the tower's kernel, leaving
/// the tower's output in `x` (`f32`, stride `fs`) as the `f32` path does.
#[cfg(target_arch = "x86_64")]
fn bf16_tower(
    tower: &Bf16Tower,
    planes: &[f32],
    pl: usize,
    bf: &mut BfScratch,
    x: &mut Buf,
    fs: usize,
) {
    use bfloat16::{Outputs, SLACK_ROWS, layer};
    let n = planes.len() / (pl * PLANE_SIZE);
    let rows = n * PAD_SIZE + SLACK_ROWS;
    // The planes, channels-last on the padded board, in bfloat16.
    let ps = tower.input.in_stride();
    bf.input.prepare(rows, ps);
    // Every channel of the stride: another net's planes, with a larger count than this net's but
    // the same stride, must not leave values (a NaN would reach the sums).
    bfloat16::input_planes(tower.kernel, planes, pl, &mut bf.input.data, ps, &mut bf.planes);
    let xs = tower.input.out_stride();
    bf.x.prepare(rows, xs);
    x.prepare(n * PAD_SIZE, fs);
    let out = Outputs {
        bf16: Some(&mut bf.x.data),
        f32: Some((&mut x.data, fs)),
        residual: false,
        relu: true,
    };
    layer(&tower.input, tower.kernel, &bf.input.data, n, out, &mut bf.sums);
    for (conv1, conv2) in &tower.blocks {
        bf.y.prepare(rows, conv1.out_stride());
        let out = Outputs { bf16: Some(&mut bf.y.data), f32: None, residual: false, relu: true };
        layer(conv1, tower.kernel, &bf.x.data, n, out, &mut bf.sums);
        // x = relu(x + conv2(y)): the f32 residual stream, and its bfloat16 copy for the next
        // block.
        let out = Outputs {
            bf16: Some(&mut bf.x.data),
            f32: Some((&mut x.data, fs)),
            residual: true,
            relu: true,
        };
        layer(conv2, tower.kernel, &bf.y.data, n, out, &mut bf.sums);
    }
}

/// The padded-board rows of the interior points of `n` positions, in order, into `rows`, and
/// `0, 1, 2, …` for at least as many into `ident` (rows of dense buffers).
fn board_rows(n: usize, rows: &mut Vec<usize>, ident: &mut Vec<usize>) {
    rows.clear();
    rows.extend((0..n).flat_map(|i| (0..PLANE_SIZE).map(move |sq| padded_row(i, sq))));
    if ident.len() < n * PLANE_SIZE {
        ident.clear();
        ident.extend(0..n * PLANE_SIZE);
    }
}

/// Copies `[n, c, 10, 9]` planes onto the zero-bordered board, channels-last with `stride`.
#[inline(always)]
fn to_padded(planes: &[f32], c: usize, buf: &mut Buf, stride: usize) {
    let n = planes.len() / (c * PLANE_SIZE);
    buf.prepare(n * PAD_SIZE, stride);
    for (i, position) in planes.chunks_exact(c * PLANE_SIZE).enumerate() {
        let board = &mut buf.data[i * PAD_SIZE * stride..(i + 1) * PAD_SIZE * stride];
        for rank in 0..PLANE_RANKS {
            for file in 0..PLANE_FILES {
                let sq = rank * PLANE_FILES + file;
                let row = (rank + 1) * PAD_FILES + file + 1;
                let dst = &mut board[row * stride..row * stride + c];
                for (d, &v) in dst.iter_mut().zip(position[sq..].iter().step_by(PLANE_SIZE)) {
                    *d = v;
                }
            }
        }
    }
}

/// One chunk's forward pass, compiled once per instruction set.
struct Chunk<'a> {
    net: &'a HostNet,
    /// The bfloat16 tower, when the call asks for it.
    tower: Option<&'a Bf16Tower>,
    planes: &'a [f32],
    policy: PolicyOut<'a>,
    wdl: &'a mut [f32],
    scratch: &'a mut Scratch,
}

impl WithSimd for Chunk<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Chunk { net, tower, planes, policy, wdl, scratch: s } = self;
        let pl = net.planes;
        let n = planes.len() / (pl * PLANE_SIZE);
        let f = net.filters;
        let fs = round_up(f, ALIGN);
        let padded_rows = n * PAD_SIZE;

        board_rows(n, &mut s.rows, &mut s.ident);
        let rows = &s.rows[..];
        #[cfg(target_arch = "x86_64")]
        let on_bf16 = match tower {
            Some(tower) => {
                bf16_tower(tower, planes, pl, &mut s.bf, &mut s.x, fs);
                true
            }
            None => false,
        };
        #[cfg(not(target_arch = "x86_64"))]
        let on_bf16 = {
            debug_assert!(tower.is_none());
            false
        };
        if !on_bf16 {
            // The planes, channels-last on the padded board.
            to_padded(planes, pl, &mut s.input, pl);
            s.x.prepare(padded_rows, fs);
            let io = Io { rows, out_rows: rows, store: fs, relu: true, accumulate: false };
            layer(simd, &net.input, &s.input.data, pl, &mut s.x.data, fs, io);

            for block in &net.tower {
                let ys = round_up(block.conv1.cout, ALIGN);
                s.y.prepare(padded_rows, ys);
                let io = Io { rows, out_rows: rows, store: ys, relu: true, accumulate: false };
                let (p, w) = (&block.conv1, block.winograd[0].as_ref());
                let bufs = (&mut s.wv, &mut s.wm);
                tower_conv(simd, p, w, (&s.x.data, fs), (&mut s.y.data, ys), io, n, bufs, &s.ident);
                if let Some((g, fc)) = &block.pool {
                    pool_bias(
                        simd,
                        &mut s.y,
                        &mut s.feat,
                        &mut s.gate,
                        rows,
                        n,
                        f,
                        *g,
                        fc,
                        &s.ident,
                    );
                }
                match &block.se {
                    None => {
                        // x = relu(x + conv2(y)), in place.
                        let io =
                            Io { rows, out_rows: rows, store: fs, relu: true, accumulate: true };
                        let (p, w) = (&block.conv2, block.winograd[1].as_ref());
                        let bufs = (&mut s.wv, &mut s.wm);
                        let out = (&mut s.x.data[..], fs);
                        tower_conv(simd, p, w, (&s.y.data, ys), out, io, n, bufs, &s.ident);
                    }
                    Some((fc1, fc2)) => {
                        s.z.prepare(padded_rows, fs);
                        let io =
                            Io { rows, out_rows: rows, store: fs, relu: false, accumulate: false };
                        let (p, w) = (&block.conv2, block.winograd[1].as_ref());
                        let bufs = (&mut s.wv, &mut s.wm);
                        let out = (&mut s.z.data[..], fs);
                        tower_conv(simd, p, w, (&s.y.data, ys), out, io, n, bufs, &s.ident);
                        let b = SeBuffers {
                            x: &mut s.x,
                            z: &s.z,
                            mean: &mut s.feat,
                            hidden: &mut s.hidden,
                            gate: &mut s.gate,
                        };
                        squeeze_excite(simd, b, rows, &s.ident, n, f, fc1, fc2);
                    }
                }
            }
        }

        // Heads: 1 × 1 convolutions into dense `[n · 90, c]` rows, then the linear layers
        // with one row per position.
        let ident = &s.ident[..];
        let pc = net.policy_conv.cout;
        s.policy.prepare(n * PLANE_SIZE, pc);
        let io = Io { rows, out_rows: ident, store: pc, relu: true, accumulate: false };
        layer(simd, &net.policy_conv, &s.x.data, fs, &mut s.policy.data, pc, io);
        match policy {
            PolicyOut::All(policy) => {
                let io = Io {
                    rows: &ident[..n],
                    out_rows: ident,
                    store: net.policy_size,
                    relu: false,
                    accumulate: false,
                };
                let k = pc * PLANE_SIZE;
                layer(simd, &net.policy_fc, &s.policy.data, k, policy, net.policy_size, io);
            }
            PolicyOut::Chosen { offsets, indices, logits } => {
                let features = &s.policy.data[..n * pc * PLANE_SIZE];
                chosen_outputs(simd, &net.policy_rows, features, offsets, indices, logits);
            }
        }

        let vc = net.value_conv.cout;
        s.value.prepare(n * PLANE_SIZE, vc);
        let io = Io { rows, out_rows: ident, store: vc, relu: true, accumulate: false };
        layer(simd, &net.value_conv, &s.x.data, fs, &mut s.value.data, vc, io);
        let hidden = net.value_fc1.cout;
        s.hidden.prepare(n, hidden);
        let io =
            Io { rows: &ident[..n], out_rows: ident, store: hidden, relu: true, accumulate: false };
        layer(simd, &net.value_fc1, &s.value.data, vc * PLANE_SIZE, &mut s.hidden.data, hidden, io);
        let io =
            Io { rows: &ident[..n], out_rows: ident, store: 3, relu: false, accumulate: false };
        layer(simd, &net.value_fc2, &s.hidden.data, hidden, wdl, 3, io);
    }
}

/// Global pooling: the means and maxima of the pooled channels `f..f + g` of `y` over the
/// board, through `fc`, added to channels `0..f` at every point.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pool_bias<S: Simd>(
    simd: S,
    y: &mut Buf,
    feat: &mut Buf,
    bias: &mut Buf,
    rows: &[usize],
    n: usize,
    f: usize,
    g: usize,
    fc: &Packed,
    ident: &[usize],
) {
    let ys = y.stride;
    feat.prepare(n, 2 * g);
    for i in 0..n {
        let out = &mut feat.data[i * 2 * g..(i + 1) * 2 * g];
        let (mean, max) = out.split_at_mut(g);
        mean.fill(0.0);
        max.fill(f32::NEG_INFINITY);
        for &r in &rows[i * PLANE_SIZE..(i + 1) * PLANE_SIZE] {
            let v = &y.data[r * ys + f..r * ys + f + g];
            for j in 0..g {
                mean[j] += v[j];
                // A NaN wins (`f32::max` would drop it).
                max[j] = if v[j] > max[j] || v[j].is_nan() { v[j] } else { max[j] };
            }
        }
        for m in mean.iter_mut() {
            *m /= PLANE_SIZE as f32;
        }
    }
    bias.prepare(n, f);
    let io = Io { rows: &ident[..n], out_rows: ident, store: f, relu: false, accumulate: false };
    layer(simd, fc, &feat.data, 2 * g, &mut bias.data, f, io);
    for i in 0..n {
        let b = &bias.data[i * f..(i + 1) * f];
        for &r in &rows[i * PLANE_SIZE..(i + 1) * PLANE_SIZE] {
            for (v, &b) in y.data[r * ys..r * ys + f].iter_mut().zip(b) {
                *v += b;
            }
        }
    }
}

/// The buffers [`squeeze_excite`] works in.
struct SeBuffers<'a> {
    x: &'a mut Buf,
    z: &'a Buf,
    mean: &'a mut Buf,
    hidden: &'a mut Buf,
    gate: &'a mut Buf,
}

/// Squeeze-excitation on `z` (the block's second convolution), then `x = relu(x + z · gate +
/// shift)`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn squeeze_excite<S: Simd>(
    simd: S,
    b: SeBuffers<'_>,
    rows: &[usize],
    ident: &[usize],
    n: usize,
    f: usize,
    fc1: &Packed,
    fc2: &Packed,
) {
    let fs = b.x.stride;
    b.mean.prepare(n, f);
    for i in 0..n {
        let m = &mut b.mean.data[i * f..(i + 1) * f];
        m.fill(0.0);
        for &r in &rows[i * PLANE_SIZE..(i + 1) * PLANE_SIZE] {
            for (a, &v) in m.iter_mut().zip(&b.z.data[r * fs..r * fs + f]) {
                *a += v;
            }
        }
        for a in m.iter_mut() {
            *a /= PLANE_SIZE as f32;
        }
    }
    let h = fc1.cout;
    b.hidden.prepare(n, h);
    let io = Io { rows: &ident[..n], out_rows: ident, store: h, relu: true, accumulate: false };
    layer(simd, fc1, &b.mean.data, f, &mut b.hidden.data, h, io);
    b.gate.prepare(n, 2 * f);
    let io =
        Io { rows: &ident[..n], out_rows: ident, store: 2 * f, relu: false, accumulate: false };
    layer(simd, fc2, &b.hidden.data, h, &mut b.gate.data, 2 * f, io);
    for i in 0..n {
        let t = &b.gate.data[i * 2 * f..(i + 1) * 2 * f];
        let (gate, shift) = t.split_at(f);
        for &r in &rows[i * PLANE_SIZE..(i + 1) * PLANE_SIZE] {
            let z = &b.z.data[r * fs..r * fs + f];
            let x = &mut b.x.data[r * fs..r * fs + f];
            for j in 0..f {
                let g = 1.0 / (1.0 + (-gate[j]).exp());
                let y = x[j] + z[j] * g + shift[j];
                x[j] = if y < 0.0 { 0.0 } else { y }; // a NaN stays NaN
            }
        }
    }
}

/// A tower convolution of `n` positions on the zero-bordered board: by Winograd's algorithm where
/// the block has it packed so (`w`), else by [`layer`] with `p`; `io` as [`layer`] takes it.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn tower_conv<S: Simd>(
    simd: S,
    p: &Packed,
    w: Option<&Winograd>,
    (input, in_stride): (&[f32], usize),
    (out, out_stride): (&mut [f32], usize),
    io: Io<'_>,
    n: usize,
    bufs: (&mut Buf, &mut Buf),
    ident: &[usize],
) {
    match w {
        Some(w) => w.run(simd, input, in_stride, n, out, out_stride, io, bufs, ident),
        None => layer(simd, p, input, in_stride, out, out_stride, io),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The layer computed by definition, in f64.
    fn reference(
        p: &Packed,
        matrix: &[f32],
        bias: &[f32],
        input: &[f32],
        in_stride: usize,
        rows: &[usize],
    ) -> Vec<f64> {
        let mut out = Vec::new();
        for &row in rows {
            for o in 0..p.cout {
                let mut s = f64::from(bias[o]);
                for (t, &tap) in p.taps.iter().enumerate() {
                    let r = row.wrapping_add_signed(tap);
                    for c in 0..p.cin {
                        s += f64::from(input[r * in_stride + c])
                            * f64::from(matrix[(t * p.cin + c) * p.cout + o]);
                    }
                }
                out.push(s);
            }
        }
        out
    }

    pub(crate) fn noise(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x as f32 / u32::MAX as f32) * 2.0 - 1.0
            })
            .collect()
    }

    struct Op<'a> {
        p: &'a Packed,
        input: &'a [f32],
        in_stride: usize,
        out: &'a mut [f32],
        out_stride: usize,
        rows: &'a [usize],
        out_rows: &'a [usize],
        store: usize,
        relu: bool,
        accumulate: bool,
    }

    impl WithSimd for Op<'_> {
        type Output = ();
        fn with_simd<S: Simd>(self, simd: S) {
            let io = Io {
                rows: self.rows,
                out_rows: self.out_rows,
                store: self.store,
                relu: self.relu,
                accumulate: self.accumulate,
            };
            layer(simd, self.p, self.input, self.in_stride, self.out, self.out_stride, io);
        }
    }

    /// Output channel counts with partial vectors and several strips, row counts that leave
    /// partial tiles, dense layers and 3 × 3 convolutions of several widths, with and without
    /// the residual sum and the ReLU, with the vector and the scalar code: all against the
    /// definition.
    #[test]
    fn the_kernel_computes_the_layer_by_its_definition() {
        let conv = vec![-12isize, -11, -10, -1, 0, 1, 10, 11, 12];
        let shapes = [(vec![0isize], 37usize), (conv.clone(), 5), (vec![0], 300), (conv, 40)];
        for cout in [1, 3, 16, 24, 31, 48, 64, 65, 70] {
            for (taps, cin) in &shapes {
                let (taps, cin) = (taps.clone(), *cin);
                let k = taps.len() * cin;
                let matrix = noise(k * cout, cout as u32);
                let bias = noise(cout, 7 + cout as u32);
                let p = Packed::new(taps.clone(), cin, cout, &matrix, &bias);
                let scalar_p = Packed::with_shape(taps.clone(), cin, cout, &matrix, &bias, 1, 16);
                let in_stride = cin + 3;
                let input = noise(40 * in_stride, 3);
                let rows: Vec<usize> = (12..12 + 13).collect();
                let expect = reference(&p, &matrix, &bias, &input, in_stride, &rows);
                let out_rows: Vec<usize> = (0..rows.len()).collect();
                let out_stride = cout + 2;
                let held = noise(rows.len() * out_stride, 11);
                for (scalar, residual) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let mut out = vec![f32::NAN; rows.len() * out_stride];
                    if residual {
                        for (j, _) in rows.iter().enumerate() {
                            for o in 0..cout {
                                out[j * out_stride + o] = held[j * out_stride + o];
                            }
                        }
                    }
                    let op = Op {
                        p: if scalar { &scalar_p } else { &p },
                        input: &input,
                        in_stride,
                        out: &mut out,
                        out_stride,
                        rows: &rows,
                        out_rows: &out_rows,
                        store: cout,
                        relu: residual,
                        accumulate: residual,
                    };
                    if scalar {
                        op.with_simd(pulp::Scalar::new());
                    } else {
                        Arch::new().dispatch(op);
                    }
                    for (j, _) in rows.iter().enumerate() {
                        for o in 0..cout {
                            let got = f64::from(out[j * out_stride + o]);
                            let mut want = expect[j * cout + o];
                            if residual {
                                want = (want + f64::from(held[j * out_stride + o])).max(0.0);
                            }
                            assert!(
                                (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                                "cout {cout}, {} taps of {cin}, row {j}, column {o} \
                                 (scalar {scalar}, residual {residual}): {got} vs {want}",
                                taps.len()
                            );
                        }
                        // Columns beyond `store` are not written.
                        assert!(out[j * out_stride + cout].is_nan());
                    }
                }
            }
        }
    }

    #[test]
    fn chunks_are_balanced_across_threads() {
        // (positions, most per chunk, threads) → chunk size.
        assert_eq!(balanced_chunk(64, 24, 2), 16); // 4 chunks of 16, not 24 + 24 + 16
        assert_eq!(balanced_chunk(256, 24, 2), 22); // 12 chunks: 11 of 22 and one of 14
        assert_eq!(balanced_chunk(48, 24, 2), 24);
        assert_eq!(balanced_chunk(10, 24, 2), 5);
        assert_eq!(balanced_chunk(7, 24, 1), 7);
        assert_eq!(balanced_chunk(100, 24, 1), 24);
        assert_eq!(balanced_chunk(1, 24, 2), 1);
        assert_eq!(balanced_chunk(0, 24, 2), 1);
        for n in 1..300 {
            for threads in 1..5 {
                let c = balanced_chunk(n, 24, threads);
                assert!((1..=24).contains(&c), "{n} {threads}: {c}");
            }
        }
    }
}
