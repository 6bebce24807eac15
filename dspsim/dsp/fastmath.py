"""CMSIS-DSP's fixed-point fast math (Source/FastMathFunctions): arm_sqrt_q15 / _q31, arm_sin_q15 / _q31,
arm_cos_q15 / _q31, elementwise over arrays, bit for bit with the library's C code (docs/dsp.md §Fast math).

* sin / cos: the angle ``x`` is a fraction of a turn (q15: x / 2^15 of pi, i.e. [-1, 1) is [-pi, pi)); negative
  angles wrap up by a turn; cos adds a quarter turn first (wrapping). The table ``sinTable_q15 / _q31`` holds
  ``sin(2 pi n / 512)`` for n = 0..512, rounded half away from zero, saturated; the value is interpolated
  linearly between two entries with a 9-bit fraction: q15 ``((0x8000 - f) * a >> 16`` then
  ``(that << 16 + f * b) >> 16`` (truncated to int16), q31 the same on 32 / 64 bits, and the result ``<< 1``
  (wrapping).
* sqrt: the input normalized by an even shift (count of leading zeros), a first guess from
  ``sqrt_initial_lut_q15 / _q31`` (``round(2^q / sqrt(i / 2^q) / 8)``, 16 / 32 entries), three Newton steps for
  1/sqrt in the C types (every intermediate truncated to int16 / int32), times the input, shifted back.
  A negative input gives 0 (the C function returns ARM_MATH_ARGUMENT_ERROR); ``status=True`` also returns the
  status per element (0 ARM_MATH_SUCCESS, -1 ARM_MATH_ARGUMENT_ERROR).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from .._errors import check_flag, names_its_errors
from .._bits import msb
from ._checks import QTYPES

_TABLE_SIZE = 512


@functools.cache
def sin_table(q: str) -> np.ndarray:
    """``sinTable_<q>``: sin(2 pi n / 512), n = 0..512, times 2^15 / 2^31, rounded half away from zero,
    saturated (PI = 3.14159265358979 as in the table's comment; math.pi gives the same entries)."""
    bits = 16 if q == "q15" else 32
    hi = (1 << (bits - 1)) - 1
    out = []
    for n in range(_TABLE_SIZE + 1):
        v = math.sin(2 * 3.14159265358979 * n / _TABLE_SIZE) * (1 << (bits - 1))
        v += 0.5 if v > 0 else -0.5
        out.append(max(-hi - 1, min(hi, int(v))))
    t = np.array(out, np.int64)
    t.flags.writeable = False
    return t


@functools.cache
def sqrt_lut(q: str) -> np.ndarray:
    """``sqrt_initial_lut_<q>``: round(2^q / sqrt(i / 2^q) / 8) (at most 2^q - 1) for i from 2^(q-2) below
    2^q + 2^(q-2) in steps of 2^(q-4) (q15) / 2^(q-5) (q31)."""
    qb, nb = (15, 4) if q == "q15" else (31, 5)
    out = []
    i = 1 << (qb - 2)
    while i <= (1 << qb) + (1 << (qb - 2)) - 1:
        out.append(min(round(1.0 / math.sqrt(1.0 * i / 2**qb) / 8.0 * 2**qb), 2**qb - 1))
        i += 1 << (qb - nb)
    t = np.array(out, np.int64)
    t.flags.writeable = False
    return t


@njit(cache=True, nogil=True, inline="always")
def _wrap(v, bits):
    m = (np.int64(1) << bits) - 1
    v = v & m
    return v - (m + 1) if v > (m >> 1) else v


@njit(cache=True, nogil=True, inline="always")
def _clz32(v):
    """The leading zeros of v's low 32 bits (32 for 0): one ``lzcnt`` compiled."""
    return 32 - msb(np.int64(v) & 0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _sin_cos(x, out, table, bits, cos):
    shift = bits - 10
    for i in range(x.shape[0]):
        v = np.int64(x[i])
        if cos:
            v = _wrap(v + (np.int64(1) << (bits - 3)), bits)  # a quarter turn
        if v < 0:
            v = _wrap(v + (np.int64(1) << (bits - 1)), bits)  # the C adds half the range to the unsigned value
        index = v >> shift
        fract = (v - (index << shift)) << 9
        a = table[index]
        b = table[index + 1]
        one = np.int64(1) << (bits - 1)
        if bits == 16:
            s = _wrap(((one - fract) * a) >> 16, 16)
            s = _wrap(((s << 16) + fract * b) >> 16, 16)
        else:
            s = _wrap(((one - fract) * a) >> 32, 32)
            s = _wrap(s + ((fract * b) >> 32), 32)
        out[i] = _wrap(s << 1, bits)


@njit(cache=True, nogil=True)
def _sqrt(x, out, status, lut, bits):
    n = x.shape[0]
    num = np.empty(n, np.int64)    # the normalized input (0 where x <= 0: the Newton steps then give 0)
    var1 = np.empty(n, np.int64)   # the first guess
    half = np.empty(n, np.int64)   # the shift back
    for i in range(n):
        number = np.int64(x[i])
        if number <= 0:
            num[i] = 0
            var1[i] = 0
            half[i] = 0
            status[i] = 0 if number == 0 else -1
            continue
        status[i] = 0
        sign_bits = _clz32(number) - (17 if bits == 16 else 1)
        even = sign_bits if sign_bits % 2 == 0 else sign_bits - 1
        number = _wrap(number << even, bits)
        num[i] = number
        var1[i] = lut[(number >> 11) - (0x2000 >> 11)] if bits == 16 else lut[(number >> 26) - (0x20000000 >> 26)]
        half[i] = even // 2
    for i in range(n):             # three Newton steps for 1/sqrt in the C types, then times the input
        number = num[i]
        v = var1[i]
        if bits == 16:
            for _ in range(3):
                temp = _wrap((v * v) >> 12, 16)
                temp = _wrap((number * temp) >> 15, 16)
                temp = _wrap(0x3000 - temp, 16)
                v = _wrap((v * temp) >> 13, 16)
            v = _wrap((number * v) >> 12, 16)
        else:
            for _ in range(3):
                temp = _wrap((v * v) >> 28, 32)
                temp = _wrap((number * temp) >> 31, 32)
                temp = _wrap(0x30000000 - temp, 32)
                v = _wrap((v * temp) >> 29, 32)
            v = _wrap((number * v) >> 28, 32)
        out[i] = v >> half[i]


def _elementwise(func, x, q):
    arr = np.asarray(x) if np.isscalar(x) or isinstance(x, np.generic) else x
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{func}: x must be a numpy array (or scalar) of dtype {QTYPES[q]} ({q}), "
                        f"got {type(x).__name__}")
    if arr.dtype != QTYPES[q]:
        raise TypeError(f"{func}: x must have dtype {QTYPES[q]} ({q}), got {arr.dtype}")
    return np.ascontiguousarray(arr).reshape(-1), arr.shape


def _trig(func, x, q, cos):
    flat, shape = _elementwise(func, x, q)
    out = np.empty_like(flat)
    _sin_cos(flat, out, sin_table(q), 16 if q == "q15" else 32, cos)
    return out.reshape(shape)


def _sqrt_op(func, x, q, status):
    flat, shape = _elementwise(func, x, q)
    want_status = check_flag(status, func, "status")
    out = np.empty_like(flat)
    st = np.empty(flat.shape, np.int8)
    _sqrt(flat, out, st, sqrt_lut(q), 16 if q == "q15" else 32)
    return (out.reshape(shape), st.reshape(shape)) if want_status else out.reshape(shape)


@names_its_errors
def arm_sin_q15(x):
    """sin(pi x / 2^15) in q15 (x of int16 as a fraction of half a turn; table and interpolation as CMSIS)."""
    return _trig("arm_sin_q15", x, "q15", False)


@names_its_errors
def arm_cos_q15(x):
    """cos(pi x / 2^15) in q15."""
    return _trig("arm_cos_q15", x, "q15", True)


@names_its_errors
def arm_sin_q31(x):
    """sin(pi x / 2^31) in q31."""
    return _trig("arm_sin_q31", x, "q31", False)


@names_its_errors
def arm_cos_q31(x):
    """cos(pi x / 2^31) in q31."""
    return _trig("arm_cos_q31", x, "q31", True)


@names_its_errors
def arm_sqrt_q15(x, *, status=False):
    """sqrt(x) of int16 values in q15 (negative: 0; ``status=True`` also returns 0 / -1 per element)."""
    return _sqrt_op("arm_sqrt_q15", x, "q15", status)


@names_its_errors
def arm_sqrt_q31(x, *, status=False):
    """sqrt(x) of int32 values in q31 (negative: 0; ``status=True`` also returns 0 / -1 per element)."""
    return _sqrt_op("arm_sqrt_q31", x, "q31", status)


# ---- divide and log (the pieces arm_mfcc needs) ---------------------------------------------------------------------

def _scalar(func, v, name, q):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{func}: {name} must be an int, got {type(v).__name__}")
    info = np.iinfo(QTYPES[q])
    if not info.min <= int(v) <= info.max:
        raise ValueError(f"{func}: {name} must be a {q} value in [{info.min}, {info.max}], got {int(v)}")
    return int(v)


@njit(cache=True, nogil=True)
def _divide_core(num, den, bits):
    """arm_divide_q15 / _q31 (bits 16 / 32) of two in-range values: (status, quotient, shift)."""
    hi = (np.int64(1) << (bits - 1)) - 1
    negative = (num < 0) != (den < 0)
    if den == 0:  # ARM_MATH_NANINF
        return np.int64(-4), (-hi - 1 if negative else hi), np.int64(0)
    num = min(abs(np.int64(num)), hi)  # arm_abs: the minimum goes to the maximum
    den = min(abs(np.int64(den)), hi)
    temp = (num << (bits - 1)) // den
    shift = np.int64(17 - _clz32(temp)) if bits == 16 else np.int64(32 - _clz32(temp >> 31))
    shift = max(shift, np.int64(0))
    temp >>= shift
    if negative:
        temp = -temp
    return np.int64(0), _wrap(temp, bits), shift


def _divide(func, numerator, denominator, q):
    num = _scalar(func, numerator, "numerator", q)
    den = _scalar(func, denominator, "denominator", q)
    status, quotient, shift = _divide_core(num, den, 16 if q == "q15" else 32)
    return int(status), int(quotient), int(shift)


@names_its_errors
def arm_divide_q15(numerator, denominator):
    """``(status, quotient, shift)``: numerator / denominator = quotient * 2^shift, quotient in q15:
    ``(|n| << 15) // |d|`` shifted right until it fits 16 bits; a zero denominator gives the rail of the sign and
    status -4 (ARM_MATH_NANINF)."""
    return _divide("arm_divide_q15", numerator, denominator, "q15")


@names_its_errors
def arm_divide_q31(numerator, denominator):
    """As :func:`arm_divide_q15`, on q31: ``(|n| << 31) // |d|``."""
    return _divide("arm_divide_q31", numerator, denominator, "q31")


_LOG_INV_LOG2E = 0x58B90BFB  # 1 / log2(e) in q31


@njit(cache=True, nogil=True)
def _vlog_q31(x, out):
    n = x.shape[0]
    v = np.empty(n, np.int64)
    y = np.zeros(n, np.int64)
    c = np.empty(n, np.int64)
    for i in range(n):
        src = np.int64(x[i]) & 0xFFFFFFFF  # the C reads the q31 value as a uint32
        c[i] = _clz32(src)
        v[i] = src >> 1 if c[i] == 0 else (src << (c[i] - 1)) & 0xFFFFFFFF  # 1.31 -> 2.30, 1 <= v < 2
    inc = np.int64(1) << 25                    # 0.5 in q26
    for _ in range(31):                        # log2 bit by bit: square, compare with 2 (all values at once)
        for i in range(n):
            w = ((v[i] * v[i]) >> 30) & 0xFFFFFFFF
            big = w >= 0x80000000
            y[i] += inc if big else 0
            v[i] = w >> 1 if big else w
        inc >>= 1
    for i in range(n):
        tmp = _wrap(y[i] - (c[i] << 26), 32)
        out[i] = _wrap((tmp * _LOG_INV_LOG2E) >> 31, 32)


@names_its_errors
def arm_vlog_q31(x):
    """Natural log of q31 values, in q5.26: log2 by repeated squaring (31 bits) of the value normalized to [1, 2),
    minus the normalization, times 1/log2(e) (q31), ``>> 31``. The input is read as unsigned (a negative value
    is a large one); 0 gives the log of 2^-32."""
    flat, shape = _elementwise("arm_vlog_q31", x, "q31")
    out = np.empty_like(flat)
    _vlog_q31(flat, out)
    return out.reshape(shape)


@njit(cache=True, nogil=True)
def _vlog_q15(x, out):
    for i in range(x.shape[0]):
        src = np.int64(x[i]) & 0xFFFF           # the C reads the q15 value as a uint16
        c = _clz32(src) - 16
        v = src >> 1 if c == 0 else (src << (c - 1)) & 0xFFFF   # 1.15 -> 2.14
        y = np.int64(0)
        inc = np.int64(1) << 10                 # 0.5 in q11
        for _ in range(15):
            v = ((v * v) >> 14) & 0xFFFF
            if v >= 0x8000:
                y += inc
                v >>= 1
            inc >>= 1
        tmp = _wrap(y - (np.int64(c) << 11), 16)
        out[i] = _wrap((tmp * 0x58B9) >> 15, 16)


@names_its_errors
def arm_vlog_q15(x):
    """Natural log of q15 values, in q4.11: as :func:`arm_vlog_q31` on 16 bits (15 squarings, 1/log2(e) =
    0x58B9 in q15). The input is read as unsigned; 0 gives the log of 2^-16."""
    flat, shape = _elementwise("arm_vlog_q15", x, "q15")
    out = np.empty_like(flat)
    _vlog_q15(flat, out)
    return out.reshape(shape)
