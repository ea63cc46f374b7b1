//! Temporary profiling harness (not part of the crate).
#![allow(missing_docs)]
use std::time::Instant;
use xiangqi::env::{INPUT_SIZE, POLICY_SIZE};
use xiangqi_nn::{NetConfig, TrainBatch, TrainConfig, Trainer, cpu_device};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let batch: usize = args.get(1).map_or(256, |s| s.parse().unwrap());
    let steps: usize = args.get(2).map_or(3, |s| s.parse().unwrap());
    let mut b = TrainBatch::with_capacity(batch);
    for i in 0..batch {
        let planes: Vec<f32> =
            (0..INPUT_SIZE).map(|j| (((i + 3) * (j + 7) * 7919) % 5 == 0) as u8 as f32).collect();
        let mut policy = vec![0.0; POLICY_SIZE];
        policy[(i * 7919) % POLICY_SIZE] = 1.0;
        b.push(
            &planes,
            &policy,
            [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]][i % 3],
            i % 4 != 0,
        );
    }
    let micro_batch: usize = args.get(3).map_or(0, |s| s.parse().unwrap());
    let config = TrainConfig { warmup_steps: 0, micro_batch, ..TrainConfig::default() };
    let mut trainer = Trainer::new(&NetConfig::new(6, 64), &config, &cpu_device(), 7).unwrap();
    let mut best = f64::MAX;
    for _ in 0..steps {
        let t = Instant::now();
        trainer.step(&b).unwrap();
        let e = t.elapsed().as_secs_f64();
        eprintln!("step {:.1} ms", e * 1e3);
        best = best.min(e);
    }
    println!("batch {batch} micro {micro_batch}: {:.1} samples/s", batch as f64 / best);
}
