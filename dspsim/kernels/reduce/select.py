"""Reductions by selection on codes: TFLite REDUCE_MAX and ARG_MAX.

Both pick an input code: nothing is rounded or saturated. REDUCE_MAX needs the input's scale and
zero point on the output (LiteRT's ``reduce.cc`` and TFLM's ``reduce_common.cc`` check it), so the
largest code is the largest value. ARG_MAX (``internal/reference/arg_min_max.h``) keeps the first
index of the largest code: a later element replaces the running maximum only when strictly greater.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..._errors import check_flag, names_its_errors

_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32))
_INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _input(x, func):
    a = np.asarray(x)
    if a.dtype not in _TYPES:
        raise TypeError(f"{func}: x must have dtype {' or '.join(d.name for d in _TYPES)}, got {a.dtype}")
    if a.size == 0 or a.ndim == 0:
        raise ValueError(f"{func}: x must be a non-empty array of rank >= 1, got shape {a.shape}")
    return np.ascontiguousarray(a)


def _spec(shape, dtype, func):
    """``shape`` (a tuple) of an input described by shape and dtype, checked as :func:`_input` checks an array."""
    dt = np.dtype(dtype)
    if dt not in _TYPES:
        raise TypeError(f"{func}: x must have dtype {' or '.join(d.name for d in _TYPES)}, got {dt}")
    shape = tuple(int(d) for d in shape)
    if not shape or any(d == 0 for d in shape):
        raise ValueError(f"{func}: x must be a non-empty array of rank >= 1, got shape {shape}")
    return shape


def reduce_axes(axis, ndim, func):
    """The sorted, de-duplicated axes of ``axis`` (ints or an int array; negative counts from the end),
    as LiteRT's ``ResolveAxis`` resolves them."""
    a = np.asarray(axis)
    if a.dtype.kind not in "iu" or a.ndim > 1:
        raise TypeError(f"{func}: axis must be an int or an int vector, got {a.dtype} of shape {a.shape}")
    out = set()
    for v in a.reshape(-1).tolist():
        if not -ndim <= v < ndim:
            raise ValueError(f"{func}: axis {v} is out of range for rank {ndim}")
        out.add(v % ndim)
    return tuple(sorted(out))


@names_its_errors
def reduce_max(x, axis, *, keep_dims=False):
    """TFLite REDUCE_MAX on codes: the largest code over ``axis`` (duplicates and negative axes
    resolved; an empty ``axis`` copies ``x``), the reduced dimensions kept as 1 with ``keep_dims``.
    Exact (a selection)."""
    x = _input(x, "reduce_max")
    return reduce_max_plan(x.shape, x.dtype, axis, keep_dims=keep_dims)(x)


def reduce_max_plan(shape, dtype, axis, *, keep_dims=False):
    """:func:`reduce_max` prepared for codes of ``shape`` and ``dtype`` (axes resolved once); returns the
    lean ``run(x) -> codes``."""
    func = "reduce_max"
    shape = _spec(shape, dtype, func)
    axes = reduce_axes(axis, len(shape), func)
    keep_dims = check_flag(keep_dims, func, "keep_dims")
    if not axes:
        return np.array  # a copy
    return lambda x: np.array(np.max(x, axis=axes, keepdims=keep_dims), copy=True)  # 0-d stays 0-d


@njit(cache=True)
def _arg_max(x3, out):
    """x3 (outer, axis, inner) -> out (outer, inner): first index of the strict running maximum."""
    n_out, n_axis, n_in = x3.shape
    for o in range(n_out):
        for i in range(n_in):
            best = x3[o, 0, i]
            k = 0
            for j in range(1, n_axis):
                if x3[o, j, i] > best:
                    best = x3[o, j, i]
                    k = j
            out[o, i] = k


@names_its_errors
def arg_max(x, axis, *, output_type="int32"):
    """TFLite ARG_MAX on codes: the index of the largest code along ``axis`` (negative counts from the
    end), as ``output_type`` (int32 or int64); ties go to the first index.

    Parameters
    ----------
    x : int8, uint8, int16 or int32 array
    axis : int
    output_type : "int32" | "int64"
    """
    x = _input(x, "arg_max")
    return arg_max_plan(x.shape, x.dtype, axis, output_type=output_type)(x)


def arg_max_plan(shape, dtype, axis, *, output_type="int32"):
    """:func:`arg_max` prepared for codes of ``shape`` and ``dtype`` (validated once); returns the lean
    ``run(x) -> indices``."""
    func = "arg_max"
    shape = _spec(shape, dtype, func)
    dt = np.dtype(output_type) if isinstance(output_type, str) and output_type in ("int32", "int64") else None
    if dt not in _INDEX_TYPES:
        raise ValueError(f"{func}: output_type must be int32 or int64, got {output_type!r}")
    (ax,) = reduce_axes(np.array([axis]), len(shape), func)
    outer = int(np.prod(shape[:ax], dtype=np.int64))
    inner = int(np.prod(shape[ax + 1:], dtype=np.int64))
    x3, out_shape = (outer, shape[ax], inner), shape[:ax] + shape[ax + 1:]

    def run(x):
        out = np.empty((outer, inner), dt)
        _arg_max(np.ascontiguousarray(x).reshape(x3), out)
        return out.reshape(out_shape)

    return run
