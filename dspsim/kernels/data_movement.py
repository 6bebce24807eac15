"""Data movement without arithmetic: TFLite's STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, TRANSPOSE, GATHER,
PACK, UNPACK, MIRROR_PAD, SPACE_TO_DEPTH, DEPTH_TO_SPACE, PAD and CONCATENATION on codes.

Every output element is a copy of one input element (or, for MIRROR_PAD, of a reflected one): the
quantization is carried unchanged, and the whole point is the index rules, which follow LiteRT's
kernels (``tflite/kernels/strided_slice.cc``, ``internal/strided_slice_logic.h``,
``internal/reference/strided_slice.h``, ``gather.h``, ``mirror_pad.cc``, ``space_to_depth.h``,
``depth_to_space.h``). Each wrapper turns the rules into per-axis index lists (plain ints) and
gathers with numpy; nothing here is worth compiling. Types: any integer or float dtype (the kernels
are type-generic byte copies); an empty input is refused.
"""
from __future__ import annotations

from enum import IntEnum

import numpy as np
from numba import njit

from .._errors import check_flag, names_its_errors
from ..fixedpoint import as_int_array
from ._checks import check_spec, check_tensor, float32_scale, resolve_axes, zero_point

_MAX_DIMS = 8
_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))  # PAD, CONCATENATION: int8 / uint8 codes, and int16


def _c_array(a):
    """A C-ordered copy of ``a`` (0-d stays 0-d, unlike ``np.ascontiguousarray``)."""
    return np.array(a, order="C")


def _array(x, func, name="x"):
    a = np.asarray(x)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{func}: {name} must be an integer or float array, got dtype {a.dtype}")
    if a.size == 0:
        raise ValueError(f"{func}: {name} must not be empty, got shape {a.shape}")
    if a.ndim > _MAX_DIMS:
        raise ValueError(f"{func}: {name} has rank {a.ndim}; at most {_MAX_DIMS} is supported")
    return a


def _int_vector(v, func, name, length=None):
    a = np.asarray(v)
    if a.dtype.kind not in "iu" or a.ndim > 1:
        raise TypeError(f"{func}: {name} must be an integer vector, got {a.dtype} of shape {a.shape}")
    out = [int(i) for i in a.reshape(-1)]
    if length is not None and len(out) != length:
        raise ValueError(f"{func}: {name} must have {length} entries (one per dimension), got {len(out)}")
    return out


def _axis(axis, ndim, func, name="axis"):
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{func}: {name} must be an int, got {axis!r}")
    a = int(axis) + ndim if axis < 0 else int(axis)
    if not 0 <= a < ndim:
        raise ValueError(f"{func}: {name} {axis} is out of range for rank {ndim}")
    return a


def _mask(value, func, name, count):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{func}: {name} must be an int bit mask, got {value!r}")
    v = int(value)
    if v < 0 or v >> count:
        raise ValueError(f"{func}: {name} {v:#x} sets bits at or beyond the {count} entries of begin")
    return v


# --------------------------------------------------------------------------------------------
# STRIDED_SLICE
# --------------------------------------------------------------------------------------------
def _clamp(v, lo, hi):
    return hi if v > hi else lo if v < lo else v


@names_its_errors
def strided_slice_plan(shape, begin, end, strides, *, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                       shrink_axis_mask=0, offset=False, func="strided_slice_plan"):
    """LiteRT's StridedSlice index rules as ``(effective_shape, ranges, output_shape)``.

    ``effective_shape`` is the input shape with the new axes inserted; ``ranges[k]`` is the
    ``range(start, stop, stride)`` of effective axis ``k`` (``StartForAxis`` / ``EndForAxis`` of
    ``internal/reference/strided_slice.h``); ``output_shape`` drops the shrunk axes. The masks are
    expanded as ``strided_slice.cc``'s ``BuildStridedSliceParams`` does: the ellipsis spans the
    dimensions that ``begin`` does not name, a new axis is a dimension of size 1 sliced ``[0, 1)``,
    dimensions past ``begin`` are taken whole, and a bit set in both the ellipsis and the new-axis
    mask is an ellipsis.

    Start: negative indices count from the end (``+ axis_size``), then the start is clamped to
    ``[0, size]`` (stride > 0) or ``[-1, size - 1]`` (stride < 0); ``begin_mask`` replaces it by
    ``0`` or ``size - 1``. Stop: with ``offset`` the end is relative (``end += start``), then the
    same negative-index rule and clamp; ``end_mask`` replaces it by ``size`` or ``-1``; a shrunk axis
    stops at ``start + 1``. A shrunk axis that selects nothing (start past the end, or a negative
    stride: the loop ``index > start + 1`` never runs) is a ValueError: the engines would leave the
    output unwritten.
    """
    shape = _int_vector(shape, func, "shape")
    if any(d < 0 for d in shape):
        raise ValueError(f"{func}: shape must hold sizes >= 0, got {shape}")
    begin, end, strides = (_int_vector(v, func, n) for v, n in ((begin, "begin"), (end, "end"), (strides, "strides")))
    offset = check_flag(offset, func, "offset")
    nd = len(shape)
    count = len(begin)
    if not len(end) == len(strides) == count:
        raise ValueError(f"{func}: begin, end and strides must have the same length, got {count}, {len(end)}, "
                         f"{len(strides)}")
    if count == 0 or count > 31:
        raise ValueError(f"{func}: begin must have 1 to 31 entries (LiteRT's limit), got {count}")
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask = (
        _mask(m, func, n, count) for m, n in ((begin_mask, "begin_mask"), (end_mask, "end_mask"),
                                              (ellipsis_mask, "ellipsis_mask"), (new_axis_mask, "new_axis_mask"),
                                              (shrink_axis_mask, "shrink_axis_mask")))
    if bin(ellipsis_mask).count("1") > 1:
        raise ValueError(f"{func}: ellipsis_mask {ellipsis_mask:#x} has more than one bit (one ellipsis at most)")
    if any(s == 0 for s in strides):
        raise ValueError(f"{func}: stride value has to be non-zero, got strides {list(strides)}")
    if any(s == -(1 << 31) for s in strides):
        raise ValueError(f"{func}: stride value INT32_MIN is not supported")
    if offset and (ellipsis_mask or new_axis_mask):
        raise ValueError(f"{func}: offset together with an ellipsis or new-axis mask is not supported")
    n_new = sum(1 for i in range(count) if new_axis_mask >> i & 1 and not ellipsis_mask >> i & 1)
    eff = nd + n_new
    if count - (1 if ellipsis_mask else 0) - n_new > nd:
        raise ValueError(f"{func}: begin names {count} entries for a rank-{nd} input")
    # expand the ellipsis (LiteRT gives it at least one dimension)
    ell_start, ell_len = eff, 0
    if ellipsis_mask:
        i = ellipsis_mask.bit_length() - 1
        ell_len = max(1, min(1 + n_new + nd - count, eff - i))
        if 1 + n_new + nd - count < 1:
            raise ValueError(f"{func}: the ellipsis would cover no dimension (LiteRT's expansion gives it one)")
        ell_start = i
    expanded = ell_len - 1 if ellipsis_mask else 0
    eff_shape, ranges, out_shape = [], [], []
    n_added = 0
    for i in range(eff):
        in_ellipsis = ell_start <= i < ell_start + ell_len
        spec = i - expanded if i >= ell_start + ell_len else i
        if in_ellipsis:
            size = shape[i - n_added]
            eff_shape.append(size)
            ranges.append(range(0, size, 1))
            out_shape.append(size)
            continue
        if new_axis_mask >> spec & 1:
            eff_shape.append(1)
            ranges.append(range(0, 1, 1))
            out_shape.append(1)
            n_added += 1
            continue
        size = shape[i - n_added]
        eff_shape.append(size)
        if spec >= count:  # past the spec: the whole dimension
            ranges.append(range(0, size, 1))
            out_shape.append(size)
            continue
        stride = int(strides[spec])
        start = int(begin[spec])
        if start < 0:
            start += size
        start = _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)
        if begin_mask >> spec & 1:
            start = 0 if stride > 0 else size - 1
        if shrink_axis_mask >> spec & 1:
            if stride < 0 or start >= size:
                # LiteRT's and TFLM's loops then visit nothing and leave the output unwritten
                raise ValueError(f"{func}: shrink axis {spec} selects no element (begin {begin[spec]} on a "
                                 f"dimension of {size}, stride {stride}): TensorFlow refuses it, LiteRT and TFLM "
                                 "leave the output unwritten")
            stop = start + 1
        else:
            stop = int(end[spec]) + (start if offset else 0)
            if stop < 0:
                stop += size
            stop = _clamp(stop, 0, size) if stride > 0 else _clamp(stop, -1, size - 1)
            if end_mask >> spec & 1:
                stop = size if stride > 0 else -1
        r = range(start, stop, stride)
        ranges.append(r)
        if not shrink_axis_mask >> spec & 1:
            out_shape.append(len(r))
    return tuple(eff_shape), ranges, tuple(out_shape)


@names_its_errors
def strided_slice(x, begin, end, strides, *, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, offset=False):
    """TFLite STRIDED_SLICE (LiteRT's kernel): the elements ``x[start:stop:stride]`` per axis.

    The index rules (negative indices, clamping, the five masks, ``offset``) are those of
    :func:`strided_slice_plan`. Values are copied: no rounding, no saturation.

    Parameters
    ----------
    x : integer or float array
    begin, end, strides : int vectors of one length (at most 31)
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask : int bit masks over the
        entries of ``begin``
    offset : bool
        ``end`` is a size relative to the start (StridedSliceOptions.offset).
    """
    func = "strided_slice"
    x = _array(x, func)
    b, e, s = (_int_vector(v, func, n) for v, n in ((begin, "begin"), (end, "end"), (strides, "strides")))
    eff_shape, ranges, out_shape = strided_slice_plan.__wrapped__(  # its errors already name strided_slice
        x.shape, b, e, s, begin_mask=begin_mask, end_mask=end_mask, ellipsis_mask=ellipsis_mask,
        new_axis_mask=new_axis_mask, shrink_axis_mask=shrink_axis_mask, offset=offset, func=func)
    if any(len(r) == 0 for r in ranges):
        return np.empty(out_shape, x.dtype)
    idx = np.ix_(*[np.array(r, np.int64) for r in ranges])
    return _c_array(x.reshape(eff_shape)[idx].reshape(out_shape))


# --------------------------------------------------------------------------------------------
# SLICE, SPLIT, SPLIT_V
# --------------------------------------------------------------------------------------------
def slice_tensor(x, begin, size):
    """TFLite SLICE: ``x[begin[i] : begin[i] + size[i]]`` per axis; ``size[i] == -1`` takes the rest.

    ValueError where LiteRT's ``CalculateOutputShapeVector`` fails: a negative begin, a size below -1,
    or ``begin + size`` past the dimension ("Invalid begin and size")."""
    func = "slice_tensor"
    x = _array(x, func)
    b = _int_vector(begin, func, "begin", x.ndim)
    sz = _int_vector(size, func, "size", x.ndim)
    sl = []
    for d, (n, lo, k) in enumerate(zip(x.shape, b, sz)):
        k = n - lo if k == -1 else k
        if lo < 0 or k < 0 or lo + k > n:
            raise ValueError(f"{func}: invalid begin and size on axis {d}: begin {b[d]}, size {sz[d]}, dimension {n}")
        sl.append(slice(lo, lo + k))
    return _c_array(x[tuple(sl)])


def split(x, axis, num_splits):
    """TFLite SPLIT: ``num_splits`` equal parts of ``x`` along ``axis`` (negative counts from the end),
    as a tuple of arrays. ValueError unless the dimension is a multiple of ``num_splits``."""
    func = "split"
    x = _array(x, func)
    ax = _axis(axis, x.ndim, func)
    if isinstance(num_splits, bool) or not isinstance(num_splits, (int, np.integer)) or num_splits < 1:
        raise ValueError(f"{func}: num_splits must be a positive int, got {num_splits!r}")
    if x.shape[ax] % num_splits:
        raise ValueError(f"{func}: dimension {x.shape[ax]} of axis {axis} is not a multiple of num_splits "
                         f"{num_splits}")
    k = x.shape[ax] // num_splits
    return tuple(_c_array(np.take(x, range(i * k, (i + 1) * k), axis=ax)) for i in range(num_splits))


def split_v(x, size_splits, axis):
    """TFLite SPLIT_V: parts of sizes ``size_splits`` along ``axis`` (one entry may be -1: the rest),
    as a tuple of arrays. ValueError where LiteRT's Prepare fails (two -1, negative sizes, sizes that
    do not add up to the dimension)."""
    func = "split_v"
    x = _array(x, func)
    ax = _axis(axis, x.ndim, func)
    sizes = _int_vector(size_splits, func, "size_splits")
    if not sizes:
        raise ValueError(f"{func}: size_splits must not be empty")
    if sizes.count(-1) > 1:
        raise ValueError(f"{func}: the size_splits contains more than one -1")
    n = x.shape[ax]
    if -1 in sizes:
        rest = n - sum(s for s in sizes if s != -1)
        sizes[sizes.index(-1)] = rest
    if any(s < 0 for s in sizes) or sum(sizes) != n:
        raise ValueError(f"{func}: size_splits {sizes} must be non-negative and add up to dimension {n}")
    out, at = [], 0
    for s in sizes:
        out.append(_c_array(np.take(x, range(at, at + s), axis=ax)))
        at += s
    return tuple(out)


# --------------------------------------------------------------------------------------------
# TRANSPOSE, GATHER, PACK, UNPACK
# --------------------------------------------------------------------------------------------
def transpose(x, perm):
    """TFLite TRANSPOSE: ``out.shape[i] = x.shape[perm[i]]``; ``perm`` is a permutation of the axes
    (negative entries are refused, as LiteRT's Prepare does)."""
    func = "transpose"
    x = _array(x, func)
    p = _int_vector(perm, func, "perm", x.ndim)
    if sorted(p) != list(range(x.ndim)):
        raise ValueError(f"{func}: perm {p} is not a permutation of 0..{x.ndim - 1}")
    return _c_array(np.transpose(x, p))


def batched_swap_plan(shape, perm):
    """The lean ``run(x)`` of :func:`transpose` for a C-contiguous ``x`` of ``shape`` when ``perm`` keeps a
    leading batch of axes and swaps the two runs of axes after it (NCHW <-> NHWC, a matrix transpose): ``x`` as
    ``(B, R, C)`` into ``(B, C, R)``, each input row read once, contiguously (about 2x numpy's ``take`` of an
    index map, 8x its strided copy); else None. ``perm`` already validated."""
    p = [int(a) for a in perm]
    n = len(p)
    k = 0
    while k < n and p[k] == k:
        k += 1
    if k == n:
        return None
    j = p[k]  # the trailing axes must read [j, ..., n-1, k, ..., j-1]
    if p[k:] != list(range(j, n)) + list(range(k, j)):
        return None
    dims = [int(np.prod(shape[a:b], dtype=np.int64)) for a, b in ((0, k), (k, j), (j, n))]
    out_shape = tuple(shape[a] for a in p)

    def run(x):
        out = np.empty(out_shape, x.dtype)
        _swap_rows(x.reshape(-1), *dims, out.reshape(-1))
        return out

    return run


@njit(cache=True, nogil=True)
def _swap_rows(x, n_batch, n_rows, n_cols, out):
    """``out (B, C, R)[b, c, r] = x (B, R, C)[b, r, c]``, flat: each input row copied to a strided output column."""
    for b in range(n_batch):
        for r in range(n_rows):
            src = x[(b * n_rows + r) * n_cols:(b * n_rows + r + 1) * n_cols]
            dst = out[b * n_rows * n_cols + r:]
            for c in range(n_cols):
                dst[c * n_rows] = src[c]


def gather(x, indices, axis=0, batch_dims=0):
    """TFLite GATHER: ``out[b..., o..., i..., n...] = x[b..., o..., indices[b..., i...], n...]``.

    ``axis`` and ``batch_dims`` may be negative (``+ rank(x)``, ``+ rank(indices)``); the first
    ``batch_dims`` dimensions of ``x`` and ``indices`` must agree. An index outside
    ``[0, x.shape[axis])`` is a ValueError (LiteRT's Eval fails on it; TFLM only DCHECKs and reads
    out of bounds)."""
    func = "gather"
    x = _array(x, func)
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{func}: indices must be an integer array, got {idx.dtype}")
    ax = _axis(axis, x.ndim, func)
    if isinstance(batch_dims, bool) or not isinstance(batch_dims, (int, np.integer)):
        raise TypeError(f"{func}: batch_dims must be an int, got {batch_dims!r}")
    bd = int(batch_dims) + idx.ndim if batch_dims < 0 else int(batch_dims)
    if not (0 <= bd <= ax and bd < x.ndim and bd <= idx.ndim):
        raise ValueError(f"{func}: batch_dims {batch_dims} must satisfy 0 <= batch_dims <= axis ({ax}), "
                         f"< rank(x) and <= rank(indices)")
    if x.shape[:bd] != idx.shape[:bd]:
        raise ValueError(f"{func}: the first {bd} dimensions of x {x.shape} and indices {idx.shape} differ")
    if idx.size and (idx.min() < 0 or idx.max() >= x.shape[ax]):
        raise ValueError(f"{func}: an index lies outside [0, {x.shape[ax]}) (gather index out of bounds)")
    batch = int(np.prod(x.shape[:bd], dtype=np.int64))
    outer = int(np.prod(x.shape[bd:ax], dtype=np.int64))
    inner = int(np.prod(x.shape[ax + 1:], dtype=np.int64))
    coords = idx.reshape(batch, -1).astype(np.int64)
    xv = x.reshape(batch, outer, x.shape[ax], inner)
    out = xv[np.arange(batch)[:, None, None], np.arange(outer)[None, :, None], coords[:, None, :]]
    return _c_array(out.reshape(x.shape[:ax] + idx.shape[bd:] + x.shape[ax + 1:]))


def pack(xs, axis=0):
    """TFLite PACK: the arrays ``xs`` (same shape and dtype) stacked along a new axis ``axis``
    (``-rank - 1 <= axis <= rank``)."""
    func = "pack"
    if not isinstance(xs, (list, tuple)) or not xs:
        raise TypeError(f"{func}: xs must be a non-empty list of arrays")
    arrs = [_array(a, func, f"xs[{k}]") for k, a in enumerate(xs)]
    if any(a.shape != arrs[0].shape or a.dtype != arrs[0].dtype for a in arrs):
        raise ValueError(f"{func}: every input must have the shape and dtype of xs[0] {arrs[0].shape} "
                         f"{arrs[0].dtype}")
    ax = _axis(axis, arrs[0].ndim + 1, func)
    return _c_array(np.stack(arrs, axis=ax))


def unpack(x, axis=0, num=None):
    """TFLite UNPACK: the ``x.shape[axis]`` slices of ``x`` along ``axis``, as a tuple (``num``, if
    given, must equal that dimension)."""
    func = "unpack"
    x = _array(x, func)
    ax = _axis(axis, x.ndim, func)
    if num is not None and int(num) != x.shape[ax]:
        raise ValueError(f"{func}: num {num} differs from dimension {x.shape[ax]} of axis {axis}")
    return tuple(_c_array(np.take(x, i, axis=ax)) for i in range(x.shape[ax]))


# --------------------------------------------------------------------------------------------
# MIRROR_PAD, SPACE_TO_DEPTH, DEPTH_TO_SPACE
# --------------------------------------------------------------------------------------------
class MirrorPadMode(IntEnum):
    """MirrorPadOptions.mode (schema.fbs)."""

    REFLECT = 0
    """The border element is not repeated: ``[a b c] -> b [a b c] b``."""
    SYMMETRIC = 1
    """The border element is repeated: ``[a b c] -> a [a b c] c``."""


def mirror_pad_index(out_index, left_pad, input_size, offset):
    """The input index that output index ``out_index`` copies (``GetInputDimension`` of
    ``mirror_pad.cc``; ``offset`` 1 for REFLECT, 0 for SYMMETRIC)."""
    if out_index < left_pad:
        original = left_pad + offset - 1
        return original - min(out_index, original - offset)
    out_index -= left_pad
    if out_index >= input_size:
        out_index -= input_size
        original = input_size - (1 + offset)
        return original - min(out_index, original)
    return out_index


def mirror_pad(x, paddings, mode=MirrorPadMode.REFLECT):
    """TFLite MIRROR_PAD: ``x`` padded by its own mirror image, ``paddings[d] = (before, after)``.

    REFLECT leaves the border element out of the mirror, SYMMETRIC includes it. ValueError for
    paddings beyond TensorFlow's limit (``dim - 1`` for REFLECT, ``dim`` for SYMMETRIC): past it the
    engines' index formula reads outside the input."""
    func = "mirror_pad"
    x = _array(x, func)
    try:
        m = MirrorPadMode(mode) if not isinstance(mode, str) else MirrorPadMode[mode.upper()]
    except (KeyError, ValueError):
        raise ValueError(f"{func}: mode must be REFLECT or SYMMETRIC, got {mode!r}") from None
    pads = np.asarray(paddings)
    if pads.dtype.kind not in "iu" or pads.shape != (x.ndim, 2):
        raise ValueError(f"{func}: paddings must be an int ({x.ndim}, 2) array, got {pads.dtype} {pads.shape}")
    off = 1 if m == MirrorPadMode.REFLECT else 0
    idx = []
    for d, (n, (lo, hi)) in enumerate(zip(x.shape, pads.tolist())):
        if lo < 0 or hi < 0 or max(lo, hi) > n - off:
            raise ValueError(f"{func}: paddings ({lo}, {hi}) of axis {d} must lie in [0, {n - off}] for {m.name} "
                             f"on a dimension of {n}")
        idx.append(np.array([mirror_pad_index(i, lo, n, off) for i in range(n + lo + hi)], np.int64))
    return _c_array(x[np.ix_(*idx)])


def _block(block_size, func):
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"{func}: block_size must be a positive int, got {block_size!r}")
    return int(block_size)


def space_to_depth(x, block_size):
    """TFLite SPACE_TO_DEPTH (NHWC): ``out[b, h, w, (dy * bs + dx) * C + c] = x[b, h*bs + dy, w*bs + dx, c]``."""
    func = "space_to_depth"
    x = _array(x, func)
    bs = _block(block_size, func)
    if x.ndim != 4 or x.shape[1] % bs or x.shape[2] % bs:
        raise ValueError(f"{func}: x must be NHWC with height and width multiples of {bs}, got {x.shape}")
    n, h, w, c = x.shape
    y = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return _c_array(y.reshape(n, h // bs, w // bs, bs * bs * c))


def depth_to_space(x, block_size):
    """TFLite DEPTH_TO_SPACE (NHWC, DCR order): ``out[b, h*bs + dy, w*bs + dx, c] = x[b, h, w, (dy * bs + dx) * C + c]``
    with ``C = depth / bs**2``."""
    func = "depth_to_space"
    x = _array(x, func)
    bs = _block(block_size, func)
    if x.ndim != 4 or x.shape[3] % (bs * bs):
        raise ValueError(f"{func}: x must be NHWC with a depth that is a multiple of {bs * bs}, got {x.shape}")
    n, h, w, d = x.shape
    c = d // (bs * bs)
    y = x.reshape(n, h, w, bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return _c_array(y.reshape(n, h * bs, w * bs, c))


# --------------------------------------------------------------------------------------------
# PAD, CONCATENATION
# --------------------------------------------------------------------------------------------
@names_its_errors
def pad(x, paddings, pad_value):
    """TFLite PAD / PADV2 on integer codes: ``paddings`` (rank, 2) of (before, after) >= 0, filled
    with ``pad_value`` (TFLite PAD uses the output zero point; no requantization)."""
    x = check_tensor(x, "pad", "x", allowed=_TYPES + (np.dtype(np.int16),))
    return pad_plan(x.shape, x.dtype, paddings, pad_value)(x)


def pad_plan(shape, dtype, paddings, pad_value):
    """:func:`pad` prepared for codes of ``shape`` and ``dtype`` (validated once); the lean ``run(x)`` fills
    the output with ``pad_value`` and copies ``x`` into its interior (what ``np.pad`` computes)."""
    func = "pad"
    shape, dt = check_spec(func, "x", shape, dtype, _TYPES + (np.dtype(np.int16),))
    p = as_int_array(paddings, func, "paddings", 0, 1 << 24)
    if p.shape != (len(shape), 2):
        raise ValueError(f"{func}: paddings must have shape ({len(shape)}, 2), got {p.shape}")
    v = zero_point(pad_value, dt, func, "pad_value")
    out_shape = tuple(d + int(a) + int(b) for d, (a, b) in zip(shape, p))
    if int(np.prod(out_shape, dtype=object)) > (1 << 31) - 1:
        raise ValueError(f"{func}: the padded output {out_shape} has more than 2^31 - 1 elements (TFLite's int sizes)")
    interior = tuple(slice(int(a), int(a) + d) for d, (a, _) in zip(shape, p))
    fill = dt.type(v)

    def run(x):
        out = np.full(out_shape, fill, dt)
        out[interior] = x
        return out

    return run


@names_its_errors
def concatenation(xs, axis, *, input_scales=None, input_zero_points=None, output_scale=None, output_zero_point=None):
    """TFLite CONCATENATION: the codes copied along ``axis``.

    LiteRT's int8 kernel refuses inputs whose scale or zero point differ from the output's
    (``concatenation.cc`` Prepare), so there is no requantization to model for int8. Its uint8 kernel
    (``reference_ops::ConcatenationWithScaling``, every kernel type) rescales such inputs: give the quantization
    (``input_scales``, ``input_zero_points``, ``output_scale``, ``output_zero_point``) and see
    :func:`concatenation_scaling_table`.
    """
    arrs = [check_tensor(a, "concatenation", f"xs[{i}]", allowed=_TYPES + (np.dtype(np.int16),))
            for i, a in enumerate(xs)]
    return concatenation_plan([a.shape for a in arrs], [a.dtype for a in arrs], axis, input_scales=input_scales,
                              input_zero_points=input_zero_points, output_scale=output_scale,
                              output_zero_point=output_zero_point)(arrs)


def concatenation_scaling_table(input_scale, input_zero_point, output_scale, output_zero_point):
    """The 256 output codes of one uint8 input of ``ConcatenationWithScaling``, or None where it copies (scale and
    zero point equal to the output's): ``scale = f32(s_in * f32(1 / s_out))``, ``bias = f32(-zi * scale)``,
    ``out = clamp(TfLiteRound(f32(f32(q * scale) + bias)) + zo, 0, 255)``, every step in float32, the rounding
    ties away from zero."""
    func = "concatenation_scaling_table"
    s_in, s_out = (float32_scale(v, func, n) for v, n in ((input_scale, "input_scale"), (output_scale, "output_scale")))
    zi = zero_point(input_zero_point, np.dtype(np.uint8), func, "input_zero_point")
    zo = zero_point(output_zero_point, np.dtype(np.uint8), func, "output_zero_point")
    if zi == zo and s_in == s_out:
        return None
    scale = np.float32(s_in * np.float32(np.float32(1) / s_out))
    bias = np.float32(np.float32(-zi) * scale)
    v = ((np.arange(256, dtype=np.float32) * scale).astype(np.float32) + bias).astype(np.float32).astype(np.float64)
    rounded = np.sign(v) * np.floor(np.abs(v) + 0.5)  # exact: |v| < 2^24 in float64
    return np.clip(rounded + zo, 0, 255).astype(np.uint8)


def concatenation_plan(shapes, dtypes, axis, *, input_scales=None, input_zero_points=None, output_scale=None,
                       output_zero_point=None):
    """:func:`concatenation` prepared for inputs of ``shapes`` and ``dtypes`` (validated once); the lean
    ``run(xs)`` is ``np.concatenate`` along the resolved axis, the uint8 inputs to rescale looked up in their
    :func:`concatenation_scaling_table` first."""
    func = "concatenation"
    specs = [check_spec(func, f"xs[{i}]", s, d, _TYPES + (np.dtype(np.int16),))
             for i, (s, d) in enumerate(zip(shapes, dtypes))]
    if not specs:
        raise ValueError(f"{func}: needs at least one input")
    if any(d != specs[0][1] or len(s) != len(specs[0][0]) for s, d in specs):
        raise ValueError(f"{func}: inputs must share dtype and rank")
    ax = resolve_axes(axis, len(specs[0][0]), func)[0]
    try:
        np.concatenate([np.empty(s, np.int8) for s, _ in specs], axis=ax)  # numpy's own shape check
    except ValueError as e:
        raise ValueError(f"{func}: {e}") from None
    quant = (input_scales, input_zero_points, output_scale, output_zero_point)
    if all(q is None for q in quant):
        return lambda xs: np.concatenate(xs, axis=ax)
    if any(q is None for q in quant) or specs[0][1] != np.uint8:
        raise ValueError(f"{func}: rescaling takes uint8 inputs and all four of input_scales, input_zero_points, "
                         "output_scale, output_zero_point (LiteRT's ConcatenationWithScaling)")
    if len(input_scales) != len(specs) or len(input_zero_points) != len(specs):
        raise ValueError(f"{func}: input_scales and input_zero_points need one value per input ({len(specs)})")
    tables = [concatenation_scaling_table(s, z, output_scale, output_zero_point)
              for s, z in zip(input_scales, input_zero_points)]
    if all(t is None for t in tables):
        return lambda xs: np.concatenate(xs, axis=ax)
    return lambda xs: np.concatenate([x if t is None else t[x] for x, t in zip(xs, tables)], axis=ax)
