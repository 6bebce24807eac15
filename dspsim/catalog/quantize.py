"""Descriptors of the quantize family: float <-> int quantizers of every framework, TFLite's Requantize of codes, CAST.

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..dtypes import TF_TYPES
from ..fixedpoint import quantize_multiplier
from ..kernels.quantize.xnnpack import xnnpack_convert, xnnpack_quantize
from ..kernels.quantize.requantize import ROUNDINGS, tflite_requantize
from ..kernels.quantize.cast import CAST_TYPES, cast
from ..quantize import (
    ONNX_TYPES,
    TFLITE_TYPES,
    dequantize,
    dequantize_linear,
    dequantize_per_channel,
    dequantize_per_tensor,
    dequantize_pof2,
    quantize,
    quantize_linear,
    quantize_per_channel,
    quantize_per_tensor,
    quantize_pof2,
    tflite_dequantize,
    tflite_quantize,
)
from .descriptor import Operator, SuiteCase, random_codes, register

_TF_CASE_RANGES = {  # T -> requested (min, max) ranges cycled through the modes
    "qint8": [(-1.0, 1.0), (-10.0, 9.0), (0.0, 6.0)],
    "quint8": [(0.0, 6.0), (-1.0, 1.0), (0.5, 1.0)],
    "qint16": [(-3.0, 5.0), (-1.0, 1.0)],
    "quint16": [(0.0, 1.0), (-2.0, 2.0)],
    "qint32": [(-1.0, 1.0), (-100.0, 50.0)],
}


def _tf_cases():
    """Every T under every mode and round mode, exact ties, range adjustment, saturation, per channel."""

    def tag(mode, rm):
        return f"{mode.lower().replace('_', '')}-{'hte' if rm == 'HALF_TO_EVEN' else 'haz'}"

    cases = []
    modes = [("MIN_COMBINED", "HALF_AWAY_FROM_ZERO", False), ("MIN_FIRST", "HALF_AWAY_FROM_ZERO", False),
             ("SCALED", "HALF_AWAY_FROM_ZERO", False), ("SCALED", "HALF_AWAY_FROM_ZERO", True),
             ("SCALED", "HALF_TO_EVEN", False), ("SCALED", "HALF_TO_EVEN", True)]
    for T, ranges in _TF_CASE_RANGES.items():
        for i, (mode, rm, narrow) in enumerate(modes):
            lo, hi = ranges[i % len(ranges)]
            cases.append(SuiteCase(f"tf-{T}-{tag(mode, rm)}{'-narrow' if narrow else ''}",
                                   {"T": T, "mode": mode, "round_mode": rm, "narrow_range": narrow, "min_range": lo,
                                    "max_range": hi, "shape": [257 if T != "qint32" else 129]}, len(cases)))
    for T, mode, rm, lo, hi in [("qint8", "MIN_COMBINED", "HALF_AWAY_FROM_ZERO", 0.0, 255.0),
                                ("quint8", "MIN_COMBINED", "HALF_AWAY_FROM_ZERO", 0.0, 255.0),
                                ("qint8", "MIN_FIRST", "HALF_AWAY_FROM_ZERO", 0.0, 255.0),
                                ("qint8", "SCALED", "HALF_AWAY_FROM_ZERO", -128.0, 127.0),
                                ("qint8", "SCALED", "HALF_TO_EVEN", -128.0, 127.0)]:  # exact ties: scale-1 grids
        cases.append(SuiteCase(f"tf-{T}-{tag(mode, rm)}-ties",
                               {"T": T, "mode": mode, "round_mode": rm, "min_range": lo, "max_range": hi,
                                "data": "ties", "shape": [200]}, 100 + len(cases)))
    return tuple(cases) + (
        SuiteCase("tf-quint8-mincombined-adjusted-range", {"T": "quint8", "min_range": 0.5, "max_range": 1.0,
                                                           "shape": [64]}, 201),
        SuiteCase("tf-qint8-scaled-tiny-range", {"T": "qint8", "mode": "SCALED", "min_range": 0.0,
                                                 "max_range": 0.001, "shape": [64]}, 202),
        SuiteCase("tf-qint8-scaled-saturate", {"T": "qint8", "mode": "SCALED", "min_range": -2.0, "max_range": 2.0,
                                               "data": "wide"}, 203),
        SuiteCase("tf-qint8-mincombined-per-channel", {"T": "qint8", "axis": 1, "shape": [5, 3, 17],
                                                       "min_range": [-1.0, -4.0, 0.0], "max_range": [1.0, 2.0, 6.0]},
                  204),
        SuiteCase("tf-quint8-scaled-narrow-per-channel", {"T": "quint8", "mode": "SCALED", "narrow_range": True,
                                                          "axis": -1, "shape": [33, 4],
                                                          "min_range": [0.0, 0.0, -1.0, 0.0],
                                                          "max_range": [1.0, 3.0, 1.0, 0.25]}, 205))


def _affine_cases():
    """Each convention on int8/uint8 with zero points, ties, saturation, per channel, and the probe of
    docs/semantics.md §9 (scale 0.00214854861: x/s = 127.49999 or 127.5 depending on the order)."""

    cases = []
    for conv in ("torch", "onnx", "tflite"):
        for dtype, scale, zp in [("int8", 0.05, 3), ("uint8", 0.02, 128), ("int8", 0.5, 3)]:
            data = "ties" if scale == 0.5 else "uniform"
            cases.append(SuiteCase(f"{conv}-{dtype}-s{scale}-zp{zp}{'-ties' if data == 'ties' else ''}",
                                   {"convention": conv, "dtype": dtype, "scale": scale, "zero_point": zp,
                                    "data": data}, 300 + len(cases)))
        cases.append(SuiteCase(f"{conv}-int8-saturate", {"convention": conv, "scale": 0.01, "zero_point": -5,
                                                         "data": "wide"}, 320 + len(cases)))
        cases.append(SuiteCase(f"{conv}-int8-per-channel", {"convention": conv, "scale": [0.1, 0.25, 0.0625],
                                                            "zero_point": [0, 0, 0], "axis": 1, "shape": [7, 3, 11],
                                                            "data": "ties"}, 340 + len(cases)))
    for conv in ("torch", "onnx", "tflite"):
        cases.append(SuiteCase(f"{conv}-uint8-semantics9-probe",
                               {"convention": conv, "dtype": "uint8", "scale": 0.00214854861, "zero_point": 0,
                                "values": [0.273939937, 0.5, 0.25]}, 360))
    cases.append(SuiteCase("onnx-int16-zp-odd", {"convention": "onnx", "dtype": "int16", "scale": 0.125,
                                                 "zero_point": 7, "data": "ties"}, 370))
    return tuple(cases)


def _pof2_cases():
    ties = {"frac_bits": 5, "data": "ties", "max_abs": 3.0}
    return (SuiteCase("pof2-8b-fb5-hte-ties", ties, 400),
            SuiteCase("pof2-8b-fb5-haz-ties", {**ties, "rounding": "half_away_from_zero"}, 400),
            SuiteCase("pof2-8b-fb5-hup-ties", {**ties, "rounding": "half_up"}, 400),
            SuiteCase("pof2-8b-derived", {"max_abs": 5.0}, 401),
            SuiteCase("pof2-8b-full-range-saturate", {"narrow_range": False, "frac_bits": 6, "max_abs": 2.0,
                                                      "data": "wide"}, 402),
            SuiteCase("pof2-16b-saturate", {"bits": 16, "frac_bits": 12, "max_abs": 10.0, "data": "wide"}, 403),
            SuiteCase("pof2-4b-floor", {"bits": 4, "frac_bits": 1, "rounding": "floor", "max_abs": 3.5}, 404))


_EXAMPLE_X = np.linspace(-2.0, 2.0, 8, dtype=np.float32).reshape(2, 4)


def _register_quantize():
    x = _EXAMPLE_X
    register(Operator("tf_quantize", quantize, ref.tf_quantize_oracle,
                      lambda: [dict(x=x, min_range=-1.0, max_range=1.0, T=T, mode=m) for T in TF_TYPES
                               for m in ("MIN_COMBINED", "MIN_FIRST", "SCALED")],
                      "TensorFlow QuantizeV2 + Dequantize (codes, returned range, dequantized floats); schemes: "
                      "the other TF modes", study="tf_quantize", cases=_tf_cases()))
    register(Operator("tf_dequantize", dequantize, ref.tf_dequantize_oracle,
                      lambda: [dict(q=quantize(x, -1.0, 1.0, T).output, min_range=-1.0, max_range=1.0, mode=m)
                               for T in TF_TYPES for m in ("MIN_COMBINED", "SCALED")],
                      "TensorFlow Dequantize (covered by the tf_quantize study)"))
    register(Operator("affine_quantize", quantize_per_tensor, ref.quantize_per_tensor_oracle,
                      lambda: [dict(x=x, scale=0.1, zero_point=0, dtype=dt) for dt in ("quint8", "qint8", "qint32")],
                      "affine quantize/dequantize in PyTorch, ONNX or TFLite convention; schemes: the other "
                      "conventions", study="affine_quantize", cases=_affine_cases()))
    companions = [  # covered by the affine_quantize study: compiled and checked on their examples
        ("quantize_per_channel", quantize_per_channel, ref.quantize_per_channel_oracle,
         [dict(x=x, scales=[0.1, 0.2], zero_points=[0, 0], axis=0, dtype=dt) for dt in ("quint8", "qint8", "qint32")]),
        ("dequantize_per_tensor", dequantize_per_tensor, ref.dequantize_per_tensor_oracle,
         [dict(q=np.arange(8).astype(dt), scale=0.1, zero_point=1) for dt in (np.int8, np.uint8, np.int32)]),
        ("dequantize_per_channel", dequantize_per_channel, ref.dequantize_per_channel_oracle,
         [dict(q=np.arange(8, dtype=np.int8).reshape(2, 4), scales=[0.1, 0.2], zero_points=[0, 1], axis=0)]),
        ("quantize_linear", quantize_linear, ref.quantize_linear_oracle,
         [dict(x=x, scale=0.1, zero_point=0, dtype=dt) for dt in ONNX_TYPES]),
        ("dequantize_linear", dequantize_linear, ref.dequantize_linear_oracle,
         [dict(q=np.arange(8).astype(dt), scale=0.1, zero_point=0) for dt in ONNX_TYPES]),
        ("tflite_quantize", tflite_quantize, ref.tflite_quantize_oracle,
         [dict(x=x, scale=0.1, zero_point=0, dtype=dt) for dt in TFLITE_TYPES]),
        ("tflite_dequantize", tflite_dequantize, ref.tflite_dequantize_oracle,
         [dict(q=np.arange(8).astype(dt), scale=0.1, zero_point=1) for dt in TFLITE_TYPES]),
        ("dequantize_pof2", dequantize_pof2, ref.dequantize_pof2_oracle,
         [dict(q=np.arange(-4, 4).astype(dt), frac_bits=2) for dt in (np.int8, np.int16, np.int32)]),
    ]
    for name, fn, oracle, calls in companions:
        register(Operator(name, fn, oracle, lambda calls=calls: calls, f"{name} (covered by a quantizer's study)"))
    register(Operator("pof2_quantize", quantize_pof2, ref.quantize_pof2_oracle,
                      lambda: [dict(x=xx, frac_bits=2, bits=bits) for bits in (8, 16, 32)
                               for xx in (x, x.astype(np.float64))],
                      "symmetric power-of-two quantization (scale 2^-frac_bits); schemes: the other tie rules",
                      study="pof2_quantize", cases=_pof2_cases()))


def _register_requantize():
    codes = np.arange(-128, 128, dtype=np.int16)

    def generate(p, rng):

        m, s = quantize_multiplier(p["ratio"])
        x = (codes if p["from"] == "int8" else codes + 128).astype(p["from"])
        return dict(x=x, input_zero_point=p["input_zero_point"], output_zero_point=p["output_zero_point"],
                    multiplier=m, shift=s, out_dtype=p["to"], rounding=p["rounding"])

    register(Operator(
        "tflite_requantize", tflite_requantize, ref.tflite_requantize_oracle,
        lambda: [dict(x=codes.astype(np.int8), input_zero_point=z, output_zero_point=128 + z, multiplier=1 << 30,
                      shift=1, out_dtype="uint8", rounding=r) for z in (0, -3) for r in ROUNDINGS] +
                [dict(x=(codes + 128).astype(np.uint8), input_zero_point=131, output_zero_point=-7,
                      multiplier=1431655730, shift=-1, out_dtype=o, rounding=r) for o in ("int8", "int16")
                 for r in ROUNDINGS],
        "TFLite Requantize of int8/uint8 codes (reference, single rounding, NEON/NEON_2_SSE)", generate=generate,
        params={"from": "uint8", "to": "int8", "ratio": 1 / 3, "input_zero_point": 131, "output_zero_point": -7,
                "rounding": "neon"},
        choices={"from": ("int8", "uint8"), "to": ("int8", "uint8", "int16"), "rounding": ROUNDINGS},
        cases=(SuiteCase("requantize-u8-i8-neon-ties", {}, 1800),
               SuiteCase("requantize-u8-i8-reference", {"rounding": "double"}, 1801),
               SuiteCase("requantize-i8-u8-same-scale", {"from": "int8", "to": "uint8", "ratio": 1.0,
                                                         "input_zero_point": -3, "output_zero_point": 125,
                                                         "rounding": "double"}, 1802))))


def _register_typecast():
    specials = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 127.5, -128.5, 255.9, -0.5, 0.5, 65535.5, -0.0,
                         2.0**31, -2.0**31, 32767.9, -32768.9], np.float32)

    def generate(p, rng):

        if p["from"] == "float32":
            x = np.concatenate([specials, rng.uniform(-70000, 70000, 48).astype(np.float32),
                                (rng.integers(-300, 300, 64) + 0.5).astype(np.float32)])
        else:
            x = random_codes(rng, [128], p["from"])
        return dict(x=x, dtype=p["to"], nan=p["nan"])

    names = tuple(d.name for d in CAST_TYPES)
    register(Operator(
        "cast", cast, ref.cast_oracle,
        lambda: [dict(x=specials, dtype=d, nan=n) for d in names for n in ("max", "zero")] +
                [dict(x=np.arange(-128, 128, dtype=np.int16) * 257, dtype=d) for d in names],
        "TFLite CAST (integers wrap; float -> int truncates and saturates)", generate=generate,
        params={"from": "float32", "to": "int8", "nan": "max"}, choices={"from": names, "to": names,
                                                                         "nan": ("max", "zero")},
        cases=(SuiteCase("cast-float-int8-litert", {}, 1700),
               SuiteCase("cast-float-int16-tflm", {"to": "int16", "nan": "zero"}, 1701),
               SuiteCase("cast-int32-int8-wraps", {"from": "int32", "to": "int8"}, 1702),
               SuiteCase("cast-int32-float32", {"from": "int32", "to": "float32"}, 1703))))




_TINY = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)


def _convert_case(p, rng):
    return dict(x=random_codes(rng, p["shape"], "int8"), input_scale=p["input_scale"],
                input_zero_point=p["input_zero_point"], output_scale=p["output_scale"],
                output_zero_point=p["output_zero_point"])


def _xnnpack_quantize_case(p, rng):
    s, zp = np.float32(p["scale"]), p["zero_point"]
    lo, hi = (-128 - zp) * float(s), (127 - zp) * float(s)
    x = rng.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), size=tuple(p["shape"])).astype(np.float32)
    half = ((np.arange(x.size) % 255) - 127.5).astype(np.float32) * s  # exact ties k + 1/2
    x.reshape(-1)[: x.size // 2] = half[: x.size // 2]
    return dict(x=x, scale=p["scale"], zero_point=zp)


_UNARY_SCALES = {"shape": [3, 97], "input_scale": 0.05, "output_scale": 0.04, "input_zero_point": 0,
                 "output_zero_point": 0}


def _register_xnnpack_quantizers():
    register(Operator(
        "xnnpack_convert", xnnpack_convert, ref.xnnpack_convert_oracle,
        lambda: [dict(x=_TINY, input_scale=0.1, input_zero_point=0, output_scale=0.2, output_zero_point=0)],
        "XNNPACK qs8-vcvt (int8 -> int8 QUANTIZE)", generate=_convert_case, params=_UNARY_SCALES,
        cases=(SuiteCase("xnnpack-convert", {"input_zero_point": 3, "output_zero_point": -4}, 1160),
               SuiteCase("xnnpack-convert-ties", {"input_scale": 0.125, "output_scale": 0.25}, 1161))))
    register(Operator(
        "xnnpack_quantize", xnnpack_quantize, ref.xnnpack_quantize_oracle,
        lambda: [dict(x=np.zeros(4, np.float32), scale=0.1, zero_point=0)],
        "XNNPACK f32-qs8-vcvt (float -> int8 QUANTIZE)", generate=_xnnpack_quantize_case,
        params={"shape": [501], "scale": 0.03, "zero_point": 0},
        cases=(SuiteCase("xnnpack-quantize-ties", {"zero_point": 3}, 1190),
               SuiteCase("xnnpack-quantize-pow2", {"scale": 0.0625}, 1191))))


_register_quantize()
_register_requantize()
_register_typecast()
_register_xnnpack_quantizers()
