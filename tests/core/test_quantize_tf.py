"""TensorFlow QuantizeV2 / Dequantize: hand-derived TF vectors, the oracle, refusals."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dspsim import dequantize, quantize
from dspsim import oracle as R

F = np.float32
TYPES = ["qint8", "quint8", "qint16", "quint16", "qint32"]
MODES = ["MIN_COMBINED", "MIN_FIRST", "SCALED"]


def q1(x, lo, hi, T, **kw):
    return quantize(np.array(x, F), lo, hi, T, **kw)


# --------------------------------------------------------------------------------------------
# SEMANTICS section 9, "TF QuantizeV2" (verified against TF 2.21)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("x, lo, hi, T, kw, expected", [
    ([0.0, 1.0, -1.0, 1 / 255], -1, 1, "qint8", {}, [-1, 127, -128, 0]),
    ([127.5, 128.5, 0.5], 0, 255, "qint8", {}, [-1, 1, -128]),
    ([127.5, 128.5, 0.5], 0, 255, "quint8", {}, [128, 129, 1]),
    ([3.0, 6.0, 0.0588235], 0, 6, "quint8", {}, [128, 255, 2]),
    ([0.5], 0.5, 1.0, "quint8", {}, [128]),
    ([127.5], 0, 255, "quint8", {"mode": "MIN_FIRST"}, [128]),
    ([127.5, 0.5], 0, 255, "qint8", {"mode": "MIN_FIRST"}, [0, -127]),
    ([0.0, 1.0, -1.0, 0.5], -1, 1, "quint8", {"mode": "MIN_FIRST"}, [128, 255, 0, 192]),
    ([2.5, -2.5, -0.5], -128, 127, "qint8", {"mode": "SCALED"}, [3, -3, -1]),
    ([2.5, -2.5, -0.5], -128, 127, "qint8", {"mode": "SCALED", "round_mode": "HALF_TO_EVEN"}, [2, -2, 0]),
    ([127.0, -128.0], -128, 127, "qint8", {"mode": "SCALED", "narrow_range": True}, [126, -127]),
    ([9.0, 0.05], -10, 9, "qint8", {"mode": "SCALED"}, [115, 1]),
    ([0.0], 0, 1, "quint8", {"mode": "SCALED", "narrow_range": True}, [1]),
    ([1.0], -1, 1, "qint32", {}, [-2147483648]),
    ([1.0], -1, 1, "qint32", {"mode": "SCALED"}, [-2147483648]),
    ([1.0], -1, 1, "qint32", {"mode": "MIN_FIRST"}, [2147483520]),
])
def test_tf_quantize_matches_hand_derived_tf_vectors(x, lo, hi, T, kw, expected):
    assert q1(x, lo, hi, T, **kw).output.tolist() == expected


def test_min_combined_zero_is_off_grid_and_dequantizes_to_minus_half_step():
    q, lo, hi = q1([0.0], -1, 1, "qint8")
    assert float(dequantize(q, lo, hi)[0]) == -0.0039215087890625


def test_min_combined_scale_one_ties_dequantize_to_neighbours():
    q, lo, hi = q1([127.5, 128.5, 0.5], 0, 255, "qint8")
    assert dequantize(q, lo, hi).tolist() == [127.0, 129.0, 0.0]


def test_range_adjustment_returns_range_containing_zero():
    res = q1([0.5], 0.5, 1.0, "quint8")
    assert (res.output_min, res.output_max) == (F(0.0), F(1.0))
    res = q1([0.0], 0.0, 0.001, "quint8")
    assert res.output_max == F(0.01)


def test_min_first_dequantize_of_zero_code_is_not_zero():
    q, lo, hi = q1([0.0], -1, 1, "quint8", mode="MIN_FIRST")
    assert q.tolist() == [128]
    assert dequantize(q, lo, hi, mode="MIN_FIRST")[0] == F(0.007843137)


def test_scaled_narrow_returns_rederived_range():
    res = q1([0.0], -128, 127, "qint8", mode="SCALED", narrow_range=True)
    assert (res.output_min, res.output_max) == (F(-128.0), F(128.0))
    res = q1([0.0], -10, 9, "qint8", mode="SCALED")
    assert (res.output_min, res.output_max) == (F(-10.0), F(9.921875))
    res = q1([0.0], 0, 1, "quint8", mode="SCALED", narrow_range=True)
    assert res.output_min == F(0.003921569)


def test_scaled_signed_with_zero_min_uses_negative_range():
    res = q1([0.0], 0, 6, "qint8", mode="SCALED")
    assert (res.output_min, res.output_max) == (F(-6.047244), F(6.0))


def test_scaled_unsigned_empty_positive_side_flushes_to_zero():
    res = q1([-2.0], -3, -1, "quint8", mode="SCALED", narrow_range=True, ensure_minimum_range=0)
    assert res.output.tolist() == [0]
    assert (res.output_min, res.output_max) == (F(0.0), F(7.493777e-37))
    assert dequantize(res.output, res.output_min, res.output_max, mode="SCALED", narrow_range=True).tolist() == [0.0]


def test_unsigned_min_combined_rounds_half_up_through_float_add():
    # y = 0.49999997f; y + 0.5f rounds to 1.0f in float32, so the code is 1, not 0
    lo, hi = 0.0, 255.0
    assert q1([0.49999997], lo, hi, "quint8").output.tolist() == [1]


def test_per_channel_axis_gives_array_ranges_and_length_one_axis_is_per_tensor():
    x = np.full((2, 3), 0.5, F)
    res = quantize(x, [-1, -2, -3], [1, 2, 3], "qint8", axis=1)
    assert res.output.tolist() == [[63, 31, 21]] * 2
    assert res.output_min.dtype == np.float32 and res.output_min.shape == (3,)
    res = quantize(np.full((2, 1), 0.5, F), [-1.0], [1.0], "qint8", axis=-1)
    assert np.ndim(res.output_min) == 0 and isinstance(res.output_min, np.float32)
    assert res.output.tolist() == [[63], [63]]


def test_infinities_saturate_in_every_mode():
    for mode in MODES:
        assert q1([np.inf, -np.inf], -1, 1, "qint8", mode=mode).output.tolist() == [127, -128], mode
        assert q1([np.inf, -np.inf], -1, 1, "quint16", mode=mode).output.tolist() == [65535, 0], mode


def test_subnormal_input_reads_as_zero():
    sub = np.float32(1e-40)
    assert q1([sub], -1, 1, "qint8").output.tolist() == q1([0.0], -1, 1, "qint8").output.tolist()
    assert q1([sub], 0, 1e-38, "quint8", mode="SCALED", ensure_minimum_range=0).output.tolist() == [0]


def test_result_unpacks_and_has_type_dtype():
    for T, dt in zip(TYPES, [np.int8, np.uint8, np.int16, np.uint16, np.int32]):
        q, lo, hi = q1([0.25], -1, 1, T)
        assert q.dtype == dt and isinstance(lo, np.float32) and isinstance(hi, np.float32)


# --------------------------------------------------------------------------------------------
# the oracle, on random values, ties and extreme ranges
# --------------------------------------------------------------------------------------------
f32s = st.floats(width=32, allow_nan=False, allow_infinity=False)
finite_range = st.one_of(
    st.floats(-1e4, 1e4),
    st.floats(-1e-30, 1e-30),
    st.sampled_from([0.0, -1.0, 1.0, 255.0, 65535.0, -128.0, 127.0, 6.0, 1e30, -1e30, 2**31]),
)


@st.composite
def tf_case(draw):
    T = draw(st.sampled_from(TYPES))
    mode = draw(st.sampled_from(MODES))
    round_mode = draw(st.sampled_from(["HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN"])) if mode == "SCALED" \
        else "HALF_AWAY_FROM_ZERO"
    a, b = sorted([draw(finite_range), draw(finite_range)])
    emr = draw(st.sampled_from([0.01, 0.0, 1e-6, 0.5, 2.0]))
    lo, hi = float(F(a)), float(F(b))
    span = max(hi - lo, 1.0)
    ties = [float(F(k + 0.5)) for k in draw(st.lists(st.integers(-300, 70000), max_size=6))]
    inside = draw(st.lists(st.floats(lo - 0.25 * span, hi + 0.25 * span), max_size=12))
    anywhere = draw(st.lists(st.one_of(f32s, st.sampled_from([np.inf, -np.inf, lo, hi, 0.0])), max_size=6))
    x = np.array(ties + inside + anywhere, F)
    return T, mode, round_mode, draw(st.booleans()), lo, hi, emr, x


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tf_case())
def test_quantize_matches_oracle(case):
    T, mode, round_mode, narrow, lo, hi, emr, x = case
    codes, rmin, rmax = R.tf_quantize(x.tolist(), lo, hi, T, mode, round_mode, narrow, emr)
    if any(c is None for c in codes):
        with pytest.raises(ValueError, match="quantize"):
            quantize(x, lo, hi, T, mode=mode, round_mode=round_mode, narrow_range=narrow, ensure_minimum_range=emr)
        return
    q, omin, omax = quantize(x, lo, hi, T, mode=mode, round_mode=round_mode, narrow_range=narrow,
                             ensure_minimum_range=emr)
    assert q.astype(np.int64).tolist() == codes
    assert (Fraction(float(omin)), Fraction(float(omax))) == (rmin, rmax)
    y = dequantize(q, omin, omax, mode=mode, narrow_range=narrow)
    expected = R.tf_dequantize(codes, rmin, rmax, T, mode, narrow)
    for got, want in zip(y.tolist(), expected):
        if want is not None:
            assert Fraction(got) == want


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tf_case(), st.integers(1, 4), st.data())
def test_per_channel_quantize_is_per_slice_quantize(case, channels, data):
    T, mode, round_mode, narrow, lo, hi, emr, x = case
    if mode == "MIN_FIRST":
        mode = "MIN_COMBINED"
    extra = data.draw(st.lists(st.floats(0, 10), min_size=channels, max_size=channels))
    los = np.array([lo - e for e in extra], F)
    his = np.array([hi + e for e in extra], F)
    xx = np.resize(np.concatenate([x, [0.0]]).astype(F), (3, channels, 2))
    kw = dict(mode=mode, round_mode=round_mode, narrow_range=narrow, ensure_minimum_range=emr)
    expect = [R.tf_quantize(xx[:, c, :].reshape(-1).tolist(), float(los[c]), float(his[c]), T,
                            mode, round_mode, narrow, emr) for c in range(channels)]
    if any(None in e[0] for e in expect):
        with pytest.raises(ValueError):
            quantize(xx, los, his, T, axis=1, **kw)
        return
    q, omin, omax = quantize(xx, los, his, T, axis=1, **kw)
    for c in range(channels):
        assert q[:, c, :].astype(np.int64).reshape(-1).tolist() == expect[c][0]
        if channels > 1:
            assert (Fraction(float(omin[c])), Fraction(float(omax[c]))) == expect[c][1:]
    y = dequantize(q, omin, omax, mode=mode, narrow_range=narrow, axis=1)
    for c in range(channels):
        want = R.tf_dequantize(expect[c][0], *expect[c][1:], T, mode, narrow, per_tensor=channels == 1)
        assert [Fraction(v) for v in y[:, c, :].reshape(-1).tolist()] == want


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TYPES), st.sampled_from(MODES), st.booleans(), finite_range, finite_range, st.data())
def test_dequantize_matches_oracle_on_any_range(T, mode, narrow, a, b, data):
    from dspsim.dtypes import TF_TYPES
    t = TF_TYPES[T]
    lo, hi = float(F(min(a, b))), float(F(max(a, b)))
    q = np.array(data.draw(st.lists(st.integers(t.min, t.max), min_size=1, max_size=20)), dtype=t.dtype)
    y = dequantize(q, lo, hi, mode=mode, narrow_range=narrow)
    for got, want in zip(y.tolist(), R.tf_dequantize(q.astype(np.int64).tolist(), lo, hi, T, mode, narrow)):
        if want is not None and not R.quantize._is_inf(want):
            assert Fraction(got) == want


# --------------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, exc, rule", [
    (dict(round_mode="HALF_TO_EVEN"), ValueError, "HALF_TO_EVEN"),
    (dict(min_range=1.0, max_range=-1.0), ValueError, "max_range must be >= min_range"),
    (dict(min_range=[-1.0, -1.0], max_range=[1.0, 1.0]), ValueError, "slices"),
    (dict(mode="MIN_FIRST", axis=1, min_range=[-1.0] * 3, max_range=[1.0] * 3), ValueError, "MIN_FIRST"),
    (dict(T="int4"), ValueError, "unknown T"),
    (dict(mode="MAX_FIRST"), ValueError, "unknown mode"),
    (dict(round_mode="HALF_UP"), ValueError, "unknown round_mode"),
    (dict(min_range=np.nan), ValueError, "finite"),
    (dict(max_range=np.inf), ValueError, "finite"),
    (dict(x=np.array([0.5, np.nan], F)), ValueError, "NaN"),
    (dict(x=np.array([1, 2])), TypeError, "floating-point"),
    (dict(axis=2), ValueError, "out of bounds"),
    (dict(narrow_range=1), TypeError, "bool"),
    (dict(min_range=0.0, max_range=0.0, ensure_minimum_range=0.0), ValueError, "scale overflows"),
])
def test_quantize_refuses(kwargs, exc, rule):
    args = dict(x=np.zeros((2, 3), F), min_range=-1.0, max_range=1.0, T="qint8")
    args.update(kwargs)
    with pytest.raises(exc, match=rule) as info:
        quantize(**args)
    assert str(info.value).startswith("quantize:")


def test_min_first_empty_range_is_defined():
    # MIN_FIRST sets its scale to 0 when max == min: every finite x maps to the lowest code
    assert q1([0.0, 3.0], 0, 0, "qint8", mode="MIN_FIRST", ensure_minimum_range=0).output.tolist() == [-128, -128]


@pytest.mark.parametrize("kwargs, exc, rule", [
    (dict(q=np.array([1.5])), TypeError, "integer"),
    (dict(q=np.array([1], np.int64)), TypeError, "infer T"),
    (dict(q=np.array([300]), T="quint8"), ValueError, r"\[0, 255\]"),
    (dict(min_range=[-1.0, -1.0]), ValueError, "slices"),
    (dict(mode="MIN_FIRST", axis=0, q=np.zeros(3, np.int8), min_range=[-1.0] * 3, max_range=[1.0] * 3),
     ValueError, "MIN_FIRST"),
    (dict(max_range=np.inf), ValueError, "finite"),
])
def test_dequantize_refuses(kwargs, exc, rule):
    args = dict(q=np.zeros(3, np.int8), min_range=-1.0, max_range=1.0)
    args.update(kwargs)
    with pytest.raises(exc, match=rule) as info:
        dequantize(**args)
    assert str(info.value).startswith("dequantize:")


def test_dequantize_T_override_reads_wide_arrays():
    q = np.array([0, 255], np.int64)
    assert dequantize(q, 0.0, 255.0, T="quint8").tolist() == [0.0, 255.0]


def test_scaled_qint32_per_tensor_dequantize_wraps_top_codes_per_channel_does_not():
    # per tensor TF reads q as int(float(q)): float(2^31 - 64) = 2^31 truncates to INT32_MIN (TF 2.21)
    q = np.array([[2147483647, 2147483600], [2147483584, -2147483648], [2147483583, 5]], np.int32)
    per_tensor = dequantize(q, -1.0, 1.0, mode="SCALED")
    assert per_tensor[:2].tolist() == [[-1.0, -1.0], [-1.0, -1.0]]
    assert per_tensor[2].tolist() == [F(0.99999994), F(2.3283064365386963e-09)]
    per_channel = dequantize(q, [-1.0, -2.0], [1.0, 2.0], mode="SCALED", axis=1)
    assert per_channel[:2].tolist() == [[1.0, 2.0], [1.0, -2.0]]


def test_range_check_reads_subnormals_as_zero():
    # max < min only through subnormals: TF compares under DAZ and accepts
    res = quantize(np.zeros(2, F), -1e-40, -2e-40, "quint8", mode="SCALED", ensure_minimum_range=1e-38)
    assert res.output.tolist() == [0, 0]


@pytest.mark.parametrize("x", [0.25, 0.0, -1.0e-33])
def test_min_first_range_whose_scale_overflows_float32_is_refused(x):
    """[-3.4e-32, 0] with ensure_minimum_range=0: qint32's (2^32 - 1) / range overflows float32, so TF's offset
    round(min * inf) is infinite and no value has a defined code, even where a clamp would give one (found by
    hypothesis in CI: 0.25 came out as 2147483520)."""
    lo, hi = -3.4268681346951294e-32, 0.0
    codes, _, _ = R.tf_quantize([x], lo, hi, "qint32", "MIN_FIRST", "HALF_AWAY_FROM_ZERO", False, 0.0)
    assert codes == [None]
    with pytest.raises(ValueError, match="quantize: the range is too small for qint32"):
        quantize(np.array([x], np.float32), lo, hi, "qint32", mode="MIN_FIRST", ensure_minimum_range=0.0)
