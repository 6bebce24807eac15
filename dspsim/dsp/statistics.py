"""CMSIS-DSP's statistics (Source/StatisticsFunctions), as the generic C code, in exact integers (numpy and Python
ints; these reductions need no kernel):

* arm_absmax_q15 / _q31: the largest |x| (the minimum counts as the maximum) and the index of its first occurrence;
* arm_power_q7 / _q15 / _q31: the sum of squares (q7 in an int32, wrapping; q15 int64; q31 each square >> 14);
* arm_mean_q15 / _q31: the sum (q15 in an int32) divided by the length, truncating toward zero;
* arm_rms_q15 / _q31: arm_sqrt of the mean square (q15: ``(sum / n) >> 15`` cast to int32 and saturated; q31: the
  sum in a uint64, ``(sum / n) >> 31`` clipped to int32).
"""
from __future__ import annotations

import numpy as np

from .._errors import names_its_errors
from ._checks import check_q


def _absmax(func, x, q):
    x = check_q(x, func, "x", q)
    if x.shape[0] == 0:
        raise ValueError(f"{func}: x must not be empty")
    info = np.iinfo(x.dtype)
    a = np.minimum(np.abs(x.astype(np.int64)), int(info.max))
    i = int(np.argmax(a))
    return int(a[i]), i


@names_its_errors
def arm_absmax_q15(x):
    """``(max |x|, index)`` of int16 values; |-32768| counts as 32767."""
    return _absmax("arm_absmax_q15", x, "q15")


@names_its_errors
def arm_absmax_q31(x):
    """``(max |x|, index)`` of int32 values; |-2^31| counts as 2^31 - 1."""
    return _absmax("arm_absmax_q31", x, "q31")


def _wrap(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _c_div(a: int, b: int) -> int:
    """C's integer division: truncation toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _vector(func, x, q):
    x = check_q(x, func, "x", q)
    if x.shape[0] == 0:
        raise ValueError(f"{func}: x must not be empty")
    return x.astype(np.int64)


@names_its_errors
def arm_power_q7(x) -> int:
    """sum(x^2) in an int32 (wrapping; 18.14)."""
    v = _vector("arm_power_q7", x, "q7")
    return _wrap(int(np.sum(v * v)), 32)


@names_its_errors
def arm_power_q15(x) -> int:
    """sum(x^2) in an int64 (34.30)."""
    v = _vector("arm_power_q15", x, "q15")
    return int(np.sum(v * v))


@names_its_errors
def arm_power_q31(x) -> int:
    """sum(x^2 >> 14) in an int64 (16.48; each square truncated before the sum)."""
    v = _vector("arm_power_q31", x, "q31")
    return _wrap(sum((int(a) * int(a)) >> 14 for a in v), 64)


@names_its_errors
def arm_mean_q15(x) -> int:
    """sum(x) in an int32, divided by the length (truncating toward zero)."""
    v = _vector("arm_mean_q15", x, "q15")
    return _wrap(_c_div(_wrap(int(v.sum()), 32), v.shape[0]), 16)


@names_its_errors
def arm_mean_q31(x) -> int:
    """sum(x) in an int64, divided by the length (truncating toward zero)."""
    v = _vector("arm_mean_q31", x, "q31")
    return _wrap(_c_div(int(v.sum()), v.shape[0]), 32)


@names_its_errors
def arm_rms_q15(x) -> int:
    """arm_sqrt_q15 of ``sum(x^2) / n >> 15`` (int64 sum, C division, cast to int32, saturated to 16 bits)."""
    from .fastmath import arm_sqrt_q15

    v = _vector("arm_rms_q15", x, "q15")
    ms = _wrap(_c_div(int(np.sum(v * v)), v.shape[0]) >> 15, 32)
    return int(arm_sqrt_q15(np.int16(max(-32768, min(32767, ms)))))


@names_its_errors
def arm_rms_q31(x) -> int:
    """arm_sqrt_q31 of ``(sum(x^2) / n) >> 31`` (the sum in a uint64, wrapping; clipped to int32)."""
    from .fastmath import arm_sqrt_q31

    v = _vector("arm_rms_q31", x, "q31")
    total = sum(int(a) * int(a) for a in v) % 2**64
    ms = _wrap((total // v.shape[0]) >> 31, 64)
    return int(arm_sqrt_q31(np.int32(max(-2**31, min(2**31 - 1, ms)))))
