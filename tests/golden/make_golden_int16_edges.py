"""16x8 edge cases the converter never emits, from TFLite Micro, LiteRT BUILTIN_REF and LiteRT default.

One-operator int16 models built from the schema objects (``_tflite_edit.one_op_model``), run and packed
exactly as ``make_golden_ops.py`` does (same engines, same four input sets: a strided sweep of the int16
codes, two uniform draws, alternating extremes); written to ``tests/golden/ops/int16_edges.npz`` and
``tests/golden/ops/<case>.tflite``, read by ``tests/test_golden_ops.py`` like every other family::

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
from make_golden_ops import HERE, Case, write_family  # noqa: E402

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


def _make_inputs(model, name, **kw):
    """make_golden_ops.make_inputs, with run 1 of the ``_pot_ties`` QUANTIZE replaced by exact ties
    ``(k + 1/2) * 2^-13`` (k from -30000 to 30000)."""
    arrays = _base_inputs(model, name, **kw)
    if name.endswith("_pot_ties"):
        n = arrays[0][1].size
        arrays[0][1] = ((np.round(np.linspace(-30000, 30000, n)) + 0.5) * 2.0**-13).reshape(arrays[0][1].shape)
    return arrays


_base_inputs, mgo.make_inputs = mgo.make_inputs, _make_inputs


def main():
    write_family(cases(), "int16_edges")


if __name__ == "__main__":
    main()
