"""One-operator golden families (tests/golden/ops/<family>.npz, the packed format of make_golden_ops.py) checked the
one way: every output of every run bit-exact with the engine that ran it (floats by their bits, NaNs and -0
included), and a refusal from dspsim wherever the engine refused the model, its result is undefined, or the test
names the case as one dspsim does not reproduce."""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import dspsim.tflite as dt

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
sys.path.insert(0, GOLDEN)
from golden_io import load_packed  # noqa: E402

#: golden engine record -> dspsim engine
ENGINES = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack", "litert_optimized": "litert-optimized"}


def family_params(name, skip_prefixes=()):
    """pytest params ``(case, arrays, engine)`` of family ``name`` (none where its file is absent), one per case and
    golden engine, but cases whose name starts with one of ``skip_prefixes``."""
    path = os.path.join(GOLDEN, "ops", f"{name}.npz")
    if not os.path.exists(path):
        return []
    _, cases = load_packed(path)
    return [pytest.param(case, arrays, engine, id=f"{case['name']}-{engine}") for case, arrays in cases
            for engine in ENGINES if not case["name"].startswith(tuple(skip_prefixes))]


def resolve(case, arrays, key):
    """The array stored under ``key``, following the family's aliases (a value equal to another engine's)."""
    while key not in arrays and key in case["aliases"]:
        key = case["aliases"][key]
    return arrays[key]


def load(case, engine, quiet=True, **kw):
    """dspsim's model of ``case`` under golden ``engine``'s dspsim engine (``kw``: load_model's options), its load
    warnings silenced unless ``quiet`` is False."""
    path = os.path.join(GOLDEN, "ops", case["model"])
    if not quiet:
        return dt.load_model(path, engine=ENGINES[engine], **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dt.load_model(path, engine=ENGINES[engine], **kw)


def check_case(case, arrays, engine, not_modelled=()):
    """The check of one (case, engine): exact on every output of every run, or refused by dspsim where the engine
    refused, its result is undefined, or (case prefix, engine) is in ``not_modelled``."""
    status = case["engines"][engine]
    inputs = [[arrays[f"in{k}"][r] for k in range(len(case["inputs"]))] for r in range(case["runs"])]
    if status["status"] != "ok" or any(case["name"].startswith(p) and engine == e for p, e in not_modelled):
        with pytest.raises(ValueError, match="load_model|Model.run"):
            m = load(case, engine)
            for xs in inputs:
                m.run(xs)
        return
    m = load(case, engine)
    for r, xs in enumerate(inputs):
        for k, y in enumerate(m.run(xs)):
            want = resolve(case, arrays, f"{engine}/out{k}")[r]
            assert y.dtype == want.dtype and y.shape == want.shape, (k, y.dtype, y.shape, want.dtype, want.shape)
            bits = np.dtype(f"u{want.itemsize}") if want.dtype.kind == "f" else want.dtype
            bad = np.flatnonzero(y.reshape(-1).view(bits) != want.reshape(-1).view(bits))
            assert bad.size == 0, f"run {r} output {k}: {bad.size} of {y.size} differ, first at {bad[0]}: " \
                                  f"{y.reshape(-1)[bad[0]]} vs {want.reshape(-1)[bad[0]]}"
