"""The CMSIS-DSP golden files (tests/golden/make_golden_cmsisdsp.py) and the oracle, for tests/dsp."""
from __future__ import annotations

import functools
import pathlib

import numpy as np

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden"
QTYPE = {"q7": np.int8, "q15": np.int16, "q31": np.int32}


@functools.cache
def golden(name: str) -> dict:
    with np.load(GOLDEN / f"cmsisdsp_{name}.npz") as f:
        return {k: f[k] for k in f.files}


def cases(name: str, prefix: str) -> list:
    """The case keys ``<prefix>/<case>`` of a golden file."""
    return sorted({k.rsplit("/", 1)[0] for k in golden(name) if k.startswith(prefix + "/")})


def ints(a) -> list:
    return [int(v) for v in np.ravel(a)]
