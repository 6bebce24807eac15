"""Descriptors of the mac family: FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, BATCH_MATMUL.

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..accumulator import Accumulator
from ..fixedpoint import quantize_multiplier
from ..kernels.mac.batch_matmul import batch_matmul
from ..kernels.mac.conv import conv2d, depthwise_conv2d
from ..kernels.mac.dense import fully_connected
from ..kernels.mac.gemm import pack_weights
from ..kernels.activation import tflite_activation_range
from ..kernels.mac.transpose_conv import transpose_conv
from ..requant import Requant
from .descriptor import Operator, SuiteCase, random_codes, register


def _examples():
    """Every requantization scheme, output type, accumulator path and weight form, on tiny inputs."""

    x = np.arange(-4, 4, dtype=np.int8).reshape(2, 4)
    w = np.ones((3, 4), np.int8)
    quant = dict(input_zero_point=1, output_zero_point=2, multiplier=1 << 30, shift=-1)
    scales = dict(input_zero_point=0, output_zero_point=0, input_scale=0.1, weight_scale=0.2, output_scale=0.3)
    calls = [dict(x=x, w=w, **quant, out_dtype=dt) for dt in ("uint8", "int16")]
    for xx in (x, x.astype(np.uint8)):
        calls += [dict(x=xx, w=w, bias=np.arange(3, dtype=np.int32), **quant),
                  dict(x=xx, w=pack_weights(w), **quant, rounding="single"),
                  dict(x=xx, w=w, **quant, accumulator=Accumulator(16, "saturate"), stats=True),
                  dict(x=xx, w=w, **quant, accumulator=Accumulator(40))]  # exact int64 sums
    calls += [dict(x=x, w=w, **scales, requant=rq, out_dtype=dt)
              for rq in ("fbgemm", "onnxruntime", "onnx-reference", "onednn", "litert") for dt in ("int8", "uint8")]
    calls.append(dict(x=x, w=w, bias=np.ones(3, np.float32), **dict(scales, weight_scale=np.full(3, 0.2)),
                      requant="fbgemm"))
    calls.append(dict(x=x, w=w, input_zero_point=0, output_zero_point=0, requant="shift", shift=-2))
    x16, b64 = x.astype(np.int16) * 8000, np.array([1 << 40, -3, 0], np.int64)  # 16x8: int64 bias and sum
    calls += [dict(x=x16, w=w, bias=b64, input_zero_point=0, output_zero_point=0, out_dtype="int16", requant=rq,
                   **sc) for rq, sc in ((Requant.fixed_point(1 << 30, -20, "int64"), {}),
                                        ("litert", dict(input_scale=1e-4, weight_scale=0.01, output_scale=0.5)))]
    return calls


def _register_dense():
    fc = "fully_connected"
    register(Operator(
        fc, fully_connected, ref.fully_connected_oracle, _examples,
        "TFLite FullyConnected (per-tensor or per-channel); schemes: single rounding, float requantization",
        study=fc,
        cases=(SuiteCase("fc-basic", {"input_zero_point": -3, "output_zero_point": 5}, 600),
               SuiteCase("fc-single", {"input_zero_point": -3, "output_zero_point": 5, "scheme": "single"}, 600),
               SuiteCase("fc-per-channel", {"per_channel": True, "input_zero_point": 7, "output_zero_point": -2}, 601),
               SuiteCase("fc-ties-pow2", {"multiplier": 1073741824, "shift": -1, "input_range": [-8, 8],
                                          "weight_range": [-8, 8]}, 602),
               SuiteCase("fc-ties-pow2-odd-zp", {"multiplier": 1073741824, "shift": -2, "input_zero_point": 1,
                                                 "output_zero_point": 3, "input_range": [-8, 8],
                                                 "weight_range": [-8, 8]}, 603),
               SuiteCase("fc-left-shift", {"input_scale": 0.05, "weight_scale": 0.02, "output_scale": 0.0004,
                                           "in_features": 8, "input_range": [-3, 3], "weight_range": [-8, 8],
                                           "bias_spread": 0.0}, 604),
               SuiteCase("fc-saturate", {"output_scale": 0.002}, 605),
               SuiteCase("fc-narrow-relu", {"weight_range": "narrow", "activation": "relu", "output_zero_point": -128,
                                            "output_scale": 0.05}, 606),
               SuiteCase("fc-relu6", {"activation": "relu6", "output_zero_point": -128, "output_scale": 0.03}, 607),
               SuiteCase("fc-uint8-in", {"input_dtype": "uint8", "input_zero_point": 128, "output_zero_point": 0},
                         608),
               SuiteCase("fc-fbgemm", {"input_dtype": "uint8", "input_zero_point": 128, "output_dtype": "uint8",
                                       "output_zero_point": 128, "scheme": "fbgemm"}, 609),
               SuiteCase("fc-large-sampled", {"batch": 64, "in_features": 256, "out_features": 64,
                                              "per_channel": True}, 610),
               SuiteCase("fc-accumulator-16-saturate", {"accumulator_bits": 16, "accumulator_overflow": "saturate",
                                                        "in_features": 128}, 611),
               SuiteCase("fc-accumulator-16-wrap", {"accumulator_bits": 16, "accumulator_overflow": "wrap",
                                                    "in_features": 128}, 611),
               SuiteCase("fc-accumulator-24-saturate", {"accumulator_bits": 24, "accumulator_overflow": "saturate",
                                                        "batch": 2, "in_features": 1024, "out_features": 8,
                                                        "input_range": [64, 127], "weight_range": [64, 127],
                                                        "output_scale": 100.0}, 612))))


def _quant_examples():
    return dict(input_zero_point=1, output_zero_point=2, multiplier=1 << 30, shift=-1)


def _quant16_examples():
    """16x8: zero points 0, an int64 bias beyond int32, the "int64" scheme."""

    return dict(input_zero_point=0, output_zero_point=0, bias=np.array([1 << 40, -3], np.int64), out_dtype="int16",
                requant=Requant.fixed_point(1 << 30, -20, "int64"))


def _conv_examples():
    x = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)
    q = _quant_examples()
    calls = []
    for xx in (x, x.astype(np.uint8)):
        calls += [dict(x=xx, w=np.ones((2, 2, 2, 2), np.int8), padding="SAME", **q),
                  dict(x=xx, w=np.ones((2, 1, 1, 1), np.int8), **q)]
    calls.append(dict(x=x.astype(np.int16) * 4000, w=np.ones((2, 2, 2, 2), np.int8), padding="SAME",
                      **_quant16_examples()))
    return calls


def _depthwise_examples():
    x = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)
    q = _quant_examples()
    calls = [dict(x=x, w=np.ones((1, 2, 2, 2), np.int8), **q, out_dtype=dt) for dt in ("uint8", "int16")]
    for xx in (x, x.astype(np.uint8)):
        calls += [dict(x=xx, w=np.ones((1, 2, 2, 2), np.int8), padding="SAME", **q),
                  dict(x=xx, w=np.ones((1, 2, 2, 4), np.int8), depth_multiplier=2, **q, accumulator=Accumulator(64))]
    calls.append(dict(x=x.astype(np.int16) * 4000, w=np.ones((1, 2, 2, 2), np.int8), **_quant16_examples()))
    return calls


def _register_conv():
    register(Operator(
        "conv2d", conv2d, ref.conv2d_oracle, _conv_examples,
        "TFLite Conv2D, NHWC / OHWI; schemes: single rounding, float requantization", study="conv2d",
        cases=(SuiteCase("conv-valid", {"input_zero_point": -1, "output_zero_point": 2, "output_scale": 0.2}, 700),
               SuiteCase("conv-same-stride2", {"padding": "SAME", "stride": 2, "input_shape": [2, 9, 7, 3],
                                               "input_zero_point": 4, "output_scale": 0.2}, 701),
               SuiteCase("conv-dilation2-per-channel", {"dilation": 2, "input_shape": [1, 9, 9, 4],
                                                        "per_channel": True, "output_scale": 0.2}, 702),
               SuiteCase("conv-ties-pow2", {"multiplier": 1073741824, "shift": -1, "padding": "SAME",
                                            "input_range": [-4, 4], "weight_range": [-4, 4]}, 703),
               SuiteCase("conv-1x1-relu6", {"kernel": [1, 1], "input_shape": [1, 6, 6, 16], "out_channels": 16,
                                            "activation": "relu6", "output_zero_point": -128, "output_scale": 0.03},
                         704),
               SuiteCase("conv-large-sampled", {"input_shape": [2, 16, 16, 16], "out_channels": 32,
                                                "padding": "SAME", "per_channel": True, "output_scale": 0.3}, 705))))
    register(Operator(
        "depthwise_conv2d", depthwise_conv2d, ref.depthwise_conv2d_oracle, _depthwise_examples,
        "TFLite DepthwiseConv2D, w (1, H, W, C*M); schemes: single rounding, float requantization",
        study="depthwise_conv2d",
        cases=(SuiteCase("dw-valid", {"input_zero_point": -2, "output_zero_point": 1, "output_scale": 0.05}, 800),
               SuiteCase("dw-mult2-same", {"depth_multiplier": 2, "padding": "SAME", "input_shape": [1, 7, 7, 3],
                                           "per_channel": True, "output_scale": 0.05}, 801),
               SuiteCase("dw-stride2-ties", {"stride": 2, "padding": "SAME", "multiplier": 1073741824, "shift": -3,
                                             "input_shape": [2, 8, 8, 5], "input_range": [-16, 16],
                                             "weight_range": [-16, 16]}, 802),
               SuiteCase("dw-saturate-single", {"output_scale": 0.002, "scheme": "single"}, 803))))


_TCONV = {"input_shape": [2, 4, 5, 3], "out_channels": 4, "kernel": [3, 3], "stride": [2, 2], "padding": "SAME",
          "input_scale": 0.05, "output_scale": 0.1, "input_zero_point": 0, "output_zero_point": 0,
          "engine": "tflm", "bias": True, "activation": "none"}


def _output_size(p):
    (h, w), (kh, kw), (sh, sw) = p["input_shape"][1:3], p["kernel"], p["stride"]
    if p["padding"] == "SAME":
        return h * sh, w * sw
    return (h - 1) * sh + kh, (w - 1) * sw + kw


def _tconv_case(p, rng):
    c_in, c_out = p["input_shape"][3], p["out_channels"]
    ws = (rng.uniform(0.5, 2.0, c_out) * 0.01).astype(np.float32)
    lo, hi = tflite_activation_range(p["activation"], p["output_scale"], p["output_zero_point"], "int8")
    return dict(x=random_codes(rng, p["input_shape"], "int8"),
                w=random_codes(rng, [c_out, *p["kernel"], c_in], "int8"),
                bias=rng.integers(-3000, 3000, c_out).astype(np.int32) if p["bias"] else None,
                output_size=_output_size(p), stride=tuple(p["stride"]), padding=p["padding"],
                input_zero_point=p["input_zero_point"], output_zero_point=p["output_zero_point"],
                requant=Requant.from_scales(p["input_scale"], ws, p["output_scale"], engine=p["engine"], op="transpose_conv"),
                act_min=lo, act_max=hi)


def _register_transpose_conv():
    x = np.arange(-8, 10, dtype=np.int8).reshape(1, 3, 3, 2)
    w = np.arange(-6, 6, dtype=np.int8).reshape(3, 2, 1, 2)
    register(Operator(
        "transpose_conv", transpose_conv, ref.transpose_conv_oracle,
        lambda: [dict(x=x, w=w, bias=np.array([5, -7, 100], np.int32), output_size=(6, 6), stride=2, padding="SAME",
                      input_zero_point=1, output_zero_point=-2,
                      requant=Requant.from_scales(0.1, np.array([0.01, 0.02, 0.03]), 0.05, engine=e,
                                                  op="transpose_conv"))
                 for e in ("tflm", "xnnpack")],
        "TFLite int8 TRANSPOSE_CONV (int32 scratch, per-channel requantization: TFLite or XNNPACK)",
        generate=_tconv_case, params=_TCONV,
        choices={"padding": ("SAME", "VALID"), "engine": ("tflm", "xnnpack"),
                 "activation": ("none", "relu", "relu6", "relu_n1_to_1")},
        cases=(SuiteCase("transpose-conv-s2-same", {"input_zero_point": -5, "output_zero_point": 3}, 1260),
               SuiteCase("transpose-conv-s2-valid-relu", {"padding": "VALID", "activation": "relu",
                                                         "output_zero_point": -20}, 1261),
               SuiteCase("transpose-conv-s3-k2-xnnpack", {"kernel": [2, 2], "stride": [3, 3], "engine": "xnnpack",
                                                         "input_zero_point": 4}, 1262),
               SuiteCase("transpose-conv-s1-no-bias-saturate", {"stride": [1, 1], "bias": False,
                                                               "output_scale": 0.005}, 1263))))


_BMM = {"x_shape": [2, 1, 3, 5, 40], "y_shape": [1, 4, 1, 40, 6], "adj_x": False, "adj_y": False,
        "x_scale": 0.05, "y_scale": 0.03, "output_scale": 0.3, "x_zero_point": 0, "y_zero_point": 0,
        "output_zero_point": 0}


def _bmm_case(p, rng):
    m, s = quantize_multiplier(float(np.float32(p["x_scale"])) * float(np.float32(p["y_scale"]))
                               / float(np.float32(p["output_scale"])))
    return dict(x=random_codes(rng, p["x_shape"], "int8"), y=random_codes(rng, p["y_shape"], "int8"),
                adj_x=p["adj_x"], adj_y=p["adj_y"], x_zero_point=p["x_zero_point"], y_zero_point=p["y_zero_point"],
                output_zero_point=p["output_zero_point"], multiplier=m, shift=s)


def _register_batch_matmul():
    tiny = np.arange(-6, 6, dtype=np.int8).reshape(1, 3, 4)
    register(Operator(
        "batch_matmul", batch_matmul, ref.batch_matmul_oracle,
        lambda: [dict(x=tiny, y=tiny, adj_x=False, adj_y=True, x_zero_point=1, y_zero_point=-2, output_zero_point=3,
                      multiplier=1 << 30, shift=-3)],
        "TFLite int8 BATCH_MATMUL (adj_x/adj_y, broadcast batch dims; LiteRT = TFLM)",
        generate=_bmm_case, params=_BMM,
        cases=(SuiteCase("batch-matmul-broadcast-rank5", {"x_zero_point": -5, "y_zero_point": 7,
                                                          "output_zero_point": 2}, 1250),
               SuiteCase("batch-matmul-adj-x-adj-y", {"x_shape": [3, 40, 5], "y_shape": [3, 6, 40], "adj_x": True,
                                                      "adj_y": True, "x_zero_point": 3}, 1251),
               SuiteCase("batch-matmul-ties-pow2", {"x_scale": 0.0625, "y_scale": 0.0625, "output_scale": 0.5,
                                                    "x_zero_point": -1}, 1252),
               SuiteCase("batch-matmul-left-shift-saturate", {"output_scale": 0.0001}, 1253))))


_register_dense()
_register_conv()
_register_transpose_conv()
_register_batch_matmul()
