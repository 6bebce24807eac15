"""Engine "litert-optimized" against LiteRT's optimized builtin kernels (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``).

The vectors (tests/golden/litert_optimized.npz, made by make_golden_litert_optimized.py with ai-edge-litert 2.3.0)
are every per-operator golden model of tests/golden/ops on its family's inputs (every run, state kept) and every
model of tests/golden/models on its inputs (every tensor the reference-kernel goldens record). What the real
interpreter refused or crashed on, dspsim must refuse; a model dspsim cannot load yet is skipped with the reason.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from dspsim.tflite import load_model

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
Z = np.load(os.path.join(GOLDEN, "litert_optimized.npz"))
META = json.loads(str(Z["meta"]))
ENGINE = "litert-optimized"



def _same_bits(got, want):
    """Equal dtype, shape and bits (a float NaN equals the same NaN)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.kind == "f":
        return np.array_equal(got.view(f"u{want.dtype.itemsize}"), want.view(f"u{want.dtype.itemsize}"))
    return np.array_equal(got, want)


def _inputs(case):
    import sys
    sys.path.insert(0, GOLDEN)
    from golden_io import load_packed
    for c, arrays in load_packed(os.path.join(GOLDEN, "ops", f"{case['family']}.npz"))[1]:
        if c["model"] == case["model"]:
            return [arrays[f"in{j}"] for j in range(len(c["inputs"]))]
    raise KeyError(case["model"])


def _load_or_skip(path):
    try:
        return load_model(path, engine=ENGINE)
    except ValueError as exc:
        text = str(exc)
        if "does not support" in text or "supported:" in text or "not supported" in text:
            pytest.skip(text.split(" (dspsim.tflite")[0])
        raise


@pytest.mark.parametrize("name", sorted(META["ops"]))
def test_operator_model_matches_litert_optimized(name):
    case = META["ops"][name]
    path = os.path.join(GOLDEN, "ops", case["model"])
    inputs = _inputs(case)
    runs = inputs[0].shape[0] if inputs else 1
    if case["status"] != "ok":  # refused at prepare or invoke, or crashed: dspsim refuses the model or the run
        with pytest.raises(ValueError, match="load_model|Model.run"):
            model = load_model(path, engine=ENGINE)
            for r in range(runs):
                model.run([x[r] for x in inputs])
        return
    model = _load_or_skip(path)
    bad = []
    for r in range(runs):
        y = model.run([x[r] for x in inputs])
        for j, got in enumerate(y if isinstance(y, list) else [y]):
            want = Z[f"ops/{name}/out{j}"][r]
            if not _same_bits(got, want):
                bad.append(f"run {r} output {j}: {np.count_nonzero(got != want)} of {want.size} differ")
    assert not bad, bad[:4]


@pytest.mark.parametrize("name", sorted(META["models"]))
def test_model_matches_litert_optimized_on_every_tensor(name):
    entry = META["models"][name]
    assert entry["status"] == "ok", entry
    z = np.load(os.path.join(GOLDEN, "models", f"{name}.npz"))
    model = _load_or_skip(os.path.join(GOLDEN, "models", f"{name}.tflite"))
    bad = []
    for r in entry["runs"]:
        n_in = len([k for k in z.files if k.startswith(f"{r}/in")])
        trace = model.trace([z[f"{r}/in{j}"] for j in range(n_in)])
        got = {e.tensor: e.value for e in trace}
        prefix = f"models/{name}/{r}/t"
        for key in (k for k in Z.files if k.startswith(prefix)):
            i = int(key[len(prefix):])
            if not _same_bits(np.asarray(got[i]), Z[key]):
                bad.append(f"{r} tensor {i}: {np.count_nonzero(got[i] != Z[key])} of {Z[key].size} differ")
    assert not bad, bad[:4]


def test_diagnose_names_litert_optimized_from_the_optimized_interpreters_dumps(tmp_path):
    """Every tensor LiteRT's optimized kernels computed on the committed model ``branches``, dumped as a
    device would, diagnosed against the reference kernels: the engine search names litert-optimized."""
    from dspsim.harness.diagnose import diagnose

    name, run = "branches", "r0"
    z = np.load(os.path.join(GOLDEN, "models", f"{name}.npz"))
    prefix = f"models/{name}/{run}/t"
    for key in (k for k in Z.files if k.startswith(prefix)):
        np.save(tmp_path / f"t{key[len(prefix):]}.npy", Z[key])
    inputs = [z[f"{run}/in{j}"] for j in range(len([k for k in z.files if k.startswith(f"{run}/in")]))]
    result = diagnose(os.path.join(GOLDEN, "models", f"{name}.tflite"), inputs, tmp_path, "litert")
    assert not result["passed"]
    assert "engine=litert-optimized" in result["reproduced_by"]
