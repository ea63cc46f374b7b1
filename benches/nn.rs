//! Network benches on the CPU backend (burn `flex`): inference positions per second at batch
//! 1, 16, 64 and 256 for the folded inference net and for the unfolded network (the training
//! definition in inference mode), and training samples per second at batch 256 (one pass, and
//! micro-batches of 64), all for a 6-block, 64-filter net over the 16 input planes.
//!
//! Threads are the global rayon pool's: `RAYON_NUM_THREADS=1 cargo bench -p xiangqi-nn --bench nn`.
//! Each bench checks the shape and finiteness of what it computed.

use std::hint::black_box;

mod common;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use xiangqi::env::{INPUT_SIZE, PLANE_FILES, PLANE_RANKS, PLANES, POLICY_SIZE};
use xiangqi_nn::{InferenceNet, Net, NetConfig, TrainBatch, TrainConfig, Trainer, cpu_device};

fn net_config() -> NetConfig {
    NetConfig::new(6, 64)
}

fn inference(c: &mut Criterion) {
    let device = cpu_device();
    device.seed(7);
    let net = Net::new::<xiangqi::Game>(&net_config(), &device);
    let folded = InferenceNet::from_net(&net, &device).unwrap();
    let mut group = c.benchmark_group("inference");
    for batch in [1usize, 16, 64, 256] {
        let planes = common::positions(batch, 150);
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(BenchmarkId::new("folded", batch), &planes, |b, planes| {
            b.iter(|| {
                let logits = folded.predict(planes.clone()).unwrap();
                assert_eq!(logits.policy.len(), batch * POLICY_SIZE);
                assert!(logits.wdl.iter().all(|x| x.is_finite()));
                black_box(logits)
            })
        });
        group.bench_with_input(BenchmarkId::new("unfolded", batch), &planes, |b, planes| {
            b.iter(|| {
                let x = burn::tensor::Tensor::<4>::from_data(
                    burn::tensor::TensorData::new(
                        planes.clone(),
                        [batch, PLANES, PLANE_RANKS, PLANE_FILES],
                    ),
                    &device,
                );
                let out = net.forward(x);
                let policy = out.policy.into_data();
                let wdl = out.wdl.into_data();
                assert_eq!(policy.num_elements(), batch * POLICY_SIZE);
                assert!(wdl.iter::<f32>().all(|x| x.is_finite()));
                black_box((policy, wdl))
            })
        });
    }
    group.finish();
}

fn training(c: &mut Criterion) {
    let batch = 256;
    let planes = common::positions(batch, 150);
    let mut samples = TrainBatch::with_capacity::<xiangqi::Game>(batch);
    for (i, p) in planes.chunks_exact(INPUT_SIZE).enumerate() {
        let mut policy = vec![0.0; POLICY_SIZE];
        policy[(i * 7919) % POLICY_SIZE] = 0.75;
        policy[(i * 104_729) % POLICY_SIZE] += 0.25;
        let wdl = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]][i % 3];
        samples.push(p, &policy, wdl, i % 4 != 0);
    }
    let mut group = c.benchmark_group("training");
    group.throughput(Throughput::Elements(batch as u64));
    // One pass over the batch, and micro-batches of 64 (the default: ghost batch normalisation).
    for micro_batch in [0, 64] {
        let config = TrainConfig { warmup_steps: 0, micro_batch, ..TrainConfig::default() };
        let mut trainer =
            Trainer::new::<xiangqi::Game>(&net_config(), &config, &cpu_device(), 7).unwrap();
        let name = format!("adamw_micro{micro_batch}");
        group.bench_function(BenchmarkId::new(name, batch), |b| {
            b.iter(|| {
                let m = trainer.step(&samples).unwrap();
                assert!(m.loss.is_finite() && m.grad_norm.is_finite());
                black_box(m)
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = inference, training
}
criterion_main!(benches);
