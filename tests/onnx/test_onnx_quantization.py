"""dspsim.onnx's standalone quantization operators against the plain-Python oracles of
dspsim/oracle/quantize.py, on random and edge inputs: every minifloat
code and midpoint, ties, saturation, every sub-byte code, per-tensor / per-axis / blocked layouts,
per-row / per-column zero points; plus ONNX's type rules and the refusals.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.onnx as donnx
from dspsim import oracle as ref
from dspsim import engines
from dspsim.engines import OnnxKernels
from dspsim.onnx.mlas import fma_f32
from dspsim.onnx.types import ElemType, QArray, decode_float, encode_float, minifloat_max, pack, unpack

MINI = [ElemType.FLOAT8E4M3FN, ElemType.FLOAT8E4M3FNUZ, ElemType.FLOAT8E5M2, ElemType.FLOAT8E5M2FNUZ,
        ElemType.FLOAT4E2M1]
INTS = {ElemType.UINT8: (0, 255), ElemType.INT8: (-128, 127), ElemType.UINT16: (0, 65535),
        ElemType.INT16: (-32768, 32767), ElemType.UINT4: (0, 15), ElemType.INT4: (-8, 7), ElemType.UINT2: (0, 3),
        ElemType.INT2: (-2, 1)}


def codes_of(y):
    return (y.codes if isinstance(y, QArray) else np.asarray(y)).astype(np.int64).reshape(-1)


def zp_of(t, v):
    """A zero point of type t (numpy for native types, QArray for sub-byte ones)."""
    native = {ElemType.UINT8: np.uint8, ElemType.INT8: np.int8, ElemType.UINT16: np.uint16, ElemType.INT16: np.int16}
    if t in native:
        return np.asarray(v, native[t])
    return QArray(np.asarray(v, np.int8 if t in (ElemType.INT4, ElemType.INT2) else np.uint8), t)


# ---------------------------------------------------------------------------------------------
# minifloats
# ---------------------------------------------------------------------------------------------
def minifloat_probe(t):
    n = 16 if t == ElemType.FLOAT4E2M1 else 256
    vals = decode_float(np.arange(n), t).astype(np.float64)
    fin = np.unique(np.abs(vals[np.isfinite(vals)]))
    mids = (fin[:-1] + fin[1:]) / 2
    top = fin[-1] + (fin[-1] - fin[-2]) / 2
    x = np.concatenate([fin, mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf), [top, np.nextafter(top, 0),
                                                                                      top * 1.01, fin[-1] * 4]])
    return np.concatenate([x, -x, [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan]]).astype(np.float32)


@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("t", MINI, ids=lambda t: t.name)
def test_minifloat_rounding_matches_oracle_on_every_code_and_midpoint(t, saturate):
    x = minifloat_probe(t)
    got = encode_float(x, t, saturate)
    want = [ref.minifloat_encode(float(v), t.name, saturate) for v in x]
    assert got.tolist() == want


@settings(max_examples=120, deadline=None)
@given(st.floats(width=32, allow_nan=False), st.sampled_from(MINI), st.booleans())
def test_minifloat_rounding_matches_oracle_on_random_floats(v, t, saturate):
    assert int(encode_float(np.float32(v), t, saturate)) == ref.minifloat_encode(float(np.float32(v)), t.name,
                                                                                  saturate)


@pytest.mark.parametrize("t", MINI, ids=lambda t: t.name)
def test_minifloat_decode_is_exact(t):
    n = 16 if t == ElemType.FLOAT4E2M1 else 256
    got = decode_float(np.arange(n), t)
    for code, g in enumerate(got):
        want = ref.minifloat_value(code, t.name)
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(g)
        else:
            assert float(g) == float(want)


def test_ort_float8_differs_only_above_the_largest_value_without_saturation():
    x = np.linspace(-70000, 70000, 140001).astype(np.float32)
    for t in MINI[:4]:
        for sat in (True, False):
            diff = encode_float(x, t, sat, OnnxKernels.ONNXRUNTIME) != encode_float(x, t, sat)
            a = np.abs(x[diff])
            if sat or t not in (ElemType.FLOAT8E4M3FN, ElemType.FLOAT8E5M2):
                assert not diff.any()
            elif t == ElemType.FLOAT8E4M3FN:
                assert a.min() >= 480 and a.max() < 496
            else:
                assert a.min() >= 61440 and a.max() < 65536


# ---------------------------------------------------------------------------------------------
# packing
# ---------------------------------------------------------------------------------------------
def test_sub_byte_packing_matches_onnx_byte_layout():
    assert pack(np.array([1, -2, 7], np.int8), ElemType.INT4) == bytes([0xE1, 0x07])
    assert pack(np.array([1, -2, 0, 1, -1], np.int8), ElemType.INT2) == bytes([0x49, 0x03])


@pytest.mark.parametrize("t", [ElemType.INT4, ElemType.UINT4, ElemType.INT2, ElemType.UINT2, ElemType.FLOAT4E2M1])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 33])
def test_every_sub_byte_code_round_trips_through_packing(t, n):
    bits = 2 if t in (ElemType.INT2, ElemType.UINT2) else 4
    signed = t in (ElemType.INT4, ElemType.INT2)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    codes = (np.arange(n) % (hi - lo + 1) + lo).astype(np.int8 if signed else np.uint8)
    data = pack(codes, t)
    assert len(data) == -(-n // (8 // bits))
    assert np.array_equal(unpack(data, t, (n,)), codes)
    with pytest.raises(ValueError, match="packed bytes"):
        unpack(data + b"\0", t, (n,))


# ---------------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear
# ---------------------------------------------------------------------------------------------
def tie_inputs(rng, scale, lo, hi, n):
    k = rng.integers(lo - 3, hi + 4, n)
    return np.concatenate([(k + 0.5) * scale, k * scale, rng.uniform(lo - 5, hi + 5, n) * scale]).astype(np.float32)


@pytest.mark.parametrize("t", list(INTS), ids=lambda t: t.name)
def test_integer_quantize_per_tensor_matches_oracle_including_ties(t):
    lo, hi = INTS[t]
    rng = np.random.default_rng(int(t))
    for scale, zp in ((0.25, (lo + hi) // 2), (0.0371, lo), (3.0, hi), (2.0**-7, lo + 1)):
        x = tie_inputs(rng, scale, lo, hi, 50)
        y = donnx.quantize_linear(x, np.float32(scale), zp_of(t, zp))
        want = [ref.onnx_quantize(float(v), scale, zp, lo, hi) for v in x]
        assert codes_of(y).tolist() == want


@pytest.mark.parametrize("t", list(INTS), ids=lambda t: t.name)
def test_integer_quantize_per_axis_and_blocked_match_oracle(t):
    lo, hi = INTS[t]
    rng = np.random.default_rng(100 + int(t))
    x = (rng.standard_normal((3, 7, 2)) * 4).astype(np.float32)
    s = (rng.uniform(0.05, 1.5, 7)).astype(np.float32)
    z = rng.integers(lo, hi + 1, 7)
    y = codes_of(donnx.quantize_linear(x, s, zp_of(t, z), axis=-2)).reshape(x.shape)
    for idx in np.ndindex(x.shape):
        assert y[idx] == ref.onnx_quantize(float(x[idx]), float(s[idx[1]]), int(z[idx[1]]), lo, hi)
    sb = rng.uniform(0.05, 1.5, (3, 3, 2)).astype(np.float32)  # block_size 3 over axis 1 (7 = 3 + 3 + 1)
    zb = rng.integers(lo, hi + 1, (3, 3, 2))
    y = codes_of(donnx.quantize_linear(x, sb, zp_of(t, zb), axis=1, block_size=3)).reshape(x.shape)
    for idx in np.ndindex(x.shape):
        b = ref.block_index(idx, 1, 3)
        assert y[idx] == ref.onnx_quantize(float(x[idx]), float(sb[b]), int(zb[b]), lo, hi)


@pytest.mark.parametrize("t", list(INTS), ids=lambda t: t.name)
def test_integer_dequantize_matches_oracle_on_every_code(t):
    lo, hi = INTS[t]
    codes = (np.arange(lo, hi + 1) if hi - lo < 1024 else
             np.concatenate([np.arange(lo, lo + 300), np.arange(hi - 300, hi + 1)]))
    for scale, zp in ((0.0371, (lo + hi) // 2), (1e-3, lo), (7.5, hi)):
        y = donnx.dequantize_linear(zp_of(t, codes), np.float32(scale), zp_of(t, zp))
        want = [float(ref.onnx_dequantize(int(c), scale, zp)) for c in codes]
        assert y.dtype == np.float32 and y.tolist() == want


@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("t", MINI, ids=lambda t: t.name)
def test_minifloat_quantize_and_dequantize_match_oracle(t, saturate):
    rng = np.random.default_rng(7)
    x = np.concatenate([minifloat_probe(t)[:-6:3] * np.float32(0.37), rng.standard_normal(60).astype(np.float32) *
                        np.float32(minifloat_max(t) / 3)]).astype(np.float32)
    zp = QArray(np.zeros(1, np.uint8), t)
    y = donnx.quantize_linear(x, np.float32(0.37), zp, saturate=saturate, engine="onnx-reference")
    assert y.type == t
    want = [ref.quantize_minifloat(float(v), 0.37, 0.0, t.name, saturate) for v in x]
    assert y.codes.tolist() == want
    back = donnx.dequantize_linear(y, np.float32(0.37))
    for code, b in zip(y.codes, back):
        w = ref.dequantize_minifloat(int(code), 0.37, t.name)
        assert (math.isnan(b) and isinstance(w, float) and math.isnan(w)) or float(b) == float(w)


def test_output_type_comes_from_the_zero_point():
    x = np.array([-1.0, 0.26, 300.0], np.float32)
    assert donnx.quantize_linear(x, np.float32(0.5), np.int8(-3)).dtype == np.int8
    assert donnx.quantize_linear(x, np.float32(0.5), np.int8(-3)).tolist() == [-5, -2, 127]
    assert donnx.quantize_linear(x, np.float32(0.5)).dtype == np.uint8  # no zero point: uint8
    assert donnx.quantize_linear(x, np.float32(0.5), np.uint16(7)).dtype == np.uint16
    y = donnx.quantize_linear(x, np.float32(0.5), output_dtype="int4")
    assert y.type == ElemType.INT4 and y.codes.tolist() == [-2, 1, 7]
    with pytest.raises(ValueError, match="differs from the zero point's type"):
        donnx.quantize_linear(x, np.float32(0.5), np.int8(0), output_dtype="uint8")
    with pytest.raises(TypeError, match="must carry its ONNX type"):
        donnx.quantize_linear(x, 0.5, 3)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan])
def test_scale_must_be_positive_and_finite(bad):
    with pytest.raises(ValueError, match="positive and finite"):
        donnx.quantize_linear(np.ones(3, np.float32), np.float32(bad), np.uint8(0))
    with pytest.raises(ValueError, match="positive and finite"):
        donnx.dequantize_linear(np.ones(3, np.uint8), np.float32(bad), np.uint8(0))


def test_zero_point_outside_its_type_is_refused():
    with pytest.raises(ValueError, match=r"\[-8, 7\]"):
        donnx.quantize_linear(np.ones(3, np.float32), np.float32(1), QArray(np.array([9], np.int8), ElemType.INT4))
    with pytest.raises(ValueError, match=r"must be \+0"):
        donnx.quantize_linear(np.ones(3, np.float32), np.float32(1),
                              QArray(np.array([0x38], np.uint8), ElemType.FLOAT8E4M3FN))


def test_mismatched_per_axis_lengths_are_refused():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="per-axis scale must be 1-D with 3 values"):
        donnx.quantize_linear(x, np.ones(2, np.float32), np.zeros(2, np.uint8), axis=1)
    with pytest.raises(ValueError, match="zero point shape"):
        donnx.quantize_linear(x, np.ones(3, np.float32), np.zeros(2, np.uint8), axis=1)
    with pytest.raises(ValueError, match="blocked scale must have shape"):
        donnx.quantize_linear(x, np.ones((2, 1), np.float32), np.zeros((2, 1), np.uint8), axis=1, block_size=2)


def test_nan_has_no_integer_code():
    with pytest.raises(ValueError, match="NaN"):
        donnx.quantize_linear(np.array([np.nan], np.float32), np.float32(1), np.int8(0))


def test_dynamic_quantize_linear_follows_the_formula():
    rng = np.random.default_rng(3)
    for x in (rng.standard_normal(40).astype(np.float32) * 3, rng.uniform(0.5, 3, 9).astype(np.float32),
              np.array([-2.5, 0.0, 252.5], np.float32)):
        y, s, z = donnx.dynamic_quantize_linear(x)
        hi, lo = max(0.0, float(x.max())), min(0.0, float(x.min()))
        assert s == np.float32(np.float32(hi - lo) / np.float32(255))
        assert z == np.uint8(np.rint(min(255.0, max(0.0, float(np.float32(0 - np.float32(lo) / s))))))
        assert codes_of(y).tolist() == [ref.onnx_quantize(float(v), float(s), int(z), 0, 255) for v in x]
    zeros = np.zeros(4, np.float32)
    assert donnx.dynamic_quantize_linear(zeros)[1] == np.float32(1.0)
    assert donnx.dynamic_quantize_linear(zeros, engine="onnx-reference")[1] == np.float32(1.0) / np.float32(255)


# ---------------------------------------------------------------------------------------------
# integer accumulators and requantized ops
# ---------------------------------------------------------------------------------------------
TYPES8 = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8), (np.int8, np.uint8)]


def rand_codes(rng, dt, shape):
    i = np.iinfo(dt)
    return rng.integers(i.min, i.max + 1, shape).astype(dt)


@pytest.mark.parametrize("ta,tb", TYPES8)
def test_matmul_integer_matches_oracle_with_row_and_column_zero_points(ta, tb):
    rng = np.random.default_rng(11)
    a, b = rand_codes(rng, ta, (5, 37)), rand_codes(rng, tb, (37, 6))
    za, zb = rand_codes(rng, ta, 5), rand_codes(rng, tb, 6)
    got = donnx.matmul_integer(a, b, za, zb)
    want = ref.matmul_integer(a.astype(int).tolist(), b.astype(int).tolist(), za.astype(int).tolist(),
                               zb.astype(int).tolist())
    assert got.dtype == np.int32 and got.tolist() == want


def test_matmul_integer_ort_u8s8_saturates_product_pairs():
    a = np.full((1, 4), 255, np.uint8)
    b = np.full((4, 1), 127, np.int8)  # each pair 2 * 255 * 127 = 64770 > 32767
    assert donnx.matmul_integer(a, b).tolist() == [[2 * 255 * 127 * 2]]
    assert donnx.matmul_integer(a, b, engine="onnxruntime").tolist() == [[2 * 32767]]
    rng = np.random.default_rng(5)
    a, b = rand_codes(rng, np.uint8, (3, 9)), rand_codes(rng, np.int8, (9, 4))
    za, zb = np.uint8(17), np.int8(-3)
    got = donnx.matmul_integer(a, b, za, zb, engine="onnxruntime")
    for m in range(3):
        for n in range(4):
            raw = [int(a[m, k]) * int(b[k, n]) for k in range(9)]
            sum_a, sum_b = int(a[m].astype(int).sum()), int(b[:, n].astype(int).sum())
            corr = -int(zb) * sum_a - int(za) * sum_b + 9 * int(za) * int(zb)
            assert got[m, n] == ref.accumulate([], 0, pairs=(raw, corr))[0]


@pytest.mark.parametrize("ta,tb", TYPES8)
def test_conv_integer_matches_oracle_with_pads_strides_dilations_groups(ta, tb):
    rng = np.random.default_rng(12)
    x, w = rand_codes(rng, ta, (2, 4, 7, 6)), rand_codes(rng, tb, (6, 2, 3, 2))
    zx, zw = rand_codes(rng, ta, ()), rand_codes(rng, tb, 6)
    kw = dict(pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2], group=2)
    got = donnx.conv_integer(x, w, zx, zw, **kw)
    want = ref.conv_integer(x.astype(int).tolist(), w.astype(int).tolist(), int(zx), zw.astype(int).tolist(),
                             (2, 1), (1, 0, 2, 1), (1, 2), 2)
    assert got.dtype == np.int32 and got.tolist() == want


@pytest.mark.parametrize("engine", ["onnxruntime", "onnx-reference"])
@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_qlinear_matmul_batched_per_column_matches_oracle_including_ties(dt, engine):
    rng = np.random.default_rng(13)
    base = 0 if dt == np.int8 else 128
    a = (rng.integers(-3, 4, (2, 3, 4)) + base).astype(dt)
    b = (rng.integers(-3, 4, (2, 4, 5)) + base).astype(dt)
    sb = np.array([0.5, 0.25, 0.125, 1.0, 0.5], np.float32)
    got = donnx.qlinear_matmul(a, np.float32(0.25), dt(base), b, sb, np.full(5, base, dt), np.float32(1.0),
                               dt(base + 3), engine=engine)
    lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    for idx in np.ndindex(got.shape):
        bi, m, n = idx
        acc = int(((a[bi, m].astype(int) - base) * (b[bi, :, n].astype(int) - base)).sum())
        mult = float(np.float32(np.float32(np.float32(0.25) * sb[n]) / np.float32(1.0)))
        assert got[idx] == ref.requantize_scale(acc, mult, base + 3, lo, hi, engine)


def test_qlinear_matmul_float16_scales_differ_between_engines_as_documented():
    sa, sb, sy = np.float16(0.02), np.float16(0.0137), np.float16(0.41)
    ort = donnx.qlinear_matmul(np.array([[1]], np.int8), sa, np.int8(0), np.array([[1]], np.int8), sb, np.int8(0),
                               sy, np.int8(0))
    assert ort.dtype == np.int8
    rq_ref = donnx.mac.requant_scales(sa, sb, sy, engines.get("onnx-reference"), "fully_connected", "t")
    rq_ort = donnx.mac.requant_scales(sa, sb, sy, engines.get("onnxruntime"), "fully_connected", "t")
    assert rq_ref.scale[0] == float(np.float16(np.float16(sa * sb) / sy))
    assert rq_ort.scale[0] == float(np.float32(np.float32(np.float32(sa) * np.float32(sb)) / np.float32(sy)))


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False),
       st.floats(width=32, allow_nan=False, allow_infinity=False),
       st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_fma_rounds_once(a, b, c):
    from fractions import Fraction

    exact = Fraction(a) * Fraction(b) + Fraction(c)
    want = ref.f32(exact)
    got = fma_f32(np.float32(a), np.float32(b), np.float32(c))
    if isinstance(want, float):
        assert np.isinf(got) and np.sign(got) == np.sign(want)
    else:
        assert float(got) == float(want)
