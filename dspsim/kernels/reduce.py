"""Quantized SUM (int8 / uint8): TFLite's ``QuantizedMeanOrSum`` (compute_sum) and XNNPACK's ``sum_nd``.

TFLite (``reference/reduce.h::QuantizedMeanOrSum``, tflite-micro ``reduce_common.cc``, LiteRT
``reduce.cc``): an int32 sum of the codes over the reduced axes, the input zero point times the
element count taken off, ``MultiplyByQuantizedMultiplier`` with ``QuantizeMultiplier(double(s_in) /
double(s_out))``, the output zero point added, clamped to the type. LiteRT 2.3's *reference*
registration (``Register_SUM_REF``, i.e. ``OpResolverType.BUILTIN_REF``) instantiates that kernel with
``uint8_t`` data for int8 tensors (``QuantizedMeanOrSum<...>(GetTensorData<uint8_t>(...))``): it reads
every int8 code as its byte (``-1`` as 255) and clamps to [0, 255] before the byte is stored into
the int8 output. ``codes_as_uint8=True`` reproduces that defect; tflite-micro and LiteRT's optimized
kernel compute the sum of the int8 codes.
"""
from __future__ import annotations

import numpy as np

from ..fixedpoint import multiply_by_quantized_multiplier
from ._common import check_tensor, zero_point
from .elementwise import _float_scale, _multiplier, _resolve_axes, _shift

__all__ = ["reduce_sum", "xnnpack_sum"]

_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))


def _codes_and_axes(func, x, axis, input_zero_point, output_zero_point):
    x = check_tensor(x, func, "x", allowed=_TYPES)
    axes = _resolve_axes(axis, x.ndim, func)
    zi = zero_point(input_zero_point, x.dtype, func, "input_zero_point")
    zo = zero_point(output_zero_point, x.dtype, func, "output_zero_point")
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
    return x, axes, zi, zo, n


def _int32_sum(x, axes, keep_dims):
    total = x.astype(np.int64).sum(axis=axes, keepdims=keep_dims)
    return (total + (1 << 31)) % (1 << 32) - (1 << 31)


def reduce_sum(x, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False,
               codes_as_uint8=False):
    """TFLite quantized SUM (``reference_ops::QuantizedMeanOrSum``, compute_sum=true)::

        acc = int32(sum of the codes over ``axis`` - zp_in * n)     # n = reduced element count; wraps
        out = clamp(MBQM(acc, multiplier, shift) + zp_out)          # to the dtype's range

    MBQM (``MultiplyByQuantizedMultiplier``) rounds twice: SRDHM ties toward +inf, the right shift
    ties away from zero; a left shift (``shift > 0``) wraps in int32. The clamp is the only saturation.
    ``multiplier``/``shift`` = ``QuantizeMultiplier(double(s_in) / double(s_out))``. Negative and
    repeated axes resolve as TFLite's ResolveAxis does.

    ``codes_as_uint8=True`` (int8 only) is LiteRT 2.3 BUILTIN_REF's defect: the codes are summed as
    their bytes (``c mod 256``) and the result is clamped to [0, 255], then stored as that byte (so
    200 comes back as -56); the zero points are the int8 ones.
    """
    func = "reduce_sum"
    x, axes, zi, zo, n = _codes_and_axes(func, x, axis, input_zero_point, output_zero_point)
    m = _multiplier(multiplier, func, "multiplier")
    s = _shift(shift, func, "shift", -31, 30)
    if codes_as_uint8:
        if x.dtype != np.int8:
            raise ValueError(f"{func}: codes_as_uint8 models LiteRT's int8 defect; x must be int8, got {x.dtype}")
        x, lo, hi = x.view(np.uint8), 0, 255
    else:
        info = np.iinfo(x.dtype)
        lo, hi = int(info.min), int(info.max)
    acc = _int32_sum(x, axes, keep_dims) - zi * n
    acc = (acc + (1 << 31)) % (1 << 32) - (1 << 31)
    v = np.clip(multiply_by_quantized_multiplier(acc, m, s) + zo, lo, hi)
    out = v.astype(np.uint8).view(np.int8) if codes_as_uint8 else v.astype(x.dtype)
    return out.reshape(np.shape(acc))


def xnnpack_sum(x, axis, *, input_scale, input_zero_point, output_scale, output_zero_point, keep_dims=False):
    """XNNPACK ``sum_nd`` on int8 (LiteRT's default interpreter): an int32 sum of the codes, then
    XNNPACK's reference int32 -> qs8 convert with the zero point folded in (``reduce-nd.c``)::

        inv = f32(s_in / s_out)
        zp' = f32(zo - f32(float(n * zi) * inv))
        out = clamp(nearbyint(f32(f32(float(sum) * inv) + zp')))   # ties to even

    ``float(sum)`` rounds above 2^24; no fused multiply-add (baseline x86-64 build). Like
    :func:`dspsim.kernels.elementwise.xnnpack_mean` with the ``1 / n`` factor left out.
    """
    func = "xnnpack_sum"
    if np.asarray(x).dtype != np.int8:
        raise TypeError(f"{func}: x must be int8, got {np.asarray(x).dtype}")
    x, axes, zi, zo, n = _codes_and_axes(func, x, axis, input_zero_point, output_zero_point)
    inv = np.float32(_float_scale(input_scale, func, "input_scale") / _float_scale(output_scale, func, "output_scale"))
    zp = np.float32(np.float32(zo) - np.float32(np.float32(np.int32(n * zi)) * inv))
    acc = _int32_sum(x, axes, keep_dims).astype(np.int32)
    y = np.rint(np.float32(np.float32(acc.astype(np.float32) * inv) + zp))
    return np.clip(y, -128, 127).astype(np.int8)


# --------------------------------------------------------------------------------------------
# descriptors (dspsim.registry)
# --------------------------------------------------------------------------------------------
_SUM = {"dtype": "int8", "shape": [2, 5, 7, 3], "axis": [1, 2], "keep_dims": True, "input_scale": 0.05,
        "output_scale": 0.9, "input_zero_point": 0, "output_zero_point": 0, "codes_as_uint8": False}
_TINY = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)


def _case_x(p, rng):
    from ..registry import random_codes

    return dict(x=random_codes(rng, p["shape"], p["dtype"]), axis=np.asarray(p["axis"], np.int32),
                input_zero_point=p["input_zero_point"], output_zero_point=p["output_zero_point"],
                keep_dims=p["keep_dims"])


def _sum_case(p, rng):
    from ..fixedpoint import quantize_multiplier

    m, s = quantize_multiplier(np.float64(np.float32(p["input_scale"])) / np.float64(np.float32(p["output_scale"])))
    return dict(_case_x(p, rng), multiplier=m, shift=s, codes_as_uint8=p["codes_as_uint8"])


def _register():
    from .. import reference as ref
    from ..registry import Operator, SuiteCase, register

    register(Operator(
        "reduce_sum", reduce_sum, ref.reduce_sum_oracle,
        lambda: [dict(x=x, axis=(1, 2), input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0,
                      codes_as_uint8=u) for x, u in ((_TINY, False), (_TINY.astype(np.uint8), False), (_TINY, True))],
        "TFLite quantized SUM (QuantizedMeanOrSum; LiteRT BUILTIN_REF's uint8 defect as an option)",
        generate=_sum_case, params=_SUM, choices={"dtype": ("int8", "uint8")},
        cases=(SuiteCase("sum-spatial", {"input_zero_point": -7, "output_zero_point": 3}, 1230),
               SuiteCase("sum-litert-ref-uint8-defect", {"codes_as_uint8": True, "input_zero_point": -7,
                                                         "output_zero_point": 3}, 1231),
               SuiteCase("sum-last-axis-uint8", {"dtype": "uint8", "axis": [-1], "keep_dims": False,
                                                 "input_zero_point": 128, "output_zero_point": 128,
                                                 "output_scale": 0.1}, 1232),
               SuiteCase("sum-left-shift-saturate", {"output_scale": 0.01, "input_zero_point": 5}, 1233),
               SuiteCase("sum-ties-pow2", {"input_scale": 0.0625, "output_scale": 1.0, "axis": [0]}, 1234))))
    register(Operator(
        "xnnpack_sum", xnnpack_sum, ref.xnnpack_sum_oracle,
        lambda: [dict(x=_TINY, axis=(1, 2), input_scale=0.1, input_zero_point=0, output_scale=0.1,
                      output_zero_point=0)],
        "XNNPACK sum_nd on int8", generate=lambda p, rng: dict(_case_x(p, rng), input_scale=p["input_scale"],
                                                               output_scale=p["output_scale"]),
        params={k: v for k, v in _SUM.items() if k != "codes_as_uint8"}, choices={"dtype": ("int8",)},
        cases=(SuiteCase("xnnpack-sum", {"input_zero_point": -7, "output_zero_point": 3}, 1240),
               SuiteCase("xnnpack-sum-ties-pow2", {"input_scale": 0.0625, "output_scale": 1.0}, 1241))))


_register()
