"""Throughput of the exact int32 GEMM / conv cores (dspsim.kernels.gemm) beside PyTorch FBGEMM.

Cores only: prepacked weights, int32 accumulators out (zero points folded in), no requantization.
FBGEMM's timed call (``quantized::linear`` / ``quantized::conv2d`` with prepacked weights, uint8
activations, channels-last conv input) also requantizes to uint8, which is a small share of its time.

Sizes: ``quick`` (CI smoke) or, when ``DSPSIM_BENCH_SIZE`` names medium or large, the reference
workloads: dense M=256, K=1024, N=1024 and conv 1x56x56x64, 3x3, 64 outputs, SAME padding.
Threads: ``DSPSIM_BENCH_THREADS`` (default 2) for numba and torch. ``extra_info`` records GMAC/s
from the minimum time. Speed only: bit-exactness against the peers is checked in bench_kernels.py.

On a machine shared with other busy processes, run with ``OMP_WAIT_POLICY=PASSIVE`` (numba's and
torch's libgomp both read it at load): with the default spin-waiting, a thread preempted by another
process stalls every parallel call and the medians of both engines drop 10-50x; passive waiting
keeps them near the best times at a ~10% cost in the best time.
"""
import time

import numpy as np
import pytest

from dspsim import bench
from dspsim.kernels import gemm as G

FULL = any(s in ("medium", "large") for s in bench.env_sizes())
DENSE = (256, 1024, 1024) if FULL else (32, 256, 128)          # M, K, N
CONV = ((1, 56, 56, 64), (64, 3, 3, 64)) if FULL else ((1, 14, 14, 16), (16, 3, 3, 16))


@pytest.fixture(scope="module")
def data():
    G.warmup()
    rng = np.random.default_rng(0)
    m, k, n = DENSE
    xs, ws = CONV
    return {
        "a": rng.integers(0, 256, (m, k)).astype(np.uint8),
        "b": rng.integers(-128, 128, (n, k)).astype(np.int8),
        "x": rng.integers(0, 256, xs).astype(np.uint8),
        "w": rng.integers(-128, 128, ws).astype(np.int8),
    }


def conv_macs():
    (n, h, w, _), (o, kh, kw, i) = CONV
    return n * h * w * o * kh * kw * i  # SAME, stride 1: output is H x W


def timed(benchmark, fn, macs, threads, engine):
    fn()  # compilation and prepacking stay out of the timing
    time.sleep(0.3)  # let another engine's spinning thread pool go to sleep first
    benchmark.extra_info.update(engine=engine, threads=threads, work=macs)
    out = benchmark(fn)
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        benchmark.extra_info["GMAC/s"] = macs / stats.stats.min / 1e9
    return out


@pytest.mark.parametrize("path", G.PATHS)
def test_dense_core(benchmark, threads, data, path):
    packed = G.pack_weights(data["b"])
    m, k, n = DENSE
    out = timed(benchmark, lambda: G.gemm_s32(data["a"], packed, a_zero_point=128, path=path),
                m * n * k, threads, f"dspsim-{path}")
    assert out.shape == (m, n) and out.dtype == np.int32


@pytest.mark.parametrize("path", G.PATHS)
def test_conv_core(benchmark, threads, data, path):
    packed = G.pack_weights(data["w"])
    fn = lambda: G.conv2d_s32(data["x"], packed, pads=(1, 1, 1, 1), input_zero_point=128,  # noqa: E731
                              path=path)
    out = timed(benchmark, fn, conv_macs(), threads, f"dspsim-{path}")
    assert out.shape == CONV[0][:3] + (CONV[1][0],)


@pytest.mark.live
def test_dense_torch_fbgemm(benchmark, threads, data):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(threads)
    torch.backends.quantized.engine = "fbgemm"
    xq = torch._make_per_tensor_quantized_tensor(torch.from_numpy(data["a"]), 0.05, 128)
    wq = torch._make_per_tensor_quantized_tensor(torch.from_numpy(data["b"]), 0.02, 0)
    packed = torch.ops.quantized.linear_prepack(wq, torch.zeros(DENSE[2]))
    m, k, n = DENSE
    out = timed(benchmark, lambda: torch.ops.quantized.linear(xq, packed, 0.5, 10), m * n * k, threads, "torch-fbgemm")
    assert tuple(out.shape) == (m, n)


@pytest.mark.live
def test_conv_torch_fbgemm(benchmark, threads, data):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(threads)
    torch.backends.quantized.engine = "fbgemm"
    x = torch.from_numpy(data["x"]).permute(0, 3, 1, 2)  # NCHW view of NHWC memory: channels-last
    xq = torch._make_per_tensor_quantized_tensor(x, 0.05, 128)
    wq = torch._make_per_tensor_quantized_tensor(torch.from_numpy(data["w"]).permute(0, 3, 1, 2).contiguous(), 0.02, 0)
    packed = torch.ops.quantized.conv2d_prepack(wq, torch.zeros(CONV[1][0]), [1, 1], [1, 1], [1, 1], 1)
    out = timed(benchmark, lambda: torch.ops.quantized.conv2d(xq, packed, 0.5, 10), conv_macs(), threads,
                "torch-fbgemm")
    assert tuple(out.shape) == (1, CONV[1][0]) + CONV[0][1:3]
