"""A loaded ONNX model: its nodes prepared once, run through dspsim's kernels in graph order."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ops import PREPARE, Context, check_constant_scales, check_input_count
from .proto import ModelDef
from .types import NATIVE, ElemType, QArray, type_name

ENGINES = ("onnxruntime", "onnxruntime-optimized", "onnx-reference")
# Opset range of the default domain (ai.onnx) dspsim's operator semantics are written for
# (10: the first quantization operators; 28: the newest the onnx 1.23 backend tests use).
OPSET_MIN, OPSET_MAX = 10, 28
_FUNC = "dspsim.onnx.load_model"


@dataclass(frozen=True)
class TensorInfo:
    """A graph input or output: name, element type, shape (None = symbolic dimension)."""

    name: str
    elem_type: ElemType
    shape: tuple | None


@dataclass(frozen=True)
class TraceEntry:
    """One tensor of a run: ``node_index`` (-1 for a graph input), ``op_type`` ("INPUT" for a graph
    input), ``name`` (the tensor's name) and ``value`` (ndarray or QArray)."""

    node_index: int
    op_type: str
    name: str
    value: object


class Model:
    """A quantized ONNX model run with dspsim's bit-exact kernels (:func:`dspsim.onnx.load_model`).

    Attributes
    ----------
    engine : "onnxruntime" | "onnxruntime-optimized" | "onnx-reference"
    shift_rounding : None or a tie rule ("half_to_even", "half_away_from_zero", "half_up", ...)
        None: the engine's requantization. A tie rule: QLinearConv, QLinearMatMul and QGemm (fused or
        QOperator) requantize power-of-two scales by a shift, as a DSP does (:func:`.quantization.pof2_requant`);
        the other operators keep the engine's arithmetic.
    vnni : bool
        Whether the ONNX Runtime being emulated runs on an x86 host with VNNI. False (default, as the
        AVX2 host of the golden vectors): MLAS's uint8 x int8 GEMMs saturate product pairs to int16
        (``vpmaddubsw``); True: they are exact.
    inputs, outputs : list of TensorInfo
    nodes : list of (index, op_type) in execution order (after fusion for "onnxruntime-optimized")
    """

    def __init__(self, mdef: ModelDef, engine: str = "onnxruntime", shift_rounding=None, vnni=False):
        if engine not in ENGINES:
            raise ValueError(f"{_FUNC}: engine must be one of {ENGINES}, got {engine!r}")
        if shift_rounding is not None:
            from ..fixedpoint import rounding_mode

            rounding_mode(shift_rounding, _FUNC)  # a tie-rule name, validated here
        self.engine = engine
        self.shift_rounding = shift_rounding
        g = mdef.graph
        opset = mdef.opsets.get("", None)
        if opset is None:
            raise ValueError(f"{_FUNC}: the model imports no ai.onnx opset")
        if not OPSET_MIN <= opset <= OPSET_MAX:
            raise ValueError(f"{_FUNC}: ai.onnx opset {opset} is outside the supported range "
                             f"[{OPSET_MIN}, {OPSET_MAX}]")
        for dom in mdef.opsets:
            if dom not in ("", "com.microsoft", "ai.onnx.ml"):
                raise ValueError(f"{_FUNC}: operator domain {dom!r} is not supported")
        if g.sparse:
            raise ValueError(f"{_FUNC}: sparse initializers are not supported")
        self.opset = opset
        constants = {name: t.array("initializer") for name, t in g.initializers.items()}
        init_names = set(constants)
        self.inputs = [self._info(v) for v in g.inputs if v.name not in init_names]
        self.outputs = [self._info(v) for v in g.outputs]
        nodes = list(g.nodes)
        for n in nodes:
            check_input_count(n)
        if engine == "onnxruntime-optimized":
            from .fusion import fuse_qdq

            nodes = fuse_qdq(nodes, constants, opset, ort_rules=shift_rounding is None)
        self.vnni = bool(vnni)
        ctx = Context(engine, constants, shift_rounding, self.vnni, opset)
        known = set(constants) | {v.name for v in self.inputs} | {""}
        self._plan = []
        from .qoperator import PREPARE_QOP

        table = {**PREPARE, **PREPARE_QOP}
        for n in nodes:
            if n.domain not in ("", "ai.onnx", "com.microsoft"):
                raise ValueError(f"{_FUNC}: {n.label}: domain {n.domain!r} is not supported")
            if n.op_type not in table:
                raise ValueError(f"{_FUNC}: {n.label}: operator {n.op_type} is not supported by dspsim.onnx "
                                 f"(supported: {', '.join(sorted(table))})")
            for name in n.inputs:
                if name not in known:
                    where = "an initializer that is missing" if name else "a tensor"
                    raise ValueError(f"{_FUNC}: {n.label} reads {name!r}, which no node, graph input or "
                                     f"initializer provides ({where})")
            check_constant_scales(n, constants)
            run = table[n.op_type](n, ctx)
            if n.op_type == "Constant":  # folded at load
                constants[n.outputs[0]] = run([])[0]
            self._plan.append((n, run))
            known.update(n.outputs)
        for o in self.outputs:
            if o.name not in known:
                raise ValueError(f"{_FUNC}: graph output {o.name!r} is never written")
        self._constants = constants
        self.nodes = [(n.index, n.op_type) for n, _ in self._plan]

    @staticmethod
    def _info(v):
        try:
            t = ElemType(v.elem_type)
        except ValueError:
            raise ValueError(f"{_FUNC}: tensor {v.name!r} has unknown element type {v.elem_type}") from None
        return TensorInfo(v.name, t, v.shape)

    def __repr__(self):
        shift = "" if self.shift_rounding is None else f" shift_rounding={self.shift_rounding!r}"
        return f"<dspsim.onnx.Model engine={self.engine!r}{shift} opset={self.opset}: {len(self.nodes)} nodes>"

    def _inputs(self, inputs, func):
        if isinstance(inputs, dict):
            missing = [i.name for i in self.inputs if i.name not in inputs]
            extra = sorted(set(inputs) - {i.name for i in self.inputs})
            if missing or extra:
                raise ValueError(f"{func}: inputs by name need exactly {[i.name for i in self.inputs]}; "
                                 f"missing {missing}, unknown {extra}")
            inputs = [inputs[i.name] for i in self.inputs]
        elif isinstance(inputs, (np.ndarray, QArray)) or not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(self.inputs):
            raise ValueError(f"{func}: the model has {len(self.inputs)} input(s), got {len(inputs)}")
        out = []
        for x, info in zip(inputs, self.inputs):
            if isinstance(x, QArray):
                if x.type != info.elem_type:
                    raise TypeError(f"{func}: input {info.name!r} must be {info.elem_type.name}, got {x.type.name}")
                out.append(x)
                continue
            a = np.asarray(x)
            want = NATIVE.get(info.elem_type)
            if want is None or a.dtype != want:
                raise TypeError(f"{func}: input {info.name!r} must have element type {type_name(info.elem_type)}"
                                f", got numpy dtype {a.dtype}")
            fixed = info.shape is not None and (len(info.shape) != a.ndim or any(
                d is not None and d > 0 and d != s for d, s in zip(info.shape, a.shape)))
            if fixed:
                raise ValueError(f"{func}: input {info.name!r} must have shape {info.shape}, got {a.shape}")
            out.append(a)
        return out

    def _execute(self, inputs, keep, func):
        values = dict(self._constants)
        values[""] = None
        trace = []
        for info, x in zip(self.inputs, self._inputs(inputs, func)):
            values[info.name] = x
            if keep:
                trace.append(TraceEntry(-1, "INPUT", info.name, x))
        for n, run in self._plan:
            try:
                outs = run([values[name] for name in n.inputs])
            except (ValueError, TypeError) as exc:  # every run-time error names the call and the node
                msg = str(exc)
                raise type(exc)(msg if msg.startswith(func) else f"{func}: {msg}") from None
            for name, v in zip(n.outputs, outs):
                values[name] = v
                if keep and name:
                    trace.append(TraceEntry(n.index, n.op_type, name, v))
        return values, trace

    def run(self, inputs):
        """The graph outputs (a list in graph-output order) for ``inputs``: a list in graph-input order
        or a dict by name, each with the input's element type and shape."""
        values, _ = self._execute(inputs, False, "Model.run")
        return [values[o.name] for o in self.outputs]

    def run_batch(self, inputs):
        """Run N samples: every input has a leading axis N (over the model's own batch dimension of 1,
        or any batch); the outputs are stacked on a new leading axis."""
        if isinstance(inputs, dict):
            inputs = [inputs[i.name] for i in self.inputs]
        elif isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        arrays = [np.asarray(x) for x in inputs]
        n = {a.shape[0] for a in arrays}
        if len(n) != 1:
            raise ValueError(f"Model.run_batch: inputs have different leading sizes {sorted(n)}")
        outs = [self.run([a[i] for a in arrays]) for i in range(n.pop())]
        return [np.stack([o[k] for o in outs]) for k in range(len(self.outputs))]

    def trace(self, inputs):
        """Every tensor of one run in execution order, as :class:`TraceEntry`: the graph inputs, then
        each node's outputs."""
        return self._execute(inputs, True, "Model.trace")[1]

    def reset(self):
        """ONNX graphs have no state between runs: nothing to reset (kept for the shared Model interface)."""
