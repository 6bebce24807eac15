"""dspsim at 1 thread and at N (``DSPSIM_BENCH_THREADS``, default 2) on the same calls: issue 29 item 2's thread
rows (target: >= 0.7 x N speed-up on large work, never slower with more threads).

Cases: dense, conv and depthwise at the sizes of ``DSPSIM_BENCH_SIZE`` (the ``double`` variant of
:mod:`dspsim.bench.workloads`) and at a large batch (:data:`LARGE_BATCH`), and a whole model's batch
(``Model.run_batch``: MobileNetV2 224 at batch 16 where the shared model is here, else the committed
mobilenet; split by samples where :meth:`dspsim.graph.model.Model.run_batch` finds it better). Each
benchmark's ``extra_info`` holds the case, the threads and the work; the outputs at every thread count
must be identical (bit-exact), checked in the warm-up. The peers at the same counts are in ``dspsim bench
--threads 1`` / ``--threads 2``.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import dspsim
from dspsim import bench

COUNTS = sorted({1, int(os.environ.get("DSPSIM_BENCH_THREADS", "2"))})  # conftest.bench_threads, at collection
LARGE_BATCH = {"fully_connected": (1024, 1024, 1024), "conv2d": (8, 56, 56, 64, 64),
               "depthwise_conv2d": (8, 56, 56, 64)}
"""The large-batch shapes (dense M x K x N; conv N x H x W x C x O and depthwise N x H x W x C, 3x3 SAME)."""
_FIRST = {}  # case name -> output at the first thread count, for the bit-exact check


def _kernel_cases():
    sizes = bench.env_sizes()
    out = [bench.Case(op, "double", s) for s in sizes for op in bench.KERNEL_OPS]
    if sizes != ["quick"]:
        out += [bench.Case(op, "double", "medium", dims=dims) for op, dims in LARGE_BATCH.items()]
    return out


def _model_case():
    full = [c for c in bench.model_cases("full") if c.name == "mobilenet_v2_224" and not c.missing()]
    return full[0] if full and bench.env_sizes() != ["quick"] else bench.model_cases("quick")[1]


@pytest.fixture
def at_threads():
    """``at_threads(n)``: run dspsim on ``n`` threads for the rest of the test (the session's count restored)."""
    before = dspsim.get_num_threads()
    yield dspsim.set_num_threads
    dspsim.set_num_threads(before)


def _same_as_first(name, out):
    out = [np.asarray(o) for o in (out if isinstance(out, list) else [out])]
    first = _FIRST.setdefault(name, out)
    assert all(np.array_equal(a, b) for a, b in zip(first, out)), f"{name}: output differs across thread counts"


@pytest.mark.parametrize("n_threads", COUNTS, ids=[f"{n}t" for n in COUNTS])
@pytest.mark.parametrize("case", _kernel_cases(), ids=lambda c: c.name)
def test_kernel_at_each_thread_count_is_bit_identical(benchmark, at_threads, case, n_threads):
    at_threads(n_threads)
    runner = bench.dspsim_runner(case, bench.problem(case))
    t = bench.measure(runner.fn, benchmark=benchmark)
    _same_as_first(case.name, runner.to_numpy(t.result))
    benchmark.extra_info.update(case=case.name, threads=n_threads, work=case.work, unit=case.unit)


@pytest.mark.parametrize("n_threads", COUNTS, ids=[f"{n}t" for n in COUNTS])
def test_model_batch_at_each_thread_count_is_bit_identical(benchmark, at_threads, n_threads):
    import dspsim.tflite

    case = _model_case()
    if case.missing():
        pytest.skip(case.missing())
    at_threads(n_threads)
    model = dspsim.tflite.load_model(case.path, engine="tflm")
    x = bench.models.model_inputs(model, case.batch)
    _, many = bench.models.dspsim_calls(model, x)
    t = bench.measure(many, benchmark=benchmark)
    _same_as_first(case.name, t.result)
    benchmark.extra_info.update(model=case.name, batch=case.batch, threads=n_threads,
                                parts=model._parts(case.batch))
