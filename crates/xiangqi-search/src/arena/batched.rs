//! Batched matches: [`run_match_batched`] and [`run_match_batched_shared`] play many games of
//! two [`LocalPlayer`]s at once in lockstep, so that their searches share
//! each evaluation batch.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use thiserror::Error;
use xiangqi::Color;

use crate::config::{Checked, SearchConfig};
use crate::driver::{BatchCounters, Lane, Lockstep};
use crate::eval::{EvalBuffer, EvalRequest, Evaluator};
use crate::game::GameEnv;
use crate::search::Search;
use crate::selfplay::{BoxError, game_rng};
use crate::strength::Strength;

use super::game::{
    ArenaGame, Forfeit, GameSettings, finished_game, play_checked, play_player_move,
    reached_length_cap,
};
use super::matches::MatchConfig;
use super::opening::Opening;
use super::player::{GreedyPlayer, LocalPlayer, Player, RandomPlayer};
use super::stats::{MatchStats, SprtVerdict};

/// Why a batched match could not be played (or went on).
#[derive(Debug, Error)]
pub enum BatchedMatchError {
    /// The match has no opening.
    #[error("a match needs at least one opening")]
    NoOpenings,
    /// An MCTS player's search config is invalid.
    #[error("player {player}: {source}")]
    Config {
        /// `A` or `B`.
        player: &'static str,
        /// What is wrong.
        #[source]
        source: crate::ConfigError,
    },
    /// A time per move was given with an MCTS player: games in lockstep cannot give each search
    /// its own clock (use [`run_match`]).
    ///
    /// [`run_match`]: super::run_match
    #[error("a batched match with a search counts simulations, not time: no movetime")]
    Timed,
    /// An evaluator failed; the match stops.
    #[error("evaluator of {player} failed: {source}")]
    Evaluator {
        /// `A`, `B`, or `A and B` (a shared evaluator).
        player: &'static str,
        /// The evaluator's error.
        #[source]
        source: BoxError,
    },
}

/// The result of [`run_match_batched`]: the match statistics (the same as [`run_match`]'s) and
/// what the evaluators did.
///
/// [`run_match`]: super::run_match
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchedMatch {
    /// Results from player A's point of view.
    pub stats: MatchStats,
    /// Batches of A's evaluator (`[0]`; the shared one for [`run_match_batched_shared`]) and of
    /// B's (`[1]`).
    pub batches: [BatchCounters; 2],
}

/// Plays a match between two local players like [`run_match`], but up to `concurrency` games at
/// once in lockstep, so that an MCTS player's evaluator sees one batch with the leaves of all
/// its games: A's searches are evaluated by `eval_a`, B's by `eval_b` (a player that does not
/// search never calls its evaluator; pass any, such as [`crate::UniformEvaluator`]). To serve
/// both players from one evaluator, in one batch, use [`run_match_batched_shared`].
///
/// Each round, every game whose side to move searches gathers up to `virtual_loss_batch` leaves
/// of its tree (kept apart by virtual loss), each evaluator is called once with all of its
/// player's waiting leaves, and the evaluations are applied; a search that has run its
/// simulations plays its best move (temperature 0, no noise), and a random or greedy player
/// moves at once. Every game is judged by the rules, with `max_plies` a draw by length cap.
///
/// Games are numbered, paired over the openings, coloured and seeded exactly as in
/// [`run_match`], and finished games are reported to `on_game` (and counted, and tested by the
/// SPRT) in game order; when `on_game` returns false or the SPRT decides, the match stops and
/// games still running are dropped. Each tree goes through the same gather/evaluate/apply steps
/// as in [`MctsPlayer`], so with evaluators that answer each state the same way whatever the
/// batch, the games and statistics are identical to [`run_match`]'s with the same players.
///
/// # Errors
/// [`BatchedMatchError`]: no opening, an invalid search config, a `movetime` with an MCTS
/// player, or a failed evaluation (which stops the match).
///
/// [`run_match`]: super::run_match
/// [`MctsPlayer`]: super::MctsPlayer
#[allow(clippy::too_many_arguments)]
pub fn run_match_batched<G: GameEnv, EA: Evaluator<G>, EB: Evaluator<G>>(
    a: &LocalPlayer,
    b: &LocalPlayer,
    eval_a: &mut EA,
    eval_b: &mut EB,
    openings: &[Opening<G>],
    config: &MatchConfig<G>,
    concurrency: usize,
    mut on_game: impl FnMut(&ArenaGame<G>, &MatchStats) -> bool,
) -> Result<BatchedMatch, BatchedMatchError> {
    let evaluate = |group: usize, requests: &[EvalRequest<'_, G>], out: &mut EvalBuffer| {
        let (player, result) = if group == 0 {
            ("A", eval_a.evaluate(requests, out).map_err(boxed))
        } else {
            ("B", eval_b.evaluate(requests, out).map_err(boxed))
        };
        result.map_err(|source| BatchedMatchError::Evaluator { player, source })
    };
    let lockstep = Match { players: [a, b], groups: [0, 1], openings, config, concurrency };
    lockstep.run(evaluate, &mut on_game)
}

/// [`run_match_batched`] with one evaluator for both players: each round, the waiting leaves
/// of both players' searches go into a single batch (a network against an earlier version of
/// itself with other settings, or the search with [`crate::UniformEvaluator`] on both sides).
///
/// # Errors
/// As [`run_match_batched`].
pub fn run_match_batched_shared<G: GameEnv, E: Evaluator<G>>(
    a: &LocalPlayer,
    b: &LocalPlayer,
    evaluator: &mut E,
    openings: &[Opening<G>],
    config: &MatchConfig<G>,
    concurrency: usize,
    mut on_game: impl FnMut(&ArenaGame<G>, &MatchStats) -> bool,
) -> Result<BatchedMatch, BatchedMatchError> {
    let evaluate = |_: usize, requests: &[EvalRequest<'_, G>], out: &mut EvalBuffer| {
        evaluator
            .evaluate(requests, out)
            .map_err(|e| BatchedMatchError::Evaluator { player: "A and B", source: boxed(e) })
    };
    let lockstep = Match { players: [a, b], groups: [0, 0], openings, config, concurrency };
    lockstep.run(evaluate, &mut on_game)
}

fn boxed<E: std::error::Error + Send + Sync + 'static>(e: E) -> BoxError {
    Box::new(e)
}

/// A batched match: the two players (A, B), the evaluator of each player's leaves (`0` or
/// `1`), and the match settings.
struct Match<'m, G: GameEnv> {
    players: [&'m LocalPlayer; 2],
    groups: [usize; 2],
    openings: &'m [Opening<G>],
    config: &'m MatchConfig<G>,
    concurrency: usize,
}

/// A search in progress for the side to move of a [`Slot`]'s game.
struct RunningSearch<G: GameEnv> {
    /// The searching player: 0 for A, 1 for B.
    player: usize,
    search: Box<Search<G>>,
    /// Leaves gathered per round (`virtual_loss_batch`).
    batch: usize,
}

/// How one player of a batched match moves.
enum Mover<G: GameEnv> {
    /// A random or greedy player.
    Simple(Box<dyn Player<G>>),
    /// The search with these settings (at a level, with its master seed and the draws of the
    /// current game); its last search is kept for the allocations.
    Search {
        config: Checked<SearchConfig>,
        spare: Option<Box<Search<G>>>,
        level: Option<Box<(Strength, u64, ChaCha8Rng)>>,
    },
}

impl<G: GameEnv> Mover<G> {
    /// The mover of `player`, whose search settings (an MCTS player's) are `checked`.
    fn new(player: &LocalPlayer, checked: Option<&Checked<SearchConfig>>) -> Mover<G> {
        match (player, checked) {
            (LocalPlayer::Random { seed }, _) => Mover::Simple(Box::new(RandomPlayer::new(*seed))),
            (LocalPlayer::Greedy { seed }, _) => Mover::Simple(Box::new(GreedyPlayer::new(*seed))),
            (LocalPlayer::Mcts { .. }, Some(config)) => {
                Mover::Search { config: config.clone(), spare: None, level: None }
            }
            (LocalPlayer::Level { strength, seed, .. }, Some(config)) => Mover::Search {
                config: config.clone(),
                spare: None,
                level: Some(Box::new((*strength, *seed, game_rng(*seed, 0)))),
            },
            (LocalPlayer::Mcts { .. } | LocalPlayer::Level { .. }, None) => {
                unreachable!("Match::run checks every MCTS player's settings first")
            }
        }
    }
}

/// A game of a batched match in progress, with its players' per-game state.
struct Slot<G: GameEnv> {
    game_id: u64,
    /// A's colour in this game.
    a_color: Color,
    /// Index into the match's openings.
    opening: usize,
    game: G,
    forfeit: Option<Forfeit>,
    /// A's and B's movers.
    movers: [Mover<G>; 2],
    /// The search of the side to move, while it runs.
    running: Option<RunningSearch<G>>,
    /// Never drawn from: searches without noise use no randomness, as in [`MctsPlayer`].
    ///
    /// [`MctsPlayer`]: super::MctsPlayer
    rng: ChaCha8Rng,
    /// The evaluator of each player's leaves.
    evaluators: [usize; 2],
    /// Whether the game has ended.
    over: bool,
}

impl<G: GameEnv> Slot<G> {
    /// Which player (0 for A, 1 for B) plays `color`.
    fn player_of(&self, color: Color) -> usize {
        usize::from(color != self.a_color)
    }

    /// Plays until the game waits for evaluations (a search has gathered its leaves, at most
    /// `quota`) or ends; returns true when it has ended.
    fn step(&mut self, settings: &GameSettings<G>, quota: usize) -> bool {
        loop {
            if let Some(run) = &mut self.running {
                if !run.search.is_done() {
                    run.search.gather(run.batch.min(quota));
                    return false;
                }
                let mut best = run.search.result().best;
                if let Some(run) = self.running.take() {
                    if let Mover::Search { spare, level, .. } = &mut self.movers[run.player] {
                        if let Some(level) = level {
                            let (strength, _, rng) = &mut **level;
                            best = strength.choose(&run.search, |_| true, rng).unwrap_or(best);
                        }
                        *spare = Some(run.search);
                    }
                }
                self.forfeit = play_checked(&mut self.game, best);
                continue;
            }
            if self.forfeit.is_some() || self.game.outcome().is_some() {
                return true;
            }
            if reached_length_cap(&mut self.game, settings) {
                return true;
            }
            let player = self.player_of(self.game.turn());
            match &mut self.movers[player] {
                Mover::Simple(simple) => {
                    let simple = simple.as_mut();
                    self.forfeit = play_player_move(simple, &mut self.game, &settings.limit);
                }
                Mover::Search { config, spare, level } => {
                    let mut search = Box::new(Search::renewed(
                        spare.take().map(|s| *s),
                        self.game.clone(),
                        config,
                    ));
                    let full = settings.limit.simulations.unwrap_or(config.simulations);
                    let full = match level {
                        Some(level) => level.0.simulations(full),
                        None => full,
                    };
                    let budget = full.clamp(1, 1 << 24);
                    search.start(budget, false, &mut self.rng);
                    let batch = (config.virtual_loss_batch as usize).max(1);
                    self.running = Some(RunningSearch { player, search, batch });
                }
            }
        }
    }
}

/// A slot of a batched match as the driver sees it: the game in it (if any) and the match's
/// settings.
struct MatchLane<'m, G: GameEnv> {
    slot: Option<Slot<G>>,
    settings: &'m GameSettings<G>,
    /// The most leaves either player gathers per round.
    batch: usize,
}

impl<G: GameEnv> Lane<G> for MatchLane<'_, G> {
    fn search(&self) -> Option<&Search<G>> {
        self.slot.as_ref()?.running.as_ref().map(|r| &*r.search)
    }

    fn search_mut(&mut self) -> Option<&mut Search<G>> {
        self.slot.as_mut()?.running.as_mut().map(|r| &mut *r.search)
    }

    fn evaluator(&self) -> usize {
        self.slot
            .as_ref()
            .and_then(|s| s.running.as_ref().map(|r| s.evaluators[r.player]))
            .unwrap_or(0)
    }

    fn leaves_wanted(&self) -> usize {
        if self.slot.as_ref().is_some_and(|s| !s.over) { self.batch } else { 0 }
    }

    fn advance(&mut self, quota: usize) {
        if let Some(slot) = &mut self.slot {
            if !slot.over {
                slot.over = slot.step(self.settings, quota);
            }
        }
    }
}

impl<G: GameEnv> Match<'_, G> {
    /// Checks the settings and plays the match; `evaluate(group, batch, out)` evaluates one
    /// group's batch.
    fn run<F>(
        &self,
        mut evaluate: F,
        on_game: &mut dyn FnMut(&ArenaGame<G>, &MatchStats) -> bool,
    ) -> Result<BatchedMatch, BatchedMatchError>
    where
        F: FnMut(usize, &[EvalRequest<'_, G>], &mut EvalBuffer) -> Result<(), BatchedMatchError>,
    {
        if self.openings.is_empty() {
            return Err(BatchedMatchError::NoOpenings);
        }
        // Each MCTS player's settings, checked once for the whole match.
        let mut checked: [Option<Checked<SearchConfig>>; 2] = [None, None];
        for ((player, p), checked) in ["A", "B"].into_iter().zip(self.players).zip(&mut checked) {
            if let Some(config) = p.search_config() {
                *checked = Some(
                    Checked::new(config.clone())
                        .map_err(|source| BatchedMatchError::Config { player, source })?,
                );
                if self.config.settings.limit.movetime.is_some() {
                    return Err(BatchedMatchError::Timed);
                }
            }
        }
        let games = u64::from(self.config.games);
        let width = self.concurrency.clamp(1, (games as usize).max(1));
        let settings = &self.config.settings;
        let batch = self
            .players
            .iter()
            .map(|p| p.search_config().map_or(1, |c| (c.virtual_loss_batch as usize).max(1)))
            .max()
            .unwrap_or(1);
        let mut lanes: Vec<MatchLane<'_, G>> =
            (0..width).map(|_| MatchLane { slot: None, settings, batch }).collect();
        let mut driver =
            Lockstep::new(1 + self.groups.iter().copied().max().unwrap_or(0), usize::MAX);
        // The movers of finished games, for the next ones.
        let mut idle: Vec<[Mover<G>; 2]> = Vec::new();
        let mut next_game = 0u64;
        // Finished games waiting to be reported in game order.
        let mut finished: BTreeMap<u64, (ArenaGame<G>, Color)> = BTreeMap::new();
        let mut next_report = 0u64;
        let mut result = BatchedMatch::default();
        loop {
            // Apply the last evaluations and play every game up to its next evaluation.
            driver.advance(&mut lanes);
            // Take the finished games out; start a new game in each free slot and play it up to
            // its first evaluation. One new game a lane per round: players that never wait on
            // an evaluation (random, greedy) finish a game within its first step, and
            // the finished games must be reported (and the SPRT consulted) between them, not
            // after the whole match.
            for lane in &mut lanes {
                loop {
                    match &mut lane.slot {
                        Some(slot) if slot.over => {
                            let (game, a_color) = self.finish(slot);
                            finished.insert(slot.game_id, (game, a_color));
                            if let Some(slot) = lane.slot.take() {
                                idle.push(slot.movers);
                            }
                        }
                        Some(_) => break,
                        None if next_game < games => {
                            next_game += 1;
                            let slot = lane.slot.insert(self.new_slot(
                                next_game - 1,
                                idle.pop(),
                                &checked,
                            ));
                            slot.over = slot.step(settings, batch);
                            break;
                        }
                        None => break,
                    }
                }
            }
            // Report finished games in order; stop once told to or decided.
            while let Some((game, a_color)) = finished.remove(&next_report) {
                next_report += 1;
                let stats = &mut result.stats;
                stats.add(&game, a_color);
                let verdict = self.config.sprt.map(|s| (s.llr(&stats.wdl), s.verdict(&stats.wdl)));
                stats.sprt = verdict;
                let go_on = on_game(&game, stats);
                if !go_on || verdict.is_some_and(|(_, v)| v != SprtVerdict::Continue) {
                    return Ok(self.counted(result, &driver));
                }
            }
            if next_report >= games {
                return Ok(self.counted(result, &driver));
            }
            // One batch per evaluator, with the leaves of its games in slot order.
            driver.evaluate(&lanes, &mut evaluate)?;
        }
    }

    /// The match's result with each player's evaluator counters (a shared evaluator's in A's
    /// place).
    fn counted(&self, mut result: BatchedMatch, driver: &Lockstep<G>) -> BatchedMatch {
        for (player, &evaluator) in self.groups.iter().enumerate() {
            if player == evaluator {
                result.batches[player] = driver.counters(evaluator);
            }
        }
        result
    }

    /// Sets up game `game_id` (its opening, colours and players) as [`run_match`] and
    /// [`play_game`] do, with the movers of a finished game if there are some.
    ///
    /// [`run_match`]: super::run_match
    /// [`play_game`]: super::play_game
    fn new_slot(
        &self,
        game_id: u64,
        movers: Option<[Mover<G>; 2]>,
        checked: &[Option<Checked<SearchConfig>>; 2],
    ) -> Slot<G> {
        let opening = (game_id / 2) as usize % self.openings.len();
        let a_color = if game_id % 2 == 0 { Color::Red } else { Color::Black };
        let mut slot = Slot {
            game_id,
            a_color,
            opening,
            game: self.openings[opening].game(self.config.settings.rules),
            forfeit: None,
            movers: movers.unwrap_or_else(|| {
                [0, 1].map(|p| Mover::new(self.players[p], checked[p].as_ref()))
            }),
            running: None,
            rng: ChaCha8Rng::seed_from_u64(0),
            evaluators: self.groups,
            over: false,
        };
        for color in [Color::Red, Color::Black] {
            let player = slot.player_of(color);
            match &mut slot.movers[player] {
                Mover::Simple(p) => {
                    if let Err(e) = p.new_game(game_id) {
                        let forfeit =
                            Forfeit { loser: color, kind: e.kind(), detail: e.to_string() };
                        slot.forfeit.get_or_insert(forfeit);
                    }
                }
                Mover::Search { level: Some(level), .. } => {
                    level.2 = game_rng(level.1, game_id);
                }
                Mover::Search { level: None, .. } => {}
            }
        }
        slot
    }

    /// The record of a slot's finished game and A's colour in it.
    fn finish(&self, slot: &Slot<G>) -> (ArenaGame<G>, Color) {
        let red = self.players[slot.player_of(Color::Red)].name();
        let black = self.players[slot.player_of(Color::Black)].name();
        let game = finished_game(
            &slot.game,
            slot.forfeit.clone(),
            &self.config.settings,
            slot.game_id,
            [red, black],
            self.openings[slot.opening].name(),
        );
        (game, slot.a_color)
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::time::Duration;

    use crate::arena::matches::run_match;
    use crate::arena::player::MoveLimit;
    use crate::arena::stats::Sprt;
    use crate::{ScriptedEvaluator, UniformEvaluator};

    use super::*;

    /// Plays a match sequentially with [`run_match`] (MCTS players searching with uniform
    /// priors) and returns every game and the statistics.
    fn sequential(
        a: &LocalPlayer,
        b: &LocalPlayer,
        config: &MatchConfig<xiangqi::Game>,
        stop_after: u32,
    ) -> (Vec<ArenaGame<xiangqi::Game>>, MatchStats) {
        let mut pa = a.to_player(UniformEvaluator).unwrap();
        let mut pb = b.to_player(UniformEvaluator).unwrap();
        let mut games = Vec::new();
        let stats = run_match(
            pa.as_mut(),
            pb.as_mut(),
            &Opening::<xiangqi::Game>::builtin(),
            config,
            |g, s| {
                games.push(g.clone());
                s.games() < stop_after
            },
        );
        (games, stats)
    }

    fn mcts(name: &str, simulations: u32) -> LocalPlayer {
        let config = SearchConfig { simulations, cheap_simulations: 1, ..SearchConfig::default() };
        LocalPlayer::Mcts { name: name.to_string(), config }
    }

    #[test]
    fn batched_matches_equal_sequential_ones() {
        let config = MatchConfig { games: 4, settings: GameSettings::default(), sprt: None };
        let greedy = LocalPlayer::Greedy { seed: 3 };
        let gumbel = LocalPlayer::Mcts {
            name: "gumbel".to_string(),
            config: SearchConfig {
                algorithm: crate::Algorithm::Gumbel,
                simulations: 16,
                cheap_simulations: 1,
                virtual_loss_batch: 3,
                ..SearchConfig::default()
            },
        };
        let puct = mcts("mcts", 16);
        // Levels draw their moves: the same draws whatever the order games are played in.
        let level = |s: u32| LocalPlayer::Level {
            name: format!("level {s}"),
            config: SearchConfig {
                simulations: 64,
                cheap_simulations: 1,
                ..SearchConfig::default()
            },
            strength: Strength::skill(s),
            seed: 11,
        };
        let (low, high) = (level(4), level(15));
        for (a, b) in [(&greedy, &puct), (&puct, &gumbel), (&low, &greedy), (&puct, &high)] {
            let (want_games, want) = sequential(a, b, &config, u32::MAX);
            for concurrency in [1, 3, 8] {
                let mut games = Vec::new();
                let got = run_match_batched(
                    a,
                    b,
                    &mut UniformEvaluator,
                    &mut UniformEvaluator,
                    &Opening::<xiangqi::Game>::builtin(),
                    &config,
                    concurrency,
                    |g, _| {
                        games.push(g.clone());
                        true
                    },
                )
                .unwrap();
                assert_eq!(got.stats, want, "{} vs {}, {concurrency}", a.name(), b.name());
                assert_eq!(games, want_games, "{} vs {}, {concurrency}", a.name(), b.name());
                let shared = run_match_batched_shared(
                    a,
                    b,
                    &mut UniformEvaluator,
                    &Opening::<xiangqi::Game>::builtin(),
                    &config,
                    concurrency,
                    |_, _| true,
                )
                .unwrap();
                assert_eq!(shared.stats, want);
            }
        }
        // Stopped by the caller after 3 games, with more games in flight.
        let (want_games, want) = sequential(&greedy, &puct, &config, 3);
        let mut games = Vec::new();
        let got = run_match_batched_shared(
            &greedy,
            &puct,
            &mut UniformEvaluator,
            &Opening::<xiangqi::Game>::builtin(),
            &config,
            4,
            |g, s| {
                games.push(g.clone());
                s.games() < 3
            },
        )
        .unwrap();
        assert_eq!((got.stats.games(), &got.stats), (3, &want));
        assert_eq!(games, want_games);
    }

    #[test]
    fn batches_gather_leaves_across_games() {
        let settings: GameSettings<xiangqi::Game> =
            GameSettings { max_plies: 40, ..GameSettings::default() };
        let config = MatchConfig { games: 8, settings, sprt: None };
        let a = mcts("a", 32);
        let mut eval = ScriptedEvaluator::uniform();
        let got = run_match_batched(
            &a,
            &LocalPlayer::Greedy { seed: 1 },
            &mut eval,
            &mut UniformEvaluator,
            &Opening::<xiangqi::Game>::builtin(),
            &config,
            8,
            |_, _| true,
        )
        .unwrap();
        let sizes = &eval.log().batch_sizes;
        let counters = got.batches[0];
        assert_eq!(counters.batches, sizes.len() as u64);
        assert_eq!(counters.evaluations, sizes.iter().sum::<usize>() as u64);
        assert_eq!(counters.max_batch, sizes.iter().copied().max().unwrap());
        assert_eq!(got.batches[1], BatchCounters::default());
        // Greedy answers at once, so every game waits on A: up to 8 games × 8 leaves.
        assert!(counters.max_batch > 8 && counters.max_batch <= 64, "{counters:?}");
        assert!(counters.mean_batch() > 8.0, "{counters:?}");

        // One evaluator for two searches: both players' leaves share each batch.
        let mut eval = ScriptedEvaluator::uniform();
        let got = run_match_batched_shared(
            &a,
            &mcts("b", 32),
            &mut eval,
            &Opening::<xiangqi::Game>::builtin(),
            &MatchConfig { games: 4, ..config },
            4,
            |_, _| true,
        )
        .unwrap();
        assert_eq!(got.stats.games(), 4);
        assert!(got.batches[0].max_batch > 8, "{:?}", got.batches);
        assert_eq!(got.batches[0].batches, eval.log().batch_sizes.len() as u64);
    }

    #[test]
    fn greedy_beats_random_in_a_batched_match() {
        let greedy = LocalPlayer::Greedy { seed: 7 };
        let random = LocalPlayer::Random { seed: 8 };
        let config = MatchConfig { games: 20, settings: GameSettings::default(), sprt: None };
        let got = run_match_batched_shared(
            &greedy,
            &random,
            &mut UniformEvaluator,
            &Opening::<xiangqi::Game>::builtin(),
            &config,
            6,
            |g, _| {
                assert!(g.forfeit.is_none());
                true
            },
        )
        .unwrap();
        assert_eq!(got.stats.games(), 20);
        assert!(got.stats.wdl.score() > 0.75, "{} {:?}", got.stats.wdl, got.stats.reasons);
        assert_eq!(got.batches, [BatchCounters::default(); 2]);
        assert_eq!(got.stats, sequential(&greedy, &random, &config, u32::MAX).1);
        // An SPRT stops both runners after the same game.
        let sprt = Some(Sprt::new(0.0, 100.0).unwrap());
        let config = MatchConfig { games: 200, sprt, ..config };
        let want = sequential(&greedy, &random, &config, u32::MAX).1;
        assert!(want.games() < 200 && want.sprt.unwrap().1 == SprtVerdict::AcceptH1);
        let batched = |config: &MatchConfig<xiangqi::Game>| {
            run_match_batched_shared(
                &greedy,
                &random,
                &mut UniformEvaluator,
                &Opening::<xiangqi::Game>::builtin(),
                config,
                16,
                |_, _| true,
            )
            .unwrap()
        };
        assert_eq!(batched(&config).stats, want);
        // However many games are asked for, the SPRT stops the match after the same game:
        // players that never wait on an evaluation start one game a lane per round, and the
        // finished games are tested between rounds. (Before, the first lane played every game
        // of the match first, so this one never ended.)
        assert_eq!(batched(&MatchConfig { games: u32::MAX, ..config }).stats, want);
    }

    /// An evaluator that always fails.
    struct Failing;

    impl Evaluator<xiangqi::Game> for Failing {
        type Error = io::Error;
        fn evaluate(
            &mut self,
            _: &[EvalRequest<'_, xiangqi::Game>],
            _: &mut EvalBuffer,
        ) -> io::Result<()> {
            Err(io::Error::other("device lost"))
        }
    }

    #[test]
    fn batched_match_errors() {
        let config = MatchConfig { games: 2, settings: GameSettings::default(), sprt: None };
        let a = mcts("a", 8);
        let b = LocalPlayer::Random { seed: 1 };
        let openings = Opening::<xiangqi::Game>::builtin();
        let run = |a: &LocalPlayer,
                   openings: &[Opening<xiangqi::Game>],
                   config: &MatchConfig<xiangqi::Game>| {
            run_match_batched(a, &b, &mut Failing, &mut Failing, openings, config, 2, |_, _| true)
        };
        let e = run(&a, &openings, &config).unwrap_err();
        assert!(matches!(e, BatchedMatchError::Evaluator { player: "A", .. }), "{e}");
        assert!(e.to_string().contains("device lost"), "{e}");
        assert!(matches!(run(&a, &[], &config), Err(BatchedMatchError::NoOpenings)));
        let timed = MatchConfig {
            settings: GameSettings {
                limit: MoveLimit {
                    movetime: Some(Duration::from_millis(10)),
                    ..MoveLimit::default()
                },
                ..config.settings
            },
            ..config
        };
        assert!(matches!(run(&a, &openings, &timed), Err(BatchedMatchError::Timed)));
        let bad = LocalPlayer::Mcts {
            name: "bad".to_string(),
            config: SearchConfig { c_puct: -1.0, ..SearchConfig::default() },
        };
        let e = run(&bad, &openings, &config).unwrap_err();
        assert!(matches!(e, BatchedMatchError::Config { player: "A", .. }), "{e}");
        // Without a search, a timed match is fine and no evaluator is called.
        let r = LocalPlayer::Random { seed: 2 };
        assert_eq!(run(&r, &openings, &timed).unwrap().stats.games(), 2);
    }
}
