//! The replay window: the newest shards' samples, whole shards, and its rebuilding from the shards
//! on disk on resume.

use super::*;

/// The samples of the replay window: whole shards, newest last.
#[derive(Debug, Default)]
pub(super) struct ReplayWindow {
    pub(super) shards: VecDeque<(u64, Shard)>,
    pub(super) samples: usize,
}

impl ReplayWindow {
    pub(super) fn push(&mut self, iteration: u64, shard: Shard, cap: usize) {
        self.samples += shard.len();
        self.shards.push_back((iteration, shard));
        while let Some((_, oldest)) = self.shards.front() {
            if self.samples - oldest.len() >= cap {
                self.samples -= oldest.len();
                self.shards.pop_front();
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

    /// Refills `batch` with its capacity of samples drawn uniformly from the window by a
    /// generator seeded with `seed` (a mini-batch of training or of pretraining).
    ///
    /// # Errors
    /// A damaged sample, with its index.
    pub(super) fn fill_batch(
        &self,
        batch: &mut TrainBatch,
        size: usize,
        seed: u64,
        targets: &Targets,
    ) -> Result<(), String> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        batch.clear();
        for _ in 0..size {
            let (shard, i) = self.locate(rng.random_range(0..self.samples));
            push_sample(batch, shard, i, targets)?;
        }
        Ok(())
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
            .filter(|(n, _)| *n <= self.iteration)
            .collect();
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
        for (n, shard) in picked.into_iter().rev() {
            self.window.push(n, shard, self.config.run().window_samples);
        }
        Ok(())
    }
}
