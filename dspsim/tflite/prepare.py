"""What every TFLite builtin's Prepare shares: the model context, refusals, and the parameter helpers.

A builtin module in :mod:`dspsim.tflite.builtins` registers one prepare function per operator
with :func:`builtin`. ``prepare(op, g)`` does what the engine's Prepare does (checks, integer
parameters from the float32 scales) and returns a :class:`Prepared`: the op's ``run(inputs) ->
output`` (``inputs`` are the arrays of the operator's inputs, None for an absent optional input)
and its integer parameters. Every refusal is a ValueError naming the operator
(``load_model: operator k (NAME): ...``); a kernel error at run time names it too
(``Model.run: operator k (NAME): ...``).
Sources: google-ai-edge/LiteRT ``tflite/kernels/*.cc`` and ``internal/reference/``, tensorflow/tflite-micro
``tensorflow/lite/micro/kernels/``; docs/semantics.md §2-3.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

import numpy as np

from ..fixedpoint import quantize_multiplier
from ..kernels.relu import tflite_activation_range


class Engine(str, Enum):
    """Whose arithmetic a model is run with."""

    LITERT = "litert"
    """LiteRT's reference kernels (``OpResolverType.BUILTIN_REF``), its refusals and defects included."""
    TFLM = "tflm"
    """TensorFlow Lite Micro's reference kernels: what CMSIS-NN, ESP-NN and the DSP ports must match."""
    XNNPACK = "xnnpack"
    """LiteRT's default interpreter: the XNNPACK delegate where it takes the node, else the builtin kernel."""


def engine_of(value, func="load_model") -> Engine:
    """``value`` as an :class:`Engine` (ValueError naming the choices; "tflite" points to "tflm")."""
    try:
        return Engine(value)
    except ValueError:
        hint = " (engine 'tflite' is now 'tflm': TensorFlow Lite Micro's kernels)" if value == "tflite" else ""
        raise ValueError(f"{func}: engine must be one of {[e.value for e in Engine]}, got {value!r}{hint}") from None


class EngineDefectWarning(UserWarning):
    """The chosen engine has a known defect that dspsim reproduces (docs/engines.md)."""


ROUNDINGS = ("double", "single")


class Graph:
    """What an op's Prepare may read: the decoded model and the subgraph being prepared, the engine,
    the accumulator model of the MAC ops (None: int32 wrapping, as every engine here), the build's
    rounding of ``MultiplyByQuantizedMultiplier`` ("double", the default build, or "single",
    ``TFLITE_SINGLE_ROUNDING``) for the ops whose kernels take it, the model's :class:`State`, and
    ``call(subgraph_index)``, which runs another subgraph (CALL_ONCE)."""

    def __init__(self, mdef, engine: Engine, accumulator=None, rounding="double", subgraph=None, state=None,
                 call=None):
        self.mdef = mdef
        self.subgraph = mdef.main if subgraph is None else subgraph
        self.engine = engine
        self.accumulator = accumulator
        self.rounding = rounding
        self.state = State() if state is None else state
        self.call = call

    def tensor(self, i):
        tensors = self.subgraph.tensors
        if not 0 <= i < len(tensors):
            raise ValueError(f"load_model: tensor index {i} does not exist")
        return tensors[i]


class State:
    """What a model keeps between invocations: resource variables (VAR_HANDLE / ASSIGN_VARIABLE /
    READ_VARIABLE, by (container, shared_name)), which CALL_ONCE initialisations already ran, and the
    values of variable tensors. Writes are logged so that a trace can show them."""

    def __init__(self):
        self.resources = {}
        self.called = set()
        self.variables = {}  # (subgraph index, tensor index) -> value
        self._writes = []

    def reset(self):
        self.resources.clear()
        self.called.clear()
        self.variables.clear()
        self._writes.clear()

    def swap(self, other: "State") -> None:
        """Exchange contents with ``other`` (one stream's state in, the previous one out): the operators
        keep this object, so a model runs several independent streams by swapping their states in."""
        for name in ("resources", "called", "variables", "_writes"):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, theirs)
            setattr(other, name, mine)

    def assign(self, key, value, tensor):
        """Set resource ``key`` to ``value`` (written from tensor index ``tensor``), logging the write."""
        self.resources[key] = value
        self._writes.append((tensor, "/".join(k for k in key if k), value))

    def write_variable(self, sg, tensor, value):
        """Set variable tensor ``tensor`` of subgraph ``sg`` (its value in the next invocation)."""
        self.variables[(sg.index, tensor)] = value
        self._writes.append((tensor, sg.tensors[tensor].name, value))

    def variables_of(self, sg):
        """Current values of ``sg``'s variable tensors: the last written, else the initial value: the
        tensor's buffer, or what LiteRT's ``ResetVariableTensor`` and TFLM's ``ResetTensorData`` write,
        ``memset(data, value, bytes)`` with ``value`` the zero point for an int8 tensor (so only its
        low byte counts) and 0 for every other type."""
        out = {}
        for t in variable_tensors(sg):
            v = self.variables.get((sg.index, t.index))
            out[t.index] = v if v is not None else t.data if t.data is not None else _reset_value(t)
        return out

    def has_writes(self) -> bool:
        return bool(self._writes)

    def drain_writes(self):
        out, self._writes = self._writes, []
        return out


def variable_tensors(sg):
    """The variable tensors of subgraph ``sg`` (state carried between invocations), found once."""
    found = getattr(sg, "_variable_tensors", None)
    if found is None:
        found = [t for t in sg.tensors if t.is_variable and t.dtype is not None]
        sg._variable_tensors = found
    return found


def _reset_value(t):
    """A variable tensor after ``memset(data, value, bytes)``: value = zero point (int8), else 0."""
    value = int(t.zero_point[0]) if t.dtype == np.int8 and t.zero_point.size else 0
    return np.full(t.shape, value & 0xFF, np.uint8).view(np.int8) if value else np.zeros(t.shape, t.dtype)


@dataclass(frozen=True)
class Prepared:
    """One prepared operator: ``run(inputs) -> output`` and the integer parameters it runs with
    (multipliers, shifts, zero points, activation bounds: what a test bench needs).

    ``view``, when not None, is a ``run`` that hands on its input's memory instead of a copy: a slice or
    split whose outputs are windows of the input gives views (:func:`dspsim.kernels._plan.index_views`),
    ASSIGN_VARIABLE stores the value itself. Only the model's executor takes it, where
    :mod:`dspsim.tflite.views` finds it safe; every other caller runs the copying ``run``."""

    run: Callable
    params: dict = field(default_factory=dict)
    view: Callable | None = None


#: operators whose run reads a strided (non-contiguous) input as fast as a contiguous one and writes
#: into none of its inputs: numpy slicing, ``np.concatenate``, ASSIGN_VARIABLE's copy. An output read
#: only by these may be a view of its producer's input (:attr:`Prepared.view`).
VIEW_READERS = frozenset({"STRIDED_SLICE", "SLICE", "SPLIT", "SPLIT_V", "CONCATENATION", "ASSIGN_VARIABLE"})


BUILTINS: dict = {}


def builtin(*names):
    """Register the decorated ``prepare(op, g) -> Prepared`` for the builtin operators ``names``."""

    def deco(fn):
        for n in names:
            if n in BUILTINS:
                raise ValueError(f"builtin: {n} is registered twice")
            BUILTINS[n] = fn
        return fn

    return deco


def requant_params(quant: dict) -> dict:
    """A MAC op's keywords as operator parameters: the prepared :class:`dspsim.Requant` unfolded into its
    scheme and its multipliers/shifts (or float scales), one value or one per output channel."""
    rq = quant["requant"]
    out = {k: v for k, v in quant.items() if k != "requant"}
    out["requant_scheme"] = rq.scheme.value if hasattr(rq.scheme, "value") else str(rq.scheme)
    for field in ("multiplier", "shift", "scale", "act_times_w"):
        values = getattr(rq, field)
        if len(values):
            out[field] = values[0] if len(values) == 1 else np.asarray(values)
    return out


def refuse(op, msg):
    raise ValueError(f"load_model: operator {op.index} ({op.name}): {msg}")


def per_tensor_quant(op, t, what):
    """(float32 scale, int zero point) of a per-tensor quantized tensor."""
    if t.scale.size == 0:
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) is not quantized")
    if t.scale.size > 1:
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) is quantized per channel; per-tensor expected")
    zp = int(t.zero_point[0]) if t.zero_point.size else 0
    s = np.float32(t.scale[0])
    if not (np.isfinite(s) and s > 0):
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) has scale {s}; it must be finite and positive")
    return s, zp


def check_dtype(op, t, allowed, what):
    if t.dtype not in allowed:
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) has type {t.type_name}; supported: "
                   f"{', '.join(np.dtype(d).name for d in allowed)}")
    return t.dtype


def check_last_axis(op, t):
    """Refuse an input of rank 0: the op normalizes over its last axis (LiteRT's SoftmaxPrepare requires
    ``NumDimensions(input) >= 1``; the LOG_SOFTMAX and L2_NORMALIZATION kernels index dimension ``rank - 1``,
    undefined at rank 0)."""
    if len(t.shape) == 0:
        refuse(op, "a rank-0 input has no last axis to normalize over (SoftmaxPrepare: NumDimensions(input) >= 1)")


def check_arity(op, n_in, n_out=1):
    ok_in = op.inputs and len(op.inputs) in (n_in if isinstance(n_in, tuple) else (n_in,))
    if not ok_in or len(op.outputs) != n_out:
        refuse(op, f"expects {n_in} input(s) and {n_out} output(s), has {len(op.inputs)} and {len(op.outputs)}")
    for k, i in enumerate(op.inputs):
        if i < 0 and k == 0:
            refuse(op, "its data input is absent (tensor index -1)")


def constant(op, g, k, what):
    """The constant data of input ``k`` (None when the optional input is absent); refused if not constant."""
    i = op.inputs[k] if k < len(op.inputs) else -1
    if i < 0:
        return None
    t = g.tensor(i)
    if t.data is None:
        refuse(op, f"{what} (tensor {i}, {t.name!r}) must be a constant")
    return t.data


_ACTIVATIONS = {0: None, 1: "relu", 2: "relu_n1_to_1", 3: "relu6"}


def activation_range(op, code, t_out, kind=None):
    """(act_min, act_max) of a fused activation ``code`` (CalculateActivationRangeQuantized), or of
    the standalone ReLU op ``kind``: :func:`dspsim.kernels.relu.tflite_activation_range`, its refusals
    naming the operator."""
    if code not in _ACTIVATIONS:
        refuse(op, f"fused activation {code} (TANH/SIGN_BIT) is not supported on quantized tensors")
    name = _ACTIVATIONS[code] if kind is None else kind
    if name is None:
        info = np.iinfo(t_out.dtype)
        return int(info.min), int(info.max)
    s, zp = per_tensor_quant(op, t_out, "output")
    return at_prepare(op, tflite_activation_range, name, float(s), zp, t_out.dtype.name, fused=kind is None)


def fixed_point_multiplier(op, real, rounding="double"):
    """``QuantizeMultiplier(real)``, refused where LiteRT's Prepare fails or the kernel would overflow."""
    if not math.isfinite(float(real)) or float(real) <= 0:
        refuse(op, f"the effective scale {float(real)} is not a finite positive number")
    m, s = quantize_multiplier(float(real), rounding)
    if s > 30:
        refuse(op, f"the effective scale {real} needs a left shift of {s} > 30 (1 << {s} overflows int32)")
    return m, s


def weight_scales(op, t_w, axis):
    """float32 scalar (per-tensor) or array (per-channel along ``axis``) and the weight zero point."""
    if t_w.scale.size == 0:
        refuse(op, f"weights tensor {t_w.index} is not quantized")
    if not (np.all(np.isfinite(t_w.scale)) and np.all(t_w.scale > 0)):
        refuse(op, f"weights tensor {t_w.index} has scales that are not finite and positive")
    if t_w.scale.size == 1:
        return np.float32(t_w.scale[0]), int(t_w.zero_point[0]) if t_w.zero_point.size else 0
    if not 0 <= axis < len(t_w.shape) or t_w.quantized_dimension != axis or t_w.scale.size != t_w.shape[axis]:
        refuse(op, f"per-channel weights must have one scale per index of dimension {axis}, got "
                   f"{t_w.scale.size} along {t_w.quantized_dimension}")
    return t_w.scale.astype(np.float32), 0  # per-channel kernels ignore the filter zero point


def padding_name(op, code):
    if code not in (0, 1):
        refuse(op, f"padding {code} is not SAME (0) or VALID (1)")
    return "SAME" if code == 0 else "VALID"


def check_same_shape(op, g):
    """An elementwise op's output tensor must have its input's shape (LiteRT resizes the output to it)."""
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    if tuple(t_in.shape) != tuple(t_out.shape):
        refuse(op, f"output tensor {t_out.index} has shape {tuple(t_out.shape)}, its input {t_in.index} has "
                   f"{tuple(t_in.shape)}; an elementwise op keeps the shape")


def check_int_types(op, g, what_in=("input",), allowed=(np.dtype(np.int8),)):
    """The data inputs ``what_in`` and the output have one of the ``allowed`` integer types. TFLite Micro's
    kernels take no uint8 outside QUANTIZE and DEQUANTIZE: under engine "tflm" uint8 is refused."""
    if g.engine == Engine.TFLM and np.dtype(np.uint8) in allowed:
        for t in [g.tensor(op.inputs[k]) for k in range(len(what_in))] + [g.tensor(op.outputs[0])]:
            if t.dtype == np.uint8:
                refuse(op, f"tensor {t.index} ({t.name!r}) is uint8, which TFLite Micro's {op.name} kernel does "
                           "not take (engine 'tflm')")
    for k, what in enumerate(what_in):
        check_dtype(op, g.tensor(op.inputs[k]), allowed, what)
    check_dtype(op, g.tensor(op.outputs[0]), allowed, "output")


def at_prepare(op, fn, *args, **kw):
    """Call a parameter helper at Prepare time; its ValueError becomes a refusal naming the operator."""
    try:
        return fn(*args, **kw)
    except (ValueError, TypeError) as e:
        refuse(op, str(e))


def at_run(op, fn, *args, **kw):
    """Run a kernel at Eval time; an argument error names the operator (``Model.run: operator k (OP)``)."""
    try:
        return fn(*args, **kw)
    except (ValueError, TypeError) as e:
        raise ValueError(f"Model.run: operator {op.index} ({op.name}): {e}") from None
    except MemoryError as e:  # tensor shapes beyond this machine (LiteRT's AllocateTensors would fail)
        raise ValueError(f"Model.run: operator {op.index} ({op.name}): its tensors need more memory than is "
                         f"available ({e})") from None


def check_shape(op, out, t_out):
    """``out`` if it has the output tensor's declared shape, else a ValueError naming the operator."""
    if np.shape(out) != tuple(t_out.shape):
        raise ValueError(f"Model.run: operator {op.index} ({op.name}) computes shape {np.shape(out)} but the model "
                         f"declares {tuple(t_out.shape)}")
    return out


def xnnpack_delegates(ratios, lo, hi, hi_open=True):
    """Whether LiteRT's XNNPACK delegate takes a node whose scale ratios are ``ratios`` (else the node
    runs on a builtin kernel, modelled by the reference)."""
    return all(lo <= r < hi if hi_open else lo <= r <= hi for r in ratios)
