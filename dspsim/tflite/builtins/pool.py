"""AVERAGE_POOL_2D and MAX_POOL_2D (int8, uint8, int16).

Sources: LiteRT ``tflite/kernels/pooling.cc`` (int16 runs ``reference_integer_ops::AveragePool``/``MaxPool``
under every kernel type, so LiteRT's default interpreter computes what its reference does; the XNNPACK delegate takes no
int16 pooling), TFLM ``micro/kernels/pooling_common.cc`` (PoolingPrepare).
"""
from __future__ import annotations

import numpy as np

from ...kernels import pool
from ...engines import Kernel
from ..prepare import (Prepared, activation_range, builtin, check_arity, check_int_types, padding_name,
                       per_tensor_quant, refuse)
from ._lean import unary_run


def _pool(op, g, is_max):
    check_arity(op, 1)
    check_int_types(op, g, allowed=(np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)))
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    if len(t_in.shape) != 4:
        refuse(op, f"input must be 4-D NHWC, got shape {t_in.shape}")
    if t_in.dtype != t_out.dtype:
        refuse(op, f"input and output types differ ({t_in.dtype}, {t_out.dtype})")
    if g.kernel(op) is Kernel.TFLM:  # the kernel pools the codes; LiteRT does not check (a DCHECK for int8 only)
        s_in, z_in = per_tensor_quant(op, t_in, "input")
        s_out, z_out = per_tensor_quant(op, t_out, "output")
        if not float(abs(np.float32(s_in) - np.float32(s_out))) <= 1e-6 or z_in != z_out:
            refuse(op, f"TFLM needs the output quantization of the input (scales within 1e-6, the same zero point), "
                       f"got {float(s_in)!r}/{z_in} and {float(s_out)!r}/{z_out} (pooling_common.cc)")
    o = op.options
    if o.get("stride_h", 0) <= 0 or o.get("stride_w", 0) <= 0:
        refuse(op, "strides must be > 0")
    lo, hi = activation_range(op, o.get("fused_activation_function", 0), t_out)
    args = dict(stride=(o["stride_h"], o["stride_w"]), padding=padding_name(op, o.get("padding", 0)), act_min=lo,
                act_max=hi)
    size = (o.get("filter_height", 0), o.get("filter_width", 0))
    func = "max_pool2d" if is_max else "average_pool2d"
    return Prepared(unary_run(op, g, pool.pool2d_plan, size, **args, is_max=is_max, func=func),
                    {**args, "filter_size": size})


@builtin("AVERAGE_POOL_2D")
def prepare_average_pool_2d(op, g):
    return _pool(op, g, False)


@builtin("MAX_POOL_2D")
def prepare_max_pool_2d(op, g):
    return _pool(op, g, True)
