"""A prepared TFLite subgraph as one compiled :class:`~dspsim.graph.program.Program`, where every operator has an
instruction (the streaming wake-word models: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, data movement, resource
variables, element-wise ops of one byte input).

Each operator is lowered from what Prepare made of it, never from a second reading of its semantics:

- a MAC operator whose :attr:`~dspsim.graph.executor.Prepared.problem` is set: a ``MAC`` instruction on it;
- data movement (:data:`MOVES`): its ``run`` on the arena positions of its inputs (int64 probes) gives the
  positions each output element comes from: a ``GATHER``;
- an element-wise operator of one non-constant byte input (:data:`ELEMENTWISE`): its ``run`` on the 256 codes
  (the input filled with each) gives a table per output element, one table where they all agree: a ``TABLE``;
- VAR_HANDLE names a variable (no instruction); READ_VARIABLE and ASSIGN_VARIABLE copy between the variable's
  region and a tensor's (``GATHER``); CALL_ONCE must have run (the first frame runs the step loop).

Only a streaming subgraph (one that reads resource variables) of at most :data:`MAX_MACS` MACs per run is
lowered. Any other operator, a non-byte activation, a variable tensor or a probe that fails leaves the subgraph
to the step loop (:func:`lower` returns None).
"""
from __future__ import annotations

import numpy as np

from ..graph.program import Program
from ..graph.stream_plan import StreamPlan

#: pure data movement: a run on element positions gives the positions
MOVES = frozenset({"RESHAPE", "STRIDED_SLICE", "SLICE", "CONCATENATION", "SPLIT", "SPLIT_V", "SQUEEZE",
                   "EXPAND_DIMS", "TRANSPOSE", "PACK", "UNPACK", "GATHER"})
#: element-wise operators: each output element a function of the same element of the one non-constant input
ELEMENTWISE = frozenset({"LOGISTIC", "TANH", "QUANTIZE", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1",
                         "LEAKY_RELU", "HARD_SWISH", "ABS", "NEG", "ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"})
_BYTES = (np.dtype(np.int8), np.dtype(np.uint8))
#: the most MACs per run a program takes: its MAC loops are plain, the step loop's kernels win on larger layers
MAX_MACS = 1 << 18


class _Declined(Exception):
    """The subgraph has something the program does not run."""


def lower(sg, plan):
    """The :class:`~dspsim.graph.stream_plan.StreamPlan` of subgraph ``sg`` prepared as ``plan`` (``[(op,
    Prepared), ...]``), or None where an operator or tensor has no instruction."""
    try:
        return _lower(sg, plan)
    except _Declined:
        return None


def _lower(sg, plan):
    if any(t.is_variable for t in sg.tensors) or not any(op.name == "READ_VARIABLE" for op, _ in plan) \
            or sum(_macs(prep.problem) for _, prep in plan if prep.problem is not None) > MAX_MACS:
        raise _Declined  # only streaming models, small ones
    prog = Program()
    handles, variables, calls = {}, {}, []

    def region(i):
        t = sg.tensors[i]
        if t.data is not None or t.dtype not in _BYTES or t.shape is None or any(d is None or d < 0 for d in t.shape):
            raise _Declined
        return prog.tensor(i, t.shape, t.dtype)

    for i in sg.inputs:
        region(i)
    for op, prep in plan:
        name = op.name
        if name == "VAR_HANDLE":
            handles[op.outputs[0]] = prep.run(()).key
        elif name == "CALL_ONCE":
            calls.append(prep.params["init_subgraph_index"])
        elif name == "READ_VARIABLE":
            t = sg.tensors[op.outputs[0]]
            key = handles.get(op.inputs[0])
            if key is None or variables.get(key, (t.shape, t.dtype)) != (t.shape, t.dtype):
                raise _Declined
            variables[key] = (t.shape, t.dtype)
            src = prog.tensor(key, t.shape, t.dtype)
            prog.gather(region(op.outputs[0]), src + np.arange(int(np.prod(t.shape))))
        elif name == "ASSIGN_VARIABLE":
            t = sg.tensors[op.inputs[1]]
            key = handles.get(op.inputs[0])
            if key is None or variables.get(key, (t.shape, t.dtype)) != (t.shape, t.dtype):
                raise _Declined
            variables[key] = (t.shape, t.dtype)
            src = region(op.inputs[1])
            prog.gather(prog.tensor(key, t.shape, t.dtype), src + np.arange(int(np.prod(t.shape))))
        elif prep.problem is not None:
            _mac(sg, op, prep.problem, prog, region)
        elif name in MOVES:
            _move(sg, op, prep, prog, region)
        elif name in ELEMENTWISE:
            _elementwise(sg, op, prep, prog, region)
        else:
            raise _Declined
    for i in sg.outputs:
        region(i)
    return StreamPlan(prog.finish(), list(sg.inputs), list(sg.outputs), list(variables), calls)


def _macs(problem):
    g, w = problem.geometry, problem.w
    return problem.x.shape[0] * g.out_h * g.out_w * w.size


def _mac(sg, op, problem, prog, region):
    """The MAC instruction of a conv, depthwise or fully connected operator: its input and output tensors must
    hold exactly the problem's (B, H, W, C) and (B, OH, OW, OC) codes."""
    t_in, t_out = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
    g = problem.geometry
    out_size = problem.x.shape[0] * g.out_h * g.out_w * problem.w.shape[0]
    if t_in.dtype != np.int8 or int(np.prod(t_in.shape)) != problem.x.size or int(np.prod(t_out.shape)) != out_size:
        raise _Declined
    prog.mac(region(op.outputs[0]), region(op.inputs[0]), problem, problem.x.shape)


def _args(sg, op, probes):
    """The operator's inputs: the constants' data, ``probes[i]`` for each activation ``i``."""
    return [None if i < 0 else sg.tensors[i].data if sg.tensors[i].data is not None else probes[i] for i in op.inputs]


def _run(prep, args):
    try:
        y = prep.run(args)
    except (ValueError, TypeError, IndexError):
        raise _Declined from None
    return list(y) if isinstance(y, (tuple, list)) else [y]


def _move(sg, op, prep, prog, region):
    probes = {i: region(i) + np.arange(int(np.prod(sg.tensors[i].shape)), dtype=np.int64).reshape(sg.tensors[i].shape)
              for i in op.inputs if i >= 0 and sg.tensors[i].data is None}
    ys = _run(prep, _args(sg, op, probes))
    if len(ys) != len(op.outputs):
        raise _Declined
    for i, y in zip(op.outputs, ys):
        if i < 0:
            continue  # an optional output the model leaves out
        y = np.asarray(y)
        if y.dtype != np.int64 or y.shape != tuple(sg.tensors[i].shape) \
                or sg.tensors[i].dtype not in {sg.tensors[j].dtype for j in probes}:
            raise _Declined  # not a pure move of int64 codes (a rescaling concatenation, a cast)
        prog.gather(region(i), y.ravel())


def _elementwise(sg, op, prep, prog, region):
    live = [i for i in op.inputs if i >= 0 and sg.tensors[i].data is None]
    if len(live) != 1 or len(op.outputs) != 1:
        raise _Declined
    (i,), o = live, op.outputs[0]
    t_in, t_out = sg.tensors[i], sg.tensors[o]
    if tuple(t_in.shape) != tuple(t_out.shape):
        raise _Declined  # the input broadcast: an output element is no function of one input element
    codes = np.arange(256, dtype=np.uint8).view(t_in.dtype) if t_in.dtype == np.int8 else np.arange(256, dtype=np.uint8)
    n = int(np.prod(t_in.shape))
    tables = np.empty((n, 256), np.uint8)
    for b, v in enumerate(codes):
        y = _run(prep, _args(sg, op, {i: np.full(t_in.shape, v, t_in.dtype)}))[0]
        y = np.asarray(y)
        if y.dtype != t_out.dtype or y.shape != tuple(t_out.shape):
            raise _Declined
        tables[:, b] = y.ravel().view(np.uint8)
    if (tables == tables[:1]).all():
        tables = tables[:1]
    prog.table(region(o), region(i), n, tables)
