//! `xqz label SHARDS... --engine uci:CMD [--nodes N | --movetime MS] --out DIR`.
//!
//! Asks an external engine (the arena's client, [`crate::engine`]) for the best move and score
//! of every position of replay shards (files, or folders of `*.npz`; from `xqz import` or from
//! self-play) and writes each shard again, under its own file name in `DIR`, with the engine's
//! targets: the policy is one-hot on the engine's move, `full_search` is 1, and `root_value` is
//! the engine's `W − L` for the side to move (its own `wdl` where it reports one, certain for a
//! mate, else the logistic of [`xiangqi_search::label`] of its centipawns); `result`, `ending`,
//! `game_plies` and `final_material` stay the game's. Training learns the engine's evaluation
//! from `root_value` with `loop.value_q_weight = 1`.
//!
//! Each position is sent alone as `position fen FEN` (its board, side to move, halfmove clock;
//! the shard keeps no history, so the engine does not see repetitions), in the dialect of the
//! shard's game, then `go nodes N` (default 1000) or `go movetime MS`. An engine that offers
//! `UCI_Variant` (Fairy-Stockfish) is set to the shard's game (`xiangqi`, `janggi`) unless
//! `--option UCI_Variant=...` says otherwise; Fairy-Stockfish (by its `id name`) reads and
//! writes ranks 1–10 unless `--ranks` says otherwise (else 0–9, Pikafish's and xqz's); one that
//! offers `UCI_ShowWDL` gets it on.
//!
//! A position is lost (left out of the output shard, and counted by reason) when the engine
//! crashes, gives no `bestmove` within `--timeout` (default: ten move times plus 5 s, or 10 s
//! plus 1 ms per 10 nodes), names something that is no legal move, reports no move or no score;
//! the engine is then killed and restarted for the next position, and the run goes on. Ten
//! losses in a row of one engine stop the run (an engine that cannot work at all).
//!
//! An input shard that cannot be labelled (unreadable, of another game or another rule set) is
//! named on standard error and left out, the others are labelled, and the command then fails
//! naming every such shard.
//!
//! Output shards are written atomically; a shard whose output exists is skipped, so a killed
//! run continues where it stopped when run again. `--threads N` runs N engine processes, each
//! taking the next position of the shard at hand. The last line on standard output sums up.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use xiangqi_search::GameEnv;
use xiangqi_search::GameKind;
use xiangqi_search::arena::{MoveLimit, PlayerError};
use xiangqi_search::label::{Label, WdlModel, engine_wdl, relabel, sample_position};
use xiangqi_search::shard::{Shard, list_shards, read_shard, temp_path, write_shard};

use crate::engine::EnginePlayer;
use crate::perft::GameName;

/// Losses in a row of one engine that stop the run.
const MAX_LOSSES_IN_A_ROW: u32 = 10;

/// Arguments of `xqz label`.
#[derive(clap::Args)]
pub struct Args {
    /// Replay shards: `.npz` files, or folders whose `*.npz` files are all labelled.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// The engine: `uci:COMMAND` (or `ucci:COMMAND`); the command is split as a POSIX shell
    /// splits words.
    #[arg(long)]
    engine: String,
    /// An engine option, `NAME=VALUE` (repeatable): `setoption` after the handshake.
    #[arg(long = "option")]
    option: Vec<String>,
    /// The engine's rank numbers: 0 (0–9, Pikafish) or 1 (1–10, Fairy-Stockfish); default 1
    /// for Fairy-Stockfish (by its id name), else 0.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=1))]
    ranks: Option<u8>,
    /// Nodes per position (`go nodes N`; default 1000 without `--movetime`).
    #[arg(long, conflicts_with = "movetime", value_parser = clap::value_parser!(u32).range(1..))]
    nodes: Option<u32>,
    /// Milliseconds per position (`go movetime MS`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    movetime: Option<u64>,
    /// Milliseconds to wait for a `bestmove` before the position is lost (default: ten move
    /// times plus 5,000, or 10,000 plus one per 10 nodes).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// Engine processes run at once (at least 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    threads: u32,
    /// The game to label (default: the first readable shard's); shards of the other game are
    /// named and skipped.
    #[arg(long, value_enum)]
    game: Option<GameName>,
    /// Only shards of this rule set (default: each shard's own).
    #[arg(long)]
    rules: Option<String>,
    /// The draw band `a` of the centipawn logistic, cp (default: xiangqi 200, janggi 50).
    #[arg(long)]
    wdl_draw: Option<f64>,
    /// The scale `b` of the centipawn logistic, cp (default 150).
    #[arg(long)]
    wdl_scale: Option<f64>,
    /// Folder of the labelled shards (created if missing; not a folder of the input).
    #[arg(long)]
    out: PathBuf,
}

/// Counts of a run.
#[derive(Default)]
struct Summary {
    positions: u64,
    labelled: u64,
    lost: BTreeMap<&'static str, u64>,
    restarts: u64,
    shards: u64,
    /// Input shards left out (unreadable, another game, another rule set), with the reason.
    skipped: Vec<(PathBuf, String)>,
}

/// What became of one position.
enum Outcome {
    Labelled(Label),
    /// Lost, with the reason's name and the message; `restart` if the engine was restarted.
    Lost {
        reason: &'static str,
        message: String,
        restart: bool,
    },
}

/// The input shards, each with its output path.
fn inputs(args: &Args) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
    let out = fs::canonicalize(&args.out).unwrap_or_else(|_| args.out.clone());
    let mut files = Vec::new();
    for path in &args.shards {
        if path.is_dir() {
            if fs::canonicalize(path).is_ok_and(|p| p == out) {
                bail!("--out {} is a folder of the input shards", args.out.display());
            }
            files.extend(
                list_shards(path).with_context(|| format!("cannot list {}", path.display()))?,
            );
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            bail!("{} is neither a shard file nor a folder", path.display());
        }
    }
    let mut seen = BTreeMap::new();
    let mut pairs = Vec::new();
    for file in files {
        let Some(name) = file.file_name().filter(|_| file.extension().is_some_and(|e| e == "npz"))
        else {
            bail!("{} is not a shard (*.npz)", file.display());
        };
        let target = args.out.join(name);
        if fs::canonicalize(&file).ok() == fs::canonicalize(&target).ok() && target.exists() {
            bail!("{} would be written over itself (--out is its folder)", file.display());
        }
        if let Some(other) = seen.insert(name.to_os_string(), file.clone()) {
            bail!(
                "{} and {} would both be written to {}",
                other.display(),
                file.display(),
                target.display()
            );
        }
        pairs.push((file, target));
    }
    Ok(pairs)
}

/// The engine, started and set up for `game`.
fn start_engine(args: &Args, game: GameKind) -> anyhow::Result<EnginePlayer> {
    crate::engine::start_for_game(&args.engine, &args.option, args.ranks, game, true)
}

/// Labels sample `i` of `shard` with `engine`.
fn label_one<G: GameEnv>(
    engine: &mut EnginePlayer,
    shard: &Shard,
    i: usize,
    limit: &MoveLimit,
    wait: Duration,
    model: &WdlModel,
) -> Outcome {
    let lost = |reason, message: String, restart| Outcome::Lost { reason, message, restart };
    let pos = match sample_position::<G>(shard, i) {
        Ok(p) => p,
        Err(e) => return lost("bad position", e, false),
    };
    let rules = match shard.rules_of::<G>() {
        Ok(r) => r,
        Err(e) => return lost("bad position", e.to_string(), false),
    };
    let legal = G::position_legal_moves(&pos);
    let game = G::new_game(pos, rules);
    let analysis = match engine.analyse(&game, limit, Some(wait)) {
        Ok(a) => a,
        Err(e) => {
            let reason = match e {
                PlayerError::Timeout(_) => "timeout",
                PlayerError::Crashed(_) => "crash",
                PlayerError::Illegal(_) => "illegal move",
                PlayerError::Failed(_) => "no move",
            };
            return lost(reason, e.to_string(), true);
        }
    };
    let sample = shard.sample(i);
    if !legal.contains(&analysis.best) || !sample.moves.contains(&analysis.best.to_u16()) {
        let fen = G::position_fen(game.position());
        return lost("illegal move", format!("{} is not legal in {fen}", analysis.best), true);
    }
    let wdl = match (analysis.wdl.and_then(engine_wdl), analysis.score) {
        (Some(wdl), _) => wdl,
        (None, Some(score)) => model.wdl(score),
        (None, None) => return lost("no score", "no score before bestmove".into(), true),
    };
    Outcome::Labelled(Label { best: analysis.best, value: (wdl[0] - wdl[2]) as f32 })
}

/// Labels every sample of `shard` with the engines, in parallel; `None` for a lost one.
fn label_shard<G: GameEnv>(
    engines: &mut [EnginePlayer],
    shard: &Shard,
    limit: &MoveLimit,
    wait: Duration,
    model: &WdlModel,
    summary: &mut Summary,
) -> anyhow::Result<Vec<Option<Label>>> {
    let next = AtomicUsize::new(0);
    let labels: Mutex<Vec<Option<Label>>> = Mutex::new(vec![None; shard.len()]);
    let counts: Mutex<(BTreeMap<&'static str, u64>, u64)> = Mutex::default();
    let stop: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for engine in engines.iter_mut() {
            let (next, labels, counts, stop) = (&next, &labels, &counts, &stop);
            scope.spawn(move || {
                let mut in_a_row = 0;
                loop {
                    if stop.lock().is_ok_and(|s| s.is_some()) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= shard.len() {
                        break;
                    }
                    match label_one::<G>(engine, shard, i, limit, wait, model) {
                        Outcome::Labelled(label) => {
                            in_a_row = 0;
                            if let Ok(mut l) = labels.lock() {
                                l[i] = Some(label);
                            }
                        }
                        Outcome::Lost { reason, message, restart } => {
                            errln!("position {i}: lost ({reason}): {message}");
                            if restart {
                                engine.restart();
                            }
                            if let Ok(mut c) = counts.lock() {
                                *c.0.entry(reason).or_default() += 1;
                                c.1 += u64::from(restart);
                            }
                            in_a_row += 1;
                            if in_a_row >= MAX_LOSSES_IN_A_ROW {
                                if let Ok(mut s) = stop.lock() {
                                    s.get_or_insert(format!(
                                        "the engine lost {in_a_row} positions in a row, the \
                                         last: {reason}: {message}"
                                    ));
                                }
                                break;
                            }
                        }
                    }
                }
            });
        }
    });
    let (lost, restarts) = counts.into_inner().unwrap_or_default();
    for (reason, n) in lost {
        *summary.lost.entry(reason).or_default() += n;
    }
    summary.restarts += restarts;
    if let Some(why) = stop.into_inner().ok().flatten() {
        bail!("{why}");
    }
    Ok(labels.into_inner().unwrap_or_default())
}

fn label_all<G: GameEnv>(
    args: &Args,
    todo: &[(PathBuf, PathBuf)],
    rules: Option<u8>,
    summary: &mut Summary,
) -> anyhow::Result<()> {
    let model = WdlModel {
        draw_cp: args.wdl_draw.unwrap_or(WdlModel::for_game(G::KIND).draw_cp),
        scale_cp: args.wdl_scale.unwrap_or(WdlModel::for_game(G::KIND).scale_cp),
    };
    model.validate().map_err(|e| anyhow::anyhow!("--wdl-draw/--wdl-scale: {e}"))?;
    let limit = MoveLimit {
        simulations: match args.movetime {
            Some(_) => None,
            None => Some(args.nodes.unwrap_or(1000)),
        },
        movetime: args.movetime.map(Duration::from_millis),
        margin: Duration::ZERO,
    };
    let wait = match (args.timeout, args.movetime) {
        (Some(t), _) => Duration::from_millis(t),
        (None, Some(t)) => Duration::from_millis(t.saturating_mul(10).saturating_add(5000)),
        (None, None) => {
            Duration::from_millis(10_000 + u64::from(limit.simulations.unwrap_or(1000)) / 10)
        }
    };
    let mut engines = Vec::new();
    for _ in 0..args.threads {
        engines.push(start_engine(args, G::KIND)?);
    }
    for (input, output) in todo {
        // A shard that cannot be labelled is named and left out; the others go on.
        let checked =
            read_shard(input).map_err(|e| format!("cannot read it: {e}")).and_then(|shard| {
                shard.expect_game(G::KIND).map_err(|e| e.to_string())?;
                match rules.filter(|&r| r != shard.rules) {
                    Some(r) => Err(format!(
                        "its rule set (code {}) is not --rules (code {r})",
                        shard.rules
                    )),
                    None => Ok(shard),
                }
            });
        let shard = match checked {
            Ok(shard) => shard,
            Err(why) => {
                errln!("{}: skipped: {why}", input.display());
                summary.skipped.push((input.clone(), why));
                continue;
            }
        };
        let labels = label_shard::<G>(&mut engines, &shard, &limit, wait, &model, summary)
            .with_context(|| input.display().to_string())?;
        let labelled = relabel(&shard, &labels).with_context(|| input.display().to_string())?;
        write_shard(output, &labelled)
            .with_context(|| format!("cannot write {}", output.display()))?;
        errln!("{}: {} of {} positions labelled", output.display(), labelled.len(), shard.len());
        summary.positions += shard.len() as u64;
        summary.labelled += labelled.len() as u64;
        summary.shards += 1;
    }
    Ok(())
}

/// The game to label: `--game`, else that of the first readable shard. Shards of the other
/// game, and unreadable ones, are named and skipped when their turn comes.
fn first_game(args: &Args, todo: &[(PathBuf, PathBuf)]) -> GameKind {
    match args.game {
        Some(GameName::Xiangqi) => GameKind::Xiangqi,
        Some(GameName::Janggi) => GameKind::Janggi,
        None => todo
            .iter()
            .find_map(|(input, _)| read_shard(input).ok())
            .map_or(GameKind::Xiangqi, |shard| shard.game),
    }
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let all = inputs(args)?;
    fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut todo = Vec::new();
    let mut done = 0;
    for (input, output) in all {
        // A temporary file of a killed run's write is ours to remove.
        let _ = fs::remove_file(temp_path(&output));
        if output.is_file() {
            done += 1;
        } else {
            todo.push((input, output));
        }
    }
    if done > 0 {
        errln!("{done} shard(s) already labelled in {}: skipped", args.out.display());
    }
    let game = first_game(args, &todo);
    let rules = match &args.rules {
        None => None,
        Some(name) => Some(
            match game {
                GameKind::Xiangqi => {
                    <xiangqi::Game as xiangqi_search::GameRules>::parse_rules(name)
                        .map(<xiangqi::Game as xiangqi_search::GameRules>::rules_code)
                }
                GameKind::Janggi => {
                    <xiangqi::janggi::Game as xiangqi_search::GameRules>::parse_rules(name)
                        .map(<xiangqi::janggi::Game as xiangqi_search::GameRules>::rules_code)
                }
            }
            .map_err(|e| anyhow::anyhow!("--rules for {game}: {e}"))?,
        ),
    };
    let started = Instant::now();
    let mut summary = Summary::default();
    let result = if todo.is_empty() {
        Ok(())
    } else {
        match game {
            GameKind::Xiangqi => label_all::<xiangqi::Game>(args, &todo, rules, &mut summary),
            GameKind::Janggi => {
                label_all::<xiangqi::janggi::Game>(args, &todo, rules, &mut summary)
            }
        }
    };
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let lost: u64 = summary.lost.values().sum();
    let reasons: Vec<String> = summary.lost.iter().map(|(k, n)| format!("{k} {n}")).collect();
    outln!(
        "labelled {} of {} positions in {} shard(s) into {}; lost {}{}; {} engine restart(s); \
         {} shard(s) already labelled; {} shard(s) skipped; {:.1} s, {:.0} positions/s",
        summary.labelled,
        summary.positions,
        summary.shards,
        args.out.display(),
        lost,
        if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) },
        summary.restarts,
        done,
        summary.skipped.len(),
        secs,
        (summary.labelled + lost) as f64 / secs,
    );
    result?;
    if !summary.skipped.is_empty() {
        // Every shard that could be was labelled; the run still fails, so that a script sees
        // that its output is short. Running again labels only what is missing.
        let names: Vec<String> =
            summary.skipped.iter().map(|(p, why)| format!("{} ({why})", p.display())).collect();
        bail!("{} shard(s) could not be labelled: {}", names.len(), names.join("; "));
    }
    Ok(ExitCode::SUCCESS)
}
