"""SUB, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM (and ADD/MUL broadcasting to rank 5) against the oracle,
the engines' golden vectors and bad input."""
from __future__ import annotations

import numpy as np
import pytest
from arith_golden import load_refused, mismatches, params, refused
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle as R
from dspsim.kernels.arithmetic.binary import (
    maximum, minimum, squared_difference, sub, tflite_squared_difference_params, tflite_sub_params,
    xnnpack_sub_params,
)
from dspsim.kernels.arithmetic.elementwise import AddParams, xnnpack_add

ARITH = ["add", "mul", "sub", "maximum", "minimum", "squared_difference"]  # the arith_* cases of tests/golden/ops
ALL = np.arange(-128, 128, dtype=np.int8)  # every int8 code
scales = st.floats(1e-4, 1.0).map(np.float32)
zps = st.integers(-128, 127)

# ---------------------------------------------------------------------------- golden (real engines)
@pytest.mark.parametrize("case,arrays,engine", params("elementwise", ["add", "mul", "sub", "maximum", "minimum",
                                                                      "squared_difference"]))
def test_elementwise_golden_models_bit_exact_per_engine(case, arrays, engine):
    bad, total = mismatches(case, arrays, engine)
    assert total > 0 and bad == 0


@pytest.mark.parametrize("case,arrays,engine", params("arith", ARITH))
def test_arith_edge_models_bit_exact_per_engine(case, arrays, engine):
    """Every code pair, exact ties (XNNPACK differs from the reference), rank 6, output multiplier >= 1."""
    bad, total = mismatches(case, arrays, engine)
    assert total > 0 and bad == 0


@pytest.mark.parametrize("case,engine", refused("arith", ARITH))
def test_models_an_engine_refuses_are_refused_for_that_engine(case, engine):
    with pytest.raises(ValueError, match="load_model: operator 0"):
        load_refused(case, engine)


# ---------------------------------------------------------------------------- oracle, every code pair
@settings(max_examples=8, deadline=None)
@given(s1=scales, s2=scales, so=scales, z1=zps, z2=zps, zo=zps, quotient=st.sampled_from(["double", "float32"]))
def test_sub_matches_oracle_on_every_code_pair(s1, s2, so, z1, z2, zo, quotient):
    try:
        p = tflite_sub_params(s1, s2, so, quotient=quotient)
    except ValueError:
        return
    x1, x2 = ALL.reshape(256, 1)[::11], ALL.reshape(1, 256)
    kw = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo)
    np.testing.assert_array_equal(sub(x1, x2, p, **kw), R.sub_oracle(x1, x2, p, **kw))


@settings(max_examples=8, deadline=None)
@given(s1=scales, s2=scales, so=st.floats(1e-7, 2.0).map(np.float32), z1=zps, z2=zps, zo=zps)
def test_squared_difference_matches_oracle_including_left_shifts(s1, s2, so, z1, z2, zo):
    try:
        p = tflite_squared_difference_params(s1, s2, so, output_multiplier_below_one=False)
    except ValueError:
        return
    x1, x2 = ALL.reshape(256, 1)[::11], ALL.reshape(1, 256)
    kw = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo)
    np.testing.assert_array_equal(squared_difference(x1, x2, p, **kw), R.squared_difference_oracle(x1, x2, p, **kw))


@settings(max_examples=8, deadline=None)
@given(s1=st.floats(1e-6, 1e-2).map(np.float32), s2=st.floats(1e-6, 1e-2).map(np.float32),
       so=st.floats(1e-5, 1e-2).map(np.float32), seed=st.integers(0, 2**16))
def test_int16_sub_left_shift_15_matches_oracle(s1, s2, so, seed):
    try:
        p = tflite_sub_params(s1, s2, so, left_shift=15)
    except ValueError:
        return
    rng = np.random.default_rng(seed)
    x1 = np.concatenate([[-32768, 32767, 0, -1], rng.integers(-32768, 32768, 60)]).astype(np.int16).reshape(8, 8)
    x2 = rng.integers(-32768, 32768, 8).astype(np.int16)
    kw = dict(input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    np.testing.assert_array_equal(sub(x1, x2, p, **kw), R.sub_oracle(x1, x2, p, **kw))


def test_sub_ties_round_away_from_zero_so_sub_is_not_antisymmetric():
    p = tflite_sub_params(0.0625, 0.0625, 0.125)  # (x1 - x2) / 2: exact halves
    kw = dict(input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    x1, x2 = np.array([1, 0, 3, -3], np.int8), np.array([0, 1, 0, 0], np.int8)
    np.testing.assert_array_equal(sub(x1, x2, p, **kw), [1, -1, 2, -2])  # 0.5 -> 1, -0.5 -> -1, 1.5 -> 2


def test_xnnpack_sub_rounds_ties_toward_plus_infinity():
    xp = xnnpack_sub_params(0.0625, 0.0625, 0.125)
    assert xp.b_multiplier == -xp.a_multiplier
    kw = dict(input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    out = xnnpack_add(np.array([1, 0, 3, -3], np.int8), np.array([0, 1, 0, 0], np.int8), xp, **kw)
    np.testing.assert_array_equal(out, [1, 0, 2, -1])  # 0.5 -> 1, -0.5 -> 0, 1.5 -> 2, -1.5 -> -1


def test_float32_quotients_of_older_tflm_sources_change_the_multipliers_and_some_outputs():
    s1, s2, so = np.float32(0.08414804935455322), np.float32(0.006911648903042078), np.float32(0.0579039603471756)
    pd, pf = tflite_sub_params(s1, s2, so), tflite_sub_params(s1, s2, so, quotient="float32")
    assert pd != pf
    kw = dict(input1_zero_point=3, input2_zero_point=-5, output_zero_point=1)
    x1, x2 = ALL.reshape(256, 1), ALL.reshape(1, 256)
    d = sub(x1, x2, pd, **kw) != sub(x1, x2, pf, **kw)
    assert d.sum() == 2


def test_maximum_minimum_compare_codes_with_rank5_broadcast():
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (2, 1, 3, 1, 4)).astype(np.int8)
    b = rng.integers(-128, 128, (1, 2, 1, 5, 4)).astype(np.int8)
    np.testing.assert_array_equal(maximum(a, b), R.maximum_oracle(a, b))
    np.testing.assert_array_equal(minimum(a, b), np.minimum(a, b))
    assert maximum(a, b).shape == (2, 2, 3, 5, 4)


# ---------------------------------------------------------------------------- bad input
def test_sub_refuses_an_output_multiplier_of_one_or_more():
    with pytest.raises(ValueError, match="tflite_sub_params: the output multiplier"):
        tflite_sub_params(1.0, 1.0, 1e-7)


def test_litert_squared_difference_refuses_output_multiplier_of_one_or_more():
    with pytest.raises(ValueError, match="QuantizeMultiplierSmallerThanOneExp"):
        tflite_squared_difference_params(0.5, 0.5, 1e-5)
    assert tflite_squared_difference_params(0.5, 0.5, 1e-5, output_multiplier_below_one=False).output_shift > 0


def test_bad_operands_are_named():
    p = tflite_sub_params(0.1, 0.1, 0.2)
    kw = dict(input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    with pytest.raises(ValueError, match="sub: shapes"):
        sub(np.zeros((2, 3), np.int8), np.zeros((4,), np.int8), p, **kw)
    with pytest.raises(TypeError, match="sub: x1 and x2 must have the same dtype"):
        sub(np.zeros(3, np.int8), np.zeros(3, np.uint8), p, **kw)
    with pytest.raises(TypeError, match="sub: params must be an AddParams"):
        sub(np.zeros(3, np.int8), np.zeros(3, np.int8), (1, 2), **kw)
    with pytest.raises(ValueError, match="squared_difference: output_shift"):
        squared_difference(np.zeros(3, np.int8), np.zeros(3, np.int8), AddParams(7, 1, 0, 1, 0, 1, 31), **kw)
    with pytest.raises(TypeError, match="maximum: x1 must have dtype"):
        maximum(np.zeros(3, np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="tflite_sub_params: quotient"):
        tflite_sub_params(0.1, 0.1, 0.2, quotient="half")


# ---------------------------------------------------------------------------- unquantized int32 ADD / SUB / MUL
_I32 = st.one_of(st.sampled_from([-2**31, -2**31 + 1, -1, 0, 1, 2**31 - 1]), st.integers(-2**31, 2**31 - 1))


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(["add", "sub", "mul"]), a=st.lists(_I32, min_size=1, max_size=6),
       b=st.lists(_I32, min_size=1, max_size=6), act=st.sampled_from([(None, None), (0, None), (-1, 1), (0, 6)]))
def test_int32_binary_wraps_then_clamps_as_the_oracle(op, a, b, act):
    from dspsim.kernels.arithmetic.wrapping import integer_binary
    x1 = np.array(a, np.int32).reshape(-1, 1)
    x2 = np.array(b, np.int32)
    got = integer_binary(op, x1, x2, act_min=act[0], act_max=act[1])
    assert got.dtype == np.int32 and got.shape == (len(a), len(b))
    assert np.array_equal(got, R.integer_binary_oracle(op, x1, x2, *act))


def test_int32_binary_wraps_where_the_result_leaves_int32():
    from dspsim.kernels.arithmetic.wrapping import integer_binary
    big = np.array([2**31 - 1, -2**31], np.int32)
    assert integer_binary("add", big, np.array([1, -1], np.int32)).tolist() == [-2**31, 2**31 - 1]
    assert integer_binary("mul", big, np.array([2, 2], np.int32)).tolist() == [-2, 0]
    assert integer_binary("mul", big, np.array([2, 2], np.int32), act_min=0, act_max=6).tolist() == [0, 0]


def test_int32_binary_refuses_other_types_and_ops():
    from dspsim.kernels.arithmetic.wrapping import integer_binary
    x = np.array([1, 2], np.int32)
    with pytest.raises(TypeError, match="integer_binary: x1 must have dtype int32"):
        integer_binary("add", x.astype(np.int8), x.astype(np.int8))
    with pytest.raises(ValueError, match="integer_binary: op must be one of"):
        integer_binary("div", x, x)
    with pytest.raises(ValueError, match="integer_binary: act_min 7 > act_max 6"):
        integer_binary("add", x, x, act_min=7, act_max=6)


@settings(max_examples=12, deadline=None)
@given(s1=st.floats(1e-5, 1e-2).map(np.float32), s2=st.floats(1e-5, 1e-2).map(np.float32),
       so=st.floats(1e-6, 1.0).map(np.float32), seed=st.integers(0, 2**16))
def test_int16_squared_difference_matches_oracle(s1, s2, so, seed):
    """tflite-micro's int16 SQUARED_DIFFERENCE: left shift 0, inputs halved onto twice the larger scale, so the
    square of their difference stays below 2^30; the output multiplier may shift left."""
    try:
        p = tflite_squared_difference_params(s1, s2, so, output_multiplier_below_one=False, left_shift=0)
    except ValueError:
        return
    rng = np.random.default_rng(seed)
    x1 = np.concatenate([[-32768, 32767, 0, -32768], rng.integers(-32768, 32768, 60)]).astype(np.int16).reshape(8, 8)
    x2 = np.concatenate([[32767, -32768, 0, -32768], rng.integers(-32768, 32768, 4)]).astype(np.int16)
    kw = dict(input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    got = squared_difference(x1, x2, p, **kw)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, R.squared_difference_oracle(x1, x2, p, **kw))
