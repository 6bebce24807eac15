"""Throughput of the integer kernels (fully_connected, conv2d, depthwise_conv2d, relu) beside their peers.

Sizes: ``DSPSIM_BENCH_SIZE`` (see conftest.py). Every requantization variant runs for dspsim; each
peer runs on the variant whose arithmetic it has (see dspsim/bench/peers.py) and records its mismatches.
"""
import numpy as np
import pytest

from dspsim import bench


def expected_shape(case):
    sh = case.shape
    return {"fully_connected": (sh[0], sh[2]), "conv2d": sh[:3] + sh[4:]}.get(case.op, sh)


@pytest.mark.bench_ops(*bench.KERNEL_OPS)
def test_kernel_output_shape_and_naive_agreement(run_bench, case, engine):
    out, mismatches = run_bench(case, engine)
    assert out.shape == expected_shape(case)
    if engine == "ort-matmulinteger":  # MLAS's integer GEMM: the int32 sums, no requantization
        assert out.dtype == np.int32
    else:
        assert out.dtype == (np.int8 if case.variant in ("double", "single") else np.uint8)
    if engine == "numpy-int64":
        assert mismatches == 0  # the naive int64 route is the definition of rounding="double"


@pytest.mark.bench_ops("relu")
def test_relu_output_shape_and_naive_agreement(run_bench, case, engine):
    out, mismatches = run_bench(case, engine)
    assert out.shape == case.shape
    if engine.startswith("numpy"):
        assert mismatches == 0
