"""BATCH_MATMUL and TRANSPOSE_CONV (int8).

BATCH_MATMUL: LiteRT and tflite-micro run the same reference kernel with the same multiplier
(:mod:`dspsim.kernels.batch_matmul`). LiteRT's default interpreter gave the same integers on every
golden case, with the rhs zero point non-zero (``VisitBatchMatMulNode`` refuses those) and zero
(``arith_batch_matmul_rhs_zp0``, two dynamic inputs), so every engine here runs the same kernel.

TRANSPOSE_CONV: see :mod:`dspsim.kernels.transpose_conv`; the engine's MAC rule of the family
(``g.mac("transpose_conv")``) gives the requantization of int8 layers (its int16 ones: TFLite's fixed point).
"""
from __future__ import annotations

import numpy as np

from ...kernels.batch_matmul import batch_matmul_plan
from ...kernels.transpose_conv import transpose_conv
from ..prepare import (Prepared, activation_range, at_run, builtin, check_arity, check_dtype,
                       check_int_types, check_shape, constant, fixed_point_multiplier, mac_bias, mac_requant,
                       padding_name, per_tensor_quant, refuse, weight_scales)
from ._lean import binary_run


@builtin("BATCH_MATMUL")
def prepare_batch_matmul(op, g):
    check_arity(op, 2)
    check_int_types(op, g, ("lhs", "rhs"))
    tx, ty, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    (sx, zx), (sy, zy), (so, zo) = (per_tensor_quant(op, t, w)
                                    for t, w in ((tx, "lhs"), (ty, "rhs"), (t_out, "output")))
    m, s = fixed_point_multiplier(op, np.float64(sx) * np.float64(sy) / np.float64(so))
    q = dict(adj_x=bool(op.options.get("adj_x", 0)), adj_y=bool(op.options.get("adj_y", 0)), x_zero_point=zx,
             y_zero_point=zy, output_zero_point=zo, multiplier=m, shift=s)
    return Prepared(binary_run(op, g, batch_matmul_plan, **q), q)


@builtin("TRANSPOSE_CONV")
def prepare_transpose_conv(op, g):
    check_arity(op, (3, 4))
    if len(op.inputs) < 3 or min(op.inputs[:3]) < 0:
        refuse(op, "expects output_shape, weights and input tensors")
    t_in, t_w, t_out = g.tensor(op.inputs[2]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    dt = check_dtype(op, t_in, (np.dtype(np.int8), np.dtype(np.int16)), "input")
    check_dtype(op, t_out, (dt,), "output")
    w = constant(op, g, 1, "weights")
    if w is None or w.ndim != 4 or w.dtype != np.int8:
        refuse(op, "weights must be a constant int8 4-D tensor (OHWI)")
    bias = mac_bias(op, g, "transpose_conv", constant(op, g, 3, "bias"), t_in)
    if len(t_in.shape) != 4 or len(t_out.shape) != 4:
        refuse(op, f"input and output must be 4-D NHWC, got {t_in.shape} and {t_out.shape}")
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    s_w, _ = weight_scales(op, t_w, 0)
    o = op.options
    lo, hi = activation_range(op, o.get("fused_activation_function", 0), t_out)
    if dt == np.int16 and (zi, zo) != (0, 0):
        refuse(op, f"int16 TRANSPOSE_CONV needs zero points 0, got {zi} and {zo}")
    if g.mac("transpose_conv").accumulator is not None:
        refuse(op, f"engine {g.profile.name!r} declares an accumulator for TRANSPOSE_CONV; its kernel sums in the "
                   "exact int32 (int64 for 16x8) only")
    rq = mac_requant(op, g, "transpose_conv", t_in, s_in, s_w, s_out)
    q = dict(output_size=tuple(t_out.shape[1:3]), stride=(o.get("stride_h", 1), o.get("stride_w", 1)),
             padding=padding_name(op, o.get("padding", 0)), input_zero_point=zi, output_zero_point=zo, requant=rq,
             act_min=lo, act_max=hi)

    def run(inputs):  # output_shape may be a model input: it must name the declared output shape
        if inputs[0] is not None and tuple(np.asarray(inputs[0]).reshape(-1).tolist()) != tuple(t_out.shape):
            raise ValueError(f"Model.run: operator {op.index} (TRANSPOSE_CONV): output_shape "
                             f"{np.asarray(inputs[0]).tolist()} differs from the declared {tuple(t_out.shape)}")
        return check_shape(op, at_run(op, transpose_conv, inputs[2], w, bias, **q), t_out)

    return Prepared(run, q)
