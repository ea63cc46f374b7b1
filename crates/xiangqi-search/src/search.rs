//! Monte Carlo tree search over a [`SearchGame`]: AlphaZero's PUCT, or a Gumbel root with
//! sequential halving, on the arena [`Tree`].
//!
//! # One simulation
//! ```text
//!   select ──▶ (edge without a child) ──▶ create child: clone parent state, play move
//!     │                                      │
//!     │                                      ├─ rules say terminal ─▶ back up the rules' value
//!     │                                      └─ else pending: virtual loss on the path,
//!     │                                         wait for the evaluator (batched)
//!     ├─ (terminal node) ─▶ back up its value again
//!     └─ (kept evaluated node, no visits yet) ─▶ virtual loss on the path; at apply, back up
//!                                                 its kept value (no evaluation asked)
//!   apply(evaluation) ──▶ priors on the leaf's edges, back up the value along the path
//! ```
//!
//! A search is driven from outside so that leaves of many trees can share one evaluation batch:
//! [`Search::start`], then repeatedly [`Search::gather`] (select up to `n` leaves, kept apart by
//! virtual loss), [`Search::requests`] (the leaves to evaluate), [`Search::apply`] (their
//! evaluations), until [`Search::is_done`]. [`Search::run`] does all of it with one evaluator.
//!
//! # Moves that win at once (`win_check`)
//! With `"root"` or `"tree"` (the default), every root move is tried against the rules before
//! the search spends its budget: a move that ends the game with a win for the mover (checkmate,
//! stalemate, a repetition verdict against the opponent) is always among the Gumbel considered
//! moves (PUCT visits it first), and the search recommends it (`best`, value `+1`) whatever its
//! prior and visits. The training target stays the search's own (visits, or the improved
//! policy); both put their weight on the win once it is visited. With `"tree"`, a new node
//! whose side to move has such a move is a proven win ([`NodeStatus::ProvenWin`]): valued `+1`
//! like a terminal node and never sent to the evaluator, so a move into it (one that allows a
//! mate in one) gets `Q = −1` at its first visit. This is a one-ply version of the MCTS-solver's
//! proven values (Winands, Björnsson and Saito, "Monte-Carlo Tree Search Solver", 2008).
//! Without it, a net that has not yet learned mates misses them whenever its priors keep them
//! unvisited.
//!
//! # Values
//! Every value is in `[-1, 1]`. An evaluator's value and a terminal value are for the side to
//! move at their node; `Q` of an edge is for the side that chooses it. Backing up a value
//! negates it at every ply.
//!
//! # PUCT (Silver et al., AlphaZero)
//! At a node with `N` visits (in-flight ones included), the child maximising
//! `Q(a) + c_puct · P(a) · √N / (1 + N(a))` is selected. An unvisited child gets the first-play
//! urgency `Q(parent) − fpu_reduction · √(Σ P of visited children)`. A simulation in flight counts
//! as a visit with a loss (virtual loss). In self-play the root priors are mixed with Dirichlet
//! noise: `P ← (1 − ε) P + ε η`, `η ~ Dir(α)`. The training target is the visit distribution.
//!
//! # Gumbel (Danihelka et al., "Policy improvement by planning with Gumbel", ICLR 2022)
//! At the root, `m` moves are drawn without replacement by Gumbel top-k (`g(a) + logits(a)`,
//! `g ~ Gumbel(0, 1)`, `g = 0` without noise); sequential halving then spends the budget in
//! `⌈log₂ m⌉` phases, each keeping the better half by `g(a) + logits(a) + σ(q̂(a))`, where `q̂`
//! is the completed Q (visited moves: their Q; others: the mixed value estimate), rescaled to
//! `[0, 1]` over the node's moves, and `σ(q) = (c_visit + max_b N(b)) · c_scale · q`. The visit
//! schedule is the one of DeepMind's `mctx` library, which yields exactly the budget. The move
//! played is the survivor with the best score; the training target is the improved policy
//! `softmax(logits + σ(q̂))` over all legal moves. Below the root, selection is the paper's
//! deterministic `argmax π'(a) − N(a) / (1 + Σ N)` with `π'` that node's improved policy, or
//! PUCT ([`GumbelInterior`]).

use rand::{Rng, RngExt};
use rand_distr::{Distribution, Gamma};

use crate::config::{Algorithm, Checked, GumbelInterior, SearchConfig, WinCheck};
use crate::eval::{EvalBuffer, EvalRequest, Evaluator};
use crate::game::SearchGame;
use crate::tree::{Node, NodeId, NodeStatus, Tree};

mod gumbel;
pub use gumbel::halving_schedule;
use gumbel::{completed_q, logit, sample_gumbel, sigma_completed_q, softmax};

/// A leaf waiting for its evaluation, and the path that led to it.
#[derive(Clone, Copy, Debug)]
struct PendingLeaf {
    node: NodeId,
    path_start: u32,
    path_len: u32,
    /// The node holds a kept evaluation ([`Tree::forget_visits`]): nothing is asked of the
    /// evaluator, and [`Search::apply`] backs up the kept value.
    kept: bool,
}

/// How one descent ended.
enum Descent {
    /// A new leaf waits for the evaluator.
    Leaf,
    /// A terminal node was reached and its value backed up at once.
    Terminal,
    /// The descent met a leaf already waiting for its evaluation.
    Collision,
}

/// Root state of a Gumbel search.
#[derive(Clone, Debug, Default)]
struct GumbelRoot {
    /// Gumbel noise per root edge (0 without noise).
    g: Vec<f32>,
    /// Edge indices (relative to the root's first edge) of the considered moves.
    considered: Vec<u32>,
    /// Visit count each simulation's root move must have (mctx's schedule).
    schedule: Vec<u32>,
}

/// The outcome of a search at the root.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult<M> {
    /// The legal moves at the root, in evaluator order.
    pub moves: Vec<M>,
    /// Completed visits of each move's subtree.
    pub visits: Vec<u32>,
    /// The training target over `moves` (sums to 1): the visit distribution for PUCT, the
    /// improved policy `softmax(logits + σ(completed Q))` for Gumbel.
    pub policy: Vec<f32>,
    /// The move the search recommends: the most visited (PUCT; ties to the higher prior) or the
    /// sequential-halving winner (Gumbel).
    pub best: M,
    /// `Q` of `best` for the side to move, in `[-1, 1]`.
    pub best_value: f32,
    /// The mean value of the root for the side to move, in `[-1, 1]`.
    pub root_value: f32,
    /// The value of the training target's policy for the side to move, in `[-1, 1]`: for
    /// Gumbel `Σ_a π'(a) · q̂(a)`, with `π'` the improved policy and `q̂` the completed Q
    /// (visited moves: their Q; the others: the mixed value estimate), as the Gumbel paper's
    /// policy improvement values it; for PUCT, whose target is the visit distribution, the
    /// mean value `root_value`. Self-play records it instead of `root_value` with
    /// `selfplay.recorded_value = "improved"`.
    pub improved_value: f32,
    /// How much the search's target departs from the network's prior at the root, in nats:
    /// the Kullback–Leibler divergence `Σ_a policy(a) · ln(policy(a) / prior(a))` of `policy`
    /// from the evaluator's priors before any root noise (each prior floored at 1e-8), in
    /// `[0, MAX_POLICY_SURPRISE]`.
    /// KataGo's policy-surprise weighting trains more often on positions where it is large
    /// (`policySurpriseDataWeight`; KataGo's `docs/KataGoMethods.md`, "Policy Surprise
    /// Weighting", a method added after its 2019 paper).
    pub policy_surprise: f32,
}

/// The largest policy surprise: with each prior floored at 1e-8 the divergence of a distribution
/// from it is at most `ln(10^8) ≈ 18.42` nats; 18.5 leaves room for rounding. Shards refuse more.
pub const MAX_POLICY_SURPRISE: f32 = 18.5;

/// `KL(target ‖ prior)` in nats, each prior floored at 1e-8, terms with a zero target left out;
/// in `[0, MAX_POLICY_SURPRISE]` (rounding is clamped) and `0` for empty slices. `target` and
/// `prior` are over the same moves.
pub fn policy_surprise(target: &[f32], prior: &[f32]) -> f32 {
    let kl: f32 = target
        .iter()
        .zip(prior)
        .filter(|(t, _)| **t > 0.0)
        .map(|(&t, &q)| t * (t / q.max(1e-8)).ln())
        .sum();
    if kl.is_finite() { kl.clamp(0.0, MAX_POLICY_SURPRISE) } else { 0.0 }
}

/// An MCTS over game states `G` (see the [module documentation](self)).
#[derive(Clone, Debug)]
pub struct Search<G: SearchGame> {
    config: Checked<SearchConfig>,
    tree: Tree<G>,
    target: u32,
    completed: u32,
    in_flight_sims: u32,
    pending: Vec<PendingLeaf>,
    pending_paths: Vec<NodeId>,
    path: Vec<NodeId>,
    root_requested: bool,
    noise: bool,
    /// Dirichlet samples, drawn at [`Search::start`], mixed in once the root is evaluated.
    dirichlet: Vec<f32>,
    /// The evaluator's root priors before noise.
    raw_root_priors: Vec<f32>,
    /// Whether the root's priors currently hold noise (to be undone before new noise).
    root_noised: bool,
    root_prepared: bool,
    /// Root edges (relative to the root's first edge) whose move wins at once (`win_check`),
    /// found when the root is prepared.
    root_wins: Vec<u32>,
    gumbel: GumbelRoot,
    scratch: Vec<f32>,
}

impl<G: SearchGame> Search<G> {
    /// A search rooted at `game`, with settings checked beforehand ([`Checked::new`]).
    pub fn new(game: G, config: Checked<SearchConfig>) -> Search<G> {
        Search {
            config,
            tree: Tree::new(game),
            target: 0,
            completed: 0,
            in_flight_sims: 0,
            pending: Vec::new(),
            pending_paths: Vec::new(),
            path: Vec::new(),
            root_requested: false,
            noise: false,
            dirichlet: Vec::new(),
            raw_root_priors: Vec::new(),
            root_noised: false,
            root_prepared: false,
            root_wins: Vec::new(),
            gumbel: GumbelRoot::default(),
            scratch: Vec::new(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &Checked<SearchConfig> {
        &self.config
    }

    /// The tree.
    pub fn tree(&self) -> &Tree<G> {
        &self.tree
    }

    /// The state at the root.
    ///
    /// # Panics
    /// If the root is terminal (its state is not kept); check [`Search::root_is_terminal`].
    pub fn game(&self) -> &G {
        self.tree.game(NodeId::ROOT).expect("the root is terminal")
    }

    /// Whether the rules have ended the game at the root (no search possible).
    pub fn root_is_terminal(&self) -> bool {
        self.tree.status(NodeId::ROOT) == NodeStatus::Terminal
    }

    /// Starts a search of `simulations` simulations from the root; with `noise`, Dirichlet noise
    /// (PUCT, when `dirichlet_epsilon > 0`) or Gumbel noise (Gumbel) is drawn from `rng`.
    /// PUCT keeps the visits already in a reused tree and adds `simulations` more; Gumbel
    /// starts from zero visits (sequential halving counts them) but keeps the tree's evaluations
    /// ([`Tree::forget_visits`]).
    ///
    /// # Panics
    /// If the root is terminal, a leaf of an earlier search is still pending, or
    /// `simulations` is 0.
    pub fn start<R: Rng + ?Sized>(&mut self, simulations: u32, noise: bool, rng: &mut R) {
        assert!(!self.root_is_terminal(), "Search::start on a finished game");
        assert!(self.pending.is_empty(), "Search::start with leaves pending");
        assert!(simulations > 0, "Search::start with no simulations");
        if self.config.algorithm == Algorithm::Gumbel && self.tree.len() > 1 {
            // Sequential halving counts visits from zero; the evaluations stay.
            self.tree.forget_visits();
        }
        if self.root_noised {
            // A second search from the same root: start again from the evaluator's priors.
            let range = self.tree.nodes[0].edges();
            self.tree.priors[range].copy_from_slice(&self.raw_root_priors);
            self.root_noised = false;
        }
        self.target = simulations;
        self.completed = 0;
        self.in_flight_sims = 0;
        self.noise = noise;
        self.root_prepared = false;
        self.root_wins.clear();
        self.root_requested = false;
        let n = self.tree.nodes[0].num_edges as usize;
        self.dirichlet.clear();
        self.gumbel.g.clear();
        match self.config.algorithm {
            Algorithm::Puct if noise && self.config.dirichlet_epsilon > 0.0 => {
                if let Ok(gamma) = Gamma::new(self.config.dirichlet_alpha, 1.0) {
                    self.dirichlet.extend((0..n).map(|_| gamma.sample(rng)));
                }
            }
            Algorithm::Puct => {}
            Algorithm::Gumbel => {
                self.gumbel.g.extend((0..n).map(|_| if noise { sample_gumbel(rng) } else { 0.0 }));
            }
        }
        if self.tree.status(NodeId::ROOT) == NodeStatus::Expanded {
            self.prepare_root();
        }
    }

    /// Whether the current search has run all its simulations.
    pub fn is_done(&self) -> bool {
        self.root_prepared && self.pending.is_empty() && self.completed >= self.target
    }

    /// Simulations completed in the current search.
    pub fn completed(&self) -> u32 {
        self.completed
    }

    /// Selects up to `max_leaves` new leaves for evaluation (kept apart by virtual loss) and
    /// returns how many were added. Simulations that end in a terminal node are backed up at
    /// once and count towards the budget without an evaluation. Returns 0 when the search is
    /// done or every further descent would meet a leaf already waiting.
    pub fn gather(&mut self, max_leaves: usize) -> usize {
        if max_leaves == 0 {
            return 0;
        }
        match self.tree.status(NodeId::ROOT) {
            NodeStatus::Terminal | NodeStatus::ProvenWin => return 0,
            NodeStatus::Pending => {
                if self.root_requested {
                    return 0;
                }
                self.root_requested = true;
                self.path.clear();
                self.path.push(NodeId::ROOT);
                self.push_pending(NodeId::ROOT, false);
                return 1;
            }
            NodeStatus::Expanded => {}
        }
        let mut added = 0;
        while added < max_leaves && self.completed + self.in_flight_sims < self.target {
            match self.descend() {
                Descent::Leaf => {
                    added += 1;
                    self.in_flight_sims += 1;
                }
                Descent::Terminal => self.completed += 1,
                Descent::Collision => break,
            }
        }
        added
    }

    /// Number of leaves waiting for [`Search::apply`]: those that ask the evaluator (see
    /// [`Search::requests`]) and those whose kept evaluation is backed up there.
    pub fn num_pending(&self) -> usize {
        self.pending.len()
    }

    /// The leaves waiting for an evaluation, in the order [`Search::apply`] expects, appended
    /// to `out`; none when every waiting leaf holds a kept evaluation.
    pub fn requests<'a>(&'a self, out: &mut Vec<EvalRequest<'a, G>>) {
        for p in self.pending.iter().filter(|p| !p.kept) {
            let game = self.tree.game(p.node).expect("pending nodes keep their state");
            out.push(EvalRequest { game, moves: self.tree.moves(p.node) });
        }
    }

    /// Applies evaluations `evals[first..]`, one for each leaf that asked for one (in the order
    /// of [`Search::requests`]), and backs every waiting leaf's value up (a kept evaluation's
    /// own). Returns how many evaluations were used.
    ///
    /// # Panics
    /// If `evals` has fewer entries than `first` plus the leaves that asked, or an entry's prior
    /// length differs from its leaf's move count.
    pub fn apply(&mut self, evals: &EvalBuffer, first: usize) -> usize {
        let pending = std::mem::take(&mut self.pending);
        let mut used = 0;
        for leaf in &pending {
            let path = &self.pending_paths
                [leaf.path_start as usize..(leaf.path_start + leaf.path_len) as usize];
            if leaf.kept {
                let n = self.tree.nodes[leaf.node.index()];
                backup(&mut self.tree.nodes, path, n.value, n.draw, true);
            } else {
                let priors = evals.priors(first + used);
                let value = evals.value(first + used);
                let draw = evals.draw(first + used);
                used += 1;
                let range = self.tree.nodes[leaf.node.index()].edges();
                assert_eq!(priors.len(), range.len(), "prior length differs from the move count");
                let dst = &mut self.tree.priors[range];
                dst.copy_from_slice(priors);
                normalize(dst);
                let n = &mut self.tree.nodes[leaf.node.index()];
                n.status = NodeStatus::Expanded;
                n.value = value;
                n.draw = draw;
                backup(&mut self.tree.nodes, path, value, draw, true);
            }
            if leaf.node != NodeId::ROOT {
                self.completed += 1;
                self.in_flight_sims -= 1;
            }
        }
        self.pending = pending;
        self.pending.clear();
        self.pending_paths.clear();
        if !self.root_prepared && self.tree.status(NodeId::ROOT) == NodeStatus::Expanded {
            self.prepare_root();
        }
        used
    }

    /// Runs the whole search with `evaluator`, `max_leaves` leaves per batch.
    ///
    /// # Errors
    /// The evaluator's error.
    ///
    /// # Panics
    /// As [`Search::start`].
    pub fn run<R: Rng + ?Sized, E: Evaluator<G>>(
        &mut self,
        simulations: u32,
        noise: bool,
        rng: &mut R,
        evaluator: &mut E,
        buffer: &mut EvalBuffer,
    ) -> Result<SearchResult<G::Move>, E::Error> {
        self.start(simulations, noise, rng);
        let batch = self.config.virtual_loss_batch as usize;
        crate::driver::drive_search(self, evaluator, buffer, batch, |_| false)?;
        Ok(self.result())
    }

    /// The root priors in use (after noise, if any), in the order of the root moves.
    pub fn root_priors(&self) -> &[f32] {
        self.tree.priors(NodeId::ROOT)
    }

    /// The search's view of the root.
    ///
    /// # Panics
    /// If the root is terminal or not yet evaluated.
    pub fn result(&self) -> SearchResult<G::Move> {
        assert_eq!(self.tree.status(NodeId::ROOT), NodeStatus::Expanded, "root not evaluated");
        let root = self.tree.nodes[0];
        let range = root.edges();
        let moves = self.tree.moves[range.clone()].to_vec();
        let visits: Vec<u32> = range.clone().map(|e| self.tree.edge_visits(e)).collect();
        let priors = &self.tree.priors[range.clone()];
        let root_value = if root.visits > 0 { -root.value_sum / root.visits as f32 } else { 0.0 };
        let mut improved_value = root_value;
        let (best, policy) = match self.config.algorithm {
            Algorithm::Puct => {
                // The most visited move, but never one the rules show to lose at once while
                // another does not: at a small budget a blunder with a large prior can keep the
                // most visits after its first visit showed the loss.
                let lost =
                    |a: usize| self.tree.is_won_by_rules(self.tree.children[range.start + a]);
                let most_visited = |candidates: &mut dyn Iterator<Item = usize>| {
                    candidates.max_by(|&a, &b| {
                        visits[a].cmp(&visits[b]).then(priors[a].total_cmp(&priors[b]))
                    })
                };
                let best = most_visited(&mut (0..moves.len()).filter(|&a| !lost(a)))
                    .or_else(|| most_visited(&mut (0..moves.len())))
                    .unwrap_or(0);
                let total: u32 = visits.iter().sum();
                let policy = if total == 0 {
                    priors.to_vec()
                } else {
                    visits.iter().map(|&v| v as f32 / total as f32).collect()
                };
                (best, policy)
            }
            Algorithm::Gumbel => {
                let mut sigma = Vec::new();
                sigma_completed_q(
                    &self.tree,
                    &self.config,
                    NodeId::ROOT,
                    &self.raw_root_priors,
                    &mut sigma,
                );
                let logits: Vec<f32> = self.raw_root_priors.iter().map(|&p| logit(p)).collect();
                let mut policy: Vec<f32> = logits.iter().zip(&sigma).map(|(l, s)| l + s).collect();
                softmax(&mut policy);
                let mut q = Vec::new();
                completed_q(&self.tree, NodeId::ROOT, &self.raw_root_priors, &mut q);
                let v: f32 = policy.iter().zip(&q).map(|(p, q)| p * q).sum();
                if v.is_finite() {
                    improved_value = v.clamp(-1.0, 1.0);
                }
                let best = self.gumbel_final(&sigma, &logits);
                (best, policy)
            }
        };
        let policy_surprise = policy_surprise(&policy, &self.raw_root_priors);
        if let Some(win) = self.best_win(&visits) {
            return SearchResult {
                best: moves[win],
                moves,
                visits,
                policy,
                best_value: 1.0,
                root_value,
                improved_value,
                policy_surprise,
            };
        }
        let best_edge = range.start + best;
        let child = self.tree.children[best_edge];
        let best_value =
            if child.is_none() { root_value } else { self.tree.q(child).unwrap_or(root_value) };
        SearchResult {
            best: moves[best],
            moves,
            visits,
            policy,
            best_value,
            root_value,
            improved_value,
            policy_surprise,
        }
    }

    /// Chooses the move to play: for PUCT with `temperature > 0`, a move drawn with probability
    /// proportional to `visits^(1 / temperature)`; otherwise [`SearchResult::best`].
    pub fn choose_move<R: Rng + ?Sized>(
        &self,
        result: &SearchResult<G::Move>,
        temperature: f32,
        rng: &mut R,
    ) -> G::Move {
        if self.config.algorithm == Algorithm::Gumbel || temperature <= 0.0 {
            return result.best;
        }
        if !self.root_wins.is_empty() {
            // A move that wins at once is played, not sampled.
            return result.best;
        }
        let max = result.visits.iter().copied().max().unwrap_or(0);
        if max == 0 {
            return result.best;
        }
        let inv_t = 1.0 / f64::from(temperature);
        let weights: Vec<f64> =
            result.visits.iter().map(|&v| (f64::from(v) / f64::from(max)).powf(inv_t)).collect();
        let total: f64 = weights.iter().sum();
        let mut x = rng.random::<f64>() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return result.moves[i];
            }
            x -= w;
        }
        result.best
    }

    /// Plays `mv` at the root. The subtree under `mv` becomes the new tree when `mv`'s node was
    /// evaluated (otherwise the tree starts afresh from the new state). With tree reuse (PUCT
    /// and `reuse_tree`) it keeps its statistics. Otherwise only its evaluations stay
    /// ([`Tree::forget_visits`]): the next search starts from zero visits, but a position the
    /// last search evaluated is not sent to the evaluator again. The evaluator would give the
    /// same answer for the same game, so the search is the one a fresh tree would give: a kept
    /// node's first visit waits for its batch, under virtual loss, as a new leaf would.
    ///
    /// # Panics
    /// If `mv` is not a legal move at the root, the root is terminal, or leaves are pending.
    pub fn advance(&mut self, mv: G::Move) {
        assert!(self.pending.is_empty(), "Search::advance with leaves pending");
        let root = self.tree.nodes[0];
        let e = root
            .edges()
            .find(|&e| self.tree.moves[e] == mv)
            .unwrap_or_else(|| panic!("Search::advance: {mv:?} is not a root move"));
        let child = self.tree.children[e];
        let reuse = self.config.reuse_tree && self.config.algorithm == Algorithm::Puct;
        if !child.is_none()
            && self.tree.status(child) == NodeStatus::Expanded
            && self.tree.nodes[child.index()].in_flight == 0
        {
            self.tree.retain_subtree(child);
            if !reuse {
                self.tree.forget_visits();
            }
        } else {
            let mut game = self.tree.games[0].take().expect("non-terminal root has its state");
            game.play(mv);
            self.tree.reset(game);
        }
        self.root_prepared = false;
        self.root_wins.clear();
        self.root_requested = false;
        self.root_noised = false;
        self.target = 0;
        self.completed = 0;
    }

    /// A search of `game`: `spare` (the finished search of an earlier game or move) started
    /// again from it with its allocations kept, or a new search with `config` when there is
    /// none. Self-play and the batched arena keep one spare per game slot this way.
    ///
    /// # Panics
    /// If `spare` has leaves pending.
    pub fn renewed(spare: Option<Search<G>>, game: G, config: &Checked<SearchConfig>) -> Search<G> {
        match spare {
            Some(mut s) => {
                s.reset(game);
                s
            }
            None => Search::new(game, config.clone()),
        }
    }

    /// Starts again from `game`, keeping the allocations.
    ///
    /// # Panics
    /// If leaves are pending.
    pub fn reset(&mut self, game: G) {
        assert!(self.pending.is_empty(), "Search::reset with leaves pending");
        self.tree.reset(game);
        self.root_prepared = false;
        self.root_wins.clear();
        self.root_requested = false;
        self.root_noised = false;
        self.target = 0;
        self.completed = 0;
    }

    // ----- internals -------------------------------------------------------------------------

    /// Among the root moves that win at once, the one with the most visits (ties to the higher
    /// prior), as an index into the root moves.
    fn best_win(&self, visits: &[u32]) -> Option<usize> {
        self.root_wins.iter().map(|&a| a as usize).max_by(|&a, &b| {
            visits[a]
                .cmp(&visits[b])
                .then(self.raw_root_priors[a].total_cmp(&self.raw_root_priors[b]))
        })
    }

    fn push_pending(&mut self, node: NodeId, kept: bool) {
        let start = self.pending_paths.len() as u32;
        for &id in &self.path {
            self.tree.nodes[id.index()].in_flight += 1;
        }
        self.pending_paths.extend_from_slice(&self.path);
        self.pending.push(PendingLeaf {
            node,
            path_start: start,
            path_len: self.path.len() as u32,
            kept,
        });
    }

    /// Root setup once the root is evaluated: noise, Gumbel candidates and schedule.
    fn prepare_root(&mut self) {
        self.root_prepared = true;
        let range = self.tree.nodes[0].edges();
        self.raw_root_priors.clear();
        self.raw_root_priors.extend_from_slice(&self.tree.priors[range.clone()]);
        self.root_wins.clear();
        if self.config.win_check != WinCheck::Off {
            let game = self.tree.games[0].as_ref().expect("an expanded root keeps its state");
            let moves = &self.tree.moves[range.clone()];
            game.winning_moves(moves, &mut self.root_wins);
        }
        match self.config.algorithm {
            Algorithm::Puct => {
                let sum: f32 = self.dirichlet.iter().sum();
                if self.dirichlet.len() == range.len() && sum > 0.0 && sum.is_finite() {
                    let eps = self.config.dirichlet_epsilon;
                    for (p, eta) in self.tree.priors[range].iter_mut().zip(&self.dirichlet) {
                        *p = (1.0 - eps) * *p + eps * eta / sum;
                    }
                    self.root_noised = true;
                }
            }
            Algorithm::Gumbel => {
                let n = range.len();
                let m = (self.config.gumbel_considered_moves as usize).min(n);
                let scores: Vec<f32> = (0..n)
                    .map(|a| self.gumbel.g.get(a).copied().unwrap_or(0.0))
                    .zip(&self.raw_root_priors)
                    .map(|(g, &p)| g + logit(p))
                    .collect();
                let mut order: Vec<u32> = (0..n as u32).collect();
                order.sort_by(|&a, &b| scores[b as usize].total_cmp(&scores[a as usize]));
                // Winning moves first (the sort is stable: each group keeps its score order).
                order.sort_by_key(|a| !self.root_wins.contains(a));
                order.truncate(m);
                self.gumbel.considered = order;
                self.gumbel.schedule = halving_schedule(m, self.target as usize);
            }
        }
    }

    /// One descent from the root.
    fn descend(&mut self) -> Descent {
        self.path.clear();
        let mut node = NodeId::ROOT;
        loop {
            self.path.push(node);
            let n = self.tree.nodes[node.index()];
            match n.status {
                NodeStatus::Terminal | NodeStatus::ProvenWin => {
                    backup(&mut self.tree.nodes, &self.path, n.value, n.draw, false);
                    return Descent::Terminal;
                }
                NodeStatus::Pending => return Descent::Collision,
                NodeStatus::Expanded if n.visits == 0 => {
                    // A kept evaluation (an evaluated root always has a visit). It waits for
                    // the batch as a new leaf would, so that the search is the one a fresh tree
                    // gives, but asks nothing of the evaluator.
                    if n.in_flight > 0 {
                        return Descent::Collision;
                    }
                    self.push_pending(node, true);
                    return Descent::Leaf;
                }
                NodeStatus::Expanded => {}
            }
            let e = self.select(node, &n);
            let child = self.tree.children[e];
            if !child.is_none() {
                node = child;
                continue;
            }
            let mut game =
                self.tree.games[node.index()].clone().expect("expanded nodes keep state");
            game.play(self.tree.moves[e]);
            let child = self.tree.push_node(game);
            self.tree.children[e] = child;
            self.path.push(child);
            if self.config.win_check == WinCheck::Tree {
                self.tree.mark_proven_win(child);
            }
            let c = self.tree.nodes[child.index()];
            if matches!(c.status, NodeStatus::Terminal | NodeStatus::ProvenWin) {
                backup(&mut self.tree.nodes, &self.path, c.value, c.draw, false);
                return Descent::Terminal;
            }
            self.push_pending(child, false);
            return Descent::Leaf;
        }
    }

    /// The edge (absolute index) to follow from an expanded node.
    fn select(&mut self, id: NodeId, n: &Node) -> usize {
        match self.config.algorithm {
            Algorithm::Puct if id == NodeId::ROOT && !self.root_wins.is_empty() => {
                // A move that wins at once gets its first visit before anything else, so that
                // its Q (+1) draws the visits and the visit target shows the win.
                let first = n.first_edge as usize;
                self.root_wins
                    .iter()
                    .map(|&a| first + a as usize)
                    .find(|&e| self.tree.children[e].is_none())
                    .unwrap_or_else(|| self.select_puct(n))
            }
            Algorithm::Puct => self.select_puct(n),
            Algorithm::Gumbel if id == NodeId::ROOT => self.select_gumbel_root(n),
            Algorithm::Gumbel => match self.config.gumbel_interior {
                GumbelInterior::Puct => self.select_puct(n),
                GumbelInterior::Deterministic => self.select_gumbel_interior(id, n),
            },
        }
    }

    fn select_puct(&self, n: &Node) -> usize {
        // One pass: the best visited child by its score, the unvisited child with the largest
        // prior (all unvisited children share the first-play urgency, so that one is their
        // best), and the prior mass already visited, which sets the urgency.
        let tree = &self.tree;
        let range = n.edges();
        let explore = self.config.c_puct * ((n.visits + n.in_flight) as f32).sqrt();
        let mut visited_policy = 0.0f32;
        let mut best_visited = (f32::NEG_INFINITY, usize::MAX);
        let mut best_unvisited = (f32::NEG_INFINITY, usize::MAX);
        for e in range {
            let prior = tree.priors[e];
            let c = tree.children[e];
            let nv = if c.is_none() {
                0
            } else {
                let cn = &tree.nodes[c.index()];
                let nv = cn.visits + cn.in_flight;
                if nv > 0 {
                    visited_policy += prior;
                    let q = (cn.value_sum - cn.in_flight as f32) / nv as f32;
                    let score = q + explore * prior / (1 + nv) as f32;
                    if score > best_visited.0 {
                        best_visited = (score, e);
                    }
                }
                nv
            };
            if nv == 0 && prior > best_unvisited.0 {
                best_unvisited = (prior, e);
            }
        }
        if best_unvisited.1 == usize::MAX {
            return best_visited.1;
        }
        let parent_q = if n.visits > 0 { -n.value_sum / n.visits as f32 } else { 0.0 };
        let fpu = parent_q - self.config.fpu_reduction * visited_policy.sqrt();
        let unvisited_score = fpu + explore * best_unvisited.0;
        if best_visited.1 == usize::MAX
            || unvisited_score > best_visited.0
            || (unvisited_score == best_visited.0 && best_unvisited.1 < best_visited.1)
        {
            best_unvisited.1
        } else {
            best_visited.1
        }
    }

    fn select_gumbel_root(&mut self, n: &Node) -> usize {
        let first = n.first_edge as usize;
        let sim = (self.completed + self.in_flight_sims) as usize;
        let want =
            self.gumbel.schedule.get(sim).or(self.gumbel.schedule.last()).copied().unwrap_or(0);
        let mut sigma = std::mem::take(&mut self.scratch);
        sigma_completed_q(
            &self.tree,
            &self.config,
            NodeId::ROOT,
            &self.raw_root_priors,
            &mut sigma,
        );
        let visits_of = |a: usize| {
            let c = self.tree.children[first + a];
            if c.is_none() {
                0
            } else {
                let cn = &self.tree.nodes[c.index()];
                cn.visits + cn.in_flight
            }
        };
        let score = |a: usize| {
            self.gumbel.g.get(a).copied().unwrap_or(0.0) + logit(self.raw_root_priors[a]) + sigma[a]
        };
        let pick = |eligible: &dyn Fn(usize) -> bool| {
            self.gumbel
                .considered
                .iter()
                .map(|&a| a as usize)
                .filter(|&a| eligible(a))
                .max_by(|&a, &b| score(a).total_cmp(&score(b)))
        };
        let a = pick(&|a| visits_of(a) == want)
            .or_else(|| {
                let least = self.gumbel.considered.iter().map(|&a| visits_of(a as usize)).min()?;
                pick(&|a| visits_of(a) == least)
            })
            .unwrap_or(0);
        self.scratch = sigma;
        first + a
    }

    fn select_gumbel_interior(&mut self, id: NodeId, n: &Node) -> usize {
        let range = n.edges();
        let priors = &self.tree.priors[range.clone()];
        let mut pi = std::mem::take(&mut self.scratch);
        sigma_completed_q(&self.tree, &self.config, id, priors, &mut pi);
        for (s, &p) in pi.iter_mut().zip(priors) {
            *s += logit(p);
        }
        softmax(&mut pi);
        let total = n.visits.saturating_sub(1) + n.in_flight;
        let denom = 1.0 + total as f32;
        let mut best = (f32::NEG_INFINITY, 0);
        for (a, e) in range.clone().enumerate() {
            let c = self.tree.children[e];
            let visits = if c.is_none() {
                0
            } else {
                let cn = &self.tree.nodes[c.index()];
                cn.visits + cn.in_flight
            };
            let score = pi[a] - visits as f32 / denom;
            if score > best.0 {
                best = (score, a);
            }
        }
        self.scratch = pi;
        range.start + best.1
    }

    /// The sequential-halving winner: among considered moves with the most visits, the best
    /// `g + logits + σ(q̂)`.
    fn gumbel_final(&self, sigma: &[f32], logits: &[f32]) -> usize {
        let first = self.tree.nodes[0].first_edge as usize;
        let considered = &self.gumbel.considered;
        let max_visits =
            considered.iter().map(|&a| self.tree.edge_visits(first + a as usize)).max();
        let Some(max_visits) = max_visits else { return 0 };
        considered
            .iter()
            .map(|&a| a as usize)
            .filter(|&a| self.tree.edge_visits(first + a) == max_visits)
            .max_by(|&a, &b| {
                let s =
                    |a: usize| self.gumbel.g.get(a).copied().unwrap_or(0.0) + logits[a] + sigma[a];
                s(a).total_cmp(&s(b))
            })
            .unwrap_or(0)
    }
}

/// Backs `value` (for the side to move at the last node of `path`) up the path: each node's
/// `value_sum` gets it from the view of the player who moved into that node, and its
/// `draw_sum` gets `draw` (a draw is one for both sides). With `release_virtual_loss`, each
/// node's in-flight count drops by one.
fn backup(nodes: &mut [Node], path: &[NodeId], value: f32, draw: f32, release_virtual_loss: bool) {
    let mut v = -value;
    for id in path.iter().rev() {
        let n = &mut nodes[id.index()];
        n.visits += 1;
        n.value_sum += v;
        n.draw_sum += draw;
        if release_virtual_loss {
            n.in_flight -= 1;
        }
        v = -v;
    }
}

/// Scales `p` to sum to 1; uniform if it has no positive finite mass.
fn normalize(p: &mut [f32]) {
    let mut sum = 0.0f32;
    let mut clean = true;
    for &x in p.iter() {
        clean &= x.is_finite() && x >= 0.0;
        sum += x;
    }
    if !clean {
        for x in p.iter_mut() {
            if !x.is_finite() || *x < 0.0 {
                *x = 0.0;
            }
        }
        sum = p.iter().sum();
    }
    if sum > 0.0 && sum.is_finite() {
        if (sum - 1.0).abs() > 1e-6 {
            let inv = 1.0 / sum;
            p.iter_mut().for_each(|x| *x *= inv);
        }
    } else if !p.is_empty() {
        let u = 1.0 / p.len() as f32;
        p.fill(u);
    }
}

impl<M> SearchResult<M> {
    /// Completed visits in all (the simulations of this search plus any reused ones).
    pub fn total_visits(&self) -> u32 {
        self.visits.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_falls_back_to_uniform() {
        let mut p = [f32::NAN, 0.0, -1.0, 0.0];
        normalize(&mut p);
        assert_eq!(p, [0.25; 4]);
        let mut p = [1.0, 3.0];
        normalize(&mut p);
        assert_eq!(p, [0.25, 0.75]);
    }
}
