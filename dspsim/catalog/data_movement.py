"""Descriptors of the data_movement family: STRIDED_SLICE, SLICE, SPLIT(_V), TRANSPOSE, GATHER, PACK, UNPACK, MIRROR_PAD, SPACE_TO_DEPTH, DEPTH_TO_SPACE, PAD, CONCATENATION.

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..kernels.data_movement import concatenation, pad
from ..kernels.data_movement import (
    depth_to_space, gather, mirror_pad, pack, slice_tensor, space_to_depth, split, split_v, strided_slice, transpose,
    unpack,
)
from .descriptor import Operator, SuiteCase, random_codes, register


def _codes(p, rng, shape=None):
    return random_codes(rng, p["shape"] if shape is None else shape, p["dtype"])


def _ss_case(p, rng):
    return dict(x=_codes(p, rng), begin=np.array(p["begin"], np.int32), end=np.array(p["end"], np.int32),
                strides=np.array(p["strides"], np.int32), begin_mask=p["begin_mask"], end_mask=p["end_mask"],
                ellipsis_mask=p["ellipsis_mask"], new_axis_mask=p["new_axis_mask"],
                shrink_axis_mask=p["shrink_axis_mask"], offset=p["offset"])


def _ss_examples():
    x = np.arange(-60, 60, dtype=np.int8).reshape(2, 3, 4, 5)
    i32 = lambda v: np.array(v, np.int32)  # noqa: E731
    return [dict(x=x, begin=i32([0, 1, -1, 4]), end=i32([2, 3, -5, 0]), strides=i32([1, 1, -2, -3])),
            dict(x=x.astype(np.int16), begin=i32([1, 0, 2]), end=i32([2, 0, 3]), strides=i32([1, 1, 1]),
                 ellipsis_mask=2, new_axis_mask=4, shrink_axis_mask=1),
            dict(x=x.astype(np.uint8), begin=i32([1, 2]), end=i32([1, 2]), strides=i32([1, 1]), offset=True)]


def _slice_case(p, rng):
    return dict(x=_codes(p, rng), begin=np.array(p["begin"], np.int32), size=np.array(p["size"], np.int32))


def _split_case(p, rng):
    return dict(x=_codes(p, rng), axis=p["axis"], num_splits=p["num_splits"])


def _split_v_case(p, rng):
    return dict(x=_codes(p, rng), size_splits=np.array(p["size_splits"], np.int32), axis=p["axis"])


def _transpose_case(p, rng):
    return dict(x=_codes(p, rng), perm=np.array(p["perm"], np.int32))


def _gather_case(p, rng):
    x = _codes(p, rng)
    ax = p["axis"] % x.ndim
    idx = rng.integers(0, x.shape[ax], size=tuple(p["indices_shape"])).astype(np.int32)
    return dict(x=x, indices=idx, axis=p["axis"], batch_dims=p["batch_dims"])


def _pack_case(p, rng):
    return dict(xs=[_codes(p, rng) for _ in range(p["inputs"])], axis=p["axis"])


def _unpack_case(p, rng):
    return dict(x=_codes(p, rng), axis=p["axis"])


def _mirror_pad_case(p, rng):
    return dict(x=_codes(p, rng), paddings=np.array(p["paddings"], np.int32), mode=p["mode"])


def _block_case(p, rng):
    return dict(x=_codes(p, rng), block_size=p["block_size"])


def _register_shape():
    dtypes = {"dtype": ("int8", "uint8", "int16")}
    i32 = lambda v: np.array(v, np.int32)  # noqa: E731
    x8 = np.arange(-60, 60, dtype=np.int8).reshape(2, 3, 4, 5)
    register(Operator(
        "strided_slice", strided_slice, ref.strided_slice_oracle, _ss_examples,
        "TFLite STRIDED_SLICE (LiteRT's index rules: masks, negative strides, clamping, offset)",
        generate=_ss_case,
        params={"dtype": "int8", "shape": [2, 5, 6, 4], "begin": [0, -1, 1, 0], "end": [2, 0, 5, 3],
                "strides": [1, -2, 2, 1], "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0,
                "shrink_axis_mask": 0, "offset": False},
        choices=dtypes,
        cases=(SuiteCase("strided-slice-negative-strides", {}, 1400),
               SuiteCase("strided-slice-masks", {"begin": [1, 0, 2], "end": [2, 0, 0], "strides": [1, 1, -1],
                                                 "ellipsis_mask": 2, "shrink_axis_mask": 1, "end_mask": 4}, 1401),
               SuiteCase("strided-slice-new-axis-clamped", {"begin": [-9, 0, 2, 1, 7], "end": [9, 0, 9, 4, -9],
                                                            "strides": [1, 1, 3, 1, -1], "new_axis_mask": 2},
                         1402),
               SuiteCase("strided-slice-offset", {"begin": [1, 1, 0, 1], "end": [1, 3, 4, 2], "strides": [1, 2, 3, 1],
                                                  "offset": True}, 1403))))
    register(Operator(
        "slice_tensor", slice_tensor, ref.slice_tensor_oracle,
        lambda: [dict(x=x8, begin=i32([1, 0, 2, 1]), size=i32([1, -1, 2, 3])),
                 dict(x=x8.astype(np.int16), begin=i32([0, 2, 0, 0]), size=i32([2, 1, -1, 5]))],
        "TFLite SLICE (size -1 takes the rest)", generate=_slice_case,
        params={"dtype": "int8", "shape": [3, 7, 5], "begin": [1, 2, 0], "size": [2, -1, 4]}, choices=dtypes,
        cases=(SuiteCase("slice-size-minus-one", {}, 1410),)))
    register(Operator(
        "split", split, ref.split_oracle,
        lambda: [dict(x=x8, axis=1, num_splits=3), dict(x=x8.astype(np.uint8), axis=-1, num_splits=5)],
        "TFLite SPLIT (equal parts)", generate=_split_case,
        params={"dtype": "int8", "shape": [2, 6, 4], "axis": 1, "num_splits": 3}, choices=dtypes,
        cases=(SuiteCase("split-axis1", {}, 1420), SuiteCase("split-negative-axis", {"axis": -1, "num_splits": 2},
                                                              1421))))
    register(Operator(
        "split_v", split_v, ref.split_v_oracle,
        lambda: [dict(x=x8, size_splits=i32([1, -1, 1]), axis=2), dict(x=x8, size_splits=i32([3, 0, 2]), axis=-1)],
        "TFLite SPLIT_V (sizes, one may be -1)", generate=_split_v_case,
        params={"dtype": "int8", "shape": [2, 6, 4], "size_splits": [1, -1, 2], "axis": 1}, choices=dtypes,
        cases=(SuiteCase("split-v-minus-one", {}, 1430),)))
    register(Operator(
        "transpose", transpose, ref.transpose_oracle,
        lambda: [dict(x=x8, perm=i32([0, 3, 1, 2])), dict(x=x8.astype(np.int16), perm=i32([3, 2, 1, 0]))],
        "TFLite TRANSPOSE", generate=_transpose_case,
        params={"dtype": "int8", "shape": [2, 3, 2, 4, 3], "perm": [0, 2, 4, 1, 3]}, choices=dtypes,
        cases=(SuiteCase("transpose-rank5", {}, 1440), SuiteCase("transpose-nchw", {"shape": [1, 3, 5, 4],
                                                                                   "perm": [0, 3, 1, 2]}, 1441))))
    register(Operator(
        "gather", gather, ref.gather_oracle,
        lambda: [dict(x=x8, indices=i32([2, 0, 2]), axis=1),
                 dict(x=x8, indices=i32([[1, 0], [2, 2]]), axis=1, batch_dims=1),
                 dict(x=x8.astype(np.int16), indices=i32([[4, 0], [1, 1]]), axis=-1)],
        "TFLite GATHER (axis, batch_dims)", generate=_gather_case,
        params={"dtype": "int8", "shape": [2, 5, 6, 4], "indices_shape": [2, 3], "axis": 2, "batch_dims": 1},
        choices=dtypes,
        cases=(SuiteCase("gather-batch-dims", {}, 1450),
               SuiteCase("gather-axis0-repeats", {"shape": [6, 4], "indices_shape": [9], "axis": 0, "batch_dims": 0},
                         1451))))
    register(Operator(
        "pack", pack, ref.pack_oracle,
        lambda: [dict(xs=[x8, x8[::-1]], axis=0), dict(xs=[x8.astype(np.uint8)] * 3, axis=-1)],
        "TFLite PACK", generate=_pack_case, params={"dtype": "int8", "shape": [3, 4], "inputs": 3, "axis": 1},
        choices=dtypes, cases=(SuiteCase("pack-axis1", {}, 1460),)))
    register(Operator(
        "unpack", unpack, ref.unpack_oracle,
        lambda: [dict(x=x8, axis=1), dict(x=x8.astype(np.int16), axis=-1)],
        "TFLite UNPACK", generate=_unpack_case, params={"dtype": "int8", "shape": [2, 3, 4], "axis": 1},
        choices=dtypes, cases=(SuiteCase("unpack-axis1", {}, 1470),)))
    register(Operator(
        "mirror_pad", mirror_pad, ref.mirror_pad_oracle,
        lambda: [dict(x=x8, paddings=i32([[1, 1], [2, 0], [0, 3], [4, 4]]), mode=m) for m in ("REFLECT", "SYMMETRIC")],
        "TFLite MIRROR_PAD (REFLECT, SYMMETRIC)", generate=_mirror_pad_case,
        params={"dtype": "int8", "shape": [1, 4, 5, 3], "paddings": [[0, 0], [3, 1], [1, 4], [0, 0]],
                "mode": "REFLECT"},
        choices=dict(dtypes, mode=("REFLECT", "SYMMETRIC")),
        cases=(SuiteCase("mirror-pad-reflect-max", {}, 1480),
               SuiteCase("mirror-pad-symmetric-max", {"mode": "SYMMETRIC", "paddings": [[0, 0], [4, 2], [5, 0],
                                                                                       [1, 3]]}, 1481))))
    register(Operator(
        "space_to_depth", space_to_depth, ref.space_to_depth_oracle,
        lambda: [dict(x=np.arange(-72, 72, dtype=np.int8).reshape(2, 4, 6, 3), block_size=2)],
        "TFLite SPACE_TO_DEPTH", generate=_block_case,
        params={"dtype": "int8", "shape": [2, 6, 3, 2], "block_size": 3}, choices=dtypes,
        cases=(SuiteCase("space-to-depth-b3", {}, 1490),)))
    register(Operator(
        "depth_to_space", depth_to_space, ref.depth_to_space_oracle,
        lambda: [dict(x=np.arange(-72, 72, dtype=np.int8).reshape(2, 3, 2, 12), block_size=2)],
        "TFLite DEPTH_TO_SPACE (DCR)", generate=_block_case,
        params={"dtype": "int8", "shape": [2, 2, 3, 18], "block_size": 3}, choices=dtypes,
        cases=(SuiteCase("depth-to-space-b3", {}, 1495),)))




_TINY = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)


def _pad_case(p, rng):
    return dict(x=random_codes(rng, p["shape"], p["dtype"]), paddings=np.asarray(p["paddings"], np.int32),
                pad_value=p["pad_value"])


def _concatenation_case(p, rng):
    shapes = [list(p["shape"]) for _ in range(p["inputs"])]
    for i, s in enumerate(shapes):
        s[p["axis"]] += i
    return dict(xs=[random_codes(rng, s, p["dtype"]) for s in shapes], axis=p["axis"])


def _register_pad_concatenation():
    register(Operator(
        "pad", pad, ref.pad_oracle,
        lambda: [dict(x=x, paddings=((0, 0), (1, 0), (0, 1), (0, 0)), pad_value=0)
                 for x in (_TINY, _TINY.astype(np.uint8), _TINY.astype(np.int16))],
        "TFLite PAD / PADV2 on codes", generate=_pad_case,
        params={"dtype": "int8", "shape": [2, 3, 4], "paddings": [[1, 0], [0, 2], [3, 1]], "pad_value": -5},
        choices={"dtype": ("int8", "uint8", "int16")},
        cases=(SuiteCase("pad-int8", {}, 1130), SuiteCase("pad-int16", {"dtype": "int16", "pad_value": -32768}, 1131))))
    register(Operator(
        "concatenation", concatenation, ref.concatenation_oracle,
        lambda: [dict(xs=[_TINY, _TINY], axis=3)],
        "TFLite int8 CONCATENATION (equal scales: a copy)", generate=_concatenation_case,
        params={"dtype": "int8", "shape": [2, 3, 4], "axis": 1, "inputs": 3},
        choices={"dtype": ("int8", "uint8", "int16")},
        cases=(SuiteCase("concatenation-axis1", {}, 1140),
               SuiteCase("concatenation-last-axis", {"axis": -1, "inputs": 2}, 1141))))


_register_shape()
_register_pad_concatenation()
