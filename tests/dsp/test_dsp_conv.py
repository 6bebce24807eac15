"""dspsim.dsp.conv: arm_conv and arm_correlate, q7 q15 q31: 0 mismatches against cmsisdsp 1.10.3
(tests/golden/cmsisdsp_conv.npz; for the correlation, the entries the C code writes), the oracle, bad input."""
from __future__ import annotations

import numpy as np
import pytest
from _golden import QTYPE, golden, ints
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
from dspsim.oracle import dsp as oracle

KEYS = sorted({k.rsplit("/", 1)[0] for k in golden("conv") if k.startswith("q")})


@pytest.mark.parametrize("key", KEYS)
def test_golden(key):
    g = golden("conv")
    q = key.split("/")[0]
    a, b = g[key + "/a"], g[key + "/b"]
    np.testing.assert_array_equal(getattr(dsp, f"arm_conv_{q}")(a, b), g[key + "/arm_conv"])
    assert oracle.conv(q, ints(a), ints(b)) == ints(g[key + "/arm_conv"])
    start = a.size - b.size if a.size > b.size else 0
    written = slice(start, start + a.size + b.size - 1)
    got = getattr(dsp, f"arm_correlate_{q}")(a, b)
    np.testing.assert_array_equal(got[written], g[key + "/arm_correlate"][written])
    assert not np.any(np.delete(got, np.arange(got.size)[written]))
    assert oracle.correlate(q, ints(a), ints(b))[written] == ints(g[key + "/arm_correlate"][written])


@pytest.mark.parametrize("q", ("q7", "q15", "q31"))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_oracle(q, data):
    info = np.iinfo(QTYPE[q])
    vals = st.one_of(st.integers(int(info.min), int(info.max)),
                     st.sampled_from([int(info.min), -1, 0, 1, int(info.max)]))
    a = data.draw(st.lists(vals, min_size=1, max_size=10))
    b = data.draw(st.lists(vals, min_size=1, max_size=10))
    A, B = np.array(a, QTYPE[q]), np.array(b, QTYPE[q])
    assert ints(getattr(dsp, f"arm_conv_{q}")(A, B)) == oracle.conv(q, a, b)
    assert ints(getattr(dsp, f"arm_correlate_{q}")(A, B)) == oracle.correlate(q, a, b)


def test_bad_input_refused():
    with pytest.raises(ValueError, match="arm_conv_q15.*empty"):
        dsp.arm_conv_q15(np.zeros(0, np.int16), np.zeros(3, np.int16))
    with pytest.raises(TypeError, match="arm_correlate_q31.*int32"):
        dsp.arm_correlate_q31(np.zeros(3, np.int32), np.zeros(3, np.int16))
