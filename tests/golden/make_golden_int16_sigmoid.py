"""Golden vectors for the int16 sigmoid and tanh kernels (dspsim.kernels.nonlinear.int16).

Run with the golden venv from the repository root (a few seconds)::

    /work/goldvenv/bin/python tests/golden/make_golden_int16_sigmoid.py

One-operator int16 LOGISTIC / TANH models built from the schema objects (``_tflite_edit.one_op_model``),
input (1, 4096) so that run 0 is a strided sweep of every int16 code (stride 16, edges included; runs
1-3 random codes and the type's edges: ``make_golden_ops.make_inputs``), output scale 2^-15 and zero
point 0, each run by TFLM, LiteRT BUILTIN_REF and LiteRT default through ``make_golden_ops.record_case``
(format: tests/golden/README.md, "Per-operator models"). The input scales:

* ``i16_logistic_pot``: 2^-12, the power-of-two case (TFLM and LiteRT REF: table with multiplier 0;
  LiteRT default: gemmlowp ``logistic`` on ``FixedPoint<int16, 3>``);
* ``i16_logistic_generic``: 3e-4 (table with a rescaling multiplier, every engine);
* ``i16_tanh_pot12`` / ``i16_tanh_pot11``: 2^-12 and 2^-11 (table with multiplier 0 and left shift 0 / 1;
  LiteRT default: gemmlowp ``tanh`` on ``FixedPoint<int16, 3>``, of the input doubled with saturation
  for 2^-11);
* ``i16_tanh_generic``: 2e-4.

Output: ``tests/golden/ops/int16_sigmoid.npz``.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _tflite_edit import S, one_op_model  # noqa: E402
from make_golden_ops import Case, write_family  # noqa: E402

CASES = (  # name, builtin, input scale, what
    ("i16_logistic_pot", "LOGISTIC", 2.0**-12, "int16 LOGISTIC, input scale 2^-12 (power of two)"),
    ("i16_logistic_generic", "LOGISTIC", 3e-4, "int16 LOGISTIC, input scale 3e-4 (rescaling multiplier)"),
    ("i16_tanh_pot12", "TANH", 2.0**-12, "int16 TANH, input scale 2^-12 (power of two, left shift 0)"),
    ("i16_tanh_pot11", "TANH", 2.0**-11, "int16 TANH, input scale 2^-11 (power of two, left shift 1)"),
    ("i16_tanh_generic", "TANH", 2e-4, "int16 TANH, input scale 2e-4 (rescaling multiplier)"),
)


def cases():
    i16 = S.TensorType.INT16
    for name, op, s_in, what in CASES:
        mb = one_op_model(getattr(S.BuiltinOperator, op), 0, None,
                          [("x", (1, 4096), i16, s_in, 0, None), ("y", (1, 4096), i16, 2.0**-15, 0, None)],
                          [0], [1], version=3)
        yield Case("int16_sigmoid", name, mb, what, input_scale=s_in)


def main():
    write_family(cases(), "int16_sigmoid")


if __name__ == "__main__":
    main()
