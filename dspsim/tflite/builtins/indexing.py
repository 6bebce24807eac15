"""Data-movement builtins beyond :mod:`.data_movement`: REVERSE_V2, FILL, ZEROS_LIKE, SPACE_TO_BATCH_ND,
BATCH_TO_SPACE_ND, BROADCAST_TO, GATHER_ND, EMBEDDING_LOOKUP, DYNAMIC_UPDATE_SLICE
(:mod:`dspsim.kernels.indexing`).

Codes are copied, quantization carried unchanged; the engines differ in the types they take (``TfliteProfile.types``)
and in two values: SPACE_TO_BATCH_ND's padding holds the output zero point in LiteRT (``space_to_batch_nd.cc`` sets
``output_offset``) and code 0 in tflite-micro (``Kernel.TFLM``: its ``SpaceToBatchParams`` stay zero), and
ZEROS_LIKE writes code 0 (not the zero point) in every engine that runs it. REVERSE_V2 with axes that are not
contiguous is refused by both engines' kernels ("Non-contiguous `axes` not supported"). EMBEDDING_LOOKUP's hybrid
form (int8 values, float32 output) is not taken.
"""
from __future__ import annotations

import numpy as np

from ...engines import Kernel
from ...kernels import indexing as K
from ...kernels._plan import index_plan
from ..prepare import (
    Prepared, at_prepare, at_run, builtin, check_dtype, check_shape, constant, engine_types, per_tensor_quant, refuse,
)

_I8, _U8, _I16, _I32, _I64, _F32, _BOOL = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64,
                                                                  np.float32, np.bool_))
_ANY = (_I8, _U8, _I16, _I32, _I64, _F32, _BOOL)


def _arity(op, n_in):
    if len(op.inputs) != n_in or len(op.outputs) != 1 or min(op.inputs) < 0:
        refuse(op, f"expects {n_in} inputs and one output, has {len(op.inputs)} and {len(op.outputs)}")


def _data(op, g, k=0, out=True, allowed=_ANY):
    """The data input ``k``'s tensor, its type one the engine's kernel takes, the output of the same type."""
    t = g.tensor(op.inputs[k])
    check_dtype(op, t, engine_types(op, g, allowed), "input", g)
    if out:
        check_dtype(op, g.tensor(op.outputs[0]), (t.dtype,), "output")
    return t


def _ints(op, g, k, what):
    v = constant(op, g, k, what)
    if v is None or v.dtype not in (_I32, _I64):
        refuse(op, f"{what} must be a constant int32 or int64 tensor")
    return v


def _moved(op, g, fn, shapes, *args):
    """``fn``'s index rule as a flat index map (:func:`dspsim.kernels._plan.index_plan`), its output shape checked
    against the model's at load."""
    run, (shape,) = at_prepare(op, index_plan, fn, shapes, *args)
    if shape != tuple(g.tensor(op.outputs[0]).shape):
        refuse(op, f"computes shape {shape}, the model declares {tuple(g.tensor(op.outputs[0]).shape)}")
    return run


@builtin("REVERSE_V2")
def prepare_reverse_v2(op, g):
    _arity(op, 2)
    t = _data(op, g)
    axes = _ints(op, g, 1, "axis").reshape(-1)
    norm = sorted(int(a) % max(len(t.shape), 1) for a in axes)
    if norm and norm != list(range(norm[0], norm[0] + len(norm))):
        refuse(op, f"axes {axes.tolist()} are not contiguous: the REVERSE_V2 kernels refuse them (\"Non-contiguous "
                   "`axes` not supported\")")
    run = _moved(op, g, K.reverse_v2, tuple(t.shape), axes)
    return Prepared(lambda inputs: run(inputs[0]), {"axis": axes})


@builtin("FILL")
def prepare_fill(op, g):
    _arity(op, 2)
    dims = _ints(op, g, 0, "dims").reshape(-1)
    t_v, t_out = g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    check_dtype(op, t_v, engine_types(op, g, _ANY), "value", g)
    check_dtype(op, t_out, (t_v.dtype,), "output")
    if int(np.prod(t_v.shape)) != 1:
        refuse(op, f"value must hold one element, has shape {tuple(t_v.shape)}")
    shape = tuple(int(d) for d in dims)
    if shape != tuple(t_out.shape):
        refuse(op, f"dims {list(shape)} differ from the output's shape {tuple(t_out.shape)}")
    if g.kernel(op) is not Kernel.TFLM and t_v.dtype in (_I8, _U8, _I16) and t_v.scale.size and t_out.scale.size:
        q = per_tensor_quant(op, t_v, "value")
        if q != per_tensor_quant(op, t_out, "output"):
            refuse(op, "the value's scale and zero point must be the output's (LiteRT fill.cc)")
        if t_v.dtype == _I16 and q[1] != 0:
            refuse(op, f"int16 FILL needs zero point 0, got {q[1]} (LiteRT fill.cc)")
    return Prepared(lambda inputs: np.full(shape, inputs[1].reshape(-1)[0], t_out.dtype), {"dims": dims})


@builtin("ZEROS_LIKE")
def prepare_zeros_like(op, g):
    _arity(op, 1)
    t = _data(op, g, allowed=(_I64, _I32, _F32))  # LiteRT zeros_like.cc; tflite-micro also int8 (its profile)
    shape = tuple(t.shape)
    if shape != tuple(g.tensor(op.outputs[0]).shape):
        refuse(op, "output shape differs from the input's")
    return Prepared(lambda inputs: np.zeros(shape, t.dtype), {})


def _block_op(op, g):
    _arity(op, 3)
    t = _data(op, g)
    if len(t.shape) not in (3, 4):
        refuse(op, f"input rank {len(t.shape)}: the kernels take rank 3 or 4")
    if t.dtype in (_I8, _U8, _I16) and g.kernel(op) is not Kernel.TFLM:  # LiteRT's Prepare checks; TFLM's does not
        q = per_tensor_quant(op, t, "input")
        if q != per_tensor_quant(op, g.tensor(op.outputs[0]), "output"):
            refuse(op, "the output's scale and zero point must be the input's (LiteRT)")
        if t.dtype == _I16 and q[1] != 0:
            refuse(op, f"int16 {op.name} needs zero point 0, got {q[1]} (LiteRT)")
    return t, _ints(op, g, 1, "block_shape").reshape(-1), _ints(op, g, 2, "paddings or crops")


@builtin("SPACE_TO_BATCH_ND")
def prepare_space_to_batch_nd(op, g):
    t, block, pads = _block_op(op, g)
    pad = 0
    if t.dtype in (_I8, _U8, _I16) and g.kernel(op) is not Kernel.TFLM:  # LiteRT: output_offset = the zero point
        pad = per_tensor_quant(op, g.tensor(op.outputs[0]), "output")[1]
    run = _moved(op, g, K.space_to_batch_nd, [tuple(t.shape), ()], block, pads)
    value = np.array(pad, t.dtype)
    return Prepared(lambda inputs: run([inputs[0], value]), {"block_shape": block, "paddings": pads, "pad_value": pad})


@builtin("BATCH_TO_SPACE_ND")
def prepare_batch_to_space_nd(op, g):
    t, block, crops = _block_op(op, g)
    run = _moved(op, g, K.batch_to_space_nd, tuple(t.shape), block, crops)
    return Prepared(lambda inputs: run(inputs[0]), {"block_shape": block, "crops": crops})


@builtin("BROADCAST_TO")
def prepare_broadcast_to(op, g):
    _arity(op, 2)
    t = _data(op, g)
    shape = _ints(op, g, 1, "shape").reshape(-1)
    if len(shape) > 8:
        refuse(op, f"output rank {len(shape)} exceeds 8 (broadcast_to.cc: kMaxDims)")
    run = _moved(op, g, K.broadcast_to, tuple(t.shape), shape)
    return Prepared(lambda inputs: run(inputs[0]), {"shape": shape})


def _checked(op, g, fn):
    t_out = g.tensor(op.outputs[0])
    shape = tuple(t_out.shape)
    probe = at_prepare(op, fn, *[np.zeros(g.tensor(i).shape, g.tensor(i).dtype) for i in op.inputs])
    if probe.shape != shape:
        refuse(op, f"computes shape {probe.shape}, the model declares {shape}")

    def run(inputs):  # the positions are data: the kernel checks them on every call
        y = at_run(op, fn, *inputs)
        return y if y.shape == shape else check_shape(op, y, t_out)

    return Prepared(run, {})


@builtin("GATHER_ND")
def prepare_gather_nd(op, g):
    _arity(op, 2)
    _data(op, g)
    check_dtype(op, g.tensor(op.inputs[1]), engine_types(op, g, (_I16, _I32, _I64), "indices"), "indices", g)
    return _checked(op, g, K.gather_nd)


@builtin("EMBEDDING_LOOKUP")
def prepare_embedding_lookup(op, g):
    _arity(op, 2)
    check_dtype(op, g.tensor(op.inputs[0]), (_I32,), "lookup")
    _data(op, g, k=1)
    return _checked(op, g, K.embedding_lookup)


@builtin("DYNAMIC_UPDATE_SLICE")
def prepare_dynamic_update_slice(op, g):
    _arity(op, 3)
    t = _data(op, g)
    check_dtype(op, g.tensor(op.inputs[1]), (t.dtype,), "update")
    check_dtype(op, g.tensor(op.inputs[2]), (_I32, _I64), "start_indices")
    return _checked(op, g, K.dynamic_update_slice)
