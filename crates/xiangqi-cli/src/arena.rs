//! `xqz arena --a PLAYER --b PLAYER --games N [...]`: a match between two players.
//!
//! Players (`--a`, `--b`):
//!
//! * `random`: a uniformly random legal move; `greedy`: a win in one, else the most valuable
//!   capture, else random (both seeded from `--seed`);
//! * `mcts`: the search with uniform priors (no network), `--sims` simulations a move or
//!   `--movetime`; `--a-option NAME=VALUE` sets a `[search]` key (`c_puct=2.0`,
//!   `algorithm=gumbel`, ...);
//! * `uci:COMMAND` or `ucci:COMMAND`: an external engine run as a subprocess (the command is
//!   split into words as a POSIX shell splits them: `'...'`, `"..."` and `\` quote, nothing is
//!   expanded); `--a-option NAME=VALUE` becomes `setoption`, and
//!   `--a-ranks 1` reads and writes its moves with ranks 1–10 (the default for Fairy-Stockfish,
//!   by its `id name`); an engine that offers `UCI_Variant` is told the game unless
//!   `--a-option UCI_Variant=...` names it. See
//!   [`crate::engine`];
//! * a network: `net:DIR` or a checkpoint directory of `xqz train` (`ckpt-NNNNNN`), searched
//!   with `--sims` simulations a move, with the `[search]` settings its manifest records, played
//!   as `xqz uci` plays them (Gumbel up to 128 simulations, PUCT above or by time; see
//!   `net_search_config`), and `--a-option`/`--b-option` `KEY=VALUE` setting any `[search]` key
//!   over them;
//!   `--a-level N` plays it (or `mcts`) at skill level N ([`xiangqi_search::strength`]: the
//!   level's share of the simulations and a drawn move);
//!
//! Each move is limited by `--movetime MS` (engines get `go movetime`) and/or `--sims S`
//! (engines get `go nodes S` without a move time); with neither, 800 simulations (for `mcts`,
//! its `simulations` option, default 800). A player
//! that answers later than the move time plus `--margin MS` (default 1000), crashes, fails or
//! plays an illegal move loses the game. Every other verdict comes from the rules (`--rules`),
//! or from `--max-plies` (a draw).
//!
//! The game (`--game xiangqi|janggi`) is the networks' (from their manifests; two networks of
//! different games are refused), or xiangqi when no network plays; `--game` must agree with
//! the networks. `--rules` defaults to the game's default rule set (`asian`, `site`). For
//! janggi the built-in openings are the eight pairings of the horse and elephant arrangements
//! ([`xiangqi_search::arena::JANGGI_OPENINGS`]); an external engine that offers `UCI_Variant`
//! is told the game, as above.
//!
//! Games come in pairs over the openings (the 8 built-in ones, or `--openings FILE` with one FEN
//! or move sequence per line), each opening once with each colour. An opening after which the
//! rules have already ended the game (the side to move is mated) is skipped with a warning,
//! never scored; none left is an error. With `--sprt ELO0,ELO1`
//! (optionally `,ALPHA,BETA`; default 0.05 each) the match stops once the test decides.
//! A progress bar runs on standard error; the result table goes to standard output; `--pgn FILE`
//! writes every game in the PGN form of self-play.
//!
//! When both players are `random`, `greedy` or `mcts` (and no `mcts` player has a
//! `--movetime`), up to `--concurrency` games (default 16) run at once in lockstep and the
//! searches' leaves of all of them are evaluated in one batch
//! ([`xiangqi_search::arena::run_match_batched_shared`]); the games and the result are the
//! same as when they are played one at a time. Matches with an external engine, or timed
//! searches, are played one game at a time.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use xiangqi::{Game, OutcomeReason, RankBase, janggi};
use xiangqi_search::arena::{
    ArenaGame, BatchCounters, ForfeitKind, GameSettings, LocalPlayer, MatchConfig, MatchStats,
    MoveLimit, Opening, Player, Sprt, parse_openings, run_match, run_match_batched,
    run_match_batched_shared,
};
use xiangqi_search::{GameEnv, GameKind, SearchConfig, UniformEvaluator};

use crate::engine::{EnginePlayer, EngineSpec, Protocol};
use crate::net::AnyEvaluator;

/// Arguments of `xqz arena`.
#[derive(clap::Args)]
pub struct Args {
    /// Player A: random, greedy, mcts, uci:COMMAND, ucci:COMMAND, or a network: a checkpoint,
    /// export or run directory (`net:DIR` or just DIR).
    #[arg(long = "a")]
    a: String,
    /// Player B, as player A.
    #[arg(long = "b")]
    b: String,
    /// Games to play (in pairs with colours swapped).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    games: u32,
    /// Simulations (nodes) per move.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    sims: Option<u32>,
    /// Time per move in milliseconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    movetime: Option<u64>,
    /// Grace in milliseconds beyond the move time before a move counts as late.
    #[arg(long, default_value_t = 1000)]
    margin: u64,
    /// Openings file: one FEN, `FEN moves M...` or UCI move sequence per line.
    #[arg(long)]
    openings: Option<PathBuf>,
    /// The game: xiangqi or janggi (default: the networks' game, else xiangqi).
    #[arg(long)]
    game: Option<GameKind>,
    /// Rule set: `asian` or `simple` for xiangqi, `site` or `traditional` for janggi (default:
    /// the game's default, `asian` or `site`).
    #[arg(long)]
    rules: Option<String>,
    /// Sequential test: `ELO0,ELO1` or `ELO0,ELO1,ALPHA,BETA`.
    #[arg(long, allow_hyphen_values = true)]
    sprt: Option<String>,
    /// Write every game to this PGN file.
    #[arg(long)]
    pgn: Option<PathBuf>,
    /// An option of player A, `NAME=VALUE` (repeatable): a `[search]` key of a network or mcts
    /// player, a `setoption` of an engine.
    #[arg(long = "a-option")]
    a_option: Vec<String>,
    /// An option of player B, `NAME=VALUE` (repeatable), as `--a-option`.
    #[arg(long = "b-option")]
    b_option: Vec<String>,
    /// Rank numbers of engine A's moves: 0 (0-9, Pikafish) or 1 (1-10, Fairy-Stockfish);
    /// default 1 for Fairy-Stockfish (by its id name), else 0.
    #[arg(long = "a-ranks", value_parser = clap::value_parser!(u8).range(0..=1))]
    a_ranks: Option<u8>,
    /// Rank numbers of engine B's moves.
    #[arg(long = "b-ranks", value_parser = clap::value_parser!(u8).range(0..=1))]
    b_ranks: Option<u8>,
    /// Node limit of engine A (`go nodes N` every move, in place of `--sims`/`--movetime`), so
    /// that a net at `--sims 32` can meet an engine at 1 node.
    #[arg(long = "a-nodes", value_parser = clap::value_parser!(u32).range(1..))]
    a_nodes: Option<u32>,
    /// Node limit of engine B.
    #[arg(long = "b-nodes", value_parser = clap::value_parser!(u32).range(1..))]
    b_nodes: Option<u32>,
    /// Skill level of player A, a network or `mcts` (0–20, as `xqz uci`'s `Skill Level`: its
    /// share of the simulations and a drawn move; 20 is full strength).
    #[arg(long = "a-level", value_parser = clap::value_parser!(u32).range(0..=20))]
    a_level: Option<u32>,
    /// Skill level of player B.
    #[arg(long = "b-level", value_parser = clap::value_parser!(u32).range(0..=20))]
    b_level: Option<u32>,
    /// Seed of the random and greedy players.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The networks' device: cpu, wgpu, wgpu:N or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// The CPU kernels' arithmetic: f32; bf16, the network's tower in bfloat16 on Intel's AMX
    /// or AVX-512 BF16 (about twice the positions per second for the main job's 2 × 24 net on AMX,
    /// 1.4–1.7 times on AVX-512 BF16, nothing for the smallest nets; f32, with a warning, where it cannot run); or auto, bf16 where it can run
    /// and f32 elsewhere.
    #[arg(long, default_value = "f32")]
    precision: xiangqi_nn::Precision,
    /// Plies after which an undecided game is drawn.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..))]
    max_plies: u32,
    /// Games played at once, their searches evaluated in shared batches (random, greedy and
    /// mcts players only; engines play one game at a time).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=4096))]
    concurrency: u32,
}

fn parse_sprt(text: &str) -> anyhow::Result<Sprt> {
    let parts: Vec<f64> = text
        .split(',')
        .map(|p| p.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .with_context(|| format!("--sprt '{text}': expected ELO0,ELO1[,ALPHA,BETA]"))?;
    let sprt = match parts[..] {
        [elo0, elo1] => Sprt { elo0, elo1, alpha: 0.05, beta: 0.05 },
        [elo0, elo1, alpha, beta] => Sprt { elo0, elo1, alpha, beta },
        _ => bail!("--sprt '{text}': expected ELO0,ELO1[,ALPHA,BETA]"),
    };
    sprt.validate().with_context(|| format!("--sprt '{text}'"))?;
    Ok(sprt)
}

fn split_option(text: &str) -> anyhow::Result<(String, String)> {
    // A line break would end the `setoption` line and smuggle in another command.
    if text.chars().any(char::is_control) {
        bail!("option {text:?}: control characters (line breaks, tabs) are not allowed");
    }
    match text.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() => Ok((n.trim().to_string(), v.trim().to_string())),
        _ => bail!("option '{text}': expected NAME=VALUE"),
    }
}

/// A search config with `NAME=VALUE` overrides of `[search]` keys.
///
/// # Errors
/// An option that is no `[search]` key or has a bad value (named), a `simulations` option that
/// `--sims` contradicts, or settings that do not validate.
fn search_config(options: &[(String, String)], budget: PlayBudget) -> anyhow::Result<SearchConfig> {
    let given = option_table(options).context("mcts option")?;
    check_sims_option(&given, budget)?;
    let mut config = config_over(&toml::Table::new(), &given).context("mcts option")?;
    fit_cheap_simulations(&mut config, &given);
    config.validate().context("mcts option")?;
    Ok(config)
}

/// `base` (`[search]` keys) with the `given` options over it, as a config.
///
/// # Errors
/// The deserializer's complaint, naming the option at fault: the first that fails over `base`
/// on its own (the deserializer's own message does not say which key it was reading).
fn config_over(base: &toml::Table, given: &toml::Table) -> anyhow::Result<SearchConfig> {
    let with = |options: &mut dyn Iterator<Item = (&String, &toml::Value)>| {
        let mut table = base.clone();
        for (key, value) in options {
            table.insert(key.clone(), value.clone());
        }
        toml::Value::Table(table).try_into::<SearchConfig>()
    };
    with(&mut given.iter()).map_err(|e| {
        match given.iter().find(|&option| with(&mut std::iter::once(option)).is_err()) {
            Some((key, value)) => anyhow::anyhow!("{key}={value}: {}", e.message()),
            None => anyhow::anyhow!("{}", e.message()),
        }
    })
}

/// Refuses a `simulations` option that `--sims` contradicts: one of the two would be ignored.
///
/// # Errors
/// The two differ.
fn check_sims_option(given: &toml::Table, budget: PlayBudget) -> anyhow::Result<()> {
    if let (Some(sims), Some(option)) = (budget.sims, given.get("simulations"))
        && option.as_integer() != Some(i64::from(sims))
    {
        bail!(
            "option simulations={option} contradicts --sims {sims} (the budget of every search \
             player): give one of them"
        );
    }
    Ok(())
}

/// How a player's moves are limited, for a network player's choice of algorithm: `--sims`, and
/// whether `--movetime` is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PlayBudget {
    /// `--sims`.
    pub(crate) sims: Option<u32>,
    /// Whether `--movetime` is given.
    pub(crate) timed: bool,
}

/// The search of a network player: the `[search]` the network was trained with (`recorded`, its
/// manifest's; the defaults for a network that records none), played as `xqz uci` plays it
/// (no root noise, every search a full one), then `options` over it.
///
/// The budget stays the player's (`--sims`, `--movetime`, or the `simulations` option, default
/// 800), not the training's. Unless an option names the `algorithm`, a budget of at most
/// [`crate::uci_search::AUTO_GUMBEL_UP_TO`] simulations searches with Gumbel and a larger one, or
/// a search limited by time alone, with PUCT: the engine's `Algorithm auto`.
///
/// # Errors
/// An option that is no `[search]` key or has a bad value, or settings that do not validate.
fn net_search_config(
    recorded: Option<&SearchConfig>,
    options: &[(String, String)],
    budget: PlayBudget,
) -> anyhow::Result<SearchConfig> {
    let defaults = SearchConfig::default();
    let mut base = recorded.cloned().unwrap_or_else(|| defaults.clone());
    base.simulations = defaults.simulations;
    base.dirichlet_epsilon = 0.0;
    base.full_search_prob = 1.0;
    let table = toml::Table::try_from(&base).context("the network's [search]")?;
    let given = option_table(options).context("search option")?;
    check_sims_option(&given, budget)?;
    // Read from the parsed table, so that a quoted key (`"algorithm"=puct`) counts too.
    let names_algorithm = given.contains_key("algorithm");
    let mut config = config_over(&table, &given).context("search option")?;
    fit_cheap_simulations(&mut config, &given);
    if !names_algorithm {
        let sims = match budget {
            PlayBudget { sims: Some(n), .. } => Some(u64::from(n)),
            PlayBudget { sims: None, timed: true } => None,
            PlayBudget { sims: None, timed: false } => Some(u64::from(config.simulations)),
        };
        config.algorithm = match sims {
            Some(n) if n <= crate::uci_search::AUTO_GUMBEL_UP_TO => {
                xiangqi_search::Algorithm::Gumbel
            }
            _ => xiangqi_search::Algorithm::Puct,
        };
    }
    config.validate().context("search option")?;
    Ok(config)
}

/// `NAME=VALUE` options as a TOML table (a bare word that is not a TOML value, such as gumbel or
/// puct, is taken as a string).
///
/// # Errors
/// An option that is no TOML key and value even as a string, or a key given twice; each names
/// the option.
fn option_table(options: &[(String, String)]) -> anyhow::Result<toml::Table> {
    let mut table = toml::Table::new();
    for (n, v) in options {
        let parsed = toml::from_str::<toml::Table>(&format!("{n} = {v}")).or_else(|_| {
            toml::from_str::<toml::Table>(&format!("{n} = {}", toml::Value::String(v.clone())))
        });
        let parsed = parsed.map_err(|e| anyhow::anyhow!("{n}={v}: {}", e.message()))?;
        for (key, value) in parsed {
            if table.contains_key(&key) {
                bail!("{key} is given twice");
            }
            table.insert(key, value);
        }
    }
    Ok(table)
}

/// Leaves the cheap searches' budget no larger than the full one's unless an option names it:
/// a player makes full searches only, so a `simulations` option below the defaults'
/// `cheap_simulations` must not be refused for it.
fn fit_cheap_simulations(config: &mut SearchConfig, given: &toml::Table) {
    if !given.contains_key("cheap_simulations") {
        config.cheap_simulations = config.cheap_simulations.min(config.simulations);
    }
}

/// A player named on the command line: one the arena drives itself, or an external engine.
pub(crate) enum PlayerSpec {
    Local(LocalPlayer),
    /// The search with a network: an MCTS player and the checkpoint it evaluates with.
    Net(LocalPlayer, PathBuf),
    Engine(EngineSpec),
}

impl PlayerSpec {
    /// Starts the player for a sequential match (an engine starts its process).
    pub(crate) fn start<G: GameEnv>(
        &self,
        spec: &str,
        device: &crate::net::NetDevice,
    ) -> anyhow::Result<Box<dyn Player<G>>> {
        match self {
            PlayerSpec::Local(p) => Ok(p.to_player(UniformEvaluator)?),
            PlayerSpec::Net(p, path) => Ok(p.to_player(crate::net::load(path, device)?)?),
            PlayerSpec::Engine(e) => {
                let mut player =
                    EnginePlayer::start(e.clone()).with_context(|| format!("engine '{spec}'"))?;
                crate::engine::set_up(&mut player, G::KIND, false)
                    .with_context(|| format!("engine '{spec}'"))?;
                Ok(Box::new(player))
            }
        }
    }
}

pub(crate) fn parse_player(
    spec: &str,
    options: &[String],
    ranks: Option<u8>,
    seed: u64,
    budget: PlayBudget,
) -> anyhow::Result<PlayerSpec> {
    let options: Vec<(String, String)> =
        options.iter().map(|o| split_option(o)).collect::<anyhow::Result<_>>()?;
    let no_options = |name: &str| -> anyhow::Result<()> {
        if options.is_empty() { Ok(()) } else { bail!("player '{name}' takes no options") }
    };
    let engine = |protocol, command: &str| -> anyhow::Result<PlayerSpec> {
        let Some(command) = shlex::split(command) else {
            bail!(
                "player '{spec}': unbalanced quotes or a trailing backslash in the engine command"
            );
        };
        if command.is_empty() {
            bail!("player '{spec}': empty engine command");
        }
        let ranks_given = ranks.is_some();
        let ranks = if ranks == Some(1) { RankBase::One } else { RankBase::Zero };
        Ok(PlayerSpec::Engine(EngineSpec {
            protocol,
            command,
            options: options.clone(),
            ranks,
            nodes: None,
            ranks_given,
        }))
    };
    if let Some(command) = spec.strip_prefix("uci:") {
        return engine(Protocol::Uci, command);
    }
    if let Some(command) = spec.strip_prefix("ucci:") {
        return engine(Protocol::Ucci, command);
    }
    match spec {
        "random" => {
            no_options(spec)?;
            Ok(PlayerSpec::Local(LocalPlayer::Random { seed }))
        }
        "greedy" => {
            no_options(spec)?;
            Ok(PlayerSpec::Local(LocalPlayer::Greedy { seed }))
        }
        "mcts" => {
            let config = search_config(&options, budget)?;
            Ok(PlayerSpec::Local(LocalPlayer::Mcts { name: "mcts".to_string(), config }))
        }
        other if other.starts_with("net:") || PathBuf::from(other).is_dir() => {
            let given = PathBuf::from(other.strip_prefix("net:").unwrap_or(other));
            let path = crate::net::resolve(&given).with_context(|| format!("player '{other}'"))?;
            let recorded = crate::net::recorded_search(&path)
                .with_context(|| format!("player '{other}'"))?
                .filter(|r| match r.validate() {
                    Ok(()) => true,
                    // As `xqz uci` does: the built-in defaults rather than no game at all.
                    Err(e) => {
                        errln!(
                            "warning: player '{other}': the network's recorded [search] is \
                             refused ({e}); searching with the built-in defaults"
                        );
                        false
                    }
                });
            let config = net_search_config(recorded.as_ref(), &options, budget)?;
            let name = path.file_name().map_or("net".into(), |n| n.to_string_lossy().into_owned());
            Ok(PlayerSpec::Net(LocalPlayer::Mcts { name, config }, path))
        }
        other if other.contains('/') || other.contains('.') => {
            bail!(
                "player '{other}': no such directory (a network is a checkpoint, export or run directory)"
            )
        }
        other => bail!(
            "unknown player '{other}' (expected random, greedy, mcts, uci:COMMAND, ucci:COMMAND \
             or a network directory: checkpoint, export or run, optionally as net:DIR)"
        ),
    }
}

#[cfg(test)]
fn make_player(
    spec: &str,
    options: &[String],
    ranks: u8,
    seed: u64,
) -> anyhow::Result<Box<dyn Player<Game>>> {
    parse_player(spec, options, Some(ranks), seed, PlayBudget::default())?
        .start(spec, &crate::net::NetDevice::cpu())
}

fn summary(stats: &MatchStats) -> String {
    let elo = stats.wdl.elo();
    let mut s = format!(
        "{}  {:.1}%  Elo {:+.0} ± {:.0}",
        stats.wdl,
        100.0 * stats.wdl.score(),
        elo.elo,
        elo.margin()
    );
    if let Some((llr, _)) = stats.sprt {
        s.push_str(&format!("  LLR {llr:.2}"));
    }
    s
}

/// The evaluator's batches in one line.
fn batch_line(c: &BatchCounters) -> String {
    format!(
        "evaluator: {} positions in {} batches (mean {:.1}, largest {}), {:.2} s",
        c.evaluations,
        c.batches,
        c.mean_batch(),
        c.max_batch,
        c.time.as_secs_f64()
    )
}

fn print_table<G: GameEnv>(names: [&str; 2], stats: &MatchStats, config: &MatchConfig<G>) {
    outln!("A: {}", names[0]);
    outln!("B: {}", names[1]);
    outln!("{:<14}{:>7}{:>7}{:>7}{:>7}{:>9}", "", "games", "wins", "draws", "losses", "score");
    let with_first = format!("A with {}", G::SIDE_TAGS[0]);
    let with_second = format!("A with {}", G::SIDE_TAGS[1]);
    for (label, w) in [
        (with_first.as_str(), stats.a_first),
        (with_second.as_str(), stats.a_second),
        ("A total", stats.wdl),
    ] {
        // A row without games has no score (not the 50% of `Wdl::score`'s prior).
        let score =
            if w.games() == 0 { "-".to_string() } else { format!("{:.1}%", 100.0 * w.score()) };
        outln!(
            "{:<14}{:>7}{:>7}{:>7}{:>7}{:>9}",
            label,
            w.games(),
            w.wins,
            w.draws,
            w.losses,
            score
        );
    }
    let elo = stats.wdl.elo();
    outln!(
        "Elo (A - B): {:+.1}, 95% interval [{:+.1}, {:+.1}] (logistic, half-point prior)",
        elo.elo,
        elo.lower,
        elo.upper
    );
    out!("{:<14}", "forfeits");
    for k in ForfeitKind::ALL {
        out!("{:>14}", k.name());
    }
    outln!();
    for (i, who) in ["A", "B"].iter().enumerate() {
        out!("{who:<14}");
        for k in ForfeitKind::ALL {
            out!("{:>14}", stats.forfeits[i][k.index()]);
        }
        outln!();
    }
    let endings: Vec<String> = OutcomeReason::ALL
        .iter()
        .filter(|r| stats.reasons[r.index()] > 0)
        .map(|r| format!("{r} {}", stats.reasons[r.index()]))
        .collect();
    outln!("endings: {}", if endings.is_empty() { "-".to_string() } else { endings.join(", ") });
    outln!(
        "plies: {} ({:.1} per game)",
        stats.plies,
        stats.plies as f64 / f64::from(stats.games().max(1))
    );
    if let (Some(sprt), Some((llr, verdict))) = (config.sprt, stats.sprt) {
        let (lower, upper) = sprt.bounds();
        outln!(
            "SPRT elo0 {} elo1 {} alpha {} beta {}: LLR {llr:.3} [{lower:.3}, {upper:.3}] {verdict}",
            sprt.elo0,
            sprt.elo1,
            sprt.alpha,
            sprt.beta
        );
    }
}

/// Runs the command.
///
/// # Errors
/// Bad arguments, an unreadable openings file, a player that cannot start, a PGN write error.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let sprt = args.sprt.as_deref().map(parse_sprt).transpose()?;
    let budget = PlayBudget { sims: args.sims, timed: args.movetime.is_some() };
    let mut a =
        parse_player(&args.a, &args.a_option, args.a_ranks, args.seed, budget).context("--a")?;
    let mut b =
        parse_player(&args.b, &args.b_option, args.b_ranks, args.seed ^ 0x9e37_79b9, budget)
            .context("--b")?;
    for (player, nodes, flag) in
        [(&mut a, args.a_nodes, "--a-nodes"), (&mut b, args.b_nodes, "--b-nodes")]
    {
        match (player, nodes) {
            (_, None) => {}
            (PlayerSpec::Engine(spec), Some(n)) => spec.nodes = Some(n),
            (_, Some(_)) => bail!("{flag} is a limit of an external engine (uci: or ucci:)"),
        }
    }
    for (player, level, flag, seed) in [
        (&mut a, args.a_level, "--a-level", args.seed),
        (&mut b, args.b_level, "--b-level", args.seed ^ 0x9e37_79b9),
    ] {
        let Some(level) = level else { continue };
        let local = match player {
            PlayerSpec::Local(l) | PlayerSpec::Net(l, _) => l,
            PlayerSpec::Engine(_) => bail!("{flag} is a level of a network or mcts player"),
        };
        match local.clone() {
            LocalPlayer::Mcts { name, config } => {
                *local = LocalPlayer::Level {
                    name: format!("{name} (level {level})"),
                    config,
                    strength: xiangqi_search::Strength::skill(level),
                    seed,
                };
            }
            _ => bail!("{flag} is a level of a network or mcts player"),
        }
    }
    let mut game = args.game;
    for (player, flag) in [(&a, "--a"), (&b, "--b")] {
        if let PlayerSpec::Net(_, path) = player {
            let net_game = crate::net::game_of(path).context(flag)?;
            match game {
                Some(g) if g != net_game => {
                    bail!("{flag}: the network plays {net_game}, but the match is {g}")
                }
                _ => game = Some(net_game),
            }
        }
    }
    match game.unwrap_or_default() {
        GameKind::Xiangqi => run_game::<Game>(args, a, b, sprt),
        GameKind::Janggi => run_game::<janggi::Game>(args, a, b, sprt),
    }
}

/// The openings of `--openings FILE` (or the game's built-in ones), each checked to be
/// playable under `rules`.
///
/// # Errors
/// An unreadable or malformed file, naming it; an opening `rules` refuses.
pub(crate) fn load_openings<G: GameEnv>(
    path: Option<&std::path::Path>,
    rules: G::Rules,
) -> anyhow::Result<Vec<Opening<G>>> {
    let openings = match path {
        Some(path) => {
            let text = fs::read_to_string(path)
                .with_context(|| format!("cannot read openings {}", path.display()))?;
            parse_openings::<G>(&text).with_context(|| format!("openings {}", path.display()))?
        }
        None => Opening::<G>::builtin(),
    };
    for o in &openings {
        o.check(rules).context("--rules")?;
    }
    Ok(openings)
}

/// Plays the match of game `G`.
fn run_game<G: GameEnv>(
    args: &Args,
    a: PlayerSpec,
    b: PlayerSpec,
    sprt: Option<Sprt>,
) -> anyhow::Result<ExitCode> {
    let rules = match &args.rules {
        Some(name) => G::parse_rules(name).map_err(|e| anyhow::anyhow!("--rules: {e}"))?,
        None => G::default_rules(),
    };
    let openings = load_openings::<G>(args.openings.as_deref(), rules)?;
    // An opening after which the rules have already ended the game (the side to move is mated,
    // a third repetition) has no game to play: scoring it would count a result no player made.
    let total = openings.len();
    let openings: Vec<Opening<G>> = openings
        .into_iter()
        .filter(|o| match o.game(rules).outcome() {
            Some(outcome) => {
                errln!(
                    "warning: opening {}: the rules have ended the game already ({outcome}); \
                     skipped",
                    o.name()
                );
                false
            }
            None => true,
        })
        .collect();
    if openings.is_empty() {
        bail!("no opening left to play: the rules have ended the game in all {total} already");
    }
    if args.games % 2 == 1 {
        errln!(
            "warning: --games {} is odd: games are played in colour-swapped pairs, so the last \
             one has no partner and A plays {} once more than {}",
            args.games,
            G::SIDE_TAGS[0],
            G::SIDE_TAGS[1]
        );
    }
    let device = crate::net::NetDevice::open(&args.device, args.precision)?;
    let movetime = args.movetime.map(Duration::from_millis);
    let simulations = args.sims.map(|s| s.max(1));
    let config = MatchConfig::<G> {
        games: args.games,
        settings: GameSettings {
            rules,
            max_plies: args.max_plies,
            limit: MoveLimit { simulations, movetime, margin: Duration::from_millis(args.margin) },
        },
        sprt,
    };
    let mut pgn = match &args.pgn {
        Some(path) => Some(BufWriter::new(
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
    let bar = ProgressBar::new(u64::from(args.games));
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} games  {msg}")
            .context("progress bar template")?
            .progress_chars("=> "),
    );
    let mut write_error = None;
    let mut on_game = |game: &ArenaGame<G>, stats: &MatchStats| {
        bar.set_position(u64::from(stats.games()));
        bar.set_message(summary(stats));
        if let Some(f) = &game.forfeit {
            let who = if f.loser == xiangqi::Color::Red { &game.first } else { &game.second };
            bar.suspend(|| {
                errln!(
                    "game {}: {who} ({}) loses by {}: {}",
                    game.record.game_id + 1,
                    G::SIDE_TAGS[f.loser.index()].to_lowercase(),
                    f.kind,
                    f.detail
                );
            });
        }
        if let Some(w) = pgn.as_mut()
            && let Err(e) = game.write_pgn(w, "xqz arena").and_then(|()| w.flush())
        {
            write_error = Some(e);
            return false;
        }
        true
    };
    let timed = movetime.is_some();
    let local = |p: &PlayerSpec| -> Option<(LocalPlayer, Option<PathBuf>)> {
        match p {
            PlayerSpec::Local(l) => Some((l.clone(), None)),
            PlayerSpec::Net(l, path) => Some((l.clone(), Some(path.clone()))),
            PlayerSpec::Engine(_) => None,
        }
    };
    let (names, stats, batches) = match (local(&a), local(&b)) {
        (Some((pa, na)), Some((pb, nb)))
            if (na.is_some() || nb.is_some()) && !(timed && (pa.is_mcts() || pb.is_mcts())) =>
        {
            let names = [pa.name().to_string(), pb.name().to_string()];
            let mut ea = AnyEvaluator::load_optional(na.as_deref(), &device).context("--a")?;
            let mut eb = AnyEvaluator::load_optional(nb.as_deref(), &device).context("--b")?;
            let result = run_match_batched(
                &pa,
                &pb,
                &mut ea,
                &mut eb,
                &openings,
                &config,
                args.concurrency as usize,
                &mut on_game,
            )?;
            (names, result.stats, Some(result.batches[0]))
        }
        _ => match (&a, &b) {
            (PlayerSpec::Local(pa), PlayerSpec::Local(pb))
                if !(timed && (pa.is_mcts() || pb.is_mcts())) =>
            {
                let names = [pa.name().to_string(), pb.name().to_string()];
                let concurrency = args.concurrency as usize;
                let result = run_match_batched_shared(
                    pa,
                    pb,
                    &mut UniformEvaluator,
                    &openings,
                    &config,
                    concurrency,
                    &mut on_game,
                )?;
                (names, result.stats, Some(result.batches[0]))
            }
            _ => {
                let mut pa = a.start::<G>(&args.a, &device).context("--a")?;
                let mut pb = b.start::<G>(&args.b, &device).context("--b")?;
                let names = [pa.name().to_string(), pb.name().to_string()];
                let stats = run_match(pa.as_mut(), pb.as_mut(), &openings, &config, &mut on_game);
                (names, stats, None)
            }
        },
    };
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e).context("writing the PGN file");
    }
    print_table([&names[0], &names[1]], &stats, &config);
    if let Some(c) = batches.filter(|c| c.batches > 0) {
        errln!("{}", batch_line(&c));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_with_control_characters_are_refused() {
        for bad in ["Hash=1\nquit", "Hash=1\rgo", "Ha\tsh=1", "Hash=\u{7f}"] {
            let e = split_option(bad).unwrap_err().to_string();
            assert!(e.contains("control characters"), "{bad:?}: {e}");
        }
        assert_eq!(split_option("Skill Level=0").unwrap(), ("Skill Level".into(), "0".into()));
    }

    #[test]
    fn sprt_and_options_parse() {
        let s = parse_sprt("0,10").unwrap();
        assert_eq!((s.elo0, s.elo1, s.alpha), (0.0, 10.0, 0.05));
        let s = parse_sprt("-5,5,0.1,0.2").unwrap();
        assert_eq!((s.elo0, s.beta), (-5.0, 0.2));
        assert!(parse_sprt("10,0").is_err());
        assert!(parse_sprt("x").is_err());
        assert!(parse_sprt("1,2,3").is_err());
        let opt = |n: &str, v: &str| (n.to_string(), v.to_string());
        let free = PlayBudget::default();
        let c = search_config(&[opt("c_puct", "2.5"), opt("algorithm", "gumbel")], free).unwrap();
        assert_eq!(c.c_puct, 2.5);
        assert_eq!(c.algorithm, xiangqi_search::Algorithm::Gumbel);
        assert!(search_config(&[opt("c_pcut", "1")], free).is_err());
        // A value of the wrong type: the message names the option, not only the type.
        let e = search_config(&[opt("simulations", "64"), opt("c_puct", "abc")], free).unwrap_err();
        assert!(format!("{e:#}").contains("mcts option: c_puct=\"abc\": invalid type"), "{e:#}");
        // `--sims` and a `simulations` option that disagrees: one would be ignored.
        let sims = PlayBudget { sims: Some(400), timed: false };
        let e = search_config(&[opt("simulations", "64")], sims).unwrap_err();
        assert!(format!("{e:#}").contains("--sims 400"), "{e:#}");
        assert_eq!(search_config(&[opt("simulations", "400")], sims).unwrap().simulations, 400);
        // Below the defaults' cheap_simulations (100): a player makes full searches only.
        let sims = PlayBudget { sims: Some(16), timed: false };
        let c = search_config(&[opt("simulations", "16")], sims).unwrap();
        assert_eq!((c.simulations, c.cheap_simulations), (16, 16));
        // Named by the user, it is theirs to get right.
        assert!(
            search_config(&[opt("simulations", "16"), opt("cheap_simulations", "32")], sims)
                .is_err()
        );
        // A key given twice, and a value that is no TOML even as a string, are named.
        let e = search_config(&[opt("c_puct", "1"), opt("c_puct", "2")], free).unwrap_err();
        assert!(format!("{e:#}").contains("mcts option: c_puct is given twice"), "{e:#}");
        let c = search_config(&[opt("algorithm", "puct\u{200b}")], free);
        let e = c.unwrap_err();
        assert!(format!("{e:#}").contains("algorithm=\"puct\u{200b}\""), "{e:#}");
        let e = search_config(&[opt("a b", "1")], free).unwrap_err();
        assert!(format!("{e:#}").contains("mcts option: a b=1:"), "{e:#}");
        assert!(split_option("novalue").is_err());
    }

    /// A network player plays the settings its manifest records, as the engine does: no noise,
    /// every search full, the algorithm by budget unless an option names it, the budget the
    /// player's, and options over all of it.
    #[test]
    fn a_network_player_starts_from_the_recorded_search() {
        use xiangqi_search::{Algorithm, WinCheck};
        let recorded = SearchConfig {
            algorithm: Algorithm::Puct,
            simulations: 32,
            cheap_simulations: 8,
            full_search_prob: 0.25,
            c_puct: 3.0,
            dirichlet_epsilon: 0.25,
            gumbel_considered_moves: 7,
            win_check: WinCheck::Off,
            ..SearchConfig::default()
        };
        let opt = |n: &str, v: &str| (n.to_string(), v.to_string());
        let sims = |n| PlayBudget { sims: Some(n), timed: false };
        let c = net_search_config(Some(&recorded), &[], sims(32)).unwrap();
        assert_eq!(c.algorithm, Algorithm::Gumbel, "32 simulations: Gumbel");
        assert_eq!((c.c_puct, c.gumbel_considered_moves, c.win_check), (3.0, 7, WinCheck::Off));
        assert_eq!((c.dirichlet_epsilon, c.full_search_prob), (0.0, 1.0));
        assert_eq!(c.simulations, SearchConfig::default().simulations, "not the training's budget");
        let algorithm = |budget, options: &[(String, String)]| {
            net_search_config(Some(&recorded), options, budget).unwrap().algorithm
        };
        assert_eq!(algorithm(sims(128), &[]), Algorithm::Gumbel);
        assert_eq!(algorithm(sims(129), &[]), Algorithm::Puct);
        assert_eq!(algorithm(PlayBudget { sims: None, timed: true }, &[]), Algorithm::Puct);
        // No --sims and no --movetime: the `simulations` option's budget (default 800).
        assert_eq!(algorithm(PlayBudget::default(), &[]), Algorithm::Puct);
        assert_eq!(
            algorithm(PlayBudget::default(), &[opt("simulations", "64")]),
            Algorithm::Gumbel
        );
        assert_eq!(algorithm(sims(32), &[opt("algorithm", "puct")]), Algorithm::Puct);
        assert_eq!(algorithm(sims(800), &[opt("algorithm", "gumbel")]), Algorithm::Gumbel);
        assert_eq!(algorithm(sims(32), &[opt("\"algorithm\"", "puct")]), Algorithm::Puct);
        let c = net_search_config(
            Some(&recorded),
            &[opt("c_puct", "2"), opt("win_check", "tree"), opt("dirichlet_epsilon", "0.1")],
            sims(32),
        )
        .unwrap();
        assert_eq!((c.c_puct, c.win_check, c.dirichlet_epsilon), (2.0, WinCheck::Tree, 0.1));
        // A network that records no settings plays the defaults.
        let c = net_search_config(None, &[], sims(800)).unwrap();
        assert_eq!(
            c,
            SearchConfig {
                dirichlet_epsilon: 0.0,
                full_search_prob: 1.0,
                ..SearchConfig::default()
            }
        );
        let e = net_search_config(Some(&recorded), &[opt("c_pcut", "1")], sims(32)).unwrap_err();
        assert!(format!("{e:#}").contains("c_pcut"), "{e:#}");
        let e = net_search_config(Some(&recorded), &[opt("win_check", "7")], sims(32)).unwrap_err();
        assert!(format!("{e:#}").contains("search option: win_check=7"), "{e:#}");
        let e =
            net_search_config(Some(&recorded), &[opt("simulations", "64")], sims(32)).unwrap_err();
        assert!(format!("{e:#}").contains("contradicts --sims 32"), "{e:#}");
        let e = net_search_config(Some(&recorded), &[opt("c_puct", "-1")], sims(32)).unwrap_err();
        assert!(format!("{e:#}").contains("c_puct"), "{e:#}");
    }

    #[test]
    fn player_specs() {
        assert!(make_player("random", &[], 0, 1).is_ok());
        assert!(make_player("greedy", &["x=1".to_string()], 0, 1).is_err());
        let e = make_player("nets/best.mpk", &[], 0, 1).err().unwrap().to_string();
        assert!(e.contains("no such directory"), "{e}");
        let e = format!("{:#}", make_player("net:/nonexistent", &[], 0, 1).err().unwrap());
        assert!(e.contains("'/nonexistent' is not a network"), "{e}");
        let e = make_player("stockfish", &[], 0, 1).err().unwrap().to_string();
        assert!(e.contains("unknown player"), "{e}");
    }
}
