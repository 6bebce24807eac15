"""Issue 31: QTensor.load and the numeric entry points refuse a foreign file and a zero, negative, subnormal or
non-finite scale with a ValueError naming the problem, and never leak a numpy RuntimeWarning (these tests run
with RuntimeWarning as an error)."""
import zipfile

import numpy as np
import pytest

import dspsim
from dspsim import QTensor

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

X = np.array([0.5, -1.0, 3.0], np.float32)
Q = np.array([1, -2, 3], np.int8)
BAD_SCALES = {"zero": 0.0, "negative": -1.0, "nan": float("nan"), "inf": float("inf"), "subnormal": 1e-40,
              "smallest_subnormal": 1e-45, "overflows_float32": 1e300}
ENTRY_POINTS = {
    "quantize_per_tensor": lambda s: dspsim.quantize_per_tensor(X, s, 0, "int8"),
    "quantize_per_channel": lambda s: dspsim.quantize_per_channel(X.reshape(3, 1), np.array([s, 1.0, 1.0]),
                                                                  np.zeros(3, np.int64), 0, "int8"),
    "dequantize_per_tensor": lambda s: dspsim.dequantize_per_tensor(Q, s, 0),
    "quantize_linear": lambda s: dspsim.quantize_linear(X, s, 0, dtype="int8"),
    "dequantize_linear": lambda s: dspsim.dequantize_linear(Q, s, 0),
    "tflite_quantize": lambda s: dspsim.tflite_quantize(X, s, 0, "int8"),
    "tflite_dequantize": lambda s: dspsim.tflite_dequantize(Q, s, 0),
    "QTensor": lambda s: QTensor(Q, s, 0),
    "QTensor.quantize": lambda s: QTensor.quantize(X, s, 0, "qint8"),
}


@pytest.mark.parametrize("scale", BAD_SCALES.values(), ids=BAD_SCALES.keys())
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=ENTRY_POINTS.keys())
def test_a_bad_scale_is_a_value_error_naming_the_rule(entry, scale):
    with pytest.raises(ValueError, match=r"scales? must be (> 0|finite|a normal float32)"):
        ENTRY_POINTS[entry](scale)


@pytest.mark.parametrize("value", [1e300, -1e300, float("nan"), float("inf")])
def test_choose_qparams_refuses_a_range_outside_float32_without_a_warning(value):
    with pytest.raises(ValueError, match="choose_qparams: .*(finite|min <= max|min must|max must)"):
        dspsim.choose_qparams(min(0.0, value), max(0.0, value) if value == value else value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_quantize_multiplier_refuses_a_non_finite_multiplier(value):
    with pytest.raises(ValueError, match="quantize_multiplier"):
        dspsim.quantize_multiplier(value)


def test_a_saved_qtensor_loads_back_equal(tmp_path):
    t = QTensor.quantize(X, 0.25, 3, "quint8")
    t.save(tmp_path / "t.npz")
    u = QTensor.load(tmp_path / "t.npz")
    assert np.array_equal(u.int_repr(), t.int_repr()) and u.scale == t.scale and u.zero_point == t.zero_point


def _archive(path, **arrays):
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("case, rule", [
    ("not_a_zip", "not a readable .npz file"),
    ("plain_npz", "not a QTensor archive \\(no 'engine' entry"),
    ("engine_not_text", "entry 'engine' is int64"),
    ("no_scale", "no 'scale' entry"),
    ("subnormal_scale", "a normal float32"),
    ("nan_scale", "finite"),
    ("text_member", "member 'notes.txt' is not a .npy array"),
])
def test_qtensor_load_of_a_foreign_file_is_a_value_error_naming_the_problem(tmp_path, case, rule):
    p = tmp_path / "q.npz"
    good = dict(codes=Q, engine=np.array("torch"), axis=np.int64(-1), scale=np.float32(0.5), zero_point=np.int64(0))
    if case == "not_a_zip":
        p.write_bytes(b"\x93NUMPY not a zip")
    elif case == "plain_npz":
        _archive(p, x=X)
    elif case == "engine_not_text":
        _archive(p, **{**good, "engine": np.int64(3)})
    elif case == "no_scale":
        _archive(p, **{k: v for k, v in good.items() if k != "scale"})
    elif case == "subnormal_scale":
        _archive(p, **{**good, "scale": np.float32(1e-40)})
    elif case == "nan_scale":
        _archive(p, **{**good, "scale": np.float32("nan")})
    else:
        _archive(p, **good)
        with zipfile.ZipFile(p, "a") as z:
            z.writestr("notes.txt", "hello")
    with pytest.raises(ValueError, match=rule) as e:
        QTensor.load(p)
    assert str(e.value).startswith("QTensor") and "\n" not in str(e.value)
