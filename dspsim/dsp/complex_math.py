"""CMSIS-DSP's complex math on interleaved (re, im) q15 / q31 vectors (Source/ComplexMathFunctions), bit for bit
(docs/dsp.md §Complex math).

* arm_cmplx_mag_q15: ``(re^2 + im^2) >> 1`` as uint32 (2.30 halved), arm_sqrt_q31 of it, ``>> 16``.
* arm_cmplx_mag_fast_q15: arm_sqrt_q15 of ``(re^2 + im^2) >> 17``.
* arm_cmplx_mag_q31: ``(re^2 >> 33) + (im^2 >> 33)`` (each truncated to int32), arm_sqrt_q31 of the sum.
* arm_cmplx_mag_squared_q15: ``(re^2 + im^2) >> 17`` (3.13); _q31: ``(re^2 >> 33) + (im^2 >> 33)`` (3.29).
* arm_cmplx_mult_cmplx_q15: ``(a c >> 17) - (b d >> 17)``, ``(a d >> 17) + (b c >> 17)`` (3.13, each product
  truncated first); _q31: the same with ``>> 33`` (3.29).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._checks import check_q
from .fastmath import _sqrt, sqrt_lut

_MAG, _MAG_SQUARED, _MULT = 0, 1, 2


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


@njit(cache=True, nogil=True)
def _elementwise(x, y, out, op, q15):
    sh = 17 if q15 else 33
    for k in range(x.shape[0] // 2):
        a = np.int64(x[2 * k])
        b = np.int64(x[2 * k + 1])
        if op == _MAG_SQUARED:
            out[k] = (a * a + b * b) >> 17 if q15 else ((a * a) >> 33) + ((b * b) >> 33)
        else:
            c = np.int64(y[2 * k])
            d = np.int64(y[2 * k + 1])
            out[2 * k] = ((a * c) >> sh) - ((b * d) >> sh)
            out[2 * k + 1] = ((a * d) >> sh) + ((b * c) >> sh)


def _pairs(func, x, q, name="x"):
    x = check_q(x, func, name, q)
    if x.shape[0] % 2:
        raise ValueError(f"{func}: {name} must hold (re, im) pairs: an even count, got {x.shape[0]}")
    return x


@names_its_errors
def arm_cmplx_mag_fast_q15(x):
    """|re + j im| of int16 pairs by arm_sqrt_q15 of ``(re^2 + im^2) >> 17``."""
    x = _pairs("arm_cmplx_mag_fast_q15", x, "q15")
    sq = np.empty(x.shape[0] // 2, np.int64)
    _elementwise(x, x, sq, _MAG_SQUARED, True)
    root = np.empty(sq.shape[0], np.int64)
    _sqrt(sq, root, np.empty(sq.shape[0], np.int8), sqrt_lut("q15"), 16)
    return root.astype(np.int16)


def _squared(func, x, q):
    x = _pairs(func, x, q)
    out = np.empty(x.shape[0] // 2, np.int64)
    _elementwise(x, x, out, _MAG_SQUARED, q == "q15")
    return out.astype(x.dtype)


def _mult(func, a, b, q):
    a = _pairs(func, a, q, "a")
    b = _pairs(func, b, q, "b")
    if a.shape != b.shape:
        raise ValueError(f"{func}: a and b must have the same shape, got {a.shape} and {b.shape}")
    out = np.empty(a.shape[0], np.int64)
    _elementwise(a, b, out, _MULT, q == "q15")
    return out.astype(a.dtype)


@names_its_errors
def arm_cmplx_mag_squared_q15(x):
    """re^2 + im^2 of int16 pairs, ``>> 17`` (3.13)."""
    return _squared("arm_cmplx_mag_squared_q15", x, "q15")


@names_its_errors
def arm_cmplx_mag_squared_q31(x):
    """(re^2 >> 33) + (im^2 >> 33) of int32 pairs (3.29)."""
    return _squared("arm_cmplx_mag_squared_q31", x, "q31")


@names_its_errors
def arm_cmplx_mult_cmplx_q15(a, b):
    """a * b of int16 pairs, each product ``>> 17`` (3.13)."""
    return _mult("arm_cmplx_mult_cmplx_q15", a, b, "q15")


@names_its_errors
def arm_cmplx_mult_cmplx_q31(a, b):
    """a * b of int32 pairs, each product ``>> 33`` (3.29)."""
    return _mult("arm_cmplx_mult_cmplx_q31", a, b, "q31")
