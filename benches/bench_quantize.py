"""Throughput of float -> int quantization in every convention (TF modes, torch, ONNX, TFLite, pof2)
beside torch.quantize_per_tensor, ONNX Runtime QuantizeLinear, numpy and LiteRT."""
import pytest


@pytest.mark.bench_ops("quantize")
def test_quantize_output_shape_and_naive_agreement(run_bench, case, engine):
    out, mismatches = run_bench(case, engine)
    assert out.shape == case.shape
    if engine == "numpy":
        assert mismatches == 0  # numpy spells out the ONNX / TFLite formula
