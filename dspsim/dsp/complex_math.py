"""CMSIS-DSP's complex magnitude (Source/ComplexMathFunctions/arm_cmplx_mag_q15.c / _q31.c), bit for bit
(docs/dsp.md §MFCC and its pieces).

* arm_cmplx_mag_q15: ``(re^2 + im^2) >> 1`` as uint32 (2.30 halved), arm_sqrt_q31 of it, ``>> 16``.
* arm_cmplx_mag_q31: ``(re^2 >> 33) + (im^2 >> 33)`` (each truncated to int32), arm_sqrt_q31 of the sum.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._checks import check_q
from .fastmath import _sqrt, sqrt_lut


@njit(cache=True, nogil=True)
def _mag_squares(x, q15, out):
    for k in range(out.shape[0]):
        re = np.int64(x[2 * k])
        im = np.int64(x[2 * k + 1])
        if q15:
            out[k] = (re * re + im * im) >> 1
        else:
            out[k] = ((re * re) >> 33) + ((im * im) >> 33)


def _mag(func, x, q):
    x = check_q(x, func, "x", q)
    if x.shape[0] % 2:
        raise ValueError(f"{func}: x must hold (re, im) pairs: an even count, got {x.shape[0]}")
    sq = np.empty(x.shape[0] // 2, np.int64)
    _mag_squares(x, q == "q15", sq)
    root = np.empty(sq.shape[0], np.int64)
    _sqrt(sq, root, np.empty(sq.shape[0], np.int8), sqrt_lut("q31"), 32)
    return (root >> 16).astype(np.int16) if q == "q15" else root.astype(np.int32)


@names_its_errors
def arm_cmplx_mag_q15(x):
    """|re + j im| of interleaved int16 pairs, in q15 (2.14 of the exact magnitude: halved)."""
    return _mag("arm_cmplx_mag_q15", x, "q15")


@names_its_errors
def arm_cmplx_mag_q31(x):
    """|re + j im| of interleaved int32 pairs, in q31 (halved)."""
    return _mag("arm_cmplx_mag_q31", x, "q31")
