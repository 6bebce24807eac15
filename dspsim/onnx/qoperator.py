"""QOperator-format operators (com.microsoft QLinear*, QGemm) and the float / layout operators of QDQ
graphs, as ONNX Runtime's CPU provider computes them (prepare functions, see :mod:`.ops`).

Layout: activations are held NCHW, as the graph declares them; the convolution and pooling kernels
take NHWC, so their weights are converted once at prepare and their activations are transposed on
the way in and out.

Float operators (the ops between DequantizeLinear and QuantizeLinear of a QDQ graph run unfused)
are float32 with the summation order of the kernel the engine runs: for the reference evaluator the
numpy calls of onnx/reference/ops; for ONNX Runtime the MLAS kernels its x86 AVX2/FMA3 build
dispatches (im2col SGEMM, the one-row SGEMM kernels, MlasPool, the FMA3 logistic and sum-exp
softmax; docs/engines.md "ONNX"). Another host may dispatch other kernels.
"""
from __future__ import annotations

import numpy as np

from ..engines import RequantKind
from ..kernels import fully_connected, max_pool2d
from ..requant import Requant
from . import mlas
from .ops import _fail, _guard, _opt, attrs
from .mac import ConvGeometry, mlas_accumulator, requant_scales
from .resize import prepare_resize
from .types import QArray

_F32 = np.float32


def _scalar(v):
    return np.asarray(v).reshape(-1)[0]


def _int8_out(dtype, node):
    if np.dtype(dtype) not in (np.int8, np.uint8):
        raise _fail(node, f"8-bit codes expected, got {np.dtype(dtype)}")
    return np.dtype(dtype)


def _check_engine(node, ctx):
    if not ctx.profile.onnx.contrib_ops:
        raise _fail(node, f"{node.op_type} (domain com.microsoft) has no implementation in engine "
                          f"{ctx.profile.name!r} (the onnx reference evaluator has none); use engine 'onnxruntime'")


# ------------------------------------------------------------------------------------------------
# QOperator ops (com.microsoft)
# ------------------------------------------------------------------------------------------------
def _qlinear_binary(kernel):
    """QLinearAdd / QLinearMul: ``kernel`` (``mlas.qlinear_add`` or ``mlas.qlinear_mul``) on
    ``(A, A_scale, A_zp, B, B_scale, B_zp, C_scale[, C_zp])``."""

    def build(node, ctx):
        _check_engine(node, ctx)

        def run(i):
            dt = _int8_out(np.asarray(i[0]).dtype, node)
            return [kernel(i[0], _scalar(i[1]), _scalar(i[2]), i[3], _scalar(i[4]), _scalar(i[5]), _scalar(i[6]),
                           _scalar(_opt(i, 7) if _opt(i, 7) is not None else 0), dt)]
        return _guard(node, run)
    return build


def _qlinear_global_average_pool(node, ctx):
    _check_engine(node, ctx)
    if attrs(node).get("channels_last", 0):
        raise _fail(node, "channels_last=1 is not supported")

    def run(i):
        x = np.asarray(i[0])
        return [mlas.global_average_pool(x, _scalar(i[1]), _scalar(i[2]), _scalar(i[3]), _scalar(i[4]), x.dtype)]
    return _guard(node, run)


def _pool_attrs(node, x_shape):
    a = attrs(node)
    if a.get("ceil_mode", 0):
        raise _fail(node, "ceil_mode=1 is not supported")
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET", "VALID", b"VALID"):
        raise _fail(node, f"auto_pad {a['auto_pad']!r} is not supported for pooling")
    if len(x_shape) != 4:
        raise _fail(node, "only 2-D pooling (NCHW) is supported")
    if "kernel_shape" not in a:
        raise _fail(node, "kernel_shape is required")
    k = list(a["kernel_shape"])
    s = list(a.get("strides", [1, 1]))
    p = list(a.get("pads", [0, 0, 0, 0]))
    if list(a.get("dilations", [1, 1])) != [1, 1]:
        raise _fail(node, "dilated pooling is not supported")
    return k, s, p, bool(a.get("count_include_pad", 0))


def _qlinear_average_pool(node, ctx):
    _check_engine(node, ctx)
    if attrs(node).get("channels_last", 0):
        raise _fail(node, "channels_last=1 is not supported")

    def run(i):
        x = np.asarray(i[0])
        k, s, p, cip = _pool_attrs(node, x.shape)
        return [mlas.average_pool(x, _scalar(i[1]), _scalar(i[2]), _scalar(i[3]), _scalar(i[4]), k, s, p, cip,
                                  x.dtype)]
    return _guard(node, run)


def _table_op(transform):
    def prep(node, ctx):
        _check_engine(node, ctx)
        cache = {}

        def run(i):
            x = np.asarray(i[0])
            key = (x.dtype, float(_scalar(i[1])), int(_scalar(i[2])), float(_scalar(i[3])), int(_scalar(i[4])))
            if key not in cache:
                cache[key] = mlas.lookup_table(x.dtype, *key[1:], transform=transform(node))
            return [mlas.apply_table(x, cache[key])]
        return _guard(node, run)
    return prep


def _leaky(node):
    alpha = _F32(attrs(node).get("alpha", 0.01))
    return lambda v: np.where(v >= 0, v, (v * alpha).astype(_F32)).astype(_F32)


def _qlinear_concat(node, ctx):
    _check_engine(node, ctx)
    axis = attrs(node)["axis"]

    def run(i):
        ys, yz = i[0], i[1]
        parts = []
        for k in range(2, len(i), 3):
            x, xs, xz = np.asarray(i[k]), i[k + 1], i[k + 2]
            if float(_scalar(xs)) == float(_scalar(ys)) and int(_scalar(xz)) == int(_scalar(yz)):
                parts.append(x)  # LOOKUP_TABLE_IS_COPY
            else:
                t = mlas.lookup_table(x.dtype, _scalar(xs), _scalar(xz), _scalar(ys), _scalar(yz))
                parts.append(mlas.apply_table(x, t))
        return [np.concatenate(parts, axis=axis)]
    return _guard(node, run)


def _qlinear_softmax(node, ctx):
    _check_engine(node, ctx)
    a = attrs(node)
    if a.get("opset", 13) < 13:
        raise _fail(node, "QLinearSoftmax with opset < 13 (flattened axis semantics) is not supported")

    def run(i):
        x = np.asarray(i[0])
        return [mlas.qlinear_softmax(x, _scalar(i[1]), _scalar(i[3]), _scalar(i[4]), a.get("axis", -1) % x.ndim,
                                     x.dtype)]
    return _guard(node, run)


def _qgemm(node, ctx):
    _check_engine(node, ctx)
    a = attrs(node)
    if a.get("transA", 0):
        raise _fail(node, "transA=1 is not supported")
    alpha = _F32(a.get("alpha", 1.0))
    trans_b = bool(a.get("transB", 0))
    cache = {}

    def run(i):
        x, sa, za, b, sb, zb = i[:6]
        c, sy, zy = _opt(i, 6), _opt(i, 7), _opt(i, 8)
        if sy is None:
            raise _fail(node, "QGemm with a float output (no y_scale) is not supported")
        key = id(b)
        if key not in cache:
            w = np.asarray(b) if trans_b else np.ascontiguousarray(np.asarray(b).T)
            sbv = np.asarray(sb, _F32).reshape(-1)
            rule = ctx.profile.mac.fully_connected.requant
            if rule.kind is RequantKind.FLOAT32:  # ComputeOutputScale: f32(f32(alpha * s_a) * s_b[i]) / s_y
                scale = ((alpha * _F32(_scalar(sa))).astype(_F32) * sbv).astype(_F32) / _F32(_scalar(sy))
                rq = Requant.float_scale(scale.astype(_F32), "float32", tie=rule.float_rounding)
            elif alpha != 1:
                raise _fail(node, f"QGemm with alpha {float(alpha)} under engine {ctx.profile.name!r}: only ONNX "
                                  "Runtime's float32 requantization folds alpha into the scale")
            else:
                rq = requant_scales(sa, sbv, sy, ctx.profile, "fully_connected", f"dspsim.onnx: {node.label}")
            zbv = np.asarray(zb).astype(np.int64).reshape(-1)
            bias = None if c is None else np.asarray(c, np.int32).reshape(-1)
            cache[key] = (w, rq, zbv if zbv.size > 1 else int(zbv[0]), bias)
        w, rq, zbv, bias = cache[key]
        out = np.asarray(zy).dtype
        x = np.asarray(x)
        return [fully_connected(x, w, bias, input_zero_point=int(_scalar(za)), weight_zero_point=zbv,
                                output_zero_point=int(_scalar(zy)), requant=rq, out_dtype=out.name,
                                accumulator=mlas_accumulator(ctx.profile, "fully_connected", x.dtype, w.dtype))]
    return _guard(node, run)


# ------------------------------------------------------------------------------------------------
# layout operators (exact on codes and on floats)
# ------------------------------------------------------------------------------------------------
def _max_pool(node, ctx):
    def run(i):
        x = np.asarray(i[0])
        k, s, p, _ = _pool_attrs(node, x.shape)
        if len(node.outputs) > 1 and node.outputs[1]:
            raise _fail(node, "MaxPool's Indices output is not supported")
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
    return _guard(node, run)


def _reshape(node, ctx):
    allow_zero = attrs(node).get("allowzero", 0)

    def run(i):
        x, shape = np.asarray(i[0]), [int(v) for v in np.asarray(i[1]).reshape(-1)]
        if not allow_zero:
            shape = [x.shape[k] if d == 0 else d for k, d in enumerate(shape)]
        return [x.reshape(shape)]
    return _guard(node, run)


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


# ------------------------------------------------------------------------------------------------
# float32 operators (QDQ graphs, unfused)
# ------------------------------------------------------------------------------------------------
def _f32(v):
    a = np.asarray(v)
    if isinstance(v, QArray) or a.dtype != np.float32:
        raise TypeError(f"float32 input expected, got {getattr(a, 'dtype', type(v))}")
    return a


def _relu(node, ctx):
    return lambda i: [np.maximum(_f32(i[0]), _F32(0))]


def _leaky_relu(node, ctx):
    transform = _leaky(node)  # x >= 0 ? x : f32(x * alpha), exact in either engine
    return lambda i: [transform(_f32(i[0]))]


def _sigmoid(node, ctx):
    if ctx.reference:  # onnx/reference/ops/op_sigmoid.py, numpy float32
        def ref(i):
            x = _f32(i[0])
            with np.errstate(over="ignore"):
                e = np.exp(x)
                return [np.where(x > 0, 1.0 / (1.0 + np.exp(-x)), e / (1.0 + e)).astype(_F32)]
        return ref
    return lambda i: [mlas.mlas_logistic(_f32(i[0]))]


def _softmax(node, ctx):
    axis = attrs(node).get("axis", -1)
    if not ctx.reference:
        return lambda i: [mlas.mlas_softmax(_f32(i[0]), axis % np.ndim(i[0]))]

    def run(i):  # onnx/reference/ops/op_softmax.py (numpy's exp and pairwise sum)
        x = _f32(i[0])
        y = np.exp(x - x.max(axis=axis, keepdims=1))
        y /= y.sum(axis=axis, keepdims=1)
        return [y.astype(_F32)]
    return run


def _binary(fn):
    def prep(node, ctx):
        return lambda i: [fn(_f32(i[0]), _f32(i[1])).astype(_F32)]
    return prep


def fma_dot(a, b, bias=None):
    """float32 ``a (M, K) @ b (K, N)``: one FMA chain per output in k order from 0, then ``+ bias``
    (MLAS SGEMM's register accumulation for K within one block)."""
    acc = np.zeros((a.shape[0], b.shape[1]), _F32)
    for k in range(a.shape[1]):
        acc = mlas.fma_f32(a[:, k, None], b[None, k, :], acc)
    if bias is not None:
        acc = (acc + np.asarray(bias, _F32)).astype(_F32)
    return acc


def sgemm_m1(a, b, c=None):
    """MLAS's one-row SGEMM (``MlasSgemmKernelM1Avx``, x86_64/SgemmKernelM1Avx.S; the algorithm as
    described, not read from the assembly): ``a`` (1, K) x ``b`` (K, N). K is taken in groups of 4,
    then one of 2, then one of 1; a group's products are summed left to right with separate
    multiplies and adds (no FMA), then added to C (0 for a MatMul, the broadcast bias for a Gemm)."""
    k = a.shape[1]
    out = np.zeros((1, b.shape[1]), _F32) if c is None else np.broadcast_to(np.asarray(c, _F32), (1, b.shape[1])).copy()
    kk = 0
    for g in [4] * (k // 4) + ([2] if k % 4 >= 2 else []) + ([1] if k % 2 else []):
        t = (a[0, kk] * b[kk]).astype(_F32)
        for j in range(1, g):
            t = (t + (a[0, kk + j] * b[kk + j]).astype(_F32)).astype(_F32)
        out[0] = (t + out[0]).astype(_F32)
        kk += g
    return out


def sgemm_m1_transpose_b(a, bt, c=None):
    """``MlasSgemmKernelM1TransposeBAvx`` (mlas/lib/x86_64/SgemmKernelM1TransposeBAvx.S): ``a`` (1, K)
    times ``bt.T`` for ``bt`` (N, K). Per output, 8 lane accumulators (lane l sums the products of
    k = l mod 8 in order, ``vmulps`` then ``vaddps``); outputs in blocks of 4, then 2, then 1, whose
    lane reductions differ: 4 -> ``(((l0+l1)+l2)+l3) + (((l4+l5)+l6)+l7)``, 2 -> ``((l0+l2)+(l4+l6)) +
    ((l1+l3)+(l5+l7))``, 1 -> ``((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7))``; then ``+ C`` (the bias)."""
    k, n = a.shape[1], bt.shape[0]
    kp = -(-k // 8) * 8
    ap = np.zeros(kp, _F32)
    ap[:k] = a[0]
    bp = np.zeros((n, kp), _F32)
    bp[:, :k] = bt
    lanes = np.zeros((n, 8), _F32)
    for k0 in range(0, kp, 8):
        lanes = (lanes + (ap[None, k0:k0 + 8] * bp[:, k0:k0 + 8]).astype(_F32)).astype(_F32)
    l = [lanes[:, j] for j in range(8)]

    def add(*v):
        t = v[0]
        for u in v[1:]:
            t = (t + u).astype(_F32)
        return t
    red4 = add(add(l[0], l[1], l[2], l[3]), add(l[4], l[5], l[6], l[7]))
    red2 = add(add(add(l[0], l[2]), add(l[4], l[6])), add(add(l[1], l[3]), add(l[5], l[7])))
    red1 = add(add(add(l[0], l[1]), add(l[2], l[3])), add(add(l[4], l[5]), add(l[6], l[7])))
    block = np.zeros(n, int)
    rest = n % 4
    block[n - rest:] = 2 if rest >= 2 else 1
    if rest == 3:
        block[-1] = 1
    block[:n - rest] = 4
    out = np.where(block == 4, red4, np.where(block == 2, red2, red1)).astype(_F32)[None, :]
    if c is not None:
        out = (out + np.asarray(c, _F32)).astype(_F32)
    return out


def _matmul(node, ctx):
    def run(i):
        a, b = _f32(i[0]), _f32(i[1])
        if a.ndim != 2 or b.ndim != 2:
            raise _fail(node, "float MatMul is supported for 2-D operands only")
        if ctx.reference:  # op_matmul.py: np.dot
            return [np.dot(a, b).astype(_F32)]
        return [sgemm_m1(a, b) if a.shape[0] == 1 else fma_dot(a, b)]
    return _guard(node, run)


def _gemm(node, ctx):
    a_ = attrs(node)
    if a_.get("transA", 0) or a_.get("alpha", 1.0) != 1.0 or a_.get("beta", 1.0) != 1.0:
        raise _fail(node, "float Gemm with transA, alpha != 1 or beta != 1 is not supported")

    def run(i):
        a, b = _f32(i[0]), _f32(i[1])
        b = b.T if a_.get("transB", 0) else b
        c = None if _opt(i, 2) is None else _f32(i[2])
        if ctx.reference:  # op_gemm.py: np.dot(a, b[.T]) * alpha, += c * beta
            o = np.dot(a, b) * 1.0
            if c is not None:
                o += c * 1.0
            return [o.astype(_F32)]
        if a.shape[0] == 1:
            return [sgemm_m1_transpose_b(a, _f32(i[1]), c) if a_.get("transB", 0) else sgemm_m1(a, b, c)]
        return [fma_dot(a, np.ascontiguousarray(b), c)]
    return _guard(node, run)


def _conv(node, ctx):
    a = attrs(node)

    def run(i):
        x, w = _f32(i[0]), _f32(i[1])
        g = ConvGeometry(a, x.shape, w.shape, f"dspsim.onnx: {node.label}")
        if g.one_d:
            raise _fail(node, "float 1-D Conv is not supported")
        pt, pb, pl, pr = g.pads
        xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
        if ctx.reference:
            return [_conv_reference(xp, w, _opt(i, 2), g)]
        n, c, hp, wp = xp.shape
        oc, cg, kh, kw = w.shape
        sh, sw = g.strides
        dh, dw = g.dilations
        oh = (hp - dh * (kh - 1) - 1) // sh + 1
        ow = (wp - dw * (kw - 1) - 1) // sw + 1
        per = oc // g.group
        y = np.empty((n, oc, oh, ow), _F32)
        for b in range(n):
            for gi in range(g.group):
                cols = np.empty((cg, kh, kw, oh, ow), _F32)  # im2col, k = (c, ky, kx)
                for ky in range(kh):
                    for kx in range(kw):
                        cols[:, ky, kx] = xp[b, gi * cg:(gi + 1) * cg, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                                             kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
                wg = w[gi * per:(gi + 1) * per].reshape(per, -1)
                # MLAS im2col + SGEMM per group; a one-row GEMM (one filter per group: depthwise)
                # takes the M=1 kernel, the bias is added afterwards (MlasActivation)
                gemm = sgemm_m1 if per == 1 else fma_dot
                acc = gemm(wg, cols.reshape(cg * kh * kw, oh * ow))
                if _opt(i, 2) is not None:
                    acc = (acc + _f32(i[2])[gi * per:(gi + 1) * per, None]).astype(_F32)
                y[b, gi * per:(gi + 1) * per] = acc.reshape(per, oh, ow)
        return [y]
    return _guard(node, run)


def _conv_reference(xp, w, bias, g):
    """onnx/reference/ops/op_conv.py ``_conv_implementation``: im2col with rows (c, ky, kx) and
    columns (n, oy, ox), then ``W.reshape(group, OC/group, C/group*KH*KW) @ cols`` (numpy matmul),
    ``+= B``."""
    n, c, hp, wp = xp.shape
    oc, cg, kh, kw = w.shape
    sh, sw = g.strides
    dh, dw = g.dilations
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    cols = np.empty((c, kh, kw, n, oh, ow), _F32)
    for ky in range(kh):
        for kx in range(kw):
            cols[:, ky, kx] = xp[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                                 kx * dw:kx * dw + sw * (ow - 1) + 1:sw].transpose(1, 0, 2, 3)
    c2 = cols.reshape((g.group, cg * kh * kw, n * oh * ow))
    mul = w.reshape((g.group, oc // g.group, cg * kh * kw)) @ c2
    mul = mul.reshape((g.group, oc // g.group, n, oh, ow)).transpose(2, 0, 1, 3, 4).reshape((n, oc, oh, ow))
    if bias is not None:
        mul += _f32(bias).reshape(1, -1, 1, 1)
    return mul.astype(_F32)


def _global_average_pool(node, ctx):
    if ctx.reference:  # op_global_average_pool.py: np.average over the spatial axes
        def ref(i):
            x = _f32(i[0])
            y = np.average(x, axis=tuple(range(2, x.ndim)))
            return [y.reshape(y.shape + (1,) * (x.ndim - 2)).astype(_F32)]
        return ref

    def run(i):  # MlasPoolGlobalKernel (mlas/lib/pooling.cpp): 4 lanes, horizontal add, tail, / N
        x = _f32(i[0])
        flat = x.reshape(x.shape[0], x.shape[1], -1)
        n = flat.shape[2]
        lanes = np.zeros(flat.shape[:2] + (4,), _F32)
        for k in range(0, n - n % 4, 4):
            lanes = (lanes + flat[:, :, k:k + 4]).astype(_F32)
        acc = ((lanes[..., 0] + lanes[..., 2]).astype(_F32) + (lanes[..., 1] + lanes[..., 3]).astype(_F32))
        acc = acc.astype(_F32)
        for k in range(n - n % 4, n):
            acc = (acc + flat[:, :, k]).astype(_F32)
        return [(acc / _F32(n)).astype(_F32).reshape(x.shape[:2] + (1,) * (x.ndim - 2))]
    return run


def _average_pool(node, ctx):
    def run(i):
        x = _f32(i[0])
        k, s, p, cip = _pool_attrs(node, x.shape)
        n, c, h, w = x.shape
        oh = (h + p[0] + p[2] - k[0]) // s[0] + 1
        ow = (w + p[1] + p[3] - k[1]) // s[1] + 1
        y = np.empty((n, c, oh, ow), _F32)
        if ctx.reference or ctx.opset >= 19 or s[1] > 2 or max(k) > 32:
            # onnx reference (np.average over the window, row by row); ORT's own pooling functors
            # (AveragePool-19 and later) and MLAS's generic kernel: the window in row-major order from 0
            for ph in range(oh):
                h0 = ph * s[0] - p[0]
                h1, h0 = min(h0 + k[0], h), max(h0, 0)
                for pw in range(ow):
                    w0 = pw * s[1] - p[1]
                    w1, w0 = min(w0 + k[1], w), max(w0, 0)
                    acc = np.zeros((n, c), _F32)
                    for yy in range(h0, h1):
                        for xx in range(w0, w1):
                            acc = (acc + x[:, :, yy, xx]).astype(_F32)
                    cnt = k[0] * k[1] if cip else (h1 - h0) * (w1 - w0)
                    y[:, :, ph, pw] = (acc / _F32(cnt)).astype(_F32)
            return [y]
        # AveragePool before opset 19 goes to MlasPool: MlasPool2DVectorKernel (mlas/lib/pooling.cpp
        # MlasPool picks it for strides <= 2 and kernels <= 32): per output row, column sums over the window
        # rows (first row, then + each next), into a buffer padded with 0.0 left and right; then each
        # output sums kernel-width buffer entries from its start, divided by the count
        buf = np.zeros((n, c, p[1] + w + p[3] + 4), _F32)
        for ph in range(oh):
            h0 = ph * s[0] - p[0]
            h1, h0 = min(h0 + k[0], h), max(h0, 0)
            col = x[:, :, h0, :].copy()
            for yy in range(h0 + 1, h1):
                col = (col + x[:, :, yy, :]).astype(_F32)
            buf[:, :, p[1]:p[1] + w] = col
            for pw in range(ow):
                st = pw * s[1]
                acc = buf[:, :, st].copy()
                for j in range(1, k[1]):
                    acc = (acc + buf[:, :, st + j]).astype(_F32)
                if cip:
                    cnt = k[0] * k[1]
                else:
                    cnt = (min(st + k[1], p[1] + w) - max(st, p[1])) * (h1 - h0)
                y[:, :, ph, pw] = (acc / _F32(max(cnt, 1))).astype(_F32)
        return [y]
    return run


def _s8_to_u8(node, ctx):
    return lambda i: [(np.asarray(i[0]).astype(np.int16) + 128).astype(np.uint8)]


def _u8_to_s8(node, ctx):
    return lambda i: [(np.asarray(i[0]).astype(np.int16) - 128).astype(np.int8)]


PREPARE_QOP = {
    "_S8ToU8": _s8_to_u8,
    "_U8ToS8": _u8_to_s8,
    "QLinearAdd": _qlinear_binary(mlas.qlinear_add),
    "QLinearMul": _qlinear_binary(mlas.qlinear_mul),
    "QLinearGlobalAveragePool": _qlinear_global_average_pool,
    "QLinearAveragePool": _qlinear_average_pool,
    "QLinearSigmoid": _table_op(lambda node: mlas.mlas_logistic),
    "QLinearLeakyRelu": _table_op(_leaky),
    "QLinearConcat": _qlinear_concat,
    "QLinearSoftmax": _qlinear_softmax,
    "QGemm": _qgemm,
    "MaxPool": _max_pool,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Concat": _concat,
    "Relu": _relu,
    "LeakyRelu": _leaky_relu,
    "Sigmoid": _sigmoid,
    "Softmax": _softmax,
    "Add": _binary(np.add),
    "Mul": _binary(np.multiply),
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "GlobalAveragePool": _global_average_pool,
    "AveragePool": _average_pool,
    "Resize": prepare_resize,
}
