#!/usr/bin/env python3
"""Runs an `xqz export` directory with numpy alone and checks it against the export's test vector.

An independent implementation of the forward pass described in model.json (convolutions,
batch normalisation in eval mode, residual blocks with optional global pooling or
squeeze-excitation, the policy and WDL heads), reading the weights from model.safetensors.

    pip install numpy safetensors
    python3 tools/check_export.py export/

Prints the largest difference from the logits xqz computed and exits with status 1 above 1e-3.
"""

import json
import sys

import numpy as np
from safetensors.numpy import load_file


def conv(x, w):
    """x [C, 10, 9], w [O, C, k, k], padding k // 2, no bias."""
    o, c, k, _ = w.shape
    p = k // 2
    xp = np.pad(x, ((0, 0), (p, p), (p, p)))
    out = np.zeros((o, x.shape[1], x.shape[2]), dtype=np.float64)
    for dy in range(k):
        for dx in range(k):
            patch = xp[:, dy:dy + x.shape[1], dx:dx + x.shape[2]]
            out += np.einsum("oc,chw->ohw", w[:, :, dy, dx], patch)
    return out


def conv_bn(weights, prefix, x, eps):
    y = conv(x, weights[prefix + ".conv.weight"])
    g, b = weights[prefix + ".bn.weight"], weights[prefix + ".bn.bias"]
    m, v = weights[prefix + ".bn.running_mean"], weights[prefix + ".bn.running_var"]
    scale = g / np.sqrt(v + eps)
    return (y - m[:, None, None]) * scale[:, None, None] + b[:, None, None]


def linear(weights, prefix, x):
    return weights[prefix + ".weight"] @ x + weights[prefix + ".bias"]


def relu(x):
    return np.maximum(x, 0.0)


def forward(weights, desc, planes):
    eps = desc["batch_norm_epsilon"]
    x = relu(conv_bn(weights, "input", planes, eps))
    for i in range(desc["network"]["blocks"]):
        t = f"tower.{i}"
        y = relu(conv_bn(weights, t + ".conv1", x, eps))
        if t + ".pool.fc.weight" in weights:
            g = relu(conv_bn(weights, t + ".pool.conv", x, eps)).reshape(-1, 90)
            pooled = np.concatenate([g.mean(axis=1), g.max(axis=1)])
            y = y + linear(weights, t + ".pool.fc", pooled)[:, None, None]
        z = conv_bn(weights, t + ".conv2", y, eps)
        if t + ".se.fc1.weight" in weights:
            f = z.shape[0]
            s = linear(weights, t + ".se.fc2", relu(linear(weights, t + ".se.fc1", z.mean(axis=(1, 2)))))
            gate, bias = 1.0 / (1.0 + np.exp(-s[:f])), s[f:]
            z = gate[:, None, None] * z + bias[:, None, None]
        x = relu(x + z)
    p = relu(conv_bn(weights, "policy_conv", x, eps)).reshape(-1)
    policy = linear(weights, "policy_fc", p)
    v = relu(conv_bn(weights, "value_conv", x, eps)).reshape(-1)
    wdl = linear(weights, "value_fc2", relu(linear(weights, "value_fc1", v)))
    return policy, wdl


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "export"
    try:
        desc = json.load(open(f"{directory}/model.json"))
        raw = load_file(f"{directory}/model.safetensors")
    except (OSError, ValueError) as e:
        sys.exit(f"{directory}: not an xqz export ({e})")
    if "test_vector" not in desc or "tensors" not in desc:
        sys.exit(f"{directory}/model.json: not an xqz export description")
    weights = {k: v.astype(np.float64) for k, v in raw.items()}
    for name, shape in desc["tensors"].items():
        assert list(weights[name].shape) == shape, name
    tv = desc["test_vector"]
    planes = np.array(tv["planes"], dtype=np.float64).reshape(desc["input"]["shape"][1:])
    policy, wdl = forward(weights, desc, planes)
    dp = np.abs(policy - np.array(tv["policy_logits"])).max()
    dw = np.abs(wdl - np.array(tv["wdl_logits"])).max()
    e = np.exp(wdl - wdl.max())
    w, d, l = e / e.sum()
    best = desc["policy"]["moves"][int(np.argmax(policy))]
    print(f"{len(weights)} tensors; start position: W/D/L {w:.3f}/{d:.3f}/{l:.3f}, "
          f"top policy move {best}; max difference from xqz: policy {dp:.2e}, wdl {dw:.2e}")
    sys.exit(0 if max(dp, dw) < 1e-3 else 1)


if __name__ == "__main__":
    main()
