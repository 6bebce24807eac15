"""Dump files (.npy .bin .hex .txt) and dump directories matched to a model's tensors."""
import os
from pathlib import Path

import numpy as np
import pytest

from dspsim.harness.dumps import DumpError, dump_stems, load_dumps, model_tensors, read_inputs, sanitize_name
from dspsim.harness.vectors import ARRAY_FORMATS, VectorError, read_array, write_array
from dspsim.tflite import load_model

MODELS = Path(__file__).parents[1] / "golden" / "models"
DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "float32", "float64"]


def _edge_values(dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return np.array([0.0, -0.0, 1.5, -2.25, np.finfo(dt).max, np.finfo(dt).tiny, np.inf, -np.inf], dt)
    info = np.iinfo(dt)
    return np.array([info.min, info.min + 1, -1 if info.min else 1, 0, 1, info.max - 1, info.max], dt)


# ------------------------------------------------------------------------------------- file formats
@pytest.mark.parametrize("fmt", ARRAY_FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_format_round_trips_every_dtype_bit_for_bit(tmp_path, fmt, dtype):
    a = _edge_values(dtype)
    a = np.concatenate([a, a[::-1]]).reshape(2, -1)
    b = read_array(write_array(tmp_path / f"a.{fmt}", a), dtype=dtype, shape=a.shape)
    assert b.dtype == a.dtype and b.shape == a.shape
    assert b.tobytes() == a.tobytes()


def test_hex_is_twos_complement_one_value_per_line_as_readmemh(tmp_path):
    p = tmp_path / "v.hex"
    write_array(p, np.array([-1, -128, 127, 0, 5], np.int8))
    assert p.read_text() == "ff\n80\n7f\n00\n05\n"
    write_array(p, np.array([-2, 1 << 20], np.int32))
    assert p.read_text() == "fffffffe\n00100000\n"


def test_hex_reader_accepts_readmemh_comments_underscores_and_several_values_per_line(tmp_path):
    p = tmp_path / "m.hex"
    p.write_text("// weights\nFF 80 // two\n7_f\n\n  01\n")
    assert read_array(p, "int8").tolist() == [-1, -128, 127, 1]
    assert read_array(p, "uint8").tolist() == [255, 128, 127, 1]


@pytest.mark.parametrize("text, rule", [("ff\n1g\n", "not a hex value"), ("100\n", "wider than 8 bits"),
                                        ("@10\nff\n", "value 0 is never written"), ("-1\n", "not a hex value"),
                                        ("xx\n", "not a hex value"), ("0x1g\n", "not a hex value")])
def test_bad_hex_is_one_line_naming_file_and_line(tmp_path, text, rule):
    p = tmp_path / "bad.hex"
    p.write_text(text)
    with pytest.raises(VectorError, match=rule) as e:
        read_array(p, "int8")
    assert str(p) in str(e.value) and "\n" not in str(e.value)


def test_txt_reader_checks_the_range_of_the_dtype(tmp_path):
    p = tmp_path / "v.txt"
    p.write_text("-128, 127\n0")
    assert read_array(p, "int8").tolist() == [-128, 127, 0]
    p.write_text("128\n")
    with pytest.raises(VectorError, match=r"outside int8 \[-128, 127\]"):
        read_array(p, "int8")
    p.write_text("1.5\n")
    with pytest.raises(VectorError, match="not a decimal integer"):
        read_array(p, "int8")


def test_bin_is_little_endian_and_must_hold_whole_values(tmp_path):
    p = tmp_path / "v.bin"
    p.write_bytes(bytes([1, 0, 0xFF, 0xFF]))
    assert read_array(p, "int16").tolist() == [1, -1]
    p.write_bytes(bytes([1, 0, 0]))
    with pytest.raises(VectorError, match="not a whole number of int16 values"):
        read_array(p, "int16")


def test_flat_file_is_reshaped_and_a_wrong_count_refused(tmp_path):
    p = write_array(tmp_path / "v.npy", np.arange(24, dtype=np.int8))
    assert read_array(p, shape=(1, 2, 3, 4)).shape == (1, 2, 3, 4)
    with pytest.raises(VectorError, match=r"24 values, but shape \(1, 5\) needs 5"):
        read_array(p, shape=(1, 5))


def test_raw_formats_need_a_dtype_and_unknown_extensions_are_refused(tmp_path):
    p = tmp_path / "v.bin"
    p.write_bytes(b"\0\0")
    with pytest.raises(VectorError, match="no dtype"):
        read_array(p)
    with pytest.raises(VectorError, match="unknown dump format '.dat'"):
        read_array(tmp_path / "v.dat", "int8")
    with pytest.raises(VectorError, match="no such file"):
        read_array(tmp_path / "none.npy")


# ------------------------------------------------------------------------------------- directories
@pytest.fixture(scope="module")
def cnn():
    return load_model(MODELS / "cnn.tflite")


def test_sanitized_names_keep_only_safe_characters():
    assert sanitize_name("Relu6;add;Conv2D;add/y1") == "Relu6_add_Conv2D_add_y1"
    assert sanitize_name("a.b-c_d 9") == "a.b-c_d_9"


def test_every_tensor_is_reachable_by_index_and_unique_names_by_name(cnn):
    from dspsim.tflite import TensorInfo

    tensors = model_tensors(cnn)
    stems = dump_stems(tensors)
    assert all(stems[f"t{t.index}"] == stems[f"#{t.index}"] == (t.index,) for t in tensors)
    assert stems["Relu6_add_Conv2D_add_y1"] == (10,)
    fake = [TensorInfo(i, n, (1,), np.dtype(np.int8), 1.0, 0) for i, n in enumerate(["a/b", "a;b", "c", "t0"])]
    assert dump_stems(fake) == {"a_b": (0, 1), "c": (2,), "t0": (0, 3), "t1": (1,), "t2": (2,), "t3": (3,),
                                "#0": (0,), "#1": (1,), "#2": (2,), "#3": (3,)}


def test_dump_directory_by_index_and_by_name_in_every_format(cnn, tmp_path):
    z = np.load(MODELS / "cnn.npz")
    trace = {e.tensor: e for e in cnn.trace([z["r0/in0"]])}
    chosen = [10, 11, 12, 18]
    for fmt, k in zip(ARRAY_FORMATS, chosen):
        stem = f"t{k}" if k % 2 == 0 else sanitize_name(trace[k].name)
        write_array(tmp_path / f"{stem}.{fmt}", trace[k].value.reshape(-1))  # flat, as a device writes
    (tmp_path / "README.md").write_text("notes")
    dumps, ignored = load_dumps(cnn, tmp_path)
    assert sorted(dumps) == chosen and ignored == ["README.md"]
    for k in chosen:
        assert dumps[k].value.shape == trace[k].value.shape and np.array_equal(dumps[k].value, trace[k].value)


def test_npy_of_a_wider_dtype_is_read_and_its_dtype_noted(cnn, tmp_path):
    np.save(tmp_path / "t10.npy", np.zeros((1, 8, 8, 8), np.int32))
    dumps, _ = load_dumps(cnn, tmp_path)
    assert dumps[10].file_dtype == "int32"


@pytest.mark.parametrize("case", ["unknown_name", "index_out_of_range", "two_files", "wrong_size", "bad_hex",
                                  "corrupt_npy", "dangling_link", "float_for_int", "int_for_float", "empty",
                                  "missing_dir"])
def test_bad_dump_directories_raise_one_line_dump_errors(cnn, tmp_path, case):
    d = tmp_path / "dumps"
    d.mkdir()
    if case == "unknown_name":
        np.save(d / "conv_out.npy", np.zeros(4, np.int8))
    elif case == "index_out_of_range":
        np.save(d / "t99.npy", np.zeros(4, np.int8))
    elif case == "two_files":
        np.save(d / "t12.npy", np.zeros(32, np.int8))
        write_array(d / "AvgPool2D.bin", np.zeros(32, np.int8))
    elif case == "wrong_size":
        write_array(d / "t12.bin", np.zeros(31, np.int8))
    elif case == "bad_hex":
        (d / "t12.hex").write_text("00\n" * 31 + "zz\n")
    elif case == "corrupt_npy":
        (d / "t12.npy").write_bytes(b"\x93NUMPY garbage")
    elif case == "dangling_link":
        os.symlink(tmp_path / "gone.npy", d / "t12.npy")
    elif case == "float_for_int":
        np.save(d / "t12.npy", np.zeros((1, 2, 2, 8), np.float32))
    elif case == "int_for_float":
        np.save(d / "t19.npy", np.zeros((1, 10), np.int8))  # DEQUANTIZE's output is float32
    elif case == "missing_dir":
        d = tmp_path / "nowhere"
    with pytest.raises(DumpError if case not in ("wrong_size", "bad_hex", "corrupt_npy", "dangling_link")
                       else VectorError) as e:
        load_dumps(cnn, d)
    msg = str(e.value)
    assert "\n" not in msg and msg
    assert {"unknown_name": "matches no tensor", "index_out_of_range": "no tensor 99", "two_files": "already dumped",
            "wrong_size": "31 values", "bad_hex": "bad hex", "corrupt_npy": "not a readable .npy",
            "dangling_link": "no such file", "float_for_int": "float32 values", "int_for_float": "int8 values",
            "empty": "no dump files",
            "missing_dir": "no such directory"}[case] in msg


def test_inputs_are_read_in_any_format_with_the_input_dtype(cnn, tmp_path):
    x = np.load(MODELS / "cnn.npz")["r0/in0"]
    write_array(tmp_path / "x.bin", x)
    (got,) = read_inputs(cnn, [tmp_path / "x.bin"])
    assert got.dtype == np.float32 and got.shape == x.shape and got.tobytes() == x.tobytes()
    with pytest.raises(DumpError, match="has 1 input"):
        read_inputs(cnn, [tmp_path / "x.bin"] * 2)
