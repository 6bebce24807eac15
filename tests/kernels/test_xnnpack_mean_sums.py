"""XNNPACK's MEAN and the shared int32 sums of dspsim.kernels.reduce.mean against the previous numpy formula.

``_int32_sums`` and ``_xnnpack_mean_codes`` (numba loops over a ``(outer, r, inner)`` view, four rows at a time,
one row per output as an int64 sum) replaced ``x.astype(np.int64).sum(axes)`` wrapped to int32 then the float32
steps in numpy; the reference below is that formula, kept here. Cases: random shapes and axes (one run of
neighbours: a view; others: a transposed copy; negative and repeated), keep_dims on and off, int8 / uint8 / int16
(the reference MEAN's sums), codes at the rails and all equal, zero points at the rails, and element counts at
which the int32 sum just fits and just wraps.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle as R
from dspsim.kernels.reduce.mean import _int32_sums, _reduction_view, xnnpack_mean, xnnpack_mean_plan

RANGE = {np.int8: (-128, 127), np.uint8: (0, 255), np.int16: (-32768, 32767)}


def _wrap32(v):
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def _previous_codes(total, n, dt, s_in, zi, s_out, zo):
    """The previous ``xnnpack_mean_plan`` from its int64 sums ``total``: inv and zp' as the plan derives them."""
    inv = np.float32(np.float32(np.float32(s_in) / np.float32(s_out)) * np.float32(np.float32(1) / n))
    zp = np.float32(np.float32(zo) - np.float32(np.float32(np.int64(n * zi).astype(np.int32)) * inv))
    acc = _wrap32(total).astype(np.int32)
    y = np.rint(np.float32(acc.astype(np.float32) * inv) + zp)
    info = np.iinfo(dt)
    return np.clip(y, int(info.min), int(info.max)).astype(dt)


def _previous_mean(x, axes, keep_dims, **q):
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
    total = x.astype(np.int64).sum(axis=axes, keepdims=keep_dims)
    return _previous_codes(total, n, x.dtype, q["input_scale"], q["input_zero_point"], q["output_scale"],
                           q["output_zero_point"])


@st.composite
def _cases(draw, dtypes=(np.int8, np.uint8)):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim)))
    axes = draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim + 1))
    dt = draw(st.sampled_from(dtypes))
    lo, hi = RANGE[dt]
    fill = draw(st.sampled_from(["random", "min", "max", "equal"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = {"random": lambda: rng.integers(lo, hi + 1, shape), "min": lambda: np.full(shape, lo),
         "max": lambda: np.full(shape, hi), "equal": lambda: np.full(shape, int(rng.integers(lo, hi + 1)))}[fill]()
    return x.astype(dt), axes, draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(case=_cases(dtypes=(np.int8, np.uint8, np.int16)))
def test_int32_sums_equal_numpy_wrapping_int32_sums(case):
    x, axes, keep = case
    resolved = tuple(dict.fromkeys(a % x.ndim for a in axes))
    view, shape = _reduction_view(x.shape, resolved, keep)
    want = x.sum(axis=resolved, keepdims=keep, dtype=np.int32)
    assert shape == want.shape
    assert np.array_equal(_int32_sums(view(x)).reshape(shape), want)


@settings(max_examples=300, deadline=None)
@given(case=_cases(), s_in=st.floats(1e-4, 1.0), s_out=st.floats(1e-4, 1.0), data=st.data())
def test_xnnpack_mean_equals_the_previous_formula(case, s_in, s_out, data):
    x, axes, keep = case
    lo, hi = RANGE[x.dtype.type]
    zi, zo = (data.draw(st.sampled_from([lo, hi, 0 if lo < 0 else 128, data.draw(st.integers(lo, hi))]))
              for _ in range(2))
    q = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
    got = xnnpack_mean(x, axes, keep_dims=keep, **q)
    want = _previous_mean(x, tuple(dict.fromkeys(a % x.ndim for a in axes)), keep, **q)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_mobilenet_global_pool_equals_the_oracle(dt):
    """(2, 7, 7, 37) over (1, 2), keep_dims: 49 rows (12 passes of four, one left), 37 channels."""
    lo, hi = RANGE[dt]
    x = np.random.default_rng(7).integers(lo, hi + 1, (2, 7, 7, 37)).astype(dt)
    q = dict(input_scale=0.0235, input_zero_point=lo, output_scale=0.0117, output_zero_point=hi)
    got = xnnpack_mean(x, (1, 2), keep_dims=True, **q)
    assert np.array_equal(got, R.xnnpack_mean_oracle(x, (1, 2), keep_dims=True, **q))
    assert np.array_equal(got, _previous_mean(x, (1, 2), True, **q))


@pytest.mark.parametrize("dt,code,rows,inner", [
    (np.int8, -128, 1 << 24, 1),        # sum -2^31: fits
    (np.int8, -128, (1 << 24) + 1, 1),  # wraps to 2^31 - 128
    (np.int8, -128, (1 << 24) + 5, 2),  # columns: four rows at a time, one left, wraps
    (np.int8, 127, (1 << 24) + 3, 2),   # 127 * n > 2^31 - 1: wraps
    (np.uint8, 255, (1 << 23) + 3, 2),  # 255 * n > 2^31 - 1: wraps
])
def test_int32_sum_at_the_wrap_sizes(dt, code, rows, inner):
    """All codes equal: the int32 sum is ``wrap(n * code)``; the codes then as the previous formula gives them."""
    x = np.full((rows, inner), code, dt)
    lo, hi = RANGE[dt]
    q = dict(input_scale=0.5, input_zero_point=hi, output_scale=0.25, output_zero_point=lo)
    got = xnnpack_mean_plan(x.shape, x.dtype, (0,), keep_dims=False, **q)(x)
    total = np.full(inner, rows * code, np.int64)
    want = _previous_codes(total, rows, x.dtype, 0.5, hi, 0.25, lo)
    assert np.array_equal(got, want)
    assert np.unique(got).size == 1
