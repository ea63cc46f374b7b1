//! The training targets of a replay sample: the policy target as recorded, the value target mixed
//! from the game result, the search's root value and the final material (one home for the settings
//! of [`LoopConfig`] that shape it: `value_q_weight`, `material_weight`, `material_scale`,
//! `cheap_value_weight`); used by training, the held-out loss and pretraining alike.

use super::*;

/// The settings of [`LoopConfig`] that shape the value target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ValueTargets {
    pub(super) q_weight: f32,
    pub(super) material_weight: f32,
    pub(super) material_scale: f32,
    pub(super) cheap_weight: f32,
}

impl ValueTargets {
    pub(super) fn of(r: &LoopConfig) -> ValueTargets {
        ValueTargets {
            q_weight: r.value_q_weight as f32,
            material_weight: r.material_weight as f32,
            material_scale: r.material_scale as f32,
            cheap_weight: r.cheap_value_weight as f32,
        }
    }
}

/// The WDL target of a sample and its weight in the value loss: the game result, mixed with
/// its search's root value `q` by `q_weight` (see [`LoopConfig::value_q_weight`]) and with the
/// final material balance (`material_pawns`, if known) by `material_weight`
/// ([`LoopConfig::material_weight`]). A game cut off at its length cap has no result: its
/// target is the other parts alone, renormalised, with their total weight (0 when there are
/// none: it teaches nothing). A cheap-search sample's weight is multiplied by `cheap_weight`.
pub(super) fn value_target(
    result: i8,
    q: f32,
    material_pawns: Option<f32>,
    capped: bool,
    full_search: bool,
    t: &ValueTargets,
) -> ([f32; 3], f32) {
    let z = match result {
        1 => [1.0, 0.0, 0.0],
        0 => [0.0, 1.0, 0.0],
        _ => [0.0, 0.0, 1.0],
    };
    let q = if q.is_finite() { q.clamp(-1.0, 1.0) } else { 0.0 };
    let from_q = [q.max(0.0), 1.0 - q.abs(), (-q).max(0.0)];
    let (from_m, m_weight) = match material_pawns {
        Some(p) if p.is_finite() => {
            let m = (p / t.material_scale).tanh();
            ([(1.0 + m) / 2.0, 0.0, (1.0 - m) / 2.0], t.material_weight)
        }
        _ => ([0.0; 3], 0.0),
    };
    let result_weight = if capped { 0.0 } else { (1.0 - t.q_weight - t.material_weight).max(0.0) };
    let total = result_weight + t.q_weight + m_weight;
    let sample_weight = if full_search { 1.0 } else { t.cheap_weight };
    if total <= 0.0 {
        return (z, 0.0);
    }
    let target = std::array::from_fn(|k| {
        (result_weight * z[k] + t.q_weight * from_q[k] + m_weight * from_m[k]) / total
    });
    let weight = if capped { total } else { 1.0 };
    (target, weight * sample_weight)
}

/// Turns shard sample `i` into a training sample of `batch`.
pub(super) fn push_sample(
    batch: &mut TrainBatch,
    shard: &Shard,
    i: usize,
    targets: &ValueTargets,
) -> Result<(), String> {
    let s = shard.sample(i);
    let mut policy = Vec::with_capacity(s.moves.len());
    for (&raw, &p) in s.moves.iter().zip(s.probs) {
        let m = Move::from_u16(raw).ok_or_else(|| format!("sample {i}: bad move code {raw}"))?;
        let index = (batch.encoding().move_to_index)(m, s.inputs.turn)
            .ok_or_else(|| format!("sample {i}: move {m} has no policy index"))?;
        policy.push((index as u16, p));
    }
    let capped = s.ending == OutcomeReason::LengthCap.index() as u8;
    let material =
        (s.final_material != UNKNOWN_MATERIAL).then(|| f32::from(s.final_material) / 2.0);
    let (wdl, weight) =
        value_target(s.result, s.root_value, material, capped, s.full_search, targets);
    batch
        .push_weighted(&s.inputs, &policy, wdl, s.full_search, weight)
        .map_err(|e| format!("sample {i}: {e}"))
}
