"""Issue 30 item 4: no silent wrong answers. An input of the right size but another layout is refused (never
reshaped); --compare-litert on a model LiteRT refuses says so in one line; the hex variants test benches write
are read (0x, @ addresses, comments, packed words), with a line number for a bad line and no more values than the
tensor holds; compare takes dtype and shape from an export's manifest."""
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from dspsim import cli
from dspsim.harness import run_model
from dspsim.harness.compare import compare_files
from dspsim.harness.vectors import HexLayout, VectorError, read_array, write_array
from dspsim.tflite import load_model

MODELS = Path(__file__).parents[1] / "golden" / "models"
MOBILENET = MODELS / "mobilenet.tflite"  # input (1, 32, 32, 3) int8


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("dspsim: error: "), err
    return err


def _image(shape=(1, 32, 32, 3)):
    return np.random.default_rng(0).integers(-128, 128, shape, dtype=np.int8)


# ------------------------------------------------------------------------------- (a) the input's layout
@pytest.mark.parametrize("verb", ["export-model", "diagnose"])
def test_an_input_of_the_right_size_but_another_layout_is_refused_with_both_shapes(tmp_path, capsys, verb):
    x = tmp_path / "x_nchw.npy"
    np.save(x, np.ascontiguousarray(_image().transpose(0, 3, 1, 2)))  # (1, 3, 32, 32): 3,072 values, as the input
    (tmp_path / "dumps").mkdir()
    extra = ["--dumps", str(tmp_path / "dumps")] if verb == "diagnose" else []
    out = tmp_path / "out"
    assert cli.main([verb, str(MOBILENET), "--input", str(x), *extra, "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    assert "(1, 3, 32, 32)" in err and "(1, 32, 32, 3)" in err and "--input 0" in err
    assert not out.exists()


def test_run_refuses_an_input_of_another_layout_too(tmp_path, capsys):
    x = tmp_path / "x.npy"
    np.save(x, np.ascontiguousarray(_image().transpose(0, 3, 1, 2)))
    assert cli.main(["run", str(MOBILENET), "--input", str(x)]) == 2
    err = _one_line_error(capsys)
    assert "(1, 3, 32, 32)" in err and "(1, 32, 32, 3)" in err


def test_an_input_without_its_unit_axes_or_flat_is_still_read(tmp_path, capsys):
    img = _image()
    m = load_model(MOBILENET)
    want = m.run(img)[0]
    for k, a in enumerate((img[0], img.reshape(-1), img.reshape(1, 1, 32, 32, 3))):
        p = tmp_path / f"x{k}.npy"
        np.save(p, a)
        out = tmp_path / f"out{k}"
        assert cli.main(["export-model", str(MOBILENET), "--input", str(p), "--out", str(out)]) == 0, a.shape
        t = m.outputs[0].index
        assert np.array_equal(np.load(out / "tensors.npz")[f"t{t}"], want)


def test_a_dump_of_another_layout_is_refused(tmp_path):
    p = write_array(tmp_path / "t.npy", np.zeros((1, 3, 8, 8), np.int8))
    with pytest.raises(VectorError, match=r"shape \(1, 3, 8, 8\), but the tensor's shape is \(1, 8, 8, 3\)"):
        read_array(p, shape=(1, 8, 8, 3))
    assert read_array(p, shape=(3, 8, 8)).shape == (3, 8, 8)


# ------------------------------------------------------------------------------- (b) LiteRT refuses the model
def test_compare_litert_on_a_model_litert_refuses_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    class Refusing:
        def __init__(self, kind, *a, **kw):
            raise RuntimeError("tensorflow/lite/kernels/svdf.cc:168 params->activation != kTfLiteActRelu (1 != 0)\n"
                               "Node number 0 (SVDF) failed to prepare.")

    monkeypatch.setitem(sys.modules, "ai_edge_litert", types.ModuleType("ai_edge_litert"))
    monkeypatch.setattr(run_model, "Interpreter", Refusing)
    x = tmp_path / "x.npy"
    np.save(x, _image())
    assert cli.main(["run", str(MOBILENET), "--input", str(x), "--compare-litert"]) == 2
    err = _one_line_error(capsys)
    assert "LiteRT's reference kernels refuse the model" in err and "svdf.cc:168" in err


# ------------------------------------------------------------------------------- (c) hex as test benches write it
def _hex(tmp_path, text, name="v.hex"):
    p = tmp_path / name
    p.write_text(text, encoding="ascii")
    return p


def test_hex_with_0x_prefixes_comments_and_addresses(tmp_path):
    text = ("// tensor 3, int8, shape (2, 3)\n"
            "# a shell-style header\n"
            "/* a block\n   comment */ 0x01 0XfF\n"
            "@3 7f  // value 3 on\n"
            "@2 0x80 /* the gap */\n"
            "@4 0_2 03\n")
    assert read_array(_hex(tmp_path, text), "int8", (2, 3)).tolist() == [[1, -1, -128], [127, 2, 3]]


@pytest.mark.parametrize("order, words, want", [
    ("lsb", ["04030201", "0807ff05"], [1, 2, 3, 4, 5, -1, 7, 8]),
    ("msb", ["01020304", "05ff0708"], [1, 2, 3, 4, 5, -1, 7, 8]),
])
def test_packed_words_in_either_lane_order(tmp_path, order, words, want):
    p = _hex(tmp_path, "\n".join(words) + "\n")
    assert read_array(p, "int8", (8,), hex_layout=HexLayout(4, order)).tolist() == want


def test_packed_words_address_in_words_and_a_last_padded_word(tmp_path):
    p = _hex(tmp_path, "@1 00000009\n@0 0000ff01\n")  # 6 int16 values, 2 per word, the last word padded
    assert read_array(p, "int16", (3,), hex_layout=HexLayout(2)).tolist() == [-255, 0, 9]
    p = _hex(tmp_path, "0001ffff\n00000003\n", "i16.hex")  # int16 pairs: lane 0 low
    assert read_array(p, "int16", (2, 2), hex_layout=HexLayout(2)).tolist() == [[-1, 1], [3, 0]]


@pytest.mark.parametrize("text, message", [
    ("01\n02\nzz\n", r"v.hex:3: bad hex 'zz'"),
    ("01\n@\n", r"v.hex:2: bad address record '@'"),
    ("01\n@g1\n", r"v.hex:2: bad address record '@g1'"),
    ("01\n100\n", r"v.hex:2: bad hex '100': wider than 8 bits"),
    ("01 02 03 04\n05\n", r"v.hex:2: more values than the 4 the tensor holds"),
    ("@9 01\n", r"v.hex:1: address '@9' is past the end"),
    ("01\n@3 04\n", r"value 1 is never written"),
    ("01 02\n@1 05\n", r"v.hex:2: value 1 is written twice"),
    ("0x\n", r"v.hex:1: bad hex '0x'"),
])
def test_a_malformed_hex_line_is_named_by_its_number(tmp_path, text, message):
    with pytest.raises(VectorError, match=message):
        read_array(_hex(tmp_path, text), "int8", (4,))


def test_a_hex_file_is_read_no_further_than_the_tensor(tmp_path):
    p = tmp_path / "big.hex"
    with open(p, "w", encoding="ascii") as f:
        f.write("00\n" * 100_000)
    with pytest.raises(VectorError, match=r"big.hex:17: more values than the 16"):
        read_array(p, "int8", (16,))
    p.write_text("// header\n" * 100_000, encoding="ascii")
    with pytest.raises(VectorError, match=r"more than 4160 lines"):
        read_array(p, "int8", (16,))
    p.write_text("0" * 200_000, encoding="ascii")
    with pytest.raises(VectorError, match=r"big.hex:1: line longer than"):
        read_array(p, "int8", (16,))


def test_bad_pack_is_refused():
    for bad in (0, 65, True, 1.5):
        with pytest.raises(ValueError, match="pack must be an integer"):
            HexLayout(bad)
    with pytest.raises(ValueError, match="order must be"):
        HexLayout(2, "big")


def test_compare_and_diagnose_read_packed_hex_with_pack(tmp_path, capsys):
    img = _image()
    x = tmp_path / "x.npy"
    np.save(x, img)
    tb = tmp_path / "tb"
    assert cli.main(["export-model", str(MOBILENET), "--input", str(x), "--format", "npz", "--out", str(tb)]) == 0
    m = load_model(MOBILENET)
    t = m.outputs[0].index
    want = np.load(tb / "tensors.npz")[f"t{t}"]
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    u = want.reshape(-1).view(np.uint8).astype(np.uint64)
    u = np.concatenate([u, np.zeros(-u.size % 4, np.uint64)]).reshape(-1, 4)
    words = (u[:, 0] << 24) | (u[:, 1] << 16) | (u[:, 2] << 8) | u[:, 3]  # lane 0 in the top byte: msb order
    (dumps / f"t{t}.hex").write_text("".join(f"0x{int(w):08x}\n" for w in words), encoding="ascii")
    np.save(tmp_path / "want.npy", want)
    assert cli.main(["compare", str(tmp_path / "want.npy"), str(dumps / f"t{t}.hex"), "--pack", "4",
                     "--pack-order", "msb", "--out", str(tmp_path / "c")]) == 0
    assert cli.main(["diagnose", str(MOBILENET), "--input", str(x), "--dumps", str(dumps), "--pack", "4",
                     "--pack-order", "msb", "--no-search", "--out", str(tmp_path / "d")]) == 0
    capsys.readouterr()
    # read in the other lane order, the last word's padding lands in lanes the tensor has no room for
    assert cli.main(["compare", str(tmp_path / "want.npy"), str(dumps / f"t{t}.hex"), "--pack", "4",
                     "--out", str(tmp_path / "c2")]) == 2
    assert "more values than the 10 the tensor holds" in _one_line_error(capsys)
    assert cli.main(["compare", str(tmp_path / "want.npy"), str(dumps / f"t{t}.hex"), "--pack", "0",
                     "--out", str(tmp_path / "c3")]) == 2
    assert "pack must be" in _one_line_error(capsys)


# ------------------------------------------------------------------------------- (d) compare reads the manifest
@pytest.mark.parametrize("fmt", ["hex", "bin"])
def test_readme_compare_example_takes_dtype_and_shape_from_the_manifest(tmp_path, capsys, monkeypatch, fmt):
    """The README's example, as written: `dspsim compare tb/t18.hex dumps/t18.bin`, no --dtype or --shape."""
    monkeypatch.chdir(tmp_path)
    x = tmp_path / "x.npy"
    np.save(x, _image())
    assert cli.main(["export-model", str(MOBILENET), "--input", "x.npy", "--format", fmt, "--out", "tb"]) == 0
    t = load_model(MOBILENET).outputs[0].index
    want = read_array(tmp_path / "tb" / f"t{t}.{fmt}", "int8", None)
    Path("dumps").mkdir()
    write_array(Path("dumps") / f"t{t}.bin", want)
    capsys.readouterr()
    assert cli.main(["compare", f"tb/t{t}.{fmt}", f"dumps/t{t}.bin", "--out", "cmp"]) == 0
    out = capsys.readouterr().out
    assert "0 / 10 mismatches" in out and "manifest.json" in out
    bad = want.copy()
    bad[3] += 1
    write_array(Path("dumps") / f"t{t}.bin", bad)
    assert cli.main(["compare", f"tb/t{t}.{fmt}", f"dumps/t{t}.bin", "--out", "cmp2"]) == 1
    assert "first at (0, 3)" in capsys.readouterr().out  # shaped as the tensor, (1, 10)
    # either side may be the export's; a parameter file in an operator's folder too
    assert cli.main(["compare", f"dumps/t{t}.bin", f"tb/t{t}.{fmt}", "--json", "-"]) == 1
    capsys.readouterr()
    params = sorted((tmp_path / "tb").glob(f"op*/*.{fmt}"))
    r = compare_files(params[0], params[0])
    assert r["passed"] and any("manifest.json" in n for n in r["notes"])


def test_a_raw_file_outside_an_export_still_needs_a_dtype(tmp_path):
    write_array(tmp_path / "a.bin", np.zeros(4, np.int8))
    with pytest.raises(VectorError, match="has no dtype; give --dtype"):
        compare_files(tmp_path / "a.bin", tmp_path / "a.bin")


def test_against_interpreter_on_a_model_the_interpreter_refuses_is_one_line_and_exit_2(tmp_path, capsys,
                                                                                         monkeypatch):
    fake = tmp_path / "python"  # imports anything; its interpreter worker refuses the model as LiteRT does
    fake.write_text("#!/bin/sh\nif [ \"$1\" = \"-c\" ]; then exit 0; fi\n"
                    "echo 'Traceback (most recent call last):' >&2\n"
                    "echo 'RuntimeError: Node number 0 (SVDF) failed to prepare.' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("DSPSIM_INTERPRETER_PYTHON", str(fake))
    np.save(tmp_path / "x.npy", _image((2, 1, 32, 32, 3)))
    assert cli.main(["validate", str(MOBILENET), "--data", str(tmp_path / "x.npy"), "--against-interpreter",
                     "litert", "--json", str(tmp_path / "r.json")]) == 2
    err = _one_line_error(capsys)
    assert "the litert interpreter failed (exit 1): RuntimeError: Node number 0 (SVDF) failed to prepare." in err


def test_bin_and_txt_files_larger_than_the_tensor_are_refused(tmp_path):
    """A .bin is refused by its size before it is read; a .txt is read in chunks and refused at the first value
    beyond the tensor (padding whitespace costs nothing: the reader's memory is bounded by the chunk)."""
    p = write_array(tmp_path / "v.bin", np.zeros(17, np.int8))
    with pytest.raises(VectorError, match=r"17 bytes: 17 values of int8, more than the 16 the tensor holds"):
        read_array(p, "int8", (16,))
    assert read_array(p, "int8", (17,)).shape == (17,)
    p = tmp_path / "v.txt"
    p.write_text(" " * 10_000 + "1\n", encoding="ascii")
    assert read_array(p, "int8", (1,)).tolist() == [1]
    p.write_text(" ".join(["1"] * 17), encoding="ascii")
    with pytest.raises(VectorError, match=r"more than the 16 values the tensor holds"):
        read_array(p, "int8", (16,))
