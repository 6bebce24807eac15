"""Integer fixed-point primitives, bit-exact with gemmlowp, TFLite, CMSIS-NN and ARM NEON.

Every primitive exists twice:

* a scalar ``@njit`` jit primitive (``multiply_by_quantized_multiplier_scalar``, ``wrap_scalar``,
  ``rounding_divide_by_pot_scalar``, ...) that takes and returns int64 values and never raises; the
  kernels of every module call these;
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

from ._errors import names_its_errors
from numba import njit

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
_PRED_HALF = 0.49999999999999994  # the largest double below 1/2


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
# jit primitives (int64 in, int64 out, never raise): the kernels of every module call these
# --------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def saturate_scalar(x, bits):
    """Clamp ``x`` to the signed ``bits``-bit range ``[-2^(bits-1), 2^(bits-1) - 1]`` (jit primitive of
    :func:`saturate`; ``bits >= 64`` returns ``x``)."""
    if bits >= 64:
        return x
    hi = (np.int64(1) << (bits - 1)) - 1
    lo = -hi - 1
    return min(max(x, lo), hi)


@njit(cache=True, inline="always")
def wrap_scalar(x, bits):
    """Two's-complement wrap of ``x`` to ``bits`` bits, the low bits sign-extended (jit primitive of
    :func:`wrap`; ``wrap_scalar(x, 32)`` is a C cast to int32). ``bits >= 64`` returns ``x``."""
    if bits >= 64:
        return x
    sh = 64 - bits
    return (np.int64(x) << sh) >> sh


@njit(cache=True, inline="always")
def _rounds_up(q, rem, half, negative, mode):
    """Whether ``floor(v / 2^s) = q`` rounds up to ``q + 1`` under the tie rule ``mode``, ``rem`` being the
    discarded fraction times ``2^s`` (in ``[0, 2^s)``), ``half`` = ``2^(s-1)`` and ``negative`` = ``v < 0``."""
    if mode == Rounding.HALF_UP:
        return rem >= half
    if mode == Rounding.HALF_AWAY_FROM_ZERO:
        return (rem > half) | ((rem == half) & (not negative))  # a negative tie is not rounded up
    if mode == Rounding.HALF_TO_EVEN:
        return (rem > half) | ((rem == half) & ((q & 1) == 1))
    if mode == Rounding.FLOOR:
        return False
    return negative & (rem != 0)  # TOWARD_ZERO


@njit(cache=True, inline="always")
def rounding_right_shift_scalar(x, shift, mode):
    """``x / 2^shift`` rounded by the tie rule ``mode`` (a :class:`Rounding`), ``0 <= shift <= 63``
    (jit primitive of :func:`rounding_right_shift`). Selects only, no branches on the data, so the
    loops that call it vectorize; cannot overflow."""
    q = x >> shift
    rem = x & ((np.int64(1) << shift) - 1)  # in [0, 2^shift): the discarded fraction, times 2^shift
    half = np.int64(1) << max(shift - 1, 0)
    return q + ((shift > 0) & _rounds_up(q, rem, half, x < 0, mode))


_INT64_LIMIT = np.int64((1 << 62) - 1)  # results saturate here: |value| beyond it is beyond any output range


@njit(cache=True, inline="always")
def _saturating_shl(x, n):
    """``x * 2^n`` (``0 <= n <= 62``), saturated to ``[-(2^62 - 1), 2^62 - 1]``."""
    lim = _INT64_LIMIT >> n
    return _INT64_LIMIT if x > lim else -_INT64_LIMIT if x < -lim else x << n


@njit(cache=True, inline="always")
def product_rounding_shift_scalar(x, m, shift, mode):
    """``x * m / 2^shift`` rounded by the tie rule ``mode``, exactly for every int64 ``x`` (``0 <= m < 2^31``,
    ``0 <= shift <= 62``), saturated to ``+-(2^62 - 1)``: the product is split at bit 31, ``x = xh 2^31 + xl``,
    so that no partial product leaves int64 (jit primitive of the requantizations of accumulators wider than
    32 bits)."""
    xh = x >> 31
    xl = x & 0x7FFFFFFF
    lo = xl * m  # in [0, 2^62)
    t = xh * m + (lo >> 31)  # floor(x * m / 2^31): |xh| <= 2^32 and m < 2^31, so nothing leaves int64
    r31 = lo & 0x7FFFFFFF  # x * m = t 2^31 + r31
    if shift <= 31:
        lim = _INT64_LIMIT >> (31 - shift)
        if (t > lim) | (t < -lim - 1):  # |x * m / 2^shift| beyond 2^62 - 1: saturated
            return _INT64_LIMIT if t > 0 else -_INT64_LIMIT
        q = (t << (31 - shift)) + (r31 >> shift)
        rem = r31 & ((np.int64(1) << shift) - 1)
    else:
        q = t >> (shift - 31)
        rem = ((t & ((np.int64(1) << (shift - 31)) - 1)) << 31) | r31
    half = np.int64(1) << max(shift - 1, 0)
    v = q + ((shift > 0) & _rounds_up(q, rem, half, (x < 0) & (m != 0), mode))
    return min(max(v, -_INT64_LIMIT), _INT64_LIMIT)


@njit(cache=True, inline="always")
def _rounding_doubling_high_mul(a, b):
    """SRDHM without its saturation: ``(a * b + 2^30) >> 31`` of int32 values held in int64.

    ``a * b`` is exact in int64. gemmlowp adds the nudge ``2^30`` (``ab >= 0``) or ``1 - 2^30`` and
    divides by 2^31 truncating; for ``ab < 0`` truncation is ``floor((ab + 1 - 2^30 + 2^31 - 1) /
    2^31)``, so both cases are ``(ab + 2^30) >> 31`` (ties toward +inf). Only ``INT32_MIN * INT32_MIN``
    leaves int32 (2^31), which a non-negative multiplier never meets.
    """
    ab = wrap_scalar(a, 32) * wrap_scalar(b, 32)  # sign-extended 32-bit factors: LLVM emits vpmuldq
    return (ab + np.int64(1 << 30)) >> 31


@njit(cache=True, inline="always")
def saturating_rounding_doubling_high_mul_scalar(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul: :func:`_rounding_doubling_high_mul`, whose one
    overflow, ``INT32_MIN * INT32_MIN``, saturates to INT32_MAX (tested on the inputs, as gemmlowp does)."""
    return np.int64(INT32_MAX) if (a == INT32_MIN) & (b == INT32_MIN) else _rounding_doubling_high_mul(a, b)


@njit(cache=True, inline="always")
def rounding_divide_by_pot_scalar(x, exponent):
    """gemmlowp RoundingDivideByPOT: ``x / 2^exponent``, ties away from zero, without branches.

    gemmlowp adds 1 when the remainder exceeds ``2^(e-1) - 1 + [x < 0]``; that is
    ``(x + 2^(e-1) - [x < 0]) >> e`` for ``e > 0`` (a negative tie is not rounded up), and ``x`` for 0.
    """
    half = (np.int64(1) << exponent) >> 1  # 2^(e-1), or 0 when e = 0
    return (x + half - ((x < 0) & (half > 0))) >> exponent


_srdhm = saturating_rounding_doubling_high_mul_scalar  # short names for this module's fixed-point code
_rdbpot = rounding_divide_by_pot_scalar


@njit(cache=True, inline="always")
def multiply_by_quantized_multiplier_scalar(x, multiplier, shift):
    """TFLite ``MultiplyByQuantizedMultiplier`` of an int32 ``x``, default build (two roundings): jit
    primitive of :func:`multiply_by_quantized_multiplier` with ``rounding="double"``.

    ``RoundingDivideByPOT(SRDHM(int32(x << max(shift, 0)), multiplier), max(-shift, 0))``: SRDHM ties
    toward +inf, the shift ties away from zero; the left shift wraps as TFLite's int32 does.
    ``multiplier`` in [0, 2^31) (so SRDHM cannot saturate and its test is left out), ``shift`` in
    [-31, 30]. Branch-free: requantization loops vectorize.
    """
    left = max(shift, 0)
    right = max(-shift, 0)
    return _rdbpot(_rounding_doubling_high_mul(wrap_scalar(x << left, 32), multiplier), right)


@njit(cache=True, inline="always")
def multiply_by_quantized_multiplier_single_scalar(x, multiplier, shift):
    """TFLite ``MultiplyByQuantizedMultiplier`` with ``TFLITE_SINGLE_ROUNDING``: jit primitive of
    :func:`multiply_by_quantized_multiplier` with ``rounding="single"``.

    ``int32((x * multiplier + 2^(30 - shift)) >> (31 - shift))``: one rounding, ties toward +inf; the
    result is truncated to int32 (wraps).
    """
    total_shift = 31 - shift
    return wrap_scalar((np.int64(x) * multiplier + (np.int64(1) << (total_shift - 1))) >> total_shift, 32)


@njit(cache=True)
def multiply_by_quantized_multiplier_tie_scalar(x, multiplier, shift, single_rounding, tie, wide):
    """``MultiplyByQuantizedMultiplier`` with the final shift rounded by the tie rule ``tie`` (a DSP's): the
    jit primitive of the fixed-point requantization of :class:`dspsim.Requant` with any tie rule.

    ``wide`` False (TFLite's kernels: ``x`` an int32, the result wrapped to int32): as
    :func:`multiply_by_quantized_multiplier_scalar` (double rounding: SRDHM, ties toward +inf, then the shift)
    or :func:`multiply_by_quantized_multiplier_single_scalar` (one rounding shift of the product) with ``tie``
    for the shift. ``wide`` True: ``x`` is the whole accumulator (any int64), the left shift and the
    products exact (saturated at ``+-(2^62 - 1)``, beyond any output), nothing wrapped.
    ``multiplier`` in [0, 2^31), ``shift`` in [-31, 30].
    """
    left = max(shift, 0)
    right = max(-shift, 0)
    if single_rounding:
        if wide:
            return product_rounding_shift_scalar(x, multiplier, 31 - shift, tie)
        return wrap_scalar(rounding_right_shift_scalar(np.int64(x) * multiplier, 31 - shift, tie), 32)
    if wide:  # SRDHM of the exact product: floor((x * m + 2^30) / 2^31)
        high = product_rounding_shift_scalar(_saturating_shl(x, left), multiplier, 31, Rounding.HALF_UP)
        return rounding_right_shift_scalar(high, right, tie)
    return rounding_right_shift_scalar(_rounding_doubling_high_mul(wrap_scalar(x << left, 32), multiplier), right, tie)


@njit(cache=True, inline="always")
def _mbqm(x, multiplier, shift, single_rounding):
    if single_rounding:
        return multiply_by_quantized_multiplier_single_scalar(x, multiplier, shift)
    return multiply_by_quantized_multiplier_scalar(x, multiplier, shift)


@njit(cache=True, inline="always")
def _mbqm_int64(x, multiplier, shift):
    """TFLite MultiplyByQuantizedMultiplier(int64 x, ...) of the 16x8 kernels."""
    if multiplier < 0x7FFF0000:
        reduced = (multiplier + (1 << 15)) >> 16
    else:
        reduced = np.int64(0x7FFF)
    total_shift = 15 - shift
    return wrap_scalar((x * reduced + (np.int64(1) << (total_shift - 1))) >> total_shift, 32)


@njit(cache=True, inline="always")
def round_half_away_from_zero(v):
    """``std::round`` of a float (TFLite's ``TfLiteRound``), as a float: the nearest integer, ties away
    from zero (2.5 -> 3, -2.5 -> -3; -0.3 -> -0.0). Jit primitive of :func:`tflite_round`; inf and
    NaN pass through.

    ``trunc(v + copysign(0.49999999999999994, v))`` (LLVM's own lowering of ``round``) is exact for
    every double: the addend is the largest double below 1/2, so a fraction below 1/2 never carries
    into the next integer, and a fraction of 1/2 or more does (``0.5 + pred(0.5) = 1 - 2^-54`` rounds
    to even, 1.0). ``floor(|v| + 0.5)`` instead rounds ``0.5 - 2^-54`` and odd integers above 2^52 up.
    """
    return np.trunc(v + np.copysign(_PRED_HALF, v))


def tflite_round(v) -> int:
    """TFLite ``TfLiteRound`` (``std::round``) of a finite float, as an int: ties away from zero.

    The one rounding of every TFLite Prepare step that rounds a real value (``QuantizeMultiplier``'s
    ``round(q * 2^31)``, ``CalculateActivationRangeQuantized``'s ``round(f / scale)``, the
    converter's zero points). Exact: see :func:`round_half_away_from_zero`.
    """
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"tflite_round: v must be a real number, got {type(v).__name__}")
    if not math.isfinite(v):
        raise ValueError(f"tflite_round: v must be finite, got {v}")
    return int(round_half_away_from_zero(float(v)))


# --------------------------------------------------------------------------------------------
# element-wise loops over broadcast, flattened int64 arrays
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _loop_saturate(x, bits, out):
    for i in range(x.size):
        out[i] = saturate_scalar(x[i], bits)


@njit(cache=True)
def _loop_wrap(x, bits, out):
    for i in range(x.size):
        out[i] = wrap_scalar(x[i], bits)


@njit(cache=True)
def _loop_rounding_right_shift(x, shift, mode, out):
    for i in range(x.size):
        out[i] = rounding_right_shift_scalar(x[i], shift[i], mode)


@njit(cache=True)
def _loop_srdhm(a, b, out):
    for i in range(a.size):
        out[i] = _srdhm(a[i], b[i])


@njit(cache=True)
def _loop_rdbpot(x, e, out):
    for i in range(x.size):
        out[i] = _rdbpot(x[i], e[i])


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
def as_int_array(value, func: str, name: str, lo: int | None = None, hi: int | None = None,
                 widen: bool = True) -> np.ndarray:
    """``value`` as an int64 array, checked to be integer-typed and (optionally) inside ``[lo, hi]``.

    Raises ``TypeError`` for floats, bools or objects and ``ValueError`` for out-of-range values,
    naming ``func`` and ``name``. ``widen=False`` keeps an array's own integer dtype (no copy).
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
    if widen or arr.dtype == np.uint64:
        arr = arr.astype(np.int64)
    if lo is not None and arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        bad = arr[(arr < lo) | (arr > hi)].flat[0]
        raise ValueError(f"{func}: {name} must be in [{lo}, {hi}], got {int(bad)}")
    return arr


def _along_axis(param: np.ndarray, ndim: int, axis, func: str, name: str, length: int | None) -> np.ndarray:
    """Reshape a 1-D per-channel ``param`` so that it broadcasts along ``axis`` of an ndim array."""
    if axis is not None and (isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer))):
        raise TypeError(f"{func}: axis must be an int or None, got {type(axis).__name__}")
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
    if axis is None or not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        return None
    return x.shape[axis]


CHUNK = 1 << 15  # elements per int64 buffer of _elementwise: temporaries of a few 256 KiB, whatever the input


def _elementwise(loop, func, arrays, out_dtype=np.int64):
    """Broadcast ``arrays`` and run ``loop(*flat, out)`` over them, :data:`CHUNK` elements at a time
    (numpy's buffered iterator widens each chunk to int64 and casts the results to ``out_dtype``), so
    that neither the broadcast operands nor an int64 copy of the input are ever built whole. A
    Python int for scalar operands, else an ``out_dtype`` array of the broadcast shape."""
    scalar = all(a.ndim == 0 for a in arrays)
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError as e:
        raise ValueError(f"{func}: operands do not broadcast: {e}") from None
    out = np.empty(shape, np.int64 if scalar else out_dtype)
    it = np.nditer([*arrays, out], flags=["external_loop", "buffered", "zerosize_ok"],
                   op_flags=[["readonly"]] * len(arrays) + [["writeonly"]], op_dtypes=[np.int64] * (len(arrays) + 1),
                   casting="unsafe", buffersize=CHUNK)
    with it:
        for chunk in it:
            loop(*(np.ascontiguousarray(c) for c in chunk[:-1]), chunk[-1])
    return int(out[()]) if scalar else out


def _check_bits(bits, func):
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"{func}: bits must be an integer")
    if not 2 <= bits <= 64:
        raise ValueError(f"{func}: bits must be in [2, 64], got {bits}")
    return int(bits)


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------
@names_its_errors
def saturate(x, bits: int):
    """Clamp integers to the signed ``bits``-bit range.

    Real meaning: ``min(max(x, -2^(bits-1)), 2^(bits-1) - 1)``. No rounding. Saturation: values
    outside the range become the nearest bound. ``bits`` in [2, 64]; returns a Python int for a
    scalar and an int64 array otherwise.
    """
    func = "saturate"
    bits = _check_bits(bits, func)
    x = as_int_array(x, func, "x", widen=False)
    return _elementwise(lambda a, o: _loop_saturate(a, bits, o), func, [x])


@names_its_errors
def wrap(x, bits: int):
    """Wrap integers to ``bits`` bits in two's complement (what a C cast to a narrower type does).

    Real meaning: ``x mod 2^bits`` mapped to ``[-2^(bits-1), 2^(bits-1))``. No rounding, no
    saturation: overflow wraps around. ``bits`` in [2, 64].
    """
    func = "wrap"
    bits = _check_bits(bits, func)
    x = as_int_array(x, func, "x", widen=False)
    return _elementwise(lambda a, o: _loop_wrap(a, bits, o), func, [x])


@names_its_errors
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
    mode = rounding_mode(rounding, func)
    x = as_int_array(x, func, "x", widen=False)
    shift = _along_axis(as_int_array(shift, func, "shift", 0, 63), x.ndim, axis, func, "shift", _axis_length(x, axis))
    return _elementwise(lambda a, s, o: _loop_rounding_right_shift(a, s, mode, o), func, [x, shift])


@names_its_errors
def saturating_rounding_doubling_high_mul(a, b):
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` (= ARM ``VQRDMULH``) on int32 values.

    Real meaning: ``a * b / 2^31``, i.e. the product of two Q0.31 numbers, rounded to an int32.
    Tie rule: ties toward +inf (HALF_UP): ``floor((a*b + 2^30) / 2^31)``, so 0.5 -> 1, -0.5 -> 0,
    -1.5 -> -1. Saturation: only ``a = b = INT32_MIN`` (-1 x -1 = +1), which gives ``INT32_MAX``.
    """
    func = "saturating_rounding_doubling_high_mul"
    a = as_int_array(a, func, "a", INT32_MIN, INT32_MAX, widen=False)
    b = as_int_array(b, func, "b", INT32_MIN, INT32_MAX)
    return _elementwise(_loop_srdhm, func, [a, b], out_dtype=np.int32)


@names_its_errors
def rounding_divide_by_pot(x, exponent):
    """gemmlowp ``RoundingDivideByPOT``: ``x / 2^exponent`` for int32 ``x``, ``exponent`` in [0, 31].

    Tie rule: ties away from zero (-5/2 -> -3, 5/2 -> 3). ARM ``VRSHL`` rounds ties toward +inf
    instead (-5/2 -> -2): use :func:`rounding_right_shift` with ``half_up`` for that. Cannot
    overflow; ``exponent = 0`` returns ``x``.
    """
    func = "rounding_divide_by_pot"
    x = as_int_array(x, func, "x", INT32_MIN, INT32_MAX, widen=False)
    e = as_int_array(exponent, func, "exponent", 0, 31)
    return _elementwise(_loop_rdbpot, func, [x, e], out_dtype=np.int32)


ROUNDINGS = ("double", "single")


def requant_rounding(rounding, func: str) -> bool:
    """``True`` for ``"single"`` rounding, ``False`` for ``"double"``; anything else is refused."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"{func}: rounding must be 'double' (TFLite default, gemmlowp) or 'single' "
                         f"(TFLITE_SINGLE_ROUNDING), got {rounding!r}")
    return rounding == "single"


@names_its_errors
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
    acc = as_int_array(acc, func, "acc", INT32_MIN, INT32_MAX, widen=False)
    length = _axis_length(acc, axis)
    m = _along_axis(as_int_array(multiplier, func, "multiplier", 0, INT32_MAX), acc.ndim, axis, func, "multiplier", length)
    s = _along_axis(as_int_array(shift, func, "shift", -31, 30), acc.ndim, axis, func, "shift", length)
    return _elementwise(lambda a, mm, ss, o: _loop_mbqm(a, mm, ss, single, o), func, [acc, m, s], out_dtype=np.int32)


@names_its_errors
def multiply_by_quantized_multiplier_int64(acc, multiplier, shift, axis=None):
    """TFLite ``MultiplyByQuantizedMultiplier(int64 acc, int32 multiplier, int shift)`` (16x8 kernels).

    The Q31 multiplier is first reduced to 15 bits, rounding half up
    (``(multiplier + 2^15) >> 16``, or ``0x7FFF`` when ``multiplier >= 0x7FFF0000``), then
    ``int32((acc * reduced + 2^(14 - shift)) >> (15 - shift))``: one rounding, ties toward +inf,
    truncated to int32 (wraps, no saturation). Same in the double- and single-rounding builds.

    ``acc``: |acc| < 2^47; ``multiplier`` in [0, 2^31); ``shift`` in [-31, 7].
    """
    func = "multiply_by_quantized_multiplier_int64"
    acc = as_int_array(acc, func, "acc", -(1 << 47) + 1, (1 << 47) - 1, widen=False)
    length = _axis_length(acc, axis)
    m = _along_axis(as_int_array(multiplier, func, "multiplier", 0, INT32_MAX), acc.ndim, axis, func, "multiplier", length)
    s = _along_axis(as_int_array(shift, func, "shift", -31, 7), acc.ndim, axis, func, "shift", length)
    return _elementwise(_loop_mbqm_int64, func, [acc, m, s], out_dtype=np.int32)


def _quantize_multiplier_scalar(real: float, single_rounding: bool) -> tuple[int, int]:
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    scaled = q * 2.0**31  # exact
    q_fixed = tflite_round(scaled)  # ties away from 0
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    if single_rounding and shift > 30:
        shift, q_fixed = 30, (1 << 31) - 1
    return q_fixed, shift


@names_its_errors
def quantize_multiplier(real_multiplier, rounding="double"):
    """TFLite ``QuantizeMultiplier(double)``: a real multiplier as a Q31 ``multiplier`` and ``shift``.

    ``real ~= multiplier * 2^(shift - 31)`` with ``multiplier`` in [2^30, 2^31) (or 0) and
    ``shift > 0`` meaning a left shift. Computed in double: ``q, shift = frexp(real)``,
    ``multiplier = round(q * 2^31)`` with ties away from zero (``TfLiteRound``). Edge cases
    (docs/semantics.md §2.1): ``real = 0`` -> (0, 0); ``q`` rounding up to 1.0 gives ``(2^30, shift + 1)``
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


# --------------------------------------------------------------------------------------------
# gemmlowp fixedpoint.h: the FixedPoint<int32, IntegerBits> type and its transcendental functions
# --------------------------------------------------------------------------------------------
# A gemmlowp ``FixedPoint<int32_t, m>`` is a raw int32 ``r`` meaning ``r / 2^(31 - m)`` (Qm.(31-m)),
# range ``[-2^m, 2^m)``. Here the raw value travels as an int64 holding an int32; the integer bits
# ``m`` are an argument. Products are SRDHM (integer bits add up; ties toward +inf, only
# ``INT32_MIN * INT32_MIN`` saturates); ``+``, ``-`` and negation wrap at 32 bits as gemmlowp's
# plain int32 ``Add``/``Sub``/``Neg`` do on every compiler the engines use (only ``-INT32_MIN``
# wraps in the paths below). The functions are jit primitives (never raise); the kernels of
# dspsim.kernels.nonlinear.pointwise and dspsim.kernels.nonlinear.softmax call them.
# Source: google/gemmlowp fixedpoint/fixedpoint.h; TFLite kernels/internal/common.h (GetReciprocal).
@njit(cache=True, inline="always")
def saturating_rounding_doubling_high_mul16_scalar(a, b):
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` of two int16 values: ``a * b / 2^15``, ties
    toward +inf (``(ab + 2^14) >> 15``: gemmlowp's nudge and truncating division, as in
    SRDHM); the one overflow ``-32768 * -32768`` saturates to 32767 (NEON ``VQRDMULH.S16``)."""
    return min((np.int64(a) * np.int64(b) + np.int64(1 << 14)) >> 15, np.int64(32767))


@njit(cache=True, inline="always")
def rounding_half_sum(a, b):
    """gemmlowp ``RoundingHalfSum`` of int32 values: ``(a + b) / 2`` rounded to nearest, ties away from
    zero (``(sum + sign(sum)) / 2`` with C truncation; ``sign(0) = +1``); cannot overflow (NEON ``VRHADD``
    rounds ties up instead)."""
    s = np.int64(a) + np.int64(b)
    t = s + 1 if s >= 0 else s - 1
    return t // 2 if t >= 0 else -((-t) // 2)


@njit(cache=True, inline="always")
def saturating_rounding_multiply_by_pot(x, exponent):
    """gemmlowp ``SaturatingRoundingMultiplyByPOT<exponent>`` of an int32 ``x``: ``x * 2^exponent``.

    ``exponent > 0``: a left shift that saturates to INT32_MIN/INT32_MAX when ``|x| > 2^(31-e) - 1``;
    ``exponent < 0``: RoundingDivideByPOT (ties away from zero); 0: ``x``.
    """
    if exponent > 0:
        threshold = (np.int64(1) << (31 - exponent)) - 1
        if x > threshold:
            return np.int64(INT32_MAX)
        if x < -threshold:
            return np.int64(INT32_MIN)
        return np.int64(x) << exponent
    if exponent < 0:
        return _rdbpot(np.int64(x), -exponent)
    return np.int64(x)


@njit(cache=True, inline="always")
def rescale(x, src_integer_bits, dst_integer_bits):
    """gemmlowp ``Rescale<dst>``: the raw value of Q``src`` ``x`` in Q``dst``, i.e.
    :func:`saturating_rounding_multiply_by_pot` by ``src - dst`` (saturating up, ties away from zero down)."""
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)


@njit(cache=True, inline="always")
def exp_on_interval_between_negative_one_quarter_and_0_excl(a):
    """gemmlowp: ``exp(a)`` for a Q0.31 ``a`` in ``[-1/4, 0)``, a Q0.31 result.

    Taylor expansion around -1/8 to the 4th order: ``x = a + 1/8``, ``e^(-1/8) * (1 + x + x^2/2 + x^3/6 +
    x^4/24)`` with the constants ``e^(-1/8) = 1895147668`` and ``1/3 = 715827883`` (raw Q0.31); products
    by SRDHM, the divisions by 4 and 2 by RoundingDivideByPOT, sums wrapping (they
    stay in range for inputs in the interval).
    """
    constant_term = np.int64(1895147668)
    constant_1_over_3 = np.int64(715827883)
    x = wrap_scalar(a + (1 << 28), 32)
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = _rdbpot(x4, 2)
    poly = _rdbpot(wrap_scalar(_srdhm(wrap_scalar(x4_over_4 + x3, 32), constant_1_over_3) + x2, 32), 1)
    return wrap_scalar(constant_term + _srdhm(constant_term, wrap_scalar(x + poly, 32)), 32)


@njit(cache=True)
def exp_on_negative_values(a, integer_bits):
    """gemmlowp ``exp_on_negative_values``: ``exp(a)`` of a Q``integer_bits`` ``a <= 0``, Q0.31 result.

    ``a`` is split as ``(a mod 1/4) - 1/4`` (evaluated by
    :func:`exp_on_interval_between_negative_one_quarter_and_0_excl`) plus the multiples of 1/4 held in
    the bits above: each set bit ``2^k`` (k = -2 .. 4, while ``integer_bits > k``) multiplies the result
    by the Q0.31 constant ``exp(-2^k)`` (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401,
    242) with SRDHM. With ``integer_bits > 5``, ``a < -32`` gives 0; ``a == 0`` gives
    ``INT32_MAX`` (gemmlowp's ``One()`` in Q0). Positive ``a`` is outside the contract (no check, as in
    gemmlowp).
    """
    fractional_bits = 31 - integer_bits
    one_quarter = np.int64(1) << (fractional_bits - 2)
    mask = one_quarter - 1
    a_mod_quarter_minus_one_quarter = wrap_scalar((a & mask) - one_quarter, 32)
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0))
    remainder = wrap_scalar(a_mod_quarter_minus_one_quarter - a, 32)
    multipliers = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)
    for k in range(7):
        exponent = k - 2
        if integer_bits > exponent:
            if remainder & (np.int64(1) << (fractional_bits + exponent)):
                result = _srdhm(result, np.int64(multipliers[k]))
    if integer_bits > 5:
        if a < -(np.int64(1) << (36 - integer_bits)):
            result = np.int64(0)
    if a == 0:
        result = np.int64(INT32_MAX)
    return result


@njit(cache=True, inline="always")
def _newton_reciprocal_of_half_denominator(half_denominator):
    """The Q2.29 ``x ~= 1 / half_denominator`` of gemmlowp's two ``..._for_x_in_0_1`` divisions: start
    ``48/17 - 32/17 * d`` (raw 1515870810, -1010580540), then three Newton-Raphson steps
    ``x += Rescale<2>(x * (1 - d * x))`` (each product an SRDHM; Rescale saturates)."""
    one_q2 = np.int64(1) << 29
    x = wrap_scalar(np.int64(1515870810) + _srdhm(half_denominator, np.int64(-1010580540)), 32)
    for _ in range(3):
        half_denominator_times_x = _srdhm(half_denominator, x)
        one_minus = wrap_scalar(one_q2 - half_denominator_times_x, 32)
        x = wrap_scalar(x + rescale(_srdhm(x, one_minus), 4, 2), 32)
    return x


@njit(cache=True)
def one_over_one_plus_x_for_x_in_0_1(a):
    """gemmlowp ``one_over_one_plus_x_for_x_in_0_1``: ``1 / (1 + a)`` of a Q0.31 ``a`` in [0, 1), a Q0.31
    result. ``d = RoundingHalfSum(a, One)`` (= (1 + a)/2, ties away from zero; ``One`` = INT32_MAX),
    the Newton-Raphson reciprocal ``x ~= 1/d`` in Q2.29, then ``x / 2`` as Q0 by a saturating left
    shift of 1 (``1 / (1 + 0)`` saturates to INT32_MAX)."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = _newton_reciprocal_of_half_denominator(half_denominator)
    return rescale(x, 1, 0)


@njit(cache=True)
def one_minus_x_over_one_plus_x_for_x_in_0_1(a):
    """gemmlowp ``one_minus_x_over_one_plus_x_for_x_in_0_1``: ``(1 - a) / (1 + a)`` of a Q0.31 ``a`` in
    [0, 1), Q0.31: the reciprocal of :func:`one_over_one_plus_x_for_x_in_0_1` minus one (Q2.29), then a
    saturating left shift of 2."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = _newton_reciprocal_of_half_denominator(half_denominator)
    return rescale(wrap_scalar(x - (np.int64(1) << 29), 32), 2, 0)


@njit(cache=True)
def logistic_q(a, integer_bits):
    """gemmlowp ``logistic``: ``1 / (1 + exp(-a))`` of a Q``integer_bits`` ``a``, a Q0.31 result.

    For ``a > 0``: ``one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(-a))``; for ``a < 0`` the
    same of ``-a`` subtracted from ``One`` (INT32_MAX, wrapping); ``a == 0`` gives ``2^30`` (1/2).
    ``-INT32_MIN`` wraps to itself, as in gemmlowp (callers clamp their input range first).
    """
    if a == 0:
        return np.int64(1 << 30)
    abs_input = a if a > 0 else wrap_scalar(-a, 32)
    result_if_positive = one_over_one_plus_x_for_x_in_0_1(
        exp_on_negative_values(wrap_scalar(-abs_input, 32), integer_bits))
    if a > 0:
        return result_if_positive
    return wrap_scalar(INT32_MAX - result_if_positive, 32)


@njit(cache=True)
def tanh_q(a, integer_bits):
    """gemmlowp ``tanh``: ``tanh(a)`` of a Q``integer_bits`` ``a``, a Q0.31 result.

    ``n = -|a|``; ``t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(2n))`` where
    ``2n`` is the same raw value read with one more integer bit (gemmlowp ``ExactMulByPot<1>``);
    the result is ``t`` for ``a > 0``, ``-t`` for ``a < 0`` and 0 for ``a == 0``.
    """
    if a == 0:
        return np.int64(0)
    n = a if a < 0 else wrap_scalar(-a, 32)
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return wrap_scalar(-t, 32) if a < 0 else t


@njit(cache=True, inline="always")
def count_leading_zeros32(x):
    """TFLite ``CountLeadingZeros`` of ``uint32(x)``: 32 for 0."""
    u = np.int64(x) & np.int64(0xFFFFFFFF)
    n = 0
    while n < 32 and not (u & (np.int64(1) << (31 - n))):
        n += 1
    return n


@njit(cache=True)
def get_reciprocal(x, x_integer_digits):
    """TFLite ``GetReciprocal``: ``(scale, num_bits_over_unit)`` with ``scale`` the Q0.31 value of
    ``2^num_bits_over_unit / x`` for a positive Q``x_integer_digits`` ``x``.

    ``x`` is normalised by its leading zeros ``h`` (``num_bits_over_unit = x_integer_digits - h``), its
    mantissa minus one computed in uint32 (``(x << h) - 2^31``, wrapping) and inverted by
    :func:`one_over_one_plus_x_for_x_in_0_1`.
    """
    headroom_plus_one = count_leading_zeros32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted = ((np.int64(x) << headroom_plus_one) - (np.int64(1) << 31)) & np.int64(0xFFFFFFFF)
    return one_over_one_plus_x_for_x_in_0_1(wrap_scalar(shifted, 32)), num_bits_over_unit


@njit(cache=True, inline="always")
def _saturating_add_int32(a, b):
    return min(max(np.int64(a) + np.int64(b), np.int64(INT32_MIN)), np.int64(INT32_MAX))


@njit(cache=True)
def log_x_for_x_greater_than_or_equal_to_1(x, input_integer_bits, output_integer_bits):
    """TFLite ``log_x_for_x_greater_than_or_equal_to_1`` (kernels/internal/common.h): ``ln(x)`` of a
    positive Q``input_integer_bits`` ``x``, a Q``output_integer_bits`` result.

    ``x = 2^z * r`` with ``r`` normalised twice (by the leading zeros of ``x`` and of ``x / sqrt(2)``,
    keeping the smaller mantissa and the larger adjusted exponent ``z +- 1/4``); ``ln(r)`` by a rational
    approximation around ``sqrt(sqrt(1/2))`` (constants 117049297, 127690142, 1057819769, 638450708) whose
    denominator goes through :func:`one_over_one_plus_x_for_x_in_0_1`; ``z * ln 2`` (1488522236) added in
    Q(output + 1). Products are SRDHMs (ties toward +inf); the exponent terms saturate (TFLite's
    ``SaturatingAddNonGemmlowp``/``SaturatingSub``); the final Rescale saturates.
    """
    log_2 = np.int64(1488522236)
    sqrt_sqrt_half = np.int64(1805811301)
    sqrt_half = np.int64(1518500250)
    alpha_n = np.int64(117049297)
    alpha_d = np.int64(127690142)
    alpha_i = np.int64(1057819769)
    alpha_f = np.int64(638450708)
    accum_bits = output_integer_bits + 1
    shifted_quarter = rescale(np.int64(536870912), 0, accum_bits)
    z_a = np.int64(x)
    z_a_headroom_plus_1 = count_leading_zeros32(z_a)
    r_a_tmp = saturating_rounding_multiply_by_pot(z_a, z_a_headroom_plus_1 - 1)
    r_a_raw = saturating_rounding_multiply_by_pot(_srdhm(r_a_tmp, sqrt_half), 1)
    z_a_pow_2_adj = _saturating_add_int32(
        saturating_rounding_multiply_by_pot(input_integer_bits - z_a_headroom_plus_1, 31 - accum_bits),
        shifted_quarter)
    z_b = _srdhm(z_a, sqrt_half)
    z_b_headroom = count_leading_zeros32(z_b) - 1
    r_b_raw = saturating_rounding_multiply_by_pot(z_a, z_b_headroom)
    z_b_pow_2_adj = _saturating_add_int32(
        saturating_rounding_multiply_by_pot(input_integer_bits - z_b_headroom, 31 - accum_bits), -shifted_quarter)
    r = min(r_a_raw, r_b_raw)
    z_pow_2_adj = max(z_a_pow_2_adj, z_b_pow_2_adj)
    p = rounding_half_sum(r, sqrt_sqrt_half)
    q = wrap_scalar(r - sqrt_sqrt_half, 32)
    q = wrap_scalar(q + q, 32)
    common_sq = _srdhm(q, q)
    num = wrap_scalar(_srdhm(q, r) + _srdhm(_srdhm(q, common_sq), alpha_n), 32)
    denom_minus_one_0 = wrap_scalar(
        _srdhm(p, wrap_scalar(wrap_scalar(alpha_i + q, 32) + _srdhm(alpha_d, common_sq), 32))
        + _srdhm(alpha_f, q), 32)
    recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one_0)
    num_scaled = rescale(num, 0, accum_bits)
    return rescale(wrap_scalar(_srdhm(z_pow_2_adj, log_2) + _srdhm(num_scaled, recip_denom), 32), accum_bits,
                   output_integer_bits)


@njit(cache=True)
def inv_sqrt_quantized_multiplier_exp(x, reverse_shift):
    """TFLite ``GetInvSqrtQuantizedMultiplierExp``: ``(multiplier, shift)`` with
    ``multiplier * 2^(shift - 31) ~= 1 / sqrt(x)`` for an int32 ``x >= 0`` (``reverse_shift = -1`` gives
    TFLite's left-shift convention).

    ``x <= 1`` gives ``(INT32_MAX, 0)``. Otherwise ``x`` is divided by 4 (truncating) until below 2^29,
    then shifted left by pairs of bits into [2^27, 2^29) with ``shift = 11 + divisions - pairs``; five
    Newton-Raphson steps ``x <- Rescale<3>(3/2 x - (a/2) Rescale<3>(x^3))`` from 1 in Q3.28 (``a/2`` by
    RoundingDivideByPOT), times ``sqrt(2)/2`` (1518500250); a negative shift is folded into the multiplier
    by a plain left shift (wrapping, as the C ``<<=``) and the shift multiplied by ``reverse_shift``.
    """
    if x <= 1:
        return np.int64(INT32_MAX), 0
    shift = 11
    while x >= (1 << 29):
        x = x // 4
        shift += 1
    max_left_shift_bits = count_leading_zeros32(x) - 1
    left_shift_bit_pairs = max_left_shift_bits // 2 - 1
    shift -= left_shift_bit_pairs
    x = x << (2 * left_shift_bit_pairs)
    fixedpoint_input = x >> 1
    half_input = _rdbpot(fixedpoint_input, 1)
    half_three = np.int64((1 << 28) + (1 << 27))
    r = np.int64(1) << 28  # One() in Q3.28
    for _ in range(5):
        r3 = rescale(_srdhm(_srdhm(r, r), r), 9, 3)
        r = rescale(wrap_scalar(_srdhm(half_three, r) - _srdhm(half_input, r3), 32), 6, 3)
    r = _srdhm(r, np.int64(1518500250))
    if shift < 0:
        r = wrap_scalar(r << (-shift), 32)
        shift = 0
    return r, shift * reverse_shift
