"""Power-of-two (Q-format) quantization: frac-bit choice, every tie rule, saturation, the oracle."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dequantize_pof2, pof2_frac_bits, quantize_pof2
from dspsim import oracle as R
from dspsim.fixedpoint import Rounding

F = np.float32
RULES = [r.name.lower() for r in Rounding]


@pytest.mark.parametrize("max_abs, kw, f", [
    (1.0, {}, 6),                        # 1.0 * 2^7 = 128 > 127
    (0.99, {}, 7),                       # 126.72 fits
    (127.0, {}, 0),
    (127.5, {}, -1),
    (300.0, {}, -2),                     # 75 fits, 150 does not
    (1.0, {"bits": 6}, 4),               # codes +-31
    (np.array([-1.0, 0.5]), {}, 6),      # narrow: -64 >= -127, -128 would not be
    (np.array([-1.0, 0.5]), {"narrow_range": False}, 7),
    (np.array([0.25, -0.1]), {"bits": 16}, 16),  # 0.25 * 2^17 = 32768 > 32767
    (0.0, {}, 7),                        # zero range: Q0.(bits-1)
    (np.zeros(5), {"bits": 12}, 11),
    (2.0**-20, {}, 26),
])
def test_pof2_frac_bits_is_the_largest_that_does_not_saturate(max_abs, kw, f):
    assert pof2_frac_bits(max_abs, **kw) == f


@pytest.mark.parametrize("rounding, expected", [
    ("half_to_even", [-2, -2, -0, 0, 2, 2, 4]),
    ("half_up", [-2, -1, 0, 1, 2, 3, 4]),
    ("half_away_from_zero", [-3, -2, -1, 1, 2, 3, 4]),
    ("floor", [-3, -2, -1, 0, 1, 2, 3]),
    ("toward_zero", [-2, -1, 0, 0, 1, 2, 3]),
])
def test_quantize_pof2_tie_rules(rounding, expected):
    # f = 1: codes are x * 2 = -2.5 -1.5 -0.5 0.5 1.5 2.5 3.5
    x = np.array([-1.25, -0.75, -0.25, 0.25, 0.75, 1.25, 1.75], F)
    assert quantize_pof2(x, 1, rounding=rounding).tolist() == expected


def test_quantize_pof2_saturates_symmetric_by_default():
    x = np.array([10.0, -10.0, np.inf, -np.inf, 0.0], F)
    assert quantize_pof2(x, 4).tolist() == [127, -127, 127, -127, 0]
    assert quantize_pof2(x, 4, narrow_range=False).tolist() == [127, -128, 127, -128, 0]
    assert quantize_pof2(x, 2, bits=6).tolist() == [31, -31, 31, -31, 0]
    assert quantize_pof2(x, 2, bits=6).dtype == np.int8
    assert quantize_pof2(x, 2, bits=12).dtype == np.int16


def test_chosen_frac_bits_never_saturates_the_range():
    for m in (0.3, 1.0, 5.5, 127.0, 1e-3):
        f = pof2_frac_bits(m)
        q = quantize_pof2(np.array([m, -m]), f, rounding="half_away_from_zero")
        assert abs(int(q[0])) <= 127 and abs(int(q[1])) <= 127
        assert int(quantize_pof2(np.array([m]), f + 1, rounding="floor")[0]) >= 127  # one more bit saturates


def test_per_channel_frac_bits_along_axis():
    x = np.full((2, 3), 0.5, F)
    q = quantize_pof2(x, [1, 2, 3], axis=1)
    assert q.tolist() == [[1, 2, 4]] * 2
    assert dequantize_pof2(q, [1, 2, 3], axis=-1).tolist() == [[0.5] * 3] * 2


def test_dequantize_pof2_is_exact_scale():
    q = np.array([-127, -1, 0, 1, 127], np.int8)
    assert dequantize_pof2(q, 7).tolist() == [-127 / 128, -1 / 128, 0.0, 1 / 128, 127 / 128]
    assert dequantize_pof2(q, -3).tolist() == [-1016.0, -8.0, 0.0, 8.0, 1016.0]
    assert dequantize_pof2(q, 7).dtype == np.float32


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(RULES), st.integers(2, 32), st.integers(-20, 60), st.booleans(), st.data())
def test_quantize_pof2_matches_oracle(rule, bits, f, narrow, data):
    ks = data.draw(st.lists(st.integers(-(2**33), 2**33), max_size=6))
    ties = [float(F((k + 0.5) * 2.0**-f)) for k in ks]
    any32 = data.draw(st.lists(st.floats(width=32, allow_nan=False), max_size=6))
    near = data.draw(st.lists(st.floats(-(2.0**bits), 2.0**bits).map(lambda v: v * 2.0**-f), max_size=6))
    x = np.array(ties + any32 + near, np.float64)
    got = quantize_pof2(x, f, bits=bits, rounding=rule, narrow_range=narrow).astype(np.int64).tolist()
    assert got == [R.quantize_pof2(v, f, bits, rule, narrow) for v in x.tolist()]
    y = dequantize_pof2(np.array(got, np.int64), f)
    assert [Fraction(v) for v in y.tolist()] == [R.dequantize_pof2(q, f) for q in got]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=8), st.integers(2, 32), st.booleans())
def test_pof2_frac_bits_matches_oracle_search(values, bits, narrow):
    data = np.array(values)
    assert pof2_frac_bits(data, bits, narrow) == R.pof2_frac_bits(data.min(), data.max(), bits, narrow)
    m = abs(values[0])
    assert pof2_frac_bits(m, bits, narrow) == R.pof2_frac_bits(-m, m, bits, narrow)


@pytest.mark.parametrize("call, exc, rule", [
    (lambda: pof2_frac_bits(np.inf), ValueError, "finite"),
    (lambda: pof2_frac_bits(-1.0), ValueError, r"pof2_frac_bits: a scalar max_abs .* must be >= 0, got -1.0"),
    (lambda: pof2_frac_bits(-0.75), ValueError, ">= 0"),
    (lambda: pof2_frac_bits(1.0, bits=1), ValueError, r"\[2, 32\]"),
    (lambda: pof2_frac_bits(np.array([])), ValueError, "empty"),
    (lambda: pof2_frac_bits("1"), TypeError, "real"),
    (lambda: quantize_pof2(np.array([np.nan]), 3), ValueError, "NaN"),
    (lambda: quantize_pof2(np.array([1, 2]), 3), TypeError, "floating"),
    (lambda: quantize_pof2(np.array([1.0]), 3, rounding="stochastic"), ValueError, "rounding"),
    (lambda: quantize_pof2(np.array([1.0]), 3.5), TypeError, "frac_bits"),
    (lambda: quantize_pof2(np.ones((2, 3)), [1, 2], axis=1), ValueError, "length"),
    (lambda: quantize_pof2(np.ones((2, 3)), [1, 2, 3]), ValueError, "axis"),
    (lambda: quantize_pof2(np.array([1.0]), 3, bits=33), ValueError, r"\[2, 32\]"),
    (lambda: dequantize_pof2(np.array([1.0]), 3), TypeError, "integer"),
])
def test_pof2_refusals(call, exc, rule):
    with pytest.raises(exc, match=rule):
        call()


@pytest.mark.parametrize("rounding, want", [("floor", [-1, 0, 0]), ("toward_zero", [0, 0, 0]),
                                            ("half_up", [0, 0, 0]), ("half_away_from_zero", [0, 0, 0]),
                                            ("half_to_even", [0, 0, 0])])
def test_products_below_float64_range_round_by_their_sign(rounding, want):
    """x * 2^f = +-2^-2174 is not a float64: only its sign and non-zeroness decide the code."""
    x = np.array([-5e-324, 5e-324, -0.0])
    assert quantize_pof2(x, -1100, rounding=rounding).tolist() == want


@pytest.mark.parametrize("x, f, want", [(1e300, 1100, 127), (-1e300, 1100, -127), (2.0**-1074, 1100, 127),
                                        (3.0 * 2.0**-1000, 1001, 6), (-2.5 * 2.0**-1000, 1000, -2)])
def test_scales_beyond_float64_are_exact(x, f, want):
    assert quantize_pof2(np.array([x]), f).tolist() == [want]
