"""pymicro-wakeword's own TFLite C library is LiteRT's optimized kernels: engine "litert-optimized" gives its
integers on every frame of real speech, where the reference kernels and XNNPACK do not.

The vectors (tests/golden/pymicro_wakeword.npz, make_golden_pymicro_wakeword.py): espeak-ng phrases through the
package's own feature front end and input quantization, each of its four streaming models run frame after frame
through the package's ``libtensorflowlite_c.so``. The models are read from the installed package (a test extra).
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

from dspsim.tflite import load_model
from shared_models import pymicro_wakeword_model

Z = np.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden",
                         "pymicro_wakeword.npz"))
META = json.loads(str(Z["meta"]))


def _stream(name, engine):
    """Every output of one stream of model ``name`` under ``engine`` on the golden frames, and the golden's."""
    path = pymicro_wakeword_model(f"models/{name}.tflite")
    if path is None:
        pytest.skip("pymicro-wakeword is not installed")
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == META["models"][name], "another pymicro-wakeword model"
    model = load_model(path, engine=engine)
    got = np.stack([np.asarray(model.run(x)).view(np.uint8).reshape(-1) for x in Z[f"{name}/in"]])
    return got, Z[f"{name}/out"].reshape(got.shape)


@pytest.mark.parametrize("name", sorted(META["models"]))
def test_every_frame_of_real_speech_matches_the_c_library_under_litert_optimized(name):
    got, want = _stream(name, "litert-optimized")
    bad = np.flatnonzero(np.any(got != want, axis=1))
    assert bad.size == 0, f"{bad.size} of {len(want)} frames differ, first {bad[:5].tolist()}"


def test_the_reference_kernels_do_not_explain_the_c_library():
    """Why the engine exists: on okay_nabu's speech the reference kernels' integers differ on some frames."""
    got, want = _stream("okay_nabu", "litert")
    assert np.any(got != want)
