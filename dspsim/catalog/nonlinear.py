"""Descriptors of the nonlinear family: LOGISTIC, TANH, HARD_SWISH, PRELU, RSQRT, L2_NORMALIZATION, SOFTMAX, LOG_SOFTMAX (int8 and int16).

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..kernels.nonlinear.pointwise import (
    LutFunction, hard_swish, lookup_table, prelu, rsqrt, tflite_hard_swish_params, tflite_lut_table,
    tflite_prelu_params, tflite_rsqrt_multiplier, tflm_gemmlowp_input_params, tflm_logistic, tflm_tanh,
    xnnpack_lut_table,
)
from ..kernels.nonlinear.int16 import fixedpoint16_logistic, fixedpoint16_tanh, int16_logistic, int16_tanh
from ..kernels.nonlinear.normalization import l2_normalization
from ..kernels.nonlinear.softmax import (
    log_softmax, optimized_softmax, optimized_softmax_table, softmax, tflite_int16_softmax_params,
    tflite_log_softmax_params, tflite_softmax_params,
)
from .descriptor import Operator, SuiteCase, random_codes, register

_SCALES = {"input_scale": 0.0625, "input_zero_point": 0, "output_scale": 1.0 / 256, "output_zero_point": -128}


def _every_code(p, rng):
    return random_codes(rng, p["shape"], "int8")


def _lut_case(p, rng):
    build = xnnpack_lut_table if p["recipe"] == "xnnpack" else tflite_lut_table
    table = build(p["function"], input_scale=p["input_scale"], input_zero_point=p["input_zero_point"],
                  output_scale=p["output_scale"], output_zero_point=p["output_zero_point"])
    return dict(x=_every_code(p, rng), table=table)


def _gemmlowp_case(p, rng):
    q = tflm_gemmlowp_input_params(p["input_scale"])
    return dict(x=_every_code(p, rng), input_zero_point=p["input_zero_point"], input_multiplier=q.input_multiplier,
                input_left_shift=q.input_left_shift, input_range_radius=q.input_range_radius)


def _hard_swish_case(p, rng):
    return dict(x=_every_code(p, rng), params=tflite_hard_swish_params(
        input_scale=p["input_scale"], input_zero_point=p["input_zero_point"], output_scale=p["output_scale"],
        output_zero_point=p["output_zero_point"]))


def _prelu_case(p, rng):
    x = _every_code(p, rng)
    alpha = random_codes(rng, p["shape"][-1:], "int8")
    return dict(x=x, alpha=alpha, params=tflite_prelu_params(
        input_scale=p["input_scale"], input_zero_point=p["input_zero_point"], alpha_scale=p["alpha_scale"],
        alpha_zero_point=p["alpha_zero_point"], output_scale=p["output_scale"],
        output_zero_point=p["output_zero_point"]))


def _register_nonlinear():
    rng = np.random.default_rng(0)
    base = {"shape": [4, 256], **_SCALES}
    register(Operator(
        "lookup_table", lookup_table, ref.lookup_table_oracle,
        lambda: [_lut_case({**base, "shape": [8], "function": "tanh", "recipe": "tflite"}, rng)],
        "int8 lookup table (LiteRT LOGISTIC/TANH/EXP, TFLM ELU, XNNPACK sigmoid/tanh) filled with float math",
        generate=_lut_case, params={**base, "function": "logistic", "recipe": "tflite"},
        choices={"function": tuple(f.value for f in LutFunction), "recipe": ("tflite", "xnnpack")},
        cases=(SuiteCase("lut-logistic-every-code", {"input_scale": 0.059388499706983566, "input_zero_point": 8},
                         2100),
               SuiteCase("lut-tanh-ties", {"function": "tanh", "output_scale": 1.0 / 128, "output_zero_point": 0},
                         2101),
               SuiteCase("lut-xnnpack-sigmoid-odd-scale", {"function": "xnnpack_sigmoid", "recipe": "xnnpack",
                                                           "output_scale": 0.0029296875}, 2102),
               SuiteCase("lut-tflm-elu", {"function": "tflm_elu", "output_scale": 0.04167062044143677,
                                          "output_zero_point": -104}, 2103),
               SuiteCase("lut-tflm-elu-half-ties", {"function": "tflm_elu", "input_scale": 0.05, "input_zero_point": -3,
                                                    "output_scale": 0.1, "output_zero_point": 7}, 2104),
               SuiteCase("lut-xnnpack-elu-half-ties", {"function": "xnnpack_elu", "recipe": "xnnpack",
                                                       "input_scale": 0.05, "input_zero_point": -3,
                                                       "output_scale": 0.1, "output_zero_point": 7}, 2105))))
    for name, kernel, oracle, doc in (("tflm_logistic", tflm_logistic, ref.tflm_logistic_oracle,
                                       "TFLM int8 LOGISTIC (gemmlowp fixed point)"),
                                      ("tflm_tanh", tflm_tanh, ref.tflm_tanh_oracle,
                                       "TFLM int8 TANH (gemmlowp fixed point, output steps 1/128)")):
        register(Operator(
            name, kernel, oracle, lambda: [_gemmlowp_case({**base, "shape": [8]}, rng)], doc,
            generate=_gemmlowp_case, params=base,
            cases=(SuiteCase(f"{name}-every-code", {"input_scale": 0.0161093808710575, "input_zero_point": 3}, 2110),
                   SuiteCase(f"{name}-pot-scale", {"input_scale": 0.125, "input_zero_point": 17}, 2111),
                   SuiteCase(f"{name}-wide-scale", {"input_scale": 0.5, "input_zero_point": -128}, 2112))))
    register(Operator(
        "hard_swish", hard_swish, ref.hard_swish_oracle,
        lambda: [_hard_swish_case({**base, "shape": [8], "output_scale": 0.03}, rng)],
        "TFLite int8 HARD_SWISH (int16 fixed point, LiteRT reference = TFLM)",
        generate=_hard_swish_case, params={**base, "output_scale": 0.026607850566506386, "output_zero_point": -114},
        cases=(SuiteCase("hard-swish-every-code", {"input_scale": 0.05610937252640724, "input_zero_point": 13}, 2120),
               SuiteCase("hard-swish-pot-ties", {"input_scale": 0.0625, "output_scale": 0.03125}, 2121),
               SuiteCase("hard-swish-reluish-left-shift", {"input_scale": 0.5, "output_scale": 0.1}, 2122))))
    register(Operator(
        "prelu", prelu, ref.prelu_oracle,
        lambda: [_prelu_case({**base, "shape": [2, 4], "alpha_scale": 0.01, "alpha_zero_point": 0,
                              "output_scale": 0.05, "output_zero_point": 0}, rng)],
        "TFLite int8 PRELU (two multipliers by the sign of q - zi; alpha broadcast)",
        generate=_prelu_case, params={**base, "shape": [16, 16], "alpha_scale": 0.0074, "alpha_zero_point": 60,
                                      "output_scale": 0.03, "output_zero_point": 5},
        cases=(SuiteCase("prelu-every-code", {"input_zero_point": -4, "input_scale": 0.028}, 2130),
               SuiteCase("prelu-pot-ties", {"input_scale": 0.03125, "output_scale": 0.03125, "alpha_scale": 0.0078125,
                                            "alpha_zero_point": 0}, 2131))))

    register(Operator(
        "rsqrt", rsqrt, ref.rsqrt_oracle,
        lambda: [dict(x=np.arange(0, 8, dtype=np.int8), input_zero_point=0, output_zero_point=-128,
                      multiplier=1 << 30, shift=3)],
        "TFLite int8 RSQRT (GetInvSqrtQuantizedMultiplierExp; LiteRT = TFLM)",
        generate=_rsqrt_case, params={"shape": [1, 256], "input_scale": 0.02847914583981037,
                                      "output_scale": 0.31235212087631226, "input_zero_point": -128,
                                      "output_zero_point": -128},
        cases=(SuiteCase("rsqrt-every-code", {}, 2140),
               SuiteCase("rsqrt-pot-scales", {"input_scale": 0.0625, "output_scale": 0.125}, 2141))))


def _rsqrt_case(p, rng):
    m, s = tflite_rsqrt_multiplier(input_scale=p["input_scale"], output_scale=p["output_scale"])
    x = random_codes(rng, p["shape"], "int8")
    x = np.maximum(x, np.int8(p["input_zero_point"]))
    return dict(x=x, input_zero_point=p["input_zero_point"], output_zero_point=p["output_zero_point"],
                multiplier=m, shift=s)


def _every_int16(rng, n):
    """Every 64th int16 code, the edges, and random codes."""

    sweep = np.arange(-32768, 32768, 64, dtype=np.int64)
    return np.concatenate([sweep, [32767, -1, 0, 1], random_codes(rng, (n,), np.int16)]).astype(np.int16)


def _int16_lut_case(p, rng):
    return dict(x=_every_int16(rng, p["n"]), input_multiplier=p["input_multiplier"],
                input_left_shift=p["input_left_shift"])


def _fixedpoint_case(p, rng):
    return dict(x=_every_int16(rng, p["n"]), integer_bits=p["integer_bits"])


def _register_nonlinear_int16():
    rng = np.random.default_rng(0)
    lut = {"n": 256, "input_multiplier": 0, "input_left_shift": 0}
    for name, kernel, oracle, doc in (
            ("int16_logistic", int16_logistic, ref.int16_logistic_oracle,
             "TFLite/TFLM int16 LOGISTIC: sigmoid table with 9-bit interpolation"),
            ("int16_tanh", int16_tanh, ref.int16_tanh_oracle,
             "TFLite/TFLM int16 TANH: sigmoid table with 8-bit interpolation")):
        register(Operator(
            name, kernel, oracle, lambda: [_int16_lut_case({**lut, "n": 8}, rng)], doc, generate=_int16_lut_case, params=lut,
            cases=(SuiteCase(f"{name}-q3-12", {}, 2400),
                   SuiteCase(f"{name}-cell-scale-2^-11", {"input_left_shift": 1}, 2401),
                   SuiteCase(f"{name}-general-scale", {"input_multiplier": 24576, "input_left_shift": 15}, 2402))))
    fixed = {"n": 256, "integer_bits": 3}
    for name, kernel, oracle, doc, top in (
            ("fixedpoint16_logistic", fixedpoint16_logistic, ref.fixedpoint16_logistic_oracle,
             "gemmlowp logistic on int16 raw values (LiteRT integer LSTM)", 13),
            ("fixedpoint16_tanh", fixedpoint16_tanh, ref.fixedpoint16_tanh_oracle,
             "gemmlowp tanh on int16 raw values (LiteRT integer LSTM)", 12)):
        register(Operator(
            name, kernel, oracle, lambda: [_fixedpoint_case({**fixed, "n": 8}, rng)], doc, generate=_fixedpoint_case,
            params=fixed, choices={"integer_bits": tuple(range(top + 1))},
            cases=(SuiteCase(f"{name}-q3", {}, 2410),
                   SuiteCase(f"{name}-q0", {"integer_bits": 0}, 2411),
                   SuiteCase(f"{name}-q6-clamped-exp", {"integer_bits": 6}, 2412))))


def _softmax_case(p, rng):
    if p.get("in_dtype", "int8") == "int16":
        return dict(x=random_codes(rng, p["shape"], "int16"),
                    params=tflite_int16_softmax_params(input_scale=p["input_scale"], beta=p["beta"],
                                                       prepare=p.get("prepare", "litert")))
    return dict(x=random_codes(rng, p["shape"], "int8"),
                params=tflite_softmax_params(input_scale=p["input_scale"], beta=p["beta"]), out_dtype=p["out_dtype"])


def _register_softmax():
    rng = np.random.default_rng(0)
    register(Operator(
        "softmax", softmax, ref.softmax_oracle,
        lambda: [_softmax_case({"shape": [2, 5], "input_scale": 0.1, "beta": 1.0, "out_dtype": t}, rng)
                 for t in ("int8", "int16")]
        + [_softmax_case({"shape": [2, 5], "input_scale": 1e-3, "beta": 1.0, "in_dtype": "int16"}, rng)],
        "TFLite SOFTMAX over the last axis: int8 gemmlowp reference, int16 SoftmaxInt16 tables "
        "(LiteRT BUILTIN_REF, TFLM)",
        generate=_softmax_case, params={"shape": [4, 64], "input_scale": 0.030747152864933014, "beta": 1.0,
                                        "out_dtype": "int8", "in_dtype": "int8", "prepare": "litert"},
        choices={"out_dtype": ("int8", "int16"), "in_dtype": ("int8", "int16"), "prepare": ("litert", "tflm")},
        cases=(SuiteCase("softmax-every-code-row", {"shape": [1, 256]}, 2200),
               SuiteCase("softmax-int16-output", {"shape": [1, 256], "out_dtype": "int16"}, 2204),
               SuiteCase("softmax-int16-input-litert", {"shape": [4, 64], "in_dtype": "int16",
                                                        "input_scale": 0.00012223761586938053, "beta": 1.7}, 2205),
               SuiteCase("softmax-int16-input-tflm-wide", {"shape": [2, 300], "in_dtype": "int16", "prepare": "tflm",
                                                           "input_scale": 0.0009765625, "beta": 0.3}, 2206),
               SuiteCase("softmax-beta-0.1-wide", {"input_scale": 0.12298861145973206, "beta": 0.1}, 2201),
               SuiteCase("softmax-rank4-beta-3.7", {"shape": [2, 2, 4, 16], "beta": 3.7}, 2202),
               SuiteCase("softmax-pot-scale", {"input_scale": 0.125, "shape": [8, 32]}, 2203))))
    register(Operator(
        "log_softmax", log_softmax, ref.log_softmax_oracle,
        lambda: [_log_softmax_case({"shape": [2, 5], "input_scale": 0.1}, rng)],
        "TFLite int8 LOG_SOFTMAX over the last axis (gemmlowp reference: LiteRT BUILTIN_REF = TFLM)",
        generate=_log_softmax_case, params={"shape": [4, 64], "input_scale": 0.061685413122177124},
        cases=(SuiteCase("log-softmax-every-code-row", {"shape": [1, 256]}, 2220),
               SuiteCase("log-softmax-pot-scale", {"input_scale": 0.125, "shape": [8, 32]}, 2221),
               SuiteCase("log-softmax-wide", {"input_scale": 0.1654580533504486, "shape": [2, 2, 4, 16]}, 2222))))
    register(Operator(
        "optimized_softmax", optimized_softmax, ref.optimized_softmax_oracle,
        lambda: [_optimized_case({"shape": [2, 5], "input_scale": 0.1, "beta": 1.0, "out_dtype": t,
                                  "output_zero_point": -128 if t == "int8" else 0}, rng) for t in ("int8", "int16")],
        "LiteRT optimized int8 SOFTMAX (float32 exp table; engine xnnpack)",
        generate=_optimized_case, params={"shape": [4, 64], "input_scale": 0.030747152864933014, "beta": 1.0,
                                          "out_dtype": "int8", "output_zero_point": -128},
        choices={"out_dtype": ("int8", "int16")},
        cases=(SuiteCase("optimized-softmax-every-code-row", {"shape": [1, 256]}, 2210),
               SuiteCase("optimized-softmax-int16-zp0", {"shape": [16, 16], "out_dtype": "int16",
                                                         "output_zero_point": 0, "beta": 0.7}, 2211))))


def _log_softmax_case(p, rng):
    return dict(x=random_codes(rng, p["shape"], "int8"), params=tflite_log_softmax_params(input_scale=p["input_scale"]))


def _optimized_case(p, rng):
    scale = 1.0 / 256 if p["out_dtype"] == "int8" else 1.0 / 65536
    return dict(x=random_codes(rng, p["shape"], "int8"),
                table=optimized_softmax_table(input_scale=p["input_scale"], beta=p["beta"]), output_scale=scale,
                output_zero_point=p["output_zero_point"], out_dtype=p["out_dtype"])


def _register_normalization():
    register(Operator(
        "l2_normalization", l2_normalization, ref.l2_normalization_oracle,
        lambda: [dict(x=np.arange(-4, 4, dtype=np.int8).reshape(2, 4), input_zero_point=0)],
        "TFLite int8 L2_NORMALIZATION over the last axis (LiteRT reference = TFLM)",
        generate=lambda p, rng: dict(x=random_codes(rng, p["shape"], "int8"), input_zero_point=p["input_zero_point"]),
        params={"shape": [4, 64], "input_zero_point": 0},
        cases=(SuiteCase("l2norm-every-code", {"shape": [1, 256], "input_zero_point": 4}, 2300),
               SuiteCase("l2norm-rows", {"shape": [16, 16], "input_zero_point": -128}, 2301))))


_register_nonlinear()
_register_nonlinear_int16()
_register_softmax()
_register_normalization()
