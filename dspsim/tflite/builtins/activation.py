"""RELU, RELU6, RELU_N1_TO_1 and LEAKY_RELU (int8 / uint8; int16 RELU and LEAKY_RELU; any LEAKY_RELU alpha).

Per kernel (``g.kernel(op)``): TFLite's reference Prepare (LiteRT) requires int16 zero points 0 and divides
LEAKY_RELU's scales in float32; TFLM's takes any int16 zero points, divides in double, and clamps RELU6 in the
input domain; XNNPACK takes int8 LEAKY_RELU where its delegate accepts the scales, and LiteRT's optimized int16
LEAKY_RELU keeps a negative alpha's multiplier signed.
"""
from __future__ import annotations

import numpy as np

from ...engines import Kernel
from ...kernels.activation import NegativeAlpha, leaky_relu_plan, relu_plan, tflm_relu6_plan, xnnpack_leaky_relu
from ._lean import unary_run
from ..prepare import (Prepared, activation_range, builtin, check_arity, check_int_types, check_same_shape,
                       fixed_point_multiplier, per_tensor_quant, refuse, xnnpack_delegates)

_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))


def _int16_zero_points(op, g, t_in, zi, zo):
    """TFLite's reference Prepare (LiteRT) takes int16 activations with zero points 0 only; TFLM's any."""
    if t_in.dtype == np.int16 and g.kernel(op) is not Kernel.TFLM and (zi, zo) != (0, 0):
        refuse(op, f"int16 {op.name} needs zero points 0 (LiteRT's {op.name.title().replace('_', '')}Prepare), "
                   f"got {zi}, {zo}")


def _relu_x(op, g, kind):
    check_arity(op, 1)
    check_int_types(op, g, allowed=_TYPES + ((np.dtype(np.int16),) if kind != "relu_n1_to_1" else ()))
    check_same_shape(op, g)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    _int16_zero_points(op, g, t_in, zi, zo)
    rounding = g.tflite.rounding
    m, s = fixed_point_multiplier(op, np.float32(s_in / s_out), rounding)  # ReluPrepare: float32 quotient
    lo, hi = activation_range(op, 0, t_out, kind)
    q = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, act_min=lo, act_max=hi,
             rounding=rounding)
    return Prepared(unary_run(op, g, relu_plan, **q), q)


@builtin("RELU")
def prepare_relu(op, g):
    return _relu_x(op, g, "relu")


@builtin("RELU6")
def prepare_relu6(op, g):
    if g.kernel(op) is not Kernel.TFLM:
        return _relu_x(op, g, "relu6")
    # TFLM's Relu6Prepare: a clamp in the INPUT domain, [zi, zi + round(6 / s_in)] within the type; the
    # output tensor's scale and zero point are not read (activations_common.cc).
    check_arity(op, 1)
    check_int_types(op, g, allowed=(np.dtype(np.int8), np.dtype(np.int16)))
    check_same_shape(op, g)
    s_in, zi = per_tensor_quant(op, g.tensor(op.inputs[0]), "input")
    q = dict(input_scale=s_in, input_zero_point=zi)
    return Prepared(unary_run(op, g, tflm_relu6_plan, **q), q)


@builtin("RELU_N1_TO_1")
def prepare_relu_n1_to_1(op, g):
    return _relu_x(op, g, "relu_n1_to_1")


@builtin("LEAKY_RELU")
def prepare_leaky_relu(op, g):
    check_arity(op, 1)
    check_int_types(op, g, allowed=_TYPES + (np.dtype(np.int16),))
    check_same_shape(op, g)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    _int16_zero_points(op, g, t_in, zi, zo)
    alpha = float(np.float32(op.options.get("alpha", 0.0)))
    for real in (np.float32(s_in / s_out), abs(np.float32(np.float32(s_in * np.float32(alpha)) / s_out))):
        fixed_point_multiplier(op, real)
    q = dict(alpha=alpha, input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
    r = np.float32(s_in / s_out)
    neg = np.float32(r * np.float32(alpha))  # xnnpack_delegate.cc: alpha normal, both ratios in range
    kernel = g.kernel(op)
    if kernel is Kernel.XNNPACK and t_in.dtype in _TYPES and xnnpack_delegates((r,), 2.0**-8, 2.0**7, False) \
            and alpha != 0 and abs(neg) >= 2.0**-8 and -127.99609375 <= neg <= 128:
        return Prepared(lambda inputs: xnnpack_leaky_relu(inputs[0], **q), q)
    q["rounding"] = g.tflite.rounding
    # LeakyReluPrepare divides in float32 (LiteRT activations.cc); TFLM as the engine's build does
    q["quotient"] = g.tflite.quotient if kernel is Kernel.TFLM else "float32"
    if alpha < 0:  # LiteRT's optimized int16 kernel (the XNNPACK engine's) keeps the negative multiplier
        optimized = kernel in (Kernel.XNNPACK, Kernel.LITERT_OPTIMIZED)
        q["negative_alpha"] = (NegativeAlpha.SIGNED_MULTIPLIER if optimized and t_in.dtype == np.int16
                               else NegativeAlpha.NEGATE).value
    return Prepared(unary_run(op, g, leaky_relu_plan, **q), q)
