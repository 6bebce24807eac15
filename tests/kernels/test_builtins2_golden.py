"""The rest of TFLite Micro's builtins with an integer or bool path (comparisons, logical, select, REVERSE_V2 ...
REDUCE_PROD, DIV, ADD_N, CUMSUM; issue 27 part 3) against the real engines' golden vectors
(tests/golden/ops/builtins2.npz, written by make_golden_builtins2.py): every output of every run, 0 mismatches, under
engine "tflm" (the tflite-micro interpreter), "litert" (LiteRT BUILTIN_REF), "xnnpack" (LiteRT's default
interpreter) and "litert-optimized"; where an engine refused the model (or the case marks its result undefined),
dspsim refuses it too, at load or at run."""
import os
import sys
import warnings

import numpy as np
import pytest

import dspsim.tflite as dt

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden")
sys.path.insert(0, HERE)
from golden_io import load_packed  # noqa: E402

ENGINES = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack", "litert_optimized": "litert-optimized"}
PATH = os.path.join(HERE, "ops", "builtins2.npz")
# (case prefix, engine) that an engine runs and dspsim does not reproduce: it refuses them by default, saying so
# (XNNPACK's f32 SQRT, 1-2 ulp off: docs/engines.md; approximate_float=True runs it, tests/tflite/test_float_islands)
NOT_MODELLED = {("b2_sqrt_float32", "litert_default")}
# RSQRT is the nonlinear family's (dspsim/tflite/builtins/nonlinear.py, its own tests); recorded here, not checked
OTHERS = ("b2_rsqrt_",)


def _cases():
    if not os.path.exists(PATH):
        return []
    _, cases = load_packed(PATH)
    return [pytest.param(case, arrays, engine, id=f"{case['name']}-{engine}") for case, arrays in cases
            for engine in ENGINES if not case["name"].startswith(OTHERS)]


CASES = _cases()


def _resolve(case, arrays, key):
    while key not in arrays and key in case["aliases"]:
        key = case["aliases"][key]
    return arrays[key]


def _load(case, engine):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dt.load_model(os.path.join(HERE, "ops", case["model"]), engine=ENGINES[engine])


def test_the_golden_file_is_there():
    assert len(CASES) >= 4 * 135


@pytest.mark.parametrize("case,arrays,engine", CASES)
def test_outputs_are_bit_exact_with_the_engine(case, arrays, engine):
    status = case["engines"][engine]
    inputs = [[arrays[f"in{k}"][r] for k in range(len(case["inputs"]))] for r in range(case["runs"])]
    if status["status"] != "ok" or any(case["name"].startswith(p) and engine == e for p, e in NOT_MODELLED):
        with pytest.raises(ValueError, match="load_model|Model.run"):
            m = _load(case, engine)
            for xs in inputs:
                m.run(xs)
        return
    m = _load(case, engine)
    for r, xs in enumerate(inputs):
        ys = m.run(xs)
        for k, y in enumerate(ys):
            want = _resolve(case, arrays, f"{engine}/out{k}")[r]
            assert y.dtype == want.dtype and y.shape == want.shape, (k, y.dtype, y.shape, want.dtype, want.shape)
            bits = (lambda v: v.view(np.uint32)) if want.dtype == np.float32 else (lambda v: v)  # NaNs, -0: by bits
            bad = np.flatnonzero(bits(y).reshape(-1) != bits(want).reshape(-1))
            assert bad.size == 0, f"run {r} output {k}: {bad.size} of {y.size} differ, first at {bad[0]}: " \
                                  f"{y.reshape(-1)[bad[0]]} vs {want.reshape(-1)[bad[0]]}"


def test_a_model_with_several_missing_operators_names_them_all():
    """load_model names every operator dspsim has no Prepare for (all subgraphs), in one error."""
    import dataclasses

    from dspsim.tflite.flatbuffer import read_model
    from dspsim.tflite.model import Model

    with open(os.path.join(HERE, "ops", "b2_logical_not.tflite"), "rb") as f:
        mdef = read_model(f.read())
    op = mdef.main.operators[0]
    ops = [dataclasses.replace(op, name=n, index=k) for k, n in enumerate(("HASHTABLE", "LOGICAL_NOT", "CUSTOM",
                                                                           "HASHTABLE"))]
    mdef.subgraphs[0] = dataclasses.replace(mdef.main, operators=ops)
    with pytest.raises(ValueError, match=r"3 operators dspsim does not support \(CUSTOM, HASHTABLE\): operator 0 is "
                                         r"HASHTABLE \(version 1\); operator 2 is CUSTOM \(version 1\); operator 3 "
                                         r"is HASHTABLE"):
        Model(mdef, engine="tflm")
    mdef.subgraphs[0] = dataclasses.replace(mdef.main, operators=ops[:2])
    with pytest.raises(ValueError, match=r"operator 0 is HASHTABLE \(version 1\), which dspsim does not support"):
        Model(mdef, engine="tflm")
