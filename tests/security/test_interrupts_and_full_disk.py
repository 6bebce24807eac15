"""Issue 31: interrupts and full disks lose nothing. Replacing a report is one atomic exchange (the old report or
the new one is at ``--out`` at every moment); SIGTERM cleans up as Ctrl-C does; a full disk gives one line that
says so, a non-zero exit status, and no empty or half report; validate's outputs are not memory-mapped."""
import errno
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from dspsim import cli
from dspsim.harness.report import MARKER, atomic_dir

TINY = '[[case]]\nname = "r"\nop = "relu"\nshape = [3]\n'


def _previous_report(out: Path) -> None:
    out.mkdir()
    (out / "results.json").write_text("previous report")
    (out / MARKER).write_text('{"marker": "dspsim-output/1", "files": {"results.json": 15}}\n')


def test_the_report_at_out_is_never_missing_while_it_is_replaced(tmp_path):
    try:
        from dspsim.harness import safe_io
    except ImportError:  # (before issue 31)
        safe_io = None
    if safe_io is not None and safe_io._RENAMEAT2 is None:
        pytest.skip("no renameat2(RENAME_EXCHANGE) on this system: the swap holds signals back instead")
    out = tmp_path / "rep"
    with atomic_dir(out) as tmp:
        (tmp / "a.txt").write_text("0")
    stop, missing = threading.Event(), []

    def watch():
        while not stop.is_set():
            if not (out / "a.txt").exists():
                missing.append(1)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    t = threading.Thread(target=watch)
    t.start()
    try:
        for k in range(300):
            with atomic_dir(out) as tmp:
                (tmp / "a.txt").write_text(str(k))
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(interval)
    assert not missing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("previous", [False, True])
def test_a_full_disk_while_writing_the_report_gives_one_line_and_no_half_report(tmp_path, capsys, monkeypatch,
                                                                                 previous):
    suite = tmp_path / "s.toml"
    suite.write_text(TINY)
    out = tmp_path / "rep"
    if previous:
        _previous_report(out)
    real_write = Path.write_text

    def write_text(self, *a, **kw):  # results.json goes in, then summary.md finds the disk full
        if self.name == "summary.md":
            _enospc()
        return real_write(self, *a, **kw)

    monkeypatch.setattr(Path, "write_text", write_text)
    code = cli.main(["suite", str(suite), "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code not in (0, 1, 2) and code == cli.EXIT_ERROR
    assert err[-1].startswith("dspsim: error: ") and "no space left on device" in err[-1].lower()
    assert not any("Traceback" in line for line in err)
    if previous:
        assert (out / "results.json").read_text() == "previous report"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "s.toml"]
    else:
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]  # no empty report, no temporary


def test_a_full_disk_while_writing_json_keeps_the_previous_file(tmp_path, capsys, monkeypatch):
    a = tmp_path / "a.npy"
    np.save(a, np.arange(4, dtype=np.int8))
    target = tmp_path / "r.json"
    target.write_text("previous")
    monkeypatch.setattr(Path, "write_text", _enospc)
    monkeypatch.setattr(os, "fsync", _enospc)  # where a full disk shows when the data reach it
    code = cli.main(["compare", str(a), str(a), "--json", str(target)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_ERROR and "no space left on device" in err[-1].lower() and len(err) == 1
    assert target.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "r.json"]


_SIGTERM_WHILE_WRITING = textwrap.dedent("""
    import os, signal, sys
    from dspsim import cli
    from dspsim.harness import report

    real = report._dump_json

    def dump_then_sigterm(d, path):
        real(d, path)
        os.kill(os.getpid(), signal.SIGTERM)  # lands while the new report is half written

    report._dump_json = dump_then_sigterm
    sys.exit(cli.main(sys.argv[1:]))
""")


def test_sigterm_while_the_report_is_written_keeps_the_old_report_and_no_temporary(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text(TINY)
    out = tmp_path / "rep"
    _previous_report(out)
    r = subprocess.run([sys.executable, "-c", _SIGTERM_WHILE_WRITING, "suite", str(suite), "--out", str(out),
                        "--no-plots"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 143, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines()[-1].startswith("dspsim: error: terminated")
    assert (out / "results.json").read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "s.toml"]


def test_atomic_dir_removes_its_temporary_on_sigterm_outside_the_cli(tmp_path):
    out = tmp_path / "rep"
    code = textwrap.dedent(f"""
        import os, signal, time
        from dspsim.harness.report import atomic_dir
        with atomic_dir({str(out)!r}) as tmp:
            (tmp / "a.txt").write_text("new")
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert list(tmp_path.iterdir()) == []


def test_validate_outputs_are_written_without_a_memory_map(tmp_path, monkeypatch):
    """A page of a memory-mapped file that cannot be backed on a full disk ends the process with SIGBUS."""
    from dspsim.harness import validate as v

    real_memmap, real_open_memmap = np.memmap, np.lib.format.open_memmap

    def refuse_writable(real, default):
        def mapped(filename, *a, **kw):
            mode = kw.get("mode", a[1] if real is np.memmap and len(a) > 1 else a[0] if a else default)
            if mode not in ("r", "c", "readonly", "copyonwrite"):
                raise AssertionError(f"validate memory-maps an output file ({filename}, mode {mode})")
            return real(filename, *a, **kw)
        return mapped

    monkeypatch.setattr(np, "memmap", refuse_writable(real_memmap, "r+"))
    monkeypatch.setattr(np.lib.format, "open_memmap", refuse_writable(real_open_memmap, "r+"))
    models = Path(__file__).parents[1] / "golden" / "models"
    x = np.stack([np.load(models / "cnn.npz")["r0/in0"][0]] * 3)
    np.save(tmp_path / "data.npy", x)
    outs = tmp_path / "outs"
    outs.mkdir()
    d = v.validate(models / "cnn.tflite", tmp_path / "data.npy", chunk=2, outputs_dir=outs)
    got = np.load(outs / "output_0.npy")
    assert got.shape[0] == 3 and d["samples"] == 3
    from dspsim.tflite import load_model

    m = load_model(models / "cnn.tflite")
    for k in range(3):
        np.testing.assert_array_equal(got[k], m.run([x[k:k + 1]])[0])


class _FillsUp:
    """A file whose disk is full once its first bytes (the .npy header) are written."""

    def __init__(self, f):
        self.f = f

    def write(self, b):
        if self.f.tell() > 0:
            _enospc()
        return self.f.write(b)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def test_validate_on_a_full_disk_gives_one_line_and_no_report(tmp_path, capsys, monkeypatch):
    """(A memory-mapped output would not fail here: its pages fail later, with SIGBUS.)"""
    from dspsim.harness import validate as v

    def full_open(path, mode="r", *a, **kw):
        f = open(path, mode, *a, **kw)
        return _FillsUp(f) if "output_" in str(path) else f

    monkeypatch.setattr(v, "open", full_open, raising=False)
    models = Path(__file__).parents[1] / "golden" / "models"
    np.save(tmp_path / "data.npy", np.stack([np.load(models / "cnn.npz")["r0/in0"][0]] * 3))
    out = tmp_path / "rep"
    code = cli.main(["validate", str(models / "cnn.tflite"), "--data", str(tmp_path / "data.npy"), "--chunk", "2",
                     "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_ERROR, err
    assert err[-1].startswith("dspsim: error: ") and "no space left on device" in err[-1].lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.npy"]


@pytest.mark.parametrize("exchange", [True, False])
def test_a_foreign_folder_that_appears_at_out_during_the_run_is_kept(tmp_path, monkeypatch, exchange):
    """The folder at ``out`` is judged again once it is out of the way: one that is not dspsim's goes back."""
    from dspsim.harness import safe_io

    if exchange and safe_io._RENAMEAT2 is None:
        pytest.skip("no renameat2(RENAME_EXCHANGE) on this system")
    if not exchange:
        monkeypatch.setattr(safe_io, "_RENAMEAT2", None)
    out = tmp_path / "rep"
    with atomic_dir(out) as tmp:
        (tmp / "x.txt").write_text("1")
    with pytest.raises(ValueError, match="holds what dspsim did not write"):
        with atomic_dir(out) as tmp:
            (tmp / "x.txt").write_text("2")
            (out / "mine.txt").write_text("mine")  # someone else's file lands in the report meanwhile
    assert (out / "mine.txt").read_text() == "mine" and (out / "x.txt").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


def test_without_an_atomic_exchange_runs_racing_into_one_out_each_leave_a_whole_report(tmp_path, monkeypatch):
    from dspsim.harness import safe_io

    monkeypatch.setattr(safe_io, "_RENAMEAT2", None)  # the two-rename path of systems without RENAME_EXCHANGE
    out = tmp_path / "rep"
    errors, barrier = [], threading.Barrier(6)

    def run(k):
        try:
            for r in range(15):
                with atomic_dir(out) as tmp:
                    (tmp / "a.txt").write_text(f"{k}-{r}")
                    (tmp / "b.txt").write_text(f"{k}-{r}")
                    barrier.wait()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert (out / "a.txt").read_text() == (out / "b.txt").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
