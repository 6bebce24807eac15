"""Quantized MEAN: TFLite's reference ``QuantizedMeanOrSum`` (compute_sum=false), LiteRT's optimized int8 spatial
mean, and XNNPACK's ``mean_nd``."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..._errors import names_its_errors
from ...fixedpoint import quantize_multiplier, wrap_scalar
from ...requant import Requant
from .._checks import check_spec, check_tensor, float32_scale, q31_multiplier, resolve_axes, scalar_int, zero_point
from ..quantize.requantize import ROUNDINGS, _requantize_codes

_TYPES16 = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))  # the 16x8 MEAN: the same kernel
_BYTES = (np.dtype(np.int8), np.dtype(np.uint8))  # XNNPACK's qs8 / qu8 mean, LiteRT's optimized int8 / uint8 Mean


@njit(cache=True)
def _add_rows(x, acc):
    """``acc[c] +=`` the sum over ``j`` of ``x[j, c]``, wrapped to int32 (mod 2^32, as a C int32 accumulator: the
    order of the terms does not matter). Rows of ``inner > 1`` values go four at a time (a quarter of the loads
    and stores of ``acc``); one value per row sums exactly in int64 (no wrap before 2^55 terms) and wraps once."""
    r, inner = x.shape
    if inner == 1:
        s = np.int64(0)
        for j in range(r):
            s += x[j, 0]
        acc[0] = wrap_scalar(np.int64(acc[0]) + s, 32)
        return
    r4 = r - r % 4
    for j in range(0, r4, 4):
        for c in range(inner):
            four = np.int64(x[j, c]) + x[j + 1, c] + x[j + 2, c] + x[j + 3, c]
            acc[c] = wrap_scalar(np.int64(acc[c]) + four, 32)
    for j in range(r4, r):
        for c in range(inner):
            acc[c] = wrap_scalar(np.int64(acc[c]) + x[j, c], 32)


@njit(cache=True)
def _int32_sums(x):
    """The int32 (wrapping) sums over axis 1 of ``x`` ``(outer, r, inner)``: ``(outer, inner)``."""
    acc = np.zeros((x.shape[0], x.shape[2]), np.int32)
    for o in range(x.shape[0]):
        _add_rows(x[o], acc[o])
    return acc


def _reduction_view(shape, axes, keep_dims):
    """Codes of ``shape`` reduced over ``axes`` (resolved, any order) as ``(outer, r, inner)``, the ``r`` terms of
    each sum on axis 1: returns ``view(x)`` and the reduced shape (the axes kept as 1 with ``keep_dims``, else
    dropped). Axes that are one run of neighbours give a view of ``x``; others are transposed to the end (a
    copy)."""
    shape = tuple(shape)
    run = sorted(axes)
    out_shape = tuple(1 if a in axes else d for a, d in enumerate(shape)) if keep_dims else \
        tuple(d for a, d in enumerate(shape) if a not in axes)
    if run and run == list(range(run[0], run[-1] + 1)):
        geometry = (math.prod(shape[:run[0]]), math.prod(shape[run[0]:run[-1] + 1]), math.prod(shape[run[-1] + 1:]))
        return (lambda x: x.reshape(geometry)), out_shape
    kept = [a for a in range(len(shape)) if a not in axes]
    perm, geometry = kept + run, (math.prod(shape[a] for a in kept), math.prod(shape[a] for a in run), 1)
    return (lambda x: x.transpose(perm).reshape(geometry)), out_shape


@njit(cache=True)
def _xnnpack_mean_codes(x, inv, zp, lo, hi, out):
    """``out[o, c] = rint(clamp(f32(f32(sum) * inv) + zp, lo, hi))``, ``sum`` the int32 (wrapping) sum over
    axis 1 of ``x`` ``(outer, r, inner)``: float32 steps (``inv``, ``zp``, ``lo``, ``hi`` float32), no fused
    multiply-add, ties to even (the clamp to integers before the rounding gives what it gives after)."""
    acc = np.empty(x.shape[2], np.int32)
    for o in range(x.shape[0]):
        acc[:] = 0
        _add_rows(x[o], acc)
        for c in range(acc.size):
            y = np.float32(acc[c]) * inv + zp
            out[o, c] = np.rint(min(max(y, lo), hi))


@names_its_errors
def mean(x, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False):
    """TFLite reference quantized MEAN (``reference_ops::QuantizedMeanOrSum``, compute_sum=false).

    ``multiplier``/``shift`` are ``QuantizeMultiplier(double(s_in) / double(s_out))``; the kernel
    folds the element count ``n`` (product of the reduced dimensions) into them exactly as TFLite::

        k     = min(floor(log2(n)), 32, 31 + shift)
        M'    = (multiplier << k) // n                   # int64, truncating (both positive)
        sum   = int32(sum of the codes - zp_in * n)      # int32 accumulator, wraps
        out   = clamp(MBQM(sum, M', shift - k) + zp_out) # to the dtype; no activation

    so the division by ``n`` is rounded twice more (the truncation of ``M'`` and MBQM's two
    roundings: SRDHM ties toward +inf, the right shift ties away from zero). Duplicate and negative
    axes are resolved as TFLite's ResolveAxis does. int16 (16x8) runs the same kernel (LiteRT
    ``reduce.cc``, TFLM ``reduce_common.cc``).
    """
    x = check_tensor(x, "mean", "x", allowed=_TYPES16)
    return mean_plan(x.shape, x.dtype, axis, input_zero_point=input_zero_point, output_zero_point=output_zero_point,
                     multiplier=multiplier, shift=shift, keep_dims=keep_dims)(x)


def mean_plan(shape, dtype, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False):
    """:func:`mean` prepared for codes of ``shape`` and ``dtype``: the axes resolved and ``n`` folded into
    the multiplier once; returns the lean ``run(x) -> codes``."""
    func = "mean"
    shape, dt = check_spec(func, "x", shape, dtype, _TYPES16)
    axes = resolve_axes(axis, len(shape), func)
    zi = zero_point(input_zero_point, dt, func, "input_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    m = q31_multiplier(multiplier, func, "multiplier")
    s = scalar_int(shift, func, "shift", -31, 30)
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if axes else 1
    k = min(n.bit_length() - 1, 32, 31 + s)  # >= 0: n >= 1 and s >= -31
    rq = Requant.fixed_point((m << k) // n, s - k)  # validates M' < 2^31 and the shift
    info = np.iinfo(dt)
    args = (0, zo, int(rq.multiplier[0]), int(rq.shift[0]), 0, int(info.min), int(info.max))  # "double" MBQM
    offset = zi * n
    view, out_shape = _reduction_view(shape, axes, keep_dims)

    def run(x):
        # the int32 sum wraps as TFLite's accumulator (mod 2^32, as the core's wrap of the int64 difference)
        total = _int32_sums(view(x)).reshape(-1).astype(np.int64) - offset
        out = np.empty(total.size, np.int64)
        _requantize_codes(total, *args, out)
        return out.astype(dt).reshape(out_shape)

    return run


@names_its_errors
def xnnpack_mean(x, axis, *, input_scale, input_zero_point, output_scale, output_zero_point, keep_dims=False):
    """XNNPACK ``mean_nd`` on int8 or uint8: an int32 sum of the codes, then its reference int32 -> qs8 / qu8
    convert (clamped to the codes' type)::

        inv = f32(f32(s_in / s_out) * f32(1 / n))
        zp' = f32(zo - f32(float(n * zi) * inv))
        out = clamp(nearbyint(f32(f32(float(sum) * inv) + zp')))     # ties to even

    ``float(sum)`` rounds above 2^24. No fused multiply-add (baseline x86-64 build).
    """
    x = check_tensor(x, "xnnpack_mean", "x", allowed=_BYTES)
    return xnnpack_mean_plan(x.shape, x.dtype, axis, input_scale=input_scale, input_zero_point=input_zero_point,
                             output_scale=output_scale, output_zero_point=output_zero_point,
                             keep_dims=keep_dims)(x)


def xnnpack_mean_plan(shape, dtype, axis, *, input_scale, input_zero_point, output_scale, output_zero_point,
                      keep_dims=False):
    """:func:`xnnpack_mean` prepared for int8 or uint8 codes of ``shape`` (validated and derived once); returns the
    lean ``run(x)`` of the codes' type."""
    func = "xnnpack_mean"
    shape, dt = check_spec(func, "x", shape, dtype, _BYTES)
    info = np.iinfo(dt)
    axes = resolve_axes(axis, len(shape), func)
    zi = zero_point(input_zero_point, dt, func, "input_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if axes else 1
    inv = np.float32(np.float32(float32_scale(input_scale, func, "input_scale")
                                / float32_scale(output_scale, func, "output_scale")) * np.float32(np.float32(1) / n))
    zp = np.float32(np.float32(zo) - np.float32(np.float32(np.int64(n * zi).astype(np.int32)) * inv))
    view, out_shape = _reduction_view(shape, axes, keep_dims)
    lo, hi = np.float32(info.min), np.float32(info.max)

    def run(x):
        x3 = view(x)
        out = np.empty((x3.shape[0], x3.shape[2]), dt)
        _xnnpack_mean_codes(x3, inv, zp, lo, hi, out)
        return out.reshape(out_shape)

    return run


@names_its_errors
def litert_optimized_mean_plan(shape, dtype, *, input_scale, input_zero_point, output_scale, output_zero_point):
    """LiteRT's optimized int8 / uint8 MEAN over H and W of a 4-D NHWC tensor, keep_dims
    (``optimized_integer_ops::Mean``; uint8: ``optimized_ops::Mean``, the same steps; the path ``reduce.cc`` takes
    for exactly that case), prepared for codes of ``shape`` and ``dtype``; returns the lean ``run(x) -> (N, 1, 1,
    C)`` of that type (the clamp below to its range)::

        M, sh = QuantizeMultiplier(f32(s_in / f32(n * s_out)))            # n = H * W, all float32
        bias  = zo - round(f32(f32(zi * s_in) / s_out))                   # ties away from zero
        out   = clamp(MBQM(sum of the raw codes, M, sh) + bias, -128, 127)

    The zero point is folded into ``bias`` once, rounded (LiteRT 2.3; the optimized header of older releases
    truncates it), where the reference subtracts ``zi * n`` from the sum. MBQM rounds twice: SRDHM ties toward +inf, then the right shift ties toward +inf on the channels done
    in blocks of 16 (the NEON ``MultiplyByQuantizedMultiplier4Rows``, through NEON_2_SSE on x86) and away from
    zero on the last ``C % 16`` (the scalar loop). The only saturation is the final clamp. Measured:
    mobilenet_v2's global pool, 32 of 1,280 values differ from ties away from zero everywhere; a truncated
    bias would move 651 of 1,280 in coral_tf2_mobilenet_v2's.
    """
    func = "litert_optimized_mean"
    shape, dt = check_spec(func, "x", shape, dtype, _BYTES)
    info = np.iinfo(dt)
    if len(shape) != 4:
        raise ValueError(f"{func}: x must be 4-D NHWC (the kernel reduces H and W), got shape {shape}")
    zi = zero_point(input_zero_point, dt, func, "input_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    s_in = np.float32(float32_scale(input_scale, func, "input_scale"))
    s_out = np.float32(float32_scale(output_scale, func, "output_scale"))
    n = np.float32(shape[1] * shape[2])
    multiplier, shift = quantize_multiplier(float(np.float32(s_in / np.float32(n * s_out))))
    q = float(np.float32(np.float32(np.float32(zi) * s_in) / s_out))
    bias = zo - int(np.sign(q) * np.floor(abs(q) + 0.5))  # TfLiteRound: ties away from zero
    c = shape[3]
    vector = c // 16 * 16
    neon, scalar = ((0, bias, int(multiplier), int(shift), ROUNDINGS.index(r), int(info.min), int(info.max))
                    for r in ("neon", "double"))

    view, out_shape = _reduction_view(shape, (1, 2), True)

    def run(x):
        rows = _int32_sums(view(x)).astype(np.int64)
        out = np.empty(rows.shape, np.int64)
        for b in range(rows.shape[0]):
            _requantize_codes(rows[b, :vector], *neon, out[b, :vector])
            _requantize_codes(rows[b, vector:], *scalar, out[b, vector:])
        return out.astype(dt).reshape(out_shape)

    return run
