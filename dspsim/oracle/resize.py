"""The oracle of the resize family: RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR (reference, optimized, XNNPACK).

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

import math
from fractions import Fraction

from .data_movement import _from_lists, _multi_indices
from .fixedpoint import _np, _trunc_div, f32, round_fraction


def _nearest_index_oracle(i, n, m, align_corners, half_pixel_centers):
    """Reference GetNearestNeighbor with every float32 step through ``f32``."""
    scale = f32(Fraction(n - 1) / f32(m - 1)) if align_corners and m > 1 else f32(Fraction(n) / m)
    v = f32((i + (Fraction(1, 2) if half_pixel_centers else 0)) * scale)
    src = math.floor(v + Fraction(1, 2)) if align_corners else math.floor(v)  # v >= 0: away from zero
    src = min(src, n - 1)
    return max(src, 0) if half_pixel_centers else src


def _gather_pixels(x, ys, xs):
    np = _np()
    n, _, _, c = np.shape(x)
    out_shape = [n, len(ys), len(xs), c]
    values = [x[b, ys[oy], xs[ox], ch].item() for b, oy, ox, ch in _multi_indices(out_shape)]
    return _from_lists(values, out_shape, x.dtype)


def resize_nearest_neighbor_oracle(x, size, *, align_corners=False, half_pixel_centers=False):
    oh, ow = (int(v) for v in size)
    ys = [_nearest_index_oracle(i, x.shape[1], oh, align_corners, half_pixel_centers) for i in range(oh)]
    xs = [_nearest_index_oracle(i, x.shape[2], ow, align_corners, half_pixel_centers) for i in range(ow)]
    return _gather_pixels(x, ys, xs)


def optimized_resize_nearest_neighbor_oracle(x, size, *, align_corners=False, half_pixel_centers=False):
    """16.16 fixed point: the scale ``floor(in * 2^16 / out) + 1``, the index ``floor(i * scale / 2^16)``."""
    if align_corners or half_pixel_centers or x.dtype.itemsize != 1:
        return resize_nearest_neighbor_oracle(x, size, align_corners=align_corners,
                                              half_pixel_centers=half_pixel_centers)
    oh, ow = (int(v) for v in size)
    ys = [min(math.floor(i * (math.floor(Fraction(x.shape[1] * 65536, oh)) + 1) / Fraction(65536)), x.shape[1] - 1)
          for i in range(oh)]
    xs = [min(math.floor(i * (math.floor(Fraction(x.shape[2] * 65536, ow)) + 1) / Fraction(65536)), x.shape[2] - 1)
          for i in range(ow)]
    return _gather_pixels(x, ys, xs)


def _bilinear_taps_reference(i, n, m, align_corners, half_pixel_centers):
    """(lower, upper, weight of upper in 1/1024) of ComputeInterpolationValuesInteger."""
    num, den = (n - 1, m - 1) if align_corners and m > 1 else (n, m)
    scale = _trunc_div(1024 * num + _trunc_div(den, 2), den)
    pos = i * scale + (scale // 2 - 512 if half_pixel_centers else 0)
    lo = max(_trunc_div(pos, 1024), 0)
    hi = min(_trunc_div(pos + 1023, 1024), n - 1)
    return lo, hi, pos - 1024 * lo


def resize_bilinear_oracle(x, size, *, align_corners=False, half_pixel_centers=False, rounding="double"):
    oh, ow = (int(v) for v in size)
    n, h, w, c = x.shape
    ty = [_bilinear_taps_reference(i, h, oh, align_corners, half_pixel_centers) for i in range(oh)]
    tx = [_bilinear_taps_reference(i, w, ow, align_corners, half_pixel_centers) for i in range(ow)]
    values = []
    for b, oy, ox, ch in _multi_indices([n, oh, ow, c]):
        y0, y1, fy = ty[oy]
        x0, x1, fx = tx[ox]
        v = (int(x[b, y0, x0, ch]) * (1024 - fy) * (1024 - fx) + int(x[b, y1, x0, ch]) * fy * (1024 - fx)
             + int(x[b, y0, x1, ch]) * (1024 - fy) * fx + int(x[b, y1, x1, ch]) * fy * fx)
        values.append(round_fraction(Fraction(v, 1 << 20), "half_up" if rounding == "single" else "half_away_from_zero"))
    return _from_lists(values, [n, oh, ow, c], x.dtype)


def _bilinear_taps_xnnpack(i, n, m, align_corners, half_pixel_centers):
    """(top, bottom, 11-bit weight) of xnn_indirection_init_resize_bilinear2d_hwc_q11, float32 via f32."""
    adj = 1 if align_corners and m != 1 else 0
    scale = f32(Fraction(n - adj) / (m - adj))
    if align_corners or not half_pixel_centers:
        p = min(f32(i * scale), Fraction(n - 1))
    else:
        offset = f32(scale / 2 - Fraction(1, 2))
        p = min(max(f32(f32(i * scale) + offset), Fraction(0)), Fraction(n - 1))
    top = math.floor(p)
    return top, min(top + 1, n - 1), round_fraction((p - top) * 2048, "half_to_even")


def xnnpack_resize_bilinear_oracle(x, size, *, align_corners=False, half_pixel_centers=False):
    oh, ow = (int(v) for v in size)
    n, h, w, c = x.shape
    ty = [_bilinear_taps_xnnpack(i, h, oh, align_corners, half_pixel_centers) for i in range(oh)]
    tx = [_bilinear_taps_xnnpack(i, w, ow, align_corners, half_pixel_centers) for i in range(ow)]
    values = []
    for b, oy, ox, ch in _multi_indices([n, oh, ow, c]):
        y0, y1, av = ty[oy]
        x0, x1, ah = tx[ox]
        tl, tr, bl, br = (int(x[b, yy, xx, ch]) for yy, xx in ((y0, x0), (y0, x1), (y1, x0), (y1, x1)))
        top = tl * 2048 + (tr - tl) * ah
        bottom = bl * 2048 + (br - bl) * ah
        values.append(math.floor(Fraction(top * 2048 + (bottom - top) * av + (1 << 21), 1 << 22)))
    return _from_lists(values, [n, oh, ow, c], x.dtype)


def _float_taps(i, n, m, align_corners, half_pixel_centers):
    """(lower, upper, d) of LiteRT's float ComputeInterpolationValues, every step an exact f32 rounding."""
    num, den = (n - 1, m - 1) if align_corners and m > 1 else (n, m)
    scale = f32(Fraction(num) / den)
    v = f32(f32((i + Fraction(1, 2)) * scale) - Fraction(1, 2)) if half_pixel_centers else f32(i * scale)
    lo, hi = max(math.floor(v), 0), min(math.ceil(v), n - 1)
    return lo, hi, f32(v - lo)


def _resize_888_oracle(x):
    """ResizeBilinear888Uint8: the exact bilinear value at ``(o + 1/2) / 8 - 1/2`` (clamped to the input), rounded
    half up."""
    n, h, w, c = x.shape

    def taps(o, size):
        p = min(max(Fraction(2 * o + 1, 16) - Fraction(1, 2), 0), size - 1)
        lo = math.floor(p)
        return lo, min(lo + 1, size - 1), p - lo

    values = []
    for b, oy, ox, ch in _multi_indices([n, 8 * h, 8 * w, c]):
        y0, y1, fy = taps(oy, h)
        x0, x1, fx = taps(ox, w)
        v = (int(x[b, y0, x0, ch]) * (1 - fy) * (1 - fx) + int(x[b, y0, x1, ch]) * (1 - fy) * fx
             + int(x[b, y1, x0, ch]) * fy * (1 - fx) + int(x[b, y1, x1, ch]) * fy * fx)
        values.append(math.floor(v + Fraction(1, 2)))
    return _from_lists(values, [n, 8 * h, 8 * w, c], x.dtype)


def float_resize_bilinear_oracle(x, size, *, align_corners=False, half_pixel_centers=False, premultiplied=False):
    """LiteRT's uint8 RESIZE_BILINEAR in float32: the reference's ``(v * wy) * wx`` per tap, or the optimized
    kernel's premultiplied weights, summed in each kernel's tap order, ``+ 0.5`` and truncated."""
    oh, ow = (int(v) for v in size)
    n, h, w, c = x.shape
    if premultiplied and half_pixel_centers and c % 8 == 0 and min(oh, ow) >= 8 and (oh, ow) == (8 * h, 8 * w):
        return _resize_888_oracle(x)
    ty = [_float_taps(i, h, oh, align_corners, half_pixel_centers) for i in range(oh)]
    tx = [_float_taps(i, w, ow, align_corners, half_pixel_centers) for i in range(ow)]
    values = []
    for b, oy, ox, ch in _multi_indices([n, oh, ow, c]):
        y0, y1, fy = ty[oy]
        x0, x1, fx = tx[ox]
        gy, gx = f32(1 - fy), f32(1 - fx)
        v00, v01, v10, v11 = (int(x[b, yy, xx, ch]) for yy, xx in ((y0, x0), (y0, x1), (y1, x0), (y1, x1)))
        if premultiplied:
            terms = [f32(v00 * f32(gy * gx)), f32(v01 * f32(gy * fx)), f32(v10 * f32(fy * gx)), f32(v11 * f32(fy * fx))]
        else:
            terms = [f32(f32(v00 * gy) * gx), f32(f32(v10 * fy) * gx), f32(f32(v01 * gy) * fx), f32(f32(v11 * fy) * fx)]
        acc = terms[0]
        for t in terms[1:]:
            acc = f32(acc + t)
        values.append(int(f32(acc + Fraction(1, 2))) & 0xFF)
    return _from_lists(values, [n, oh, ow, c], x.dtype)


# --- ONNX Runtime's 8-bit bilinear Resize (UpsampleBilinear, NhwcUpsampleBilinearInteger) ---
def _f32(v: float) -> float:
    """``v`` rounded to float32 (one IEEE rounding: a double result of one float32 op rounds exactly)."""
    import struct

    return struct.unpack("<f", struct.pack("<f", v))[0]


def ort_source_coordinate(x: int, scale: float, n_out: int, n_in: int, transform: str) -> float:
    """ORT's GetOriginalCoordinateFromResizedCoordinate in float32, for one output index."""
    if scale == 1:
        return float(x)
    if transform == "asymmetric":
        return _f32(x / scale)
    if transform == "align_corners":
        return 0.0 if n_out == 1 else _f32(_f32(x * (n_in - 1)) / (n_out - 1))
    if transform == "pytorch_half_pixel" and n_out <= 1:
        return 0.0
    return _f32(_f32(_f32(x + 0.5) / scale) - 0.5)


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
            c10 = int(_f32(c * 1024))
            d1, d2 = (512, 512) if i1 == i2 else (abs(c10 - i1 * 1024), abs(c10 - i2 * 1024))
        else:
            d1, d2 = (0.5, 0.5) if i1 == i2 else (_f32(abs(c - i1)), _f32(abs(c - i2)))
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
                    t = _f32(_f32(b * a) * v)
                    acc = t if k == 0 else _f32(acc + t)
                v = math.trunc(acc)
            row.append(min(max(v, lo), hi))
        out.append(row)
    return out
