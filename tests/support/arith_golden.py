"""Shared by the arithmetic-operator tests: the per-operator golden models of tests/golden/ops/ run
through dspsim.tflite.load_model per engine and compared with the real engine's outputs."""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
sys.path.insert(0, HERE)
from golden_io import load_packed  # noqa: E402

# golden engine name -> dspsim engine
ENGINES = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack"}


def golden_cases(family, prefixes):
    """(case, arrays) of ``ops/<family>.npz`` whose name starts with one of ``prefixes`` ([] if absent)."""
    path = os.path.join(HERE, "ops", f"{family}.npz")
    if not os.path.exists(path):
        return []
    return [(c, a) for c, a in load_packed(path)[1] if c["name"].startswith(tuple(prefixes))]


def _stored(case, arrays, key):
    while key not in arrays and key in case["aliases"]:
        key = case["aliases"][key]
    return arrays[key]


def mismatches(case, arrays, golden_engine):
    """(mismatching values, values compared) of dspsim against ``golden_engine`` on every run."""
    import dspsim.tflite as T

    with open(os.path.join(HERE, "ops", case["model"]), "rb") as f:
        model_bytes = f.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = T.load_model(model_bytes, engine=ENGINES[golden_engine])
    bad = total = 0
    for r in range(case["runs"]):
        outs = model.run([arrays[f"in{k}"][r] for k in range(len(case["inputs"]))])
        for k, o in enumerate(outs if isinstance(outs, list) else [outs]):
            ref = _stored(case, arrays, f"{golden_engine}/out{k}")[r]
            assert o.dtype == ref.dtype and o.shape == ref.shape
            bad += int(np.count_nonzero(o != ref))
            total += ref.size
    return bad, total


def params(family, prefixes):
    """pytest parameters (case, arrays, engine) for every engine that ran the case."""
    import pytest

    return [pytest.param(c, a, e, id=f"{c['name']}-{ENGINES[e]}") for c, a in golden_cases(family, prefixes)
            for e in ENGINES if c["engines"][e]["status"] == "ok"]


def refused(family, prefixes):
    """pytest parameters (case, engine) for every engine that refused or crashed on the case."""
    import pytest

    return [pytest.param(c, e, id=f"{c['name']}-{ENGINES[e]}") for c, _ in golden_cases(family, prefixes)
            for e in ENGINES if c["engines"][e]["status"] != "ok"]


def load_refused(case, golden_engine):
    """dspsim's load of a model that ``golden_engine`` refused: must raise ValueError."""
    import dspsim.tflite as T

    with open(os.path.join(HERE, "ops", case["model"]), "rb") as f:
        model_bytes = f.read()
    T.load_model(model_bytes, engine=ENGINES[golden_engine])
