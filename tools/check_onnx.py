#!/usr/bin/env python3
"""Runs an `xqz export` directory's model.onnx with ONNX Runtime and checks its outputs.

    pip install numpy onnxruntime
    python3 tools/check_onnx.py export/ [cases.json]

Checks the graph's inputs and outputs against model.json (`planes` in, `policy` and `wdl`
out, a dynamic batch dimension), runs the test vector of model.json (one position) and, when
given, the positions of cases.json (`{"shape": [n, planes, 10, 9], "planes": [...], "policy":
[...], "wdl": [...]}`, flat float lists: what xqz's own evaluator computed for them) in one
batch. Prints the largest difference from each and exits with status 1 above 2e-4.
"""

import json
import sys

import numpy as np
import onnxruntime as ort

TOLERANCE = 2e-4


def main():
    export = sys.argv[1]
    desc = json.load(open(f"{export}/model.json"))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(f"{export}/model.onnx", so, providers=["CPUExecutionProvider"])
    inputs, outputs = sess.get_inputs(), sess.get_outputs()
    planes = desc["input"]["shape"][1]
    policy_size = desc["policy"]["shape"][1]
    assert [i.name for i in inputs] == ["planes"], inputs
    assert [o.name for o in outputs] == ["policy", "wdl"], outputs
    assert inputs[0].shape[1:] == [planes, 10, 9] and isinstance(inputs[0].shape[0], str), inputs[0].shape
    assert outputs[0].shape[1:] == [policy_size] and outputs[1].shape[1:] == [3], outputs

    tv = desc["test_vector"]
    x = np.array(tv["planes"], dtype=np.float32).reshape(1, planes, 10, 9)
    pol, wdl = sess.run(None, {"planes": x})
    want_p = np.array(tv["policy_logits"], dtype=np.float32).reshape(1, -1)
    want_v = np.array(tv["wdl_logits"], dtype=np.float32).reshape(1, -1)
    worst = max(float(np.abs(pol - want_p).max()), float(np.abs(wdl - want_v).max()))
    print(f"test vector: max |diff| {worst:.2e}")

    if len(sys.argv) > 2:
        cases = json.load(open(sys.argv[2]))
        shape = cases["shape"]
        x = np.array(cases["planes"], dtype=np.float32).reshape(shape)
        pol, wdl = sess.run(None, {"planes": x})
        d = max(float(np.abs(pol - np.array(cases["policy"], dtype=np.float32).reshape(pol.shape)).max()),
                float(np.abs(wdl - np.array(cases["wdl"], dtype=np.float32).reshape(wdl.shape)).max()))
        print(f"{shape[0]} positions in one batch: max |diff| {d:.2e}")
        worst = max(worst, d)
    if worst > TOLERANCE:
        print(f"FAIL: {worst:.2e} > {TOLERANCE}")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
