"""Data movement of whole codes beyond :mod:`dspsim.kernels.data_movement`: REVERSE_V2, SPACE_TO_BATCH_ND,
BATCH_TO_SPACE_ND, BROADCAST_TO (index rules, run once on element numbers by
:func:`dspsim.kernels._plan.index_plan`), and the ops whose positions are data: GATHER_ND, EMBEDDING_LOOKUP,
DYNAMIC_UPDATE_SLICE, SELECT / SELECT_V2.

No arithmetic: the codes are copied, so the values are the same under every engine; what differs is what each
engine accepts (types, ranks, the value a padding holds: SPACE_TO_BATCH_ND pads with the output zero point in
LiteRT, ``SpaceToBatchParams.output_offset``, and with code 0 in tflite-micro, which never sets it).
Semantics are TensorFlow's (``tf.reverse``, ``tf.space_to_batch_nd``, ``tf.batch_to_space``, ``tf.gather_nd``,
``tf.nn.embedding_lookup``, ``lax.dynamic_update_slice``, ``tf.where``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["batch_to_space_nd", "broadcast_to", "dynamic_update_slice", "embedding_lookup", "gather_nd",
           "reverse_v2", "select", "select_v2", "space_to_batch_nd"]


def _axes(axes, rank, func):
    out = []
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise ValueError(f"{func}: axis {a} is out of range for rank {rank}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise ValueError(f"{func}: axes {out} repeat")
    return tuple(out)


def reverse_v2(x, axes):
    """``x`` reversed along every axis of ``axes`` (TFLite's REVERSE_V2)."""
    x = np.asarray(x)
    return np.flip(x, _axes(axes, x.ndim, "reverse_v2")).copy()


def _block(block, x, func, what):
    block = [int(b) for b in np.asarray(block).reshape(-1)]
    if not block or any(b < 1 for b in block) or len(block) > x.ndim - 1:
        raise ValueError(f"{func}: block_shape must hold 1 to rank - 1 positive values, got {block} for rank {x.ndim}")
    return block


def _pairs(p, m, func, what):
    p = np.asarray(p, np.int64)
    if p.shape != (m, 2) or (p < 0).any():
        raise ValueError(f"{func}: {what} must be a non-negative ({m}, 2) array, got shape {p.shape}")
    return p


def space_to_batch_nd(xs, block_shape, paddings):
    """TFLite SPACE_TO_BATCH_ND of ``xs = [x, pad]`` (``pad`` a 0-d array: the value a padding holds). The spatial
    dimensions ``1..m`` of ``x`` are padded, each split into blocks of ``block_shape``, the blocks moved to the batch
    (output batch = block number major, input batch minor)."""
    func = "space_to_batch_nd"
    x, pad = np.asarray(xs[0]), np.asarray(xs[1])
    block = _block(block_shape, x, func, "block_shape")
    m = len(block)
    p = _pairs(paddings, m, func, "paddings")
    padded = np.full((x.shape[0],) + tuple(int(x.shape[1 + k] + p[k].sum()) for k in range(m)) + x.shape[1 + m:],
                     pad.reshape(()), dtype=np.result_type(x, pad))
    padded[(slice(None),) + tuple(slice(int(p[k, 0]), int(p[k, 0]) + x.shape[1 + k]) for k in range(m))] = x
    for k in range(m):
        if padded.shape[1 + k] % block[k]:
            raise ValueError(f"{func}: padded dimension {1 + k} ({padded.shape[1 + k]}) is not a multiple of block "
                             f"{block[k]}")
    batch, rest = x.shape[0], x.shape[1 + m:]
    split = [batch] + [v for k in range(m) for v in (padded.shape[1 + k] // block[k], block[k])] + list(rest)
    y = padded.reshape(split)
    perm = [2 + 2 * k for k in range(m)] + [0] + [1 + 2 * k for k in range(m)] + list(range(1 + 2 * m, y.ndim))
    return y.transpose(perm).reshape([batch * int(np.prod(block))] + [padded.shape[1 + k] // block[k]
                                                                     for k in range(m)] + list(rest))


def batch_to_space_nd(x, block_shape, crops):
    """TFLite BATCH_TO_SPACE_ND: the inverse of :func:`space_to_batch_nd` (the batch split into blocks placed in the
    spatial dimensions), then ``crops`` cut from each spatial dimension."""
    func = "batch_to_space_nd"
    x = np.asarray(x)
    block = _block(block_shape, x, func, "block_shape")
    m = len(block)
    c = _pairs(crops, m, func, "crops")
    nb = int(np.prod(block))
    if x.shape[0] % nb:
        raise ValueError(f"{func}: batch {x.shape[0]} is not a multiple of the block size {nb}")
    batch, spatial, rest = x.shape[0] // nb, x.shape[1:1 + m], x.shape[1 + m:]
    y = x.reshape(list(block) + [batch] + list(spatial) + list(rest))
    perm = [m] + [v for k in range(m) for v in (m + 1 + k, k)] + list(range(2 * m + 1, y.ndim))
    y = y.transpose(perm).reshape([batch] + [spatial[k] * block[k] for k in range(m)] + list(rest))
    for k in range(m):
        if c[k].sum() > y.shape[1 + k]:
            raise ValueError(f"{func}: crops {c[k].tolist()} exceed dimension {1 + k} ({y.shape[1 + k]})")
    return y[(slice(None),) + tuple(slice(int(c[k, 0]), y.shape[1 + k] - int(c[k, 1])) for k in range(m))]


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` (numpy's rule, which TFLite's BROADCAST_TO follows), as a copy."""
    try:
        return np.broadcast_to(np.asarray(x), tuple(int(d) for d in np.asarray(shape).reshape(-1))).copy()
    except ValueError:
        raise ValueError(f"broadcast_to: shape {np.shape(x)} does not broadcast to "
                         f"{tuple(np.asarray(shape).reshape(-1).tolist())}") from None


def gather_nd(params, indices):
    """TFLite GATHER_ND: ``out[i...] = params[indices[i..., :]]`` (slices of the remaining dimensions). ValueError
    for an index out of range (LiteRT's kernel fails, tflite-micro's returns an error)."""
    params, indices = np.asarray(params), np.asarray(indices)
    if indices.ndim < 1 or indices.shape[-1] > params.ndim:
        raise ValueError(f"gather_nd: indices of shape {indices.shape} do not fit params of rank {params.ndim}")
    depth = indices.shape[-1]
    flat = indices.reshape(-1, depth).astype(np.int64)
    bounds = np.asarray(params.shape[:depth], np.int64)
    if flat.size and ((flat < 0) | (flat >= bounds)).any():
        raise ValueError(f"gather_nd: an index lies outside params' dimensions {tuple(bounds.tolist())}")
    out = params[tuple(flat.T)] if depth else np.broadcast_to(params, (flat.shape[0],) + params.shape)
    return np.ascontiguousarray(out).reshape(indices.shape[:-1] + params.shape[depth:])


def embedding_lookup(lookup, values):
    """TFLite EMBEDDING_LOOKUP: ``out[i] = values[lookup[i]]`` (rows of ``values``). ValueError for a lookup out of
    range (both engines fail: "Embedding Lookup: index out of bounds")."""
    lookup, values = np.asarray(lookup).reshape(-1), np.asarray(values)
    if lookup.size and ((lookup < 0) | (lookup >= values.shape[0])).any():
        raise ValueError(f"embedding_lookup: a lookup lies outside [0, {values.shape[0]})")
    return values[lookup.astype(np.int64)]


def dynamic_update_slice(operand, update, start):
    """TFLite DYNAMIC_UPDATE_SLICE: ``operand`` with ``update`` written at ``start``, each start index clamped to
    ``[0, operand_dim - update_dim]`` (XLA's rule, which both engines apply)."""
    operand, update = np.asarray(operand), np.asarray(update)
    start = np.asarray(start, np.int64).reshape(-1)
    if update.ndim != operand.ndim or start.size != operand.ndim or any(u > o for u, o in
                                                                        zip(update.shape, operand.shape)):
        raise ValueError(f"dynamic_update_slice: update {update.shape} and {start.size} start indices do not fit "
                         f"operand {operand.shape}")
    out = operand.copy()
    at = [int(min(max(s, 0), o - u)) for s, o, u in zip(start.tolist(), operand.shape, update.shape)]
    out[tuple(slice(a, a + u) for a, u in zip(at, update.shape))] = update
    return out


def select(condition, x, y):
    """TFLite SELECT: ``condition ? x : y`` elementwise; a rank-1 ``condition`` of x's first dimension picks
    whole rows (``reference_ops::RankOneSelect``)."""
    condition, x, y = np.asarray(condition), np.asarray(x), np.asarray(y)
    if x.shape != y.shape:
        raise ValueError(f"select: x {x.shape} and y {y.shape} differ")
    if condition.shape == x.shape:
        return np.where(condition, x, y)
    if condition.ndim == 1 and x.ndim >= 1 and condition.shape[0] == x.shape[0]:
        return np.where(condition.reshape((-1,) + (1,) * (x.ndim - 1)), x, y)
    raise ValueError(f"select: condition {condition.shape} is neither x's shape {x.shape} nor its first dimension")


def select_v2(condition, x, y):
    """TFLite SELECT_V2: ``condition ? x : y`` with the three broadcast together (numpy's rule)."""
    try:
        return np.where(condition, x, y)
    except ValueError:
        raise ValueError(f"select_v2: shapes {np.shape(condition)}, {np.shape(x)}, {np.shape(y)} do not "
                         "broadcast") from None
