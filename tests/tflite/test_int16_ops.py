"""16x8 operators: LiteRT's int16 power-of-two ADD against the oracle, the int16 / int32 Requantize, the
engines' golden vectors (tests/golden/ops/int16.npz, int16_edges.npz: every value of every run per
engine) and the per-engine arithmetic the loader picks."""
from __future__ import annotations

import os

import numpy as np
import pytest
from arith_golden import HERE, golden_cases, mismatches, params
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle as R
from dspsim.kernels import PotAddParams, pot_add, tflite_pot_add_params, tflite_requantize
from dspsim.kernels.arithmetic.pot_add import checked_log2
from dspsim.tflite import load_model

_EDGES = np.array([-32768, -32767, -32766, -16385, -16384, -16383, -9, -8, -7, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5,
                   7, 8, 9, 16383, 16384, 16385, 32765, 32766, 32767], np.int16)


# --------------------------------------------------------------------------------------------
# golden vectors: every int16 family case with these operators, per engine
# --------------------------------------------------------------------------------------------
_PREFIXES = ["add16", "mul16", "relu", "leaky_relu16", "mean16", "concat16", "pad16", "quantize_i", "dequantize_i",
             "quant_dequant16"]


@pytest.mark.parametrize("case,arrays,engine", params("int16", _PREFIXES + ["softmax16", "net16"])
                         + params("int16_edges", [""]))
def test_16x8_golden_models_bit_exact_per_engine(case, arrays, engine):
    bad, total = mismatches(case, arrays, engine)
    assert total > 0 and bad == 0


def test_the_engines_refusals_are_dspsim_refusals():
    refused = [(c, e) for c, _ in golden_cases("int16_edges", [""]) for e in ("tflm", "litert_ref", "litert_default")
               if c["engines"][e]["status"] == "refused"]
    assert {c["name"] for c, _ in refused} == {"add16_potflag_finer_input", "add16_zero_points"}
    engines = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack"}
    for case, e in refused:
        with pytest.raises(ValueError, match="load_model"):
            load_model(os.path.join(HERE, "ops", case["model"]), engine=engines[e])


def _params(name, engine):
    m = load_model(os.path.join(HERE, "ops", f"{name}.tflite"), engine=engine)
    return m.operator_params(m.operators[0][0])


def test_litert_takes_the_shift_kernel_only_with_pot_scale_int16_and_tflm_never():
    assert _params("add16_potflag_shift3", "litert") == dict(act_min=-32768, act_max=32767, input1_shift=-3,
                                                             input2_shift=0)
    assert _params("add16_potflag_shift3", "xnnpack")["input1_shift"] == -3
    assert _params("add16_potflag_shift3", "tflm")["left_shift"] == 15
    assert _params("add16_pot", "litert")["left_shift"] == 15  # the converter writes pot_scale_int16 = false


def test_int16_mul_multiplier_is_float32_in_litert_and_double_in_tflm():
    lit, tflm = _params("mul16_quotient", "litert"), _params("mul16_quotient", "tflm")
    assert lit["multiplier"] != tflm["multiplier"]


# --------------------------------------------------------------------------------------------
# the power-of-two ADD kernel against the oracle
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shifts", [(0, 0), (0, -1), (-1, 0), (0, -3), (-7, 0), (0, -15)])
def test_pot_add_every_edge_pair_matches_oracle(shifts):
    a, b = (v.reshape(-1).copy() for v in np.meshgrid(_EDGES, _EDGES))
    p = PotAddParams(*shifts)
    np.testing.assert_array_equal(pot_add(a, b, p), R.pot_add_oracle(a, b, p))


@settings(max_examples=60, deadline=None)
@given(shift=st.integers(-15, 0), first=st.booleans(), lo=st.integers(-32768, 0), hi=st.integers(0, 32767),
       seed=st.integers(0, 2**32 - 1))
def test_pot_add_matches_oracle(shift, first, lo, hi, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-32768, 32768, 300).astype(np.int16) for _ in range(2))
    p = PotAddParams(shift, 0) if first else PotAddParams(0, shift)
    np.testing.assert_array_equal(pot_add(a, b, p, act_min=lo, act_max=hi),
                                  R.pot_add_oracle(a, b, p, act_min=lo, act_max=hi))


def test_pot_add_ties_round_away_from_zero_and_the_sum_saturates():
    p = PotAddParams(-1, 0)
    x = np.array([3, -3, 1, -1, 32767, -32768], np.int16)
    y = np.array([0, 0, 0, 0, 32767, -32768], np.int16)
    np.testing.assert_array_equal(pot_add(x, y, p), [2, -2, 1, -1, 32767, -32768])


def test_pot_add_params_follow_litert_prepare():
    assert tflite_pot_add_params(2.0**-13, 2.0**-10, 2.0**-10) == PotAddParams(-3, 0)
    assert tflite_pot_add_params(2.0**-10, 2.0**-12, 2.0**-10) == PotAddParams(0, -2)
    assert checked_log2(np.float32(2.0**-11)) == (-11, True)
    assert checked_log2(np.float32(3e-4))[1] is False
    for scales, rule in (((2.0**-9, 2.0**-10, 2.0**-10), "finer"), ((2.0**-12, 2.0**-11, 2.0**-10), "output's scale"),
                         ((3e-4, 2.0**-10, 2.0**-10), "power of two"), ((2.0**-30, 2.0**-10, 2.0**-10), "-15")):
        with pytest.raises(ValueError, match=rule):
            tflite_pot_add_params(*scales)


def test_pot_add_rejects_bad_input():
    x = np.zeros(4, np.int16)
    with pytest.raises(TypeError, match="pot_add: x1 must have dtype int16"):
        pot_add(x.astype(np.int8), x, PotAddParams(0, 0))
    with pytest.raises(ValueError, match="pot_add: .*do not broadcast"):
        pot_add(x, x[:2], PotAddParams(0, 0))
    with pytest.raises(ValueError, match="pot_add: shifts"):
        pot_add(x, x, PotAddParams(-1, -2))
    with pytest.raises(ValueError, match="pot_add: shifts"):
        pot_add(x, x, PotAddParams(0, 1))
    with pytest.raises(TypeError, match="pot_add: params"):
        pot_add(x, x, (0, 0))
    with pytest.raises(ValueError, match="pot_add: act_min"):
        pot_add(x, x, PotAddParams(0, 0), act_min=5, act_max=4)


# --------------------------------------------------------------------------------------------
# Requantize between int16, int8 and int32
# --------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(pair=st.sampled_from([("int16", "int32"), ("int32", "int8"), ("int32", "int16"), ("int8", "int32"),
                             ("int16", "int8"), ("int16", "int16")]),
       multiplier=st.integers(1 << 30, (1 << 31) - 1), shift=st.integers(-31, 30), zi=st.integers(-300, 300),
       zo=st.integers(-100, 100), seed=st.integers(0, 2**32 - 1))
def test_requantize_int16_int32_matches_oracle(pair, multiplier, shift, zi, zo, seed):
    src, dst = pair
    info = np.iinfo(src)
    rng = np.random.default_rng(seed)
    x = rng.integers(int(info.min), int(info.max), 64, endpoint=True).astype(src)
    x[:4] = (info.min, info.max, 0, -1)
    kw = dict(input_zero_point=zi if src != "int16" else 0, output_zero_point=zo if dst == "int8" else 0,
              multiplier=multiplier, shift=shift, out_dtype=dst)
    np.testing.assert_array_equal(tflite_requantize(x, **kw), R.tflite_requantize_oracle(x, **kw))


def test_requantize_int32_input_minus_zero_point_wraps_as_int32():
    x = np.array([-(2**31), -(2**31) + 4, 2**31 - 1], np.int32)
    wrapped = np.array([2**31 - 5, 2**31 - 1, 2**31 - 6], np.int32)  # x - 5 in int32
    kw = dict(output_zero_point=0, multiplier=1 << 30, shift=0, out_dtype="int16")
    want = tflite_requantize(wrapped, input_zero_point=0, **kw)
    assert (want == 32767).all()
    np.testing.assert_array_equal(tflite_requantize(x, input_zero_point=5, **kw), want)
    np.testing.assert_array_equal(R.tflite_requantize_oracle(x, input_zero_point=5, **kw), want)


# --------------------------------------------------------------------------------------------
# LEAKY_RELU multipliers per engine; LiteRT's optimized float -> int16 QUANTIZE
# --------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(quotient=st.sampled_from(["float32", "double"]), alpha=st.floats(0.0, 4.0, width=32),
       s_in=st.floats(1e-5, 1e-2), ratio=st.floats(0.05, 20.0), seed=st.integers(0, 2**32 - 1))
def test_int16_leaky_relu_matches_oracle_for_both_quotients(quotient, alpha, s_in, ratio, seed):
    from dspsim.kernels import leaky_relu

    x = np.random.default_rng(seed).integers(-32768, 32768, 200).astype(np.int16)
    x[: _EDGES.size] = _EDGES
    kw = dict(alpha=float(alpha), input_scale=float(np.float32(s_in)), input_zero_point=0,
              output_scale=float(np.float32(s_in * ratio)),
              output_zero_point=0, quotient=quotient)
    np.testing.assert_array_equal(leaky_relu(x, **kw), R.leaky_relu_oracle(x, **kw))


def test_leaky_relu_quotients_split_on_the_seanet_scales():
    from dspsim.kernels import leaky_relu

    path = os.path.join(HERE, "..", "..", "..", "shared", "models", "tflite-micro", "seanet_leaky_relu3.tflite")
    if not os.path.exists(path):
        pytest.skip("../shared/models/tflite-micro is not on this machine")
    m = load_model(path, engine="litert")
    p = {k: v for k, v in m.operator_params(0).items() if k not in ("rounding", "quotient")}
    x = np.arange(-32768, 32768, dtype=np.int64).astype(np.int16)
    a, b = leaky_relu(x, **p, quotient="float32"), leaky_relu(x, **p, quotient="double")
    assert np.count_nonzero(a != b) > 0


def test_leaky_relu_rejects_an_unknown_quotient():
    from dspsim.kernels import leaky_relu

    with pytest.raises(ValueError, match="leaky_relu: quotient"):
        leaky_relu(_EDGES, alpha=0.2, input_scale=1e-3, input_zero_point=0, output_scale=1e-3, output_zero_point=0,
                   quotient="float64")


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), scale=st.sampled_from([2.0**-13, 2.0**-7, 1.1e-4, 3.7e-3]), zp=st.integers(-50, 50),
       seed=st.integers(0, 2**32 - 1))
def test_litert_optimized_int16_quantize_matches_oracle(n, scale, zp, seed):
    from dspsim.quantize import litert_optimized_quantize

    rng = np.random.default_rng(seed)
    s = np.float32(scale)
    x = (rng.integers(-40000, 40000, n) + rng.choice([0.0, 0.5, 0.25], n)).astype(np.float64) * np.float64(s)
    x = x.astype(np.float32)
    np.testing.assert_array_equal(litert_optimized_quantize(x, s, zp),
                                  R.litert_optimized_quantize_oracle(x, s, zp))


def test_litert_optimized_int16_quantize_rounds_blocks_to_even_and_the_tail_away():
    from dspsim.quantize import litert_optimized_quantize

    x = np.full(9, 2.5 * 2.0**-10, np.float32)  # exact ties k + 1/2: eight in a block, one in the tail
    np.testing.assert_array_equal(litert_optimized_quantize(x, 2.0**-10), [2] * 8 + [3])
    big = np.array([np.inf, -np.inf, 1e30, -1e30, 3.0, -3.0, 0.0, 1.0], np.float32)
    np.testing.assert_array_equal(litert_optimized_quantize(big, 1.0, 5), [-32768] * 4 + [8, 2, 5, 6])
    with pytest.raises(ValueError, match="litert_optimized_quantize: x contains NaN"):
        litert_optimized_quantize(np.array([np.nan], np.float32), 1.0)
    with pytest.raises(TypeError, match="litert_optimized_quantize"):
        litert_optimized_quantize(np.array([1], np.int16), 1.0)


# --------------------------------------------------------------------------------------------
# 16x8 FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D: int16 x int8, int64 bias and accumulator
# --------------------------------------------------------------------------------------------
def _x16(rng, shape):
    x = rng.integers(-32768, 32768, shape).astype(np.int16)
    x.reshape(-1)[:4] = (-32768, 32767, 0, -1)
    return x


@settings(max_examples=30, deadline=None)
@given(scheme=st.sampled_from(["tflm", "litert"]), per_channel=st.booleans(), bias=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_16x8_fully_connected_matches_oracle(scheme, per_channel, bias, seed):
    from dspsim.kernels import fully_connected
    from dspsim.requant import Requant

    rng = np.random.default_rng(seed)
    x, w = _x16(rng, (3, 40)), rng.integers(-128, 128, (5, 40)).astype(np.int8)
    s_w = rng.uniform(0.001, 0.01, 5) if per_channel else 0.004
    engine, rounding = ("tflm", "int64") if scheme == "tflm" else ("litert", "double")
    rq = Requant.from_scales(3e-4, s_w, 0.05, engine=engine, op="fully_connected", rounding=rounding)
    b = rng.integers(-(1 << 40), 1 << 40, 5).astype(np.int64) if bias else None
    kw = dict(input_zero_point=0, output_zero_point=0, requant=rq, out_dtype="int16")
    out = fully_connected(x, w, b, **kw)
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, R.fully_connected_oracle(x, w, b, **kw))


@settings(max_examples=20, deadline=None)
@given(depthwise=st.booleans(), stride=st.sampled_from([1, 2]), padding=st.sampled_from(["SAME", "VALID"]),
       seed=st.integers(0, 2**32 - 1))
def test_16x8_conv_and_depthwise_match_oracle(depthwise, stride, padding, seed):
    from dspsim.kernels import conv2d, depthwise_conv2d
    from dspsim.requant import Requant

    rng = np.random.default_rng(seed)
    x = _x16(rng, (1, 5, 6, 3))
    w = rng.integers(-128, 128, (1, 3, 3, 6) if depthwise else (4, 3, 3, 3)).astype(np.int8)
    n = w.shape[3] if depthwise else w.shape[0]
    rq = Requant.from_scales(3e-4, rng.uniform(0.001, 0.01, n), 0.02, op="depthwise" if depthwise else "conv",
                             rounding="int64")
    b = rng.integers(-(1 << 36), 1 << 36, n).astype(np.int64)
    kw = dict(stride=stride, padding=padding, input_zero_point=0, output_zero_point=0, requant=rq, out_dtype="int16")
    if depthwise:
        kw["depth_multiplier"] = 2
    fn, oracle = (depthwise_conv2d, R.depthwise_conv2d_oracle) if depthwise else (conv2d, R.conv2d_oracle)
    np.testing.assert_array_equal(fn(x, w, b, **kw), oracle(x, w, b, **kw))


def test_the_int64_scheme_reduces_the_multiplier_to_16_bits():
    from dspsim import Requant, requantize

    acc = np.array([3 * 2**20 + 1, -(2**40), 2**40 - 1, 12345678901], np.int64)
    m, s = 1518500250, -20  # reduced: (m + 2^15) >> 16 = 23170
    rq = Requant.fixed_point(m, s, "int64")
    want = [R.multiply_by_quantized_multiplier_int64(int(v), m, s) for v in acc]
    assert want == [(int(v) * 23170 + (1 << 34)) >> 35 for v in acc]
    np.testing.assert_array_equal(requantize(acc, rq, out_dtype="int16"), np.clip(want, -32768, 32767))


def test_16x8_kernels_reject_an_int32_overflowing_bias_only_for_8bit_input():
    from dspsim.kernels import fully_connected

    w = np.ones((2, 4), np.int8)
    kw = dict(input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=-20)
    fully_connected(np.zeros((1, 4), np.int16), w, np.array([1 << 40, 0], np.int64), **kw, out_dtype="int16")
    with pytest.raises(ValueError, match="fully_connected: bias"):
        fully_connected(np.zeros((1, 4), np.int8), w, np.array([1 << 40, 0], np.int64), **kw)
    with pytest.raises(ValueError, match="Requant.fixed_point: rounding"):
        from dspsim.requant import Requant

        Requant.fixed_point(1 << 30, 0, "int32")
