"""dspsim.dsp.fir and .biquad: 0 mismatches against cmsisdsp 1.10.3 block by block with state
(tests/golden/cmsisdsp_filter.npz), the oracle on hypothesis' inputs (extreme coefficients and signals, every
postShift, block splits), and bad input refused."""
from __future__ import annotations

import numpy as np
import pytest
from _golden import QTYPE, cases, golden, ints
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
from dspsim.dsp.biquad import POST_SHIFTS
from dspsim.oracle import dsp as oracle

FIR_CASES = cases("filter", "arm_fir_q15") + cases("filter", "arm_fir_q31")
BIQUAD_CASES = cases("filter", "arm_biquad_cascade_df1_q15") + cases("filter", "arm_biquad_cascade_df1_q31")


def _fir(q, fast):
    return getattr(dsp, f"arm_fir{'_fast' if fast else ''}_{q}")


def _biquad(q, fast):
    return getattr(dsp, f"arm_biquad_cascade_df1{'_fast' if fast else ''}_{q}")


@pytest.mark.parametrize("fast", (False, True), ids=("plain", "fast"))
@pytest.mark.parametrize("key", FIR_CASES)
def test_fir_golden(key, fast):
    g = golden("filter")
    q = key.split("/")[0][-3:]
    S = getattr(dsp, f"arm_fir_init_{q}")(g[key + "/coeffs"])
    want = g[key + ("/y_fast" if fast else "/y")]
    for i, (xb, yb) in enumerate(zip(g[key + "/x"], want)):
        np.testing.assert_array_equal(_fir(q, fast)(S, xb), yb, err_msg=f"{key} block {i}")


@pytest.mark.parametrize("fast", (False, True), ids=("plain", "fast"))
@pytest.mark.parametrize("key", BIQUAD_CASES)
def test_biquad_golden(key, fast):
    g = golden("filter")
    q = key.split("/")[0][-3:]
    coeffs = g[key + "/coeffs"]
    S = getattr(dsp, f"arm_biquad_cascade_df1_init_{q}")(coeffs.size // (6 if q == "q15" else 5), coeffs,
                                                        int(g[key + "/post_shift"]))
    want = g[key + ("/y_fast" if fast else "/y")]
    for i, (xb, yb) in enumerate(zip(g[key + "/x"], want)):
        np.testing.assert_array_equal(_biquad(q, fast)(S, xb), yb, err_msg=f"{key} block {i}")


def test_golden_oracle():
    """The oracle itself against the package, on every golden block."""
    g = golden("filter")
    for key in FIR_CASES + BIQUAD_CASES:
        q = key.split("/")[0][-3:]
        coeffs = ints(g[key + "/coeffs"])
        for fast in (False, True):
            if "fir" in key:
                state = [0] * (len(coeffs) - 1)
            else:
                state = [0] * (4 * (len(coeffs) // (6 if q == "q15" else 5)))
            for xb, yb in zip(g[key + "/x"], g[key + ("/y_fast" if fast else "/y")]):
                if "fir" in key:
                    y, state = oracle.fir(q, coeffs, state, ints(xb), fast)
                else:
                    y, state = oracle.biquad_df1(q, coeffs, int(g[key + "/post_shift"]), state, ints(xb), fast)
                assert y == ints(yb), (key, fast)


def _values(q):
    info = np.iinfo(QTYPE[q])
    edge = st.sampled_from([int(info.min), int(info.min) + 1, -1, 0, 1, int(info.max)])
    return st.one_of(edge, st.integers(int(info.min), int(info.max)))


def _blocks(draw, q):
    x = draw(st.lists(_values(q), min_size=0, max_size=48))
    cuts = sorted(draw(st.lists(st.integers(0, len(x)), max_size=3)))
    return [x[i:j] for i, j in zip([0] + cuts, cuts + [len(x)])]


@pytest.mark.parametrize("fast", (False, True), ids=("plain", "fast"))
@pytest.mark.parametrize("q", ("q15", "q31"))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_fir_oracle(q, fast, data):
    taps = data.draw(st.integers(1, 12).map(lambda t: 2 * t if q == "q15" else t))
    coeffs = data.draw(st.lists(_values(q), min_size=taps, max_size=taps))
    S = getattr(dsp, f"arm_fir_init_{q}")(np.array(coeffs, QTYPE[q]))
    state = [0] * (taps - 1)
    for block in _blocks(data.draw, q):
        want, state = oracle.fir(q, coeffs, state, block, fast)
        assert ints(_fir(q, fast)(S, np.array(block, QTYPE[q]))) == want
        assert ints(S.state) == state


@pytest.mark.parametrize("fast", (False, True), ids=("plain", "fast"))
@pytest.mark.parametrize("q", ("q15", "q31"))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_biquad_oracle(q, fast, data):
    stages = data.draw(st.integers(1, 3))
    coeffs = []
    for _ in range(stages):
        c = data.draw(st.lists(_values(q), min_size=5, max_size=5))
        coeffs += [c[0], 0] + c[1:] if q == "q15" else c
    post = data.draw(st.integers(*POST_SHIFTS[q]))
    S = getattr(dsp, f"arm_biquad_cascade_df1_init_{q}")(stages, np.array(coeffs, QTYPE[q]), post)
    state = [0] * (4 * stages)
    for block in _blocks(data.draw, q):
        want, state = oracle.biquad_df1(q, coeffs, post, state, block, fast)
        assert ints(_biquad(q, fast)(S, np.array(block, QTYPE[q]))) == want
        assert ints(S.state) == state


@pytest.mark.parametrize("q", ("q15", "q31"))
def test_every_post_shift_full_scale(q):
    """Every postShift on the rails: all coefficients and inputs at the minimum (the int64 / int32 sums wrap)."""
    info = np.iinfo(QTYPE[q])
    per = 6 if q == "q15" else 5
    coeffs = [int(info.min)] * per
    if q == "q15":
        coeffs[1] = 0
    x = [int(info.min), int(info.max)] * 6 + [int(info.min)] * 6
    for post in range(POST_SHIFTS[q][0], POST_SHIFTS[q][1] + 1):
        for fast in (False, True):
            S = getattr(dsp, f"arm_biquad_cascade_df1_init_{q}")(2, np.array(coeffs * 2, QTYPE[q]), post)
            want, _ = oracle.biquad_df1(q, coeffs * 2, post, [0] * 8, x, fast)
            assert ints(_biquad(q, fast)(S, np.array(x, QTYPE[q]))) == want, (post, fast)


@pytest.mark.parametrize("call, exc, words", [
    (lambda: dsp.arm_fir_init_q15(np.ones(3, np.int16)), ValueError, ("arm_fir_init_q15", "even")),
    (lambda: dsp.arm_fir_init_q31(np.ones(0, np.int32)), ValueError, ("arm_fir_init_q31", "[1, 65535]")),
    (lambda: dsp.arm_fir_init_q31(np.ones(4, np.int16)), TypeError, ("arm_fir_init_q31", "int32")),
    (lambda: dsp.arm_fir_q15(dsp.arm_fir_init_q31(np.ones(4, np.int32)), np.ones(4, np.int16)), TypeError,
     ("arm_fir_q15", "FirInstance")),
    (lambda: dsp.arm_fir_q31(dsp.arm_fir_init_q31(np.ones(4, np.int32)), np.ones(4, np.int16)), TypeError,
     ("arm_fir_q31", "int32")),
    (lambda: dsp.arm_biquad_cascade_df1_init_q15(2, np.zeros(10, np.int16), 1), ValueError,
     ("arm_biquad_cascade_df1_init_q15", "6 values per stage")),
    (lambda: dsp.arm_biquad_cascade_df1_init_q31(1, np.zeros(5, np.int32), 31), ValueError,
     ("arm_biquad_cascade_df1_init_q31", "post_shift", "[0, 30]")),
    (lambda: dsp.arm_biquad_cascade_df1_init_q15(0, np.zeros(0, np.int16), 1), ValueError,
     ("arm_biquad_cascade_df1_init_q15", "num_stages")),
    (lambda: dsp.arm_biquad_cascade_df1_fast_q15(
        dsp.arm_biquad_cascade_df1_init_q15(1, np.array([1, 2, 0, 0, 0, 0], np.int16), 1), np.ones(2, np.int16)),
     ValueError, ("arm_biquad_cascade_df1_fast_q15", "must be 0")),
    (lambda: dsp.arm_biquad_cascade_df1_q31(dsp.arm_fir_init_q31(np.ones(4, np.int32)), np.ones(4, np.int32)),
     TypeError, ("arm_biquad_cascade_df1_q31", "BiquadDf1Instance")),
])
def test_bad_input_refused(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value)
