"""BATCH_MATMUL against the oracle, the engines' golden vectors and bad input."""
from __future__ import annotations

import numpy as np
import pytest
from arith_golden import mismatches, params
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle as R
from dspsim.fixedpoint import quantize_multiplier
from dspsim.kernels.mac.batch_matmul import batch_matmul


@pytest.mark.parametrize("case,arrays,engine", params("matrix", ["batch_matmul"]) + params("arith", ["batch_matmul"]))
def test_batch_matmul_golden_models_bit_exact_per_engine(case, arrays, engine):
    bad, total = mismatches(case, arrays, engine)
    assert total > 0 and bad == 0


SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 6), (1, 4, 6, 2)), ((1, 2, 1, 3, 5), (1, 3, 5, 4)),
          ((4, 7), (2, 1, 7, 3))]


@settings(max_examples=30, deadline=None)
@given(shapes=st.sampled_from(SHAPES), adj_x=st.booleans(), adj_y=st.booleans(), zx=st.integers(-128, 127),
       zy=st.integers(-128, 127), zo=st.integers(-128, 127), real=st.floats(1e-5, 4.0), seed=st.integers(0, 2**16))
def test_batch_matmul_matches_oracle(shapes, adj_x, adj_y, zx, zy, zo, real, seed):
    from dspsim.catalog import random_codes

    rng = np.random.default_rng(seed)
    sa, sb = shapes
    x = random_codes(rng, sa, "int8")
    y = random_codes(rng, sb, "int8")
    x = np.ascontiguousarray(np.swapaxes(x, -1, -2)) if adj_x else x
    y = np.ascontiguousarray(np.swapaxes(y, -1, -2)) if adj_y else y
    m, s = quantize_multiplier(real)
    kw = dict(adj_x=adj_x, adj_y=adj_y, x_zero_point=zx, y_zero_point=zy, output_zero_point=zo, multiplier=m, shift=s)
    np.testing.assert_array_equal(batch_matmul(x, y, **kw), R.batch_matmul_oracle(x, y, **kw))


def test_batch_matmul_ties_srdhm_toward_plus_inf_then_shift_away_from_zero():
    y = np.array([[1]], np.int8)
    kw = dict(x_zero_point=0, y_zero_point=0, output_zero_point=0, multiplier=1 << 30)
    odd = np.array([[1], [-1], [3], [-3]], np.int8)  # x * 0.5 in SRDHM: ties toward +inf
    assert batch_matmul(odd, y, **kw, shift=0).reshape(-1).tolist() == [1, 0, 2, -1]
    even = np.array([[2], [-2], [6], [-6]], np.int8)  # exact in SRDHM, the halves in the right shift: away from 0
    assert batch_matmul(even, y, **kw, shift=-1).reshape(-1).tolist() == [1, -1, 2, -2]


def test_bad_input_is_named():
    kw = dict(x_zero_point=0, y_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
    with pytest.raises(ValueError, match="batch_matmul: the contracted dimensions differ"):
        batch_matmul(np.zeros((2, 3), np.int8), np.zeros((4, 2), np.int8), **kw)
    with pytest.raises(ValueError, match="batch_matmul: batch dimensions"):
        batch_matmul(np.zeros((2, 2, 3), np.int8), np.zeros((3, 3, 2), np.int8), **kw)
    with pytest.raises(ValueError, match="batch_matmul: x must have rank 2 to 5"):
        batch_matmul(np.zeros(3, np.int8), np.zeros((3, 2), np.int8), **kw)
    with pytest.raises(TypeError, match="batch_matmul: y must have dtype int8"):
        batch_matmul(np.zeros((2, 3), np.int8), np.zeros((3, 2), np.uint8), **kw)


@settings(max_examples=30, deadline=None)
@given(shapes=st.sampled_from(SHAPES), adj_x=st.booleans(), adj_y=st.booleans(), real=st.floats(1e-9, 0.5),
       seed=st.integers(0, 2**16), extremes=st.booleans())
def test_int16_batch_matmul_matches_oracle(shapes, adj_x, adj_y, real, seed, extremes):
    """int16 (``BatchMatMul<int16_t, int64_t>``): int64 sums, the int64 MBQM (one rounding, ties toward +inf)."""
    from dspsim.catalog import random_codes

    rng = np.random.default_rng(seed)
    sa, sb = shapes
    x, y = random_codes(rng, sa, "int16"), random_codes(rng, sb, "int16")
    if extremes:
        x.reshape(-1)[::2], y.reshape(-1)[1::2] = -32768, 32767
    x = np.ascontiguousarray(np.swapaxes(x, -1, -2)) if adj_x else x
    y = np.ascontiguousarray(np.swapaxes(y, -1, -2)) if adj_y else y
    m, s = quantize_multiplier(real)
    kw = dict(adj_x=adj_x, adj_y=adj_y, x_zero_point=0, y_zero_point=0, output_zero_point=0, multiplier=m, shift=s)
    got = batch_matmul(x, y, **kw)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, R.batch_matmul_oracle(x, y, **kw))


def test_int16_batch_matmul_refuses_zero_points_and_mixed_types():
    x = np.zeros((2, 3), np.int16)
    with pytest.raises(ValueError, match="batch_matmul: int16 operands need zero points 0"):
        batch_matmul(x, x.T.copy(), x_zero_point=1, y_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
    with pytest.raises(TypeError, match="batch_matmul: y"):
        batch_matmul(x, np.zeros((3, 2), np.int8), x_zero_point=0, y_zero_point=0, output_zero_point=0,
                     multiplier=1 << 30, shift=0)
