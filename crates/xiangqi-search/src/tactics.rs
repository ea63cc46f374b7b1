//! Tactical test positions, kept back from training: a check of a player's one-move tactics
//! that no training step has seen.
//!
//! The positions come from games of uniformly random moves from the start position (a seeded
//! generator of their own, never the self-play one), and the rules alone decide what is correct:
//!
//! * [`TacticKind::MateInOne`]: the side to move has a move that wins at once (checkmate,
//!   leaving no legal move, or any verdict of the rules in its favour). Correct: any such move.
//! * [`TacticKind::StopMateInOne`]: the side to move has no winning move, and at least half of
//!   its legal moves let the opponent win at once. Correct: any move after which the opponent
//!   has no winning move.
//! * [`TacticKind::WinPiece`]: none of the above, and the side to move can capture a horse,
//!   cannon or chariot (values of [`xiangqi::PieceKind::value`]) so that the opponent can
//!   neither capture back on that point nor win at once. Correct: such a capture of the most
//!   valuable piece available, or a move that wins at once. Fewer than a quarter of the legal
//!   moves may be correct.
//!
//! A win-a-piece position is also **clear** ([`Tactic::clear`]) when nothing else is at stake by
//! the same material count two plies deep, so that no other move can match the capture there:
//!
//! * after each correct capture, the opponent can win none of the mover's horses, cannons or
//!   chariots: it has no capture of one that the mover could not answer by capturing on that
//!   point, and none by a piece of lower value; and
//! * no other capture of the mover's gains as much: one that the opponent can answer by capturing
//!   on that point gains the taken piece's value less the taker's, and that stays below the free
//!   piece's value.
//!
//! Elsewhere the one-ply answer can be the weaker move (saving a hanging chariot, or taking a
//! defended chariot with a horse, is worth more than a free horse), so a strong player's score
//! on all win-a-piece positions stays below 100% (Fairy-Stockfish at a million nodes solved 78%
//! of the default set); the clear ones isolate the skill of taking what hangs.
//!
//! A position is taken at most once per kind per random game, from its 12th ply on, so the set
//! spreads over many games. The answer of a player counts as solved when it is one of the
//! correct moves; for a uniformly random mover the expected score is the mean share of correct
//! moves ([`Tactic::chance`]), which the report prints beside the player's.

use rand::RngExt;
use xiangqi::{Game, Move, Outcome, Position, RuleSet};

use crate::selfplay::game_rng;

/// A kind of tactical test position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TacticKind {
    /// A move wins at once.
    MateInOne,
    /// Most moves lose at once; find one that does not.
    StopMateInOne,
    /// A horse, cannon or chariot can be taken for nothing.
    WinPiece,
}

impl TacticKind {
    /// Every kind, in report order.
    pub const ALL: [TacticKind; 3] =
        [TacticKind::MateInOne, TacticKind::StopMateInOne, TacticKind::WinPiece];

    /// The kind's name in reports and files.
    pub const fn name(self) -> &'static str {
        match self {
            TacticKind::MateInOne => "mate_in_one",
            TacticKind::StopMateInOne => "stop_mate_in_one",
            TacticKind::WinPiece => "win_piece",
        }
    }
}

impl std::fmt::Display for TacticKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A test position with its correct moves.
#[derive(Clone, Debug)]
pub struct Tactic {
    /// The kind.
    pub kind: TacticKind,
    /// The game up to the position (its history decides repetition verdicts).
    pub game: Game,
    /// The correct moves (never empty, never every legal move).
    pub solutions: Vec<Move>,
    /// Legal moves in the position.
    pub legal_moves: usize,
    /// A [`TacticKind::WinPiece`] position where nothing else is at stake (see the [module
    /// documentation](self)); `false` for the other kinds.
    pub clear: bool,
}

impl Tactic {
    /// Whether `m` is a correct answer.
    pub fn is_solved_by(&self, m: Move) -> bool {
        self.solutions.contains(&m)
    }

    /// The probability that a uniformly random legal move is correct.
    pub fn chance(&self) -> f64 {
        self.solutions.len() as f64 / self.legal_moves as f64
    }
}

/// Whether playing `m` in `game` ends it at once in the mover's favour.
fn wins_at_once(game: &Game, m: Move) -> bool {
    let mover = game.position().turn();
    let mut g = game.clone();
    g.play_unchecked(m).and_then(Outcome::winner) == Some(mover)
}

/// Whether the side to move in `game` (not over) has a move that wins at once.
fn has_winning_move(game: &Game) -> bool {
    !game.is_over() && game.legal_moves().iter().any(|&m| wins_at_once(game, m))
}

/// The position after `m`, or `None` when `m` ends the game.
fn after(game: &Game, m: Move) -> Option<Game> {
    let mut g = game.clone();
    match g.play_unchecked(m) {
        Some(_) => None,
        None => Some(g),
    }
}

/// The kind of `game`'s position and its correct moves, if it is a test position.
pub fn classify(game: &Game) -> Option<Tactic> {
    if game.is_over() {
        return None;
    }
    let moves = game.legal_moves();
    let n = moves.len();
    if n < 2 {
        return None;
    }
    let tactic = |kind, solutions: Vec<Move>| Tactic {
        kind,
        game: game.clone(),
        solutions,
        legal_moves: n,
        clear: false,
    };
    let wins: Vec<Move> = moves.iter().copied().filter(|&m| wins_at_once(game, m)).collect();
    if !wins.is_empty() {
        return (wins.len() < n).then(|| tactic(TacticKind::MateInOne, wins));
    }
    // Every move's position (none ends the game in the mover's favour; one that ends it
    // otherwise, a draw or a loss by the rules, is never correct).
    let next: Vec<Option<Game>> = moves.iter().map(|&m| after(game, m)).collect();
    let safe: Vec<Move> = moves
        .iter()
        .zip(&next)
        .filter(|(_, g)| g.as_ref().is_some_and(|g| !has_winning_move(g)))
        .map(|(&m, _)| m)
        .collect();
    if !safe.is_empty() && 2 * safe.len() <= n {
        return Some(tactic(TacticKind::StopMateInOne, safe));
    }
    if safe.len() < n {
        // Some move loses at once: not a clean material test.
        return None;
    }
    let position = game.position();
    let mut best = 0;
    let mut captures = Vec::new();
    for (&m, g) in moves.iter().zip(&next) {
        let Some(victim) = position.piece_at(m.to()) else { continue };
        let value = victim.kind.value();
        if value < xiangqi::PieceKind::Horse.value() || value > xiangqi::PieceKind::Chariot.value()
        {
            continue;
        }
        let Some(g) = g else { continue };
        let recapture = g.legal_moves().iter().any(|r| r.to() == m.to());
        if recapture {
            continue;
        }
        if value > best {
            best = value;
            captures.clear();
        }
        if value == best {
            captures.push(m);
        }
    }
    if captures.is_empty() || 4 * captures.len() >= n {
        return None;
    }
    let clear = captures.iter().all(|&m| {
        let i = moves.iter().position(|&x| x == m);
        i.and_then(|i| next[i].as_ref()).is_some_and(|g| !loses_a_piece_back(g))
    }) && moves.iter().zip(&next).all(|(&m, g)| {
        captures.contains(&m) || capture_gain(position, m, g.as_ref()) < i64::from(best)
    });
    Some(Tactic { clear, ..tactic(TacticKind::WinPiece, captures) })
}

/// The material the mover of `m` gains by it, two plies deep: the taken piece's value, less the
/// taker's where the opponent can capture on that point in `next` (the position after `m`;
/// `None` when `m` ended the game); 0 for a move that takes nothing.
fn capture_gain(position: &Position, m: Move, next: Option<&Game>) -> i64 {
    let Some(victim) = position.piece_at(m.to()) else { return 0 };
    let taker = position.piece_at(m.from()).map_or(0, |p| p.kind.value());
    let answered = next.is_none_or(|g| g.legal_moves().iter().any(|r| r.to() == m.to()));
    i64::from(victim.kind.value()) - if answered { i64::from(taker) } else { 0 }
}

/// Whether the side to move in `game` can win a horse, cannon or chariot of the other side: a
/// capture of one that the other side cannot answer on that point, or one by a piece of lower
/// value.
fn loses_a_piece_back(game: &Game) -> bool {
    let position = game.position();
    let major = xiangqi::PieceKind::Horse.value()..=xiangqi::PieceKind::Chariot.value();
    game.legal_moves().iter().any(|&r| {
        position.piece_at(r.to()).is_some_and(|v| major.contains(&v.kind.value()))
            && capture_gain(position, r, after(game, r).as_ref()) > 0
    })
}

/// Up to `per_kind` test positions of each kind, from random games seeded by `seed` (at most
/// `max_games` games are played looking for them). Deterministic for a seed.
pub fn generate(per_kind: usize, seed: u64, rules: RuleSet, max_games: u64) -> Vec<Tactic> {
    generate_with_progress(per_kind, seed, rules, max_games, |_, _| {})
}

/// [`generate`], calling `progress(games_played, positions_found)` after each random game (for
/// a progress display; the set does not depend on it).
pub fn generate_with_progress(
    per_kind: usize,
    seed: u64,
    rules: RuleSet,
    max_games: u64,
    mut progress: impl FnMut(u64, usize),
) -> Vec<Tactic> {
    let mut found: Vec<Tactic> = Vec::new();
    // Positions found of each kind, in the order of `TacticKind::ALL`.
    let mut counts = [0usize; 3];
    for game_no in 0..max_games {
        if counts.iter().all(|&c| c >= per_kind) {
            break;
        }
        let mut rng = game_rng(seed, game_no);
        let mut game = Game::new(Position::start(), rules);
        let plies = rng.random_range(12..200usize);
        let mut taken = [false; 3];
        for ply in 0..plies {
            if game.is_over() {
                break;
            }
            // Every third position from the 12th ply on: enough positions without classifying
            // every one (the stop-mate test plays two plies of every move).
            if ply >= 12 && ply % 3 == 0 {
                if let Some(t) = classify(&game) {
                    let k = TacticKind::ALL.iter().position(|&x| x == t.kind).unwrap_or(0);
                    if !taken[k] && counts[k] < per_kind {
                        taken[k] = true;
                        counts[k] += 1;
                        found.push(t);
                    }
                }
            }
            let moves = game.legal_moves();
            let m = moves[rng.random_range(0..moves.len())];
            game.play_unchecked(m);
        }
        progress(game_no + 1, found.len());
    }
    found.sort_by_key(|t| t.kind);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game(fen: &str) -> Game {
        Game::new(Position::from_fen(fen).unwrap(), RuleSet::Asian)
    }

    #[test]
    fn a_hand_built_mate_in_one() {
        // Red chariots on a8 and b7, Black general on e9 alone, Red general on d0 (so d9 is
        // barred by the facing generals): b7-b9 checks along rank 9 while a8 holds rank 8, and
        // f9 lies on the checking rank. a8-a9 is no mate: e8 stays free. (By hand.)
        let g = game("4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1");
        let t = classify(&g).unwrap();
        assert_eq!(t.kind, TacticKind::MateInOne);
        let uci: Vec<String> = t.solutions.iter().map(|m| m.to_string()).collect();
        assert!(uci.contains(&"b7b9".to_string()), "{uci:?}");
        assert!(!uci.contains(&"a8a9".to_string()), "{uci:?}");
        for m in &t.solutions {
            assert!(wins_at_once(&g, *m));
        }
    }

    #[test]
    fn a_hand_built_free_chariot() {
        // Red chariot a0, Black chariot a5 with nothing guarding it; generals on d0 and f9 (no
        // facing), no mate anywhere: a0xa5 wins a chariot for nothing.
        let g = game("5k3/9/9/9/r8/9/9/9/9/R2K5 w - - 0 1");
        let t = classify(&g).unwrap();
        assert_eq!(t.kind, TacticKind::WinPiece);
        let uci: Vec<String> = t.solutions.iter().map(|m| m.to_string()).collect();
        assert_eq!(uci, ["a0a5"]);
        // Black has nothing left to take back with, and Red no other capture.
        assert!(t.clear);
    }

    /// The win-a-piece test of `fen` (Red to move): its correct moves and whether it is clear.
    fn win_piece(fen: &str) -> (Vec<String>, bool) {
        let t = classify(&game(fen)).unwrap();
        assert_eq!(t.kind, TacticKind::WinPiece, "{fen}");
        (t.solutions.iter().map(|m| m.to_string()).collect(), t.clear)
    }

    #[test]
    fn a_free_piece_is_not_clear_while_the_mover_loses_one_back() {
        // Red chariot a0 can take the unguarded Black horse on a5; Red's chariot on h4 hangs to
        // the Black horse on g6 (leg g5 empty), and taking the horse does not save it. (By hand.)
        let fen = "4k4/9/9/6n2/n8/7R1/9/9/9/R2K5 w - - 0 1";
        assert_eq!(win_piece(fen), (vec!["a0a5".to_string()], false));
        // The horse on g7 instead attacks h5, not h4: nothing else is at stake.
        let fen = "4k4/9/6n2/9/n8/7R1/9/9/9/R2K5 w - - 0 1";
        assert_eq!(win_piece(fen), (vec!["a0a5".to_string()], true));
    }

    #[test]
    fn a_free_piece_is_not_clear_beside_a_capture_that_trades_up_as_much() {
        // The free horse on a5 is worth 4; the Red horse on c3 can take the chariot on e4 (leg
        // d3 empty), which the chariot on i4 guards along rank 4: 9 for 4 gains 5. (By hand.)
        let fen = "5k3/9/9/9/n8/4r3r/2N6/9/9/R2K5 w - - 0 1";
        assert_eq!(win_piece(fen), (vec!["a0a5".to_string()], false));
        // Without the guard the chariot itself hangs: the most valuable free piece, and clear.
        let fen = "5k3/9/9/9/n8/4r4/2N6/9/9/R2K5 w - - 0 1";
        assert_eq!(win_piece(fen), (vec!["c3e4".to_string()], true));
    }

    #[test]
    fn generated_positions_keep_their_promises() {
        let set = generate(6, 5, RuleSet::Asian, 3000);
        for kind in TacticKind::ALL {
            assert!(set.iter().any(|t| t.kind == kind), "no {kind} found");
        }
        for t in &set {
            let g = &t.game;
            let moves = g.legal_moves();
            assert_eq!(moves.len(), t.legal_moves);
            assert!(!t.solutions.is_empty() && t.solutions.len() < moves.len());
            match t.kind {
                TacticKind::MateInOne => {
                    assert!(!t.clear);
                    for &m in moves.iter() {
                        assert_eq!(t.is_solved_by(m), wins_at_once(g, m), "{m}");
                    }
                }
                TacticKind::StopMateInOne => {
                    assert!(!t.clear);
                    for &m in moves.iter() {
                        let safe = after(g, m).is_some_and(|n| !has_winning_move(&n));
                        assert_eq!(t.is_solved_by(m), safe, "{m}");
                    }
                }
                TacticKind::WinPiece => {
                    for &m in &t.solutions {
                        let victim = g.position().piece_at(m.to()).unwrap();
                        assert!(victim.kind.value() >= 4);
                        let n = after(g, m).unwrap();
                        assert!(!n.legal_moves().iter().any(|r| r.to() == m.to()));
                        assert!(!has_winning_move(&n));
                    }
                }
            }
        }
        // The same seed gives the same set.
        let again = generate(6, 5, RuleSet::Asian, 3000);
        let keys = |s: &[Tactic]| s.iter().map(|t| t.game.position().key()).collect::<Vec<_>>();
        assert_eq!(keys(&set), keys(&again));
    }

    #[test]
    fn progress_reports_every_game_and_the_final_count() {
        let mut calls = Vec::new();
        let set = generate_with_progress(4, 5, RuleSet::Asian, 3000, |g, n| calls.push((g, n)));
        // One call per game played, numbered from 1, with a count that never falls and ends at
        // the set's size.
        assert!(!calls.is_empty());
        for (i, &(g, _)) in calls.iter().enumerate() {
            assert_eq!(g, i as u64 + 1);
        }
        assert!(calls.windows(2).all(|w| w[0].1 <= w[1].1));
        assert_eq!(calls.last().unwrap().1, set.len());
        // Four of each kind, and the search stopped once it had them.
        for kind in TacticKind::ALL {
            assert_eq!(set.iter().filter(|t| t.kind == kind).count(), 4, "{kind}");
        }
        assert!(calls.len() < 3000);
        let plain = generate(4, 5, RuleSet::Asian, 3000);
        let keys = |s: &[Tactic]| s.iter().map(|t| t.game.position().key()).collect::<Vec<_>>();
        assert_eq!(keys(&set), keys(&plain));
    }
}
