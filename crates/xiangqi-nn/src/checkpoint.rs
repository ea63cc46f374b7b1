//! Checkpoints: a directory holding the weights, the optimizer state and a manifest.
//!
//! ```text
//! <checkpoint>/
//!   manifest.toml   format version, encoding version, planes, policy size, network config,
//!                   training config, step counters, RNG state, and for every other file its
//!                   size and FNV-1a 64 checksum
//!   model.bpk       weights and batch-norm statistics (burnpack)
//!   optimizer.bpk   optimizer state (burnpack); absent from a weights-only checkpoint
//! ```
//!
//! A checkpoint is written into a temporary sibling directory, every file synced, and renamed
//! into place: a reader sees the old checkpoint or the new one, never half of one. Loading
//! checks, in this order, and refuses with a [`CheckpointError`] that says which and why: the
//! manifest parses and has a known format version; the encoding version, plane count and policy
//! size are this build's; the network is the one asked for (if one is asked for); every file
//! has its recorded size (else it is truncated) and checksum (else it is corrupted).
//!
//! Weights carry no device: a checkpoint saved from the trainer's autodiff device loads on a
//! plain device for inference ([`load_net`]).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use burn::module::Module;
use burn::store::ModuleRecord;
use burn::tensor::{Bytes, Device};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use xiangqi_search::{Encoding, GameKind, SearchConfig, StrengthTable};

use crate::config::{ConfigError, NetConfig, TrainConfig};
use crate::model::Net;
use crate::train::{RngState, Trainer};

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.toml";
/// The weights' file name.
pub const MODEL_FILE: &str = "model.bpk";
/// The optimizer state's file name.
pub const OPTIMIZER_FILE: &str = "optimizer.bpk";

/// Why a checkpoint could not be written or was refused.
#[derive(Debug, Error)]
pub enum CheckpointError {
    /// A file system operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// A directory was not written to, to keep what is in it.
    #[error("{path}: {reason}")]
    Refused {
        /// The directory.
        path: PathBuf,
        /// Why it was left alone.
        reason: String,
    },
    /// The directory has no manifest: not a checkpoint, or one whose writing never finished.
    #[error("{dir}: no {MANIFEST}; not a checkpoint directory")]
    NoManifest {
        /// The checkpoint directory.
        dir: PathBuf,
    },
    /// The manifest does not parse or lacks something.
    #[error("{path}: invalid manifest: {reason}")]
    BadManifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The checkpoint was written in a format version this build does not read.
    #[error("{dir}: checkpoint format version {found}, this build reads version {FORMAT_VERSION}")]
    FormatVersion {
        /// The checkpoint directory.
        dir: PathBuf,
        /// The version in the manifest.
        found: u32,
    },
    /// The checkpoint's network was trained on another encoding of positions or moves.
    #[error(
        "{dir}: written for {game} encoding version {found}, this build encodes {game} \
         positions and moves with version {expected}; the network would misread its inputs"
    )]
    EncodingVersion {
        /// The checkpoint directory.
        dir: PathBuf,
        /// The game of the checkpoint.
        game: GameKind,
        /// The version in the manifest.
        found: u32,
        /// This build's version for the game.
        expected: u32,
    },
    /// The checkpoint's network plays another game than the one asked for.
    #[error("{dir}: the network plays {found}, not {expected}")]
    WrongGame {
        /// The checkpoint directory.
        dir: PathBuf,
        /// The game of the checkpoint (`game` in its manifest; xiangqi when absent).
        found: GameKind,
        /// The game asked for.
        expected: GameKind,
    },
    /// The checkpoint's input planes or policy size are not this build's.
    #[error("{dir}: the network has {what} {found}, this build uses {expected}")]
    EnvShape {
        /// The checkpoint directory.
        dir: PathBuf,
        /// `"input planes"` or `"policy size"`.
        what: &'static str,
        /// The value in the manifest.
        found: usize,
        /// This build's value.
        expected: usize,
    },
    /// The checkpoint's network is not the one the configuration asks for.
    #[error(
        "{dir}: the checkpoint's network differs from the configured one (checkpoint vs \
         config): {}",
        differences.join(", ")
    )]
    NetMismatch {
        /// The checkpoint directory.
        dir: PathBuf,
        /// `network.<key>: <checkpoint> vs <config>` for each difference.
        differences: Vec<String>,
    },
    /// A file the manifest lists is missing.
    #[error("{path}: missing (the manifest lists it)")]
    MissingFile {
        /// The file.
        path: PathBuf,
    },
    /// A file is shorter (or longer) than the manifest says.
    #[error("{path}: {found} bytes, the manifest says {expected}: the file is {}",
        if found < expected { "truncated" } else { "longer than written" })]
    WrongSize {
        /// The file.
        path: PathBuf,
        /// Its size.
        found: u64,
        /// The size in the manifest.
        expected: u64,
    },
    /// A file's checksum is not the manifest's.
    #[error("{path}: checksum {found}, the manifest says {expected}: the file is corrupted")]
    Corrupted {
        /// The file.
        path: PathBuf,
        /// Its checksum.
        found: String,
        /// The checksum in the manifest.
        expected: String,
    },
    /// The weights or optimizer state do not load into the network.
    #[error("{path}: does not load: {reason}")]
    Load {
        /// The file.
        path: PathBuf,
        /// Burn's reason.
        reason: String,
    },
    /// A training checkpoint was asked of a weights-only one.
    #[error(
        "{dir}: a weights-only checkpoint (no {OPTIMIZER_FILE}); start a new trainer from its \
         weights instead of resuming"
    )]
    NoOptimizerState {
        /// The checkpoint directory.
        dir: PathBuf,
    },
    /// A configuration in the manifest, or the one given, is invalid.
    #[error("{dir}: {source}")]
    Config {
        /// The checkpoint directory.
        dir: PathBuf,
        /// The bad setting.
        source: ConfigError,
    },
    /// The trainer's state could not be serialised.
    #[error("serialising {what}: {reason}")]
    Serialize {
        /// What.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

/// One file of a checkpoint, as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// File name inside the checkpoint directory.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// `fnv1a64:<16 hex digits>`.
    pub checksum: String,
}

/// The saved state of the augmentation RNG, in a form TOML holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RngEntry {
    seed: String,
    stream: String,
    word_pos: String,
}

impl RngEntry {
    fn from_state(s: &RngState) -> RngEntry {
        RngEntry {
            seed: s.seed.iter().map(|b| format!("{b:02x}")).collect(),
            stream: s.stream.to_string(),
            word_pos: s.word_pos.to_string(),
        }
    }

    fn to_state(&self) -> Option<RngState> {
        if self.seed.len() != 64 || !self.seed.is_ascii() {
            return None;
        }
        let mut seed = [0u8; 32];
        for (i, b) in seed.iter_mut().enumerate() {
            *b = u8::from_str_radix(&self.seed[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(RngState {
            seed,
            stream: self.stream.parse().ok()?,
            word_pos: self.word_pos.parse().ok()?,
        })
    }
}

/// What `manifest.toml` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Format version of the checkpoint ([`FORMAT_VERSION`]).
    pub format_version: u32,
    /// The game the network plays (absent in checkpoints written before janggi: xiangqi).
    #[serde(default)]
    pub game: GameKind,
    /// The game's encoding version ([`xiangqi_search::NetView::ENCODING_VERSION`]) of the build
    /// that wrote it.
    pub encoding_version: u32,
    /// Input planes of the network.
    pub planes: usize,
    /// Policy size of the network.
    pub policy_size: usize,
    /// Optimizer steps taken.
    pub step: u64,
    /// Training samples consumed.
    pub samples: u64,
    /// The caller's own counters (self-play games, shards, ...), saved and returned as given.
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    /// The network's shape.
    pub network: NetConfig,
    /// The training configuration (training checkpoints only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rng: Option<RngEntry>,
    /// What the network was pretrained on before its self-play, if it was (training
    /// checkpoints of a run with `loop.pretrain_shards`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pretrained: Option<Pretraining>,
    /// The `[search]` settings the network was trained with (checkpoints of `xqz train` and
    /// their exports): what an engine playing it starts from. Absent in nets written before
    /// they were recorded, and in nets not trained by self-play.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchConfig>,
    /// The measured Elo of the engine's skill levels with this network (`xqz calibrate`;
    /// exports only): what `UCI_Elo` maps to a level. Absent until calibrated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strength: Option<StrengthTable>,
    /// Why the manifest's `[strength]` table was dropped when it was read (it did not parse or
    /// failed [`StrengthTable::validate`]): the network loads without it. Never written.
    #[serde(skip)]
    pub strength_error: Option<String>,
    /// The other files of the checkpoint.
    pub files: Vec<FileEntry>,
}

/// The record of a pretraining phase: the shards a run trained on before its first self-play
/// (imported or labelled games, `xqz import` and `xqz label`), kept in every later checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pretraining {
    /// The shard directory (or file) as the config named it.
    pub source: String,
    /// Shards read.
    pub shards: u64,
    /// Games in them.
    pub games: u64,
    /// Samples in them.
    pub samples: u64,
    /// FNV-1a 64 of the shards' file names and sample counts, in hex: a resumed pretraining
    /// checks that its shards are still the same.
    pub fingerprint: String,
    /// Optimizer steps the pretraining takes.
    pub planned_steps: u64,
    /// Optimizer steps it has taken (`planned_steps` once it is over).
    pub steps: u64,
}

impl Manifest {
    /// The manifest of a fresh net of this shape and encoding: step and samples 0, no training
    /// state, no files listed yet.
    pub fn new(network: &NetConfig, encoding: &Encoding) -> Manifest {
        Manifest {
            format_version: FORMAT_VERSION,
            game: encoding.game,
            encoding_version: encoding.version,
            planes: encoding.planes,
            policy_size: encoding.policy_size,
            step: 0,
            samples: 0,
            counters: BTreeMap::new(),
            network: network.clone(),
            training: None,
            rng: None,
            pretrained: None,
            search: None,
            strength: None,
            strength_error: None,
            files: Vec::new(),
        }
    }

    /// The encoding the checkpoint's net takes in this build: its game's base planes, with the
    /// feature planes if its `[network]` has `input_features` (encoding version 2).
    /// [`read_manifest`] checks that the recorded version and sizes agree with it.
    pub fn encoding(&self) -> Encoding {
        let base = Encoding::of_kind(self.game);
        base.with_features(self.network.input_features).unwrap_or(base)
    }

    /// Checks that the checkpoint's network plays `game`.
    ///
    /// # Errors
    /// [`CheckpointError::WrongGame`] naming both games.
    pub fn expect_game(&self, dir: &Path, game: GameKind) -> Result<(), CheckpointError> {
        if self.game == game {
            Ok(())
        } else {
            Err(CheckpointError::WrongGame {
                dir: dir.to_path_buf(),
                found: self.game,
                expected: game,
            })
        }
    }

    /// Whether the checkpoint holds an optimizer state (a training checkpoint).
    pub fn has_optimizer(&self) -> bool {
        self.files.iter().any(|f| f.name == OPTIMIZER_FILE)
    }
}

/// FNV-1a, 64 bits: a checksum to tell a damaged file from the one written (not a defence
/// against tampering).
fn fnv1a64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("fnv1a64:{h:016x}")
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io { path: path.to_path_buf(), source }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let mut f = fs::File::create(path).map_err(io_err(path))?;
    f.write_all(bytes).map_err(io_err(path))?;
    f.sync_all().map_err(io_err(path))
}

/// Syncs a directory so that renames inside it survive a crash (best effort: not every
/// platform lets a directory be opened).
fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `files` and the manifest into a temporary sibling of `dir` and renames it to `dir`,
/// replacing an existing checkpoint there.
pub(crate) fn write_atomically(
    dir: &Path,
    mut manifest: Manifest,
    files: &[(&str, &[u8])],
) -> Result<(), CheckpointError> {
    let name = dir.file_name().ok_or_else(|| CheckpointError::Io {
        path: dir.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidInput, "a checkpoint path needs a name"),
    })?;
    let name = name.to_string_lossy();
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(io_err(&parent))?;
    let unique = format!("{}-{}", std::process::id(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed));
    let tmp = parent.join(format!(".{name}.tmp-{unique}"));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(io_err(&tmp))?;
    }
    fs::create_dir(&tmp).map_err(io_err(&tmp))?;
    let result = (|| {
        manifest.files.clear();
        for (file, bytes) in files {
            write_synced(&tmp.join(file), bytes)?;
            manifest.files.push(FileEntry {
                name: (*file).to_string(),
                size: bytes.len() as u64,
                checksum: fnv1a64(bytes),
            });
        }
        let text = toml::to_string(&manifest).map_err(|e| CheckpointError::Serialize {
            what: "the manifest",
            reason: e.to_string(),
        })?;
        write_synced(&tmp.join(MANIFEST), text.as_bytes())?;
        sync_dir(&tmp);
        if dir.exists() {
            let old = parent.join(format!(".{name}.old-{unique}"));
            fs::rename(dir, &old).map_err(io_err(dir))?;
            fs::rename(&tmp, dir).map_err(io_err(dir))?;
            fs::remove_dir_all(&old).map_err(io_err(&old))?;
        } else {
            fs::rename(&tmp, dir).map_err(io_err(dir))?;
        }
        sync_dir(&parent);
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result
}

pub(crate) fn model_bytes(net: &Net) -> Result<Bytes, CheckpointError> {
    // `valid` applies the batch-norm statistics' pending update first (see `InferenceNet`).
    net.valid()
        .into_record()
        .into_bytes()
        .map_err(|e| CheckpointError::Serialize { what: "the weights", reason: e.to_string() })
}

/// Saves the weights of `net` alone (a weights-only checkpoint, e.g. for play) to the
/// directory `dir`, atomically.
///
/// # Errors
/// [`CheckpointError::Io`] or [`CheckpointError::Serialize`].
pub fn save_net(net: &Net, dir: &Path) -> Result<(), CheckpointError> {
    let model = model_bytes(net)?;
    write_atomically(dir, Manifest::new(net.config(), &net.encoding), &[(MODEL_FILE, &model)])
}

/// The files of a weights-only checkpoint of `net`, as `(name, bytes)`: [`MODEL_FILE`] and the
/// [`MANIFEST`] that records its size and checksum. Written into one directory they are what
/// [`save_net`] writes (a distributed run publishes them to its store this way).
///
/// # Errors
/// [`CheckpointError::Serialize`].
pub fn weights_only_files(net: &Net) -> Result<Vec<(&'static str, Vec<u8>)>, CheckpointError> {
    let model = model_bytes(net)?.to_vec();
    let mut manifest = Manifest::new(net.config(), &net.encoding);
    manifest.files.push(FileEntry {
        name: MODEL_FILE.to_string(),
        size: model.len() as u64,
        checksum: fnv1a64(&model),
    });
    let text = toml::to_string(&manifest)
        .map_err(|e| CheckpointError::Serialize { what: "the manifest", reason: e.to_string() })?;
    Ok(vec![(MODEL_FILE, model), (MANIFEST, text.into_bytes())])
}

/// Saves everything a run needs to resume: weights, optimizer state, both configurations, the
/// step and sample counters, the RNG state, and the caller's `counters`; atomically.
///
/// # Errors
/// [`CheckpointError::Io`] or [`CheckpointError::Serialize`].
pub fn save_trainer(
    trainer: &Trainer,
    dir: &Path,
    counters: &BTreeMap<String, u64>,
) -> Result<(), CheckpointError> {
    save_trainer_with(trainer, dir, counters, None, None)
}

/// [`save_trainer`] with the record of the run's pretraining (see [`Manifest::pretrained`]) and
/// of the search it plays with ([`Manifest::search`]).
///
/// # Errors
/// As [`save_trainer`].
pub fn save_trainer_with(
    trainer: &Trainer,
    dir: &Path,
    counters: &BTreeMap<String, u64>,
    pretrained: Option<&Pretraining>,
    search: Option<&SearchConfig>,
) -> Result<(), CheckpointError> {
    let model = model_bytes(trainer.net())?;
    let optim = trainer
        .optimizer_bytes()
        .map_err(|reason| CheckpointError::Serialize { what: "the optimizer state", reason })?;
    let mut manifest = Manifest::new(trainer.net().config(), &trainer.net().encoding);
    manifest.step = trainer.step_count();
    manifest.samples = trainer.samples_seen();
    manifest.counters = counters.clone();
    manifest.training = Some(trainer.config().clone());
    manifest.rng = Some(RngEntry::from_state(&trainer.rng_state()));
    manifest.pretrained = pretrained.cloned();
    manifest.search = search.cloned();
    write_atomically(dir, manifest, &[(MODEL_FILE, &model), (OPTIMIZER_FILE, &optim)])
}

/// Reads and checks the manifest of the checkpoint `dir`: format and encoding versions, input
/// planes and policy size, and (if `expected` is given) the network shape. Does not read the
/// other files.
///
/// # Errors
/// [`CheckpointError::NoManifest`], [`CheckpointError::BadManifest`],
/// [`CheckpointError::FormatVersion`], [`CheckpointError::EncodingVersion`],
/// [`CheckpointError::EnvShape`], [`CheckpointError::NetMismatch`] or
/// [`CheckpointError::Config`].
pub fn read_manifest(
    dir: &Path,
    expected: Option<&NetConfig>,
) -> Result<Manifest, CheckpointError> {
    let path = dir.join(MANIFEST);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(CheckpointError::NoManifest { dir: dir.to_path_buf() });
        }
        Err(e) => return Err(io_err(&path)(e)),
    };
    // The format version first, so that a later format is reported as such, not as a parse
    // error of its fields.
    let mut table: toml::Table = toml::from_str(&text)
        .map_err(|e| CheckpointError::BadManifest { path: path.clone(), reason: e.to_string() })?;
    let version = table.get("format_version").and_then(toml::Value::as_integer);
    match version {
        Some(v) if v == i64::from(FORMAT_VERSION) => {}
        Some(v) => {
            return Err(CheckpointError::FormatVersion {
                dir: dir.to_path_buf(),
                found: u32::try_from(v).unwrap_or(u32::MAX),
            });
        }
        None => {
            return Err(CheckpointError::BadManifest {
                path,
                reason: "no integer format_version".into(),
            });
        }
    }
    // The levels' table is read on its own: a damaged one is dropped (and said so in
    // `strength_error`), never the network with it.
    let strength = table.remove("strength");
    let mut manifest: Manifest =
        toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| {
            CheckpointError::BadManifest { path: path.clone(), reason: e.to_string() }
        })?;
    if let Some(value) = strength {
        let checked = value
            .try_into::<StrengthTable>()
            .map_err(|e| format!("[strength]: {}", e.message()))
            .and_then(|t| t.validate().map(|()| t));
        match checked {
            Ok(t) => manifest.strength = Some(t),
            Err(reason) => manifest.strength_error = Some(reason),
        }
    }
    let dir_buf = || dir.to_path_buf();
    let encoding = manifest.encoding();
    // A version this build knows, but not the one `[network]` describes: the manifest
    // contradicts itself (hand-edited, or damaged).
    if let Some(recorded) = Encoding::of_version(manifest.game, manifest.encoding_version)
        && recorded.features != manifest.network.input_features
    {
        let planes = |on: bool| {
            if on { "with the tactical feature planes" } else { "without feature planes" }
        };
        return Err(CheckpointError::BadManifest {
            path: dir.join(MANIFEST),
            reason: format!(
                "encoding_version = {} is the {} encoding {}, but [network] \
                 input_features = {} asks for one {}",
                manifest.encoding_version,
                manifest.game,
                planes(recorded.features),
                manifest.network.input_features,
                planes(manifest.network.input_features),
            ),
        });
    }
    if manifest.encoding_version != encoding.version
        || manifest.network.input_features != encoding.features
    {
        return Err(CheckpointError::EncodingVersion {
            dir: dir_buf(),
            game: manifest.game,
            found: manifest.encoding_version,
            expected: encoding.version,
        });
    }
    for (what, found, expected) in [
        ("input planes", manifest.planes, encoding.planes),
        ("policy size", manifest.policy_size, encoding.policy_size),
    ] {
        if found != expected {
            return Err(CheckpointError::EnvShape { dir: dir_buf(), what, found, expected });
        }
    }
    manifest
        .network
        .validate()
        .map_err(|source| CheckpointError::Config { dir: dir_buf(), source })?;
    if let Some(expected) = expected {
        let differences = manifest.network.differences(expected);
        if !differences.is_empty() {
            return Err(CheckpointError::NetMismatch { dir: dir_buf(), differences });
        }
    }
    // The files are read as `dir.join(name)`: a name with a separator or `..` would reach
    // outside the checkpoint.
    if let Some(f) = manifest.files.iter().find(|f| !is_plain_file_name(&f.name)) {
        return Err(CheckpointError::BadManifest {
            path,
            reason: format!(
                "it lists {:?}, which is not a plain file name inside the checkpoint directory",
                f.name
            ),
        });
    }
    if !manifest.files.iter().any(|f| f.name == MODEL_FILE) {
        return Err(CheckpointError::BadManifest {
            path,
            reason: format!("it lists no {MODEL_FILE}"),
        });
    }
    Ok(manifest)
}

/// Records `table` (or removes the record, with `None`) in the manifest of the checkpoint or
/// export `dir`, leaving its other files as they are: the new manifest is written to a
/// temporary file beside the old one, synced, and renamed over it, so a crash leaves one or the
/// other whole.
///
/// # Errors
/// As [`read_manifest`] for the manifest there now, [`CheckpointError::BadManifest`] for a
/// table that fails [`StrengthTable::validate`], [`CheckpointError::Io`] or
/// [`CheckpointError::Serialize`].
pub fn write_strength(
    dir: &Path,
    table: Option<&StrengthTable>,
) -> Result<Manifest, CheckpointError> {
    let mut manifest = read_manifest(dir, None)?;
    if let Some(table) = table {
        table
            .validate()
            .map_err(|reason| CheckpointError::BadManifest { path: dir.join(MANIFEST), reason })?;
    }
    manifest.strength = table.cloned();
    manifest.strength_error = None;
    let text = toml::to_string(&manifest)
        .map_err(|e| CheckpointError::Serialize { what: "the manifest", reason: e.to_string() })?;
    let unique = format!("{}-{}", std::process::id(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed));
    let tmp = dir.join(format!(".{MANIFEST}.tmp-{unique}"));
    let path = dir.join(MANIFEST);
    // The new manifest keeps the old one's permissions.
    let permissions = fs::metadata(&path).map(|m| m.permissions()).ok();
    let result = write_synced(&tmp, text.as_bytes())
        .and_then(|()| match permissions {
            Some(p) => fs::set_permissions(&tmp, p).map_err(io_err(&tmp)),
            None => Ok(()),
        })
        .and_then(|()| fs::rename(&tmp, &path).map_err(io_err(&path)));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    sync_dir(dir);
    Ok(manifest)
}

/// A name of one file directly inside a directory: not empty, not `.` or `..`, no path
/// separator or NUL.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// Reads a file the manifest lists and checks its size and checksum.
pub(crate) fn read_checked(
    dir: &Path,
    manifest: &Manifest,
    name: &str,
) -> Result<Vec<u8>, CheckpointError> {
    let path = dir.join(name);
    let entry = manifest.files.iter().find(|f| f.name == name).ok_or_else(|| {
        CheckpointError::BadManifest {
            path: dir.join(MANIFEST),
            reason: format!("it lists no {name}"),
        }
    })?;
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(CheckpointError::MissingFile { path });
        }
        Err(e) => return Err(io_err(&path)(e)),
    };
    if bytes.len() as u64 != entry.size {
        return Err(CheckpointError::WrongSize {
            path,
            found: bytes.len() as u64,
            expected: entry.size,
        });
    }
    let sum = fnv1a64(&bytes);
    if sum != entry.checksum {
        return Err(CheckpointError::Corrupted {
            path,
            found: sum,
            expected: entry.checksum.clone(),
        });
    }
    Ok(bytes)
}

/// Checks the size and checksum of every file the manifest lists except those named in
/// `loaded`, which the caller reads itself with [`read_checked`]: a loader refuses a damaged
/// file it does not use as well as one it does. The one exception is an export's `model.onnx`
/// when it is absent: it is for other runtimes, never read here, and a copy of an export may
/// leave it out (a recorded net kept small); when present it is checked like any other.
pub(crate) fn check_other_files(
    dir: &Path,
    manifest: &Manifest,
    loaded: &[&str],
) -> Result<(), CheckpointError> {
    for f in manifest.files.iter().filter(|f| !loaded.contains(&f.name.as_str())) {
        match read_checked(dir, manifest, &f.name) {
            Err(CheckpointError::MissingFile { .. }) if f.name == crate::onnx::ONNX_FILE => {}
            other => {
                other?;
            }
        }
    }
    Ok(())
}

/// Checks the whole checkpoint: the manifest as [`read_manifest`] does, and every file's size
/// and checksum.
///
/// # Errors
/// As [`read_manifest`], and [`CheckpointError::MissingFile`], [`CheckpointError::WrongSize`] or
/// [`CheckpointError::Corrupted`].
pub fn verify(dir: &Path, expected: Option<&NetConfig>) -> Result<Manifest, CheckpointError> {
    let manifest = read_manifest(dir, expected)?;
    for f in &manifest.files {
        read_checked(dir, &manifest, &f.name)?;
    }
    Ok(manifest)
}

fn load_weights(dir: &Path, manifest: &Manifest, device: &Device) -> Result<Net, CheckpointError> {
    let bytes = read_checked(dir, manifest, MODEL_FILE)?;
    let path = dir.join(MODEL_FILE);
    let record = ModuleRecord::from_bytes(Bytes::from_bytes_vec(bytes))
        .map_err(|e| CheckpointError::Load { path: path.clone(), reason: e.to_string() })?;
    Net::for_encoding(&manifest.network, manifest.encoding(), device)
        .try_load_record(record)
        .map_err(|e| CheckpointError::Load { path, reason: e.to_string() })
}

/// Loads the network of a checkpoint (training or weights-only) onto `device`: a plain device
/// gives a network in inference mode, ready for [`crate::InferenceNet::from_net`]. If `expected`
/// is given, the checkpoint must hold that network. Every file the manifest lists is checked,
/// not only the weights (an export's safetensors and JSON description, a training
/// checkpoint's optimizer state).
///
/// # Errors
/// Every refusal of [`verify`], and [`CheckpointError::Load`].
pub fn load_net(
    dir: &Path,
    expected: Option<&NetConfig>,
    device: &Device,
) -> Result<(Net, Manifest), CheckpointError> {
    let manifest = read_manifest(dir, expected)?;
    check_other_files(dir, &manifest, &[MODEL_FILE])?;
    let net = load_weights(dir, &manifest, device)?;
    let net = if device.is_autodiff() { net } else { net.valid() };
    Ok((net, manifest))
}

/// Resumes training from a training checkpoint: weights, optimizer state, step and sample
/// counters and RNG state. The training configuration is `config` if given (a changed learning
/// rate, say), else the checkpoint's; the network must be `expected` if given. The caller's
/// counters are in the returned manifest.
///
/// # Errors
/// Every refusal of [`verify`], [`CheckpointError::NoOptimizerState`] for a weights-only
/// checkpoint, [`CheckpointError::Load`] and [`CheckpointError::Config`].
pub fn load_trainer(
    dir: &Path,
    expected: Option<&NetConfig>,
    config: Option<&TrainConfig>,
    device: &Device,
) -> Result<(Trainer, Manifest), CheckpointError> {
    let manifest = read_manifest(dir, expected)?;
    let dir_buf = || dir.to_path_buf();
    if !manifest.has_optimizer() {
        return Err(CheckpointError::NoOptimizerState { dir: dir_buf() });
    }
    let config = match (config, &manifest.training) {
        (Some(c), _) | (None, Some(c)) => c.clone(),
        (None, None) => {
            return Err(CheckpointError::BadManifest {
                path: dir.join(MANIFEST),
                reason: "a training checkpoint without a [training] section".into(),
            });
        }
    };
    let rng = manifest.rng.as_ref().and_then(RngEntry::to_state).ok_or_else(|| {
        CheckpointError::BadManifest {
            path: dir.join(MANIFEST),
            reason: "missing or malformed [rng] section".into(),
        }
    })?;
    check_other_files(dir, &manifest, &[MODEL_FILE, OPTIMIZER_FILE])?;
    let device = if device.is_autodiff() { device.clone() } else { device.clone().autodiff() };
    let net = load_weights(dir, &manifest, &device)?;
    let optim = read_checked(dir, &manifest, OPTIMIZER_FILE)?;
    let mut trainer =
        Trainer::from_parts(net, &config, &device, rng, manifest.step, manifest.samples)
            .map_err(|source| CheckpointError::Config { dir: dir_buf(), source })?;
    trainer
        .load_optimizer_bytes(Bytes::from_bytes_vec(optim))
        .map_err(|reason| CheckpointError::Load { path: dir.join(OPTIMIZER_FILE), reason })?;
    Ok((trainer, manifest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_reference_values() {
        assert_eq!(fnv1a64(b""), "fnv1a64:cbf29ce484222325");
        assert_eq!(fnv1a64(b"a"), "fnv1a64:af63dc4c8601ec8c");
    }

    /// A copy of the checkpoint `from` with one byte of `file` flipped.
    fn flipped_copy(from: &Path, to: &Path, file: &str) {
        fs::create_dir_all(to).unwrap();
        for e in fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
        let path = to.join(file);
        let mut bytes = fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x01;
        fs::write(&path, &bytes).unwrap();
    }

    #[test]
    fn a_manifest_naming_a_file_outside_its_directory_is_refused() {
        let dir = std::env::temp_dir().join(format!("xqz-ckpt-names-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let net =
            Net::seeded::<xiangqi::Game>(&NetConfig::new(1, 8), &crate::cpu_device(), 3).valid();
        let good = dir.join("good");
        save_net(&net, &good).unwrap();
        assert!(read_manifest(&good, None).is_ok());
        let text = fs::read_to_string(good.join(MANIFEST)).unwrap();
        for name in ["../outside.bin", "/etc/passwd", "sub/dir.bin", "..", "", "a\\b"] {
            let bad = dir.join(format!("bad-{}", TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)));
            fs::create_dir_all(&bad).unwrap();
            fs::copy(good.join(MODEL_FILE), bad.join(MODEL_FILE)).unwrap();
            let entry = format!(
                "\n[[files]]\nname = {}\nsize = 1\nchecksum = \"fnv1a64:0000000000000000\"\n",
                toml::Value::String(name.to_string())
            );
            fs::write(bad.join(MANIFEST), format!("{text}{entry}")).unwrap();
            match read_manifest(&bad, None) {
                Err(CheckpointError::BadManifest { reason, .. }) => {
                    assert!(reason.contains("not a plain file name"), "{name:?}: {reason}");
                }
                other => panic!("{name:?}: {other:?}"),
            }
        }
        assert!(is_plain_file_name("model.bpk") && is_plain_file_name("extra.bin"));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn loading_a_net_checks_every_file_the_manifest_lists() {
        let dir = std::env::temp_dir().join(format!("xqz-ckpt-unit-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let device = crate::cpu_device();
        let net = Net::seeded::<xiangqi::Game>(&NetConfig::new(1, 8), &device, 3).valid();
        // A weights-only checkpoint with a second data file (as an export has), and a training
        // checkpoint.
        let weights = dir.join("weights");
        let model = model_bytes(&net).unwrap();
        let extra = b"a file the net does not load, listed by the manifest".to_vec();
        let manifest = Manifest::new(net.config(), &net.encoding);
        write_atomically(&weights, manifest, &[(MODEL_FILE, &model), ("extra.bin", &extra)])
            .unwrap();
        let training = dir.join("training");
        let trainer = Trainer::new::<xiangqi::Game>(
            &NetConfig::new(1, 8),
            &TrainConfig::default(),
            &device,
            3,
        )
        .unwrap();
        save_trainer(&trainer, &training, &BTreeMap::new()).unwrap();
        for (source, file) in [
            (&weights, MODEL_FILE),
            (&weights, "extra.bin"),
            (&training, MODEL_FILE),
            (&training, OPTIMIZER_FILE),
        ] {
            assert!(load_net(source, None, &device).is_ok(), "the unmodified {file} loads");
            let damaged =
                dir.join(format!("damaged-{}", TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)));
            flipped_copy(source, &damaged, file);
            let expected = read_manifest(&damaged, None)
                .unwrap()
                .files
                .into_iter()
                .find(|f| f.name == file)
                .unwrap()
                .checksum;
            let found = fnv1a64(&fs::read(damaged.join(file)).unwrap());
            assert_ne!(found, expected, "the flip changes the checksum");
            let err = load_net(&damaged, None, &device).map(|_| ()).unwrap_err();
            match &err {
                CheckpointError::Corrupted { path, found: f, expected: x } => {
                    assert_eq!(path, &damaged.join(file), "{err}");
                    assert_eq!((f, x), (&found, &expected), "{err}");
                }
                other => panic!("{file}: {other}"),
            }
            let text = err.to_string();
            assert!(
                text.contains(file) && text.contains(&expected) && text.contains(&found),
                "{text}"
            );
        }
        // Resuming checks them too.
        let damaged = dir.join("damaged-training-model");
        flipped_copy(&training, &damaged, MODEL_FILE);
        let err = load_trainer(&damaged, None, None, &device).map(|_| ()).unwrap_err();
        assert!(matches!(err, CheckpointError::Corrupted { .. }), "{err}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn rng_entry_round_trips() {
        let s = RngState { seed: [7; 32], stream: 3, word_pos: u128::MAX - 5 };
        assert_eq!(RngEntry::from_state(&s).to_state(), Some(s));
    }
}
