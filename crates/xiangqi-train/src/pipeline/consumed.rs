//! The record of which store shards an iteration consumed (`shards/store-consumed-N.txt`), written
//! before the merged shard, read back on resume.

use super::*;

/// The record of iteration `iteration`'s store shards: the shards it consumed, its ingest
/// counts and the cursor after it ([`write_consumed`]). Kept for the whole run (a line per
/// shard), so that every iteration's shards can be counted.
pub(super) fn consumed_path(paths: &RunPaths, iteration: u64) -> PathBuf {
    paths.shards.join(format!("store-consumed-{iteration:06}.txt"))
}

/// Saves the record of iteration `iteration`'s store shards, atomically, before its merged
/// shard: a line `shard ITERATION KEY SAMPLES GAMES FATE` for each shard consumed, a line
/// `ingest NAME=VALUE ...` of the counts `metrics.csv` shows, then the cursor after them
/// ([`ShardCursor::to_text`]). A resumed iteration that finds its shard reads them back, so
/// that its `metrics.csv` row is as complete as the first attempt's would have been.
pub(super) fn write_consumed(
    paths: &RunPaths,
    iteration: u64,
    ingest: &IngestReport,
    cursor: &ShardCursor,
) -> Result<(), PipelineError> {
    let mut text = format!(
        "# xqz: the store's shards consumed by iteration {iteration}, one line each (shard, \
         iteration, key, samples, games, what became of it: trained, stale or bad); the \
         iteration's ingest counts; the cursor after it (worker, next shard, last iteration \
         that read one)\n"
    );
    for c in &ingest.consumed {
        text.push_str(&format!(
            "shard {iteration} {} {} {} {}\n",
            c.key,
            c.samples,
            c.games,
            c.fate.name()
        ));
    }
    let g = ingest;
    text.push_str(&format!(
        "ingest shards={} workers={} bytes={} stale={} bad={} age_mean={} age_max={} \
         seconds={} waiting_shards={} waiting_workers={}\n",
        g.shards,
        g.workers,
        g.bytes,
        g.stale_shards,
        g.bad_shards,
        g.age_mean,
        g.age_max,
        g.seconds,
        g.waiting_shards,
        g.waiting_workers
    ));
    text.push_str(&cursor.to_text());
    write_text_atomically(&consumed_path(paths, iteration), &text)
}

/// Parses a record ([`write_consumed`]); the ingest counts are `None` in a record of an
/// earlier version (the cursor alone). `None` if anything is malformed.
pub(super) fn parse_consumed(text: &str) -> Option<(ShardCursor, Option<IngestReport>)> {
    let mut cursor_text = String::new();
    let mut ingest: Option<IngestReport> = None;
    let mut consumed = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        match fields.next() {
            None => {}
            Some(f) if f.starts_with('#') => {}
            Some("shard") => {
                let f: Vec<&str> = fields.collect();
                let [_, key, samples, games, fate] = f[..] else { return None };
                consumed.push(ConsumedShard {
                    key: key.to_string(),
                    samples: samples.parse().ok()?,
                    games: games.parse().ok()?,
                    fate: ShardFate::parse(fate)?,
                });
            }
            Some("ingest") => {
                let mut g = IngestReport::default();
                for field in fields {
                    let (name, value) = field.split_once('=')?;
                    let int = || value.parse::<u64>().ok();
                    match name {
                        "shards" => g.shards = int()?,
                        "workers" => g.workers = int()?,
                        "bytes" => g.bytes = int()?,
                        "stale" => g.stale_shards = int()?,
                        "bad" => g.bad_shards = int()?,
                        "age_mean" => g.age_mean = value.parse().ok()?,
                        "age_max" => g.age_max = int()?,
                        "seconds" => g.seconds = value.parse().ok()?,
                        "waiting_shards" => g.waiting_shards = int()?,
                        "waiting_workers" => g.waiting_workers = int()?,
                        _ => {}
                    }
                }
                ingest = Some(g);
            }
            Some(_) => {
                cursor_text.push_str(line);
                cursor_text.push('\n');
            }
        }
    }
    let cursor = ShardCursor::from_text(&cursor_text)?;
    if let Some(g) = &mut ingest {
        g.consumed = consumed;
    }
    Some((cursor, ingest))
}

/// The record saved beside iteration `iteration`'s shard, if it was gathered from a store:
/// the cursor after it and, unless an earlier version wrote it, the iteration's ingest.
///
/// # Errors
/// A record that cannot be read or parsed: the shards it stands for cannot be told apart
/// from unconsumed ones, so the run stops instead of training on them twice.
#[allow(clippy::type_complexity)]
pub(super) fn read_consumed(
    paths: &RunPaths,
    iteration: u64,
) -> Result<Option<(ShardCursor, Option<IngestReport>)>, PipelineError> {
    let path = consumed_path(paths, iteration);
    match fs::read_to_string(&path) {
        Ok(text) => parse_consumed(&text).map(Some).ok_or_else(|| PipelineError::Shard {
            path: path.clone(),
            reason: "the record of the store's shards in this iteration's shard is damaged; \
                     delete it and the iteration's shard to gather them again"
                .into(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PipelineError::Io { what: "reading", path, source }),
    }
}

/// The self-play report of games gathered from a store, counted from their samples.
pub(super) fn gathered_report(shard: &Shard) -> SelfPlayReport {
    let mut stats = SelfPlayStats::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut plies = 0u64;
    for i in 0..shard.len() {
        if !seen.insert((shard.worker[i], shard.game_id[i])) {
            continue;
        }
        stats.games_finished += 1;
        plies += u64::from(shard.game_plies[i]);
        if let Some(reason) = OutcomeReason::ALL.get(usize::from(shard.ending[i])) {
            stats.reasons[reason.index()] += 1;
        }
        // The result for Red from the result for the side to move.
        let red = if shard.turn[i] == 0 { shard.result[i] } else { -shard.result[i] };
        let k = match red {
            1 => 0,
            0 => 1,
            _ => 2,
        };
        stats.results[k] += 1;
    }
    stats.games_started = stats.games_finished;
    stats.moves = plies;
    stats.full_searches = shard.full_search.iter().map(|&f| u64::from(f)).sum();
    SelfPlayReport {
        games: stats.games_finished,
        samples: shard.len(),
        plies,
        stats,
        elapsed: Duration::ZERO,
        resign_threshold: None,
    }
}
