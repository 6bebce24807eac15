"""arm_fir_q7 and arm_vlog_q15: 0 mismatches against cmsisdsp 1.10.3 (tests/golden/cmsisdsp_misc.npz; vlog on every
int16 input), the oracle, and bad input."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
from _golden import golden, ints
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
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


@pytest.mark.parametrize("q", ("q15", "q31"))
def test_complex_golden(q):
    g = golden("misc")
    a, b = g[f"cmplx_{q}/a"], g[f"cmplx_{q}/b"]
    np.testing.assert_array_equal(getattr(dsp, f"arm_cmplx_mag_squared_{q}")(a), g[f"cmplx_{q}/arm_cmplx_mag_squared"])
    np.testing.assert_array_equal(getattr(dsp, f"arm_cmplx_mult_cmplx_{q}")(a, b), g[f"cmplx_{q}/arm_cmplx_mult_cmplx"])
    assert oracle.cmplx_mag_squared(q, ints(a)) == ints(g[f"cmplx_{q}/arm_cmplx_mag_squared"])
    assert oracle.cmplx_mult_cmplx(q, ints(a), ints(b)) == ints(g[f"cmplx_{q}/arm_cmplx_mult_cmplx"])
    if q == "q15":
        np.testing.assert_array_equal(dsp.arm_cmplx_mag_fast_q15(a), g["cmplx_q15/arm_cmplx_mag_fast"])
        assert oracle.cmplx_mag_fast_q15(ints(a)) == ints(g["cmplx_q15/arm_cmplx_mag_fast"])


@pytest.mark.parametrize("q, dtype", (("q15", np.int16), ("q31", np.int32)))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_complex_oracle(q, dtype, data):
    info = np.iinfo(dtype)
    vals = st.one_of(st.integers(int(info.min), int(info.max)), st.sampled_from([int(info.min), -1, 0, 1, int(info.max)]))
    n = data.draw(st.integers(0, 8))
    a = data.draw(st.lists(vals, min_size=2 * n, max_size=2 * n))
    b = data.draw(st.lists(vals, min_size=2 * n, max_size=2 * n))
    assert ints(getattr(dsp, f"arm_cmplx_mag_squared_{q}")(np.array(a, dtype))) == oracle.cmplx_mag_squared(q, a)
    assert ints(getattr(dsp, f"arm_cmplx_mult_cmplx_{q}")(np.array(a, dtype), np.array(b, dtype))) == \
        oracle.cmplx_mult_cmplx(q, a, b)
    if q == "q15":
        assert ints(dsp.arm_cmplx_mag_fast_q15(np.array(a, dtype))) == oracle.cmplx_mag_fast_q15(a)


def test_complex_bad_input():
    with pytest.raises(ValueError, match="arm_cmplx_mult_cmplx_q31.*same shape"):
        dsp.arm_cmplx_mult_cmplx_q31(np.zeros(4, np.int32), np.zeros(6, np.int32))
    with pytest.raises(ValueError, match="arm_cmplx_mag_squared_q15.*even"):
        dsp.arm_cmplx_mag_squared_q15(np.zeros(5, np.int16))


@pytest.mark.parametrize("q", ("q7", "q15", "q31"))
def test_statistics_golden(q):
    g = golden("misc")
    names = [str(n) for n in g[f"stats_{q}/names"]]
    keys = sorted(k for k in g if k.startswith(f"stats_{q}/x"))
    assert len(keys) == 48
    ref = {"arm_power": oracle.power, "arm_mean": oracle.mean, "arm_rms": oracle.rms}
    for key, want in zip(keys, g[f"stats_{q}/out"]):
        assert [getattr(dsp, f"{n}_{q}")(g[key]) for n in names] == ints(want), key
        assert [ref[n](q, ints(g[key])) for n in names] == ints(want), key


@pytest.mark.parametrize("q, dtype", (("q15", np.int16), ("q31", np.int32)))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_statistics_oracle(q, dtype, data):
    info = np.iinfo(dtype)
    vals = st.one_of(st.integers(int(info.min), int(info.max)), st.sampled_from([int(info.min), -1, 0, 1, int(info.max)]))
    x = data.draw(st.lists(vals, min_size=1, max_size=12))
    a = np.array(x, dtype)
    assert getattr(dsp, f"arm_power_{q}")(a) == oracle.power(q, x)
    assert getattr(dsp, f"arm_mean_{q}")(a) == oracle.mean(q, x)
    assert getattr(dsp, f"arm_rms_{q}")(a) == oracle.rms(q, x)


def test_statistics_bad_input():
    with pytest.raises(ValueError, match="arm_rms_q31.*empty"):
        dsp.arm_rms_q31(np.zeros(0, np.int32))
    with pytest.raises(TypeError, match="arm_power_q7.*int8"):
        dsp.arm_power_q7(np.zeros(3, np.int16))


BIQUAD64 = sorted({k.rsplit("/", 1)[0] for k in golden("misc") if k.startswith("arm_biquad_cas_df1_32x64_q31/")})


@pytest.mark.parametrize("key", BIQUAD64)
def test_biquad_32x64_golden(key):
    g = golden("misc")
    c, post = g[key + "/coeffs"], int(g[key + "/post_shift"])
    S = dsp.arm_biquad_cas_df1_32x64_init_q31(c.size // 5, c, post)
    state = [0] * (4 * (c.size // 5))
    for i, (xb, yb) in enumerate(zip(g[key + "/x"], g[key + "/y"])):
        np.testing.assert_array_equal(dsp.arm_biquad_cas_df1_32x64_q31(S, xb), yb, err_msg=f"{key} block {i}")
        want, state = oracle.biquad_df1_32x64(ints(c), post, state, ints(xb))
        assert want == ints(yb)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_biquad_32x64_oracle(data):
    vals = st.one_of(st.integers(-2**31, 2**31 - 1), st.sampled_from([-2**31, -1, 0, 1, 2**31 - 1]))
    stages = data.draw(st.integers(1, 3))
    coeffs = data.draw(st.lists(vals, min_size=5 * stages, max_size=5 * stages))
    post = data.draw(st.integers(0, 30))
    S = dsp.arm_biquad_cas_df1_32x64_init_q31(stages, np.array(coeffs, np.int32), post)
    state = [0] * (4 * stages)
    for _ in range(3):
        x = data.draw(st.lists(vals, max_size=8))
        want, state = oracle.biquad_df1_32x64(coeffs, post, state, x)
        assert ints(dsp.arm_biquad_cas_df1_32x64_q31(S, np.array(x, np.int32))) == want
        assert ints(S.state) == state


def test_biquad_32x64_bad_input():
    with pytest.raises(ValueError, match="arm_biquad_cas_df1_32x64_init_q31.*post_shift"):
        dsp.arm_biquad_cas_df1_32x64_init_q31(1, np.zeros(5, np.int32), 31)
    with pytest.raises(TypeError, match="arm_biquad_cas_df1_32x64_q31.*BiquadDf1x64Instance"):
        dsp.arm_biquad_cas_df1_32x64_q31(dsp.arm_biquad_cascade_df1_init_q31(1, np.zeros(5, np.int32), 1),
                                         np.zeros(3, np.int32))
