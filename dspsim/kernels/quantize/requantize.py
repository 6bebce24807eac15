"""Requantization kernels: accumulators by any :class:`dspsim.Requant`, and TFLite's Requantize of codes.

:func:`requantize` (and its prepared loop :func:`prepare_requantize_into`, the kernels' entry point) is the
one place where accumulators become output codes: the scheme of the ``Requant`` (its arithmetic in
:func:`dspsim.requant.requantize_value`), ``+ zp``, the clamp; straight loops per arithmetic, the
fixed-point one in int32 lanes where the host has AVX2 (:mod:`dspsim.simd.requant_lanes`).

:func:`tflite_requantize` is TFLite's Requantize of codes (QUANTIZE between int8 / uint8 / int16 / int32), per
kernel build. ``out = clamp(MultiplyByQuantizedMultiplier(x - input_zero_point, multiplier, shift) +
output_zero_point)``, with ``(multiplier, shift) = QuantizeMultiplier(double(s_in) / double(s_out))``
(``tflite/kernels/quantize.cc``). Three builds compute the product differently:

* ``"double"``: ``reference_ops::Requantize`` (LiteRT BUILTIN_REF, TFLM): gemmlowp's
  ``RoundingDivideByPOT(SRDHM(x << left, m), right)``, the right shift rounding ties away from zero.
  Its int8 <-> uint8 fast path (equal scales and a zero-point difference of 128: ``x ^ 0x80``) gives
  the same codes as the general formula, which is exact there (``m = 2^30, shift = 1``).
* ``"single"``: ``TFLITE_SINGLE_ROUNDING`` builds, one rounding, ties toward +inf.
* ``"neon"``: ``optimized_ops::Requantize`` (LiteRT's default interpreter when XNNPACK does not take
  the node: int8 <-> uint8, or a scale ratio outside [1/256, 128]): on x86 the NEON code through
  NEON_2_SSE (``neon_check.h`` defines USE_NEON with SSE4.1), ``MultiplyByQuantizedMultiplier4Rows``
  = ``VRSHL(VQRDMULH(x << left, m), -right)``: the right shift rounds ties toward +inf. Measured:
  uint8 (s 0.1, zp 131) -> int8 (s 0.3, zp -7) differs from the reference on 396 of 1024 codes.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit

from ..._errors import names_its_errors
from ..._jit import parallel_rows
from ...fixedpoint import (
    CHUNK, INT32_MAX, INT32_MIN, Rounding, as_int_array, multiply_by_quantized_multiplier_scalar,
    multiply_by_quantized_multiplier_single_scalar, rounding_right_shift_scalar,
    saturating_rounding_doubling_high_mul_scalar, wrap_scalar,
)
from ...requant import Arithmetic, FloatBias, Requant, float_bias_arrays, loop_tie, output_range, requantize_value
from ...simd import requant_lanes
from .._checks import int_in_range


# --------------------------------------------------------------------------------------------
# accumulators by any Requant
# --------------------------------------------------------------------------------------------
def _make_rows(arith, float_bias, tie, wrap, per_channel, count):
    """A requantization loop whose arithmetic, float-bias mode and tie rule, and whether it wraps the
    accumulator to ``acc_bits``, reads parameters per channel (else the first, hoisted out of the
    loop) and counts clamps and saturations, are compile-time constants.

    Each loop is straight, with no per-element tests of these, so LLVM vectorizes it (int64
    multiplies and shifts, selects). ``nogil``: :func:`requantize_into` runs row ranges of one call
    on several threads; ``cache=True`` keeps each compiled variant on disk.
    """
    fixed_point = arith <= Arithmetic.FIXED_POINT_SINGLE
    # TFLite's fixed point of int32 accumulators (no wrap, no counts) runs the front of each row in int32
    # vector lanes (dspsim.simd.requant_lanes; AVX2, jit only); an int constant, so the branch is pruned and
    # the closure stays cacheable.
    simd = int(requant_lanes.HAVE_AVX2 and not numba.config.DISABLE_JIT and not wrap and not count
               and requant_lanes.lane_kind(arith, float_bias, tie) == requant_lanes.FIXED_LANES)

    @njit(cache=True, nogil=True)
    def rows(acc, n, acc_bits, mult, shift, scale, fb_a, fb_b, zp, lo, hi, out, r0, r1):
        sh = 64 - acc_bits if wrap else 0
        n_lo = 0
        n_hi = 0
        n_sat = 0
        if simd == 1:
            lanes = requant_lanes.lane_parameters(mult, shift, n, per_channel)
        for r in range(r0, r1):
            row = acc[r * n:(r + 1) * n]  # row slices: with ``r * n + j`` indices LLVM does not vectorize
            orow = out[r * n:(r + 1) * n]
            j0 = 0
            if simd == 1:  # a no-op (0) unless acc is int32 and out int8 / uint8 / int16
                j0 = requant_lanes.requantize_blocks(row, orow, lanes, 0, zp, lo, hi)
            for j in range(j0, row.shape[0]):
                a = np.int64(row[j])
                if wrap:
                    a = (a << sh) >> sh  # the accumulator wrapped to acc_bits
                c = j if per_channel else 0
                v = requantize_value(a, arith, float_bias, tie, mult[c], shift[c], scale[c], fb_a[c], fb_b[c], zp)
                if count:
                    if fixed_point:
                        n_sat += (a > INT32_MAX) | (a < INT32_MIN)
                    n_lo += v < lo
                    n_hi += v > hi
                orow[j] = min(max(v, lo), hi)
        return n_lo, n_hi, n_sat

    return rows


_ROWS = {}


def prepare_requantize_into(size, n, acc_bits, wraps, requant: "Requant", fb, zp, lo, hi, func, count=False):
    """The requantization of :func:`requantize_into` for ``size`` accumulators, prepared once:
    ``run(acc, out) -> (clamped low, clamped high, saturated)``.

    ``wraps``: whether ``acc``'s dtype is wider than ``acc_bits`` (the loop then wraps first). A layer
    prepared at load (a model's FULLY_CONNECTED or CONV_2D) pays for the parameter arrays and the
    loop's selection once; each ``run`` only splits the rows over threads and calls the loop.
    """
    fb_a, fb_b, float_bias = fb
    per_channel = max(requant.channels, len(requant.act_times_w)) > 1 or float_bias != FloatBias.NONE
    if not per_channel:
        n = max(1, min(size, 1024))  # one parameter set: rows need not follow the channels
    arith, mult, shift, scale, _, tie = requant.arrays(n, func)
    key = (arith, float_bias, loop_tie(arith, tie), bool(wraps),
           per_channel, bool(count))
    if key not in _ROWS:
        _ROWS[key] = _make_rows(*key)
    rows = _ROWS[key]
    n_rows = -(-size // n)

    def run(acc, out):
        parts = parallel_rows(lambda r0, r1: rows(acc, n, acc_bits, mult, shift, scale, fb_a, fb_b, zp, lo, hi, out,
                                                  r0, r1), n_rows, size)
        return parts[0] if len(parts) == 1 else tuple(sum(p[i] for p in parts) for i in range(3))

    return run


def requantize_into(acc, n, acc_bits, requant: "Requant", fb, zp, lo, hi, out, func, count=False):
    """Requantize the flat, contiguous ``acc`` (int32 or int64; channel = index % ``n``) into ``out``.

    The kernels' entry point (validated arguments only): ``acc`` is first wrapped to ``acc_bits``;
    ``fb = (fb_a, fb_b, FloatBias)`` from :func:`float_bias_arrays`; ``zp``, ``lo``, ``hi`` the
    output zero point and clamp. Returns (outputs clamped low, clamped high, accumulators saturated
    to int32 by a fixed-point scheme) when ``count``, else zeros. Large tensors are split by rows
    over threads (:func:`dspsim._jit.parallel_rows`).
    """
    return prepare_requantize_into(acc.shape[0], n, acc_bits, acc_bits < 8 * acc.itemsize, requant, fb, zp, lo, hi,
                                   func, count)(acc, out)


@names_its_errors
def requantize(acc, requant: Requant, output_zero_point=0, act_min=None, act_max=None, *, out_dtype="int8",
               float_bias=None, axis=-1):
    """Requantize accumulators: the scheme of ``requant``, ``+ output_zero_point``, clamp, cast.

    Parameters
    ----------
    acc : integer array (int64 range)
        Accumulators after the bias. Per-channel parameters run along ``axis`` (default last).
    requant : Requant
    output_zero_point : int, inside ``out_dtype``
    act_min, act_max : int, optional
        Activation clamp (default the full range of ``out_dtype``); ``act_min > act_max`` is refused.
    out_dtype : "int8" | "uint8" | "int16"
    float_bias : float array, optional
        FBGEMM / oneDNN float bias (one per channel), added as the scheme says.

    Returns an array of ``out_dtype``. Saturation: only the final clamp (and, for the fixed-point
    schemes, int32 saturation of a wider accumulator).
    """
    func = "requantize"
    if not isinstance(requant, Requant):
        raise TypeError(f"{func}: requant must be a Requant, got {type(requant).__name__}")
    t, lo, hi = output_range(out_dtype, act_min, act_max, func)
    zp = int(as_int_array(output_zero_point, func, "output_zero_point", t.min, t.max))
    a = np.asarray(acc)
    if a.dtype not in (np.int32, np.int64):  # other integer types widen; floats, bools, uint64 > int64 refused
        a = as_int_array(acc, func, "acc")
    if a.ndim == 0:
        a = a.reshape(1)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{func}: axis must be an int, got {type(axis).__name__}")
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"{func}: axis {axis} is out of bounds for an array of rank {a.ndim}")
    a = np.moveaxis(a, int(axis), -1)
    shape = a.shape
    n = shape[-1]
    per_channel = float_bias is not None or max(requant.channels, len(requant.act_times_w)) > 1
    fb = float_bias_arrays(float_bias, requant, n if per_channel else 1, func)  # one set: no n-long copies
    flat = np.ascontiguousarray(a).reshape(-1)
    out = np.empty(flat.shape, t.dtype)
    if flat.size:
        requantize_into(flat, n, 64, requant, fb, zp, lo, hi, out, func)
    out = np.moveaxis(out.reshape(shape), -1, axis)
    if np.ndim(acc) == 0:
        return int(out.reshape(-1)[0])
    return out


# --------------------------------------------------------------------------------------------
# TFLite's Requantize of codes
# --------------------------------------------------------------------------------------------
_IN_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32))
_OUT_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32))
ROUNDINGS = ("double", "single", "neon")


@njit(cache=True)
def _requantize_codes(x, zi, zo, multiplier, shift, build, lo, hi, out):
    """One chunk (int64 in and out): ``clamp(MBQM(int32(x - zi)) + zo, lo, hi)``; ``build`` indexes ROUNDINGS."""
    left = max(shift, 0)
    right = max(-shift, 0)
    for i in range(x.shape[0]):
        d = wrap_scalar(x[i] - zi, 32)  # TFLite's int32 subtraction
        if build == 0:
            y = multiply_by_quantized_multiplier_scalar(d, multiplier, shift)
        elif build == 1:
            y = multiply_by_quantized_multiplier_single_scalar(d, multiplier, shift)
        else:  # VRSHL(VQRDMULH(x << left, m), -right): the left shift wraps, the right shift ties toward +inf
            y = rounding_right_shift_scalar(
                saturating_rounding_doubling_high_mul_scalar(wrap_scalar(d << left, 32), multiplier), right,
                Rounding.HALF_UP)
        out[i] = min(max(y + zo, lo), hi)


@names_its_errors
def tflite_requantize(x, *, input_zero_point, output_zero_point, multiplier, shift, out_dtype="int8",
                      rounding="double"):
    """TFLite Requantize of integer codes ``x`` to ``out_dtype`` (see the module docstring).

    Tie rules: ``"double"`` SRDHM ties toward +inf then the right shift ties away from zero;
    ``"single"`` one rounding ties toward +inf; ``"neon"`` both steps ties toward +inf. The result
    saturates to ``out_dtype``'s range (the clamp after adding the output zero point). ``x - input_zero_point``
    is an int32 subtraction in TFLite: it wraps (only an int32 ``x`` can reach beyond int32).

    Parameters
    ----------
    x : int8, uint8, int16 or int32 array
    input_zero_point, output_zero_point : int
    multiplier : int in [0, 2^31), shift : int in [-31, 30] (TFLite convention, > 0 is left)
    out_dtype : "int8" | "uint8" | "int16" | "int32"
    rounding : "double" | "single" | "neon"
    """
    a = np.asarray(x)
    if a.dtype not in _IN_TYPES:
        raise TypeError(f"tflite_requantize: x must have dtype int8, uint8, int16 or int32, got {a.dtype}")
    return tflite_requantize_plan(a.shape, a.dtype, input_zero_point=input_zero_point,
                                  output_zero_point=output_zero_point, multiplier=multiplier, shift=shift,
                                  out_dtype=out_dtype, rounding=rounding)(a)


def tflite_requantize_plan(shape, dtype, *, input_zero_point, output_zero_point, multiplier, shift, out_dtype="int8",
                           rounding="double"):
    """:func:`tflite_requantize` prepared for codes of ``shape`` and ``dtype`` (every parameter validated
    once); returns the lean ``run(x) -> codes``."""
    func = "tflite_requantize"
    if np.dtype(dtype) not in _IN_TYPES:
        raise TypeError(f"{func}: x must have dtype int8, uint8, int16 or int32, got {np.dtype(dtype)}")
    try:
        dt = np.dtype(out_dtype)
    except (TypeError, ValueError):
        dt = None
    if dt not in _OUT_TYPES:
        raise TypeError(f"{func}: out_dtype must be int8, uint8, int16 or int32, got {out_dtype!r}")
    if not isinstance(rounding, str) or rounding not in ROUNDINGS:
        raise ValueError(f"{func}: rounding must be one of {ROUNDINGS}, got {rounding!r}")
    for name, v in (("input_zero_point", input_zero_point), ("output_zero_point", output_zero_point)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not -(1 << 16) <= v <= (1 << 16):
            raise ValueError(f"{func}: {name} must be an int of at most 16 bits, got {v!r}")
    int_in_range(multiplier, 0, (1 << 31) - 1, func, "multiplier")
    int_in_range(shift, -31, 30, func, "shift")
    info = np.iinfo(dt)
    shape = tuple(int(d) for d in shape)
    size = math.prod(shape)
    args = (int(input_zero_point), int(output_zero_point), int(multiplier), int(shift), ROUNDINGS.index(rounding),
            int(info.min), int(info.max))

    def run(x):
        if size <= CHUNK:  # one int64 chunk
            out = np.empty(size, np.int64)
            wide = np.ravel(x).astype(np.int64)
            wide.flags.writeable = False  # read-only as nditer's chunks below: one numba specialisation
            _requantize_codes(wide, *args, out)
            return out.astype(dt).reshape(shape)
        out = np.empty(shape, dt)
        it = np.nditer([x, out], flags=["external_loop", "buffered", "zerosize_ok"],
                       op_flags=[["readonly"], ["writeonly"]], op_dtypes=[np.int64, np.int64], casting="unsafe",
                       buffersize=CHUNK)  # int64 chunks: temporaries of a few 256 KiB, whatever the input
        with it:
            for chunk, out_chunk in it:
                _requantize_codes(chunk, *args, out_chunk)
        return out

    return run
