"""``dspsim validate --float-model``: the error of the dequantized integers against the float model, per layer
(dspsim.harness.quant_error), on the golden float / quantized pairs of tests/golden/make_golden_float_pairs.py.

Every expected metric is computed here with numpy from tensors the real engines wrote: LiteRT's int8 and float
tensors (float_pairs.npz), ONNX Runtime's float model run in this test."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from dspsim import cli
from dspsim.harness import quant_error as fe
from dspsim.harness import validate as v
from dspsim.interpreters import WorkerFailed
from dspsim.tflite.flatbuffer import read_model

PAIRS = Path(__file__).parents[1] / "golden" / "float_pairs"
GOLDEN = PAIRS / "float_pairs.npz"
TFL_FLOAT, TFL_INT8 = PAIRS / "tf_cnn_float.tflite", PAIRS / "tf_cnn_int8.tflite"
TFL_FLOAT_IO = PAIRS / "tf_cnn_int8_float_io.tflite"
ONNX_FLOAT, QDQ, QOP = PAIRS / "onnx_cnn_float.onnx", PAIRS / "onnx_cnn_qdq.onnx", PAIRS / "onnx_cnn_qop.onnx"


def _numpy_metrics(dq, f, axis=None):
    """The module's metrics, straight from their definitions, over all samples at once."""
    e = dq.astype(np.float64) - f.astype(np.float64)
    eps = np.finfo(np.float64).eps
    out = {"sqnr_db": 20 * math.log10(max(np.linalg.norm(f.astype(np.float64)), eps) / max(np.linalg.norm(e), eps)),
           "max_abs_error": np.abs(e).max(), "mean_abs_error": np.abs(e).mean(), "mean_error": e.mean(),
           "mean_squared_error": (e * e).mean()}
    if axis is not None:
        fc, ec = np.moveaxis(f.astype(np.float64), axis, 0), np.moveaxis(e, axis, 0)
        out["per_channel"] = {
            "sqnr_db": [20 * math.log10(max(np.linalg.norm(a), eps) / max(np.linalg.norm(b), eps))
                        for a, b in zip(fc, ec)],
            "max_abs_error": [np.abs(b).max() for b in ec], "mean_abs_error": [np.abs(b).mean() for b in ec],
            "mean_error": [b.mean() for b in ec], "float_rms": [np.sqrt((a * a).mean()) for a in fc]}
    return out


def _assert_metrics(row, expected, rel=1e-9):
    for k in ("sqnr_db", "max_abs_error", "mean_abs_error", "mean_error", "mean_squared_error"):
        assert row[k] == pytest.approx(expected[k], rel=rel, abs=1e-12), k
    if "per_channel" in expected:
        for k, want in expected["per_channel"].items():
            assert row["per_channel"][k] == pytest.approx(want, rel=rel, abs=1e-12), k


# ---------------------------------------------------------------------------------------------
# the metrics
# ---------------------------------------------------------------------------------------------
def test_error_stats_over_samples_are_the_numpy_metrics_of_the_concatenation():
    rng = np.random.default_rng(0)
    f = rng.normal(size=(3, 1, 4, 5, 6)).astype(np.float32)
    dq = f + rng.normal(0, 0.05, f.shape) + np.linspace(-0.1, 0.1, 6)  # a bias that differs per channel
    s = fe.ErrorStats(axis=-1)
    for k in range(3):
        s.add(dq[k], f[k])
    _assert_metrics(s.row(), _numpy_metrics(dq, f, axis=-1))
    assert s.row()["count"] == f.size and s.row()["per_channel"]["axis"] == -1


def test_a_channel_that_is_zero_in_float_is_left_out_of_the_worst_channel():
    f = np.ones((2, 3, 3), np.float32) * np.array([1.0, 0.0, 2.0], np.float32)  # channel 1: a dead ReLU
    dq = f + np.array([0.1, 0.0, 0.5])
    s = fe.ErrorStats(axis=-1)
    s.add(dq, f)
    row = s.row()
    assert row["per_channel"]["sqnr_db"][1] == 0.0 and row["per_channel"]["float_rms"][1] == 0.0  # ORT's eps rule
    md = fe.render_md({"float_model": "f.tflite", "executor": "dspsim", "unmatched": [], "unmatched_float": [],
                       "layers": [{"op_index": 0, "layer": "CONV_2D", "name": "y", "float_name": "y",
                                   "match": "name", **row}]})
    assert f"| {20 * math.log10(2 / 0.5):.2f} (ch 2); 1 channel 0 in float |" in md


def test_sqnr_is_onnx_runtimes_and_an_exact_match_hits_its_epsilon_floor():
    qdq_loss_debug = pytest.importorskip("onnxruntime.quantization.qdq_loss_debug")
    rng = np.random.default_rng(1)
    fs = [rng.normal(size=(2, 7)).astype(np.float32) for _ in range(3)]
    dqs = [x + rng.normal(0, 0.1, x.shape).astype(np.float32) for x in fs]
    s = fe.ErrorStats()
    for a, b in zip(dqs, fs):
        s.add(a, b)
    ort = qdq_loss_debug.compute_signal_to_quantization_noice_ratio(fs, dqs)
    assert s.row()["sqnr_db"] == pytest.approx(ort, abs=1e-4)
    assert fe.sqnr_db(4.0, 0.0) == pytest.approx(20 * math.log10(2.0 / np.finfo(float).eps))


def test_dequantize_takes_per_channel_parameters_along_the_axis():
    q = np.arange(-6, 6, dtype=np.int8).reshape(2, 2, 3)
    got = fe.dequantize(q, np.array([0.5, 0.25, 2.0]), np.array([1, 0, -1]), -1)
    assert np.array_equal(got, (q - np.array([1, 0, -1])) * np.array([0.5, 0.25, 2.0]))


# ---------------------------------------------------------------------------------------------
# a TFLite pair: the float model as LiteRT ran it (the golden tensors), the integers as dspsim runs them
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def golden():
    with np.load(GOLDEN) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture
def litert_from_golden(monkeypatch, golden):
    """The LiteRT worker's answer for the float model, from the golden tensors it recorded."""
    calls = []

    def run_in(python, kind, model, arrays, *, streaming, n_outputs, tensors, preserve_all_tensors):
        calls.append((kind, arrays))
        names = [t.name for t in read_model(model).main.tensors]
        return {f"t{k}": golden[f"float/{names[i]}"] for k, i in enumerate(tensors)}

    monkeypatch.setattr(fe, "run_in", run_in)
    return calls


@pytest.fixture
def int8_data(tmp_path, golden):
    np.save(tmp_path / "x.npy", golden["x_int8"])
    return tmp_path / "x.npy"


def _tflite_expected(golden, name, per_channel):
    info = {t.name: t for t in read_model(TFL_INT8.read_bytes()).main.tensors}[name]
    dq = (golden[f"int8/{name}"].astype(np.float64) - int(info.zero_point[0])) * float(info.scale[0])
    return _numpy_metrics(dq, golden[f"float/{name}"], axis=-1 if per_channel else None)


def test_tflite_pair_error_is_the_numpy_error_of_litert_int8_and_float_tensors(litert_from_golden, int8_data,
                                                                               golden):
    d = v.validate(TFL_INT8, int8_data, float_model=TFL_FLOAT)["float_error"]
    assert d["executor"] == "interpreter:litert"  # dspsim runs no float32 CONV_2D: the interpreter runs it
    (kind, (x,)), = litert_from_golden
    sg = read_model(TFL_INT8.read_bytes()).main
    scale, zp = sg.tensors[sg.inputs[0]].scale[0], sg.tensors[sg.inputs[0]].zero_point[0]
    assert x.dtype == np.float32 and np.allclose(x, (golden["x_int8"] - zp) * scale)  # the int8 inputs dequantized
    assert [(r["layer"], r["match"]) for r in d["layers"]] == [
        ("CONV_2D", "name"), ("DEPTHWISE_CONV_2D", "name"), ("MAX_POOL_2D", "name"), ("CONV_2D", "name"),
        ("MEAN", "name"), ("FULLY_CONNECTED", "name")]
    assert d["unmatched"] == [] and d["unmatched_float"] == []
    for r in d["layers"]:
        per_channel = r["layer"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
        assert (r["per_channel"] is not None) == per_channel
        _assert_metrics(r, _tflite_expected(golden, r["name"], per_channel))


def test_renamed_tensors_match_by_operator_position_and_shape(litert_from_golden, tmp_path, int8_data):
    renamed = tmp_path / "renamed.tflite"  # the same model, two tensors renamed (same length: same layout)
    renamed.write_bytes(TFL_INT8.read_bytes().replace(b"MaxPool2d", b"maxpool_X").replace(b"Mean", b"mean"))
    d = v.validate(renamed, int8_data, float_model=TFL_FLOAT)["float_error"]
    ref = v.validate(TFL_INT8, int8_data, float_model=TFL_FLOAT)["float_error"]
    assert [(r["float_name"], r["match"]) for r in d["layers"]][2::2] == [("MaxPool2d", "position"),
                                                                           ("Mean", "position")]
    assert [r["sqnr_db"] for r in d["layers"]] == [r["sqnr_db"] for r in ref["layers"]]


def test_a_float_io_model_pairs_its_renamed_end_tensors_by_position(litert_from_golden, tmp_path, int8_data):
    sg = read_model(TFL_INT8.read_bytes()).main
    t = sg.tensors[sg.inputs[0]]
    x = ((np.load(int8_data).astype(np.float64) - t.zero_point[0]) * t.scale[0]).astype(np.float32)
    np.save(tmp_path / "xf.npy", x)  # QUANTIZE gives back the int8 data set: the golden float tensors apply
    d = v.validate(TFL_FLOAT_IO, tmp_path / "xf.npy", float_model=TFL_FLOAT)["float_error"]
    got = [(r["name"], r["float_name"], r["match"], r["layer"]) for r in d["layers"]]
    assert got[0] == ("tfl.quantize", "x", "position", "INPUT") and got[1][2] == "name"
    assert got[-1] == ("Identity1", "Identity", "position", "FULLY_CONNECTED") and d["unmatched"] == []
    ref = v.validate(TFL_INT8, int8_data, float_model=TFL_FLOAT)["float_error"]
    assert [r["sqnr_db"] for r in d["layers"][1:]] == [r["sqnr_db"] for r in ref["layers"]]


@pytest.mark.parametrize("last, says", [
    ("ModuleNotFoundError: No module named 'ai_edge_litert'", "needs the ai-edge-litert package.*No module named"),
    ("RuntimeError: Node 54 (QUANTIZE) failed to prepare.", r"failed on the float model \(exit 1\): RuntimeError")])
def test_a_float_interpreter_that_fails_is_one_line_saying_why(monkeypatch, int8_data, last, says):
    def run_in(*args, **kwargs):
        raise WorkerFailed(1, f"Traceback ...\n{last}")

    monkeypatch.setattr(fe, "run_in", run_in)
    with pytest.raises(v.ValidateError, match=says) as exc:
        v.validate(TFL_INT8, int8_data, float_model=TFL_FLOAT)
    assert "\n" not in str(exc.value)


def test_dspsim_executor_refuses_a_float_tflite_model_it_cannot_run(int8_data):
    with pytest.raises(v.ValidateError, match="dspsim cannot run .*float32"):
        v.validate(TFL_INT8, int8_data, float_model=TFL_FLOAT, float_executor="dspsim")


@pytest.mark.live
def test_live_litert_gives_the_golden_float_error(int8_data, golden):
    try:
        v.check_interpreter("litert")
    except v.ValidateError as exc:
        pytest.skip(str(exc))
    d = v.validate(TFL_INT8, int8_data, float_model=TFL_FLOAT)["float_error"]
    for r in d["layers"]:
        _assert_metrics(r, _tflite_expected(golden, r["name"], r["per_channel"] is not None), rel=1e-6)


# ---------------------------------------------------------------------------------------------
# ONNX pairs from onnxruntime.quantization.quantize_static: QDQ (per channel) and QOperator (folded ReLUs)
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def nchw_data(tmp_path, golden):
    np.save(tmp_path / "x.npy", np.ascontiguousarray(golden["x"].transpose(0, 1, 4, 2, 3)))
    return tmp_path / "x.npy"


def _ort_float_values(x):
    """Every value of the float model under ONNX Runtime, graph optimizations off."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    m = onnx.load(ONNX_FLOAT)
    names = [o for n in m.graph.node for o in n.output]
    del m.graph.output[:]
    m.graph.output.extend(onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in names)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    runs = [dict(zip(names, sess.run(None, {"image": s}))) for s in x]
    return {n: np.stack([r[n] for r in runs]) for n in names} | {"image": x}


def _onnx_expected(path, x, pairs):
    """{integer tensor: metrics}: dspsim's integers (bit-exact with ORT, tests/onnx) dequantized with the scale and
    zero point read here from the quantized graph, against ORT's float values."""
    import onnx
    from onnx import numpy_helper

    from dspsim import load_model

    q = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}
    at = {"QuantizeLinear": (1, 2), "QLinearConv": (6, 7)}  # the output scale and zero point
    qparams = {n.output[0]: (inits[n.input[at[n.op_type][0]]], inits[n.input[at[n.op_type][1]]])
               for n in q.graph.node if n.op_type in at}
    model = load_model(path)
    traces = [{e.name: e.value for e in model.trace([s])} for s in x]
    fl = _ort_float_values(x)
    out = {}
    for name, float_name, per_channel in pairs:
        src = {"pool_quantized": "dw_quantized", "flat_quantized": "gap_quantized"}.get(name, name)
        scale, zp = qparams.get(src) or _qop_params(q, inits, src)
        dq = (np.stack([t[name] for t in traces]).astype(np.float64) - zp.astype(np.int64)) * scale.astype(np.float64)
        out[name] = _numpy_metrics(dq, fl[float_name], axis=2 if per_channel else None)  # (samples, N, C, ...)
    return out


def _qop_params(q, inits, name):
    node = next(n for n in q.graph.node if n.output[0] == name)
    pos = {"QGemm": (7, 8), "QLinearGlobalAveragePool": (3, 4)}[node.op_type]
    return inits[node.input[pos[0]]], inits[node.input[pos[1]]]


def test_qdq_pair_matches_by_name_and_its_error_is_numpys_against_onnxruntime(nchw_data):
    pytest.importorskip("onnxruntime")
    d = v.validate(QDQ, nchw_data, float_model=ONNX_FLOAT, float_executor="interpreter")["float_error"]
    assert d["executor"] == "interpreter:onnxruntime"
    got = [(r["name"], r["float_name"], r["match"], r["layer"]) for r in d["layers"]]
    assert got == [(f"{n}_QuantizeLinear_Output", n, "name", op) for n, op in [
        ("image", "INPUT"), ("conv1_relu", "Conv"), ("dw_relu6", "Conv"), ("pool", "MaxPool"), ("pw", "Conv"),
        ("gap", "GlobalAveragePool"), ("flat", "Flatten"), ("logits", "Gemm")]]
    assert d["unmatched"] == [] and d["unmatched_float"] == ["conv1", "dw"]  # the ReLUs' inputs: never quantized
    x = np.load(nchw_data)
    want = _onnx_expected(QDQ, x, [(r["name"], r["float_name"], r["per_channel"] is not None) for r in d["layers"]])
    assert [r["per_channel"] is not None for r in d["layers"]] == [False, True, True, False, True, False, False, True]
    for r in d["layers"]:
        _assert_metrics(r, want[r["name"]], rel=1e-7)


def test_qoperator_pair_follows_the_relus_the_quantizer_folded(nchw_data):
    pytest.importorskip("onnxruntime")
    d = v.validate(QOP, nchw_data, float_model=ONNX_FLOAT, float_executor="interpreter")["float_error"]
    got = [(r["name"], r["float_name"], r["match"]) for r in d["layers"]]
    assert got[1:3] == [("conv1_quantized", "conv1_relu", "activation"), ("dw_quantized", "dw_relu6", "activation")]
    assert all(m == "name" for _, _, m in got[:1] + got[3:]) and d["unmatched_float"] == ["conv1", "dw"]
    assert all(r["per_channel"] is None for r in d["layers"])  # per-tensor weights
    x = np.load(nchw_data)
    want = _onnx_expected(QOP, x, [(r["name"], r["float_name"], False) for r in d["layers"]])
    for r in d["layers"]:
        _assert_metrics(r, want[r["name"]], rel=1e-7)


def test_dspsims_float_kernels_give_the_interpreters_float_error(nchw_data):
    pytest.importorskip("onnxruntime")
    mine = v.validate(QDQ, nchw_data, float_model=ONNX_FLOAT)["float_error"]
    ort = v.validate(QDQ, nchw_data, float_model=ONNX_FLOAT, float_executor="interpreter")["float_error"]
    assert mine["executor"] == "dspsim"
    for a, b in zip(mine["layers"], ort["layers"]):
        assert a["sqnr_db"] == pytest.approx(b["sqnr_db"], abs=1e-3)
        assert a["max_abs_error"] == pytest.approx(b["max_abs_error"], abs=1e-5)


# ---------------------------------------------------------------------------------------------
# the command line and the report
# ---------------------------------------------------------------------------------------------
def test_validate_cli_writes_the_float_error_table_plot_and_json(tmp_path, nchw_data, capsys):
    out = tmp_path / "report"
    rc = cli.main(["validate", str(QDQ), "--data", str(nchw_data), "--float-model", str(ONNX_FLOAT), "--out",
                   str(out)])
    assert rc == 0
    md = (out / "summary.md").read_text()
    assert "## Error against the float model" in md and "| 20 | Conv | `pw_QuantizeLinear_Output` |" in md
    assert "Float tensors no integer tensor took (2): `conv1`, `dw`" in md and "![float_error.png]" in md
    assert (out / "float_error.png").stat().st_size > 10_000
    d = json.loads((out / "results.json").read_text())
    assert len(d["float_error"]["layers"]) == 8 and d["float_error"]["executor"] == "dspsim"
    assert "float model (dspsim): 8 layers compared, 0 unmatched; lowest SQNR" in capsys.readouterr().out


def test_a_float_model_that_does_not_fit_is_refused_in_one_line(tmp_path, nchw_data, capsys):
    rc = cli.main(["validate", str(QDQ), "--data", str(nchw_data), "--float-model", str(TFL_FLOAT), "--json",
                   str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "input 'x' has shape (1, 12, 12, 3), the quantized model's 'image' (1, 3, 12, 12)" in err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("model_data, executor, says", [(b"", "tf", "must be one of"),
                                                          (None, "auto", "needs the quantized model as a file")])
def test_an_unknown_float_executor_or_a_model_without_a_file_is_refused(model_data, executor, says):
    with pytest.raises(fe.FloatModelError, match=says):
        fe.LayerErrors(None, model_data, b"", traces=v._traces, executor=executor)
