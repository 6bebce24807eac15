"""Kernel against oracle for the arithmetic of the rest of the builtins (issue 27 part 3): the comparisons'
rescaling, quantized DIV, ABS, ADD_N, CUMSUM, REDUCE_PROD and the raw FLOOR_DIV / FLOOR_MOD; plus the index rules of
SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND (inverse of each other). The golden vectors of the real engines are
tests/kernels/test_builtins2_golden.py's."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dspsim.fixedpoint import quantize_multiplier
from dspsim.kernels import indexing
from dspsim.kernels.arithmetic import compare, rest as K
from dspsim.oracle import arithmetic_rest as O

SCALES = st.floats(1e-4, 0.99, allow_nan=False).map(lambda v: float(np.float32(v)))
ZP8 = st.integers(-128, 127)
SEEDS = st.integers(0, 2**32 - 1)


def _codes(rng, n, dtype=np.int8):
    info = np.iinfo(dtype)
    edge = np.array([info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max], np.int64)
    return np.concatenate([edge, rng.integers(info.min, info.max + 1, n)]).astype(dtype)


@settings(max_examples=40, deadline=None)
@given(s1=SCALES, s2=SCALES, z1=ZP8, z2=ZP8, op=st.sampled_from(list(compare.CompareOp)), seed=SEEDS,
       dtype=st.sampled_from([np.int8, np.uint8]))
def test_comparison_with_scaling_matches_the_oracle(s1, s2, z1, z2, op, seed, dtype):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        z1, z2 = z1 + 128, z2 + 128
    (m1, e1), (m2, e2) = compare.comparison_scaling(s1), compare.comparison_scaling(s2)
    x1, x2 = _codes(rng, 200, dtype), _codes(rng, 200, dtype)[::-1].copy()
    scaling = ((z1, m1, e1), (z2, m2, e2))
    got = compare.comparison_plan(x1.shape, x2.shape, dtype, op, scaling)(x1, x2)
    assert got.tolist() == O.comparison_oracle(x1.tolist(), x2.tolist(), op.value, scaling)


def test_comparison_scaling_refuses_a_scale_of_one_or_more():
    with pytest.raises(ValueError, match=">= 1"):
        compare.comparison_scaling(1.5)


@settings(max_examples=25, deadline=None)
@given(s1=SCALES, s2=SCALES, so=SCALES, z1=ZP8, z2=ZP8, zo=ZP8, seed=SEEDS)
def test_quantized_div_matches_the_oracle(s1, s2, so, z1, z2, zo, seed):
    try:
        m, s = K.div_params(s1, s2, so)
    except ValueError:  # a left shift beyond 23: refused
        assert float(s1) / (float(s2) * float(so)) > 2**22
        return
    table = K.div_table(np.int8, z1, z2, zo, m, s, -128, 127).astype(np.int64)
    rng = np.random.default_rng(seed)
    for a, b in zip(_codes(rng, 300).tolist(), _codes(rng, 300)[::-1].tolist()):
        if b == z2:
            continue
        assert table[a + 128, b + 128] == O.div_oracle(a, b, z1, z2, zo, m, s, -128, 127), (a, b)


def test_quantized_div_small_dividends_reach_shifts_beyond_31():
    """|x1 - zp1| <= 1 leaves headroom 31: the exponent passes 31 and x86-64's mask and shift count take over
    (measured in the golden vectors: 0 / b gives zp_out + 1)."""
    m, s = K.div_params(0.05, 0.02, 0.1)
    table = K.div_table(np.int8, -3, -2, 5, m, s, -128, 127)
    assert table[-3 + 128, 127 + 128] == 6  # a = 0
    assert table[-4 + 128, 100 + 128] == -128  # a = -1


@settings(max_examples=30, deadline=None)
@given(si=SCALES, so=SCALES, zi=ZP8, zo=ZP8, dtype=st.sampled_from([np.int8, np.int16]))
def test_quantized_abs_matches_the_oracle(si, so, zi, zo, dtype):
    if dtype == np.int16:
        zi = zo = 0
    rescale = K.rescale_params(si, so)
    table = K.abs_table(dtype, zi, zo, rescale)
    info = np.iinfo(dtype)
    codes = range(info.min, info.max + 1, 1 if dtype == np.int8 else 97)
    for c in codes:
        assert int(table[c - info.min]) == O.abs_oracle(c, zi, zo, rescale, info.min, info.max)


@settings(max_examples=30, deadline=None)
@given(si=st.floats(1e-3, 1.0).map(lambda v: float(np.float32(v))), ratio=st.floats(0.02, 40.0), zi=ZP8, zo=ZP8,
       k=st.integers(1, 6), seed=SEEDS)
def test_add_n_int8_matches_the_oracle(si, ratio, zi, zo, k, seed):
    so = float(np.float32(si * ratio))
    rng = np.random.default_rng(seed)
    xs = [_codes(rng, 50) for _ in range(k)]
    got = K.add_n_int8(xs, zi, si, zo, so)
    columns = list(zip(*[x.tolist() for x in xs]))
    assert got.tolist() == O.add_n_oracle(columns, zi, float(np.float32(si)), zo, float(np.float32(so)))


@settings(max_examples=30, deadline=None)
@given(si=st.floats(1e-3, 1.0).map(lambda v: float(np.float32(v))), ratio=st.floats(0.02, 40.0), zi=ZP8, zo=ZP8,
       exclusive=st.booleans(), reverse=st.booleans(), axis=st.integers(0, 2), seed=SEEDS)
def test_cumsum_int8_matches_the_oracle(si, ratio, zi, zo, exclusive, reverse, axis, seed):
    so = float(np.float32(si * ratio))
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (3, 40, 2)).astype(np.int8)
    got = K.cumsum_int8(x, axis, exclusive, reverse, zi, si, zo, so)
    moved = np.moveaxis(x, axis, -1)
    want = np.array([O.cumsum_oracle(r.tolist(), exclusive, reverse, zi, float(np.float32(si)), zo,
                                     float(np.float32(so))) for r in moved.reshape(-1, moved.shape[-1])])
    assert np.array_equal(np.moveaxis(got, axis, -1).reshape(want.shape), want)


def test_cumsum_int8_wraps_its_int32_accumulator():
    """Each term is (x - zp) << 19: 17 terms of -255 pass -2^31 and the int32 sum wraps, as in the C loop."""
    x = np.full((1, 40), -128, np.int8)
    got = K.cumsum_int8(x, 1, False, False, 127, 0.01, 0, 1.0)
    want = O.cumsum_oracle(x[0].tolist(), False, False, 127, float(np.float32(0.01)), 0, 1.0)
    assert got[0].tolist() == want


@settings(max_examples=30, deadline=None)
@given(si=SCALES, so=st.floats(1e-6, 5.0).map(lambda v: float(np.float32(v))), zi=ZP8, zo=ZP8,
       n=st.integers(1, 9), seed=SEEDS)
def test_reduce_prod_matches_the_oracle(si, so, zi, zo, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (5, n)).astype(np.int8)
    try:
        m, s = K.prod_params(si, so, n)
    except ValueError:  # a left shift of 8 or more: refused
        return
    got = K.reduce_prod_quantized(x, [1], zi, si, zo, so)
    assert (m, s) == tuple(int(v) for v in quantize_multiplier(float(np.float32(si)) / float(np.float32(so)) ** (1 / n)))
    assert got.tolist() == [O.reduce_prod_oracle(r, zi, zo, m, s, -128, 127) for r in x.astype(int).tolist()]


@settings(max_examples=50, deadline=None)
@given(dtype=st.sampled_from([np.int8, np.int16, np.int32]), seed=SEEDS)
def test_floor_div_and_floor_mod_match_the_oracle(dtype, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    a = _codes(rng, 100, dtype)
    b = _codes(rng, 100, dtype)[::-1].copy()
    b[b == 0] = 3
    if dtype == np.int32:
        b[b == -1] = 5  # INT_MIN % -1 traps in C
    bits = info.bits
    assert K.floor_div(a, b).tolist() == [O.floor_div_oracle(p, q, bits) for p, q in zip(a.tolist(), b.tolist())]
    assert K.floor_mod(a, b).tolist() == [O.floor_mod_oracle(p, q, bits) for p, q in zip(a.tolist(), b.tolist())]


def test_a_zero_divisor_is_refused():
    with pytest.raises(ValueError, match="Division by 0"):
        K.floor_div(np.int32([4]), np.int32([0]))


@pytest.mark.parametrize("shape,block,pads", [((2, 5, 4, 3), [2, 2], [[1, 0], [0, 2]]), ((2, 5, 3), [3], [[1, 0]]),
                                               ((1, 4, 6, 1), [4, 3], [[0, 0], [0, 0]])])
def test_batch_to_space_undoes_space_to_batch(shape, block, pads):
    x = np.arange(int(np.prod(shape))).reshape(shape) + 1
    y = indexing.space_to_batch_nd([x, np.array(0)], block, pads)
    assert y.shape[0] == shape[0] * int(np.prod(block))
    assert int(np.count_nonzero(y == 0)) == y.size - x.size  # every pad holds the pad value
    assert np.array_equal(indexing.batch_to_space_nd(y, block, pads), x)


def test_the_int16_lookup_is_the_softmax_tables_lookup():
    """LOG int16 reads its 513-entry table as the int16 SOFTMAX does (one home for the rule's meaning)."""
    from dspsim.kernels.nonlinear.softmax import lut_lookup_int16

    rng = np.random.default_rng(7)
    lut = rng.integers(-32768, 32768, 513).astype(np.int16)
    x = np.arange(-32768, 32768, dtype=np.int16)
    want = np.array([lut_lookup_int16(np.int64(v), lut) for v in x[::37].tolist()], np.int64)
    assert np.array_equal(K.lookup_int16(x[::37], lut).astype(np.int64), want)


@settings(max_examples=30, deadline=None)
@given(si=SCALES, so=SCALES, zi=ZP8, zo=ZP8)
def test_sqrt_int16_is_the_float32_steps(si, so, zi, zo):
    x = np.arange(max(zi, -32768), 32768, 61, dtype=np.int16)
    got = K.sqrt_int16(x, si, zi, so, zo)
    for q, y in zip(x.tolist()[:200], got.tolist()[:200]):
        dq = np.float32(np.float32(si) * np.float32(q - zi))
        v = int(np.float32(np.sqrt(dq) / np.float32(so))) + zo
        assert y == min(max(v, -32768), 32767)
