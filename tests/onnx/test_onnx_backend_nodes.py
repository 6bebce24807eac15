"""The onnx package's backend node tests for every quantization operator (45 cases, listed in
tests/golden/onnx/backend_nodes.npz), run through dspsim.onnx.load_model with its own protobuf
reader: every output must equal the expected one bit for bit.

The golden file is regenerated from the installed onnx wheel by tests/golden/make_golden_onnx_backend.py;
``test_backend_nodes_live`` regenerates them at test time when onnx is installed (and checks the
committed file is what the installed onnx generates).
"""
import json
import os

import numpy as np
import pytest

import dspsim.onnx as donnx
from dspsim.onnx.proto import read_tensor
from dspsim.onnx.types import QArray

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "onnx", "backend_nodes.npz")
Z = np.load(GOLDEN)
META = json.loads(str(Z["meta"]))
NAMES = [c["name"] for c in META["cases"]]
QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearMatMul", "QLinearConv",
             "MatMulInteger", "ConvInteger"}


def decode(b):
    b = bytes(b)
    return read_tensor(memoryview(b), (0, len(b))).array()


def bits(v):
    if isinstance(v, QArray):
        return v.type.name, v.codes.shape, v.codes.astype(np.int64).tolist()
    v = np.asarray(v)
    return v.dtype.name, v.shape, v.reshape(-1).view(f"u{v.dtype.itemsize}").tolist()


def check_case(model_bytes, inputs, expected):
    model = donnx.load_model(model_bytes, engine="onnx-reference")
    got = model.run(inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert bits(g) == bits(e)


def test_golden_holds_the_45_quantization_cases():
    assert len(NAMES) == 45
    assert all(set(c["ops"]) & QUANT_OPS for c in META["cases"])


@pytest.mark.parametrize("name", NAMES)
def test_backend_node(name):
    case = next(c for c in META["cases"] if c["name"] == name)
    inputs = [decode(Z[f"{name}/in{k}"]) for k in range(case["n_in"])]
    expected = [decode(Z[f"{name}/out{k}"]) for k in range(case["n_out"])]
    check_case(bytes(Z[f"{name}/model"]), inputs, expected)


def test_backend_nodes_live():
    pytest.importorskip("onnx")
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden"))
    from make_golden_onnx_backend import quantization_cases

    cases = quantization_cases()
    assert sorted(cases) == sorted(NAMES)
    n_sets = 0
    for name, c in cases.items():
        for ins, outs in c.data_sets:
            ins = [decode(v.SerializeToString()) if hasattr(v, "data_type") else np.asarray(v) for v in ins]
            outs = [decode(v.SerializeToString()) if hasattr(v, "data_type") else np.asarray(v) for v in outs]
            check_case(c.model.SerializeToString(), ins, outs)
            n_sets += 1
    assert n_sets >= 45
