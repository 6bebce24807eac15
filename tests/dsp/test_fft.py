"""dspsim.dsp.fft: 0 mismatches against cmsisdsp 1.10.3 (tests/golden/cmsisdsp_fft.npz: every complex and real
length, forward, inverse, without bit reversal), the oracle on hypothesis' inputs (full-scale values, both
directions, both flags), the scaling against numpy's float FFT, and bad input refused."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
from _golden import QTYPE, golden, ints
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
from dspsim.dsp.fft import CFFT_LENGTHS, RFFT_LENGTHS, cfft_twiddles, rfft_coefs
from dspsim.oracle import dsp as oracle

KEYS = sorted({k.rsplit("/", 1)[0] for k in golden("fft") if k.startswith(("arm_cfft", "arm_rfft"))})
OUTPUTS = (("y", False, True), ("y_inv", True, True), ("y_norev", False, False))


def _run(key, x, ifft, rev):
    fn, case = key.split("/")
    q, n = fn[-3:], int(case.split("_")[0][1:])
    if fn.startswith("arm_cfft"):
        return getattr(dsp, f"arm_cfft_{q}")(getattr(dsp, f"arm_cfft_init_{q}")(n), x, ifft, rev)
    S = getattr(dsp, f"arm_rfft_init_{q}")(n, ifft, rev)
    return getattr(dsp, f"arm_rfft_{q}")(S, np.concatenate([x, x[:2]]) if ifft else x)


@pytest.mark.parametrize("key", KEYS)
def test_golden(key):
    g = golden("fft")
    x = g[key + "/x"]
    checked = 0
    for name, ifft, rev in OUTPUTS:
        y = None
        if key + "/" + name in g:
            y = _run(key, x, ifft, rev)
            np.testing.assert_array_equal(y, g[key + "/" + name], err_msg=f"{key} {name}")
            checked += 1
        elif key + "/" + name + "_sha256" in g:
            y = _run(key, x, ifft, rev)
            assert hashlib.sha256(np.ascontiguousarray(y).tobytes()).digest() == bytes(g[key + "/" + name + "_sha256"]), \
                f"{key} {name}"
            checked += 1
    assert checked >= 2


def test_every_length_measured():
    for q in ("q15", "q31"):
        assert {int(k.split("/")[1].split("_")[0][1:]) for k in KEYS if k.startswith(f"arm_cfft_{q}")} == set(CFFT_LENGTHS)
        assert {int(k.split("/")[1].split("_")[0][1:]) for k in KEYS if k.startswith(f"arm_rfft_{q}")} == set(RFFT_LENGTHS)


@pytest.mark.parametrize("key", [k for k in KEYS if int(k.split("/")[1].split("_")[0][1:]) <= 256])
def test_golden_oracle(key):
    """The oracle itself against the package (lengths up to 256)."""
    g = golden("fft")
    fn = key.split("/")[0]
    q = fn[-3:]
    x = ints(g[key + "/x"])
    for name, ifft, rev in OUTPUTS:
        if key + "/" + name not in g:
            continue
        if fn.startswith("arm_cfft"):
            y = oracle.cfft(q, x, ifft, rev)
        else:
            y = oracle.rfft(q, x + x[:2] if ifft else x, ifft, rev)
        assert y == ints(g[key + "/" + name]), (key, name)


def test_tables_match_the_oracle():
    for q in ("q15", "q31"):
        for n in CFFT_LENGTHS:
            assert ints(cfft_twiddles(q, n)) == [v for pair in oracle.cfft_twiddles(q, n) for v in pair]
        a, b = oracle.real_coefs(q)
        assert ints(rfft_coefs(q)[0]) == [v for p in a for v in p]
        assert ints(rfft_coefs(q)[1]) == [v for p in b for v in p]


def _values(q):
    info = np.iinfo(QTYPE[q])
    edge = st.sampled_from([int(info.min), int(info.min) + 1, -1, 0, 1, int(info.max)])
    return st.one_of(edge, st.integers(int(info.min), int(info.max)))


@pytest.mark.parametrize("q", ("q15", "q31"))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_cfft_oracle(q, data):
    n = data.draw(st.sampled_from((16, 32, 64, 128)))
    x = data.draw(st.lists(_values(q), min_size=2 * n, max_size=2 * n))
    ifft, rev = data.draw(st.booleans()), data.draw(st.booleans())
    y = dsp.arm_cfft_q15 if q == "q15" else dsp.arm_cfft_q31
    S = (dsp.arm_cfft_init_q15 if q == "q15" else dsp.arm_cfft_init_q31)(n)
    assert ints(y(S, np.array(x, QTYPE[q]), ifft, rev)) == oracle.cfft(q, x, ifft, rev)


@pytest.mark.parametrize("q", ("q15", "q31"))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_rfft_oracle(q, data):
    n = data.draw(st.sampled_from((32, 64, 128, 256)))
    ifft, rev = data.draw(st.booleans()), data.draw(st.booleans())
    x = data.draw(st.lists(_values(q), min_size=n + 2 * ifft, max_size=n + 2 * ifft))
    S = (dsp.arm_rfft_init_q15 if q == "q15" else dsp.arm_rfft_init_q31)(n, ifft, rev)
    y = (dsp.arm_rfft_q15 if q == "q15" else dsp.arm_rfft_q31)(S, np.array(x, QTYPE[q]))
    assert ints(y) == oracle.rfft(q, x, ifft, rev)


@pytest.mark.parametrize("q", ("q15", "q31"))
@pytest.mark.parametrize("n", CFFT_LENGTHS)
def test_cfft_scaling(q, n):
    """The forward output is the DFT divided by n, within the truncations of the stages: measured at most about
    2.5 log2(n) output LSBs for radix-4 lengths and twice that for radix-4-by-2 (the final << 1) (docs/dsp.md)."""
    info = np.iinfo(QTYPE[q])
    rng = np.random.default_rng(n)
    x = (rng.uniform(-0.5, 0.5, 2 * n) * info.max).astype(QTYPE[q])
    S = (dsp.arm_cfft_init_q15 if q == "q15" else dsp.arm_cfft_init_q31)(n)
    y = (dsp.arm_cfft_q15 if q == "q15" else dsp.arm_cfft_q31)(S, x).astype(np.float64)
    want = np.fft.fft(x[0::2].astype(np.float64) + 1j * x[1::2]) / n
    err = np.abs((y[0::2] + 1j * y[1::2]) - want).max()
    assert err < 4 * np.log2(n) * (1 if n in (16, 64, 256, 1024, 4096) else 2)


@pytest.mark.parametrize("call, exc, words", [
    (lambda: dsp.arm_cfft_init_q15(100), ValueError, ("arm_cfft_init_q15", "16, 32", "ARM_MATH_ARGUMENT_ERROR")),
    (lambda: dsp.arm_cfft_init_q31(8192), ValueError, ("arm_cfft_init_q31", "4096")),
    (lambda: dsp.arm_rfft_init_q15(16), ValueError, ("arm_rfft_init_q15", "32, 64")),
    (lambda: dsp.arm_rfft_init_q31(64.0), TypeError, ("arm_rfft_init_q31", "int")),
    (lambda: dsp.arm_cfft_q15(dsp.arm_cfft_init_q15(16), np.zeros(16, np.int16)), ValueError,
     ("arm_cfft_q15", "2 * fft_len = 32")),
    (lambda: dsp.arm_cfft_q15(dsp.arm_cfft_init_q15(16), np.zeros(32, np.int32)), TypeError,
     ("arm_cfft_q15", "int16")),
    (lambda: dsp.arm_cfft_q31(dsp.arm_cfft_init_q15(16), np.zeros(32, np.int32)), TypeError,
     ("arm_cfft_q31", "CfftInstance of q31")),
    (lambda: dsp.arm_cfft_q15(dsp.arm_cfft_init_q15(16), np.zeros(32, np.int16), 2), TypeError,
     ("arm_cfft_q15", "ifft_flag")),
    (lambda: dsp.arm_rfft_q15(dsp.arm_rfft_init_q15(32, True), np.zeros(32, np.int16)), ValueError,
     ("arm_rfft_q15", "34")),
    (lambda: dsp.arm_rfft_q31(dsp.arm_rfft_init_q31(32), np.zeros(34, np.int32)), ValueError,
     ("arm_rfft_q31", "32")),
])
def test_bad_input_refused(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value)
