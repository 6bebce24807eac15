"""Throughput of the exact int32 GEMM / conv cores (dspsim.kernels.mac.gemm) beside PyTorch FBGEMM and, for
gemm_s32, ONNX Runtime's MatMulInteger (MLAS's integer GEMM: the same int32 sums, diffed where MLAS has VNNI).

Cores only: prepacked weights, int32 accumulators out (zero points folded in), no requantization;
one case per SIMD path this machine runs. FBGEMM's timed call (``quantized::linear`` /
``quantized::conv2d`` with prepacked weights, uint8 activations, channels-last conv input) also
requantizes to uint8, which is a small share of its time: speed only, no comparison. The same cases
are the ``gemm_s32`` / ``conv2d_s32`` rows of ``dspsim bench``.

Sizes: ``DSPSIM_BENCH_SIZE`` (see conftest.py); medium is the reference workload, dense M=256,
K=1024, N=1024 and conv 1x56x56x64, 3x3, 64 outputs, SAME padding. Threads:
``DSPSIM_BENCH_THREADS`` (default 2) for numba and torch. Bit-exactness against the peers is checked
in bench_kernels.py.

On a machine shared with other busy processes, run with ``OMP_WAIT_POLICY=PASSIVE`` (numba's and
torch's libgomp both read it at load): with the default spin-waiting, a thread preempted by another
process stalls every parallel call and the medians of both engines drop 10-50x; passive waiting
keeps them near the best times at a ~10% cost in the best time.
"""
import numpy as np
import pytest

from dspsim import bench


def expected_shape(case):
    sh = case.shape
    return (sh[0], sh[2]) if case.op == "gemm_s32" else sh[:3] + sh[4:]


@pytest.mark.bench_ops(*bench.CORE_OPS)
def test_core_output_shape(run_bench, case, engine):
    out, mismatches = run_bench(case, engine)
    assert out.shape == expected_shape(case)
    if engine == "torch-fbgemm":
        assert out.dtype == np.uint8 and mismatches is None  # FBGEMM beside a core also requantizes: speed only
    else:  # dspsim, and MLAS's MatMulInteger: the exact int32 sums (with VNNI diffed against dspsim's)
        assert out.dtype == np.int32 and mismatches in (None, 0)
