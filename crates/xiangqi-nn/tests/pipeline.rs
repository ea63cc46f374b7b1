//! The training loop on a tiny network: shards and checkpoints appear, a resumed run takes the
//! same steps as an uninterrupted one, and a new run refuses to overwrite an old one.

use std::fs;
use std::path::Path;
use std::sync::Mutex;

use xiangqi::{Game, Position, RuleSet};
use xiangqi_nn::pipeline::{
    LoopConfig, NoObserver, PipelineError, RunConfig, RunPaths, StopReason, TrainingRun,
    list_checkpoints,
};
use xiangqi_nn::{InferenceNet, NetConfig, TrainConfig, checkpoint, cpu_device};
use xiangqi_search::{SearchConfig, SelfPlayConfig, list_shards};

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

    let mut straight = TrainingRun::create(tiny(), a.clone()).unwrap();
    assert_eq!(straight.run(Some(3), &mut NoObserver).unwrap(), StopReason::Iterations);

    let mut first = TrainingRun::create(tiny(), b.clone()).unwrap();
    first.run(Some(2), &mut NoObserver).unwrap();
    drop(first);
    let mut resumed = TrainingRun::resume(tiny(), b.clone()).unwrap();
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
    assert!(matches!(TrainingRun::create(tiny(), a.clone()), Err(PipelineError::RunExists(_))));
    let empty = RunPaths::under(&tmp.join("empty"));
    assert!(matches!(TrainingRun::resume(tiny(), empty), Err(PipelineError::NothingToResume(_))));
    let _ = fs::remove_dir_all(&tmp);
}

#[test]
fn a_damaged_newest_checkpoint_falls_back_to_the_previous_one() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = std::env::temp_dir().join(format!("xqz-pipeline-damaged-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let paths = RunPaths::under(&tmp);
    let mut run = TrainingRun::create(tiny(), paths.clone()).unwrap();
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
    let resumed = TrainingRun::resume(tiny(), paths).unwrap();
    assert_eq!(resumed.iteration(), 1);
    let _ = fs::remove_dir_all(&tmp);
}
