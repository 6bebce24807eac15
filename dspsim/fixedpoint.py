"""Integer fixed-point primitives, bit-exact with gemmlowp, TFLite, CMSIS-NN and ARM NEON.

Every primitive exists twice:

* a scalar ``@njit`` function with a leading underscore (``_srdhm``, ``_rounding_divide_by_pot``,
  ...) that takes and returns int64 values and never raises; kernels call these;
* a public function that accepts Python ints or numpy integer arrays (broadcast together, with an
  optional ``axis`` along which a 1-D per-channel parameter is laid), validates its inputs and
  raises a ``ValueError``/``TypeError`` naming itself and the rule that was broken.

Numba types ``int32 * int32`` as int64, so nothing here wraps at 32 bits by accident: wherever the
emulated C code wraps or saturates, the function says so and does it explicitly.

Tie rules (:class:`Rounding`) are named by where an exact half goes:

==================== ======================================= =====================
name                 rule                                    C spelling
==================== ======================================= =====================
HALF_UP              ties toward +inf (-2.5 -> -2, 2.5 -> 3)  ``(x + 2^(s-1)) >> s``
HALF_AWAY_FROM_ZERO  ties away from 0 (-2.5 -> -3)           ``std::round``
HALF_TO_EVEN         ties to even (-2.5 -> -2, 3.5 -> 4)     ``nearbyint``, ``lrintf``
FLOOR                toward -inf, no rounding                ``x >> s``
TOWARD_ZERO          truncation                              C ``x / 2^s``
==================== ======================================= =====================
"""
from __future__ import annotations

import math
from enum import IntEnum

import numpy as np
from numba import njit

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


class Rounding(IntEnum):
    """Tie rule of a rounding right shift (or of a float-to-int conversion)."""

    HALF_UP = 0
    """Ties toward +inf: ``floor(v + 1/2)``; ``(x + 2^(s-1)) >> s``, ARM ``VRSHL``."""
    HALF_AWAY_FROM_ZERO = 1
    """Ties away from zero: ``std::round``, gemmlowp ``RoundingDivideByPOT``."""
    HALF_TO_EVEN = 2
    """Ties to the even neighbour: ``nearbyint``/``lrintf`` in the default FP mode."""
    FLOOR = 3
    """Toward -inf: a plain arithmetic right shift ``x >> s``."""
    TOWARD_ZERO = 4
    """Toward zero: C integer division ``x / 2^s``."""


_ROUNDING_ALIASES = {
    "half_up": Rounding.HALF_UP,
    "half_away_from_zero": Rounding.HALF_AWAY_FROM_ZERO,
    "haz": Rounding.HALF_AWAY_FROM_ZERO,
    "half_to_even": Rounding.HALF_TO_EVEN,
    "hte": Rounding.HALF_TO_EVEN,
    "floor": Rounding.FLOOR,
    "toward_zero": Rounding.TOWARD_ZERO,
    "trunc": Rounding.TOWARD_ZERO,
}


def rounding_mode(mode, func: str = "dspsim") -> Rounding:
    """Parse a tie rule given as :class:`Rounding` or a name such as ``"half_to_even"``."""
    if isinstance(mode, Rounding):
        return mode
    if isinstance(mode, str):
        key = mode.strip().lower()
        if key in _ROUNDING_ALIASES:
            return _ROUNDING_ALIASES[key]
        raise ValueError(f"{func}: unknown rounding {mode!r}; expected one of {[r.name.lower() for r in Rounding]}")
    raise TypeError(f"{func}: rounding must be a Rounding or a string, got {type(mode).__name__}")


# --------------------------------------------------------------------------------------------
# scalar kernels (int64 in, int64 out, never raise)
# --------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _saturate(x, bits):
    """Clamp ``x`` to the signed ``bits``-bit range ``[-2^(bits-1), 2^(bits-1) - 1]``."""
    if bits >= 64:
        return x
    hi = (np.int64(1) << (bits - 1)) - 1
    lo = -hi - 1
    return min(max(x, lo), hi)


@njit(cache=True, inline="always")
def _wrap(x, bits):
    """Two's-complement wrap of ``x`` to ``bits`` bits (the low bits, sign-extended)."""
    if bits >= 64:
        return x
    sh = 64 - bits
    return (np.int64(x) << sh) >> sh


@njit(cache=True, inline="always")
def _wrap32(x):
    return (np.int64(x) << 32) >> 32


@njit(cache=True, inline="always")
def _rounding_right_shift(x, shift, mode):
    """``x / 2^shift`` rounded by ``mode`` (a :class:`Rounding` value), ``0 <= shift <= 63``."""
    if shift <= 0:
        return x
    q = x >> shift
    rem = x - (q << shift)  # in [0, 2^shift): the discarded fraction, times 2^shift
    half = np.int64(1) << (shift - 1)
    if mode == 0:  # HALF_UP
        return q + (1 if rem >= half else 0)
    if mode == 1:  # HALF_AWAY_FROM_ZERO
        if x >= 0:
            return q + (1 if rem >= half else 0)
        return q + (1 if rem > half else 0)
    if mode == 2:  # HALF_TO_EVEN
        if rem > half or (rem == half and (q & 1) == 1):
            return q + 1
        return q
    if mode == 3:  # FLOOR
        return q
    return q + (1 if (x < 0 and rem != 0) else 0)  # TOWARD_ZERO


@njit(cache=True, inline="always")
def _srdhm(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 values held in int64."""
    if a == INT32_MIN and b == INT32_MIN:
        return np.int64(INT32_MAX)
    ab = np.int64(a) * np.int64(b)
    if ab >= 0:
        v = ab + (1 << 30)
        return v >> 31
    v = ab + (1 - (1 << 30))
    return -((-v) >> 31)  # C division truncates toward zero


@njit(cache=True, inline="always")
def _rounding_divide_by_pot(x, exponent):
    """gemmlowp RoundingDivideByPOT: ``x / 2^exponent``, ties away from zero."""
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


@njit(cache=True, inline="always")
def _mbqm_double(x, multiplier, shift):
    """TFLite MultiplyByQuantizedMultiplier, default build (two roundings)."""
    left = shift if shift > 0 else 0
    right = -shift if shift < 0 else 0
    return _rounding_divide_by_pot(_srdhm(_wrap32(x << left), multiplier), right)


@njit(cache=True, inline="always")
def _mbqm_single(x, multiplier, shift):
    """TFLite MultiplyByQuantizedMultiplier with TFLITE_SINGLE_ROUNDING (one HALF_UP rounding)."""
    total_shift = 31 - shift
    return _wrap32((np.int64(x) * multiplier + (np.int64(1) << (total_shift - 1))) >> total_shift)


@njit(cache=True, inline="always")
def _mbqm(x, multiplier, shift, single_rounding):
    if single_rounding:
        return _mbqm_single(x, multiplier, shift)
    return _mbqm_double(x, multiplier, shift)


@njit(cache=True, inline="always")
def _mbqm_int64(x, multiplier, shift):
    """TFLite MultiplyByQuantizedMultiplier(int64 x, ...) of the 16x8 kernels."""
    if multiplier < 0x7FFF0000:
        reduced = (multiplier + (1 << 15)) >> 16
    else:
        reduced = np.int64(0x7FFF)
    total_shift = 15 - shift
    return _wrap32((x * reduced + (np.int64(1) << (total_shift - 1))) >> total_shift)


# --------------------------------------------------------------------------------------------
# element-wise loops over broadcast, flattened int64 arrays
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _loop_saturate(x, bits, out):
    for i in range(x.size):
        out[i] = _saturate(x[i], bits)


@njit(cache=True)
def _loop_wrap(x, bits, out):
    for i in range(x.size):
        out[i] = _wrap(x[i], bits)


@njit(cache=True)
def _loop_rounding_right_shift(x, shift, mode, out):
    for i in range(x.size):
        out[i] = _rounding_right_shift(x[i], shift[i], mode)


@njit(cache=True)
def _loop_srdhm(a, b, out):
    for i in range(a.size):
        out[i] = _srdhm(a[i], b[i])


@njit(cache=True)
def _loop_rdbpot(x, e, out):
    for i in range(x.size):
        out[i] = _rounding_divide_by_pot(x[i], e[i])


@njit(cache=True)
def _loop_mbqm(x, m, s, single_rounding, out):
    for i in range(x.size):
        out[i] = _mbqm(x[i], m[i], s[i], single_rounding)


@njit(cache=True)
def _loop_mbqm_int64(x, m, s, out):
    for i in range(x.size):
        out[i] = _mbqm_int64(x[i], m[i], s[i])


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------
def as_int_array(value, func: str, name: str, lo: int | None = None, hi: int | None = None) -> np.ndarray:
    """``value`` as an int64 array, checked to be integer-typed and (optionally) inside ``[lo, hi]``.

    Raises ``TypeError`` for floats, bools or objects and ``ValueError`` for out-of-range values,
    naming ``func`` and ``name``.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{func}: {name} must be an integer, got bool")
    if isinstance(value, (int, np.integer)):
        if lo is not None and not lo <= int(value) <= hi:
            raise ValueError(f"{func}: {name} must be in [{lo}, {hi}], got {int(value)}")
        return np.asarray(int(value), dtype=np.int64)
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{func}: {name} must be an integer array, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{func}: {name} has values beyond int64")
    arr = arr.astype(np.int64)
    if lo is not None and arr.size and (arr.min() < lo or arr.max() > hi):
        bad = arr[(arr < lo) | (arr > hi)].flat[0]
        raise ValueError(f"{func}: {name} must be in [{lo}, {hi}], got {int(bad)}")
    return arr


def _along_axis(param: np.ndarray, ndim: int, axis, func: str, name: str, length: int | None) -> np.ndarray:
    """Reshape a 1-D per-channel ``param`` so that it broadcasts along ``axis`` of an ndim array."""
    if axis is None or param.ndim == 0:
        return param
    if param.ndim != 1:
        raise ValueError(f"{func}: per-channel {name} must be 1-D when axis is given, got shape {param.shape}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{func}: axis {axis} is out of bounds for an array of rank {ndim}")
    axis %= ndim
    if length is not None and param.size not in (1, length):
        raise ValueError(f"{func}: {name} has {param.size} values but axis {axis} has length {length}")
    shape = [1] * ndim
    shape[axis] = param.size
    return param.reshape(shape)


def _axis_length(x: np.ndarray, axis):
    """Length of ``x`` along ``axis`` (``None`` when there is no such axis; _along_axis then complains)."""
    if axis is None or not -x.ndim <= axis < x.ndim:
        return None
    return x.shape[axis]


def _elementwise(loop, func, arrays, out_dtype=np.int64):
    """Broadcast ``arrays``, run ``loop(*flat, out)`` over them flattened; a Python int or an array."""
    scalar = all(a.ndim == 0 for a in arrays)
    try:
        bcast = np.broadcast_arrays(*arrays)
    except ValueError as e:
        raise ValueError(f"{func}: operands do not broadcast: {e}") from None
    flat = [np.ascontiguousarray(b).reshape(-1) for b in bcast]
    out = np.empty(flat[0].size, dtype=np.int64)
    loop(*flat, out)
    out = out.reshape(bcast[0].shape)
    return int(out[()]) if scalar else out.astype(out_dtype)


def _check_bits(bits, func):
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"{func}: bits must be an integer")
    if not 2 <= bits <= 64:
        raise ValueError(f"{func}: bits must be in [2, 64], got {bits}")
    return int(bits)


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------
def saturate(x, bits: int):
    """Clamp integers to the signed ``bits``-bit range.

    Real meaning: ``min(max(x, -2^(bits-1)), 2^(bits-1) - 1)``. No rounding. Saturation: values
    outside the range become the nearest bound. ``bits`` in [2, 64]; returns a Python int for a
    scalar and an int64 array otherwise.
    """
    func = "saturate"
    bits = _check_bits(bits, func)
    x = as_int_array(x, func, "x")
    return _elementwise(lambda a, o: _loop_saturate(a, bits, o), func, [x])


def wrap(x, bits: int):
    """Wrap integers to ``bits`` bits in two's complement (what a C cast to a narrower type does).

    Real meaning: ``x mod 2^bits`` mapped to ``[-2^(bits-1), 2^(bits-1))``. No rounding, no
    saturation: overflow wraps around. ``bits`` in [2, 64].
    """
    func = "wrap"
    bits = _check_bits(bits, func)
    x = as_int_array(x, func, "x")
    return _elementwise(lambda a, o: _loop_wrap(a, bits, o), func, [x])


def rounding_right_shift(x, shift, rounding="half_away_from_zero", axis=None):
    """Divide by ``2^shift`` and round by the given tie rule: the shift-only requantization of DSPs.

    Parameters
    ----------
    x : int or integer array (int64 range)
    shift : int or integer array, each in [0, 63]; broadcast with ``x`` (or laid along ``axis``)
    rounding : :class:`Rounding` or name
        ``half_up`` (ties toward +inf, ``(x + 2^(s-1)) >> s``), ``half_away_from_zero``,
        ``half_to_even``, ``floor`` (plain ``>>``) or ``toward_zero`` (C division).

    Returns the exact rounded quotient; it cannot overflow (no saturation case). ``shift = 0``
    returns ``x``.
    """
    func = "rounding_right_shift"
    mode = int(rounding_mode(rounding, func))
    x = as_int_array(x, func, "x")
    shift = _along_axis(as_int_array(shift, func, "shift", 0, 63), x.ndim, axis, func, "shift", _axis_length(x, axis))
    return _elementwise(lambda a, s, o: _loop_rounding_right_shift(a, s, mode, o), func, [x, shift])


def saturating_rounding_doubling_high_mul(a, b):
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` (= ARM ``VQRDMULH``) on int32 values.

    Real meaning: ``a * b / 2^31``, i.e. the product of two Q0.31 numbers, rounded to an int32.
    Tie rule: ties toward +inf (HALF_UP): ``floor((a*b + 2^30) / 2^31)``, so 0.5 -> 1, -0.5 -> 0,
    -1.5 -> -1. Saturation: only ``a = b = INT32_MIN`` (-1 x -1 = +1), which gives ``INT32_MAX``.
    """
    func = "saturating_rounding_doubling_high_mul"
    a = as_int_array(a, func, "a", INT32_MIN, INT32_MAX)
    b = as_int_array(b, func, "b", INT32_MIN, INT32_MAX)
    return _elementwise(_loop_srdhm, func, [a, b], out_dtype=np.int32)


def rounding_divide_by_pot(x, exponent):
    """gemmlowp ``RoundingDivideByPOT``: ``x / 2^exponent`` for int32 ``x``, ``exponent`` in [0, 31].

    Tie rule: ties away from zero (-5/2 -> -3, 5/2 -> 3). ARM ``VRSHL`` rounds ties toward +inf
    instead (-5/2 -> -2): use :func:`rounding_right_shift` with ``half_up`` for that. Cannot
    overflow; ``exponent = 0`` returns ``x``.
    """
    func = "rounding_divide_by_pot"
    x = as_int_array(x, func, "x", INT32_MIN, INT32_MAX)
    e = as_int_array(exponent, func, "exponent", 0, 31)
    return _elementwise(_loop_rdbpot, func, [x, e], out_dtype=np.int32)


ROUNDINGS = ("double", "single")


def requant_rounding(rounding, func: str) -> bool:
    """``True`` for ``"single"`` rounding, ``False`` for ``"double"``; anything else is refused."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"{func}: rounding must be 'double' (TFLite default, gemmlowp) or 'single' "
                         f"(TFLITE_SINGLE_ROUNDING), got {rounding!r}")
    return rounding == "single"


def multiply_by_quantized_multiplier(acc, multiplier, shift, rounding="double", axis=None):
    """TFLite ``MultiplyByQuantizedMultiplier(int32 acc, int32 multiplier, int shift)``.

    Real meaning: ``acc * multiplier * 2^(shift - 31)``, with ``multiplier`` a Q0.31 fraction in
    [0.5, 1) (or 0) and ``shift > 0`` a left shift (TFLite's convention).

    ``rounding="double"`` (default build, gemmlowp, CMSIS-NN default)::

        RoundingDivideByPOT(SRDHM(acc << max(shift, 0), multiplier), max(-shift, 0))

    two roundings: SRDHM rounds ties toward +inf, the shift rounds ties away from zero; the net
    result can differ from the correctly rounded value on non-ties (0.39999 -> 1). The left shift
    wraps on overflow, as in TFLite (no saturation); the only saturation is SRDHM's
    ``INT32_MIN * INT32_MIN``.

    ``rounding="single"`` (``TFLITE_SINGLE_ROUNDING``, CMSIS-NN single rounding)::

        int32((int64(acc) * multiplier + 2^(30 - shift)) >> (31 - shift))

    one rounding, ties toward +inf; the result is truncated to int32 (wraps, no saturation).

    Parameters
    ----------
    acc : int or integer array with int32 values
    multiplier : int or array in [0, 2^31)
    shift : int or array in [-31, 30]
    axis : int, optional
        Axis of ``acc`` along which 1-D per-channel ``multiplier``/``shift`` are laid.

    Returns an int (scalar inputs) or an int32 array.
    """
    func = "multiply_by_quantized_multiplier"
    single = requant_rounding(rounding, func)
    acc = as_int_array(acc, func, "acc", INT32_MIN, INT32_MAX)
    length = _axis_length(acc, axis)
    m = _along_axis(as_int_array(multiplier, func, "multiplier", 0, INT32_MAX), acc.ndim, axis, func, "multiplier", length)
    s = _along_axis(as_int_array(shift, func, "shift", -31, 30), acc.ndim, axis, func, "shift", length)
    return _elementwise(lambda a, mm, ss, o: _loop_mbqm(a, mm, ss, single, o), func, [acc, m, s], out_dtype=np.int32)


def multiply_by_quantized_multiplier_int64(acc, multiplier, shift, axis=None):
    """TFLite ``MultiplyByQuantizedMultiplier(int64 acc, int32 multiplier, int shift)`` (16x8 kernels).

    The Q31 multiplier is first reduced to 15 bits, rounding half up
    (``(multiplier + 2^15) >> 16``, or ``0x7FFF`` when ``multiplier >= 0x7FFF0000``), then
    ``int32((acc * reduced + 2^(14 - shift)) >> (15 - shift))``: one rounding, ties toward +inf,
    truncated to int32 (wraps, no saturation). Same in the double- and single-rounding builds.

    ``acc``: |acc| < 2^47; ``multiplier`` in [0, 2^31); ``shift`` in [-31, 7].
    """
    func = "multiply_by_quantized_multiplier_int64"
    acc = as_int_array(acc, func, "acc", -(1 << 47) + 1, (1 << 47) - 1)
    length = _axis_length(acc, axis)
    m = _along_axis(as_int_array(multiplier, func, "multiplier", 0, INT32_MAX), acc.ndim, axis, func, "multiplier", length)
    s = _along_axis(as_int_array(shift, func, "shift", -31, 7), acc.ndim, axis, func, "shift", length)
    return _elementwise(_loop_mbqm_int64, func, [acc, m, s], out_dtype=np.int32)


def _quantize_multiplier_scalar(real: float, single_rounding: bool) -> tuple[int, int]:
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    scaled = q * 2.0**31  # exact
    q_fixed = int(math.copysign(math.floor(abs(scaled) + 0.5), scaled))  # TfLiteRound: ties away from 0
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    if single_rounding and shift > 30:
        shift, q_fixed = 30, (1 << 31) - 1
    return q_fixed, shift


def quantize_multiplier(real_multiplier, rounding="double"):
    """TFLite ``QuantizeMultiplier(double)``: a real multiplier as a Q31 ``multiplier`` and ``shift``.

    ``real ~= multiplier * 2^(shift - 31)`` with ``multiplier`` in [2^30, 2^31) (or 0) and
    ``shift > 0`` meaning a left shift. Computed in double: ``q, shift = frexp(real)``,
    ``multiplier = round(q * 2^31)`` with ties away from zero (``TfLiteRound``). Edge cases
    (SEMANTICS 2.1): ``real = 0`` -> (0, 0); ``q`` rounding up to 1.0 gives ``(2^30, shift + 1)``
    (e.g. ``1 - 2^-33`` -> ``(2^30, 1)``); multipliers below about 2^-32 (``shift < -31``) flush
    to ``(0, 0)``; with ``rounding="single"`` (``TFLITE_SINGLE_ROUNDING``) a shift above 30 is
    clamped to ``(2^31 - 1, 30)``. Negative multipliers give a negative Q31 value, as in TFLite.

    Accepts a float or an array of floats; returns ``(int, int)`` or two int32 arrays.
    """
    func = "quantize_multiplier"
    single = requant_rounding(rounding, func)
    arr = np.asarray(real_multiplier)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{func}: real_multiplier must be a float or a float array, got {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{func}: real_multiplier must be finite")
    pairs = [_quantize_multiplier_scalar(float(v), single) for v in arr.reshape(-1)]
    if arr.ndim == 0:
        return pairs[0]
    m = np.array([p[0] for p in pairs], dtype=np.int32).reshape(arr.shape)
    s = np.array([p[1] for p in pairs], dtype=np.int32).reshape(arr.shape)
    return m, s
