"""The batch-N version of a model: its activations' leading (batch) dimension resized from 1 to N.

What ``Interpreter.resize_tensor_input`` does for a model whose every activation tensor has a batch
dimension of 1: :func:`with_batch` returns a copy of the model definition in which each activation
tensor (not a constant, not a resource handle) has ``N`` in dimension 0, the constants that spell
a shape with that dimension (a STRIDED_SLICE end, a SLICE size, a TRANSPOSE_CONV output shape, a
value assigned to a variable) are rewritten for N, and everything else is shared. Preparing that
copy with the same builtins gives operators that take N samples in one call: FULLY_CONNECTED sees N
rows, CONV_2D and DEPTHWISE_CONV_2D N images, SVDF/LSTM N batch rows, a resource variable N
streams' state. Every TFLite kernel computes the batch rows independently, so the batch-N run is
the N runs stacked (``Model.run_batch`` relies on it; tests/tflite/test_batching.py checks it on every
real model).

A model qualifies when every operator keeps dimension 0 as the batch: :func:`batch_blocker` names
the first operator that does not (a reduction or concatenation over axis 0, a reshape that folds the
batch into another dimension, a time-major LSTM, a non-constant shape operand, an operator with no
rule here, ...); ``Model.run_batch`` then runs the samples one by one.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..graph.ir import ModelDef, SubgraphDef

#: operators that act on each batch row alone whatever their parameters (elementwise, per-row).
_ROWWISE = frozenset({
    "ABS", "ADD", "AVERAGE_POOL_2D", "CAST", "CONV_2D", "DEPTHWISE_CONV_2D", "DEQUANTIZE", "DEPTH_TO_SPACE", "ELU",
    "EXP", "FULLY_CONNECTED", "HARD_SWISH", "L2_NORMALIZATION", "LEAKY_RELU", "LOGISTIC", "LOG_SOFTMAX",
    "MAXIMUM", "MAX_POOL_2D", "MINIMUM", "MUL", "PRELU", "QUANTIZE", "RELU", "RELU6", "RELU_N1_TO_1", "RESHAPE",
    "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "RSQRT", "SOFTMAX", "SPACE_TO_DEPTH", "SQUARED_DIFFERENCE",
    "SQUEEZE", "SUB", "SVDF", "TANH", "TRANSPOSE_CONV", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE",
    "CALL_ONCE",
})


def _const(sg, i):
    t = sg.tensors[i] if 0 <= i < len(sg.tensors) else None
    return None if t is None else t.data


def _axis_is_batch(axis, rank):
    return rank > 0 and (int(axis) % rank) == 0


def _op_blocker(op, sg) -> str | None:
    """Why ``op`` does not keep dimension 0 as the batch (None: it does, perhaps after :func:`_patch`)."""
    name, o = op.name, op.options
    rank0 = len(sg.tensors[op.inputs[0]].shape) if op.inputs and op.inputs[0] >= 0 else 0
    if name in _ROWWISE:  # FULLY_CONNECTED: rows of K = one per sample, as its output (1, ...) says
        return None
    if name in ("CONCATENATION", "PACK", "UNPACK", "GATHER"):
        axis = o.get("axis", 0)
        rank = rank0 + (1 if name == "PACK" else 0)
        if _axis_is_batch(axis, rank) or (name == "GATHER" and o.get("batch_dims", 0) != 0):
            return f"{name} along axis 0 (the batch)"
        if name == "GATHER" and _const(sg, op.inputs[1]) is None:
            return "GATHER with non-constant indices"
        return None
    if name in ("SPLIT", "SPLIT_V", "MEAN", "SUM", "REDUCE_MAX", "ARG_MAX"):
        k = 0 if name == "SPLIT" else (2 if name == "SPLIT_V" else 1)
        axes = _const(sg, op.inputs[k]) if len(op.inputs) > k else None
        data_rank = len(sg.tensors[op.inputs[1 if name == "SPLIT" else 0]].shape)
        if axes is None:
            return f"{name} with a non-constant axis"
        if any(_axis_is_batch(a, data_rank) for a in np.ravel(axes)):
            return f"{name} over axis 0 (the batch)"
        return None
    if name in ("PAD", "PADV2", "MIRROR_PAD"):
        pads = _const(sg, op.inputs[1])
        if pads is None or pads.ndim != 2 or pads.shape[0] == 0 or np.any(pads[0] != 0):
            return f"{name} pads the batch dimension (or its paddings are not constant)"
        return None
    if name == "TRANSPOSE":
        perm = _const(sg, op.inputs[1])
        if perm is None or perm.size == 0 or int(perm.ravel()[0]) != 0:
            return "TRANSPOSE moves the batch dimension"
        return None
    if name == "STRIDED_SLICE":
        begin, end, strides = (_const(sg, op.inputs[k]) for k in (1, 2, 3))
        if begin is None or end is None or strides is None or begin.size == 0:
            return "STRIDED_SLICE with non-constant begin/end/strides"
        if (o.get("ellipsis_mask", 0) | o.get("new_axis_mask", 0) | o.get("shrink_axis_mask", 0)) & 1 \
                or o.get("offset", 0):
            return "STRIDED_SLICE shrinks, offsets or adds the batch axis"
        b0 = 0 if o.get("begin_mask", 0) & 1 else int(begin[0])
        e0 = 1 if o.get("end_mask", 0) & 1 else int(end[0])
        if b0 != 0 or e0 < 1 or int(strides[0]) != 1:
            return "STRIDED_SLICE slices the batch dimension"
        return None
    if name == "SLICE":
        begin, size = _const(sg, op.inputs[1]), _const(sg, op.inputs[2])
        if begin is None or size is None or begin.size == 0 or int(begin[0]) != 0 or int(size[0]) not in (1, -1):
            return "SLICE slices the batch dimension (or its begin/size are not constant)"
        return None
    if name == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        return "a time-major LSTM has the batch in dimension 1" if o.get("time_major", 0) else None
    if name == "BATCH_MATMUL":
        if any(_const(sg, i) is not None for i in op.inputs[:2]):
            return "BATCH_MATMUL with a constant operand"
        return None
    return f"{name} has no batch rule"


def _activations(sg):
    """The tensors that carry the batch: not constants, not resource handles, not an operator's
    intermediates (tensors that only hold the LSTM gates' quantization)."""
    carriers = {i for op in sg.operators for i in op.inputs + op.outputs} | set(sg.inputs) | set(sg.outputs)
    return [t for t in sg.tensors if t.dtype is not None and (t.data is None or t.is_variable) and t.index in carriers]


def batch_blocker(mdef: ModelDef) -> str | None:
    """Why the model cannot run N samples as one batch (None: it can, see :func:`with_batch`)."""
    for sg in mdef.subgraphs:
        for t in _activations(sg):
            if len(t.shape) < 2 or t.shape[0] != 1:  # rank 1: the batch would be a last axis (SOFTMAX...)
                return f"subgraph {sg.index} tensor {t.index} ({t.name!r}) has shape {tuple(t.shape)}, no batch of 1"
        for op in sg.operators:
            why = _op_blocker(op, sg)
            if why is not None:
                return f"operator {op.index} ({op.name}): {why}"
    return None


def _with_rows(a, n):
    return np.ascontiguousarray(np.repeat(a, n, axis=0))


def _batched_subgraph(sg: SubgraphDef, n: int) -> SubgraphDef:
    tensors = list(sg.tensors)
    for t in _activations(sg):
        data = None if t.data is None else _with_rows(t.data, n)
        tensors[t.index] = dataclasses.replace(t, shape=(n, *t.shape[1:]), data=data)

    def replaced(i, data):
        """A new constant tensor holding ``data`` in place of input ``i`` (others may share tensor ``i``)."""
        tensors.append(dataclasses.replace(sg.tensors[i], index=len(tensors), shape=tuple(data.shape), data=data))
        return len(tensors) - 1

    ops = []
    for op in sg.operators:
        inputs = list(op.inputs)
        if op.name == "STRIDED_SLICE":
            end = sg.tensors[op.inputs[2]].data.copy()
            end[0] = n
            inputs[2] = replaced(op.inputs[2], end)
        elif op.name == "SLICE":
            size = sg.tensors[op.inputs[2]].data.copy()
            size[0] = -1
            inputs[2] = replaced(op.inputs[2], size)
        elif op.name == "TRANSPOSE_CONV" and sg.tensors[op.inputs[0]].data is not None:
            shape = sg.tensors[op.inputs[0]].data.copy()
            shape[0] = n
            inputs[0] = replaced(op.inputs[0], shape)
        elif op.name == "ASSIGN_VARIABLE" and sg.tensors[op.inputs[1]].data is not None \
                and not sg.tensors[op.inputs[1]].is_variable:
            inputs[1] = replaced(op.inputs[1], _with_rows(sg.tensors[op.inputs[1]].data, n))
        ops.append(op if inputs == list(op.inputs) else dataclasses.replace(op, inputs=tuple(inputs)))
    return dataclasses.replace(sg, tensors=tensors, operators=ops)


def with_batch(mdef: ModelDef, n: int) -> ModelDef:
    """The model definition with every activation's batch dimension N (see the module docstring).

    Only for a model whose :func:`batch_blocker` is None; ``n >= 1``."""
    return dataclasses.replace(mdef, subgraphs=[_batched_subgraph(sg, n) for sg in mdef.subgraphs])
