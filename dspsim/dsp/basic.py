"""CMSIS-DSP's basic math on q7 / q15 / q31 vectors (Source/BasicMathFunctions), bit for bit with the library's
generic C code (docs/dsp.md §Basic math).

Every function takes numpy arrays of the format's dtype (q7: int8, q15: int16, q31: int32), returns a new array of
that dtype (``arm_dot_prod_*``: a Python int), and is named as the C function it emulates. The arithmetic:

* add / sub: the exact sum or difference, saturated (``__SSAT`` / ``__QADD``).
* mult: q7 / q15: ``(a * b) >> 7`` / ``>> 15`` (floor), saturated; q31: ``(a * b) >> 32`` saturated to 31 bits,
  then ``<< 1`` (so the result's last bit is always 0).
* negate / abs: the minimum goes to the maximum.
* scale(fract, shift): q7 / q15: ``(a * fract) >> (7 - shift)`` / ``>> (15 - shift)`` (floor), saturated; q31:
  ``t = (a * fract) >> 32``, then ``t << (shift + 1)`` saturated to the rail of t's sign, or ``t >> -(shift + 1)``.
* shift(bits): ``a << bits`` saturated, or ``a >> -bits`` (floor).
* dot_prod: q7: products summed in an int32 (wrapping, as C's int); q15: in an int64, returned whole (34.30);
  q31: each product ``>> 14`` (floor) before the int64 sum (16.48).

The shifts are refused where the C code's shift would be undefined (a count below 0 or of at least the operand's
width): scale q7 [-24, 7], q15 [-16, 15], q31 [-32, 30]; shift q7 [-31, 24], q15 [-31, 16], q31 [-31, 31].
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._checks import QTYPES, check_int, check_q, check_same_shape

_BITS = {"q7": 8, "q15": 16, "q31": 32}
_ADD, _SUB, _MULT = 0, 1, 2
_NEGATE, _ABS = 0, 1
SCALE_SHIFTS = {"q7": (-24, 7), "q15": (-16, 15), "q31": (-32, 30)}
"""The shift arm_scale_<q> takes: the C code's shift count (7 - shift, 15 - shift, shift + 1) stays in [-31, 31]."""
SHIFT_BITS = {"q7": (-31, 24), "q15": (-31, 16), "q31": (-31, 31)}
"""The shiftBits arm_shift_<q> takes: a left shift that cannot overflow the C int (q31: int64) it is done in, a
right shift below the width."""


@njit(cache=True, nogil=True, inline="always")
def _sat(v, bits):
    hi = (np.int64(1) << (bits - 1)) - 1
    if v > hi:
        return hi
    if v < -hi - 1:
        return -hi - 1
    return v


@njit(cache=True, nogil=True, inline="always")
def _wrap32(v):
    v = v & 0xFFFFFFFF
    return v - 0x100000000 if v >= 0x80000000 else v


@njit(cache=True, nogil=True)
def _binary(a, b, out, op, bits):
    for i in range(a.shape[0]):
        x = np.int64(a[i])
        y = np.int64(b[i])
        if op == _ADD:
            v = _sat(x + y, bits)
        elif op == _SUB:
            v = _sat(x - y, bits)
        elif bits == 32:
            v = _sat((x * y) >> 32, 31) << 1
        else:
            v = _sat((x * y) >> (bits - 1), bits)
        out[i] = v


@njit(cache=True, nogil=True)
def _unary(a, out, op, bits):
    for i in range(a.shape[0]):
        x = np.int64(a[i])
        out[i] = _sat(-x if op == _NEGATE or x < 0 else x, bits)


@njit(cache=True, nogil=True)
def _scale_short(a, out, fract, kshift, bits):
    for i in range(a.shape[0]):
        out[i] = _sat((np.int64(a[i]) * fract) >> kshift, bits)


@njit(cache=True, nogil=True)
def _scale_q31(a, out, fract, kshift):
    for i in range(a.shape[0]):
        t = (np.int64(a[i]) * fract) >> 32
        if kshift >= 0:
            v = _wrap32(t << kshift)
            if (v >> kshift) != t:
                v = 0x7FFFFFFF if t >= 0 else -0x80000000
        else:
            v = t >> -kshift
        out[i] = v


@njit(cache=True, nogil=True)
def _shift(a, out, shift, bits):
    for i in range(a.shape[0]):
        x = np.int64(a[i])
        out[i] = _sat(x << shift, bits) if shift >= 0 else x >> -shift


@njit(cache=True, nogil=True)
def _dot(a, b, bits):
    acc = np.int64(0)
    for i in range(a.shape[0]):
        p = np.int64(a[i]) * np.int64(b[i])
        acc += (p >> 14) if bits == 32 else p
    return _wrap32(acc) if bits == 8 else acc


def _pair(func, a, b, q):
    a = check_q(a, func, "a", q)
    b = check_q(b, func, "b", q)
    check_same_shape(a, b, func)
    return a, b


def _binary_op(func, a, b, q, op):
    a, b = _pair(func, a, b, q)
    out = np.empty_like(a)
    _binary(a, b, out, op, _BITS[q])
    return out


def _unary_op(func, a, q, op):
    a = check_q(a, func, "a", q)
    out = np.empty_like(a)
    _unary(a, out, op, _BITS[q])
    return out


def _scale(func, a, fract, shift, q):
    a = check_q(a, func, "a", q)
    info = np.iinfo(QTYPES[q])
    fract = check_int(fract, func, "scale_fract", int(info.min), int(info.max))
    shift = check_int(shift, func, "shift", *SCALE_SHIFTS[q])
    out = np.empty_like(a)
    if q == "q31":
        _scale_q31(a, out, np.int64(fract), shift + 1)
    else:
        _scale_short(a, out, np.int64(fract), _BITS[q] - 1 - shift, _BITS[q])
    return out


def _shift_op(func, a, shift, q):
    a = check_q(a, func, "a", q)
    shift = check_int(shift, func, "shift_bits", *SHIFT_BITS[q])
    out = np.empty_like(a)
    _shift(a, out, shift, _BITS[q])
    return out


def _dot_op(func, a, b, q):
    a, b = _pair(func, a, b, q)
    return int(_dot(a, b, _BITS[q]))


@names_its_errors
def arm_add_q7(a, b):
    """a + b, saturated to int8."""
    return _binary_op("arm_add_q7", a, b, "q7", _ADD)


@names_its_errors
def arm_add_q15(a, b):
    """a + b, saturated to int16."""
    return _binary_op("arm_add_q15", a, b, "q15", _ADD)


@names_its_errors
def arm_add_q31(a, b):
    """a + b, saturated to int32 (``__QADD``)."""
    return _binary_op("arm_add_q31", a, b, "q31", _ADD)


@names_its_errors
def arm_sub_q7(a, b):
    """a - b, saturated to int8."""
    return _binary_op("arm_sub_q7", a, b, "q7", _SUB)


@names_its_errors
def arm_sub_q15(a, b):
    """a - b, saturated to int16."""
    return _binary_op("arm_sub_q15", a, b, "q15", _SUB)


@names_its_errors
def arm_sub_q31(a, b):
    """a - b, saturated to int32 (``__QSUB``)."""
    return _binary_op("arm_sub_q31", a, b, "q31", _SUB)


@names_its_errors
def arm_mult_q7(a, b):
    """(a * b) >> 7 (floor), saturated to int8."""
    return _binary_op("arm_mult_q7", a, b, "q7", _MULT)


@names_its_errors
def arm_mult_q15(a, b):
    """(a * b) >> 15 (floor), saturated to int16."""
    return _binary_op("arm_mult_q15", a, b, "q15", _MULT)


@names_its_errors
def arm_mult_q31(a, b):
    """((a * b) >> 32, saturated to 31 bits) << 1: the last bit is dropped."""
    return _binary_op("arm_mult_q31", a, b, "q31", _MULT)


@names_its_errors
def arm_negate_q7(a):
    """-a; -128 gives 127."""
    return _unary_op("arm_negate_q7", a, "q7", _NEGATE)


@names_its_errors
def arm_negate_q15(a):
    """-a; -32768 gives 32767."""
    return _unary_op("arm_negate_q15", a, "q15", _NEGATE)


@names_its_errors
def arm_negate_q31(a):
    """-a; -2^31 gives 2^31 - 1."""
    return _unary_op("arm_negate_q31", a, "q31", _NEGATE)


@names_its_errors
def arm_abs_q7(a):
    """|a|; -128 gives 127."""
    return _unary_op("arm_abs_q7", a, "q7", _ABS)


@names_its_errors
def arm_abs_q15(a):
    """|a|; -32768 gives 32767."""
    return _unary_op("arm_abs_q15", a, "q15", _ABS)


@names_its_errors
def arm_abs_q31(a):
    """|a|; -2^31 gives 2^31 - 1."""
    return _unary_op("arm_abs_q31", a, "q31", _ABS)


@names_its_errors
def arm_scale_q7(a, scale_fract, shift):
    """(a * scale_fract) >> (7 - shift) (floor), saturated; shift in [-24, 7]."""
    return _scale("arm_scale_q7", a, scale_fract, shift, "q7")


@names_its_errors
def arm_scale_q15(a, scale_fract, shift):
    """(a * scale_fract) >> (15 - shift) (floor), saturated; shift in [-16, 15]."""
    return _scale("arm_scale_q15", a, scale_fract, shift, "q15")


@names_its_errors
def arm_scale_q31(a, scale_fract, shift):
    """t = (a * scale_fract) >> 32; t << (shift + 1) saturated, or t >> -(shift + 1); shift in [-32, 30]."""
    return _scale("arm_scale_q31", a, scale_fract, shift, "q31")


@names_its_errors
def arm_shift_q7(a, shift_bits):
    """a << shift_bits saturated, or a >> -shift_bits (floor); shift_bits in [-31, 24]."""
    return _shift_op("arm_shift_q7", a, shift_bits, "q7")


@names_its_errors
def arm_shift_q15(a, shift_bits):
    """a << shift_bits saturated, or a >> -shift_bits (floor); shift_bits in [-31, 16]."""
    return _shift_op("arm_shift_q15", a, shift_bits, "q15")


@names_its_errors
def arm_shift_q31(a, shift_bits):
    """a << shift_bits saturated, or a >> -shift_bits (floor); shift_bits in [-31, 31]."""
    return _shift_op("arm_shift_q31", a, shift_bits, "q31")


@names_its_errors
def arm_dot_prod_q7(a, b) -> int:
    """sum(a * b) in an int32 (wrapping; 18.14)."""
    return _dot_op("arm_dot_prod_q7", a, b, "q7")


@names_its_errors
def arm_dot_prod_q15(a, b) -> int:
    """sum(a * b) in an int64 (34.30)."""
    return _dot_op("arm_dot_prod_q15", a, b, "q15")


@names_its_errors
def arm_dot_prod_q31(a, b) -> int:
    """sum((a * b) >> 14) in an int64 (16.48; each product truncated before the sum)."""
    return _dot_op("arm_dot_prod_q31", a, b, "q31")


@njit(cache=True, nogil=True)
def _offset(a, out, offset, bits):
    for i in range(a.shape[0]):
        out[i] = _sat(np.int64(a[i]) + offset, bits)


@names_its_errors
def arm_offset_q31(a, offset):
    """a + offset, saturated to int32 (``clip_q63_to_q31``)."""
    a = check_q(a, "arm_offset_q31", "a", "q31")
    offset = check_int(offset, "arm_offset_q31", "offset", -2**31, 2**31 - 1)
    out = np.empty_like(a)
    _offset(a, out, np.int64(offset), 32)
    return out
