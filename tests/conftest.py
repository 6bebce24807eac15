"""pytest setup shared by tests/: how many xdist workers ``-n auto`` (pyproject's addopts) starts."""
from __future__ import annotations

import os

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
