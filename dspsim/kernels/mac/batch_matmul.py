"""Quantized BATCH_MATMUL (int8 and int16, per-tensor): TFLite's ``reference_ops::BatchMatMul``.

LiteRT ``kernels/batch_matmul.cc`` (``EvalInt8Int8``) and tflite-micro ``micro/kernels/batch_matmul.cc``
both run the same reference kernel (``internal/reference/batch_matmul.h``, the FullyConnected
parameter set) with ``QuantizeMultiplier(double(s_x) * double(s_y) / double(s_out))``: an int32 dot
product of ``(x - zx) * (y - zy)``, ``MultiplyByQuantizedMultiplier``, ``+ zo``, clamped to int8
(no fused activation). The products are summed exactly in int64 (``np.matmul``, whose batch
broadcast is TFLite's), then wrapped to int32 as TFLite's sum: the same integers as an int32
accumulator. int16 (``EvalInt16``: ``BatchMatMul<int16_t, int64_t>``, zero points 0 in both engines): an int64
sum and the int64 ``MultiplyByQuantizedMultiplier`` of the 16x8 kernels (the multiplier reduced to 15 bits, one
rounding, ties toward +inf), clamped to int16.
"""
from __future__ import annotations

import math
import numpy as np
from numba import njit

from ..._errors import check_flag, names_its_errors
from ...fixedpoint import _mbqm_int64
from ...requant import Requant
from ..quantize.requantize import _requantize_codes
from .._checks import check_spec, check_tensor, zero_point

__all__ = ["batch_matmul", "batch_matmul_plan"]

_INT8 = (np.dtype(np.int8),)
_TYPES = (np.dtype(np.int8), np.dtype(np.int16))


@njit(cache=True)
def _requantize_int64(acc, multiplier, shift, zo, lo, hi, out):
    """The int16 kernel's output: ``clamp(MBQM_int64(acc, multiplier, shift) + zo, lo, hi)``."""
    for i in range(acc.shape[0]):
        out[i] = min(max(_mbqm_int64(acc[i], multiplier, shift) + zo, lo), hi)


def _operand_shapes(func, x_shape, y_shape, adj_x, adj_y):
    """The operands' shapes after the adjoints, and the broadcast batch shape (ranks 2 to 5, K matching)."""
    for name, shape in (("x", x_shape), ("y", y_shape)):
        if not 2 <= len(shape) <= 5:
            raise ValueError(f"{func}: {name} must have rank 2 to 5 (TFLite extends to 5 dimensions), got shape "
                             f"{shape}")
    a = x_shape[:-2] + (x_shape[-1], x_shape[-2]) if adj_x else x_shape
    b = y_shape[:-2] + (y_shape[-1], y_shape[-2]) if adj_y else y_shape
    if a[-1] != b[-2]:
        raise ValueError(f"{func}: the contracted dimensions differ: x gives K = {a[-1]}, y gives "
                         f"K = {b[-2]} (adj_x={adj_x}, adj_y={adj_y})")
    try:
        batch = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        raise ValueError(f"{func}: batch dimensions {x_shape[:-2]} and {y_shape[:-2]} do not broadcast") from None
    return a, b, tuple(batch)


@names_its_errors
def batch_matmul(x, y, *, adj_x=False, adj_y=False, x_zero_point, y_zero_point, output_zero_point, multiplier,
                 shift):
    """TFLite int8 / int16 BATCH_MATMUL: ``out[..., i, j] = clamp(MBQM(sum_k (x'[..., i, k] - zx) *
    (y'[..., k, j] - zy), multiplier, shift) + zo)`` with ``x' = x^T`` if ``adj_x`` and ``y' = y^T`` if
    ``adj_y`` (last two axes), batch dimensions broadcast (numpy's rule, as TFLite's
    ``broadcast_dim``; ranks 2 to 5).

    int8: the sum is int32 and wraps (it cannot for K < 2^15 with int8 codes); MBQM rounds twice (SRDHM
    ties toward +inf, the right shift ties away from zero; ``shift > 0`` shifts left first, wrapping).
    int16: zero points 0, the sum int64 (below 2^47: K <= 2^17), the int64 MBQM rounds once (ties toward +inf;
    ``shift`` <= 7). The clamp to the type's range is the only saturation.

    Parameters
    ----------
    x : int8 or int16 array (..., M, K) (``adj_x``: (..., K, M))
    y : the same type (..., K, N) (``adj_y``: (..., N, K))
    x_zero_point, y_zero_point, output_zero_point : int
    multiplier, shift : int
        ``QuantizeMultiplier(double(s_x) * double(s_y) / double(s_out))`` (TFLite convention).

    Returns an array of x's type (broadcast batch..., M, N).
    """
    x = check_tensor(x, "batch_matmul", "x", allowed=_TYPES)
    y = check_tensor(y, "batch_matmul", "y", allowed=(x.dtype,))
    return batch_matmul_plan(x.shape, y.shape, x.dtype, adj_x=adj_x, adj_y=adj_y, x_zero_point=x_zero_point,
                             y_zero_point=y_zero_point, output_zero_point=output_zero_point, multiplier=multiplier,
                             shift=shift)(x, y)


def batch_matmul_plan(x_shape, y_shape, dtype, *, adj_x=False, adj_y=False, x_zero_point, y_zero_point,
                      output_zero_point, multiplier, shift):
    """:func:`batch_matmul` prepared for int8 / int16 operands of ``x_shape`` and ``y_shape`` (validated once);
    returns the lean ``run(x, y)``: the exact int64 products summed by ``np.matmul`` (the batch dimensions
    broadcast by its rule, TFLite's), then for int8 the int32 wrap, MBQM, ``+ zo`` and the clamp in one numba pass
    (:func:`dspsim.kernels.quantize.requantize.tflite_requantize`'s core, "double"), for int16 the int64 MBQM."""
    func = "batch_matmul"
    x_shape, dt = check_spec(func, "x", x_shape, dtype, _TYPES)
    y_shape, _ = check_spec(func, "y", y_shape, dtype, _TYPES)
    adj_x, adj_y = check_flag(adj_x, func, "adj_x"), check_flag(adj_y, func, "adj_y")
    a, b, batch = _operand_shapes(func, x_shape, y_shape, adj_x, adj_y)
    zx = zero_point(x_zero_point, dt, func, "x_zero_point")
    zy = zero_point(y_zero_point, dt, func, "y_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    try:
        rq = Requant.fixed_point(multiplier, shift)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{func}: {str(e).replace('Requant.fixed_point: ', '')}") from None
    if rq.channels != 1:
        raise ValueError(f"{func}: multiplier and shift must be scalars")
    m, sh = int(rq.multiplier[0]), int(rq.shift[0])
    info = np.iinfo(dt)
    wide = dt == np.int16
    if wide:
        if (zx, zy, zo) != (0, 0, 0):
            raise ValueError(f"{func}: int16 operands need zero points 0 (TFLite's EvalInt16), got {zx}, {zy}, {zo}")
        if sh > 7:
            raise ValueError(f"{func}: the int16 kernel's int64 MultiplyByQuantizedMultiplier takes a shift <= 7, "
                             f"got {sh}")
        if a[-1] * (1 << 30) >= 1 << 47:
            raise ValueError(f"{func}: K = {a[-1]} int16 products can reach 2^47, beyond the int64 "
                             "MultiplyByQuantizedMultiplier's range (K <= 131071)")
    args = (0, zo, m, sh, 0, int(info.min), int(info.max))  # "double": MultiplyByQuantizedMultiplier
    out_shape = batch + (a[-2], b[-1])
    size = math.prod(out_shape)

    def run(x, y):
        xa = np.swapaxes(x, -1, -2) if adj_x else x
        ya = np.swapaxes(y, -1, -2) if adj_y else y
        acc = np.matmul(xa.astype(np.int64) - zx, ya.astype(np.int64) - zy)  # exact: K * 2^30 < 2^63
        out = np.empty(size, np.int64)
        if wide:
            _requantize_int64(acc.reshape(-1), m, sh, zo, int(info.min), int(info.max), out)
        else:
            _requantize_codes(acc.reshape(-1), *args, out)  # the int32 wrap of TFLite's sum happens here
        return out.astype(dt).reshape(out_shape)

    return run
