"""16x8 kernels of issue 12 (int16 SOFTMAX, LEAKY_RELU with a negative alpha, LiteRT's power-of-two SUB, the
accumulator of the 16x8 MAC kernels) against the oracles of dspsim.oracle, and the golden family
``tests/golden/ops/int16_kernels.npz`` (make_golden_int16_edges.py) per engine, with its refusals and the
engine differences the models explain."""
from __future__ import annotations

import os

import numpy as np
import pytest
from arith_golden import HERE, golden_cases, mismatches, params
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_views import oracle_requant

import dspsim
import dspsim.oracle as R
from dspsim.accumulator import Accumulator
from dspsim.kernels import PotAddParams, leaky_relu, pot_add
from dspsim.kernels.nonlinear.softmax import (
    Int16LutFunction, Int16SoftmaxParams, lut_populate_int16, softmax, tflite_int16_softmax_params,
    tflite_softmax_params,
)
from dspsim.requant import Requant
from dspsim.tflite import load_model

SETTINGS = settings(max_examples=60, deadline=None)
_ENGINES = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack"}


def _int16(draw, n, extreme):
    codes = st.sampled_from([-32768, -32767, -1, 0, 1, 32766, 32767]) if extreme else st.integers(-32768, 32767)
    return np.array(draw(st.lists(codes, min_size=n, max_size=n)), np.int16)


# --------------------------------------------------------------------------------------------
# int16 SOFTMAX
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(st.data())
def test_int16_softmax_matches_the_oracle(data):
    draw = data.draw
    rows, depth = draw(st.integers(1, 4)), draw(st.sampled_from([1, 2, 3, 7, 64, 300]))
    x = _int16(draw, rows * depth, draw(st.booleans())).reshape(rows, depth)
    if draw(st.booleans()):  # a narrow row: the exp table's fine part and ties of the lookup
        x = (x // 256).astype(np.int16)
    scale = float(np.float32(10.0 ** draw(st.floats(-7, -1.5))))
    beta = draw(st.sampled_from([1.0, 0.5, 0.3, 1.7, 4.0]))
    p = tflite_int16_softmax_params(input_scale=scale, beta=beta, prepare=draw(st.sampled_from(["litert", "tflm"])))
    assert np.array_equal(softmax(x, params=p), R.softmax_oracle(x, params=p))


def test_int16_softmax_row_extremes():
    p = tflite_int16_softmax_params(input_scale=3e-4)
    x = np.array([[-32768, 32767], [5, 5], [32767, 32767], [-32768, -32768]], np.int16)
    y = softmax(x, params=p)
    assert np.array_equal(y, R.softmax_oracle(x, params=p))
    # a difference beyond -10 clamps to the exp table's first entry, exp(-10) in Q0.15, not 0
    assert 0 < y[0, 0] <= p.exp_lut[0] and 32760 <= int(y[0, 0]) + int(y[0, 1]) <= 32768
    assert y[1, 0] == y[1, 1] == y[2, 0] == y[3, 1]  # equal entries share the mass


def test_the_engines_tables_differ_by_their_float_type():
    """TFLM fills both tables in float32, LiteRT in double (the same recipe): some entries differ."""
    kw = dict(input_scale=1.0 / 65535, input_zero_point=-32768, output_scale=2.0 / 65535, output_zero_point=0)
    f32 = lut_populate_int16(Int16LutFunction.ONE_OVER_ONE_PLUS_X, float_type="float32", **kw)
    f64 = lut_populate_int16(Int16LutFunction.ONE_OVER_ONE_PLUS_X, float_type="float64", **kw)
    assert f32[0] == f64[0] == 32767 and f32[512] == f64[512] == 16384  # 1/(1+0) saturates, 1/(1+1) = 1/2
    assert 0 < np.count_nonzero(f32 != f64) < 10 and np.abs(f32.astype(int) - f64).max() == 1
    assert np.all(np.diff(f64.astype(int)) <= 0)  # 1/(1+x) decreases


def test_int16_softmax_goldens_need_each_engines_own_tables():
    """Swapping the Prepare of the two engines breaks the golden that differs between them."""
    case, arrays = next((c, a) for c, a in golden_cases("int16", ["softmax16_4x64_s1"]))
    scale = case["inputs"][0]["quant"]["scale"][0]
    assert case["diffs"]["tflm:litert_ref"]  # the engines differ here
    for engine, own, other in (("tflm", "tflm", "litert"), ("litert_ref", "litert", "tflm")):
        want = arrays[f"{engine}/out0"]
        got = {prep: np.stack([softmax(x, params=tflite_int16_softmax_params(input_scale=scale, prepare=prep))
                               for x in arrays["in0"]]) for prep in (own, other)}
        assert np.array_equal(got[own], want) and not np.array_equal(got[other], want)


def test_int16_softmax_multiplier_follows_each_engines_product():
    """LiteRT forms f32(s_in * beta), TFLM double(s_in) * double(beta): for beta 0.3 the multipliers differ."""
    a = tflite_int16_softmax_params(input_scale=1.2223761586938053e-4, beta=0.3, prepare="litert")
    b = tflite_int16_softmax_params(input_scale=1.2223761586938053e-4, beta=0.3, prepare="tflm")
    s, beta = np.float32(1.2223761586938053e-4), np.float32(0.3)
    assert (a.input_multiplier, a.input_left_shift) == R.quantize_multiplier(float(np.float32(s * beta)) / (10 / 65535))
    assert (b.input_multiplier, b.input_left_shift) == R.quantize_multiplier(float(s) * float(beta) / (10 / 65535))
    assert a.input_multiplier != b.input_multiplier


@pytest.mark.parametrize("call,exc,msg", [
    (lambda p: softmax(np.zeros((2, 3), np.int16), params=tflite_softmax_params(input_scale=0.1)), TypeError,
     "Int16SoftmaxParams"),
    (lambda p: softmax(np.zeros((2, 3), np.int16), params=p, out_dtype="int8"), ValueError, "int16 output"),
    (lambda p: softmax(np.zeros((2, 3), np.int8), params=p), TypeError, "SoftmaxParams for an int8 x"),
    (lambda p: softmax(np.zeros((2, 3), np.int16), params=Int16SoftmaxParams(1, 0, p.exp_lut[:512],
                                                                            p.one_over_one_plus_x_lut)),
     ValueError, "513 entries"),
    (lambda p: softmax(np.zeros((2, 3), np.int16), params=Int16SoftmaxParams(1, 31, p.exp_lut, p.exp_lut)),
     ValueError, "input_left_shift"),
    (lambda p: tflite_int16_softmax_params(input_scale=0.0), ValueError, "input_scale"),
    (lambda p: tflite_int16_softmax_params(input_scale=1e-4, prepare="xnnpack"), ValueError, "xnnpack"),
    (lambda p: lut_populate_int16("sin", input_scale=1, input_zero_point=0, output_scale=1, output_zero_point=0),
     ValueError, "sin"),
])
def test_int16_softmax_rejects_bad_input(call, exc, msg):
    p = tflite_int16_softmax_params(input_scale=1e-4)
    with pytest.raises(exc, match=msg):
        call(p)


# --------------------------------------------------------------------------------------------
# LEAKY_RELU with a negative alpha
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(st.data())
def test_leaky_relu_any_alpha_matches_the_oracle(data):
    draw = data.draw
    dtype = draw(st.sampled_from(["int8", "int16"]))
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1, 1 if dtype == "int8" else 37).astype(dtype)
    kw = dict(alpha=draw(st.sampled_from([-0.5, -0.3, -1.5, -1.0, 1.7, 2.5, 0.0, -300.0])),
              input_scale=draw(st.sampled_from([0.05, 2.0**-12, 3e-4])), output_scale=draw(st.sampled_from(
                  [0.05, 2.0**-12, 2e-4, 4.0])),
              input_zero_point=draw(st.integers(-5, 5)), output_zero_point=draw(st.integers(-5, 5)),
              quotient=draw(st.sampled_from(["float32", "double"])), rounding=draw(st.sampled_from(["double", "single"])),
              negative_alpha=draw(st.sampled_from(["negate", "signed_multiplier"])))
    assert np.array_equal(leaky_relu(x, **kw), R.leaky_relu_oracle(x, **kw))


def test_negative_alpha_rules_differ_exactly_on_the_ties():
    """alpha -0.5 on equal scales (M = -2^30, shift 0): |v| / 2 rounded down by the negated rule (``-SRDHM``),
    up by the signed multiplier (SRDHM's ties toward +inf): they differ on every odd negative input only."""
    x = np.arange(-32768, 32768, dtype=np.int64).astype(np.int16)
    kw = dict(alpha=-0.5, input_scale=2.0**-12, output_scale=2.0**-12, input_zero_point=0, output_zero_point=0)
    a = leaky_relu(x, **kw, negative_alpha="negate").astype(np.int64)
    b = leaky_relu(x, **kw, negative_alpha="signed_multiplier").astype(np.int64)
    v = x.astype(np.int64)
    n = -v[v < 0]
    assert np.array_equal(a[v < 0], n // 2) and np.array_equal(b[v < 0], (n + 1) // 2)
    assert np.array_equal(a[v >= 0], v[v >= 0]) and np.array_equal(b[v >= 0], v[v >= 0])


def test_leaky_relu_rejects_bad_alpha_rules():
    x = np.zeros(4, np.int8)
    kw = dict(input_scale=0.1, output_scale=0.1, input_zero_point=0, output_zero_point=0)
    with pytest.raises(ValueError, match="leaky_relu: alpha must be a finite float"):
        leaky_relu(x, alpha=float("nan"), **kw)
    with pytest.raises(ValueError, match="leaky_relu: negative_alpha must be one of"):
        leaky_relu(x, alpha=-0.5, negative_alpha="flip", **kw)


# --------------------------------------------------------------------------------------------
# LiteRT's power-of-two int16 SUB
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(st.data())
def test_pot_sub_matches_the_oracle(data):
    draw = data.draw
    n = draw(st.integers(1, 40))
    x1 = _int16(draw, n, draw(st.booleans()))
    x2 = _int16(draw, n, draw(st.booleans()))
    k = draw(st.integers(0, 15))
    params = PotAddParams(0, -k) if draw(st.booleans()) else PotAddParams(-k, 0)
    lo = draw(st.sampled_from([-32768, 0, -100]))
    if draw(st.booleans()):  # broadcast the second operand (BroadcastSub16POTSlow)
        x2 = x2[:1]
    got = pot_add(x1, x2, params, act_min=lo, act_max=32767, subtract=True)
    assert np.array_equal(got, R.pot_add_oracle(x1, x2, params, act_min=lo, act_max=32767, subtract=True))


def test_pot_sub_saturates_the_int16_difference():
    x1 = np.array([-32768, 32767, 100], np.int16)
    x2 = np.array([32767, -32768, 100], np.int16)
    assert pot_add(x1, x2, PotAddParams(0, 0), subtract=True).tolist() == [-32768, 32767, 0]


# --------------------------------------------------------------------------------------------
# the accumulator model on the 16x8 kernels: int64 by default, 40 and 48 bits, wrap and saturate
# --------------------------------------------------------------------------------------------
_RQ16 = Requant.fixed_point(1 << 30, -20, "int64")  # the 16x8 requantization (16-bit multiplier, int64 sum)


@st.composite
def _acc16_case(draw):
    kind = draw(st.sampled_from(["fc", "conv", "dw"]))
    extreme = draw(st.booleans())
    ws = st.sampled_from([-128, 127]) if extreme else st.integers(-128, 127)
    bits = draw(st.sampled_from([32, 40, 48, 64]))
    if kind == "fc":
        k, n = draw(st.integers(1, 300)), draw(st.integers(1, 3))
        xshape, wshape, nout = (2, k), (n, k), n
    elif kind == "conv":
        c, o = draw(st.integers(1, 4)), draw(st.integers(1, 3))
        xshape, wshape, nout = (1, 4, 5, c), (o, 3, 3, c), o
    else:
        c, m = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        xshape, wshape, nout = (1, 5, 4, c), (1, 3, 3, c * m), c * m
    x = _int16(draw, int(np.prod(xshape)), extreme).reshape(xshape)
    w = np.array(draw(st.lists(ws, min_size=int(np.prod(wshape)), max_size=int(np.prod(wshape)))), np.int8)
    # the int64 MultiplyByQuantizedMultiplier's contract: |acc| < 2^47 (beyond it the C product wraps)
    big = 1 << min(bits - 1, 46)
    bias = draw(st.lists(st.integers(-big, big - 1) | st.sampled_from([0, big - 1, -big]), min_size=nout,
                         max_size=nout))
    return dict(kind=kind, x=x, w=w.reshape(wshape), bias=np.array(bias, np.int64), bits=bits,
                overflow=draw(st.sampled_from(["wrap", "saturate"])), padding=draw(st.sampled_from(["VALID", "SAME"])))


@settings(max_examples=80, deadline=None)
@given(_acc16_case())
def test_16x8_accumulator_mac_by_mac_matches_the_oracle(c):
    acc = Accumulator(c["bits"], c["overflow"])
    model = (c["bits"], c["overflow"], False)
    kw = dict(input_zero_point=0, output_zero_point=0, requant=_RQ16, out_dtype="int16", accumulator=acc, stats=True)
    x, w, b, rq = c["x"], c["w"], c["bias"], oracle_requant(_RQ16)
    if c["kind"] == "fc":
        out, st_ = dspsim.fully_connected(x, w, b, **kw)
        want, events, _ = R.fully_connected(x.tolist(), w.tolist(), b.tolist(), 0, 0, 0, rq, -32768, 32767,
                                            acc_model=model)
    else:
        pads = (1, 1, 1, 1) if c["padding"] == "SAME" else (0, 0, 0, 0)
        fn, oracle = (dspsim.conv2d, R.conv2d) if c["kind"] == "conv" else (dspsim.depthwise_conv2d,
                                                                              R.depthwise_conv2d)
        extra = {} if c["kind"] == "conv" else {"depth_multiplier": w.shape[3] // x.shape[3]}
        out, st_ = fn(x, w, b, padding=c["padding"], **extra, **kw)
        o_extra = {} if c["kind"] == "conv" else {"depth_multiplier": extra["depth_multiplier"]}
        want, events, _ = oracle(x.tolist(), w.tolist(), b.tolist(), 0, 0, 0, rq, -32768, 32767, pads=pads,
                                 acc_model=model, **o_extra)
    assert out.tolist() == want and st_.overflow_events == events


@pytest.mark.parametrize("overflow", ["wrap", "saturate"])
@pytest.mark.parametrize("bits", [48, 64])
def test_an_int64_bias_beyond_the_register_is_an_event(bits, overflow):
    """The bias addition that leaves a 48- or 64-bit register (a 64-bit one: the int64 sum itself wraps) is
    counted and wrapped or saturated as the oracle does it, MAC by MAC."""
    x = np.full((1, 4, 5, 1), -32768, np.int16)
    w = np.full((1, 3, 3, 1), -128, np.int8)  # nine products of 2^22
    b = np.array([(1 << 63) - 9 * (1 << 22)], np.int64)  # the sum reaches 2^63 exactly
    rq = Requant.shift_only(-50)
    out, st_ = dspsim.conv2d(x, w, b, input_zero_point=0, output_zero_point=0, requant=rq, out_dtype="int16",
                             accumulator=Accumulator(bits, overflow), stats=True)
    want, events, _ = R.conv2d(x.tolist(), w.tolist(), b.tolist(), 0, 0, 0, oracle_requant(rq), -32768, 32767,
                               acc_model=(bits, overflow, False))
    assert out.tolist() == want and st_.overflow_events == events == 6


def test_16x8_default_accumulator_is_exact_int64():
    """300 MACs of 32767 x 127 plus a bias near 2^40: exact in the default (int64) accumulator, wrapped by a
    32-bit one, saturated by a 40-bit one (the bias alone fills it)."""
    x = np.full((1, 300), 32767, np.int16)
    w = np.full((1, 300), 127, np.int8)
    b = np.array([(1 << 39) - 1], np.int64)
    kw = dict(input_zero_point=0, output_zero_point=0, requant=Requant.shift_only(-30), out_dtype="int16", stats=True)
    exact = 300 * 32767 * 127 + (1 << 39) - 1
    out64, st64 = dspsim.fully_connected(x, w, b, **kw)
    out40, st40 = dspsim.fully_connected(x, w, b, accumulator=Accumulator(40, "saturate"), **kw)
    out32, st32 = dspsim.fully_connected(x, w, b, accumulator=Accumulator(32, "wrap"), **kw)
    assert out64.tolist() == [[R.rounding_divide_by_pot(exact, 30)]] and st64.overflow_events == 0
    assert out40.tolist() == [[R.rounding_divide_by_pot((1 << 39) - 1, 30)]] and st40.overflow_events == 1
    assert out32.tolist() == [[R.rounding_divide_by_pot(R.wrap(exact, 32), 30)]] and st32.overflow_events >= 1


# --------------------------------------------------------------------------------------------
# the golden family int16_kernels: every value of every run per engine
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case,arrays,engine", params("int16_kernels", [""]))
def test_int16_kernel_goldens_bit_exact_per_engine(case, arrays, engine):
    bad, total = mismatches(case, arrays, engine)
    assert total > 0 and bad == 0


_REFUSED = {"softmax16_out_off": {"tflm", "litert_ref", "litert_default"},
            "softmax16_in_zp": {"tflm", "litert_ref", "litert_default"},
            "avgpool16_rescale": {"tflm"},
            "leaky_relu16_a-0.5_zp": {"litert_ref", "litert_default"},
            "sub16_potflag_finer_input": {"litert_ref", "litert_default"}}


def test_the_int16_kernel_refusals_are_dspsim_refusals():
    refused = {}
    for case, _ in golden_cases("int16_kernels", [""]):
        for e in _ENGINES:
            if case["engines"][e]["status"] == "refused":
                refused.setdefault(case["name"], set()).add(e)
                with pytest.raises(ValueError, match="load_model"):
                    load_model(os.path.join(HERE, "ops", case["model"]), engine=_ENGINES[e])
    assert refused == _REFUSED


def test_engine_differences_in_the_int16_kernel_goldens():
    """Where the engines differ (docs/engines.md, "16x8 SOFTMAX, pooling, LEAKY_RELU alpha < 0, SUB pot"):
    LiteRT's default interpreter on a negative alpha (XNNPACK for int8, the optimized int16 kernel), TFLM's
    double quotient on a large |alpha|, LiteRT's shift-only SUB against TFLM's general one."""
    diffs = {c["name"]: {k for k, v in c["diffs"].items() if v} for c, _ in golden_cases("int16_kernels", [""])}
    for name in ("leaky_relu8_a-0.5_ties", "leaky_relu8_a-0.3", "leaky_relu16_a-0.5_ties"):
        assert diffs[name] == {"tflm:litert_default", "litert_ref:litert_default"}
    assert "tflm:litert_ref" in diffs["leaky_relu8_a-300"]
    for name in ("sub16_potflag_shift3", "sub16_potflag_first_relu", "sub16_potflag_broadcast"):
        assert diffs[name] == {"tflm:litert_ref", "tflm:litert_default"}
    assert not any(diffs[n] for n in diffs if n.startswith(("softmax16", "avgpool16", "maxpool16")))


def test_litert_takes_the_shift_sub_and_tflm_the_general_one():
    def op_params(engine):
        m = load_model(os.path.join(HERE, "ops", "sub16_potflag_shift3.tflite"), engine=engine)
        return m.operator_params(m.operators[0][0])

    assert op_params("litert")["input2_shift"] == -3 and op_params("litert")["subtract"] is True
    assert op_params("xnnpack")["input2_shift"] == -3
    assert op_params("tflm")["left_shift"] == 15


def test_leaky_relu_signed_multiplier_at_int16_min_shifted_to_int32_min_saturates_high():
    """alpha -300 from scale 0.05 to 2^-12: M < 0 and a left shift of 16, so -32768 << 16 is -2^31, whose
    negation wraps in int32; SRDHM(-2^31, M) is exactly -M, a large positive value: the top code."""
    x = np.array([-32768, -32767, -1], np.int16)
    kw = dict(alpha=-300.0, input_scale=0.05, output_scale=2.0**-12, input_zero_point=0, output_zero_point=0,
              negative_alpha="signed_multiplier")
    assert leaky_relu(x, **kw).tolist() == R.leaky_relu_oracle(x, **kw).tolist()
    assert leaky_relu(x, **kw)[0] == 32767
