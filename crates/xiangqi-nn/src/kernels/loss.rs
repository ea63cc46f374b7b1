//! The training losses' softmax cross-entropy in one pass per row, and its gradient in another
//! (reached through burn as [`crate::train_ops::softmax_cross_entropy`]).
//!
//! Written with burn's tensor operations, a masked policy cross-entropy is a dozen passes over
//! the `[B, POLICY_SIZE]` logits, each allocating its result: the mask's offset, the maximum,
//! `exp` (the scalar library call), the sum, `log`, the product with the target, and as many
//! again for the gradient and the reported entropy. Here a row of logits is read twice (its
//! maximum, then everything else) and the gradient is one pass over the probabilities kept from
//! the forward pass. All of it runs in SIMD lanes through `pulp` (AVX-512 or AVX2 + FMA chosen
//! at run time), `exp` included ([`exp_nonpositive`]).

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

/// The logit offset of an action the mask rules out, as `log_softmax(logits + (legal − 1) ·
/// ILLEGAL_LOGIT_OFFSET)` would apply it: its probability is exactly 0, and a target on it
/// (none of ours) costs `target · ILLEGAL_LOGIT_OFFSET`.
///
/// The kernels leave ruled-out actions out of the softmax instead of adding the offset: the
/// same result while the logits stay far below the offset in magnitude (any net that trains),
/// and still probability 0 where a diverging net's logits reach it, where the offset alone no
/// longer pushes them below the legal ones.
pub(crate) const ILLEGAL_LOGIT_OFFSET: f32 = 1e9;

/// Floats per parallel task, about 16 rows of the policy's width (tens of microseconds of
/// work): a batch of the value's three outcomes, or a small batch, stays on the caller's thread.
const TASK_FLOATS: usize = 16 * 2166;

/// `run(first_row, rows)` over the rows of `out` (`width` floats each) and the matching entries
/// of `per_row` (one per row; empty to have none), in tasks of whole rows and about
/// [`TASK_FLOATS`] floats, in parallel where there is more than one task.
fn by_rows<T: Send>(
    out: &mut [f32],
    per_row: &mut [T],
    width: usize,
    run: impl Fn(usize, &mut [f32], &mut [T]) + Sync,
) {
    let rows = (TASK_FLOATS / width).max(1);
    if out.len() <= rows * width {
        run(0, out, per_row);
    } else if per_row.is_empty() {
        out.par_chunks_mut(rows * width).enumerate().for_each(|(i, o)| run(i * rows, o, &mut []));
    } else {
        out.par_chunks_mut(rows * width)
            .zip(per_row.par_chunks_mut(rows))
            .enumerate()
            .for_each(|(i, (o, r))| run(i * rows, o, r));
    }
}

/// `eˣ` lane by lane for `x ≤ 0` (a positive `x` is taken as 0), within 2 · 10⁻⁷ of `eˣ`
/// relative (the tests sweep the range against `f64` with every instruction set); below −87 it
/// gives `e⁻⁸⁷` (≈ 1.6 · 10⁻³⁸), where the true value is smaller still.
///
/// The usual reduction (Cody and Waite 1980): `x = n · ln 2 + r` with `n` the nearest integer
/// to `x / ln 2` and `|r| ≤ ln 2 / 2`, `eʳ` by its Taylor polynomial of degree 7 (its remainder
/// is below 10⁻⁸ on that interval), and `2ⁿ` written straight into the exponent's bits. `ln 2`
/// is split in two (the high part exact in 12 bits) so that `n · ln 2` loses nothing.
#[inline(always)]
fn exp_nonpositive<S: Simd>(simd: S, x: S::f32s) -> S::f32s {
    const LN2_HI: f32 = 0.693_359_4; // 0x3F318000: ln 2 to 12 bits
    const LN2_LO: f32 = -2.121_944_4e-4; // ln 2 − LN2_HI
    // 1.5 · 2²³: adding it to a float of magnitude below 2²² rounds it to an integer, which
    // then sits in the low bits of the sum's mantissa.
    const SHIFT: f32 = 12_582_912.0;
    let c = |v: f32| simd.splat_f32s(v);
    let x = simd.max_f32s(simd.min_f32s(x, c(0.0)), c(-87.0));
    let t = simd.mul_add_f32s(x, c(std::f32::consts::LOG2_E), c(SHIFT));
    let n = simd.sub_f32s(t, c(SHIFT));
    let r = simd.mul_add_f32s(n, c(-LN2_HI), x);
    let r = simd.mul_add_f32s(n, c(-LN2_LO), r);
    let mut p = c(1.0 / 5040.0);
    for k in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = simd.mul_add_f32s(p, r, c(k));
    }
    // n is in −126..=0, so n + 127 is a normal float's biased exponent.
    let biased = simd.add_u32s(
        simd.transmute_u32s_f32s(t),
        simd.splat_u32s(127u32.wrapping_sub(SHIFT.to_bits())),
    );
    let scale = simd.wrapping_dyn_shl_u32s(biased, simd.splat_u32s(23));
    simd.mul_f32s(p, simd.transmute_f32s_u32s(scale))
}

/// One row as whole vectors and a partial last vector.
struct Split<'a, S: Simd> {
    head: &'a [S::f32s],
    tail: &'a [f32],
}

fn split<S: Simd>(row: &[f32]) -> Split<'_, S> {
    let (head, tail) = S::as_simd_f32s(row);
    Split { head, tail }
}

impl<S: Simd> Split<'_, S> {
    /// Vector `k` of the row; the last, partial one filled with zeros.
    #[inline(always)]
    fn get(&self, simd: S, k: usize) -> S::f32s {
        match self.head.get(k) {
            Some(&v) => v,
            None => simd.partial_load_f32s(self.tail),
        }
    }
}

/// The lanes of a row's vectors that take part in its softmax.
struct Lanes<S: Simd> {
    /// Every lane (a whole vector of the row).
    whole: S::m32s,
    /// The lanes of the last, partial vector that are in the row.
    tail: S::m32s,
    /// Whole vectors in the row.
    head_len: usize,
}

impl<S: Simd> Lanes<S> {
    /// The lanes of vector `k` that take part: the legal actions where `legal` is given, else
    /// the row's own lanes.
    #[inline(always)]
    fn of(&self, simd: S, legal: Option<&Split<'_, S>>, k: usize) -> S::m32s {
        match legal {
            Some(l) => simd.greater_than_f32s(l.get(simd, k), simd.splat_f32s(0.5)),
            None if k < self.head_len => self.whole,
            None => self.tail,
        }
    }
}

/// The forward pass of the rows `first_row..` that `probs` and `out` hold.
struct Forward<'a> {
    logits: &'a [f32],
    target: &'a [f32],
    legal: Option<&'a [f32]>,
    width: usize,
    first_row: usize,
    probs: &'a mut [f32],
    out: &'a mut [(f32, f32)],
}

impl WithSimd for Forward<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let w = self.width;
        for (k, (p, o)) in self.probs.chunks_mut(w).zip(self.out.iter_mut()).enumerate() {
            let r = (self.first_row + k) * w..(self.first_row + k + 1) * w;
            let legal = self.legal.map(|l| &l[r.clone()]);
            *o = row_forward(simd, &self.logits[r.clone()], &self.target[r], legal, p);
        }
    }
}

/// One row's forward pass: fills `probs` with the softmax of the row's logits (over the legal
/// actions where `legal` is given and the row has one; exactly 0 elsewhere) and returns the
/// row's cross-entropy `Σⱼ tⱼ · (lse − zⱼ)` (with the offset of ruled-out actions, see
/// [`ILLEGAL_LOGIT_OFFSET`]) and the entropy of the softmax, each summed in SIMD lanes.
#[inline(always)]
fn row_forward<S: Simd>(
    simd: S,
    logits: &[f32],
    target: &[f32],
    legal: Option<&[f32]>,
    probs: &mut [f32],
) -> (f32, f32) {
    let (z, t) = (split::<S>(logits), split::<S>(target));
    let vectors = z.head.len() + usize::from(!z.tail.is_empty());
    let c = |v: f32| simd.splat_f32s(v);
    // The lanes that take part: the legal actions (with the mask), or the row's own lanes
    // (without it, or where the row has no legal action): the last vector's padding is out.
    let ones = [1.0f32; 16];
    let row_lanes = Lanes {
        whole: simd.greater_than_f32s(c(1.0), c(0.5)),
        tail: simd.greater_than_f32s(simd.partial_load_f32s(&ones[..z.tail.len()]), c(0.5)),
        head_len: z.head.len(),
    };
    let legal = legal.map(split::<S>);
    let max_over = |legal: Option<&Split<'_, S>>| {
        let mut m = c(f32::NEG_INFINITY);
        for k in 0..vectors {
            let v = simd.select_f32s(row_lanes.of(simd, legal, k), z.get(simd, k), m);
            m = simd.max_f32s(m, v);
        }
        simd.reduce_max_f32s(m)
    };
    let mut max = max_over(legal.as_ref());
    // No legal action: the row is taken whole.
    let legal = if max == f32::NEG_INFINITY && legal.is_some() {
        max = max_over(None);
        None
    } else {
        legal
    };
    let allowed = |k: usize| row_lanes.of(simd, legal.as_ref(), k);
    let (head, tail) = S::as_mut_simd_f32s(probs);
    let mut sums = c(0.0);
    for k in 0..vectors {
        let e = exp_nonpositive(simd, simd.sub_f32s(z.get(simd, k), c(max)));
        let e = simd.select_f32s(allowed(k), e, c(0.0));
        sums = simd.add_f32s(sums, e);
        match head.get_mut(k) {
            Some(v) => *v = e,
            None => simd.partial_store_f32s(tail, e),
        }
    }
    let sum = simd.reduce_sum_f32s(sums);
    let lse = max + sum.ln();
    let (inv, lse_v) = (c(1.0 / sum), c(lse));
    let (mut ce, mut entropy, mut off) = (c(0.0), c(0.0), c(0.0));
    for k in 0..vectors {
        let p = match head.get_mut(k) {
            Some(v) => {
                *v = simd.mul_f32s(*v, inv);
                *v
            }
            None => {
                let v = simd.mul_f32s(simd.partial_load_f32s(tail), inv);
                simd.partial_store_f32s(tail, v);
                v
            }
        };
        let d = simd.sub_f32s(lse_v, z.get(simd, k));
        let tk = t.get(simd, k);
        entropy = simd.mul_add_f32s(p, d, entropy);
        ce = simd.mul_add_f32s(tk, d, ce);
        off = simd.add_f32s(off, simd.select_f32s(allowed(k), c(0.0), tk));
    }
    let off = simd.reduce_sum_f32s(off);
    (simd.reduce_sum_f32s(ce) + off * ILLEGAL_LOGIT_OFFSET, simd.reduce_sum_f32s(entropy))
}

/// The softmax cross-entropy of `rows` rows of `width` logits against as many target rows
/// (each a distribution, or zero), weighted per row:
/// `(Σᵢ weightᵢ · Σⱼ targetᵢⱼ · −log softmax(zᵢ)ⱼ, Σᵢ entropy(softmax(zᵢ)), softmax(z))`,
/// where `zᵢ = logitsᵢ + (legalᵢ − 1) · ILLEGAL_LOGIT_OFFSET` with `legal` (1 for an allowed
/// action, 0 for one ruled out; a row with no allowed action is taken whole; see
/// [`ILLEGAL_LOGIT_OFFSET`] for logits near the offset) and `zᵢ = logitsᵢ` without. The probabilities (`[rows, width]`, exactly 0 where ruled out) are what
/// [`softmax_cross_entropy_grad`] needs. Both sums run over the rows in order, whatever the
/// threads: the result does not depend on their number.
///
/// # Panics
/// If the lengths do not match `weight.len()` rows of `width`.
pub(crate) fn softmax_cross_entropy(
    logits: &[f32],
    target: &[f32],
    legal: Option<&[f32]>,
    weight: &[f32],
    width: usize,
) -> (f64, f64, Vec<f32>) {
    let rows = weight.len();
    assert!(width > 0, "softmax_cross_entropy: a row needs at least one logit");
    assert_eq!(logits.len(), rows * width, "softmax_cross_entropy: logits");
    assert_eq!(target.len(), rows * width, "softmax_cross_entropy: target");
    if let Some(legal) = legal {
        assert_eq!(legal.len(), rows * width, "softmax_cross_entropy: legal");
    }
    let mut probs = vec![0.0f32; rows * width];
    let mut per_row = vec![(0.0f32, 0.0f32); rows];
    by_rows(&mut probs, &mut per_row, width, |first_row, probs, out| {
        Arch::new().dispatch(Forward { logits, target, legal, width, first_row, probs, out })
    });
    let mut ce = 0.0f64;
    let mut entropy = 0.0f64;
    for (&(c, e), &w) in per_row.iter().zip(weight) {
        ce += f64::from(w) * f64::from(c);
        entropy += f64::from(e);
    }
    (ce, entropy, probs)
}

/// The gradient of rows `first_row..` (those `grad` holds).
struct Backward<'a> {
    probs: &'a [f32],
    target: &'a [f32],
    weight: &'a [f32],
    width: usize,
    first_row: usize,
    scale: f32,
    grad: &'a mut [f32],
}

impl WithSimd for Backward<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let w = self.width;
        for (k, g) in self.grad.chunks_mut(w).enumerate() {
            let i = self.first_row + k;
            let r = i * w..(i + 1) * w;
            let (p, t) = (split::<S>(&self.probs[r.clone()]), split::<S>(&self.target[r]));
            let vectors = p.head.len() + usize::from(!p.tail.is_empty());
            let mut total = simd.splat_f32s(0.0);
            for k in 0..vectors {
                total = simd.add_f32s(total, t.get(simd, k));
            }
            let total = simd.splat_f32s(simd.reduce_sum_f32s(total));
            let s = simd.splat_f32s(self.scale * self.weight[i]);
            let (head, tail) = S::as_mut_simd_f32s(g);
            for k in 0..vectors {
                let tk = t.get(simd, k);
                let v = simd.mul_f32s(s, simd.sub_f32s(simd.mul_f32s(p.get(simd, k), total), tk));
                match head.get_mut(k) {
                    Some(d) => *d = v,
                    None => simd.partial_store_f32s(tail, v),
                }
            }
        }
    }
}

/// The gradient of [`softmax_cross_entropy`]'s weighted sum with respect to the logits, times
/// `scale` (the sum's own gradient): `scale · weightᵢ · (pᵢⱼ · Σₖ targetᵢₖ − targetᵢⱼ)`,
/// `[rows, width]`, from the probabilities `probs` that the forward pass returned.
///
/// # Panics
/// If the lengths do not match `weight.len()` rows of `width`.
pub(crate) fn softmax_cross_entropy_grad(
    probs: &[f32],
    target: &[f32],
    weight: &[f32],
    width: usize,
    scale: f32,
) -> Vec<f32> {
    let rows = weight.len();
    assert!(width > 0, "softmax_cross_entropy_grad: a row needs at least one logit");
    assert_eq!(probs.len(), rows * width, "softmax_cross_entropy_grad: probs");
    assert_eq!(target.len(), rows * width, "softmax_cross_entropy_grad: target");
    let mut grad = vec![0.0f32; rows * width];
    by_rows(&mut grad, &mut [(); 0], width, |first_row, grad, _| {
        Arch::new().dispatch(Backward { probs, target, weight, width, first_row, scale, grad })
    });
    grad
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `exp_nonpositive` on every float of `xs`, in place.
    struct Exp<'a>(&'a mut [f32]);

    impl WithSimd for Exp<'_> {
        type Output = usize;

        fn with_simd<S: Simd>(self, simd: S) -> usize {
            let (head, tail) = S::as_mut_simd_f32s(self.0);
            for v in head {
                *v = exp_nonpositive(simd, *v);
            }
            let t = exp_nonpositive(simd, simd.partial_load_f32s(tail));
            simd.partial_store_f32s(tail, t);
            S::F32_LANES
        }
    }

    #[test]
    fn exp_is_within_two_parts_in_ten_million_with_every_instruction_set() {
        let mut xs = Vec::new();
        let mut x = 0.0f32;
        while x > -87.0 {
            xs.push(x);
            x -= 0.000_731;
        }
        let special = [0.0f32, -0.0, -1e-30, -0.346_573_6, -0.346_573_7, -std::f32::consts::LN_2];
        xs.extend_from_slice(&special);
        xs.extend_from_slice(&[-86.999, -87.0, -1e9, f32::NEG_INFINITY, 3.0]);
        let check = |lanes: usize, got: &[f32]| {
            let mut worst = 0.0f64;
            for (&x, &e) in xs.iter().zip(got).filter(|(x, _)| **x >= -87.0 && **x <= 0.0) {
                let want = f64::from(x).exp();
                worst = worst.max(((f64::from(e) - want) / want).abs());
            }
            assert!(worst < 2e-7, "{lanes} lanes: worst relative error {worst}");
            let n = got.len();
            assert_eq!(got[xs.iter().position(|&x| x == 0.0).unwrap()], 1.0, "{lanes} lanes");
            // Beyond the range: clamped, never a NaN or an infinity.
            assert_eq!(got[n - 3], got[n - 4], "{lanes} lanes: -1e9 as -87");
            assert_eq!(got[n - 2], got[n - 4], "{lanes} lanes: -inf as -87");
            assert!(got[n - 4] > 0.0 && got[n - 4] < 2e-38, "{lanes} lanes: {}", got[n - 4]);
            assert_eq!(got[n - 1], 1.0, "{lanes} lanes: a positive x as 0");
        };
        let mut widths = Vec::new();
        let mut got = xs.clone();
        widths.push(pulp::Scalar::new().vectorize(Exp(&mut got)));
        check(1, &got);
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(v3) = pulp::x86::V3::try_new() {
                let mut got = xs.clone();
                widths.push(Simd::vectorize(v3, Exp(&mut got)));
                check(8, &got);
            }
            if let Some(v4) = pulp::x86::V4::try_new() {
                let mut got = xs.clone();
                widths.push(Simd::vectorize(v4, Exp(&mut got)));
                check(16, &got);
            }
        }
        assert_eq!(widths[0], 1, "{widths:?}");
    }

    /// The definition in `f64`: `(Σ wᵢ CEᵢ, Σ Hᵢ, probabilities, gradient at scale 1)`.
    #[allow(clippy::type_complexity)]
    fn reference(
        logits: &[f32],
        target: &[f32],
        legal: Option<&[f32]>,
        weight: &[f32],
        width: usize,
    ) -> (f64, f64, Vec<f64>, Vec<f64>) {
        let (mut ce, mut entropy) = (0.0, 0.0);
        let (mut probs, mut grad) = (Vec::new(), Vec::new());
        for (i, &w) in weight.iter().enumerate() {
            let r = i * width..(i + 1) * width;
            let any = legal.is_some_and(|l| l[r.clone()].iter().any(|&x| x > 0.5));
            let z: Vec<f64> = r
                .clone()
                .map(|j| {
                    let off = match legal {
                        Some(l) if any && l[j] <= 0.5 => f64::from(ILLEGAL_LOGIT_OFFSET),
                        _ => 0.0,
                    };
                    f64::from(logits[j]) - off
                })
                .collect();
            let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lse = max + z.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
            let t = &target[r];
            let total: f64 = t.iter().map(|&v| f64::from(v)).sum();
            for (j, v) in z.iter().enumerate() {
                let p = (v - lse).exp();
                ce += f64::from(w) * f64::from(t[j]) * (lse - v);
                if p > 0.0 {
                    entropy += p * (lse - v);
                }
                probs.push(p);
                grad.push(f64::from(w) * (p * total - f64::from(t[j])));
            }
        }
        (ce, entropy, probs, grad)
    }

    /// A deterministic pseudo-random stream in `[0, 1)`.
    fn stream(seed: u64) -> impl FnMut() -> f32 {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    #[test]
    fn cross_entropy_and_gradient_follow_the_definition() {
        for (rows, width, masked, seed) in [
            (1, 3, false, 1),
            (5, 3, false, 2),
            (37, 2166, true, 3),
            (37, 2166, false, 4),
            (16, 100, true, 5),
            (70, 90, true, 6),
            (3, 7, true, 7),
            (4, 17, false, 8),
        ] {
            let mut rnd = stream(seed);
            let logits: Vec<f32> = (0..rows * width).map(|_| (rnd() - 0.5) * 20.0).collect();
            // About one action in eight allowed; row 0 has none (taken whole).
            let legal: Vec<f32> = (0..rows * width)
                .map(|k| if k >= width && rnd() < 0.125 { 1.0 } else { 0.0 })
                .collect();
            let mut target = vec![0.0f32; rows * width];
            for i in 0..rows {
                // A distribution over a few allowed actions (every third row sums to 0: no
                // target); row 0 over any.
                if i % 3 == 2 {
                    continue;
                }
                let r = i * width..(i + 1) * width;
                let allowed: Vec<usize> =
                    r.filter(|&j| !masked || i == 0 || legal[j] > 0.5).collect();
                for _ in 0..3 {
                    if let Some(&j) = allowed.get((rnd() * allowed.len() as f32) as usize) {
                        target[j] += 1.0 / 3.0;
                    }
                }
            }
            let weight: Vec<f32> =
                (0..rows).map(|i| if i % 4 == 3 { 0.0 } else { rnd() + 0.5 }).collect();
            let legal = masked.then_some(legal.as_slice());
            let (want_ce, want_entropy, want_probs, want_grad) =
                reference(&logits, &target, legal, &weight, width);
            let what = format!("{rows} x {width}, masked {masked}");
            let check = |how: &str, ce: f64, entropy: f64, probs: &[f32], grad: &[f32]| {
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * (1.0 + b.abs());
                assert!(close(ce, want_ce), "{what}, {how}: ce {ce} vs {want_ce}");
                assert!(close(entropy, want_entropy), "{what}, {how}: {entropy} vs {want_entropy}");
                for (k, (&p, &q)) in probs.iter().zip(&want_probs).enumerate() {
                    assert!(
                        (f64::from(p) - q).abs() <= 1e-6 * (1.0 + q),
                        "{how}: p[{k}] {p} vs {q}"
                    );
                    if q == 0.0 {
                        assert_eq!(p, 0.0, "{how}: a ruled-out action has probability 0");
                    }
                }
                for (k, (&g, &h)) in grad.iter().zip(&want_grad).enumerate() {
                    assert!((f64::from(g) - 0.75 * h).abs() <= 1e-6, "{how}: grad[{k}] {g} vs {h}");
                }
            };
            // As the training step calls them: the best instruction set, rows in parallel.
            let (ce, entropy, probs) =
                softmax_cross_entropy(&logits, &target, legal, &weight, width);
            let grad = softmax_cross_entropy_grad(&probs, &target, &weight, width, 0.75);
            check("dispatched", ce, entropy, &probs, &grad);
            // Each instruction set on its own, one thread: other widths of the last vector.
            let inputs = Inputs { logits: &logits, target: &target, legal, weight: &weight, width };
            let (ce, entropy, probs, grad) = pulp::Scalar::new().vectorize(inputs);
            check("scalar", ce, entropy, &probs, &grad);
            #[cfg(target_arch = "x86_64")]
            {
                if let Some(v3) = pulp::x86::V3::try_new() {
                    let (ce, entropy, probs, grad) = Simd::vectorize(v3, inputs);
                    check("AVX2", ce, entropy, &probs, &grad);
                }
                if let Some(v4) = pulp::x86::V4::try_new() {
                    let (ce, entropy, probs, grad) = Simd::vectorize(v4, inputs);
                    check("AVX-512", ce, entropy, &probs, &grad);
                }
            }
        }
    }

    /// A test's batch, run through [`Forward`] and [`Backward`] with one instruction set on one
    /// thread: `(Σ wᵢ CEᵢ, Σ Hᵢ, probabilities, gradient at scale 0.75)`.
    #[derive(Clone, Copy)]
    struct Inputs<'a> {
        logits: &'a [f32],
        target: &'a [f32],
        legal: Option<&'a [f32]>,
        weight: &'a [f32],
        width: usize,
    }

    impl WithSimd for Inputs<'_> {
        type Output = (f64, f64, Vec<f32>, Vec<f32>);

        fn with_simd<S: Simd>(self, simd: S) -> Self::Output {
            let Inputs { logits, target, legal, weight, width } = self;
            let mut probs = vec![0.0; logits.len()];
            let mut out = vec![(0.0, 0.0); weight.len()];
            let forward = Forward {
                logits,
                target,
                legal,
                width,
                first_row: 0,
                probs: &mut probs,
                out: &mut out,
            };
            forward.with_simd(simd);
            let mut grad = vec![0.0; logits.len()];
            let probs_ref = &probs;
            Backward {
                probs: probs_ref,
                target,
                weight,
                width,
                first_row: 0,
                scale: 0.75,
                grad: &mut grad,
            }
            .with_simd(simd);
            let ce = out.iter().zip(weight).map(|(o, &w)| f64::from(w) * f64::from(o.0)).sum();
            let entropy = out.iter().map(|o| f64::from(o.1)).sum();
            (ce, entropy, probs, grad)
        }
    }

    #[test]
    fn a_target_on_a_ruled_out_action_costs_the_offset() {
        let logits = [0.0f32, 0.0, 0.0];
        let legal = [1.0f32, 1.0, 0.0];
        let target = [0.0f32, 0.5, 0.5];
        let (ce, _, probs) = softmax_cross_entropy(&logits, &target, Some(&legal), &[1.0], 3);
        assert_eq!(probs, vec![0.5, 0.5, 0.0]);
        let want = 0.5 * std::f64::consts::LN_2 + 0.5 * (std::f64::consts::LN_2 + 1e9);
        assert!((ce - want).abs() < 1e-3 * want, "{ce} vs {want}");
    }
}
