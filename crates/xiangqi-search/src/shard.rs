//! Replay shards: training samples of finished games in one compressed `.npz` file.
//!
//! # Format (version 5; versions 1 to 4 are still read, versions 1 to 3 as xiangqi shards)
//! A shard is a zip of `.npy` arrays (numpy's `np.savez_compressed` layout). `N` is the number
//! of samples, `M` the total number of policy entries.
//!
//! | array | dtype | shape | content |
//! |---|---|---|---|
//! | `format_version` | u32 | `[1]` | [`FORMAT_VERSION`] (5) |
//! | `game` | u8 | `[1]` | the game ([`GameKind::code`]): 0 = xiangqi, 1 = janggi (absent before version 4: xiangqi) |
//! | `rules` | u8 | `[1]` | the rule set ([`GameRules::rules_code`](crate::GameRules::rules_code)): xiangqi 0 = `asian`, 1 = `simple`; janggi 0 = `site`, 1 = `traditional` |
//! | `boards` | u8 | `[N, 90]` | piece codes ([`xiangqi::env::encode_board_compact`]): 0 empty, 1–7 the first player's (Red's, Cho's) general, advisor or guard, elephant, horse, chariot, cannon, soldier, 8–14 the same for the second player (Black, Han); index = rank · 9 + file, rank 0 = the first player's home rank |
//! | `turn` | u8 | `[N]` | side to move: 0 the first player (Red, Cho), 1 the second (Black, Han) |
//! | `halfmove_clock` | u16 | `[N]` | plies since the last capture |
//! | `repeated` | u8 | `[N]` | 1 if the position occurred before in its game |
//! | `result` | i8 | `[N]` | final result for the side to move: +1 win, 0 draw, −1 loss |
//! | `full_search` | u8 | `[N]` | 1 = full search, a policy target; 0 = cheap search (value only) |
//! | `root_value` | f32 | `[N]` | the search's value for the side to move, in `[-1, 1]` |
//! | `game_id` | u64 | `[N]` | the game's number among its worker's games |
//! | `worker` | u64 | `[N]` | the self-play worker that played the game ([`LOCAL_WORKER`] = the trainer's own self-play; read as such from versions 1–2) |
//! | `generation` | u32 | `[N]` | the net that played the game: the trainer's iteration count when it was published (0 = the initial net); [`UNKNOWN_GENERATION`] when unknown (versions 1–2) |
//! | `ply` | u16 | `[N]` | plies from the game's start position |
//! | `ending` | u8 | `[N]` | how the sample's game ended: [`xiangqi::OutcomeReason::index`] (0 `checkmate` … 8 `resignation`, 9 `length_cap`); 255 unknown (read from version 1) |
//! | `game_plies` | u16 | `[N]` | the length of the sample's game in plies (0 unknown): plies left = `game_plies − ply` |
//! | `final_material` | i16 | `[N]` | the material balance of the game's final position for the sample's side to move, in half-pawns ([`Material::material_half_pawns`](crate::Material::material_half_pawns)); [`UNKNOWN_MATERIAL`] when unknown |
//! | `policy_surprise` | f32 | `[N]` | the search's [policy surprise](crate::SearchResult::policy_surprise): `KL(policy ‖ network prior)` in nats, 0 to [`MAX_POLICY_SURPRISE`](crate::MAX_POLICY_SURPRISE) (18.5); [`UNKNOWN_SURPRISE`] (−1) when unknown (imported games, relabelled samples; read as such from versions 1–4) |
//! | `policy_offsets` | u32 | `[N + 1]` | sample `i`'s policy is entries `policy_offsets[i]..policy_offsets[i + 1]` (CSR) |
//! | `policy_moves` | u16 | `[M]` | every legal move of the sample, as [`xiangqi::Move::to_u16`]: `from + 128 · to`, point = rank · 9 + file (a janggi pass: from = to = the general's point) |
//! | `policy_probs` | f32 | `[M]` | the search policy (sums to 1 per sample; entries may be 0) |
//!
//! Reading a sample with numpy:
//! ```python
//! s = np.load("shard-000000.npz"); i = 0; lo, hi = s["policy_offsets"][i:i + 2]
//! board = s["boards"][i].reshape(10, 9)[::-1]  # rank 9 (Black's home) at the top
//! print(board, s["result"][i], s["policy_moves"][lo:hi] & 127, s["policy_moves"][lo:hi] >> 7, s["policy_probs"][lo:hi])
//! ```
//!
//! # Atomic writes
//! [`write_shard`] writes `NAME.npz.tmp` in the target directory, flushes and syncs it, then
//! renames it to `NAME.npz`: a reader sees a whole shard or none. [`list_shards`] ignores
//! `*.tmp` files, [`read_shard`] refuses them, and a truncated file fails to open as a zip
//! archive or its checksums, so an interrupted write is never read as valid.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2, Ix1, Ix2};
use ndarray_npy::npy::header::Header;
use ndarray_npy::{
    NpzWriter, ReadNpyError, ReadNpyExt, ReadNpzError, ReadableElement, WriteNpzError,
};
use thiserror::Error;
use xiangqi::env::{PlaneInputs, decode_board_compact};
use xiangqi::{Color, Move};

use crate::game::{GameEnv, GameKind};
use crate::record::GameRecord;
use crate::search::MAX_POLICY_SURPRISE;

/// The shard format version this crate writes; it reads this one and versions 1 (which lacks
/// `ending`, `game_plies` and `final_material`: they read as unknown), 2 (which lacks
/// `worker` and `generation`: they read as [`LOCAL_WORKER`] and [`UNKNOWN_GENERATION`]) and 3
/// (which lacks `game`: xiangqi, the only game then); version 4 lacks `policy_surprise` (read as
/// unknown, [`UNKNOWN_SURPRISE`]).
pub const FORMAT_VERSION: u32 = 5;

/// `worker` of games played by the trainer's own self-play.
pub const LOCAL_WORKER: u64 = 0;
/// `generation` of a sample whose net is not recorded (versions 1–2).
pub const UNKNOWN_GENERATION: u32 = u32::MAX;

/// `ending` of a sample whose game's ending is not recorded (a version 1 shard).
pub const UNKNOWN_ENDING: u8 = 255;
/// `final_material` of a sample whose game's final material is not recorded.
pub const UNKNOWN_MATERIAL: i16 = i16::MIN;
/// `policy_surprise` of a sample whose search had no network prior (an imported game) or whose
/// shard predates the column (versions 1–4).
pub const UNKNOWN_SURPRISE: f32 = -1.0;

/// Why a shard could not be written or read.
#[derive(Debug, Error)]
pub enum ShardError {
    /// The file named could not be used; the cause follows.
    #[error("shard '{}': {source}", path.display())]
    File {
        /// The shard's path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<ShardError>,
    },
    /// An I/O error.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// The file is not a complete npz archive (a truncated or interrupted write).
    #[error("not a complete npz archive (truncated or interrupted write?): {0}")]
    Archive(ReadNpzError),
    /// An array is missing, of the wrong type or shape, or fails its checksum.
    #[error("array '{name}': {source}")]
    Array {
        /// The array.
        name: &'static str,
        /// The cause.
        #[source]
        source: ReadNpzError,
    },
    /// An array's contents break the format.
    #[error("array '{name}': {reason}")]
    Invalid {
        /// The array.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A format version this reader does not know.
    #[error("format version {found}; this reader knows versions 1 to {FORMAT_VERSION}")]
    Version {
        /// The version in the file.
        found: u32,
    },
    /// The shard holds another game's samples than the reader expects.
    #[error("the shard holds {found} samples, not {expected} (a shard of another game's run?)")]
    WrongGame {
        /// The game of the shard.
        found: GameKind,
        /// The game expected.
        expected: GameKind,
    },
    /// A temporary file of an unfinished write.
    #[error("'{}' is the temporary file of an unfinished write", path.display())]
    Temporary {
        /// The path.
        path: PathBuf,
    },
    /// A shard path must end in `.npz`.
    #[error("'{}' does not end in .npz", path.display())]
    NotNpz {
        /// The path.
        path: PathBuf,
    },
    /// Writing the archive failed.
    #[error("writing the archive: {0}")]
    Write(#[from] WriteNpzError),
}

/// The samples of a shard, as arrays (see the [module documentation](self) for the format).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shard {
    /// The game of the samples.
    pub game: GameKind,
    /// The rule set of the games ([`GameRules::rules_code`](crate::GameRules::rules_code) of
    /// `game`).
    pub rules: u8,
    /// Piece codes, 90 per sample.
    pub boards: Vec<[u8; 90]>,
    /// Side to move: 0 Red, 1 Black.
    pub turn: Vec<u8>,
    /// Plies since the last capture.
    pub halfmove_clock: Vec<u16>,
    /// 1 if the position occurred before in its game.
    pub repeated: Vec<u8>,
    /// Final result for the side to move: +1, 0, −1.
    pub result: Vec<i8>,
    /// 1 = full search (policy target), 0 = cheap search.
    pub full_search: Vec<u8>,
    /// The search's value for the side to move.
    pub root_value: Vec<f32>,
    /// The game's number in its run.
    pub game_id: Vec<u64>,
    /// Plies from the game's start.
    pub ply: Vec<u16>,
    /// CSR offsets into `policy_moves` / `policy_probs`; `len() + 1` entries, starting at 0.
    pub policy_offsets: Vec<u32>,
    /// Legal moves ([`Move::to_u16`]).
    pub policy_moves: Vec<u16>,
    /// Search policy over `policy_moves`.
    pub policy_probs: Vec<f32>,
    /// How each sample's game ended ([`xiangqi::OutcomeReason::index`], or [`UNKNOWN_ENDING`]).
    pub ending: Vec<u8>,
    /// Each sample's game length in plies (0 unknown).
    pub game_plies: Vec<u16>,
    /// The final position's material balance for the sample's side to move, in half-pawns
    /// ([`UNKNOWN_MATERIAL`] unknown).
    pub final_material: Vec<i16>,
    /// The worker that played each sample's game ([`LOCAL_WORKER`] for the trainer's own).
    pub worker: Vec<u64>,
    /// The generation of the net that played each sample's game ([`UNKNOWN_GENERATION`]).
    pub generation: Vec<u32>,
    /// The search's policy surprise in nats (0 to [`MAX_POLICY_SURPRISE`]); [`UNKNOWN_SURPRISE`]
    /// when unknown.
    pub policy_surprise: Vec<f32>,
}

/// One sample of a [`Shard`], borrowed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleRef<'a> {
    /// What the network sees.
    pub inputs: PlaneInputs,
    /// Legal moves ([`Move::to_u16`]).
    pub moves: &'a [u16],
    /// Search policy over `moves`.
    pub probs: &'a [f32],
    /// Final result for the side to move: +1, 0, −1.
    pub result: i8,
    /// Whether the policy is a training target.
    pub full_search: bool,
    /// The search's value for the side to move.
    pub root_value: f32,
    /// The game's number in its run.
    pub game_id: u64,
    /// Plies from the game's start.
    pub ply: u16,
    /// How the game ended ([`xiangqi::OutcomeReason::index`]), or [`UNKNOWN_ENDING`].
    pub ending: u8,
    /// The game's length in plies (0 unknown).
    pub game_plies: u16,
    /// The final material balance for the side to move in half-pawns, or [`UNKNOWN_MATERIAL`].
    pub final_material: i16,
    /// The worker that played the game.
    pub worker: u64,
    /// The generation of the net that played the game, or [`UNKNOWN_GENERATION`].
    pub generation: u32,
    /// The search's policy surprise in nats (0 to [`MAX_POLICY_SURPRISE`]); `None` when unknown.
    pub policy_surprise: Option<f32>,
}

impl Shard {
    /// An empty shard for games of `G` under `rules`.
    pub fn new<G: GameEnv>(rules: G::Rules) -> Shard {
        Shard {
            game: G::KIND,
            rules: G::rules_code(rules),
            policy_offsets: vec![0],
            ..Shard::default()
        }
    }

    /// An empty shard for games of `game` under the rule set of code `rules`
    /// ([`GameRules::rules_code`](crate::GameRules::rules_code)).
    pub fn empty(game: GameKind, rules: u8) -> Shard {
        Shard { game, rules, policy_offsets: vec![0], ..Shard::default() }
    }

    /// The rule set, if the shard is of game `G`.
    ///
    /// # Errors
    /// [`ShardError::WrongGame`] for another game's shard; [`ShardError::Invalid`] for an
    /// unknown rule-set code.
    pub fn rules_of<G: GameEnv>(&self) -> Result<G::Rules, ShardError> {
        self.expect_game(G::KIND)?;
        G::rules_from_code(self.rules).ok_or_else(|| ShardError::Invalid {
            name: "rules",
            reason: format!("{} is no {} rule set", self.rules, G::KIND),
        })
    }

    /// Checks that the shard holds samples of `game`.
    ///
    /// # Errors
    /// [`ShardError::WrongGame`] if it holds another game's.
    pub fn expect_game(&self, game: GameKind) -> Result<(), ShardError> {
        if self.game == game {
            Ok(())
        } else {
            Err(ShardError::WrongGame { found: self.game, expected: game })
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.result.len()
    }

    /// Whether the shard holds no sample.
    pub fn is_empty(&self) -> bool {
        self.result.is_empty()
    }

    /// Appends every sample of a finished game, its result seen from each sample's side to move,
    /// as played by the trainer's own self-play ([`LOCAL_WORKER`]) with net `generation`.
    ///
    /// # Panics
    /// If the shard is of another game than `G` (a programming error: shards are made per run).
    pub fn push_game<G: GameEnv>(&mut self, game: &GameRecord<G>, generation: u32) {
        self.push_game_of(game, LOCAL_WORKER, generation);
    }

    /// [`Shard::push_game`] for a game of `worker`.
    ///
    /// # Panics
    /// If the shard is of another game than `G` (a programming error: shards are made per run).
    pub fn push_game_of<G: GameEnv>(&mut self, game: &GameRecord<G>, worker: u64, generation: u32) {
        assert_eq!(
            self.game,
            G::KIND,
            "Shard::push_game_of: a {} game in a {} shard",
            G::KIND,
            self.game
        );
        if self.policy_offsets.is_empty() {
            self.policy_offsets.push(0);
        }
        let red_material = game.final_material();
        let game_plies = u16::try_from(game.moves.len()).unwrap_or(u16::MAX);
        for s in &game.samples {
            self.ending.push(game.outcome.reason().index() as u8);
            self.game_plies.push(game_plies);
            self.final_material.push(match (red_material, s.inputs.turn) {
                (None, _) => UNKNOWN_MATERIAL,
                (Some(m), Color::Red) => m,
                (Some(m), Color::Black) => -m,
            });
            self.boards.push(s.inputs.board);
            self.turn.push(s.inputs.turn.index() as u8);
            self.halfmove_clock.push(s.inputs.halfmove_clock.min(u32::from(u16::MAX)) as u16);
            self.repeated.push(u8::from(s.inputs.repeated));
            self.result.push(game.result_for(s.inputs.turn));
            self.full_search.push(u8::from(s.full_search));
            self.root_value.push(s.root_value);
            self.policy_surprise.push(s.policy_surprise.unwrap_or(UNKNOWN_SURPRISE));
            self.game_id.push(game.game_id);
            self.worker.push(worker);
            self.generation.push(generation);
            self.ply.push(s.ply.min(u32::from(u16::MAX)) as u16);
            self.policy_moves.extend_from_slice(&s.moves);
            self.policy_probs.extend_from_slice(&s.probs);
            self.policy_offsets.push(self.policy_moves.len() as u32);
        }
    }

    /// Sample `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn sample(&self, i: usize) -> SampleRef<'_> {
        let (lo, hi) = (self.policy_offsets[i] as usize, self.policy_offsets[i + 1] as usize);
        SampleRef {
            inputs: PlaneInputs {
                board: self.boards[i],
                turn: if self.turn[i] == 0 { Color::Red } else { Color::Black },
                halfmove_clock: u32::from(self.halfmove_clock[i]),
                repeated: self.repeated[i] != 0,
            },
            moves: &self.policy_moves[lo..hi],
            probs: &self.policy_probs[lo..hi],
            result: self.result[i],
            full_search: self.full_search[i] != 0,
            root_value: self.root_value[i],
            game_id: self.game_id[i],
            ply: self.ply[i],
            ending: self.ending[i],
            game_plies: self.game_plies[i],
            final_material: self.final_material[i],
            worker: self.worker[i],
            generation: self.generation[i],
            policy_surprise: Some(self.policy_surprise[i]).filter(|&s| s != UNKNOWN_SURPRISE),
        }
    }

    /// Appends every sample of `other` (whose rules must be this shard's).
    ///
    /// # Errors
    /// [`ShardError::Invalid`] if the rule sets differ.
    pub fn append(&mut self, other: &Shard) -> Result<(), ShardError> {
        other.expect_game(self.game)?;
        if other.rules != self.rules {
            return Err(ShardError::Invalid {
                name: "rules",
                reason: format!(
                    "cannot merge games of rule set {} into a shard of rule set {}",
                    other.rules, self.rules
                ),
            });
        }
        if self.policy_offsets.is_empty() {
            self.policy_offsets.push(0);
        }
        let base = self.policy_moves.len() as u32;
        self.boards.extend_from_slice(&other.boards);
        self.turn.extend_from_slice(&other.turn);
        self.halfmove_clock.extend_from_slice(&other.halfmove_clock);
        self.repeated.extend_from_slice(&other.repeated);
        self.result.extend_from_slice(&other.result);
        self.full_search.extend_from_slice(&other.full_search);
        self.root_value.extend_from_slice(&other.root_value);
        self.game_id.extend_from_slice(&other.game_id);
        self.ply.extend_from_slice(&other.ply);
        self.policy_offsets.extend(other.policy_offsets.iter().skip(1).map(|&o| base + o));
        self.policy_moves.extend_from_slice(&other.policy_moves);
        self.policy_probs.extend_from_slice(&other.policy_probs);
        self.ending.extend_from_slice(&other.ending);
        self.game_plies.extend_from_slice(&other.game_plies);
        self.final_material.extend_from_slice(&other.final_material);
        self.worker.extend_from_slice(&other.worker);
        self.generation.extend_from_slice(&other.generation);
        self.policy_surprise.extend_from_slice(&other.policy_surprise);
        Ok(())
    }

    /// The distinct games of the shard, as `(worker, game_id)` in order.
    pub fn games(&self) -> std::collections::BTreeSet<(u64, u64)> {
        self.worker.iter().copied().zip(self.game_id.iter().copied()).collect()
    }

    /// Checks every invariant of the format.
    ///
    /// # Errors
    /// [`ShardError::Invalid`] naming the first array that breaks one.
    pub fn validate(&self) -> Result<(), ShardError> {
        let n = self.len();
        let invalid = |name, reason: String| Err(ShardError::Invalid { name, reason });
        let lens = [
            ("boards", self.boards.len()),
            ("turn", self.turn.len()),
            ("halfmove_clock", self.halfmove_clock.len()),
            ("repeated", self.repeated.len()),
            ("full_search", self.full_search.len()),
            ("root_value", self.root_value.len()),
            ("policy_surprise", self.policy_surprise.len()),
            ("game_id", self.game_id.len()),
            ("ply", self.ply.len()),
            ("ending", self.ending.len()),
            ("game_plies", self.game_plies.len()),
            ("final_material", self.final_material.len()),
            ("worker", self.worker.len()),
            ("generation", self.generation.len()),
        ];
        for (name, len) in lens {
            if len != n {
                return invalid(name, format!("has {len} samples, 'result' has {n}"));
            }
        }
        if self.policy_offsets.len() != n + 1 {
            return invalid(
                "policy_offsets",
                format!("has {} entries, expected {}", self.policy_offsets.len(), n + 1),
            );
        }
        let m = self.policy_moves.len();
        if self.policy_probs.len() != m {
            return invalid(
                "policy_probs",
                format!("has {} entries, expected {m}", self.policy_probs.len()),
            );
        }
        if self.policy_offsets[0] != 0 || self.policy_offsets[n] as usize != m {
            return invalid("policy_offsets", format!("must run from 0 to {m}"));
        }
        if let Some(i) = self.policy_offsets.windows(2).position(|w| w[0] > w[1]) {
            return invalid("policy_offsets", format!("decreases at sample {i}"));
        }
        for (i, board) in self.boards.iter().enumerate() {
            if let Err(e) = decode_board_compact(board) {
                return invalid("boards", format!("sample {i}: {e}"));
            }
        }
        let flag = |name, v: &[u8]| match v.iter().position(|&x| x > 1) {
            Some(i) => invalid(name, format!("sample {i}: {} is not 0 or 1", v[i])),
            None => Ok(()),
        };
        if self.rules > 1 {
            return invalid("rules", format!("{} is not 0 or 1", self.rules));
        }
        flag("turn", &self.turn)?;
        flag("repeated", &self.repeated)?;
        flag("full_search", &self.full_search)?;
        let reasons = xiangqi::OutcomeReason::ALL.len();
        if let Some(i) =
            self.ending.iter().position(|&e| e != UNKNOWN_ENDING && usize::from(e) >= reasons)
        {
            return invalid("ending", format!("sample {i}: {} is not an ending", self.ending[i]));
        }
        if let Some(i) = self.result.iter().position(|r| !(-1..=1).contains(r)) {
            return invalid("result", format!("sample {i}: {} is not -1, 0 or 1", self.result[i]));
        }
        if let Some(i) = self.root_value.iter().position(|v| !(-1.0..=1.0).contains(v)) {
            return invalid(
                "root_value",
                format!("sample {i}: {} is outside [-1, 1]", self.root_value[i]),
            );
        }
        if let Some(i) = self
            .policy_surprise
            .iter()
            .position(|&v| !(v == UNKNOWN_SURPRISE || (0.0..=MAX_POLICY_SURPRISE).contains(&v)))
        {
            return invalid(
                "policy_surprise",
                format!(
                    "sample {i}: {} is not a policy surprise (0 to {MAX_POLICY_SURPRISE} nats, or -1 \
                     for unknown)",
                    self.policy_surprise[i]
                ),
            );
        }
        if let Some(i) = self.policy_moves.iter().position(|&c| Move::from_u16(c).is_none()) {
            return invalid(
                "policy_moves",
                format!("entry {i}: {} is not a move", self.policy_moves[i]),
            );
        }
        if let Some(i) = self.policy_probs.iter().position(|p| !p.is_finite() || *p < 0.0) {
            return invalid(
                "policy_probs",
                format!("entry {i}: {} is not a probability", self.policy_probs[i]),
            );
        }
        Ok(())
    }
}

/// Writes `shard` as an npz archive to `writer` and returns the writer.
///
/// # Errors
/// [`ShardError::Write`] if writing fails, [`ShardError::Invalid`] if the shard breaks the format.
pub fn write_shard_to<W: Write + Seek>(writer: W, shard: &Shard) -> Result<W, ShardError> {
    shard.validate()?;
    let n = shard.len();
    let mut npz = NpzWriter::new_compressed(writer);
    npz.add_array("format_version", &Array1::from_vec(vec![FORMAT_VERSION]))?;
    npz.add_array("game", &Array1::from_vec(vec![shard.game.code()]))?;
    npz.add_array("rules", &Array1::from_vec(vec![shard.rules]))?;
    let flat: Vec<u8> = shard.boards.iter().flatten().copied().collect();
    let boards = Array2::from_shape_vec((n, 90), flat)
        .map_err(|e| ShardError::Invalid { name: "boards", reason: e.to_string() })?;
    npz.add_array("boards", &boards)?;
    npz.add_array("turn", &Array1::from_vec(shard.turn.clone()))?;
    npz.add_array("halfmove_clock", &Array1::from_vec(shard.halfmove_clock.clone()))?;
    npz.add_array("repeated", &Array1::from_vec(shard.repeated.clone()))?;
    npz.add_array("result", &Array1::from_vec(shard.result.clone()))?;
    npz.add_array("full_search", &Array1::from_vec(shard.full_search.clone()))?;
    npz.add_array("root_value", &Array1::from_vec(shard.root_value.clone()))?;
    npz.add_array("game_id", &Array1::from_vec(shard.game_id.clone()))?;
    npz.add_array("ply", &Array1::from_vec(shard.ply.clone()))?;
    npz.add_array("policy_offsets", &Array1::from_vec(shard.policy_offsets.clone()))?;
    npz.add_array("policy_moves", &Array1::from_vec(shard.policy_moves.clone()))?;
    npz.add_array("policy_probs", &Array1::from_vec(shard.policy_probs.clone()))?;
    npz.add_array("ending", &Array1::from_vec(shard.ending.clone()))?;
    npz.add_array("game_plies", &Array1::from_vec(shard.game_plies.clone()))?;
    npz.add_array("final_material", &Array1::from_vec(shard.final_material.clone()))?;
    npz.add_array("worker", &Array1::from_vec(shard.worker.clone()))?;
    npz.add_array("generation", &Array1::from_vec(shard.generation.clone()))?;
    npz.add_array("policy_surprise", &Array1::from_vec(shard.policy_surprise.clone()))?;
    Ok(npz.finish()?)
}

/// The temporary path a write of `path` goes through: `NAME.npz.tmp` beside it.
pub fn temp_path(path: &Path) -> PathBuf {
    suffixed(path, ".tmp")
}

/// `path` with `suffix` added to its file name, in the same folder (`NAME` → `NAME<suffix>`):
/// where a file is written before it is renamed into place.
pub fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Writes `shard` to `path` (which must end in `.npz`) atomically: to `NAME.npz.tmp` in the
/// same directory, flushed and synced, then renamed over `path`.
///
/// # Errors
/// [`ShardError::File`] naming the path, with the I/O or format error inside; the temporary
/// file is removed on failure.
pub fn write_shard(path: &Path, shard: &Shard) -> Result<(), ShardError> {
    let wrap = |e: ShardError| ShardError::File { path: path.to_path_buf(), source: Box::new(e) };
    if path.extension().is_none_or(|e| e != "npz") {
        return Err(wrap(ShardError::NotNpz { path: path.to_path_buf() }));
    }
    let tmp = temp_path(path);
    let result = (|| -> Result<(), ShardError> {
        let file = File::create(&tmp)?;
        let mut w = write_shard_to(BufWriter::new(file), shard)?;
        w.flush()?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        // Make the rename durable too (best effort: not every platform syncs directories).
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(wrap)
}

/// How many times their compressed size a shard's arrays may declare in all (plus 1 MiB):
/// self-play shards inflate about 7 times (measured: 112,504 bytes of arrays in 13,696
/// compressed), imported ones about 16 (1,186,705 in 73,200: one-hot policies and constant
/// columns compress best).
pub const MAX_INFLATION: u64 = 64;

/// The most a shard's arrays may declare in all, however well they compress: 1 GiB, some
/// 2.5 million samples (an imported shard of 1,000 games holds about 100,000).
pub const MAX_SHARD_BYTES: u64 = 1 << 30;

/// The arrays a shard holds (entries `NAME` or `NAME.npy`), all versions.
const ARRAYS: [&str; 21] = [
    "format_version",
    "game",
    "rules",
    "boards",
    "turn",
    "halfmove_clock",
    "repeated",
    "result",
    "full_search",
    "root_value",
    "game_id",
    "ply",
    "policy_offsets",
    "policy_moves",
    "policy_probs",
    "ending",
    "game_plies",
    "final_material",
    "worker",
    "generation",
    "policy_surprise",
];

/// The bytes a shard whose entries hold `compressed` bytes may declare.
fn inflation_limit(compressed: u64) -> u64 {
    compressed.saturating_mul(MAX_INFLATION).saturating_add(1 << 20).min(MAX_SHARD_BYTES)
}

/// An npy entry's bytes, read without trusting any size the file declares: the zip's size of
/// the entry only caps the read (the buffer grows with the bytes that really come, so memory is
/// bounded by the archive's real contents), and the npy header's shape must account for exactly
/// the data bytes that follow it. Only then is the array parsed, so that ndarray-npy, which
/// allocates what the header declares before reading, never allocates more than the file holds.
fn read_entry<R: Read + Seek, T: ReadableElement, D: ndarray::Dimension>(
    zip: &mut zip::ZipArchive<R>,
    name: &'static str,
) -> Result<ndarray::Array<T, D>, ShardError> {
    let array = |source: ReadNpzError| ShardError::Array { name, source };
    let invalid = |reason: String| ShardError::Invalid { name, reason };
    let file = format!("{name}.npy");
    let entry = if zip.index_for_name(name).is_some() { name } else { file.as_str() };
    let mut file = zip.by_name(entry).map_err(|e| array(e.into()))?;
    let declared = file.size();
    let mut bytes = Vec::new();
    (&mut file)
        .take(declared.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| array(ReadNpyError::from(e).into()))?;
    if bytes.len() as u64 > declared {
        return Err(invalid(format!("holds more than the {declared} bytes its archive declares")));
    }
    if bytes.len() as u64 != declared {
        return Err(invalid(format!(
            "holds {} bytes, its archive declares {declared}",
            bytes.len()
        )));
    }
    // The npy preamble: magic, version, then the header's length (2 bytes in version 1, 4 after).
    let header_end = match bytes.get(..8) {
        Some([0x93, b'N', b'U', b'M', b'P', b'Y', 1, _]) => {
            bytes.get(8..10).map(|l| 10 + usize::from(u16::from_le_bytes([l[0], l[1]])))
        }
        Some([0x93, b'N', b'U', b'M', b'P', b'Y', 2 | 3, _]) => {
            bytes.get(8..12).map(|l| 12 + u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
        }
        _ => return Err(invalid("not an npy array (no npy magic and version)".into())),
    };
    let Some(header_end) = header_end.filter(|&end| end <= bytes.len()) else {
        return Err(invalid(format!("its npy header runs past the entry's {} bytes", bytes.len())));
    };
    let header = Header::from_reader(&mut &bytes[..header_end])
        .map_err(|e| array(ReadNpyError::from(e).into()))?;
    let data = bytes.len() - header_end;
    let needed = header.shape.iter().try_fold(std::mem::size_of::<T>(), |n, &d| n.checked_mul(d));
    if needed != Some(data) {
        // The dtype is named too: the likeliest cause is an array of another element size
        // (numpy's default float64 where the format has float32).
        return Err(invalid(format!(
            "its header declares shape {:?} of dtype {} ({} bytes as the format's {}), the \
             entry holds {data} bytes of data",
            header.shape,
            header.type_descriptor,
            needed.map_or("more than 2^64".to_string(), |n| n.to_string()),
            std::any::type_name::<T>()
        )));
    }
    ndarray::Array::<T, D>::read_npy(bytes.as_slice()).map_err(|e| array(e.into()))
}

fn read_array<R: Read + Seek, T: ReadableElement>(
    zip: &mut zip::ZipArchive<R>,
    name: &'static str,
) -> Result<Vec<T>, ShardError> {
    Ok(read_entry::<R, T, Ix1>(zip, name)?.into_iter().collect())
}

/// Reads and validates a shard from `reader`.
///
/// # Errors
/// [`ShardError::Archive`] for a truncated or damaged archive, [`ShardError::Array`] for a
/// missing or mistyped array, [`ShardError::Version`] for another format version,
/// [`ShardError::Invalid`] for contents that break the format.
pub fn read_shard_from<R: Read + Seek>(mut reader: R) -> Result<Shard, ShardError> {
    let archive = |e: std::io::Error| ShardError::Archive(zip::result::ZipError::Io(e).into());
    let archive_len = reader.seek(std::io::SeekFrom::End(0)).map_err(archive)?;
    reader.seek(std::io::SeekFrom::Start(0)).map_err(archive)?;
    let mut npz =
        zip::ZipArchive::new(reader).map_err(|e| ShardError::Archive(ReadNpzError::from(e)))?;
    // A compressed entry that inflates to what it declares passes every check of `read_entry`,
    // however large (a small file of deflated zeros declaring 10^9 samples): the sizes the
    // archive declares are bounded by its entries' compressed sizes (not the file's length,
    // which bytes no entry uses can pad) before anything is inflated.
    // Only the entries the reader reads count: another entry (stored noise) buys no room.
    let (mut inflated, mut compressed) = (0u64, 0u64);
    for i in 0..npz.len() {
        let entry = npz.by_index_raw(i).map_err(|e| ShardError::Archive(e.into()))?;
        let name = entry.name();
        if ARRAYS.contains(&name.strip_suffix(".npy").unwrap_or(name)) {
            inflated = inflated.saturating_add(entry.size());
            compressed = compressed.saturating_add(entry.compressed_size().min(archive_len));
        }
    }
    let limit = inflation_limit(compressed);
    if inflated > limit {
        return Err(ShardError::Invalid {
            name: "archive",
            reason: format!(
                "its arrays declare {inflated} bytes, more than the {limit} its {compressed} \
                 compressed bytes may hold ({MAX_INFLATION} times, at most {MAX_SHARD_BYTES} in \
                 all; shards inflate 6 to 16 times): refused unread"
            ),
        });
    }
    let version: Vec<u32> = read_array(&mut npz, "format_version")?;
    if version.len() != 1 {
        return Err(ShardError::Invalid {
            name: "format_version",
            reason: "must hold one value".into(),
        });
    }
    if !(1..=FORMAT_VERSION).contains(&version[0]) {
        return Err(ShardError::Version { found: version[0] });
    }
    let game = if version[0] >= 4 {
        let game: Vec<u8> = read_array(&mut npz, "game")?;
        match game.as_slice() {
            [code] => GameKind::from_code(*code).ok_or_else(|| ShardError::Invalid {
                name: "game",
                reason: format!("{code} is no game (0 = xiangqi, 1 = janggi)"),
            })?,
            _ => {
                return Err(ShardError::Invalid {
                    name: "game",
                    reason: "must hold one value".into(),
                });
            }
        }
    } else {
        GameKind::Xiangqi
    };
    let rules: Vec<u8> = read_array(&mut npz, "rules")?;
    let rules = match rules.as_slice() {
        [r @ (0 | 1)] => *r,
        _ => {
            return Err(ShardError::Invalid { name: "rules", reason: "must be [0] or [1]".into() });
        }
    };
    let boards = read_entry::<_, u8, Ix2>(&mut npz, "boards")?;
    if boards.ncols() != 90 {
        return Err(ShardError::Invalid {
            name: "boards",
            reason: format!("has shape {:?}, expected [N, 90]", boards.shape()),
        });
    }
    let boards = boards
        .outer_iter()
        .map(|row| {
            let mut b = [0u8; 90];
            b.iter_mut().zip(row.iter()).for_each(|(d, s)| *d = *s);
            b
        })
        .collect();
    let mut shard = Shard {
        game,
        rules,
        boards,
        turn: read_array(&mut npz, "turn")?,
        halfmove_clock: read_array(&mut npz, "halfmove_clock")?,
        repeated: read_array(&mut npz, "repeated")?,
        result: read_array(&mut npz, "result")?,
        full_search: read_array(&mut npz, "full_search")?,
        root_value: read_array(&mut npz, "root_value")?,
        game_id: read_array(&mut npz, "game_id")?,
        ply: read_array(&mut npz, "ply")?,
        policy_offsets: read_array(&mut npz, "policy_offsets")?,
        policy_moves: read_array(&mut npz, "policy_moves")?,
        policy_probs: read_array(&mut npz, "policy_probs")?,
        ending: Vec::new(),
        game_plies: Vec::new(),
        final_material: Vec::new(),
        worker: Vec::new(),
        generation: Vec::new(),
        policy_surprise: Vec::new(),
    };
    if version[0] >= 2 {
        shard.ending = read_array(&mut npz, "ending")?;
        shard.game_plies = read_array(&mut npz, "game_plies")?;
        shard.final_material = read_array(&mut npz, "final_material")?;
    } else {
        let n = shard.len();
        shard.ending = vec![UNKNOWN_ENDING; n];
        shard.game_plies = vec![0; n];
        shard.final_material = vec![UNKNOWN_MATERIAL; n];
    }
    if version[0] >= 3 {
        shard.worker = read_array(&mut npz, "worker")?;
        shard.generation = read_array(&mut npz, "generation")?;
    } else {
        let n = shard.len();
        shard.worker = vec![LOCAL_WORKER; n];
        shard.generation = vec![UNKNOWN_GENERATION; n];
    }
    shard.policy_surprise = if version[0] >= 5 {
        read_array(&mut npz, "policy_surprise")?
    } else {
        vec![UNKNOWN_SURPRISE; shard.len()]
    };
    shard.validate()?;
    Ok(shard)
}

/// Reads and validates the shard at `path`. Refuses `*.tmp` files (unfinished writes).
///
/// # Errors
/// [`ShardError::File`] naming the path, with the cause inside (see [`read_shard_from`]).
pub fn read_shard(path: &Path) -> Result<Shard, ShardError> {
    let wrap = |e: ShardError| ShardError::File { path: path.to_path_buf(), source: Box::new(e) };
    if path.extension().is_some_and(|e| e == "tmp") {
        return Err(wrap(ShardError::Temporary { path: path.to_path_buf() }));
    }
    let file = File::open(path).map_err(|e| wrap(e.into()))?;
    read_shard_from(BufReader::new(file)).map_err(wrap)
}

/// The complete shards (`*.npz`) in `dir`, sorted by name. Temporary files of unfinished writes
/// (`*.npz.tmp`) are never listed.
///
/// # Errors
/// I/O errors reading the directory.
pub fn list_shards(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "npz") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty, valid shard's archive with the entry `name` replaced by `npy`.
    fn with_entry(name: &str, npy: &[u8]) -> Vec<u8> {
        let valid =
            write_shard_to(io::Cursor::new(Vec::new()), &Shard::empty(GameKind::Xiangqi, 0))
                .unwrap()
                .into_inner();
        let mut from = zip::ZipArchive::new(io::Cursor::new(valid)).unwrap();
        let mut to = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let mut replaced = false;
        for i in 0..from.len() {
            let mut entry = from.by_index(i).unwrap();
            let entry_name = entry.name().to_string();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            if entry_name.strip_suffix(".npy") == Some(name) {
                bytes = npy.to_vec();
                replaced = true;
            }
            to.start_file(entry_name, zip::write::SimpleFileOptions::default()).unwrap();
            to.write_all(&bytes).unwrap();
        }
        assert!(replaced, "no entry {name}");
        to.finish().unwrap().into_inner()
    }

    /// An npy array of version 1 with this dtype and shape and `data` after its header.
    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn read_error(archive: Vec<u8>) -> String {
        read_shard_from(io::Cursor::new(archive)).unwrap_err().to_string()
    }

    #[test]
    fn a_shard_read_back_from_hand_made_entries_is_the_same() {
        // The control: the hand-made entries of an empty shard read as one.
        let archive = with_entry("boards", &npy("|u1", "(0, 90)", &[]));
        assert_eq!(
            read_shard_from(io::Cursor::new(archive)).unwrap(),
            Shard::empty(GameKind::Xiangqi, 0)
        );
        let archive = with_entry("turn", &npy("|u1", "(0,)", &[]));
        assert!(read_shard_from(io::Cursor::new(archive)).is_ok());
    }

    #[test]
    fn arrays_that_inflate_far_beyond_the_archive_are_refused_before_inflating() {
        // A million boards of zeros: 90 MB that deflate to about 90 kB and truly hold what
        // their header declares, so only the archive's size can tell.
        let bomb = with_entry("boards", &npy("|u1", "(1000000, 90)", &vec![0; 90_000_000]));
        assert!(bomb.len() < 1 << 20, "the test's archive is {} bytes", bomb.len());
        let e = read_error(bomb);
        assert!(e.contains("'archive'") && e.contains("refused unread"), "{e}");
        let declared: u64 = e
            .split("declare ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
            .expect("the declared size is named");
        assert!(declared >= 90_000_000, "{e}");
        // An entry the reader never reads (8 MB of stored noise) buys no room.
        let bomb = with_entry("boards", &npy("|u1", "(1000000, 90)", &vec![0; 90_000_000]));
        let mut from = zip::ZipArchive::new(io::Cursor::new(bomb)).unwrap();
        let mut to = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        for i in 0..from.len() {
            to.raw_copy_file(from.by_index_raw(i).unwrap()).unwrap();
        }
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        to.start_file("padding.bin", stored).unwrap();
        let noise: Vec<u8> =
            (0..8_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        to.write_all(&noise).unwrap();
        let padded = to.finish().unwrap().into_inner();
        assert!(padded.len() > 8_000_000);
        let e = read_error(padded);
        assert!(e.contains("'archive'") && e.contains("refused unread"), "{e}");
        // The absolute cap: a shard that compresses however well declares at most 1 GiB.
        assert_eq!(inflation_limit(u64::MAX / 2), MAX_SHARD_BYTES);
        assert_eq!(inflation_limit(1000), 64_000 + (1 << 20));
        // Real shards (self-play, imported, labelled) are read by the end-to-end tests of every
        // command: they inflate about 7 times, far within the bound.
    }

    #[test]
    fn a_header_that_declares_more_than_the_entry_holds_is_refused_before_allocating() {
        // (2^40, 90) bytes: reading what the header declares would abort the process.
        let e = read_error(with_entry("boards", &npy("|u1", "(1099511627776, 90)", &[0; 90])));
        assert!(
            e.contains("'boards'") && e.contains("1099511627776") && e.contains("90 bytes"),
            "{e}"
        );
        let e = read_error(with_entry("policy_probs", &npy("<f4", "(4611686018427387904,)", &[])));
        assert!(e.contains("'policy_probs'") && e.contains("more than 2^64"), "{e}");
        // One byte short, and a header length past the entry's end.
        let e = read_error(with_entry("turn", &npy("|u1", "(3,)", &[0, 0])));
        assert!(e.contains("'turn'") && e.contains("2 bytes of data"), "{e}");
        let mut long = npy("|u1", "(0,)", &[]);
        long[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
        let e = read_error(with_entry("turn", &long));
        assert!(e.contains("'turn'") && e.contains("runs past"), "{e}");
        let mut v2 = npy("|u1", "(0,)", &[]);
        v2[6] = 2;
        let e = read_error(with_entry("turn", &v2));
        assert!(e.contains("'turn'") && e.contains("runs past"), "{e}");
    }
}
