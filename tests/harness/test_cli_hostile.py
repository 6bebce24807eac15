"""The command line and the harness under hostile use (issue 16 §3, §5, §6): impossible output
paths, a TOML case with half of a multiplier/shift pair, runs racing into the same --out, and a
Ctrl-C that numba's compiler swallows."""
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from dspsim import cli
from dspsim.harness.report import MARKER, atomic_dir, check_replaceable
from dspsim.harness.safe_io import write_marker

TINY_RELU = """
[[case]]
name = "r"
op = "relu"
shape = [7]
"""


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("dspsim: error: "), err
    return err


@pytest.mark.parametrize("where", ["under-a-file", "under-proc"])
def test_export_to_an_impossible_path_exits_2_with_one_line(tmp_path, capsys, where):
    f = tmp_path / "a-file"
    f.write_text("x")
    out = f / "sub" / "out" if where == "under-a-file" else Path("/proc/dspsim-no-such/out")
    assert cli.main(["export", "tf-qint8-mincombined-haz", "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    assert str(out) in err and "cannot write" in err
    assert f.read_text() == "x"


def test_suite_to_an_impossible_path_exits_2_before_running_any_case(tmp_path, capsys):
    f = tmp_path / "a-file"
    f.write_text("x")
    suite = tmp_path / "s.toml"
    suite.write_text(TINY_RELU)
    assert cli.main(["suite", str(suite), "--out", str(f / "rep")]) == 2
    captured = capsys.readouterr()
    assert "[1/1]" not in captured.err and captured.err.count("\n") == 1


@pytest.mark.parametrize("given", ["multiplier = 1073741824", "shift = -1"])
@pytest.mark.parametrize("op", ["relu", "fully_connected"])
def test_toml_case_with_multiplier_and_no_shift_is_refused_naming_the_case(tmp_path, capsys, op, given):
    suite = tmp_path / "s.toml"
    suite.write_text(f'[[case]]\nname = "half"\nop = "{op}"\n{given}\n')
    assert cli.main(["suite", str(suite), "--out", str(tmp_path / "rep")]) == 2
    err = _one_line_error(capsys)
    assert "case 'half'" in err and "multiplier and shift go together" in err
    assert not (tmp_path / "rep").exists()


def test_check_replaceable_never_takes_a_report_being_swapped_in_for_a_foreign_directory(tmp_path):
    """Regression: listing the report being moved aside, then finding the next one at ``out`` before its
    marker was looked up, read as "not written by dspsim" (the race of two runs finishing at once)."""
    out = tmp_path / "rep"
    stop = threading.Event()

    def swap():
        k = 0
        while not stop.is_set():
            new = tmp_path / f"new{k}"
            new.mkdir()
            for name in ("a.txt", "b.txt", "c.txt"):
                (new / name).write_text("x")
            write_marker(new)
            old = tmp_path / f"old{k}"
            if out.exists():
                os.replace(out, old)
            os.replace(new, out)
            shutil.rmtree(old, ignore_errors=True)
            k += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: the old check failed a few times in 20,000 calls
    t = threading.Thread(target=swap)
    t.start()
    try:
        for _ in range(20000):
            check_replaceable(out)
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(interval)


def test_a_report_that_cannot_be_put_in_place_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    import errno

    from dspsim.harness import safe_io

    def busy(tmp, out):
        raise OSError(errno.EBUSY, "keeps being replaced by other runs")

    monkeypatch.setattr(safe_io, "_swap_into_place", busy)
    suite = tmp_path / "s.toml"
    suite.write_text(TINY_RELU)
    assert cli.main(["suite", str(suite), "--out", str(tmp_path / "rep"), "--no-plots"]) == 2
    captured = capsys.readouterr().err
    assert "Traceback" not in captured
    err = captured.strip().splitlines()[-1]
    assert err.startswith("dspsim: error: ") and "cannot put the report in place" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]  # no half-written report, no temporary


def test_runs_finishing_into_the_same_out_at_once_each_leave_a_whole_report(tmp_path):
    out = tmp_path / "rep"
    n_threads, rounds = 6, 15
    errors = []
    barrier = threading.Barrier(n_threads)

    def run(k):
        try:
            for r in range(rounds):
                with atomic_dir(out) as tmp:
                    (tmp / "a.txt").write_text(f"{k}-{r}")
                    (tmp / "b.txt").write_text(f"{k}-{r}")
                    barrier.wait()  # every run finishes at the same moment
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([MARKER, "a.txt", "b.txt"])
    assert (out / "a.txt").read_text() == (out / "b.txt").read_text()  # one run's report, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no temporary left beside it


# A KeyboardInterrupt raised inside numba's object-code callback (what a Ctrl-C that lands during a
# compile does): ctypes swallows it, and numba's cache save then fails with "no compiled object yet".
_SWALLOWED_CTRL_C = textwrap.dedent("""
    import sys
    from numba.core import codegen

    hook = codegen.CPUCodeLibrary._object_compiled_hook.__func__
    fired = []

    def interrupted_hook(cls, ll_module, buf):
        if not fired:
            fired.append(1)
            raise KeyboardInterrupt
        return hook(cls, ll_module, buf)

    codegen.CPUCodeLibrary._object_compiled_hook = classmethod(interrupted_hook)  # before numba's codegen exists
    from dspsim import cli

    code = cli.main(sys.argv[1:])
    print("fired" if fired else "not fired", file=sys.stderr)
    sys.exit(code)
""")


def test_ctrl_c_swallowed_by_a_numba_compile_exits_130_and_keeps_the_previous_report(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text(TINY_RELU)
    out = tmp_path / "rep"
    out.mkdir()
    (out / "results.json").write_text("previous report")
    write_marker(out)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))  # every kernel compiles afresh
    r = subprocess.run([sys.executable, "-c", _SWALLOWED_CTRL_C, "suite", str(suite), "--out", str(out),
                        "--no-plots"], env=env, capture_output=True, text=True, timeout=600)
    assert "fired" in r.stderr.splitlines()[-1], r.stderr
    assert r.returncode == 130, r.stderr
    assert "no compiled object yet" not in r.stdout + r.stderr.split("interrupted")[-1]
    assert (out / "results.json").read_text() == "previous report"
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "results.json"])
