//! The training targets of a replay sample, in one home: the policy target as recorded; the
//! value target mixed from the game result, the search's root value and the material balance at
//! a horizon or at the game's end (the settings of [`LoopConfig`] that shape it:
//! `value_q_weight`, `material_weight`, `material_scale`, `material_plies`,
//! `cheap_value_weight`); and the targets of the network's auxiliary heads,
//! read from the samples after it in its game (the opponent's reply, the short-term value with
//! `short_term_plies`, the plies left). Used by training, the held-out loss and pretraining
//! alike.

use xiangqi_nn::AuxiliaryTargets;
use xiangqi_search::UNKNOWN_ENDING;

use super::*;

/// The settings that shape a sample's targets: those of [`LoopConfig`], and which auxiliary
/// targets the network's heads take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Targets {
    pub(super) q_weight: f32,
    pub(super) material_weight: f32,
    pub(super) material_scale: f32,
    /// The material target's horizon in plies (`loop.material_plies`; 0 = the game's end).
    pub(super) material_plies: usize,
    pub(super) cheap_weight: f32,
    /// Derive the opponent-reply target (`network.opponent_policy`).
    pub(super) opponent_policy: bool,
    /// Derive the moves-left target (`network.moves_left`).
    pub(super) moves_left: bool,
    /// The short-term value's horizon in plies (`loop.short_term_plies`), for a network with
    /// `network.short_term_value`.
    pub(super) short_term_plies: Option<f32>,
}

impl Targets {
    /// The targets of the loop's config for a network of `net`'s heads.
    pub(super) fn of(r: &LoopConfig, net: &NetConfig) -> Targets {
        Targets {
            q_weight: r.value_q_weight as f32,
            material_weight: r.material_weight as f32,
            material_scale: r.material_scale as f32,
            material_plies: r.material_plies as usize,
            cheap_weight: r.cheap_value_weight as f32,
            opponent_policy: net.opponent_policy,
            moves_left: net.moves_left,
            short_term_plies: net.short_term_value.then_some(r.short_term_plies as f32),
        }
    }
}

/// The WDL distribution of a search value `q` in [-1, 1]: `(max(q, 0), 1 − |q|, max(−q, 0))`
/// (a value that is not a finite number counts as 0).
fn wdl_of_q(q: f32) -> [f32; 3] {
    let q = if q.is_finite() { q.clamp(-1.0, 1.0) } else { 0.0 };
    [q.max(0.0), 1.0 - q.abs(), (-q).max(0.0)]
}

/// The one-hot WDL of a result for the side to move (+1, 0, −1).
fn wdl_of_result(result: i8) -> [f32; 3] {
    match result {
        1 => [1.0, 0.0, 0.0],
        0 => [0.0, 1.0, 0.0],
        _ => [0.0, 0.0, 1.0],
    }
}

/// The WDL target of a sample and its weight in the value loss: the game result, mixed with
/// its search's root value `q` by `q_weight` (see [`LoopConfig::value_q_weight`]) and with the
/// material balance (`material_pawns`, if known; see [`material_target`]) by `material_weight`
/// ([`LoopConfig::material_weight`]). A game cut off at its length cap has no result: its
/// target is the other parts alone, renormalised, with their total weight (0 when there are
/// none: it teaches nothing). A cheap-search sample's weight is multiplied by `cheap_weight`.
pub(super) fn value_target(
    result: i8,
    q: f32,
    material_pawns: Option<f32>,
    capped: bool,
    full_search: bool,
    t: &Targets,
) -> ([f32; 3], f32) {
    let z = wdl_of_result(result);
    let from_q = wdl_of_q(q);
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

/// Whether sample `j` of `shard` is the position `plies` plies after sample `i` in the same
/// game (same worker, game number and a ply count `plies` higher).
fn follows(shard: &Shard, i: usize, j: usize, plies: usize) -> bool {
    j < shard.len()
        && shard.worker[j] == shard.worker[i]
        && shard.game_id[j] == shard.game_id[i]
        && usize::from(shard.ply[j]) == usize::from(shard.ply[i]) + plies
}

/// The material target of sample `i` in pawns, for its side to move (see
/// [`LoopConfig::material_plies`]): the balance of the position `plies` plies later in its
/// game when `plies > 0` and that position is recorded; otherwise the game's final balance,
/// `None` when the shard does not know it. Every self-play sample is recorded, so a later
/// position that is missing lies beyond the game's end (or its length cap).
pub(super) fn material_target(shard: &Shard, i: usize, plies: usize) -> Option<f32> {
    if plies > 0 && follows(shard, i, i + plies, plies) {
        let first = shard.game.material_half_pawns(&shard.boards[i + plies]);
        let own = if shard.turn[i] == 0 { first } else { -first };
        return Some(f32::from(own) / 2.0);
    }
    let last = shard.final_material[i];
    (last != UNKNOWN_MATERIAL).then(|| f32::from(last) / 2.0)
}

/// The opponent-reply target of sample `i`: the search policy of the next position of its game,
/// as `(policy index, probability)` pairs in that position's frame (the opponent's), when that
/// position is recorded with a full search; `None` otherwise.
fn opponent_reply(
    shard: &Shard,
    i: usize,
    encoding: &Encoding,
) -> Result<Option<Vec<(u16, f32)>>, String> {
    let j = i + 1;
    if !follows(shard, i, j, 1) || shard.full_search[j] == 0 {
        return Ok(None);
    }
    let next = shard.sample(j);
    let mut reply = Vec::with_capacity(next.moves.len());
    for (&raw, &p) in next.moves.iter().zip(next.probs) {
        let m = Move::from_u16(raw).ok_or_else(|| format!("sample {j}: bad move code {raw}"))?;
        let index = (encoding.move_to_index)(m, next.inputs.turn)
            .ok_or_else(|| format!("sample {j}: move {m} has no policy index"))?;
        reply.push((index as u16, p));
    }
    Ok(Some(reply))
}

/// The plies left after sample `i` until its game's end; `None` when the end is not known (a
/// game cut off at its length cap, or of a shard that does not record its length).
fn moves_left(shard: &Shard, i: usize) -> Option<f32> {
    let (ending, length, ply) = (shard.ending[i], shard.game_plies[i], shard.ply[i]);
    let known = ending != UNKNOWN_ENDING && ending != OutcomeReason::LengthCap.index() as u8;
    (known && length > 0 && length >= ply).then(|| f32::from(length - ply))
}

/// The short-term value target of sample `i` (see [`LoopConfig::short_term_plies`]): the
/// search values `u_j` of its position and of the `J` recorded positions after it (`j < 4 h`),
/// for its side to move, weighted `(1 − λ) λ^j` with `λ = 1 − 1 / h`; the weight `λ^J` left
/// goes to the game's result when the recorded positions reach its end, and is spread over the
/// others (renormalised) when they do not (the read limit, a length cap, a gap).
fn short_term_value(shard: &Shard, i: usize, horizon: f32) -> [f32; 3] {
    let lambda = 1.0 - 1.0 / horizon;
    let limit = (4.0 * horizon).ceil() as usize;
    let mut target = [0.0f32; 3];
    let mut left = 1.0f32;
    let mut j = 0;
    while j < limit && (j == 0 || follows(shard, i, i + j, j)) {
        let u = shard.root_value[i + j];
        let u = if shard.turn[i + j] == shard.turn[i] { u } else { -u };
        let w = left * (1.0 - lambda);
        for (t, x) in target.iter_mut().zip(wdl_of_q(u)) {
            *t += w * x;
        }
        left *= lambda;
        j += 1;
    }
    // Whether the recorded positions reach the game's end: the last one, ply `ply_i + j − 1`,
    // played the final move (`game_plies − 1`), or, in a resigned game, is the resigner's own
    // position (`game_plies`: self-play records it, though no move is played from it).
    let ended = moves_left(shard, i).is_some()
        && usize::from(shard.ply[i]) + j >= usize::from(shard.game_plies[i]);
    if ended {
        for (t, x) in target.iter_mut().zip(wdl_of_result(shard.result[i])) {
            *t += left * x;
        }
    } else {
        let spread = 1.0 - left;
        for t in &mut target {
            *t /= spread;
        }
    }
    target
}

/// Turns shard sample `i` into a training sample of `batch`, with the auxiliary targets
/// `targets` asks for.
pub(super) fn push_sample(
    batch: &mut TrainBatch,
    shard: &Shard,
    i: usize,
    targets: &Targets,
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
    let material = material_target(shard, i, targets.material_plies);
    let (wdl, weight) =
        value_target(s.result, s.root_value, material, capped, s.full_search, targets);
    let reply =
        if targets.opponent_policy { opponent_reply(shard, i, batch.encoding())? } else { None };
    let aux = AuxiliaryTargets {
        opponent_policy: reply.as_deref(),
        short_term_value: targets.short_term_plies.map(|h| short_term_value(shard, i, h)),
        moves_left: if targets.moves_left { moves_left(shard, i) } else { None },
    };
    batch
        .push_with_auxiliary(&s.inputs, &policy, wdl, s.full_search, weight, &aux)
        .map_err(|e| format!("sample {i}: {e}"))
}
