//! Pretraining: optimizer steps on shards the run did not play (`loop.pretrain_shards`), before
//! its first self-play.
//!
//! The shards are read whole into memory; each step takes `loop.batch_size` samples drawn
//! uniformly from all of them, seeded by `(loop.seed, step)`, so that a pretraining stopped and
//! resumed takes the same steps as one never stopped. The value target is the shards' own value
//! mixed with the game result by `loop.pretrain_value_q_weight` (see [`value_target`]), with no
//! material term; the policy target is the shard's (the move played or the engine's move,
//! one-hot). The record of what was read ([`Pretraining`]) goes into every checkpoint from the
//! first on, and its fingerprint is checked when a stopped pretraining resumes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use xiangqi_nn::checkpoint::Pretraining;
use xiangqi_nn::train::{StepMetrics, TrainBatch};
use xiangqi_search::{Shard, list_shards, read_shard_from};

use super::{
    MAX_WINDOW_SAMPLES, Observer, PipelineError, ReplayWindow, StopReason, Targets, TrainingRun,
    accumulate, derive_seed, mean, shard_reason,
};

/// Salt of the pretraining mini-batches' seeds ([`derive_seed`]; self-play uses 1, training 2,
/// the arena 3, run ids 4).
const PRETRAIN_SALT: u64 = 5;

/// How often a long pretraining writes a checkpoint.
const SAVE_EVERY: Duration = Duration::from_secs(600);

/// What a finished (or stopped) pretraining did, for the observer.
#[derive(Clone, Debug, PartialEq)]
pub struct PretrainReport {
    /// What was read and how far it got.
    pub record: Pretraining,
    /// The mean of this session's steps.
    pub mean: StepMetrics,
    /// Steps taken in this session.
    pub steps: u64,
    /// Samples per second of this session's steps.
    pub samples_per_sec: f64,
    /// Whether every planned step is taken.
    pub finished: bool,
}

/// The shards of a pretraining, read.
pub(super) struct PretrainSet {
    pub(super) window: ReplayWindow,
    pub(super) record: Pretraining,
    /// The file of each shard in `window`: that of the shard pushed as `n` is `files[n - 1]`.
    pub(super) files: Vec<PathBuf>,
}

/// FNV-1a 64 over `bytes`, continuing from `h`.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Reads the pretraining shards at `source` (a directory of `*.npz` or one shard file); the
/// fingerprint hashes their names and contents.
/// Unreadable shards are passed over, each named in `warnings`; shards of another game are
/// refused; shards of the game under another rule set than `rules` (the run's shard code) are
/// kept, and `warnings` names them: their results are those the other rules gave.
///
/// # Errors
/// [`PipelineError::Pretrain`]: no such path, an unreadable directory, no readable shard, no
/// sample, more than the largest replay window's samples, a shard of another game.
pub(super) fn read_pretrain_set(
    source: &str,
    game: xiangqi_search::GameKind,
    rules: u8,
    train_ratio: f64,
    batch_size: usize,
    steps: u64,
    warnings: &mut Vec<String>,
) -> Result<PretrainSet, PipelineError> {
    let path = PathBuf::from(source);
    let fail = |reason: String| PipelineError::Pretrain { path: path.clone(), reason };
    let files: Vec<PathBuf> = if path.is_dir() {
        list_shards(&path).map_err(|e| fail(format!("cannot be read: {e}")))?
    } else if path.is_file() {
        vec![path.clone()]
    } else {
        return Err(fail("no such directory or file".into()));
    };
    if files.is_empty() {
        return Err(fail("holds no shard (*.npz); `xqz import` and `xqz label` write them".into()));
    }
    let mut window = ReplayWindow::default();
    // The shards left out, each as "PATH is unreadable (WHY)": warnings, and the error's
    // reasons when none is left in.
    let mut left_out: Vec<String> = Vec::new();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let (mut shards, mut games) = (0u64, 0u64);
    // The files of the shards in `window`, in the order pushed.
    let mut pushed: Vec<PathBuf> = Vec::new();
    // The shards of another rule set, with its code.
    let mut other_rules: Vec<(&PathBuf, u8)> = Vec::new();
    for file in &files {
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => {
                left_out.push(format!("{} cannot be read ({e})", file.display()));
                warnings
                    .push(format!("pretraining: {} and is left out", left_out[left_out.len() - 1]));
                continue;
            }
        };
        let shard: Shard = match read_shard_from(std::io::Cursor::new(&bytes)) {
            Ok(s) => s,
            Err(e) => {
                left_out.push(format!("{} is unreadable ({})", file.display(), shard_reason(&e)));
                warnings
                    .push(format!("pretraining: {} and left out", left_out[left_out.len() - 1]));
                continue;
            }
        };
        if shard.game != game {
            return Err(PipelineError::Pretrain {
                path: file.clone(),
                reason: format!("it holds {} samples; this run plays {game}", shard.game),
            });
        }
        if shard.rules != rules {
            other_rules.push((file, shard.rules));
        }
        if window.samples + shard.len() > MAX_WINDOW_SAMPLES {
            return Err(fail(format!(
                "more than {MAX_WINDOW_SAMPLES} samples (the largest replay window); pretrain on \
                 a part of them"
            )));
        }
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        h = fnv1a(h, name.as_bytes());
        h = fnv1a(h, &(bytes.len() as u64).to_le_bytes());
        h = fnv1a(h, &bytes);
        shards += 1;
        games += shard.games().len() as u64;
        window.push(shards, shard, usize::MAX, 0.0);
        pushed.push(file.clone());
    }
    if window.samples == 0 {
        return Err(fail(if shards == 0 {
            // The reasons, which the warnings would give only if the run went on.
            let more = left_out.len().saturating_sub(3);
            format!(
                "no shard could be read: {}{}",
                left_out[..left_out.len() - more].join("; "),
                if more > 0 { format!("; and {more} more") } else { String::new() }
            )
        } else {
            "the shards hold no sample".into()
        }));
    }
    if let Some(&(first, theirs)) = other_rules.first() {
        let name = |code: u8| game.rule_name(code).unwrap_or("unknown");
        let which = match (other_rules.len(), shards) {
            (1, 1) => "the one shard holds".to_string(),
            (n, all) if n as u64 == all => format!("all {all} shards hold"),
            (n, all) => format!("{n} of the {all} shards hold"),
        };
        warnings.push(format!(
            "pretraining: {which} {game} games played under the '{}' rules ({}{}), and this run \
             plays '{}': they are trained on, their results as those rules decided them",
            name(theirs),
            first.display(),
            if other_rules.len() > 1 { " and others" } else { "" },
            name(rules)
        ));
    }
    let planned_steps = if steps > 0 {
        steps
    } else {
        ((window.samples as f64 * train_ratio / batch_size as f64).round() as u64).max(1)
    };
    let record = Pretraining {
        source: source.to_string(),
        shards,
        games,
        samples: window.samples as u64,
        fingerprint: format!("{h:016x}"),
        planned_steps,
        steps: 0,
    };
    Ok(PretrainSet { window, record, files: pushed })
}

impl TrainingRun {
    /// What the run was pretrained on (or is being pretrained on), if anything.
    pub fn pretrained(&self) -> Option<&Pretraining> {
        self.pretrained.as_ref()
    }

    /// Runs the pretraining phase if the run asks for one and has not finished it: a new run
    /// (or one stopped during its pretraining) with `loop.pretrain_shards` set. `Some` when the
    /// run must stop (the observer asked, or a budget was spent; the state is checkpointed).
    /// A run past its pretraining, or past its first iteration without one, ignores the keys,
    /// saying so when they name other shards than the checkpoint records.
    ///
    /// # Errors
    /// [`PipelineError::Pretrain`] for unusable shards or shards that changed since the
    /// pretraining began; training and checkpoint errors.
    pub(super) fn pretrain(
        &mut self,
        observer: &mut dyn Observer,
    ) -> Result<Option<StopReason>, PipelineError> {
        let r = self.config.run().clone();
        let unfinished = self.pretrained.as_ref().filter(|p| p.steps < p.planned_steps);
        // A stopped pretraining goes on from its record when the config names no shards (a
        // resume with another config file).
        let source = match (&r.pretrain_shards, unfinished) {
            (s, _) if !s.is_empty() => s.clone(),
            (_, Some(p)) => p.source.clone(),
            _ => return Ok(None),
        };
        if unfinished.is_none()
            && (self.pretrained.is_some() || self.iteration > 0 || self.steps_in_iteration > 0)
        {
            let recorded = self.pretrained.as_ref().map(|p| p.source.as_str());
            if recorded != Some(source.as_str()) {
                observer.warning(&format!(
                    "the pretraining shards '{source}' (loop.pretrain_shards, --pretrain) are not \
                     used: pretraining comes before the first iteration, and this run is past it \
                     ({})",
                    match recorded {
                        Some(s) => format!("it was pretrained on '{s}'"),
                        None => "it was not pretrained".to_string(),
                    }
                ));
            }
            return Ok(None);
        }
        // Read when the run was created, or read now (a resume).
        let set = match self.pretrain_set.take() {
            Some(set) if set.record.source == source => Ok(set),
            _ => {
                let mut warnings = Vec::new();
                let set = read_pretrain_set(
                    &source,
                    self.config.selfplay().game,
                    self.rules_code()?,
                    r.train_ratio,
                    r.batch_size,
                    r.pretrain_steps,
                    &mut warnings,
                );
                for w in warnings {
                    observer.warning(&w);
                }
                set
            }
        };
        let PretrainSet { window, mut record, files } = set?;
        if let Some(before) = &self.pretrained
            && before.steps > 0
        {
            // A stopped pretraining goes on only with the shards it began with.
            if before.fingerprint != record.fingerprint || before.samples != record.samples {
                return Err(PipelineError::Pretrain {
                    path: PathBuf::from(&source),
                    reason: format!(
                        "the shards changed since this run's pretraining began ({} shards, {} \
                         samples then; {} shards, {} samples now): restore them, or start a new \
                         run",
                        before.shards, before.samples, record.shards, record.samples
                    ),
                });
            }
            // A step count given again (`--pretrain-steps`) replaces the recorded plan.
            record.planned_steps =
                if r.pretrain_steps > 0 { r.pretrain_steps } else { before.planned_steps };
            record.steps = before.steps;
        } else if let Some(before) = &self.pretrained
            && r.pretrain_steps == 0
        {
            // Recorded when the run was created, no step taken yet: its plan stands.
            record.planned_steps = before.planned_steps;
        }
        if r.max_steps > 0 && r.max_steps < record.planned_steps {
            observer.warning(&format!(
                "loop.max_steps ({}) ends the run inside its pretraining ({} steps): no \
                 self-play will follow",
                r.max_steps, record.planned_steps
            ));
        }
        observer.pretrain_started(&record);
        let (mut done, planned) = (record.steps, record.planned_steps);
        self.pretrained = Some(record.clone());
        // The shards' own values, not the material of their games' ends (see
        // `loop.pretrain_value_q_weight`); the auxiliary heads' targets as in self-play.
        let targets = Targets {
            q_weight: r.pretrain_value_q_weight as f32,
            material_weight: 0.0,
            ..Targets::of(&r, self.trainer.net().config())
        };
        let mut batch = TrainBatch::for_encoding(self.encoding(), r.batch_size);
        let started = Instant::now();
        let mut sums = StepMetrics::default();
        let mut taken = 0u64;
        let mut stop = None;
        let mut saved = Instant::now();
        while done < planned {
            // A kill loses at most ten minutes of pretraining.
            if saved.elapsed() >= SAVE_EVERY && taken > 0 {
                self.save_checkpoint()?;
                saved = Instant::now();
            }
            if observer.should_stop() {
                stop = Some(StopReason::Interrupted);
                break;
            }
            if self.budget_spent() {
                stop = Some(StopReason::Budget);
                break;
            }
            let seed = derive_seed(r.seed, PRETRAIN_SALT, done);
            window.fill_batch(&mut batch, r.batch_size, seed, &targets).map_err(
                |(n, reason)| {
                    // The damaged sample's file (the source itself where that is not known).
                    let file = n.checked_sub(1).and_then(|k| files.get(k as usize));
                    let path = file.cloned().unwrap_or_else(|| Path::new(&source).into());
                    PipelineError::Pretrain { path, reason }
                },
            )?;
            let progress = self.budget_progress();
            self.trainer.set_run_progress(progress);
            let m = self.trainer.step(&batch)?;
            observer.step(&m);
            accumulate(&mut sums, &m);
            taken += 1;
            done += 1;
            if let Some(p) = self.pretrained.as_mut() {
                p.steps = done;
            }
        }
        let secs = started.elapsed().as_secs_f64();
        if taken > 0 {
            self.save_checkpoint()?;
        }
        record.steps = done;
        observer.pretrained(&PretrainReport {
            finished: done >= planned,
            record,
            mean: mean(&sums, taken),
            steps: taken,
            samples_per_sec: if secs > 0.0 {
                (taken as usize * r.batch_size) as f64 / secs
            } else {
                0.0
            },
        });
        Ok(stop)
    }
}
