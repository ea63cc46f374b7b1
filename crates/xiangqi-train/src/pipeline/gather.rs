//! Distributed runs: attaching the store, gathering an iteration's games from it, publishing each
//! net and tidying the store.

use super::*;

/// An iteration's games gathered from the store ([`TrainingRun::gather`]).
pub(super) struct Gathered {
    /// The merged shard (written as the iteration's shard).
    pub(super) shard: Shard,
    pub(super) report: SelfPlayReport,
    pub(super) ingest: IngestReport,
    /// The consumed-shard cursor after this iteration's shards.
    pub(super) cursor: ShardCursor,
}

impl TrainingRun {
    /// Connects the run to the store of a distributed run: claims the store (one trainer per
    /// store), and publishes the current network if the store lacks it. From then on every
    /// iteration gathers the workers' shards from the store (and plays
    /// `loop.local_selfplay_threads` games of its own, if set) and publishes each new network.
    ///
    /// # Errors
    /// [`PipelineError::Store`]: a store of another run, a new run on a store that holds nets,
    /// store errors; [`PipelineError::Config`] for settings a distributed run does not support.
    pub fn attach_store(&mut self, store: Store) -> Result<(), PipelineError> {
        if self.config.run.resign_target_false_positive > 0.0 {
            return Err(ConfigError {
                key: "loop.resign_target_false_positive",
                reason: "self-tuning resignation is not supported with a store (the workers do \
                         not report their resignation counts); set it to 0 and use a fixed \
                         selfplay.resign_threshold"
                    .into(),
            }
            .into());
        }
        let run_id = self.run_id.unwrap_or_default();
        let published = distributed::latest_generation(&store)?;
        // The owner's id decides (a run resumed before its first iteration finished has
        // published generation 0 already); a new run on a store with nets of another run is
        // refused by the id too, as that run owns the store.
        distributed::claim(&store, run_id, false)?;
        // What killed writers left (a trainer killed mid-publish, workers mid-upload).
        let (removed, failed) = distributed::clean_staging(&store);
        if !removed.is_empty() {
            let n = removed.len();
            self.pending_warnings.push(format!(
                "store '{}': removed {n} file{} that killed writers left: {}",
                store.location(),
                if n == 1 { "" } else { "s" },
                removed.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        for (path, reason) in failed {
            self.pending_warnings.push(format!(
                "store '{}': cannot remove {}, which a killed writer left: {reason}",
                store.location(),
                path.display()
            ));
        }
        self.store = Some(store);
        if published.is_none_or(|g| g < self.iteration) {
            self.publish()?;
        } else {
            self.prune_nets();
        }
        Ok(())
    }

    /// The store of a distributed run, if attached.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// Publishes the current network as generation [`TrainingRun::iteration`].
    pub(super) fn publish(&mut self) -> Result<(), PipelineError> {
        let Some(store) = &self.store else { return Ok(()) };
        distributed::publish_net(store, self.iteration, self.trainer.net())?;
        self.prune_nets();
        Ok(())
    }

    /// After the checkpoint of `iteration`: deletes the consumed shards from the store (unless
    /// `loop.store_keep_shards`). The records of the iterations' shards
    /// (`store-consumed-N.txt`) are kept.
    pub(super) fn tidy_store(&mut self, _iteration: u64) -> Result<(), PipelineError> {
        if let Some(store) = &self.store
            && !self.config.run.store_keep_shards
        {
            distributed::delete_consumed(store, &self.cursor).map_err(DistributedError::from)?;
        }
        Ok(())
    }

    /// Deletes the nets older than the newest `loop.store_keep_nets` from the store
    /// ([`distributed::prune_nets`]); a failure is a warning (the nets are only in the way).
    pub(super) fn prune_nets(&mut self) {
        let Some(store) = &self.store else { return };
        let latest = match distributed::latest_generation(store) {
            Ok(Some(g)) => g,
            Ok(None) => return,
            Err(e) => {
                self.pending_warnings.push(format!("cannot prune the store's nets: {e}"));
                return;
            }
        };
        if let Err(e) = distributed::prune_nets(store, latest, self.config.run.store_keep_nets) {
            self.pending_warnings.push(format!(
                "cannot prune the store's nets (loop.store_keep_nets = {}): {e}; tried again \
                 after the next net",
                self.config.run.store_keep_nets
            ));
        }
    }

    /// Gathers the iteration's games from the store: plays the trainer's own share first (if
    /// `loop.local_selfplay_threads` > 0) and uploads it, then reads the shards after the
    /// cursor, one of each worker in turn, until `games_per_iteration` games (or a window's
    /// worth of samples) are in hand, waiting for the workers as needed. Writes the cursor after them and then the merged
    /// shard into the run directory. `None` if interrupted.
    pub(super) fn gather(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
    ) -> Result<Option<Gathered>, PipelineError> {
        let threads = self.config.run.local_selfplay_threads;
        let mut local = None;
        if threads > 0 {
            let key = distributed::shard_key(LOCAL_SELFPLAY_WORKER, iteration);
            let store = self.store.as_ref().expect("gather runs with a store");
            // Already uploaded by this iteration's earlier attempt (a resume): not played again.
            if !store.exists(&key).map_err(DistributedError::from)? {
                match self.play_iteration_games(iteration, observer, Some(threads))? {
                    None => return Ok(None),
                    Some(PlayedGames { shard, report, pgn, .. }) => {
                        let bytes = write_shard_to(io::Cursor::new(Vec::new()), &shard)
                            .map_err(|e| PipelineError::Shard {
                                path: PathBuf::from(&key),
                                reason: shard_reason(&e),
                            })?
                            .into_inner();
                        let store = self.store.as_ref().expect("gather runs with a store");
                        store.put_new(&key, bytes).map_err(DistributedError::from)?;
                        append(&self.paths.games_pgn, &pgn)?;
                        local = Some(report);
                    }
                }
            }
        }
        let started = Instant::now();
        let store = self.store.as_ref().expect("gather runs with a store");
        let r = &self.config.run;
        let mut cursor = self.cursor.clone();
        // Workers idle for loop.store_forget_workers_after iterations whose folders are empty
        // are forgotten before the listing, so that the cursor this iteration saves (in its
        // record and checkpoint) no longer holds them ([`ShardCursor::forget_idle`]).
        if !r.store_keep_shards {
            let forgotten = cursor
                .forget_idle(iteration, r.store_forget_workers_after, |w| {
                    let (entries, unnamed) =
                        store.list_after_lossy(&distributed::worker_dir_key(w), None)?;
                    Ok::<bool, xiangqi_store::StoreError>(
                        !entries.is_empty() || !unnamed.is_empty(),
                    )
                })
                .map_err(DistributedError::from)?;
            if !forgotten.is_empty() {
                let n = forgotten.len();
                observer.warning(&format!(
                    "store '{}': forgot {n} idle worker{} (none of its shards in the last {} \
                     iterations, nothing left in its folder; loop.store_forget_workers_after): \
                     {}",
                    store.location(),
                    if n == 1 { "" } else { "s" },
                    r.store_forget_workers_after,
                    forgotten.iter().map(|w| format!("{w:016x}")).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if threads > 0 {
            // The trainer's own shards are numbered by iteration: this one is next.
            cursor.skip_to(LOCAL_SELFPLAY_WORKER, iteration);
        }
        let mut merged = Shard::empty(self.config.selfplay.game, self.rules_code()?);
        let mut ingest = IngestReport::default();
        let mut workers = std::collections::BTreeSet::new();
        // Workers with a shard that could not be read in this gather.
        let mut unreadable = std::collections::BTreeSet::new();
        let mut ages: Vec<u64> = Vec::new();
        let mut warnings = Vec::new();
        let poll = Duration::from_secs_f64(r.store_poll_seconds);
        let current = self.iteration;
        'gather: loop {
            // In rounds across the workers (`pending_shards`), so that a full window leaves
            // every worker's newer shards waiting, not all of one worker's.
            // A worker's shards come in sequence, held back behind a gap (`pending_shards`).
            let listed = pending_shards(store, &cursor).map_err(DistributedError::from)?;
            for (key, reason) in listed.skipped {
                let told = format!("store '{}': {key}: {reason}", store.location());
                if self.told_skipped.insert(told.clone()) {
                    observer.warning(&told);
                }
            }
            let pending = listed.shards;
            for (c, chunk) in pending.chunks(distributed::FETCH_CONCURRENCY).enumerate() {
                let keys: Vec<String> = chunk.iter().map(|p| p.key.clone()).collect();
                // Each key's own answer: one object that cannot be read is named and its
                // worker's shards wait (transient failures are waited out in the store).
                let fetched = store
                    .get_each(&keys, distributed::FETCH_CONCURRENCY)
                    .map_err(DistributedError::from)?;
                for (i, (p, bytes)) in chunk.iter().zip(fetched).enumerate() {
                    if merged.len() >= r.window_samples {
                        let left = &pending[c * distributed::FETCH_CONCURRENCY + i..];
                        ingest.waiting_shards = left.len() as u64;
                        ingest.waiting_workers = left
                            .iter()
                            .map(|p| p.worker)
                            .collect::<std::collections::BTreeSet<_>>()
                            .len() as u64;
                        break 'gather;
                    }
                    if unreadable.contains(&p.worker) {
                        continue;
                    }
                    let bytes = match bytes {
                        Ok(Some(bytes)) => bytes,
                        Ok(None) => continue,
                        Err(e) => {
                            // Not consumed: the cursor never passes it, and the worker's later
                            // shards wait behind it.
                            unreadable.insert(p.worker);
                            let told = format!(
                                "{e}; worker {:016x}'s shards from this one on wait (not read, \
                                 not consumed)",
                                p.worker
                            );
                            if self.told_skipped.insert(told.clone()) {
                                observer.warning(&told);
                            }
                            continue;
                        }
                    };
                    ingest.bytes += bytes.len() as u64;
                    if p.gap > 0 {
                        warnings.push(format!(
                            "{}: worker {:016x}'s {} before it never came (shards after it \
                             did); passed over",
                            p.key,
                            p.worker,
                            if p.gap == 1 {
                                format!("shard {}", p.seq - 1)
                            } else {
                                format!("shards {} to {}", p.seq - p.gap, p.seq - 1)
                            }
                        ));
                    }
                    cursor.consume(p.worker, p.seq);
                    cursor.seen_in(p.worker, iteration);
                    let bad = |ingest: &mut IngestReport| {
                        ingest.bad_shards += 1;
                        ingest.consumed.push(ConsumedShard {
                            key: p.key.clone(),
                            samples: 0,
                            games: 0,
                            fate: ShardFate::Bad,
                        });
                    };
                    let shard = match read_shard_from(io::Cursor::new(&bytes)) {
                        Ok(s) if s.game == merged.game && s.rules == merged.rules => s,
                        Ok(s) => {
                            bad(&mut ingest);
                            warnings.push(format!(
                                "{}: {} games under rule set {}, this run plays {} under rule \
                                 set {}; passed over",
                                p.key, s.game, s.rules, merged.game, merged.rules
                            ));
                            continue;
                        }
                        Err(e) => {
                            bad(&mut ingest);
                            warnings.push(format!("{}: unreadable ({e}); passed over", p.key));
                            continue;
                        }
                    };
                    if let Some(i) = shard.worker.iter().position(|&w| w != p.worker) {
                        bad(&mut ingest);
                        warnings.push(format!(
                            "{}: sample {i} was played by worker {:016x}, not by the worker \
                             whose shard this is (a copied shard?); passed over",
                            p.key, shard.worker[i]
                        ));
                        continue;
                    }
                    let generation = shard
                        .generation
                        .iter()
                        .copied()
                        .filter(|&g| g != xiangqi_search::UNKNOWN_GENERATION)
                        .min()
                        .map(u64::from);
                    let age = generation.map_or(0, |g| current.saturating_sub(g));
                    let games = shard.games();
                    let fate = if r.max_generation_lag > 0 && age > r.max_generation_lag {
                        ShardFate::Stale
                    } else {
                        ShardFate::Trained
                    };
                    ingest.consumed.push(ConsumedShard {
                        key: p.key.clone(),
                        samples: shard.len() as u64,
                        games: games.len() as u64,
                        fate,
                    });
                    if fate == ShardFate::Stale {
                        ingest.stale_shards += 1;
                        continue;
                    }
                    ages.extend(std::iter::repeat_n(age, games.len()));
                    workers.insert(p.worker);
                    ingest.shards += 1;
                    merged.append(&shard).map_err(|e| PipelineError::Shard {
                        path: PathBuf::from(&p.key),
                        reason: e.to_string(),
                    })?;
                }
            }
            if ages.len() as u64 >= r.games_per_iteration {
                break;
            }
            if !self.told_waiting {
                self.told_waiting = true;
                observer.warning(&format!(
                    "waiting for self-play workers: {} of {} games of iteration {iteration} in the \
                     store so far; start workers with `xqz selfplay --store {}` (or set \
                     loop.local_selfplay_threads to play here too)",
                    ages.len(),
                    r.games_per_iteration,
                    store.location()
                ));
            }
            let deadline = Instant::now() + poll;
            while Instant::now() < deadline {
                if observer.should_stop() {
                    self.pending_warnings.extend(warnings);
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(50).min(poll));
            }
        }
        if ingest.waiting_shards > 0 {
            let plural = |n: u64| if n == 1 { "" } else { "s" };
            let (n, w) = (ingest.waiting_shards, ingest.waiting_workers);
            warnings.push(format!(
                "the trainer is behind the workers: iteration {iteration} filled its window \
                 (loop.window_samples = {}) and left {n} shard{} of {w} worker{} waiting in the \
                 store, to be read in the next iterations, one of each worker in turn (a larger \
                 loop.window_samples or a smaller loop.train_ratio consumes faster; \
                 loop.max_generation_lag drops shards of nets too old)",
                r.window_samples,
                plural(n),
                plural(w)
            ));
        }
        self.pending_warnings.extend(warnings);
        ingest.workers = workers.len() as u64;
        ingest.age_max = ages.iter().copied().max().unwrap_or(0);
        ingest.age_mean =
            if ages.is_empty() { 0.0 } else { ages.iter().sum::<u64>() as f64 / ages.len() as f64 };
        ingest.seconds = started.elapsed().as_secs_f64();
        // The record first, then the shard: a resume that finds the shard finds its record.
        write_consumed(&self.paths, iteration, &ingest, &cursor)?;
        let path = shard_path(&self.paths, iteration);
        write_shard(&path, &merged)
            .map_err(|e| PipelineError::Shard { path: path.clone(), reason: shard_reason(&e) })?;
        // The self-play speed is the trainer's own self-play's, if it played: the workers' games
        // were played elsewhere, at a speed the trainer does not see (their time stays zero,
        // which reads as "not measured").
        let mut report = gathered_report(&merged);
        if let Some(l) = local {
            // The speed counters are the trainer's own self-play's.
            let s = &mut report.stats;
            (s.simulations, s.evaluations, s.batches, s.max_batch, s.eval_time) = (
                l.stats.simulations,
                l.stats.evaluations,
                l.stats.batches,
                l.stats.max_batch,
                l.stats.eval_time,
            );
            s.elapsed = l.stats.elapsed;
            report.elapsed = l.elapsed;
            report.resign_threshold = l.resign_threshold;
        }
        Ok(Some(Gathered { shard: merged, report, ingest, cursor }))
    }
}
