"""The arithmetic family of ONNX: com.microsoft QLinearAdd and QLinearMul (ONNX Runtime's float32
arithmetic, :mod:`dspsim.onnx.mlas`), and the float operators of QDQ graphs: Add, Mul (float32 only), Sub, Div,
Max, Min, Round (numpy, exact in either engine)."""
from __future__ import annotations

import numpy as np

from .. import mlas
from ._common import F32, float32_input, guard, int8_out, needs_contrib_ops, opt, scalar
from ._params import qparams, with_params


def _qlinear_binary(kernel):
    """QLinearAdd / QLinearMul: ``kernel`` (``mlas.qlinear_add`` or ``mlas.qlinear_mul``) on
    ``(A, A_scale, A_zp, B, B_scale, B_zp, C_scale[, C_zp])``."""

    def build(node, ctx):
        needs_contrib_ops(node, ctx)
        params = {}

        def run(i):
            dt = int8_out(np.asarray(i[0]).dtype, node)
            params.update(qparams("input1", i[1], i[2]), **qparams("input2", i[4], i[5]),
                          **qparams("output", i[6], opt(i, 7)))
            return [kernel(i[0], scalar(i[1]), scalar(i[2]), i[3], scalar(i[4]), scalar(i[5]), scalar(i[6]),
                           scalar(opt(i, 7) if opt(i, 7) is not None else 0), dt, record=params)]
        return with_params(guard(node, run), params)
    return build


def _binary(fn):
    def prep(node, ctx):
        return lambda i: [fn(float32_input(i[0]), float32_input(i[1])).astype(F32)]
    return prep


def _elementwise(fn):
    def prep(node, ctx):
        return lambda i: [np.asarray(fn(*i))]
    return prep


def _round(node, ctx):
    return lambda i: [np.rint(i[0])]


PREPARE = {
    "QLinearAdd": _qlinear_binary(mlas.qlinear_add),
    "QLinearMul": _qlinear_binary(mlas.qlinear_mul),
    "Add": _binary(np.add),
    "Mul": _binary(np.multiply),
    "Sub": _elementwise(lambda a, b: a - b),
    "Div": _elementwise(lambda a, b: a / b),
    "Max": _elementwise(lambda *a: np.maximum.reduce(np.broadcast_arrays(*a))),
    "Min": _elementwise(lambda *a: np.minimum.reduce(np.broadcast_arrays(*a))),
    "Round": _round,
}
