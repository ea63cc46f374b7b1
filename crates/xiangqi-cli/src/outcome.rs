//! `xqz outcome [--game xiangqi|janggi] [--fen FEN] [--moves "M1 M2 ..."] [--rules R]`.
//!
//! Plays the moves and prints `RESULT REASON` (`1-0 checkmate`, `* -`, ...). For janggi `1-0`
//! is a Cho win, `0-1` a Han win, and a pass is written as the general's point twice (`e1e1`).
//! An illegal or malformed move, or a move after the game has ended, is an error on standard
//! error naming the move and its 1-based index, with exit status 2.

use std::process::ExitCode;

use anyhow::{Context, bail};
use xiangqi::{Game, GameError, Outcome, Position, Validation, janggi};

use crate::perft::{GameName, GameRules};

/// Arguments of `xqz outcome`.
#[derive(clap::Args)]
pub struct Args {
    /// Game: `xiangqi` (default) or `janggi`.
    #[arg(long, value_enum, default_value_t = GameName::Xiangqi)]
    game: GameName,
    /// Start position (default: the game's initial position).
    #[arg(long)]
    fen: Option<String>,
    /// Moves in UCI notation (ranks 0-9), separated by spaces.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    moves: String,
    /// Rule set: `asian` (default) or `simple` for xiangqi; `site` (default) or `traditional`
    /// for janggi.
    #[arg(long)]
    rules: Option<String>,
    /// Accept composed xiangqi positions (pieces on points a game could never reach).
    #[arg(long)]
    lenient: bool,
}

/// Plays one move text: the shared error contract of both games.
fn play_one(
    index: usize,
    text: &str,
    outcome: Option<Outcome>,
    play: impl FnOnce() -> anyhow::Result<Result<(), GameError>>,
) -> anyhow::Result<()> {
    if let Some(o) = outcome {
        bail!("move {index} '{text}': the game is already over ({o})");
    }
    match play().with_context(|| format!("move {index}"))? {
        Ok(()) => Ok(()),
        Err(GameError::GameOver(o)) => {
            bail!("move {index} '{text}': the game is already over ({o})")
        }
        Err(e) => bail!("move {index} '{text}': {e}"),
    }
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let outcome = match GameRules::resolve(args.game, args.rules.as_deref())? {
        GameRules::Xiangqi(rules) => {
            let validation = if args.lenient { Validation::Lenient } else { Validation::Strict };
            let fen = args.fen.as_deref().unwrap_or(xiangqi::START_FEN);
            let start = Position::from_fen_with(fen, validation).context("--fen")?;
            let mut game = Game::new(start, rules);
            for (i, text) in args.moves.split_ascii_whitespace().enumerate() {
                play_one(i + 1, text, game.outcome(), || {
                    let m = game.position().parse_uci(text)?;
                    Ok(game.play(m).map(|_| ()))
                })?;
            }
            game.outcome()
        }
        GameRules::Janggi(rules) => {
            if args.lenient {
                bail!("--lenient applies to xiangqi only (janggi accepts any legal placement)");
            }
            let fen = args.fen.as_deref().unwrap_or(janggi::START_FEN);
            let start = janggi::Position::from_fen(fen, rules).context("--fen")?;
            let mut game = janggi::Game::new(start);
            for (i, text) in args.moves.split_ascii_whitespace().enumerate() {
                play_one(i + 1, text, game.outcome(), || {
                    let m = game.position().parse_uci(text)?;
                    Ok(game.play(m).map(|_| ()))
                })?;
            }
            game.outcome()
        }
    };
    match outcome {
        Some(o) => outln!("{o}"),
        None => outln!("* -"),
    }
    Ok(ExitCode::SUCCESS)
}
