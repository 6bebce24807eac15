"""Throughput of float -> int quantization in every convention (TF modes, torch, ONNX, TFLite, pof2)
beside torch.quantize_per_tensor, ONNX Runtime QuantizeLinear, numpy and LiteRT."""
import pytest

from dspsim import bench

PEERS = bench.load_peers()


def params():
    out = []
    for case in bench.cases(bench.env_sizes(), ("quantize",)):
        out.append(pytest.param(case, "dspsim", id=f"{case.name}-dspsim"))
        out += [pytest.param(case, engine, id=f"{case.name}-{engine}", marks=pytest.mark.live)
                for engine in (PEERS.engines(case) if PEERS else ())]
    return out


@pytest.mark.parametrize("case,engine", params())
def test_quantize_output_shape_and_naive_agreement(run_bench, case, engine):
    out, mismatches = run_bench(case, engine)
    assert out.shape == case.shape
    if engine == "numpy":
        assert mismatches == 0  # numpy spells out the ONNX / TFLite formula
