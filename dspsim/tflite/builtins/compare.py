"""The comparison, logical and select builtins: EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL,
LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT, SELECT, SELECT_V2.

Comparisons (bool output, broadcasting): int8 / uint8 / int16 inputs rescaled as TFLite's reference does
(:mod:`dspsim.kernels.arithmetic.compare`), int32 / int64 / bool compared raw. The types each engine's kernel takes
are its profile's ``types`` (tflite-micro ``comparisons.cc``: no uint8; int16 only in GREATER, whose Prepare leaves
the int16 rescaling parameters unset, so tflite-micro's int16 GREATER is refused as undefined; EQUAL / NOT_EQUAL
also on bool). LiteRT rescales int16 only in EQUAL and NOT_EQUAL; its LESS, LESS_EQUAL, GREATER and GREATER_EQUAL
compare int16 codes raw whatever their quantization (``comparisons.cc`` ``LessEval`` ...: ``Comparison<int16_t>``). LOGICAL_*: bool only. SELECT / SELECT_V2: the codes of x or y copied (the condition bool; x, y and
the output one type; LiteRT copies the codes whatever the quantizations); tflite-micro registers SELECT_V2 only.
"""
from __future__ import annotations

import numpy as np

from ...engines import Kernel
from ...kernels import indexing as K
from ...kernels.arithmetic import compare
from ..prepare import (
    Prepared, at_prepare, at_run, builtin, check_dtype, check_shape, engine_types, per_tensor_quant, refuse,
)
from ._lean import planned

_I8, _U8, _I16, _I32, _I64, _F32, _BOOL = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64,
                                                                  np.float32, np.bool_))
_QUANTIZED = (_I8, _U8, _I16)


def _arity(op, n_in):
    if len(op.inputs) != n_in or len(op.outputs) != 1 or min(op.inputs) < 0:
        refuse(op, f"expects {n_in} input(s) and one output, has {len(op.inputs)} and {len(op.outputs)}")


def _binary_lean(op, g, run):
    t_out = g.tensor(op.outputs[0])
    shape = tuple(t_out.shape)

    def lean(inputs):
        y = at_run(op, run, inputs[0], inputs[1])
        return y if y.shape == shape else check_shape(op, y, t_out)

    return lean


@builtin("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")
def prepare_comparison(op, g):
    _arity(op, 2)
    t1, t2, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    check_dtype(op, t1, engine_types(op, g, _QUANTIZED + (_I32, _I64, _BOOL) if op.name in ("EQUAL", "NOT_EQUAL")
                                     else _QUANTIZED + (_I32, _I64)), "input1", g)
    check_dtype(op, t2, (t1.dtype,), "input2")
    check_dtype(op, t_out, (_BOOL,), "output")
    scaling = None
    raw16 = t1.dtype == _I16 and (op.name not in ("EQUAL", "NOT_EQUAL") or t1.scale.size == 0)
    if raw16 and op.name == "NOT_EQUAL" and g.kernel(op) is not Kernel.TFLM:
        refuse(op, "int16 NOT_EQUAL without quantization: LiteRT's comparisons.cc writes no output for it")
    if t1.dtype in _QUANTIZED and not (raw16 and g.kernel(op) is not Kernel.TFLM):
        if g.kernel(op) is Kernel.TFLM and t1.dtype == _I16:  # comparisons.cc: params set for kTfLiteInt8 only
            refuse(op, f"{t1.type_name} inputs: engine {g.profile.name!r}'s Prepare sets the rescaling parameters for "
                       "int8 only and its Eval then reads them unset (undefined)")
        (s1, z1), (s2, z2) = per_tensor_quant(op, t1, "input1"), per_tensor_quant(op, t2, "input2")
        (m1, e1), (m2, e2) = (at_prepare(op, compare.comparison_scaling, s) for s in (s1, s2))
        scaling = ((z1, m1, e1), (z2, m2, e2))
    params = {"op": op.name} if scaling is None else {"op": op.name, "scaling": scaling}
    run = planned(compare.comparison_plan, tuple(t1.shape), tuple(t2.shape), t1.dtype, op.name, scaling)
    return Prepared(_binary_lean(op, g, run), params)


@builtin("LOGICAL_AND", "LOGICAL_OR")
def prepare_logical_binary(op, g):
    _arity(op, 2)
    for k, what in ((0, "input1"), (1, "input2")):
        check_dtype(op, g.tensor(op.inputs[k]), (_BOOL,), what)
    check_dtype(op, g.tensor(op.outputs[0]), (_BOOL,), "output")
    run = planned(compare.logical_plan, tuple(g.tensor(op.inputs[0]).shape), tuple(g.tensor(op.inputs[1]).shape),
                  op.name)
    return Prepared(_binary_lean(op, g, run), {"op": op.name})


@builtin("LOGICAL_NOT")
def prepare_logical_not(op, g):
    _arity(op, 1)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    check_dtype(op, t_in, (_BOOL,), "input")
    check_dtype(op, t_out, (_BOOL,), "output")
    if tuple(t_in.shape) != tuple(t_out.shape):
        refuse(op, f"output shape {tuple(t_out.shape)} differs from the input's {tuple(t_in.shape)}")
    return Prepared(lambda inputs: np.logical_not(inputs[0]), {"op": op.name})


def _select(op, g, fn):
    _arity(op, 3)
    t_c, t_x, t_y, t_out = (g.tensor(i) for i in (*op.inputs, op.outputs[0]))
    check_dtype(op, t_c, (_BOOL,), "condition")
    check_dtype(op, t_x, engine_types(op, g, (_I8, _U8, _I16, _I32, _I64, _F32, _BOOL)), "x", g)
    check_dtype(op, t_y, (t_x.dtype,), "y")
    check_dtype(op, t_out, (t_x.dtype,), "output")
    probe = at_prepare(op, fn, np.zeros(t_c.shape, bool), np.zeros(t_x.shape, t_x.dtype),
                       np.zeros(t_y.shape, t_y.dtype))
    if probe.shape != tuple(t_out.shape):
        refuse(op, f"computes shape {probe.shape}, the model declares {tuple(t_out.shape)}")
    return Prepared(lambda inputs: at_run(op, fn, inputs[0], inputs[1], inputs[2]), {})


@builtin("SELECT")
def prepare_select(op, g):
    return _select(op, g, K.select)


@builtin("SELECT_V2")
def prepare_select_v2(op, g):
    return _select(op, g, K.select_v2)
