//! Checkpoints and shards on disk: their names, the scan that tells a run's checkpoints from
//! anything else, saving, pruning, and the leftovers of a killed start.

use super::*;

/// The checkpoints `loop.keep_every_minutes` keeps: of `(number, elapsed ms)`, for every whole
/// multiple `k · period_ms` (k ≥ 1) of the run's time, the first checkpoint written at or after
/// it (the least elapsed time at or past it, then the lowest number). One checkpoint can stand
/// for several multiples when an iteration spans them. Depends only on the checkpoints on
/// disk, so a resumed run keeps the same ones.
pub(super) fn period_firsts(times: &[(u64, u64)], period_ms: u64) -> Vec<u64> {
    let period_ms = period_ms.max(1);
    let mut first: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for &(n, ms) in times {
        let period = ms / period_ms;
        if period == 0 {
            continue;
        }
        let e = first.entry(period).or_insert((ms, n));
        if (ms, n) < *e {
            *e = (ms, n);
        }
    }
    first.into_values().map(|(_, n)| n).collect()
}

pub(super) fn shard_path(paths: &RunPaths, iteration: u64) -> PathBuf {
    paths.shards.join(format!("shard-{iteration:06}.npz"))
}

pub(super) fn checkpoint_path(paths: &RunPaths, iteration: u64) -> PathBuf {
    paths.checkpoints.join(format!("ckpt-{iteration:06}"))
}

/// Parses `prefix-NNNNNN[suffix]` names.
pub(super) fn numbered(path: &Path, prefix: &str, suffix: &str) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok()
}

/// What [`scan_checkpoints`] found in a run's checkpoint directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointScan {
    /// The run's checkpoints, oldest first, as `(number in the name, dir)`.
    pub checkpoints: Vec<(u64, PathBuf)>,
    /// Everything else that is not a temporary of an interrupted write: folders and files that
    /// are not this run's checkpoints (an empty `ckpt-N`, an export, a checkpoint whose manifest
    /// is unreadable or names another iteration), with the reason. They are never read, counted
    /// or pruned.
    pub ignored: Vec<(PathBuf, String)>,
}

/// Whether the manifest of `dir`, named `ckpt-<n>`, is a training checkpoint of a run: one with
/// an optimizer state whose iteration counter is `n`, or `n − 1` with optimizer steps of
/// iteration `n` already taken (a checkpoint of an interrupted first iteration).
/// On success, the checkpoint's run id (`None` for a run of an earlier version); else why it is
/// not one of a run's checkpoints.
pub(super) fn run_checkpoint_problem(dir: &Path, n: u64) -> Result<Option<u64>, String> {
    let manifest = match checkpoint::read_manifest(dir, None) {
        Ok(m) => m,
        Err(CheckpointError::NoManifest { .. }) => {
            return Err(format!("no {}: not a checkpoint", checkpoint::MANIFEST));
        }
        Err(e) => return Err(e.to_string()),
    };
    if !manifest.has_optimizer() {
        return Err("a weights-only checkpoint or an export, not a training checkpoint".into());
    }
    let it = manifest.counters.get(COUNTER_ITERATION).copied();
    let steps = manifest.counters.get(COUNTER_STEPS_IN_ITERATION).copied().unwrap_or(0);
    // Pretraining's steps come before iteration 1 and are saved as `ckpt-000001`.
    let pretrained = manifest.pretrained.as_ref().is_some_and(|p| p.steps > 0);
    match it {
        Some(i) if i == n || (i + 1 == n && steps > 0) || (i == 0 && n == 1 && pretrained) => {
            Ok(manifest.counters.get(COUNTER_RUN_ID).copied())
        }
        Some(i) => Err(format!("its manifest records iteration {i}, not {n}")),
        None => Err("its manifest has no iteration counter".into()),
    }
}

/// The checkpoints of a run, oldest first, and the entries of the directory that are not
/// ([`CheckpointScan`]). A run's checkpoint is a directory `ckpt-NNNNNN` whose manifest is a
/// training checkpoint of iteration N; only its manifest is read (a damaged weights file is found
/// when the checkpoint is loaded). Temporaries of interrupted writes (`.ckpt-*`) are skipped.
///
/// # Errors
/// An I/O error reading the directory (a missing directory gives an empty scan).
pub fn scan_checkpoints(dir: &Path) -> io::Result<CheckpointScan> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(CheckpointScan::default()),
        Err(e) => return Err(e),
    };
    let mut scan = CheckpointScan::default();
    let mut found = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let hidden = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        let problem = match numbered(&path, "ckpt-", "") {
            Some(_) if !path.is_dir() => Some("not a directory".to_string()),
            Some(n) => match run_checkpoint_problem(&path, n) {
                Ok(run_id) => {
                    found.push((n, path, run_id));
                    continue;
                }
                Err(p) => Some(p),
            },
            None => Some("not named ckpt-NNNNNN".to_string()),
        };
        if let Some(reason) = problem {
            scan.ignored.push((path, reason));
        }
    }
    // The run's identity is its initial checkpoint's; a checkpoint with another is a copy
    // from another run.
    let initial = found.iter().find(|(n, _, _)| *n == 0).and_then(|(_, _, id)| *id);
    for (n, dir, run_id) in found {
        match initial {
            Some(ours) if run_id != Some(ours) => {
                scan.ignored.push((dir, "a checkpoint of another run (its run_id differs)".into()))
            }
            _ => scan.checkpoints.push((n, dir)),
        }
    }
    scan.checkpoints.sort();
    scan.ignored.sort();
    Ok(scan)
}

/// The checkpoints of a run, oldest first, as `(number in the name, dir)`: the checkpoints of
/// [`scan_checkpoints`], without what it ignores.
///
/// # Errors
/// An I/O error reading the directory (a missing directory gives an empty list).
pub fn list_checkpoints(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    Ok(scan_checkpoints(dir)?.checkpoints)
}

/// Removes what interrupted writes left behind: `.ckpt-*.tmp-*` and `.ckpt-*.old-*` directories
/// and `*.npz.tmp` files. None of them is ever read as valid; this only reclaims the space.
pub(super) fn remove_stale_temporaries(paths: &RunPaths) -> Result<(), PipelineError> {
    for dir in [&paths.checkpoints, &paths.shards] {
        let Ok(entries) = fs::read_dir(dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            // An overwrite interrupted between its two renames leaves `.ckpt-N.old-*` and no
            // `ckpt-N`: put the old one back rather than lose it.
            if let Some(rest) =
                name.strip_prefix('.').filter(|n| n.starts_with("ckpt-") && n.contains(".old-"))
            {
                let original = dir.join(rest.split(".old-").next().unwrap_or(rest));
                if !original.exists() {
                    fs::rename(&path, &original).map_err(|source| PipelineError::Io {
                        what: "restoring",
                        path: path.clone(),
                        source,
                    })?;
                    continue;
                }
            }
            let stale = (name.starts_with(".ckpt-")
                && (name.contains(".tmp-") || name.contains(".old-") || name.contains(".pruned-")))
                || name.ends_with(".npz.tmp");
            if !stale {
                continue;
            }
            let removed =
                if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
            removed.map_err(|source| PipelineError::Io { what: "removing", path, source })?;
        }
    }
    Ok(())
}

impl TrainingRun {
    pub(super) fn counters(&self) -> BTreeMap<String, u64> {
        let mut c = BTreeMap::new();
        c.insert(COUNTER_ITERATION.to_string(), self.iteration);
        c.insert(COUNTER_STEPS_IN_ITERATION.to_string(), self.steps_in_iteration);
        c.insert(COUNTER_SAMPLES.to_string(), self.total_samples);
        c.insert(COUNTER_ELAPSED_MS.to_string(), self.elapsed().as_millis() as u64);
        c.insert(COUNTER_LAST_ARENA.to_string(), self.last_arena_checkpoint.map_or(0, |n| n + 1));
        if let Some(id) = self.run_id {
            c.insert(COUNTER_RUN_ID.to_string(), id);
        }
        self.cursor.to_counters(&mut c);
        if self.config.run().resign_target_false_positive > 0.0 {
            let micro = ((f64::from(self.resign_threshold) + 1.0) * 1e6).round() as u64;
            c.insert(COUNTER_RESIGN_THRESHOLD.to_string(), micro);
            for (bin, lost, kept) in self.resign.counts() {
                c.insert(format!("{COUNTER_RESIGN_BIN}{bin:02}_lost"), lost);
                c.insert(format!("{COUNTER_RESIGN_BIN}{bin:02}_kept"), kept);
            }
        }
        c
    }

    /// Writes the checkpoint of the current state (`ckpt-<completed iterations>`, or
    /// `ckpt-000001` for steps of the first iteration), atomically.
    ///
    /// # Errors
    /// [`PipelineError::Checkpoint`].
    pub fn save_checkpoint(&mut self) -> Result<PathBuf, PipelineError> {
        // Steps of the first iteration go into `ckpt-000001` (marked by its counters as
        // iteration 0 plus steps): `ckpt-000000` stays the initial network.
        // Pretraining's steps too: they are taken before the first iteration.
        let number = if self.iteration == 0
            && (self.steps_in_iteration > 0
                || self.pretrained.as_ref().is_some_and(|p| p.steps > 0))
        {
            1
        } else {
            self.iteration
        };
        let dir = checkpoint_path(&self.paths, number);
        if let Some(aside) = self.move_aside_if_foreign(&dir, number)? {
            self.pending_warnings.push(format!(
                "{} stood where the run writes its checkpoint {number} and is no readable \
                 checkpoint of this run (another run's, a folder of yours, or one whose manifest \
                 is damaged): moved aside to {}, not deleted",
                dir.display(),
                aside.display()
            ));
        }
        checkpoint::save_trainer_with(
            &self.trainer,
            &dir,
            &self.counters(),
            self.pretrained.as_ref(),
            Some(self.config.search().get()),
        )?;
        Ok(dir)
    }

    /// A file or folder at the path of checkpoint `number` that is not a training checkpoint of
    /// this run (a user's folder, an export, a file) is renamed to `ckpt-NNNNNN.foreign-K`
    /// instead of being replaced: the run never deletes what it did not write. A checkpoint of
    /// the run (damaged or not) is replaced as usual.
    pub(super) fn move_aside_if_foreign(
        &self,
        dir: &Path,
        number: u64,
    ) -> Result<Option<PathBuf>, PipelineError> {
        let Ok(meta) = fs::symlink_metadata(dir) else { return Ok(None) };
        let ours = meta.is_dir()
            && checkpoint::read_manifest(dir, None).is_ok_and(|m| {
                m.has_optimizer() && m.counters.get(COUNTER_RUN_ID).copied() == self.run_id
            });
        if ours {
            return Ok(None);
        }
        let aside = (1..1000)
            .map(|k| self.paths.checkpoints.join(format!("ckpt-{number:06}.foreign-{k}")))
            .find(|p| fs::symlink_metadata(p).is_err())
            .unwrap_or_else(|| {
                self.paths
                    .checkpoints
                    .join(format!("ckpt-{number:06}.foreign-{}", std::process::id()))
            });
        fs::rename(dir, &aside).map_err(|source| PipelineError::Io {
            what: "moving aside",
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(Some(aside))
    }

    /// Removes checkpoints older than the one just written (`ckpt-<iteration>`), keeping
    /// `keep_checkpoints` in all with it, the initial network, the last arena's network and,
    /// with `keep_every_minutes`, the first checkpoint of each period ([`period_firsts`]).
    /// Newer names (left by an earlier run that this one fell back from) and entries that are
    /// not the run's checkpoints are never touched.
    pub(super) fn prune_checkpoints(&self) -> Result<(), PipelineError> {
        let all = list_checkpoints(&self.paths.checkpoints).map_err(|source| {
            PipelineError::Io { what: "reading", path: self.paths.checkpoints.clone(), source }
        })?;
        let keep_older = self.config.run().keep_checkpoints.max(1) - 1;
        let minutes = self.config.run().keep_every_minutes;
        let kept_periods = if minutes > 0.0 {
            // A checkpoint whose manifest does not read has no time: it is pruned as before.
            let times: Vec<(u64, u64)> = all
                .iter()
                .filter_map(|(n, dir)| {
                    let m = checkpoint::read_manifest(dir, None).ok()?;
                    Some((*n, *m.counters.get(COUNTER_ELAPSED_MS)?))
                })
                .collect();
            period_firsts(&times, (minutes * 60_000.0).round().max(1.0) as u64)
        } else {
            Vec::new()
        };
        let older: Vec<_> = all
            .iter()
            .filter(|(n, _)| {
                *n != 0
                    && *n < self.iteration
                    && Some(*n) != self.last_arena_checkpoint
                    && !kept_periods.contains(n)
            })
            .collect();
        for (n, dir) in older.iter().take(older.len().saturating_sub(keep_older)) {
            // Renamed first, so that a kill while deleting leaves a hidden temporary that a
            // resume removes, never a half-deleted `ckpt-N`.
            let doomed =
                self.paths.checkpoints.join(format!(".ckpt-{n:06}.pruned-{}", std::process::id()));
            fs::rename(dir, &doomed).map_err(|source| PipelineError::Io {
                what: "removing",
                path: dir.clone(),
                source,
            })?;
            fs::remove_dir_all(&doomed).map_err(|source| PipelineError::Io {
                what: "removing",
                path: doomed.clone(),
                source,
            })?;
        }
        Ok(())
    }

    pub(super) fn prune_shards(&self) -> Result<(), PipelineError> {
        let cap = self.config.run().max_shards_on_disk;
        if cap == 0 {
            return Ok(());
        }
        let mut shards: Vec<(u64, PathBuf)> = list_shards(&self.paths.shards)
            .map_err(|source| PipelineError::Io {
                what: "reading",
                path: self.paths.shards.clone(),
                source,
            })?
            .into_iter()
            .filter_map(|p| numbered(&p, "shard-", ".npz").map(|n| (n, p)))
            .collect();
        shards.sort();
        // The oldest shards outside the replay window go first, until `cap` are left; a shard
        // in the window is never deleted (an unreadable shard is in no window, so it cannot
        // take a readable one's place on disk).
        let in_window: std::collections::HashSet<u64> =
            self.window.shards.iter().map(|(n, _)| *n).collect();
        let mut excess = shards.len().saturating_sub(cap);
        for (n, path) in &shards {
            if excess == 0 {
                break;
            }
            if in_window.contains(n) {
                continue;
            }
            fs::remove_file(path).map_err(|source| PipelineError::Io {
                what: "removing",
                path: path.clone(),
                source,
            })?;
            excess -= 1;
        }
        Ok(())
    }
}
