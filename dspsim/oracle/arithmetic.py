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
    saturating_rounding_doubling_high_mul,
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


def _neon_shift(x: int, n: int) -> int:
    """NEON ``vshlq_s32`` by ``n``: a left shift (wrapping) for ``n >= 0``, a floor right shift otherwise."""
    return wrap(x * 2**n, 32) if n >= 0 else x >> -n


def _neon_narrow(v: int, zo: int, saturating: bool) -> int:
    """The NEON blocks' output: ``v`` narrowed to int16 (``vqmovn_s32`` saturates, ``vmovn_s32`` wraps), then the
    zero point added in int16 (``vaddq_s16`` wraps)."""
    return wrap((saturate(v, 16) if saturating else wrap(v, 16)) + zo, 16)


def litert_optimized_add_lanes(x1: int, x2: int, zp1: int, zp2: int, zo: int, params, lo: int, hi: int,
                               combined_shift: bool, type_min: int, type_max: int) -> int:
    """One vector lane of LiteRT's optimized 8-bit ADD (``optimized_integer_ops/add.h``, ``optimized_ops.h``).

    ``combined_shift`` (int8 ``AddElementwiseInt8``): each input shifted by ``left_shift + S_i`` before one
    SRDHM. Otherwise (int8 ``AddScalarBroadcast``, both uint8 kernels): SRDHM of ``x << left_shift``, then a floor
    shift by ``-S_i``. Output: SRDHM, RoundingDivideByPOT, narrowed to int16 by wrapping (``vmovn_s32``), the zero
    point added in int16 (wrapping), saturated to the type (``vqmovn`` / ``vqmovun``), clamped.
    """
    ls, (m1, e1), (m2, e2), (mo, eo) = params
    srdhm = saturating_rounding_doubling_high_mul
    if combined_shift:
        a, b = (srdhm(_neon_shift(x - z, ls + e), m) for x, z, m, e in ((x1, zp1, m1, e1), (x2, zp2, m2, e2)))
    else:
        a, b = (_neon_shift(srdhm(_neon_shift(x - z, ls), m), e) for x, z, m, e in ((x1, zp1, m1, e1),
                                                                                      (x2, zp2, m2, e2)))
    raw = rounding_divide_by_pot(srdhm(wrap(a + b, 32), mo), -eo)
    return clamp(clamp(_neon_narrow(raw, zo, False), type_min, type_max), lo, hi)


def litert_optimized_mul_lanes(x1: int, x2: int, zp1: int, zp2: int, zo: int, multiplier: int, shift: int, lo: int,
                               hi: int, saturating: bool, type_min: int, type_max: int) -> int:
    """One vector lane of LiteRT's optimized 8-bit MUL (``optimized_integer_ops/mul.h``, ``optimized_ops.h``): the
    reference product and MBQM, narrowed to int16 (saturating, or wrapping in the uint8 ``MulSimpleBroadcast``),
    the zero point added in int16 (wrapping), saturated to the type, clamped."""
    raw = multiply_by_quantized_multiplier((x1 - zp1) * (x2 - zp2), multiplier, shift)
    return clamp(clamp(_neon_narrow(raw, zo, saturating), type_min, type_max), lo, hi)


def _litert_optimized_walk(np, x1, x2, call):
    """LiteRT's optimized binary kernels' walk over two operands: ``ProcessBroadcastShapes`` picks no broadcast (one
    elementwise call over everything), the fivefold pattern of ``BinaryBroadcastFiveFold`` (an elementwise call per
    inner run of ``y4 > 1`` values, or a scalar-broadcast call per run of ``y3``), or the generic broadcast (None:
    the reference kernel runs). ``call(a_values, b_values, swapped, elementwise)`` gives a call's outputs;
    ``swapped``: the kernel took the operands in the other order (the second input broadcasts fast)."""
    out_shape = np.broadcast_shapes(x1.shape, x2.shape)
    rank = len(out_shape)
    d1 = (1,) * (rank - x1.ndim) + x1.shape
    d2 = (1,) * (rank - x2.ndim) + x2.shape
    if d1 == d2:
        return np.array(call(x1.ravel().tolist(), x2.ravel().tolist(), False, True), x1.dtype).reshape(out_shape)
    swapped = next(a != 1 for a, b in zip(reversed(d1), reversed(d2)) if a != b)
    sa, va, sb, vb = (d2, x2, d1, x1) if swapped else (d1, x1, d2, x2)
    y, i = [1] * 5, rank - 1  # y4 from the inside out, while each pattern holds
    for slot, holds, dims in ((4, lambda k: sa[k] == sb[k], sb), (3, lambda k: sa[k] == 1, sb),
                              (2, lambda k: sa[k] == sb[k], sa), (1, lambda k: sb[k] == 1, sa),
                              (0, lambda k: sa[k] == sb[k], sb)):
        while i >= 0 and holds(i):
            y[slot] *= dims[i]
            i -= 1
    if i >= 0:
        return None
    a_flat, b_flat = va.ravel().tolist(), vb.ravel().tolist()
    out, pa, pb_reset = [], 0, 0
    for _ in range(y[0]):
        for _ in range(y[1]):
            pb = pb_reset
            for _ in range(y[2]):
                if y[4] > 1:
                    for _ in range(y[3]):
                        out += call(a_flat[pa:pa + y[4]], b_flat[pb:pb + y[4]], swapped, True)
                        pb += y[4]
                    pa += y[4]
                else:
                    out += call([a_flat[pa]] * y[3], b_flat[pb:pb + y[3]], swapped, False)
                    pb += y[3]
                    pa += 1
        pb_reset = pb
    return np.array(out, x1.dtype).reshape(out_shape)


def litert_optimized_add_oracle(x1, x2, params, *, input1_zero_point, input2_zero_point, output_zero_point,
                                act_min=None, act_max=None):
    """LiteRT's optimized 8-bit ADD, walked as its loops walk (:func:`_litert_optimized_walk`). Inside a call,
    whole blocks (16 lanes for the int8 elementwise kernel, 8 otherwise) take :func:`litert_optimized_add_lanes`,
    the tail the reference :func:`tflite_add`; a generic broadcast is :func:`add_oracle`."""
    np = _np()
    x1, x2 = np.asarray(x1), np.asarray(x2)
    lo, hi = _range(x1.dtype, act_min, act_max)
    info = np.iinfo(x1.dtype)
    int8 = x1.dtype == np.int8
    zps = (input1_zero_point, input2_zero_point, output_zero_point)
    p = (params.left_shift, (params.input1_multiplier, params.input1_shift),
         (params.input2_multiplier, params.input2_shift), (params.output_multiplier, params.output_shift))

    def call(a_vals, b_vals, swapped, elementwise):
        q, z = ((p[0], p[2], p[1], p[3]), (zps[1], zps[0], zps[2])) if swapped else (p, zps)
        lanes = 16 if (int8 and elementwise) else 8
        vector_end = len(b_vals) // lanes * lanes
        return [litert_optimized_add_lanes(a, b, *z, q, lo, hi, int8 and elementwise, int(info.min), int(info.max))
                if i < vector_end else tflite_add(a, b, *z, q, lo, hi)
                for i, (a, b) in enumerate(zip(a_vals, b_vals))]

    out = _litert_optimized_walk(np, x1, x2, call)
    if out is None:
        return add_oracle(x1, x2, params, input1_zero_point=input1_zero_point, input2_zero_point=input2_zero_point,
                          output_zero_point=output_zero_point, act_min=act_min, act_max=act_max)
    return out


def litert_optimized_mul_oracle(x1, x2, *, input1_zero_point, input2_zero_point, output_zero_point, multiplier,
                                shift, act_min=None, act_max=None):
    """LiteRT's optimized 8-bit MUL, walked as its loops walk (:func:`_litert_optimized_walk`). Inside a call,
    whole blocks (16 lanes for int8, 8 for uint8) take :func:`litert_optimized_mul_lanes` (the narrow wraps in the
    uint8 scalar-broadcast kernel only), the tail the reference :func:`tflite_mul`."""
    np = _np()
    x1, x2 = np.asarray(x1), np.asarray(x2)
    lo, hi = _range(x1.dtype, act_min, act_max)
    info = np.iinfo(x1.dtype)
    int8 = x1.dtype == np.int8
    zps = (input1_zero_point, input2_zero_point, output_zero_point)

    def call(a_vals, b_vals, swapped, elementwise):
        z = (zps[1], zps[0], zps[2]) if swapped else zps
        lanes = 16 if int8 else 8
        vector_end = len(b_vals) // lanes * lanes
        return [litert_optimized_mul_lanes(a, b, *z, multiplier, shift, lo, hi, int8 or elementwise, int(info.min),
                                           int(info.max))
                if i < vector_end else tflite_mul(a, b, *z, multiplier, shift, lo, hi)
                for i, (a, b) in enumerate(zip(a_vals, b_vals))]

    out = _litert_optimized_walk(np, x1, x2, call)
    if out is None:
        return mul_oracle(x1, x2, input1_zero_point=input1_zero_point, input2_zero_point=input2_zero_point,
                          output_zero_point=output_zero_point, multiplier=multiplier, shift=shift, act_min=act_min,
                          act_max=act_max)
    return out


def integer_binary_oracle(op, x1, x2, act_min=None, act_max=None):
    """Unquantized int32 ADD / SUB / MUL (``op``: "add" | "sub" | "mul"): the exact result wrapped to int32, then
    clamped to ``[act_min, act_max]`` (default the whole int32 range)."""
    np = _np()
    f = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}[str(getattr(op, "value", op))]
    lo, hi = _range(np.dtype(np.int32), act_min, act_max)
    return _map(lambda a, b: clamp(wrap(f(a, b), 32), lo, hi), np.int32, x1, x2)


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
