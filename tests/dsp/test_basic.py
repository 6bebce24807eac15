"""dspsim.dsp.basic: 0 mismatches against cmsisdsp 1.10.3 (tests/golden/cmsisdsp_basic.npz), the oracle on
hypothesis' inputs (each type's minimum and maximum, zeros, every shift), and bad input refused."""
from __future__ import annotations

import numpy as np
import pytest
from _golden import QTYPE, golden, ints
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import dsp
from dspsim.dsp.basic import SCALE_SHIFTS, SHIFT_BITS
from dspsim.oracle import dsp as oracle

QS = ("q7", "q15", "q31")
BINARY = ("arm_add", "arm_sub", "arm_mult")
UNARY = ("arm_negate", "arm_abs")
ORACLE = {"arm_add": oracle.add, "arm_sub": oracle.sub, "arm_mult": oracle.mult, "arm_negate": oracle.negate,
          "arm_abs": oracle.abs_}
DOT_LENGTHS = (1, 2, 3, 4, 5, 7)


def _pair_cases(q):
    g = golden("basic")
    return sorted({k.split("/")[1] for k in g if k.startswith(q + "/")} - {"scale", "shift"})


@pytest.mark.parametrize("q", QS)
def test_golden_elementwise(q):
    g = golden("basic")
    checked = 0
    for case in _pair_cases(q):
        a, b = g[f"{q}/{case}/a"], g[f"{q}/{case}/b"]
        for name in BINARY:
            np.testing.assert_array_equal(getattr(dsp, f"{name}_{q}")(a, b), g[f"{q}/{case}/{name}"],
                                          err_msg=f"{name}_{q} {case}")
            checked += a.size
        for name in UNARY:
            np.testing.assert_array_equal(getattr(dsp, f"{name}_{q}")(a), g[f"{q}/{case}/{name}"],
                                          err_msg=f"{name}_{q} {case}")
            checked += a.size
        dot = getattr(dsp, f"arm_dot_prod_{q}")
        got = [dot(a[:m], b[:m]) for m in DOT_LENGTHS + (a.size,)]
        assert got == ints(g[f"{q}/{case}/arm_dot_prod"]), (q, case)
    assert checked > 1000


@pytest.mark.parametrize("q", QS)
def test_golden_scale_shift(q):
    g = golden("basic")
    x = g[f"{q}/scale/x"]
    params = g[f"{q}/scale/params"]
    assert {int(s) for s in params[:, 1]} == set(range(SCALE_SHIFTS[q][0], SCALE_SHIFTS[q][1] + 1))
    for (fract, shift), want in zip(params, g[f"{q}/scale/out"]):
        np.testing.assert_array_equal(getattr(dsp, f"arm_scale_{q}")(x, int(fract), int(shift)), want,
                                      err_msg=f"arm_scale_{q} fract={fract} shift={shift}")
    shifts = g[f"{q}/shift/shifts"]
    assert ints(shifts) == list(range(SHIFT_BITS[q][0], SHIFT_BITS[q][1] + 1))
    for shift, want in zip(shifts, g[f"{q}/shift/out"]):
        np.testing.assert_array_equal(getattr(dsp, f"arm_shift_{q}")(g[f"{q}/shift/x"], int(shift)), want,
                                      err_msg=f"arm_shift_{q} shift={shift}")


def test_golden_oracle():
    """The oracle itself against the package, on every golden case."""
    g = golden("basic")
    for q in QS:
        for case in _pair_cases(q):
            a, b = ints(g[f"{q}/{case}/a"]), ints(g[f"{q}/{case}/b"])
            for name in BINARY:
                assert ORACLE[name](q, a, b) == ints(g[f"{q}/{case}/{name}"])
            for name in UNARY:
                assert ORACLE[name](q, a) == ints(g[f"{q}/{case}/{name}"])
            assert [oracle.dot_prod(q, a[:m], b[:m]) for m in DOT_LENGTHS + (len(a),)] == \
                ints(g[f"{q}/{case}/arm_dot_prod"])
        x = ints(g[f"{q}/scale/x"])
        for (fract, shift), want in zip(g[f"{q}/scale/params"], g[f"{q}/scale/out"]):
            assert oracle.scale(q, x, int(fract), int(shift)) == ints(want)
        for shift, want in zip(g[f"{q}/shift/shifts"], g[f"{q}/shift/out"]):
            assert oracle.shift(q, x, int(shift)) == ints(want)


def _values(q):
    info = np.iinfo(QTYPE[q])
    edge = st.sampled_from([int(info.min), int(info.min) + 1, -1, 0, 1, int(info.max) - 1, int(info.max)])
    return st.one_of(edge, st.integers(int(info.min), int(info.max)))


def _vectors(q, min_size=0):
    return st.lists(_values(q), min_size=min_size, max_size=40)


@st.composite
def _same_length(draw, q):
    a = draw(_vectors(q))
    b = draw(st.lists(_values(q), min_size=len(a), max_size=len(a)))
    return a, b


@pytest.mark.parametrize("q", QS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_oracle_elementwise(q, data):
    a, b = data.draw(_same_length(q))
    A, B = np.array(a, QTYPE[q]), np.array(b, QTYPE[q])
    for name in BINARY:
        assert ints(getattr(dsp, f"{name}_{q}")(A, B)) == ORACLE[name](q, a, b), name
    for name in UNARY:
        assert ints(getattr(dsp, f"{name}_{q}")(A)) == ORACLE[name](q, a), name
    assert getattr(dsp, f"arm_dot_prod_{q}")(A, B) == oracle.dot_prod(q, a, b)


@pytest.mark.parametrize("q", QS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_oracle_scale_shift(q, data):
    a = data.draw(_vectors(q))
    A = np.array(a, QTYPE[q])
    fract = data.draw(_values(q))
    scale_shift = data.draw(st.integers(*SCALE_SHIFTS[q]))
    assert ints(getattr(dsp, f"arm_scale_{q}")(A, fract, scale_shift)) == oracle.scale(q, a, fract, scale_shift)
    shift = data.draw(st.integers(*SHIFT_BITS[q]))
    assert ints(getattr(dsp, f"arm_shift_{q}")(A, shift)) == oracle.shift(q, a, shift)


@pytest.mark.parametrize("q", QS)
def test_every_shift_on_the_rails(q):
    info = np.iinfo(QTYPE[q])
    a = [int(info.min), int(info.min) + 1, -1, 0, 1, int(info.max)]
    A = np.array(a, QTYPE[q])
    for shift in range(SHIFT_BITS[q][0], SHIFT_BITS[q][1] + 1):
        assert ints(getattr(dsp, f"arm_shift_{q}")(A, shift)) == oracle.shift(q, a, shift)
    for shift in range(SCALE_SHIFTS[q][0], SCALE_SHIFTS[q][1] + 1):
        for fract in (int(info.min), -1, 0, 1, int(info.max)):
            assert ints(getattr(dsp, f"arm_scale_{q}")(A, fract, shift)) == oracle.scale(q, a, fract, shift)


def test_dot_prod_q7_wraps_at_32_bits():
    a = np.full(140000, -128, np.int8)  # 140000 * 16384 > 2^31
    assert dsp.arm_dot_prod_q7(a, a) == oracle.wrap(140000 * 16384, 32) < 0


@pytest.mark.parametrize("call, exc, words", [
    (lambda: dsp.arm_add_q15(np.zeros(3, np.int32), np.zeros(3, np.int16)), TypeError, ("arm_add_q15", "int16")),
    (lambda: dsp.arm_add_q15([1, 2], [3, 4]), TypeError, ("arm_add_q15", "numpy array")),
    (lambda: dsp.arm_mult_q31(np.zeros(3, np.int32), np.zeros(4, np.int32)), ValueError, ("arm_mult_q31", "same shape")),
    (lambda: dsp.arm_sub_q7(np.zeros((2, 2), np.int8), np.zeros((2, 2), np.int8)), ValueError, ("arm_sub_q7", "rank 1")),
    (lambda: dsp.arm_shift_q15(np.zeros(3, np.int16), 17), ValueError, ("arm_shift_q15", "[-31, 16]")),
    (lambda: dsp.arm_shift_q31(np.zeros(3, np.int32), -32), ValueError, ("arm_shift_q31", "[-31, 31]")),
    (lambda: dsp.arm_scale_q15(np.zeros(3, np.int16), 1, 16), ValueError, ("arm_scale_q15", "[-16, 15]")),
    (lambda: dsp.arm_scale_q7(np.zeros(3, np.int8), 128, 0), ValueError, ("arm_scale_q7", "scale_fract")),
    (lambda: dsp.arm_scale_q31(np.zeros(3, np.int32), 1, 1.5), TypeError, ("arm_scale_q31", "shift", "int")),
    (lambda: dsp.arm_dot_prod_q15(np.zeros(3, np.int16), np.zeros(3, np.int8)), TypeError, ("arm_dot_prod_q15",)),
    (lambda: dsp.arm_negate_q31(np.zeros(3, np.int64)), TypeError, ("arm_negate_q31", "int32")),
])
def test_bad_input_refused(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value)
