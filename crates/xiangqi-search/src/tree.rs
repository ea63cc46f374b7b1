//! The search tree: an arena of nodes addressed by [`NodeId`], with edges stored apart.
//!
//! ```text
//!             nodes: Vec<Node>                    edges (struct of arrays, one range per node)
//!   NodeId(0) ┌────────────────────────┐          ┌──────┬───────┬──────────┐
//!   (root)    │ visits, in_flight,     │ edges ──▶│ move │ prior │ child    │ e0
//!             │ value_sum, value,      │          │ move │ prior │ NONE     │ e1 (never visited)
//!             │ status, edge range     │          │ move │ prior │ NodeId(1)│ e2 ─┐
//!             └────────────────────────┘          └──────┴───────┴──────────┘     │
//!   NodeId(1) ┌────────────────────────┐◀─────────────────────────────────────────┘
//!             │ ...                    │ edges ──▶ ...
//!             └────────────────────────┘
//!   games: Vec<Option<G>>  (the state of each expanded or pending node; None for terminals)
//! ```
//!
//! * An **edge** (move, prior, child) belongs to its parent; the moves of one node are contiguous,
//!   so an evaluator gets them as one borrowed slice. A child node is created only when its edge
//!   is first selected.
//! * A **node** holds the statistics: `visits`, `in_flight` (virtual loss: simulations that
//!   passed through it and wait for an evaluation), `value_sum` and the evaluator's `value`.
//! * **Perspective.** `value_sum` is from the point of view of the player who made the move
//!   into the node (the side to move at the parent), so the parent reads `Q = value_sum / visits`
//!   directly. `value` (the evaluator's or the rules' verdict) is from the side to move *at* the
//!   node. Both lie in `[-1, 1]`.
//! * The state of every expanded node is kept, so creating a child costs one clone and one move,
//!   never a replay from the root; terminal nodes keep only their value.
//! * No `Rc<RefCell>`, no `unsafe`: links are indices. Tree reuse copies the kept subtree into
//!   fresh arrays ([`Tree::retain_subtree`]).
//! * An expanded node with no visits is a **kept evaluation** ([`Tree::forget_visits`]): a new
//!   search's first visit there backs up its `value` without asking the evaluator.

use crate::game::SearchGame;

/// Index of a node in a [`Tree`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(u32);

impl NodeId {
    /// No node (an edge whose child has not been created).
    pub const NONE: NodeId = NodeId(u32::MAX);
    /// The root of every tree.
    pub const ROOT: NodeId = NodeId(0);

    /// The index in the arena.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Whether this is [`NodeId::NONE`].
    #[inline]
    pub const fn is_none(self) -> bool {
        self.0 == u32::MAX
    }
}

/// Where a node is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStatus {
    /// Its moves are known and its evaluation is awaited.
    Pending,
    /// Evaluated: its edges have priors.
    Expanded,
    /// The rules ended the game here; `value` is the rules' verdict.
    Terminal,
    /// The game goes on, but the side to move has a move that wins at once (the search's
    /// `win_check = "tree"`): valued `+1` like a terminal node and never evaluated or expanded.
    /// The state is kept, so the winning move can still be named.
    ProvenWin,
}

/// Statistics of one node (see the [module documentation](self) for perspectives).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) first_edge: u32,
    pub(crate) num_edges: u32,
    pub(crate) visits: u32,
    pub(crate) in_flight: u32,
    /// Sum of backed-up values, for the player who moved into this node.
    pub(crate) value_sum: f32,
    /// Evaluator or terminal value, for the side to move at this node.
    pub(crate) value: f32,
    /// Sum of backed-up draw probabilities (the same for both sides).
    pub(crate) draw_sum: f32,
    /// The evaluator's draw probability, or the rules' (1 for a drawn terminal, else 0).
    pub(crate) draw: f32,
    pub(crate) status: NodeStatus,
}

impl Node {
    #[inline]
    pub(crate) fn edges(&self) -> std::ops::Range<usize> {
        self.first_edge as usize..(self.first_edge + self.num_edges) as usize
    }

    /// The statistics of a root before a new search: nothing in flight, and one visit, its own
    /// evaluation, if it was evaluated (else none).
    fn restart_as_root(&mut self) {
        self.in_flight = 0;
        if self.status == NodeStatus::Expanded {
            self.visits = 1;
            self.value_sum = -self.value;
            self.draw_sum = self.draw;
        } else {
            self.visits = 0;
            self.value_sum = 0.0;
            self.draw_sum = 0.0;
        }
    }
}

/// An arena search tree over game states `G`.
#[derive(Clone, Debug)]
pub struct Tree<G: SearchGame> {
    pub(crate) nodes: Vec<Node>,
    pub(crate) games: Vec<Option<G>>,
    pub(crate) moves: Vec<G::Move>,
    pub(crate) priors: Vec<f32>,
    pub(crate) children: Vec<NodeId>,
    /// Buffers reused by [`Tree::retain_subtree`].
    spare: Spare<G>,
}

/// Second set of arrays, so that tree reuse copies without allocating.
#[derive(Clone, Debug)]
struct Spare<G: SearchGame> {
    nodes: Vec<Node>,
    games: Vec<Option<G>>,
    moves: Vec<G::Move>,
    priors: Vec<f32>,
    children: Vec<NodeId>,
    order: Vec<NodeId>,
    remap: Vec<NodeId>,
}

impl<G: SearchGame> Default for Spare<G> {
    fn default() -> Self {
        Spare {
            nodes: Vec::new(),
            games: Vec::new(),
            moves: Vec::new(),
            priors: Vec::new(),
            children: Vec::new(),
            order: Vec::new(),
            remap: Vec::new(),
        }
    }
}

impl<G: SearchGame> Tree<G> {
    /// A tree holding only `root` (pending, or terminal if the rules ended the game).
    pub fn new(root: G) -> Tree<G> {
        let mut tree = Tree {
            nodes: Vec::new(),
            games: Vec::new(),
            moves: Vec::new(),
            priors: Vec::new(),
            children: Vec::new(),
            spare: Spare::default(),
        };
        tree.reset(root);
        tree
    }

    /// Forgets everything and starts again from `root`, keeping the allocations.
    pub fn reset(&mut self, root: G) {
        self.nodes.clear();
        self.games.clear();
        self.moves.clear();
        self.priors.clear();
        self.children.clear();
        self.push_node(root);
    }

    /// Adds a node for `game`: terminal if the rules ended it, else pending with its moves.
    pub(crate) fn push_node(&mut self, game: G) -> NodeId {
        let id = NodeId(u32::try_from(self.nodes.len()).expect("tree larger than 2^32 nodes"));
        let first = self.moves.len();
        let (status, value, state) = match game.terminal_value() {
            Some(v) => (NodeStatus::Terminal, v, None),
            None => {
                game.legal_moves_into(&mut self.moves);
                (NodeStatus::Pending, 0.0, Some(game))
            }
        };
        let n = self.moves.len() - first;
        self.priors.resize(self.moves.len(), 0.0);
        self.children.resize(self.moves.len(), NodeId::NONE);
        self.nodes.push(Node {
            first_edge: first as u32,
            num_edges: n as u32,
            visits: 0,
            in_flight: 0,
            value_sum: 0.0,
            value,
            draw_sum: 0.0,
            // A terminal of value 0 is a draw by the rules: every rule verdict is a win, a loss
            // or a draw.
            draw: if status == NodeStatus::Terminal && value == 0.0 { 1.0 } else { 0.0 },
            status,
        });
        self.games.push(state);
        id
    }

    /// Makes pending node `id` a [`NodeStatus::ProvenWin`] (value `+1`, no edges) if its side
    /// to move has a move that wins at once (see [`SearchGame::has_winning_move`]). Returns
    /// whether it did. Not for the root: a search needs an open root.
    pub(crate) fn mark_proven_win(&mut self, id: NodeId) -> bool {
        let n = self.nodes[id.index()];
        if n.status != NodeStatus::Pending {
            return false;
        }
        let Some(game) = self.games[id.index()].as_ref() else { return false };
        if !game.has_winning_move(&self.moves[n.edges()]) {
            return false;
        }
        if n.edges().end == self.moves.len() {
            // The newest node (as when the search has just added it): drop its edges, as a
            // node the rules ended has none.
            let first = n.first_edge as usize;
            self.moves.truncate(first);
            self.priors.truncate(first);
            self.children.truncate(first);
            self.nodes[id.index()].num_edges = 0;
        }
        let n = &mut self.nodes[id.index()];
        n.status = NodeStatus::ProvenWin;
        n.value = 1.0;
        n.draw = 0.0;
        true
    }

    /// Drops every node but the root and clears the root's statistics, keeping its moves,
    /// priors, value and state (a fresh search without a new evaluation). An evaluated root
    /// keeps one visit, its own evaluation.
    pub fn prune_to_root(&mut self) {
        let mut root = self.nodes[0];
        let range = root.edges();
        self.nodes.truncate(1);
        self.games.truncate(1);
        self.moves.truncate(range.end);
        self.priors.truncate(range.end);
        self.children.truncate(range.end);
        self.children.fill(NodeId::NONE);
        root.restart_as_root();
        self.nodes[0] = root;
    }

    /// Clears the statistics of every node (visits, value and draw sums) but keeps the nodes:
    /// their moves, priors, values, draw probabilities and states. A search then visits the tree
    /// afresh, and the first visit of a kept evaluated node backs up its kept evaluation instead
    /// of asking the evaluator again, as a transposition cache would (Leela Chess Zero's and
    /// KataGo's neural-net caches serve the same purpose). An evaluated root keeps one visit,
    /// its own evaluation. A tree with a leaf still waiting for its evaluation is pruned to its
    /// root instead ([`Tree::prune_to_root`]), since a waiting leaf cannot be revisited.
    pub fn forget_visits(&mut self) {
        if self.nodes.iter().skip(1).any(|n| n.status == NodeStatus::Pending || n.in_flight > 0) {
            self.prune_to_root();
            return;
        }
        for n in &mut self.nodes[1..] {
            n.visits = 0;
            n.value_sum = 0.0;
            n.draw_sum = 0.0;
        }
        self.nodes[0].restart_as_root();
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree is empty (never: it always has a root).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The state at a node (`None` for terminal nodes).
    ///
    /// # Panics
    /// If `id` is not a node of this tree.
    pub fn game(&self, id: NodeId) -> Option<&G> {
        self.games[id.index()].as_ref()
    }

    /// The status of a node.
    ///
    /// # Panics
    /// If `id` is not a node of this tree.
    pub fn status(&self, id: NodeId) -> NodeStatus {
        self.nodes[id.index()].status
    }

    /// Whether the rules have decided the position at `id` for its side to move: a terminal
    /// that side won, or a proven win (`win_check`: it has a move that wins at once). Seen from
    /// the parent, the move to `id` loses at once. `false` for [`NodeId::NONE`].
    pub fn is_won_by_rules(&self, id: NodeId) -> bool {
        if id.is_none() {
            return false;
        }
        let n = &self.nodes[id.index()];
        match n.status {
            NodeStatus::ProvenWin => true,
            NodeStatus::Terminal => n.value > 0.0,
            NodeStatus::Pending | NodeStatus::Expanded => false,
        }
    }

    /// Completed visits of a node.
    ///
    /// # Panics
    /// If `id` is not a node of this tree.
    pub fn visits(&self, id: NodeId) -> u32 {
        self.nodes[id.index()].visits
    }

    /// Mean value of a node for the player who moved into it (`None` before any visit).
    ///
    /// # Panics
    /// If `id` is not a node of this tree.
    pub fn q(&self, id: NodeId) -> Option<f32> {
        let n = &self.nodes[id.index()];
        (n.visits > 0).then(|| n.value_sum / n.visits as f32)
    }

    /// Mean backed-up draw probability of a node (`None` before any visit): with
    /// [`Tree::q`] it gives the node's win/draw/loss, `W = (1 + Q − D) / 2`, `L = (1 − Q − D) / 2`
    /// for the player who moved into it (as Leela Chess Zero reports them). 0 everywhere with an
    /// evaluator that gives no draw probability.
    ///
    /// # Panics
    /// If `id` is not a node of this tree.
    pub fn draw_rate(&self, id: NodeId) -> Option<f32> {
        let n = &self.nodes[id.index()];
        (n.visits > 0).then(|| n.draw_sum / n.visits as f32)
    }

    /// The moves of a node (its edges), in evaluator order.
    ///
    /// # Panics
    /// If `id` is not a node of this tree.
    pub fn moves(&self, id: NodeId) -> &[G::Move] {
        &self.moves[self.nodes[id.index()].edges()]
    }

    /// The priors of a node's edges, in the order of [`Tree::moves`].
    ///
    /// # Panics
    /// If `id` is not a node of this tree.
    pub fn priors(&self, id: NodeId) -> &[f32] {
        &self.priors[self.nodes[id.index()].edges()]
    }

    /// The children of a node's edges ([`NodeId::NONE`] where never created).
    ///
    /// # Panics
    /// If `id` is not a node of this tree.
    pub fn children(&self, id: NodeId) -> &[NodeId] {
        &self.children[self.nodes[id.index()].edges()]
    }

    /// Visits of the child behind edge `e` (0 if never created).
    #[inline]
    pub(crate) fn edge_visits(&self, e: usize) -> u32 {
        let c = self.children[e];
        if c.is_none() { 0 } else { self.nodes[c.index()].visits }
    }

    /// Keeps only the subtree under `new_root`, which becomes [`NodeId::ROOT`]; every other
    /// node and state is dropped. Statistics of the kept nodes are unchanged.
    ///
    /// # Panics
    /// If `new_root` is not a node of this tree.
    pub fn retain_subtree(&mut self, new_root: NodeId) {
        let sp = &mut self.spare;
        sp.order.clear();
        sp.order.push(new_root);
        let mut i = 0;
        while i < sp.order.len() {
            let n = self.nodes[sp.order[i].index()];
            sp.order.extend(self.children[n.edges()].iter().copied().filter(|c| !c.is_none()));
            i += 1;
        }
        sp.remap.clear();
        sp.remap.resize(self.nodes.len(), NodeId::NONE);
        for (new, old) in sp.order.iter().enumerate() {
            sp.remap[old.index()] = NodeId(new as u32);
        }
        sp.nodes.clear();
        sp.games.clear();
        sp.moves.clear();
        sp.priors.clear();
        sp.children.clear();
        for old in &sp.order {
            let mut n = self.nodes[old.index()];
            let range = n.edges();
            n.first_edge = sp.moves.len() as u32;
            sp.moves.extend_from_slice(&self.moves[range.clone()]);
            sp.priors.extend_from_slice(&self.priors[range.clone()]);
            let remap = &sp.remap;
            sp.children.extend(
                self.children[range]
                    .iter()
                    .map(|c| if c.is_none() { NodeId::NONE } else { remap[c.index()] }),
            );
            sp.nodes.push(n);
            sp.games.push(self.games[old.index()].take());
        }
        std::mem::swap(&mut self.nodes, &mut sp.nodes);
        std::mem::swap(&mut self.games, &mut sp.games);
        std::mem::swap(&mut self.moves, &mut sp.moves);
        std::mem::swap(&mut self.priors, &mut sp.priors);
        std::mem::swap(&mut self.children, &mut sp.children);
        // Drop the states of the discarded nodes now, not at the next reuse.
        sp.games.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xiangqi::{Game, Position, RuleSet};

    #[test]
    fn root_is_pending_with_its_moves() {
        let tree = Tree::new(Game::new(Position::start(), RuleSet::Asian));
        assert_eq!(tree.len(), 1);
        assert_eq!(tree.status(NodeId::ROOT), NodeStatus::Pending);
        assert_eq!(tree.moves(NodeId::ROOT).len(), 44);
        assert!(tree.children(NodeId::ROOT).iter().all(|c| c.is_none()));
    }
}
