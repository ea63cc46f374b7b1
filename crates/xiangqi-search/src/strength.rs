//! Playing strength below the network's best: skill levels (`Skill Level` 0–20 in the engine,
//! Stockfish's convention) and the table of their measured Elo that `xqz calibrate` writes
//! into a network's export.
//!
//! # Levels
//! A level `s ∈ [0, 20]` (fractional levels interpolate, for `UCI_Elo`) plays with two
//! settings that both grow weaker as `s` falls, so that strength is monotonic in `s` by
//! construction (and [`StrengthTable::is_monotonic`] checks it by measurement):
//! * the search budget `max(1, round(B^(s/20)))` simulations for a full budget `B`
//!   ([`Strength::simulations`]: level 0 reads the network's prior alone, level 10 searches
//!   `√B`, level 20 all of `B`);
//! * with probability `ε(s) = (1 − s/20)²` a uniformly random legal move
//!   ([`Strength::random_move_rate`]: level 0 is a random mover, level 10 plays one move in
//!   four at random, level 19 one in 400, level 20 none), and otherwise the search's own
//!   choice ([`crate::SearchResult::best`]).
//!
//! This is the third design measured (`experiments/2026-12-03-strength-levels/`): drawing the
//! move from the search's policy at a temperature left long stretches of levels no stronger
//! than the ones below them, whether drawn from a Gumbel search's improved policy (levels 11
//! to 16 of the xiangqi record net) or from its visits (levels 4 to 8), while the random-move
//! rate moved the measured strength at every step.
//!
//! Whatever the level, a move that wins at once by the rules (mate, stalemate, a repetition
//! verdict against the opponent) is always played when there is one, and only the root's legal
//! moves are ever chosen.

use std::fmt;

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::game::SearchGame;
use crate::search::Search;
use crate::tree::{NodeId, NodeStatus};

/// The strongest level: the network at its full budget, no randomness.
pub const MAX_LEVEL: u32 = 20;

/// The largest full budget a [`StrengthTable`] may name.
pub const MAX_TABLE_SIMULATIONS: u32 = 1 << 20;

/// The largest Elo (in size) a [`StrengthTable`] may hold: beyond any real ladder.
const MAX_ELO: f64 = 100_000.0;

/// A level outside `0..=20`, or not a number.
#[derive(Clone, Debug, PartialEq, Error)]
#[error("a skill level is a number from 0 to {MAX_LEVEL}, not {0}")]
pub struct LevelError(pub String);

/// A playing strength: a skill level in `[0, 20]` (see the [module documentation](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Strength {
    level: f64,
}

impl Strength {
    /// Full strength (level 20).
    pub const FULL: Strength = Strength { level: MAX_LEVEL as f64 };

    /// The strength of `level`.
    ///
    /// # Errors
    /// [`LevelError`] for a level below 0, above 20, or not finite.
    pub fn new(level: f64) -> Result<Strength, LevelError> {
        if level.is_finite() && (0.0..=f64::from(MAX_LEVEL)).contains(&level) {
            Ok(Strength { level })
        } else {
            Err(LevelError(level.to_string()))
        }
    }

    /// The strength of a whole level, cut to `0..=20`.
    pub fn skill(level: u32) -> Strength {
        Strength { level: f64::from(level.min(MAX_LEVEL)) }
    }

    /// The level, in `[0, 20]`.
    pub fn level(&self) -> f64 {
        self.level
    }

    /// Whether this is level 20: the search's own move, at the full budget.
    pub fn is_full(&self) -> bool {
        self.level >= f64::from(MAX_LEVEL)
    }

    /// Simulations a move at this level for a full budget of `full`: `max(1, round(B^(s/20)))`.
    pub fn simulations(&self, full: u32) -> u32 {
        let full = full.max(1);
        if self.is_full() {
            return full;
        }
        let n = f64::from(full).powf(self.level / f64::from(MAX_LEVEL)).round();
        (n as u32).clamp(1, full)
    }

    /// The probability of a uniformly random legal move: `(1 − s/20)²`.
    pub fn random_move_rate(&self) -> f64 {
        (1.0 - self.level / f64::from(MAX_LEVEL)).max(0.0).powi(2)
    }

    /// The move to play at this level after `search` has run (its root evaluated), among the
    /// root's legal moves that `allowed` accepts (all of them, if it accepts none). `None` when
    /// the root has no legal move or was never evaluated.
    ///
    /// A move that wins at once is always chosen; else, with the level's
    /// [`Strength::random_move_rate`], a uniformly random one; else the search's own
    /// recommendation ([`crate::SearchResult::best`]) if it is allowed, or the allowed move with
    /// most visits (ties: the higher prior).
    pub fn choose<G: SearchGame, R: Rng + ?Sized>(
        &self,
        search: &Search<G>,
        allowed: impl Fn(G::Move) -> bool,
        rng: &mut R,
    ) -> Option<G::Move> {
        let tree = search.tree();
        if tree.status(NodeId::ROOT) != NodeStatus::Expanded {
            return None;
        }
        let result = search.result();
        let mut pool: Vec<usize> =
            (0..result.moves.len()).filter(|&i| allowed(result.moves[i])).collect();
        if pool.is_empty() {
            pool = (0..result.moves.len()).collect();
        }
        if pool.is_empty() {
            return None;
        }
        let game = search.game();
        if let Some(&win) = pool.iter().find(|&&i| game.is_winning_move(result.moves[i])) {
            return Some(result.moves[win]);
        }
        if !self.is_full() && rng.random::<f64>() < self.random_move_rate() {
            return Some(result.moves[pool[rng.random_range(0..pool.len())]]);
        }
        if pool.iter().any(|&i| result.moves[i] == result.best) {
            return Some(result.best);
        }
        let most = pool
            .iter()
            .copied()
            .max_by_key(|&i| (result.visits[i], search.root_priors()[i].to_bits()));
        most.map(|i| result.moves[i])
    }
}

impl fmt::Display for Strength {
    /// `level 7`, or `level 7.25` for a fraction (cut, not rounded, to hundredths: a level
    /// below 20 never reads as 20).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.level.fract() == 0.0 {
            write!(f, "level {}", self.level)
        } else {
            write!(f, "level {:.2}", (self.level * 100.0).floor() / 100.0)
        }
    }
}

/// One rated player of a [`StrengthTable`]: a level or a ladder player, with its Elo and 95%
/// interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatedPlayer {
    /// `level N` for a level; `greedy`, `random`, an engine's name for the ladder.
    pub name: String,
    /// The skill level, for a level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u32>,
    /// Elo on the table's scale (its anchor at 0).
    pub elo: f64,
    /// Lower bound of the 95% interval.
    pub low: f64,
    /// Upper bound of the 95% interval.
    pub high: f64,
    /// Games this player played in the calibration.
    pub games: u32,
}

/// The measured strength of every level of one network: what `xqz calibrate` writes into an
/// export (`[strength]` in its manifest) and what the engine's `UCI_Elo` reads.
///
/// Elo is on the logistic scale (a 400-point difference expects a 10:1 score) with the
/// `anchor` player (`random`, the uniformly random mover) at 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrengthTable {
    /// The player rated 0.
    pub anchor: String,
    /// The full budget `B` the levels were played with (simulations a move at level 20).
    pub simulations: u32,
    /// Games played in all.
    pub games: u32,
    /// Levels 0 to 20, in order.
    pub levels: Vec<RatedPlayer>,
    /// The fixed players they were measured against (the anchor among them).
    pub ladder: Vec<RatedPlayer>,
}

impl StrengthTable {
    /// Checks the table as read from a file: levels 0 to 20 once each in order, finite
    /// ratings with `low ≤ elo ≤ high`, a budget of at least one simulation.
    ///
    /// # Errors
    /// What is wrong, naming the entry.
    pub fn validate(&self) -> Result<(), String> {
        if self.simulations == 0 {
            return Err("strength.simulations must be at least 1".to_string());
        }
        if self.levels.len() != MAX_LEVEL as usize + 1 {
            return Err(format!(
                "strength.levels has {} entries; expected {} (levels 0 to {MAX_LEVEL})",
                self.levels.len(),
                MAX_LEVEL + 1
            ));
        }
        for (i, p) in self.levels.iter().enumerate() {
            if p.level != Some(i as u32) {
                return Err(format!("strength.levels[{i}] is not level {i}"));
            }
        }
        if self.simulations > MAX_TABLE_SIMULATIONS {
            return Err(format!(
                "strength.simulations is {}; at most {MAX_TABLE_SIMULATIONS}",
                self.simulations
            ));
        }
        for p in self.levels.iter().chain(&self.ladder) {
            let sane = [p.elo, p.low, p.high].iter().all(|x| x.is_finite() && x.abs() <= MAX_ELO);
            if !sane || p.low > p.elo || p.elo > p.high {
                return Err(format!(
                    "strength: '{}' has Elo {} with the interval [{}, {}]",
                    p.name, p.elo, p.low, p.high
                ));
            }
        }
        Ok(())
    }

    /// Whether each level measured stronger than the one below it.
    pub fn is_monotonic(&self) -> bool {
        self.levels.windows(2).all(|w| w[1].elo > w[0].elo)
    }

    /// The levels (pairs `s, s+1`) where the measured Elo does not rise.
    pub fn inversions(&self) -> Vec<u32> {
        self.levels.windows(2).filter(|w| w[1].elo <= w[0].elo).filter_map(|w| w[0].level).collect()
    }

    /// The Elo of the weakest and strongest level as whole numbers inside the measured range
    /// (the first rounded up, the last down, unless they are the same).
    pub fn elo_range(&self) -> (i64, i64) {
        let envelope = self.envelope();
        let first = envelope.first().map_or(0.0, |p| p.1);
        let last = envelope.last().map_or(0.0, |p| p.1);
        let (low, high) = (first.ceil() as i64, last.floor() as i64);
        if low <= high { (low, high) } else { (first.round() as i64, first.round() as i64) }
    }

    /// The level whose measured strength is `elo`: linear between the two levels around it on
    /// the table's running maximum (so that a dip in the measurement never makes a higher Elo
    /// play weaker), cut to the range of the levels: above the strongest measured level, that
    /// level.
    pub fn level_for_elo(&self, elo: f64) -> Strength {
        let envelope = self.envelope();
        let Some(&(first_level, first_elo)) = envelope.first() else { return Strength::FULL };
        if !elo.is_finite() || elo <= first_elo {
            return Strength::new(first_level).unwrap_or(Strength::FULL);
        }
        for w in envelope.windows(2) {
            let ((l0, e0), (l1, e1)) = (w[0], w[1]);
            if elo <= e1 {
                let t = if e1 > e0 { (elo - e0) / (e1 - e0) } else { 1.0 };
                return Strength::new(l0 + t * (l1 - l0)).unwrap_or(Strength::FULL);
            }
        }
        envelope.last().and_then(|&(l, _)| Strength::new(l).ok()).unwrap_or(Strength::FULL)
    }

    /// `(level, Elo)` of the levels on the running maximum of their Elo, strictly rising.
    fn envelope(&self) -> Vec<(f64, f64)> {
        let mut out: Vec<(f64, f64)> = Vec::new();
        for p in &self.levels {
            let Some(level) = p.level else { continue };
            match out.last() {
                Some(&(_, e)) if p.elo <= e => {}
                _ => out.push((f64::from(level), p.elo)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use xiangqi::{Game, Position, RuleSet};

    use super::*;
    use crate::{Checked, EvalBuffer, SearchConfig, UniformEvaluator};

    #[test]
    fn levels_outside_the_range_are_refused() {
        assert!(Strength::new(-0.5).is_err());
        assert!(Strength::new(20.01).is_err());
        assert!(Strength::new(f64::NAN).is_err());
        assert_eq!(Strength::new(7.5).unwrap().level(), 7.5);
        assert_eq!(Strength::skill(99), Strength::FULL);
    }

    #[test]
    fn settings_weaken_as_the_level_falls() {
        // B^(s/20) for B = 800: 1 at level 0, round(sqrt(800)) = 28 at level 10, 800 at 20.
        assert_eq!(Strength::skill(0).simulations(800), 1);
        assert_eq!(Strength::skill(10).simulations(800), 28);
        assert_eq!(Strength::skill(20).simulations(800), 800);
        // (1 - s/20)^2: every level, one in four at level 10, none at 20.
        assert_eq!(Strength::skill(0).random_move_rate(), 1.0);
        assert_eq!(Strength::skill(10).random_move_rate(), 0.25);
        assert_eq!(Strength::skill(20).random_move_rate(), 0.0);
        for s in 0..MAX_LEVEL {
            let (a, b) = (Strength::skill(s), Strength::skill(s + 1));
            assert!(a.simulations(800) <= b.simulations(800));
            assert!(a.random_move_rate() > b.random_move_rate());
        }
    }

    fn searched(fen: &str, simulations: u32) -> Search<Game> {
        let game = Game::new(Position::from_fen(fen).unwrap(), RuleSet::Asian);
        let config = Checked::new(SearchConfig::default()).unwrap();
        let mut search = Search::new(game, config);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        search
            .run(simulations, false, &mut rng, &mut UniformEvaluator, &mut EvalBuffer::new())
            .unwrap();
        search
    }

    #[test]
    fn every_level_plays_a_mate_in_one() {
        // Red mates with b7-b9 or wins with a8-f8 (Black is left without a move), among 30-odd
        // moves; level 0 otherwise plays at random.
        let fen = "4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1";
        let search = searched(fen, 1);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for s in 0..=MAX_LEVEL {
            for _ in 0..20 {
                let m = Strength::skill(s).choose(&search, |_| true, &mut rng).unwrap();
                assert!(search.game().is_winning_move(m), "level {s} played {m}");
            }
        }
    }

    #[test]
    fn choices_are_legal_and_allowed() {
        let search = searched(&Position::start().fen(), 8);
        let legal = search.game().legal_moves();
        let banned = legal[0];
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut seen = std::collections::HashSet::new();
        for s in [0.0, 2.5, 9.0, 19.5, 20.0] {
            for _ in 0..200 {
                let m = Strength::new(s).unwrap().choose(&search, |m| m != banned, &mut rng);
                let m = m.unwrap();
                assert!(legal.contains(&m) && m != banned, "level {s}: {m}");
                seen.insert(m);
            }
        }
        // The weak levels spread their choices: far more than one move was played.
        assert!(seen.len() > 10, "{}", seen.len());
        // With every move refused, a move is still chosen.
        assert!(Strength::skill(4).choose(&search, |_| false, &mut rng).is_some());
    }

    fn table(elos: &[f64]) -> StrengthTable {
        StrengthTable {
            anchor: "random".into(),
            simulations: 100,
            games: 10,
            levels: elos
                .iter()
                .enumerate()
                .map(|(i, &elo)| RatedPlayer {
                    name: format!("level {i}"),
                    level: Some(i as u32),
                    elo,
                    low: elo - 50.0,
                    high: elo + 50.0,
                    games: 10,
                })
                .collect(),
            ladder: vec![],
        }
    }

    #[test]
    fn elo_maps_to_levels_on_the_running_maximum() {
        let mut elos: Vec<f64> = (0..=20).map(|i| 100.0 * f64::from(i)).collect();
        let t = table(&elos);
        t.validate().unwrap();
        assert!(t.is_monotonic());
        assert_eq!(t.level_for_elo(-300.0).level(), 0.0);
        assert_eq!(t.level_for_elo(550.0).level(), 5.5);
        assert_eq!(t.level_for_elo(5000.0), Strength::FULL);
        // The offered range lies inside the measured one.
        let mut e = elos.clone();
        e[0] = 0.4;
        e[20] = 1999.6;
        let t2 = table(&e);
        assert_eq!(t2.elo_range(), (1, 1999));
        assert!(t2.level_for_elo(1999.0).level() < 20.0);
        // Above a top level below 20, that level (not full strength).
        let mut e = elos.clone();
        e[19] = 3000.0;
        assert_eq!(table(&e).level_for_elo(9999.0).level(), 19.0);
        assert_eq!(t.elo_range(), (0, 2000));
        // A dip at level 7 (measured below level 6) is skipped over.
        elos[7] = 550.0;
        let t = table(&elos);
        assert!(!t.is_monotonic());
        assert_eq!(t.inversions(), vec![6]);
        // Between levels 6 (600) and 8 (800), halfway.
        assert_eq!(t.level_for_elo(700.0).level(), 7.0);
        assert!(t.level_for_elo(599.0).level() < 6.0);
    }

    #[test]
    fn malformed_tables_are_refused() {
        let elos: Vec<f64> = (0..=20).map(f64::from).collect();
        let mut t = table(&elos[..20]);
        assert!(t.validate().unwrap_err().contains("20 entries"));
        t = table(&elos);
        t.levels[3].level = Some(4);
        assert!(t.validate().unwrap_err().contains("levels[3]"));
        t = table(&elos);
        t.levels[2].elo = f64::NAN;
        assert!(t.validate().is_err());
        t = table(&elos);
        t.simulations = 0;
        assert!(t.validate().is_err());
        t = table(&elos);
        t.levels[5].elo = 1e300;
        t.levels[5].high = 1e300;
        assert!(t.validate().is_err());
    }
}
