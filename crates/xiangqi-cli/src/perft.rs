//! `xqz perft [--game xiangqi|janggi] [--rules R] --depth N [--fen FEN] [--lenient] [--divide]`.
//!
//! Standard output: with `--divide`, one `MOVE: COUNT` line per legal move (a janggi pass is
//! written as the general's point twice, e.g. `e1e1`), then (always) a last line
//! `Nodes searched: N`. Time and nodes per second go to standard error.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use xiangqi::{Move, Position, RuleSet, Validation, janggi};

/// The game whose rules a command applies (`--game`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum GameName {
    /// Xiangqi (Chinese chess).
    #[default]
    Xiangqi,
    /// Janggi (Korean chess).
    Janggi,
}

/// A game with its rule set, resolved from `--game` and `--rules`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameRules {
    /// Xiangqi under a rule set (`asian` by default).
    Xiangqi(RuleSet),
    /// Janggi under a rule set (`site` by default).
    Janggi(janggi::Rules),
}

impl GameRules {
    /// Resolves `--rules` for `--game`: each game has its own rule sets and default, and a rule
    /// set of the other game is an error naming the accepted values.
    pub fn resolve(game: GameName, rules: Option<&str>) -> anyhow::Result<GameRules> {
        Ok(match game {
            GameName::Xiangqi => GameRules::Xiangqi(match rules {
                None => RuleSet::default(),
                Some(r) => r.parse().context("--rules for --game xiangqi")?,
            }),
            GameName::Janggi => GameRules::Janggi(match rules {
                None => janggi::Rules::default(),
                Some(r) => r.parse().context("--rules for --game janggi")?,
            }),
        })
    }
}

/// Arguments of `xqz perft`.
#[derive(clap::Args)]
pub struct Args {
    /// Game: `xiangqi` (default) or `janggi`.
    #[arg(long, value_enum, default_value_t = GameName::Xiangqi)]
    game: GameName,
    /// Rule set: `site` (default) or `traditional` for janggi, where the cannon's moves differ;
    /// xiangqi's (`asian`, `simple`) do not change its move tree.
    #[arg(long)]
    rules: Option<String>,
    /// Depth in plies (at most 20: deeper trees cannot be counted in a lifetime).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=20))]
    depth: u32,
    /// Start position (default: the game's initial position).
    #[arg(long)]
    fen: Option<String>,
    /// Accept composed xiangqi positions (pieces on points a game could never reach).
    #[arg(long)]
    lenient: bool,
    /// Print the count below each legal move.
    #[arg(long)]
    divide: bool,
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let game = GameRules::resolve(args.game, args.rules.as_deref())?;
    let start = Instant::now();
    let (split, nodes): (Option<Vec<(Move, u64)>>, u64) = match game {
        GameRules::Xiangqi(_) => {
            let validation = if args.lenient { Validation::Lenient } else { Validation::Strict };
            let fen = args.fen.as_deref().unwrap_or(xiangqi::START_FEN);
            let pos = Position::from_fen_with(fen, validation).context("--fen")?;
            if args.divide {
                (Some(xiangqi::divide(&pos, args.depth)), 0)
            } else {
                (None, xiangqi::perft(&pos, args.depth))
            }
        }
        GameRules::Janggi(rules) => {
            if args.lenient {
                bail!("--lenient applies to xiangqi only (janggi accepts any legal placement)");
            }
            let fen = args.fen.as_deref().unwrap_or(janggi::START_FEN);
            let pos = janggi::Position::from_fen(fen, rules).context("--fen")?;
            if args.divide {
                (Some(janggi::divide(&pos, args.depth)), 0)
            } else {
                (None, janggi::perft(&pos, args.depth))
            }
        }
    };
    let nodes = match split {
        None => nodes,
        Some(split) => {
            for (m, n) in &split {
                outln!("{m}: {n}");
            }
            if args.depth == 0 { 1 } else { split.iter().map(|(_, n)| n).sum() }
        }
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
