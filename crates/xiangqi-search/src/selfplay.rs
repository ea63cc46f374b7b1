//! The self-play actor pool: many games at once on a rayon pool, every waiting leaf of every
//! game in one evaluation batch.
//!
//! ```text
//!   games_in_flight slots, split in two groups A and B
//!
//!   main thread:   evaluate(A) ───────────┐ evaluate(B) ───────────┐ evaluate(A) ...
//!   rayon pool:    apply(B) + select(B) ──┘ apply(A) + select(A) ──┘ apply(B) + select(B) ...
//! ```
//!
//! While the evaluator works on one group's batch (on the calling thread: an accelerator, or a
//! sleeping stand-in, leaves the CPUs free), the pool applies the other group's evaluations,
//! plays the moves whose searches are done and selects that group's next leaves. Each group's
//! leaves (at most `virtual_loss_batch` per game, at most `max_batch` in all) form one batch.
//!
//! # Per game
//! * Opening: `opening_random_plies` uniformly random plies, neither searched nor recorded.
//!   Or, with probability `fork_game_prob`, a fork of a recently finished game (of this call or,
//!   through a [`ForkPool`] the caller keeps, of an earlier one): its moves up to a ply drawn
//!   from `opening_random_plies` on, then a uniformly random other legal move (none of these
//!   recorded), and a full search next.
//! * Each move: with probability `full_search_prob` a full search (`simulations`, root noise,
//!   recorded as a policy target), else a cheap one (`cheap_simulations`, no noise, recorded with
//!   `full_search = false`: value target only). This is playout cap randomization (Wu 2019).
//! * PUCT moves are drawn from the visit counts with `temperature` for the first
//!   `temperature_plies` plies, then the most visited move is played; Gumbel plays the
//!   sequential-halving winner.
//! * Resignation: when the best move's value is below `resign_threshold` the side to move
//!   resigns (`resignation`), except in a `resign_disabled_fraction` of games, where the first
//!   would-be resignation is only recorded; such a game counts as a false positive if that side
//!   then did not lose.
//! * After `length_cap` plies the game is scored a draw (`length_cap`).
//!
//! # Across calls
//! [`play_games`] plays its games to the end: towards the end of a call fewer games are left,
//! and the batches thin out. [`play_games_continuing`] keeps every slot busy instead and leaves
//! the games still running at the end of a call in an [`InFlight`] for the next call, which
//! plays them on with its own evaluator (continuous self-play, as KataGo's and Leela Chess
//! Zero's self-play run across network updates).
//!
//! # Determinism
//! Game `i` draws every random number from its own generator, seeded from (`seed`, `i`); games
//! are assigned to slots, batched and applied in a fixed order, and finished games are reported
//! in a fixed order. With an evaluator that answers each state the same way whatever the batch,
//! the games and their order do not depend on the thread count or on scheduling. Forked games
//! depend, besides, on the [`ForkPool`] passed in: the same calls in the same order give the
//! same games. Continuing calls are deterministic in the same way: the same calls with the same
//! [`InFlight`] give the same games.

use std::error::Error;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;
use xiangqi::{Color, Move, Outcome, OutcomeReason};

use crate::config::{Checked, ConfigError, RecordedValue, SearchConfig, SelfPlayConfig};
use crate::driver::{Lane, Lockstep, evaluate_while_advancing};
use crate::eval::Evaluator;
use crate::game::{GameEnv, SearchGame};
use crate::record::{GameRecord, SampleTarget, material_of};
use crate::search::Search;

/// A boxed error from the caller's event handler.
pub type BoxError = Box<dyn Error + Send + Sync>;

/// Counters of a self-play run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SelfPlayStats {
    /// Games started.
    pub games_started: u64,
    /// Of which forks of an earlier game (`fork_game_prob`).
    pub games_forked: u64,
    /// Games finished.
    pub games_finished: u64,
    /// Searched moves.
    pub moves: u64,
    /// Of which full searches.
    pub full_searches: u64,
    /// Simulations completed.
    pub simulations: u64,
    /// States evaluated.
    pub evaluations: u64,
    /// Evaluation batches.
    pub batches: u64,
    /// The largest batch allowed.
    pub max_batch: u64,
    /// Time spent inside the evaluator.
    pub eval_time: Duration,
    /// Wall time since the start.
    pub elapsed: Duration,
    /// Games ended by resignation.
    pub resignations: u64,
    /// Games played with resignation disabled.
    pub resign_disabled_games: u64,
    /// Of those, games where a side fell below the threshold.
    pub would_have_resigned: u64,
    /// Of those, games the would-be resigner did not lose.
    pub resign_false_positives: u64,
    /// Finished games by outcome reason, indexed by [`OutcomeReason::index`].
    pub reasons: [u64; OutcomeReason::ALL.len()],
    /// Finished games won by the first player (xiangqi's Red, janggi's Cho), drawn, and won
    /// by the second.
    pub results: [u64; 3],
}

impl SelfPlayStats {
    /// Mean batch size over the largest allowed, in `[0, 1]`.
    pub fn batch_fill(&self) -> f64 {
        if self.batches == 0 || self.max_batch == 0 {
            0.0
        } else {
            self.evaluations as f64 / (self.batches * self.max_batch) as f64
        }
    }

    /// Fraction of wall time the evaluator was busy.
    pub fn busy_fraction(&self) -> f64 {
        let wall = self.elapsed.as_secs_f64();
        if wall > 0.0 { self.eval_time.as_secs_f64() / wall } else { 0.0 }
    }

    /// False positive rate of resignation: among disabled games where a side would have
    /// resigned, the fraction it did not lose. `None` before any such game.
    pub fn resign_false_positive_rate(&self) -> Option<f64> {
        (self.would_have_resigned > 0)
            .then(|| self.resign_false_positives as f64 / self.would_have_resigned as f64)
    }

    fn count_game<G: GameEnv>(&mut self, record: &GameRecord<G>) {
        self.games_finished += 1;
        self.reasons[record.outcome.reason().index()] += 1;
        let r = match record.outcome.winner() {
            Some(Color::Red) => 0,
            None => 1,
            Some(Color::Black) => 2,
        };
        self.results[r] += 1;
        if record.outcome.reason() == OutcomeReason::Resignation {
            self.resignations += 1;
        }
        if record.resign_disabled {
            self.resign_disabled_games += 1;
            if record.would_have_resigned.is_some() {
                self.would_have_resigned += 1;
                if record.resign_false_positive() {
                    self.resign_false_positives += 1;
                }
            }
        }
    }
}

/// What the pool reports while it runs.
#[derive(Debug)]
pub enum SelfPlayEvent<'a, G: GameEnv = xiangqi::Game> {
    /// A game finished (reported in a deterministic order).
    GameFinished(&'a GameRecord<G>, &'a SelfPlayStats),
    /// A round of batches is done.
    Progress(&'a SelfPlayStats),
}

/// Why self-play stopped.
#[derive(Debug, Error)]
pub enum SelfPlayError<E: Error + 'static> {
    /// A setting is invalid.
    #[error("invalid config: {0}")]
    Config(#[from] ConfigError),
    /// The thread pool could not be built.
    #[error("cannot build the thread pool: {0}")]
    ThreadPool(String),
    /// The evaluator failed.
    #[error("evaluator failed: {0}")]
    Evaluator(#[source] E),
    /// The event handler failed (writing a shard, say).
    #[error("{0}")]
    Handler(#[source] BoxError),
}

/// The random generator of game `game_id` in a run with master seed `seed`.
pub fn game_rng(seed: u64, game_id: u64) -> ChaCha8Rng {
    // SplitMix64 of the pair: nearby seeds and ids give unrelated streams.
    let mut z =
        seed ^ game_id.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(0x6a09_e667_f3bc_c909);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ChaCha8Rng::seed_from_u64(z ^ (z >> 31))
}

struct Settings<G: GameEnv> {
    search: Checked<SearchConfig>,
    selfplay: Checked<SelfPlayConfig>,
    /// The rule set of every game.
    rules: G::Rules,
    /// The id of the first game of the call.
    first_game_id: u64,
    /// Continuous self-play ([`play_games_continuing`]): new games start as long as the call
    /// runs, not only until `games` have started.
    continuous: bool,
}

/// A game being played.
struct Running<G: GameEnv> {
    game_id: u64,
    game: G,
    search: Search<G>,
    rng: ChaCha8Rng,
    samples: Vec<SampleTarget>,
    full: bool,
    /// The next search is a full one whatever `full_search_prob` draws (the first after a fork).
    force_full: bool,
    /// Whether the game is a fork of an earlier game.
    forked: bool,
    resign_disabled: bool,
    would_have_resigned: Option<Color>,
    lowest_value: [f32; 2],
}

/// A place for one game at a time: the game being played, the search of its last game (kept
/// for the allocations), and what it did since the pool last looked.
struct Slot<'s, G: GameEnv> {
    settings: &'s Settings<G>,
    run: Option<Running<G>>,
    spare: Option<Search<G>>,
    finished: Option<GameRecord<G>>,
    simulations: u64,
    moves: u64,
    full_searches: u64,
}

impl<'s, G: GameEnv> Slot<'s, G> {
    fn new(settings: &'s Settings<G>) -> Slot<'s, G> {
        Slot {
            settings,
            run: None,
            spare: None,
            finished: None,
            simulations: 0,
            moves: 0,
            full_searches: 0,
        }
    }
}

/// A finished game that a new game may fork from: its rule set, where it began, its moves.
struct ForkSource<G: GameEnv> {
    rules: G::Rules,
    start: G::Position,
    moves: Vec<Move>,
}

/// The newest finished games (as many as `games_in_flight`) that new games fork from
/// ([`SelfPlayConfig::fork_game_prob`]). A caller that plays in several calls (an iteration's
/// games at a time) keeps one pool across them, so that the first games of a call can fork from
/// the last call's: [`play_games_forking`]. Empty and unused while `fork_game_prob` is 0.
pub struct ForkPool<G: GameEnv> {
    games: std::collections::VecDeque<ForkSource<G>>,
}

impl<G: GameEnv> Default for ForkPool<G> {
    fn default() -> Self {
        ForkPool { games: std::collections::VecDeque::new() }
    }
}

impl<G: GameEnv> ForkPool<G> {
    /// Games held.
    pub fn len(&self) -> usize {
        self.games.len()
    }

    /// Whether no game is held (no new game can fork).
    pub fn is_empty(&self) -> bool {
        self.games.is_empty()
    }

    /// Adds a finished game, dropping the oldest beyond `capacity`.
    fn push(&mut self, record: &GameRecord<G>, capacity: usize) {
        self.games.push_back(ForkSource {
            rules: record.rules,
            start: record.start.clone(),
            moves: record.moves.clone(),
        });
        while self.games.len() > capacity.max(1) {
            self.games.pop_front();
        }
    }
}

/// A [`ForkPool`] of whichever game is played, for a caller that is not generic over the game
/// (a training run, a worker).
#[derive(Default)]
pub struct ForkPools(Option<Box<dyn std::any::Any + Send>>);

impl ForkPools {
    /// The pool of game `G` (a new, empty one if the pools held another game's).
    pub fn of<G: GameEnv>(&mut self) -> &mut ForkPool<G> {
        if !self.0.as_ref().is_some_and(|b| b.is::<ForkPool<G>>()) {
            self.0 = Some(Box::new(ForkPool::<G>::default()));
        }
        self.0
            .as_mut()
            .and_then(|b| b.downcast_mut::<ForkPool<G>>())
            .expect("a pool of game G was just put there")
    }
}

impl<G: GameEnv> Running<G> {
    fn new(
        game_id: u64,
        settings: &Settings<G>,
        spare: Option<Search<G>>,
        forks: &ForkPool<G>,
    ) -> Running<G> {
        let sp = &settings.selfplay;
        let mut rng = game_rng(sp.seed, game_id);
        // The draws only when forking is on, so that runs without it keep their streams.
        let fork = sp.fork_game_prob > 0.0 && rng.random::<f32>() < sp.fork_game_prob;
        let forked = if fork && !forks.is_empty() {
            let src = &forks.games[rng.random_range(0..forks.len())];
            fork_of(src, settings, &mut rng)
        } else {
            None
        };
        let is_fork = forked.is_some();
        let game = forked.unwrap_or_else(|| {
            let mut game = G::new_game(G::start_position(settings.rules), settings.rules);
            let mut moves = Vec::new();
            for _ in 0..sp.opening_random_plies {
                moves.clear();
                game.legal_moves_into(&mut moves);
                if moves.is_empty() || game.moves().len() >= sp.length_cap as usize {
                    break;
                }
                let m = moves[rng.random_range(0..moves.len())];
                game.play(m);
            }
            game
        });
        let resign_disabled = rng.random::<f32>() < sp.resign_disabled_fraction;
        let search = Search::renewed(spare, game.clone(), &settings.search);
        Running {
            game_id,
            game,
            search,
            rng,
            samples: Vec::new(),
            full: true,
            force_full: is_fork,
            forked: is_fork,
            resign_disabled,
            would_have_resigned: None,
            lowest_value: [1.0; 2],
        }
    }

    /// Starts the next search, or returns false if the game is over.
    fn start_search(&mut self, settings: &Settings<G>) -> bool {
        if self.game.outcome().is_some() {
            return false;
        }
        let s = &settings.search;
        self.full = std::mem::take(&mut self.force_full)
            || s.full_search_prob >= 1.0
            || self.rng.random::<f32>() < s.full_search_prob;
        let sims = if self.full { s.simulations } else { s.cheap_simulations };
        self.search.start(sims, self.full, &mut self.rng);
        true
    }

    /// Records the finished search, plays its move; returns false if the game is now over.
    fn play_searched_move(&mut self, settings: &Settings<G>) -> bool {
        let sp = &settings.selfplay;
        let result = self.search.result();
        let turn = self.game.turn();
        let ply = self.game.moves().len() as u32;
        self.samples.push(SampleTarget {
            ply,
            inputs: self.game.plane_inputs(),
            moves: result.moves.iter().map(|m| m.to_u16()).collect(),
            probs: result.policy.clone(),
            full_search: self.full,
            root_value: match sp.recorded_value {
                RecordedValue::Mean => result.root_value,
                RecordedValue::Improved => result.improved_value,
            }
            .clamp(-1.0, 1.0),
            policy_surprise: Some(result.policy_surprise),
        });
        let lowest = &mut self.lowest_value[turn.index()];
        *lowest = lowest.min(result.best_value.clamp(-1.0, 1.0));
        if sp.resign_threshold > -1.0 && result.best_value < sp.resign_threshold {
            if self.resign_disabled {
                self.would_have_resigned.get_or_insert(turn);
            } else {
                let reason = OutcomeReason::Resignation;
                self.game.set_outcome(Outcome::Win { winner: turn.other(), reason });
                return false;
            }
        }
        let temperature = if ply < sp.temperature_plies { sp.temperature } else { 0.0 };
        let mv = self.search.choose_move(&result, temperature, &mut self.rng);
        SearchGame::play(&mut self.game, mv);
        if self.game.outcome().is_some() {
            return false;
        }
        if self.game.moves().len() >= sp.length_cap as usize {
            self.game.set_outcome(Outcome::Draw { reason: OutcomeReason::LengthCap });
            return false;
        }
        self.search.advance(mv);
        true
    }

    fn into_record(self, settings: &Settings<G>) -> (GameRecord<G>, Search<G>) {
        let outcome =
            self.game.outcome().unwrap_or(Outcome::Draw { reason: OutcomeReason::LengthCap });
        let record = GameRecord {
            game_id: self.game_id,
            rules: settings.rules,
            start: self.game.start().clone(),
            moves: self.game.moves().to_vec(),
            outcome,
            samples: self.samples,
            resign_disabled: self.resign_disabled,
            would_have_resigned: self.would_have_resigned,
            lowest_value: self.lowest_value,
            final_material: Some(material_of(&self.game)),
        };
        (record, self.search)
    }
}

/// A fork of `src` (see [`SelfPlayConfig::fork_game_prob`]): its moves up to a ply drawn
/// uniformly from `opening_random_plies` on (before `length_cap - 1`: a forked source's own
/// replayed plies count too),
/// then a legal move other than the one it played there, drawn uniformly. `None` when the game
/// was played under other rules, has no such ply or the ply no other legal move, or the other
/// move ends the game.
fn fork_of<G: GameEnv>(
    src: &ForkSource<G>,
    settings: &Settings<G>,
    rng: &mut ChaCha8Rng,
) -> Option<G> {
    let sp = &settings.selfplay;
    let first = sp.opening_random_plies as usize;
    let end = src.moves.len().min((sp.length_cap as usize).saturating_sub(1));
    if src.rules != settings.rules || first >= end {
        return None;
    }
    let ply = rng.random_range(first..end);
    let mut game = G::new_game(src.start.clone(), settings.rules);
    for &m in &src.moves[..ply] {
        game.play(m);
    }
    let mut others = Vec::new();
    game.legal_moves_into(&mut others);
    others.retain(|&m| m != src.moves[ply]);
    if others.is_empty() {
        return None;
    }
    game.play(others[rng.random_range(0..others.len())]);
    game.outcome().is_none().then_some(game)
}

impl<G: GameEnv> Lane<G> for Slot<'_, G> {
    fn search(&self) -> Option<&Search<G>> {
        self.run.as_ref().map(|r| &r.search)
    }

    fn search_mut(&mut self) -> Option<&mut Search<G>> {
        self.run.as_mut().map(|r| &mut r.search)
    }

    fn leaves_wanted(&self) -> usize {
        if self.run.is_some() { self.settings.search.virtual_loss_batch as usize } else { 0 }
    }

    /// Plays the moves whose searches are done (recording them, starting the next search,
    /// ending the game), then selects up to `quota` new leaves.
    fn advance(&mut self, quota: usize) {
        let settings = self.settings;
        let Some(run) = self.run.as_mut() else { return };
        loop {
            if run.search.is_done() {
                self.simulations += u64::from(run.search.completed());
                self.moves += 1;
                self.full_searches += u64::from(run.full);
                if !(run.play_searched_move(settings) && run.start_search(settings)) {
                    self.finish();
                    return;
                }
                continue;
            }
            if quota == 0 {
                return;
            }
            run.search.gather(quota);
            if run.search.num_pending() > 0 || !run.search.is_done() {
                return;
            }
        }
    }
}

impl<G: GameEnv> Slot<'_, G> {
    fn finish(&mut self) {
        if let Some(run) = self.run.take() {
            let (record, search) = run.into_record(self.settings);
            self.finished = Some(record);
            self.spare = Some(search);
        }
    }
}

/// Half of the games in flight: evaluated while the other half's trees are worked on.
struct Group<'s, G: GameEnv> {
    slots: Vec<Slot<'s, G>>,
    driver: Lockstep<G>,
}

/// Plays `games` self-play games with `evaluator` and reports each finished game (and progress)
/// to `on_event`, in a deterministic order. Returns the final counters.
///
/// The settings were checked beforehand ([`Checked::new`]); `selfplay` must name game `G`.
///
/// # Errors
/// [`SelfPlayError::Config`] if `selfplay` is for another game than `G` or names a rule set
/// `G` does not have, [`SelfPlayError::Evaluator`] if the evaluator
/// fails, [`SelfPlayError::Handler`] if `on_event` does, [`SelfPlayError::ThreadPool`] if the
/// pool cannot be built.
pub fn play_games<G, E, F>(
    search: &Checked<SearchConfig>,
    selfplay: &Checked<SelfPlayConfig>,
    games: u64,
    evaluator: &mut E,
    on_event: F,
) -> Result<SelfPlayStats, SelfPlayError<E::Error>>
where
    G: GameEnv,
    E: Evaluator<G>,
    F: FnMut(SelfPlayEvent<'_, G>) -> Result<(), BoxError>,
{
    play_games_from(0, search, selfplay, games, evaluator, on_event)
}

/// [`play_games`] with the games numbered from `first_game_id` on (their
/// [`GameRecord::game_id`](crate::GameRecord) and the seed of each game's random generator,
/// [`game_rng`]`(selfplay.seed, game_id)`): a worker that plays in several calls continues its
/// numbering, so that no two of its games share an id or a generator.
///
/// # Errors
/// As [`play_games`].
pub fn play_games_from<G, E, F>(
    first_game_id: u64,
    search: &Checked<SearchConfig>,
    selfplay: &Checked<SelfPlayConfig>,
    games: u64,
    evaluator: &mut E,
    on_event: F,
) -> Result<SelfPlayStats, SelfPlayError<E::Error>>
where
    G: GameEnv,
    E: Evaluator<G>,
    F: FnMut(SelfPlayEvent<'_, G>) -> Result<(), BoxError>,
{
    let mut forks = ForkPool::default();
    play_games_forking(first_game_id, &mut forks, search, selfplay, games, evaluator, on_event)
}

/// [`play_games_from`] with a pool of finished games kept by the caller: new games fork from
/// its games ([`SelfPlayConfig::fork_game_prob`]), and each game finished is added to it. A
/// caller that plays in several calls passes the same pool to each, so that forks are not
/// confined to games of the same call (with `games_in_flight` as large as the call's games, every
/// game starts before any finishes).
///
/// # Errors
/// As [`play_games`].
pub fn play_games_forking<G, E, F>(
    first_game_id: u64,
    forks: &mut ForkPool<G>,
    search: &Checked<SearchConfig>,
    selfplay: &Checked<SelfPlayConfig>,
    games: u64,
    evaluator: &mut E,
    on_event: F,
) -> Result<SelfPlayStats, SelfPlayError<E::Error>>
where
    G: GameEnv,
    E: Evaluator<G>,
    F: FnMut(SelfPlayEvent<'_, G>) -> Result<(), BoxError>,
{
    run_pool(first_game_id, forks, None, search, selfplay, games, evaluator, on_event)
}

/// The games a caller of [`play_games_continuing`] left unfinished at the end of a call, for its
/// next call to play on: continuous self-play, as KataGo's and Leela Chess Zero's self-play run
/// across network updates, so that no call waits for its last game with half-empty batches.
///
/// Held in memory only: a process that stops loses the games in it (their samples were never
/// reported).
pub struct InFlight<G: GameEnv> {
    /// Games being played, in slot order, their searches as the call left them (leaves
    /// gathered and not yet evaluated are evaluated by the next call's evaluator).
    games: Vec<Running<G>>,
    /// Games finished but not reported: beyond the call's count, or decided in their opening.
    finished: std::collections::VecDeque<GameRecord<G>>,
    next_game_id: u64,
}

impl<G: GameEnv> Default for InFlight<G> {
    fn default() -> Self {
        InFlight { games: Vec::new(), finished: Default::default(), next_game_id: 0 }
    }
}

impl<G: GameEnv> InFlight<G> {
    /// Unfinished games plus finished ones not yet reported.
    pub fn len(&self) -> usize {
        self.games.len() + self.finished.len()
    }

    /// Whether nothing is carried.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id the next new game takes: the games started so far, over all calls.
    pub fn next_game_id(&self) -> u64 {
        self.next_game_id
    }

    /// The ids of the carried games, unfinished and finished, in the order the next call
    /// plays them on.
    pub fn game_ids(&self) -> Vec<u64> {
        self.finished
            .iter()
            .map(|r| r.game_id)
            .chain(self.games.iter().map(|r| r.game_id))
            .collect()
    }
}

/// Continuous self-play: plays until `games` games have finished, reporting them as
/// [`play_games_forking`] does, and leaves the games still running in `in_flight` for the next
/// call. The call first plays on the games `in_flight` holds (with this call's `evaluator` and
/// settings: a new network and, say, a new resignation threshold apply to them from now on),
/// then fills every free slot with a new game at once, so that the batches stay full to the end
/// of the call. New games are numbered from [`InFlight::next_game_id`] on and draw from
/// [`game_rng`]`(selfplay.seed, game_id)`: a caller keeps `selfplay.seed` the same from call to
/// call, so that no two games share a generator.
///
/// Exactly `games` games are reported per call (one more finished in the same round waits in
/// `in_flight` for the next call). A game's samples may come from several networks, as in
/// KataGo's self-play.
///
/// # Errors
/// As [`play_games`]; after an error `in_flight` holds no games (those of the call are lost).
pub fn play_games_continuing<G, E, F>(
    in_flight: &mut InFlight<G>,
    forks: &mut ForkPool<G>,
    search: &Checked<SearchConfig>,
    selfplay: &Checked<SelfPlayConfig>,
    games: u64,
    evaluator: &mut E,
    on_event: F,
) -> Result<SelfPlayStats, SelfPlayError<E::Error>>
where
    G: GameEnv,
    E: Evaluator<G>,
    F: FnMut(SelfPlayEvent<'_, G>) -> Result<(), BoxError>,
{
    let first = in_flight.next_game_id;
    run_pool(first, forks, Some(in_flight), search, selfplay, games, evaluator, on_event)
}

/// The pool: `games` games from `first_game_id` on, or, with `carry`, continuous self-play
/// ([`play_games_continuing`]).
#[allow(clippy::too_many_arguments)]
fn run_pool<G, E, F>(
    first_game_id: u64,
    forks: &mut ForkPool<G>,
    mut carry: Option<&mut InFlight<G>>,
    search: &Checked<SearchConfig>,
    selfplay: &Checked<SelfPlayConfig>,
    games: u64,
    evaluator: &mut E,
    mut on_event: F,
) -> Result<SelfPlayStats, SelfPlayError<E::Error>>
where
    G: GameEnv,
    E: Evaluator<G>,
    F: FnMut(SelfPlayEvent<'_, G>) -> Result<(), BoxError>,
{
    let rules = selfplay.rules_for::<G>()?;
    let continuous = carry.is_some();
    // The carried games leave the carry now: an error below loses them.
    let (carried, mut waiting) = match carry.as_deref_mut() {
        Some(c) => (std::mem::take(&mut c.games), std::mem::take(&mut c.finished)),
        None => (Vec::new(), Default::default()),
    };
    let settings = Settings {
        search: search.clone(),
        selfplay: selfplay.clone(),
        rules,
        first_game_id,
        continuous,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(selfplay.threads as usize)
        .build()
        .map_err(|e| SelfPlayError::ThreadPool(e.to_string()))?;
    let start_time = Instant::now();
    let mut stats =
        SelfPlayStats { max_batch: u64::from(selfplay.max_batch), ..Default::default() };
    let in_flight = if continuous {
        (selfplay.games_in_flight as usize).max(carried.len())
    } else {
        (selfplay.games_in_flight as u64).min(games) as usize
    };
    let sizes = if in_flight >= 2 {
        vec![in_flight / 2, in_flight - in_flight / 2]
    } else {
        vec![in_flight]
    };
    let max_batch = selfplay.max_batch as usize;
    let mut groups: Vec<Group<'_, G>> = sizes
        .iter()
        .map(|&n| Group {
            slots: (0..n).map(|_| Slot::new(&settings)).collect(),
            driver: Lockstep::new(1, max_batch),
        })
        .collect();
    // The carried games take the first slots, group by group.
    let any_carried = !carried.is_empty();
    let mut carried = carried.into_iter();
    for g in &mut groups {
        for slot in &mut g.slots {
            slot.run = carried.next();
        }
    }
    // Games finished and not yet reported by an earlier call come first.
    while stats.games_finished < games {
        let Some(record) = waiting.pop_front() else { break };
        stats.elapsed = start_time.elapsed();
        report(&record, &settings, &mut stats, forks, &mut on_event)?;
    }
    // Start the first games, group by group, slot by slot.
    for g in &mut groups {
        start_games(g, &settings, games, &mut stats, forks);
    }
    let mut turn = 0;
    // The carried games of the second group wait on leaves their last call gathered (and
    // perhaps evaluated, unapplied): its new driver has no answers for them, and a round of
    // tree work would gather more beside them, past `max_batch`. So the first round only
    // evaluates the first group; the second group's leaves go into the next batch.
    let mut first_group_alone = any_carried;
    while stats.games_finished < games {
        // Evaluate one group while the other (if there are two) works on its trees.
        let evaluated = match groups.as_mut_slice() {
            [a] => a.driver.evaluate(&a.slots, |_, r, out| evaluator.evaluate(r, out)),
            [a, _] if std::mem::take(&mut first_group_alone) => {
                a.driver.evaluate(&a.slots, |_, r, out| evaluator.evaluate(r, out))
            }
            [a, b] => {
                let (eval, work) = if turn == 0 { (a, b) } else { (b, a) };
                evaluate_while_advancing(
                    &pool,
                    &mut eval.driver,
                    &eval.slots,
                    &mut work.driver,
                    &mut work.slots,
                    evaluator,
                )
            }
            _ => unreachable!("one or two groups"),
        }
        .map_err(SelfPlayError::Evaluator)?;
        stats.batches += evaluated.batches;
        stats.evaluations += evaluated.evaluations;
        stats.eval_time += evaluated.time;
        let processed = match groups.as_mut_slice() {
            // A single group has no partner to overlap with: process it now.
            [a] => {
                pool.install(|| a.driver.par_advance(&mut a.slots));
                a
            }
            [a, b] => {
                if turn == 0 {
                    b
                } else {
                    a
                }
            }
            _ => unreachable!("one or two groups"),
        };
        // Report the processed group's finished games and start new ones, in slot order.
        for slot in &mut processed.slots {
            stats.simulations += std::mem::take(&mut slot.simulations);
            stats.moves += std::mem::take(&mut slot.moves);
            stats.full_searches += std::mem::take(&mut slot.full_searches);
            if let Some(record) = slot.finished.take() {
                if stats.games_finished >= games {
                    // Continuous self-play only (a bounded call starts no more than `games`).
                    waiting.push_back(record);
                    continue;
                }
                stats.elapsed = start_time.elapsed();
                report(&record, &settings, &mut stats, forks, &mut on_event)?;
            }
        }
        start_games(processed, &settings, games, &mut stats, forks);
        stats.elapsed = start_time.elapsed();
        on_event(SelfPlayEvent::Progress(&stats)).map_err(SelfPlayError::Handler)?;
        turn ^= 1;
    }
    if let Some(c) = carry {
        // What the slots hold goes on in the next call: games decided in their opening first
        // (they are older than any game the next call finishes), then the games being played.
        for g in &mut groups {
            for slot in &mut g.slots {
                if let Some(record) = slot.finished.take() {
                    waiting.push_back(record);
                }
            }
        }
        c.finished = waiting;
        c.games = groups.into_iter().flat_map(|g| g.slots).filter_map(|s| s.run).collect();
        c.next_game_id = first_game_id.wrapping_add(stats.games_started);
    }
    stats.elapsed = start_time.elapsed();
    Ok(stats)
}

/// Counts a finished game, adds it to the fork pool (when games fork) and reports it.
fn report<G: GameEnv, F, E: Error + 'static>(
    record: &GameRecord<G>,
    settings: &Settings<G>,
    stats: &mut SelfPlayStats,
    forks: &mut ForkPool<G>,
    on_event: &mut F,
) -> Result<(), SelfPlayError<E>>
where
    F: FnMut(SelfPlayEvent<'_, G>) -> Result<(), BoxError>,
{
    stats.count_game(record);
    if settings.selfplay.fork_game_prob > 0.0 {
        forks.push(record, settings.selfplay.games_in_flight as usize);
    }
    on_event(SelfPlayEvent::GameFinished(record, stats)).map_err(SelfPlayError::Handler)
}

/// Fills the group's idle slots with new games (numbered in slot order; each may fork from a
/// game of `forks`) and, while the batch has room, selects each new game's first leaf (its root).
fn start_games<'s, G: GameEnv>(
    group: &mut Group<'s, G>,
    settings: &'s Settings<G>,
    games: u64,
    stats: &mut SelfPlayStats,
    forks: &ForkPool<G>,
) {
    let mut pending: usize =
        group.slots.iter().filter_map(|s| s.run.as_ref()).map(|r| r.search.num_pending()).sum();
    for slot in &mut group.slots {
        if slot.run.is_some()
            || slot.finished.is_some()
            || (!settings.continuous && stats.games_started >= games)
        {
            continue;
        }
        let game_id = settings.first_game_id.wrapping_add(stats.games_started);
        let mut run = Running::new(game_id, settings, slot.spare.take(), forks);
        stats.games_started += 1;
        stats.games_forked += u64::from(run.forked);
        if run.start_search(settings) {
            if pending < settings.selfplay.max_batch as usize {
                pending += run.search.gather(1);
            }
            slot.run = Some(run);
        } else {
            // Decided during the opening plies: nothing to search.
            let (record, search) = run.into_record(settings);
            slot.finished = Some(record);
            slot.spare = Some(search);
        }
    }
}
