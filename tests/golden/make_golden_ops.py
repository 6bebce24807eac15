"""Per-operator golden vectors (int8, 16x8, SVDF) from TFLite Micro, LiteRT BUILTIN_REF and LiteRT default.

Families: ``nonlinear``, ``elementwise``, ``movement``, ``matrix``, ``reductions``, ``nets`` (int8),
``int16`` (16x8: EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8, plus QUANTIZE/DEQUANTIZE
between integer types) and ``recurrent`` (SVDF over 24 frames). Run with the golden venv from the
repository root (about 6-10 minutes for all)::

    /work/goldvenv/bin/python tests/golden/make_golden_ops.py                # every family
    /work/goldvenv/bin/python tests/golden/make_golden_ops.py nonlinear nets # some families

Each case is a model made by TF's converter (``_tflite_edit.convert``: full-integer int8, seeded
representative dataset, int8 inputs and outputs), some then edited in the flatbuffer (power-of-two
and tie scales, non-canonical LOGISTIC/TANH output scales, SOFTMAX beta; the converter's float ELU
rewired to int8), a few built from the schema objects where the converter emits no such model (PRELU,
STRIDED_SLICE with explicit ellipsis/new-axis masks, QUANTIZE between integer types, DEQUANTIZE, SVDF). The
.tflite files are kept in ``tests/golden/ops/<case>.tflite``. Every model runs, in a subprocess per
engine (``make_golden_real_models.run_engine``), under ``tflm``, ``litert_ref`` (every intermediate)
and ``litert_default`` (outputs only), on ``RUNS`` input sets:

* run 0, the sweep: int8 input k is ``(arange(n) + 97 k) % 256 - 128`` in C order, so a tensor of >= 256
  elements holds every int8 code (the nonlinear ops' models have exactly 256 elements: every code once);
  int16 inputs a strided sweep of the whole int16 range;
* runs 1, 2: uniform over the full int8 range (seed = crc32 of the case name);
* run 3: alternating -128 / 127 extremes (input k shifted by k).

Output: ``tests/golden/ops/<family>.npz`` in the packed format of tests/golden/README.md ("Per-operator
models"); read with ``golden_io.load_packed``.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _tflite_edit import (NP_DTYPES, S, TYPE_NAMES, convert, load, one_op_model, op_name, op_names,  # noqa: E402
                          save, written_tensors)
from make_golden_real_models import ENGINES, quant_of, run_engine, tname  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops")
RUNS = 4

# ----------------------------------------------------------------------------------------------
# flatbuffer edits
# ----------------------------------------------------------------------------------------------


def pot(v):
    return float(2.0 ** np.round(np.log2(float(v))))


def edit_io(model_bytes, in_q=None, out_q=None, all_inputs=False, beta=None):
    """Rewrite the quantization of the (first, or every) subgraph input and of the first output:
    ``in_q``/``out_q`` are functions (scale, zp) -> (scale, zp). ``beta`` sets SOFTMAX's beta."""
    model = load(model_bytes)
    sg = model.subgraphs[0]
    targets = [(i, in_q) for i in (sg.inputs if all_inputs else sg.inputs[:1])] + [(sg.outputs[0], out_q)]
    for i, f in targets:
        if f is None:
            continue
        q = sg.tensors[i].quantization
        s, z = f(float(q.scale[0]), int(q.zeroPoint[0]))
        q.scale, q.zeroPoint, q.min, q.max = [float(np.float32(s))], [int(z)], None, None
    if beta is not None:
        for op in sg.operators:
            if op_name(model, op) == "SOFTMAX":
                op.builtinOptions.beta = float(beta)
    return save(model)


def int8_core(model_bytes, version=1):
    """DEQUANTIZE -> OP -> QUANTIZE (the converter's float fallback, e.g. for ELU) rewired into one
    int8 OP reading the DEQUANTIZE's input and writing the QUANTIZE's output (the calibrated scale);
    the OP's code gets ``version`` (LiteRT's op_version.cc gives int8 ELU version 1, as float)."""
    model = load(model_bytes)
    sg = model.subgraphs[0]
    names = op_names(model)
    assert names[0] == "DEQUANTIZE" and names[-1] == "QUANTIZE" and len(names) == 3, names
    dq, core, q = sg.operators
    core.inputs = [dq.inputs[0]] + list(core.inputs[1:])
    core.outputs = [q.outputs[0]]
    sg.operators = [core]
    model.operatorCodes[core.opcodeIndex].version = version
    return save(model)


def pot_all(model_bytes):
    """Every activation (non-constant) scale to the nearest power of two; biases rescaled to
    s_in * s_w where an operator has weights; weights kept."""
    model = load(model_bytes)
    sg = model.subgraphs[0]
    for t in sg.tensors:
        q = t.quantization
        const = model.buffers[t.buffer].data is not None and len(model.buffers[t.buffer].data) > 0
        if q is None or q.scale is None or len(q.scale) == 0 or const:
            continue
        q.scale = [pot(v) for v in q.scale]
        q.min = q.max = None
    for op in sg.operators:
        if op_name(model, op) in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV"):
            k_in, k_w, k_b = (2, 1, 3) if op_name(model, op) == "TRANSPOSE_CONV" else (0, 1, 2)
            if len(op.inputs) > k_b and op.inputs[k_b] >= 0:
                s_in = np.float32(sg.tensors[op.inputs[k_in]].quantization.scale[0])
                s_w = np.asarray(sg.tensors[op.inputs[k_w]].quantization.scale, np.float32)
                sg.tensors[op.inputs[k_b]].quantization.scale = [float(v) for v in np.float32(s_in * s_w)]
    return save(model)


# ----------------------------------------------------------------------------------------------
# the cases
# ----------------------------------------------------------------------------------------------
def tf():
    import tensorflow  # noqa: PLC0415

    return tensorflow


def c(rng, *shape, scale=0.3):
    return tf().constant(rng.normal(scale=scale, size=shape).astype(np.float32))


class Case:
    """One model: ``name``, ``family``, ``model`` bytes, ``what`` (a sentence), ``params`` (dict)."""

    def __init__(self, family, name, model, what, **params):
        self.family, self.name, self.model, self.what, self.params = family, name, model, what, params


def conv(fn, shapes, seed, sigma=1.0):
    """Converter call whose representative data are N(0, sigma^2) (sigma sets the input range)."""
    return convert(fn, shapes, seed, sigma=sigma, autograph=False)


def nonlinear_cases():
    t = tf()
    out = []
    fns = {
        "logistic": (t.sigmoid, (1, 256)), "tanh": (t.tanh, (1, 256)), "elu": (t.nn.elu, (1, 256)),
        "exp": (t.exp, (1, 256)), "hard_swish": (lambda x: x * t.nn.relu6(x + 3.0) / 6.0, (1, 256)),
        "log_softmax": (lambda x: t.nn.log_softmax(x, axis=-1), (4, 64)),
        "l2_normalization": (lambda x: t.math.l2_normalize(x, axis=-1), (4, 64)),
    }
    for k, (fn, shape) in fns.items():
        for sigma in (0.5, 2.0, 6.0):
            seed = zlib.crc32(f"{k}{sigma}".encode())
            base = conv(fn, [shape], seed, sigma)
            if k == "elu":  # the converter keeps ELU in float between DEQUANTIZE and QUANTIZE
                base = int8_core(base)
            nm = f"{k}_s{sigma:g}"
            out.append(Case("nonlinear", nm, base, f"{k}, representative data N(0, {sigma:g}^2)", sigma=sigma))
            if sigma != 2.0:
                continue
            out.append(Case("nonlinear", f"{nm}_in_pot", edit_io(base, in_q=lambda s, z: (pot(s), 0)),
                            f"{k}, input scale rounded to a power of two, input zp 0", sigma=sigma))
            out.append(Case("nonlinear", f"{nm}_in_pot_zp", edit_io(base, in_q=lambda s, z: (pot(s) * 2, 17)),
                            f"{k}, input scale 2 x power of two, input zp 17", sigma=sigma))
            out.append(Case("nonlinear", f"{nm}_out_x0.75", edit_io(base, out_q=lambda s, z: (s * 0.75, z)),
                            f"{k}, output scale x 0.75 (non-canonical for LOGISTIC/TANH)", sigma=sigma))
            out.append(Case("nonlinear", f"{nm}_out_pot_zp", edit_io(base, out_q=lambda s, z: (pot(s) * 2, z // 2)),
                            f"{k}, output scale 2 x power of two, output zp halved", sigma=sigma))
            out.append(Case("nonlinear", f"{nm}_pot_both", edit_io(base, in_q=lambda s, z: (pot(s), 0),
                                                                   out_q=lambda s, z: (pot(s), z)),
                            f"{k}, input and output scales powers of two (ties), input zp 0", sigma=sigma))
    # RSQRT: positive inputs
    for sigma in (1.0, 4.0):
        base = conv(lambda x: t.math.rsqrt(t.abs(x) + 0.05), [(1, 256)], 11, sigma)
        out.append(Case("nonlinear", f"rsqrt_s{sigma:g}", base, f"rsqrt(|x| + 0.05), N(0, {sigma:g}^2)", sigma=sigma))
    base = conv(t.math.rsqrt, [(1, 256)], 14, 1.0)
    out.append(Case("nonlinear", "rsqrt_pure", base, "rsqrt alone: negative codes reach it"))
    out.append(Case("nonlinear", "rsqrt_pure_zp_min", edit_io(base, in_q=lambda s, z: (s, -128)),
                    "rsqrt alone, input zp -128: every code maps to x >= 0"))
    # PRELU: the converter emits RELU/NEG/MUL/ADD chains, never PRELU: one-op models from the schema
    rng = np.random.default_rng(12)
    for name, x_shape, a_shape, s_in, z_in, s_a, z_a, s_out, z_out in (
            ("prelu_channel", (1, 16, 16), (16,), 0.05, -3, 2.0 / 255, -64, 0.04, 5),
            ("prelu_scalar_alpha", (1, 256), (1,), 0.1, 10, 0.01, 0, 0.07, -20),
            ("prelu_hw_alpha", (1, 4, 8, 8), (4, 8, 8), 0.03, 0, 0.004, 3, 0.025, -1),
            ("prelu_pot", (1, 16, 16), (16,), 2.0 ** -4, 0, 2.0 ** -7, 0, 2.0 ** -4, 0),
            ("prelu_pot_left", (1, 16, 16), (16,), 2.0 ** -3, 0, 2.0 ** -5, 0, 2.0 ** -6, 0)):
        i8 = S.TensorType.INT8
        alpha = rng.integers(-128, 128, size=a_shape).astype(np.int8)
        mb = one_op_model(S.BuiltinOperator.PRELU, 0, None,
                          [("x", x_shape, i8, s_in, z_in, None), ("alpha", a_shape, i8, s_a, z_a, alpha),
                           ("y", x_shape, i8, s_out, z_out, None)], [0, 1], [2])
        out.append(Case("nonlinear", name, mb, f"PRELU x {x_shape} (s {s_in:g}, zp {z_in}), constant alpha "
                        f"{a_shape} (s {s_a:g}, zp {z_a}), out (s {s_out:g}, zp {z_out}); schema-built"))
    # SOFTMAX: ranks 2 and 4, several betas (edited)
    for shape in ((1, 256), (4, 64), (1, 2, 8, 16), (2, 2, 4, 16)):
        for sigma in (1.0, 4.0):
            base = conv(lambda x: t.nn.softmax(x, axis=-1), [shape], 13, sigma)
            tag = "x".join(str(v) for v in shape)
            for beta in (1.0, 0.5, 2.0, 0.1, 3.7):
                if sigma == 4.0 and beta not in (1.0, 0.1):
                    continue
                mb = base if beta == 1.0 else edit_io(base, beta=beta)
                out.append(Case("nonlinear", f"softmax_{tag}_s{sigma:g}_b{beta:g}", mb,
                                f"softmax over the last axis of {shape}, beta {beta:g}, N(0, {sigma:g}^2)",
                                beta=beta, sigma=sigma))
        if shape == (1, 256):
            out.append(Case("nonlinear", "softmax_1x256_in_pot", edit_io(base, in_q=lambda s, z: (pot(s), 0)),
                            "softmax, input scale a power of two"))
    return out


def elementwise_cases():
    t = tf()
    out = []
    shapes2 = [((2, 3, 4, 5), (2, 3, 4, 5)), ((1, 3, 1, 5), (2, 1, 4, 1)), ((2, 3, 4, 5), (5,)),
               ((2, 1, 3, 1, 4), (1, 2, 1, 5, 4)), ((3, 1, 2, 2, 1), (1, 4, 1, 1, 6)), ((1,), (4, 6))]
    ops = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": lambda a, b: a - b,
           "maximum": t.maximum, "minimum": t.minimum, "squared_difference": t.math.squared_difference}
    for k, fn in ops.items():
        use = shapes2 if k in ("add", "mul") else shapes2[:3]
        for j, (sa, sb) in enumerate(use):
            base = conv(fn, [sa, sb], 20 + j, 1.0)
            tag = f"{'x'.join(map(str, sa))}__{'x'.join(map(str, sb))}"
            out.append(Case("elementwise", f"{k}_{tag}", base, f"{k} of {sa} and {sb} (broadcast)"))
            if j == 0:
                out.append(Case("elementwise", f"{k}_{tag}_pot", pot_all(base),
                                f"{k}, every scale a power of two (ties)"))
                out.append(Case("elementwise", f"{k}_{tag}_wide", conv(fn, [sa, sb], 30 + j, 8.0),
                                f"{k}, representative data N(0, 8^2)"))
        # one input scale much larger than the other
        base = conv(lambda a, b: fn(a, b * 20.0), [(2, 3, 4, 5), (2, 3, 4, 5)], 40, 1.0)
        out.append(Case("elementwise", f"{k}_scale_ratio20", base, f"{k}(a, 20 b): input scales 1:20"))
    # constant operand, fused activations
    for k, fn in (("add_const_relu", lambda a: t.nn.relu(a + c(np.random.default_rng(50), 4, 5))),
                  ("mul_const_relu6", lambda a: t.nn.relu6(a * c(np.random.default_rng(51), 1, 5, scale=2.0)))):
        out.append(Case("elementwise", k, conv(fn, [(3, 4, 5)], 52, 2.0), k))
    return out


def movement_cases():
    t = tf()
    out = []
    x4 = (2, 5, 6, 4)

    def add(name, fn, shapes, what):
        out.append(Case("movement", name, conv(fn, shapes, zlib.crc32(name.encode())), what))

    ss = {
        "ss_begin_end": lambda x: x[:, 1:4, 2:5, :],
        "ss_stride2": lambda x: x[:, ::2, 1::3, :],
        "ss_negative_stride": lambda x: x[:, ::-1, 4:0:-2, :],
        "ss_negative_indices": lambda x: x[:, -4:-1, -1::-3, :],
        "ss_ellipsis": lambda x: x[..., 1:3],
        "ss_new_axis": lambda x: x[:, t.newaxis, 1:4, :, 2],
        "ss_shrink": lambda x: x[1, 2, :, ::2],
        "ss_ellipsis_shrink_new": lambda x: x[..., t.newaxis, 3],
        "ss_begin_mask_end_mask": lambda x: x[:, :3, 2:, :],
        "ss_reverse_all": lambda x: x[::-1, ::-1, ::-1, ::-1],
        "ss_mixed": lambda x: x[1:, -2::-2, :, 3:0:-1],
    }
    for name, fn in ss.items():
        add(name, fn, [x4], "strided slice (python slicing)")
    # the converter folds ellipsis and new-axis masks away (RESHAPE + plain slice): explicit masks here
    for name, begin, end, strides, masks in (
            ("ss_mask_ellipsis", [0, 1], [0, 3], [1, 1], {"ellipsisMask": 1}),
            ("ss_mask_ellipsis_mid", [1, 0, 2], [2, 0, 0], [1, 1, -1], {"ellipsisMask": 2, "endMask": 4}),
            ("ss_mask_new_axis", [0, 0, 1, 0, 0], [0, 0, 4, 0, 0], [1, 1, 1, 1, 1],
             {"newAxisMask": 2, "beginMask": 0b11001, "endMask": 0b11001}),
            ("ss_mask_shrink_neg", [1, -1, 0, 3], [2, -6, 6, 0], [1, -1, 2, -1], {"shrinkAxisMask": 1}),
            ("ss_mask_shrink_two", [0, 2, 0, -1], [1, 3, 6, 0], [1, 1, 3, 1], {"shrinkAxisMask": 0b1010}),
            ("ss_mask_begin_end_neg", [1, 4, 5, 3], [0, 0, 0, 0], [1, -2, -1, -3], {"beginMask": 1, "endMask": 0b1111}),
            ("ss_mask_clamp", [-10, 1, -100, 0], [10, 100, 100, 4], [1, 2, 4, 1], {})):
        out.append(Case("movement", name, strided_slice_model(x4, begin, end, strides, masks),
                        f"STRIDED_SLICE begin {begin} end {end} strides {strides} {masks}; schema-built"))
    add("slice", lambda x: t.slice(x, [0, 1, 2, 1], [2, 3, -1, 2]), [x4], "tf.slice, size -1")
    add("slice_rank2", lambda x: t.slice(x, [1, 3], [2, 4]), [(4, 9)], "tf.slice rank 2")
    add("split3_axis1", lambda x: t.split(x, 3, axis=2), [x4], "tf.split 3 ways on axis 2")
    add("split2_neg_axis", lambda x: t.split(x, 2, axis=-1), [x4], "tf.split on axis -1")
    add("split_v", lambda x: t.split(x, [1, 3, 2], axis=2), [x4], "tf.split sizes [1, 3, 2]")
    add("split_v_neg1", lambda x: t.split(x, [2, -1], axis=1), [x4], "tf.split sizes [2, -1]")
    for perm in ((1, 0), (0, 2, 1), (2, 0, 1), (0, 3, 1, 2), (3, 2, 1, 0), (0, 2, 4, 1, 3)):
        shape = {2: (5, 7), 3: (3, 4, 5), 4: (2, 3, 4, 5), 5: (2, 3, 2, 4, 3)}[len(perm)]
        add(f"transpose_{''.join(map(str, perm))}", lambda x, p=perm: t.transpose(x, p), [shape], f"transpose {perm}")
    idx = np.array([4, 0, 2, 2, 3], np.int32)
    add("gather_axis1", lambda x: t.gather(x, idx, axis=1), [x4], "gather axis 1, repeated indices")
    add("gather_axis0", lambda x: t.gather(x, [1, 0, 1], axis=0), [(2, 6)], "gather axis 0")
    add("gather_2d_indices", lambda x: t.gather(x, [[3, 1], [0, 3]], axis=-1), [x4], "gather 2-D indices, axis -1")
    add("gather_batch_dims", lambda x: t.gather(x, [[1, 0], [2, 2]], axis=1, batch_dims=1), [(2, 3, 4)],
        "gather batch_dims 1")
    add("pack_axis0", lambda a, b, c_: t.stack([a, b, c_], axis=0), [(3, 4)] * 3, "pack 3 inputs axis 0")
    add("pack_axis_last", lambda a, b: t.stack([a, b], axis=-1), [(2, 3, 4)] * 2, "pack axis -1")
    add("unpack_axis1", lambda x: t.unstack(x, axis=1), [(2, 3, 4)], "unpack axis 1")
    add("unpack_axis0", lambda x: t.unstack(x, axis=0), [(4, 5)], "unpack axis 0")
    for mode in ("REFLECT", "SYMMETRIC"):
        add(f"mirror_pad_{mode.lower()}", lambda x, m=mode: t.pad(x, [[0, 0], [2, 1], [1, 3], [0, 0]], mode=m),
            [(1, 4, 5, 3)], f"mirror pad {mode}")
        add(f"mirror_pad_{mode.lower()}_rank2", lambda x, m=mode: t.pad(x, [[1, 1], [2, 0]], mode=m),
            [(3, 4)], f"mirror pad {mode} rank 2")
    add("space_to_depth", lambda x: t.nn.space_to_depth(x, 2), [(1, 4, 6, 3)], "space_to_depth 2")
    add("space_to_depth_b3", lambda x: t.nn.space_to_depth(x, 3), [(2, 6, 3, 2)], "space_to_depth 3")
    add("depth_to_space", lambda x: t.nn.depth_to_space(x, 2), [(1, 3, 2, 12)], "depth_to_space 2")
    add("depth_to_space_b3", lambda x: t.nn.depth_to_space(x, 3), [(2, 2, 2, 9)], "depth_to_space 3")
    for kind in ("nearest", "bilinear"):
        for ac, hp in ((False, False), (True, False), (False, True)):
            for size in ((7, 10), (3, 2)):
                name = f"resize_{kind}_{size[0]}x{size[1]}{'_ac' if ac else ''}{'_hp' if hp else ''}"
                f1 = t.compat.v1.image.resize_nearest_neighbor if kind == "nearest" else t.compat.v1.image.resize_bilinear
                add(name, lambda x, f1=f1, s=size, a=ac, h=hp: f1(x, s, align_corners=a, half_pixel_centers=h),
                    [(1, 4, 5, 3)], f"resize {kind} to {size}, align_corners {ac}, half_pixel_centers {hp}")
    return out


def strided_slice_model(x_shape, begin, end, strides, masks):
    """One int8 STRIDED_SLICE with explicit StridedSliceOptions masks (camelCase schema names); the
    output shape is TensorFlow's for the same arguments."""
    t = tf()
    kw = {"ellipsisMask": "ellipsis_mask", "newAxisMask": "new_axis_mask", "shrinkAxisMask": "shrink_axis_mask",
          "beginMask": "begin_mask", "endMask": "end_mask"}
    y = t.strided_slice(t.zeros(x_shape), begin, end, strides, **{kw[k]: v for k, v in masks.items()})
    opts = S.StridedSliceOptionsT()
    for k, v in masks.items():
        setattr(opts, k, v)
    i8, i32, n = S.TensorType.INT8, S.TensorType.INT32, len(begin)
    return one_op_model(S.BuiltinOperator.STRIDED_SLICE, S.BuiltinOptions.StridedSliceOptions, opts,
                        [("x", x_shape, i8, 0.05, -2, None),
                         ("begin", (n,), i32, None, 0, np.array(begin, np.int32)),
                         ("end", (n,), i32, None, 0, np.array(end, np.int32)),
                         ("strides", (n,), i32, None, 0, np.array(strides, np.int32)),
                         ("y", tuple(y.shape), i8, 0.05, -2, None)], [0, 1, 2, 3], [4], version=2)


def matrix_cases():
    t = tf()
    out = []
    for name, fn, shapes in (
            ("batch_matmul", lambda a, b: t.matmul(a, b), [(2, 3, 4), (2, 4, 5)]),
            ("batch_matmul_broadcast", lambda a, b: t.matmul(a, b), [(2, 2, 3, 6), (1, 6, 4)]),
            ("batch_matmul_adj_x", lambda a, b: t.matmul(a, b, transpose_a=True), [(2, 4, 3), (2, 4, 5)]),
            ("batch_matmul_adj_y", lambda a, b: t.matmul(a, b, transpose_b=True), [(3, 5, 8), (3, 2, 8)]),
            ("batch_matmul_rank2", lambda a, b: t.matmul(a, b), [(7, 16), (16, 9)])):
        base = conv(fn, shapes, zlib.crc32(name.encode()), 1.0)
        out.append(Case("matrix", name, base, f"matmul of two inputs {shapes}"))
        if name == "batch_matmul":
            out.append(Case("matrix", f"{name}_pot", pot_all(base), "batch matmul, power-of-two scales"))
    rng = np.random.default_rng(60)
    for name, x_shape, k, cout, stride, pad in (("tconv_s2_same", (1, 4, 5, 3), 3, 4, 2, "SAME"),
                                                ("tconv_s2_valid", (1, 3, 3, 2), 3, 3, 2, "VALID"),
                                                ("tconv_s1_same", (1, 5, 5, 4), 3, 2, 1, "SAME"),
                                                ("tconv_s3_k2", (2, 3, 2, 3), 2, 5, 3, "VALID")):
        w = c(rng, k, k, cout, x_shape[3], scale=0.3)
        b = c(rng, cout, scale=0.1)
        h = x_shape[1] * stride if pad == "SAME" else (x_shape[1] - 1) * stride + k
        wd = x_shape[2] * stride if pad == "SAME" else (x_shape[2] - 1) * stride + k
        os_ = [x_shape[0], h, wd, cout]
        fn = _tconv_fn(w, b, os_, stride, pad)
        base = conv(fn, [x_shape], zlib.crc32(name.encode()), 1.0)
        out.append(Case("matrix", name, base, f"transpose conv {x_shape} k{k} cout {cout} stride {stride} {pad} + bias"))
        if name == "tconv_s2_same":
            out.append(Case("matrix", f"{name}_pot", pot_all(base), "transpose conv, power-of-two scales"))
    return out


def _tconv_fn(w, b, out_shape, stride, pad):
    """A closure (tensor default arguments would become extra function inputs)."""
    return lambda x: tf().nn.conv2d_transpose(x, w, out_shape, stride, pad) + b


def reduction_cases():
    t = tf()
    out = []
    x4 = (2, 3, 4, 5)
    for k, fn in (("sum", t.reduce_sum), ("reduce_max", t.reduce_max)):
        for axis, keep in (((1, 2), True), ((3,), False), ((0, 1, 2, 3), False), ((-1, 1), True), ((0,), True)):
            name = f"{k}_axis{''.join(str(a % 4) for a in axis)}{'_keep' if keep else ''}"
            base = conv(lambda x, f=fn, a=axis, kd=keep: f(x, axis=list(a), keepdims=kd), [x4],
                        zlib.crc32(name.encode()), 1.0)
            out.append(Case("reductions", name, base, f"{k} over {axis} keepdims {keep}"))
            if axis == (1, 2):
                out.append(Case("reductions", f"{name}_pot", pot_all(base), f"{k}, power-of-two scales"))
    for ot in ("int32", "int64"):
        for axis in (1, -1, 0):
            name = f"arg_max_{ot}_axis{axis}"
            base = conv(lambda x, a=axis, o=getattr(t, ot): t.argmax(x, axis=a, output_type=o), [x4],
                        zlib.crc32(name.encode()), 1.0)
            out.append(Case("reductions", name, base, f"argmax axis {axis}, {ot} output"))
    # CAST from int8 codes: converter graph with an int8 input (no quantization involved)
    for name, dst in (("cast_int8_int32", t.int32), ("cast_int8_float32", t.float32), ("cast_int8_int16", t.int16)):
        conc = t.function(lambda x, d=dst: t.cast(x, d), input_signature=[t.TensorSpec((4, 64), t.int8)],
                          autograph=False).get_concrete_function()
        mb = t.lite.TFLiteConverter.from_concrete_functions([conc]).convert()
        out.append(Case("reductions", name, mb, f"cast int8 -> {dst.name}"))
    conc = t.function(lambda x: t.cast(x, t.int8), input_signature=[t.TensorSpec((4, 64), t.int32)],
                      autograph=False).get_concrete_function()
    out.append(Case("reductions", "cast_int32_int8", t.lite.TFLiteConverter.from_concrete_functions([conc]).convert(),
                    "cast int32 -> int8 (wraps)"))
    # QUANTIZE int8 <-> uint8
    for name, s_in, z_in, s_out, z_out, src, dst in (
            ("quantize_i8_u8_same", 0.05, -3, 0.05, 125, "INT8", "UINT8"),
            ("quantize_i8_u8_rescale", 0.05, -3, 0.0371, 140, "INT8", "UINT8"),
            ("quantize_i8_u8_pot_tie", 0.25, 0, 0.5, 128, "INT8", "UINT8"),
            ("quantize_u8_i8_same", 0.1, 128, 0.1, 0, "UINT8", "INT8"),
            ("quantize_u8_i8_rescale", 0.1, 131, 0.3, -7, "UINT8", "INT8"),
            ("quantize_u8_i8_left", 0.75, 120, 0.5, 5, "UINT8", "INT8")):
        ti, to = getattr(S.TensorType, src), getattr(S.TensorType, dst)
        mb = one_op_model(S.BuiltinOperator.QUANTIZE, S.BuiltinOptions.QuantizeOptions, S.QuantizeOptionsT(),
                          [("x", (4, 64), ti, s_in, z_in, None), ("y", (4, 64), to, s_out, z_out, None)], [0], [1])
        out.append(Case("reductions", name, mb, f"QUANTIZE {src} (s {s_in}, zp {z_in}) -> {dst} (s {s_out}, zp {z_out})"))
    out.append(Case("reductions", "quantize_uint8_io_converter", _uint8_io(t), "converter uint8 in/out: "
                    "QUANTIZE uint8 -> int8, MAXIMUM, QUANTIZE int8 -> uint8"))
    return out


def _uint8_io(t):
    conc = t.function(lambda x: t.maximum(x, -0.5), input_signature=[t.TensorSpec((4, 64), t.float32)],
                      autograph=False).get_concrete_function()
    rng = np.random.default_rng(71)
    cv = t.lite.TFLiteConverter.from_concrete_functions([conc])
    cv.optimizations = [t.lite.Optimize.DEFAULT]
    cv.representative_dataset = lambda: ([rng.normal(size=(4, 64)).astype(np.float32)] for _ in range(32))
    cv.target_spec.supported_ops = [t.lite.OpsSet.TFLITE_BUILTINS_INT8]
    cv.inference_input_type = t.uint8
    cv.inference_output_type = t.uint8
    return cv.convert()


def net_cases():
    t = tf()
    out = []
    rng = np.random.default_rng(80)
    e1, eb = c(rng, 1, 1, 8, 24, scale=0.3), c(rng, 24, scale=0.1)
    dw, db = c(rng, 3, 3, 24, 1, scale=0.3), c(rng, 24, scale=0.1)
    s1, sb1 = c(rng, 24, 6, scale=0.3), c(rng, 6, scale=0.1)
    s2, sb2 = c(rng, 6, 24, scale=0.3), c(rng, 24, scale=0.1)
    p1, pb = c(rng, 1, 1, 24, 8, scale=0.2), c(rng, 8, scale=0.1)

    def hswish(x):
        return x * t.nn.relu6(x + 3.0) / 6.0

    def mbv3(x):
        y = hswish(t.nn.conv2d(x, e1, 1, "VALID") + eb)
        y = hswish(t.nn.depthwise_conv2d(y, dw, [1, 1, 1, 1], "SAME") + db)
        se = t.reduce_mean(y, axis=[1, 2])
        se = t.nn.relu(t.matmul(se, s1) + sb1)
        se = t.nn.relu6(t.matmul(se, s2) + sb2 + 3.0) / 6.0
        y = y * t.reshape(se, [1, 1, 1, 24])
        return t.nn.conv2d(y, p1, 1, "VALID") + pb + x

    out.append(Case("nets", "mobilenetv3_block", conv(mbv3, [(1, 8, 8, 8)], 81, 1.0),
                    "MobileNetV3 block: 1x1 expand + hard-swish, depthwise 3x3 + hard-swish, squeeze-excite "
                    "(MEAN, FC relu, FC hard-sigmoid, MUL), 1x1 project, residual ADD"))
    k1, kb1 = c(rng, 3, 3, 1, 8, scale=0.3), c(rng, 8, scale=0.1)
    k2, kb2 = c(rng, 3, 3, 8, 1, scale=0.3), c(rng, 8, scale=0.1)
    k3, kb3 = c(rng, 8, 12, scale=0.3), c(rng, 12, scale=0.1)

    def kws(x):
        y = t.nn.relu(t.nn.conv2d(x, k1, [1, 2, 2, 1], "SAME") + kb1)
        y = t.nn.relu(t.nn.depthwise_conv2d(y, k2, [1, 1, 1, 1], "SAME") + kb2)
        y = t.nn.avg_pool2d(y, [y.shape[1], y.shape[2]], 1, "VALID")
        y = t.reshape(y, [1, 8])
        return t.nn.softmax(t.matmul(y, k3) + kb3)

    out.append(Case("nets", "kws_softmax", conv(kws, [(1, 20, 10, 1)], 82, 1.0),
                    "keyword spotter: conv s2 relu, depthwise relu, global average pool, FC, SOFTMAX"))
    d1, db1 = c(rng, 3, 3, 4, 8, scale=0.3), c(rng, 8, scale=0.1)
    d2, db2 = c(rng, 1, 1, 12, 9, scale=0.3), c(rng, 9, scale=0.1)

    def det(x, skip):
        y = t.nn.relu(t.nn.conv2d(x, d1, 1, "SAME") + db1)
        y = t.compat.v1.image.resize_nearest_neighbor(y, [8, 8])
        y = t.concat([y, skip], axis=3)
        y = t.nn.conv2d(y, d2, 1, "VALID") + db2
        boxes = y[..., :4]
        scores = t.sigmoid(y[..., 4:])
        return boxes, scores, t.sigmoid(y[:, ::2, 1::2, 4])

    out.append(Case("nets", "detector_head", conv(det, [(1, 4, 4, 4), (1, 8, 8, 4)], 83, 1.0),
                    "detector head: conv relu, RESIZE_NEAREST_NEIGHBOR x2, CONCATENATION with a skip input, "
                    "1x1 conv, STRIDED_SLICE box/score split, LOGISTIC"))

    def det_bilinear(x):
        y = t.compat.v1.image.resize_bilinear(x, [7, 9], half_pixel_centers=True)
        return t.sigmoid(t.concat([y, y * 0.5], axis=-1))

    out.append(Case("nets", "resize_bilinear_concat_logistic", conv(det_bilinear, [(1, 4, 5, 3)], 84, 1.0),
                    "RESIZE_BILINEAR half-pixel, MUL, CONCATENATION, LOGISTIC"))
    return out


def _scaled_second(fn, k):
    return lambda a, b: fn(a, b * k)


def _leaky(alpha):
    return lambda x: tf().nn.leaky_relu(x, alpha=alpha)


def conv16(fn, shapes, seed, sigma=1.0, float_io=False):
    """16x8 model (EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8), int16 in/out."""
    return convert(fn, shapes, seed, sigma=sigma, autograph=False, int16=True, float_io=float_io)


def int16_cases():
    t = tf()
    out = []
    rng = np.random.default_rng(90)

    def add(name, fn, shapes, what, sigma=1.0, pot_variant=False, **kw):
        base = conv16(fn, shapes, zlib.crc32(name.encode()), sigma, **kw)
        out.append(Case("int16", name, base, what + " (16x8)", sigma=sigma))
        if pot_variant:
            out.append(Case("int16", f"{name}_pot", pot_all(base), what + " (16x8), power-of-two scales"))

    w_fc, b_fc = c(rng, 32, 16), c(rng, 16, scale=0.2)
    add("fc16", lambda x: t.matmul(x, w_fc) + b_fc, [(3, 32)], "FULLY_CONNECTED 32 -> 16 + bias", pot_variant=True)
    add("fc16_relu", lambda x: t.nn.relu(t.matmul(x, w_fc) + b_fc), [(2, 32)], "FULLY_CONNECTED + RELU", sigma=4.0)
    w_cv, b_cv = c(rng, 3, 3, 4, 6), c(rng, 6, scale=0.2)
    add("conv16", lambda x: t.nn.conv2d(x, w_cv, 1, "SAME") + b_cv, [(1, 6, 7, 4)], "CONV_2D 3x3 SAME", pot_variant=True)
    add("conv16_s2_valid_relu6", lambda x: t.nn.relu6(t.nn.conv2d(x, w_cv, 2, "VALID") + b_cv), [(1, 7, 8, 4)],
        "CONV_2D 3x3 stride 2 VALID + RELU6")
    w_dw, b_dw = c(rng, 3, 3, 4, 2), c(rng, 8, scale=0.2)
    add("dwconv16", lambda x: t.nn.depthwise_conv2d(x, w_dw, [1, 1, 1, 1], "SAME") + b_dw, [(1, 6, 6, 4)],
        "DEPTHWISE_CONV_2D 3x3 multiplier 2", pot_variant=True)
    w_tc, b_tc = c(rng, 3, 3, 5, 4), c(rng, 5, scale=0.2)
    add("tconv16", _tconv_fn(w_tc, b_tc, [1, 8, 10, 5], 2, "SAME"), [(1, 4, 5, 4)], "TRANSPOSE_CONV stride 2 + bias")
    for k, fn in (("add16", lambda a, b: a + b), ("sub16", lambda a, b: a - b), ("mul16", lambda a, b: a * b)):
        add(k, fn, [(2, 3, 16), (2, 3, 16)], k[:-2].upper(), pot_variant=True)
        add(f"{k}_broadcast", fn, [(2, 3, 16), (1, 3, 1)], k[:-2].upper() + " broadcast")
        add(f"{k}_ratio", _scaled_second(fn, 30.0), [(4, 64), (4, 64)], k[:-2].upper() + " input scales 1:30")
    add("relu16", t.nn.relu, [(4, 64)], "RELU")
    add("relu16_wide", lambda x: t.nn.relu(x * 3.0), [(4, 64)], "MUL then RELU", sigma=3.0)
    for alpha in (0.2, 0.3, -0.5, 1.7):
        add(f"leaky_relu16_a{alpha:g}", _leaky(alpha), [(4, 64)], f"LEAKY_RELU alpha {alpha:g}")
    add("mean16", lambda x: t.reduce_mean(x, axis=[1, 2]), [(1, 5, 6, 8)], "MEAN over H, W", pot_variant=True)
    add("mean16_keep", lambda x: t.reduce_mean(x, axis=[2], keepdims=True), [(2, 3, 7, 4)], "MEAN axis 2 keepdims")
    add("concat16", lambda a, b: t.concat([a, b * 2.0], axis=-1), [(2, 3, 4), (2, 3, 5)], "MUL, CONCATENATION")
    add("pad16", lambda x: t.pad(x, [[0, 0], [1, 2], [0, 1], [0, 0]]), [(1, 3, 4, 5)], "PAD")
    add("strided_slice16", lambda x: x[:, 1:5:2, ::-1, 1:], [(1, 6, 5, 4)], "STRIDED_SLICE")
    for fn_name, fn in (("logistic16", t.sigmoid), ("tanh16", t.tanh)):
        for sigma in (1.0, 4.0):
            base = conv16(fn, [(1, 4096)], zlib.crc32(fn_name.encode()), sigma)
            out.append(Case("int16", f"{fn_name}_s{sigma:g}", base,
                            f"{fn_name[:-2].upper()} over a stride-16 sweep of every int16 code (16x8)", sigma=sigma))
            if sigma == 1.0:
                for e in (-12, -11, -10):  # power-of-two input scales: LiteRT's gemmlowp path
                    out.append(Case("int16", f"{fn_name}_in_pot{e}", edit_io(base, in_q=lambda s, z, e=e: (2.0 ** e, 0)),
                                    f"{fn_name[:-2].upper()} 16x8, input scale 2^{e}"))
                out.append(Case("int16", f"{fn_name}_in_3pot", edit_io(base, in_q=lambda s, z: (3 * 2.0 ** -13, 0)),
                                f"{fn_name[:-2].upper()} 16x8, input scale 3 x 2^-13 (not a power of two)"))
    for shape in ((1, 256), (4, 64), (1, 2, 4, 32)):
        for sigma in (1.0, 4.0):
            tag = "x".join(map(str, shape))
            base = conv16(lambda x: t.nn.softmax(x, axis=-1), [shape], 91, sigma)
            out.append(Case("int16", f"softmax16_{tag}_s{sigma:g}", base, f"SOFTMAX 16x8 over {shape}", sigma=sigma))
            if sigma == 1.0 and shape == (4, 64):
                out.append(Case("int16", f"softmax16_{tag}_b0.5", edit_io(base, beta=0.5), "SOFTMAX 16x8, beta 0.5"))
    # ends: float QUANTIZE -> int16 and DEQUANTIZE
    add("quant_dequant16", lambda x: t.nn.relu(x) + 0.25, [(4, 64)], "float in/out: QUANTIZE f32->int16, "
        "..., DEQUANTIZE int16->f32", float_io=True)
    # QUANTIZE between int16, int8, int32 and DEQUANTIZE, one-op models from the schema
    T = S.TensorType
    for name, src, dst, s_in, z_in, s_out, z_out in (
            ("quantize_i16_i8", "INT16", "INT8", 2.0 ** -12, 0, 0.03, -5),
            ("quantize_i16_i8_pot", "INT16", "INT8", 2.0 ** -10, 0, 2.0 ** -3, 0),
            ("quantize_i8_i16", "INT8", "INT16", 0.05, 3, 2.0 ** -10, 0),
            ("quantize_i16_i16", "INT16", "INT16", 3e-4, 0, 7e-4, 0),
            ("quantize_i16_i16_left", "INT16", "INT16", 5e-4, 0, 2e-4, 0),
            ("quantize_i32_i16", "INT32", "INT16", 1e-6, 0, 2.0 ** -12, 0),
            ("quantize_i32_i8", "INT32", "INT8", 1e-5, 0, 0.02, 3),
            ("quantize_i16_i32", "INT16", "INT32", 2.0 ** -12, 0, 1e-6, 0),
            ("quantize_i8_i32", "INT8", "INT32", 0.05, -3, 1e-4, 0)):
        mb = one_op_model(S.BuiltinOperator.QUANTIZE, S.BuiltinOptions.QuantizeOptions, S.QuantizeOptionsT(),
                          [("x", (4, 64), getattr(T, src), s_in, z_in, None),
                           ("y", (4, 64), getattr(T, dst), s_out, z_out, None)], [0], [1])
        out.append(Case("int16", name, mb, f"QUANTIZE {src} (s {s_in:g}, zp {z_in}) -> {dst} (s {s_out:g}, zp {z_out}); "
                        "schema-built", int32_range=(-2 ** 23, 2 ** 23)))
    for name, src, s_in, z_in in (("dequantize_i16", "INT16", 2.0 ** -11, 0), ("dequantize_i16_odd", "INT16", 3.3e-4, 0),
                                  ("dequantize_i8", "INT8", 0.05, -7)):
        mb = one_op_model(S.BuiltinOperator.DEQUANTIZE, 0, None,
                          [("x", (4, 64), getattr(T, src), s_in, z_in, None), ("y", (4, 64), T.FLOAT32, None, 0, None)],
                          [0], [1])
        out.append(Case("int16", name, mb, f"DEQUANTIZE {src} (s {s_in:g}, zp {z_in}) -> float32; schema-built"))
    # a small 16x8 net
    n1, nb1 = c(rng, 3, 3, 1, 8), c(rng, 8, scale=0.1)
    n2, nb2 = c(rng, 3, 3, 8, 1), c(rng, 8, scale=0.1)
    n3, nb3 = c(rng, 32, 6), c(rng, 6, scale=0.1)

    def net(x):
        y = t.nn.relu(t.nn.conv2d(x, n1, 1, "SAME") + nb1)
        y = t.nn.relu6(t.nn.depthwise_conv2d(y, n2, [1, 1, 1, 1], "SAME") + nb2)
        y = t.nn.avg_pool2d(y, 2, 2, "VALID")
        y = t.nn.max_pool2d(y, 2, 2, "VALID")
        return t.nn.softmax(t.matmul(t.reshape(y, [1, 32]), n3) + nb3)

    out.append(Case("int16", "net16", conv16(net, [(1, 8, 8, 1)], 92),
                    "16x8 net: conv relu, depthwise relu6, average and max pool, FC, SOFTMAX"))
    return out


def svdf_model(int8_state, rank=2, n_in=32, units=8, memory=10, act=0):
    """An int8 SVDF (keyword-spotting style) from the schema: weights_feature int8 (filters, n_in),
    weights_time int16 and state int16, or both int8 (``int8_state``, as keyword_scrambled_8bit),
    int32 bias of scale s_state * s_wt (TFLM checks it), the state a variable tensor (zero at load,
    carried across invocations). ``act``: fused activation (LiteRT's integer SVDF requires RELU)."""
    rng = np.random.default_rng(95 + int8_state)
    T = S.TensorType
    nf = units * rank
    wt_type, st_type = (T.INT8, T.INT8) if int8_state else (T.INT16, T.INT16)
    wt_lim = 127 if int8_state else 4000
    s_wt, s_state = (1.0 / 128, 0.06) if int8_state else (1.0 / 8192, 0.002)
    opts = S.SVDFOptionsT()
    opts.rank, opts.fusedActivationFunction = rank, act
    mb = one_op_model(S.BuiltinOperator.SVDF, S.BuiltinOptions.SVDFOptions, opts,
                      [("x", (1, n_in), T.INT8, 0.05, -3, None),
                       ("weights_feature", (nf, n_in), T.INT8, 0.01, 0,
                        rng.integers(-127, 128, (nf, n_in)).astype(np.int8)),
                       ("weights_time", (nf, memory), wt_type, s_wt, 0,
                        rng.integers(-wt_lim, wt_lim + 1, (nf, memory)).astype(np.int8 if int8_state else np.int16)),
                       ("bias", (units,), T.INT32, s_state * s_wt, 0,
                        rng.integers(-20000, 20000, units).astype(np.int32)),
                       ("state", (1, nf * memory), st_type, s_state, 0, None),
                       ("y", (1, units), T.INT8, 0.35, 4, None)], [0, 1, 2, 3, 4], [5], version=3)
    model = load(mb)
    sg = model.subgraphs[0]
    sg.tensors[4].isVariable = True
    sg.inputs = [0]
    return save(model)


def recurrent_cases():
    frames = {"runs": 24}  # consecutive frames on one interpreter: the state is carried
    out = [Case("recurrent", "svdf_int16_state", svdf_model(False), "SVDF rank 2, int16 weights_time and state, "
                "no activation; 24 frames; schema-built", **frames),
           Case("recurrent", "svdf_int16_state_relu", svdf_model(False, rank=1, act=1),
                "SVDF rank 1 + RELU, int16 state; 24 frames; schema-built", **frames),
           Case("recurrent", "svdf_int16_state_relu_r2", svdf_model(False, act=1),
                "SVDF rank 2 + RELU, int16 state; 24 frames; schema-built", **frames),
           Case("recurrent", "svdf_int8_state_relu", svdf_model(True, act=1), "SVDF rank 2 + RELU, int8 "
                "weights_time and state (as keyword_scrambled_8bit); 24 frames; schema-built",
                undefined={e: "LiteRT svdf.cc reads weights_time and state of this int8 SVDF as int16 (out of "
                           "bounds): garbage or a crash, run to run" for e in ("litert_ref", "litert_default")},
                **frames)]
    return out


FAMILIES = {"nonlinear": nonlinear_cases, "elementwise": elementwise_cases, "movement": movement_cases,
            "matrix": matrix_cases, "reductions": reduction_cases, "nets": net_cases, "int16": int16_cases,
            "recurrent": recurrent_cases}


# ----------------------------------------------------------------------------------------------
# running and packing
# ----------------------------------------------------------------------------------------------
def make_inputs(model, name, int32_range=(-300, 300), runs=RUNS):
    """``runs`` input sets per model input (see the module docstring; sets beyond the fourth are more
    uniform draws); int16 inputs sweep the whole int16 range with a stride (``linspace``, rolled by
    97 k for input k); int32 inputs are drawn from ``int32_range``."""
    sg = model.subgraphs[0]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = []
    for k, i in enumerate(sg.inputs):
        tt = sg.tensors[i]
        dt = NP_DTYPES[tt.type]
        shape = tuple(int(v) for v in tt.shape)
        n = int(np.prod(shape))
        if dt == np.float32:  # float input feeding QUANTIZE: 1.25 x the range it can represent
            q_out = sg.tensors[next(op for op in sg.operators if i in list(op.inputs)).outputs[0]]
            info, q = np.iinfo(NP_DTYPES[q_out.type]), q_out.quantization
            lo, hi = (info.min - q.zeroPoint[0]) * q.scale[0], (info.max - q.zeroPoint[0]) * q.scale[0]
            sets = [np.linspace(lo * 1.25, hi * 1.25, n)]
            sets += [rng.uniform(lo * 1.25, hi * 1.25, n) for _ in range(runs - 1)]
        else:
            info = np.iinfo(dt)
            lo, hi = int32_range if dt == np.int32 else (int(info.min), int(info.max))
            if dt in (np.int16, np.int32):
                sweep = np.roll(np.round(np.linspace(lo, hi, n)).astype(np.int64), 97 * k)
            else:
                span = hi - lo + 1
                sweep = (np.arange(n) + 97 * k) % min(span, 256) + (lo if span <= 256 else -128)
            sets = [sweep, rng.integers(lo, hi + 1, n), rng.integers(lo, hi + 1, n),
                    np.where((np.arange(n) + k) % 2 == 0, info.min, info.max)]
            sets += [rng.integers(lo, hi + 1, n) for _ in range(runs - 4)]
        arrays.append(np.stack([np.asarray(r).reshape(shape) for r in sets[:runs]]).astype(dt))
    return arrays


class Packer:
    """Packs many cases' arrays into one flat array per dtype (README: "Per-operator models")."""

    def __init__(self):
        self.chunks, self.sizes, self.cases = {}, {}, []

    def put(self, arr):
        arr = np.ascontiguousarray(arr)
        key = f"data.{arr.dtype}"
        start = self.sizes.get(key, 0)
        self.chunks.setdefault(key, []).append(arr.ravel())
        self.sizes[key] = start + arr.size
        return [key, start, list(arr.shape)]

    def write(self, path, meta):
        meta = dict(meta, cases=self.cases)
        arrays = {k: np.concatenate(v) for k, v in self.chunks.items()}
        np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)


def record_case(case, tmp):
    path = os.path.join(HERE, f"{case.name}.tflite")
    with open(path, "wb") as f:
        f.write(case.model)
    model = load(case.model)
    sg = model.subgraphs[0]
    inputs = make_inputs(model, case.name, **{k: case.params[k] for k in ("int32_range", "runs") if k in case.params})
    tensors = written_tensors(model)
    producer = {int(o): k for k, op in enumerate(sg.operators) for o in op.outputs}
    meta = {"name": case.name, "family": case.family, "what": case.what, "params": case.params,
            "model": f"{case.name}.tflite", "ops": op_names(model), "runs": len(inputs[0]),
            "inputs": [{"index": int(i), "name": tname(sg.tensors[i]), "dtype": TYPE_NAMES[sg.tensors[i].type],
                        "shape": [int(v) for v in sg.tensors[i].shape], "quant": quant_of(sg.tensors[i])}
                       for i in sg.inputs],
            "outputs": [{"index": int(i), "name": tname(sg.tensors[i]), "dtype": TYPE_NAMES[sg.tensors[i].type],
                         "shape": [int(v) for v in sg.tensors[i].shape], "quant": quant_of(sg.tensors[i])}
                        for i in sg.outputs],
            "tensors": [{"index": i, "name": tname(sg.tensors[i]), "op": producer[i],
                         "op_name": op_name(model, sg.operators[producer[i]]), "quant": quant_of(sg.tensors[i]),
                         "dtype": TYPE_NAMES[sg.tensors[i].type]} for i in tensors],
            "engines": {}}
    results = {}
    for engine in ENGINES:
        status, z = run_engine(engine, path, inputs, tmp)
        if engine in case.params.get("undefined", {}):  # out-of-bounds reads: nothing to reproduce
            status = {"status": "undefined", "error": case.params["undefined"][engine]}
            z = {}
        meta["engines"][engine] = status
        results[engine] = z
    return meta, inputs, results


def pack_case(packer, meta, inputs, results):
    arrays, aliases, stored = {}, {}, {}
    for k, x in enumerate(inputs):
        arrays[f"in{k}"] = x
    outputs = {f"t{o['index']}" for o in meta["outputs"]}
    for engine in ENGINES:
        for key in outputs:  # a model output is stored once, as out{k}
            results[engine].pop(key, None)
        for key, v in sorted(results[engine].items()):
            same = next((f"{e}/{key}" for e in ENGINES[:ENGINES.index(engine)]
                         if key in results[e] and results[e][key].dtype == v.dtype
                         and results[e][key].shape == v.shape and np.array_equal(results[e][key], v)), None)
            if same:
                aliases[f"{engine}/{key}"] = same
            else:
                arrays[f"{engine}/{key}"] = v
    for f, a in arrays.items():
        stored[f] = packer.put(a)
    meta["arrays"], meta["aliases"] = stored, aliases
    meta["diffs"] = {}
    for a, b in (("tflm", "litert_ref"), ("tflm", "litert_default"), ("litert_ref", "litert_default")):
        za, zb = results[a], results[b]
        if za and zb:
            d = {}
            for key in sorted(set(za) & set(zb)):
                if za[key].shape != zb[key].shape or za[key].dtype != zb[key].dtype:
                    d[key] = {"shape_or_dtype": True}
                    continue
                diff = np.abs(za[key].astype(np.float64) - zb[key].astype(np.float64))
                if np.count_nonzero(diff):
                    d[key] = {"n_diff": int(np.count_nonzero(diff)), "n": int(diff.size), "max_abs": float(diff.max())}
            meta["diffs"][f"{a}:{b}"] = d
    packer.cases.append(meta)


def versions():
    out = {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine()}
    try:
        out["tensorflow"] = tf().__version__
    except ImportError:
        pass
    from importlib.metadata import version  # noqa: PLC0415

    for d in ("ai-edge-litert", "tflite-micro"):
        out[d] = version(d)
    return out


def describe(meta):
    bad = {k: v["status"] + ": " + v.get("reason", v.get("error", ""))[:110]
           for k, v in meta["engines"].items() if v["status"] != "ok"}
    d = {p: sum(v.get("n_diff", 1) for v in dd.values()) for p, dd in meta["diffs"].items() if dd}
    return f"{meta['name']}: {' '.join(meta['ops'])}; diffs {d or '-'}; refused {bad or '-'}"


def write_family(cases, family):
    """Record every case through every engine and write them packed as ``ops/<family>.npz``."""
    os.makedirs(HERE, exist_ok=True)
    packer = Packer()
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            meta, inputs, results = record_case(case, tmp)
            pack_case(packer, meta, inputs, results)
            print(describe(meta), flush=True)
    path = os.path.join(HERE, f"{family}.npz")
    packer.write(path, {"family": family, "versions": versions(), "engines": list(ENGINES)})
    print(f"wrote {path}: {len(packer.cases)} cases, {os.path.getsize(path)} bytes", flush=True)


def main(argv):
    os.makedirs(HERE, exist_ok=True)
    fams = argv or list(FAMILIES)
    vers = versions()
    for fam in fams:
        packer = Packer()
        with tempfile.TemporaryDirectory() as tmp:
            for case in FAMILIES[fam]():
                meta, inputs, results = record_case(case, tmp)
                pack_case(packer, meta, inputs, results)
                print(describe(meta), flush=True)
        path = os.path.join(HERE, f"{fam}.npz")
        packer.write(path, {"family": fam, "versions": vers, "engines": list(ENGINES)})
        print(f"wrote {path}: {len(packer.cases)} cases, {os.path.getsize(path)} bytes", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
