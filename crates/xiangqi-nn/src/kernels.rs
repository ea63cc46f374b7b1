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
//! * **Kernel.** One register-blocked matrix product, `out[r] = Σ_taps Σ_c in[row_r + tap][c] ·
//!   W[tap, c]`, over a tile of `MR` output rows by `NV` SIMD vectors of output channels (5 × 64
//!   channels or 8 × 32 with AVX-512), the input broadcast one value at a time and the
//!   weights pre-packed in strips one tile wide. The bias, the residual sum and the ReLU are
//!   applied to the tile in registers before it is stored (the GEMM's epilogue). The same
//!   kernel runs the 1 × 1 convolutions of the heads (one tap) and the linear layers (one tap,
//!   a row per position).
//! * **SIMD** comes from `pulp`, which detects AVX-512 or AVX2 + FMA at run time and compiles
//!   the whole chunk's computation once per instruction set (no `unsafe` in this crate); other
//!   CPUs get a scalar build of the same code.
//! * **Threads.** A batch is split into about equal chunks of positions, as many as a multiple
//!   of the rayon pool's threads and none larger than the net's chunk size, run in parallel on
//!   the pool, each in its thread's own scratch buffers.
//!
//! The outputs equal burn's folded forward pass up to the rounding of a different summation
//! order (tested within 1e-4 on random nets and real positions of both games).
//!
//! **Training.** `board_conv3x3` takes and returns burn's `[n, c, 10, 9]` layout: each chunk
//! of positions is copied onto the padded channels-last board, run through the same kernel
//! (no bias, no ReLU) and copied back. The input gradient is the same convolution of the output
//! gradient with the flipped, transposed weights. The weight gradient is a matrix product whose
//! long dimension is the board points: SIMD vectors along one kernel row's three taps of input
//! channels (consecutive floats on the padded board) by tiles of output channels broadcast
//! from the gradient, summed in registers over a chunk's points, the chunks' sums added at the
//! end. Batch normalisation sums each board in `f32` lanes and the boards in `f64`. All of
//! them equal burn's operations within 1e-4 (`train_ops`' tests), and the convolutions their
//! definitions with every instruction set (this module's tests).

use std::cell::RefCell;

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;
use xiangqi::env::{PLANE_FILES, PLANE_RANKS, PLANE_SIZE};

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
    /// Global pooling: pooled channels and the linear layer of their means and maxima.
    pub(crate) pool: Option<(usize, Packed)>,
    /// Squeeze-excitation: its two linear layers.
    pub(crate) se: Option<(Packed, Packed)>,
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
    pub(crate) value_fc1: Packed,
    pub(crate) value_fc2: Packed,
}

impl HostNet {
    /// Runs the network on `planes` (`[B, planes, 10, 9]` flattened), writing the policy logits
    /// (`[B, policy_size]`) and WDL logits (`[B, 3]`). Chunks of at most `chunk` positions, as
    /// many as a multiple of the rayon pool's threads, run in parallel on it.
    pub(crate) fn forward_into(
        &self,
        planes: &[f32],
        policy: &mut [f32],
        wdl: &mut [f32],
        chunk: usize,
    ) {
        let input = self.planes * PLANE_SIZE;
        let n = planes.len() / input;
        debug_assert_eq!(planes.len(), n * input);
        debug_assert_eq!(policy.len(), n * self.policy_size);
        debug_assert_eq!(wdl.len(), n * 3);
        let run = |planes: &[f32], policy: &mut [f32], wdl: &mut [f32]| {
            SCRATCH.with(|s| {
                let scratch = &mut s.borrow_mut();
                Arch::new().dispatch(Chunk { net: self, planes, policy, wdl, scratch });
            });
        };
        let threads = rayon::current_num_threads().max(1);
        let chunk = balanced_chunk(n, chunk, threads);
        if n <= chunk {
            run(planes, policy, wdl);
        } else {
            planes
                .par_chunks(chunk * input)
                .zip(policy.par_chunks_mut(chunk * self.policy_size))
                .zip(wdl.par_chunks_mut(chunk * 3))
                .for_each(|((p, po), w)| run(p, po, w));
        }
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
    /// Small per-position vectors: pooled features, squeeze-excitation.
    feat: Buf,
    gate: Buf,
    policy: Buf,
    value: Buf,
    hidden: Buf,
}

/// One chunk's forward pass, compiled once per instruction set.
struct Chunk<'a> {
    net: &'a HostNet,
    planes: &'a [f32],
    policy: &'a mut [f32],
    wdl: &'a mut [f32],
    scratch: &'a mut Scratch,
}

impl WithSimd for Chunk<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Chunk { net, planes, policy, wdl, scratch: s } = self;
        let pl = net.planes;
        let n = planes.len() / (pl * PLANE_SIZE);
        let f = net.filters;
        let fs = round_up(f, ALIGN);
        let padded_rows = n * PAD_SIZE;

        s.rows.clear();
        s.rows.extend((0..n).flat_map(|i| (0..PLANE_SIZE).map(move |sq| padded_row(i, sq))));
        if s.ident.len() < n * PLANE_SIZE {
            s.ident.clear();
            s.ident.extend(0..n * PLANE_SIZE);
        }

        // The planes, channels-last on the padded board.
        s.input.prepare(padded_rows, pl);
        for (i, position) in planes.chunks_exact(pl * PLANE_SIZE).enumerate() {
            for (c, plane) in position.chunks_exact(PLANE_SIZE).enumerate() {
                for (sq, &v) in plane.iter().enumerate() {
                    s.input.data[padded_row(i, sq) * pl + c] = v;
                }
            }
        }
        let rows = &s.rows[..];
        s.x.prepare(padded_rows, fs);
        let io = Io { rows, out_rows: rows, store: fs, relu: true, accumulate: false };
        layer(simd, &net.input, &s.input.data, pl, &mut s.x.data, fs, io);

        for block in &net.tower {
            let ys = round_up(block.conv1.cout, ALIGN);
            s.y.prepare(padded_rows, ys);
            let io = Io { rows, out_rows: rows, store: ys, relu: true, accumulate: false };
            layer(simd, &block.conv1, &s.x.data, fs, &mut s.y.data, ys, io);
            if let Some((g, fc)) = &block.pool {
                pool_bias(simd, &mut s.y, &mut s.feat, &mut s.gate, rows, n, f, *g, fc, &s.ident);
            }
            match &block.se {
                None => {
                    // x = relu(x + conv2(y)), in place.
                    let io = Io { rows, out_rows: rows, store: fs, relu: true, accumulate: true };
                    layer(simd, &block.conv2, &s.y.data, ys, &mut s.x.data, fs, io);
                }
                Some((fc1, fc2)) => {
                    s.z.prepare(padded_rows, fs);
                    let io = Io { rows, out_rows: rows, store: fs, relu: false, accumulate: false };
                    layer(simd, &block.conv2, &s.y.data, ys, &mut s.z.data, fs, io);
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

        // Heads: 1 × 1 convolutions into dense `[n · 90, c]` rows, then the linear layers
        // with one row per position.
        let ident = &s.ident[..];
        let pc = net.policy_conv.cout;
        s.policy.prepare(n * PLANE_SIZE, pc);
        let io = Io { rows, out_rows: ident, store: pc, relu: true, accumulate: false };
        layer(simd, &net.policy_conv, &s.x.data, fs, &mut s.policy.data, pc, io);
        let io = Io {
            rows: &ident[..n],
            out_rows: ident,
            store: net.policy_size,
            relu: false,
            accumulate: false,
        };
        layer(simd, &net.policy_fc, &s.policy.data, pc * PLANE_SIZE, policy, net.policy_size, io);

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

/// Where a layer reads and writes.
#[derive(Clone, Copy)]
struct Io<'a> {
    /// Input row (before the taps' offsets) of each output row.
    rows: &'a [usize],
    /// Output row of each output row, `out_rows[j]` for the `j`-th of `rows`.
    out_rows: &'a [usize],
    /// Columns stored of each output row (the rest of the stride is left as it is).
    store: usize,
    /// ReLU before the store.
    relu: bool,
    /// Adds the output's current values (the residual) before the ReLU.
    accumulate: bool,
}

/// `out[out_rows[j]] = act(Σ_t Σ_c input[rows[j] + taps[t]][c] · W[t, c] + bias (+ out))` for
/// every `j`, as register tiles of output rows by SIMD vectors of columns.
///
/// # Panics
/// If `p` was packed for another SIMD width than `S`'s (the instruction set is detected the
/// same way for packing and running, so never in practice).
#[inline(always)]
fn layer<S: Simd>(
    simd: S,
    p: &Packed,
    input: &[f32],
    in_stride: usize,
    out: &mut [f32],
    out_stride: usize,
    io: Io<'_>,
) {
    assert_eq!(p.lanes, S::F32_LANES, "weights packed for another SIMD width");
    let k = p.taps.len() * p.cin;
    let wide = S::REGISTER_COUNT >= 32;
    let mut offset = 0;
    for &(col0, nv) in &p.strips {
        let width = nv * S::F32_LANES;
        let strip = Strip { weights: &p.weight[offset..offset + k * width], col0 };
        offset += k * width;
        macro_rules! run {
            ($mr:literal, $nv:literal) => {
                tiles::<S, $mr, $nv>(simd, p, strip, input, in_stride, out, out_stride, io)
            };
        }
        match (wide, nv) {
            // Tile heights measured on AVX-512 (2 cores): 5 × 4 beat 4 × 4 by about 10 % and
            // 6 × 4 by 20 % for 64 channels; 8 × 2 beat 6 × 2 by about 5 % for 24.
            (true, 4) => run!(5, 4),
            (true, 3) => run!(8, 3),
            (true, 2) => run!(8, 2),
            (true, _) => run!(12, 1),
            (false, 4) => run!(4, 4),
            (false, 3) => run!(4, 3),
            (false, 2) => run!(6, 2),
            (false, _) => run!(8, 1),
        }
    }
}

/// One strip of output columns: its packed weights and first column.
#[derive(Clone, Copy)]
struct Strip<'a> {
    /// `[taps · cin, NV · lanes]`.
    weights: &'a [f32],
    col0: usize,
}

/// `acc[r] += Σ_c src[r][c] · w[c]` for the `MR` rows of a tile: `src[r]` holds the row's
/// channels, `w` one row of `width = NV · lanes` weights per channel.
#[inline(always)]
fn accumulate<S: Simd, const MR: usize, const NV: usize>(
    simd: S,
    mut acc: [[S::f32s; NV]; MR],
    src: &[&[f32]; MR],
    w: &[f32],
    width: usize,
) -> [[S::f32s; NV]; MR] {
    let len = w.len() / width;
    // Four channels at a time through fixed-size views: no bounds check inside.
    let mut c = 0;
    while c + 4 <= len {
        let mut a4: [&[f32; 4]; MR] = [&[0.0; 4]; MR];
        for r in 0..MR {
            a4[r] = src[r][c..c + 4].try_into().expect("4 floats");
        }
        let w4 = &w[c * width..(c + 4) * width];
        for cc in 0..4 {
            let (wv, _) = S::as_simd_f32s(&w4[cc * width..(cc + 1) * width]);
            let wv: &[S::f32s; NV] = wv.try_into().expect("NV vectors");
            for r in 0..MR {
                let a = simd.splat_f32s(a4[r][cc]);
                for v in 0..NV {
                    acc[r][v] = simd.mul_add_f32s(a, wv[v], acc[r][v]);
                }
            }
        }
        c += 4;
    }
    for c in c..len {
        let (wv, _) = S::as_simd_f32s(&w[c * width..(c + 1) * width]);
        let wv: &[S::f32s; NV] = wv.try_into().expect("NV vectors");
        for r in 0..MR {
            let a = simd.splat_f32s(src[r][c]);
            for v in 0..NV {
                acc[r][v] = simd.mul_add_f32s(a, wv[v], acc[r][v]);
            }
        }
    }
    acc
}

/// All row tiles of one strip of `NV` vectors of output columns.
// Index loops of constant bounds on purpose: with iterators over `acc` LLVM kept the sums on
// the stack (a store after every FMA, half the speed; see experiments/2026-12-01-cpu-kernels).
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
#[inline(always)]
fn tiles<S: Simd, const MR: usize, const NV: usize>(
    simd: S,
    p: &Packed,
    strip: Strip<'_>,
    input: &[f32],
    in_stride: usize,
    out: &mut [f32],
    out_stride: usize,
    io: Io<'_>,
) {
    let lanes = S::F32_LANES;
    let width = NV * lanes;
    let col0 = strip.col0;
    let (bv, _) = S::as_simd_f32s(&p.bias[col0..col0 + width]);
    let bv: &[S::f32s; NV] = bv.try_into().expect("NV vectors");
    let zero = simd.splat_f32s(0.0);
    let cin = p.cin;
    let total = io.rows.len();
    // The columns of vector `v` that are stored: `col..col + len`, none when `len` is 0.
    let stored = |v: usize| {
        let col = col0 + v * lanes;
        (col, io.store.saturating_sub(col).min(lanes))
    };
    let mut r0 = 0;
    while r0 < total {
        let m = (total - r0).min(MR);
        // Rows past the end repeat the last row: computed, never stored. (Every loop over the
        // tile's rows runs over all MR with constant bounds and no conditional write to `acc`,
        // which keeps `acc` in registers.)
        let mut base = [0usize; MR];
        for (r, b) in base.iter_mut().enumerate() {
            *b = io.rows[r0 + r.min(m - 1)] * in_stride;
        }
        // The bias, and the residual held in the output.
        let mut acc = [*bv; MR];
        if io.accumulate {
            for r in 0..MR {
                let start = io.out_rows[r0 + r.min(m - 1)] * out_stride;
                for v in 0..NV {
                    let (col, len) = stored(v);
                    let held = simd.partial_load_f32s(&out[start + col..start + col + len]);
                    acc[r][v] = simd.add_f32s(acc[r][v], held);
                }
            }
        }
        for (t, &tap) in p.taps.iter().enumerate() {
            let off = tap * in_stride as isize;
            let mut src: [&[f32]; MR] = [&[]; MR];
            for r in 0..MR {
                let start = base[r].wrapping_add_signed(off);
                src[r] = &input[start..start + cin];
            }
            let w = &strip.weights[t * cin * width..(t + 1) * cin * width];
            acc = accumulate(simd, acc, &src, w, width);
        }
        for r in 0..MR {
            if r >= m {
                break;
            }
            let start = io.out_rows[r0 + r] * out_stride;
            for v in 0..NV {
                let (col, len) = stored(v);
                if len == 0 {
                    break;
                }
                let a = acc[r][v];
                // `max(0, a)`: x86's max returns its second operand when one is NaN, so a NaN
                // stays NaN (as in burn) and the evaluator's NaN fallback still sees it.
                let value = if io.relu { simd.max_f32s(zero, a) } else { a };
                simd.partial_store_f32s(&mut out[start + col..start + col + len], value);
            }
        }
        r0 += m;
    }
}

// ---------------------------------------------------------------------------------------------
// Training: the board's 3 × 3 convolution and its two gradients, through the same
// register-tiled kernel, and batch normalisation with its gradients; all on burn's
// `[n, c, 10, 9]` layout.

/// Positions in one parallel chunk of a training convolution.
const TRAIN_CHUNK: usize = 16;

thread_local! {
    static CONV_SCRATCH: RefCell<ConvScratch> = RefCell::new(ConvScratch::default());
}

/// One thread's buffers for the training convolutions, reused across calls.
#[derive(Debug, Default)]
struct ConvScratch {
    rows: Vec<usize>,
    ident: Vec<usize>,
    /// The input, channels-last on the zero-bordered board.
    input: Buf,
    /// The output (or the gradient), channels-last, a dense row per board point.
    out: Buf,
}

impl ConvScratch {
    /// The interior rows of `n` positions, and `0, 1, 2, …` for as many.
    fn rows(&mut self, n: usize) {
        self.rows.clear();
        self.rows.extend((0..n).flat_map(|i| (0..PLANE_SIZE).map(move |sq| padded_row(i, sq))));
        if self.ident.len() < n * PLANE_SIZE {
            self.ident.clear();
            self.ident.extend(0..n * PLANE_SIZE);
        }
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

/// Copies dense channels-last rows (`[n · 90, stride]`, the first `c` columns) into `[n, c, 10,
/// 9]` planes.
#[inline(always)]
fn from_rows(rows: &[f32], stride: usize, c: usize, planes: &mut [f32]) {
    for (i, position) in planes.chunks_exact_mut(c * PLANE_SIZE).enumerate() {
        let rows = &rows[i * PLANE_SIZE * stride..(i + 1) * PLANE_SIZE * stride];
        for (sq, row) in rows.chunks_exact(stride).enumerate() {
            for (d, &v) in position[sq..].iter_mut().step_by(PLANE_SIZE).zip(&row[..c]) {
                *d = v;
            }
        }
    }
}

/// Copies `[n, c, 10, 9]` planes into dense channels-last rows (`[n · 90, stride]`, the first
/// `c` columns).
#[inline(always)]
fn to_rows(planes: &[f32], c: usize, rows: &mut [f32], stride: usize) {
    for (i, position) in planes.chunks_exact(c * PLANE_SIZE).enumerate() {
        let rows = &mut rows[i * PLANE_SIZE * stride..(i + 1) * PLANE_SIZE * stride];
        for (sq, row) in rows.chunks_exact_mut(stride).enumerate() {
            for (d, &v) in row[..c].iter_mut().zip(position[sq..].iter().step_by(PLANE_SIZE)) {
                *d = v;
            }
        }
    }
}

/// From the weights `W` (`[cout, cin, 3, 3]`) of a convolution, those of the convolution that
/// computes its input gradient: `W'[i, o, y, x] = W[o, i, 2 − y, 2 − x]` (`[cin, cout, 3, 3]`).
fn flipped_transpose(weight: &[f32], cout: usize, cin: usize) -> Vec<f32> {
    let mut w = vec![0.0; weight.len()];
    for o in 0..cout {
        for i in 0..cin {
            for t in 0..9 {
                w[(i * cout + o) * 9 + (8 - t)] = weight[(o * cin + i) * 9 + t];
            }
        }
    }
    w
}

/// The 3 × 3 convolution with zero padding of one board, stride 1, no bias, that burn's
/// `conv2d` computes with padding 1: `y[b, o, p] = Σ_i Σ_t W[o, i, t] · x[b, i, p + d_t]`.
///
/// # Shapes
/// `x`: `[n, cin, 10, 9]`, `weight`: `[cout, cin, 3, 3]` → `[n, cout, 10, 9]`, all flattened
/// row-major.
///
/// # Panics
/// If the lengths do not match those shapes.
pub(crate) fn board_conv3x3(x: &[f32], weight: &[f32], cin: usize, cout: usize) -> Vec<f32> {
    assert!(cin > 0 && cout > 0 && x.len().is_multiple_of(cin * PLANE_SIZE), "input shape");
    assert_eq!(weight.len(), cout * cin * 9, "weight shape");
    let n = x.len() / (cin * PLANE_SIZE);
    let p = Packed::conv(weight, &vec![0.0; cout], [cout, cin, 3, 3]);
    let mut out = vec![0.0; n * cout * PLANE_SIZE];
    let chunk = balanced_chunk(n, TRAIN_CHUNK, rayon::current_num_threads().max(1));
    let run = |x: &[f32], out: &mut [f32]| {
        CONV_SCRATCH.with(|s| {
            let scratch = &mut s.borrow_mut();
            Arch::new().dispatch(ConvChunk { p: &p, x, out, scratch });
        });
    };
    if n <= chunk {
        run(x, &mut out);
    } else {
        x.par_chunks(chunk * cin * PLANE_SIZE)
            .zip(out.par_chunks_mut(chunk * cout * PLANE_SIZE))
            .for_each(|(x, o)| run(x, o));
    }
    out
}

/// The gradient of [`board_conv3x3`]'s output with respect to its input: the convolution of
/// `grad` (`[n, cout, 10, 9]`) with the flipped, transposed weights, `[n, cin, 10, 9]`.
///
/// # Panics
/// If the lengths do not match those shapes.
pub(crate) fn board_conv3x3_input_grad(
    grad: &[f32],
    weight: &[f32],
    cin: usize,
    cout: usize,
) -> Vec<f32> {
    assert_eq!(weight.len(), cout * cin * 9, "weight shape");
    board_conv3x3(grad, &flipped_transpose(weight, cout, cin), cout, cin)
}

/// The gradient of [`board_conv3x3`]'s output with respect to its weights:
/// `dW[o, i, t] = Σ_b Σ_p grad[b, o, p] · x[b, i, p + d_t]`, `[cout, cin, 3, 3]`.
///
/// For one kernel row `dy`, the inputs of its three taps at a board point are `3 · cin`
/// consecutive floats of the padded channels-last input (the point's left neighbour, itself and
/// its right neighbour), so the product runs with SIMD vectors along that run and output
/// channels broadcast from the gradient: `acc[dy][o][dx · cin + i] += grad[p][o] · x[p + (dy −
/// 1) · 11 − 1][dx · cin + i]`, summed in registers over a chunk's points.
///
/// # Panics
/// If the lengths do not match `x`: `[n, cin, 10, 9]` and `grad`: `[n, cout, 10, 9]`.
pub(crate) fn board_conv3x3_weight_grad(
    x: &[f32],
    grad: &[f32],
    cin: usize,
    cout: usize,
) -> Vec<f32> {
    assert!(cin > 0 && cout > 0 && x.len().is_multiple_of(cin * PLANE_SIZE), "input shape");
    let n = x.len() / (cin * PLANE_SIZE);
    assert_eq!(grad.len(), n * cout * PLANE_SIZE, "gradient shape");
    let (lanes, registers) = simd_shape();
    // The run of three taps' inputs, rounded up to whole vectors.
    let run_len = round_up(3 * cin, lanes);
    let size = 3 * cout * run_len;
    let chunk = balanced_chunk(n, TRAIN_CHUNK, rayon::current_num_threads().max(1));
    let run = |x: &[f32], g: &[f32]| {
        CONV_SCRATCH.with(|s| {
            let scratch = &mut s.borrow_mut();
            let mut acc = vec![0.0; size];
            let wide = registers >= 32 || lanes == 1;
            Arch::new().dispatch(WeightGrad {
                x,
                grad: g,
                cin,
                cout,
                run_len,
                wide,
                acc: &mut acc,
                scratch,
            });
            acc
        })
    };
    let acc = if n <= chunk {
        run(x, grad)
    } else {
        x.par_chunks(chunk * cin * PLANE_SIZE)
            .zip(grad.par_chunks(chunk * cout * PLANE_SIZE))
            .map(|(x, g)| run(x, g))
            .reduce_with(|mut a, b| {
                a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
                a
            })
            .unwrap_or_else(|| vec![0.0; size])
    };
    weight_grad_from_runs(&acc, cin, cout, run_len)
}

/// `acc[(dy · cout + o) · run_len + dx · cin + i]` → `dW`, `[cout, cin, 3, 3]`.
fn weight_grad_from_runs(acc: &[f32], cin: usize, cout: usize, run_len: usize) -> Vec<f32> {
    let mut dw = vec![0.0; cout * cin * 9];
    for dy in 0..3 {
        for o in 0..cout {
            let row = &acc[(dy * cout + o) * run_len..][..3 * cin];
            for dx in 0..3 {
                for i in 0..cin {
                    dw[(o * cin + i) * 9 + dy * 3 + dx] = row[dx * cin + i];
                }
            }
        }
    }
    dw
}

/// One chunk of [`board_conv3x3`], compiled once per instruction set.
struct ConvChunk<'a> {
    p: &'a Packed,
    x: &'a [f32],
    out: &'a mut [f32],
    scratch: &'a mut ConvScratch,
}

impl WithSimd for ConvChunk<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let ConvChunk { p, x, out, scratch: s } = self;
        let (cin, cout) = (p.cin, p.cout);
        let n = x.len() / (cin * PLANE_SIZE);
        s.rows(n);
        to_padded(x, cin, &mut s.input, cin);
        s.out.prepare(n * PLANE_SIZE, cout);
        let io =
            Io { rows: &s.rows, out_rows: &s.ident, store: cout, relu: false, accumulate: false };
        layer(simd, p, &s.input.data, cin, &mut s.out.data, cout, io);
        from_rows(&s.out.data[..n * PLANE_SIZE * cout], cout, cout, out);
    }
}

/// One chunk of [`board_conv3x3_weight_grad`], compiled once per instruction set.
struct WeightGrad<'a> {
    x: &'a [f32],
    grad: &'a [f32],
    cin: usize,
    cout: usize,
    /// `3 · cin` rounded up to the SIMD width: the rows of `acc`.
    run_len: usize,
    /// 32 vector registers (AVX-512) rather than 16, or the scalar build.
    wide: bool,
    /// `[3, cout, run_len]`.
    acc: &'a mut [f32],
    scratch: &'a mut ConvScratch,
}

impl WithSimd for WeightGrad<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let WeightGrad { x, grad, cin, cout, run_len, wide, acc, scratch: s } = self;
        let n = x.len() / (cin * PLANE_SIZE);
        s.rows(n);
        to_padded(x, cin, &mut s.input, cin);
        // A run read at the last point goes up to `run_len − 3 · cin` floats past its row's
        // neighbour: zero rows after the last board (never written) keep it in bounds.
        let slack = (run_len - 3 * cin).div_ceil(cin) + 1;
        s.input.prepare(n * PAD_SIZE + slack, cin);
        s.out.prepare(n * PLANE_SIZE, cout);
        to_rows(grad, cout, &mut s.out.data[..n * PLANE_SIZE * cout], cout);
        let g = WeightGradIo {
            input: &s.input.data,
            rows: &s.rows,
            cin,
            grad: &s.out.data[..n * PLANE_SIZE * cout],
            cout,
            run_len,
        };
        // Strips of at most five vectors (AVX-512) or two, as even as possible.
        let vectors = run_len / S::F32_LANES;
        let most = if wide { 5 } else { 2 };
        let strips = vectors.div_ceil(most);
        let per = vectors.div_ceil(strips);
        let mut v0 = 0;
        while v0 < vectors {
            let nv = (vectors - v0).min(per);
            macro_rules! run {
                ($mr:literal, $nv:literal) => {
                    weight_grad_strip::<S, $mr, $nv>(simd, g, v0, acc)
                };
            }
            match (wide, nv) {
                (true, 5) => run!(5, 5),
                (true, 4) => run!(6, 4),
                (true, 3) => run!(8, 3),
                (true, 2) => run!(12, 2),
                (true, _) => run!(16, 1),
                (false, 2) => run!(6, 2),
                (false, _) => run!(8, 1),
            }
            v0 += nv;
        }
    }
}

/// What [`weight_grad_strip`] reads.
#[derive(Clone, Copy)]
struct WeightGradIo<'a> {
    /// The padded channels-last input (stride `cin`), with zero rows after the last board.
    input: &'a [f32],
    /// The padded rows of the board points, in the order of `grad`'s rows.
    rows: &'a [usize],
    cin: usize,
    /// Dense gradient rows of stride `cout`.
    grad: &'a [f32],
    cout: usize,
    run_len: usize,
}

/// For each kernel row and each tile of `MR` output channels, the `NV` vectors of the run from
/// vector `v0`: the tile's sums stay in registers over all board points.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn weight_grad_strip<S: Simd, const MR: usize, const NV: usize>(
    simd: S,
    g: WeightGradIo<'_>,
    v0: usize,
    acc: &mut [f32],
) {
    let lanes = S::F32_LANES;
    let col0 = v0 * lanes;
    let (cin, cout) = (g.cin, g.cout);
    for dy in 0..3 {
        // The run of kernel row `dy` starts at the point's upper-left, left or lower-left
        // neighbour.
        let shift = (dy as isize - 1) * PAD_FILES as isize - 1;
        let mut o0 = 0;
        while o0 < cout {
            let m = (cout - o0).min(MR);
            let mut sums = [[simd.splat_f32s(0.0); NV]; MR];
            for (j, &row) in g.rows.iter().enumerate() {
                let start = row.wrapping_add_signed(shift) * cin + col0;
                let (xv, _) = S::as_simd_f32s(&g.input[start..start + NV * lanes]);
                let xv: &[S::f32s; NV] = xv.try_into().expect("NV vectors");
                let gr = &g.grad[j * cout + o0..];
                // A partial tile repeats its last channel: computed, never stored.
                let mut a = [0.0; MR];
                if m == MR {
                    a = *<&[f32; MR]>::try_from(&gr[..MR]).expect("MR floats");
                } else {
                    for r in 0..MR {
                        a[r] = gr[r.min(m - 1)];
                    }
                }
                for r in 0..MR {
                    let a = simd.splat_f32s(a[r]);
                    for v in 0..NV {
                        sums[r][v] = simd.mul_add_f32s(a, xv[v], sums[r][v]);
                    }
                }
            }
            for r in 0..m {
                let start = (dy * cout + o0 + r) * g.run_len + col0;
                let (dst, _) = S::as_mut_simd_f32s(&mut acc[start..start + NV * lanes]);
                for v in 0..NV {
                    dst[v] = simd.add_f32s(dst[v], sums[r][v]);
                }
            }
            o0 += m;
        }
    }
}

/// `Σ f(v)` over `r` in 16 independent `f32` lanes (so that the compiler vectorises it),
/// returned in `f64`.
#[inline(always)]
fn lane_sum(r: &[f32], f: impl Fn(f32) -> f32) -> f64 {
    let mut acc = [0.0f32; 16];
    let mut chunks = r.chunks_exact(16);
    for ch in &mut chunks {
        for k in 0..16 {
            acc[k] += f(ch[k]);
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|&v| f64::from(f(v))).sum();
    acc.iter().map(|&a| f64::from(a)).sum::<f64>() + tail
}

/// `Σ f(a, b)` over the pairs of `a` and `b`, as [`lane_sum`].
#[inline(always)]
fn lane_dot(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f64 {
    let mut acc = [0.0f32; 16];
    let (mut ca, mut cb) = (a.chunks_exact(16), b.chunks_exact(16));
    for (x, y) in (&mut ca).zip(&mut cb) {
        for k in 0..16 {
            acc[k] += f(x[k], y[k]);
        }
    }
    let tail: f64 =
        ca.remainder().iter().zip(cb.remainder()).map(|(&x, &y)| f64::from(f(x, y))).sum();
    acc.iter().map(|&a| f64::from(a)).sum::<f64>() + tail
}

/// Batch normalisation in training mode on `[n, c, 10, 9]` planes: per channel, the batch's
/// mean `μ` and biased variance `σ²` over the `n · 90` values (summed per board in `f32`
/// lanes, across boards in `f64`), and `out = γ (x − μ) / √(σ² + ε) +
/// β` (Ioffe and Szegedy 2015; burn's `batch_norm_train`). Returns `(out, μ, σ²)`.
///
/// # Panics
/// If `x`'s length is not a multiple of `c · 90` or `gamma`, `beta` are not `c` long.
pub(crate) fn batch_norm_train(
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    epsilon: f64,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let c = gamma.len();
    assert!(c > 0 && beta.len() == c && x.len().is_multiple_of(c * PLANE_SIZE), "shapes");
    let m = (x.len() / c) as f64;
    // Per channel: the mean, then the mean squared deviation from it, each board's sum in
    // 16 independent lanes (vectorised) and the boards' sums in f64.
    let stats: Vec<(f32, f32)> = (0..c)
        .into_par_iter()
        .map(|ch| {
            let runs =
                || x.chunks_exact(c * PLANE_SIZE).map(|p| &p[ch * PLANE_SIZE..][..PLANE_SIZE]);
            let sum: f64 = runs().map(|r| lane_sum(r, |v| v)).sum();
            let mean = (sum / m) as f32;
            let sq: f64 = runs().map(|r| lane_sum(r, |v| (v - mean) * (v - mean))).sum();
            (mean, (sq / m) as f32)
        })
        .collect();
    let (mean, var): (Vec<f32>, Vec<f32>) = stats.into_iter().unzip();
    let scale: Vec<f32> =
        (0..c).map(|ch| gamma[ch] / (f64::from(var[ch]) + epsilon).sqrt() as f32).collect();
    let mut out = vec![0.0; x.len()];
    out.par_chunks_mut(c * PLANE_SIZE).zip(x.par_chunks(c * PLANE_SIZE)).for_each(|(o, p)| {
        for ch in 0..c {
            let (a, b) = (scale[ch], beta[ch] - mean[ch] * scale[ch]);
            let o = &mut o[ch * PLANE_SIZE..][..PLANE_SIZE];
            for (o, &v) in o.iter_mut().zip(&p[ch * PLANE_SIZE..][..PLANE_SIZE]) {
                *o = v * a + b;
            }
        }
    });
    (out, mean, var)
}

/// The gradients of [`batch_norm_train`] with respect to `x`, `γ` and `β`, given the output's
/// gradient `grad` and the forward pass's `μ` and `σ²`: with `x̂ = (x − μ) / s`, `s = √(σ² +
/// ε)` and `m = n · 90` values a channel, `dβ = Σ g`, `dγ = Σ g x̂` and `dx = γ / (m s) · (m g −
/// dβ − x̂ dγ)`. Returns `(dx, dγ, dβ)`.
///
/// # Panics
/// If the lengths do not match as in [`batch_norm_train`].
pub(crate) fn batch_norm_train_backward(
    x: &[f32],
    gamma: &[f32],
    mean: &[f32],
    var: &[f32],
    epsilon: f64,
    grad: &[f32],
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let c = gamma.len();
    assert!(c > 0 && x.len().is_multiple_of(c * PLANE_SIZE) && grad.len() == x.len(), "shapes");
    assert!(mean.len() == c && var.len() == c, "statistics");
    let m = (x.len() / c) as f64;
    let inv: Vec<f64> = var.iter().map(|&v| 1.0 / (f64::from(v) + epsilon).sqrt()).collect();
    let sums: Vec<(f64, f64)> = (0..c)
        .into_par_iter()
        .map(|ch| {
            let (mu, s) = (mean[ch], inv[ch] as f32);
            let mut db = 0.0;
            let mut dg = 0.0;
            for (p, g) in x.chunks_exact(c * PLANE_SIZE).zip(grad.chunks_exact(c * PLANE_SIZE)) {
                let p = &p[ch * PLANE_SIZE..][..PLANE_SIZE];
                let g = &g[ch * PLANE_SIZE..][..PLANE_SIZE];
                db += lane_sum(g, |g| g);
                dg += lane_dot(g, p, |g, v| g * (v - mu) * s);
            }
            (dg, db)
        })
        .collect();
    let mut dx = vec![0.0; x.len()];
    dx.par_chunks_mut(c * PLANE_SIZE)
        .zip(x.par_chunks(c * PLANE_SIZE).zip(grad.par_chunks(c * PLANE_SIZE)))
        .for_each(|(d, (p, g))| {
            for ch in 0..c {
                let (dg, db) = sums[ch];
                let s = inv[ch];
                // dx = k (g − db / m − x̂ dg / m), k = γ s; x̂ = (x − μ) s.
                let k = (f64::from(gamma[ch]) * s) as f32;
                let a = (db / m) as f32;
                let b = (dg / m * s) as f32;
                let mu = mean[ch];
                let d = &mut d[ch * PLANE_SIZE..][..PLANE_SIZE];
                let p = &p[ch * PLANE_SIZE..][..PLANE_SIZE];
                let g = &g[ch * PLANE_SIZE..][..PLANE_SIZE];
                for ((d, &v), &g) in d.iter_mut().zip(p).zip(g) {
                    *d = k * (g - a - (v - mu) * b);
                }
            }
        });
    let (dgamma, dbeta) = sums.iter().map(|&(dg, db)| (dg as f32, db as f32)).unzip();
    (dx, dgamma, dbeta)
}

#[cfg(test)]
mod tests {
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

    fn noise(n: usize, seed: u32) -> Vec<f32> {
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

    /// The training convolution, its input gradient and its weight gradient against their
    /// definitions (in f64, zero outside the board), with the AVX-512 code, the AVX2 + FMA code
    /// (16 registers: other tiles) and the scalar code, whichever this CPU can run: channel
    /// counts with partial vectors, several strips and partial tiles.
    #[test]
    fn the_training_convolutions_compute_their_definitions_on_every_instruction_set() {
        // `x[b, i, p + d_t]`, zero off the board.
        fn at(x: &[f32], c: usize, b: usize, i: usize, rank: isize, file: isize) -> f64 {
            if !(0..PLANE_RANKS as isize).contains(&rank)
                || !(0..PLANE_FILES as isize).contains(&file)
            {
                return 0.0;
            }
            f64::from(x[(b * c + i) * PLANE_SIZE + rank as usize * PLANE_FILES + file as usize])
        }
        fn close(what: &str, got: &[f32], want: &[f64]) {
            assert_eq!(got.len(), want.len(), "{what}");
            for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
                assert!(
                    (f64::from(g) - w).abs() < 1e-4 * (1.0 + w.abs()),
                    "{what}[{k}]: {g} vs {w}"
                );
            }
        }
        struct Check;
        impl WithSimd for Check {
            type Output = usize;
            fn with_simd<S: Simd>(self, simd: S) -> usize {
                let (lanes, registers) = (S::F32_LANES, S::REGISTER_COUNT);
                for (n, cin, cout) in [(3, 5, 3), (2, 24, 24), (2, 23, 40), (1, 64, 70)] {
                    let what = format!("{lanes} lanes, {n} × {cin} → {cout}");
                    let x = noise(n * cin * PLANE_SIZE, 1);
                    let w = noise(cout * cin * 9, 2);
                    let g = noise(n * cout * PLANE_SIZE, 3);
                    let mut scratch = ConvScratch::default();
                    let conv = |x: &[f32],
                                w: &[f32],
                                cin: usize,
                                cout: usize,
                                s: &mut ConvScratch| {
                        let shape = [cout, cin, 3, 3];
                        let p =
                            Packed::conv_with_shape(w, &vec![0.0; cout], shape, lanes, registers);
                        let mut out = vec![f32::NAN; n * cout * PLANE_SIZE];
                        ConvChunk { p: &p, x, out: &mut out, scratch: s }.with_simd(simd);
                        out
                    };
                    // y[b, o, p] = Σ_i Σ_t W[o, i, t] · x[b, i, p + d_t].
                    let mut want = vec![0.0; n * cout * PLANE_SIZE];
                    // dW[o, i, t] = Σ_b Σ_p g[b, o, p] · x[b, i, p + d_t].
                    let mut want_dw = vec![0.0; cout * cin * 9];
                    for b in 0..n {
                        for o in 0..cout {
                            for sq in 0..PLANE_SIZE {
                                let (r, f) =
                                    ((sq / PLANE_FILES) as isize, (sq % PLANE_FILES) as isize);
                                let go = f64::from(g[(b * cout + o) * PLANE_SIZE + sq]);
                                for i in 0..cin {
                                    for t in 0..9 {
                                        let v = at(
                                            &x,
                                            cin,
                                            b,
                                            i,
                                            r + t as isize / 3 - 1,
                                            f + t as isize % 3 - 1,
                                        );
                                        want[(b * cout + o) * PLANE_SIZE + sq] +=
                                            f64::from(w[(o * cin + i) * 9 + t]) * v;
                                        want_dw[(o * cin + i) * 9 + t] += go * v;
                                    }
                                }
                            }
                        }
                    }
                    close(
                        &format!("{what}: output"),
                        &conv(&x, &w, cin, cout, &mut scratch),
                        &want,
                    );
                    // dx[b, i, q] = Σ_o Σ_t W[o, i, t] · g[b, o, q − d_t].
                    let mut want_dx = vec![0.0; n * cin * PLANE_SIZE];
                    for b in 0..n {
                        for i in 0..cin {
                            for sq in 0..PLANE_SIZE {
                                let (r, f) =
                                    ((sq / PLANE_FILES) as isize, (sq % PLANE_FILES) as isize);
                                for o in 0..cout {
                                    for t in 0..9 {
                                        let v = at(
                                            &g,
                                            cout,
                                            b,
                                            o,
                                            r - (t as isize / 3 - 1),
                                            f - (t as isize % 3 - 1),
                                        );
                                        want_dx[(b * cin + i) * PLANE_SIZE + sq] +=
                                            f64::from(w[(o * cin + i) * 9 + t]) * v;
                                    }
                                }
                            }
                        }
                    }
                    let flipped = flipped_transpose(&w, cout, cin);
                    close(
                        &format!("{what}: input gradient"),
                        &conv(&g, &flipped, cout, cin, &mut scratch),
                        &want_dx,
                    );
                    let run_len = round_up(3 * cin, lanes);
                    let mut acc = vec![0.0; 3 * cout * run_len];
                    WeightGrad {
                        x: &x,
                        grad: &g,
                        cin,
                        cout,
                        run_len,
                        wide: registers >= 32 || lanes == 1,
                        acc: &mut acc,
                        scratch: &mut scratch,
                    }
                    .with_simd(simd);
                    close(
                        &format!("{what}: weight gradient"),
                        &weight_grad_from_runs(&acc, cin, cout, run_len),
                        &want_dw,
                    );
                }
                lanes
            }
        }
        let mut checked = vec![pulp::Scalar::new().vectorize(Check)];
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(v3) = pulp::x86::V3::try_new() {
                checked.push(Simd::vectorize(v3, Check));
            }
            if let Some(v4) = pulp::x86::V4::try_new() {
                checked.push(Simd::vectorize(v4, Check));
            }
        }
        assert!(checked.contains(&1), "{checked:?}");
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
