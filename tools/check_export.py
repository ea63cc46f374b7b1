#!/usr/bin/env python3
"""Runs an `xqz export` directory with numpy alone and checks it against the export's test vector.

First every file that manifest.toml lists is checked against its recorded size and FNV-1a 64
checksum (a damaged file is named with what was expected and found, exit status 1). Then an
independent implementation of the forward pass described in model.json (convolutions,
batch normalisation in eval mode, residual blocks with optional global pooling or
squeeze-excitation, the policy and WDL heads), reading the weights from model.safetensors.

    pip install numpy safetensors
    python3 tools/check_export.py export/

Prints the largest difference from the logits xqz computed and exits with status 1 above 1e-3,
and the test position's top move: as model.json's `policy.meaning` says, illegal moves are
masked first, with the test vector's `legal_moves` (the policy indices of the position's legal
moves; exports written before it was recorded name the top action over all indices, and say so).
"""

import json
import os
import re
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


def fnv1a64(path):
    """FNV-1a, 64 bits, of a file's bytes, written as the manifest writes it."""
    h = 0xCBF29CE484222325
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            for b in chunk:
                h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"fnv1a64:{h:016x}"


def manifest_files(path):
    """The [[files]] entries of a manifest: name, size and checksum of each."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        import tomllib
    except ImportError:  # Python < 3.11: the manifest's own simple layout, read line by line.
        files = []
        for line in raw.decode("utf-8").splitlines():
            line = line.strip()
            if line == "[[files]]":
                files.append({})
            elif line.startswith("["):
                files.append(None)
            elif files and files[-1] is not None:
                m = re.fullmatch(r'(name|size|checksum)\s*=\s*(?:"([^"]*)"|(\d+))', line)
                if m:
                    files[-1][m.group(1)] = m.group(2) if m.group(2) is not None else int(m.group(3))
        return [f for f in files if f is not None]
    return tomllib.loads(raw.decode("utf-8")).get("files", [])


def check_files(directory):
    """Every file the manifest lists has its recorded size and checksum, or the script exits."""
    manifest = os.path.join(directory, "manifest.toml")
    try:
        files = manifest_files(manifest)
    except (OSError, ValueError) as e:
        sys.exit(f"{manifest}: not an xqz export manifest ({e})")
    names = [f.get("name") for f in files]
    for needed in ("model.json", "model.safetensors"):
        if needed not in names:
            sys.exit(f"{manifest}: lists no {needed}; not an xqz export")
    for f in files:
        if not all(k in f for k in ("name", "size", "checksum")):
            sys.exit(f"{manifest}: a [[files]] entry without name, size and checksum: {f}")
        path = os.path.join(directory, f["name"])
        try:
            size = os.path.getsize(path)
        except OSError as e:
            sys.exit(f"{path}: missing or unreadable, the manifest lists it ({e})")
        if size != f["size"]:
            sys.exit(f"{path}: {size} bytes, the manifest says {f['size']}: the file is "
                     + ("truncated" if size < f["size"] else "longer than written"))
        found = fnv1a64(path)
        if found != f["checksum"]:
            sys.exit(f"{path}: checksum {found}, the manifest says {f['checksum']}: "
                     "the file is corrupted")
    return len(files)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "export"
    checked = check_files(directory)
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
    moves = desc["policy"]["moves"]
    legal = tv.get("legal_moves")
    if legal is None:
        top = f"top policy action {moves[int(np.argmax(policy))]} (unmasked: this export's test vector lists no legal moves)"
    else:
        if not legal or not all(isinstance(i, int) and 0 <= i < len(moves) for i in legal):
            sys.exit(f"{directory}/model.json: test_vector.legal_moves must be policy indices below {len(moves)}")
        masked = np.full(policy.shape, -np.inf)
        masked[legal] = policy[legal]
        p = np.exp(masked - masked.max())
        p /= p.sum()
        i = int(np.argmax(masked))
        top = f"top legal move {moves[i]} ({100 * p[i]:.1f}% of {len(legal)} legal moves)"
    print(f"{checked} files match the manifest; {len(weights)} tensors; start position: W/D/L {w:.3f}/{d:.3f}/{l:.3f}, "
          f"{top}; max difference from xqz: policy {dp:.2e}, wdl {dw:.2e}")
    sys.exit(0 if max(dp, dw) < 1e-3 else 1)


if __name__ == "__main__":
    main()
