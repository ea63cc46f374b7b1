//! Integration tests of the network crate on tiny nets (CPU backend).

mod common;
use common::real_planes_for;
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use burn::module::Module;
use burn::tensor::{Tensor, TensorData};
use xiangqi::env::{self, INPUT_SIZE, PLANE_FILES, PLANE_RANKS, PLANES, POLICY_SIZE, PlaneInputs};
use xiangqi::{Game, Position, RuleSet};
use xiangqi_nn::checkpoint::{self, CheckpointError};
use xiangqi_nn::{
    AuxiliaryTargets, GlobalKind, InferenceNet, Net, NetConfig, NnEvaluator, Precision, TrainBatch,
    TrainConfig, Trainer, cpu_device,
};
use xiangqi_search::{EvalBuffer, EvalRequest, Evaluator, SearchGame};

/// A fresh directory under the target dir for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xiangqi-nn-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Games along a pseudo-random line from the start position, one per ply.
fn games(n: usize, seed: u64) -> Vec<Game> {
    let mut out = Vec::with_capacity(n);
    let mut state = seed;
    let mut game = Game::new(Position::start(), RuleSet::Asian);
    let mut moves = Vec::new();
    while out.len() < n {
        moves.clear();
        game.legal_moves_into(&mut moves);
        if moves.is_empty() {
            game = Game::new(Position::start(), RuleSet::Asian);
            continue;
        }
        out.push(game.clone());
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        SearchGame::play(&mut game, moves[(state >> 33) as usize % moves.len()]);
    }
    out
}

/// A batch of `n` samples from random positions: the policy target is concentrated on two legal
/// moves, the WDL target cycles through win, draw, loss.
fn batch(n: usize, seed: u64, full: impl Fn(usize) -> bool) -> TrainBatch {
    let mut b = TrainBatch::with_capacity::<xiangqi::Game>(n);
    let mut planes = vec![0.0; INPUT_SIZE];
    for (i, game) in games(n, seed).iter().enumerate() {
        env::encode_planes(game, &mut planes);
        let turn = game.position().turn();
        let moves = game.legal_moves();
        let mut policy = vec![0.0; POLICY_SIZE];
        policy[env::move_to_index(moves[i % moves.len()], turn).unwrap()] += 0.8;
        policy[env::move_to_index(moves[(i * 7 + 3) % moves.len()], turn).unwrap()] += 0.2;
        let wdl = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]][i % 3];
        b.push(&planes, &policy, wdl, full(i));
    }
    b
}

fn planes_tensor(planes: Vec<f32>) -> Tensor<4> {
    let n = planes.len() / INPUT_SIZE;
    Tensor::from_data(TensorData::new(planes, [n, PLANES, PLANE_RANKS, PLANE_FILES]), &cpu_device())
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn no_warmup() -> TrainConfig {
    TrainConfig { warmup_steps: 0, ..TrainConfig::default() }
}

#[test]
fn one_batch_overfits() {
    overfit(0);
}

#[test]
fn one_batch_overfits_in_micro_batches() {
    overfit(8);
}

fn overfit(micro_batch: usize) {
    let config = TrainConfig {
        micro_batch,
        learning_rate: 3e-3,
        warmup_steps: 0,
        weight_decay: 0.0,
        mirror: false,
        ..TrainConfig::default()
    };
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 1).unwrap();
    let b = batch(16, 11, |_| true);
    let first = trainer.step(&b).unwrap();
    let mut last = first;
    for _ in 0..150 {
        last = trainer.step(&b).unwrap();
    }
    assert!(
        last.loss < first.loss / 10.0,
        "loss fell from {} to {} only (policy {} value {})",
        first.loss,
        last.loss,
        last.policy_loss,
        last.value_loss
    );
    assert_eq!(last.step, 150);
    assert_eq!(trainer.step_count(), 151);
    assert_eq!(trainer.samples_seen(), 151 * 16);
    assert!(last.value_accuracy > 0.99, "{last:?}");
    assert!(last.policy_entropy < first.policy_entropy);
}

/// Every trainable parameter of a module, in visiting order, each as its values; batch-norm
/// running statistics (visited too, as tensors that require no gradient) are state, left out.
struct Params(Vec<Vec<f32>>);

impl burn::module::ModuleVisitor for Params {
    fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<D>>) {
        let value = param.val();
        if value.is_require_grad() {
            self.0.push(value.try_into_vec_as::<f32>().unwrap());
        }
    }
}

fn params_of<M: Module>(module: &M) -> Vec<Vec<f32>> {
    let mut p = Params(Vec::new());
    module.visit(&mut p);
    p.0
}

/// Plain SGD (no momentum, no weight decay, no clipping, no mirror, no warm-up): one step
/// changes each parameter by exactly `−learning_rate · gradient`, so the change of the weights
/// shows the gradient the trainer computed.
fn plain_sgd(micro_batch: usize) -> TrainConfig {
    TrainConfig {
        optimizer: xiangqi_nn::OptimizerKind::Sgd,
        learning_rate: 0.1,
        momentum: 0.0,
        weight_decay: 0.0,
        grad_clip_norm: 0.0,
        mirror: false,
        micro_batch,
        ..no_warmup()
    }
}

/// The change of every parameter in one step of a fresh trainer (seed 9) on `b`.
fn update(config: &TrainConfig, b: &TrainBatch) -> Vec<f32> {
    let mut t =
        Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), config, &cpu_device(), 9).unwrap();
    let before = params_of(t.net());
    t.step(b).unwrap();
    let after = params_of(t.net());
    before.iter().flatten().zip(after.iter().flatten()).map(|(b, a)| a - b).collect()
}

#[test]
fn micro_batches_sum_their_gradients() {
    // A micro-batch as large as the batch is one pass.
    let b = batch(8, 12, |i| i % 3 != 0);
    let step = |micro_batch| {
        let config = TrainConfig { micro_batch, ..no_warmup() };
        let mut t =
            Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 9).unwrap();
        let m = t.step(&b).unwrap();
        (m, t.inference_net(&cpu_device()).unwrap().predict(b.planes().to_vec()).unwrap())
    };
    let (whole, whole_out) = step(0);
    let (same, same_out) = step(8);
    assert_eq!(whole, same);
    assert_eq!(whole_out, same_out);
    // Smaller passes sum their gradients: with every sample a full search, each micro-batch's
    // share of the loss is its samples' share of the batch, so the update of a step in
    // micro-batches of 3, 3 and 2 samples is 3/8, 3/8 and 2/8 of the updates of steps on each
    // micro-batch alone (a batch norm normalizes each micro-batch by its own statistics, so
    // the sum is that of the parts as they are, not the whole batch's gradient). Averaged
    // instead of summed, the update would be a third of that; a part left out, 3/8 short.
    let all_full = batch(8, 12, |_| true);
    let micro = update(&plain_sgd(3), &all_full);
    let mut parts = vec![0.0f32; micro.len()];
    for (start, end) in [(0, 3), (3, 6), (6, 8)] {
        let mut part = TrainBatch::with_capacity::<xiangqi::Game>(end - start);
        for i in start..end {
            let planes = &all_full.planes()[i * INPUT_SIZE..(i + 1) * INPUT_SIZE];
            let policy = &all_full.policy()[i * POLICY_SIZE..(i + 1) * POLICY_SIZE];
            let w = &all_full.wdl()[3 * i..3 * i + 3];
            part.push(planes, policy, [w[0], w[1], w[2]], true);
        }
        let share = (end - start) as f32 / 8.0;
        for (sum, d) in parts.iter_mut().zip(update(&plain_sgd(0), &part)) {
            *sum += share * d;
        }
    }
    let scale = micro.iter().fold(0.0f32, |m, d| m.max(d.abs()));
    assert!(scale > 1e-3, "the step moved no weight: {scale}");
    let diff = max_abs_diff(&micro, &parts);
    assert!(
        diff < 1e-3 * scale,
        "micro-batched update off the sum of its parts by {diff} (largest change {scale})"
    );
    // Smaller passes: the same samples are counted once each.
    let (parts, parts_out) = step(3);
    assert_eq!((parts.samples, parts.full_searches), (8, whole.full_searches));
    assert!((parts.loss - (parts.policy_loss + parts.value_loss)).abs() < 1e-4);
    assert!(parts.grad_norm.is_finite() && parts.grad_norm > 0.0);
    // Switching between micro-batches and whole batches keeps training.
    let mut t = Trainer::new::<xiangqi::Game>(
        &NetConfig::tiny(),
        &TrainConfig { micro_batch: 3, ..no_warmup() },
        &cpu_device(),
        9,
    )
    .unwrap();
    t.step(&b).unwrap();
    t.set_config(&no_warmup()).unwrap();
    t.step(&b).unwrap();
    t.set_config(&TrainConfig { micro_batch: 3, ..no_warmup() }).unwrap();
    assert!(t.step(&b).unwrap().loss.is_finite());
    // They run in parallel, and the result (batch-norm statistics included) does not depend on
    // the number of threads.
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let (m, out) = pool.install(|| step(3));
        assert!((m.loss - parts.loss).abs() < 1e-5, "{threads} threads: {m:?} vs {parts:?}");
        assert!(max_abs_diff(&out.policy, &parts_out.policy) < 1e-5, "{threads} threads");
        assert!(max_abs_diff(&out.wdl, &parts_out.wdl) < 1e-5, "{threads} threads");
    }
}

/// The weight gradient is summed over the same chunks of positions, in the same order, whatever
/// the number of threads: two steps on 40 samples in one pass (three chunks of the kernels) give
/// the same metrics and the same net bit for bit with 1, 2 and 3 threads, in `f32` and (where
/// the CPU has AMX) in bfloat16.
#[test]
fn training_does_not_depend_on_the_number_of_threads() {
    let b = batch(40, 21, |i| i % 4 != 0);
    for precision in [Precision::F32, Precision::Bf16] {
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let config = TrainConfig { micro_batch: 0, precision, ..no_warmup() };
                let net = NetConfig::new(2, 16);
                let mut t = Trainer::new::<xiangqi::Game>(&net, &config, &cpu_device(), 4).unwrap();
                let first = t.step(&b).unwrap();
                let second = t.step(&b).unwrap();
                let out = t.inference_net(&cpu_device()).unwrap().predict(b.planes().to_vec());
                (first, second, out.unwrap())
            })
        };
        let one = run(1);
        for threads in [2, 3] {
            assert_eq!(run(threads), one, "{precision}: {threads} threads against 1");
        }
    }
}

#[test]
fn outputs_have_the_documented_shapes_and_folding_keeps_them() {
    for global in [GlobalKind::None, GlobalKind::SqueezeExcitation, GlobalKind::GlobalPooling] {
        let net_config = NetConfig {
            blocks: 2,
            filters: 8,
            global,
            global_channels: 4,
            global_every: 1,
            value_hidden: 16,
            ..NetConfig::default()
        };
        // A few steps so that the batch-norm statistics are not the initial ones.
        let mut trainer =
            Trainer::new::<xiangqi::Game>(&net_config, &no_warmup(), &cpu_device(), 2).unwrap();
        let b = batch(8, 5, |_| true);
        for _ in 0..3 {
            trainer.step(&b).unwrap();
        }
        let plain = trainer.net().valid().to_device(&cpu_device());
        let folded = trainer.inference_net(&cpu_device()).unwrap();
        for n in [1, 3] {
            let planes = b.planes()[..n * INPUT_SIZE].to_vec();
            let out = plain.forward(planes_tensor(planes.clone()));
            assert_eq!(out.policy.dims(), [n, POLICY_SIZE]);
            assert_eq!(out.wdl.dims(), [n, 3]);
            let f = folded.forward(planes_tensor(planes.clone()));
            assert_eq!(f.policy.dims(), [n, POLICY_SIZE]);
            assert_eq!(f.wdl.dims(), [n, 3]);
            let p: Vec<f32> = out.policy.try_to_vec_as::<f32>().unwrap();
            let fp: Vec<f32> = f.policy.try_to_vec_as::<f32>().unwrap();
            let w: Vec<f32> = out.wdl.try_to_vec_as::<f32>().unwrap();
            let fw: Vec<f32> = f.wdl.try_to_vec_as::<f32>().unwrap();
            assert!(max_abs_diff(&p, &fp) < 1e-3, "{global:?}: {}", max_abs_diff(&p, &fp));
            assert!(max_abs_diff(&w, &fw) < 1e-3, "{global:?}: {}", max_abs_diff(&w, &fw));
            let logits = folded.predict(planes).unwrap();
            assert_eq!(
                (logits.batch, logits.policy.len(), logits.wdl.len()),
                (n, n * POLICY_SIZE, n * 3)
            );
        }
        // A batch split into chunks gives what one pass gives.
        let planes = b.planes()[..5 * INPUT_SIZE].to_vec();
        let whole = folded.clone().with_chunk_size(100).predict(planes.clone()).unwrap();
        let chunked = folded.clone().with_chunk_size(2).predict(planes).unwrap();
        assert_eq!(chunked.batch, 5);
        assert!(max_abs_diff(&whole.policy, &chunked.policy) < 1e-5);
        assert!(max_abs_diff(&whole.wdl, &chunked.wdl) < 1e-5);
    }
}

#[test]
fn evaluator_priors_sum_to_one_over_legal_moves() {
    let device = cpu_device();
    device.seed(3);
    let net = Net::new::<xiangqi::Game>(&NetConfig::tiny(), &device);
    let folded = InferenceNet::from_net(&net, &device).unwrap();
    let mut evaluator = NnEvaluator::new(folded.clone());
    let games = games(12, 99);
    let move_lists: Vec<Vec<xiangqi::Move>> = games
        .iter()
        .map(|g| {
            let mut m = Vec::new();
            g.legal_moves_into(&mut m);
            m
        })
        .collect();
    assert!(games.iter().any(|g| g.position().turn() == xiangqi::Color::Black));
    let requests: Vec<EvalRequest<'_, Game>> =
        games.iter().zip(&move_lists).map(|(game, moves)| EvalRequest { game, moves }).collect();
    let mut out = EvalBuffer::new();
    out.prepare(&requests);
    evaluator.evaluate(&requests, &mut out).unwrap();

    let mut planes = vec![0.0; games.len() * INPUT_SIZE];
    for (g, chunk) in games.iter().zip(planes.chunks_exact_mut(INPUT_SIZE)) {
        env::encode_planes(g, chunk);
    }
    let logits = folded.predict(planes).unwrap();
    for (i, (game, moves)) in games.iter().zip(&move_lists).enumerate() {
        let priors = out.priors(i);
        assert_eq!(priors.len(), moves.len());
        // As a dense policy: the mass is on the legal moves' indices, zero elsewhere.
        let mut dense = vec![0.0f32; POLICY_SIZE];
        let turn = game.position().turn();
        for (&m, &p) in moves.iter().zip(priors) {
            assert!(p >= 0.0);
            dense[env::move_to_index(m, turn).unwrap()] += p;
        }
        let sum: f32 = dense.iter().sum();
        assert!((sum - 1.0).abs() < 1e-4, "priors sum to {sum}");
        // The prior is the softmax of the legal moves' logits.
        let row = logits.policy(i);
        let max = moves
            .iter()
            .map(|&m| row[env::move_to_index(m, turn).unwrap()])
            .fold(f32::NEG_INFINITY, f32::max);
        let z: f32 =
            moves.iter().map(|&m| (row[env::move_to_index(m, turn).unwrap()] - max).exp()).sum();
        for (&m, &p) in moves.iter().zip(priors) {
            let expected = (row[env::move_to_index(m, turn).unwrap()] - max).exp() / z;
            assert!((p - expected).abs() < 1e-5);
        }
        let [w, d, l] = logits.wdl_probabilities(i);
        assert!((w + d + l - 1.0).abs() < 1e-5);
        assert!((out.value(i) - (w - l)).abs() < 1e-6);
        assert!((-1.0..=1.0).contains(&out.value(i)));
    }
    // An empty batch is fine.
    let mut empty = EvalBuffer::new();
    empty.prepare::<Game>(&[]);
    Evaluator::<Game>::evaluate(&mut evaluator, &[], &mut empty).unwrap();
}

#[test]
fn compact_samples_give_the_same_batch() {
    let mut dense = TrainBatch::new::<xiangqi::Game>();
    let mut compact = TrainBatch::new::<xiangqi::Game>();
    let mut planes = vec![0.0; INPUT_SIZE];
    for game in games(5, 17) {
        env::encode_planes(&game, &mut planes);
        let mut policy = vec![0.0; POLICY_SIZE];
        policy[10] = 0.25;
        policy[2000] = 0.75;
        dense.push(&planes, &policy, [0.0, 1.0, 0.0], false);
        compact
            .push_compact(
                &PlaneInputs::from_game(&game),
                &[(10, 0.25), (2000, 0.75)],
                [0.0, 1.0, 0.0],
                false,
            )
            .unwrap();
    }
    // The same samples; only the legal-move masks differ (a dense target counts every action
    // as legal, a compact one lists the legal moves).
    assert_eq!(dense.planes(), compact.planes());
    assert_eq!(dense.policy(), compact.policy());
    assert_eq!(dense.wdl(), compact.wdl());
    assert_ne!(dense, compact);
    assert_eq!(dense.len(), 5);
    assert_eq!(dense.full_searches(), 0);
    let mut bad = PlaneInputs::from_game(&games(1, 1)[0]);
    bad.board[0] = 99;
    assert!(compact.push_compact(&bad, &[], [1.0, 0.0, 0.0], true).is_err());
    assert_eq!(compact.len(), 5);
    assert_eq!(compact.planes().len(), 5 * INPUT_SIZE);
}

#[test]
fn samples_without_a_full_search_carry_no_policy_loss() {
    let config = TrainConfig { weight_decay: 0.0, mirror: false, ..no_warmup() };
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 4).unwrap();
    let before: Vec<f32> = trainer.net().policy_fc.weight.val().try_to_vec_as::<f32>().unwrap();
    let m = trainer.step(&batch(8, 3, |_| false)).unwrap();
    assert_eq!(m.policy_loss, 0.0);
    assert_eq!(m.full_searches, 0);
    assert!(m.value_loss > 0.0);
    let after: Vec<f32> = trainer.net().policy_fc.weight.val().try_to_vec_as::<f32>().unwrap();
    assert_eq!(before, after, "the policy layer moved without a policy target");
    // With some full searches it does move, and the loss is their mean only.
    let m = trainer.step(&batch(8, 3, |i| i < 2)).unwrap();
    assert_eq!(m.full_searches, 2);
    assert!(m.policy_loss > 1.0);
    let moved: Vec<f32> = trainer.net().policy_fc.weight.val().try_to_vec_as::<f32>().unwrap();
    assert_ne!(after, moved);
}

#[test]
fn metrics_report_the_schedule_and_the_clipping() {
    let config = TrainConfig {
        learning_rate: 0.01,
        warmup_steps: 4,
        grad_clip_norm: 1e-3,
        ..TrainConfig::default()
    };
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 5).unwrap();
    let b = batch(8, 8, |_| true);
    for step in 0..5 {
        let m = trainer.step(&b).unwrap();
        assert_eq!(m.step, step);
        assert!((m.learning_rate - config.learning_rate_at(step)).abs() < 1e-15);
        // The reported norm is the one before clipping.
        assert!(m.grad_norm > 1e-3, "{m:?}");
        assert!(m.weight_decay_loss > 0.0);
        assert!((0.0..=1.0).contains(&m.value_accuracy));
        assert!(m.policy_entropy > 0.0 && m.policy_entropy <= (POLICY_SIZE as f32).ln() + 1e-3);
        let expected = m.policy_loss + m.value_loss;
        assert!((m.loss - expected).abs() < 1e-4 * expected);
    }
    assert!(trainer.step(&TrainBatch::new::<xiangqi::Game>()).is_err());
}

#[test]
fn checkpoint_round_trip_restores_weights_and_optimizer() {
    let dir = temp_dir("round-trip");
    let ckpt = dir.join("ckpt");
    let net_config =
        NetConfig { global: GlobalKind::SqueezeExcitation, global_every: 1, ..NetConfig::tiny() };
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&net_config, &no_warmup(), &cpu_device(), 6).unwrap();
    let b = batch(8, 21, |i| i % 2 == 0);
    for _ in 0..3 {
        trainer.step(&b).unwrap();
    }
    let counters = BTreeMap::from([("games".to_string(), 42u64)]);
    checkpoint::save_trainer(&trainer, &ckpt, &counters).unwrap();
    // Saving again over it works and leaves no temporary directories behind.
    checkpoint::save_trainer(&trainer, &ckpt, &counters).unwrap();
    let entries: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("ckpt")]);

    let (mut resumed, manifest) =
        checkpoint::load_trainer(&ckpt, Some(&net_config), None, &cpu_device()).unwrap();
    assert_eq!(manifest.counters, counters);
    assert_eq!(manifest.step, 3);
    assert_eq!(resumed.step_count(), 3);
    assert_eq!(resumed.samples_seen(), 24);
    assert_eq!(resumed.rng_state(), trainer.rng_state());
    assert_eq!(resumed.config(), trainer.config());

    // Same outputs after reload, on the plain device, for inference.
    let planes = b.planes().to_vec();
    let original = trainer.inference_net(&cpu_device()).unwrap().predict(planes.clone()).unwrap();
    let (plain, _) = checkpoint::load_net(&ckpt, Some(&net_config), &cpu_device()).unwrap();
    assert!(!plain.input.conv.weight.val().device().is_autodiff());
    let reloaded =
        InferenceNet::from_net(&plain, &cpu_device()).unwrap().predict(planes.clone()).unwrap();
    assert!(max_abs_diff(&original.policy, &reloaded.policy) < 1e-6);
    assert!(max_abs_diff(&original.wdl, &reloaded.wdl) < 1e-6);

    // The optimizer state is restored: the next step matches the uninterrupted run, and differs
    // from a step with a fresh optimizer.
    let (fresh_net, _) = checkpoint::load_net(&ckpt, None, &cpu_device()).unwrap();
    let mut fresh = Trainer::from_net(fresh_net, &no_warmup(), &cpu_device(), 0).unwrap();
    let m1 = trainer.step(&b).unwrap();
    let m2 = resumed.step(&b).unwrap();
    fresh.step(&b).unwrap();
    assert!((m1.loss - m2.loss).abs() < 1e-5);
    let next =
        |t: &Trainer| t.inference_net(&cpu_device()).unwrap().predict(planes.clone()).unwrap();
    let (a, r, f) = (next(&trainer), next(&resumed), next(&fresh));
    assert!(max_abs_diff(&a.policy, &r.policy) < 1e-5, "{}", max_abs_diff(&a.policy, &r.policy));
    assert!(max_abs_diff(&a.policy, &f.policy) > 1e-3, "{}", max_abs_diff(&a.policy, &f.policy));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_and_mismatched_checkpoints_are_refused() {
    let dir = temp_dir("refusals");
    let net_config = NetConfig::tiny();
    let trainer =
        Trainer::new::<xiangqi::Game>(&net_config, &no_warmup(), &cpu_device(), 7).unwrap();
    let good = dir.join("good");
    checkpoint::save_trainer(&trainer, &good, &BTreeMap::new()).unwrap();
    checkpoint::verify(&good, Some(&net_config)).unwrap();
    let copy = |name: &str| {
        let to = dir.join(name);
        fs::create_dir_all(&to).unwrap();
        for e in fs::read_dir(&good).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
        to
    };
    let load =
        |path: &PathBuf| checkpoint::load_net(path, Some(&net_config), &cpu_device()).map(|_| ());

    // Truncated weights.
    let truncated = copy("truncated");
    let model = truncated.join(checkpoint::MODEL_FILE);
    let bytes = fs::read(&model).unwrap();
    fs::write(&model, &bytes[..bytes.len() / 2]).unwrap();
    let err = load(&truncated).unwrap_err();
    assert!(matches!(err, CheckpointError::WrongSize { .. }), "{err}");
    assert!(
        err.to_string().contains("truncated") && err.to_string().contains("model.bpk"),
        "{err}"
    );

    // A flipped byte in the optimizer state.
    let corrupted = copy("corrupted");
    let optim = corrupted.join(checkpoint::OPTIMIZER_FILE);
    let mut bytes = fs::read(&optim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    fs::write(&optim, &bytes).unwrap();
    let err = checkpoint::load_trainer(&corrupted, None, None, &cpu_device()).unwrap_err();
    assert!(matches!(err, CheckpointError::Corrupted { .. }), "{err}");
    assert!(err.to_string().contains("corrupted") && err.to_string().contains("optimizer.bpk"));

    // Another network shape.
    let err = checkpoint::load_net(&good, Some(&NetConfig::new(2, 8)), &cpu_device()).unwrap_err();
    assert!(matches!(err, CheckpointError::NetMismatch { .. }), "{err}");
    assert!(err.to_string().contains("network.blocks: 1 vs 2"), "{err}");

    // Another encoding version.
    let encoding = copy("encoding");
    let manifest = encoding.join(checkpoint::MANIFEST);
    let text = fs::read_to_string(&manifest).unwrap();
    let needle = format!("encoding_version = {}", env::ENCODING_VERSION);
    assert!(text.contains(&needle));
    fs::write(&manifest, text.replace(&needle, "encoding_version = 99")).unwrap();
    let err = load(&encoding).unwrap_err();
    assert!(matches!(err, CheckpointError::EncodingVersion { found: 99, .. }), "{err}");
    assert!(err.to_string().contains("encoding version 99"), "{err}");

    // A damaged manifest, and none at all.
    let garbled = copy("garbled");
    fs::write(garbled.join(checkpoint::MANIFEST), "format_version = 1\nplanes = [").unwrap();
    assert!(matches!(load(&garbled).unwrap_err(), CheckpointError::BadManifest { .. }));
    let err = load(&dir.join("nothing-here")).unwrap_err();
    assert!(matches!(err, CheckpointError::NoManifest { .. }), "{err}");

    // A weights-only checkpoint loads for play but does not resume training.
    let weights = dir.join("weights");
    checkpoint::save_net(trainer.net(), &weights).unwrap();
    load(&weights).unwrap();
    let err = checkpoint::load_trainer(&weights, None, None, &cpu_device()).unwrap_err();
    assert!(matches!(err, CheckpointError::NoOptimizerState { .. }), "{err}");
    fs::remove_dir_all(&dir).unwrap();
}

/// Samples of random positions as a shard stores them: every legal move listed, the target
/// uniform over the first `k` of them.
fn compact_batch(n: usize, k: usize, value_weight: f32) -> (TrainBatch, Vec<usize>) {
    let mut b = TrainBatch::with_capacity::<xiangqi::Game>(n);
    let mut legal_counts = Vec::new();
    for game in games(n, 5) {
        let pos = game.position();
        let inputs = PlaneInputs {
            board: env::encode_board_compact(pos),
            turn: pos.turn(),
            halfmove_clock: pos.halfmove_clock(),
            repeated: false,
        };
        let moves = game.legal_moves();
        let kk = k.min(moves.len());
        let policy: Vec<(u16, f32)> = moves
            .iter()
            .enumerate()
            .map(|(i, &m)| {
                let index = env::move_to_index(m, pos.turn()).unwrap() as u16;
                (index, if i < kk { 1.0 / kk as f32 } else { 0.0 })
            })
            .collect();
        b.push_weighted(&inputs, &policy, [0.0, 1.0, 0.0], true, value_weight).unwrap();
        legal_counts.push(moves.len());
    }
    (b, legal_counts)
}

#[test]
fn masked_illegal_moves_get_no_probability_and_no_gradient() {
    let (b, legal) = compact_batch(24, 3, 1.0);
    let max_legal = *legal.iter().max().unwrap() as f32;
    let step = |mask_illegal: bool| {
        let config = TrainConfig { mask_illegal, mirror: true, ..no_warmup() };
        let mut trainer =
            Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 3).unwrap();
        trainer.step(&b).unwrap()
    };
    let masked = step(true);
    let unmasked = step(false);
    // Over the legal moves only, the entropy cannot exceed ln(#legal); over all 2,166 actions
    // an untrained net's is near ln(2166) = 7.68.
    assert!(masked.policy_entropy <= max_legal.ln() + 1e-3, "{masked:?}");
    assert!(unmasked.policy_entropy > max_legal.ln() + 1.0, "{unmasked:?}");
    // The cross-entropy against a target on 3 legal moves: near ln(#legal) when the softmax
    // is over legal moves, near ln(2166) when it is over all actions.
    assert!(masked.policy_loss < max_legal.ln() + 0.5, "{masked:?}");
    assert!(unmasked.policy_loss > 7.0, "{unmasked:?}");
    // Training on the masked loss moves the probability within the legal moves: the
    // illegal actions never gain any (their softmax weight is exactly 0).
    let config = TrainConfig { learning_rate: 3e-3, ..no_warmup() };
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 3).unwrap();
    let first = trainer.step(&b).unwrap();
    let mut last = first;
    for _ in 0..60 {
        last = trainer.step(&b).unwrap();
    }
    assert!(last.policy_loss < first.policy_loss - 0.3, "{first:?} -> {last:?}");
    assert!(last.policy_entropy <= max_legal.ln() + 1e-3);
    // No gradient: an action illegal in every sample of the batch has a logit whose gradient
    // is 0 in each, so one plain SGD step leaves its bias and its column of the policy layer's
    // weights exactly as they were; unmasked, its softmax weight is positive and they move.
    let (n, size) = (b.len(), POLICY_SIZE);
    let never_legal: Vec<usize> =
        (0..size).filter(|&a| (0..n).all(|i| b.legal()[i * size + a] == 0.0)).collect();
    let sometimes_legal: Vec<usize> =
        (0..size).filter(|&a| (0..n).any(|i| b.legal()[i * size + a] > 0.0)).collect();
    assert!(never_legal.len() > 1000 && !sometimes_legal.is_empty(), "{}", never_legal.len());
    // The policy layer's bias `[POLICY_SIZE]` and weight `[inputs, POLICY_SIZE]` after a step.
    let policy_layer = |mask_illegal: bool| {
        let config = TrainConfig { mask_illegal, ..plain_sgd(0) };
        let mut trainer =
            Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 3).unwrap();
        let layer = |t: &Trainer| {
            let fc = &t.net().policy_fc;
            let bias = fc.bias.as_ref().unwrap().val().try_into_vec_as::<f32>().unwrap();
            (bias, fc.weight.val().try_into_vec_as::<f32>().unwrap())
        };
        let before = layer(&trainer);
        trainer.step(&b).unwrap();
        (before, layer(&trainer))
    };
    // (bias, weight) before and after the step.
    type Layer = (Vec<f32>, Vec<f32>);
    let moved = |((b0, w0), (b1, w1)): &(Layer, Layer), a: usize| {
        b0[a] != b1[a] || (a..w0.len()).step_by(size).any(|k| w0[k] != w1[k])
    };
    let masked = policy_layer(true);
    let still: Vec<usize> = never_legal.iter().copied().filter(|&a| moved(&masked, a)).collect();
    assert!(
        still.is_empty(),
        "{} masked illegal actions got a gradient, the first {:?}",
        still.len(),
        &still[..still.len().min(8)]
    );
    assert!(sometimes_legal.iter().any(|&a| moved(&masked, a)), "no legal action moved");
    let unmasked = policy_layer(false);
    assert!(never_legal.iter().all(|&a| moved(&unmasked, a)), "unmasked, every action moves");
}

#[test]
fn a_value_weight_of_zero_teaches_the_value_head_nothing() {
    // Weight decay 0: a decoupled decay would shrink the value head's weights whatever the loss.
    let config =
        TrainConfig { learning_rate: 3e-3, mirror: false, weight_decay: 0.0, ..no_warmup() };
    // The value head's parameters (its convolution, batch-norm scale and shift, both linear
    // layers; not the running statistics, which follow the batch in any forward pass).
    let value_head = |t: &Trainer| {
        let net = t.net();
        [params_of(&net.value_conv), params_of(&net.value_fc1), params_of(&net.value_fc2)].concat()
    };
    let (b, _) = compact_batch(16, 2, 0.0);
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 4).unwrap();
    let (head, trunk) = (value_head(&trainer), params_of(&trainer.net().input));
    let m = trainer.step(&b).unwrap();
    assert_eq!(m.value_loss, 0.0, "{m:?}");
    assert!(value_head(&trainer) == head, "the value head's weights moved");
    // The policy loss still trains the shared trunk.
    assert_ne!(params_of(&trainer.net().input), trunk, "the trunk did not move");
    // With weight 1 the same samples have a value loss (ln 3 for an untrained net, about), and
    // the value head learns from it.
    let (b, _) = compact_batch(16, 2, 1.0);
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 4).unwrap();
    let m = trainer.step(&b).unwrap();
    assert!(m.value_loss > 0.3, "{m:?}");
    let moved = value_head(&trainer);
    // The convolution's weight, the norm's scale and shift, both layers' weights and biases.
    assert_eq!((moved.len(), head.len()), (7, 7));
    for (i, (a, b)) in moved.iter().zip(&head).enumerate() {
        assert_ne!(a, b, "value-head parameter {i} did not move with value weight 1");
    }
}

/// The CPU kernels (the default path on the CPU) against burn's operations on the same folded
/// net: every architecture option, filter counts that are and are not a multiple of the SIMD
/// width, below and above Winograd's threshold, both games, real positions and random planes,
/// batches that fill and split chunks.
/// Both compute the same sums in another order: they agree within 1e-4 of the logits' scale.
#[test]
fn the_cpu_kernels_compute_what_the_backend_computes() {
    use xiangqi_nn::InferencePath;
    use xiangqi_search::Encoding;
    let device = cpu_device();
    let nets = [
        (NetConfig::new(2, 24), GlobalKind::None),
        (
            NetConfig { policy_channels: 3, value_channels: 1, ..NetConfig::new(1, 20) },
            GlobalKind::None,
        ),
        (
            NetConfig { global_channels: 8, global_every: 1, ..NetConfig::new(2, 16) },
            GlobalKind::SqueezeExcitation,
        ),
        (
            NetConfig { global_channels: 6, global_every: 2, ..NetConfig::new(2, 40) },
            GlobalKind::GlobalPooling,
        ),
        // 64 filters and more: the tower's convolutions by Winograd's algorithm.
        (NetConfig::new(1, 64), GlobalKind::None),
        (
            NetConfig { global_channels: 8, global_every: 1, ..NetConfig::new(1, 70) },
            GlobalKind::SqueezeExcitation,
        ),
    ];
    let features = Encoding::of::<Game>().with_features(true).unwrap();
    for (game, encoding) in [
        ("xiangqi", Encoding::of::<Game>()),
        ("janggi", Encoding::of::<xiangqi::janggi::Game>()),
        ("xiangqi with features", features),
    ] {
        for (i, (config, global)) in nets.iter().enumerate() {
            let config =
                NetConfig { global: *global, input_features: encoding.features, ..config.clone() };
            // A few steps so that the folded batch-norm statistics are not the initial ones.
            let mut trainer =
                Trainer::for_encoding(&config, encoding, &no_warmup(), &device, 7 + i as u64)
                    .unwrap();
            let planes = match game {
                "janggi" => real_planes_for::<xiangqi::janggi::Game>(&encoding, 40, i as u64),
                _ => real_planes_for::<Game>(&encoding, 40, i as u64),
            };
            let mut b = TrainBatch::for_encoding(encoding, 16);
            for (j, p) in planes.chunks_exact(encoding.input_size()).take(16).enumerate() {
                let mut policy = vec![0.0; encoding.policy_size];
                policy[(j * 131 + 7) % encoding.policy_size] = 1.0;
                b.push(p, &policy, [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]][j % 2], true);
            }
            for _ in 0..3 {
                trainer.step(&b).unwrap();
            }
            let folded = trainer.inference_net(&device).unwrap();
            assert_eq!(folded.path(), InferencePath::Kernels);
            let backend = folded.clone().with_path(InferencePath::Backend);
            let mut state = 12345u32 + i as u32;
            let random: Vec<f32> = (0..23 * encoding.input_size())
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    (state % 1000) as f32 / 1000.0
                })
                .collect();
            for (what, input) in [("positions", &planes[..]), ("random planes", &random[..])] {
                for n in [1, 9, input.len() / encoding.input_size()] {
                    let x = &input[..n * encoding.input_size()];
                    let a = folded.predict(x.to_vec()).unwrap();
                    let e = backend.predict(x.to_vec()).unwrap();
                    assert_eq!(
                        (a.batch, a.policy.len(), a.wdl.len()),
                        (e.batch, e.policy.len(), e.wdl.len())
                    );
                    let scale = e.policy.iter().chain(&e.wdl).fold(1.0f32, |m, v| m.max(v.abs()));
                    let d = max_abs_diff(&a.policy, &e.policy).max(max_abs_diff(&a.wdl, &e.wdl));
                    assert!(
                        d <= 1e-4 * scale,
                        "{game}, net {i} ({global:?}), {what}, batch {n}: differ by {d} (scale {scale})"
                    );
                }
            }
        }
    }
}

/// A net that takes the tactical feature planes (encoding version 2): 23 input planes, its
/// checkpoint records version 2 and loads back with the same outputs, the evaluator feeds it
/// the feature planes of live games, and a manifest whose version disagrees with its
/// `input_features` is refused. Version-1 nets are untouched (the tests above).
#[test]
fn a_feature_net_round_trips_and_its_version_is_checked() {
    use xiangqi_search::Encoding;
    let dir = temp_dir("features");
    let ckpt = dir.join("ckpt");
    let config = NetConfig { input_features: true, ..NetConfig::tiny() };
    let mut trainer = Trainer::new::<Game>(&config, &no_warmup(), &cpu_device(), 5).unwrap();
    let encoding = trainer.net().encoding;
    assert_eq!((encoding.version, encoding.planes, encoding.features), (2, 23, true));
    // Compact samples rebuild the feature planes; one step trains on them.
    let mut b = TrainBatch::for_encoding(encoding, 4);
    for game in games(4, 3) {
        let inputs = PlaneInputs::from_game(&game);
        let legal: Vec<(u16, f32)> = game
            .position()
            .legal_moves()
            .iter()
            .map(|&m| (env::move_to_index(m, game.position().turn()).unwrap() as u16, 0.0))
            .collect();
        b.push_compact(&inputs, &legal, [0.0, 1.0, 0.0], false).unwrap();
    }
    assert_eq!(b.planes().len(), 4 * 23 * 90);
    trainer.step(&b).unwrap();
    checkpoint::save_trainer(&trainer, &ckpt, &BTreeMap::new()).unwrap();
    let text = fs::read_to_string(ckpt.join(checkpoint::MANIFEST)).unwrap();
    assert!(text.contains("encoding_version = 2") && text.contains("input_features = true"));
    let (net, manifest) = checkpoint::load_net(&ckpt, None, &cpu_device()).unwrap();
    assert_eq!(manifest.encoding(), encoding);
    let planes = b.planes().to_vec();
    let before = trainer.inference_net(&cpu_device()).unwrap().predict(planes.clone()).unwrap();
    let folded = InferenceNet::from_net(&net, &cpu_device()).unwrap();
    let after = folded.predict(planes).unwrap();
    assert!(max_abs_diff(&before.policy, &after.policy) < 1e-6);
    // The evaluator encodes live games with the feature planes: its priors are the softmax of
    // the logits of the planes Encoding::encode writes.
    let game = &games(1, 9)[0];
    let mut x = vec![0.0; encoding.input_size()];
    encoding.encode(game, &mut x);
    let direct = folded.predict(x).unwrap();
    let mut evaluator = NnEvaluator::new(folded);
    let moves = game.position().legal_moves().to_vec();
    let requests = [EvalRequest { game, moves: &moves }];
    let mut out = EvalBuffer::new();
    out.prepare(&requests);
    evaluator.evaluate(&requests, &mut out).unwrap();
    let turn = game.position().turn();
    let logits: Vec<f32> =
        moves.iter().map(|&m| direct.policy[env::move_to_index(m, turn).unwrap()]).collect();
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let sum: f32 = logits.iter().map(|&v| (v - max).exp()).sum();
    for (&p, &l) in out.priors(0).iter().zip(&logits) {
        assert!((p - (l - max).exp() / sum).abs() < 1e-5, "{p} vs {}", (l - max).exp() / sum);
    }
    // A manifest that says version 1 for a net with input features is refused as
    // contradicting itself, and so is version 2 for one without.
    for (from, to) in [
        ("encoding_version = 2", "encoding_version = 1"),
        ("input_features = true", "input_features = false"),
    ] {
        let bad = dir.join(format!("bad-{}", to.replace([' ', '='], "")));
        fs::create_dir_all(&bad).unwrap();
        for e in fs::read_dir(&ckpt).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), bad.join(e.file_name())).unwrap();
        }
        fs::write(bad.join(checkpoint::MANIFEST), text.replace(from, to)).unwrap();
        let err = checkpoint::load_net(&bad, None, &cpu_device()).unwrap_err();
        assert!(matches!(err, CheckpointError::BadManifest { .. }), "{to}: {err}");
        assert!(err.to_string().contains("input_features"), "{to}: {err}");
    }
    // Janggi has the same seven feature planes after its 16 base planes (encoding version 2).
    let janggi = Trainer::for_encoding(
        &config,
        Encoding::of::<xiangqi::janggi::Game>(),
        &no_warmup(),
        &cpu_device(),
        1,
    )
    .unwrap();
    let enc = janggi.net().encoding;
    assert_eq!((enc.version, enc.planes, enc.features), (2, 16 + 7, true));
    fs::remove_dir_all(&dir).unwrap();
}

/// A tiny net with every auxiliary head.
fn aux_config() -> NetConfig {
    NetConfig {
        opponent_policy: true,
        moves_left: true,
        short_term_value: true,
        soft_policy: true,
        ..NetConfig::tiny()
    }
}

/// The short-term WDL targets of [`aux_batch`], by sample parity.
const SHORT_TERM: [[f32; 3]; 2] = [[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]];

/// A batch of `n` full-search samples from random positions with auxiliary targets: a policy
/// of 16/21, 4/21 and 1/21 on three legal moves (whose soft target is 2 : √2 : 1), an
/// opponent reply on two actions (not on every fourth sample), a short-term WDL (not on every
/// fifth) and `10 + 17 i` plies left (not on every third).
fn aux_batch(n: usize, seed: u64) -> TrainBatch {
    let mut b = TrainBatch::with_capacity::<xiangqi::Game>(n);
    for (i, game) in games(n, seed).iter().enumerate() {
        push_aux_sample(&mut b, i, game);
    }
    b
}

/// Pushes sample `i` of [`aux_batch`] (from `game`) onto `b`.
fn push_aux_sample(b: &mut TrainBatch, i: usize, game: &xiangqi::Game) {
    {
        let turn = game.position().turn();
        let moves = game.legal_moves();
        assert!(moves.len() >= 3, "a fixture position with fewer than three moves");
        let policy: Vec<(u16, f32)> = moves
            .iter()
            .enumerate()
            .map(|(k, &m)| {
                let p = match (k + moves.len() - i % moves.len()) % moves.len() {
                    0 => 16.0 / 21.0,
                    1 => 4.0 / 21.0,
                    2 => 1.0 / 21.0,
                    _ => 0.0,
                };
                (env::move_to_index(m, turn).unwrap() as u16, p)
            })
            .collect();
        let reply =
            [((i * 37 % POLICY_SIZE) as u16, 0.75), (((i * 37 + 5) % POLICY_SIZE) as u16, 0.25)];
        let aux = AuxiliaryTargets {
            opponent_policy: (i % 4 != 3).then_some(&reply[..]),
            short_term_value: (i % 5 != 4).then_some(SHORT_TERM[i % 2]),
            moves_left: (i % 3 != 2).then_some((10 + 17 * i) as f32),
        };
        let wdl = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]][i % 3];
        b.push_with_auxiliary(&PlaneInputs::from_game(game), &policy, wdl, true, 1.0, &aux)
            .unwrap();
    }
}

/// Batches appended part by part equal the batch of the same samples pushed one by one, where
/// parts with and without opponent-reply targets meet (sample 3 has none); a batch of another
/// game is refused and leaves the batch as it was.
#[test]
fn appended_batches_equal_the_samples_pushed_in_order() {
    let games = games(9, 41);
    let pushed = |range: std::ops::Range<usize>| {
        let mut b = TrainBatch::new::<xiangqi::Game>();
        for i in range {
            push_aux_sample(&mut b, i, &games[i]);
        }
        b
    };
    for cuts in [vec![0, 3, 4, 9], vec![3, 4, 9], vec![0, 1, 2, 9], vec![3, 4], vec![4, 4, 9]] {
        let mut b = TrainBatch::new::<xiangqi::Game>();
        for w in cuts.windows(2) {
            b.append(&pushed(w[0]..w[1])).unwrap();
        }
        let whole = pushed(cuts[0]..*cuts.last().unwrap());
        assert_eq!(b, whole, "cuts {cuts:?}");
    }
    let mut b = pushed(0..2);
    let before = b.clone();
    let err = b.append(&TrainBatch::new::<xiangqi::janggi::Game>()).unwrap_err().to_string();
    assert!(err.contains("janggi") && err.contains("xiangqi"), "{err}");
    assert_eq!(b, before);
}

fn log_softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_sum = logits.iter().map(|&x| (x - max).exp()).sum::<f32>().ln() + max;
    logits.iter().map(|&x| x - log_sum).collect()
}

#[test]
fn the_auxiliary_losses_are_the_documented_terms() {
    let config = TrainConfig { mirror: false, micro_batch: 0, ..no_warmup() };
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&aux_config(), &config, &cpu_device(), 5).unwrap();
    let b = aux_batch(12, 3);
    let n = b.len();
    // The heads' outputs before the step, on the trainer's (autodiff) device: batch
    // normalisation by the batch's statistics, as in the step.
    let x = Tensor::<4>::from_data(
        TensorData::new(b.planes().to_vec(), [n, PLANES, PLANE_RANKS, PLANE_FILES]),
        trainer.device(),
    );
    let (_, aux) = trainer.net().forward_with_auxiliary(x);
    let host = |t: Option<Tensor<2>>| t.unwrap().try_into_vec_as::<f32>().unwrap();
    let (opponent, short, moves, soft) = (
        host(aux.opponent_policy),
        host(aux.short_term_value),
        host(aux.moves_left),
        host(aux.soft_policy),
    );

    let mean = |terms: Vec<f32>| terms.iter().sum::<f32>() / terms.len() as f32;
    let (targets, weights) = b.opponent_policy();
    let opponent_ce = mean(
        (0..n)
            .filter(|&i| weights[i] > 0.0)
            .map(|i| {
                let row = i * POLICY_SIZE..(i + 1) * POLICY_SIZE;
                let lp = log_softmax(&opponent[row.clone()]);
                -targets[row].iter().zip(&lp).map(|(t, l)| t * l).sum::<f32>()
            })
            .collect(),
    );
    let short_ce = mean(
        (0..n)
            .filter(|&i| i % 5 != 4)
            .map(|i| {
                let lp = log_softmax(&short[3 * i..3 * i + 3]);
                -SHORT_TERM[i % 2].iter().zip(&lp).map(|(t, l)| t * l).sum::<f32>()
            })
            .collect(),
    );
    let huber = mean(
        (0..n)
            .filter(|&i| i % 3 != 2)
            .map(|i| {
                let d = (moves[i] - (10 + 17 * i) as f32 / xiangqi_nn::MOVES_LEFT_SCALE).abs();
                let delta = 0.1;
                if d <= delta { 0.5 * d * d } else { delta * (d - 0.5 * delta) }
            })
            .collect(),
    );
    // The soft policy: the target's three moves at 2 : √2 : 1 (16/21, 4/21, 1/21 to the power
    // 1/4), over the legal moves, every sample a full search.
    let (policy, legal) = (b.policy(), b.legal());
    let soft_ce = mean(
        (0..n)
            .map(|i| {
                let row = i * POLICY_SIZE..(i + 1) * POLICY_SIZE;
                let masked: Vec<f32> = soft[row.clone()]
                    .iter()
                    .zip(&legal[row.clone()])
                    .map(|(&x, &l)| if l > 0.0 { x } else { -1e30 })
                    .collect();
                let lp = log_softmax(&masked);
                let sum = 2.0 + 2f32.sqrt() + 1.0;
                policy[row]
                    .iter()
                    .zip(&lp)
                    .filter(|(p, _)| **p > 0.0)
                    .map(|(&p, l)| {
                        let t = if p > 0.5 {
                            2.0
                        } else if p > 0.1 {
                            2f32.sqrt()
                        } else {
                            1.0
                        };
                        -t / sum * l
                    })
                    .sum::<f32>()
            })
            .collect(),
    );
    assert_eq!(policy.iter().filter(|&&p| p > 0.0).count(), 3 * n);
    // Weights as recorded: rows of samples without a reply are zero.
    assert_eq!(weights.iter().filter(|&&w| w > 0.0).count(), 9);
    assert!(targets[3 * POLICY_SIZE..4 * POLICY_SIZE].iter().all(|&t| t == 0.0));

    let m = trainer.step(&b).unwrap();
    let near = |a: f32, b: f32| (a - b).abs() <= 1e-4 * b.abs().max(1.0);
    assert!(
        near(m.opponent_policy_loss, opponent_ce),
        "{} vs {opponent_ce}",
        m.opponent_policy_loss
    );
    assert!(near(m.short_term_value_loss, short_ce), "{} vs {short_ce}", m.short_term_value_loss);
    assert!(near(m.moves_left_loss, huber), "{} vs {huber}", m.moves_left_loss);
    assert!(near(m.soft_policy_loss, soft_ce), "{} vs {soft_ce}", m.soft_policy_loss);
    // The reported total is every term with its default weight.
    let total = m.policy_loss
        + m.value_loss
        + 0.15 * m.opponent_policy_loss
        + 0.5 * m.short_term_value_loss
        + 0.1 * m.moves_left_loss
        + 8.0 * m.soft_policy_loss;
    assert!(near(m.loss, total), "{} vs {total}", m.loss);
    // A net without the heads reports none.
    let mut plain =
        Trainer::new::<xiangqi::Game>(&NetConfig::tiny(), &config, &cpu_device(), 5).unwrap();
    let m = plain.step(&b).unwrap();
    assert_eq!(
        (m.opponent_policy_loss, m.short_term_value_loss, m.moves_left_loss, m.soft_policy_loss),
        (0.0, 0.0, 0.0, 0.0)
    );
}

#[test]
fn the_auxiliary_heads_learn_their_targets() {
    let config = TrainConfig {
        learning_rate: 3e-3,
        weight_decay: 0.0,
        mirror: true,
        micro_batch: 8,
        ..no_warmup()
    };
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&aux_config(), &config, &cpu_device(), 1).unwrap();
    let b = aux_batch(16, 11);
    let first = trainer.step(&b).unwrap();
    let mut last = first;
    for _ in 0..200 {
        last = trainer.step(&b).unwrap();
    }
    // The short-term targets are soft: their cross-entropy cannot fall below their entropy.
    let entropy = |p: [f32; 3]| -p.iter().map(|x| x * x.ln()).sum::<f32>();
    let carrying: Vec<usize> = (0..16).filter(|i| i % 5 != 4).collect();
    let floor =
        carrying.iter().map(|&i| entropy(SHORT_TERM[i % 2])).sum::<f32>() / carrying.len() as f32;
    assert!(last.opponent_policy_loss < first.opponent_policy_loss / 2.0, "{first:?}\n{last:?}");
    assert!(
        last.short_term_value_loss - floor < (first.short_term_value_loss - floor) / 3.0,
        "{first:?}\n{last:?} (floor {floor})"
    );
    assert!(last.moves_left_loss < first.moves_left_loss / 2.0, "{first:?}\n{last:?}");
    // The soft target's entropy (2 : √2 : 1) is its cross-entropy's floor.
    let sum = 2.0 + 2f32.sqrt() + 1.0;
    let floor = -[2.0, 2f32.sqrt(), 1.0].iter().map(|t| t / sum * (t / sum).ln()).sum::<f32>();
    assert!(
        last.soft_policy_loss - floor < (first.soft_policy_loss - floor) / 3.0,
        "{first:?}\n{last:?} (floor {floor})"
    );
}

#[test]
fn the_soft_policy_target_is_the_policy_to_the_power_of_a_quarter() {
    use xiangqi_nn::train::soft_policy_target;
    // Two rows of three actions: 16/17 and 1/17 become 2/3 and 1/3 (16^¼ = 2); 81/97, 16/97
    // (and 0) become 3/5, 2/5 (and 0); a row without a target stays empty.
    let soft =
        soft_policy_target(&[16.0 / 17.0, 0.0, 1.0 / 17.0, 81.0 / 97.0, 16.0 / 97.0, 0.0], 3);
    let expected = [2.0 / 3.0, 0.0, 1.0 / 3.0, 0.6, 0.4, 0.0];
    for (a, b) in soft.iter().zip(&expected) {
        assert!((a - b).abs() < 1e-6, "{soft:?}");
    }
    assert_eq!(soft_policy_target(&[0.0; 4], 2), vec![0.0; 4]);
    // An unnormalized row (a sparse target whose rest was cut) is normalized all the same.
    let soft = soft_policy_target(&[0.5, 0.5 / 16.0], 2);
    assert!((soft[0] - 2.0 / 3.0).abs() < 1e-6 && (soft[1] - 1.0 / 3.0).abs() < 1e-6);
}

#[test]
fn auxiliary_heads_leave_the_playing_net_and_its_export_as_without_them() {
    let device = cpu_device();
    let with = Net::seeded::<xiangqi::Game>(&aux_config(), &device, 4).valid();
    let without = Net::seeded::<xiangqi::Game>(&NetConfig::tiny(), &device, 4).valid();
    let planes = real_planes_for::<xiangqi::Game>(&with.encoding, 6, 2);
    let outputs = |net: &Net| {
        let out = net.forward(planes_tensor(planes.clone()));
        (out.policy.try_into_vec_as::<f32>().unwrap(), out.wdl.try_into_vec_as::<f32>().unwrap())
    };
    // The same seed draws the same tower and main heads; the extra heads do not touch them.
    assert_eq!(outputs(&with), outputs(&without));
    assert!(with.moves_left_fc.is_some() && with.opponent_policy_fc.is_some());
    assert!(with.soft_policy_fc.is_some());

    // A trained net with the heads round-trips its checkpoint, heads included, and exports as
    // the net that plays: no auxiliary head, the same outputs.
    let dir = temp_dir("aux-heads");
    let mut trainer =
        Trainer::new::<xiangqi::Game>(&aux_config(), &no_warmup(), &cpu_device(), 8).unwrap();
    let b = aux_batch(8, 4);
    for _ in 0..3 {
        trainer.step(&b).unwrap();
    }
    let ckpt = dir.join("ckpt");
    checkpoint::save_trainer(&trainer, &ckpt, &BTreeMap::new()).unwrap();
    let (resumed, manifest) =
        checkpoint::load_trainer(&ckpt, Some(&aux_config()), None, &cpu_device()).unwrap();
    assert_eq!(params_of(resumed.net()), params_of(trainer.net()));
    assert_eq!(manifest.network, aux_config());
    let (net, _) = checkpoint::load_net(&ckpt, None, &cpu_device()).unwrap();
    let out = dir.join("export");
    xiangqi_nn::export::export_net(&net, &manifest, &out).unwrap();
    let (exported, exported_manifest) = checkpoint::load_net(&out, None, &cpu_device()).unwrap();
    assert_eq!(exported_manifest.network, NetConfig::tiny());
    assert!(exported.opponent_policy_fc.is_none() && exported.short_term_fc.is_none());
    assert!(exported.soft_policy_fc.is_none());
    assert_eq!(outputs(&exported), outputs(&net));
    fs::remove_dir_all(&dir).unwrap();
}
