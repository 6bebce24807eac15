"""arm_fir_q7 and arm_vlog_q15: 0 mismatches against cmsisdsp 1.10.3 (tests/golden/cmsisdsp_misc.npz; vlog on every
int16 input), the oracle, and bad input."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
from _golden import golden, ints
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.dsp as dsp
from dspsim.oracle import dsp as oracle

FIR = sorted({k.rsplit("/", 1)[0] for k in golden("misc") if k.startswith("arm_fir_q7/")})


@pytest.mark.parametrize("key", FIR)
def test_fir_q7_golden(key):
    g = golden("misc")
    S = dsp.arm_fir_init_q7(g[key + "/coeffs"])
    state = [0] * (g[key + "/coeffs"].size - 1)
    for i, (xb, yb) in enumerate(zip(g[key + "/x"], g[key + "/y"])):
        np.testing.assert_array_equal(dsp.arm_fir_q7(S, xb), yb, err_msg=f"{key} block {i}")
        want, state = oracle.fir("q7", ints(g[key + "/coeffs"]), state, ints(xb))
        assert want == ints(yb)


def test_vlog_q15_every_input():
    g = golden("misc")
    out = dsp.arm_vlog_q15(np.arange(-32768, 32768).astype(np.int16))
    assert hashlib.sha256(out.tobytes()).digest() == bytes(g["arm_vlog_q15/sha256"])
    assert [oracle.vlog_q15(v) for v in ints(g["arm_vlog_q15/sample_x"])] == ints(g["arm_vlog_q15/sample_out"])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_fir_q7_oracle(data):
    taps = data.draw(st.integers(1, 9))
    vals = st.one_of(st.integers(-128, 127), st.sampled_from([-128, -1, 0, 1, 127]))
    coeffs = data.draw(st.lists(vals, min_size=taps, max_size=taps))
    S = dsp.arm_fir_init_q7(np.array(coeffs, np.int8))
    state = [0] * (taps - 1)
    for _ in range(3):
        x = data.draw(st.lists(vals, max_size=9))
        want, state = oracle.fir("q7", coeffs, state, x)
        assert ints(dsp.arm_fir_q7(S, np.array(x, np.int8))) == want


def test_bad_input_refused():
    with pytest.raises(TypeError, match="arm_fir_init_q7.*int8"):
        dsp.arm_fir_init_q7(np.ones(3, np.int16))
    with pytest.raises(TypeError, match="arm_vlog_q15.*int16"):
        dsp.arm_vlog_q15(np.ones(3, np.int32))
