//! `xqz selfplay [--config FILE] --games N --out DIR [--threads T] [--seed S] [--net NET]`, or,
//! as a worker of a distributed run, `xqz selfplay --store URL` (see [`crate::worker`]).
//!
//! Plays `N` self-play games with the settings of the config's `[search]` and `[selfplay]`
//! sections (without `--config`, the built-in `configs/cpu.toml`, as `xqz train`) and the
//! uniform evaluator, or `--net`'s network, and writes into `DIR`:
//!
//! * replay shards `shard-NNNNNN.npz`, `games_per_shard` games each, written atomically and
//!   numbered after any shard already there (format: `crates/xiangqi-search/src/shard.rs`);
//! * `games.pgn`, every game in PGN (appended to an existing file).
//!
//! A progress bar on standard error shows games, moves/s, simulations/s and batch fill; a
//! summary goes to standard error at the end.

use std::fs::{self, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use xiangqi::{Game, OutcomeReason, janggi};
use xiangqi_search::{
    GameEnv, GameKind, GameRecord, SelfPlayEvent, SelfPlayStats, Shard, list_shards, play_games,
    write_shard,
};
use xiangqi_train::pipeline::CheckedRunConfig;

/// Arguments of `xqz selfplay`.
#[derive(clap::Args)]
pub struct Args {
    /// Config file (TOML) with `[search]` and `[selfplay]` sections; default: the built-in
    /// `configs/cpu.toml`, the config `xqz train` runs without `--config`.
    #[arg(long, conflicts_with = "store")]
    config: Option<PathBuf>,
    /// Number of games to play (with --store: stop after this many games uploaded; default:
    /// until stopped).
    #[arg(long, required_unless_present = "store")]
    games: Option<u64>,
    /// Output directory for shards and the PGN file (created if missing).
    #[arg(long, required_unless_present = "store", conflicts_with = "store")]
    out: Option<PathBuf>,
    /// Be a worker of a distributed run: take the run's config and newest net from this store
    /// (a directory, or s3://bucket/prefix with the AWS_* variables) and upload the games there
    /// until stopped. `xqz train --store URL` is the trainer.
    #[arg(long, value_name = "URL", conflicts_with = "net")]
    store: Option<String>,
    /// Search threads (overrides `selfplay.threads`; 0 = one per core;
    /// at most 1024).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1024))]
    threads: Option<u32>,
    /// Master seed (overrides `selfplay.seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Network to play with: a checkpoint, export or run directory; default: uniform priors
    /// (the rules' terminal values only).
    #[arg(long)]
    net: Option<PathBuf>,
    /// The network's device: cpu, wgpu, wgpu:N or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// The CPU kernels' arithmetic: f32; bf16, the network's tower in bfloat16 on Intel's AMX
    /// or AVX-512 BF16 (about twice the positions per second for the main job's 2 × 24 net on AMX,
    /// 1.4–1.7 times on AVX-512 BF16, nothing for the smallest nets; f32, with a warning, where it cannot run); or auto, bf16 where it can run
    /// and f32 elsewhere.
    /// With --store, the run's `loop.precision` holds instead.
    #[arg(long, default_value = "f32", conflicts_with = "store")]
    precision: xiangqi_nn::Precision,
}

/// The number after which new shards are numbered: one past the highest `shard-NNNNNN.npz`.
fn next_shard_index(dir: &Path) -> anyhow::Result<u64> {
    let shards = list_shards(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    Ok(shards
        .iter()
        .filter_map(|p| p.file_stem()?.to_str()?.strip_prefix("shard-")?.parse::<u64>().ok())
        .map(|i| i + 1)
        .max()
        .unwrap_or(0))
}

struct Output<G: GameEnv> {
    rules: G::Rules,
    dir: PathBuf,
    shard: Shard,
    games_in_shard: u32,
    games_per_shard: u32,
    next_index: u64,
    pgn: BufWriter<fs::File>,
    shards_written: u64,
}

impl<G: GameEnv> Output<G> {
    fn add(&mut self, record: &GameRecord<G>) -> anyhow::Result<()> {
        record.write_pgn(&mut self.pgn).context("writing games.pgn")?;
        self.shard.push_game(record, 0);
        self.games_in_shard += 1;
        if self.games_in_shard >= self.games_per_shard {
            self.flush_shard()?;
        }
        Ok(())
    }

    fn flush_shard(&mut self) -> anyhow::Result<()> {
        if self.games_in_shard == 0 {
            return Ok(());
        }
        let path = self.dir.join(format!("shard-{:06}.npz", self.next_index));
        write_shard(&path, &self.shard)?;
        self.next_index += 1;
        self.shards_written += 1;
        self.shard = Shard::new::<G>(self.rules);
        self.games_in_shard = 0;
        Ok(())
    }
}

fn progress_message(s: &SelfPlayStats) -> String {
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    format!(
        "{:.0} moves/s, {:.0} sims/s, batch fill {:.0}%",
        s.moves as f64 / secs,
        s.simulations as f64 / secs,
        100.0 * s.batch_fill()
    )
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if args.games == Some(0) {
        anyhow::bail!("--games 0: nothing to play; give at least 1");
    }
    if let Some(store) = &args.store {
        return crate::worker::run(&crate::worker::WorkerArgs {
            store,
            threads: args.threads,
            device: &args.device,
            seed: args.seed,
            games: args.games,
        });
    }
    let (Some(games), Some(out_dir)) = (args.games, &args.out) else {
        anyhow::bail!("--games and --out are needed without --store");
    };
    let (mut config, origin) = match &args.config {
        Some(path) => (crate::config::load(path)?, path.display().to_string()),
        None => {
            let origin = crate::config::BUILTIN_CPU_ORIGIN;
            (crate::config::parse(crate::config::BUILTIN_CPU, origin)?, origin.to_string())
        }
    };
    if let Some(t) = args.threads {
        config.selfplay.threads = t;
    }
    if let Some(s) = args.seed {
        config.selfplay.seed = s;
    }
    // The one check of the settings: the file's, with the command line's overrides.
    let config = crate::config::check(config, &origin)?;
    let device = crate::net::NetDevice::open(&args.device, args.precision)?;
    let evaluator =
        crate::net::AnyEvaluator::load_optional(args.net.as_deref(), &device).context("--net")?;
    evaluator.expect_game(config.game(), "--net")?;
    // What plays: the config (a file or the built-in one), the evaluator and its arithmetic.
    errln!(
        "xqz selfplay: {games} game{} of {} with the search of {origin}, {}",
        if games == 1 { "" } else { "s" },
        config.game(),
        match (&args.net, &evaluator) {
            (Some(net), crate::net::AnyEvaluator::Net(e, _)) => {
                format!("the network {} in {}", net.display(), e.net().precision())
            }
            _ => "uniform priors (no --net)".to_string(),
        }
    );
    match config.game() {
        GameKind::Xiangqi => play::<Game>(&config, games, out_dir, evaluator),
        GameKind::Janggi => play::<janggi::Game>(&config, games, out_dir, evaluator),
    }
}

/// Plays the games of game `G` and writes their shards and PGN.
fn play<G: GameEnv>(
    config: &CheckedRunConfig,
    games: u64,
    out_dir: &Path,
    mut evaluator: crate::net::AnyEvaluator,
) -> anyhow::Result<ExitCode> {
    let rules = config.selfplay().rules_for::<G>()?;
    // Shards are numbered on after those already in the directory: they must be this game's.
    if let Ok(existing) = list_shards(out_dir)
        && let Some(last) = existing.last()
    {
        let shard = xiangqi_search::read_shard(last)?;
        if shard.game != G::KIND {
            anyhow::bail!(
                "--out {}: it holds {} shards ({}); this config plays {}: use another directory",
                out_dir.display(),
                shard.game,
                last.display(),
                G::KIND
            );
        }
    }
    fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create output directory {}", out_dir.display()))?;
    let pgn_path = out_dir.join("games.pgn");
    let pgn = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&pgn_path)
        .with_context(|| format!("cannot open {}", pgn_path.display()))?;
    let mut out = Output::<G> {
        rules,
        dir: out_dir.to_path_buf(),
        shard: Shard::new::<G>(rules),
        games_in_shard: 0,
        games_per_shard: config.selfplay().games_per_shard,
        next_index: next_shard_index(out_dir)?,
        pgn: BufWriter::new(pgn),
        shards_written: 0,
    };

    let bar = ProgressBar::new(games);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} games  {msg}")
            .context("progress bar template")?
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(500));
    let stats = play_games::<G, _, _>(
        config.search(),
        config.selfplay(),
        games,
        &mut evaluator,
        |event| {
            match event {
                SelfPlayEvent::GameFinished(record, stats) => {
                    out.add(record).map_err(|e| format!("{e:#}"))?;
                    bar.set_position(stats.games_finished);
                    bar.set_message(progress_message(stats));
                }
                SelfPlayEvent::Progress(stats) => bar.set_message(progress_message(stats)),
            }
            Ok(())
        },
    )?;
    out.flush_shard()?;
    out.pgn.flush().context("writing games.pgn")?;
    out.pgn.get_ref().sync_all().context("syncing games.pgn")?;
    bar.finish_with_message(progress_message(&stats));

    errln!(
        "{} games ({} {} wins, {} draws, {} {} wins), {} moves, {} simulations in {:.1} s",
        stats.games_finished,
        stats.results[0],
        G::SIDE_TAGS[0].to_lowercase(),
        stats.results[1],
        stats.results[2],
        G::SIDE_TAGS[1].to_lowercase(),
        stats.moves,
        stats.simulations,
        stats.elapsed.as_secs_f64()
    );
    let reasons: Vec<String> = OutcomeReason::ALL
        .iter()
        .filter(|r| stats.reasons[r.index()] > 0)
        .map(|r| format!("{r} {}", stats.reasons[r.index()]))
        .collect();
    errln!("endings: {}", reasons.join(", "));
    if stats.games_forked > 0 {
        errln!("forks: {} of the games branched off an earlier one", stats.games_forked);
    }
    errln!(
        "evaluator: {} batches, mean {:.1} states (fill {:.0}%), busy {:.0}% of wall time",
        stats.batches,
        stats.evaluations as f64 / stats.batches.max(1) as f64,
        100.0 * stats.batch_fill(),
        100.0 * stats.busy_fraction()
    );
    if let Some(rate) = stats.resign_false_positive_rate() {
        errln!(
            "resignation: {} resigned; {} of {} no-resign games would have, false positive rate {:.1}%",
            stats.resignations,
            stats.would_have_resigned,
            stats.resign_disabled_games,
            100.0 * rate
        );
    }
    errln!("wrote {} shard(s) and games.pgn to {}", out.shards_written, out_dir.display());
    Ok(ExitCode::SUCCESS)
}
