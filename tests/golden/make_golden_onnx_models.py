"""Quantized ONNX models and what ONNX Runtime and the onnx reference evaluator compute with them.

Five small float nets are built with onnx.helper (seeded weights): ``cnn`` (Conv, Relu, MaxPool,
GlobalAveragePool, Flatten, Gemm, Softmax), ``residual`` (Conv, Add, Relu, AveragePool, Concat,
Reshape, MatMul, Sigmoid), ``mlp`` (MatMul, Add, Relu, Gemm, Clip, Softmax) and ``dwsep``
(depthwise Conv group=C, pointwise Conv, Relu, Concat, GlobalAveragePool, Flatten, Gemm) and ``misc``
(Conv, LeakyRelu, Sigmoid, Mul of two activations, Transpose, GlobalAveragePool, Squeeze, Unsqueeze,
Flatten, Gemm) and ``unet`` (a U-Net-like up-sampling block: Conv, MaxPool, Conv, then Resize in
every mode the quantizer's models use (nearest: half_pixel / asymmetric floor / align_corners
round_prefer_ceil; linear: half_pixel, asymmetric, align_corners, pytorch_half_pixel; scales 2x2 or
sizes, and a chain 4 -> 5x7 linear -> 8x8 nearest ceil), Concat with the skip branch, 1x1 Conv,
GlobalAveragePool, Gemm). Each is
quantized with ``onnxruntime.quantization.quantize_static`` (MinMax, a seeded calibration reader of
8 samples) in these variants:

* ``qdq_u8s8_pt_op13``   QDQ, uint8 activations, int8 weights, per tensor, opset 13
* ``qdq_s8s8_pc_op21``   QDQ, int8 / int8, per channel, opset 21
* ``qop_u8s8_pt_op13``   QOperator, uint8 / int8, per tensor, opset 13
* ``qop_s8s8_pc_op21``   QOperator, int8 / int8, per channel, opset 21
* ``pof2_qdq_s8s8``      QDQ S8S8 symmetric (zero points 0), opset 21, every scale rewritten to the nearest
                         power of two and the int32 biases requantized to the new scales

Files: ``tests/golden/onnx/models/<net>_<variant>.onnx`` and ``models_<net>.npz`` with, for each model
``m`` and input set ``r`` (2 per model): ``m/r{r}/in`` (float32 input), ``m/r{r}/ort/<tensor>``
(ORT, ORT_DISABLE_ALL: every node output but DequantizeLinear's, graph outputs included), ``m/r{r}/ortopt/<output>``
(ORT_ENABLE_ALL: graph outputs, and in QOperator models the 8-bit Resize outputs:
``with_resize_outputs``) and ``m/r{r}/ref/<tensor>`` (ReferenceEvaluator, every node
output; absent for QOperator models, whose com.microsoft ops the evaluator lacks). ``meta``: 0-d
JSON (versions, models: name, net, variant, outputs, nodes (op types), errors).

    python tests/golden/make_golden_onnx_models.py        # about 20 s, deterministic
    python tests/golden/make_golden_onnx_models.py unet   # one net only
"""
import json
import os
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

HERE = os.path.dirname(__file__)
MODELS = os.path.join(HERE, "onnx", "models")
OUT = os.path.join(HERE, "onnx", "models_{net}.npz")  # one file per net (each well under 1 MB)
SHAPES = {"cnn": (1, 3, 16, 16), "residual": (1, 3, 12, 12), "mlp": (1, 64), "dwsep": (1, 3, 16, 16),
          "misc": (1, 4, 6, 6), "unet": (1, 3, 8, 8)}


class Builder:
    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.n = rng, [], [], 0

    def w(self, shape, scale=None):
        self.n += 1
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        v = self.rng.standard_normal(shape).astype(np.float32) * np.float32(scale or 1.5 / np.sqrt(fan_in))
        name = f"w{self.n}"
        self.inits.append(numpy_helper.from_array(v, name))
        return name

    def op(self, op_type, inputs, **attrs):
        self.n += 1
        out = f"t{self.n}_{op_type.lower()}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"n{self.n}_{op_type}", **attrs))
        return out

    def conv(self, x, cin, cout, k=3, stride=1, pad=1, group=1):
        return self.op("Conv", [x, self.w((cout, cin // group, k, k)), self.w((cout,), 0.1)],
                       kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group)


def build(net, opset, rng):
    b = Builder(rng)
    x = "input"
    if net == "cnn":
        t = b.op("Relu", [b.conv(x, 3, 8)])
        t = b.op("MaxPool", [t], kernel_shape=[2, 2], strides=[2, 2])
        t = b.op("Relu", [b.conv(t, 8, 16, stride=2)])
        t = b.op("Flatten", [b.op("GlobalAveragePool", [t])])
        t = b.op("Gemm", [t, b.w((10, 16)), b.w((10,), 0.1)], transB=1)
        b.op("Softmax", [t], axis=1)
    elif net == "residual":
        a = b.op("Relu", [b.conv(x, 3, 8)])
        t = b.op("Relu", [b.conv(a, 8, 8)])
        t = b.op("Relu", [b.op("Add", [b.conv(t, 8, 8), a])])
        t = b.op("AveragePool", [t], kernel_shape=[2, 2], strides=[2, 2])
        t = b.op("Concat", [t, b.op("Relu", [b.conv(t, 8, 4, k=1, pad=0)])], axis=1)
        shape = numpy_helper.from_array(np.array([1, -1], np.int64), "flat_shape")
        b.inits.append(shape)
        t = b.op("Reshape", [t, "flat_shape"])
        t = b.op("MatMul", [t, b.w((12 * 6 * 6, 10))])
        b.op("Sigmoid", [t])
    elif net == "mlp":
        t = b.op("Relu", [b.op("Add", [b.op("MatMul", [x, b.w((64, 32))]), b.w((32,), 0.1)])])
        t = b.op("Gemm", [t, b.w((32, 16)), b.w((16,), 0.1)])
        lo = numpy_helper.from_array(np.float32(0), "clip_lo")
        hi = numpy_helper.from_array(np.float32(6), "clip_hi")
        b.inits += [lo, hi]
        t = b.op("Clip", [t, "clip_lo", "clip_hi"])
        t = b.op("Gemm", [t, b.w((16, 10)), b.w((10,), 0.1)])
        b.op("Softmax", [t], axis=-1)
    elif net == "dwsep":
        t = b.op("Relu", [b.conv(x, 3, 8)])
        t = b.op("Relu", [b.conv(t, 8, 8, group=8)])
        p = b.op("Relu", [b.conv(t, 8, 16, k=1, pad=0)])
        q = b.op("Relu", [b.conv(t, 8, 8, k=1, pad=0)])
        t = b.op("Concat", [p, q], axis=1)
        t = b.op("Flatten", [b.op("GlobalAveragePool", [t])])
        b.op("Gemm", [t, b.w((10, 24)), b.w((10,), 0.1)], transB=1)
    elif net == "misc":
        a = b.op("LeakyRelu", [b.conv(x, 4, 8)], alpha=0.1)
        g = b.op("Sigmoid", [b.conv(x, 4, 8)])
        t = b.op("Transpose", [b.op("Mul", [a, g])], perm=[0, 1, 3, 2])
        t = b.op("GlobalAveragePool", [t])
        b.inits += [numpy_helper.from_array(np.array([2, 3], np.int64), "sq_axes"),
                    numpy_helper.from_array(np.array([2], np.int64), "unsq_axes")]
        t = b.op("Unsqueeze", [b.op("Squeeze", [t, "sq_axes"]), "unsq_axes"])
        t = b.op("Flatten", [t])
        b.op("Gemm", [t, b.w((10, 8)), b.w((10,), 0.1)], transB=1)
    elif net == "unet":
        a = b.op("Relu", [b.conv(x, 3, 4)])
        t = b.op("Relu", [b.conv(b.op("MaxPool", [a], kernel_shape=[2, 2], strides=[2, 2]), 4, 4)])
        b.inits += [numpy_helper.from_array(np.array(v, dt), name) for name, v, dt in (
            ("up2", [1, 1, 2, 2], np.float32), ("size8", [1, 4, 8, 8], np.int64), ("size57", [1, 4, 5, 7], np.int64))]

        def up(src, size=None, **attrs):  # scales 2x2, or sizes
            return b.op("Resize", [src, "", ""] + [size] if size else [src, "", "up2"], **attrs)
        ups = [up(t, mode="nearest"),
               up(t, mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
               up(t, "size8", mode="nearest", coordinate_transformation_mode="align_corners",
                  nearest_mode="round_prefer_ceil"),
               up(t, mode="linear"),
               up(t, mode="linear", coordinate_transformation_mode="asymmetric"),
               up(t, "size8", mode="linear", coordinate_transformation_mode="align_corners"),
               up(t, mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
               # non-integer scales (4 -> 5, 7; then 5, 7 -> 8) through a chain of two Resize
               up(up(t, "size57", mode="linear"), "size8", mode="nearest", nearest_mode="ceil")]
        t = b.op("Relu", [b.conv(b.op("Concat", [a] + ups, axis=1), 36, 4, k=1, pad=0)])
        t = b.op("Flatten", [b.op("GlobalAveragePool", [t])])
        b.op("Gemm", [t, b.w((10, 4)), b.w((10,), 0.1)], transB=1)
    b.nodes[-1].output[0] = "output"
    g = helper.make_graph(b.nodes, net, [helper.make_tensor_value_info("input", TP.FLOAT, SHAPES[net])],
                          [helper.make_tensor_value_info("output", TP.FLOAT, [1, 10])], initializer=b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset <= 13 else 10
    onnx.checker.check_model(m)
    return m


class Reader(CalibrationDataReader):
    def __init__(self, net, seed):
        rng = np.random.default_rng(seed)
        self.data = iter([{"input": rng.standard_normal(SHAPES[net]).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.data, None)


VARIANTS = {
    "qdq_u8s8_pt_op13": (QuantFormat.QDQ, QuantType.QUInt8, False, 13, False),
    "qdq_s8s8_pc_op21": (QuantFormat.QDQ, QuantType.QInt8, True, 21, False),
    "qop_u8s8_pt_op13": (QuantFormat.QOperator, QuantType.QUInt8, False, 13, False),
    "qop_s8s8_pc_op21": (QuantFormat.QOperator, QuantType.QInt8, True, 21, False),
    "pof2_qdq_s8s8": (QuantFormat.QDQ, QuantType.QInt8, False, 21, True),
}


def to_pof2(m):
    """Every QDQ scale -> 2^round(log2 s), zero points 0 (already, symmetric); int32 biases requantized."""
    inits = {t.name: t for t in m.graph.initializer}
    new_scale = {}
    for n in m.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear") and n.input[1] in inits:
            s = numpy_helper.to_array(inits[n.input[1]])
            new_scale[n.input[1]] = (2.0 ** np.round(np.log2(s.astype(np.float64)))).astype(np.float32)
    for n in m.graph.node:  # int32 bias = q * s_bias: keep the float bias, requantize to the new product
        if n.op_type == "DequantizeLinear" and n.input[0] in inits and inits[n.input[0]].data_type == TP.INT32:
            q = numpy_helper.to_array(inits[n.input[0]]).astype(np.float64)
            s_old = numpy_helper.to_array(inits[n.input[1]]).astype(np.float64)
            conv = next(c for c in m.graph.node if n.output[0] in c.input)
            dq_x = next(d for d in m.graph.node if d.output[0] == conv.input[0])
            dq_w = next(d for d in m.graph.node if d.output[0] == conv.input[1])
            s_new = (new_scale[dq_x.input[1]].astype(np.float64) * new_scale[dq_w.input[1]]).astype(np.float32)
            new_scale[n.input[1]] = s_new
            qn = np.clip(np.rint(q * s_old / s_new), -2**31, 2**31 - 1).astype(np.int32)
            inits[n.input[0]].CopyFrom(numpy_helper.from_array(qn, n.input[0]))
    for name, s in new_scale.items():
        inits[name].CopyFrom(numpy_helper.from_array(s.reshape(numpy_helper.to_array(inits[name]).shape), name))
    return m


def quantize(net, variant, rng_seed):
    fmt, act, per_channel, opset, pof2 = VARIANTS[variant]
    fm = build(net, opset, np.random.default_rng(rng_seed))
    tmp_in = os.path.join(MODELS, f"_float_{net}.onnx")
    out = os.path.join(MODELS, f"{net}_{variant}.onnx")
    onnx.save(fm, tmp_in)
    extra = {"ActivationSymmetric": True, "WeightSymmetric": True} if pof2 else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_static(tmp_in, out, Reader(net, 100 + rng_seed), quant_format=fmt, per_channel=per_channel,
                        activation_type=act, weight_type=QuantType.QInt8, extra_options=extra)
    os.remove(tmp_in)
    m = onnx.load(out)
    if pof2:
        m = to_pof2(m)
    m.producer_name = "dspsim golden (quantize_static)"
    onnx.save(m, out)
    return m


def elem_types(m):
    """Element type of every node output: shape inference where it knows the op, else by the op's rule
    (DequantizeLinear float; QuantizeLinear and the QLinear ops: their output zero point's type;
    layout ops such as Flatten/MaxPool: their input's type)."""
    inf = onnx.shape_inference.infer_shapes(m)
    types = {v.name: v.type.tensor_type.elem_type for v in list(inf.graph.value_info) + list(inf.graph.output)}
    types.update({t.name: t.data_type for t in m.graph.initializer})
    types["input"] = TP.FLOAT
    zp_index = {"QLinearConv": 7, "QGemm": 8, "QLinearMatMul": 7, "QLinearConcat": 1, "QuantizeLinear": 2}
    for n in m.graph.node:
        for o in n.output:
            if types.get(o, 0) != 0:
                continue
            if n.op_type == "DequantizeLinear":
                types[o] = TP.FLOAT
            elif n.op_type in zp_index or n.op_type.startswith("QLinear"):
                types[o] = types[n.input[zp_index.get(n.op_type, len(n.input) - 1)]]
            else:
                types[o] = types[n.input[0]]
    return types


def with_all_outputs(m):
    """``m`` with every node output a graph output, except DequantizeLinear's (exact functions of the
    stored codes; left out to keep the file small)."""
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    types = elem_types(m)
    have = {o.name for o in m2.graph.output}
    for n in m2.graph.node:
        for o in n.output:
            if o not in have and n.op_type != "DequantizeLinear":
                m2.graph.output.append(helper.make_tensor_value_info(o, types[o], None))
    return m2


def with_resize_outputs(m):
    """``m`` with the outputs of its Resize nodes on 8-bit codes (QOperator models) added to the graph
    outputs. ORT_ENABLE_ALL runs those on NHWC tensors with another kernel than the NCHW one
    (integer weights); as graph outputs they keep that layout (ORT adds a Transpose after each), so
    the optimized golden has them too. Other models are returned as they are."""
    resize = [n.output[0] for n in m.graph.node if n.op_type == "Resize"]
    types = elem_types(m)
    eight_bit = [o for o in resize if types[o] in (TP.UINT8, TP.INT8)]
    if not eight_bit:
        return m
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    for o in eight_bit:
        m2.graph.output.append(helper.make_tensor_value_info(o, types[o], None))
    return m2


def ort_run(m, x, level):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, {"input": x})))


def cpu_flags():
    """The x86 features that decide MLAS's kernels (VNNI: exact u8 x s8 sums; without: pair saturation)."""
    try:
        flags = set(open("/proc/cpuinfo").read().split())
    except OSError:
        return []
    return sorted(flags & {"avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni"})


def main():
    os.makedirs(MODELS, exist_ok=True)
    versions = dict(onnx=onnx.__version__, onnxruntime=ort.__version__, numpy=np.__version__, cpu=cpu_flags())
    only = set(sys.argv[1:])  # optional: the nets to (re)make, e.g. "unet"; default all
    for i, net in enumerate(SHAPES):
        if only and net not in only:
            continue
        arrays, meta = {}, []
        for variant in VARIANTS:
            m = quantize(net, variant, 10 + i)
            name = f"{net}_{variant}"
            info = dict(name=name, net=net, variant=variant, nodes=[n.op_type for n in m.graph.node],
                        outputs=[o.name for o in m.graph.output], errors={})
            rng = np.random.default_rng(1000 + i)
            full = with_all_outputs(m)
            for r in range(2):
                x = rng.standard_normal(SHAPES[net]).astype(np.float32) * (1.0 if r == 0 else 2.0)
                arrays[f"{name}/r{r}/in"] = x
                for k, v in ort_run(full, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).items():
                    arrays[f"{name}/r{r}/ort/{k}"] = v
                for k, v in ort_run(with_resize_outputs(m), x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL).items():
                    arrays[f"{name}/r{r}/ortopt/{k}"] = v
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ev = ReferenceEvaluator(full)
                        res = ev.run(None, {"input": x})
                    for o, v in zip(full.graph.output, res):
                        arrays[f"{name}/r{r}/ref/{o.name}"] = np.asarray(v)
                except Exception as e:  # noqa: BLE001 (com.microsoft ops)
                    info["errors"]["ref"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            meta.append(info)
            print(name, len(m.graph.node), "nodes", info["errors"] or "")
        arrays["meta"] = np.array(json.dumps(dict(versions=versions, models=meta)))
        out = OUT.format(net=net)
        np.savez_compressed(out, **arrays)
        print(f"{len(meta)} models -> {out} ({os.path.getsize(out)} bytes)")
    total = sum(os.path.getsize(os.path.join(MODELS, f)) for f in os.listdir(MODELS)) + sum(
        os.path.getsize(OUT.format(net=n)) for n in SHAPES)
    print(f"{total} bytes in all")


if __name__ == "__main__":
    main()
