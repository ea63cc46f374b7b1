//! Self-play with the real network against the network alone, on the CPU backend: how much of
//! the net's batched inference throughput the actor pool turns into evaluated positions.
//!
//! The network, search and self-play settings are those of `configs/cpu.toml` (the README's main
//! job), with the length cap shortened so that one measurement takes seconds. Two benches:
//!
//! * `selfplay_net/64_games`: 64 games played in flight by `play_games` with [`NnEvaluator`];
//!   it reports the evaluations, simulations and the mean evaluator batch.
//! * `selfplay_net/raw_inference`: [`InferenceNet::predict`] on ready-made planes of that mean
//!   batch size (no search, no encoding, no legal-move softmax).
//!
//! At the end it prints positions evaluated and simulations per second in self-play, raw
//! positions per second at the same batch size, and the ratios of both rates to the raw one
//! (issue #25 asks for simulations at least 0.9 times the raw rate; a simulation that ends in a
//! terminal node, or in a position the last search evaluated, costs no evaluation). Threads are
//! the global rayon pool's and the pool's search threads (`selfplay.threads = 0`: one per
//! core).
//!
//! Run: `cargo bench -p xiangqi-nn --bench selfplay_net`.

use std::hint::black_box;
use std::time::{Duration, Instant};

mod common;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::Deserialize;
use xiangqi_nn::{InferenceNet, Net, NetConfig, NnEvaluator, cpu_device};
use xiangqi_search::{Checked, SearchConfig, SelfPlayConfig, play_games};

const GAMES: u64 = 64;
const LENGTH_CAP: u32 = 40;

#[derive(Deserialize)]
struct CpuToml {
    network: NetConfig,
    search: SearchConfig,
    selfplay: SelfPlayConfig,
}

fn configs() -> (NetConfig, Checked<SearchConfig>, Checked<SelfPlayConfig>) {
    let text = include_str!("../configs/cpu.toml");
    let c: CpuToml = toml::from_str(text).expect("configs/cpu.toml parses");
    let selfplay = SelfPlayConfig { length_cap: LENGTH_CAP, seed: 3, ..c.selfplay };
    let valid = "configs/cpu.toml's settings are valid";
    (c.network, Checked::new(c.search).expect(valid), Checked::new(selfplay).expect(valid))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench(c: &mut Criterion) {
    let (net_config, search, selfplay) = configs();
    let device = cpu_device();
    let net = Net::seeded::<xiangqi::Game>(&net_config, &device, 1);
    let folded = InferenceNet::from_net(&net, &device).unwrap();

    let mut group = c.benchmark_group("selfplay_net");
    group.sample_size(10).measurement_time(Duration::from_secs(30));
    let mut runs: Vec<(f64, f64, f64)> = Vec::new(); // (evals/s, sims/s, mean batch)
    group.bench_function("64_games", |b| {
        b.iter(|| {
            let mut evaluator = NnEvaluator::new(folded.clone());
            let start = Instant::now();
            let stats = play_games::<xiangqi::Game, _, _>(
                &search,
                &selfplay,
                GAMES,
                &mut evaluator,
                |_| Ok(()),
            )
            .expect("self-play with the network");
            let secs = start.elapsed().as_secs_f64();
            assert_eq!(stats.games_finished, GAMES);
            assert!(stats.evaluations > 0);
            runs.push((
                stats.evaluations as f64 / secs,
                stats.simulations as f64 / secs,
                stats.evaluations as f64 / stats.batches as f64,
            ));
            black_box(stats)
        });
    });

    let batch = if runs.is_empty() {
        64
    } else {
        median(runs.iter().map(|r| r.2).collect()).round().max(1.0) as usize
    };
    let planes = common::positions_for(folded.encoding(), batch, LENGTH_CAP as usize);
    group.throughput(Throughput::Elements(batch as u64));
    let mut raw = Vec::new();
    group.bench_function("raw_inference", |b| {
        b.iter(|| {
            let start = Instant::now();
            let logits = folded.predict(planes.clone()).unwrap();
            raw.push(batch as f64 / start.elapsed().as_secs_f64());
            assert!(logits.wdl.iter().all(|x| x.is_finite()));
            black_box(logits)
        });
    });
    group.finish();

    if runs.is_empty() || raw.is_empty() {
        // A filter (`-- 64_games`) or `--profile-time` ran only one side: there is no ratio.
        return;
    }
    let evals = median(runs.iter().map(|r| r.0).collect());
    let sims = median(runs.iter().map(|r| r.1).collect());
    let raw = median(raw);
    println!(
        "selfplay_net ({} blocks x {} filters): self-play {evals:.0} positions/s and {sims:.0} \
         simulations/s at a mean batch of {batch}; raw inference {raw:.0} positions/s at batch \
         {batch}; ratio {:.3} (simulations: {:.3})",
        net_config.blocks,
        net_config.filters,
        evals / raw,
        sims / raw
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
