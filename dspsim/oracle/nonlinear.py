"""The oracle of the nonlinear family: gemmlowp's exp / logistic / tanh / log / inverse sqrt, LOGISTIC, TANH, HARD_SWISH, PRELU, SOFTMAX, LOG_SOFTMAX, RSQRT, L2_NORMALIZATION, int16 tables.

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

import math
from fractions import Fraction

from .fixedpoint import (
    INT32_MAX,
    _np,
    _trunc_div,
    clamp,
    f32,
    multiply_by_quantized_multiplier,
    round_fraction,
    rounding_divide_by_pot,
    saturate,
    saturating_rounding_doubling_high_mul,
    wrap,
)


def _gl_mul(a: int, b: int) -> int:
    """FixedPoint product: SRDHM of the raw values (ties toward +inf, INT32_MIN^2 saturates)."""
    return saturating_rounding_doubling_high_mul(a, b)


def _gl_srmbpot(x: int, e: int) -> int:
    """SaturatingRoundingMultiplyByPOT<e>: x * 2^e saturated to int32, or rounded (ties away) for e < 0."""
    return saturate(x * 2**e, 32) if e >= 0 else rounding_divide_by_pot(x, -e)


def _gl_exp_quarter(a: int) -> int:
    x = wrap(a + 2**28, 32)
    x2 = _gl_mul(x, x)
    x3 = _gl_mul(x2, x)
    x4 = _gl_mul(x2, x2)
    poly = _gl_srmbpot(wrap(_gl_mul(wrap(_gl_srmbpot(x4, -2) + x3, 32), 715827883) + x2, 32), -1)
    return wrap(1895147668 + _gl_mul(1895147668, wrap(x + poly, 32)), 32)


def gemmlowp_exp_on_negative_values(a: int, integer_bits: int) -> int:
    frac = 31 - integer_bits
    quarter = 2 ** (frac - 2)
    a_mod = wrap((a % quarter) - quarter, 32)  # a & (quarter - 1): Python's % is the bitwise remainder here
    result = _gl_exp_quarter(_gl_srmbpot(a_mod, integer_bits))
    remainder = wrap(a_mod - a, 32)
    for k, mult in zip(range(-2, 5), (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        if integer_bits > k and (remainder >> (frac + k)) & 1:
            result = _gl_mul(result, mult)
    if integer_bits > 5 and a < -(2 ** (36 - integer_bits)):
        result = 0
    return INT32_MAX if a == 0 else result


def _gl_reciprocal_q2(a: int) -> int:
    s = a + INT32_MAX
    d = _trunc_div(s + (1 if s >= 0 else -1), 2)  # RoundingHalfSum(a, One)
    x = wrap(1515870810 + _gl_mul(d, -1010580540), 32)
    for _ in range(3):
        x = wrap(x + _gl_srmbpot(_gl_mul(x, wrap(2**29 - _gl_mul(d, x), 32)), 2), 32)
    return x


def gemmlowp_one_over_one_plus_x(a: int) -> int:
    return _gl_srmbpot(_gl_reciprocal_q2(a), 1)


def gemmlowp_logistic(a: int, integer_bits: int) -> int:
    if a == 0:
        return 2**30
    r = gemmlowp_one_over_one_plus_x(gemmlowp_exp_on_negative_values(-abs(a), integer_bits))
    return r if a > 0 else wrap(INT32_MAX - r, 32)


def gemmlowp_tanh(a: int, integer_bits: int) -> int:
    if a == 0:
        return 0
    e = gemmlowp_exp_on_negative_values(-abs(a), integer_bits + 1)
    t = _gl_srmbpot(wrap(_gl_reciprocal_q2(e) - 2**29, 32), 2)
    return -t if a < 0 else t


def lookup_table_oracle(x, table):
    """``table[q - min]`` per code (int8: ``q + 128``; uint8: ``q``)."""
    import numpy as np

    x = np.asarray(x)
    lo = int(np.iinfo(x.dtype).min)
    return np.array([int(table[int(q) - lo]) for q in x.reshape(-1)], x.dtype).reshape(np.shape(x))


def _tflm_sigmoid_oracle(x, zi, multiplier, shift, radius, tanh):
    import numpy as np

    out = []
    for q in np.asarray(x).reshape(-1):
        v = int(q) - zi
        if v <= -radius:
            out.append(-128)
        elif v >= radius:
            out.append(127)
        else:
            a = multiply_by_quantized_multiplier(v, multiplier, shift)
            o = rounding_divide_by_pot(gemmlowp_tanh(a, 4), 24) if tanh else \
                rounding_divide_by_pot(gemmlowp_logistic(a, 4), 23) - 128
            out.append(clamp(o, -128, 127))
    return np.array(out, np.int8).reshape(np.shape(x))


def tflm_logistic_oracle(x, *, input_zero_point, input_multiplier, input_left_shift, input_range_radius):
    return _tflm_sigmoid_oracle(x, input_zero_point, input_multiplier, input_left_shift, input_range_radius, False)


def tflm_tanh_oracle(x, *, input_zero_point, input_multiplier, input_left_shift, input_range_radius):
    return _tflm_sigmoid_oracle(x, input_zero_point, input_multiplier, input_left_shift, input_range_radius, True)


def hard_swish_oracle(x, *, params):
    """reference_ops::HardSwish<T> as real-number steps: every int16 product, shift and rounding; clamped to T
    (x's type, int8 or uint8)."""
    import numpy as np

    p = params
    lo, hi = int(np.iinfo(np.asarray(x).dtype).min), int(np.iinfo(np.asarray(x).dtype).max)
    out = []
    for q in np.asarray(x).reshape(-1):
        h = (int(q) - p.input_zero_point) * 128
        pre = min(round_fraction(Fraction(h * p.output_multiplier_fixedpoint_int16, 2**15), "half_up"), 32767)
        r = h
        if p.reluish_multiplier_exponent > 0:
            r = saturate(r * 2 ** (p.reluish_multiplier_exponent - 1), 16)
        r = min(round_fraction(Fraction(r * p.reluish_multiplier_fixedpoint_int16, 2**15), "half_up"), 32767)
        if p.reluish_multiplier_exponent > 0:
            r = saturate(r * 2, 16)
        if p.reluish_multiplier_exponent < 0:
            r = rounding_divide_by_pot(r, -p.reluish_multiplier_exponent)
        r = (r + 2**15) // 2
        o = rounding_divide_by_pot(_trunc_div(r * pre, 2**15), -p.output_multiplier_exponent) + p.output_zero_point
        out.append(clamp(o, lo, hi))
    return np.array(out, np.asarray(x).dtype).reshape(np.shape(x))


def prelu_oracle(x, alpha, *, params):
    import numpy as np

    p = params
    a = np.broadcast_to(np.asarray(alpha), np.shape(x)).reshape(-1)
    out = []
    for q, al in zip(np.asarray(x).reshape(-1), a):
        v = int(q) - p.input_zero_point
        o = multiply_by_quantized_multiplier(v, p.multiplier_1, p.shift_1) if v >= 0 else \
            multiply_by_quantized_multiplier(v * (int(al) - p.alpha_zero_point), p.multiplier_2, p.shift_2)
        out.append(clamp(o + p.output_zero_point, int(np.iinfo(np.asarray(x).dtype).min),
                         int(np.iinfo(np.asarray(x).dtype).max)))
    return np.array(out, np.asarray(x).dtype).reshape(np.shape(x))


def _lut_lookup_int16(v: int, lut) -> int:
    """TFLite LUTLookup (int16): the entry at 256 + floor(v / 128) plus the rounded (ties up) share
    (v mod 128) / 128 of the step to the next entry."""
    i, frac = 256 + v // 128, v % 128
    base = int(lut[i])
    return wrap(base + round_fraction(Fraction((int(lut[i + 1]) - base) * frac, 128), "half_up"), 16)


def _softmax_int16_oracle(x, p):
    """reference_ops::SoftmaxInt16 row by row, in Python ints."""
    import numpy as np

    arr = np.asarray(x)
    rows = arr.reshape(-1, arr.shape[-1])
    out = np.empty(rows.shape, np.int16)
    for r, row in enumerate(rows):
        top = max(int(v) for v in row)
        exps = [_lut_lookup_int16(saturate(multiply_by_quantized_multiplier(int(v) - top, p.input_multiplier,
                                                                            p.input_left_shift) + 32767, 16),
                                  p.exp_lut) for v in row]
        total = wrap(sum(exps), 32)
        headroom_plus_one = 32 - total.bit_length()  # leading zeros of a positive int32
        normalised = round_fraction(Fraction(total * 2 ** (headroom_plus_one - 1), 2**14), "half_up")
        reciprocal = _lut_lookup_int16(saturate(normalised - 3 * 2**15, 16), p.one_over_one_plus_x_lut)
        out[r] = [clamp(round_fraction(Fraction(e * reciprocal, 2 ** (31 - headroom_plus_one)), "half_up"), 0, 32767)
                  for e in exps]
    return out.reshape(arr.shape)


def softmax_oracle(x, *, params, out_dtype=None):
    """reference_ops::Softmax<int8, int8 or int16> row by row (last axis), in Python ints; an int16 x:
    reference_ops::SoftmaxInt16."""
    import numpy as np

    p = params
    if np.asarray(x).dtype == np.int16:
        return _softmax_int16_oracle(x, p)
    arr = np.asarray(x)
    out_dtype = np.dtype(out_dtype or arr.dtype.name)  # uint8 in, uint8 out: the type's minimum is 0
    bits = 8 * out_dtype.itemsize
    lo, hi = int(np.iinfo(out_dtype).min), int(np.iinfo(out_dtype).max)
    rows = arr.reshape(-1, arr.shape[-1])
    out = np.empty(rows.shape, out_dtype)
    for r, row in enumerate(rows):
        diffs = [int(v) - max(int(u) for u in row) for v in row]
        exps = [gemmlowp_exp_on_negative_values(
            saturating_rounding_doubling_high_mul(wrap(d * 2**p.input_left_shift, 32), p.input_multiplier), 5)
            if d >= p.diff_min else None for d in diffs]
        total = sum(_gl_srmbpot(e, -12) for e in exps if e is not None)  # Q0 -> Q12 (no wrap below 2^12 terms)
        headroom = 32 - total.bit_length() if total > 0 else 32
        scale = gemmlowp_one_over_one_plus_x(wrap((total << headroom) - 2**31, 32))
        exponent = 12 - headroom + 31 - bits
        out[r] = [lo if e is None else clamp(rounding_divide_by_pot(_gl_mul(scale, e), exponent) + lo, lo, hi)
                  for e in exps]
    return out.reshape(arr.shape)


def gemmlowp_log_x_for_x_greater_than_or_equal_to_1(x: int, input_integer_bits: int, output_integer_bits: int) -> int:
    """TFLite log_x_for_x_greater_than_or_equal_to_1_impl, step by step in Python ints."""
    accum = output_integer_bits + 1
    quarter = _gl_srmbpot(536870912, -accum)
    hp1 = 32 - x.bit_length()  # CountLeadingZeros of a positive int32
    r_a = _gl_srmbpot(_gl_mul(_gl_srmbpot(x, hp1 - 1), 1518500250), 1)
    za_adj = saturate(_gl_srmbpot(input_integer_bits - hp1, 31 - accum) + quarter, 32)
    z_b = _gl_mul(x, 1518500250)
    hb = 32 - z_b.bit_length() - 1
    r_b = _gl_srmbpot(x, hb)
    zb_adj = saturate(_gl_srmbpot(input_integer_bits - hb, 31 - accum) - quarter, 32)
    r, z_adj = min(r_a, r_b), max(za_adj, zb_adj)
    s = r + 1805811301
    p = _trunc_div(s + (1 if s >= 0 else -1), 2)
    q = wrap(2 * wrap(r - 1805811301, 32), 32)
    sq = _gl_mul(q, q)
    num = wrap(_gl_mul(q, r) + _gl_mul(_gl_mul(q, sq), 117049297), 32)
    den = wrap(_gl_mul(p, wrap(wrap(1057819769 + q, 32) + _gl_mul(127690142, sq), 32)) + _gl_mul(638450708, q), 32)
    recip = gemmlowp_one_over_one_plus_x(den)
    total = wrap(_gl_mul(z_adj, 1488522236) + _gl_mul(_gl_srmbpot(num, -accum), recip), 32)
    return _gl_srmbpot(total, accum - output_integer_bits)


def log_softmax_oracle(x, *, params):
    """reference_integer_ops::LogSoftmax (int8) row by row, in Python ints."""
    import numpy as np

    p = params
    arr = np.asarray(x)
    rows = arr.reshape(-1, arr.shape[-1])
    out = np.empty(rows.shape, np.int8)
    for i, row in enumerate(rows):
        diffs = [int(v) - max(int(u) for u in row) for v in row]
        q5 = [multiply_by_quantized_multiplier(d, p.input_multiplier, p.input_left_shift) for d in diffs]
        total = sum(_gl_srmbpot(gemmlowp_exp_on_negative_values(a, 5), -12)
                    for d, a in zip(diffs, q5) if d >= p.diff_min)
        log_sum = gemmlowp_log_x_for_x_greater_than_or_equal_to_1(total, 12, 5)
        adjusted = max(p.diff_min - 1, multiply_by_quantized_multiplier(log_sum - 2**31, p.reverse_scaling_divisor,
                                                                        -p.reverse_scaling_right_shift))
        out[i] = [clamp(rounding_divide_by_pot(a - log_sum, 22) + 127, -128, 127) if d > adjusted else -128
                  for d, a in zip(diffs, q5)]
    return out.reshape(arr.shape)


def inv_sqrt_quantized_multiplier_exp(x: int, reverse_shift: int) -> tuple[int, int]:
    """GetInvSqrtQuantizedMultiplierExp in Python ints (Newton-Raphson in Q3.28 as TFLite does it)."""
    if x <= 1:
        return INT32_MAX, 0
    shift = 11
    while x >= 2**29:
        x //= 4
        shift += 1
    pairs = (32 - x.bit_length() - 1) // 2 - 1
    shift -= pairs
    x <<= 2 * pairs
    half_input = rounding_divide_by_pot(x >> 1, 1)
    r = 2**28
    for _ in range(5):
        r3 = _gl_srmbpot(_gl_mul(_gl_mul(r, r), r), 6)
        r = _gl_srmbpot(wrap(_gl_mul(3 * 2**27, r) - _gl_mul(half_input, r3), 32), 3)
    r = _gl_mul(r, 1518500250)
    if shift < 0:
        r, shift = wrap(r * 2**-shift, 32), 0
    return r, shift * reverse_shift


def l2_normalization_oracle(x, *, input_zero_point):
    import numpy as np

    arr = np.asarray(x)
    rows = arr.reshape(-1, arr.shape[-1]).astype(object) - input_zero_point
    out = np.empty(rows.shape, arr.dtype)
    for i, row in enumerate(rows):
        m, s = inv_sqrt_quantized_multiplier_exp(sum(int(v) * int(v) for v in row), -1)
        if arr.dtype == np.uint8:  # LiteRT's legacy uint8 kernel: 128 + MBQM(128 * d, m, s)
            out[i] = [clamp(128 + multiply_by_quantized_multiplier(128 * int(v), m, s), 0, 255) for v in row]
        else:
            out[i] = [clamp(multiply_by_quantized_multiplier(int(v), m, s + 7), -128, 127) for v in row]
    return out.reshape(arr.shape)


def rsqrt_oracle(x, *, input_zero_point, output_zero_point, multiplier, shift):
    import numpy as np

    out = []
    for q in np.asarray(x).reshape(-1):
        v = int(q) - input_zero_point
        if v == 0:
            out.append(127)
            continue
        m, s = inv_sqrt_quantized_multiplier_exp(v, -1)
        d = multiply_by_quantized_multiplier(1, m, s + 20)
        out.append(clamp(multiply_by_quantized_multiplier(d, multiplier, shift - 20) + output_zero_point, -128, 127))
    return np.array(out, np.int8).reshape(np.shape(x))


def optimized_softmax_oracle(x, *, table, output_scale, output_zero_point, out_dtype=None):
    """LiteRT optimized_ops::Softmax (int8 or uint8 input): every float32 step as an exact f32() rounding; a uint8
    output is ``int32_t(f32(p + 0.5f))`` (truncated, no zero point), the others ``std::round(p) + zp``."""
    import numpy as np

    arr = np.asarray(x)
    out_dtype = np.dtype(out_dtype or arr.dtype.name)
    lo, hi = int(np.iinfo(out_dtype).min), int(np.iinfo(out_dtype).max)
    s_out = Fraction(float(np.float32(output_scale)))
    rows = arr.reshape(-1, arr.shape[-1])
    out = np.empty(rows.shape, np.dtype(out_dtype))
    for r, row in enumerate(rows):
        m = max(int(v) for v in row)
        e = [Fraction(float(table[255 - m + int(v)])) for v in row]
        total = Fraction(0)
        for v in e:
            total = f32(total + v)
        inv = f32(1 / f32(total * s_out))
        if out_dtype == np.uint8:
            out[r] = [clamp(int(f32(f32(v * inv) + Fraction(1, 2))), lo, hi) for v in e]
        else:
            out[r] = [clamp(round_fraction(f32(v * inv), "half_away_from_zero") + output_zero_point, lo, hi)
                      for v in e]
    return out.reshape(arr.shape)


def _sigmoid_table() -> list:
    """TFLite's ``sigmoid_table_uint16`` (``kernels/internal/common.h``): ``65536 sigmoid(i / 24)`` for i in
    0..254, each lowered by half of what linear interpolation overshoots at the middle of its interval (the
    rounded double value), and 65535 last."""
    def s(v):
        return 65536.0 / (1.0 + math.exp(-v / 24))

    return [int(round(s(i) - ((s(i) + s(i + 1)) / 2 - s(i + 0.5)) / 2)) for i in range(255)] + [65535]


_SIGMOID_TABLE = _sigmoid_table()


def _lut_rescaled_input(q: int, multiplier: int, left_shift: int) -> int:
    if multiplier == 0:
        multiplier, left_shift = 3 << left_shift, 0
    return math.floor(Fraction(q * multiplier + (2 ** (left_shift - 1) if left_shift else 0), 2**left_shift))


def _lut_interpolate(a: int, low_bits: int, saturated: int) -> int:
    """``table[h] * 2^b + t * (table[h + 1] - table[h])`` for ``a = h * 2^b + t``; ``saturated`` for h >= 255."""
    table = _SIGMOID_TABLE
    h, t = divmod(a, 2**low_bits)
    if h >= 255:
        return saturated
    return int(table[h]) * 2**low_bits + t * (int(table[h + 1]) - int(table[h]))


def int16_logistic_oracle(x, input_multiplier=0, input_left_shift=0):
    """reference_integer_ops::Logistic (int16): sigmoid(|v|) interpolated, 1 - it for negative v, Q0.15."""
    np = _np()
    out = []
    for q in np.asarray(x).reshape(-1).tolist():
        v = _lut_rescaled_input(q, input_multiplier, input_left_shift)
        r = _lut_interpolate(abs(v), 9, 0x7FFF * 2**10)
        out.append(math.floor(Fraction(r + 2**9, 2**10)) if v >= 0 else
                   math.floor(Fraction(2**25 - r + 2**9 - 1, 2**10)))
    return np.array(out, np.int16).reshape(np.shape(x))


def int16_tanh_oracle(x, input_multiplier=0, input_left_shift=0):
    """reference_integer_ops::Tanh (int16): 2 sigmoid(2|v|) - 1 interpolated, odd symmetry, Q0.15 (floor)."""
    np = _np()
    out = []
    for q in np.asarray(x).reshape(-1).tolist():
        v = _lut_rescaled_input(q, input_multiplier, input_left_shift)
        r = _lut_interpolate(abs(v), 8, 0xFFFF * 2**8)
        out.append(math.floor(Fraction(r - 2**23 + 2**7, 2**8)) if v >= 0 else
                   math.floor(Fraction(-r + 2**23 + 2**7 - 1, 2**8)))
    return np.array(out, np.int16).reshape(np.shape(x))


def _gl16_mul(a: int, b: int) -> int:
    """int16 FixedPoint product: a * b / 2^15 rounded half up; -1 * -1 saturates to 32767."""
    return min(round_fraction(Fraction(a * b, 2**15), "half_up"), 32767)


def _gl16_srmbpot(x: int, e: int) -> int:
    return saturate(x * 2**e, 16) if e >= 0 else rounding_divide_by_pot(x, -e)


def _gl16_constant(raw32: int) -> int:
    """RescaleConstantInitializer: gemmlowp's int32 constants, rounded to int16 (ties away from zero)."""
    return rounding_divide_by_pot(raw32, 16)


def _gl16_exp_quarter(a: int) -> int:
    ct, third = _gl16_constant(1895147668), _gl16_constant(715827883)
    x = wrap(a + 2**12, 16)
    x2 = _gl16_mul(x, x)
    x3 = _gl16_mul(x2, x)
    x4 = _gl16_mul(x2, x2)
    poly = _gl16_srmbpot(wrap(_gl16_mul(wrap(_gl16_srmbpot(x4, -2) + x3, 16), third) + x2, 16), -1)
    return saturate(ct + _gl16_mul(ct, wrap(x + poly, 16)), 16)


def _gl16_exp_on_negative_values(a: int, integer_bits: int) -> int:
    frac = 15 - integer_bits
    quarter = 2 ** (frac - 2)
    a_mod = wrap((a % quarter) - quarter, 16)
    result = _gl16_exp_quarter(_gl16_srmbpot(a_mod, integer_bits))
    remainder = wrap(a_mod - a, 16)
    for k, mult in zip(range(-2, 5), (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        if integer_bits > k and (remainder >> (frac + k)) & 1:
            result = _gl16_mul(result, _gl16_constant(mult))
    if integer_bits > 5 and a < _gl16_constant(-(2 ** (36 - integer_bits))):
        result = 0
    return 32767 if a == 0 else result


def _gl16_reciprocal_q2(a: int) -> int:
    s = a + 32767
    d = _trunc_div(s + (1 if s >= 0 else -1), 2)  # RoundingHalfSum(a, One)
    x = wrap(_gl16_constant(1515870810) + _gl16_mul(d, _gl16_constant(-1010580540)), 16)
    for _ in range(3):
        x = wrap(x + _gl16_srmbpot(_gl16_mul(x, wrap(2**13 - _gl16_mul(d, x), 16)), 2), 16)
    return x


def fixedpoint16_logistic_oracle(x, integer_bits=3):
    """gemmlowp logistic on FixedPoint<int16, integer_bits>: 1 / (1 + exp(-|a|)), 1 - it for a < 0."""
    np = _np()
    out = []
    for a in np.asarray(x).reshape(-1).tolist():
        if a == 0:
            out.append(2**14)
            continue
        abs_a = a if a > 0 else wrap(-a, 16)
        r = _gl16_srmbpot(_gl16_reciprocal_q2(_gl16_exp_on_negative_values(wrap(-abs_a, 16), integer_bits)), 1)
        out.append(r if a > 0 else wrap(32767 - r, 16))
    return np.array(out, np.int16).reshape(np.shape(x))


def fixedpoint16_tanh_oracle(x, integer_bits=3):
    """gemmlowp tanh on FixedPoint<int16, integer_bits>: (1 - e) / (1 + e), e = exp(-2|a|), sign of a."""
    np = _np()
    out = []
    for a in np.asarray(x).reshape(-1).tolist():
        if a == 0:
            out.append(0)
            continue
        n = a if a < 0 else wrap(-a, 16)
        t = _gl16_srmbpot(wrap(_gl16_reciprocal_q2(_gl16_exp_on_negative_values(n, integer_bits + 1)) - 2**13, 16), 2)
        out.append(wrap(-t, 16) if a < 0 else t)
    return np.array(out, np.int16).reshape(np.shape(x))
