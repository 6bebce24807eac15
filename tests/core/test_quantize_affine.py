"""Affine quantization: PyTorch/FBGEMM, ONNX Runtime MLAS and TFLite reference, against the oracle,
the cross-framework vectors of SEMANTICS 9, the engines themselves when installed, and refusals."""
import importlib
import tracemalloc
from fractions import Fraction

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import _jit as J
from dspsim import oracle as R

F = np.float32
BOUNDS = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767), "uint16": (0, 65535),
          "int32": (-(2**31), 2**31 - 1), "quint8": (0, 255), "qint8": (-128, 127), "qint32": (-(2**31), 2**31 - 1)}

# --------------------------------------------------------------------------------------------
# SEMANTICS 9, "Cross-framework float paths" (verified against torch 2.13, ORT 1.32, LiteRT 2.3)
# --------------------------------------------------------------------------------------------
S9 = float(F(0.00214854861))
X9 = F(0.273939937)


def test_torch_multiplies_by_reciprocal_and_rounds_the_tie_to_even():
    assert dspsim.quantize_per_tensor(np.array([X9]), S9, 0, "quint8").tolist() == [128]
    assert dspsim.quantize_per_channel(np.array([[X9]]), [S9], [0], 1, "quint8").tolist() == [[128]]
    assert dspsim.quantize_per_tensor(np.array([-X9]), S9, 0, "qint8").tolist() == [-128]
    assert dspsim.quantize_per_channel(np.array([[-X9]]), [S9], [0], 1, "qint8").tolist() == [[-128]]


def test_onnx_divides_and_gets_just_below_the_tie():
    assert dspsim.quantize_linear(np.array([X9]), S9, 0, dtype="uint8").tolist() == [127]
    assert dspsim.quantize_linear(np.array([-X9]), S9, 0, dtype="int8").tolist() == [-127]


def test_tflite_reference_divides_and_rounds_away_from_zero():
    assert dspsim.tflite_quantize(np.array([X9]), S9, 0, dtype="uint8").tolist() == [127]
    assert dspsim.tflite_quantize(np.array([1.25, F(2.5 * 0.5)]), 0.5, 0, dtype="int8").tolist() == [3, 3]


def test_torch_adds_zero_point_before_rounding_onnx_after():
    # x / scale = 0.5 exactly, zp = 3: torch rounds 3.5 -> 4, ORT rounds 0.5 -> 0, then + 3
    assert dspsim.quantize_per_tensor(np.array([0.5]), 1.0, 3, "quint8").tolist() == [4]
    assert dspsim.quantize_linear(np.array([0.5]), 1.0, 3, dtype="uint8").tolist() == [3]
    assert dspsim.tflite_quantize(np.array([0.5]), 1.0, 3, dtype="uint8").tolist() == [4]


def test_torch_per_tensor_rounds_once_through_fma():
    # found by search, confirmed on torch 2.13: f32(x*inv) + zp = -2.5 + 4 ties to 2, while the fused
    # x*inv + zp keeps the bits below float32 precision and rounds to 1; per-channel rounds twice
    x, s = F(-0.03074999898672104), float(F(0.0123))
    assert dspsim.quantize_per_tensor(np.array([x]), s, 4, "quint8").tolist() == [1]
    assert dspsim.quantize_per_channel(np.array([x]), [s], [4], 0, "quint8").tolist() == [2]


def test_qint32_dequantize_wraps_the_difference():
    q = np.array([2**31 - 1], np.int32)
    assert dspsim.dequantize_per_tensor(q, 1.0, -1).tolist() == [-2147483648.0]
    assert dspsim.dequantize_linear(q, 1.0, -1, axis=0).tolist() == [-2147483648.0]


def test_saturation_and_infinities():
    x = np.array([np.inf, -np.inf, 1e30, -1e30], F)
    assert dspsim.quantize_per_tensor(x, 0.1, 3, "quint8").tolist() == [255, 0, 255, 0]
    assert dspsim.quantize_per_tensor(x, 0.1, 3, "qint32").tolist() == [2**31 - 1, -(2**31)] * 2
    assert dspsim.quantize_linear(x, 0.1, 3, dtype="int16").tolist() == [32767, -32768] * 2
    # TFLite x86: beyond int32 the cast gives INT32_MIN, so +inf lands on the lowest code
    assert dspsim.tflite_quantize(x, 0.1, 3, dtype="int8").tolist() == [-128, -128, -128, -128]


# --------------------------------------------------------------------------------------------
# the oracle
# --------------------------------------------------------------------------------------------
scales = st.one_of(st.floats(1e-6, 10.0), st.sampled_from([1.0, 0.5, 0.25, 0.1, 1 / 255, 2.0**-20])).map(F)


@st.composite
def affine_case(draw, dtypes):
    dtype = draw(st.sampled_from(dtypes))
    lo, hi = BOUNDS[dtype]
    s = float(draw(scales))
    zp = draw(st.integers(max(lo, -1000), min(hi, 1000)))
    ks = draw(st.lists(st.integers(-40000, 40000), max_size=8))
    ties = [float(F((k + 0.5) * s)) for k in ks]
    near = draw(st.lists(st.floats(-300.0, 300.0).map(lambda v: float(F(v * s))), max_size=8))
    anywhere = draw(st.lists(st.one_of(st.floats(width=32, allow_nan=False), st.sampled_from([0.0, -0.0])),
                             max_size=4))
    return dtype, s, zp, np.array(ties + near + anywhere + [0.0] * 9, F)  # >= 9: a tail past 8 lanes


@settings(max_examples=300, deadline=None)
@given(affine_case(["quint8", "qint8", "qint32"]))
def test_torch_quantize_per_tensor_matches_oracle(case):
    dtype, s, zp, x = case
    lo, hi = BOUNDS[dtype]
    got = dspsim.quantize_per_tensor(x, s, zp, dtype).astype(np.int64).tolist()
    assert got == [R.torch_quantize(v, s, zp, lo, hi, fused=dtype != "qint32") for v in x.tolist()]
    y = dspsim.dequantize_per_tensor(np.array(got), s, zp)
    assert [Fraction(v) for v in y.tolist()] == [R.torch_dequantize_per_tensor(q, s, zp) for q in got]


@settings(max_examples=200, deadline=None)
@given(affine_case(["quint8", "qint8", "qint32"]), affine_case(["quint8", "qint8", "qint32"]))
def test_torch_quantize_per_channel_matches_oracle(c0, c1):
    dtype, s0, zp0, x0 = c0
    _, s1, zp1, x1 = c1
    lo, hi = BOUNDS[dtype]
    zp0, zp1 = (min(max(z, lo), hi) for z in (zp0, zp1))
    n = min(x0.size, x1.size)
    x = np.stack([x0[:n], x1[:n]], axis=0)  # channels on axis 0
    got = dspsim.quantize_per_channel(x, [s0, s1], [zp0, zp1], 0, dtype).astype(np.int64)
    for c, (s, zp) in enumerate([(s0, zp0), (s1, zp1)]):
        assert got[c].tolist() == [R.torch_quantize(v, s, zp, lo, hi, fused=False) for v in x[c].tolist()]
    y = dspsim.dequantize_per_channel(got, [s0, s1], [zp0, zp1], 0)
    for c, (s, zp) in enumerate([(s0, zp0), (s1, zp1)]):
        assert [Fraction(v) for v in y[c].tolist()] == [R.torch_dequantize_per_channel(q, s, zp) for q in got[c]]


@settings(max_examples=300, deadline=None)
@given(affine_case(["uint8", "int8", "uint16", "int16"]))
def test_onnx_quantize_linear_matches_oracle(case):
    dtype, s, zp, x = case
    lo, hi = BOUNDS[dtype]
    got = dspsim.quantize_linear(x, s, zp, dtype=dtype).astype(np.int64).tolist()
    assert got == [R.onnx_quantize(v, s, zp, lo, hi) for v in x.tolist()]
    y = dspsim.dequantize_linear(np.array(got), s, zp)
    assert [Fraction(v) for v in y.tolist()] == [R.onnx_dequantize(q, s, zp) for q in got]


@settings(max_examples=300, deadline=None)
@given(affine_case(["uint8", "int8", "int16"]))
def test_tflite_quantize_matches_oracle(case):
    dtype, s, zp, x = case
    lo, hi = BOUNDS[dtype]
    got = dspsim.tflite_quantize(x, s, zp, dtype=dtype).astype(np.int64).tolist()
    assert got == [R.tflite_quantize(v, s, zp, lo, hi) for v in x.tolist()]
    y = dspsim.tflite_dequantize(np.array(got), s, zp)
    assert [Fraction(v) for v in y.tolist()] == [R.tflite_dequantize(q, s, zp) for q in got]


def test_onnx_per_axis_uses_each_channel_scale_and_zero_point():
    x = np.arange(12, dtype=F).reshape(2, 3, 2)
    got = dspsim.quantize_linear(x, [1.0, 2.0, 4.0], [0, 1, 2], axis=1, dtype="uint8")
    for c, (s, zp) in enumerate([(1.0, 0), (2.0, 1), (4.0, 2)]):
        assert got[:, c].tolist() == dspsim.quantize_linear(x[:, c], s, zp, dtype="uint8").tolist()
    y = dspsim.dequantize_linear(got, [1.0, 2.0, 4.0], [0, 1, 2], axis=-2)
    assert y[:, 2].tolist() == ((got[:, 2].astype(np.int64) - 2) * 4.0).tolist()


def test_tflite_per_channel_matches_per_tensor_slices():
    x = np.linspace(-3, 3, 10, dtype=F).reshape(5, 2)
    got = dspsim.tflite_quantize(x, [0.1, 0.3], [1, -2], dtype="int8", axis=1)
    assert got[:, 1].tolist() == dspsim.tflite_quantize(x[:, 1], 0.3, -2, dtype="int8").tolist()


# --------------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, exc, rule", [
    (lambda: dspsim.quantize_per_tensor(np.zeros(2, F), 0.1, 0, "int16"), ValueError, "unknown dtype"),
    (lambda: dspsim.quantize_per_tensor(np.zeros(2, F), 0.0, 0, "quint8"), ValueError, "> 0"),
    (lambda: dspsim.quantize_per_tensor(np.zeros(2, F), np.inf, 0, "quint8"), ValueError, "finite"),
    (lambda: dspsim.quantize_per_tensor(np.zeros(2, F), 0.1, 256, "quint8"), ValueError, "zero_point"),
    (lambda: dspsim.quantize_per_tensor(np.array([np.nan], F), 0.1, 0, "quint8"), ValueError, "NaN"),
    (lambda: dspsim.quantize_per_tensor(np.zeros(2, np.int32), 0.1, 0, "quint8"), TypeError, "floating"),
    (lambda: dspsim.quantize_per_channel(np.zeros((2, 3), F), [0.1] * 2, [0] * 2, 1, "qint8"), ValueError, "length"),
    (lambda: dspsim.quantize_per_channel(np.zeros((2, 3), F), [0.1] * 3, [0] * 3, 2, "qint8"), ValueError, "out of bounds"),
    (lambda: dspsim.quantize_linear(np.zeros(2, F), 0.1, 0, dtype="int32"), ValueError, "not supported"),
    (lambda: dspsim.quantize_linear(np.zeros((2, 3), F), [0.1] * 2, 0, axis=1), ValueError, "length"),
    (lambda: dspsim.quantize_linear(np.zeros((2, 3), F), [0.1] * 3, [0] * 2, axis=1), ValueError, "zero_point"),
    (lambda: dspsim.quantize_linear(np.zeros(2, F), 0.1, -1, dtype="uint8"), ValueError, "zero_point"),
    (lambda: dspsim.dequantize_linear(np.zeros(2, F), 0.1, 0), TypeError, "integer"),
    (lambda: dspsim.tflite_quantize(np.zeros(2, F), 0.1, 0, dtype="int32"), ValueError, "unknown dtype"),
    (lambda: dspsim.tflite_quantize(np.zeros(2, F), -0.1, 0), ValueError, "> 0"),
    (lambda: dspsim.dequantize_per_tensor(np.zeros(2, np.int8), [0.1, 0.2], 0), ValueError, "scalars"),
    (lambda: dspsim.dequantize_per_channel(np.zeros((2, 3), np.int8), [0.1] * 2, [0] * 2, 1), ValueError, "length"),
])
def test_affine_refusals(call, exc, rule):
    with pytest.raises(exc, match=rule):
        call()


# --------------------------------------------------------------------------------------------
# the engines themselves (skipped when absent); tests/core/test_live_quantize.py sweeps wider
# --------------------------------------------------------------------------------------------
@pytest.mark.live
def test_ties_match_live_torch_in_vector_body_and_tail():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for dtype, tdt in (("quint8", torch.quint8), ("qint8", torch.qint8), ("qint32", torch.qint32)):
        s = float(F(0.0123))
        zp = 7
        x = ((rng.integers(-100, 100, 37) + 0.5) * F(s)).astype(F)
        want = torch.quantize_per_tensor(torch.from_numpy(x), s, zp, tdt).int_repr().numpy()
        assert dspsim.quantize_per_tensor(x, s, zp, dtype).tolist() == want.tolist()
        want = torch.quantize_per_channel(torch.from_numpy(x[:, None]), torch.tensor([s], dtype=torch.float64),
                                          torch.tensor([zp]), 1, tdt).int_repr().numpy()
        assert dspsim.quantize_per_channel(x[:, None], [s], [zp], 1, dtype).tolist() == want.tolist()


# --------------------------------------------------------------------------------------------
# Large arrays: the chunked (and parallel) loops give what each piece gives on its own
# --------------------------------------------------------------------------------------------
Q = importlib.import_module("dspsim.quantize")
compiled_only = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="the pure-Python loops have no chunks")


def _channel_params(rng, n):
    scales = (0.02 * rng.uniform(0.5, 2.0, n)).astype(F)
    return {"quantize_per_channel": (scales.astype(np.float64), rng.integers(-20, 20, n)),
            "quantize_linear": (scales, rng.integers(0, 60000, n)),
            "tflite_quantize": (scales, rng.integers(-20, 20, n)),
            "quantize": (-rng.uniform(0.5, 4.0, n), rng.uniform(0.5, 4.0, n)),
            "quantize_pof2": (rng.integers(2, 9, n),),
            "dequantize_per_channel": (scales.astype(np.float64), rng.integers(-20, 20, n)),
            "dequantize_linear": (scales, rng.integers(-20, 20, n)),
            "dequantize": (-rng.uniform(0.5, 4.0, n), rng.uniform(0.5, 4.0, n)),
            "dequantize_pof2": (rng.integers(-3, 9, n),)}


CHANNEL_CALLS = {
    "quantize_per_channel": lambda x, p, ax: dspsim.quantize_per_channel(x, *p, ax, "qint8"),
    "quantize_linear": lambda x, p, ax: dspsim.quantize_linear(x, *p, axis=ax, dtype="uint16"),
    "tflite_quantize": lambda x, p, ax: dspsim.tflite_quantize(x, *p, dtype="int8", axis=ax),
    "quantize": lambda x, p, ax: dspsim.quantize(x, *p, "qint16", mode="SCALED", axis=ax).output,
    "quantize_pof2": lambda x, p, ax: dspsim.quantize_pof2(x, *p, rounding="half_up", axis=ax),
    "dequantize_per_channel": lambda q, p, ax: dspsim.dequantize_per_channel(q, *p, ax),
    "dequantize_linear": lambda q, p, ax: dspsim.dequantize_linear(q, *p, axis=ax),
    "dequantize": lambda q, p, ax: dspsim.dequantize(q, *p, axis=ax),
    "dequantize_pof2": lambda q, p, ax: dspsim.dequantize_pof2(q, *p, axis=ax),
}
TENSOR_CALLS = {
    "quantize_per_tensor": lambda x: dspsim.quantize_per_tensor(x, 0.0213, 7, "quint8"),
    "quantize MIN_FIRST": lambda x: dspsim.quantize(x, -2.5, 3.0, "quint8", mode="MIN_FIRST").output,
    "quantize MIN_COMBINED": lambda x: dspsim.quantize(x, -2.5, 3.0, "qint8").output,
    "dequantize_per_tensor": lambda q: dspsim.dequantize_per_tensor(q, 0.0213, 7),
    "tflite_dequantize": lambda q: dspsim.tflite_dequantize(q, 0.0213, -3),
}


def _large_input(name, shape):
    rng = np.random.default_rng(7)
    if "dequantize" in name:
        return rng.integers(-128, 128, shape).astype(np.int8)
    x = (rng.standard_normal(shape) * 2).astype(F)
    x.reshape(-1)[::7] = ((rng.integers(-200, 200, x.size)[::7] + 0.5) * F(0.0213)).astype(F)  # ties
    return x


def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@compiled_only
@pytest.mark.parametrize("parallel", [False, pytest.param(True, marks=pytest.mark.slow)])
@pytest.mark.parametrize("axis", [0, 1, 2])  # inner = 35000 (pieces of rows), 7000 (runs of rows), 1
@pytest.mark.parametrize("name", list(CHANNEL_CALLS))
def test_chunked_per_channel_loops_match_each_channel_in_small_pieces(name, axis, parallel, monkeypatch):
    shape = (3, 5, 7000)
    x = _large_input(name, shape)
    params = _channel_params(np.random.default_rng(axis), shape[axis])[name]
    call = CHANNEL_CALLS[name]
    if parallel:
        monkeypatch.setattr(J, "PARALLEL_MIN", 1)  # every call split over the threads
    got = np.moveaxis(call(x, params, axis), axis, 0)
    monkeypatch.setattr(J, "PARALLEL_MIN", 1 << 62)  # every call on one thread
    for c in range(shape[axis]):
        sl = np.ascontiguousarray(np.moveaxis(x, axis, 0)[c]).reshape(-1)
        pc = tuple(np.asarray(p)[c:c + 1] for p in params)
        want = np.concatenate([call(sl[i:i + 999].reshape(1, -1), pc, 0).reshape(-1) for i in range(0, sl.size, 999)])
        assert _same_bits(np.ascontiguousarray(got[c]).reshape(-1), want), (name, axis, c)


@compiled_only
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("name", list(TENSOR_CALLS))
def test_chunked_per_tensor_loops_match_small_pieces(name, parallel, monkeypatch):
    x = _large_input(name, (5 * Q._CHUNK + 123,))
    call = TENSOR_CALLS[name]
    if parallel:
        monkeypatch.setattr(J, "PARALLEL_MIN", 1)  # every call split over the threads
    got = call(x)
    monkeypatch.setattr(J, "PARALLEL_MIN", 1 << 62)  # every call on one thread
    want = np.concatenate([call(x[i:i + 999]) for i in range(0, x.size, 999)])
    assert _same_bits(got, want)


@pytest.mark.parametrize("name", list(CHANNEL_CALLS) + list(TENSOR_CALLS))
def test_quantizers_allocate_only_their_output(name):
    """No widened (int64 / float64) or broadcast copies of the data: the output is the only large
    allocation (one pass, straight into the output dtype)."""
    shape = (4, 16, 256)
    x = _large_input(name, shape)
    if name in CHANNEL_CALLS:
        params = _channel_params(np.random.default_rng(0), shape[1])[name]
        run = lambda: CHANNEL_CALLS[name](x, params, 1)  # noqa: E731
    else:
        run = lambda: TENSOR_CALLS[name](x)  # noqa: E731
    run()
    tracemalloc.start()
    try:
        out = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= out.nbytes + 16384, (peak, out.nbytes)


def test_fma_rounds_once_where_a_float64_sum_would_round_twice():
    # x * inv = 3.5 + 2^-17 + 2^-46 exactly (48 bits); + 199 in float64 rounds the 2^-46 away (a tie
    # to even) onto the float32 midpoint 202.5 + 2^-17, which then rounds to even, to 202.5, and
    # rint gives 202. fmaf rounds the exact sum once, up to 202.5 + 2^-16: code 203.
    x, inv = F(15081517 * 2.0**-23), F(16330661 * 2.0**-23)
    assert float(x) * float(inv) == 3.5 + 2.0**-17 + 2.0**-46
    naive = F(float(x) * float(inv) + 199.0)
    assert naive == F(202.5) and np.rint(naive) == 202
    for fma in (J.fma_f32, numba.njit(lambda a, b, c: J.fma_f32(a, b, c))):  # Python body and llvm.fma
        assert fma(x, inv, F(199.0)) == F(202.5 + 2.0**-16)
    scale = float(F(1.0) / inv)
    assert F(F(1.0) / F(scale)) == inv
    assert dspsim.quantize_per_tensor(np.array([x]), scale, 199, "quint8").tolist() == [203]
