"""Throughput of requantization (int32 accumulators -> int8) in every scheme beside the numpy route.

dspsim's ``requantize`` runs on ``(elements / 256, 256)`` int32 accumulators with a per-tensor
:class:`dspsim.Requant`: fixed point (double, single rounding), shift-only, and the float-scale
schemes of FBGEMM, ONNX Runtime and XNNPACK.
"""
import numpy as np
import pytest


@pytest.mark.bench_ops("requantize", live_peers=False)
def test_requantize_output_and_naive_agreement(run_bench, case, engine):
    out, mismatches = run_bench(case, engine)
    assert out.dtype == np.int8 and out.size == case.work
    if engine.startswith("numpy"):
        assert mismatches == 0
