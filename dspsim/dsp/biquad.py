"""CMSIS-DSP's direct-form-I biquad cascades on q15 / q31 blocks
(Source/FilteringFunctions/arm_biquad_cascade_df1_*.c), bit for bit with the library's generic C code
(docs/dsp.md §Biquad cascades). CMSIS-DSP has no fixed-point DF2T (only f32 / f64).

Coefficients per stage: q31 ``b0 b1 b2 a1 a2``; q15 ``b0 0 b1 b2 a1 a2`` (the zero pads b0 to a pair for the SIMD
path). The a's have CMSIS's sign: ``y = b0 x + b1 x1 + b2 x2 + a1 y1 + a2 y2``, then scaled up by ``postShift``.
State per stage ``[x1, x2, y1, y2]``; each stage's output feeds the next::

    S = arm_biquad_cascade_df1_init_q31(num_stages, coeffs, post_shift)
    y0 = arm_biquad_cascade_df1_q31(S, x0); y1 = arm_biquad_cascade_df1_q31(S, x1)

The accumulation and the output:

* q15: the five products summed in an int64, ``>> (15 - postShift)`` (floor), cast to int32, saturated to int16.
* q15 fast: summed in an int32 (wrapping), ``>> (15 - postShift)``, saturated. The pad coefficient must be 0 (the
  SIMD products multiply it with the next sample or the sign word).
* q31: summed in an int64 (wrapping), ``>> (31 - postShift)`` (floor), cast to int32 (wrapping, no saturation).
* q31 fast: each product rounded to its high word, ``(p + 2^31) >> 32``, summed in an int32 (wrapping), then
  ``<< (postShift + 1)`` (wrapping).

postShift: q15 in [0, 15], q31 in [0, 30] (the C shifts stay defined).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._checks import QTYPES, check_int, check_q

_Q15, _Q15_FAST, _Q31, _Q31_FAST = 0, 1, 2, 3
POST_SHIFTS = {"q15": (0, 15), "q31": (0, 30)}
_PER_STAGE = {"q15": 6, "q31": 5}


@dataclass
class BiquadDf1Instance:
    """``arm_biquad_casd_df1_inst_q15`` / ``_q31``: the format, stages, coefficients, postShift and the state
    (4 values per stage: x1 x2 y1 y2; zeros after init). Filtering updates ``state`` in place."""

    q: str
    num_stages: int
    coeffs: np.ndarray
    post_shift: int
    state: np.ndarray


@njit(cache=True, nogil=True, inline="always")
def _wrap32(v):
    v = v & 0xFFFFFFFF
    return v - 0x100000000 if v >= 0x80000000 else v


@njit(cache=True, nogil=True, inline="always")
def _high_r(p):
    """A product's rounded high word, ``(p + 2^31) >> 32`` (SMMULR)."""
    return (p + 0x80000000) >> 32


@njit(cache=True, nogil=True)
def _df1(coeffs, num_stages, post_shift, state, x, y, mode):
    per = 6 if mode <= _Q15_FAST else 5
    cur = np.empty(x.shape[0], np.int64)
    for i in range(x.shape[0]):
        cur[i] = x[i]
    for s in range(num_stages):
        o = s * per
        b0 = np.int64(coeffs[o])
        if per == 6:
            b1, b2, a1, a2 = np.int64(coeffs[o + 2]), np.int64(coeffs[o + 3]), np.int64(coeffs[o + 4]), \
                np.int64(coeffs[o + 5])
        else:
            b1, b2, a1, a2 = np.int64(coeffs[o + 1]), np.int64(coeffs[o + 2]), np.int64(coeffs[o + 3]), \
                np.int64(coeffs[o + 4])
        x1, x2, y1, y2 = np.int64(state[4 * s]), np.int64(state[4 * s + 1]), np.int64(state[4 * s + 2]), \
            np.int64(state[4 * s + 3])
        for n in range(cur.shape[0]):
            v = cur[n]
            if mode == _Q31_FAST:
                acc = _wrap32(_high_r(b0 * v) + _high_r(b1 * x1) + _high_r(b2 * x2) + _high_r(a1 * y1)
                              + _high_r(a2 * y2))
                r = _wrap32(acc << (post_shift + 1))
            else:
                acc = b0 * v + b1 * x1 + b2 * x2 + a1 * y1 + a2 * y2  # int64, wrapping as the C q63_t
                if mode == _Q31:
                    r = _wrap32(acc >> (31 - post_shift))
                else:
                    if mode == _Q15_FAST:
                        r = _wrap32(acc) >> (15 - post_shift)
                    else:
                        r = _wrap32(acc >> (15 - post_shift))
                    r = 32767 if r > 32767 else -32768 if r < -32768 else r
            x2 = x1
            x1 = v
            y2 = y1
            y1 = r
            cur[n] = r
        state[4 * s], state[4 * s + 1], state[4 * s + 2], state[4 * s + 3] = x1, x2, y1, y2
    for i in range(x.shape[0]):
        y[i] = cur[i]


def _init(func, num_stages, coeffs, post_shift, q):
    num_stages = check_int(num_stages, func, "num_stages", 1, 255)
    coeffs = check_q(coeffs, func, "coeffs", q).copy()
    per = _PER_STAGE[q]
    if coeffs.shape[0] != per * num_stages:
        raise ValueError(f"{func}: coeffs must hold {per} values per stage ({per * num_stages} for {num_stages} "
                         f"stages), got {coeffs.shape[0]}")
    post_shift = check_int(post_shift, func, "post_shift", *POST_SHIFTS[q])
    return BiquadDf1Instance(q, num_stages, coeffs, post_shift, np.zeros(4 * num_stages, QTYPES[q]))


def _run(func, S, x, q, mode):
    if not isinstance(S, BiquadDf1Instance) or S.q != q:
        raise TypeError(f"{func}: S must be a BiquadDf1Instance of {q} (from arm_biquad_cascade_df1_init_{q}), "
                        f"got {S!r}"[:200])
    x = check_q(x, func, "x", q)
    if mode == _Q15_FAST and np.any(S.coeffs[1::6] != 0):
        raise ValueError(f"{func}: the second coefficient of each stage (the pad after b0) must be 0")
    y = np.empty_like(x)
    _df1(S.coeffs, S.num_stages, S.post_shift, S.state, x, y, mode)
    return y


@names_its_errors
def arm_biquad_cascade_df1_init_q15(num_stages, coeffs, post_shift) -> BiquadDf1Instance:
    """A q15 DF1 cascade: ``coeffs`` int16, ``b0 0 b1 b2 a1 a2`` per stage; post_shift in [0, 15]."""
    return _init("arm_biquad_cascade_df1_init_q15", num_stages, coeffs, post_shift, "q15")


@names_its_errors
def arm_biquad_cascade_df1_init_q31(num_stages, coeffs, post_shift) -> BiquadDf1Instance:
    """A q31 DF1 cascade: ``coeffs`` int32, ``b0 b1 b2 a1 a2`` per stage; post_shift in [0, 30]."""
    return _init("arm_biquad_cascade_df1_init_q31", num_stages, coeffs, post_shift, "q31")


@names_its_errors
def arm_biquad_cascade_df1_q15(S, x):
    """One block through the q15 cascade (int64 sums). Updates ``S.state``."""
    return _run("arm_biquad_cascade_df1_q15", S, x, "q15", _Q15)


@names_its_errors
def arm_biquad_cascade_df1_fast_q15(S, x):
    """One block through the q15 cascade, fast (int32 sums, wrapping). Updates ``S.state``."""
    return _run("arm_biquad_cascade_df1_fast_q15", S, x, "q15", _Q15_FAST)


@names_its_errors
def arm_biquad_cascade_df1_q31(S, x):
    """One block through the q31 cascade (int64 sums, no saturation). Updates ``S.state``."""
    return _run("arm_biquad_cascade_df1_q31", S, x, "q31", _Q31)


@names_its_errors
def arm_biquad_cascade_df1_fast_q31(S, x):
    """One block through the q31 cascade, fast (rounded high words in an int32). Updates ``S.state``."""
    return _run("arm_biquad_cascade_df1_fast_q31", S, x, "q31", _Q31_FAST)


# ---- arm_biquad_cas_df1_32x64_q31: q31 data, 64-bit state (arm_biquad_cascade_df1_32x64_q31.c) -------------------

@dataclass
class BiquadDf1x64Instance:
    """``arm_biquad_cas_df1_32x64_ins_q31``: stages, coefficients (b0 b1 b2 a1 a2 per stage), postShift and the
    state, 4 int64 per stage: x1, x2 (q31 values) and y1, y2 (the 64-bit accumulators, shifted)."""

    num_stages: int
    coeffs: np.ndarray
    post_shift: int
    state: np.ndarray


@njit(cache=True, nogil=True, inline="always")
def _mult32x64(x, y):
    """CMSIS-DSP's mult32x64: the 64-bit x times the 32-bit y, the low word's product >> 32 (floor)."""
    return (((x & 0xFFFFFFFF) * y) >> 32) + ((x >> 32) * y)


@njit(cache=True, nogil=True)
def _df1_32x64(coeffs, num_stages, post_shift, state, x, y):
    cur = np.empty(x.shape[0], np.int64)
    for i in range(x.shape[0]):
        cur[i] = x[i]
    for s in range(num_stages):
        b0, b1, b2 = np.int64(coeffs[5 * s]), np.int64(coeffs[5 * s + 1]), np.int64(coeffs[5 * s + 2])
        a1, a2 = np.int64(coeffs[5 * s + 3]), np.int64(coeffs[5 * s + 4])
        x1, x2, y1, y2 = state[4 * s], state[4 * s + 1], state[4 * s + 2], state[4 * s + 3]
        for n in range(cur.shape[0]):
            v = cur[n]
            acc = v * b0 + x1 * b1 + x2 * b2 + _mult32x64(y1, a1) + _mult32x64(y2, a2)  # int64, wrapping
            x2 = x1
            x1 = v
            y2 = y1
            y1 = acc << (post_shift + 1)
            cur[n] = _wrap32(acc >> (31 - post_shift))
        state[4 * s], state[4 * s + 1], state[4 * s + 2], state[4 * s + 3] = x1, x2, y1, y2
    for i in range(x.shape[0]):
        y[i] = cur[i]


@names_its_errors
def arm_biquad_cas_df1_32x64_init_q31(num_stages, coeffs, post_shift) -> BiquadDf1x64Instance:
    """A q31 DF1 cascade with 64-bit state: ``coeffs`` int32, b0 b1 b2 a1 a2 per stage; post_shift in [0, 30]."""
    func = "arm_biquad_cas_df1_32x64_init_q31"
    num_stages = check_int(num_stages, func, "num_stages", 1, 255)
    coeffs = check_q(coeffs, func, "coeffs", "q31").copy()
    if coeffs.shape[0] != 5 * num_stages:
        raise ValueError(f"{func}: coeffs must hold 5 values per stage ({5 * num_stages} for {num_stages} stages), "
                         f"got {coeffs.shape[0]}")
    post_shift = check_int(post_shift, func, "post_shift", 0, 30)
    return BiquadDf1x64Instance(num_stages, coeffs, post_shift, np.zeros(4 * num_stages, np.int64))


@names_its_errors
def arm_biquad_cas_df1_32x64_q31(S, x):
    """One block through the 32x64 cascade: ``acc = b0 x + b1 x1 + b2 x2`` (int64) ``+ mult32x64(y1, a1) +
    mult32x64(y2, a2)``, wrapping at 64 bits; the state keeps ``acc << (postShift + 1)``, the output is
    ``acc >> (31 - postShift)`` cast to int32. Updates ``S.state``."""
    func = "arm_biquad_cas_df1_32x64_q31"
    if not isinstance(S, BiquadDf1x64Instance):
        raise TypeError(f"{func}: S must be a BiquadDf1x64Instance (from arm_biquad_cas_df1_32x64_init_q31), "
                        f"got {S!r}"[:200])
    x = check_q(x, func, "x", "q31")
    y = np.empty_like(x)
    _df1_32x64(S.coeffs, S.num_stages, S.post_shift, S.state, x, y)
    return y
