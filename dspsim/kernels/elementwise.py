"""Quantized element-wise and reshaping ops: TFLite ADD, MUL, MEAN, PAD, CONCATENATION (int8 / uint8 / int16).

Each is the TFLite reference integer kernel (``reference_integer_ops/add.h``, ``mul.h``,
``reference/reduce.h::QuantizedMeanOrSum``, ``reference/pad.h``, ``concatenation.cc``), written as a
private numba loop (where there is arithmetic) behind a validating wrapper. The integer parameters
come from the ``tflite_*_params`` helpers, which do what each op's Prepare does with the float
scales. Broadcasting (ADD, MUL) follows numpy's rule, which is what TFLite's
``BroadcastBinaryOpSimple`` computes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._errors import names_its_errors
from numba import njit

from ..fixedpoint import (
    as_int_array,
    multiply_by_quantized_multiplier_scalar,
    quantize_multiplier,
    wrap_scalar,
)
from ..requant import Requant, output_range
from ..simd import requant_lanes
from ..simd.add_lanes import USE_LANES, add_lanes
from ._plan import flat_operand
from .requantize import _requantize_codes
from ._checks import (broadcast_shape, check_spec, check_tensor, checked_pair, float32_scale, q31_multiplier,
                      resolve_axes, scalar_int, zero_point)

_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))
_TYPES16 = _TYPES + (np.dtype(np.int16),)  # the 16x8 ADD, MUL, MEAN: the same kernels, int16 codes


# --------------------------------------------------------------------------------------------
# ADD
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AddParams:
    """Integer parameters of TFLite's quantized ADD (``add.cc`` Prepare, 8-bit path).

    ``left_shift`` (20 for 8-bit), then one Q31 multiplier and a right shift (``shift <= 0``) per
    input and for the output.
    """

    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int


@names_its_errors
def tflite_add_params(input1_scale, input2_scale, output_scale, left_shift=20) -> AddParams:
    """TFLite ADD Prepare: the integer parameters from the three float32 scales.

    ``twice_max = 2 * max(s1, s2)`` (float32, exact), ``m_i = double(s_i) / twice_max`` (<= 0.5),
    ``m_out = twice_max / double(f32(2^left_shift * s_out))``; each through ``QuantizeMultiplier``.
    TFLite's ``QuantizeMultiplierSmallerThanOneExp`` aborts unless ``0 < m_out < 1``: this raises
    ValueError instead (an output scale below ``twice_max / 2^left_shift``).
    """
    func = "tflite_add_params"
    s1 = float32_scale(input1_scale, func, "input1_scale")
    s2 = float32_scale(input2_scale, func, "input2_scale")
    so = float32_scale(output_scale, func, "output_scale")
    twice_max = np.float64(np.float32(2) * max(s1, s2))
    denom = np.float64(np.float32(np.float32(1 << left_shift) * so))
    reals = (np.float64(s1) / twice_max, np.float64(s2) / twice_max, twice_max / denom)
    if not reals[2] < 1.0:
        raise ValueError(f"{func}: the output multiplier 2*max(s1, s2) / (2^{left_shift} * s_out) = {reals[2]} "
                         "must be < 1 (TFLite's QuantizeMultiplierSmallerThanOneExp check)")
    (m1, e1), (m2, e2), (mo, eo) = (quantize_multiplier(float(r)) for r in reals)
    return AddParams(left_shift, m1, e1, m2, e2, mo, eo)


@njit(cache=True)
def _add(a, b, zp1, zp2, zo, left_shift, m1, s1, m2, s2, mo, so, lo, hi, out, lane_multipliers):
    i0 = 0
    if USE_LANES:  # the front in int32 vector lanes (AVX2, jit only): the same values
        i0 = add_lanes(a, b, lane_multipliers, zp1, zp2, zo, left_shift, s1, s2, so, lo, hi, out)
    for i in range(i0, out.size):
        v1 = multiply_by_quantized_multiplier_scalar(wrap_scalar((np.int64(a[i]) - zp1) << left_shift, 32), m1, s1)
        v2 = multiply_by_quantized_multiplier_scalar(wrap_scalar((np.int64(b[i]) - zp2) << left_shift, 32), m2, s2)
        v = multiply_by_quantized_multiplier_scalar(wrap_scalar(v1 + v2, 32), mo, so) + zo
        out[i] = min(max(v, lo), hi)


def _binary_plan(func, shape1, shape2, dtype, input1_zero_point, input2_zero_point, output_zero_point, act_min,
                 act_max, allowed=_TYPES):
    """Validate what a binary op needs besides the values: the operands' dtype (one of ``allowed``) and
    shapes, the zero points and the activation range.

    Returns ``flat1, flat2`` (lean ``x -> flat codes broadcast``, :func:`~dspsim.kernels._plan.flat_operand`),
    the broadcast shape, the output IntType, the clamp ``lo, hi`` and the zero points ``zp1, zp2, zo``.
    """
    shape1, dt = check_spec(func, "x1", shape1, dtype, allowed)
    shape2, _ = check_spec(func, "x2", shape2, dtype, allowed)
    shape = broadcast_shape(func, shape1, shape2)
    t, lo, hi = output_range(dt.name, act_min, act_max, func)
    zp1 = zero_point(input1_zero_point, dt, func, "input1_zero_point")
    zp2 = zero_point(input2_zero_point, dt, func, "input2_zero_point")
    zo = zero_point(output_zero_point, t.dtype, func, "output_zero_point")
    return flat_operand(shape1, shape), flat_operand(shape2, shape), shape, t, lo, hi, zp1, zp2, zo


@names_its_errors
def add(x1, x2, params: AddParams, *, input1_zero_point, input2_zero_point, output_zero_point, act_min=None,
        act_max=None):
    """TFLite reference quantized ADD (``reference_integer_ops::AddFunc``), with broadcasting.

    Per element, in int32 (``MBQM`` = MultiplyByQuantizedMultiplier, double rounding, shifts <= 0)::

        a = MBQM((x1 - zp1) << left_shift, M1, S1)      # both inputs onto a common scale
        b = MBQM((x2 - zp2) << left_shift, M2, S2)
        out = clamp(MBQM(a + b, Mo, So) + zo, act_min, act_max)

    Each MBQM rounds twice: SRDHM ties toward +inf, then the right shift ties away from zero. The
    only saturation is the final clamp (``(x - zp) << 20`` and ``a + b`` fit in int32 for 8-bit
    inputs, ``(x - zp) << 15`` for int16: ``65535 << 15 < 2^31``).

    Parameters
    ----------
    x1, x2 : int8, uint8 or int16 arrays (same dtype), broadcastable
    params : AddParams
        From :func:`tflite_add_params` (``left_shift`` 20 for 8-bit, 15 for int16: the general int16 path
        of LiteRT ``add.cc`` and TFLM ``add_common.cc``).
    input1_zero_point, input2_zero_point, output_zero_point : int
    act_min, act_max : int, optional
        Fused activation range (default the full range of the dtype).

    Returns an array of the inputs' dtype with the broadcast shape.
    """
    if not isinstance(params, AddParams):
        raise TypeError(f"add: params must be an AddParams (tflite_add_params), got {type(params).__name__}")
    x1, x2 = checked_pair("add", x1, x2, _TYPES16)
    return add_plan(x1.shape, x2.shape, x1.dtype, params, input1_zero_point=input1_zero_point,
                    input2_zero_point=input2_zero_point, output_zero_point=output_zero_point, act_min=act_min,
                    act_max=act_max)(x1, x2)


def add_plan(shape1, shape2, dtype, params: AddParams, *, input1_zero_point, input2_zero_point, output_zero_point,
             act_min=None, act_max=None):
    """:func:`add` prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype``: every argument
    validated here, once; returns the lean ``run(x1, x2) -> out`` (inputs of exactly those shapes and
    dtype, unchecked)."""
    func = "add"
    if not isinstance(params, AddParams):
        raise TypeError(f"{func}: params must be an AddParams (tflite_add_params), got {type(params).__name__}")
    flat1, flat2, shape, t, lo, hi, zp1, zp2, zo = _binary_plan(
        func, shape1, shape2, dtype, input1_zero_point, input2_zero_point, output_zero_point, act_min, act_max,
        _TYPES16)
    ls = scalar_int(params.left_shift, func, "left_shift", 0, 22)
    args = []
    for k in ("input1", "input2", "output"):
        args.append(q31_multiplier(getattr(params, f"{k}_multiplier"), func, f"{k}_multiplier"))
        args.append(scalar_int(getattr(params, f"{k}_shift"), func, f"{k}_shift", -31, 0))
    m1, s1, m2, s2, mo, so = args
    size, out_dtype = math.prod(shape), t.dtype
    # each multiplier in 8 lanes, then the output's float32 lanes (add_lanes)
    out_lanes = requant_lanes.lane_parameters(np.array([mo]), np.array([so]), 1, False)[3:, 0]
    lanes = np.repeat(np.concatenate([np.array([m1, m2, mo], np.int32), out_lanes]), 8)

    def run(x1, x2):
        out = np.empty(size, out_dtype)
        _add(flat1(x1), flat2(x2), zp1, zp2, zo, ls, m1, s1, m2, s2, mo, so, lo, hi, out, lanes)
        return out.reshape(shape)

    return run


# --------------------------------------------------------------------------------------------
# MUL
# --------------------------------------------------------------------------------------------
@names_its_errors
def tflite_mul_multiplier(input1_scale, input2_scale, output_scale):
    """TFLite MUL Prepare: ``QuantizeMultiplier(double(f32(f32(s1 * s2) / s_out)))`` (float32 arithmetic)."""
    func = "tflite_mul_multiplier"
    s1 = float32_scale(input1_scale, func, "input1_scale")
    s2 = float32_scale(input2_scale, func, "input2_scale")
    so = float32_scale(output_scale, func, "output_scale")
    return quantize_multiplier(float(np.float32(np.float32(s1 * s2) / so)))


@njit(cache=True)
def _mul(a, b, zp1, zp2, zo, m, s, scale, fp32, lo, hi, out):
    for i in range(out.size):
        acc = (np.int64(a[i]) - zp1) * (np.int64(b[i]) - zp2)
        if fp32:  # |acc| <= 2^16: exact in float32; one float32 product, ties to even
            v = np.int64(np.rint(np.float32(acc) * scale)) + zo
        else:
            v = multiply_by_quantized_multiplier_scalar(acc, m, s) + zo
        out[i] = min(max(v, lo), hi)


@names_its_errors
def mul(x1, x2, *, input1_zero_point, input2_zero_point, output_zero_point, multiplier=None, shift=None,
        scale=None, act_min=None, act_max=None):
    """Quantized MUL with broadcasting: TFLite's reference kernel, or XNNPACK's with ``scale``.

    TFLite (``reference_integer_ops::MulElementwise``, ``multiplier``/``shift`` from
    :func:`tflite_mul_multiplier`): ``out = clamp(zo + MBQM((x1 - zp1) * (x2 - zp2), multiplier, shift),
    act_min, act_max)``; the product of two 8-bit differences fits in int32, and so does that of two
    int16 codes (int16 takes zero points 0 only: ``|product| <= 2^30``); MBQM rounds twice (SRDHM ties
    toward +inf, the right shift ties away from zero; a left shift ``shift > 0`` wraps in int32).

    XNNPACK (``qs8-vmul`` fp32 kernels, ``scale = f32(f32(s1 * s2) / s_out)`` as its params init):
    ``out = clamp(zo + rint(f32(float(product) * scale)), act_min, act_max)``, ties to even.
    """
    x1, x2 = checked_pair("mul", x1, x2, _TYPES16)
    return mul_plan(x1.shape, x2.shape, x1.dtype, input1_zero_point=input1_zero_point,
                    input2_zero_point=input2_zero_point, output_zero_point=output_zero_point, multiplier=multiplier,
                    shift=shift, scale=scale, act_min=act_min, act_max=act_max)(x1, x2)


def mul_plan(shape1, shape2, dtype, *, input1_zero_point, input2_zero_point, output_zero_point, multiplier=None,
             shift=None, scale=None, act_min=None, act_max=None):
    """:func:`mul` prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype`` (validated once);
    returns the lean ``run(x1, x2) -> out``."""
    func = "mul"
    flat1, flat2, shape, t, lo, hi, zp1, zp2, zo = _binary_plan(
        func, shape1, shape2, dtype, input1_zero_point, input2_zero_point, output_zero_point, act_min, act_max,
        _TYPES16)
    dtype = np.dtype(dtype)
    if (scale is None) == (multiplier is None or shift is None):
        raise ValueError(f"{func}: give multiplier and shift (TFLite) or scale (XNNPACK), not both")
    if dtype == np.int16 and (zp1, zp2, zo) != (0, 0, 0) or dtype == np.int16 and scale is not None:
        raise ValueError(f"{func}: int16 MUL takes zero points 0 and multiplier/shift (TFLite's 16x8 kernel), got "
                         f"zero points {zp1}, {zp2}, {zo}" + (" and a scale" if scale is not None else ""))
    if scale is None:
        m, s, sc = q31_multiplier(multiplier, func, "multiplier"), scalar_int(shift, func, "shift", -31, 30), np.float32(0)
    else:
        m, s, sc = 0, 0, float32_scale(scale, func, "scale")
    fp32, size, out_dtype = scale is not None, math.prod(shape), t.dtype

    def run(x1, x2):
        out = np.empty(size, out_dtype)
        _mul(flat1(x1), flat2(x2), zp1, zp2, zo, m, s, sc, fp32, lo, hi, out)
        return out.reshape(shape)

    return run


# --------------------------------------------------------------------------------------------
# XNNPACK ADD and int8 -> int8 convert (what LiteRT's default interpreter delegates)
# --------------------------------------------------------------------------------------------
def _f32_bits(v):
    return int(np.float32(v).view(np.uint32))


@dataclass(frozen=True)
class XnnpackAddParams:
    """XNNPACK ``qs8-vadd`` parameters: two signed multipliers (< 2^21) and a right shift in [12, 30]."""

    a_multiplier: int
    b_multiplier: int
    shift: int


@names_its_errors
def xnnpack_add_params(input1_scale, input2_scale, output_scale) -> XnnpackAddParams:
    """XNNPACK ``xnn_init_qs8_add_minmax_scalar_params``, in float32.

    ``r_i = f32(s_i / s_out)``; ``shift = 20 - exponent(max(r1, r2))``; ``M_i = lrintf(r_i * 2^shift)``
    (the scaling is an exponent-field add, exact; lrintf ties to even). LiteRT's delegate only takes an
    ADD with both ratios in [2^-10, 2^8) (ValueError otherwise: the node stays on the builtin kernel).
    """
    func = "xnnpack_add_params"
    so = float32_scale(output_scale, func, "output_scale")
    r = [np.float32(float32_scale(s, func, n) / so) for s, n in ((input1_scale, "input1_scale"),
                                                                 (input2_scale, "input2_scale"))]
    if not all(2.0**-10 <= v < 2.0**8 for v in r):
        raise ValueError(f"{func}: input/output scale ratios {float(r[0])}, {float(r[1])} lie outside "
                         "[2^-10, 2^8): LiteRT does not delegate this ADD to XNNPACK")
    shift = 20 - ((_f32_bits(max(r)) >> 23) - 127)
    mult = [int(np.rint(np.float32(v) * np.float32(2.0**shift))) for v in r]
    return XnnpackAddParams(mult[0], mult[1], shift)


@njit(cache=True)
def _xnnpack_add(a, b, bias, ma, mb, shift, zo, lo, hi, out):
    for i in range(out.size):
        acc = wrap_scalar(bias + np.int64(a[i]) * ma + np.int64(b[i]) * mb, 32)
        out[i] = min(max((acc >> shift) + zo, lo), hi)


@names_its_errors
def xnnpack_add(x1, x2, params: XnnpackAddParams, *, input1_zero_point, input2_zero_point, output_zero_point,
                act_min=None, act_max=None):
    """XNNPACK ``qs8-vadd`` (LiteRT's default interpreter), with broadcasting.

    ``acc = 2^(shift-1) - M1*zp1 - M2*zp2 + x1*M1 + x2*M2`` (int32), ``out = clamp((acc >> shift) + zo)``:
    one rounding, ties toward +inf, with multipliers of only 21 bits, so it differs from TFLite's
    :func:`add` by 1 LSB here and there (docs/engines.md).
    """
    if not isinstance(params, XnnpackAddParams):
        raise TypeError("xnnpack_add: params must be an XnnpackAddParams (xnnpack_add_params)")
    x1, x2 = checked_pair("xnnpack_add", x1, x2, _TYPES)
    return xnnpack_add_plan(x1.shape, x2.shape, x1.dtype, params, input1_zero_point=input1_zero_point,
                            input2_zero_point=input2_zero_point, output_zero_point=output_zero_point,
                            act_min=act_min, act_max=act_max)(x1, x2)


def xnnpack_add_plan(shape1, shape2, dtype, params: XnnpackAddParams, *, input1_zero_point, input2_zero_point,
                     output_zero_point, act_min=None, act_max=None):
    """:func:`xnnpack_add` prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype`` (validated
    once); returns the lean ``run(x1, x2) -> out``."""
    func = "xnnpack_add"
    if not isinstance(params, XnnpackAddParams):
        raise TypeError(f"{func}: params must be an XnnpackAddParams (xnnpack_add_params)")
    flat1, flat2, shape, t, lo, hi, zp1, zp2, zo = _binary_plan(
        func, shape1, shape2, dtype, input1_zero_point, input2_zero_point, output_zero_point, act_min, act_max)
    bias = (1 << (params.shift - 1)) - params.a_multiplier * zp1 - params.b_multiplier * zp2
    ma, mb, shift, size, out_dtype = (params.a_multiplier, params.b_multiplier, params.shift,
                                      math.prod(shape), t.dtype)

    def run(x1, x2):
        out = np.empty(size, out_dtype)
        _xnnpack_add(flat1(x1), flat2(x2), bias, ma, mb, shift, zo, lo, hi, out)
        return out.reshape(shape)

    return run


_CHUNK = 1 << 15  # elements per numpy step of the XNNPACK converts: temporaries bounded, whatever the input


def _xnnpack_q8_8(x, zi, zo, m_pos, m_neg):
    """``clamp(((zo << 8) + 128 + (x - zi) * M) >> 8)`` with ``M`` chosen by the sign of ``x - zi``,
    :data:`_CHUNK` elements at a time."""
    out = np.empty(x.shape, np.int8)
    src, dst = x.reshape(-1), out.reshape(-1)
    for s in range(0, src.size, _CHUNK):
        d = src[s:s + _CHUNK].astype(np.int64) - zi
        acc = (zo << 8) + 0x80 + d * np.where(d >= 0, m_pos, m_neg)  # |acc| < 2^24: no int32 wrap
        dst[s:s + _CHUNK] = np.clip(acc >> 8, -128, 127)
    return out


def _xnnpack_ratio(func, input_scale, output_scale):
    r = np.float32(float32_scale(input_scale, func, "input_scale") / float32_scale(output_scale, func, "output_scale"))
    if not 2.0**-8 <= r <= 2.0**7:
        raise ValueError(f"{func}: the scale ratio {float(r)} lies outside [1/256, 128]: LiteRT does not delegate it")
    return r


@names_its_errors
def xnnpack_convert(x, *, input_scale, input_zero_point, output_scale, output_zero_point):
    """XNNPACK ``qs8-vcvt`` (int8 -> int8 QUANTIZE under LiteRT's default interpreter).

    ``M = lrintf(256 * f32(s_in / s_out))`` (8 fractional bits), ``out = clamp(((zo << 8) + 128 +
    (x - zi) * M) >> 8)``: ties toward +inf on a multiplier rounded to 1/256. The delegate takes ratios in
    [1/256, 128] only (ValueError otherwise).
    """
    x = check_tensor(x, "xnnpack_convert", "x", allowed=(np.dtype(np.int8),))
    return xnnpack_convert_plan(input_scale=input_scale, input_zero_point=input_zero_point, output_scale=output_scale,
                                output_zero_point=output_zero_point)(x)


def xnnpack_convert_plan(*, input_scale, input_zero_point, output_scale, output_zero_point):
    """:func:`xnnpack_convert`'s parameters validated and derived once; returns the lean ``run(x) -> int8``."""
    func = "xnnpack_convert"
    r = _xnnpack_ratio(func, input_scale, output_scale)
    m = int(np.rint(np.float32(256) * r))
    zi = zero_point(input_zero_point, np.int8, func, "input_zero_point")
    zo = zero_point(output_zero_point, np.int8, func, "output_zero_point")
    return lambda x: _xnnpack_q8_8(x, zi, zo, m, m)


@names_its_errors
def xnnpack_quantize(x, *, scale, zero_point):
    """XNNPACK ``f32-qs8-vcvt`` (float -> int8 QUANTIZE under LiteRT's default interpreter).

    ``v = f32(x * f32(1 / s))`` (a reciprocal multiply, not TFLite's divide), clamped in float to
    ``[-128 - zp, 127 - zp]``, rounded to nearest with ties to even, ``+ zp`` (docs/semantics.md §9). NaN is
    not modelled.
    """
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise TypeError(f"xnnpack_quantize: x must be float32, got {x.dtype}")
    return xnnpack_quantize_plan(scale=scale, zero_point=zero_point)(x)


def xnnpack_quantize_plan(*, scale, zero_point):
    """:func:`xnnpack_quantize`'s parameters validated and derived once; returns the lean ``run(x) -> int8``
    (``x`` float32)."""
    func = "xnnpack_quantize"
    zp = int(as_int_array(zero_point, func, "zero_point", -128, 127))
    inv = np.float32(np.float32(1) / float32_scale(scale, func, "scale"))
    lo, hi = np.float32(-128 - zp), np.float32(127 - zp)

    def run(x):
        out = np.empty(x.shape, np.int8)
        src, dst = x.reshape(-1), out.reshape(-1)
        for s in range(0, src.size, _CHUNK):
            v = np.clip(np.float32(src[s:s + _CHUNK] * inv), lo, hi)
            dst[s:s + _CHUNK] = np.rint(v).astype(np.int32) + zp
        return out

    return run


@names_its_errors
def xnnpack_leaky_relu(x, *, alpha, input_scale, input_zero_point, output_scale, output_zero_point):
    """XNNPACK ``qs8-vlrelu``: :func:`xnnpack_convert` with a second multiplier for ``x < zi``,
    ``M_neg = lrintf(256 * f32(f32(s_in / s_out) * alpha))`` (the delegate needs |ratio * alpha| >= 1/256)."""
    func = "xnnpack_leaky_relu"
    x = check_tensor(x, func, "x", allowed=(np.dtype(np.int8),))
    r = _xnnpack_ratio(func, input_scale, output_scale)
    neg = np.float32(r * np.float32(alpha))
    if not (abs(neg) >= 2.0**-8 and -127.99609375 <= neg <= 128):
        raise ValueError(f"{func}: the negative slope ratio {float(neg)} is outside XNNPACK's range")
    return _xnnpack_q8_8(x, zero_point(input_zero_point, x.dtype, func, "input_zero_point"),
                         zero_point(output_zero_point, x.dtype, func, "output_zero_point"),
                         int(np.rint(np.float32(256) * r)), int(np.rint(np.float32(256) * neg)))


@names_its_errors
def xnnpack_mean(x, axis, *, input_scale, input_zero_point, output_scale, output_zero_point, keep_dims=False):
    """XNNPACK ``mean_nd`` on int8: an int32 sum of the codes, then its reference int32 -> qs8 convert::

        inv = f32(f32(s_in / s_out) * f32(1 / n))
        zp' = f32(zo - f32(float(n * zi) * inv))
        out = clamp(nearbyint(f32(f32(float(sum) * inv) + zp')))     # ties to even

    ``float(sum)`` rounds above 2^24. No fused multiply-add (baseline x86-64 build).
    """
    x = check_tensor(x, "xnnpack_mean", "x", allowed=(np.dtype(np.int8),))
    return xnnpack_mean_plan(x.shape, x.dtype, axis, input_scale=input_scale, input_zero_point=input_zero_point,
                             output_scale=output_scale, output_zero_point=output_zero_point,
                             keep_dims=keep_dims)(x)


def xnnpack_mean_plan(shape, dtype, axis, *, input_scale, input_zero_point, output_scale, output_zero_point,
                      keep_dims=False):
    """:func:`xnnpack_mean` prepared for int8 codes of ``shape`` (validated and derived once); returns the
    lean ``run(x) -> int8``."""
    func = "xnnpack_mean"
    shape, dt = check_spec(func, "x", shape, dtype, (np.dtype(np.int8),))
    axes = resolve_axes(axis, len(shape), func)
    zi = zero_point(input_zero_point, dt, func, "input_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if axes else 1
    inv = np.float32(np.float32(float32_scale(input_scale, func, "input_scale")
                                / float32_scale(output_scale, func, "output_scale")) * np.float32(np.float32(1) / n))
    zp = np.float32(np.float32(zo) - np.float32(np.float32(np.int64(n * zi).astype(np.int32)) * inv))

    def run(x):
        total = x.astype(np.int64).sum(axis=axes, keepdims=keep_dims)
        acc = ((total + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
        y = np.rint(np.float32(acc.astype(np.float32) * inv) + zp)
        return np.clip(y, -128, 127).astype(np.int8)

    return run


# --------------------------------------------------------------------------------------------
# MEAN
# --------------------------------------------------------------------------------------------
@names_its_errors
def mean(x, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False):
    """TFLite reference quantized MEAN (``reference_ops::QuantizedMeanOrSum``, compute_sum=false).

    ``multiplier``/``shift`` are ``QuantizeMultiplier(double(s_in) / double(s_out))``; the kernel
    folds the element count ``n`` (product of the reduced dimensions) into them exactly as TFLite::

        k     = min(floor(log2(n)), 32, 31 + shift)
        M'    = (multiplier << k) // n                   # int64, truncating (both positive)
        sum   = int32(sum of the codes - zp_in * n)      # int32 accumulator, wraps
        out   = clamp(MBQM(sum, M', shift - k) + zp_out) # to the dtype; no activation

    so the division by ``n`` is rounded twice more (the truncation of ``M'`` and MBQM's two
    roundings: SRDHM ties toward +inf, the right shift ties away from zero). Duplicate and negative
    axes are resolved as TFLite's ResolveAxis does. int16 (16x8) runs the same kernel (LiteRT
    ``reduce.cc``, TFLM ``reduce_common.cc``).
    """
    x = check_tensor(x, "mean", "x", allowed=_TYPES16)
    return mean_plan(x.shape, x.dtype, axis, input_zero_point=input_zero_point, output_zero_point=output_zero_point,
                     multiplier=multiplier, shift=shift, keep_dims=keep_dims)(x)


def mean_plan(shape, dtype, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False):
    """:func:`mean` prepared for codes of ``shape`` and ``dtype``: the axes resolved and ``n`` folded into
    the multiplier once; returns the lean ``run(x) -> codes``."""
    func = "mean"
    shape, dt = check_spec(func, "x", shape, dtype, _TYPES16)
    axes = resolve_axes(axis, len(shape), func)
    zi = zero_point(input_zero_point, dt, func, "input_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    m = q31_multiplier(multiplier, func, "multiplier")
    s = scalar_int(shift, func, "shift", -31, 30)
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if axes else 1
    k = min(n.bit_length() - 1, 32, 31 + s)  # >= 0: n >= 1 and s >= -31
    rq = Requant.fixed_point((m << k) // n, s - k)  # validates M' < 2^31 and the shift
    info = np.iinfo(dt)
    args = (0, zo, int(rq.multiplier[0]), int(rq.shift[0]), 0, int(info.min), int(info.max))  # "double" MBQM
    offset = zi * n

    def run(x):
        # the int32 sum wraps as TFLite's accumulator (mod 2^32, as the core's wrap of the int64 difference)
        total = x.sum(axis=axes, keepdims=keep_dims, dtype=np.int32).astype(np.int64) - offset
        out = np.empty(total.size, np.int64)
        _requantize_codes(np.ravel(total), *args, out)
        return out.astype(dt).reshape(np.shape(total))

    return run


# --------------------------------------------------------------------------------------------
# PAD, CONCATENATION (no arithmetic)
# --------------------------------------------------------------------------------------------
@names_its_errors
def pad(x, paddings, pad_value):
    """TFLite PAD / PADV2 on integer codes: ``paddings`` (rank, 2) of (before, after) >= 0, filled
    with ``pad_value`` (TFLite PAD uses the output zero point; no requantization)."""
    x = check_tensor(x, "pad", "x", allowed=_TYPES + (np.dtype(np.int16),))
    return pad_plan(x.shape, x.dtype, paddings, pad_value)(x)


def pad_plan(shape, dtype, paddings, pad_value):
    """:func:`pad` prepared for codes of ``shape`` and ``dtype`` (validated once); the lean ``run(x)`` fills
    the output with ``pad_value`` and copies ``x`` into its interior (what ``np.pad`` computes)."""
    func = "pad"
    shape, dt = check_spec(func, "x", shape, dtype, _TYPES + (np.dtype(np.int16),))
    p = as_int_array(paddings, func, "paddings", 0, 1 << 24)
    if p.shape != (len(shape), 2):
        raise ValueError(f"{func}: paddings must have shape ({len(shape)}, 2), got {p.shape}")
    v = zero_point(pad_value, dt, func, "pad_value")
    out_shape = tuple(d + int(a) + int(b) for d, (a, b) in zip(shape, p))
    if int(np.prod(out_shape, dtype=object)) > (1 << 31) - 1:
        raise ValueError(f"{func}: the padded output {out_shape} has more than 2^31 - 1 elements (TFLite's int sizes)")
    interior = tuple(slice(int(a), int(a) + d) for d, (a, _) in zip(shape, p))
    fill = dt.type(v)

    def run(x):
        out = np.full(out_shape, fill, dt)
        out[interior] = x
        return out

    return run


@names_its_errors
def concatenation(xs, axis):
    """TFLite int8 CONCATENATION: the codes copied along ``axis``.

    LiteRT's int8 kernel refuses inputs whose scale or zero point differ from the output's
    (``concatenation.cc`` Prepare), so there is no requantization to model for int8.
    """
    arrs = [check_tensor(a, "concatenation", f"xs[{i}]", allowed=_TYPES + (np.dtype(np.int16),))
            for i, a in enumerate(xs)]
    return concatenation_plan([a.shape for a in arrs], [a.dtype for a in arrs], axis)(arrs)


def concatenation_plan(shapes, dtypes, axis):
    """:func:`concatenation` prepared for inputs of ``shapes`` and ``dtypes`` (validated once); the lean
    ``run(xs)`` is ``np.concatenate`` along the resolved axis."""
    func = "concatenation"
    specs = [check_spec(func, f"xs[{i}]", s, d, _TYPES + (np.dtype(np.int16),))
             for i, (s, d) in enumerate(zip(shapes, dtypes))]
    if not specs:
        raise ValueError(f"{func}: needs at least one input")
    if any(d != specs[0][1] or len(s) != len(specs[0][0]) for s, d in specs):
        raise ValueError(f"{func}: inputs must share dtype and rank")
    ax = resolve_axes(axis, len(specs[0][0]), func)[0]
    try:
        np.concatenate([np.empty(s, np.int8) for s, _ in specs], axis=ax)  # numpy's own shape check
    except ValueError as e:
        raise ValueError(f"{func}: {e}") from None
    return lambda xs: np.concatenate(xs, axis=ax)
