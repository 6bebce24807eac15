"""The gemm cores with the requantization fused into their store, prepared once per layer, beside PyTorch FBGEMM.

``dspsim.kernels.mac.gemm.FusedRequant`` requantizes each ``MR x nr`` tile while it is in L1, so the
int32 matrix and the second pass over it (``requantize_into``) disappear. Here the layer plan
(``prepare_gemm_s32`` / ``prepare_conv2d_s32`` with ``epilogue=``) is built from the quantization the
public kernel resolves for the same arguments (``fully_connected`` / ``conv2d`` of the bench case), and
its output must equal that kernel's, bit for bit; FBGEMM (``quantized::linear`` / ``quantized::conv2d``,
prepacked, channels-last) is timed beside it for speed. Sizes and threads as in conftest.py
(``DSPSIM_BENCH_SIZE``, ``DSPSIM_BENCH_THREADS``); run with ``-n 0 --benchmark-enable`` to time.
"""
import numpy as np
import pytest

import dspsim
from dspsim import bench
from dspsim.kernels import _common
from dspsim.kernels.mac import gemm

CASES = [bench.Case(op, variant, size) for size in bench.env_sizes() for op in ("fully_connected", "conv2d")
         for variant in ("fbgemm", "double")]


def fused_plan(case, p):
    """``run()`` of the fused layer plan of ``case`` (weights packed and the epilogue prepared outside it)."""
    kw = bench.kernel_kwargs(case, p)
    x, n = p["x"], p["w"].shape[0]
    q = _common.resolve_quant(case.op, "fully_connected" if case.op == "fully_connected" else "conv", x.dtype,
                              np.dtype(np.int8), n, input_zero_point=kw["input_zero_point"],
                              weight_zero_point=kw["weight_zero_point"], output_zero_point=kw["output_zero_point"],
                              multiplier=kw.get("multiplier"), shift=kw.get("shift"),
                              rounding=kw.get("rounding", "double"), tie=None, requant=kw.get("requant"),
                              input_scale=kw.get("input_scale"), weight_scale=kw.get("weight_scale"),
                              output_scale=kw.get("output_scale"), act_min=None, act_max=None,
                              out_dtype=kw["out_dtype"])
    bias, float_bias = _common.bias_arrays(p["bias"], n, q, case.op)
    epilogue = gemm.FusedRequant.prepare(n, 32, q.requant, float_bias, q.zo, q.lo, q.hi, q.out_dtype)
    alpha, packed = q.zx + (128 if x.dtype == np.int8 else 0), gemm.pack_weights(p["w"])
    if case.op == "fully_connected":
        run = gemm.prepare_gemm_s32(x.shape[0], x.dtype, packed, alpha, q.zw, bias, gemm.PATHS[0], epilogue)
    else:  # 3x3 SAME, stride 1
        run = gemm.prepare_conv2d_s32(x.shape, x.dtype, packed, (1, 1), (1, 1), (1, 1, 1, 1), alpha, q.zw, bias,
                                      gemm.PATHS[0], epilogue)
    return lambda: run(x)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fused_plan_equals_the_kernel(benchmark, threads, case):
    p = bench.problem(case)
    fn = fused_plan(case, p)
    t = bench.measure(fn, benchmark=benchmark)
    benchmark.extra_info.update(case=case.name, work=case.work, threads=threads, engine="dspsim-fused-plan")
    want = bench.dspsim_runner(case, p).fn()
    assert t.result.dtype == want.dtype
    np.testing.assert_array_equal(t.result.reshape(want.shape), want)


@pytest.mark.live
@pytest.mark.parametrize("case", [c for c in CASES if c.variant == "fbgemm"], ids=lambda c: c.name)
def test_torch_fbgemm_beside_it(benchmark, threads, case):
    runner = next(r for r in bench.peers.runners(case, bench.problem(case), threads) if r.engine == "torch-fbgemm")
    if runner.skip:
        pytest.skip(runner.skip)
    t = bench.measure(runner.fn, benchmark=benchmark)
    benchmark.extra_info.update(case=case.name, work=case.work, threads=threads, engine="torch-fbgemm")
    assert runner.to_numpy(t.result).shape[-1] == bench.problem(case)["w"].shape[0]


def test_dspsim_kernels_are_importable_here():
    assert dspsim.pack_weights is gemm.pack_weights
