"""Golden vectors for the int16 variants of issue 27 part 4, from the four engines (TFLite Micro, LiteRT
BUILTIN_REF, LiteRT default, LiteRT without delegates).

One-operator models built from the schema objects (``_tflite_edit.one_op_model``; no TensorFlow needed), kept as
``tests/golden/ops/i16v_<case>.tflite``; each runs under every engine of ``make_golden_real_models.ENGINES`` in its
own subprocess (refusals and crashes recorded). Cases:

* SUM on int16 (zero points 0 and not), reduced over inner and outer axes;
* PRELU with int16 activations and an int8 alpha (constant, and a model input), broadcast;
* BATCH_MATMUL on int16 (adjoints, batch broadcast);
* SQUARED_DIFFERENCE on int16 (same shapes, broadcast);
* CONV_2D and FULLY_CONNECTED 16x8 with an int32 bias (TFLM's int32 accumulator; one conv with 576 taps whose
  int32 sum overflows on the extremes run), per-channel weights;
* TRANSPOSE_CONV 16x8 with an int16 bias;
* UNIDIRECTIONAL_SEQUENCE_LSTM with int16 input and hidden state (int64 biases, variable states; with and
  without a cell clip, batch- and time-major).

Every model runs on ``RUNS`` input sets: make_golden_ops's (run 0 a sweep of the int16 range, runs 1-2 uniform,
run 3 the extremes); the LSTM's state carries across runs. Run with the golden venv from the repository root::

    /tmp/interp/bin/python tests/golden/make_golden_int16_variants.py

Output: ``tests/golden/ops/int16_variants.npz`` (packed format of make_golden_ops.py, README "Per-operator models").
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden_ops as G  # noqa: E402
from _tflite_edit import S, one_op_model  # noqa: E402

OP, OPT, T = S.BuiltinOperator, S.BuiltinOptions, S.TensorType
I8, I16, I32, I64 = T.INT8, T.INT16, T.INT32, T.INT64
FAMILY = "int16_variants"
RNG = np.random.default_rng(20261205)


def _opts(name, **fields):
    o = getattr(S, f"{name}T")()
    for k, v in fields.items():
        setattr(o, k, v)
    return getattr(OPT, name), o


def _case(name, code, opts, tensors, inputs, outputs, what, **params):
    otype, o = opts if opts is not None else (0, None)
    return G.Case(FAMILY, f"i16v_{name}", one_op_model(code, otype, o, tensors, inputs, outputs), what, **params)


# LiteRT reads what its kernels do not own: recorded, but nothing to reproduce (docs/engines.md, "int16 variants")
_SUM_REF = {"litert_ref": "reduce.cc QuantizedMeanOrSum<uint8_t> on int16 data: half the input's bytes read as "
                          "uint8, half the output's written"}
_INT32_BIAS = "the int32 bias of a 16x8 layer read as int64: out of bounds"


def _t(name, shape, ttype, scale=None, zp=0, data=None, **extras):
    return (name, tuple(shape), ttype, scale, zp, data, extras)


def _i8(shape, lo=-127, hi=127):
    return RNG.integers(lo, hi + 1, shape).astype(np.int8)


def sum_cases():
    out = []
    for tag, shape, axes, keep, q_in, q_out in (
            ("axes12_keep", (2, 5, 6, 8), [1, 2], True, (0.002, 0), (0.03, 0)),
            ("last", (3, 4, 40), [2], False, (0.0005, 0), (0.004, 0)),
            ("axis0_zero_points", (6, 10), [0], False, (0.001, 12), (0.0031, -7))):
        oshape = tuple(1 if a in axes else d for a, d in enumerate(shape)) if keep else \
            tuple(d for a, d in enumerate(shape) if a not in axes)
        tensors = [_t("x", shape, I16, *q_in), _t("axis", (len(axes),), I32, data=np.array(axes, np.int32)),
                   _t("y", oshape, I16, *q_out)]
        out.append(_case(f"sum_{tag}", OP.SUM, _opts("ReducerOptions", keepDims=keep), tensors, [0, 1], [2],
                         f"SUM int16 over axes {axes}", undefined=_SUM_REF))
    return out


def prelu_cases():
    alpha = _i8((8,))
    tensors = [_t("x", (1, 6, 6, 8), I16, 0.0008), _t("alpha", (8,), I8, 0.01, 3, alpha),
               _t("y", (1, 6, 6, 8), I16, 0.0007)]
    out = [_case("prelu_const_alpha", OP.PRELU, None, tensors, [0, 1], [2],
                 "PRELU int16 activations, constant int8 alpha per channel")]
    tensors = [_t("x", (2, 4, 8), I16, 0.0011), _t("alpha", (1, 1, 8), I8, 0.02, -5),
               _t("y", (2, 4, 8), I16, 0.0013)]
    out.append(_case("prelu_alpha_input", OP.PRELU, None, tensors, [0, 1], [2],
                     "PRELU int16 activations, int8 alpha as a model input (every code), broadcast"))
    return out


def batch_matmul_cases():
    out = []
    for tag, xs, ys, adj_x, adj_y, q in (
            ("plain", (2, 3, 24), (2, 24, 5), False, False, (0.001, 0.002, 0.02)),
            ("adj_y", (2, 3, 24), (2, 5, 24), False, True, (0.0007, 0.0009, 0.006)),
            ("adj_x_broadcast", (1, 24, 3), (4, 24, 5), True, False, (0.0004, 0.0012, 0.01))):
        a = xs[:-2] + ((xs[-1], xs[-2]) if adj_x else xs[-2:])
        b = ys[:-2] + ((ys[-1], ys[-2]) if adj_y else ys[-2:])
        oshape = tuple(np.broadcast_shapes(a[:-2], b[:-2])) + (a[-2], b[-1])
        tensors = [_t("x", xs, I16, q[0]), _t("y", ys, I16, q[1]), _t("out", oshape, I16, q[2])]
        out.append(_case(f"batch_matmul_{tag}", OP.BATCH_MATMUL, _opts("BatchMatMulOptions", adjX=adj_x, adjY=adj_y),
                         tensors, [0, 1], [2], f"BATCH_MATMUL int16 {tag}"))
    return out


def squared_difference_cases():
    out = []
    for tag, sa, sb, q in (("same", (8, 64), (8, 64), (0.001, 0.0013, 0.22)),
                           ("broadcast", (4, 1, 16), (1, 8, 16), (0.0005, 0.0005, 0.03)),
                           ("left_shift", (16, 16), (16, 16), (0.001, 0.0009, 0.0002))):
        tensors = [_t("x1", sa, I16, q[0]), _t("x2", sb, I16, q[1]),
                   _t("y", tuple(np.broadcast_shapes(sa, sb)), I16, q[2])]
        out.append(_case(f"squared_difference_{tag}", OP.SQUARED_DIFFERENCE, _opts("SquaredDifferenceOptions"),
                         tensors, [0, 1], [2], f"SQUARED_DIFFERENCE int16 {tag}"))
    return out


def mac_cases():
    out = []
    for tag, xs, oc, k, stride, pad, act, bias_max in (
            ("3x3_s2_same_relu", (1, 9, 9, 4), 6, 3, 2, S.Padding.SAME, 1, 1 << 20),
            ("576_taps_overflow", (1, 5, 5, 64), 4, 3, 1, S.Padding.VALID, 0, 1 << 24)):
        w = _i8((oc, k, k, xs[3]))
        if tag.startswith("576"):
            w[:] = 127  # the extremes run sums 576 * 32767 * 127 > 2^31
        scales = np.linspace(0.002, 0.004, oc)
        ho = (xs[1] + stride - 1) // stride if pad == S.Padding.SAME else (xs[1] - k) // stride + 1
        tensors = [_t("x", xs, I16, 0.0005), _t("w", w.shape, I8, scales, data=w),
                   _t("bias", (oc,), I32, scales * 0.0005, data=RNG.integers(-bias_max, bias_max, oc).astype(np.int32)),
                   _t("y", (1, ho, ho, oc), I16, 0.01 if tag.startswith("3x3") else 1.0)]
        o = _opts("Conv2DOptions", padding=pad, strideW=stride, strideH=stride, fusedActivationFunction=act,
                  dilationWFactor=1, dilationHFactor=1)
        out.append(_case(f"conv_16x8_int32_bias_{tag}", OP.CONV_2D, o, tensors, [0, 1, 2], [3],
                         f"CONV_2D 16x8 with an int32 bias, {tag}",
                         undefined={e: _INT32_BIAS for e in ("litert_ref", "litert_default", "litert_optimized")}))
    w = _i8((10, 48))
    tensors = [_t("x", (3, 48), I16, 0.0005), _t("w", (10, 48), I8, 0.003, data=w),
               _t("bias", (10,), I32, 0.0000015, data=RNG.integers(-1 << 18, 1 << 18, 10).astype(np.int32)),
               _t("y", (3, 10), I16, 0.004)]
    out.append(_case("fully_connected_16x8_int32_bias", OP.FULLY_CONNECTED, _opts("FullyConnectedOptions"), tensors,
                     [0, 1, 2], [3], "FULLY_CONNECTED 16x8 with an int32 bias",
                     undefined={"litert_ref": _INT32_BIAS}))
    w = _i8((3, 3, 3, 4))
    tensors = [_t("output_shape", (4,), I32, data=np.array([1, 8, 8, 3], np.int32)),
               _t("w", (3, 3, 3, 4), I8, [0.003, 0.002, 0.0025], data=w), _t("x", (1, 4, 4, 4), I16, 0.0005),
               _t("bias", (3,), I16, [0.0000015, 0.000001, 0.00000125],
                  data=np.array([1234, -20000, 32767], np.int16)),
               _t("y", (1, 8, 8, 3), I16, 0.002)]
    o = _opts("TransposeConvOptions", padding=S.Padding.SAME, strideW=2, strideH=2)
    out.append(_case("transpose_conv_16x8_int16_bias", OP.TRANSPOSE_CONV, o, tensors, [0, 1, 2, 3], [4],
                     "TRANSPOSE_CONV 16x8 with an int16 bias (widened to int64)"))
    return out


def lstm_cases():
    out = []
    for tag, batch, steps, n_in, n_cell, clip, time_major in (("batch_major", 2, 5, 6, 4, 0.0, False),
                                                               ("time_major_clip", 3, 4, 5, 3, 2.0, True)):
        s_in, s_h, s_c = 3.0518044e-05, 2.1362957e-05, 2.0 ** -12
        tensors = [_t("input", (steps, batch, n_in) if time_major else (batch, steps, n_in), I16, s_in)]
        for k in range(4):
            tensors.append(_t(f"w_in{k}", (n_cell, n_in), I8, 0.02 + 0.01 * k, data=_i8((n_cell, n_in))))
        for k in range(4):
            tensors.append(_t(f"w_rec{k}", (n_cell, n_cell), I8, 0.01 + 0.005 * k, data=_i8((n_cell, n_cell))))
        for k in range(4):
            tensors.append(_t(f"bias{k}", (n_cell,), I64, s_in * (0.02 + 0.01 * k),
                              data=RNG.integers(-1 << 16, 1 << 16, n_cell).astype(np.int64)))
        tensors.append(_t("output_state", (batch, n_cell), I16, s_h, variable=True))
        tensors.append(_t("cell_state", (batch, n_cell), I16, s_c, variable=True))
        tensors.append(_t("output", (steps, batch, n_cell) if time_major else (batch, steps, n_cell), I16, s_h))
        inputs = [0, 1, 2, 3, 4, 5, 6, 7, 8, -1, -1, -1, 9, 10, 11, 12, -1, -1, 13, 14, -1, -1, -1, -1]
        o = _opts("UnidirectionalSequenceLSTMOptions", fusedActivationFunction=4, cellClip=clip, projClip=0.0,
                  timeMajor=time_major)
        out.append(_case(f"lstm_{tag}", OP.UNIDIRECTIONAL_SEQUENCE_LSTM, o, tensors, inputs, [15],
                         f"UNIDIRECTIONAL_SEQUENCE_LSTM int16 input and hidden state, {tag}"))
    return out


def main():
    G.write_family(sum_cases() + prelu_cases() + batch_matmul_cases() + squared_difference_cases() + mac_cases()
                   + lstm_cases(), FAMILY)


if __name__ == "__main__":
    main()
