"""The quantize family's builtins: QUANTIZE, DEQUANTIZE, CAST.

QUANTIZE (float -> int, int -> int requantization) and DEQUANTIZE.

Per kernel (``g.kernel(op)``): TFLite's reference ``Quantize`` / ``Requantize``, or ``Kernel.XNNPACK``:
XNNPACK's ``f32-qs8-vcvt`` / ``qs8-vcvt`` (``qu8`` for uint8) where its delegate takes the node, else LiteRT's optimized kernels
(int16 quantize, and the NEON ``Requantize`` between 8-bit types, whose final shift rounds ties toward
+inf). The int32 pairs each engine's Prepare takes: ``TfliteProfile.int32_requantize_pairs``.

CAST between int8, uint8, int16, int32 and float32 (no quantization involved: raw values).

LiteRT (``cast.cc``) takes every pair; TFLM (``micro/kernels/cast.cc``) reads int8, int16, int32 and
float32 (and uint32, bool) and writes int8, int16, int32 and float32: uint8 on either side fails at
Eval. A float32 NaN cast to an integer is the type's maximum under LiteRT and 0 under TFLM.
"""
from __future__ import annotations

import numpy as np

from ...engines import Kernel
from ...kernels.quantize.cast import CastNaN, cast_plan
from ...kernels.quantize.requantize import tflite_requantize_plan
from ...kernels.quantize.xnnpack import xnnpack_convert_plan, xnnpack_quantize_plan
from ...quantize import (
    litert_optimized_dequantize_plan, litert_optimized_quantize_plan, tflite_dequantize_plan, tflite_quantize_plan,
)
from ..prepare import (
    Prepared, at_run, builtin, check_arity, check_dtype, check_same_shape, fixed_point_multiplier, per_tensor_quant,
    refuse, xnnpack_delegates, engine_types,
)
from ._lean import planned, unary_run


_QTYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
_BYTE_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))


_INT32 = np.dtype(np.int32)


def _prepare_requantize_int32(op, g, t_in, t_out, s_in, zi, s_out, zo):
    """int -> int QUANTIZE with an int32 end: the pairs the engine's Prepare takes (LiteRT ``quantize.cc``,
    TFLM ``quantize_common.cc``); the kernel is the reference Requantize in every engine (XNNPACK takes none)."""
    if (t_in.dtype.name, t_out.dtype.name) not in g.tflite.int32_requantize_pairs:
        refuse(op, f"QUANTIZE {t_in.type_name} -> {t_out.type_name} is not supported by the engine's Prepare")
    m, s = fixed_point_multiplier(op, np.float64(s_in) / np.float64(s_out))  # Requantize, double quotient
    q = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, out_dtype=t_out.dtype.name)
    return Prepared(unary_run(op, g, tflite_requantize_plan, **q), q)


@builtin("QUANTIZE")
def prepare_quantize(op, g):
    check_arity(op, 1)
    check_same_shape(op, g)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    check_dtype(op, t_out, _QTYPES + ((_INT32,) if t_in.dtype != np.float32 else ()), "output")
    if not g.tflite.takes_uint8 and np.dtype(np.uint8) in (t_in.dtype, t_out.dtype) \
            and {t_in.dtype, t_out.dtype} != set(_BYTE_TYPES):
        refuse(op, f"QUANTIZE {t_in.type_name} -> {t_out.type_name}: engine {g.profile.name!r}'s kernel takes uint8 "
                   "only from or to int8 (TFLM quantize_common.cc)")
    if t_in.dtype == np.float32:
        if t_out.scale.size > 1:
            scale, zp, axis = t_out.scale, t_out.zero_point, t_out.quantized_dimension
        else:
            (scale, zp), axis = per_tensor_quant(op, t_out, "output"), None
            xnnpack = g.kernel(op) is Kernel.XNNPACK
            if xnnpack and t_out.dtype in _BYTE_TYPES:  # f32-qs8-vcvt / f32-qu8-vcvt
                run = planned(xnnpack_quantize_plan, scale=scale, zero_point=zp, dtype=t_out.dtype)
                return Prepared(lambda inputs: at_run(op, run, inputs[0]), {"scale": scale, "zero_point": zp})
            # LiteRT's optimized AffineQuantize: every one of litert-optimized, and the int16 ones the XNNPACK
            # delegate leaves to the builtin kernels
            if xnnpack or g.kernel(op) is Kernel.LITERT_OPTIMIZED:
                return Prepared(unary_run(op, g, litert_optimized_quantize_plan, scale, zp, t_out.dtype.name,
                                          shape_only=True), {"scale": scale, "zero_point": zp, "kernel": "optimized"})
        return Prepared(unary_run(op, g, tflite_quantize_plan, scale, zp, t_out.dtype.name, axis,
                                  shape_only=True), {"scale": scale, "zero_point": zp, "axis": axis})
    check_dtype(op, t_in, _QTYPES + (_INT32,), "input")  # int -> int: Requantize (int16 -> int8 in the keyword models)
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    if _INT32 in (t_in.dtype, t_out.dtype):
        return _prepare_requantize_int32(op, g, t_in, t_out, s_in, zi, s_out, zo)
    xnnpack = g.kernel(op) is Kernel.XNNPACK
    if xnnpack and t_in.dtype == t_out.dtype and t_in.dtype in _BYTE_TYPES \
            and xnnpack_delegates((np.float32(s_in / s_out),), 2.0**-8, 2.0**7, hi_open=False):
        q = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo, dtype=t_in.dtype)
        run = planned(xnnpack_convert_plan, **q)
        return Prepared(lambda inputs: at_run(op, run, inputs[0]), q)
    m, s = fixed_point_multiplier(op, np.float64(s_in) / np.float64(s_out))  # Requantize, double quotient
    if (xnnpack or g.kernel(op) is Kernel.LITERT_OPTIMIZED) and t_in.dtype in _BYTE_TYPES \
            and t_out.dtype in _BYTE_TYPES:
        # the delegate declines this QUANTIZE: LiteRT's optimized Requantize (NEON through NEON_2_SSE on x86),
        # whose final shift rounds ties toward +inf (docs/engines.md, "Data movement operators")
        q = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, out_dtype=t_out.dtype.name)
        return Prepared(unary_run(op, g, tflite_requantize_plan, rounding="neon", **q), dict(q, rounding="neon"))
    # reference_ops::Requantize: the "double" build of tflite_requantize (x - zi never wraps for these types)
    q = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s)
    return Prepared(unary_run(op, g, tflite_requantize_plan, out_dtype=t_out.dtype.name, **q), q)


@builtin("DEQUANTIZE")
def prepare_dequantize(op, g):
    check_arity(op, 1)
    check_same_shape(op, g)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    check_dtype(op, t_in, _QTYPES, "input")
    check_dtype(op, t_out, (np.dtype(np.float32),), "output")
    s, zp = per_tensor_quant(op, t_in, "input")
    if g.kernel(op) is Kernel.LITERT_OPTIMIZED and t_in.dtype in _BYTE_TYPES:  # optimized_ops::Dequantize
        return Prepared(unary_run(op, g, litert_optimized_dequantize_plan, s, zp, t_in.dtype, shape_only=True),
                        {"scale": s, "zero_point": zp, "kernel": "optimized"})
    return Prepared(unary_run(op, g, tflite_dequantize_plan, s, zp, shape_only=True),
                    {"scale": s, "zero_point": zp})


_I8, _U8, _I16, _I32, _U32, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.uint32,
                                                           np.float32))


@builtin("CAST")
def prepare_cast(op, g):
    check_arity(op, 1)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    allowed = engine_types(op, g, (_I8, _U8, _I16, _I32, _U32, _F32))
    check_dtype(op, t_in, allowed, "input", g)
    check_dtype(op, t_out, allowed, "output", g)
    if tuple(t_in.shape) != tuple(t_out.shape):
        refuse(op, f"input {tuple(t_in.shape)} and output {tuple(t_out.shape)} shapes differ")
    nan = CastNaN.ZERO if g.kernel(op) is Kernel.TFLM else CastNaN.MAX
    dtype = t_out.dtype.name
    run = planned(cast_plan, t_in.dtype, dtype, nan=nan)  # elementwise: the shape is the input's
    return Prepared(lambda inputs: at_run(op, run, inputs[0]), {"dtype": dtype, "nan": nan.value})
