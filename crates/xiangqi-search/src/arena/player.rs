//! Players: the [`Player`] trait and its per-move [`MoveLimit`], the baselines
//! ([`RandomPlayer`], [`GreedyPlayer`]), the search as a player ([`MctsPlayer`],
//! driven by [`drive_search`]) and the players a batched match drives itself ([`LocalPlayer`]).

use std::fmt;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;
use xiangqi::Move;

use crate::config::{Checked, SearchConfig};
use crate::driver::drive_search;
use crate::eval::{EvalBuffer, Evaluator};
use crate::game::GameEnv;
use crate::search::{Search, SearchResult};
use crate::selfplay::game_rng;
use crate::strength::Strength;

/// How long a player may think about one move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveLimit {
    /// Simulation (node) budget, for players that count them; `None` leaves it to the player.
    pub simulations: Option<u32>,
    /// Time per move; `None` for no time limit.
    pub movetime: Option<Duration>,
    /// Grace beyond `movetime` before a move counts as late (process start-up, pipes, the
    /// operating system). Only used with a `movetime`.
    pub margin: Duration,
}

impl Default for MoveLimit {
    /// 200 simulations, no time limit, a 1 s margin.
    fn default() -> Self {
        MoveLimit { simulations: Some(200), movetime: None, margin: Duration::from_secs(1) }
    }
}

impl MoveLimit {
    /// The latest a move may arrive after the player is asked: `movetime + margin`.
    pub fn deadline(&self) -> Option<Duration> {
        self.movetime.map(|t| t + self.margin)
    }
}

/// Why a player produced no usable move. Each loses the game ([`ForfeitKind`]).
///
/// [`ForfeitKind`]: super::ForfeitKind
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PlayerError {
    /// The player proposed a move that is not legal, or text that is not a move.
    #[error("illegal move: {0}")]
    Illegal(String),
    /// The player did not answer within its time.
    #[error("timeout: {0}")]
    Timeout(String),
    /// The player (an engine process) died or closed its output.
    #[error("crash: {0}")]
    Crashed(String),
    /// Any other failure (an evaluator error, an engine that reports no move, ...).
    #[error("{0}")]
    Failed(String),
}

/// Something that chooses moves: a baseline, the search, or an external engine.
///
/// Players only propose moves; the arena checks them and the rules judge the game.
pub trait Player<G: GameEnv> {
    /// A short name for tables and PGN tags.
    fn name(&self) -> &str;

    /// Called before each game with the game's number in the match (seed per-game randomness
    /// from it; an engine gets `ucinewgame`).
    ///
    /// # Errors
    /// A [`PlayerError`] if the player cannot play (it then forfeits the game).
    fn new_game(&mut self, game_id: u64) -> Result<(), PlayerError> {
        let _ = game_id;
        Ok(())
    }

    /// Chooses a move for the side to move in `game` (which is not over), within `limit`.
    ///
    /// # Errors
    /// A [`PlayerError`] when no move can be given; the player then loses the game.
    fn choose_move(&mut self, game: &G, limit: &MoveLimit) -> Result<Move, PlayerError>;
}

impl<G: GameEnv, P: Player<G> + ?Sized> Player<G> for Box<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn new_game(&mut self, game_id: u64) -> Result<(), PlayerError> {
        (**self).new_game(game_id)
    }
    fn choose_move(&mut self, game: &G, limit: &MoveLimit) -> Result<Move, PlayerError> {
        (**self).choose_move(game, limit)
    }
}

/// Plays a uniformly random legal move. Game `i` of a match draws from a generator seeded by
/// (`seed`, `i`), so results do not depend on the order games are played in.
#[derive(Clone, Debug)]
pub struct RandomPlayer {
    seed: u64,
    rng: ChaCha8Rng,
}

impl RandomPlayer {
    /// A random player with a master seed.
    pub fn new(seed: u64) -> RandomPlayer {
        RandomPlayer { seed, rng: game_rng(seed, 0) }
    }
}

fn no_move() -> PlayerError {
    PlayerError::Failed("asked to move in a position without legal moves".to_string())
}

impl<G: GameEnv> Player<G> for RandomPlayer {
    fn name(&self) -> &str {
        "random"
    }
    fn new_game(&mut self, game_id: u64) -> Result<(), PlayerError> {
        self.rng = game_rng(self.seed, game_id);
        Ok(())
    }
    fn choose_move(&mut self, game: &G, _limit: &MoveLimit) -> Result<Move, PlayerError> {
        let moves = game.legal_moves_vec();
        if moves.is_empty() {
            return Err(no_move());
        }
        Ok(moves[self.rng.random_range(0..moves.len())])
    }
}

/// A one-ply baseline: a move that wins at once if there is one (checkmate, leaving no legal
/// move, or any other verdict of the rules in the mover's favour), else the capture of the most
/// valuable piece ([`Material::capture_value`](crate::Material::capture_value): for xiangqi
/// chariot 9, cannon 4.5, horse 4, advisor and elephant 2, soldier 1 pawn; for janggi the
/// conventional points, chariot 13, cannon 7, horse 5, elephant and guard 3, soldier 2), else a
/// random legal move (a janggi pass included). Ties are broken at random; seeded per game like [`RandomPlayer`].
#[derive(Clone, Debug)]
pub struct GreedyPlayer {
    seed: u64,
    rng: ChaCha8Rng,
}

impl GreedyPlayer {
    /// A greedy player with a master seed.
    pub fn new(seed: u64) -> GreedyPlayer {
        GreedyPlayer { seed, rng: game_rng(seed, 0) }
    }
}

impl<G: GameEnv> Player<G> for GreedyPlayer {
    fn name(&self) -> &str {
        "greedy"
    }
    fn new_game(&mut self, game_id: u64) -> Result<(), PlayerError> {
        self.rng = game_rng(self.seed, game_id);
        Ok(())
    }
    fn choose_move(&mut self, game: &G, _limit: &MoveLimit) -> Result<Move, PlayerError> {
        let moves = game.legal_moves_vec();
        if moves.is_empty() {
            return Err(no_move());
        }
        let wins: Vec<Move> = moves.iter().copied().filter(|&m| game.is_winning_move(m)).collect();
        if !wins.is_empty() {
            return Ok(wins[self.rng.random_range(0..wins.len())]);
        }
        let value = |m: Move| game.capture_value(m);
        let best = moves.iter().map(|&m| value(m)).max().unwrap_or(0);
        let pool: Vec<Move> = if best > 0 {
            moves.iter().copied().filter(|&m| value(m) == best).collect()
        } else {
            moves.to_vec()
        };
        Ok(pool[self.rng.random_range(0..pool.len())])
    }
}

/// Most simulations a timed search starts with (it stops at its deadline long before).
const TIMED_SIMULATIONS: u32 = 1 << 20;

/// The search as a player: temperature 0 (the search's best move), no noise, a fresh tree for
/// every move. Generic over the evaluator; with [`crate::UniformEvaluator`] it is guided only
/// by the rules' terminal values.
///
/// With a [`MoveLimit::movetime`] it searches until that time (or the simulation budget, if
/// one is given) runs out; otherwise it runs the budget, or `default_simulations`.
pub struct MctsPlayer<E> {
    name: String,
    evaluator: E,
    config: Checked<SearchConfig>,
    buffer: EvalBuffer,
    rng: ChaCha8Rng,
    /// A level below full strength, its master seed, and the move draws of the current game.
    level: Option<(Strength, u64, ChaCha8Rng)>,
}

impl<E> MctsPlayer<E> {
    /// A player searching with `evaluator` and `config` (its `simulations` is the default
    /// budget).
    ///
    /// # Errors
    /// The config's first bad key ([`SearchConfig::validate`]).
    pub fn new(
        name: impl Into<String>,
        evaluator: E,
        config: SearchConfig,
    ) -> Result<MctsPlayer<E>, crate::ConfigError> {
        Ok(MctsPlayer {
            name: name.into(),
            evaluator,
            config: Checked::new(config)?,
            buffer: EvalBuffer::new(),
            rng: ChaCha8Rng::seed_from_u64(0),
            level: None,
        })
    }

    /// The same player at `strength` ([`Strength`]: fewer simulations and a drawn move below
    /// level 20); game `i` of a match draws its moves from a generator seeded by (`seed`, `i`).
    #[must_use]
    pub fn with_strength(mut self, strength: Strength, seed: u64) -> MctsPlayer<E> {
        self.level = Some((strength, seed, game_rng(seed, 0)));
        self
    }

    /// The search settings.
    pub fn config(&self) -> &Checked<SearchConfig> {
        &self.config
    }

    /// Searches `game` within `limit` and returns the search's view of the root.
    ///
    /// # Errors
    /// [`PlayerError::Failed`] if the game is over or the evaluator fails.
    pub fn search<G: GameEnv>(
        &mut self,
        game: &G,
        limit: &MoveLimit,
    ) -> Result<SearchResult<Move>, PlayerError>
    where
        E: Evaluator<G>,
    {
        if game.outcome().is_some() {
            return Err(no_move());
        }
        let mut search = Search::new(game.clone(), self.config.clone());
        let batch = self.config.virtual_loss_batch as usize;
        let fail = |e: E::Error| PlayerError::Failed(format!("evaluator: {e}"));
        match limit.movetime {
            Some(t) => {
                let deadline = Instant::now() + t;
                let budget = limit.simulations.unwrap_or(TIMED_SIMULATIONS).clamp(1, 1 << 24);
                search.start(budget, false, &mut self.rng);
                drive_search(&mut search, &mut self.evaluator, &mut self.buffer, batch, |_| {
                    Instant::now() >= deadline
                })
                .map_err(fail)?;
            }
            None => {
                let budget = limit.simulations.unwrap_or(self.config.simulations).clamp(1, 1 << 24);
                search.start(budget, false, &mut self.rng);
                drive_search(&mut search, &mut self.evaluator, &mut self.buffer, batch, |_| false)
                    .map_err(fail)?;
            }
        }
        Ok(search.result())
    }
}

impl<E> fmt::Debug for MctsPlayer<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MctsPlayer").field("name", &self.name).finish_non_exhaustive()
    }
}

impl<G: GameEnv, E: Evaluator<G>> Player<G> for MctsPlayer<E> {
    fn name(&self) -> &str {
        &self.name
    }
    fn new_game(&mut self, game_id: u64) -> Result<(), PlayerError> {
        if let Some((_, seed, rng)) = &mut self.level {
            *rng = game_rng(*seed, game_id);
        }
        Ok(())
    }
    fn choose_move(&mut self, game: &G, limit: &MoveLimit) -> Result<Move, PlayerError> {
        let Some((strength, _, _)) = self.level else {
            return Ok(self.search(game, limit)?.best);
        };
        if game.outcome().is_some() {
            return Err(no_move());
        }
        let full = limit.simulations.unwrap_or(self.config.simulations);
        let limit = MoveLimit { simulations: Some(strength.simulations(full)), ..*limit };
        let mut search = Search::new(game.clone(), self.config.clone());
        let batch = self.config.virtual_loss_batch as usize;
        let budget = limit.simulations.unwrap_or(1).clamp(1, 1 << 24);
        search.start(budget, false, &mut self.rng);
        let fail = |e: E::Error| PlayerError::Failed(format!("evaluator: {e}"));
        let deadline = limit.movetime.map(|t| Instant::now() + t);
        drive_search(&mut search, &mut self.evaluator, &mut self.buffer, batch, |_| {
            deadline.is_some_and(|d| Instant::now() >= d)
        })
        .map_err(fail)?;
        let rng = match &mut self.level {
            Some((_, _, rng)) => rng,
            None => &mut self.rng,
        };
        strength.choose(&search, |_| true, rng).ok_or_else(no_move)
    }
}

/// A player that [`run_match_batched`] drives itself, so that the leaves of many games' searches
/// can share one evaluation batch.
///
/// [`run_match_batched`]: super::run_match_batched
#[derive(Clone, Debug, PartialEq)]
pub enum LocalPlayer {
    /// A [`RandomPlayer`] with this master seed.
    Random {
        /// The master seed (game `i` plays from a generator seeded by (`seed`, `i`)).
        seed: u64,
    },
    /// A [`GreedyPlayer`] with this master seed.
    Greedy {
        /// The master seed (game `i` plays from a generator seeded by (`seed`, `i`)).
        seed: u64,
    },
    /// The search, exactly as [`MctsPlayer`] plays it: temperature 0, no noise, a fresh tree
    /// for every move, [`MoveLimit::simulations`] simulations a move or else
    /// `config.simulations`, and `config.virtual_loss_batch` leaves per tree per batch.
    Mcts {
        /// The name in tables and PGN tags.
        name: String,
        /// The search settings.
        config: SearchConfig,
    },
    /// The search at a skill level ([`MctsPlayer::with_strength`]): `strength.simulations` of
    /// the budget ([`MoveLimit::simulations`], else `config.simulations`) and a move drawn as
    /// [`Strength::choose`] does, from a generator seeded by (`seed`, game number).
    Level {
        /// The name in tables and PGN tags.
        name: String,
        /// The search settings.
        config: SearchConfig,
        /// The level.
        strength: Strength,
        /// The master seed of the move draws.
        seed: u64,
    },
}

impl LocalPlayer {
    /// The name in tables and PGN tags: `random`, `greedy`, or the search's name.
    pub fn name(&self) -> &str {
        match self {
            LocalPlayer::Random { .. } => "random",
            LocalPlayer::Greedy { .. } => "greedy",
            LocalPlayer::Mcts { name, .. } | LocalPlayer::Level { name, .. } => name,
        }
    }

    /// Whether the player searches (and so needs an evaluator).
    pub fn is_mcts(&self) -> bool {
        matches!(self, LocalPlayer::Mcts { .. } | LocalPlayer::Level { .. })
    }

    /// The search settings of a player that searches.
    pub fn search_config(&self) -> Option<&SearchConfig> {
        match self {
            LocalPlayer::Mcts { config, .. } | LocalPlayer::Level { config, .. } => Some(config),
            _ => None,
        }
    }

    /// The same player for the sequential [`run_match`]; an MCTS player searches with
    /// `evaluator` (the others ignore it).
    ///
    /// # Errors
    /// An MCTS player's invalid config ([`SearchConfig::validate`]).
    ///
    /// [`run_match`]: super::run_match
    pub fn to_player<'e, G: GameEnv, E: Evaluator<G> + 'e>(
        &self,
        evaluator: E,
    ) -> Result<Box<dyn Player<G> + 'e>, crate::ConfigError> {
        Ok(match self {
            LocalPlayer::Random { seed } => Box::new(RandomPlayer::new(*seed)),
            LocalPlayer::Greedy { seed } => Box::new(GreedyPlayer::new(*seed)),
            LocalPlayer::Mcts { name, config } => {
                Box::new(MctsPlayer::new(name.clone(), evaluator, config.clone())?)
            }
            LocalPlayer::Level { name, config, strength, seed } => Box::new(
                MctsPlayer::new(name.clone(), evaluator, config.clone())?
                    .with_strength(*strength, *seed),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use xiangqi::{Color, Game, Position, RuleSet};

    use crate::UniformEvaluator;

    use super::*;

    fn game(fen: &str) -> Game {
        Game::new(Position::from_fen(fen).unwrap(), RuleSet::Asian)
    }

    #[test]
    fn greedy_mates_in_one() {
        // b7-b9 mates (see the search tests); a8-f8 wins too (Black is left without a move).
        let g = game("4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1");
        for seed in 0..10 {
            let mut p = GreedyPlayer::new(seed);
            let m = p.choose_move(&g, &MoveLimit::default()).unwrap();
            let mut after = g.clone();
            let o = after.play(m).unwrap().expect("the move ends the game");
            assert_eq!(o.winner(), Some(Color::Red), "{m}");
        }
    }

    #[test]
    fn greedy_takes_the_chariot_over_a_soldier() {
        // The red chariot on e4 can take a black soldier on e5 or a black chariot on a4.
        let g = game("3k5/9/9/9/4p4/r3R4/9/9/9/5K3 w - - 0 1");
        let soldier = g.position().parse_uci("e4e5").unwrap();
        let chariot = g.position().parse_uci("e4a4").unwrap();
        assert!(g.legal_moves().contains(&soldier));
        for seed in 0..10 {
            let mut p = GreedyPlayer::new(seed);
            assert_eq!(p.choose_move(&g, &MoveLimit::default()).unwrap(), chariot);
        }
    }

    #[test]
    fn mcts_player_mates_and_respects_movetime() {
        let g = game("4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1");
        let mut p = MctsPlayer::new("mcts", UniformEvaluator, SearchConfig::default()).unwrap();
        let limit = MoveLimit { simulations: Some(400), ..MoveLimit::default() };
        let m = p.choose_move(&g, &limit).unwrap();
        let mut after = g.clone();
        assert_eq!(
            after.play(m).unwrap().and_then(xiangqi::Outcome::winner),
            Some(Color::Red),
            "{m}"
        );
        let timed = MoveLimit {
            simulations: None,
            movetime: Some(Duration::from_millis(50)),
            margin: Duration::ZERO,
        };
        // Stopped by the clock: well within seconds (a generous bound for a loaded machine),
        // and before the simulation budget of a timed search, which alone would take far longer.
        let start = Instant::now();
        let r = p.search(&Game::new(Position::start(), RuleSet::Asian), &timed).unwrap();
        let took = start.elapsed();
        assert!(took < Duration::from_secs(5), "timed out: a 50 ms search took {took:?}");
        assert!(r.total_visits() > 0);
        assert!(
            r.total_visits() < TIMED_SIMULATIONS / 4,
            "{} visits in {took:?}: the search ran its budget, not its time",
            r.total_visits()
        );
    }
}
