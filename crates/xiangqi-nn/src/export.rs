//! Exported nets: one directory that plays on another machine and loads in other frameworks.
//!
//! ```text
//! <export>/
//!   manifest.toml      a weights-only checkpoint manifest (network config, encoding version,
//!                      step and sample counters of the source, sizes and checksums of the files)
//!   model.bpk          the weights for xiangqi-zero (`xqz uci --net <export>`, `xqz arena`)
//!   model.safetensors  the same weights in PyTorch's layouts, float32, little-endian
//!   model.json         the architecture, the tensor names and shapes, the input planes, the
//!                      policy index → move table, and a test vector (the start position's
//!                      planes and the net's logits for them): what another framework needs to
//!                      run the net and check that it runs it right
//!   model.onnx         the same net as an ONNX graph, batch norm folded, dynamic batch
//!                      ([`crate::onnx`]): for ONNX Runtime and other runtimes
//! ```
//!
//! The directory is a weights-only checkpoint ([`crate::checkpoint::load_net`] and
//! [`crate::checkpoint::verify`] accept it, and the manifest checksums all three data files,
//! each checked whenever the net is loaded), and it is written like one: into a temporary
//! sibling, synced, then renamed into place.
//!
//! # Tensor names and layouts
//! Names follow the fields of [`Net`], dot-separated as PyTorch's `state_dict` does, so that a
//! PyTorch module with the same attribute names loads them with `load_state_dict`:
//!
//! | tensor | shape | meaning |
//! |---|---|---|
//! | `<conv>.conv.weight` | `[out, in, k, k]` | convolution without bias (`nn.Conv2d(bias=False)`, padding `k / 2`) |
//! | `<conv>.bn.weight`, `.bias`, `.running_mean`, `.running_var` | `[out]` | batch normalisation: γ, β, μ, σ² (`nn.BatchNorm2d`, ε in `model.json`) |
//! | `<linear>.weight` | `[out, in]` | `nn.Linear` layout (transposed from burn's `[in, out]`) |
//! | `<linear>.bias` | `[out]` | |
//!
//! where `<conv>` is `input`, `tower.<i>.conv1`, `tower.<i>.conv2`, `tower.<i>.pool.conv`,
//! `policy_conv` or `value_conv`, and `<linear>` is `tower.<i>.pool.fc`, `tower.<i>.se.fc1`,
//! `tower.<i>.se.fc2`, `policy_fc`, `value_fc1` or `value_fc2`. The forward pass is the one in
//! [`crate::model`]'s documentation; the flattening before `policy_fc` and `value_fc1` is
//! PyTorch's `x.flatten(1)` of `[B, C, 10, 9]` (channel-major).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::Path;

use burn::module::{Module, Param, RunningState};
use burn::nn::Linear;
use burn::nn::conv::Conv2d;
use burn::tensor::{Device, Tensor, TensorData};
use safetensors::{Dtype, SafeTensors};
use serde_json::json;
use xiangqi::env::{PLANE_FILES, PLANE_RANKS};
use xiangqi::{Game, janggi};
use xiangqi_search::{GameEnv, GameKind};

use crate::checkpoint::{self, CheckpointError, MANIFEST, MODEL_FILE, Manifest};
use crate::config::NetConfig;
use crate::infer::to_vec;
use crate::model::{ConvBn, Net};
use crate::onnx::ONNX_FILE;

/// The safetensors file of an export.
pub const SAFETENSORS_FILE: &str = "model.safetensors";
/// The JSON description of an export.
pub const DESCRIPTION_FILE: &str = "model.json";
/// Version of the export's JSON description and tensor naming.
pub const EXPORT_VERSION: u32 = 1;

/// What [`export_net`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    /// Every file of the export with its size in bytes, the manifest included.
    pub files: Vec<(String, u64)>,
    /// Number of tensors in the safetensors file.
    pub tensors: usize,
    /// Number of trainable parameters (batch-norm running statistics excluded).
    pub parameters: usize,
}

impl ExportSummary {
    /// Total size of the export in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|(_, size)| size).sum()
    }
}

/// One tensor of the net, as the visitor sees it.
enum Slot<'a> {
    Vector(&'a mut Param<Tensor<1>>),
    Running(&'a mut RunningState<Tensor<1>>),
    /// A linear layer's weight, burn's `[in, out]`, exported as `[out, in]`.
    LinearWeight(&'a mut Param<Tensor<2>>),
    ConvWeight(&'a mut Param<Tensor<4>>),
}

type Visitor<'v> = dyn FnMut(String, Slot<'_>) -> Result<(), String> + 'v;

fn visit_conv(prefix: &str, c: &mut Conv2d, f: &mut Visitor<'_>) -> Result<(), String> {
    f(format!("{prefix}.weight"), Slot::ConvWeight(&mut c.weight))?;
    if let Some(b) = &mut c.bias {
        f(format!("{prefix}.bias"), Slot::Vector(b))?;
    }
    Ok(())
}

fn visit_conv_bn(prefix: &str, cb: &mut ConvBn, f: &mut Visitor<'_>) -> Result<(), String> {
    visit_conv(&format!("{prefix}.conv"), &mut cb.conv, f)?;
    f(format!("{prefix}.bn.weight"), Slot::Vector(&mut cb.bn.gamma))?;
    f(format!("{prefix}.bn.bias"), Slot::Vector(&mut cb.bn.beta))?;
    f(format!("{prefix}.bn.running_mean"), Slot::Running(&mut cb.bn.running_mean))?;
    f(format!("{prefix}.bn.running_var"), Slot::Running(&mut cb.bn.running_var))
}

fn visit_linear(prefix: &str, l: &mut Linear, f: &mut Visitor<'_>) -> Result<(), String> {
    f(format!("{prefix}.weight"), Slot::LinearWeight(&mut l.weight))?;
    if let Some(b) = &mut l.bias {
        f(format!("{prefix}.bias"), Slot::Vector(b))?;
    }
    Ok(())
}

/// Calls `f` on every tensor of `net`, in a fixed order, with its export name.
fn visit(net: &mut Net, f: &mut Visitor<'_>) -> Result<(), String> {
    visit_conv_bn("input", &mut net.input, f)?;
    for (i, b) in net.tower.iter_mut().enumerate() {
        visit_conv_bn(&format!("tower.{i}.conv1"), &mut b.conv1, f)?;
        if let Some(p) = &mut b.pool {
            visit_conv_bn(&format!("tower.{i}.pool.conv"), &mut p.conv, f)?;
            visit_linear(&format!("tower.{i}.pool.fc"), &mut p.fc, f)?;
        }
        visit_conv_bn(&format!("tower.{i}.conv2"), &mut b.conv2, f)?;
        if let Some(se) = &mut b.se {
            visit_linear(&format!("tower.{i}.se.fc1"), &mut se.fc1, f)?;
            visit_linear(&format!("tower.{i}.se.fc2"), &mut se.fc2, f)?;
        }
    }
    visit_conv_bn("policy_conv", &mut net.policy_conv, f)?;
    visit_linear("policy_fc", &mut net.policy_fc, f)?;
    visit_conv_bn("value_conv", &mut net.value_conv, f)?;
    visit_linear("value_fc1", &mut net.value_fc1, f)?;
    visit_linear("value_fc2", &mut net.value_fc2, f)
}

/// A tensor in the export's layout: name, shape, row-major values.
pub(crate) struct HostTensor {
    pub(crate) name: String,
    pub(crate) shape: Vec<usize>,
    pub(crate) values: Vec<f32>,
    trainable: bool,
}

/// `[rows, cols]` row-major → `[cols, rows]` row-major.
fn transpose(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}

fn host_tensors(net: &Net) -> Result<Vec<HostTensor>, String> {
    let mut net = net.valid();
    let mut out = Vec::new();
    visit(&mut net, &mut |name, slot| {
        let read = |r: Result<Vec<f32>, crate::NnError>| r.map_err(|e| format!("{name}: {e}"));
        let (shape, values, trainable) = match slot {
            Slot::Vector(p) => (p.val().dims().to_vec(), read(to_vec(p.val()))?, true),
            Slot::Running(r) => (r.value().dims().to_vec(), read(to_vec(r.value()))?, false),
            Slot::ConvWeight(p) => (p.val().dims().to_vec(), read(to_vec(p.val()))?, true),
            Slot::LinearWeight(p) => {
                let [inputs, outputs] = p.val().dims();
                let values = read(to_vec(p.val()))?;
                (vec![outputs, inputs], transpose(&values, inputs, outputs), true)
            }
        };
        out.push(HostTensor { name, shape, values, trainable });
        Ok(())
    })?;
    Ok(out)
}

fn serialize_err(what: &'static str) -> impl FnOnce(String) -> CheckpointError {
    move |reason| CheckpointError::Serialize { what, reason }
}

fn safetensors_bytes(
    tensors: &[HostTensor],
    config: &NetConfig,
    encoding: &xiangqi_search::Encoding,
) -> Result<Vec<u8>, CheckpointError> {
    let bytes: Vec<Vec<u8>> =
        tensors.iter().map(|t| t.values.iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
    let views = tensors
        .iter()
        .zip(&bytes)
        .map(|(t, b)| {
            safetensors::tensor::TensorView::new(Dtype::F32, t.shape.clone(), b)
                .map(|v| (t.name.clone(), v))
                .map_err(|e| format!("{}: {e}", t.name))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(serialize_err("the safetensors file"))?;
    // One entry, so that the header (serialized from a hash map) is the same on every export.
    let info = json!({
        "format": "xiangqi-zero",
        "export_version": EXPORT_VERSION,
        "game": encoding.game.name(),
        "encoding_version": encoding.version,
        "network": config,
    });
    let metadata = HashMap::from([("xiangqi_zero".to_string(), info.to_string())]);
    safetensors::tensor::serialize(views, &Some(metadata)).map_err(|e| CheckpointError::Serialize {
        what: "the safetensors file",
        reason: e.to_string(),
    })
}

/// The start position's input planes and the net's logits for them: a test vector that lets
/// another implementation of the forward pass check itself. `legal_moves` lists the policy
/// indices of the position's legal moves (ascending), the mask `policy.meaning` asks for, so
/// that a reader without a move generator can find the top legal move.
fn test_vector<G: GameEnv>(net: &Net) -> Result<serde_json::Value, CheckpointError> {
    let rules = G::default_rules();
    let start = G::start_position(rules);
    let fen = G::position_fen(&start);
    let game = G::new_game(start, rules);
    let turn = game.turn();
    let mut legal: Vec<usize> =
        game.legal_moves_vec().into_iter().filter_map(|m| G::move_to_index(m, turn)).collect();
    legal.sort_unstable();
    let encoding = net.encoding;
    let mut planes = vec![0.0f32; encoding.input_size()];
    encoding.encode(&game, &mut planes);
    let device = net.input.conv.weight.val().device();
    let input = Tensor::<4>::from_data(
        TensorData::new(planes.clone(), [1, encoding.planes, PLANE_RANKS, PLANE_FILES]),
        &device,
    );
    let out = net.valid().forward(input);
    let read = |t: Tensor<2>| {
        to_vec(t).map_err(|e| CheckpointError::Serialize {
            what: "the test vector",
            reason: e.to_string(),
        })
    };
    Ok(json!({
        "fen": fen,
        "planes": planes,
        "policy_logits": read(out.policy)?,
        "wdl_logits": read(out.wdl)?,
        "legal_moves": legal,
    }))
}

/// What `model.json` says of the game: its name, encoding version, input planes, actions and
/// the test vector.
struct GameFacts {
    game: GameKind,
    encoding_version: u32,
    planes: usize,
    policy_size: usize,
    plane_names: Vec<String>,
    moves: Vec<String>,
    perspective: &'static str,
    notation: &'static str,
    test_vector: serde_json::Value,
}

fn game_facts<G: GameEnv>(
    net: &Net,
    perspective: &'static str,
    notation: &'static str,
) -> Result<GameFacts, CheckpointError> {
    Ok(GameFacts {
        game: G::KIND,
        encoding_version: net.encoding.version,
        planes: net.encoding.planes,
        policy_size: G::POLICY_SIZE,
        plane_names: {
            let mut names = G::plane_names();
            if net.encoding.features {
                names.extend(G::feature_plane_names());
            }
            names
        },
        moves: G::action_names(),
        perspective,
        notation,
        test_vector: test_vector::<G>(net)?,
    })
}

fn description(
    net: &Net,
    tensors: &[HostTensor],
    source: &Manifest,
) -> Result<Vec<u8>, CheckpointError> {
    let facts = match net.encoding.game {
        GameKind::Xiangqi => game_facts::<Game>(
            net,
            "the side to move plays up the board: for Black every square is flipped, rank r -> 9 - r, file unchanged; rank 0 is the mover's home rank, file 0 is file a",
            "UCI as Pikafish writes it (files a-i, ranks 0-9) from Red's side; for Black flip both ranks (r -> 9 - r) to get the real move",
        )?,
        GameKind::Janggi => game_facts::<janggi::Game>(
            net,
            "the side to move plays up the board: for Han every square is flipped, rank r -> 9 - r, file unchanged; rank 0 is the mover's home rank, file 0 is file a",
            "UCI with ranks 0-9 (files a-i) from Cho's side; for Han flip both ranks (r -> 9 - r) to get the real move; the last index, 'pass', is written as the general's own square twice (e1e1)",
        )?,
    };
    let epsilon = net.input.bn.epsilon;
    let shapes: BTreeMap<&str, &[usize]> =
        tensors.iter().map(|t| (t.name.as_str(), t.shape.as_slice())).collect();
    let order: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
    let doc = json!({
        "format": "xiangqi-zero network export",
        "export_version": EXPORT_VERSION,
        "game": facts.game.name(),
        "encoding_version": facts.encoding_version,
        "source": { "step": source.step, "samples": source.samples },
        "network": net.config(),
        "batch_norm_epsilon": epsilon,
        "dtype": "float32",
        "layouts": {
            "conv.weight": "[out, in, k, k], no bias, padding k / 2 (PyTorch nn.Conv2d)",
            "bn": "weight = gamma, bias = beta, running_mean, running_var (PyTorch nn.BatchNorm2d, eval mode)",
            "linear.weight": "[out, in] (PyTorch nn.Linear)",
            "flatten": "[B, C, 10, 9] -> [B, C * 90], channel-major (torch.flatten(x, 1))",
        },
        "forward": [
            "x = relu(bn(conv3x3(planes)))                       # input",
            "for each block: y = relu(conv1(x)); [pool: y += pool.fc(mean||max over board of relu(pool.conv(x)))];",
            "                z = conv2(y); [se: g,b = se.fc2(relu(se.fc1(mean of z))); z = sigmoid(g) * z + b]; x = relu(x + z)",
            format!("policy_logits = policy_fc(flatten(relu(policy_conv(x))))   # [B, {}]", facts.policy_size),
            "wdl_logits = value_fc2(relu(value_fc1(flatten(relu(value_conv(x))))))   # [B, 3]",
        ],
        "input": {
            "shape": ["batch", facts.planes, PLANE_RANKS, PLANE_FILES],
            "perspective": facts.perspective,
            "planes": facts.plane_names,
        },
        "policy": {
            "shape": ["batch", facts.policy_size],
            "meaning": "logits over moves in the mover's view; mask illegal moves, then softmax",
            "moves": facts.moves,
            "moves_notation": facts.notation,
        },
        "value": {
            "shape": ["batch", 3],
            "meaning": "logits of win, draw, loss for the side to move; value = P(win) - P(loss) in [-1, 1]",
        },
        "onnx": {
            "file": ONNX_FILE,
            "opset": crate::onnx::OPSET,
            "input": "planes",
            "outputs": ["policy", "wdl"],
            "batch_norm": "folded into the convolutions",
            "batch": "dynamic (dimension 'batch')",
        },
        "tensor_order": order,
        "tensors": shapes,
        "test_vector": facts.test_vector,
    });
    serde_json::to_vec_pretty(&doc)
        .map_err(|e| CheckpointError::Serialize { what: "model.json", reason: e.to_string() })
}

/// Whether `out` may be written by an export: it does not exist, is an empty directory, or is a
/// weights-only checkpoint holding no file its manifest does not list.
fn check_target(out: &Path) -> Result<(), CheckpointError> {
    let refuse = |reason: String| CheckpointError::Refused { path: out.to_path_buf(), reason };
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        return Err(refuse("is a file, not a directory".into()));
    }
    let io = |source| CheckpointError::Io { path: out.to_path_buf(), source };
    let mut names = Vec::new();
    for entry in fs::read_dir(out).map_err(io)? {
        names.push(entry.map_err(io)?.file_name().to_string_lossy().into_owned());
    }
    if names.is_empty() {
        return Ok(());
    }
    if !names.iter().any(|n| n == MANIFEST) {
        return Err(refuse(
            "is not empty and is not an earlier export; choose another directory".into(),
        ));
    }
    let manifest = checkpoint::read_manifest(out, None).map_err(|e| {
        refuse(format!(
            "holds a {MANIFEST} that is not an export's ({e}); choose another directory"
        ))
    })?;
    if manifest.has_optimizer() {
        return Err(refuse(
            "is a training checkpoint (it has an optimizer state); an export never replaces one"
                .into(),
        ));
    }
    let listed = |n: &String| n == MANIFEST || manifest.files.iter().any(|f| &f.name == n);
    if let Some(other) = names.iter().find(|n| !listed(n)) {
        return Err(refuse(format!(
            "holds '{other}', which is not part of an export; choose another directory"
        )));
    }
    Ok(())
}

/// Exports `net` into the directory `out`: weights for xiangqi-zero, safetensors and a JSON
/// description (see the [module documentation](self)). `source` is the manifest of the
/// checkpoint the net comes from; its step and sample counters are kept.
///
/// `out` must not exist, be an empty directory, or hold an earlier export and nothing else
/// (which is replaced); anything else, a training checkpoint included, is refused so that
/// nothing but an old export is ever overwritten.
///
/// # Errors
/// [`CheckpointError::Refused`] for a target that is not one of those,
/// [`CheckpointError::Io`] when `out` cannot be written, [`CheckpointError::Serialize`] when a
/// tensor cannot be read back or encoded.
pub fn export_net(
    net: &Net,
    source: &Manifest,
    out: &Path,
) -> Result<ExportSummary, CheckpointError> {
    check_target(out)?;
    // The auxiliary heads only shape the tower in training: an export is the net that plays.
    let net = &net.without_auxiliary_heads();
    let tensors = host_tensors(net).map_err(serialize_err("the weights"))?;
    let safetensors = safetensors_bytes(&tensors, net.config(), &net.encoding)?;
    let json = description(net, &tensors, source)?;
    let onnx = crate::onnx::model_bytes(net, &tensors).map_err(serialize_err("the ONNX graph"))?;
    let mut manifest = Manifest::new(net.config(), &net.encoding);
    manifest.step = source.step;
    manifest.samples = source.samples;
    manifest.counters = source.counters.clone();
    manifest.pretrained = source.pretrained.clone();
    manifest.search = source.search.clone();
    // An export of an export keeps its calibration: the same weights.
    manifest.strength = source.strength.clone();
    let model = checkpoint::model_bytes(net)?;
    checkpoint::write_atomically(
        out,
        manifest,
        &[
            (MODEL_FILE, &model),
            (SAFETENSORS_FILE, &safetensors),
            (DESCRIPTION_FILE, &json),
            (ONNX_FILE, &onnx),
        ],
    )?;
    let mut files = Vec::new();
    for name in [MANIFEST, MODEL_FILE, SAFETENSORS_FILE, DESCRIPTION_FILE, ONNX_FILE] {
        let path = out.join(name);
        let size =
            fs::metadata(&path).map_err(|source| CheckpointError::Io { path, source })?.len();
        files.push((name.to_string(), size));
    }
    let parameters = tensors.iter().filter(|t| t.trainable).map(|t| t.values.len()).sum::<usize>();
    Ok(ExportSummary { files, tensors: tensors.len(), parameters })
}

/// Loads the network of an export from its safetensors file (the manifest gives the network
/// config and the checksums): the way back from another framework, whose fine-tuned weights
/// can be written over `model.safetensors` in the same names and layouts (then the manifest's
/// checksum must be updated too, or [`CheckpointError::Corrupted`] refuses the file).
///
/// # Errors
/// Every refusal of [`checkpoint::read_manifest`]; [`CheckpointError::MissingFile`],
/// [`CheckpointError::WrongSize`] or [`CheckpointError::Corrupted`] for any file the manifest
/// lists;
/// [`CheckpointError::Load`] when it cannot be parsed, a tensor is missing, extra, not float32
/// or of the wrong shape.
pub fn load_safetensors(dir: &Path, device: &Device) -> Result<Net, CheckpointError> {
    let manifest = checkpoint::read_manifest(dir, None)?;
    checkpoint::check_other_files(dir, &manifest, &[SAFETENSORS_FILE])?;
    let bytes = checkpoint::read_checked(dir, &manifest, SAFETENSORS_FILE)?;
    let path = dir.join(SAFETENSORS_FILE);
    let load_err = |reason: String| CheckpointError::Load { path: path.clone(), reason };
    let file = SafeTensors::deserialize(&bytes).map_err(|e| load_err(e.to_string()))?;
    let mut net = Net::for_encoding(&manifest.network, manifest.encoding(), device);
    let mut seen = 0usize;
    visit(&mut net, &mut |name, slot| {
        let view = file.tensor(&name).map_err(|_| format!("tensor {name} is missing"))?;
        if view.dtype() != Dtype::F32 {
            return Err(format!("tensor {name} is {:?}, not F32", view.dtype()));
        }
        let values: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let shape = view.shape().to_vec();
        let expect = |dims: &[usize]| {
            if shape == dims {
                Ok(())
            } else {
                Err(format!("tensor {name} has shape {shape:?}, expected {dims:?}"))
            }
        };
        match slot {
            Slot::Vector(p) => {
                let dims = p.val().dims();
                expect(&dims)?;
                *p = Param::initialized(p.id, tensor(values, dims, device));
            }
            Slot::Running(r) => {
                let dims = r.value().dims();
                expect(&dims)?;
                *r = RunningState::new(tensor(values, dims, device));
            }
            Slot::ConvWeight(p) => {
                let dims = p.val().dims();
                expect(&dims)?;
                *p = Param::initialized(p.id, tensor(values, dims, device));
            }
            Slot::LinearWeight(p) => {
                let [inputs, outputs] = p.val().dims();
                expect(&[outputs, inputs])?;
                let values = transpose(&values, outputs, inputs);
                *p = Param::initialized(p.id, tensor(values, [inputs, outputs], device));
            }
        }
        seen += 1;
        Ok(())
    })
    .map_err(load_err)?;
    if file.len() != seen {
        let reason = format!("{} tensors, {seen} expected: unknown extra tensors", file.len());
        return Err(load_err(reason));
    }
    Ok(if device.is_autodiff() { net } else { net.valid() })
}

fn tensor<const D: usize>(values: Vec<f32>, dims: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(values, dims), device)
}
