//! Search and self-play settings: the `[search]` and `[selfplay]` sections of a config file.
//!
//! Both structs deserialize with serde, reject unknown keys (`deny_unknown_fields`), fill every
//! missing key with its default, and have a `validate` that names the offending key:
//!
//! ```
//! use xiangqi_search::{SearchConfig, SelfPlayConfig};
//!
//! let mut search = SearchConfig::default();
//! search.c_puct = -1.0;
//! let err = search.validate().unwrap_err();
//! assert_eq!(err.key, "search.c_puct");
//! assert!(SelfPlayConfig::default().validate().is_ok());
//! ```

use std::fmt;

use crate::game::{GameEnv, GameKind};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A setting with a bad value: which key and why.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{key}: {reason}")]
pub struct ConfigError {
    /// The key, with its section: `search.c_puct`.
    pub key: &'static str,
    /// What is wrong with its value.
    pub reason: String,
}

/// A settings type whose values can be checked: a section of a config file, or all of them.
pub trait Validate {
    /// Checks every value (and the rules between them).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key and why.
    fn validate(&self) -> Result<(), ConfigError>;
}

/// Settings that passed their checks, once: made only by [`Checked::new`], which runs
/// [`Validate::validate`], and read-only after that (it dereferences to the settings; changing
/// one means [`Checked::into_inner`] and a new check). A function that takes a `Checked` value
/// checks nothing again and has no error or panic for bad settings: the idea of shakmaty's
/// unchecked `Setup` and checked `Position`, for a config.
///
/// ```
/// use xiangqi_search::{Checked, SearchConfig};
///
/// let bad = SearchConfig { c_puct: -1.0, ..SearchConfig::default() };
/// assert_eq!(Checked::new(bad).unwrap_err().key, "search.c_puct");
/// let good = SearchConfig { simulations: 64, cheap_simulations: 16, ..SearchConfig::default() };
/// let good = Checked::new(good).unwrap();
/// assert_eq!(good.simulations, 64); // read through the check
/// // Too few simulations for the cheap search's 100 (the default).
/// let bad = SearchConfig { simulations: 64, ..SearchConfig::default() };
/// assert_eq!(Checked::new(bad).unwrap_err().key, "search.cheap_simulations");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Checked<T>(T);

impl<T: Validate> Checked<T> {
    /// Checks `config`.
    ///
    /// # Errors
    /// The [`ConfigError`] of its first bad key.
    pub fn new(config: T) -> Result<Checked<T>, ConfigError> {
        config.validate()?;
        Ok(Checked(config))
    }
}

impl<T> Checked<T> {
    /// The settings (also reached by dereferencing).
    pub fn get(&self) -> &T {
        &self.0
    }

    /// The settings, to change and check again.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Checked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Validate + Default> Default for Checked<T> {
    /// The default settings.
    ///
    /// # Panics
    /// If `T`'s defaults fail their own checks (each config's unit tests check that they pass).
    fn default() -> Self {
        match Checked::new(T::default()) {
            Ok(checked) => checked,
            Err(e) => panic!("the default settings fail their checks: {e}"),
        }
    }
}

fn check(ok: bool, key: &'static str, reason: impl fmt::Display) -> Result<(), ConfigError> {
    if ok { Ok(()) } else { Err(ConfigError { key, reason: reason.to_string() }) }
}

fn unit_interval(x: f32) -> bool {
    (0.0..=1.0).contains(&x)
}

/// Which search runs at the root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// AlphaZero's PUCT everywhere, Dirichlet noise at the root in self-play, moves chosen from
    /// the visit counts with a temperature.
    #[default]
    Puct,
    /// Gumbel top-k sampling and sequential halving at the root (Danihelka et al. 2022), for
    /// small simulation budgets; the training target is the improved policy.
    Gumbel,
}

/// Where the search looks for moves that win at once (checkmate, stalemate, a repetition
/// verdict against the opponent) before it trusts the evaluator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WinCheck {
    /// Nowhere: a win is found only if the search happens to visit it.
    Off,
    /// At the root: a winning move is always among the Gumbel considered moves (PUCT visits it
    /// first) and is the move the search recommends, whatever its prior.
    Root,
    /// At the root, and at every new node below it: a node whose side to move can win at once
    /// is a proven win (value `+1`, not sent to the evaluator), so a root move that allows a
    /// mate in one is valued `−1` at its first visit.
    #[default]
    Tree,
}

/// The search value self-play records as each sample's `root_value`: the `q` that
/// `loop.value_q_weight` mixes into the value target, and the values the short-term value
/// target averages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedValue {
    /// The root's mean value over its visits (its network value and every simulation's).
    /// Under Gumbel, with few simulations spread over the considered moves, weak moves dilute
    /// it.
    #[default]
    Mean,
    /// The value of the training target's policy ([`crate::SearchResult::improved_value`]):
    /// under Gumbel `Σ_a π'(a) · q̂(a)`, the improved policy's expectation of the completed Q;
    /// under PUCT the mean, as above.
    Improved,
}

impl RecordedValue {
    /// Whether this is [`RecordedValue::Mean`], the default.
    pub fn is_mean(&self) -> bool {
        *self == RecordedValue::Mean
    }
}

/// How a Gumbel search selects below the root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GumbelInterior {
    /// The paper's deterministic rule: `argmax π'(a) − N(a) / (1 + Σ N)`, with `π'` the
    /// improved policy `softmax(logits + σ(completed Q))` of that node.
    #[default]
    Deterministic,
    /// PUCT, as in the PUCT search.
    Puct,
}

/// The `[search]` section: one search of the game tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    /// `"puct"` or `"gumbel"`.
    pub algorithm: Algorithm,
    /// Simulations of a full search (each adds one visit below the root).
    pub simulations: u32,
    /// Simulations of a cheap search (playout cap randomization); at most `simulations`.
    pub cheap_simulations: u32,
    /// Probability that a self-play move gets a full search and becomes a policy target
    /// (playout cap randomization, Wu 2019). 1 disables cheap searches.
    pub full_search_prob: f32,
    /// PUCT exploration constant.
    pub c_puct: f32,
    /// First-play urgency: an unvisited child is valued at the parent's value minus this times
    /// the square root of the prior mass already visited.
    pub fpu_reduction: f32,
    /// Dirichlet noise concentration at the root (PUCT, full self-play searches only).
    pub dirichlet_alpha: f32,
    /// Weight of the Dirichlet noise in the root priors; 0 disables noise.
    pub dirichlet_epsilon: f32,
    /// Gumbel: how many root moves sequential halving starts with (`m` in the paper).
    pub gumbel_considered_moves: u32,
    /// Gumbel: `c_visit` of `σ(q) = (c_visit + max N) · c_scale · q` (50 in the paper).
    pub gumbel_c_visit: f32,
    /// Gumbel: `c_scale` of `σ` (1.0 in the paper).
    pub gumbel_c_scale: f32,
    /// Gumbel: selection below the root, `"deterministic"` (the paper's) or `"puct"`.
    pub gumbel_interior: GumbelInterior,
    /// Leaves one tree may send per evaluation batch, kept apart by virtual loss.
    pub virtual_loss_batch: u32,
    /// Keep the subtree of the move played for the next search (PUCT only; a Gumbel search
    /// always starts from a fresh root, as its halving schedule counts visits from zero).
    pub reuse_tree: bool,
    /// `"off"`, `"root"` or `"tree"` (see [`WinCheck`]). Each check costs one make-move and one
    /// "has the opponent a legal move" test per move of the node.
    pub win_check: WinCheck,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            algorithm: Algorithm::Puct,
            simulations: 800,
            cheap_simulations: 100,
            full_search_prob: 1.0,
            c_puct: 1.5,
            fpu_reduction: 0.25,
            dirichlet_alpha: 0.3,
            dirichlet_epsilon: 0.25,
            gumbel_considered_moves: 16,
            gumbel_c_visit: 50.0,
            gumbel_c_scale: 1.0,
            gumbel_interior: GumbelInterior::Deterministic,
            virtual_loss_batch: 8,
            reuse_tree: true,
            win_check: WinCheck::Tree,
        }
    }
}

impl SearchConfig {
    /// Checks every value.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key (`search.<key>`) and why.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(self.simulations >= 1, "search.simulations", "must be at least 1")?;
        check(self.simulations <= 1 << 24, "search.simulations", "must be at most 16777216")?;
        check(self.cheap_simulations >= 1, "search.cheap_simulations", "must be at least 1")?;
        check(
            self.cheap_simulations <= self.simulations,
            "search.cheap_simulations",
            format!("must not exceed search.simulations ({})", self.simulations),
        )?;
        check(
            unit_interval(self.full_search_prob),
            "search.full_search_prob",
            "must be between 0 and 1",
        )?;
        check(
            self.c_puct.is_finite() && self.c_puct > 0.0,
            "search.c_puct",
            "must be a positive number",
        )?;
        check(
            self.fpu_reduction.is_finite() && self.fpu_reduction >= 0.0,
            "search.fpu_reduction",
            "must be a number >= 0",
        )?;
        check(
            self.dirichlet_alpha.is_finite() && self.dirichlet_alpha > 0.0,
            "search.dirichlet_alpha",
            "must be a positive number",
        )?;
        check(
            unit_interval(self.dirichlet_epsilon),
            "search.dirichlet_epsilon",
            "must be between 0 and 1",
        )?;
        check(
            self.gumbel_considered_moves >= 1,
            "search.gumbel_considered_moves",
            "must be at least 1",
        )?;
        check(
            self.gumbel_c_visit.is_finite() && self.gumbel_c_visit >= 0.0,
            "search.gumbel_c_visit",
            "must be a number >= 0",
        )?;
        check(
            self.gumbel_c_scale.is_finite() && self.gumbel_c_scale > 0.0,
            "search.gumbel_c_scale",
            "must be a positive number",
        )?;
        check(self.virtual_loss_batch >= 1, "search.virtual_loss_batch", "must be at least 1")?;
        Ok(())
    }
}

/// The `[selfplay]` section: the actor pool and how games are played and recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfPlayConfig {
    /// Games played at the same time (their leaves share evaluation batches).
    pub games_in_flight: u32,
    /// Most states in one evaluation batch.
    pub max_batch: u32,
    /// Search threads (the rayon pool); 0 = one per core. Results do not depend on it.
    pub threads: u32,
    /// Plies at the start of each game chosen uniformly at random among the legal moves (not
    /// searched, not recorded as samples), for opening diversity.
    pub opening_random_plies: u32,
    /// PUCT: temperature of the move choice (visit counts to the power `1 / temperature`) for
    /// the first `temperature_plies` plies; 0 always plays the most visited move.
    pub temperature: f32,
    /// PUCT: from this ply on, the most visited move is played.
    pub temperature_plies: u32,
    /// Resign when the best move's value for the side to move is below this; -1 never resigns.
    pub resign_threshold: f32,
    /// Fraction of games where resignation is disabled but recorded, to measure how often it
    /// would have been wrong (the false positive rate).
    pub resign_disabled_fraction: f32,
    /// Plies after which a game is stopped and scored as a draw (`length_cap`).
    pub length_cap: u32,
    /// The game: `"xiangqi"` (the default) or `"janggi"`. A config file names it at its top
    /// (`game = "janggi"`), which the command-line tool copies here; read in `[selfplay]` too,
    /// the old place, and never written here.
    #[serde(skip_serializing)]
    pub game: GameKind,
    /// Rule set: `"asian"` (the default) or `"simple"` for xiangqi, `"site"` (the default) or
    /// `"traditional"` for janggi; absent means the game's default. At the top of a config file
    /// beside `game`, as the game is.
    #[serde(skip_serializing)]
    pub rules: Option<String>,
    /// Master seed; game `i` draws from a generator seeded by (`seed`, `i`).
    pub seed: u64,
    /// Games per replay shard.
    pub games_per_shard: u32,
    /// The search value recorded as each sample's `root_value` ([`RecordedValue`]): `"mean"`
    /// (the default) or `"improved"` (Gumbel only). Written only when not the default, so that
    /// configs of runs without it stay readable by earlier versions.
    #[serde(skip_serializing_if = "RecordedValue::is_mean")]
    pub recorded_value: RecordedValue,
    /// The probability, in `[0, 1]`, that a new game is a fork instead of starting at the start
    /// position: it replays one of the newest `games_in_flight` finished games (drawn uniformly;
    /// a training run keeps them from one iteration to the next, though not across a restart)
    /// up to a ply drawn uniformly from `opening_random_plies` on, plays there a legal move drawn
    /// uniformly among those the game did not play, and goes on as self-play. The plies before the fork are not samples; the first
    /// search after it is always a full search, so the position after the other move (often
    /// one that hangs a piece) is a policy target. After KataGo's forked games (its
    /// `forkGameProb`, an alternative move anywhere in a game; KataGo picks it among a few
    /// policy samples, here it is uniform). 0 (the default) never forks; written only when not 0.
    /// Near 1 the openings' variety goes: forks branch after the opening plies, so nearly every
    /// game descends from the first `games_in_flight`.
    #[serde(skip_serializing_if = "is_zero")]
    pub fork_game_prob: f32,
}

fn is_zero(x: &f32) -> bool {
    *x == 0.0
}

impl Default for SelfPlayConfig {
    fn default() -> Self {
        SelfPlayConfig {
            games_in_flight: 64,
            max_batch: 256,
            threads: 0,
            opening_random_plies: 4,
            temperature: 1.0,
            temperature_plies: 30,
            resign_threshold: -1.0,
            resign_disabled_fraction: 0.1,
            length_cap: 400,
            game: GameKind::Xiangqi,
            rules: None,
            seed: 0,
            games_per_shard: 64,
            recorded_value: RecordedValue::Mean,
            fork_game_prob: 0.0,
        }
    }
}

impl SelfPlayConfig {
    /// Checks every value.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key (`selfplay.<key>`) and why.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(self.games_in_flight >= 1, "selfplay.games_in_flight", "must be at least 1")?;
        check(self.max_batch >= 1, "selfplay.max_batch", "must be at least 1")?;
        check(self.threads <= 1024, "selfplay.threads", "must be at most 1024 (0 = all cores)")?;
        check(
            self.temperature.is_finite() && self.temperature >= 0.0,
            "selfplay.temperature",
            "must be a number >= 0",
        )?;
        check(
            self.resign_threshold.is_finite() && (-1.0..=1.0).contains(&self.resign_threshold),
            "selfplay.resign_threshold",
            "must be between -1 and 1 (-1 never resigns)",
        )?;
        check(
            unit_interval(self.resign_disabled_fraction),
            "selfplay.resign_disabled_fraction",
            "must be between 0 and 1",
        )?;
        check(self.length_cap >= 1, "selfplay.length_cap", "must be at least 1")?;
        check(
            self.opening_random_plies < self.length_cap,
            "selfplay.opening_random_plies",
            "must be less than selfplay.length_cap (a game must have a searched ply)",
        )?;
        check(
            unit_interval(self.fork_game_prob),
            "selfplay.fork_game_prob",
            "must be between 0 and 1",
        )?;
        check(self.games_per_shard >= 1, "selfplay.games_per_shard", "must be at least 1")?;
        if let Some(name) = &self.rules {
            self.game
                .check_rule_name(name)
                .map_err(|reason| ConfigError { key: "selfplay.rules", reason })?;
        }
        Ok(())
    }

    /// The rule set of game `G` this config names (or `G`'s default).
    ///
    /// # Errors
    /// A [`ConfigError`] for `selfplay.game` if the config is for another game than `G`, or for
    /// `selfplay.rules` if the name is no rule set of `G`.
    pub fn rules_for<G: GameEnv>(&self) -> Result<G::Rules, ConfigError> {
        if self.game != G::KIND {
            return Err(ConfigError {
                key: "selfplay.game",
                reason: format!("the config is for {}, not {}", self.game, G::KIND),
            });
        }
        match &self.rules {
            None => Ok(G::default_rules()),
            Some(name) => {
                G::parse_rules(name).map_err(|reason| ConfigError { key: "selfplay.rules", reason })
            }
        }
    }
}

impl Validate for SearchConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        SearchConfig::validate(self)
    }
}

impl Validate for SelfPlayConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        SelfPlayConfig::validate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        SearchConfig::default().validate().unwrap();
        SelfPlayConfig::default().validate().unwrap();
    }

    #[test]
    fn toml_sections_parse_and_unknown_keys_fail() {
        #[derive(Deserialize)]
        struct File {
            search: SearchConfig,
            selfplay: SelfPlayConfig,
        }
        let text = "[search]\nalgorithm = \"gumbel\"\nsimulations = 32\n\
                    [selfplay]\nrules = \"simple\"\nseed = 7\n";
        let f: File = toml::from_str(text).unwrap();
        assert_eq!(f.search.algorithm, Algorithm::Gumbel);
        assert_eq!(f.search.simulations, 32);
        assert_eq!(f.search.c_puct, SearchConfig::default().c_puct);
        assert_eq!(f.selfplay.rules_for::<xiangqi::Game>().unwrap(), xiangqi::RuleSet::Simple);
        assert_eq!(f.selfplay.seed, 7);

        let bad = toml::from_str::<File>("[search]\nc_pcut = 1.0\n[selfplay]\n");
        let msg = bad.err().unwrap().to_string();
        assert!(msg.contains("c_pcut"), "{msg}");
        let bad: File = toml::from_str("[search]\n[selfplay]\nrules = \"chess\"\n").unwrap();
        let e = bad.selfplay.validate().unwrap_err();
        assert_eq!(e.key, "selfplay.rules");
        assert!(e.to_string().contains("chess"), "{e}");
        let janggi: File =
            toml::from_str("[search]\n[selfplay]\ngame = \"janggi\"\nrules = \"asian\"\n").unwrap();
        assert_eq!(janggi.selfplay.validate().unwrap_err().key, "selfplay.rules");
        let janggi: File = toml::from_str("[search]\n[selfplay]\ngame = \"janggi\"\n").unwrap();
        janggi.selfplay.validate().unwrap();
        assert_eq!(
            janggi.selfplay.rules_for::<xiangqi::janggi::Game>().unwrap(),
            xiangqi::janggi::Rules::Site
        );
        assert_eq!(janggi.selfplay.rules_for::<xiangqi::Game>().unwrap_err().key, "selfplay.game");
    }

    #[test]
    fn validate_names_the_key() {
        let c = SearchConfig { cheap_simulations: 900, ..SearchConfig::default() };
        assert_eq!(c.validate().unwrap_err().key, "search.cheap_simulations");
        let s = SelfPlayConfig { resign_disabled_fraction: 1.5, ..SelfPlayConfig::default() };
        let e = s.validate().unwrap_err();
        assert_eq!(e.key, "selfplay.resign_disabled_fraction");
        assert!(e.to_string().starts_with("selfplay.resign_disabled_fraction: "));
    }
}
