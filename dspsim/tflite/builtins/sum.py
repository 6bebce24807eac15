"""SUM (int8; uint8 where the engine takes it), with LiteRT 2.3 BUILTIN_REF's int8 defect where the engine has it.

* the reference kernel (tflite-micro ``reduce_common.cc`` ``EvalSumHelper`` -> ``QuantizedMeanOrSum<int8_t>``):
  the correct sum.
* :attr:`~dspsim.engines.Defect.LITERT_SUM_INT8_AS_UINT8`: LiteRT ``reduce.cc`` ``EvalSum<kReference>`` passes
  ``GetTensorData<uint8_t>`` to ``reference_ops::QuantizedMeanOrSum`` for int8 tensors too: the codes are read
  as bytes and the result clamped to [0, 255] (``reduce_sum(codes_as_uint8=True)``); an
  :class:`~dspsim.engines.EngineDefectWarning` is issued at load.
* ``Kernel.XNNPACK``: LiteRT's XNNPACK delegate takes an int8 SUM with constant int32 axes (``VisitReduceNode``)
  and runs ``sum_nd`` (:func:`dspsim.kernels.reduce.xnnpack_sum`, float requantization).
"""
from __future__ import annotations

import numpy as np

from ...engines import Defect, Kernel
from ...kernels import reduce
from ..prepare import (Prepared, builtin, check_arity, check_int_types, constant, defect, engine_types,
                       fixed_point_multiplier, per_tensor_quant, refuse)
from ._lean import reshaped_run


@builtin("SUM")
def prepare_sum(op, g):
    check_arity(op, 2)
    check_int_types(op, g, allowed=engine_types(op, g, (np.dtype(np.int8), np.dtype(np.uint8))))
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    axes = constant(op, g, 1, "axis")
    if axes is None or axes.dtype != np.int32:
        refuse(op, "axis must be a constant int32 tensor")
    axes = axes.reshape(-1)
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    keep = bool(op.options.get("keep_dims", 0))
    int8 = t_in.dtype == np.int8
    if g.kernel(op) is Kernel.XNNPACK and int8 and axes.size > 0:
        q = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo, keep_dims=keep)
        return Prepared(reshaped_run(op, g, reduce.xnnpack_sum_plan, axes, **q), q)
    m, s = fixed_point_multiplier(op, np.float64(s_in) / np.float64(s_out))  # PrepareMeanOrSum: double quotient
    as_uint8 = int8 and defect(op, g, Defect.LITERT_SUM_INT8_AS_UINT8, "LiteRT 2.3's reference int8 SUM reads the "
                                                                       "codes as uint8 and clamps the result to [0, 255]")
    q = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, keep_dims=keep, codes_as_uint8=as_uint8)
    return Prepared(reshaped_run(op, g, reduce.reduce_sum_plan, axes, **q), q)
