//! Unit tests of the value target and of the consumed-shard record.

use super::{ValueTargets, value_target};

fn close(a: [f32; 3], b: [f32; 3]) -> bool {
    a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6)
}

fn t(q_weight: f32, material_weight: f32) -> ValueTargets {
    ValueTargets { q_weight, material_weight, material_scale: 4.0, cheap_weight: 1.0 }
}

/// The target alone, for an uncapped full-search sample with no material known.
fn plain(result: i8, q: f32, q_weight: f32) -> [f32; 3] {
    let (target, weight) = value_target(result, q, None, false, true, &t(q_weight, 0.0));
    assert!((weight - 1.0).abs() < 1e-6, "{weight}");
    target
}

#[test]
fn value_target_mixes_the_result_with_the_root_value() {
    // λ = 0: the game result alone, whatever the search said.
    assert!(close(plain(1, -0.8, 0.0), [1.0, 0.0, 0.0]));
    assert!(close(plain(0, 0.5, 0.0), [0.0, 1.0, 0.0]));
    assert!(close(plain(-1, 0.9, 0.0), [0.0, 0.0, 1.0]));
    // λ = 1: the root value alone, q = 0.4 → (0.4, 0.6, 0), q = −1 → a sure loss.
    assert!(close(plain(-1, 0.4, 1.0), [0.4, 0.6, 0.0]));
    assert!(close(plain(1, -1.0, 1.0), [0.0, 0.0, 1.0]));
    // λ = 0.5, a drawn game whose search saw a win at 0.6: 0.5·(0,1,0) + 0.5·(0.6,0.4,0).
    assert!(close(plain(0, 0.6, 0.5), [0.3, 0.7, 0.0]));
    // A lost game, q = −0.2: 0.5·(0,0,1) + 0.5·(0,0.8,0.2).
    assert!(close(plain(-1, -0.2, 0.5), [0.0, 0.4, 0.6]));
    // Out-of-range or non-finite q never makes a target that is not a distribution.
    for q in [f32::NAN, f32::INFINITY, 3.0, -7.0] {
        let t = plain(1, q, 0.5);
        assert!(t.iter().all(|x| (0.0..=1.0).contains(x)), "{q}: {t:?}");
        assert!((t.iter().sum::<f32>() - 1.0).abs() < 1e-6, "{q}: {t:?}");
    }
}

#[test]
fn a_capped_game_teaches_no_result() {
    // Game result alone: a game cut at the length cap has weight 0 (it is no draw).
    let (_, w) = value_target(0, 0.3, Some(9.0), true, true, &t(0.0, 0.0));
    assert_eq!(w, 0.0);
    // With a material target of weight 0.25, a capped game teaches the material alone,
    // with that weight: 9 pawns up at scale 4 is tanh(2.25) = 0.97803.
    let (target, w) = value_target(0, 0.3, Some(9.0), true, true, &t(0.0, 0.25));
    let m = 2.25f32.tanh();
    assert!((w - 0.25).abs() < 1e-6, "{w}");
    assert!(close(target, [(1.0 + m) / 2.0, 0.0, (1.0 - m) / 2.0]), "{target:?}");
    // The same game not capped (a repetition draw): 0.75 · draw + 0.25 · material.
    let (target, w) = value_target(0, 0.3, Some(9.0), false, true, &t(0.0, 0.25));
    assert_eq!(w, 1.0);
    let expected = [0.25 * (1.0 + m) / 2.0, 0.75, 0.25 * (1.0 - m) / 2.0];
    assert!(close(target, expected), "{target:?} vs {expected:?}");
    // Unknown material (a version 1 shard): the result alone, renormalised.
    let (target, w) = value_target(-1, 0.3, None, false, true, &t(0.0, 0.25));
    assert_eq!(w, 1.0);
    assert!(close(target, [0.0, 0.0, 1.0]), "{target:?}");
}

#[test]
fn cheap_search_samples_take_their_own_value_weight() {
    let targets = ValueTargets { cheap_weight: 0.0, ..t(0.0, 0.0) };
    assert_eq!(value_target(1, 0.0, None, false, false, &targets).1, 0.0);
    assert_eq!(value_target(1, 0.0, None, false, true, &targets).1, 1.0);
    let targets = ValueTargets { cheap_weight: 0.5, ..t(0.0, 0.0) };
    assert_eq!(value_target(1, 0.0, None, false, false, &targets).1, 0.5);
}

#[test]
fn an_iterations_store_record_reads_back_whole_and_an_old_one_as_a_cursor() {
    use super::{ConsumedShard, IngestReport, RunPaths, ShardFate, parse_consumed};
    let dir = std::env::temp_dir().join(format!("xqz-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let paths = RunPaths::under(&dir);
    std::fs::create_dir_all(&paths.shards).unwrap();
    let mut cursor = crate::distributed::ShardCursor::default();
    cursor.consume(0xab, 6);
    cursor.seen_in(0xab, 3);
    let shard = |seq: u64, samples, games, fate| ConsumedShard {
        key: crate::distributed::shard_key(0xab, seq),
        samples,
        games,
        fate,
    };
    let ingest = IngestReport {
        shards: 1,
        workers: 1,
        bytes: 12345,
        stale_shards: 1,
        bad_shards: 1,
        age_mean: 1.0 / 3.0,
        age_max: 2,
        seconds: 0.1 + 0.2,
        waiting_shards: 4,
        waiting_workers: 2,
        consumed: vec![
            shard(4, 311, 4, ShardFate::Trained),
            shard(5, 0, 0, ShardFate::Bad),
            shard(6, 97, 1, ShardFate::Stale),
        ],
    };
    super::write_consumed(&paths, 3, &ingest, &cursor).unwrap();
    let text = std::fs::read_to_string(super::consumed_path(&paths, 3)).unwrap();
    // One line per shard: what a user's awk counts.
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("shard ")).collect();
    assert_eq!(
        lines,
        [
            "shard 3 shards/00000000000000ab/000000000004.npz 311 4 trained",
            "shard 3 shards/00000000000000ab/000000000005.npz 0 0 bad",
            "shard 3 shards/00000000000000ab/000000000006.npz 97 1 stale",
        ]
    );
    assert_eq!(super::read_consumed(&paths, 3).unwrap(), Some((cursor, Some(ingest))));
    // An earlier version's record: the cursor alone.
    let (old, none) = parse_consumed("00000000000000ab 7\n").unwrap();
    assert_eq!((old.next(0xab), none), (7, None));
    for bad in ["shard 3 k 1 1 eaten\n", "ingest shards=x\n", "zz 1\n", "shard 3 k 1\n"] {
        assert_eq!(parse_consumed(bad), None, "{bad}");
    }
    assert_eq!(super::read_consumed(&paths, 4).unwrap(), None);
    std::fs::remove_dir_all(&dir).unwrap();
}
