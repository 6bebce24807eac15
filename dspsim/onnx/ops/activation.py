"""The activation family of ONNX: Relu, LeakyRelu and Clip (exact in either engine), and com.microsoft
QLinearLeakyRelu (ONNX Runtime's 256-entry table of its float32 leaky ReLU)."""
from __future__ import annotations

import numpy as np

from ._common import F32, attrs, float32_input, opt, table_op


def leaky(node):
    alpha = F32(attrs(node).get("alpha", 0.01))
    return lambda v: np.where(v >= 0, v, (v * alpha).astype(F32)).astype(F32)


def _relu(node, ctx):
    return lambda i: [np.maximum(float32_input(i[0]), F32(0))]


def _leaky_relu(node, ctx):
    transform = leaky(node)  # x >= 0 ? x : f32(x * alpha), exact in either engine
    return lambda i: [transform(float32_input(i[0]))]


def _clip(node, ctx):
    a = attrs(node)

    def run(i):
        lo = opt(i, 1) if len(i) > 1 else a.get("min")
        hi = opt(i, 2) if len(i) > 2 else a.get("max")
        x = i[0]
        if lo is not None:
            x = np.maximum(x, np.asarray(lo, x.dtype))
        if hi is not None:
            x = np.minimum(x, np.asarray(hi, x.dtype))
        return [x]
    return run


PREPARE = {
    "Relu": _relu,
    "LeakyRelu": _leaky_relu,
    "Clip": _clip,
    "QLinearLeakyRelu": table_op(leaky),
}
