"""Issue 27 part 6: 3-D ConvInteger / QLinearConv and QLinearMatMul with B's scales and zero points per batch and
column, against ONNX Runtime and the ONNX reference evaluator (tests/golden/onnx/nd.npz, written by
make_golden_onnx_nd.py): 0 mismatches. ORT's outputs are compared under the dspsim engine of the host that wrote
them (``host_engine`` in the file). Where an engine refused a case dspsim refuses it too (the reference evaluator's
3-D per-channel broadcast, ORT's per-channel ConvInteger zero points: docs/engines.md)."""
import json
import os
import warnings

import numpy as np
import pytest

import dspsim.onnx as O
from dspsim.engines import EngineDefectWarning

PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "onnx", "nd.npz")
CALLS = {"ConvInteger": O.conv_integer, "QLinearConv": O.qlinear_conv, "QLinearMatMul": O.qlinear_matmul}


def _load():
    if not os.path.exists(PATH):
        return None, []
    z = np.load(PATH)
    meta = json.loads(str(z["meta"]))
    return meta, [(c, {k.split("/", 1)[1]: z[k] for k in z.files if k.startswith(c["name"] + "/")})
                  for c in meta["cases"]]


META, CASES = _load()


def _args(case, arrays):
    given, out, k = set(case["given"]), [], 0
    for name in case["inputs"]:
        if name in given:
            out.append(arrays[f"in{k}"])
        else:
            out.append(None)
        k += 1
    return out


def test_the_golden_file_holds_every_kind():
    ops = {c["op"] for c, _ in CASES}
    assert ops == set(CALLS)
    assert sum(c["ort_error"] is None for c, _ in CASES) >= 9


@pytest.mark.parametrize("engine_key", ["ort", "ref"])
@pytest.mark.parametrize("case,arrays", CASES, ids=[c["name"] for c, _ in CASES])
def test_outputs_are_bit_exact_with_the_engine(case, arrays, engine_key):
    engine = META["host_engine"] if engine_key == "ort" else "onnx-reference"
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in case["attrs"].items()}
    if case[f"{engine_key}_error"] is not None:  # the engine refused it: so does dspsim
        with pytest.raises(ValueError, match=f"dspsim.onnx.{CALLS[case['op']].__name__}"):
            CALLS[case["op"]](*_args(case, arrays), engine=engine, **attrs)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EngineDefectWarning)  # the reference's 3-D per-channel scale: reproduced
        got = CALLS[case["op"]](*_args(case, arrays), engine=engine, **attrs)
    want = arrays[engine_key]
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert bad.size == 0, f"{bad.size} of {want.size} differ, first at {bad[0]}"


def test_qlinear_matmul_refuses_scales_of_another_batch_shape():
    a, b = np.zeros((2, 3, 4), np.uint8), np.zeros((2, 4, 5), np.int8)
    with pytest.raises(ValueError, match=r"qlinear_matmul: b_scale must be a scalar, have 5 values .* \(2, 1, 5\)"):
        O.qlinear_matmul(a, np.float32(0.1), np.uint8(0), b, np.full((3, 1, 5), 0.1, np.float32), np.int8(0),
                         np.float32(0.2), np.uint8(0))


def test_conv_integer_3d_refuses_mismatched_ranks_and_bad_pads():
    x = np.zeros((1, 1, 3, 3, 3), np.uint8)
    with pytest.raises(ValueError, match="conv_integer: a 3-D convolution takes"):
        O.conv_integer(x, np.zeros((1, 1, 2, 2), np.uint8))
    with pytest.raises(ValueError, match="conv_integer: pads must be 6 ints"):
        O.conv_integer(x, np.zeros((1, 1, 2, 2, 2), np.uint8), pads=[1, 1, 1, 1])
