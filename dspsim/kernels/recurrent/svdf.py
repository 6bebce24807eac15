"""Recurrent integer kernels with state carried between frames: SVDF (int8 input, int8/int16 state).

SVDF (TFLM ``svdf_common.cc`` ``EvalIntegerSvdfReference``; LiteRT's reference computes the same on
the keyword-spotting models), one frame per call, ``F`` filters, ``M`` memory slots, ``rank`` filters
per output unit::

    state  <- state shifted left by one slot (the oldest activation dropped)
    a[b,f]  = MBQM(offset + sum_c w_feature[f,c] * (x[b,c] - zi), M1, S1)  # int32 sum, double rounding
    state[b,f,M-1] = T(zs + clamp_T(a[b,f]))                          # clamp BEFORE the zero point
    t[b,f]  = sum_m w_time[f,m] * (state[b,f,m] - zs)                  # int32
    out[b,u] = clamp_int8(MBQM(bias[u] + sum_{r<rank} t[b,u*rank+r], M2, S2) + zo)

``T`` is the state's type (int16, or int8 in the 8-bit models); ``T(v)`` is C's conversion, which
wraps when a non-zero state zero point carries ``zs + clamp_T(a)`` out of ``T``. CMSIS-NN's ``arm_svdf_s8``
(int8 state) clamps to the int16 range instead and ignores ``zs`` (``activation_range``, ``zs = 0``). The fused activation
of the options is not applied by the integer kernel (TFLM). MBQM rounds twice (SRDHM ties toward
+inf, the right shift ties away from zero).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ...fixedpoint import multiply_by_quantized_multiplier_scalar
from ..._errors import names_its_errors
from .._checks import q31_multiplier, scalar_int
from .._checks import check_tensor, zero_point

_STATE_TYPES = (np.dtype(np.int16), np.dtype(np.int8))


@njit(cache=True)
def _svdf(x, wf, wt, bias, state, rank, zi, zs, zo, m1, s1, m2, s2, s_lo, s_hi, offset, out, new_state):
    n_batch, n_input = x.shape
    n_filter, n_memory = wt.shape
    n_unit = n_filter // rank
    flat_old = state.reshape(-1)
    flat = new_state.reshape(-1)
    for k in range(flat.shape[0] - 1):  # the C loop copies old[k + 1] to new[k]; the last slot is rewritten
        flat[k] = flat_old[k + 1]
    flat[flat.shape[0] - 1] = flat_old[flat.shape[0] - 1]
    bits = 8 * new_state.itemsize
    for b in range(n_batch):
        for f in range(n_filter):
            dot = np.int64(offset)
            for c in range(n_input):
                dot += np.int64(wf[f, c]) * (np.int64(x[b, c]) - zi)
            dot = (dot << 32) >> 32  # int32 accumulator
            a = multiply_by_quantized_multiplier_scalar(dot, m1, s1)
            a = min(max(a, s_lo), s_hi)
            v = zs + a
            new_state[b, f, n_memory - 1] = (v << (64 - bits)) >> (64 - bits)
    for b in range(n_batch):
        for u in range(n_unit):
            acc = np.int64(bias[u])
            for r in range(rank):
                f = u * rank + r
                t = np.int64(0)
                for m in range(n_memory):
                    t += np.int64(wt[f, m]) * (np.int64(new_state[b, f, m]) - zs)
                acc += (t << 32) >> 32
            acc = (acc << 32) >> 32
            out[b, u] = min(max(multiply_by_quantized_multiplier_scalar(acc, m2, s2) + zo, -128), 127)


@names_its_errors
def svdf(x, weights_feature, weights_time, bias, state, *, rank, input_zero_point, state_zero_point,
         output_zero_point, feature_multiplier, feature_shift, output_multiplier, output_shift,
         activation_range=None, feature_offset=0):
    """One frame of an int8 SVDF layer (formula in the module docstring); returns ``(output, new_state)``.

    Parameters
    ----------
    x : int8 array (B, I)
    weights_feature : int8 array (F, I)
    weights_time : int16 or int8 array (F, M), the state's dtype
    bias : int32 array (F / rank,) or None
    state : int16 or int8 array (B, F, M) (TFLite stores it as (B, F * M); either shape is taken)
    rank : int, dividing F
    input_zero_point, state_zero_point, output_zero_point : int
    feature_multiplier, feature_shift : the Q31 pair of ``s_in * s_wf / s_state`` (TFLite convention)
    output_multiplier, output_shift : the pair of ``s_state * s_wt / s_out``
    activation_range : (lo, hi) or None
        The clamp of the new activation ``a`` before it is stored (default: the state type's range, as the
        reference kernels). A wider range makes the store wrap (C's conversion): ``arm_svdf_s8`` clamps to the
        int16 range for an int8 state (pass ``state_zero_point=0`` too: it ignores the zero point).
    feature_offset : int
        Added to every feature accumulator before its requantization, in the int32 sum (default 0). CMSIS-NN's
        Helium (MVE) path adds ``input_zero_point * state_zero_point * I`` through its kernel sums.

    Returns int8 ``(B, F / rank)`` and the new state with ``state``'s shape. Saturation: the new
    activation is clamped to ``activation_range`` before the zero point is added, then converted to the state
    type (wrapping where the sum leaves it); the output is clamped to int8.
    """
    func = "svdf"
    x = check_tensor(x, func, "x", ndim=2, allowed=(np.dtype(np.int8),))
    wf = check_tensor(weights_feature, func, "weights_feature", ndim=2, allowed=(np.dtype(np.int8),))
    wt = check_tensor(weights_time, func, "weights_time", ndim=2, allowed=_STATE_TYPES)
    st = check_tensor(state, func, "state", allowed=_STATE_TYPES)
    n_batch, n_input = x.shape
    n_filter, n_memory = wt.shape
    if wf.shape != (n_filter, n_input):
        raise ValueError(f"{func}: weights_feature must have shape (F, I) = ({n_filter}, {n_input}), got {wf.shape}")
    if st.dtype != wt.dtype or st.size != n_batch * n_filter * n_memory:
        raise ValueError(f"{func}: state must be {wt.dtype} with B * F * M = {n_batch * n_filter * n_memory} "
                         f"values, got {st.dtype} {st.shape}")
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1 or n_filter % rank:
        raise ValueError(f"{func}: rank must be a positive divisor of the {n_filter} filters, got {rank!r}")
    n_unit = n_filter // rank
    b = np.zeros(n_unit, np.int32) if bias is None else np.asarray(bias)
    if b.dtype != np.int32 or b.shape != (n_unit,):
        raise ValueError(f"{func}: bias must be int32 of shape ({n_unit},), got {b.dtype} {b.shape}")
    zi = zero_point(input_zero_point, x.dtype, func, "input_zero_point")
    zs = zero_point(state_zero_point, st.dtype, func, "state_zero_point")
    zo = zero_point(output_zero_point, np.int8, func, "output_zero_point")
    m1, m2 = (q31_multiplier(v, func, n) for v, n in
              ((feature_multiplier, "feature_multiplier"), (output_multiplier, "output_multiplier")))
    s1, s2 = (scalar_int(v, func, n, -31, 30) for v, n in
              ((feature_shift, "feature_shift"), (output_shift, "output_shift")))
    info = np.iinfo(st.dtype)
    lo, hi = (info.min, info.max) if activation_range is None else _range(activation_range, func)
    out = np.empty((n_batch, n_unit), np.int8)
    new_state = np.empty((n_batch, n_filter, n_memory), st.dtype)
    _svdf(np.ascontiguousarray(x), np.ascontiguousarray(wf), np.ascontiguousarray(wt), b,
          np.ascontiguousarray(st).reshape(n_batch, n_filter, n_memory), int(rank), zi, zs, zo, m1, s1, m2, s2,
          int(lo), int(hi), scalar_int(feature_offset, func, "feature_offset", -(1 << 31), (1 << 31) - 1), out,
          new_state)
    return out, new_state.reshape(st.shape)


def _range(value, func):
    """``(lo, hi)``, int32 ints with ``lo <= hi``, or a ValueError/TypeError naming ``func``."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{func}: activation_range must be a (lo, hi) pair of ints, got {value!r}")
    lo, hi = (scalar_int(v, func, "activation_range", -(1 << 31), (1 << 31) - 1) for v in value)
    if lo > hi:
        raise ValueError(f"{func}: activation_range must have lo <= hi, got ({lo}, {hi})")
    return lo, hi
