//! The janggi [`Game`]: a position with its history and the verdict.
//!
//! The rules of the game's end (`docs/RULES.md`, "Janggi"): checkmate loses; 200 plies without a
//! capture draw (passes count as plies, only captures reset the count), unless the move that
//! reaches the limit mates. A side not in check can always pass, so "no legal move" is always
//! checkmate. There is no repetition rule; [`Game::repetitions`] exists for the network's input
//! plane only.

use super::position::Position;
use super::{MoveList, Rules};
use crate::error::PlayError;
use crate::game::{GameError, Outcome, OutcomeReason};
use crate::moves::Move;

/// Plies without a capture that draw ([`OutcomeReason::NoCaptureLimit`]).
pub const NO_CAPTURE_LIMIT: u32 = 200;

/// A janggi game: its start position, the moves played (passes included) and the verdict. The
/// rule set is the positions'.
///
/// Its API mirrors [`crate::Game`] where it applies. Verdicts are [`Outcome`]s: a
/// [`Outcome::Win`] with [`OutcomeReason::Checkmate`] (winner [`super::CHO`] = `Color::Red`,
/// `1-0`, or [`super::HAN`] = `Color::Black`, `0-1`) or a [`Outcome::Draw`] with
/// [`OutcomeReason::NoCaptureLimit`]; self-play may also end a game with [`Game::set_outcome`].
#[derive(Debug)]
pub struct Game {
    start: Position,
    position: Position,
    moves: Vec<Move>,
    /// `keys[i]` is the Zobrist key after `i` moves; `keys[0]` is the start position's.
    keys: Vec<u64>,
    outcome: Option<Outcome>,
}

/// A clone keeps room for one more move in its history, as [`crate::Game`]'s does.
impl Clone for Game {
    fn clone(&self) -> Game {
        Game {
            start: self.start,
            position: self.position,
            moves: crate::game::with_room(&self.moves),
            keys: crate::game::with_room(&self.keys),
            outcome: self.outcome,
        }
    }
}

impl Game {
    /// A game from `start`, under `start`'s rules. A start position that is already decided
    /// (checkmate, or the no-capture clock at its limit) is judged as it stands.
    pub fn new(start: Position) -> Game {
        let mut game = Game {
            start,
            position: start,
            moves: Vec::new(),
            keys: vec![start.key()],
            outcome: None,
        };
        game.outcome = game.adjudicate();
        game
    }

    /// The rule set (the start position's).
    pub fn rules(&self) -> Rules {
        self.start.rules()
    }

    /// The start position.
    pub fn start(&self) -> &Position {
        &self.start
    }

    /// The current position.
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// The moves played so far, passes included.
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

    /// Legal moves in the current position, the pass last (empty once the game is over).
    pub fn legal_moves(&self) -> MoveList {
        if self.outcome.is_some() { MoveList::new() } else { self.position.legal_moves() }
    }

    /// How many times the current position (placement and side to move) has occurred since the
    /// last capture (or the start position), this occurrence included: at least 1. Janggi has no
    /// repetition rule; this feeds the network's repetition plane.
    pub fn repetitions(&self) -> usize {
        let n = self.keys.len() - 1;
        let window = (self.position.halfmove_clock() as usize).min(n);
        let key = self.keys[n];
        1 + (n - window..n).rev().skip(1).step_by(2).filter(|&i| self.keys[i] == key).count()
    }

    /// Ends the game with a verdict decided outside the rules (resignation or length cap in
    /// self-play). Does nothing if it is already over.
    pub fn set_outcome(&mut self, outcome: Outcome) {
        if self.outcome.is_none() {
            self.outcome = Some(outcome);
        }
    }

    /// Plays a move (a pass included) after checking it, and returns the verdict if the game is
    /// now over.
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

    /// Whether `m`, a legal move here, checkmates: the only verdict that wins for the mover.
    /// Plays `m` on a copy of the position only (no history). Returns `false` once the game is
    /// over.
    ///
    /// # Panics
    /// May panic or give a wrong answer if `m` is not in [`Game::legal_moves`].
    pub fn is_winning_move(&self, m: Move) -> bool {
        if self.outcome.is_some() {
            return false;
        }
        let mut next = self.position;
        next.play_unchecked(m);
        !next.has_legal_move()
    }

    /// The verdict of the current position: checkmate first, then the no-capture limit.
    fn adjudicate(&self) -> Option<Outcome> {
        let pos = &self.position;
        if !pos.has_legal_move() {
            return Some(Outcome::Win {
                winner: pos.turn().other(),
                reason: OutcomeReason::Checkmate,
            });
        }
        if pos.halfmove_clock() >= NO_CAPTURE_LIMIT {
            return Some(Outcome::Draw { reason: OutcomeReason::NoCaptureLimit });
        }
        None
    }
}
