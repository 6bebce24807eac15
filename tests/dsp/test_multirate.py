"""dspsim.dsp.fir's decimators and interpolators: 0 mismatches against cmsisdsp 1.10.3 block by block with state
(tests/golden/cmsisdsp_multirate.npz), the oracle on hypothesis' inputs, and bad input refused."""
from __future__ import annotations

import numpy as np
import pytest
from _golden import QTYPE, golden, ints
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
from dspsim.oracle import dsp as oracle

KEYS = sorted({k.rsplit("/", 1)[0] for k in golden("multirate") if k.startswith("arm_")})


@pytest.mark.parametrize("key", KEYS)
def test_golden(key):
    g = golden("multirate")
    fn = key.split("/")[0]
    q = fn[-3:]
    coeffs = g[key + "/coeffs"]
    if "decimate" in fn:
        m = int(g[key + "/m"])
        for fast in ("", "_fast"):
            S = getattr(dsp, f"arm_fir_decimate_init_{q}")(coeffs, m)
            state = [0] * (coeffs.size - 1)
            for i, (xb, yb) in enumerate(zip(g[key + "/x"], g[key + "/y" + fast])):
                np.testing.assert_array_equal(getattr(dsp, f"arm_fir_decimate{fast}_{q}")(S, xb), yb,
                                              err_msg=f"{key}{fast} block {i}")
                want, state = oracle.fir_decimate(q, ints(coeffs), m, state, ints(xb), bool(fast))
                assert want == ints(yb)
    else:
        l_factor = int(g[key + "/l"])
        S = getattr(dsp, f"arm_fir_interpolate_init_{q}")(coeffs, l_factor)
        state = [0] * (coeffs.size // l_factor - 1)
        for i, (xb, yb) in enumerate(zip(g[key + "/x"], g[key + "/y"])):
            np.testing.assert_array_equal(getattr(dsp, f"arm_fir_interpolate_{q}")(S, xb), yb,
                                          err_msg=f"{key} block {i}")
            want, state = oracle.fir_interpolate(q, ints(coeffs), l_factor, state, ints(xb))
            assert want == ints(yb)


def _values(q):
    info = np.iinfo(QTYPE[q])
    return st.one_of(st.integers(int(info.min), int(info.max)),
                     st.sampled_from([int(info.min), int(info.min) + 1, -1, 0, 1, int(info.max)]))


@pytest.mark.parametrize("q", ("q15", "q31"))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_oracle(q, data):
    m = data.draw(st.integers(1, 4))
    taps = data.draw(st.integers(1, 10))
    coeffs = data.draw(st.lists(_values(q), min_size=taps, max_size=taps))
    fast = data.draw(st.booleans())
    S = getattr(dsp, f"arm_fir_decimate_init_{q}")(np.array(coeffs, QTYPE[q]), m)
    state = [0] * (taps - 1)
    for _ in range(3):
        x = data.draw(st.lists(_values(q), min_size=0, max_size=5).map(lambda v: v * m))
        want, state = oracle.fir_decimate(q, coeffs, m, state, x, fast)
        fn = getattr(dsp, f"arm_fir_decimate{'_fast' if fast else ''}_{q}")
        assert ints(fn(S, np.array(x, QTYPE[q]))) == want
    l_factor = data.draw(st.integers(1, 4))
    coeffs = data.draw(st.lists(_values(q), min_size=l_factor, max_size=l_factor * 4)
                       .map(lambda c: c[:len(c) - len(c) % l_factor]))
    S = getattr(dsp, f"arm_fir_interpolate_init_{q}")(np.array(coeffs, QTYPE[q]), l_factor)
    state = [0] * (len(coeffs) // l_factor - 1)
    for _ in range(3):
        x = data.draw(st.lists(_values(q), max_size=6))
        want, state = oracle.fir_interpolate(q, coeffs, l_factor, state, x)
        assert ints(getattr(dsp, f"arm_fir_interpolate_{q}")(S, np.array(x, QTYPE[q]))) == want


@pytest.mark.parametrize("call, exc, words", [
    (lambda: dsp.arm_fir_decimate_q15(dsp.arm_fir_decimate_init_q15(np.ones(4, np.int16), 3), np.ones(4, np.int16)),
     ValueError, ("arm_fir_decimate_q15", "multiple of M = 3", "ARM_MATH_LENGTH_ERROR")),
    (lambda: dsp.arm_fir_decimate_init_q31(np.ones(4, np.int32), 0), ValueError, ("arm_fir_decimate_init_q31", "M")),
    (lambda: dsp.arm_fir_interpolate_init_q15(np.ones(5, np.int16), 2), ValueError,
     ("arm_fir_interpolate_init_q15", "multiple of L = 2")),
    (lambda: dsp.arm_fir_interpolate_q31(dsp.arm_fir_decimate_init_q31(np.ones(4, np.int32), 2),
                                         np.ones(4, np.int32)), TypeError,
     ("arm_fir_interpolate_q31", "FirInterpolateInstance")),
    (lambda: dsp.arm_fir_interpolate_init_q31(np.ones(4, np.int32), 2.0), TypeError,
     ("arm_fir_interpolate_init_q31", "L must be an int")),
])
def test_bad_input_refused(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value)
