"""arm_mfcc_q15 / _q31 as one compiled frame (dspsim.dsp.mfcc._frame over the instance's packed plan) against the
plain-Python oracle (dspsim.oracle.dsp.mfcc, the stages one by one) on random configurations (length, filters,
coefficients, window, DCT) and random, full-scale, silent (the normalization skipped), largest-magnitude-1 (q31:
the scale's shift of 32) and alternating frames."""
from __future__ import annotations

import numpy as np
import pytest
from _golden import QTYPE, ints
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
from dspsim.oracle import dsp as oracle

KINDS = ("random", "full_scale", "silent", "magnitude_1", "alternating", "alternating_rails")


def _frame(q, kind, n, rng):
    info = np.iinfo(QTYPE[q])
    lo, hi = int(info.min), int(info.max)
    if kind == "random":
        top = int(rng.integers(1, hi + 1))
        return rng.integers(-top, top + 1, n)
    if kind == "full_scale":
        x = rng.integers(lo, hi + 1, n)
        x[rng.integers(0, n)] = rng.choice([lo, hi])
        return x
    if kind == "silent":
        return np.zeros(n, np.int64)
    if kind == "magnitude_1":
        x = rng.integers(-1, 2, n)
        x[rng.integers(0, n)] = rng.choice([-1, 1])
        return x
    m = int(rng.integers(1, hi + 1))
    a, b = (hi, lo) if kind == "alternating_rails" else (m, -m)
    return np.where(np.arange(n) % 2 == 0, a, b)


@pytest.mark.parametrize("q", ("q15", "q31"))
@settings(max_examples=30, deadline=None)
@given(n=st.sampled_from((32, 64, 128, 256)), mels=st.integers(1, 6), dcts=st.integers(1, 5),
       kind=st.sampled_from(KINDS), seed=st.integers(0, 2**32 - 1))
def test_fused_frame_matches_oracle(q, n, mels, dcts, kind, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(QTYPE[q])
    bins = n // 2 + 1
    lengths = rng.integers(1, min(bins, 12) + 1, mels)
    pos = np.array([rng.integers(0, bins - ln + 1) for ln in lengths])
    coefs = rng.integers(0, int(info.max) + 1, int(lengths.sum())).astype(QTYPE[q])
    window = rng.integers(int(info.min), int(info.max) + 1, n).astype(QTYPE[q])
    dct = rng.integers(int(info.min), int(info.max) + 1, mels * dcts).astype(QTYPE[q])
    S = getattr(dsp, f"arm_mfcc_init_{q}")(n, mels, dcts, dct, pos, lengths, coefs, window)
    x = _frame(q, kind, n, rng).astype(QTYPE[q])
    got = getattr(dsp, f"arm_mfcc_{q}")(S, x)
    assert got.dtype == QTYPE[q] and got.shape == (dcts,)
    want = oracle.mfcc(q, ints(x), ints(window), ints(pos), ints(lengths), ints(coefs), ints(dct), dcts)
    assert ints(got) == want, (kind, n)
    np.testing.assert_array_equal(getattr(dsp, f"arm_mfcc_{q}")(S, x), got)  # the plan is not written


@pytest.mark.parametrize("q", ("q15", "q31"))
def test_fused_frame_special_frames(q):
    """Each special frame once, at 512 samples (the bench's length), the filters covering every bin."""
    info = np.iinfo(QTYPE[q])
    n, mels, dcts = 512, 8, 3
    rng = np.random.default_rng(7)
    lengths = np.full(mels, 33)
    pos = np.arange(mels) * 32
    coefs = rng.integers(0, int(info.max) + 1, int(lengths.sum())).astype(QTYPE[q])
    window = rng.integers(0, int(info.max) + 1, n).astype(QTYPE[q])
    dct = rng.integers(int(info.min), int(info.max) + 1, mels * dcts).astype(QTYPE[q])
    S = getattr(dsp, f"arm_mfcc_init_{q}")(n, mels, dcts, dct, pos, lengths, coefs, window)
    for kind in KINDS:
        x = _frame(q, kind, n, rng).astype(QTYPE[q])
        want = oracle.mfcc(q, ints(x), ints(window), ints(pos), ints(lengths), ints(coefs), ints(dct), dcts)
        assert ints(getattr(dsp, f"arm_mfcc_{q}")(S, x)) == want, kind


@pytest.mark.parametrize("call, exc, words", [
    (lambda S: dsp.arm_mfcc_q15(S, np.zeros(32, np.int32)), TypeError, ("arm_mfcc_q15", "int16")),
    (lambda S: dsp.arm_mfcc_q15(S, [0] * 32), TypeError, ("arm_mfcc_q15", "numpy array")),
    (lambda S: dsp.arm_mfcc_q15(S, np.zeros((2, 16), np.int16)), ValueError, ("arm_mfcc_q15", "rank 1")),
    (lambda S: dsp.arm_mfcc_q15(S, np.zeros(64, np.int16)), ValueError, ("arm_mfcc_q15", "32 samples")),
    (lambda S: dsp.arm_mfcc_q31(S, np.zeros(32, np.int32)), TypeError, ("arm_mfcc_q31", "MfccInstance of q31")),
])
def test_frame_input_refused(call, exc, words):
    S = dsp.arm_mfcc_init_q15(32, 1, 1, np.zeros(1, np.int16), [0], [1], np.zeros(1, np.int16),
                              np.zeros(32, np.int16))
    with pytest.raises(exc) as info:
        call(S)
    for w in words:
        assert w in str(info.value)


def test_strided_frame_taken():
    """A non-contiguous frame gives the contiguous frame's MFCCs."""
    rng = np.random.default_rng(3)
    S = dsp.arm_mfcc_init_q15(64, 2, 2, rng.integers(-999, 999, 4).astype(np.int16), [0, 10], [5, 9],
                              rng.integers(0, 32767, 14).astype(np.int16), rng.integers(0, 32767, 64).astype(np.int16))
    x = rng.integers(-32768, 32767, 128).astype(np.int16)
    np.testing.assert_array_equal(dsp.arm_mfcc_q15(S, x[::2]), dsp.arm_mfcc_q15(S, x[::2].copy()))
