"""dspsim.onnx's quantization operators against ONNX Runtime and onnx.reference on one-node models
(tests/golden/onnx/ops.npz, made by tests/golden/make_golden_onnx_ops.py): every type of
QuantizeLinear / DequantizeLinear (per tensor, per axis, blocked; float8 with saturate on and off),
DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul (batched, per column, ties,
float16 scales). Bit-exact: 0 mismatches, element for element, for each engine that ran the model.
"""

import numpy as np
import pytest

from dspsim.onnx.types import QArray
from onnx_golden import GoldenFile, bit_list, decode

GOLDEN = GoldenFile("ops.npz")
Z, META, CASES, run_case = GOLDEN.z, GOLDEN.meta, GOLDEN.cases, GOLDEN.run


def ids(engine):
    key = "ort_error" if engine == "onnxruntime" else "ref_error"
    return [n for n, c in CASES.items() if c[key] is None]


@pytest.mark.parametrize("name", ids("onnxruntime"))
def test_matches_onnxruntime(name):
    c = CASES[name]
    got = run_case(name, "onnxruntime")
    for k, g in enumerate(got):
        _, want = decode(Z[f"{name}/ort{k}"])
        if c["ort_decoded"]:  # ORT returned DequantizeLinear(y, 1.0): the codes' values
            g = g.to_float() if isinstance(g, QArray) else g.astype(np.float32)
        assert bit_list(g) == bit_list(want)


@pytest.mark.parametrize("name", ids("onnx-reference"))
def test_matches_onnx_reference(name):
    got = run_case(name, "onnx-reference")
    for k, g in enumerate(got):
        _, want = decode(Z[f"{name}/ref{k}"])
        assert bit_list(g) == bit_list(want)


def test_golden_covers_every_quantized_type():
    ops = {(c["op"], c["name"].split("_")[1]) for c in META["cases"]}
    for t in ("uint8", "int8", "uint16", "int16", "uint4", "int4", "uint2", "int2", "float8e4m3fn",
              "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float4e2m1"):
        assert ("QuantizeLinear", t) in ops and ("DequantizeLinear", t) in ops
    assert sum(c["ort_error"] is None for c in META["cases"]) >= 90
