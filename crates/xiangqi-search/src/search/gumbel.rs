//! The Gumbel search's arithmetic (Danihelka et al., "Policy improvement by planning with
//! Gumbel", ICLR 2022): completed Q and its `σ` transform, Gumbel samples, and the sequential
//! halving schedule of DeepMind's `mctx`.

use rand::Rng;

use crate::config::SearchConfig;
use crate::game::SearchGame;
use crate::tree::{NodeId, Tree};

/// `σ(q̂)` for every edge of `id`: completed Q (visited: Q; unvisited: the mixed value),
/// rescaled to `[0, 1]` over the node's edges, times `(c_visit + max N) · c_scale`.
pub(super) fn sigma_completed_q<G: SearchGame>(
    tree: &Tree<G>,
    config: &SearchConfig,
    id: NodeId,
    priors: &[f32],
    out: &mut Vec<f32>,
) {
    let max_n = completed_q(tree, id, priors, out);
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for &q in out.iter() {
        lo = lo.min(q);
        hi = hi.max(q);
    }
    let scale = (config.gumbel_c_visit + max_n as f32) * config.gumbel_c_scale;
    let width = (hi - lo).max(1e-8);
    for q in out.iter_mut() {
        *q = scale * (*q - lo) / width;
    }
}

/// The completed Q of every edge of `id` into `out`, for the side to move at `id`: a visited
/// child's mean value, else the mixed value estimate `(v + Σ N · Σ_visited P·Q / Σ_visited P)
/// / (1 + Σ N)` of the Gumbel paper (appendix D), `v` the node's own network value. Returns the
/// most visits of a child.
pub(super) fn completed_q<G: SearchGame>(
    tree: &Tree<G>,
    id: NodeId,
    priors: &[f32],
    out: &mut Vec<f32>,
) -> u32 {
    let n = &tree.nodes[id.index()];
    let range = n.edges();
    out.clear();
    let mut sum_n = 0u32;
    let mut max_n = 0u32;
    let mut pq = 0.0f32;
    let mut p_visited = 0.0f32;
    for (i, e) in range.clone().enumerate() {
        let c = tree.children[e];
        let (visits, q) = if c.is_none() {
            (0, 0.0)
        } else {
            let cn = &tree.nodes[c.index()];
            (cn.visits, if cn.visits > 0 { cn.value_sum / cn.visits as f32 } else { 0.0 })
        };
        if visits > 0 {
            sum_n += visits;
            max_n = max_n.max(visits);
            pq += priors[i] * q;
            p_visited += priors[i];
            out.push(q);
        } else {
            out.push(f32::NAN);
        }
    }
    let mixed = if sum_n > 0 && p_visited > 0.0 {
        (n.value + sum_n as f32 * pq / p_visited) / (1.0 + sum_n as f32)
    } else {
        n.value
    };
    for q in out.iter_mut() {
        if q.is_nan() {
            *q = mixed;
        }
    }
    max_n
}

/// `ln p`, floored so that a zero prior stays finite.
pub(super) fn logit(p: f32) -> f32 {
    p.max(1e-30).ln()
}

pub(super) fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    if sum > 0.0 {
        x.iter_mut().for_each(|v| *v /= sum);
    }
}

/// A standard Gumbel sample, `−ln(−ln u)`, `u` uniform in (0, 1).
pub(super) fn sample_gumbel<R: Rng + ?Sized>(rng: &mut R) -> f32 {
    let u = ((rng.next_u32() >> 8) as f32 + 0.5) / (1u32 << 24) as f32;
    -(-u.ln()).ln()
}

/// The visit count each simulation's root move must have, for `m` considered moves and `n`
/// simulations (sequential halving as scheduled by DeepMind's `mctx`): phases of
/// `max(1, n / (⌈log₂ m⌉ · k))` rounds over the `k` remaining moves, `k` halving each phase
/// (never below 2), truncated to exactly `n` entries.
pub fn halving_schedule(m: usize, n: usize) -> Vec<u32> {
    if m <= 1 {
        return (0..n as u32).collect();
    }
    let log2max = (usize::BITS - (m - 1).leading_zeros()) as usize; // ⌈log₂ m⌉
    let mut seq = Vec::with_capacity(n);
    let mut visits = vec![0u32; m];
    let mut k = m;
    while seq.len() < n {
        let extra = (n / (log2max * k)).max(1);
        for _ in 0..extra {
            seq.extend_from_slice(&visits[..k]);
            visits[..k].iter_mut().for_each(|v| *v += 1);
        }
        k = (k / 2).max(2);
    }
    seq.truncate(n);
    seq
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_has_exactly_the_budget_and_halves() {
        for (m, n) in [(16, 32), (16, 64), (4, 16), (2, 7), (1, 5), (16, 8), (44, 200)] {
            let s = halving_schedule(m, n);
            assert_eq!(s.len(), n, "m={m} n={n}");
        }
        // 4 moves, 16 sims: log2 = 2; phase 1: 16/(2*4)=2 rounds over 4; phase 2: 16/(2*2)=4
        // rounds over 2.
        assert_eq!(halving_schedule(4, 16), vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
    }
}
