"""The quantized ReLU family against the oracle, SEMANTICS 3/9, live torch, and refusals."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import oracle as ref
from dspsim.kernels import leaky_relu, relu6, relu_n1_to_1, tflite_activation_range, tflm_relu6, torch_relu

SETTINGS = settings(max_examples=300, deadline=None)
RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}
scales = st.floats(1e-3, 1.0, allow_nan=False)


def codes(dtype):
    lo, hi = RANGES[dtype]
    return st.lists(st.integers(lo, hi), min_size=1, max_size=20).map(lambda v: np.array(v, dtype))


def test_semantics9_relu6_range():
    assert tflite_activation_range("relu6", 0.05, -128) == (-128, -8)
    assert tflite_activation_range("relu", 0.05, 3) == (3, 127)
    assert tflite_activation_range(None, 0.05, 3, "uint8") == (0, 255)
    assert tflite_activation_range("relu_n1_to_1", 0.25, 0) == (-4, 4)


def test_relu_defaults_to_identity_scale_and_zero_point_floor():
    x = np.array([-128, -5, 3, 4, 127], np.int8)
    assert dspsim.relu(x, input_zero_point=3).tolist() == [3, 3, 3, 4, 127]


@SETTINGS
@given(dtype=st.sampled_from(["int8", "uint8", "int16"]), data=st.data(), s_in=scales, s_out=scales,
       rounding=st.sampled_from(["double", "single"]))
def test_relu_requantizes_like_the_oracle(dtype, data, s_in, s_out, rounding):
    x = data.draw(codes(dtype))
    lo, hi = RANGES[dtype]
    zi, zo = data.draw(st.integers(lo, hi)), data.draw(st.integers(lo, hi))
    m, s = dspsim.quantize_multiplier(float(np.float32(np.float32(s_in) / np.float32(s_out))), rounding)
    act_max = data.draw(st.integers(max(lo, zo), hi))
    got = dspsim.relu(x, input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, act_max=act_max,
                      rounding=rounding)
    want = [ref.relu(int(v), zi, zo, m, s, max(lo, zo), act_max, rounding) for v in x]
    assert got.dtype == x.dtype and got.tolist() == want


@SETTINGS
@given(data=st.data(), s_in=scales, s_out=scales, kind=st.sampled_from(["relu6", "relu_n1_to_1"]))
def test_relu6_and_relu_n1_to_1_from_scales_match_oracle(data, s_in, s_out, kind):
    x = data.draw(codes("int8"))
    zi, zo = data.draw(st.integers(-128, 127)), data.draw(st.integers(-128, 127))
    fn = relu6 if kind == "relu6" else relu_n1_to_1
    got = fn(x, input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
    m, s = ref.quantize_multiplier(float(ref.f32(ref.f32(s_in) / ref.f32(s_out))))
    lo, hi = ref.tflite_activation_range(kind, s_out, zo, -128, 127)
    assert got.tolist() == [ref.relu(int(v), zi, zo, m, s, lo, hi) for v in x]


@SETTINGS
@given(data=st.data(), s_in=scales, s_out=scales, alpha=st.floats(0.0, 2.0),
       dtype=st.sampled_from(["int8", "uint8", "int16"]))
def test_leaky_relu_matches_oracle(data, s_in, s_out, alpha, dtype):
    x = data.draw(codes(dtype))
    lo, hi = RANGES[dtype]
    zi, zo = data.draw(st.integers(lo, hi)), data.draw(st.integers(lo, hi))
    got = leaky_relu(x, alpha=alpha, input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
    assert got.tolist() == [ref.leaky_relu(int(v), zi, zo, alpha, s_in, s_out, lo, hi) for v in x]


@SETTINGS
@given(data=st.data(), s_in=st.floats(1e-3, 10.0), dtype=st.sampled_from(["int8", "uint8"]))
def test_tflm_relu6_clamps_in_the_input_domain(data, s_in, dtype):
    x = data.draw(codes(dtype))
    lo, hi = RANGES[dtype]
    zi = data.draw(st.integers(lo, hi))
    got = tflm_relu6(x, input_scale=s_in, input_zero_point=zi)
    assert got.tolist() == [ref.tflm_relu6(int(v), zi, s_in, lo, hi) for v in x]


def test_tflm_relu6_ties_round_away_from_zero():
    # f32(6 / f32(2.4)) = 2.5: ties away from zero give 3 (ties to even would give 2)
    x = np.arange(-5, 10, dtype=np.int8)
    assert tflm_relu6(x, input_scale=2.4, input_zero_point=0).max() == 3


def test_torch_relu_is_max_with_zero_point():
    x = np.array([0, 9, 10, 11, 255], np.uint8)
    assert torch_relu(x, zero_point=10).tolist() == [10, 10, 10, 11, 255]


def test_live_torch_quantized_relu_matches():
    torch = pytest.importorskip("torch")
    x = np.arange(256, dtype=np.uint8)
    q = torch._make_per_tensor_quantized_tensor(torch.from_numpy(x), 0.1, 77)
    want = torch.relu(q).int_repr().numpy()
    assert np.array_equal(torch_relu(x, zero_point=77), want)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: dspsim.relu(np.zeros(3, np.int32), input_zero_point=0), TypeError, "^relu: x must have dtype"),
    (lambda: dspsim.relu(np.zeros(3, np.int8), input_zero_point=200), ValueError, "^relu: input_zero_point"),
    (lambda: dspsim.relu(np.zeros(3, np.int8), input_zero_point=0, multiplier=1 << 30), ValueError,
     "^relu: give both multiplier and shift"),
    (lambda: dspsim.relu(np.zeros(3, np.int8), input_zero_point=0, multiplier=1 << 31, shift=0), ValueError,
     r"^relu: multiplier must be in \[0, "),
    (lambda: dspsim.relu(np.zeros(3, np.int8), input_zero_point=0, act_max=-5), ValueError,
     r"^relu: act_min \(0\) must not exceed act_max \(-5\)"),
    (lambda: relu6(np.zeros(3, np.int8), input_scale=0.0, input_zero_point=0, output_scale=1.0,
                   output_zero_point=0), ValueError, "^relu6: input_scale must be finite and positive"),
    (lambda: leaky_relu(np.zeros(3, np.int8), alpha=float("inf"), input_scale=1.0, input_zero_point=0,
                        output_scale=1.0, output_zero_point=0), ValueError, "^leaky_relu: alpha must be a finite float"),
    (lambda: tflite_activation_range("gelu", 0.1, 0), ValueError, "^tflite_activation_range: activation"),
    (lambda: torch_relu(np.zeros(3, np.uint8), zero_point=-1), ValueError, "^torch_relu: zero_point"),
])
def test_refusals(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@pytest.mark.parametrize("pair,rounding", [(None, "double"), ((1 << 30, 1), "single"), ((1518500250, -1), "double"),
                                           ((1518500250, 3), "single")])
def test_relu_loop_equals_requantize_of_the_difference_also_when_split_over_threads(dtype, pair, rounding):
    # 600001 elements (> 2^19: rows split over threads, a short last row); the identity pair takes the plain
    # clamp loop, other pairs the fixed-point one: both give requantize(x - zi) clamped
    from dspsim import Requant, requantize
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max + 1, 600001).astype(dtype)
    zi, zo = (info.min + info.max) // 2 - 3, (info.min + info.max) // 2 + 5
    m, s = (1 << 30, 1) if pair is None else pair
    got = dspsim.relu(x, input_zero_point=zi, output_zero_point=zo, act_max=info.max - 7, rounding=rounding,
                      **({} if pair is None else {"multiplier": m, "shift": s}))
    want = requantize(x.astype(np.int64) - zi, Requant.fixed_point(m, s, rounding), zo, max(info.min, zo),
                      info.max - 7, out_dtype=np.dtype(dtype).name)
    assert got.dtype == dtype and np.array_equal(got, want)
