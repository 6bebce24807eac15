"""dspsim's quantize/dequantize against vectors written by the real engines (tests/golden/).

TensorFlow QuantizeV2/Dequantize (Eigen kernels), PyTorch/FBGEMM quantize_per_tensor/per_channel,
ONNX Runtime and onnx.reference QuantizeLinear/DequantizeLinear, LiteRT reference QUANTIZE/DEQUANTIZE,
and 30-cycle TF quantize -> dequantize chains.  Every case must agree exactly: codes equal (and of the
same dtype), floats equal bit for bit.  Format and regeneration: tests/golden/README.md.
"""
from __future__ import annotations

import collections
import json
import os

import numpy as np
import pytest

import dspsim

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden")


def _load(name):
    path = os.path.join(GOLDEN, name)
    if not os.path.exists(path):
        return []
    z = dict(np.load(path))
    cases = []
    for m in json.loads(str(z["meta"])):
        arrays = {f: z[k][s:s + int(np.prod(sh))].reshape(sh) for f, (k, s, sh) in m["arrays"].items()}
        cases.append((m, arrays))
    return cases


TF = _load("quantize_tf.npz")
TORCH = _load("quantize_torch.npz")
ONNX = _load("quantize_onnx.npz")
TFLITE = _load("quantize_tflite.npz")
DRIFT = _load("drift_tf.npz")
DRIFT_X0 = np.load(os.path.join(GOLDEN, "drift_tf.npz"))["x0"] if DRIFT else None


def _params(cases, *kinds):
    return [pytest.param(m, a, id=m["name"]) for m, a in cases if m["kind"] in kinds]


def _bits(a):
    a = np.asarray(a)
    assert a.dtype == np.float32, f"expected float32, got {a.dtype}"
    return a.view(np.uint32)


def assert_codes(got, want, x=None, what="codes"):
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, engine gives {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, engine gives {want.shape}"
    bad = np.flatnonzero(got.ravel() != want.ravel())
    if bad.size:
        i = bad[:5]
        xs = "" if x is None else f" x={np.asarray(x).ravel()[i].tolist()}"
        pytest.fail(f"{what}: {bad.size} of {want.size} mismatches, first at {i.tolist()}:{xs} "
                    f"engine={want.ravel()[i].tolist()} dspsim={got.ravel()[i].tolist()}")


def assert_floats(got, want, inputs=None, what="floats"):
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, engine gives {want.shape}"
    bad = np.flatnonzero(_bits(got).ravel() != _bits(want).ravel())
    if bad.size:
        i = bad[:5]
        ins = "" if inputs is None else f" in={np.asarray(inputs).ravel()[i].tolist()}"
        pytest.fail(f"{what}: {bad.size} of {want.size} mismatches, first at {i.tolist()}:{ins} "
                    f"engine={want.ravel()[i].tolist()} dspsim={got.ravel()[i].tolist()}")


# --------------------------------------------------------------------------------------------------
# TensorFlow QuantizeV2 / Dequantize
# --------------------------------------------------------------------------------------------------

def _tf_quantize(m, a):
    kw = dict(mode=m["mode"], round_mode=m["round_mode"], narrow_range=m["narrow_range"], axis=m["axis"])
    if m["ensure_minimum_range"] is not None:
        kw["ensure_minimum_range"] = m["ensure_minimum_range"]
    return dspsim.quantize(a["x"], a["min"], a["max"], m["T"], **kw)


@pytest.mark.parametrize("m, a", _params(TF, "quantize"))
def test_tf_quantize_codes_and_range_match_tensorflow(m, a):
    res = _tf_quantize(m, a)
    assert_codes(res.output, a["q"], a["x"])
    assert_floats(res.output_min, a["omin"], what="output_min")
    assert_floats(res.output_max, a["omax"], what="output_max")


@pytest.mark.parametrize("m, a", _params(TF, "quantize"))
def test_tf_dequantize_of_returned_range_matches_tensorflow(m, a):
    got = dspsim.dequantize(a["q"], a["omin"], a["omax"], mode=m["mode"], narrow_range=m["narrow_range"],
                            axis=m["axis"])
    assert_floats(got, a["dq"], a["q"], what="dequantize")


@pytest.mark.parametrize("m, a", _params(TF, "dequantize"))
def test_tf_dequantize_of_any_code_matches_tensorflow(m, a):
    got = dspsim.dequantize(a["q"], a["min"], a["max"], mode=m["mode"], narrow_range=m["narrow_range"],
                            axis=m["axis"])
    assert_floats(got, a["dq"], a["q"], what="dequantize")


@pytest.mark.parametrize("m, a", _params(TF, "quantize_refused"))
def test_tf_quantize_refuses_what_tensorflow_refuses(m, a):
    with pytest.raises(ValueError):
        _tf_quantize(m, a)


@pytest.mark.parametrize("m, a", _params(TF, "dequantize_refused"))
def test_tf_dequantize_refuses_what_tensorflow_refuses(m, a):
    with pytest.raises(ValueError):
        dspsim.dequantize(a["q"], a["min"], a["max"], mode=m["mode"], narrow_range=m["narrow_range"],
                          axis=m["axis"])


@pytest.mark.parametrize("m, a", [pytest.param(m, a, id=m["name"]) for m, a in DRIFT])
def test_tf_drift_chain_matches_tensorflow_cycle_by_cycle(m, a):
    """Each cycle fed TF's own input; then the whole chain replayed from x0 with dspsim alone."""
    x0 = DRIFT_X0
    kw = dict(mode=m["mode"], narrow_range=m["narrow_range"])
    use_requested = m["policy"] == "fixed_dq_requested"
    for c in range(m["cycles"]):
        x = x0 if c == 0 else a["dq"][c - 1]
        q, lo, hi = dspsim.quantize(x, a["min"][c], a["max"][c], m["T"], **kw)
        assert_codes(q, a["q"][c], x, what=f"cycle {c} codes")
        assert_floats(lo, a["omin"][c], what=f"cycle {c} output_min")
        assert_floats(hi, a["omax"][c], what=f"cycle {c} output_max")
        rng = (a["min"][c], a["max"][c]) if use_requested else (a["omin"][c], a["omax"][c])
        assert_floats(dspsim.dequantize(a["q"][c], *rng, **kw), a["dq"][c], what=f"cycle {c} dequantize")
    x, lo, hi = x0, a["min"][0], a["max"][0]
    for c in range(m["cycles"]):
        q, olo, ohi = dspsim.quantize(x, lo, hi, m["T"], **kw)
        x = dspsim.dequantize(q, *((lo, hi) if use_requested else (olo, ohi)), **kw)
        if m["policy"] == "returned":
            lo, hi = olo, ohi
        elif m["policy"] == "data":
            lo, hi = np.float32(x.min()), np.float32(x.max())
    assert_floats(x, a["dq"][-1], what="self-fed chain, last cycle")


# --------------------------------------------------------------------------------------------------
# PyTorch (FBGEMM)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("m, a", _params(TORCH, "per_tensor"))
def test_torch_quantize_per_tensor_matches_fbgemm(m, a):
    got = dspsim.quantize_per_tensor(a["x"], float(a["scale"]), int(a["zp"]), m["dtype"])
    assert_codes(got, a["q"], a["x"])


@pytest.mark.parametrize("m, a", _params(TORCH, "per_tensor", "dq_per_tensor"))
def test_torch_dequantize_per_tensor_matches_fbgemm(m, a):
    got = dspsim.dequantize_per_tensor(a["q"], float(a["scale"]), int(a["zp"]))
    assert_floats(got, a["dq"], a["q"], what="dequantize_per_tensor")


@pytest.mark.parametrize("m, a", _params(TORCH, "per_channel"))
def test_torch_quantize_per_channel_matches_fbgemm(m, a):
    got = dspsim.quantize_per_channel(a["x"], a["scale"], a["zp"], m["axis"], m["dtype"])
    assert_codes(got, a["q"], a["x"])


@pytest.mark.parametrize("m, a", _params(TORCH, "per_channel", "dq_per_channel"))
def test_torch_dequantize_per_channel_matches_fbgemm(m, a):
    got = dspsim.dequantize_per_channel(a["q"], a["scale"], a["zp"], m["axis"])
    assert_floats(got, a["dq"], a["q"], what="dequantize_per_channel")


# --------------------------------------------------------------------------------------------------
# ONNX Runtime and onnx.reference
# --------------------------------------------------------------------------------------------------

def _onnx_axis(m):
    return 1 if m["axis"] is None else m["axis"]


@pytest.mark.parametrize("m, a", _params(ONNX, "per_tensor", "per_axis"))
def test_onnx_quantize_linear_matches_onnxruntime(m, a):
    got = dspsim.quantize_linear(a["x"], a["scale"], a["zp"], axis=_onnx_axis(m), dtype=m["dtype"])
    assert_codes(got, a["q"], a["x"])


@pytest.mark.parametrize("m, a", _params(ONNX, "per_tensor", "per_axis"))
def test_onnx_quantize_linear_matches_onnx_reference_on_finite_x(m, a):
    finite = np.isfinite(a["x"])
    got = np.asarray(dspsim.quantize_linear(a["x"], a["scale"], a["zp"], axis=_onnx_axis(m),
                                            dtype=m["dtype"]))
    assert_codes(got[finite], a["q_ref"][finite], a["x"][finite])


@pytest.mark.parametrize("m, a", _params(ONNX, "per_tensor", "per_axis", "dq_per_tensor"))
def test_onnx_dequantize_linear_matches_onnxruntime_and_reference(m, a):
    got = dspsim.dequantize_linear(a["q"], a["scale"], a["zp"], axis=_onnx_axis(m))
    assert_floats(got, a["dq"], a["q"], what="dequantize_linear vs ORT")
    assert_floats(got, a["dq_ref"], a["q"], what="dequantize_linear vs onnx.reference")


# --------------------------------------------------------------------------------------------------
# LiteRT reference QUANTIZE / DEQUANTIZE
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("m, a", _params(TFLITE, "quantize"))
def test_tflite_quantize_matches_reference_kernel(m, a):
    got = dspsim.tflite_quantize(a["x"], float(a["scale"]), int(a["zp"]), dtype=m["dtype"])
    assert_codes(got, a["q"], a["x"])


@pytest.mark.parametrize("m, a", _params(TFLITE, "quantize", "dequantize"))
def test_tflite_dequantize_matches_reference_kernel(m, a):
    got = dspsim.tflite_dequantize(a["q"], float(a["scale"]), int(a["zp"]))
    assert_floats(got, a["dq"], a["q"], what="tflite_dequantize")


# --------------------------------------------------------------------------------------------------
# Coverage of the files themselves
# --------------------------------------------------------------------------------------------------

def _inventory():
    inv = collections.Counter()
    for engine, cases in (("tf", TF), ("torch", TORCH), ("onnx", ONNX), ("tflite", TFLITE),
                          ("drift", DRIFT)):
        for m, a in cases:
            key = (engine, m.get("mode", m.get("dtype")), m.get("kind", "chain"))
            inv[key + ("cases",)] += 1
            inv[key + ("elements",)] += int(a["x"].size if "x" in a else a["q"].size)
    return inv


@pytest.mark.skipif(not TF, reason="quantize_tf.npz missing")
def test_golden_files_cover_every_mode_type_and_refusal():
    inv = _inventory()
    for k in sorted(inv):
        if k[-1] == "cases":
            print(f"{'/'.join(map(str, k[:-1]))}: {inv[k]} cases, {inv[k[:-1] + ('elements',)]} elements")
    seen = {(m["mode"], m["T"], m["round_mode"], m["narrow_range"]) for m, _ in TF if m["kind"] == "quantize"}
    for mode in ("MIN_COMBINED", "MIN_FIRST", "SCALED"):
        for T in ("qint8", "quint8", "qint16", "quint16", "qint32"):
            for rm in ("HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN"):
                for narrow in (False, True):
                    assert ((mode, T, rm, narrow) in seen) == (rm == "HALF_AWAY_FROM_ZERO" or mode == "SCALED")
    refused = {m["error"] for m, _ in TF if m["kind"] == "quantize_refused"}
    assert {"InvalidArgumentError", "UnimplementedError"} <= refused
    assert {m["dtype"] for m, _ in TORCH} == {"uint8", "int8", "int32"}
    assert {m["dtype"] for m, _ in ONNX} == {"uint8", "int8", "int16", "uint16", "int32"}
    assert {m["dtype"] for m, _ in TFLITE} == {"uint8", "int8", "int16"}
    assert len(DRIFT) == 72 and all(a["q"].shape[0] == m["cycles"] >= 25 for m, a in DRIFT)
