"""Descriptors of the reduce family: MEAN, SUM, REDUCE_MAX, ARG_MAX.

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..fixedpoint import quantize_multiplier
from ..kernels.reduce.mean import mean, xnnpack_mean
from ..kernels.reduce.sum import reduce_sum, xnnpack_sum
from ..kernels.reduce.select import arg_max, reduce_max
from .descriptor import Operator, SuiteCase, random_codes, register

_SUM = {"dtype": "int8", "shape": [2, 5, 7, 3], "axis": [1, 2], "keep_dims": True, "input_scale": 0.05,
        "output_scale": 0.9, "input_zero_point": 0, "output_zero_point": 0, "codes_as_uint8": False}
_TINY = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)


def _case_x(p, rng):
    return dict(x=random_codes(rng, p["shape"], p["dtype"]), axis=np.asarray(p["axis"], np.int32),
                input_zero_point=p["input_zero_point"], output_zero_point=p["output_zero_point"],
                keep_dims=p["keep_dims"])


def _sum_case(p, rng):
    m, s = quantize_multiplier(np.float64(np.float32(p["input_scale"])) / np.float64(np.float32(p["output_scale"])))
    return dict(_case_x(p, rng), multiplier=m, shift=s, codes_as_uint8=p["codes_as_uint8"])


def _register_reduce():
    register(Operator(
        "reduce_sum", reduce_sum, ref.reduce_sum_oracle,
        lambda: [dict(x=x, axis=(1, 2), input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0,
                      codes_as_uint8=u) for x, u in ((_TINY, False), (_TINY.astype(np.uint8), False), (_TINY, True))],
        "TFLite quantized SUM (QuantizedMeanOrSum; LiteRT BUILTIN_REF's uint8 defect as an option)",
        generate=_sum_case, params=_SUM, choices={"dtype": ("int8", "uint8")},
        cases=(SuiteCase("sum-spatial", {"input_zero_point": -7, "output_zero_point": 3}, 1230),
               SuiteCase("sum-litert-ref-uint8-defect", {"codes_as_uint8": True, "input_zero_point": -7,
                                                         "output_zero_point": 3}, 1231),
               SuiteCase("sum-last-axis-uint8", {"dtype": "uint8", "axis": [-1], "keep_dims": False,
                                                 "input_zero_point": 128, "output_zero_point": 128,
                                                 "output_scale": 0.1}, 1232),
               SuiteCase("sum-left-shift-saturate", {"output_scale": 0.01, "input_zero_point": 5}, 1233),
               SuiteCase("sum-ties-pow2", {"input_scale": 0.0625, "output_scale": 1.0, "axis": [0]}, 1234))))
    register(Operator(
        "xnnpack_sum", xnnpack_sum, ref.xnnpack_sum_oracle,
        lambda: [dict(x=_TINY, axis=(1, 2), input_scale=0.1, input_zero_point=0, output_scale=0.1,
                      output_zero_point=0)],
        "XNNPACK sum_nd on int8", generate=lambda p, rng: dict(_case_x(p, rng), input_scale=p["input_scale"],
                                                               output_scale=p["output_scale"]),
        params={k: v for k, v in _SUM.items() if k != "codes_as_uint8"}, choices={"dtype": ("int8",)},
        cases=(SuiteCase("xnnpack-sum", {"input_zero_point": -7, "output_zero_point": 3}, 1240),
               SuiteCase("xnnpack-sum-ties-pow2", {"input_scale": 0.0625, "output_scale": 1.0}, 1241))))


def _ties(p, rng):
    x = random_codes(rng, p["shape"], p["dtype"])
    if p.get("ties"):  # few distinct codes: many ties
        info = np.iinfo(x.dtype)
        x = rng.choice(np.array([info.min, -1 if info.min < 0 else 1, info.max], x.dtype), size=x.shape)
    return x


def _register_select():
    x = np.array([[3, -128, 127, 127], [0, 0, -5, -128]], np.int8)
    dtypes = ("int8", "uint8", "int16", "int32")
    register(Operator(
        "reduce_max", reduce_max, ref.reduce_max_oracle,
        lambda: [dict(x=x.astype(d), axis=a, keep_dims=k) for d in dtypes for a, k in
                 ((np.array([1]), False), (np.array([0, -1]), True), (np.array([], np.int32), False))],
        "TFLite REDUCE_MAX on codes", generate=lambda p, rng: dict(x=_ties(p, rng), axis=np.array(p["axis"]),
                                                                     keep_dims=p["keep_dims"]),
        params={"dtype": "int8", "shape": [2, 3, 4, 5], "axis": [1, -2], "keep_dims": True, "ties": False},
        choices={"dtype": dtypes},
        cases=(SuiteCase("reduce-max-keep", {}, 1600), SuiteCase("reduce-max-all-int16", {
            "dtype": "int16", "axis": [0, 1, 2, 3], "keep_dims": False}, 1601))))
    register(Operator(
        "arg_max", arg_max, ref.arg_max_oracle,
        lambda: [dict(x=x.astype(d), axis=a, output_type=o) for d in dtypes for a in (0, -1)
                 for o in ("int32", "int64")],
        "TFLite ARG_MAX on codes (first index on ties)",
        generate=lambda p, rng: dict(x=_ties(p, rng), axis=p["axis"], output_type=p["output_type"]),
        params={"dtype": "int8", "shape": [3, 4, 6], "axis": 2, "output_type": "int32", "ties": True},
        choices={"dtype": dtypes, "output_type": ("int32", "int64")},
        cases=(SuiteCase("arg-max-ties", {}, 1610),
               SuiteCase("arg-max-int64-axis0", {"axis": 0, "output_type": "int64", "ties": False}, 1611))))






def _reduce_case(p, rng):
    return dict(x=random_codes(rng, p["shape"], p["dtype"]), axis=np.asarray(p["axis"], np.int32),
                input_zero_point=p["input_zero_point"], output_zero_point=p["output_zero_point"],
                keep_dims=p["keep_dims"])


def _mean_case(p, rng):
    m, s = quantize_multiplier(np.float64(np.float32(p["input_scale"])) / np.float64(np.float32(p["output_scale"])))
    return dict(_reduce_case(p, rng), multiplier=m, shift=s)


def _xnnpack_mean_case(p, rng):
    return dict(_reduce_case(p, rng), input_scale=p["input_scale"], output_scale=p["output_scale"])


_REDUCE = {"dtype": "int8", "shape": [2, 5, 7, 3], "axis": [1, 2], "keep_dims": True, "input_scale": 0.05,
           "output_scale": 0.04, "input_zero_point": 0, "output_zero_point": 0}


def _register_mean():
    register(Operator(
        "mean", mean, ref.mean_oracle,
        lambda: [dict(x=x, axis=(1, 2), input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
                 for x in (_TINY, _TINY.astype(np.uint8))],
        "TFLite reference MEAN (QuantizedMeanOrSum): n folded into the multiplier",
        generate=_mean_case, params=_REDUCE, choices={"dtype": ("int8", "uint8")},
        cases=(SuiteCase("mean-spatial", {"input_zero_point": -7, "output_zero_point": 3}, 1120),
               SuiteCase("mean-last-axis-uint8", {"dtype": "uint8", "axis": [-1], "keep_dims": False,
                                                  "input_zero_point": 128, "output_zero_point": 128}, 1121),
               SuiteCase("mean-non-pow2-count", {"shape": [1, 7, 9, 5], "output_scale": 0.01}, 1122))))
    register(Operator(
        "xnnpack_mean", xnnpack_mean, ref.xnnpack_mean_oracle,
        lambda: [dict(x=_TINY, axis=(1, 2), input_scale=0.1, input_zero_point=0, output_scale=0.1,
                      output_zero_point=0)],
        "XNNPACK mean_nd on int8", generate=_xnnpack_mean_case, params=_REDUCE, choices={"dtype": ("int8",)},
        cases=(SuiteCase("xnnpack-mean", {"input_zero_point": -7, "output_zero_point": 3}, 1180),)))


_register_reduce()
_register_select()
_register_mean()
