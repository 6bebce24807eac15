"""CMSIS-DSP's arm_absmax_q15 / _q31 (Source/StatisticsFunctions), as the generic C code: the largest |x| (the
minimum counts as the maximum) and the index of its first occurrence."""
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
