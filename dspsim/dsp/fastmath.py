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
    n = 0
    mask = np.int64(0x80000000)
    while n < 32 and (v & mask) == 0:
        n += 1
        mask >>= 1
    return n


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
    for i in range(x.shape[0]):
        number = np.int64(x[i])
        if number <= 0:
            out[i] = 0
            status[i] = 0 if number == 0 else -1
            continue
        status[i] = 0
        if bits == 16:
            sign_bits = _clz32(number) - 17
            number = _wrap(number << (sign_bits if sign_bits % 2 == 0 else sign_bits - 1), 16)
            var1 = lut[(number >> 11) - (0x2000 >> 11)]
            for _ in range(3):
                temp = _wrap((var1 * var1) >> 12, 16)
                temp = _wrap((number * temp) >> 15, 16)
                temp = _wrap(0x3000 - temp, 16)
                var1 = _wrap((var1 * temp) >> 13, 16)
            var1 = _wrap((number * var1) >> 12, 16)
        else:
            sign_bits = _clz32(number) - 1
            number = _wrap(number << (sign_bits if sign_bits % 2 == 0 else sign_bits - 1), 32)
            var1 = lut[(number >> 26) - (0x20000000 >> 26)]
            for _ in range(3):
                temp = _wrap((var1 * var1) >> 28, 32)
                temp = _wrap((number * temp) >> 31, 32)
                temp = _wrap(0x30000000 - temp, 32)
                var1 = _wrap((var1 * temp) >> 29, 32)
            var1 = _wrap((number * var1) >> 28, 32)
        out[i] = var1 >> ((sign_bits if sign_bits % 2 == 0 else sign_bits - 1) // 2)


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


def _clz(v: int) -> int:
    return 32 - (v & 0xFFFFFFFF).bit_length()


def _divide(func, numerator, denominator, q):
    bits = 16 if q == "q15" else 32
    num = _scalar(func, numerator, "numerator", q)
    den = _scalar(func, denominator, "denominator", q)
    hi = (1 << (bits - 1)) - 1
    negative = (num < 0) != (den < 0)
    if den == 0:  # ARM_MATH_NANINF
        return -4, (-hi - 1 if negative else hi), 0
    num, den = min(abs(num), hi), min(abs(den), hi)  # arm_abs: the minimum goes to the maximum
    temp = (num << (bits - 1)) // den
    shift = (17 - _clz(temp)) if q == "q15" else (32 - _clz(temp >> 31))
    shift = max(shift, 0)
    temp >>= shift
    if negative:
        temp = -temp
    return 0, int(np.int64(temp).astype(QTYPES[q])), shift


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
    for i in range(x.shape[0]):
        src = np.int64(x[i]) & 0xFFFFFFFF  # the C reads the q31 value as a uint32
        c = _clz32(src)
        if c == 0:
            v = src >> 1
        else:
            v = (src << (c - 1)) & 0xFFFFFFFF  # 1.31 -> 2.30, 1 <= v < 2
        y = np.int64(0)
        inc = np.int64(1) << 25                # 0.5 in q26
        for _ in range(31):                    # log2 bit by bit: square, compare with 2
            v = ((v * v) >> 30) & 0xFFFFFFFF
            if v >= 0x80000000:
                y += inc
                v >>= 1
            inc >>= 1
        tmp = _wrap(y - (np.int64(c) << 26), 32)
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
