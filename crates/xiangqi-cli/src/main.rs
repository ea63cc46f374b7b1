//! `xqz`: the command-line tool of xiangqi-zero.
//!
//! The only place that reads arguments and the environment, chooses paths, sets up logging and
//! seeds random generators. Each subcommand lives in its own module with a `run` function.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod arena;
mod config;
mod engine;
mod export;
mod net;
mod outcome;
mod perft;
mod selfplay;
mod train;
mod uci;
mod uci_search;

/// Train and play neural xiangqi engines by self-play.
#[derive(Parser)]
#[command(name = "xqz", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count the leaves of the legal move tree (move generator check and speed test).
    Perft(perft::Args),
    /// Play moves from a position and print the verdict of the rules: `RESULT REASON`.
    Outcome(outcome::Args),
    /// Train a network by self-play (the main job); Ctrl-C checkpoints, `--resume` continues.
    Train(train::Args),
    /// Play self-play games and write replay shards and a PGN file.
    Selfplay(selfplay::Args),
    /// Play a match between two players (baselines, the search, external UCI/UCCI engines).
    Arena(arena::Args),
    /// Speak UCI (and UCCI) on standard input and output, for GUIs and match tools.
    Uci(uci::Args),
    /// Export a checkpoint as a self-contained net, with safetensors and a JSON description.
    Export(export::Args),
}

/// Exit status for bad input (an illegal move, a malformed FEN, ...).
pub const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Perft(args) => perft::run(&args),
        Command::Outcome(args) => outcome::run(&args),
        Command::Train(args) => train::run(&args),
        Command::Selfplay(args) => selfplay::run(&args),
        Command::Arena(args) => arena::run(&args),
        Command::Uci(args) => uci::run(&args),
        Command::Export(args) => export::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
