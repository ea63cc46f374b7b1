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
//! the current one; `--net` gives the one to start with, shown as its default), `UCI_Variant`
//! (combo `xiangqi`/`janggi`: the game; a network fixes it, see [`run`]), `Rules` (combo:
//! `asian`/`simple` for xiangqi, `site`/`traditional` for janggi), and in UCCI `usemillisec`
//! (check: clock values in milliseconds instead of seconds). Janggi moves are UCI with ranks
//! 0–9, a pass written as the general's point twice.
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

mod go;
mod session;

pub use session::run;

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
    /// The CPU kernels' arithmetic: f32; bf16, the network's tower in bfloat16 on Intel's AMX
    /// or AVX-512 BF16 (about twice the positions per second for the main job's 2 × 24 net on AMX,
    /// 1.4–1.7 times on AVX-512 BF16, nothing for the smallest nets; f32, with a warning, where it cannot run); or auto, bf16 where it can run
    /// and f32 elsewhere.
    #[arg(long, default_value = "f32")]
    precision: xiangqi_nn::Precision,
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
    /// The network the engine was started with (`xqz uci --net`), shown as `NetPath`'s default.
    net_path: Option<String>,
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
            net_path: None,
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

    /// Shows `path` (the network the engine starts with) as the default of `NetPath`, as
    /// engines show the network file they load by default. Control characters become spaces,
    /// so that no path can break the option line.
    pub fn with_net_path(mut self, path: &str) -> Engine<E, G> {
        let clean: String = one_line(path).collect();
        self.net_path = (!clean.trim().is_empty()).then_some(clean);
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

    /// The evaluator note, if there is one now (between searches).
    fn evaluator_note(&mut self) -> Option<String> {
        let note = self.evaluator_note.take()?;
        let text = self.with_evaluator(|e| note(e));
        self.evaluator_note = Some(note);
        text
    }

    fn info(&self, text: &str) {
        // One line: never let input with line breaks forge protocol output.
        let clean: String = one_line(text).take(500).collect();
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
                    format!(
                        "option name NetPath type string default {}",
                        self.net_path.as_deref().unwrap_or("<empty>")
                    ),
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
                    match &self.net_path {
                        Some(path) => format!("option netpath type string default {path}"),
                        None => "option netpath type string default".to_string(),
                    },
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

/// `text` with every control character (line breaks among them) made a space: one protocol
/// line whatever it holds.
fn one_line(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars().map(|c| if c.is_control() { ' ' } else { c })
}

/// The directory a `NetPath` value names, `None` for an empty one.
fn net_path_value(value: &str) -> Option<&str> {
    let path = value.trim_start();
    (!path.trim().is_empty() && path.trim() != "<empty>").then_some(path)
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
