//! Self-play pipelining: with an evaluator that sleeps a fixed time per batch (as an
//! accelerator keeps the CPU free while it works), the actor pool must keep it busy: while one
//! group of games is evaluated, the other group's tree work runs on the search threads. Each
//! run prints the evaluator's busy fraction of wall time and asserts it is above 90% with two
//! search threads.
//!
//! Run: `cargo bench -p xiangqi-search --bench selfplay`.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use xiangqi::Game;
use xiangqi_search::{Checked, ScriptedEvaluator, SearchConfig, SelfPlayConfig, play_games};

const GAMES: u64 = 32;
const DELAY: Duration = Duration::from_millis(4);

fn bench_selfplay(c: &mut Criterion) {
    let search = Checked::new(SearchConfig {
        simulations: 32,
        cheap_simulations: 8,
        full_search_prob: 0.25,
        virtual_loss_batch: 8,
        ..SearchConfig::default()
    })
    .expect("the bench's settings are valid");
    let selfplay = Checked::new(SelfPlayConfig {
        games_in_flight: 32,
        max_batch: 256,
        threads: 2,
        opening_random_plies: 4,
        length_cap: 30,
        seed: 1,
        ..SelfPlayConfig::default()
    })
    .expect("the bench's settings are valid");
    let mut group = c.benchmark_group("selfplay");
    group.sample_size(10);
    group.throughput(Throughput::Elements(GAMES));
    let mut fractions = Vec::new();
    group.bench_function("32_games_2_threads_4ms_batches", |b| {
        b.iter(|| {
            let mut eval = ScriptedEvaluator::uniform().with_delay(DELAY);
            let stats = play_games::<Game, _, _>(&search, &selfplay, GAMES, &mut eval, |_| Ok(()))
                .expect("uniform evaluation cannot fail");
            assert_eq!(stats.games_finished, GAMES);
            fractions.push(stats.busy_fraction());
            stats
        });
    });
    group.finish();
    fractions.sort_by(f64::total_cmp);
    let median = fractions[fractions.len() / 2];
    println!(
        "selfplay: evaluator busy fraction over {} runs: min {:.3}, median {:.3}, max {:.3}",
        fractions.len(),
        fractions[0],
        median,
        fractions[fractions.len() - 1]
    );
    assert!(median > 0.9, "the pool does not keep the evaluator busy: {median:.3}");
}

criterion_group!(benches, bench_selfplay);
criterion_main!(benches);
