//! Search behaviour with no network: the uniform evaluator and the rules' terminal values.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xiangqi::{Game, Move, OutcomeReason, Position, RuleSet};
use xiangqi_search::{
    Algorithm, Checked, EvalBuffer, NodeId, ScriptedEvaluator, Search, SearchConfig, SearchGame,
    UniformEvaluator, WinCheck, policy_surprise,
};

/// Red: general d0, chariots a8 and b7. Black: general e9 alone. Red to move.
///
/// By hand: b7-b9 checks along rank 9 (c9, d9 empty). The black general on e9 may step to d9,
/// f9 or e8 only (palace, orthogonal): d9 and f9 stay on rank 9, attacked by the chariot on b9
/// (f9 because e9 is vacated); e8 is attacked by the chariot on a8 along rank 8. Black has no
/// other piece to capture or block: checkmate. (a8-f8 also wins at once: it checks nothing, but
/// leaves Black without a legal move — d9 faces the red general, f9 and e8 are attacked by f8 —
/// which loses in xiangqi.)
const MATE_IN_ONE: &str = "4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1";

/// The same, with a black chariot on b1 and Black to move. A chariot move off the b-file to a1
/// or e1..i1 lets b7-b9 mate (nothing can capture on b9 or block on c9/d9); moves along the
/// b-file, to c1 or d1 (which can block on c9/d9), or capturing on b7 keep it from mating.
const AVOID_MATE: &str = "4k4/R8/1R7/9/9/9/9/9/1r7/3K5 b - - 0 1";

fn game(fen: &str) -> Game {
    Game::new(Position::from_fen(fen).unwrap(), RuleSet::Asian)
}

/// Whether `m` ends the game at once in the mover's favour (checkmate, or no legal reply).
fn mates(game: &Game, m: Move) -> bool {
    let mover = game.position().turn();
    let mut g = game.clone();
    g.play(m).unwrap().is_some_and(|o| o.winner() == Some(mover))
}

/// Whether after `m` the opponent has a move that wins at once.
fn allows_mate(game: &Game, m: Move) -> bool {
    let mut g = game.clone();
    g.play(m).unwrap();
    g.legal_moves().iter().any(|&r| mates(&g, r))
}

fn search(
    fen: &str,
    config: SearchConfig,
    sims: u32,
) -> (Game, xiangqi_search::SearchResult<Move>) {
    let g = game(fen);
    let mut s = Search::new(g.clone(), Checked::new(config).unwrap());
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let r = s.run(sims, false, &mut rng, &mut UniformEvaluator, &mut EvalBuffer::new()).unwrap();
    (g, r)
}

#[test]
fn puct_finds_mate_in_one() {
    let g = game(MATE_IN_ONE);
    let b7b9 = g.position().parse_uci("b7b9").unwrap();
    let mut after = g.clone();
    let outcome = after.play(b7b9).unwrap().expect("the game ends");
    assert_eq!(outcome.reason(), OutcomeReason::Checkmate, "hand-checked mate, checked by Game");
    let a8f8 = g.position().parse_uci("a8f8").unwrap();
    let mut after = g.clone();
    let outcome = after.play(a8f8).unwrap().expect("the game ends");
    assert_eq!(outcome.reason(), OutcomeReason::NoLegalMoves);
    for vl in [1, 8] {
        let config = SearchConfig { virtual_loss_batch: vl, ..SearchConfig::default() };
        let (g, r) = search(MATE_IN_ONE, config, 400);
        assert!(mates(&g, r.best), "vl={vl}: {} does not mate", r.best);
        assert!(r.best_value > 0.99, "a mate is worth +1 to the mover: {}", r.best_value);
    }
}

#[test]
fn gumbel_finds_mate_in_one_with_a_small_budget() {
    let g = game(MATE_IN_ONE);
    let n = g.legal_moves().len() as u32;
    let config = SearchConfig {
        algorithm: Algorithm::Gumbel,
        gumbel_considered_moves: n,
        ..SearchConfig::default()
    };
    let (g, r) = search(MATE_IN_ONE, config, 64);
    assert!(mates(&g, r.best), "{} does not mate", r.best);
    // The improved policy puts most of its mass on the moves that win at once.
    let on_wins: f32 =
        r.moves.iter().zip(&r.policy).filter(|&(&m, _)| mates(&g, m)).map(|(_, p)| p).sum();
    assert!(on_wins > 0.9, "policy on the winning moves: {on_wins}");
    let sum: f32 = r.policy.iter().sum();
    assert!((sum - 1.0).abs() < 1e-4);
}

/// `SearchResult::improved_value` is the value of the improved policy. With the uniform
/// evaluator (value 0 for every position it sees) every completed Q of MATE_IN_ONE's root is
/// in [0, 1]: Black, with its general alone, can never win, and the two moves that win at once
/// are worth +1. So the improved value is at least the policy's mass on those wins (over 0.9,
/// as above) and at most 1. The root's mean value instead spreads over the visit that
/// sequential halving gives each of the ~35 considered moves (worth 0 after one visit), so it
/// stays far below.
#[test]
fn the_improved_value_is_the_value_of_the_improved_policy() {
    let g = game(MATE_IN_ONE);
    let n = g.legal_moves().len() as u32;
    assert!(n > 30, "{n} legal moves");
    let config = SearchConfig {
        algorithm: Algorithm::Gumbel,
        gumbel_considered_moves: n,
        win_check: WinCheck::Off,
        ..SearchConfig::default()
    };
    let (g, r) = search(MATE_IN_ONE, config, 64);
    let on_wins: f32 =
        r.moves.iter().zip(&r.policy).filter(|&(&m, _)| mates(&g, m)).map(|(_, p)| p).sum();
    assert!(on_wins > 0.9, "policy on the winning moves: {on_wins}");
    assert!(
        r.improved_value >= on_wins - 1e-4,
        "improved value {} with {on_wins} of the policy on wins",
        r.improved_value
    );
    assert!(r.root_value < 0.7, "the root's mean value: {}", r.root_value);
}

/// A small search whose evaluator gives the moves that win at once almost no prior: with
/// `root_win_check` the search still plays a win, for both algorithms; without it, the same
/// search (the control) does not, so the check is what finds the win.
#[test]
fn the_root_win_check_finds_a_win_the_priors_hide() {
    let g = game(MATE_IN_ONE);
    let wins = g.legal_moves().iter().filter(|&&m| mates(&g, m)).count();
    assert!(wins >= 2 && wins < g.legal_moves().len());
    for algorithm in [Algorithm::Puct, Algorithm::Gumbel] {
        for check in [true, false] {
            let config = SearchConfig {
                algorithm,
                gumbel_considered_moves: 4,
                win_check: if check { WinCheck::Root } else { WinCheck::Off },
                ..SearchConfig::default()
            };
            let mut s = Search::new(g.clone(), Checked::new(config).unwrap());
            let mut eval =
                ScriptedEvaluator::new(|game: &Game, moves: &[Move], priors: &mut [f32]| {
                    for (p, &m) in priors.iter_mut().zip(moves) {
                        *p = if mates(game, m) { 1e-6 } else { 1.0 };
                    }
                    0.0
                });
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let r = s.run(8, true, &mut rng, &mut eval, &mut EvalBuffer::new()).unwrap();
            assert_eq!(r.total_visits(), 8);
            let played = s.choose_move(&r, 1.0, &mut rng);
            assert_eq!(mates(&g, r.best), check, "{algorithm:?}, check {check}: best {}", r.best);
            assert_eq!(mates(&g, played), check, "{algorithm:?}, check {check}: played {played}");
            if check {
                assert_eq!(r.best_value, 1.0);
                // Searched (a Gumbel considered move; PUCT's first visit), so the training
                // target sees it too.
                let i = r.moves.iter().position(|&m| m == r.best).unwrap();
                assert!(r.visits[i] > 0, "{algorithm:?}: the win was not searched");
                assert!(r.policy[i] > 0.1, "{algorithm:?}: target {}", r.policy[i]);
            }
        }
    }
}

/// An evaluator that favours exactly the moves that allow a mate in one and values every
/// position 0: only `win_check = "tree"` tells the Gumbel search that those moves lose; with
/// `"root"` (the control) it trusts the priors and blunders.
#[test]
fn the_tree_win_check_sees_a_mate_in_one_allowed() {
    let g = game(AVOID_MATE);
    let n = g.legal_moves().len() as u32;
    for (check, should_blunder) in [(WinCheck::Tree, false), (WinCheck::Root, true)] {
        let config = SearchConfig {
            algorithm: Algorithm::Gumbel,
            gumbel_considered_moves: n,
            win_check: check,
            ..SearchConfig::default()
        };
        let mut s = Search::new(g.clone(), Checked::new(config).unwrap());
        let mut eval = ScriptedEvaluator::new(|game: &Game, moves: &[Move], priors: &mut [f32]| {
            for (p, &m) in priors.iter_mut().zip(moves) {
                *p = if allows_mate(game, m) { 1.0 } else { 1e-3 };
            }
            0.0
        });
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let r = s.run(2 * n, false, &mut rng, &mut eval, &mut EvalBuffer::new()).unwrap();
        assert_eq!(r.total_visits(), 2 * n);
        assert_eq!(allows_mate(&g, r.best), should_blunder, "{check:?}: best {}", r.best);
        let evaluated: usize = eval.log().batch_sizes.iter().sum();
        if check == WinCheck::Tree {
            // The nodes after a blunder are proven wins for Black: never evaluated.
            assert!(evaluated < 2 * n as usize, "evaluated {evaluated}");
        }
    }
}

/// PUCT at a small budget with priors that favour the blunders: a blunder's first visit shows
/// the loss (`win_check = "tree"`), but with most of the prior it still gathers the most visits.
/// The move played is the most visited one that does not lose at once.
#[test]
fn puct_never_plays_a_move_shown_to_lose_at_once() {
    let g = game(AVOID_MATE);
    let config = SearchConfig { algorithm: Algorithm::Puct, ..SearchConfig::default() };
    let mut s = Search::new(g.clone(), Checked::new(config).unwrap());
    let mut eval = ScriptedEvaluator::new(|game: &Game, moves: &[Move], priors: &mut [f32]| {
        for (p, &m) in priors.iter_mut().zip(moves) {
            *p = if allows_mate(game, m) { 1.0 } else { 1e-3 };
        }
        0.0
    });
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let r = s.run(32, false, &mut rng, &mut eval, &mut EvalBuffer::new()).unwrap();
    let most = (0..r.moves.len()).max_by_key(|&i| r.visits[i]).unwrap();
    assert!(allows_mate(&g, r.moves[most]), "the scenario: a blunder is the most visited");
    assert!(!allows_mate(&g, r.best), "{} allows mate in one", r.best);
    let best = r.moves.iter().position(|&m| m == r.best).unwrap();
    let safe_most = (0..r.moves.len())
        .filter(|&i| !allows_mate(&g, r.moves[i]))
        .map(|i| r.visits[i])
        .max()
        .unwrap();
    assert_eq!(r.visits[best], safe_most, "the most visited of the safe moves");
}

#[test]
fn puct_avoids_a_move_that_allows_mate_in_one() {
    let g = game(AVOID_MATE);
    let blunders: Vec<Move> = g.legal_moves().into_iter().filter(|&m| allows_mate(&g, m)).collect();
    assert!(blunders.len() >= 5, "the position must offer blunders: {blunders:?}");
    assert!(blunders.len() < g.legal_moves().len());
    let (g, r) = search(AVOID_MATE, SearchConfig::default(), 3000);
    assert!(!allows_mate(&g, r.best), "{} allows mate in one", r.best);
    for b in &blunders {
        let i = r.moves.iter().position(|m| m == b).unwrap();
        let best = r.moves.iter().position(|&m| m == r.best).unwrap();
        assert!(r.visits[i] < r.visits[best], "blunder {b} has {} visits", r.visits[i]);
    }
}

#[test]
fn visit_counts_add_up_to_the_simulations() {
    for algorithm in [Algorithm::Puct, Algorithm::Gumbel] {
        for (sims, vl) in [(1, 1), (17, 4), (64, 8), (300, 16)] {
            let config = SearchConfig { algorithm, virtual_loss_batch: vl, ..Default::default() };
            let (_, r) = search(xiangqi::START_FEN, config, sims);
            assert_eq!(r.total_visits(), sims, "{algorithm:?} sims={sims} vl={vl}");
            let sum: f32 = r.policy.iter().sum();
            assert!((sum - 1.0).abs() < 1e-4);
        }
    }
}

#[test]
fn terminal_simulations_count_without_evaluation() {
    // With only mates visited, most simulations never reach the evaluator.
    let g = game(MATE_IN_ONE);
    let mut s = Search::new(g, Checked::default());
    let mut eval = ScriptedEvaluator::uniform();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let r = s.run(1000, false, &mut rng, &mut eval, &mut EvalBuffer::new()).unwrap();
    assert_eq!(r.total_visits(), 1000);
    let evaluated: usize = eval.log().batch_sizes.iter().sum();
    assert!(evaluated < 1000, "evaluated {evaluated}");
}

#[test]
fn dirichlet_noise_only_where_configured() {
    let g = game(xiangqi::START_FEN);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let uniform = 1.0 / 44.0;
    let run = |noise: bool, config: SearchConfig, rng: &mut ChaCha8Rng| {
        let mut s = Search::new(g.clone(), Checked::new(config).unwrap());
        s.run(16, noise, rng, &mut UniformEvaluator, &mut EvalBuffer::new()).unwrap();
        s.root_priors().to_vec()
    };
    let noisy = run(true, SearchConfig::default(), &mut rng);
    assert!(noisy.iter().any(|p| (p - uniform).abs() > 1e-3), "noise requested but absent");
    let sum: f32 = noisy.iter().sum();
    assert!((sum - 1.0).abs() < 1e-4);
    let clean = run(false, SearchConfig::default(), &mut rng);
    assert!(clean.iter().all(|p| (p - uniform).abs() < 1e-6), "noise not requested but present");
    let zero_eps = SearchConfig { dirichlet_epsilon: 0.0, ..SearchConfig::default() };
    let clean = run(true, zero_eps, &mut rng);
    assert!(clean.iter().all(|p| (p - uniform).abs() < 1e-6), "epsilon 0 must mean no noise");
}

#[test]
fn same_seed_same_search() {
    for algorithm in [Algorithm::Puct, Algorithm::Gumbel] {
        let config = SearchConfig { algorithm, ..SearchConfig::default() };
        let run = |seed| {
            let mut s =
                Search::new(game(xiangqi::START_FEN), Checked::new(config.clone()).unwrap());
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            s.run(200, true, &mut rng, &mut UniformEvaluator, &mut EvalBuffer::new()).unwrap()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5).visits, run(6).visits, "{algorithm:?}: the seed must matter");
    }
}

#[test]
fn tree_reuse_keeps_the_subtree() {
    let mut s = Search::new(game(xiangqi::START_FEN), Checked::default());
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut buf = EvalBuffer::new();
    let r = s.run(400, false, &mut rng, &mut UniformEvaluator, &mut buf).unwrap();
    let i = r.moves.iter().position(|&m| m == r.best).unwrap();
    let kept = r.visits[i];
    s.advance(r.best);
    assert_eq!(s.tree().visits(NodeId::ROOT), kept);
    assert_eq!(s.game().moves(), &[r.best]);
    let r2 = s.run(100, false, &mut rng, &mut UniformEvaluator, &mut buf).unwrap();
    assert_eq!(r2.total_visits(), kept - 1 + 100);
    let tree = s.tree();
    let root_children: u32 =
        tree.children(NodeId::ROOT).iter().filter(|c| !c.is_none()).map(|&c| tree.visits(c)).sum();
    assert_eq!(root_children + 1, tree.visits(NodeId::ROOT));
}

#[test]
fn search_game_for_xiangqi_uses_the_rules() {
    // Perpetual check by Red under asian rules is a loss for Red: the search sees the verdict
    // through Game, as a terminal value.
    let mut g = game(xiangqi::START_FEN);
    let mut moves = Vec::new();
    g.legal_moves_into(&mut moves);
    assert_eq!(moves.len(), 44);
    assert_eq!(g.terminal_value(), None);
    for uci in ["h2e2", "h9g7", "e2h2", "g7h9", "h2e2", "h9g7", "e2h2", "g7h9"] {
        let m = g.position().parse_uci(uci).unwrap();
        SearchGame::play(&mut g, m);
    }
    assert_eq!(g.outcome().map(|o| o.reason()), Some(OutcomeReason::Repetition));
    assert_eq!(g.terminal_value(), Some(0.0));
}

#[test]
fn noise_does_not_accumulate_over_searches_from_one_root() {
    let mut s = Search::new(game(xiangqi::START_FEN), Checked::default());
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut buf = EvalBuffer::new();
    s.run(32, true, &mut rng, &mut UniformEvaluator, &mut buf).unwrap();
    assert!(s.root_priors().iter().any(|p| (p - 1.0 / 44.0).abs() > 1e-3));
    s.run(32, false, &mut rng, &mut UniformEvaluator, &mut buf).unwrap();
    assert!(s.root_priors().iter().all(|p| (p - 1.0 / 44.0).abs() < 1e-6));
}

/// Uniform priors and the same win/draw/loss, `(0.35, 0.3, 0.35)`, for every state.
struct DrawishEvaluator;

impl xiangqi_search::Evaluator<Game> for DrawishEvaluator {
    type Error = std::convert::Infallible;

    fn evaluate(
        &mut self,
        batch: &[xiangqi_search::EvalRequest<'_, Game>],
        out: &mut EvalBuffer,
    ) -> Result<(), Self::Error> {
        for (i, r) in batch.iter().enumerate() {
            out.priors_mut(i).fill(1.0 / r.moves.len() as f32);
            out.set_wdl(i, 0.35, 0.3, 0.35);
        }
        Ok(())
    }
}

#[test]
fn draw_probabilities_are_backed_up_beside_the_values() {
    // From the start no game ends within a few plies: every visit carries the evaluator's 0.3.
    let start = game(xiangqi::START_FEN);
    let mut s = Search::new(start.clone(), Checked::default());
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    s.run(300, false, &mut rng, &mut DrawishEvaluator, &mut EvalBuffer::new()).unwrap();
    let tree = s.tree();
    let d = tree.draw_rate(NodeId::ROOT).unwrap();
    assert!((d - 0.3).abs() < 1e-5, "root {d}");
    let mut visited = 0;
    for &child in tree.children(NodeId::ROOT) {
        if !child.is_none() && tree.visits(child) > 0 {
            visited += 1;
            let d = tree.draw_rate(child).unwrap();
            assert!((d - 0.3).abs() < 1e-5, "child {d}");
        }
    }
    assert!(visited > 1);
    // A mate is a win by the rules, not a draw: its visits carry no draw probability, and they
    // pull the root's mean below the evaluator's.
    let g = game(MATE_IN_ONE);
    let mut s = Search::new(g.clone(), Checked::default());
    s.run(200, false, &mut rng, &mut DrawishEvaluator, &mut EvalBuffer::new()).unwrap();
    let tree = s.tree();
    let moves = tree.moves(NodeId::ROOT);
    let mut mates_seen = 0;
    for (k, &child) in tree.children(NodeId::ROOT).iter().enumerate() {
        if !child.is_none() && tree.visits(child) > 0 && mates(&g, moves[k]) {
            mates_seen += 1;
            assert_eq!(tree.draw_rate(child), Some(0.0));
        }
    }
    assert!(mates_seen >= 1);
    assert!(tree.draw_rate(NodeId::ROOT).unwrap() < 0.29);
}

/// Peaked priors that differ by move, as a trained net's do (so that searches of the same
/// position share their likely lines), and a value that differs by position, so that a kept
/// evaluation of the wrong node would change the search.
fn peaked(g: &Game, moves: &[Move], priors: &mut [f32]) -> f32 {
    for (p, m) in priors.iter_mut().zip(moves) {
        *p = (1.5 * ((m.to().index() + m.from().index()) % 7) as f32).exp();
    }
    let sum: f32 = priors.iter().sum();
    priors.iter_mut().for_each(|p| *p /= sum);
    (g.position().key() % 1000) as f32 / 1000.0 - 0.5
}

/// Runs a search of `sims` simulations with [`peaked`], returning its result and the games it
/// evaluated (by their moves from the start).
fn searched(
    s: &mut Search<Game>,
    sims: u32,
    seed: u64,
) -> (xiangqi_search::SearchResult<Move>, Vec<Vec<Move>>) {
    let mut seen = Vec::new();
    let mut evaluator = ScriptedEvaluator::new(|g: &Game, m: &[Move], p: &mut [f32]| {
        seen.push(g.moves().to_vec());
        peaked(g, m, p)
    });
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let r = s.run(sims, true, &mut rng, &mut evaluator, &mut EvalBuffer::new()).unwrap();
    drop(evaluator);
    (r, seen)
}

/// Without tree reuse (Gumbel, or PUCT with `reuse_tree = false`), `advance` keeps the
/// evaluations of the subtree under the move played: the next search sends none of those
/// positions to the evaluator again, and, with an evaluator that gives the same answer for the
/// same game, it is the same search as a fresh one with the same seed (one leaf per descent, or
/// several under virtual loss).
#[test]
fn advance_keeps_the_subtrees_evaluations() {
    for (algorithm, virtual_loss_batch) in
        [(Algorithm::Gumbel, 1), (Algorithm::Gumbel, 8), (Algorithm::Puct, 1), (Algorithm::Puct, 8)]
    {
        let config = Checked::new(SearchConfig {
            algorithm,
            reuse_tree: false,
            virtual_loss_batch,
            ..SearchConfig::default()
        })
        .unwrap();
        let mut s = Search::new(game(xiangqi::START_FEN), config.clone());
        let (r, first) = searched(&mut s, 64, 1);
        let kept: Vec<&Vec<Move>> = first.iter().filter(|m| m.first() == Some(&r.best)).collect();
        assert!(
            kept.len() >= 3,
            "{algorithm:?}/{virtual_loss_batch}: the test needs a subtree, got {}",
            kept.len()
        );
        s.advance(r.best);
        assert_eq!(s.game().moves(), &[r.best], "{algorithm:?}/{virtual_loss_batch}");
        assert_eq!(s.tree().status(NodeId::ROOT), xiangqi_search::NodeStatus::Expanded);
        assert_eq!(
            s.tree().visits(NodeId::ROOT),
            1,
            "{algorithm:?}/{virtual_loss_batch}: only its own evaluation"
        );
        assert_eq!(
            s.tree().len(),
            kept.len(),
            "{algorithm:?}/{virtual_loss_batch}: the evaluated subtree is kept"
        );

        let mut after = game(xiangqi::START_FEN);
        after.play(r.best).unwrap();
        let mut fresh = Search::new(after, config.clone());
        let (want, fresh_seen) = searched(&mut fresh, 48, 2);
        let (got, got_seen) = searched(&mut s, 48, 2);
        let revisited = fresh_seen.iter().filter(|m| kept.contains(m)).count();
        assert!(
            revisited >= 2,
            "{algorithm:?}/{virtual_loss_batch}: a fresh search evaluates kept positions again ({revisited} of {})",
            kept.len()
        );
        assert!(
            !got_seen.iter().any(|m| kept.contains(&m)),
            "{algorithm:?}/{virtual_loss_batch}: a kept position was evaluated again"
        );
        assert_eq!(
            got_seen.len(),
            fresh_seen.len() - revisited,
            "{algorithm:?}/{virtual_loss_batch}"
        );
        assert_eq!(got.moves, want.moves, "{algorithm:?}/{virtual_loss_batch}");
        assert_eq!(got.visits, want.visits, "{algorithm:?}/{virtual_loss_batch}");
        assert_eq!(got.policy, want.policy, "{algorithm:?}/{virtual_loss_batch}");
        assert_eq!(got.best, want.best, "{algorithm:?}/{virtual_loss_batch}");
        assert_eq!(got.root_value, want.root_value, "{algorithm:?}/{virtual_loss_batch}");
        assert_eq!(got.improved_value, want.improved_value, "{algorithm:?}/{virtual_loss_batch}");
    }
}

/// A second Gumbel search from the same root (a caller that searches one position in parts)
/// counts its visits from zero but sends nothing the first one evaluated to the evaluator again.
#[test]
fn a_second_gumbel_search_of_the_root_keeps_the_evaluations() {
    let config =
        Checked::new(SearchConfig { algorithm: Algorithm::Gumbel, ..SearchConfig::default() })
            .unwrap();
    let mut s = Search::new(game(xiangqi::START_FEN), config.clone());
    let (_, first) = searched(&mut s, 48, 1);
    assert_eq!(first.len(), 49, "the root and one leaf a simulation");
    let (again, second) = searched(&mut s, 48, 2);
    assert_eq!(again.visits.iter().sum::<u32>(), 48, "sequential halving counts from zero");
    assert!(!second.iter().any(|m| first.contains(m)), "an evaluated position was sent again");
    let (want, fresh) = searched(&mut Search::new(game(xiangqi::START_FEN), config), 48, 2);
    let revisited = fresh.iter().filter(|m| first.contains(m)).count();
    assert!(revisited >= 5, "a fresh search would evaluate {revisited} of them again");
    assert_eq!(second.len(), fresh.len() - revisited);
    assert_eq!(again, want);
}

/// `policy_surprise` by hand, and `SearchResult::policy_surprise` as the divergence of the
/// search's target from the evaluator's prior at the root before Dirichlet noise, for both
/// algorithms, with and without noise.
#[test]
fn the_policy_surprise_is_the_targets_divergence_from_the_prior() {
    // (1/2, 1/2) against (1/4, 3/4): 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3).
    let kl = policy_surprise(&[0.5, 0.5], &[0.25, 0.75]);
    assert!((kl - 0.5 * (4.0f32 / 3.0).ln()).abs() < 1e-6, "{kl}");
    assert!(policy_surprise(&[0.2, 0.8], &[0.2, 0.8]).abs() < 1e-6);
    // A zero target entry adds nothing; a zero prior is floored at 1e-8.
    assert!((policy_surprise(&[0.0, 1.0], &[0.5, 0.5]) - 2.0f32.ln()).abs() < 1e-6);
    assert!((policy_surprise(&[1.0, 0.0], &[0.0, 1.0]) - 1e8f32.ln()).abs() < 1e-3);
    assert_eq!(policy_surprise(&[], &[]), 0.0);

    // A prior proportional to 1, 2, ..., 5, 1, 2, ... over the moves in their order, and values
    // that differ from position to position (by the number of legal moves), so that the
    // Gumbel target departs from the prior.
    fn prior(moves: usize) -> Vec<f32> {
        let w: Vec<f32> = (0..moves).map(|i| 1.0 + (i % 5) as f32).collect();
        let sum: f32 = w.iter().sum();
        w.iter().map(|x| x / sum).collect()
    }
    let g = game(xiangqi::START_FEN);
    for algorithm in [Algorithm::Puct, Algorithm::Gumbel] {
        for noise in [false, true] {
            let config = SearchConfig { algorithm, ..SearchConfig::default() };
            let mut s = Search::new(g.clone(), Checked::new(config).unwrap());
            let mut eval = ScriptedEvaluator::new(|_: &Game, moves: &[Move], p: &mut [f32]| {
                p.copy_from_slice(&prior(moves.len()));
                (moves.len() % 5) as f32 / 2.0 - 1.0
            });
            let mut rng = ChaCha8Rng::seed_from_u64(9);
            let r = s.run(32, noise, &mut rng, &mut eval, &mut EvalBuffer::new()).unwrap();
            let q = prior(r.moves.len());
            let expected: f32 = r
                .policy
                .iter()
                .zip(&q)
                .filter(|(p, _)| **p > 0.0)
                .map(|(p, q)| p * (p / q).ln())
                .sum();
            assert!(
                (r.policy_surprise - expected).abs() < 1e-4 * expected.max(1.0),
                "{algorithm:?}, noise {noise}: {} against {expected}",
                r.policy_surprise
            );
            assert!(expected > 0.01, "{algorithm:?}: the target equals the prior ({expected})");
        }
    }
}
