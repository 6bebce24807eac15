"""dspsim's float-scale requantizing kernels against vectors made by PyTorch/FBGEMM, ONNX Runtime and the
ONNX reference evaluator (tests/golden/make_golden_float_requant.py; numpy only here).

Every case must match its engine element for element. The files:

* ``fbgemm.npz``      torch 2.13 engine "fbgemm" on an AVX512-VNNI host: exact int32 sums except the
                      depthwise fast path (3x3/5x5, pad (K-1)/2, C % 8 == 0, M <= 2), which saturates
                      adjacent-tap u8*s8 pairs to int16 even there.
* ``fbgemm_avx2.npz`` the same cases with ``FBGEMM_ENABLE_INSTRUCTIONS=AVX2`` (a pre-VNNI host): every
                      GEMM path saturates pairs (k = 2j, 2j+1 of the (fy, fx, ic) index), except the
                      optimized groupwise conv.
* ``fbgemm_x86.npz``  torch engine "x86": linear is FBGEMM; conv goes to oneDNN (zero point added before
                      rounding), which dspsim does not model; those cases are skipped.
* ``ort_*.npz`` / ``onnxref_*.npz``  QLinearMatMul / QLinearConv on the same inputs.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import dspsim

GOLDEN = Path(__file__).parents[1] / "golden"
FILES = ("fbgemm", "fbgemm_avx2", "fbgemm_x86", "ort_matmul", "ort_conv", "onnxref_matmul", "onnxref_conv")


def load(name):
    """{case id: dict of arrays + meta} of one golden file."""
    z = np.load(GOLDEN / f"{name}.npz")
    cases = {}
    for key in z.files:
        cid, field = key.split("/")
        cases.setdefault(cid, {})[field] = z[key]
    for case in cases.values():
        case.update(json.loads(str(case.pop("meta"))))
    return cases


CASES = {name: load(name) for name in FILES}

# Known dspsim gaps (details in docs/engines.md): the case fails as xfail, with its mismatch report, while
# dspsim lacks the engine behaviour; an XPASS means the gap is closed.
KNOWN_GAPS = {
    "beyond_int32": "FBGEMM's cvtps2dq gives INT32_MIN for |v| >= 2^31: a huge positive value ends as the "
                    "lower clamp (0, or zp with ReLU), not 255",
    "float_bias_division": "FBGEMM per-tensor float bias is fma(bias, f32(1/act_times_w), float(acc)) (one "
                           "rounding); per-channel is f32(float(acc) + f32(bias/act_times_w))",
}
PARAMS = [pytest.param(name, cid, id=f"{name}:{cid}") for name in FILES for cid in CASES[name]]


def scalar_or_array(a, kind):
    a = np.asarray(a)
    return (float(a) if kind == "f" else int(a)) if a.ndim == 0 else a


def weight_zero_point(case):
    """One int when every channel has the same zero point (torch stores per-channel zeros), else the array."""
    zw = np.asarray(case["weight_zero_point"])
    return int(zw.flat[0]) if np.all(zw == zw.flat[0]) else zw


def run_dspsim(case, *, pair_saturation=None, requant=None):
    """Call the dspsim kernel for a golden case with the engine's keywords."""
    pair_saturation = case["pair_saturation"] if pair_saturation is None else pair_saturation
    kw = dict(input_zero_point=int(case["input_zero_point"]),
              weight_zero_point=weight_zero_point(case),
              output_zero_point=int(case["output_zero_point"]),
              input_scale=float(case["input_scale"]),
              weight_scale=scalar_or_array(case["weight_scale"], "f"),
              output_scale=float(case["output_scale"]),
              requant=requant or case["requant"], out_dtype=case["out_dtype"])
    if case["relu"]:  # FBGEMM's fused ReLU: the lower clamp is the output zero point
        kw["act_min"] = int(case["output_zero_point"])
    if pair_saturation:
        kw["accumulator"] = dspsim.Accumulator(pair_saturation=True)
    op = case["op"]
    if op == "fully_connected":
        return dspsim.fully_connected(case["x"], case["w"], case["bias"], **kw)
    t, b, l, r = case["pads"]
    geo = dict(stride=tuple(case["stride"]), dilation=tuple(case["dilation"]), padding=((t, b), (l, r)))
    if op == "conv2d":
        return dspsim.conv2d(case["x"], case["w"], case["bias"], **geo, **kw)
    return dspsim.depthwise_conv2d(case["x"], case["w"], case["bias"], depth_multiplier=case["depth_multiplier"],
                                   **geo, **kw)


def mismatch_report(got, want):
    d = got.astype(np.int64) - want.astype(np.int64)
    bad = np.flatnonzero(d)
    if not bad.size:
        return ""
    i = np.unravel_index(bad[0], d.shape)
    return (f"{bad.size}/{d.size} mismatches, max |diff| {np.abs(d).max()} LSB, first at {i}: "
            f"got {got[i]}, want {want[i]}")


@pytest.mark.parametrize("name, cid", PARAMS)
def test_kernel_matches_engine_bit_exactly(name, cid):
    case = CASES[name][cid]
    if case["requant"] == "onednn":
        pytest.skip("torch x86 engine conv runs oneDNN (zero point before rounding); dspsim has no such scheme")
    if np.ndim(weight_zero_point(case)):
        try:
            got = run_dspsim(case)
        except ValueError as e:
            if "weight_zero_point" in str(e):
                pytest.xfail(f"dspsim takes one weight zero point; ORT accepts one per column ({e})")
            raise
    else:
        got = run_dspsim(case)
    want = case["out"]
    assert got.dtype == want.dtype and got.shape == want.shape
    report = mismatch_report(got, want)
    gap = [msg for key, msg in KNOWN_GAPS.items() if key in cid and case["requant"] == "fbgemm"]
    if report and gap:
        pytest.xfail(f"{gap[0]}: {report}")
    assert not report, report


SATURATING = [pytest.param(name, cid, id=f"{name}:{cid}") for name in ("fbgemm", "fbgemm_avx2")
              for cid, c in CASES[name].items() if c["pair_saturation"] and c["pair_saturation_changes"]]


def test_saturating_cases_exist_on_both_isas():
    names = {p.values[0] for p in SATURATING}
    assert names == {"fbgemm", "fbgemm_avx2"}
    native = {p.values[1] for p in SATURATING if p.values[0] == "fbgemm"}
    assert native and all(cid.startswith(("dw_", "sat_dw_")) for cid in native)


@pytest.mark.parametrize("name, cid", SATURATING)
def test_fbgemm_output_needs_pair_saturation(name, cid):
    """Without the vpmaddubsw model dspsim's exact sums disagree with the engine on these cases."""
    case = CASES[name][cid]
    got = run_dspsim(case, pair_saturation=False)
    assert np.count_nonzero(got != case["out"]) > 0


@pytest.mark.parametrize("name", ["fbgemm", "fbgemm_avx2"])
def test_pair_saturation_is_harmless_where_pairs_fit_int16(name):
    case = CASES[name]["nosat_fc_moderate"]
    assert np.array_equal(run_dspsim(case, pair_saturation=True), case["out"])
    assert np.array_equal(run_dspsim(case, pair_saturation=False), case["out"])


def test_fbgemm_rounds_ties_to_even_before_adding_the_zero_point():
    """fc_ties: multiplier 2^-4, bias an integer multiple of act_times_w, zp 65 (odd) -> ties flip."""
    case = CASES["fbgemm"]["fc_ties"]
    k = case["bias"].astype(np.float64) / (np.float64(case["input_scale"]) * np.float64(case["weight_scale"]))
    int_bias = dict(case, bias=np.rint(k).astype(np.int32))
    assert np.array_equal(run_dspsim(int_bias, requant="onnxruntime"), case["out"])
    assert np.count_nonzero(run_dspsim(int_bias, requant="onnx-reference") != case["out"]) > 100


@pytest.mark.parametrize("op", ["matmul", "conv"])
def test_ort_and_onnx_reference_differ_only_on_ties(op):
    ort, ref = CASES[f"ort_{op}"], CASES[f"onnxref_{op}"]
    for cid in ort:
        d = np.count_nonzero(ort[cid]["out"] != ref[cid]["out"])
        if "ties" in cid or "2p24" in cid:
            assert d > 0, cid
        else:
            assert d == 0, cid


def test_float_accumulator_rounds_above_2p24():
    """acc = 16777217, multiplier 2^-25: float(acc) = 2^24 -> 0.5 -> 0 (ORT); ONNX reference -> 1."""
    ort, ref = CASES["ort_matmul"]["matmul_float_acc_above_2p24"], CASES["onnxref_matmul"]["matmul_float_acc_above_2p24"]
    assert ort["out"][0, 0] == 0 and ref["out"][0, 0] == 1
    assert run_dspsim(ort)[0, 0] == 0
    assert run_dspsim(ref)[0, 0] == 1
