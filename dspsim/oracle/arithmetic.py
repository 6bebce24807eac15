"""The oracle of the arithmetic family: ADD, MUL, SUB, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM (TFLite, XNNPACK, LiteRT's int16 power-of-two ADD).

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

import math
from fractions import Fraction

from .data_movement import _from_lists
from .fixedpoint import (
    _f32,
    _map,
    _np,
    _range,
    clamp,
    f32,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_fraction,
    rounding_divide_by_pot,
    saturate,
    wrap,
)


# (section: tflite ops)
# --- ADD, MUL, MEAN, pooling (dspsim.kernels.arithmetic.elementwise / pool; TFLite reference integer ops) --
def tflite_add_params(s1, s2, s_out, left_shift=20):
    """TFLite ADD Prepare: (left_shift, (M1, S1), (M2, S2), (Mo, So)) from float32 scales."""
    s1, s2, s_out = (float(f32(float(v))) for v in (s1, s2, s_out))
    twice_max = 2 * max(s1, s2)  # float32 * 2: exact
    denom = float(f32(Fraction(2**left_shift) * Fraction(s_out)))
    return (left_shift, quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max),
            quantize_multiplier(twice_max / denom))


def tflite_add(x1: int, x2: int, zp1: int, zp2: int, zo: int, params, lo: int, hi: int) -> int:
    """reference_integer_ops::AddFunc: both inputs onto 2^left_shift * a common scale, sum, requantize."""
    ls, (m1, e1), (m2, e2), (mo, eo) = params
    a = multiply_by_quantized_multiplier(wrap((x1 - zp1) * 2**ls, 32), m1, e1)
    b = multiply_by_quantized_multiplier(wrap((x2 - zp2) * 2**ls, 32), m2, e2)
    return clamp(multiply_by_quantized_multiplier(wrap(a + b, 32), mo, eo) + zo, lo, hi)


def tflite_mul(x1: int, x2: int, zp1: int, zp2: int, zo: int, multiplier: int, shift: int, lo: int, hi: int) -> int:
    """reference_integer_ops::MulElementwise."""
    return clamp(zo + multiply_by_quantized_multiplier((x1 - zp1) * (x2 - zp2), multiplier, shift), lo, hi)


def xnnpack_add_params(s1, s2, s_out):
    """(M1, M2, shift) of xnn_init_qs8_add_minmax_scalar_params: 21-bit multipliers of f32 ratios."""
    r1, r2 = _f32(_f32(s1) / _f32(s_out)), _f32(_f32(s2) / _f32(s_out))
    e = math.floor(math.log2(max(r1, r2)))
    while Fraction(2) ** e > max(r1, r2):  # exact exponent of the float32
        e -= 1
    while Fraction(2) ** (e + 1) <= max(r1, r2):
        e += 1
    shift = 20 - e
    return round_fraction(r1 * 2**shift, "half_to_even"), round_fraction(r2 * 2**shift, "half_to_even"), shift


def xnnpack_add(x1, x2, z1, z2, zo, params, lo, hi) -> int:
    """qs8-vadd: one floor shift of an int32 sum that carries the rounding constant 2^(shift-1)."""
    m1, m2, shift = params
    acc = wrap(2 ** (shift - 1) + (x1 - z1) * m1 + (x2 - z2) * m2, 32)
    return clamp((acc >> shift) + zo, lo, hi)


def xnnpack_mul(x1, x2, z1, z2, zo, scale, lo, hi) -> int:
    """qs8-vmul fp32: rint(f32(float(product) * scale)) + zo."""
    return clamp(round_fraction(f32(Fraction((x1 - z1) * (x2 - z2)) * _f32(scale)), "half_to_even") + zo, lo, hi)


def add_oracle(x1, x2, params, *, input1_zero_point, input2_zero_point, output_zero_point, act_min=None,
               act_max=None):
    p = (params.left_shift, (params.input1_multiplier, params.input1_shift),
         (params.input2_multiplier, params.input2_shift), (params.output_multiplier, params.output_shift))
    lo, hi = _range(x1.dtype, act_min, act_max)
    return _map(lambda a, b: tflite_add(a, b, input1_zero_point, input2_zero_point, output_zero_point, p, lo, hi),
                x1.dtype, x1, x2)


def mul_oracle(x1, x2, *, input1_zero_point, input2_zero_point, output_zero_point, multiplier=None, shift=None,
               scale=None, act_min=None, act_max=None):
    lo, hi = _range(x1.dtype, act_min, act_max)
    z1, z2, zo = input1_zero_point, input2_zero_point, output_zero_point
    if scale is not None:
        return _map(lambda a, b: xnnpack_mul(a, b, z1, z2, zo, scale, lo, hi), x1.dtype, x1, x2)
    return _map(lambda a, b: tflite_mul(a, b, z1, z2, zo, multiplier, shift, lo, hi), x1.dtype, x1, x2)


def xnnpack_add_oracle(x1, x2, params, *, input1_zero_point, input2_zero_point, output_zero_point, act_min=None,
                       act_max=None):
    p = (params.a_multiplier, params.b_multiplier, params.shift)
    lo, hi = _range(x1.dtype, act_min, act_max)
    return _map(lambda a, b: xnnpack_add(a, b, input1_zero_point, input2_zero_point, output_zero_point, p, lo, hi),
                x1.dtype, x1, x2)


def tflite_rescaled_difference(x1: int, x2: int, zp1: int, zp2: int, zo: int, params, square: bool, lo: int,
                               hi: int) -> int:
    """SUB (``square`` False) / SQUARED_DIFFERENCE: both inputs onto 2^left_shift * a common scale,
    the difference (squared) in int32, requantized, clamped."""
    ls, (m1, e1), (m2, e2), (mo, eo) = params
    a = multiply_by_quantized_multiplier(wrap((x1 - zp1) * 2**ls, 32), m1, e1)
    b = multiply_by_quantized_multiplier(wrap((x2 - zp2) * 2**ls, 32), m2, e2)
    d = wrap(a - b, 32)
    if square:
        d = wrap(d * d, 32)
    return clamp(multiply_by_quantized_multiplier(d, mo, eo) + zo, lo, hi)


def _rescaled_oracle(square, x1, x2, params, zps, act_min, act_max):
    p = (params.left_shift, (params.input1_multiplier, params.input1_shift),
         (params.input2_multiplier, params.input2_shift), (params.output_multiplier, params.output_shift))
    lo, hi = _range(x1.dtype, act_min, act_max)
    return _map(lambda a, b: tflite_rescaled_difference(a, b, *zps, p, square, lo, hi), x1.dtype, x1, x2)


def sub_oracle(x1, x2, params, *, input1_zero_point, input2_zero_point, output_zero_point, act_min=None,
               act_max=None):
    return _rescaled_oracle(False, x1, x2, params, (input1_zero_point, input2_zero_point, output_zero_point),
                            act_min, act_max)


def squared_difference_oracle(x1, x2, params, *, input1_zero_point, input2_zero_point, output_zero_point):
    return _rescaled_oracle(True, x1, x2, params, (input1_zero_point, input2_zero_point, output_zero_point),
                            None, None)


def maximum_oracle(x1, x2):
    return _map(max, x1.dtype, x1, x2)


def minimum_oracle(x1, x2):
    return _map(min, x1.dtype, x1, x2)


def pot_add_oracle(x1, x2, params, *, act_min=None, act_max=None, subtract=False):
    """LiteRT ``reference_ops::Add`` int16 with ``pot_scale``: each input divided by ``2^-shift`` (ties
    away from zero), summed (``subtract``: the second subtracted, ``Sub16``), saturated to int16, clamped to
    the activation range."""
    np = _np()
    lo = -32768 if act_min is None else int(act_min)
    hi = 32767 if act_max is None else int(act_max)
    values = []
    x1, x2 = np.broadcast_arrays(np.asarray(x1), np.asarray(x2))
    for a, b in zip(x1.reshape(-1).tolist(), x2.reshape(-1).tolist()):
        d = rounding_divide_by_pot(b, -params.input2_shift)
        v = rounding_divide_by_pot(a, -params.input1_shift) + (-d if subtract else d)
        values.append(min(max(saturate(v, 16), lo), hi))
    return _from_lists(values, np.shape(x1), np.int16)
