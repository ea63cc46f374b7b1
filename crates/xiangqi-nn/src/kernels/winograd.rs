//! The tower's 3 × 3 convolutions by Winograd's minimal filtering algorithm F(2 × 2, 3 × 3)
//! (A. Lavin and S. Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016).
//!
//! The 10 × 9 board is cut into 5 × 5 tiles of 2 × 2 outputs (the last file of tiles has one
//! real file: the board's tenth file is computed and dropped). Each tile's 4 × 4 patch of
//! inputs `d` (the zero border and zeros beyond it included) becomes `V = Bᵀ d B`, each filter
//! `g` becomes `U = G g Gᵀ` once, when the net is packed, and the tile's outputs are
//! `Aᵀ [Σ_c U ⊙ V] A`: the sum over input channels is sixteen matrix products, one per point
//! `ξ` of the 4 × 4 transform, `M_ξ[tile, out] = Σ_c V_ξ[tile, c] · U_ξ[c, out]`, run by the
//! module's register-tiled kernel as one-tap layers. A position costs 25 · 16 = 400
//! multiplications per pair of channels where the direct convolution costs 90 · 9 = 810, and
//! each product's weights (`cin · cout` floats) stay in the L1 cache where the direct kernel
//! streams all nine taps' from L2. The transforms' loads and stores take back much of that (the
//! measured gain and the channel counts it pays for: [`MIN_CHANNELS`]).
//!
//! With
//! ```text
//! Bᵀ = [1  0 −1  0]     G = [1    0    0 ]     Aᵀ = [1 1  1  0]
//!      [0  1  1  0]         [1/2  1/2  1/2]          [0 1 −1 −1]
//!      [0 −1  1  0]         [1/2 −1/2  1/2]
//!      [0  1  0 −1]         [0    0    1 ]
//! ```
//! the two outputs of four inputs `d₀…d₃` and a filter `g₀…g₂` along one axis are exactly
//! `d₀g₀ + d₁g₁ + d₂g₂` and `d₁g₀ + d₂g₁ + d₃g₂` (the cross-correlation of the direct
//! kernel); the transforms add and subtract only, and `G`'s halves are exact, so the results
//! differ from the direct kernel's by the rounding of another summation order (tested within
//! 1e-4 against the definition).
//!
//! The transformed inputs and products of a group of [`GROUP`] positions at a time are kept
//! (16 · 25 rows each), small enough for the L2 cache; the bias, the residual and the ReLU are
//! applied as the outputs are transformed back.

use pulp::Simd;
use xiangqi::env::{PLANE_FILES, PLANE_RANKS, PLANE_SIZE};

use super::{
    ALIGN, Buf, Io, PAD_FILES, PAD_SIZE, Packed, layer, load_vector, round_up, simd_shape,
    store_vector,
};

/// Tiles along the ranks (10 → 5) and the files (9 → 5).
const TILE_RANKS: usize = PLANE_RANKS / 2;
const TILE_FILES: usize = PLANE_FILES.div_ceil(2);
/// Tiles of one position.
const TILES: usize = TILE_RANKS * TILE_FILES;
/// Positions transformed together: 16 · 25 · 4 rows of 64 channels are 400 KB of transformed
/// inputs and as many of products.
const GROUP: usize = 4;

/// `G` of the module documentation: the filter transform.
const G: [[f32; 3]; 4] = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]];

/// The fewest input and output channels for which the tower's convolutions run by this
/// algorithm. Measured on a 2-core AVX-512 Xeon (`experiments/2026-12-07-winograd/`): 1.08–1.18
/// times the direct kernel's positions/s for a 6 × 64 net, but 0.84–0.90 times for 3 × 32 and
/// 0.75–0.83 times for 2 × 24, whose narrow products do too little work per transformed value.
const MIN_CHANNELS: usize = 64;

/// A 3 × 3 convolution packed for Winograd's algorithm.
#[derive(Debug, Clone)]
pub(crate) struct Winograd {
    cin: usize,
    cout: usize,
    /// `U_ξ` for the 16 points `ξ = 4a + b`, each a one-tap layer `[cin, cout]` without bias.
    points: Vec<Packed>,
    /// The convolution's bias, `[round_up(cout, ALIGN)]`, zero beyond `cout`.
    bias: Vec<f32>,
}

impl Winograd {
    /// The convolution of folded weights `[out, in, 3, 3]` and bias `[out]`, where this
    /// algorithm is the faster kernel for its channel counts; `None` where the direct kernel is.
    pub(crate) fn for_conv(weight: &[f32], bias: &[f32], shape: [usize; 4]) -> Option<Winograd> {
        let [cout, cin, kh, kw] = shape;
        if kh != 3 || kw != 3 || cin < MIN_CHANNELS || cout < MIN_CHANNELS {
            return None;
        }
        let (lanes, registers) = simd_shape();
        Some(Winograd::with_shape(weight, bias, shape, lanes, registers))
    }

    /// The convolution packed for a SIMD width and register count.
    ///
    /// # Panics
    /// If `shape` is not a 3 × 3 convolution's or the slices' lengths do not match it.
    pub(super) fn with_shape(
        weight: &[f32],
        bias: &[f32],
        shape: [usize; 4],
        lanes: usize,
        registers: usize,
    ) -> Winograd {
        let [cout, cin, kh, kw] = shape;
        assert!(kh == 3 && kw == 3, "not a 3 × 3 convolution: {shape:?}");
        assert_eq!(weight.len(), cout * cin * 9);
        assert_eq!(bias.len(), cout);
        let mut matrices = vec![vec![0.0f32; cin * cout]; 16];
        for o in 0..cout {
            for c in 0..cin {
                let g = &weight[(o * cin + c) * 9..(o * cin + c + 1) * 9];
                // G g, 4 × 3, then (G g) Gᵀ, 4 × 4.
                let mut gg = [[0.0f32; 3]; 4];
                for (a, row) in gg.iter_mut().enumerate() {
                    for (x, v) in row.iter_mut().enumerate() {
                        *v = (0..3).map(|y| G[a][y] * g[y * 3 + x]).sum();
                    }
                }
                for (a, row) in gg.iter().enumerate() {
                    for b in 0..4 {
                        let u: f32 = (0..3).map(|x| row[x] * G[b][x]).sum();
                        matrices[a * 4 + b][c * cout + o] = u;
                    }
                }
            }
        }
        let zero = vec![0.0; cout];
        let points = matrices
            .iter()
            .map(|m| Packed::with_shape(vec![0], cin, cout, m, &zero, lanes, registers))
            .collect();
        let mut padded_bias = vec![0.0; round_up(cout, ALIGN)];
        padded_bias[..cout].copy_from_slice(bias);
        Winograd { cin, cout, points, bias: padded_bias }
    }

    /// The convolution of `n` positions on the zero-bordered board `input`: for the `j`-th
    /// interior point (position by position, rank-major), `out[io.out_rows[j]] = act(conv(input)
    /// + bias (+ out))` as `io` says (its `store`, `relu` and `accumulate`; `io.rows` is not
    /// read), as [`layer`] does. `ident` is `0, 1, 2, …` for at least `25 · min(n, GROUP)` rows;
    /// `bufs` are scratch.
    ///
    /// # Panics
    /// If `in_stride` is narrower than the input channels rounded up to [`ALIGN`], `io.store`
    /// wider than the output stride or than the output channels so rounded, or the buffers
    /// shorter than `n` boards.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn run<S: Simd>(
        &self,
        simd: S,
        input: &[f32],
        in_stride: usize,
        n: usize,
        out: &mut [f32],
        out_stride: usize,
        io: Io<'_>,
        bufs: (&mut Buf, &mut Buf),
        ident: &[usize],
    ) {
        let (v, m) = bufs;
        let cs = round_up(self.cin, ALIGN);
        let ms = round_up(self.cout, ALIGN);
        assert!(cs <= in_stride, "input stride {in_stride} below {cs} channels");
        assert!(io.store <= ms && io.store <= out_stride, "store {} too wide", io.store);
        assert!(input.len() >= n * PAD_SIZE * in_stride, "input shorter than {n} boards");
        assert!(io.out_rows.len() >= n * PLANE_SIZE, "fewer output rows than points");
        let mut i0 = 0;
        while i0 < n {
            let q = (n - i0).min(GROUP);
            let rows = q * TILES;
            v.prepare(16 * rows, cs);
            m.prepare(16 * rows, ms);
            transform_inputs(simd, input, in_stride, i0, q, &mut v.data, cs);
            for (xi, point) in self.points.iter().enumerate() {
                let product = Io {
                    rows: &ident[..rows],
                    out_rows: ident,
                    store: ms,
                    relu: false,
                    accumulate: false,
                };
                layer(
                    simd,
                    point,
                    &v.data[xi * rows * cs..(xi + 1) * rows * cs],
                    cs,
                    &mut m.data[xi * rows * ms..(xi + 1) * rows * ms],
                    ms,
                    product,
                );
            }
            self.transform_outputs(simd, &m.data, ms, i0, q, out, out_stride, io);
            i0 += q;
        }
    }

    /// `Aᵀ M A` of every tile of positions `i0..i0 + q`, plus the bias (and the residual held in
    /// `out`), through the ReLU if asked, stored at the board's points.
    // Index loops over the tile's columns, as the direct kernel's (values kept in registers).
    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    #[inline(always)]
    fn transform_outputs<S: Simd>(
        &self,
        simd: S,
        m: &[f32],
        ms: usize,
        i0: usize,
        q: usize,
        out: &mut [f32],
        out_stride: usize,
        io: Io<'_>,
    ) {
        let lanes = S::F32_LANES;
        let rows = q * TILES;
        let zero = simd.splat_f32s(0.0);
        // As the direct kernel: the stored columns, up to the vectors that hold outputs.
        let columns = io.store.min(round_up(self.cout, lanes));
        // No closures here: one returning a vector is compiled without the caller's instruction
        // set and called, not inlined (a call per load, measured on AVX-512).
        for i in 0..q {
            for tile in 0..TILES {
                let (tr, tf) = (tile / TILE_FILES, tile % TILE_FILES);
                let t = i * TILES + tile;
                let files = (PLANE_FILES - 2 * tf).min(2);
                for c in (0..columns).step_by(lanes) {
                    let len = (columns - c).min(lanes);
                    let mut s = [[zero; 4]; 2];
                    for b in 0..4 {
                        let mut p = [zero; 4];
                        for (a, p) in p.iter_mut().enumerate() {
                            let at = ((a * 4 + b) * rows + t) * ms + c;
                            *p = S::as_simd_f32s(&m[at..at + lanes]).0[0];
                        }
                        s[0][b] = simd.add_f32s(simd.add_f32s(p[0], p[1]), p[2]);
                        s[1][b] = simd.sub_f32s(simd.sub_f32s(p[1], p[2]), p[3]);
                    }
                    let bias = S::as_simd_f32s(&self.bias[c..c + lanes]).0[0];
                    for (y, s) in s.iter().enumerate() {
                        let pair = [
                            simd.add_f32s(simd.add_f32s(s[0], s[1]), s[2]),
                            simd.sub_f32s(simd.sub_f32s(s[1], s[2]), s[3]),
                        ];
                        let rank = 2 * tr + y;
                        for (x, &value) in pair.iter().enumerate().take(files) {
                            let point = (i0 + i) * PLANE_SIZE + rank * PLANE_FILES + 2 * tf + x;
                            let at = io.out_rows[point] * out_stride + c;
                            let dst = &mut out[at..at + len];
                            let mut value = simd.add_f32s(value, bias);
                            if io.accumulate {
                                value = simd.add_f32s(value, load_vector(simd, dst));
                            }
                            if io.relu {
                                // As the direct kernel: a NaN stays NaN.
                                value = simd.max_f32s(zero, value);
                            }
                            store_vector(simd, dst, value);
                        }
                    }
                }
            }
        }
    }
}

/// `V = Bᵀ d B` of every tile of positions `i0..i0 + q` into `v`, `[16][q · 25][cs]`.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn transform_inputs<S: Simd>(
    simd: S,
    input: &[f32],
    in_stride: usize,
    i0: usize,
    q: usize,
    v: &mut [f32],
    cs: usize,
) {
    let lanes = S::F32_LANES;
    let rows = q * TILES;
    let zero = simd.splat_f32s(0.0);
    for i in 0..q {
        for tile in 0..TILES {
            let (tr, tf) = (tile / TILE_FILES, tile % TILE_FILES);
            let t = i * TILES + tile;
            // The patch's top-left corner on the padded board: rank 2·tr − 1, file 2·tf − 1.
            let corner = (i0 + i) * PAD_SIZE + 2 * tr * PAD_FILES + 2 * tf;
            // Padded files 2·tf … 2·tf + 3; the last tile's fourth lies beyond the border.
            let files = (PAD_FILES - 2 * tf).min(4);
            for c in (0..cs).step_by(lanes) {
                // Bᵀ d, column by column (no closure: see `transform_outputs`).
                let mut bd = [[zero; 4]; 4];
                for b in 0..files {
                    let mut d = [zero; 4];
                    for (a, d) in d.iter_mut().enumerate() {
                        let start = (corner + a * PAD_FILES + b) * in_stride + c;
                        *d = S::as_simd_f32s(&input[start..start + lanes]).0[0];
                    }
                    let [d0, d1, d2, d3] = d;
                    bd[0][b] = simd.sub_f32s(d0, d2);
                    bd[1][b] = simd.add_f32s(d1, d2);
                    bd[2][b] = simd.sub_f32s(d2, d1);
                    bd[3][b] = simd.sub_f32s(d1, d3);
                }
                // (Bᵀ d) B, row by row.
                for (a, r) in bd.iter().enumerate() {
                    let row = [
                        simd.sub_f32s(r[0], r[2]),
                        simd.add_f32s(r[1], r[2]),
                        simd.sub_f32s(r[2], r[1]),
                        simd.sub_f32s(r[1], r[3]),
                    ];
                    for (b, value) in row.into_iter().enumerate() {
                        let at = ((a * 4 + b) * rows + t) * cs + c;
                        S::as_mut_simd_f32s(&mut v[at..at + lanes]).0[0] = value;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pulp::{Arch, WithSimd};

    use super::super::tests::noise;
    use super::*;

    /// The convolution by its definition in f64 at every interior point of `n` boards.
    fn reference(
        weight: &[f32],
        bias: &[f32],
        [cout, cin]: [usize; 2],
        input: &[f32],
        stride: usize,
        n: usize,
    ) -> Vec<f64> {
        let mut out = Vec::new();
        for i in 0..n {
            for rank in 0..PLANE_RANKS {
                for file in 0..PLANE_FILES {
                    for o in 0..cout {
                        let mut s = f64::from(bias[o]);
                        for y in 0..3 {
                            for x in 0..3 {
                                // Padded rank rank + y, file file + x: the tap (y − 1, x − 1).
                                let row = i * PAD_SIZE + (rank + y) * PAD_FILES + file + x;
                                for c in 0..cin {
                                    s += f64::from(input[row * stride + c])
                                        * f64::from(weight[((o * cin + c) * 3 + y) * 3 + x]);
                                }
                            }
                        }
                        out.push(s);
                    }
                }
            }
        }
        out
    }

    struct Op<'a> {
        w: &'a Winograd,
        input: &'a [f32],
        in_stride: usize,
        n: usize,
        out: &'a mut [f32],
        out_stride: usize,
        store: usize,
        relu: bool,
        accumulate: bool,
    }

    impl WithSimd for Op<'_> {
        type Output = ();
        fn with_simd<S: Simd>(self, simd: S) {
            let ident: Vec<usize> = (0..self.n.max(1) * 90).collect();
            let points = (0..self.n).flat_map(|i| (0..PLANE_SIZE).map(move |sq| (i, sq)));
            let padded: Vec<usize> =
                points.map(|(i, sq)| super::super::padded_row(i, sq)).collect();
            let io = Io {
                rows: &[],
                out_rows: &padded,
                store: self.store,
                relu: self.relu,
                accumulate: self.accumulate,
            };
            let (mut v, mut m) = (Buf::default(), Buf::default());
            self.w.run(
                simd,
                self.input,
                self.in_stride,
                self.n,
                self.out,
                self.out_stride,
                io,
                (&mut v, &mut m),
                &ident,
            );
        }
    }

    /// Channel counts with partial vectors and several strips, stores of part of the last
    /// vector, groups of positions with a partial last one, with and without the residual and
    /// the ReLU, with the vector and the scalar code, against the definition; the board's
    /// border and the columns beyond `store` are left as they were.
    #[test]
    fn winograds_convolution_is_the_convolution_by_its_definition() {
        for (cin, cout) in [(32, 32), (5, 19), (64, 64), (40, 70), (17, 3)] {
            let weight = noise(cout * cin * 9, (cin * 100 + cout) as u32);
            let bias = noise(cout, 5 + cout as u32);
            let fast = Winograd::for_conv(&weight, &bias, [cout, cin, 3, 3]);
            assert_eq!(fast.is_some(), cin >= MIN_CHANNELS && cout >= MIN_CHANNELS);
            let (lanes, registers) = simd_shape();
            let vector = Winograd::with_shape(&weight, &bias, [cout, cin, 3, 3], lanes, registers);
            let scalar = Winograd::with_shape(&weight, &bias, [cout, cin, 3, 3], 1, 16);
            let in_stride = round_up(cin, ALIGN) + 16;
            let out_stride = round_up(cout, ALIGN) + 16;
            // Stores of whole vectors and, where `store` is `cout`, of part of the last one.
            for (n, store) in [(1, cout), (4, round_up(cout, ALIGN)), (6, cout)] {
                // Random interior points on a zero border; channels past `cin` zero.
                let mut input = vec![0.0f32; n * PAD_SIZE * in_stride];
                let values = noise(input.len(), 3 + n as u32);
                for i in 0..n {
                    for sq in 0..PLANE_SIZE {
                        let row = super::super::padded_row(i, sq);
                        let at = row * in_stride;
                        input[at..at + cin].copy_from_slice(&values[at..at + cin]);
                    }
                }
                let expect = reference(&weight, &bias, [cout, cin], &input, in_stride, n);
                let held = noise(n * PAD_SIZE * out_stride, 11);
                for (scalar_code, residual) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let mut out = held.clone();
                    let op = Op {
                        w: if scalar_code { &scalar } else { &vector },
                        input: &input,
                        in_stride,
                        n,
                        out: &mut out,
                        out_stride,
                        store,
                        relu: residual,
                        accumulate: residual,
                    };
                    if scalar_code {
                        op.with_simd(pulp::Scalar::new());
                    } else {
                        Arch::new().dispatch(op);
                    }
                    let mut interior = vec![false; n * PAD_SIZE];
                    for i in 0..n {
                        for sq in 0..PLANE_SIZE {
                            let row = super::super::padded_row(i, sq);
                            interior[row] = true;
                            for o in 0..cout {
                                let got = f64::from(out[row * out_stride + o]);
                                let mut want = expect[(i * 90 + sq) * cout + o];
                                if residual {
                                    want = (want + f64::from(held[row * out_stride + o])).max(0.0);
                                }
                                assert!(
                                    (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                                    "{cin} -> {cout}, {n} positions, position {i} point {sq} \
                                     channel {o} (scalar {scalar_code}, residual {residual}): \
                                     {got} vs {want}"
                                );
                            }
                            for o in store..out_stride {
                                assert_eq!(out[row * out_stride + o], held[row * out_stride + o]);
                            }
                        }
                    }
                    for (row, &inside) in interior.iter().enumerate() {
                        if !inside {
                            let at = row * out_stride;
                            assert_eq!(out[at..at + out_stride], held[at..at + out_stride]);
                        }
                    }
                }
            }
        }
    }
}
