"""Quantized BATCH_MATMUL (int8, per-tensor): TFLite's ``reference_ops::BatchMatMul``.

LiteRT ``kernels/batch_matmul.cc`` (``EvalInt8Int8``) and tflite-micro ``micro/kernels/batch_matmul.cc``
both run the same reference kernel (``internal/reference/batch_matmul.h``, the FullyConnected
parameter set) with ``QuantizeMultiplier(double(s_x) * double(s_y) / double(s_out))``: an int32 dot
product of ``(x - zx) * (y - zy)``, ``MultiplyByQuantizedMultiplier``, ``+ zo``, clamped to int8
(no fused activation). The products are summed exactly in int64 (``np.matmul``, whose batch
broadcast is TFLite's), then wrapped to int32 as TFLite's sum: the same integers as an int32
accumulator.
"""
from __future__ import annotations

import math
import numpy as np

from ..._errors import check_flag, names_its_errors
from ...requant import Requant
from ..quantize.requantize import _requantize_codes
from .._checks import check_spec, check_tensor, zero_point

__all__ = ["batch_matmul", "batch_matmul_plan"]

_INT8 = (np.dtype(np.int8),)


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
    """TFLite int8 BATCH_MATMUL: ``out[..., i, j] = clamp(MBQM(sum_k (x'[..., i, k] - zx) *
    (y'[..., k, j] - zy), multiplier, shift) + zo)`` with ``x' = x^T`` if ``adj_x`` and ``y' = y^T`` if
    ``adj_y`` (last two axes), batch dimensions broadcast (numpy's rule, as TFLite's
    ``broadcast_dim``; ranks 2 to 5).

    The sum is int32 and wraps (it cannot for K < 2^15 with int8 codes); MBQM rounds twice (SRDHM
    ties toward +inf, the right shift ties away from zero; ``shift > 0`` shifts left first, wrapping).
    The clamp to [-128, 127] is the only saturation.

    Parameters
    ----------
    x : int8 array (..., M, K) (``adj_x``: (..., K, M))
    y : int8 array (..., K, N) (``adj_y``: (..., N, K))
    x_zero_point, y_zero_point, output_zero_point : int
    multiplier, shift : int
        ``QuantizeMultiplier(double(s_x) * double(s_y) / double(s_out))`` (TFLite convention).

    Returns an int8 array (broadcast batch..., M, N).
    """
    x = check_tensor(x, "batch_matmul", "x", allowed=_INT8)
    y = check_tensor(y, "batch_matmul", "y", allowed=_INT8)
    return batch_matmul_plan(x.shape, y.shape, x.dtype, adj_x=adj_x, adj_y=adj_y, x_zero_point=x_zero_point,
                             y_zero_point=y_zero_point, output_zero_point=output_zero_point, multiplier=multiplier,
                             shift=shift)(x, y)


def batch_matmul_plan(x_shape, y_shape, dtype, *, adj_x=False, adj_y=False, x_zero_point, y_zero_point,
                      output_zero_point, multiplier, shift):
    """:func:`batch_matmul` prepared for int8 operands of ``x_shape`` and ``y_shape`` (validated once);
    returns the lean ``run(x, y) -> int8``: the exact int64 products summed by ``np.matmul`` (the
    batch dimensions broadcast by its rule, TFLite's), then the int32 wrap, MBQM, ``+ zo`` and the
    clamp in one numba pass (:func:`dspsim.kernels.quantize.requantize.tflite_requantize`'s core, "double")."""
    func = "batch_matmul"
    x_shape, _ = check_spec(func, "x", x_shape, dtype, _INT8)
    y_shape, _ = check_spec(func, "y", y_shape, dtype, _INT8)
    adj_x, adj_y = check_flag(adj_x, func, "adj_x"), check_flag(adj_y, func, "adj_y")
    a, b, batch = _operand_shapes(func, x_shape, y_shape, adj_x, adj_y)
    zx = zero_point(x_zero_point, np.int8, func, "x_zero_point")
    zy = zero_point(y_zero_point, np.int8, func, "y_zero_point")
    zo = zero_point(output_zero_point, np.int8, func, "output_zero_point")
    try:
        rq = Requant.fixed_point(multiplier, shift)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{func}: {str(e).replace('Requant.fixed_point: ', '')}") from None
    if rq.channels != 1:
        raise ValueError(f"{func}: multiplier and shift must be scalars")
    args = (0, zo, rq.multiplier[0], rq.shift[0], 0, -128, 127)  # "double": MultiplyByQuantizedMultiplier
    out_shape = batch + (a[-2], b[-1])
    size = math.prod(out_shape)

    def run(x, y):
        xa = np.swapaxes(x, -1, -2) if adj_x else x
        ya = np.swapaxes(y, -1, -2) if adj_y else y
        acc = np.matmul(xa.astype(np.int64) - zx, ya.astype(np.int64) - zy)  # exact: K * 255^2 < 2^63
        out = np.empty(size, np.int64)
        _requantize_codes(acc.reshape(-1), *args, out)  # the int32 wrap of TFLite's sum happens here
        return out.astype(np.int8).reshape(out_shape)

    return run
