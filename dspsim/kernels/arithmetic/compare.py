"""The comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL) and LOGICAL_AND / OR / NOT,
with numpy broadcasting; the output is bool.

Quantized inputs (int8 / uint8 / int16) are compared after TFLite's rescaling (``reference_ops::
ComparisonWithScaling`` in ``internal/reference/comparisons.h``; LiteRT ``kernels/comparisons.cc``
``ComparisonQuantized``, tflite-micro ``micro/kernels/comparisons.cc`` ``ComparisonsPrepare``): each input
``x`` becomes::

    MultiplyByQuantizedMultiplierSmallerThanOneExp((x - zp) * 2^8, m, shift)
        = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul((x - zp) << 8, m), -shift)

with ``(m, shift) = QuantizeMultiplier(scale)`` of the input's own scale (not a ratio), and the two results
compared as int32. Both roundings can merge neighbouring codes, so two inputs of different scales may compare
equal where their real values differ (and the real order is kept: both maps are monotone). The map of a code does
not depend on the other input, so it is one table per input, made at load. int32, int64 and bool inputs are
compared raw.
"""
from __future__ import annotations

from enum import Enum

import numpy as np

from ...fixedpoint import quantize_multiplier, rounding_divide_by_pot, saturating_rounding_doubling_high_mul
from .._checks import broadcast_shape

__all__ = ["CompareOp", "LogicalOp", "comparison_plan", "comparison_scaling", "logical_plan", "scaled_codes"]

LEFT_SHIFT = 8  # ComparisonParams.left_shift in both engines


class CompareOp(str, Enum):
    """Which comparison (the TFLite builtin's name)."""

    EQUAL = "EQUAL"
    NOT_EQUAL = "NOT_EQUAL"
    LESS = "LESS"
    LESS_EQUAL = "LESS_EQUAL"
    GREATER = "GREATER"
    GREATER_EQUAL = "GREATER_EQUAL"


class LogicalOp(str, Enum):
    """LOGICAL_AND, LOGICAL_OR (binary) and LOGICAL_NOT (unary) on bool tensors."""

    LOGICAL_AND = "LOGICAL_AND"
    LOGICAL_OR = "LOGICAL_OR"
    LOGICAL_NOT = "LOGICAL_NOT"


_NP = {CompareOp.EQUAL: np.equal, CompareOp.NOT_EQUAL: np.not_equal, CompareOp.LESS: np.less,
       CompareOp.LESS_EQUAL: np.less_equal, CompareOp.GREATER: np.greater, CompareOp.GREATER_EQUAL: np.greater_equal}
_QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
_RAW = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_))


def comparison_scaling(scale):
    """``(multiplier, shift)`` of an input of ``scale`` (``QuantizeMultiplier(double(scale))``). ValueError when
    ``scale >= 1`` (a positive shift: ``MultiplyByQuantizedMultiplierSmallerThanOneExp`` then calls
    ``RoundingDivideByPOT`` with a negative exponent, undefined; tflite-micro's
    ``QuantizeMultiplierSmallerThanOneExp`` aborts)."""
    s = float(np.float32(scale))
    if not (np.isfinite(s) and s > 0):
        raise ValueError(f"comparison_scaling: scale must be finite and positive, got {scale}")
    m, shift = quantize_multiplier(s)
    if shift > 0:
        raise ValueError(f"comparison_scaling: scale {s} >= 1 needs a left shift of {shift}: TFLite's rescaling "
                         "(MultiplyByQuantizedMultiplierSmallerThanOneExp) is undefined for it")
    return int(m), int(shift)


def scaled_codes(dtype, zero_point, multiplier, shift):
    """Every code of ``dtype`` (int8 / uint8 / int16) as the comparison sees it: an int32 table indexed by
    ``code - min(dtype)``."""
    info = np.iinfo(dtype)
    codes = np.arange(int(info.min), int(info.max) + 1, dtype=np.int64)
    shifted = ((codes - int(zero_point)) << LEFT_SHIFT).astype(np.int32)  # |x - zp| < 2^16: no overflow
    high = saturating_rounding_doubling_high_mul(shifted, np.int32(multiplier))
    return rounding_divide_by_pot(high, min(-int(shift), 31)).astype(np.int32)


def comparison_plan(shape1, shape2, dtype, op, scaling=None):
    """The lean ``run(x1, x2) -> bool array`` of comparison ``op`` (a :class:`CompareOp` or its name).

    ``scaling``: None (the codes compared raw: int32, int64, bool, or quantized inputs an engine compares raw), or
    ``((zp1, m1, shift1), (zp2, m2, shift2))`` for int8 / uint8 / int16 inputs (the module docstring).
    """
    func = "comparison_plan"
    op = CompareOp(op)
    dtype = np.dtype(dtype)
    out_shape = broadcast_shape(func, tuple(shape1), tuple(shape2))
    compare = _NP[op]
    if scaling is None:
        if dtype not in _QUANTIZED + _RAW:
            raise TypeError(f"{func}: dtype must be one of {[d.name for d in _QUANTIZED + _RAW]}, got {dtype}")
        return lambda x1, x2: compare(x1, x2).reshape(out_shape)
    if dtype not in _QUANTIZED:
        raise TypeError(f"{func}: scaling applies to int8, uint8 or int16 inputs, got {dtype}")
    lo = int(np.iinfo(dtype).min)
    (z1, m1, e1), (z2, m2, e2) = scaling
    t1, t2 = scaled_codes(dtype, z1, m1, e1), scaled_codes(dtype, z2, m2, e2)

    def run(x1, x2):
        return compare(t1[x1.astype(np.int64) - lo], t2[x2.astype(np.int64) - lo]).reshape(out_shape)

    return run


def logical_plan(shape1, shape2, op):
    """The lean ``run(x1[, x2]) -> bool array`` of :class:`LogicalOp` ``op`` (``shape2`` None for LOGICAL_NOT)."""
    op = LogicalOp(op)
    if op is LogicalOp.LOGICAL_NOT:
        return np.logical_not
    out_shape = broadcast_shape("logical_plan", tuple(shape1), tuple(shape2))
    f = np.logical_and if op is LogicalOp.LOGICAL_AND else np.logical_or
    return lambda x1, x2: f(x1, x2).reshape(out_shape)
