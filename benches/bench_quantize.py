"""Throughput of float -> int quantization in every convention (TF modes, torch, ONNX, TFLite, pof2)
beside torch.quantize_per_tensor, ONNX Runtime QuantizeLinear, numpy and LiteRT, each bit-exact."""
import pytest


@pytest.mark.bench_ops("quantize")
def test_quantize_output_shape_and_bit_exact_agreement(run_bench, case, engine):
    out, mismatches = run_bench(case, engine)
    assert out.shape == case.shape
    if engine != "dspsim" and mismatches is not None:
        # numpy spells out the ONNX / TFLite formula; torch, ONNX Runtime and LiteRT are the engines
        # themselves: the speed rows only count when the codes are the same
        assert mismatches == 0
