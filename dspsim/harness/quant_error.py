"""Error of a quantized model against its float model, layer by layer: ``dspsim validate --float-model``.

What TFLite's QuantizationDebugger and ONNX Runtime's ``onnxruntime.quantization.qdq_loss_debug`` report, on
dspsim's integers: every integer tensor an operator of the quantized model writes is dequantized,
``(q - zero_point) * scale`` in float64, and compared with the matching tensor of the float model run on the same
samples (integer model inputs dequantized the same way), summed over the data set in real units
(:func:`dspsim.harness.compare.float_error` is the suite's one-shot measure, in LSB). The error is cumulative: the
float model's own path against the quantized model's, as ORT's ``xmodel_err`` (the QuantizationDebugger's layer
metrics are local instead: a float op fed the dequantized inputs of the quantized layer).

Metrics, with ``e = dequantized - float`` (the sign of TFLite's NumericVerify difference), over every element of
every sample (and frame):

* ``sqnr_db``: ``20 log10(max(||float||, eps) / max(||e||, eps))``, eps float64's machine epsilon: ORT's
  ``compute_signal_to_quantization_noice_ratio`` of the concatenated samples;
* ``max_abs_error``, ``mean_error`` (the bias), ``mean_squared_error``: the QuantizationDebugger's metrics of
  those names; ``mean_abs_error``: the mean of ``|e|``.

A layer with weights quantized per channel also gets them per output channel (``per_channel``: the last axis of a
TFLite tensor, axis 1 of an ONNX one), with each channel's float RMS: a channel that is 0 in float on every sample
(a dead ReLU) has an SQNR of 0 dB by ORT's epsilon rule, however exact, and the report's worst channel leaves it out.

Matching, in this order (each float tensor is taken at most once):

1. by name, after dropping the suffix ONNX Runtime's quantizer gives the integer tensor (``_QuantizeLinear_Output``
   in QDQ models, ``_quantized`` in QOperator ones); the shapes must agree;
2. a float tensor read only by an activation (:data:`ACTIVATIONS`) whose output no integer tensor matched by name:
   the activation's output instead (the quantizer folded the activation into the layer, and the integer tensor
   holds the activated values: ORT's QOperator ``QLinearConv`` after a ``Relu``);
3. by operator position and shape, for the integer tensors still unmatched (converters rename tensors): the next
   float tensor, after the float position of the previous match, written by the same operator type (``QLinearConv``
   counts as ``Conv``; a tensor that an ONNX ``QuantizeLinear`` or a TFLite ``QUANTIZE`` writes, as the operator
   before it, or as a model input: TFLite's ``tfl.quantize`` of a float-input model is the float model's input) and
   of the same shape.

The integer tensors left unmatched (``unmatched``) and the float operator outputs no integer tensor took
(``unmatched_float``) are listed.

The float model runs on ``executor``: ``"dspsim"`` (dspsim's float kernels), ``"interpreter"`` (LiteRT's
BUILTIN_REF kernels for .tflite, ONNX Runtime with graph optimizations off for .onnx, every intermediate kept,
under ``DSPSIM_INTERPRETER_PYTHON``, default this Python), or ``"auto"``: dspsim when it loads the float model,
else the interpreter. The result names the one that ran.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from ..interpreters import PIP, Kind, WorkerFailed, run_in, worker_python

#: The float executors ``--float-executor`` takes.
EXECUTORS = ("auto", "dspsim", "interpreter")
#: Operators a quantizer folds into the layer before them (matching rule 2).
ACTIVATIONS = frozenset({"Relu", "Clip", "LeakyRelu", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"})
#: Suffixes ONNX Runtime's quantizer appends to the name of an integer tensor (matching rule 1).
QUANT_SUFFIXES = ("_QuantizeLinear_Output", "_quantized")
#: Input positions of the output scale and zero point of ONNX's quantized operators.
_ONNX_OUTPUT_QPARAMS = {"QuantizeLinear": (1, 2), "QLinearConv": (6, 7), "QLinearMatMul": (6, 7), "QGemm": (7, 8),
                        "QLinearAdd": (6, 7), "QLinearMul": (6, 7), "QLinearConcat": (0, 1),
                        **{op: (3, 4) for op in ("QLinearSigmoid", "QLinearLeakyRelu", "QLinearGlobalAveragePool",
                                                 "QLinearAveragePool", "QLinearSoftmax")}}
#: Input position of the weight scale of ONNX's quantized MAC operators (per channel when it is a vector).
_ONNX_WEIGHT_SCALE = {"QLinearConv": 4, "QLinearMatMul": 4, "QGemm": 4}
_INTERPRETER = {"tflite": Kind.LITERT, "onnx": Kind.ONNXRUNTIME}
_EPS = np.finfo(np.float64).eps
_FUNC = "validate --float-model"


class FloatModelError(ValueError):
    """A float model that does not fit the quantized one, or that no executor runs: one line."""


# =============================================================================================
# the metrics
# =============================================================================================
def sqnr_db(signal_sq: float, noise_sq: float) -> float:
    """ORT's SQNR from the sums of squares of the float values and of the error."""
    return 20.0 * math.log10(max(math.sqrt(signal_sq), _EPS) / max(math.sqrt(noise_sq), _EPS))


class ErrorStats:
    """Sums of the float values and of ``e = dequantized - float``, over samples; per channel along ``axis``
    (None: whole tensors only)."""

    _SUMS = ("signal_sq", "error_sq", "abs_error", "error")

    def __init__(self, axis=None):
        self.axis, self.count, self.max_abs = axis, 0, 0.0
        self.total = dict.fromkeys(self._SUMS, 0.0)
        self.channels = None  # per channel: count, max |e| and the sums, arrays

    def add(self, dequantized: np.ndarray, reference: np.ndarray) -> None:
        f = np.asarray(reference, np.float64)
        e = np.asarray(dequantized, np.float64) - f
        parts = {"signal_sq": f * f, "error_sq": e * e, "abs_error": np.abs(e), "error": e}
        self.count += e.size
        self.max_abs = max(self.max_abs, float(np.max(np.abs(e), initial=0.0)))
        for k, v in parts.items():
            self.total[k] += float(v.sum())
        if self.axis is None or e.ndim == 0:
            return
        rest = tuple(a for a in range(e.ndim) if a != self.axis % e.ndim)
        ch = {k: v.sum(axis=rest) for k, v in parts.items()}
        ch["max_abs"] = np.abs(e).max(axis=rest, initial=0.0)
        ch["count"] = np.full(e.shape[self.axis], e.size // e.shape[self.axis], np.int64)
        if self.channels is None:
            self.channels = ch
            return
        for k, v in ch.items():
            self.channels[k] = np.maximum(self.channels[k], v) if k == "max_abs" else self.channels[k] + v

    def row(self) -> dict:
        """The metrics (module docstring), with ``per_channel`` (lists, one entry per channel) or None."""
        n = max(self.count, 1)
        t = self.total
        row = {"count": self.count, "sqnr_db": sqnr_db(t["signal_sq"], t["error_sq"]), "max_abs_error": self.max_abs,
               "mean_abs_error": t["abs_error"] / n, "mean_error": t["error"] / n,
               "mean_squared_error": t["error_sq"] / n, "per_channel": None}
        if self.channels is not None:
            c = self.channels
            row["per_channel"] = {"axis": self.axis,
                                  "sqnr_db": [sqnr_db(s, q) for s, q in zip(c["signal_sq"], c["error_sq"])],
                                  "max_abs_error": c["max_abs"].tolist(),
                                  "mean_abs_error": (c["abs_error"] / c["count"]).tolist(),
                                  "mean_error": (c["error"] / c["count"]).tolist(),
                                  "float_rms": np.sqrt(c["signal_sq"] / c["count"]).tolist()}
        return row


# =============================================================================================
# the two graphs
# =============================================================================================
@dataclass(frozen=True)
class FloatTensor:
    """A tensor of the float model: name, the operator writing it (-1, "INPUT" for a model input), and the key
    the interpreter fetches it by (a TFLite tensor index, an ONNX value name)."""

    name: str
    op_index: int
    op: str
    key: object


class FloatGraph:
    """The float model's tensors in execution order, what reads each, and its inputs (name, shape, dtype), read
    from the file (no executor needed)."""

    def __init__(self, data: bytes):
        from dspsim.load import model_format

        self.format = model_format(data).value
        (self._tflite if self.format == "tflite" else self._onnx)(data)
        self.by_name = {}
        for k, t in enumerate(self.tensors):
            self.by_name.setdefault(t.name, k)

    def _tflite(self, data):
        from dspsim.tflite.flatbuffer import read_model

        sg = read_model(data).main
        ts = sg.tensors
        self.inputs = [(ts[i].name, tuple(int(d) for d in ts[i].shape), np.dtype(ts[i].dtype or np.void))
                       for i in sg.inputs]
        self.n_outputs = len(sg.outputs)
        self.tensors = [FloatTensor(ts[i].name, -1, "INPUT", i) for i in sg.inputs]
        self.tensors += [FloatTensor(ts[o].name, op.index, op.name, o) for op in sg.operators for o in op.outputs
                         if o >= 0]
        self.readers = {}
        for op in sg.operators:
            for i in op.inputs:
                if i >= 0:
                    self.readers.setdefault(ts[i].name, []).append((op.name, [ts[o].name for o in op.outputs]))

    def _onnx(self, data):
        from dspsim.onnx.proto import read_model
        from dspsim.onnx.types import NATIVE

        g = read_model(data).graph
        feeds = [v for v in g.inputs if v.name not in g.initializers]
        self.inputs = [(v.name, v.shape, np.dtype(NATIVE.get(v.elem_type, np.void))) for v in feeds]
        self.n_outputs = len(g.outputs)
        self.tensors = [FloatTensor(v.name, -1, "INPUT", v.name) for v in feeds]
        self.tensors += [FloatTensor(o, k, n.op_type, o) for k, n in enumerate(g.nodes) for o in n.outputs if o]
        self.readers = {}
        for n in g.nodes:
            for i in n.inputs:
                if i:
                    self.readers.setdefault(i, []).append((n.op_type, [o for o in n.outputs if o]))


class QuantGraph:
    """Where the quantized model's integer tensors get their scale and zero point, and which layers have weights
    quantized per channel: from the TFLite tensors, or from the ONNX operators that write them."""

    def __init__(self, model, data: bytes):
        from dspsim.load import model_format

        self.model = model
        self.format = model_format(data).value
        self._tensors = None
        if self.format == "tflite":
            from dspsim.tflite.flatbuffer import read_model

            self._tensors = read_model(data).main.tensors
        self.producer = {o: (k, name) for k, name in model.operators for o in model.outputs_of(k) if o >= 0}
        self.channel_axis = -1 if self.format == "tflite" else 1

    def _const(self, index):
        return None if index < 0 else self.model.tensor_value(index)

    def qparams(self, tensor: int):
        """``(scale, zero_point, axis)`` of integer tensor ``tensor`` as float64 / int64 arrays, or None."""
        if self._tensors is not None:
            t = self._tensors[tensor]
            if t.scale.size == 0:
                return None
            zp = t.zero_point if t.zero_point.size else np.zeros(1, np.int64)
            return t.scale.astype(np.float64), zp.astype(np.int64), t.quantized_dimension
        if tensor not in self.producer:
            return None
        k, op = self.producer[tensor]
        ins = self.model.operator_inputs(k)
        if op in _ONNX_OUTPUT_QPARAMS:
            s, z = _ONNX_OUTPUT_QPARAMS[op]
            scale = self._const(ins[s]) if s < len(ins) else None
            if scale is None:
                return None
            zp = self._const(ins[z]) if z < len(ins) else None
            return (np.asarray(scale, np.float64).ravel(),
                    np.zeros(1, np.int64) if zp is None else np.asarray(zp, np.int64).ravel(), 1)
        if ins and ins[0] >= 0 and op != "DequantizeLinear":  # a data-movement operator keeps its input's
            return self.qparams(ins[0])
        return None

    def layer(self, tensor: int):
        """(op index, operator type) of the layer that computes ``tensor``: a quantizing operator's (ONNX's
        QuantizeLinear, TFLite's QUANTIZE) is the operator before it ("INPUT" for a model input); ``QLinearConv``
        and ``QGemm`` count as ``Conv`` and ``Gemm``."""
        k, op = self.producer[tensor]
        if op in ("QuantizeLinear", "QUANTIZE"):
            k, op = self.producer.get(self.model.operator_inputs(k)[0], (-1, "INPUT"))
        if self.format == "onnx" and op.startswith("Q") and op != "QuantizeLinear":
            op = op.removeprefix("QLinear").removeprefix("Q")
        return k, op

    def per_channel(self, tensor: int) -> bool:
        """Whether the layer computing ``tensor`` has a weight quantized per channel."""
        k, op = self.producer[tensor]
        if self._tensors is not None:
            return any(self._tensors[i].scale.size > 1 for i in self.model.operator_inputs(k) if i >= 0)
        if op in _ONNX_WEIGHT_SCALE:
            ins = self.model.operator_inputs(k)
            return _ONNX_WEIGHT_SCALE[op] < len(ins) and np.size(self._const(ins[_ONNX_WEIGHT_SCALE[op]])) > 1
        k, _ = self.layer(tensor)  # a QDQ tensor: the float operator and the DequantizeLinear feeding it
        dq = [self.producer[i][0] for i in (self.model.operator_inputs(k) if k >= 0 else ())
              if self.producer.get(i, (0, ""))[1] == "DequantizeLinear"]
        return any(np.size(self._const(self.model.operator_inputs(j)[1])) > 1 for j in dq)


def dequantize(q, scale, zero_point, axis) -> np.ndarray:
    """``(q - zero_point) * scale`` in float64; per-channel parameters along ``axis``."""
    q = np.asarray(q, np.float64)
    if scale.size > 1 and q.ndim:
        shape = [1] * q.ndim
        shape[axis] = -1
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    return (q - zero_point) * scale


# =============================================================================================
# matching
# =============================================================================================
@dataclass
class Pair:
    """One integer tensor of the quantized model and the float tensor it is compared with."""

    op_index: int
    op: str
    tensor: int
    name: str
    shape: tuple
    qparams: tuple
    layer: str  # the layer's operator type (:meth:`QuantGraph.layer`)
    float_name: str | None = None
    match: str | None = None  # "name", "activation", "position"


def _base_name(name: str) -> str:
    for s in QUANT_SUFFIXES:
        if name.endswith(s):
            return name[:-len(s)]
    return name


def match(pairs: list, fgraph: FloatGraph, float_shapes: dict) -> None:
    """Fill ``float_name`` and ``match`` of ``pairs`` (in trace order) by the rules of the module docstring;
    ``float_shapes``: name -> shape of the float values there are."""
    taken = {}

    def fits(name, p):
        return name in float_shapes and tuple(float_shapes[name]) == p.shape and name not in taken

    for p in pairs:  # 1. by name
        base = _base_name(p.name)
        if fits(base, p):
            p.float_name, p.match, taken[base] = base, "name", p
    for p in pairs:  # 2. through an activation the quantizer folded
        readers = fgraph.readers.get(p.float_name, []) if p.match == "name" else []
        if len(readers) == 1 and readers[0][0] in ACTIVATIONS and len(readers[0][1]) == 1 and fits(readers[0][1][0], p):
            del taken[p.float_name]
            p.float_name, p.match = readers[0][1][0], "activation"
            taken[p.float_name] = p
    last = -1  # 3. by operator position and shape
    for p in pairs:
        if p.float_name is not None:
            last = max(last, fgraph.by_name.get(p.float_name, last))
            continue
        for k in range(last + 1, len(fgraph.tensors)):
            t = fgraph.tensors[k]
            if t.op == p.layer and fits(t.name, p):
                p.float_name, p.match, taken[t.name], last = t.name, "position", p, k
                break


# =============================================================================================
# the run
# =============================================================================================
class LayerErrors:
    """Per-layer error of ``model`` (a dspsim Model of the quantized file ``model_data``) against the float model
    ``float_data``; :meth:`add` each chunk of samples, then :meth:`result`.

    ``traces(model, arrays, streaming, i)``: the traces of sample (stream) ``i`` of a chunk, one list of
    TraceEntry per frame (``dspsim.harness.validate``'s).
    """

    def __init__(self, model, model_data, float_data: bytes, *, traces, float_name="float model", executor="auto"):
        if executor not in EXECUTORS:
            raise FloatModelError(f"{_FUNC}: the float executor must be one of {list(EXECUTORS)}, got {executor!r}")
        if model_data is None:
            raise FloatModelError(f"{_FUNC}: needs the quantized model as a file, not a model made in memory")
        self.model, self.traces, self.float_name = model, traces, float_name
        self.streaming = bool(model.stateful)
        self.quant = QuantGraph(model, model_data)
        try:
            self.fgraph = FloatGraph(float_data)
        except ValueError as exc:
            raise FloatModelError(f"{_FUNC}: {float_name}: {str(exc).splitlines()[0]}") from None
        self._check_inputs()
        self.float_data = float_data
        self.fmodel, self.executor = None, None
        if executor in ("auto", "dspsim"):
            from dspsim.load import load_model

            try:
                self.fmodel, self.executor = load_model(float_data), "dspsim"
            except (ValueError, TypeError) as exc:
                if executor == "dspsim":
                    raise FloatModelError(f"{_FUNC}: dspsim cannot run {float_name}: "
                                          f"{str(exc).splitlines()[0]}") from None
        if self.fmodel is None:
            self.kind = _INTERPRETER[self.fgraph.format]
            self.executor = f"interpreter:{self.kind.value}"
        self.pairs, self.stats = None, None

    def _check_inputs(self):
        q, f = self.model.inputs, self.fgraph.inputs
        if len(q) != len(f):
            raise FloatModelError(f"{_FUNC}: the float model has {len(f)} input(s), the quantized one {len(q)}")
        for info, (name, shape, dtype) in zip(q, f):
            if dtype != np.float32:
                raise FloatModelError(f"{_FUNC}: the float model's input {name!r} is {dtype}, not float32")
            if shape is not None and info.shape is not None and tuple(shape) != tuple(info.shape):
                raise FloatModelError(f"{_FUNC}: the float model's input {name!r} has shape {tuple(shape)}, the "
                                      f"quantized model's {info.name!r} {tuple(info.shape)}")
            if info.dtype != np.float32 and info.scale is None:
                raise FloatModelError(f"{_FUNC}: the quantized model's input {info.name!r} is {info.dtype} without "
                                      "a per-tensor scale: no float input to give the float model")

    def float_inputs(self, arrays) -> list:
        """The chunk's inputs for the float model: float inputs as they are, integer ones dequantized."""
        out = []
        for a, info in zip(arrays, self.model.inputs):
            if info.dtype == np.float32:
                out.append(a)
            else:
                out.append(((a.astype(np.float64) - info.zero_point) * info.scale).astype(np.float32))
        return out

    def _float_values(self, farrays) -> list:
        """Per sample (stream) of the chunk, per frame: {float tensor name: value}."""
        n = farrays[0].shape[0]
        if self.fmodel is not None:
            return [[{e.name: e.value for e in trace} for trace in self.traces(self.fmodel, farrays, self.streaming,
                                                                                i)] for i in range(n)]
        keys = [t.key for t in self.fgraph.tensors if t.op_index >= 0]
        try:
            res = run_in(worker_python() or sys.executable, self.kind, self.float_data, farrays,
                         streaming=self.streaming, n_outputs=self.fgraph.n_outputs, tensors=keys,
                         preserve_all_tensors=True)
        except WorkerFailed as exc:
            why = (f"needs the {PIP[self.kind]} package (in DSPSIM_INTERPRETER_PYTHON or this Python)"
                   if "No module named" in exc.last_line else f"failed on the float model (exit {exc.returncode})")
            raise FloatModelError(f"{_FUNC}: the {self.kind.value} interpreter {why}"
                                  + (f": {exc.last_line[:200]}" if exc.last_line else "")) from None
        names = [t.name for t in self.fgraph.tensors if t.op_index >= 0]
        inputs = [t.name for t in self.fgraph.tensors if t.op_index < 0]
        frames = farrays[0].shape[1] if self.streaming else 1
        out = []
        for i in range(n):
            per_frame = []
            for t in range(frames):
                idx = (i, t) if self.streaming else (i,)
                v = {name: a[idx] for name, a in zip(inputs, farrays)}
                v.update({name: res[f"t{k}"][idx] for k, name in enumerate(names) if f"t{k}" in res})
                per_frame.append(v)
            out.append(per_frame)
        return out

    def _pairs(self, trace, values) -> list:
        pairs = []
        for e in trace:
            a = np.asarray(e.value)
            if e.op_index < 0 or not np.issubdtype(a.dtype, np.integer) or e.tensor not in self.quant.producer:
                continue
            qp = self.quant.qparams(e.tensor)
            if qp is not None:
                pairs.append(Pair(e.op_index, e.op, e.tensor, e.name, a.shape, qp, self.quant.layer(e.tensor)[1]))
        match(pairs, self.fgraph, {k: np.shape(v) for k, v in values.items()})
        return pairs

    def add(self, arrays) -> None:
        """Accumulate the error over a chunk of samples (the arrays of validate's data set)."""
        fvalues = self._float_values(self.float_inputs(arrays))
        for i in range(arrays[0].shape[0]):
            for trace, values in zip(self.traces(self.model, arrays, self.streaming, i), fvalues[i]):
                if self.pairs is None:
                    self.pairs = self._pairs(trace, values)
                    self.stats = [ErrorStats(self.quant.channel_axis if p.float_name and
                                             self.quant.per_channel(p.tensor) else None) for p in self.pairs]
                by_tensor = {e.tensor: e.value for e in trace}
                for p, s in zip(self.pairs, self.stats):
                    if p.float_name is not None:
                        s.add(dequantize(by_tensor[p.tensor], *p.qparams), values[p.float_name])

    def result(self) -> dict:
        """The ``float_error`` entry of validate's results (module docstring)."""
        pairs = self.pairs or []
        taken = {p.float_name for p in pairs}
        layers = [{"op_index": p.op_index, "op": p.op, "layer": p.layer, "tensor": p.tensor, "name": p.name,
                   "float_name": p.float_name, "match": p.match, "shape": list(p.shape), **s.row()}
                  for p, s in zip(pairs, self.stats or []) if p.float_name is not None]
        return {"float_model": self.float_name, "executor": self.executor, "layers": layers,
                "unmatched": [{"op_index": p.op_index, "op": p.op, "tensor": p.tensor, "name": p.name,
                               "shape": list(p.shape)} for p in pairs if p.float_name is None],
                "unmatched_float": [t.name for t in self.fgraph.tensors if t.op_index >= 0 and t.name not in taken]}


# =============================================================================================
# the report
# =============================================================================================
def render_md(fe: dict) -> str:
    """The "Error against the float model" section of validate's ``summary.md``."""
    from dspsim.harness.report import _fmt, _table

    lines = ["## Error against the float model", "",
             f"Float model `{fe['float_model']}` run by `{fe['executor']}`; error = dequantized integers - float, "
             "over every sample (SQNR as ONNX Runtime's qdq_loss_debug; mean error = bias).", ""]
    rows = []
    for r in fe["layers"]:
        rows.append([r["op_index"], r["layer"], f"`{r['name']}`", f"`{r['float_name']}` ({r['match']})",
                     _fmt(r["sqnr_db"], 2), f"{r['max_abs_error']:.4g}", f"{r['mean_abs_error']:.4g}",
                     f"{r['mean_error']:+.3g}", _worst_channel(r["per_channel"])])
    lines += _table(["op", "type", "tensor", "float tensor (match)", "SQNR dB", "max abs err", "mean abs err",
                     "mean err", "worst channel SQNR dB"], rows)
    if fe["unmatched"]:
        lines += ["Integer tensors with no float twin: " + ", ".join(
            f"{u['op_index']} {u['op']} `{u['name']}` {tuple(u['shape'])}" for u in fe["unmatched"]), ""]
    if fe["unmatched_float"]:
        lines += [f"Float tensors no integer tensor took ({len(fe['unmatched_float'])}): "
                  + ", ".join(f"`{n}`" for n in fe["unmatched_float"][:20])
                  + (" …" if len(fe["unmatched_float"]) > 20 else ""), ""]
    return "\n".join(lines)


def _live_channels(pc) -> list:
    """(SQNR, channel) of the channels that are not 0 in float on every sample."""
    return [(q, c) for c, (q, rms) in enumerate(zip(pc["sqnr_db"], pc["float_rms"])) if rms > 0]


def _worst_channel(pc) -> str:
    if pc is None:
        return "–"
    live = _live_channels(pc)
    dead = len(pc["sqnr_db"]) - len(live)
    text = "{:.2f} (ch {})".format(*min(live)) if live else "–"
    return text + (f"; {dead} channel{'s' if dead > 1 else ''} 0 in float" if dead else "")


def summary_lines(fe: dict) -> list:
    """What ``dspsim validate`` prints of the float error."""
    if not fe["layers"]:
        return [f"float model: no integer tensor matched ({len(fe['unmatched'])} unmatched)"]
    worst = min(fe["layers"], key=lambda r: r["sqnr_db"])
    return [f"float model ({fe['executor']}): {len(fe['layers'])} layers compared, {len(fe['unmatched'])} "
            f"unmatched; lowest SQNR {worst['sqnr_db']:.2f} dB at op {worst['op_index']} {worst['layer']} "
            f"({worst['name']}), output SQNR {fe['layers'][-1]['sqnr_db']:.2f} dB"]


def _tail(name: str, n: int) -> str:
    """The end of a long tensor name (TFLite's share their scope's start)."""
    return name if len(name) <= n else "…" + name[1 - n:]


def plot(fe: dict, title: str, path) -> None:
    """SQNR per layer (bars labelled in dB; a capped value, >= 200 dB, is an exact match), each channel of a
    per-channel layer a red tick (not those 0 in float). One PNG at ``path``, the report's width and fonts."""
    from dspsim.harness.report import _figure, _save

    rows = fe["layers"]
    ys = np.arange(len(rows))
    fig, axes = _figure(1, 1, 1.6 + 0.34 * max(len(rows), 4))
    ax = axes[0][0]
    values = [min(r["sqnr_db"], 200.0) for r in rows]
    ax.barh(ys, values, color="C0", height=0.7)
    for y, r in zip(ys, rows):
        ax.annotate(f"{r['sqnr_db']:.1f} dB", (0, y), xytext=(4, 0), textcoords="offset points", va="center",
                    color="white", fontweight="bold")
    channels = [(y, q) for y, r in zip(ys, rows) if r["per_channel"] for q, _ in _live_channels(r["per_channel"])]
    if channels:
        ax.plot([min(q, 200.0) for _, q in channels], [y for y, _ in channels], "|", color="C3", markersize=12,
                markeredgewidth=2)
    ax.set_yticks(ys, [f"{r['op_index']} {r['layer']} {_tail(r['name'], 24)}" for r in rows])
    ax.set_ylim(max(len(rows), 1) - 0.5, -0.5)
    ax.set_xlabel("SQNR against the float model, dB (higher is better)"
                  + ("\nred ticks: one per output channel" if channels else ""))
    ax.set_xlim(min([0.0] + [q for _, q in channels]), max(values + [q for _, q in channels] + [1.0]) * 1.08)
    ax.grid(axis="x", alpha=0.3)
    fig.suptitle(title)
    _save(fig, path)
