"""A loaded .tflite model: its operators prepared once, run through dspsim's kernels in model order."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..accumulator import Accumulator
from . import builtins  # noqa: F401  (registers every builtin's Prepare)
from .flatbuffer import ModelDef
from .batching import batch_blocker, with_batch
from .prepare import BUILTINS, ROUNDINGS, Engine, Graph, State, engine_of
from .fusion import fuse
from .views import choose_runs


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output: tensor index, name, shape, dtype, per-tensor scale and zero point."""

    index: int
    name: str
    shape: tuple
    dtype: np.dtype
    scale: float | None
    zero_point: int | None


@dataclass(frozen=True)
class TraceEntry:
    """One tensor of a run: ``op_index`` (-1 for a model input), ``op`` (builtin name, "INPUT" for a
    model input), ``tensor`` (its index in the subgraph), ``name`` and ``value``."""

    op_index: int
    op: str
    tensor: int
    name: str
    value: np.ndarray


def _info(t) -> TensorInfo:
    per_tensor = t.scale.size == 1
    return TensorInfo(t.index, t.name, tuple(t.shape), t.dtype, float(t.scale[0]) if per_tensor else None,
                      int(t.zero_point[0]) if per_tensor and t.zero_point.size else None)


def _check_litert_quantization(sg, where):
    """LiteRT's interpreter refuses, at load, a per-channel quantized tensor whose quantized_dimension
    is not one of its dimensions or whose scale count is not that dimension's size (``Subgraph::
    SetTensorParametersReadOnly``); TFLM reads such tensors without checking (person_detect's bias)."""
    for t in sg.tensors:
        if t.scale.size <= 1:
            continue
        rank = len(t.shape)
        if not 0 <= t.quantized_dimension < rank:
            raise ValueError(f"load_model: {where}tensor {t.index} ({t.name!r}): quantized_dimension must be in "
                             f"range [0, {rank}), was {t.quantized_dimension}: LiteRT refuses the model (engine "
                             "'tflm' runs it)")
        if t.scale.size != t.shape[t.quantized_dimension]:
            raise ValueError(f"load_model: {where}tensor {t.index} ({t.name!r}): {t.scale.size} scales for dimension "
                             f"{t.quantized_dimension} of size {t.shape[t.quantized_dimension]}: LiteRT refuses the "
                             "model (engine 'tflm' runs it)")


def _prepare_subgraph(sg, g):
    """Prepare every operator of subgraph ``sg`` in order (refusals name the subgraph when it is not 0)."""
    where = "" if sg.index == 0 else f"subgraph {sg.index} "
    for i in sg.inputs:
        if sg.tensors[i].dtype is None:
            raise ValueError(f"load_model: {where}input tensor {i} has unsupported type "
                             f"{sg.tensors[i].type_name}")
    if g.engine != Engine.TFLM:
        _check_litert_quantization(sg, where)
    known = set(sg.inputs) | {t.index for t in sg.tensors if t.data is not None or t.is_variable}
    plan = []
    for op in sg.operators:
        if op.name not in BUILTINS:
            raise ValueError(f"load_model: {where}operator {op.index} is {op.name} (version {op.version}), "
                             f"which dspsim does not support (dspsim.tflite.supported_ops() lists the {len(BUILTINS)} it has)")
        for i in op.inputs:
            if i >= 0 and i not in known:
                raise ValueError(f"load_model: {where}operator {op.index} ({op.name}) reads tensor {i} "
                                 f"({sg.tensors[i].name!r}) before any operator writes it")
        for i in op.outputs:
            t = sg.tensors[i]
            if t.dtype is None and t.type_name != "RESOURCE":
                raise ValueError(f"load_model: {where}operator {op.index} ({op.name}) writes tensor {i} of "
                                 f"unsupported type {t.type_name}")
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # huge scales: refused below
            try:
                plan.append((op, BUILTINS[op.name](op, g)))
            except IndexError as exc:  # a Prepare reading an input, output or dimension the op lacks
                raise ValueError(f"load_model: {where}operator {op.index} ({op.name}) is malformed: its "
                                 f"{len(op.inputs)} inputs, {len(op.outputs)} outputs or their shapes do not "
                                 f"fit the op ({exc})") from None
            except MemoryError as exc:  # declared shapes beyond this machine (LiteRT's AllocateTensors fails too)
                raise ValueError(f"load_model: {where}operator {op.index} ({op.name}): its declared tensor shapes need "
                                 f"more memory than is available ({exc})") from None
        known.update(op.outputs)
    for i in sg.outputs:
        if i not in known:
            raise ValueError(f"load_model: {where}output tensor {i} is never written")
    return plan


@dataclass(frozen=True)
class _Step:
    """One operator as the run loop sees it: its prepared ``run``, the tensor indices it reads (-1:
    absent) and writes, and each output's declared shape and dtype (None: a resource handle)."""

    op: object
    run: object
    inputs: tuple
    outputs: tuple
    shapes: tuple
    dtypes: tuple
    last_use: tuple = ()  # activations no later operator reads: released after this one (memory)
    one_array: bool = False  # one output, an array tensor: the run loop's fast path


class _Executor:
    """The prepared subgraphs of one model definition and the :class:`State` their operators share;
    runs a subgraph on its inputs. A Model has one for ``run`` and one per batch size of ``run_batch``."""

    def __init__(self, mdef, engine, accumulator, rounding):
        self.mdef = mdef
        self.state = State()
        contexts = [Graph(mdef, engine, accumulator, rounding, sg, self.state, self.call) for sg in mdef.subgraphs]
        self.graphs = [_prepare_subgraph(sg, g) for sg, g in zip(mdef.subgraphs, contexts)]
        # run: the fused operators (dspsim.tflite.fusion); trace: every operator, each output observable
        fused = [fuse(sg, plan, g) for sg, plan, g in zip(mdef.subgraphs, self.graphs, contexts)]
        self.steps = [self._steps(sg, plan, runs)
                      for sg, plan, runs in zip(mdef.subgraphs, fused, choose_runs(mdef, fused))]
        self.trace_steps = self.steps if all(f is p for f, p in zip(fused, self.graphs)) else \
            [self._steps(sg, plan, runs)
             for sg, plan, runs in zip(mdef.subgraphs, self.graphs, choose_runs(mdef, self.graphs))]
        self.constants = [[t.data for t in sg.tensors] for sg in mdef.subgraphs]
        self._peak = {}  # subgraph index -> peak_bytes

    @staticmethod
    def _steps(sg, plan, runs):
        kept = set(sg.outputs) | {t.index for t in sg.tensors if t.data is not None or t.is_variable}
        last = {}
        for k, (op, _) in enumerate(plan):
            for i in op.inputs:
                if i >= 0 and i not in kept:
                    last[i] = k
        release = [[] for _ in plan]
        for i, k in last.items():
            release[k].append(i)
        return [_Step(op, run, tuple(op.inputs), tuple(op.outputs),
                      tuple(tuple(sg.tensors[i].shape) for i in op.outputs),
                      tuple(sg.tensors[i].dtype for i in op.outputs), tuple(release[k]),
                      len(op.outputs) == 1 and sg.tensors[op.outputs[0]].dtype is not None)
                for k, ((op, _), run) in enumerate(zip(plan, runs))]

    @staticmethod
    def _store(sg, step, y, values, trace):
        """Operator ``step``'s result ``y`` into ``values`` (and ``trace``): each output as its tensor's dtype,
        its shape checked (a ValueError naming the operator otherwise); a resource handle as it is."""
        outs = y if isinstance(y, (tuple, list)) else (() if y is None else (y,))
        if len(outs) != len(step.outputs):
            raise ValueError(f"Model.run: operator {step.op.index} ({step.op.name}) produced {len(outs)} "
                             f"outputs, the model declares {len(step.outputs)}")
        for i, v, shape, dtype in zip(step.outputs, outs, step.shapes, step.dtypes):
            if dtype is not None:
                if type(v) is not np.ndarray or v.dtype != dtype:
                    v = np.asarray(v, dtype=dtype)
                if v.shape != shape:
                    raise ValueError(f"Model.run: operator {step.op.index} ({step.op.name}) computes shape "
                                     f"{v.shape} for tensor {i} ({sg.tensors[i].name!r}), the model declares "
                                     f"{shape}")
            values[i] = v  # dtype None: a resource handle
            if trace is not None and dtype is not None:
                trace.append(TraceEntry(step.op.index, step.op.name, i, sg.tensors[i].name, v))

    def peak_bytes(self, index=0):
        """The largest total size of the activations alive at once while subgraph ``index`` runs (computed
        once: ``run_batch`` asks on every call, and the walk over the steps costs hundreds of µs)."""
        if index not in self._peak:
            self._peak[index] = self._walk_peak(index)
        return self._peak[index]

    def _walk_peak(self, index):
        sg = self.mdef.subgraphs[index]
        size = {t.index: int(np.prod(t.shape)) * t.dtype.itemsize for t in sg.tensors if t.dtype is not None}
        live = sum(size.get(i, 0) for i in sg.inputs)
        peak = live
        for step in self.steps[index]:
            live += sum(size.get(i, 0) for i in step.outputs)
            peak = max(peak, live)
            live -= sum(size.get(i, 0) for i in step.last_use)
        return peak

    def call(self, index):
        """Run subgraph ``index`` without inputs (CALL_ONCE's initialisation subgraph)."""
        if not 0 < index < len(self.graphs):
            raise ValueError(f"Model.run: subgraph {index} does not exist (the model has {len(self.graphs)})")
        self.run_subgraph(index, [])

    def run_subgraph(self, index, inputs, trace=None):
        """Run subgraph ``index`` on ``inputs`` (arrays in its input order); returns its tensor values
        (a list indexed by tensor; None for a tensor not computed).

        Each operator's output goes to its output tensor (several outputs when ``run`` returns a tuple
        or list); state writes (ASSIGN_VARIABLE, variable tensors) are logged in ``self.state`` and,
        with ``trace`` a list, appended to it after the operator that made them."""
        sg = self.mdef.subgraphs[index]
        values = list(self.constants[index])
        for i, v in self.state.variables_of(sg).items():
            values[i] = v
        for i, x in zip(sg.inputs, inputs):
            values[i] = x
            if trace is not None:
                trace.append(TraceEntry(-1, "INPUT", i, sg.tensors[i].name, x))
        state = self.state
        for step in (self.steps if trace is None else self.trace_steps)[index]:
            try:
                y = step.run([values[i] if i >= 0 else None for i in step.inputs])
            except ValueError as exc:  # numpy's own complaints about a malformed model, named
                if str(exc).startswith("Model.run"):
                    raise
                raise ValueError(f"Model.run: operator {step.op.index} ({step.op.name}): {exc}") from None
            if step.one_array and type(y) is np.ndarray and y.shape == step.shapes[0] \
                    and (y.dtype is step.dtypes[0] or y.dtype == step.dtypes[0]):  # the common case, checked
                values[step.outputs[0]] = y
                if trace is not None:
                    trace.append(TraceEntry(step.op.index, step.op.name, step.outputs[0],
                                            sg.tensors[step.outputs[0]].name, y))
            elif y is not None or step.outputs:
                self._store(sg, step, y, values, trace)
            if trace is None:
                for i in step.last_use:
                    values[i] = None
            if state.has_writes():
                for tensor, name, value in state.drain_writes():
                    if sg.tensors[tensor].is_variable:
                        values[tensor] = value
                    if trace is not None:
                        trace.append(TraceEntry(step.op.index, step.op.name, tensor, f"{name} (state write)", value))
        return values


class Model:
    """An int8 TFLite model, run layer by layer with dspsim's bit-exact kernels.

    Build it with :func:`dspsim.tflite.load_model`. Every operator's integer parameters are derived
    once, at load time, from the float32 scales stored in the flatbuffer, exactly as LiteRT's
    Prepare does; models LiteRT refuses are refused there with a ValueError naming the operator.

    Attributes
    ----------
    engine : str
        "litert" (LiteRT's reference kernels, ``OpResolverType.BUILTIN_REF``), "tflm" (TensorFlow
        Lite Micro's reference kernels: FULLY_CONNECTED with ``MultiplyByQuantizedMultiplier``, ...;
        docs/engines.md) or "xnnpack" (LiteRT's default interpreter, whose XNNPACK delegate takes every
        supported node: FC/conv/depthwise requantized in float32 with ties to even, and XNNPACK's own
        ADD, MUL, MEAN, LEAKY_RELU and QUANTIZE kernels wherever the delegate accepts the node's
        scales; the rest as the reference).
    accumulator : Accumulator or None
        The accumulator of FULLY_CONNECTED / CONV_2D / DEPTHWISE_CONV_2D (None: int32 wrapping, as
        LiteRT). A narrower or saturating :class:`dspsim.Accumulator` simulates a DSP's register on
        the whole model; ``trace`` then shows where its outputs first leave the reference.
    rounding : str
        "double" (the default build) or "single" (``TFLITE_SINGLE_ROUNDING``): the rounding of
        ``MultiplyByQuantizedMultiplier`` in the fixed-point requantization of FULLY_CONNECTED (tflm),
        CONV_2D, DEPTHWISE_CONV_2D, RELU* and LEAKY_RELU.
    inputs, outputs : list of TensorInfo
    operators : list of (index, builtin op name)
    """

    def __init__(self, mdef: ModelDef, engine: str = "litert", accumulator=None, rounding: str = "double"):
        eng = engine_of(engine)
        if accumulator is not None and not isinstance(accumulator, Accumulator):
            raise TypeError(f"load_model: accumulator must be a dspsim.Accumulator, got {type(accumulator).__name__}")
        if rounding not in ROUNDINGS:
            raise ValueError(f"load_model: rounding must be one of {ROUNDINGS}, got {rounding!r}")
        self.engine = eng.value
        self.accumulator = accumulator
        self.rounding = rounding
        self._mdef = mdef
        self._exec = _Executor(mdef, eng, accumulator, rounding)
        self.state = self._exec.state
        self._graphs = self._exec.graphs
        self._plan = self._graphs[0]
        self._batched = {}  # batch size -> _Executor of batching.with_batch(mdef, n)
        self._stateful = None
        self._blocker = None  # why run_batch cannot batch (computed on first use), "" when it can
        self._streams = None  # run_batch's stream states: (N, [State per chunk]) or (N, [State per stream])
        self.inputs = [_info(mdef.tensors[i]) for i in mdef.inputs]
        self.outputs = [_info(mdef.tensors[i]) for i in mdef.outputs]
        self.operators = [(op.index, op.name) for op, _ in self._plan]

    @property
    def num_tensors(self) -> int:
        """Number of tensors of the main subgraph (valid tensor indices are ``range(num_tensors)``)."""
        return len(self._mdef.tensors)

    def tensor_value(self, index: int):
        """The constant data of tensor ``index`` (weights, biases, ...), or None for an activation."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < self.num_tensors:
            raise ValueError(f"Model.tensor_value: tensor index must be in [0, {self.num_tensors}), got {index!r}")
        return self._mdef.tensors[int(index)].data

    def tensor_info(self, index: int) -> TensorInfo:
        """Name, shape, dtype and per-tensor quantization of tensor ``index`` of the subgraph."""
        return _info(self._mdef.tensors[index])

    def consumers(self, index: int):
        """(op index, op name) of every operator that reads tensor ``index``."""
        return [(op.index, op.name) for op, _ in self._plan if index in op.inputs]

    def outputs_of(self, op_index: int):
        """Tensor indices written by operator ``op_index``."""
        return list(self._operator(op_index)[0].outputs)

    def operator_inputs(self, op_index: int):
        """Tensor indices read by operator ``op_index`` (-1 for an absent optional input)."""
        return list(self._operator(op_index)[0].inputs)

    def operator_params(self, op_index: int) -> dict:
        """The integer parameters operator ``op_index`` was prepared with (multipliers, shifts, zero
        points, activation bounds, ...), as its kernel receives them."""
        return dict(self._operator(op_index)[1].params)

    def run_operator(self, op_index: int, inputs):
        """Run operator ``op_index`` alone on ``inputs``: a list aligned with :meth:`operator_inputs`,
        where None takes the model's constant (or leaves an absent optional input absent). Returns the
        output array (a list of them for an operator with several outputs), as :meth:`trace` would
        show it. A state operator (ASSIGN_VARIABLE...) acts on the model's state."""
        op, prep = self._operator(op_index)
        func = "Model.run_operator"
        if not isinstance(inputs, (list, tuple)) or len(inputs) != len(op.inputs):
            raise ValueError(f"{func}: operator {op_index} ({op.name}) has {len(op.inputs)} inputs; give a list of "
                             f"{len(op.inputs)} arrays (None for constants)")
        args = []
        for k, (i, x) in enumerate(zip(op.inputs, inputs)):
            t = self._mdef.tensors[i] if i >= 0 else None
            if x is None:
                if t is not None and t.data is None:
                    raise ValueError(f"{func}: input {k} (tensor {i}, {t.name!r}) of operator {op_index} is not a "
                                     "constant; give its value")
                args.append(None if t is None else t.data)
                continue
            a = np.asarray(x)
            if t is None or a.dtype != t.dtype or a.shape != tuple(t.shape):
                want = "absent" if t is None else f"{t.dtype} {tuple(t.shape)}"
                raise ValueError(f"{func}: input {k} of operator {op_index} ({op.name}) must be {want}, got "
                                 f"{a.dtype} {a.shape}")
            args.append(a)
        y = prep.run(args)
        self.state.drain_writes()
        outs = [np.asarray(v, dtype=self._mdef.tensors[i].dtype) for i, v in
                zip(op.outputs, y if isinstance(y, (tuple, list)) else (y,)) if self._mdef.tensors[i].dtype is not None]
        return outs[0] if len(outs) == 1 else outs

    def _operator(self, op_index):
        if isinstance(op_index, bool) or not isinstance(op_index, (int, np.integer)) \
                or not 0 <= op_index < len(self._plan):
            raise ValueError(f"Model: operator index must be in [0, {len(self._plan)}), got {op_index!r}")
        return self._plan[int(op_index)]

    def __repr__(self):
        ops = " ".join(name for _, name in self.operators)
        acc = "" if self.accumulator is None else f" accumulator={self.accumulator!r}"
        rnd = "" if self.rounding == "double" else f" rounding={self.rounding!r}"
        return f"<dspsim.tflite.Model engine={self.engine!r}{acc}{rnd}: {len(self.operators)} ops: {ops}>"

    def _inputs(self, inputs):
        func = "Model.run"
        if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(self.inputs):
            raise ValueError(f"{func}: the model has {len(self.inputs)} input(s), got {len(inputs)}")
        out = []
        for k, (x, info) in enumerate(zip(inputs, self.inputs)):
            a = np.asarray(x)
            if a.dtype != info.dtype:
                raise TypeError(f"{func}: input {k} ({info.name!r}) must have dtype {info.dtype}, got {a.dtype}")
            if a.shape != info.shape:
                raise ValueError(f"{func}: input {k} ({info.name!r}) must have shape {info.shape}, got {a.shape}")
            out.append(a)
        return out

    def _execute(self, inputs, keep):
        trace = [] if keep else None
        values = self._exec.run_subgraph(0, self._inputs(inputs), trace)
        return values, trace

    def reset(self):
        """Restore the initial state: resource variables unset (CALL_ONCE runs its initialisation
        subgraph again on the next run), variable tensors back to their initial values, for
        :meth:`run` and for every stream of :meth:`run_batch`. A model without state has nothing to
        reset: this then does nothing."""
        self.state.reset()
        self._streams = None

    @property
    def stateful(self) -> bool:
        """Whether the model keeps state between invocations (resource variables or variable tensors)."""
        if self._stateful is None:
            self._stateful = self._has_state()
        return self._stateful

    def _has_state(self) -> bool:
        return any(op.name in ("VAR_HANDLE", "CALL_ONCE") for sg in self._mdef.subgraphs for op in sg.operators) \
            or any(t.is_variable for sg in self._mdef.subgraphs for t in sg.tensors)

    #: a batch keeps at most this many bytes of activations alive at once (each sample: the model's
    #: peak, tensors being released after their last reader): larger N runs in chunks of that size.
    BATCH_BYTES = 1 << 27

    def run_batch(self, inputs):
        """``run`` on N independent samples: each input has a leading axis N (``(N, *input.shape)``), and
        so has each output; the result is bit-identical to N calls of :meth:`run`.

        The model runs as TFLite runs it after ``resize_tensor_input`` to batch N
        (:mod:`dspsim.tflite.batching`): every operator takes the whole batch in one call, in chunks of
        at most :attr:`BATCH_BYTES` of activations. A model whose operators mix the batch with
        another dimension runs the samples one by one (:attr:`batch_blocker` says why).

        For a state-carrying model N is the number of independent streams: the model keeps one state
        per stream, and each call advances every stream by one frame. A call with another N needs a
        :meth:`reset` first (ValueError otherwise). The streams' states are separate from the state of
        :meth:`run`.
        """
        func = "Model.run_batch"
        if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(self.inputs):
            raise ValueError(f"{func}: the model has {len(self.inputs)} input(s), got {len(inputs)}")
        arrays = [np.asarray(x) for x in inputs]
        for k, (a, info) in enumerate(zip(arrays, self.inputs)):
            if a.dtype != info.dtype:
                raise TypeError(f"{func}: input {k} ({info.name!r}) must have dtype {info.dtype}, got {a.dtype}")
            if a.ndim != len(info.shape) + 1 or a.shape[1:] != info.shape:
                raise ValueError(f"{func}: input {k} ({info.name!r}) must have shape (N, *{info.shape}), got {a.shape}")
        n = arrays[0].shape[0]
        if any(a.shape[0] != n for a in arrays) or n == 0:
            raise ValueError(f"{func}: every input needs the same leading N >= 1, got {[a.shape[0] for a in arrays]}")
        if self._streams is not None and self._streams[0] != n:
            raise ValueError(f"{func}: the model carries {self._streams[0]} streams; call reset() before "
                             f"running {n}")
        chunk = 1 if self.batch_blocker else max(1, min(n, self.BATCH_BYTES // max(1, self._exec.peak_bytes())))
        cuts = list(range(0, n, chunk)) + [n]
        stateful = self.stateful
        if stateful and self._streams is None:
            self._streams = (n, [State() for _ in cuts[:-1]])
        outs = []
        for k, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:])):
            ex = self._executor(hi - lo)
            if stateful:
                ex.state.swap(self._streams[1][k])
            try:
                values = ex.run_subgraph(0, [a[lo:hi].reshape(ex.mdef.tensors[i].shape)
                                             for a, i in zip(arrays, self._mdef.inputs)])
            finally:
                if stateful:
                    ex.state.swap(self._streams[1][k])
            outs.append([values[i].reshape((hi - lo, *self._mdef.tensors[i].shape)) for i in self._mdef.outputs])
        if len(outs) == 1:
            return outs[0]
        return [np.concatenate([o[k] for o in outs]) for k in range(len(self.outputs))]

    @property
    def batch_blocker(self) -> str:
        """Why :meth:`run_batch` runs the samples one by one ("" when it runs each batch in one call)."""
        if self._blocker is None:
            self._blocker = batch_blocker(self._mdef) or ""
        return self._blocker

    @property
    def _batchable(self) -> bool:
        return not self.batch_blocker

    def _executor(self, n):
        """The executor of batch size ``n`` (prepared on first use, kept): the model's own for n = 1
        when batching is impossible."""
        if not self._batchable:
            return self._exec if n == 1 and not self.stateful else self._executor_for(1)
        return self._executor_for(n)

    def _executor_for(self, n):
        if n not in self._batched:
            mdef = with_batch(self._mdef, n) if self._batchable else self._mdef
            self._batched[n] = _Executor(mdef, engine_of(self.engine), self.accumulator, self.rounding)
        return self._batched[n]

    def run(self, inputs):
        """The model's outputs (a list, in the model's output order) for ``inputs``.

        A model with state (resource variables read and assigned across invocations, as the
        streaming microWakeWord models keep; variable tensors) keeps it between calls: each call is
        the next frame, as in TFLM's interpreter. :meth:`reset` starts over.

        ``inputs``: one array, or a list of arrays in the model's input order, each with exactly the
        input tensor's dtype (int8 for an int8 model, float32 where the model starts with QUANTIZE)
        and shape.
        """
        values, _ = self._execute(inputs, False)
        return [values[i] for i in self._mdef.outputs]

    def trace(self, inputs):
        """Every tensor of one run, in execution order: the model inputs, then each operator's output,
        as :class:`TraceEntry` (operator index and name, tensor index and name, value); a state write
        (ASSIGN_VARIABLE, an updated variable tensor) follows its operator, named "<variable> (state
        write)". A state-carrying model advances one frame, as :meth:`run` does."""
        return self._execute(inputs, True)[1]
