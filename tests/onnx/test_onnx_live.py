"""Live checks against the installed onnxruntime / onnx (skipped when they are absent): the committed
golden models on fresh random inputs, on this host (MLAS's u8 x s8 arithmetic depends on VNNI)."""
import os

import numpy as np
import pytest

import dspsim.onnx as donnx

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "onnx", "models")
QOP = ["cnn_qop_u8s8_pt_op13", "residual_qop_s8s8_pc_op21", "mlp_qop_u8s8_pt_op13", "dwsep_qop_u8s8_pt_op13",
       "unet_qop_s8s8_pc_op21"]
QDQ = ["cnn_qdq_u8s8_pt_op13", "residual_qdq_s8s8_pc_op21", "mlp_qdq_s8s8_pc_op21", "dwsep_pof2_qdq_s8s8",
       "unet_qdq_u8s8_pt_op13"]


def ort_outputs(path, x, optimized):
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized else
                                   ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"input": x})


def host_engine(engine="onnxruntime"):
    """``engine`` as the ONNX Runtime of this host runs it: with VNNI, its uint8 x int8 GEMMs are exact."""
    from dspsim import DeviceProfile
    from dspsim.simd.cpu import host_has_vnni

    if not host_has_vnni("onnxruntime"):
        return engine
    return "onnxruntime-vnni" if engine == "onnxruntime" else DeviceProfile.from_dict(
        {"engine": engine, "name": f"{engine} on a VNNI host", "mac": {"pair_saturation": False}})


def inputs(path, seed):
    shape = donnx.load_model(path).inputs[0].shape
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * np.float32(1.5)


@pytest.mark.parametrize("name", QOP)
def test_qoperator_models_match_live_onnxruntime(name):
    path = os.path.join(HERE, f"{name}.onnx")
    model = donnx.load_model(path, host_engine())
    for seed in range(3):
        x = inputs(path, seed)
        assert np.array_equal(model.run([x])[0].view(np.uint32), ort_outputs(path, x, False)[0].view(np.uint32))


@pytest.mark.parametrize("name", QDQ + QOP)
def test_fused_models_match_live_optimized_onnxruntime(name):
    path = os.path.join(HERE, f"{name}.onnx")
    model = donnx.load_model(path, engine=host_engine("onnxruntime-optimized"))
    for seed in range(3):
        x = inputs(path, 10 + seed)
        assert np.array_equal(model.run([x])[0].view(np.uint32), ort_outputs(path, x, True)[0].view(np.uint32))


@pytest.mark.parametrize("opset", [22, 23])
@pytest.mark.parametrize("name", ["unet_qdq_s8s8_pc_op21", "mlp_qop_s8s8_pc_op21", "residual_pof2_qdq_s8s8"])
def test_opset_22_and_23_models_match_live_onnxruntime(name, opset):
    onnx = pytest.importorskip("onnx")
    m = onnx.load(os.path.join(HERE, f"{name}.onnx"))
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = opset
    m.ir_version = 10 if opset <= 22 else 11
    data = m.SerializeToString()
    for optimized, engine in ((False, "onnxruntime"), (True, "onnxruntime-optimized")):
        model = donnx.load_model(data, engine=host_engine(engine))
        for seed in range(3):
            x = inputs(os.path.join(HERE, f"{name}.onnx"), 20 + seed)
            assert np.array_equal(model.run([x])[0].view(np.uint32), ort_outputs(data, x, optimized)[0].view(np.uint32))
