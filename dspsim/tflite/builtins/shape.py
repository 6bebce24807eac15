"""RESHAPE, SQUEEZE, PAD / PADV2 and CONCATENATION: data movement without arithmetic."""
from __future__ import annotations

import numpy as np

from ...kernels import elementwise
from ..prepare import (Prepared, at_run, builtin, check_arity, check_dtype, check_int_types, check_shape, constant,
                       per_tensor_quant, refuse)
from ._lean import planned, unary_run

_QTYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


def _same_elements(op, g):
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    if t_in.dtype != t_out.dtype:
        refuse(op, "input and output types differ")
    if int(np.prod(t_in.shape)) != int(np.prod(t_out.shape)):
        refuse(op, f"input {t_in.shape} and output {t_out.shape} differ in size")
    return Prepared(lambda inputs: inputs[0].reshape(t_out.shape))


@builtin("RESHAPE")
def prepare_reshape(op, g):
    check_arity(op, (1, 2))
    return _same_elements(op, g)


@builtin("SQUEEZE")
def prepare_squeeze(op, g):
    check_arity(op, 1)
    return _same_elements(op, g)


@builtin("PAD", "PADV2")
def prepare_pad(op, g):
    check_arity(op, (2, 3))
    check_int_types(op, g, allowed=_QTYPES)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    pads = constant(op, g, 1, "paddings")
    if pads is None or pads.dtype.kind != "i" or pads.shape != (len(t_in.shape), 2) or (pads < 0).any():
        refuse(op, f"paddings must be a constant non-negative int ({len(t_in.shape)}, 2) tensor")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    value = zo
    if len(op.inputs) == 3 and op.inputs[2] >= 0:  # PADV2: constant_values in the output's quantization
        cv = constant(op, g, 2, "constant_values")
        t_cv = g.tensor(op.inputs[2])
        if cv.size != 1 or cv.dtype != t_out.dtype or per_tensor_quant(op, t_cv, "constant_values") != (s_out, zo):
            refuse(op, "constant_values must be one value with the output's type, scale and zero point")
        value = int(cv.reshape(-1)[0])
    elif not np.iinfo(t_out.dtype).min <= zo <= np.iinfo(t_out.dtype).max:
        refuse(op, f"output zero point {zo} lies outside {t_out.type_name}")
    return Prepared(unary_run(op, g, elementwise.pad_plan, pads, value), {"paddings": pads, "pad_value": value})


@builtin("CONCATENATION")
def prepare_concatenation(op, g):
    if not op.inputs or len(op.outputs) != 1 or min(op.inputs) < 0:
        refuse(op, "expects at least one input and one output")
    t_out = g.tensor(op.outputs[0])
    check_dtype(op, t_out, (np.dtype(np.int8), np.dtype(np.int16)), "output")
    if op.options.get("fused_activation_function", 0) != 0:
        refuse(op, "a fused activation is not allowed on CONCATENATION")
    q_out = per_tensor_quant(op, t_out, "output")
    for i in op.inputs:
        t = g.tensor(i)
        check_dtype(op, t, (t_out.dtype,), "input")
        q_in = per_tensor_quant(op, t, "input")
        if t.dtype == np.int16:  # both engines copy int16 codes whatever the scales; zero points must be 0
            if q_in[1] != 0 or q_out[1] != 0:
                refuse(op, f"int16 CONCATENATION needs zero points 0, got {q_in[1]} (input tensor {i}) and {q_out[1]}")
        elif q_in != q_out:
            refuse(op, f"input tensor {i} has scale {float(q_in[0]):.9g}, zero point {q_in[1]}, the output scale "
                       f"{float(q_out[0]):.9g}, zero point {q_out[1]}; LiteRT's int8 CONCATENATION does not rescale")
    axis = op.options.get("axis", 0)
    run = planned(elementwise.concatenation_plan, [tuple(g.tensor(i).shape) for i in op.inputs],
                  [g.tensor(i).dtype for i in op.inputs], axis)
    shape = tuple(t_out.shape)

    def lean(inputs):
        y = at_run(op, run, inputs)
        return y if y.shape == shape else check_shape(op, y, t_out)

    return Prepared(lean, {"axis": axis})
