"""The ``onnxruntime-vnni`` engine (ONNX Runtime on a host with VNNI: exact uint8 x int8 sums), an engine added as
data only, against ONNX Runtime's own outputs on such a host (tests/golden/make_golden_onnx_vnni.py)."""
import json
import os

import numpy as np
import pytest

from dspsim import onnx as donnx

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "onnx")
GOLDEN = np.load(os.path.join(HERE, "ort_vnni.npz"))
META = json.loads(str(GOLDEN["meta"]))
MODELS = META["models"]


def _inputs(name):
    with np.load(os.path.join(HERE, f"models_{name.split('_')[0]}.npz")) as z:
        return [z[f"{name}/r{r}/in"] for r in range(2)]


def _diff(name, engine):
    """(values compared, mismatches) of every golden tensor of model ``name`` under ``engine``."""
    model = donnx.load_model(os.path.join(HERE, "models", f"{name}.onnx"), engine=engine)
    compared = bad = 0
    for r, x in enumerate(_inputs(name)):
        values = {e.name: np.asarray(e.value) for e in model.trace([x])}
        prefix = f"{name}/r{r}/ort/"
        for key in (k for k in GOLDEN.files if k.startswith(prefix)):
            want = GOLDEN[key]
            got = values[key[len(prefix):]].reshape(want.shape)
            compared += want.size
            bad += int(np.count_nonzero(got != want))
    return compared, bad


def test_the_golden_host_had_vnni_and_every_uint8_model_is_there():
    assert {"avx512_vnni", "avx_vnni"} & set(META["versions"]["cpu"])
    assert len(MODELS) == 12 and all("_u8s8_" in m for m in MODELS)


@pytest.mark.parametrize("name", MODELS)
def test_onnxruntime_vnni_matches_onnxruntime_on_a_vnni_host(name):
    compared, bad = _diff(name, "onnxruntime-vnni")
    assert compared > 100 and bad == 0


def test_the_pair_saturating_engine_differs_from_a_vnni_host_somewhere():
    assert sum(_diff(name, "onnxruntime")[1] for name in MODELS) > 0
