"""Descriptors of the activation family: RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU (TFLite, TFLM, PyTorch).

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..kernels.activation import xnnpack_leaky_relu
from ..kernels.activation import NegativeAlpha, leaky_relu, relu, relu6, relu_n1_to_1, tflm_relu6, torch_relu
from .descriptor import Operator, SuiteCase, random_codes, register

_RELU_PARAMS = {"dtype": "int8", "shape": [3, 97], "input_scale": 0.05, "output_scale": 0.04, "input_zero_point": 0,
                "output_zero_point": 0, "rounding": "double"}
_RELU_CHOICES = {"dtype": ("int8", "uint8", "int16"), "rounding": ("double", "single")}


def _scaled_case(p, rng):
    return dict(x=random_codes(rng, p["shape"], p["dtype"]), input_scale=p["input_scale"],
                input_zero_point=p["input_zero_point"], output_scale=p["output_scale"],
                output_zero_point=p["output_zero_point"], rounding=p["rounding"])


def _scaled_examples():
    x = np.arange(-4, 4, dtype=np.int8)
    return [dict(x=xx, input_scale=0.1, input_zero_point=0, output_scale=0.05, output_zero_point=0, rounding=r)
            for xx in (x, x.astype(np.uint8), x.astype(np.int16)) for r in ("double", "single")]


def _register_relu():
    register(Operator(
        "relu", relu, ref.relu_oracle, lambda: [dict(x=xx, input_zero_point=0) for xx in
                                         (np.arange(-4, 4, dtype=np.int8), np.arange(4, dtype=np.uint8))],
        "TFLite ReLU / ReLU6 with requantization; schemes: double vs single rounding", study="relu",
        cases=(SuiteCase("relu-int8", {"input_zero_point": -10, "output_zero_point": -128,
                                       "input_scale": 0.05, "output_scale": 0.03}, 500),
               SuiteCase("relu-int8-single", {"input_zero_point": -10, "output_zero_point": -128,
                                              "input_scale": 0.05, "output_scale": 0.03, "scheme": "single"}, 500),
               SuiteCase("relu6-int8", {"activation": "relu6", "input_zero_point": 5, "output_zero_point": -128,
                                        "input_scale": 0.1, "output_scale": 0.05}, 501),
               SuiteCase("relu-int8-ties", {"multiplier": 1073741824, "shift": -1, "input_zero_point": 0,
                                            "output_zero_point": 0}, 502),
               SuiteCase("relu-int8-left-shift", {"input_scale": 0.2, "output_scale": 0.03, "input_zero_point": 3,
                                                  "output_zero_point": -100}, 503),
               SuiteCase("relu-n1-to-1-ties", {"activation": "relu_n1_to_1", "multiplier": 1073741824,
                                               "shift": -1, "input_zero_point": 0, "output_zero_point": 0}, 506),
               SuiteCase("relu-uint8", {"dtype": "uint8", "input_zero_point": 128, "output_zero_point": 0,
                                        "input_scale": 0.05, "output_scale": 0.03}, 504),
               SuiteCase("relu-int16", {"dtype": "int16", "input_scale": 0.001, "output_scale": 0.0007}, 505))))
    register(Operator(
        "relu6", relu6, ref.relu6_oracle, _scaled_examples, "TFLite RELU6 from scales", generate=_scaled_case,
        params=_RELU_PARAMS, choices=_RELU_CHOICES,
        cases=(SuiteCase("relu6-scaled", {"input_zero_point": 5, "output_zero_point": -128}, 1300),
               SuiteCase("relu6-scaled-single-uint8", {"dtype": "uint8", "rounding": "single",
                                                       "input_zero_point": 128}, 1301))))
    register(Operator(
        "relu_n1_to_1", relu_n1_to_1, ref.relu_n1_to_1_oracle, _scaled_examples, "TFLite RELU_N1_TO_1 from scales",
        generate=_scaled_case, params=_RELU_PARAMS, choices=_RELU_CHOICES,
        cases=(SuiteCase("relu-n1-to-1-scaled", {"output_scale": 0.01, "output_zero_point": 3}, 1310),)))
    register(Operator(
        "leaky_relu", leaky_relu, ref.leaky_relu_oracle,
        lambda: [dict(e, alpha=a, quotient=qt) for e in _scaled_examples() for qt in ("float32", "double")
                 for a in (0.1, -0.3)] + [dict(_scaled_examples()[0], alpha=-0.3, negative_alpha="signed_multiplier")],
        "TFLite LEAKY_RELU (two multipliers by the sign of q - zi)",
        generate=lambda p, rng: dict(_scaled_case(p, rng), alpha=p["alpha"], negative_alpha=p["negative_alpha"]),
        params={**_RELU_PARAMS, "alpha": 0.2, "negative_alpha": "negate"},
        choices={**_RELU_CHOICES, "negative_alpha": tuple(m.value for m in NegativeAlpha)},
        cases=(SuiteCase("leaky-relu", {"input_zero_point": -5, "output_zero_point": 2}, 1320),
               SuiteCase("leaky-relu-int16-left-shift", {"dtype": "int16", "input_scale": 0.002,
                                                         "output_scale": 0.0005}, 1321),
               SuiteCase("leaky-relu-negative-alpha-ties", {"alpha": -0.5, "input_scale": 0.1, "output_scale": 0.1,
                                                            "input_zero_point": 3, "output_zero_point": -2}, 1322),
               SuiteCase("leaky-relu-int16-negative-alpha-signed", {"dtype": "int16", "alpha": -0.5,
                                                                    "negative_alpha": "signed_multiplier"}, 1323),
               SuiteCase("leaky-relu-alpha-above-one", {"alpha": 1.7, "output_scale": 0.2}, 1324))))
    register(Operator(
        "tflm_relu6", tflm_relu6, ref.tflm_relu6_oracle,
        lambda: [dict(x=xx, input_scale=0.1, input_zero_point=0)
                 for xx in (np.arange(-4, 4, dtype=np.int8), np.arange(4, dtype=np.uint8))],
        "TFLite Micro RELU6 (a clamp in the input domain)",
        generate=lambda p, rng: {k: v for k, v in _scaled_case(p, rng).items()
                                 if k in ("x", "input_scale", "input_zero_point")},
        params=_RELU_PARAMS, choices=_RELU_CHOICES,
        cases=(SuiteCase("tflm-relu6", {"input_zero_point": -20}, 1330),)))
    register(Operator(
        "torch_relu", torch_relu, ref.torch_relu_oracle,
        lambda: [dict(x=np.arange(-4, 4, dtype=np.int8), zero_point=1)], "PyTorch quantized::relu",
        generate=lambda p, rng: dict(x=_scaled_case(p, rng)["x"], zero_point=p["output_zero_point"]),
        params=_RELU_PARAMS, choices=_RELU_CHOICES,
        cases=(SuiteCase("torch-relu-uint8", {"dtype": "uint8", "output_zero_point": 128}, 1340),)))




_TINY = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)


def _xnnpack_leaky_relu_case(p, rng):
    return dict(x=random_codes(rng, p["shape"], "int8"), alpha=p["alpha"], input_scale=p["input_scale"],
                input_zero_point=p["input_zero_point"], output_scale=p["output_scale"],
                output_zero_point=p["output_zero_point"])


_UNARY_SCALES = {"shape": [3, 97], "input_scale": 0.05, "output_scale": 0.04, "input_zero_point": 0,
                 "output_zero_point": 0}


def _register_xnnpack_leaky_relu():
    register(Operator(
        "xnnpack_leaky_relu", xnnpack_leaky_relu, ref.xnnpack_leaky_relu_oracle,
        lambda: [dict(x=_TINY, alpha=0.1, input_scale=0.1, input_zero_point=0, output_scale=0.1, output_zero_point=0)],
        "XNNPACK qs8-vlrelu (LEAKY_RELU)",
        generate=_xnnpack_leaky_relu_case, params={**_UNARY_SCALES, "alpha": 0.2},
        cases=(SuiteCase("xnnpack-leaky-relu", {"input_zero_point": -5, "output_zero_point": 2}, 1170),)))


_register_relu()
_register_xnnpack_leaky_relu()
