//! The arena: players, games judged by the rules, matches with colours swapped, and the
//! statistics of a match (score, Elo with a 95% interval, SPRT).
//!
//! * A [`Player`] is anything that picks a move for a game ([`crate::GameEnv`]: xiangqi by
//!   default, or janggi) under a per-move [`MoveLimit`]:
//!   [`RandomPlayer`], [`GreedyPlayer`] (one-ply baseline), [`MctsPlayer`] (the search with any
//!   [`Evaluator`]), or, in the command-line tool, an external UCI/UCCI engine.
//! * [`play_game`] plays one game from an [`Opening`]. **The rules crate judges every game**:
//!   players only propose moves; the game's rules decide (xiangqi: checkmate, repetition,
//!   perpetual check and chase and the move limits; janggi: checkmate and the no-capture
//!   limit). A player that fails, proposes an illegal move, or exceeds its
//!   time (the move time plus [`MoveLimit::margin`]) loses that game by [`Forfeit`].
//! * [`run_match`] plays games in pairs over a list of openings, each opening once with each
//!   player as Red, and can stop early on an [`Sprt`] verdict.
//! * [`run_match_batched`] (and [`run_match_batched_shared`]) plays the same games between two
//!   [`LocalPlayer`]s many at a time in lockstep, so that the searches of all running games
//!   share each evaluation batch; with a deterministic evaluator the result is [`run_match`]'s.
//!
//! # Elo and its interval
//! [`Wdl::elo`] uses the logistic Elo model, `Elo(s) = −400 · log10(1/s − 1)` for a score
//! fraction `s`, with a **half-point prior**: half a win and half a loss are added to the counts
//! (one pseudo-game scored ½), so that `0 < s < 1` for every result. With `N' = N + 1`,
//! `s = (W + ½ + D/2) / N'` and the per-game variance of the trinomial
//! `σ² = [(W + ½)(1 − s)² + D(½ − s)² + (L + ½)s²] / N'`, the 95% interval is the normal
//! interval on the log-odds scale (delta method):
//! `Elo(s) ± 1.96 · σ/√N' · 400 / (ln 10 · s(1 − s))`. Both bounds are finite even at a 0% or
//! 100% score, the interval is symmetric about the estimate, and a 50% score gives exactly 0.
//!
//! # SPRT
//! [`Sprt`] is the generalised SPRT in the simplified form Fishtest used for trinomial results
//! (after Michel Van den Bergh), with logistic (not BayesElo) Elo: for the hypotheses
//! `H0: elo = elo0` and `H1: elo = elo1`, `sᵢ = 1 / (1 + 10^(−eloᵢ/400))`; from the results,
//! `s = w + d/2`, `var = (w + d/4) − s²` (fractions of `N` games) and `var_s = var / N`;
//! `LLR = (s1 − s0)(2s − s0 − s1) / (2 var_s)`. The test accepts H1 once
//! `LLR ≥ ln((1 − β)/α)` and H0 once `LLR ≤ ln(β/(1 − α))`. A count of zero is replaced by ½ so
//! that the variance is never zero (Fishtest waits instead).
//!
//! # Example
//! ```
//! use xiangqi::RuleSet;
//! use xiangqi_search::arena::{GameSettings, GreedyPlayer, MatchConfig, Opening, RandomPlayer, run_match};
//!
//! let mut greedy = GreedyPlayer::new(1);
//! let mut random = RandomPlayer::new(2);
//! let openings = Opening::<xiangqi::Game>::builtin();
//! let config = MatchConfig { games: 4, settings: GameSettings::default(), sprt: None };
//! let stats = run_match(&mut greedy, &mut random, &openings, &config, |_, _| true);
//! assert_eq!(stats.wdl.games(), 4);
//! let elo = stats.wdl.elo();
//! assert!(elo.lower.is_finite() && elo.upper.is_finite());
//! ```
//!
//! [`Game`]: xiangqi::Game
//! [`Evaluator`]: crate::Evaluator

// The files, lowest layer first (each uses only those before it): `opening` and `player`
// (neither uses the other), `game`, `stats`, `matches`, `batched`.
mod batched;
mod game;
mod matches;
mod opening;
mod player;
mod rating;
mod stats;

pub use crate::driver::{BatchCounters, drive_search};
pub use batched::{BatchedMatch, BatchedMatchError, run_match_batched, run_match_batched_shared};
pub use game::{ArenaGame, Forfeit, ForfeitKind, GameSettings, play_game};
pub use matches::{MatchConfig, run_match};
pub use opening::{JANGGI_OPENINGS, Opening, OpeningError, XIANGQI_OPENINGS, parse_openings};
pub use player::{
    GreedyPlayer, LocalPlayer, MctsPlayer, MoveLimit, Player, PlayerError, RandomPlayer,
};
pub use rating::{Pairing, Rating, fit_elo, fit_elo_with_intervals};
pub use stats::{
    EloEstimate, MatchStats, Sprt, SprtError, SprtVerdict, Wdl, elo_from_score, score_from_elo,
};
