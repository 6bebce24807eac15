"""Prepare once, run many: what the kernels' ``*_plan`` functions share.

A kernel's ``*_plan(shapes, dtypes, parameters)`` validates and derives everything that does not
depend on the values (zero points, clamp, multipliers, broadcast and index maps) and returns a lean
``run(x, ...) -> out`` that only allocates the output and calls the numba core (or numpy); its
public function is ``plan(x.shape, x.dtype, ...)(x)``. ``run`` trusts its inputs to have the shapes
and dtypes the plan was made for (a loaded model guarantees them) and checks nothing.
"""
from __future__ import annotations

import numpy as np

from ._common import check_tensor


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


def flat_operand(shape_in, shape):
    """A lean ``x -> x broadcast to shape, flat and contiguous``: ``np.ravel`` when nothing is
    broadcast, else one copy of the broadcast view (no index map: its 8 bytes per output element
    would be the largest temporary of a broadcast op)."""
    shape_in, shape = tuple(shape_in), tuple(shape)
    if shape_in == shape:
        return np.ravel
    return lambda x: np.ascontiguousarray(np.broadcast_to(x.reshape(shape_in), shape)).reshape(-1)


def index_plan(fn, shapes, *args, **kw):
    """A pure data-movement kernel ``fn(x, ...)`` (or ``fn([x0, x1, ...], ...)`` for a list of
    ``shapes``) as flat index maps: ``fn`` run once on the element numbers (int64 codes), so that
    its index rules keep one home. Returns ``(run, output shapes)``, ``run(x)`` (or ``run(xs)``)
    giving what ``fn`` gives (a tuple where ``fn`` returns one), each output one ``np.take``."""
    many = isinstance(shapes, list)
    sizes = [int(np.prod(s, dtype=np.int64)) for s in (shapes if many else [shapes])]
    starts = np.cumsum([0] + sizes)
    probes = [np.arange(a, a + n, dtype=np.int64).reshape(s)
              for a, n, s in zip(starts, sizes, shapes if many else [shapes])]
    y = fn(probes if many else probes[0], *args, **kw)
    maps = [np.array(v, dtype=np.intp, order="C") for v in (y if isinstance(y, tuple) else (y,))]  # 0-d stays 0-d
    out_shapes = tuple(m.shape for m in maps)

    views = [None if many else _affine_view(m) for m in maps]
    # a strided window needs only its map's shape: keep no index memory for it
    maps = [m if v is None else np.broadcast_to(np.intp(0), m.shape) for m, v in zip(maps, views)]

    def take(x, m, view=None):  # np.take gives a scalar for a 0-d map: keep an array
        if view is not None:  # a strided window of x (slices, splits): one copy, no index map read
            base, strides = view
            flat = np.ravel(x)
            return np.lib.stride_tricks.as_strided(flat[base:], m.shape, [st * flat.itemsize for st in strides]).copy()
        return np.take(x, m) if m.ndim else np.asarray(np.take(x, m))

    if many:
        def gather(xs):
            return np.concatenate([np.ravel(x) for x in xs])
    else:
        gather = None
    if isinstance(y, tuple):
        def run(x):
            flat = gather(x) if many else x
            return tuple(take(flat, m, v) for m, v in zip(maps, views))
    else:
        m0, v0 = maps[0], views[0]

        def run(x):
            return take(gather(x) if many else x, m0, v0)
    return run, out_shapes


def _affine_view(m):
    """``(base, strides)`` when the flat index map ``m`` is ``base + sum_k i_k * strides[k]`` with every
    stride >= 0 (what slicing gives: STRIDED_SLICE, SLICE, SPLIT, ...), else None."""
    if m.ndim == 0 or m.size == 0:
        return None
    base = int(m.flat[0])
    strides = [int(m[(0,) * k + (1,) + (0,) * (m.ndim - k - 1)]) - base if m.shape[k] > 1 else 0
               for k in range(m.ndim)]
    if min(strides) < 0:
        return None
    grid = base + sum(np.arange(n, dtype=np.intp).reshape((n,) + (1,) * (m.ndim - k - 1)) * st
                      for k, (n, st) in enumerate(zip(m.shape, strides)))
    return (base, strides) if np.array_equal(np.broadcast_to(grid, m.shape), m) else None
