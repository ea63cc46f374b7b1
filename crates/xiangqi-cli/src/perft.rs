//! `xqz perft --depth N [--fen FEN] [--lenient] [--divide]`.
//!
//! Standard output: with `--divide`, one `MOVE: COUNT` line per legal move, then (always) a last
//! line `Nodes searched: N`. Time and nodes per second go to standard error.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use xiangqi::{Position, START_FEN, Validation};

/// Arguments of `xqz perft`.
#[derive(clap::Args)]
pub struct Args {
    /// Depth in plies (at most 20: deeper trees cannot be counted in a lifetime).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=20))]
    depth: u32,
    /// Start position (default: the initial position).
    #[arg(long, default_value = START_FEN)]
    fen: String,
    /// Accept composed positions (pieces on points a game could never reach).
    #[arg(long)]
    lenient: bool,
    /// Print the count below each legal move.
    #[arg(long)]
    divide: bool,
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let validation = if args.lenient { Validation::Lenient } else { Validation::Strict };
    let pos = Position::from_fen_with(&args.fen, validation).context("--fen")?;
    let start = Instant::now();
    let nodes = if args.divide {
        let split = xiangqi::divide(&pos, args.depth);
        for (m, n) in &split {
            outln!("{m}: {n}");
        }
        if args.depth == 0 { 1 } else { split.iter().map(|(_, n)| n).sum() }
    } else {
        xiangqi::perft(&pos, args.depth)
    };
    let secs = start.elapsed().as_secs_f64();
    outln!("Nodes searched: {nodes}");
    errln!(
        "time {:.3} s, {:.2} M nodes/s",
        secs,
        if secs > 0.0 { nodes as f64 / secs / 1e6 } else { 0.0 }
    );
    Ok(ExitCode::SUCCESS)
}
