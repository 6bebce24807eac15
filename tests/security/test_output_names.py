"""Issue 31: nothing is written outside the output folder. A suite or case name that could leave it (``../``, an
absolute path, ``/``, over 255 bytes, hidden, an option) is refused when the suite is read, one line, exit 2."""
import pytest

from dspsim import cli
from dspsim.harness.suite import SuiteError, load_suite

BAD_NAMES = ["../escape", "../../../../tmp/dspsim-escape", "/tmp/dspsim-abs", "a/b", "a\\b", "x" * 256,
             "\u00e9" * 130, ".hidden", "..", "-rf", "two words", "new\nline", "", "nul\x00"]


def _toml(suite_name=None, case_name="r"):
    head = "" if suite_name is None else f"[suite]\nname = {_q(suite_name)}\n"
    return head + f"[[case]]\nname = {_q(case_name)}\nop = \"relu\"\nshape = [3]\n"


def _q(s):
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" for c in s) + '"'


@pytest.mark.parametrize("bad", BAD_NAMES)
@pytest.mark.parametrize("where", ["suite", "case"])
def test_load_suite_refuses_a_name_that_is_not_a_safe_file_name(tmp_path, bad, where):
    p = tmp_path / "s.toml"
    p.write_text(_toml(suite_name=bad) if where == "suite" else _toml(case_name=bad), encoding="utf-8")
    with pytest.raises(SuiteError, match=f"{where} name .* (not a safe file name|characters long)"):
        load_suite(p)


@pytest.mark.parametrize("bad", ["../escape", "/tmp/dspsim-abs-name", "a/b"])
@pytest.mark.parametrize("verb", ["suite", "export"])
def test_suite_and_export_write_nothing_outside_for_a_hostile_name(tmp_path, capsys, monkeypatch, bad, verb):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    p = work / "s.toml"
    p.write_text(_toml(suite_name=bad if verb == "suite" else None, case_name=bad if verb == "export" else "r"))
    argv = ["suite", str(p), "--no-plots"] if verb == "suite" else ["export", bad, "--suite", str(p)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dspsim: error: ") and len(err.splitlines()) == 1 and "not a safe file name" in err
    assert sorted(x.name for x in tmp_path.rglob("*")) == ["s.toml", "work"]  # not even reports/


def test_a_suite_file_with_an_unsafe_stem_gets_a_safe_name(tmp_path):
    p = tmp_path / "my suite (v2).toml"
    p.write_text(_toml())
    name, cases = load_suite(p)
    assert name == "my_suite__v2_"


def test_every_name_of_the_built_in_suite_is_safe():
    from dspsim.harness import safe_io
    from dspsim.harness.default_suite import default_suite

    for c in default_suite():
        safe_io.check_name(c.name, "case name")


def test_export_npz_stems_are_checked_even_for_cases_made_in_python():
    from dspsim.harness.vectors import export_stems

    with pytest.raises(ValueError, match="export: case name '../x' is not a safe file name"):
        export_stems(["ok", "../x"], "npz")
    with pytest.raises(ValueError, match="both become"):
        export_stems(["Case", "case"], "npz")  # one file on a case-insensitive file system
