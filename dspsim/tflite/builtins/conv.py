"""CONV_2D and DEPTHWISE_CONV_2D (int8 x int8 -> int8, per-channel weights; 16x8: int16 activations, int64 bias).

The engine's MAC rule of each family (``g.mac("conv_2d")``, ``g.mac("depthwise_conv_2d")``) gives the
requantization, the accumulator and the bias width. 16x8 (``reference_integer_ops::ConvPerChannel`` /
``DepthwiseConvPerChannel`` on int16 in every engine here): an int64 accumulator and the int64
``MultiplyByQuantizedMultiplier`` (``Requant`` scheme "int64"); zero points 0.
"""
from __future__ import annotations

import numpy as np

from ... import kernels
from ..prepare import (Prepared, activation_range, at_prepare, at_run, builtin, check_arity, check_int_types, constant,
                       mac_bias, mac_requant, padding_name, per_tensor_quant, refuse, requant_params, weight_scales)

FAMILY = {"CONV_2D": "conv_2d", "DEPTHWISE_CONV_2D": "depthwise_conv_2d"}
"""The MAC family of each operator."""


def _conv_common(op, g, axis):
    check_arity(op, (2, 3))
    wide = len(op.inputs) > 0 and op.inputs[0] >= 0 and g.tensor(op.inputs[0]).dtype == np.int16
    check_int_types(op, g, allowed=(np.dtype(np.int16),) if wide else (np.dtype(np.int8),))
    t_in, t_w, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    w = constant(op, g, 1, "filter")
    if w is None or w.ndim != 4 or w.dtype != np.int8:
        refuse(op, "filter must be a constant int8 4-D tensor")
    bias = mac_bias(op, g, FAMILY[op.name], constant(op, g, 2, "bias"), t_in)
    if len(t_in.shape) != 4:
        refuse(op, f"input must be 4-D NHWC, got shape {t_in.shape}")
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    s_w, _ = weight_scales(op, t_w, axis)
    o = op.options
    lo, hi = activation_range(op, o.get("fused_activation_function", 0), t_out)
    if wide and (zi, zo) != (0, 0):
        refuse(op, f"16x8 {op.name} needs zero points 0, got {zi} and {zo}")
    # ConvPerChannel ignores the filter zero point (int8 filters are symmetric)
    quant = dict(input_zero_point=zi, weight_zero_point=0, output_zero_point=zo,
                 requant=mac_requant(op, g, FAMILY[op.name], t_in, s_in, s_w, s_out), act_min=lo, act_max=hi,
                 stride=(o.get("stride_h", 1), o.get("stride_w", 1)), padding=padding_name(op, o.get("padding", 0)),
                 dilation=(o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)))
    if wide:
        quant["out_dtype"] = "int16"
    return t_in, t_out, w, bias, quant


@builtin("CONV_2D")
def prepare_conv_2d(op, g):
    t_in, t_out, w, bias, quant = _conv_common(op, g, 0)
    layer = at_prepare(op, kernels.conv2d_layer, t_in.shape, t_in.dtype, w, bias, **quant)
    return Prepared(_runner(op, g, layer, t_out), requant_params(quant))


@builtin("DEPTHWISE_CONV_2D")
def prepare_depthwise_conv_2d(op, g):
    t_in, t_out, w, bias, quant = _conv_common(op, g, 3)
    c_in, c_out = t_in.shape[3], w.shape[3]
    if w.shape[0] != 1 or c_in == 0 or c_out % c_in:
        refuse(op, f"filter {w.shape} does not fit {c_in} input channels")
    quant["depth_multiplier"] = c_out // c_in  # LiteRT derives the multiplier from the shapes
    layer = at_prepare(op, kernels.depthwise_conv2d_layer, t_in.shape, t_in.dtype, w, bias, **quant)
    return Prepared(_runner(op, g, layer, t_out), requant_params(quant))


def _runner(op, g, layer, t_out):
    """``run(inputs)`` of a prepared conv layer: the kernel call alone (the model checks the output shape)."""
    if tuple(layer.out_shape) != tuple(t_out.shape):
        refuse(op, f"computes shape {tuple(layer.out_shape)} but the model declares {tuple(t_out.shape)}")
    acc = g.mac(FAMILY[op.name]).accumulator
    return lambda inputs: at_run(op, layer.run, inputs[0], acc)
