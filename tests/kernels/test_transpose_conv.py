"""TRANSPOSE_CONV against the oracle, the engines' golden vectors and bad input."""
from __future__ import annotations

import numpy as np
import pytest
from arith_golden import mismatches, params
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle as R
from dspsim.kernels.mac.transpose_conv import transpose_conv
from dspsim.requant import Requant


@pytest.mark.parametrize("case,arrays,engine", params("matrix", ["tconv"]))
def test_transpose_conv_golden_models_bit_exact_per_engine(case, arrays, engine):
    bad, total = mismatches(case, arrays, engine)
    assert total > 0 and bad == 0


@settings(max_examples=25, deadline=None)
@given(stride=st.sampled_from([1, 2, 3, (2, 1)]), k=st.sampled_from([(1, 1), (2, 2), (3, 3), (3, 2)]),
       padding=st.sampled_from(["SAME", "VALID"]), zx=st.integers(-128, 127), zo=st.integers(-128, 127),
       engine=st.sampled_from(["tflm", "xnnpack"]), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_transpose_conv_matches_oracle(stride, k, padding, zx, zo, engine, bias, seed):
    from dspsim.catalog import random_codes

    rng = np.random.default_rng(seed)
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    x = random_codes(rng, (1, 3, 4, 2), "int8")
    w = random_codes(rng, (3, *k, 2), "int8")
    size = (3 * sh, 4 * sw) if padding == "SAME" else (2 * sh + k[0], 3 * sw + k[1])
    rq = Requant.from_scales(0.05, rng.uniform(0.001, 0.02, 3), 0.1, engine=engine, op="conv")
    b = rng.integers(-5000, 5000, 3).astype(np.int32) if bias else None
    kw = dict(output_size=size, stride=stride, padding=padding, input_zero_point=zx, output_zero_point=zo, requant=rq)
    np.testing.assert_array_equal(transpose_conv(x, w, b, **kw), R.transpose_conv_oracle(x, w, b, **kw))


@settings(max_examples=30, deadline=None)
@given(stride=st.sampled_from([1, 2, 3, (2, 1), (3, 2)]), k=st.sampled_from([(1, 1), (3, 3), (4, 3), (2, 4)]),
       padding=st.sampled_from(["SAME", "VALID"]), n=st.integers(1, 2), in_hw=st.sampled_from([(1, 1), (3, 4), (5, 2)]),
       zx=st.integers(-128, 127), zo=st.integers(-128, 127), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_cmsis_nn_rolling_row_buffer_is_exact_with_the_fix_and_where_the_padding_ends_on_a_stride(
        stride, k, padding, n, in_hw, zx, zo, bias, seed):
    """The rolling-buffer schedule of arm_transpose_conv_s8 is exact with 4a8f5b5's partial flush on every
    geometry, and with 4ab83cc's only where pad_top % stride_h == 0 (elsewhere its rows move)."""
    from dspsim.catalog import random_codes
    from dspsim.kernels._common import geometry
    from dspsim.kernels.mac.transpose_conv import RowFlush

    rng = np.random.default_rng(seed)
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    x = random_codes(rng, (n, *in_hw, 3), "int8")
    w = random_codes(rng, (2, *k, 3), "int8")
    size = (in_hw[0] * sh, in_hw[1] * sw) if padding == "SAME" else ((in_hw[0] - 1) * sh + k[0], (in_hw[1] - 1) * sw + k[1])
    rq = Requant.from_scales(0.05, rng.uniform(0.001, 0.02, 2), 0.1, engine="tflm", op="conv")
    b = rng.integers(-5000, 5000, 2).astype(np.int32) if bias else None
    kw = dict(output_size=size, stride=stride, padding=padding, input_zero_point=zx, output_zero_point=zo, requant=rq)
    exact = R.transpose_conv_oracle(x, w, b, **kw)
    if k[0] < sh:  # the C code writes past its output: refused
        with pytest.raises(ValueError, match="shorter than the stride"):
            transpose_conv(x, w, b, row_flush=RowFlush.CMSIS_NN_4A8F5B5, **kw)
        return
    np.testing.assert_array_equal(transpose_conv(x, w, b, row_flush=RowFlush.CMSIS_NN_4A8F5B5, **kw), exact)
    if geometry(size, k, stride, padding, 1, "test").pad_top % sh == 0:
        np.testing.assert_array_equal(transpose_conv(x, w, b, row_flush=RowFlush.CMSIS_NN_4AB83CC, **kw), exact)


def test_cmsis_nn_4ab83cc_misplaces_the_rows_of_the_reported_case_and_leaves_the_last_unwritten():
    """CMSIS-NN issue #230's configuration: input 4x4x8, filter 4x4 to 4 channels, stride 2, pad 1."""
    from dspsim.kernels.mac.transpose_conv import RowFlush

    rng = np.random.default_rng(230)
    x = rng.integers(-128, 128, (1, 4, 4, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (4, 4, 4, 8)).astype(np.int8)
    kw = dict(output_size=(8, 8), stride=2, padding="SAME", input_zero_point=3, output_zero_point=-5,
              requant=Requant.from_scales(0.05, np.full(4, 0.004), 2.0, engine="tflm", op="conv"))
    buggy = transpose_conv(x, w, None, row_flush=RowFlush.CMSIS_NN_4AB83CC, **kw)
    exact = transpose_conv(x, w, None, **kw)
    assert np.all(buggy[0, 7] == 0) and not np.all(exact[0, 7] == 0)  # the unwritten row: the buffer's 0
    assert np.count_nonzero(buggy != exact) > exact.size // 2
    with pytest.raises(ValueError, match="transpose_conv: row_flush must be one of"):
        transpose_conv(x, w, None, row_flush="sideways", **kw)


@settings(max_examples=15, deadline=None)
@given(stride=st.sampled_from([1, 2, (1, 2)]), padding=st.sampled_from(["SAME", "VALID"]), bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_int16_transpose_conv_int64_accumulator_matches_oracle(stride, padding, bias, seed):
    rng = np.random.default_rng(seed)
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    x = rng.integers(-32768, 32768, (1, 2, 3, 4)).astype(np.int16)
    x.reshape(-1)[:2] = (-32768, 32767)
    w = rng.integers(-128, 128, (3, 3, 2, 4)).astype(np.int8)
    size = (2 * sh, 3 * sw) if padding == "SAME" else (sh + 3, 2 * sw + 2)
    rq = Requant.from_scales(0.0009, rng.uniform(0.001, 0.003, 3), 0.001, engine="tflm", op="conv")
    b = rng.integers(-(1 << 40), 1 << 40, 3).astype(np.int64) if bias else None
    kw = dict(output_size=size, stride=stride, padding=padding, input_zero_point=0, output_zero_point=0, requant=rq)
    out = transpose_conv(x, w, b, **kw)
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, R.transpose_conv_oracle(x, w, b, **kw))


def test_one_pixel_scatters_the_filter():
    x = np.array([3], np.int8).reshape(1, 1, 1, 1)
    w = np.arange(1, 5, dtype=np.int8).reshape(1, 2, 2, 1)
    out = transpose_conv(x, w, output_size=(2, 2), stride=2, padding="VALID", input_zero_point=1, output_zero_point=0,
                         requant=Requant.fixed_point(1 << 30, 1))  # x 1
    assert out.reshape(-1).tolist() == [2, 4, 6, 8]  # (3 - 1) * w


def test_bad_input_is_named():
    kw = dict(output_size=(2, 2), stride=1, input_zero_point=0, output_zero_point=0,
              requant=Requant.fixed_point(1 << 30, 0))
    with pytest.raises(ValueError, match="transpose_conv: w has 2 input channels"):
        transpose_conv(np.zeros((1, 2, 2, 1), np.int8), np.zeros((1, 1, 1, 2), np.int8), **kw)
    with pytest.raises(ValueError, match="transpose_conv: padding"):
        transpose_conv(np.zeros((1, 2, 2, 1), np.int8), np.zeros((1, 1, 1, 1), np.int8), padding="FULL", **kw)
    with pytest.raises(TypeError, match="transpose_conv: requant must be"):
        transpose_conv(np.zeros((1, 2, 2, 1), np.int8), np.zeros((1, 1, 1, 1), np.int8),
                       **dict(kw, requant=(1, 2)))
    with pytest.raises(ValueError, match="transpose_conv: the 16x8 kernel needs zero points 0"):
        transpose_conv(np.zeros((1, 2, 2, 1), np.int16), np.zeros((1, 1, 1, 1), np.int8),
                       **dict(kw, input_zero_point=3))
    with pytest.raises(ValueError, match="transpose_conv: bias must have shape"):
        transpose_conv(np.zeros((1, 2, 2, 1), np.int8), np.zeros((1, 1, 1, 1), np.int8), np.zeros(3, np.int32), **kw)
