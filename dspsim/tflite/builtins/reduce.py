"""The reduce family's builtins: MEAN, SUM, REDUCE_MAX, ARG_MAX.

MEAN (int8 / uint8 / int16: the same QuantizedMeanOrSum, int32 sum).

SUM (int8, int16; uint8 where the engine takes it), with LiteRT 2.3 BUILTIN_REF's int8 defect where the engine has
it (its int16 SUM reads bytes too and half-writes the output: refused).

* the reference kernel (tflite-micro ``reduce_common.cc`` ``EvalSumHelper`` -> ``QuantizedMeanOrSum<int8_t>``):
  the correct sum.
* :attr:`~dspsim.engines.Defect.LITERT_SUM_INT8_AS_UINT8`: LiteRT ``reduce.cc`` ``EvalSum<kReference>`` passes
  ``GetTensorData<uint8_t>`` to ``reference_ops::QuantizedMeanOrSum`` for int8 tensors too: the codes are read
  as bytes and the result clamped to [0, 255] (``reduce_sum(codes_as_uint8=True)``); an
  :class:`~dspsim.engines.EngineDefectWarning` is issued at load.
* ``Kernel.XNNPACK``: LiteRT's XNNPACK delegate takes an int8 SUM with constant int32 axes (``VisitReduceNode``)
  and runs ``sum_nd`` (:func:`dspsim.kernels.reduce.sum.xnnpack_sum`, float requantization).

REDUCE_MAX and ARG_MAX: selections of codes, the same integers under every engine.

LiteRT (``reduce.cc``) and TFLM (``reduce_common.cc``) both require the input's scale and zero point
on REDUCE_MAX's output; XNNPACK's delegated max is the same selection. TFLM's ARG_MAX writes only
int32 indices (``arg_min_max.cc`` fails at Eval for int64: "Only int32_t are supported currently")
and reads only float32 and int8; TFLM's REDUCE_MAX reads float32 and int8.
"""
from __future__ import annotations

import numpy as np

from ...engines import Kernel, Defect
from ...kernels.reduce import mean, sum as reduce, select as K
from ..prepare import (
    Prepared, builtin, check_arity, check_int_types, constant, fixed_point_multiplier, per_tensor_quant, refuse,
    defect, engine_types, at_prepare, at_run, check_dtype,
)
from ._lean import reshaped_run, unary_run


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
    if g.kernel(op) is Kernel.XNNPACK and t_in.dtype in (np.int8, np.uint8):  # qs8 / qu8 mean_nd
        q = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo, keep_dims=keep)
        return Prepared(reshaped_run(op, g, mean.xnnpack_mean_plan, axes, **q), q)
    spatial = len(t_in.shape) == 4 and sorted(int(a) % 4 for a in axes) == [1, 2] and len(axes) == 2
    if g.kernel(op) is Kernel.LITERT_OPTIMIZED and t_in.dtype in (np.int8, np.uint8) and keep and spatial:
        q = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
        run = at_prepare(op, mean.litert_optimized_mean_plan, tuple(t_in.shape), t_in.dtype, **q)
        return Prepared(lambda inputs: at_run(op, run, inputs[0]), dict(q, kernel="optimized spatial mean"))
    m, s = fixed_point_multiplier(op, np.float64(s_in) / np.float64(s_out))  # PrepareMeanOrSum: double quotient
    q = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, keep_dims=keep)
    return Prepared(reshaped_run(op, g, mean.mean_plan, axes, **q), q)


@builtin("SUM")
def prepare_sum(op, g):
    check_arity(op, 2)
    check_int_types(op, g, allowed=engine_types(op, g, (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))))
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    axes = constant(op, g, 1, "axis")
    if axes is None or axes.dtype != np.int32:
        refuse(op, "axis must be a constant int32 tensor")
    axes = axes.reshape(-1)
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    keep = bool(op.options.get("keep_dims", 0))
    int8, int16, kernel = t_in.dtype == np.int8, t_in.dtype == np.int16, g.kernel(op)
    if int16 and Defect.LITERT_SUM_INT8_AS_UINT8 in g.profile.defects:
        refuse(op, "LiteRT's reference int16 SUM reads the int16 input as uint8 bytes and writes half of the output "
                   "(reduce.cc QuantizedMeanOrSum<uint8_t>): undefined")
    if int16 and kernel in (Kernel.LITERT_OPTIMIZED, Kernel.XNNPACK) and (zi, zo) != (0, 0):
        refuse(op, f"LiteRT's int16 SUM needs zero points 0 (reduce.cc), got {zi} and {zo}")
    if kernel is Kernel.XNNPACK and int8 and axes.size > 0:
        q = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo, keep_dims=keep)
        return Prepared(reshaped_run(op, g, reduce.xnnpack_sum_plan, axes, **q), q)
    # the float QuantizedMeanOrSum; XNNPACK leaves an int16 SUM to it
    if (kernel is Kernel.LITERT_OPTIMIZED and int8) or (kernel in (Kernel.LITERT_OPTIMIZED, Kernel.XNNPACK) and int16):
        q = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo, keep_dims=keep)
        return Prepared(reshaped_run(op, g, reduce.litert_optimized_sum_plan, axes, **q), q)
    m, s = fixed_point_multiplier(op, np.float64(s_in) / np.float64(s_out))  # PrepareMeanOrSum: double quotient
    as_uint8 = int8 and defect(op, g, Defect.LITERT_SUM_INT8_AS_UINT8, "LiteRT 2.3's reference int8 SUM reads the "
                                                                       "codes as uint8 and clamps the result to [0, 255]")
    q = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, keep_dims=keep, codes_as_uint8=as_uint8)
    return Prepared(reshaped_run(op, g, reduce.reduce_sum_plan, axes, **q), q)


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
