"""The textbook's quantized ReLU, done in float and done the DSP way, over all 256 int8 inputs.

int8 input with (s_x, z_x), uint8 output with (s_y, z_y)::

    y = z_y + (s_x / s_y) * (max(x, z_x) - z_x)

Here s_x = 0.01, z_x = -20, s_y = 0.3, z_y = 3, so k = s_x / s_y = 1/30 and the real value of
``k * d`` (d = max(x, z_x) - z_x) is an exact tie n + 1/2 whenever d = 15, 45, 75, 105 or 135.
"""
from fractions import Fraction

import numpy as np

import dspsim

S_X, Z_X, S_Y, Z_Y = 0.01, -20, 0.3, 3
X = np.arange(-128, 128).astype(np.int8)


def float_relu(x, s_x, z_x, s_y, z_y):
    """The textbook in float64: k = s_x / s_y, round half to even (``np.rint``), clamp to uint8."""
    d = np.maximum(x.astype(np.int64), z_x) - z_x
    return np.clip(z_y + np.rint((s_x / s_y) * d), 0, 255).astype(np.uint8)


def dsp_relu(x, s_x, z_x, s_y, z_y, rounding="double"):
    """The integer path: k as TFLite's Q31 multiplier and shift, then dspsim.relu requantizes."""
    m, shift = dspsim.quantize_multiplier(s_x / s_y, rounding)
    return dspsim.relu(x, input_zero_point=z_x, output_zero_point=z_y, multiplier=m, shift=shift,
                       out_dtype="uint8", rounding=rounding)


def exact_relu(x, s_x, z_x, s_y, z_y):
    """Real arithmetic (rationals of the decimal scales), with the tie (if any) reported."""
    k = Fraction(str(s_x)) / Fraction(str(s_y))
    out = []
    for v in x.tolist():
        r = k * (max(v, z_x) - z_x)
        out.append((r, r.denominator == 2))
    return out


def differing(a, b):
    return [(int(x), int(u), int(v)) for x, u, v in zip(X, a, b) if u != v]


def test_multiplier_and_shift_of_the_example():
    assert dspsim.quantize_multiplier(S_X / S_Y) == (1145324612, -4)  # 1145324612 * 2^-35 < 1/30
    assert Fraction(1145324612, 2**35) < Fraction(1, 30) < Fraction(1145324613, 2**35)


def test_float_and_dsp_double_rounding_differ_at_three_inputs():
    yf = float_relu(X, S_X, Z_X, S_Y, Z_Y)
    yd = dsp_relu(X, S_X, Z_X, S_Y, Z_Y)
    assert differing(yf, yd) == [(-5, 3, 4), (55, 5, 6), (115, 7, 8)]


def test_float_and_dsp_single_rounding_differ_at_two_other_inputs():
    yf = float_relu(X, S_X, Z_X, S_Y, Z_Y)
    ys = dsp_relu(X, S_X, Z_X, S_Y, Z_Y, "single")
    assert differing(yf, ys) == [(25, 5, 4), (85, 7, 6)]


def test_every_difference_is_an_exact_tie_and_each_path_breaks_ties_its_own_way():
    yf = float_relu(X, S_X, Z_X, S_Y, Z_Y)
    yd = dsp_relu(X, S_X, Z_X, S_Y, Z_Y)
    ys = dsp_relu(X, S_X, Z_X, S_Y, Z_Y, "single")
    exact = exact_relu(X, S_X, Z_X, S_Y, Z_Y)
    ties = [int(x) for x, (_, tie) in zip(X, exact) if tie]
    assert ties == [-5, 25, 55, 85, 115]  # d = 15, 45, 75, 105, 135
    for x, (r, tie), f, d, s in zip(X.tolist(), exact, yf, yd, ys):
        if not tie:  # away from ties all three agree with the correctly rounded real value
            assert f == d == s == Z_Y + round(r), x
        else:
            lo = Z_Y + int(r - Fraction(1, 2))
            assert f == lo + (lo - Z_Y) % 2  # float64: k*d lands on or below the tie -> to even
            assert d == lo + 1  # double rounding: SRDHM then RoundingDivideByPOT push the half up
            assert s == lo  # single rounding: M < 2^35/30 puts the product just below the tie


def test_negative_side_is_clamped_to_the_output_zero_point():
    yd = dsp_relu(X, S_X, Z_X, S_Y, Z_Y)
    assert np.all(yd[X <= Z_X] == Z_Y) and np.all(yd[X > Z_X] >= Z_Y)


def test_away_from_ties_double_rounding_can_still_differ():
    """Double rounding also moves non-ties: SRDHM rounds first, then the shift rounds a half."""
    # s_x = 0.0026362359, z_x = 38, s_y = 0.081513755, z_y = 45: k*15 = 0.485 rounds to 0 in
    # float, but SRDHM(15, M) = 8 = 0.5 * 2^4 and the shift by 4 rounds that half up to 1.
    s_x, z_x, s_y, z_y = 0.0026362359058111906, 38, 0.08151375502347946, 45
    yf = float_relu(X, s_x, z_x, s_y, z_y)
    yd = dsp_relu(X, s_x, z_x, s_y, z_y)
    assert differing(yf, yd) == [(53, 45, 46), (84, 46, 47), (115, 47, 48)]
    assert differing(yf, dsp_relu(X, s_x, z_x, s_y, z_y, "single")) == []
