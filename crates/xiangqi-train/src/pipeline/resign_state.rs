//! Self-tuning resignation's state between a self-play phase and its checkpoint (`resign-
//! pending.txt`) and in checkpoint counters.

use super::*;

/// The resignation counts of the newest self-play phase (`shards/resign-pending.txt`): a first
/// line `iteration N`, then `bin lost kept` per non-empty bin.
pub(super) const RESIGN_PENDING: &str = "resign-pending.txt";

/// Saves the resignation counts of iteration `iteration`'s games, atomically.
pub(super) fn write_resign_pending(
    paths: &RunPaths,
    iteration: u64,
    counts: &ResignCalibration,
) -> Result<(), PipelineError> {
    let mut text = format!("iteration {iteration}\n");
    for (bin, lost, kept) in counts.counts() {
        text.push_str(&format!("{bin} {lost} {kept}\n"));
    }
    write_text_atomically(&paths.shards.join(RESIGN_PENDING), &text)
}

/// The resignation counts saved for iteration `iteration`, if the file holds that iteration's
/// (anything unreadable counts as absent: the counts of one iteration are lost, nothing else).
pub(super) fn read_resign_pending(paths: &RunPaths, iteration: u64) -> Option<ResignCalibration> {
    let text = fs::read_to_string(paths.shards.join(RESIGN_PENDING)).ok()?;
    let mut lines = text.lines();
    if lines.next()? != format!("iteration {iteration}") {
        return None;
    }
    let mut counts = ResignCalibration::new(RESIGN_CALIBRATION_CAPACITY);
    for line in lines {
        let v: Vec<u64> = line.split(' ').map(str::parse).collect::<Result<_, _>>().ok()?;
        let [bin, lost, kept] = v[..] else { return None };
        if !counts.set_counts(usize::try_from(bin).ok()?, lost, kept) {
            return None;
        }
    }
    Some(counts)
}

impl TrainingRun {
    /// Restores the self-tuning resignation's threshold and counts from checkpoint counters
    /// (a run saved without them starts with resignation off and no counts).
    pub(super) fn restore_resign_calibration(&mut self, counters: &BTreeMap<String, u64>) {
        if let Some(&micro) = counters.get(COUNTER_RESIGN_THRESHOLD) {
            let t = (micro as f64 / 1e6 - 1.0) as f32;
            let top = xiangqi_search::resign::MAX_THRESHOLD;
            self.resign_threshold = if t.is_finite() { t.clamp(-1.0, top) } else { -1.0 };
        }
        let mut bins: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
        for (key, &count) in counters {
            let Some(rest) = key.strip_prefix(COUNTER_RESIGN_BIN) else { continue };
            let (bin, lost) = match (rest.strip_suffix("_lost"), rest.strip_suffix("_kept")) {
                (Some(b), _) => (b, true),
                (_, Some(b)) => (b, false),
                _ => continue,
            };
            let Ok(bin) = bin.parse::<usize>() else { continue };
            let entry = bins.entry(bin).or_default();
            if lost {
                entry.0 = count;
            } else {
                entry.1 = count;
            }
        }
        for (bin, (lost, kept)) in bins {
            self.resign.set_counts(bin, lost, kept);
        }
    }

    /// The resignation threshold the next self-play will use.
    pub fn resign_threshold(&self) -> f32 {
        if self.config.run().resign_target_false_positive > 0.0 {
            self.resign_threshold
        } else {
            self.config.selfplay().resign_threshold
        }
    }

    /// The self-tuning resignation's counts (empty when it is off).
    pub fn resign_calibration(&self) -> &ResignCalibration {
        &self.resign
    }
}
