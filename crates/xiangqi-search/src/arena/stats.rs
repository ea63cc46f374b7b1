//! The statistics of a match: [`Wdl`], Elo with a 95% interval ([`EloEstimate`]), the SPRT
//! ([`Sprt`]) and [`MatchStats`]; the formulas are in the [module documentation](super).

use std::fmt;

use thiserror::Error;
use xiangqi::{Color, OutcomeReason};

use super::game::ArenaGame;
use crate::game::GameEnv;

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The Elo difference of a score fraction `s` (logistic model): `−400 · log10(1/s − 1)`.
/// Infinite at 0 and 1.
pub fn elo_from_score(s: f64) -> f64 {
    -400.0 * (1.0 / s - 1.0).log10()
}

/// The expected score of an Elo difference (logistic model): `1 / (1 + 10^(−elo/400))`.
pub fn score_from_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// An Elo difference with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EloEstimate {
    /// The estimate.
    pub elo: f64,
    /// Lower bound of the 95% interval.
    pub lower: f64,
    /// Upper bound of the 95% interval.
    pub upper: f64,
}

impl EloEstimate {
    /// Half the width of the interval.
    pub fn margin(&self) -> f64 {
        (self.upper - self.lower) / 2.0
    }
}

/// Wins, draws and losses of one player.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wdl {
    /// Games won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games lost.
    pub losses: u32,
}

impl Wdl {
    /// Counts from numbers.
    pub const fn new(wins: u32, draws: u32, losses: u32) -> Wdl {
        Wdl { wins, draws, losses }
    }

    /// Games played.
    pub const fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// Points: a win 1, a draw ½.
    pub fn points(&self) -> f64 {
        f64::from(self.wins) + 0.5 * f64::from(self.draws)
    }

    /// The score fraction in `[0, 1]` (½ with no game).
    pub fn score(&self) -> f64 {
        if self.games() == 0 { 0.5 } else { self.points() / f64::from(self.games()) }
    }

    /// Adds one game scored `score` (1, ½ or 0) for this player.
    pub fn add(&mut self, score: f32) {
        if score > 0.75 {
            self.wins += 1;
        } else if score < 0.25 {
            self.losses += 1;
        } else {
            self.draws += 1;
        }
    }

    /// The Elo difference and its 95% interval, with the half-point prior described in the
    /// [module documentation](super): always finite, 0 and symmetric at a 50% score.
    pub fn elo(&self) -> EloEstimate {
        let w = f64::from(self.wins) + 0.5;
        let d = f64::from(self.draws);
        let l = f64::from(self.losses) + 0.5;
        let n = w + d + l;
        let s = (w + 0.5 * d) / n;
        let var = (w * (1.0 - s).powi(2) + d * (0.5 - s).powi(2) + l * s.powi(2)) / n;
        let se = (var / n).sqrt();
        let slope = 400.0 / (std::f64::consts::LN_10 * s * (1.0 - s));
        let elo = elo_from_score(s);
        let half = Z95 * se * slope;
        EloEstimate { elo, lower: elo - half, upper: elo + half }
    }
}

impl fmt::Display for Wdl {
    /// `+W =D -L`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "+{} ={} -{}", self.wins, self.draws, self.losses)
    }
}

/// The decision of an SPRT so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SprtVerdict {
    /// Not enough evidence yet.
    Continue,
    /// `H0` accepted: the Elo difference is at most `elo0`.
    AcceptH0,
    /// `H1` accepted: the Elo difference is at least `elo1`.
    AcceptH1,
}

impl fmt::Display for SprtVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SprtVerdict::Continue => "continue",
            SprtVerdict::AcceptH0 => "H0 accepted",
            SprtVerdict::AcceptH1 => "H1 accepted",
        })
    }
}

/// Bad SPRT parameters.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid SPRT: {0}")]
pub struct SprtError(pub String);

/// A sequential probability ratio test between `H0: elo = elo0` and `H1: elo = elo1`, with
/// error rates `alpha` (accepting H1 when H0 holds) and `beta` (the reverse). The formula is in
/// the [module documentation](super).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sprt {
    /// Elo of the null hypothesis.
    pub elo0: f64,
    /// Elo of the alternative; greater than `elo0`.
    pub elo1: f64,
    /// Type I error rate, in (0, 1).
    pub alpha: f64,
    /// Type II error rate, in (0, 1).
    pub beta: f64,
}

impl Sprt {
    /// A test with the usual error rates α = β = 0.05.
    ///
    /// # Errors
    /// An [`SprtError`] unless both Elo values are finite and `elo0 < elo1`.
    pub fn new(elo0: f64, elo1: f64) -> Result<Sprt, SprtError> {
        let s = Sprt { elo0, elo1, alpha: 0.05, beta: 0.05 };
        s.validate()?;
        Ok(s)
    }

    /// Checks the parameters.
    ///
    /// # Errors
    /// An [`SprtError`] saying which is wrong.
    pub fn validate(&self) -> Result<(), SprtError> {
        if !(self.elo0.is_finite() && self.elo1.is_finite() && self.elo0 < self.elo1) {
            return Err(SprtError(format!(
                "need finite elo0 < elo1, got {} and {}",
                self.elo0, self.elo1
            )));
        }
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(SprtError(format!("{name} must be in (0, 1), got {v}")));
            }
        }
        Ok(())
    }

    /// The decision bounds `(lower, upper)` on the log-likelihood ratio:
    /// `(ln(β/(1 − α)), ln((1 − β)/α))`.
    pub fn bounds(&self) -> (f64, f64) {
        ((self.beta / (1.0 - self.alpha)).ln(), ((1.0 - self.beta) / self.alpha).ln())
    }

    /// The log-likelihood ratio of H1 against H0 for `wdl` (0 with no game).
    pub fn llr(&self, wdl: &Wdl) -> f64 {
        if wdl.games() == 0 {
            return 0.0;
        }
        let fix = |x: u32| if x == 0 { 0.5 } else { f64::from(x) };
        let (w, d, l) = (fix(wdl.wins), fix(wdl.draws), fix(wdl.losses));
        let n = w + d + l;
        let (w, d) = (w / n, d / n);
        let s = w + d / 2.0;
        let var = (w + d / 4.0) - s * s;
        let var_s = var / n;
        if var_s <= 0.0 || !var_s.is_finite() {
            return 0.0;
        }
        let s0 = score_from_elo(self.elo0);
        let s1 = score_from_elo(self.elo1);
        (s1 - s0) * (2.0 * s - s0 - s1) / (2.0 * var_s)
    }

    /// The decision for `wdl`.
    pub fn verdict(&self, wdl: &Wdl) -> SprtVerdict {
        let llr = self.llr(wdl);
        let (lower, upper) = self.bounds();
        if llr >= upper {
            SprtVerdict::AcceptH1
        } else if llr <= lower {
            SprtVerdict::AcceptH0
        } else {
            SprtVerdict::Continue
        }
    }
}

/// Results of a match so far, from player A's point of view (B is the other player).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatchStats {
    /// A's wins, draws and losses.
    pub wdl: Wdl,
    /// A's results as the first player (xiangqi's Red, janggi's Cho).
    pub a_first: Wdl,
    /// A's results as the second player (xiangqi's Black, janggi's Han).
    pub a_second: Wdl,
    /// Forfeits by A (`[0]`) and B (`[1]`), indexed by [`ForfeitKind::index`].
    ///
    /// [`ForfeitKind::index`]: super::ForfeitKind::index
    pub forfeits: [[u32; 4]; 2],
    /// Games per ending reason ([`OutcomeReason::index`]; forfeits not counted).
    pub reasons: [u32; OutcomeReason::ALL.len()],
    /// Total plies played.
    pub plies: u64,
    /// The SPRT's log-likelihood ratio and verdict after the last game, if one runs.
    pub sprt: Option<(f64, SprtVerdict)>,
}

impl MatchStats {
    /// Games played.
    pub fn games(&self) -> u32 {
        self.wdl.games()
    }

    /// Forfeits of player `0` (A) or `1` (B), all kinds.
    pub fn total_forfeits(&self, player: usize) -> u32 {
        self.forfeits[player].iter().sum()
    }

    /// Adds a finished game in which A played `a_color`.
    pub fn add<G: GameEnv>(&mut self, game: &ArenaGame<G>, a_color: Color) {
        let score = game.outcome().score_for(a_color);
        self.wdl.add(score);
        match a_color {
            Color::Red => self.a_first.add(score),
            Color::Black => self.a_second.add(score),
        }
        match &game.forfeit {
            Some(f) => {
                let who = usize::from(f.loser != a_color);
                self.forfeits[who][f.kind.index()] += 1;
            }
            None => self.reasons[game.outcome().reason().index()] += 1,
        }
        self.plies += game.record.moves.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_score_is_zero_elo_with_a_symmetric_interval() {
        for wdl in [Wdl::new(10, 0, 10), Wdl::new(5, 30, 5), Wdl::new(0, 7, 0)] {
            let e = wdl.elo();
            assert!(e.elo.abs() < 1e-9, "{wdl}: {e:?}");
            assert!((e.upper + e.lower).abs() < 1e-9, "{wdl}: {e:?}");
            assert!(e.upper > 0.0);
        }
        // More games, narrower interval.
        assert!(Wdl::new(100, 0, 100).elo().margin() < Wdl::new(10, 0, 10).elo().margin());
    }

    #[test]
    fn perfect_scores_have_finite_bounds() {
        let e = Wdl::new(20, 0, 0).elo();
        assert!(e.elo.is_finite() && e.lower.is_finite() && e.upper.is_finite(), "{e:?}");
        assert!(e.lower > 0.0 && e.lower < e.elo && e.elo < e.upper, "{e:?}");
        let z = Wdl::new(0, 0, 20).elo();
        assert!(z.lower.is_finite() && z.upper.is_finite() && z.upper < 0.0, "{z:?}");
        assert!((z.elo + e.elo).abs() < 1e-9);
        let none = Wdl::default().elo();
        assert!(none.elo.abs() < 1e-9 && none.lower.is_finite());
    }

    #[test]
    fn elo_matches_the_logistic_model() {
        assert!((elo_from_score(0.75) - 190.848).abs() < 1e-3);
        assert!((score_from_elo(elo_from_score(0.3)) - 0.3).abs() < 1e-12);
        // 750 wins, 250 losses: the prior barely moves the estimate. By hand, with the half
        // point on each side: w = 750.5, l = 250.5, n = 1001, s = 750.5 / 1001 = 0.749750;
        // Elo = 400 · log10(750.5 / 250.5) = 400 · log10(2.996008) = 400 · 0.476543 = 190.617.
        // With no draws the variance per game is s(1 − s) = 750.5 · 250.5 / 1001² = 0.187625,
        // se = √(0.187625 / 1001) = 0.0136908; the slope of the Elo curve at s is
        // 400 / (ln 10 · s(1 − s)) = 400 / (2.302585 · 0.187625) = 925.88 Elo per unit of
        // score; half the interval 1.959964 · 0.0136908 · 925.88 = 24.84, so 165.77 to 215.46.
        let e = Wdl::new(750, 0, 250).elo();
        assert!((e.elo - 190.617).abs() < 0.01, "{e:?}");
        assert!((e.lower - 165.77).abs() < 0.01 && (e.upper - 215.46).abs() < 0.01, "{e:?}");
    }

    #[test]
    fn sprt_decides_lopsided_and_even_results() {
        let sprt = Sprt::new(0.0, 10.0).unwrap();
        let (lower, upper) = sprt.bounds();
        assert!((upper - 19f64.ln()).abs() < 1e-12 && (lower + 19f64.ln()).abs() < 1e-12);
        assert_eq!(sprt.verdict(&Wdl::new(80, 10, 10)), SprtVerdict::AcceptH1);
        assert_eq!(sprt.verdict(&Wdl::new(20, 0, 0)), SprtVerdict::AcceptH1);
        assert_eq!(sprt.verdict(&Wdl::new(3000, 3000, 3000)), SprtVerdict::AcceptH0);
        assert_eq!(sprt.verdict(&Wdl::new(3, 3, 3)), SprtVerdict::Continue);
        assert_eq!(sprt.verdict(&Wdl::default()), SprtVerdict::Continue);
        assert!(sprt.llr(&Wdl::new(0, 0, 30)) < lower);
        assert!(Sprt::new(5.0, 0.0).is_err());
        assert!(Sprt { alpha: 0.0, ..sprt }.validate().is_err());
    }
}
