//! `xqz calibrate --net EXPORT`: measures the Elo of the engine's skill levels with a network
//! and writes the table into the export, where `xqz uci`'s `UCI_Elo` finds it.
//!
//! The levels are those of [`xiangqi_search::strength`] (0 to 20, level 20 the network at the
//! full budget `--simulations`, default 800), each searched with the settings the engine uses
//! for its budget ([`SearchOptions::for_search`]: the network's recorded `[search]`, Gumbel up
//! to 128 simulations and PUCT above). They play a fixed ladder:
//!
//! * each level against the next (`s` against `s + 1`), which measures the steps;
//! * `random` (a uniformly random legal move: **the anchor, Elo 0**) against levels 0 to 6,
//!   and against `greedy`;
//! * `greedy` (a win in one, else the most valuable capture) against every level;
//! * with `--engine uci:COMMAND` (e.g. Debian's `/usr/games/fairy-stockfish` at
//!   `--engine-nodes 1`), that engine against the levels of `--engine-levels` (default
//!   10, 12, ..., 20), one game at a time; the engine is told the game (`UCI_Variant`) as
//!   `xqz arena` tells it, and one that forfeits a game (an illegal move, a crash) is left off
//!   the ladder with a warning, the table made without it.
//!
//! Every pairing plays `--games` games (default 40), in pairs over the openings with colours
//! swapped, the games of the local players in lockstep with their leaves in shared batches.
//! The ratings are the maximum-likelihood Bradley–Terry fit over all games on the Elo scale
//! with one virtual draw per pairing (BayesElo's prior, so a clean sweep stays finite), and
//! their 95% intervals come from 400 bootstrap refits ([`xiangqi_search::arena::fit_elo`]).
//! The table goes to standard output and into the export's manifest (`[strength]`; not with
//! `--dry-run`), and with `--json FILE` to that file. Levels whose measured Elo does not rise
//! are named in a warning (play more games).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use xiangqi::{Game, janggi};
use xiangqi_nn::checkpoint;
use xiangqi_search::arena::{
    GameSettings, LocalPlayer, MatchConfig, MatchStats, MoveLimit, Opening, Pairing, Player, Wdl,
    fit_elo_with_intervals, run_match, run_match_batched_shared,
};
use xiangqi_search::{GameEnv, MAX_LEVEL, RatedPlayer, SearchConfig, Strength, StrengthTable};

use crate::net::AnyEvaluator;
use crate::uci_search::SearchOptions;

/// Arguments of `xqz calibrate`.
#[derive(clap::Args)]
pub struct Args {
    /// The network: an export of `xqz export` (the table is written into its manifest)
    #[arg(long)]
    net: PathBuf,
    /// The full budget B: simulations a move at level 20 (level s searches B^(s/20)); a
    /// calibrated net's levels play at this budget in xqz uci and xqz analysis
    #[arg(long, default_value_t = 800, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    simulations: u32,
    /// Games of each pairing (in pairs with colours swapped)
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(2..=100_000))]
    games: u32,
    /// An external engine on the ladder: uci:COMMAND (or ucci:COMMAND)
    #[arg(long)]
    engine: Option<String>,
    /// An option of the engine, NAME=VALUE (repeatable); an engine that offers UCI_Variant is
    /// told the game
    #[arg(long = "engine-option")]
    engine_option: Vec<String>,
    /// The engine's node limit (`go nodes N` every move)
    #[arg(long = "engine-nodes", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    engine_nodes: u32,
    /// The engine's rank numbers: 0 or 1 (default 1 for Fairy-Stockfish, by its id name)
    #[arg(long = "engine-ranks", value_parser = clap::value_parser!(u8).range(0..=1))]
    engine_ranks: Option<u8>,
    /// The levels that play the engine, comma-separated
    #[arg(long = "engine-levels", default_value = "10,12,14,16,18,20")]
    engine_levels: String,
    /// Openings file: one FEN, `FEN moves M...` or UCI move sequence per line (default: the
    /// game's built-in openings)
    #[arg(long)]
    openings: Option<PathBuf>,
    /// Rule set (default: the game's default)
    #[arg(long)]
    rules: Option<String>,
    /// Plies after which an undecided game is drawn
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(1..))]
    max_plies: u32,
    /// Games played at once per pairing, their leaves in shared batches
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    concurrency: u32,
    /// Threads of the network's evaluation (0: all cores)
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=1024))]
    threads: u32,
    /// Seed of the levels' move draws and of the random and greedy players
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The network's device: cpu, wgpu, wgpu:N or cuda:N
    #[arg(long, default_value = "cpu")]
    device: String,
    /// The CPU kernels' arithmetic: f32; bf16, the network's tower in bfloat16 on Intel's AMX
    /// or AVX-512 BF16 (about twice the positions per second for the main job's 2 × 24 net on AMX,
    /// 1.4–1.7 times on AVX-512 BF16, nothing for the smallest nets; f32, with a warning, where it cannot run); or auto, bf16 where it can run
    /// and f32 elsewhere.
    #[arg(long, default_value = "f32")]
    precision: xiangqi_nn::Precision,
    /// Measure and print, but leave the export as it is
    #[arg(long)]
    dry_run: bool,
    /// Also write the table as JSON to this file
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Games between two players of the ladder, from the first one's side.
#[derive(Clone, Debug, Serialize)]
struct Played {
    a: String,
    b: String,
    wins: u32,
    draws: u32,
    losses: u32,
}

/// What `--json` writes: the table and every pairing's result.
#[derive(Serialize)]
struct Report<'a> {
    game: String,
    net: String,
    table: &'a StrengthTable,
    pairings: &'a [Played],
    seconds: f64,
}

/// The index of level `s` among the rated players (after `random` and `greedy`).
const fn level_index(s: u32) -> usize {
    2 + s as usize
}

/// The pairings of the ladder as `(a, b)` indices (`0` random, `1` greedy, levels from 2,
/// the engine last), without the engine's.
fn local_schedule() -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for s in 0..MAX_LEVEL {
        pairs.push((level_index(s), level_index(s + 1)));
    }
    for s in 0..=6 {
        pairs.push((level_index(s), 0));
    }
    pairs.push((1, 0));
    for s in 0..=MAX_LEVEL {
        pairs.push((level_index(s), 1));
    }
    pairs
}

fn parse_levels(text: &str) -> anyhow::Result<Vec<u32>> {
    let mut levels = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<u32>() {
            Ok(s) if s <= MAX_LEVEL => levels.push(s),
            _ => bail!("--engine-levels: '{part}' is not a level from 0 to {MAX_LEVEL}"),
        }
    }
    levels.sort_unstable();
    levels.dedup();
    Ok(levels)
}

/// Refuses a `--json` path inside the network's directory (it would replace one of its files)
/// or where no file can be written.
fn check_json_target(path: &Path, dir: &Path) -> anyhow::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let parent = parent
        .canonicalize()
        .with_context(|| format!("--json '{}': its directory does not exist", path.display()))?;
    if path.is_dir() {
        bail!("--json '{}' is a directory; name a file", path.display());
    }
    if parent.starts_with(dir) {
        bail!(
            "--json '{}' is inside the network '{}': write the report elsewhere",
            path.display(),
            dir.display()
        );
    }
    check_writable(&parent).with_context(|| format!("--json '{}'", path.display()))
}

/// Checks that a file can be created in `dir` (and removes it).
fn check_writable(dir: &Path) -> anyhow::Result<()> {
    let probe = dir.join(format!(".xqz-calibrate-probe-{}", std::process::id()));
    fs::write(&probe, b"")
        .with_context(|| format!("cannot write into '{}' (the table goes there)", dir.display()))?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let engine_levels = parse_levels(&args.engine_levels)?;
    if !args.net.exists() {
        bail!("--net '{}' does not exist", args.net.display());
    }
    let dir = crate::net::resolve(&args.net)?;
    let manifest = checkpoint::read_manifest(&dir, None)
        .with_context(|| format!("cannot read the network '{}'", dir.display()))?;
    if manifest.training.is_some() && !args.dry_run {
        bail!(
            "--net '{}' is a training checkpoint: export it first (xqz export --checkpoint DIR \
             --out EXPORT) and calibrate the export, which keeps the table",
            dir.display()
        );
    }
    // Everything that could fail after hours of games is checked first: where the results go,
    // and the engine (in `run_game`).
    let dir = dir.canonicalize().with_context(|| format!("--net '{}'", dir.display()))?;
    if let Some(path) = &args.json {
        check_json_target(path, &dir)?;
    }
    if !args.dry_run {
        check_writable(&dir)?;
        if let Some(old) = &manifest.strength {
            errln!(
                "note: {} holds a table of {} games at {} simulations; it will be replaced",
                dir.display(),
                old.games,
                old.simulations
            );
        }
    }
    if args.engine.is_none() {
        let unused: Vec<&str> = [
            (!args.engine_option.is_empty(), "--engine-option"),
            (args.engine_ranks.is_some(), "--engine-ranks"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect();
        if !unused.is_empty() {
            errln!("warning: {} without --engine: ignored", unused.join(" and "));
        }
    }
    if args.threads > 0 {
        let _ = rayon::ThreadPoolBuilder::new().num_threads(args.threads as usize).build_global();
    }
    match manifest.game {
        xiangqi_search::GameKind::Xiangqi => run_game::<Game>(args, &dir, &engine_levels),
        xiangqi_search::GameKind::Janggi => run_game::<janggi::Game>(args, &dir, &engine_levels),
    }
}

fn run_game<G: GameEnv>(
    args: &Args,
    dir: &Path,
    engine_levels: &[u32],
) -> anyhow::Result<ExitCode> {
    let rules = match &args.rules {
        Some(name) => G::parse_rules(name).map_err(|e| anyhow::anyhow!("--rules: {e}"))?,
        None => G::default_rules(),
    };
    let openings = crate::arena::load_openings::<G>(args.openings.as_deref(), rules)?;
    let openings: Vec<Opening<G>> =
        openings.into_iter().filter(|o| o.game(rules).outcome().is_none()).collect();
    if openings.is_empty() {
        bail!("no opening left to play: the rules have ended the game in every one");
    }
    let device = crate::net::NetDevice::open(&args.device, args.precision)?;
    let mut evaluator = AnyEvaluator::load_optional(Some(dir), &device)?;
    let record = evaluator.record();
    let full = args.simulations;
    let level_player = |s: u32| -> anyhow::Result<LocalPlayer> {
        let strength = Strength::skill(s);
        let budget = u64::from(strength.simulations(full));
        let (config, notes) =
            SearchOptions::default().for_search(record.search.as_ref(), Some(budget));
        if let Some(note) = notes.first() {
            bail!("level {s}: {note}");
        }
        let config: SearchConfig = config.into_inner();
        Ok(LocalPlayer::Level {
            name: format!("level {s}"),
            config,
            strength,
            seed: args.seed ^ (0x5851_f42d_4c95_7f2d_u64.wrapping_mul(u64::from(s) + 1)),
        })
    };
    let mut players: Vec<LocalPlayer> = vec![
        LocalPlayer::Random { seed: args.seed },
        LocalPlayer::Greedy { seed: args.seed ^ 0x9e37_79b9 },
    ];
    for s in 0..=MAX_LEVEL {
        players.push(level_player(s)?);
    }
    let mut names: Vec<String> = players.iter().map(|p| p.name().to_string()).collect();
    let config = MatchConfig::<G> {
        games: args.games,
        settings: GameSettings {
            rules,
            max_plies: args.max_plies,
            limit: MoveLimit {
                simulations: Some(full),
                movetime: None,
                margin: Duration::from_secs(1),
            },
        },
        sprt: None,
    };
    // The engine first: a wrong command fails now, not after the local games.
    let mut engine = match &args.engine {
        Some(engine) => {
            let mut player = crate::engine::start_for_game(
                engine,
                &args.engine_option,
                args.engine_ranks,
                G::KIND,
                false,
            )?;
            player.set_nodes(Some(args.engine_nodes));
            Some(player)
        }
        None => None,
    };
    let schedule = local_schedule();
    let engine_pairs = if args.engine.is_some() { engine_levels.len() } else { 0 };
    let total = (schedule.len() + engine_pairs) as u64 * u64::from(args.games);
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} games  {msg}")
            .context("progress bar template")?
            .progress_chars("=> "),
    );
    let started = Instant::now();
    let mut pairings: Vec<Pairing> = Vec::new();
    let mut played: Vec<Played> = Vec::new();
    let mut done = 0u64;
    let note = |played: &mut Vec<Played>, a: &str, b: &str, wdl: Wdl, bar: &ProgressBar| {
        bar.suspend(|| errln!("{a} vs {b}: {wdl}"));
        played.push(Played {
            a: a.to_string(),
            b: b.to_string(),
            wins: wdl.wins,
            draws: wdl.draws,
            losses: wdl.losses,
        });
    };
    for &(a, b) in &schedule {
        bar.set_message(format!("{} vs {}", names[a], names[b]));
        let result = run_match_batched_shared(
            &players[a],
            &players[b],
            &mut evaluator,
            &openings,
            &config,
            args.concurrency as usize,
            |_, stats: &MatchStats| {
                bar.set_position(done + u64::from(stats.games()));
                true
            },
        )
        .with_context(|| format!("{} vs {}", names[a], names[b]))?;
        done += u64::from(args.games);
        let wdl = result.stats.wdl;
        note(&mut played, &names[a], &names[b], wdl, &bar);
        pairings.push(Pairing { a, b, wdl });
    }
    if let Some(player) = engine.as_mut() {
        let engine_name = format!(
            "{} ({} node{})",
            Player::<G>::name(&*player),
            args.engine_nodes,
            if args.engine_nodes == 1 { "" } else { "s" }
        );
        names.push(engine_name.clone());
        let engine_index = names.len() - 1;
        for &s in engine_levels {
            let a = level_index(s);
            bar.set_message(format!("{} vs {engine_name}", names[a]));
            let mut level = players[a].to_player::<G, _>(&mut evaluator)?;
            let stats =
                run_match(level.as_mut(), player, &openings, &config, |_, stats: &MatchStats| {
                    bar.set_position(done + u64::from(stats.games()));
                    true
                });
            // A forfeit is no result of play: an engine that crashes or plays illegal moves
            // (or a failed network) is taken off the ladder, and the table is made without it.
            let forfeits: Vec<(u32, &String)> = [(0, &names[a]), (1, &engine_name)]
                .into_iter()
                .map(|(who, name)| (stats.total_forfeits(who), name))
                .filter(|(n, _)| *n > 0)
                .collect();
            if let Some(&(n, name)) = forfeits.first() {
                // The one cause seen so far: Fairy-Stockfish plays traditional janggi, and
                // drops a move that only the `site` rules allow (a cannon's screenless slide).
                let janggi_site = G::KIND == xiangqi_search::GameKind::Janggi
                    && args.rules.as_deref().is_none_or(|r| r.eq_ignore_ascii_case("site"));
                let hint = if janggi_site {
                    " (an engine of traditional janggi, such as Fairy-Stockfish, needs \
                     --rules traditional: under `site` a cannon may slide without a screen)"
                } else {
                    ""
                };
                bar.suspend(|| {
                    errln!(
                        "warning: {} vs {engine_name}: {name} forfeited {n} of {} games \
                         (illegal moves, crashes, timeouts or errors; xqz arena shows each): \
                         {engine_name} is left off the ladder, and the table is made without \
                         it{hint}",
                        names[a],
                        stats.games()
                    );
                });
                pairings.retain(|p| p.b != engine_index);
                played.retain(|p| p.b != engine_name);
                names.pop();
                break;
            }
            note(&mut played, &names[a], &engine_name, stats.wdl, &bar);
            pairings.push(Pairing { a, b: engine_index, wdl: stats.wdl });
            done += u64::from(args.games);
        }
    }
    bar.finish_and_clear();
    let ratings = fit_elo_with_intervals(names.len(), 0, &pairings, 1.0, 400, args.seed);
    let mut games = vec![0u32; names.len()];
    for p in &pairings {
        games[p.a] += p.wdl.games();
        games[p.b] += p.wdl.games();
    }
    let rated = |i: usize, level: Option<u32>| RatedPlayer {
        name: names[i].clone(),
        level,
        elo: round1(ratings[i].elo),
        low: round1(ratings[i].low),
        high: round1(ratings[i].high),
        games: games[i],
    };
    let table = StrengthTable {
        anchor: "random".to_string(),
        simulations: full,
        games: pairings.iter().map(|p| p.wdl.games()).sum(),
        levels: (0..=MAX_LEVEL).map(|s| rated(level_index(s), Some(s))).collect(),
        ladder: (0..names.len())
            .filter(|&i| !(2..2 + MAX_LEVEL as usize + 1).contains(&i))
            .map(|i| rated(i, None))
            .collect(),
    };
    print_table(&table);
    let seconds = started.elapsed().as_secs_f64();
    outln!("{} games in {:.0} s", table.games, seconds);
    let inversions = table.inversions();
    if !inversions.is_empty() {
        let list: Vec<String> = inversions.iter().map(|s| format!("{s}->{}", s + 1)).collect();
        errln!(
            "warning: the measured Elo does not rise at levels {} (within the intervals: play \
             more games with --games)",
            list.join(", ")
        );
    }
    if let Some(path) = &args.json {
        let report = Report {
            game: G::KIND.to_string(),
            net: dir.display().to_string(),
            table: &table,
            pairings: &played,
            seconds,
        };
        let text = serde_json::to_string_pretty(&report).context("encoding the report")?;
        xiangqi_train::atomic::write_atomically(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.dry_run {
        outln!("--dry-run: {} left as it was", dir.display());
    } else {
        checkpoint::write_strength(dir, Some(&table))
            .with_context(|| format!("cannot write the table into '{}'", dir.display()))?;
        outln!(
            "wrote the table into {}; xqz uci --net {} offers UCI_Elo {} to {}",
            dir.join(checkpoint::MANIFEST).display(),
            dir.display(),
            table.elo_range().0,
            table.elo_range().1
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn print_table(table: &StrengthTable) {
    outln!(
        "{:<10} {:>6} {:>7} {:>7}  {:<17} {:>6}",
        "level",
        "sims",
        "p(rand)",
        "Elo",
        "95% interval",
        "games"
    );
    for p in &table.levels {
        let s = Strength::skill(p.level.unwrap_or(MAX_LEVEL));
        outln!(
            "{:<10} {:>6} {:>6.1}% {:>7.0}  [{:>6.0}, {:>6.0}] {:>6}",
            p.name,
            s.simulations(table.simulations),
            100.0 * s.random_move_rate(),
            p.elo,
            p.low,
            p.high,
            p.games
        );
    }
    for p in &table.ladder {
        let anchor = if p.name == table.anchor { " (anchor)" } else { "" };
        outln!(
            "{:<10} {:>6} {:>7} {:>7.0}  [{:>6.0}, {:>6.0}] {:>6}{anchor}",
            p.name,
            "",
            "",
            p.elo,
            p.low,
            p.high,
            p.games
        );
    }
    let monotonic = if table.is_monotonic() { "yes" } else { "no" };
    outln!("Elo: logistic scale, {} = 0; levels rise monotonically: {monotonic}", table.anchor);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_connects_every_level_to_the_anchor() {
        let pairs = local_schedule();
        // Levels chain 0..20, and every level meets greedy.
        for s in 0..MAX_LEVEL {
            assert!(pairs.contains(&(level_index(s), level_index(s + 1))));
        }
        for s in 0..=MAX_LEVEL {
            assert!(pairs.contains(&(level_index(s), 1)));
        }
        assert!(pairs.contains(&(1, 0)) && pairs.contains(&(level_index(0), 0)));
    }

    #[test]
    fn engine_levels_parse() {
        assert_eq!(parse_levels("20, 10,10,").unwrap(), vec![10, 20]);
        assert!(parse_levels("21").is_err());
        assert!(parse_levels("x").is_err());
    }
}
