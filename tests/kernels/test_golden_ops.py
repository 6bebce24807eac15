"""Every per-operator golden model (tests/golden/ops/, make_golden_ops.py) through dspsim under each
engine, every run, every output and intermediate tensor, against what the real engine computed:
TFLM (engine "tflm"), LiteRT BUILTIN_REF ("litert"), LiteRT's default interpreter ("xnnpack",
outputs only). A refusal by the real engine must be a refusal by dspsim too; a model dspsim cannot
load yet (an operator or type it lacks) is skipped with the reason, so the skips list what is left.
"""
from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest

from dspsim.tflite import load_model

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
sys.path.insert(0, GOLDEN)
from golden_io import load_packed  # noqa: E402

ENGINES = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack"}
FAMILIES = sorted(glob.glob(os.path.join(GOLDEN, "ops", "*.npz")))
_CACHE = {}


def _family(path):
    if path not in _CACHE:
        _CACHE[path] = load_packed(path)
    return _CACHE[path]


def _params():
    for path in FAMILIES:
        _, cases = _family(path)
        for k, (case, _) in enumerate(cases):
            for golden_engine in ENGINES:
                yield pytest.param(path, k, golden_engine, id=f"{case['name']}-{ENGINES[golden_engine]}")


def _unsupported(exc):
    text = str(exc)
    return "does not support" in text or "supported:" in text or "not supported" in text or "undefined" in text


@pytest.mark.parametrize("path,k,golden_engine", list(_params()))
def test_operator_model_matches_the_engine(path, k, golden_engine):
    _, cases = _family(path)
    case, arrays = cases[k]
    status = case["engines"][golden_engine]["status"]
    model_path = os.path.join(GOLDEN, "ops", case["model"])
    engine = ENGINES[golden_engine]
    if status == "refused":  # at load, or on the data (RSQRT of a negative code): dspsim must refuse too
        try:
            model = load_model(model_path, engine=engine)
        except ValueError as exc:
            assert str(exc).startswith("load_model")
            return
        inputs = [arrays[f"in{j}"] for j in range(len(case["inputs"]))] if "in0" in arrays else []
        assert inputs, "dspsim loads a model the engine refused at load"
        with pytest.raises(ValueError, match="Model.run"):
            for run in range(case["runs"]):
                model.run([x[run] for x in inputs])
        return
    if status != "ok":
        pytest.skip(f"the real engine: {status} ({case['engines'][golden_engine].get('reason') or ''})")
    try:
        model = load_model(model_path, engine=engine)
    except ValueError as exc:
        if _unsupported(exc):
            pytest.skip(str(exc).split(" (dspsim.tflite")[0])
        raise
    inputs = [arrays[f"in{j}"] for j in range(len(case["inputs"]))]
    bad = []
    for run in range(case["runs"]):
        trace = model.trace([x[run] for x in inputs])
        got = {e.tensor: e.value for e in trace if e.op_index >= 0 and "(state write)" not in e.name}
        expected = [(o["index"], f"{golden_engine}/out{j}") for j, o in enumerate(case["outputs"])]
        expected += [(t["index"], f"{golden_engine}/t{t['index']}") for t in case["tensors"]]
        for index, key in expected:
            if key not in arrays:
                continue
            want = arrays[key][run]
            g = got[index]
            if g.dtype != want.dtype or g.shape != want.shape or not np.array_equal(
                    g.view(np.uint8) if g.dtype.kind == "f" else g, want.view(np.uint8) if want.dtype.kind == "f" else want):
                n = np.count_nonzero(g != want) if g.shape == want.shape else g.size
                bad.append(f"run {run} tensor {index}: {n} of {want.size} differ")
    assert not bad, f"{len(bad)} mismatching tensors: {bad[:4]}"


def test_every_operator_dspsim_supports_has_golden_models():
    """The goldens (tests/golden/models, ops/, real_models/) cover every builtin dspsim registers."""
    import json

    from dspsim.tflite import supported_ops

    covered = set()
    for path in FAMILIES:
        for case, _ in _family(path)[1]:
            covered.update(case["ops"])
    for path in glob.glob(os.path.join(GOLDEN, "real_models", "*.npz")):
        meta = json.loads(str(np.load(path)["meta"]))
        covered.update(meta["ops"])
        for ops in meta.get("subgraph_ops", {}).values() if isinstance(meta.get("subgraph_ops"), dict) else \
                meta.get("subgraph_ops", []):
            covered.update(ops)
    for path in glob.glob(os.path.join(GOLDEN, "models", "*.npz")):
        covered.update(str(o) for o in np.load(path)["ops"])
    from dspsim.tflite.flatbuffer import read_model

    for path in glob.glob(os.path.join(GOLDEN, "signal_ops", "*.tflite")):  # make_golden_signal.py's one-op models
        with open(path, "rb") as f:
            covered.update(op.name for op in read_model(f.read()).main.operators)
    for path in glob.glob(os.path.join(GOLDEN, "signal_*.npz")):  # and its whole front-end models, op by op
        z = np.load(path)
        if "meta" in z.files:
            covered.update(f"CUSTOM({op['name']})" for op in json.loads(str(z["meta"])).get("ops", []))
    assert set(supported_ops()) <= covered, sorted(set(supported_ops()) - covered)
