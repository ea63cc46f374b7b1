//! The arena: players, games judged by the rules, matches with colours swapped, and the
//! statistics of a match (score, Elo with a 95% interval, SPRT).
//!
//! * A [`Player`] is anything that picks a move for a [`Game`] under a per-move [`MoveLimit`]:
//!   [`RandomPlayer`], [`GreedyPlayer`] (one-ply baseline), [`MctsPlayer`] (the search with any
//!   [`Evaluator`]), or, in the command-line tool, an external UCI/UCCI engine.
//! * [`play_game`] plays one game from an [`Opening`]. **The rules crate judges every game**:
//!   players only propose moves; [`Game`] decides checkmate, repetition, perpetual check and
//!   chase and the move limits. A player that fails, proposes an illegal move, or exceeds its
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
//! let openings = Opening::builtin();
//! let config = MatchConfig { games: 4, settings: GameSettings::default(), sprt: None };
//! let stats = run_match(&mut greedy, &mut random, &openings, &config, |_, _| true);
//! assert_eq!(stats.wdl.games(), 4);
//! let elo = stats.wdl.elo();
//! assert!(elo.lower.is_finite() && elo.upper.is_finite());
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;
use xiangqi::{Color, Game, Move, Outcome, OutcomeReason, Position, RuleSet};

use crate::config::SearchConfig;
use crate::eval::{EvalBuffer, EvalRequest, Evaluator, recycle};
use crate::game::SearchGame;
use crate::record::GameRecord;
use crate::search::{Search, SearchResult};
use crate::selfplay::{BoxError, game_rng};

// ----- players -------------------------------------------------------------------------------

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

impl PlayerError {
    /// The kind of forfeit this error causes.
    pub fn kind(&self) -> ForfeitKind {
        match self {
            PlayerError::Illegal(_) => ForfeitKind::IllegalMove,
            PlayerError::Timeout(_) => ForfeitKind::Timeout,
            PlayerError::Crashed(_) => ForfeitKind::Crash,
            PlayerError::Failed(_) => ForfeitKind::Error,
        }
    }
}

/// Something that chooses moves: a baseline, the search, or an external engine.
///
/// Players only propose moves; the arena checks them and the rules judge the game.
pub trait Player {
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
    fn choose_move(&mut self, game: &Game, limit: &MoveLimit) -> Result<Move, PlayerError>;
}

impl<P: Player + ?Sized> Player for Box<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn new_game(&mut self, game_id: u64) -> Result<(), PlayerError> {
        (**self).new_game(game_id)
    }
    fn choose_move(&mut self, game: &Game, limit: &MoveLimit) -> Result<Move, PlayerError> {
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

impl Player for RandomPlayer {
    fn name(&self) -> &str {
        "random"
    }
    fn new_game(&mut self, game_id: u64) -> Result<(), PlayerError> {
        self.rng = game_rng(self.seed, game_id);
        Ok(())
    }
    fn choose_move(&mut self, game: &Game, _limit: &MoveLimit) -> Result<Move, PlayerError> {
        let moves = game.legal_moves();
        if moves.is_empty() {
            return Err(no_move());
        }
        Ok(moves[self.rng.random_range(0..moves.len())])
    }
}

/// A one-ply baseline: a move that wins at once if there is one (checkmate, leaving no legal
/// move, or any other verdict of the rules in the mover's favour), else the capture of the most
/// valuable piece ([`xiangqi::PieceKind::value`]), else a random legal move. Ties are broken at
/// random; seeded per game like [`RandomPlayer`].
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

impl Player for GreedyPlayer {
    fn name(&self) -> &str {
        "greedy"
    }
    fn new_game(&mut self, game_id: u64) -> Result<(), PlayerError> {
        self.rng = game_rng(self.seed, game_id);
        Ok(())
    }
    fn choose_move(&mut self, game: &Game, _limit: &MoveLimit) -> Result<Move, PlayerError> {
        let moves = game.legal_moves();
        if moves.is_empty() {
            return Err(no_move());
        }
        let mover = game.position().turn();
        let wins: Vec<Move> = moves
            .iter()
            .copied()
            .filter(|&m| {
                let mut g = game.clone();
                g.play_unchecked(m).and_then(Outcome::winner) == Some(mover)
            })
            .collect();
        if !wins.is_empty() {
            return Ok(wins[self.rng.random_range(0..wins.len())]);
        }
        let value = |m: Move| game.position().piece_at(m.to()).map_or(0, |p| p.kind.value());
        let best = moves.iter().map(|&m| value(m)).max().unwrap_or(0);
        let pool: Vec<Move> = if best > 0 {
            moves.iter().copied().filter(|&m| value(m) == best).collect()
        } else {
            moves.to_vec()
        };
        Ok(pool[self.rng.random_range(0..pool.len())])
    }
}

/// Drives a started `search` with `evaluator` until it has run its simulations or `stop`
/// (asked after every evaluation batch) returns true. At least one batch is evaluated, so the
/// root has priors afterwards. `batch` is the number of leaves gathered per batch.
///
/// # Errors
/// The evaluator's error.
pub fn drive_search<G: SearchGame, E: Evaluator<G>>(
    search: &mut Search<G>,
    evaluator: &mut E,
    buffer: &mut EvalBuffer,
    batch: usize,
    mut stop: impl FnMut(&Search<G>) -> bool,
) -> Result<(), E::Error> {
    let mut spare = Vec::new();
    loop {
        search.gather(batch.max(1));
        let mut requests = recycle(spare);
        search.requests(&mut requests);
        buffer.prepare(&requests);
        evaluator.evaluate(&requests, buffer)?;
        spare = recycle(requests);
        search.apply(buffer, 0);
        if search.is_done() || stop(search) {
            return Ok(());
        }
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
    config: SearchConfig,
    buffer: EvalBuffer,
    rng: ChaCha8Rng,
}

impl<E: Evaluator<Game>> MctsPlayer<E> {
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
        config.validate()?;
        Ok(MctsPlayer {
            name: name.into(),
            evaluator,
            config,
            buffer: EvalBuffer::new(),
            rng: ChaCha8Rng::seed_from_u64(0),
        })
    }

    /// The search settings.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// Searches `game` within `limit` and returns the search's view of the root.
    ///
    /// # Errors
    /// [`PlayerError::Failed`] if the game is over or the evaluator fails.
    pub fn search(
        &mut self,
        game: &Game,
        limit: &MoveLimit,
    ) -> Result<SearchResult<Move>, PlayerError> {
        if game.is_over() {
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

impl<E: Evaluator<Game>> Player for MctsPlayer<E> {
    fn name(&self) -> &str {
        &self.name
    }
    fn choose_move(&mut self, game: &Game, limit: &MoveLimit) -> Result<Move, PlayerError> {
        Ok(self.search(game, limit)?.best)
    }
}

// ----- openings ------------------------------------------------------------------------------

/// The built-in openings: a name and the first moves from the start position (UCI, ranks 0–9).
pub const BUILTIN_OPENINGS: [(&str, &str); 8] = [
    ("central cannon vs screen horses", "h2e2 h9g7 h0g2 i9h9 i0h0 b9c7"),
    ("same-direction cannons", "h2e2 h7e7 h0g2 h9g7"),
    ("opposite-direction cannons", "h2e2 b7e7 h0g2 b9c7"),
    ("elephant opening", "c0e2 h7e7 b0c2 h9g7"),
    ("pawn opening vs cannon behind pawn", "c3c4 b7c7 h2e2 c9e7"),
    ("horse opening", "h0g2 h9g7 g3g4 g6g5"),
    ("palace-crossing cannon", "h2d2 h9g7 h0g2 i9h9"),
    ("central cannon, chariot across the river", "h2e2 h9g7 h0g2 i9h9 i0h0 g6g5 h0h6"),
];

/// An opening line that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("opening {name}: {reason}")]
pub struct OpeningError {
    /// The opening's name (for a file: `line N`).
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

/// Where games of a match begin: a start position and moves already played from it (all
/// checked legal). The moves count as played: repetitions and clocks see them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opening {
    name: String,
    start: Position,
    moves: Vec<Move>,
}

impl Opening {
    /// An opening from a start position and moves, checked to be legal.
    ///
    /// # Errors
    /// An [`OpeningError`] naming the first illegal move.
    pub fn new(
        name: impl Into<String>,
        start: Position,
        moves: Vec<Move>,
    ) -> Result<Opening, OpeningError> {
        let name = name.into();
        let mut game = Game::new(start, RuleSet::Asian);
        for (i, &m) in moves.iter().enumerate() {
            game.play(m).map_err(|e| OpeningError {
                name: name.clone(),
                reason: format!("move {} '{m}': {e}", i + 1),
            })?;
        }
        Ok(Opening { name, start, moves })
    }

    /// Reads one line: a FEN, a FEN followed by `moves M1 M2 ...`, or a sequence of UCI moves
    /// (ranks 0–9) from the start position; `startpos moves ...` is accepted too.
    ///
    /// # Errors
    /// An [`OpeningError`] for a bad FEN or a malformed or illegal move.
    pub fn parse(name: impl Into<String>, line: &str) -> Result<Opening, OpeningError> {
        let name = name.into();
        let err = |reason: String| OpeningError { name: name.clone(), reason };
        let line = line.trim();
        let (head, moves_text) = match line.split_once(" moves ") {
            Some((h, m)) => (h.trim(), m),
            None if line.ends_with(" moves") => (line.trim_end_matches(" moves").trim(), ""),
            None => (line, ""),
        };
        let (start, moves_text) = if head.contains('/') {
            (Position::from_fen(head).map_err(|e| err(e.to_string()))?, moves_text)
        } else if head == "startpos" {
            (Position::start(), moves_text)
        } else if moves_text.is_empty() {
            (Position::start(), head)
        } else {
            return Err(err(format!("'{head}' is neither a FEN nor startpos")));
        };
        let mut pos = start;
        let mut moves = Vec::new();
        for (i, text) in moves_text.split_ascii_whitespace().enumerate() {
            let m = pos.parse_uci(text).map_err(|e| err(format!("move {}: {e}", i + 1)))?;
            pos.play_unchecked(m);
            moves.push(m);
        }
        Opening::new(name, start, moves)
    }

    /// The [`BUILTIN_OPENINGS`].
    pub fn builtin() -> Vec<Opening> {
        BUILTIN_OPENINGS
            .iter()
            .filter_map(|(name, line)| Opening::parse(*name, line).ok())
            .collect()
    }

    /// The opening's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The start position.
    pub fn start(&self) -> &Position {
        &self.start
    }

    /// The moves played from the start position.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// The game after the opening moves, under `rules`.
    pub fn game(&self, rules: RuleSet) -> Game {
        let mut game = Game::new(self.start, rules);
        for &m in &self.moves {
            if game.is_over() {
                break;
            }
            game.play_unchecked(m);
        }
        game
    }
}

/// Reads an openings file: one opening per line ([`Opening::parse`]); blank lines and lines
/// starting with `#` are skipped. Openings are named `line N`.
///
/// # Errors
/// The first bad line's [`OpeningError`]; an error too if the text holds no opening.
pub fn parse_openings(text: &str) -> Result<Vec<Opening>, OpeningError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(Opening::parse(format!("line {}", i + 1), line)?);
    }
    if out.is_empty() {
        return Err(OpeningError {
            name: "file".to_string(),
            reason: "no opening (one FEN or move sequence per line)".to_string(),
        });
    }
    Ok(out)
}

// ----- games ---------------------------------------------------------------------------------

/// Why a player lost a game without the rules deciding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForfeitKind {
    /// It proposed an illegal or unreadable move.
    IllegalMove,
    /// It exceeded its time.
    Timeout,
    /// Its process died.
    Crash,
    /// Any other failure.
    Error,
}

impl ForfeitKind {
    /// Every kind.
    pub const ALL: [ForfeitKind; 4] =
        [ForfeitKind::IllegalMove, ForfeitKind::Timeout, ForfeitKind::Crash, ForfeitKind::Error];

    /// The name used in tables and PGN (`illegal_move`, `timeout`, `crash`, `error`).
    pub const fn name(self) -> &'static str {
        match self {
            ForfeitKind::IllegalMove => "illegal_move",
            ForfeitKind::Timeout => "timeout",
            ForfeitKind::Crash => "crash",
            ForfeitKind::Error => "error",
        }
    }

    /// Index in [`ForfeitKind::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ForfeitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A game lost by a player's failure rather than by the rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forfeit {
    /// The side that lost.
    pub loser: Color,
    /// How.
    pub kind: ForfeitKind,
    /// The details (the move text, the time taken, the exit status, ...).
    pub detail: String,
}

/// Settings of every game of a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GameSettings {
    /// The rule set that judges the games.
    pub rules: RuleSet,
    /// Plies (opening included) after which an undecided game is stopped and scored as a draw
    /// ([`OutcomeReason::LengthCap`]; not a rule verdict).
    pub max_plies: u32,
    /// The limit of every move.
    pub limit: MoveLimit,
}

impl Default for GameSettings {
    /// Asian rules, 600 plies, [`MoveLimit::default`].
    fn default() -> Self {
        GameSettings { rules: RuleSet::Asian, max_plies: 600, limit: MoveLimit::default() }
    }
}

/// A finished arena game.
#[derive(Clone, Debug, PartialEq)]
pub struct ArenaGame {
    /// The moves and the verdict. A forfeit is recorded as a win for the other side with reason
    /// [`OutcomeReason::Resignation`] (the rules have no forfeit verdict); see `forfeit`.
    pub record: GameRecord,
    /// Red's name.
    pub red: String,
    /// Black's name.
    pub black: String,
    /// The opening's name.
    pub opening: String,
    /// Set when a player lost by failing rather than by the rules.
    pub forfeit: Option<Forfeit>,
}

impl ArenaGame {
    /// The game's outcome.
    pub fn outcome(&self) -> Outcome {
        self.record.outcome
    }

    /// Writes the game in the PGN form of self-play ([`GameRecord::write_pgn`]), with
    /// `[Event "{event}"]`, the players' names in `[Red]` and `[Black]`, an `[Opening]` tag, and
    /// for a forfeit `[Termination "{kind}"]` with a `[Forfeit "..."]` tag giving the details.
    ///
    /// # Errors
    /// I/O errors of `w`.
    pub fn write_pgn<W: Write>(&self, w: &mut W, event: &str) -> io::Result<()> {
        let mut buf = Vec::new();
        self.record.write_pgn(&mut buf)?;
        let text = String::from_utf8_lossy(&buf);
        for line in text.lines() {
            if line.starts_with("[Event ") {
                writeln!(w, "[Event \"{}\"]", escape_tag(event))?;
            } else if line.starts_with("[Red ") {
                writeln!(w, "[Red \"{}\"]", escape_tag(&self.red))?;
            } else if line.starts_with("[Black ") {
                writeln!(w, "[Black \"{}\"]", escape_tag(&self.black))?;
            } else if line.starts_with("[Termination ") {
                match &self.forfeit {
                    Some(f) => {
                        writeln!(w, "[Termination \"{}\"]", f.kind)?;
                        writeln!(
                            w,
                            "[Forfeit \"{} {}: {}\"]",
                            f.loser,
                            f.kind,
                            escape_tag(&f.detail)
                        )?;
                    }
                    None => writeln!(w, "{line}")?,
                }
                writeln!(w, "[Opening \"{}\"]", escape_tag(&self.opening))?;
            } else {
                writeln!(w, "{line}")?;
            }
        }
        Ok(())
    }
}

/// A PGN tag value: backslashes and quotes escaped, line breaks and control characters dropped,
/// at most 200 characters.
fn escape_tag(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().filter(|c| !c.is_control()).take(200) {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Plays one game from `opening` between `red` and `black` (the players of the opening's side
/// to move and the other side, by colour) and returns it. Never fails: a player's failure is a
/// [`Forfeit`]. Every verdict not a forfeit comes from the rules ([`Game`]), or from
/// `max_plies` (a draw by [`OutcomeReason::LengthCap`]).
pub fn play_game(
    red: &mut dyn Player,
    black: &mut dyn Player,
    opening: &Opening,
    settings: &GameSettings,
    game_id: u64,
) -> ArenaGame {
    let mut game = opening.game(settings.rules);
    let mut forfeit = None;
    for color in [Color::Red, Color::Black] {
        let player: &mut dyn Player = if color == Color::Red { &mut *red } else { &mut *black };
        if let Err(e) = player.new_game(game_id) {
            forfeit.get_or_insert(Forfeit { loser: color, kind: e.kind(), detail: e.to_string() });
        }
    }
    while forfeit.is_none() && !game.is_over() {
        if reached_length_cap(&mut game, settings) {
            break;
        }
        let color = game.position().turn();
        let player: &mut dyn Player = if color == Color::Red { &mut *red } else { &mut *black };
        forfeit = play_player_move(player, &mut game, &settings.limit);
    }
    finished_game(&game, forfeit, settings, game_id, [red.name(), black.name()], opening.name())
}

/// Ends an undecided `game` as a draw by [`OutcomeReason::LengthCap`] once it has
/// `max_plies` plies; returns whether it did.
fn reached_length_cap(game: &mut Game, settings: &GameSettings) -> bool {
    let capped = game.len() >= settings.max_plies as usize;
    if capped {
        game.set_outcome(Outcome::Draw { reason: OutcomeReason::LengthCap });
    }
    capped
}

/// Asks `player` for a move in `game` (not over) within `limit` and plays it. Returns the
/// forfeit of the side to move if the player fails, answers late or proposes an illegal move.
fn play_player_move(
    player: &mut dyn Player,
    game: &mut Game,
    limit: &MoveLimit,
) -> Option<Forfeit> {
    let color = game.position().turn();
    let started = Instant::now();
    let answer = player.choose_move(game, limit);
    let elapsed = started.elapsed();
    let late = limit.deadline().is_some_and(|d| elapsed > d);
    let lose = |kind, detail| Some(Forfeit { loser: color, kind, detail });
    match answer {
        Err(e) => lose(e.kind(), e.to_string()),
        Ok(_) if late => lose(
            ForfeitKind::Timeout,
            format!(
                "took {} ms for a {} ms move (margin {} ms)",
                elapsed.as_millis(),
                limit.movetime.unwrap_or_default().as_millis(),
                limit.margin.as_millis()
            ),
        ),
        Ok(m) => play_checked(game, m),
    }
}

/// Plays `m` in `game`; the forfeit of the side to move if it is illegal.
fn play_checked(game: &mut Game, m: Move) -> Option<Forfeit> {
    let color = game.position().turn();
    match game.play(m) {
        Ok(_) => None,
        Err(e) => Some(Forfeit {
            loser: color,
            kind: ForfeitKind::IllegalMove,
            detail: format!("{m} at ply {}: {e}", game.len()),
        }),
    }
}

/// The record of a finished (or forfeited) game; `names` are Red's and Black's.
fn finished_game(
    game: &Game,
    forfeit: Option<Forfeit>,
    settings: &GameSettings,
    game_id: u64,
    names: [&str; 2],
    opening: &str,
) -> ArenaGame {
    let outcome = match &forfeit {
        Some(f) => Outcome::Win { winner: f.loser.other(), reason: OutcomeReason::Resignation },
        None => game.outcome().unwrap_or(Outcome::Draw { reason: OutcomeReason::LengthCap }),
    };
    ArenaGame {
        record: GameRecord {
            game_id,
            rules: settings.rules,
            start: *game.start(),
            moves: game.moves().to_vec(),
            outcome,
            samples: Vec::new(),
            resign_disabled: false,
            would_have_resigned: None,
            lowest_value: [1.0; 2],
        },
        red: names[0].to_string(),
        black: names[1].to_string(),
        opening: opening.to_string(),
        forfeit,
    }
}

// ----- statistics ----------------------------------------------------------------------------

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The Elo difference of a score fraction `s` (logistic model): `−400 · log10(1/s − 1)`.
/// Infinite at 0 and 1.
pub fn elo_from_score(s: f64) -> f64 {
    -400.0 * (1.0 / s - 1.0).log10()
}

/// The expected score of an Elo difference (logistic model): `1 / (1 + 10^(−elo/400))`.
pub fn score_from_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// An Elo difference with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EloEstimate {
    /// The estimate.
    pub elo: f64,
    /// Lower bound of the 95% interval.
    pub lower: f64,
    /// Upper bound of the 95% interval.
    pub upper: f64,
}

impl EloEstimate {
    /// Half the width of the interval.
    pub fn margin(&self) -> f64 {
        (self.upper - self.lower) / 2.0
    }
}

/// Wins, draws and losses of one player.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wdl {
    /// Games won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games lost.
    pub losses: u32,
}

impl Wdl {
    /// Counts from numbers.
    pub const fn new(wins: u32, draws: u32, losses: u32) -> Wdl {
        Wdl { wins, draws, losses }
    }

    /// Games played.
    pub const fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// Points: a win 1, a draw ½.
    pub fn points(&self) -> f64 {
        f64::from(self.wins) + 0.5 * f64::from(self.draws)
    }

    /// The score fraction in `[0, 1]` (½ with no game).
    pub fn score(&self) -> f64 {
        if self.games() == 0 { 0.5 } else { self.points() / f64::from(self.games()) }
    }

    /// Adds one game scored `score` (1, ½ or 0) for this player.
    pub fn add(&mut self, score: f32) {
        if score > 0.75 {
            self.wins += 1;
        } else if score < 0.25 {
            self.losses += 1;
        } else {
            self.draws += 1;
        }
    }

    /// The Elo difference and its 95% interval, with the half-point prior described in the
    /// [module documentation](self): always finite, 0 and symmetric at a 50% score.
    pub fn elo(&self) -> EloEstimate {
        let w = f64::from(self.wins) + 0.5;
        let d = f64::from(self.draws);
        let l = f64::from(self.losses) + 0.5;
        let n = w + d + l;
        let s = (w + 0.5 * d) / n;
        let var = (w * (1.0 - s).powi(2) + d * (0.5 - s).powi(2) + l * s.powi(2)) / n;
        let se = (var / n).sqrt();
        let slope = 400.0 / (std::f64::consts::LN_10 * s * (1.0 - s));
        let elo = elo_from_score(s);
        let half = Z95 * se * slope;
        EloEstimate { elo, lower: elo - half, upper: elo + half }
    }
}

impl fmt::Display for Wdl {
    /// `+W =D -L`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "+{} ={} -{}", self.wins, self.draws, self.losses)
    }
}

/// The decision of an SPRT so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SprtVerdict {
    /// Not enough evidence yet.
    Continue,
    /// `H0` accepted: the Elo difference is at most `elo0`.
    AcceptH0,
    /// `H1` accepted: the Elo difference is at least `elo1`.
    AcceptH1,
}

impl fmt::Display for SprtVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SprtVerdict::Continue => "continue",
            SprtVerdict::AcceptH0 => "H0 accepted",
            SprtVerdict::AcceptH1 => "H1 accepted",
        })
    }
}

/// Bad SPRT parameters.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid SPRT: {0}")]
pub struct SprtError(pub String);

/// A sequential probability ratio test between `H0: elo = elo0` and `H1: elo = elo1`, with
/// error rates `alpha` (accepting H1 when H0 holds) and `beta` (the reverse). The formula is in
/// the [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sprt {
    /// Elo of the null hypothesis.
    pub elo0: f64,
    /// Elo of the alternative; greater than `elo0`.
    pub elo1: f64,
    /// Type I error rate, in (0, 1).
    pub alpha: f64,
    /// Type II error rate, in (0, 1).
    pub beta: f64,
}

impl Sprt {
    /// A test with the usual error rates α = β = 0.05.
    ///
    /// # Errors
    /// An [`SprtError`] unless both Elo values are finite and `elo0 < elo1`.
    pub fn new(elo0: f64, elo1: f64) -> Result<Sprt, SprtError> {
        let s = Sprt { elo0, elo1, alpha: 0.05, beta: 0.05 };
        s.validate()?;
        Ok(s)
    }

    /// Checks the parameters.
    ///
    /// # Errors
    /// An [`SprtError`] saying which is wrong.
    pub fn validate(&self) -> Result<(), SprtError> {
        if !(self.elo0.is_finite() && self.elo1.is_finite() && self.elo0 < self.elo1) {
            return Err(SprtError(format!(
                "need finite elo0 < elo1, got {} and {}",
                self.elo0, self.elo1
            )));
        }
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(SprtError(format!("{name} must be in (0, 1), got {v}")));
            }
        }
        Ok(())
    }

    /// The decision bounds `(lower, upper)` on the log-likelihood ratio:
    /// `(ln(β/(1 − α)), ln((1 − β)/α))`.
    pub fn bounds(&self) -> (f64, f64) {
        ((self.beta / (1.0 - self.alpha)).ln(), ((1.0 - self.beta) / self.alpha).ln())
    }

    /// The log-likelihood ratio of H1 against H0 for `wdl` (0 with no game).
    pub fn llr(&self, wdl: &Wdl) -> f64 {
        if wdl.games() == 0 {
            return 0.0;
        }
        let fix = |x: u32| if x == 0 { 0.5 } else { f64::from(x) };
        let (w, d, l) = (fix(wdl.wins), fix(wdl.draws), fix(wdl.losses));
        let n = w + d + l;
        let (w, d) = (w / n, d / n);
        let s = w + d / 2.0;
        let var = (w + d / 4.0) - s * s;
        let var_s = var / n;
        if var_s <= 0.0 || !var_s.is_finite() {
            return 0.0;
        }
        let s0 = score_from_elo(self.elo0);
        let s1 = score_from_elo(self.elo1);
        (s1 - s0) * (2.0 * s - s0 - s1) / (2.0 * var_s)
    }

    /// The decision for `wdl`.
    pub fn verdict(&self, wdl: &Wdl) -> SprtVerdict {
        let llr = self.llr(wdl);
        let (lower, upper) = self.bounds();
        if llr >= upper {
            SprtVerdict::AcceptH1
        } else if llr <= lower {
            SprtVerdict::AcceptH0
        } else {
            SprtVerdict::Continue
        }
    }
}

// ----- matches -------------------------------------------------------------------------------

/// Settings of a match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatchConfig {
    /// Games to play (at most; an SPRT may stop earlier).
    pub games: u32,
    /// Settings of each game.
    pub settings: GameSettings,
    /// A test that stops the match once decided.
    pub sprt: Option<Sprt>,
}

/// Results of a match so far, from player A's point of view (B is the other player).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatchStats {
    /// A's wins, draws and losses.
    pub wdl: Wdl,
    /// A's results with Red.
    pub a_red: Wdl,
    /// A's results with Black.
    pub a_black: Wdl,
    /// Forfeits by A (`[0]`) and B (`[1]`), indexed by [`ForfeitKind::index`].
    pub forfeits: [[u32; 4]; 2],
    /// Games per ending reason ([`OutcomeReason::index`]; forfeits not counted).
    pub reasons: [u32; OutcomeReason::ALL.len()],
    /// Total plies played.
    pub plies: u64,
    /// The SPRT's log-likelihood ratio and verdict after the last game, if one runs.
    pub sprt: Option<(f64, SprtVerdict)>,
}

impl MatchStats {
    /// Games played.
    pub fn games(&self) -> u32 {
        self.wdl.games()
    }

    /// Forfeits of player `0` (A) or `1` (B), all kinds.
    pub fn total_forfeits(&self, player: usize) -> u32 {
        self.forfeits[player].iter().sum()
    }

    /// Adds a finished game in which A played `a_color`.
    pub fn add(&mut self, game: &ArenaGame, a_color: Color) {
        let score = game.outcome().score_for(a_color);
        self.wdl.add(score);
        match a_color {
            Color::Red => self.a_red.add(score),
            Color::Black => self.a_black.add(score),
        }
        match &game.forfeit {
            Some(f) => {
                let who = usize::from(f.loser != a_color);
                self.forfeits[who][f.kind.index()] += 1;
            }
            None => self.reasons[game.outcome().reason().index()] += 1,
        }
        self.plies += game.record.moves.len() as u64;
    }
}

/// Plays a match of `config.games` games between `a` and `b`: game `i` uses opening
/// `openings[(i / 2) % len]`, with A as Red when `i` is even and as Black when it is odd, so
/// each opening is played once with each colour. After each game `on_game` gets the game and
/// the statistics so far; returning false stops the match. With an SPRT the match stops as soon
/// as it accepts a hypothesis.
///
/// # Panics
/// If `openings` is empty.
pub fn run_match(
    a: &mut dyn Player,
    b: &mut dyn Player,
    openings: &[Opening],
    config: &MatchConfig,
    mut on_game: impl FnMut(&ArenaGame, &MatchStats) -> bool,
) -> MatchStats {
    assert!(!openings.is_empty(), "run_match without openings");
    let mut stats = MatchStats::default();
    for i in 0..u64::from(config.games) {
        let opening = &openings[(i / 2) as usize % openings.len()];
        // The opening's side to move after its moves does not matter: A is Red on even games.
        let a_color = if i % 2 == 0 { Color::Red } else { Color::Black };
        let game = if a_color == Color::Red {
            play_game(a, b, opening, &config.settings, i)
        } else {
            play_game(b, a, opening, &config.settings, i)
        };
        stats.add(&game, a_color);
        let verdict = config.sprt.map(|s| (s.llr(&stats.wdl), s.verdict(&stats.wdl)));
        stats.sprt = verdict;
        let go_on = on_game(&game, &stats);
        if !go_on || verdict.is_some_and(|(_, v)| v != SprtVerdict::Continue) {
            break;
        }
    }
    stats
}

// ----- batched matches -----------------------------------------------------------------------

/// A player that [`run_match_batched`] drives itself, so that the leaves of many games' searches
/// can share one evaluation batch.
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
}

impl LocalPlayer {
    /// The name in tables and PGN tags: `random`, `greedy`, or the search's name.
    pub fn name(&self) -> &str {
        match self {
            LocalPlayer::Random { .. } => "random",
            LocalPlayer::Greedy { .. } => "greedy",
            LocalPlayer::Mcts { name, .. } => name,
        }
    }

    /// Whether the player searches (and so needs an evaluator).
    pub fn is_mcts(&self) -> bool {
        matches!(self, LocalPlayer::Mcts { .. })
    }

    /// The same player for the sequential [`run_match`]; an MCTS player searches with
    /// `evaluator` (the others ignore it).
    ///
    /// # Errors
    /// An MCTS player's invalid config ([`SearchConfig::validate`]).
    pub fn to_player<'e, E: Evaluator<Game> + 'e>(
        &self,
        evaluator: E,
    ) -> Result<Box<dyn Player + 'e>, crate::ConfigError> {
        Ok(match self {
            LocalPlayer::Random { seed } => Box::new(RandomPlayer::new(*seed)),
            LocalPlayer::Greedy { seed } => Box::new(GreedyPlayer::new(*seed)),
            LocalPlayer::Mcts { name, config } => {
                Box::new(MctsPlayer::new(name.clone(), evaluator, config.clone())?)
            }
        })
    }
}

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

/// What one evaluator did during a batched match.
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
}

/// The result of [`run_match_batched`]: the match statistics (the same as [`run_match`]'s) and
/// what the evaluators did.
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
#[allow(clippy::too_many_arguments)]
pub fn run_match_batched<EA: Evaluator<Game>, EB: Evaluator<Game>>(
    a: &LocalPlayer,
    b: &LocalPlayer,
    eval_a: &mut EA,
    eval_b: &mut EB,
    openings: &[Opening],
    config: &MatchConfig,
    concurrency: usize,
    mut on_game: impl FnMut(&ArenaGame, &MatchStats) -> bool,
) -> Result<BatchedMatch, BatchedMatchError> {
    let evaluate = |group: usize, requests: &[EvalRequest<'_, Game>], out: &mut EvalBuffer| {
        let (player, result) = if group == 0 {
            ("A", eval_a.evaluate(requests, out).map_err(boxed))
        } else {
            ("B", eval_b.evaluate(requests, out).map_err(boxed))
        };
        result.map_err(|source| BatchedMatchError::Evaluator { player, source })
    };
    let lockstep = Lockstep { players: [a, b], groups: [0, 1], openings, config, concurrency };
    lockstep.run(evaluate, &mut on_game)
}

/// [`run_match_batched`] with one evaluator for both players: each round, the waiting leaves
/// of both players' searches go into a single batch (a network against an earlier version of
/// itself with other settings, or the search with [`crate::UniformEvaluator`] on both sides).
///
/// # Errors
/// As [`run_match_batched`].
pub fn run_match_batched_shared<E: Evaluator<Game>>(
    a: &LocalPlayer,
    b: &LocalPlayer,
    evaluator: &mut E,
    openings: &[Opening],
    config: &MatchConfig,
    concurrency: usize,
    mut on_game: impl FnMut(&ArenaGame, &MatchStats) -> bool,
) -> Result<BatchedMatch, BatchedMatchError> {
    let evaluate = |_: usize, requests: &[EvalRequest<'_, Game>], out: &mut EvalBuffer| {
        evaluator
            .evaluate(requests, out)
            .map_err(|e| BatchedMatchError::Evaluator { player: "A and B", source: boxed(e) })
    };
    let lockstep = Lockstep { players: [a, b], groups: [0, 0], openings, config, concurrency };
    lockstep.run(evaluate, &mut on_game)
}

fn boxed<E: std::error::Error + Send + Sync + 'static>(e: E) -> BoxError {
    Box::new(e)
}

/// A batched match: the two players (A, B), the evaluation group of each player's leaves
/// (`0` or `1`), and the match settings.
struct Lockstep<'m> {
    players: [&'m LocalPlayer; 2],
    groups: [usize; 2],
    openings: &'m [Opening],
    config: &'m MatchConfig,
    concurrency: usize,
}

/// A search in progress for the side to move of a [`Slot`]'s game.
struct RunningSearch {
    /// The searching player: 0 for A, 1 for B.
    player: usize,
    search: Box<Search<Game>>,
    /// Leaves gathered per round (`virtual_loss_batch`).
    batch: usize,
}

/// How one player of a batched match moves.
enum Mover {
    /// A random or greedy player.
    Simple(Box<dyn Player>),
    /// The search with these settings; its last search is kept for the allocations.
    Search { config: SearchConfig, spare: Option<Box<Search<Game>>> },
}

impl Mover {
    fn new(player: &LocalPlayer) -> Mover {
        match player {
            LocalPlayer::Random { seed } => Mover::Simple(Box::new(RandomPlayer::new(*seed))),
            LocalPlayer::Greedy { seed } => Mover::Simple(Box::new(GreedyPlayer::new(*seed))),
            LocalPlayer::Mcts { config, .. } => {
                Mover::Search { config: config.clone(), spare: None }
            }
        }
    }
}

/// A game of a batched match in progress, with its players' per-game state.
struct Slot {
    game_id: u64,
    /// A's colour in this game.
    a_color: Color,
    /// Index into the match's openings.
    opening: usize,
    game: Game,
    forfeit: Option<Forfeit>,
    /// A's and B's movers.
    movers: [Mover; 2],
    /// The search of the side to move, while it runs.
    running: Option<RunningSearch>,
    /// Never drawn from: searches without noise use no randomness, as in [`MctsPlayer`].
    rng: ChaCha8Rng,
    /// Where this slot's leaves start in its group's batch.
    offset: usize,
}

impl Slot {
    /// Which player (0 for A, 1 for B) plays `color`.
    fn player_of(&self, color: Color) -> usize {
        usize::from(color != self.a_color)
    }

    /// Plays until the game waits for evaluations (a search has gathered its leaves) or ends;
    /// returns true when it has ended.
    fn step(&mut self, settings: &GameSettings) -> bool {
        loop {
            if let Some(run) = &mut self.running {
                if !run.search.is_done() {
                    run.search.gather(run.batch);
                    return false;
                }
                let best = run.search.result().best;
                if let Some(run) = self.running.take() {
                    if let Mover::Search { spare, .. } = &mut self.movers[run.player] {
                        *spare = Some(run.search);
                    }
                }
                self.forfeit = play_checked(&mut self.game, best);
                continue;
            }
            if self.forfeit.is_some() || self.game.is_over() {
                return true;
            }
            if reached_length_cap(&mut self.game, settings) {
                return true;
            }
            let player = self.player_of(self.game.position().turn());
            match &mut self.movers[player] {
                Mover::Simple(simple) => {
                    let simple = simple.as_mut();
                    self.forfeit = play_player_move(simple, &mut self.game, &settings.limit);
                }
                Mover::Search { config, spare } => {
                    let mut search = match spare.take() {
                        Some(mut s) => {
                            s.reset(self.game.clone());
                            s
                        }
                        None => Box::new(Search::new(self.game.clone(), config.clone())),
                    };
                    let budget =
                        settings.limit.simulations.unwrap_or(config.simulations).clamp(1, 1 << 24);
                    search.start(budget, false, &mut self.rng);
                    let batch = (config.virtual_loss_batch as usize).max(1);
                    self.running = Some(RunningSearch { player, search, batch });
                }
            }
        }
    }
}

impl Lockstep<'_> {
    /// Checks the settings and plays the match; `evaluate(group, batch, out)` evaluates one
    /// group's batch.
    fn run<F>(
        &self,
        mut evaluate: F,
        on_game: &mut dyn FnMut(&ArenaGame, &MatchStats) -> bool,
    ) -> Result<BatchedMatch, BatchedMatchError>
    where
        F: FnMut(usize, &[EvalRequest<'_, Game>], &mut EvalBuffer) -> Result<(), BatchedMatchError>,
    {
        if self.openings.is_empty() {
            return Err(BatchedMatchError::NoOpenings);
        }
        for (player, p) in ["A", "B"].into_iter().zip(self.players) {
            if let LocalPlayer::Mcts { config, .. } = p {
                config.validate().map_err(|source| BatchedMatchError::Config { player, source })?;
                if self.config.settings.limit.movetime.is_some() {
                    return Err(BatchedMatchError::Timed);
                }
            }
        }
        let games = u64::from(self.config.games);
        let width = self.concurrency.clamp(1, (games as usize).max(1));
        let mut slots: Vec<Option<Slot>> = (0..width).map(|_| None).collect();
        // The movers of finished games, for the next ones.
        let mut idle: Vec<[Mover; 2]> = Vec::new();
        let mut next_game = 0u64;
        // Finished games waiting to be reported in game order.
        let mut finished: BTreeMap<u64, (ArenaGame, Color)> = BTreeMap::new();
        let mut next_report = 0u64;
        let mut result = BatchedMatch::default();
        let mut buffers = [EvalBuffer::new(), EvalBuffer::new()];
        let mut spare_requests: Vec<EvalRequest<'_, Game>> = Vec::new();
        loop {
            // Play every game up to its next evaluation, starting new games in free slots.
            for entry in &mut slots {
                loop {
                    let slot = match entry {
                        Some(slot) => slot,
                        None if next_game < games => {
                            next_game += 1;
                            entry.insert(self.new_slot(next_game - 1, idle.pop()))
                        }
                        None => break,
                    };
                    if !slot.step(&self.config.settings) {
                        break;
                    }
                    if let Some(slot) = entry.take() {
                        let (game, a_color) = self.finish(&slot);
                        finished.insert(slot.game_id, (game, a_color));
                        idle.push(slot.movers);
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
                    return Ok(result);
                }
            }
            if next_report >= games {
                return Ok(result);
            }
            // One batch per evaluation group, with the leaves of its games in slot order.
            for (group, buffer) in buffers.iter_mut().enumerate() {
                let mut requests = recycle(spare_requests);
                for slot in slots.iter_mut().flatten() {
                    if let Some(run) = &slot.running {
                        if self.groups[run.player] == group {
                            slot.offset = requests.len();
                            run.search.requests(&mut requests);
                        }
                    }
                }
                if !requests.is_empty() {
                    buffer.prepare(&requests);
                    let started = Instant::now();
                    evaluate(group, &requests, buffer)?;
                    result.batches[group].add(requests.len(), started.elapsed());
                }
                spare_requests = recycle(requests);
            }
            for slot in slots.iter_mut().flatten() {
                if let Some(run) = &mut slot.running {
                    if run.search.num_pending() > 0 {
                        run.search.apply(&buffers[self.groups[run.player]], slot.offset);
                    }
                }
            }
        }
    }

    /// Sets up game `game_id` (its opening, colours and players) as [`run_match`] and
    /// [`play_game`] do, with the movers of a finished game if there are some.
    fn new_slot(&self, game_id: u64, movers: Option<[Mover; 2]>) -> Slot {
        let opening = (game_id / 2) as usize % self.openings.len();
        let a_color = if game_id % 2 == 0 { Color::Red } else { Color::Black };
        let mut slot = Slot {
            game_id,
            a_color,
            opening,
            game: self.openings[opening].game(self.config.settings.rules),
            forfeit: None,
            movers: movers.unwrap_or_else(|| self.players.map(Mover::new)),
            running: None,
            rng: ChaCha8Rng::seed_from_u64(0),
            offset: 0,
        };
        for color in [Color::Red, Color::Black] {
            let player = slot.player_of(color);
            if let Mover::Simple(p) = &mut slot.movers[player] {
                if let Err(e) = p.new_game(game_id) {
                    let forfeit = Forfeit { loser: color, kind: e.kind(), detail: e.to_string() };
                    slot.forfeit.get_or_insert(forfeit);
                }
            }
        }
        slot
    }

    /// The record of a slot's finished game and A's colour in it.
    fn finish(&self, slot: &Slot) -> (ArenaGame, Color) {
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
    use super::*;
    use crate::record::parse_pgn_moves;
    use crate::{ScriptedEvaluator, UniformEvaluator};

    #[test]
    fn even_score_is_zero_elo_with_a_symmetric_interval() {
        for wdl in [Wdl::new(10, 0, 10), Wdl::new(5, 30, 5), Wdl::new(0, 7, 0)] {
            let e = wdl.elo();
            assert!(e.elo.abs() < 1e-9, "{wdl}: {e:?}");
            assert!((e.upper + e.lower).abs() < 1e-9, "{wdl}: {e:?}");
            assert!(e.upper > 0.0);
        }
        // More games, narrower interval.
        assert!(Wdl::new(100, 0, 100).elo().margin() < Wdl::new(10, 0, 10).elo().margin());
    }

    #[test]
    fn perfect_scores_have_finite_bounds() {
        let e = Wdl::new(20, 0, 0).elo();
        assert!(e.elo.is_finite() && e.lower.is_finite() && e.upper.is_finite(), "{e:?}");
        assert!(e.lower > 0.0 && e.lower < e.elo && e.elo < e.upper, "{e:?}");
        let z = Wdl::new(0, 0, 20).elo();
        assert!(z.lower.is_finite() && z.upper.is_finite() && z.upper < 0.0, "{z:?}");
        assert!((z.elo + e.elo).abs() < 1e-9);
        let none = Wdl::default().elo();
        assert!(none.elo.abs() < 1e-9 && none.lower.is_finite());
    }

    #[test]
    fn elo_matches_the_logistic_model() {
        assert!((elo_from_score(0.75) - 190.848).abs() < 1e-3);
        assert!((score_from_elo(elo_from_score(0.3)) - 0.3).abs() < 1e-12);
        // 750 wins, 250 losses: the prior barely moves the estimate.
        let e = Wdl::new(750, 0, 250).elo();
        assert!((e.elo - 190.8).abs() < 1.0, "{e:?}");
        assert!(e.lower > 150.0 && e.upper < 235.0, "{e:?}");
    }

    #[test]
    fn sprt_decides_lopsided_and_even_results() {
        let sprt = Sprt::new(0.0, 10.0).unwrap();
        let (lower, upper) = sprt.bounds();
        assert!((upper - 19f64.ln()).abs() < 1e-12 && (lower + 19f64.ln()).abs() < 1e-12);
        assert_eq!(sprt.verdict(&Wdl::new(80, 10, 10)), SprtVerdict::AcceptH1);
        assert_eq!(sprt.verdict(&Wdl::new(20, 0, 0)), SprtVerdict::AcceptH1);
        assert_eq!(sprt.verdict(&Wdl::new(3000, 3000, 3000)), SprtVerdict::AcceptH0);
        assert_eq!(sprt.verdict(&Wdl::new(3, 3, 3)), SprtVerdict::Continue);
        assert_eq!(sprt.verdict(&Wdl::default()), SprtVerdict::Continue);
        assert!(sprt.llr(&Wdl::new(0, 0, 30)) < lower);
        assert!(Sprt::new(5.0, 0.0).is_err());
        assert!(Sprt { alpha: 0.0, ..sprt }.validate().is_err());
    }

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
    fn builtin_openings_are_legal_and_distinct() {
        let all = Opening::builtin();
        assert_eq!(all.len(), BUILTIN_OPENINGS.len());
        for (o, (_, line)) in all.iter().zip(BUILTIN_OPENINGS) {
            assert_eq!(o.moves().len(), line.split_whitespace().count(), "{}", o.name());
            assert!(!o.game(RuleSet::Asian).is_over());
        }
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i].moves(), all[j].moves());
            }
        }
    }

    #[test]
    fn opening_files_take_fens_and_moves() {
        let text = "# comment\n\nh2e2 h9g7\n\
                    4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1\n\
                    rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1 moves h2e2\n\
                    startpos moves c3c4\n";
        let o = parse_openings(text).unwrap();
        assert_eq!(o.len(), 4);
        assert_eq!(o[0].name(), "line 3");
        assert_eq!(o[0].moves().len(), 2);
        assert_eq!(o[1].moves().len(), 0);
        assert_eq!(o[2].moves().len(), 1);
        assert_eq!(o[3].moves()[0].to_string(), "c3c4");
        let e = parse_openings("h2e2 h2e2\n").unwrap_err();
        assert!(e.to_string().contains("line 1") && e.to_string().contains("move 2"), "{e}");
        assert!(parse_openings("4k4/9 w\n").is_err());
        assert!(parse_openings("# nothing\n").is_err());
    }

    #[test]
    fn greedy_beats_random_clearly() {
        let mut greedy = GreedyPlayer::new(7);
        let mut random = RandomPlayer::new(8);
        let config = MatchConfig { games: 20, settings: GameSettings::default(), sprt: None };
        let stats = run_match(&mut greedy, &mut random, &Opening::builtin(), &config, |g, _| {
            // Every game is a legal game judged by the rules.
            let mut pgn = Vec::new();
            g.write_pgn(&mut pgn, "test").unwrap();
            let text = String::from_utf8(pgn).unwrap();
            let (_, moves) = parse_pgn_moves(&text, RuleSet::Asian).unwrap();
            assert_eq!(moves, g.record.moves);
            assert!(g.forfeit.is_none());
            true
        });
        assert_eq!(stats.games(), 20);
        assert!(stats.wdl.score() > 0.75, "{} {:?}", stats.wdl, stats.reasons);
        assert_eq!(stats.a_red.games(), 10);
    }

    /// A player that always proposes the same (illegal) move, or sleeps.
    struct Broken {
        sleep: Duration,
    }

    impl Player for Broken {
        fn name(&self) -> &str {
            "broken"
        }
        fn choose_move(&mut self, game: &Game, _: &MoveLimit) -> Result<Move, PlayerError> {
            std::thread::sleep(self.sleep);
            let legal = game.legal_moves();
            if self.sleep.is_zero() {
                Ok(Move::new(
                    game.position().general(Color::Red),
                    game.position().general(Color::Black),
                ))
            } else {
                Ok(legal[0])
            }
        }
    }

    #[test]
    fn illegal_and_late_moves_forfeit() {
        let opening = &Opening::builtin()[0];
        let mut random = RandomPlayer::new(1);
        let settings = GameSettings::default();
        let g =
            play_game(&mut Broken { sleep: Duration::ZERO }, &mut random, opening, &settings, 0);
        let f = g.forfeit.clone().unwrap();
        assert_eq!((f.loser, f.kind), (Color::Red, ForfeitKind::IllegalMove));
        assert_eq!(g.outcome().winner(), Some(Color::Black));
        let mut pgn = Vec::new();
        g.write_pgn(&mut pgn, "x").unwrap();
        let text = String::from_utf8(pgn).unwrap();
        assert!(text.contains("[Termination \"illegal_move\"]"), "{text}");
        assert!(text.contains("[Red \"broken\"]") && text.contains("[Event \"x\"]"), "{text}");

        let timed = GameSettings {
            limit: MoveLimit {
                simulations: None,
                movetime: Some(Duration::from_millis(1)),
                margin: Duration::from_millis(5),
            },
            ..settings
        };
        let mut slow = Broken { sleep: Duration::from_millis(30) };
        let g = play_game(&mut random, &mut slow, opening, &timed, 1);
        let f = g.forfeit.unwrap();
        assert_eq!((f.loser, f.kind), (Color::Black, ForfeitKind::Timeout));
    }

    #[test]
    fn mcts_player_mates_and_respects_movetime() {
        let g = game("4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1");
        let mut p = MctsPlayer::new("mcts", UniformEvaluator, SearchConfig::default()).unwrap();
        let limit = MoveLimit { simulations: Some(400), ..MoveLimit::default() };
        let m = p.choose_move(&g, &limit).unwrap();
        let mut after = g.clone();
        assert_eq!(after.play(m).unwrap().and_then(Outcome::winner), Some(Color::Red), "{m}");
        let timed = MoveLimit {
            simulations: None,
            movetime: Some(Duration::from_millis(50)),
            margin: Duration::ZERO,
        };
        let start = Instant::now();
        let r = p.search(&Game::new(Position::start(), RuleSet::Asian), &timed).unwrap();
        assert!(start.elapsed() < Duration::from_millis(400), "{:?}", start.elapsed());
        assert!(r.total_visits() > 0);
    }

    #[test]
    fn max_plies_draws_by_length_cap() {
        let mut a = RandomPlayer::new(1);
        let mut b = RandomPlayer::new(2);
        let settings = GameSettings { max_plies: 10, ..GameSettings::default() };
        let g = play_game(&mut a, &mut b, &Opening::builtin()[0], &settings, 0);
        assert_eq!(g.record.moves.len(), 10);
        assert_eq!(g.outcome(), Outcome::Draw { reason: OutcomeReason::LengthCap });
    }

    /// Plays a match sequentially with [`run_match`] (MCTS players searching with uniform
    /// priors) and returns every game and the statistics.
    fn sequential(
        a: &LocalPlayer,
        b: &LocalPlayer,
        config: &MatchConfig,
        stop_after: u32,
    ) -> (Vec<ArenaGame>, MatchStats) {
        let mut pa = a.to_player(UniformEvaluator).unwrap();
        let mut pb = b.to_player(UniformEvaluator).unwrap();
        let mut games = Vec::new();
        let stats = run_match(pa.as_mut(), pb.as_mut(), &Opening::builtin(), config, |g, s| {
            games.push(g.clone());
            s.games() < stop_after
        });
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
        for (a, b) in [(&greedy, &puct), (&puct, &gumbel)] {
            let (want_games, want) = sequential(a, b, &config, u32::MAX);
            for concurrency in [1, 3, 8] {
                let mut games = Vec::new();
                let got = run_match_batched(
                    a,
                    b,
                    &mut UniformEvaluator,
                    &mut UniformEvaluator,
                    &Opening::builtin(),
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
                    &Opening::builtin(),
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
            &Opening::builtin(),
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
        let settings = GameSettings { max_plies: 40, ..GameSettings::default() };
        let config = MatchConfig { games: 8, settings, sprt: None };
        let a = mcts("a", 32);
        let mut eval = ScriptedEvaluator::uniform();
        let got = run_match_batched(
            &a,
            &LocalPlayer::Greedy { seed: 1 },
            &mut eval,
            &mut UniformEvaluator,
            &Opening::builtin(),
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
            &Opening::builtin(),
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
            &Opening::builtin(),
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
        let got = run_match_batched_shared(
            &greedy,
            &random,
            &mut UniformEvaluator,
            &Opening::builtin(),
            &config,
            16,
            |_, _| true,
        )
        .unwrap();
        assert_eq!(got.stats, want);
    }

    /// An evaluator that always fails.
    struct Failing;

    impl Evaluator<Game> for Failing {
        type Error = io::Error;
        fn evaluate(&mut self, _: &[EvalRequest<'_, Game>], _: &mut EvalBuffer) -> io::Result<()> {
            Err(io::Error::other("device lost"))
        }
    }

    #[test]
    fn batched_match_errors() {
        let config = MatchConfig { games: 2, settings: GameSettings::default(), sprt: None };
        let a = mcts("a", 8);
        let b = LocalPlayer::Random { seed: 1 };
        let openings = Opening::builtin();
        let run = |a: &LocalPlayer, openings: &[Opening], config: &MatchConfig| {
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
