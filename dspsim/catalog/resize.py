"""Descriptors of the resize family: RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR.

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..kernels.resize import (
    float_resize_bilinear,
    optimized_resize_nearest_neighbor,
    resize_bilinear,
    resize_nearest_neighbor,
    xnnpack_resize_bilinear,
)
from .descriptor import Operator, SuiteCase, random_codes, register


def _resize_case(p, rng):
    kw = dict(x=random_codes(rng, p["shape"], p["dtype"]), size=np.array(p["size"], np.int32),
              align_corners=p["align_corners"], half_pixel_centers=p["half_pixel_centers"])
    for key in ("rounding", "premultiplied"):
        if key in p:
            kw[key] = p[key]
    return kw


def _examples(dtypes, extra=None):
    def make():
        out = []
        for dt in dtypes:
            offset = 0 if np.dtype(dt).kind == "u" else 128
            x = (np.arange(2 * 4 * 5 * 3).reshape(2, 4, 5, 3) % 256 - offset).astype(dt)
            for size, ac, hp in (((7, 10), False, False), ((3, 2), True, False), ((9, 4), False, True)):
                kw = dict(x=x, size=np.array(size, np.int32), align_corners=ac, half_pixel_centers=hp)
                out.append(dict(kw, **(extra or {})))
        return out

    return make


def _register_resize():
    base = {"dtype": "int8", "shape": [2, 5, 7, 3], "size": [9, 13], "align_corners": False,
            "half_pixel_centers": False}
    modes = (SuiteCase("{}-legacy", {}, 0), SuiteCase("{}-align-corners", {"align_corners": True}, 1),
             SuiteCase("{}-half-pixel", {"half_pixel_centers": True}, 2),
             SuiteCase("{}-half-pixel-down", {"half_pixel_centers": True, "size": [3, 2]}, 3))

    def cases(prefix, seed):
        return tuple(SuiteCase(c.name.format(prefix), c.params, seed + c.seed) for c in modes)

    register(Operator(
        "resize_nearest_neighbor", resize_nearest_neighbor, ref.resize_nearest_neighbor_oracle,
        _examples((np.int8, np.uint8, np.int16)), "TFLite RESIZE_NEAREST_NEIGHBOR, reference (float32 index rule)",
        generate=_resize_case, params=base, choices={"dtype": ("int8", "uint8", "int16")},
        cases=cases("resize-nearest", 1500)))
    register(Operator(
        "optimized_resize_nearest_neighbor", optimized_resize_nearest_neighbor,
        ref.optimized_resize_nearest_neighbor_oracle, _examples((np.int8, np.uint8)),
        "TFLite RESIZE_NEAREST_NEIGHBOR, LiteRT's optimized kernel (16.16 fixed-point index)",
        generate=_resize_case, params=base, choices={"dtype": ("int8", "uint8")},
        cases=cases("resize-nearest-optimized", 1510)))
    register(Operator(
        "resize_bilinear", resize_bilinear, ref.resize_bilinear_oracle,
        lambda: _examples((np.int8, np.int16))() + _examples((np.int8,), {"rounding": "single"})(),
        "TFLite RESIZE_BILINEAR, reference integer kernel (10-bit weights, LiteRT and TFLM)",
        generate=_resize_case, params=dict(base, rounding="double"),
        choices={"dtype": ("int8", "int16"), "rounding": ("double", "single")},
        cases=cases("resize-bilinear", 1520) + (SuiteCase("resize-bilinear-int16-single", {
            "dtype": "int16", "rounding": "single", "half_pixel_centers": True}, 1524),)))
    register(Operator(
        "xnnpack_resize_bilinear", xnnpack_resize_bilinear, ref.xnnpack_resize_bilinear_oracle,
        _examples((np.int8, np.uint8)), "TFLite RESIZE_BILINEAR as XNNPACK computes it (11-bit weights)",
        generate=_resize_case, params=base, choices={"dtype": ("int8", "uint8")},
        cases=cases("resize-bilinear-xnnpack", 1530)))
    register(Operator(
        "float_resize_bilinear", float_resize_bilinear, ref.float_resize_bilinear_oracle,
        lambda: _examples((np.uint8,))() + _examples((np.uint8,), {"premultiplied": True})(),
        "TFLite RESIZE_BILINEAR on uint8 as LiteRT computes it in float32 (reference, or the optimized kernel's "
        "premultiplied weights and 8.8 fixed-point 8x upsampling)",
        generate=_resize_case, params=dict(base, dtype="uint8", premultiplied=False),
        choices={"dtype": ("uint8",), "premultiplied": (False, True)},
        cases=cases("resize-bilinear-uint8", 1540) + (SuiteCase("resize-bilinear-uint8-888", {
            "premultiplied": True, "half_pixel_centers": True, "shape": [1, 2, 3, 8], "size": [16, 24]}, 1544),)))


_register_resize()
