"""Golden vectors that tell the nonlinear operators' recipes apart (complements make_golden_ops.py's
"nonlinear" family, whose converter-made scales never reach the cases below).

Run with the golden venv from the repository root (about a minute)::

    /work/goldvenv/bin/python tests/golden/make_golden_nonlinear.py

One-operator models built from the schema objects (``_tflite_edit.one_op_model``), input (1, 256) so that
run 0 holds every int8 code, each run by TFLM, LiteRT BUILTIN_REF and LiteRT default through
``make_golden_ops.record_case`` (same inputs, packing and format: tests/golden/README.md, "Per-operator
models"). The cases:

* ``nlties_elu_half``: ELU with ``s_in / s_out = 1/2``: every odd positive ``q - zi`` is an exact tie
  (TFLM's table rounds it away from zero, XNNPACK's to even; LiteRT BUILTIN_REF has no ELU);
* ``nlties_logistic_out0.2``: LOGISTIC with output scale 0.2, zero point 0: ``sigmoid(0) / 0.2 = 2.5``
  (XNNPACK: ties to even; TFLM ignores the output scale; LiteRT BUILTIN_REF refuses it);
* ``nlties_exp_overflow``: EXP with output scale 1e-5: large codes overflow the float-to-int32
  conversion of LiteRT's table (x86 ``cvttss2si`` gives INT32_MIN, clamped to -128);
* ``nlties_exp_half``: EXP whose input 0 lands on ``1 / 0.4 = 2.5`` (ties away from zero);
* ``nlties_tanh_out_zp``: TANH with output scale 1/64 and zero point 20 (TFLM ignores both);
* ``nlties_logistic_zp0``: LOGISTIC with output scale 1/256 and zero point 0 (LiteRT BUILTIN_REF builds its
  table with it; TFLM refuses it);
* ``nlties_softmax_near``: SOFTMAX with output scale 1/256 x (1 + 5e-4) (LiteRT accepts within 0.1%, TFLM
  wants 1/256 exactly);
* ``nlties_softmax_int16*``: SOFTMAX with int8 input and int16 output (scale 1/65536, zero point -32768;
  and zero point 0, which TFLM refuses), rows of 256 and of 16;
* ``nlties_elu_rare*``, ``nlties_logistic_rare``: scales where dspsim's emulations of the recipes
  (TFLM ``expf(x) - 1`` vs XNNPACK ``expm1f``; XNNPACK's double sigmoid vs float32) predict a one- or
  two-code difference without any tie.

Output: ``tests/golden/ops/nonlinear_ties.npz``.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _tflite_edit import S, one_op_model  # noqa: E402
from make_golden_ops import Case, write_family  # noqa: E402

CASES = (  # name, builtin, version, (s_in, z_in), (s_out, z_out), what
    ("nlties_elu_half", "ELU", 1, (0.05, -3), (0.1, 7), "ELU, s_in / s_out = 1/2: exact ties on odd q - zi > 0"),
    ("nlties_logistic_out0.2", "LOGISTIC", 2, (0.05, 0), (0.2, 0), "LOGISTIC, output scale 0.2: 0.5 / 0.2 = 2.5"),
    ("nlties_exp_overflow", "EXP", 2, (0.1, 0), (1e-5, 0), "EXP, output scale 1e-5: int32 overflow above 2^31"),
    ("nlties_exp_half", "EXP", 2, (0.1, 0), (0.4, 0), "EXP, exp(0) / 0.4 = 2.5: a tie at the input zero point"),
    ("nlties_tanh_out_zp", "TANH", 2, (0.06, 5), (1.0 / 64, 20), "TANH, output scale 1/64 and zero point 20"),
    ("nlties_logistic_zp0", "LOGISTIC", 2, (0.07, -4), (1.0 / 256, 0), "LOGISTIC, output scale 1/256, zp 0"),
    # scales found by a search with dspsim's tables where the recipes differ on one or two codes without a tie:
    ("nlties_elu_rare_small", "ELU", 1, (2.1512470993911847e-05, 85), (6.618553015869111e-06, 5),
     "ELU, tiny scales: expf(x) - 1 (TFLM) and expm1f (XNNPACK) round apart on 2 codes"),
    ("nlties_elu_rare", "ELU", 1, (0.028741171583533287, 30), (0.022378623485565186, 1),
     "ELU: TFLM's and XNNPACK's tables differ on 1 code"),
    ("nlties_logistic_rare", "LOGISTIC", 2, (0.0017296787118539214, 2), (0.006221697200089693, -59),
     "LOGISTIC: XNNPACK's double-precision sigmoid rounds apart from the float32 formula on 1 code"),
)
SOFTMAX = (  # name, x shape, output type, (s_in, z_in), (s_out, z_out), beta, what
    ("nlties_softmax_near", (1, 256), "INT8", (0.05, 3), (1.0 / 256 * (1 + 5e-4), -128), 1.0,
     "SOFTMAX, output scale 1/256 x (1 + 5e-4)"),
    ("nlties_softmax_int16", (1, 256), "INT16", (0.05, 3), (1.0 / 65536, -32768), 1.0,
     "SOFTMAX int8 -> int16, output scale 1/65536, zp -32768"),
    ("nlties_softmax_int16_rows", (16, 16), "INT16", (0.2, -7), (1.0 / 65536, -32768), 0.7,
     "SOFTMAX int8 -> int16 over rows of 16, beta 0.7"),
    ("nlties_softmax_int16_zp0", (1, 256), "INT16", (0.05, 3), (1.0 / 65536, 0), 1.0,
     "SOFTMAX int8 -> int16 with output zp 0"),
)


def cases():
    i8 = S.TensorType.INT8
    for name, op, version, (s_in, z_in), (s_out, z_out), what in CASES:
        mb = one_op_model(getattr(S.BuiltinOperator, op), 0, None,
                          [("x", (1, 256), i8, s_in, z_in, None), ("y", (1, 256), i8, s_out, z_out, None)],
                          [0], [1], version=version)
        yield Case("nonlinear_ties", name, mb, what)
    for name, shape, out_type, (s_in, z_in), (s_out, z_out), beta, what in SOFTMAX:
        opts = S.SoftmaxOptionsT()
        opts.beta = beta
        mb = one_op_model(S.BuiltinOperator.SOFTMAX, S.BuiltinOptions.SoftmaxOptions, opts,
                          [("x", shape, i8, s_in, z_in, None),
                           ("y", shape, getattr(S.TensorType, out_type), s_out, z_out, None)],
                          [0], [1], version=2)
        yield Case("nonlinear_ties", name, mb, what)


def main():
    write_family(cases(), "nonlinear_ties")


if __name__ == "__main__":
    main()
