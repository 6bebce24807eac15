"""Issue 31: every failure of the command line has one line and the right exit status (1 only for a mismatch, 2 bad
input, 3 a run that could not finish), and terminal control characters from model strings and file names are
escaped in everything printed."""
import numpy as np
import pytest
from hostile_models import hostile_cnn

from dspsim import cli

MODELS = "tests/golden/models"


def _last_error(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert not any("Traceback" in line for line in err)
    assert err and err[-1].startswith("dspsim: error: "), err
    return err[-1]


def test_an_unexpected_error_is_one_line_and_exit_3(tmp_path, capsys, monkeypatch):
    from dspsim.harness import suite

    def boom(*a, **kw):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(suite, "run_suite", boom)
    s = tmp_path / "s.toml"
    s.write_text('[[case]]\nname = "r"\nop = "relu"\nshape = [3]\n')
    assert cli.main(["suite", str(s), "--out", str(tmp_path / "rep")]) == 3
    err = _last_error(capsys)
    assert "RuntimeError: boom" in err and "second line" not in err
    assert not (tmp_path / "rep").exists()


def test_out_of_memory_is_one_line_and_exit_3(tmp_path, capsys, monkeypatch):
    from dspsim.harness import suite

    def oom(*a, **kw):
        raise MemoryError

    monkeypatch.setattr(suite, "run_suite", oom)
    s = tmp_path / "s.toml"
    s.write_text('[[case]]\nname = "r"\nop = "relu"\nshape = [3]\n')
    assert cli.main(["suite", str(s), "--out", str(tmp_path / "rep")]) == 3
    assert "out of memory" in _last_error(capsys)


def test_nan_in_a_data_set_is_bad_input_exit_2(tmp_path, capsys):
    x = np.load(f"{MODELS}/cnn.npz")["r0/in0"]
    data = np.stack([x[0]] * 2)
    data[1, 0, 0, 0] = np.nan
    np.save(tmp_path / "nan.npy", data)
    assert cli.main(["validate", f"{MODELS}/cnn.tflite", "--data", str(tmp_path / "nan.npy"), "--json",
                     str(tmp_path / "r.json")]) == 2
    assert "NaN" in _last_error(capsys)
    assert not (tmp_path / "r.json").exists()


def test_control_characters_in_a_file_name_are_escaped_in_the_error(tmp_path, capsys):
    bad = tmp_path / "x\x1b[2J\x07\u202e.npy"
    assert cli.main(["compare", str(bad), str(bad), "--json", "-"]) == 2
    err = _last_error(capsys)
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "\\x1b[2J" in err


@pytest.mark.parametrize("verb", ["run", "export-model"])
def test_a_hostile_tensor_name_is_escaped_in_everything_printed(tmp_path, capsys, verb):
    model = tmp_path / "m.tflite"
    model.write_bytes(hostile_cnn())
    np.save(tmp_path / "x.npy", np.load(f"{MODELS}/cnn.npz")["r0/in0"])
    argv = [verb, str(model), "--input", str(tmp_path / "x.npy")]
    if verb == "export-model":
        argv += ["--out", str(tmp_path / "exp")]
    assert cli.main(argv) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err
    if verb == "run":
        assert "\\x1b[2J" in out.out  # the name is there, escaped


def test_diagnose_escapes_a_hostile_name_in_its_verdict(tmp_path, capsys):
    model = tmp_path / "m.tflite"
    model.write_bytes(hostile_cnn())
    x = np.load(f"{MODELS}/cnn.npz")["r0/in0"]
    np.save(tmp_path / "x.npy", x)
    from dspsim.tflite import load_model

    m = load_model(model.read_bytes())
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    value = {e.tensor: e.value for e in m.trace([x])}[11].copy()
    value.flat[0] ^= 1  # the device differs on the hostile tensor
    np.save(dumps / "t11.npy", value)
    assert cli.main(["diagnose", str(model), "--input", str(tmp_path / "x.npy"), "--dumps", str(dumps),
                     "--no-search", "--json", str(tmp_path / "d.json")]) == 1
    out = capsys.readouterr()
    assert "FAIL" in out.out and "\x1b" not in out.out + out.err


@pytest.mark.parametrize("bad", ["a directory", "garbage"])
def test_an_unreadable_file_in_a_data_folder_is_bad_input_naming_it(tmp_path, capsys, bad):
    data = tmp_path / "data"
    data.mkdir()
    x = np.load(f"{MODELS}/cnn.npz")["r0/in0"]
    np.save(data / "a.npy", x[0])
    np.save(data / "b.npy", x[0])
    if bad == "a directory":
        (data / "c.npy").mkdir()
    else:
        (data / "c.npy").write_bytes(b"garbage")
    assert cli.main(["validate", f"{MODELS}/cnn.tflite", "--data", str(data), "--json", "-"]) == 2
    err = _last_error(capsys)
    assert "cannot read c.npy" in err


@pytest.mark.parametrize("fmt", ["hex", "bin", "c-header"])
def test_a_float16_constant_in_export_model_is_one_line_exit_2(tmp_path, capsys, monkeypatch, fmt):
    from dspsim.harness import export_model

    real = export_model._run_tensors

    def with_float16(model, trace):
        rows = real(model, trace)
        info, role, op_index, value = rows[1]
        return [rows[0], (info, role, op_index, value.astype(np.float16)), *rows[2:]]

    monkeypatch.setattr(export_model, "_run_tensors", with_float16)
    np.save(tmp_path / "x.npy", np.load(f"{MODELS}/cnn.npz")["r0/in0"])
    assert cli.main(["export-model", f"{MODELS}/cnn.tflite", "--input", str(tmp_path / "x.npy"), "--format", fmt,
                     "--out", str(tmp_path / "exp")]) == 2
    assert "float16" in _last_error(capsys)
    assert not (tmp_path / "exp").exists()
