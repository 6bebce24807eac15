"""The oracle of the data_movement family: PAD, CONCATENATION, slicing, splitting, transposing, gathering, packing, mirror padding, space/depth.

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

from fractions import Fraction

from .fixedpoint import _np, clamp, f32, round_fraction


def pad_oracle(x, paddings, pad_value):
    np = _np()
    pads = [(int(a), int(b)) for a, b in np.asarray(paddings).tolist()]
    out = np.full([n + a + b for n, (a, b) in zip(x.shape, pads)], pad_value, dtype=x.dtype)
    out[tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, pads))] = x
    return out


def concatenation_oracle(xs, axis, *, input_scales=None, input_zero_points=None, output_scale=None,
                         output_zero_point=None):
    """The codes along ``axis``; with the quantization given, LiteRT's uint8 ``ConcatenationWithScaling``: an input
    whose scale or zero point differs from the output's becomes ``clamp(round_half_away(f32(f32(q * scale) + bias))
    + zo, 0, 255)``, ``scale = f32(s_in * f32(1 / s_out))``, ``bias = f32(-zi * scale)``."""
    np = _np()
    ax = int(axis) % xs[0].ndim
    if input_scales is not None:
        xs = [_rescaled_codes(a, s, z, output_scale, output_zero_point)
              for a, s, z in zip(xs, input_scales, input_zero_points)]
    parts = [np.moveaxis(np.asarray(a), ax, 0) for a in xs]
    rows = [row for p in parts for row in p]  # the slabs along the axis, in order
    return np.moveaxis(np.array(rows, dtype=xs[0].dtype), 0, ax)


def _rescaled_codes(x, input_scale, input_zero_point, output_scale, output_zero_point):
    np = _np()
    s_in, s_out = (Fraction(float(np.float32(v))) for v in (input_scale, output_scale))
    zi, zo = int(input_zero_point), int(output_zero_point)
    if zi == zo and s_in == s_out:
        return np.asarray(x)
    scale = f32(s_in * f32(1 / s_out))
    bias = f32(-zi * scale)
    values = [clamp(round_fraction(f32(f32(int(q) * scale) + bias), "half_away_from_zero") + zo, 0, 255)
              for q in np.asarray(x).reshape(-1).tolist()]
    return np.array(values, np.uint8).reshape(np.shape(x))


def _multi_indices(shape):
    """Every multi-index of ``shape`` in C order (plain tuples)."""
    import itertools

    return itertools.product(*[range(int(n)) for n in shape])


def _from_lists(values, shape, dtype):
    np = _np()
    return np.array(values, dtype=dtype).reshape(tuple(int(n) for n in shape))


def _axis_positions(start, stop, stride):
    """The positions TFLite's strided loop visits: ``start, start + stride, ...`` while
    ``index < stop`` (stride > 0) or ``index > stop`` (stride < 0)."""
    out, i = [], start
    while (i < stop) if stride > 0 else (i > stop):
        out.append(i)
        i += stride
    return out


def strided_slice_oracle(x, begin, end, strides, *, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                         shrink_axis_mask=0, offset=False):
    """TensorFlow's sparse-to-dense slice spec, then ``strided_slice_logic.h``'s StartForAxis /
    StopForAxis (the INT_MIN / INT_MAX form of the masks) on each dense axis."""
    np = _np()
    shape = [int(n) for n in np.shape(x)]
    b = [int(v) for v in np.asarray(begin).reshape(-1)]
    e = [int(v) for v in np.asarray(end).reshape(-1)]
    s = [int(v) for v in np.asarray(strides).reshape(-1)]
    # dense spec: one entry per axis of the input with new axes inserted
    dense = []  # (kind, spec index): kind "new", "all" or "spec"
    n_real = sum(1 for k in range(len(b)) if not (ellipsis_mask >> k & 1) and not (new_axis_mask >> k & 1))
    for k in range(len(b)):
        if ellipsis_mask >> k & 1:
            dense += [("all", k)] * (len(shape) - n_real)
        elif new_axis_mask >> k & 1:
            dense.append(("new", k))
        else:
            dense.append(("spec", k))
    n_dense_real = sum(1 for kind, _ in dense if kind != "new")
    dense += [("all", None)] * (len(shape) - n_dense_real)
    int_min, int_max = -(1 << 31), (1 << 31) - 1
    positions, eff_shape, out_shape, dim = [], [], [], 0
    for kind, k in dense:
        if kind == "new":
            positions.append([0])
            eff_shape.append(1)
            out_shape.append(1)
            continue
        n = shape[dim]
        dim += 1
        eff_shape.append(n)
        if kind == "all":
            positions.append(list(range(n)))
            out_shape.append(n)
            continue
        st = s[k]
        start = (int_min if st > 0 else int_max) if begin_mask >> k & 1 else b[k]
        if start < 0:
            start += n
        start = min(max(start, 0), n) if st > 0 else min(max(start, -1), n - 1)
        if shrink_axis_mask >> k & 1:
            stop = start if start >= n else start + 1
        else:
            stop = e[k] + (start if offset else 0)
            if end_mask >> k & 1:
                stop = int_max if st > 0 else int_min
            if stop < 0:
                stop += n
            stop = min(max(stop, 0), n) if st > 0 else min(max(stop, -1), n - 1)
        positions.append(_axis_positions(start, stop, st))
        if not shrink_axis_mask >> k & 1:
            out_shape.append(len(positions[-1]))
    xe = np.asarray(x).reshape(eff_shape)
    import itertools

    values = [xe[idx].item() for idx in itertools.product(*positions)]
    return _from_lists(values, out_shape, np.asarray(x).dtype)


def slice_tensor_oracle(x, begin, size):
    np = _np()
    b = [int(v) for v in np.asarray(begin).reshape(-1)]
    sz = [int(v) for v in np.asarray(size).reshape(-1)]
    out_shape = [n - lo if k == -1 else k for n, lo, k in zip(np.shape(x), b, sz)]
    values = [x[tuple(lo + i for lo, i in zip(b, idx))].item() for idx in _multi_indices(out_shape)]
    return _from_lists(values, out_shape, np.asarray(x).dtype)


def _parts_along(x, axis, sizes):
    np = _np()
    ax = int(axis) % np.ndim(x)
    out, at = [], 0
    for k in sizes:
        shape = list(np.shape(x))
        shape[ax] = k
        values = []
        for idx in _multi_indices(shape):
            src = list(idx)
            src[ax] += at
            values.append(x[tuple(src)].item())
        out.append(_from_lists(values, shape, np.asarray(x).dtype))
        at += k
    return tuple(out)


def split_oracle(x, axis, num_splits):
    n = x.shape[int(axis) % x.ndim]
    return _parts_along(x, axis, [n // int(num_splits)] * int(num_splits))


def split_v_oracle(x, size_splits, axis):
    sizes = [int(v) for v in size_splits]
    n = x.shape[int(axis) % x.ndim]
    sizes = [n - sum(v for v in sizes if v != -1) if v == -1 else v for v in sizes]
    return _parts_along(x, axis, sizes)


def transpose_oracle(x, perm):
    p = [int(v) for v in perm]
    out_shape = [x.shape[a] for a in p]
    values = []
    for idx in _multi_indices(out_shape):
        src = [0] * x.ndim
        for i, a in enumerate(p):
            src[a] = idx[i]
        values.append(x[tuple(src)].item())
    return _from_lists(values, out_shape, x.dtype)


def gather_oracle(x, indices, axis=0, batch_dims=0):
    np = _np()
    idx = np.asarray(indices)
    ax = int(axis) % x.ndim
    bd = int(batch_dims) % idx.ndim if batch_dims < 0 else int(batch_dims)
    out_shape = list(x.shape[:ax]) + list(idx.shape[bd:]) + list(x.shape[ax + 1:])
    values = []
    for o in _multi_indices(out_shape):
        lead = o[:ax]               # batch dims, then x's dims between batch_dims and axis
        coords = o[ax:ax + idx.ndim - bd]
        tail = o[ax + idx.ndim - bd:]
        pos = int(idx[tuple(lead[:bd]) + tuple(coords)])
        values.append(x[tuple(lead) + (pos,) + tuple(tail)].item())
    return _from_lists(values, out_shape, x.dtype)


def pack_oracle(xs, axis=0):
    np = _np()
    shape = list(np.shape(xs[0]))
    ax = int(axis) % (len(shape) + 1)
    out_shape = shape[:ax] + [len(xs)] + shape[ax:]
    values = [xs[idx[ax]][tuple(idx[:ax] + idx[ax + 1:])].item() for idx in _multi_indices(out_shape)]
    return _from_lists(values, out_shape, np.asarray(xs[0]).dtype)


def unpack_oracle(x, axis=0, num=None):
    ax = int(axis) % x.ndim
    shape = list(x.shape[:ax]) + list(x.shape[ax + 1:])
    return tuple(_from_lists([x[tuple(idx[:ax]) + (k,) + tuple(idx[ax:])].item() for idx in _multi_indices(shape)],
                             shape, x.dtype) for k in range(x.shape[ax]))


def _mirror(i, n, reflect):
    """Index ``i`` (may lie outside ``[0, n)``) folded back by mirroring at the borders."""
    while not 0 <= i < n:
        if i < 0:
            i = -i if reflect else -i - 1
        else:
            i = 2 * (n - 1) - i if reflect else 2 * n - 1 - i
    return i


def mirror_pad_oracle(x, paddings, mode="REFLECT"):
    np = _np()
    pads = [(int(a), int(b)) for a, b in np.asarray(paddings).tolist()]
    reflect = (mode.upper() if isinstance(mode, str) else ("REFLECT", "SYMMETRIC")[int(mode)]) == "REFLECT"
    out_shape = [n + a + b for n, (a, b) in zip(x.shape, pads)]
    values = [x[tuple(_mirror(i - a, n, reflect) for i, n, (a, _) in zip(idx, x.shape, pads))].item()
              for idx in _multi_indices(out_shape)]
    return _from_lists(values, out_shape, x.dtype)


def space_to_depth_oracle(x, block_size):
    bs = int(block_size)
    n, h, w, c = x.shape
    out_shape = [n, h // bs, w // bs, c * bs * bs]
    values = []
    for b, oy, ox, od in _multi_indices(out_shape):
        dy, rem = divmod(od, bs * c)
        dx, ch = divmod(rem, c)
        values.append(x[b, oy * bs + dy, ox * bs + dx, ch].item())
    return _from_lists(values, out_shape, x.dtype)


def depth_to_space_oracle(x, block_size):
    bs = int(block_size)
    n, h, w, d = x.shape
    c = d // (bs * bs)
    out_shape = [n, h * bs, w * bs, c]
    values = []
    for b, oy, ox, ch in _multi_indices(out_shape):
        values.append(x[b, oy // bs, ox // bs, ((oy % bs) * bs + ox % bs) * c + ch].item())
    return _from_lists(values, out_shape, x.dtype)
