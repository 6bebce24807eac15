"""Prepare once, run many: what the kernels' ``*_plan`` functions share.

A kernel's ``*_plan(shapes, dtypes, parameters)`` validates and derives everything that does not
depend on the values (zero points, clamp, multipliers, broadcast and index maps) and returns a lean
``run(x, ...) -> out`` that only allocates the output and calls the numba core (or numpy); its
public function is ``plan(x.shape, x.dtype, ...)(x)``. ``run`` trusts its inputs to have the shapes
and dtypes the plan was made for (a loaded model guarantees them) and checks nothing.
"""
from __future__ import annotations

import numpy as np



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
    giving what ``fn`` gives (a tuple where ``fn`` returns one), each output one ``np.take``, or, where
    the output is a window of ``x`` (slices, splits: :func:`window_of`), one :func:`contiguous_copy` of
    that window (``x`` may then be any strided array of the shape)."""
    many = isinstance(shapes, list)
    y, maps = _maps(fn, shapes, many, args, kw)
    out_shapes = tuple(m.shape for m in maps)
    windows = [None if many else window_of(m, shapes) for m in maps]
    # a window needs only its map's shape: keep no index memory for it
    maps = [m if w is None else None for m, w in zip(maps, windows)]

    def take(x, m, window):  # np.take gives a scalar for a 0-d map: keep an array
        if window is not None:
            return contiguous_copy(x[window[0]].reshape(window[1]))
        return np.take(x, m) if m.ndim else np.asarray(np.take(x, m))

    if many:
        def gather(xs):
            return np.concatenate([np.ravel(x) for x in xs])
    else:
        gather = None
    if isinstance(y, tuple):
        def run(x):
            flat = gather(x) if many else x
            return tuple(take(flat, m, w) for m, w in zip(maps, windows))
    else:
        m0, w0 = maps[0], windows[0]

        def run(x):
            return take(gather(x) if many else x, m0, w0)
    return run, out_shapes


def index_views(fn, shape, *args, **kw):
    """:func:`index_plan`'s ``run`` for one input of ``shape`` returning views of ``x`` (no copy), or None
    when an output is not a window of ``x`` (:func:`window_of`). A view shares ``x``'s memory: only for a
    caller that knows nothing writes into either (a model's executor, for readers that only read)."""
    y, maps = _maps(fn, shape, False, args, kw)
    windows = [window_of(m, shape) for m in maps]
    if any(w is None for w in windows):
        return None
    if isinstance(y, tuple):
        return lambda x: tuple(x[index].reshape(out) for index, out in windows)
    (index, out), = windows
    return lambda x: x[index].reshape(out)


def _maps(fn, shapes, many, args, kw):
    """``fn`` run on the element numbers: (its result, the flat index map of each output as intp)."""
    sizes = [int(np.prod(s, dtype=np.int64)) for s in (shapes if many else [shapes])]
    starts = np.cumsum([0] + sizes)
    probes = [np.arange(a, a + n, dtype=np.int64).reshape(s)
              for a, n, s in zip(starts, sizes, shapes if many else [shapes])]
    y = fn(probes if many else probes[0], *args, **kw)
    maps = [np.array(v, dtype=np.intp, order="C") for v in (y if isinstance(y, tuple) else (y,))]  # 0-d stays 0-d
    return y, maps


def window_of(m, shape):
    """``(index, out_shape)`` when the flat index map ``m`` over an input of ``shape`` is a window of it:
    ``x[index].reshape(out_shape)`` (``index`` a tuple of slices with positive steps, the reshape only
    adding or dropping unit dimensions, so a view) gives ``np.take(x, m)``; else None (a reversed,
    permuted, repeated or gathered map). Found from the map's coordinates, then checked on the probe."""
    shape = tuple(int(d) for d in shape)
    if m.ndim == 0 or m.size == 0 or not shape:
        return None
    index = []
    for c in np.unravel_index(m.reshape(-1), shape):
        u = np.unique(c)
        step = int(u[1] - u[0]) if u.size > 1 else 1
        if np.any(np.diff(u) != step):
            return None
        index.append(slice(int(u[0]), int(u[-1]) + 1, step))
    index = tuple(index)
    window = np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)[index]
    if [d for d in window.shape if d != 1] != [d for d in m.shape if d != 1]:
        return None
    return (index, m.shape) if np.array_equal(window.reshape(m.shape), m) else None


def contiguous_copy(v):
    """A C-contiguous copy of the array ``v`` (any strides). numpy's strided copy pays ~7 ns per
    innermost run (a (256, 9, 1, 32) int8 channel window: 2,304 runs of 32 bytes, 18 µs); here the
    innermost contiguous run (trailing dimensions, unit ones skipped) is copied as one ``np.void``
    element when there are many short runs (about 2x as fast on 8-128 byte runs; 5x on 8-16)."""
    shape, strides, size = v.shape, v.strides, v.itemsize
    if not shape or strides[-1] != size or shape[-1] * size > _VOID_RUN_MAX or v.flags.c_contiguous:
        return v.copy()
    run, k = size, len(shape)  # the innermost run: trailing dimensions laid out contiguously (unit ones skipped)
    while k and (shape[k - 1] == 1 or strides[k - 1] == run):
        run *= shape[k - 1]
        k -= 1
    if run < 8 or v.size * size < _VOID_MIN_RUNS * run:  # runs numpy copies well, or too few to gain
        return v.copy()
    if run != shape[-1] * size:  # the run spans several dimensions: merge them (a view: they are contiguous)
        v = v.reshape(shape[:k] + (run // size,))
    return v.view(np.dtype((np.void, run))).copy().view(v.dtype).reshape(shape)


_VOID_RUN_MAX, _VOID_MIN_RUNS = 512, 1024  # runs longer (bytes) or fewer: numpy's own strided copy is as fast
