//! The bfloat16 tower ([`Precision::Bf16`]: AMX tiles, or AVX-512 BF16 where the CPU has no AMX)
//! against the `f32` kernels on the same folded nets: trained nets of several shapes, real
//! positions of both games. Skipped (with a line on stderr) where the CPU has neither; the
//! fallback test runs everywhere. bfloat16 training needs AMX.

mod common;
use common::real_planes_for;
use xiangqi::Game;
use xiangqi_nn::{
    GlobalKind, InferenceNet, Logits, NetConfig, Precision, TrainBatch, TrainConfig, Trainer,
    cpu_device,
};
use xiangqi_search::Encoding;

type Janggi = xiangqi::janggi::Game;

/// Xiangqi with the feature planes (23 planes, the main job's), janggi without (16).
fn encodings() -> [(&'static str, Encoding); 2] {
    let xiangqi = Encoding::of::<Game>().with_features(true).expect("xiangqi has feature planes");
    [("xiangqi", xiangqi), ("janggi", Encoding::of::<Janggi>())]
}

fn planes(encoding: &Encoding, n: usize, seed: u64) -> Vec<f32> {
    if encoding.policy_size == Encoding::of::<Game>().policy_size {
        real_planes_for::<Game>(encoding, n, seed)
    } else {
        real_planes_for::<Janggi>(encoding, n, seed)
    }
}

/// A net of `config` after a few optimizer steps on real positions (so that the folded batch
/// norms are not the identity and the logits spread).
fn trained(config: &NetConfig, encoding: Encoding, seed: u64) -> InferenceNet {
    let device = cpu_device();
    let base = Encoding::of::<Game>().planes;
    let config = &NetConfig { input_features: encoding.planes > base, ..config.clone() };
    let training = TrainConfig { warmup_steps: 0, learning_rate: 0.01, ..TrainConfig::default() };
    let mut trainer = Trainer::for_encoding(config, encoding, &training, &device, seed).unwrap();
    let batch = batch(encoding, 32, seed);
    for _ in 0..5 {
        trainer.step(&batch).unwrap();
    }
    trainer.inference_net(&device).unwrap()
}

fn softmax(x: &[f32]) -> Vec<f64> {
    let m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let e: Vec<f64> = x.iter().map(|&v| f64::from(v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// How far two outputs of the same positions are apart, as the search sees them: the largest
/// total-variation distance between the policies (over all moves) and the largest difference
/// of the value `P(win) − P(loss)`.
fn distance(a: &Logits, b: &Logits) -> (f64, f64) {
    let (mut policy, mut value) = (0.0f64, 0.0f64);
    for i in 0..a.batch {
        let (p, q) = (softmax(a.policy(i)), softmax(b.policy(i)));
        let tv = p.iter().zip(&q).map(|(x, y)| (x - y).abs()).sum::<f64>() / 2.0;
        policy = policy.max(tv);
        let (w, v) = (softmax(&a.wdl[i * 3..i * 3 + 3]), softmax(&b.wdl[i * 3..i * 3 + 3]));
        value = value.max(((w[0] - w[2]) - (v[0] - v[2])).abs());
    }
    (policy, value)
}

/// bfloat16 keeps 8 significant bits (a relative rounding of at most 2⁻⁹ per value), so each
/// layer's outputs move by well under 1%. On these nets the policies moved by at most 0.0005 of
/// their mass and the values by 0.0003 when this test was written; the bound, 0.003, leaves
/// room for other CPUs' summation order and still fails when one tap of one layer is wrong
/// (0.009 on the 2 × 24 net, 0.28 on the 6 × 64 one). The kernel's own test checks every tap,
/// channel and bias against the convolution's definition.
#[test]
fn bf16_outputs_follow_the_f32_kernels() {
    if !Precision::bf16_available() {
        eprintln!("skipped: this CPU has neither AMX nor AVX-512 BF16");
        return;
    }
    let configs = [
        NetConfig::new(2, 24),
        NetConfig::new(6, 64),
        NetConfig::new(1, 8),
        NetConfig { policy_channels: 4, value_channels: 3, ..NetConfig::new(3, 40) },
    ];
    for (game, encoding) in encodings() {
        for (k, config) in configs.iter().enumerate() {
            let f32_net = trained(config, encoding, 10 + k as u64);
            let bf16_net = f32_net.clone().with_precision(Precision::Bf16);
            assert_eq!(bf16_net.precision(), Precision::Bf16);
            assert_eq!(f32_net.bf16_unavailable(), None);
            assert_eq!(f32_net.precision(), Precision::F32);
            let auto = f32_net.clone().with_precision(Precision::Auto);
            assert_eq!(auto.precision(), Precision::Bf16, "auto runs bf16 where it can");
            let x = planes(&encoding, 300, 3 + k as u64);
            let a = f32_net.predict(x.clone()).unwrap();
            let b = bf16_net.predict(x.clone()).unwrap();
            assert_eq!(
                (a.batch, a.policy.len(), a.wdl.len()),
                (b.batch, b.policy.len(), b.wdl.len())
            );
            assert!(b.policy.iter().chain(&b.wdl).all(|v| v.is_finite()), "{game} {config:?}");
            assert_ne!(a, b, "{game} {config:?}: bfloat16 gave the f32 logits bit for bit");
            let (policy, value) = distance(&a, &b);
            eprintln!(
                "{game} {}x{}: policy {policy:.5}, value {value:.5}",
                config.blocks, config.filters
            );
            assert!(
                policy < 0.003 && value < 0.003,
                "{game} {config:?}: policy {policy}, value {value}"
            );
            // Chunk sizes and batch splits do not change a position's bfloat16 logits.
            for chunk in [1, 7, 16, 300] {
                let c = bf16_net.clone().with_chunk_size(chunk).predict(x.clone()).unwrap();
                assert_eq!(c, b, "{game} {config:?}: chunk size {chunk}");
            }
            let one = bf16_net.predict(x[..encoding.input_size()].to_vec()).unwrap();
            assert_eq!(one.policy(0), b.policy(0));
        }
    }
}

/// A NaN input reaches its own position's logits (the evaluator's NaN fallback relies on it) and
/// no other position's.
#[test]
fn bf16_nan_input_stays_in_its_position() {
    if !Precision::bf16_available() {
        eprintln!("skipped: this CPU has neither AMX nor AVX-512 BF16");
        return;
    }
    for (game, encoding) in encodings() {
        let net = trained(&NetConfig::new(2, 24), encoding, 5).with_precision(Precision::Bf16);
        let mut x = planes(&encoding, 20, 9);
        let clean = net.predict(x.clone()).unwrap();
        // Position 7, plane 2, a corner point (a NaN there reaches every point in two layers).
        x[7 * encoding.input_size() + 2 * 90] = f32::NAN;
        let got = net.predict(x).unwrap();
        for i in 0..20 {
            if i == 7 {
                assert!(got.wdl[21..24].iter().any(|v| v.is_nan()), "{game}: NaN lost");
            } else {
                assert_eq!(got.policy(i), clean.policy(i), "{game}: position {i} changed");
                assert_eq!(got.wdl[i * 3..i * 3 + 3], clean.wdl[i * 3..i * 3 + 3]);
            }
        }
    }
}

/// A tower the bfloat16 kernels do not run (global pooling, squeeze-excitation) stays `f32`, with
/// the `f32` outputs; so does every net where the CPU has neither AMX nor AVX-512 BF16.
#[test]
fn bf16_falls_back_to_f32_where_it_cannot_run() {
    let (_, encoding) = encodings()[0];
    let mut configs = vec![
        NetConfig {
            global: GlobalKind::GlobalPooling,
            global_channels: 4,
            ..NetConfig::new(2, 16)
        },
        NetConfig {
            global: GlobalKind::SqueezeExcitation,
            global_channels: 4,
            ..NetConfig::new(2, 16)
        },
    ];
    if !Precision::bf16_available() {
        configs.push(NetConfig::new(2, 24));
    }
    for config in configs {
        let net = trained(&config, encoding, 4);
        let asked = net.clone().with_precision(Precision::Bf16);
        assert_eq!(asked.precision(), Precision::F32, "{config:?}");
        let auto = net.clone().with_precision(Precision::Auto);
        assert_eq!(auto.precision(), Precision::F32, "{config:?}");
        let why = net.bf16_unavailable().expect("a reason");
        let expected =
            if Precision::bf16_available() { "global pooling" } else { "neither AMX nor AVX-512" };
        assert!(why.contains(expected), "{config:?}: {why}");
        let x = planes(&encoding, 10, 2);
        assert_eq!(asked.predict(x.clone()).unwrap(), net.predict(x).unwrap());
    }
}

/// A batch of `n` real positions of `encoding` with fixed one-hot policy and WDL targets.
fn batch(encoding: Encoding, n: usize, seed: u64) -> TrainBatch {
    let x = planes(&encoding, n, seed);
    let mut batch = TrainBatch::for_encoding(encoding, n);
    for (j, p) in x.chunks_exact(encoding.input_size()).enumerate() {
        let mut policy = vec![0.0; encoding.policy_size];
        policy[(j * 131 + 7) % encoding.policy_size] = 1.0;
        batch.push(p, &policy, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]][j % 3], true);
    }
    batch
}

/// `training.precision = "bf16"` (the tower's convolutions and their gradients in bfloat16 on
/// AMX) against `f32` from the same weights, on the main job's 2 × 24 net and a 3 × 40 one with
/// micro-batches: the first step's losses (the same weights, only rounding differs) within
/// 0.2%, its gradient norm within 2%; thirty steps on one batch fit it as `f32` does (the
/// final losses apart by under 5% of the starting loss). Where AMX runs, the gradients differ from `f32`'s (the bfloat16
/// path ran, the backward steps included); elsewhere the trainer says `f32` and steps bit for
/// bit as `f32`.
#[test]
fn bf16_training_follows_f32_training() {
    let device = cpu_device();
    let amx = Precision::bf16_training_available();
    for (game, encoding) in encodings() {
        for (config, micro_batch) in [(NetConfig::new(2, 24), 64), (NetConfig::new(3, 40), 16)] {
            let base = Encoding::of::<Game>().planes;
            let config = &NetConfig { input_features: encoding.planes > base, ..config };
            let what = format!("{game} {}x{}", config.blocks, config.filters);
            let training = |precision| TrainConfig {
                warmup_steps: 0,
                learning_rate: 0.005,
                micro_batch,
                precision,
                ..TrainConfig::default()
            };
            let new = |precision| {
                Trainer::for_encoding(config, encoding, &training(precision), &device, 7).unwrap()
            };
            let (mut f, mut b) = (new(Precision::F32), new(Precision::Bf16));
            assert_eq!(f.precision(), Precision::F32);
            assert_eq!(b.precision(), if amx { Precision::Bf16 } else { Precision::F32 });
            assert_eq!(new(Precision::Auto).precision(), b.precision(), "{what}: auto");
            let data = batch(encoding, 64, 11);
            let (f1, b1) = (f.step(&data).unwrap(), b.step(&data).unwrap());
            let rel = |a: f32, b: f32| f64::from((a - b).abs() / a.abs().max(1e-6));
            assert!(rel(f1.policy_loss, b1.policy_loss) < 2e-3, "{what}: {f1:?} {b1:?}");
            assert!(rel(f1.value_loss, b1.value_loss) < 2e-3, "{what}: {f1:?} {b1:?}");
            assert!(rel(f1.grad_norm, b1.grad_norm) < 2e-2, "{what}: {f1:?} {b1:?}");
            if amx {
                assert_ne!(f1.grad_norm, b1.grad_norm, "{what}: bfloat16 gave f32's gradient");
            } else {
                assert_eq!(f1, b1, "{what}: the f32 fallback");
            }
            let (mut fl, mut bl) = (f1.loss, b1.loss);
            for _ in 1..30 {
                fl = f.step(&data).unwrap().loss;
                bl = b.step(&data).unwrap().loss;
            }
            eprintln!("{what}: loss {} -> f32 {fl}, bf16 {bl}", f1.loss);
            assert!(fl < 0.8 * f1.loss && bl < 0.8 * b1.loss, "{what}: {fl} {bl} from {}", f1.loss);
            // The same progress: the final losses apart by under 5% of the starting loss.
            assert!((fl - bl).abs() < 0.05 * f1.loss, "{what}: f32 {fl}, bf16 {bl}");
        }
    }
}
