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
def _svdf(x, wf, wt, bias, state, rank, zi, zs, zo, m1, s1, m2, s2, s_lo, s_hi, offset, out, new_state,
          filter_stages, unit_stages):
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
            v = zs + min(max(a, s_lo), s_hi)
            new_state[b, f, n_memory - 1] = (v << (64 - bits)) >> (64 - bits)
            if filter_stages is not None:  # SVDF_FILTER_STAGES[:3]
                filter_stages[b, f, 0] = dot
                filter_stages[b, f, 1] = a
                filter_stages[b, f, 2] = new_state[b, f, n_memory - 1]
    for b in range(n_batch):
        for u in range(n_unit):
            acc = np.int64(bias[u])  # the register starts at the bias (EvalIntegerSvdfReference, arm_svdf_s8)
            total = np.int64(0)
            for r in range(rank):
                f = u * rank + r
                t = np.int64(0)
                for m in range(n_memory):
                    t += np.int64(wt[f, m]) * (np.int64(new_state[b, f, m]) - zs)
                acc += (t << 32) >> 32
                if filter_stages is not None:  # SVDF_FILTER_STAGES[3]
                    filter_stages[b, f, 3] = (t << 32) >> 32
                    total += (t << 32) >> 32
            acc = (acc << 32) >> 32
            requant = multiply_by_quantized_multiplier_scalar(acc, m2, s2)
            out[b, u] = min(max(requant + zo, -128), 127)
            if unit_stages is not None:  # SVDF_UNIT_STAGES
                unit_stages[b, u, 0] = (total << 32) >> 32
                unit_stages[b, u, 1] = acc
                unit_stages[b, u, 2] = requant


#: per batch and filter (:func:`svdf_stages`), in the order of the arithmetic
SVDF_FILTER_STAGES = ("feature_acc", "feature_requant", "state_entry", "time_acc")
#: per batch and output unit (:func:`svdf_stages`), in the order of the arithmetic
SVDF_UNIT_STAGES = ("acc", "acc_bias", "requant")


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
    out, new_state, _ = _run(_checked("svdf", x, weights_feature, weights_time, bias, state, rank, input_zero_point,
                                      state_zero_point, output_zero_point, feature_multiplier, feature_shift,
                                      output_multiplier, output_shift, activation_range, feature_offset), False)
    return out, new_state


@names_its_errors
def svdf_stages(x, weights_feature, weights_time, bias, state, *, rank, input_zero_point, state_zero_point,
                output_zero_point, feature_multiplier, feature_shift, output_multiplier, output_shift,
                activation_range=None, feature_offset=0):
    """:func:`svdf` with the intermediate values of its loops, recorded by the same kernel as it runs.

    Returns ``(output, new_state, stages)``; ``stages`` maps each name of :data:`SVDF_FILTER_STAGES` to an int64
    array (B, F) and each of :data:`SVDF_UNIT_STAGES` to one (B, F / rank):

    * ``feature_acc``: the feature FC's int32 sum (``feature_offset`` its start), ``feature_requant`` its MBQM
      before the clamp to ``activation_range``, ``state_entry`` the value stored in the newest state slot;
    * ``time_acc``: each filter's time FC over the shifted state, ``sum_m w_time[f,m] * (state[f,m] - zs)``
      (int32);
    * ``acc``: a unit's ``rank`` time sums without the bias, ``acc_bias`` the register the engines hold: it
      starts at the bias and adds the time sums (TFLM's ``EvalIntegerSvdfReference``, CMSIS-NN's
      ``arm_svdf_s8``; int32 wrapping: the same value as ``acc + bias``), ``requant`` its MBQM before the
      output zero point and the int8 clamp: ``output = clip(requant + zo, -128, 127)``.
    """
    return _run(_checked("svdf_stages", x, weights_feature, weights_time, bias, state, rank, input_zero_point,
                         state_zero_point, output_zero_point, feature_multiplier, feature_shift, output_multiplier,
                         output_shift, activation_range, feature_offset), True)


def _checked(func, x, weights_feature, weights_time, bias, state, rank, input_zero_point, state_zero_point,
             output_zero_point, feature_multiplier, feature_shift, output_multiplier, output_shift, activation_range,
             feature_offset):
    """:func:`_svdf`'s arguments up to its output buffers, checked (ValueError / TypeError naming ``func``), and
    the state's shape."""
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
    return ((np.ascontiguousarray(x), np.ascontiguousarray(wf), np.ascontiguousarray(wt), b,
             np.ascontiguousarray(st).reshape(n_batch, n_filter, n_memory), int(rank), zi, zs, zo, m1, s1, m2, s2,
             int(lo), int(hi), scalar_int(feature_offset, func, "feature_offset", -(1 << 31), (1 << 31) - 1)),
            st.shape)


def _run(checked, record):
    """Run :func:`_svdf` on :func:`_checked`'s result: ``(output, new_state, stages)``, ``stages`` None unless
    ``record``."""
    args, state_shape = checked
    x, wt, state, rank = args[0], args[2], args[4], args[5]
    n_batch, n_filter = x.shape[0], wt.shape[0]
    out = np.empty((n_batch, n_filter // rank), np.int8)
    new_state = np.empty(state.shape, state.dtype)
    if not record:  # None: the recording branches compiled out
        _svdf(*args, out, new_state, None, None)
        return out, new_state.reshape(state_shape), None
    filter_stages = np.zeros((n_batch, n_filter, len(SVDF_FILTER_STAGES)), np.int64)
    unit_stages = np.zeros((n_batch, n_filter // rank, len(SVDF_UNIT_STAGES)), np.int64)
    _svdf(*args, out, new_state, filter_stages, unit_stages)
    stages = {name: filter_stages[..., k] for k, name in enumerate(SVDF_FILTER_STAGES)}
    stages.update({name: unit_stages[..., k] for k, name in enumerate(SVDF_UNIT_STAGES)})
    return out, new_state.reshape(state_shape), stages


def _range(value, func):
    """``(lo, hi)``, int32 ints with ``lo <= hi``, or a ValueError/TypeError naming ``func``."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{func}: activation_range must be a (lo, hi) pair of ints, got {value!r}")
    lo, hi = (scalar_int(v, func, "activation_range", -(1 << 31), (1 << 31) - 1) for v in value)
    if lo > hi:
        raise ValueError(f"{func}: activation_range must have lo <= hi, got ({lo}, {hi})")
    return lo, hi
