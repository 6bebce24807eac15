"""The kernels' argument checks: the one home of the rules their wrappers and plans apply.

Each check returns the value in the form the kernel takes, or raises a TypeError / ValueError that names
the public function (``func``) and the rule (``conv2d: stride must be >= 1, got 0``). Kernels never see
unchecked input.
"""
from __future__ import annotations

import numpy as np

from ..fixedpoint import INT32_MAX, as_int_array

_ACT_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))


def check_tensor(a, func, name, ndim=None, allowed=_ACT_TYPES):
    """``a`` as a numpy array of one of the ``allowed`` dtypes (and rank ``ndim``), else TypeError/ValueError."""
    arr = np.asarray(a)
    if arr.dtype not in allowed:
        raise TypeError(f"{func}: {name} must have dtype {' or '.join(str(d) for d in allowed)}, got {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{func}: {name} must have rank {ndim}, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{func}: {name} must not be empty, got shape {arr.shape}")
    return arr


def probe_array(x_shape, x_dtype, func):
    """An array of the layer's input shape and dtype, for the wrappers' checks (its values are not read)."""
    try:
        shape = tuple(int(d) for d in x_shape)
        dtype = np.dtype(x_dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{func}: x_shape must be a tuple of ints and x_dtype a dtype, got {x_shape!r}, "
                        f"{x_dtype!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{func}: x_shape must hold sizes >= 0, got {shape}")
    return np.broadcast_to(np.zeros((), dtype), shape)


def broadcast_pair(func, x1, x2, allowed):
    """Two operands of one of the ``allowed`` dtypes (the same one), broadcast by numpy's rule (TFLite's
    BroadcastBinaryFunction computes the same), flattened; returns ``(a, b, broadcast shape)``."""
    x1 = check_tensor(x1, func, "x1", allowed=allowed)
    x2 = check_tensor(x2, func, "x2", allowed=allowed)
    if x1.dtype != x2.dtype:
        raise TypeError(f"{func}: x1 and x2 must have the same dtype, got {x1.dtype} and {x2.dtype}")
    try:
        a, b = np.broadcast_arrays(x1, x2)
    except ValueError:
        raise ValueError(f"{func}: shapes {x1.shape} and {x2.shape} do not broadcast") from None
    return np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1), a.shape


def int_in_range(value, lo, hi, func, name):
    """``value`` as an int: a Python or numpy integer (not a bool) in [``lo``, ``hi``], else a ValueError
    "``func``: ``name`` must be an int in [lo, hi]"."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ValueError(f"{func}: {name} must be an int in [{lo}, {hi}], got {value!r}")
    return int(value)


def zero_point(value, dtype, func, name):
    """A zero point as an int inside the range of ``dtype``."""
    info = np.iinfo(dtype)
    zp = as_int_array(value, func, name, int(info.min), int(info.max))
    if zp.ndim != 0:
        raise ValueError(f"{func}: {name} must be a scalar")
    return int(zp)


def channel_zero_points(value, dtype, n, func, name):
    """Zero points as an int64 array of length ``n`` (one value broadcast, or one per channel)."""
    info = np.iinfo(dtype)
    zp = as_int_array(value, func, name, int(info.min), int(info.max)).reshape(-1)
    if zp.size not in (1, n):
        raise ValueError(f"{func}: {name} has {zp.size} values but the output has {n} channels")
    return np.ascontiguousarray(np.broadcast_to(zp, (n,)))


def pair(value, func, name, lo=1, hi=(1 << 31) - 1):
    """An int or a pair (h, w) of ints, each in [``lo``, ``hi``] (TFLite's int32 parameters)."""
    vals = (value, value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else value
    try:
        vals = tuple(vals)
    except TypeError:
        raise TypeError(f"{func}: {name} must be an int or a pair of ints, got {value!r}") from None
    if len(vals) != 2 or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in vals):
        raise TypeError(f"{func}: {name} must be an int or a pair of ints, got {value!r}")
    if any(v < lo for v in vals):
        raise ValueError(f"{func}: {name} must be >= {lo}, got {value!r}")
    if any(v > hi for v in vals):
        raise ValueError(f"{func}: {name} must be at most 2^31 - 1 (TFLite's int), got {value!r}")
    return int(vals[0]), int(vals[1])


def checked_pair(func, x1, x2, allowed):
    """Two arrays of one of the ``allowed`` dtypes, the same one, neither empty (TypeError/ValueError)."""
    x1 = check_tensor(x1, func, "x1", allowed=allowed)
    x2 = check_tensor(x2, func, "x2", allowed=allowed)
    if x1.dtype != x2.dtype:
        raise TypeError(f"{func}: x1 and x2 must have the same dtype, got {x1.dtype} and {x2.dtype}")
    return x1, x2


def check_spec(func, name, shape, dtype, allowed):
    """``(shape as a tuple, dtype)`` of an operand described by shape and dtype, as :func:`check_tensor` checks it."""
    dt = np.dtype(dtype)
    if dt not in allowed:
        raise TypeError(f"{func}: {name} must have dtype {' or '.join(str(d) for d in allowed)}, got {dt}")
    shape = tuple(int(d) for d in shape)
    if any(d == 0 for d in shape):
        raise ValueError(f"{func}: {name} must not be empty, got shape {shape}")
    return shape, dt


def broadcast_shape(func, shape1, shape2):
    """numpy's broadcast of two shapes (TFLite's BroadcastBinaryFunction computes the same)."""
    try:
        return tuple(np.broadcast_shapes(shape1, shape2))
    except ValueError:
        raise ValueError(f"{func}: shapes {tuple(shape1)} and {tuple(shape2)} do not broadcast") from None


def float32_scale(value, func, name):
    """``value`` as the positive finite float32 an engine stores for a scale, else TypeError/ValueError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{func}: {name} must be a float, got {value!r}") from None
    with np.errstate(over="ignore", under="ignore"):
        f32 = np.float32(v)
    if not np.isfinite(v) or v <= 0 or not np.isfinite(f32) or f32 <= 0:
        raise ValueError(f"{func}: {name} must be finite and positive in float32, got {value!r}")
    return f32


def scalar_int(value, func, name, lo, hi):
    """``value`` as a Python int in ``[lo, hi]`` (a scalar: a shape is refused)."""
    v = as_int_array(value, func, name, lo, hi)
    if v.ndim != 0:
        raise ValueError(f"{func}: {name} must be a scalar int, got shape {v.shape}")
    return int(v)


def q31_multiplier(value, func, name):
    """A Q31 multiplier: a scalar int in ``[0, 2^31 - 1]``."""
    return scalar_int(value, func, name, 0, INT32_MAX)


def resolve_axes(axis, ndim, func):
    """The axes of ``axis`` (ints; negative counts from the end) in order of first appearance, duplicates
    dropped, as TFLite's reduce ``ResolveAxis`` keeps them."""
    vals = np.atleast_1d(as_int_array(axis, func, "axis")).reshape(-1)
    out = []
    for a in vals:
        if not -ndim <= a < ndim:
            raise ValueError(f"{func}: axis {int(a)} is out of bounds for rank {ndim}")
        a = int(a) % ndim
        if a not in out:
            out.append(a)
    return tuple(out)
