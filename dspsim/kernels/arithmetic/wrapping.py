"""Unquantized integer ADD, SUB and MUL (int32), with broadcasting: TFLite's ``reference_ops::Add`` / ``Sub`` /
``Mul`` templates on int32 tensors (what shape arithmetic in a model, e.g. MoveNet's keypoint indexing, runs).

Each element is ``x1 op x2`` computed in int32: a sum, difference or product beyond int32 wraps (two's complement, what
every engine's C++ build gives for the signed overflow), then the fused activation's range clamps it. No rounding.
"""
from __future__ import annotations

from enum import Enum

import numpy as np

from ..._errors import names_its_errors
from .._checks import broadcast_shape, check_spec, checked_pair, scalar_int

_INT32 = (np.dtype(np.int32),)
_LIMITS = (-(1 << 31), (1 << 31) - 1)


class IntegerOp(str, Enum):
    """The unquantized binary operation."""

    ADD = "add"
    SUB = "sub"
    MUL = "mul"


_UFUNCS = {IntegerOp.ADD: np.add, IntegerOp.SUB: np.subtract, IntegerOp.MUL: np.multiply}


def integer_binary_plan(shape1, shape2, dtype, op, act_min=None, act_max=None):
    """:func:`integer_binary` prepared for int32 operands of shapes ``shape1`` and ``shape2`` (validated once);
    returns the lean ``run(x1, x2) -> out``."""
    func = "integer_binary"
    try:
        kind = IntegerOp(op)
    except ValueError:
        raise ValueError(f"{func}: op must be one of {[o.value for o in IntegerOp]}, got {op!r}") from None
    shape1, _ = check_spec(func, "x1", shape1, dtype, _INT32)
    shape2, _ = check_spec(func, "x2", shape2, dtype, _INT32)
    broadcast_shape(func, shape1, shape2)
    lo = _LIMITS[0] if act_min is None else scalar_int(act_min, func, "act_min", *_LIMITS)
    hi = _LIMITS[1] if act_max is None else scalar_int(act_max, func, "act_max", *_LIMITS)
    if lo > hi:
        raise ValueError(f"{func}: act_min {lo} > act_max {hi}")
    ufunc = _UFUNCS[kind]

    def run(x1, x2):  # int64: every int32 sum, difference and product is exact; astype(int32) wraps
        exact = ufunc(x1.astype(np.int64), x2.astype(np.int64))
        return np.clip(exact.astype(np.int32), lo, hi).astype(np.int32)

    return run


@names_its_errors
def integer_binary(op, x1, x2, *, act_min=None, act_max=None):
    """TFLite's unquantized int32 ADD / SUB / MUL (``op``: an :class:`IntegerOp` or its value), broadcasting.

    ``out = clamp(wrap32(x1 op x2), act_min, act_max)``: the exact result wraps to int32 (no saturation), then the
    fused activation clamps it (default: the whole int32 range; TFLite's int32 RELU is ``[0, 2^31 - 1]``, RELU6
    ``[0, 6]``). No rounding.
    """
    x1, x2 = checked_pair("integer_binary", x1, x2, _INT32)
    return integer_binary_plan(x1.shape, x2.shape, x1.dtype, op, act_min, act_max)(x1, x2)
