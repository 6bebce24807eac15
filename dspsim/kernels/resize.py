"""TFLite RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR on codes (NHWC), as each engine computes them.

* Nearest neighbour, reference (LiteRT BUILTIN_REF, TFLM; ``internal/reference/resize_nearest_neighbor.h``):
  the source index is ``floor((i + offset) * scale)`` (``round`` half away from zero with
  align_corners) in float32, ``scale = in / out`` (``(in - 1) / (out - 1)`` with align_corners),
  ``offset = 0.5`` with half_pixel_centers, clamped to ``[0, in - 1]``.
* Nearest neighbour, LiteRT's optimized kernel (the default interpreter; XNNPACK does not take the
  op): without align_corners and half_pixel_centers, 16.16 fixed point:
  ``min((i * ((in << 16) // out + 1)) >> 16, in - 1)`` (``optimized_ops.h``); else the reference.
* Bilinear, reference (LiteRT BUILTIN_REF and TFLM, int8 and int16: ``ResizeBilinearInteger``): 10
  fractional bits. ``scale_10 = (1024 * in + out / 2) / out``; source position ``i * scale_10``
  (``+ scale_10 / 2 - 512`` with half_pixel_centers), ``lower = max(pos / 1024, 0)``, ``upper =
  min((pos + 1023) / 1024, in - 1)`` (C division, truncating); the four taps weighted by
  ``1024 - frac`` and ``frac`` per axis sum to a 20-bit product, rounded half away from zero
  (``(v +- 2^19) / 2^20``) or, with ``TFLITE_SINGLE_ROUNDING``, half up (``(v + 2^19) >> 20``).
* Bilinear, XNNPACK (LiteRT's default interpreter delegates it; ``s8-ibilinear``, weights from
  ``xnn_indirection_init_resize_bilinear2d_hwc_q11``): float32 source positions clamped to the
  input, 11-bit weights ``lrintf(alpha * 2048)`` (ties to even), then ``top = (tl << 11) + (tr - tl) *
  ah``, likewise ``bottom``, ``acc = (top << 11) + (bottom - top) * av``, ``(acc + 2^21) >> 22``
  (ties up).

No output saturates: every result is a convex (or, for the reference's half-pixel border, an
extrapolation onto one tap) combination of input codes.
"""
from __future__ import annotations


import numpy as np
from numba import njit

from .._errors import check_flag, names_its_errors

_TYPES = (np.dtype(np.int8), np.dtype(np.int16))
_XNN_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))
_NN_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.float32))


def _spec_args(func, shape, dtype, size, align_corners, half_pixel_centers, allowed):
    """The checks of a resize's arguments from the input's shape and dtype: ``(shape, dtype, out_h, out_w,
    align_corners, half_pixel_centers)``."""
    dt = np.dtype(dtype)
    if dt not in allowed:
        raise TypeError(f"{func}: x must have dtype {' or '.join(d.name for d in allowed)}, got {dt}")
    shape = tuple(int(d) for d in shape)
    if len(shape) != 4 or 0 in shape:
        raise ValueError(f"{func}: x must be a non-empty NHWC array, got shape {shape}")
    s = np.asarray(size)
    if s.dtype.kind not in "iu" or s.shape != (2,) or (s <= 0).any():
        raise ValueError(f"{func}: size must be two positive ints (out_height, out_width), got {size!r}")
    n_out = shape[0] * int(s[0]) * int(s[1]) * shape[3]
    if n_out >= 1 << 31:
        raise ValueError(f"{func}: the output ({shape[0]}, {int(s[0])}, {int(s[1])}, {shape[3]}) has more than "
                         "2^31 - 1 elements (TFLite's int sizes)")
    align_corners = check_flag(align_corners, func, "align_corners")
    half_pixel_centers = check_flag(half_pixel_centers, func, "half_pixel_centers")
    if align_corners and half_pixel_centers:
        raise ValueError(f"{func}: if half_pixel_centers is True, align_corners must be False")
    return shape, dt, int(s[0]), int(s[1]), align_corners, half_pixel_centers


def _c_div(a, b):
    """C's integer division (truncates toward zero) of the int64 array ``a`` by ``b > 0``."""
    q = np.abs(a) // b
    return np.where(a >= 0, q, -q)


# --------------------------------------------------------------------------------------------
# nearest neighbour
# --------------------------------------------------------------------------------------------
def nearest_source_indices(in_size, out_size, align_corners, half_pixel_centers):
    """``GetNearestNeighbor`` of ``internal/reference/resize_nearest_neighbor.h`` in float32, for every
    output index ``0 .. out_size - 1`` at once (numpy float32 operations: the same roundings)."""
    f = np.float32
    scale = (f(in_size - 1) / f(out_size - 1)) if align_corners and out_size > 1 else f(in_size) / f(out_size)
    v = (np.arange(out_size).astype(f) + f(0.5 if half_pixel_centers else 0.0)) * f(scale)
    if align_corners:  # TfLiteRound: half away from zero (v >= 0; |v| + 0.5 is exact in double)
        src = np.floor(v.astype(np.float64) + 0.5).astype(np.int64)
    else:
        src = np.floor(v).astype(np.int64)
    src = np.minimum(src, in_size - 1)
    return np.maximum(src, 0) if half_pixel_centers else src


def _fixed_16_16_indices(in_size, out_size):
    """LiteRT's optimized 8-bit rule ``min((i * ((in << 16) // out + 1)) >> 16, in - 1)`` for every output
    index, exact in int64: the scale split into its integer and 16-bit fraction parts."""
    scale = (in_size << 16) // out_size + 1
    i = np.arange(out_size, dtype=np.int64)
    return np.minimum(i * (scale >> 16) + ((i * (scale & 0xFFFF)) >> 16), in_size - 1)


def _nearest_plan(func, shape, dtype, size, align_corners, half_pixel_centers, indices):
    """The lean ``run(x)`` of a nearest-neighbour resize whose source indices along an axis are ``indices(in_size,
    out_size)``: one fancy index through the precomputed rows and columns (no per-element map)."""
    shape, _, oh, ow, _, _ = _spec_args(func, shape, dtype, size, align_corners, half_pixel_centers, _NN_TYPES)
    _, h, w, _ = shape
    ys = indices(h, oh).astype(np.intp)[:, None]
    xs = indices(w, ow).astype(np.intp)[None, :]
    return lambda x: x[:, ys, xs]


def resize_nearest_neighbor_plan(shape, dtype, size, *, align_corners=False, half_pixel_centers=False):
    """:func:`resize_nearest_neighbor` prepared for inputs of ``shape`` and ``dtype`` (the source indices
    computed once); returns the lean ``run(x)``."""
    func = "resize_nearest_neighbor"
    align_corners = check_flag(align_corners, func, "align_corners")
    half_pixel_centers = check_flag(half_pixel_centers, func, "half_pixel_centers")
    return _nearest_plan(func, shape, dtype, size, align_corners, half_pixel_centers,
                         lambda n, m: nearest_source_indices(n, m, align_corners, half_pixel_centers))


def optimized_resize_nearest_neighbor_plan(shape, dtype, size, *, align_corners=False, half_pixel_centers=False):
    """:func:`optimized_resize_nearest_neighbor` prepared for inputs of ``shape`` and ``dtype``; returns the
    lean ``run(x)``."""
    func = "optimized_resize_nearest_neighbor"
    align_corners = check_flag(align_corners, func, "align_corners")
    half_pixel_centers = check_flag(half_pixel_centers, func, "half_pixel_centers")
    if align_corners or half_pixel_centers or np.dtype(dtype).itemsize != 1:
        return resize_nearest_neighbor_plan(shape, dtype, size, align_corners=align_corners,
                                            half_pixel_centers=half_pixel_centers)
    return _nearest_plan(func, shape, dtype, size, False, False, _fixed_16_16_indices)


@names_its_errors
def resize_nearest_neighbor(x, size, *, align_corners=False, half_pixel_centers=False):
    """TFLite RESIZE_NEAREST_NEIGHBOR, reference kernel (LiteRT BUILTIN_REF and TFLM): output pixel
    ``(y, x)`` copies input pixel ``(nearest_source_index(y), nearest_source_index(x))`` (float32
    index arithmetic; with align_corners the position is rounded half away from zero, else floored).

    Parameters
    ----------
    x : int8, uint8, int16, int32 or float32 array (N, H, W, C)
    size : two positive ints (out_height, out_width)
    align_corners, half_pixel_centers : bool (not both)
    """
    a = np.asarray(x)
    return resize_nearest_neighbor_plan(a.shape, a.dtype, size, align_corners=align_corners,
                                        half_pixel_centers=half_pixel_centers)(a)


@names_its_errors
def optimized_resize_nearest_neighbor(x, size, *, align_corners=False, half_pixel_centers=False):
    """TFLite RESIZE_NEAREST_NEIGHBOR, LiteRT's optimized kernel (the default interpreter) for 8-bit
    codes: without align_corners and half_pixel_centers the source index is
    ``min((i * ((in << 16) // out + 1)) >> 16, in - 1)`` (16.16 fixed point, scale rounded up by one
    unit); with either flag, the reference rule of :func:`resize_nearest_neighbor`. Other dtypes
    always take the reference rule."""
    a = np.asarray(x)
    return optimized_resize_nearest_neighbor_plan(a.shape, a.dtype, size, align_corners=align_corners,
                                                  half_pixel_centers=half_pixel_centers)(a)


# --------------------------------------------------------------------------------------------
# bilinear
# --------------------------------------------------------------------------------------------
def _integer_axis(in_size, out_size, align_corners, half_pixel_centers):
    """(position_10, lower, upper) per output index: ``ComputeInterpolationValuesInteger``."""
    if align_corners and out_size > 1:
        scale_10 = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale_10 = ((1 << 10) * in_size + out_size // 2) // out_size
    i = np.arange(out_size, dtype=np.int64)
    pos = i * scale_10 + scale_10 // 2 - (1 << 9) if half_pixel_centers else i * scale_10
    return (pos, np.maximum(_c_div(pos, 1 << 10), 0), np.minimum(_c_div(pos + (1 << 10) - 1, 1 << 10), in_size - 1))


@njit(cache=True)
def _bilinear_integer(x, py, y0, y1, px, x0, x1, single_rounding, out):
    n_b, _, _, depth = x.shape
    one = np.int64(1 << 10)
    for b in range(n_b):
        for oy in range(py.size):
            fy = py[oy] - one * y0[oy]
            for ox in range(px.size):
                fx = px[ox] - one * x0[ox]
                for c in range(depth):
                    v = (np.int64(x[b, y0[oy], x0[ox], c]) * (one - fy) * (one - fx)
                         + np.int64(x[b, y1[oy], x0[ox], c]) * fy * (one - fx)
                         + np.int64(x[b, y0[oy], x1[ox], c]) * (one - fy) * fx
                         + np.int64(x[b, y1[oy], x1[ox], c]) * fy * fx)
                    if single_rounding:
                        out[b, oy, ox, c] = (v + (1 << 19)) >> 20
                    elif v > 0:
                        out[b, oy, ox, c] = (v + (1 << 19)) >> 20
                    else:
                        out[b, oy, ox, c] = -((-v + (1 << 19)) >> 20)


@names_its_errors
def resize_bilinear(x, size, *, align_corners=False, half_pixel_centers=False, rounding="double"):
    """TFLite RESIZE_BILINEAR, reference integer kernel (LiteRT BUILTIN_REF and TFLM, int8 and int16):
    ``ResizeBilinearInteger``, 10 fractional bits per axis (see the module docstring).

    Rounding of the 20-bit weighted sum: ``"double"`` (the default build) rounds half away from zero,
    ``"single"`` (``TFLITE_SINGLE_ROUNDING``) half up. Never saturates.

    Parameters
    ----------
    x : int8 or int16 array (N, H, W, C)
    size : two positive ints (out_height, out_width)
    align_corners, half_pixel_centers : bool (not both)
    rounding : "double" | "single"
    """
    a = np.asarray(x)
    return resize_bilinear_plan(a.shape, a.dtype, size, align_corners=align_corners,
                                half_pixel_centers=half_pixel_centers, rounding=rounding)(a)


def resize_bilinear_plan(shape, dtype, size, *, align_corners=False, half_pixel_centers=False, rounding="double"):
    """:func:`resize_bilinear` prepared for inputs of ``shape`` and ``dtype`` (positions and weights per
    axis computed once); returns the lean ``run(x)``."""
    func = "resize_bilinear"
    if not isinstance(rounding, str) or rounding not in ("double", "single"):
        raise ValueError(f"{func}: rounding must be 'double' or 'single', got {rounding!r}")
    shape, dt, oh, ow, align_corners, half_pixel_centers = _spec_args(func, shape, dtype, size, align_corners,
                                                                      half_pixel_centers, _TYPES)
    ay = _integer_axis(shape[1], oh, align_corners, half_pixel_centers)
    ax = _integer_axis(shape[2], ow, align_corners, half_pixel_centers)
    single, out_shape = rounding == "single", (shape[0], oh, ow, shape[3])

    def run(x):
        out = np.empty(out_shape, dt)
        _bilinear_integer(np.ascontiguousarray(x), *ay, *ax, single, out)
        return out

    return run


def _float_axis(in_size, out_size, align_corners, half_pixel_centers):
    """(lower, upper, d) per output index, float32 as LiteRT's ``ComputeInterpolationValues``: ``scale = f32(in /
    out)`` (``(in - 1) / (out - 1)`` with align_corners), ``v = i * scale`` (``(i + 0.5) * scale - 0.5`` with
    half_pixel_centers), ``lower = max(floor(v), 0)``, ``upper = min(ceil(v), in - 1)``, ``d = f32(v - lower)``."""
    f = np.float32
    num, den = (in_size - 1, out_size - 1) if align_corners and out_size > 1 else (in_size, out_size)
    scale = f(f(num) / f(den))
    i = np.arange(out_size).astype(f)
    v = ((i + f(0.5)) * scale - f(0.5)).astype(f) if half_pixel_centers else (i * scale).astype(f)
    lower = np.maximum(np.floor(v).astype(np.int64), 0)
    upper = np.minimum(np.ceil(v).astype(np.int64), in_size - 1)
    return lower, upper, (v - lower.astype(f)).astype(f)


def _eighths_axis(in_size):
    """(position_10, lower, upper) of ``ResizeBilinear888Uint8``'s 8 outputs per input (half-pixel centers): the
    position ``(2 o - 7) / 16`` clamped to ``[0, in - 1]``, in the 10-bit units of :func:`_bilinear_integer` (whose
    ``(v + 2^19) >> 20`` is then the kernel's ``(v_8.8 + 128) >> 8``)."""
    pos16 = np.clip(2 * np.arange(8 * in_size, dtype=np.int64) - 7, 0, 16 * (in_size - 1))
    lower = pos16 // 16
    return pos16 * 64, lower, np.minimum(lower + 1, in_size - 1)


@njit(cache=True)
def _bilinear_float(x, y0, y1, dy, x0, x1, dx, premultiplied, out):
    n_b, _, _, depth = x.shape
    one, half = np.float32(1.0), np.float32(0.5)
    for b in range(n_b):
        for oy in range(y0.size):
            fy, gy = dy[oy], np.float32(one - dy[oy])
            for ox in range(x0.size):
                fx, gx = dx[ox], np.float32(one - dx[ox])
                w00, w01 = np.float32(gy * gx), np.float32(gy * fx)
                w10, w11 = np.float32(fy * gx), np.float32(fy * fx)
                for c in range(depth):
                    v00 = np.float32(x[b, y0[oy], x0[ox], c])
                    v01 = np.float32(x[b, y0[oy], x1[ox], c])
                    v10 = np.float32(x[b, y1[oy], x0[ox], c])
                    v11 = np.float32(x[b, y1[oy], x1[ox], c])
                    if premultiplied:  # ResizeBilinearGenericSmallChannel: the four weights, then in tap order
                        acc = np.float32(v00 * w00)
                        acc = np.float32(acc + np.float32(v01 * w01))
                        acc = np.float32(acc + np.float32(v10 * w10))
                        acc = np.float32(acc + np.float32(v11 * w11))
                    else:  # reference_ops::ResizeBilinear<T>: each term (v * wy) * wx, then summed
                        acc = np.float32(np.float32(v00 * gy) * gx)
                        acc = np.float32(acc + np.float32(np.float32(v10 * fy) * gx))
                        acc = np.float32(acc + np.float32(np.float32(v01 * gy) * fx))
                        acc = np.float32(acc + np.float32(np.float32(v11 * fy) * fx))
                    out[b, oy, ox, c] = np.int64(np.float32(acc + half)) & 0xFF  # static_cast<uint8_t>: cvttss2si


@names_its_errors
def float_resize_bilinear(x, size, *, align_corners=False, half_pixel_centers=False, premultiplied=False):
    """TFLite RESIZE_BILINEAR on uint8 codes as LiteRT computes it, in float32 (no integer kernel: LiteRT runs its
    float template on uint8).

    ``premultiplied=False``: ``reference_ops::ResizeBilinear<uint8_t>`` (BUILTIN_REF): per tap ``f32(f32(v * wy) *
    wx)``, the taps (y0 x0, y1 x0, y0 x1, y1 x1) summed in order. ``premultiplied=True``:
    ``optimized_ops::ResizeBilinear`` (uint8; ``ResizeBilinearGenericSmallChannel``): the weights ``f32(wy * wx)``
    first, the taps (y0 x0, y0 x1, y1 x0, y1 x1) summed in order. Both add 0.5 and truncate; positions from
    ``ComputeInterpolationValues`` (float32). Except, in the optimized kernel, an exact 8x upsampling with
    half_pixel_centers of a multiple of 8 channels (both outputs >= 8): ``ResizeBilinear888Uint8`` accumulates in
    8.8 fixed point, exactly: source positions ``(2 o - 7) / 16`` clamped to ``[0, in - 1]``, the bilinear value in
    1/256 rounded half up (``(v + 128) >> 8``).

    Parameters
    ----------
    x : uint8 array (N, H, W, C)
    size : two positive ints (out_height, out_width)
    align_corners, half_pixel_centers : bool (not both)
    premultiplied : bool
    """
    a = np.asarray(x)
    return float_resize_bilinear_plan(a.shape, a.dtype, size, align_corners=align_corners,
                                      half_pixel_centers=half_pixel_centers, premultiplied=premultiplied)(a)


def float_resize_bilinear_plan(shape, dtype, size, *, align_corners=False, half_pixel_centers=False,
                               premultiplied=False):
    """:func:`float_resize_bilinear` prepared for inputs of ``shape`` and ``dtype``; returns the lean ``run(x)``."""
    func = "float_resize_bilinear"
    premultiplied = check_flag(premultiplied, func, "premultiplied")
    shape, dt, oh, ow, align_corners, half_pixel_centers = _spec_args(
        func, shape, dtype, size, align_corners, half_pixel_centers, (np.dtype(np.uint8),))
    out_shape = (shape[0], oh, ow, shape[3])
    if premultiplied and half_pixel_centers and shape[3] % 8 == 0 and oh >= 8 and ow >= 8 and oh // shape[1] == 8 \
            and shape[1] * 8 == oh and shape[2] * 8 == ow:  # ResizeBilinear888Uint8
        ey, ex = _eighths_axis(shape[1]), _eighths_axis(shape[2])

        def run_888(x):
            out = np.empty(out_shape, dt)
            _bilinear_integer(np.ascontiguousarray(x), *ey, *ex, True, out)
            return out

        return run_888
    ay = _float_axis(shape[1], oh, align_corners, half_pixel_centers)
    ax = _float_axis(shape[2], ow, align_corners, half_pixel_centers)

    def run(x):
        out = np.empty(out_shape, dt)
        _bilinear_float(np.ascontiguousarray(x), *ay, *ax, premultiplied, out)
        return out

    return run


def _xnnpack_axis(in_size, out_size, align_corners, half_pixel_centers):
    """(lower, upper, 11-bit weight) per output index: ``xnn_indirection_init_resize_bilinear2d_hwc_q11``."""
    f = np.float32
    adj = 1 if align_corners and out_size != 1 else 0
    scale = f(f(in_size - adj) / f(out_size - adj))
    top_max = f(in_size - 1)
    offset = f(f(f(0.5) * scale) - f(0.5))
    p = np.arange(out_size).astype(f) * scale  # float32 operations throughout: the same roundings
    if not align_corners and half_pixel_centers:
        p = np.maximum(p + offset, f(0.0))
    p = np.minimum(p, top_max)
    t = p.astype(np.int64)  # p >= 0: truncation is the C cast
    w = np.rint((p - t.astype(f)) * f(2048.0)).astype(np.int64)  # lrintf: ties to even
    return t, np.minimum(t + 1, in_size - 1), w


@njit(cache=True)
def _bilinear_xnnpack(x, y0, y1, wy, x0, x1, wx, out):
    n_b, _, _, depth = x.shape
    for b in range(n_b):
        for oy in range(y0.size):
            av = wy[oy]
            for ox in range(x0.size):
                ah = wx[ox]
                for c in range(depth):
                    tl = np.int64(x[b, y0[oy], x0[ox], c])
                    tr = np.int64(x[b, y0[oy], x1[ox], c])
                    bl = np.int64(x[b, y1[oy], x0[ox], c])
                    br = np.int64(x[b, y1[oy], x1[ox], c])
                    top = (tl << 11) + (tr - tl) * ah
                    bottom = (bl << 11) + (br - bl) * ah
                    acc = (top << 11) + (bottom - top) * av
                    out[b, oy, ox, c] = (acc + (1 << 21)) >> 22


@names_its_errors
def xnnpack_resize_bilinear(x, size, *, align_corners=False, half_pixel_centers=False):
    """TFLite RESIZE_BILINEAR as LiteRT's XNNPACK delegate computes it (``s8-ibilinear`` /
    ``u8-ibilinear``): float32 source positions clamped to the input, 11-bit weights rounded ties to
    even, two interpolation steps in int32 and ``(acc + 2^21) >> 22`` (ties toward +inf). Neither
    flag set is TensorFlow's legacy mode (position ``i * in / out``, no half-pixel offset).

    Parameters
    ----------
    x : int8 or uint8 array (N, H, W, C)
    size : two positive ints (out_height, out_width)
    align_corners, half_pixel_centers : bool (not both)
    """
    a = np.asarray(x)
    return xnnpack_resize_bilinear_plan(a.shape, a.dtype, size, align_corners=align_corners,
                                        half_pixel_centers=half_pixel_centers)(a)


def xnnpack_resize_bilinear_plan(shape, dtype, size, *, align_corners=False, half_pixel_centers=False):
    """:func:`xnnpack_resize_bilinear` prepared for inputs of ``shape`` and ``dtype``; returns the lean
    ``run(x)``."""
    shape, dt, oh, ow, align_corners, half_pixel_centers = _spec_args(
        "xnnpack_resize_bilinear", shape, dtype, size, align_corners, half_pixel_centers, _XNN_TYPES)
    ay = _xnnpack_axis(shape[1], oh, align_corners, half_pixel_centers)
    ax = _xnnpack_axis(shape[2], ow, align_corners, half_pixel_centers)
    out_shape = (shape[0], oh, ow, shape[3])

    def run(x):
        out = np.empty(out_shape, dt)
        _bilinear_xnnpack(np.ascontiguousarray(x), *ay, *ax, out)
        return out

    return run
