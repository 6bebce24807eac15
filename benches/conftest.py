"""pytest-benchmark setup for benches/: collection of bench_*.py, sizes, threads, one shared runner.

The cases, their integers, dspsim's call, the peers and the timing rule are those of ``dspsim bench``
(:mod:`dspsim.bench`): :func:`dspsim.bench.run_engine` runs here with pytest-benchmark's fixture as
the timer, so both report the same operation timed the same way.

By default (pyproject's ``--benchmark-disable``) every bench runs once, at the ``quick`` size, as an
ordinary test, so CI keeps the benches from rotting; nothing asserts on time. Real measurements::

    DSPSIM_BENCH_SIZE=medium pytest benches -n 0 --benchmark-enable [--benchmark-json out.json]

(``-n 0``: pyproject's addopts start xdist workers, under which pytest-benchmark does not time.)

Environment: ``DSPSIM_BENCH_SIZE`` = comma-separated sizes among quick, small, medium, large
(default quick); ``DSPSIM_BENCH_THREADS`` = threads for numba, torch and ONNX Runtime (default 2).
Each benchmark's ``extra_info`` holds the row ``dspsim bench`` writes for that engine and case (case,
engine, work, throughput from the minimum time when timing is enabled, mismatches against dspsim).
"""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import pytest

from dspsim import bench

BENCH_DIR = Path(__file__).resolve().parent
SETTLE_SECONDS = 0.3  # when timing: let another engine's spinning thread pool go to sleep first


def bench_threads() -> int:
    return int(os.environ.get("DSPSIM_BENCH_THREADS", "2"))


def pytest_configure(config):
    config.addinivalue_line("markers", "bench_ops(*ops, live_peers=True): parametrize a bench's (case, engine) "
                                       "over the cases of these dspsim.bench ops and their peers")


def pytest_generate_tests(metafunc):
    """``@pytest.mark.bench_ops(*ops)``: one param per (case, engine) of ``ops`` at the sizes of
    ``DSPSIM_BENCH_SIZE``; the peers' are marked ``live`` (they run a real engine when it is installed)
    unless ``live_peers=False``."""
    marker = metafunc.definition.get_closest_marker("bench_ops")
    if marker is None:
        return
    ops, live = marker.args, marker.kwargs.get("live_peers", True)
    out = []
    for case in bench.cases(bench.env_sizes(), ops):
        out.append(pytest.param(case, "dspsim", id=f"{case.name}-dspsim"))
        marks = [pytest.mark.live] if live else []
        out += [pytest.param(case, engine, id=f"{case.name}-{engine}", marks=marks)
                for engine in bench.peers.engines(case)]
    metafunc.parametrize("case,engine", out)


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


@pytest.fixture
def run_bench(benchmark, threads):
    """``run_bench(case, engine)``: :func:`dspsim.bench.run_engine` timed by pytest-benchmark; returns
    ``(output, mismatches)`` (mismatches against dspsim's output; None for dspsim itself and for a
    peer timed for speed only)."""

    def run(case: bench.Case, engine: str = "dspsim"):
        p = bench.problem(case)
        mine = bench.dspsim_runner(case, p)
        reference = None
        if engine == "dspsim":
            runner = mine
        else:
            runner = next(r for r in bench.peers.runners(case, p, threads) if r.engine == engine)
            if runner.skip:
                pytest.skip(runner.skip)
            if runner.measure is not None:
                pytest.skip(f"{engine} is timed in a worker process: see `dspsim bench`")
            if runner.compared_with and runner.reference is None:
                reference = mine.to_numpy(mine.fn())
        row, out = bench.run_engine(case, runner, reference, benchmark=benchmark,
                                    settle=0.0 if benchmark.disabled else SETTLE_SECONDS)
        benchmark.extra_info.update({k: v for k, v in asdict(row).items() if v is not None}, threads=threads)
        assert row.status == "ok", row.status
        return out, row.mismatches

    return run
