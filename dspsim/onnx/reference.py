"""Slow, obviously-correct oracles for :mod:`dspsim.onnx` (plain Python ints and Fractions, no numba,
no numpy arithmetic), one element at a time. Integer quantize/dequantize and float requantization
reuse :mod:`dspsim.reference` (the single home of those formulas).
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

from .. import reference as ref

# name: (exponent bits, mantissa bits, bias, kind); kind: "ieee" (inf + NaNs), "fn" (S.1111.111 NaN),
# "fnuz" (0x80 NaN, no -0), "none" (float4: no inf, no NaN)
FORMATS = {"FLOAT8E4M3FN": (4, 3, 7, "fn"), "FLOAT8E4M3FNUZ": (4, 3, 8, "fnuz"), "FLOAT8E5M2": (5, 2, 15, "ieee"),
           "FLOAT8E5M2FNUZ": (5, 2, 16, "fnuz"), "FLOAT4E2M1": (2, 1, 1, "none")}


def minifloat_value(code: int, fmt: str):
    """Exact value of a code (Fraction), or the floats inf / nan."""
    e_bits, m_bits, bias, kind = FORMATS[fmt]
    sign_bit = 1 << (e_bits + m_bits)
    neg = bool(code & sign_bit)
    e = (code >> m_bits) & ((1 << e_bits) - 1)
    m = code & ((1 << m_bits) - 1)
    if kind == "fnuz" and code == sign_bit:
        return math.nan
    if kind == "ieee" and e == (1 << e_bits) - 1:
        return (-math.inf if neg else math.inf) if m == 0 else math.nan
    if kind == "fn" and e == (1 << e_bits) - 1 and m == (1 << m_bits) - 1:
        return math.nan
    if e == 0:
        v = Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
    else:
        v = (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)
    return -v if neg else v


@functools.lru_cache(maxsize=None)
def _finite_codes(fmt: str):
    """(code, exact value) of the non-negative finite codes, ascending."""
    e_bits, m_bits, _, _ = FORMATS[fmt]
    pairs = [(c, minifloat_value(c, fmt)) for c in range(1 << (e_bits + m_bits))]
    return tuple((c, v) for c, v in pairs if isinstance(v, Fraction))


def minifloat_encode(x: float, fmt: str, saturate: bool = True) -> int:
    """The code of float ``x``: nearest finite value, ties to the even code; overflow and specials
    by the format's rule (see :func:`dspsim.onnx.types.encode_float`)."""
    e_bits, m_bits, bias, kind = FORMATS[fmt]
    sign_bit = 1 << (e_bits + m_bits)
    neg = math.copysign(1.0, x) < 0
    if math.isnan(x):
        if kind == "fnuz":
            return sign_bit
        if kind == "none":
            return 0 if neg else sign_bit
        nan = sign_bit - 1 if kind == "fn" else sign_bit - 2
        return nan | (sign_bit if neg else 0)
    finite = _finite_codes(fmt)
    max_code, max_val = finite[-1]
    over = kind != "none" and not saturate
    if math.isinf(x):
        code = max_code if not over else None
    else:
        a = abs(Fraction(x))
        ulp = max_val - finite[-2][1]
        cands = list(finite) + [(max_code + 1, max_val + ulp)]  # the virtual value above the largest
        best = min(cands, key=lambda cv: (abs(cv[1] - a), cv[0] % 2))
        code = best[0]
        if code == max_code + 1:
            code = None if over else max_code
    if code is None:
        if kind == "ieee":
            code = sign_bit - (1 << m_bits)  # inf
        elif kind == "fn":
            return (sign_bit - 1) | (sign_bit if neg else 0)
        else:
            return sign_bit
    if neg and not (kind == "fnuz" and code == 0):
        code |= sign_bit
    return code


def quantize_int(x: float, scale: float, zero_point: int, lo: int, hi: int) -> int:
    """Integer QuantizeLinear of one element: :func:`dspsim.reference.onnx_quantize`."""
    return ref.onnx_quantize(x, scale, zero_point, lo, hi)


def quantize_minifloat(x: float, scale: float, zero_point_value, fmt: str, saturate: bool) -> int:
    """QuantizeLinear to float8/float4: ``f32(x / scale)`` (+ the float4 zero point, in float32), encoded."""
    v = ref.f32(Fraction(x) / ref.f32(scale)) if math.isfinite(x) else x
    negative_zero = math.copysign(1.0, x) < 0  # the sign of a zero quotient
    if isinstance(v, Fraction):
        if fmt == "FLOAT4E2M1":  # IEEE: (-0) + (+0) = +0; only -0 + -0 stays -0
            negative_zero = negative_zero and math.copysign(1.0, float(zero_point_value)) < 0
            v = ref.f32(v + Fraction(zero_point_value))
        if v == 0:
            return minifloat_encode(-0.0 if negative_zero else 0.0, fmt, saturate)
        v = float(v)
    return minifloat_encode(v, fmt, saturate)


def dequantize_minifloat(code: int, scale: float, fmt: str):
    v = minifloat_value(code, fmt)
    return v if not isinstance(v, Fraction) else ref.f32(v * ref.f32(scale))


def block_index(index: tuple, axis: int, block_size: int) -> tuple:
    """The scale index of element ``index`` in blocked quantization."""
    return tuple(i // block_size if d == axis else i for d, i in enumerate(index))


def matmul_integer(a, b, za, zb):
    """``a`` M x K, ``b`` K x N nested lists; ``za`` per row list, ``zb`` per column list. Wrapped to int32."""
    m, k, n = len(a), len(b), len(b[0])
    return [[ref.wrap(sum((a[i][t] - za[i]) * (b[t][j] - zb[j]) for t in range(k)), 32) for j in range(n)]
            for i in range(m)]


def conv_integer(x, w, zx, zw, strides, pads, dilations, group):
    """NCHW nested lists; ``pads`` (top, left, bottom, right) as ONNX; ``zw`` per output channel."""
    n_b, c_in, h, wd = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    c_out, c_g, kh, kw = len(w), len(w[0]), len(w[0][0]), len(w[0][0][0])
    pt, pl, pb, pr = pads
    oh = (h + pt + pb - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pl + pr - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    per_group = c_out // group
    out = [[[[0] * ow for _ in range(oh)] for _ in range(c_out)] for _ in range(n_b)]
    for b in range(n_b):
        for o in range(c_out):
            g = o // per_group
            for oy in range(oh):
                for ox in range(ow):
                    s = 0
                    for ci in range(c_g):
                        c = g * c_g + ci
                        for ky in range(kh):
                            for kx in range(kw):
                                iy = oy * strides[0] + ky * dilations[0] - pt
                                ix = ox * strides[1] + kx * dilations[1] - pl
                                if 0 <= iy < h and 0 <= ix < wd:
                                    s += (x[b][c][iy][ix] - zx) * (w[o][ci][ky][kx] - zw[o])
                    out[b][o][oy][ox] = ref.wrap(s, 32)
    return out


def requantize(acc: int, multiplier, zp: int, lo: int, hi: int, engine: str) -> int:
    """One accumulator requantized by ``multiplier`` (the engine's stored value) as ``engine`` does."""
    rq = {"scheme": engine, "scale": [multiplier]}
    return ref.clamp(ref.requantize_value(acc, rq, 0, zp), lo, hi)


def f32(v: float) -> float:
    """``v`` rounded to float32 (one IEEE rounding: a double result of one float32 op rounds exactly)."""
    import struct

    return struct.unpack("<f", struct.pack("<f", v))[0]


def ort_source_coordinate(x: int, scale: float, n_out: int, n_in: int, transform: str) -> float:
    """ORT's GetOriginalCoordinateFromResizedCoordinate in float32, for one output index."""
    if scale == 1:
        return float(x)
    if transform == "asymmetric":
        return f32(x / scale)
    if transform == "align_corners":
        return 0.0 if n_out == 1 else f32(f32(x * (n_in - 1)) / (n_out - 1))
    if transform == "pytorch_half_pixel" and n_out <= 1:
        return 0.0
    return f32(f32(f32(x + 0.5) / scale) - 0.5)


def ort_bilinear_8bit(plane, out_h: int, out_w: int, scale_h: float, scale_w: float, transform: str,
                      integer_weights: bool, lo: int, hi: int):
    """One 2-D plane (nested lists of 8-bit codes) resized as ORT's UpsampleBilinear<int8/uint8>
    (float32 weights, static_cast truncation) or NhwcUpsampleBilinearInteger (``integer_weights``:
    weights trunc(c * 1024), sum / 2^20 toward zero), one output pixel at a time."""
    n_h, n_w = len(plane), len(plane[0])

    def axis(o, scale, n_out, n_in):
        c = min(max(ort_source_coordinate(o, scale, n_out, n_in, transform), 0.0), float(n_in - 1))
        i1 = min(int(c), n_in - 1)
        i2 = min(i1 + 1, n_in - 1)
        if integer_weights:
            c10 = int(f32(c * 1024))
            d1, d2 = (512, 512) if i1 == i2 else (abs(c10 - i1 * 1024), abs(c10 - i2 * 1024))
        else:
            d1, d2 = (0.5, 0.5) if i1 == i2 else (f32(abs(c - i1)), f32(abs(c - i2)))
        return i1, i2, d1, d2

    out = []
    for oy in range(out_h):
        y1, y2, dy1, dy2 = axis(oy, scale_h, out_h, n_h)
        row = []
        for ox in range(out_w):
            x1, x2, dx1, dx2 = axis(ox, scale_w, out_w, n_w)
            pix = [(dx2, dy2, plane[y1][x1]), (dx1, dy2, plane[y1][x2]), (dx2, dy1, plane[y2][x1]),
                   (dx1, dy1, plane[y2][x2])]
            if integer_weights:
                acc = sum(a * b * v for a, b, v in pix)
                q = abs(acc) >> 20
                v = q if acc >= 0 else -q
            else:
                acc = 0.0
                for k, (a, b, v) in enumerate(pix):
                    t = f32(f32(b * a) * v)
                    acc = t if k == 0 else f32(acc + t)
                v = math.trunc(acc)
            row.append(min(max(v, lo), hi))
        out.append(row)
    return out
