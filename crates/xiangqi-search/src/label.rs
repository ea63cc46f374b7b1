//! Labels from an external engine (`xqz label`): the engine's score as a win/draw/loss
//! estimate, and replay shards whose targets are the engine's move and value.
//!
//! # Score → WDL
//! An engine reports, for the side to move, one of:
//!
//! * `wdl W D L` (Stockfish-family engines with `UCI_ShowWDL`; per mille): used as it is,
//!   divided by `W + D + L`. Preferred over any score on the same line.
//! * `score mate N`: `N > 0` (the side to move mates) is a certain win `[1, 0, 0]`; `N ≤ 0` (it
//!   is mated) a certain loss `[0, 0, 1]`.
//! * `score cp X` (or UCCI's bare `score X`): the logistic model of [`WdlModel`]:
//!   `W = σ((X − a) / b)`, `L = σ((−X − a) / b)`, `D = 1 − W − L`, with `σ(t) = 1 / (1 + e^−t)`,
//!   a draw band `a ≥ 0` and a scale `b > 0` in centipawns, per game (the shape of Stockfish's
//!   win-rate model). `a ≥ 0` keeps `W + L ≤ 1`. Defaults ([`WdlModel::for_game`]):
//!   xiangqi `a = 200, b = 150` (at 0 cp W = L ≈ 0.21, D ≈ 0.58; a horse up, +400 cp,
//!   W ≈ 0.79), janggi `a = 50, b = 150` (draws are rare: at 0 cp W = L ≈ 0.42, D ≈ 0.17).
//!   These are rough fits of Fairy-Stockfish's scale (a chariot ≈ 1,000 cp in xiangqi), not
//!   measured win rates; `xqz label --wdl-draw A --wdl-scale B` overrides them.
//!
//! # What a labelled shard holds
//! [`relabel`] keeps every array of the input shard except, for each labelled sample:
//! `policy_probs` (1 on the engine's move among the sample's legal moves, 0 elsewhere),
//! `full_search` (1: the policy is a training target) and `root_value` (`W − L`, the engine's
//! expected score in `[-1, 1]`). `result`, `ending`, `game_plies` and `final_material` keep the
//! game's own. Training reads `root_value` as its `q` (`loop.value_q_weight`), so a run that
//! should learn the engine's evaluation rather than the game's result trains on labelled
//! shards with `value_q_weight = 1`. The draw probability does not survive: the shard stores
//! only `W − L`. A sample without a label (the engine failed on it) is left out.

use xiangqi::{Move, Setup};

use crate::game::{GameEnv, GameKind};
use crate::shard::{Shard, ShardError, UNKNOWN_SURPRISE};

/// An engine's score for the side to move.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Score {
    /// Centipawns (`score cp X`, UCCI's `score X`).
    Cp(i32),
    /// Mate in `N` moves (`N > 0`: the side to move mates; `N ≤ 0`: it is mated).
    Mate(i32),
}

/// The logistic that turns centipawns into win/draw/loss probabilities (see the
/// [module documentation](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WdlModel {
    /// The draw band `a`, centipawns, at least 0.
    pub draw_cp: f64,
    /// The scale `b`, centipawns, above 0.
    pub scale_cp: f64,
}

impl WdlModel {
    /// The default model of `game`: xiangqi `a = 200, b = 150`, janggi `a = 50, b = 150`.
    pub const fn for_game(game: GameKind) -> WdlModel {
        match game {
            GameKind::Xiangqi => WdlModel { draw_cp: 200.0, scale_cp: 150.0 },
            GameKind::Janggi => WdlModel { draw_cp: 50.0, scale_cp: 150.0 },
        }
    }

    /// Checks the model's ranges.
    ///
    /// # Errors
    /// A message naming the bad parameter.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.draw_cp.is_finite() && self.draw_cp >= 0.0) {
            return Err(format!("the draw band must be at least 0 cp, not {}", self.draw_cp));
        }
        if !(self.scale_cp.is_finite() && self.scale_cp > 0.0) {
            return Err(format!("the scale must be above 0 cp, not {}", self.scale_cp));
        }
        Ok(())
    }

    /// `[W, D, L]` for the side to move of a score.
    pub fn wdl(&self, score: Score) -> [f64; 3] {
        match score {
            Score::Mate(n) if n > 0 => [1.0, 0.0, 0.0],
            Score::Mate(_) => [0.0, 0.0, 1.0],
            Score::Cp(x) => {
                let sigma = |t: f64| 1.0 / (1.0 + (-t).exp());
                let x = f64::from(x);
                let w = sigma((x - self.draw_cp) / self.scale_cp);
                let l = sigma((-x - self.draw_cp) / self.scale_cp);
                [w, (1.0 - w - l).max(0.0), l]
            }
        }
    }
}

/// An engine's own `wdl W D L` (any non-negative scale, usually per mille) as probabilities;
/// `None` if all three are 0.
pub fn engine_wdl(wdl: [u32; 3]) -> Option<[f64; 3]> {
    let sum: f64 = wdl.iter().map(|&x| f64::from(x)).sum();
    (sum > 0.0).then(|| wdl.map(|x| f64::from(x) / sum))
}

/// The label of one sample: the engine's move and its value `W − L` for the side to move.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Label {
    /// The engine's best move (legal in the sample's position).
    pub best: Move,
    /// `W − L`, in `[-1, 1]`.
    pub value: f32,
}

/// The position of shard sample `i` as a position of `G`: its board, side to move and
/// halfmove clock, with the fullmove number from its ply (`ply / 2 + 1`). The game's history
/// is not in the shard, so the position knows nothing of repetitions.
///
/// # Errors
/// The shard's rule set is not one of `G`, or the board is not a legal position (with why).
pub fn sample_position<G: GameEnv>(shard: &Shard, i: usize) -> Result<G::Position, String> {
    let rules = shard.rules_of::<G>().map_err(|e| e.to_string())?;
    let s = shard.sample(i);
    let board = xiangqi::env::decode_board_compact(&s.inputs.board).map_err(|e| e.to_string())?;
    let setup = Setup {
        board,
        turn: s.inputs.turn,
        halfmove_clock: s.inputs.halfmove_clock,
        fullmove_number: u32::from(s.ply) / 2 + 1,
    };
    G::position_from_fen_lenient(&xiangqi::fen::write_fen(&setup), rules)
}

/// A shard of the labelled samples of `shard` (`labels[i]` for sample `i`; `None` leaves the
/// sample out), with the targets the [module documentation](self) describes.
///
/// The policy surprise of every relabelled sample is unknown ([`UNKNOWN_SURPRISE`]): the
/// search's prior and target it measured are gone.
///
/// # Errors
/// [`ShardError::Invalid`] if `labels` does not have one entry per sample, or a label's move
/// is not among its sample's legal moves.
pub fn relabel(shard: &Shard, labels: &[Option<Label>]) -> Result<Shard, ShardError> {
    if labels.len() != shard.len() {
        return Err(ShardError::Invalid {
            name: "labels",
            reason: format!("{} labels for {} samples", labels.len(), shard.len()),
        });
    }
    let mut out = Shard::empty(shard.game, shard.rules);
    for (i, label) in labels.iter().enumerate() {
        let Some(label) = label else { continue };
        let s = shard.sample(i);
        let code = label.best.to_u16();
        let Some(k) = s.moves.iter().position(|&m| m == code) else {
            return Err(ShardError::Invalid {
                name: "labels",
                reason: format!("sample {i}: {} is not among its legal moves", label.best),
            });
        };
        out.boards.push(shard.boards[i]);
        out.turn.push(shard.turn[i]);
        out.halfmove_clock.push(shard.halfmove_clock[i]);
        out.repeated.push(shard.repeated[i]);
        out.result.push(shard.result[i]);
        out.full_search.push(1);
        out.root_value.push(label.value.clamp(-1.0, 1.0));
        out.game_id.push(shard.game_id[i]);
        out.ply.push(shard.ply[i]);
        out.ending.push(shard.ending[i]);
        out.game_plies.push(shard.game_plies[i]);
        out.final_material.push(shard.final_material[i]);
        out.worker.push(shard.worker[i]);
        out.generation.push(shard.generation[i]);
        // The engine's move replaces the target the search's surprise was measured on.
        out.policy_surprise.push(UNKNOWN_SURPRISE);
        out.policy_moves.extend_from_slice(s.moves);
        out.policy_probs.extend((0..s.moves.len()).map(|j| if j == k { 1.0 } else { 0.0 }));
        out.policy_offsets.push(out.policy_moves.len() as u32);
    }
    out.validate()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: [f64; 3], b: [f64; 3]) -> bool {
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-5)
    }

    #[test]
    fn the_logistic_at_hand_computed_points() {
        let x = WdlModel::for_game(GameKind::Xiangqi);
        // 0 cp: W = L = σ(−200/150) = 1/(1+e^(4/3)) = 0.20861; D = 1 − 2·0.20861.
        assert!(
            close(x.wdl(Score::Cp(0)), [0.20861, 0.58278, 0.20861]),
            "{:?}",
            x.wdl(Score::Cp(0))
        );
        // +200 cp: W = σ(0) = 0.5; L = σ(−400/150) = 1/(1+e^(8/3)) = 0.06497.
        assert!(
            close(x.wdl(Score::Cp(200)), [0.5, 0.43503, 0.06497]),
            "{:?}",
            x.wdl(Score::Cp(200))
        );
        // −200 cp is its mirror.
        assert!(close(x.wdl(Score::Cp(-200)), [0.06497, 0.43503, 0.5]));
        let j = WdlModel::for_game(GameKind::Janggi);
        // 0 cp: W = L = σ(−1/3) = 1/(1+e^(1/3)) = 0.41743.
        assert!(
            close(j.wdl(Score::Cp(0)), [0.41743, 0.16514, 0.41743]),
            "{:?}",
            j.wdl(Score::Cp(0))
        );
        // +350 cp: W = σ(2) = 0.88080, L = σ(−8/3) = 0.06497.
        assert!(
            close(j.wdl(Score::Cp(350)), [0.88080, 0.05423, 0.06497]),
            "{:?}",
            j.wdl(Score::Cp(350))
        );
        // A huge score is a near-certain win, never a probability above 1.
        let w = x.wdl(Score::Cp(30_000));
        assert!(w[0] > 0.999_999 && w[1] >= 0.0 && w[2] < 1e-9, "{w:?}");
    }

    #[test]
    fn mates_are_certain_and_engine_wdl_is_taken_as_given() {
        let x = WdlModel::for_game(GameKind::Xiangqi);
        assert_eq!(x.wdl(Score::Mate(1)), [1.0, 0.0, 0.0]);
        assert_eq!(x.wdl(Score::Mate(-3)), [0.0, 0.0, 1.0]);
        assert_eq!(x.wdl(Score::Mate(0)), [0.0, 0.0, 1.0]);
        assert_eq!(engine_wdl([500, 300, 200]), Some([0.5, 0.3, 0.2]));
        assert_eq!(engine_wdl([1, 1, 2]), Some([0.25, 0.25, 0.5]));
        assert_eq!(engine_wdl([0, 0, 0]), None);
        assert!(WdlModel { draw_cp: -1.0, scale_cp: 100.0 }.validate().is_err());
        assert!(WdlModel { draw_cp: 0.0, scale_cp: 0.0 }.validate().is_err());
        assert!(x.validate().is_ok());
    }
}
