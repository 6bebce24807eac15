"""dspsim export-model: every tensor and operator parameter of one run, in every format, with a manifest."""
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dspsim import Accumulator, Requant
from dspsim.harness import diagnose as dg
from dspsim.harness._model_access import constant_tensors, num_tensors, tensor_value
from dspsim.harness.export_model import FORMATS, export_model
from dspsim.harness.vectors import read_array
from dspsim.tflite import load_model

MODELS = Path(__file__).parents[1] / "golden" / "models"


def _run(name, tmp_path, fmt, **kw):
    m = load_model(MODELS / f"{name}.tflite", **kw)
    z = np.load(MODELS / f"{name}.npz")
    x = [z[f"r0/in{k}"] for k in range(len(m.inputs))]
    out = tmp_path / fmt
    out.mkdir()
    return m, x, out, export_model(m, x, fmt, out, model_name=name)


def _read(out, row, fmt):
    """A manifest entry's array, read back from its file."""
    if fmt == "npz":
        return np.load(out / row["file"])[row["key"]]
    return read_array(out / row["file"], dtype=row["dtype"], shape=row["shape"])


@pytest.mark.parametrize("fmt", ["npz", "hex", "bin"])
def test_every_tensor_of_the_run_is_written_and_reads_back_bit_for_bit(tmp_path, fmt):
    m, x, out, man = _run("cnn", tmp_path, fmt)
    trace = {e.tensor: e.value for e in m.trace(x)}
    consts = set(constant_tensors(m))
    assert {r["tensor"] for r in man["tensors"]} == set(trace) | consts
    assert {r["role"] for r in man["tensors"]} == {"input", "constant", "activation"}
    for row in man["tensors"]:
        want = trace.get(row["tensor"])
        if want is None:
            want = tensor_value(m, row["tensor"])
        got = _read(out, row, fmt)
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes(), row
        info = m.tensor_info(row["tensor"])
        assert row["name"] == info.name and row["zero_point"] == info.zero_point


def test_weights_biases_and_every_layer_output_are_in_the_manifest(tmp_path):
    m, x, out, man = _run("mobilenet", tmp_path, "npz")
    by_t = {r["tensor"]: r for r in man["tensors"]}
    for k, name in m.operators:
        ins = m.operator_inputs(k)
        assert by_t[m.outputs_of(k)[0]]["op_index"] == k
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            assert by_t[ins[1]]["role"] == "constant" and by_t[ins[1]]["dtype"] == "int8"  # weights
            assert by_t[ins[2]]["role"] == "constant" and by_t[ins[2]]["dtype"] == "int32"  # bias
    assert man["inputs"] == [i.index for i in m.inputs] and man["schema"] == "dspsim.export-model/1"


@pytest.mark.parametrize("engine", ["litert", "tflm"])
def test_mac_operators_export_the_multiplier_and_shift_their_requantization_derives(tmp_path, engine):
    m, x, out, man = _run("mobilenet", tmp_path, "hex", engine=engine)
    conv = next(o for o in man["operators"] if o["op"] == "CONV_2D")
    raw = m.operator_params(conv["op_index"])
    t = m.tensor_info(m.operator_inputs(conv["op_index"])[1])
    w_scale = np.asarray(m._mdef.tensors[t.index].scale)  # per-channel filter scales of the flatbuffer
    s_in, s_out = (m.tensor_info(i).scale for i in (m.operator_inputs(conv["op_index"])[0],
                                                    m.outputs_of(conv["op_index"])[0]))
    r = Requant.from_scales(s_in, w_scale, s_out, engine="tflm", op="conv")  # both engines' conv derivation
    mult = read_array(out / conv["params"]["multiplier"]["file"], dtype="int32")
    shift = read_array(out / conv["params"]["shift"]["file"], dtype="int32")
    assert mult.tolist() == list(r.multiplier) == raw["multiplier"].tolist() and mult.size == 16
    assert shift.tolist() == list(r.shift) == raw["shift"].tolist()
    assert conv["params"]["output_zero_point"]["value"] == raw["output_zero_point"]
    assert conv["params"]["act_min"]["value"] == raw["act_min"] and conv["settings"]["padding"] == raw["padding"]


def test_params_of_ops_prepared_with_integers_are_exported_as_they_are(tmp_path):
    m, x, out, man = _run("cnn", tmp_path, "npz")
    add = next(o for o in man["operators"] if o["op"] == "ADD")
    raw = m.operator_params(add["op_index"])
    z = np.load(out / add["file"])
    for name in ("input1_multiplier", "input1_shift", "output_multiplier", "left_shift", "output_zero_point"):
        entry = add["params"][name]
        assert int(z[entry["key"]]) == raw[name] == entry["value"]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("name", ["cnn", "mobilenet", "two_inputs"])
def test_c_headers_compile_with_wall_werror_and_hold_the_values(tmp_path, name):
    m, x, out, man = _run(name, tmp_path, "c-header")
    headers = sorted(p.name for p in out.glob("*.h"))
    assert "model.h" in headers and len(headers) == len(man["tensors"]) + len(man["operators"]) + 1
    last = man["tensors"][-1]
    n = int(np.prod(last["shape"]))
    ident = last["key"]
    fmt = "%.9g" if last["dtype"].startswith("float") else "%d"
    cast = "(double)" if last["dtype"].startswith("float") else "(int)"
    src = '#include "model.h"\n' + (
        "#include <stdio.h>\nint main(void) {\n"
        f"    for (int i = 0; i < {n}; ++i) printf(\"{fmt}\\n\", {cast}{ident}[i]);\n"
        "    return 0;\n}\n")
    (out / "main.c").write_text(src)
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-o", str(out / "main"),
                    str(out / "main.c")], check=True, capture_output=True)
    printed = subprocess.run([str(out / "main")], check=True, capture_output=True, text=True).stdout.split()
    want = {e.tensor: e.value for e in m.trace(x)}[last["tensor"]].ravel()
    got = np.array(printed, dtype=np.float64 if fmt == "%.9g" else np.int64)
    assert np.array_equal(got.astype(want.dtype), want)


def test_an_export_made_under_a_variant_is_a_dump_directory_diagnose_reads(tmp_path):
    """export-model under a device's arithmetic writes what that device would dump: diagnose finds
    the variant back (the manifest and constants included)."""
    m, x, out, man = _run("cnn", tmp_path, "hex", accumulator=Accumulator(16, "saturate"))
    r = dg.diagnose(MODELS / "cnn.tflite", x, out,
                    variants=[{"accumulator": Accumulator(16, "saturate")}, {"engine": "xnnpack"}])
    assert r["dumped"] == len(man["tensors"]) <= num_tensors(m)
    assert r["ignored"] == sorted(["manifest.json"] + [o["file"].rstrip("/") for o in man["operators"]])
    assert r["first_divergence"]["op"] == "CONV_2D" and r["reproduced_by"] == ["accumulator=16,saturate"]


def test_unknown_format_is_refused():
    m = load_model(MODELS / "cnn.tflite")
    with pytest.raises(ValueError, match="format must be one of"):
        export_model(m, [np.load(MODELS / "cnn.npz")["r0/in0"]], "xml", Path("."))
    assert FORMATS == ("npz", "c-header", "hex", "bin")


def test_manifest_is_valid_json_with_one_entry_per_file(tmp_path):
    m, x, out, man = _run("branches", tmp_path, "bin")
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk == json.loads(json.dumps(man))
    files = {r["file"] for r in man["tensors"]} | {p["file"] for o in man["operators"] for p in o["params"].values()}
    assert files == {str(p.relative_to(out)) for p in out.rglob("*.bin")}
