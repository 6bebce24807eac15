"""The bring-up verbs on ONNX models, through the one runtime: run, run_batch, export-model, diagnose, validate."""
import json
import os

import numpy as np
import pytest

import dspsim
from dspsim import cli
from dspsim.harness import diagnose as dg
from dspsim.harness import validate as v

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "onnx")
QOP = os.path.join(HERE, "models", "dwsep_qop_u8s8_pt_op13.onnx")  # uint8 x int8: pairs saturate without VNNI
QDQ = os.path.join(HERE, "models", "cnn_qdq_s8s8_pc_op21.onnx")


def _input(path, seed=0):
    shape = dspsim.load_model(path).inputs[0].shape
    return (np.random.default_rng(seed).standard_normal(shape) * 1.5).astype(np.float32)


def test_load_model_reads_onnx_by_content_under_its_default_engine():
    m = dspsim.load_model(QDQ)
    assert m.engine == dspsim.onnx.host_engine() and isinstance(m, dspsim.onnx.Model)
    with open(QDQ, "rb") as f:
        assert dspsim.load_model(f.read(), engine="onnx-reference").engine == "onnx-reference"


@pytest.mark.parametrize("path", [QDQ, QOP])
def test_run_batch_of_an_onnx_model_is_n_calls_of_run(path):
    m = dspsim.load_model(path)
    x = np.stack([_input(path, s) for s in range(3)])
    got = m.run_batch(x)
    for i in range(3):
        assert all(np.array_equal(g[i], r) for g, r in zip(got, m.run(x[i])))
    with pytest.raises(ValueError, match=r"Model.run_batch: input 0 .* must have shape \(N, "):
        m.run_batch(x[0])


def test_run_verb_prints_every_layer_of_an_onnx_model(capsys):
    assert cli.main(["run", QDQ]) == 0
    out = capsys.readouterr().out
    assert f"engine='{dspsim.onnx.host_engine()}'" in out and "| QLinearConv |" not in out and "| QuantizeLinear |" in out


def test_export_model_then_diagnose_an_onnx_model_passes(tmp_path, capsys):
    np.save(tmp_path / "x.npy", _input(QOP))
    out = tmp_path / "dumps"
    assert cli.main(["export-model", QOP, "--input", str(tmp_path / "x.npy"), "--format", "bin",
                     "--out", str(out)]) == 0
    assert cli.main(["diagnose", QOP, "--input", str(tmp_path / "x.npy"), "--dumps", str(out),
                     "--json", str(tmp_path / "d.json")]) == 0
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["passed"] and d["dumped"] > 10 and d["engine"] == f"engine={dspsim.onnx.host_engine()}"


def test_diagnose_names_the_vnni_engine_from_dumps_made_on_a_vnni_host(tmp_path):
    """Diagnosed against the ONNX Runtime of a host without VNNI (the default elsewhere)."""
    x = _input(QOP, 3)
    device = dspsim.load_model(QOP, engine="onnxruntime-vnni")
    d = tmp_path / "dumps"
    d.mkdir()
    for e in device.trace([x]):
        if e.op_index >= 0:
            np.save(d / f"t{e.tensor}.npy", np.asarray(e.value))
    r = dg.diagnose(QOP, [x], d, "onnxruntime")
    assert not r["passed"] and r["first_divergence"]["op"] in ("QLinearConv", "QGemm", "QLinearMatMul")
    assert r["reproduced_by"][0] == "engine=onnxruntime-vnni"
    assert r["profile_toml"] == 'engine = "onnxruntime-vnni"\n'


def test_validate_an_onnx_model_against_another_engine(tmp_path):
    np.save(tmp_path / "x.npy", np.stack([_input(QOP, s) for s in range(4)]))
    d = v.validate(v.ModelSource.from_path(QOP), tmp_path / "x.npy", engine="onnxruntime",
                   against="onnxruntime-vnni", chunk=3)
    assert d["samples"] == 4 and d["engine"] == "onnxruntime" and d["layers"]
    assert not d["passed"]  # the pair-saturating sums differ from exact ones on this model


def test_validate_an_onnx_model_against_the_live_interpreter(tmp_path):
    pytest.importorskip("onnxruntime")
    np.save(tmp_path / "x.npy", np.stack([_input(QDQ, s) for s in range(3)]))
    d = v.validate(v.ModelSource.from_path(QDQ), tmp_path / "x.npy", engine="onnx-reference",
                   interpreter="onnx-reference", chunk=2)
    assert d["passed"] and sum(r["count"] for r in d["layers"]) > 1000


@pytest.mark.parametrize("vnni,engine", [(True, "onnxruntime-vnni"), (False, "onnxruntime")])
def test_the_default_onnx_engine_is_the_onnx_runtime_this_host_runs(monkeypatch, vnni, engine):
    """MLAS takes VNNI where the CPU has it (exact uint8 x int8 sums); without, vpmaddubsw saturates pairs."""
    import dspsim.onnx as onnx_front

    monkeypatch.setattr(onnx_front, "host_has_vnni", lambda peer: vnni)
    assert onnx_front.host_engine() == engine
    assert dspsim.load_model(QDQ).engine == engine and onnx_front.load_model(QDQ).engine == engine
