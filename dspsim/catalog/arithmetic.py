"""Descriptors of the arithmetic family: ADD, MUL, SUB, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM (and XNNPACK's ADD, LiteRT's int16 power-of-two ADD).

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..kernels.arithmetic.binary import (
    QUOTIENTS, maximum, minimum, squared_difference, sub, tflite_squared_difference_params, tflite_sub_params,
)
from ..kernels.arithmetic.elementwise import (
    add, mul, tflite_add_params, tflite_mul_multiplier, xnnpack_add, xnnpack_add_params,
)
from ..kernels.arithmetic.pot_add import PotAddParams, pot_add
from ..kernels.activation import tflite_activation_range
from .descriptor import Operator, SuiteCase, random_codes, register


def _case_range(p, dtype):
    return tflite_activation_range(p["activation"], p["output_scale"], p["output_zero_point"], dtype)


_BINARY = {"dtype": "int8", "shape1": [4, 67], "shape2": [67], "input1_scale": 0.05, "input2_scale": 0.03,
           "output_scale": 0.07, "input1_zero_point": 0, "input2_zero_point": 0, "output_zero_point": 0,
           "activation": "none"}
_BINARY_CHOICES = {"dtype": ("int8", "uint8"), "activation": ("none", "relu", "relu6", "relu_n1_to_1")}


def _binary_case(p, rng):
    lo, hi = _case_range(p, p["dtype"])
    return dict(x1=random_codes(rng, p["shape1"], p["dtype"]), x2=random_codes(rng, p["shape2"], p["dtype"]),
                input1_zero_point=p["input1_zero_point"], input2_zero_point=p["input2_zero_point"],
                output_zero_point=p["output_zero_point"], act_min=lo, act_max=hi)


def _add_case(p, rng):
    return dict(_binary_case(p, rng), params=tflite_add_params(p["input1_scale"], p["input2_scale"],
                                                               p["output_scale"]))


def _mul_case(p, rng):
    if p["engine"] == "xnnpack":
        q = dict(scale=np.float32(np.float32(np.float32(p["input1_scale"]) * np.float32(p["input2_scale"]))
                                  / np.float32(p["output_scale"])))
    else:
        m, s = tflite_mul_multiplier(p["input1_scale"], p["input2_scale"], p["output_scale"])
        q = dict(multiplier=m, shift=s)
    return dict(_binary_case(p, rng), **q)


def _xnnpack_add_case(p, rng):
    return dict(_binary_case(p, rng), params=xnnpack_add_params(p["input1_scale"], p["input2_scale"],
                                                                p["output_scale"]))


_TINY = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)


def _add_examples():
    return [dict(x1=x, x2=x[..., :1], params=tflite_add_params(0.1, 0.2, 0.3), input1_zero_point=1,
                 input2_zero_point=0, output_zero_point=2) for x in (_TINY, _TINY.astype(np.uint8))]


def _mul_examples():
    zps = dict(input1_zero_point=0, input2_zero_point=1, output_zero_point=0)
    return [dict(x1=x, x2=x, **zps, **q) for x in (_TINY, _TINY.astype(np.uint8))
            for q in (dict(multiplier=1 << 30, shift=-1), dict(scale=0.5))]


def _register_add_mul():
    register(Operator(
        "add", add, ref.add_oracle, _add_examples, "TFLite reference ADD (int8/uint8, broadcasting)",
        generate=_add_case, params=_BINARY, choices=_BINARY_CHOICES,
        cases=(SuiteCase("add-broadcast", {"input1_zero_point": -3, "output_zero_point": 5}, 1100),
               SuiteCase("add-uint8-relu6", {"dtype": "uint8", "input1_zero_point": 128, "input2_zero_point": 120,
                                             "output_zero_point": 0, "activation": "relu6"}, 1101),
               SuiteCase("add-ties-pow2", {"input1_scale": 0.0625, "input2_scale": 0.0625, "output_scale": 0.125,
                                           "shape1": [2, 3, 300], "shape2": [1, 1, 300]}, 1102),
               SuiteCase("add-saturate", {"output_scale": 0.01}, 1103))))
    register(Operator(
        "mul", mul, ref.mul_oracle, _mul_examples,
        "quantized MUL: TFLite reference (multiplier/shift) or XNNPACK fp32 (scale), broadcasting",
        generate=_mul_case, params={**_BINARY, "output_scale": 0.01, "engine": "tflm"},
        choices={**_BINARY_CHOICES, "engine": ("tflm", "xnnpack")},
        cases=(SuiteCase("mul-broadcast", {"input1_zero_point": 4, "output_zero_point": -6}, 1110),
               SuiteCase("mul-xnnpack", {"engine": "xnnpack", "input2_zero_point": 3}, 1111),
               SuiteCase("mul-uint8-ties", {"dtype": "uint8", "input1_zero_point": 128, "input2_zero_point": 128,
                                            "output_zero_point": 128, "input1_scale": 0.0625,
                                            "input2_scale": 0.0625, "output_scale": 0.125}, 1112),
               SuiteCase("mul-left-shift", {"output_scale": 0.0001}, 1113))))
    register(Operator(
        "xnnpack_add", xnnpack_add, ref.xnnpack_add_oracle,
        lambda: [dict(x1=_TINY, x2=_TINY, params=xnnpack_add_params(0.1, 0.2, 0.3), input1_zero_point=0,
                      input2_zero_point=0, output_zero_point=0)],
        "XNNPACK qs8-vadd (LiteRT's default interpreter)", generate=_xnnpack_add_case,
        params=_BINARY, choices={**_BINARY_CHOICES, "dtype": ("int8",)},
        cases=(SuiteCase("xnnpack-add-broadcast", {"input1_zero_point": -3, "output_zero_point": 5}, 1150),
               SuiteCase("xnnpack-add-ties", {"input1_scale": 0.0625, "input2_scale": 0.0625,
                                              "output_scale": 0.125}, 1151))))


_PAIR = {"dtype": "int8", "shape1": [2, 1, 3, 1, 40], "shape2": [1, 4, 1, 5, 40], "input1_scale": 0.05,
         "input2_scale": 0.03, "output_scale": 0.07, "input1_zero_point": 0, "input2_zero_point": 0,
         "output_zero_point": 0}
_PAIR_CHOICES = {"dtype": ("int8", "uint8", "int16")}


def _pair(p, rng):
    return dict(x1=random_codes(rng, p["shape1"], p["dtype"]), x2=random_codes(rng, p["shape2"], p["dtype"]))


def _zps(p):
    return dict(input1_zero_point=p["input1_zero_point"], input2_zero_point=p["input2_zero_point"],
                output_zero_point=p["output_zero_point"])


def _sub_case(p, rng):
    lo, hi = tflite_activation_range(p["activation"], p["output_scale"], p["output_zero_point"], p["dtype"])
    return dict(_pair(p, rng), **_zps(p), act_min=lo, act_max=hi,
                params=tflite_sub_params(p["input1_scale"], p["input2_scale"], p["output_scale"],
                                         quotient=p["quotient"], left_shift=15 if p["dtype"] == "int16" else 20))


def _squared_difference_case(p, rng):
    return dict(_pair(p, rng), **_zps(p), params=tflite_squared_difference_params(
        p["input1_scale"], p["input2_scale"], p["output_scale"], output_multiplier_below_one=False))


def _examples_rescaled(params):
    zps = dict(input1_zero_point=1, input2_zero_point=0, output_zero_point=2)
    return [dict(x1=x, x2=x[..., :1], params=params, **zps) for x in (_TINY, _TINY.astype(np.uint8))]


def _register_binary():
    register(Operator(
        "sub", sub, ref.sub_oracle, lambda: _examples_rescaled(tflite_sub_params(0.1, 0.2, 0.3)),
        "TFLite reference SUB (int8/uint8, broadcasting; double or float32 multiplier quotients)",
        generate=_sub_case, params={**_PAIR, "activation": "none", "quotient": "double"},
        choices={**_PAIR_CHOICES, "activation": ("none", "relu", "relu6", "relu_n1_to_1"), "quotient": QUOTIENTS},
        cases=(SuiteCase("sub-broadcast-rank5", {"input1_zero_point": -3, "output_zero_point": 5}, 1200),
               SuiteCase("sub-float32-quotients", {"quotient": "float32", "input2_zero_point": 7}, 1201),
               SuiteCase("sub-ties-pow2", {"input1_scale": 0.0625, "input2_scale": 0.0625, "output_scale": 0.125,
                                           "shape1": [3, 300], "shape2": [1, 300]}, 1202),
               SuiteCase("sub-uint8-relu", {"dtype": "uint8", "input1_zero_point": 128, "input2_zero_point": 120,
                                            "output_zero_point": 130, "activation": "relu"}, 1203),
               SuiteCase("sub-saturate", {"output_scale": 0.01}, 1204),
               SuiteCase("sub-int16", {"dtype": "int16", "input1_scale": 0.001, "input2_scale": 8.7e-6,
                                       "output_scale": 0.0006}, 1205))))
    register(Operator(
        "squared_difference", squared_difference, ref.squared_difference_oracle,
        lambda: _examples_rescaled(tflite_squared_difference_params(0.1, 0.2, 3.0)),
        "SQUARED_DIFFERENCE (int8: LiteRT / TFLM, broadcasting)",
        generate=_squared_difference_case, params={**_PAIR, "output_scale": 2.0}, choices=_PAIR_CHOICES,
        cases=(SuiteCase("squared-difference-broadcast", {"input1_zero_point": -3, "output_zero_point": -128}, 1210),
               SuiteCase("squared-difference-ties-pow2", {"input1_scale": 0.0625, "input2_scale": 0.0625,
                                                          "output_scale": 0.5, "output_zero_point": -100}, 1211),
               SuiteCase("squared-difference-left-shift-wraps", {"output_scale": 2e-7, "input2_zero_point": 9}, 1212))))
    for name, fn, oracle in (("maximum", maximum, ref.maximum_oracle), ("minimum", minimum, ref.minimum_oracle)):
        register(Operator(
            name, fn, oracle, lambda: [dict(x1=x, x2=x[..., :1]) for x in (_TINY, _TINY.astype(np.uint8))],
            f"TFLite {name.upper()} on codes (int8/uint8, broadcasting)",
            generate=_pair, params={"dtype": "int8", "shape1": [3, 1, 2, 1, 90], "shape2": [1, 4, 1, 5, 90]},
            choices=_PAIR_CHOICES,
            cases=(SuiteCase(f"{name}-broadcast-rank5", {}, 1220 + (name == "minimum")),
                   SuiteCase(f"{name}-uint8", {"dtype": "uint8", "shape1": [300], "shape2": [1]}, 1222 +
                             (name == "minimum")))))


def _pot_add_case(p, rng):
    return dict(x1=random_codes(rng, p["shape"], "int16"), x2=random_codes(rng, p["shape"], "int16"),
                params=PotAddParams(p["input1_shift"], p["input2_shift"]), act_min=p["act_min"], act_max=p["act_max"],
                subtract=bool(p["subtract"]))


def _register_int16():
    x = np.array([[-32768, -3, -2, -1], [0, 1, 2, 32767]], np.int16)
    register(Operator(
        "pot_add", pot_add, ref.pot_add_oracle,
        lambda: [dict(x1=x, x2=x[::-1].copy(), params=PotAddParams(0, -1), subtract=sub) for sub in (False, True)],
        "LiteRT int16 ADD on power-of-two scales (shift, saturating add)", generate=_pot_add_case,
        params={"shape": [3, 257], "input1_shift": 0, "input2_shift": -1, "act_min": -32768, "act_max": 32767,
                "subtract": False},
        cases=(SuiteCase("pot-add-saturate", {"input2_shift": 0}, 1900),
               SuiteCase("pot-add-ties-shift3-relu", {"input1_shift": -3, "input2_shift": 0, "act_min": 0}, 1901),
               SuiteCase("pot-sub-saturate-shift2", {"input1_shift": 0, "input2_shift": -2, "subtract": True}, 1902),
               SuiteCase("pot-sub-ties-shift1-first", {"input1_shift": -1, "input2_shift": 0, "subtract": True},
                         1903))))


_register_add_mul()
_register_binary()
_register_int16()
