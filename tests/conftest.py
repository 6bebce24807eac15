"""pytest setup shared by tests/: how many xdist workers ``-n auto`` (pyproject's addopts) starts."""
from __future__ import annotations

import os

MAX_WORKERS = 4
"""Each worker compiles its own numba kernels (about 1.5 GB resident at the end of a run): more than a few
workers on a big host cost memory and repeated compilation for little time."""


def pytest_xdist_auto_num_workers(config):
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))
