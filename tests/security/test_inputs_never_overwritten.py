"""Issue 31: no input is ever deleted or overwritten. ``--out`` / ``--json`` that is or holds an input is refused
before any work; a folder dspsim wrote is replaced only while it holds nothing else; ``run --out`` checks as the
other verbs do; an ``--out`` that is a symlink is refused; the ``--json`` temporary has no predictable name."""
import os
from pathlib import Path

import numpy as np
import pytest

from dspsim import cli
from dspsim.harness import report

MODELS = Path(__file__).parents[1] / "golden" / "models"


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("dspsim: error: "), err
    return err


def _snapshot(d: Path) -> dict:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture()
def arrays(tmp_path):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, np.arange(6, dtype=np.int8))
    np.save(b, np.arange(6, dtype=np.int8))
    return a, b


@pytest.mark.parametrize("which", ["expected", "actual"])
def test_compare_json_onto_an_input_is_refused(arrays, capsys, which):
    a, b = arrays
    target = a if which == "expected" else b
    before = target.read_bytes()
    assert cli.main(["compare", str(a), str(b), "--json", str(target)]) == 2
    assert "is the input" in _one_line_error(capsys)
    assert target.read_bytes() == before


def test_compare_out_holding_its_inputs_in_an_earlier_dspsim_export_is_refused(tmp_path, capsys):
    exp = tmp_path / "exp"
    assert cli.main(["export", "relu-int8", "--out", str(exp)]) in (0, 1)
    capsys.readouterr()
    before = _snapshot(exp)
    (f,) = [p for p in exp.iterdir() if p.suffix == ".npz"]
    assert cli.main(["compare", str(f), str(f), "--out", str(exp), "--no-plots"]) == 2
    assert "holds the input" in _one_line_error(capsys)
    assert _snapshot(exp) == before


def test_diagnose_out_onto_its_dump_folder_is_refused(tmp_path, capsys):
    x = np.load(MODELS / "cnn.npz")["r0/in0"]
    np.save(tmp_path / "x.npy", x)
    exp = tmp_path / "exp"
    model = str(MODELS / "cnn.tflite")
    assert cli.main(["export-model", model, "--input", str(tmp_path / "x.npy"), "--format", "hex",
                     "--out", str(exp)]) == 0
    capsys.readouterr()
    before = _snapshot(exp)
    assert cli.main(["diagnose", model, "--input", str(tmp_path / "x.npy"), "--dumps", str(exp), "--no-search",
                     "--out", str(exp), "--no-plots"]) == 2
    assert "is the input" in _one_line_error(capsys)
    assert _snapshot(exp) == before


def test_export_model_out_holding_the_model_is_refused(tmp_path, capsys):
    from dspsim.harness import safe_io

    model = tmp_path / "m.tflite"
    model.write_bytes((MODELS / "cnn.tflite").read_bytes())
    np.save(tmp_path / "x.npy", np.load(MODELS / "cnn.npz")["r0/in0"])
    safe_io.write_marker(tmp_path)  # even a folder that says dspsim wrote it
    assert cli.main(["export-model", str(model), "--input", str(tmp_path / "x.npy"), "--out", str(tmp_path)]) == 2
    assert "holds the input" in _one_line_error(capsys)
    assert model.read_bytes() == (MODELS / "cnn.tflite").read_bytes()


def test_a_dspsim_folder_with_a_file_dspsim_did_not_write_is_not_replaced(tmp_path, capsys):
    suite = tmp_path / "s.toml"
    suite.write_text('[[case]]\nname = "r"\nop = "relu"\nshape = [3]\n')
    out = tmp_path / "rep"
    assert cli.main(["suite", str(suite), "--out", str(out), "--no-plots"]) == 0
    capsys.readouterr()
    (out / "my-notes.txt").write_text("mine")
    assert cli.main(["suite", str(suite), "--out", str(out), "--no-plots"]) == 2
    assert "my-notes.txt" in _one_line_error(capsys)
    assert (out / "my-notes.txt").read_text() == "mine"
    (out / "my-notes.txt").unlink()
    (out / "summary.md").write_text("edited by hand")  # a file dspsim wrote, changed since
    assert cli.main(["suite", str(suite), "--out", str(out), "--no-plots"]) == 2
    assert "summary.md" in _one_line_error(capsys)
    (out / "summary.md").unlink()  # a file dspsim wrote, removed: nothing foreign left
    assert cli.main(["suite", str(suite), "--out", str(out), "--no-plots"]) == 0


def test_an_out_that_is_a_symlink_is_refused_up_front(tmp_path, capsys):
    suite = tmp_path / "s.toml"
    suite.write_text('[[case]]\nname = "r"\nop = "relu"\nshape = [3]\n')
    real = tmp_path / "real"
    assert cli.main(["suite", str(suite), "--out", str(real), "--no-plots"]) == 0
    capsys.readouterr()
    before = _snapshot(real)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert cli.main(["suite", str(suite), "--out", str(link), "--no-plots"]) == 2
    assert "symbolic link" in _one_line_error(capsys)
    assert link.is_symlink() and _snapshot(real) == before


def _run_model_args(tmp_path, out):
    np.save(tmp_path / "x.npy", np.load(MODELS / "cnn.npz")["r0/in0"])
    return ["run", str(MODELS / "cnn.tflite"), "--input", str(tmp_path / "x.npy"), "--out", str(out)]


def test_run_out_is_checked_as_every_verb_checks_it(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.json").write_text("my own report")
    assert cli.main(_run_model_args(tmp_path, mine)) == 2
    assert "not written by dspsim" in _one_line_error(capsys)
    assert sorted(p.name for p in mine.iterdir()) == ["report.json"]
    assert (mine / "report.json").read_text() == "my own report"


def test_run_out_is_written_whole_and_replaceable(tmp_path, capsys):
    from dspsim.harness.report import MARKER

    out = tmp_path / "run"
    assert cli.main(_run_model_args(tmp_path, out)) == 0
    assert cli.main(_run_model_args(tmp_path, out)) == 0  # its own report: replaced
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "report.json", "report.md", "trace.npz"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "x.npy"]


def test_the_json_temporary_has_no_predictable_name(tmp_path, monkeypatch):
    import tempfile

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = tmp_path / "results.json"
    for name in (f".{target.name}.tmp-{os.getpid()}", f".{target.name}.tmp"):  # names an attacker could plant
        (tmp_path / name).symlink_to(victim)
    created = []
    real_mkstemp = tempfile.mkstemp
    monkeypatch.setattr(tempfile, "mkstemp", lambda **kw: created.append(kw) or real_mkstemp(**kw))
    report.write_json_file({"a": 1}, target)
    assert victim.read_text() == "precious"
    assert target.read_text().strip().startswith("{") and not target.is_symlink()
    assert created and created[0]["dir"] == target.parent  # O_EXCL, a random name, beside the target


def test_a_json_target_that_is_a_symlink_is_refused(arrays, tmp_path, capsys):
    a, b = arrays
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "out.json"
    link.symlink_to(victim)
    assert cli.main(["compare", str(a), str(b), "--json", str(link)]) == 2
    assert "symbolic link" in _one_line_error(capsys)
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("marker", ["fifo", "symlink", "directory", "garbage", "old text"])
def test_a_folder_whose_marker_is_not_dspsims_is_kept_without_hanging(tmp_path, capsys, marker):
    from dspsim.harness.report import MARKER

    suite = tmp_path / "s.toml"
    suite.write_text('[[case]]\nname = "r"\nop = "relu"\nshape = [3]\n')
    out = tmp_path / "rep"
    out.mkdir()
    (out / "precious.txt").write_text("keep")
    m = out / MARKER
    if marker == "fifo":
        os.mkfifo(m)
    elif marker == "symlink":
        m.symlink_to(tmp_path / "s.toml")
    elif marker == "directory":
        m.mkdir()
    else:
        m.write_bytes(b"\xff\x00{" if marker == "garbage" else b"written by dspsim\n")
    assert cli.main(["suite", str(suite), "--out", str(out), "--no-plots"]) == 2
    assert "refusing to replace" in _one_line_error(capsys)
    assert (out / "precious.txt").read_text() == "keep"


def test_bench_out_and_json_are_checked_before_any_timing(tmp_path, capsys, monkeypatch):
    import importlib

    bench_run = importlib.import_module("dspsim.bench.run")  # (the package's ``run`` is the function)

    def no_timing(*a, **kw):
        raise AssertionError("timed before checking --out")

    monkeypatch.setattr(bench_run, "run", no_timing)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "bench.json").write_text("my own numbers")
    with pytest.raises(SystemExit) as exc:
        bench_run.main(["--quick", "--out", str(mine)])
    assert exc.value.code == 2 and "not written by dspsim" in capsys.readouterr().err
    assert (mine / "bench.json").read_text() == "my own numbers"
    link = tmp_path / "b.json"
    link.symlink_to(mine / "bench.json")
    with pytest.raises(SystemExit) as exc:
        bench_run.main(["--quick", "--out", str(tmp_path / "new"), "--json", str(link)])
    assert exc.value.code == 2 and "symbolic link" in capsys.readouterr().err
    assert (mine / "bench.json").read_text() == "my own numbers"
