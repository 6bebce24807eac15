"""TFLite ADD with its front in int32 vector lanes (dspsim.simd.add_lanes) against the Python-int oracle.

``dspsim.kernels.arithmetic.elementwise.add`` runs the first ``8 * (n // 8)`` outputs in lanes (AVX2 hosts, jit on) and
the rest in the scalar loop: every case here has a length that is no multiple of 8 or 32, so both paths and
their seam are compared with ``dspsim.oracle.add_oracle`` (plain Python ints). The cases: every pair of
int8 codes, zero points at the type's extremes, the multipliers and shifts TFLite's Prepare produces over
scale ratios from 1 to 2^-20, every right shift 0..31 with edge multipliers, a left shift that wraps int32,
fused clamps, uint8 and int16 (the 16x8 general path, ``left_shift = 15``).

TFLite's MUL of 8-bit codes (``mul``, its front in ``mul_lanes``) against ``dspsim.oracle.mul_oracle``: every pair of
int8 codes at tie-making multipliers, every shift from -31 to 30 with edge multipliers (left shifts that wrap int32),
uint8, random lengths and clamps.

XNNPACK's ADD (``xnnpack_add``, its front in ``xnnpack_add_lanes``) against its previous formula (numpy int64,
wrapped to int32) and ``dspsim.oracle.xnnpack_add``: every pair of int8 codes with zero points at the rails and
the delegation range's extreme ratios, scales and clamps at random (ADD and SUB's negative multiplier, int8
and uint8, lengths on both sides of the 32- and 8-output blocks), and multipliers past XNNPACK's 21 bits whose
sums wrap int32.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle as R
from dspsim.simd import add_lanes as _add_simd
from dspsim.simd.cpu import HAVE_AVX2
from dspsim.kernels.arithmetic.binary import xnnpack_sub_params
from dspsim.kernels.arithmetic.elementwise import (
    AddParams, XnnpackAddParams, add, mul, tflite_add_params, xnnpack_add, xnnpack_add_params,
)

INT32_MAX = (1 << 31) - 1
RANGE = {np.int8: (-128, 127), np.uint8: (0, 255), np.int16: (-32768, 32767)}


def _compare(x1, x2, p, z1, z2, zo, lo=None, hi=None):
    kw = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo, act_max=hi)
    got = add(x1, x2, p, **kw)
    want = R.add_oracle(x1, x2, p, **kw)
    assert got.dtype == want.dtype
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert bad.size == 0, f"{bad.size} of {got.size} differ; first at {bad[0]}: {got.reshape(-1)[bad[0]]} " \
                          f"!= {want.reshape(-1)[bad[0]]}"
    return got.size


def test_lanes_run_on_avx2_hosts_only():
    import numba

    assert _add_simd.USE_LANES == (HAVE_AVX2 and not numba.config.DISABLE_JIT)


@pytest.mark.parametrize("scales", [(0.0213, 0.0471, 0.0625), (0.0625, 0.125, 0.25), (0.5, 0.5, 0.75)])
def test_every_pair_of_int8_codes_equals_the_oracle(scales):
    """Power-of-two scales put many sums on exact ties of the output rounding: the float32 lanes of 8-bit codes
    must flag every one of them."""
    z1, z2, zo = -128, 127, -128  # zero points at the extremes: |x - zp| up to 255 (other ones: below)
    codes = np.arange(-128, 128, dtype=np.int8)
    x1, x2 = np.repeat(codes, 256), np.tile(codes, 256)  # 65536 pairs, a multiple of 32: append a tail
    x1, x2 = np.concatenate([x1, codes[:13]]), np.concatenate([x2, codes[-13:]])
    p = tflite_add_params(*scales)
    assert _compare(x1, x2, p, z1, z2, zo) == 65536 + 13


@settings(max_examples=150, deadline=None)
@given(ratio1=st.floats(2.0**-20, 1.0), ratio2=st.floats(2.0**-20, 1.0), out=st.floats(2.0**-12, 64.0),
       dtype=st.sampled_from([np.int8, np.uint8]), n=st.integers(1, 83), data=st.data())
def test_tflite_parameters_equal_the_oracle(ratio1, ratio2, out, dtype, n, data):
    """Scales as models have them: each input scale a ratio of the larger one, any output scale Prepare takes."""
    s1, s2 = np.float32(0.01 * ratio1), np.float32(0.01 * ratio2)
    so = np.float32(0.01 * out / 2**8)
    try:
        p = tflite_add_params(s1, s2, so)
    except ValueError:  # an output multiplier >= 1: TFLite's Prepare aborts
        return
    lo_t, hi_t = RANGE[dtype]
    z1, z2, zo = (data.draw(st.sampled_from([lo_t, hi_t, 0, data.draw(st.integers(lo_t, hi_t))])) for _ in range(3))
    lo = data.draw(st.integers(lo_t, hi_t))
    hi = data.draw(st.integers(lo, hi_t))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x1, x2 = (rng.integers(lo_t, hi_t + 1, n).astype(dtype) for _ in range(2))
    _compare(x1, x2, p, z1, z2, zo, lo, hi)


@pytest.mark.parametrize("dtype,left_shift", [(np.int8, 20), (np.int16, 15), (np.int16, 22)])
def test_every_right_shift_and_edge_multiplier_equals_the_oracle(dtype, left_shift):
    """Each input and output shift 0..31 with multipliers 0, 1, 2^30, 2^31 - 1 and random ones; int16 with
    ``left_shift`` 22 wraps ``(x - zp) << 22`` in int32, as TFLite's int32 arithmetic (and the oracle) does."""
    rng = np.random.default_rng(left_shift)
    lo_t, hi_t = RANGE[dtype]
    edges = np.array([lo_t, lo_t + 1, -1, 0, 1, hi_t - 1, hi_t], dtype)
    total = 0
    for shift in range(32):
        mults = [0, 1, 1 << 30, INT32_MAX, int(rng.integers(1 << 30, 1 << 31))]
        m1, m2, mo = (mults[(shift + k) % 5] for k in range(3))
        p = AddParams(left_shift, m1, -shift, m2, -((shift * 7) % 32), mo, -((shift * 13) % 32))
        x1 = np.concatenate([np.repeat(edges, 7), rng.integers(lo_t, hi_t + 1, 42)]).astype(dtype)
        x2 = np.concatenate([np.tile(edges, 7), rng.integers(lo_t, hi_t + 1, 42)]).astype(dtype)
        z1, z2, zo = int(rng.integers(lo_t, hi_t + 1)), int(edges[shift % 7]), int(edges[-1 - shift % 7])
        total += _compare(x1, x2, p, z1, z2, zo)
    assert total == 32 * 91


@settings(max_examples=60, deadline=None)
@given(s1=st.floats(1e-5, 1e-2), s2=st.floats(1e-5, 1e-2), so=st.floats(1e-5, 1e-1), n=st.integers(1, 70),
       seed=st.integers(0, 2**32 - 1))
def test_int16_general_add_equals_the_oracle(s1, s2, so, n, seed):
    """The 16x8 ADD of LiteRT's general path and TFLM (``left_shift = 15``), zero points 0, fused clamps."""
    try:
        p = tflite_add_params(s1, s2, so, left_shift=15)
    except ValueError:
        return
    rng = np.random.default_rng(seed)
    x1, x2 = (rng.integers(-32768, 32768, n).astype(np.int16) for _ in range(2))
    lo = int(rng.integers(-32768, 0))
    _compare(x1, x2, p, 0, 0, 0, lo, int(rng.integers(lo, 32768)))


def test_broadcast_operands_go_through_the_lanes_as_flat_copies():
    """(5, 1, 19) + (1, 7, 19): both operands broadcast to 665 flat values, then the same kernel."""
    rng = np.random.default_rng(3)
    x1, x2 = rng.integers(-128, 128, (5, 1, 19)).astype(np.int8), rng.integers(-128, 128, (1, 7, 19)).astype(np.int8)
    assert _compare(x1, x2, tflite_add_params(0.05, 0.02, 0.04), 7, -128, 3, -100, 90) == 665


def _compare_mul(x1, x2, m, s, z1, z2, zo, lo=None, hi=None):
    kw = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, multiplier=m, shift=s, act_min=lo,
              act_max=hi)
    got, want = mul(x1, x2, **kw), R.mul_oracle(x1, x2, **kw)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} of {got.size} differ; first at {bad[0]}: {got[bad[0]]} != {want[bad[0]]}"


@pytest.mark.parametrize("real", [0.5, 2.0**-7, 2.0**-12, 0.0213, 1.0, 3.0])
def test_mul_every_pair_of_int8_codes_equals_the_oracle(real):
    """Power-of-two multipliers put products on exact ties (SRDHM toward +inf, the shift away from zero); 1 and 3
    saturate most codes."""
    codes = np.arange(-128, 128, dtype=np.int8)
    x1, x2 = np.concatenate([np.repeat(codes, 256), codes[:13]]), np.concatenate([np.tile(codes, 256), codes[-13:]])
    m, s = R.quantize_multiplier(real)
    _compare_mul(x1, x2, m, s, -128, 127, 3)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_mul_every_shift_and_edge_multiplier_equals_the_oracle(dtype):
    """Shifts -31..30 with multipliers 0, 1, 2^30, 2^31 - 1 and random ones: a left shift of the product past 2^31
    wraps in int32, in the lanes as in the scalar loop."""
    rng = np.random.default_rng(7)
    lo_t, hi_t = RANGE[dtype]
    edges = np.array([lo_t, lo_t + 1, (lo_t + hi_t) // 2, hi_t - 1, hi_t], dtype)
    for shift in range(-31, 31):
        m = [0, 1, 1 << 30, INT32_MAX, int(rng.integers(1 << 30, 1 << 31))][shift % 5]
        x1 = np.concatenate([np.repeat(edges, 5), rng.integers(lo_t, hi_t + 1, 46)]).astype(dtype)
        x2 = np.concatenate([np.tile(edges, 5), rng.integers(lo_t, hi_t + 1, 46)]).astype(dtype)
        _compare_mul(x1, x2, m, shift, int(rng.integers(lo_t, hi_t + 1)), int(edges[shift % 5]),
                     int(edges[-1 - shift % 5]))


@settings(max_examples=100, deadline=None)
@given(real=st.floats(2.0**-16, 4.0), dtype=st.sampled_from([np.int8, np.uint8]), n=st.integers(1, 100),
       data=st.data())
def test_mul_random_equals_the_oracle(real, dtype, n, data):
    lo_t, hi_t = RANGE[dtype]
    z1, z2, zo = (data.draw(st.sampled_from([lo_t, hi_t, data.draw(st.integers(lo_t, hi_t))])) for _ in range(3))
    lo = data.draw(st.integers(lo_t, hi_t))
    hi = data.draw(st.integers(lo, hi_t))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x1, x2 = (rng.integers(lo_t, hi_t + 1, n).astype(dtype) for _ in range(2))
    m, s = R.quantize_multiplier(real)
    _compare_mul(x1, x2, m, s, z1, z2, zo, lo, hi)


def _previous_xnnpack_add(x1, x2, p, z1, z2, zo, lo, hi):
    """``xnnpack_add``'s formula before its vector lanes, in numpy int64 (the int32 wrap explicit)."""
    acc = ((1 << (p.shift - 1)) - p.a_multiplier * z1 - p.b_multiplier * z2 + x1.astype(np.int64) * p.a_multiplier
           + x2.astype(np.int64) * p.b_multiplier)
    acc = (acc + (1 << 31)) % (1 << 32) - (1 << 31)
    return np.clip((acc >> p.shift) + zo, lo, hi).astype(x1.dtype)


def _compare_xnnpack(x1, x2, p, z1, z2, zo, lo=None, hi=None):
    got = xnnpack_add(x1, x2, p, input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo,
                      act_max=hi)
    t_lo, t_hi = RANGE[x1.dtype.type]
    lo, hi = t_lo if lo is None else lo, t_hi if hi is None else hi
    want = _previous_xnnpack_add(x1, x2, p, z1, z2, zo, lo, hi)
    assert got.dtype == want.dtype
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} of {got.size} differ; first at {bad[0]}: {got[bad[0]]} != {want[bad[0]]}"
    rp = (p.a_multiplier, p.b_multiplier, p.shift)
    assert got[:67].tolist() == [R.xnnpack_add(int(a), int(b), z1, z2, zo, rp, lo, hi) for a, b in zip(x1[:67], x2[:67])]
    return got.size


@pytest.mark.parametrize("ratios", [(2.0**-10, 2.0**-10), (2.0**8 * 0.999, 2.0**-10), (0.37, 1.91), (1.0, 1.0)])
@pytest.mark.parametrize("zps", [(-128, 127, -128), (127, -128, 127), (0, 0, 0)])
def test_xnnpack_every_pair_of_int8_codes_equals_the_previous_formula(ratios, zps):
    """The delegation range's extreme ratios (shift 30 and 12), zero points at the rails."""
    codes = np.arange(-128, 128, dtype=np.int8)
    x1, x2 = np.concatenate([np.repeat(codes, 256), codes[:13]]), np.concatenate([np.tile(codes, 256), codes[-13:]])
    p = xnnpack_add_params(ratios[0], ratios[1], 1.0)
    assert _compare_xnnpack(x1, x2, p, *zps) == 65536 + 13


@settings(max_examples=200, deadline=None)
@given(r1=st.floats(2.0**-10, 255.0), r2=st.floats(2.0**-10, 255.0), sub=st.booleans(),
       dtype=st.sampled_from([np.int8, np.uint8]), n=st.integers(1, 300), data=st.data())
def test_xnnpack_add_and_sub_equal_the_previous_formula(r1, r2, sub, dtype, n, data):
    so = np.float32(0.01)
    try:
        p = (xnnpack_sub_params if sub else xnnpack_add_params)(r1 * so, r2 * so, so)
    except ValueError:  # a float32 ratio rounded out of [2^-10, 2^8)
        return
    lo_t, hi_t = RANGE[dtype]
    z1, z2, zo = (data.draw(st.sampled_from([lo_t, hi_t, data.draw(st.integers(lo_t, hi_t))])) for _ in range(3))
    lo = data.draw(st.integers(lo_t, hi_t))
    hi = data.draw(st.integers(lo, hi_t))
    fill = data.draw(st.sampled_from(["random", "rails", "equal"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    if fill == "random":
        x1, x2 = (rng.integers(lo_t, hi_t + 1, n) for _ in range(2))
    elif fill == "rails":
        x1, x2 = (rng.choice([lo_t, hi_t], n) for _ in range(2))
    else:
        x1 = x2 = np.full(n, int(rng.integers(lo_t, hi_t + 1)))
    _compare_xnnpack(x1.astype(dtype), x2.astype(dtype), p, z1, z2, zo, lo, hi)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_xnnpack_sums_that_wrap_int32_equal_the_previous_formula(dtype):
    """Multipliers of 2^23 (XNNPACK's stay below 2^21, where nothing wraps): ``x * M`` and the sum wrap in the
    lanes' int32 as in the scalar loop."""
    rng = np.random.default_rng(11)
    lo_t, hi_t = RANGE[dtype]
    x1, x2 = (np.concatenate([np.full(40, lo_t), np.full(40, hi_t), rng.integers(lo_t, hi_t + 1, 203)]).astype(dtype)
              for _ in range(2))
    for p in (XnnpackAddParams((1 << 23) - 1, (1 << 23) + 5, 12), XnnpackAddParams(-(1 << 23), (1 << 22) + 1, 20)):
        _compare_xnnpack(x1, x2, p, lo_t, hi_t, 0 if lo_t < 0 else 128)
