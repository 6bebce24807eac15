"""AVERAGE_POOL_2D / MAX_POOL_2D kernels against the oracle and hand-derived values."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle as R
from dspsim.kernels.pool import average_pool2d, max_pool2d


@settings(max_examples=200, deadline=None)
@given(h=st.integers(1, 7), w=st.integers(1, 7), k=st.integers(1, 4), s=st.integers(1, 3),
       padding=st.sampled_from(["SAME", "VALID"]), lo=st.integers(-128, 0), seed=st.integers(0, 2**32 - 1),
       c=st.sampled_from([1, 3, 17]), dtype=st.sampled_from([np.int8, np.uint8, np.int16]))
def test_pools_equal_oracle(h, w, k, s, padding, lo, seed, c, dtype):
    """Channel counts on both sides of a vector (the kernel folds each window's rows of channels), every type at
    its extreme codes."""
    if padding == "VALID" and (k > h or k > w):
        return
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(int(info.min), int(info.max) + 1, size=(2, h, w, c)).astype(dtype)
    x.reshape(-1)[::5] = rng.choice([info.min, info.max], x.reshape(-1)[::5].size)
    lo, hi = max(lo, int(info.min)), int(info.max) - 27
    for fn, oracle in ((average_pool2d, R.average_pool2d), (max_pool2d, R.max_pool2d)):
        out = fn(x, k, stride=s, padding=padding, act_min=lo, act_max=hi)
        want = oracle(x.tolist(), (k, k), (s, s), padding, lo, hi)
        assert out.shape[1:3] == (R.pool_geometry(h, k, s, padding)[0], R.pool_geometry(w, k, s, padding)[0])
        assert {idx: int(v) for idx, v in np.ndenumerate(out)} == want


def test_average_pool_rounds_ties_away_from_zero_on_codes():
    x = np.array([1, 2, -1, -2, 3, 4, -3, -4], np.int8).reshape(1, 1, 8, 1)  # pairs: 1.5, -1.5, 3.5, -3.5
    assert average_pool2d(x, (1, 2), stride=(1, 2)).ravel().tolist() == [2, -2, 4, -4]


def test_average_pool_counts_only_taps_inside_the_input():
    x = np.full((1, 2, 2, 1), 9, np.int8)
    x[0, 0, 0, 0] = 0
    # SAME 3x3 on 2x2 pads 1 all round: each window holds the 4 real taps: (0 + 9 + 9 + 9) / 4 = 6.75 -> 7
    out = average_pool2d(x, 3, stride=1, padding="SAME")
    assert out.ravel().tolist() == [7, 7, 7, 7]


def test_max_pool_applies_the_fused_activation():
    x = np.array([-100, -50, 20, 90], np.int8).reshape(1, 1, 4, 1)
    out = max_pool2d(x, (1, 2), stride=(1, 2), act_min=-40, act_max=80)
    assert out.ravel().tolist() == [-40, 80]


def test_window_entirely_in_padding_is_refused():
    x = np.zeros((1, 1, 1, 1), np.int8)
    with pytest.raises(ValueError, match="average_pool2d: a pooling window lies entirely in the padding"):
        average_pool2d(x, 1, stride=1, padding=((2, 0), (0, 0)))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="max_pool2d: x must have rank 4"):
        max_pool2d(np.zeros((2, 2), np.int8), 2)
    with pytest.raises(TypeError, match="average_pool2d: x must have dtype"):
        average_pool2d(np.zeros((1, 2, 2, 1), np.float32), 2)
