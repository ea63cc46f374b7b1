//! Ratings of many players from the games between some pairs of them: the Bradley–Terry model
//! on the Elo scale, fitted by maximum likelihood with Hunter's MM algorithm (D. R. Hunter, "MM
//! algorithms for generalized Bradley–Terry models", Annals of Statistics 32, 2004), a draw
//! counted as half a win for each side, and intervals by bootstrap.
//!
//! A pairing whose games all went one way has no finite maximum-likelihood rating; as in
//! BayesElo, each pairing gets `prior_draws` virtual draws, which keeps every rating finite
//! and pulls a one-sided pairing's difference to about `400 · log10(2n / prior)` for `n` games.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::stats::Wdl;

/// The games between two players `a` and `b`, from `a`'s side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pairing {
    /// The first player's index.
    pub a: usize,
    /// The second player's index.
    pub b: usize,
    /// `a`'s wins, draws and losses against `b`.
    pub wdl: Wdl,
}

/// A rating with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating {
    /// The maximum-likelihood Elo.
    pub elo: f64,
    /// The 2.5th percentile of the bootstrap's ratings (never above `elo`).
    pub low: f64,
    /// The 97.5th percentile (never below `elo`).
    pub high: f64,
}

/// The maximum-likelihood Elo of `players` players from `pairings`, with player `anchor` at 0
/// and `prior_draws` virtual draws per pairing. A player in no pairing, or in none connected to
/// the anchor, gets 0 (the fit has nothing to say of it).
///
/// # Panics
/// If `anchor` or a pairing's index is not below `players`.
pub fn fit_elo(players: usize, anchor: usize, pairings: &[Pairing], prior_draws: f64) -> Vec<f64> {
    assert!(anchor < players, "anchor {anchor} of {players} players");
    let prior = prior_draws.max(0.0);
    // Points and games of each player, and the games between each pair.
    let mut points = vec![0.0; players];
    let mut games: Vec<Vec<(usize, f64)>> = vec![Vec::new(); players];
    for p in pairings {
        assert!(p.a < players && p.b < players, "pairing ({}, {}) of {players}", p.a, p.b);
        if p.a == p.b {
            continue;
        }
        let n = f64::from(p.wdl.games()) + prior;
        if n <= 0.0 {
            continue;
        }
        points[p.a] += p.wdl.points() + prior / 2.0;
        points[p.b] += f64::from(p.wdl.games()) - p.wdl.points() + prior / 2.0;
        games[p.a].push((p.b, n));
        games[p.b].push((p.a, n));
    }
    let mut gamma = vec![1.0f64; players];
    for _ in 0..20_000 {
        let mut change = 0.0f64;
        let mut next = gamma.clone();
        for i in 0..players {
            if games[i].is_empty() {
                continue;
            }
            let denom: f64 = games[i].iter().map(|&(j, n)| n / (gamma[i] + gamma[j])).sum();
            // A player that never scored keeps a tiny positive strength (finite on the log
            // scale) rather than 0; with a positive prior this never happens.
            let g = (points[i] / denom).max(1e-12);
            change = change.max((g.ln() - gamma[i].ln()).abs());
            next[i] = g;
        }
        // Scale so that the anchor stays at 1 (ratings are relative).
        let scale = next[anchor];
        if scale > 0.0 {
            for g in &mut next {
                *g /= scale;
            }
        }
        gamma = next;
        if change < 1e-10 {
            break;
        }
    }
    let reached = reachable(players, anchor, &games);
    gamma.iter().zip(&reached).map(|(&g, &r)| if r { 400.0 * g.log10() } else { 0.0 }).collect()
}

/// Which players a chain of pairings connects to `anchor`.
fn reachable(players: usize, anchor: usize, games: &[Vec<(usize, f64)>]) -> Vec<bool> {
    let mut seen = vec![false; players];
    let mut stack = vec![anchor];
    seen[anchor] = true;
    while let Some(i) = stack.pop() {
        for &(j, _) in &games[i] {
            if !seen[j] {
                seen[j] = true;
                stack.push(j);
            }
        }
    }
    seen
}

/// [`fit_elo`] with 95% intervals from `rounds` bootstrap refits, each over the same pairings
/// with every pairing's games drawn again with replacement from its own results (seeded by
/// `seed`, so the intervals repeat).
///
/// # Panics
/// As [`fit_elo`].
pub fn fit_elo_with_intervals(
    players: usize,
    anchor: usize,
    pairings: &[Pairing],
    prior_draws: f64,
    rounds: usize,
    seed: u64,
) -> Vec<Rating> {
    let elo = fit_elo(players, anchor, pairings, prior_draws);
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); players];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..rounds {
        let resampled: Vec<Pairing> = pairings
            .iter()
            .map(|p| {
                let n = p.wdl.games();
                let mut wdl = Wdl::default();
                for _ in 0..n {
                    let k = rng.random_range(0..n);
                    if k < p.wdl.wins {
                        wdl.wins += 1;
                    } else if k < p.wdl.wins + p.wdl.draws {
                        wdl.draws += 1;
                    } else {
                        wdl.losses += 1;
                    }
                }
                Pairing { wdl, ..*p }
            })
            .collect();
        for (s, e) in samples.iter_mut().zip(fit_elo(players, anchor, &resampled, prior_draws)) {
            s.push(e);
        }
    }
    elo.iter()
        .zip(samples)
        .map(|(&elo, mut s)| {
            if s.is_empty() {
                return Rating { elo, low: elo, high: elo };
            }
            s.sort_by(f64::total_cmp);
            let at = |q: f64| s[((q * (s.len() - 1) as f64).round() as usize).min(s.len() - 1)];
            Rating { elo, low: at(0.025).min(elo), high: at(0.975).max(elo) }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::score_from_elo;

    #[test]
    fn two_players_get_the_elo_of_their_score() {
        // 75% is 400 · log10(3) = 190.8 Elo (the logistic model), without a prior.
        let p = [Pairing { a: 1, b: 0, wdl: Wdl::new(60, 30, 10) }];
        let elo = fit_elo(2, 0, &p, 0.0);
        assert_eq!(elo[0], 0.0);
        assert!((elo[1] - 400.0 * 3f64.log10()).abs() < 1e-6, "{elo:?}");
    }

    #[test]
    fn a_chain_adds_up_and_the_anchor_stays_at_zero() {
        // Exact expected scores of a 0 / 200 / 500 ladder, played 10,000 times each: the fit
        // recovers the ladder from adjacent pairs alone.
        let games = 10_000u32;
        let wdl = |d: f64| {
            let wins = (score_from_elo(d) * f64::from(games)).round() as u32;
            Wdl::new(wins, 0, games - wins)
        };
        let p = [Pairing { a: 1, b: 0, wdl: wdl(200.0) }, Pairing { a: 2, b: 1, wdl: wdl(300.0) }];
        let elo = fit_elo(4, 0, &p, 0.0);
        assert!((elo[1] - 200.0).abs() < 1.0, "{elo:?}");
        assert!((elo[2] - 500.0).abs() < 1.0, "{elo:?}");
        // Player 3 played nobody.
        assert_eq!(elo[3], 0.0);
    }

    #[test]
    fn a_clean_sweep_stays_finite_with_a_prior() {
        // 20-0 with one virtual draw: 20.5 of 21 points, 400 · log10(20.5 / 0.5) = 645 Elo.
        let p = [Pairing { a: 1, b: 0, wdl: Wdl::new(20, 0, 0) }];
        let elo = fit_elo(2, 0, &p, 1.0);
        assert!((elo[1] - 400.0 * 41f64.log10()).abs() < 1e-6, "{elo:?}");
    }

    #[test]
    fn intervals_contain_the_estimate_and_narrow_with_games() {
        let few = [Pairing { a: 1, b: 0, wdl: Wdl::new(12, 4, 4) }];
        let many = [Pairing { a: 1, b: 0, wdl: Wdl::new(1200, 400, 400) }];
        let r_few = fit_elo_with_intervals(2, 0, &few, 1.0, 200, 7);
        let r_many = fit_elo_with_intervals(2, 0, &many, 1.0, 200, 7);
        for r in [r_few[1], r_many[1]] {
            assert!(r.low <= r.elo && r.elo <= r.high, "{r:?}");
        }
        assert!(r_few[1].high - r_few[1].low > 3.0 * (r_many[1].high - r_many[1].low));
        // The anchor has no spread.
        assert_eq!((r_few[0].low, r_few[0].high), (0.0, 0.0));
        // Seeded: the same intervals again.
        assert_eq!(r_few, fit_elo_with_intervals(2, 0, &few, 1.0, 200, 7));
    }
}
