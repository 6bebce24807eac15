"""Quantized SUB, SQUARED_DIFFERENCE, MAXIMUM and MINIMUM (int8 / uint8 / int16), with broadcasting.

SUB and SQUARED_DIFFERENCE are the rescaling binary ops of TFLite's reference kernels
(``reference_ops::BroadcastQuantSubSlow`` / ``SubElementwise`` in ``reference/sub.h``; the int8
``SquaredDifference`` of LiteRT ``kernels/squared_difference.cc`` and tflite-micro
``micro/kernels/squared_difference.cc``): both inputs are brought onto a common scale exactly as ADD
does (:class:`dspsim.kernels.arithmetic.elementwise.AddParams`), then subtracted (and squared), then
requantized. MAXIMUM and MINIMUM compare the codes themselves (``reference_ops::MaximumMinimumBroadcastSlow``):
no requantization. Broadcasting follows numpy's rule, which is what TFLite's
``BroadcastBinaryOpSimple`` (up to rank 6) computes; an element's value does not depend on how the
engine walks the broadcast, so the "fast path" variants give the same integers.
"""
from __future__ import annotations

import math
import numpy as np
from numba import njit

from ..._errors import names_its_errors
from ...fixedpoint import multiply_by_quantized_multiplier_scalar, quantize_multiplier, wrap_scalar
from .._checks import float32_scale, q31_multiplier, scalar_int
from .elementwise import AddParams, XnnpackAddParams, _binary_plan, xnnpack_add_params
from .._checks import broadcast_shape, check_spec, checked_pair

__all__ = ["maximum", "maximum_plan", "minimum", "minimum_plan", "squared_difference", "squared_difference_plan", "sub", "sub_plan",
           "tflite_squared_difference_params", "tflite_sub_params", "xnnpack_sub_params"]

QUOTIENTS = ("double", "float32")
_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
_MINMAX_TYPES = _TYPES + (np.dtype(np.int32),)  # MAXIMUM / MINIMUM also compare plain int32 tensors


# --------------------------------------------------------------------------------------------
# parameters (Prepare)
# --------------------------------------------------------------------------------------------
def _three_scales(func, input1_scale, input2_scale, output_scale):
    return (float32_scale(input1_scale, func, "input1_scale"), float32_scale(input2_scale, func, "input2_scale"),
            float32_scale(output_scale, func, "output_scale"))


def tflite_sub_params(input1_scale, input2_scale, output_scale, *, quotient="double", left_shift=20) -> AddParams:
    """TFLite SUB Prepare (general path): ``left_shift`` (20 for 8-bit, 15 for int16) and the three
    multipliers of ADD's scheme.

    ``twice_max = 2 * max(s1, s2)``, ``m_i = s_i / twice_max``, ``m_out = twice_max / (2^ls * s_out)``,
    each through ``QuantizeMultiplier``. ``quotient`` says how the engine divides:

    * ``"double"``: LiteRT ``sub.cc`` ``PrepareGeneralSubOp`` (the scales widened to double first);
    * ``"float32"``: tflite-micro ``sub_common.cc`` ``CalculateOpDataSub`` as of commit 686df2db9, whose
      quotients are float32 divisions (``float / float``) converted to double afterwards, so the
      multipliers keep only 24 significant bits. The tflite-micro wheel measured here
      (0.dev20261023) behaves as ``"double"`` (docs/engines.md).

    ValueError unless ``m_out < 1``: tflite-micro's ``QuantizeMultiplierSmallerThanOneExp`` aborts;
    LiteRT takes ``m_out > 1`` (``QuantizeMultiplierGreaterThanOne``) and then calls
    ``RoundingDivideByPOT`` with a negative exponent (undefined behaviour), so dspsim refuses it too.
    """
    func = "tflite_sub_params"
    if quotient not in QUOTIENTS:
        raise ValueError(f"{func}: quotient must be one of {QUOTIENTS}, got {quotient!r}")
    if left_shift not in (15, 20):
        raise ValueError(f"{func}: left_shift must be 20 (8-bit) or 15 (int16), got {left_shift!r}")
    s1, s2, so = _three_scales(func, input1_scale, input2_scale, output_scale)
    twice_max = np.float32(2) * max(s1, s2)  # float32, exact
    denom = np.float32(np.float32(1 << left_shift) * so)  # int * float: float32 in both engines
    if quotient == "double":
        reals = (np.float64(s1) / np.float64(twice_max), np.float64(s2) / np.float64(twice_max),
                 np.float64(twice_max) / np.float64(denom))
    else:
        reals = tuple(np.float64(np.float32(a / b)) for a, b in ((s1, twice_max), (s2, twice_max), (twice_max, denom)))
    if not reals[2] < 1.0:
        raise ValueError(f"{func}: the output multiplier 2*max(s1, s2) / (2^{left_shift} * s_out) = "
                         f"{float(reals[2])} must be < 1 (QuantizeMultiplierSmallerThanOneExp; LiteRT's kernel is "
                         "undefined beyond it)")
    (m1, e1), (m2, e2), (mo, eo) = (quantize_multiplier(float(r)) for r in reals)
    return AddParams(left_shift, m1, e1, m2, e2, mo, eo)


def tflite_squared_difference_params(input1_scale, input2_scale, output_scale, *,
                                     output_multiplier_below_one=True, left_shift=7) -> AddParams:
    """SQUARED_DIFFERENCE Prepare: ``left_shift`` 7 for int8, 0 for int16 (tflite-micro's int16 kernel; its
    inputs are halved, so the square of their difference stays below 2^30), inputs as ADD, output for the square.

    ``twice_max = 2 * max(s1, s2)``, ``m_i = double(s_i) / twice_max``, ``m_out = twice_max^2 /
    double(f32(2^(2 * left_shift) * s_out))`` (double; ``twice_max^2`` is exact), each through
    ``QuantizeMultiplier``. LiteRT derives ``m_out`` with ``QuantizeMultiplierSmallerThanOneExp``, which aborts
    unless ``m_out < 1`` (``output_multiplier_below_one=True``: ValueError); tflite-micro uses
    ``QuantizeMultiplier`` and takes any ``m_out`` (a left shift, ``False``).
    """
    func = "tflite_squared_difference_params"
    s1, s2, so = _three_scales(func, input1_scale, input2_scale, output_scale)
    if left_shift not in (0, 7):
        raise ValueError(f"{func}: left_shift must be 7 (int8) or 0 (int16), got {left_shift!r}")
    twice_max = np.float64(np.float32(2) * max(s1, s2))
    reals = (np.float64(s1) / twice_max, np.float64(s2) / twice_max,
             twice_max * twice_max / np.float64(np.float32(np.float32(1 << (2 * left_shift)) * so)))
    if output_multiplier_below_one and not reals[2] < 1.0:
        raise ValueError(f"{func}: the output multiplier (2*max(s1, s2))^2 / (2^14 * s_out) = {float(reals[2])} must "
                         "be < 1 (LiteRT's QuantizeMultiplierSmallerThanOneExp check)")
    (m1, e1), (m2, e2), (mo, eo) = (quantize_multiplier(float(r)) for r in reals)
    if eo > 30:
        raise ValueError(f"{func}: the output multiplier {float(reals[2])} needs a left shift of {eo} > 30")
    return AddParams(left_shift, m1, e1, m2, e2, mo, eo)


@names_its_errors
def xnnpack_sub_params(input1_scale, input2_scale, output_scale) -> XnnpackAddParams:
    """XNNPACK SUB (``binary-elementwise-nd.c``): ``qs8-vadd`` with input 2's scale negated.

    :func:`dspsim.kernels.arithmetic.elementwise.xnnpack_add_params` on ``|s_i / s_out|``, then the multiplier of
    input 2 negated (``xnn_init_qs8_add_minmax_scalar_params`` takes the sign from ``signbit``); run it
    with :func:`dspsim.kernels.arithmetic.elementwise.xnnpack_add`. ValueError outside LiteRT's delegation range
    (ratios in [2^-10, 2^8)).
    """
    p = xnnpack_add_params(input1_scale, input2_scale, output_scale)
    return XnnpackAddParams(p.a_multiplier, -p.b_multiplier, p.shift)


# --------------------------------------------------------------------------------------------
# SUB, SQUARED_DIFFERENCE
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _rescaled_difference(a, b, square, zp1, zp2, zo, left_shift, m1, s1, m2, s2, mo, so, lo, hi, out):
    for i in range(out.size):
        v1 = multiply_by_quantized_multiplier_scalar(wrap_scalar((np.int64(a[i]) - zp1) << left_shift, 32), m1, s1)
        v2 = multiply_by_quantized_multiplier_scalar(wrap_scalar((np.int64(b[i]) - zp2) << left_shift, 32), m2, s2)
        d = wrap_scalar(v1 - v2, 32)
        if square:
            d = wrap_scalar(d * d, 32)
        v = multiply_by_quantized_multiplier_scalar(d, mo, so) + zo
        out[i] = min(max(v, lo), hi)


def _rescaled_plan(func, square, shape1, shape2, dtype, params, zps, act_min, act_max, output_shift_max):
    """SUB / SQUARED_DIFFERENCE prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype``
    (validated once); returns the lean ``run(x1, x2) -> out``."""
    if not isinstance(params, AddParams):
        raise TypeError(f"{func}: params must be an AddParams, got {type(params).__name__}")
    flat1, flat2, shape, t, lo, hi, zp1, zp2, zo = _binary_plan(func, shape1, shape2, dtype, *zps, act_min, act_max,
                                                                _TYPES)
    ls = scalar_int(params.left_shift, func, "left_shift", 0, 22)
    args = []
    for k, top in (("input1", 0), ("input2", 0), ("output", output_shift_max)):
        args.append(q31_multiplier(getattr(params, f"{k}_multiplier"), func, f"{k}_multiplier"))
        args.append(scalar_int(getattr(params, f"{k}_shift"), func, f"{k}_shift", -31, top))
    m1, s1, m2, s2, mo, so = args
    size, out_dtype = math.prod(shape), t.dtype

    def run(x1, x2):
        out = np.empty(size, out_dtype)
        _rescaled_difference(flat1(x1), flat2(x2), square, zp1, zp2, zo, ls, m1, s1, m2, s2, mo, so, lo, hi, out)
        return out.reshape(shape)

    return run


def _run_rescaled(func, square, x1, x2, params, zps, act_min, act_max, output_shift_max):
    if not isinstance(params, AddParams):
        raise TypeError(f"{func}: params must be an AddParams, got {type(params).__name__}")
    x1, x2 = checked_pair(func, x1, x2, _TYPES)
    return _rescaled_plan(func, square, x1.shape, x2.shape, x1.dtype, params, zps, act_min, act_max,
                          output_shift_max)(x1, x2)


def sub_plan(shape1, shape2, dtype, params: AddParams, *, input1_zero_point, input2_zero_point, output_zero_point,
             act_min=None, act_max=None):
    """:func:`sub` prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype``: the lean
    ``run(x1, x2) -> out``."""
    return _rescaled_plan("sub", False, shape1, shape2, dtype, params,
                          (input1_zero_point, input2_zero_point, output_zero_point), act_min, act_max, 0)


def squared_difference_plan(shape1, shape2, dtype, params: AddParams, *, input1_zero_point, input2_zero_point,
                            output_zero_point):
    """:func:`squared_difference` prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype``: the
    lean ``run(x1, x2) -> out``."""
    return _rescaled_plan("squared_difference", True, shape1, shape2, dtype, params,
                          (input1_zero_point, input2_zero_point, output_zero_point), None, None, 30)


def sub(x1, x2, params: AddParams, *, input1_zero_point, input2_zero_point, output_zero_point, act_min=None,
        act_max=None):
    """TFLite reference quantized SUB (``reference_ops::BroadcastQuantSubSlow``), with broadcasting.

    Per element, in int32 (``MBQM`` = MultiplyByQuantizedMultiplier, shifts <= 0)::

        a = MBQM((x1 - zp1) << left_shift, M1, S1)      # both inputs onto a common scale
        b = MBQM((x2 - zp2) << left_shift, M2, S2)
        out = clamp(MBQM(a - b, Mo, So) + zo, act_min, act_max)

    Each MBQM rounds twice: SRDHM ties toward +inf, then the right shift ties away from zero (so
    ``sub(x, y)`` is not ``-sub(y, x)`` at ties). The only saturation is the final clamp.

    Parameters
    ----------
    x1, x2 : int8, uint8 or int16 arrays (same dtype), broadcastable
    params : AddParams
        From :func:`tflite_sub_params` (``left_shift`` 20 for 8-bit, 15 for int16).
    input1_zero_point, input2_zero_point, output_zero_point : int
    act_min, act_max : int, optional
        Fused activation range (default the full range of the dtype).

    Returns an array of the inputs' dtype with the broadcast shape.
    """
    return _run_rescaled("sub", False, x1, x2, params, (input1_zero_point, input2_zero_point, output_zero_point),
                         act_min, act_max, 0)


def squared_difference(x1, x2, params: AddParams, *, input1_zero_point, input2_zero_point, output_zero_point):
    """Quantized SQUARED_DIFFERENCE (LiteRT and tflite-micro int8 ``SquaredDifference``; tflite-micro's int16,
    ``left_shift`` 0), broadcasting.

    Per element, in int32 (``L`` = ``params.left_shift``)::

        a = MBQM((x1 - zp1) << L, M1, S1)
        b = MBQM((x2 - zp2) << L, M2, S2)
        out = clamp(MBQM((a - b)^2, Mo, So) + zo)       # to the dtype's range; no activation

    For 8-bit codes ``|a - b| <= 255 * 2^6``, for int16 ``|a - b| <= 2^15``, so the square fits in int32 (it wraps
    otherwise). MBQM
    rounds twice (SRDHM ties toward +inf, the right shift ties away from zero); ``So > 0``
    (tflite-micro, ``m_out >= 1``) shifts left first, wrapping in int32. The clamp to the dtype is the only saturation.

    ``params`` from :func:`tflite_squared_difference_params`.
    """
    return _run_rescaled("squared_difference", True, x1, x2, params,
                         (input1_zero_point, input2_zero_point, output_zero_point), None, None, 30)


# --------------------------------------------------------------------------------------------
# MAXIMUM, MINIMUM
# --------------------------------------------------------------------------------------------
def maximum(x1, x2):
    """TFLite MAXIMUM on int8/uint8/int16 codes or int32 values (``reference_ops::MaximumMinimumBroadcastSlow``),
    broadcasting.

    The codes are compared as they are: neither LiteRT nor tflite-micro rescales, and neither checks
    that the inputs share the output's scale and zero point (the converter gives them one). No
    rounding, no saturation.
    """
    x1, x2 = checked_pair("maximum", x1, x2, _MINMAX_TYPES)
    return np.asarray(maximum_plan(x1.shape, x2.shape, x1.dtype)(x1, x2))


def minimum(x1, x2):
    """TFLite MINIMUM on int8/uint8/int16 codes or int32 values: like :func:`maximum`, the smaller one."""
    x1, x2 = checked_pair("minimum", x1, x2, _MINMAX_TYPES)
    return np.asarray(minimum_plan(x1.shape, x2.shape, x1.dtype)(x1, x2))


def _compare_plan(func, ufunc, shape1, shape2, dtype):
    shape1, _ = check_spec(func, "x1", shape1, dtype, _MINMAX_TYPES)
    shape2, _ = check_spec(func, "x2", shape2, dtype, _MINMAX_TYPES)
    broadcast_shape(func, shape1, shape2)
    return ufunc


def maximum_plan(shape1, shape2, dtype):
    """:func:`maximum` prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype``: the lean
    ``run(x1, x2)`` is ``np.maximum`` (numpy's broadcast is TFLite's)."""
    return _compare_plan("maximum", np.maximum, shape1, shape2, dtype)


def minimum_plan(shape1, shape2, dtype):
    """:func:`minimum` prepared for operands of shapes ``shape1``, ``shape2`` and ``dtype``: ``np.minimum``."""
    return _compare_plan("minimum", np.minimum, shape1, shape2, dtype)
