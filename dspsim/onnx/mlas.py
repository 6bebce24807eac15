"""ONNX Runtime's float32 arithmetic where its quantized operators leave the integers (x86-64 CPU EP).

Each function names the ORT/MLAS source it follows (onnxruntime/contrib_ops/cpu/quantization/,
onnxruntime/core/mlas/lib/). Everything is float32 with the operation order of that source; fused
multiply-adds are exact (:func:`fma_f32`). The integer parts go through dspsim's kernels
(:func:`dspsim.quantize_linear`, :func:`dspsim.requantize`).
"""
from __future__ import annotations

import numpy as np

from ..quantize import quantize_linear as ort_quantize_linear
from ..requant import Requant
from ..kernels.quantize.requantize import requantize

_F32 = np.float32


def fma_f32(a, b, c) -> np.ndarray:
    """``fmaf(a, b, c)``: ``a * b + c`` rounded once to float32 (the FMA3 ``vfmadd`` instructions).

    ``a * b`` is exact in float64 (24 + 24 bits); the float64 sum ``s`` and its error ``e`` (TwoSum)
    are exact too, and ``f32(s)`` is the correctly rounded result unless ``s`` lies exactly halfway
    between two float32 values while ``e != 0``: the exact value ``s + e`` then lies on ``e``'s side.
    """
    a, b, c = (np.asarray(v, _F32).astype(np.float64) for v in (a, b, c))
    with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN operands: IEEE, as the instruction gives
        p = a * b
        s = p + c
        bb = s - p
        e = (p - (s - bb)) + (c - bb)
        r = s.astype(_F32)  # beyond float32: +-inf
    rd = r.astype(np.float64)
    nb = np.where(s > rd, np.nextafter(r, _F32(np.inf)), np.nextafter(r, _F32(-np.inf)))
    with np.errstate(invalid="ignore"):
        nbd = nb.astype(np.float64)
        halfway = np.isfinite(rd) & (s != rd) & (2 * np.abs(s - rd) == np.abs(nbd - rd))
        toward_nb = np.sign(e) == np.sign(nbd - rd)
    return np.where(halfway & (e != 0) & toward_nb, nb, r).astype(_F32)


# MlasLogisticConstants (mlas/lib/logistic.cpp; Eigen's rational approximation)
_LOGISTIC = dict(lo=-18.0, hi=18.0, a9=4.37031012579801e-11, a7=1.15627324459942e-07, a5=6.08574864600143e-05,
                 a3=8.51377133304701e-03, a1=2.48287947061529e-01, b10=6.10247389755681e-13,
                 b8=5.76102136993427e-09, b6=6.29106785017040e-06, b4=1.70198817374094e-03,
                 b2=1.16817656904453e-01, b0=9.93151921023180e-01)
_LC = {k: _F32(v) for k, v in _LOGISTIC.items()}


def mlas_logistic(x) -> np.ndarray:
    """``MlasComputeLogistic`` (ORT's Sigmoid, float and QLinearSigmoid's table), FMA3 kernel
    (``MlasLogisticKernelFma3``): clamp to [-18, 18]; ``p = x * poly_a(x^2)``, ``q = poly_b(x^2)``
    by Horner steps, each an FMA; ``max(p / q + 0.5, 0)`` (the FMA3 kernel has no upper clamp)."""
    c = _LC
    v = np.minimum(np.maximum(np.asarray(x, _F32), c["lo"]), c["hi"])
    v2 = (v * v).astype(_F32)
    p = fma_f32(v2, c["a9"], c["a7"])
    for k in ("a5", "a3", "a1"):
        p = fma_f32(p, v2, c[k])
    p = (p * v).astype(_F32)
    q = fma_f32(v2, c["b10"], c["b8"])
    for k in ("b6", "b4", "b2", "b0"):
        q = fma_f32(q, v2, c[k])
    return np.maximum((p / q).astype(_F32) + _F32(0.5), _F32(0)).astype(_F32)


def _hexf(frac24, exp):
    """The float32 ``0x1.<frac24>p<exp>`` (24-bit hex fraction)."""
    return _F32((1 + frac24 / 2.0**24) * 2.0**exp)


# MlasExpConstants (mlas/lib/compute.cpp), as used by MlasComputeSumExpF32KernelFma3
_EXP = dict(lower=_F32(-88.3762626647949), bias=_F32(12582912.0), log2e=_F32(1.44269504088896341),
            ln2_hi=_F32(-6.93145752e-1), ln2_lo=_F32(-1.42860677e-6),
            p=[_hexf(0x694000, -10), _hexf(0x125edc, -7), _hexf(0x555b5a, -5), _hexf(0x555450, -3),
               _hexf(0xfffff6, -2), _F32(1.0), _F32(1.0)])


def mlas_exp_shifted(x, neg_max) -> np.ndarray:
    """``exp(x + neg_max)`` as MLAS's FMA3 sum-exp kernel computes it: range reduction by
    ``n = round(x * log2(e))`` (the 1.5 * 2^23 bias trick, FMA), two-part ``ln 2`` subtraction,
    a degree-6 Horner polynomial in FMAs, times ``2^n`` built in the exponent bits."""
    c = _EXP
    v = np.maximum((np.asarray(x, _F32) + _F32(neg_max)).astype(_F32), c["lower"])
    biased = fma_f32(v, c["log2e"], c["bias"])
    m = (biased - c["bias"]).astype(_F32)
    r = fma_f32(m, c["ln2_hi"], v)
    r = fma_f32(m, c["ln2_lo"], r)
    p = fma_f32(c["p"][0], r, c["p"][1])
    for k in c["p"][2:]:
        p = fma_f32(p, r, k)
    bits = ((biased.view(np.uint32).astype(np.uint64) << np.uint64(23)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    scale = (bits + np.uint32(0x3F800000)).view(_F32)
    return (p * scale).astype(_F32)


def mlas_softmax(x, axis) -> np.ndarray:
    """``MlasComputeSoftmax`` (ORT's float Softmax, opset 13) along ``axis``: per row the maximum,
    ``e = exp(x - max)`` (:func:`mlas_exp_shifted`), the sum in eight lane accumulators (element i
    into lane i % 8) reduced as ``((l4+l5)+(l6+l7)) + ((l0+l1)+(l2+l3))``, then ``e * f32(1/sum)``."""
    xm = np.moveaxis(np.asarray(x, _F32), axis, -1)
    rows = xm.reshape(-1, xm.shape[-1])
    out = np.empty_like(rows)
    for i, row in enumerate(rows):
        e = mlas_exp_shifted(row, -row.max())
        lanes = np.zeros(8, _F32)
        for k, v in enumerate(e):
            lanes[k % 8] = _F32(lanes[k % 8] + v)
        lo = _F32(_F32(lanes[0] + lanes[1]) + _F32(lanes[2] + lanes[3]))
        hi = _F32(_F32(lanes[4] + lanes[5]) + _F32(lanes[6] + lanes[7]))
        out[i] = (e * _F32(_F32(1) / _F32(hi + lo))).astype(_F32)
    return np.moveaxis(out.reshape(xm.shape), -1, axis)


def dequantize_codes_table(dtype, x_scale, x_zero_point) -> np.ndarray:
    """float32 ``X_scale * (int(x) - zp)`` for the 256 codes, indexed by the code's byte
    (``QlinearBuildLookupTable``, qlinear_lookup_table.cc)."""
    codes = np.arange(256).astype(np.uint8).view(dtype).astype(np.int64)
    with np.errstate(over="ignore"):  # a huge scale: +-inf entries, as C's float product gives
        return (_F32(x_scale) * (codes - int(x_zero_point)).astype(_F32)).astype(_F32)


def lookup_table(dtype, x_scale, x_zero_point, y_scale, y_zero_point, transform=None) -> np.ndarray:
    """The 256-entry code table of ORT's table-driven QLinear ops (QLinearSigmoid, QLinearLeakyRelu,
    QLinearConcat's rescale): dequantize every code, ``transform`` in float32, then
    ``MlasQuantizeLinear`` (:func:`dspsim.quantize_linear`). Index by ``codes.view(uint8)``."""
    d = dequantize_codes_table(dtype, x_scale, x_zero_point)
    if transform is not None:
        d = transform(d)
    return ort_quantize_linear(d, _F32(y_scale), int(y_zero_point), dtype=np.dtype(dtype).name)


def apply_table(x, table) -> np.ndarray:
    return table[np.asarray(x).view(np.uint8)]


def qlinear_add(a, sa, za, b, sb, zb, sc, zc, dtype, record=None) -> np.ndarray:
    """``MlasQLinearAdd`` (mlas/lib/intrinsics/avx2/qladd_avx2.cpp), element-wise with numpy broadcasting.

    ``rAC = f32(sa/sc)``, ``rBC = f32(sb/sc)``, ``fixed = f32(zc) - (rAC*za + rBC*zb)`` (scalar C;
    whether the compiler contracts this sum into an FMA is not decided by the golden data: both give
    the same codes there); both operands vectors: ``v = fma(a, rAC, fma(b, rBC, fixed))``; a scalar
    operand is folded into ``fixed`` first, ``fma(b, rBC, fixed)`` (the intrinsics' multiply and add
    are contracted: with two roundings 1 of 66 golden outputs differs). Then ``cvtps2dq`` (ties to
    even) and saturating packs to the 8-bit type. ``record``, a dict, receives ``input1_ratio`` (rAC),
    ``input2_ratio`` (rBC) and ``offset`` (``fixed``, before a scalar operand is folded in).
    """
    r_ac = _F32(_F32(sa) / _F32(sc))
    r_bc = _F32(_F32(sb) / _F32(sc))
    fixed = _F32(_F32(zc) - _F32(_F32(r_ac * _F32(za)) + _F32(r_bc * _F32(zb))))
    if record is not None:
        record.update(input1_ratio=r_ac, input2_ratio=r_bc, offset=fixed)
    a = np.asarray(a)
    b = np.asarray(b)
    if a.size == 1 and b.size != 1:
        fixed = fma_f32(_F32(a.reshape(-1)[0]), r_ac, fixed)
        v = fma_f32(b.astype(_F32), r_bc, fixed).reshape(np.broadcast_shapes(a.shape, b.shape))
    elif b.size == 1 and a.size != 1:
        fixed = fma_f32(_F32(b.reshape(-1)[0]), r_bc, fixed)
        v = fma_f32(a.astype(_F32), r_ac, fixed).reshape(np.broadcast_shapes(a.shape, b.shape))
    else:
        a, b = np.broadcast_arrays(a, b)
        v = fma_f32(a.astype(_F32), r_ac, fma_f32(b.astype(_F32), r_bc, fixed))
    info = np.iinfo(dtype)
    q = np.rint(v.astype(np.float64))  # cvtps2dq: ties to even (values far inside int32)
    return np.clip(q, info.min, info.max).astype(dtype)


def qlinear_mul(a, sa, za, b, sb, zb, sc, zc, dtype, record=None) -> np.ndarray:
    """``MlasQLinearMul`` (mlas/lib/qlmul.cpp, SSE2 kernel), element-wise with numpy broadcasting:
    the exact int32 product ``(a - za) * (b - zb)``, ``f32(f32(float(p) * f32(f32(sa*sb)/sc)) + zc)``
    (the zero point before the rounding, no FMA), ``cvtps2dq`` (ties to even), saturating packs.
    ``record``, a dict, receives ``ratio`` (``f32(f32(sa*sb)/sc)``)."""
    ratio = _F32(_F32(_F32(sa) * _F32(sb)) / _F32(sc))
    if record is not None:
        record.update(ratio=ratio)
    a, b = np.broadcast_arrays(np.asarray(a).astype(np.int64) - int(za), np.asarray(b).astype(np.int64) - int(zb))
    v = ((a * b).astype(_F32) * ratio).astype(_F32) + _F32(zc)
    info = np.iinfo(dtype)
    return np.clip(np.rint(v.astype(_F32).astype(np.float64)), info.min, info.max).astype(dtype)


def global_average_pool(x, x_scale, x_zero_point, y_scale, y_zero_point, dtype, record=None) -> np.ndarray:
    """``MlasQLinearGlobalAveragePoolNchw`` (mlas/lib/qlgavgpool.cpp) on NCHW codes: the exact int32
    sum over the image, ``- zx * N``, then MLAS requantization with ``scale = f32(sx / f32(sy *
    f32(N)))`` (:func:`dspsim.requantize`, scheme "onnxruntime"). ``record``, a dict, receives ``count`` (N)
    and ``requant`` (the :class:`~dspsim.Requant`)."""
    x = np.asarray(x)
    n_img = int(np.prod(x.shape[2:]))
    acc = x.reshape(x.shape[0], x.shape[1], -1).astype(np.int64).sum(axis=2) - int(x_zero_point) * n_img
    scale = _F32(_F32(x_scale) / _F32(_F32(y_scale) * _F32(n_img)))
    rq = Requant.float_scale(scale, "float32")
    if record is not None:
        record.update(count=n_img, requant=rq)
    y = requantize(acc, rq, int(y_zero_point), out_dtype=np.dtype(dtype).name)
    return y.reshape(x.shape[:2] + (1,) * (x.ndim - 2))


def average_pool(x, x_scale, x_zero_point, y_scale, y_zero_point, kernel, strides, pads, count_include_pad,
                 dtype) -> np.ndarray:
    """``QLinearAveragePool`` (contrib_ops/cpu/quantization/qlinear_pool.cc), NCHW 2-D: the codes are
    dequantized (float32 ``sx * (x - zx)``), summed in float32 row by row over the clipped window,
    divided by the count (window taps, or the full kernel with ``count_include_pad``), then
    ``nearbyintf(y / sy + zy)`` (the zero point added before the rounding), clamped."""
    xf = dequantize_codes_table(dtype, x_scale, x_zero_point)[np.asarray(x).view(np.uint8)]
    n, c, h, w = xf.shape
    kh, kw = kernel
    sh, sw = strides
    pt, pl = pads[0], pads[1]
    oh = (h + pads[0] + pads[2] - kh) // sh + 1
    ow = (w + pads[1] + pads[3] - kw) // sw + 1
    out = np.empty((n, c, oh, ow), dtype)
    info = np.iinfo(dtype)
    for ph in range(oh):
        h0 = ph * sh - pt
        h1, h0 = min(h0 + kh, h), max(h0, 0)
        for pw in range(ow):
            w0 = pw * sw - pl
            w1, w0 = min(w0 + kw, w), max(w0, 0)
            acc = np.zeros((n, c), _F32)
            for yy in range(h0, h1):
                for xx in range(w0, w1):
                    acc = (acc + xf[:, :, yy, xx]).astype(_F32)
            count = kh * kw if count_include_pad else (h1 - h0) * (w1 - w0)
            v = ((acc / _F32(count)).astype(_F32) / _F32(y_scale)).astype(_F32) + _F32(y_zero_point)
            out[:, :, ph, pw] = np.clip(np.rint(v.astype(_F32)), info.min, info.max).astype(dtype)
    return out


def softmax_exp_table(x_scale, reduce_len, signed) -> np.ndarray:
    """QLinearSoftmax's table (qlinear_softmax.cc ``QlinearBuildLookupTableUint32``, float output):
    ``bit_shift = max(0, log(FLT_MAX / D) - 5) / sx`` in double; ``table[i] = f32(exp((i - 255 +
    bit_shift) * sx))``, stored at byte ``i`` (uint8) or ``i - 128`` (int8)."""
    bit_shift = np.log(np.float64(np.finfo(_F32).max) / reduce_len)
    bit_shift = max(0.0, bit_shift - 5.0) / np.float64(_F32(x_scale))
    i = np.arange(256, dtype=np.float64)
    vals = np.exp((i - 255 + bit_shift) * np.float64(_F32(x_scale))).astype(_F32)
    table = np.empty(256, _F32)
    idx = ((np.arange(256) - 128) & 0xFF) if signed else np.arange(256)
    table[idx] = vals
    return table


def qlinear_softmax(x, x_scale, y_scale, y_zero_point, axis, dtype, record=None) -> np.ndarray:
    """``QLinearSoftmax`` (opset 13 semantics, qlinear_softmax.cc ``QlinearSoftmaxCPU``) along ``axis``.

    Per row: the table is shifted so the row maximum reads entry 255; ``vsum`` is the float32 sum of
    the entries in row order; ``y = nearbyintf(f32(vt * floor(1/sy)) / vsum) + zy``, saturated
    above: uint8 at 255, int8 at 127 (onnxruntime 1.32, measured; the qlinear_softmax.cc versions
    in the public history write ``vq > 255 ? 255 : static_cast<int8_t>(vq)``, which would wrap
    128..255 to negative codes: docs/engines.md "ONNX Resize, opsets 22+, QLinearSoftmax int8").
    ``record``, a dict, receives ``exp_table`` (float32, by the code's byte) and ``output_multiplier`` (``y_s``).
    """
    x = np.moveaxis(np.asarray(x), axis, -1)
    d = x.shape[-1]
    signed = np.dtype(dtype) == np.int8
    table = softmax_exp_table(x_scale, d, signed)
    y_s = _F32(np.floor(_F32(1.0) / _F32(y_scale)))
    if record is not None:
        record.update(exp_table=table, output_multiplier=y_s)
    rows = x.reshape(-1, d).astype(np.int64)
    if signed:
        idx = ((127 - rows.max(axis=1, keepdims=True)) + rows) & 0xFF
    else:
        idx = rows + (255 - rows.max(axis=1, keepdims=True))
    vt = table[idx]
    vsum = np.zeros(rows.shape[0], _F32)
    for k in range(d):
        vsum = (vsum + vt[:, k]).astype(_F32)
    q = np.rint(((vt * y_s).astype(_F32) / vsum[:, None]).astype(_F32)).astype(np.int64) + int(y_zero_point)
    q = np.minimum(q, 127 if signed else 255)
    y = q.astype(np.int8) if signed else q.astype(np.uint8)
    return np.moveaxis(y.reshape(x.shape), -1, axis)


def fma_dot(a, b, bias=None):
    """float32 ``a (M, K) @ b (K, N)``: one FMA chain per output in k order from 0, then ``+ bias``
    (MLAS SGEMM's register accumulation for K within one block)."""
    acc = np.zeros((a.shape[0], b.shape[1]), _F32)
    for k in range(a.shape[1]):
        acc = fma_f32(a[:, k, None], b[None, k, :], acc)
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
