"""int16 sigmoid and tanh (dspsim.kernels.nonlinear.int16): the table-and-interpolation kernels of the
TFLite/TFLM reference and gemmlowp's int16 fixed point, against the oracle on every int16 code and on
hypothesis draws, against the real functions, and on bad input."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import oracle as ref
from dspsim.kernels import fixedpoint16_logistic, fixedpoint16_tanh, int16_logistic, int16_tanh
from dspsim.kernels.nonlinear.int16 import SIGMOID_TABLE_UINT16, tflite_int16_sigmoid_rescale

GOLDEN = Path(__file__).parents[1] / "golden" / "ops" / "int16_sigmoid.npz"
sys.path.insert(0, str(Path(__file__).parents[1] / "golden"))

EVERY_CODE = np.arange(-32768, 32768, dtype=np.int64).astype(np.int16)
REAL = EVERY_CODE.astype(np.float64)
#: for the (slow) oracle: a strided sweep, every power of two and its neighbours, the type's edges
_EDGES = [s * (2**k + d) for k in range(15) for d in (-1, 0, 1) for s in (1, -1)] + [-32768, -32767, 32767, 0]
SWEEP = np.unique(np.concatenate([np.arange(-32768, 32768, 61), np.clip(_EDGES, -32768, 32767)])).astype(np.int16)


# ------------------------------------------------------------------ table + interpolation
def test_sigmoid_table_is_the_interpolation_centred_sigmoid_of_i_over_24():
    i = np.arange(256)
    exact = 65536.0 / (1.0 + np.exp(-i / 24.0))
    assert SIGMOID_TABLE_UINT16[0] == 32768 and SIGMOID_TABLE_UINT16[-1] == 65535
    assert np.all(np.diff(SIGMOID_TABLE_UINT16) >= 0)  # the interpolation relies on ub >= ua
    assert np.all(np.abs(SIGMOID_TABLE_UINT16 - exact) < 1.2)  # within 1.2 LSB of the samples (centring moves them)
    assert not SIGMOID_TABLE_UINT16.flags.writeable


@pytest.mark.parametrize("m,s", [(0, 0), (0, 1), (0, 3), (3, 1), (3, 4), (24576, 15), (16384, 13), (1, 0)])
def test_lut_logistic_and_tanh_sweep_matches_the_oracle(m, s):
    assert np.array_equal(int16_logistic(SWEEP, m, s), ref.int16_logistic_oracle(SWEEP, m, s))
    assert np.array_equal(int16_tanh(SWEEP, m, s), ref.int16_tanh_oracle(SWEEP, m, s))


def test_lut_q3_12_is_within_a_few_lsb_of_the_real_functions():
    x = REAL / 4096
    assert np.max(np.abs(int16_logistic(EVERY_CODE) - 32768 / (1 + np.exp(-x)))) < 12
    assert np.max(np.abs(int16_tanh(EVERY_CODE) - 32768 * np.tanh(x))) < 3


def test_lut_power_of_two_multiplier_zero_is_three_shifted():
    """multiplier 0 means the power-of-two case: 3 << left_shift, no shift (Q3.12 * 3/4 -> table units)."""
    for s in range(4):
        assert np.array_equal(int16_tanh(EVERY_CODE, 0, s), int16_tanh(EVERY_CODE, 3 << s, 0))


def test_lut_edges_by_hand():
    """x = +-1 in Q3.12: v = +-3, interpolation 32768 * 2^9 + 3 * (33451 - 32768) = 16779265 (logistic),
    32768 * 2^8 + 3 * 683 = 8390657 (tanh); then the sign rule and the shift of the docstrings."""
    x = np.array([-1, 0, 1], np.int16)
    assert int16_logistic(x).tolist() == [(2**25 - 16779265 + 511) >> 10, 16384, (16779265 + 512) >> 10]
    assert int16_tanh(x).tolist() == [(-8390657 + 2**23 + 127) >> 8, 0, (8390657 - 2**23 + 128) >> 8]
    # saturation: |v| >> 9 >= 255 (logistic, needs v = 6x) and |v| >> 8 >= 255 (tanh, v = 3x)
    ends = np.array([32767, -32768], np.int16)
    assert int16_logistic(ends, 0, 1).tolist() == [32767, (2**25 - (0x7FFF << 10) + 511) >> 10]
    assert int16_tanh(ends).tolist() == [32767, -32767]


@settings(max_examples=100, deadline=None)
@given(x=st.lists(st.integers(-32768, 32767), min_size=1, max_size=40), m=st.integers(0, 1 << 15),
       s=st.integers(0, 16))
def test_lut_random_rescalings_match_the_oracle(x, m, s):
    if m == 0 and (3 << s) > (1 << 15):
        s = 13
    if 32768 * (m if m else 3 << s) + ((1 << (s - 1)) if s and m else 0) > (1 << 31) - 1:
        m = 1 << 14
    arr = np.array(x, np.int16)
    assert np.array_equal(int16_logistic(arr, m, s), ref.int16_logistic_oracle(arr, m, s))
    assert np.array_equal(int16_tanh(arr, m, s), ref.int16_tanh_oracle(arr, m, s))


# ------------------------------------------------------------------ gemmlowp int16 fixed point
@pytest.mark.parametrize("bits", list(range(0, 13)))
def test_fixedpoint16_tanh_sweep_matches_the_oracle(bits):
    assert np.array_equal(fixedpoint16_tanh(SWEEP, bits), ref.fixedpoint16_tanh_oracle(SWEEP, bits))


@pytest.mark.parametrize("bits", list(range(0, 14)))
def test_fixedpoint16_logistic_sweep_matches_the_oracle(bits):
    assert np.array_equal(fixedpoint16_logistic(SWEEP, bits), ref.fixedpoint16_logistic_oracle(SWEEP, bits))


@settings(max_examples=100, deadline=None)
@given(x=st.lists(st.integers(-32768, 32767), min_size=1, max_size=30), bits=st.integers(0, 12))
def test_fixedpoint16_random_codes_match_the_oracle(x, bits):
    arr = np.array(x, np.int16)
    assert np.array_equal(fixedpoint16_tanh(arr, bits), ref.fixedpoint16_tanh_oracle(arr, bits))
    assert np.array_equal(fixedpoint16_logistic(arr, bits), ref.fixedpoint16_logistic_oracle(arr, bits))


@pytest.mark.parametrize("bits", [0, 3, 4, 6])
def test_fixedpoint16_results_mean_the_real_functions(bits):
    x = REAL / 2 ** (15 - bits)
    assert np.max(np.abs(fixedpoint16_tanh(EVERY_CODE, bits) - 32768 * np.tanh(x))) < 16
    assert np.max(np.abs(fixedpoint16_logistic(EVERY_CODE, bits) - 32768 / (1 + np.exp(-x)))) < 16


def test_fixedpoint16_zero_and_wrapping_edges():
    x = np.array([0, -32768, 32767], np.int16)
    assert fixedpoint16_logistic(x, 3).tolist()[0] == 16384  # gemmlowp's one_half constant
    assert fixedpoint16_tanh(x, 3).tolist()[0] == 0
    # -(-32768) wraps to itself; the result is still ~ sigmoid(-8) / tanh(-8)
    assert fixedpoint16_logistic(x, 3).tolist()[1] < 16 and fixedpoint16_tanh(x, 3).tolist()[1] == -32767


def test_the_two_algorithms_differ_on_q3_12():
    """TFLM's table and LiteRT's gemmlowp int16 give different integers for the same Q3.12 inputs."""
    lut, fixed = int16_logistic(EVERY_CODE), fixedpoint16_logistic(EVERY_CODE, 3)
    assert 0 < np.count_nonzero(lut != fixed) < EVERY_CODE.size and np.max(np.abs(lut - fixed.astype(int))) <= 7
    assert np.count_nonzero(int16_tanh(EVERY_CODE) != fixedpoint16_tanh(EVERY_CODE, 3)) > 0


# ------------------------------------------------------------------ the real engines (make_golden_int16_sigmoid.py)
def _golden_cases():
    if not GOLDEN.exists():
        return []
    from golden_io import load_packed

    return [(c, a, e) for c, a in load_packed(GOLDEN)[1] for e in ("tflm", "litert_ref", "litert_default")]


GOLDEN_CASES = _golden_cases()


def _engine_int16_sigmoid(x, op, input_scale, engine):
    """What the engine runs: the table kernel with its Prepare's rescaling; LiteRT's optimized kernels
    (litert_default) take gemmlowp's int16 functions on a power-of-two scale (multiplier 0), TANH with
    left shift 1 on the input doubled with saturation (``SaturatingRoundingMultiplyByPOT<1>``)."""
    tanh = op == "TANH"
    m, s = tflite_int16_sigmoid_rescale(input_scale, tanh=tanh)
    if engine == "litert_default" and m == 0:
        if not tanh:
            return fixedpoint16_logistic(x, 3)
        return fixedpoint16_tanh(np.clip(x.astype(np.int64) << s, -32768, 32767).astype(np.int16), 3)
    return (int16_tanh if tanh else int16_logistic)(x, m, s)


@pytest.mark.skipif(not GOLDEN_CASES, reason="tests/golden/ops/int16_sigmoid.npz not generated")
@pytest.mark.parametrize("case,arrays,engine", GOLDEN_CASES, ids=[f"{c['name']}-{e}" for c, _, e in GOLDEN_CASES])
def test_int16_sigmoid_and_tanh_are_bit_exact_with_the_engines(case, arrays, engine):
    assert case["engines"][engine]["status"] == "ok"
    x, want = arrays["in0"], arrays[f"{engine}/out0"]
    for run in range(x.shape[0]):
        got = _engine_int16_sigmoid(x[run], case["ops"][0], case["params"]["input_scale"], engine)
        assert got.dtype == want.dtype and np.array_equal(got, want[run]), f"run {run}"


def test_int16_sigmoid_rescale_follows_the_prepare():
    assert tflite_int16_sigmoid_rescale(2.0**-12, tanh=False) == (0, 0)
    assert tflite_int16_sigmoid_rescale(2.0**-11, tanh=True) == (0, 1)
    assert tflite_int16_sigmoid_rescale(2.0**-11, tanh=False) == (24576, 12)  # 2^-11 * 12288 = 6, doubled 12x
    m, s = tflite_int16_sigmoid_rescale(3e-4, tanh=False)
    assert 16384 <= m <= 32767 and m == int(float(np.float32(3e-4)) * 12288 * 2**s)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("fn", [int16_logistic, int16_tanh, fixedpoint16_logistic, fixedpoint16_tanh])
def test_int8_input_is_refused_with_the_function_named(fn):
    with pytest.raises(TypeError, match=fn.__name__):
        fn(np.zeros(3, np.int8))


@pytest.mark.parametrize("m,s,rule", [(-1, 0, "input_multiplier"), (0, 32, "input_left_shift"),
                                      (1 << 16, 0, "overflows int32"), (0, 15, "overflows int32"),
                                      (True, 0, "input_multiplier")])
def test_lut_rescaling_outside_int32_is_refused(m, s, rule):
    with pytest.raises(ValueError, match=f"int16_tanh: .*{rule}"):
        int16_tanh(np.zeros(2, np.int16), m, s)


@pytest.mark.parametrize("bits", [-1, 14, 2.0])
def test_fixedpoint16_integer_bits_out_of_range_is_refused(bits):
    with pytest.raises(ValueError, match="fixedpoint16_logistic: integer_bits"):
        fixedpoint16_logistic(np.zeros(2, np.int16), bits)
