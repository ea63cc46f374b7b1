//! Training on the CPU: the board's 3 × 3 convolution and its two gradients through the
//! parent module's register-tiled kernel, and batch normalisation with its gradients, all on
//! burn's `[n, c, 10, 9]` layout (reached through burn as the operations of
//! [`crate::train_ops`]; the design is in the parent module's documentation).

use std::cell::RefCell;

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;
use xiangqi::env::PLANE_SIZE;

#[cfg(target_arch = "x86_64")]
use super::bfloat16;
use super::{
    ALIGN, Buf, Io, PAD_FILES, PAD_SIZE, Packed, Winograd, balanced_chunk, board_rows, layer,
    round_up, simd_shape, to_padded,
};

/// Positions in one parallel chunk of a training convolution.
const TRAIN_CHUNK: usize = 16;

thread_local! {
    static CONV_SCRATCH: RefCell<ConvScratch> = RefCell::new(ConvScratch::default());
}

#[cfg(target_arch = "x86_64")]
thread_local! {
    static BF16_SCRATCH: RefCell<bfloat16::TrainScratch> = RefCell::new(bfloat16::TrainScratch::default());
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
    /// Winograd's transformed inputs and products.
    wv: Buf,
    wm: Buf,
}

impl ConvScratch {
    /// The interior rows of `n` positions, and `0, 1, 2, …` for as many.
    fn rows(&mut self, n: usize) {
        board_rows(n, &mut self.rows, &mut self.ident);
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
pub(crate) fn board_conv3x3(
    x: &[f32],
    weight: &[f32],
    cin: usize,
    cout: usize,
    bf16: bool,
) -> Vec<f32> {
    assert!(cin > 0 && cout > 0 && x.len().is_multiple_of(cin * PLANE_SIZE), "input shape");
    assert_eq!(weight.len(), cout * cin * 9, "weight shape");
    let n = x.len() / (cin * PLANE_SIZE);
    let mut out = vec![0.0; n * cout * PLANE_SIZE];
    let chunk = balanced_chunk(n, TRAIN_CHUNK, rayon::current_num_threads().max(1));
    #[cfg(target_arch = "x86_64")]
    if bf16 && bfloat16::tiles_available() {
        let conv = bfloat16::Bf16Conv::conv3x3(weight, &vec![0.0; cout], [cout, cin, 3, 3]);
        let run = |x: &[f32], out: &mut [f32]| {
            BF16_SCRATCH.with(|s| bfloat16::conv_planes(&conv, x, out, &mut s.borrow_mut()));
        };
        by_chunks(x, cin, &mut out, cout, chunk, run);
        return out;
    }
    let _ = bf16;
    let zero = vec![0.0; cout];
    let p = Packed::conv(weight, &zero, [cout, cin, 3, 3]);
    let w = Winograd::for_conv(weight, &zero, [cout, cin, 3, 3]);
    let run = |x: &[f32], out: &mut [f32]| {
        CONV_SCRATCH.with(|s| {
            let scratch = &mut s.borrow_mut();
            Arch::new().dispatch(ConvChunk { p: &p, w: w.as_ref(), x, out, scratch });
        });
    };
    by_chunks(x, cin, &mut out, cout, chunk, run);
    out
}

/// `run` on chunks of `chunk` positions of `x` (`[n, cin, 10, 9]`) and the matching chunks of
/// `out` (`[n, cout, 10, 9]`), in parallel (on the caller's thread for one chunk).
fn by_chunks(
    x: &[f32],
    cin: usize,
    out: &mut [f32],
    cout: usize,
    chunk: usize,
    run: impl Fn(&[f32], &mut [f32]) + Sync,
) {
    if x.len() <= chunk * cin * PLANE_SIZE {
        run(x, out);
    } else {
        x.par_chunks(chunk * cin * PLANE_SIZE)
            .zip(out.par_chunks_mut(chunk * cout * PLANE_SIZE))
            .for_each(|(x, o)| run(x, o));
    }
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
    bf16: bool,
) -> Vec<f32> {
    assert_eq!(weight.len(), cout * cin * 9, "weight shape");
    board_conv3x3(grad, &flipped_transpose(weight, cout, cin), cout, cin, bf16)
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
    bf16: bool,
) -> Vec<f32> {
    assert!(cin > 0 && cout > 0 && x.len().is_multiple_of(cin * PLANE_SIZE), "input shape");
    let n = x.len() / (cin * PLANE_SIZE);
    assert_eq!(grad.len(), n * cout * PLANE_SIZE, "gradient shape");
    #[cfg(target_arch = "x86_64")]
    if bf16 && bfloat16::tiles_available() {
        return amx_weight_grad(x, grad, cin, cout);
    }
    let _ = bf16;
    let (lanes, registers) = simd_shape();
    // The run of three taps' inputs, rounded up to whole vectors.
    let run_len = round_up(3 * cin, lanes);
    let size = 3 * cout * run_len;
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
    let acc = chunk_sums(x, grad, cin, cout, size, run);
    weight_grad_from_runs(&acc, cin, cout, run_len)
}

/// [`board_conv3x3_weight_grad`] in bfloat16 on AMX: each chunk's sums (`[9, cin, cout]`, see
/// [`bfloat16::weight_grad_planes`]) added, then reordered to `[cout, cin, 3, 3]`.
#[cfg(target_arch = "x86_64")]
fn amx_weight_grad(x: &[f32], grad: &[f32], cin: usize, cout: usize) -> Vec<f32> {
    let size = 9 * cin * cout;
    let run = |x: &[f32], g: &[f32]| {
        let mut acc = vec![0.0; size];
        BF16_SCRATCH
            .with(|s| bfloat16::weight_grad_planes(x, g, cin, cout, &mut acc, &mut s.borrow_mut()));
        acc
    };
    let acc = chunk_sums(x, grad, cin, cout, size, run);
    let mut dw = vec![0.0; size];
    for t in 0..9 {
        for i in 0..cin {
            for o in 0..cout {
                dw[(o * cin + i) * 9 + t] = acc[(t * cin + i) * cout + o];
            }
        }
    }
    dw
}

/// `run`'s sums (`size` floats) over chunks of [`TRAIN_CHUNK`] positions of `x` (`[n, cin, 10,
/// 9]`) and `grad` (`[n, cout, 10, 9]`), computed in parallel and added in the chunks' order:
/// the same chunks and the same order whatever the number of threads, so that a weight
/// gradient does not depend on it.
fn chunk_sums(
    x: &[f32],
    grad: &[f32],
    cin: usize,
    cout: usize,
    size: usize,
    run: impl Fn(&[f32], &[f32]) -> Vec<f32> + Sync,
) -> Vec<f32> {
    let parts: Vec<Vec<f32>> = x
        .par_chunks(TRAIN_CHUNK * cin * PLANE_SIZE)
        .zip(grad.par_chunks(TRAIN_CHUNK * cout * PLANE_SIZE))
        .map(|(x, g)| run(x, g))
        .collect();
    let mut parts = parts.into_iter();
    let mut acc = parts.next().unwrap_or_else(|| vec![0.0; size]);
    for part in parts {
        acc.iter_mut().zip(&part).for_each(|(a, b)| *a += b);
    }
    acc
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
    /// The same convolution for Winograd's algorithm, which runs instead where given.
    w: Option<&'a Winograd>,
    x: &'a [f32],
    out: &'a mut [f32],
    scratch: &'a mut ConvScratch,
}

impl WithSimd for ConvChunk<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let ConvChunk { p, w, x, out, scratch: s } = self;
        let (cin, cout) = (p.cin, p.cout);
        let n = x.len() / (cin * PLANE_SIZE);
        s.rows(n);
        s.out.prepare(n * PLANE_SIZE, cout);
        let io =
            Io { rows: &s.rows, out_rows: &s.ident, store: cout, relu: false, accumulate: false };
        match w {
            Some(w) => {
                // Winograd's input transform reads whole vectors of channels.
                let stride = round_up(cin, ALIGN);
                to_padded(x, cin, &mut s.input, stride);
                let bufs = (&mut s.wv, &mut s.wm);
                w.run(simd, &s.input.data, stride, n, &mut s.out.data, cout, io, bufs, &s.ident);
            }
            None => {
                to_padded(x, cin, &mut s.input, cin);
                layer(simd, p, &s.input.data, cin, &mut s.out.data, cout, io);
            }
        }
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
    use xiangqi::env::{PLANE_FILES, PLANE_RANKS};

    use super::super::tests::noise;
    use super::*;

    /// The training convolution, its input gradient and its weight gradient against their
    /// definitions (in f64, zero outside the board), with the AVX-512 code, the AVX2 + FMA code
    /// (16 registers: other tiles) and the scalar code, whichever this CPU can run: channel
    /// counts with partial vectors, several strips and partial tiles. The convolutions run by
    /// the direct kernel and by Winograd's algorithm, whatever the channel counts, and agree.
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
                    let conv =
                        |x: &[f32], w: &[f32], cin: usize, cout: usize, s: &mut ConvScratch| {
                            let shape = [cout, cin, 3, 3];
                            let zero = vec![0.0; cout];
                            let p = Packed::conv_with_shape(w, &zero, shape, lanes, registers);
                            let mut out = vec![f32::NAN; n * cout * PLANE_SIZE];
                            let chunk =
                                ConvChunk { p: &p, w: None, x, out: &mut out, scratch: &mut *s };
                            chunk.with_simd(simd);
                            // Winograd's algorithm gives the same outputs.
                            let wino = Winograd::with_shape(w, &zero, shape, lanes, registers);
                            let mut other = vec![f32::NAN; n * cout * PLANE_SIZE];
                            let chunk =
                                ConvChunk { p: &p, w: Some(&wino), x, out: &mut other, scratch: s };
                            chunk.with_simd(simd);
                            for (k, (a, b)) in out.iter().zip(&other).enumerate() {
                                assert!((a - b).abs() < 1e-4 * (1.0 + a.abs()), "{k}: {a} vs {b}");
                            }
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
}
