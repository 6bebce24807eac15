"""16x8 edge cases the converter never emits, from TFLite Micro, LiteRT BUILTIN_REF and LiteRT default.

Two families: ``int16_edges`` (below) and ``int16_kernels`` (:func:`kernel_cases`: int16 SOFTMAX with non-unit
beta, left and tiny multiplier shifts, rows of 1 and 2048, output scales at and past the 0.1% check, an input
zero point; int16 AVERAGE_POOL_2D / MAX_POOL_2D with SAME edges, ties, fused RELU / RELU6 / RELU_N1_TO_1, a
zero point and a rescale; LEAKY_RELU int8 and int16 with alpha -0.5 (ties), -0.3, -1.5, -1.7, -300, 1.7, 2.5;
int16 SUB with ``pot_scale_int16`` (shifts 0 and 3, the first input shifted, a finer input, broadcast); and
:func:`gap_cases`, converter models for the regimes the ``int16`` family of make_golden_ops.py lacks)::

    /work/goldvenv/bin/python tests/golden/make_golden_int16_edges.py int16_kernels   # about 3 minutes

One-operator int16 models built from the schema objects (``_tflite_edit.one_op_model``), run and packed
exactly as ``make_golden_ops.py`` does (same engines, same four input sets: a strided sweep of the int16
codes, two uniform draws, alternating extremes); written to ``tests/golden/ops/int16_edges.npz`` and
``tests/golden/ops/<case>.tflite``, read by ``tests/kernels/test_golden_ops.py`` like every other family::

    /work/goldvenv/bin/python tests/golden/make_golden_int16_edges.py        # about 30 s

The cases:

* ``add16_potflag_*``: ADD with ``pot_scale_int16 = true`` (the schema default; the converter writes
  false) and power-of-two scales: LiteRT's shift-only kernel, TFLM's general path. Shifts 0 (saturating
  sum), -3 (ties), -1 with a fused RELU, and an input scale finer than the output's (LiteRT's Prepare
  refuses it).
* ``add16_zero_points``: ADD with zero points 5, -7, 3: LiteRT refuses int16 zero points, TFLM adds the
  offsets.
* ``mul16_quotient``, ``leaky_relu16_quotient``: scales whose float32 and double multiplier quotients
  differ the most among 2000 seeded draws (TFLM divides in double, LiteRT in float32).
* ``concat16_scales``: CONCATENATION of int16 inputs with different scales (no rescaling anywhere).
* ``relu16_rescale``, ``relu6_16_rescale``: RELU / RELU6 with an output scale other than the input's.
* ``quantize_f32_i16_61``, ``quantize_f32_i16_64``, ``quantize_f32_i16_61_pot_ties``: QUANTIZE float32 ->
  int16 with 61 and 64 values a row (LiteRT's optimized kernel: whole blocks of 8, then a scalar tail); the
  last with scale 2^-13 and exact ties in run 1.
"""
from __future__ import annotations

import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _tflite_edit import S, one_op_model  # noqa: E402
import make_golden_ops as mgo  # noqa: E402
from make_golden_ops import Case, write_family  # noqa: E402

T = S.TensorType
SHAPE = (8, 256)


def _multiplier(real):
    """QuantizeMultiplier's Q31 mantissa of ``real`` (only used to pick scales)."""
    m, _ = math.frexp(real)
    return round(m * 2**31)


def _split_scales(seed, sample, quotient32, quotient64):
    """(s1, s2, s_out) float32 scales drawn by ``sample(rng)`` whose float32 and double quotients give the
    most different multipliers."""
    rng = np.random.default_rng(seed)
    best, arg = -1, None
    for _ in range(2000):
        s = tuple(np.float32(v) for v in sample(rng))
        d = abs(_multiplier(float(quotient32(*s))) - _multiplier(float(quotient64(*s))))
        if d > best:
            best, arg = d, s
    return tuple(float(v) for v in arg)


def _add(name, what, s1, s2, so, zps=(0, 0, 0), pot_flag=True, act=0):
    opts = S.AddOptionsT()
    opts.fusedActivationFunction, opts.potScaleInt16 = act, pot_flag
    mb = one_op_model(S.BuiltinOperator.ADD, S.BuiltinOptions.AddOptions, opts,
                      [("a", SHAPE, T.INT16, s1, zps[0], None), ("b", SHAPE, T.INT16, s2, zps[1], None),
                       ("y", SHAPE, T.INT16, so, zps[2], None)], [0, 1], [2])
    return Case("int16_edges", name, mb, what)


def cases():
    out = [
        _add("add16_potflag_same", "ADD int16, pot_scale_int16, scales 2^-10 (shifts 0: saturating sum)",
             2.0**-10, 2.0**-10, 2.0**-10),
        _add("add16_potflag_shift3", "ADD int16, pot_scale_int16, input 1 scale 2^-13, input 2 and output 2^-10",
             2.0**-13, 2.0**-10, 2.0**-10),
        _add("add16_potflag_relu", "ADD int16, pot_scale_int16, input 2 scale 2^-12, output 2^-11, fused RELU",
             2.0**-11, 2.0**-12, 2.0**-11, act=S.ActivationFunctionType.RELU),
        _add("add16_potflag_finer_input", "ADD int16, pot_scale_int16, input 1 scale 2^-9 finer than output 2^-10",
             2.0**-9, 2.0**-10, 2.0**-10),
        _add("add16_zero_points", "ADD int16, general scales, zero points 5, -7, 3", 3.1e-4, 1.7e-4, 4.4e-4,
             zps=(5, -7, 3), pot_flag=False),
    ]
    def mul_scales(rng):  # s_out near s1 * s2 * 2^15: outputs over the int16 range
        a, b = 10.0 ** rng.uniform(-4, -3, 2)
        return a, b, a * b * 2.0**15 * rng.uniform(0.5, 2)

    s1, s2, so = _split_scales(161, mul_scales, lambda a, b, c: np.float32(np.float32(a * b) / c),
                               lambda a, b, c: np.float64(a) * np.float64(b) / np.float64(c))
    mb = one_op_model(S.BuiltinOperator.MUL, S.BuiltinOptions.MulOptions, S.MulOptionsT(),
                      [("a", SHAPE, T.INT16, s1, 0, None), ("b", SHAPE, T.INT16, s2, 0, None),
                       ("y", SHAPE, T.INT16, so, 0, None)], [0, 1], [2])
    out.append(Case("int16_edges", "mul16_quotient", mb, f"MUL int16, scales {s1:.6g} {s2:.6g} -> {so:.6g}"))
    alpha = 0.3
    si, _, so = _split_scales(162, lambda rng: (10.0 ** rng.uniform(-5, -3),) * 2 + (10.0 ** rng.uniform(-5, -3),),
                              lambda a, b, c: np.float32(np.float32(a * np.float32(alpha)) / c),
                              lambda a, b, c: np.float64(a) * np.float64(np.float32(alpha)) / np.float64(c))
    opts = S.LeakyReluOptionsT()
    opts.alpha = alpha
    mb = one_op_model(S.BuiltinOperator.LEAKY_RELU, S.BuiltinOptions.LeakyReluOptions, opts,
                      [("x", SHAPE, T.INT16, si, 0, None), ("y", SHAPE, T.INT16, so, 0, None)], [0], [1])
    out.append(Case("int16_edges", "leaky_relu16_quotient", mb, f"LEAKY_RELU int16 alpha 0.3, {si:.6g} -> {so:.6g}"))
    opts = S.ConcatenationOptionsT()
    opts.axis = 1
    mb = one_op_model(S.BuiltinOperator.CONCATENATION, S.BuiltinOptions.ConcatenationOptions, opts,
                      [("a", (8, 100), T.INT16, 2.0e-4, 0, None), ("b", (8, 156), T.INT16, 5.0e-4, 0, None),
                       ("y", SHAPE, T.INT16, 3.0e-4, 0, None)], [0, 1], [2])
    out.append(Case("int16_edges", "concat16_scales", mb, "CONCATENATION int16, scales 2e-4 and 5e-4 -> 3e-4"))
    for code, name in ((S.BuiltinOperator.RELU, "relu16_rescale"), (S.BuiltinOperator.RELU6, "relu6_16_rescale")):
        mb = one_op_model(code, 0, None, [("x", SHAPE, T.INT16, 2.5e-4, 0, None), ("y", SHAPE, T.INT16, 1.9e-4, 0, None)],
                          [0], [1])
        out.append(Case("int16_edges", name, mb, f"{name.split('_')[0].upper()} int16, scale 2.5e-4 -> 1.9e-4"))
    for n, scale in ((61, 1.1e-4), (64, 1.1e-4), (61, 2.0**-13)):  # LiteRT's optimized int16 AffineQuantize:
        mb = one_op_model(S.BuiltinOperator.QUANTIZE, S.BuiltinOptions.QuantizeOptions,  # blocks of 8, a tail
                          S.QuantizeOptionsT(), [("x", (4, n), T.FLOAT32, None, 0, None),
                                                 ("y", (4, n), T.INT16, scale, 0, None)], [0], [1])
        tag = "_pot_ties" if scale == 2.0**-13 else ""
        out.append(Case("int16_edges", f"quantize_f32_i16_{n}{tag}", mb,
                        f"QUANTIZE float32 (4, {n}) -> int16, scale {scale:g}" + (", run 1: exact ties k + 1/2" if tag
                                                                                  else "")))
    return out


def _softmax(name, what, s_in, beta, shape=SHAPE, s_out=1.0 / 32768, z_in=0):
    opts = S.SoftmaxOptionsT()
    opts.beta = beta
    mb = one_op_model(S.BuiltinOperator.SOFTMAX, S.BuiltinOptions.SoftmaxOptions, opts,
                      [("x", shape, T.INT16, s_in, z_in, None), ("y", shape, T.INT16, s_out, 0, None)], [0], [1],
                      version=3)
    return Case("int16_kernels", name, mb, what)


def _pool(name, what, code, shape, filt, stride, padding, act=0, q_in=(2.0**-11, 0), q_out=None):
    opts = S.Pool2DOptionsT()
    opts.filterHeight, opts.filterWidth = filt
    opts.strideH, opts.strideW = stride
    opts.padding, opts.fusedActivationFunction = padding, act
    n, h, w, c = shape
    oh, ow = ((h + stride[0] - 1) // stride[0], (w + stride[1] - 1) // stride[1]) if padding == S.Padding.SAME else \
        ((h - filt[0]) // stride[0] + 1, (w - filt[1]) // stride[1] + 1)
    q_out = q_out or q_in
    mb = one_op_model(code, S.BuiltinOptions.Pool2DOptions, opts,
                      [("x", shape, T.INT16, *q_in, None), ("y", (n, oh, ow, c), T.INT16, *q_out, None)], [0], [1],
                      version=3)
    return Case("int16_kernels", name, mb, what)


def _leaky(name, what, ttype, alpha, q_in, q_out, shape=(4, 64)):
    opts = S.LeakyReluOptionsT()
    opts.alpha = alpha
    mb = one_op_model(S.BuiltinOperator.LEAKY_RELU, S.BuiltinOptions.LeakyReluOptions, opts,
                      [("x", shape, ttype, *q_in, None), ("y", shape, ttype, *q_out, None)], [0], [1],
                      version=2 if ttype == T.INT16 else 1)
    return Case("int16_kernels", name, mb, what)


def _sub(name, what, s1, s2, so, act=0, shape2=SHAPE):
    opts = S.SubOptionsT()
    opts.fusedActivationFunction, opts.potScaleInt16 = act, True
    mb = one_op_model(S.BuiltinOperator.SUB, S.BuiltinOptions.SubOptions, opts,
                      [("a", SHAPE, T.INT16, s1, 0, None), ("b", shape2, T.INT16, s2, 0, None),
                       ("y", SHAPE, T.INT16, so, 0, None)], [0, 1], [2], version=3)
    return Case("int16_kernels", name, mb, what)


def kernel_cases():
    """The ``int16_kernels`` family: int16 SOFTMAX, int16 pooling, LEAKY_RELU with alpha < 0 or > 1 (int8 and
    int16), int16 SUB with ``pot_scale_int16`` (written to ``ops/int16_kernels.npz``)."""
    A = S.ActivationFunctionType
    P = S.BuiltinOperator
    out = [
        _softmax("softmax16_beta0.3", "SOFTMAX int16, s_in 1.2e-4, beta 0.3 (the float32 product s_in * beta of "
                 "LiteRT against TFLM's double)", 1.2223761586938053e-4, 0.3),
        _softmax("softmax16_beta1.7_wide", "SOFTMAX int16, s_in 4.9e-4, beta 1.7", 4.889504634775221e-4, 1.7),
        _softmax("softmax16_left_shift", "SOFTMAX int16, s_in 2^-8 (multiplier left shift 5)", 2.0**-8, 1.0),
        _softmax("softmax16_tiny_scale", "SOFTMAX int16, s_in 1e-7 (multiplier shift -11: nearly uniform rows)",
                 1e-7, 1.0),
        _softmax("softmax16_depth1", "SOFTMAX int16 over rows of one entry", 3e-4, 1.0, shape=(64, 1)),
        _softmax("softmax16_depth2048", "SOFTMAX int16 over one row of 2048 entries", 2.0e-4, 1.0, shape=(1, 2048)),
        _softmax("softmax16_out_near", "SOFTMAX int16, output scale 1/32768 x 1.0008 (within the 0.1% check)",
                 1.5e-4, 1.0, s_out=1.0008 / 32768),
        _softmax("softmax16_out_off", "SOFTMAX int16, output scale 1/32768 x 1.002 (both engines refuse)", 1.5e-4, 1.0,
                 s_out=1.002 / 32768),
        _softmax("softmax16_in_zp", "SOFTMAX int16, input zero point 3 (both engines refuse)", 1.5e-4, 1.0, z_in=3),
        _pool("avgpool16_same_3x3_s2", "AVERAGE_POOL_2D int16 3x3 stride 2 SAME (edge windows of 4 and 6 taps)",
              P.AVERAGE_POOL_2D, (2, 9, 10, 8), (3, 3), (2, 2), S.Padding.SAME),
        _pool("avgpool16_2x1_ties", "AVERAGE_POOL_2D int16 2x1 stride 1 VALID (every odd sum a tie)",
              P.AVERAGE_POOL_2D, (1, 9, 8, 16), (2, 1), (1, 1), S.Padding.VALID),
        _pool("avgpool16_relu6", "AVERAGE_POOL_2D int16 2x2 stride 2 + RELU6 (s 2^-12)", P.AVERAGE_POOL_2D,
              (1, 8, 8, 16), (2, 2), (2, 2), S.Padding.VALID, act=A.RELU6, q_in=(2.0**-12, 0)),
        _pool("avgpool16_zp_relu", "AVERAGE_POOL_2D int16 3x3 stride 1 SAME + RELU, zero point 5", P.AVERAGE_POOL_2D,
              (1, 6, 7, 8), (3, 3), (1, 1), S.Padding.SAME, act=A.RELU, q_in=(3e-4, 5)),
        _pool("avgpool16_rescale", "AVERAGE_POOL_2D int16, output scale 2x the input's (TFLM refuses; LiteRT pools "
              "the codes)", P.AVERAGE_POOL_2D, (1, 8, 8, 8), (2, 2), (2, 2), S.Padding.VALID, q_out=(2.0**-10, 0)),
        _pool("maxpool16_same_3x3_s2", "MAX_POOL_2D int16 3x3 stride 2 SAME", P.MAX_POOL_2D, (2, 9, 10, 8), (3, 3),
              (2, 2), S.Padding.SAME),
        _pool("maxpool16_relu_n1", "MAX_POOL_2D int16 2x2 stride 2 + RELU_N1_TO_1 (s 2^-14)", P.MAX_POOL_2D,
              (1, 8, 8, 16), (2, 2), (2, 2), S.Padding.VALID, act=A.RELU_N1_TO_1, q_in=(2.0**-14, 0)),
        _leaky("leaky_relu8_a-0.5_ties", "LEAKY_RELU int8 alpha -0.5, equal scales (every odd negative input a tie)",
               T.INT8, -0.5, (0.05, 3), (0.05, -2)),
        _leaky("leaky_relu8_a-0.3", "LEAKY_RELU int8 alpha -0.3, scales 0.04 -> 0.03", T.INT8, -0.3, (0.04, -7),
               (0.03, 5)),
        _leaky("leaky_relu8_a-1.5", "LEAKY_RELU int8 alpha -1.5", T.INT8, -1.5, (0.05, 0), (0.06, -1)),
        _leaky("leaky_relu8_a1.7", "LEAKY_RELU int8 alpha 1.7", T.INT8, 1.7, (0.05, 10), (0.07, -3)),
        _leaky("leaky_relu8_a-300", "LEAKY_RELU int8 alpha -300, output scale 4 (slope ratio -3.75)", T.INT8,
               -300.0, (0.05, 0), (4.0, 0)),
        _leaky("leaky_relu16_a-0.5_ties", "LEAKY_RELU int16 alpha -0.5, equal scales (ties on every odd input)",
               T.INT16, -0.5, (2.0**-12, 0), (2.0**-12, 0), shape=SHAPE),
        _leaky("leaky_relu16_a-0.3", "LEAKY_RELU int16 alpha -0.3, scales 3e-4 -> 2e-4", T.INT16, -0.3, (3e-4, 0),
               (2e-4, 0), shape=SHAPE),
        _leaky("leaky_relu16_a-1.7_tail", "LEAKY_RELU int16 alpha -1.7, 61 values a row (vector body and tail)",
               T.INT16, -1.7, (2e-4, 0), (3e-4, 0), shape=(4, 61)),
        _leaky("leaky_relu16_a2.5", "LEAKY_RELU int16 alpha 2.5", T.INT16, 2.5, (2e-4, 0), (4e-4, 0), shape=SHAPE),
        _leaky("leaky_relu16_a-0.5_zp", "LEAKY_RELU int16 alpha -0.5, zero points 4, -3 (LiteRT refuses)", T.INT16,
               -0.5, (2.0**-12, 4), (2.0**-12, -3), shape=SHAPE),
        _sub("sub16_potflag_same", "SUB int16, pot_scale_int16, scales 2^-10 (shifts 0: saturating difference)",
             2.0**-10, 2.0**-10, 2.0**-10),
        _sub("sub16_potflag_shift3", "SUB int16, pot_scale_int16, input 2 scale 2^-13, input 1 and output 2^-10",
             2.0**-10, 2.0**-13, 2.0**-10),
        _sub("sub16_potflag_first_relu", "SUB int16, pot_scale_int16, input 1 scale 2^-12, output 2^-11, RELU",
             2.0**-12, 2.0**-11, 2.0**-11, act=A.RELU),
        _sub("sub16_potflag_finer_input", "SUB int16, pot_scale_int16, input 2 scale 2^-9 finer than output 2^-10 "
             "(LiteRT refuses)", 2.0**-10, 2.0**-9, 2.0**-10),
        _sub("sub16_potflag_broadcast", "SUB int16, pot_scale_int16, broadcast (1, 256) (BroadcastSub16POTSlow)",
             2.0**-10, 2.0**-12, 2.0**-10, shape2=(1, 256)),
    ]
    return out + gap_cases()


def gap_cases():
    """Converter-made 16x8 models for the regimes the ``int16`` family lacks (issue 12 item 4): TRANSPOSE_CONV on
    power-of-two scales and at stride 1 without bias, dilated CONV_2D, DEPTHWISE_CONV_2D at stride 2, PAD on
    every axis, STRIDED_SLICE with negative strides and a shrink axis, a three-input CONCATENATION on axis 0,
    MEAN over the last axis, FULLY_CONNECTED on a wide input range."""
    t = mgo.tf()
    rng = np.random.default_rng(121)
    c = mgo.c
    out = []

    def add(name, fn, shapes, what, sigma=1.0, pot=False):
        base = mgo.conv16(fn, shapes, 1210 + len(out), sigma)
        out.append(Case("int16_kernels", name, base, what + " (16x8)", sigma=sigma))
        if pot:
            out.append(Case("int16_kernels", f"{name}_pot", mgo.pot_all(base), what + " (16x8), power-of-two scales"))

    w_tc, b_tc = c(rng, 3, 3, 5, 4), c(rng, 5, scale=0.2)
    add("tconv16_s2_same", mgo._tconv_fn(w_tc, b_tc, [1, 8, 10, 5], 2, "SAME"), [(1, 4, 5, 4)],
        "TRANSPOSE_CONV 3x3 stride 2 SAME + bias", pot=True)
    w_t1 = c(rng, 2, 3, 3, 6)
    add("tconv16_s1_valid_nobias", lambda x: t.nn.conv2d_transpose(x, w_t1, [2, 6, 8, 3], 1, "VALID"), [(2, 5, 6, 6)],
        "TRANSPOSE_CONV 2x3 stride 1 VALID, no bias, batch 2")
    w_cd, b_cd = c(rng, 3, 3, 3, 5), c(rng, 5, scale=0.2)
    add("conv16_dilated", lambda x: t.nn.conv2d(x, w_cd, 1, "SAME", dilations=2) + b_cd, [(1, 9, 8, 3)],
        "CONV_2D 3x3 dilation 2 SAME", sigma=3.0, pot=True)
    w_ds, b_ds = c(rng, 3, 3, 6, 1), c(rng, 6, scale=0.2)
    add("dwconv16_s2_valid_relu", lambda x: t.nn.relu(t.nn.depthwise_conv2d(x, w_ds, [1, 2, 2, 1], "VALID") + b_ds),
        [(1, 9, 10, 6)], "DEPTHWISE_CONV_2D 3x3 stride 2 VALID + RELU")
    w_fw, b_fw = c(rng, 64, 10), c(rng, 10, scale=0.5)
    add("fc16_wide_range", lambda x: t.matmul(x, w_fw) + b_fw, [(4, 64)], "FULLY_CONNECTED 64 -> 10, input range +-32",
        sigma=8.0, pot=True)
    add("pad16_all_axes", lambda x: t.pad(x * 1.5, [[1, 0], [0, 2], [3, 1], [1, 1]]), [(1, 3, 4, 5)],
        "MUL, PAD on every axis")
    add("strided_slice16_neg_shrink", lambda x: x[:, ::-2, 1, 3:0:-1], [(2, 7, 5, 6)],
        "STRIDED_SLICE with negative strides and a shrink axis")
    add("concat16_three_axis0", lambda a, b, d: t.concat([a, b * 0.5, d * 3.0], axis=0), [(2, 3, 8), (1, 3, 8), (3, 3, 8)],
        "MUL, CONCATENATION of three inputs on axis 0")
    add("mean16_last_axis", lambda x: t.reduce_mean(x, axis=[-1]), [(3, 5, 40)], "MEAN over the last axis", pot=True)
    return out


def _make_inputs(model, name, **kw):
    """make_golden_ops.make_inputs, with run 1 of the ``_pot_ties`` QUANTIZE replaced by exact ties
    ``(k + 1/2) * 2^-13`` (k from -30000 to 30000)."""
    arrays = _base_inputs(model, name, **kw)
    if name.endswith("_pot_ties"):
        n = arrays[0][1].size
        arrays[0][1] = ((np.round(np.linspace(-30000, 30000, n)) + 0.5) * 2.0**-13).reshape(arrays[0][1].shape)
    return arrays


_base_inputs, mgo.make_inputs = mgo.make_inputs, _make_inputs


def main(argv):
    families = {"int16_edges": cases, "int16_kernels": kernel_cases}
    for fam in argv or list(families):
        write_family(families[fam](), fam)


if __name__ == "__main__":
    main(sys.argv[1:])
