"""The one timing path of dspsim's benchmarks (``dspsim bench`` and ``benches/``, pytest-benchmark).

Rule: one untimed warm-up call (numba compilation, weight prepacking, session and thread-pool
start-up), optionally a pause so that another engine's spinning thread pool goes to sleep, then the
timed calls; the *minimum* wall time is the figure (the least disturbed run on a shared machine),
the median is reported beside it.

Who repeats the calls: :func:`measure` itself (at least ``repeats`` runs, more while ``budget``
seconds last, at most :data:`MAX_RUNS`), or, when a pytest-benchmark fixture is passed, that
fixture under its own options (``--benchmark-min-rounds``, ``--benchmark-max-time``; with
``--benchmark-disable`` it calls once and nothing is timed).

Standard library only at import, so that the LiteRT worker (:mod:`dspsim.bench.litert`, run by
an interpreter that may lack numba and dspsim) loads this file as it is.
"""
from __future__ import annotations

import os
import statistics
import time
import tracemalloc
from typing import Callable, NamedTuple

MAX_RUNS = 100


class Timing(NamedTuple):
    """The warm-up call's result and the timed calls' minimum and median seconds (None: not timed).

    ``cpu_min_seconds``: the least process CPU time of one timed call (all threads summed; None when
    pytest-benchmark timed it). On a shared host a call longer than the scheduler's slice is
    preempted in every run, so its minimum wall time keeps the wait while a short call's does not;
    at 1 thread the CPU time is the figure that compares a long call with a short one fairly."""

    result: object
    min_seconds: float | None
    median_seconds: float | None
    runs: int
    cpu_min_seconds: float | None = None


def measure(fn: Callable, repeats: int = 5, budget: float = 0.5, *, settle: float = 0.0,
            benchmark=None) -> Timing:
    """Time ``fn()`` by the rule of this module; see the module docstring for ``benchmark``."""
    out = fn()
    if settle:
        time.sleep(settle)
    if benchmark is not None:
        benchmark(fn)
        stats = getattr(benchmark, "stats", None)  # None when pytest-benchmark is disabled
        if stats is None:
            return Timing(out, None, None, 0)
        return Timing(out, stats.stats.min, stats.stats.median, stats.stats.rounds)
    times, cpu = [], []
    deadline = time.perf_counter() + budget
    while len(times) < repeats or (time.perf_counter() < deadline and len(times) < MAX_RUNS):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return Timing(out, min(times), statistics.median(times), len(times), min(cpu))


def error_status(exc: BaseException) -> str:
    """The status of a call that raised: ``error: <type>: <first line of the message>``."""
    return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"


def set_threads(threads: int) -> dict:
    """Set numba's thread count (torch, ONNX Runtime and LiteRT take it when their runners are built)."""
    import numba

    from .._jit import set_num_threads

    n = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS))
    set_num_threads(n)
    return {"requested": int(threads), "numba": n, "cpu_count": os.cpu_count()}


def _rss_kb(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # Linux: reset VmHWM to the current RSS
        return True
    except OSError:
        return False


def peak_extra_bytes(fn: Callable):
    """(result, peak bytes allocated during ``fn()`` beyond what was resident before, method).

    Linux: VmHWM after resetting it (counts numpy and numba allocations alike). Elsewhere:
    tracemalloc (numpy's allocations only; numba's are invisible to it).
    """
    if _rss_kb("VmHWM") is not None and _reset_peak_rss():
        before = _rss_kb("VmRSS")
        out = fn()
        return out, (_rss_kb("VmHWM") - before) * 1024, "rss"
    tracemalloc.start()
    try:
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak, "tracemalloc"
