"""pytest setup shared by tests/: how many xdist workers ``-n auto`` (pyproject's addopts) starts, and the
OpenBLAS kernel of the float goldens."""
from __future__ import annotations

import os
import sys

GOLDEN_BLAS_CORE = "Haswell"
"""The OpenBLAS kernel that numpy's float32 ``dot`` used where the onnx reference evaluator's goldens were made
(tests/golden/make_golden_onnx_models.py on an AVX2 host). numpy's OpenBLAS picks its kernel by CPU
(DYNAMIC_ARCH); on an AVX-512 host the SkylakeX kernel sums a float32 Conv / Gemm in another order, and the
evaluator's float intermediates (and dspsim's "onnx-reference" engine, which calls the same numpy operations)
differ from those goldens in the last bits (docs/engines.md, "ONNX"). Set before numpy loads, in this process
and in the xdist workers it starts; a run that imported numpy earlier is refused (``test_onnx_models.py``)."""
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_CORETYPE", GOLDEN_BLAS_CORE)

MAX_WORKERS = 4
"""Each worker compiles its own numba kernels (about 1.5 GB resident at the end of a run): more than a few
workers on a big host cost memory and repeated compilation for little time."""


def pytest_xdist_auto_num_workers(config):
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))


STARTS_FIRST = ("test_no_jit.py",)
"""Modules that run for minutes (a pytest of its own under NUMBA_DISABLE_JIT): scheduled first, so that the
other worker does the rest meanwhile instead of waiting for it at the end."""


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name not in STARTS_FIRST)  # stable: the rest keep their order


SUPPORT = ("support", "fuzz")
"""The folders of helper modules the tests of every folder import (``from oracle_views import oracle_requant``,
``import fuzz_args``): on ``sys.path`` before any test module is collected."""
sys.path[:0] = [os.path.join(os.path.dirname(__file__), d) for d in SUPPORT]
