//! Loading a network for play (`xqz uci --net`, arena players, `xqz export`): a checkpoint
//! directory of `xqz train` (`runs/NAME/checkpoints/ckpt-NNNNNN`), an export of `xqz export`, or
//! a run directory (its newest checkpoint), evaluated on the device the user chose (`--device`,
//! the CPU by default).

use std::path::{Path, PathBuf};

use anyhow::Context;
use xiangqi_nn::device::DeviceSpec;
use xiangqi_nn::{Device, InferenceNet, NnError, NnEvaluator, Precision, checkpoint};
use xiangqi_search::{
    EvalBuffer, EvalRequest, Evaluator, GameEnv, GameKind, SearchConfig, StrengthTable,
    UniformEvaluator,
};

/// The checkpoint a path names: the directory itself if it holds a manifest (a checkpoint or an
/// export), else the newest checkpoint of the run directory it is.
///
/// # Errors
/// When `path` is neither, or the run has no checkpoint yet.
pub fn resolve(path: &Path) -> anyhow::Result<PathBuf> {
    if path.join(checkpoint::MANIFEST).is_file() {
        return Ok(path.to_path_buf());
    }
    let dir = path.join("checkpoints");
    if dir.is_dir() {
        let scan = xiangqi_train::pipeline::scan_checkpoints(&dir)
            .with_context(|| format!("cannot list the checkpoints in '{}'", dir.display()))?;
        // An export or a stray folder in checkpoints/ is never taken for the run's newest net.
        for (path, reason) in &scan.ignored {
            errln!("warning: passed over {}: {reason}", path.display());
        }
        return match scan.checkpoints.last() {
            Some((_, newest)) => Ok(newest.clone()),
            None => anyhow::bail!("the run '{}' has no checkpoint yet", path.display()),
        };
    }
    anyhow::bail!(
        "'{}' is not a network: expected a checkpoint or export directory (with {}) or a run \
         directory (with checkpoints/)",
        path.display(),
        checkpoint::MANIFEST
    )
}

/// The device a `--device` value (or a config's `loop.device`) names, checked to work. For a
/// wgpu device, one line on standard error names the adapter it runs on, its graphics API and
/// kind (and says when it is a software rasterizer on the CPU, such as Mesa's llvmpipe).
///
/// # Errors
/// An unknown name, a backend this build lacks, or a device that does not come up; each says
/// what to do.
pub fn device(name: &str) -> anyhow::Result<Device> {
    let spec: DeviceSpec = name.parse()?;
    let (device, adapter) = spec.open()?;
    if let Some(adapter) = adapter {
        errln!("device {spec}: {adapter}");
    }
    Ok(device)
}

/// Where a command's networks run: the device (`--device`) and the arithmetic of the CPU
/// kernels (`--precision`).
#[derive(Clone, Debug)]
pub struct NetDevice {
    pub device: Device,
    pub precision: Precision,
}

impl NetDevice {
    /// [`device`]`(name)` with `precision`.
    ///
    /// # Errors
    /// As [`device`].
    pub fn open(name: &str, precision: Precision) -> anyhow::Result<NetDevice> {
        Ok(NetDevice { device: device(name)?, precision })
    }

    /// The CPU in `f32`.
    #[cfg(test)]
    pub fn cpu() -> NetDevice {
        NetDevice { device: xiangqi_nn::cpu_device(), precision: Precision::F32 }
    }
}

/// The game a checkpoint, export or run directory's network plays (from its manifest).
///
/// # Errors
/// As [`resolve`], or an unreadable manifest.
pub fn game_of(path: &Path) -> anyhow::Result<GameKind> {
    let path = &resolve(path)?;
    let manifest = checkpoint::read_manifest(path, None)
        .with_context(|| format!("cannot read the network '{}'", path.display()))?;
    Ok(manifest.game)
}

/// The `[search]` settings a checkpoint, export or run directory's network was trained with
/// (from its manifest; `None` for a network that records none).
///
/// # Errors
/// As [`resolve`], or an unreadable manifest.
pub fn recorded_search(path: &Path) -> anyhow::Result<Option<SearchConfig>> {
    let path = &resolve(path)?;
    let manifest = checkpoint::read_manifest(path, None)
        .with_context(|| format!("cannot read the network '{}'", path.display()))?;
    Ok(manifest.search)
}

/// Loads the network of a checkpoint, export or run directory ([`resolve`]) as an evaluator on
/// `device`.
pub fn load(path: &Path, device: &NetDevice) -> anyhow::Result<NnEvaluator> {
    Ok(load_for_play(path, device)?.0)
}

/// What a network's manifest says about playing it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlayRecord {
    /// The `[search]` settings it was trained with ([`checkpoint::Manifest::search`]).
    pub search: Option<SearchConfig>,
    /// The measured Elo of its skill levels ([`checkpoint::Manifest::strength`]).
    pub strength: Option<StrengthTable>,
}

/// [`load`], with what its manifest records for play: the `[search]` settings the network was
/// trained with and its levels' measured strength, where recorded.
///
/// A `--precision bf16` that this CPU or network cannot run computes in `f32`, with a warning.
pub fn load_for_play(path: &Path, on: &NetDevice) -> anyhow::Result<(NnEvaluator, PlayRecord)> {
    let device = on.device.clone();
    let path = &resolve(path)?;
    let (net, manifest) = checkpoint::load_net(path, None, &device)
        .with_context(|| format!("cannot load the network '{}'", path.display()))?;
    let net = InferenceNet::from_net(&net, &device)
        .with_context(|| format!("cannot prepare the network '{}'", path.display()))?
        .with_precision(on.precision);
    if on.precision == Precision::Bf16
        && let Some(reason) = net.bf16_unavailable()
    {
        errln!(
            "warning: {}: --precision bf16 is not available ({reason}); the network computes in f32",
            path.display(),
        );
    }
    if let Some(reason) = &manifest.strength_error {
        errln!(
            "warning: {}: the table of measured levels is damaged and ignored ({reason}); \
             UCI_Elo is not offered until xqz calibrate measures the levels again",
            path.display()
        );
    }
    let record = PlayRecord { search: manifest.search, strength: manifest.strength };
    Ok((NnEvaluator::new(net), record))
}

/// Either evaluator, so that players and the engine have one type whether or not a network is
/// given.
pub enum AnyEvaluator {
    /// Uniform priors, value 0.
    Uniform(UniformEvaluator),
    /// A network, with what its manifest records for play.
    Net(Box<NnEvaluator>, Box<PlayRecord>),
}

impl AnyEvaluator {
    /// The network at `path` on `device`, or the uniform evaluator if there is none.
    pub fn load_optional(path: Option<&Path>, device: &NetDevice) -> anyhow::Result<AnyEvaluator> {
        Ok(match path {
            Some(p) => {
                let (net, record) = load_for_play(p, device)?;
                AnyEvaluator::Net(Box::new(net), Box::new(record))
            }
            None => AnyEvaluator::Uniform(UniformEvaluator),
        })
    }
}

impl AnyEvaluator {
    /// The game of the network, `None` for the uniform evaluator (which plays any game).
    pub fn game(&self) -> Option<GameKind> {
        match self {
            AnyEvaluator::Uniform(_) => None,
            AnyEvaluator::Net(e, _) => Some(e.net().encoding().game),
        }
    }

    /// What the network's manifest records for play (nothing for the uniform evaluator).
    pub fn record(&self) -> PlayRecord {
        match self {
            AnyEvaluator::Uniform(_) => PlayRecord::default(),
            AnyEvaluator::Net(_, record) => (**record).clone(),
        }
    }

    /// Checks that the evaluator can play `game`.
    ///
    /// # Errors
    /// A network of another game, named with both games.
    pub fn expect_game(&self, game: GameKind, what: &str) -> anyhow::Result<()> {
        match self.game() {
            Some(g) if g != game => anyhow::bail!("{what}: the network plays {g}, not {game}"),
            _ => Ok(()),
        }
    }
}

impl<G: GameEnv> Evaluator<G> for AnyEvaluator {
    type Error = NnError;

    fn evaluate(
        &mut self,
        batch: &[EvalRequest<'_, G>],
        out: &mut EvalBuffer,
    ) -> Result<(), Self::Error> {
        match self {
            AnyEvaluator::Uniform(e) => e.evaluate(batch, out).map_err(|e| match e {}),
            AnyEvaluator::Net(e, _) => e.evaluate(batch, out),
        }
    }
}
