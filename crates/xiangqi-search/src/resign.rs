//! Self-tuning resignation: choose the resignation threshold from the measured false-positive
//! rate.
//!
//! AlphaGo Zero (Silver et al. 2017, "Mastering the game of Go without human knowledge",
//! Methods) resigns when the root and best-child values fall below a threshold chosen
//! automatically to keep the fraction of false positives (games that could have been won or
//! drawn had the side not resigned) below 5%, measured on the 10% of games played out with
//! resignation disabled. This module does that choice.
//!
//! # What is measured
//! For every side of every game in which resignation could not happen (a game with
//! resignation disabled, or any game while no threshold is in effect), the lowest value of the
//! best move among the side's searches ([`GameRecord::lowest_value`], in `[-1, 1]` for that
//! side) and whether the side went on to lose. A side with lowest value `v` would have resigned
//! under threshold `t` exactly when `v < t`; it is a false positive if it then did not lose (a
//! draw, a win, or a game cut at its length cap).
//!
//! The observations are binned in steps of [`STEP`] (`v` in `[-1 + k·STEP, -1 + (k+1)·STEP)` in
//! bin `k`), so that the whole calibration is a few hundred counts that a checkpoint can keep.
//! [`ResignCalibration::decay`] (the training loop calls it after each iteration's games) halves
//! every count while more than `capacity` sides are counted: older games weigh less as the
//! network changes. Counts only add up between two decays, so one iteration's games counted at
//! once ([`ResignCalibration::merge`]) give the same calibration as counted one by one.
//!
//! # The choice
//! [`ResignCalibration::choose`] returns the highest candidate threshold `t` (from
//! `-1 + STEP` up to [`MAX_THRESHOLD`]) at which at least `min_resigners` counted sides would
//! have resigned and at most a `target` fraction of them did not lose; `-1` (no resignation)
//! when there is none, which is also the answer until enough games have been counted.

use xiangqi::Color;

use crate::game::GameEnv;
use crate::record::GameRecord;

/// Width of a calibration bin, in value units.
pub const STEP: f32 = 0.01;

/// The highest threshold ever chosen: a side is never resigned for while its best move is
/// valued above this.
pub const MAX_THRESHOLD: f32 = -0.5;

/// Bins below [`MAX_THRESHOLD`] (`(MAX_THRESHOLD + 1) / STEP`), plus one for every value at or
/// above it.
pub const BINS: usize = 51;

/// The counts of the calibration, by bin: sides that lost, and sides that did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResignCalibration {
    lost: [u64; BINS],
    not_lost: [u64; BINS],
    capacity: u64,
}

impl ResignCalibration {
    /// An empty calibration that [`ResignCalibration::decay`] halves beyond `capacity` sides (at
    /// least 2).
    pub fn new(capacity: u64) -> ResignCalibration {
        ResignCalibration { lost: [0; BINS], not_lost: [0; BINS], capacity: capacity.max(2) }
    }

    /// The bin of a lowest value (`NaN` counts as the highest bin: never a resigner).
    pub fn bin(value: f32) -> usize {
        if value.is_nan() {
            return BINS - 1;
        }
        let k = ((value.clamp(-1.0, 1.0) + 1.0) / STEP).floor();
        (k as usize).min(BINS - 1)
    }

    /// The candidate threshold of index `k` (`1..BINS`): `-1 + k·STEP`. A side of bin `b` would
    /// resign under it exactly when `b < k`.
    pub fn threshold(k: usize) -> f32 {
        -1.0 + k as f32 * STEP
    }

    /// Counts one side: the lowest value its searches gave its best move, and whether it lost.
    pub fn add(&mut self, lowest_value: f32, lost: bool) {
        let b = Self::bin(lowest_value);
        let count = if lost { &mut self.lost[b] } else { &mut self.not_lost[b] };
        *count = count.saturating_add(1);
    }

    /// Adds the counts of `other` (one iteration's games, say), bin by bin.
    pub fn merge(&mut self, other: &ResignCalibration) {
        for b in 0..BINS {
            self.lost[b] = self.lost[b].saturating_add(other.lost[b]);
            self.not_lost[b] = self.not_lost[b].saturating_add(other.not_lost[b]);
        }
    }

    /// Halves every count while more than `capacity` sides are counted.
    pub fn decay(&mut self) {
        while self.total() > self.capacity {
            for c in self.lost.iter_mut().chain(self.not_lost.iter_mut()) {
                *c /= 2;
            }
        }
    }

    /// Counts both sides of a finished game, if resignation could not have ended it: it was
    /// disabled for the game, or `threshold_in_effect` was `-1` or lower (no resignation).
    /// Returns whether the game was counted.
    pub fn add_game<G: GameEnv>(
        &mut self,
        record: &GameRecord<G>,
        threshold_in_effect: f32,
    ) -> bool {
        if !(record.resign_disabled || threshold_in_effect <= -1.0) {
            return false;
        }
        for color in [Color::Red, Color::Black] {
            let lost = record.outcome.winner() == Some(color.other());
            self.add(record.lowest_value[color.index()], lost);
        }
        true
    }

    /// Sides counted (after any halving).
    pub fn total(&self) -> u64 {
        self.lost.iter().chain(&self.not_lost).fold(0u64, |a, &c| a.saturating_add(c))
    }

    /// Under threshold index `k` (`1..BINS`): the sides that would have resigned, and of those
    /// the ones that did not lose. `k = BINS` counts every side, the top bin included.
    pub fn resigners(&self, k: usize) -> (u64, u64) {
        let k = k.min(BINS);
        let sum = |v: &[u64]| v.iter().fold(0u64, |a, &c| a.saturating_add(c));
        let (lost, not_lost) = (sum(&self.lost[..k]), sum(&self.not_lost[..k]));
        (lost.saturating_add(not_lost), not_lost)
    }

    /// The false-positive rate the counts give for threshold `t` (rounded down to a bin edge),
    /// or `None` when no counted side would have resigned under it.
    pub fn false_positive_rate(&self, t: f32) -> Option<f64> {
        let (n, fp) = self.resigners(Self::bin(t));
        (n > 0).then(|| fp as f64 / n as f64)
    }

    /// The threshold to use: the highest candidate (at most [`MAX_THRESHOLD`]) under which at
    /// least `min_resigners` counted sides would have resigned with a false-positive rate of at
    /// most `target`; `-1.0` (never resign) if there is none.
    pub fn choose(&self, target: f64, min_resigners: u64) -> f32 {
        let mut best = -1.0;
        for k in 1..BINS {
            let (n, fp) = self.resigners(k);
            if n >= min_resigners.max(1) && fp as f64 <= target * n as f64 {
                best = Self::threshold(k);
            }
        }
        best
    }

    /// The counts as `(bin, lost, not lost)` for the non-empty bins (to save them).
    pub fn counts(&self) -> Vec<(usize, u64, u64)> {
        (0..BINS)
            .filter(|&b| self.lost[b] + self.not_lost[b] > 0)
            .map(|b| (b, self.lost[b], self.not_lost[b]))
            .collect()
    }

    /// Sets the counts of bin `b` (to restore saved counts); a bin out of range is ignored and
    /// reported as `false`.
    pub fn set_counts(&mut self, b: usize, lost: u64, not_lost: u64) -> bool {
        if b >= BINS {
            return false;
        }
        self.lost[b] = lost;
        self.not_lost[b] = not_lost;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_follow_the_threshold_rule() {
        assert_eq!(ResignCalibration::bin(-1.0), 0);
        assert_eq!(ResignCalibration::bin(-0.995), 0);
        assert_eq!(ResignCalibration::bin(-0.985), 1);
        assert_eq!(ResignCalibration::bin(-0.5), BINS - 1);
        assert_eq!(ResignCalibration::bin(0.7), BINS - 1);
        assert_eq!(ResignCalibration::bin(f32::NAN), BINS - 1);
        assert_eq!(ResignCalibration::bin(-7.0), 0);
        // A value just below a threshold resigns under it; one at or above does not.
        for k in 1..BINS {
            let t = ResignCalibration::threshold(k);
            assert!(ResignCalibration::bin(t - 0.004) < k, "k = {k}");
            assert!(ResignCalibration::bin(t + 0.004) >= k, "k = {k}");
        }
    }

    #[test]
    fn the_choice_is_the_highest_threshold_within_the_target() {
        let mut c = ResignCalibration::new(1_000_000);
        // 100 sides at -0.965 (bin 3), all lost; 100 at -0.855 (bin 14), 10 of them not lost;
        // 100 at -0.605 (bin 39), 60 of them not lost.
        for i in 0..100 {
            c.add(-0.965, true);
            c.add(-0.855, i >= 10);
            c.add(-0.605, i >= 60);
        }
        // Thresholds of index 4..=14 resign 100 sides, none falsely; 15..=39 resign 200, 10
        // falsely (5%); 40 and above resign 300, 70 falsely (23%).
        assert_eq!(c.resigners(3), (0, 0));
        assert_eq!(c.resigners(14), (100, 0));
        assert_eq!(c.resigners(39), (200, 10));
        assert_eq!(c.resigners(BINS), (300, 70));
        assert_eq!(c.choose(0.05, 50), ResignCalibration::threshold(39));
        assert_eq!(c.choose(0.049, 50), ResignCalibration::threshold(14));
        assert_eq!(c.choose(0.0, 50), ResignCalibration::threshold(14));
        // Too few would-be resigners at any threshold: resignation stays off.
        assert_eq!(c.choose(0.05, 301), -1.0);
        assert_eq!(ResignCalibration::new(10).choose(0.05, 1), -1.0);
        let fp = c.false_positive_rate(-0.7).unwrap();
        assert!((fp - 10.0 / 200.0).abs() < 1e-12, "{fp}");
        let fp = c.false_positive_rate(-0.595).unwrap();
        assert!((fp - 70.0 / 300.0).abs() < 1e-12, "{fp}");
        assert_eq!(c.false_positive_rate(-0.99), None);
    }

    #[test]
    fn counts_halve_beyond_the_capacity_and_survive_a_round_trip() {
        let mut c = ResignCalibration::new(100);
        for _ in 0..101 {
            c.add(-0.9, true);
        }
        assert_eq!(c.total(), 101);
        c.decay();
        assert_eq!(c.total(), 50);
        // Merging an iteration's counts equals adding them one by one.
        let mut one_by_one = c.clone();
        let mut iteration = ResignCalibration::new(100);
        for (v, lost) in [(-0.95, false), (-0.3, true), (-0.95, true)] {
            one_by_one.add(v, lost);
            iteration.add(v, lost);
        }
        let mut merged = c.clone();
        merged.merge(&iteration);
        assert_eq!(merged, one_by_one);
        let mut huge = ResignCalibration::new(100);
        huge.set_counts(0, u64::MAX, u64::MAX);
        huge.merge(&one_by_one);
        assert_eq!(huge.total(), u64::MAX);
        huge.decay();
        assert!(huge.total() <= 100);
        let mut d = ResignCalibration::new(100);
        for (b, lost, not_lost) in c.counts() {
            assert!(d.set_counts(b, lost, not_lost));
        }
        assert_eq!(c, d);
        assert!(!d.set_counts(BINS, 1, 1));
    }
}
