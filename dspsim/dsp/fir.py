"""CMSIS-DSP's FIR filters on q15 / q31 blocks (Source/FilteringFunctions/arm_fir_*.c), bit for bit with the
library's generic C code (docs/dsp.md §FIR).

As in C, an instance holds the coefficients and the state (the last numTaps - 1 inputs), and each call filters one
block and carries the state to the next::

    S = arm_fir_init_q15(coeffs)          # coeffs time-reversed, as CMSIS stores them: b[numTaps-1] ... b[0]
    y0 = arm_fir_q15(S, x0); y1 = arm_fir_q15(S, x1)   # == filtering concat(x0, x1) at once

Output n is ``sum_i coeffs[i] * w[n + i]`` over the window ``w = state + block``, then:

* arm_fir_q15: the sum in an int64, ``>> 15`` (floor), saturated to int16. The first 4 * (len(block) // 4)
  outputs of a block (the C's unrolled loop) add the products of taps 2k and 2k + 1 in a C int first
  (``__SMLALD`` of the host build: wrapping at 32 bits, which only -32768 * -32768 twice reaches); the last
  len(block) % 4 outputs add every product straight into the int64.
* arm_fir_fast_q15: the sum in an int32 (wrapping), ``>> 15``, saturated.
* arm_fir_q31: the sum in an int64 (wrapping), ``>> 31`` (floor), cast to int32 (wrapping: no saturation).
* arm_fir_q7: the sum in an int32 (wrapping), ``>> 7``, saturated to int8.
* arm_fir_fast_q31: each product rounded to its high word, ``(p + 2^31) >> 32``, summed in an int32 (wrapping),
  then ``<< 1`` (wrapping).

q15 filters need an even number of taps (arm_fir_init_q15 returns ARM_MATH_ARGUMENT_ERROR for an odd one, and the
plain loop would drop the last tap).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._checks import QTYPES, check_q

_Q15, _Q15_FAST, _Q31, _Q31_FAST, _Q7 = 0, 1, 2, 3, 4


@dataclass
class FirInstance:
    """``arm_fir_instance_q15`` / ``_q31``: the format, the coefficients (time-reversed) and the state (the last
    ``num_taps - 1`` inputs, oldest first; zeros after init). Filtering updates ``state`` in place."""

    q: str
    coeffs: np.ndarray
    state: np.ndarray

    @property
    def num_taps(self) -> int:
        return int(self.coeffs.shape[0])


@njit(cache=True, nogil=True, inline="always")
def _wrap32(v):
    v = v & 0xFFFFFFFF
    return v - 0x100000000 if v >= 0x80000000 else v


@njit(cache=True, nogil=True)
def _fir(coeffs, state, x, y, mode):
    taps = coeffs.shape[0]
    n_state = state.shape[0]
    w = np.empty(n_state + x.shape[0], np.int64)
    for i in range(n_state):
        w[i] = state[i]
    for i in range(x.shape[0]):
        w[n_state + i] = x[i]
    c = np.empty(taps, np.int64)
    for i in range(taps):
        c[i] = coeffs[i]
    paired = 4 * (x.shape[0] // 4) if mode == _Q15 else 0
    for n in range(x.shape[0]):
        acc = np.int64(0)
        if n < paired:  # the unrolled loop: __SMLALD adds each pair of products in a C int first (wrapping)
            for i in range(0, taps, 2):
                acc += _wrap32(c[i] * w[n + i] + c[i + 1] * w[n + i + 1])
            v = acc >> 15
            y[n] = 32767 if v > 32767 else -32768 if v < -32768 else v
            continue
        if mode == _Q31_FAST:
            for i in range(taps):
                acc += (c[i] * w[n + i] + 0x80000000) >> 32
            y[n] = _wrap32(acc << 1)
            continue
        for i in range(taps):
            acc += c[i] * w[n + i]
        if mode == _Q31:
            y[n] = _wrap32(acc >> 31)
        elif mode == _Q7:
            v = _wrap32(acc) >> 7
            y[n] = 127 if v > 127 else -128 if v < -128 else v
        else:
            if mode == _Q15_FAST:
                acc = _wrap32(acc)
            v = acc >> 15
            y[n] = 32767 if v > 32767 else -32768 if v < -32768 else v
    total = w.shape[0]
    for i in range(n_state):
        state[i] = w[total - n_state + i]


def _init(func, coeffs, q):
    coeffs = check_q(coeffs, func, "coeffs", q).copy()
    taps = coeffs.shape[0]
    if not 1 <= taps <= 65535:
        raise ValueError(f"{func}: the number of taps must be in [1, 65535] (a uint16_t), got {taps}")
    if q == "q15" and taps % 2:
        raise ValueError(f"{func}: the number of taps must be even (ARM_MATH_ARGUMENT_ERROR), got {taps}")
    return FirInstance(q, coeffs, np.zeros(taps - 1, QTYPES[q]))


def _run(func, S, x, q, mode):
    if not isinstance(S, FirInstance) or S.q != q:
        raise TypeError(f"{func}: S must be a FirInstance of {q} (from arm_fir_init_{q}), got {S!r}"[:200])
    x = check_q(x, func, "x", q)
    y = np.empty_like(x)
    _fir(S.coeffs, S.state, x, y, mode)
    return y


@names_its_errors
def arm_fir_init_q7(coeffs) -> FirInstance:
    """A q7 FIR instance: ``coeffs`` int8, time-reversed; the state zeroed."""
    return _init("arm_fir_init_q7", coeffs, "q7")


@names_its_errors
def arm_fir_q7(S, x):
    """One block through the q7 FIR: the products summed in an int32 (wrapping), ``>> 7``, saturated to int8.
    Updates ``S.state``."""
    return _run("arm_fir_q7", S, x, "q7", _Q7)


@names_its_errors
def arm_fir_init_q15(coeffs) -> FirInstance:
    """A q15 FIR instance: ``coeffs`` int16, time-reversed, an even count; the state zeroed."""
    return _init("arm_fir_init_q15", coeffs, "q15")


@names_its_errors
def arm_fir_init_q31(coeffs) -> FirInstance:
    """A q31 FIR instance: ``coeffs`` int32, time-reversed; the state zeroed."""
    return _init("arm_fir_init_q31", coeffs, "q31")


@names_its_errors
def arm_fir_q15(S, x):
    """One block through the q15 FIR: int64 sum, ``>> 15``, saturated. Updates ``S.state``."""
    return _run("arm_fir_q15", S, x, "q15", _Q15)


@names_its_errors
def arm_fir_fast_q15(S, x):
    """One block through the q15 FIR, fast: int32 sum (wrapping), ``>> 15``, saturated. Updates ``S.state``."""
    return _run("arm_fir_fast_q15", S, x, "q15", _Q15_FAST)


@names_its_errors
def arm_fir_q31(S, x):
    """One block through the q31 FIR: int64 sum, ``>> 31``, wrapped to int32. Updates ``S.state``."""
    return _run("arm_fir_q31", S, x, "q31", _Q31)


@names_its_errors
def arm_fir_fast_q31(S, x):
    """One block through the q31 FIR, fast: each product's rounded high word, summed in an int32, ``<< 1``.
    Updates ``S.state``."""
    return _run("arm_fir_fast_q31", S, x, "q31", _Q31_FAST)


# ---- decimators and interpolators (arm_fir_decimate_*.c, arm_fir_interpolate_*.c) ---------------------------------

@dataclass
class FirDecimateInstance:
    """``arm_fir_decimate_instance_q15`` / ``_q31``: the coefficients, the factor M and the state (the last
    ``num_taps - 1`` inputs)."""

    q: str
    coeffs: np.ndarray
    m: int
    state: np.ndarray


@dataclass
class FirInterpolateInstance:
    """``arm_fir_interpolate_instance_q15`` / ``_q31``: the coefficients (num_taps = L * phase_length), the factor
    L and the state (the last ``phase_length - 1`` inputs)."""

    q: str
    coeffs: np.ndarray
    l: int
    state: np.ndarray

    @property
    def phase_length(self) -> int:
        return int(self.coeffs.shape[0]) // self.l


@njit(cache=True, nogil=True, inline="always")
def _fir_out(acc, mode):
    if mode == _Q31_FAST:
        return _wrap32(_wrap32(acc) << 1)
    if mode == _Q31:
        return _wrap32(acc >> 31)
    v = _wrap32(acc) >> 15 if mode == _Q15_FAST else _wrap32(acc >> 15)
    return 32767 if v > 32767 else -32768 if v < -32768 else v


@njit(cache=True, nogil=True)
def _window(state, x):
    w = np.empty(state.shape[0] + x.shape[0], np.int64)
    for i in range(state.shape[0]):
        w[i] = state[i]
    for i in range(x.shape[0]):
        w[state.shape[0] + i] = x[i]
    return w


@njit(cache=True, nogil=True)
def _fir_decimate(coeffs, state, x, y, m, mode):
    taps = coeffs.shape[0]
    w = _window(state, x)
    for k in range(y.shape[0]):
        acc = np.int64(0)
        for i in range(taps):
            p = np.int64(coeffs[i]) * w[k * m + i]
            acc += (p >> 32) if mode == _Q31_FAST else p  # fast q31: the high word, truncated
        y[k] = _fir_out(acc, mode)
    n_state = state.shape[0]
    for i in range(n_state):
        state[i] = w[w.shape[0] - n_state + i]


@njit(cache=True, nogil=True)
def _fir_interpolate(coeffs, state, x, y, l_factor, mode):
    phase = coeffs.shape[0] // l_factor
    w = _window(state, x)
    for n in range(x.shape[0]):
        for j in range(l_factor):
            off = l_factor - 1 - j
            acc = np.int64(0)
            for k in range(phase):
                acc += np.int64(coeffs[off + k * l_factor]) * w[n + k]
            y[n * l_factor + j] = _fir_out(acc, mode)
    n_state = state.shape[0]
    for i in range(n_state):
        state[i] = w[w.shape[0] - n_state + i]


def _decimate_init(func, coeffs, m, q):
    coeffs = check_q(coeffs, func, "coeffs", q).copy()
    taps = coeffs.shape[0]
    if not 1 <= taps <= 65535:
        raise ValueError(f"{func}: the number of taps must be in [1, 65535] (a uint16_t), got {taps}")
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"{func}: M must be an int, got {type(m).__name__}")
    if not 1 <= int(m) <= 255:
        raise ValueError(f"{func}: M must be in [1, 255] (a uint8_t), got {int(m)}")
    return FirDecimateInstance(q, coeffs, int(m), np.zeros(taps - 1, QTYPES[q]))


def _decimate_run(func, S, x, q, mode):
    if not isinstance(S, FirDecimateInstance) or S.q != q:
        raise TypeError(f"{func}: S must be a FirDecimateInstance of {q} (from arm_fir_decimate_init_{q}), "
                        f"got {S!r}"[:200])
    x = check_q(x, func, "x", q)
    if x.shape[0] % S.m:
        raise ValueError(f"{func}: the block length must be a multiple of M = {S.m} (ARM_MATH_LENGTH_ERROR), "
                         f"got {x.shape[0]}")
    y = np.empty(x.shape[0] // S.m, x.dtype)
    _fir_decimate(S.coeffs, S.state, x, y, S.m, mode)
    return y


def _interpolate_init(func, coeffs, l_factor, q):
    coeffs = check_q(coeffs, func, "coeffs", q).copy()
    if isinstance(l_factor, (bool, np.bool_)) or not isinstance(l_factor, (int, np.integer)):
        raise TypeError(f"{func}: L must be an int, got {type(l_factor).__name__}")
    if not 1 <= int(l_factor) <= 255:
        raise ValueError(f"{func}: L must be in [1, 255] (a uint8_t), got {int(l_factor)}")
    taps = coeffs.shape[0]
    if not 1 <= taps <= 65535 or taps % int(l_factor):
        raise ValueError(f"{func}: the number of taps must be a multiple of L = {int(l_factor)} in [1, 65535] "
                         f"(ARM_MATH_LENGTH_ERROR), got {taps}")
    return FirInterpolateInstance(q, coeffs, int(l_factor), np.zeros(taps // int(l_factor) - 1, QTYPES[q]))


def _interpolate_run(func, S, x, q, mode):
    if not isinstance(S, FirInterpolateInstance) or S.q != q:
        raise TypeError(f"{func}: S must be a FirInterpolateInstance of {q} (from arm_fir_interpolate_init_{q}), "
                        f"got {S!r}"[:200])
    x = check_q(x, func, "x", q)
    y = np.empty(x.shape[0] * S.l, x.dtype)
    _fir_interpolate(S.coeffs, S.state, x, y, S.l, mode)
    return y


@names_its_errors
def arm_fir_decimate_init_q15(coeffs, m) -> FirDecimateInstance:
    """A q15 decimator by ``m``: FIR ``coeffs`` (time-reversed), every m-th output kept."""
    return _decimate_init("arm_fir_decimate_init_q15", coeffs, m, "q15")


@names_its_errors
def arm_fir_decimate_init_q31(coeffs, m) -> FirDecimateInstance:
    """A q31 decimator by ``m``."""
    return _decimate_init("arm_fir_decimate_init_q31", coeffs, m, "q31")


@names_its_errors
def arm_fir_decimate_q15(S, x):
    """len(x) / M outputs: int64 sums ``>> 15``, saturated. Updates ``S.state``."""
    return _decimate_run("arm_fir_decimate_q15", S, x, "q15", _Q15)


@names_its_errors
def arm_fir_decimate_fast_q15(S, x):
    """As :func:`arm_fir_decimate_q15` with int32 sums (wrapping)."""
    return _decimate_run("arm_fir_decimate_fast_q15", S, x, "q15", _Q15_FAST)


@names_its_errors
def arm_fir_decimate_q31(S, x):
    """len(x) / M outputs: int64 sums ``>> 31``, wrapped to int32."""
    return _decimate_run("arm_fir_decimate_q31", S, x, "q31", _Q31)


@names_its_errors
def arm_fir_decimate_fast_q31(S, x):
    """As :func:`arm_fir_decimate_q31`, fast: the products' high words ``p >> 32`` (truncated, unlike
    arm_fir_fast_q31's rounding) summed in an int32, ``<< 1``."""
    return _decimate_run("arm_fir_decimate_fast_q31", S, x, "q31", _Q31_FAST)


@names_its_errors
def arm_fir_interpolate_init_q15(coeffs, l_factor) -> FirInterpolateInstance:
    """A q15 interpolator by L = ``l_factor``: ``coeffs`` of L * phase_length taps."""
    return _interpolate_init("arm_fir_interpolate_init_q15", coeffs, l_factor, "q15")


@names_its_errors
def arm_fir_interpolate_init_q31(coeffs, l_factor) -> FirInterpolateInstance:
    """A q31 interpolator by L = ``l_factor``."""
    return _interpolate_init("arm_fir_interpolate_init_q31", coeffs, l_factor, "q31")


@names_its_errors
def arm_fir_interpolate_q15(S, x):
    """L outputs per input: output j of input n is sum_k coeffs[L - 1 - j + k L] * w[n + k] (w = state + x),
    int64, ``>> 15``, saturated. Updates ``S.state``."""
    return _interpolate_run("arm_fir_interpolate_q15", S, x, "q15", _Q15)


@names_its_errors
def arm_fir_interpolate_q31(S, x):
    """As :func:`arm_fir_interpolate_q15` on q31: ``>> 31``, wrapped to int32."""
    return _interpolate_run("arm_fir_interpolate_q31", S, x, "q31", _Q31)
