"""ONNX MAC operators, standalone: the integer accumulators and their requantization.

* :func:`matmul_integer`, :func:`conv_integer`: exact int32 accumulators (wrapping modulo 2^32,
  as the engines' int32), per-row / per-column (per-output-channel) zero points.
* :func:`qlinear_matmul`, :func:`qlinear_conv`: requantized, as the ``engine`` computes them (an engine that
  runs ONNX models, :func:`dspsim.engines.names` ``("onnx")``, or a device's profile: its MAC family's
  requantization and accumulator, ``fully_connected`` for the matmuls, ``conv_2d`` / ``depthwise_conv_2d``
  for the convs).

Tensors are NCHW here, as ONNX lays them out; the kernels underneath are dspsim's NHWC ones.
"""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from ..accumulator import Accumulator
from ..engines import EngineDefectWarning
from ..kernels import conv2d, depthwise_conv2d, fully_connected, fully_connected_plan
from ..kernels._common import MacStages, NamedStages, sum_taps
from ..kernels.mac.conv import conv2d_stages, depthwise_conv2d_stages
from ..kernels.mac.gemm import conv2d_s32, gemm_s32
from ..kernels.quantize.requantize import requantize
from ..requant import Requant
from .quantize import onnx_engine, runs_reference, scale_array

# ------------------------------------------------------------------------------------------------
# integer accumulators
# ------------------------------------------------------------------------------------------------
def _int8_operand(a, func, name):
    a = np.asarray(a)
    if a.dtype not in (np.int8, np.uint8):
        raise TypeError(f"{func}: {name} must be int8 or uint8, got dtype {a.dtype}")
    return a


def _matmul_operands(a, b, func):
    """``(a, b, a2, b2, (M, K, N))``: the int8 / uint8 operands of an ONNX integer MatMul, with a 1-D
    ``a`` as one row and a 1-D ``b`` as one column (numpy's matmul rule), their K checked to agree."""
    a = _int8_operand(a, func, "a")
    b = _int8_operand(b, func, "b")
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    m, k = a2.shape[-2:]
    k2, n = b2.shape[-2:]
    if k != k2:
        raise ValueError(f"{func}: a has K={k} but b has K={k2}")
    return a, b, a2, b2, (m, k, n)


def _zero_points(zp, dtype, n_allowed, func, name):
    """int64 zero points of ``dtype`` (same type as the operand), 1 or ``n_allowed`` values."""
    if zp is None:
        return np.zeros(1, np.int64)
    z = np.asarray(zp)
    if z.dtype != dtype:
        raise TypeError(f"{func}: {name} must have the operand's type {np.dtype(dtype)}, got {z.dtype}")
    z = z.astype(np.int64).reshape(-1)
    if z.size not in (1, n_allowed):
        raise ValueError(f"{func}: {name} must have 1 or {n_allowed} values, got {z.size}")
    return z


def _signed_weights(w, zw):
    """uint8 weights as int8 ``w - 128`` with ``zw - 128`` (the sum of products is unchanged)."""
    if w.dtype == np.uint8:
        return (w.astype(np.int16) - 128).astype(np.int8), zw - 128
    return w, zw


def pair_saturated_u8s8(a, b):
    """``sum_k a[m, k] * b[k, n]`` of uint8 ``a`` (M, K) and int8 ``b`` (K, N) as x86 ``vpmaddubsw``
    computes it (MLAS's U8S8 GEMM when B is not prepacked): products of adjacent k pairs
    (2j, 2j+1) added with int16 saturation, then widened and summed exactly; an odd last k alone.
    Returns int64 (M, N)."""
    m, k = a.shape
    n = b.shape[1]
    kp = k + (k % 2)
    a2 = np.zeros((m, kp), np.int32)
    a2[:, :k] = a
    b2 = np.zeros((kp, n), np.int32)
    b2[:k] = b
    out = np.zeros((m, n), np.int64)
    for j in range(0, kp, 2):
        pair = a2[:, j, None] * b2[j][None, :] + a2[:, j + 1, None] * b2[j + 1][None, :]
        out += np.clip(pair, -32768, 32767)
    return out


def _mlas_u8s8(a, b, za, zb):
    """MLAS U8S8 with pair saturation on the raw codes, then ``- zb*sum_k a - za*sum_k b + K*za*zb``
    (``za`` per row (M, 1) or scalar, ``zb`` per column), wrapped to int32."""
    k = a.shape[1]
    raw = pair_saturated_u8s8(a, b)
    za = np.asarray(za, np.int64).reshape(-1, 1)
    zb = np.asarray(zb, np.int64).reshape(1, -1)
    acc = raw - zb * a.sum(axis=1, dtype=np.int64)[:, None] - za * b.sum(axis=0, dtype=np.int64)[None, :] + k * za * zb
    return acc.astype(np.int32)


def matmul_integer(a, b, a_zero_point=None, b_zero_point=None, *, engine="onnx-reference"):
    """ONNX ``MatMulInteger``: int32 ``(a - a_zero_point) @ (b - b_zero_point)``, numpy batching rules.

    ``a`` (..., M, K) and ``b`` (..., K, N) int8/uint8; ``a_zero_point`` scalar or per row (M,),
    ``b_zero_point`` scalar or per column (N,), each of its operand's type.

    Exact, wrapping modulo 2^32 as an int32 accumulator, except where the engine's ``fully_connected``
    accumulator saturates product pairs: uint8 ``a`` x int8 ``b`` on ONNX Runtime without VNNI ("onnxruntime",
    the AVX2 golden host; "onnxruntime-vnni" is exact), which MLAS sums with x86 pair saturation
    (:func:`pair_saturated_u8s8`; B constant or not). ORT refuses a per-row ``a_zero_point``.
    """
    func = "dspsim.onnx.matmul_integer"
    profile = onnx_engine(engine, func)
    a, b, a2, b2, (m, k, n) = _matmul_operands(a, b, func)
    za = _zero_points(a_zero_point, a.dtype, m, func, "a_zero_point")
    zb = _zero_points(b_zero_point, b.dtype, n, func, "b_zero_point")
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValueError(f"{func}: batch dimensions {a.shape[:-2]} and {b.shape[:-2]} do not broadcast") from None
    ab = np.broadcast_to(a2, batch + (m, k)).reshape(-1, m, k)
    bb = np.broadcast_to(b2, batch + (k, n)).reshape(-1, k, n)
    out = np.empty((ab.shape[0], m, n), np.int32)
    zbn = np.broadcast_to(zb, (n,))
    for i in range(ab.shape[0]):
        if _pairs(profile, "fully_connected", a.dtype, b.dtype, func):
            out[i] = _mlas_u8s8(ab[i], bb[i], za, zbn)
            continue
        ws, zws = _signed_weights(np.ascontiguousarray(bb[i].T), zbn)
        # per-row zero points: sum (a - za_m)(b - zb) = sum a (b - zb) - za_m * sum (b - zb)
        acc = gemm_s32(np.ascontiguousarray(ab[i]), ws, b_zero_point=zws).astype(np.int64)
        col = ws.astype(np.int64).sum(axis=1) - k * zws
        out[i] = (acc - za[:, None] * col[None, :]).astype(np.int32)  # wraps modulo 2^32, as int32
    out = out.reshape(batch + (m, n))
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


def matmul_integer_stages(a, b, a_zero_point=None, b_zero_point=None, *, engine="onnx-reference", tap=None):
    """:func:`matmul_integer`'s stages: its int32 output is the accumulator, a
    :class:`~dspsim.kernels._common.NamedStages` with ``acc`` alone (no bias, no requantization); ``tap``, a flat
    index into the output, adds its taps over ``k``, checked against the output. Refused (ValueError) where the
    engine saturates product pairs (ONNX Runtime without VNNI on uint8 x int8: QLinearMatMul's taps show that
    order)."""
    func = "dspsim.onnx.matmul_integer_stages"
    y = matmul_integer(a, b, a_zero_point, b_zero_point, engine=engine)
    if tap is None:
        return NamedStages({"acc": y})
    a, b, a2, b2, (m, k, n) = _matmul_operands(a, b, func)
    tap = _tap(tap, y, func)
    if _pairs(onnx_engine(engine, func), "fully_connected", a.dtype, b.dtype, func):
        raise ValueError(f"{func}: engine {engine!r} saturates uint8 x int8 product pairs; MatMulInteger's taps are "
                         "not modelled there")
    za = _zero_points(a_zero_point, a.dtype, m, func, "a_zero_point")
    zb = _zero_points(b_zero_point, b.dtype, n, func, "b_zero_point")
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    bi, r, c = np.unravel_index(tap, (int(np.prod(batch)), m, n))
    ab = np.broadcast_to(a2, batch + (m, k)).reshape(-1, m, k)
    bb = np.broadcast_to(b2, batch + (k, n)).reshape(-1, k, n)
    taps = sum_taps(func, [(ab[bi, r], bb[bi, :, c], za[r if za.size > 1 else 0], zb[c if zb.size > 1 else 0], 0, 0,
                            32, y.reshape(-1)[tap])])
    return NamedStages({"acc": y}, taps)


def conv_integer_stages(x, w, x_zero_point=None, w_zero_point=None, *, engine="onnx-reference", tap=None, **attrs):
    """:func:`conv_integer`'s stages: its int32 output is the accumulator, a
    :class:`~dspsim.kernels._common.NamedStages` with ``acc`` alone; ``tap``, a flat index into the NCHW (NCL)
    output, adds its taps in ONNX Runtime's im2col order (input channel of the group, filter row, filter column;
    a tap in the padding ``kind`` 1, its ``x`` the zero point), checked against the output. 1-D and 2-D
    convolutions on engines that sum exactly (pair saturation: refused, ValueError)."""
    func = "dspsim.onnx.conv_integer_stages"
    y = conv_integer(x, w, x_zero_point, w_zero_point, engine=engine, **attrs)
    if tap is None:
        return NamedStages({"acc": y})
    tap = _tap(tap, y, func)
    x, w = np.asarray(x), np.asarray(w)
    if x.ndim == 5 or _pairs(onnx_engine(engine, func), "conv_2d", w.dtype, x.dtype, func):
        raise ValueError(f"{func}: the taps of a 3-D ConvInteger or of one whose engine saturates product pairs "
                         "are not modelled")
    g = ConvGeometry(attrs, x.shape, w.shape, func)
    zx = int(_zero_points(x_zero_point, x.dtype, 1, func, "x_zero_point")[0])
    zw = np.broadcast_to(_zero_points(w_zero_point, w.dtype, w.shape[0], func, "w_zero_point"), (w.shape[0],))
    x4 = x[:, :, None, :] if g.one_d else x
    w4 = w[:, :, None, :] if g.one_d else w
    n, o, oy, ox = np.unravel_index(tap, (y.shape[0], y.shape[1]) + ((1,) if g.one_d else ()) + y.shape[2:])
    cg, kh, kw = w4.shape[1:]
    c, ky, kx = (v.reshape(-1) for v in np.meshgrid(np.arange(cg), np.arange(kh), np.arange(kw), indexing="ij"))
    iy = oy * g.strides[0] - g.pads[0] + ky * g.dilations[0]
    ix = ox * g.strides[1] - g.pads[2] + kx * g.dilations[1]
    inside = (iy >= 0) & (iy < x4.shape[2]) & (ix >= 0) & (ix < x4.shape[3])
    xv = np.where(inside, x4[n, (o // (w4.shape[0] // g.group)) * cg + c, np.clip(iy, 0, x4.shape[2] - 1),
                             np.clip(ix, 0, x4.shape[3] - 1)], zx)
    taps = sum_taps(func, [(xv, w4[o].reshape(-1), zx, int(zw[o]), np.where(inside, 0, 1), 0, 32,
                            y.reshape(-1)[tap])])
    return NamedStages({"acc": y}, taps)


def _tap(tap, y, func):
    """``tap`` checked as a flat index into ``y``."""
    if isinstance(tap, bool) or not isinstance(tap, (int, np.integer)) or not 0 <= tap < y.size:
        raise ValueError(f"{func}: tap must be a flat index in [0, {y.size}) of the output {y.shape}, got {tap!r}")
    return int(tap)


def conv_pads(attrs: dict, in_hw, k_hw, strides, dilations, func):
    """Explicit (top, bottom, left, right) pads from ONNX ``pads`` / ``auto_pad`` (2-D)."""
    auto = attrs.get("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("NOTSET", ""):
        p = list(attrs.get("pads", [0, 0, 0, 0]))
        if len(p) != 4 or min(p) < 0:
            raise ValueError(f"{func}: pads must be 4 ints >= 0 (2-D conv), got {p}")
        return p[0], p[2], p[1], p[3]
    if auto == "VALID":
        return 0, 0, 0, 0
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"{func}: auto_pad {auto!r} is not NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    out = [_same_pads(n, k, s, d, auto) for n, k, s, d in zip(in_hw, k_hw, strides, dilations)]
    return out[0][0], out[0][1], out[1][0], out[1][1]


def _same_pads(n, k, s, d, auto):
    """``auto_pad`` SAME_UPPER / SAME_LOWER along one axis: (begin, end), the odd pixel at the end (UPPER)."""
    o = -(-n // s)
    total = max((o - 1) * s + (k - 1) * d + 1 - n, 0)
    small = total // 2
    return (total - small, small) if auto == "SAME_LOWER" else (small, total - small)


class Conv3dGeometry:
    """The geometry of a 3-D ONNX ConvInteger / QLinearConv (NCDHW input, OIDHW weights): strides, dilations,
    (begin, end) pads per axis, groups, the output size; and the 2-D attributes of one depth slice."""

    def __init__(self, attrs: dict, x_shape, w_shape, func):
        if len(x_shape) != 5 or len(w_shape) != 5:
            raise ValueError(f"{func}: a 3-D convolution takes x (N, C, D, H, W) and w (O, C/group, KD, KH, KW), "
                             f"got x {tuple(x_shape)}, w {tuple(w_shape)}")
        self.strides = [int(v) for v in attrs.get("strides", [1, 1, 1])]
        self.dilations = [int(v) for v in attrs.get("dilations", [1, 1, 1])]
        self.group = int(attrs.get("group", 1))
        if len(self.strides) != 3 or len(self.dilations) != 3 or min(self.strides + self.dilations) < 1:
            raise ValueError(f"{func}: strides and dilations must be 3 ints >= 1, got {self.strides}, "
                             f"{self.dilations}")
        ks = attrs.get("kernel_shape")
        if ks is not None and tuple(ks) != tuple(w_shape[2:]):
            raise ValueError(f"{func}: kernel_shape {list(ks)} does not match the weights {tuple(w_shape)}")
        if self.group < 1 or x_shape[1] != w_shape[1] * self.group or w_shape[0] % self.group:
            raise ValueError(f"{func}: input channels {x_shape[1]} != weight input channels {w_shape[1]} x group "
                             f"{self.group}")
        auto = attrs.get("auto_pad", "NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if auto in ("NOTSET", ""):
            p = [int(v) for v in attrs.get("pads", [0] * 6)]
            if len(p) != 6 or min(p) < 0:
                raise ValueError(f"{func}: pads must be 6 ints >= 0 (3-D conv), got {p}")
            self.pads = [(p[i], p[i + 3]) for i in range(3)]
        elif auto == "VALID":
            self.pads = [(0, 0)] * 3
        elif auto in ("SAME_UPPER", "SAME_LOWER"):
            self.pads = [_same_pads(n, k, s, d, auto) for n, k, s, d in
                         zip(x_shape[2:], w_shape[2:], self.strides, self.dilations)]
        else:
            raise ValueError(f"{func}: auto_pad {auto!r} is not NOTSET, VALID, SAME_UPPER or SAME_LOWER")
        self.out = tuple((n + b + e - d * (k - 1) - 1) // s + 1 for n, k, s, d, (b, e) in
                         zip(x_shape[2:], w_shape[2:], self.strides, self.dilations, self.pads))
        if min(self.out) < 1:
            raise ValueError(f"{func}: the output would be empty ({self.out}) for x {tuple(x_shape)} and w "
                             f"{tuple(w_shape)}")
        (hb, he), (wb, we) = self.pads[1:]
        self.slice_attrs = dict(pads=[hb, wb, he, we], strides=self.strides[1:], dilations=self.dilations[1:],
                                group=self.group)
        self.depthwise = self.group == x_shape[1] and w_shape[1] == 1 and self.group > 1


class ConvGeometry:
    """The geometry of an ONNX Conv / ConvInteger / QLinearConv node on an NCHW (or NCL) input."""

    def __init__(self, attrs: dict, x_shape, w_shape, func):
        if len(x_shape) not in (3, 4) or len(w_shape) != len(x_shape):
            raise ValueError(f"{func}: only 1-D and 2-D convolutions are supported (x {tuple(x_shape)}, "
                             f"w {tuple(w_shape)})")
        self.one_d = len(x_shape) == 3
        x4 = tuple(x_shape) if not self.one_d else (x_shape[0], x_shape[1], 1, x_shape[2])
        w4 = tuple(w_shape) if not self.one_d else (w_shape[0], w_shape[1], 1, w_shape[2])

        def two(name, default):
            v = list(attrs.get(name, default))
            return [1] + v if self.one_d and len(v) == 1 else v

        self.strides = two("strides", [1] * (len(x_shape) - 2))
        self.dilations = two("dilations", [1] * (len(x_shape) - 2))
        if len(self.strides) != 2 or len(self.dilations) != 2 or min(self.strides + self.dilations) < 1:
            raise ValueError(f"{func}: strides and dilations must be {len(x_shape) - 2} ints >= 1, got "
                             f"{self.strides}, {self.dilations}")
        self.group = int(attrs.get("group", 1))
        a = dict(attrs)
        if self.one_d and "pads" in a:
            p = list(a["pads"])
            a["pads"] = [0, p[0], 0, p[1]]
        ks = attrs.get("kernel_shape")
        if ks is not None and tuple(two("kernel_shape", ks)) != w4[2:]:
            raise ValueError(f"{func}: kernel_shape {list(ks)} does not match the weights {tuple(w_shape)}")
        if x4[1] != w4[1] * self.group or w4[0] % self.group:
            raise ValueError(f"{func}: input channels {x4[1]} != weight input channels {w4[1]} x group {self.group}")
        self.pads = conv_pads(a, x4[2:], w4[2:], self.strides, self.dilations, func)
        self.depthwise = self.group == x4[1] and w4[1] == 1 and self.group > 1
        self.multiplier = w4[0] // self.group


def _to_nhwc(x, one_d):
    x4 = x[:, :, None, :] if one_d else x
    return np.ascontiguousarray(x4.transpose(0, 2, 3, 1))


def _from_nhwc(y, one_d):
    y = y.transpose(0, 3, 1, 2)
    return np.ascontiguousarray(y[:, :, 0, :] if one_d else y)


def conv_weights_ohwi(w, one_d):
    """OIHW (or OIL) weights as OHWI."""
    w4 = w[:, :, None, :] if one_d else w
    return np.ascontiguousarray(w4.transpose(0, 2, 3, 1))


def _im2col(x, kh, kw, g: "ConvGeometry"):
    """NCHW codes (one group's channels) as ORT's im2col matrix (C*KH*KW, OH*OW), padded with the
    zero point's code by the caller (``x`` already padded)."""
    n_c, hp, wp = x.shape
    sh, sw = g.strides
    dh, dw = g.dilations
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    cols = np.empty((n_c, kh, kw, oh, ow), x.dtype)
    for ky in range(kh):
        for kx in range(kw):
            cols[:, ky, kx] = x[:, ky * dh:ky * dh + sh * (oh - 1) + 1:sh, kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
    return cols.reshape(n_c * kh * kw, oh * ow), oh, ow


def _conv_integer_mlas_u8s8(x, w, zx, zw, g):
    """ORT ConvInteger with uint8 weights and int8 input: im2col (padded with ``zx``), then MLAS
    U8S8 GEMM ``W (M, C*KH*KW) x col`` with pair saturation along the im2col k = (c, ky, kx)."""
    pt, pb, pl, pr = g.pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=zx)
    n_oc, cg, kh, kw = w.shape
    per = n_oc // g.group
    outs = []
    for b in range(x.shape[0]):
        groups = []
        for gi in range(g.group):
            col, oh, ow = _im2col(xp[b, gi * cg:(gi + 1) * cg], kh, kw, g)
            wg = w[gi * per:(gi + 1) * per].reshape(per, -1)
            acc = _mlas_u8s8(wg, col, zw[gi * per:(gi + 1) * per], np.full(col.shape[1], zx))
            groups.append(acc.reshape(per, oh, ow))
        outs.append(np.concatenate(groups))
    return np.stack(outs)


def _conv3d_sums(x, w, zx, zw, g: Conv3dGeometry, profile):
    """The exact sums of a 3-D integer convolution, int64 (N, O, OD, OH, OW): per output depth, the 2-D integer
    convolutions of the input depth slices its taps reach (a slice in the depth padding adds 0: its codes would
    be the zero point)."""
    n, _, depth = x.shape[:3]
    sd, dd = g.strides[0], g.dilations[0]
    pd = g.pads[0][0]
    acc = np.zeros((n, w.shape[0]) + g.out, np.int64)
    for od in range(g.out[0]):
        for kd in range(w.shape[2]):
            i = od * sd - pd + kd * dd
            if 0 <= i < depth:
                acc[:, :, od] += _conv_integer_2d(x[:, :, i], w[:, :, kd], zx, zw, g.slice_attrs, profile,
                                                  "dspsim.onnx.conv_integer")
    return acc


def conv_integer(x, w, x_zero_point=None, w_zero_point=None, *, engine="onnx-reference", **attrs):
    """ONNX ``ConvInteger``: int32 ``conv(x - x_zero_point, w - w_zero_point)``, NCHW (NCL, NCDHW), padding with 0
    after the zero point is subtracted. ``w_zero_point`` scalar or per output channel (O,).
    Attributes as ONNX: ``pads``, ``strides``, ``dilations``, ``group``, ``auto_pad``, ``kernel_shape``.

    Exact (wrapping modulo 2^32 as the engines' int32), except uint8 weights with an int8 input where the engine's
    ``conv_2d`` accumulator saturates product pairs (ONNX Runtime without VNNI: MLAS U8S8 with the weights as A,
    x86 pair saturation along the im2col order, :func:`pair_saturated_u8s8`; 1-D and 2-D only, a 3-D one is
    refused). ORT refuses a per-channel ``w_zero_point``.
    """
    func = "dspsim.onnx.conv_integer"
    profile = onnx_engine(engine, func)
    x = _int8_operand(x, func, "x")
    w = _int8_operand(w, func, "w")
    if w_zero_point is not None and np.size(w_zero_point) > 1 and not runs_reference(profile):
        raise ValueError(f"{func}: ONNX Runtime's ConvInteger takes a per-tensor w_zero_point only (conv_integer.cc: "
                         f"\"Non per-tensor quantization is not supported\"); engine {profile.name!r} refuses it too")
    if x.ndim == 5:
        g3 = Conv3dGeometry(attrs, x.shape, w.shape, func)
        if w_zero_point is not None and np.size(w_zero_point) > 1:  # op_conv_integer.py: reshaped to (O, 1, 1, 1)
            raise ValueError(f"{func}: the ONNX reference evaluator reshapes a per-channel w_zero_point to (O, 1, 1, 1), "
                             "which does not subtract per output channel from 5-D weights (it fails to broadcast, or "
                             f"subtracts along the input channels); engine {profile.name!r} refuses it")
        if _pairs(profile, "conv_2d", w.dtype, x.dtype, func):
            raise ValueError(f"{func}: engine {profile.name!r} saturates uint8 x int8 product pairs along MLAS's "
                             "im2col order; that order is not modelled for a 3-D convolution")
        return _conv3d_sums(x, w, x_zero_point, w_zero_point, g3, profile).astype(np.int32)  # wraps mod 2^32
    return _conv_integer_2d(x, w, x_zero_point, w_zero_point, attrs, profile, func)


def _conv_integer_2d(x, w, x_zero_point, w_zero_point, attrs, profile, func):
    """:func:`conv_integer` of a 1-D or 2-D convolution, its operands checked (any zero points)."""
    g = ConvGeometry(attrs, x.shape, w.shape, func)
    zx = _zero_points(x_zero_point, x.dtype, 1, func, "x_zero_point")
    zw = _zero_points(w_zero_point, w.dtype, w.shape[0], func, "w_zero_point")
    if _pairs(profile, "conv_2d", w.dtype, x.dtype, func):
        x4 = x[:, :, None, :] if g.one_d else x
        w4 = w[:, :, None, :] if g.one_d else w
        y = _conv_integer_mlas_u8s8(x4, w4, int(zx[0]), np.broadcast_to(zw, (w.shape[0],)), g)
        return y[:, :, 0, :] if g.one_d else y
    ws, zws = _signed_weights(conv_weights_ohwi(w, g.one_d), np.broadcast_to(zw, (w.shape[0],)))
    acc = conv2d_s32(_to_nhwc(x, g.one_d), ws, stride=tuple(g.strides), dilation=tuple(g.dilations),
                     pads=g.pads, groups=g.group, input_zero_point=int(zx[0]), weight_zero_point=zws)
    return _from_nhwc(acc, g.one_d)


# ------------------------------------------------------------------------------------------------
# requantized ops
# ------------------------------------------------------------------------------------------------
def requant_scales(in_scale, w_scale, out_scale, profile, family, func):
    """The Requant of an int32 accumulator ``acc * in_scale * w_scale / out_scale`` by the engine's rule for
    MAC ``family`` (:meth:`dspsim.Requant.from_rule`: ONNX Runtime and the reference ``f32(f32(s_in * s_w) /
    s_out)``, the reference then multiplying in float64; a device's fixed point or shift).

    float16 scales: the reference computes ``f16(f16(s_in * s_w) / s_out)`` in numpy's float16 arithmetic,
    then multiplies in float64; ONNX Runtime widens them to float32 first and proceeds as for float32 scales
    (observed, ORT 1.32: 0 mismatches; the float16 multiplier moves 1-2 of 180 outputs).
    """
    arrays = [np.asarray(s) for s in (in_scale, w_scale, out_scale)]
    for name, a in zip(("input scale", "weight scale", "output scale"), arrays):
        scale_array(a, func, name)
    rule = profile.mac.family(family).requant
    if runs_reference(profile) and any(a.dtype == np.float16 for a in arrays):
        m = (arrays[0].astype(np.float16).reshape(-1)[0] * arrays[1].astype(np.float16).reshape(-1)) / \
            arrays[2].astype(np.float16).reshape(-1)[0]
        return Requant.float_scale(m.astype(np.float16).astype(np.float64), "float64")
    w = arrays[1].astype(np.float32).reshape(-1)
    try:
        return Requant.from_rule(rule, arrays[0].astype(np.float32).reshape(-1)[0], w if w.size > 1 else w[0],
                                 arrays[2].astype(np.float32).reshape(-1)[0])
    except ValueError as exc:
        raise ValueError(f"{func}: {str(exc).replace('Requant.from_rule: ', '')}") from None


def mlas_accumulator(profile, family, a_dtype, b_dtype):
    """The accumulator of the engine's MAC ``family`` for a GEMM of ``a_dtype`` x ``b_dtype``: its register, where
    pair saturation (x86 ``vpmaddubsw``: ONNX Runtime's MLAS on a host without VNNI, observed with ORT 1.32 on
    the AVX2 host of the golden vectors, QgemmU8X8KernelAvx2.S) applies to uint8 x int8 (U8S8) only; None:
    exact int32."""
    acc = profile.mac.family(family).accumulator
    if acc is None or not acc.pair_saturation:
        return acc
    if np.dtype(a_dtype) == np.uint8 and np.dtype(b_dtype) == np.int8:
        return acc
    acc = replace(acc, pair_saturation=False)
    return None if acc == Accumulator() else acc


def _pairs(profile, family, a_dtype, b_dtype, func) -> bool:
    """Whether an integer GEMM (MatMulInteger, ConvInteger: int32 out, no requantization) saturates product
    pairs; another accumulator model is refused there (those operators have no register to simulate)."""
    acc = mlas_accumulator(profile, family, a_dtype, b_dtype)
    if acc is not None and (acc.bits != 32 or acc.overflow != "wrap"):
        raise ValueError(f"{func}: engine {profile.name!r} declares a {acc.bits}-bit {acc.overflow} accumulator; "
                         "the integer GEMM operators give the int32 sums (a device's accumulator applies to the "
                         "requantized QLinear operators)")
    return acc is not None


def _scalar_zp(zp, dtype, func, name):
    if zp is None:
        return 0
    z = np.asarray(zp)
    if z.dtype != dtype:
        raise TypeError(f"{func}: {name} must have type {np.dtype(dtype)}, got {z.dtype}")
    if z.size != 1:
        raise ValueError(f"{func}: {name} must be a scalar (per tensor), got shape {z.shape}")
    return int(z.reshape(-1)[0])


def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, *,
                   engine="onnxruntime", record=None):
    """ONNX ``QLinearMatMul``: ``y = requant((a - za) @ (b - zb))`` with numpy batching (batched B).

    ``b_scale`` / ``b_zero_point`` may be per column (N,), or per batch and column (B's batch dimensions then
    (1, N), as ONNX Runtime takes them). The output type is ``y_zero_point``'s.
    The engine's ``fully_connected`` rule: ONNX Runtime's MLAS ``v = f32(float(acc) * f32(f32(sa*sb)/sy))``,
    ties to even, then ``+ zy``, saturate; the onnx reference ``rint(acc * multiplier + zy)`` in float64 (the
    zero point added before the rounding: ties differ; float16 scales are supported there, the multiplier
    computed in float16, as numpy does); a device's fixed point or power-of-two shift. The accumulator:
    :func:`mlas_accumulator` (uint8 x int8 on ONNX Runtime without VNNI saturates product pairs). ``record``, a
    dict, receives the keywords :func:`dspsim.fully_connected` runs with (``requant``: a list, one per batch
    where B's scales vary along it; ``weight_zero_point``: one row of N per such batch).
    """
    rows, acc, full, shape = _qlinear_matmul_rows("dspsim.onnx.qlinear_matmul", a, a_scale, a_zero_point, b, b_scale,
                                                  b_zero_point, y_scale, y_zero_point, engine, record)
    out = np.stack([fully_connected(x, w, None, accumulator=acc, **kw) for x, w, kw in rows])
    return out.reshape(shape)


def qlinear_matmul_stages(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, *,
                          engine="onnxruntime", tap=None):
    """The accumulator stages of :func:`qlinear_matmul` (a :class:`~dspsim.kernels._common.MacStages` of the
    output's shape: no bias, so ``acc_bias`` is ``acc``), from :func:`dspsim.fully_connected_plan`'s stages of each
    batch, the kernel and requantization its output comes from; ``tap`` a flat index into the output adds that
    output's taps over ``k`` (pair saturation's pairs and zero-point correction as the FC kernel's)."""
    rows, acc, full, shape = _qlinear_matmul_rows("dspsim.onnx.qlinear_matmul_stages", a, a_scale, a_zero_point, b,
                                                  b_scale, b_zero_point, y_scale, y_zero_point, engine, None)
    per = full[-2] * full[-1]
    at = (-1, None) if tap is None else divmod(int(tap), per)
    st = [fully_connected_plan(x.shape, x.dtype, w, None, **kw).stages(x, acc, at[1] if i == at[0] else None)
          for i, (x, w, kw) in enumerate(rows)]
    taps = None if tap is None else st[at[0]].taps
    return MacStages(*(np.stack([getattr(s, f) for s in st]).reshape(shape) for f in ("acc", "acc_bias", "requant")),
                     taps)


def _qlinear_matmul_rows(func, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, engine,
                         record):
    """QLinearMatMul's operands checked: ``(rows, accumulator, full_shape, out_shape)``, ``rows`` per batch of the
    broadcast product ``(x (M, K), w (N, K), fully_connected keywords)``."""
    profile = onnx_engine(engine, func)
    a, b, a2, b2, (m, k, n) = _matmul_operands(a, b, func)
    za = _scalar_zp(a_zero_point, a.dtype, func, "a_zero_point")
    zy_arr = np.asarray(y_zero_point)
    out_dtype = zy_arr.dtype
    if out_dtype not in (np.int8, np.uint8):
        raise TypeError(f"{func}: y_zero_point must be int8 or uint8, got {out_dtype}")
    zy = _scalar_zp(y_zero_point, out_dtype, func, "y_zero_point")
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValueError(f"{func}: batch dimensions {a.shape[:-2]} and {b.shape[:-2]} do not broadcast") from None
    ab = np.broadcast_to(a2, batch + (m, k)).reshape(-1, m, k)
    bb = np.broadcast_to(b2, batch + (k, n)).reshape(-1, k, n)
    bs = _per_column(b_scale, b2.shape[:-2], batch, n, func, "b_scale")
    zb = _per_column(np.zeros((), b.dtype) if b_zero_point is None else b_zero_point, b2.shape[:-2], batch, n, func,
                     "b_zero_point")
    if zb.dtype != b.dtype:
        raise TypeError(f"{func}: b_zero_point must have the operand's type {b.dtype}, got {zb.dtype}")
    rqs = [requant_scales(a_scale, col if col.size > 1 else col[:1], y_scale, profile, "fully_connected", func)
           for col in (bs if bs.shape[0] > 1 else bs[:1])]
    acc = mlas_accumulator(profile, "fully_connected", a.dtype, b.dtype)
    if record is not None:
        record.update(input_zero_point=za, weight_zero_point=zb if zb.shape[0] > 1 else zb[0],
                      output_zero_point=zy, requant=rqs, out_dtype=out_dtype.name, accumulator=acc)
    rows = [(np.ascontiguousarray(ab[i]), np.ascontiguousarray(bb[i].T),
             dict(input_zero_point=za, weight_zero_point=zb[i if zb.shape[0] > 1 else 0].astype(np.int64),
                  output_zero_point=zy, requant=rqs[i if len(rqs) > 1 else 0], out_dtype=out_dtype.name))
            for i in range(ab.shape[0])]
    return rows, acc, batch + (m, n), _squeezed_shape(a, b, batch + (m, n))


def _squeezed_shape(a, b, full):
    """The shape of a matmul's result ``full`` (batch, M, N) with a 1-D ``a`` / ``b``'s dimension dropped (numpy's
    rule; the flat order is the same)."""
    return full[:-2] + ((full[-2],) if a.ndim > 1 else ()) + ((full[-1],) if b.ndim > 1 else ())


def _per_column(v, b_batch, batch, n, func, name):
    """B's scale or zero point of QLinearMatMul as rows of N per column values, one row per batch of the
    broadcast product (one row for all when they do not vary along the batch): a scalar, (N,), or, as ONNX
    Runtime takes them, B's batch dimensions then (1, N)."""
    arr = np.asarray(v)
    if arr.size == 1:
        return np.broadcast_to(arr.reshape(1, 1), (1, n))
    if arr.ndim == 1 and arr.size == n:
        return arr.reshape(1, n)
    want = tuple(b_batch) + (1, n)
    try:
        full = np.broadcast_to(arr.reshape(arr.shape), np.broadcast_shapes(arr.shape, want))
    except ValueError:
        full = None
    if full is None or full.shape != want or arr.ndim != len(want):
        raise ValueError(f"{func}: {name} must be a scalar, have {n} values (per column), or the shape of B's batch "
                         f"dimensions then (1, {n}) {want}, got shape {arr.shape}")
    return np.broadcast_to(full, tuple(batch) + (1, n)).reshape(-1, n)


class QLinearConvOp:
    """A prepared QLinearConv: weights in OHWI / depthwise layout and the requantization, derived once.

    Call it on an NHWC input (:meth:`run_nhwc`); :func:`qlinear_conv` is the NCHW one-shot form.
    """

    def __init__(self, x_shape, x_dtype, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point,
                 bias=None, attrs=None, engine="onnxruntime", func="dspsim.onnx.qlinear_conv", act_min=None):
        profile = onnx_engine(engine, func)
        w = _int8_operand(w, func, "w")
        self.g = ConvGeometry(attrs or {}, x_shape, w.shape, func)
        n_oc = w.shape[0]
        self.zx = _scalar_zp(x_zero_point, x_dtype, func, "x_zero_point")
        self.zw = np.broadcast_to(_zero_points(w_zero_point, w.dtype, n_oc, func, "w_zero_point"), (n_oc,)).copy()
        zy = np.asarray(y_zero_point)
        if zy.dtype not in (np.int8, np.uint8):
            raise TypeError(f"{func}: y_zero_point must be int8 or uint8, got {zy.dtype}")
        self.out_dtype = zy.dtype.name
        self.zy = _scalar_zp(y_zero_point, zy.dtype, func, "y_zero_point")
        ws = np.asarray(w_scale)
        if ws.size not in (1, n_oc):
            raise ValueError(f"{func}: w_scale must have 1 or {n_oc} values (output channels), got {ws.size}")
        wsv = np.broadcast_to(ws.reshape(-1), (n_oc,))
        family = "depthwise_conv_2d" if self.g.depthwise else "conv_2d"
        self.requant = requant_scales(x_scale, wsv, y_scale, profile, family, func)
        if bias is not None:
            bias = np.asarray(bias)
            if bias.dtype != np.int32 or bias.shape != (n_oc,):
                raise ValueError(f"{func}: bias must be int32 of shape ({n_oc},), got {bias.dtype} {bias.shape}")
        self.bias = bias
        self.act_min = act_min
        ohwi = conv_weights_ohwi(w, self.g.one_d)
        if self.g.depthwise:  # (C*M, KH, KW, 1) -> (1, KH, KW, C*M)
            self.w = np.ascontiguousarray(ohwi.transpose(3, 1, 2, 0))
        else:
            self.w = ohwi
        pt, pb, pl, pr = self.g.pads
        self.padding = ((pt, pb), (pl, pr))
        # MLAS's U8S8 GEMM (uint8 activations, int8 weights) adds product pairs with int16 saturation
        # (vpmaddubsw) along the NHWC im2col order; its depthwise kernel is exact (the profiles say so).
        self.accumulator = mlas_accumulator(profile, family, x_dtype, w.dtype)

    def _keywords(self):
        kw = dict(stride=tuple(self.g.strides), padding=self.padding, dilation=tuple(self.g.dilations),
                  input_zero_point=self.zx, weight_zero_point=self.zw, output_zero_point=self.zy,
                  requant=self.requant, out_dtype=self.out_dtype, act_min=self.act_min,
                  accumulator=self.accumulator)
        return dict(kw, depth_multiplier=self.g.multiplier) if self.g.depthwise else kw

    def run_nhwc(self, x):
        return (depthwise_conv2d if self.g.depthwise else conv2d)(x, self.w, self.bias, **self._keywords())

    def stages_nhwc(self, x, tap=None):
        """The accumulator stages of :meth:`run_nhwc` on ``x`` (:class:`~dspsim.kernels._common.MacStages`, NHWC;
        ``tap`` a flat index into the NHWC output), from the same kernel."""
        stages = depthwise_conv2d_stages if self.g.depthwise else conv2d_stages
        return stages(x, self.w, self.bias, tap=tap, **self._keywords())


def qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, bias=None, *,
                 engine="onnxruntime", **attrs):
    """ONNX ``QLinearConv`` on NCHW (or NCL) codes: int32 ``conv(x - zx, w - zw[o]) + bias``, requantized
    as :func:`qlinear_matmul` says, by the engine's ``conv_2d`` rule (``depthwise_conv_2d`` for a depthwise
    conv; per-channel ``w_scale``/``w_zero_point`` allowed). Grouped and depthwise convolutions use
    :func:`dspsim.conv2d` / :func:`dspsim.depthwise_conv2d` (MLAS's depthwise kernel is exact).
    """
    x = _int8_operand(x, "dspsim.onnx.qlinear_conv", "x")
    if x.ndim == 5:
        return _qlinear_conv3d(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, bias,
                               engine, attrs)
    op = QLinearConvOp(x.shape, x.dtype, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point,
                       bias, attrs, engine)
    return _from_nhwc(op.run_nhwc(_to_nhwc(x, op.g.one_d)), op.g.one_d)


def _qlinear_conv3d(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, bias, engine,
                    attrs):
    """A 3-D QLinearConv: the exact sums (:func:`_conv3d_sums`) plus the bias, wrapped to int32, requantized per
    output channel by the engine's rule (``conv_2d``; ``depthwise_conv_2d`` for a depthwise one). An engine whose
    accumulator is not the exact int32 (pair saturation, a device's register) is refused: its order is not
    modelled in 3-D."""
    func = "dspsim.onnx.qlinear_conv"
    profile = onnx_engine(engine, func)
    w = _int8_operand(w, func, "w")
    g = Conv3dGeometry(attrs, x.shape, w.shape, func)
    n_oc = w.shape[0]
    zx = _scalar_zp(x_zero_point, x.dtype, func, "x_zero_point")
    zw = _zero_points(w_zero_point, w.dtype, n_oc, func, "w_zero_point")
    zy_arr = np.asarray(y_zero_point)
    if zy_arr.dtype not in (np.int8, np.uint8):
        raise TypeError(f"{func}: y_zero_point must be int8 or uint8, got {zy_arr.dtype}")
    zy = _scalar_zp(y_zero_point, zy_arr.dtype, func, "y_zero_point")
    ws = np.asarray(w_scale)
    if ws.size not in (1, n_oc):
        raise ValueError(f"{func}: w_scale must have 1 or {n_oc} values (output channels), got {ws.size}")
    family = "depthwise_conv_2d" if g.depthwise else "conv_2d"
    if mlas_accumulator(profile, family, x.dtype, w.dtype) is not None:
        raise ValueError(f"{func}: engine {profile.name!r} has a {family} accumulator other than the exact int32; "
                         "its order is not modelled for a 3-D convolution")
    rq = requant_scales(x_scale, np.broadcast_to(ws.reshape(-1), (n_oc,)), y_scale, profile, family, func)
    axis = 1
    if runs_reference(profile) and ws.size > 1:  # op_qlinear_conv.py: expand_dims(w_scale, (0, 2, 3))
        if g.out[0] != n_oc:
            raise ValueError(f"{func}: the ONNX reference evaluator fails on a 3-D QLinearConv with per-channel "
                             f"w_scale unless the output depth equals the {n_oc} output channels (its (1, O, 1, 1) "
                             f"scale broadcasts against depth {g.out[0]}); engine {profile.name!r} refuses it too")
        warnings.warn(f"{func}: the ONNX reference evaluator applies a 3-D QLinearConv's per-channel w_scale along "
                      "the output depth (its scale is (1, O, 1, 1)); engine "
                      f"{profile.name!r} reproduces this", EngineDefectWarning, stacklevel=3)
        axis = 2
    acc = _conv3d_sums(x, w, np.asarray(zx, x.dtype), zw.astype(w.dtype) if zw.size > 1 else np.asarray(zw[0], w.dtype),
                       g, profile)
    if bias is not None:
        bias = np.asarray(bias)
        if bias.dtype != np.int32 or bias.shape != (n_oc,):
            raise ValueError(f"{func}: bias must be int32 of shape ({n_oc},), got {bias.dtype} {bias.shape}")
        acc += bias.astype(np.int64)[None, :, None, None, None]
    acc = acc.astype(np.int32)  # the int32 accumulator wraps
    return requantize(acc, rq, zy, out_dtype=zy_arr.dtype.name, axis=axis)
