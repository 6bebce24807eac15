"""The one executor under every front end: prepared operators run in order over tensor slots.

A front end (:mod:`dspsim.tflite`, :mod:`dspsim.onnx`) turns its file into a :class:`~dspsim.graph.ir.ModelDef`
and prepares each operator into a :class:`Prepared` (its ``run(inputs) -> output(s)`` and the integer
parameters it runs with), once, at load. :class:`Executor` then runs a subgraph: the constants and the
state's variables in their slots, the inputs, each operator's ``run`` on the values of its input tensors,
its outputs checked against the declared shape and type where the graph declares them and stored in their
slots, every activation released after its last reader (memory bounded by what is alive at once,
:meth:`Executor.peak_bytes`), state writes logged, and, for a trace, every value kept in execution order
(:class:`TraceEntry`).
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .state import State


@dataclass(frozen=True)
class Prepared:
    """One prepared operator: ``run(inputs) -> output`` and the integer parameters it runs with
    (multipliers, shifts, zero points, activation bounds: what a test bench needs).

    ``run`` takes the values of the operator's inputs, a sequence (a tuple in the run loop, a list
    elsewhere; None for an absent optional input), and returns its output, or a tuple / list of them for several outputs. ``view``, when not None, is a ``run`` that hands
    on its input's memory instead of a copy (a slice or split whose outputs are windows of the input; a state
    store that keeps the value itself): a front end hands it to the executor where it finds it safe, every
    other caller runs the copying ``run``. ``stages``, on a MAC operator, is ``stages(inputs, tap=None)``: its
    accumulator stages on the same inputs (:class:`~dspsim.kernels._common.MacStages`, ``tap`` a flat output
    index for one output's taps), computed only when asked, never by ``run``. ``problem``, on a MAC operator
    whose ``run`` is the plain int32 conv of int8 codes, is its :class:`~dspsim.kernels._common.ConvProblem`:
    what a compiled :class:`~dspsim.graph.program.Program` runs instead. A recurrent operator's ``stages`` gives a
    :class:`~dspsim.kernels._common.NamedStages`, its ``tap`` a flat index into ``stages_shape`` (the gate FC
    outputs it addresses; None: the output's shape)."""

    run: Callable
    params: dict = field(default_factory=dict)
    view: Callable | None = None
    stages: Callable | None = None
    problem: object = None
    stages_shape: tuple | None = None


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output: tensor index, name, shape (``None`` for a dimension the model leaves open),
    numpy dtype, per-tensor scale and zero point (None when not per-tensor quantized), and the format's own
    element type where it has no numpy dtype of its own (ONNX's ``ElemType``; None otherwise)."""

    index: int
    name: str
    shape: tuple | None
    dtype: np.dtype | None
    scale: float | None
    zero_point: int | None
    elem_type: object = None


class Trace(list):
    """A run's :class:`TraceEntry` list, with ``state_before``: per operator index, ``{tensor: value}`` of the
    variable tensors (LSTM and SVDF state) it read, as they were before it ran (what its stages need)."""

    def __init__(self):
        super().__init__()
        self.state_before = {}


@dataclass(frozen=True)
class TraceEntry:
    """One tensor of a run: ``op_index`` (-1 for a model input), ``op`` (the operator's name, "INPUT" for a
    model input), ``tensor`` (its index in the subgraph), ``name`` and ``value``."""

    op_index: int
    op: str
    tensor: int
    name: str
    value: object


def tensor_info(t, elem_type=None) -> TensorInfo:
    """The :class:`TensorInfo` of a :class:`~dspsim.graph.ir.TensorDef`."""
    per_tensor = t.scale.size == 1
    return TensorInfo(t.index, t.name, None if t.shape is None else tuple(t.shape),
                      None if t.dtype is None else np.dtype(t.dtype),
                      float(t.scale[0]) if per_tensor else None,
                      int(t.zero_point[0]) if per_tensor and t.zero_point.size else None, elem_type)


def _checked_shape(t):
    """A tensor's declared shape where every dimension is known (the executor checks outputs against it)."""
    if t.shape is None or any(d is None or d < 0 for d in t.shape):
        return None
    return tuple(t.shape)


@dataclass(frozen=True)
class Step:
    """One operator as the run loop sees it: its prepared ``run``, the tensor indices it reads (-1:
    absent) and writes, each output's declared shape (None: not declared) and dtype (None: a value with no
    numpy dtype, a resource handle or a format's own type), which outputs a trace shows, and the activations
    no later operator reads (released after this one). ``gather`` picks the input values out of the run's
    value list in one call (``operator.itemgetter``; None: inputs absent, or one input)."""

    op: object
    run: object
    inputs: tuple
    outputs: tuple
    shapes: tuple
    dtypes: tuple
    traced: tuple
    last_use: tuple = ()
    one_array: bool = False  # one output, a declared array tensor: the run loop's fast path
    gather: Callable | None = None


def _gather(inputs):
    """The run loop's picker of ``inputs`` (tensor indices) from a value list: a tuple in input order, or None
    where one is absent (-1) or there is only one (``itemgetter`` of one index gives the value, not a tuple)."""
    return operator.itemgetter(*inputs) if len(inputs) > 1 and min(inputs) >= 0 else None


def build_steps(sg, plan, runs=None) -> list:
    """The :class:`Step` list of subgraph ``sg`` for ``plan`` (``[(op, Prepared), ...]``); ``runs`` (one per
    operator) replaces the prepared ``run`` (a front end's view runs)."""
    runs = [p.run for _, p in plan] if runs is None else runs
    kept = set(sg.outputs) | {t.index for t in sg.tensors if t.data is not None or t.is_variable}
    last = {}
    for k, (op, _) in enumerate(plan):
        for i in op.inputs:
            if i >= 0 and i not in kept:
                last[i] = k
    release = [[] for _ in plan]
    for i, k in last.items():
        release[k].append(i)
    steps = []
    for k, ((op, _), run) in enumerate(zip(plan, runs)):
        outs = [i for i in op.outputs]
        shapes = tuple(_checked_shape(sg.tensors[i]) if i >= 0 else None for i in outs)
        dtypes = tuple(sg.tensors[i].dtype if i >= 0 else None for i in outs)
        traced = tuple(i >= 0 and sg.tensors[i].type_name != "RESOURCE" for i in outs)
        steps.append(Step(op, run, tuple(op.inputs), tuple(outs), shapes, dtypes, traced, tuple(release[k]),
                          len(outs) == 1 and dtypes[0] is not None and shapes[0] is not None, _gather(op.inputs)))
    return steps


class Executor:
    """The prepared subgraphs of one model definition and the :class:`State` their operators share; runs a
    subgraph on its inputs.

    Parameters
    ----------
    mdef : ModelDef
    state : State
        The state the operators were prepared with (they read and write it).
    plans : list of [(op, Prepared), ...]
        Every operator of each subgraph as prepared, unfused: :meth:`trace` shows each one's output,
        ``run_operator`` runs one alone.
    steps, trace_steps : list of [Step, ...], optional
        What ``run`` and ``trace`` execute per subgraph (a front end's fused or viewing steps); default the
        plans' steps.
    stream_plans : list, optional
        Per subgraph, what ``run`` executes instead of its steps where the front end compiled the subgraph (a
        :class:`~.stream_plan.StreamPlan` or :class:`~.stream_plan.LazyStreamPlan`: one numba call per run), or
        None; the steps run where it declines (state not ready), for a trace, and when a caller has replaced
        the subgraph's steps.
    """

    def __init__(self, mdef, state: State, plans, steps=None, trace_steps=None, stream_plans=None):
        self.mdef = mdef
        self.state = state
        self.plans = plans
        plain = [build_steps(sg, plan) for sg, plan in zip(mdef.subgraphs, plans)] \
            if steps is None or trace_steps is None else None
        self.steps = plain if steps is None else steps
        self.trace_steps = plain if trace_steps is None else trace_steps
        self.constants = [[t.data for t in sg.tensors] for sg in mdef.subgraphs]
        self._peak = {}  # subgraph index -> peak_bytes
        self._work = {}  # subgraph index -> work
        self.stream_plans = stream_plans or [None] * len(mdef.subgraphs)
        self._planned = list(self.steps)  # the steps the stream plans stand for

    def detach(self):
        """Give the state each stream plan shares its arena with copies instead (:meth:`StreamPlan.detach`): for a
        caller about to hand state values out."""
        for compiled in self.stream_plans:
            if compiled is not None:
                compiled.detach()

    def _store(self, sg, step, y, values, trace):
        """Operator ``step``'s result ``y`` into ``values`` (and ``trace``): each array output as its tensor's
        dtype, its shape checked where declared (a ValueError naming the operator otherwise); any other value
        (a resource handle, a format's own array type) as it is."""
        outs = y if isinstance(y, (tuple, list)) else (() if y is None else (y,))
        if len(outs) != len(step.outputs):
            raise ValueError(f"Model.run: operator {step.op.index} ({step.op.name}) produced {len(outs)} "
                             f"outputs, the model declares {len(step.outputs)}")
        for i, v, shape, dtype, traced in zip(step.outputs, outs, step.shapes, step.dtypes, step.traced):
            if i < 0:
                continue  # an optional output the model leaves out
            if dtype is not None:
                if type(v) is not np.ndarray or v.dtype != dtype:
                    v = np.asarray(v, dtype=dtype)
                if shape is not None and v.shape != shape:
                    raise ValueError(f"Model.run: operator {step.op.index} ({step.op.name}) computes shape "
                                     f"{v.shape} for tensor {i} ({sg.tensors[i].name!r}), the model declares "
                                     f"{shape}")
            values[i] = v
            if trace is not None and traced:
                trace.append(TraceEntry(step.op.index, step.op.name, i, sg.tensors[i].name, v))

    def peak_bytes(self, index=0):
        """The largest total size of the activations alive at once while subgraph ``index`` runs (computed
        once), or None where the graph does not declare every activation's shape and type."""
        if index not in self._peak:
            self._peak[index] = self._walk_peak(index)
        return self._peak[index]

    def work(self, index=0):
        """Elements of work of one run of subgraph ``index`` (computed once), for a split over threads
        (:func:`dspsim._jit.split_threads`): the elements of its operators' declared outputs (an undeclared one
        counts 0)."""
        if index not in self._work:
            self._work[index] = sum(math.prod(shape) for step in self.steps[index] for shape in step.shapes
                                    if shape is not None)
        return self._work[index]

    def _walk_peak(self, index):
        sg = self.mdef.subgraphs[index]
        size = {}
        for t in sg.tensors:
            if t.type_name == "RESOURCE":
                continue
            shape = _checked_shape(t)
            if shape is None or t.dtype is None:
                return None
            size[t.index] = math.prod(shape) * t.dtype.itemsize  # Python ints: a declared shape never wraps
        live = sum(size.get(i, 0) for i in sg.inputs)
        peak = live
        for step in self.steps[index]:
            live += sum(size.get(i, 0) for i in step.outputs)
            peak = max(peak, live)
            live -= sum(size.get(i, 0) for i in step.last_use)
        return peak

    def call(self, index):
        """Run subgraph ``index`` without inputs (TFLite's CALL_ONCE initialisation subgraph)."""
        if not 0 < index < len(self.plans):
            raise ValueError(f"Model.run: subgraph {index} does not exist (the model has {len(self.plans)})")
        self.run_subgraph(index, [])

    def run_subgraph(self, index, inputs, trace=None):
        """Run subgraph ``index`` on ``inputs`` (values in its input order); returns its tensor values
        (a list indexed by tensor; None for a tensor not computed).

        Each operator's output goes to its output tensor (several outputs when ``run`` returns a tuple
        or list); state writes (resource variables, variable tensors) are logged in ``self.state`` and,
        with ``trace`` a list, appended to it after the operator that made them."""
        sg = self.mdef.subgraphs[index]
        compiled = self.stream_plans[index]
        if compiled is not None:
            if trace is None and self.steps[index] is self._planned[index]:
                values = compiled.run(self.state, inputs, len(sg.tensors))
                if values is not None:
                    return values
            compiled.detach()
        values = list(self.constants[index])
        for i, v in self.state.variables_of(sg).items():
            values[i] = v
        for i, x in zip(sg.inputs, inputs):
            values[i] = x
            if trace is not None:
                trace.append(TraceEntry(-1, "INPUT", i, sg.tensors[i].name, x))
        if trace is None:
            self._run_steps(sg, self.steps[index], values)
            return values
        state = self.state
        state_before = getattr(trace, "state_before", None)
        for step in self.trace_steps[index]:
            if state_before is not None:
                read = {i: values[i] for i in step.inputs if i >= 0 and sg.tensors[i].is_variable}
                if read:
                    state_before[step.op.index] = read
            try:
                y = step.run([values[i] if i >= 0 else None for i in step.inputs])
            except (ValueError, TypeError) as exc:
                raise _named(step, exc) from None
            if y is not None or step.outputs:
                self._store(sg, step, y, values, trace)
            if state.has_writes():
                for tensor, name, value in state.drain_writes():
                    if sg.tensors[tensor].is_variable:
                        values[tensor] = value
                    trace.append(TraceEntry(step.op.index, step.op.name, tensor, f"{name} (state write)", value))
        return values

    def _run_steps(self, sg, steps, values):
        """:meth:`run_subgraph`'s loop without a trace, the per-step work cut to what a run needs: inputs picked
        by the step's ``gather``, an array output of the declared shape and dtype stored as it is (anything
        else through :meth:`_store`), activations released, state writes applied."""
        state = self.state
        for step in steps:
            gather = step.gather
            try:
                if gather is not None:
                    y = step.run(gather(values))
                else:
                    y = step.run([values[i] if i >= 0 else None for i in step.inputs])
            except (ValueError, TypeError) as exc:
                raise _named(step, exc) from None
            if step.one_array and type(y) is np.ndarray and y.shape == step.shapes[0] \
                    and (y.dtype is step.dtypes[0] or y.dtype == step.dtypes[0]):  # the common case, checked
                values[step.outputs[0]] = y
            elif y is not None or step.outputs:
                self._store(sg, step, y, values, None)
            for i in step.last_use:
                values[i] = None
            if state.has_writes():
                for tensor, _, value in state.drain_writes():
                    if sg.tensors[tensor].is_variable:
                        values[tensor] = value


def _named(step, exc):
    """A kernel's or numpy's complaint ``exc`` named with operator ``step`` (one already naming ``Model.run``
    as it is)."""
    if str(exc).startswith("Model.run"):
        return exc
    return type(exc)(f"Model.run: operator {step.op.index} ({step.op.name}): {exc}")
