"""What every ONNX prepare function shares: the :class:`Context` it sees, node attributes, the load-time
checks of input counts and constant scales, and the small helpers of a ``run(inputs)`` (optional inputs,
errors that name the node, scalars, float32 operands, the 256-entry tables of the com.microsoft QLinear
operators)."""
from __future__ import annotations

import numpy as np

from ...engines import OnnxKernels
from ..types import QArray
from .. import mlas
from ._params import qparams, with_params


class Context:
    """What a prepare function sees: the engine's :class:`~dspsim.engines.EngineProfile` (``profile``; whether it
    runs the onnx reference evaluator's implementations, ``reference``), the constants (initializers and
    Constant outputs), the opset."""

    def __init__(self, profile, constants, opset=21):
        self.profile = profile
        self.reference = profile.onnx.kernels is OnnxKernels.ONNX_REFERENCE
        self.opset = opset
        self.constants = constants

    def const(self, name):
        return self.constants.get(name) if name else None

    def is_const(self, node, k):
        return k >= len(node.inputs) or node.inputs[k] == "" or node.inputs[k] in self.constants


class _Attributes(dict):
    """A node's attributes by name; a required one that is absent is a load error naming the node."""

    def __init__(self, node):
        super().__init__((k, a.value) for k, a in node.attributes.items())
        self.node = node

    def __missing__(self, name):
        raise fail(self.node, f"{self.node.op_type} needs the attribute {name!r}")


def attrs(node) -> dict:
    return _Attributes(node)


def fail(node, msg):
    return ValueError(f"dspsim.onnx.load_model: {node.label}: {msg}")


# input positions of the float scales of each quantized operator
SCALE_INPUTS = {"QuantizeLinear": (1,), "DequantizeLinear": (1,), "QLinearConv": (1, 4, 6), "QLinearMatMul": (1, 4, 6),
                "QGemm": (1, 4, 7), "QLinearAdd": (1, 4, 6), "QLinearMul": (1, 4, 6),
                "QLinearGlobalAveragePool": (1, 3),
                "QLinearAveragePool": (1, 3), "QLinearSigmoid": (1, 3), "QLinearLeakyRelu": (1, 3),
                "QLinearSoftmax": (1, 3)}


_MANY = 1 << 30


# (fewest, most) inputs of each operator, as its ONNX (or com.microsoft) schema has them, over opsets 10-28
INPUT_COUNTS = {
    "QuantizeLinear": (2, 3), "DequantizeLinear": (2, 3), "DynamicQuantizeLinear": (1, 1), "MatMulInteger": (2, 4),
    "ConvInteger": (2, 4), "QLinearMatMul": (8, 8), "QLinearConv": (8, 9), "Constant": (0, 0), "Identity": (1, 1),
    "Cast": (1, 1), "Clip": (1, 3), "Round": (1, 1), "Max": (1, _MANY), "Min": (1, _MANY), "Sub": (2, 2),
    "Div": (2, 2), "ReduceMax": (1, 2), "ReduceMin": (1, 2), "QLinearAdd": (7, 8), "QLinearMul": (7, 8),
    "QLinearGlobalAveragePool": (5, 5), "QLinearAveragePool": (4, 5), "QLinearSigmoid": (4, 5),
    "QLinearLeakyRelu": (4, 5), "QLinearConcat": (5, _MANY), "QLinearSoftmax": (4, 5), "QGemm": (6, 9),
    "MaxPool": (1, 1), "Reshape": (2, 2), "Flatten": (1, 1), "Transpose": (1, 1), "Squeeze": (1, 2),
    "Unsqueeze": (1, 2), "Concat": (1, _MANY), "Relu": (1, 1), "LeakyRelu": (1, 1), "Sigmoid": (1, 1),
    "Softmax": (1, 1), "Add": (2, 2), "Mul": (2, 2), "MatMul": (2, 2), "Gemm": (2, 3), "Conv": (2, 3),
    "GlobalAveragePool": (1, 1), "AveragePool": (1, 1), "Resize": (1, 4),
}


# (fewest, most) outputs, where not exactly one
OUTPUT_COUNTS = {"DynamicQuantizeLinear": (3, 3), "MaxPool": (1, 2)}


def check_input_count(node):
    """At load: ``node`` has as many inputs and outputs as its operator's schema allows (ValueError naming
    the node)."""
    known = node.op_type in INPUT_COUNTS  # an operator dspsim does not take is refused later, by name
    for what, got, (lo, hi) in (("inputs", len(node.inputs), INPUT_COUNTS.get(node.op_type, (0, _MANY))),
                                ("outputs", len(node.outputs),
                                 OUTPUT_COUNTS.get(node.op_type, (1, 1) if known else (0, _MANY)))):
        if not lo <= got <= hi:
            want = f"{lo}" if lo == hi else f"at least {lo}" if hi == _MANY else f"{lo} to {hi}"
            raise fail(node, f"{node.op_type} takes {want} {what}, got {got}")


def check_constant_scales(node, constants):
    """At load: every constant scale of ``node`` must be positive and finite (ValueError naming the node)."""
    idx = SCALE_INPUTS.get(node.op_type)
    if node.op_type == "QLinearConcat":
        idx = (0,) + tuple(range(3, len(node.inputs), 3))
    for k in idx or ():
        if k < len(node.inputs) and node.inputs[k] in constants:
            s = np.asarray(constants[node.inputs[k]])
            if s.dtype.kind != "f":
                raise fail(node, f"scale input {k} ({node.inputs[k]!r}) must be float, got {s.dtype}")
            s32 = s.astype(np.float32)
            if s.size == 0 or not np.all(np.isfinite(s32)) or np.any(s32 <= 0):
                raise fail(node, f"scale input {k} ({node.inputs[k]!r}) must be positive and finite, got "
                                 f"{s.reshape(-1)[:4].tolist()}")


def opt(inputs, k):
    """Input ``k`` of a node, or None where the node has fewer (an optional input left out)."""
    return inputs[k] if k < len(inputs) else None


def guard(node, fn):
    """Turn a ValueError/TypeError of a dspsim.onnx function into one that names the node."""
    def run(inputs, *more):
        try:
            return fn(inputs, *more)
        except (ValueError, TypeError) as e:
            raise type(e)(f"{node.label}: {e}") from None
    return run


def keep_layout(x, y):
    """``y`` in the memory layout of ``x`` (numpy's elementwise results follow their input's strides;
    the reference evaluator's later reductions sum in memory order, so the layout decides bits)."""
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and y.shape == x.shape and not x.flags.c_contiguous:
        out = np.empty_like(x, dtype=y.dtype)
        out[...] = y
        return out
    return y


F32 = np.float32


def scalar(v):
    """The one value of a scalar (or one-element) parameter input."""
    return np.asarray(v).reshape(-1)[0]


def int8_out(dtype, node):
    """``dtype`` where it is int8 or uint8 (the codes of a com.microsoft QLinear operator), else a ValueError
    naming the node."""
    if np.dtype(dtype) not in (np.int8, np.uint8):
        raise fail(node, f"8-bit codes expected, got {np.dtype(dtype)}")
    return np.dtype(dtype)


def needs_contrib_ops(node, ctx):
    """At load: a com.microsoft operator needs an engine whose profile runs contrib operators (ValueError naming
    the node and the engine to use)."""
    if not ctx.profile.onnx.contrib_ops:
        raise fail(node, f"{node.op_type} (domain com.microsoft) has no implementation in engine "
                         f"{ctx.profile.name!r} (the onnx reference evaluator has none); use engine 'onnxruntime'")


def float32_input(v):
    """A float32 operand of a float operator (QDQ graphs, unfused), else a TypeError: codes reaching a float
    operator mean a graph dspsim cannot run as the engine does."""
    a = np.asarray(v)
    if isinstance(v, QArray) or a.dtype != np.float32:
        raise TypeError(f"float32 input expected, got {getattr(a, 'dtype', type(v))}")
    return a


def table_op(transform):
    """The prepare function of a com.microsoft 8-bit pointwise operator (QLinearSigmoid, QLinearLeakyRelu) as ONNX
    Runtime computes it: a 256-entry table of ``transform(node)`` (a float32 function) between the input's and
    the output's parameters (:func:`dspsim.onnx.mlas.lookup_table`), made once per parameters and applied."""
    def prep(node, ctx):
        needs_contrib_ops(node, ctx)
        cache = {}
        params = {}

        def run(i):
            x = np.asarray(i[0])
            key = (x.dtype, float(scalar(i[1])), int(scalar(i[2])), float(scalar(i[3])), int(scalar(i[4])))
            if key not in cache:
                cache[key] = mlas.lookup_table(x.dtype, *key[1:], transform=transform(node))
            params.update(qparams("input", i[1], i[2]), **qparams("output", i[3], i[4]), table=cache[key])
            return [mlas.apply_table(x, cache[key])]
        return with_params(guard(node, run), params)
    return prep
