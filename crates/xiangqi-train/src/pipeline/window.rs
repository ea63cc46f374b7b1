//! The replay window: the newest shards' samples, whole shards, and its rebuilding from the shards
//! on disk on resume.

use rayon::prelude::*;

use super::*;

/// Samples a parallel task of [`ReplayWindow::fill_batch`] encodes.
const FILL_CHUNK: usize = 16;

/// The samples of the replay window: whole shards, newest last, and how often each sample is
/// drawn (see [`sampling_weights`]).
#[derive(Debug, Default)]
pub(super) struct ReplayWindow {
    pub(super) shards: VecDeque<(u64, Shard)>,
    pub(super) samples: usize,
    /// Per shard (in `shards`' order), the running sums of its samples' sampling weights;
    /// empty for a shard whose samples are drawn uniformly (weight 1 each).
    cumulative: VecDeque<Vec<f64>>,
}

/// The sampling weight of each sample of `shard` under policy-surprise weighting with weight
/// `w` in `[0, 1]` (`loop.policy_surprise_weight`), or `None` when every sample weighs 1.
///
/// As KataGo's `policySurpriseDataWeight` (KataGo's `docs/KataGoMethods.md`, "Policy Surprise
/// Weighting", a method added after its 2019 paper): among the shard's full-search samples
/// whose surprise is known, a sample with surprise `s` (`KL(policy target ‖ network prior)`,
/// nats) weighs `(1 − w) + w · s / s̄`, `s̄` their mean surprise; so their total weight is their
/// count, and a full search whose target the net's prior already matched is drawn `1 − w` times
/// as often as uniformly, while a surprising one is drawn more. Cheap searches (no policy
/// target), samples of unknown surprise (imported games, relabelled samples, shards before
/// version 5) and every sample of a shard whose surprises are all 0 weigh 1. KataGo normalises per game; here it is per shard (an
/// iteration's games), which keeps each iteration's share of the window.
pub(super) fn sampling_weights(shard: &Shard, w: f64) -> Option<Vec<f64>> {
    if w <= 0.0 {
        return None;
    }
    let known = |i: usize| shard.full_search[i] != 0 && shard.policy_surprise[i] >= 0.0;
    let (mut sum, mut count) = (0.0f64, 0usize);
    for i in (0..shard.len()).filter(|&i| known(i)) {
        sum += f64::from(shard.policy_surprise[i]);
        count += 1;
    }
    if count == 0 || sum <= 0.0 || !sum.is_finite() {
        return None;
    }
    let mean = sum / count as f64;
    Some(
        (0..shard.len())
            .map(|i| {
                if known(i) {
                    (1.0 - w) + w * f64::from(shard.policy_surprise[i]) / mean
                } else {
                    1.0
                }
            })
            .collect(),
    )
}

impl ReplayWindow {
    /// Adds `shard` as the newest, its samples weighted by policy surprise with weight
    /// `surprise_weight` ([`sampling_weights`]; 0 = drawn uniformly), and drops the oldest
    /// shards while the rest hold at least `cap` samples.
    pub(super) fn push(&mut self, iteration: u64, shard: Shard, cap: usize, surprise_weight: f64) {
        self.samples += shard.len();
        let cumulative = sampling_weights(&shard, surprise_weight)
            .map(|w| {
                w.into_iter()
                    .scan(0.0, |sum, x| {
                        *sum += x;
                        Some(*sum)
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.cumulative.push_back(cumulative);
        self.shards.push_back((iteration, shard));
        while let Some((_, oldest)) = self.shards.front() {
            if self.samples - oldest.len() >= cap {
                self.samples -= oldest.len();
                self.shards.pop_front();
                self.cumulative.pop_front();
            } else {
                break;
            }
        }
    }

    /// Sample `i` of the window (`i < self.samples`).
    pub(super) fn locate(&self, mut i: usize) -> (&Shard, usize) {
        for (_, s) in &self.shards {
            if i < s.len() {
                return (s, i);
            }
            i -= s.len();
        }
        unreachable!("sample index beyond the window")
    }

    /// The sample at `u` of the window's total sampling weight (`0 ≤ u < ` that total): the
    /// shards in order, each taking its total weight (its sample count when unweighted). A `u`
    /// that rounding leaves at or past the total gives the newest sample; empty shards are
    /// passed over. The window must hold a sample.
    pub(super) fn locate_weighted(&self, mut u: f64) -> (&Shard, usize) {
        let mut newest = None;
        for ((_, s), cum) in self.shards.iter().zip(&self.cumulative) {
            if s.is_empty() {
                continue;
            }
            let total = cum.last().copied().unwrap_or(s.len() as f64);
            if u < total {
                let i = if cum.is_empty() { u as usize } else { cum.partition_point(|&c| c <= u) };
                return (s, i.min(s.len() - 1));
            }
            u -= total;
            newest = Some(s);
        }
        let s = newest.expect("a window with samples has a shard that holds some");
        (s, s.len() - 1)
    }

    /// The window's total sampling weight, or `None` when every sample weighs 1 (then samples
    /// are drawn by index, as before weighting existed, so that such runs repeat).
    pub(super) fn total_weight(&self) -> Option<f64> {
        if self.cumulative.iter().all(Vec::is_empty) {
            return None;
        }
        Some(
            self.shards
                .iter()
                .zip(&self.cumulative)
                .map(|((_, s), cum)| cum.last().copied().unwrap_or(s.len() as f64))
                .sum(),
        )
    }

    /// One sample drawn by `rng`: uniformly when `total` (the window's
    /// [`ReplayWindow::total_weight`]) is `None`, else in proportion to the samples' weights.
    /// The window must hold a sample.
    pub(super) fn draw(&self, rng: &mut ChaCha8Rng, total: Option<f64>) -> (&Shard, usize) {
        match total {
            None => self.locate(rng.random_range(0..self.samples)),
            Some(total) => self.locate_weighted(rng.random::<f64>() * total),
        }
    }

    /// Refills `batch` with its capacity of samples drawn from the window by a generator
    /// seeded with `seed` (a mini-batch of training or of pretraining), each by
    /// [`ReplayWindow::draw`].
    ///
    /// # Errors
    /// A damaged sample: the number its shard was pushed with ([`ReplayWindow::push`]) and
    /// what is wrong, with the sample's index in the shard; the number is 0 where the failure is
    /// no one shard's.
    pub(super) fn fill_batch(
        &self,
        batch: &mut TrainBatch,
        size: usize,
        seed: u64,
        targets: &Targets,
    ) -> Result<(), (u64, String)> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        batch.clear();
        let total = self.total_weight();
        let drawn: Vec<(&Shard, usize)> = (0..size).map(|_| self.draw(&mut rng, total)).collect();
        // Encoded in parallel (the planes with the rules' feature planes, the dense targets)
        // and appended in the order drawn: the batch is the one a single thread would make.
        let encoding = *batch.encoding();
        let parts: Vec<Result<TrainBatch, (&Shard, String)>> = drawn
            .par_chunks(FILL_CHUNK)
            .map(|chunk| {
                let mut part = TrainBatch::for_encoding(encoding, chunk.len());
                for &(shard, i) in chunk {
                    push_sample(&mut part, shard, i, targets).map_err(|e| (shard, e))?;
                }
                Ok(part)
            })
            .collect();
        for part in parts {
            let part = part.map_err(|(shard, reason)| (self.number_of(shard), reason))?;
            // Parts of one encoding always append; a failure would be this function's bug.
            batch.append(&part).map_err(|e| (0, e.to_string()))?;
        }
        Ok(())
    }

    /// The number `shard` (one of the window's) was pushed with; 0 for a shard not in it (never,
    /// as `fill_batch` calls it).
    fn number_of(&self, shard: &Shard) -> u64 {
        self.shards.iter().find(|(_, s)| std::ptr::eq(s, shard)).map_or(0, |(n, _)| *n)
    }
}

impl TrainingRun {
    /// Rebuilds the replay window from the shards on disk (after a resume). A shard that cannot
    /// be read (truncated, damaged) is left out of the window and named in
    /// [`TrainingRun::skipped`]; a missing shard directory is made anew (an empty window).
    pub(super) fn rebuild_window(&mut self) -> Result<(), PipelineError> {
        if !self.paths.shards.is_dir() {
            fs::create_dir_all(&self.paths.shards).map_err(|source| PipelineError::Io {
                what: "creating",
                path: self.paths.shards.clone(),
                source,
            })?;
            self.skipped.push((
                self.paths.shards.clone(),
                "missing: made anew; the replay window starts empty".into(),
            ));
        }
        let shards = list_shards(&self.paths.shards).map_err(|source| PipelineError::Io {
            what: "reading",
            path: self.paths.shards.clone(),
            source,
        })?;
        let mut numbered_shards: Vec<(u64, PathBuf)> = shards
            .into_iter()
            .filter_map(|p| numbered(&p, "shard-", ".npz").map(|n| (n, p)))
            .collect();
        // An iteration's shard name that is not a file (a directory, a dangling link) is left
        // out like an unreadable shard, and said so: `list_shards` lists files only.
        if let Ok(entries) = fs::read_dir(&self.paths.shards) {
            let mut odd: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| !p.is_file())
                .filter(|p| numbered(p, "shard-", ".npz").is_some_and(|n| n <= self.iteration))
                .collect();
            odd.sort();
            for path in odd {
                self.skipped.push((
                    path,
                    "not a file, left out of the replay window; remove it to silence this \
                     warning"
                        .into(),
                ));
            }
        }
        // Every numbered shard takes a place under `max_shards_on_disk` (see below); only the
        // run's own iterations' shards can be in the window.
        let on_disk = numbered_shards.len();
        numbered_shards.retain(|(n, _)| *n <= self.iteration);
        numbered_shards.sort();
        // Newest first until the window is full, then push oldest first.
        let mut picked = Vec::new();
        let mut total = 0usize;
        for (n, path) in numbered_shards.iter().rev() {
            if total >= self.config.run().window_samples {
                break;
            }
            match read_shard(path) {
                Ok(shard) => {
                    self.check_shard_game(path, &shard)?;
                    total += shard.len();
                    picked.push((*n, shard));
                }
                Err(e) => self.skipped.push((
                    path.clone(),
                    format!(
                        "unreadable ({}), left out of the replay window; delete it to silence \
                         this warning",
                        shard_reason(&e)
                    ),
                )),
            }
        }
        // Shards outside the window beyond `max_shards_on_disk` are deleted as soon as the
        // next iteration writes its shard. A run that kept its config never has any (pruning
        // kept it within both); a resume with a smaller window or cap does: say so first. Every
        // numbered shard counts, as in pruning (one numbered past the run's iterations too).
        let cap = self.config.run().max_shards_on_disk;
        let doomed = on_disk.saturating_sub(cap.max(picked.len()));
        if cap > 0 && doomed > 0 {
            self.pending_warnings.push(format!(
                "{doomed} of the {on_disk} shards in {} lie outside the replay window \
                 (loop.window_samples = {}) and beyond loop.max_shards_on_disk = {cap}: they are \
                 deleted, oldest first, as soon as the next iteration writes its shard (and from \
                 then on, as in every iteration, the oldest shard outside the window whenever \
                 more than {cap} are on disk); raise max_shards_on_disk (0 keeps every shard) to \
                 keep them",
                self.paths.shards.display(),
                self.config.run().window_samples,
            ));
        }
        for (n, shard) in picked.into_iter().rev() {
            self.window.push(
                n,
                shard,
                self.config.run().window_samples,
                self.config.run().policy_surprise_weight,
            );
        }
        Ok(())
    }
}
