"""Quantized BATCH_MATMUL (int8, per-tensor): TFLite's ``reference_ops::BatchMatMul``.

LiteRT ``kernels/batch_matmul.cc`` (``EvalInt8Int8``) and tflite-micro ``micro/kernels/batch_matmul.cc``
both run the same reference kernel (``internal/reference/batch_matmul.h``, the FullyConnected
parameter set) with ``QuantizeMultiplier(double(s_x) * double(s_y) / double(s_out))``: an int32 dot
product of ``(x - zx) * (y - zy)``, ``MultiplyByQuantizedMultiplier``, ``+ zo``, clamped to int8
(no fused activation). Each matrix product is :func:`dspsim.fully_connected` (the gemm core) on one
batch: ``x[b]`` (M, K) against ``y[b]`` transposed (N, K).
"""
from __future__ import annotations

import numpy as np

from ._common import check_tensor, zero_point
from .dense import fully_connected

__all__ = ["batch_matmul"]

_INT8 = (np.dtype(np.int8),)


def _operands(func, x, y, adj_x, adj_y):
    x = check_tensor(x, func, "x", allowed=_INT8)
    y = check_tensor(y, func, "y", allowed=_INT8)
    for name, a in (("x", x), ("y", y)):
        if not 2 <= a.ndim <= 5:
            raise ValueError(f"{func}: {name} must have rank 2 to 5 (TFLite extends to 5 dimensions), got shape "
                             f"{a.shape}")
    a = np.swapaxes(x, -1, -2) if adj_x else x
    b = np.swapaxes(y, -1, -2) if adj_y else y
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"{func}: the contracted dimensions differ: x gives K = {a.shape[-1]}, y gives "
                         f"K = {b.shape[-2]} (adj_x={adj_x}, adj_y={adj_y})")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"{func}: batch dimensions {x.shape[:-2]} and {y.shape[:-2]} do not broadcast") from None
    return a, b, batch


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
    func = "batch_matmul"
    a, b, batch = _operands(func, x, y, bool(adj_x), bool(adj_y))
    zx = zero_point(x_zero_point, a.dtype, func, "x_zero_point")
    zy = zero_point(y_zero_point, b.dtype, func, "y_zero_point")
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = np.broadcast_to(a, batch + (m, k)).reshape(-1, m, k)
    b3 = np.broadcast_to(b, batch + (k, n)).reshape(-1, k, n)
    out = np.empty((a3.shape[0], m, n), np.int8)
    for i in range(a3.shape[0]):
        out[i] = fully_connected(np.ascontiguousarray(a3[i]), np.ascontiguousarray(b3[i].T), None,
                                 input_zero_point=zx, weight_zero_point=zy, output_zero_point=output_zero_point,
                                 multiplier=multiplier, shift=shift)
    return out.reshape(batch + (m, n))


# --------------------------------------------------------------------------------------------
# descriptors (dspsim.registry)
# --------------------------------------------------------------------------------------------
_BMM = {"x_shape": [2, 1, 3, 5, 40], "y_shape": [1, 4, 1, 40, 6], "adj_x": False, "adj_y": False,
        "x_scale": 0.05, "y_scale": 0.03, "output_scale": 0.3, "x_zero_point": 0, "y_zero_point": 0,
        "output_zero_point": 0}


def _bmm_case(p, rng):
    from ..fixedpoint import quantize_multiplier
    from ..registry import random_codes

    m, s = quantize_multiplier(float(np.float32(p["x_scale"])) * float(np.float32(p["y_scale"]))
                               / float(np.float32(p["output_scale"])))
    return dict(x=random_codes(rng, p["x_shape"], "int8"), y=random_codes(rng, p["y_shape"], "int8"),
                adj_x=p["adj_x"], adj_y=p["adj_y"], x_zero_point=p["x_zero_point"], y_zero_point=p["y_zero_point"],
                output_zero_point=p["output_zero_point"], multiplier=m, shift=s)


def _register():
    from .. import reference as ref
    from ..registry import Operator, SuiteCase, register

    tiny = np.arange(-6, 6, dtype=np.int8).reshape(1, 3, 4)
    register(Operator(
        "batch_matmul", batch_matmul, ref.batch_matmul_oracle,
        lambda: [dict(x=tiny, y=tiny, adj_x=False, adj_y=True, x_zero_point=1, y_zero_point=-2, output_zero_point=3,
                      multiplier=1 << 30, shift=-3)],
        "TFLite int8 BATCH_MATMUL (adj_x/adj_y, broadcast batch dims; LiteRT = TFLM)",
        generate=_bmm_case, params=_BMM,
        cases=(SuiteCase("batch-matmul-broadcast-rank5", {"x_zero_point": -5, "y_zero_point": 7,
                                                          "output_zero_point": 2}, 1250),
               SuiteCase("batch-matmul-adj-x-adj-y", {"x_shape": [3, 40, 5], "y_shape": [3, 6, 40], "adj_x": True,
                                                      "adj_y": True, "x_zero_point": 3}, 1251),
               SuiteCase("batch-matmul-ties-pow2", {"x_scale": 0.0625, "y_scale": 0.0625, "output_scale": 0.5,
                                                    "x_zero_point": -1}, 1252),
               SuiteCase("batch-matmul-left-shift-saturate", {"output_scale": 0.0001}, 1253))))


_register()
