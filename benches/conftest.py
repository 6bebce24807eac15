"""pytest-benchmark setup for benches/: collection of bench_*.py, sizes, threads, one shared runner.

By default (pyproject's ``--benchmark-disable``) every bench runs once, at the ``quick`` size, as an
ordinary test, so CI keeps the benches from rotting; nothing asserts on time. Real measurements::

    DSPSIM_BENCH_SIZE=medium pytest benches --benchmark-enable [--benchmark-json out.json]

Environment: ``DSPSIM_BENCH_SIZE`` = comma-separated sizes among quick, small, medium, large
(default quick); ``DSPSIM_BENCH_THREADS`` = threads for numba, torch and ONNX Runtime (default 2).
Each benchmark's ``extra_info`` holds the case, engine, threads, work and, when timing is enabled,
``GMAC/s`` or ``Gelem/s`` (from the minimum time); peers also record ``mismatches`` against dspsim.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from dspsim import bench

BENCH_DIR = Path(__file__).resolve().parent


def bench_threads() -> int:
    return int(os.environ.get("DSPSIM_BENCH_THREADS", "2"))


def pytest_collect_file(file_path, parent):
    """Collect benches/bench_*.py (pytest's default python_files only matches test_*.py)."""
    if (file_path.suffix == ".py" and file_path.name.startswith("bench_") and file_path.parent == BENCH_DIR
            and not parent.session.isinitpath(file_path)):  # a file named on the command line is collected anyway
        return pytest.Module.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def threads():
    """The thread count, applied to numba once per session (peers apply it when they are built)."""
    return bench.set_threads(bench_threads())["numba"]


@pytest.fixture(scope="session")
def peers():
    mod = bench.load_peers()
    if mod is None:
        pytest.skip("benches/peers.py not found")
    return mod


@pytest.fixture
def run_bench(benchmark, threads, request):
    """``run_bench(case, engine)``: warm up, time with pytest-benchmark, record throughput; returns
    ``(output, mismatches)`` (mismatches against dspsim's output; None for dspsim itself)."""

    def run(case: bench.Case, engine: str = "dspsim"):
        p = bench.problem(case)
        mine = bench.dspsim_runner(case, p)
        if engine == "dspsim":
            runner = mine
        else:
            runner = next(r for r in request.getfixturevalue("peers").runners(case, p, threads) if r.engine == engine)
            if runner.skip:
                pytest.skip(runner.skip)
            if runner.fn is None:
                pytest.skip(f"{engine} is timed in a worker process: see `dspsim bench`")
        out = runner.to_numpy(runner.fn())  # warm-up: compilation and prepacking stay out of the timing
        info = benchmark.extra_info
        info.update(case=case.name, engine=engine, threads=threads, unit=case.unit, work=case.work)
        benchmark(runner.fn)
        stats = getattr(benchmark, "stats", None)
        if stats is not None:
            info[f"G{case.unit}/s"] = case.work / stats.stats.min / 1e9
        mismatches = None
        if engine != "dspsim":
            ref = mine.to_numpy(mine.fn()) if runner.reference is None else runner.reference()
            assert np.shape(out) == np.shape(ref), f"{engine} output shape {np.shape(out)} != dspsim's {np.shape(ref)}"
            mismatches = int(np.count_nonzero(np.asarray(out, np.int64) != np.asarray(ref, np.int64)))
            info.update(compared_with=runner.compared_with, mismatches=mismatches)
        return out, mismatches

    return run
