//! The register-tiled matrix product every layer of the CPU path runs through ([`layer`]):
//! `out[r] = Σ_taps Σ_c in[row_r + tap][c] · W[tap, c]` over tiles of `MR` output rows by `NV`
//! SIMD vectors of output channels, the bias, residual and ReLU applied in registers before the
//! store (see the parent module's documentation for the layout and the measurements).

use pulp::Simd;

use super::Packed;

/// The vector of `src` (a whole vector's floats or fewer; zeros past its end). A whole vector is
/// one plain load: `pulp`'s masked load is a call through a table of lengths, which cost a few
/// percent of a net's time when every tile's stores went through it.
#[inline(always)]
pub(super) fn load_vector<S: Simd>(simd: S, src: &[f32]) -> S::f32s {
    if src.len() == S::F32_LANES { S::as_simd_f32s(src).0[0] } else { simd.partial_load_f32s(src) }
}

/// Stores the first `dst.len()` lanes of `v` (a whole vector's floats or fewer) into `dst`, as
/// [`load_vector`]: a whole vector by one plain store.
#[inline(always)]
pub(super) fn store_vector<S: Simd>(simd: S, dst: &mut [f32], v: S::f32s) {
    if dst.len() == S::F32_LANES {
        S::as_mut_simd_f32s(dst).0[0] = v;
    } else {
        simd.partial_store_f32s(dst, v);
    }
}

/// Where a layer reads and writes.
#[derive(Clone, Copy)]
pub(super) struct Io<'a> {
    /// Input row (before the taps' offsets) of each output row.
    pub(super) rows: &'a [usize],
    /// Output row of each output row, `out_rows[j]` for the `j`-th of `rows`.
    pub(super) out_rows: &'a [usize],
    /// Columns stored of each output row (the rest of the stride is left as it is).
    pub(super) store: usize,
    /// ReLU before the store.
    pub(super) relu: bool,
    /// Adds the output's current values (the residual) before the ReLU.
    pub(super) accumulate: bool,
}

/// `out[out_rows[j]] = act(Σ_t Σ_c input[rows[j] + taps[t]][c] · W[t, c] + bias (+ out))` for
/// every `j`, as register tiles of output rows by SIMD vectors of columns.
///
/// # Panics
/// If `p` was packed for another SIMD width than `S`'s (the instruction set is detected the
/// same way for packing and running, so never in practice).
#[inline(always)]
pub(super) fn layer<S: Simd>(
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
                    let held = load_vector(simd, &out[start + col..start + col + len]);
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
                store_vector(simd, &mut out[start + col..start + col + len], value);
            }
        }
        r0 += m;
    }
}
