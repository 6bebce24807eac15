"""The mac family of ONNX: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv, com.microsoft QGemm on
integers, and float32 MatMul, Gemm and Conv (QDQ graphs run unfused) with the summation order of the engine's
kernel (the reference evaluator's numpy calls; ONNX Runtime's MLAS SGEMM, :mod:`dspsim.onnx.mlas`).

Activations are held NCHW, as the graph declares them; the convolution kernels take NHWC, so their weights are
converted once at prepare and their activations are transposed on the way in and out."""
from __future__ import annotations

import numpy as np

from ...engines import RequantKind
from ...kernels import fully_connected, fully_connected_plan
from ...requant import Requant
from ..mac import (
    ConvGeometry, QLinearConvOp, conv_integer, conv_integer_stages, matmul_integer, matmul_integer_stages,
    mlas_accumulator, qlinear_matmul, qlinear_matmul_stages, requant_scales,
)
from ..mlas import fma_dot, sgemm_m1, sgemm_m1_transpose_b
from ._common import F32, attrs, fail, float32_input, guard, needs_contrib_ops, opt, scalar
from ._params import kernel_params, with_params


def _integer_zero_points(params, i):
    """An integer MatMul's / conv's zero points, as its run reads them (absent: 0)."""
    params.update(input_zero_point=np.asarray(0 if opt(i, 2) is None else i[2]),
                  weight_zero_point=np.asarray(0 if opt(i, 3) is None else i[3]))


def _with_stages(node, run, stages, params):
    """``run`` guarded, with ``stages(inputs, tap=None)`` (the front end's ``Prepared.stages``) and ``params``."""
    guarded = guard(node, run)
    guarded.stages = guard(node, stages)
    return with_params(guarded, params)


def _matmul_integer(node, ctx):
    params = {}

    def run(i):
        _integer_zero_points(params, i)
        return [matmul_integer(i[0], i[1], opt(i, 2), opt(i, 3), engine=ctx.profile)]

    def stages(i, tap=None):  # the int32 output is the accumulator
        return matmul_integer_stages(i[0], i[1], opt(i, 2), opt(i, 3), engine=ctx.profile, tap=tap)
    return _with_stages(node, run, stages, params)


def _conv_integer(node, ctx):
    a = attrs(node)
    params = {}

    def run(i):
        _integer_zero_points(params, i)
        return [conv_integer(i[0], i[1], opt(i, 2), opt(i, 3), engine=ctx.profile, **a)]

    def stages(i, tap=None):  # the int32 output is the accumulator
        return conv_integer_stages(i[0], i[1], opt(i, 2), opt(i, 3), engine=ctx.profile, tap=tap, **a)
    return _with_stages(node, run, stages, params)


def _qlinear_matmul(node, ctx):
    params = {}

    def run(i):
        kw = {}
        y = qlinear_matmul(*i[:8], engine=ctx.profile, record=kw)
        params.update(kernel_params(kw))
        return [y]

    def stages(i, tap=None):
        return qlinear_matmul_stages(*i[:8], engine=ctx.profile, tap=tap)
    return _with_stages(node, run, stages, params)


def _qlinear_conv(node, ctx):
    a = attrs(node)
    cache = {}
    params = {}
    shown = [None]  # the op whose parameters ``params`` holds

    def layer(i):
        """The prepared op for this input (kept while the weights and scales are constants) and its NHWC input."""
        key = i[0].shape
        op = cache.get(key)
        if op is None or not all(ctx.is_const(node, k) for k in range(1, 9)):
            op = QLinearConvOp(i[0].shape, i[0].dtype, i[1], i[2], i[3], i[4], i[5], i[6], i[7], opt(i, 8), a,
                               ctx.profile)
            cache[key] = op
        if shown[0] is not op:
            params.update(kernel_params(op._keywords()), group=op.g.group)
            shown[0] = op
        x4 = i[0][:, :, None, :] if op.g.one_d else i[0]
        return op, np.ascontiguousarray(x4.transpose(0, 2, 3, 1))

    def nchw(op, y):
        """An NHWC result in the graph's NCHW (NCL) layout."""
        y = y.transpose(0, 3, 1, 2)
        return np.ascontiguousarray(y[:, :, 0, :] if op.g.one_d else y)

    def run(i):
        op, x = layer(i)
        return [nchw(op, op.run_nhwc(x))]

    def stages(i, tap=None):  # tap: a flat index into the NCHW (NCL) output, the kernel's is NHWC
        op, x = layer(i)
        if tap is not None:
            nhwc = op.stages_nhwc(x).acc.shape
            n, c, h, w = np.unravel_index(tap, (nhwc[0], nhwc[3]) + nhwc[1:3])
            tap = int(np.ravel_multi_index((n, h, w, c), nhwc))
        return op.stages_nhwc(x, tap).map(lambda v: nchw(op, v))

    return _with_stages(node, run, stages, params)


def _qgemm(node, ctx):
    needs_contrib_ops(node, ctx)
    a = attrs(node)
    if a.get("transA", 0):
        raise fail(node, "transA=1 is not supported")
    alpha = F32(a.get("alpha", 1.0))
    trans_b = bool(a.get("transB", 0))
    cache = {}
    params = {}

    def layer(i):
        """``(x, w (N, K), bias, fully_connected keywords)`` of this call."""
        x, sa, za, b, sb, zb = i[:6]
        c, sy, zy = opt(i, 6), opt(i, 7), opt(i, 8)
        if sy is None:
            raise fail(node, "QGemm with a float output (no y_scale) is not supported")
        key = id(b)
        if key not in cache:
            w = np.asarray(b) if trans_b else np.ascontiguousarray(np.asarray(b).T)
            sbv = np.asarray(sb, F32).reshape(-1)
            rule = ctx.profile.mac.fully_connected.requant
            if rule.kind is RequantKind.FLOAT32:  # ComputeOutputScale: f32(f32(alpha * s_a) * s_b[i]) / s_y
                scale = ((alpha * F32(scalar(sa))).astype(F32) * sbv).astype(F32) / F32(scalar(sy))
                rq = Requant.float_scale(scale.astype(F32), "float32", tie=rule.float_rounding)
            elif alpha != 1:
                raise fail(node, f"QGemm with alpha {float(alpha)} under engine {ctx.profile.name!r}: only ONNX "
                                 "Runtime's float32 requantization folds alpha into the scale")
            else:
                rq = requant_scales(sa, sbv, sy, ctx.profile, "fully_connected", f"dspsim.onnx: {node.label}")
            zbv = np.asarray(zb).astype(np.int64).reshape(-1)
            bias = None if c is None else np.asarray(c, np.int32).reshape(-1)
            cache[key] = (w, rq, zbv if zbv.size > 1 else int(zbv[0]), bias)
        w, rq, zbv, bias = cache[key]
        out = np.asarray(zy).dtype
        x = np.asarray(x)
        kw = dict(input_zero_point=int(scalar(za)), weight_zero_point=zbv, output_zero_point=int(scalar(zy)),
                  requant=rq, out_dtype=out.name,
                  accumulator=mlas_accumulator(ctx.profile, "fully_connected", x.dtype, w.dtype))
        params.update(kernel_params(kw), alpha=alpha, trans_b=trans_b)
        return x, w, bias, kw

    def run(i):
        x, w, bias, kw = layer(i)
        return [fully_connected(x, w, bias, **kw)]

    def stages(i, tap=None):  # the kernel's own stages: fully_connected_plan's
        x, w, bias, kw = layer(i)
        acc = kw.pop("accumulator")
        return fully_connected_plan(x.shape, x.dtype, w, bias, **kw).stages(x, acc, tap)
    return _with_stages(node, run, stages, params)


def _matmul(node, ctx):
    def run(i):
        a, b = float32_input(i[0]), float32_input(i[1])
        if a.ndim != 2 or b.ndim != 2:
            raise fail(node, "float MatMul is supported for 2-D operands only")
        if ctx.reference:  # op_matmul.py: np.dot
            return [np.dot(a, b).astype(F32)]
        return [sgemm_m1(a, b) if a.shape[0] == 1 else fma_dot(a, b)]
    return guard(node, run)


def _gemm(node, ctx):
    a_ = attrs(node)
    if a_.get("transA", 0) or a_.get("alpha", 1.0) != 1.0 or a_.get("beta", 1.0) != 1.0:
        raise fail(node, "float Gemm with transA, alpha != 1 or beta != 1 is not supported")

    def run(i):
        a, b = float32_input(i[0]), float32_input(i[1])
        b = b.T if a_.get("transB", 0) else b
        c = None if opt(i, 2) is None else float32_input(i[2])
        if ctx.reference:  # op_gemm.py: np.dot(a, b[.T]) * alpha, += c * beta
            o = np.dot(a, b) * 1.0
            if c is not None:
                o += c * 1.0
            return [o.astype(F32)]
        if a.shape[0] == 1:
            return [sgemm_m1_transpose_b(a, float32_input(i[1]), c) if a_.get("transB", 0) else sgemm_m1(a, b, c)]
        return [fma_dot(a, np.ascontiguousarray(b), c)]
    return guard(node, run)


def _conv(node, ctx):
    a = attrs(node)

    def run(i):
        x, w = float32_input(i[0]), float32_input(i[1])
        g = ConvGeometry(a, x.shape, w.shape, f"dspsim.onnx: {node.label}")
        if g.one_d:
            raise fail(node, "float 1-D Conv is not supported")
        pt, pb, pl, pr = g.pads
        xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
        if ctx.reference:
            return [_conv_reference(xp, w, opt(i, 2), g)]
        n, oc, cg, kh, kw, oh, ow = _window(xp, w, g)
        (sh, sw), (dh, dw) = g.strides, g.dilations
        per = oc // g.group
        y = np.empty((n, oc, oh, ow), F32)
        for b in range(n):
            for gi in range(g.group):
                cols = np.empty((cg, kh, kw, oh, ow), F32)  # im2col, k = (c, ky, kx)
                for ky in range(kh):
                    for kx in range(kw):
                        cols[:, ky, kx] = xp[b, gi * cg:(gi + 1) * cg, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                                             kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
                wg = w[gi * per:(gi + 1) * per].reshape(per, -1)
                # MLAS im2col + SGEMM per group; a one-row GEMM (one filter per group: depthwise)
                # takes the M=1 kernel, the bias is added afterwards (MlasActivation)
                gemm = sgemm_m1 if per == 1 else fma_dot
                acc = gemm(wg, cols.reshape(cg * kh * kw, oh * ow))
                if opt(i, 2) is not None:
                    acc = (acc + float32_input(i[2])[gi * per:(gi + 1) * per, None]).astype(F32)
                y[b, gi * per:(gi + 1) * per] = acc.reshape(per, oh, ow)
        return [y]
    return guard(node, run)


def _window(xp, w, g):
    """``(n, oc, c/group, kh, kw, oh, ow)`` of a float Conv on the padded input ``xp`` (NCHW) and ``w`` (OIHW)."""
    n, _, hp, wp = xp.shape
    oc, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = g.strides, g.dilations
    return n, oc, cg, kh, kw, (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1


def _conv_reference(xp, w, bias, g):
    """onnx/reference/ops/op_conv.py ``_conv_implementation``: im2col with rows (c, ky, kx) and
    columns (n, oy, ox), then ``W.reshape(group, OC/group, C/group*KH*KW) @ cols`` (numpy matmul),
    ``+= B``."""
    n, oc, cg, kh, kw, oh, ow = _window(xp, w, g)
    (sh, sw), (dh, dw) = g.strides, g.dilations
    c = xp.shape[1]
    cols = np.empty((c, kh, kw, n, oh, ow), F32)
    for ky in range(kh):
        for kx in range(kw):
            cols[:, ky, kx] = xp[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                                 kx * dw:kx * dw + sw * (ow - 1) + 1:sw].transpose(1, 0, 2, 3)
    c2 = cols.reshape((g.group, cg * kh * kw, n * oh * ow))
    with np.errstate(over="ignore", invalid="ignore"):  # float32 products beyond range: inf / NaN, as numpy's
        mul = w.reshape((g.group, oc // g.group, cg * kh * kw)) @ c2  # matmul in the reference gives them
    mul = mul.reshape((g.group, oc // g.group, n, oh, ow)).transpose(2, 0, 1, 3, 4).reshape((n, oc, oh, ow))
    if bias is not None:
        mul += float32_input(bias).reshape(1, -1, 1, 1)
    return mul.astype(F32)


PREPARE = {
    "MatMulInteger": _matmul_integer,
    "ConvInteger": _conv_integer,
    "QLinearMatMul": _qlinear_matmul,
    "QLinearConv": _qlinear_conv,
    "QGemm": _qgemm,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
}
