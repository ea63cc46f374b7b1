//! `xqz outcome [--fen FEN] [--moves "M1 M2 ..."] [--rules asian|simple]`.
//!
//! Plays the moves and prints `RESULT REASON` (`1-0 checkmate`, `* -`, ...). An illegal or
//! malformed move, or a move after the game has ended, is an error on standard error naming the
//! move and its 1-based index, with exit status 2.

use std::process::ExitCode;

use anyhow::{Context, bail};
use xiangqi::{Game, GameError, Position, RuleSet, START_FEN, Validation};

/// Arguments of `xqz outcome`.
#[derive(clap::Args)]
pub struct Args {
    /// Start position (default: the initial position).
    #[arg(long, default_value = START_FEN)]
    fen: String,
    /// Moves in UCI notation (ranks 0-9), separated by spaces.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    moves: String,
    /// Rule set: `asian` or `simple`.
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// Accept composed positions (pieces on points a game could never reach).
    #[arg(long)]
    lenient: bool,
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let validation = if args.lenient { Validation::Lenient } else { Validation::Strict };
    let start = Position::from_fen_with(&args.fen, validation).context("--fen")?;
    let mut game = Game::new(start, args.rules);
    for (i, text) in args.moves.split_ascii_whitespace().enumerate() {
        let index = i + 1;
        if let Some(o) = game.outcome() {
            bail!("move {index} '{text}': the game is already over ({o})");
        }
        let m = game.position().parse_uci(text).with_context(|| format!("move {index}"))?;
        match game.play(m) {
            Ok(_) => {}
            Err(GameError::GameOver(o)) => {
                bail!("move {index} '{text}': the game is already over ({o})")
            }
            Err(e) => bail!("move {index} '{text}': {e}"),
        }
    }
    match game.outcome() {
        Some(o) => outln!("{o}"),
        None => outln!("* -"),
    }
    Ok(ExitCode::SUCCESS)
}
