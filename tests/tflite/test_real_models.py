"""Real int8/int16 models against the real engines, every layer of every frame.

The goldens (tests/golden/real_models/, made by make_golden_real_models.py) hold, per model and
engine, the inputs of every frame, the outputs, and a sha256 of every intermediate tensor. The models
themselves are read where they live: ../shared/models/tflite-micro (the development set beside the
repository), ../shared/models/fresh (the deployed models: MLPerf Tiny, Coral, microWakeWord, OpenMV, MCUNet) and
the installed pymicro_wakeword package. A model that is absent is skipped; a model
dspsim refuses (an operator it does not have yet) is skipped with the operator named; every other
(model, engine) pair must be bit-exact on every tensor of every frame.
"""
from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest

from dspsim.tflite import load_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "golden")
sys.path.insert(0, GOLDEN)
from golden_io import load_real_model  # noqa: E402
from shared_models import fresh_model, pymicro_wakeword_model, tflite_micro_model  # noqa: E402

#: golden engine record -> dspsim engine (litert_default keeps no intermediates: outputs only)
ENGINES = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack", "litert_optimized": "litert-optimized"}
FILES = sorted(glob.glob(os.path.join(GOLDEN, "real_models", "*.npz")))


def _model_path(source):
    """The .tflite named by a golden's ``meta.source``, or None when it is not on this machine."""
    if source.startswith("pymicro_wakeword/"):
        return pymicro_wakeword_model(source.split("/", 1)[1])
    if source.startswith("shared/models/fresh/"):
        return fresh_model(source)
    return tflite_micro_model(source)


def _cases():
    for f in FILES:
        name = os.path.basename(f)[:-4]
        for golden_engine in ENGINES:
            yield pytest.param(f, golden_engine, id=f"{name}-{ENGINES[golden_engine]}")


@pytest.mark.parametrize("path,golden_engine", list(_cases()))
def test_every_tensor_of_every_frame_matches_the_engine(path, golden_engine):
    g = load_real_model(path)
    run = g.engines[golden_engine]
    model_path = _model_path(g.meta["source"])
    if model_path is None:
        pytest.skip(f"{g.meta['source']} is not on this machine")
    if run.status == "refused":  # the engine's refusals are part of its behaviour
        with pytest.raises(ValueError, match="load_model"):
            load_model(model_path, engine=ENGINES[golden_engine])
        return
    if run.status != "ok":
        pytest.skip(f"the real engine {run.status} on this model: {run.error}")
    try:
        model = load_model(model_path, engine=ENGINES[golden_engine])
    except ValueError as exc:
        if "does not support" in str(exc) or "supported:" in str(exc):
            pytest.skip(str(exc).split(" (dspsim.tflite")[0])
        raise
    bad = []
    for frame in range(g.meta["frames"]):
        inputs = [x[frame] for x in g.inputs]
        if not g.meta["stateful"]:
            model.reset()
        trace = model.trace(inputs)
        produced = {e.tensor: e.value for e in trace if e.op_index >= 0 and "(state write)" not in e.name}
        for k, out in enumerate(run.outputs):
            got = produced[model.outputs[k].index]
            if got.dtype != out[frame].dtype or not np.array_equal(got, out[frame]):
                bad.append(f"frame {frame} output {k}: {np.count_nonzero(got != out[frame])} of {got.size} differ")
        if run.sha256 is None:
            continue
        for index in g.tensors:
            if index in produced and not g.tensor_matches(golden_engine, index, frame, produced[index]):
                op = next(e.op for e in trace if e.tensor == index)
                bad.append(f"frame {frame} tensor {index} ({op})")
    assert not bad, f"{len(bad)} mismatching tensors; first: {bad[:5]}"


def test_the_golden_set_covers_the_development_models():
    assert len(FILES) >= 140
