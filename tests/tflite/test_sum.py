"""SUM: TFLite's QuantizedMeanOrSum, LiteRT BUILTIN_REF's uint8 defect, XNNPACK's sum_nd; oracle, golden, bad input."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from arith_golden import HERE, golden_cases, load_refused, mismatches, params, refused
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle as R
from dspsim.fixedpoint import quantize_multiplier
from dspsim.kernels.reduce.sum import reduce_sum, xnnpack_sum


@pytest.mark.parametrize("case,arrays,engine", params("reductions", ["sum_"]) + params("arith", ["sum_"]))
def test_sum_golden_models_bit_exact_per_engine(case, arrays, engine):
    bad, total = mismatches(case, arrays, engine)
    assert total > 0 and bad == 0


@pytest.mark.parametrize("case,engine", refused("arith", ["sum_"]))
def test_sum_models_an_engine_refuses_are_refused(case, engine):
    with pytest.raises(ValueError, match="load_model: operator 0 \\(SUM\\)"):
        load_refused(case, engine)


def test_litert_reference_sum_differs_from_tflm_in_the_golden_vectors():
    """The defect is real: LiteRT BUILTIN_REF and TFLM disagree on the golden SUM models."""
    cases = golden_cases("reductions", ["sum_"])
    if not cases:
        pytest.skip("tests/golden/ops/reductions.npz absent")
    assert all(c["diffs"]["tflm:litert_ref"] for c, _ in cases)


def test_litert_engine_warns_of_the_sum_defect_and_tflm_does_not():
    import dspsim.tflite as T
    from dspsim.engines import EngineDefectWarning

    cases = golden_cases("reductions", ["sum_"])
    if not cases:
        pytest.skip("tests/golden/ops/reductions.npz absent")
    with open(os.path.join(HERE, "ops", cases[0][0]["model"]), "rb") as f:
        model = f.read()
    with pytest.warns(EngineDefectWarning, match="reads the codes as uint8"):
        T.load_model(model, engine="litert")
    with warnings.catch_warnings():
        warnings.simplefilter("error", EngineDefectWarning)
        T.load_model(model, engine="tflm")


@settings(max_examples=30, deadline=None)
@given(zi=st.integers(-128, 127), zo=st.integers(-128, 127), real=st.floats(1e-3, 30.0), defect=st.booleans(),
       axis=st.sampled_from([(0,), (1, 2), (-1,), (0, 1, 2, 3), (3, 1)]), keep=st.booleans(),
       seed=st.integers(0, 2**16))
def test_reduce_sum_matches_oracle(zi, zo, real, defect, axis, keep, seed):
    from dspsim.catalog import random_codes

    x = random_codes(np.random.default_rng(seed), (2, 3, 4, 5), "int8")
    m, s = quantize_multiplier(real)
    kw = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, keep_dims=keep, codes_as_uint8=defect)
    np.testing.assert_array_equal(reduce_sum(x, axis, **kw), R.reduce_sum_oracle(x, axis, **kw))


@settings(max_examples=30, deadline=None)
@given(zi=st.integers(-128, 127), zo=st.integers(-128, 127), s_in=st.floats(1e-3, 1.0), s_out=st.floats(1e-2, 10.0),
       seed=st.integers(0, 2**16))
def test_xnnpack_sum_matches_oracle(zi, zo, s_in, s_out, seed):
    x = np.random.default_rng(seed).integers(-128, 128, (3, 7, 5)).astype(np.int8)
    kw = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
    np.testing.assert_array_equal(xnnpack_sum(x, (1,), **kw), R.xnnpack_sum_oracle(x, (1,), **kw))


def test_defect_reads_minus_one_as_255_and_clamps_to_the_byte_range():
    x = np.array([[-1, 0]], np.int8)  # bytes 255 and 0: sum 255
    kw = dict(input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=1)  # x 1
    assert reduce_sum(x, 1, **kw).tolist() == [-1]
    assert reduce_sum(x, 1, **kw, codes_as_uint8=True).tolist() == [-1]  # byte 255 stored as int8 -1
    x = np.array([[-128, -128]], np.int8)  # bytes 128 + 128 = 256 -> clamped to 255
    assert reduce_sum(x, 1, **kw).tolist() == [-128]
    assert reduce_sum(x, 1, **kw, codes_as_uint8=True).tolist() == [-1]
    x = np.array([[1, 1]], np.int8)  # 2 - zp 5 * 2 = -8 -> clamped to 0 by the byte range
    assert reduce_sum(x, 1, **dict(kw, input_zero_point=5), codes_as_uint8=True).tolist() == [0]


def test_bad_input_is_named():
    kw = dict(input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
    with pytest.raises(ValueError, match="reduce_sum: axis 4 is out of bounds"):
        reduce_sum(np.zeros((2, 3), np.int8), 4, **kw)
    with pytest.raises(ValueError, match="reduce_sum: codes_as_uint8"):
        reduce_sum(np.zeros((2, 3), np.uint8), 0, **kw, codes_as_uint8=True)
    with pytest.raises(TypeError, match="xnnpack_sum: x must be int8"):
        xnnpack_sum(np.zeros(3, np.uint8), 0, input_scale=1, input_zero_point=0, output_scale=1, output_zero_point=0)
