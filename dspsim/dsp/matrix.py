"""CMSIS-DSP's fixed-point matrix multiply (Source/MatrixFunctions/arm_mat_mult_*.c), bit for bit with the
library's generic C code (docs/dsp.md §Matrix multiply). ``A`` is (M, K), ``B`` (K, N), the result (M, N), all
of one format's dtype; each output is a dot product of a row of A and a column of B:

* arm_mat_mult_q7: summed in an int32, ``>> 7`` (floor), saturated to int8.
* arm_mat_mult_q15: summed in an int64, ``>> 15`` (floor), cast to int32, saturated to int16.
* arm_mat_mult_fast_q15: summed in an int32 (wrapping), ``>> 15``, cast to int16 (wrapping: no saturation).
* arm_mat_mult_q31 / arm_mat_mult_opt_q31: summed in an int64 (wrapping), ``>> 31``, cast to int32 (wrapping).
* arm_mat_mult_fast_q31: each product's high word ``p >> 32`` (truncated, not rounded), summed in an int32
  (wrapping), then ``<< 1`` (wrapping).

Dimensions are uint16_t in C: each must be in [1, 65535]; A's columns must equal B's rows
(ARM_MATH_SIZE_MISMATCH otherwise).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._checks import check_q

_Q7, _Q15, _Q15_FAST, _Q31, _Q31_FAST = 0, 1, 2, 3, 4


@njit(cache=True, nogil=True, inline="always")
def _wrap(v, bits):
    m = (np.int64(1) << bits) - 1
    v = v & m
    return v - (m + 1) if v > (m >> 1) else v


@njit(cache=True, nogil=True)
def _mat_mult(a, b, out, mode):
    m, k = a.shape
    n = b.shape[1]
    for i in range(m):
        for j in range(n):
            acc = np.int64(0)
            if mode == _Q31_FAST:
                for t in range(k):
                    acc += (np.int64(a[i, t]) * np.int64(b[t, j])) >> 32
                out[i, j] = _wrap(_wrap(acc, 32) << 1, 32)
                continue
            for t in range(k):
                acc += np.int64(a[i, t]) * np.int64(b[t, j])
            if mode == _Q7:
                v = _wrap(acc, 32) >> 7
                out[i, j] = 127 if v > 127 else -128 if v < -128 else v
            elif mode == _Q15:
                v = _wrap(acc >> 15, 32)
                out[i, j] = 32767 if v > 32767 else -32768 if v < -32768 else v
            elif mode == _Q15_FAST:
                out[i, j] = _wrap(_wrap(acc, 32) >> 15, 16)
            else:
                out[i, j] = _wrap(acc >> 31, 32)


def _run(func, a, b, q, mode):
    a = check_q(a, func, "A", q, ndim=2)
    b = check_q(b, func, "B", q, ndim=2)
    for name, shape in (("A", a.shape), ("B", b.shape)):
        if not (1 <= shape[0] <= 65535 and 1 <= shape[1] <= 65535):
            raise ValueError(f"{func}: each dimension of {name} must be in [1, 65535] (a uint16_t), got {shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{func}: A's columns must equal B's rows (ARM_MATH_SIZE_MISMATCH), got {a.shape} and "
                         f"{b.shape}")
    out = np.empty((a.shape[0], b.shape[1]), a.dtype)
    _mat_mult(a, b, out, mode)
    return out


@names_its_errors
def arm_mat_mult_q7(a, b):
    """A @ B on int8: int32 sums, ``>> 7``, saturated."""
    return _run("arm_mat_mult_q7", a, b, "q7", _Q7)


@names_its_errors
def arm_mat_mult_q15(a, b):
    """A @ B on int16: int64 sums, ``>> 15``, saturated."""
    return _run("arm_mat_mult_q15", a, b, "q15", _Q15)


@names_its_errors
def arm_mat_mult_fast_q15(a, b):
    """A @ B on int16, fast: int32 sums (wrapping), ``>> 15``, wrapped to int16."""
    return _run("arm_mat_mult_fast_q15", a, b, "q15", _Q15_FAST)


@names_its_errors
def arm_mat_mult_q31(a, b):
    """A @ B on int32: int64 sums, ``>> 31``, wrapped to int32."""
    return _run("arm_mat_mult_q31", a, b, "q31", _Q31)


@names_its_errors
def arm_mat_mult_opt_q31(a, b):
    """A @ B on int32 through a transposed copy of B: the same integers as :func:`arm_mat_mult_q31`."""
    return _run("arm_mat_mult_opt_q31", a, b, "q31", _Q31)


@names_its_errors
def arm_mat_mult_fast_q31(a, b):
    """A @ B on int32, fast: products' high words summed in an int32, ``<< 1``."""
    return _run("arm_mat_mult_fast_q31", a, b, "q31", _Q31_FAST)


@njit(cache=True, nogil=True)
def _mat_vec(a, v, out, q15):
    rows, cols = a.shape
    for i in range(rows):
        acc = np.int64(0)
        # q15: __SMLALD adds a pair of products in a C int first (wrapping): rows in groups of four pair every
        # column (2k, 2k + 1); the remaining rows pair the columns of each group of four
        paired = 0
        if q15:
            paired = 2 * (cols // 2) if i < 4 * (rows // 4) else 4 * (cols // 4)
        for t in range(0, paired, 2):
            acc += _wrap(np.int64(a[i, t]) * np.int64(v[t]) + np.int64(a[i, t + 1]) * np.int64(v[t + 1]), 32)
        for t in range(paired, cols):
            acc += np.int64(a[i, t]) * np.int64(v[t])
        if q15:
            r = _wrap(acc >> 15, 32)  # __SSAT takes an int32
            out[i] = 32767 if r > 32767 else -32768 if r < -32768 else r
        else:
            out[i] = _wrap(acc >> 31, 32)


def _mat_vec_run(func, a, v, q):
    a = check_q(a, func, "A", q, ndim=2)
    v = check_q(v, func, "v", q)
    if a.shape[1] != v.shape[0] or a.shape[0] == 0:
        raise ValueError(f"{func}: A must be (rows >= 1, len(v)), got {a.shape} and a vector of {v.shape[0]}")
    out = np.empty(a.shape[0], a.dtype)
    _mat_vec(a, v, out, q == "q15")
    return out


@names_its_errors
def arm_mat_vec_mult_q15(a, v):
    """A @ v on int16: int64 sums, ``>> 15``, saturated."""
    return _mat_vec_run("arm_mat_vec_mult_q15", a, v, "q15")


@names_its_errors
def arm_mat_vec_mult_q31(a, v):
    """A @ v on int32: int64 sums, ``>> 31``, wrapped to int32."""
    return _mat_vec_run("arm_mat_vec_mult_q31", a, v, "q31")
