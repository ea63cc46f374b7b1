//! `xqz bench`: the network's throughput on a device: inference positions per second at batch
//! 64, 256 and 1024 or the batches `--batches` names (the folded net self-play evaluates with,
//! planes in and every logit out), and training samples per second at the config's batch size.
//! The kernels' lines also give, in brackets, the rate when only the policy logits of the
//! positions' legal moves are asked for, as self-play's evaluator asks. On the CPU the inference lines are
//! the CPU kernels self-play uses, with burn's operations on the same net beside them
//! (`inference (burn)`) for comparison; on a CPU with AMX or AVX-512 BF16 also the bfloat16
//! tower (`inference (bf16)`), and on one with AMX bfloat16 training (`training  (bf16)`). The net has the shapes of the config's
//! game (`selfplay.game`), its inputs that game's positions.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use xiangqi::{Game, janggi};
use xiangqi_nn::{
    InferenceNet, InferencePath, Logits, Manifest, Net, Precision, TrainBatch, Trainer,
};
use xiangqi_search::{Encoding, GameEnv, GameKind, SearchGame};

/// Arguments of `xqz bench`.
#[derive(clap::Args)]
pub struct Args {
    /// Config whose `[network]` and `[training]` are measured (`loop.batch_size` is the training
    /// batch); default: the built-in `configs/cpu.toml`, the net `xqz train` trains without
    /// `--config`.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The device: cpu, wgpu, wgpu:N or cuda:N; default: the config's `loop.device`.
    #[arg(long)]
    device: Option<String>,
    /// Seconds spent on each measurement (after one warm-up call).
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Inference batch sizes to measure, comma-separated (each 1 to 65,536).
    #[arg(
        long,
        value_delimiter = ',',
        allow_negative_numbers = true,
        default_value = "64,256,1024",
        value_parser = clap::value_parser!(u32).range(1..=65_536)
    )]
    batches: Vec<u32>,
    /// Threads of the CPU backend (0 = all cores).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=1024))]
    threads: u16,
    /// Also write the measured net, as `xqz export` writes a net, into this directory (which
    /// must not exist, be empty, or hold an earlier export): another runtime can then be timed
    /// on the very same net.
    #[arg(long)]
    export: Option<PathBuf>,
}

/// `n` positions of game `G` from a deterministic walk of legal moves.
struct Positions {
    /// Input planes, `[n, planes, 10, 9]`.
    planes: Vec<f32>,
    /// Position `i`'s legal moves' policy indices are `indices[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<usize>,
    indices: Vec<u32>,
}

fn positions<G: GameEnv>(encoding: &Encoding, n: usize) -> anyhow::Result<Positions> {
    let mut planes = vec![0.0; n * encoding.input_size()];
    let (mut offsets, mut indices) = (vec![0], Vec::new());
    let new = || G::new_game(G::start_position(G::default_rules()), G::default_rules());
    let mut game = new();
    for (i, chunk) in planes.chunks_exact_mut(encoding.input_size()).enumerate() {
        encoding.encode(&game, chunk);
        let moves = game.legal_moves_vec();
        for &m in &moves {
            let k = G::move_to_index(m, game.turn())
                .with_context(|| format!("{m} has no policy index"))?;
            indices.push(u32::try_from(k)?);
        }
        offsets.push(indices.len());
        if moves.is_empty() || game.moves().len() >= 120 {
            game = new();
        } else {
            SearchGame::play(&mut game, moves[(i * 7919 + 13) % moves.len()]);
        }
    }
    Ok(Positions { planes, offsets, indices })
}

/// Calls `f` once to warm up, then repeatedly for about `seconds`; the rate of `units` per call,
/// per second, over the timed calls.
fn rate(
    seconds: f64,
    units: usize,
    mut f: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<f64> {
    f()?;
    let start = Instant::now();
    let mut calls = 0u64;
    while calls < 2 || start.elapsed() < Duration::from_secs_f64(seconds) {
        f()?;
        calls += 1;
    }
    Ok(calls as f64 * units as f64 / start.elapsed().as_secs_f64())
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 600.0) {
        anyhow::bail!("--seconds must be above 0 and at most 600");
    }
    let threads = match args.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => usize::from(n),
    };
    let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
    let (config, origin) = match &args.config {
        Some(path) => (crate::config::load_checked(path)?, path.display().to_string()),
        None => {
            let origin = crate::config::BUILTIN_CPU_ORIGIN;
            (crate::config::parse_checked(crate::config::BUILTIN_CPU, origin)?, origin.to_string())
        }
    };
    let name = args.device.clone().unwrap_or_else(|| config.run().device.clone());
    let device = crate::net::device(&name)?;
    let c = config.network();
    outln!(
        "network: {} blocks x {} filters for {} ({}), device {}",
        c.blocks,
        c.filters,
        config.game(),
        origin,
        name
    );
    let game = config.game();
    let encoding = Encoding::for_net(game, c.input_features)
        .map_err(|reason| anyhow::anyhow!("network.input_features: {reason}"))?;
    let positions = |n| match game {
        GameKind::Xiangqi => positions::<Game>(&encoding, n),
        GameKind::Janggi => positions::<janggi::Game>(&encoding, n),
    };
    // The policy logits of the positions' legal moves only, as self-play's evaluator asks.
    let legal = |net: &InferenceNet, p: &Positions, policy: &mut Vec<f32>, wdl: &mut Vec<f32>| {
        net.predict_chosen_into(&p.planes, &p.offsets, &p.indices, policy, wdl)
    };
    let net = Net::seeded_for(c, encoding, &device, 1);
    if let Some(dir) = &args.export {
        let out = crate::export::export_target("--export", dir, None)?;
        xiangqi_nn::export::export_net(&net, &Manifest::new(c, &encoding), &out)
            .with_context(|| format!("exporting the measured net to {}", dir.display()))?;
        outln!("exported the measured net to {}", dir.display());
    }
    let folded = InferenceNet::from_net(&net, &device).context("folding the network")?;
    let burn = folded.clone().with_path(InferencePath::Backend);
    // The bfloat16 tower (AMX or AVX-512 BF16), where this CPU has it.
    let bf16 = folded.clone().with_precision(Precision::Bf16);
    let bf16 = (bf16.precision() == Precision::Bf16).then_some(bf16);
    if Precision::bf16_available()
        && let Some(reason) = folded.bf16_unavailable()
    {
        outln!("inference (bf16): not measured: {reason}");
    }
    for &batch in &args.batches {
        let batch = batch as usize;
        let p = positions(batch)?;
        let planes = &p.planes;
        let mut out = Logits::empty(encoding.policy_size);
        let (mut policy, mut wdl) = (Vec::new(), Vec::new());
        let r = rate(args.seconds, batch, || {
            folded.predict_into(planes, &mut out).map_err(Into::into)
        })?;
        let l = rate(args.seconds, batch, || {
            legal(&folded, &p, &mut policy, &mut wdl).map_err(Into::into)
        })?;
        outln!("inference  batch {batch:>5}: {r:>10.0} positions/s (legal moves: {l:.0})");
        if folded.path() == InferencePath::Kernels {
            let r = rate(args.seconds, batch, || {
                burn.predict(planes.clone()).map(|_| ()).map_err(Into::into)
            })?;
            outln!("inference (burn) {batch:>5}: {r:>10.0} positions/s");
        }
        if let Some(bf16) = &bf16 {
            let r = rate(args.seconds, batch, || {
                bf16.predict_into(planes, &mut out).map_err(Into::into)
            })?;
            let l = rate(args.seconds, batch, || {
                legal(bf16, &p, &mut policy, &mut wdl).map_err(Into::into)
            })?;
            outln!("inference (bf16) {batch:>5}: {r:>10.0} positions/s (legal moves: {l:.0})");
        }
    }
    let n = config.run().batch_size;
    let planes = positions(n)?.planes;
    let mut batch = TrainBatch::for_encoding(encoding, n);
    let policy_size = encoding.policy_size;
    for (i, p) in planes.chunks_exact(encoding.input_size()).enumerate() {
        let mut policy = vec![0.0; policy_size];
        policy[(i * 37 + 11) % policy_size] = 1.0;
        batch.push(p, &policy, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]][i % 3], true);
    }
    // In f32 whatever the config's `training.precision`, and in bfloat16 beside it where this
    // CPU has AMX (bfloat16 training needs it).
    let trainer = |precision| {
        let mut training = config.training().get().clone();
        training.precision = precision;
        Trainer::for_encoding(c, encoding, &training, &device, 1)
    };
    let mut f32_trainer = trainer(Precision::F32)?;
    let r = rate(args.seconds, n, || f32_trainer.step(&batch).map(|_| ()).map_err(Into::into))?;
    outln!("training   batch {n:>5}: {r:>10.0} samples/s");
    if Precision::bf16_training_available() {
        let mut bf16_trainer = trainer(Precision::Bf16)?;
        match bf16_trainer.bf16_unavailable() {
            Some(reason) => outln!("training  (bf16): not measured: {reason}"),
            None => {
                let r = rate(args.seconds, n, || {
                    bf16_trainer.step(&batch).map(|_| ()).map_err(Into::into)
                })?;
                outln!("training  (bf16) {n:>5}: {r:>10.0} samples/s");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
