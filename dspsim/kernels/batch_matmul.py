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

from .._errors import check_flag, names_its_errors
from ..requant import Requant
from .requantize import _requantize_codes
from ._checks import check_spec, check_tensor, zero_point

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
    clamp in one numba pass (:func:`dspsim.kernels.requantize.tflite_requantize`'s core, "double")."""
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
