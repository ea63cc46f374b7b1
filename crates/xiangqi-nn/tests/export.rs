//! Exported nets: the export reloads to the same policy and value, its safetensors follow the
//! documented names and PyTorch layouts, and bad targets or damaged files are refused.

use std::fs;
use std::path::PathBuf;

use burn::module::{Module, Param, RunningState};
use burn::tensor::{Tensor, TensorData};
use safetensors::{Dtype, SafeTensors};
use xiangqi::env::{self, INPUT_SIZE, PLANE_FILES, PLANE_RANKS, PLANES, POLICY_SIZE};
use xiangqi::{Color, Game, Position, RuleSet};
use xiangqi_nn::checkpoint::{self, CheckpointError};
use xiangqi_nn::export::{self, DESCRIPTION_FILE, SAFETENSORS_FILE};
use xiangqi_nn::{GlobalKind, Net, NetConfig, cpu_device};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xiangqi-nn-export-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// Values in ±0.5 from a fixed linear congruential sequence.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
}

/// A net whose batch normalisations are not the identity (as after training), so that an
/// export that dropped or mixed up γ, β, μ or σ² would change the outputs.
fn trained_looking_net(config: &NetConfig, seed: u64) -> Net {
    trained_looking_net_of::<xiangqi::Game>(config, seed)
}

/// [`trained_looking_net`] for game `G`.
fn trained_looking_net_of<G: xiangqi_search::GameEnv>(config: &NetConfig, seed: u64) -> Net {
    let device = cpu_device();
    let mut net = Net::seeded::<G>(config, &device, seed);
    let mut k = seed;
    let mut bn = |b: &mut burn::nn::BatchNorm| {
        let n = b.gamma.val().dims()[0];
        k += 4;
        let t = |v: Vec<f32>| Tensor::<1>::from_data(TensorData::new(v, [n]), &device);
        let shift = |v: Vec<f32>, by: f32| v.into_iter().map(|x| x + by).collect::<Vec<_>>();
        b.gamma = Param::initialized(b.gamma.id, t(shift(values(n, k), 1.0)));
        // β > 0 keeps most channels alive through the ReLUs.
        b.beta = Param::initialized(b.beta.id, t(shift(values(n, k + 1), 0.6)));
        b.running_mean = RunningState::new(t(values(n, k + 2)));
        b.running_var = RunningState::new(t(shift(values(n, k + 3), 1.0)));
    };
    bn(&mut net.input.bn);
    for b in &mut net.tower {
        bn(&mut b.conv1.bn);
        bn(&mut b.conv2.bn);
        if let Some(p) = &mut b.pool {
            bn(&mut p.conv.bn);
        }
    }
    bn(&mut net.policy_conv.bn);
    bn(&mut net.value_conv.bn);
    net
}

/// Planes of three positions: the start, a midgame with a capture behind it, a repetition.
fn inputs() -> Tensor<4> {
    let mut game = Game::new(Position::start(), RuleSet::Asian);
    let mut planes = Vec::new();
    let mut buf = vec![0.0; INPUT_SIZE];
    env::encode_planes(&game, &mut buf);
    planes.extend_from_slice(&buf);
    for m in ["h2e2", "h9g7", "e2e6", "b9c7"] {
        let mv = game.position().parse_uci(m).unwrap();
        game.play(mv).unwrap();
    }
    env::encode_planes(&game, &mut buf);
    planes.extend_from_slice(&buf);
    for m in ["h0g2", "i9h9", "g2h0", "h9i9"] {
        let mv = game.position().parse_uci(m).unwrap();
        game.play(mv).unwrap();
    }
    env::encode_planes(&game, &mut buf);
    assert_eq!(buf[14 * 90], 1.0, "the third position is a repetition");
    planes.extend_from_slice(&buf);
    Tensor::from_data(TensorData::new(planes, [3, PLANES, PLANE_RANKS, PLANE_FILES]), &cpu_device())
}

fn outputs(net: &Net) -> (Vec<f32>, Vec<f32>) {
    let out = net.forward(inputs());
    (out.policy.try_into_vec_as::<f32>().unwrap(), out.wdl.try_into_vec_as::<f32>().unwrap())
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn configs() -> Vec<NetConfig> {
    let base = NetConfig { blocks: 2, filters: 8, value_hidden: 16, ..NetConfig::default() };
    vec![
        base.clone(),
        NetConfig {
            global: GlobalKind::SqueezeExcitation,
            global_every: 1,
            global_channels: 4,
            ..base.clone()
        },
        NetConfig {
            global: GlobalKind::GlobalPooling,
            global_every: 2,
            global_channels: 4,
            ..base
        },
    ]
}

#[test]
fn an_export_reloads_to_the_same_policy_and_value_both_ways() {
    let device = cpu_device();
    for (i, config) in configs().into_iter().enumerate() {
        let net = trained_looking_net(&config, 10 + i as u64);
        let source = temp_dir(&format!("src-{i}"));
        checkpoint::save_net(&net, &source).unwrap();
        let (from_checkpoint, manifest) = checkpoint::load_net(&source, None, &device).unwrap();
        let out = temp_dir(&format!("out-{i}"));
        let summary = export::export_net(&from_checkpoint, &manifest, &out).unwrap();
        // manifest.toml, model.bpk, model.safetensors, model.json, model.onnx.
        assert_eq!(summary.files.len(), 5);

        let (policy, wdl) = outputs(&from_checkpoint);
        // The export is a weights-only checkpoint: it verifies, and plays as the source does.
        checkpoint::verify(&out, Some(&config)).unwrap();
        let (reloaded, _) = checkpoint::load_net(&out, Some(&config), &device).unwrap();
        let (p, w) = outputs(&reloaded);
        assert_eq!(max_diff(&p, &policy), 0.0, "{config:?}");
        assert_eq!(max_diff(&w, &wdl), 0.0, "{config:?}");
        // And back from the safetensors file, through the PyTorch layouts.
        let back = export::load_safetensors(&out, &device).unwrap();
        let (p, w) = outputs(&back);
        assert!(max_diff(&p, &policy) < 1e-6, "{config:?}");
        assert!(max_diff(&w, &wdl) < 1e-6, "{config:?}");
        // The outputs are not trivially equal for every position.
        assert!(max_diff(&policy[..POLICY_SIZE], &policy[POLICY_SIZE..2 * POLICY_SIZE]) > 1e-4);
        let _ = fs::remove_dir_all(&source);
        let _ = fs::remove_dir_all(&out);
    }
}

#[test]
fn safetensors_follow_the_documented_names_and_pytorch_layouts() {
    let config = configs().remove(2); // global pooling: every kind of tensor
    let net = trained_looking_net(&config, 3).valid();
    let out = temp_dir("layout");
    let manifest = {
        let src = temp_dir("layout-src");
        checkpoint::save_net(&net, &src).unwrap();
        checkpoint::verify(&src, None).unwrap()
    };
    let summary = export::export_net(&net, &manifest, &out).unwrap();
    let bytes = fs::read(out.join(SAFETENSORS_FILE)).unwrap();
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let f = |name: &str| {
        let v = file.tensor(name).unwrap_or_else(|_| panic!("{name} is missing"));
        assert_eq!(v.dtype(), Dtype::F32);
        let data: Vec<f32> = v
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        (v.shape().to_vec(), data)
    };
    // Convolutions [out, in, k, k]; the input layer reads 16 planes.
    assert_eq!(f("input.conv.weight").0, [8, PLANES, 3, 3]);
    assert_eq!(f("policy_conv.conv.weight").0, [2, 8, 1, 1]);
    assert_eq!(f("tower.1.pool.conv.conv.weight").0, [4, 8, 3, 3]);
    // Linear layers [out, in], the transpose of burn's [in, out].
    let (shape, exported) = f("policy_fc.weight");
    assert_eq!(shape, [POLICY_SIZE, 2 * 90]);
    let burn_weight = net.policy_fc.weight.val().try_into_vec_as::<f32>().unwrap();
    for (j, k) in [(0, 0), (5, 17), (POLICY_SIZE - 1, 179), (1000, 90)] {
        assert_eq!(exported[j * 180 + k], burn_weight[k * POLICY_SIZE + j], "({j}, {k})");
    }
    assert_eq!(f("value_fc2.weight").0, [3, 16]);
    assert_eq!(f("tower.1.pool.fc.weight").0, [8, 2 * 4]);
    // Batch normalisation as PyTorch names it; γ is the `weight`.
    let gamma = net.input.bn.gamma.val().try_into_vec_as::<f32>().unwrap();
    assert_eq!(f("input.bn.weight").1, gamma);
    let var = net.value_conv.bn.running_var.value().try_into_vec_as::<f32>().unwrap();
    assert_eq!(f("value_conv.bn.running_var").1, var);
    assert!(file.tensor("tower.0.pool.conv.conv.weight").is_err(), "block 0 has no pooling");
    assert_eq!(file.len(), summary.tensors);

    // The JSON description lists the same tensors and the action table.
    let json: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join(DESCRIPTION_FILE)).unwrap()).unwrap();
    assert_eq!(json["encoding_version"], env::ENCODING_VERSION);
    assert_eq!(json["network"]["blocks"], 2);
    assert_eq!(json["tensor_order"].as_array().unwrap().len(), summary.tensors);
    assert_eq!(json["tensors"]["policy_fc.weight"], serde_json::json!([POLICY_SIZE, 180]));
    let moves = json["policy"]["moves"].as_array().unwrap();
    assert_eq!(moves.len(), POLICY_SIZE);
    let start = Position::start();
    for m in ["h2e2", "b0c2", "a3a4", "f0e1", "c0e2"] {
        let i = env::move_to_index(start.parse_uci(m).unwrap(), Color::Red).unwrap();
        assert_eq!(moves[i], m);
    }
    assert_eq!(json["input"]["planes"].as_array().unwrap().len(), PLANES);
    // The test vector: the start position's planes and this net's logits for them.
    let tv = &json["test_vector"];
    let floats = |v: &serde_json::Value| -> Vec<f32> {
        v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
    };
    let (policy, wdl) = outputs(&net);
    assert_eq!(floats(&tv["wdl_logits"]), wdl[..3]);
    assert_eq!(floats(&tv["policy_logits"]), policy[..POLICY_SIZE]);
    assert_eq!(floats(&tv["planes"]).len(), INPUT_SIZE);
    assert_eq!(tv["planes"][4], 1.0, "the mover's general on e0");
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn exports_never_overwrite_other_directories_and_damage_is_refused() {
    let device = cpu_device();
    let config = configs().remove(0);
    let net = Net::seeded::<xiangqi::Game>(&config, &device, 1).valid();
    let src = temp_dir("refuse-src");
    checkpoint::save_net(&net, &src).unwrap();
    let manifest = checkpoint::verify(&src, None).unwrap();

    // A directory with other files in it is left alone.
    let other = temp_dir("refuse-other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("notes.txt"), "keep me").unwrap();
    let e = export::export_net(&net, &manifest, &other).unwrap_err();
    assert!(matches!(e, CheckpointError::Refused { .. }), "{e}");
    assert!(e.to_string().contains("not an earlier export"), "{e}");
    assert_eq!(fs::read_to_string(other.join("notes.txt")).unwrap(), "keep me");
    // Nor is one that merely has a file called manifest.toml among others.
    fs::write(other.join("manifest.toml"), "name = \"my project\"").unwrap();
    let e = export::export_net(&net, &manifest, &other).unwrap_err();
    assert!(e.to_string().contains("not an export's"), "{e}");
    assert_eq!(fs::read_to_string(other.join("notes.txt")).unwrap(), "keep me");
    // A training checkpoint (with its optimizer state) is never replaced.
    let training = temp_dir("refuse-training");
    let trainer = xiangqi_nn::Trainer::new::<xiangqi::Game>(
        &config,
        &xiangqi_nn::TrainConfig::default(),
        &device,
        1,
    )
    .unwrap();
    checkpoint::save_trainer(&trainer, &training, &Default::default()).unwrap();
    let e = export::export_net(&net, &manifest, &training).unwrap_err();
    assert!(e.to_string().contains("training checkpoint"), "{e}");
    assert!(checkpoint::load_trainer(&training, None, None, &device).is_ok());
    // A file is not a directory.
    let e = export::export_net(&net, &manifest, &other.join("notes.txt")).unwrap_err();
    assert!(e.to_string().contains("is a file"), "{e}");

    // An earlier export is replaced, byte for byte the same safetensors; an empty directory is
    // used; an export with an extra file in it is not replaced.
    let out = temp_dir("refuse-out");
    fs::create_dir_all(&out).unwrap();
    export::export_net(&net, &manifest, &out).unwrap();
    let first = fs::read(out.join(SAFETENSORS_FILE)).unwrap();
    export::export_net(&net, &manifest, &out).unwrap();
    assert_eq!(fs::read(out.join(SAFETENSORS_FILE)).unwrap(), first);
    fs::write(out.join("README"), "mine").unwrap();
    let e = export::export_net(&net, &manifest, &out).unwrap_err();
    assert!(e.to_string().contains("'README'"), "{e}");
    fs::remove_file(out.join("README")).unwrap();

    // The ONNX graph, which xqz never reads, may be left out of a copy of an export (the
    // recorded nets under experiments/ are kept without it); a damaged one is still refused.
    let onnx = out.join(xiangqi_nn::onnx::ONNX_FILE);
    let mut bytes = fs::read(&onnx).unwrap();
    bytes[10] ^= 0x40;
    fs::write(&onnx, &bytes).unwrap();
    let e = export::load_safetensors(&out, &device).unwrap_err();
    assert!(matches!(e, CheckpointError::Corrupted { .. }), "{e}");
    fs::remove_file(&onnx).unwrap();
    export::load_safetensors(&out, &device).unwrap();

    // One flipped byte in the safetensors file is caught by the manifest's checksum.
    let path = out.join(SAFETENSORS_FILE);
    let mut bytes = fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 5] ^= 0x40;
    fs::write(&path, &bytes).unwrap();
    let e = export::load_safetensors(&out, &device).unwrap_err();
    assert!(matches!(e, CheckpointError::Corrupted { .. }), "{e}");
    assert!(checkpoint::verify(&out, None).is_err());
    for d in [src, other, out, training] {
        let _ = fs::remove_dir_all(d);
    }
}

/// The Python that runs `tools/check_onnx.py` (`XQZ_PYTHON`, default `python3`), if it has numpy
/// and onnxruntime; `None` (the test then says it skipped) unless `XQZ_REQUIRE_ONNX` is set,
/// as `.ci/run` sets it.
fn onnx_python() -> Option<String> {
    let python = std::env::var("XQZ_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = std::process::Command::new(&python)
        .args(["-c", "import numpy, onnxruntime"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    assert!(
        std::env::var_os("XQZ_REQUIRE_ONNX").is_none(),
        "XQZ_REQUIRE_ONNX is set but {python} cannot import numpy and onnxruntime"
    );
    eprintln!("skipped: {python} cannot import numpy and onnxruntime (set XQZ_PYTHON)");
    None
}

/// Planes of positions of game `G`: the start and the positions along a line of its first
/// legal moves, then sparse random planes (any 0/1 pattern is a valid input of the graph).
fn onnx_cases<G: xiangqi_search::GameEnv>(net: &Net) -> (Vec<f32>, usize) {
    let size = net.encoding.input_size();
    let mut planes = Vec::new();
    let mut game = G::new_game(G::start_position(G::default_rules()), G::default_rules());
    let mut buf = vec![0.0; size];
    for ply in 0..6 {
        net.encoding.encode(&game, &mut buf);
        planes.extend_from_slice(&buf);
        let moves = game.legal_moves_vec();
        game.play(moves[(ply * 7) % moves.len()]);
    }
    let sparse = values(10 * size, 99);
    planes.extend(sparse.iter().map(|&v| if v > 0.44 { 1.0 } else { 0.0 }));
    (planes, 16)
}

#[test]
fn the_onnx_export_runs_in_onnx_runtime_as_the_evaluator_does() {
    let Some(python) = onnx_python() else { return };
    let device = cpu_device();
    let tool = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/check_onnx.py");
    for (game, janggi) in [("xiangqi", false), ("janggi", true)] {
        let mut configs = configs();
        if !janggi {
            // The tactical feature planes (xiangqi only): 23 input planes.
            configs.push(NetConfig { input_features: true, ..configs[0].clone() });
        }
        for (i, config) in configs.into_iter().enumerate() {
            let net = if janggi {
                trained_looking_net_of::<xiangqi::janggi::Game>(&config, 40 + i as u64)
            } else {
                trained_looking_net_of::<xiangqi::Game>(&config, 40 + i as u64)
            };
            let out = temp_dir(&format!("onnx-{game}-{i}"));
            let manifest = checkpoint::Manifest::new(&config, &net.encoding);
            export::export_net(&net, &manifest, &out).unwrap();
            // What xqz's own evaluator (the folded net on the CPU kernels) computes.
            let (planes, n) = if janggi {
                onnx_cases::<xiangqi::janggi::Game>(&net)
            } else {
                onnx_cases::<xiangqi::Game>(&net)
            };
            let folded = xiangqi_nn::InferenceNet::from_net(&net, &device).unwrap();
            let logits = folded.predict(planes.clone()).unwrap();
            assert_eq!(logits.batch, n);
            let cases = serde_json::json!({
                "shape": [n, net.encoding.planes, PLANE_RANKS, PLANE_FILES],
                "planes": planes,
                "policy": logits.policy,
                "wdl": logits.wdl,
            });
            let cases_path = out.join("cases.json");
            fs::write(&cases_path, serde_json::to_vec(&cases).unwrap()).unwrap();
            let o = std::process::Command::new(&python)
                .arg(&tool)
                .arg(&out)
                .arg(&cases_path)
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(o.status.success(), "{game} {config:?}: {text}");
            assert!(text.contains("16 positions in one batch") && text.ends_with("ok\n"), "{text}");
            let _ = fs::remove_dir_all(&out);
        }
    }
}
