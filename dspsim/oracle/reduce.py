"""The oracle of the reduce family: MEAN, SUM, REDUCE_MAX, ARG_MAX.

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

from fractions import Fraction

from .data_movement import _from_lists, _multi_indices
from .fixedpoint import (
    _f32,
    _np,
    _range,
    clamp,
    f32,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_fraction,
    saturating_rounding_doubling_high_mul,
    wrap,
)


def tflite_mean(values, zi: int, zo: int, multiplier: int, shift: int, qmin: int, qmax: int) -> int:
    """reference_ops::QuantizedMeanOrSum (mean) of the codes ``values`` of one output element."""
    n = len(values)
    k = min(n.bit_length() - 1, 32, 31 + shift)
    m_n = (multiplier * 2**k) // n  # both positive: C++ truncation = floor
    acc = wrap(sum(values) - zi * n, 32)
    return clamp(multiply_by_quantized_multiplier(acc, m_n, shift - k) + zo, qmin, qmax)


def xnnpack_mean(values, zi, zo, s_in, s_out, lo=-128, hi=127) -> int:
    """mean_nd on qs8 (qu8: [lo, hi] = [0, 255]): int32 sum, then nearbyint(f32(f32(float(sum) * inv) + zp')), see
    the kernel."""
    n = len(values)
    inv = _f32(_f32(_f32(s_in) / _f32(s_out)) * f32(Fraction(1, n)))
    zp = f32(Fraction(zo) - f32(f32(Fraction(n * zi)) * inv))
    acc = wrap(sum(values), 32)
    return clamp(round_fraction(f32(f32(f32(Fraction(acc)) * inv) + zp), "half_to_even"), lo, hi)


def _reduce(x, axis, keep_dims, f, dtype):
    """``f(list of codes)`` over the axes ``axis`` of ``x`` (negative and repeated axes resolved)."""
    np = _np()
    axes = sorted({int(a) % x.ndim for a in np.atleast_1d(axis).tolist()})
    rest = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, rest + axes).reshape([x.shape[d] for d in rest] + [-1])
    out = np.array([f(v) for v in moved.reshape(-1, moved.shape[-1]).tolist()], dtype=dtype)
    shape = [1 if d in axes else x.shape[d] for d in range(x.ndim)] if keep_dims else [x.shape[d] for d in rest]
    return out.reshape(shape)


def mean_oracle(x, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False):
    lo, hi = _range(x.dtype, None, None)
    return _reduce(x, axis, keep_dims,
                   lambda v: tflite_mean(v, input_zero_point, output_zero_point, multiplier, shift, lo, hi), x.dtype)


def xnnpack_mean_oracle(x, axis, *, input_scale, input_zero_point, output_scale, output_zero_point, keep_dims=False):
    lo, hi = _range(x.dtype, None, None)
    return _reduce(x, axis, keep_dims,
                   lambda v: xnnpack_mean(v, input_zero_point, output_zero_point, input_scale, output_scale, lo, hi),
                   x.dtype)


def litert_optimized_mean_oracle(x, *, input_scale, input_zero_point, output_scale, output_zero_point):
    """LiteRT's optimized int8 spatial MEAN (NHWC, H and W reduced, keep_dims): per (batch, channel) the raw
    codes' sum through ``QuantizeMultiplier(f32(s_in / f32(n * s_out)))``, the final shift rounding ties toward
    +inf on channels ``< C // 16 * 16`` and away from zero after, plus ``zo - round(f32(f32(zi * s_in) / s_out))``
    (ties away from zero), clamped to the codes' type (int8 or uint8)."""
    np = _np()
    n_b, h, w, c = x.shape
    lo, hi = _range(x.dtype, None, None)
    s_in, s_out = _f32(input_scale), _f32(output_scale)
    m, shift = quantize_multiplier(float(f32(s_in / f32(h * w * s_out))))
    q = f32(f32(input_zero_point * s_in) / s_out)
    bias = output_zero_point - round_fraction(q, "half_away_from_zero")
    left, right = max(shift, 0), max(-shift, 0)
    out = np.empty((n_b, 1, 1, c), x.dtype)
    for b in range(n_b):
        for ch in range(c):
            acc = wrap(sum(x[b, :, :, ch].reshape(-1).tolist()), 32)
            high = saturating_rounding_doubling_high_mul(wrap(acc * 2**left, 32), m)
            tie = "half_up" if ch < c // 16 * 16 else "half_away_from_zero"
            out[b, 0, 0, ch] = clamp(round_fraction(Fraction(high, 2**right), tie) + bias, lo, hi)
    return out


def tflite_sum(values, zi: int, zo: int, multiplier: int, shift: int, qmin: int, qmax: int) -> int:
    """reference_ops::QuantizedMeanOrSum (sum) of the codes ``values`` of one output element."""
    acc = wrap(sum(values) - zi * len(values), 32)
    return clamp(multiply_by_quantized_multiplier(acc, multiplier, shift) + zo, qmin, qmax)


def reduce_sum_oracle(x, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False,
                      codes_as_uint8=False):
    np = _np()
    lo, hi = (0, 255) if codes_as_uint8 else _range(x.dtype, None, None)

    def f(v):  # LiteRT BUILTIN_REF's defect: the bytes summed, clamped to [0, 255], the byte stored as int8
        codes = [c % 256 for c in v] if codes_as_uint8 else v
        out = tflite_sum(codes, input_zero_point, output_zero_point, multiplier, shift, lo, hi)
        return wrap(out, 8) if codes_as_uint8 else out

    return _reduce(np.asarray(x), axis, keep_dims, f, x.dtype)


def xnnpack_sum(values, zi, zo, s_in, s_out) -> int:
    """sum_nd on qs8: int32 sum, then nearbyint(f32(f32(float(sum) * inv) + zp')), inv = f32(s_in / s_out)."""
    inv = _f32(_f32(s_in) / _f32(s_out))
    zp = f32(Fraction(zo) - f32(f32(Fraction(len(values) * zi)) * inv))
    acc = wrap(sum(values), 32)
    return clamp(round_fraction(f32(f32(f32(Fraction(acc)) * inv) + zp), "half_to_even"), -128, 127)


def litert_optimized_sum(values, zi, zo, s_in, s_out, lo=-128, hi=127) -> int:
    """LiteRT's optimized int8 / int16 SUM of one output element: the float QuantizedMeanOrSum, ties away from zero,
    clamped to [lo, hi] (the type's range)."""
    scale = _f32(_f32(s_in) / _f32(s_out))
    bias = f32(f32(-zi * scale) * len(values))
    acc = f32(Fraction(wrap(sum(values), 32)))
    return clamp(round_fraction(f32(f32(acc * scale) + bias), "half_away_from_zero") + zo, lo, hi)


def litert_optimized_sum_oracle(x, axis, *, input_scale, input_zero_point, output_scale, output_zero_point,
                                keep_dims=False):
    lo, hi = _range(x.dtype, None, None)
    return _reduce(x, axis, keep_dims, lambda v: litert_optimized_sum(v, input_zero_point, output_zero_point,
                                                                      input_scale, output_scale, lo, hi), x.dtype)


def xnnpack_sum_oracle(x, axis, *, input_scale, input_zero_point, output_scale, output_zero_point, keep_dims=False):
    return _reduce(x, axis, keep_dims,
                   lambda v: xnnpack_sum(v, input_zero_point, output_zero_point, input_scale, output_scale), x.dtype)


def reduce_max_oracle(x, axis, *, keep_dims=False):
    np = _np()
    axes = sorted({int(a) % x.ndim for a in np.asarray(axis).reshape(-1).tolist()})
    if not axes:
        return x.copy()
    out_shape = [1 if d in axes else n for d, n in enumerate(x.shape)]
    best = {}
    for idx in _multi_indices(x.shape):
        key = tuple(0 if d in axes else i for d, i in enumerate(idx))
        v = x[idx].item()
        best[key] = v if key not in best else max(best[key], v)
    out = _from_lists([best[k] for k in _multi_indices(out_shape)], out_shape, x.dtype)
    return out if keep_dims else out.reshape([n for d, n in enumerate(x.shape) if d not in axes])


def arg_max_oracle(x, axis, *, output_type="int32"):
    ax = int(axis) % x.ndim
    out_shape = list(x.shape[:ax]) + list(x.shape[ax + 1:])
    values = []
    for idx in _multi_indices(out_shape):
        column = [x[tuple(idx[:ax]) + (j,) + tuple(idx[ax:])].item() for j in range(x.shape[ax])]
        values.append(column.index(max(column)))  # list.index: the first occurrence
    return _from_lists(values, out_shape, output_type)
