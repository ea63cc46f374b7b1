//! The policy layer's chosen outputs: self-play's evaluator wants only the logits of a
//! position's legal moves, about 40 of 2,166 (xiangqi) or 2,451 (janggi), so the policy's linear
//! layer is computed for those outputs alone, as dot products of the position's features with
//! each chosen output's row of weights.

use pulp::Simd;

/// A linear layer stored one row per output (`[outputs, inputs]`), for computing a few chosen
/// outputs of a wide layer: the policy logits of a position's legal moves, about 40 of its
/// 2,166 (xiangqi) or 2,451 (janggi), at about a fiftieth of the whole layer's cost.
#[derive(Debug, Clone)]
pub(crate) struct OutputRows {
    inputs: usize,
    /// `[outputs, inputs]`, row-major.
    weight: Vec<f32>,
    /// `[outputs]`.
    bias: Vec<f32>,
}

impl OutputRows {
    /// From a linear layer's `[inputs, outputs]` weights and `[outputs]` bias (what
    /// [`super::Packed::dense`] takes).
    pub(crate) fn dense(weight: &[f32], bias: &[f32], inputs: usize, outputs: usize) -> OutputRows {
        debug_assert_eq!(weight.len(), inputs * outputs);
        debug_assert_eq!(bias.len(), outputs);
        let mut rows = vec![0.0; inputs * outputs];
        for (i, column) in weight.chunks_exact(outputs.max(1)).enumerate() {
            for (o, &w) in column.iter().enumerate() {
                rows[o * inputs + i] = w;
            }
        }
        OutputRows { inputs, weight: rows, bias: bias.to_vec() }
    }

    /// Output `o`'s weights.
    ///
    /// # Panics
    /// If `o` is not below the output count.
    fn row(&self, o: usize) -> &[f32] {
        &self.weight[o * self.inputs..(o + 1) * self.inputs]
    }
}

/// The policy logits [`super::HostNet::forward_into`] writes.
pub(crate) enum PolicyOut<'a> {
    /// All of them, `[B, policy_size]`.
    All(&'a mut [f32]),
    /// Chosen ones. `offsets` has `B + 1` entries, not decreasing; position `i`'s indices are
    /// `indices[offsets[i] - offsets[0]..offsets[i + 1] - offsets[0]]` (each below the policy
    /// size), and their logits go to the same range of `logits`.
    Chosen { offsets: &'a [usize], indices: &'a [u32], logits: &'a mut [f32] },
}

impl<'a> PolicyOut<'a> {
    /// The outputs of positions `..m` and `m..`.
    pub(super) fn split_at(self, m: usize, policy_size: usize) -> (PolicyOut<'a>, PolicyOut<'a>) {
        match self {
            PolicyOut::All(p) => {
                let (a, b) = p.split_at_mut(m * policy_size);
                (PolicyOut::All(a), PolicyOut::All(b))
            }
            PolicyOut::Chosen { offsets, indices, logits } => {
                let at = offsets[m] - offsets[0];
                let (ia, ib) = indices.split_at(at);
                let (la, lb) = logits.split_at_mut(at);
                (
                    PolicyOut::Chosen { offsets: &offsets[..=m], indices: ia, logits: la },
                    PolicyOut::Chosen { offsets: &offsets[m..], indices: ib, logits: lb },
                )
            }
        }
    }
}

/// `logits[j] = bias[k] + Σ_c features[i][c] · W[k][c]` for every position `i` and every
/// index `k = indices[j]` of its range ([`PolicyOut::Chosen`]): dot products of the position's
/// features with the chosen rows, four rows at a time for independent sums.
#[inline(always)]
pub(super) fn chosen_outputs<S: Simd>(
    simd: S,
    rows: &OutputRows,
    features: &[f32],
    offsets: &[usize],
    indices: &[u32],
    logits: &mut [f32],
) {
    const GROUP: usize = 4;
    let base = offsets[0];
    // The row's vectors and its tail (zero past the row) as one more vector.
    let split = |o: u32| {
        let (head, tail) = S::as_simd_f32s(rows.row(o as usize));
        (head, simd.partial_load_f32s(tail))
    };
    for (i, f) in features.chunks_exact(rows.inputs.max(1)).enumerate() {
        let range = offsets[i] - base..offsets[i + 1] - base;
        let (fv, ft) = S::as_simd_f32s(f);
        let ft = simd.partial_load_f32s(ft);
        let (idx, out) = (&indices[range.clone()], &mut logits[range]);
        let mut groups = idx.chunks_exact(GROUP);
        let mut j = 0;
        for group in &mut groups {
            let mut heads: [&[S::f32s]; GROUP] = [&[]; GROUP];
            let mut acc = [simd.splat_f32s(0.0); GROUP];
            for r in 0..GROUP {
                let (head, tail) = split(group[r]);
                heads[r] = &head[..fv.len()];
                acc[r] = simd.mul_f32s(ft, tail);
            }
            for (v, &x) in fv.iter().enumerate() {
                for r in 0..GROUP {
                    acc[r] = simd.mul_add_f32s(x, heads[r][v], acc[r]);
                }
            }
            for r in 0..GROUP {
                out[j + r] = rows.bias[group[r] as usize] + simd.reduce_sum_f32s(acc[r]);
            }
            j += GROUP;
        }
        for (o, &k) in out[j..].iter_mut().zip(groups.remainder()) {
            let (head, tail) = split(k);
            let mut acc = simd.mul_f32s(ft, tail);
            for (&x, &w) in fv.iter().zip(head) {
                acc = simd.mul_add_f32s(x, w, acc);
            }
            *o = rows.bias[k as usize] + simd.reduce_sum_f32s(acc);
        }
    }
}
