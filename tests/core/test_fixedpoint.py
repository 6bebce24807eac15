"""The fixed-point primitives, pinned to the plain-Python oracle and to SEMANTICS section 9."""
import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import fixedpoint as fp
from dspsim import oracle as ref

INT32_MIN, INT32_MAX = fp.INT32_MIN, fp.INT32_MAX
RULES = [r.name.lower() for r in fp.Rounding]


def gemmlowp_edge_set():
    """int32 min/max +-{0,1,2} and +-2^i +-{0,1,2} for every bit: gemmlowp's test values."""
    vals = {INT32_MIN, INT32_MIN + 1, INT32_MIN + 2, INT32_MAX, INT32_MAX - 1, INT32_MAX - 2, 0, 1, -1, 2, -2}
    for i in range(31):
        for d in (-2, -1, 0, 1, 2):
            for v in ((1 << i) + d, -(1 << i) + d):
                if INT32_MIN <= v <= INT32_MAX:
                    vals.add(v)
    return np.array(sorted(vals), dtype=np.int64)


EDGE = gemmlowp_edge_set()
MULTIPLIERS = np.array([0, 1, 1 << 30, (1 << 30) + 1, (1 << 30) - 1, 1717986918, 1431655765,
                        INT32_MAX, INT32_MAX - 1, 1610612736], dtype=np.int64)
int32s = st.integers(INT32_MIN, INT32_MAX)


# ---------------------------------------------------------------- SEMANTICS 9, by hand
@pytest.mark.parametrize("a, b, expected", [
    (INT32_MIN, INT32_MIN, 2147483647),
    (INT32_MIN, INT32_MAX, -2147483647),
    (1 << 30, 1 << 30, 536870912),
    (1, 1 << 30, 1), (-1, 1 << 30, 0),
    (3, 1 << 30, 2), (-3, 1 << 30, -1),
])
def test_srdhm_hand_vectors_round_ties_toward_plus_infinity(a, b, expected):
    assert dspsim.saturating_rounding_doubling_high_mul(a, b) == expected


@pytest.mark.parametrize("x, e, expected", [
    (-5, 1, -3), (5, 1, 3), (-3, 1, -2), (-1, 1, -1), (-6, 2, -2),
    (INT32_MIN, 1, -1073741824), (INT32_MIN, 31, -1), (-(1 << 30), 31, -1), (1 << 30, 31, 1),
    (7, 0, 7), (-7, 0, -7),
])
def test_rounding_divide_by_pot_hand_vectors_round_ties_away_from_zero(x, e, expected):
    assert dspsim.rounding_divide_by_pot(x, e) == expected


@pytest.mark.parametrize("x, m, s, double, single", [
    (-6, 1 << 30, -1, -2, -1),
    (-2, 1 << 30, -1, -1, 0),
    (6, 1 << 30, -1, 2, 2),
    (-5, 1 << 30, 0, -2, -2),
    (2, 1717986918, -2, 1, 0),
])
def test_multiply_by_quantized_multiplier_hand_vectors(x, m, s, double, single):
    assert dspsim.multiply_by_quantized_multiplier(x, m, s, rounding="double") == double
    assert dspsim.multiply_by_quantized_multiplier(x, m, s, rounding="single") == single


@pytest.mark.parametrize("real, expected", [
    (0.5, (1073741824, 0)), (0.25, (1073741824, -1)), (1.0, (1073741824, 1)),
    (0.75, (1610612736, 0)), (3.0, (1610612736, 2)), (0.1, (1717986918, -3)),
    (1 / 3, (1431655765, -1)), (1 / 255, (1077952576, -7)),
    (1 - 2.0**-33, (1073741824, 1)), (2.0**-32, (1073741824, -31)), (2.0**-33, (0, 0)), (0.0, (0, 0)),
])
def test_quantize_multiplier_hand_vectors(real, expected):
    assert dspsim.quantize_multiplier(real) == expected


def test_quantize_multiplier_single_rounding_clamps_shift_above_30():
    assert dspsim.quantize_multiplier(2.0**40, rounding="single") == (INT32_MAX, 30)
    assert dspsim.quantize_multiplier(2.0**40, rounding="double") == (1 << 30, 41)


# ---------------------------------------------------------------- against the oracle, edge set
def test_srdhm_matches_oracle_on_edge_set():
    a, b = np.meshgrid(EDGE, EDGE, indexing="ij")
    got = dspsim.saturating_rounding_doubling_high_mul(a, b)
    sample = list(zip(a.ravel()[::7], b.ravel()[::7], got.ravel()[::7]))
    sample += [(int(x), int(y), int(g)) for x, y, g in zip(a.ravel()[:400], b.ravel()[:400], got.ravel()[:400])]
    for x, y, g in sample:
        assert g == ref.saturating_rounding_doubling_high_mul(int(x), int(y)), (x, y)


def test_rounding_divide_by_pot_matches_oracle_for_every_exponent():
    for e in range(32):
        got = dspsim.rounding_divide_by_pot(EDGE, e)
        for x, g in zip(EDGE, got):
            assert g == ref.rounding_divide_by_pot(int(x), e), (x, e)


@pytest.mark.parametrize("rounding", ["double", "single"])
def test_multiply_by_quantized_multiplier_matches_oracle_for_every_shift(rounding):
    for shift in range(-31, 31):
        x, m = np.meshgrid(EDGE[::3], MULTIPLIERS, indexing="ij")
        got = dspsim.multiply_by_quantized_multiplier(x, m, shift, rounding=rounding)
        for xi, mi, g in zip(x.ravel(), m.ravel(), got.ravel()):
            assert g == ref.multiply_by_quantized_multiplier(int(xi), int(mi), shift, rounding), (xi, mi, shift)


@pytest.mark.parametrize("rule", RULES)
def test_rounding_right_shift_matches_oracle_on_edge_set_and_every_shift(rule):
    big = np.concatenate([EDGE, EDGE * (1 << 20), [np.iinfo(np.int64).min, np.iinfo(np.int64).max]])
    for s in (0, 1, 2, 3, 7, 15, 16, 31, 32, 47, 62, 63):
        got = dspsim.rounding_right_shift(big, s, rule)
        for x, g in zip(big, got):
            assert g == ref.rounding_right_shift(int(x), s, rule), (x, s, rule)


def test_rounding_right_shift_tie_rules_on_halves():
    x = np.array([-5, -3, -1, 1, 3, 5])  # /2 -> -2.5 -1.5 -0.5 0.5 1.5 2.5
    expected = {
        "half_up": [-2, -1, 0, 1, 2, 3],
        "half_away_from_zero": [-3, -2, -1, 1, 2, 3],
        "half_to_even": [-2, -2, 0, 0, 2, 2],
        "floor": [-3, -2, -1, 0, 1, 2],
        "toward_zero": [-2, -1, 0, 0, 1, 2],
    }
    for rule, want in expected.items():
        assert dspsim.rounding_right_shift(x, 1, rule).tolist() == want, rule


@pytest.mark.parametrize("bits", [2, 3, 8, 16, 24, 31, 32, 33, 48, 63, 64])
def test_saturate_and_wrap_match_oracle(bits):
    vals = np.concatenate([EDGE, EDGE * 3 + 1, EDGE * (1 << 30), [np.iinfo(np.int64).min, np.iinfo(np.int64).max]])
    sat = dspsim.saturate(vals, bits)
    wr = dspsim.wrap(vals, bits)
    for v, s, w in zip(vals, sat, wr):
        assert s == ref.saturate(int(v), bits)
        assert w == ref.wrap(int(v), bits)


def test_int64_multiplier_variant_matches_oracle():
    rng = np.random.default_rng(1)
    x = rng.integers(-(1 << 47) + 1, 1 << 47, 2000)
    m = rng.integers(0, 1 << 31, 2000)
    m[:10] = [0x7FFF0000, 0x7FFF0000 - 1, INT32_MAX, 1 << 30, 0, 1, 0x7FFEFFFF, 0x7FFF8000, 1 << 15, (1 << 15) - 1]
    s = rng.integers(-31, 8, 2000)
    got = dspsim.multiply_by_quantized_multiplier_int64(x, m, s)
    for xi, mi, si, g in zip(x, m, s, got):
        assert g == ref.multiply_by_quantized_multiplier_int64(int(xi), int(mi), int(si))


# ---------------------------------------------------------------- against the oracle, random
@settings(max_examples=400, deadline=None)
@given(int32s, int32s)
def test_srdhm_matches_oracle_random(a, b):
    assert dspsim.saturating_rounding_doubling_high_mul(a, b) == ref.saturating_rounding_doubling_high_mul(a, b)


@settings(max_examples=400, deadline=None)
@given(int32s, st.integers(0, INT32_MAX), st.integers(-31, 30), st.sampled_from(["double", "single"]))
def test_multiply_by_quantized_multiplier_matches_oracle_random(x, m, s, rounding):
    got = dspsim.multiply_by_quantized_multiplier(x, m, s, rounding=rounding)
    assert got == ref.multiply_by_quantized_multiplier(x, m, s, rounding)


@settings(max_examples=400, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1), st.integers(0, 63), st.sampled_from(RULES))
def test_rounding_right_shift_matches_oracle_random(x, s, rule):
    assert dspsim.rounding_right_shift(x, s, rule) == ref.rounding_right_shift(x, s, rule)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.floats(1e-12, 1e12), st.floats(-1e6, -1e-9),
                 st.integers(-80, 80).map(lambda e: 2.0**e * (1 - 2.0**-33))))
def test_quantize_multiplier_matches_oracle_random(real):
    for rounding in ("double", "single"):
        assert dspsim.quantize_multiplier(real, rounding) == ref.quantize_multiplier(real, rounding)


def test_quantize_multiplier_reconstructs_the_real_value_to_31_bits():
    reals = np.geomspace(1e-9, 1e6, 501)
    m, s = dspsim.quantize_multiplier(reals)
    approx = m.astype(np.float64) * np.exp2(s.astype(np.float64) - 31)
    assert np.all(np.abs(approx - reals) <= reals * 2.0**-30)


# ---------------------------------------------------------------- arrays and per-channel axis
def test_per_channel_multiplier_broadcasts_along_axis():
    rng = np.random.default_rng(0)
    acc = rng.integers(-(1 << 20), 1 << 20, (4, 3, 5))
    m = np.array([1 << 30, 1717986918, INT32_MAX])
    s = np.array([-3, 0, 2])
    got = dspsim.multiply_by_quantized_multiplier(acc, m, s, axis=1)
    assert got.dtype == np.int32 and got.shape == acc.shape
    for idx in itertools.product(range(4), range(3), range(5)):
        c = idx[1]
        assert got[idx] == ref.multiply_by_quantized_multiplier(int(acc[idx]), int(m[c]), int(s[c]))


def test_scalar_inputs_give_python_ints():
    assert isinstance(dspsim.multiply_by_quantized_multiplier(100, 1 << 30, 0), int)
    assert isinstance(dspsim.rounding_right_shift(np.int64(5), 1), int)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("call, exc, text", [
    (lambda: dspsim.multiply_by_quantized_multiplier(1, 1 << 31, 0), ValueError, "multiplier must be in"),
    (lambda: dspsim.multiply_by_quantized_multiplier(1, -1, 0), ValueError, "multiplier must be in"),
    (lambda: dspsim.multiply_by_quantized_multiplier(1, 1 << 30, 31), ValueError, "shift must be in"),
    (lambda: dspsim.multiply_by_quantized_multiplier(1, 1 << 30, -32), ValueError, "shift must be in"),
    (lambda: dspsim.multiply_by_quantized_multiplier(1 << 31, 1 << 30, 0), ValueError, "acc must be in"),
    (lambda: dspsim.multiply_by_quantized_multiplier(1.5, 1 << 30, 0), TypeError, "acc must be an integer"),
    (lambda: dspsim.multiply_by_quantized_multiplier(1, 1 << 30, 0, rounding="triple"), ValueError, "rounding"),
    (lambda: dspsim.multiply_by_quantized_multiplier(np.zeros((2, 3), int), [1, 2], [0, 0], axis=1),
     ValueError, "axis 1 has length 3"),
    (lambda: dspsim.multiply_by_quantized_multiplier(np.zeros((2, 3), int), [1, 2, 3], 0, axis=2),
     ValueError, "out of bounds"),
    (lambda: dspsim.rounding_divide_by_pot(1, 32), ValueError, "exponent must be in"),
    (lambda: dspsim.rounding_right_shift(1, 64), ValueError, "shift must be in"),
    (lambda: dspsim.rounding_right_shift(1, 1, "nearest"), ValueError, "unknown rounding"),
    (lambda: dspsim.saturate(1, 1), ValueError, "bits must be in"),
    (lambda: dspsim.wrap(1, 65), ValueError, "bits must be in"),
    (lambda: dspsim.quantize_multiplier(float("nan")), ValueError, "finite"),
    (lambda: dspsim.quantize_multiplier("0.5"), TypeError, "real_multiplier"),
    (lambda: dspsim.saturating_rounding_doubling_high_mul(True, 1), TypeError, "bool"),
])
def test_bad_input_raises_a_clear_error_naming_the_function(call, exc, text):
    with pytest.raises(exc, match=text) as info:
        call()
    assert str(info.value).split(":")[0] in {
        "multiply_by_quantized_multiplier", "rounding_divide_by_pot", "rounding_right_shift", "saturate",
        "wrap", "quantize_multiplier", "saturating_rounding_doubling_high_mul"}


def test_oracle_f32_rounds_like_ieee_float32():
    rng = np.random.default_rng(7)
    vals = rng.standard_normal(3000) * np.exp2(rng.integers(-140, 120, 3000).astype(float))
    from fractions import Fraction
    for v in vals:
        assert ref.f32(float(v)) == Fraction(float(np.float32(v))), v


TFLITE_ROUND_EDGES = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994,
                      0.5 + 2.0**-53, -0.5 - 2.0**-53, 1 - 2.0**-53, 2.0**52 - 0.5, 2.0**52 + 1, -(2.0**52 + 1),
                      2.0**53 + 2, 1e300, -1e300, 5e-324, float(np.float32(2.4)) * 2.5]


@pytest.mark.parametrize("v", TFLITE_ROUND_EDGES)
def test_tflite_round_is_exact_std_round_ties_away_from_zero(v):
    # floor(|v| + 0.5) would round 0.5 - 2^-54 up to 1 and 2^52 + 1 to 2^52 + 2; std::round does neither
    assert fp.tflite_round(v) == ref.round_fraction(Fraction(v), "half_away_from_zero")


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=300, deadline=None)
def test_tflite_round_matches_oracle_random(v):
    assert fp.tflite_round(v) == ref.round_fraction(Fraction(v), "half_away_from_zero")


@pytest.mark.parametrize("v, exc", [(float("nan"), ValueError), (float("inf"), ValueError), ("1", TypeError),
                                    (True, TypeError)])
def test_tflite_round_refuses_what_has_no_integer(v, exc):
    with pytest.raises(exc, match="^tflite_round: v must be"):
        fp.tflite_round(v)
