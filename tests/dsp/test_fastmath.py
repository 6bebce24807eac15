"""dspsim.dsp.fastmath: arm_sin / arm_cos / arm_sqrt q15 on every int16 input and q31 on edges and random values,
0 mismatches against cmsisdsp 1.10.3 (tests/golden/cmsisdsp_fastmath.npz); the oracle; the tables; bad input."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
from _golden import golden
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
from dspsim.dsp.fastmath import sin_table
from dspsim.oracle import dsp as oracle

NAMES = ("arm_sin", "arm_cos", "arm_sqrt")
EVERY = np.arange(-32768, 32768).astype(np.int16)


def _digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).digest()


@pytest.mark.parametrize("name", NAMES)
def test_golden_q15_every_input(name):
    g = golden("fastmath")
    fn = getattr(dsp, f"{name}_q15")
    if name == "arm_sqrt":
        out, status = fn(EVERY, status=True)
        assert _digest(status) == bytes(g[f"q15/{name}_status_sha256"])
    else:
        out = fn(EVERY)
    assert _digest(out) == bytes(g[f"q15/{name}_sha256"])
    np.testing.assert_array_equal(fn(g["q15/sample_x"]), g[f"q15/{name}"])


@pytest.mark.parametrize("name", NAMES)
def test_golden_q31(name):
    g = golden("fastmath")
    x = g["q31/x"]
    np.testing.assert_array_equal(getattr(dsp, f"{name}_q31")(x), g[f"q31/{name}"])
    if name == "arm_sqrt":
        np.testing.assert_array_equal(dsp.arm_sqrt_q31(x, status=True)[1], g["q31/arm_sqrt_status"])


@pytest.mark.parametrize("q", ("q15", "q31"))
@pytest.mark.parametrize("name", NAMES)
def test_golden_oracle(q, name):
    g = golden("fastmath")
    xs = g["q15/sample_x"] if q == "q15" else g["q31/x"]
    if name == "arm_sqrt":
        got = [oracle.sqrt(q, int(v))[1] for v in xs]
    else:
        got = [oracle.sin_cos(q, int(v), name == "arm_cos") for v in xs]
    assert got == g[f"{q}/{name}"].tolist()


def test_tables():
    for q in ("q15", "q31"):
        assert sin_table(q).tolist() == oracle.sin_table(q)


@pytest.mark.parametrize("q, dtype", (("q15", np.int16), ("q31", np.int32)))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_oracle(q, dtype, data):
    info = np.iinfo(dtype)
    xs = data.draw(st.lists(st.one_of(st.integers(int(info.min), int(info.max)),
                                      st.sampled_from([int(info.min), -1, 0, 1, int(info.max)])), max_size=20))
    x = np.array(xs, dtype)
    assert getattr(dsp, f"arm_sin_{q}")(x).tolist() == [oracle.sin_cos(q, v) for v in xs]
    assert getattr(dsp, f"arm_cos_{q}")(x).tolist() == [oracle.sin_cos(q, v, True) for v in xs]
    out, status = getattr(dsp, f"arm_sqrt_{q}")(x, status=True)
    assert list(zip(status.tolist(), out.tolist())) == [oracle.sqrt(q, v) for v in xs]


def test_shapes_and_scalars():
    assert dsp.arm_sin_q15(np.int16(8192)) == 32766
    assert dsp.arm_sqrt_q31(np.zeros((2, 3), np.int32)).shape == (2, 3)


@pytest.mark.parametrize("call, exc, words", [
    (lambda: dsp.arm_sin_q15(np.zeros(3, np.int32)), TypeError, ("arm_sin_q15", "int16")),
    (lambda: dsp.arm_cos_q31([1, 2]), TypeError, ("arm_cos_q31", "numpy array")),
    (lambda: dsp.arm_sqrt_q15(np.zeros(3, np.int16), status=2), TypeError, ("arm_sqrt_q15", "status")),
])
def test_bad_input_refused(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value)
