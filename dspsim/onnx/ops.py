"""ONNX operators as dspsim runs them: one prepare function per op_type.

``PREPARE[op_type](node, ctx)`` runs once, at load: it reads attributes and constant inputs (scales,
zero points, weights: converted to the kernels' layouts here) and returns ``run(inputs) -> outputs``,
which only calls kernels. A parameter that is a graph input rather than an initializer is read at
run time instead (the backend node tests feed scales as inputs).

Float operators (between DequantizeLinear and QuantizeLinear of a QDQ model) run in float32 numpy;
the engines use their own summation orders there (MLAS sgemm), see docs/engines.md "ONNX".
"""
from __future__ import annotations

import numpy as np

from .mac import QLinearConvOp, conv_integer, matmul_integer, qlinear_matmul
from .quantize import dequantize_linear, dynamic_quantize_linear, quantize_linear
from ..engines import OnnxKernels
from .types import ElemType, NATIVE


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
        raise _fail(self.node, f"{self.node.op_type} needs the attribute {name!r}")


def attrs(node) -> dict:
    return _Attributes(node)


def _fail(node, msg):
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
            raise _fail(node, f"{node.op_type} takes {want} {what}, got {got}")


def check_constant_scales(node, constants):
    """At load: every constant scale of ``node`` must be positive and finite (ValueError naming the node)."""
    idx = SCALE_INPUTS.get(node.op_type)
    if node.op_type == "QLinearConcat":
        idx = (0,) + tuple(range(3, len(node.inputs), 3))
    for k in idx or ():
        if k < len(node.inputs) and node.inputs[k] in constants:
            s = np.asarray(constants[node.inputs[k]])
            if s.dtype.kind != "f":
                raise _fail(node, f"scale input {k} ({node.inputs[k]!r}) must be float, got {s.dtype}")
            s32 = s.astype(np.float32)
            if s.size == 0 or not np.all(np.isfinite(s32)) or np.any(s32 <= 0):
                raise _fail(node, f"scale input {k} ({node.inputs[k]!r}) must be positive and finite, got "
                                  f"{s.reshape(-1)[:4].tolist()}")


def _opt(inputs, k):
    return inputs[k] if k < len(inputs) else None


# ------------------------------------------------------------------------------------------------
# quantization operators (functional: parameters may be runtime inputs)
# ------------------------------------------------------------------------------------------------
def _guard(node, fn):
    """Turn a ValueError/TypeError of a dspsim.onnx function into one that names the node."""
    def run(inputs):
        try:
            return fn(inputs)
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


def _quantize(node, ctx):
    a = attrs(node)
    if a.get("precision"):
        raise _fail(node, "the 'precision' attribute is not supported")
    kw = dict(axis=a.get("axis", 1), block_size=a.get("block_size", 0), saturate=bool(a.get("saturate", 1)),
              output_dtype=a.get("output_dtype") or None, engine=ctx.profile)
    if ctx.reference:
        return _guard(node, lambda i: [keep_layout(i[0], quantize_linear(i[0], i[1], _opt(i, 2), **kw))])
    return _guard(node, lambda i: [quantize_linear(i[0], i[1], _opt(i, 2), **kw)])


def _dequantize(node, ctx):
    a = attrs(node)
    kw = dict(axis=a.get("axis", 1), block_size=a.get("block_size", 0), output_dtype=a.get("output_dtype") or None)
    if ctx.reference:
        return _guard(node, lambda i: [keep_layout(i[0], dequantize_linear(i[0], i[1], _opt(i, 2), **kw))])
    return _guard(node, lambda i: [dequantize_linear(i[0], i[1], _opt(i, 2), **kw)])


def _dynamic_quantize(node, ctx):
    return _guard(node, lambda i: list(dynamic_quantize_linear(i[0], engine=ctx.profile)))


def _matmul_integer(node, ctx):
    return _guard(node, lambda i: [matmul_integer(i[0], i[1], _opt(i, 2), _opt(i, 3), engine=ctx.profile)])


def _conv_integer(node, ctx):
    a = attrs(node)
    return _guard(node, lambda i: [conv_integer(i[0], i[1], _opt(i, 2), _opt(i, 3), engine=ctx.profile, **a)])


def _qlinear_matmul(node, ctx):
    return _guard(node, lambda i: [qlinear_matmul(*i[:8], engine=ctx.profile)])


def _qlinear_conv(node, ctx):
    a = attrs(node)
    cache = {}

    def run(i):
        key = i[0].shape
        op = cache.get(key)
        if op is None or not all(ctx.is_const(node, k) for k in range(1, 9)):
            op = QLinearConvOp(i[0].shape, i[0].dtype, i[1], i[2], i[3], i[4], i[5], i[6], i[7], _opt(i, 8), a,
                               ctx.profile)
            cache[key] = op
        x = i[0]
        x4 = x[:, :, None, :] if op.g.one_d else x
        y = op.run_nhwc(np.ascontiguousarray(x4.transpose(0, 2, 3, 1))).transpose(0, 3, 1, 2)
        return [np.ascontiguousarray(y[:, :, 0, :] if op.g.one_d else y)]
    return _guard(node, run)


# ------------------------------------------------------------------------------------------------
# float32 and shape operators
# ------------------------------------------------------------------------------------------------
def _elementwise(fn):
    def prep(node, ctx):
        return lambda i: [np.asarray(fn(*i))]
    return prep


def _reduce(fn):
    def prep(node, ctx):
        a = attrs(node)
        keep = bool(a.get("keepdims", 1))

        def run(i):
            axes = a.get("axes")
            if len(i) > 1 and i[1] is not None:
                axes = i[1]
            ax = None if axes is None or len(axes) == 0 else tuple(int(v) for v in np.asarray(axes).reshape(-1))
            return [np.asarray(fn(i[0], axis=ax, keepdims=keep))]
        return run
    return prep


def _cast(node, ctx):
    to = ElemType(attrs(node)["to"])
    if to not in NATIVE:
        raise _fail(node, f"Cast to {to.name} is not supported")
    dt = NATIVE[to]

    def run(i):
        with np.errstate(invalid="ignore", over="ignore"):  # ONNX leaves out-of-range float->int undefined
            return [np.asarray(i[0]).astype(dt)]
    return run


def _clip(node, ctx):
    a = attrs(node)

    def run(i):
        lo = _opt(i, 1) if len(i) > 1 else a.get("min")
        hi = _opt(i, 2) if len(i) > 2 else a.get("max")
        x = i[0]
        if lo is not None:
            x = np.maximum(x, np.asarray(lo, x.dtype))
        if hi is not None:
            x = np.minimum(x, np.asarray(hi, x.dtype))
        return [x]
    return run


def _constant(node, ctx):
    a = node.attributes
    if "value" in a:
        v = a["value"].t.array(f"{node.label} value")
    elif "value_float" in a:
        v = np.array(a["value_float"].value, np.float32)
    elif "value_int" in a:
        v = np.array(a["value_int"].value, np.int64)
    elif "value_floats" in a:
        v = np.array(a["value_floats"].value, np.float32)
    elif "value_ints" in a:
        v = np.array(a["value_ints"].value, np.int64)
    else:
        raise _fail(node, "Constant without a supported value attribute")
    return lambda i: [v]


def _identity(node, ctx):
    return lambda i: [i[0]]


def _round(node, ctx):
    return lambda i: [np.rint(i[0])]


PREPARE = {
    "QuantizeLinear": _quantize,
    "DequantizeLinear": _dequantize,
    "DynamicQuantizeLinear": _dynamic_quantize,
    "MatMulInteger": _matmul_integer,
    "ConvInteger": _conv_integer,
    "QLinearMatMul": _qlinear_matmul,
    "QLinearConv": _qlinear_conv,
    "Constant": _constant,
    "Identity": _identity,
    "Cast": _cast,
    "Clip": _clip,
    "Round": _round,
    "Max": _elementwise(lambda *a: np.maximum.reduce(np.broadcast_arrays(*a))),
    "Min": _elementwise(lambda *a: np.minimum.reduce(np.broadcast_arrays(*a))),
    "Sub": _elementwise(lambda a, b: a - b),
    "Div": _elementwise(lambda a, b: a / b),
    "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
}
