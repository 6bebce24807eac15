"""The data movement, resize, selection and cast operators against the real engines' golden vectors
(tests/golden/ops/movement.npz and reductions.npz, written by make_golden_ops.py; and
tests/golden/ops/shape_ops.npz, written by make_golden_shape_ops.py): every output of every run, 0
mismatches, under engine "tflm" (the tflite-micro interpreter), "litert" (LiteRT BUILTIN_REF) and
"xnnpack" (LiteRT's default interpreter); where an engine refused the model, dspsim refuses it too."""
import os
import sys

import numpy as np
import pytest

import dspsim.tflite as dt

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden")
sys.path.insert(0, HERE)
from golden_io import load_packed  # noqa: E402

ENGINES = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack"}
# the operators of this family (other operators of those files are other helpers' tests)
OWN = {"STRIDED_SLICE", "SLICE", "SPLIT", "SPLIT_V", "TRANSPOSE", "GATHER", "PACK", "UNPACK", "MIRROR_PAD",
       "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR", "REDUCE_MAX", "ARG_MAX",
       "CAST", "RESHAPE"}


def _cases():
    out = []
    for fam in ("movement", "reductions", "shape_ops"):
        path = os.path.join(HERE, "ops", f"{fam}.npz")
        if not os.path.exists(path):
            continue
        _, cases = load_packed(path)
        for case, arrays in cases:
            if set(case["ops"]) <= OWN:
                for engine in ENGINES:
                    out.append(pytest.param(fam, case, arrays, engine, id=f"{case['name']}-{engine}"))
    return out


CASES = _cases()


def _resolve(case, arrays, key):
    while key not in arrays and key in case["aliases"]:
        key = case["aliases"][key]
    return arrays[key]


def test_the_golden_files_are_there():
    assert len(CASES) >= 3 * 60


@pytest.mark.parametrize("fam,case,arrays,engine", CASES)
def test_outputs_are_bit_exact_with_the_engine(fam, case, arrays, engine):
    path = os.path.join(HERE, "ops", case["model"])
    status = case["engines"][engine]
    if status["status"] != "ok":
        with pytest.raises(ValueError, match="load_model|Model.run"):
            m = dt.load_model(path, engine=ENGINES[engine])
            m.run([arrays[f"in{k}"][0] for k in range(len(case["inputs"]))])
        return
    m = dt.load_model(path, engine=ENGINES[engine])
    for r in range(case["runs"]):
        ys = m.run([arrays[f"in{k}"][r] for k in range(len(case["inputs"]))])
        for k, y in enumerate(ys):
            want = _resolve(case, arrays, f"{engine}/out{k}")[r]
            assert y.dtype == want.dtype and y.shape == want.shape, (k, y.dtype, y.shape, want.dtype, want.shape)
            bad = np.flatnonzero(y.reshape(-1) != want.reshape(-1))
            assert bad.size == 0, f"run {r} output {k}: {bad.size} of {y.size} differ, first at {bad[0]}: " \
                                  f"{y.reshape(-1)[bad[0]]} vs {want.reshape(-1)[bad[0]]}"
