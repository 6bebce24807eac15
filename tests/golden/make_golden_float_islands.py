"""Golden vectors for the float islands of issue 27 part 2: float32 LOG_SOFTMAX (a float head after DEQUANTIZE, as
the TinyEngine LeNet of ../shared/models/fresh has), float32 MUL and DIV with every fused activation (XNNPACK's
flush to zero included), SQRT and ELU, from the four engines (TFLite Micro, LiteRT BUILTIN_REF, LiteRT default, LiteRT
without delegates).

One-operator models from the schema objects (``_tflite_edit.one_op_model``), kept as
``tests/golden/ops/fi_<case>.tflite``; each runs under every engine in its own subprocess. LOG_SOFTMAX inputs: normal
draws of several spreads (run 0: sigma 1, run 1: sigma 30, so that exp underflows), run 2 rows with ties, equal rows
and +-FLT_MAX, run 3 rows holding infinities and a NaN (the C comparisons' and libm's special cases). MUL, DIV,
SQRT, ELU: normal draws, then magnitudes from 2^-150 to 2^128 (denormals and overflow) with zeros, infinities and NaN. Run with the
golden venv from the repository root::

    /tmp/interp/bin/python tests/golden/make_golden_float_islands.py

Output: ``tests/golden/ops/float_islands.npz`` (packed format of make_golden_ops.py, README "Per-operator models").
"""
from __future__ import annotations

import os
import sys
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden_ops as G  # noqa: E402
from _tflite_edit import NP_DTYPES, S, one_op_model  # noqa: E402

OP, OPT, T = S.BuiltinOperator, S.BuiltinOptions, S.TensorType
FAMILY = "float_islands"


_ACT = {"none": 0, "relu": 1, "relu_n1_to_1": 2, "relu6": 3}


def cases():
    out = []
    for op, code, opt in (("mul", OP.MUL, "MulOptions"), ("div", OP.DIV, "DivOptions")):
        for act, a in _ACT.items():
            o = getattr(S, f"{opt}T")()
            o.fusedActivationFunction = a
            tensors = [("x1", (256,), T.FLOAT32, None, 0, None), ("x2", (256,), T.FLOAT32, None, 0, None),
                       ("y", (256,), T.FLOAT32, None, 0, None)]
            out.append(G.Case(FAMILY, f"fi_{op}_{act}", one_op_model(code, getattr(OPT, opt), o, tensors, [0, 1], [2]),
                              f"float32 {op.upper()}, fused {act}"))
        o = getattr(S, f"{opt}T")()
        tensors = [("x1", (4, 32), T.FLOAT32, None, 0, None), ("x2", (32,), T.FLOAT32, None, 0, None),
                   ("y", (4, 32), T.FLOAT32, None, 0, None)]
        out.append(G.Case(FAMILY, f"fi_{op}_broadcast", one_op_model(code, getattr(OPT, opt), o, tensors, [0, 1], [2]),
                          f"float32 {op.upper()}, broadcast"))
    tensors = [("x", (1024,), T.FLOAT32, None, 0, None), ("y", (1024,), T.FLOAT32, None, 0, None)]
    out.append(G.Case(FAMILY, "fi_sqrt", one_op_model(OP.SQRT, 0, None, tensors, [0], [1]), "float32 SQRT"))
    tensors = [("x", (1024,), T.FLOAT32, None, 0, None), ("y", (1024,), T.FLOAT32, None, 0, None)]
    out.append(G.Case(FAMILY, "fi_elu", one_op_model(OP.ELU, 0, None, tensors, [0], [1]), "float32 ELU"))
    for tag, shape in (("classes10", (4, 10)), ("rank3", (2, 3, 37)), ("one_class", (5, 1))):
        tensors = [("x", shape, T.FLOAT32, None, 0, None), ("y", shape, T.FLOAT32, None, 0, None)]
        out.append(G.Case(FAMILY, f"fi_log_softmax_{tag}", one_op_model(
            OP.LOG_SOFTMAX, OPT.LogSoftmaxOptions, S.LogSoftmaxOptionsT(), tensors, [0], [1]),
            f"float32 LOG_SOFTMAX {shape}"))
    return out


def _spread(rng, n, positive=False):
    """Magnitudes 2^-150 .. 2^128 (denormals, overflow), random signs unless ``positive``, then specials."""
    v = np.float32(2.0) ** rng.uniform(-150, 128, n).astype(np.float32)
    v = v if positive else v * rng.choice(np.array([-1, 1], np.float32), n)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.17549435e-38, 3.4028235e38, 1.0],
                       np.float32)
    v[:special.size] = np.abs(special) if positive else special
    return v


def make_inputs(model, name, **kw):
    sg = model.subgraphs[0]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if not name.startswith("fi_log_softmax"):  # elementwise: normal draws, magnitudes over the whole range, specials
        out = []
        for k, i in enumerate(sg.inputs):
            shape = tuple(int(v) for v in sg.tensors[i].shape)
            n = int(np.prod(shape))
            positive = name == "fi_sqrt"
            sets = [np.abs(rng.normal(0, 10, n)) if positive else rng.normal(0, 10, n), _spread(rng, n, positive),
                    _spread(rng, n, positive), np.roll(_spread(rng, n, positive), 3 * k)]
            out.append(np.stack([np.asarray(r, np.float32).reshape(shape) for r in sets]))
        return out
    tt = sg.tensors[sg.inputs[0]]
    shape = tuple(int(v) for v in tt.shape)
    assert NP_DTYPES[tt.type] == np.float32
    n = int(np.prod(shape))
    big = np.float32(np.finfo(np.float32).max)
    ties = np.resize(np.array([1.5, 1.5, -2.0, 0.0, 0.0, big, -big, 3.25], np.float32), n)
    special = np.resize(np.array([np.inf, 0.0, -np.inf, 1.0, np.nan, -3.0, 2.0, -np.inf, 5.0, -1e-45], np.float32), n)
    sets = [rng.normal(0, 1, n), rng.normal(0, 30, n), ties, special]
    return [np.stack([np.asarray(r, np.float32).reshape(shape) for r in sets])]


def main():
    G.make_inputs = make_inputs  # record_case looks it up at call time
    G.write_family(cases(), FAMILY)


if __name__ == "__main__":
    main()
