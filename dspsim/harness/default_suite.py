"""The built-in suite: what ``dspsim suite`` runs with no arguments.

Every kernel and every quantize mode, over a spread of shapes and quantization parameters, with
the edge cases a bring-up engineer cares about: exact ties (power-of-two steps and multipliers),
saturation, left shifts (multiplier > 1), narrow range, per-channel parameters, uint8 activations
with a zero point, odd lengths (vector bodies and scalar tails). Seeds are fixed: two runs produce
the same tensors. ``quick=True`` keeps one case in three (about 30 s).
"""
from __future__ import annotations

from .suite import Case

_TF_RANGES = {  # T -> requested (min, max) ranges cycled through the modes
    "qint8": [(-1.0, 1.0), (-10.0, 9.0), (0.0, 6.0)],
    "quint8": [(0.0, 6.0), (-1.0, 1.0), (0.5, 1.0)],
    "qint16": [(-3.0, 5.0), (-1.0, 1.0)],
    "quint16": [(0.0, 1.0), (-2.0, 2.0)],
    "qint32": [(-1.0, 1.0), (-100.0, 50.0)],
}


def _mode_tag(mode: str, round_mode: str) -> str:
    return f"{mode.lower().replace('_', '')}-{'hte' if round_mode == 'HALF_TO_EVEN' else 'haz'}"


def _tf_cases():
    cases = []
    modes = [("MIN_COMBINED", "HALF_AWAY_FROM_ZERO", False), ("MIN_FIRST", "HALF_AWAY_FROM_ZERO", False),
             ("SCALED", "HALF_AWAY_FROM_ZERO", False), ("SCALED", "HALF_AWAY_FROM_ZERO", True),
             ("SCALED", "HALF_TO_EVEN", False), ("SCALED", "HALF_TO_EVEN", True)]
    for T, ranges in _TF_RANGES.items():
        for i, (mode, rm, narrow) in enumerate(modes):
            lo, hi = ranges[i % len(ranges)]
            tag = f"{_mode_tag(mode, rm)}{'-narrow' if narrow else ''}"
            cases.append(Case(f"tf-{T}-{tag}", "tf_quantize",
                              {"T": T, "mode": mode, "round_mode": rm, "narrow_range": narrow,
                               "min_range": lo, "max_range": hi, "shape": [257 if T != "qint32" else 129]},
                              seed=len(cases)))
    # exact ties: scale 1 grids, SEMANTICS 9
    for T, mode, rm, lo, hi in [("qint8", "MIN_COMBINED", "HALF_AWAY_FROM_ZERO", 0.0, 255.0),
                                ("quint8", "MIN_COMBINED", "HALF_AWAY_FROM_ZERO", 0.0, 255.0),
                                ("qint8", "MIN_FIRST", "HALF_AWAY_FROM_ZERO", 0.0, 255.0),
                                ("qint8", "SCALED", "HALF_AWAY_FROM_ZERO", -128.0, 127.0),
                                ("qint8", "SCALED", "HALF_TO_EVEN", -128.0, 127.0)]:
        cases.append(Case(f"tf-{T}-{_mode_tag(mode, rm)}-ties", "tf_quantize",
                          {"T": T, "mode": mode, "round_mode": rm, "min_range": lo, "max_range": hi,
                           "data": "ties", "shape": [200]}, seed=100 + len(cases)))
    cases += [
        Case("tf-quint8-mincombined-adjusted-range", "tf_quantize",
             {"T": "quint8", "min_range": 0.5, "max_range": 1.0, "shape": [64]}, seed=201),
        Case("tf-qint8-scaled-tiny-range", "tf_quantize",
             {"T": "qint8", "mode": "SCALED", "min_range": 0.0, "max_range": 0.001, "shape": [64]}, seed=202),
        Case("tf-qint8-scaled-saturate", "tf_quantize",
             {"T": "qint8", "mode": "SCALED", "min_range": -2.0, "max_range": 2.0, "data": "wide"}, seed=203),
        Case("tf-qint8-mincombined-per-channel", "tf_quantize",
             {"T": "qint8", "axis": 1, "shape": [5, 3, 17], "min_range": [-1.0, -4.0, 0.0],
              "max_range": [1.0, 2.0, 6.0]}, seed=204),
        Case("tf-quint8-scaled-narrow-per-channel", "tf_quantize",
             {"T": "quint8", "mode": "SCALED", "narrow_range": True, "axis": -1, "shape": [33, 4],
              "min_range": [0.0, 0.0, -1.0, 0.0], "max_range": [1.0, 3.0, 1.0, 0.25]}, seed=205),
    ]
    return cases


def _affine_cases():
    cases = []
    for conv in ("torch", "onnx", "tflite"):
        for dtype, scale, zp in [("int8", 0.05, 3), ("uint8", 0.02, 128), ("int8", 0.5, 3)]:
            data = "ties" if scale == 0.5 else "uniform"
            cases.append(Case(f"{conv}-{dtype}-s{scale}-zp{zp}{'-ties' if data == 'ties' else ''}", "affine_quantize",
                              {"convention": conv, "dtype": dtype, "scale": scale, "zero_point": zp, "data": data},
                              seed=300 + len(cases)))
        cases.append(Case(f"{conv}-int8-saturate", "affine_quantize",
                          {"convention": conv, "scale": 0.01, "zero_point": -5, "data": "wide"}, seed=320 + len(cases)))
        cases.append(Case(f"{conv}-int8-per-channel", "affine_quantize",
                          {"convention": conv, "scale": [0.1, 0.25, 0.0625], "zero_point": [0, 0, 0], "axis": 1,
                           "shape": [7, 3, 11], "data": "ties"}, seed=340 + len(cases)))
    # the cross-framework probe of SEMANTICS 9: scale 0.00214854861, x/s = 127.49999 / 127.5 (f32)
    for conv in ("torch", "onnx", "tflite"):
        cases.append(Case(f"{conv}-uint8-semantics9-probe", "affine_quantize",
                          {"convention": conv, "dtype": "uint8", "scale": 0.00214854861, "zero_point": 0,
                           "values": [0.273939937, 0.5, 0.25]},
                          seed=360))
    cases.append(Case("onnx-int16-zp-odd", "affine_quantize",
                      {"convention": "onnx", "dtype": "int16", "scale": 0.125, "zero_point": 7, "data": "ties"},
                      seed=370))
    return cases


def _pof2_cases():
    return [
        Case("pof2-8b-fb5-hte-ties", "pof2_quantize", {"frac_bits": 5, "data": "ties", "max_abs": 3.0}, seed=400),
        Case("pof2-8b-fb5-haz-ties", "pof2_quantize",
             {"frac_bits": 5, "data": "ties", "max_abs": 3.0, "rounding": "half_away_from_zero"}, seed=400),
        Case("pof2-8b-fb5-hup-ties", "pof2_quantize",
             {"frac_bits": 5, "data": "ties", "max_abs": 3.0, "rounding": "half_up"}, seed=400),
        Case("pof2-8b-derived", "pof2_quantize", {"max_abs": 5.0}, seed=401),
        Case("pof2-8b-full-range-saturate", "pof2_quantize", {"narrow_range": False, "frac_bits": 6, "max_abs": 2.0,
                                                              "data": "wide"}, seed=402),
        Case("pof2-16b-saturate", "pof2_quantize", {"bits": 16, "frac_bits": 12, "max_abs": 10.0, "data": "wide"},
             seed=403),
        Case("pof2-4b-floor", "pof2_quantize", {"bits": 4, "frac_bits": 1, "rounding": "floor", "max_abs": 3.5},
             seed=404),
    ]


def _relu_cases():
    return [
        Case("relu-int8", "relu", {"input_zero_point": -10, "output_zero_point": -128,
                                   "input_scale": 0.05, "output_scale": 0.03}, seed=500),
        Case("relu-int8-single", "relu", {"input_zero_point": -10, "output_zero_point": -128,
                                          "input_scale": 0.05, "output_scale": 0.03, "scheme": "single"}, seed=500),
        Case("relu6-int8", "relu", {"activation": "relu6", "input_zero_point": 5, "output_zero_point": -128,
                                    "input_scale": 0.1, "output_scale": 0.05}, seed=501),
        Case("relu-int8-ties", "relu", {"multiplier": 1073741824, "shift": -1, "input_zero_point": 0,
                                        "output_zero_point": 0}, seed=502),
        Case("relu-int8-left-shift", "relu", {"input_scale": 0.2, "output_scale": 0.03, "input_zero_point": 3,
                                              "output_zero_point": -100}, seed=503),
        Case("relu-n1-to-1-ties", "relu", {"activation": "relu_n1_to_1", "multiplier": 1073741824, "shift": -1,
                                           "input_zero_point": 0, "output_zero_point": 0}, seed=506),
        Case("relu-uint8", "relu", {"dtype": "uint8", "input_zero_point": 128, "output_zero_point": 0,
                                    "input_scale": 0.05, "output_scale": 0.03}, seed=504),
        Case("relu-int16", "relu", {"dtype": "int16", "input_scale": 0.001, "output_scale": 0.0007}, seed=505),
    ]


def _kernel_cases():
    fc, conv, dw = "fully_connected", "conv2d", "depthwise_conv2d"
    return [
        Case("fc-basic", fc, {"input_zero_point": -3, "output_zero_point": 5}, seed=600),
        Case("fc-single", fc, {"input_zero_point": -3, "output_zero_point": 5, "scheme": "single"}, seed=600),
        Case("fc-per-channel", fc, {"per_channel": True, "input_zero_point": 7, "output_zero_point": -2}, seed=601),
        Case("fc-ties-pow2", fc, {"multiplier": 1073741824, "shift": -1, "input_range": [-8, 8],
                                  "weight_range": [-8, 8]}, seed=602),
        Case("fc-ties-pow2-odd-zp", fc, {"multiplier": 1073741824, "shift": -2, "input_zero_point": 1,
                                         "output_zero_point": 3, "input_range": [-8, 8], "weight_range": [-8, 8]},
             seed=603),
        Case("fc-left-shift", fc, {"input_scale": 0.05, "weight_scale": 0.02, "output_scale": 0.0004,
                                   "in_features": 8, "input_range": [-3, 3], "weight_range": [-8, 8],
                                   "bias_spread": 0.0}, seed=604),
        Case("fc-saturate", fc, {"output_scale": 0.002}, seed=605),
        Case("fc-narrow-relu", fc, {"weight_range": "narrow", "activation": "relu", "output_zero_point": -128,
                                    "output_scale": 0.05}, seed=606),
        Case("fc-relu6", fc, {"activation": "relu6", "output_zero_point": -128, "output_scale": 0.03}, seed=607),
        Case("fc-uint8-in", fc, {"input_dtype": "uint8", "input_zero_point": 128, "output_zero_point": 0}, seed=608),
        Case("fc-fbgemm", fc, {"input_dtype": "uint8", "input_zero_point": 128, "output_dtype": "uint8",
                               "output_zero_point": 128, "scheme": "fbgemm"}, seed=609),
        Case("fc-large-sampled", fc, {"batch": 64, "in_features": 256, "out_features": 64,
                                      "per_channel": True}, seed=610),
        Case("fc-accumulator-16-saturate", fc, {"accumulator_bits": 16, "accumulator_overflow": "saturate",
                                                "in_features": 128}, seed=611),
        Case("fc-accumulator-16-wrap", fc, {"accumulator_bits": 16, "accumulator_overflow": "wrap",
                                            "in_features": 128}, seed=611),
        Case("fc-accumulator-24-saturate", fc, {"accumulator_bits": 24, "accumulator_overflow": "saturate",
                                                "batch": 2, "in_features": 1024, "out_features": 8,
                                                "input_range": [64, 127], "weight_range": [64, 127],
                                                "output_scale": 100.0}, seed=612),
        Case("conv-valid", conv, {"input_zero_point": -1, "output_zero_point": 2, "output_scale": 0.2}, seed=700),
        Case("conv-same-stride2", conv, {"padding": "SAME", "stride": 2, "input_shape": [2, 9, 7, 3],
                                         "input_zero_point": 4, "output_scale": 0.2}, seed=701),
        Case("conv-dilation2-per-channel", conv, {"dilation": 2, "input_shape": [1, 9, 9, 4], "per_channel": True,
                                                  "output_scale": 0.2}, seed=702),
        Case("conv-ties-pow2", conv, {"multiplier": 1073741824, "shift": -1, "padding": "SAME",
                                      "input_range": [-4, 4], "weight_range": [-4, 4]}, seed=703),
        Case("conv-1x1-relu6", conv, {"kernel": [1, 1], "input_shape": [1, 6, 6, 16], "out_channels": 16,
                                      "activation": "relu6", "output_zero_point": -128, "output_scale": 0.03},
             seed=704),
        Case("conv-large-sampled", conv, {"input_shape": [2, 16, 16, 16], "out_channels": 32, "padding": "SAME",
                                          "per_channel": True, "output_scale": 0.3}, seed=705),
        Case("dw-valid", dw, {"input_zero_point": -2, "output_zero_point": 1, "output_scale": 0.05}, seed=800),
        Case("dw-mult2-same", dw, {"depth_multiplier": 2, "padding": "SAME", "input_shape": [1, 7, 7, 3],
                                   "per_channel": True, "output_scale": 0.05}, seed=801),
        Case("dw-stride2-ties", dw, {"stride": 2, "padding": "SAME", "multiplier": 1073741824, "shift": -3,
                                     "input_shape": [2, 8, 8, 5], "input_range": [-16, 16],
                                     "weight_range": [-16, 16]}, seed=802),
        Case("dw-saturate-single", dw, {"output_scale": 0.002, "scheme": "single"}, seed=803),
    ]


def default_suite(quick: bool = False) -> list:
    """The built-in cases (``quick``: every third one, and every op at least once)."""
    cases = _tf_cases() + _affine_cases() + _pof2_cases() + _relu_cases() + _kernel_cases()
    if not quick:
        return cases
    keep, seen_ops = [], set()
    for i, c in enumerate(cases):
        if i % 3 == 0 or c.op not in seen_ops:
            keep.append(c)
            seen_ops.add(c.op)
    return keep
