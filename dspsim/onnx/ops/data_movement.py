"""The data-movement family of ONNX: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Identity,
Constant (exact on codes and on floats), and com.microsoft QLinearConcat (inputs with other parameters through
ONNX Runtime's 256-entry requantization table)."""
from __future__ import annotations

import numpy as np

from .. import mlas
from ._common import attrs, fail, guard, needs_contrib_ops, scalar
from ._params import qparams, with_params


def _reshape(node, ctx):
    allow_zero = attrs(node).get("allowzero", 0)

    def run(i):
        x, shape = np.asarray(i[0]), [int(v) for v in np.asarray(i[1]).reshape(-1)]
        if not allow_zero:
            shape = [x.shape[k] if d == 0 else d for k, d in enumerate(shape)]
        return [x.reshape(shape)]
    return guard(node, run)


def _flatten(node, ctx):
    axis = attrs(node).get("axis", 1)

    def run(i):
        x = np.asarray(i[0])
        ax = axis % x.ndim if x.ndim else 0
        return [x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), -1)]
    return run


def _transpose(node, ctx):
    perm = attrs(node).get("perm")
    # the reference evaluator returns numpy's transposed view, and numpy's reductions over a view sum
    # in another order than over a contiguous copy (np.average after a Transpose: 6 of 16 values)
    layout = (lambda v: v) if ctx.reference else np.ascontiguousarray

    def run(i):
        return [layout(np.transpose(np.asarray(i[0]), perm if perm is None else list(perm)))]
    return run


def _axes(node, i):
    a = attrs(node).get("axes")
    if len(i) > 1 and i[1] is not None:
        a = np.asarray(i[1]).reshape(-1)
    return None if a is None else [int(v) for v in a]


def _squeeze(node, ctx):
    def run(i):
        ax = _axes(node, i)
        return [np.squeeze(i[0], axis=None if ax is None else tuple(ax))]
    return run


def _unsqueeze(node, ctx):
    def run(i):
        x = np.asarray(i[0])
        ax = sorted(a % (x.ndim + len(_axes(node, i))) for a in _axes(node, i))
        for a in ax:
            x = np.expand_dims(x, a)
        return [x]
    return run


def _concat(node, ctx):
    axis = attrs(node)["axis"]
    return lambda i: [np.concatenate([np.asarray(v) for v in i], axis=axis)]


def _qlinear_concat(node, ctx):
    needs_contrib_ops(node, ctx)
    axis = attrs(node)["axis"]
    params = {}

    def run(i):
        ys, yz = i[0], i[1]
        params.clear()
        params.update(qparams("output", ys, yz), axis=axis)
        parts = []
        for k in range(2, len(i), 3):
            x, xs, xz = np.asarray(i[k]), i[k + 1], i[k + 2]
            params.update(qparams(f"input{k // 3}", xs, xz))
            if float(scalar(xs)) == float(scalar(ys)) and int(scalar(xz)) == int(scalar(yz)):
                parts.append(x)  # LOOKUP_TABLE_IS_COPY
            else:
                t = mlas.lookup_table(x.dtype, scalar(xs), scalar(xz), scalar(ys), scalar(yz))
                params[f"input{k // 3}_table"] = t
                parts.append(mlas.apply_table(x, t))
        return [np.concatenate(parts, axis=axis)]
    return with_params(guard(node, run), params)


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
        raise fail(node, "Constant without a supported value attribute")
    return lambda i: [v]


def _identity(node, ctx):
    return lambda i: [i[0]]


PREPARE = {
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Concat": _concat,
    "QLinearConcat": _qlinear_concat,
    "Constant": _constant,
    "Identity": _identity,
}
