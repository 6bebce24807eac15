"""Float <-> integer quantization, bit for bit as each engine does it.

* TensorFlow ``QuantizeV2`` / ``Dequantize`` (:func:`quantize`, :func:`dequantize`): modes
  MIN_COMBINED, MIN_FIRST and SCALED, per tensor or per ``axis``, on x86 with the Eigen kernels
  (oneDNN off). Every per-element step is float32, rounded as IEEE does, and flushed to zero as
  TF's kernels run with FTZ/DAZ on: any float32 result below 2^-126 in magnitude becomes 0 and a
  subnormal input reads as 0 (tininess is judged on the rounded result). Only the scale divisions
  are done in double and stored as float, as the C++ does.
* PyTorch / FBGEMM (:func:`quantize_per_tensor`, :func:`quantize_per_channel` and the
  dequantizers), as observed on torch 2.13.0 (x86-64): the zero point enters before the rounding.
* ONNX Runtime MLAS ``QuantizeLinear`` / ``DequantizeLinear`` (:func:`quantize_linear`,
  :func:`dequantize_linear`).
* The TFLite reference ``QUANTIZE`` / ``DEQUANTIZE`` kernels (:func:`tflite_quantize`,
  :func:`tflite_dequantize`).
* Power-of-two symmetric (Q-format) quantization as fixed-point DSPs use it
  (:func:`pof2_frac_bits`, :func:`quantize_pof2`, :func:`dequantize_pof2`).

Tie rules differ between engines, and this is the point of the module: TF MIN_COMBINED rounds
``y - 128`` away from zero for signed types but ``trunc(y + 0.5)`` (ties up) for unsigned ones;
PyTorch and ONNX Runtime round ties to even, PyTorch after adding the zero point, ONNX Runtime
before; TFLite rounds ties away from zero. See ``docs/engines.md`` for the observed differences.

Kernels are private ``@njit`` loops over float32 values that never raise; the public functions
validate and raise ``ValueError``/``TypeError`` naming themselves and the rule. NaN inputs are
refused everywhere (no engine defines the code of a NaN); the kernels count them in the same pass.
The loops are written to vectorize (branch-free selects, one loop per mode, no fast-math) and
write straight into the output dtype: the only large allocation is the result, whose dtype is the
codes' (or float32), and per-channel parameters are read per row inside the kernel. Large arrays
are split over threads (:func:`dspsim._jit.parallel_rows`); every kernel is cached on disk.
"""
from __future__ import annotations

import math
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from ._errors import names_its_errors
from numba import njit
from numba.extending import overload

from .dtypes import PLAIN_TYPES, TF_TYPES, IntType
from ._jit import fma_f32, parallel_rows
from .simd.streaming import LINE, line_offset, store_fence, stream_lines
from .fixedpoint import Rounding, as_int_array, round_half_away_from_zero, rounding_mode, wrap_scalar

_F0 = np.float32(0.0)
_F1 = np.float32(1.0)
_FHALF = np.float32(0.5)
_TINY = np.float32(2.0**-126)
_FLT_MAX = np.float32(np.finfo(np.float32).max)
_F2P31 = np.float32(2.0**31)
_F2P32 = np.float32(2.0**32)
_POF2_TINY = 2.0**-100
_INT32_MIN = -(1 << 31)



class TfMode(IntEnum):
    """TensorFlow ``QuantizeV2`` / ``Dequantize`` mode (see :func:`quantize` for each one's recipe)."""

    MIN_COMBINED = 0
    MIN_FIRST = 1
    SCALED = 2


class TfRoundMode(IntEnum):
    """TensorFlow ``QuantizeV2``'s ``round_mode``."""

    HALF_AWAY_FROM_ZERO = 0
    """``std::round``; every mode."""
    HALF_TO_EVEN = 1
    """``rint``; SCALED only."""


MIN_COMBINED, MIN_FIRST, SCALED = TfMode
_TF_MODES = {m.name: m for m in TfMode}
_TF_ROUNDS = {r.name: r for r in TfRoundMode}


class QuantizeResult(NamedTuple):
    """What TF ``QuantizeV2`` returns: the codes and the float range they represent.

    ``output_min``/``output_max`` are numpy float32 scalars (per tensor) or float32 arrays of the
    shape of ``min_range`` (per channel), bit-equal to TensorFlow's. Unpacks as ``q, lo, hi``.
    """

    output: np.ndarray
    output_min: np.float32 | np.ndarray
    output_max: np.float32 | np.ndarray


# --------------------------------------------------------------------------------------------
# float32 scalar helpers (FTZ, C++ min/max, rounding of a float32 to an integral float32)
# --------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _ftz(v):
    """Flush-to-zero: a float32 below 2^-126 in magnitude becomes a zero of the same sign."""
    return v * _F0 if abs(v) < _TINY else v


@njit(cache=True, inline="always")
def _fmin(a, b):
    """``std::min(a, b)``: ``b < a ? b : a``."""
    return b if b < a else a


@njit(cache=True, inline="always")
def _fmax(a, b):
    """``std::max(a, b)``: ``a < b ? b : a``."""
    return b if a < b else a


@njit(cache=True, inline="always")
def _haz(v):
    """``std::round`` of a float32 (:func:`dspsim.fixedpoint.round_half_away_from_zero`), ties away from zero."""
    return np.float32(round_half_away_from_zero(np.float64(v)))


@njit(cache=True, inline="always")
def _hte(v):
    """``rint`` of a float32 in the default FP mode: ties to even."""
    return np.float32(np.rint(np.float64(v)))


@njit(cache=True, inline="always")
def _clamp(v, lo, hi):
    """``v`` clamped to ``[lo, hi]``; NaN gives ``lo`` (what x86 code makes of a NaN code)."""
    v = v if v > lo else lo
    return v if v < hi else hi


def _low_bits(i, bits, signed):
    """The ``bits``-bit two's-complement (``signed``) or unsigned integer with i's low bits.

    Compiled code returns i unchanged: its callers store it into an array of exactly ``bits``
    bits, and that store keeps the low bits (LLVM ``trunc``), which is the same value and cheaper
    than widening to int64 for the shifts. NumPy refuses such stores, hence this Python body.
    """
    m = int(i) & ((1 << bits) - 1)
    return m - (1 << bits) if signed and m >> (bits - 1) else m


@overload(_low_bits, inline="always")
def _low_bits_jit(i, bits, signed):
    return lambda i, bits, signed: i


@njit(cache=True, inline="always")
def _to_code(v, bits, signed):
    """C conversion of an integral float32 to a ``bits``-bit integer: truncation, then the low bits,
    for a store into an array of ``bits`` bits.

    Every caller rounds first and keeps ``|v| < 2^32``, so truncation only matters for TF's unsigned
    MIN_COMBINED ``trunc(y + 0.5)``. Moving v by 2^32 into int32 range (exact: Sterbenz) keeps the
    low 32 bits and lets the conversion vectorize; qint32's ``int32(lrint(2^31))`` is INT32_MIN.
    """
    w = v - _F2P32 if v >= _F2P31 else (v + _F2P32 if v < -_F2P31 else v)
    return _low_bits(np.int32(w), bits, signed)


# --------------------------------------------------------------------------------------------
# parallel elementwise loops
# --------------------------------------------------------------------------------------------
# Every kernel sees its flat array as ``rows`` rows of ``inner`` elements; row r belongs to slice
# (channel) ``r % n_slices``, so per-channel parameters are read once per row. Work items are
# _CHUNK-element pieces of a row, or runs of whole rows when rows are short. A kernel runs the work
# items [k0, k1) without the GIL; :func:`_launch` splits them over threads.
_CHUNK = 1 << 14


@njit(cache=True, inline="always")
def _n_work(rows, inner):
    """Number of work items of a ``rows x inner`` array."""
    if inner == 0:
        return 0
    if inner >= _CHUNK:
        return rows * ((inner + _CHUNK - 1) // _CHUNK)
    per = _CHUNK // inner
    return (rows + per - 1) // per


@njit(cache=True, inline="always")
def _work(k, rows, inner):
    """Work item k: rows ``[r0, r1)`` and, in each, the columns ``[a, b)``."""
    if inner >= _CHUNK:
        per_row = (inner + _CHUNK - 1) // _CHUNK
        r0 = k // per_row
        a = (k - r0 * per_row) * _CHUNK
        return r0, r0 + 1, a, min(a + _CHUNK, inner)
    per = _CHUNK // inner
    r0 = k * per
    return r0, min(r0 + per, rows), 0, inner


_kernel = njit(cache=True, nogil=True, error_model="numpy")
"""Compile a loop over work items ``[k0, k1)``: cached, releasing the GIL so that chunks run in parallel."""


def _launch(kernel, n: int, *args):
    """``kernel(*args, k0, k1)`` over every work item of the ``n``-element array ``args[0]`` (rows of
    ``inner = args[2]``), split over threads by :func:`dspsim._jit.parallel_rows`; returns the chunks'
    results (NaN counts, or tuples of counts) summed, or None."""
    inner = args[2]
    parts = parallel_rows(lambda k0, k1: kernel(*args, k0, k1), _n_work(n // max(inner, 1), inner), n)
    if parts[0] is None:
        return None
    if isinstance(parts[0], tuple):
        return tuple(sum(p[i] for p in parts) for i in range(len(parts[0])))
    return sum(parts)


# --------------------------------------------------------------------------------------------
# TensorFlow QuantizeV2 / Dequantize
# --------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _tf_quantize_params(min_in, max_in, emr, mode, bits, signed, narrow, p_min, p_max, p_scale, p_offset):
    """Per slice: range adjustment (docs/semantics.md §1.1), then the mode's scale (§1.2-1.4).

    Writes the range TF returns (``p_min``, ``p_max``), the float32 scale and, for MIN_FIRST,
    ``f32(round(min * scale) - lowest)``.
    """
    tmin = -(np.int64(1) << (bits - 1)) if signed else np.int64(0)
    tmax = (np.int64(1) << (bits - 1)) - 1 if signed else (np.int64(1) << bits) - 1
    for i in range(min_in.size):
        lo = _ftz(min_in[i])
        hi = _ftz(max_in[i])
        min_r = _fmin(_F0, lo)
        eps = _ftz(_fmax(_F1, _fmax(abs(lo), abs(hi))) * emr)
        max_r = _fmax(_F0, _fmax(hi, _ftz(min_r + eps)))
        offset = _F0
        if mode == MIN_COMBINED:
            scale = _ftz(np.float32((np.float64(tmax) - np.float64(tmin)) / np.float64(_ftz(max_r - min_r))))
        elif mode == MIN_FIRST:
            if max_r == min_r:
                scale = _F0
            else:
                steps = np.float64(np.int64(1) << bits) - 1.0
                scale = _ftz(np.float32(steps / np.float64(_ftz(max_r - min_r))))
            offset = _ftz(_haz(_ftz(min_r * scale)) - np.float32(tmin))
        else:  # SCALED
            min_out = np.float32(tmin + (1 if narrow else 0))
            max_out = np.float32(tmax)
            s_min = _ftz(min_out / min_r) if _ftz(min_out * min_r) > _F0 else _FLT_MAX
            s_max = _ftz(max_out / max_r) if _ftz(max_out * max_r) > _F0 else _FLT_MAX
            scale = _fmin(s_min, s_max)
            min_r = _ftz(min_out / scale)
            max_r = _ftz(max_out / scale)
        p_min[i] = min_r
        p_max[i] = max_r
        p_scale[i] = scale
        p_offset[i] = offset


@njit(cache=True, inline="always")
def _tf_emit(dst, i, v, y, bits, signed):
    """Store y's code at ``dst[i]`` (0 if y is not finite); return (v is NaN, y is otherwise not finite)."""
    finite = abs(y) <= _FLT_MAX
    dst[i] = _to_code(y if finite else _F0, bits, signed)
    return np.int64(v != v), np.int64((v == v) & (not finite))


@njit(cache=True, error_model="numpy")
def _tf_quantize_row(src, dst, mode, hte, bits, signed, lo_c, hi_c, sc, off):
    """QuantizeV2's per-element float32 recipe on one row of one slice; returns ``(nan, bad)``: the
    NaN inputs and the other values whose pre-cast result was not finite (TF leaves both
    undefined; the wrapper refuses them). One loop per mode: a branch inside would stop
    vectorization."""
    half = np.float32(np.int64(1) << (bits - 1)) if signed else _F0
    lowest = np.float32(-(np.int64(1) << (bits - 1))) if signed else _F0
    highest = np.float32((np.int64(1) << (bits - 1)) - 1) if signed else np.float32((np.int64(1) << bits) - 1)
    lower_bound = _fmax(lowest, np.float32(-2147483648.0))  # MIN_FIRST: bounds castable to int32
    upper_bound = _fmin(highest, np.float32(2147483520.0))
    n_nan = 0
    n_bad = 0
    if mode == MIN_COMBINED:
        for i in range(dst.size):
            v = _ftz(src[i])
            y = _ftz(_ftz(_fmax(_fmin(v, hi_c), lo_c) - lo_c) * sc)
            # unsigned: the "fast path" trunc(y + 0.5), ties up, float-to-uint cast
            y = _haz(_ftz(y - half)) if signed else np.float32(np.trunc(_ftz(y + _FHALF)))
            is_nan, is_bad = _tf_emit(dst, i, v, y, bits, signed)
            n_nan += is_nan
            n_bad += is_bad
    elif mode == MIN_FIRST:  # no clamp before: +-inf * scale saturates through the bounds
        for i in range(dst.size):
            v = _ftz(src[i])
            y = _fmin(_fmax(_ftz(_haz(_ftz(v * sc)) - off), lower_bound), upper_bound)
            is_nan, is_bad = _tf_emit(dst, i, v, y, bits, signed)
            n_nan += is_nan
            n_bad += is_bad
    else:
        for i in range(dst.size):
            v = _ftz(src[i])
            y = _ftz(_fmax(_fmin(v, hi_c), lo_c) * sc)
            y = _hte(y) if hte else _haz(y)
            is_nan, is_bad = _tf_emit(dst, i, v, y, bits, signed)
            n_nan += is_nan
            n_bad += is_bad
    return n_nan, n_bad


def _tf_quantize_loop(x, n_slices, inner, mode, round_mode, bits, signed, p_min, p_max, p_scale, p_offset, out,
                      k0, k1):
    """:func:`_tf_quantize_row` over every row; returns the summed ``(nan, bad)``."""
    hte = mode == SCALED and round_mode == TfRoundMode.HALF_TO_EVEN
    rows = x.size // max(inner, 1)
    nan = 0
    bad = 0
    for k in range(k0, k1):
        r0, r1, a, b = _work(k, rows, inner)
        k_nan = 0
        k_bad = 0
        c = r0 % n_slices
        for r in range(r0, r1):
            seg = slice(r * inner + a, r * inner + b)  # views: i >= 0 is then known, the loop vectorizes
            n_nan, n_bad = _tf_quantize_row(x[seg], out[seg], mode, hte, bits, signed, p_min[c], p_max[c],
                                            p_scale[c], p_offset[c])
            k_nan += n_nan
            k_bad += n_bad
            c = c + 1 if c + 1 < n_slices else 0
        nan += k_nan
        bad += k_bad
    return nan, bad


_tf_quantize_kernel = _kernel(_tf_quantize_loop)


@njit(cache=True, error_model="numpy")
def _tf_dequantize_params(p_min, p_max, mode, bits, signed, narrow, p_scale, p_offset):
    """Per slice (docs/semantics.md §1.6): the float32 scale and the additive term of each mode."""
    tmin = -(np.int64(1) << (bits - 1)) if signed else np.int64(0)
    tmax = (np.int64(1) << (bits - 1)) - 1 if signed else (np.int64(1) << bits) - 1
    for i in range(p_min.size):
        min_r = _ftz(p_min[i])
        max_r = _ftz(p_max[i])
        offset = min_r
        if mode == MIN_COMBINED:
            scale = _ftz(_ftz(max_r - min_r) / (np.float32(tmax) - np.float32(tmin)))
        elif mode == MIN_FIRST:  # QuantizedToFloatStruct: range_min_rounded - lowest * range_scale
            steps = np.float64(np.int64(1) << bits) - 1.0
            scale = _ftz(np.float32(np.float64(_ftz(max_r - min_r)) / steps))
            rounded_min = min_r if max_r == min_r else _ftz(_haz(_ftz(min_r / scale)) * scale)
            offset = _ftz(rounded_min - _ftz(np.float32(tmin) * scale))
        elif tmin == 0:  # SCALED, unsigned
            scale = _ftz(max_r / np.float32(tmax))
        else:
            scale = _fmax(_ftz(min_r / np.float32(tmin + (1 if narrow else 0))), _ftz(max_r / np.float32(tmax)))
        p_scale[i] = scale
        p_offset[i] = offset


def _tf_dequantize_loop(q, n_slices, inner, mode, half, p_scale, p_offset, out, k0, k1):
    """Dequantize's per-element float32 recipe (FTZ); ``half`` is 2^(bits-1) for signed T, else 0.

    Per-tensor SCALED converts ``q.cast<int>().cast<float>()``, and QInt32 -> int goes through
    float: codes >= 2^31 - 64 become float 2^31, which x86 truncates to INT32_MIN (observed: the
    top codes dequantize to ``-2^31 * scale``). The per-channel path casts straight to float.
    """
    roundtrip = mode == SCALED and n_slices == 1
    rows = q.size // max(inner, 1)
    for k in range(k0, k1):
        r0, r1, a, b = _work(k, rows, inner)
        c = r0 % n_slices
        for r in range(r0, r1):
            sc, off = p_scale[c], p_offset[c]
            seg = slice(r * inner + a, r * inner + b)  # views: i >= 0 is then known, the loop vectorizes
            src, dst = q[seg], out[seg]
            for i in range(dst.size):
                fq = np.float32(src[i])
                if roundtrip and fq >= _F2P31:
                    fq = -_F2P31
                if mode == MIN_COMBINED:
                    dst[i] = _ftz(_ftz(_ftz(fq + half) * sc) + off)
                elif mode == MIN_FIRST:
                    dst[i] = _ftz(off + _ftz(fq * sc))
                else:
                    dst[i] = _ftz(fq * sc)
            c = c + 1 if c + 1 < n_slices else 0


_tf_dequantize_kernel = _kernel(_tf_dequantize_loop)


# --------------------------------------------------------------------------------------------
# affine kernels: PyTorch / FBGEMM, ONNX Runtime MLAS, TFLite reference, power of two
# --------------------------------------------------------------------------------------------
_STREAM_BLOCK = 256
"""Codes of the fused torch loop per streaming block (:mod:`dspsim.simd.streaming`): 4 cache lines. Blocks
of 128-512 codes are equally fast; 1024 loses a sixth of the gain and 4096 all of it (the loads and
the line stores then come in long separate bursts)."""


@njit(cache=True, inline="always")
def _torch_fused_codes(src, dst, inv, z32, lo_f, hi_f, type_lo, type_hi):
    """``dst[:] = clamp(rint(fmaf(src, inv, zp)))`` for one block; returns whether ``src`` holds a NaN."""
    nan = False
    for e in range(dst.size):
        v = src[e]
        nan |= v != v
        q = np.int32(np.rint(_clamp(fma_f32(v, inv, z32), lo_f, hi_f)))  # one float32 rounding
        q = q if q > type_lo else type_lo
        dst[e] = q if q < type_hi else type_hi
    return nan


@njit(cache=True, inline="always")
def _torch_fused_run(x, out, i, end, inv, z32, lo_f, hi_f, type_lo, type_hi):
    """``out[i:end]`` of a per-tensor 8-bit quantization (``rint(fmaf(x, inv, zp))``, clamped);
    returns whether ``x[i:end]`` holds a NaN.

    The codes up to the first cache-line boundary of ``out`` are stored in place; the rest are made
    in blocks of :data:`_STREAM_BLOCK` in an L1 buffer whose full lines go out through streaming
    stores (:mod:`dspsim.simd.streaming`: no read-for-ownership of the output), a last partial line by
    plain stores. 16M floats, 1 thread, Zen 4: 3.3 -> 2.4 ms, where torch takes 3.6."""
    per_line = LINE // out.itemsize
    head = min((LINE - line_offset(out, i)) % LINE // out.itemsize, end - i)
    nan = _torch_fused_codes(x[i:i + head], out[i:i + head], inv, z32, lo_f, hi_f, type_lo, type_hi)
    stage = np.empty(_STREAM_BLOCK, out.dtype)
    i += head
    while i < end:
        n = min(_STREAM_BLOCK, end - i)
        nan |= _torch_fused_codes(x[i:i + n], stage[:n], inv, z32, lo_f, hi_f, type_lo, type_hi)
        lines = n // per_line
        stream_lines(stage, out, i, lines)
        for e in range(lines * per_line, n):  # the array's last, partial line (a slice copy costs ~40 ns a block)
            out[i + e] = stage[e]
        i += n
    store_fence()
    return nan


def _torch_quantize_loop(x, n_slices, inner, inv, zp, fused, lo, hi, out, k0, k1):
    """FBGEMM quantize: ``t = fmaf(x, inv, zp)`` (``fused``: per tensor, 8-bit) or
    ``f32(f32(x * inv) + zp)``, float clamp to the type, then ``cvtps`` (ties to even). Returns the
    number of work items holding a NaN input (0: none).

    Speed: the NaN test is a boolean OR (an integer counter would widen the vector lanes to int64 and
    halve the vector width); the fused form, one row of one slice, runs :func:`_torch_fused_run` over
    each work item's contiguous range; the unfused one skips qint32's saturation select for the
    8/16-bit types, whose float clamp is exact; and the code is clamped once more, in int32, to its
    type's range: a no-op on the value that lets LLVM narrow it with saturating packs
    (``vpackssdw``/``vpackuswb``) instead of byte shuffles."""
    lo_f = np.float32(lo)  # exact: 0, -128 or -2^31
    wide = hi >= (1 << 24)
    hi_f = np.float32(2147483520.0) if wide else np.float32(hi)  # the largest float32 <= hi
    hi32 = np.int32(hi)
    type_lo, type_hi = np.int32(np.iinfo(out.dtype).min), np.int32(np.iinfo(out.dtype).max)
    rows = x.size // max(inner, 1)
    nan = 0
    for k in range(k0, k1):
        r0, r1, a, b = _work(k, rows, inner)
        if fused:  # n_slices == 1: the work item is x[r0 * inner + a:(r1 - 1) * inner + b]
            nan += _torch_fused_run(x, out, r0 * inner + a, (r1 - 1) * inner + b, inv[0], np.float32(zp[0]), lo_f,
                                    hi_f, type_lo, type_hi)
            continue
        k_nan = False
        c = r0 % n_slices
        for r in range(r0, r1):
            inv_c = inv[c]
            z32 = np.float32(zp[c])
            seg = slice(r * inner + a, r * inner + b)  # views: i >= 0 is then known, the loop vectorizes
            src, dst = x[seg], out[seg]
            for i in range(dst.size):
                v = src[i]
                k_nan |= v != v
                t = v * inv_c + z32  # float32: two roundings
                q = np.int32(np.rint(_clamp(t, lo_f, hi_f)))
                q = hi32 if wide and t > hi_f else q  # qint32: float 2^31 saturates to INT32_MAX
                q = q if q > type_lo else type_lo
                dst[i] = q if q < type_hi else type_hi
            c = c + 1 if c + 1 < n_slices else 0
        nan += k_nan
    return nan


_torch_quantize_kernel = _kernel(_torch_quantize_loop)


def _onnx_quantize_loop(x, n_slices, inner, scale, zp, lo, hi, out, k0, k1):
    """MLAS QuantizeLinear: ``f32(x / scale)``, float clamp to ``[lo - zp, hi - zp]``, ties to even,
    ``+ zp`` after the rounding. Returns the number of work items holding a NaN input (0: none): a
    boolean OR, as in :func:`_torch_quantize_loop` (an integer count widened the lanes to int64 and
    cost a third of the time: 9.4 against 6.1 ms on 16M floats)."""
    rows = x.size // max(inner, 1)
    nan = 0
    for k in range(k0, k1):
        r0, r1, a, b = _work(k, rows, inner)
        k_nan = False
        c = r0 % n_slices
        for r in range(r0, r1):
            s = scale[c]
            z = np.int32(zp[c])
            vlo = np.float32(lo - zp[c])
            vhi = np.float32(hi - zp[c])
            seg = slice(r * inner + a, r * inner + b)  # views: i >= 0 is then known, the loop vectorizes
            src, dst = x[seg], out[seg]
            for i in range(dst.size):
                v = src[i]
                k_nan |= v != v
                dst[i] = np.int32(np.rint(_clamp(v / s, vlo, vhi))) + z
            c = c + 1 if c + 1 < n_slices else 0
        nan += k_nan
    return nan


_onnx_quantize_kernel = _kernel(_onnx_quantize_loop)


def _tflite_quantize_loop(x, n_slices, inner, scale, zp, lo, hi, out, k0, k1):
    """TFLite AffineQuantize: ``clamp(int32(round(f32(x / scale))) + zp)``, ties away from zero.

    A rounded value outside int32 converts to INT32_MIN (x86 ``cvttss2si``), and ``+ zp`` wraps
    at 32 bits, as the compiled C++ does on x86. Returns the number of NaN inputs.
    """
    rows = x.size // max(inner, 1)
    nan = 0
    for k in range(k0, k1):
        r0, r1, a, b = _work(k, rows, inner)
        k_nan = 0
        c = r0 % n_slices
        for r in range(r0, r1):
            s = scale[c]
            z = zp[c]
            seg = slice(r * inner + a, r * inner + b)  # views: i >= 0 is then known, the loop vectorizes
            src, dst = x[seg], out[seg]
            for i in range(dst.size):
                v = src[i]
                k_nan += v != v
                h = _haz(v / s)
                h = h if (h < _F2P31) & (h >= -_F2P31) else -_F2P31
                dst[i] = min(max(wrap_scalar(np.int64(np.int32(h)) + z, 32), lo), hi)
            c = c + 1 if c + 1 < n_slices else 0
        nan += k_nan
    return nan


_tflite_quantize_kernel = _kernel(_tflite_quantize_loop)


def _pof2_rounding(mode):
    """``(threshold, tie, tie_odd)`` for positive and for negative values of a :class:`Rounding`:
    the magnitude ``m = floor(|v|) + f`` rounds up iff ``f > threshold`` or ``f == threshold`` and
    (``tie`` or, with ``tie_odd``, ``floor(|v|)`` odd). Threshold 1 means never (f < 1)."""
    table = {Rounding.HALF_UP: ((0.5, True), (0.5, False)),  # floor(v + 1/2): negative ties shrink
             Rounding.HALF_AWAY_FROM_ZERO: ((0.5, True), (0.5, True)),
             Rounding.HALF_TO_EVEN: ((0.5, False), (0.5, False)),
             Rounding.FLOOR: ((1.0, False), (0.0, False)),
             Rounding.TOWARD_ZERO: ((1.0, False), (1.0, False))}
    (thr_pos, tie_pos), (thr_neg, tie_neg) = table[Rounding(mode)]
    return thr_pos, tie_pos, thr_neg, tie_neg, mode == Rounding.HALF_TO_EVEN


def _pof2_quantize_loop(x, n_slices, inner, frac_bits, thr_pos, tie_pos, thr_neg, tie_neg, tie_odd, qmin,
                        qmax, out, k0, k1):
    """``saturate(round(x * 2^f))`` with ``w = (x * 2^(f//2)) * 2^(f - f//2)`` in float64.

    Exactness: both factors are powers of two of exponents of one sign in [-550, 550], so the
    intermediate lies between x and w. Where the rounding looks at more than the sign
    (``2^-9 <= |w| < 2^40``) no step leaves the normal range, so w is exact; above, w (or inf)
    saturates; below, only sign and non-zeroness matter (``|w| < 1/2``, no tie), and an underflow
    to 0 is mended to ``+-2^-100``. ``|w| = n + f`` with ``f = |w| - floor(|w|)`` exact.
    Returns the number of NaN inputs.
    """
    rows = x.size // max(inner, 1)
    nan = 0
    for k in range(k0, k1):
        r0, r1, a, b = _work(k, rows, inner)
        k_nan = 0
        c = r0 % n_slices
        for r in range(r0, r1):
            f = frac_bits[c]
            f_lo = f // 2
            s1 = 2.0 ** f_lo
            s2 = 2.0 ** (f - f_lo)
            seg = slice(r * inner + a, r * inner + b)  # views: i >= 0 is then known, the loop vectorizes
            src, dst = x[seg], out[seg]
            for i in range(dst.size):
                xv = np.float64(src[i])
                k_nan += xv != xv
                w = (xv * s1) * s2
                neg = xv < 0.0
                w = w if (w != 0.0) | (xv == 0.0) else (-_POF2_TINY if neg else _POF2_TINY)
                m = abs(w)
                n = np.floor(m)
                fr = m - n
                thr = thr_neg if neg else thr_pos
                tie = (tie_neg if neg else tie_pos) | (tie_odd & (n - 2.0 * np.floor(n * 0.5) != 0.0))
                n = n + 1.0 if (fr > thr) | ((fr == thr) & tie) else n
                dst[i] = np.int32(_clamp(-n if neg else n, qmin, qmax))
            c = c + 1 if c + 1 < n_slices else 0
        nan += k_nan
    return nan


_pof2_quantize_kernel = _kernel(_pof2_quantize_loop)


# --------------------------------------------------------------------------------------------
# dequantization kernels (integer codes of any width in, float32 out)
# --------------------------------------------------------------------------------------------
class _Dequant(IntEnum):
    """Which engine's dequantization :func:`_dequantize_loop` computes."""

    TORCH_TENSOR = 0
    TORCH_CHANNEL = 1
    ONNX = 2
    TFLITE = 3
    POF2 = 4



def _dequantize_loop(q, n_slices, inner, kind, scale, zp, out, k0, k1):
    """``out = f32(...)`` of each engine's dequantization (``kind``), with ``d = wrap32(q - zp[c])``:

    * _Dequant.TORCH_TENSOR: ``f32(scale) * f32(d)`` in float32;
    * _Dequant.TORCH_CHANNEL: ``double(f32(q) - f32(zp)) * scale`` (float32 difference, float64 product);
    * _Dequant.ONNX: ``f32(d) * f32(scale)``;
    * _Dequant.TFLITE: ``double(scale) * double(d)``;
    * _Dequant.POF2: ``double(q) * 2^-f`` as two exact power-of-two factors (``zp`` holds f; a result
      below the float64 normal range is below float32's smallest subnormal / 2 anyway).

    ``scale`` is float64 (holding the float32 value where the engine uses float32).
    """
    rows = q.size // max(inner, 1)
    for k in range(k0, k1):
        r0, r1, a, b = _work(k, rows, inner)
        c = r0 % n_slices
        for r in range(r0, r1):
            s64 = scale[c]
            s32 = np.float32(s64)
            z = zp[c]
            z32 = np.float32(z)
            g = -z
            s1 = 2.0 ** (g // 2)
            s2 = 2.0 ** (g - g // 2)
            seg = slice(r * inner + a, r * inner + b)  # views: i >= 0 is then known, the loop vectorizes
            src, dst = q[seg], out[seg]
            for i in range(dst.size):
                qi = src[i]
                d = np.int32(wrap_scalar(np.int64(qi) - z, 32))
                if kind == _Dequant.TORCH_TENSOR:
                    dst[i] = s32 * np.float32(d)
                elif kind == _Dequant.TORCH_CHANNEL:
                    dst[i] = np.float32(np.float64(np.float32(qi) - z32) * s64)
                elif kind == _Dequant.ONNX:
                    dst[i] = np.float32(d) * s32
                elif kind == _Dequant.TFLITE:
                    dst[i] = np.float32(s64 * np.float64(d))
                else:
                    dst[i] = np.float32((np.float64(qi) * s1) * s2)
            c = c + 1 if c + 1 < n_slices else 0


_dequantize_kernel = _kernel(_dequantize_loop)


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------
def _float32_array(x, func: str, name: str = "x") -> np.ndarray:
    """``x`` as a contiguous float32 array (float64 rounds to nearest); integers refused. NaN is
    counted by the kernels (one pass over x) and refused by :func:`_refuse_nan`."""
    arr = np.asarray(x)
    if arr.dtype.kind != "f":
        raise TypeError(f"{func}: {name} must be a floating-point array (the float side of quantization), "
                        f"got dtype {arr.dtype}")
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(arr, dtype=np.float32)


def _refuse_nan(n_nan: int, func: str, name: str = "x") -> None:
    if n_nan:
        raise ValueError(f"{func}: {name} contains NaN, whose code no engine defines")


def _int_codes(q, func: str, lo: int = _INT32_MIN, hi: int = (1 << 32) - 1) -> np.ndarray:
    """Integer codes in their own dtype (contiguous, no widening copy), checked to lie in ``[lo, hi]``."""
    arr = np.asarray(q)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{func}: q must be an integer array, got dtype {arr.dtype}")
    info = np.iinfo(arr.dtype)
    if arr.size and (info.min < lo or info.max > hi):
        q_lo, q_hi = int(arr.min()), int(arr.max())
        if q_lo < lo or q_hi > hi:
            raise ValueError(f"{func}: q must be in [{lo}, {hi}], got {q_lo if q_lo < lo else q_hi}")
    return np.ascontiguousarray(arr)


def _real_array(v, func: str, name: str, dtype=np.float32) -> np.ndarray:
    """A finite real parameter (int or float, scalar or array) converted to ``dtype``."""
    arr = np.asarray(v)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{func}: {name} must be a real number or array, got dtype {arr.dtype}")
    with np.errstate(over="ignore"):
        out = arr.astype(dtype)
    if not np.isfinite(out).all():
        raise ValueError(f"{func}: {name} must be finite")
    return out


def _flag(value, func: str, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{func}: {name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _choice(value, table: dict, func: str, name: str) -> int:
    key = value.upper() if isinstance(value, str) else value
    if key not in table:
        raise ValueError(f"{func}: unknown {name} {value!r}; expected one of {list(table)}")
    return table[key]


def _axis_slices(shape: tuple, axis, func: str):
    """``(axis, length, inner)`` for laying a per-channel parameter along ``axis`` (may be negative)."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{func}: axis must be an int or None, got {type(axis).__name__}")
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{func}: axis {axis} is out of bounds for an array of rank {ndim}")
    axis = int(axis) % ndim
    return axis, shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64))


def _code_range(q: np.ndarray):
    """The zero-point range of codes ``q``: their dtype's, within int32."""
    info = np.iinfo(q.dtype)
    return max(int(info.min), _INT32_MIN), min(int(info.max), (1 << 31) - 1)


def _per_channel(param: np.ndarray, shape: tuple, axis, func: str, name: str):
    """``(flat param, n_slices, inner)``: a scalar / 1-element param is per tensor (one slice of the
    whole array), else 1-D along axis (an axis is then ignored, as ONNX says, but must be an int)."""
    if axis is not None and (isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer))):
        raise TypeError(f"{func}: axis must be an int or None, got {type(axis).__name__}")
    if param.size == 1:
        return param.reshape(1), 1, int(np.prod(shape, dtype=np.int64))
    if axis is None:
        raise ValueError(f"{func}: {name} has {param.size} values; per-channel parameters need an axis")
    if param.ndim != 1:
        raise ValueError(f"{func}: per-channel {name} must be 1-D, got shape {param.shape}")
    axis, length, inner = _axis_slices(shape, axis, func)
    if param.size != length:
        raise ValueError(f"{func}: {name} has {param.size} values but axis {axis} has length {length}")
    return param, length, inner


def _tf_type(T, func: str) -> IntType:
    if isinstance(T, IntType):
        T = T.name
    if T not in TF_TYPES:
        raise ValueError(f"{func}: unknown T {T!r}; expected one of {list(TF_TYPES)}")
    return TF_TYPES[T]


def _tf_slices(shape: tuple, axis, func: str):
    """TF's slicing: no axis (or an axis of length 1) is the per-tensor path."""
    size = int(np.prod(shape, dtype=np.int64))
    if axis is None:
        return 1, size
    _, length, inner = _axis_slices(shape, axis, func)
    return (1, size) if length == 1 else (length, inner)


def _tf_range_pair(min_range, max_range, n_slices: int, func: str):
    lo = _real_array(min_range, func, "min_range")
    hi = _real_array(max_range, func, "max_range")
    for name, arr in (("min_range", lo), ("max_range", hi)):
        if arr.size != n_slices:
            raise ValueError(f"{func}: {name} has {arr.size} values but there are {n_slices} slices "
                             f"(one per index of axis, or 1 without axis)")
    daz = [np.where(np.abs(v) < _TINY, _F0, v).reshape(-1) for v in (lo, hi)]  # TF compares under DAZ
    if np.any(daz[1] < daz[0]):
        raise ValueError(f"{func}: max_range must be >= min_range")
    return lo, hi


def _tf_range_out(values: np.ndarray, per_tensor: bool, shape: tuple):
    return values[0] if per_tensor else values.reshape(shape)


# --------------------------------------------------------------------------------------------
# public API: TensorFlow
# --------------------------------------------------------------------------------------------
@names_its_errors
def quantize(x, min_range, max_range, T, mode="MIN_COMBINED", round_mode="HALF_AWAY_FROM_ZERO",
             narrow_range=False, axis=None, ensure_minimum_range=0.01) -> QuantizeResult:
    """TensorFlow ``QuantizeV2`` (``tf.quantization.quantize``), bit for bit (x86, Eigen, FTZ).

    Range adjustment, every mode (float32)::

        min_r = min(0, min_range)
        max_r = max(0, max(max_range, min_r + max(1, |min_range|, |max_range|) * ensure_minimum_range))

    MIN_COMBINED: ``scale = f32(double(range(T)) / (max_r - min_r))``,
    ``y = (clamp(x, min_r, max_r) - min_r) * scale``; signed T: ``q = round(y - 2^(bits-1))`` with
    ties away from zero; unsigned T: ``q = trunc(y + 0.5)``, ties up. qint32: ``x = max_r`` gives
    ``2^31``, which wraps to INT32_MIN as in TF. Returns ``(min_r, max_r)``.

    MIN_FIRST: ``rs = f32((2^bits - 1) / double(max_r - min_r))`` (0 when the range is empty),
    ``q = clamp(round(x * rs) - (round(min_r * rs) - min_T))`` with ties away from zero; x is not
    clamped first, the result is (to ``[min_T, max_T]``, for qint32 to ``[-2^31, 2147483520]``).
    Returns ``(min_r, max_r)``.

    SCALED: ``s = min(min_out / min_r, max_out / max_r)`` over the sides whose product is > 0
    (FLT_MAX otherwise), ``min_out = min_T + narrow_range``, ``max_out = max_T``; returns
    ``(min_out / s, max_out / s)`` and ``q = round(clamp(x, that range) * s)`` by ``round_mode``.

    Parameters
    ----------
    x : float array (float64 is rounded to float32, as ``tf.constant`` does); NaN is refused
        (TF's code for NaN is undefined), +-inf is supported: it saturates like any value beyond
        the range (MIN_COMBINED/SCALED clamp it, MIN_FIRST saturates through its bounds).
    min_range, max_range : float or array
        One value, or one per index of ``axis``.
    T : "qint8" | "quint8" | "qint16" | "quint16" | "qint32"
    mode : "MIN_COMBINED" | "MIN_FIRST" | "SCALED"
    round_mode : "HALF_AWAY_FROM_ZERO" | "HALF_TO_EVEN" (SCALED only)
    narrow_range : bool, read by SCALED only (lowest code ``min_T + 1``; quint8 then maps 0.0 to 1)
    axis : int or None
        Per-channel axis (negative counts from the end). An axis of length 1 is TF's per-tensor
        path: scalar ``output_min``/``output_max``.
    ensure_minimum_range : float (float32)

    Returns
    -------
    QuantizeResult ``(output, output_min, output_max)``; output has T's numpy dtype.

    Raises
    ------
    ValueError
        Where TF refuses (HALF_TO_EVEN unless SCALED; max_range < min_range; a number of range
        values other than the number of slices; MIN_FIRST per channel), for unknown names,
        non-finite ranges, NaN in x, an axis out of bounds, and where TF's result is undefined
        (a scale that overflows float32, e.g. a [0, 0] range with ``ensure_minimum_range=0``).
    TypeError
        For an integer x or non-bool ``narrow_range``.
    """
    func = "quantize"
    t = _tf_type(T, func)
    mode_i = _choice(mode, _TF_MODES, func, "mode")
    round_i = _choice(round_mode, _TF_ROUNDS, func, "round_mode")
    narrow = _flag(narrow_range, func, "narrow_range")
    if round_i == TfRoundMode.HALF_TO_EVEN and mode_i != SCALED:
        raise ValueError(f"{func}: round_mode='HALF_TO_EVEN' is only supported with mode='SCALED'")
    x = _float32_array(x, func)
    n_slices, inner = _tf_slices(x.shape, axis, func)
    if n_slices > 1 and mode_i == MIN_FIRST:
        raise ValueError(f"{func}: mode='MIN_FIRST' is not implemented per channel (axis of length > 1)")
    lo, hi = _tf_range_pair(min_range, max_range, n_slices, func)
    emr = _real_array(ensure_minimum_range, func, "ensure_minimum_range")
    if emr.size != 1:
        raise ValueError(f"{func}: ensure_minimum_range must be a scalar")
    params = [np.empty(n_slices, np.float32) for _ in range(4)]
    with np.errstate(all="ignore"):
        _tf_quantize_params(lo.reshape(-1), hi.reshape(-1), emr.reshape(-1)[0], mode_i, t.bits, t.signed,
                            narrow, *params)
    out = np.empty(x.shape, t.dtype)
    nan, bad = _launch(_tf_quantize_kernel, x.size, x.reshape(-1), n_slices, inner, mode_i, round_i, t.bits,
                       t.signed, *params, out.reshape(-1))
    _refuse_nan(nan, func)
    if mode_i == MIN_FIRST and np.isinf(params[2]).any():
        bad = x.size  # TF's offset round(min * inf) is infinite: no value has a defined code (0 * inf is NaN)
    if bad:
        raise ValueError(f"{func}: the range is too small for {t.name}: the scale overflows float32 and "
                         f"{bad} values have no defined code in TensorFlow (raise ensure_minimum_range)")
    per_tensor = n_slices == 1
    return QuantizeResult(out,
                          _tf_range_out(params[0], per_tensor, lo.shape),
                          _tf_range_out(params[1], per_tensor, lo.shape))


_DTYPE_TO_TF = {np.dtype(t.dtype): t for t in TF_TYPES.values()}


@names_its_errors
def dequantize(q, min_range, max_range, mode="MIN_COMBINED", narrow_range=False, axis=None, T=None):
    """TensorFlow ``Dequantize`` (``tf.quantization.dequantize``) to float32, bit for bit (FTZ).

    MIN_COMBINED: ``sf = (max - min) / f32(max_T - min_T)``; ``out = (q + half) * sf + min`` with
    ``half = 2^(bits-1)`` for signed T, 0 for unsigned ones.
    MIN_FIRST: ``rs = f32((max - min) / double(2^bits - 1))``,
    ``out = (round(min / rs) * rs - min_T * rs) + q * rs`` (ties away from zero; ``min`` itself when
    ``max == min``). This can disagree with :func:`quantize` by one code (docs/semantics.md §1.6).
    SCALED: ``sf = max / max_T`` (unsigned) or ``max(min / (min_T + narrow_range), max / max_T)``;
    ``out = q * sf``. Per tensor TF reads a qint32 code as ``int(float(q))``: the top 64 codes
    (>= 2^31 - 64) become INT32_MIN and dequantize to ``-2^31 * sf`` (observed on TF 2.21; the
    per-channel path does not do this).

    Every step is float32. Feed the range :func:`quantize` returned: Dequantize neither adjusts nor
    checks it (max < min is accepted, as in TF).

    Parameters
    ----------
    q : integer array; T is taken from its dtype (int8 -> qint8, uint8 -> quint8, int16, uint16,
        int32) unless ``T`` is given, in which case the values must fit T.
    min_range, max_range : float or array (one value per slice of ``axis``), finite
    mode, narrow_range, axis : as in :func:`quantize`; MIN_FIRST per channel is refused.

    Raises ValueError / TypeError naming ``dequantize`` and the rule.
    """
    func = "dequantize"
    mode_i = _choice(mode, _TF_MODES, func, "mode")
    narrow = _flag(narrow_range, func, "narrow_range")
    arr = np.asarray(q)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{func}: q must be an integer array, got dtype {arr.dtype}")
    if T is None:
        if arr.dtype not in _DTYPE_TO_TF:
            raise TypeError(f"{func}: cannot infer T from dtype {arr.dtype}; pass T= or an int8/uint8/int16/"
                            f"uint16/int32 array")
        t = _DTYPE_TO_TF[arr.dtype]
    else:
        t = _tf_type(T, func)
    q = _int_codes(arr, func, t.min, t.max)
    n_slices, inner = _tf_slices(q.shape, axis, func)
    if n_slices > 1 and mode_i == MIN_FIRST:
        raise ValueError(f"{func}: mode='MIN_FIRST' is not implemented per channel (axis of length > 1)")
    lo = _real_array(min_range, func, "min_range").reshape(-1)
    hi = _real_array(max_range, func, "max_range").reshape(-1)
    for name, v in (("min_range", lo), ("max_range", hi)):
        if v.size != n_slices:
            raise ValueError(f"{func}: {name} has {v.size} values but there are {n_slices} slices")
    scale = np.empty(n_slices, np.float32)
    offset = np.empty(n_slices, np.float32)
    out = np.empty(q.shape, np.float32)
    _tf_dequantize_params(lo, hi, mode_i, t.bits, t.signed, narrow, scale, offset)
    _launch(_tf_dequantize_kernel, q.size, q.reshape(-1), n_slices, inner, mode_i, np.float32(-t.min), scale, offset,
            out.reshape(-1))
    return out


# --------------------------------------------------------------------------------------------
# public API: PyTorch / FBGEMM
# --------------------------------------------------------------------------------------------
_TORCH_TYPES = {"quint8": PLAIN_TYPES["uint8"], "qint8": PLAIN_TYPES["int8"], "qint32": PLAIN_TYPES["int32"],
                "uint8": PLAIN_TYPES["uint8"], "int8": PLAIN_TYPES["int8"], "int32": PLAIN_TYPES["int32"]}


def _torch_type(dtype, func: str) -> IntType:
    name = dtype.name if isinstance(dtype, IntType) else str(dtype).replace("torch.", "")
    if name not in _TORCH_TYPES:
        raise ValueError(f"{func}: unknown dtype {dtype!r}; expected one of {list(_TORCH_TYPES)}")
    return _TORCH_TYPES[name]


def _scales(scale, func: str, name: str, dtype=np.float32) -> np.ndarray:
    """Positive, finite and normal scale(s), also after rounding to ``dtype`` (a subnormal scale's reciprocal is
    not finite: every engine's ``x / scale`` overflows)."""
    s = _real_array(scale, func, name, np.float64)
    if (s <= 0).any():  # array methods: np.any/np.all cost ~5 us each
        raise ValueError(f"{func}: {name} must be > 0")
    with np.errstate(over="ignore", under="ignore"):
        r = s.astype(dtype)
    if not np.isfinite(r).all():
        raise ValueError(f"{func}: {name} must be finite in {np.dtype(dtype).name}")
    if (r < np.finfo(dtype).tiny).any():
        raise ValueError(f"{func}: {name} must be a normal {np.dtype(dtype).name} (at least "
                         f"{np.finfo(dtype).tiny:.6g}); a subnormal or zero scale has no finite reciprocal")
    return r


def _torch_quantize(func, x, scale, zero_point, axis, dtype, per_channel):
    t = _torch_type(dtype, func)
    x = _float32_array(x, func)
    s = _scales(scale, func, "scale" if not per_channel else "scales").reshape(-1)
    zp = as_int_array(zero_point, func, "zero_point", t.min, t.max).reshape(-1)
    if per_channel:
        ax, length, inner = _axis_slices(x.shape, axis, func)
        for name, v in (("scales", s), ("zero_points", zp)):
            if v.size != length:
                raise ValueError(f"{func}: {name} has {v.size} values but axis {ax} has length {length}")
    else:
        if s.size != 1 or zp.size != 1:
            raise ValueError(f"{func}: scale and zero_point must be scalars")
        length, inner = 1, x.size
    inv = (np.float32(1.0) / s).astype(np.float32)
    fused = not per_channel and t.bits < 32
    out = np.empty(x.shape, t.dtype)
    _refuse_nan(_launch(_torch_quantize_kernel, x.size, x.reshape(-1), length, inner, inv, np.ascontiguousarray(zp),
                        fused, t.min, t.max, out.reshape(-1)), func)
    return out


@names_its_errors
def quantize_per_tensor(x, scale, zero_point, dtype):
    """``torch.quantize_per_tensor(x, scale, zero_point, dtype).int_repr()``, as torch 2.13 computes it.

    Observed on torch 2.13.0 (x86-64, fbgemm), which differs from the source reading in docs/semantics.md §6:
    with ``inv = f32(1 / f32(scale))``,

    * quint8 / qint8: ``q = rint(fmaf(x, inv, zp))``: the zero point enters *before* the one
      rounding to float32 and the tie rule (ties to even) sees ``x * inv + zp``: x/scale = 0.5 with
      zp = 3 gives 4, where ONNX Runtime gives 3;
    * qint32: ``q = rint(f32(f32(x * inv) + f32(zp)))`` (the zero point itself rounded to float32).

    Saturates to the type (+-inf included). ``dtype``: "quint8" | "qint8" | "qint32" or
    "uint8" | "int8" | "int32". Returns the integer codes (``int_repr``) in that numpy dtype.
    ``scale`` must be positive and finite in float32; ``zero_point`` must fit the type.
    """
    return _torch_quantize("quantize_per_tensor", x, scale, zero_point, None, dtype, False)


@names_its_errors
def quantize_per_channel(x, scales, zero_points, axis, dtype):
    """``torch.quantize_per_channel(...).int_repr()`` as torch 2.13 computes it (x86-64, fbgemm).

    Per element of channel c: ``q = rint(f32(f32(x * inv[c]) + f32(zp[c])))`` with
    ``inv[c] = f32(1 / f32(scales[c]))``: two float32 roundings, then ties to even; saturates to the
    type. Observed for quint8, qint8 and qint32 alike (no fused multiply-add here, unlike
    :func:`quantize_per_tensor`). ``scales``/``zero_points``: 1-D, one per index of ``axis``.
    """
    return _torch_quantize("quantize_per_channel", x, scales, zero_points, axis, dtype, True)


def _dequantize(kind: int, q: np.ndarray, scale: np.ndarray, zp: np.ndarray, n_slices: int, inner: int):
    out = np.empty(q.shape, np.float32)
    _launch(_dequantize_kernel, q.size, q.reshape(-1), n_slices, inner, int(kind),  # an int: numba types an
            np.ascontiguousarray(np.broadcast_to(scale.reshape(-1), (n_slices,)), np.float64),  # IntEnum slowly
            np.ascontiguousarray(np.broadcast_to(zp.reshape(-1), (n_slices,)), np.int64), out.reshape(-1))
    return out


@names_its_errors
def dequantize_per_tensor(q, scale, zero_point):
    """``torch.dequantize`` of a per-tensor quantized tensor: ``f32(f32(scale) * float(q - zp))``.

    ``q - zp`` is computed in int32 and wraps (observed for qint32 at the extremes); its conversion
    to float32 rounds to nearest even above 2^24. Returns float32.
    """
    func = "dequantize_per_tensor"
    q = _int_codes(q, func)
    s = _scales(scale, func, "scale")
    zp = as_int_array(zero_point, func, "zero_point", *_code_range(q))
    if s.size != 1 or zp.size != 1:
        raise ValueError(f"{func}: scale and zero_point must be scalars")
    return _dequantize(_Dequant.TORCH_TENSOR, q, s, zp, 1, q.size)


@names_its_errors
def dequantize_per_channel(q, scales, zero_points, axis):
    """``torch.dequantize`` of a per-channel tensor: ``f32(double(f32(q) - f32(zp[c])) * scale[c])``.

    The scales stay double (torch keeps them as float64); the difference is float32; one rounding
    to float32 at the end. Returns float32.
    """
    func = "dequantize_per_channel"
    q = _int_codes(q, func)
    s = _scales(scales, func, "scales", np.float64).reshape(-1)
    zp = as_int_array(zero_points, func, "zero_points", _INT32_MIN, (1 << 31) - 1).reshape(-1)
    ax, length, inner = _axis_slices(q.shape, axis, func)
    for name, v in (("scales", s), ("zero_points", zp)):
        if v.size != length:
            raise ValueError(f"{func}: {name} has {v.size} values but axis {ax} has length {length}")
    return _dequantize(_Dequant.TORCH_CHANNEL, q, s, zp, length, inner)


# --------------------------------------------------------------------------------------------
# public API: ONNX Runtime
# --------------------------------------------------------------------------------------------
ONNX_TYPES = {k: PLAIN_TYPES[k] for k in ("int8", "uint8", "int16", "uint16")}


@names_its_errors
def quantize_linear(x, scale, zero_point=0, axis=1, dtype="uint8"):
    """ONNX ``QuantizeLinear`` as ONNX Runtime's MLAS computes it (bit-exact with ORT 1.32, x86).

    ``v = f32(x / scale)`` (a true division, not a reciprocal), clamped in float to
    ``[min_T - zp, max_T - zp]``, rounded ties to even, then ``+ zp``: the zero point enters after
    the rounding (PyTorch adds it before). Saturates; +-inf saturate too.

    Parameters
    ----------
    x : float array (float64 is rounded to float32)
    scale : float or 1-D array (float32). A scalar, 0-d or 1-element scale is per tensor; a longer
        1-D scale is per axis along ``axis`` (ONNX default 1; negative counts from the end).
    zero_point : int or 1-D int array of the same length, inside the type (default 0)
    dtype : "int8" | "uint8" | "int16" | "uint16". ONNX Runtime has no int32 QuantizeLinear
        (the model is rejected), so int32 is refused here.
    """
    func = "quantize_linear"
    key = dtype.name if isinstance(dtype, IntType) else str(dtype)
    if key not in ONNX_TYPES:
        raise ValueError(f"{func}: dtype {dtype!r} is not supported by ONNX Runtime's QuantizeLinear; "
                         f"expected one of {list(ONNX_TYPES)}")
    t = ONNX_TYPES[key]
    x = _float32_array(x, func)
    s = _scales(scale, func, "scale")
    s, n_slices, inner = _per_channel(s, x.shape, axis, func, "scale")
    zp = as_int_array(zero_point, func, "zero_point", t.min, t.max).reshape(-1)
    if zp.size not in (1, n_slices):
        raise ValueError(f"{func}: zero_point has {zp.size} values but scale has {n_slices}")
    zp = np.ascontiguousarray(np.broadcast_to(zp, (n_slices,)))
    out = np.empty(x.shape, t.dtype)
    _refuse_nan(_launch(_onnx_quantize_kernel, x.size, x.reshape(-1), n_slices, inner, s, zp, t.min, t.max,
                        out.reshape(-1)), func)
    return out


@names_its_errors
def dequantize_linear(q, scale, zero_point=0, axis=1):
    """ONNX ``DequantizeLinear`` as ONNX Runtime computes it: ``f32(float(int32(q - zp)) * scale)``.

    ``q - zp`` is an int32 subtraction (wraps for int32 inputs, observed), converted to float32
    (rounds above 2^24), times the float32 scale. ``q``: int8 / uint8 / int16 / uint16 / int32
    values; ``scale`` per tensor or per axis as in :func:`quantize_linear`. Returns float32.
    """
    func = "dequantize_linear"
    q = _int_codes(q, func)
    s = _scales(scale, func, "scale")
    s, n_slices, inner = _per_channel(s, q.shape, axis, func, "scale")
    zp = as_int_array(zero_point, func, "zero_point", *_code_range(q)).reshape(-1)  # ONNX: x's type
    if zp.size not in (1, n_slices):
        raise ValueError(f"{func}: zero_point has {zp.size} values but scale has {n_slices}")
    return _dequantize(_Dequant.ONNX, q, s, zp, n_slices, inner)


# --------------------------------------------------------------------------------------------
# public API: TFLite reference kernels
# --------------------------------------------------------------------------------------------
TFLITE_TYPES = {k: PLAIN_TYPES[k] for k in ("int8", "uint8", "int16")}


@names_its_errors
def tflite_quantize(x, scale, zero_point=0, dtype="int8", axis=None):
    """TFLite reference ``QUANTIZE`` (``AffineQuantize``; ``PerChannelQuantize`` with ``axis``).

    ``q = clamp(int32(round(f32(x / f32(scale)))) + zp, min_T, max_T)``: a float32 true division,
    ties away from zero (``TfLiteRound``). A rounded value beyond int32 (huge x, +-inf) converts to
    INT32_MIN as x86 ``cvttss2si`` does, and ``+ zp`` wraps at 32 bits; with zp >= 0 such values
    land on min_T whatever their sign (the C++ has undefined behaviour there; this is what x86
    builds compute). Note that LiteRT's default interpreter delegates QUANTIZE to XNNPACK, which
    multiplies by ``f32(1/scale)`` and rounds ties to even instead (docs/semantics.md §9).

    ``dtype``: "int8" | "uint8" | "int16". ``scale``/``zero_point``: scalars, or 1-D along ``axis``.
    """
    x = _float32_array(x, "tflite_quantize")
    return tflite_quantize_plan(x.shape, scale, zero_point, dtype, axis)(x)


def tflite_quantize_plan(shape, scale, zero_point=0, dtype="int8", axis=None):
    """:func:`tflite_quantize` prepared for a float32 input of ``shape``: every parameter validated here,
    once; returns the lean ``run(x) -> codes`` (``x`` a float32 array of that shape; NaN still refused)."""
    func = "tflite_quantize"
    key = dtype.name if isinstance(dtype, IntType) else str(dtype)
    if key not in TFLITE_TYPES:
        raise ValueError(f"{func}: unknown dtype {dtype!r}; expected one of {list(TFLITE_TYPES)}")
    t = TFLITE_TYPES[key]
    shape = tuple(int(d) for d in shape)
    s = _scales(scale, func, "scale")
    s, n_slices, inner = _per_channel(s, shape, axis, func, "scale")
    zp = as_int_array(zero_point, func, "zero_point", t.min, t.max).reshape(-1)
    if zp.size not in (1, n_slices):
        raise ValueError(f"{func}: zero_point has {zp.size} values but scale has {n_slices}")
    zp = np.ascontiguousarray(np.broadcast_to(zp, (n_slices,)))
    size, out_dtype, lo, hi = math.prod(shape), t.dtype, t.min, t.max

    def run(x):
        out = np.empty(shape, out_dtype)
        _refuse_nan(_launch(_tflite_quantize_kernel, size, np.ravel(x), n_slices, inner, s, zp, lo, hi,
                            out.reshape(-1)), func)
        return out

    return run


@njit(cache=True, error_model="numpy")
def _litert_optimized_quantize_loop(x, inv, scale, zp, lo, hi, out):
    """:func:`litert_optimized_quantize` of the flat ``x`` into ``out``; returns the number of NaN inputs."""
    block = x.size // 8 * 8
    nan = 0
    for i in range(block):  # f32(x * inv), ties to even
        v = x[i]
        nan += v != v
        r = np.rint(v * inv)
        r = r if (r < _F2P31) & (r >= -_F2P31) else -_F2P31
        out[i] = min(max(wrap_scalar(np.int64(r) + zp, 32), lo), hi)
    for i in range(block, x.size):  # TfLiteRound(x / double(scale)), ties away from zero
        v = x[i]
        nan += v != v
        q = round_half_away_from_zero(np.float64(v) / scale)
        q = q if (q < 2.0**31) & (q >= -(2.0**31)) else -(2.0**31)
        out[i] = min(max(wrap_scalar(np.int64(q) + zp, 32), lo), hi)
    return nan


def litert_optimized_quantize(x, scale, zero_point=0, dtype="int16"):
    """LiteRT's optimized float32 -> int8 / uint8 / int16 ``AffineQuantize`` (``optimized_ops.h``, its NEON code
    through NEON_2_SSE on x86, one overload per type with the same steps; the XNNPACK engine's int16 fallback and
    every QUANTIZE of ``litert-optimized``).

    In blocks of 8 values (C order): ``v = f32(x * f32(1 / double(scale)))`` rounded to nearest, ties to
    even (``vcvtnq_s32_f32``); the last ``n % 8`` values: ``TfLiteRound(x / double(scale))``, ties away
    from zero (the scalar tail, as :func:`tflite_quantize` but dividing in double). A value beyond int32
    becomes INT32_MIN (x86 ``cvtps2dq`` / ``cvttsd2si``), ``+ zero_point`` wraps at 32 bits, then the
    clamp to ``dtype`` (the only saturation). NaN refused. Measured: 21 of 1,024 int16 codes differ from the
    reference kernel's (``tests/golden/ops/int16_edges.npz``); int8: openmv_face_landmarks_192's input
    quantization (``tests/golden/real_models``).
    """
    x = _float32_array(x, "litert_optimized_quantize")
    return litert_optimized_quantize_plan(x.shape, scale, zero_point, dtype)(x)


def litert_optimized_quantize_plan(shape, scale, zero_point=0, dtype="int16"):
    """:func:`litert_optimized_quantize` prepared for a float32 input of ``shape``: every parameter validated here,
    once; returns the lean ``run(x) -> codes`` (NaN still refused)."""
    func = "litert_optimized_quantize"
    if dtype not in ("int8", "uint8", "int16"):
        raise ValueError(f"{func}: dtype must be 'int8', 'uint8' or 'int16', got {dtype!r}")
    info = np.iinfo(np.dtype(dtype))
    s = _scales(scale, func, "scale")
    if s.size != 1:
        raise ValueError(f"{func}: scale must be one value (per tensor), got {s.size}")
    zp = int(as_int_array(zero_point, func, "zero_point", int(info.min), int(info.max)))
    scale64 = np.float64(s.reshape(-1)[0])
    with np.errstate(over="ignore"):
        inv = np.float32(1.0 / scale64)
    shape, lo, hi = tuple(int(d) for d in shape), int(info.min), int(info.max)

    def run(x):
        out = np.empty(shape, info.dtype)
        _refuse_nan(_litert_optimized_quantize_loop(np.ravel(x), inv, scale64, zp, lo, hi, out.reshape(-1)), func)
        return out

    return run


@names_its_errors
def tflite_dequantize(q, scale, zero_point=0):
    """TFLite reference ``DEQUANTIZE``: ``float(double(scale) * (q - zp))``, one rounding to float32.

    ``scale`` is a float32 (widened exactly to double); ``q - zp`` is an int32 difference. Returns
    float32.
    """
    q = _int_codes(q, "tflite_dequantize")
    return tflite_dequantize_plan(q.shape, scale, zero_point)(q)


def tflite_dequantize_plan(shape, scale, zero_point=0):
    """:func:`tflite_dequantize` prepared for integer codes of ``shape`` (scale and zero point validated
    once); returns the lean ``run(q) -> float32``."""
    func = "tflite_dequantize"
    shape = tuple(int(d) for d in shape)
    s = _scales(scale, func, "scale")
    zp = as_int_array(zero_point, func, "zero_point", _INT32_MIN, (1 << 31) - 1)
    if s.size != 1 or zp.size != 1:
        raise ValueError(f"{func}: scale and zero_point must be scalars")
    size = math.prod(shape)
    scale64, zp64 = np.full(1, s.reshape(-1)[0], np.float64), np.full(1, int(zp.reshape(-1)[0]), np.int64)
    tflite_kind = int(_Dequant.TFLITE)  # an int, as _dequantize passes it: numba types an IntEnum slowly (~50 us)

    def run(q):
        out = np.empty(shape, np.float32)
        _launch(_dequantize_kernel, size, np.ravel(q), 1, size, tflite_kind, scale64, zp64, out.reshape(-1))
        return out

    return run


def litert_optimized_dequantize_plan(shape, scale, zero_point=0, dtype="int8"):
    """LiteRT's optimized int8 / uint8 ``Dequantize`` (``optimized_ops``, NEON through NEON_2_SSE on x86; the two
    overloads differ only in the load) prepared for codes of ``shape`` and ``dtype``: in blocks of 8 values (C order)
    ``f32(f32(q) * s) - f32(zp * s)``, the offset scaled once; the last ``n % 8`` values as the reference,
    ``f32(q - zp) * s``. Returns the lean ``run(q) -> float32``. Measured: 353 of 1,024 values differ from the
    reference kernel's (``tests/golden/litert_optimized.npz``, dequantize_i8; uint8: ``tests/golden/uint8.npz``).
    No saturation (float)."""
    func = "litert_optimized_dequantize"
    shape = tuple(int(d) for d in shape)
    s = _scales(scale, func, "scale")
    if s.size != 1:
        raise ValueError(f"{func}: scale must be one value (per tensor), got {s.size}")
    s32 = np.float32(s.reshape(-1)[0])
    if np.dtype(dtype) not in (np.dtype(np.int8), np.dtype(np.uint8)):
        raise ValueError(f"{func}: dtype must be int8 or uint8, got {dtype!r}")
    info = np.iinfo(np.dtype(dtype))
    zp = int(as_int_array(zero_point, func, "zero_point", int(info.min), int(info.max)))
    offset = np.float32(np.float32(zp) * s32)
    block = math.prod(shape) // 8 * 8

    def run(q):
        flat = q.reshape(-1)
        out = np.empty(flat.size, np.float32)
        out[:block] = flat[:block].astype(np.float32) * s32 - offset
        out[block:] = (flat[block:].astype(np.int32) - zp).astype(np.float32) * s32
        return out.reshape(shape)

    return run


# --------------------------------------------------------------------------------------------
# public API: power-of-two (Q-format) quantization
# --------------------------------------------------------------------------------------------
def _check_pof2_bits(bits, func: str) -> int:
    if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"{func}: bits must be an int")
    if not 2 <= bits <= 32:
        raise ValueError(f"{func}: bits must be in [2, 32], got {bits}")
    return int(bits)


def _pof2_fits(value: float, limit: int) -> int:
    """Largest f with ``|value| * 2^f <= limit`` for ``value != 0`` (exact: frexp is exact)."""
    m, e = math.frexp(abs(value))  # |value| = m * 2^e, m in [0.5, 1)
    f = -e
    while m * 2.0 ** (e + f + 1) <= limit:  # at most a few steps: limit < 2^32
        f += 1
    while m * 2.0 ** (e + f) > limit:
        f -= 1
    return f


@names_its_errors
def pof2_frac_bits(max_abs, bits=8, narrow_range=True) -> int:
    """The fractional bit count f of a ``bits``-bit Q-format that holds a range without saturating.

    f is the largest integer with ``max_abs * 2^f <= 2^(bits-1) - 1`` (the largest positive code:
    127 for 8 bits, 31 for 6): no value of the range saturates under any rounding. The scale is
    ``2^-f``; f may be negative (ranges beyond ``2^(bits-1)``) or exceed ``bits - 1`` (small ranges).

    ``max_abs``: a scalar is the range ``[-max_abs, max_abs]`` (a negative one is refused: it is not a
    range's bound); an array is
    data, and its extremes are used: ``max(x)`` must fit the largest code and ``min(x)`` the lowest,
    which is ``-(2^(bits-1) - 1)`` with ``narrow_range`` (default) and ``-2^(bits-1)`` without (so
    data in [-1, 0.5] gets f = 7 for 8 bits without narrow range, 6 with it).

    A zero range (or all-zero data) has no binding limit; it gets ``f = bits - 1`` (Q0.(bits-1),
    the format of a unit range), and zero is exact in every format.
    """
    func = "pof2_frac_bits"
    bits = _check_pof2_bits(bits, func)
    narrow = _flag(narrow_range, func, "narrow_range")
    arr = np.asarray(max_abs)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{func}: max_abs must be a real number or array, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{func}: max_abs is empty")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{func}: max_abs must be finite")
    qmax = (1 << (bits - 1)) - 1
    if arr.ndim == 0:
        if float(arr) < 0:
            raise ValueError(f"{func}: a scalar max_abs is the bound of the range [-max_abs, max_abs] and must be "
                             f">= 0, got {float(arr)}")
        hi, lo = float(arr), -float(arr)
    else:
        hi, lo = float(arr.max()), float(arr.min())
    limits = []
    if hi > 0:
        limits.append(_pof2_fits(hi, qmax))
    if lo < 0:
        limits.append(_pof2_fits(lo, qmax if narrow else qmax + 1))
    return min(limits) if limits else bits - 1


@names_its_errors
def quantize_pof2(x, frac_bits, bits=8, rounding="half_to_even", narrow_range=True, axis=None):
    """Power-of-two symmetric quantization: ``q = saturate(round(x * 2^frac_bits))``.

    The scale ``2^-frac_bits`` is exact, so ``x * 2^f`` is exact and the only rounding is the
    final one, by ``rounding`` (any :class:`~dspsim.fixedpoint.Rounding` name; default ties to
    even, ``half_up`` is the DSP's ``(v + 2^(s-1)) >> s``, ``floor`` plain truncation of the low
    bits). Zero maps to code 0 exactly (no zero point).

    Saturation: to ``[-(2^(bits-1) - 1), 2^(bits-1) - 1]`` with ``narrow_range`` (default,
    symmetric), to ``[-2^(bits-1), 2^(bits-1) - 1]`` without; +-inf saturate; NaN is refused.
    ``frac_bits``: an int, or a 1-D int array (one per index of ``axis``), each in [-1100, 1100].
    ``bits`` in [2, 32]. Returns int8 / int16 / int32 codes (the smallest that holds ``bits``).
    """
    func = "quantize_pof2"
    bits = _check_pof2_bits(bits, func)
    mode = rounding_mode(rounding, func)
    narrow = _flag(narrow_range, func, "narrow_range")
    x = np.asarray(x)
    if x.dtype.kind != "f":
        raise TypeError(f"{func}: x must be a floating-point array, got dtype {x.dtype}")
    x = np.ascontiguousarray(x, dtype=x.dtype if x.dtype in (np.float32, np.float64) else np.float64)
    f = as_int_array(frac_bits, func, "frac_bits", -1100, 1100)
    f, n_slices, inner = _per_channel(f, x.shape, axis, func, "frac_bits")
    qmax = (1 << (bits - 1)) - 1
    qmin = -qmax if narrow else -qmax - 1
    out = np.empty(x.shape, np.int8 if bits <= 8 else np.int16 if bits <= 16 else np.int32)
    n_nan = _launch(_pof2_quantize_kernel, x.size, x.reshape(-1), n_slices, inner, np.ascontiguousarray(f),
                    *_pof2_rounding(mode), qmin, qmax, out.reshape(-1))
    if n_nan:
        raise ValueError(f"{func}: x contains NaN")
    return out


@names_its_errors
def dequantize_pof2(q, frac_bits, axis=None):
    """``q * 2^-frac_bits`` as float32: exact while ``|q| < 2^24`` and the result is a normal
    float32, otherwise rounded once to nearest even. ``frac_bits`` as in :func:`quantize_pof2`."""
    func = "dequantize_pof2"
    q = np.asarray(q)
    if q.dtype.kind not in "iu":
        raise TypeError(f"{func}: q must be an integer array, got dtype {q.dtype}")
    q = _int_codes(q, func, -(1 << 63), (1 << 63) - 1)
    f = as_int_array(frac_bits, func, "frac_bits", -1100, 1100)
    f, n_slices, inner = _per_channel(f, q.shape, axis, func, "frac_bits")
    return _dequantize(_Dequant.POF2, q, np.ones(1), f, n_slices, inner)


# --------------------------------------------------------------------------------------------
# compilation
# --------------------------------------------------------------------------------------------
def warmup(parallel: bool = True) -> None:
    """Compile the kernels for every dtype the public functions use, on tiny inputs, so that timings
    exclude JIT. Every kernel is cached on disk, so later processes load them. ``parallel`` is
    ignored: the threaded and the serial calls run the same compiled kernel."""
    x = np.linspace(-2.0, 2.0, 8, dtype=np.float32).reshape(2, 4)
    for T in TF_TYPES:
        q = quantize(x, -1.0, 1.0, T).output
        dequantize(q, -1.0, 1.0)
    for dt in ("quint8", "qint8", "qint32"):
        q = quantize_per_tensor(x, 0.1, 0, dt)
        quantize_per_channel(x, [0.1, 0.2], [0, 0], 0, dt)
        dequantize_per_tensor(q, 0.1, 0)
    for dt in ONNX_TYPES:
        dequantize_linear(quantize_linear(x, 0.1, 0, dtype=dt), 0.1, 0)
    for dt in TFLITE_TYPES:
        tflite_quantize(x, 0.1, 0, dtype=dt)
    for bits in (8, 16, 32):
        for xx in (x, x.astype(np.float64)):
            dequantize_pof2(quantize_pof2(xx, 2, bits=bits), 2)
