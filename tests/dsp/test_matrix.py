"""dspsim.dsp.matrix: 0 mismatches against cmsisdsp 1.10.3 (tests/golden/cmsisdsp_matrix.npz), the oracle on
hypothesis' matrices (rails, odd and even shapes), and bad input refused."""
from __future__ import annotations

import numpy as np
import pytest
from _golden import QTYPE, golden
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
from dspsim.oracle import dsp as oracle

CASES = sorted({k.rsplit("/", 1)[0] for k in golden("matrix") if k.startswith("q")})
NAMES = ("arm_mat_mult", "arm_mat_mult_fast", "arm_mat_mult_opt")


@pytest.mark.parametrize("key", CASES)
def test_golden(key):
    g = golden("matrix")
    q = key.split("/")[0]
    a, b = g[key + "/a"], g[key + "/b"]
    seen = 0
    for name in NAMES:
        if f"{key}/{name}" in g:
            np.testing.assert_array_equal(getattr(dsp, f"{name}_{q}")(a, b), g[f"{key}/{name}"], err_msg=name)
            want = g[f"{key}/{name}"].tolist()
            assert oracle.mat_mult(q, a.tolist(), b.tolist(), name.endswith("fast")) == want, name
            seen += 1
    assert seen == {"q7": 1, "q15": 2, "q31": 3}[q]


def _values(q):
    info = np.iinfo(QTYPE[q])
    edge = st.sampled_from([int(info.min), int(info.min) + 1, -1, 0, 1, int(info.max)])
    return st.one_of(edge, st.integers(int(info.min), int(info.max)))


@pytest.mark.parametrize("q, name", [("q7", "arm_mat_mult"), ("q15", "arm_mat_mult"), ("q15", "arm_mat_mult_fast"),
                                     ("q31", "arm_mat_mult"), ("q31", "arm_mat_mult_fast"),
                                     ("q31", "arm_mat_mult_opt")])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_oracle(q, name, data):
    m, k, n = (data.draw(st.integers(1, 6)) for _ in range(3))
    a = [data.draw(st.lists(_values(q), min_size=k, max_size=k)) for _ in range(m)]
    b = [data.draw(st.lists(_values(q), min_size=n, max_size=n)) for _ in range(k)]
    got = getattr(dsp, f"{name}_{q}")(np.array(a, QTYPE[q]), np.array(b, QTYPE[q]))
    assert got.tolist() == oracle.mat_mult(q, a, b, name.endswith("fast"))


@pytest.mark.parametrize("call, exc, words", [
    (lambda: dsp.arm_mat_mult_q15(np.zeros((2, 3), np.int16), np.zeros((2, 3), np.int16)), ValueError,
     ("arm_mat_mult_q15", "ARM_MATH_SIZE_MISMATCH")),
    (lambda: dsp.arm_mat_mult_q31(np.zeros((2, 3), np.int16), np.zeros((3, 3), np.int32)), TypeError,
     ("arm_mat_mult_q31", "int32")),
    (lambda: dsp.arm_mat_mult_fast_q15(np.zeros(3, np.int16), np.zeros((3, 1), np.int16)), ValueError,
     ("arm_mat_mult_fast_q15", "rank 2")),
    (lambda: dsp.arm_mat_mult_q7(np.zeros((0, 3), np.int8), np.zeros((3, 1), np.int8)), ValueError,
     ("arm_mat_mult_q7", "[1, 65535]")),
])
def test_bad_input_refused(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value)
