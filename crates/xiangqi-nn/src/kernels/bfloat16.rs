//! The residual tower in bfloat16, for [`crate::Precision::Bf16`]: on Intel's Advanced Matrix
//! Extensions (AMX) where the CPU has them, else on AVX-512 BF16's dot products
//! ([`Bf16Kernel`]).
//!
//! A 3 × 3 convolution on the padded channels-last board (see the [parent module](super)) is,
//! for each of its nine taps, a matrix product of a block of consecutive board rows (shifted by
//! the tap's offset) by the tap's `[cin, cout]` weights.
//!
//! **AMX** multiplies tiles of 16 rows by 32 bfloat16 values (`tileloadd` with the buffer's row
//! stride) into 16 × 16 `f32` sums (`tdpbf16ps`), so the tap's block of input rows is loaded
//! straight from the activation buffer: no im2col, as on the `f32` path. Each step computes 32
//! board rows by 32 output channels (four sum tiles, two input tiles, two weight tiles: all
//! eight tile registers) and stores the sums to a small `f32` buffer, where the epilogue adds
//! the bias and the residual, applies the ReLU and writes the interior points' outputs: `f32`
//! for the residual stream and the heads, bfloat16 for the next convolution. Border points are
//! never written, so they stay zero, the next layer's padding.
//!
//! **AVX-512 BF16** (AMD Zen 4 and later, Intel Cooper Lake) has `vdpbf16ps`: each of 16 `f32`
//! lanes adds the two products of a pair of bfloat16 values. A row of an AMX weight tile is
//! exactly such an operand (16 output columns, each a pair of input channels), so the same packed
//! weights serve both kernels. The dot-product kernel broadcasts one point's pair of input
//! channels and multiplies it by two such rows (32 output columns), keeping the sums of one
//! rank's nine points in 18 registers over the nine taps; it computes no border rows, and its
//! sums go through the same epilogue.
//!
//! Activations and weights are rounded to bfloat16 (8 significant bits, round to nearest even:
//! a relative error of at most 2⁻⁹ per value) and summed in `f32`; a product of two bfloat16
//! values is exact in `f32`, so the two kernels differ only in the order of their sums. The
//! heads run on the `f32` kernels. Intel's *Architecture Instruction Set Extensions
//! Programming Reference* (chapter 3 for AMX) and the *Intel 64 and IA-32 Architectures Software
//! Developer's Manual* (`VDPBF16PS`) define the instructions; Linux grants a process the AMX
//! state through `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`.
//!
//! On the 2-core Xeon of `experiments/2026-12-06-bf16-ab/` the main job's 2 × 24 net evaluates
//! about 1.9 times the positions per second of the `f32` kernels on AMX, and a 6 × 64 net 3.0
//! times; on the 2-core AMD Zen 5 of `experiments/2026-12-07-bf16-dot-ab/`, with the dot
//! products, 1.35–1.66 and 1.47–1.74 times (medians at batch 64, 256 and 1,024).
//!
//! **Training** (`training.precision = "bf16"`, AMX only) uses the same layer for the tower's
//! convolutions and their input gradients (`conv_planes`: burn's `[n, c, 10, 9]` planes copied
//! to the padded board in bfloat16, the `f32` sums copied back), and one more tile product for
//! the weight gradient (`weight_grad_planes`), whose reduced dimension is the board points: the
//! input laid out a row of points per channel, so that a tap's shift is a column offset, times
//! the output gradient in pairs of points.

// The only `unsafe` of this crate: inline assembly (Rust has no stable AMX intrinsics), the
// AVX-512 intrinsics, and the raw loads and stores of the kernels and the epilogue. Every
// address is checked against its slice's length before the kernels run (`layer`'s assertions).
#![allow(unsafe_code)]

use std::arch::asm;
use std::arch::x86_64::{
    __cpuid_count, __m256bh, __m256i, __m512, __m512bh, __m512i, _mm256_storeu_si256,
    _mm512_add_epi32, _mm512_add_ps, _mm512_cvtneps_pbh, _mm512_dpbf16_ps, _mm512_loadu_ps,
    _mm512_loadu_si512, _mm512_mask_i32gather_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps,
    _mm512_max_ps, _mm512_mullo_epi32, _mm512_set1_epi32, _mm512_setr_epi32, _mm512_setzero_ps,
    _mm512_storeu_ps,
};
use std::sync::OnceLock;

use xiangqi::env::{PLANE_FILES, PLANE_RANKS, PLANE_SIZE};

use super::{PAD_FILES, PAD_SIZE, round_up};

/// Channels of one tile row (64 bytes of bfloat16).
const K_TILE: usize = 32;
/// Output columns of one sum tile.
const N_TILE: usize = 16;
/// Board rows of one sum tile.
const M_TILE: usize = 16;
/// Rows past a chunk's last padded row that the last step may read: two tiles of rows, plus the
/// largest tap offset.
pub(super) const SLACK_ROWS: usize = 2 * M_TILE + PAD_FILES + 1;

/// Which instructions compute a [`Bf16Conv`]'s products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bf16Kernel {
    /// Intel's AMX tiles (`tdpbf16ps`): Xeon Sapphire Rapids and later.
    Tiles,
    /// AVX-512 BF16's dot products of pairs (`vdpbf16ps`, 16 sums at a time): AMD Zen 4 and
    /// later, Intel Cooper Lake and the AMX CPUs.
    Dot,
}

impl Bf16Kernel {
    /// The fastest kernel this CPU and operating system run: the tiles where AMX is granted,
    /// else the dot products where AVX-512 BF16 is present, else none.
    pub(crate) fn best() -> Option<Bf16Kernel> {
        if tiles_available() {
            Some(Bf16Kernel::Tiles)
        } else if dot_available() {
            Some(Bf16Kernel::Dot)
        } else {
            None
        }
    }

    /// Whether this CPU and operating system run this kernel.
    pub(crate) fn available(self) -> bool {
        match self {
            Bf16Kernel::Tiles => tiles_available(),
            Bf16Kernel::Dot => dot_available(),
        }
    }
}

/// Whether this CPU has AVX-512 with its bfloat16 instructions (foundation, byte and word,
/// vector length, BF16): the dot-product kernel, the planes' copy and the epilogue's rounding.
pub(crate) fn dot_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    })
}

/// Whether this CPU and the operating system let this process use AMX with bfloat16 (and
/// AVX-512 with its bfloat16 conversions, for the epilogue). Asked once; the first call also
/// requests the AMX state from Linux for the whole process.
pub(crate) fn tiles_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE.
        let leaf7 = __cpuid_count(7, 0);
        let amx = leaf7.edx & (1 << 22) != 0 && leaf7.edx & (1 << 24) != 0;
        amx && dot_available() && request_tile_data()
    })
}

/// Asks Linux for the AMX tile data state (`arch_prctl(ARCH_REQ_XCOMP_PERM, 18)`): without it
/// the first tile instruction kills the process.
fn request_tile_data() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a plain system call with two integer arguments; it only changes which register
    // state the kernel saves for this process.
    unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
}

/// bfloat16 of `x`, rounded to nearest even (NaN stays NaN, quieted), as `half::bf16::from_f32`
/// computes it, without branches (the copies into the bfloat16 buffers call it for every value).
#[inline(always)]
pub(crate) fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    let nan = ((b >> 16) as u16) | 0x40;
    if b & 0x7fff_ffff > 0x7f80_0000 { nan } else { rounded }
}

/// A 3 × 3 convolution's weights packed as AMX weight tiles.
#[derive(Debug, Clone)]
pub(crate) struct Bf16Conv {
    /// Row offsets of the nine taps.
    taps: Vec<isize>,
    /// Input channels; the input buffer's stride is `round_up(cin, 32)`.
    cin: usize,
    /// Output channels.
    cout: usize,
    /// Output columns computed: `cout` rounded up to 32 (the bfloat16 output's stride).
    cols: usize,
    /// Tiles in `[tap][channel block of 32][column block of 16]` order, each 16 rows of 16
    /// pairs: row `p`, column `n` holds the weights of input channels `2p` and `2p + 1` for
    /// output column `n` (the layout `tdpbf16ps` reads).
    weight: Vec<u16>,
    /// `[cols]`, zero beyond `cout`.
    bias: Vec<f32>,
}

impl Bf16Conv {
    /// Packs a convolution's folded weights `[out, in, 3, 3]` and bias `[out]`.
    pub(crate) fn conv3x3(weight: &[f32], bias: &[f32], shape: [usize; 4]) -> Bf16Conv {
        let [cout, cin, kh, kw] = shape;
        debug_assert!(kh == 3 && kw == 3);
        debug_assert_eq!(weight.len(), cout * cin * 9);
        let blocks = cin.div_ceil(K_TILE);
        let cols = round_up(cout, 2 * N_TILE);
        let col_tiles = cols / N_TILE;
        let mut packed = vec![0u16; 9 * blocks * col_tiles * M_TILE * N_TILE * 2];
        for t in 0..9 {
            for kb in 0..blocks {
                for j in 0..col_tiles {
                    let tile = ((t * blocks + kb) * col_tiles + j) * M_TILE * N_TILE * 2;
                    for p in 0..K_TILE / 2 {
                        for n in 0..N_TILE {
                            for e in 0..2 {
                                let (o, c) = (j * N_TILE + n, kb * K_TILE + 2 * p + e);
                                if o < cout && c < cin {
                                    let w = weight[(o * cin + c) * 9 + t];
                                    packed[tile + (p * N_TILE + n) * 2 + e] = bf16(w);
                                }
                            }
                        }
                    }
                }
            }
        }
        let taps = (0..9)
            .map(|t| (t / 3 - 1) as isize * PAD_FILES as isize + (t % 3) as isize - 1)
            .collect();
        let mut padded_bias = vec![0.0; cols];
        padded_bias[..cout].copy_from_slice(bias);
        Bf16Conv { taps, cin, cout, cols, weight: packed, bias: padded_bias }
    }

    /// The input buffer's row stride in bfloat16 values.
    pub(crate) fn in_stride(&self) -> usize {
        round_up(self.cin, K_TILE)
    }

    /// The bfloat16 output's row stride (output columns computed).
    pub(crate) fn out_stride(&self) -> usize {
        self.cols
    }
}

/// Where a layer's outputs go.
pub(crate) struct Outputs<'a> {
    /// bfloat16 outputs, `[rows, out_stride]`, every computed column of every interior row.
    pub(crate) bf16: Option<&'a mut [u16]>,
    /// `f32` outputs `[rows, stride]`, the first `cout` columns of every interior row; with
    /// `residual`, their values before the call are added to the sums first.
    pub(crate) f32: Option<(&'a mut [f32], usize)>,
    pub(crate) residual: bool,
    pub(crate) relu: bool,
}

/// Runs `conv` over the interior points of `n` positions of `input` (`[rows, in_stride]`
/// bfloat16 on the padded board, at least `n · 132 + SLACK_ROWS` rows, border rows zero) with
/// `kernel`. Both kernels round nothing but the inputs: the products of bfloat16 values are exact
/// in `f32`, and only the order of the `f32` sums differs between them.
///
/// # Panics
/// If `kernel` is not available here, or a buffer is too short for `n` positions.
pub(crate) fn layer(
    conv: &Bf16Conv,
    kernel: Bf16Kernel,
    input: &[u16],
    n: usize,
    out: Outputs<'_>,
    sums: &mut Vec<f32>,
) {
    assert!(kernel.available(), "the bfloat16 kernel {kernel:?} is not available");
    if n == 0 {
        return;
    }
    let in_stride = conv.in_stride();
    assert!(input.len() >= (n * PAD_SIZE + SLACK_ROWS) * in_stride, "input buffer too short");
    if let Some(b) = &out.bf16 {
        assert!(b.len() >= n * PAD_SIZE * conv.cols, "bfloat16 output too short");
    }
    if let Some((f, stride)) = &out.f32 {
        assert!(*stride >= conv.cout && f.len() >= n * PAD_SIZE * stride, "f32 output too short");
    }
    assert!(!out.residual || out.f32.is_some(), "a residual needs the f32 output");
    sums.resize(2 * M_TILE * 2 * N_TILE, 0.0);
    // SAFETY: `available` checked the CPU features (and for the tiles, the tile permission);
    // the assertions above bound every address the functions form (see their comments).
    match kernel {
        Bf16Kernel::Tiles => unsafe { layer_amx(conv, input, n, out, sums) },
        Bf16Kernel::Dot => unsafe { layer_dot(conv, input, n, out, sums) },
    }
}

/// Copies positions' input planes (`[n, pl, 10, 9]`, `f32`) onto the padded board,
/// channels-last in bfloat16 with `stride` (a multiple of 16, at least `pl`): every interior
/// row's `stride` values are written (the channels past `pl` as zeros), border rows are left as
/// they are. Values are converted 16 at a time by one instruction, rounded to nearest even as
/// [`bf16`] rounds (NaN stays NaN), except that subnormal values (below 1.2e-38 in magnitude,
/// never a plane's) become zeros of their sign, as the tower's activations do in the same
/// instruction. For [`Bf16Kernel::Tiles`] each row's channels are gathered 16 at a time (the
/// faster way on the AMX Xeon); for [`Bf16Kernel::Dot`] each plane is converted in its points'
/// order into `scratch` and then transposed by scalar copies (AMD's gathers are slow: this copy
/// took 18% of the 2 × 24 net's time with gathers on a Zen 5).
///
/// # Panics
/// If AVX-512 BF16 is not available ([`dot_available`]), `stride` is not a multiple of 16 of at
/// least `pl`, or `dst` is shorter than the positions' padded boards.
pub(crate) fn input_planes(
    kernel: Bf16Kernel,
    planes: &[f32],
    pl: usize,
    dst: &mut [u16],
    stride: usize,
    scratch: &mut Vec<u16>,
) {
    assert!(dot_available(), "AVX-512 BF16 is not available");
    assert!(stride >= pl && stride.is_multiple_of(N_TILE), "bad stride {stride} for {pl} planes");
    let n = if pl == 0 { 0 } else { planes.len() / (pl * PLANE_SIZE) };
    assert!(dst.len() >= n * PAD_SIZE * stride, "bfloat16 input too short");
    match kernel {
        // SAFETY: `dot_available` checked the CPU features; the gathers read only `planes`'
        // first `n · pl · 90` floats and the stores write rows of `dst` inside the length
        // asserted.
        Bf16Kernel::Tiles => unsafe { input_planes_avx512(planes, pl, n, dst, stride) },
        Bf16Kernel::Dot => {
            scratch.resize(pl * PLANE_CHUNKS * N_TILE, 0);
            // SAFETY: as above; `scratch` holds `pl` planes of 96 values.
            unsafe { input_planes_transposed(planes, pl, n, dst, stride, scratch) }
        }
    }
}

/// Vectors of 16 that cover a plane's 90 points (the last one partial).
const PLANE_CHUNKS: usize = PLANE_SIZE.div_ceil(N_TILE);

/// [`input_planes`] for [`Bf16Kernel::Dot`]: each position's planes converted to bfloat16 16
/// points at a time into `scratch` (`[pl, 96]`), then copied point by point onto the board.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn input_planes_transposed(
    planes: &[f32],
    pl: usize,
    n: usize,
    dst: &mut [u16],
    stride: usize,
    scratch: &mut [u16],
) {
    let width = PLANE_CHUNKS * N_TILE;
    let tail = PLANE_SIZE - (PLANE_CHUNKS - 1) * N_TILE;
    for (i, position) in planes.chunks_exact(pl * PLANE_SIZE).take(n).enumerate() {
        for (plane, out) in position.chunks_exact(PLANE_SIZE).zip(scratch.chunks_exact_mut(width)) {
            for k in 0..PLANE_CHUNKS {
                let valid = if k + 1 == PLANE_CHUNKS { tail } else { N_TILE };
                let mask = ((1u32 << valid) - 1) as u16;
                // SAFETY: the unmasked lanes are points `16 k .. 16 k + valid ≤ 90` of the
                // plane; the store is 16 values at `16 k` of the plane's 96 in `out`.
                unsafe {
                    let v = _mm512_maskz_loadu_ps(mask, plane.as_ptr().add(k * N_TILE));
                    _mm256_storeu_si256(
                        out.as_mut_ptr().add(k * N_TILE).cast(),
                        std::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(v)),
                    );
                }
            }
        }
        for sq in 0..PLANE_SIZE {
            let row = super::padded_row(i, sq);
            let (dst, rest) = dst[row * stride..(row + 1) * stride].split_at_mut(pl);
            for (c, d) in dst.iter_mut().enumerate() {
                *d = scratch[c * width + sq];
            }
            rest.fill(0);
        }
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn input_planes_avx512(planes: &[f32], pl: usize, n: usize, dst: &mut [u16], stride: usize) {
    // Lane `l` of group `g` reads channel `16 g + l`: offset `(16 g + l) · 90` from its square.
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let channel_offsets = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(PLANE_SIZE as i32));
    let zero = _mm512_setzero_ps();
    for i in 0..n {
        let position = &planes[i * pl * PLANE_SIZE..(i + 1) * pl * PLANE_SIZE];
        for sq in 0..PLANE_SIZE {
            let row = super::padded_row(i, sq);
            for g in 0..stride / N_TILE {
                let first = g * N_TILE;
                let valid = pl.saturating_sub(first).min(N_TILE);
                let mask = ((1u32 << valid) - 1) as u16;
                let base = ((first * PLANE_SIZE + sq) as i32).min(position.len() as i32);
                let offsets = _mm512_add_epi32(channel_offsets, _mm512_set1_epi32(base));
                // SAFETY: the unmasked lanes read channels `first..first + valid < pl` of
                // square `sq`, inside `position`; masked lanes read nothing.
                let v = unsafe {
                    _mm512_mask_i32gather_ps::<4>(zero, mask, offsets, position.as_ptr())
                };
                let out = dst[row * stride + first..row * stride + first + N_TILE].as_mut_ptr();
                // SAFETY: 16 bfloat16 values (32 bytes) at `out`, inside the slice.
                unsafe {
                    _mm256_storeu_si256(
                        out.cast(),
                        std::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(v)),
                    )
                };
            }
        }
    }
}

/// The tile configuration: palette 1, tiles 0–7 each 16 rows of 64 bytes.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
}

const CONFIG: TileConfig = {
    let mut c =
        TileConfig { palette: 1, start_row: 0, reserved: [0; 14], colsb: [0; 16], rows: [0; 16] };
    let mut t = 0;
    while t < 8 {
        c.colsb[t] = 64;
        c.rows[t] = 16;
        t += 1;
    }
    c
};

/// One step of a tile product: the sum tiles `tmm0`–`tmm3` (configured by [`CONFIG`]) add
/// `A0 · B0`, `A0 · B1`, `A1 · B0` and `A1 · B1`, where `A0`, `A1` are 16 rows of 32 bfloat16
/// values from `a[0]`, `a[1]` (rows `a_stride` bytes apart) and `B0`, `B1` are 16 rows of 16
/// pairs from `b[0]`, `b[1]` (rows `b_stride` bytes apart).
///
/// # Safety
/// AMX must be available, its state granted and [`CONFIG`] loaded; each of the four tiles
/// (16 rows of 64 bytes at its stride) must lie inside one allocation.
#[inline(always)]
unsafe fn tile_step(a: [*const u16; 2], a_stride: usize, b: [*const u16; 2], b_stride: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        asm!(
            "tileloadd tmm4, [{a0} + {s}*1]",
            "tileloadd tmm5, [{a1} + {s}*1]",
            "tileloadd tmm6, [{b0} + {w}*1]",
            "tileloadd tmm7, [{b1} + {w}*1]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            a0 = in(reg) a[0],
            a1 = in(reg) a[1],
            b0 = in(reg) b[0],
            b1 = in(reg) b[1],
            s = in(reg) a_stride,
            w = in(reg) b_stride,
            options(nostack, readonly),
        )
    }
}

/// Zeroes the sum tiles `tmm0`–`tmm3`.
///
/// # Safety
/// AMX must be available, its state granted and [`CONFIG`] loaded.
#[inline(always)]
unsafe fn zero_sums() {
    // SAFETY: the caller's contract.
    unsafe {
        asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            options(nostack, nomem)
        )
    }
}

/// Stores the sum tiles `tmm0`–`tmm3` as a block of 32 × 32 floats at `s`, rows `stride`
/// floats apart: `tmm0` top left, `tmm1` top right, `tmm2` bottom left, `tmm3` bottom right.
///
/// # Safety
/// As [`tile_step`]; the block (32 rows of 32 floats at the stride) must lie inside one
/// allocation.
#[inline(always)]
unsafe fn store_sums(s: *mut f32, stride: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        asm!(
            "tilestored [{s0} + {st}*1], tmm0",
            "tilestored [{s1} + {st}*1], tmm1",
            "tilestored [{s2} + {st}*1], tmm2",
            "tilestored [{s3} + {st}*1], tmm3",
            s0 = in(reg) s,
            s1 = in(reg) s.add(N_TILE),
            s2 = in(reg) s.add(M_TILE * stride),
            s3 = in(reg) s.add(M_TILE * stride + N_TILE),
            st = in(reg) stride * 4,
            options(nostack),
        )
    }
}

/// Whether padded-board row `row` is a board point (not the zero border).
fn interior(row: usize) -> bool {
    let r = row % PAD_SIZE;
    let (rank, file) = (r / PAD_FILES, r % PAD_FILES);
    (1..=super::PLANE_RANKS).contains(&rank) && (1..=super::PLANE_FILES).contains(&file)
}

/// The first and the last padded row of `n` positions' interior points (rows `first..=last`
/// hold them all, with border rows between).
fn interior_rows(n: usize) -> (usize, usize) {
    (PAD_FILES + 1, n * PAD_SIZE - PAD_FILES - 2)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn layer_amx(conv: &Bf16Conv, input: &[u16], n: usize, out: Outputs<'_>, sums: &mut [f32]) {
    let in_stride = conv.in_stride();
    let blocks = in_stride / K_TILE;
    let col_tiles = conv.cols / N_TILE;
    let tile_len = M_TILE * N_TILE * 2;
    // Interior rows lie in `first..=last`; steps of 32 rows from `first` read rows from
    // `first - 12 = 0` to below `last + 1 + 31 + 12 < n · 132 + SLACK_ROWS`.
    let (first, last) = interior_rows(n);
    let in_bytes = in_stride * 2;
    let mut out = out;
    // SAFETY: the configuration is a valid palette-1 layout.
    unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly)) };
    let mut r0 = first;
    while r0 <= last {
        for j0 in (0..col_tiles).step_by(2) {
            // SAFETY: the tiles were configured above.
            unsafe { zero_sums() };
            for (t, &tap) in conv.taps.iter().enumerate() {
                let row = r0.wrapping_add_signed(tap);
                for kb in 0..blocks {
                    let a0 = input[row * in_stride + kb * K_TILE..].as_ptr();
                    // Rows `row + 16 ..` (within the slack, see above).
                    let a1 = input[(row + M_TILE) * in_stride + kb * K_TILE..].as_ptr();
                    let tile = ((t * blocks + kb) * col_tiles + j0) * tile_len;
                    let b = conv.weight[tile..tile + 2 * tile_len].as_ptr();
                    // SAFETY: each A tile is 16 rows of 64 bytes from `a0`/`a1` with the
                    // buffer's stride (inside `input` by the bound above); the two weight
                    // tiles are the 2 KiB from `b`, inside `conv.weight`.
                    unsafe { tile_step([a0, a1], in_bytes, [b, b.add(tile_len)], 64) };
                }
            }
            // SAFETY: four 16 × 16 f32 tiles into `sums` (32 rows of 32 floats, 4 KiB).
            unsafe { store_sums(sums.as_mut_ptr(), 2 * N_TILE) };
            // SAFETY: `layer` checked the outputs' lengths; this function's features.
            unsafe { epilogue(conv, r0, 2 * M_TILE, j0, last, sums, &mut out) };
        }
        r0 += 2 * M_TILE;
    }
    // SAFETY: returns the tile registers to their initial state (no more tile use until the
    // next `ldtilecfg`).
    unsafe { asm!("tilerelease", options(nostack, nomem)) };
}

/// [`layer_amx`]'s products by AVX-512 BF16's `vdpbf16ps`, one rank of one position at a time
/// (its nine interior points: the border rows are not computed) by 32 output columns: for every
/// tap and pair of input channels, the pair's two bfloat16 values at a point, broadcast to the
/// 16 lanes, times the 16 output columns' weights of the pair (32 bfloat16 values: one row of
/// one of [`Bf16Conv`]'s tiles), added to the point's sums. The 9 × 2 sum vectors stay in
/// registers over the nine taps; pairs of padding channels past `cin` are skipped (their
/// weights are zero). The sums go to `sums` and the tiles' epilogue writes them.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn layer_dot(conv: &Bf16Conv, input: &[u16], n: usize, out: Outputs<'_>, sums: &mut [f32]) {
    let in_stride = conv.in_stride();
    let blocks = in_stride / K_TILE;
    let col_tiles = conv.cols / N_TILE;
    let tile_len = M_TILE * N_TILE * 2;
    let (_, last) = interior_rows(n);
    let mut out = out;
    for i in 0..n {
        for rank in 0..PLANE_RANKS {
            // The rank's points are rows `r0 .. r0 + 9`; their taps read rows `r0 - 12` to
            // `r0 + 8 + 12`, inside the position's padded board.
            let r0 = super::padded_row(i, rank * PLANE_FILES);
            for j0 in (0..col_tiles).step_by(2) {
                let mut acc = [[_mm512_setzero_ps(); 2]; PLANE_FILES];
                for (t, &tap) in conv.taps.iter().enumerate() {
                    let row = r0.wrapping_add_signed(tap);
                    for kb in 0..blocks {
                        let pairs = (conv.cin - kb * K_TILE).min(K_TILE).div_ceil(2);
                        // Channels `kb · 32 ..` of rows `row .. row + 9`.
                        let a = input[row * in_stride + kb * K_TILE..]
                            [..(PLANE_FILES - 1) * in_stride + K_TILE]
                            .as_ptr();
                        let tile = ((t * blocks + kb) * col_tiles + j0) * tile_len;
                        let w = conv.weight[tile..tile + 2 * tile_len].as_ptr();
                        for p in 0..pairs {
                            // SAFETY: `p < 16`: 64 bytes at `32 p` of each of the two tiles
                            // at `w`, inside the slice taken above.
                            let (w0, w1): (__m512bh, __m512bh) = unsafe {
                                (
                                    std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(
                                        w.add(p * 2 * N_TILE).cast(),
                                    )),
                                    std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(
                                        w.add(tile_len + p * 2 * N_TILE).cast(),
                                    )),
                                )
                            };
                            for (f, point) in acc.iter_mut().enumerate() {
                                // SAFETY: channels `2 p`, `2 p + 1 < 32` of row `f < 9` of
                                // the block taken above.
                                let pair = unsafe {
                                    a.add(f * in_stride + 2 * p).cast::<i32>().read_unaligned()
                                };
                                // SAFETY: 32 bfloat16 values are 512 bits as 16 integers are.
                                let x = unsafe {
                                    std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(
                                        pair,
                                    ))
                                };
                                point[0] = _mm512_dpbf16_ps(point[0], x, w0);
                                point[1] = _mm512_dpbf16_ps(point[1], x, w1);
                            }
                        }
                    }
                }
                for (f, point) in acc.iter().enumerate() {
                    for (v, &s) in point.iter().enumerate() {
                        let at = f * 2 * N_TILE + v * N_TILE;
                        // SAFETY: 16 floats of the 32 × 32 block `sums` (`layer` sized it).
                        unsafe { _mm512_storeu_ps(sums[at..at + N_TILE].as_mut_ptr(), s) };
                    }
                }
                // SAFETY: `layer` checked the outputs' lengths; this function's features.
                unsafe { epilogue(conv, r0, PLANE_FILES, j0, last, sums, &mut out) };
            }
        }
    }
}

/// Writes one step's sums (`sums`: `count` ≤ 32 board rows from `r0` by the 32 output columns
/// from `j0 · 16`, rows 32 floats apart) to `out`: the bias added, then the residual (the `f32`
/// output's values before the call), then the ReLU; `f32` outputs for the columns below `cout`
/// of every interior row up to `last`, bfloat16 outputs for every computed column (zero past
/// `cout`, the next layer's padding channels). Border rows are not written.
///
/// # Safety
/// `out`'s buffers must hold `n · 132` rows at their strides (as `layer` asserts), with `last`
/// below `n · 132`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
#[inline]
unsafe fn epilogue(
    conv: &Bf16Conv,
    r0: usize,
    count: usize,
    j0: usize,
    last: usize,
    sums: &[f32],
    out: &mut Outputs<'_>,
) {
    let zero = _mm512_setzero_ps();
    let Outputs { bf16, f32, residual, relu } = out;
    for i in 0..count {
        let row = r0 + i;
        if row > last {
            break;
        }
        if !interior(row) {
            continue;
        }
        for v in 0..2 {
            let col = (j0 + v) * N_TILE;
            // SAFETY: 16 floats of `sums` and of `bias` (`cols` long, `col + 16 ≤ cols`).
            let mut a: __m512 = unsafe {
                _mm512_add_ps(
                    _mm512_loadu_ps(sums[i * 2 * N_TILE + v * N_TILE..].as_ptr()),
                    _mm512_loadu_ps(conv.bias[col..col + N_TILE].as_ptr()),
                )
            };
            let valid = conv.cout.saturating_sub(col).min(N_TILE);
            let mask = ((1u32 << valid) - 1) as u16;
            if let Some((f, stride)) = f32 {
                let p = f[row * *stride..].as_mut_ptr();
                // SAFETY: the masked lanes are the columns `col..col + valid` of row
                // `row`, within `cout ≤ stride` and the slice (asserted in `layer`).
                unsafe {
                    if *residual && valid > 0 {
                        a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(mask, p.add(col)));
                    }
                }
                if *relu {
                    a = _mm512_max_ps(zero, a);
                }
                // SAFETY: as above.
                unsafe { _mm512_mask_storeu_ps(p.add(col), mask, a) };
            } else if *relu {
                a = _mm512_max_ps(zero, a);
            }
            if let Some(b) = bf16 {
                let dst = b[row * conv.cols + col..row * conv.cols + col + N_TILE].as_mut_ptr();
                // SAFETY: 16 bfloat16 values (32 bytes) at `dst`, inside the slice.
                unsafe {
                    _mm256_storeu_si256(
                        dst.cast(),
                        std::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(a)),
                    )
                };
            }
        }
    }
}

/// One thread's buffers for the training convolutions in bfloat16, reused across calls. Each
/// keeps the zeros it needs (border points, margins) from one call to the next: it is only ever
/// grown with zeros, cleared when its layout changes, and only its interior rewritten.
#[derive(Debug, Default)]
pub(crate) struct TrainScratch {
    /// The input on the padded board, channels-last, in bfloat16, of stride `input_stride`.
    input: Vec<u16>,
    input_stride: usize,
    /// The output on the padded board, channels-last, in `f32` (only interior rows are read).
    out: Vec<f32>,
    /// The tile sums.
    sums: Vec<f32>,
    /// One position's planes in bfloat16.
    planes: Vec<u16>,
    /// The weight gradient's input, channel-major (see [`weight_grad_planes`]), rows of
    /// `xt_len` values.
    xt: Vec<u16>,
    xt_len: usize,
    /// The weight gradient's output gradient, in pairs of points (see [`weight_grad_planes`]),
    /// of shape `gv_shape`: points, output channels.
    gv: Vec<u16>,
    gv_shape: (usize, usize),
}

/// Makes `buf` hold `len` values, zeroing it first when `layout` differs from `*current`.
fn prepare<T: Copy + Default, L: PartialEq>(
    buf: &mut Vec<T>,
    len: usize,
    current: &mut L,
    layout: L,
) {
    if *current != layout {
        buf.clear();
        *current = layout;
    }
    if buf.len() < len {
        buf.resize(len, T::default());
    }
}

/// `x` rounded to bfloat16 into `out` (resized to `x`'s length).
fn to_bf16(x: &[f32], out: &mut Vec<u16>) {
    out.resize(x.len(), 0);
    for (d, &v) in out.iter_mut().zip(x) {
        *d = bf16(v);
    }
}

/// The padded-board row of `rank`, `file` of position `i`.
fn row_of(i: usize, rank: usize, file: usize) -> usize {
    i * PAD_SIZE + (rank + 1) * PAD_FILES + file + 1
}

/// The 3 × 3 convolution of one chunk of `[n, cin, 10, 9]` planes by `conv` (packed with a zero
/// bias), in bfloat16 with `f32` sums, written as `[n, cout, 10, 9]` planes to `out`: the
/// training convolution of [`super::board_conv3x3`] (and its input gradient, with the flipped,
/// transposed weights) in bfloat16.
///
/// # Panics
/// If AMX is not available ([`tiles_available`]) or `out` is not `n · cout · 90` long.
pub(crate) fn conv_planes(conv: &Bf16Conv, x: &[f32], out: &mut [f32], s: &mut TrainScratch) {
    let (cin, cout) = (conv.cin, conv.cout);
    let n = x.len() / (cin * PLANE_SIZE);
    assert_eq!(out.len(), n * cout * PLANE_SIZE, "output shape");
    let ins = conv.in_stride();
    // Border rows stay zero; interior rows are written whole, padding channels included.
    // Rows past the last position may hold older values: they only reach outputs of rows past
    // the last, which the layer does not write.
    prepare(&mut s.input, (n * PAD_SIZE + SLACK_ROWS) * ins, &mut s.input_stride, ins);
    for (i, position) in x.chunks_exact(cin * PLANE_SIZE).enumerate() {
        // Rounded in the planes' order (consecutive values: vectorised), then transposed.
        to_bf16(position, &mut s.planes);
        for rank in 0..PLANE_RANKS {
            for file in 0..PLANE_FILES {
                let row = row_of(i, rank, file);
                let (dst, rest) = s.input[row * ins..(row + 1) * ins].split_at_mut(cin);
                let src = s.planes[rank * PLANE_FILES + file..].iter().step_by(PLANE_SIZE);
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = v;
                }
                rest.fill(0);
            }
        }
    }
    if s.out.len() < n * PAD_SIZE * cout {
        s.out.resize(n * PAD_SIZE * cout, 0.0);
    }
    let o = Outputs { bf16: None, f32: Some((&mut s.out, cout)), residual: false, relu: false };
    layer(conv, Bf16Kernel::Tiles, &s.input, n, o, &mut s.sums);
    for (i, position) in out.chunks_exact_mut(cout * PLANE_SIZE).enumerate() {
        for (c, plane) in position.chunks_exact_mut(PLANE_SIZE).enumerate() {
            for rank in 0..PLANE_RANKS {
                for file in 0..PLANE_FILES {
                    plane[rank * PLANE_FILES + file] = s.out[row_of(i, rank, file) * cout + c];
                }
            }
        }
    }
}

/// Zero columns before the first padded row in the weight gradient's channel-major input: at
/// least the largest tap offset (12).
const MARGIN: usize = 16;

/// The weight gradient of a 3 × 3 convolution over one chunk, in bfloat16 with `f32` sums:
/// `acc[t, i, o] += Σ_p grad[p, o] · x[p + d_t, i]` over the chunk's padded points `p`
/// (`acc`: `[9, cin, cout]`; `x`: `[n, cin, 10, 9]` and `grad`: `[n, cout, 10, 9]` planes).
///
/// It is one tile product per tap with the points as the long (reduced) dimension. The input
/// is laid out channel-major, a row of padded points per channel (`xt`), so the tap's shift is
/// a column offset and each 16 × 32 input tile is loaded straight from it; the gradient is laid
/// out in pairs of consecutive points per output channel (`gv`, the layout `tdpbf16ps` reads
/// for its second operand). The gradient is zero at border points, so summing over every padded
/// point sums over the board.
///
/// # Panics
/// If AMX is not available ([`tiles_available`]) or the lengths do not match those shapes.
pub(crate) fn weight_grad_planes(
    x: &[f32],
    grad: &[f32],
    cin: usize,
    cout: usize,
    acc: &mut [f32],
    s: &mut TrainScratch,
) {
    assert!(tiles_available(), "AMX is not available");
    assert!(cin > 0 && cout > 0 && x.len().is_multiple_of(cin * PLANE_SIZE), "input shape");
    let n = x.len() / (cin * PLANE_SIZE);
    assert_eq!(grad.len(), n * cout * PLANE_SIZE, "gradient shape");
    assert_eq!(acc.len(), 9 * cin * cout, "weight shape");
    if n == 0 {
        return;
    }
    // Points summed (in steps of 32), input channels and output channels, padded to whole
    // pairs of tiles.
    let k = round_up(n * PAD_SIZE, 2 * M_TILE);
    let ci = round_up(cin, 2 * M_TILE);
    let co = round_up(cout, 2 * N_TILE);
    let len = MARGIN + k + MARGIN;
    // The margins, the border points and the points past the last position stay zero (the
    // layout is the same for the same `n`); rows of channels `cin ..` and columns of outputs
    // `cout ..` may hold older values, which reach only sums that are not read.
    prepare(&mut s.xt, ci * len, &mut s.xt_len, len);
    for (i, position) in x.chunks_exact(cin * PLANE_SIZE).enumerate() {
        for (c, plane) in position.chunks_exact(PLANE_SIZE).enumerate() {
            let board = &mut s.xt[c * len + MARGIN + i * PAD_SIZE..][..PAD_SIZE];
            for (rank, src) in plane.chunks_exact(PLANE_FILES).enumerate() {
                let dst = &mut board[(rank + 1) * PAD_FILES + 1..][..PLANE_FILES];
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = bf16(v);
                }
            }
        }
    }
    // `[k / 2, co, 2]`: point `p`, channel `o` at `((p / 2) · co + o) · 2 + p % 2`.
    prepare(&mut s.gv, k * co, &mut s.gv_shape, (k, co));
    for (i, position) in grad.chunks_exact(cout * PLANE_SIZE).enumerate() {
        to_bf16(position, &mut s.planes);
        for rank in 0..PLANE_RANKS {
            for file in 0..PLANE_FILES {
                let p = row_of(i, rank, file);
                let dst = &mut s.gv[(p / 2) * co * 2 + p % 2..];
                let src = s.planes[rank * PLANE_FILES + file..].iter().step_by(PLANE_SIZE);
                for (d, &v) in dst.iter_mut().step_by(2).zip(src) {
                    *d = v;
                }
            }
        }
    }
    s.sums.clear();
    s.sums.resize(9 * ci * co, 0.0);
    // SAFETY: `tiles_available` checked the CPU features and the tile permission; the buffers have
    // the sizes `weight_grad_amx` documents.
    unsafe { weight_grad_amx(&s.xt, len, &s.gv, k, ci, co, &mut s.sums) };
    for t in 0..9 {
        for i in 0..cin {
            let src = &s.sums[(t * ci + i) * co..][..cout];
            let dst = &mut acc[(t * cin + i) * cout..][..cout];
            for (d, &v) in dst.iter_mut().zip(src) {
                *d += v;
            }
        }
    }
}

/// `sums[t, c, o] = Σ_{p < k} xt[c, MARGIN + p + d_t] · gv[p, o]` for the nine taps, every
/// channel `c < ci` and output `o < co` (`sums`: `[9, ci, co]`).
///
/// # Safety
/// AMX must be available (and its state granted); `xt` is `ci · len` values with `len = MARGIN
/// + k + MARGIN`, `gv` is `k · co`, `sums` is `9 · ci · co`; `k`, `ci` and `co` are multiples of
/// 32.
unsafe fn weight_grad_amx(
    xt: &[u16],
    len: usize,
    gv: &[u16],
    k: usize,
    ci: usize,
    co: usize,
    sums: &mut [f32],
) {
    debug_assert!(k.is_multiple_of(32) && ci.is_multiple_of(32) && co.is_multiple_of(32));
    debug_assert!(xt.len() >= ci * len && len == k + 2 * MARGIN);
    debug_assert!(gv.len() >= k * co && sums.len() >= 9 * ci * co);
    let tile_row = M_TILE;
    // SAFETY: the configuration is a valid palette-1 layout.
    unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly)) };
    for t in 0..9 {
        // The tap's offset, as in `Bf16Conv::conv3x3`.
        let tap = (t / 3) as isize * PAD_FILES as isize + (t % 3) as isize - PAD_FILES as isize - 1;
        for c0 in (0..ci).step_by(2 * M_TILE) {
            for o0 in (0..co).step_by(2 * N_TILE) {
                // SAFETY: the tiles were configured above.
                unsafe { zero_sums() };
                for p0 in (0..k).step_by(2 * M_TILE) {
                    // Columns `col .. col + 32` with `col ≥ MARGIN − 12 ≥ 0` and `col + 32 ≤
                    // MARGIN + k + 12 ≤ len`, of rows `c0 .. c0 + 32 ≤ ci`.
                    let col = (MARGIN + p0).wrapping_add_signed(tap);
                    let a0 = xt[c0 * len + col..].as_ptr();
                    let a1 = xt[(c0 + tile_row) * len + col..].as_ptr();
                    // Pairs `p0 / 2 .. p0 / 2 + 16 ≤ k / 2`, columns `o0 .. o0 + 32 ≤ co`.
                    let b = gv[(p0 / 2 * co + o0) * 2..].as_ptr();
                    // SAFETY: the tiles lie inside `xt` and `gv` by the bounds above.
                    unsafe { tile_step([a0, a1], len * 2, [b, b.add(2 * N_TILE)], co * 4) };
                }
                let s = sums[(t * ci + c0) * co + o0..].as_mut_ptr();
                // SAFETY: four 16 × 16 f32 tiles at rows `c0 .. c0 + 32`, columns `o0 .. o0 +
                // 32` of the tap's `[ci, co]` block, inside `sums`.
                unsafe { store_sums(s, co) };
            }
        }
    }
    // SAFETY: returns the tile registers to their initial state.
    unsafe { asm!("tilerelease", options(nostack, nomem)) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::padded_row;
    use crate::kernels::tests::noise;
    use xiangqi::env::PLANE_SIZE;

    fn round(x: f32) -> f64 {
        f64::from(half::bf16::from_bits(bf16(x)).to_f32())
    }

    /// The planes' copy: every interior value is the scalar rounding of its plane's value at its
    /// point (NaN, infinities, ties and tiny values among them; subnormals flushed to zero), the
    /// channels past the planes are zero even where the buffer held other values, and border
    /// rows keep theirs.
    #[test]
    fn input_planes_round_every_value_onto_its_point() {
        if !dot_available() {
            eprintln!("skipped: this CPU has no AVX-512 BF16");
            return;
        }
        let kernels: Vec<Bf16Kernel> =
            [Bf16Kernel::Tiles, Bf16Kernel::Dot].into_iter().filter(|k| k.available()).collect();
        for kernel in kernels {
            input_planes_by_kernel(kernel);
        }
    }

    fn input_planes_by_kernel(kernel: Bf16Kernel) {
        let special = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            1.0 + f32::EPSILON * 64.0,  // a tie below: rounds to even
            1.0 + f32::EPSILON * 192.0, // a tie above: rounds up to even
            3.0e38,
            1.0e-30,
            1.0e-39,  // subnormal: flushed to zero
            -1.0e-39, // subnormal: flushed to -0
        ];
        for (pl, stride) in [(1, 16), (16, 16), (17, 32), (23, 32), (33, 64), (23, 64)] {
            for n in [1, 3] {
                let mut planes = noise(n * pl * PLANE_SIZE, (pl * 10 + n) as u32);
                let len = planes.len();
                for (k, v) in special.iter().enumerate() {
                    planes[(k * 997) % len] = *v;
                }
                let mut dst = vec![0x1234u16; n * PAD_SIZE * stride + 7];
                input_planes(kernel, &planes, pl, &mut dst, stride, &mut vec![7; 5]);
                let mut interior = vec![false; n * PAD_SIZE];
                for i in 0..n {
                    for sq in 0..PLANE_SIZE {
                        let row = padded_row(i, sq);
                        interior[row] = true;
                        for c in 0..stride {
                            let got = dst[row * stride + c];
                            let want = match planes.get((i * pl + c) * PLANE_SIZE + sq) {
                                Some(x) if c < pl && x.is_subnormal() => bf16(0.0f32.copysign(*x)),
                                Some(x) if c < pl => bf16(*x),
                                _ => 0,
                            };
                            assert_eq!(
                                got, want,
                                "{kernel:?}: planes {pl}, position {i}, point {sq}, channel {c}"
                            );
                        }
                    }
                }
                for (row, inside) in interior.iter().enumerate() {
                    if !inside {
                        let held = &dst[row * stride..(row + 1) * stride];
                        assert!(held.iter().all(|&v| v == 0x1234), "border row {row} was written");
                    }
                }
                assert!(dst[n * PAD_SIZE * stride..].iter().all(|&v| v == 0x1234));
            }
        }
    }

    /// The layer, with each kernel this CPU runs, against its definition on bfloat16-rounded
    /// inputs and weights, in `f64`: only the `f32` summation differs. Channel counts with
    /// partial tiles, odd counts and several channel blocks, batch sizes of 1 to 5 positions
    /// (partial steps), with and without the residual; border rows and columns past the output
    /// channels stay as they were.
    #[test]
    fn each_bfloat16_kernel_computes_the_convolution_by_its_definition() {
        let kernels: Vec<Bf16Kernel> =
            [Bf16Kernel::Tiles, Bf16Kernel::Dot].into_iter().filter(|k| k.available()).collect();
        if kernels.is_empty() {
            eprintln!("skipped: this CPU has neither AMX nor AVX-512 BF16");
            return;
        }
        for kernel in kernels {
            layer_by_definition(kernel);
        }
    }

    fn layer_by_definition(kernel: Bf16Kernel) {
        for (cin, cout) in [(23, 24), (24, 24), (40, 17), (64, 64), (70, 48), (5, 33)] {
            for n in [1, 2, 5] {
                let weight = noise(cout * cin * 9, (cin * 100 + cout) as u32);
                let bias = noise(cout, 5);
                let conv = Bf16Conv::conv3x3(&weight, &bias, [cout, cin, 3, 3]);
                let ins = conv.in_stride();
                let rows = n * PAD_SIZE + SLACK_ROWS;
                let values = noise(n * PLANE_SIZE * cin, n as u32);
                let mut input = vec![0u16; rows * ins];
                for i in 0..n {
                    for sq in 0..PLANE_SIZE {
                        for c in 0..cin {
                            let v = values[(i * PLANE_SIZE + sq) * cin + c];
                            input[padded_row(i, sq) * ins + c] = bf16(v);
                        }
                    }
                }
                let at = |row: usize, c: usize| {
                    f64::from(half::bf16::from_bits(input[row * ins + c]).to_f32())
                };
                let fs = cout + 3;
                let held = noise(n * PAD_SIZE * fs, 9);
                for (residual, relu) in [(false, false), (false, true), (true, true)] {
                    let mut f = held.clone();
                    let mut b = vec![0x7fc0u16; n * PAD_SIZE * conv.out_stride()];
                    let out =
                        Outputs { bf16: Some(&mut b), f32: Some((&mut f, fs)), residual, relu };
                    layer(&conv, kernel, &input, n, out, &mut Vec::new());
                    for i in 0..n {
                        for sq in 0..PLANE_SIZE {
                            let row = padded_row(i, sq);
                            for o in 0..cout {
                                let mut want = f64::from(bias[o]);
                                for t in 0..9 {
                                    let r = row.wrapping_add_signed(conv.taps[t]);
                                    for c in 0..cin {
                                        want += at(r, c) * round(weight[(o * cin + c) * 9 + t]);
                                    }
                                }
                                if residual {
                                    want += f64::from(held[row * fs + o]);
                                }
                                if relu {
                                    want = want.max(0.0);
                                }
                                let got = f64::from(f[row * fs + o]);
                                assert!(
                                    (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                                    "{kernel:?}: {cin} -> {cout}, {n} positions, point {sq} of \
                                     {i}, channel {o} (residual {residual}, relu {relu}): {got} \
                                     vs {want}"
                                );
                                let got_b = f64::from(
                                    half::bf16::from_bits(b[row * conv.out_stride() + o]).to_f32(),
                                );
                                assert!(
                                    (got_b - got).abs() <= got.abs() / 256.0,
                                    "bfloat16 output {got_b} vs {got}"
                                );
                            }
                            // Columns past `cout`: untouched in the f32 output, zero in the
                            // bfloat16 one (the next layer's padding channels).
                            for o in cout..fs {
                                assert_eq!(f[row * fs + o], held[row * fs + o]);
                            }
                            for o in cout..conv.out_stride() {
                                assert_eq!(b[row * conv.out_stride() + o], 0, "padding column {o}");
                            }
                        }
                    }
                    // Border rows are never written.
                    for row in 0..n * PAD_SIZE {
                        if !interior(row) {
                            assert!(f[row * fs..(row + 1) * fs] == held[row * fs..(row + 1) * fs]);
                            assert!(
                                b[row * conv.out_stride()..(row + 1) * conv.out_stride()]
                                    .iter()
                                    .all(|&v| v == 0x7fc0)
                            );
                        }
                    }
                }
            }
        }
    }

    /// The branchless rounding is `half`'s, on special values and a sweep of bit patterns.
    #[test]
    fn bfloat16_rounding_is_round_to_nearest_even() {
        let special = [
            0.0f32,
            -0.0,
            1.0,
            -1.5,
            f32::MIN_POSITIVE,
            1e-45,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::from_bits(0x7f80_0001),
            f32::from_bits(0xff80_8000),
            f32::from_bits(0x3f80_8000),
            f32::from_bits(0x3f81_8000),
            f32::from_bits(0x3f80_8001),
            f32::from_bits(0x3f80_7fff),
        ];
        let sweep = (0..=u32::MAX).step_by(9_973).map(f32::from_bits);
        for x in special.into_iter().chain(sweep) {
            let want = half::bf16::from_f32(x).to_bits();
            assert_eq!(bf16(x), want, "{x:e} ({:#010x})", x.to_bits());
        }
    }

    /// The training convolution (`conv_planes`) and the weight gradient (`weight_grad_planes`)
    /// against their definitions on bfloat16-rounded values, in `f64`, on `[n, c, 10, 9]`
    /// planes (zero off the board): channel counts with partial tiles and several channel
    /// blocks, 1 to 5 positions; the weight gradient adds to what `acc` held.
    #[test]
    fn the_amx_training_convolution_and_weight_gradient_compute_their_definitions() {
        use xiangqi::env::{PLANE_FILES, PLANE_RANKS};
        if !tiles_available() {
            eprintln!("skipped: this CPU has no AMX with bfloat16");
            return;
        }
        // `v[b, i, rank, file]` rounded to bfloat16, zero off the board.
        fn at(v: &[f32], c: usize, b: usize, i: usize, rank: isize, file: isize) -> f64 {
            if !(0..PLANE_RANKS as isize).contains(&rank)
                || !(0..PLANE_FILES as isize).contains(&file)
            {
                return 0.0;
            }
            round(v[(b * c + i) * PLANE_SIZE + rank as usize * PLANE_FILES + file as usize])
        }
        let mut s = TrainScratch::default();
        for (cin, cout) in [(23, 24), (24, 24), (40, 17), (64, 64), (5, 33), (33, 70)] {
            for n in [1, 2, 5] {
                let what = format!("{cin} -> {cout}, {n} positions");
                let x = noise(n * cin * PLANE_SIZE, (cin + n) as u32);
                let w = noise(cout * cin * 9, cout as u32);
                let g = noise(n * cout * PLANE_SIZE, 77);
                let conv = Bf16Conv::conv3x3(&w, &vec![0.0; cout], [cout, cin, 3, 3]);
                let mut out = vec![f32::NAN; n * cout * PLANE_SIZE];
                conv_planes(&conv, &x, &mut out, &mut s);
                let mut acc = vec![0.5; 9 * cin * cout];
                weight_grad_planes(&x, &g, cin, cout, &mut acc, &mut s);
                let mut want_dw = vec![0.5; 9 * cin * cout];
                let mut scale_dw = vec![1.0; 9 * cin * cout];
                for b in 0..n {
                    for sq in 0..PLANE_SIZE {
                        let (r, f) = ((sq / PLANE_FILES) as isize, (sq % PLANE_FILES) as isize);
                        for o in 0..cout {
                            let go = round(g[(b * cout + o) * PLANE_SIZE + sq]);
                            let mut want = 0.0;
                            let mut scale = 1.0;
                            for i in 0..cin {
                                for t in 0..9 {
                                    let (dy, dx) = (t as isize / 3 - 1, t as isize % 3 - 1);
                                    let v = at(&x, cin, b, i, r + dy, f + dx);
                                    let term = round(w[(o * cin + i) * 9 + t]) * v;
                                    want += term;
                                    scale += term.abs();
                                    want_dw[(t * cin + i) * cout + o] += go * v;
                                    scale_dw[(t * cin + i) * cout + o] += (go * v).abs();
                                }
                            }
                            let got = f64::from(out[(b * cout + o) * PLANE_SIZE + sq]);
                            assert!(
                                (got - want).abs() < 1e-4 * scale,
                                "{what}: output {o} at {sq} of {b}: {got} vs {want}"
                            );
                        }
                    }
                }
                for (k, ((&got, &want), &scale)) in
                    acc.iter().zip(&want_dw).zip(&scale_dw).enumerate()
                {
                    let got = f64::from(got);
                    assert!(
                        (got - want).abs() < 1e-4 * scale,
                        "{what}: weight gradient [{}, {}, {}]: {got} vs {want}",
                        k / (cin * cout),
                        k / cout % cin,
                        k % cout
                    );
                }
            }
        }
    }
}
