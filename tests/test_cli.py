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
    assert {c["op"] for c in data["cases"]} == {"tf_quantize", "affine_quantize", "pof2_quantize", "relu",
                                                "fully_connected", "conv2d", "depthwise_conv2d"}
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


def test_bench_missing_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dspsim.bench", None)
    monkeypatch.delattr("dspsim.bench", raising=False)
    assert cli.main(["bench"]) == 2
    assert "dspsim/bench.py" in _one_line_error(capsys)


def test_no_command_prints_help_and_status_2(capsys):
    assert cli.main([]) == 2
    assert "suite" in capsys.readouterr().out


def test_run_tflite_forwards_its_arguments_when_the_importer_exists(monkeypatch):
    seen = {}
    fake = types.ModuleType("dspsim.tflite")
    fake.cli_main = lambda argv: seen.setdefault("argv", argv) and 0
    monkeypatch.setitem(sys.modules, "dspsim.tflite", fake)
    monkeypatch.setattr("dspsim.tflite", fake, raising=False)
    monkeypatch.setattr(cli, "_tflite_available", lambda: True)
    assert cli.main(["run-tflite", "model.tflite", "--out", "x"]) == 0
    assert seen["argv"] == ["model.tflite", "--out", "x"]


def test_run_tflite_is_not_offered_without_the_importer(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_tflite_available", lambda: False)
    assert cli.main(["run-tflite", "m.tflite"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_out_must_not_be_a_directory_dspsim_did_not_write(tiny, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert cli.main(["suite", str(tiny), "--out", str(tmp_path)]) == 2
    assert "refusing to replace" in _one_line_error(capsys)
    assert (tmp_path / "notes.txt").exists()
