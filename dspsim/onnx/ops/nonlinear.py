"""The nonlinear family of ONNX: float32 Sigmoid and Softmax (the reference evaluator's numpy; ONNX
Runtime's FMA3 logistic and sum-exp softmax, :mod:`dspsim.onnx.mlas`), com.microsoft QLinearSigmoid (a table
of that logistic) and QLinearSoftmax."""
from __future__ import annotations

import numpy as np

from .. import mlas
from ._common import F32, attrs, fail, float32_input, guard, needs_contrib_ops, scalar, table_op
from ._params import qparams, with_params


def _sigmoid(node, ctx):
    if ctx.reference:  # onnx/reference/ops/op_sigmoid.py, numpy float32
        def ref(i):
            x = float32_input(i[0])
            with np.errstate(over="ignore"):
                e = np.exp(x)
                return [np.where(x > 0, 1.0 / (1.0 + np.exp(-x)), e / (1.0 + e)).astype(F32)]
        return ref
    return lambda i: [mlas.mlas_logistic(float32_input(i[0]))]


def _softmax(node, ctx):
    axis = attrs(node).get("axis", -1)
    if not ctx.reference:
        return lambda i: [mlas.mlas_softmax(float32_input(i[0]), axis % np.ndim(i[0]))]

    def run(i):  # onnx/reference/ops/op_softmax.py (numpy's exp and pairwise sum)
        x = float32_input(i[0])
        y = np.exp(x - x.max(axis=axis, keepdims=1))
        y /= y.sum(axis=axis, keepdims=1)
        return [y.astype(F32)]
    return run


def _qlinear_softmax(node, ctx):
    needs_contrib_ops(node, ctx)
    a = attrs(node)
    if a.get("opset", 13) < 13:
        raise fail(node, "QLinearSoftmax with opset < 13 (flattened axis semantics) is not supported")

    params = {}

    def run(i):
        x = np.asarray(i[0])
        axis = a.get("axis", -1) % x.ndim
        params.update(qparams("input", i[1], i[2]), **qparams("output", i[3], i[4]), axis=axis)
        return [mlas.qlinear_softmax(x, scalar(i[1]), scalar(i[3]), scalar(i[4]), axis, x.dtype, record=params)]
    return with_params(guard(node, run), params)


PREPARE = {
    "Sigmoid": _sigmoid,
    "Softmax": _softmax,
    "QLinearSigmoid": table_op(lambda node: mlas.mlas_logistic),
    "QLinearSoftmax": _qlinear_softmax,
}
