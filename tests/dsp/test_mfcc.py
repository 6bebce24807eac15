"""dspsim.dsp.mfcc and its pieces (arm_cmplx_mag, arm_divide, arm_vlog_q31, arm_absmax, arm_mat_vec_mult,
arm_offset_q31): 0 mismatches against cmsisdsp 1.10.3 (tests/golden/cmsisdsp_mfcc.npz: MFCC configurations built
by CMSIS-DSP's own Python helpers, speech, chirp, noise, rails, quiet frames), the oracle, and bad input."""
from __future__ import annotations

import numpy as np
import pytest
from _golden import QTYPE, golden, ints
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
from dspsim.oracle import dsp as oracle

MFCC = sorted({k.rsplit("/", 1)[0] for k in golden("mfcc") if k.startswith("arm_mfcc")})


def _instance(key):
    g = golden("mfcc")
    q = key.split("/")[0][-3:]
    mels = g[key + "/pos"].size
    init = getattr(dsp, f"arm_mfcc_init_{q}")
    return q, init(g[key + "/x"].shape[1], mels, g[key + "/dct"].size // mels, g[key + "/dct"], g[key + "/pos"],
                   g[key + "/lengths"], g[key + "/coefs"], g[key + "/window"])


@pytest.mark.parametrize("key", MFCC)
def test_mfcc_golden(key):
    g = golden("mfcc")
    q, S = _instance(key)
    for i, (x, y) in enumerate(zip(g[key + "/x"], g[key + "/y"])):
        np.testing.assert_array_equal(getattr(dsp, f"arm_mfcc_{q}")(S, x), y, err_msg=f"{key} frame {i}")


@pytest.mark.parametrize("key", MFCC)
def test_mfcc_golden_oracle(key):
    g = golden("mfcc")
    q, S = _instance(key)
    for x, y in list(zip(g[key + "/x"], g[key + "/y"]))[::3]:
        got = oracle.mfcc(q, ints(x), ints(S.window_coefs), ints(S.filter_pos), ints(S.filter_lengths),
                          ints(S.filter_coefs), ints(S.dct_coefs), S.nb_dct_outputs)
        assert got == ints(y), key


@pytest.mark.parametrize("q", ("q15", "q31"))
def test_pieces_golden(q):
    g = golden("mfcc")
    x = g[f"{q}/cmplx_mag/x"]
    np.testing.assert_array_equal(getattr(dsp, f"arm_cmplx_mag_{q}")(x), g[f"{q}/cmplx_mag/out"])
    assert oracle.cmplx_mag(q, ints(x)) == ints(g[f"{q}/cmplx_mag/out"])
    for (a, b), want in zip(g[f"{q}/divide/pairs"], g[f"{q}/divide/out"]):
        assert list(getattr(dsp, f"arm_divide_{q}")(int(a), int(b))) == ints(want), (a, b)
        assert list(oracle.divide(q, int(a), int(b))) == ints(want), (a, b)
    for row, want in zip(g[f"{q}/absmax/x"], g[f"{q}/absmax/out"]):
        assert list(getattr(dsp, f"arm_absmax_{q}")(row)) == ints(want)
    for key in sorted({k.rsplit("/", 1)[0] for k in g if k.startswith(f"{q}/mat_vec/")}):
        a, v = g[key + "/a"], g[key + "/v"]
        np.testing.assert_array_equal(getattr(dsp, f"arm_mat_vec_mult_{q}")(a, v), g[key + "/out"], err_msg=key)
        assert oracle.mat_vec_mult(q, a.tolist(), ints(v)) == ints(g[key + "/out"]), key


def test_vlog_offset_golden():
    g = golden("mfcc")
    x = g["q31/vlog/x"]
    np.testing.assert_array_equal(dsp.arm_vlog_q31(x), g["q31/vlog/out"])
    assert [oracle.vlog_q31(v) for v in ints(x)] == ints(g["q31/vlog/out"])
    for offset, want in zip(g["q31/offset/offsets"], g["q31/offset/out"]):
        np.testing.assert_array_equal(dsp.arm_offset_q31(g["q31/offset/x"], int(offset)), want)


def _values(q):
    info = np.iinfo(QTYPE[q])
    return st.one_of(st.integers(int(info.min), int(info.max)),
                     st.sampled_from([int(info.min), int(info.min) + 1, -1, 0, 1, int(info.max)]))


@pytest.mark.parametrize("q", ("q15", "q31"))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_pieces_oracle(q, data):
    rows, cols = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    a = [data.draw(st.lists(_values(q), min_size=cols, max_size=cols)) for _ in range(rows)]
    v = data.draw(st.lists(_values(q), min_size=cols, max_size=cols))
    got = getattr(dsp, f"arm_mat_vec_mult_{q}")(np.array(a, QTYPE[q]), np.array(v, QTYPE[q]))
    assert ints(got) == oracle.mat_vec_mult(q, a, v)
    x = data.draw(st.lists(_values(q), min_size=2, max_size=20).filter(lambda z: len(z) % 2 == 0))
    assert ints(getattr(dsp, f"arm_cmplx_mag_{q}")(np.array(x, QTYPE[q]))) == oracle.cmplx_mag(q, x)
    n, d = data.draw(_values(q)), data.draw(_values(q))
    assert list(getattr(dsp, f"arm_divide_{q}")(n, d)) == list(oracle.divide(q, n, d))
    if q == "q31":
        assert ints(dsp.arm_vlog_q31(np.array(x, np.int32))) == [oracle.vlog_q31(z) for z in x]


@pytest.mark.parametrize("call, exc, words", [
    (lambda: dsp.arm_mfcc_init_q15(100, 1, 1, np.zeros(1, np.int16), [0], [1], np.zeros(1, np.int16),
                                   np.zeros(100, np.int16)), ValueError, ("arm_mfcc_init_q15", "ARM_MATH_ARGUMENT_ERROR")),
    (lambda: dsp.arm_mfcc_init_q31(32, 2, 1, np.zeros(2, np.int32), [0, 1], [1, 20], np.zeros(21, np.int32),
                                   np.zeros(32, np.int32)), ValueError, ("arm_mfcc_init_q31", "17")),
    (lambda: dsp.arm_mfcc_init_q15(32, 1, 2, np.zeros(1, np.int16), [0], [1], np.zeros(1, np.int16),
                                   np.zeros(32, np.int16)), ValueError, ("arm_mfcc_init_q15", "dct_coefs")),
    (lambda: dsp.arm_mfcc_q15(dsp.arm_mfcc_init_q15(32, 1, 1, np.zeros(1, np.int16), [0], [1], np.zeros(1, np.int16),
                                                    np.zeros(32, np.int16)), np.zeros(31, np.int16)), ValueError,
     ("arm_mfcc_q15", "32 samples")),
    (lambda: dsp.arm_cmplx_mag_q15(np.zeros(3, np.int16)), ValueError, ("arm_cmplx_mag_q15", "even")),
    (lambda: dsp.arm_divide_q15(40000, 1), ValueError, ("arm_divide_q15", "numerator")),
    (lambda: dsp.arm_mat_vec_mult_q31(np.zeros((2, 3), np.int32), np.zeros(2, np.int32)), ValueError,
     ("arm_mat_vec_mult_q31",)),
    (lambda: dsp.arm_absmax_q31(np.zeros(0, np.int32)), ValueError, ("arm_absmax_q31", "empty")),
    (lambda: dsp.arm_offset_q31(np.zeros(2, np.int32), 2**31), ValueError, ("arm_offset_q31", "offset")),
])
def test_bad_input_refused(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value)
