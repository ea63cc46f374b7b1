//! The one driver of searches: many [`Search`]es in lock-step, the leaves they wait on
//! evaluated in shared batches.
//!
//! Every caller that runs a search goes through [`Lockstep`]: self-play
//! ([`crate::play_games`]), the batched arena ([`crate::arena::run_match_batched`]), the search
//! as a player and the engine ([`drive_search`]), [`Search::run`], and `xqz analysis`. Each brings its own
//! *policy* as the [`Lane`]s it drives: what a lane does between batches (play the searched
//! move, record a sample, resign, start the next search, stop at a deadline) is the lane's; the
//! driver owns the rest, the same for all:
//!
//! ```text
//!   evaluate: the waiting leaves of every lane, in lane order, one batch per evaluator
//!             (each lane's leaves at a recorded offset; the request list reused)
//!   advance:  each lane's evaluations applied at its offset, then the lane moves on and
//!             gathers its next leaves within its quota (virtual_loss_batch each, at most
//!             max_batch in all, the first lane served rotating from round to round)
//! ```
//!
//! A lane whose leaves are waiting but were not in the last batch (a new game whose root was
//! gathered after the batch was formed) waits for the next one. Self-play overlaps one group's
//! evaluation with another group's tree work ([`evaluate_while_advancing`]).

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::eval::{EvalBuffer, EvalRequest, Evaluator, recycle};
use crate::game::SearchGame;
use crate::search::Search;

/// What one evaluator did: its batches and the time spent inside it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BatchCounters {
    /// Calls of [`Evaluator::evaluate`] (never with an empty batch).
    pub batches: u64,
    /// States evaluated.
    pub evaluations: u64,
    /// The largest batch.
    pub max_batch: usize,
    /// Time spent inside the evaluator.
    pub time: Duration,
}

impl BatchCounters {
    /// Mean batch size (0 before any batch).
    pub fn mean_batch(&self) -> f64 {
        if self.batches == 0 { 0.0 } else { self.evaluations as f64 / self.batches as f64 }
    }

    fn add(&mut self, size: usize, time: Duration) {
        self.batches += 1;
        self.evaluations += size as u64;
        self.max_batch = self.max_batch.max(size);
        self.time += time;
    }

    fn merge(&mut self, other: &BatchCounters) {
        self.batches += other.batches;
        self.evaluations += other.evaluations;
        self.max_batch = self.max_batch.max(other.max_batch);
        self.time += other.time;
    }
}

/// One place in a lock-step run: a game (or a single search) and what is done with it between
/// evaluation batches.
pub trait Lane<G: SearchGame> {
    /// The search now running, if any; its pending leaves go into the next batch.
    fn search(&self) -> Option<&Search<G>>;

    /// The search now running, to apply evaluations to.
    fn search_mut(&mut self) -> Option<&mut Search<G>>;

    /// Which of the run's evaluators serves this lane's leaves (`0` in a run with one).
    fn evaluator(&self) -> usize {
        0
    }

    /// How many leaves the lane would gather in a round (its search's `virtual_loss_batch`); `0`
    /// for a lane with nothing to search, which then takes no share of the batch.
    fn leaves_wanted(&self) -> usize;

    /// Moves the lane on once its evaluations (if it had leaves waiting) are applied: plays the
    /// move a finished search decided, starts the next search, and gathers at most `quota`
    /// leaves (`0`: none this round, the batch is full).
    fn advance(&mut self, quota: usize);
}

/// The leaves of one evaluator's last batch: where each lane's start, and the answers.
#[derive(Debug, Default)]
struct LeafBatch {
    buffer: EvalBuffer,
    /// `offsets[i]`: where lane `i`'s leaves start in `buffer`, `None` if it had none there.
    offsets: Vec<Option<usize>>,
    counters: BatchCounters,
}

/// The driver of a set of lanes: one evaluation batch per evaluator each round, the quotas,
/// and the counters. Its allocations (answers, request list, offsets) are reused from round
/// to round.
#[derive(Debug)]
pub struct Lockstep<G: SearchGame> {
    batches: Vec<LeafBatch>,
    spare: Vec<EvalRequest<'static, G>>,
    quotas: Vec<usize>,
    /// The lane served first in the next round when the batch cannot hold every lane's wish.
    rotation: usize,
    /// Most leaves gathered in one round, all lanes together.
    max_batch: usize,
    /// Whether the evaluator's time is measured (two clock reads a batch).
    timed: bool,
}

impl<G: SearchGame> Lockstep<G> {
    /// A driver for lanes served by `evaluators` evaluators (at least 1), gathering at most
    /// `max_batch` leaves a round in all (`usize::MAX`: each lane its own wish).
    pub fn new(evaluators: usize, max_batch: usize) -> Lockstep<G> {
        Lockstep {
            batches: (0..evaluators.max(1)).map(|_| LeafBatch::default()).collect(),
            spare: Vec::new(),
            quotas: Vec::new(),
            rotation: 0,
            max_batch,
            timed: true,
        }
    }

    /// A driver for one evaluator that writes its answers into `buffer`'s allocations (given
    /// back by [`Lockstep::into_buffer`]) and does not time it (its counters' `time` stays 0):
    /// a single search's batches are small, and two clock reads each would show.
    pub fn with_buffer(buffer: EvalBuffer, max_batch: usize) -> Lockstep<G> {
        let mut lockstep = Lockstep::new(1, max_batch);
        lockstep.batches[0].buffer = buffer;
        lockstep.timed = false;
        lockstep
    }

    /// The first evaluator's answer buffer, for reuse elsewhere.
    pub fn into_buffer(mut self) -> EvalBuffer {
        std::mem::take(&mut self.batches[0].buffer)
    }

    /// What evaluator `evaluator` has done so far.
    ///
    /// # Panics
    /// If the driver has no such evaluator.
    pub fn counters(&self, evaluator: usize) -> BatchCounters {
        self.batches[evaluator].counters
    }

    /// Evaluates the leaves every lane waits on: for each evaluator in turn, one call
    /// `evaluate(evaluator, requests, answers)` with its lanes' leaves in lane order (none for
    /// an evaluator no leaf waits on). Returns what these calls did, all evaluators together.
    ///
    /// # Errors
    /// The first error of `evaluate`; the batch is then lost (the run is expected to stop).
    ///
    /// # Panics
    /// If a lane names an evaluator the driver does not have.
    pub fn evaluate<L, F, Err>(
        &mut self,
        lanes: &[L],
        mut evaluate: F,
    ) -> Result<BatchCounters, Err>
    where
        L: Lane<G>,
        F: FnMut(usize, &[EvalRequest<'_, G>], &mut EvalBuffer) -> Result<(), Err>,
    {
        let mut done = BatchCounters::default();
        let evaluators = self.batches.len();
        let single = evaluators == 1;
        if !single {
            for lane in lanes {
                assert!(
                    lane.evaluator() < evaluators,
                    "a lane names evaluator {}",
                    lane.evaluator()
                );
            }
        }
        for (which, batch) in self.batches.iter_mut().enumerate() {
            let mut requests = recycle(std::mem::take(&mut self.spare));
            batch.offsets.clear();
            for lane in lanes {
                let offset = match lane.search() {
                    Some(s) if s.num_pending() > 0 && (single || lane.evaluator() == which) => {
                        let offset = requests.len();
                        s.requests(&mut requests);
                        Some(offset)
                    }
                    _ => None,
                };
                batch.offsets.push(offset);
            }
            let result = if requests.is_empty() {
                Ok(())
            } else {
                batch.buffer.prepare(&requests);
                let started = self.timed.then(Instant::now);
                let result = evaluate(which, &requests, &mut batch.buffer);
                let mut this = BatchCounters::default();
                this.add(requests.len(), started.map_or(Duration::ZERO, |t| t.elapsed()));
                batch.counters.merge(&this);
                done.merge(&this);
                result
            };
            self.spare = recycle(requests);
            result?;
        }
        Ok(done)
    }

    /// Applies to each lane the evaluations of the last [`Lockstep::evaluate`] and advances it
    /// within its quota, lane by lane on this thread. A lane with leaves waiting that were not
    /// evaluated is left as it is.
    pub fn advance<L: Lane<G>>(&mut self, lanes: &mut [L]) {
        self.assign_quotas(lanes);
        for (i, lane) in lanes.iter_mut().enumerate() {
            advance_lane(&self.batches, i, self.quotas[i], lane);
        }
        self.forget_offsets();
    }

    /// [`Lockstep::advance`] with the lanes spread over the current rayon pool.
    pub fn par_advance<L: Lane<G> + Send>(&mut self, lanes: &mut [L]) {
        self.assign_quotas(lanes);
        let (batches, quotas) = (&self.batches, &self.quotas);
        lanes.par_iter_mut().enumerate().for_each(|(i, lane)| {
            advance_lane(batches, i, quotas[i], lane);
        });
        self.forget_offsets();
    }

    /// Each lane's share of the round's batch: its wish, while `max_batch` lasts, the lanes
    /// served in turn from a rotating first one so that every lane is served when the batch
    /// cannot hold them all.
    fn assign_quotas<L: Lane<G>>(&mut self, lanes: &[L]) {
        let n = lanes.len();
        self.quotas.clear();
        self.quotas.resize(n, 0);
        let mut budget = self.max_batch;
        for k in 0..n {
            let i = (self.rotation + k) % n;
            let q = lanes[i].leaves_wanted().min(budget);
            self.quotas[i] = q;
            budget -= q;
        }
        self.rotation = (self.rotation + 1) % n.max(1);
    }

    fn forget_offsets(&mut self) {
        for batch in &mut self.batches {
            batch.offsets.clear();
        }
    }
}

/// Applies lane `i`'s evaluations (from whichever batch holds them) and advances it.
fn advance_lane<G: SearchGame, L: Lane<G>>(
    batches: &[LeafBatch],
    i: usize,
    quota: usize,
    lane: &mut L,
) {
    if let Some(search) = lane.search_mut() {
        if search.num_pending() > 0 {
            let found = batches
                .iter()
                .find_map(|b| b.offsets.get(i).copied().flatten().map(|offset| (b, offset)));
            match found {
                Some((batch, offset)) => {
                    search.apply(&batch.buffer, offset);
                }
                // Gathered after the batch was formed: wait for the next one.
                None => return,
            }
        }
    }
    lane.advance(quota);
}

/// Self-play's round: evaluates the leaves `eval_lanes` wait on (with `eval_driver`, one
/// evaluator) on this thread while `work_lanes` apply their last evaluations and advance on
/// `pool` (with `work_driver`). An accelerator, or an evaluator that waits, leaves the CPUs to
/// the tree work.
///
/// # Errors
/// The evaluator's error (the tree work still finishes first).
pub fn evaluate_while_advancing<G, L, E>(
    pool: &rayon::ThreadPool,
    eval_driver: &mut Lockstep<G>,
    eval_lanes: &[L],
    work_driver: &mut Lockstep<G>,
    work_lanes: &mut [L],
    evaluator: &mut E,
) -> Result<BatchCounters, E::Error>
where
    G: SearchGame,
    L: Lane<G> + Send,
    E: Evaluator<G>,
{
    let mut result = Ok(BatchCounters::default());
    pool.in_place_scope(|s| {
        s.spawn(|_| work_driver.par_advance(work_lanes));
        result =
            eval_driver.evaluate(eval_lanes, |_, requests, out| evaluator.evaluate(requests, out));
    });
    result
}

/// One search and the rule that stops it early.
struct Single<'s, G: SearchGame, S> {
    search: &'s mut Search<G>,
    batch: usize,
    stop: S,
    finished: bool,
}

impl<G: SearchGame, S: FnMut(&Search<G>) -> bool> Lane<G> for Single<'_, G, S> {
    fn search(&self) -> Option<&Search<G>> {
        Some(self.search)
    }

    fn search_mut(&mut self) -> Option<&mut Search<G>> {
        Some(self.search)
    }

    fn leaves_wanted(&self) -> usize {
        self.batch
    }

    fn advance(&mut self, quota: usize) {
        if self.search.is_done() || (self.stop)(self.search) {
            self.finished = true;
        } else {
            self.search.gather(quota);
        }
    }
}

/// Drives a started `search` with `evaluator` until it has run its simulations or `stop`
/// (asked after every evaluation batch) returns true. At least one batch is evaluated (unless
/// every simulation ends in a terminal node), so the root has priors afterwards. `batch` is the
/// number of leaves gathered per batch (at least 1); `buffer` lends its allocations.
///
/// # Errors
/// The evaluator's error.
pub fn drive_search<G: SearchGame, E: Evaluator<G>>(
    search: &mut Search<G>,
    evaluator: &mut E,
    buffer: &mut EvalBuffer,
    batch: usize,
    stop: impl FnMut(&Search<G>) -> bool,
) -> Result<(), E::Error> {
    let batch = batch.max(1);
    let mut driver = Lockstep::with_buffer(std::mem::take(buffer), batch);
    search.gather(batch);
    let mut lanes = [Single { search, batch, stop, finished: false }];
    let result = loop {
        if let Err(e) =
            driver.evaluate(&lanes, |_, requests, out| evaluator.evaluate(requests, out))
        {
            break Err(e);
        }
        driver.advance(&mut lanes);
        if lanes[0].finished {
            break Ok(());
        }
    };
    *buffer = driver.into_buffer();
    result
}
