"""REDUCE_MAX and ARG_MAX: selections of codes, the same integers under every engine.

LiteRT (``reduce.cc``) and TFLM (``reduce_common.cc``) both require the input's scale and zero point
on REDUCE_MAX's output; XNNPACK's delegated max is the same selection. TFLM's ARG_MAX writes only
int32 indices (``arg_min_max.cc`` fails at Eval for int64: "Only int32_t are supported currently")
and reads only float32 and int8; TFLM's REDUCE_MAX reads float32 and int8.
"""
from __future__ import annotations

import numpy as np

from ...kernels import select as K
from ..prepare import (Prepared, at_prepare, builtin, check_arity, check_dtype, constant, engine_types,
                       per_tensor_quant, refuse)
from ._lean import reshaped_run, unary_run

_I8, _U8, _I16, _I32, _I64 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64))


def _axis(op, g):
    a = constant(op, g, 1, "axis")
    if a is None or a.dtype not in (_I32, _I64):
        refuse(op, "axis must be a constant int32 or int64 tensor")
    return a.reshape(-1)


@builtin("REDUCE_MAX")
def prepare_reduce_max(op, g):
    check_arity(op, 2)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    check_dtype(op, t_in, engine_types(op, g, (_I8, _U8, _I16, _I32)), "input", g)
    check_dtype(op, t_out, (t_in.dtype,), "output")
    if t_in.dtype != _I32 and per_tensor_quant(op, t_in, "input") != per_tensor_quant(op, t_out, "output"):
        refuse(op, "the output's scale and zero point must be the input's (LiteRT's reduce.cc and TFLM's "
                   "reduce_common.cc check it)")
    axes = _axis(op, g)
    keep = bool(op.options.get("keep_dims", 0))
    y0 = at_prepare(op, K.reduce_max, np.zeros(t_in.shape, t_in.dtype), axes, keep_dims=keep)
    if y0.size != int(np.prod(t_out.shape)):
        refuse(op, f"computes {y0.shape}, the model declares {tuple(t_out.shape)}")
    return Prepared(reshaped_run(op, g, K.reduce_max_plan, axes, keep_dims=keep), {"axis": axes, "keep_dims": keep})


@builtin("ARG_MAX")
def prepare_arg_max(op, g):
    check_arity(op, 2)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    check_dtype(op, t_in, engine_types(op, g, (_I8, _U8, _I16, _I32)), "input", g)
    # TFLM's ARG_MAX writes only int32 indices (arg_min_max.cc fails at Eval: "Only int32_t are supported")
    check_dtype(op, t_out, engine_types(op, g, (_I32, _I64), "output"), "output", g)
    axes = _axis(op, g)
    if axes.size != 1:
        refuse(op, f"axis must hold one value, got {axes.size}")
    axis = int(axes[0])
    otype = t_out.dtype.name
    at_prepare(op, K.arg_max_plan, t_in.shape, t_in.dtype, axis, output_type=otype)
    return Prepared(unary_run(op, g, K.arg_max_plan, axis, output_type=otype), {"axis": axis, "output_type": otype})
