//! The batched [`Evaluator`] interface, its output buffer [`EvalBuffer`], and two evaluators
//! for tests and benches: [`UniformEvaluator`] and [`ScriptedEvaluator`].
//!
//! An evaluator receives a batch of [`EvalRequest`]s, each a borrowed game state and its legal
//! moves as the search stored them (no copies), and writes for each request
//!
//! * a **prior** over the request's legal moves, in the order of [`EvalRequest::moves`]:
//!   non-negative, summing to 1 (the search renormalises defensively and falls back to uniform
//!   if the priors are not finite or sum to zero);
//! * a **value** in `[-1, 1]` from the point of view of the side to move in the request's state
//!   (`+1`: the side to move wins). A network with a win/draw/loss head reports
//!   `value = P(win) − P(loss)` ([`EvalBuffer::set_wdl`]).
//!
//! Output goes into a caller-provided [`EvalBuffer`] whose allocations are reused from batch to
//! batch. Terminal states are never sent to an evaluator: the rules value them.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use crate::game::SearchGame;

/// One state to evaluate: borrowed from the search tree, never copied.
#[derive(Debug)]
pub struct EvalRequest<'a, G: SearchGame> {
    /// The game state (position and history: a [`xiangqi::Game`] or [`xiangqi::janggi::Game`],
    /// from which a network reads its input planes).
    pub game: &'a G,
    /// The legal moves of the side to move; the prior is written in this order. Never empty.
    pub moves: &'a [G::Move],
}

impl<G: SearchGame> Clone for EvalRequest<'_, G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G: SearchGame> Copy for EvalRequest<'_, G> {}

/// Empties a request list and hands its allocation back with a new lifetime, so one list can be
/// reused across batches whose borrows do not overlap.
pub fn recycle<'b, G: SearchGame>(mut v: Vec<EvalRequest<'_, G>>) -> Vec<EvalRequest<'b, G>> {
    v.clear();
    // In-place collection: same layout, so the allocation is kept.
    v.into_iter().map(|_| unreachable!("the list is empty")).collect()
}

/// Where an evaluator writes its answers: for request `i`, a prior slice as long as its move
/// list and a value. Reused across batches, so steady-state evaluation does not allocate.
#[derive(Clone, Debug, Default)]
pub struct EvalBuffer {
    priors: Vec<f32>,
    /// `offsets[i]..offsets[i + 1]` is request `i`'s range in `priors`.
    offsets: Vec<usize>,
    values: Vec<f32>,
    /// Draw probabilities, one per request (0 unless the evaluator gives them).
    draws: Vec<f32>,
}

impl EvalBuffer {
    /// An empty buffer.
    pub fn new() -> EvalBuffer {
        EvalBuffer::default()
    }

    /// Sizes the buffer for `batch` (one prior slot per legal move, one value per request), all
    /// zero. Keeps the allocations.
    pub fn prepare<G: SearchGame>(&mut self, batch: &[EvalRequest<'_, G>]) {
        self.offsets.clear();
        self.offsets.push(0);
        let mut total = 0;
        for r in batch {
            total += r.moves.len();
            self.offsets.push(total);
        }
        self.priors.clear();
        self.priors.resize(total, 0.0);
        self.values.clear();
        self.values.resize(batch.len(), 0.0);
        self.draws.clear();
        self.draws.resize(batch.len(), 0.0);
    }

    /// Number of requests the buffer is sized for.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the buffer holds no request.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The prior of request `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn priors(&self, i: usize) -> &[f32] {
        &self.priors[self.offsets[i]..self.offsets[i + 1]]
    }

    /// The prior of request `i`, to write.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn priors_mut(&mut self, i: usize) -> &mut [f32] {
        &mut self.priors[self.offsets[i]..self.offsets[i + 1]]
    }

    /// The value of request `i`, in `[-1, 1]` for its side to move.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn value(&self, i: usize) -> f32 {
        self.values[i]
    }

    /// Sets the value of request `i` (clamped to `[-1, 1]`; NaN becomes 0).
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn set_value(&mut self, i: usize, value: f32) {
        self.values[i] = if value.is_nan() { 0.0 } else { value.clamp(-1.0, 1.0) };
    }

    /// Sets the value of request `i` from win/draw/loss probabilities for its side to move:
    /// `value = win − loss`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn set_wdl(&mut self, i: usize, win: f32, draw: f32, loss: f32) {
        self.set_value(i, win - loss);
        self.set_draw(i, draw);
    }

    /// The draw probability of request `i`, in `[0, 1]` (0 from an evaluator that gives none).
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn draw(&self, i: usize) -> f32 {
        self.draws[i]
    }

    /// Sets the draw probability of request `i` (clamped to `[0, 1]`; NaN becomes 0). The search
    /// backs it up beside the value, for the engine's win/draw/loss report.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn set_draw(&mut self, i: usize, draw: f32) {
        self.draws[i] = if draw.is_nan() { 0.0 } else { draw.clamp(0.0, 1.0) };
    }

    /// Every request's prior slice, value and draw probability at once, to fill in parallel or
    /// in one pass (written as they are: the caller keeps the value in `[-1, 1]` and the draw
    /// probability in `[0, 1]`).
    pub fn entries_mut(&mut self) -> impl Iterator<Item = (&mut [f32], &mut f32, &mut f32)> + '_ {
        let mut rest: &mut [f32] = &mut self.priors;
        let mut consumed = 0;
        self.offsets.windows(2).zip(self.values.iter_mut().zip(self.draws.iter_mut())).map(
            move |(w, (v, d))| {
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - consumed);
                consumed = w[1];
                rest = tail;
                debug_assert_eq!(head.len(), w[1] - w[0]);
                (head, v, d)
            },
        )
    }
}

/// Evaluates batches of game states: a prior over each state's legal moves and a value for its
/// side to move (see the [module documentation](self) for ranges and perspective).
///
/// The search calls [`Evaluator::evaluate`] with every leaf that is waiting, from one tree or
/// from many games at once; a neural evaluator encodes `batch[i].game` (for xiangqi the position
/// and its repetition count) and maps `batch[i].moves` to policy indices.
pub trait Evaluator<G: SearchGame> {
    /// Why an evaluation failed (a device error, say). [`Infallible`] for pure evaluators.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Evaluates `batch`. `out` has been [`EvalBuffer::prepare`]d for `batch` (all zeros);
    /// write the prior of request `i` into `out.priors_mut(i)` in the order of
    /// `batch[i].moves`, and its value with [`EvalBuffer::set_value`].
    ///
    /// # Errors
    /// [`Evaluator::Error`] when the batch could not be evaluated; the search stops.
    fn evaluate(
        &mut self,
        batch: &[EvalRequest<'_, G>],
        out: &mut EvalBuffer,
    ) -> Result<(), Self::Error>;
}

impl<G: SearchGame, E: Evaluator<G> + ?Sized> Evaluator<G> for &mut E {
    type Error = E::Error;
    fn evaluate(
        &mut self,
        batch: &[EvalRequest<'_, G>],
        out: &mut EvalBuffer,
    ) -> Result<(), Self::Error> {
        (**self).evaluate(batch, out)
    }
}

/// Uniform priors and value 0 everywhere: search guided only by the rules' terminal values.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformEvaluator;

impl<G: SearchGame> Evaluator<G> for UniformEvaluator {
    type Error = Infallible;
    fn evaluate(
        &mut self,
        _batch: &[EvalRequest<'_, G>],
        out: &mut EvalBuffer,
    ) -> Result<(), Infallible> {
        for (priors, value, _) in out.entries_mut() {
            let p = 1.0 / priors.len() as f32;
            priors.fill(p);
            *value = 0.0;
        }
        Ok(())
    }
}

/// What a [`ScriptedEvaluator`] has seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvalLog {
    /// The size of every batch, in call order.
    pub batch_sizes: Vec<usize>,
    /// Time spent inside [`Evaluator::evaluate`], the delay included.
    pub busy: Duration,
}

/// An evaluator for tests and benches: a function decides each state's prior and value; every
/// batch size is recorded; an optional fixed delay per batch stands in for an accelerator that
/// keeps the CPU free while it works.
///
/// The function gets the state, its legal moves and the prior slice to fill (pre-filled with the
/// uniform prior) and returns the value for the side to move.
pub struct ScriptedEvaluator<G: SearchGame, F>
where
    F: FnMut(&G, &[G::Move], &mut [f32]) -> f32,
{
    script: F,
    delay: Duration,
    log: EvalLog,
    _game: std::marker::PhantomData<fn(&G)>,
}

impl<G: SearchGame> ScriptedEvaluator<G, fn(&G, &[G::Move], &mut [f32]) -> f32> {
    /// Uniform priors and value 0, with batch logging.
    pub fn uniform() -> Self {
        fn uniform<G: SearchGame>(_: &G, _: &[G::Move], _: &mut [f32]) -> f32 {
            0.0
        }
        ScriptedEvaluator::new(uniform::<G>)
    }
}

impl<G: SearchGame, F> ScriptedEvaluator<G, F>
where
    F: FnMut(&G, &[G::Move], &mut [f32]) -> f32,
{
    /// An evaluator that calls `script` for every state.
    pub fn new(script: F) -> Self {
        ScriptedEvaluator {
            script,
            delay: Duration::ZERO,
            log: EvalLog::default(),
            _game: std::marker::PhantomData,
        }
    }

    /// Sleeps `delay` once per batch (a stand-in for accelerator latency).
    #[must_use]
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// What the evaluator has seen so far.
    pub fn log(&self) -> &EvalLog {
        &self.log
    }
}

impl<G: SearchGame, F> Evaluator<G> for ScriptedEvaluator<G, F>
where
    F: FnMut(&G, &[G::Move], &mut [f32]) -> f32,
{
    type Error = Infallible;
    fn evaluate(
        &mut self,
        batch: &[EvalRequest<'_, G>],
        out: &mut EvalBuffer,
    ) -> Result<(), Infallible> {
        let start = Instant::now();
        self.log.batch_sizes.push(batch.len());
        for (i, r) in batch.iter().enumerate() {
            let priors = out.priors_mut(i);
            priors.fill(1.0 / priors.len() as f32);
            let v = (self.script)(r.game, r.moves, priors);
            out.set_value(i, v);
        }
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        self.log.busy += start.elapsed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xiangqi::{Game, Position, RuleSet};

    #[test]
    fn buffer_slices_follow_the_move_lists() {
        let a = Game::new(Position::start(), RuleSet::Asian);
        let mut ma = Vec::new();
        a.legal_moves_into(&mut ma);
        let mb = &ma[..3];
        let batch = [EvalRequest { game: &a, moves: &ma }, EvalRequest { game: &a, moves: mb }];
        let mut out = EvalBuffer::new();
        out.prepare(&batch);
        UniformEvaluator.evaluate(&batch, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out.priors(0).len(), 44);
        assert_eq!(out.priors(1), &[1.0 / 3.0; 3]);
        let sum: f32 = out.priors(0).iter().sum();
        assert!((sum - 1.0).abs() < 1e-5);
        out.set_wdl(1, 0.7, 0.1, 0.2);
        assert!((out.value(1) - 0.5).abs() < 1e-6);
    }
}
