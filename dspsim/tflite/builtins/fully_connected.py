"""FULLY_CONNECTED (int8 x int8 -> int8; 16x8: int16 activations, int64 bias).

The engine's MAC rule for the family (``g.mac("fully_connected")``) gives the requantization (8-bit and 16x8),
the accumulator and the bias width: LiteRT's reference kernel requantizes in double (``"double_scale"``,
docs/engines.md), TFLM with ``MultiplyByQuantizedMultiplier`` (its 16x8 with the multiplier reduced to 16
bits), XNNPACK in float32.
"""
from __future__ import annotations

import numpy as np

from ... import kernels
from ..prepare import (Prepared, activation_range, at_prepare, at_run, builtin, check_arity, check_int_types, constant,
                       mac_bias, mac_requant, per_tensor_quant, refuse, requant_params, weight_scales)


@builtin("FULLY_CONNECTED")
def prepare_fully_connected(op, g):
    check_arity(op, (2, 3))
    wide = len(op.inputs) > 0 and op.inputs[0] >= 0 and g.tensor(op.inputs[0]).dtype == np.int16
    check_int_types(op, g, allowed=(np.dtype(np.int16),) if wide else (np.dtype(np.int8),))
    t_in, t_w, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    o = op.options
    if o.get("weights_format", 0) != 0:
        refuse(op, "shuffled weights (SHUFFLED4x16INT8) are not supported")
    w = constant(op, g, 1, "weights")
    if w is None or w.ndim != 2 or w.dtype != np.int8:
        refuse(op, "weights must be a constant int8 matrix (N, K)")
    bias = mac_bias(op, g, "fully_connected", constant(op, g, 2, "bias"), t_in)
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    s_w, zw = weight_scales(op, t_w, 0)
    if wide and (zi, zo) != (0, 0):
        refuse(op, f"16x8 FULLY_CONNECTED needs zero points 0, got {zi} and {zo}")
    n, k = w.shape
    if k == 0 or int(np.prod(t_in.shape)) % k or int(np.prod(t_out.shape)) != int(np.prod(t_in.shape)) // k * n:
        refuse(op, f"input {t_in.shape} and output {t_out.shape} do not fit weights {w.shape}")
    if np.ndim(s_w) == 0 and bias is not None and op.inputs[2] >= 0:
        t_b = g.tensor(op.inputs[2])
        if t_b.scale.size:  # GetQuantizedConvolutionMultipler: bias scale ~ s_in * s_w
            diff = abs(np.float64(s_in) * np.float64(s_w) - np.float64(t_b.scale[0]))
            if diff / np.float64(s_out) > 0.02:
                refuse(op, "bias scale differs from input_scale * weight_scale by more than 0.02 output LSB")
    lo, hi = activation_range(op, o.get("fused_activation_function", 0), t_out)
    quant = dict(input_zero_point=zi, weight_zero_point=zw, output_zero_point=zo,
                 requant=mac_requant(op, g, "fully_connected", t_in, s_in, s_w, s_out), act_min=lo, act_max=hi,
                 out_dtype=t_out.dtype.name)
    layer = at_prepare(op, kernels.fully_connected_layer, (int(np.prod(t_in.shape)) // k, k), t_in.dtype, w, bias,
                       **quant)
    rows, out_shape, acc = layer.layer.x_shape, tuple(t_out.shape), g.mac("fully_connected").accumulator
    return Prepared(lambda inputs: at_run(op, layer.run, inputs[0].reshape(rows[0], k), acc).reshape(out_shape),
                    requant_params(quant))
