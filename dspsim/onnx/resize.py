"""ONNX Resize (modes "nearest" and "linear") as ONNX Runtime's CPU kernel and the onnx reference
evaluator compute it.

ONNX Runtime (onnxruntime/core/providers/cpu/tensor/upsample.{h,cc}, upsamplebase.h):

* source coordinates in float32 (``GetOriginalCoordinateFromResizedCoordinate``), an axis whose
  scale is exactly 1 maps ``i -> i`` untransformed;
* nearest: ``GetNearestPixelFromOriginal`` per axis, clamped to the input (a pure gather);
* linear (``UpsampleBilinear``, 2-D or 4-D with two unit scales): per output pixel the four
  float32 weights ``dx2*dy2, dx1*dy2, dx2*dy1, dx1*dy1`` and the sum ``((w11*X11 + w21*X21) + w12*X12)
  + w22*X22`` in float32, left to right (the same on float data in NCHW and NHWC). 8-bit data: that
  float sum truncated toward zero (``static_cast<T>``) when the tensor is NCHW; when ORT's layout
  transformer made it NHWC (``NhwcUpsampleBilinearInteger``) the weights are 10-bit integers
  ``trunc(coordinate * 1024)`` and the output ``(sum of w * X) / 2^20`` truncated toward zero. The
  two 8-bit paths differ on some codes (docs/engines.md "ONNX Resize");
* output shape ``trunc(float32(scale) * float32(dim))``; with ``sizes`` the scales are
  ``float32(out) / float32(in)``.

onnx reference (onnx/reference/ops/op_resize.py): separable, one axis at a time in float64
(coordinates, the weights ``(1 - ratio, ratio)`` or the nearest mode's 0/1 weights, ``a*w0 + b*w1``),
then one ``saturate_cast`` to the input type (integers: round half to even and clip; float32: clip
to +-FLT_MAX, so an infinite result becomes the largest finite float).

Supported: coordinate_transformation_mode half_pixel, asymmetric, align_corners,
pytorch_half_pixel; every nearest_mode; ``axes``; keep_aspect_ratio_policy "stretch"; antialias 0.
Refused (ValueError naming the node): cubic, tf_crop_and_resize, tf_half_pixel_for_nn,
half_pixel_symmetric, other aspect policies, antialias, Resize-10.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import math

import numpy as np

_F32 = np.float32


class ResizeMode(Enum):
    """How an output element is computed from its source coordinate."""

    NEAREST = "nearest"  # the input element nearest_mode picks
    LINEAR = "linear"    # (bi)linear interpolation of the two (four) neighbours


class CoordinateTransform(Enum):
    """``x_out -> x_in`` (ONNX coordinate_transformation_mode)."""

    HALF_PIXEL = "half_pixel"                  # (x + 0.5) / scale - 0.5
    ASYMMETRIC = "asymmetric"                  # x / scale
    ALIGN_CORNERS = "align_corners"            # x * (in - 1) / (out - 1); 0 when out == 1
    PYTORCH_HALF_PIXEL = "pytorch_half_pixel"  # half_pixel; when out == 1: 0 (ORT) / -0.5 (ONNX)


class NearestMode(Enum):
    """Which input index a fractional source coordinate picks in mode "nearest"."""

    ROUND_PREFER_FLOOR = "round_prefer_floor"  # nearest, ties down
    ROUND_PREFER_CEIL = "round_prefer_ceil"    # nearest, ties up
    FLOOR = "floor"
    CEIL = "ceil"


@dataclass(frozen=True)
class ResizeSpec:
    """A Resize node's attributes, validated."""

    mode: ResizeMode
    transform: CoordinateTransform
    nearest: NearestMode
    axes: tuple | None


def _text(v):
    return v.decode(errors="replace") if isinstance(v, bytes) else v  # not UTF-8: no mode's name, refused below


def resize_spec(attributes: dict, opset: int, fail) -> ResizeSpec:
    """Validate a Resize node's attributes (``fail(msg)`` builds the ValueError naming the node)."""
    if opset < 11:
        raise fail("Resize-10 (no coordinate_transformation_mode) is not supported; opset 11 or later is")
    mode = _text(attributes.get("mode", "nearest"))
    transform = _text(attributes.get("coordinate_transformation_mode", "half_pixel"))
    nearest = _text(attributes.get("nearest_mode", "round_prefer_floor"))
    try:
        mode = ResizeMode(mode)
    except ValueError:
        raise fail(f"mode {mode!r} is not supported (supported: nearest, linear)") from None
    try:
        transform = CoordinateTransform(transform)
    except ValueError:
        raise fail(f"coordinate_transformation_mode {transform!r} is not supported (supported: "
                   f"{', '.join(t.value for t in CoordinateTransform)})") from None
    try:
        nearest = NearestMode(nearest)
    except ValueError:
        raise fail(f"nearest_mode {nearest!r} is not valid") from None
    if attributes.get("antialias", 0):
        raise fail("antialias=1 is not supported")
    if attributes.get("exclude_outside", 0):
        raise fail("exclude_outside=1 is only defined for mode cubic")
    policy = _text(attributes.get("keep_aspect_ratio_policy", "stretch"))
    if policy != "stretch":
        raise fail(f"keep_aspect_ratio_policy {policy!r} is not supported (only 'stretch')")
    axes = attributes.get("axes")
    return ResizeSpec(mode, transform, nearest, None if axes is None else tuple(int(a) for a in axes))


MAX_OUTPUT_ELEMENTS = 1 << 27
"""The largest Resize output dspsim makes (134 M elements, about 25 times a 513 x 513 x 21 segmentation map): a
``sizes`` or ``scales`` input asking for more is refused before anything is allocated."""


def output_geometry(spec: ResizeSpec, in_shape, scales, sizes, reference: bool, fail):
    """(output shape, per-axis scales) as ONNX Runtime, or the onnx reference evaluator (``reference``),
    derives them from ``scales`` or ``sizes``.

    ORT: float32 scales (from sizes ``float32(out) / float32(in)``), output ``trunc(scale * dim)`` in
    float32. onnx reference: float64 scales (from sizes ``out / in``), output ``int(scale * dim)`` in
    float64."""
    rank = len(in_shape)
    axes = list(range(rank)) if spec.axes is None else [a % rank if -rank <= a < rank else None for a in spec.axes]
    if None in axes or len(set(axes)) != len(axes):
        raise fail(f"axes {list(spec.axes)} are not distinct axes of a rank-{rank} input")
    have_scales = scales is not None and np.size(scales) > 0
    have_sizes = sizes is not None and np.size(sizes) > 0
    if have_scales == have_sizes:
        raise fail("exactly one of the inputs 'scales' and 'sizes' must be given")
    ref = reference
    full = [1.0] * rank
    out = list(in_shape)
    if have_scales:
        s = np.asarray(scales).reshape(-1)
        if s.size != len(axes) or s.dtype != np.float32 or not np.all(np.isfinite(s) & (s > 0)):
            raise fail(f"scales must be {len(axes)} positive finite float32 values, got {s.tolist()}")
        for a, v in zip(axes, s):
            full[a] = float(v) if ref else _F32(v)
            out[a] = int(float(v) * in_shape[a]) if ref else int(_F32(v) * _F32(in_shape[a]))
    else:
        z = np.asarray(sizes).reshape(-1)
        if z.size != len(axes) or z.dtype.kind not in "iu" or np.any(z <= 0):
            raise fail(f"sizes must be {len(axes)} positive integers, got {z.tolist()}")
        for a, v in zip(axes, z):
            out[a] = int(v)
            full[a] = int(v) / in_shape[a] if ref else _F32(_F32(int(v)) / _F32(in_shape[a]))
    n = math.prod(out)
    if n > MAX_OUTPUT_ELEMENTS:  # before any index table or output is allocated: memory bounded by real work
        raise fail(f"the output {tuple(out)} would hold {n} elements, more than the {MAX_OUTPUT_ELEMENTS} dspsim "
                   "allocates for one tensor")
    return tuple(out), full


# ------------------------------------------------------------------------------------------------
# ONNX Runtime
# ------------------------------------------------------------------------------------------------
def ort_source_coordinates(transform: CoordinateTransform, n_out: int, n_in: int, scale) -> np.ndarray:
    """ORT's float32 source coordinate of each output index 0..n_out-1 (``GetOriginalCoordinate...``)."""
    x = np.arange(n_out, dtype=_F32)
    s = _F32(scale)
    if transform is CoordinateTransform.ASYMMETRIC:
        return x / s
    if transform is CoordinateTransform.ALIGN_CORNERS:
        return np.zeros(n_out, _F32) if n_out == 1 else (x * _F32(n_in - 1)) / _F32(n_out - 1)
    if transform is CoordinateTransform.PYTORCH_HALF_PIXEL and n_out <= 1:
        return np.zeros(n_out, _F32)
    return (x + _F32(0.5)) / s - _F32(0.5)


def ort_nearest_index(coord: np.ndarray, nearest: NearestMode, n_in: int) -> np.ndarray:
    """``GetNearestPixelFromOriginal`` then the clamp to ``[0, n_in - 1]``. std::round rounds halves
    away from zero; round_prefer_floor takes the floor only where ``x == trunc(x) + 0.5`` (positive halves)."""
    c = coord.astype(np.float64)  # exact: every float32 is a float64
    away = np.where(c >= 0, np.floor(c + 0.5), np.ceil(c - 0.5))  # std::round
    if nearest is NearestMode.ROUND_PREFER_CEIL:
        idx = away
    elif nearest is NearestMode.FLOOR:
        idx = np.floor(c)
    elif nearest is NearestMode.CEIL:
        idx = np.ceil(c)
    else:
        idx = np.where(c == np.trunc(c) + 0.5, np.floor(c), away)
    return np.clip(idx, 0, n_in - 1).astype(np.int64)


def _ort_axis_map(spec, n_out, n_in, scale):
    if scale == 1:
        return np.arange(n_out, dtype=np.int64)
    coord = ort_source_coordinates(spec.transform, n_out, n_in, scale)
    return ort_nearest_index(coord, spec.nearest, n_in)


def ort_bilinear_weights(transform, n_out, n_in, scale):
    """(i1, i2, d1, d2) of one axis as ``SetupUpsampleBilinear``: the clamped float32 coordinate ``c``,
    ``i1 = trunc(c)``, ``i2 = min(i1 + 1, n_in - 1)``, ``d1 = |c - i1|`` (weight of i2),
    ``d2 = |c - i2|`` (weight of i1); 0.5 and 0.5 where i1 == i2."""
    if scale == 1:
        c = np.arange(n_out, dtype=_F32)
    else:
        c = np.clip(ort_source_coordinates(transform, n_out, n_in, scale), _F32(0), _F32(n_in - 1))
    i1 = np.minimum(c.astype(np.int64), n_in - 1)
    i2 = np.minimum(i1 + 1, n_in - 1)
    d1 = np.abs(c - i1.astype(_F32))
    d2 = np.abs(c - i2.astype(_F32))
    same = i1 == i2
    d1[same] = d2[same] = _F32(0.5)
    return i1, i2, d1, d2, c


def ort_bilinear_weights_integer(transform, n_out, n_in, scale):
    """(i1, i2, d1, d2) as ``SetupUpsampleBilinearInteger``: weights in units of 2^-10,
    ``d1 = trunc(c * 1024) - i1 * 1024``, ``d2 = 1024 - d1``; 512 and 512 where i1 == i2."""
    i1, i2, _, _, c = ort_bilinear_weights(transform, n_out, n_in, scale)
    c10 = (c * _F32(1024)).astype(np.int64)
    d1 = np.abs(c10 - i1 * 1024)
    d2 = np.abs(c10 - i2 * 1024)
    same = i1 == i2
    d1[same] = d2[same] = 512
    return i1, i2, d1, d2


def _bilinear_axes(ndim, scales, fail):
    """The (height, width) axes ORT's bilinear kernel interpolates, or a ValueError."""
    if ndim == 2:
        return 0, 1
    if ndim == 4 and scales[0] == 1 and scales[1] == 1:
        return 2, 3
    if ndim == 4 and scales[0] == 1 and scales[3] == 1:
        return 1, 2
    raise fail("ORT's linear Resize is emulated for 2-D inputs and 4-D inputs with unit scales on two outer "
               f"axes (NCHW or NHWC); got rank {ndim}, scales {list(map(float, scales))}")


def plan_onnxruntime(in_shape, dtype, spec: ResizeSpec, out_shape, scales, channels_last_integer=False,
                     fail=ValueError):
    """ORT's Resize from ``in_shape`` to ``out_shape`` as ``apply(x) -> y``: indices and weights made
    once here (ORT's Setup* functions), ``apply`` gathers and sums.

    8-bit 4-D linear Resize takes ``NhwcUpsampleBilinearInteger`` (10-bit weights, ``sum / 2^20``
    truncated toward zero) where ORT's kernel sees an NHWC tensor: scales ``[1, s, s, 1]``, or
    ``channels_last_integer`` (the graph's NCHW tensor made NHWC by ORT_ENABLE_ALL's layout
    transformer, :func:`.fusion._mark_channels_last_resize`). Other 8-bit data takes the float32
    weights and ``static_cast`` (truncation toward zero). ``x`` is given and returned in the graph's
    layout; the layout only selects the kernel. ``apply.tables`` holds what it precomputed, by name: a nearest
    Resize's source index per output position of each resized axis (``axis<a>_index``); a linear one's corner
    indices (``y1``, ``y2``, ``x1``, ``x2``) and weights (``dy1``, ``dy2``, ``dx1``, ``dx2``: float32, or the
    integer kernel's 10-bit fixed-point weights). The copy of an unresized input has none."""
    in_shape, out_shape = tuple(in_shape), tuple(out_shape)
    ndim = len(in_shape)
    if out_shape == in_shape:  # ORT copies the input
        return np.copy
    if spec.mode is ResizeMode.NEAREST:
        maps = [(a, _ort_axis_map(spec, out_shape[a], in_shape[a], scales[a])) for a in range(ndim)
                if out_shape[a] != in_shape[a] or scales[a] != 1]

        def nearest(x):
            for a, m in maps:
                x = np.take(x, m, axis=a)
            return np.ascontiguousarray(x)
        nearest.tables = {f"axis{a}_index": m for a, m in maps}
        return nearest
    ha, wa = _bilinear_axes(ndim, scales, fail)
    integer = np.dtype(dtype) in (np.uint8, np.int8)
    # ORT's kernel sees NHWC when its scales are [1, s, s, 1] here, or when its layout transformer
    # made the graph's NCHW tensor NHWC (channels_last_integer)
    nhwc_integer = integer and ndim == 4 and (channels_last_integer or wa == 2)
    if nhwc_integer:
        y1, y2, dy1, dy2 = ort_bilinear_weights_integer(spec.transform, out_shape[ha], in_shape[ha], scales[ha])
        x1, x2, dx1, dx2 = ort_bilinear_weights_integer(spec.transform, out_shape[wa], in_shape[wa], scales[wa])
    else:
        y1, y2, dy1, dy2, _ = ort_bilinear_weights(spec.transform, out_shape[ha], in_shape[ha], scales[ha])
        x1, x2, dx1, dx2, _ = ort_bilinear_weights(spec.transform, out_shape[wa], in_shape[wa], scales[wa])
    shape = [1] * ndim
    shape[ha], shape[wa] = out_shape[ha], out_shape[wa]
    # per pixel: ((w11*X11 + w21*X21) + w12*X12) + w22*X22, w11 = dx2*dy2 (the product rounded once)
    corners = [(y1, x1, dx2, dy2), (y1, x2, dx1, dy2), (y2, x1, dx2, dy1), (y2, x2, dx1, dy1)]
    terms = [(ys, xs, (dy[:, None] * dx[None, :]).reshape(shape)) for ys, xs, dx, dy in corners]

    tables = dict(y1=y1, y2=y2, x1=x1, x2=x2, dy1=dy1, dy2=dy2, dx1=dx1, dx2=dx2)

    def gather(x, ys, xs):
        return np.take(np.take(x, ys, axis=ha), xs, axis=wa)

    if nhwc_integer:
        def bilinear_integer(x):
            acc = sum(w * gather(x, ys, xs).astype(np.int64) for ys, xs, w in terms)
            q = np.where(acc >= 0, acc >> 20, -((-acc) >> 20))  # C++ '/': toward zero (uint8: '>> 20')
            return q.astype(x.dtype)
        bilinear_integer.tables = tables
        return bilinear_integer

    def bilinear(x):
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 and inf - inf: NaN, as in C
            acc = None
            for ys, xs, w in terms:
                t = w * gather(x, ys, xs).astype(_F32)
                acc = t if acc is None else acc + t
        return np.trunc(acc).astype(x.dtype) if integer else acc
    bilinear.tables = tables
    return bilinear


def resize_onnxruntime(x, spec: ResizeSpec, out_shape, scales, channels_last_integer=False, fail=ValueError):
    """ORT's Resize of ``x`` (float32, or 8-bit codes) to ``out_shape`` (:func:`plan_onnxruntime`)."""
    return plan_onnxruntime(x.shape, x.dtype, spec, out_shape, scales, channels_last_integer, fail)(x)


# ------------------------------------------------------------------------------------------------
# onnx reference evaluator
# ------------------------------------------------------------------------------------------------
def reference_axis_weights(spec: ResizeSpec, n_out: int, n_in: int, scale: float):
    """(i0, i1, w0, w1) of one axis as op_resize.py ``_interpolate_1d_along_axis`` (float64): output
    ``data[i0] * w0 + data[i1] * w1``, indices clamped to the input (its edge padding)."""
    y = np.arange(n_out, dtype=np.float64)
    t = spec.transform
    width = scale * n_in
    if t is CoordinateTransform.ALIGN_CORNERS:
        x = np.zeros(n_out) if width == 1 else y * (n_in - 1) / (width - 1)
    elif t is CoordinateTransform.ASYMMETRIC:
        x = y / scale
    elif t is CoordinateTransform.PYTORCH_HALF_PIXEL and width == 1:
        x = np.full(n_out, -0.5)
    else:
        x = (y + 0.5) / scale - 0.5
    fl = np.floor(x)
    integer = x == fl
    ratio = np.where(integer, 1.0, x - fl)
    if spec.mode is ResizeMode.LINEAR:
        w0, w1 = 1 - ratio, ratio
    else:
        n = spec.nearest
        hi = {NearestMode.ROUND_PREFER_FLOOR: ratio > 0.5, NearestMode.ROUND_PREFER_CEIL: ratio >= 0.5,
              NearestMode.FLOOR: np.zeros(n_out, bool), NearestMode.CEIL: np.ones(n_out, bool)}[n]
        hi = np.where(integer, True, hi)
        w0, w1 = (~hi).astype(np.float64), hi.astype(np.float64)
    # the window: two indices around x in the 1-padded axis, the lower pair where x + 1 is an integer
    padded = x + 1
    p = np.floor(padded)
    start = p.astype(np.int64) - (padded == p) - 1
    return (np.clip(start, 0, n_in - 1), np.clip(start + 1, 0, n_in - 1), w0, w1)


def resize_reference(x, spec: ResizeSpec, out_shape, scales):
    """The onnx reference evaluator's Resize of ``x``: axis by axis in float64 (axes whose scale is
    close to 1 with an unchanged size skipped), then ``saturate_cast`` to ``x``'s type."""
    r = x.astype(np.float64)
    for a in range(x.ndim):
        if abs(scales[a] - 1.0) <= 1e-9 and out_shape[a] == r.shape[a]:  # math.isclose(scale, 1.0)
            continue
        i0, i1, w0, w1 = reference_axis_weights(spec, out_shape[a], x.shape[a], scales[a])
        shape = [1] * x.ndim
        shape[a] = out_shape[a]
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0: NaN, as numpy gives the reference
            r = np.take(r, i0, axis=a) * w0.reshape(shape) + np.take(r, i1, axis=a) * w1.reshape(shape)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return np.clip(np.round(r), info.min, info.max).astype(x.dtype)
    info = np.finfo(x.dtype)
    return np.clip(r, info.min, info.max).astype(x.dtype)

