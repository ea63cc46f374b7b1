//! [`Game`]: a position with its history, judged under a [`RuleSet`].
//!
//! The rule sets follow the rule texts the project was given (restated in `docs/RULES.md`):
//!
//! * Both: checkmate loses; having no legal move loses; neither side having a chariot, horse,
//!   cannon or soldier is a draw.
//! * Repetition is judged when a position (placement and side to move) occurs for the third
//!   time, counting the game's start position. The *cycle* is the moves played since that
//!   position's second occurrence.
//! * [`RuleSet::Asian`]: a move is an *attack* if it gives check or chases. If every move of
//!   exactly one side in the cycle is an attack, that side loses (perpetual check if all were
//!   checks, else perpetual chase); otherwise the repetition is a draw. 120 plies without a capture
//!   draw, unless that move mates or leaves no legal move.
//! * [`RuleSet::Simple`]: if exactly one side gave check with every one of its moves in the cycle,
//!   it loses; otherwise a draw. 300 plies in all (counted from the FEN's move number) draw.
//!
//! When several verdicts apply after one move, the first of this order decides: checkmate or no
//! legal move, repetition, insufficient material, no-capture limit, move limit.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::error::PlayError;
use crate::moves::{Move, MoveList};
use crate::position::Position;
use crate::types::{Color, PieceKind, Square};

/// A named set of game-ending rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RuleSet {
    /// Asian Xiangqi Federation style: perpetual check and perpetual chase lose, 120 plies without
    /// a capture draw (seed rule text 000).
    #[default]
    Asian,
    /// Only perpetual check loses; 300 plies in all draw (seed rule text 001).
    Simple,
}

impl RuleSet {
    /// All rule sets.
    pub const ALL: [RuleSet; 2] = [RuleSet::Asian, RuleSet::Simple];

    /// The name used in configs and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            RuleSet::Asian => "asian",
            RuleSet::Simple => "simple",
        }
    }

    /// Plies without a capture that draw, if this rule set has such a limit.
    pub const fn no_capture_limit(self) -> Option<u32> {
        match self {
            RuleSet::Asian => Some(120),
            RuleSet::Simple => None,
        }
    }

    /// Total plies (as the FEN counts them) that draw, if this rule set has such a limit.
    pub const fn move_limit(self) -> Option<u32> {
        match self {
            RuleSet::Asian => None,
            RuleSet::Simple => Some(300),
        }
    }
}

impl fmt::Display for RuleSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown rule set name.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown rule set '{0}' (expected 'asian' or 'simple')")]
pub struct ParseRuleSetError(pub String);

impl FromStr for RuleSet {
    type Err = ParseRuleSetError;
    fn from_str(s: &str) -> Result<RuleSet, ParseRuleSetError> {
        match s {
            "asian" => Ok(RuleSet::Asian),
            "simple" => Ok(RuleSet::Simple),
            other => Err(ParseRuleSetError(other.chars().take(32).collect())),
        }
    }
}

/// Why a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutcomeReason {
    /// The side to move is in check and has no legal move: it loses.
    Checkmate,
    /// The side to move is not in check and has no legal move: it loses.
    NoLegalMoves,
    /// One side checked with every move of a repetition cycle: it loses.
    PerpetualCheck,
    /// One side attacked (checked or chased) with every move of a cycle, not only checks: it loses.
    PerpetualChase,
    /// A third occurrence with no single perpetual attacker: draw.
    Repetition,
    /// 120 plies without a capture (asian): draw.
    NoCaptureLimit,
    /// 300 plies in all (simple): draw.
    MoveLimit,
    /// Neither side has a chariot, horse, cannon or soldier: draw.
    InsufficientMaterial,
    /// Self-play only: a side resigned (not a rule verdict).
    Resignation,
    /// Self-play only: the game reached its length cap, scored as a draw (not a rule verdict).
    LengthCap,
}

impl OutcomeReason {
    /// Every reason.
    pub const ALL: [OutcomeReason; 10] = [
        OutcomeReason::Checkmate,
        OutcomeReason::NoLegalMoves,
        OutcomeReason::PerpetualCheck,
        OutcomeReason::PerpetualChase,
        OutcomeReason::Repetition,
        OutcomeReason::NoCaptureLimit,
        OutcomeReason::MoveLimit,
        OutcomeReason::InsufficientMaterial,
        OutcomeReason::Resignation,
        OutcomeReason::LengthCap,
    ];

    /// The name used in output and records (`checkmate`, `no_legal_moves`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            OutcomeReason::Checkmate => "checkmate",
            OutcomeReason::NoLegalMoves => "no_legal_moves",
            OutcomeReason::PerpetualCheck => "perpetual_check",
            OutcomeReason::PerpetualChase => "perpetual_chase",
            OutcomeReason::Repetition => "repetition",
            OutcomeReason::NoCaptureLimit => "no_capture_limit",
            OutcomeReason::MoveLimit => "move_limit",
            OutcomeReason::InsufficientMaterial => "insufficient_material",
            OutcomeReason::Resignation => "resignation",
            OutcomeReason::LengthCap => "length_cap",
        }
    }

    /// Index in [`OutcomeReason::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for OutcomeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// One side won.
    Win {
        /// The winner.
        winner: Color,
        /// Why.
        reason: OutcomeReason,
    },
    /// Nobody won.
    Draw {
        /// Why.
        reason: OutcomeReason,
    },
}

impl Outcome {
    /// The winner, if any.
    pub const fn winner(self) -> Option<Color> {
        match self {
            Outcome::Win { winner, .. } => Some(winner),
            Outcome::Draw { .. } => None,
        }
    }

    /// The reason.
    pub const fn reason(self) -> OutcomeReason {
        match self {
            Outcome::Win { reason, .. } | Outcome::Draw { reason } => reason,
        }
    }

    /// The result in PGN form: `1-0` (Red wins), `0-1` (Black wins) or `1/2-1/2`.
    pub const fn result_str(self) -> &'static str {
        match self.winner() {
            Some(Color::Red) => "1-0",
            Some(Color::Black) => "0-1",
            None => "1/2-1/2",
        }
    }

    /// The score for `color`: 1 for a win, 0.5 for a draw, 0 for a loss.
    pub fn score_for(self, color: Color) -> f32 {
        match self.winner() {
            Some(w) if w == color => 1.0,
            Some(_) => 0.0,
            None => 0.5,
        }
    }
}

impl fmt::Display for Outcome {
    /// `RESULT REASON`, e.g. `1-0 checkmate`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.result_str(), self.reason())
    }
}

/// A move that could not be added to a game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum GameError {
    /// The move is illegal in the current position.
    #[error(transparent)]
    Illegal(#[from] PlayError),
    /// The game has already ended.
    #[error("the game is over ({0})")]
    GameOver(Outcome),
}

/// A game: its start position, the moves played, and the verdict of the rule set.
///
/// `Game` owns the history and alone judges repetition, perpetual check and chase, and the move
/// limits; [`Position`] knows nothing of them.
#[derive(Debug)]
pub struct Game {
    rules: RuleSet,
    start: Position,
    position: Position,
    moves: Vec<Move>,
    /// `keys[i]` is the Zobrist key after `i` moves; `keys[0]` is the start position's.
    keys: Vec<u64>,
    outcome: Option<Outcome>,
}

/// A clone keeps room for one more move in its history: a search clones a node's game to play
/// one move on it, and `Vec::clone` allocates exactly, so the push would reallocate and copy
/// both histories again.
impl Clone for Game {
    fn clone(&self) -> Game {
        Game {
            rules: self.rules,
            start: self.start,
            position: self.position,
            moves: with_room(&self.moves),
            keys: with_room(&self.keys),
            outcome: self.outcome,
        }
    }
}

/// A copy of `v` with capacity for one more element.
pub(crate) fn with_room<T: Copy>(v: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len() + 1);
    out.extend_from_slice(v);
    out
}

impl Game {
    /// A game from `start` under `rules`. A start position that is already decided (no legal
    /// move, dead material, a clock at its limit) is judged as it stands.
    pub fn new(start: Position, rules: RuleSet) -> Game {
        let mut game = Game {
            rules,
            start,
            position: start,
            moves: Vec::new(),
            keys: vec![start.key()],
            outcome: None,
        };
        game.outcome = game.adjudicate();
        game
    }

    /// The rule set.
    pub fn rules(&self) -> RuleSet {
        self.rules
    }

    /// The start position.
    pub fn start(&self) -> &Position {
        &self.start
    }

    /// The current position.
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// The moves played so far.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Plies played since the start position.
    pub fn len(&self) -> usize {
        self.moves.len()
    }

    /// Whether no move has been played.
    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }

    /// Zobrist keys of every position so far, the start position first.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// The verdict, once the game is over.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// Whether the game is over.
    pub fn is_over(&self) -> bool {
        self.outcome.is_some()
    }

    /// Legal moves in the current position (empty once the game is over).
    pub fn legal_moves(&self) -> MoveList {
        if self.outcome.is_some() { MoveList::new() } else { self.position.legal_moves() }
    }

    /// How many times the current position (placement and side to move) has occurred so far,
    /// this occurrence included (1, 2 or 3).
    pub fn repetitions(&self) -> usize {
        1 + self.earlier_occurrences().count()
    }

    /// Ends the game with a verdict decided outside the rules (resignation or length cap in
    /// self-play). Does nothing if it is already over.
    pub fn set_outcome(&mut self, outcome: Outcome) {
        if self.outcome.is_none() {
            self.outcome = Some(outcome);
        }
    }

    /// Plays a move after checking it, and returns the verdict if the game is now over.
    ///
    /// # Errors
    /// [`GameError::GameOver`] if the game has already ended, [`GameError::Illegal`] if the move
    /// is illegal; the game is unchanged either way.
    pub fn play(&mut self, m: Move) -> Result<Option<Outcome>, GameError> {
        if let Some(o) = self.outcome {
            return Err(GameError::GameOver(o));
        }
        self.position.check_legal(m).map_err(|reason| PlayError { mv: m, reason })?;
        Ok(self.play_unchecked(m))
    }

    /// Whether `m`, a legal move here, ends the game at once with a win for the side that plays
    /// it: the opponent is left without a legal move (checkmate or stalemate, both lost in
    /// xiangqi) or a repetition verdict goes against the opponent. Gives the same answer as
    /// playing `m` on a clone and reading [`Game::outcome`], but copies only the position, not
    /// the history, unless the position after `m` occurred before. Returns `false` once the
    /// game is over.
    ///
    /// # Panics
    /// May panic or give a wrong answer if `m` is not in [`Game::legal_moves`].
    pub fn is_winning_move(&self, m: Move) -> bool {
        if self.outcome.is_some() {
            return false;
        }
        let mover = self.position.turn();
        let mut next = self.position;
        next.play_unchecked(m);
        if !next.has_legal_move() {
            return true;
        }
        // Only a repetition can still decide for the mover (the other verdicts are draws).
        let after = self.keys.len();
        if self.occurrences(after, next.key(), next.halfmove_clock()).next().is_none() {
            return false;
        }
        let mut game = self.clone();
        game.play_unchecked(m).and_then(Outcome::winner) == Some(mover)
    }

    /// Whether any of `moves` (legal moves here) wins at once, as [`Game::is_winning_move`]
    /// judges each, but much faster for a long list: what the moves share is computed once, and
    /// most moves are cleared without generating the opponent's replies (see
    /// [`Game::winning_moves`]).
    ///
    /// # Panics
    /// May panic or give a wrong answer if a move is not in [`Game::legal_moves`].
    pub fn has_winning_move(&self, moves: &[Move]) -> bool {
        self.winning_moves(moves).next().is_some()
    }

    /// The moves of `moves` (legal moves here) that win at once, in their order: the answer of
    /// [`Game::is_winning_move`] for each, computed faster for a long list (see
    /// [`Game::winning_move_indices`]).
    ///
    /// # Panics
    /// May panic or give a wrong answer if a move is not in [`Game::legal_moves`].
    pub fn winning_moves<'a>(&'a self, moves: &'a [Move]) -> impl Iterator<Item = Move> + 'a {
        self.winning_move_indices(moves).map(|i| moves[i])
    }

    /// The indices into `moves` (legal moves here) of the moves that win at once, ascending.
    ///
    /// A move is cleared without the opponent's move generation when it does not give check
    /// (told by geometry, else on a scratch board) and leaves one of two prepared replies of the
    /// opponent intact, and when the position after it (for a move that captures nothing; a
    /// capture cannot repeat an earlier position) is not among the keys since the last capture
    /// with the same side to move (a 512-bit filter of them, then the exact scan). Any move not
    /// cleared this way is judged by [`Game::is_winning_move`] itself.
    ///
    /// # Panics
    /// May panic or give a wrong answer if a move is not in [`Game::legal_moves`].
    pub fn winning_move_indices<'a>(
        &'a self,
        moves: &'a [Move],
    ) -> impl Iterator<Item = usize> + 'a {
        let over = self.outcome.is_some();
        let witnesses = self.position.reply_witnesses();
        // The keys a position after a quiet move could repeat: same side to move as after it,
        // since the last capture (its clock is one more than now).
        let after = self.keys.len();
        let mut filter = [0u64; 8];
        let clock = self.position.halfmove_clock() + 1;
        for i in self.occurrence_window(after, clock) {
            let k = self.keys[i] as usize & 511;
            filter[k / 64] |= 1 << (k % 64);
        }
        let quiet_cleared = move |m: Move| {
            let k = self.position.key_after_quiet(m) as usize & 511;
            filter[k / 64] & (1 << (k % 64)) == 0
        };
        (0..moves.len()).filter(move |&i| {
            let m = moves[i];
            if over {
                return false;
            }
            if self.position.keeps_a_reply(m, &witnesses)
                && (self.position.is_capture(m) || quiet_cleared(m))
            {
                return false;
            }
            self.is_winning_move(m)
        })
    }

    /// Plays a move without checking it, and returns the verdict if the game is now over.
    ///
    /// # Panics
    /// May panic or corrupt the game if the move is not in [`Game::legal_moves`].
    pub fn play_unchecked(&mut self, m: Move) -> Option<Outcome> {
        self.position.play_unchecked(m);
        self.moves.push(m);
        self.keys.push(self.position.key());
        self.outcome = self.adjudicate();
        self.outcome
    }

    /// Indices (into [`Game::keys`]) of earlier occurrences of the current position, most recent
    /// first. Only positions since the last capture can repeat, and only with the same side to
    /// move, so the scan is short.
    fn earlier_occurrences(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.keys.len() - 1;
        self.occurrences(n, self.keys[n], self.position.halfmove_clock())
    }

    /// Indices (into [`Game::keys`]) before `at` where `key` occurred, most recent first, for a
    /// position at index `at` with halfmove clock `clock`: only positions since the last capture
    /// (`clock` plies back) with the same side to move (two, four, ... plies back) can repeat.
    fn occurrences(&self, at: usize, key: u64, clock: u32) -> impl Iterator<Item = usize> + '_ {
        self.occurrence_window(at, clock).filter(move |&i| self.keys[i] == key)
    }

    /// Indices (into [`Game::keys`]) of the positions a position at index `at` with halfmove
    /// clock `clock` could repeat, most recent first (see [`Game::occurrences`]).
    fn occurrence_window(&self, at: usize, clock: u32) -> impl Iterator<Item = usize> + use<> {
        let window = (clock as usize).min(at);
        (at - window..at).rev().skip(1).step_by(2)
    }

    fn adjudicate(&self) -> Option<Outcome> {
        let pos = &self.position;
        let mover = pos.turn().other();
        if !pos.has_legal_move() {
            let reason =
                if pos.is_check() { OutcomeReason::Checkmate } else { OutcomeReason::NoLegalMoves };
            return Some(Outcome::Win { winner: mover, reason });
        }
        if let Some(o) = self.repetition_verdict() {
            return Some(o);
        }
        if pos.insufficient_material() {
            return Some(Outcome::Draw { reason: OutcomeReason::InsufficientMaterial });
        }
        if self.rules.no_capture_limit().is_some_and(|l| pos.halfmove_clock() >= l) {
            return Some(Outcome::Draw { reason: OutcomeReason::NoCaptureLimit });
        }
        if self.rules.move_limit().is_some_and(|l| pos.ply() >= l) {
            return Some(Outcome::Draw { reason: OutcomeReason::MoveLimit });
        }
        None
    }

    /// The verdict of a third occurrence of the current position, if this is one.
    fn repetition_verdict(&self) -> Option<Outcome> {
        let mut earlier = self.earlier_occurrences();
        let second = earlier.next()?;
        earlier.next()?;
        let n = self.keys.len() - 1;
        // Rebuild the positions of the cycle (rare: only at a third occurrence).
        let mut pos = self.start;
        for &m in &self.moves[..second] {
            pos.play_unchecked(m);
        }
        let mut all_attacks = [true; 2];
        let mut all_checks = [true; 2];
        for &m in &self.moves[second..n] {
            let before = pos;
            let side = before.turn().index();
            pos.play_unchecked(m);
            let check = pos.is_check();
            all_checks[side] &= check;
            if self.rules == RuleSet::Asian && all_attacks[side] && !check {
                all_attacks[side] = chases(&before, &pos);
            }
        }
        let flags = match self.rules {
            RuleSet::Asian => all_attacks,
            RuleSet::Simple => all_checks,
        };
        let loser = match flags {
            [true, false] => Color::Red,
            [false, true] => Color::Black,
            _ => return Some(Outcome::Draw { reason: OutcomeReason::Repetition }),
        };
        let reason = if all_checks[loser.index()] {
            OutcomeReason::PerpetualCheck
        } else {
            OutcomeReason::PerpetualChase
        };
        Some(Outcome::Win { winner: loser.other(), reason })
    }
}

/// Whether the move from `before` to `after` chases (`docs/RULES.md`, "Repetition"): afterwards the mover
/// threatens, by a legal capture, an enemy piece that it did not threaten before, and that threat
/// counts. A threat counts unless it is made by a general or a soldier; it is against the general
/// (a check, not a chase) or a soldier still on its own side of the river; the target is of the
/// attacker's kind and could legally capture it back (an offer to exchange); or the target is
/// protected, that is the opponent would have a legal recapture on its point after the capture.
/// A horse or cannon threatening a chariot counts even if the chariot is protected.
pub fn chases(before: &Position, after: &Position) -> bool {
    let mover = before.turn();
    let opponent = mover.other();
    let mut moves = MoveList::new();
    after.legal_moves_for(mover, &mut moves);
    let mut threatened_before: Option<u128> = None;
    for &m in &moves {
        let (from, to) = (m.from(), m.to());
        let (Some(attacker), Some(target)) = (after.piece_at(from), after.piece_at(to)) else {
            continue;
        };
        if !counts_as_chase(after, attacker.kind, target.kind, from, to, opponent) {
            continue;
        }
        let before_set = *threatened_before.get_or_insert_with(|| {
            let mut list = MoveList::new();
            before.legal_moves_for(mover, &mut list);
            list.iter()
                .filter(|m| before.piece_at(m.to()).is_some())
                .fold(0u128, |acc, m| acc | 1u128 << m.to().index())
        });
        if before_set & (1u128 << to.index()) == 0 {
            return true;
        }
    }
    false
}

fn counts_as_chase(
    after: &Position,
    attacker: PieceKind,
    target: PieceKind,
    from: Square,
    to: Square,
    opponent: Color,
) -> bool {
    if matches!(attacker, PieceKind::General | PieceKind::Soldier) || target == PieceKind::General {
        return false;
    }
    if target == PieceKind::Soldier && to.on_own_side(opponent) {
        return false;
    }
    if target == attacker && after.is_legal_by(opponent, Move::new(to, from)) {
        return false;
    }
    if target == PieceKind::Chariot && matches!(attacker, PieceKind::Horse | PieceKind::Cannon) {
        return true;
    }
    // Protected: after the capture the opponent (then to move) has a legal recapture on `to`.
    let mut captured = *after;
    captured.play_unchecked(Move::new(from, to));
    let mut replies = MoveList::new();
    captured.legal_moves_for(opponent, &mut replies);
    !replies.iter().any(|r| r.to() == to)
}
