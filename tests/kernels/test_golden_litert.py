"""dspsim's kernels against LiteRT's reference int8 kernels (golden vectors, numpy only at test time).

The vectors in tests/golden/litert_*.npz were produced by tests/golden/make_golden_litert.py: one-op
int8 models from the TF 2.21 converter with rewritten weights, scales and zero points, run by
``ai_edge_litert`` with ``OpResolverType.BUILTIN_REF``. They hold the integers and the float32
scales as stored in the flatbuffer; the requantization parameters are derived here, by TFLite's
rules (SEMANTICS 3), so a wrong product order or tie rule fails.

Findings pinned here (docs/engines.md, "LiteRT reference kernels"):

* CONV_2D, DEPTHWISE_CONV_2D, RELU, RELU6, ADD: ``MultiplyByQuantizedMultiplier`` with double rounding.
* FULLY_CONNECTED (per-tensor and per-channel): float requantization
  ``round(double(acc) * (double(s_in) * double(s_w) / double(s_out)))``, ties away from zero,
  and an out-of-int32 result becomes INT32_MIN (x86 ``cvttsd2si``).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import dspsim

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden")
INT32_MIN = -(1 << 31)


def _load(op):
    with np.load(os.path.join(GOLDEN, f"litert_{op}.npz")) as z:
        data = {k: z[k] for k in z.files}
    return {str(c): {k.split("__", 1)[1]: v for k, v in data.items() if k.startswith(f"{c}__")}
            for c in data["cases"]}


CASES = {op: _load(op) for op in ("fc", "conv", "dwconv", "relu", "relu6", "add")}


def _params(op, exclude=()):
    return [pytest.param(name, id=name) for name in CASES[op] if not any(e in name for e in exclude)]


def _haz(v):
    """std::round on doubles: ties away from zero (exact, no x + 0.5 rounding error)."""
    r = np.trunc(v)
    return r + np.sign(v) * (np.abs(v - r) >= 0.5)


def _act_range(activation, s_out, zo):
    """TFLite CalculateActivationRangeQuantized for int8: q(f) = zo + round(f32(f / s_out))."""
    q = lambda f: zo + int(_haz(float(np.float32(np.float32(f) / np.float32(s_out)))))  # noqa: E731
    lo, hi = -128, 127
    if activation in ("RELU", "RELU6"):
        lo = max(lo, q(0.0))
    if activation == "RELU6":
        hi = min(hi, q(6.0))
    if activation == "RELU_N1_TO_1":
        lo, hi = max(lo, q(-1.0)), min(hi, q(1.0))
    return lo, hi


def _quant_kwargs(c):
    return dict(input_zero_point=int(c["input_zero_point"]), output_zero_point=int(c["output_zero_point"]))


def _conv_multipliers(c):
    """Per channel: QuantizeMultiplier(double(s_in) * double(s_w[c]) / double(s_out))."""
    real = np.float64(c["input_scale"]) * c["weight_scale"].astype(np.float64) / np.float64(c["output_scale"])
    m, s = dspsim.quantize_multiplier(real)
    return np.asarray(m), np.asarray(s)


def _assert_same(got, c, what):
    ref = c["out_ref"]
    got = np.asarray(got)
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    bad = np.flatnonzero(got.astype(np.int64).ravel() != ref.astype(np.int64).ravel())
    assert bad.size == 0, (f"{what}: {bad.size}/{ref.size} mismatches; first at flat index {bad[0]}: "
                           f"dspsim {got.ravel()[bad[0]]}, LiteRT {ref.ravel()[bad[0]]}")


# ------------------------------------------------------------------------------------------------
# CONV_2D / DEPTHWISE_CONV_2D: fixed point, double rounding
# ------------------------------------------------------------------------------------------------
def _conv_call(op, c, **requant):
    lo, hi = _act_range(str(c["activation"]), c["output_scale"], int(c["output_zero_point"]))
    kw = dict(stride=tuple(int(v) for v in c["stride"]), padding=str(c["padding"]),
              dilation=tuple(int(v) for v in c["dilation"]), weight_zero_point=0, act_min=lo, act_max=hi,
              **_quant_kwargs(c), **requant)
    if op == "dwconv":
        return dspsim.depthwise_conv2d(c["x"], c["w"], c["bias"], depth_multiplier=int(c["depth_multiplier"]), **kw)
    return dspsim.conv2d(c["x"], c["w"], c["bias"], **kw)


@pytest.mark.parametrize("name", _params("conv"))
def test_conv2d_matches_litert_reference_with_double_rounding(name):
    c = CASES["conv"][name]
    m, s = _conv_multipliers(c)
    _assert_same(_conv_call("conv", c, multiplier=m, shift=s, rounding="double"), c, f"conv2d {name}")


@pytest.mark.parametrize("name", _params("dwconv"))
def test_depthwise_conv2d_matches_litert_reference_with_double_rounding(name):
    c = CASES["dwconv"][name]
    m, s = _conv_multipliers(c)
    _assert_same(_conv_call("dwconv", c, multiplier=m, shift=s, rounding="double"), c, f"depthwise_conv2d {name}")


@pytest.mark.parametrize("op", ["conv", "dwconv"])
def test_conv_scales_derive_the_litert_multipliers(op):
    """dspsim's own derivation from the float32 scales (requant="tflm") reproduces every case."""
    for name, c in CASES[op].items():
        got = _conv_call(op, c, input_scale=c["input_scale"], weight_scale=c["weight_scale"],
                         output_scale=c["output_scale"], requant="tflm")
        _assert_same(got, c, f"{op} {name} (scales)")


def test_conv_multiplier_uses_the_double_product_not_the_float32_product():
    """In the crafted cases every bias sits where the float32 product f32(s_in*s_w) gives another M."""
    for op, name in (("conv", "k1_s1_crafted_product_order"), ("dwconv", "m3_same_crafted_product_order")):
        c = CASES[op][name]
        real = np.float32(c["input_scale"] * c["weight_scale"]).astype(np.float64) / np.float64(c["output_scale"])
        m, s = dspsim.quantize_multiplier(real)
        got = _conv_call(op, c, multiplier=np.asarray(m), shift=np.asarray(s), rounding="double")
        assert np.all(np.asarray(got) != c["out_ref"]), (op, name)


# ------------------------------------------------------------------------------------------------
# FULLY_CONNECTED: LiteRT's reference kernel requantizes in double precision float
# ------------------------------------------------------------------------------------------------
def _fc_acc(c):
    x = c["x"].astype(np.int64) - int(c["input_zero_point"])
    w = c["w"].astype(np.int64)
    if c["weight_scale"].size == 1:  # per-channel kernels ignore the weight zero point (spec: 0)
        w = w - int(c["weight_zero_point"])
    return x @ w.T + c["bias"].astype(np.int64)


def _fc_float_reference(c):
    """round(double(acc) * ((double(s_in) * double(s_w)) / double(s_out))), HAZ; |v| >= 2^31 -> INT32_MIN."""
    eff = np.float64(c["input_scale"]) * c["weight_scale"].astype(np.float64) / np.float64(c["output_scale"])
    v = _haz(_fc_acc(c).astype(np.float64) * eff)
    q = np.where(np.abs(v) >= 2.0 ** 31, INT32_MIN, v).astype(np.int64)
    lo, hi = _act_range(str(c["activation"]), c["output_scale"], int(c["output_zero_point"]))
    return np.clip(q + int(c["output_zero_point"]), lo, hi)


@pytest.mark.parametrize("name", _params("fc"))
def test_fc_vectors_follow_the_double_float_requantization(name):
    """The finding itself, checked with numpy int64/float64 only (no dspsim)."""
    c = CASES["fc"][name]
    _assert_same(_fc_float_reference(c), c, f"numpy FC float formula {name}")


@pytest.mark.parametrize("name", ["pt_large_ties", "pc_large_ties", "pc_large_random"])
def test_fc_reference_is_not_multiply_by_quantized_multiplier(name):
    """dspsim's fixed-point FC (MBQM, double rounding) disagrees with LiteRT's reference FC here."""
    c = CASES["fc"][name]
    s_in, s_w, s_out = c["input_scale"], c["weight_scale"], np.float64(c["output_scale"])
    if s_w.size == 1:  # GetQuantizedConvolutionMultipler: float32 product
        real = np.float64(np.float32(s_in * s_w[0])) / s_out
    else:
        real = np.float64(s_in) * s_w.astype(np.float64) / s_out
    m, s = dspsim.quantize_multiplier(real)
    got = dspsim.fully_connected(c["x"], c["w"], c["bias"], weight_zero_point=int(c["weight_zero_point"]),
                                 multiplier=np.asarray(m), shift=np.asarray(s), rounding="double", **_quant_kwargs(c))
    assert np.sum(np.asarray(got) != c["out_ref"]) > 0


@pytest.mark.parametrize("name", _params("fc"))
def test_fully_connected_matches_litert_reference(name):
    """requant="litert": LiteRT's float FC requantization, INT32_MIN on int32 overflow included."""
    c = CASES["fc"][name]
    lo, hi = _act_range(str(c["activation"]), c["output_scale"], int(c["output_zero_point"]))
    w_scale = c["weight_scale"] if c["weight_scale"].size > 1 else np.float32(c["weight_scale"][0])
    got = dspsim.fully_connected(c["x"], c["w"], c["bias"], weight_zero_point=int(c["weight_zero_point"]),
                                 input_scale=c["input_scale"], weight_scale=w_scale, output_scale=c["output_scale"],
                                 requant="litert", act_min=lo, act_max=hi, **_quant_kwargs(c))
    _assert_same(got, c, f"fully_connected {name}")


# ------------------------------------------------------------------------------------------------
# RELU / RELU6: M from double(f32(s_in / s_out)), double rounding
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["relu", "relu6"])
def test_relu_matches_litert_reference(kind):
    for name, c in CASES[kind].items():
        s_in, s_out = c["input_scale"], c["output_scale"]
        zo = int(c["output_zero_point"])
        m, s = dspsim.quantize_multiplier(float(np.float32(s_in / s_out)))
        lo, hi = _act_range("RELU6" if kind == "relu6" else "RELU", s_out, zo)
        got = dspsim.relu(c["x"], input_zero_point=int(c["input_zero_point"]), output_zero_point=zo,
                          multiplier=m, shift=s, act_min=lo, act_max=hi, rounding="double")
        _assert_same(got, c, f"relu {kind}/{name}")


def test_relu6_from_scales_matches_litert_reference():
    from dspsim.kernels import relu6

    for name, c in CASES["relu6"].items():
        got = relu6(c["x"], input_scale=float(c["input_scale"]), input_zero_point=int(c["input_zero_point"]),
                    output_scale=float(c["output_scale"]), output_zero_point=int(c["output_zero_point"]))
        _assert_same(got, c, f"relu6 (scales) {name}")


def test_relu_multiplier_comes_from_the_float32_quotient():
    """crafted_float_divide: M from the double quotient s_in/s_out gives other outputs."""
    for kind in ("relu", "relu6"):
        c = CASES[kind]["crafted_float_divide"]
        zo = int(c["output_zero_point"])
        m, s = dspsim.quantize_multiplier(float(c["input_scale"]) / float(c["output_scale"]))
        lo, hi = _act_range("RELU6" if kind == "relu6" else "RELU", c["output_scale"], zo)
        got = dspsim.relu(c["x"], input_zero_point=int(c["input_zero_point"]), output_zero_point=zo,
                          multiplier=m, shift=s, act_min=lo, act_max=hi)
        assert np.sum(np.asarray(got) != c["out_ref"]) > 0, kind


def test_activation_ranges_agree_with_dspsim():
    from dspsim.kernels import tflite_activation_range

    for op in ("fc", "conv", "dwconv", "add"):
        for name, c in CASES[op].items():
            act = str(c["activation"])
            want = _act_range(act, c["output_scale"], int(c["output_zero_point"]))
            got = tflite_activation_range(act.lower(), float(c["output_scale"]), int(c["output_zero_point"]))
            assert tuple(got) == want, (op, name)


# ------------------------------------------------------------------------------------------------
# ADD: TFLite's int8 Add (left shift 20, three multipliers), checked with dspsim's primitives
# ------------------------------------------------------------------------------------------------
def _mbqm(x, m, s):
    return dspsim.multiply_by_quantized_multiplier(np.asarray(x, np.int64), m, s, rounding="double").astype(np.int64)


@pytest.mark.parametrize("name", _params("add"))
def test_add_matches_litert_reference_via_fixed_point_primitives(name):
    """out = clamp(MBQM(MBQM((x1-z1)<<20, M1, S1) + MBQM((x2-z2)<<20, M2, S2), MO, SO) + zo)."""
    c = CASES["add"][name]
    s1, s2, so = c["input1_scale"], c["input2_scale"], c["output_scale"]
    twice_max = float(np.float32(2 * max(s1, s2)))
    m1, sh1 = dspsim.quantize_multiplier(float(s1) / twice_max)
    m2, sh2 = dspsim.quantize_multiplier(float(s2) / twice_max)
    mo, sho = dspsim.quantize_multiplier(twice_max / float(np.float32((1 << 20) * so)))
    a = _mbqm((c["x1"].astype(np.int64) - int(c["input1_zero_point"])) << 20, m1, sh1)
    b = _mbqm((c["x2"].astype(np.int64) - int(c["input2_zero_point"])) << 20, m2, sh2)
    zo = int(c["output_zero_point"])
    lo, hi = _act_range(str(c["activation"]), so, zo)
    _assert_same(np.clip(_mbqm(a + b, mo, sho) + zo, lo, hi), c, f"add {name}")


@pytest.mark.parametrize("name", _params("add"))
def test_add_kernel_matches_litert_reference(name):
    elementwise = pytest.importorskip("dspsim.kernels.arithmetic.elementwise")
    c = CASES["add"][name]
    zo = int(c["output_zero_point"])
    lo, hi = _act_range(str(c["activation"]), c["output_scale"], zo)
    params = elementwise.tflite_add_params(float(c["input1_scale"]), float(c["input2_scale"]), float(c["output_scale"]))
    got = elementwise.add(c["x1"], c["x2"], params, input1_zero_point=int(c["input1_zero_point"]),
                          input2_zero_point=int(c["input2_zero_point"]), output_zero_point=zo, act_min=lo, act_max=hi)
    _assert_same(got, c, f"add kernel {name}")
