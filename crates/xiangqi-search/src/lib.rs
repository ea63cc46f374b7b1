//! Search for xiangqi-zero, for both games of the family (xiangqi and janggi): the game
//! interface [`GameEnv`], the batched [`Evaluator`] interface, Monte Carlo tree search (PUCT,
//! or a Gumbel root with sequential halving) on an arena [`Tree`], the self-play actor pool that
//! batches leaves across games, game records (PGN) and the replay shard format.
//!
//! The search is generic over the small [`SearchGame`] trait, and everything above it
//! (self-play, records, shards, the arena) over [`GameEnv`]; both are implemented for
//! [`xiangqi::Game`] and [`xiangqi::janggi::Game`]. The rules judge every terminal node, never
//! the evaluator. This crate
//! knows no tensors: a neural network implements [`Evaluator`] in another crate.
//!
//! # Example
//! ```
//! use rand::SeedableRng;
//! use rand_chacha::ChaCha8Rng;
//! use xiangqi::{Color, Game, Position, RuleSet};
//! use xiangqi_search::{Checked, EvalBuffer, Search, SearchConfig, UniformEvaluator};
//!
//! // Red to move wins at once, e.g. b7-b9 mate; no network, only the rules' verdicts.
//! let pos = Position::from_fen("4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1").unwrap();
//! let mut game = Game::new(pos, RuleSet::Asian);
//! // Settings are checked once, before the search takes them.
//! let config = Checked::new(SearchConfig { c_puct: 1.25, ..SearchConfig::default() }).unwrap();
//! let mut search = Search::new(game.clone(), config);
//! let mut rng = ChaCha8Rng::seed_from_u64(1);
//! let result = search
//!     .run(400, false, &mut rng, &mut UniformEvaluator, &mut EvalBuffer::new())
//!     .unwrap();
//! assert_eq!(result.total_visits(), 400);
//! assert!(result.best_value > 0.99); // a won position for the side to move
//! let outcome = game.play(result.best).unwrap().expect("the game is over");
//! assert_eq!(outcome.winner(), Some(Color::Red));
//! ```

pub mod arena;
pub mod config;
pub mod driver;
pub mod eval;
pub mod game;
pub mod import;
pub mod label;
pub mod record;
pub mod resign;
pub mod search;
pub mod selfplay;
pub mod shard;
pub mod strength;
pub mod tactics;
pub mod tree;

pub use config::{
    Algorithm, Checked, ConfigError, GumbelInterior, RecordedValue, SearchConfig, SelfPlayConfig,
    Validate, WinCheck,
};
pub use driver::{BatchCounters, Lane, Lockstep, drive_search};
pub use eval::{EvalBuffer, EvalLog, EvalRequest, Evaluator, ScriptedEvaluator, UniformEvaluator};
pub use game::{
    Encoding, GameEnv, GameKind, GameRules, Material, NetView, Notation, ParseGameKindError,
    SearchGame,
};
pub use record::{GameRecord, PgnError, SampleTarget, iccs, parse_iccs, parse_pgn_moves};
pub use resign::ResignCalibration;
pub use search::{MAX_POLICY_SURPRISE, Search, SearchResult, policy_surprise};
pub use selfplay::{
    ForkPool, ForkPools, InFlight, SelfPlayError, SelfPlayEvent, SelfPlayStats, game_rng,
    play_games, play_games_continuing, play_games_forking, play_games_from,
};
pub use shard::{
    FORMAT_VERSION, LOCAL_WORKER, SampleRef, Shard, ShardError, UNKNOWN_ENDING, UNKNOWN_GENERATION,
    UNKNOWN_MATERIAL, UNKNOWN_SURPRISE, list_shards, read_shard, read_shard_from, write_shard,
    write_shard_to,
};
pub use strength::{LevelError, MAX_LEVEL, RatedPlayer, Strength, StrengthTable};
pub use tree::{NodeId, NodeStatus, Tree};
