//! `xqz uci [--net PATH]`: the engine protocol loop, UCI (as Pikafish speaks it) and UCCI.
//!
//! Commands are read from standard input, one per line; answers go to standard output.
//!
//! | command | answer |
//! |---|---|
//! | `uci` | `id name xiangqi-zero VERSION`, `id author ...`, `option name ...` lines, `uciok` |
//! | `ucci` | `id ...`, options in UCCI syntax (`option usemillisec type check default false`), `ucciok` |
//! | `isready` | `readyok` (also while searching) |
//! | `ucinewgame` | start position, banned moves cleared |
//! | `setoption name N [value V]` / UCCI `setoption N V` | options below |
//! | `position startpos\|fen FEN [moves M...]`; a bare `startpos ...` or `fen ...` line | the position, with its history for repetition verdicts |
//! | `banmoves M...` (UCCI) | those moves are excluded from the next search |
//! | `go` with `nodes`, `movetime`, `depth`, `wtime btime winc binc movestogo`, `infinite`, `ponder`, `searchmoves`; UCCI `time increment opptime oppincrement movestogo depth nodes` | `info ...` lines, then `bestmove M [ponder P]`; `bestmove (none)` (UCI) or `nobestmove` (UCCI) without a legal move |
//! | `stop` | the running search ends and prints `bestmove` within milliseconds |
//! | `ponderhit` | a `go ponder` search now runs under its time limit |
//! | `d` | `info string` with the GUI's position as FEN (its real clocks, also after a verdict), the rules and the verdict |
//! | `quit` | ends (UCCI: after `bye`) |
//!
//! Options (UCI names; UCCI takes them in lower case, and `hashsize` for `Hash`):
//! `Threads` (spin 1–256, accepted for GUIs, the search runs on one thread), `Hash` (spin, MB:
//! the most memory the search tree may take), `MultiPV` (spin 1–128), `Simulations` (spin, the
//! budget of a `go` without limits, default 800), `NetPath` (string: a checkpoint, export or run
//! directory; setting it loads that network, or explains in an `info string` why not and keeps
//! the current one; `--net` gives the one to start with), `UCI_Variant` (combo `xiangqi`/`janggi`:
//! the game; a network fixes it, see [`run`]), `Rules` (combo: `asian`/`simple` for xiangqi,
//! `site`/`traditional` for janggi), and in UCCI `usemillisec` (check: clock values in
//! milliseconds instead of seconds). Janggi moves are UCI with ranks 0–9, a pass written as the
//! general's point twice.
//!
//! Strength (Stockfish's convention): `Skill Level` (spin 0–20, default 20 = full strength;
//! UCCI `skilllevel`), `UCI_LimitStrength` (check, default false; UCCI `limitstrength`) and
//! `UCI_Elo` (spin over the network's measured levels, offered only for a network that
//! `xqz calibrate` measured; UCCI `elo`). With `UCI_LimitStrength` the engine plays the level
//! whose measured Elo is `UCI_Elo` (interpolated between whole levels, [`StrengthTable::level_for_elo`]),
//! else `Skill Level`; a level below 20 searches its share of the full budget (the table's
//! `simulations` for a calibrated network, else `Simulations`; fewer if the `go` asks for
//! fewer) and draws its move as [`Strength::choose`] does (a move that wins at once is always
//! played; only legal moves, never a banned one). Each such `go` says the level and budget in
//! an `info string`.
//!
//! Without a network (no `--net`, no `NetPath` yet) the engine says at `uciok`/`ucciok` and at
//! every `go`, in an `info string`, that it searches with uniform priors ([`NO_NETWORK`]).
//!
//! Robustness: an unknown command or option, a bad option value, a negative or malformed number
//! in `go` (a negative `wtime`/`btime`/`time` is taken as no time left, said so), an illegal
//! move or a malformed FEN is answered by `info string ...`; the engine keeps a defined state (for a bad
//! FEN the previous position; for an illegal move the position before it). Lines longer than
//! 1 MiB are refused. No input makes it panic or hang.
//!
//! A GUI that does not adjudicate may send moves after the rules have ended the game (a third
//! repetition, the move limit): each is still played if it is legal as a move, on the position
//! without the history up to the verdict, so that the engine always answers for the side to
//! move in the GUI's position; `go` says in an `info string` that the rules have ended the game,
//! with the result and reason.
//!
//! Scores and limits: see [`crate::uci_search`].

use std::io::{self, BufRead, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use xiangqi::{Game, Move, Outcome, janggi};
use xiangqi_search::{
    Evaluator, GameEnv, GameKind, MAX_LEVEL, SearchConfig, SearchGame, Strength, StrengthTable,
};

use crate::net::PlayRecord;
use crate::uci_search::{self, Controls, Dialect, Job, Output, SearchOptions};

/// The message for `NetPath` when the engine has no way to load a network.
pub const NET_UNAVAILABLE: &str =
    "this engine cannot load networks: start it as `xqz uci --net CHECKPOINT_DIR`";

/// Loads the evaluator for a `NetPath` value, or says why it cannot.
pub type NetLoader<E> = Box<dyn Fn(&str) -> Result<E, String> + Send>;

/// Says what is worth knowing about an evaluator before it plays (`None`: nothing), e.g. that
/// there is no network.
pub type EvaluatorNote<E> = Box<dyn Fn(&E) -> Option<String> + Send>;

/// What an evaluator's network records for play: its `[search]` settings and its levels'
/// measured strength (nothing without a network).
pub type NetRecord<E> = Box<dyn Fn(&E) -> PlayRecord + Send>;

/// What `xqz uci` says at `uciok` and at every `go` while it has no network.
pub const NO_NETWORK: &str = "no network loaded: searching with uniform priors and the rules' \
                              terminal values only (weak play); start with --net DIR or send \
                              setoption name NetPath value DIR";

/// Longest input line accepted.
pub(crate) const MAX_LINE: usize = 1 << 20;

/// Arguments of `xqz uci`.
#[derive(clap::Args)]
pub struct Args {
    /// Network to evaluate positions with: a checkpoint of `xqz train`, an export of
    /// `xqz export`, or a run directory (its newest checkpoint); default: uniform priors, the
    /// rules' terminal values only.
    #[arg(long)]
    net: Option<PathBuf>,
    /// The network's device: cpu, wgpu, wgpu:N or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: String,
}

/// Engine options.
#[derive(Clone, Debug)]
struct Options<G: GameEnv> {
    threads: u64,
    hash_mb: u64,
    multipv: u64,
    simulations: u64,
    net_path: String,
    rules: G::Rules,
    usemillisec: bool,
    /// `UCI_ShowWDL`.
    show_wdl: bool,
    /// `Algorithm`, `CPuct`, `FpuReduction`, `GumbelConsideredMoves`, `GumbelCVisit`,
    /// `GumbelCScale`, `WinCheck`.
    search: SearchOptions,
    /// `UCI_LimitStrength`: play at `UCI_Elo` instead of `Skill Level`.
    limit_strength: bool,
    /// `UCI_Elo`, once set (until then the weakest level's).
    elo: Option<f64>,
    /// `Skill Level`, 0 to 20 (20: full strength).
    skill: u32,
}

impl<G: GameEnv> Default for Options<G> {
    fn default() -> Self {
        Options {
            threads: 1,
            hash_mb: 256,
            multipv: 1,
            simulations: 800,
            net_path: String::new(),
            rules: G::default_rules(),
            usemillisec: false,
            show_wdl: true,
            search: SearchOptions::default(),
            limit_strength: false,
            elo: None,
            skill: MAX_LEVEL,
        }
    }
}

/// A search in progress.
struct Running {
    controls: Arc<Controls>,
    /// Budget to apply at `ponderhit`.
    ponder_time: Option<Duration>,
    handle: JoinHandle<()>,
}

/// The state of the protocol loop.
pub struct Engine<E: Evaluator<G> + Send + 'static, G: GameEnv> {
    out: Output,
    dialect: Dialect,
    options: Options<G>,
    /// The position to search: the GUI's after its last move (see [`play_on`]).
    game: G,
    /// Where the GUI's game began, and every move of it played so far.
    start: G::Position,
    line: Vec<Move>,
    /// The first verdict of the rules in the GUI's game, and after how many of its moves.
    verdict: Option<(usize, Outcome)>,
    banned: Vec<Move>,
    evaluator: Arc<Mutex<E>>,
    net_loader: Option<NetLoader<E>>,
    /// What to say of the evaluator at `uciok` and at each `go`.
    evaluator_note: Option<EvaluatorNote<E>>,
    /// What the network records for play.
    net_record: Option<NetRecord<E>>,
    /// Searches started, for the move draws of a level below full strength.
    searches: u64,
    /// The master seed of those draws (from the clock at start, so games differ).
    seed: u64,
    /// The real clocks (halfmove clock, fullmove number) of the GUI's position where [`play_on`]
    /// last dropped the history, if it did: `game`'s clocks count from there.
    clock_base: Option<(u32, u32)>,
    running: Option<Running>,
    /// Whether `UCI_Variant` offers only this game (a network fixes it).
    fixed_game: bool,
}

/// Whether to go on reading commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next command.
    Continue,
    /// `quit` was received.
    Quit,
}

/// Limits of one `go`, as parsed.
#[derive(Clone, Debug, Default)]
struct Go {
    nodes: Option<u64>,
    depth: Option<u32>,
    movetime: Option<Duration>,
    /// Own remaining time and increment (UCI: by colour; UCCI: `time`, `increment`).
    wtime: Option<Duration>,
    btime: Option<Duration>,
    winc: Option<Duration>,
    binc: Option<Duration>,
    time: Option<Duration>,
    increment: Option<Duration>,
    movestogo: Option<u32>,
    infinite: bool,
    ponder: bool,
    searchmoves: Vec<String>,
}

const GO_KEYWORDS: [&str; 21] = [
    "nodes",
    "depth",
    "movetime",
    "wtime",
    "btime",
    "winc",
    "binc",
    "time",
    "increment",
    "opptime",
    "oppincrement",
    "movestogo",
    "infinite",
    "ponder",
    "draw",
    "searchmoves",
    "mate",
    "perft",
    "nodestime",
    "hashfull",
    "wdl",
];

impl<E: Evaluator<G> + Send + 'static, G: GameEnv> Engine<E, G> {
    /// An engine at the start position that searches with `evaluator` and writes to `out`.
    pub fn new(evaluator: E, out: Output) -> Engine<E, G> {
        let options = Options::<G>::default();
        let start = G::start_position(options.rules);
        let game = G::new_game(start.clone(), options.rules);
        Engine {
            out,
            dialect: Dialect::Uci,
            verdict: game.outcome().map(|o| (0, o)),
            game,
            start,
            line: Vec::new(),
            options,
            banned: Vec::new(),
            evaluator: Arc::new(Mutex::new(evaluator)),
            net_loader: None,
            evaluator_note: None,
            net_record: None,
            searches: 0,
            seed: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            clock_base: None,
            running: None,
            fixed_game: false,
        }
    }

    /// Offers only this engine's game as `UCI_Variant` (its network plays it).
    #[must_use]
    pub fn with_fixed_game(mut self) -> Engine<E, G> {
        self.fixed_game = true;
        self
    }

    /// Runs `f` on the evaluator (between searches).
    pub fn with_evaluator<R>(&mut self, f: impl FnOnce(&E) -> R) -> R {
        self.stop_search();
        match self.evaluator.lock() {
            Ok(e) => f(&e),
            Err(poisoned) => f(&poisoned.into_inner()),
        }
    }

    /// Lets `setoption name NetPath value DIR` replace the network with `loader(DIR)`.
    pub fn with_net_loader(mut self, loader: NetLoader<E>) -> Engine<E, G> {
        self.net_loader = Some(loader);
        self
    }

    /// Says `note(evaluator)` in an `info string` at `uciok`/`ucciok` and at each `go` (when it
    /// says something).
    pub fn with_evaluator_note(mut self, note: EvaluatorNote<E>) -> Engine<E, G> {
        self.evaluator_note = Some(note);
        self
    }

    /// Starts each search from `record(evaluator)`: the search settings its network was
    /// trained with, where it records them (the engine's options override them), and the
    /// measured strength of its levels (for `UCI_Elo`).
    pub fn with_net_record(mut self, record: NetRecord<E>) -> Engine<E, G> {
        self.net_record = Some(record);
        self
    }

    /// What the network records for play (between searches).
    fn net_record(&mut self) -> PlayRecord {
        let Some(record) = self.net_record.take() else { return PlayRecord::default() };
        let got = self.with_evaluator(|e| record(e));
        self.net_record = Some(record);
        got
    }

    /// The network's recorded search settings, if any (between searches).
    fn net_search(&mut self) -> Option<SearchConfig> {
        self.net_record().search
    }

    /// The level to play at, if below full strength, the full budget its simulations are a
    /// share of, and what to tell the GUI about it.
    fn strength(&mut self, table: Option<&StrengthTable>) -> Option<(Strength, u64, String)> {
        let o = &self.options;
        let (strength, why) = match (o.limit_strength, table) {
            (true, Some(t)) => {
                let (low, _) = t.elo_range();
                let elo = o.elo.unwrap_or(low as f64);
                let s = t.level_for_elo(elo);
                (s, format!("UCI_Elo {elo}: {s}"))
            }
            (true, None) => {
                let note = format!(
                    "UCI_LimitStrength: this network has no measured levels (run xqz calibrate \
                     on its export), so UCI_Elo cannot be met; playing Skill Level {}",
                    o.skill
                );
                self.info(&note);
                (Strength::skill(self.options.skill), format!("Skill Level {}", self.options.skill))
            }
            (false, _) => (Strength::skill(o.skill), format!("Skill Level {}", o.skill)),
        };
        let o = &self.options;
        // Full strength is unlimited, except where UCI_Elo names the top of a table: that Elo
        // was measured at the table's budget.
        if strength.is_full() && !(o.limit_strength && table.is_some()) {
            return None;
        }
        // The measured Elo holds for the budget the table was measured with.
        let full = table.map_or(o.simulations, |t| u64::from(t.simulations));
        Some((strength, full, why))
    }

    /// The evaluator note, if there is one now (between searches).
    fn evaluator_note(&mut self) -> Option<String> {
        let note = self.evaluator_note.take()?;
        let text = self.with_evaluator(|e| note(e));
        self.evaluator_note = Some(note);
        text
    }

    fn info(&self, text: &str) {
        // One line: never let input with line breaks forge protocol output.
        let clean: String =
            text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(500).collect();
        self.out.line(&format!("info string {clean}"));
    }

    /// Handles one input line.
    pub fn handle_line(&mut self, line: &str) -> Flow {
        let raw = line.trim_end_matches(['\r', '\n']);
        let line = line.trim();
        let mut words = line.split_ascii_whitespace();
        let Some(command) = words.next() else { return Flow::Continue };
        let rest: Vec<&str> = words.collect();
        match command {
            "uci" => self.hello(Dialect::Uci),
            "ucci" => self.hello(Dialect::Ucci),
            "isready" => self.out.line("readyok"),
            "ucinewgame" => {
                self.stop_search();
                self.set_game(G::start_position(self.options.rules), &[] as &[&str]);
                self.banned.clear();
            }
            "setoption" => self.set_option(&rest, raw),
            "position" => {
                self.stop_search();
                self.set_position(&rest);
            }
            "fen" | "startpos" => {
                self.stop_search();
                let mut all = vec![command];
                all.extend_from_slice(&rest);
                self.set_position(&all);
            }
            "banmoves" => self.ban_moves(&rest),
            "go" => self.go(&rest),
            "stop" => self.stop_search(),
            "ponderhit" => self.ponderhit(),
            "d" => self.display(),
            "debug" | "register" => {}
            "quit" => {
                self.stop_search();
                if self.dialect == Dialect::Ucci {
                    self.out.line("bye");
                }
                return Flow::Quit;
            }
            other => {
                // Control bytes (NUL, escape sequences) are shown escaped, never echoed raw.
                let shown: String = other
                    .chars()
                    .take(40)
                    .flat_map(|c| {
                        let escaped: Vec<char> =
                            if c.is_control() { c.escape_default().collect() } else { vec![c] };
                        escaped
                    })
                    .collect();
                self.info(&format!("unknown command '{shown}'"));
            }
        }
        Flow::Continue
    }

    fn hello(&mut self, dialect: Dialect) {
        self.dialect = dialect;
        let version = env!("CARGO_PKG_VERSION");
        // The search options' defaults: the network's recorded settings, else the built-in ones.
        let record = self.net_record();
        let base = record.search.clone().unwrap_or_default();
        let strength = strength_option_lines(record.strength.as_ref(), dialect);
        let o = &self.options;
        let defaults = Options::<G>::default();
        let rules_vars: String = G::KIND.rule_names().iter().map(|r| format!(" var {r}")).collect();
        let offered: &[GameKind] = if self.fixed_game { &[G::KIND] } else { &GameKind::ALL };
        let variants: String = offered.iter().map(|g| format!(" var {g}")).collect();
        match dialect {
            Dialect::Uci => {
                for line in [
                    format!("id name xiangqi-zero {version}"),
                    "id author the xiangqi-zero authors".to_string(),
                    format!("option name Threads type spin default {} min 1 max 256", o.threads),
                    format!("option name Hash type spin default {} min 1 max 65536", o.hash_mb),
                    format!("option name MultiPV type spin default {} min 1 max 128", o.multipv),
                    format!(
                        "option name Simulations type spin default {} min 1 max {}",
                        defaults.simulations,
                        uci_search::MAX_SIMULATIONS
                    ),
                    "option name NetPath type string default <empty>".to_string(),
                    format!("option name UCI_Variant type combo default {}{variants}", G::KIND),
                    format!("option name Rules type combo default {}{rules_vars}", defaults.rules),
                    "option name UCI_ShowWDL type check default true".to_string(),
                ]
                .into_iter()
                .chain(SearchOptions::option_lines(&base, Dialect::Uci))
                .chain(strength)
                {
                    self.out.line(&line);
                }
                if let Some(note) = self.evaluator_note() {
                    self.info(&note);
                }
                self.out.line("uciok");
            }
            Dialect::Ucci => {
                for line in [
                    format!("id name xiangqi-zero {version}"),
                    "id copyright the xiangqi-zero authors, MIT or Apache-2.0".to_string(),
                    "id author the xiangqi-zero authors".to_string(),
                    "option usemillisec type check default false".to_string(),
                    format!("option hashsize type spin min 1 max 65536 default {}", o.hash_mb),
                    format!("option threads type spin min 1 max 256 default {}", o.threads),
                    format!(
                        "option simulations type spin min 1 max {} default {}",
                        uci_search::MAX_SIMULATIONS,
                        defaults.simulations
                    ),
                    "option netpath type string default".to_string(),
                    format!("option rules type combo{rules_vars} default {}", defaults.rules),
                ]
                .into_iter()
                .chain(SearchOptions::option_lines(&base, Dialect::Ucci))
                .chain(strength)
                {
                    self.out.line(&line);
                }
                if let Some(note) = self.evaluator_note() {
                    self.info(&note);
                }
                self.out.line("ucciok");
            }
        }
    }

    fn set_option(&mut self, words: &[&str], raw: &str) {
        // UCI: `name N... [value V...]`; UCCI: `N V...`.
        let (name, value) = if words.first() == Some(&"name") {
            let rest = &words[1..];
            match rest.iter().position(|w| *w == "value") {
                Some(i) => (
                    rest[..i].join(" "),
                    raw_value(raw).map_or_else(|| rest[i + 1..].join(" "), str::to_string),
                ),
                None => (rest.join(" "), String::new()),
            }
        } else {
            match words.split_first() {
                Some((n, v)) => (n.to_string(), v.join(" ")),
                None => (String::new(), String::new()),
            }
        };
        if name.is_empty() {
            self.info("setoption: missing option name");
            return;
        }
        let key = name.to_ascii_lowercase();
        let check = |v: &str| match v.trim().to_ascii_lowercase().as_str() {
            "true" | "on" => Ok(true),
            "false" | "off" => Ok(false),
            _ => Err(format!("option {name}: '{value}' is not true or false")),
        };
        let spin = |max: u64| -> Result<u64, String> {
            value.trim().parse::<u64>().ok().filter(|v| (1..=max).contains(v)).ok_or_else(|| {
                format!("option {name}: '{value}' is not a whole number in 1..={max}")
            })
        };
        let result: Result<(), String> = match key.as_str() {
            "threads" => spin(256).map(|v| self.options.threads = v),
            "hash" | "hashsize" => spin(65536).map(|v| self.options.hash_mb = v),
            "multipv" => spin(128).map(|v| self.options.multipv = v),
            "simulations" => {
                spin(uci_search::MAX_SIMULATIONS).map(|v| self.options.simulations = v)
            }
            "netpath" => {
                let path = net_path_value(&value).unwrap_or_default();
                match &self.net_loader {
                    _ if path.is_empty() => {
                        Err("option NetPath: no directory given; keeping the current network"
                            .into())
                    }
                    None => Err(format!("{NET_UNAVAILABLE}; searching with the current evaluator")),
                    // Load first, so that a bad path leaves a running search alone; then
                    // finish the search (GUIs set options while the engine is idle) and swap.
                    Some(load) => match load(path) {
                        Ok(evaluator) => {
                            self.stop_search();
                            match self.evaluator.lock() {
                                Ok(mut e) => *e = evaluator,
                                Err(poisoned) => *poisoned.into_inner() = evaluator,
                            }
                            self.options.net_path = path.to_string();
                            self.info(&format!("network loaded from {path}"));
                            Ok(())
                        }
                        Err(e) => Err(format!("option NetPath: {e}; keeping the current network")),
                    },
                }
            }
            "rules" => match G::parse_rules(&value.trim().to_ascii_lowercase()) {
                Ok(rules) => {
                    self.options.rules = rules;
                    self.rejudge();
                    Ok(())
                }
                Err(e) => Err(format!("option Rules: {e}")),
            },
            "uci_variant" => match value.trim().parse::<GameKind>() {
                Ok(g) if g == G::KIND => Ok(()),
                Ok(g) => Err(format!(
                    "option UCI_Variant: this engine plays {} (its network's game), not {g}",
                    G::KIND
                )),
                Err(e) => Err(format!("option UCI_Variant: {e}")),
            },
            "usemillisec" => check(&value).map(|v| self.options.usemillisec = v),
            "uci_showwdl" => check(&value).map(|v| self.options.show_wdl = v),
            "uci_limitstrength" | "limitstrength" => {
                check(&value).map(|v| self.options.limit_strength = v)
            }
            "skill level" | "skilllevel" => match value.trim().parse::<u32>() {
                Ok(v) if v <= MAX_LEVEL => {
                    self.options.skill = v;
                    Ok(())
                }
                _ => Err(format!(
                    "option {name}: '{value}' is not a whole number in 0..={MAX_LEVEL}"
                )),
            },
            "uci_elo" | "elo" => match value.trim().parse::<f64>() {
                Ok(v) if v.is_finite() => match self.net_record().strength {
                    Some(t) => {
                        let (low, high) = t.elo_range();
                        let clamped = v.clamp(low as f64, high as f64);
                        self.options.elo = Some(clamped);
                        if clamped == v {
                            Ok(())
                        } else {
                            Err(format!(
                                "option UCI_Elo: {v} is outside this network's levels, {low} to \
                                 {high}; playing at {clamped}"
                            ))
                        }
                    }
                    None => {
                        self.options.elo = Some(v);
                        Err("option UCI_Elo: this network has no measured levels (run xqz \
                             calibrate on its export); UCI_LimitStrength plays Skill Level"
                            .to_string())
                    }
                },
                _ => Err(format!("option {name}: '{value}' is not a number")),
            },
            k if SearchOptions::NAMES.contains(&k) => {
                let net = self.net_search();
                self.options.search.set(k, &name, &value, net.as_ref())
            }
            // Sent by some GUIs to every engine; nothing to do.
            "ponder" | "newgame" => Ok(()),
            _ => {
                let shown: String = name.chars().take(40).collect();
                Err(format!("unknown option '{shown}'"))
            }
        };
        if let Err(e) = result {
            self.info(&e);
        }
    }

    /// Replays the current game under the current rules (after `Rules` changes).
    fn rejudge(&mut self) {
        let moves: Vec<String> = self.line.iter().map(Move::to_string).collect();
        if let Some((k, e)) = self.set_game(self.start.clone(), &moves) {
            self.info(&format!(
                "move {} '{}' is illegal under the new rules ({e}); later moves dropped",
                k + 1,
                moves[k]
            ));
        }
    }

    /// Sets the GUI's game: `start`, then `moves` (UCI text) played as [`play_on`] plays them,
    /// with the first verdict of the rules among them. Stops before the first move that cannot
    /// be played and returns its index and why.
    fn set_game(
        &mut self,
        start: G::Position,
        moves: &[impl AsRef<str>],
    ) -> Option<(usize, String)> {
        let mut game = G::new_game(start.clone(), self.options.rules);
        let mut line = Vec::with_capacity(moves.len());
        let mut verdict = game.outcome().map(|o| (0, o));
        let mut refused = None;
        let mut clock_base = None;
        for (k, text) in moves.iter().enumerate() {
            // `play_on` drops the history (and resets the clocks) of a game the rules ended.
            let base = if game.outcome().is_some() {
                Some(real_clocks(&game, clock_base))
            } else {
                clock_base
            };
            match game.parse_move(text.as_ref()).and_then(|m| play_on(&mut game, m).map(|()| m)) {
                Ok(m) => {
                    line.push(m);
                    clock_base = base;
                }
                Err(e) => {
                    refused = Some((k, e));
                    break;
                }
            }
            if verdict.is_none() {
                verdict = game.outcome().map(|o| (k + 1, o));
            }
        }
        self.game = game;
        self.start = start;
        self.line = line;
        self.verdict = verdict;
        self.clock_base = clock_base;
        refused
    }

    fn set_position(&mut self, words: &[&str]) {
        let moves_at = words.iter().position(|w| *w == "moves");
        let head = &words[..moves_at.unwrap_or(words.len())];
        let start = match head.split_first() {
            Some((&"startpos", [])) => G::start_position(self.options.rules),
            Some((&"fen", fen)) if !fen.is_empty() => {
                match G::position_from_fen_lenient(&fen.join(" "), self.options.rules) {
                    Ok(p) => p,
                    Err(e) => {
                        self.info(&format!("{e}; keeping the previous position"));
                        return;
                    }
                }
            }
            _ => {
                self.info("position: expected 'startpos' or 'fen FEN', then 'moves ...'; keeping the previous position");
                return;
            }
        };
        let moves = moves_at.map_or(&[] as &[&str], |i| &words[i + 1..]);
        if let Some((k, e)) = self.set_game(start, moves) {
            let shown: String = moves[k].chars().take(16).collect();
            self.info(&format!(
                "position: move {} '{shown}': {e}; position set to the one before it",
                k + 1
            ));
        }
        self.banned.clear();
    }

    fn ban_moves(&mut self, words: &[&str]) {
        self.banned.clear();
        for text in words {
            match self.game.parse_move(text) {
                Ok(m) => self.banned.push(m),
                Err(e) => self.info(&format!("banmoves: {e}; ignored")),
            }
        }
    }

    fn display(&self) {
        let verdict = self.verdict.map_or_else(|| "* -".to_string(), |(_, o)| o.to_string());
        self.info(&format!(
            "fen {} rules {} plies {} outcome {verdict}",
            gui_fen(&self.game, self.clock_base),
            self.options.rules,
            self.line.len()
        ));
    }

    /// Milliseconds, or seconds in UCCI unless `usemillisec` is on (`movetime`: always
    /// milliseconds); a finite number, negative ones kept as they are for the caller to judge.
    fn clock_value(&self, key: &str, text: &str) -> Option<f64> {
        let v: f64 = text.parse().ok().filter(|v: &f64| v.is_finite())?;
        let ucci_seconds = self.dialect == Dialect::Ucci && !self.options.usemillisec;
        Some(if ucci_seconds && key != "movetime" { v * 1000.0 } else { v })
    }

    fn parse_go(&self, words: &[&str]) -> Go {
        let mut go = Go::default();
        let mut i = 0;
        while i < words.len() {
            let key = words[i];
            i += 1;
            let value = words.get(i).copied().filter(|v| !GO_KEYWORDS.contains(v));
            let mut used = true;
            let mut bad = false;
            match key {
                "infinite" => {
                    go.infinite = true;
                    used = false;
                }
                "ponder" => {
                    go.ponder = true;
                    used = false;
                }
                "draw" => used = false,
                "searchmoves" => {
                    while let Some(w) = words.get(i).filter(|w| !GO_KEYWORDS.contains(*w)) {
                        go.searchmoves.push(w.to_string());
                        i += 1;
                    }
                    used = false;
                }
                "nodes" => match value.and_then(|v| v.parse::<u64>().ok()) {
                    Some(n) => go.nodes = Some(n.clamp(1, uci_search::MAX_SIMULATIONS)),
                    None => bad = true,
                },
                "depth" => match value.and_then(|v| v.parse::<u32>().ok()) {
                    Some(d) => go.depth = Some(d),
                    None => bad = true,
                },
                "movestogo" => match value.and_then(|v| v.parse::<u32>().ok()) {
                    Some(d) => go.movestogo = Some(d),
                    None => bad = true,
                },
                "movetime" | "wtime" | "btime" | "winc" | "binc" | "time" | "increment" => {
                    let ms = value.and_then(|v| self.clock_value(key, v));
                    let parsed = match ms {
                        // A clock that ran out (a GUI's lag) is no time left, said so.
                        Some(ms) if ms < 0.0 && matches!(key, "wtime" | "btime" | "time") => {
                            let shown: String = value.unwrap_or("").chars().take(24).collect();
                            self.info(&format!(
                                "go: negative {key} '{shown}' taken as no time left (0 ms)"
                            ));
                            Some(0.0)
                        }
                        Some(ms) if ms < 0.0 => {
                            let shown: String = value.unwrap_or("").chars().take(24).collect();
                            self.info(&format!(
                                "go: bad value '{shown}' for {key}: a time may not be negative; \
                                 ignored"
                            ));
                            None
                        }
                        Some(ms) => Some(ms),
                        None => {
                            bad = true;
                            None
                        }
                    };
                    // None: explained above.
                    if let Some(d) =
                        parsed.map(|ms| Duration::from_micros((ms.min(1e12) * 1000.0) as u64))
                    {
                        let slot = match key {
                            "movetime" => &mut go.movetime,
                            "wtime" => &mut go.wtime,
                            "btime" => &mut go.btime,
                            "winc" => &mut go.winc,
                            "binc" => &mut go.binc,
                            "time" => &mut go.time,
                            _ => &mut go.increment,
                        };
                        *slot = Some(d);
                    }
                }
                "opptime" | "oppincrement" | "mate" | "nodestime" => {
                    if value.is_none() {
                        bad = true;
                    }
                }
                other => {
                    let shown: String = other.chars().take(24).collect();
                    self.info(&format!("go: unknown parameter '{shown}' ignored"));
                    used = false;
                }
            }
            if bad {
                let shown: String = value.unwrap_or("").chars().take(24).collect();
                self.info(&format!("go: bad value '{shown}' for {key}; ignored"));
                if value.is_none() {
                    used = false;
                }
            }
            if used {
                i += 1;
            }
        }
        go
    }

    fn go(&mut self, words: &[&str]) {
        self.stop_search();
        let go = self.parse_go(words);
        if let Some(note) = self.evaluator_note() {
            self.info(&note);
        }
        let banned_by_command = std::mem::take(&mut self.banned);
        let dialect = self.dialect;
        let no_move = || match dialect {
            Dialect::Uci => "bestmove (none)",
            Dialect::Ucci => "nobestmove",
        };
        let mut root = self.game.clone();
        if root.outcome().is_some() && G::position_legal_moves(root.position()).is_empty() {
            if dialect == Dialect::Uci {
                // No legal move: the side to move has lost.
                let wdl = if self.options.show_wdl { " wdl 0 0 1000" } else { "" };
                self.out.line(&format!("info depth 0 score mate 0{wdl}"));
            }
            self.out.line(no_move());
            return;
        }
        if let Some((at, o)) = self.verdict {
            let n = self.line.len();
            let searched = if at == n {
                "the position without its history".to_string()
            } else {
                format!("the position after all {n} moves")
            };
            let at = if at == 0 { String::new() } else { format!(" at move {at}") };
            self.info(&format!("the rules have ended this game{at} ({o}); searching {searched}"));
        }
        if root.outcome().is_some() {
            root = root.without_history();
        }
        // The position's moves: `Game::legal_moves` is empty once the rules ended the game.
        let legal = G::position_legal_moves(root.position());
        let mut banned: Vec<Move> =
            legal.iter().copied().filter(|m| banned_by_command.contains(m)).collect();
        if !go.searchmoves.is_empty() {
            let allowed: Vec<Move> =
                go.searchmoves.iter().filter_map(|t| root.parse_move(t).ok()).collect();
            if allowed.is_empty() {
                self.info("go: no legal move in searchmoves; searching every move");
            } else {
                banned.extend(legal.iter().copied().filter(|m| !allowed.contains(m)));
            }
        }
        if !legal.is_empty() && legal.iter().all(|m| banned.contains(m)) {
            self.info("every legal move is excluded; searching them all");
            banned.clear();
        }
        if root.outcome().is_some() {
            // Still decided without history (dead material): any allowed move will do.
            let m = legal.iter().copied().find(|m| !banned.contains(m));
            match m {
                Some(m) => self.out.line(&format!("bestmove {m}")),
                None => self.out.line(no_move()),
            }
            return;
        }
        let turn = root.turn();
        let (own, inc) = match dialect {
            Dialect::Uci if turn == xiangqi::Color::Red => {
                (go.wtime.or(go.time), go.winc.or(go.increment))
            }
            Dialect::Uci => (go.btime.or(go.time), go.binc.or(go.increment)),
            Dialect::Ucci => (
                go.time.or(if turn == xiangqi::Color::Red { go.wtime } else { go.btime }),
                go.increment,
            ),
        };
        let time = go.movetime.or_else(|| {
            own.map(|t| uci_search::time_budget(t, inc.unwrap_or_default(), go.movestogo))
        });
        let simulations = match (go.nodes, go.depth) {
            (Some(n), _) => Some(n),
            (None, Some(d)) => Some(uci_search::depth_simulations(d)),
            (None, None) if time.is_none() => Some(self.options.simulations),
            (None, None) => None,
        };
        let hash = (self.options.hash_mb as usize).saturating_mul(1 << 20);
        let max_nodes = (hash / uci_search::bytes_per_node::<G>(root.moves().len())).max(64);
        let record = self.net_record();
        // A level below full strength searches its share of the full budget (fewer where the
        // `go` asks for fewer), whatever else limits the search.
        let level = self.strength(record.strength.as_ref());
        let simulations = match &level {
            Some((strength, full, why)) => {
                let full = u32::try_from(*full).unwrap_or(u32::MAX);
                let n = u64::from(strength.simulations(full));
                let n = simulations.map_or(n, |g| g.min(n));
                let unit = if n == 1 { "simulation" } else { "simulations" };
                self.info(&format!("playing at {why}: {n} {unit} a move"));
                Some(n)
            }
            None => simulations,
        };
        // Gumbel needs its budget beforehand: a search until `stop` is PUCT.
        let budget = if (go.infinite || go.ponder) && level.is_none() { None } else { simulations };
        let (search, notes) = self.options.search.for_search(record.search.as_ref(), budget);
        for note in notes {
            self.info(&note);
        }
        self.searches += 1;
        let job = Job {
            game: root,
            search,
            show_wdl: self.options.show_wdl,
            banned,
            simulations,
            time: if go.ponder { None } else { time },
            multipv: self.options.multipv as usize,
            max_nodes,
            dialect,
            strength: level.map(|(strength, _, _)| strength),
            seed: self.seed ^ self.searches.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        };
        let controls = Arc::new(Controls::new(go.infinite || go.ponder, job.time));
        let handle = uci_search::spawn(
            job,
            Arc::clone(&self.evaluator),
            Arc::clone(&controls),
            self.out.clone(),
        );
        self.running = Some(Running {
            controls,
            ponder_time: if go.ponder && !go.infinite { time } else { None },
            handle,
        });
    }

    fn ponderhit(&mut self) {
        if let Some(r) = &self.running {
            let c = &r.controls;
            if let Some(t) = r.ponder_time {
                let now = c.started.elapsed() + t;
                c.deadline_ms.store(now.as_millis() as u64, Ordering::Relaxed);
            }
            c.infinite.store(false, Ordering::Relaxed);
        }
    }

    /// At the end of input: a search with a limit (nodes, depth, movetime, a clock, or the
    /// `Simulations` default) runs to it and prints its `bestmove`, as a script that pipes
    /// `go nodes 200` and closes its input expects; an infinite or pondering search, which
    /// nothing could end any more, is stopped (`quit` stops any search at once).
    pub fn finish_search(&mut self) {
        let Some(r) = self.running.take() else { return };
        if r.controls.infinite.load(Ordering::Relaxed) {
            self.running = Some(r);
            self.stop_search();
        } else if r.handle.join().is_err() {
            self.info("the search thread failed");
        }
    }

    /// Stops the running search, if any, and waits for its `bestmove`.
    pub fn stop_search(&mut self) {
        if let Some(r) = self.running.take() {
            r.controls.stop.store(true, Ordering::Relaxed);
            if r.handle.join().is_err() {
                self.info("the search thread failed");
            }
        }
    }
}

impl<E: Evaluator<G> + Send + 'static, G: GameEnv> Drop for Engine<E, G> {
    fn drop(&mut self) {
        self.stop_search();
    }
}

/// The `option` lines of the strength options: `UCI_LimitStrength`, `UCI_Elo` (only with a
/// network whose levels were measured: its range is theirs, its default the weakest) and
/// `Skill Level`. UCCI names them `limitstrength`, `elo` and `skilllevel`.
fn strength_option_lines(table: Option<&StrengthTable>, dialect: Dialect) -> Vec<String> {
    let ucci = dialect == Dialect::Ucci;
    let mut lines = Vec::new();
    lines.push(if ucci {
        "option limitstrength type check default false".to_string()
    } else {
        "option name UCI_LimitStrength type check default false".to_string()
    });
    if let Some(t) = table {
        let (low, high) = t.elo_range();
        lines.push(if ucci {
            format!("option elo type spin min {low} max {high} default {low}")
        } else {
            format!("option name UCI_Elo type spin default {low} min {low} max {high}")
        });
    }
    lines.push(if ucci {
        format!("option skilllevel type spin min 0 max {MAX_LEVEL} default {MAX_LEVEL}")
    } else {
        format!("option name Skill Level type spin default {MAX_LEVEL} min 0 max {MAX_LEVEL}")
    });
    lines
}

/// Plays `mv`, a legal move in the game's position, as a GUI sends it: once the rules have
/// ended the game (a GUI that does not adjudicate plays on), the game goes on from the position
/// without its history, so that the engine's position stays the GUI's.
///
/// # Errors
/// Why the move is illegal.
fn play_on<G: GameEnv>(game: &mut G, mv: Move) -> Result<(), String> {
    if game.outcome().is_none() {
        return game.play_checked(mv).map(drop);
    }
    if !G::position_legal_moves(game.position()).contains(&mv) {
        return Err(format!("{mv} is not a legal move here"));
    }
    let mut next = game.without_history();
    // Legal by the test above; the new game may be over already (dead material), which
    // `play_checked` would refuse.
    SearchGame::play(&mut next, mv);
    *game = next;
    Ok(())
}

/// The halfmove clock and fullmove number of a FEN (its last two fields).
fn fen_clocks(fen: &str) -> Option<(u32, u32)> {
    let mut fields = fen.split_ascii_whitespace().rev();
    let fullmove = fields.next()?.parse().ok()?;
    let halfmove = fields.next()?.parse().ok()?;
    Some((halfmove, fullmove))
}

/// The real clocks of `game`'s position in the GUI's game, where `base` holds the real clocks
/// of `game`'s start if [`play_on`] started it afresh (its clocks reset to 0 and 1): the
/// halfmove clock goes on from the base's until a capture, the move number from the base's.
fn real_clocks<G: GameEnv>(game: &G, base: Option<(u32, u32)>) -> (u32, u32) {
    let (halfmove, fullmove) = fen_clocks(&G::position_fen(game.position())).unwrap_or((0, 1));
    match base {
        None => (halfmove, fullmove),
        Some((base_half, base_full)) => {
            // No capture since the fresh start: the clock counts every ply since then.
            let no_capture = halfmove as usize == game.moves().len();
            let half = if no_capture { base_half.saturating_add(halfmove) } else { halfmove };
            (half, (base_full + fullmove).saturating_sub(1))
        }
    }
}

/// The FEN of the GUI's position: `game`'s with the real clocks ([`real_clocks`]).
fn gui_fen<G: GameEnv>(game: &G, base: Option<(u32, u32)>) -> String {
    let fen = G::position_fen(game.position());
    if base.is_none() {
        return fen;
    }
    let (half, full) = real_clocks(game, base);
    let fields: Vec<&str> = fen.split_ascii_whitespace().collect();
    match fields.len().checked_sub(2) {
        Some(n) => format!("{} {half} {full}", fields[..n].join(" ")),
        None => fen,
    }
}

/// What reading one line found.
pub(crate) enum LineRead {
    Line,
    TooLong,
    Eof,
}

/// Reads one line into `buf` (without its end), at most [`MAX_LINE`] bytes; a longer line is
/// skipped to its end.
pub(crate) fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<LineRead> {
    buf.clear();
    let n = r.by_ref().take(MAX_LINE as u64).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(LineRead::Eof);
    }
    if buf.last() == Some(&b'\n') || n < MAX_LINE {
        return Ok(LineRead::Line);
    }
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        if let Some(i) = chunk.iter().position(|&b| b == b'\n') {
            r.consume(i + 1);
            break;
        }
        let len = chunk.len();
        r.consume(len);
    }
    Ok(LineRead::TooLong)
}

/// Runs the protocol loop on `input` until `quit` or the end of input.
///
/// # Errors
/// I/O errors reading `input`.
#[cfg(test)]
pub fn serve<E: Evaluator<G> + Send + 'static, G: GameEnv>(
    engine: &mut Engine<E, G>,
    input: &mut impl BufRead,
) -> io::Result<()> {
    let mut buf = Vec::new();
    loop {
        match read_line(input, &mut buf)? {
            LineRead::Eof => {
                engine.finish_search();
                break;
            }
            LineRead::TooLong => engine.info("input line longer than 1 MiB ignored"),
            LineRead::Line => {
                let line = String::from_utf8_lossy(&buf);
                if engine.handle_line(&line) == Flow::Quit {
                    break;
                }
            }
        }
    }
    engine.stop_search();
    Ok(())
}

/// Runs the command.
///
/// The game is the network's (from its manifest). Without `--net` the engine starts as a
/// xiangqi engine and `setoption name UCI_Variant value janggi` (or `xiangqi`) switches it:
/// the options set so far are set again on the new game's engine (`Rules` only where it was
/// set for that game: each game's rule set is its own, the game's default until set), and the
/// position is the new game's start. A `NetPath` of the other game's network switches the same
/// way (its manifest names the game), so a GUI that only sets `NetPath` gets a janggi engine
/// for a janggi network; an `info string` says so. With `--net`, the network fixes the game: a
/// `UCI_Variant` or `NetPath` of another game is refused with an `info string`.
///
/// # Errors
/// A `--net` that cannot be loaded (with the reason), and I/O errors on standard input.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let device = crate::net::device(&args.device)?;
    let mut game = match &args.net {
        Some(path) => crate::net::game_of(path)?,
        None => GameKind::Xiangqi,
    };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut session = Session {
        replay: Vec::new(),
        rules: Vec::new(),
        dialect: None,
        pinned: args.net.is_some(),
    };
    let mut evaluator = crate::net::AnyEvaluator::load_optional(args.net.as_deref(), &device)?;
    loop {
        let next = match game {
            GameKind::Xiangqi => serve_as::<Game>(evaluator, &device, &mut input, &mut session)?,
            GameKind::Janggi => {
                serve_as::<janggi::Game>(evaluator, &device, &mut input, &mut session)?
            }
        };
        match next {
            Some((other, net)) => {
                game = other;
                evaluator = net
                    .unwrap_or(crate::net::AnyEvaluator::Uniform(xiangqi_search::UniformEvaluator));
            }
            None => return Ok(ExitCode::SUCCESS),
        }
    }
}

/// What carries over when the engine switches games.
struct Session {
    /// The `setoption` lines so far other than `UCI_Variant`, `Rules` and `NetPath`.
    replay: Vec<String>,
    /// The last `Rules` line sent to each game's engine.
    rules: Vec<(GameKind, String)>,
    /// The protocol chosen by `uci` or `ucci`.
    dialect: Option<Dialect>,
    /// Whether a network fixes the game.
    pinned: bool,
}

/// The option name (lower case) and value of a `setoption` line: UCI `setoption name N...
/// [value V...]` or UCCI `setoption N V...`; the value as [`raw_value`] reads it.
fn setoption_parts(line: &str) -> Option<(String, String)> {
    let line = line.trim_end_matches(['\r', '\n']);
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    match words.as_slice() {
        ["setoption", "name", rest @ ..] => {
            let at = rest.iter().position(|w| *w == "value").unwrap_or(rest.len());
            let value = match rest.get(at) {
                Some(_) => raw_value(line).unwrap_or_default().to_string(),
                None => String::new(),
            };
            Some((rest[..at].join(" ").to_ascii_lowercase(), value))
        }
        ["setoption", name, value @ ..] => Some((name.to_ascii_lowercase(), value.join(" "))),
        _ => None,
    }
}

/// The text of `line` after its first standalone word `value` and one separator, exactly as
/// sent (a path may hold runs of spaces or end in one).
fn raw_value(line: &str) -> Option<&str> {
    let mut offset = 0;
    for word in line.split_ascii_whitespace() {
        let start = offset + line[offset..].find(word)?;
        offset = start + word.len();
        if word == "value" {
            let rest = &line[offset..];
            let mut chars = rest.chars();
            return Some(match chars.next() {
                Some(c) if c.is_ascii_whitespace() => chars.as_str(),
                _ => rest,
            });
        }
    }
    None
}

/// The directory a `NetPath` value names, `None` for an empty one.
fn net_path_value(value: &str) -> Option<&str> {
    let path = value.trim_start();
    (!path.trim().is_empty() && path.trim() != "<empty>").then_some(path)
}

/// The game a `setoption ... UCI_Variant ...` line asks for, if the line is one.
fn variant_request(line: &str) -> Option<Result<GameKind, String>> {
    let (name, value) = setoption_parts(line)?;
    (name == "uci_variant").then(|| value.trim().parse::<GameKind>().map_err(|e| e.to_string()))
}

/// Serves the protocol as an engine of game `G` until `quit`, the end of input (`None`), or a
/// request to switch to another game (`Some`, only without `--net`), with the network that
/// asked for it if a `NetPath` did.
fn serve_as<G: GameEnv>(
    evaluator: crate::net::AnyEvaluator,
    device: &xiangqi_nn::Device,
    input: &mut impl BufRead,
    session: &mut Session,
) -> anyhow::Result<Option<(GameKind, Option<crate::net::AnyEvaluator>)>> {
    let loader_device = device.clone();
    let loader: NetLoader<crate::net::AnyEvaluator> = Box::new(move |path: &str| {
        let e = crate::net::AnyEvaluator::load_optional(
            Some(std::path::Path::new(path)),
            &loader_device,
        )
        .map_err(|e| format!("{e:#}"))?;
        e.expect_game(G::KIND, path).map_err(|e| format!("{e:#}"))?;
        Ok(e)
    });
    let note: EvaluatorNote<crate::net::AnyEvaluator> =
        Box::new(|e| e.game().is_none().then(|| NO_NETWORK.to_string()));
    let mut engine: Engine<_, G> = Engine::new(evaluator, Output::new(Box::new(io::stdout())))
        .with_net_loader(loader)
        .with_evaluator_note(note)
        .with_net_record(Box::new(crate::net::AnyEvaluator::record));
    if session.pinned {
        engine = engine.with_fixed_game();
    }
    if let Some(d) = session.dialect {
        engine.dialect = d;
    }
    for line in &session.replay {
        engine.handle_line(line);
    }
    if let Some((_, line)) = session.rules.iter().find(|(g, _)| *g == G::KIND) {
        engine.handle_line(line);
    }
    let mut buf = Vec::new();
    loop {
        match read_line(input, &mut buf)? {
            LineRead::Eof => {
                engine.finish_search();
                break;
            }
            LineRead::TooLong => engine.info("input line longer than 1 MiB ignored"),
            LineRead::Line => {
                let line = String::from_utf8_lossy(&buf).into_owned();
                let option = setoption_parts(&line);
                match option.as_ref().map(|(name, value)| (name.as_str(), value.as_str())) {
                    Some(("uci_variant", _)) => {
                        // A network (from --net or NetPath) fixes the game; the uniform
                        // evaluator plays either.
                        if let Some(Ok(g)) = variant_request(&line)
                            && g != G::KIND
                            && !session.pinned
                            && !engine.with_evaluator(|e| e.game().is_some())
                        {
                            engine.stop_search();
                            engine.info(&format!("playing {g}"));
                            return Ok(Some((g, None)));
                        }
                    }
                    Some(("rules", _)) => {
                        session.rules.retain(|(g, _)| *g != G::KIND);
                        session.rules.push((G::KIND, line.clone()));
                    }
                    Some(("netpath", value)) => match net_of_another_game(&engine, value, device) {
                        NetSwitch::Stay => {}
                        NetSwitch::To(game, net) => {
                            engine.stop_search();
                            let path = net_path_value(value).unwrap_or_default();
                            engine.info(&format!(
                                "network loaded from {path}; it plays {game}: playing {game} \
                                 from its start position"
                            ));
                            return Ok(Some((game, Some(net))));
                        }
                        NetSwitch::Failed(why) => {
                            engine.info(&why);
                            continue;
                        }
                    },
                    Some(_) => session.replay.push(line.clone()),
                    None => {}
                }
                if engine.handle_line(&line) == Flow::Quit {
                    break;
                }
                session.dialect = Some(engine.dialect);
            }
        }
    }
    engine.stop_search();
    Ok(None)
}

/// What a `NetPath` value means for the engine's game.
enum NetSwitch {
    /// Nothing: the engine's own `NetPath` handling loads it or explains why not.
    Stay,
    /// A network of this other game, loaded.
    To(GameKind, crate::net::AnyEvaluator),
    /// A network of another game that does not load, and why.
    Failed(String),
}

/// Whether a `NetPath` value names a network of another game than `G` (by its manifest) for an
/// engine no `--net` fixes, and if so the network loaded.
fn net_of_another_game<G: GameEnv>(
    engine: &Engine<crate::net::AnyEvaluator, G>,
    value: &str,
    device: &xiangqi_nn::Device,
) -> NetSwitch {
    let Some(path) = net_path_value(value).filter(|_| !engine.fixed_game) else {
        return NetSwitch::Stay;
    };
    let path = std::path::Path::new(path);
    match crate::net::game_of(path) {
        Ok(game) if game != G::KIND => {
            match crate::net::AnyEvaluator::load_optional(Some(path), device) {
                Ok(net) => NetSwitch::To(game, net),
                Err(e) => {
                    NetSwitch::Failed(format!("option NetPath: {e:#}; keeping the current network"))
                }
            }
        }
        _ => NetSwitch::Stay,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use xiangqi_search::UniformEvaluator;

    /// Collects output lines.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().map_err(|_| io::Error::other("poisoned"))?.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Runs the script line by line, waiting after each `go` for its `bestmove`.
    fn run_script(script: &str) -> Vec<String> {
        let sink = Sink::default();
        let lines = || -> Vec<String> {
            let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
            text.lines().map(str::to_string).collect()
        };
        let answered = |l: &String| l.starts_with("bestmove") || l == "nobestmove";
        let mut engine: Engine<_, Game> =
            Engine::new(UniformEvaluator, Output::new(Box::new(sink.clone())));
        for line in script.lines() {
            let before = lines().iter().filter(|l| answered(l)).count();
            if engine.handle_line(line) == Flow::Quit {
                break;
            }
            if line.starts_with("go") {
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while lines().iter().filter(|l| answered(l)).count() == before {
                    assert!(std::time::Instant::now() < deadline, "no bestmove: {:?}", lines());
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
        drop(engine);
        lines()
    }

    #[test]
    fn long_lines_are_skipped() {
        let mut input = format!("{}\nisready\n", "x".repeat(MAX_LINE + 10));
        input.push_str("uci\n");
        let sink = Sink::default();
        let mut engine: Engine<_, Game> =
            Engine::new(UniformEvaluator, Output::new(Box::new(sink.clone())));
        serve(&mut engine, &mut input.as_bytes()).unwrap();
        drop(engine);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(text.starts_with("info string input line longer"), "{text}");
        assert!(text.contains("readyok\n") && text.ends_with("uciok\n"), "{text}");
    }

    #[test]
    fn go_nodes_gives_a_legal_bestmove() {
        let out = run_script("uci\nposition startpos moves h2e2\ngo nodes 64\n");
        assert!(out.contains(&"uciok".to_string()));
        let best = out.iter().find_map(|l| l.strip_prefix("bestmove ")).unwrap();
        let mv = best.split_whitespace().next().unwrap();
        let mut pos = xiangqi::Position::start();
        pos.play(pos.parse_uci("h2e2").unwrap()).unwrap();
        assert!(pos.parse_uci(mv).is_ok(), "{mv}");
        let info = out.iter().find(|l| l.starts_with("info depth")).unwrap();
        assert!(info.contains(" score cp ") && info.contains(" wdl ") && info.contains(" pv "));
    }

    #[test]
    fn bad_input_is_explained() {
        let out = run_script(
            "foo\nsetoption name Bogus value 1\nsetoption name Hash value x\nposition fen 9/9 w\n\
             position startpos moves h2e2 h2e2\nposition\ngo nodes\nd\n",
        );
        let infos: Vec<&String> = out.iter().filter(|l| l.starts_with("info string")).collect();
        assert!(infos.len() >= 6, "{out:?}");
        // The bad move left the position after h2e2.
        assert!(
            out.iter().any(|l| l.contains("1C2C4") && l.starts_with("info string fen")),
            "{out:?}"
        );
    }

    #[test]
    fn ucci_mate_and_nobestmove() {
        let out = run_script(
            "ucci\nposition fen 4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1\ngo depth 6\n\
             position fen 4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1 moves b7b9\ngo depth 3\nquit\n",
        );
        assert!(out.contains(&"ucciok".to_string()));
        assert!(
            out.iter()
                .any(|l| l == "bestmove b7b9" || l == "bestmove a8f8" || l == "bestmove b7f7"),
            "{out:?}"
        );
        assert!(
            out.iter().any(|l| l.starts_with("info depth") && l.contains("score 9999")),
            "{out:?}"
        );
        assert!(out.contains(&"nobestmove".to_string()));
        assert_eq!(out.last().map(String::as_str), Some("bye"));
    }

    #[test]
    fn skill_levels_play_legal_moves_and_mates_in_one() {
        let uci = run_script("uci\n");
        assert!(uci.contains(&"option name UCI_LimitStrength type check default false".into()));
        assert!(uci.contains(&"option name Skill Level type spin default 20 min 0 max 20".into()));
        // No measured levels without a calibrated network: no UCI_Elo offered.
        assert!(!uci.iter().any(|l| l.contains("UCI_Elo")), "{uci:?}");
        // Level 0 plays at random, but never past a mate in one (b7-b9, or a8-f8 leaving Black
        // without a move).
        let mut script = String::from("setoption name Skill Level value 0\n");
        for _ in 0..12 {
            script.push_str("position fen 4k4/R8/1R7/9/9/9/9/9/9/3K5 w - - 0 1\ngo nodes 800\n");
        }
        let out = run_script(&script);
        let moves: Vec<&str> = out.iter().filter_map(|l| l.strip_prefix("bestmove ")).collect();
        assert_eq!(moves.len(), 12, "{out:?}");
        for m in &moves {
            let m = m.split_whitespace().next().unwrap();
            assert!(["b7b9", "a8f8", "b7f7"].contains(&m), "{m}: {out:?}");
        }
        // The level's share of the budget: 800^(0/20) = 1 simulation.
        assert!(
            out.iter().any(|l| l == "info string playing at Skill Level 0: 1 simulation a move"),
            "{out:?}"
        );
        // From the start position, level 3 spreads its moves over many legal ones.
        let mut script = String::from("setoption name Skill Level value 3\n");
        for _ in 0..30 {
            script.push_str("position startpos\ngo nodes 100\n");
        }
        let out = run_script(&script);
        let start = xiangqi::Position::start();
        let mut seen = std::collections::HashSet::new();
        for m in out.iter().filter_map(|l| l.strip_prefix("bestmove ")) {
            let m = m.split_whitespace().next().unwrap();
            assert!(start.parse_uci(m).is_ok(), "{m}");
            seen.insert(m.to_string());
        }
        assert!(seen.len() >= 5, "{seen:?}");
    }

    #[test]
    fn strength_options_explain_bad_values() {
        let out = run_script(
            "setoption name Skill Level value 21\nsetoption name Skill Level value x\n\
             setoption name UCI_LimitStrength value maybe\nsetoption name UCI_Elo value 1500\n\
             setoption name UCI_LimitStrength value true\nposition startpos\ngo nodes 50\n",
        );
        let infos: Vec<&String> = out.iter().filter(|l| l.starts_with("info string")).collect();
        assert!(
            infos.iter().any(|l| l.contains("'21' is not a whole number in 0..=20")),
            "{out:?}"
        );
        assert!(infos.iter().any(|l| l.contains("'maybe' is not true or false")), "{out:?}");
        assert!(infos.iter().any(|l| l.contains("no measured levels")), "{out:?}");
        // UCI_LimitStrength without a table plays Skill Level (20 here: full strength, no
        // level line) and says so.
        assert!(infos.iter().any(|l| l.contains("UCI_Elo cannot be met; playing Skill Level 20")));
        assert!(!out.iter().any(|l| l.contains("playing at")), "{out:?}");
        assert!(out.iter().any(|l| l.starts_with("bestmove ")), "{out:?}");
    }

    #[test]
    fn a_level_in_an_infinite_search_keeps_to_its_share() {
        // Level 15 of Simulations 800: 800^(15/20) = 150 simulations (a PUCT search, above the
        // Gumbel limit), also while `go infinite` waits for `stop`.
        let sink = Sink::default();
        let mut engine: Engine<_, Game> =
            Engine::new(UniformEvaluator, Output::new(Box::new(sink.clone())));
        for line in ["setoption name Skill Level value 15", "position startpos", "go infinite"] {
            engine.handle_line(line);
        }
        std::thread::sleep(Duration::from_millis(400));
        engine.handle_line("stop");
        drop(engine);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(text.contains("playing at Skill Level 15: 150 simulations a move"), "{text}");
        let nodes: Vec<u64> = text
            .lines()
            .filter_map(|l| l.split(" nodes ").nth(1)?.split_whitespace().next()?.parse().ok())
            .collect();
        assert!(!nodes.is_empty() && nodes.iter().all(|&n| n <= 151), "{text}");
        assert!(text.lines().any(|l| l.starts_with("bestmove ")), "{text}");
    }
}
