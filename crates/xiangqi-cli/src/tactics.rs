//! `xqz tactics`: a player on the tactical test positions kept back from training
//! ([`xiangqi_search::tactics`]).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use xiangqi::RuleSet;
use xiangqi_search::arena::MoveLimit;
use xiangqi_search::shard::suffixed;
use xiangqi_search::tactics::{TacticKind, generate_with_progress};

use crate::arena::{PlayerSpec, parse_player};

/// Random games searched for positions, at most (a few hundred suffice for 100 of each kind).
const MAX_GAMES: u64 = 200_000;

/// Arguments of `xqz tactics`.
#[derive(clap::Args)]
pub struct Args {
    /// The player: random, greedy, mcts, uci:COMMAND, ucci:COMMAND, or a network (a
    /// checkpoint, export or run directory, `net:DIR` or just DIR).
    #[arg(long)]
    player: String,
    /// An option of the player, `NAME=VALUE` (repeatable; as `xqz arena --a-option`).
    #[arg(long = "option")]
    option: Vec<String>,
    /// Rank numbers of an engine's moves: 0 (0-9, Pikafish) or 1 (1-10); default 1 for
    /// Fairy-Stockfish (known by its id name), else 0, as in `xqz arena`.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=1))]
    ranks: Option<u8>,
    /// Simulations per move of a search player (a network, mcts); default: the player's own
    /// setting (800). Ignored by random and greedy.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    sims: Option<u32>,
    /// Node limit of an external engine (`go nodes N`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    nodes: Option<u32>,
    /// Time per move in milliseconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    movetime: Option<u64>,
    /// Positions of each kind.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    count: u64,
    /// Seed of the random games the positions come from (the default is the set the project
    /// reports; training never draws from it).
    #[arg(long, default_value_t = 2026_12_01)]
    seed: u64,
    /// Rule set: `asian` or `simple`.
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// The network's device: cpu, wgpu, wgpu:N or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// The CPU kernels' arithmetic: f32; bf16, the network's tower in bfloat16 on Intel's AMX
    /// or AVX-512 BF16 (about twice the positions per second for the main job's 2 × 24 net on AMX,
    /// 1.4–1.7 times on AVX-512 BF16, nothing for the smallest nets; f32, with a warning, where it cannot run); or auto, bf16 where it can run
    /// and f32 elsewhere.
    #[arg(long, default_value = "f32")]
    precision: xiangqi_nn::Precision,
    /// Write the positions, one per line: kind, FEN of the start, the moves to the position
    /// (UCI), the correct moves, the player's answer, and `clear` for a win-a-piece position
    /// where nothing else is at stake (`-` otherwise). Written to `FILE.partial` as the
    /// answers come, and renamed to FILE when the last is in: a run that fails or is stopped
    /// leaves its answers so far there, and an earlier FILE as it was.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The 95% Wilson score interval of a proportion, in percent (it stays wide at 0 and n solved,
/// where the normal approximation collapses to a point).
fn interval(solved: u64, n: u64) -> (f64, f64) {
    let (n, p, z) = (n as f64, solved as f64 / n as f64, 1.959_963_984_540_054_f64);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (100.0 * (centre - half).max(0.0), 100.0 * (centre + half).min(1.0))
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let mut spec = parse_player(
        &args.player,
        &args.option,
        args.ranks,
        args.seed,
        crate::arena::PlayBudget { sims: args.sims, timed: args.movetime.is_some() },
    )
    .context("--player")?;
    if let Some(n) = args.nodes {
        match &mut spec {
            PlayerSpec::Engine(e) => e.nodes = Some(n),
            _ => bail!("--nodes is a limit of an external engine (uci: or ucci:)"),
        }
    }
    if let PlayerSpec::Net(_, path) = &spec {
        let game = crate::net::game_of(path).context("--player")?;
        if game != xiangqi_search::GameKind::Xiangqi {
            bail!("--player: the network plays {game}; the tactical positions are xiangqi's");
        }
    }
    let device = crate::net::NetDevice::open(&args.device, args.precision)?;
    let mut player = spec.start(&args.player, &device)?;
    let limit = MoveLimit {
        simulations: args.sims,
        movetime: args.movetime.map(Duration::from_millis),
        margin: Duration::from_secs(1),
    };
    // The output file first: a bad path is an error before any work.
    if let Some(path) = args.out.as_ref().filter(|p| p.is_dir()) {
        bail!("--out {} is a folder, not a file", path.display());
    }
    let partial = args.out.as_ref().map(|path| suffixed(path, ".partial"));
    let mut out = match &partial {
        Some(path) => Some(BufWriter::new(
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
    // Progress on standard error (drawn only on a terminal): at the largest counts, finding the
    // positions takes minutes of random games before the player answers the first.
    let wanted = 3 * args.count;
    let bar = ProgressBar::new(wanted);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .context("progress bar template")?
            .progress_chars("=> "),
    );
    bar.set_message("positions found");
    let set =
        generate_with_progress(args.count as usize, args.seed, args.rules, MAX_GAMES, |_, n| {
            bar.set_position(n as u64)
        });
    bar.set_position(0);
    bar.set_length(set.len() as u64);
    bar.set_message("positions answered");
    // Per kind, then the clear win-a-piece positions: positions, solved, expected solved by a
    // random mover.
    let mut tally = [(0u64, 0u64, 0.0f64); 4];
    for (i, t) in set.iter().enumerate() {
        bar.set_position(i as u64);
        player.new_game(i as u64).with_context(|| format!("{}: new game", player.name()))?;
        // A player that gives no legal move (an engine that crashes, hangs past its limit or
        // answers an illegal move) stops the check: a broken player is not a weak one.
        let answer = player
            .choose_move(&t.game, &limit)
            .map_err(anyhow::Error::from)
            .and_then(|m| {
                if t.game.position().is_legal(m) {
                    Ok(m)
                } else {
                    Err(anyhow::anyhow!("illegal move {m}"))
                }
            })
            .with_context(|| {
                format!(
                    "{}: position {} ({}, FEN {})",
                    player.name(),
                    i + 1,
                    t.kind,
                    t.game.position().fen()
                )
            })?;
        let solved = t.is_solved_by(answer);
        let k = TacticKind::ALL.iter().position(|&x| x == t.kind).unwrap_or(0);
        for k in std::iter::once(k).chain(t.clear.then_some(3)) {
            tally[k].0 += 1;
            tally[k].1 += u64::from(solved);
            tally[k].2 += t.chance();
        }
        if let Some(w) = out.as_mut() {
            let moves: Vec<String> = t.game.moves().iter().map(|m| m.to_string()).collect();
            let solutions: Vec<String> = t.solutions.iter().map(|m| m.to_string()).collect();
            writeln!(
                w,
                "{}\t{}\t{}\t{}\t{}\t{}",
                t.kind,
                t.game.start().fen(),
                moves.join(" "),
                solutions.join(" "),
                answer,
                if t.clear { "clear" } else { "-" }
            )
            .and_then(|()| w.flush())
            .context("cannot write --out")?;
        }
    }
    bar.finish_and_clear();
    if let (Some(mut w), Some(from), Some(to)) = (out, &partial, &args.out) {
        w.flush().context("cannot write --out")?;
        drop(w);
        fs::rename(from, to)
            .with_context(|| format!("cannot rename {} to {}", from.display(), to.display()))?;
    }
    outln!("player: {}", player.name());
    outln!(
        "{:<18} {:>9} {:>7} {:>8} {:>17} {:>8}",
        "kind",
        "positions",
        "solved",
        "score",
        "95% interval",
        "random"
    );
    let names = TacticKind::ALL.map(|k| k.name());
    let rows = names.iter().copied().chain(["win_piece (clear)"]);
    for (name, (n, solved, chance)) in rows.zip(tally) {
        if n == 0 {
            outln!("{:<18} {:>9} (none found)", name, 0);
            continue;
        }
        let (lo, hi) = interval(solved, n);
        outln!(
            "{:<18} {:>9} {:>7} {:>7.1}% {:>7.1}%–{:>5.1}% {:>7.1}%",
            name,
            n,
            solved,
            100.0 * solved as f64 / n as f64,
            lo,
            hi,
            100.0 * chance / n as f64
        );
    }
    Ok(ExitCode::SUCCESS)
}
