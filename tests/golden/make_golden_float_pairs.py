"""Float models and their quantized twins, for ``dspsim validate --float-model`` (issue 30 item 6).

One small CNN, a ``tf.function`` with seeded weights (12x12x3 input: conv 3x3 + ReLU, depthwise 3x3 + ReLU6,
max pool 2x2, conv 1x1, global mean, dense 10), in both formats:

* ``tf_cnn_float.tflite``: TF's converter, no optimizations (float32 throughout);
* ``tf_cnn_int8.tflite``: TF's converter, full-integer (``TFLITE_BUILTINS_INT8``, int8 inputs and outputs,
  per-channel weights), a seeded representative dataset of 32 N(0, 1) inputs;
* ``tf_cnn_int8_float_io.tflite``: the same with float inputs and outputs (QUANTIZE ... DEQUANTIZE; the converter
  renames the integer tensors at both ends: ``tfl.quantize``, ``Identity1``);
* ``onnx_cnn_float.onnx``: the same network and weights (NCHW) built with onnx.helper;
* ``onnx_cnn_qdq.onnx``: ``quantize_static`` QDQ, int8 activations and weights, per channel;
* ``onnx_cnn_qop.onnx``: ``quantize_static`` QOperator, uint8 activations, int8 weights, per tensor
  (ORT folds the ReLUs into QLinearConv and names its output after the convolution's: matching rule 2).

``float_pairs.npz``: ``x`` (4 float32 inputs, NHWC, N(0, 1), seed 7), ``x_int8`` (them quantized as the int8
model's input), ``float/<tensor name>`` (LiteRT BUILTIN_REF on the float .tflite fed ``x_int8`` dequantized, as
``dspsim validate`` feeds it: every operator output, ``experimental_preserve_all_tensors``), ``int8/<tensor name>``
(the same for the int8 model on ``x_int8``) and ``versions``.

Run from the repository root with a Python that has tensorflow-cpu (2.21), ai-edge-litert, onnx and onnxruntime::

    python tests/golden/make_golden_float_pairs.py     # ~20 s; the .tflite files are deterministic for one TF
"""
from __future__ import annotations

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "float_pairs")
SHAPE = (1, 12, 12, 3)
SAMPLES = 4


def weights():
    """Seeded weights, TensorFlow layouts: conv HWIO, depthwise HWC1, dense (in, out)."""
    rng = np.random.default_rng(3)

    def he(shape, fan_in):
        return (rng.normal(size=shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(n):
        return rng.normal(0, 0.2, n).astype(np.float32)

    return {"conv1": (he((3, 3, 3, 8), 27), bias(8)), "dw": (he((3, 3, 8, 1), 9), bias(8)),
            "pw": (he((1, 1, 8, 12), 8), bias(12)), "logits": (he((12, 10), 12), bias(10))}


def tf_function(w):
    import tensorflow as tf

    def net(x):
        y = tf.nn.relu(tf.nn.conv2d(x, w["conv1"][0], 1, "SAME") + w["conv1"][1])
        y = tf.nn.relu6(tf.nn.depthwise_conv2d(y, w["dw"][0], [1, 1, 1, 1], "SAME") + w["dw"][1])
        y = tf.nn.max_pool2d(y, 2, 2, "VALID")
        y = tf.nn.conv2d(y, w["pw"][0], 1, "VALID") + w["pw"][1]
        y = tf.reduce_mean(y, axis=[1, 2])
        return tf.matmul(y, w["logits"][0]) + w["logits"][1]

    return tf.function(net).get_concrete_function(tf.TensorSpec(SHAPE, tf.float32))


def tflite_models(w):
    """The float model, the full-integer one with int8 I/O, and with float I/O (QUANTIZE ... DEQUANTIZE)."""
    import tensorflow as tf

    conc = tf_function(w)
    float_model = tf.lite.TFLiteConverter.from_concrete_functions([conc]).convert()

    def int8(io):
        rng = np.random.default_rng(11)

        def rep():
            for _ in range(32):
                yield [rng.normal(size=SHAPE).astype(np.float32)]

        conv = tf.lite.TFLiteConverter.from_concrete_functions([conc])
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = rep
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if io is not None:
            conv.inference_input_type = conv.inference_output_type = io
        return conv.convert()

    return float_model, int8(tf.int8), int8(None)


def onnx_float(w):
    """The network in ONNX (NCHW), with the same weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.ascontiguousarray(a, np.float32), n) for n, a in [
        ("conv1_w", w["conv1"][0].transpose(3, 2, 0, 1)), ("conv1_b", w["conv1"][1]),
        ("dw_w", w["dw"][0].transpose(2, 3, 0, 1)), ("dw_b", w["dw"][1]),
        ("pw_w", w["pw"][0].transpose(3, 2, 0, 1)), ("pw_b", w["pw"][1]),
        ("logits_w", w["logits"][0]), ("logits_b", w["logits"][1]),
        ("zero", np.float32(0)), ("six", np.float32(6))]]
    n = helper.make_node
    nodes = [n("Conv", ["image", "conv1_w", "conv1_b"], ["conv1"], pads=[1] * 4, name="conv1"),
             n("Relu", ["conv1"], ["conv1_relu"], name="conv1_relu"),
             n("Conv", ["conv1_relu", "dw_w", "dw_b"], ["dw"], pads=[1] * 4, group=8, name="dw"),
             n("Clip", ["dw", "zero", "six"], ["dw_relu6"], name="dw_relu6"),
             n("MaxPool", ["dw_relu6"], ["pool"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             n("Conv", ["pool", "pw_w", "pw_b"], ["pw"], name="pw"),
             n("GlobalAveragePool", ["pw"], ["gap"], name="gap"),
             n("Flatten", ["gap"], ["flat"], name="flat"),
             n("Gemm", ["flat", "logits_w", "logits_b"], ["logits"], name="logits")]
    nchw = (1, SHAPE[3], SHAPE[1], SHAPE[2])
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("image", TensorProto.FLOAT, nchw)],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, (1, 10))], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_golden_float_pairs")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def onnx_quantized(float_path, out, fmt, activation, per_channel):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(11)
    nchw = (1, SHAPE[3], SHAPE[1], SHAPE[2])

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.left = [{"image": rng.normal(size=nchw).astype(np.float32)} for _ in range(32)]

        def get_next(self):
            return self.left.pop(0) if self.left else None

    quantize_static(float_path, out, Reader(), quant_format=getattr(QuantFormat, fmt),
                    activation_type=getattr(QuantType, activation), weight_type=QuantType.QInt8,
                    per_channel=per_channel)


def litert_tensors(model_bytes, xs):
    """{tensor name: (n, ...)} of every operator output under BUILTIN_REF."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_content=model_bytes, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    idx = sorted({o for op in it._get_ops_details() for o in op["outputs"]})
    details = {d["index"]: d for d in it.get_tensor_details()}
    out = {details[i]["name"]: [] for i in idx}
    for x in xs:
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        for i in idx:
            out[details[i]["name"]].append(it.get_tensor(i).copy())
    return {k: np.stack(v) for k, v in out.items()}


def main():
    import ai_edge_litert
    import onnx
    import onnxruntime
    import tensorflow as tf

    os.makedirs(HERE, exist_ok=True)
    w = weights()
    float_tfl, int8_tfl, float_io_tfl = tflite_models(w)
    files = {"tf_cnn_float.tflite": float_tfl, "tf_cnn_int8.tflite": int8_tfl,
             "tf_cnn_int8_float_io.tflite": float_io_tfl}
    for name, data in files.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
    float_onnx = os.path.join(HERE, "onnx_cnn_float.onnx")
    onnx.save(onnx_float(w), float_onnx)
    onnx_quantized(float_onnx, os.path.join(HERE, "onnx_cnn_qdq.onnx"), "QDQ", "QInt8", True)
    onnx_quantized(float_onnx, os.path.join(HERE, "onnx_cnn_qop.onnx"), "QOperator", "QUInt8", False)

    from ai_edge_litert.interpreter import Interpreter

    inp = Interpreter(model_content=int8_tfl).get_input_details()[0]
    scale, zp = inp["quantization"]
    xs = np.random.default_rng(7).normal(size=(SAMPLES, *SHAPE)).astype(np.float32)
    xq = np.clip(np.round(xs / np.float32(scale)) + zp, -128, 127).astype(np.int8)
    x_deq = ((xq.astype(np.float64) - zp) * scale).astype(np.float32)  # what validate gives the float model
    arrays = {"x": xs, "x_int8": xq}
    arrays.update({f"float/{k}": v for k, v in litert_tensors(float_tfl, x_deq).items()})
    arrays.update({f"int8/{k}": v for k, v in litert_tensors(int8_tfl, xq).items()})
    versions = {"tensorflow": tf.__version__, "ai_edge_litert": ai_edge_litert.__version__,
                "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}
    np.savez_compressed(os.path.join(HERE, "float_pairs.npz"), versions=np.asarray(json.dumps(versions)), **arrays)
    print(f"wrote {len(files) + 3} models and float_pairs.npz ({len(arrays)} arrays) to {HERE}")


if __name__ == "__main__":
    main()
