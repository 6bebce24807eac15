"""The data-movement family's builtins: copies of codes (STRIDED_SLICE ... DEPTH_TO_SPACE, RESHAPE, SQUEEZE, PAD,
CONCATENATION).

STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, TRANSPOSE, GATHER, PACK, UNPACK, MIRROR_PAD, SPACE_TO_DEPTH and
DEPTH_TO_SPACE: copies of codes, quantization carried unchanged (no engine rescales here).

The values are the same under every engine (LiteRT's XNNPACK delegate takes TRANSPOSE, SLICE,
STRIDED_SLICE, SPLIT, SPACE_TO_DEPTH and DEPTH_TO_SPACE, and copies too); what differs is what each
engine accepts, which its profile declares: TFLM's kernels (``tensorflow/lite/micro/kernels/*.cc``) take fewer
types and ranks (``TfliteProfile.types``, ``max_ranks``), TFLM's STRIDED_SLICE (``Kernel.TFLM``) ignores the
ellipsis and new-axis masks and ``offset`` (``strided_slice_common.cc`` builds its parameters without them), and
LiteRT's BUILTIN_REF resolver registers only version 1 of DEPTH_TO_SPACE (``register_ref.cc``,
``TfliteProfile.max_versions``) while the converter writes version 2 for int8.

RESHAPE, SQUEEZE, PAD / PADV2 and CONCATENATION: data movement without arithmetic.
"""
from __future__ import annotations

import numpy as np

from ...engines import Kernel
from ...kernels import data_movement as K, data_movement
from ...kernels._plan import index_plan, index_views
from ..prepare import (
    Prepared, at_prepare, at_run, builtin, check_arity, check_dtype, check_rank, check_shape, constant, engine_types,
    refuse, check_int_types, per_tensor_quant,
)
from ._lean import planned, unary_run


_I8, _U8, _I16, _I32, _I64, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64,
                                                            np.float32))
_ANY_TYPE = (_I8, _U8, _I16, _I32, _I64, _F32)  # LiteRT's kernels copy every type


def _types(op, g, data_inputs=(0,)):
    """Check that the data inputs and every output share one type the engine's kernel takes
    (``TfliteProfile.types``; the rest fail at TFLM's Eval: "Type ... not supported"), and the engine's rank
    limit."""
    t_out = g.tensor(op.outputs[0])
    allowed = engine_types(op, g, _ANY_TYPE)
    if t_out.dtype not in allowed:
        refuse(op, f"output type {t_out.type_name} is not supported by the kernel of engine {g.profile.name!r}; "
                   f"supported: {', '.join(d.name for d in allowed)}")
    for k in data_inputs:
        check_dtype(op, g.tensor(op.inputs[k]), (t_out.dtype,), "input")
    for o in op.outputs:
        check_dtype(op, g.tensor(o), (t_out.dtype,), "output")
    t_in = g.tensor(op.inputs[data_inputs[0]])
    check_rank(op, g, t_in)
    return t_in


def _int_constant(op, g, k, what):
    v = constant(op, g, k, what)
    if v is None or v.dtype.kind != "i":
        refuse(op, f"{what} must be a constant int tensor")
    return v


def _check_outputs(op, g, shapes):
    """Check the output shapes that the kernel computes at load against the model's."""
    if len(shapes) != len(op.outputs):
        refuse(op, f"computes {len(shapes)} outputs, the model declares {len(op.outputs)}")
    for y, o in zip(shapes, op.outputs):
        if y != tuple(g.tensor(o).shape):
            refuse(op, f"computes shape {y} for output tensor {o}, the model declares {tuple(g.tensor(o).shape)}")
        if not g.tflite.allocates_empty_tensors and int(np.prod(y)) == 0:
            refuse(op, f"output tensor {o} has no element: the allocator of engine {g.profile.name!r} fails on it")


def _moved(op, g, fn, *args, data=0, **kw):
    """The lean ``run(inputs)`` of a data-movement op: ``fn``'s index rules turned into flat index maps
    at load (:func:`dspsim.kernels._plan.index_plan`; its refusals are load refusals), the output shapes
    checked against the model's there; each run is one ``np.take`` (or window copy) per output."""
    t_in = g.tensor(op.inputs[data])
    run, shapes = at_prepare(op, index_plan, fn, tuple(t_in.shape), *args, **kw)
    _check_outputs(op, g, shapes)
    return lambda inputs: run(inputs[data])


def _windowed(op, g, fn, params, *args, data=0, **kw):
    """The :class:`Prepared` of a slicing op: :func:`_moved`'s copying run, and, where every output is a
    window of the input, the run giving views (:func:`dspsim.kernels._plan.index_views`)."""
    run = _moved(op, g, fn, *args, data=data, **kw)
    views = index_views(fn, tuple(g.tensor(op.inputs[data]).shape), *args, **kw)
    return Prepared(run, params, None if views is None else (lambda inputs: views(inputs[data])))


@builtin("STRIDED_SLICE")
def prepare_strided_slice(op, g):
    check_arity(op, 4)
    t_in = _types(op, g)
    begin = _int_constant(op, g, 1, "begin")
    end = _int_constant(op, g, 2, "end")
    strides = _int_constant(op, g, 3, "strides")
    o = op.options
    kw = dict(begin_mask=o.get("begin_mask", 0), end_mask=o.get("end_mask", 0),
              ellipsis_mask=o.get("ellipsis_mask", 0), new_axis_mask=o.get("new_axis_mask", 0),
              shrink_axis_mask=o.get("shrink_axis_mask", 0), offset=bool(o.get("offset", 0)))
    if g.kernel(op) is Kernel.TFLM:
        if begin.size != len(t_in.shape):
            refuse(op, f"begin has {begin.size} entries for a rank-{len(t_in.shape)} input: TFLM's StridedSlice "
                       "reads one per input dimension (strided_slice_common.cc)")
        # TFLM builds its parameters without these three (strided_slice_common.cc): ignored, and its
        # output shape check then refuses the model where they mattered
        kw.update(ellipsis_mask=0, new_axis_mask=0, offset=False)
    return _windowed(op, g, K.strided_slice, dict(begin=begin, end=end, strides=strides, **kw), begin, end, strides,
                     **kw)


@builtin("SLICE")
def prepare_slice(op, g):
    check_arity(op, 3)
    _types(op, g)
    begin = _int_constant(op, g, 1, "begin")
    size = _int_constant(op, g, 2, "size")
    return _windowed(op, g, K.slice_tensor, {"begin": begin, "size": size}, begin, size)


def _scalar_axis(op, g, k):
    a = _int_constant(op, g, k, "axis")
    if a.size != 1:
        refuse(op, f"axis must hold one value, got {a.size}")
    return int(a.reshape(-1)[0])


@builtin("SPLIT")
def prepare_split(op, g):
    if len(op.inputs) != 2 or not op.outputs:
        refuse(op, f"expects 2 inputs (axis, input) and at least one output, has {len(op.inputs)} and "
                   f"{len(op.outputs)}")
    _types(op, g, data_inputs=(1,))
    axis = _scalar_axis(op, g, 0)
    n = op.options.get("num_splits", 0)
    if n != len(op.outputs):
        refuse(op, f"num_splits {n} differs from the {len(op.outputs)} outputs")
    return _windowed(op, g, K.split, {"axis": axis, "num_splits": n}, axis, n, data=1)


@builtin("SPLIT_V")
def prepare_split_v(op, g):
    if len(op.inputs) != 3 or not op.outputs:
        refuse(op, f"expects 3 inputs (input, size_splits, axis) and at least one output, has {len(op.inputs)} and "
                   f"{len(op.outputs)}")
    _types(op, g)
    sizes = _int_constant(op, g, 1, "size_splits")
    axis = _scalar_axis(op, g, 2)
    if sizes.size != len(op.outputs):
        refuse(op, f"size_splits has {sizes.size} entries for {len(op.outputs)} outputs")
    return _windowed(op, g, K.split_v, {"size_splits": sizes, "axis": axis}, sizes, axis)


@builtin("TRANSPOSE")
def prepare_transpose(op, g):
    check_arity(op, 2)
    _types(op, g)
    perm = _int_constant(op, g, 1, "perm")
    run = _moved(op, g, K.transpose, perm)  # the index rules checked on the model's shapes
    swap = K.batched_swap_plan(tuple(g.tensor(op.inputs[0]).shape), perm)
    return Prepared(run if swap is None else (lambda inputs: swap(inputs[0])), {"perm": perm})


@builtin("GATHER")
def prepare_gather(op, g):
    check_arity(op, 2)
    t_in = _types(op, g)
    t_idx = g.tensor(op.inputs[1])
    check_dtype(op, t_idx, engine_types(op, g, (_I32, _I64, np.dtype(np.int16)), "positions"), "positions", g)
    axis, bd = op.options.get("axis", 0), op.options.get("batch_dims", 0)
    probe = np.zeros(t_idx.shape, t_idx.dtype)
    _check_outputs(op, g, (at_prepare(op, K.gather, np.zeros(t_in.shape, t_in.dtype), probe, axis, bd).shape,))
    t_out = g.tensor(op.outputs[0])

    def run(inputs):  # the positions are data: the kernel checks them on every call
        return check_shape(op, at_run(op, K.gather, inputs[0], inputs[1], axis, bd), t_out)

    positions = t_idx.data
    if positions is not None:  # constant positions: an index map, unless a caller gives others (run_operator)
        try:
            lean, _ = index_plan(K.gather, tuple(t_in.shape), positions, axis, bd)
        except ValueError:  # an out-of-range constant position: refused on the data, at run time, as before
            lean = None
        if lean is not None:
            return Prepared(lambda inputs: lean(inputs[0]) if inputs[1] is positions else run(inputs),
                            {"axis": axis, "batch_dims": bd})
    return Prepared(run, {"axis": axis, "batch_dims": bd})


@builtin("PACK")
def prepare_pack(op, g):
    n = op.options.get("values_count", 0)
    if len(op.inputs) != n or n < 1 or len(op.outputs) != 1 or min(op.inputs) < 0:
        refuse(op, f"values_count {n} must equal the number of inputs ({len(op.inputs)}), with one output")
    t_in = _types(op, g, data_inputs=tuple(range(n)))
    axis = op.options.get("axis", 0)
    run, shapes = at_prepare(op, index_plan, K.pack, [tuple(t_in.shape)] * n, axis)
    _check_outputs(op, g, shapes)
    return Prepared(run, {"axis": axis})


@builtin("UNPACK")
def prepare_unpack(op, g):
    if len(op.inputs) != 1 or not op.outputs:
        refuse(op, f"expects one input and at least one output, has {len(op.inputs)} and {len(op.outputs)}")
    _types(op, g)
    axis, num = op.options.get("axis", 0), op.options.get("num", 0)
    return Prepared(_moved(op, g, K.unpack, axis, num), {"axis": axis, "num": num})


@builtin("MIRROR_PAD")
def prepare_mirror_pad(op, g):
    check_arity(op, 2)
    _types(op, g)
    pads = _int_constant(op, g, 1, "paddings")
    mode = op.options.get("mode", 0)
    if mode not in (0, 1):
        refuse(op, f"mode {mode} is not REFLECT (0) or SYMMETRIC (1)")
    mode = K.MirrorPadMode(mode)
    return Prepared(_moved(op, g, K.mirror_pad, pads, mode), {"paddings": pads, "mode": mode.name})


@builtin("SPACE_TO_DEPTH")
def prepare_space_to_depth(op, g):
    check_arity(op, 1)
    _types(op, g)
    bs = op.options.get("block_size", 0)
    return Prepared(_moved(op, g, K.space_to_depth, bs), {"block_size": bs})


@builtin("DEPTH_TO_SPACE")
def prepare_depth_to_space(op, g):
    check_arity(op, 1)
    _types(op, g)
    bs = op.options.get("block_size", 0)
    return Prepared(_moved(op, g, K.depth_to_space, bs), {"block_size": bs})


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
    return Prepared(unary_run(op, g, data_movement.pad_plan, pads, value), {"paddings": pads, "pad_value": value})


@builtin("CONCATENATION")
def prepare_concatenation(op, g):
    if not op.inputs or len(op.outputs) != 1 or min(op.inputs) < 0:
        refuse(op, "expects at least one input and one output")
    t_out = g.tensor(op.outputs[0])
    if t_out.dtype in (_I32, _I64, np.dtype(np.bool_)):  # unquantized: a plain copy in both engines (MoveNet's int32)
        return _concatenate_raw(op, g, t_out)
    check_dtype(op, t_out, (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)), "output")
    if t_out.dtype == np.uint8:
        check_int_types(op, g, ("input",) * len(op.inputs), allowed=_QTYPES)
    if op.options.get("fused_activation_function", 0) != 0:
        refuse(op, "a fused activation is not allowed on CONCATENATION")
    q_out = per_tensor_quant(op, t_out, "output")
    q_ins = []
    for i in op.inputs:
        t = g.tensor(i)
        check_dtype(op, t, (t_out.dtype,), "input")
        q_in = per_tensor_quant(op, t, "input")
        q_ins.append(q_in)
        if t.dtype == np.int16:  # both engines copy int16 codes whatever the scales; zero points must be 0
            if q_in[1] != 0 or q_out[1] != 0:
                refuse(op, f"int16 CONCATENATION needs zero points 0, got {q_in[1]} (input tensor {i}) and {q_out[1]}")
        elif q_in != q_out and t.dtype == np.int8:
            refuse(op, f"input tensor {i} has scale {float(q_in[0]):.9g}, zero point {q_in[1]}, the output scale "
                       f"{float(q_out[0]):.9g}, zero point {q_out[1]}; LiteRT's int8 CONCATENATION does not rescale")
    axis = op.options.get("axis", 0)
    # uint8: ConcatenationWithScaling in every LiteRT kernel type (XNNPACK takes only equal quantizations: a copy)
    scaling = {} if t_out.dtype != np.uint8 else dict(
        input_scales=[float(s) for s, _ in q_ins], input_zero_points=[z for _, z in q_ins],
        output_scale=float(q_out[0]), output_zero_point=q_out[1])
    run = planned(data_movement.concatenation_plan, [tuple(g.tensor(i).shape) for i in op.inputs],
                  [g.tensor(i).dtype for i in op.inputs], axis, **scaling)
    shape = tuple(t_out.shape)

    def lean(inputs):
        y = at_run(op, run, inputs)
        return y if y.shape == shape else check_shape(op, y, t_out)

    return Prepared(lean, {"axis": axis})


def _concatenate_raw(op, g, t_out):
    """CONCATENATION of int32, int64 or bool tensors (no quantization): the inputs copied in order along ``axis``."""
    if op.options.get("fused_activation_function", 0) != 0:
        refuse(op, "a fused activation is not allowed on CONCATENATION")
    for i in op.inputs:
        check_dtype(op, g.tensor(i), (t_out.dtype,), "input")
    rank = len(t_out.shape)
    axis = op.options.get("axis", 0)
    if not -rank <= axis < max(rank, 1):
        refuse(op, f"axis {axis} is out of range for rank {rank}")
    axis %= max(rank, 1)
    shapes = [tuple(g.tensor(i).shape) for i in op.inputs]
    try:
        want = np.concatenate([np.zeros(sh, np.int8) for sh in shapes], axis=axis).shape
    except ValueError as exc:
        refuse(op, f"the inputs do not concatenate along axis {axis}: {exc}")
    if want != tuple(t_out.shape):
        refuse(op, f"computes shape {want}, the model declares {tuple(t_out.shape)}")
    return Prepared(lambda inputs: np.concatenate(inputs, axis=axis), {"axis": axis})
