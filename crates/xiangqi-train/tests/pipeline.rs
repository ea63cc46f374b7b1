//! The training loop on a tiny network: shards and checkpoints appear, a resumed run takes the
//! same steps as an uninterrupted one, and a new run refuses to overwrite an old one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::sync::Mutex;

use xiangqi::{Game, Position, RuleSet};
use xiangqi_nn::{InferenceNet, NetConfig, TrainConfig, checkpoint, cpu_device};
use xiangqi_search::{
    Checked, SearchConfig, SelfPlayConfig, SelfPlayEvent, Shard, UniformEvaluator, list_shards,
    play_games, read_shard, write_shard_to,
};
use xiangqi_store::Store;
use xiangqi_train::distributed::{ShardCursor, shard_key};
use xiangqi_train::pipeline::{
    IterationReport, LoopConfig, NoObserver, Observer, PipelineError, RunConfig, RunPaths,
    StopReason, TrainingRun, list_checkpoints,
};

/// burn seeds weight initialisation through a process-wide generator of the device, so two runs
/// created at the same time in one process would interleave their draws: run these tests one at
/// a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn tiny() -> RunConfig {
    let search = SearchConfig {
        simulations: 8,
        cheap_simulations: 4,
        full_search_prob: 0.5,
        ..SearchConfig::default()
    };
    let selfplay = SelfPlayConfig {
        games_in_flight: 4,
        max_batch: 16,
        threads: 1,
        length_cap: 24,
        opening_random_plies: 2,
        ..SelfPlayConfig::default()
    };
    let run = LoopConfig {
        games_per_iteration: 3,
        train_ratio: 1.0,
        batch_size: 16,
        window_samples: 500,
        min_window_samples: 1,
        keep_checkpoints: 2,
        arena_every: 0,
        seed: 7,
        ..LoopConfig::default()
    };
    RunConfig {
        network: NetConfig::tiny(),
        training: TrainConfig { warmup_steps: 0, ..TrainConfig::default() },
        search,
        selfplay,
        run,
        ..RunConfig::default()
    }
}

fn value_of_start(dir: &Path) -> [f32; 3] {
    let (net, _) = checkpoint::load_net(dir, None, &cpu_device()).unwrap();
    let net = InferenceNet::from_net(&net, &cpu_device()).unwrap();
    let game = Game::new(Position::start(), RuleSet::Asian);
    let mut planes = vec![0.0; xiangqi::env::INPUT_SIZE];
    xiangqi::env::encode_planes(&game, &mut planes);
    net.predict(planes).unwrap().wdl_probabilities(0)
}

#[test]
fn a_resumed_run_takes_the_same_steps_as_an_uninterrupted_one() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pipeline-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let (a, b) = (RunPaths::under(&tmp.join("a")), RunPaths::under(&tmp.join("b")));

    let mut straight = TrainingRun::create(tiny().check().unwrap(), a.clone()).unwrap();
    assert_eq!(straight.run(Some(3), &mut NoObserver).unwrap(), StopReason::Iterations);

    let mut first = TrainingRun::create(tiny().check().unwrap(), b.clone()).unwrap();
    first.run(Some(2), &mut NoObserver).unwrap();
    drop(first);
    let mut resumed = TrainingRun::resume(tiny().check().unwrap(), b.clone()).unwrap();
    assert_eq!(resumed.iteration(), 2);
    resumed.run(Some(1), &mut NoObserver).unwrap();

    assert_eq!(resumed.iteration(), 3);
    assert!(straight.trainer().step_count() > 0);
    assert_eq!(resumed.trainer().step_count(), straight.trainer().step_count());
    assert_eq!(resumed.total_samples(), straight.total_samples());
    assert_eq!(list_shards(&a.shards).unwrap().len(), 3);
    let ckpts = list_checkpoints(&a.checkpoints).unwrap();
    // The initial net is always kept, plus the newest `keep_checkpoints`.
    let names: Vec<u64> = ckpts.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, vec![0, 2, 3]);
    let (va, vb) = (
        value_of_start(&a.checkpoints.join("ckpt-000003")),
        value_of_start(&b.checkpoints.join("ckpt-000003")),
    );
    for k in 0..3 {
        assert!((va[k] - vb[k]).abs() < 1e-6, "resumed {vb:?} vs straight {va:?}");
    }
    let v0 = value_of_start(&a.checkpoints.join("ckpt-000000"));
    assert!(v0.iter().zip(&va).any(|(x, y)| (x - y).abs() > 1e-4), "training changed nothing");

    // A new run in a used directory is refused; resuming an empty one too.
    assert!(matches!(
        TrainingRun::create(tiny().check().unwrap(), a.clone()),
        Err(PipelineError::RunExists(_))
    ));
    let empty = RunPaths::under(&tmp.join("empty"));
    assert!(matches!(
        TrainingRun::resume(tiny().check().unwrap(), empty),
        Err(PipelineError::NothingToResume(_))
    ));
    let _ = fs::remove_dir_all(&tmp);
}

#[test]
fn a_damaged_newest_checkpoint_falls_back_to_the_previous_one() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pipeline-damaged-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let paths = RunPaths::under(&tmp);
    let mut run = TrainingRun::create(tiny().check().unwrap(), paths.clone()).unwrap();
    run.run(Some(2), &mut NoObserver).unwrap();
    drop(run);
    // Truncate a file of the newest checkpoint.
    let newest = paths.checkpoints.join("ckpt-000002");
    for entry in fs::read_dir(&newest).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "bpk" || e == "bin" || e == "burnpack") {
            let bytes = fs::read(&p).unwrap();
            fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        }
    }
    assert!(checkpoint::verify(&newest, None).is_err(), "the damage must be detected");
    let resumed = TrainingRun::resume(tiny().check().unwrap(), paths).unwrap();
    assert_eq!(resumed.iteration(), 1);
    let _ = fs::remove_dir_all(&tmp);
}

/// A resume whose smaller window leaves shards beyond `max_shards_on_disk` says so before the
/// next iteration prunes them; a resume with the run's own config says nothing.
#[test]
fn a_resume_that_will_prune_shards_warns_first() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pipeline-prune-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let paths = RunPaths::under(&tmp);
    let config = || {
        let mut c = tiny();
        c.run.max_shards_on_disk = 2;
        c
    };
    let mut run = TrainingRun::create(config().check().unwrap(), paths.clone()).unwrap();
    run.run(Some(3), &mut NoObserver).unwrap();
    drop(run);
    // Three shards of at most 72 samples each: all inside the 500-sample window, so all kept.
    assert_eq!(list_shards(&paths.shards).unwrap().len(), 3);
    let about_pruning = |w: &[String]| w.iter().any(|w| w.contains("max_shards_on_disk"));

    let mut same = TrainingRun::resume(config().check().unwrap(), paths.clone()).unwrap();
    assert!(!about_pruning(&same.take_warnings()));
    drop(same);

    let mut smaller = config();
    smaller.run.window_samples = 1;
    let mut resumed = TrainingRun::resume(smaller.check().unwrap(), paths.clone()).unwrap();
    let warnings = resumed.take_warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("1 of the 3 shards") && w.contains("window_samples = 1")),
        "{warnings:?}"
    );
    // What it announced happens: the next iteration keeps max_shards_on_disk shards.
    resumed.run(Some(1), &mut NoObserver).unwrap();
    assert_eq!(list_shards(&paths.shards).unwrap().len(), 2);
    drop(resumed);
    // A shard numbered past the run's iterations (left by a run this one fell back from) takes
    // a place under the cap as in pruning, so the warning counts it.
    let kept = list_shards(&paths.shards).unwrap();
    fs::copy(&kept[0], paths.shards.join("shard-000099.npz")).unwrap();
    let mut smaller = config();
    smaller.run.window_samples = 1;
    let mut again = TrainingRun::resume(smaller.check().unwrap(), paths.clone()).unwrap();
    let warnings = again.take_warnings();
    assert!(warnings.iter().any(|w| w.contains("1 of the 3 shards")), "{warnings:?}");
    let _ = fs::remove_dir_all(&tmp);
}

/// Pruning never deletes a shard of the replay window: an unreadable shard is in no window, and
/// goes before the window's readable shards, however old they are.
#[test]
fn pruning_keeps_the_windows_shards_and_drops_an_unreadable_one() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pipeline-unreadable-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let paths = RunPaths::under(&tmp);
    let mut config = tiny();
    config.run.max_shards_on_disk = 2;
    let mut run = TrainingRun::create(config.clone().check().unwrap(), paths.clone()).unwrap();
    run.run(Some(3), &mut NoObserver).unwrap();
    drop(run);
    let names = || -> Vec<String> {
        list_shards(&paths.shards)
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    // All three fit the 500-sample window, so all three stay beside the cap of 2.
    assert_eq!(names(), ["shard-000001.npz", "shard-000002.npz", "shard-000003.npz"]);
    let newest = paths.shards.join("shard-000003.npz");
    let bytes = fs::read(&newest).unwrap();
    fs::write(&newest, &bytes[..bytes.len() / 3]).unwrap();
    let mut resumed = TrainingRun::resume(config.clone().check().unwrap(), paths.clone()).unwrap();
    assert_eq!(resumed.window_samples(), {
        let len =
            |n: u64| read_shard(&paths.shards.join(format!("shard-{n:06}.npz"))).unwrap().len();
        len(1) + len(2)
    });
    resumed.run(Some(1), &mut NoObserver).unwrap();
    // The window is shards 1, 2 and 4; the unreadable shard 3 was the one to go.
    assert_eq!(names(), ["shard-000001.npz", "shard-000002.npz", "shard-000004.npz"]);
    drop(resumed);
    // A directory in a shard's place is left out too, and named among the skipped.
    let odd = paths.shards.join("shard-000002.npz");
    fs::remove_file(&odd).unwrap();
    fs::create_dir(&odd).unwrap();
    let resumed = TrainingRun::resume(config.check().unwrap(), paths.clone()).unwrap();
    let skipped: Vec<_> =
        resumed.skipped().iter().map(|(p, why)| (p.clone(), why.clone())).collect();
    assert!(
        skipped.iter().any(|(p, why)| *p == odd && why.starts_with("not a file")),
        "{skipped:?}"
    );
    assert_eq!(resumed.window_samples(), {
        let len =
            |n: u64| read_shard(&paths.shards.join(format!("shard-{n:06}.npz"))).unwrap().len();
        len(1) + len(4)
    });
    let _ = fs::remove_dir_all(&tmp);
}

/// A shard whose samples cannot be encoded (a move from one corner of the board to the other,
/// which no policy index stands for) stops training with an error that names that shard's file,
/// not only the shards' directory.
#[test]
fn a_damaged_sample_is_reported_with_its_shard_file() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pipeline-damaged-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let paths = RunPaths::under(&tmp);
    let mut run = TrainingRun::create(tiny().check().unwrap(), paths.clone()).unwrap();
    run.run(Some(2), &mut NoObserver).unwrap();
    drop(run);
    let damaged = paths.shards.join("shard-000001.npz");
    let mut shard = read_shard(&damaged).unwrap();
    let corner_to_corner =
        xiangqi::Move::new(xiangqi::Square::from_index(0), xiangqi::Square::from_index(89));
    shard.policy_moves.iter_mut().for_each(|m| *m = corner_to_corner.to_u16());
    let bytes = write_shard_to(std::io::Cursor::new(Vec::new()), &shard).unwrap().into_inner();
    fs::write(&damaged, bytes).unwrap();
    let mut resumed = TrainingRun::resume(tiny().check().unwrap(), paths.clone()).unwrap();
    match resumed.run(Some(1), &mut NoObserver) {
        Err(PipelineError::Shard { path, reason }) => {
            assert_eq!(path, damaged, "{reason}");
            assert!(reason.contains("has no policy index"), "{reason}");
        }
        other => panic!("expected the damaged shard's error, got {other:?}"),
    }
    drop(resumed);
    // Pretraining on those shards names the same file.
    let mut c = tiny();
    c.run.pretrain_shards = paths.shards.to_str().unwrap().to_string();
    c.run.pretrain_steps = 20;
    let mut pretrained =
        TrainingRun::create(c.check().unwrap(), RunPaths::under(&tmp.join("pretrained"))).unwrap();
    match pretrained.run(Some(1), &mut NoObserver) {
        Err(PipelineError::Pretrain { path, reason }) => {
            assert_eq!(path, damaged, "{reason}");
            assert!(reason.contains("has no policy index"), "{reason}");
        }
        other => panic!("expected the damaged shard's error, got {other:?}"),
    }
    let _ = fs::remove_dir_all(&tmp);
}

/// Keeps the iteration reports (and the warnings).
#[derive(Default)]
struct Reports(Vec<IterationReport>, Vec<String>);

impl Observer for Reports {
    fn iteration(&mut self, report: &IterationReport) {
        self.0.push(report.clone());
    }

    fn warning(&mut self, message: &str) {
        self.1.push(message.to_string());
    }
}

/// Each uploaded shard's samples and games, by `(worker, seq)`.
type Uploaded = BTreeMap<(u64, u64), (usize, BTreeSet<(u64, u64)>)>;

/// Uploads shards of one game each (uniform-prior self-play under `config`'s settings, played
/// by generation 0) as workers would: `counts[k]` shards of worker `workers[k]`, each worker's
/// numbered from 0.
fn upload_worker_shards(
    store: &Store,
    config: &RunConfig,
    workers: &[u64],
    counts: &[u64],
) -> Uploaded {
    let rules = config.selfplay.rules_for::<Game>().unwrap();
    let mut records = Vec::new();
    play_games::<Game, _, _>(
        &Checked::new(config.search.clone()).unwrap(),
        &Checked::new(config.selfplay.clone()).unwrap(),
        counts.iter().sum(),
        &mut UniformEvaluator,
        |e| {
            if let SelfPlayEvent::GameFinished(record, _) = e {
                records.push(record.clone());
            }
            Ok(())
        },
    )
    .unwrap();
    let mut records = records.into_iter();
    let mut out = BTreeMap::new();
    for (&worker, &count) in workers.iter().zip(counts) {
        for seq in 0..count {
            let mut shard = Shard::new::<Game>(rules);
            shard.push_game_of(&records.next().unwrap(), worker, 0);
            let bytes = write_shard_to(std::io::Cursor::new(Vec::new()), &shard).unwrap();
            store.put_new(&shard_key(worker, seq), bytes.into_inner()).unwrap();
            out.insert((worker, seq), (shard.len(), shard.games()));
        }
    }
    out
}

fn cursor_of(checkpoint: &Path) -> ShardCursor {
    ShardCursor::from_counters(&checkpoint::read_manifest(checkpoint, None).unwrap().counters)
}

#[test]
fn a_fast_worker_does_not_starve_a_slow_one_and_every_shard_is_trained_on_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pipeline-fair-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let store = Store::open(tmp.join("store").to_str().unwrap(), &[]).unwrap();
    let mut config = tiny();
    config.run.games_per_iteration = 1;
    // The lower worker id has uploaded 8 shards, the higher 2.
    let (fast, slow) = (0x10, 0xff00);
    let shards = upload_worker_shards(&store, &config, &[fast, slow], &[8, 2]);
    // A window that the first iteration fills with 4 shards when it takes them in turns
    // (fast 0, slow 0, fast 1, then slow 1 passes it); all of them are the fast worker's when
    // it takes them in worker order.
    let len = |w: u64, seq: u64| shards[&(w, seq)].0;
    config.run.window_samples = len(fast, 0) + len(slow, 0) + len(fast, 1) + 1;
    assert!((0..8).map(|s| len(fast, s)).sum::<usize>() > config.run.window_samples);

    let paths = RunPaths::under(&tmp.join("run"));
    let mut run = TrainingRun::create(config.check().unwrap(), paths.clone()).unwrap();
    run.attach_store(store).unwrap();
    let mut reports = Reports::default();
    run.run(Some(1), &mut reports).unwrap();
    let first = reports.0[0].ingest.clone().expect("gathered from the store");
    assert_eq!((first.shards, first.workers), (4, 2), "{first:?}");
    // The rest waits, and the trainer says it is behind.
    assert_eq!((first.waiting_shards, first.waiting_workers), (6, 1), "{first:?}");
    assert!(
        reports.1.iter().any(|w| w.contains("behind the workers") && w.contains("6 shards")),
        "{:?}",
        reports.1
    );
    // Each worker's cursor moved past exactly the shards read: its oldest two.
    let cursor = cursor_of(&paths.checkpoints.join("ckpt-000001"));
    assert_eq!((cursor.next(fast), cursor.next(slow)), (2, 2));

    // The fast worker's other shards follow, in as many iterations as they fill.
    while reports.0.last().unwrap().ingest.as_ref().unwrap().waiting_shards > 0 {
        assert!(reports.0.len() < 8, "the shards were not consumed");
        run.run(Some(1), &mut reports).unwrap();
    }
    let cursor = cursor_of(&paths.checkpoints.join(format!("ckpt-{:06}", run.iteration())));
    assert_eq!((cursor.next(fast), cursor.next(slow)), (8, 2));
    // One warning for each iteration that left shards waiting, and none for the last.
    let behind = reports.0.iter().filter(|r| r.ingest.as_ref().unwrap().waiting_shards > 0);
    let told = reports.1.iter().filter(|w| w.contains("behind the workers"));
    assert_eq!(behind.count(), told.count(), "{:?}", reports.1);
    // Every game of every worker shard was trained on, each in exactly one iteration.
    let mut trained: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for path in list_shards(&paths.shards).unwrap() {
        for g in read_shard(&path).unwrap().games() {
            *trained.entry(g).or_default() += 1;
        }
    }
    let uploaded: BTreeSet<(u64, u64)> = shards.values().flat_map(|(_, g)| g.clone()).collect();
    assert_eq!(uploaded.len(), 10);
    assert_eq!(trained.keys().copied().collect::<BTreeSet<_>>(), uploaded);
    assert!(trained.values().all(|&n| n == 1), "{trained:?}");
    let _ = fs::remove_dir_all(&tmp);
}

/// The mean WDL cross-entropy `−Σ t · ln p` of every sample of `shard` whose material target
/// is known against it, `t = ((1 + m) / 2, 0, (1 − m) / 2)`, `m = tanh(pawns / scale)`
/// (`LoopConfig::material_scale`; the shard keeps half-pawns), under the network of the
/// checkpoint `ckpt`: computed here from the shard and the network alone. The pawns are the
/// balance of the position `plies` later in the sample's game (`LoopConfig::material_plies`)
/// where the shard holds it, else of the game's final position.
fn material_loss(ckpt: &Path, shard: &Shard, scale: f64, plies: usize) -> f64 {
    let (net, _) = checkpoint::load_net(ckpt, None, &cpu_device()).unwrap();
    let net = InferenceNet::from_net(&net, &cpu_device()).unwrap();
    let mut planes = vec![0.0; shard.len() * xiangqi::env::INPUT_SIZE];
    for (i, out) in planes.chunks_mut(xiangqi::env::INPUT_SIZE).enumerate() {
        xiangqi::env::planes_from_compact(&shard.sample(i).inputs, out).unwrap();
    }
    let logits = net.predict(planes).unwrap();
    let (mut sum, mut count) = (0.0, 0.0);
    for i in 0..shard.len() {
        let j = i + plies;
        let later = plies > 0
            && j < shard.len()
            && shard.game_id[j] == shard.game_id[i]
            && shard.worker[j] == shard.worker[i]
            && usize::from(shard.ply[j]) == usize::from(shard.ply[i]) + plies;
        let material = if later {
            let red =
                <xiangqi::Game as xiangqi_search::Material>::material_half_pawns(&shard.boards[j]);
            if shard.turn[i] == 0 { red } else { -red }
        } else {
            shard.sample(i).final_material
        };
        if material == xiangqi_search::UNKNOWN_MATERIAL {
            continue;
        }
        let m = (f64::from(material) / 2.0 / scale).tanh();
        let p = logits.wdl_probabilities(i).map(|x| f64::from(x.max(1e-12)));
        sum -= (1.0 + m) / 2.0 * p[0].ln() + (1.0 - m) / 2.0 * p[2].ln();
        count += 1.0;
    }
    assert!(count > 0.0, "no sample with a known final material");
    sum / count
}

#[test]
fn each_new_shard_is_scored_before_it_is_trained_on() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pipeline-heldout-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let mut config = tiny();
    // Every sample of a shard scored (3 games of at most 24 plies), and every checkpoint kept.
    config.run.heldout_samples = 1000;
    config.run.keep_checkpoints = 10;
    // With a material part the value target exists even for games cut at the 24-ply cap.
    config.run.material_weight = 0.5;
    let paths = RunPaths::under(&tmp.join("a"));
    let mut run = TrainingRun::create(config.clone().check().unwrap(), paths.clone()).unwrap();
    let mut reports = Reports::default();
    run.run(Some(2), &mut reports).unwrap();
    assert_eq!(reports.0.len(), 2);
    for r in &reports.0 {
        let h = r.heldout.expect("measured");
        assert_eq!(h.samples, r.selfplay.samples);
        // Cross-entropies of a softmax are positive and, for an untrained 3-way WDL head, near
        // ln 3; the policy over ~40 legal moves near ln 40.
        for x in [h.policy_loss, h.value_loss, h.material_loss] {
            assert!(x.is_finite() && x > 0.0 && x < 10.0, "{h:?}");
        }
        // NaN when every scored game was capped (no result to score against).
        assert!(h.result_loss.is_nan() || h.result_loss > 0.0, "{h:?}");
        // Before: the shard of iteration N is scored by the network of iteration N − 1 (the
        // checkpoint before any step on it), not by the one its steps made.
        let n = r.iteration;
        let shard = read_shard(&paths.shards.join(format!("shard-{n:06}.npz"))).unwrap();
        let ckpt = |k: u64| paths.checkpoints.join(format!("ckpt-{k:06}"));
        let scale = config.run.material_scale;
        let (before, after) = (
            material_loss(&ckpt(n - 1), &shard, scale, 0),
            material_loss(&ckpt(n), &shard, scale, 0),
        );
        assert!(
            (h.material_loss - before).abs() < 1e-6,
            "iteration {n}: reported {} before {before} after {after}",
            h.material_loss
        );
        assert!(
            (after - before).abs() > 1e-3,
            "iteration {n}: training did not move the loss: before {before} after {after}"
        );
    }
    // With a horizon, the material part is the balance four plies later.
    let mut horizon = config.clone();
    horizon.run.material_plies = 4;
    let paths = RunPaths::under(&tmp.join("d"));
    let mut run = TrainingRun::create(horizon.check().unwrap(), paths.clone()).unwrap();
    let mut reports = Reports::default();
    run.run(Some(1), &mut reports).unwrap();
    let h = reports.0[0].heldout.expect("measured");
    let shard = read_shard(&paths.shards.join("shard-000001.npz")).unwrap();
    let first = paths.checkpoints.join("ckpt-000000");
    let scale = config.run.material_scale;
    let (near, end) =
        (material_loss(&first, &shard, scale, 4), material_loss(&first, &shard, scale, 0));
    assert!((h.material_loss - near).abs() < 1e-6, "{} against {near}", h.material_loss);
    assert!((near - end).abs() > 1e-6, "the horizon changed nothing: {near} and {end}");
    // At most `heldout_samples` samples are scored.
    config.run.heldout_samples = 40;
    let mut few =
        TrainingRun::create(config.clone().check().unwrap(), RunPaths::under(&tmp.join("c")))
            .unwrap();
    let mut reports = Reports::default();
    few.run(Some(1), &mut reports).unwrap();
    let r = &reports.0[0];
    assert!(r.selfplay.samples > 40, "{}", r.selfplay.samples);
    assert_eq!(r.heldout.expect("measured").samples, 40);
    // Not measured when turned off.
    config.run.heldout_samples = 0;
    let mut off =
        TrainingRun::create(config.check().unwrap(), RunPaths::under(&tmp.join("b"))).unwrap();
    let mut reports = Reports::default();
    off.run(Some(1), &mut reports).unwrap();
    assert_eq!(reports.0[0].heldout, None);
    let _ = fs::remove_dir_all(&tmp);
}

#[test]
fn self_tuning_resignation_starts_off_and_its_counts_survive_a_resume() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pipeline-resign-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let mut config = tiny();
    config.run.resign_target_false_positive = 0.05;
    config.run.resign_min_resigners = 1;
    // A fixed threshold beside the self-tuning one is refused, naming the key.
    let mut both = config.clone();
    both.selfplay.resign_threshold = -0.9;
    let err = both.check().err().unwrap();
    assert!(err.to_string().contains("selfplay.resign_threshold"), "{err}");

    let paths = RunPaths::under(&tmp.join("run"));
    let mut run = TrainingRun::create(config.clone().check().unwrap(), paths.clone()).unwrap();
    let mut reports = Reports::default();
    run.run(Some(1), &mut reports).unwrap();
    // Off at the start, so every game of the first iteration is counted, both sides.
    assert_eq!(reports.0[0].selfplay.resign_threshold, Some(-1.0));
    assert_eq!(run.resign_calibration().total(), 2 * reports.0[0].selfplay.games);
    run.run(Some(1), &mut reports).unwrap();
    assert!(run.resign_calibration().total() >= 2 * reports.0[0].selfplay.games);
    let (threshold, calibration) = (run.resign_threshold(), run.resign_calibration().clone());
    drop(run);
    let resumed = TrainingRun::resume(config.clone().check().unwrap(), paths.clone()).unwrap();
    assert_eq!(resumed.resign_threshold(), threshold);
    assert_eq!(resumed.resign_calibration(), &calibration);
    drop(resumed);
    // A kill after the second iteration's shard, before its checkpoint: the resume reuses the
    // shard and takes its games' counts from beside it, as if it had never stopped.
    fs::remove_dir_all(paths.checkpoints.join("ckpt-000002")).unwrap();
    let mut again = TrainingRun::resume(config.check().unwrap(), paths).unwrap();
    assert_eq!(again.iteration(), 1);
    again.run(Some(1), &mut NoObserver).unwrap();
    assert_eq!(again.resign_calibration(), &calibration);
    assert_eq!(again.resign_threshold(), threshold);
    let _ = fs::remove_dir_all(&tmp);
}

/// A shard of the games of `pgn` as `xqz import` reads them.
fn imported_shard(pgn: &str) -> Shard {
    use xiangqi_search::import::{import_game, pgn::read_pgn};
    let mut shard = Shard::new::<Game>(RuleSet::Asian);
    for (k, source) in read_pgn(pgn).iter().enumerate() {
        let imported = import_game::<Game>(source, RuleSet::Asian, k as u64).unwrap();
        shard.push_game_of(&imported.record, u64::MAX, xiangqi_search::UNKNOWN_GENERATION);
    }
    shard
}

/// The start position's prior of the central cannon opening (`h2e2`, and its mirror `b2e2`,
/// which mirror augmentation teaches with it) and its WDL under the net of `dir`.
fn cannon_prior_and_value_of_start(dir: &Path) -> (f32, [f32; 3]) {
    let (net, _) = checkpoint::load_net(dir, None, &cpu_device()).unwrap();
    let net = InferenceNet::from_net(&net, &cpu_device()).unwrap();
    let game = Game::new(Position::start(), RuleSet::Asian);
    let mut planes = vec![0.0; xiangqi::env::INPUT_SIZE];
    xiangqi::env::encode_planes(&game, &mut planes);
    let out = net.predict(planes).unwrap();
    let legal = game.position().legal_moves();
    let index = |m: &str| {
        let m = legal.iter().copied().find(|x| x.to_string() == m).unwrap();
        xiangqi::env::move_to_index(m, xiangqi::Color::Red).unwrap()
    };
    let logits = out.policy(0);
    let max = legal
        .iter()
        .map(|&m| logits[xiangqi::env::move_to_index(m, xiangqi::Color::Red).unwrap()])
        .fold(f32::NEG_INFINITY, f32::max);
    let z: f32 = legal
        .iter()
        .map(|&m| {
            (logits[xiangqi::env::move_to_index(m, xiangqi::Color::Red).unwrap()] - max).exp()
        })
        .sum();
    let p = |m: &str| (logits[index(m)] - max).exp() / z;
    (p("h2e2") + p("b2e2"), out.wdl_probabilities(0))
}

/// Two games that Red wins after opening with the central cannon (the result comes from the
/// `Result` tag: the moves end in no verdict of the rules).
const CANNON_GAMES: &str = "[Event \"a\"]\n[Result \"1-0\"]\n\n1. h2e2 h9g7 2. h0g2 i9h9 1-0\n\n\
                            [Event \"b\"]\n[Result \"1-0\"]\n\n1. h2e2 b9c7 2. b0c2 a9b9 1-0\n";

#[test]
fn pretraining_teaches_the_shards_moves_and_results_and_a_stopped_one_resumes_to_the_same_net() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pretrain-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let shards = tmp.join("imported");
    fs::create_dir_all(&shards).unwrap();
    let shard = imported_shard(CANNON_GAMES);
    assert_eq!(shard.len(), 8);
    fs::write(
        shards.join("import-000000.npz"),
        write_shard_to(std::io::Cursor::new(Vec::new()), &shard).unwrap().into_inner(),
    )
    .unwrap();
    let config = |max_steps: u64| {
        let mut c = tiny();
        c.run.pretrain_shards = shards.to_str().unwrap().to_string();
        c.run.pretrain_steps = 40;
        c.run.max_steps = max_steps;
        // Fast enough for 40 steps of 16 to learn eight positions.
        c.training.learning_rate = 0.01;
        c
    };

    // Straight through: 40 pretraining steps, then one iteration of self-play.
    let straight = RunPaths::under(&tmp.join("straight"));
    let mut run = TrainingRun::create(config(0).check().unwrap(), straight.clone()).unwrap();
    assert_eq!(run.run(Some(1), &mut NoObserver).unwrap(), StopReason::Iterations);
    assert!(run.trainer().step_count() > 40, "no training after the pretraining");
    let record = run.pretrained().unwrap().clone();
    assert_eq!((record.shards, record.games, record.samples), (1, 2, 8));
    assert_eq!((record.steps, record.planned_steps), (40, 40));
    drop(run);
    // The initial net stays unpretrained, with the planned pretraining recorded (no step
    // taken); the iteration's checkpoint carries the record of the finished one.
    let initial =
        checkpoint::read_manifest(&straight.checkpoints.join("ckpt-000000"), None).unwrap();
    assert_eq!(initial.step, 0);
    let planned = initial.pretrained.unwrap();
    assert_eq!((planned.steps, planned.planned_steps), (0, 40));
    assert_eq!(planned.fingerprint, record.fingerprint);
    let after = checkpoint::read_manifest(&straight.checkpoints.join("ckpt-000001"), None).unwrap();
    assert_eq!(after.pretrained.as_ref(), Some(&record));

    // What it learned: the opening move of both games, and that Red wins them.
    let (prior0, wdl0) = cannon_prior_and_value_of_start(&straight.checkpoints.join("ckpt-000000"));
    let pretrained = RunPaths::under(&tmp.join("only"));
    let mut only = TrainingRun::create(config(40).check().unwrap(), pretrained.clone()).unwrap();
    assert_eq!(only.run(None, &mut NoObserver).unwrap(), StopReason::Budget);
    assert_eq!(only.iteration(), 0, "the budget ends the run before any self-play");
    drop(only);
    let (prior, wdl) = cannon_prior_and_value_of_start(&pretrained.checkpoints.join("ckpt-000001"));
    assert!(prior > 0.5 && prior > 5.0 * prior0, "cannon opening prior {prior0} -> {prior}");
    assert!(wdl[0] > wdl0[0] + 0.1 && wdl[0] > wdl[2], "start WDL {wdl0:?} -> {wdl:?}");

    // Stopped by a step budget in the middle, then resumed: the same net as straight through.
    let stopped = RunPaths::under(&tmp.join("stopped"));
    let mut first = TrainingRun::create(config(15).check().unwrap(), stopped.clone()).unwrap();
    assert_eq!(first.run(None, &mut NoObserver).unwrap(), StopReason::Budget);
    assert_eq!(first.pretrained().map(|p| p.steps), Some(15));
    drop(first);
    let half = checkpoint::read_manifest(&stopped.checkpoints.join("ckpt-000001"), None).unwrap();
    assert_eq!(half.pretrained.map(|p| (p.steps, p.planned_steps)), Some((15, 40)));
    // Resumed with a config that no longer names the shards: the record says where they are.
    let mut later = tiny();
    later.run.max_steps = 40;
    later.training.learning_rate = 0.01;
    let mut resumed = TrainingRun::resume(later.check().unwrap(), stopped.clone()).unwrap();
    assert_eq!(resumed.trainer().step_count(), 15, "{:?}", resumed.skipped());
    assert_eq!(resumed.run(None, &mut NoObserver).unwrap(), StopReason::Budget);
    assert_eq!(resumed.pretrained().map(|p| p.steps), Some(40));
    drop(resumed);
    let (pa, va) = cannon_prior_and_value_of_start(&pretrained.checkpoints.join("ckpt-000001"));
    let (pb, vb) = cannon_prior_and_value_of_start(&stopped.checkpoints.join("ckpt-000001"));
    assert!((pa - pb).abs() < 1e-5, "resumed prior {pb} vs straight {pa}");
    for k in 0..3 {
        assert!((va[k] - vb[k]).abs() < 1e-5, "resumed {vb:?} vs straight {va:?}");
    }

    // Stopped before its first step (killed after the run was created): a resume with a config
    // that names no shards still pretrains, from the record in `ckpt-000000`.
    let early = RunPaths::under(&tmp.join("early"));
    drop(TrainingRun::create(config(40).check().unwrap(), early.clone()).unwrap());
    let mut later = tiny();
    later.run.max_steps = 40;
    later.training.learning_rate = 0.01;
    let mut resumed = TrainingRun::resume(later.check().unwrap(), early.clone()).unwrap();
    assert_eq!(resumed.run(None, &mut NoObserver).unwrap(), StopReason::Budget);
    assert_eq!(resumed.pretrained().map(|p| (p.steps, p.planned_steps)), Some((40, 40)));
    drop(resumed);
    let (pe, _) = cannon_prior_and_value_of_start(&early.checkpoints.join("ckpt-000001"));
    assert!((pe - pa).abs() < 1e-5, "pretrained after an early kill {pe} vs straight {pa}");

    // Shards that changed under a stopped pretraining are refused, naming what changed.
    let changed = RunPaths::under(&tmp.join("changed"));
    let mut first = TrainingRun::create(config(5).check().unwrap(), changed.clone()).unwrap();
    first.run(None, &mut NoObserver).unwrap();
    drop(first);
    // The same names and sample counts, another content (what `xqz label` writes): refused.
    let original = fs::read(shards.join("import-000000.npz")).unwrap();
    let mut relabelled = shard.clone();
    relabelled.root_value[0] = 0.25;
    fs::write(
        shards.join("import-000000.npz"),
        write_shard_to(std::io::Cursor::new(Vec::new()), &relabelled).unwrap().into_inner(),
    )
    .unwrap();
    let mut resumed = TrainingRun::resume(config(0).check().unwrap(), changed.clone()).unwrap();
    match resumed.run(Some(1), &mut NoObserver) {
        Err(e @ PipelineError::Pretrain { .. }) => {
            assert!(e.to_string().contains("changed since"), "{e}")
        }
        other => panic!("relabelled shards accepted: {other:?}"),
    }
    fs::write(shards.join("import-000000.npz"), original).unwrap();
    fs::copy(shards.join("import-000000.npz"), shards.join("import-000001.npz")).unwrap();
    let mut resumed = TrainingRun::resume(config(0).check().unwrap(), changed).unwrap();
    match resumed.run(Some(1), &mut NoObserver) {
        Err(e @ PipelineError::Pretrain { .. }) => {
            assert!(e.to_string().contains("changed since"), "{e}")
        }
        other => panic!("changed shards accepted: {other:?}"),
    }
    let _ = fs::remove_dir_all(&tmp);
}

#[test]
fn pretraining_refuses_missing_empty_and_other_game_shards() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pretrain-bad-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(tmp.join("empty")).unwrap();
    fs::create_dir_all(tmp.join("janggi")).unwrap();
    fs::create_dir_all(tmp.join("damaged")).unwrap();
    fs::write(tmp.join("damaged/a.npz"), b"not a zip archive").unwrap();
    fs::write(
        tmp.join("janggi/j.npz"),
        write_shard_to(
            std::io::Cursor::new(Vec::new()),
            &Shard::empty(xiangqi_search::GameKind::Janggi, 0),
        )
        .unwrap()
        .into_inner(),
    )
    .unwrap();
    for (dir, expected) in [
        ("missing", "no such directory or file"),
        ("empty", "holds no shard"),
        ("janggi", "this run plays xiangqi"),
        // Every shard unreadable: the error names each one and why.
        ("damaged", "no shard could be read: "),
        ("damaged", "a.npz is unreadable (not a complete npz archive"),
    ] {
        let mut c = tiny();
        c.run.pretrain_shards = tmp.join(dir).to_str().unwrap().to_string();
        // Refused when the run is created, before it writes a checkpoint.
        let paths = RunPaths::under(&tmp.join(format!("run-{dir}")));
        match TrainingRun::create(c.check().unwrap(), paths.clone()) {
            Err(e @ PipelineError::Pretrain { .. }) => {
                assert!(e.to_string().contains(expected), "{dir}: {e}")
            }
            Err(e) => panic!("{dir}: {e}"),
            Ok(_) => panic!("{dir}: accepted"),
        }
        assert!(list_checkpoints(&paths.checkpoints).unwrap_or_default().is_empty(), "{dir}");
    }
    let _ = fs::remove_dir_all(&tmp);
}

/// Pretraining shards of the game under another rule set than the run's are trained on, and a
/// warning names them and both rule sets; shards of the run's own rules raise none.
#[test]
fn pretraining_on_another_rule_sets_shards_warns() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pretrain-rules-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let simple = RunPaths::under(&tmp.join("simple"));
    let mut c = tiny();
    c.rules = Some("simple".into());
    let mut run = TrainingRun::create(c.check().unwrap(), simple.clone()).unwrap();
    run.run(Some(1), &mut NoObserver).unwrap();
    drop(run);
    let pretrain = |dir: &str, rules: &str| {
        let mut c = tiny();
        c.rules = Some(rules.into());
        c.run.pretrain_shards = simple.shards.to_str().unwrap().to_string();
        c.run.pretrain_steps = 2;
        let paths = RunPaths::under(&tmp.join(dir));
        let mut run = TrainingRun::create(c.check().unwrap(), paths).unwrap();
        let mut reports = Reports::default();
        run.run(Some(1), &mut reports).unwrap();
        assert!(run.trainer().step_count() > 2, "{dir}: no training after the pretraining");
        reports.1
    };
    let warnings = pretrain("asian", "asian");
    let named = |w: &String| {
        w.contains("the one shard holds xiangqi games")
            && w.contains("'simple'")
            && w.contains("'asian'")
            && !w.contains("  ")
    };
    assert!(warnings.iter().any(|w| named(w) && w.contains("shard-000001.npz")), "{warnings:?}");
    let warnings = pretrain("same", "simple");
    assert!(!warnings.iter().any(|w| w.contains("rules")), "{warnings:?}");
    let _ = fs::remove_dir_all(&tmp);
}

/// A run whose net takes the tactical feature planes plays, trains and resumes, its
/// checkpoints record encoding version 2, shards written by a run without them pretrain it
/// (the planes come from the stored board), and a janggi run takes its own.
#[test]
fn a_net_with_input_features_trains_on_old_and_new_shards() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-features-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    // Shards of a run without the features.
    let old = RunPaths::under(&tmp.join("old"));
    let mut run = TrainingRun::create(tiny().check().unwrap(), old.clone()).unwrap();
    run.run(Some(1), &mut NoObserver).unwrap();
    drop(run);
    let with = || {
        let mut c = tiny();
        c.network.input_features = true;
        c.run.pretrain_shards = old.shards.to_str().unwrap().to_string();
        c.run.pretrain_steps = 5;
        c
    };
    let paths = RunPaths::under(&tmp.join("features"));
    let mut run = TrainingRun::create(with().check().unwrap(), paths.clone()).unwrap();
    run.run(Some(1), &mut NoObserver).unwrap();
    assert!(run.trainer().step_count() > 5, "no self-play training after the pretraining");
    drop(run);
    let mut resumed = TrainingRun::resume(with().check().unwrap(), paths.clone()).unwrap();
    resumed.run(Some(1), &mut NoObserver).unwrap();
    assert_eq!(resumed.iteration(), 2);
    let ckpt = paths.checkpoints.join("ckpt-000002");
    let manifest = checkpoint::read_manifest(&ckpt, None).unwrap();
    assert_eq!((manifest.encoding_version, manifest.planes), (2, 23));
    assert!(manifest.network.input_features);
    // The old run's nets still load, as version 1.
    let manifest = checkpoint::read_manifest(&old.checkpoints.join("ckpt-000001"), None).unwrap();
    assert_eq!((manifest.encoding_version, manifest.planes), (1, 16));

    // Janggi has its own feature planes (janggi's movement): a janggi run with them plays and
    // trains, and records version 2.
    let mut janggi = tiny();
    janggi.game = xiangqi_search::GameKind::Janggi;
    janggi.network.input_features = true;
    let paths = RunPaths::under(&tmp.join("janggi"));
    let mut run = TrainingRun::create(janggi.check().unwrap(), paths.clone()).unwrap();
    run.run(Some(1), &mut NoObserver).unwrap();
    let manifest = checkpoint::read_manifest(&paths.checkpoints.join("ckpt-000001"), None).unwrap();
    assert_eq!((manifest.encoding_version, manifest.planes), (2, 23));
    let _ = fs::remove_dir_all(&tmp);
}

/// Records the metrics of every optimizer step.
#[derive(Default)]
struct Steps(Vec<xiangqi_nn::StepMetrics>);

impl Observer for Steps {
    fn step(&mut self, metrics: &xiangqi_nn::StepMetrics) {
        self.0.push(*metrics);
    }
}

/// A run whose net has the auxiliary heads trains them from its own games (their losses are
/// reported), records them in its checkpoints, resumes, and exports without them; a bad
/// `loop.short_term_plies` is refused by name.
#[test]
fn a_net_with_auxiliary_heads_trains_them_and_resumes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-aux-heads-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let with = || {
        let mut c = tiny();
        c.network.opponent_policy = true;
        c.network.moves_left = true;
        c.network.short_term_value = true;
        c.network.soft_policy = true;
        c.run.short_term_plies = 3.0;
        c
    };
    let paths = RunPaths::under(&tmp);
    let mut run = TrainingRun::create(with().check().unwrap(), paths.clone()).unwrap();
    let mut steps = Steps::default();
    run.run(Some(1), &mut steps).unwrap();
    assert!(!steps.0.is_empty());
    for m in &steps.0 {
        // Every sample has a short-term value, and most an opponent reply (a full search
        // follows half the plies): both terms are taught at every step.
        assert!(m.opponent_policy_loss > 0.0 && m.short_term_value_loss > 0.0, "{m:?}");
        assert!(m.moves_left_loss.is_finite() && m.moves_left_loss >= 0.0, "{m:?}");
        // The soft policy is taught where the policy is: on the full searches.
        assert_eq!(m.soft_policy_loss > 0.0, m.full_searches > 0, "{m:?}");
    }
    drop(run);
    let mut resumed = TrainingRun::resume(with().check().unwrap(), paths.clone()).unwrap();
    resumed.run(Some(1), &mut NoObserver).unwrap();
    assert_eq!(resumed.iteration(), 2);
    let manifest = checkpoint::read_manifest(&paths.checkpoints.join("ckpt-000002"), None).unwrap();
    assert!(manifest.network.opponent_policy && manifest.network.short_term_value);
    assert!(manifest.network.soft_policy);
    // Resuming with the heads switched off is a different network, refused by name.
    let mut without = with();
    without.network.moves_left = false;
    let Err(err) = TrainingRun::resume(without.check().unwrap(), paths.clone()) else {
        panic!("a resume without the moves-left head was taken");
    };
    assert!(err.to_string().contains("network.moves_left"), "{err}");

    let mut bad = with();
    bad.run.short_term_plies = 0.5;
    assert_eq!(bad.check().unwrap_err().key, "loop.short_term_plies");
    let _ = fs::remove_dir_all(&tmp);
}

/// `selfplay.recorded_value = "improved"` is the Gumbel search's improved-policy value: with
/// PUCT it is refused by name. The new keys are written only when set, so that the config a
/// run writes without them is the one earlier versions read; a material horizon beyond 1,000
/// plies is refused by name.
#[test]
fn the_improved_recorded_value_needs_gumbel_and_new_keys_are_written_only_when_set() {
    use xiangqi_search::{Algorithm, RecordedValue};
    let mut puct = tiny();
    puct.search.algorithm = Algorithm::Puct;
    puct.selfplay.recorded_value = RecordedValue::Improved;
    assert_eq!(puct.clone().check().unwrap_err().key, "selfplay.recorded_value");
    let mut gumbel = puct;
    gumbel.search.algorithm = Algorithm::Gumbel;
    gumbel.run.keep_every_minutes = 30.0;
    gumbel.run.material_plies = 12;
    let text = toml::to_string(&gumbel.clone().check().unwrap().to_unchecked()).unwrap();
    assert!(text.contains("recorded_value = \"improved\""), "{text}");
    assert!(text.contains("keep_every_minutes = 30"), "{text}");
    assert!(text.contains("material_plies = 12"), "{text}");
    let back: RunConfig = toml::from_str(&text).unwrap();
    assert_eq!(back.selfplay.recorded_value, RecordedValue::Improved);
    assert_eq!(back.run.keep_every_minutes, 30.0);
    assert_eq!(back.run.material_plies, 12);
    let text = toml::to_string(&tiny()).unwrap();
    assert!(!text.contains("recorded_value") && !text.contains("keep_every_minutes"), "{text}");
    assert!(!text.contains("material_plies"), "{text}");
    let mut far = tiny();
    far.run.material_plies = 1001;
    assert_eq!(far.check().unwrap_err().key, "loop.material_plies");
}

/// `schedule = "cosine_run"` anneals the learning rate over the run's budget: with a budget of
/// steps each step's rate is the cosine of the share spent before it, from the peak down to
/// the floor; a run with no budget keeps the peak.
#[test]
fn cosine_run_anneals_over_the_budget() {
    use xiangqi_nn::LrSchedule;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-cosine-run-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let config = |max_steps: u64| {
        let mut c = tiny();
        c.training.schedule = LrSchedule::CosineRun;
        c.training.learning_rate = 0.01;
        c.training.final_lr_fraction = 0.1;
        c.run.max_steps = max_steps;
        c
    };
    let budget = 12;
    let mut run =
        TrainingRun::create(config(budget).check().unwrap(), RunPaths::under(&tmp.join("a")))
            .unwrap();
    let mut steps = Steps::default();
    assert_eq!(run.run(None, &mut steps).unwrap(), StopReason::Budget);
    let rates: Vec<f64> = steps.0.iter().map(|m| m.learning_rate).collect();
    // The budget is looked at between iterations, so the last iteration may finish past it.
    assert!(rates.len() as u64 >= budget, "{rates:?}");
    for (k, &rate) in rates.iter().enumerate() {
        // Cosine of the share spent, k / budget (at most 1), from 0.01 down to the floor
        // 0.001, worked out by hand.
        let share = (k as f64 / budget as f64).min(1.0);
        let expected = 0.001 + 0.009 * 0.5 * (1.0 + (std::f64::consts::PI * share).cos());
        assert!((rate - expected).abs() < 1e-12, "step {k}: {rate} against {expected}");
    }
    let first = &rates[..budget as usize];
    assert!(first.windows(2).all(|w| w[1] < w[0]), "not falling: {rates:?}");
    // The budget's last step, at 11/12 of it: within 2% of the fall above the floor.
    assert!(rates[budget as usize - 1] < 0.001 + 0.02 * 0.009, "{rates:?}");
    drop(run);

    // No budget: the peak throughout.
    let mut run =
        TrainingRun::create(config(0).check().unwrap(), RunPaths::under(&tmp.join("b"))).unwrap();
    let mut steps = Steps::default();
    run.run(Some(2), &mut steps).unwrap();
    assert!(!steps.0.is_empty());
    assert!(steps.0.iter().all(|m| m.learning_rate == 0.01), "{:?}", steps.0);
    let _ = fs::remove_dir_all(&tmp);
}

/// `selfplay.fork_game_prob`: a run keeps its finished games from one iteration to the next,
/// so that with every game of an iteration starting at once (`games_in_flight` ≥ the
/// iteration's games) the second iteration's games fork from the first's; the key is written
/// only when set.
#[test]
fn forked_games_branch_off_the_previous_iterations_games() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-fork-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let mut config = tiny();
    config.selfplay.fork_game_prob = 1.0;
    let paths = RunPaths::under(&tmp.join("run"));
    let text = toml::to_string(&config).unwrap();
    assert!(text.contains("fork_game_prob = 1"), "{text}");
    let text = toml::to_string(&tiny()).unwrap();
    assert!(!text.contains("fork_game_prob"), "{text}");
    let mut run = TrainingRun::create(config.check().unwrap(), paths.clone()).unwrap();
    assert_eq!(run.run(Some(2), &mut NoObserver).unwrap(), StopReason::Iterations);
    let shards = list_shards(&paths.shards).unwrap();
    assert_eq!(shards.len(), 2);
    // The first sample of each game: at the opening's end (ply 2) in a game from the start,
    // after the fork's move in a forked one.
    let firsts = |path: &Path| -> Vec<(u16, bool)> {
        let shard = read_shard(path).unwrap();
        let mut first = BTreeMap::new();
        for i in 0..shard.len() {
            first.entry(shard.game_id[i]).or_insert((shard.ply[i], shard.full_search[i] != 0));
        }
        first.into_values().collect()
    };
    let (one, two) = (firsts(&shards[0]), firsts(&shards[1]));
    assert_eq!((one.len(), two.len()), (3, 3));
    assert!(one.iter().all(|&(ply, _)| ply == 2), "the first iteration cannot fork: {one:?}");
    assert!(two.iter().all(|&(ply, full)| ply > 2 && full), "every game forks: {two:?}");
    drop(run);
    let _ = fs::remove_dir_all(&tmp);
}

/// `loop.policy_surprise_weight`: the run's shards record every search's surprise; a weighted
/// run resumed from its checkpoint takes the same steps as an uninterrupted one (the window
/// rebuilt from the shards weighs them again) and ends on another net than the unweighted
/// run of the same seed; the key is checked and written only when set.
#[test]
fn policy_surprise_weighting_draws_by_surprise_and_resumes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-surprise-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let weighted = || {
        let mut c = tiny();
        c.run.policy_surprise_weight = 1.0;
        c
    };
    let text = toml::to_string(&weighted()).unwrap();
    assert!(text.contains("policy_surprise_weight = 1"), "{text}");
    assert!(!toml::to_string(&tiny()).unwrap().contains("policy_surprise_weight"));
    for bad in [1.5, -0.1, f64::NAN] {
        let mut c = tiny();
        c.run.policy_surprise_weight = bad;
        assert_eq!(c.check().unwrap_err().key, "loop.policy_surprise_weight", "{bad}");
    }

    let (a, b, c) = (
        RunPaths::under(&tmp.join("a")),
        RunPaths::under(&tmp.join("b")),
        RunPaths::under(&tmp.join("c")),
    );
    let mut straight = TrainingRun::create(weighted().check().unwrap(), a.clone()).unwrap();
    straight.run(Some(3), &mut NoObserver).unwrap();
    let mut first = TrainingRun::create(weighted().check().unwrap(), b.clone()).unwrap();
    first.run(Some(2), &mut NoObserver).unwrap();
    drop(first);
    let mut resumed = TrainingRun::resume(weighted().check().unwrap(), b.clone()).unwrap();
    resumed.run(Some(1), &mut NoObserver).unwrap();
    assert_eq!(resumed.trainer().step_count(), straight.trainer().step_count());
    let (va, vb) = (
        value_of_start(&a.checkpoints.join("ckpt-000003")),
        value_of_start(&b.checkpoints.join("ckpt-000003")),
    );
    assert!(va.iter().zip(&vb).all(|(x, y)| (x - y).abs() < 1e-6), "{vb:?} vs {va:?}");

    let mut plain = TrainingRun::create(tiny().check().unwrap(), c.clone()).unwrap();
    plain.run(Some(3), &mut NoObserver).unwrap();
    let vc = value_of_start(&c.checkpoints.join("ckpt-000003"));
    assert!(va.iter().zip(&vc).any(|(x, y)| (x - y).abs() > 1e-5), "weighting changed nothing");

    for path in list_shards(&a.shards).unwrap() {
        let shard = read_shard(&path).unwrap();
        assert!(
            shard.policy_surprise.iter().all(|&s| s >= 0.0),
            "{}: a self-play sample of unknown surprise",
            path.display()
        );
        assert!(shard.policy_surprise.iter().any(|&s| s > 0.0), "{}", path.display());
    }
    let _ = fs::remove_dir_all(&tmp);
}

/// The games of a shard by id: the plies of their samples, in order, and the game's length.
fn games_of(path: &Path) -> BTreeMap<u64, (Vec<u16>, u16)> {
    let shard = read_shard(path).unwrap();
    let mut games: BTreeMap<u64, (Vec<u16>, u16)> = BTreeMap::new();
    for i in 0..shard.len() {
        let g = games.entry(shard.game_id[i]).or_insert((Vec::new(), shard.game_plies[i]));
        g.0.push(shard.ply[i]);
    }
    games
}

/// `loop.continuous_selfplay`: every iteration's shard holds exactly its games, each whole
/// (every ply after the opening, once) though some were begun by the previous iteration's
/// net; no game is in two shards; a resume starts the next iteration's games afresh and goes
/// on; the key is written only when set.
#[test]
fn continuous_self_play_carries_games_into_the_next_iteration_and_resumes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-continuous-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let continuous = || {
        let mut c = tiny();
        c.run.continuous_selfplay = true;
        c
    };
    assert!(toml::to_string(&continuous()).unwrap().contains("continuous_selfplay = true"));
    assert!(!toml::to_string(&tiny()).unwrap().contains("continuous_selfplay"));
    let opening = tiny().selfplay.opening_random_plies as u16;
    let whole = |path: &Path| {
        let games = games_of(path);
        assert_eq!(games.len(), 3, "{}: {games:?}", path.display());
        for (id, (plies, length)) in &games {
            let expected: Vec<u16> = (opening..*length).collect();
            assert_eq!(plies, &expected, "{} game {id}", path.display());
        }
        games
    };

    let (a, b) = (RunPaths::under(&tmp.join("a")), RunPaths::under(&tmp.join("b")));
    let mut straight = TrainingRun::create(continuous().check().unwrap(), a.clone()).unwrap();
    straight.run(Some(4), &mut NoObserver).unwrap();
    let shards = list_shards(&a.shards).unwrap();
    assert_eq!(shards.len(), 4);
    let mut seen = BTreeSet::new();
    for path in &shards {
        for id in whole(path).into_keys() {
            assert!(seen.insert(id), "game {id} is in two shards");
        }
    }
    // Four games start at once (games_in_flight 4) and the first iteration takes three: the
    // fourth finishes in a later iteration.
    let first: Vec<u64> = games_of(&shards[0]).into_keys().collect();
    let carried: Vec<u64> = (0..4).filter(|id| !first.contains(id)).collect();
    assert_eq!(carried.len(), 1, "{first:?}");
    assert!(seen.contains(&carried[0]), "game {} was lost", carried[0]);

    let mut begun = TrainingRun::create(continuous().check().unwrap(), b.clone()).unwrap();
    begun.run(Some(2), &mut NoObserver).unwrap();
    drop(begun);
    let mut resumed = TrainingRun::resume(continuous().check().unwrap(), b.clone()).unwrap();
    assert_eq!(resumed.run(Some(2), &mut NoObserver).unwrap(), StopReason::Iterations);
    let shards_b = list_shards(&b.shards).unwrap();
    assert_eq!(shards_b.len(), 4);
    // The same games as the uninterrupted run up to the stop; afresh after it (numbered from
    // 0 again, with the resumed iteration's seed), and carried on from there.
    for i in 0..2 {
        assert_eq!(games_of(&shards[i]), games_of(&shards_b[i]), "shard {i}");
    }
    let after: Vec<u64> = whole(&shards_b[2]).into_keys().collect();
    assert!(after.iter().all(|&id| id < 4), "{after:?}");
    whole(&shards_b[3]);
    let _ = fs::remove_dir_all(&tmp);
}
