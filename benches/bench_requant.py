"""Throughput of requantization (int32 accumulators -> int8) in every scheme beside the numpy route.

dspsim's ``requantize`` runs on ``(elements / 256, 256)`` int32 accumulators with a per-tensor
:class:`dspsim.Requant`: fixed point (double, single rounding), shift-only, and the float-scale
schemes of FBGEMM, ONNX Runtime and XNNPACK.
"""
import numpy as np
import pytest

from dspsim import bench

PEERS = bench.load_peers()


def params():
    out = []
    for case in bench.cases(bench.env_sizes(), ("requantize",)):
        out.append(pytest.param(case, "dspsim", id=f"{case.name}-dspsim"))
        out += [pytest.param(case, engine, id=f"{case.name}-{engine}")
                for engine in (PEERS.engines(case) if PEERS else ())]
    return out


@pytest.mark.parametrize("case,engine", params())
def test_requantize_output_and_naive_agreement(run_bench, case, engine):
    out, mismatches = run_bench(case, engine)
    assert out.dtype == np.int8 and out.size == case.work
    if engine.startswith("numpy"):
        assert mismatches == 0
