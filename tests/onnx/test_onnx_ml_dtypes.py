"""int4 / int2 / float8 / float4 values in and out as ``ml_dtypes`` arrays, bit for bit with ml_dtypes' own conversion."""
import numpy as np
import pytest

import dspsim.onnx as donnx
from dspsim.onnx.types import _TABLES, INT_QUANT, MINIFLOATS, ML_DTYPES, QArray, decode_float, encode_float, \
    int_range

ml_dtypes = pytest.importorskip("ml_dtypes")  # installed with onnx (the ref extra)

TYPES = sorted(ML_DTYPES, key=int)


def _ml(t):
    return np.dtype(getattr(ml_dtypes, ML_DTYPES[t]))


def _every_code(t) -> np.ndarray:
    if t in INT_QUANT:
        lo, hi = int_range(t)
        return np.arange(lo, hi + 1).astype(np.int8 if lo < 0 else np.uint8)
    return np.arange(len(_TABLES[t]), dtype=np.uint8)


def _same_floats(a, b) -> bool:
    """Equal float32 values, bit for bit (signed zeros apart), NaN where the other is NaN."""
    nan = np.isnan(a)
    return np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32))


@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.name)
def test_every_code_becomes_the_ml_dtypes_value_and_comes_back(t):
    codes = _every_code(t)
    m = QArray(codes, t).to_ml_dtypes()
    assert m.dtype == _ml(t)
    if t in MINIFLOATS:  # ml_dtypes decodes each bit pattern to the value dspsim's table gives
        assert _same_floats(m.astype(np.float32), decode_float(codes, t))
    else:  # ml_dtypes' own int -> int4 conversion gives the same bits
        assert np.array_equal(m.view(np.uint8), codes.astype(np.int64).astype(_ml(t)).view(np.uint8))
    back = QArray.from_ml_dtypes(m)
    assert back.type == t and back.codes.dtype == codes.dtype and np.array_equal(back.codes, codes)


def _cast_probes(t) -> np.ndarray:
    """Every finite value of ``t``, the ties between neighbours and a float32 step either side, overflow, specials."""
    fin = np.unique(_TABLES[t][np.isfinite(_TABLES[t])])
    mids = ((fin[:-1] + fin[1:]) / 2).astype(np.float32)
    top = fin.max()
    return np.concatenate([fin, mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf)),
                           [top * 1.01, top * 2, -top * 2, np.inf, -np.inf, np.nan, -np.nan, -0.0]]).astype(np.float32)


@pytest.mark.parametrize("t", sorted(MINIFLOATS, key=int), ids=lambda t: t.name)
def test_quantize_without_saturation_rounds_as_ml_dtypes_casts(t):
    x = _cast_probes(t)
    q = donnx.quantize_linear(x, np.float32(1), output_dtype=t, saturate=False, engine="onnx-reference",
                              as_ml_dtypes=True)
    assert np.array_equal(encode_float(x, t, saturate=False), x.astype(_ml(t)).view(np.uint8))
    # float4 adds its zero point (+0.0) in float32 before the cast, which turns -0 into +0 (ONNX's formula)
    xz = x + np.float32(0) if t == donnx.ElemType.FLOAT4E2M1 else x
    assert q.dtype == _ml(t) and np.array_equal(q.view(np.uint8), xz.astype(_ml(t)).view(np.uint8))


@pytest.mark.parametrize("t", [t for t in TYPES if t in INT_QUANT], ids=lambda t: t.name)
def test_integer_quantize_takes_an_ml_dtypes_zero_point_and_returns_its_type(t):
    lo, hi = int_range(t)
    x = np.linspace(lo - 3, hi + 3, 41, dtype=np.float32) * np.float32(0.5)
    zp = getattr(ml_dtypes, ML_DTYPES[t])(hi // 2)
    q = donnx.quantize_linear(x, np.float32(0.5), zp, as_ml_dtypes=True)
    want = np.clip(np.rint(x / np.float32(0.5)) + hi // 2, lo, hi).astype(np.int64).astype(_ml(t))
    assert q.dtype == _ml(t) and np.array_equal(q.view(np.uint8), want.view(np.uint8))
    plain = donnx.quantize_linear(x, np.float32(0.5), zp)
    assert isinstance(plain, QArray) and np.array_equal(plain.codes, q.astype(np.int64))
    y = donnx.dequantize_linear(q, np.float32(0.5), zp)
    assert np.array_equal(y, donnx.dequantize_linear(plain, np.float32(0.5), QArray.from_ml_dtypes(zp)))


def test_output_dtype_may_be_an_ml_dtypes_type():
    q = donnx.quantize_linear(np.float32([1.0, 500.0]), np.float32(1), output_dtype=ml_dtypes.float8_e4m3fn,
                              as_ml_dtypes=True)
    assert q.dtype == np.dtype(ml_dtypes.float8_e4m3fn) and q.astype(np.float32).tolist() == [1.0, 448.0]


def test_from_ml_dtypes_refuses_a_plain_numpy_array():
    with pytest.raises(TypeError, match=r"QArray.from_ml_dtypes: needs an ml_dtypes array"):
        QArray.from_ml_dtypes(np.int8([1, 2]))


def _float8_to_int4_model() -> bytes:
    """q (float8e4m3fn) -> DequantizeLinear -> QuantizeLinear (int4 zero point) -> y (int4)."""
    pytest.importorskip("onnx")
    from onnx import TensorProto as TP
    from onnx import helper

    nodes = [helper.make_node("DequantizeLinear", ["q", "s"], ["f"]),
             helper.make_node("QuantizeLinear", ["f", "s2", "z"], ["y"])]
    inits = [helper.make_tensor("s", TP.FLOAT, [], [0.5]), helper.make_tensor("s2", TP.FLOAT, [], [2.0]),
             helper.make_tensor("z", TP.INT4, [], [1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("q", TP.FLOAT8E4M3FN, [8])],
                          [helper.make_tensor_value_info("y", TP.INT4, [8])], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]).SerializeToString()


def test_onnx_model_takes_and_returns_ml_dtypes_arrays():
    model = donnx.load_model(_float8_to_int4_model(), engine="onnx-reference")
    q = np.float32([-20, -3.5, -1, 0, 0.75, 2, 7, 16]).astype(ml_dtypes.float8_e4m3fn)
    (y,) = model.run(q, as_ml_dtypes=True)
    want = np.clip(np.rint(q.astype(np.float32) * 0.5 / 2.0) + 1, -8, 7).astype(np.int64)
    assert y.dtype == np.dtype(ml_dtypes.int4) and y.astype(np.int64).tolist() == want.tolist()
    (as_qarray,) = model.run(QArray.from_ml_dtypes(q))
    assert isinstance(as_qarray, QArray) and as_qarray.codes.tolist() == want.tolist()
    with pytest.raises(TypeError, match=r"input 'q' must be FLOAT8E4M3FN, got FLOAT8E5M2"):
        model.run(q.astype(ml_dtypes.float8_e5m2))
