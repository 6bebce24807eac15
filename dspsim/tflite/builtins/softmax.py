"""SOFTMAX (int8 or int16, any rank, any beta) and LOG_SOFTMAX: the reference kernels of LiteRT BUILTIN_REF and TFLM.

Sources: LiteRT ``tflite/kernels/activations.cc`` (SoftmaxPrepare), tflite-micro
``micro/kernels/softmax_common.cc`` (CalculateSoftmaxParams: ``Kernel.TFLM``, an exact int8 output scale and its
own int16 parameters). ``Kernel.LITERT_OPTIMIZED`` (LiteRT's default interpreter) runs int8 SOFTMAX and
LOG_SOFTMAX on ``optimized_ops::Softmax`` / ``LogSoftmax`` (float32 exp tables; the XNNPACK delegate takes float32
softmax only): docs/engines.md, "Nonlinear operators".
"""
from __future__ import annotations

import numpy as np

from ...kernels.softmax import (Int16SoftmaxPrepare, log_softmax, optimized_log_softmax, optimized_softmax,
                               optimized_softmax_table, softmax, tflite_int16_softmax_params, tflite_log_softmax_params,
                               tflite_softmax_params)
from ...engines import Kernel
from ..prepare import (Prepared, at_prepare, at_run, builtin, check_arity, check_dtype, check_int_types,
                       check_last_axis, per_tensor_quant, refuse)

_INT8 = (np.dtype(np.int8),)
_INT16 = (np.dtype(np.int16),)


@builtin("SOFTMAX")
def prepare_softmax(op, g):
    check_arity(op, 1)
    check_last_axis(op, g.tensor(op.inputs[0]))
    if check_dtype(op, g.tensor(op.inputs[0]), _INT8 + _INT16, "input") == np.int16:
        return _prepare_int16_softmax(op, g)
    out_dtype = check_dtype(op, g.tensor(op.outputs[0]), (np.dtype(np.int8), np.dtype(np.int16)), "output")
    s_in, _ = per_tensor_quant(op, g.tensor(op.inputs[0]), "input")
    s_out, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    want = np.float32(1.0 / 256) if out_dtype == np.int8 else np.float32(1.0 / 65536)
    near = abs(s_out - want) <= np.float32(0.001) * want
    tflm = g.kernel(op) is Kernel.TFLM
    if out_dtype == np.int8 and (zo != -128 or not (s_out == want if tflm else near)):
        rule = "exactly" if tflm else "within 0.1%"
        refuse(op, f"an int8 output needs zero point -128 and scale 1/256 ({rule}), got {zo} and {float(s_out)!r} "
                   "(TFLM softmax_common.cc; LiteRT activations.cc SoftmaxPrepare)")
    if out_dtype == np.int16 and tflm and (zo != -32768 or not near):
        refuse(op, f"TFLM needs an int16 output with zero point -32768 and scale 1/65536 within 0.1%, got {zo} and "
                   f"{float(s_out)!r} (softmax_common.cc)")
    beta = float(np.float32(op.options.get("beta", 1.0)))
    if g.kernel(op) is Kernel.LITERT_OPTIMIZED:  # float32 exp table, the output zero point used
        table = at_prepare(op, optimized_softmax_table, input_scale=float(s_in), beta=beta)
        kq = dict(table=table, output_scale=float(s_out), output_zero_point=zo, out_dtype=np.dtype(out_dtype).name)
        return Prepared(lambda inputs: at_run(op, optimized_softmax, inputs[0], **kq), kq)
    params = at_prepare(op, tflite_softmax_params, input_scale=float(s_in), beta=beta)
    kq = dict(params=params, out_dtype=np.dtype(out_dtype).name)
    return Prepared(lambda inputs: at_run(op, softmax, inputs[0], **kq), kq)


def _prepare_int16_softmax(op, g):
    """int16 in and out (``SoftmaxInt16``): input and output zero point 0, output scale 1/32768 within 0.1%
    (both engines; LiteRT's default interpreter runs the same Prepare and kernel, XNNPACK takes no int16
    softmax). LiteRT would run an int16 input into an int8 output out of bounds; refused."""
    check_dtype(op, g.tensor(op.outputs[0]), _INT16, "output")
    s_in, zi = per_tensor_quant(op, g.tensor(op.inputs[0]), "input")
    s_out, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    want = np.float32(1.0 / 32768)
    if zi != 0 or zo != 0 or not abs(s_out - want) <= np.float32(0.001) * want:
        refuse(op, f"an int16 softmax needs input and output zero point 0 and output scale 1/32768 within 0.1%, "
                   f"got {zi}, {zo} and {float(s_out)!r} (LiteRT activations.cc SoftmaxPrepare; TFLM "
                   "softmax_common.cc)")
    prepare = Int16SoftmaxPrepare.TFLM if g.kernel(op) is Kernel.TFLM else Int16SoftmaxPrepare.LITERT
    params = at_prepare(op, tflite_int16_softmax_params, input_scale=float(s_in),
                        beta=float(np.float32(op.options.get("beta", 1.0))), prepare=prepare)
    return Prepared(lambda inputs: at_run(op, softmax, inputs[0], params=params), dict(params=params))


@builtin("LOG_SOFTMAX")
def prepare_log_softmax(op, g):
    check_arity(op, 1)
    check_last_axis(op, g.tensor(op.inputs[0]))
    check_int_types(op, g, allowed=_INT8)
    s_in, _ = per_tensor_quant(op, g.tensor(op.inputs[0]), "input")
    s_out, zo = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")
    if float(s_out) != 16.0 / 256 or zo != 127:
        refuse(op, f"the int8 output must have scale 16/256 and zero point 127, got {float(s_out)!r} and {zo} "
                   "(LogSoftmaxPrepare; TFLM log_softmax.cc)")
    if g.kernel(op) is Kernel.LITERT_OPTIMIZED:  # float32 exp table, logf, rint
        table = at_prepare(op, optimized_softmax_table, input_scale=float(s_in), beta=1.0)
        kq = dict(table=table, input_scale=float(s_in), output_scale=float(s_out), output_zero_point=zo)
        return Prepared(lambda inputs: at_run(op, optimized_log_softmax, inputs[0], **kq), kq)
    params = at_prepare(op, tflite_log_softmax_params, input_scale=float(s_in))
    return Prepared(lambda inputs: at_run(op, log_softmax, inputs[0], params=params), dict(params=params))
