//! The search thread of `xqz uci`: limits, time management, `info` lines and `bestmove`.
//!
//! A search runs on its own thread and checks, after every evaluation batch (a few leaves),
//! an [`AtomicBool`] set by `stop`, so `stop` gets its `bestmove` within milliseconds. It prints
//! an `info` line at least every 500 ms and once at the end, then `bestmove`.
//!
//! # Limits
//! * `nodes N`: N simulations. `depth D`: `16 · 2^min(D, 20)` simulations (depth 1 = 32,
//!   depth 5 = 512, depth 10 = 16 384): MCTS has no depth, so depth is a budget scale.
//! * `movetime MS`: search for that long. Clock fields: see [`time_budget`].
//! * `infinite` (and `ponder` until `ponderhit`): until `stop`.
//! * With none of these, the `Simulations` option (default 800).
//! * Always: the tree stops growing at the `Hash` size (see [`bytes_per_node`]); a timed search
//!   then ends early, an infinite one waits for `stop`.
//!
//! # Scores
//! The value `v ∈ [-1, 1]` of the best move for the side to move (its mean backed-up value) is
//! shown as `score cp C` with `C = 111.7 · tan(1.562 · v)` (the mapping of Leela Chess Zero),
//! clamped to ±9000. With `UCI_ShowWDL` (on by default) it is followed by `wdl W D L`, per mille
//! from the side to move, from `v` and the mean draw probability `d` that the network's WDL
//! head gave the positions below the move ([`wdl_permille`]; `d = 0` without a network). When
//! the principal variation ends in a decisive verdict of the rules and the best move's value is
//! beyond ±0.9, the score is `mate ±M` with `M` the moves (not plies) to that verdict, and `wdl`
//! is `1000 0 0` or `0 0 1000`. UCCI prints `score C` without `cp`, mates as
//! `±(10000 − plies)`, and no `wdl` or `multipv`.
//!
//! # Search settings
//! A network records the `[search]` it was trained with; the engine starts from those (without
//! root noise), or from the defaults for a network that records none, and the options of
//! [`SearchOptions`] override them one by one. `Algorithm auto` plays the Gumbel search up to
//! [`AUTO_GUMBEL_UP_TO`] simulations and PUCT above (and PUCT for a search limited by time
//! alone, as sequential halving needs its budget beforehand). A Gumbel search that runs its
//! budget plays the sequential-halving winner; otherwise the engine plays the most visited move.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use xiangqi::Move;
use xiangqi_search::GameEnv;
use xiangqi_search::arena::drive_search;
use xiangqi_search::{
    Algorithm, Checked, ConfigError, EvalBuffer, EvalRequest, Evaluator, NodeId, NodeStatus,
    Search, SearchConfig, Strength, Tree, WinCheck, game_rng,
};

/// How often `info` is printed while searching.
const INFO_INTERVAL: Duration = Duration::from_millis(500);
/// Simulations per search chunk when the limit is a time or `stop`.
const CHUNK: u32 = 1 << 16;
/// Largest simulation budget of one search.
pub const MAX_SIMULATIONS: u64 = 1 << 30;

/// Which protocol the engine answers in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// UCI (the default until `ucci` is received).
    Uci,
    /// UCCI.
    Ucci,
}

/// A shared, line-flushed output.
#[derive(Clone)]
pub struct Output(Arc<Mutex<Box<dyn Write + Send>>>);

impl Output {
    /// Output to `w`.
    pub fn new(w: Box<dyn Write + Send>) -> Output {
        Output(Arc::new(Mutex::new(w)))
    }

    /// Writes one line and flushes it (errors are ignored: a closed pipe ends the input too).
    pub fn line(&self, text: &str) {
        let mut w = match self.0.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        let _ = writeln!(w, "{text}").and_then(|()| w.flush());
    }
}

/// The simulation budget of `go depth D`: `16 · 2^min(D, 20)`.
pub fn depth_simulations(depth: u32) -> u64 {
    16u64 << depth.min(20)
}

/// The time to spend on one move from the clock: with `t` the remaining time, `inc` the
/// increment and `mtg` the moves to go (30 when not given),
/// `budget = clamp(t / mtg + 0.8 · inc, 1 ms, t − reserve)` where
/// `reserve = min(t / 2, 50 ms + t / 20)`, so a move never uses more than the time left minus
/// a safety margin.
pub fn time_budget(remaining: Duration, increment: Duration, movestogo: Option<u32>) -> Duration {
    let t = remaining.as_secs_f64() * 1000.0;
    let inc = increment.as_secs_f64() * 1000.0;
    let mtg = f64::from(movestogo.filter(|&m| m > 0).unwrap_or(30));
    let base = t / mtg + 0.8 * inc;
    let reserve = (50.0 + t / 20.0).min(t / 2.0);
    let cap = (t - reserve).max(1.0);
    Duration::from_micros((base.clamp(1.0, cap) * 1000.0) as u64)
}

/// A rough size of one tree node in bytes for a game with `history` plies: the node, its game
/// state (position and history) and about 40 edges.
pub fn bytes_per_node<G: GameEnv>(history: usize) -> usize {
    std::mem::size_of::<G>() + 10 * history + 40 * 10 + 200
}

/// The simulation budgets up to which `Algorithm auto` plays the Gumbel search (sequential
/// halving from 16 considered moves); larger budgets, and searches limited by time alone, play
/// PUCT. Measured with the recorded main-job net (`experiments/2026-12-03-engine-search/`).
pub const AUTO_GUMBEL_UP_TO: u64 = 128;

/// The most moves a Gumbel search may consider (`GumbelConsideredMoves`).
pub const MAX_CONSIDERED_MOVES: u32 = 1024;

/// The engine's search options (`Algorithm`, `CPuct`, `FpuReduction`,
/// `GumbelConsideredMoves`, `GumbelCVisit`, `GumbelCScale`, `WinCheck`): each `None` until set,
/// leaving the network's recorded `[search]` value (or the default of a network that records
/// none) in place.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchOptions {
    /// `None`: `auto` (see [`AUTO_GUMBEL_UP_TO`]).
    pub algorithm: Option<Algorithm>,
    /// PUCT's exploration constant.
    pub c_puct: Option<f32>,
    /// First-play urgency reduction.
    pub fpu_reduction: Option<f32>,
    /// Gumbel: moves sequential halving starts with.
    pub gumbel_considered_moves: Option<u32>,
    /// Gumbel: `c_visit`.
    pub gumbel_c_visit: Option<f32>,
    /// Gumbel: `c_scale`.
    pub gumbel_c_scale: Option<f32>,
    /// Where to look for moves that win at once.
    pub win_check: Option<WinCheck>,
}

impl SearchOptions {
    /// The options' names as `setoption` keys (lower case).
    pub const NAMES: [&'static str; 7] = [
        "algorithm",
        "cpuct",
        "fpureduction",
        "gumbelconsideredmoves",
        "gumbelcvisit",
        "gumbelcscale",
        "wincheck",
    ];

    /// The `option` lines of the options, in `dialect`, with `base` (the network's recorded
    /// settings, or the defaults) as their defaults.
    pub fn option_lines(base: &SearchConfig, dialect: Dialect) -> Vec<String> {
        let ucci = dialect == Dialect::Ucci;
        let line = |n: &str, rest: String| {
            if ucci {
                format!("option {} {rest}", n.to_ascii_lowercase())
            } else {
                format!("option name {n} {rest}")
            }
        };
        let combo = |vars: &[&str], default: &str| {
            let vars: String = vars.iter().map(|v| format!(" var {v}")).collect();
            if ucci {
                format!("type combo{vars} default {default}")
            } else {
                format!("type combo default {default}{vars}")
            }
        };
        let spin = |default: u32| {
            let max = MAX_CONSIDERED_MOVES;
            if ucci {
                format!("type spin min 1 max {max} default {default}")
            } else {
                format!("type spin default {default} min 1 max {max}")
            }
        };
        let win_check = match base.win_check {
            WinCheck::Off => "off",
            WinCheck::Root => "root",
            WinCheck::Tree => "tree",
        };
        vec![
            line("Algorithm", combo(&["auto", "puct", "gumbel"], "auto")),
            line("CPuct", format!("type string default {}", base.c_puct)),
            line("FpuReduction", format!("type string default {}", base.fpu_reduction)),
            line("GumbelConsideredMoves", spin(base.gumbel_considered_moves)),
            line("GumbelCVisit", format!("type string default {}", base.gumbel_c_visit)),
            line("GumbelCScale", format!("type string default {}", base.gumbel_c_scale)),
            line("WinCheck", combo(&["off", "root", "tree"], win_check)),
        ]
    }

    /// [`SearchOptions::settings`] for one `go`, and what to tell the GUI about them: an
    /// `Algorithm gumbel` that this search (with no node budget) cannot follow, or settings that
    /// fail their checks (the built-in defaults are searched with instead).
    pub fn for_search(
        &self,
        net: Option<&SearchConfig>,
        budget: Option<u64>,
    ) -> (Checked<SearchConfig>, Vec<String>) {
        let mut notes = Vec::new();
        if budget.is_none() && self.algorithm == Some(Algorithm::Gumbel) {
            notes.push(
                "Algorithm gumbel needs a node budget (go nodes, depth, or none of movetime, \
                 clocks, infinite, ponder): this search is PUCT"
                    .to_string(),
            );
        }
        let search = self.settings(net, budget).unwrap_or_else(|e| {
            notes.push(format!("search settings: {e}; searching with the built-in defaults"));
            SearchOptions::default().settings(None, budget).unwrap_or_default()
        });
        (search, notes)
    }

    /// Sets option `key` (one of [`SearchOptions::NAMES`]; `name` as the GUI wrote it) to
    /// `value`. A value is kept only if the settings it makes over `net` (the network's
    /// recorded ones) pass their checks.
    ///
    /// # Errors
    /// What is wrong with the value, naming the option.
    pub fn set(
        &mut self,
        key: &str,
        name: &str,
        value: &str,
        net: Option<&SearchConfig>,
    ) -> Result<(), String> {
        let word = value.trim().to_ascii_lowercase();
        let number = || -> Result<f32, String> {
            word.parse::<f32>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("option {name}: '{value}' is not a number"))
        };
        let mut trial = self.clone();
        match key {
            "algorithm" => {
                trial.algorithm = match word.as_str() {
                    "auto" => None,
                    "puct" => Some(Algorithm::Puct),
                    "gumbel" => Some(Algorithm::Gumbel),
                    _ => {
                        return Err(format!(
                            "option {name}: '{value}' is not auto, puct or gumbel"
                        ));
                    }
                }
            }
            "wincheck" => {
                trial.win_check = Some(match word.as_str() {
                    "off" => WinCheck::Off,
                    "root" => WinCheck::Root,
                    "tree" => WinCheck::Tree,
                    _ => return Err(format!("option {name}: '{value}' is not off, root or tree")),
                })
            }
            "gumbelconsideredmoves" => match word.parse::<u32>() {
                Ok(m) if (1..=MAX_CONSIDERED_MOVES).contains(&m) => {
                    trial.gumbel_considered_moves = Some(m)
                }
                _ => {
                    return Err(format!(
                        "option {name}: '{value}' is not a whole number in 1..={MAX_CONSIDERED_MOVES}"
                    ));
                }
            },
            "cpuct" => trial.c_puct = Some(number()?),
            "fpureduction" => trial.fpu_reduction = Some(number()?),
            "gumbelcvisit" => trial.gumbel_c_visit = Some(number()?),
            "gumbelcscale" => trial.gumbel_c_scale = Some(number()?),
            _ => return Err(format!("unknown option '{name}'")),
        }
        trial.settings(net, Some(1)).map_err(|e| format!("option {name}: {e}"))?;
        *self = trial;
        Ok(())
    }

    /// The settings of one search with `budget` simulations (`None`: limited by time or
    /// `stop`): `net`'s `[search]` (or the defaults) with these options over it, without root
    /// noise. A Gumbel search needs its budget beforehand, so a search without one is PUCT.
    ///
    /// # Errors
    /// The first bad key of the result (an option's value out of range, or a network's recorded
    /// settings that this build refuses).
    pub fn settings(
        &self,
        net: Option<&SearchConfig>,
        budget: Option<u64>,
    ) -> Result<Checked<SearchConfig>, ConfigError> {
        let mut c = net.cloned().unwrap_or_default();
        // Play, not self-play: no noise, no cheap searches.
        c.dirichlet_epsilon = 0.0;
        c.full_search_prob = 1.0;
        c.algorithm = match (self.algorithm, budget) {
            (_, None) => Algorithm::Puct,
            (Some(a), Some(_)) => a,
            (None, Some(n)) if n <= AUTO_GUMBEL_UP_TO => Algorithm::Gumbel,
            (None, Some(_)) => Algorithm::Puct,
        };
        let or = |o: Option<f32>, v: f32| o.unwrap_or(v);
        c.c_puct = or(self.c_puct, c.c_puct);
        c.fpu_reduction = or(self.fpu_reduction, c.fpu_reduction);
        c.gumbel_considered_moves =
            self.gumbel_considered_moves.unwrap_or(c.gumbel_considered_moves);
        c.gumbel_c_visit = or(self.gumbel_c_visit, c.gumbel_c_visit);
        c.gumbel_c_scale = or(self.gumbel_c_scale, c.gumbel_c_scale);
        c.win_check = self.win_check.unwrap_or(c.win_check);
        Checked::new(c)
    }
}

/// What one `go` asks for.
#[derive(Clone, Debug)]
pub struct Job<G: GameEnv> {
    /// The root: not over.
    pub game: G,
    /// The search's settings ([`SearchOptions::settings`]).
    pub search: Checked<SearchConfig>,
    /// Whether `info` lines carry `wdl W D L` (UCI's `UCI_ShowWDL`).
    pub show_wdl: bool,
    /// Root moves the search must not play (banmoves, or moves outside searchmoves). Never all
    /// of them.
    pub banned: Vec<Move>,
    /// Simulation budget; `None` for no limit.
    pub simulations: Option<u64>,
    /// Time budget from the start of the search; `None` for no limit.
    pub time: Option<Duration>,
    /// Lines of `info` for the best moves (UCI `MultiPV`).
    pub multipv: usize,
    /// Most tree nodes.
    pub max_nodes: usize,
    /// Output dialect.
    pub dialect: Dialect,
    /// A level below full strength: the move is drawn as [`Strength::choose`] does, and the
    /// search, once its simulations are done, waits for `stop` in an infinite or pondering
    /// `go` instead of searching on.
    pub strength: Option<Strength>,
    /// The seed of a level's move draw.
    pub seed: u64,
}

/// Shared controls of a running search.
#[derive(Debug)]
pub struct Controls {
    /// Set by `stop` and `quit`.
    pub stop: AtomicBool,
    /// While set (`go infinite`, `go ponder` before `ponderhit`), limits are ignored.
    pub infinite: AtomicBool,
    /// A deadline in milliseconds since the search began (`u64::MAX`: none); set by
    /// `ponderhit`.
    pub deadline_ms: AtomicU64,
    /// When the search began.
    pub started: Instant,
}

impl Controls {
    /// Controls of a search starting now.
    pub fn new(infinite: bool, time: Option<Duration>) -> Controls {
        Controls {
            stop: AtomicBool::new(false),
            infinite: AtomicBool::new(infinite),
            deadline_ms: AtomicU64::new(time.map_or(u64::MAX, |t| t.as_millis() as u64)),
            started: Instant::now(),
        }
    }
}

/// Hides the banned root moves from the search: their priors at the root become 0.
struct RootMask<'a, E> {
    inner: &'a mut E,
    root_len: usize,
    banned: &'a [Move],
}

impl<G: GameEnv, E: Evaluator<G>> Evaluator<G> for RootMask<'_, E> {
    type Error = E::Error;
    fn evaluate(
        &mut self,
        batch: &[EvalRequest<'_, G>],
        out: &mut EvalBuffer,
    ) -> Result<(), E::Error> {
        self.inner.evaluate(batch, out)?;
        if self.banned.is_empty() {
            return Ok(());
        }
        for (i, r) in batch.iter().enumerate() {
            if r.game.moves().len() != self.root_len {
                continue;
            }
            let priors = out.priors_mut(i);
            for (p, m) in priors.iter_mut().zip(r.moves) {
                if self.banned.contains(m) {
                    *p = 0.0;
                }
            }
            if priors.iter().all(|&p| p <= 0.0 || !p.is_finite()) {
                for (p, m) in priors.iter_mut().zip(r.moves) {
                    *p = if self.banned.contains(m) { 0.0 } else { 1.0 };
                }
            }
        }
        Ok(())
    }
}

/// One root move's line.
pub(crate) struct Line {
    pub(crate) moves: Vec<Move>,
    /// The first move's mean value for the side to move at the root.
    pub(crate) value: f32,
    /// The mean backed-up draw probability of the line's first move.
    pub(crate) draw: f32,
    /// Plies to a decisive verdict at the end of the line, with the sign of the root side's
    /// result.
    mate_plies: Option<i32>,
}

/// Whether root move `m` wins at once by the rules (checkmate, stalemate, a repetition verdict
/// against the opponent): such a move is played whatever its visits, as the search's
/// `win_check` promises.
fn wins_at_once<G: GameEnv>(tree: &Tree<G>, m: Move) -> bool {
    tree.game(NodeId::ROOT).is_some_and(|g| g.is_winning_move(m))
}

/// Root moves not banned, moves that win at once first, moves the rules show to lose at once
/// last (their child is a terminal or a proven win for the opponent: at a small PUCT budget a
/// blunder with a large prior can keep the most visits after its first visit showed the loss),
/// and between them `preferred` (a Gumbel search's [`halving_winner`]) first, then most visited
/// (ties: higher prior), with their child nodes.
pub(crate) fn ranked_root_moves<G: GameEnv>(
    tree: &Tree<G>,
    banned: &[Move],
    preferred: Option<Move>,
) -> Vec<(Move, NodeId, u32)> {
    let root = NodeId::ROOT;
    // The sort key: wins at once, does not lose at once, preferred, visits, prior.
    struct Key {
        entry: (Move, NodeId, u32),
        wins: bool,
        safe: bool,
        preferred: bool,
        prior: f32,
    }
    let mut v: Vec<Key> = tree
        .moves(root)
        .iter()
        .zip(tree.children(root))
        .zip(tree.priors(root))
        .filter(|((m, _), _)| !banned.contains(m))
        .map(|((&m, &c), &prior)| {
            let visits = if c.is_none() { 0 } else { tree.visits(c) };
            let (wins, preferred) = (wins_at_once(tree, m), preferred == Some(m));
            let safe = !tree.is_won_by_rules(c);
            Key { entry: (m, c, visits), wins, safe, preferred, prior }
        })
        .collect();
    v.sort_by(|a, b| {
        (b.wins, b.safe, b.preferred, b.entry.2)
            .cmp(&(a.wins, a.safe, a.preferred, a.entry.2))
            .then(b.prior.total_cmp(&a.prior))
    });
    v.into_iter().map(|k| k.entry).collect()
}

/// The root move a Gumbel search that ran its whole budget chose by sequential halving (the
/// paper's answer, which need not be the most visited move); `None` for PUCT or a search cut
/// short.
pub(crate) fn halving_winner<G: GameEnv>(search: &Search<G>) -> Option<Move> {
    (search.config().algorithm == Algorithm::Gumbel && search.is_done())
        .then(|| search.result().best)
}

/// The line starting with root move `first`: most visited children down the tree.
pub(crate) fn line_from<G: GameEnv>(
    tree: &Tree<G>,
    first: Move,
    child: NodeId,
    root_value: f32,
) -> Line {
    if wins_at_once(tree, first) {
        return Line { moves: vec![first], value: 1.0, draw: 0.0, mate_plies: Some(1) };
    }
    let mut moves = vec![first];
    let value = if child.is_none() { root_value } else { tree.q(child).unwrap_or(root_value) };
    let root_draw = tree.draw_rate(NodeId::ROOT).unwrap_or(0.0);
    let draw = if child.is_none() { root_draw } else { tree.draw_rate(child).unwrap_or(root_draw) };
    let mut node = child;
    let mut mate_plies = None;
    while !node.is_none() && moves.len() < 64 {
        match tree.status(node) {
            NodeStatus::ProvenWin => {
                // The side to move here wins with its next move, one ply past the line.
                if let Some(win) = tree
                    .game(node)
                    .and_then(|g| g.legal_moves_vec().into_iter().find(|&m| g.is_winning_move(m)))
                {
                    moves.push(win);
                    let plies = moves.len() as i32;
                    let root_side_moved_last = plies % 2 == 1;
                    mate_plies = Some(if root_side_moved_last { plies } else { -plies });
                }
                break;
            }
            NodeStatus::Terminal => {
                // q is for the player who made the last move of the line.
                if let Some(q) = tree.q(node).filter(|q| q.abs() > 0.99) {
                    let plies = moves.len() as i32;
                    let root_side_moved_last = plies % 2 == 1;
                    let root_wins = (q > 0.0) == root_side_moved_last;
                    mate_plies = Some(if root_wins { plies } else { -plies });
                }
                break;
            }
            NodeStatus::Pending => break,
            NodeStatus::Expanded => {}
        }
        let best = tree
            .children(node)
            .iter()
            .zip(tree.moves(node))
            .filter(|(c, _)| !c.is_none() && tree.visits(**c) > 0)
            .max_by_key(|(c, _)| tree.visits(**c));
        let Some((&c, &m)) = best else { break };
        moves.push(m);
        node = c;
    }
    let mate_plies = mate_plies.filter(|p| (*p > 0 && value > 0.9) || (*p < 0 && value < -0.9));
    Line { moves, value, draw, mate_plies }
}

/// `111.7 · tan(1.562 · v)`, clamped to ±9000.
pub fn value_to_cp(v: f32) -> i32 {
    let v = f64::from(v.clamp(-1.0, 1.0));
    (111.7 * (1.562 * v).tan()).round().clamp(-9000.0, 9000.0) as i32
}

/// Win, draw and loss in per mille for the side to move, from the mean value `v` in `[-1, 1]`
/// and the mean draw probability `d` in `[0, 1]`: `W = (1 + v − d) / 2`, `L = (1 − v − d) / 2`
/// (Leela Chess Zero's reading of a WDL head's backed-up figures), rounded so that the three
/// sum to 1000.
pub fn wdl_permille(v: f32, d: f32) -> [i32; 3] {
    let [w, d, _] = wdl_share(v, d);
    let w = (1000.0 * w).round() as i32;
    let dm = ((1000.0 * d).round() as i32).clamp(0, 1000 - w);
    [w, dm, 1000 - w - dm]
}

/// Win, draw and loss probabilities for the side to move from the mean value `v` in `[-1, 1]`
/// and the mean draw probability `d`: `((1 + v − d) / 2, d, (1 − v − d) / 2)`, with `d` cut to
/// what `v` allows (averages of `(w − l, d)` with `w + d + l = 1` keep `|v| ≤ 1 − d`; the cut
/// guards rounding) and NaN read as 0.
pub fn wdl_share(v: f32, d: f32) -> [f64; 3] {
    let v = f64::from(if v.is_nan() { 0.0 } else { v.clamp(-1.0, 1.0) });
    let d = f64::from(if d.is_nan() { 0.0 } else { d }).clamp(0.0, 1.0 - v.abs());
    [(1.0 + v - d) / 2.0, d, (1.0 - v - d) / 2.0]
}

fn score_text(line: &Line, dialect: Dialect, show_wdl: bool) -> String {
    let wdl =
        |[w, d, l]: [i32; 3]| if show_wdl { format!(" wdl {w} {d} {l}") } else { String::new() };
    match (dialect, line.mate_plies) {
        (Dialect::Uci, Some(p)) => {
            let moves = (p.abs() + 1) / 2;
            let sure = if p > 0 { [1000, 0, 0] } else { [0, 0, 1000] };
            format!("score mate {}{}", if p > 0 { moves } else { -moves }, wdl(sure))
        }
        (Dialect::Ucci, Some(p)) => {
            format!("score {}", if p > 0 { 10_000 - p } else { -10_000 - p })
        }
        (Dialect::Uci, None) => {
            let shown = wdl(wdl_permille(line.value, line.draw));
            format!("score cp {}{shown}", value_to_cp(line.value))
        }
        (Dialect::Ucci, None) => format!("score {}", value_to_cp(line.value)),
    }
}

fn pv_text(moves: &[Move]) -> String {
    moves.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(" ")
}

/// Prints the `info` lines of the current search.
fn print_info<G: GameEnv>(out: &Output, search: &Search<G>, job: &Job<G>, started: Instant) {
    let tree = search.tree();
    if tree.status(NodeId::ROOT) != NodeStatus::Expanded {
        return;
    }
    let nodes = u64::from(tree.visits(NodeId::ROOT));
    let ms = started.elapsed().as_millis() as u64;
    let nps = nodes * 1000 / ms.max(1);
    let root_value = tree.q(NodeId::ROOT).map_or(0.0, |q| -q);
    let ranked = ranked_root_moves(tree, &job.banned, halving_winner(search));
    let count = match job.dialect {
        Dialect::Uci => job.multipv.clamp(1, ranked.len().max(1)),
        Dialect::Ucci => 1,
    };
    for (k, &(m, child, _)) in ranked.iter().take(count).enumerate() {
        let line = line_from(tree, m, child, root_value);
        let depth = line.moves.len();
        let score = score_text(&line, job.dialect, job.show_wdl);
        let pv = pv_text(&line.moves);
        out.line(&match job.dialect {
            Dialect::Uci => format!(
                "info depth {depth} multipv {} {score} nodes {nodes} nps {nps} time {ms} pv {pv}",
                k + 1
            ),
            Dialect::Ucci => {
                format!("info depth {depth} {score} nodes {nodes} time {ms} pv {pv}")
            }
        });
    }
}

/// Starts the search of `job` on a new thread; it prints `info` and finally `bestmove`.
pub fn spawn<G: GameEnv, E: Evaluator<G> + Send + 'static>(
    job: Job<G>,
    evaluator: Arc<Mutex<E>>,
    controls: Arc<Controls>,
    out: Output,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut guard = match evaluator.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let best = search(&job, &mut *guard, &controls, &out);
        let best = best.unwrap_or_else(|e| {
            out.line(&format!("info string search failed: {e}"));
            let legal = G::position_legal_moves(job.game.position());
            legal.iter().copied().find(|m| !job.banned.contains(m)).map(|m| (m, None))
        });
        let text = match (best, job.dialect) {
            (Some((best, Some(p))), _) => format!("bestmove {best} ponder {p}"),
            (Some((best, None)), _) => format!("bestmove {best}"),
            (None, Dialect::Uci) => "bestmove (none)".to_string(),
            (None, Dialect::Ucci) => "nobestmove".to_string(),
        };
        out.line(&text);
    })
}

/// Runs the search; returns the move and, if known, the expected reply (`None` if the root has
/// no move to play).
fn search<G: GameEnv, E: Evaluator<G>>(
    job: &Job<G>,
    evaluator: &mut E,
    controls: &Controls,
    out: &Output,
) -> Result<Option<(Move, Option<Move>)>, E::Error> {
    let started = controls.started;
    let mut mask =
        RootMask { inner: evaluator, root_len: job.game.moves().len(), banned: &job.banned };
    let mut search = Search::new(job.game.clone(), job.search.clone());
    let gumbel = job.search.algorithm == Algorithm::Gumbel;
    let batch = search.config().virtual_loss_batch as usize;
    let mut buffer = EvalBuffer::new();
    let mut rng = game_rng(0, 0);
    let limit = job.simulations.unwrap_or(u64::MAX).min(MAX_SIMULATIONS);
    let mut done_before: u64 = 0;
    let mut last_info = Instant::now();
    let out_of_limits = |sims: u64| {
        !controls.infinite.load(Ordering::Relaxed)
            && (sims >= limit
                || started.elapsed().as_millis() as u64
                    >= controls.deadline_ms.load(Ordering::Relaxed))
    };
    loop {
        let chunk = if gumbel {
            // Sequential halving plans its whole budget at the start: one chunk.
            limit.clamp(1, MAX_SIMULATIONS) as u32
        } else if controls.infinite.load(Ordering::Relaxed) && job.strength.is_none() {
            CHUNK
        } else {
            limit.saturating_sub(done_before).clamp(1, u64::from(CHUNK)) as u32
        };
        search.start(chunk, false, &mut rng);
        drive_search(&mut search, &mut mask, &mut buffer, batch, |s| {
            if last_info.elapsed() >= INFO_INTERVAL {
                print_info(out, s, job, started);
                last_info = Instant::now();
            }
            controls.stop.load(Ordering::Relaxed)
                || s.tree().len() >= job.max_nodes
                || out_of_limits(done_before + u64::from(s.completed()))
        })?;
        done_before += u64::from(search.completed());
        if controls.stop.load(Ordering::Relaxed) || out_of_limits(done_before) {
            break;
        }
        let level_done = job.strength.is_some() && done_before >= limit;
        if search.tree().len() >= job.max_nodes || level_done {
            // The tree is full (or a level has searched its share): a limited search ends; an
            // infinite one waits for stop or ponderhit (after which its limits apply).
            while controls.infinite.load(Ordering::Relaxed)
                && !controls.stop.load(Ordering::Relaxed)
            {
                if last_info.elapsed() >= INFO_INTERVAL {
                    print_info(out, &search, job, started);
                    last_info = Instant::now();
                }
                thread::sleep(Duration::from_millis(2));
            }
            break;
        }
    }
    print_info(out, &search, job, started);
    let tree = search.tree();
    let ranked = ranked_root_moves(tree, &job.banned, halving_winner(&search));
    if let Some(strength) = job.strength {
        let mut rng = game_rng(job.seed, 1);
        let chosen = strength.choose(&search, |m| !job.banned.contains(&m), &mut rng);
        if let Some(&(m, child, _)) = chosen.and_then(|m| ranked.iter().find(|r| r.0 == m)) {
            let line = line_from(tree, m, child, 0.0);
            return Ok(Some((m, line.moves.get(1).copied())));
        }
    }
    Ok(ranked.first().map(|&(best, child, _)| {
        let line = line_from(tree, best, child, 0.0);
        (best, line.moves.get(1).copied())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine's ranking puts last a move the rules show to lose at once, even when a small
    /// PUCT search gave it the most visits (priors that favour exactly the moves allowing a mate
    /// in one; position and reasoning as in xiangqi-search's `AVOID_MATE`).
    #[test]
    fn a_move_shown_to_lose_at_once_is_ranked_last() {
        use rand::SeedableRng;
        use xiangqi::{Game, Position, RuleSet};
        use xiangqi_search::{Checked, EvalBuffer, ScriptedEvaluator};
        let game = Game::new(
            Position::from_fen("4k4/R8/1R7/9/9/9/9/9/1r7/3K5 b - - 0 1").unwrap(),
            RuleSet::Asian,
        );
        let allows_mate = |g: &Game, m: Move| {
            let mut after = g.clone();
            after.play_unchecked(m);
            after.has_winning_move(&after.legal_moves())
        };
        let config = SearchConfig { algorithm: Algorithm::Puct, ..SearchConfig::default() };
        let mut search = Search::new(game.clone(), Checked::new(config).unwrap());
        let mut eval = ScriptedEvaluator::new(|g: &Game, moves: &[Move], priors: &mut [f32]| {
            for (p, &m) in priors.iter_mut().zip(moves) {
                *p = if allows_mate(g, m) { 1.0 } else { 1e-3 };
            }
            0.0
        });
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        search.run(32, false, &mut rng, &mut eval, &mut EvalBuffer::new()).unwrap();
        let tree = search.tree();
        let most = tree
            .moves(NodeId::ROOT)
            .iter()
            .zip(tree.children(NodeId::ROOT))
            .filter(|(_, c)| !c.is_none())
            .max_by_key(|(_, c)| tree.visits(**c))
            .map(|(&m, _)| m)
            .unwrap();
        assert!(allows_mate(&game, most), "the scenario: a blunder is the most visited");
        let ranked = ranked_root_moves(tree, &[], None);
        assert!(!allows_mate(&game, ranked[0].0), "{} allows mate in one", ranked[0].0);
        let first_lost = ranked.iter().position(|&(_, c, _)| tree.is_won_by_rules(c)).unwrap();
        assert!(ranked[first_lost..].iter().all(|&(_, c, _)| tree.is_won_by_rules(c)));
        let best = search.result().best;
        assert!(!allows_mate(&game, best), "Search::result's {best} allows mate in one");
    }

    #[test]
    fn budgets_leave_a_reserve() {
        let ms = Duration::from_millis;
        assert_eq!(time_budget(ms(30_000), ms(0), None), ms(1000));
        assert_eq!(time_budget(ms(10_000), ms(1000), None), Duration::from_micros(1_133_333));
        // movestogo 1: everything but the reserve.
        assert_eq!(time_budget(ms(1000), ms(0), Some(1)), ms(900));
        // Tiny clocks, huge increments: never more than what is left.
        assert_eq!(time_budget(ms(100), ms(5000), None), ms(50));
        assert_eq!(time_budget(ms(0), ms(0), None), ms(1));
        for t in [1u64, 10, 100, 1000, 60_000] {
            for inc in [0u64, 100, 10_000] {
                let b = time_budget(ms(t), ms(inc), None);
                assert!(b <= ms(t.max(1)), "{t} {inc} {b:?}");
            }
        }
    }

    #[test]
    fn wdl_is_per_mille_from_the_value_and_the_draw_rate() {
        // By hand: W = (1 + v − d) / 2, L = (1 − v − d) / 2.
        assert_eq!(wdl_permille(0.0, 0.0), [500, 0, 500]);
        assert_eq!(wdl_permille(0.2, 0.3), [450, 300, 250]);
        assert_eq!(wdl_permille(-0.6, 0.2), [100, 200, 700]);
        assert_eq!(wdl_permille(1.0, 0.0), [1000, 0, 0]);
        assert_eq!(wdl_permille(-1.0, 0.0), [0, 0, 1000]);
        // More draw than the value allows (|v| ≤ 1 − d) is cut to what it allows.
        assert_eq!(wdl_permille(0.5, 0.9), [500, 500, 0]);
        assert_eq!(wdl_permille(f32::NAN, f32::NAN), [500, 0, 500]);
        for i in 0..=200 {
            for j in 0..=100 {
                let (v, d) = (i as f32 / 100.0 - 1.0, j as f32 / 100.0);
                let wdl = wdl_permille(v, d);
                assert_eq!(wdl.iter().sum::<i32>(), 1000, "{v} {d}");
                assert!(wdl.iter().all(|&x| (0..=1000).contains(&x)), "{v} {d} {wdl:?}");
            }
        }
    }

    #[test]
    fn value_mapping_is_odd_and_monotone() {
        assert_eq!(value_to_cp(0.0), 0);
        assert_eq!(value_to_cp(0.5), -value_to_cp(-0.5));
        assert!(value_to_cp(0.1) < value_to_cp(0.2));
        assert_eq!(value_to_cp(1.0), 9000);
        assert_eq!(depth_simulations(1), 32);
        assert_eq!(depth_simulations(10), 16_384);
        assert_eq!(depth_simulations(99), 16 << 20);
    }
}
