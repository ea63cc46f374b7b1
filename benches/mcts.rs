//! Search speed: simulations per second on one core with the uniform evaluator, searches of 800
//! simulations from the start position, a fresh tree each time. Legal move generation and the
//! rules' adjudication at every new node are included, and with them the search's check for
//! moves that win at once (`win_check`, default `"tree"`: every move of every new node); the
//! `_win_off` case measures the search without it. Each run asserts its visit count.
//!
//! Run: `cargo bench -p xiangqi-search --bench mcts`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xiangqi::{Game, Position, RuleSet};
use xiangqi_search::{
    Algorithm, Checked, EvalBuffer, Search, SearchConfig, UniformEvaluator, WinCheck,
};

const SIMS: u32 = 800;

fn bench_search(c: &mut Criterion) {
    let mut group = c.benchmark_group("mcts");
    group.sample_size(20);
    group.throughput(Throughput::Elements(u64::from(SIMS)));
    let game = Game::new(Position::start(), RuleSet::Asian);
    for (name, algorithm, vl, win_check) in [
        ("puct_800_start", Algorithm::Puct, 1, WinCheck::Tree),
        ("puct_800_start_vl8", Algorithm::Puct, 8, WinCheck::Tree),
        ("gumbel_800_start", Algorithm::Gumbel, 1, WinCheck::Tree),
        ("gumbel_800_start_win_off", Algorithm::Gumbel, 1, WinCheck::Off),
    ] {
        let config = Checked::new(SearchConfig {
            algorithm,
            virtual_loss_batch: vl,
            win_check,
            ..SearchConfig::default()
        })
        .expect("the bench's settings are valid");
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut buffer = EvalBuffer::new();
        // A fresh tree for every search; `reset` keeps only the allocations, as self-play does.
        let mut search = Search::new(game.clone(), config);
        group.bench_function(name, |b| {
            b.iter(|| {
                search.reset(black_box(game.clone()));
                let r = search
                    .run(SIMS, true, &mut rng, &mut UniformEvaluator, &mut buffer)
                    .expect("uniform evaluation cannot fail");
                assert_eq!(r.total_visits(), SIMS);
                r.best
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_search);
criterion_main!(benches);
