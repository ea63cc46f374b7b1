//! [`SearchGame`]: the small game interface the search is generic over, and its implementation
//! for [`xiangqi::Game`].
//!
//! The search needs only four things from a game: its legal moves, a way to play one, whether the
//! rules have ended it (and with what value for the side to move), and cloning. A second game of
//! the family (janggi) plugs in by implementing this trait; the search, the evaluator interface
//! and the tree do not change.
//!
//! Terminal values come from the game's own adjudication (for xiangqi: [`xiangqi::Game`]'s
//! checkmate, no-legal-move, repetition and move-limit verdicts), never from an evaluator.

use std::fmt;

use xiangqi::{Game, Move, MoveList, Outcome};

/// A game state the search can explore: a position together with whatever history its rules
/// need (repetitions, move counters).
///
/// # Value perspective
/// [`SearchGame::terminal_value`] is in `[-1, 1]` from the point of view of the side to move:
/// `-1` when the side to move has lost, `0` for a draw, `+1` when it has won.
pub trait SearchGame: Clone + Send + Sync {
    /// A move; compact and copyable.
    type Move: Copy + Eq + Send + Sync + fmt::Debug + 'static;

    /// Appends the legal moves of the side to move to `out` (without clearing it). Appends
    /// nothing once the game is over. The order is the one evaluators and search results use.
    fn legal_moves_into(&self, out: &mut Vec<Self::Move>);

    /// Plays a move.
    ///
    /// # Panics
    /// May panic, or corrupt the state, if `mv` is not among the moves from
    /// [`SearchGame::legal_moves_into`] of this state.
    fn play(&mut self, mv: Self::Move);

    /// If the rules have ended the game: its value in `[-1, 1]` for the side to move.
    fn terminal_value(&self) -> Option<f32>;

    /// Whether playing `mv` (one of [`SearchGame::legal_moves_into`]) ends the game at once with
    /// a win for the side that plays it, that is with [`SearchGame::terminal_value`] `-1` for
    /// the opponent. The default plays the move on a clone; a game may answer more cheaply.
    fn is_winning_move(&self, mv: Self::Move) -> bool {
        let mut next = self.clone();
        next.play(mv);
        next.terminal_value().is_some_and(|v| v <= -1.0)
    }
}

/// The value of a finished xiangqi game for the side to move in its final position.
pub fn outcome_value(outcome: Outcome, game: &Game) -> f32 {
    match outcome.winner() {
        Some(w) if w == game.position().turn() => 1.0,
        Some(_) => -1.0,
        None => 0.0,
    }
}

impl SearchGame for Game {
    type Move = Move;

    #[inline]
    fn legal_moves_into(&self, out: &mut Vec<Move>) {
        if !self.is_over() {
            let mut list = MoveList::new();
            self.position().legal_moves_into(&mut list);
            out.extend_from_slice(&list);
        }
    }

    #[inline]
    fn play(&mut self, mv: Move) {
        self.play_unchecked(mv);
    }

    #[inline]
    fn terminal_value(&self) -> Option<f32> {
        self.outcome().map(|o| outcome_value(o, self))
    }

    #[inline]
    fn is_winning_move(&self, mv: Move) -> bool {
        Game::is_winning_move(self, mv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xiangqi::{Position, RuleSet};

    #[test]
    fn checkmated_side_to_move_has_value_minus_one() {
        // Red chariot b7-b9 mates (see the search tests for the hand check).
        let pos = Position::from_fen("4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1").unwrap();
        let mut game = Game::new(pos, RuleSet::Asian);
        assert_eq!(game.terminal_value(), None);
        let mv = game.position().parse_uci("b7b9").unwrap();
        SearchGame::play(&mut game, mv);
        assert_eq!(game.terminal_value(), Some(-1.0));
        let mut moves = Vec::new();
        game.legal_moves_into(&mut moves);
        assert!(moves.is_empty());
    }
}
