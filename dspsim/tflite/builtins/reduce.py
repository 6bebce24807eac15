"""MEAN (int8 / uint8 / int16: the same QuantizedMeanOrSum, int32 sum)."""
from __future__ import annotations

import numpy as np

from ...kernels import elementwise
from ...engines import Kernel
from ..prepare import (Prepared, builtin, check_arity, check_int_types, constant, fixed_point_multiplier,
                       per_tensor_quant, refuse)
from ._lean import reshaped_run


@builtin("MEAN")
def prepare_mean(op, g):
    check_arity(op, 2)
    check_int_types(op, g, allowed=(np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)))
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    axes = constant(op, g, 1, "axis")
    if axes is None or axes.dtype.kind != "i":
        refuse(op, "axis must be a constant int tensor")
    axes = axes.reshape(-1)
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    if t_in.dtype == np.int16 and g.kernel(op) is not Kernel.TFLM and (zi, zo) != (0, 0):
        refuse(op, f"int16 MEAN needs zero points 0 (LiteRT reduce.cc), got {zi}, {zo}")
    keep = bool(op.options.get("keep_dims", 0))
    if g.kernel(op) is Kernel.XNNPACK and t_in.dtype == np.int8:
        q = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo, keep_dims=keep)
        return Prepared(reshaped_run(op, g, elementwise.xnnpack_mean_plan, axes, **q), q)
    m, s = fixed_point_multiplier(op, np.float64(s_in) / np.float64(s_out))  # PrepareMeanOrSum: double quotient
    q = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, keep_dims=keep)
    return Prepared(reshaped_run(op, g, elementwise.mean_plan, axes, **q), q)
