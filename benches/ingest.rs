//! How fast a trainer ingests workers' shards from a store (`xiangqi_train::distributed`): list the
//! shards after the cursor, download each, and parse it (what `TrainingRun` does each
//! iteration before training), from a directory store and, when `XQZ_S3_BUCKET` and the
//! `AWS_*` variables name an S3 server (`.ci/rgw start DIR`, then `. DIR/env`), from S3.
//!
//! The shards are real: 64 self-play games of `configs/cpu.toml`'s search settings (uniform
//! priors, length cap 150 plies), split into 16 shards of 4 games each, the size a worker of
//! `configs/cpu.toml`-like settings uploads. Criterion reports bytes/s; the end prints shards/s
//! and MB/s.
//!
//! Run: `cargo bench -p xiangqi-train --bench ingest`.

use std::hint::black_box;
use std::io::Cursor;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::Deserialize;
use xiangqi_search::{
    Checked, SearchConfig, SelfPlayConfig, SelfPlayEvent, Shard, UniformEvaluator, play_games,
    read_shard_from, write_shard_to,
};
use xiangqi_store::Store;
use xiangqi_train::distributed::{FETCH_CONCURRENCY, ShardCursor, pending_shards, shard_key};

const SHARDS: u64 = 16;
const GAMES_PER_SHARD: u64 = 4;

#[derive(Deserialize)]
struct CpuToml {
    search: SearchConfig,
    selfplay: SelfPlayConfig,
}

/// The shards, encoded.
fn shards() -> Vec<Vec<u8>> {
    let c: CpuToml = toml::from_str(include_str!("../configs/cpu.toml")).expect("cpu.toml");
    let mut selfplay = c.selfplay;
    selfplay.length_cap = 150;
    let mut out = Vec::new();
    let rules = selfplay.rules_for::<xiangqi::Game>().expect("cpu.toml's rules");
    let mut shard = Shard::new::<xiangqi::Game>(rules);
    let mut in_shard = 0;
    play_games::<xiangqi::Game, _, _>(
        &Checked::new(c.search).expect("cpu.toml's search"),
        &Checked::new(selfplay).expect("cpu.toml's self-play"),
        SHARDS * GAMES_PER_SHARD,
        &mut UniformEvaluator,
        |e| {
            if let SelfPlayEvent::GameFinished(record, _) = e {
                shard.push_game_of(record, 7, 0);
                in_shard += 1;
                if in_shard == GAMES_PER_SHARD {
                    out.push(write_shard_to(Cursor::new(Vec::new()), &shard).unwrap().into_inner());
                    shard = Shard::new::<xiangqi::Game>(rules);
                    in_shard = 0;
                }
            }
            Ok(())
        },
    )
    .expect("self-play");
    out
}

/// Everything after an empty cursor, read (as the trainer does, `FETCH_CONCURRENCY` at a time)
/// and parsed: the samples.
fn ingest(store: &Store) -> usize {
    let keys: Vec<String> = pending_shards(store, &ShardCursor::default())
        .unwrap()
        .shards
        .into_iter()
        .map(|p| p.key)
        .collect();
    let mut samples = 0;
    for bytes in store.get_many(&keys, FETCH_CONCURRENCY).unwrap() {
        samples += read_shard_from(Cursor::new(bytes.unwrap())).unwrap().len();
    }
    samples
}

fn bench_store(c: &mut Criterion, name: &str, store: &Store, shards: &[Vec<u8>]) {
    for (seq, bytes) in shards.iter().enumerate() {
        store.put_new(&shard_key(7, seq as u64), bytes.clone()).unwrap();
    }
    let total: usize = shards.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(total as u64));
    group.bench_function(name, |b| b.iter(|| black_box(ingest(store))));
    group.finish();
    let runs = 5;
    let t = Instant::now();
    for _ in 0..runs {
        black_box(ingest(store));
    }
    let secs = t.elapsed().as_secs_f64() / f64::from(runs);
    println!(
        "ingest/{name}: {} shards, {:.2} MB: {:.0} shards/s, {:.1} MB/s ({:.0} ms per pass)",
        shards.len(),
        total as f64 / 1e6,
        shards.len() as f64 / secs,
        total as f64 / 1e6 / secs,
        secs * 1e3
    );
}

fn bench(c: &mut Criterion) {
    let shards = shards();
    let dir = std::env::temp_dir().join(format!("xqz-ingest-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(dir.to_str().unwrap(), &[]).unwrap();
    bench_store(c, "directory", &store, &shards);
    let _ = std::fs::remove_dir_all(&dir);
    if let Ok(bucket) = std::env::var("XQZ_S3_BUCKET") {
        let options: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.starts_with("AWS_"))
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        let url = format!("s3://{bucket}/ingest-bench-{}", std::process::id());
        let store = Store::open(&url, &options).unwrap();
        bench_store(c, "s3", &store, &shards);
    } else {
        println!("ingest/s3: skipped (no XQZ_S3_BUCKET)");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
