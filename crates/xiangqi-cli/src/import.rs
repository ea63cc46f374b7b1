//! `xqz import FILES... --out DIR [--game xiangqi|janggi] [--rules R] [--games-per-shard N]`.
//!
//! Reads game records written by other programs (PGN collections with ICCS, UCI, WXF, Chinese or
//! SAN moves, UTF-8 or GBK; XQStudio's XQF files, encrypted or not; see
//! `xiangqi_search::import`), replays each game under the rules and writes its positions as
//! replay shards `shard-NNNNNN.npz` (numbered after any already in `DIR`, written atomically):
//! the policy target is the move played, the result the record's (or the rules' verdict on the
//! final position, which must agree with it), the final material and the length as self-play
//! records them. A game with an illegal move is reported on standard error with its file, game
//! number and move number, and skipped; the rest of the file is imported. The last line on
//! standard output sums up what was read, imported and skipped.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use xiangqi_search::import::{ImportGame, SourceGame, decode_text, import_game, pgn, xqf};
use xiangqi_search::shard::{Shard, UNKNOWN_ENDING, UNKNOWN_GENERATION, list_shards, write_shard};
use xiangqi_search::{GameEnv, GameKind};

use crate::perft::{GameName, GameRules};

/// The worker number of imported games in their shards (self-play's are 0 and the workers'
/// their own ids): `u64::MAX`, so that an imported game never shares a `(worker, game_id)` with
/// a played one.
pub const IMPORT_WORKER: u64 = u64::MAX;

/// Arguments of `xqz import`.
#[derive(clap::Args)]
pub struct Args {
    /// Game record files: PGN (`.pgn` or any text) or XQF (`.xqf`, recognised by its
    /// signature).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Directory for the replay shards (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Game: `xiangqi` (default) or `janggi`.
    #[arg(long, value_enum, default_value_t = GameName::Xiangqi)]
    game: GameName,
    /// Rule set the games are replayed under: `asian` (default) or `simple` for xiangqi;
    /// `site` (default) or `traditional` for janggi.
    #[arg(long)]
    rules: Option<String>,
    /// Games per shard file (at least 1).
    #[arg(long, default_value_t = 1000)]
    games_per_shard: u32,
}

/// Counts of an import.
#[derive(Default)]
struct Summary {
    games: u64,
    imported: u64,
    positions: u64,
    shards: u64,
    damaged_files: u64,
    skipped: std::collections::BTreeMap<&'static str, u64>,
}

struct Writer<G: GameEnv> {
    rules: G::Rules,
    dir: PathBuf,
    shard: Shard,
    games_in_shard: u32,
    games_per_shard: u32,
    next_index: u64,
    next_game_id: u64,
}

impl<G: ImportGame> Writer<G> {
    fn flush(&mut self, summary: &mut Summary) -> anyhow::Result<()> {
        if self.games_in_shard == 0 {
            return Ok(());
        }
        let path = self.dir.join(format!("shard-{:06}.npz", self.next_index));
        write_shard(&path, &self.shard)
            .with_context(|| format!("cannot write {}", path.display()))?;
        self.next_index += 1;
        self.shard = Shard::new::<G>(self.rules);
        self.games_in_shard = 0;
        summary.shards += 1;
        Ok(())
    }

    fn add(
        &mut self,
        file: &Path,
        source: &SourceGame,
        summary: &mut Summary,
    ) -> anyhow::Result<()> {
        summary.games += 1;
        match import_game::<G>(source, self.rules, self.next_game_id) {
            Ok(imported) => {
                let before = self.shard.len();
                self.shard.push_game_of(&imported.record, IMPORT_WORKER, UNKNOWN_GENERATION);
                if !imported.rules_verdict {
                    // The record's result stands, its reason is not known.
                    for e in &mut self.shard.ending[before..] {
                        *e = UNKNOWN_ENDING;
                    }
                }
                summary.imported += 1;
                summary.positions += (self.shard.len() - before) as u64;
                self.next_game_id += 1;
                self.games_in_shard += 1;
                if self.games_in_shard >= self.games_per_shard {
                    self.flush(summary)?;
                }
            }
            Err(skip) => {
                errln!("{}: game {}: skipped: {skip}", file.display(), source.number);
                *summary.skipped.entry(skip.kind()).or_default() += 1;
            }
        }
        Ok(())
    }
}

/// Whether `bytes` look like an XQF file: the `XQ` signature and a version XQStudio wrote.
fn is_xqf(path: &Path, bytes: &[u8]) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    bytes.starts_with(b"XQ") && (ext.as_deref() == Some("xqf") || bytes.len() >= 1024)
}

fn import_files<G: ImportGame>(
    args: &Args,
    rules: G::Rules,
    next_index: u64,
) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    let mut writer = Writer::<G> {
        rules,
        dir: args.out.clone(),
        shard: Shard::new::<G>(rules),
        games_in_shard: 0,
        games_per_shard: args.games_per_shard,
        next_index,
        next_game_id: next_index << 32,
    };
    for path in &args.files {
        let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        if is_xqf(path, &bytes) {
            if G::KIND != GameKind::Xiangqi {
                errln!(
                    "{}: skipped: XQF files hold xiangqi games, not {}",
                    path.display(),
                    G::KIND
                );
                summary.damaged_files += 1;
                continue;
            }
            match xqf::read_xqf(&bytes) {
                Ok(game) => writer.add(path, &game, &mut summary)?,
                Err(e) => {
                    errln!("{}: skipped: {e}", path.display());
                    summary.damaged_files += 1;
                }
            }
        } else {
            let (text, _encoding) = decode_text(&bytes);
            for game in pgn::read_pgn(&text) {
                writer.add(path, &game, &mut summary)?;
            }
        }
    }
    writer.flush(&mut summary)?;
    Ok(summary)
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if args.games_per_shard == 0 {
        bail!("--games-per-shard must be at least 1");
    }
    for path in &args.files {
        if !path.is_file() {
            bail!("{} is not a file", path.display());
        }
    }
    let rules = GameRules::resolve(args.game, args.rules.as_deref())?;
    fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let next_index = list_shards(&args.out)
        .with_context(|| format!("cannot list {}", args.out.display()))?
        .iter()
        .filter_map(|p| p.file_stem()?.to_str()?.strip_prefix("shard-")?.parse::<u64>().ok())
        .map(|i| i + 1)
        .max()
        .unwrap_or(0);
    let started = Instant::now();
    let summary = match rules {
        GameRules::Xiangqi(r) => import_files::<xiangqi::Game>(args, r, next_index)?,
        GameRules::Janggi(r) => import_files::<xiangqi::janggi::Game>(args, r, next_index)?,
    };
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let skipped: u64 = summary.skipped.values().sum();
    let reasons: Vec<String> = summary.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
    outln!(
        "imported {} of {} games ({} positions) into {} shard(s) in {}; skipped {}{}{}; \
         {:.1} s, {:.0} games/s",
        summary.imported,
        summary.games,
        summary.positions,
        summary.shards,
        args.out.display(),
        skipped,
        if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) },
        if summary.damaged_files > 0 {
            format!(", and {} unreadable file(s)", summary.damaged_files)
        } else {
            String::new()
        },
        secs,
        summary.games as f64 / secs,
    );
    Ok(ExitCode::SUCCESS)
}
