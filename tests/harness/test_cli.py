"""The command line: exit codes, one-line errors, reports written atomically, export and compare."""
import json
import sys
import types

import numpy as np
import pytest

from dspsim import cli

TINY = """
[suite]
name = "tiny"

[[case]]
name = "fc-ties"
op = "fully_connected"
batch = 2
in_features = 8
out_features = 4
multiplier = 1073741824
shift = -1
input_range = [-8, 8]
weight_range = [-8, 8]

[[case]]
name = "q"
op = "affine_quantize"
convention = "onnx"
shape = [13]
"""


@pytest.fixture
def tiny(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("dspsim: error: ")
    return err


def test_suite_from_toml_writes_report_and_progress(tiny, tmp_path, capsys):
    out = tmp_path / "rep"
    assert cli.main(["suite", str(tiny), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "[1/2] PASS  fc-ties" in captured.err and "[2/2] PASS  q" in captured.err
    assert "PASS: 2 cases" in captured.out
    assert {p.name for p in out.iterdir()} >= {"summary.md", "results.json"}
    data = json.loads((out / "results.json").read_text())
    assert data["run"]["name"] == "tiny" and data["summary"]["mismatches"] == 0
    assert data["run"]["argv"][:2] == ["dspsim", "suite"]


def test_suite_exits_1_when_a_bit_exactness_check_fails(tmp_path, capsys):
    x = np.arange(-8, 8, dtype=np.int8)
    np.savez(tmp_path / "dump.npz", input=x, expected=np.maximum(x, 0) + np.int8(1))
    (tmp_path / "s.toml").write_text('[[case]]\nop = "relu"\nvectors = "dump.npz"\nmultiplier = 1073741824\nshift = 1')
    assert cli.main(["suite", str(tmp_path / "s.toml"), "--out", str(tmp_path / "r"), "--no-plots"]) == 1
    assert "FAIL" in capsys.readouterr().out
    assert "## Failures" in (tmp_path / "r" / "summary.md").read_text()


@pytest.mark.parametrize("text", ["[[case]\n", '[[case]]\nop = "winograd"', '[[case]]\nop = "relu"\nfoo = 1'])
def test_bad_suite_file_is_a_one_line_error_with_status_2(tmp_path, capsys, text):
    (tmp_path / "bad.toml").write_text(text)
    assert cli.main(["suite", str(tmp_path / "bad.toml"), "--out", str(tmp_path / "r")]) == 2
    _one_line_error(capsys)
    assert not (tmp_path / "r").exists()


def test_missing_suite_file_is_status_2(tmp_path, capsys):
    assert cli.main(["suite", str(tmp_path / "none.toml")]) == 2
    assert "no such file" in _one_line_error(capsys)


def test_corrupt_vector_file_in_suite_is_status_2(tmp_path, capsys):
    (tmp_path / "v.npz").write_bytes(b"garbage")
    (tmp_path / "s.toml").write_text('[[case]]\nop = "relu"\nvectors = "v.npz"')
    assert cli.main(["suite", str(tmp_path / "s.toml")]) == 2
    assert "v.npz" in _one_line_error(capsys)


def test_interrupted_suite_leaves_no_report(tiny, tmp_path, monkeypatch, capsys):
    import dspsim.harness.suite as suite

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(suite, "run_case", boom)
    out = tmp_path / "r"
    assert cli.main(["suite", str(tiny), "--out", str(out)]) == 130
    assert not out.exists() and list(tmp_path.iterdir()) == [tiny]


def test_suite_list_and_case_filter(capsys):
    assert cli.main(["suite", "--list", "--case", "fc-ties"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names and all("fc-ties" in n for n in names)


def test_quick_default_suite_passes(tmp_path, capsys):
    out = tmp_path / "quick"
    assert cli.main(["suite", "--quick", "--out", str(out)]) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["summary"]["errors"] == 0 and data["summary"]["mismatches"] == 0
    from dspsim.harness.ops import vocabulary

    assert {c["op"] for c in data["cases"]} == set(vocabulary())  # every operator, the quick suite included
    assert (out / "error_vs_scheme.png").stat().st_size > 0


def test_drift_writes_findings_and_plots(tmp_path, capsys):
    out = tmp_path / "drift"
    assert cli.main(["drift", "--cycles", "3", "--depth", "2", "--out", str(out)]) == 0
    md = (out / "summary.md").read_text()
    assert "## Findings" in md and "fixed_dq_requested" in md
    assert (out / "drift_cycles.png").exists() and (out / "drift_depth.png").exists()
    assert cli.main(["drift", "--cycles", "0"]) == 2


def test_export_npz_and_c_header(tmp_path, capsys):
    out = tmp_path / "vec"
    assert cli.main(["export", "fc-ties-pow2", "relu-int8", "--format", "c-header", "--out", str(out)]) == 0
    h = (out / "fc_ties_pow2.h").read_text()
    assert "static const int8_t fc_ties_pow2_input[256]" in h and "fc_ties_pow2_output[64]" in h
    assert "#define FC_TIES_POW2_SCHEME \"double\"" in h
    out2 = tmp_path / "vec2"
    assert cli.main(["export", "conv-valid", "--out", str(out2)]) == 0
    z = np.load(out2 / "conv-valid.npz")
    assert z["output"].shape == (1, 6, 6, 8) and int(z["input_zero_point"]) == -1


def test_export_unknown_case_is_status_2(capsys):
    assert cli.main(["export", "no-such-case"]) == 2
    assert "no case named" in _one_line_error(capsys)


def test_compare_identical_and_mismatching_files(tmp_path, capsys):
    a = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    b = a.copy()
    b[2, 1] += 2
    np.savez(tmp_path / "sim.npz", output=a, extra=a)
    np.save(tmp_path / "dev.npy", b)
    np.save(tmp_path / "same.npy", a)
    assert cli.main(["compare", str(tmp_path / "sim.npz"), str(tmp_path / "same.npy"), "--key", "output",
                     "--out", str(tmp_path / "c1")]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(tmp_path / "sim.npz"), str(tmp_path / "dev.npy"), "--key", "output",
                     "--out", str(tmp_path / "c2")]) == 1
    out = capsys.readouterr().out
    assert "1 / 12 mismatches, first at (2, 1)" in out and "FAIL" in out
    data = json.loads((tmp_path / "c2" / "results.json").read_text())
    assert data["checks"][0]["histogram"] == {"2": 1} and not data["passed"]
    assert (tmp_path / "c2" / "mismatch_histograms.png").exists()


def test_compare_npz_pairs_arrays_by_name_and_flags_missing_ones(tmp_path, capsys):
    np.savez(tmp_path / "a.npz", out=np.zeros(3, np.int8), acc=np.zeros(3, np.int32))
    np.savez(tmp_path / "b.npz", out=np.zeros(3, np.int8))
    assert cli.main(["compare", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--out", str(tmp_path / "c")]) == 1
    assert "`acc` only in expected" in capsys.readouterr().out


@pytest.mark.parametrize("content", [None, b"not an npz"])
def test_compare_missing_or_corrupt_file_is_status_2(tmp_path, capsys, content):
    np.save(tmp_path / "a.npy", np.zeros(2))
    bad = tmp_path / "b.npz"
    if content is not None:
        bad.write_bytes(content)
    assert cli.main(["compare", str(tmp_path / "a.npy"), str(bad)]) == 2
    _one_line_error(capsys)


def test_bench_forwards_its_arguments(monkeypatch):
    seen = {}
    fake = types.ModuleType("dspsim.bench")
    fake.main = lambda argv: seen.setdefault("argv", argv) and 0
    monkeypatch.setitem(sys.modules, "dspsim.bench", fake)
    monkeypatch.setattr("dspsim.bench", fake, raising=False)
    assert cli.main(["bench", "--quick", "--no-peers"]) == 0
    assert seen["argv"] == ["--quick", "--no-peers"]


def test_no_command_prints_help_and_status_2(capsys):
    assert cli.main([]) == 2
    assert "suite" in capsys.readouterr().out


@pytest.mark.parametrize("verb", ["run", "run-tflite"])
def test_run_and_its_old_name_forward_their_arguments(monkeypatch, verb):
    import dspsim.harness.run_model

    seen = {}
    monkeypatch.setattr(dspsim.harness.run_model, "main", lambda argv: seen.setdefault("argv", argv) and 0)
    assert cli.main([verb, "model.tflite", "--out", "x"]) == 0
    assert seen["argv"] == ["model.tflite", "--out", "x"]


def test_out_must_not_be_a_directory_dspsim_did_not_write(tiny, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert cli.main(["suite", str(tiny), "--out", str(tmp_path)]) == 2
    assert "refusing to replace" in _one_line_error(capsys)
    assert (tmp_path / "notes.txt").exists()


# --------------------------------------------------------------------------- diagnose, export-model
GOLDEN = __import__("pathlib").Path(__file__).parents[1] / "golden"


def _tflm_case(name):
    case = GOLDEN / "dumps" / name
    return str(GOLDEN / "models" / f"{name}.tflite"), str(case / "input0.npy"), case / "tflm"


def test_diagnose_real_tflm_dumps_json_to_stdout_names_the_fc_and_tflm(capsys):
    model, x, dumps = _tflm_case("cnn_half")
    assert cli.main(["diagnose", model, "--input", x, "--dumps", str(dumps), "--json", "-"]) == 1
    captured = capsys.readouterr()
    d = json.loads(captured.out)  # stdout is the JSON alone; the summary went to stderr
    assert d["schema"] == "dspsim.diagnose/2"
    f = d["first_divergence"]
    assert (f["op_index"], f["op"], f["tensor"], f["mismatches"], f["max_abs_diff"]) == (9, "FULLY_CONNECTED", 18, 1, 1)
    assert d["reproduced_by"][0] == "engine=tflm" and isinstance(d["layers"], list)
    assert "first divergence at op 9 FULLY_CONNECTED" in captured.err


def test_diagnose_reproduced_by_words_pass_back_as_variant_and_then_match(tmp_path, capsys):
    model, x, dumps = _tflm_case("cnn_half")
    out = tmp_path / "rep"
    assert cli.main(["diagnose", model, "--input", x, "--dumps", str(dumps), "--variant", "engine=tflm",
                     "--out", str(out)]) == 0
    assert "PASS: all 11 dumped tensors match `engine=tflm`" in capsys.readouterr().out
    data = json.loads((out / "results.json").read_text())
    assert data["passed"] and data["first_divergence"] is None
    assert "Every dumped tensor matches" in (out / "summary.md").read_text()


def test_diagnose_report_directory_and_json_file(tmp_path, capsys):
    model, x, dumps = _tflm_case("cnn_half")
    out, js = tmp_path / "rep", tmp_path / "d.json"
    assert cli.main(["diagnose", model, "--input", x, "--dumps", str(dumps), "--out", str(out), "--json", str(js)]) == 1
    md = (out / "summary.md").read_text()
    assert "First divergence: operator 9 FULLY_CONNECTED" in md and "**Reproduced by:** `engine=tflm`" in md
    assert (out / "mismatch_histograms.png").stat().st_size > 0
    assert json.loads(js.read_text())["first_divergence"]["tensor"] == 18
    assert "reproduced by: engine=tflm" in capsys.readouterr().out


def _bad_dump(d, case):
    if case == "wrong_size":
        (d / "t12.bin").write_bytes(b"\0" * 31)
    elif case == "bad_hex":
        (d / "t12.hex").write_text("00\n" * 31 + "0g\n")
    elif case == "unknown_name":
        np.save(d / "layer3_out.npy", np.zeros(32, np.int8))
    elif case == "unreadable":
        (d / "t12.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")


@pytest.mark.parametrize("case", ["wrong_size", "bad_hex", "unknown_name", "unreadable"])
def test_diagnose_bad_dumps_exit_2_with_one_line_and_no_report(tmp_path, capsys, case):
    model, x, dumps = _tflm_case("cnn")
    d = tmp_path / "dumps"
    __import__("shutil").copytree(dumps, d)
    _bad_dump(d, case)
    out = tmp_path / "rep"
    assert cli.main(["diagnose", model, "--input", x, "--dumps", str(d), "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    assert "t12" in err or "layer3_out" in err
    assert not out.exists()


@pytest.mark.parametrize("argv", [["--variant", "accumulator=99,wrap"], ["--variant", "speed=fast"],
                                  ["--engine", "tflite"]])
def test_diagnose_bad_options_exit_2(tmp_path, capsys, argv):
    model, x, dumps = _tflm_case("cnn")
    assert cli.main(["diagnose", model, "--input", x, "--dumps", str(dumps), "--out", str(tmp_path / "r"), *argv]) == 2
    assert not (tmp_path / "r").exists()


def test_diagnose_missing_input_or_dumps_exit_2(tmp_path, capsys):
    model, x, dumps = _tflm_case("cnn")
    assert cli.main(["diagnose", model, "--input", str(tmp_path / "none.npy"), "--dumps", str(dumps),
                     "--json", str(tmp_path / "j")]) == 2
    assert "no such file" in _one_line_error(capsys)
    assert cli.main(["diagnose", model, "--input", x, "--dumps", str(tmp_path / "nodir"),
                     "--json", str(tmp_path / "j")]) == 2
    assert "no such directory" in _one_line_error(capsys)
    assert not (tmp_path / "j").exists()


def test_interrupted_diagnose_leaves_no_report_and_no_json(tmp_path, monkeypatch, capsys):
    import dspsim.harness.diagnose as dg

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(dg, "search_variants", boom)
    model, x, dumps = _tflm_case("cnn_half")
    js, out = tmp_path / "d.json", tmp_path / "rep"
    js.write_text("old")
    assert cli.main(["diagnose", model, "--input", x, "--dumps", str(dumps), "--out", str(out),
                     "--json", str(js)]) == 130
    assert not out.exists() and js.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json"]


def test_export_model_writes_vectors_and_manifest_then_diagnose_reads_them(tmp_path, capsys):
    model, x, _ = _tflm_case("cnn")
    out = tmp_path / "vec"
    assert cli.main(["export-model", model, "--input", x, "--format", "bin", "--variant", "accumulator=16,saturate",
                     "--out", str(out)]) == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["engine"] == "engine=litert accumulator=16,saturate" and man["format"] == "bin"
    assert all((out / r["file"]).exists() for r in man["tensors"])
    capsys.readouterr()
    assert cli.main(["diagnose", model, "--input", x, "--dumps", str(out), "--json", "-"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert "accumulator=16,saturate" in d["reproduced_by"]
    ops = [o["file"].rstrip("/") for o in man["operators"]]  # each operator's parameters: a folder of .bin files
    assert d["ignored"] == sorted([".dspsim-output", "manifest.json"] + ops)


def test_export_model_bad_input_exit_2_and_writes_nothing(tmp_path, capsys):
    model, _, _ = _tflm_case("cnn")
    np.save(tmp_path / "x.npy", np.zeros((1, 8, 8, 3), np.int8))  # the model takes float32
    out = tmp_path / "vec"
    assert cli.main(["export-model", model, "--input", str(tmp_path / "x.npy"), "--out", str(out)]) == 2
    assert "float32" in _one_line_error(capsys) and not out.exists()


# --------------------------------------------------------------------------- compare: formats and failures
def test_compare_raw_dumps_take_dtype_and_shape_and_flat_dumps_are_reshaped(tmp_path, capsys):
    from dspsim.harness.vectors import write_array

    a = np.arange(-12, 12, dtype=np.int8).reshape(2, 3, 4)
    np.save(tmp_path / "exp.npy", a)
    for fmt in ("bin", "hex", "txt"):
        write_array(tmp_path / f"dev.{fmt}", a.ravel())
        assert cli.main(["compare", str(tmp_path / "exp.npy"), str(tmp_path / f"dev.{fmt}"), "--json", "-"]) == 0
        assert json.loads(capsys.readouterr().out)["checks"][0]["shape"] == [2, 3, 4]
    b = a.copy()
    b[1, 2, 3] = 0
    write_array(tmp_path / "dev.hex", b.ravel())
    assert cli.main(["compare", str(tmp_path / "dev.hex"), str(tmp_path / "dev.bin"), "--dtype", "int8",
                     "--shape", "2,3,4", "--json", "-"]) == 1
    c = json.loads(capsys.readouterr().out)["checks"][0]
    assert c["first_index"] == [1, 2, 3] and c["mismatches"] == 1
    np.save(tmp_path / "flat.npy", a.ravel())
    assert cli.main(["compare", str(tmp_path / "exp.npy"), str(tmp_path / "flat.npy"), "--json", "-"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert any("reshaped" in n for n in d["notes"])


def test_compare_reports_a_dtype_difference_between_equal_values(tmp_path, capsys):
    a = np.arange(-5, 5, dtype=np.int8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", a.astype(np.int32))
    assert cli.main(["compare", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--out", str(tmp_path / "c")]) == 0
    assert "note: `a`: dtypes differ: expected int8, actual int32; the values are equal" in capsys.readouterr().out
    assert json.loads((tmp_path / "c" / "results.json").read_text())["notes"]


@pytest.mark.parametrize("setup", ["key_missing_in_npz", "npz_names_disjoint", "raw_without_dtype", "raw_wrong_size"])
def test_compare_fails_with_status_2_when_the_named_array_is_missing(tmp_path, capsys, setup):
    np.savez(tmp_path / "a.npz", output=np.zeros(4, np.int8))
    if setup == "key_missing_in_npz":
        np.savez(tmp_path / "b.npz", out=np.zeros(4, np.int8), output_q=np.zeros(4, np.int8))
        argv = [str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--key", "output"]
    elif setup == "npz_names_disjoint":
        np.savez(tmp_path / "b.npz", result=np.zeros(4, np.int8))
        argv = [str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]
    elif setup == "raw_without_dtype":
        (tmp_path / "b.bin").write_bytes(b"\0" * 4)
        (tmp_path / "c.bin").write_bytes(b"\0" * 4)
        argv = [str(tmp_path / "b.bin"), str(tmp_path / "c.bin")]
    else:
        (tmp_path / "b.bin").write_bytes(b"\0" * 5)
        argv = [str(tmp_path / "a.npz"), str(tmp_path / "b.bin"), "--key", "output"]
    assert cli.main(["compare", *argv, "--json", "-"]) == 2
    err = _one_line_error(capsys)
    assert {"key_missing_in_npz": "no array named 'output'", "npz_names_disjoint": "no array names in common",
            "raw_without_dtype": "--dtype", "raw_wrong_size": "5 values"}[setup] in err


def test_compare_mismatched_layouts_of_equal_size_are_not_silently_reshaped(tmp_path, capsys):
    a = np.arange(16, dtype=np.int8).reshape(4, 4)
    np.save(tmp_path / "a.npy", a.reshape(2, 8))
    np.save(tmp_path / "b.npy", a)
    assert cli.main(["compare", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--json", "-"]) == 1
    assert "shapes differ" in json.loads(capsys.readouterr().out)["problems"][0]
