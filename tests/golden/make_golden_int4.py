"""4-bit weights: packed INT4 (and UINT4) filters of FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D, from every engine.

Run with ai-edge-litert 2.3.0, tflite-micro and ai-edge-quantizer 0.10.0 installed, from the repository root (about
a minute)::

    python tests/golden/make_golden_int4.py

One-operator models built from the schema objects (``_tflite_edit.one_op_model``) whose weight tensor has type INT4
(UINT4 for one case): two 4-bit codes per byte, the first in the low nibble (LiteRT and TFLite Micro's
``UnpackDenseInt4IntoInt8``), an odd count ending in a half-used byte. Weights hold every code (-8..7), scales per
channel or per tensor; int8 activations, and int16 activations for FULLY_CONNECTED (16x4, an int64 bias). Each model
runs under ``tflm``, ``litert_ref``, ``litert_default`` and ``litert_optimized`` (``make_golden_ops.record_case``:
one subprocess per engine, refusals and crashes recorded) on 2 input sets. LiteRT's 16x4 DEPTHWISE_CONV_2D
reads the packed weights as int8 codes, out of bounds: recorded as ``undefined`` (nothing to reproduce).

Then the models a user gets from the AI Edge Quantizer (``aeq_*``): float FULLY_CONNECTED and CONV_2D models (with a
signature; the quantizer leaves a DEPTHWISE_CONV_2D in float, a float island) quantized by ``ai_edge_quantizer.Quantizer`` with 4-bit weights (per
channel; per tensor for one FC) and 8- or 16-bit activations, calibrated on 16 seeded normal draws: float in and out
(QUANTIZE -> op -> DEQUANTIZE). Output: ``tests/golden/ops/int4.npz``
(the packed format of ``make_golden_ops.py``) and the models ``ops/int4_*.tflite``.
"""
from __future__ import annotations

import os
import sys
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _tflite_edit import S, load, one_op_model, save  # noqa: E402
from make_golden_ops import Case, write_family  # noqa: E402

OP, OPT, T = S.BuiltinOperator, S.BuiltinOptions, S.TensorType


def pack_int4(codes):
    """Two 4-bit codes per byte, the first in the low nibble; an odd count leaves the last high nibble 0."""
    flat = np.asarray(codes, np.int64).ravel() & 0xF
    if flat.size % 2:
        flat = np.append(flat, 0)
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


def _model(code, opt_type, opt, x, w, bias, y, w_scales, axis, w_type=T.INT4, w_zp=0):
    """``x``/``y``: (shape, type, scale, zero point); ``w``: the codes; ``bias``: (values, type) or None."""
    tensors = [("x", x[0], x[1], x[2], x[3], None), ("w", w.shape, w_type, 1.0, 0, pack_int4(w))]
    if bias is not None:
        tensors.append(("b", bias[0].shape, bias[1], 1.0, 0, bias[0]))
    tensors.append(("y", y[0], y[1], y[2], y[3], None))
    n = len(tensors)
    model = load(one_op_model(code, opt_type, opt, tensors, list(range(n - 1)), [n - 1]))
    sg = model.subgraphs[0]
    q = sg.tensors[1].quantization
    q.scale = [float(np.float32(s)) for s in np.atleast_1d(w_scales)]
    q.zeroPoint = [int(w_zp)] * len(q.scale)
    q.quantizedDimension = axis
    if bias is not None:
        qb = sg.tensors[2].quantization
        qb.scale = [float(np.float32(np.float32(x[2]) * np.float32(s))) for s in np.atleast_1d(w_scales)]
        qb.zeroPoint = [0] * len(qb.scale)
        qb.quantizedDimension = 0
    return save(model)


def cases():
    rng = np.random.default_rng(zlib.crc32(b"int4"))
    out = []
    fc = S.FullyConnectedOptionsT()
    i8, i16 = T.INT8, T.INT16

    def codes(*shape, lo=-8, hi=8):
        return rng.integers(lo, hi, shape)

    def bias32(n):
        return rng.integers(-3000, 3000, n).astype(np.int32), T.INT32

    scales8 = rng.uniform(0.005, 0.05, 8)
    for name, w, ws, b, what in (
            ("fc_per_channel", codes(8, 40), scales8, bias32(8), "FC 40 -> 8, per-channel INT4 weights"),
            ("fc_per_tensor", codes(8, 40), 0.02, bias32(8), "FC 40 -> 8, per-tensor INT4 weights"),
            ("fc_odd_count", codes(5, 7), 0.03, None, "FC 7 -> 5 (35 codes: a half-used last byte), no bias")):
        out.append(Case("int4", f"int4_{name}", _model(OP.FULLY_CONNECTED, OPT.FullyConnectedOptions, fc,
                                                       ((2, w.shape[1]), i8, 0.05, 3), w, b,
                                                       ((2, w.shape[0]), i8, 0.3, -5), ws, 0), what))
    w = codes(8, 40)
    out.append(Case("int4", "int4_fc_16x4", _model(
        OP.FULLY_CONNECTED, OPT.FullyConnectedOptions, fc, ((2, 40), i16, 0.001, 0), w,
        (rng.integers(-30000, 30000, 8).astype(np.int64), T.INT64), ((2, 8), i16, 0.004, 0), scales8, 0),
        "FC 40 -> 8, int16 activations, INT4 weights, int64 bias"))
    w = codes(8, 40, lo=0, hi=16)
    out.append(Case("int4", "int4_fc_uint4", _model(
        OP.FULLY_CONNECTED, OPT.FullyConnectedOptions, fc, ((2, 40), i8, 0.05, 3), w, bias32(8),
        ((2, 8), i8, 0.3, -5), 0.02, 0, w_type=T.UINT4, w_zp=8), "FC 40 -> 8, UINT4 weights (zero point 8)"))
    conv = S.Conv2DOptionsT()
    conv.padding, conv.strideH, conv.strideW = S.Padding.SAME, 1, 1
    conv.dilationHFactor = conv.dilationWFactor = 1
    out.append(Case("int4", "int4_conv_per_channel", _model(
        OP.CONV_2D, OPT.Conv2DOptions, conv, ((1, 6, 6, 3), i8, 0.05, -7), codes(4, 3, 3, 3), bias32(4),
        ((1, 6, 6, 4), i8, 0.2, 2), scales8[:4], 0), "CONV_2D 3x3 SAME, 3 -> 4 channels, per-channel INT4"))
    dw = S.DepthwiseConv2DOptionsT()
    dw.padding, dw.strideH, dw.strideW, dw.depthMultiplier = S.Padding.SAME, 1, 1, 2
    dw.dilationHFactor = dw.dilationWFactor = 1
    out.append(Case("int4", "int4_depthwise_per_channel", _model(
        OP.DEPTHWISE_CONV_2D, OPT.DepthwiseConv2DOptions, dw, ((1, 6, 6, 4), i8, 0.05, -7), codes(1, 3, 3, 8),
        bias32(8), ((1, 6, 6, 8), i8, 0.2, 2), scales8, 3),
        "DEPTHWISE_CONV_2D 3x3 SAME, 4 channels x 2, per-channel INT4"))
    out.append(Case("int4", "int4_conv_16x4", _model(
        OP.CONV_2D, OPT.Conv2DOptions, conv, ((1, 6, 6, 3), i16, 0.001, 0), codes(4, 3, 3, 3),
        (rng.integers(-30000, 30000, 4).astype(np.int64), T.INT64), ((1, 6, 6, 4), i16, 0.004, 0), scales8[:4], 0),
        "CONV_2D 3x3 SAME, int16 activations, per-channel INT4, int64 bias"))
    out.append(Case("int4", "int4_depthwise_16x4", _model(
        OP.DEPTHWISE_CONV_2D, OPT.DepthwiseConv2DOptions, dw, ((1, 6, 6, 4), i16, 0.001, 0), codes(1, 3, 3, 8),
        (rng.integers(-30000, 30000, 8).astype(np.int64), T.INT64), ((1, 6, 6, 8), i16, 0.004, 0), scales8, 3),
        "DEPTHWISE_CONV_2D 3x3 SAME, int16 activations, per-channel INT4, int64 bias",
        undefined={e: "LiteRT depthwise_conv.cc EvalQuantizedPerChannel16x8 reads the packed INT4 weights as int8 "
                      "codes, past the end of the buffer" for e in ("litert_ref", "litert_default", "litert_optimized")}))
    out.append(Case("int4", "int4_conv_per_tensor", _model(
        OP.CONV_2D, OPT.Conv2DOptions, conv, ((1, 6, 6, 3), i8, 0.05, -7), codes(4, 3, 3, 3), bias32(4),
        ((1, 6, 6, 4), i8, 0.2, 2), 0.02, 0), "CONV_2D 3x3 SAME, 3 -> 4 channels, per-tensor INT4"))
    return out


def _float_model(code, opt_type, opt, x_shape, w, b, y_shape, path):
    """A float32 one-op model with a ``serving_default`` signature (x -> y), written to ``path``."""
    F = T.FLOAT32
    model = load(one_op_model(code, opt_type, opt, [("x", x_shape, F, None, 0, None), ("w", w.shape, F, None, 0, w),
                                                    ("b", b.shape, F, None, 0, b), ("y", y_shape, F, None, 0, None)],
                              [0, 1, 2], [3]))
    sd = S.SignatureDefT()
    sd.signatureKey, sd.subgraphIndex = "serving_default", 0
    sd.inputs, sd.outputs = [S.TensorMapT(), ], [S.TensorMapT()]
    sd.inputs[0].name, sd.inputs[0].tensorIndex = "x", 0
    sd.outputs[0].name, sd.outputs[0].tensorIndex = "y", 3
    model.signatureDefs = [sd]
    with open(path, "wb") as f:
        f.write(save(model))


def aeq_cases(tmp):
    """The AI Edge Quantizer's INT4-weight models of three float layers."""
    from ai_edge_quantizer import qtyping, quantizer  # noqa: PLC0415 (only this part needs it)

    rng = np.random.default_rng(zlib.crc32(b"aeq"))
    conv = S.Conv2DOptionsT()
    conv.padding, conv.strideH, conv.strideW, conv.dilationHFactor, conv.dilationWFactor = S.Padding.SAME, 1, 1, 1, 1
    layers = {
        "fc": (OP.FULLY_CONNECTED, OPT.FullyConnectedOptions, S.FullyConnectedOptionsT(), (1, 40), (8, 40), (1, 8)),
        "conv": (OP.CONV_2D, OPT.Conv2DOptions, conv, (1, 8, 8, 3), (6, 3, 3, 3), (1, 8, 8, 6)),
    }  # DEPTHWISE_CONV_2D: the quantizer (0.10.0) leaves it float (DEQUANTIZE -> float op -> QUANTIZE)
    out = []
    for layer, bits, granularity in (("fc", 8, "CHANNELWISE"), ("fc", 8, "TENSORWISE"), ("fc", 16, "CHANNELWISE"),
                                     ("conv", 8, "CHANNELWISE"), ("conv", 16, "CHANNELWISE")):
        code, opt_type, opt, x_shape, w_shape, y_shape = layers[layer]
        path = os.path.join(tmp, f"{layer}.tflite")
        _float_model(code, opt_type, opt, x_shape, rng.normal(0, 0.3, w_shape).astype(np.float32),
                     rng.normal(0, 0.1, w_shape[0]).astype(np.float32), y_shape, path)
        qt = quantizer.Quantizer(path)
        qt.add_static_config(".*", qtyping.TFLOperationName.ALL_SUPPORTED, activation_num_bits=bits,
                             weight_num_bits=4, weight_granularity=qtyping.QuantGranularity[granularity])
        calibration = {"serving_default": [{"x": rng.normal(0, 1, x_shape).astype(np.float32)} for _ in range(16)]}
        result = qt.quantize(qt.calibrate(calibration))
        name = f"int4_aeq_{layer}_a{bits}_{granularity.lower()}"
        out.append(Case("int4", name, bytes(result.quantized_model),
                        f"AI Edge Quantizer: float {layer} -> INT4 weights ({granularity.lower()}), int{bits} "
                        "activations, float in and out"))
    return out


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        write_family(cases() + aeq_cases(scratch), "int4")
