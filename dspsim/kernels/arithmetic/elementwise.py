"""Quantized element-wise arithmetic: TFLite ADD and MUL (int8 / uint8 / int16), and XNNPACK's ADD.

Each is the TFLite reference integer kernel (``reference_integer_ops/add.h``, ``mul.h``), written as a
private numba loop behind a validating wrapper. The integer parameters
come from the ``tflite_*_params`` helpers, which do what each op's Prepare does with the float
scales. Broadcasting (ADD, MUL) follows numpy's rule, which is what TFLite's
``BroadcastBinaryOpSimple`` computes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._errors import names_its_errors
from numba import njit

from ...fixedpoint import (
    multiply_by_quantized_multiplier_scalar, quantize_multiplier, wrap_scalar,
)
from ...requant import output_range
from ...simd import requant_lanes
from ...simd.add_lanes import USE_LANES, add_lanes, mul_lanes, xnnpack_add_lanes
from .._plan import flat_operand
from .._checks import (
    broadcast_shape, check_spec, checked_pair, float32_scale, q31_multiplier, scalar_int,
    zero_point,
)

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


@njit(cache=True, inline="always")
def _neon_narrow(v, zo, saturating):
    """The NEON blocks' output: ``v`` narrowed to int16 (``vqmovn_s32`` saturates, ``vmovn_s32`` wraps), then the
    zero point added in int16 (``vaddq_s16`` wraps). The 8-bit saturation after it is the caller's clamp."""
    narrow = min(max(v, -32768), 32767) if saturating else wrap_scalar(v, 16)
    return wrap_scalar(narrow + zo, 16)


@njit(cache=True, inline="always")
def _input_value(x, m, steps):
    """One input on the common scale: ``RDBP(SRDHM(wrap32((x >> pre) << left), m), round) >> floor`` for
    ``steps = (pre, left, round, floor)`` (:func:`_reference_steps`, :func:`_optimized_steps`)."""
    pre, left, rnd, flr = steps
    return multiply_by_quantized_multiplier_scalar(wrap_scalar((x >> pre) << left, 32), m, -rnd) >> flr


@njit(cache=True, inline="always")
def _requantized_sum(x1, x2, zp1, zp2, m1, m2, mo, so, steps1, steps2):
    """``MBQM(wrap32(v1 + v2), Mo, So)`` of the codes ``x1``, ``x2``, each input's ``v`` by :func:`_input_value`."""
    v1 = _input_value(np.int64(x1) - zp1, m1, steps1)
    v2 = _input_value(np.int64(x2) - zp2, m2, steps2)
    return multiply_by_quantized_multiplier_scalar(wrap_scalar(v1 + v2, 32), mo, so)


@njit(cache=True)
def _add(a, b, zp1, zp2, zo, m1, m2, mo, so, front1, front2, tail1, tail2, call, front, narrow, lo, hi, lanes, out):
    """The outputs in calls of ``call`` values: the first ``front`` of each with the inputs' steps ``front1``,
    ``front2`` (the int32 lanes where ``narrow`` is off), the rest with ``tail1``, ``tail2``; ``narrow``: the front
    wraps its value to int16 and adds ``zo`` in int16 (:func:`_neon_narrow`) before the clamp."""
    for start in range(0, out.size, call):
        j = start
        if USE_LANES and not narrow:  # int32 vector lanes (AVX2, jit only): the same values
            j = add_lanes(a, b, start, start + front, lanes, zp1, zp2, zo, front1, front2, so, lo, hi, out)
        for i in range(j, start + front):
            v = _requantized_sum(a[i], b[i], zp1, zp2, m1, m2, mo, so, front1, front2)
            out[i] = min(max(_neon_narrow(v, zo, False) if narrow else v + zo, lo), hi)
        for i in range(start + front, start + call):
            out[i] = min(max(_requantized_sum(a[i], b[i], zp1, zp2, m1, m2, mo, so, tail1, tail2) + zo, lo), hi)


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


def _add_arguments(params, func):
    """``left_shift, M1, S1, M2, S2, Mo, So`` of an AddParams, each checked (TypeError for another object)."""
    if not isinstance(params, AddParams):
        raise TypeError(f"{func}: params must be an AddParams (tflite_add_params), got {type(params).__name__}")
    args = [scalar_int(params.left_shift, func, "left_shift", 0, 22)]
    for k in ("input1", "input2", "output"):
        args.append(q31_multiplier(getattr(params, f"{k}_multiplier"), func, f"{k}_multiplier"))
        args.append(scalar_int(getattr(params, f"{k}_shift"), func, f"{k}_shift", -31, 0))
    return args


def _reference_steps(ls, s):
    """The reference's input steps (:func:`_input_value`): ``MBQM(x << ls, M, S)``."""
    return 0, ls, -s, 0


def _add_runner(func, shape1, shape2, dtype, params, zps, act_min, act_max, allowed, blocks=None):
    """The lean ``run(x1, x2) -> out`` of an ADD, everything validated here: the reference on every value, or with
    ``blocks = (call, front, steps1, steps2)`` LiteRT's optimized kernel: calls of ``call`` values whose first
    ``front`` take the inputs' ``steps`` (:func:`_input_value`) and the int16 narrow, the rest the reference."""
    ls, m1, s1, m2, s2, mo, so = _add_arguments(params, func)
    flat1, flat2, shape, t, lo, hi, zp1, zp2, zo = _binary_plan(func, shape1, shape2, dtype, *zps, act_min, act_max,
                                                                allowed)
    size, out_dtype = math.prod(shape), t.dtype
    tail1, tail2 = _reference_steps(ls, s1), _reference_steps(ls, s2)
    call, front, front1, front2 = (max(size, 1), max(size, 1), tail1, tail2) if blocks is None else blocks
    narrow = False
    if blocks is not None:  # the values are monotone in the codes: the narrow cannot wrap if the extremes' cannot
        q = [_requantized_sum(c, c, zp1, zp2, m1, m2, mo, so, front1, front2) for c in (t.min, t.max)]
        narrow = not all(-32768 <= v and -32768 <= v + zo and v <= 32767 and v + zo <= 32767 for v in q)
    # each multiplier in 8 lanes, then the output's float32 lanes (add_lanes)
    out_lanes = requant_lanes.lane_parameters(np.array([mo]), np.array([so]), 1, False)[3:, 0]
    lanes = np.repeat(np.concatenate([np.array([m1, m2, mo], np.int32), out_lanes]), 8)

    def run(x1, x2):
        out = np.empty(size, out_dtype)
        _add(flat1(x1), flat2(x2), zp1, zp2, zo, m1, m2, mo, so, front1, front2, tail1, tail2, call, front, narrow,
             lo, hi, lanes, out)
        return out.reshape(shape)

    return run


def add_plan(shape1, shape2, dtype, params: AddParams, *, input1_zero_point, input2_zero_point, output_zero_point,
             act_min=None, act_max=None):
    """:func:`add` prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype``: every argument
    validated here, once; returns the lean ``run(x1, x2) -> out`` (inputs of exactly those shapes and
    dtype, unchecked)."""
    return _add_runner("add", shape1, shape2, dtype, params, (input1_zero_point, input2_zero_point, output_zero_point),
                       act_min, act_max, _TYPES16)


# --------------------------------------------------------------------------------------------
# ADD: LiteRT's optimized 8-bit kernels
# --------------------------------------------------------------------------------------------
def litert_broadcast_runs(shape1, shape2):
    """How LiteRT's optimized binary kernels walk two operands (``ProcessBroadcastShapes``,
    ``BinaryBroadcastFiveFold``): ``(run, elementwise)``, the output split into consecutive calls of ``run``
    values each, ``elementwise`` True for the elementwise kernel (equal shapes: one call over everything;
    the fivefold pattern with an inner run ``y4 > 1``), False for the scalar-broadcast kernel (``y4 == 1``: a
    call per ``y3`` values). None for the generic broadcast (the reference kernel runs)."""
    rank = max(len(shape1), len(shape2))
    a = (1,) * (rank - len(shape1)) + tuple(shape1)
    b = (1,) * (rank - len(shape2)) + tuple(shape2)
    if a == b:
        return max(math.prod(a), 1), True
    k = max(i for i in range(rank) if a[i] != b[i])
    if a[k] != 1:  # the second input broadcasts fast: the kernel swaps the operands
        a, b = b, a
    y, i = [1] * 5, rank - 1
    for slot, holds, dims in ((4, lambda j: a[j] == b[j], b), (3, lambda j: a[j] == 1, b),
                              (2, lambda j: a[j] == b[j], a), (1, lambda j: b[j] == 1, a),
                              (0, lambda j: a[j] == b[j], b)):
        while i >= 0 and holds(i):
            y[slot] *= dims[i]
            i -= 1
    if i >= 0:
        return None
    return (y[4], True) if y[4] > 1 else (y[3], False)


def _optimized_steps(ls, s, combined):
    """LiteRT's blocks' input steps (:func:`_input_value`): one SRDHM after the ``combined`` shift ``ls + S`` (a
    floor shift right where it is negative; the int8 elementwise kernel), else a floor shift by ``-S`` after SRDHM."""
    return (max(-ls - s, 0), max(ls + s, 0), 0, 0) if combined else (0, ls, 0, -s)


def litert_optimized_add_plan(shape1, shape2, dtype, params: AddParams, *, input1_zero_point, input2_zero_point,
                              output_zero_point, act_min=None, act_max=None):
    """LiteRT's optimized int8 / uint8 ADD (``optimized_integer_ops/add.h``, ``optimized_ops.h``; on x86 the NEON
    code through NEON_2_SSE), prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype``.

    The operands are walked as :func:`litert_broadcast_runs` says; a generic broadcast runs :func:`add`. Inside
    each call, whole blocks of lanes (16 for the int8 elementwise kernel, 8 for its scalar-broadcast kernel and
    both uint8 kernels) compute, in int32::

        a = SRDHM((x1 - zp1) << (left_shift + S1), M1)           # int8 elementwise: one rounding
        a = SRDHM((x1 - zp1) << left_shift, M1) >> -S1           # the others: a floor shift after
        out = wrap16(wrap16(RoundingDivideByPOT(SRDHM(a + b, Mo), -So)) + zo)   # vmovn_s32, int16 add

    then saturate and clamp to ``[act_min, act_max]``: an output beyond int16 wraps (the reference clamps it).
    SRDHM ties toward +inf, RoundingDivideByPOT away from zero. The tail of each call (``run % lanes`` values)
    is :func:`add`'s reference arithmetic. The blocks run in :func:`dspsim.simd.add_lanes.add_lanes` where the
    extreme codes' sums plus ``zo`` stay inside int16 (the values are monotone in the codes, so the narrow cannot
    wrap: an output scale at most ~2^7 below the inputs'), else in the scalar loop. Returns the lean
    ``run(x1, x2) -> out``.
    """
    func = "litert_optimized_add"
    ls, _, s1, _, s2, _, _ = _add_arguments(params, func)
    zps = (input1_zero_point, input2_zero_point, output_zero_point)
    _binary_plan(func, shape1, shape2, dtype, *zps, act_min, act_max)
    walk = litert_broadcast_runs(shape1, shape2)
    if walk is None:
        return add_plan(shape1, shape2, dtype, params, input1_zero_point=input1_zero_point,
                        input2_zero_point=input2_zero_point, output_zero_point=output_zero_point, act_min=act_min,
                        act_max=act_max)
    call, elementwise = walk
    combined = elementwise and np.dtype(dtype) == np.int8
    lanes = 16 if combined else 8
    blocks = call, call // lanes * lanes, _optimized_steps(ls, s1, combined), _optimized_steps(ls, s2, combined)
    return _add_runner(func, shape1, shape2, dtype, params, zps, act_min, act_max, _TYPES, blocks)


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
def _mul(a, b, zp1, zp2, zo, m, s, scale, fp32, call, front, narrow, saturating, lo, hi, lanes, out):
    """The outputs in calls of ``call`` values; with ``narrow`` the first ``front`` of each narrow to int16
    (:func:`_neon_narrow`, ``saturating`` or wrapping) before the clamp. The fixed-point MUL of 8-bit codes runs in
    int32 vector lanes where ``narrow`` is off (AVX2, jit only): the same values."""
    for start in range(0, out.size, call):
        j = start
        if USE_LANES and not fp32 and not narrow:
            j = mul_lanes(a, b, start, start + front, lanes, zp1, zp2, zo, s, lo, hi, out)
        for i in range(j, start + call):
            acc = (np.int64(a[i]) - zp1) * (np.int64(b[i]) - zp2)
            if fp32:  # |acc| <= 2^16: exact in float32; one float32 product, ties to even
                v = np.int64(np.rint(np.float32(acc) * scale))
            else:
                v = multiply_by_quantized_multiplier_scalar(acc, m, s)
            v = _neon_narrow(v, zo, saturating) if narrow and i < start + front else v + zo
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
    return _mul_runner("mul", shape1, shape2, dtype, (input1_zero_point, input2_zero_point, output_zero_point),
                       multiplier, shift, scale, act_min, act_max)


def _mul_runner(func, shape1, shape2, dtype, zps, multiplier, shift, scale, act_min, act_max, blocks=None):
    """The lean ``run(x1, x2) -> out`` of a MUL, everything validated here: the reference (or XNNPACK's, with
    ``scale``) on every value, or with ``blocks = (call, front, saturating)`` LiteRT's optimized kernel: calls of
    ``call`` values whose first ``front`` narrow to int16 (saturating or wrapping), the rest the reference."""
    allowed = _TYPES if blocks is not None else _TYPES16
    flat1, flat2, shape, t, lo, hi, zp1, zp2, zo = _binary_plan(func, shape1, shape2, dtype, *zps, act_min, act_max,
                                                                allowed)
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
    call, front, saturating = (max(size, 1), max(size, 1), True) if blocks is None else blocks
    narrow = blocks is not None and not _narrow_is_exact(t, zp1, zp2, zo, m, s)
    # the multiplier in 8 lanes, then its float32 lanes (mul_lanes)
    lanes = np.repeat(np.concatenate([np.array([m], np.int32),
                                      requant_lanes.lane_parameters(np.array([m]), np.array([s]), 1, False)[3:, 0]]), 8)

    def run(x1, x2):
        out = np.empty(size, out_dtype)
        _mul(flat1(x1), flat2(x2), zp1, zp2, zo, m, s, sc, fp32, call, front, narrow, saturating, lo, hi, lanes, out)
        return out.reshape(shape)

    return run


def _narrow_is_exact(t, zp1, zp2, zo, m, s):
    """Whether LiteRT's int16 narrow leaves every MUL output of codes of type ``t`` as the reference's: the products'
    extremes lie at the corners, and ``MBQM`` is monotone where its left shift cannot wrap; their outputs and ``+ zo``
    inside int16."""
    products = [(c1 - zp1) * (c2 - zp2) for c1 in (t.min, t.max) for c2 in (t.min, t.max)]
    if max(abs(p) for p in products) << max(s, 0) >= 1 << 31:
        return False
    q = [int(multiply_by_quantized_multiplier_scalar(np.int64(p), m, s)) for p in (min(products), max(products))]
    return all(-32768 <= v and -32768 <= v + zo and v <= 32767 and v + zo <= 32767 for v in q)


def litert_optimized_mul_plan(shape1, shape2, dtype, *, input1_zero_point, input2_zero_point, output_zero_point,
                              multiplier, shift, act_min=None, act_max=None):
    """LiteRT's optimized int8 / uint8 MUL (``optimized_integer_ops/mul.h``, ``optimized_ops.h``; on x86 the NEON
    code through NEON_2_SSE), prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype``.

    The operands are walked as :func:`litert_broadcast_runs` says; a generic broadcast runs :func:`mul`. Whole
    blocks (16 lanes for int8, 8 for uint8) compute the reference's ``MBQM((x1 - zp1) * (x2 - zp2), M, S)``, narrow
    it to int16 (saturating; wrapping in the uint8 scalar-broadcast kernel) and add ``zo`` in int16, which wraps:
    a product saturated at 32,767 plus a positive zero point comes out at the type's minimum, where the reference
    clamps to its maximum. The tail of each call is the reference. The blocks run in
    :func:`dspsim.simd.add_lanes.mul_lanes` where the narrow cannot change a value (:func:`_narrow_is_exact`), else in
    the scalar loop. Returns the lean ``run(x1, x2) -> out``.
    """
    func = "litert_optimized_mul"
    zps = (input1_zero_point, input2_zero_point, output_zero_point)
    _binary_plan(func, shape1, shape2, dtype, *zps, act_min, act_max)
    q31_multiplier(multiplier, func, "multiplier")
    scalar_int(shift, func, "shift", -31, 30)
    walk = litert_broadcast_runs(shape1, shape2)
    if walk is None:
        return mul_plan(shape1, shape2, dtype, input1_zero_point=input1_zero_point,
                        input2_zero_point=input2_zero_point, output_zero_point=output_zero_point,
                        multiplier=multiplier, shift=shift, act_min=act_min, act_max=act_max)
    call, elementwise = walk
    lanes, saturating = (16, True) if np.dtype(dtype) == np.int8 else (8, elementwise)
    return _mul_runner(func, shape1, shape2, dtype, zps, multiplier, shift, None, act_min, act_max,
                       (call, call // lanes * lanes, saturating))


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
    i0 = 0
    if USE_LANES:  # the front in int32 vector lanes (AVX2, jit only): the same values
        i0 = xnnpack_add_lanes(a, b, bias, ma, mb, shift, zo, lo, hi, out)
    for i in range(i0, out.size):
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
    shift = scalar_int(params.shift, func, "params.shift", 1, 31)  # xnnpack_add_params: [12, 30]
    bias = (1 << (shift - 1)) - params.a_multiplier * zp1 - params.b_multiplier * zp2
    ma, mb, size, out_dtype = params.a_multiplier, params.b_multiplier, math.prod(shape), t.dtype

    def run(x1, x2):
        out = np.empty(size, out_dtype)
        _xnnpack_add(flat1(x1), flat2(x2), bias, ma, mb, shift, zo, lo, hi, out)
        return out.reshape(shape)

    return run
