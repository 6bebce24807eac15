"""The float islands dspsim models (issue 27 part 2: float32 LOG_SOFTMAX, TFLite's reference kernel with glibc's expf
and logf) against the real engines' golden vectors (tests/golden/ops/float_islands.npz, written by make_golden_float_islands.py): every
output of every run, 0 mismatches, under engine "tflm" (the tflite-micro interpreter), "litert" (LiteRT BUILTIN_REF),
"xnnpack" (LiteRT's default interpreter) and "litert-optimized"; where an engine refused the model, or its result
is undefined, dspsim refuses it too."""
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
PATH = os.path.join(HERE, "ops", "float_islands.npz")
# (case prefix, engine) that the engine runs and dspsim refuses, saying why (docs/engines.md, "int16 variants")
REFUSED_BY_DSPSIM = {  # LiteRT's optimized float LogSoftmax (Eigen's exp and sum), which the default resolver runs too
    ("fi_log_softmax_", "litert_default"), ("fi_log_softmax_", "litert_optimized"),
}


def _cases():
    if not os.path.exists(PATH):
        return []
    _, cases = load_packed(PATH)
    return [pytest.param(case, arrays, engine, id=f"{case['name']}-{engine}") for case, arrays in cases
            for engine in ENGINES]


CASES = _cases()


def _resolve(case, arrays, key):
    while key not in arrays and key in case["aliases"]:
        key = case["aliases"][key]
    return arrays[key]


def _load(case, engine):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dt.load_model(os.path.join(HERE, "ops", case["model"]), engine=ENGINES[engine])


def test_the_golden_file_holds_the_float_heads():
    assert sum(p.values[0]["name"].startswith("fi_log_softmax_") for p in CASES) == 4 * 3


@pytest.mark.parametrize("case,arrays,engine", CASES)
def test_outputs_are_bit_exact_with_the_engine(case, arrays, engine):
    status = case["engines"][engine]
    inputs = [[arrays[f"in{k}"][r] for k in range(len(case["inputs"]))] for r in range(case["runs"])]
    if status["status"] != "ok" or any(case["name"].startswith(p) and engine == e for p, e in REFUSED_BY_DSPSIM):
        with pytest.raises(ValueError, match="load_model|Model.run"):
            m = _load(case, engine)
            for xs in inputs:
                m.run(xs)
        return
    m = _load(case, engine)
    for r, xs in enumerate(inputs):
        for k, y in enumerate(m.run(xs)):
            want = _resolve(case, arrays, f"{engine}/out{k}")[r]
            assert y.dtype == want.dtype and y.shape == want.shape, (k, y.dtype, y.shape, want.dtype, want.shape)
            bad = np.flatnonzero(y.reshape(-1).view(np.uint32) != want.reshape(-1).view(np.uint32))  # by the bits
            assert bad.size == 0, f"run {r} output {k}: {bad.size} of {y.size} differ, first at {bad[0]}: " \
                                  f"{y.reshape(-1)[bad[0]]} vs {want.reshape(-1)[bad[0]]}"
