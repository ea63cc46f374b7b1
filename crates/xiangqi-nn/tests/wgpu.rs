//! The wgpu device against the CPU device: forward passes, a training step and checkpoints
//! agree. In CI the device is Mesa's lavapipe (Vulkan on the CPU), which `.ci/run` installs and
//! announces with `XQZ_REQUIRE_WGPU=1`; without that variable, a machine with no Vulkan adapter
//! skips these tests with a message. Built with the feature `wgpu` (a default of `xqz`, so the
//! README's test command builds it).
#![cfg(feature = "wgpu")]

use std::path::PathBuf;

use burn::module::Module;
use burn::tensor::{Tensor, TensorData};
use xiangqi::env::{self, INPUT_SIZE, PLANE_FILES, PLANE_RANKS, PLANES, POLICY_SIZE};
use xiangqi::{Game, Position, RuleSet};
use xiangqi_nn::device::DeviceSpec;
use xiangqi_nn::{
    Device, GlobalKind, InferenceNet, Net, NetConfig, TrainBatch, TrainConfig, Trainer, checkpoint,
    cpu_device,
};

/// The wgpu device, or `None` (after saying why) where there is none and CI did not ask for one.
fn wgpu() -> Option<Device> {
    match DeviceSpec::Wgpu(None).device() {
        Ok(d) => Some(d),
        Err(e) if std::env::var_os("XQZ_REQUIRE_WGPU").is_none() => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("XQZ_REQUIRE_WGPU is set but the wgpu device is not available: {e}"),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xqz-wgpu-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Positions from a few plies of deterministic play from the start, as input planes.
fn planes(n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n * INPUT_SIZE];
    let mut game = Game::new(Position::start(), RuleSet::Asian);
    for (i, chunk) in out.chunks_exact_mut(INPUT_SIZE).enumerate() {
        env::encode_planes(&game, chunk);
        let moves = game.legal_moves();
        if game.play(moves[(i * 7 + 3) % moves.len()]).unwrap().is_some() {
            game = Game::new(Position::start(), RuleSet::Asian);
        }
    }
    out
}

fn tensor(planes: Vec<f32>, device: &Device) -> Tensor<4> {
    let n = planes.len() / INPUT_SIZE;
    Tensor::from_data(TensorData::new(planes, [n, PLANES, PLANE_RANKS, PLANE_FILES]), device)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}

/// A small net with every kind of block, its weights moved away from the initialisation by a
/// few CPU training steps (so that batch-norm statistics are not trivial).
fn small_net() -> Net {
    let config = NetConfig {
        blocks: 2,
        filters: 16,
        global: GlobalKind::GlobalPooling,
        ..NetConfig::tiny()
    };
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&config, &no_mirror(), &cpu_device(), 3).unwrap();
    for seed in 0..3 {
        trainer.step(&batch(32, seed)).unwrap();
    }
    trainer.net().clone()
}

fn no_mirror() -> TrainConfig {
    TrainConfig { warmup_steps: 0, mirror: false, micro_batch: 0, ..TrainConfig::default() }
}

/// `n` samples: planes of [`planes`], a policy target on two actions, WDL targets in turn.
fn batch(n: usize, seed: u64) -> TrainBatch {
    let all = planes(n + seed as usize);
    let mut b = TrainBatch::with_capacity::<xiangqi::Game>(n);
    for i in 0..n {
        let mut policy = vec![0.0; POLICY_SIZE];
        policy[(i * 37 + 11) % POLICY_SIZE] = 0.75;
        policy[(i * 91 + 5) % POLICY_SIZE] += 0.25;
        let wdl = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]][i % 3];
        let at = (i + seed as usize) * INPUT_SIZE;
        b.push(&all[at..at + INPUT_SIZE], &policy, wdl, i % 4 != 0);
    }
    b
}

#[test]
fn the_forward_pass_agrees_with_the_cpu() {
    let Some(gpu) = wgpu() else { return };
    let net = small_net();
    let cpu = cpu_device();
    let x = planes(24);
    // The trained module moved to each device, in inference mode.
    let on_cpu = net.valid();
    let on_gpu = net.valid().to_device(&gpu);
    let a = on_cpu.forward(tensor(x.clone(), &cpu));
    let b = on_gpu.forward(tensor(x.clone(), &gpu));
    let (pa, pb) = (values(a.policy), values(b.policy));
    let (wa, wb) = (values(a.wdl), values(b.wdl));
    assert!(pa.iter().any(|&v| v.abs() > 1e-3), "a trivial output proves nothing");
    assert!(max_abs_diff(&pa, &pb) < 1e-3, "policy: {}", max_abs_diff(&pa, &pb));
    assert!(max_abs_diff(&wa, &wb) < 1e-3, "wdl: {}", max_abs_diff(&wa, &wb));
    // The folded inference net (what self-play evaluates with), on each device.
    let fa = InferenceNet::from_net(&net, &cpu).unwrap().predict(x.clone()).unwrap();
    let on_gpu = InferenceNet::from_net(&net, &gpu).unwrap();
    // bfloat16 is the CPU kernels' arithmetic: a GPU net asked for it stays f32 and says why.
    let asked = on_gpu.clone().with_precision(xiangqi_nn::Precision::Bf16);
    assert_eq!(asked.precision(), xiangqi_nn::Precision::F32);
    assert!(asked.bf16_unavailable().is_some_and(|r| r.contains("CPU device")));
    let fb = on_gpu.predict(x).unwrap();
    assert!(max_abs_diff(&fa.policy, &fb.policy) < 1e-3);
    assert!(max_abs_diff(&fa.wdl, &fb.wdl) < 1e-3);
    assert!(max_abs_diff(&fa.policy, &pa) < 1e-3, "folding changed the policy");
}

#[test]
fn a_training_step_agrees_with_the_cpu() {
    let Some(gpu) = wgpu() else { return };
    let net = small_net();
    let b = batch(48, 9);
    let mut on_cpu = Trainer::from_net(net.clone(), &no_mirror(), &cpu_device(), 1).unwrap();
    let mut on_gpu = Trainer::from_net(net, &no_mirror(), &gpu, 1).unwrap();
    let (ma, mb) = (on_cpu.step(&b).unwrap(), on_gpu.step(&b).unwrap());
    for (name, x, y) in [
        ("loss", ma.loss, mb.loss),
        ("policy loss", ma.policy_loss, mb.policy_loss),
        ("value loss", ma.value_loss, mb.value_loss),
        ("gradient norm", ma.grad_norm, mb.grad_norm),
    ] {
        assert!((x - y).abs() <= 1e-3 * x.abs().max(1.0), "{name}: cpu {x} wgpu {y}");
    }
    // The updated weights give the same outputs (a second step on each, then a forward pass).
    on_cpu.step(&b).unwrap();
    on_gpu.step(&b).unwrap();
    let x = planes(16);
    let a = InferenceNet::from_net(on_cpu.net(), &cpu_device()).unwrap().predict(x.clone());
    let c = InferenceNet::from_net(on_gpu.net(), &gpu).unwrap().predict(x);
    let (a, c) = (a.unwrap(), c.unwrap());
    assert!(max_abs_diff(&a.policy, &c.policy) < 5e-3, "{}", max_abs_diff(&a.policy, &c.policy));
    assert!(max_abs_diff(&a.wdl, &c.wdl) < 5e-3, "{}", max_abs_diff(&a.wdl, &c.wdl));
}

#[test]
fn checkpoints_move_between_the_devices() {
    let Some(gpu) = wgpu() else { return };
    let net = small_net();
    let dir = temp_dir("ckpt");
    // Trained on the GPU, saved, loaded on the CPU (and the other way).
    let mut on_gpu = Trainer::from_net(net, &no_mirror(), &gpu, 2).unwrap();
    on_gpu.step(&batch(32, 4)).unwrap();
    checkpoint::save_trainer(&on_gpu, &dir.join("from-gpu"), &Default::default()).unwrap();
    let (cpu_net, _) = checkpoint::load_net(&dir.join("from-gpu"), None, &cpu_device()).unwrap();
    let x = planes(8);
    let a = InferenceNet::from_net(on_gpu.net(), &gpu).unwrap().predict(x.clone()).unwrap();
    let b = InferenceNet::from_net(&cpu_net, &cpu_device()).unwrap().predict(x.clone()).unwrap();
    assert!(max_abs_diff(&a.policy, &b.policy) < 1e-3);
    checkpoint::save_net(&cpu_net, &dir.join("from-cpu")).unwrap();
    let (gpu_net, _) = checkpoint::load_net(&dir.join("from-cpu"), None, &gpu).unwrap();
    let c = InferenceNet::from_net(&gpu_net, &gpu).unwrap().predict(x).unwrap();
    assert!(max_abs_diff(&b.wdl, &c.wdl) < 1e-3);
    // A trainer resumes on the other device with its step count.
    let (resumed, _) =
        checkpoint::load_trainer(&dir.join("from-gpu"), None, None, &cpu_device()).unwrap();
    assert_eq!(resumed.step_count(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
