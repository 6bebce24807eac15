"""Build small multi-layer int8 .tflite models and record LiteRT's reference output for every tensor.

Run with the golden venv (tensorflow-cpu 2.21, ai-edge-litert) from the repository root::

    /work/goldvenv/bin/python tests/golden/make_golden_tflite_models.py

Each model is a ``tf.function`` converted by TF's converter with full-integer quantization (a
seeded representative dataset). Some variants then rewrite the scales in the flatbuffer: every
scale rounded to a power of two (``*_pot``: exact ties in every requantization) and, on top,
weight scales multiplied by 2^7 (``*_left``: effective multipliers > 1, i.e. left shifts, and
saturation) and, in ``*_half``, output scales set to give every FC/conv/depthwise an effective
multiplier of exactly 0.5 (ties on every odd accumulator). The bias scale is rewritten to
``s_in * s_w`` so the model stays valid. ``mobilenet`` (32x32x3 input) is kept as converted.

Outputs, in ``tests/golden/models/``: ``<name>.tflite`` and ``<name>.npz`` with, for each of
``runs`` input sets ``r``: ``r{r}/in{k}`` (model input k), ``r{r}/ref/t{i}`` (tensor i after
``OpResolverType.BUILTIN_REF``, the reference kernels, with ``experimental_preserve_all_tensors``),
``r{r}/builtin/t{i}`` (the optimized builtin kernels, ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) and
``r{r}/xnnpack/out{k}`` (model output k under the default interpreter, XNNPACK delegate; the
delegate does not keep intermediate tensors). ``tensors`` lists the indices of every tensor an
operator writes; ``versions`` (JSON) the engine versions. ``refused_relu6_overflow.tflite`` and
``refused_concat_scales.tflite`` (no npz) are for the refusal tests;
``requantize_*`` (int8 -> int8 QUANTIZE) and ``padv2`` are one-op models built from the schema objects.
"""
from __future__ import annotations

import json
import os
import platform
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from ai_edge_litert import __version__ as litert_version  # noqa: E402
from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _tflite_edit import S, convert, load, one_op_model, op_names, save  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
RUNS = 4


# ----------------------------------------------------------------------------------------------
# scale rewrites (the converter and flatbuffer plumbing is in _tflite_edit.py)
# ----------------------------------------------------------------------------------------------
def pot(v):
    return np.float32(2.0 ** np.round(np.log2(np.asarray(v, np.float64))))


def rescale(model_bytes, weight_factor=1.0, half=False):
    """Every float scale to the nearest power of two; weights (constant int8 tensors of rank >= 2)
    times ``weight_factor``; int32 bias scale = s_in * s_w of its operator. ``half``: every
    FC/conv/depthwise gets one weight scale and ``s_out = 2 * s_in * s_w``, an effective multiplier of
    exactly 0.5, where double rounding (SRDHM ties toward +inf) and a single ties-away rounding split."""
    model = load(model_bytes)
    sg = model.subgraphs[0]
    for i, t in enumerate(sg.tensors):
        q = t.quantization
        if q is None or q.scale is None or len(q.scale) == 0:
            continue
        s = pot(q.scale)
        const = model.buffers[t.buffer].data is not None and len(model.buffers[t.buffer].data) > 0
        if const and t.type == S.TensorType.INT8 and len(t.shape) >= 2:
            s = np.float32(s * weight_factor)
        q.scale = [float(v) for v in np.atleast_1d(s)]
        q.min = q.max = None
    names = op_names(model)
    for op, name in zip(sg.operators, names):
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED") and len(op.inputs) > 2 and op.inputs[2] >= 0:
            s_in = np.float32(sg.tensors[op.inputs[0]].quantization.scale[0])
            wq = sg.tensors[op.inputs[1]].quantization
            if half:
                wq.scale = [max(wq.scale)] * len(wq.scale)
                sg.tensors[op.outputs[0]].quantization.scale = [float(np.float32(2 * s_in * wq.scale[0]))]
            s_w = np.asarray(wq.scale, np.float32)
            bq = sg.tensors[op.inputs[2]].quantization
            bq.scale = [float(v) for v in np.float32(s_in * s_w)]
            bq.zeroPoint = [0] * len(bq.scale)
        if half:  # keep the scale-preserving ops consistent (XNNPACK refuses them otherwise)
            q_in = sg.tensors[op.inputs[0]].quantization
            if name in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "RESHAPE", "SQUEEZE", "PAD"):
                sg.tensors[op.outputs[0]].quantization.scale = list(q_in.scale)
            if name == "CONCATENATION":
                for i in list(op.inputs[1:]) + [op.outputs[0]]:
                    sg.tensors[i].quantization.scale = list(q_in.scale)
                    sg.tensors[i].quantization.zeroPoint = list(q_in.zeroPoint)
    return save(model)


# ----------------------------------------------------------------------------------------------
# models
# ----------------------------------------------------------------------------------------------
def _w(rng, *shape, scale=0.3):
    return tf.constant(rng.normal(scale=scale, size=shape).astype(np.float32))


def model_cnn(rng):
    """float in -> QUANTIZE -> conv(relu6) -> depthwise s2 (relu6) -> avg and max pool
    -> concat -> relu -> reshape -> dense -> DEQUANTIZE."""
    w1, b1 = _w(rng, 3, 3, 3, 8), _w(rng, 8, scale=0.1)
    w2, b2 = _w(rng, 3, 3, 8, 1), _w(rng, 8, scale=0.1)
    w3, b3 = _w(rng, 64, 10, scale=0.2), _w(rng, 10, scale=0.1)

    def fn(x):
        y = tf.nn.relu6(tf.nn.conv2d(x, w1, 1, "SAME") + b1)
        y = tf.nn.relu6(tf.nn.depthwise_conv2d(y, w2, [1, 2, 2, 1], "SAME") + b2)
        y = tf.nn.relu(tf.concat([tf.nn.avg_pool2d(y, 2, 2, "VALID"), tf.nn.max_pool2d(y, 2, 2, "VALID") + 0.5], 3))
        y = tf.reshape(y, [1, 64])
        return tf.matmul(y, w3) + b3

    return fn, [(1, 8, 8, 3)], True


def model_branches(rng):
    """conv -> add(residual, relu) -> max pool -> concat(conv branch) -> relu6 -> mean -> dense -> leaky relu."""
    w1, b1 = _w(rng, 3, 3, 4, 4), _w(rng, 4, scale=0.1)
    w2, b2 = _w(rng, 1, 1, 4, 6), _w(rng, 6, scale=0.1)
    w3, b3 = _w(rng, 10, 7, scale=0.3), _w(rng, 7, scale=0.1)

    def fn(x):
        y = tf.nn.conv2d(x, w1, 1, "SAME") + b1
        y = tf.nn.relu(y + x)
        y = tf.nn.max_pool2d(y, 3, 2, "SAME")
        z = tf.nn.conv2d(y, w2, 1, "VALID") + b2
        y = tf.nn.relu6(tf.concat([y, z], axis=3))
        y = tf.reduce_mean(y, axis=[1, 2])
        y = tf.matmul(y, w3) + b3
        return tf.nn.leaky_relu(y, alpha=0.2)

    return fn, [(1, 9, 9, 4)], False


def model_two_inputs(rng):
    """two inputs: pad -> conv VALID s2; mul and add of the branches; concat;
    relu_n1_to_1; reshape; squeeze; dense (relu)."""
    w1, b1 = _w(rng, 3, 3, 2, 3), _w(rng, 3, scale=0.1)
    w2, b2 = _w(rng, 54, 5, scale=0.3), _w(rng, 5, scale=0.1)

    def fn(a, b):
        y = tf.pad(a, [[0, 0], [1, 1], [1, 1], [0, 0]])
        y = tf.nn.conv2d(y, w1, 2, "VALID") + b1
        y = tf.concat([y * b, y + b], axis=3)
        y = tf.reshape(tf.minimum(tf.maximum(y, -1.0), 1.0), [1, 1, 54])
        y = tf.squeeze(y, axis=[0])  # the converter emits RESHAPE: squeeze_last_reshape() turns it into SQUEEZE
        return tf.nn.relu(tf.matmul(y, w2) + b2)

    return fn, [(1, 6, 6, 2), (1, 3, 3, 3)], False


def model_mobilenet(rng):
    """A small MobileNet-style network on 32x32x3: conv s2, two depthwise-separable blocks (relu6),
    global MEAN, dense; per-channel weights, about 20,000 activations per run."""
    w0, b0 = _w(rng, 3, 3, 3, 16, scale=0.25), _w(rng, 16, scale=0.1)
    d1, c1, b1 = _w(rng, 3, 3, 16, 1, scale=0.3), _w(rng, 1, 1, 16, 32, scale=0.2), _w(rng, 32, scale=0.1)
    d2, c2, b2 = _w(rng, 3, 3, 32, 1, scale=0.3), _w(rng, 1, 1, 32, 64, scale=0.15), _w(rng, 64, scale=0.1)
    wf, bf = _w(rng, 64, 10, scale=0.2), _w(rng, 10, scale=0.1)

    def fn(x):
        y = tf.nn.relu6(tf.nn.conv2d(x, w0, 2, "SAME") + b0)
        y = tf.nn.relu6(tf.nn.depthwise_conv2d(y, d1, [1, 1, 1, 1], "SAME"))
        y = tf.nn.relu6(tf.nn.conv2d(y, c1, 1, "VALID") + b1)
        y = tf.nn.relu6(tf.nn.depthwise_conv2d(y, d2, [1, 2, 2, 1], "SAME"))
        y = tf.nn.relu6(tf.nn.conv2d(y, c2, 1, "VALID") + b2)
        y = tf.reduce_mean(y, axis=[1, 2])
        return tf.matmul(y, wf) + bf

    return fn, [(1, 32, 32, 3)], False


def squeeze_last_reshape(model_bytes):
    """Turn the last RESHAPE into a SQUEEZE of dimension 0 (the converter folds tf.squeeze into
    RESHAPE); its output tensor gets the squeezed shape, which the next FULLY_CONNECTED flattens."""
    model = load(model_bytes)
    sg = model.subgraphs[0]
    names = op_names(model)
    k = max(i for i, n in enumerate(names) if n == "RESHAPE")
    op = sg.operators[k]
    code = S.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = S.BuiltinOperator.SQUEEZE
    code.version = 1
    model.operatorCodes.append(code)
    op.opcodeIndex = len(model.operatorCodes) - 1
    op.inputs = op.inputs[:1]
    op.builtinOptionsType = S.BuiltinOptions.SqueezeOptions
    op.builtinOptions = S.SqueezeOptionsT()
    op.builtinOptions.squeezeDims = [0]
    t_in, t_out = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
    assert t_in.shape[0] == 1
    t_out.shape = list(t_in.shape[1:])
    return save(model)


EDITS = {"two_inputs": squeeze_last_reshape}
MODELS = {"cnn": (model_cnn, 1), "branches": (model_branches, 2), "two_inputs": (model_two_inputs, 3),
          "mobilenet": (model_mobilenet, 5)}


# ----------------------------------------------------------------------------------------------
# running LiteRT
# ----------------------------------------------------------------------------------------------
def interpreter(model_bytes, resolver, preserve):
    it = Interpreter(model_content=model_bytes, experimental_op_resolver_type=resolver,
                     experimental_preserve_all_tensors=preserve)
    it.allocate_tensors()
    return it


def run(it, inputs):
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()


def random_inputs(it, model, rng):
    """int8 codes uniform over the type; float inputs uniform over 1.1 x the range of the QUANTIZE
    that reads them."""
    sg = model.subgraphs[0]
    out = []
    for d in it.get_input_details():
        if d["dtype"] == np.float32:
            q_op = next(op for op in sg.operators if d["index"] in list(op.inputs))
            q = sg.tensors[q_op.outputs[0]].quantization
            s, z = q.scale[0], q.zeroPoint[0]
            lo, hi = (-128 - z) * s, (127 - z) * s
            out.append(rng.uniform(lo * 1.1, hi * 1.1, size=d["shape"]).astype(np.float32))
        else:
            out.append(rng.integers(-128, 128, size=d["shape"]).astype(d["dtype"]))
    return out


def record(name, model_bytes, seed):
    path = os.path.join(HERE, f"{name}.tflite")
    with open(path, "wb") as f:
        f.write(model_bytes)
    ref = interpreter(model_bytes, OpResolverType.BUILTIN_REF, True)
    builtin = interpreter(model_bytes, OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES, True)
    xnn = interpreter(model_bytes, OpResolverType.AUTO, False)
    sg = load(model_bytes).subgraphs[0]
    written = sorted({int(i) for op in sg.operators for i in op.outputs})
    rng = np.random.default_rng(seed)
    arrays = {"tensors": np.array(written, np.int32), "ops": np.array(op_names(load(model_bytes)))}
    for r in range(RUNS):
        inputs = random_inputs(ref, load(model_bytes), rng)
        for k, x in enumerate(inputs):
            arrays[f"r{r}/in{k}"] = x
        run(ref, inputs)
        run(builtin, inputs)
        run(xnn, inputs)
        for i in written:
            arrays[f"r{r}/ref/t{i}"] = ref.get_tensor(i).copy()
            arrays[f"r{r}/builtin/t{i}"] = builtin.get_tensor(i).copy()
        for k, d in enumerate(xnn.get_output_details()):
            arrays[f"r{r}/xnnpack/out{k}"] = xnn.get_tensor(d["index"]).copy()
    arrays["versions"] = np.array(json.dumps({"tensorflow": tf.__version__, "ai_edge_litert": litert_version,
                                              "numpy": np.__version__, "machine": platform.machine()}))
    np.savez_compressed(os.path.join(HERE, f"{name}.npz"), **arrays)
    print(f"{name}: {len(model_bytes)} bytes, ops {' '.join(op_names(load(model_bytes)))}")


def requantize_model(s_in, zp_in, s_out, zp_out):
    """int8 -> int8 QUANTIZE (LiteRT's Requantize: MBQM of code - zp_in by the double quotient
    s_in / s_out); the converter does not emit it for these models."""
    i8 = S.TensorType.INT8
    return one_op_model(S.BuiltinOperator.QUANTIZE, S.BuiltinOptions.QuantizeOptions, S.QuantizeOptionsT(),
                        [("x", (2, 64), i8, s_in, zp_in, None), ("y", (2, 64), i8, s_out, zp_out, None)], [0], [1])


def padv2_model():
    """PADV2 with an explicit int8 constant value (the converter emits PAD)."""
    i8 = S.TensorType.INT8
    pads = np.array([[0, 0], [1, 2], [2, 0], [0, 1]], np.int32)
    return one_op_model(S.BuiltinOperator.PADV2, S.BuiltinOptions.PadV2Options, S.PadV2OptionsT(),
                        [("x", (1, 3, 3, 2), i8, 0.1, -3, None),
                         ("paddings", (4, 2), S.TensorType.INT32, None, 0, pads),
                         ("value", (1,), i8, 0.1, -3, np.array([7], np.int8)),
                         ("y", (1, 6, 5, 3), i8, 0.1, -3, None)], [0, 1, 2], [3])


def concat_scales_model():
    """int8 CONCATENATION whose inputs have different scales: LiteRT's Prepare refuses it."""
    i8 = S.TensorType.INT8
    opts = S.ConcatenationOptionsT()
    opts.axis = 1
    return one_op_model(S.BuiltinOperator.CONCATENATION, S.BuiltinOptions.ConcatenationOptions, opts,
                        [("a", (1, 2), i8, 0.1, 0, None), ("b", (1, 2), i8, 0.2, 0, None),
                         ("y", (1, 4), i8, 0.1, 0, None)], [0, 1], [2])


def refused_models():
    """Models for the refusal tests: ``refused_relu6_overflow.tflite`` (a conv with fused RELU6 whose
    output scale makes 6 / scale overflow int32: LiteRT's Prepare fails), ``refused_concat_scales``
    (int8 CONCATENATION of differently scaled inputs: LiteRT refuses). The unsupported-operator test makes
    its CUSTOM op itself (tests/tflite/test_tflite_models.py)."""
    rng = np.random.default_rng(7)
    w = _w(rng, 1, 1, 2, 2)
    base = convert(lambda x: tf.nn.relu6(tf.nn.conv2d(x, w, 1, "VALID")), [(1, 2, 2, 2)], 7)
    model = load(base)
    sg = model.subgraphs[0]
    out = sg.tensors[sg.operators[0].outputs[0]]
    out.quantization.scale = [1e-10]
    bad = save(model)
    try:
        interpreter(bad, OpResolverType.BUILTIN_REF, False)
        raise AssertionError("LiteRT accepted the RELU6 overflow model")
    except RuntimeError as e:
        print("refused_relu6_overflow: LiteRT refuses:", str(e).splitlines()[0][:100])
    concat = concat_scales_model()
    try:
        interpreter(concat, OpResolverType.BUILTIN_REF, False)
        raise AssertionError("LiteRT accepted the int8 CONCATENATION with mixed scales")
    except RuntimeError as e:
        print("refused_concat_scales: LiteRT refuses:", str(e).splitlines()[0][:100])
    for name, data in (("refused_relu6_overflow", bad), ("refused_concat_scales", concat)):
        with open(os.path.join(HERE, f"{name}.tflite"), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes, ops {' '.join(op_names(load(data)))}")


def main(argv):
    os.makedirs(HERE, exist_ok=True)
    only = set(argv)
    if not only or "refused" in only:
        refused_models()
    if not only or "requantize" in only:
        record("requantize_left", requantize_model(0.75, 3, 0.5, -5), 400)  # 1.5: left shift, ties
        record("requantize_third", requantize_model(0.1, -7, 0.3, 2), 401)  # f32 quotient != double
        record("padv2", padv2_model(), 402)
    for name, (build, seed) in MODELS.items():
        if only and name not in only:
            continue
        fn, shapes, float_io = build(np.random.default_rng(seed))
        base = convert(fn, shapes, seed, float_io)
        if name in EDITS:
            base = EDITS[name](base)
        record(name, base, seed)
        if name == "mobilenet":  # large enough as it is: the plain model only
            continue
        record(f"{name}_pot", rescale(base), seed + 100)
        record(f"{name}_left", rescale(base, 128.0), seed + 200)
        if name != "branches":  # there a conv output feeds CONCATENATION, whose int8 inputs must share one scale
            record(f"{name}_half", rescale(base, half=True), seed + 300)


if __name__ == "__main__":
    main(sys.argv[1:])
