"""uint8 (legacy asymmetric, per-tensor) one-operator models on LiteRT's three kernel sets: the goldens of
``tests/tflite/test_uint8.py`` (and one int8 twin: the grouped CONV_2D that LiteRT's optimized kernel leaves to the
reference kernel whatever the type).

Each case is a one-operator model built here from the schema objects (``_tflite_edit.one_op_model``, no converter),
run in a worker process per engine record:

* ``litert_ref``: ``OpResolverType.BUILTIN_REF`` (dspsim engine ``litert``);
* ``litert_optimized``: ``OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES`` (``litert-optimized``);
* ``litert_default``: the default interpreter, XNNPACK delegate included (``xnnpack``);
* ``tflm``: tflite-micro's Python interpreter (``tflm``), whose kernels take no uint8 but in QUANTIZE, DEQUANTIZE and
  the copies.

Every case has 4 input sets: a sweep of the codes, two uniform draws, and 0 / 255 alternating (saturation). The
scales are chosen for the rounding each kernel does: powers of two give exact ties in the fixed-point
requantization (where the reference's ties away from zero and the optimized kernels' half-up part), tiny output
scales saturate, and the CONCATENATION / QUANTIZE rescales put float ties on the grid.

Output, ``tests/golden/uint8.npz``: ``<case>/model`` (the .tflite bytes, uint8), ``<case>/in<j>`` (runs, *shape),
``<case>/<engine>/out<k>`` (runs, *shape), and ``meta`` (0-d JSON: versions, and per case its op, what it covers
and each engine's status: ``ok`` | ``refused`` (the message) | ``crashed``).

    /tmp/interp/bin/python tests/golden/make_golden_uint8.py      # ai-edge-litert 2.3.0; about 20 seconds
"""
import json
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "uint8.npz")
ENGINES = {"litert_ref": "BUILTIN_REF", "litert_optimized": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
           "litert_default": "AUTO", "tflm": "TFLM"}
RUNS = 4


def run_one(model_path, inputs_path, result_path, resolver):
    """In a worker process: the model on every run of ``in<j>`` with one interpreter of ``resolver`` (an
    ``OpResolverType`` name, or "TFLM": tflite-micro's Python interpreter)."""
    z = np.load(inputs_path)
    n_in = len([k for k in z.files if k.startswith("in")])
    out = {}
    try:
        if resolver == "TFLM":
            from tflite_micro.python.tflite_micro import runtime
            from _tflite_edit import load
            with open(model_path, "rb") as f:
                data = f.read()
            n_out = len(load(data).subgraphs[0].outputs)
            it = runtime.Interpreter.from_bytes(data, arena_size=1 << 22)
            for r in range(z["in0"].shape[0] if n_in else 1):
                for j in range(n_in):
                    it.set_input(z[f"in{j}"][r], j)
                it.invoke()
                for j in range(n_out):
                    out.setdefault(f"out{j}", []).append(np.array(it.get_output(j)))
        else:
            from ai_edge_litert.interpreter import Interpreter, OpResolverType
            it = Interpreter(model_path=model_path, experimental_op_resolver_type=getattr(OpResolverType, resolver))
            it.allocate_tensors()
            ins, outs = it.get_input_details(), it.get_output_details()
            for r in range(z["in0"].shape[0] if n_in else 1):
                for j, d in enumerate(ins):
                    it.set_tensor(d["index"], z[f"in{j}"][r])
                it.invoke()
                for j, d in enumerate(outs):
                    out.setdefault(f"out{j}", []).append(it.get_tensor(d["index"]).copy())
        np.savez(result_path, status=np.array("ok"), **{k: np.stack(v) for k, v in out.items()})
    except (RuntimeError, ValueError) as exc:
        np.savez(result_path, status=np.array("refused"), error=np.array(str(exc).strip().splitlines()[0][:300]))


def run_isolated(model_bytes, inputs, resolver):
    with tempfile.TemporaryDirectory() as tmp:
        model, src, dst = (os.path.join(tmp, n) for n in ("m.tflite", "in.npz", "out.npz"))
        with open(model, "wb") as f:
            f.write(model_bytes)
        np.savez(src, **{f"in{j}": x for j, x in enumerate(inputs)})
        proc = subprocess.run([sys.executable, __file__, "--one", model, src, dst, resolver], capture_output=True,
                              text=True, timeout=600)
        if proc.returncode != 0 or not os.path.exists(dst):
            return {"status": "crashed", "error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}, {}
        z = np.load(dst)
        status = {"status": str(z["status"])}
        if "error" in z.files:
            status["error"] = str(z["error"])
        return status, {k: z[k] for k in z.files if k.startswith("out")}


# ----------------------------------------------------------------------------------------------
# the models
# ----------------------------------------------------------------------------------------------
def _schema():
    sys.path.insert(0, HERE)
    from _tflite_edit import S, one_op_model
    return S, one_op_model


def _u8(rng, *shape):
    return rng.integers(0, 256, shape).astype(np.uint8)


def conv_case(S, mk, name, what, x_shape, w_shape, s_in, z_in, s_w, z_w, s_out, z_out, stride=1, padding="SAME",
              dilation=1, act=0, depthwise=False, seed=0, bias_scale=None, per_channel=False):
    rng = np.random.default_rng(seed)
    w = _u8(rng, *w_shape)
    n_out = w_shape[3] if depthwise else w_shape[0]
    b = rng.integers(-3000, 3000, n_out).astype(np.int32)
    opts = S.DepthwiseConv2DOptionsT() if depthwise else S.Conv2DOptionsT()
    opts.padding = S.Padding.SAME if padding == "SAME" else S.Padding.VALID
    opts.strideH = opts.strideW = stride
    opts.dilationHFactor = opts.dilationWFactor = dilation
    opts.fusedActivationFunction = act
    if depthwise:
        opts.depthMultiplier = w_shape[3] // x_shape[3]
    t_u8 = S.TensorType.UINT8
    tensors = [("x", x_shape, t_u8, s_in, z_in, None), ("w", w_shape, t_u8, s_w, z_w, w),
               ("b", (n_out,), S.TensorType.INT32, bias_scale or float(np.float32(s_in) * np.float32(s_w)), 0, b),
               ("y", None, t_u8, s_out, z_out, None)]
    out_shape = _conv_out_shape(x_shape, w_shape, stride, padding, dilation, depthwise)
    tensors[3] = ("y", out_shape, t_u8, s_out, z_out, None)
    code = S.BuiltinOperator.DEPTHWISE_CONV_2D if depthwise else S.BuiltinOperator.CONV_2D
    otype = S.BuiltinOptions.DepthwiseConv2DOptions if depthwise else S.BuiltinOptions.Conv2DOptions
    model = mk(code, otype, opts, tensors, [0, 1, 2], [3], version=2 if dilation > 1 and depthwise else 1)
    if per_channel:  # one scale per output channel on uint8 weights: LiteRT refuses it
        from _tflite_edit import load, save, set_quant
        m = load(model)
        set_quant(m, 1, np.full(n_out, s_w, np.float32), np.full(n_out, z_w), axis=3 if depthwise else 0)
        model = save(m)
    return name, "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", what, model


def grouped_int8_case(S, mk, name, what, seed=0):
    """The int8 twin of ``conv_grouped_ties`` (per-channel int8 weights, power-of-two scales): LiteRT's optimized
    CONV_2D runs grouped convolutions on the reference kernel whatever the type."""
    from _tflite_edit import load, save, set_quant
    rng = np.random.default_rng(seed)
    w = rng.integers(-127, 128, (6, 3, 3, 4)).astype(np.int8)
    b = rng.integers(-3000, 3000, 6).astype(np.int32)
    opts = S.Conv2DOptionsT()
    opts.padding, opts.strideH, opts.strideW = S.Padding.SAME, 1, 1
    opts.dilationHFactor = opts.dilationWFactor = 1
    i8 = S.TensorType.INT8
    tensors = [("x", (1, 6, 6, 8), i8, 2.0 ** -3, 0, None), ("w", (6, 3, 3, 4), i8, 2.0 ** -4, 0, w),
               ("b", (6,), S.TensorType.INT32, 2.0 ** -7, 0, b), ("y", (1, 6, 6, 6), i8, 2.0 ** -2, 0, None)]
    m = load(mk(S.BuiltinOperator.CONV_2D, S.BuiltinOptions.Conv2DOptions, opts, tensors, [0, 1, 2], [3]))
    set_quant(m, 1, np.full(6, 2.0 ** -4, np.float32), np.zeros(6, int), axis=0)
    set_quant(m, 2, np.full(6, 2.0 ** -7, np.float32), np.zeros(6, int))
    return name, "CONV_2D", what, save(m)


def _conv_out_shape(x_shape, w_shape, stride, padding, dilation, depthwise):
    n, h, w, _ = x_shape
    kh, kw = w_shape[1], w_shape[2]
    eh, ew = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
    else:
        oh, ow = (h - eh) // stride + 1, (w - ew) // stride + 1
    return (n, oh, ow, w_shape[3] if depthwise else w_shape[0])


def fc_case(S, mk, name, what, rows, k, n, s_in, z_in, s_w, z_w, s_out, z_out, act=0, seed=0):
    rng = np.random.default_rng(seed)
    w = _u8(rng, n, k)
    b = rng.integers(-3000, 3000, n).astype(np.int32)
    opts = S.FullyConnectedOptionsT()
    opts.fusedActivationFunction = act
    t_u8 = S.TensorType.UINT8
    tensors = [("x", (rows, k), t_u8, s_in, z_in, None), ("w", (n, k), t_u8, s_w, z_w, w),
               ("b", (n,), S.TensorType.INT32, float(np.float32(s_in) * np.float32(s_w)), 0, b),
               ("y", (rows, n), t_u8, s_out, z_out, None)]
    return name, "FULLY_CONNECTED", what, mk(S.BuiltinOperator.FULLY_CONNECTED,
                                             S.BuiltinOptions.FullyConnectedOptions, opts, tensors, [0, 1, 2], [3])


def pool_case(S, mk, name, what, is_max, x_shape, k, stride, padding, q_in, q_out, act=0):
    opts = S.Pool2DOptionsT()
    opts.padding = S.Padding.SAME if padding == "SAME" else S.Padding.VALID
    opts.strideH = opts.strideW = stride
    opts.filterHeight = opts.filterWidth = k
    opts.fusedActivationFunction = act
    n, h, w, c = x_shape
    oh, ow = (-(-h // stride), -(-w // stride)) if padding == "SAME" else ((h - k) // stride + 1, (w - k) // stride + 1)
    t_u8 = S.TensorType.UINT8
    tensors = [("x", x_shape, t_u8, *q_in, None), ("y", (n, oh, ow, c), t_u8, *q_out, None)]
    code = S.BuiltinOperator.MAX_POOL_2D if is_max else S.BuiltinOperator.AVERAGE_POOL_2D
    return name, "MAX_POOL_2D" if is_max else "AVERAGE_POOL_2D", what, mk(code, S.BuiltinOptions.Pool2DOptions, opts,
                                                                          tensors, [0], [1])


def unary_case(S, mk, name, op, what, shape, q_in, q_out):
    t_u8 = S.TensorType.UINT8
    tensors = [("x", shape, t_u8, *q_in, None), ("y", shape, t_u8, *q_out, None)]
    return name, op, what, mk(getattr(S.BuiltinOperator, op), 0, None, tensors, [0], [1])


def l2norm_case(S, mk, name, what, shape, q_in):
    t_u8 = S.TensorType.UINT8
    tensors = [("x", shape, t_u8, *q_in, None), ("y", shape, t_u8, 1 / 128, 128, None)]
    return name, "L2_NORMALIZATION", what, mk(S.BuiltinOperator.L2_NORMALIZATION, S.BuiltinOptions.L2NormOptions,
                                              S.L2NormOptionsT(), tensors, [0], [1])


def leaky_relu_case(S, mk, name, what, shape, alpha, q_in, q_out):
    opts = S.LeakyReluOptionsT()
    opts.alpha = alpha
    t_u8 = S.TensorType.UINT8
    tensors = [("x", shape, t_u8, *q_in, None), ("y", shape, t_u8, *q_out, None)]
    return name, "LEAKY_RELU", what, mk(S.BuiltinOperator.LEAKY_RELU, S.BuiltinOptions.LeakyReluOptions, opts,
                                        tensors, [0], [1])


def small_case(S, mk, name, op, what, shapes, qs, q_out, const=None, out_shape=None):
    """A one-op model on uint8 inputs ``shapes`` (quantizations ``qs``), one optional constant int32 second input."""
    t_u8 = S.TensorType.UINT8
    tensors = [(f"x{i}", sh, t_u8, *q, None) for i, (sh, q) in enumerate(zip(shapes, qs))]
    if const is not None:
        tensors.append((const[0], const[1].shape, S.TensorType.INT32, None, 0, const[1]))
    tensors.append(("y", out_shape or shapes[0], t_u8, *q_out, None))
    options = {"PAD": (S.BuiltinOptions.PadOptions, S.PadOptionsT()),
               "TRANSPOSE": (S.BuiltinOptions.TransposeOptions, S.TransposeOptionsT())}.get(op, (0, None))
    return name, op, what, mk(getattr(S.BuiltinOperator, op), *options, tensors, list(range(len(tensors) - 1)),
                              [len(tensors) - 1])


def softmax_case(S, mk, name, what, shape, q_in, q_out, beta=1.0, out_type=None):
    opts = S.SoftmaxOptionsT()
    opts.beta = beta
    t_u8 = S.TensorType.UINT8
    tensors = [("x", shape, t_u8, *q_in, None), ("y", shape, out_type or t_u8, *q_out, None)]
    return name, "SOFTMAX", what, mk(S.BuiltinOperator.SOFTMAX, S.BuiltinOptions.SoftmaxOptions, opts, tensors,
                                     [0], [1])


def concat_case(S, mk, name, what, shapes, qs, q_out, axis):
    opts = S.ConcatenationOptionsT()
    opts.axis = axis
    out_shape = list(shapes[0])
    out_shape[axis] = sum(s[axis] for s in shapes)
    t_u8 = S.TensorType.UINT8
    tensors = [(f"x{i}", s, t_u8, *q, None) for i, (s, q) in enumerate(zip(shapes, qs))]
    tensors.append(("y", tuple(out_shape), t_u8, *q_out, None))
    return name, "CONCATENATION", what, mk(S.BuiltinOperator.CONCATENATION, S.BuiltinOptions.ConcatenationOptions,
                                           opts, tensors, list(range(len(shapes))), [len(shapes)])


def split_case(S, mk, name, what, shape, axis, parts, q):
    opts = S.SplitOptionsT()
    opts.numSplits = parts
    piece = list(shape)
    piece[axis] //= parts
    t_u8 = S.TensorType.UINT8
    tensors = [("axis", (), S.TensorType.INT32, None, 0, np.array(axis, np.int32)), ("x", shape, t_u8, *q, None)]
    tensors += [(f"y{i}", tuple(piece), t_u8, *q, None) for i in range(parts)]
    return name, "SPLIT", what, mk(S.BuiltinOperator.SPLIT, S.BuiltinOptions.SplitOptions, opts, tensors, [0, 1],
                                   list(range(2, 2 + parts)))


def reshape_case(S, mk, name, what, shape, new_shape, q):
    opts = S.ReshapeOptionsT()
    opts.newShape = list(new_shape)
    t_u8 = S.TensorType.UINT8
    tensors = [("x", shape, t_u8, *q, None), ("shape", (len(new_shape),), S.TensorType.INT32, None, 0,
                                                np.array(new_shape, np.int32)), ("y", new_shape, t_u8, *q, None)]
    return name, "RESHAPE", what, mk(S.BuiltinOperator.RESHAPE, S.BuiltinOptions.ReshapeOptions, opts, tensors,
                                     [0, 1], [2])


def mean_case(S, mk, name, what, shape, axes, keep_dims, q_in, q_out):
    opts = S.ReducerOptionsT()
    opts.keepDims = keep_dims
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep_dims else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    t_u8 = S.TensorType.UINT8
    tensors = [("x", shape, t_u8, *q_in, None), ("axes", (len(axes),), S.TensorType.INT32, None, 0,
                                                  np.array(axes, np.int32)), ("y", out_shape, t_u8, *q_out, None)]
    return name, "MEAN", what, mk(S.BuiltinOperator.MEAN, S.BuiltinOptions.ReducerOptions, opts, tensors, [0, 1], [2])


def add_case(S, mk, name, what, shape1, shape2, q1, q2, q_out, act=0):
    opts = S.AddOptionsT()
    opts.fusedActivationFunction = act
    out_shape = tuple(np.broadcast_shapes(shape1, shape2))
    t_u8 = S.TensorType.UINT8
    tensors = [("a", shape1, t_u8, *q1, None), ("b", shape2, t_u8, *q2, None), ("y", out_shape, t_u8, *q_out, None)]
    return name, "ADD", what, mk(S.BuiltinOperator.ADD, S.BuiltinOptions.AddOptions, opts, tensors, [0, 1], [2])


def arg_max_case(S, mk, name, what, shape, axis, out_type, q):
    opts = S.ArgMaxOptionsT()
    opts.outputType = out_type
    out_shape = tuple(d for i, d in enumerate(shape) if i != axis)
    tensors = [("x", shape, S.TensorType.UINT8, *q, None), ("axis", (1,), S.TensorType.INT32, None, 0,
                                                             np.array([axis], np.int32)),
               ("y", out_shape, out_type, None, 0, None)]
    return name, "ARG_MAX", what, mk(S.BuiltinOperator.ARG_MAX, S.BuiltinOptions.ArgMaxOptions, opts, tensors,
                                     [0, 1], [2])


def quantize_case(S, mk, name, what, shape, in_type, q_in, q_out):
    tensors = [("x", shape, in_type, *(q_in if q_in else (None, 0)), None),
               ("y", shape, S.TensorType.UINT8, *q_out, None)]
    return name, "QUANTIZE", what, mk(S.BuiltinOperator.QUANTIZE, S.BuiltinOptions.QuantizeOptions,
                                      S.QuantizeOptionsT(), tensors, [0], [1])


def dequantize_case(S, mk, name, what, shape, q_in):
    tensors = [("x", shape, S.TensorType.UINT8, *q_in, None), ("y", shape, S.TensorType.FLOAT32, None, 0, None)]
    return name, "DEQUANTIZE", what, mk(S.BuiltinOperator.DEQUANTIZE, S.BuiltinOptions.DequantizeOptions,
                                        S.DequantizeOptionsT(), tensors, [0], [1])


def resize_case(S, mk, name, what, x_shape, size, align_corners=False, half_pixel_centers=False, q=(0.05, 7)):
    opts = S.ResizeBilinearOptionsT()
    opts.alignCorners, opts.halfPixelCenters = align_corners, half_pixel_centers
    t_u8 = S.TensorType.UINT8
    tensors = [("x", x_shape, t_u8, *q, None), ("size", (2,), S.TensorType.INT32, None, 0, np.array(size, np.int32)),
               ("y", (x_shape[0], *size, x_shape[3]), t_u8, *q, None)]
    return name, "RESIZE_BILINEAR", what, mk(S.BuiltinOperator.RESIZE_BILINEAR,
                                             S.BuiltinOptions.ResizeBilinearOptions, opts, tensors, [0, 1], [2],
                                             version=3 if half_pixel_centers else 1)


def cases():
    S, mk = _schema()
    P = 2.0 ** -3, 2.0 ** -4, 2.0 ** -2  # s_in * s_w / s_out = 2^-5: the fixed point's exact ties
    RELU, RELU6 = S.ActivationFunctionType.RELU, S.ActivationFunctionType.RELU6
    out = [
        conv_case(S, mk, "conv_random", "3x3 SAME, random scales, RELU6", (1, 8, 8, 5), (7, 3, 3, 5), 0.0237, 131,
                  0.0113, 119, 0.0511, 97, act=RELU6, seed=1),
        conv_case(S, mk, "conv_ties", "3x3 SAME, power-of-two scales (exact ties)", (1, 6, 6, 4), (6, 3, 3, 4), P[0],
                  128, P[1], 128, P[2], 128, seed=2),
        conv_case(S, mk, "conv_saturate", "tiny output scale: most outputs 0 or 255", (1, 6, 6, 3), (4, 3, 3, 3),
                  0.05, 128, 0.02, 120, 0.0005, 128, seed=3),
        conv_case(S, mk, "conv_stride2_dilation2", "stride 2, dilation 2, VALID, RELU", (1, 11, 11, 6), (5, 3, 3, 6),
                  0.031, 140, 0.017, 131, 0.083, 110, stride=2, padding="VALID", dilation=2, act=RELU, seed=4),
        conv_case(S, mk, "conv_1x1_gemv", "1x1 on one pixel (the optimized GEMV), power-of-two ties", (1, 1, 1, 16),
                  (20, 1, 1, 16), P[0], 121, P[1], 135, P[2], 128, seed=5),
        conv_case(S, mk, "conv_left_shift", "effective scale above 1 (a left shift)", (1, 5, 5, 2), (3, 3, 3, 2),
                  0.5, 128, 0.25, 128, 0.0625, 128, seed=6),
        conv_case(S, mk, "conv_grouped_ties", "2 groups, power-of-two scales: the optimized kernel falls back to the "
                  "reference", (1, 6, 6, 8), (6, 3, 3, 4), P[0], 128, P[1], 128, P[2], 128, seed=9),
        grouped_int8_case(S, mk, "conv_grouped_int8_ties", "int8 twin of conv_grouped_ties (the same fallback)",
                          seed=10),
        conv_case(S, mk, "conv_per_channel_refused", "uint8 weights quantized per channel: LiteRT refuses",
                  (1, 4, 4, 3), (4, 3, 3, 3), 0.05, 128, 0.02, 128, 0.1, 128, seed=7, per_channel=True),
        conv_case(S, mk, "conv_bias_scale_refused", "bias scale far from s_in * s_w: LiteRT refuses", (1, 4, 4, 3),
                  (4, 3, 3, 3), 0.05, 128, 0.02, 128, 0.1, 128, seed=8, bias_scale=0.01),
        conv_case(S, mk, "dw_random", "3x3 SAME, 12 channels (NEON blocks and a scalar tail), RELU6", (1, 7, 7, 12),
                  (1, 3, 3, 12), 0.0237, 131, 0.0113, 119, 0.0511, 97, act=RELU6, depthwise=True, seed=11),
        conv_case(S, mk, "dw_ties", "power-of-two scales (exact ties), 13 channels", (1, 6, 6, 13), (1, 3, 3, 13), P[0],
                  128, P[1], 128, P[2], 128, depthwise=True, seed=12),
        conv_case(S, mk, "dw_multiplier2_ties", "depth multiplier 2, power-of-two scales, stride 2",
                  (1, 8, 8, 5), (1, 3, 3, 10), P[0], 110, P[1], 140, P[2], 128, stride=2, depthwise=True, seed=13),
        conv_case(S, mk, "dw_dilation2", "dilation 2 (version 2), VALID", (1, 9, 9, 8), (1, 3, 3, 8), 0.031, 140,
                  0.017, 131, 0.043, 110, padding="VALID", dilation=2, depthwise=True, seed=14),
        conv_case(S, mk, "dw_saturate", "tiny output scale", (1, 5, 5, 16), (1, 3, 3, 16), 0.05, 128, 0.02, 120,
                  0.0005, 128, depthwise=True, seed=15),
        fc_case(S, mk, "fc_random", "4 rows, random scales, RELU", 4, 24, 10, 0.0237, 131, 0.0113, 119, 0.0511, 97,
                act=RELU, seed=21),
        fc_case(S, mk, "fc_ties", "power-of-two scales (exact ties)", 3, 16, 12, *P[:1], 128, P[1], 128, P[2], 128,
                seed=22),
        fc_case(S, mk, "fc_one_row_ties", "one row (GEMV), power-of-two scales", 1, 32, 8, P[0], 125, P[1], 131,
                P[2], 128, seed=23),
        pool_case(S, mk, "avgpool_same", "3x3 stride 2 SAME (partial windows: rounding of the count)", False,
                  (1, 7, 7, 5), 3, 2, "SAME", (0.1, 128), (0.1, 128)),
        pool_case(S, mk, "avgpool_2x2_relu6", "2x2 VALID, fused RELU6", False, (1, 6, 6, 20), 2, 2, "VALID",
                  (0.05, 100), (0.05, 100), act=RELU6),
        pool_case(S, mk, "avgpool_global", "global 5x5", False, (1, 5, 5, 17), 5, 1, "VALID", (0.1, 3), (0.1, 3)),
        pool_case(S, mk, "maxpool_same", "3x3 stride 2 SAME", True, (1, 7, 7, 5), 3, 2, "SAME", (0.1, 128),
                  (0.1, 128)),
        unary_case(S, mk, "logistic", "LOGISTIC", "input scale 0.05, zero point 128", (4, 64), (0.05, 128),
                   (1 / 256, 0)),
        unary_case(S, mk, "logistic_wide", "LOGISTIC", "input scale 0.3, zero point 70 (saturating tails)", (4, 64),
                   (0.3, 70), (1 / 256, 0)),
        unary_case(S, mk, "tanh", "TANH", "input scale 0.03, zero point 128", (4, 64), (0.03, 128),
                   (1 / 128, 128)),
        unary_case(S, mk, "tanh_offset", "TANH", "input scale 0.1, zero point 100, output zero point 120", (4, 64),
                   (0.1, 100), (1 / 128, 120)),
        unary_case(S, mk, "hard_swish", "HARD_SWISH", "input scale 0.05, zero point 128", (4, 64), (0.05, 128),
                   (0.03, 40)),
        unary_case(S, mk, "hard_swish_saturate", "HARD_SWISH", "output scale 0.01: the top saturates", (4, 64),
                   (0.1, 100), (0.01, 20)),
        l2norm_case(S, mk, "l2norm", "rows of 16, input zero point 128", (16, 16), (0.05, 128)),
        l2norm_case(S, mk, "l2norm_long_rows", "rows of 128, input zero point 3", (2, 128), (0.1, 3)),
        leaky_relu_case(S, mk, "leaky_relu", "alpha 0.2 (XNNPACK's qu8-vlrelu under the default interpreter)",
                        (4, 64), 0.2, (0.05, 128), (0.04, 100)),
        leaky_relu_case(S, mk, "leaky_relu_negative_alpha", "alpha -0.5", (4, 64), -0.5, (0.05, 128), (0.05, 60)),
        unary_case(S, mk, "relu", "RELU", "rescaling RELU", (4, 64), (0.05, 128), (0.03, 10)),
        unary_case(S, mk, "relu6", "RELU6", "rescaling RELU6", (4, 64), (0.05, 100), (0.025, 5)),
        small_case(S, mk, "maximum", "MAXIMUM", "equal quantizations", [(2, 32), (2, 32)], [(0.05, 128)] * 2,
                   (0.05, 128)),
        small_case(S, mk, "pad", "PAD", "1 pixel around, padded with the zero point", [(1, 4, 4, 3)], [(0.05, 131)],
                   (0.05, 131), const=("paddings", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32)),
                   out_shape=(1, 6, 6, 3)),
        small_case(S, mk, "transpose", "TRANSPOSE", "perm (0, 2, 1)", [(2, 5, 7)], [(0.05, 128)], (0.05, 128),
                   const=("perm", np.array([0, 2, 1], np.int32)), out_shape=(2, 7, 5)),
        softmax_case(S, mk, "softmax_random", "(2, 37) rows, scale 0.07", (2, 37), (0.07, 128), (1 / 256, 0)),
        softmax_case(S, mk, "softmax_beta", "beta 0.5, rank 4", (1, 2, 3, 21), (0.21, 10), (1 / 256, 0), beta=0.5),
        softmax_case(S, mk, "softmax_small_scale", "input scale 0.003 (flat rows)", (3, 16), (0.003, 128),
                     (1 / 256, 0)),
        softmax_case(S, mk, "softmax_zero_point", "output zero point 10 (neither kernel adds it)", (2, 9), (0.1, 0),
                     (1 / 256, 10)),
        softmax_case(S, mk, "softmax_u8_i16", "uint8 in, int16 out (scale 1/65536, zero point -32768)", (2, 37),
                     (0.07, 128), (1 / 65536, -32768), out_type=S.TensorType.INT16),
        softmax_case(S, mk, "softmax_kernels_apart", "rows (a, b, 255) at scale 0.02: 8 of the 65,536 pairs round apart "
                     "in the fixed-point reference and the float optimized kernel", (64, 3), (0.02, 0), (1 / 256, 0)),
        concat_case(S, mk, "concat_same", "equal quantization: a copy", [(1, 4, 4, 3), (1, 4, 4, 2)],
                    [(0.05, 128), (0.05, 128)], (0.05, 128), 3),
        concat_case(S, mk, "concat_rescale", "inputs rescaled to the output (ConcatenationWithScaling)",
                    [(1, 4, 4, 3), (1, 4, 4, 2), (1, 4, 4, 1)], [(0.05, 128), (0.0371, 140), (0.1, 0)], (0.061, 120), 3),
        concat_case(S, mk, "concat_ties", "scale ratio 1/2: every odd code a float tie", [(2, 64), (2, 64)],
                    [(0.25, 0), (0.5, 0)], (0.5, 0), 1),
        concat_case(S, mk, "concat_saturate", "a zero point shift that clamps", [(3, 50), (2, 50)],
                    [(0.1, 200), (0.1, 100)], (0.1, 100), 0),
        split_case(S, mk, "split_3", "three pieces along axis 3", (1, 4, 4, 6), 3, 3, (0.05, 128)),
        reshape_case(S, mk, "reshape", "(1, 2, 3, 4) -> (6, 4)", (1, 2, 3, 4), (6, 4), (0.05, 128)),
        add_case(S, mk, "add_random", "random scales", (1, 4, 4, 8), (1, 4, 4, 8), (0.0237, 131), (0.0313, 119),
                 (0.0511, 97)),
        add_case(S, mk, "add_broadcast_relu6", "broadcast of one channel vector, RELU6", (1, 4, 4, 8), (1, 1, 1, 8),
                 (0.05, 128), (0.02, 120), (0.06, 100), act=RELU6),
        add_case(S, mk, "add_pot_ties", "power-of-two scales", (2, 40), (2, 40), (0.25, 128), (0.5, 128),
                 (0.5, 128)),
        mean_case(S, mk, "mean_spatial_keep_ties", "H and W of 4x4, keep_dims, 20 channels (the optimized kernel's "
                  "16-channel blocks and tail), power-of-two scales", (1, 4, 4, 20), (1, 2), True, (0.5, 128),
                  (0.25, 128)),
        mean_case(S, mk, "mean_spatial", "H and W, no keep_dims, random scales", (2, 5, 3, 7), (1, 2), False,
                  (0.0371, 140), (0.0313, 121)),
        mean_case(S, mk, "mean_last_axis", "last axis, keep_dims", (3, 4, 10), (2,), True, (0.05, 128), (0.05, 128)),
        arg_max_case(S, mk, "arg_max_i32", "last axis, int32 output (ties: the first index)", (2, 3, 30), 2,
                     S.TensorType.INT32, (0.1, 128)),
        arg_max_case(S, mk, "arg_max_i64", "axis 1, int64 output", (2, 5, 7), 1, S.TensorType.INT64, (0.1, 128)),
        quantize_case(S, mk, "quantize_u8_u8_rescale", "uint8 -> uint8 rescale", (4, 64), S.TensorType.UINT8,
                      (0.0371, 140), (0.05, 128)),
        quantize_case(S, mk, "quantize_u8_u8_ties", "uint8 -> uint8, scale ratio 1/2 (ties)", (4, 64),
                      S.TensorType.UINT8, (0.25, 128), (0.5, 128)),
        quantize_case(S, mk, "quantize_f32_u8", "float32 -> uint8", (4, 64), S.TensorType.FLOAT32, None, (0.05, 128)),
        dequantize_case(S, mk, "dequantize_u8", "uint8 -> float32, 1027 values (blocks of 8 and a tail)", (1027,),
                        (0.0371, 140)),
        resize_case(S, mk, "resize_align_corners", "4x5 -> 9x13, align_corners", (1, 4, 5, 3), (9, 13),
                    align_corners=True),
        resize_case(S, mk, "resize_half_pixel", "5x4 -> 7x10, half_pixel_centers", (1, 5, 4, 3), (7, 10),
                    half_pixel_centers=True),
        resize_case(S, mk, "resize_legacy", "3x3 -> 8x5, neither flag", (1, 3, 3, 2), (8, 5)),
        resize_case(S, mk, "resize_2x", "4x4 -> 8x8, neither flag", (1, 4, 4, 4), (8, 8)),
        resize_case(S, mk, "resize_8x_half_pixel", "2x2 -> 16x16, half_pixel_centers, 8 channels (the optimized "
                    "kernel's 8.8 fixed point)", (1, 2, 2, 8), (16, 16), half_pixel_centers=True),
        resize_case(S, mk, "resize_8x_half_pixel_wide", "3x4 -> 24x32, half_pixel_centers, 16 channels (8.8 fixed "
                    "point)", (1, 3, 4, 16), (24, 32), half_pixel_centers=True),
        resize_case(S, mk, "resize_8x_half_pixel_odd_channels", "2x2 -> 16x16, half_pixel_centers, 6 channels (the "
                    "float kernel)", (1, 2, 2, 6), (16, 16), half_pixel_centers=True),
    ]
    return out


# rows where LiteRT's uint8 softmax kernels part (found by dspsim's two kernels over every (a, b, 255))
_SOFTMAX_APART = [(0, 33), (33, 0), (44, 237), (237, 44), (59, 208), (208, 59), (211, 251), (251, 211)]


def _fixed_inputs(name, rng):
    """Inputs chosen for a case instead of the generic sets (None: the generic ones)."""
    if name == "softmax_kernels_apart":
        runs = []
        for r in range(RUNS):
            ab = rng.integers(0, 256, (64, 2))
            ab[r * 8:(r + 1) * 8] = _SOFTMAX_APART  # every run holds the 8 rows, at another place
            runs.append(np.concatenate([ab, np.full((64, 1), 255)], 1))
        return [np.stack(runs).astype(np.uint8)]
    return None


def make_inputs(name, model_bytes):
    """4 runs per model input: a sweep of the codes, two uniform draws, 0 / 255 alternating; float inputs span 1.25x
    the output's range."""
    sys.path.insert(0, HERE)
    from _tflite_edit import NP_DTYPES, load
    m = load(model_bytes)
    sg = m.subgraphs[0]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    fixed = _fixed_inputs(name, rng)
    if fixed is not None:
        return fixed
    arrays = []
    for k, i in enumerate(sg.inputs):
        t = sg.tensors[i]
        shape, dt = tuple(int(v) for v in t.shape), NP_DTYPES[t.type]
        n = int(np.prod(shape))
        if dt == np.float32:
            q = sg.tensors[sg.outputs[0]].quantization
            lo, hi = (0 - q.zeroPoint[0]) * q.scale[0], (255 - q.zeroPoint[0]) * q.scale[0]
            grid = np.arange(n) * q.scale[0] * 0.5 + lo * 1.25  # half steps: ties
            sets = [np.linspace(lo * 1.25, hi * 1.25, n), grid, rng.uniform(lo * 1.25, hi * 1.25, n),
                    rng.uniform(lo, hi, n)]
        else:
            lo = int(np.iinfo(dt).min)
            sets = [(np.arange(n) + 97 * k) % 256 + lo, rng.integers(0, 256, n) + lo, rng.integers(0, 256, n) + lo,
                    np.where((np.arange(n) + k) % 2 == 0, lo, lo + 255)]
        arrays.append(np.stack([np.asarray(s).reshape(shape) for s in sets]).astype(dt))
    return arrays


def main():
    import ai_edge_litert
    meta = {"versions": {"ai_edge_litert": getattr(ai_edge_litert, "__version__", "?"), "numpy": np.__version__},
            "cases": {}}
    arrays = {}
    for name, op, what, model in cases():
        inputs = make_inputs(name, model)
        arrays[f"{name}/model"] = np.frombuffer(model, np.uint8)
        for j, x in enumerate(inputs):
            arrays[f"{name}/in{j}"] = x
        meta["cases"][name] = {"op": op, "what": what, "engines": {}}
        for engine, resolver in ENGINES.items():
            status, outs = run_isolated(model, inputs, resolver)
            meta["cases"][name]["engines"][engine] = status
            for k, v in outs.items():
                arrays[f"{name}/{engine}/{k}"] = v
            print(name, engine, status, flush=True)
    np.savez_compressed(OUT, meta=np.array(json.dumps(meta)), **arrays)
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        run_one(*sys.argv[2:6])
    else:
        main()
