"""A loaded .tflite model: its operators prepared once, run through dspsim's kernels in model order."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..accumulator import Accumulator
from .flatbuffer import ModelDef
from .ops import ENGINES, PREPARE, Graph, SUPPORTED_OPS


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


class Model:
    """An int8 TFLite model, run layer by layer with dspsim's bit-exact kernels.

    Build it with :func:`dspsim.tflite.load_model`. Every operator's integer parameters are derived
    once, at load time, from the float32 scales stored in the flatbuffer, exactly as LiteRT's
    Prepare does; models LiteRT refuses are refused there with a ValueError naming the operator.

    Attributes
    ----------
    engine : str
        "litert" (LiteRT's reference kernels, ``OpResolverType.BUILTIN_REF``), "tflite"
        (FULLY_CONNECTED with ``MultiplyByQuantizedMultiplier`` as TFLite/TFLM's integer kernel) or
        "xnnpack" (LiteRT's default interpreter, whose XNNPACK delegate takes every supported node:
        FC/conv/depthwise requantized in float32 with ties to even, and XNNPACK's own ADD, MUL, MEAN,
        LEAKY_RELU and QUANTIZE kernels wherever the delegate accepts the node's scales; the rest as
        the reference).
    accumulator : Accumulator or None
        The accumulator of FULLY_CONNECTED / CONV_2D / DEPTHWISE_CONV_2D (None: int32 wrapping, as
        LiteRT). A narrower or saturating :class:`dspsim.Accumulator` simulates a DSP's register on
        the whole model; ``trace`` then shows where its outputs first leave the reference.
    inputs, outputs : list of TensorInfo
    operators : list of (index, builtin op name)
    """

    def __init__(self, mdef: ModelDef, engine: str = "litert", accumulator=None):
        if engine not in ENGINES:
            raise ValueError(f"load_model: engine must be one of {sorted(ENGINES)}, got {engine!r}")
        if accumulator is not None and not isinstance(accumulator, Accumulator):
            raise TypeError(f"load_model: accumulator must be a dspsim.Accumulator, got {type(accumulator).__name__}")
        self.engine = engine
        self.accumulator = accumulator
        self._mdef = mdef
        g = Graph(mdef, engine, accumulator)
        for i in mdef.inputs:
            if mdef.tensors[i].dtype is None:
                raise ValueError(f"load_model: input tensor {i} has unsupported type {mdef.tensors[i].type_name}")
        known = set(mdef.inputs) | {t.index for t in mdef.tensors if t.data is not None}
        self._plan = []
        for op in mdef.operators:
            if op.name not in PREPARE:
                raise ValueError(f"load_model: operator {op.index} is {op.name}, which dspsim does not support "
                                 f"(supported: {', '.join(SUPPORTED_OPS)})")
            for i in op.inputs:
                if i >= 0 and i not in known:
                    raise ValueError(f"load_model: operator {op.index} ({op.name}) reads tensor {i} "
                                     f"({mdef.tensors[i].name!r}) before any operator writes it")
            for i in op.outputs:
                t = mdef.tensors[i]
                if t.dtype is None:
                    raise ValueError(f"load_model: operator {op.index} ({op.name}) writes tensor {i} of unsupported "
                                     f"type {t.type_name}")
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # huge scales: refused below
                self._plan.append((op, PREPARE[op.name](op, g)))
            known.update(op.outputs)
        for i in mdef.outputs:
            if i not in known:
                raise ValueError(f"load_model: model output tensor {i} is never written")
        self.inputs = [_info(mdef.tensors[i]) for i in mdef.inputs]
        self.outputs = [_info(mdef.tensors[i]) for i in mdef.outputs]
        self.operators = [(op.index, op.name) for op, _ in self._plan]

    def tensor_info(self, index: int) -> TensorInfo:
        """Name, shape, dtype and per-tensor quantization of tensor ``index`` of the subgraph."""
        return _info(self._mdef.tensors[index])

    def consumers(self, index: int):
        """(op index, op name) of every operator that reads tensor ``index``."""
        return [(op.index, op.name) for op, _ in self._plan if index in op.inputs]

    def outputs_of(self, op_index: int):
        """Tensor indices written by operator ``op_index``."""
        return list(self._mdef.operators[op_index].outputs)

    def __repr__(self):
        ops = " ".join(name for _, name in self.operators)
        acc = "" if self.accumulator is None else f" accumulator={self.accumulator!r}"
        return f"<dspsim.tflite.Model engine={self.engine!r}{acc}: {len(self.operators)} ops: {ops}>"

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
        values = {t.index: t.data for t in self._mdef.tensors if t.data is not None}
        trace = []
        for k, (i, x) in enumerate(zip(self._mdef.inputs, self._inputs(inputs))):
            values[i] = x
            if keep:
                trace.append(TraceEntry(-1, "INPUT", i, self._mdef.tensors[i].name, x))
        for op, run in self._plan:
            y = run([values[i] if i >= 0 else None for i in op.inputs])
            t = self._mdef.tensors[op.outputs[0]]
            y = np.asarray(y, dtype=t.dtype)
            values[op.outputs[0]] = y
            if keep:
                trace.append(TraceEntry(op.index, op.name, t.index, t.name, y))
        return values, trace

    def run(self, inputs):
        """The model's outputs (a list, in the model's output order) for ``inputs``.

        ``inputs``: one array, or a list of arrays in the model's input order, each with exactly the
        input tensor's dtype (int8 for an int8 model, float32 where the model starts with QUANTIZE)
        and shape.
        """
        values, _ = self._execute(inputs, False)
        return [values[i] for i in self._mdef.outputs]

    def trace(self, inputs):
        """Every tensor of one run, in execution order: the model inputs, then each operator's output,
        as :class:`TraceEntry` (operator index and name, tensor index and name, value)."""
        return self._execute(inputs, True)[1]
