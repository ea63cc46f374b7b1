//! Distributed runs: attaching the store, gathering an iteration's games from it, publishing each
//! net and tidying the store.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use crate::distributed::PendingShard;

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
        self.config.check_for_store()?;
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
            && !self.config.run().store_keep_shards
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
        if let Err(e) = distributed::prune_nets(store, latest, self.config.run().store_keep_nets) {
            self.pending_warnings.push(format!(
                "cannot prune the store's nets (loop.store_keep_nets = {}): {e}; tried again \
                 after the next net",
                self.config.run().store_keep_nets
            ));
        }
    }

    /// Gathers the iteration's games from the store: plays the trainer's own share first (if
    /// `loop.local_selfplay_threads` > 0) and uploads it, then reads the shards after the
    /// cursor, one of each worker in turn, until `games_per_iteration` games (or a window's
    /// worth of samples) are in hand, waiting for the workers as needed. Writes the cursor
    /// after them and then the merged shard into the run directory. `None` if interrupted.
    ///
    /// In stages: the trainer's own share ([`TrainingRun::play_local_share`]), idle workers
    /// forgotten ([`TrainingRun::forget_idle_workers`]), rounds of reading the store
    /// ([`Intake::read_round`]) with waits for the workers between them
    /// ([`TrainingRun::wait_for_workers`]), and the record, shard and report
    /// ([`TrainingRun::finish_gather`]).
    pub(super) fn gather(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
    ) -> Result<Option<Gathered>, PipelineError> {
        let ControlFlow::Continue(local) = self.play_local_share(iteration, observer)? else {
            return Ok(None);
        };
        let started = Instant::now();
        let mut cursor = self.cursor.clone();
        self.forget_idle_workers(&mut cursor, iteration, observer)?;
        if self.config.run().local_selfplay_threads > 0 {
            // The trainer's own shards are numbered by iteration: this one is next.
            cursor.skip_to(LOCAL_SELFPLAY_WORKER, iteration);
        }
        let mut intake = Intake {
            merged: Shard::empty(self.config.selfplay().game, self.rules_code()?),
            ingest: IngestReport::default(),
            workers: BTreeSet::new(),
            unreadable: BTreeSet::new(),
            ages: Vec::new(),
            warnings: Vec::new(),
            iteration,
            current: self.iteration,
        };
        loop {
            let store = self.store.as_ref().expect("gather runs with a store");
            let full = intake.read_round(
                store,
                self.config.run(),
                &mut cursor,
                &mut self.told_skipped,
                observer,
            )?;
            if full || intake.ages.len() as u64 >= self.config.run().games_per_iteration {
                break;
            }
            if !self.wait_for_workers(&intake, observer) {
                self.pending_warnings.extend(intake.warnings);
                return Ok(None);
            }
        }
        self.finish_gather(intake, cursor, local, started).map(Some)
    }

    /// The trainer's own share of the iteration's games (`loop.local_selfplay_threads` > 0),
    /// played and uploaded unless an earlier attempt of this iteration (a resume) uploaded it:
    /// its self-play report, `None` when it played nothing now; [`ControlFlow::Break`] if
    /// interrupted.
    fn play_local_share(
        &mut self,
        iteration: u64,
        observer: &mut dyn Observer,
    ) -> Result<ControlFlow<(), Option<SelfPlayReport>>, PipelineError> {
        let threads = self.config.run().local_selfplay_threads;
        if threads == 0 {
            return Ok(ControlFlow::Continue(None));
        }
        let key = distributed::shard_key(LOCAL_SELFPLAY_WORKER, iteration);
        let store = self.store.as_ref().expect("gather runs with a store");
        // Already uploaded by this iteration's earlier attempt (a resume): not played again.
        if store.exists(&key).map_err(DistributedError::from)? {
            return Ok(ControlFlow::Continue(None));
        }
        let Some(PlayedGames { shard, report, pgn, .. }) =
            self.play_iteration_games(iteration, observer, Some(threads))?
        else {
            return Ok(ControlFlow::Break(()));
        };
        let bytes = write_shard_to(io::Cursor::new(Vec::new()), &shard)
            .map_err(|e| PipelineError::Shard {
                path: PathBuf::from(&key),
                reason: shard_reason(&e),
            })?
            .into_inner();
        let store = self.store.as_ref().expect("gather runs with a store");
        store.put_new(&key, bytes).map_err(DistributedError::from)?;
        append(&self.paths.games_pgn, &pgn)?;
        Ok(ControlFlow::Continue(Some(report)))
    }

    /// Forgets the workers idle for `loop.store_forget_workers_after` iterations whose folders
    /// are empty, before the listing, so that the cursor this iteration saves (in its record and
    /// checkpoint) no longer holds them ([`ShardCursor::forget_idle`]); names them in a
    /// warning. Nothing is forgotten while `loop.store_keep_shards` keeps every shard.
    fn forget_idle_workers(
        &self,
        cursor: &mut ShardCursor,
        iteration: u64,
        observer: &mut dyn Observer,
    ) -> Result<(), PipelineError> {
        let r = self.config.run();
        if r.store_keep_shards {
            return Ok(());
        }
        let store = self.store.as_ref().expect("gather runs with a store");
        let forgotten = cursor
            .forget_idle(iteration, r.store_forget_workers_after, |w| {
                let (entries, unnamed) =
                    store.list_after_lossy(&distributed::worker_dir_key(w), None)?;
                Ok::<bool, xiangqi_store::StoreError>(!entries.is_empty() || !unnamed.is_empty())
            })
            .map_err(DistributedError::from)?;
        if !forgotten.is_empty() {
            let n = forgotten.len();
            observer.warning(&format!(
                "store '{}': forgot {n} idle worker{} (none of its shards in the last {} \
                 iterations, nothing left in its folder; loop.store_forget_workers_after): {}",
                store.location(),
                if n == 1 { "" } else { "s" },
                r.store_forget_workers_after,
                forgotten.iter().map(|w| format!("{w:016x}")).collect::<Vec<_>>().join(", ")
            ));
        }
        Ok(())
    }

    /// Says once a run that the trainer waits for the workers, then waits
    /// `loop.store_poll_seconds`; `false` if the observer asked to stop meanwhile.
    fn wait_for_workers(&mut self, intake: &Intake, observer: &mut dyn Observer) -> bool {
        let r = self.config.run();
        if !self.told_waiting {
            self.told_waiting = true;
            let store = self.store.as_ref().expect("gather runs with a store");
            observer.warning(&format!(
                "waiting for self-play workers: {} of {} games of iteration {} in the store so \
                 far; start workers with `xqz selfplay --store {}` (or set \
                 loop.local_selfplay_threads to play here too)",
                intake.ages.len(),
                r.games_per_iteration,
                intake.iteration,
                store.location()
            ));
        }
        let poll = Duration::from_secs_f64(r.store_poll_seconds);
        let deadline = Instant::now() + poll;
        while Instant::now() < deadline {
            if observer.should_stop() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50).min(poll));
        }
        true
    }

    /// The end of a gather: the warnings kept for the iteration's report, the ingest figures,
    /// the iteration's record and then its shard written (a resume that finds the shard finds
    /// its record), and the self-play report (the speed counters the trainer's own share's, if
    /// it played).
    fn finish_gather(
        &mut self,
        intake: Intake,
        cursor: ShardCursor,
        local: Option<SelfPlayReport>,
        started: Instant,
    ) -> Result<Gathered, PipelineError> {
        let Intake { merged, mut ingest, workers, ages, mut warnings, iteration, .. } = intake;
        if ingest.waiting_shards > 0 {
            let plural = |n: u64| if n == 1 { "" } else { "s" };
            let (n, w) = (ingest.waiting_shards, ingest.waiting_workers);
            warnings.push(format!(
                "the trainer is behind the workers: iteration {iteration} filled its window \
                 (loop.window_samples = {}) and left {n} shard{} of {w} worker{} waiting in the \
                 store, to be read in the next iterations, one of each worker in turn (a larger \
                 loop.window_samples or a smaller loop.train_ratio consumes faster; \
                 loop.max_generation_lag drops shards of nets too old)",
                self.config.run().window_samples,
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
        Ok(Gathered { shard: merged, report, ingest, cursor })
    }
}

/// What one gather has taken from the store so far ([`TrainingRun::gather`]).
struct Intake {
    /// The shards taken, merged (the iteration's shard).
    merged: Shard,
    ingest: IngestReport,
    /// The workers whose shards were trained on.
    workers: BTreeSet<u64>,
    /// Workers with a shard that could not be read in this gather: their later shards wait.
    unreadable: BTreeSet<u64>,
    /// The age in nets of every game taken (one entry a game).
    ages: Vec<u64>,
    /// Warnings for the iteration's report.
    warnings: Vec<String>,
    /// The iteration gathered for.
    iteration: u64,
    /// The current net's generation (ages are counted from it).
    current: u64,
}

impl Intake {
    /// One round of reading: the shards after the cursor (in rounds across the workers, so
    /// that a full window leaves every worker's newer shards waiting, not all of one
    /// worker's; a worker's shards in sequence, held back behind a gap: `pending_shards`),
    /// fetched `FETCH_CONCURRENCY` at a time and taken in order. `true` once the window is
    /// full (the shards left are counted as waiting).
    fn read_round(
        &mut self,
        store: &Store,
        r: &LoopConfig,
        cursor: &mut ShardCursor,
        told_skipped: &mut BTreeSet<String>,
        observer: &mut dyn Observer,
    ) -> Result<bool, PipelineError> {
        let listed = pending_shards(store, cursor).map_err(DistributedError::from)?;
        for (key, reason) in listed.skipped {
            let told = format!("store '{}': {key}: {reason}", store.location());
            if told_skipped.insert(told.clone()) {
                observer.warning(&told);
            }
        }
        let pending = listed.shards;
        for (c, chunk) in pending.chunks(distributed::FETCH_CONCURRENCY).enumerate() {
            let keys: Vec<String> = chunk.iter().map(|p| p.key.clone()).collect();
            // Each key's own answer: one object that cannot be read is named and its worker's
            // shards wait (transient failures are waited out in the store).
            let fetched = store
                .get_each(&keys, distributed::FETCH_CONCURRENCY)
                .map_err(DistributedError::from)?;
            for (i, (p, bytes)) in chunk.iter().zip(fetched).enumerate() {
                if self.merged.len() >= r.window_samples {
                    let left = &pending[c * distributed::FETCH_CONCURRENCY + i..];
                    self.ingest.waiting_shards = left.len() as u64;
                    self.ingest.waiting_workers =
                        left.iter().map(|p| p.worker).collect::<BTreeSet<_>>().len() as u64;
                    return Ok(true);
                }
                if self.unreadable.contains(&p.worker) {
                    continue;
                }
                match bytes {
                    Ok(Some(bytes)) => self.take(p, &bytes, r, cursor)?,
                    Ok(None) => {}
                    Err(e) => {
                        // Not consumed: the cursor never passes it, and the worker's later
                        // shards wait behind it.
                        self.unreadable.insert(p.worker);
                        let told = format!(
                            "{e}; worker {:016x}'s shards from this one on wait (not read, not \
                             consumed)",
                            p.worker
                        );
                        if told_skipped.insert(told.clone()) {
                            observer.warning(&told);
                        }
                    }
                }
            }
        }
        Ok(false)
    }

    /// Takes one fetched shard: consumes it (passing any gap before it, named), then checks it
    /// (this run's game and rule set, every sample its worker's) and merges it unless it is bad
    /// or stale (`loop.max_generation_lag`), recording its fate either way.
    fn take(
        &mut self,
        p: &PendingShard,
        bytes: &[u8],
        r: &LoopConfig,
        cursor: &mut ShardCursor,
    ) -> Result<(), PipelineError> {
        self.ingest.bytes += bytes.len() as u64;
        if p.gap > 0 {
            self.warnings.push(format!(
                "{}: worker {:016x}'s {} before it never came (shards after it did); passed over",
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
        cursor.seen_in(p.worker, self.iteration);
        let Some(shard) = self.checked(p, bytes) else {
            self.ingest.bad_shards += 1;
            self.ingest.consumed.push(ConsumedShard {
                key: p.key.clone(),
                samples: 0,
                games: 0,
                fate: ShardFate::Bad,
            });
            return Ok(());
        };
        let generation = shard
            .generation
            .iter()
            .copied()
            .filter(|&g| g != xiangqi_search::UNKNOWN_GENERATION)
            .min()
            .map(u64::from);
        let age = generation.map_or(0, |g| self.current.saturating_sub(g));
        let games = shard.games();
        let fate = if r.max_generation_lag > 0 && age > r.max_generation_lag {
            ShardFate::Stale
        } else {
            ShardFate::Trained
        };
        self.ingest.consumed.push(ConsumedShard {
            key: p.key.clone(),
            samples: shard.len() as u64,
            games: games.len() as u64,
            fate,
        });
        if fate == ShardFate::Stale {
            self.ingest.stale_shards += 1;
            return Ok(());
        }
        self.ages.extend(std::iter::repeat_n(age, games.len()));
        self.workers.insert(p.worker);
        self.ingest.shards += 1;
        self.merged.append(&shard).map_err(|e| PipelineError::Shard {
            path: PathBuf::from(&p.key),
            reason: e.to_string(),
        })
    }

    /// The shard in `bytes` if it is readable, of this run's game and rule set, and every
    /// sample its worker's; otherwise `None`, with the reason among the warnings.
    fn checked(&mut self, p: &PendingShard, bytes: &[u8]) -> Option<Shard> {
        let shard = match read_shard_from(io::Cursor::new(bytes)) {
            Ok(s) if s.game == self.merged.game && s.rules == self.merged.rules => s,
            Ok(s) => {
                let name = |game: xiangqi_search::GameKind, code: u8| {
                    game.rule_name(code).map_or(format!("code {code}"), str::to_string)
                };
                self.warnings.push(format!(
                    "{}: {} games under rule set '{}', this run plays {} under rule set '{}'; \
                     passed over",
                    p.key,
                    s.game,
                    name(s.game, s.rules),
                    self.merged.game,
                    name(self.merged.game, self.merged.rules)
                ));
                return None;
            }
            Err(e) => {
                self.warnings.push(format!("{}: unreadable ({e}); passed over", p.key));
                return None;
            }
        };
        if let Some(i) = shard.worker.iter().position(|&w| w != p.worker) {
            self.warnings.push(format!(
                "{}: sample {i} was played by worker {:016x}, not by the worker whose shard \
                 this is (a copied shard?); passed over",
                p.key, shard.worker[i]
            ));
            return None;
        }
        Some(shard)
    }
}
