//! The held-out loss: a new shard's samples scored by the network before any step on them.

use super::*;

/// The cross-entropy `−Σ target · ln p` of a WDL prediction (probabilities floored at 1e-12).
pub(super) fn wdl_cross_entropy(target: [f32; 3], p: [f32; 3]) -> f64 {
    (0..3).map(|k| -f64::from(target[k]) * f64::from(p[k].max(1e-12)).ln()).sum()
}

/// The policy cross-entropy of one sample over its legal actions (`legal[a] > 0`), from the
/// network's logits.
pub(super) fn legal_policy_cross_entropy(logits: &[f32], target: &[f32], legal: &[f32]) -> f64 {
    let max = logits
        .iter()
        .zip(legal)
        .filter(|&(_, &l)| l > 0.0)
        .map(|(&x, _)| f64::from(x))
        .fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return f64::NAN;
    }
    let sum: f64 = logits
        .iter()
        .zip(legal)
        .filter(|&(_, &l)| l > 0.0)
        .map(|(&x, _)| (f64::from(x) - max).exp())
        .sum();
    let log_z = max + sum.ln();
    logits
        .iter()
        .zip(target)
        .filter(|&(_, &t)| t > 0.0)
        .map(|(&x, &t)| -f64::from(t) * (f64::from(x) - log_z))
        .sum()
}

/// Scores up to `n` samples of `shard`, spread evenly over it, with `net` (see
/// [`HeldOutLosses`]); `None` for an empty shard or `n == 0`.
///
/// # Errors
/// A damaged sample (with its index) or a failure of the network.
pub(super) fn heldout_losses(
    net: &InferenceNet,
    shard: &Shard,
    n: usize,
    targets: &Targets,
) -> Result<Option<HeldOutLosses>, String> {
    let len = shard.len();
    if len == 0 || n == 0 {
        return Ok(None);
    }
    let n = n.min(len);
    let indices: Vec<usize> = (0..n).map(|k| k * len / n).collect();
    let encoding = *net.encoding();
    let policy_size = encoding.policy_size;
    let mut batch = TrainBatch::for_encoding(encoding, n);
    for &i in &indices {
        push_sample(&mut batch, shard, i, targets)?;
    }
    let logits = net.predict(batch.planes().to_vec()).map_err(|e| e.to_string())?;
    let mean = |(sum, count): (f64, f64)| if count > 0.0 { sum / count } else { f64::NAN };
    let (mut policy, mut value, mut result, mut material) =
        ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0));
    for (j, &i) in indices.iter().enumerate() {
        let s = shard.sample(i);
        let p = logits.wdl_probabilities(j);
        let range = j * policy_size..(j + 1) * policy_size;
        if batch.is_full_search(j) {
            let ce = legal_policy_cross_entropy(
                logits.policy(j),
                &batch.policy()[range.clone()],
                &batch.legal()[range],
            );
            policy.0 += ce;
            policy.1 += 1.0;
        }
        let w = f64::from(batch.value_weights()[j]);
        if w > 0.0 {
            let t = [batch.wdl()[3 * j], batch.wdl()[3 * j + 1], batch.wdl()[3 * j + 2]];
            value.0 += w * wdl_cross_entropy(t, p);
            value.1 += w;
        }
        if s.ending != OutcomeReason::LengthCap.index() as u8 {
            let t = match s.result {
                1 => [1.0, 0.0, 0.0],
                0 => [0.0, 1.0, 0.0],
                _ => [0.0, 0.0, 1.0],
            };
            result.0 += wdl_cross_entropy(t, p);
            result.1 += 1.0;
        }
        if let Some(pawns) = material_target(shard, i, targets.material_plies) {
            let m = (pawns / targets.material_scale).tanh();
            material.0 += wdl_cross_entropy([(1.0 + m) / 2.0, 0.0, (1.0 - m) / 2.0], p);
            material.1 += 1.0;
        }
    }
    Ok(Some(HeldOutLosses {
        samples: n,
        policy_loss: mean(policy),
        value_loss: mean(value),
        result_loss: mean(result),
        material_loss: mean(material),
    }))
}
