"""ADD, MUL, MEAN, PAD, CONCATENATION kernels against the oracle, hand-derived values and LiteRT."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle as R
from dspsim.kernels.arithmetic.elementwise import AddParams, add, mul, tflite_add_params, tflite_mul_multiplier
from dspsim.kernels.data_movement import concatenation, pad
from dspsim.kernels.reduce.mean import mean
from dspsim.kernels.activation import tflite_activation_range

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
scales = st.floats(1e-4, 1.0).map(np.float32)
zps = st.integers(-128, 127)


def _codes(rng, shape):
    return rng.integers(-128, 128, size=shape).astype(np.int8)


# ---------------------------------------------------------------------------- ADD
def test_add_params_of_the_golden_random_case():
    """docs: LiteRT case "random": M1=1147655471 S1=-1, M2=2^30 S2=0, MO=1156549804 SO=-19."""
    z = np.load(os.path.join(GOLDEN, "litert_add.npz"))
    p = tflite_add_params(z["random__input1_scale"], z["random__input2_scale"], z["random__output_scale"])
    assert (p.input1_multiplier, p.input1_shift, p.input2_multiplier, p.input2_shift) == (1147655471, -1, 1 << 30, 0)
    assert (p.output_multiplier, p.output_shift) == (1156549804, -19)


def test_add_matches_litert_reference_golden_vectors():
    z = np.load(os.path.join(GOLDEN, "litert_add.npz"))
    total = 0
    for case in z["cases"]:
        f = {k.split("__", 1)[1]: z[k] for k in z.files if k.startswith(f"{case}__")}
        p = tflite_add_params(f["input1_scale"], f["input2_scale"], f["output_scale"])
        act = str(f["activation"]).lower()
        lo, hi = tflite_activation_range(None if act == "none" else act, float(f["output_scale"]),
                                         int(f["output_zero_point"]))
        out = add(f["x1"], f["x2"], p, input1_zero_point=int(f["input1_zero_point"]),
                  input2_zero_point=int(f["input2_zero_point"]), output_zero_point=int(f["output_zero_point"]),
                  act_min=lo, act_max=hi)
        assert np.array_equal(out, f["out_ref"]), case
        total += out.size
    assert total > 40_000


@settings(max_examples=200, deadline=None)
@given(s1=scales, s2=scales, so=scales, z1=zps, z2=zps, zo=zps, seed=st.integers(0, 2**32 - 1))
def test_add_equals_oracle(s1, s2, so, z1, z2, zo, seed):
    if not 2 * max(s1, s2) / (2**20 * so) < 1:
        with pytest.raises(ValueError, match="must be < 1"):
            tflite_add_params(s1, s2, so)
        return
    rng = np.random.default_rng(seed)
    x1, x2 = _codes(rng, (3, 4)), _codes(rng, (1, 4))  # broadcast along the first axis
    p = tflite_add_params(s1, s2, so)
    rp = R.tflite_add_params(s1, s2, so)
    assert (p.left_shift, (p.input1_multiplier, p.input1_shift), (p.input2_multiplier, p.input2_shift),
            (p.output_multiplier, p.output_shift)) == rp
    out = add(x1, x2, p, input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=-100, act_max=120)
    want = [[R.tflite_add(int(x1[i, j]), int(x2[0, j]), z1, z2, zo, rp, -100, 120) for j in range(4)]
            for i in range(3)]
    assert out.tolist() == want


def test_add_of_equal_power_of_two_scales_is_the_exact_sum():
    """s1 = s2 = s_out = 0.5: every multiplier is a power of two, so out = clamp(x1 + x2) exactly."""
    p = tflite_add_params(0.5, 0.5, 0.5)
    x = np.array([-128, -1, 0, 1, 63, 127], np.int8)
    out = add(x, x[::-1].copy(), p, input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    assert out.tolist() == [-1, 62, 1, 1, 62, -1]


def test_add_refuses_mismatched_dtypes_and_shapes():
    p = tflite_add_params(0.1, 0.1, 0.1)
    kw = dict(input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    with pytest.raises(TypeError, match="add: x1 and x2 must have the same dtype"):
        add(np.zeros(3, np.int8), np.zeros(3, np.uint8), p, **kw)
    with pytest.raises(ValueError, match="add: shapes"):
        add(np.zeros(3, np.int8), np.zeros(4, np.int8), p, **kw)
    with pytest.raises(ValueError, match="input1_shift must be in"):
        add(np.zeros(3, np.int8), np.zeros(3, np.int8), AddParams(20, 1 << 30, 1, 1 << 30, 0, 1 << 30, -20), **kw)


# ---------------------------------------------------------------------------- MUL
def test_mul_multiplier_uses_float32_products():
    s1, s2, so = np.float32(0.1), np.float32(0.3), np.float32(0.7)
    m, s = tflite_mul_multiplier(s1, s2, so)
    assert (m, s) == R.quantize_multiplier(float(np.float32(np.float32(s1 * s2) / so)))


@settings(max_examples=200, deadline=None)
@given(s1=scales, s2=scales, so=scales, z1=zps, z2=zps, zo=zps, seed=st.integers(0, 2**32 - 1))
def test_mul_equals_oracle(s1, s2, so, z1, z2, zo, seed):
    m, s = tflite_mul_multiplier(s1, s2, so)
    if s > 30:
        return
    rng = np.random.default_rng(seed)
    x1, x2 = _codes(rng, (2, 5)), _codes(rng, (2, 1))
    out = mul(x1, x2, input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, multiplier=m, shift=s)
    want = [[R.tflite_mul(int(x1[i, j]), int(x2[i, 0]), z1, z2, zo, m, s, -128, 127) for j in range(5)]
            for i in range(2)]
    assert out.tolist() == want


def test_mul_ties_round_through_srdhm_toward_plus_infinity():
    """multiplier 0.5 (2^30, shift 0): products -1 and -3 are -0.5 and -1.5 -> 0 and -1 (SRDHM ties up)."""
    x1 = np.array([-1, -3, 1, 3], np.int8)
    x2 = np.ones(4, np.int8)
    out = mul(x1, x2, input1_zero_point=0, input2_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
    assert out.tolist() == [0, -1, 1, 2]


# ---------------------------------------------------------------------------- MEAN
@settings(max_examples=200, deadline=None)
@given(h=st.integers(1, 7), w=st.integers(1, 7), zi=zps, zo=zps, ratio=st.floats(0.01, 50.0),
       seed=st.integers(0, 2**32 - 1))
def test_mean_equals_oracle(h, w, zi, zo, ratio, seed):
    rng = np.random.default_rng(seed)
    x = _codes(rng, (2, h, w, 3))
    m, s = R.quantize_multiplier(ratio)
    out = mean(x, [1, 2], input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s)
    assert out.shape == (2, 3)
    want = [[R.tflite_mean([int(v) for v in x[b, :, :, c].ravel()], zi, zo, m, s, -128, 127) for c in range(3)]
            for b in range(2)]
    assert out.tolist() == want


def test_mean_sum_wraps_as_the_int32_accumulator():
    """2^17 int16 codes of 32767 sum past 2^31: TFLite's int32 accumulator wraps, and so does the mean's sum."""
    x = np.full((1, 1 << 17), 32767, np.int16)
    m, s = R.quantize_multiplier(0.7)
    out = mean(x, 1, input_zero_point=0, output_zero_point=0, multiplier=m, shift=s)
    assert out.tolist() == [R.tflite_mean([32767] * (1 << 17), 0, 0, m, s, -32768, 32767)]
    assert sum([32767] * (1 << 17)) >= 1 << 31  # the case wraps


def test_mean_of_three_truncates_the_multiplier():
    """n = 3: k = 1, M' = floor(2^31 / 3) (from M = 2^30 << 1); mean(1, 1, 2) = 4/3 -> 1; (2, 2, 3) -> 2."""
    x = np.array([[1, 1, 2], [2, 2, 3], [-1, -1, -2]], np.int8)
    out = mean(x, 1, input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=1)
    assert out.tolist() == [1, 2, -1]


def test_mean_keep_dims_and_negative_duplicate_axes():
    x = np.arange(24, dtype=np.int8).reshape(1, 2, 3, 4)
    a = mean(x, [-2, 1, 2], input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=1, keep_dims=True)
    assert a.shape == (1, 1, 1, 4)
    assert a.ravel().tolist() == [10, 11, 12, 13]


# ---------------------------------------------------------------------------- PAD, CONCATENATION
def test_pad_fills_the_given_value():
    x = np.array([[1, 2]], np.int8)
    assert pad(x, [[1, 0], [0, 2]], -5).tolist() == [[-5, -5, -5, -5], [1, 2, -5, -5]]
    with pytest.raises(ValueError, match="pad: paddings must be in"):
        pad(x, [[-1, 0], [0, 0]], 0)
    with pytest.raises(ValueError, match="pad: paddings must have shape"):
        pad(x, [[1, 0]], 0)


def test_concatenation_copies_codes_along_the_axis():
    a, b = np.zeros((1, 2, 3), np.int8), np.ones((1, 2, 1), np.int8)
    assert concatenation([a, b], -1).shape == (1, 2, 4)
    with pytest.raises(ValueError, match="concatenation"):
        concatenation([a, b], 1)


# ---------------------------------------------------------------------------- XNNPACK variants
def test_xnnpack_add_matches_litert_default_interpreter_golden_vectors():
    from dspsim.kernels.arithmetic.elementwise import xnnpack_add, xnnpack_add_params

    z = np.load(os.path.join(GOLDEN, "litert_add.npz"))
    checked = 0
    for case in z["cases"]:
        f = {k.split("__", 1)[1]: z[k] for k in z.files if k.startswith(f"{case}__")}
        try:
            p = xnnpack_add_params(f["input1_scale"], f["input2_scale"], f["output_scale"])
        except ValueError:  # not delegated: tiny_out's ratio is below 2^-10
            assert case == "tiny_out"
            continue
        act = str(f["activation"]).lower()
        lo, hi = tflite_activation_range(None if act == "none" else act, float(f["output_scale"]),
                                         int(f["output_zero_point"]))
        out = xnnpack_add(f["x1"], f["x2"], p, input1_zero_point=int(f["input1_zero_point"]),
                          input2_zero_point=int(f["input2_zero_point"]),
                          output_zero_point=int(f["output_zero_point"]), act_min=lo, act_max=hi)
        assert np.array_equal(out, f["out_xnnpack"]), case
        checked += 1
    assert checked == 8


def test_xnnpack_add_rounds_once_toward_plus_infinity():
    """Ratios 0.5: multipliers 2^20, shift 21, out = (x1 + x2) / 2 rounded half up."""
    from dspsim.kernels.arithmetic.elementwise import xnnpack_add, xnnpack_add_params

    p = xnnpack_add_params(0.5, 0.5, 1.0)
    assert (p.a_multiplier, p.b_multiplier, p.shift) == (1 << 20, 1 << 20, 21)
    x1 = np.array([1, -1, 3, -3], np.int8)
    out = xnnpack_add(x1, np.zeros(4, np.int8), p, input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    assert out.tolist() == [1, 0, 2, -1]  # 0.5 -> 1, -0.5 -> 0, 1.5 -> 2, -1.5 -> -1
    ref = add(x1, np.zeros(4, np.int8), tflite_add_params(0.5, 0.5, 1.0), input1_zero_point=0,
              input2_zero_point=0, output_zero_point=0)
    assert ref.tolist() == [1, -1, 2, -2]  # TFLite: ties away from zero


def test_xnnpack_convert_uses_an_8_bit_fraction_multiplier():
    from dspsim.kernels.quantize.xnnpack import xnnpack_convert

    x = np.array([10, -11, 0], np.int8)
    out = xnnpack_convert(x, input_scale=0.1, input_zero_point=0, output_scale=0.3, output_zero_point=0)
    # M = lrintf(256 / 3) = 85: 10 * 85 / 256 = 3.32 -> 3 (TFLite's MBQM gives 4, docs/engines.md)
    assert out.tolist() == [3, -4, 0]
    with pytest.raises(ValueError, match="does not delegate"):
        xnnpack_convert(x, input_scale=1.0, input_zero_point=0, output_scale=1000.0, output_zero_point=0)


def test_xnnpack_mean_rounds_in_float_with_ties_to_even():
    from dspsim.kernels.reduce.mean import xnnpack_mean

    x = np.array([[1, 2], [2, 3], [-1, -2]], np.int8)  # means 1.5, 2.5, -1.5
    out = xnnpack_mean(x, 1, input_scale=1.0, input_zero_point=0, output_scale=1.0, output_zero_point=0)
    assert out.tolist() == [2, 2, -2]
    ref = mean(x, 1, input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=1)
    assert ref.tolist() == [2, 3, -1]  # TFLite: SRDHM(sum, 2^30) ties toward +inf


def test_mul_with_scale_is_xnnpack_fp32():
    x = np.array([1, 3, 5, -1], np.int8)
    out = mul(x, np.ones(4, np.int8), input1_zero_point=0, input2_zero_point=0, output_zero_point=0,
              scale=np.float32(0.5))
    assert out.tolist() == [0, 2, 2, 0]  # 0.5, 1.5, 2.5, -0.5 to even
    with pytest.raises(ValueError, match="not both"):
        mul(x, x, input1_zero_point=0, input2_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0,
            scale=0.5)


def test_xnnpack_quantize_multiplies_by_the_reciprocal_and_rounds_to_even():
    """SEMANTICS 9 probes: x / s = 2.5 -> 2 (TFLite reference: 3); x * f32(1/s) = 127.5 -> -128 for -x."""
    from dspsim import tflite_quantize
    from dspsim.kernels.quantize.xnnpack import xnnpack_quantize

    x = np.array([1.25], np.float32)
    assert xnnpack_quantize(x, scale=0.5, zero_point=0).tolist() == [2]
    assert tflite_quantize(x, 0.5, 0).tolist() == [3]
    p = np.array([-0.273939937], np.float32)
    assert xnnpack_quantize(p, scale=np.float32(0.00214854861), zero_point=0).tolist() == [-128]
    assert tflite_quantize(p, np.float32(0.00214854861), 0).tolist() == [-127]


@settings(max_examples=200, deadline=None)
@given(s1=scales, s2=scales, so=scales, z1=zps, z2=zps, zo=zps, alpha=st.floats(0.01, 0.9),
       seed=st.integers(0, 2**32 - 1))
def test_xnnpack_kernels_equal_oracle(s1, s2, so, z1, z2, zo, alpha, seed):
    import dspsim.kernels as E

    rng = np.random.default_rng(seed)
    x1, x2 = _codes(rng, (2, 6)), _codes(rng, (2, 6))
    try:
        p = E.xnnpack_add_params(s1, s2, so)
    except ValueError:
        p = None
    if p is not None:
        rp = R.xnnpack_add_params(s1, s2, so)
        assert (p.a_multiplier, p.b_multiplier, p.shift) == rp
        out = E.xnnpack_add(x1, x2, p, input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo)
        assert out.ravel().tolist() == [R.xnnpack_add(int(a), int(b), z1, z2, zo, rp, -128, 127)
                                        for a, b in zip(x1.ravel(), x2.ravel())]
    sc = np.float32(np.float32(s1 * s2) / so)
    out = mul(x1, x2, input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, scale=sc)
    assert out.ravel().tolist() == [R.xnnpack_mul(int(a), int(b), z1, z2, zo, sc, -128, 127)
                                    for a, b in zip(x1.ravel(), x2.ravel())]
    if 2.0**-8 <= np.float32(s1 / so) <= 2.0**7:
        out = E.xnnpack_convert(x1, input_scale=s1, input_zero_point=z1, output_scale=so, output_zero_point=zo)
        assert out.ravel().tolist() == [R.xnnpack_q8_8(int(a), z1, zo, s1, so) for a in x1.ravel()]
        if abs(np.float32(np.float32(s1 / so) * np.float32(alpha))) >= 2.0**-8:
            out = E.xnnpack_leaky_relu(x1, alpha=alpha, input_scale=s1, input_zero_point=z1, output_scale=so,
                                       output_zero_point=zo)
            assert out.ravel().tolist() == [R.xnnpack_q8_8(int(a), z1, zo, s1, so, alpha) for a in x1.ravel()]
    out = E.xnnpack_mean(x1, 1, input_scale=s1, input_zero_point=z1, output_scale=so, output_zero_point=zo)
    assert out.tolist() == [R.xnnpack_mean([int(v) for v in row], z1, zo, s1, so) for row in x1]
    xf = (rng.normal(size=8) * 50 * s1).astype(np.float32)
    out = E.xnnpack_quantize(xf, scale=s1, zero_point=z1)
    assert out.tolist() == [R.xnnpack_quantize(float(v), s1, z1) for v in xf]
