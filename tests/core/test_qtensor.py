"""QTensor: codes + parameters; engines, slicing, requantize, files, printing."""
import warnings

import numpy as np
import pytest

import dspsim
from dspsim import QTensor, choose_qparams, multiply_by_quantized_multiplier, quantize_multiplier


@pytest.fixture
def torch():
    t = pytest.importorskip("torch")
    warnings.filterwarnings("ignore", message=".*deprecated.*")
    return t


def _data(seed=0, shape=(3, 4, 5)):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) * 2).astype(np.float32)


def test_quantize_uses_each_engines_arithmetic():
    x = _data()
    for engine, q in (("torch", dspsim.quantize_per_tensor(x, 0.037, 7, "qint8")),
                      ("onnx", dspsim.quantize_linear(x, 0.037, 7, dtype="int8")),
                      ("tflite", dspsim.tflite_quantize(x, 0.037, 7, "int8"))):
        t = QTensor.quantize(x, 0.037, 7, "int8", engine=engine)
        np.testing.assert_array_equal(t.int_repr(), q)
        assert t.int_repr() is not t.codes
    s = np.float32([0.01, 0.02, 0.03, 0.05])
    t = QTensor.quantize(x, s, [0, 1, 2, 3], "qint8", axis=1)
    np.testing.assert_array_equal(t.codes, dspsim.quantize_per_channel(x, s, [0, 1, 2, 3], 1, "qint8"))
    np.testing.assert_array_equal(t.dequantize(), dspsim.dequantize_per_channel(t.codes, s, [0, 1, 2, 3], 1))


def test_torch_engine_equals_torch_quantized_tensors(torch):
    x = _data(1)
    t = QTensor.quantize(x, 0.05, 130, "quint8")
    ref = torch.quantize_per_tensor(torch.from_numpy(x), 0.05, 130, torch.quint8)
    np.testing.assert_array_equal(t.int_repr(), ref.int_repr().numpy())
    np.testing.assert_array_equal(t.dequantize().view(np.uint32), ref.dequantize().numpy().view(np.uint32))
    s = np.float32([0.01, 0.02, 0.03])
    t = QTensor.quantize(x, s, [0, -3, 5], "qint8", axis=0)
    ref = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(s.astype(np.float64)),
                                     torch.tensor([0, -3, 5]), 0, torch.qint8)
    np.testing.assert_array_equal(t.int_repr(), ref.int_repr().numpy())
    np.testing.assert_array_equal(t.dequantize().view(np.uint32), ref.dequantize().numpy().view(np.uint32))


@pytest.mark.parametrize("x,scale,zp,dtype", [
    ([-1.0, 0.0, 0.5], 0.5, 2, "quint8"),
    ([[0.1, 2.5], [3.0, -1.0]], 0.1, 3, "qint8"),
    ([1.0, -2.0, 3.25, 4.0, 0.0], 0.25, 0, "qint8"),
])
def test_prints_like_torch_per_tensor(torch, x, scale, zp, dtype):
    x = np.array(x, np.float32)
    ref = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, getattr(torch, dtype))
    assert repr(QTensor.quantize(x, scale, zp, dtype)) == repr(ref)


def test_per_channel_and_tf_printing_names_every_parameter():
    t = QTensor.quantize(np.ones((2, 3), np.float32), np.float32([0.5, 0.25]), [1, 2], "quint8", axis=0)
    r = repr(t)
    assert r.startswith("tensor([[1.0000, 1.0000, 1.0000],") and "size=(2, 3), dtype=torch.quint8" in r
    assert "quantization_scheme=torch.per_channel_affine" in r
    assert "scale=tensor([0.5 , 0.25])" in r and "zero_point=tensor([1, 2]), axis=0)" in r
    r = repr(QTensor.quantize_tf(np.float32([0.0, 1.0]), -1.0, 1.0, "qint8"))
    assert "dtype=tf.qint8" in r and "quantization_scheme=MIN_COMBINED, min_range=-1.0, max_range=1.0)" in r
    assert "dtype=dspsim.int16" in repr(QTensor.quantize(np.float32([1.0]), 0.5, 0, "int16", engine="onnx"))


def test_per_tensor_slicing_keeps_the_parameters():
    t = QTensor.quantize(_data(), 0.05, 3, "qint8")
    for key in (1, (slice(None), 2), np.array([0, 2]), t.codes > 3, (Ellipsis, 1)):
        s = t[key]
        assert (s.scale, s.zero_point, s.axis) == (t.scale, t.zero_point, None)
        np.testing.assert_array_equal(s.codes, t.codes[key])
        np.testing.assert_array_equal(s.dequantize(), t.dequantize()[key])


KEYS = [(slice(1, None),), (1,), (slice(None), 2), (slice(None, None, 2),), (slice(None), slice(1, 3)),
        (0,), (slice(None), 1), (Ellipsis, 1), (None, slice(None), 1), (-1, Ellipsis)]


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("key", KEYS, ids=str)
def test_per_channel_slicing_follows_the_channel_axis_like_torch(torch, axis, key):
    x = _data(2, (3, 4))
    s = np.float32([0.1, 0.2, 0.3, 0.4][: x.shape[axis]])
    z = np.arange(x.shape[axis])
    t = QTensor.quantize(x, s, z, "quint8", axis=axis)
    full = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(s.astype(np.float64)),
                                      torch.from_numpy(z), axis, torch.quint8)
    ref = full[key]
    got = t[key]
    np.testing.assert_array_equal(got.int_repr(), ref.int_repr().numpy())
    np.testing.assert_array_equal(got.dequantize(), full.dequantize().numpy()[key])
    if ref.qscheme() != torch.per_channel_affine:
        assert got.axis is None and got.scale == np.float32(ref.q_scale()) and got.zero_point == ref.q_zero_point()
        return
    assert got.scale.shape == (got.shape[got.axis],)
    scales, ax = ref.q_per_channel_scales().numpy().astype(np.float32), ref.q_per_channel_axis()
    if 0 <= ax < ref.dim() and scales.size == ref.shape[ax]:
        assert got.axis == ax
        np.testing.assert_array_equal(got.scale, scales)
        np.testing.assert_array_equal(got.zero_point, ref.q_per_channel_zero_points().numpy())
    else:  # torch 2.13 leaves a broken axis when an index drops or adds a dimension before it
        with pytest.raises(RuntimeError):
            ref.dequantize()


def test_per_channel_slicing_refuses_fancy_indices():
    t = QTensor.quantize(_data(), np.float32([0.1, 0.2, 0.3]), 0, "qint8", axis=0)
    with pytest.raises(TypeError, match="QTensor.__getitem__: .*basic indices"):
        t[np.array([0, 2])]


def test_tf_tensor_keeps_the_returned_range_and_dequantizes_with_it():
    x = _data(3)
    t = QTensor.quantize_tf(x, 0.5, 2.0, "quint8", mode="MIN_FIRST")
    q, lo, hi = dspsim.quantize(x, 0.5, 2.0, "quint8", mode="MIN_FIRST")
    assert (t.min_range, t.max_range) == (lo, hi) == (0.0, 2.0)  # the range TF widened to contain 0
    np.testing.assert_array_equal(t.codes, q)
    np.testing.assert_array_equal(t.dequantize(), dspsim.dequantize(q, lo, hi, "MIN_FIRST"))
    tc = QTensor.quantize_tf(x, [-1.0, -2.0, -3.0], [1.0, 2.0, 3.0], "qint8", mode="SCALED", axis=0)
    assert tc.axis == 0 and tc[1:].min_range.shape == (2,)
    np.testing.assert_array_equal(tc[2].dequantize(), tc.dequantize()[2])


def test_requantize_fixed_point_is_tflite_requantize():
    x = _data(4)
    t = QTensor.quantize(x, 0.02, -5, "int8", engine="tflite")
    r = t.requantize(0.05, 10, "uint8")
    m, s = quantize_multiplier(np.float64(np.float32(0.02)) / np.float64(np.float32(0.05)))
    want = np.clip(multiply_by_quantized_multiplier(t.codes.astype(np.int64) + 5, m, s) + 10, 0, 255)
    np.testing.assert_array_equal(r.codes, want)
    assert r.codes.dtype == np.uint8 and (r.scale, r.zero_point) == (np.float32(0.05), 10)
    same = t.requantize(0.02, -5)
    np.testing.assert_array_equal(same.codes, t.codes)  # M = 2^30, shift 1: exact identity


def test_requantize_per_channel_uses_one_multiplier_per_channel():
    x = _data(5)
    s = np.float32([0.01, 0.02, 0.03])
    t = QTensor.quantize(x, s, 0, "qint8", axis=0)
    r = t.requantize(s * 2, 0)
    for c in range(3):
        rc = t[c].requantize(s[c] * 2, 0)
        np.testing.assert_array_equal(r.codes[c], rc.codes)
    assert r.axis == 0 and np.array_equal(r.scale, s * 2)


def test_requantize_float_is_dequantize_then_quantize():
    x = _data(6)
    t = QTensor.quantize(x, 0.02, 3, "quint8")
    r = t.requantize(0.03, 100, method="float", engine="onnx")
    np.testing.assert_array_equal(r.codes, dspsim.quantize_linear(t.dequantize(), 0.03, 100, dtype="uint8"))
    assert r.engine == "onnx"


@pytest.mark.parametrize("make", [
    lambda: QTensor.quantize(_data(), 0.05, 3, "qint8"),
    lambda: QTensor.quantize(_data(), np.float32([0.1, 0.2, 0.3, 0.4]), [1, 2, 3, 4], "quint8", axis=1),
    lambda: QTensor.quantize(_data(), 0.05, 3, "int16", engine="onnx"),
    lambda: QTensor.quantize_tf(_data(), [-1.0, -2.0, -3.0], [1.0, 2.0, 3.0], "qint8", mode="SCALED", axis=0,
                                narrow_range=True),
])
def test_save_load_round_trip(tmp_path, make):
    t = make()
    t.save(tmp_path / "t.npz")
    u = QTensor.load(tmp_path / "t.npz")
    assert repr(u) == repr(t) and u.codes.dtype == t.codes.dtype and u.engine == t.engine
    np.testing.assert_array_equal(u.codes, t.codes)
    np.testing.assert_array_equal(u.dequantize(), t.dequantize())


def test_from_qparams_uses_the_chosen_parameters():
    w = _data(7, (4, 6))
    qp = choose_qparams(w.min(1), w.max(1), "int8", "tflite_weight")
    t = QTensor.from_qparams(w, qp, axis=0, engine="tflite")
    np.testing.assert_array_equal(t.codes, dspsim.tflite_quantize(w, qp.scale, 0, "int8", axis=0))
    assert np.abs(t.codes).max() == 127


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: QTensor(np.zeros(3, np.float32), 0.1), TypeError, "codes must be an integer array"),
    (lambda: QTensor(np.zeros(3, np.int8), 0.0), ValueError, "scale must be > 0"),
    (lambda: QTensor(np.zeros(3, np.int8), 0.1, 200), ValueError, "zero_point must lie in"),
    (lambda: QTensor(np.zeros(3, np.int8), [0.1, 0.2]), ValueError, "per-channel scale needs an axis"),
    (lambda: QTensor(np.zeros(3, np.int8)), ValueError, "give either scale"),
    (lambda: QTensor(np.zeros(3, np.int8), 0.1, engine="x"), ValueError, "engine must be one of"),
    (lambda: QTensor(np.zeros(3, np.int8), 0.1, axis=2), ValueError, "out of bounds"),
    (lambda: QTensor.from_qparams(np.zeros(3, np.float32), (0.1, 0)), TypeError, "must be a QParams"),
    (lambda: QTensor.quantize(np.zeros((2, 2), np.float32), [0.1, 0.2], 0, "int8", axis=0,
                              engine="tflite").dequantize(), ValueError, "per-channel DEQUANTIZE"),
    (lambda: QTensor.quantize(np.zeros(3, np.float32), 0.1).requantize(0.1, method="x"), ValueError, "method"),
    (lambda: QTensor.quantize(np.zeros(3, np.float32), 0.1).requantize(0.1, 300), ValueError, "zero_point"),
    (lambda: QTensor.quantize_tf(np.zeros(3, np.float32), -1.0, 1.0, "qint8").requantize(0.1), ValueError,
     "needs affine parameters"),
])
def test_qtensor_refusals(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()
