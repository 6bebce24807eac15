"""A loaded model, whatever its format: its operators prepared once, run by the one :class:`~.executor.Executor`.

:class:`Model` is what every front end returns (:func:`dspsim.tflite.load_model`, :func:`dspsim.onnx.load_model`,
:func:`dspsim.load_model`): ``run``, ``run_batch`` over samples or streams, ``trace``, ``reset``, and the reads a
bring-up verb needs (``tensor_info``, ``tensor_value``, ``operator_params``, ``run_operator``...). Tensors are
named by their index in the main subgraph in every format. A front end subclasses it with how it reads its
inputs (:meth:`Model._inputs`) and, where it can, how it prepares a batch-N copy (:meth:`Model._batched_executor`).
"""
from __future__ import annotations

import numpy as np

from .._jit import PARALLEL_MIN, get_num_threads, parallel_rows, split_threads
from .executor import Trace, tensor_info
from .state import State

#: Operators that keep state between invocations (TFLite resource variables, CALL_ONCE, and TFLite Micro's Signal
#: custom ops with a persistent buffer).
_STATEFUL_OPS = ("VAR_HANDLE", "CALL_ONCE", "CUSTOM(SignalFilterBankSpectralSubtraction)", "CUSTOM(SignalDelay)",
                 "CUSTOM(SignalFramer)", "CUSTOM(SignalStacker)", "CUSTOM(SignalOverlapAdd)")


PART_OPERATOR_WORK = PARALLEL_MIN // 16
"""Elements of work (outputs) an operator call of one part of a batch split over threads has at least (~10 us, twice
the Python time of the call, which the parts take in turn under the GIL): measured on a 2-core Zen 4, MobileNetV2 224
at batch 16 (670 K per call) runs 1.9x faster on 2 threads by samples, person detection (60 K) 1.5x, a
microWakeWord model at 256 streams (24 K) 0.65x."""

PARTS_PER_THREAD = 2
"""Parts of a batch split by samples per thread at most, taken in turn (a late thread leaves its second part to the
others): MobileNetV2 224 batch 16 on 2 threads of a 2-core Zen 4 runs 2.06 ms per inference in 2 parts, 2.10 in 4,
2.34 in 8 (each part's operators cost their Python time again)."""


class Model:
    """A model run layer by layer with dspsim's bit-exact kernels, under the arithmetic of ``profile``.

    Attributes
    ----------
    profile : dspsim.engines.EngineProfile
        The engine whose arithmetic is emulated.
    engine : str
        The profile's name.
    inputs, outputs : list of TensorInfo
    operators : list of (index, operator name)
    """

    #: a batch keeps at most this many bytes of activations alive at once (each sample: the model's
    #: peak, tensors being released after their last reader): larger N runs in chunks of that size.
    BATCH_BYTES = 1 << 27
    _KIND = "Model"

    def __init__(self, mdef, profile, executor):
        self.profile = profile
        self.engine = profile.name
        self._mdef = mdef
        self._exec = executor
        self.state = executor.state
        self._plan = executor.plans[0]
        self._batched = {}  # batch size -> [Executor of a batch-N copy, one per part running at once]
        self._stateful = None
        self._blocker = None  # why run_batch cannot batch (computed on first use), "" when it can
        self._streams = None  # run_batch's streams: (N, [State per chunk] or [State per stream], parts)
        self.inputs = [self._info(mdef.tensors[i]) for i in mdef.inputs]
        self.outputs = [self._info(mdef.tensors[i]) for i in mdef.outputs]
        self.operators = [(op.index, op.name) for op, _ in self._plan]

    # ---------------------------------------------------------------------------------------------
    # what a front end provides
    # ---------------------------------------------------------------------------------------------
    def _info(self, t):
        return tensor_info(t)

    def _inputs(self, inputs, func):
        """``inputs`` as a list of values in the model's input order, each checked (TypeError / ValueError
        naming ``func``); the default takes one array or a list of arrays of exactly the declared dtype and
        shape."""
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

    def _batch_blocker(self) -> str | None:
        """Why the model cannot run a batch in one call (None: it can, :meth:`_batch_def`)."""
        return "this format prepares no batch-N copy of a model: the samples run one by one"

    def _batch_def(self, n):
        """The model definition of a batch-N copy (only called when :meth:`_batch_blocker` is None)."""
        raise NotImplementedError

    def _prepare(self, mdef):
        """A new :class:`~.executor.Executor` of ``mdef`` (this model's definition or a batch-N copy), with a
        state of its own."""
        raise NotImplementedError

    # ---------------------------------------------------------------------------------------------
    # tensors and operators
    # ---------------------------------------------------------------------------------------------
    @property
    def num_tensors(self) -> int:
        """Number of tensors of the main subgraph (valid tensor indices are ``range(num_tensors)``)."""
        return len(self._mdef.tensors)

    def _tensor(self, index, func):
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < self.num_tensors:
            raise ValueError(f"{func}: tensor index must be in [0, {self.num_tensors}), got {index!r}")
        return self._mdef.tensors[int(index)]

    def tensor_value(self, index: int):
        """The constant data of tensor ``index`` (weights, biases, ...), or None for an activation."""
        return self._tensor(index, "Model.tensor_value").data

    def tensor_info(self, index: int):
        """Name, shape, dtype and per-tensor quantization of tensor ``index`` of the main subgraph."""
        return self._info(self._tensor(index, "Model.tensor_info"))

    def consumers(self, index: int):
        """(op index, op name) of every operator that reads tensor ``index``."""
        return [(op.index, op.name) for op, _ in self._plan if index in op.inputs]

    def outputs_of(self, op_index: int):
        """Tensor indices written by operator ``op_index`` (-1 for an optional output left out)."""
        return list(self._operator(op_index)[0].outputs)

    def operator_inputs(self, op_index: int):
        """Tensor indices read by operator ``op_index`` (-1 for an absent optional input)."""
        return list(self._operator(op_index)[0].inputs)

    @property
    def approximations(self) -> list:
        """The operators that run with arithmetic other than the engine's own (a profile with
        ``TfliteProfile.approximate_float``): ``(op_index, op_name, how)``, ``how`` saying which kernel is not
        reproduced and by how much it differs (measured). Empty for a bit-exact model."""
        return [(op.index, op.name, prepared.params["approximate"]) for op, prepared in self._plan
                if "approximate" in prepared.params]

    def operator_params(self, op_index: int) -> dict:
        """The integer parameters operator ``op_index`` was prepared with (multipliers, shifts, zero
        points, activation bounds, ...), as its kernel receives them."""
        return dict(self._operator(op_index)[1].params)

    def run_operator(self, op_index: int, inputs):
        """Run operator ``op_index`` alone on ``inputs``: a list aligned with :meth:`operator_inputs`,
        where None takes the model's constant (or leaves an absent optional input absent). Returns the
        output (a list of them for an operator with several outputs), as :meth:`trace` would show it. A
        state operator (ASSIGN_VARIABLE...) acts on the model's state."""
        op, prep = self._operator(op_index)
        self._exec.detach()  # a READ_VARIABLE hands out the state's value: no view of a compiled arena
        y = prep.run(self._operator_args(op, inputs, "Model.run_operator"))
        self.state.drain_writes()
        outs = []
        for i, v in zip(op.outputs, y if isinstance(y, (tuple, list)) else (y,)):
            t = self._mdef.tensors[i] if i >= 0 else None
            if t is None or t.type_name == "RESOURCE":
                continue
            outs.append(v if t.dtype is None else np.asarray(v, dtype=t.dtype))
        return outs[0] if len(outs) == 1 else outs

    def has_stages(self, op_index: int) -> bool:
        """Whether operator ``op_index`` is a MAC operator whose accumulator stages :meth:`operator_stages`
        gives."""
        return self._operator(op_index)[1].stages is not None

    def stages_shape(self, op_index: int):
        """The shape a ``tap`` of :meth:`operator_stages` indexes (flat): the output's, or a recurrent operator's
        gate FC outputs (UNIDIRECTIONAL_SEQUENCE_LSTM (B, T, 4, N), time-major (T, B, 4, N); SVDF (B, F)); None
        where the output's is not declared."""
        op, prep = self._operator(op_index)
        shape = prep.stages_shape or self._mdef.tensors[op.outputs[0]].shape
        return None if shape is None else tuple(shape)

    def operator_stages(self, op_index: int, inputs, tap=None):
        """The accumulator stages of MAC operator ``op_index`` on ``inputs`` (as :meth:`run_operator` takes
        them): a :class:`~dspsim.kernels._common.MacStages` (``acc`` before the bias, ``acc_bias``, ``requant``
        before the output zero point and clamp, each of the output's shape), computed by the operator's own
        kernel under the engine's accumulator; ``tap`` (a flat index into the output) adds that output's taps
        in accumulation order. A recurrent operator (UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF; ``inputs`` with the state
        it starts from) gives a :class:`~dspsim.kernels._common.NamedStages` of its steps, ``tap`` a flat index into
        :meth:`stages_shape`."""
        op, prep = self._operator(op_index)
        func = "Model.operator_stages"
        if prep.stages is None:
            raise ValueError(f"{func}: operator {op_index} ({op.name}) has no accumulator stages (the MAC "
                             "operators of dspsim.kernels.mac's plans have them)")
        shape = self.stages_shape(op_index)
        size = None if shape is None or any(d is None or d < 0 for d in shape) else int(np.prod(shape))
        if tap is not None and (isinstance(tap, bool) or not isinstance(tap, (int, np.integer)) or tap < 0
                                or (size is not None and tap >= size)):
            raise ValueError(f"{func}: tap must be a flat index in [0, {size or 'size'}) of operator {op_index}'s "
                             f"output {shape}, got {tap!r}")
        return prep.stages(self._operator_args(op, inputs, func), None if tap is None else int(tap))

    def _operator_args(self, op, inputs, func):
        """:meth:`run_operator`'s ``inputs`` checked against operator ``op``'s tensors, constants filled in."""
        op_index = op.index
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
            if t is None:
                raise ValueError(f"{func}: input {k} of operator {op_index} ({op.name}) must be absent, got a value")
            if t.dtype is None:  # a format's own value type (an ONNX 4-bit array): passed as it is
                args.append(x)
                continue
            a = np.asarray(x)
            declared = t.shape is not None and all(d is not None and d >= 0 for d in t.shape)
            if a.dtype != t.dtype or (declared and a.shape != tuple(t.shape)):
                want = f"{t.dtype} {tuple(t.shape)}" if declared else f"{t.dtype}"
                raise ValueError(f"{func}: input {k} of operator {op_index} ({op.name}) must be {want}, got "
                                 f"{a.dtype} {a.shape}")
            args.append(a)
        return args

    def _operator(self, op_index):
        if isinstance(op_index, bool) or not isinstance(op_index, (int, np.integer)) \
                or not 0 <= op_index < len(self._plan):
            raise ValueError(f"Model: operator index must be in [0, {len(self._plan)}), got {op_index!r}")
        return self._plan[int(op_index)]

    def __repr__(self):
        ops = " ".join(name for _, name in self.operators)
        return f"<{self._KIND} engine={self.engine!r}: {len(self.operators)} ops: {ops}>"

    # ---------------------------------------------------------------------------------------------
    # running
    # ---------------------------------------------------------------------------------------------
    def _execute(self, inputs, keep, func):
        trace = Trace() if keep else None
        values = self._exec.run_subgraph(0, self._inputs(inputs, func), trace)
        return values, trace

    def run(self, inputs):
        """The model's outputs (a list, in the model's output order) for ``inputs``.

        A model with state (resource variables read and assigned across invocations, as the
        streaming microWakeWord models keep; variable tensors) keeps it between calls: each call is
        the next frame. :meth:`reset` starts over. ``inputs``: one array, or a list of arrays in the model's
        input order, each with exactly the input tensor's dtype and shape (the front end's rules: an ONNX
        model also takes a dict by name).
        """
        values, _ = self._execute(inputs, False, "Model.run")
        return [values[i] for i in self._mdef.outputs]

    def trace(self, inputs):
        """Every tensor of one run, in execution order: the model inputs, then each operator's output,
        as :class:`~dspsim.graph.executor.TraceEntry` (operator index and name, tensor index and name, value);
        a state write (ASSIGN_VARIABLE, an updated variable tensor) follows its operator, named "<variable>
        (state write)". A state-carrying model advances one frame, as :meth:`run` does."""
        return self._execute(inputs, True, "Model.trace")[1]

    def variables(self) -> dict:
        """The variable tensors of the main graph (LSTM and SVDF state), by tensor index: the values the next
        :meth:`run` reads (after a run, what it wrote; after :meth:`reset`, the initial values)."""
        return dict(self.state.variables_of(self._mdef.subgraphs[0]))

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
            self._stateful = any(op.name in _STATEFUL_OPS for sg in self._mdef.subgraphs
                                 for op in sg.operators) \
                or any(t.is_variable for sg in self._mdef.subgraphs for t in sg.tensors)
        return self._stateful

    @property
    def batch_blocker(self) -> str:
        """Why :meth:`run_batch` runs the samples one by one ("" when it runs each batch in one call)."""
        if self._blocker is None:
            self._blocker = self._batch_blocker() or ""
        return self._blocker

    def run_batch(self, inputs):
        """``run`` on N independent samples: each input has a leading axis N (``(N, *input.shape)``), and
        so has each output; the result is bit-identical to N calls of :meth:`run`.

        Where the front end prepares a batch-N copy of the model (a TFLite model whose operators keep the
        batch apart, as TFLite runs it after ``resize_tensor_input``), every operator takes the whole batch in
        one call, in chunks of at most :attr:`BATCH_BYTES` of activations; otherwise (:attr:`batch_blocker`
        says why) the samples run one by one.

        Threads (:func:`dspsim.set_num_threads`): where every thread gets at least one sample and a thread's worth
        of work (:meth:`_parts`), the samples are split into contiguous parts, up to a few per thread, which the
        threads take in turn, each part run (in its chunks) by an executor of its own with its operators on that
        thread: small operators at a large batch then run side by side instead of one by one; otherwise each
        operator splits its own work. The outputs are the same either way.

        For a state-carrying model N is the number of independent streams: the model keeps one state
        per stream, and each call advances every stream by one frame. A call with another N needs a
        :meth:`reset` first (ValueError otherwise). The streams' states are separate from the state of
        :meth:`run`; their split over threads is fixed by the first call (a stream always runs in the same part).
        """
        func = "Model.run_batch"
        if isinstance(inputs, dict):
            inputs = [inputs.get(i.name) for i in self.inputs]
        if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(self.inputs):
            raise ValueError(f"{func}: the model has {len(self.inputs)} input(s), got {len(inputs)}")
        arrays = [np.asarray(x) for x in inputs]
        for k, (a, info) in enumerate(zip(arrays, self.inputs)):
            if a.ndim == 0:
                raise ValueError(f"{func}: input {k} ({info.name!r}) needs a leading axis N, got a scalar")
            fixed = info.shape is not None and None not in info.shape
            if fixed and a.shape[1:] != tuple(info.shape):
                raise ValueError(f"{func}: input {k} ({info.name!r}) must have shape (N, "
                                 f"{', '.join(map(str, info.shape))}), got {a.shape}")
        n = arrays[0].shape[0]
        if any(a.shape[0] != n for a in arrays) or n == 0:
            raise ValueError(f"{func}: every input needs the same leading N >= 1, got {[a.shape[0] for a in arrays]}")
        self._inputs([a[0] for a in arrays], func)  # each sample as run() takes it
        if self._streams is not None and self._streams[0] != n:
            raise ValueError(f"{func}: the model carries {self._streams[0]} streams; call reset() before "
                             f"running {n}")
        one_by_one = bool(self.batch_blocker)
        stateful = self.stateful
        parts = self._streams[2] if stateful and self._streams is not None else self._parts(n)
        # each part (contiguous samples) in chunks of at most BATCH_BYTES / parts of activations
        chunk = 1 if one_by_one else max(1, self.BATCH_BYTES // (parts * max(1, self._exec.peak_bytes() or 1)))
        bounds = [n * p // parts for p in range(parts + 1)]
        jobs = [(p, lo, min(lo + chunk, hi)) for p, (lo0, hi) in enumerate(zip(bounds[:-1], bounds[1:]))
                for lo in range(lo0, hi, chunk)]
        if stateful and self._streams is None:
            self._streams = (n, [State() for _ in jobs], parts)
        work = n * self._sample_work()
        threads = 1 if parts == 1 else split_threads(parts, work)
        sizes = [hi - lo for _, lo, hi in jobs]
        pools = {size: self._executors(size, min(threads, sizes.count(size))) for size in set(sizes)}
        outs = [None] * len(jobs)

        def run_parts(p0, p1):
            for k, (p, lo, hi) in enumerate(jobs):
                if p0 <= p < p1:
                    ex = pools[hi - lo].pop()  # one executor per running part (list.pop: atomic under the GIL)
                    try:
                        outs[k] = self._run_chunk(ex, arrays, lo, hi, one_by_one,
                                                  self._streams[1][k] if stateful else None, func)
                    finally:
                        pools[hi - lo].append(ex)

        if threads == 1:
            run_parts(0, parts)
        else:
            parallel_rows(run_parts, parts, work)
        if len(outs) == 1:
            return outs[0]
        return [np.concatenate([o[k] for o in outs]) for k in range(len(self.outputs))]

    def _sample_work(self):
        """Elements of work of one sample (:meth:`~.executor.Executor.work`), at least 1."""
        return max(1, self._exec.work())

    def _parts(self, n):
        """How many parts :meth:`run_batch` splits ``n`` samples into: where every thread gets a sample, up to
        :data:`PARTS_PER_THREAD` per thread of :func:`dspsim._jit.split_threads` on the batch's work
        (taken in turn, as a kernel's chunks), each operator call of a part at least :data:`PART_OPERATOR_WORK`;
        1 otherwise (each operator splits its own work)."""
        threads = get_num_threads()
        if threads == 1 or n < threads:
            return 1
        work = n * self._sample_work()
        per_op = work // max(1, len(self._exec.steps[0]) * PART_OPERATOR_WORK)
        threads = min(split_threads(n, work), per_op)
        return 1 if threads <= 1 else min(n, per_op, PARTS_PER_THREAD * threads)

    def _run_chunk(self, ex, arrays, lo, hi, one_by_one, state, func):
        """Samples ``[lo, hi)`` of ``arrays`` through executor ``ex`` (with ``state`` swapped in, a stream chunk's):
        the outputs, each with a leading axis ``hi - lo``."""
        if state is not None:
            ex.state.swap(state)
        try:
            if one_by_one:
                values = ex.run_subgraph(0, self._inputs([a[lo] for a in arrays], func))
                return [np.asarray(values[i])[None] for i in self._mdef.outputs]
            values = ex.run_subgraph(0, [a[lo:hi].reshape(ex.mdef.tensors[i].shape)
                                         for a, i in zip(arrays, self._mdef.inputs)])
            return [values[i].reshape((hi - lo, *self._mdef.tensors[i].shape)) for i in self._mdef.outputs]
        finally:
            if state is not None:
                ex.state.swap(state)

    def _executors(self, n, count):
        """At least ``count`` executors of batch size ``n`` (prepared on first use, kept; one per part running at
        once, since a prepared operator may keep scratch memory): without a batch-N copy, the model's own first,
        or for a state-carrying model others on its definition (the streams' states stay apart from :meth:`run`'s)."""
        key = 1 if self.batch_blocker else n
        pool = self._batched.setdefault(key, [])
        while len(pool) < count:
            if self.batch_blocker:
                pool.append(self._exec if not pool and not self.stateful else self._prepare(self._mdef))
            else:
                pool.append(self._prepare(self._batch_def(n)))
        return pool
