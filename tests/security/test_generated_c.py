"""Issue 31: generated C is always valid and inert. A tensor, operator or case name never leaves a comment or a
string literal, identifiers are plain ASCII, and two names that would become one identifier or one header are
refused rather than merged."""
import shutil
import subprocess

import numpy as np
import pytest
from hostile_models import HOSTILE_NAME, hostile_cnn

from dspsim import cli
from dspsim.harness.export_model import export_model
from dspsim.harness import vectors
from dspsim.harness.vectors import c_header, c_identifier
from dspsim.tflite import load_model

CC = shutil.which("gcc") or shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")

HOSTILE = ['*/ #error pwned /*', 'a"b\\c', "line\nbreak", "tab\tand\x1b[2J", "caf\u00e9 \u202e", "??/", "\\",
           "x*/", "/*", "\x00nul", ""]


def _compile(tmp_path, headers: dict) -> None:
    """Write ``headers`` (name -> text) and compile a file that includes them all, warnings as errors."""
    for name, text in headers.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    main = tmp_path / "main.c"
    main.write_text("".join(f'#include "{n}"\n' for n in headers) + "int main(void) { return 0; }\n")
    r = subprocess.run([CC, "-std=c99", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-Wno-unused-const-variable",
                        "-trigraphs", "-I", str(tmp_path), str(main)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _inert(text: str) -> None:
    """Printable ASCII only, and no preprocessor line but dspsim's own."""
    assert all(" " <= c <= "~" for line in text.splitlines() for c in line), text
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            assert line.split()[0] in ("#ifndef", "#define", "#include", "#endif"), line


@needs_cc
def test_export_model_headers_of_a_model_with_a_hostile_tensor_name_compile_and_stay_inert(tmp_path):
    m = load_model(hostile_cnn())
    assert m.tensor_info(11).name.encode() == HOSTILE_NAME
    x = np.load("tests/golden/models/cnn.npz")["r0/in0"]
    out = tmp_path / "exp"
    out.mkdir()
    export_model(m, [x], "c-header", out, model_name=HOSTILE_NAME.decode())
    headers = {p.name: p.read_text(encoding="utf-8") for p in sorted(out.glob("*.h"))}
    assert "t11.h" in headers
    for text in headers.values():
        _inert(text)
    assert "pwned" in headers["t11.h"]  # the name is there, inside the comment
    _compile(out, headers)


@needs_cc
@pytest.mark.parametrize("name", HOSTILE)
def test_c_header_keeps_any_name_inside_its_comment_and_string(tmp_path, name):
    text = c_header(name, {"input": np.arange(5, dtype=np.int8)}, {"label": name, "zero_point": -1},
                    comment=f"case {name}: {name}", generator=f"dspsim {name}")
    _inert(text)
    _compile(tmp_path, {"h.h": text})


@needs_cc
def test_a_string_constant_reads_back_as_its_utf8_bytes(tmp_path):
    name = 'a"b\\c\n\x1b\u00e9??/'
    prog = tmp_path / "p.c"
    prog.write_text(f'#include <stdio.h>\nint main(void) {{ fputs({vectors.c_string(name)}, stdout); return 0; }}\n')
    exe = tmp_path / "p"
    subprocess.run([CC, "-std=c99", "-trigraphs", "-o", str(exe), str(prog)], check=True)
    assert subprocess.run([str(exe)], capture_output=True).stdout == name.encode("utf-8")


def test_comment_text_and_identifiers_are_plain_ascii():
    assert c_identifier("caf\u00e9-\u00e0") == "caf___"
    assert c_identifier("9lives") == "v9lives" and c_identifier("") == "v"
    for name in HOSTILE:
        t = vectors.c_comment(name)
        assert "*/" not in t and "/*" not in t and all(" " <= c <= "~" for c in t)


@pytest.mark.parametrize("arrays, constants", [
    ({"fc-a": np.zeros(2, np.int8), "fc_a": np.zeros(2, np.int8)}, {}),   # one identifier
    ({"w": np.zeros(2, np.int8), "W": np.zeros(2, np.int8)}, {}),         # one macro
    ({"a": np.zeros(2, np.int8)}, {"a_size": 3}),                         # a constant named like a size macro
    ({}, {"zero-point": 1, "zero_point": 2}),
])
def test_c_header_refuses_two_names_that_become_one(arrays, constants):
    with pytest.raises(ValueError, match=r"c_header: .* both become"):
        c_header("case", arrays, constants)


def test_export_refuses_two_cases_that_would_share_one_header(tmp_path, capsys):
    suite = tmp_path / "s.toml"
    suite.write_text('[[case]]\nname = "fc-a"\nop = "relu"\nshape = [3]\n'
                     '[[case]]\nname = "fc_a"\nop = "relu"\nshape = [3]\n')
    out = tmp_path / "exp"
    assert cli.main(["export", "fc-a", "fc_a", "--suite", str(suite), "--format", "c-header", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dspsim: error: ") and len(err.splitlines()) == 1
    assert "'fc-a' and 'fc_a' both become 'fc_a'" in err
    assert not out.exists()


def test_export_model_refuses_two_parameters_that_become_one_file(tmp_path, monkeypatch):
    m = load_model(hostile_cnn())
    x = np.load("tests/golden/models/cnn.npz")["r0/in0"]
    real = m.operator_params
    monkeypatch.setattr(m, "operator_params", lambda k: {**real(k), "zp-a": 1, "zp_a": 2} if k == 1 else real(k))
    out = tmp_path / "exp"
    out.mkdir()
    with pytest.raises(ValueError, match="export_model: operator 1's parameters .* both become 'zp_a'"):
        export_model(m, [x], "hex", out)


@needs_cc
def test_exported_headers_compile_together(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text("".join(f'[[case]]\nname = "{n}"\nop = "relu"\nshape = [3]\n' for n in ("a", "a_input", "b")))
    out = tmp_path / "exp"
    assert cli.main(["export", "a", "a_input", "b", "--suite", str(suite), "--format", "c-header", "--out",
                     str(out)]) == 0
    _compile(tmp_path, {p.name: p.read_text() for p in sorted(out.glob("*.h"))})


def test_an_export_whose_headers_would_define_one_name_twice_is_refused(tmp_path, capsys, monkeypatch):
    real = vectors.c_header

    def clashing(name, *a, **kw):  # case "b" defines a macro of case "a" (names from a future op's constants)
        text = real(name, *a, **kw)
        return text.replace("#endif", "#define A_SEED 1\n#endif", 1) if name == "b" else text

    monkeypatch.setattr(vectors, "c_header", clashing)
    suite = tmp_path / "s.toml"
    suite.write_text("".join(f'[[case]]\nname = "{n}"\nop = "relu"\nshape = [3]\n' for n in ("a", "b")))
    out = tmp_path / "exp"
    assert cli.main(["export", "a", "b", "--suite", str(suite), "--format", "c-header", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "cases 'a' and 'b' both define A_SEED" in err[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]
