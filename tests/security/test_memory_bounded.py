"""Issue 31: memory is bounded by the real work, not by what a file claims. A header, a zip directory or a shape
that claims more than the file holds, a file that is not a regular file, a text dump longer than its tensor: each
is refused with a ValueError naming the function and the rule before the memory is touched, and the command line
says so in one line with exit status 2."""
import ast
import contextlib
import os
import resource
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dspsim import _io, cli
from dspsim.harness.dumps import load_dumps
from dspsim.harness.vectors import VectorError, load_vectors, read_array
from dspsim.tflite import load_model

MODELS = Path(__file__).parents[1] / "golden" / "models"
TIB = 1 << 40


def _npy_header(shape, descr="<i8") -> bytes:
    """A version 1.0 ``.npy`` header claiming ``shape`` (no data follows)."""
    head = repr({"descr": descr, "fortran_order": False, "shape": tuple(shape)}).encode()
    head += b" " * (63 - (10 + len(head)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head


def _npz(path, members: dict, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


# ----------------------------------------------------------------------------------------------- .npy
@pytest.mark.parametrize("shape, rule", [((TIB // 8,), "claims 1099511627776 bytes"),
                                         ((1 << 32, 1 << 32), "claims 147573952589676412928 bytes")],
                         ids=["terabyte", "product_wraps_64_bits"])
def test_a_npy_header_claiming_more_than_the_file_is_refused_before_reading(tmp_path, shape, rule):
    p = tmp_path / "big.npy"
    p.write_bytes(_npy_header(shape) + b"\0" * 64)
    with pytest.raises(VectorError, match=rule):
        read_array(p)
    with pytest.raises(VectorError, match=rule):
        load_vectors(p)
    with pytest.raises(ValueError, match=f"load_npy: .*{rule}"):
        _io.load_npy(p, "load_npy", mmap=True)


def test_a_data_set_whose_header_claims_a_terabyte_is_one_line_exit_2(tmp_path, capsys):
    p = tmp_path / "big.npy"
    p.write_bytes(_npy_header((TIB // 192, 8, 8, 3), "|i1"))
    assert cli.main(["validate", str(MODELS / "cnn.tflite"), "--data", str(p), "--json", "-"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "claims" in err[0] and "the file holds 0" in err[0]


def test_a_npy_of_python_objects_is_refused(tmp_path):
    p = tmp_path / "obj.npy"
    p.write_bytes(_npy_header((1,), "|O") + b"\0" * 8)
    with pytest.raises(ValueError, match="load_npy: .*Python objects"):
        _io.load_npy(p, "load_npy")


# ----------------------------------------------------------------------------------------------- .npz
def test_a_npz_member_whose_header_claims_more_than_the_zip_directory_is_refused(tmp_path):
    p = _npz(tmp_path / "lie.npz", {"x.npy": _npy_header((TIB // 8,)) + b"\0" * 64})
    with pytest.raises(VectorError, match="claims 1099511627776 bytes .* the zip directory 64"):
        load_vectors(p)


def test_a_npz_that_inflates_beyond_the_limit_is_refused_from_its_directory(tmp_path, monkeypatch):
    a = np.zeros(1 << 21, np.int8)  # 2 MiB of zeros deflate to 2 KiB
    p = tmp_path / "bomb.npz"
    np.savez_compressed(p, a=a, b=a)
    assert p.stat().st_size < 1 << 14
    monkeypatch.setattr(_io, "MAX_INFLATED", 3 << 20)
    with pytest.raises(VectorError, match=r"inflate to \d+ bytes \(zip directory\), more than the 3145728"):
        load_vectors(p)
    monkeypatch.setattr(_io, "MAX_INFLATED", 5 << 20)
    assert np.array_equal(load_vectors(p)["a"], a)


def test_npz_members_that_share_compressed_data_are_a_zip_bomb(tmp_path):
    p = _npz(tmp_path / "one.npz", {"a.npy": _npy_header((0,))})
    data = bytearray(p.read_bytes())
    # a second central directory entry pointing at the first member's local header (an overlapping zip bomb)
    cd = data.index(b"PK\x01\x02")
    end = data.index(b"PK\x05\x06")
    entry = bytes(data[cd:end]).replace(b"a.npy", b"b.npy")
    eocd = bytearray(data[end:])
    eocd[8:10] = eocd[10:12] = (2).to_bytes(2, "little")
    eocd[12:16] = (2 * len(entry)).to_bytes(4, "little")
    p.write_bytes(bytes(data[:end]) + entry + bytes(eocd))
    with pytest.raises(VectorError, match="share compressed data"):
        load_vectors(p)


def test_a_qtensor_archive_inflating_a_claimed_terabyte_is_refused(tmp_path):
    from dspsim import QTensor

    p = _npz(tmp_path / "q.npz", {"codes.npy": _npy_header((TIB,), "|i1")})
    with pytest.raises(ValueError, match="QTensor.load: .*claims 1099511627776 bytes"):
        QTensor.load(p)


# ------------------------------------------------------------------------------- not a regular file
def _unblock_after(fifo, seconds=10):
    """Open ``fifo`` for writing after ``seconds`` (and close it), so that a reader that blocked on it ends."""
    def go():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    t = threading.Timer(seconds, go)
    t.start()
    return t


@contextlib.contextmanager
def _memory_cap(extra=1 << 30):
    """The address space capped at what the process maps now plus ``extra`` bytes: a reader that regresses into
    reading /dev/zero to its end fails with MemoryError instead of taking the machine's memory."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (mapped + extra, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture(scope="module")
def cnn():
    return load_model(MODELS / "cnn.tflite")


@pytest.mark.parametrize("kind", ["fifo", "dev_zero_npy", "dev_zero_hex", "dev_zero_txt"])
def test_a_dump_that_is_not_a_regular_file_is_refused_without_reading(cnn, tmp_path, kind):
    d = tmp_path / "dumps"
    d.mkdir()
    timer = None
    if kind == "fifo":
        os.mkfifo(d / "t12.bin")
        timer = _unblock_after(d / "t12.bin")
    else:
        os.symlink("/dev/zero", d / f"t12.{kind.rsplit('_', 1)[1]}")
    try:
        with _memory_cap(), pytest.raises(VectorError, match="is a (FIFO|character device); dspsim reads regular "
                                                            "files only"):
            load_dumps(cnn, d)
    finally:
        if timer is not None:
            timer.cancel()


@pytest.mark.parametrize("verb", ["model", "suite"])
def test_a_model_or_suite_that_is_a_fifo_is_refused_exit_2(tmp_path, capsys, verb):
    fifo = tmp_path / ("m.tflite" if verb == "model" else "s.toml")
    os.mkfifo(fifo)
    timer = _unblock_after(fifo)
    try:
        argv = ["run", str(fifo)] if verb == "model" else ["suite", str(fifo), "--out", str(tmp_path / "r")]
        assert cli.main(argv) == 2
    finally:
        timer.cancel()
    assert "is a FIFO" in capsys.readouterr().err


@pytest.mark.parametrize("verb", ["compare", "diagnose"])
def test_a_dump_that_is_dev_zero_is_one_line_exit_2(tmp_path, capsys, verb):
    d = tmp_path / "dumps"
    d.mkdir()
    os.symlink("/dev/zero", d / "t12.bin")
    x = tmp_path / "x.npy"
    np.save(x, np.load(MODELS / "cnn.npz")["r0/in0"])
    argv = (["compare", str(d / "t12.bin"), str(d / "t12.bin"), "--dtype", "int8", "--json", "-"] if verb == "compare"
            else ["diagnose", str(MODELS / "cnn.tflite"), "--input", str(x), "--dumps", str(d), "--no-search",
                  "--json", str(tmp_path / "d.json")])
    with _memory_cap():
        assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a character device; dspsim reads regular files only" in err[0]


# ------------------------------------------------------------------------------------- shapes and text
def test_a_shape_whose_product_wraps_64_bits_is_refused(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(b"")
    with pytest.raises(VectorError, match=r"shape \(4294967296, 4294967296\) has 18446744073709551616 elements"):
        read_array(p, "int8", shape=(1 << 32, 1 << 32))


def test_a_txt_dump_stops_reading_after_one_value_more_than_its_tensor(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("1\n" * 5 + "zz\n")  # what follows the fifth value is never parsed
    with pytest.raises(VectorError, match="more than the 4 values the tensor holds"):
        read_array(p, "int8", shape=(4,))


@pytest.mark.parametrize("text, rule", [("00\n" * 4 + "01\n" + "zz\n", "more values than the 4 the tensor holds"),
                                        ("// a comment\n" * 5000, "more than 4112 lines for at most 4 values"),
                                        ("0" * (1 << 17), "line longer than 65536 characters")],
                         ids=["one_value_too_many", "a_flood_of_comment_lines", "one_endless_line"])
def test_a_hex_dump_stops_reading_at_the_bound_of_its_tensor(tmp_path, text, rule):
    p = tmp_path / "x.hex"
    p.write_text(text)
    with pytest.raises(VectorError, match=rule):
        read_array(p, "int8", shape=(4,))


def test_every_user_file_is_read_through_the_bounded_reader():
    """No module of dspsim reads a file's content except through dspsim._io (np.load, np.fromfile, np.loadtxt,
    np.memmap, Path.read_bytes / read_text, zipfile.ZipFile): the bench and the interpreters' worker files (which
    dspsim wrote itself) aside."""
    package = Path(_io.__file__).parent
    exempt = {"_io.py", "interpreters.py", "bench"}
    readers = {"read_bytes", "read_text", "fromfile", "loadtxt", "memmap", "ZipFile"}
    bad = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] in exempt:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            f = node.func if isinstance(node, ast.Call) else None
            if isinstance(f, ast.Attribute) and (f.attr in readers or (
                    f.attr == "load" and isinstance(f.value, ast.Name) and f.value.id in ("np", "numpy"))):
                bad.append(f"{rel}:{node.lineno} {f.attr}")
    assert bad == []


@pytest.mark.parametrize("data_type, dims", [(3, (1 << 32, 1 << 32)), (3, (1 << 62, 4)), (22, (1 << 63, 2))],
                         ids=["int8_wraps_to_0", "int8_wraps_to_0_again", "int4_wraps"])
def test_an_onnx_initializer_whose_shape_wraps_64_bits_is_refused_naming_the_rule(data_type, dims):
    from dspsim.onnx.proto import TensorDef

    t = TensorDef("w", data_type, dims, raw=b"")
    with pytest.raises(ValueError, match=r"load_model: initializer 'w': shape .* elements, more than"):
        t.array("initializer")
