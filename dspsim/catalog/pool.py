"""Descriptors of the pool family: AVERAGE_POOL_2D, MAX_POOL_2D.

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..kernels.pool import average_pool2d, max_pool2d
from .descriptor import Operator, SuiteCase, random_codes, register


def _pool_case(p, rng):
    lo = None if p["act_min"] is None else p["act_min"]
    return dict(x=random_codes(rng, p["shape"], p["dtype"]), filter_size=tuple(p["filter_size"]),
                stride=tuple(p["stride"]), padding=p["padding"], act_min=lo, act_max=p["act_max"])


def _pool_examples():
    x = np.arange(-8, 8, dtype=np.int8).reshape(1, 4, 2, 2)
    return [dict(x=xx, filter_size=2, padding=pad) for xx in (x, x.astype(np.uint8), x.astype(np.int16))
            for pad in ("VALID", "SAME")]


def _register_pool():
    params = {"dtype": "int8", "shape": [2, 9, 8, 3], "filter_size": [3, 2], "stride": [2, 2], "padding": "SAME",
              "act_min": None, "act_max": None}
    choices = {"dtype": ("int8", "uint8", "int16"), "padding": ("VALID", "SAME")}
    register(Operator(
        "average_pool2d", average_pool2d, ref.average_pool2d_oracle, _pool_examples,
        "TFLite AVERAGE_POOL_2D on codes (padding not counted, ties away from zero)", generate=_pool_case,
        params=params, choices=choices,
        cases=(SuiteCase("average-pool-same", {}, 1200),
               SuiteCase("average-pool-ties-int16", {"dtype": "int16", "filter_size": [2, 1], "stride": [1, 1],
                                                     "padding": "VALID"}, 1201),
               SuiteCase("average-pool-relu6", {"act_min": 0, "act_max": 60}, 1202))))
    register(Operator(
        "max_pool2d", max_pool2d, ref.max_pool2d_oracle, _pool_examples, "TFLite MAX_POOL_2D on codes",
        generate=_pool_case, params=params, choices=choices,
        cases=(SuiteCase("max-pool-same", {}, 1210),
               SuiteCase("max-pool-uint8-valid", {"dtype": "uint8", "padding": "VALID"}, 1211))))


_register_pool()
