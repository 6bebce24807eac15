"""CMSIS-DSP's convolution and correlation of q7 / q15 / q31 vectors (Source/FilteringFunctions/arm_conv_*.c,
arm_correlate_*.c), bit for bit with the library's generic C code (docs/dsp.md §Convolution and correlation).

* arm_conv_<q>(a, b): the full convolution, len(a) + len(b) - 1 values, ``y[i] = sum_j a[j] b[i - j]``;
* arm_correlate_<q>(a, b): 2 max(len(a), len(b)) - 1 values; with A = len(a) >= B = len(b), the last A + B - 1
  outputs are ``r[i] = sum_j a[j] b[B - 1 - i + j]``; with A < B the roles swap and the A + B - 1 first outputs are
  written in reverse. The C code leaves the other |A - B| outputs unwritten; dspsim sets them to 0.

Sums: q7 in an int32 (wrapping) ``>> 7`` saturated; q15 in an int64 ``>> 15``, cast to int32, saturated; q31 in an
int64 (wrapping) ``>> 31``, cast to int32 (wrapping).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._checks import check_q

_BITS = {"q7": 8, "q15": 16, "q31": 32}


@njit(cache=True, nogil=True, inline="always")
def _wrap(v, bits):
    m = (np.int64(1) << bits) - 1
    v = v & m
    return v - (m + 1) if v > (m >> 1) else v


@njit(cache=True, nogil=True, inline="always")
def _out(acc, bits):
    if bits == 32:
        return _wrap(acc >> 31, 32)
    if bits == 8:
        v = _wrap(acc, 32) >> 7
        return 127 if v > 127 else -128 if v < -128 else v
    v = _wrap(acc >> 15, 32)
    return 32767 if v > 32767 else -32768 if v < -32768 else v


@njit(cache=True, nogil=True)
def _conv(a, b, out, bits):
    na, nb = a.shape[0], b.shape[0]
    for i in range(na + nb - 1):
        acc = np.int64(0)
        for j in range(max(0, i - nb + 1), min(i, na - 1) + 1):
            acc += np.int64(a[j]) * np.int64(b[i - j])
        out[i] = _out(acc, bits)


@njit(cache=True, nogil=True)
def _correlate(a, b, out, bits):
    na, nb = a.shape[0], b.shape[0]
    inv = na < nb
    x, y = (b, a) if inv else (a, b)
    nx, ny = x.shape[0], y.shape[0]
    tot = nx + ny - 2
    start = nx - ny
    for i in range(tot + 1):
        acc = np.int64(0)
        for j in range(max(0, i - ny + 1), min(i, nx - 1) + 1):
            acc += np.int64(x[j]) * np.int64(y[ny - 1 - (i - j)])
        v = _out(acc, bits)
        if inv:
            out[tot - i] = v
        else:
            out[start + i] = v


def _pair(func, a, b, q):
    a = check_q(a, func, "a", q)
    b = check_q(b, func, "b", q)
    if a.shape[0] == 0 or b.shape[0] == 0:
        raise ValueError(f"{func}: a and b must not be empty, got lengths {a.shape[0]} and {b.shape[0]}")
    return a, b


def _conv_op(func, a, b, q):
    a, b = _pair(func, a, b, q)
    out = np.empty(a.shape[0] + b.shape[0] - 1, a.dtype)
    _conv(a, b, out, _BITS[q])
    return out


def _corr_op(func, a, b, q):
    a, b = _pair(func, a, b, q)
    out = np.zeros(2 * max(a.shape[0], b.shape[0]) - 1, a.dtype)
    _correlate(a, b, out, _BITS[q])
    return out


@names_its_errors
def arm_conv_q7(a, b):
    """The convolution of int8 vectors: int32 sums (wrapping), ``>> 7``, saturated."""
    return _conv_op("arm_conv_q7", a, b, "q7")


@names_its_errors
def arm_conv_q15(a, b):
    """The convolution of int16 vectors: int64 sums, ``>> 15``, saturated."""
    return _conv_op("arm_conv_q15", a, b, "q15")


@names_its_errors
def arm_conv_q31(a, b):
    """The convolution of int32 vectors: int64 sums, ``>> 31``, wrapped to int32."""
    return _conv_op("arm_conv_q31", a, b, "q31")


@names_its_errors
def arm_correlate_q7(a, b):
    """The correlation of int8 vectors, 2 max(len) - 1 values (the C's unwritten ones 0)."""
    return _corr_op("arm_correlate_q7", a, b, "q7")


@names_its_errors
def arm_correlate_q15(a, b):
    """The correlation of int16 vectors, 2 max(len) - 1 values (the C's unwritten ones 0)."""
    return _corr_op("arm_correlate_q15", a, b, "q15")


@names_its_errors
def arm_correlate_q31(a, b):
    """The correlation of int32 vectors, 2 max(len) - 1 values (the C's unwritten ones 0)."""
    return _corr_op("arm_correlate_q31", a, b, "q31")
