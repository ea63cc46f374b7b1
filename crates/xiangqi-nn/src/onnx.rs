//! `model.onnx`: the network as an ONNX graph, for ONNX Runtime and other runtimes (a browser,
//! a game server, another engine).
//!
//! The graph is the forward pass of [`crate::model`] with every batch normalisation folded into
//! the convolution before it (`W' = W · γ / √(σ² + ε)`, `b' = β − μ · γ / √(σ² + ε)`, per output
//! channel), in ONNX operator set 17:
//!
//! | | name | type | shape |
//! |---|---|---|---|
//! | input | `planes` | float32 | `[batch, planes, 10, 9]` (`model.json`'s `input`) |
//! | output | `policy` | float32 | `[batch, policy size]`, logits (`model.json`'s `policy`) |
//! | output | `wdl` | float32 | `[batch, 3]`, win/draw/loss logits for the side to move |
//!
//! `batch` is a dynamic dimension. Global pooling and squeeze-excitation blocks become
//! `ReduceMean`/`ReduceMax`, `Concat`, `Gemm`, `Slice`, `Sigmoid` and broadcasting `Mul`/`Add`.
//!
//! The file is written with a small protocol-buffer encoder of this module (the ONNX messages
//! it needs: `ModelProto`, `GraphProto`, `NodeProto`, `AttributeProto`, `TensorProto`,
//! `ValueInfoProto`; field numbers from `onnx/onnx.proto` of the ONNX project), so that the
//! build needs no ONNX or protobuf crate.

use std::collections::HashMap;

use xiangqi::env::{PLANE_FILES, PLANE_RANKS};

use crate::export::HostTensor;
use crate::model::Net;

/// The export's ONNX file.
pub const ONNX_FILE: &str = "model.onnx";

/// The ONNX operator set the graph uses.
pub const OPSET: i64 = 17;

/// ONNX's IR version of operator set 17 (ONNX 1.12).
const IR_VERSION: i64 = 8;

/// `TensorProto.DataType`.
const FLOAT: i64 = 1;
const INT64: i64 = 7;

/// `AttributeProto.AttributeType`.
const ATTR_INT: i64 = 2;
const ATTR_INTS: i64 = 7;

/// Protocol-buffer encoding: varints, keys and length-delimited fields (wire types 0, 2, 5).
mod pb {
    pub fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
        varint(out, u64::from(field << 3 | wire));
    }

    /// An `int64` or enum field (negative values as ten-byte two's complement, as protobuf
    /// does).
    pub fn int(out: &mut Vec<u8>, field: u32, v: i64) {
        key(out, field, 0);
        varint(out, v as u64);
    }

    /// A `bytes`, `string` or embedded message field.
    pub fn bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
        key(out, field, 2);
        varint(out, data.len() as u64);
        out.extend_from_slice(data);
    }
}

/// The graph under construction.
struct Graph<'t> {
    tensors: HashMap<&'t str, &'t HostTensor>,
    nodes: Vec<Vec<u8>>,
    initializers: Vec<Vec<u8>>,
    epsilon: f32,
    /// Names made so far, for fresh ones.
    counter: usize,
}

/// One attribute of a node.
enum Attr {
    Int(i64),
    Ints(Vec<i64>),
}

impl<'t> Graph<'t> {
    fn tensor(&self, name: &str) -> Result<&'t HostTensor, String> {
        self.tensors.get(name).copied().ok_or_else(|| format!("the net has no tensor {name}"))
    }

    fn fresh(&mut self, stem: &str) -> String {
        self.counter += 1;
        format!("{stem}_{}", self.counter)
    }

    /// A float32 initializer (`TensorProto` with raw little-endian data).
    fn init_f32(&mut self, name: &str, dims: &[usize], values: &[f32]) -> String {
        let mut t = Vec::new();
        for &d in dims {
            pb::int(&mut t, 1, d as i64);
        }
        pb::int(&mut t, 2, FLOAT);
        pb::bytes(&mut t, 8, name.as_bytes());
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        pb::bytes(&mut t, 9, &raw);
        self.initializers.push(t);
        name.to_string()
    }

    /// An int64 vector initializer (shapes, slice bounds).
    fn init_i64(&mut self, stem: &str, values: &[i64]) -> String {
        let name = self.fresh(stem);
        let mut t = Vec::new();
        pb::int(&mut t, 1, values.len() as i64);
        pb::int(&mut t, 2, INT64);
        pb::bytes(&mut t, 8, name.as_bytes());
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        pb::bytes(&mut t, 9, &raw);
        self.initializers.push(t);
        name
    }

    /// Adds node `op` and returns its (first) output.
    fn node(&mut self, op: &str, inputs: &[&str], attrs: &[(&str, Attr)]) -> String {
        let out = self.fresh(&op.to_ascii_lowercase());
        self.node_into(op, inputs, &out, attrs);
        out
    }

    /// Adds node `op` writing `out`.
    fn node_into(&mut self, op: &str, inputs: &[&str], out: &str, attrs: &[(&str, Attr)]) {
        let mut n = Vec::new();
        for i in inputs {
            pb::bytes(&mut n, 1, i.as_bytes());
        }
        pb::bytes(&mut n, 2, out.as_bytes());
        pb::bytes(&mut n, 3, out.as_bytes());
        pb::bytes(&mut n, 4, op.as_bytes());
        for (name, value) in attrs {
            let mut a = Vec::new();
            pb::bytes(&mut a, 1, name.as_bytes());
            match value {
                Attr::Int(v) => {
                    pb::int(&mut a, 3, *v);
                    pb::int(&mut a, 20, ATTR_INT);
                }
                Attr::Ints(vs) => {
                    for &v in vs {
                        pb::int(&mut a, 8, v);
                    }
                    pb::int(&mut a, 20, ATTR_INTS);
                }
            }
            pb::bytes(&mut n, 5, &a);
        }
        self.nodes.push(n);
    }

    /// A convolution with its batch normalisation folded in.
    fn conv_bn(&mut self, prefix: &str, x: &str) -> Result<String, String> {
        let w = self.tensor(&format!("{prefix}.conv.weight"))?;
        let get = |s: &str| self.tensor(&format!("{prefix}.bn.{s}"));
        let (gamma, beta, mean, var) =
            (get("weight")?, get("bias")?, get("running_mean")?, get("running_var")?);
        let [out, _, k, _] = <[usize; 4]>::try_from(w.shape.as_slice())
            .map_err(|_| format!("{prefix}.conv.weight is not 4-dimensional"))?;
        let per_out = w.values.len() / out;
        let mut folded = w.values.clone();
        let mut bias = vec![0.0f32; out];
        for o in 0..out {
            let s = gamma.values[o] / (var.values[o] + self.epsilon).sqrt();
            for v in &mut folded[o * per_out..(o + 1) * per_out] {
                *v *= s;
            }
            bias[o] = beta.values[o] - mean.values[o] * s;
        }
        let wn = self.init_f32(&format!("{prefix}.folded_weight"), &w.shape, &folded);
        let bn = self.init_f32(&format!("{prefix}.folded_bias"), &[out], &bias);
        let pad = (k / 2) as i64;
        let attrs = [
            ("kernel_shape", Attr::Ints(vec![k as i64, k as i64])),
            ("pads", Attr::Ints(vec![pad; 4])),
        ];
        Ok(self.node("Conv", &[x, &wn, &bn], &attrs))
    }

    /// `y = x · Wᵀ + b` of linear layer `prefix` (`[B, in]` → `[B, out]`).
    fn linear(&mut self, prefix: &str, x: &str) -> Result<String, String> {
        let w = self.tensor(&format!("{prefix}.weight"))?;
        let b = self.tensor(&format!("{prefix}.bias"))?;
        let wn = self.init_f32(&format!("{prefix}.weight"), &w.shape, &w.values);
        let bn = self.init_f32(&format!("{prefix}.bias"), &b.shape, &b.values);
        Ok(self.node("Gemm", &[x, &wn, &bn], &[("transB", Attr::Int(1))]))
    }

    fn relu(&mut self, x: &str) -> String {
        self.node("Relu", &[x], &[])
    }

    /// `[B, C]` → `[B, C, 1, 1]`, to broadcast over the board.
    fn per_channel(&mut self, x: &str, channels: usize) -> String {
        let shape = self.init_i64("shape", &[0, channels as i64, 1, 1]);
        self.node("Reshape", &[x, &shape], &[])
    }

    /// The board mean (or max) of each channel: `[B, C, 10, 9]` → `[B, C]`.
    fn reduce(&mut self, op: &str, x: &str) -> String {
        self.node(op, &[x], &[("axes", Attr::Ints(vec![2, 3])), ("keepdims", Attr::Int(0))])
    }

    /// Channels `from..to` of `[B, C]`.
    fn slice(&mut self, x: &str, from: usize, to: usize) -> String {
        let starts = self.init_i64("starts", &[from as i64]);
        let ends = self.init_i64("ends", &[to as i64]);
        let axes = self.init_i64("axes", &[1]);
        self.node("Slice", &[x, &starts, &ends, &axes], &[])
    }
}

/// A graph input or output: a float32 tensor with a dynamic batch dimension.
fn value_info(name: &str, dims: &[usize]) -> Vec<u8> {
    let mut shape = Vec::new();
    let mut batch = Vec::new();
    pb::bytes(&mut batch, 2, b"batch");
    pb::bytes(&mut shape, 1, &batch);
    for &d in dims {
        let mut dim = Vec::new();
        pb::int(&mut dim, 1, d as i64);
        pb::bytes(&mut shape, 1, &dim);
    }
    let mut tensor = Vec::new();
    pb::int(&mut tensor, 1, FLOAT);
    pb::bytes(&mut tensor, 2, &shape);
    let mut ty = Vec::new();
    pb::bytes(&mut ty, 1, &tensor);
    let mut v = Vec::new();
    pb::bytes(&mut v, 1, name.as_bytes());
    pb::bytes(&mut v, 2, &ty);
    v
}

/// The serialized `ModelProto` of `net`, from its tensors in the export's names and layouts.
///
/// # Errors
/// A tensor missing or of the wrong rank (a net this module does not know).
pub(crate) fn model_bytes(net: &Net, tensors: &[HostTensor]) -> Result<Vec<u8>, String> {
    let config = net.config();
    let mut g = Graph {
        tensors: tensors.iter().map(|t| (t.name.as_str(), t)).collect(),
        nodes: Vec::new(),
        initializers: Vec::new(),
        epsilon: net.input.bn.epsilon as f32,
        counter: 0,
    };
    let f = config.filters;
    let c = g.conv_bn("input", "planes")?;
    let mut x = g.relu(&c);
    for (i, block) in net.tower.iter().enumerate() {
        let p = format!("tower.{i}");
        let c1 = g.conv_bn(&format!("{p}.conv1"), &x)?;
        let mut y = g.relu(&c1);
        if block.pool.is_some() {
            let pc = g.conv_bn(&format!("{p}.pool.conv"), &x)?;
            let pooled = g.relu(&pc);
            let mean = g.reduce("ReduceMean", &pooled);
            let max = g.reduce("ReduceMax", &pooled);
            let both = g.node("Concat", &[&mean, &max], &[("axis", Attr::Int(1))]);
            let bias = g.linear(&format!("{p}.pool.fc"), &both)?;
            let bias = g.per_channel(&bias, f);
            y = g.node("Add", &[&y, &bias], &[]);
        }
        let mut z = g.conv_bn(&format!("{p}.conv2"), &y)?;
        if block.se.is_some() {
            let mean = g.reduce("ReduceMean", &z);
            let h = g.linear(&format!("{p}.se.fc1"), &mean)?;
            let h = g.relu(&h);
            let t = g.linear(&format!("{p}.se.fc2"), &h)?;
            let gate = g.slice(&t, 0, f);
            let gate = g.node("Sigmoid", &[&gate], &[]);
            let gate = g.per_channel(&gate, f);
            let bias = g.slice(&t, f, 2 * f);
            let bias = g.per_channel(&bias, f);
            let gated = g.node("Mul", &[&z, &gate], &[]);
            z = g.node("Add", &[&gated, &bias], &[]);
        }
        let sum = g.node("Add", &[&x, &z], &[]);
        x = g.relu(&sum);
    }
    let pc = g.conv_bn("policy_conv", &x)?;
    let p = g.relu(&pc);
    let p = g.node("Flatten", &[&p], &[("axis", Attr::Int(1))]);
    let policy = g.linear("policy_fc", &p)?;
    g.node_into("Identity", &[&policy], "policy", &[]);
    let vc = g.conv_bn("value_conv", &x)?;
    let v = g.relu(&vc);
    let v = g.node("Flatten", &[&v], &[("axis", Attr::Int(1))]);
    let v = g.linear("value_fc1", &v)?;
    let v = g.relu(&v);
    let wdl = g.linear("value_fc2", &v)?;
    g.node_into("Identity", &[&wdl], "wdl", &[]);

    let mut graph = Vec::new();
    for n in &g.nodes {
        pb::bytes(&mut graph, 1, n);
    }
    pb::bytes(&mut graph, 2, b"xiangqi-zero");
    for t in &g.initializers {
        pb::bytes(&mut graph, 5, t);
    }
    let enc = &net.encoding;
    pb::bytes(&mut graph, 11, &value_info("planes", &[enc.planes, PLANE_RANKS, PLANE_FILES]));
    pb::bytes(&mut graph, 12, &value_info("policy", &[enc.policy_size]));
    pb::bytes(&mut graph, 12, &value_info("wdl", &[crate::model::WDL]));

    let mut model = Vec::new();
    pb::int(&mut model, 1, IR_VERSION);
    pb::bytes(&mut model, 2, b"xiangqi-zero");
    pb::bytes(&mut model, 3, env!("CARGO_PKG_VERSION").as_bytes());
    pb::bytes(&mut model, 7, &graph);
    let mut opset = Vec::new();
    pb::bytes(&mut opset, 1, b"");
    pb::int(&mut opset, 2, OPSET);
    pb::bytes(&mut model, 8, &opset);
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::pb;

    #[test]
    fn protobuf_encoding_follows_the_wire_format() {
        // From the protocol-buffer encoding guide: 150 is 0x96 0x01; field 1 varint 150 is
        // 08 96 01; field 2 string "testing" is 12 07 74 65 73 74 69 6e 67.
        let mut v = Vec::new();
        pb::varint(&mut v, 150);
        assert_eq!(v, [0x96, 0x01]);
        let mut v = Vec::new();
        pb::int(&mut v, 1, 150);
        assert_eq!(v, [0x08, 0x96, 0x01]);
        let mut v = Vec::new();
        pb::bytes(&mut v, 2, b"testing");
        assert_eq!(v, [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']);
        // A negative int64 takes ten bytes (two's complement as a 64-bit varint).
        let mut v = Vec::new();
        pb::int(&mut v, 1, -1);
        assert_eq!(v.len(), 11);
        assert_eq!(v[10], 0x01);
    }
}
