"""Where the real models live on a development machine: ../shared beside the checkout (the tflite-micro set, the
deployed models of ``fresh``, the goldens of builds that cannot be pip-installed) and the installed pymicro_wakeword package. Every lookup gives
None where the file is absent, so that the tests that read them skip on a clean clone."""
from __future__ import annotations

import importlib.util
import os

SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "..", "shared")


def existing(path):
    """``path`` where it is a file, else None."""
    return path if os.path.isfile(path) else None


def tflite_micro_model(name):
    """``../shared/models/tflite-micro/<basename of name>``, or None."""
    return existing(os.path.join(SHARED, "models", "tflite-micro", os.path.basename(name)))


def fresh_model(name):
    """``../shared/models/fresh/<basename of name>`` (the deployed models), or None."""
    return existing(os.path.join(SHARED, "models", "fresh", os.path.basename(name)))


def pymicro_wakeword_model(relative):
    """``relative`` (e.g. ``models/okay_nabu.tflite``) inside the installed pymicro_wakeword package, or None."""
    spec = importlib.util.find_spec("pymicro_wakeword")
    if spec is None or not spec.submodule_search_locations:
        return None
    return existing(os.path.join(list(spec.submodule_search_locations)[0], relative))


def cmsis_nn_conformance_cases():
    """The CMSIS-NN unit-test vectors of ``../shared/conformance/cmsis-nn/<family>__<case>.npz``, sorted ([] where
    the folder is absent)."""
    folder = os.path.join(SHARED, "conformance", "cmsis-nn")
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".npz"))


def peer_test_vectors(peer):
    """(cases, arrays) of the peers' own kernel unit tests as vectors (``../shared/conformance/peer-tests/vectors/
    <peer>_cases.json`` and ``<peer>.npz``; peer ``"tflm"`` or ``"ort"``), or ([], None) where they are absent."""
    import json

    import numpy as np

    folder = os.path.join(SHARED, "conformance", "peer-tests", "vectors")
    meta, data = (os.path.join(folder, f"{peer}{suffix}") for suffix in ("_cases.json", ".npz"))
    if not (os.path.isfile(meta) and os.path.isfile(data)):
        return [], None
    with open(meta, encoding="utf-8") as f:
        return json.load(f)["cases"], np.load(data)
