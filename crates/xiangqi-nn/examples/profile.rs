//! Temporary profiling harness (not part of the crate).
#![allow(missing_docs)]
use std::time::Instant;

use burn::tensor::{Tensor, TensorData};
use xiangqi::env::{INPUT_SIZE, PLANE_FILES, PLANE_RANKS, PLANES};
use xiangqi_nn::{InferenceNet, Net, NetConfig, cpu_device};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let batch: usize = args.get(1).map_or(256, |s| s.parse().unwrap());
    let chunk: usize = args.get(2).map_or(32, |s| s.parse().unwrap());
    let rounds: usize = args.get(3).map_or(5, |s| s.parse().unwrap());
    let device = cpu_device();
    device.seed(1);
    let net = Net::new(&NetConfig::new(6, 64), &device);
    let folded = InferenceNet::from_net(&net, &device).unwrap().with_chunk_size(chunk);
    let planes: Vec<f32> =
        (0..batch * INPUT_SIZE).map(|i| ((i * 7919) % 5 == 0) as u8 as f32).collect();
    let mut best = [f64::MAX; 3];
    for _ in 0..rounds {
        let t = Instant::now();
        let l = folded.predict(planes.clone()).unwrap();
        best[0] = best[0].min(t.elapsed().as_secs_f64());
        std::hint::black_box(l);
        let t = Instant::now();
        let x = Tensor::<4>::from_data(
            TensorData::new(planes.clone(), [batch, PLANES, PLANE_RANKS, PLANE_FILES]),
            &device,
        );
        let o = net.forward(x);
        let p = o.policy.into_data();
        best[1] = best[1].min(t.elapsed().as_secs_f64());
        std::hint::black_box(p);
        let t = Instant::now();
        let mut outs = Vec::new();
        for s in (0..batch).step_by(chunk) {
            let n = chunk.min(batch - s);
            let x = Tensor::<4>::from_data(
                TensorData::new(
                    planes[s * INPUT_SIZE..(s + n) * INPUT_SIZE].to_vec(),
                    [n, PLANES, PLANE_RANKS, PLANE_FILES],
                ),
                &device,
            );
            outs.push(net.forward(x).policy.into_data());
        }
        best[2] = best[2].min(t.elapsed().as_secs_f64());
        std::hint::black_box(outs);
    }
    println!(
        "batch {batch} chunk {chunk}: folded {:.1} pos/s, unfolded {:.1} pos/s, unfolded chunked {:.1} pos/s",
        batch as f64 / best[0],
        batch as f64 / best[1],
        batch as f64 / best[2]
    );
}
#[allow(dead_code)]
fn unused() {}
