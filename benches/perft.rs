//! Move generation benchmarks of the rules crate. Each bench asserts its node count, so a fast
//! wrong answer fails.
//!
//! Run: `cargo bench -p xiangqi --bench perft` (janggi only: `... --bench perft -- janggi`).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use xiangqi::{Position, janggi, perft};

const MIDGAME: &str =
    "1rbaka2R/5r3/6n2/2p1p1p2/4P1bP1/PpC3Bc1/1nPR2P2/2N2AN2/1c2K1p2/2BAC4 w - - 0 1";

fn bench_perft(c: &mut Criterion) {
    let mut group = c.benchmark_group("perft");
    group.sample_size(10);
    let start = Position::start();
    group.throughput(Throughput::Elements(3_290_240));
    group.bench_function("start_depth4", |b| {
        b.iter(|| assert_eq!(perft(black_box(&start), 4), 3_290_240));
    });
    let mid = Position::from_fen(MIDGAME).expect("valid FEN");
    group.throughput(Throughput::Elements(100_326));
    group.bench_function("midgame_depth3", |b| {
        b.iter(|| assert_eq!(perft(black_box(&mid), 3), 100_326));
    });
    group.finish();
}

fn bench_janggi_perft(c: &mut Criterion) {
    let mut group = c.benchmark_group("janggi_perft");
    group.sample_size(10);
    let traditional = janggi::Position::start(janggi::Rules::Traditional);
    group.throughput(Throughput::Elements(1_085_579));
    group.bench_function("traditional_start_depth4", |b| {
        b.iter(|| assert_eq!(janggi::perft(black_box(&traditional), 4), 1_085_579));
    });
    let site = janggi::Position::start(janggi::Rules::Site);
    group.throughput(Throughput::Elements(149_974));
    group.bench_function("site_start_depth3", |b| {
        b.iter(|| assert_eq!(janggi::perft(black_box(&site), 3), 149_974));
    });
    group.finish();
}

fn bench_movegen(c: &mut Criterion) {
    let mid = Position::from_fen(MIDGAME).expect("valid FEN");
    c.bench_function("legal_moves/midgame", |b| {
        b.iter(|| assert_eq!(black_box(&mid).legal_moves().len(), 49));
    });
    let m = mid.legal_moves()[0];
    c.bench_function("play_undo/midgame", |b| {
        let mut pos = mid;
        b.iter(|| {
            let undo = pos.play_unchecked(black_box(m));
            pos.undo(undo);
        });
    });
}

criterion_group!(benches, bench_perft, bench_janggi_perft, bench_movegen);
criterion_main!(benches);
