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
    return BatchMatmulPlan(adj_x, adj_y, zx, zy, zo, m, sh, dt, batch + (a[-2], b[-1]))


class BatchMatmulPlan:
    """:func:`batch_matmul_plan`'s lean run, ``plan(x, y)``, and its opt-in :meth:`stages`."""

    def __init__(self, adj_x, adj_y, zx, zy, zo, multiplier, shift, dtype, out_shape):
        self._adj, self._z, self._zo = (adj_x, adj_y), (zx, zy), zo
        self._m, self._sh = multiplier, shift
        self._dtype = np.dtype(dtype)
        self.out_shape = out_shape

    def _operands(self, x, y):
        """The operands after the adjoints, minus their zero points, in int64."""
        xa = np.swapaxes(x, -1, -2) if self._adj[0] else x
        ya = np.swapaxes(y, -1, -2) if self._adj[1] else y
        return xa.astype(np.int64) - self._z[0], ya.astype(np.int64) - self._z[1]

    def _requantized(self, acc, zo, lo, hi):
        """``clamp(MBQM(acc) + zo, lo, hi)`` in int64: int8 the int32 wrap of TFLite's sum and MBQM ("double"),
        int16 the int64 MBQM."""
        out = np.empty(acc.size, np.int64)
        if self._dtype == np.int16:
            _requantize_int64(acc.reshape(-1), self._m, self._sh, zo, lo, hi, out)
        else:
            _requantize_codes(acc.reshape(-1), 0, zo, self._m, self._sh, 0, lo, hi, out)
        return out.reshape(self.out_shape)

    def __call__(self, x, y):
        acc = np.matmul(*self._operands(x, y))  # exact: K * 2^30 < 2^63
        info = np.iinfo(self._dtype)
        return self._requantized(acc, self._zo, int(info.min), int(info.max)).astype(self._dtype)

    def stages(self, x, y, tap=None):
        """The :class:`~dspsim.kernels._common.MacStages` of ``plan(x, y)``: the sum in TFLite's accumulator
        (int8: int32, wrapping; int16: int64), no bias (``acc_bias`` is ``acc``), and :meth:`__call__`'s
        requantization with no zero point and no clamp; ``tap`` (a flat output index) adds that output's taps in
        the reference loop's order, ``k = 0 .. K-1``."""
        from .._common import MacStages  # the driver's stage type (it imports this package's gemm)

        xs, ys = self._operands(x, y)
        acc = self._accumulator(np.matmul(xs, ys))
        taps = None
        if tap is not None:
            *bat, i, j = np.unravel_index(tap, self.out_shape)
            batch = self.out_shape[:-2]
            row = np.broadcast_to(xs, batch + xs.shape[-2:])[tuple(bat)][i]
            col = np.broadcast_to(ys, batch + ys.shape[-2:])[tuple(bat)][:, j]
            k = row.size
            taps = {"x": row + self._z[0], "w": col + self._z[1], "x_zero_point": np.full(k, self._z[0], np.int64),
                    "w_zero_point": np.full(k, self._z[1], np.int64), "kind": np.zeros(k, np.int64),
                    "partial_sum": self._accumulator(np.cumsum(row * col))}
        info = np.iinfo(np.int64)
        return MacStages(acc, acc, self._requantized(acc, 0, int(info.min), int(info.max)), taps)

    def _accumulator(self, acc):
        """Exact int64 sums as TFLite's accumulator holds them (int8: int32, wrapping)."""
        return acc if self._dtype == np.int16 else (acc + (1 << 31)) % (1 << 32) - (1 << 31)
