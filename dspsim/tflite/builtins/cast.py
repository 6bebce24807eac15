"""CAST between int8, uint8, int16, int32 and float32 (no quantization involved: raw values).

LiteRT (``cast.cc``) takes every pair; TFLM (``micro/kernels/cast.cc``) reads int8, int16, int32 and
float32 (and uint32, bool) and writes int8, int16, int32 and float32: uint8 on either side fails at
Eval. A float32 NaN cast to an integer is the type's maximum under LiteRT and 0 under TFLM.
"""
from __future__ import annotations

import numpy as np

from ...kernels.typecast import CastNaN, cast_plan
from ...engines import Kernel
from ..prepare import Prepared, at_run, builtin, check_arity, check_dtype, engine_types, refuse
from ._lean import planned

_I8, _U8, _I16, _I32, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.float32))


@builtin("CAST")
def prepare_cast(op, g):
    check_arity(op, 1)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    allowed = engine_types(op, g, (_I8, _U8, _I16, _I32, _F32))
    check_dtype(op, t_in, allowed, "input", g)
    check_dtype(op, t_out, allowed, "output", g)
    if tuple(t_in.shape) != tuple(t_out.shape):
        refuse(op, f"input {tuple(t_in.shape)} and output {tuple(t_out.shape)} shapes differ")
    nan = CastNaN.ZERO if g.kernel(op) is Kernel.TFLM else CastNaN.MAX
    dtype = t_out.dtype.name
    run = planned(cast_plan, t_in.dtype, dtype, nan=nan)  # elementwise: the shape is the input's
    return Prepared(lambda inputs: at_run(op, run, inputs[0]), {"dtype": dtype, "nan": nan.value})
