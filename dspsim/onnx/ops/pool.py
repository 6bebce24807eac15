"""The pool family of ONNX: MaxPool (exact; integer codes through :func:`dspsim.max_pool2d`), float32
AveragePool and GlobalAveragePool in the summation order of the engine's kernel (the reference evaluator's
np.average; MLAS's pooling kernels), com.microsoft QLinearAveragePool and QLinearGlobalAveragePool (ONNX
Runtime's float32 arithmetic, :mod:`dspsim.onnx.mlas`). 2-D (NCHW) pooling only, no ceil_mode, no dilation."""
from __future__ import annotations

import numpy as np

from ...kernels import max_pool2d
from .. import mlas
from ._common import F32, attrs, fail, float32_input, guard, needs_contrib_ops, scalar
from ._params import kernel_params, qparams, with_params


def pool_attrs(node, x_shape):
    a = attrs(node)
    if a.get("ceil_mode", 0):
        raise fail(node, "ceil_mode=1 is not supported")
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET", "VALID", b"VALID"):
        raise fail(node, f"auto_pad {a['auto_pad']!r} is not supported for pooling")
    if len(x_shape) != 4:
        raise fail(node, "only 2-D pooling (NCHW) is supported")
    if "kernel_shape" not in a:
        raise fail(node, "kernel_shape is required")
    k = list(a["kernel_shape"])
    s = list(a.get("strides", [1, 1]))
    p = list(a.get("pads", [0, 0, 0, 0]))
    if list(a.get("dilations", [1, 1])) != [1, 1]:
        raise fail(node, "dilated pooling is not supported")
    return k, s, p, bool(a.get("count_include_pad", 0))


def window_params(k, s, p) -> dict:
    """A pool's window as parameters: ``filter_size``, ``stride`` and the explicit padding (ONNX ``pads`` are
    top, left, bottom, right)."""
    return dict(filter_size=tuple(k), stride=tuple(s), pad_top=p[0], pad_left=p[1], pad_bottom=p[2], pad_right=p[3])


def _max_pool(node, ctx):
    params = {}

    def run(i):
        x = np.asarray(i[0])
        k, s, p, _ = pool_attrs(node, x.shape)
        params.update(window_params(k, s, p))
        if len(node.outputs) > 1 and node.outputs[1]:
            raise fail(node, "MaxPool's Indices output is not supported")
        if x.dtype.kind in "iu":
            y = max_pool2d(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), tuple(k), stride=tuple(s),
                           padding=((p[0], p[2]), (p[1], p[3])))
            return [np.ascontiguousarray(y.transpose(0, 3, 1, 2))]
        xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])), constant_values=-np.inf)
        oh = (xp.shape[2] - k[0]) // s[0] + 1
        ow = (xp.shape[3] - k[1]) // s[1] + 1
        y = np.full(x.shape[:2] + (oh, ow), -np.inf, x.dtype)
        for ky in range(k[0]):
            for kx in range(k[1]):
                y = np.maximum(y, xp[:, :, ky:ky + s[0] * (oh - 1) + 1:s[0], kx:kx + s[1] * (ow - 1) + 1:s[1]])
        return [y]
    return with_params(guard(node, run), params)


def _global_average_pool(node, ctx):
    if ctx.reference:  # op_global_average_pool.py: np.average over the spatial axes
        def ref(i):
            x = float32_input(i[0])
            y = np.average(x, axis=tuple(range(2, x.ndim)))
            return [y.reshape(y.shape + (1,) * (x.ndim - 2)).astype(F32)]
        return ref

    def run(i):  # MlasPoolGlobalKernel (mlas/lib/pooling.cpp): 4 lanes, horizontal add, tail, / N
        x = float32_input(i[0])
        flat = x.reshape(x.shape[0], x.shape[1], -1)
        n = flat.shape[2]
        lanes = np.zeros(flat.shape[:2] + (4,), F32)
        for k in range(0, n - n % 4, 4):
            lanes = (lanes + flat[:, :, k:k + 4]).astype(F32)
        acc = ((lanes[..., 0] + lanes[..., 2]).astype(F32) + (lanes[..., 1] + lanes[..., 3]).astype(F32))
        acc = acc.astype(F32)
        for k in range(n - n % 4, n):
            acc = (acc + flat[:, :, k]).astype(F32)
        return [(acc / F32(n)).astype(F32).reshape(x.shape[:2] + (1,) * (x.ndim - 2))]
    return run


def _average_pool(node, ctx):
    def run(i):
        x = float32_input(i[0])
        k, s, p, cip = pool_attrs(node, x.shape)
        n, c, h, w = x.shape
        oh = (h + p[0] + p[2] - k[0]) // s[0] + 1
        ow = (w + p[1] + p[3] - k[1]) // s[1] + 1
        y = np.empty((n, c, oh, ow), F32)
        if ctx.reference or ctx.opset >= 19 or s[1] > 2 or max(k) > 32:
            # onnx reference (np.average over the window, row by row); ORT's own pooling functors
            # (AveragePool-19 and later) and MLAS's generic kernel: the window in row-major order from 0
            for ph in range(oh):
                h0 = ph * s[0] - p[0]
                h1, h0 = min(h0 + k[0], h), max(h0, 0)
                for pw in range(ow):
                    w0 = pw * s[1] - p[1]
                    w1, w0 = min(w0 + k[1], w), max(w0, 0)
                    acc = np.zeros((n, c), F32)
                    for yy in range(h0, h1):
                        for xx in range(w0, w1):
                            acc = (acc + x[:, :, yy, xx]).astype(F32)
                    cnt = k[0] * k[1] if cip else (h1 - h0) * (w1 - w0)
                    y[:, :, ph, pw] = (acc / F32(cnt)).astype(F32)
            return [y]
        # AveragePool before opset 19 goes to MlasPool: MlasPool2DVectorKernel (mlas/lib/pooling.cpp
        # MlasPool picks it for strides <= 2 and kernels <= 32): per output row, column sums over the window
        # rows (first row, then + each next), into a buffer padded with 0.0 left and right; then each
        # output sums kernel-width buffer entries from its start, divided by the count
        buf = np.zeros((n, c, p[1] + w + p[3] + 4), F32)
        for ph in range(oh):
            h0 = ph * s[0] - p[0]
            h1, h0 = min(h0 + k[0], h), max(h0, 0)
            col = x[:, :, h0, :].copy()
            for yy in range(h0 + 1, h1):
                col = (col + x[:, :, yy, :]).astype(F32)
            buf[:, :, p[1]:p[1] + w] = col
            for pw in range(ow):
                st = pw * s[1]
                acc = buf[:, :, st].copy()
                for j in range(1, k[1]):
                    acc = (acc + buf[:, :, st + j]).astype(F32)
                if cip:
                    cnt = k[0] * k[1]
                else:
                    cnt = (min(st + k[1], p[1] + w) - max(st, p[1])) * (h1 - h0)
                y[:, :, ph, pw] = (acc / F32(max(cnt, 1))).astype(F32)
        return [y]
    return run


def _qlinear_pool_node(node, ctx):
    """At load: a com.microsoft QLinear pool needs contrib operators and NCHW (channels_last=0)."""
    needs_contrib_ops(node, ctx)
    if attrs(node).get("channels_last", 0):
        raise fail(node, "channels_last=1 is not supported")


def _qlinear_global_average_pool(node, ctx):
    _qlinear_pool_node(node, ctx)
    params = {}

    def run(i):
        x = np.asarray(i[0])
        kw = {}
        y = mlas.global_average_pool(x, scalar(i[1]), scalar(i[2]), scalar(i[3]), scalar(i[4]), x.dtype, record=kw)
        params.update(qparams("input", i[1], i[2]), **qparams("output", i[3], i[4]),
                      **kernel_params(dict(kw, out_dtype=x.dtype.name)))
        return [y]
    return with_params(guard(node, run), params)


def _qlinear_average_pool(node, ctx):
    _qlinear_pool_node(node, ctx)
    params = {}

    def run(i):
        x = np.asarray(i[0])
        k, s, p, cip = pool_attrs(node, x.shape)
        params.update(qparams("input", i[1], i[2]), **qparams("output", i[3], i[4]), **window_params(k, s, p),
                      count_include_pad=cip)
        return [mlas.average_pool(x, scalar(i[1]), scalar(i[2]), scalar(i[3]), scalar(i[4]), k, s, p, cip,
                                  x.dtype)]
    return with_params(guard(node, run), params)


PREPARE = {
    "MaxPool": _max_pool,
    "AveragePool": _average_pool,
    "GlobalAveragePool": _global_average_pool,
    "QLinearAveragePool": _qlinear_average_pool,
    "QLinearGlobalAveragePool": _qlinear_global_average_pool,
}
