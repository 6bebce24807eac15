"""Issue 30 item 2: test-bench-complete exports. Every operator's prepared parameters as numbers and names, in
every format, in files named by operator index, type and tensor, one umbrella header, hex files that say what they
hold (and read back in both styles), a manifest of every file."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hostile_models import hostile_cnn

from dspsim import Requant, cli, load_model as load_any
from dspsim.harness.bench_files import operator_stem, write_arrays
from dspsim.harness.bench_params import bench_params, rounding_rule
from dspsim.harness.export_model import FORMATS, export_model
from dspsim.harness.safe_io import check_name
from dspsim.harness.vectors import c_header, read_array, write_array
from dspsim.kernels import conv2d, depthwise_conv2d
from dspsim.tflite import load_model

GOLDEN = Path(__file__).parents[1] / "golden"
MODELS = GOLDEN / "models"
OPS = GOLDEN / "ops"
LSTM = Path(__file__).parents[3] / "shared" / "models" / "tflite-micro" / "trained_lstm_int8.tflite"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _export(path, tmp_path, fmt, **kw):
    m = load_any(path)
    z = np.load(Path(path).with_suffix(".npz")) if Path(path).with_suffix(".npz").exists() else None
    x = [z[f"r0/in{k}"] for k in range(len(m.inputs))] if z is not None else [
        np.zeros(i.shape, i.dtype) for i in m.inputs]
    out = tmp_path / f"{Path(path).stem}-{fmt}-{kw.get('hex_style', '')}"
    out.mkdir()
    return m, out, export_model(m, x, fmt, out, **kw)


def _same_pads(n, k, s, d):
    """TFLite's ComputePaddingHeightWidth for SAME (the oracle): (before, after)."""
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


@pytest.mark.parametrize("name", ["cnn", "mobilenet"])
def test_exported_conv_parameters_alone_reproduce_the_operator_through_the_kernel(tmp_path, name):
    """A bench that reads only the export (tensors.npz and each operator's .npz: explicit padding, stride,
    dilation, zero points, per-channel multipliers and shifts, the tie rule, the clamp) computes every conv and
    depthwise output bit for bit."""
    m, out, man = _export(MODELS / f"{name}.tflite", tmp_path, "npz")
    t = np.load(out / "tensors.npz")
    checked = 0
    for op in man["operators"]:
        if op["op"] not in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            continue
        p = np.load(out / op["file"])
        x, w, b = (t[f"t{i}"] for i in op["inputs"])
        kw = dict(stride=tuple(p["stride"]), dilation=tuple(p["dilation"]),
                  padding=((int(p["pad_top"]), int(p["pad_bottom"])), (int(p["pad_left"]), int(p["pad_right"]))),
                  input_zero_point=int(p["input_zero_point"]), output_zero_point=int(p["output_zero_point"]),
                  requant=Requant.fixed_point(p["multiplier"], p["shift"], str(p["requant_scheme"]), str(p["tie"])),
                  act_min=int(p["act_min"]), act_max=int(p["act_max"]))
        y = conv2d(x, w, b, **kw) if op["op"] == "CONV_2D" else depthwise_conv2d(
            x, w, b, depth_multiplier=int(p["depth_multiplier"]), **kw)
        assert np.array_equal(y, t[f"t{op['outputs'][0]}"]), op["op_index"]
        assert str(p["op_type"]) == op["op"] and int(p["output0_tensor"]) == op["outputs"][0]
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("path", [MODELS / "cnn.tflite", MODELS / "mobilenet.tflite", OPS / "tconv16.tflite"])
def test_window_operators_carry_the_explicit_padding_of_tflites_same_rule(path):
    m = load_model(path)
    seen = 0
    for k, op in m.operators:
        p = bench_params(m, k)
        if "padding" not in p.names:
            continue
        ins = m.operator_inputs(k)
        s, d = p.numbers["stride"].tolist(), p.numbers["dilation"].tolist() if "dilation" in p.numbers else [1, 1]
        if op == "TRANSPOSE_CONV":
            n_hw, k_hw = p.numbers["output_size"].tolist(), m.tensor_info(ins[1]).shape[1:3]
        elif "filter_size" in p.numbers:
            n_hw, k_hw = m.tensor_info(ins[0]).shape[1:3], p.numbers["filter_size"].tolist()
        else:
            n_hw, k_hw = m.tensor_info(ins[0]).shape[1:3], m.tensor_info(ins[1]).shape[1:3]
        want = [_same_pads(*a) if p.names["padding"] == "SAME" else (0, 0) for a in zip(n_hw, k_hw, s, d)]
        got = [(int(p.numbers["pad_top"]), int(p.numbers["pad_bottom"])),
               (int(p.numbers["pad_left"]), int(p.numbers["pad_right"]))]
        assert got == want, (k, op)
        seen += 1
    assert seen


def _cases():
    yield OPS / "softmax16_beta0.3.tflite", "SOFTMAX", {"exp_lut": ("int16", (513,)), "input_left_shift": ("int32", ())}
    yield OPS / "softmax_1x256_s1_b0.5.tflite", "SOFTMAX", {"input_multiplier": ("int32", ()),
                                                           "diff_min": ("int32", ())}
    yield OPS / "logistic_s2.tflite", "LOGISTIC", {"table": ("int8", (256,))}
    yield OPS / "log_softmax_s2.tflite", "LOG_SOFTMAX", {"reverse_scaling_right_shift": ("int32", ())}
    yield OPS / "hard_swish_s2.tflite", "HARD_SWISH", {"reluish_multiplier_exponent": ("int32", ())}
    yield OPS / "prelu_channel.tflite", "PRELU", {"multiplier_2": ("int32", ())}
    yield OPS / "svdf_int16_state_relu.tflite", "SVDF", {}
    yield OPS / "b2_equal_bool.tflite", "EQUAL", {}  # a parameter named "op": the export's own names stay apart
    yield LSTM, "UNIDIRECTIONAL_SEQUENCE_LSTM", {"input_multiplier": ("int32", (4,)), "cell_clip": ("int32", ())}


@pytest.mark.parametrize("path, op, want", list(_cases()), ids=lambda v: Path(v).stem if isinstance(v, Path) else "")
def test_every_parameter_and_table_is_a_number_or_a_name_never_a_repr(tmp_path, path, op, want):
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    m, out, man = _export(path, tmp_path, "npz")
    entry = next(o for o in man["operators"] if o["op"] == op)
    z = np.load(out / entry["file"])
    prepared = bench_params(m, entry["op_index"])
    assert (entry["params"] or entry["settings"]) and set(entry["params"]) == set(prepared.numbers)
    for name, row in entry["params"].items():
        assert np.dtype(row["dtype"]).kind in "iuf", name
        assert np.array_equal(z[name], prepared.numbers[name]) and z[name].dtype == prepared.numbers[name].dtype
    for name, (dtype, shape) in want.items():
        assert (entry["params"][name]["dtype"], tuple(entry["params"][name]["shape"])) == (dtype, shape), name
    text = json.dumps(man)
    assert not re.search(r"array\(|<[A-Za-z.]+ object|Params\(|Rounding\.", text)  # no Python repr anywhere


def test_the_lookup_tables_are_the_ones_the_kernel_holds():
    m = load_model(OPS / "softmax16_beta0.3.tflite")
    record = m.operator_params(0)["params"]
    p = bench_params(m, 0)
    assert np.array_equal(p.numbers["exp_lut"], record.exp_lut) and p.numbers["exp_lut"].dtype == np.int16
    assert np.array_equal(p.numbers["one_over_one_plus_x_lut"], record.one_over_one_plus_x_lut)
    m = load_model(OPS / "logistic_s2.tflite")  # input (1, 256): every int8 code once, in order
    table = bench_params(m, 0).numbers["table"]
    assert table.dtype == np.int8 and table.shape == (256,)
    assert np.array_equal(m.run([np.arange(-128, 128, dtype=np.int8).reshape(1, 256)])[0].ravel(), table)


def test_the_rounding_rule_is_named_and_the_tie_only_where_the_scheme_uses_one():
    m = load_model(MODELS / "cnn.tflite")
    conv, fc = (bench_params(m, k) for k, op in m.operators if op in ("CONV_2D", "FULLY_CONNECTED"))
    assert conv.names["tie"] == "HALF_AWAY_FROM_ZERO" and "ties half away from zero" in conv.rounding
    assert conv.rounding.startswith("double: MultiplyByQuantizedMultiplier")
    assert "tie" not in fc.names and fc.rounding.startswith("double_scale: std::round")
    assert rounding_rule({"rounding": "single"}).endswith("(ties half up)")
    assert rounding_rule({"padding": "SAME"}) is None


def test_two_parameters_with_one_name_are_refused(monkeypatch):
    m = load_model(MODELS / "cnn.tflite")
    real = m.operator_params(7)
    record = load_model(OPS / "softmax_1x256_s1_b0.5.tflite").operator_params(0)["params"]  # has diff_min
    monkeypatch.setattr(m, "operator_params", lambda k: {**real, "params": record, "diff_min": 3})
    with pytest.raises(ValueError, match=r"bench_params: operator 7 \(RELU\) has two parameters named 'diff_min'"):
        bench_params(m, 7)


def test_operator_files_are_named_by_index_type_and_output_tensor_and_stay_safe():
    m = load_model(MODELS / "cnn.tflite")
    assert operator_stem(m, 1) == "op001_CONV_2D_Relu6_add_Conv2D_add_y1"
    hostile = load_model(hostile_cnn())
    for k, _ in hostile.operators:
        stem = operator_stem(hostile, k)
        assert check_name(stem) == stem and re.fullmatch(r"op\d{3}_[A-Z0-9_]+(_\w{1,48})?", stem), stem


def _hex_files(out):
    return sorted(p for p in out.rglob("*.hex"))


def test_hex_files_say_shape_dtype_layout_and_read_back_in_both_styles(tmp_path, capsys):
    m, plain, man = _export(MODELS / "cnn.tflite", tmp_path, "hex", hex_style="readmemh")
    _, prefixed, man0x = _export(MODELS / "cnn.tflite", tmp_path, "hex", hex_style="0x")
    assert man["hex_style"] == "readmemh" and man0x["hex_style"] == "0x"
    rows = man["tensors"] + [p for o in man["operators"] for p in o["params"].values()]
    assert len(rows) == len(_hex_files(plain)) == len(_hex_files(prefixed))
    for row in rows:
        digits = 2 * np.dtype(row["dtype"]).itemsize
        for out, word in ((plain, rf"[0-9a-f]{{{digits}}}"), (prefixed, rf"0x[0-9a-f]{{{digits}}}")):
            lines = (out / row["file"]).read_text(encoding="ascii").splitlines()
            head = [ln for ln in lines if ln.startswith("//")]
            assert lines[:len(head)] == head and len(head) >= 3  # the comment first, then one word per line
            assert f"shape {tuple(row['shape'])}, {row['dtype']}, layout " in "\n".join(head)
            assert "row-major" in head[-1] and all(re.fullmatch(word, ln) for ln in lines[len(head):])
            got = read_array(out / row["file"], dtype=row["dtype"], shape=row["shape"])
            assert got.shape == tuple(row["shape"])
        a, b = plain / row["file"], prefixed / row["file"]
        assert np.array_equal(read_array(a, dtype=row["dtype"]), read_array(b, dtype=row["dtype"]))
    conv = next(o for o in man["operators"] if o["op"] == "CONV_2D")
    assert cli.main(["compare", str(plain / conv["params"]["shift"]["file"]),  # dtype and shape: the manifest's
                     str(prefixed / conv["params"]["shift"]["file"]), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["checks"][0]["shape"] == [8]


def test_the_manifest_lists_every_file_with_dtype_shape_and_layout(tmp_path):
    m, out, man = _export(MODELS / "mobilenet.tflite", tmp_path, "bin")
    files = {r["file"] for r in man["tensors"]} | {p["file"] for o in man["operators"] for p in o["params"].values()}
    assert files == {p.relative_to(out).as_posix() for p in out.rglob("*.bin")}
    assert all(o["file"] == operator_stem(m, o["op_index"]) + "/" for o in man["operators"])
    layout = {r["tensor"]: r["layout"] for r in man["tensors"]}
    for o in man["operators"]:
        if o["op"] in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            want = ["NHWC", "OHWI" if o["op"] == "CONV_2D" else "1HWC", "O" if o["op"] == "CONV_2D" else "C"]
            assert [layout[i] for i in o["inputs"]] == want and layout[o["outputs"][0]] == "NHWC"
    assert "> 0 a left shift" in man["conventions"]["shift"] and "last axis" in man["conventions"]["element_order"]


def test_an_onnx_convs_tensors_are_nchw_and_oihw(tmp_path):
    m, out, man = _export(GOLDEN / "onnx" / "models" / "cnn_qop_s8s8_pc_op21.onnx", tmp_path, "npz")
    conv = next(o for o in man["operators"] if o["op"] == "QLinearConv")
    layout = {r["tensor"]: r["layout"] for r in man["tensors"]}
    assert (layout[conv["inputs"][0]], layout[conv["inputs"][3]], layout[conv["outputs"][0]]) == ("NCHW", "OIHW",
                                                                                                  "NCHW")
    assert conv["file"] == operator_stem(m, conv["op_index"]) + ".npz" and (out / conv["file"]).exists()


def test_the_cli_writes_0x_hex_that_diagnose_reads_as_dumps(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.load(MODELS / "cnn.npz")["r0/in0"])
    out = tmp_path / "tb"
    model = str(MODELS / "cnn.tflite")
    assert cli.main(["export-model", model, "--input", str(tmp_path / "x.npy"), "--format", "hex", "--hex-style",
                     "0x", "--out", str(out)]) == 0
    words = [ln for ln in (out / "t0.hex").read_text().splitlines() if not ln.startswith("//")]
    assert words and all(w.startswith("0x") for w in words)
    capsys.readouterr()
    assert cli.main(["diagnose", model, "--input", str(tmp_path / "x.npy"), "--dumps", str(out), "--no-search",
                     "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["dumped"] == len(json.loads((out / "manifest.json").read_text())[
        "tensors"])


@needs_gcc
@pytest.mark.parametrize("path", [MODELS / "cnn.tflite", OPS / "softmax16_beta0.3.tflite", OPS / "tconv16.tflite",
                                  OPS / "svdf_int16_state_relu.tflite"], ids=lambda p: p.stem)
def test_the_umbrella_header_includes_every_header_and_compiles_with_werror(tmp_path, path):
    m, out, man = _export(path, tmp_path, "c-header")
    umbrella = (out / "model.h").read_text()
    headers = sorted(p.name for p in out.glob("*.h") if p.name != "model.h")
    assert sorted(re.findall(r'#include "([^"]+)"', umbrella)) == headers
    assert len(headers) == len(man["tensors"]) + len(man["operators"])
    (out / "main.c").write_text('#include "model.h"\n'
                                'int main(void) { return OP000_OUTPUT0_TENSOR + (int)sizeof(OP000_OP_TYPE); }\n')
    r = subprocess.run(["gcc", "-std=c99", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic",
                        "-Wno-unused-const-variable", str(out / "main.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_write_arrays_writes_named_arrays_in_every_format(tmp_path):
    arrays = {"acc": np.arange(-3, 3, dtype=np.int32).reshape(2, 3), "zero_point": np.int32(-5)}
    for fmt in FORMATS:
        files = write_arrays(tmp_path / fmt, "op002_FC_y/stages", arrays, fmt, names={"rule": "double"},
                             comment="stages of operator 2")
        assert set(files) == ({"acc", "zero_point"} if fmt in ("hex", "bin") else {"acc", "zero_point", "rule"})
        if fmt == "npz":
            z = np.load(tmp_path / fmt / files["acc"]["file"])
            assert np.array_equal(z["acc"], arrays["acc"]) and str(z["rule"]) == "double"
        elif fmt == "c-header":
            text = (tmp_path / fmt / files["acc"]["file"]).read_text()
            assert "static const int32_t stages_acc[6]" in text and '#define STAGES_RULE "double"' in text
            assert files["zero_point"]["key"] == "STAGES_ZERO_POINT"
        else:
            got = read_array(tmp_path / fmt / files["acc"]["file"], dtype="int32", shape=(2, 3))
            assert np.array_equal(got, arrays["acc"]) and files["acc"]["key"] is None
    with pytest.raises(ValueError, match="write_arrays: names 'a-b' and 'a_b' both become 'a_b'"):
        write_arrays(tmp_path / "x", "s", {"a-b": np.int32(1), "a_b": np.int32(2)}, "npz")
    with pytest.raises(ValueError, match="write_arrays: file name"):
        write_arrays(tmp_path / "x", "../escape", arrays, "hex")


def test_hex_style_and_includes_are_checked():
    with pytest.raises(ValueError, match="write_array: hex_style must be one of readmemh, 0x"):
        write_array("x.hex", np.zeros(2, np.int8), hex_style="0b")
    with pytest.raises(ValueError, match="c_header: include '../x.h' is not a relative path"):
        c_header("h", {}, {}, includes=["../x.h"])
    m = load_model(MODELS / "cnn.tflite")
    with pytest.raises(ValueError, match="export_model: hex_style must be one of"):
        export_model(m, [np.load(MODELS / "cnn.npz")["r0/in0"]], "hex", Path("."), hex_style="upper")
