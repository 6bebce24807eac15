"""The integer LSTM (UNIDIRECTIONAL_SEQUENCE_LSTM, int8 activations and weights, int16 gates and cell).

One kernel, two engines' arithmetic (:class:`LstmArithmetic`). Per batch ``b`` and time step ``t``, with
``h`` the int8 hidden (output) state, ``c`` the int16 cell state (scale ``2^p``) and the four gates
``i, f, g, o`` (input, forget, cell, output)::

    in_k[j]  = clamp16(MBQM(bias_k[j] + sum_c Wx_k[j,c] * (x[c] - zi), Mx_k, Sx_k))      # int32 sum
    rec_k[j] = MBQM(sum_c Wh_k[j,c] * (h[c] - zh), Mh_k, Sh_k)
    pre_k    = clamp16(in_k + clamp16(rec_k))        (TFLM: two FullyConnected + saturating add)
             = clamp16(in_k + rec_k)                 (LiteRT: MatrixBatchVectorMultiplyAccumulate adds
                                                      the unclamped second product to the first)
    i, f, o  = sigmoid(pre)   g = tanh(pre)          (Q3.12 in, Q0.15 out)
    c        = clip(clamp16(f*c @ forget_cell + i*g @ input_cell))
    h        = clamp8(MBQM(tanh(c) * o, M_hidden, S_hidden) + z_hidden);   output[b, t] = h

The gates are computed from the previous ``h`` (the output gate too); MBQM rounds twice (SRDHM ties
toward +inf, the shift ties away from zero). Where the engines differ:

==================  ===========================================  ==========================================
step                TFLM (``micro/kernels/lstm_eval.cc``)        LiteRT (``kernels/lstm_eval.cc``
                                                                 ``EvalInteger8x8_16``)
==================  ===========================================  ==========================================
sigmoid, tanh       table + interpolation (``int16_logistic``,   gemmlowp int16 (``fixedpoint16_logistic``,
                    ``int16_tanh``), input ``(0, 0)``            ``fixedpoint16_tanh``), 3 integer bits
``tanh(c)``         ``int16_tanh`` with left shift ``12 + p``    ``fixedpoint16_tanh`` with ``15 + p`` bits
                                                                 (outside 0..6: the input gate, unchanged)
cell gate           tanh if the fused activation is TANH, else   always tanh
                    the pre-activation itself (assert compiled
                    out)
``f * c``           ``MulElementwise``: clamp16(MBQM(f*c))      ``CwiseMul``: int16(RDBPOT(f*c, 15))
``i * g``           clamp16(MBQM(i*g))                           int16(RDBPOT(i*g, 30 + p))
cell clip           when the float ``cell_clip > 0``             when the quantized clip is > 0
==================  ===========================================  ==========================================

RDBPOT is gemmlowp's RoundingDivideByPOT (ties away from zero); ``int16(...)`` is C's conversion
(wraps; the products here stay in range). The multipliers differ too (:func:`tflm_lstm_params` computes
them in double, :func:`litert_lstm_params` from float32 products). Peephole, projection, layer
normalisation and CIFG (no input gate) are not modelled.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numba import njit

from ...fixedpoint import (
    _mbqm_int64, rounding_divide_by_pot_scalar, as_int_array, multiply_by_quantized_multiplier_scalar,
    quantize_multiplier,
)
from ..._errors import check_flag, names_its_errors
from .._checks import check_tensor, int_in_range, zero_point
from ..nonlinear.int16 import (
    SIGMOID_TABLE_UINT16, _logistic16, _lut_logistic_scalar, _lut_tanh_scalar, _rescale_input, _tanh16,
    check_lut_input_rescale, checked_log2,
)

#: the gate order of every per-gate array: input, forget, cell, output (TFLite's tensor order)
GATES = ("input", "forget", "cell", "output")
_GATE_Q_INTEGER_BITS = 3  # gate pre-activations are Q3.12 (scale 2^-12) in both engines
_GATE_SCALE = 2.0**-12
_GATE_OUTPUT_SCALE = 2.0**-15


class LstmArithmetic(IntEnum):
    """Whose integer LSTM arithmetic (module docstring table)."""

    TFLM = 0
    """TensorFlow Lite Micro: sigmoid/tanh by table and interpolation, cell products by MulElementwise."""
    LITERT = 1
    """LiteRT ``EvalInteger8x8_16``: gemmlowp int16 sigmoid/tanh, cell products by rounding shifts."""


@dataclass(frozen=True)
class LstmParams:
    """The integer parameters of one integer LSTM layer, as the engine's Prepare derives them.

    Per-gate tuples are in :data:`GATES` order. ``*_multiplier`` / ``*_shift`` are TFLite Q31 pairs
    (shift > 0 is a left shift). ``forget_cell_*`` and ``input_cell_*`` are TFLM's; LiteRT's cell
    products are shifts by 15 and ``30 + cell_scale_power`` (None here).
    """

    arithmetic: LstmArithmetic
    input_zero_point: int
    output_state_zero_point: int  # the recurrent FC's input offset
    input_multiplier: tuple
    input_shift: tuple
    recurrent_multiplier: tuple
    recurrent_shift: tuple
    cell_scale_power: int  # the cell state's scale is 2^cell_scale_power
    hidden_multiplier: int
    hidden_shift: int
    hidden_zero_point: int  # added to the new hidden state (TFLM: the output state's; LiteRT: intermediate 4's)
    cell_clip: int | None = None  # quantized clip applied to the cell state, None for no clipping
    forget_cell_multiplier: int | None = None
    forget_cell_shift: int | None = None
    input_cell_multiplier: int | None = None
    input_cell_shift: int | None = None
    cell_gate_tanh: bool = True  # TFLM: False when the fused activation is not TANH (the gate stays linear)


def _f32(v):
    return float(np.float32(v))


def _gate_pairs(scales):
    pairs = [quantize_multiplier(float(s)) for s in scales]
    return tuple(m for m, _ in pairs), tuple(s for _, s in pairs)


def _four(values, func, name):
    try:
        scales = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(f"{func}: {name} must be 4 float scales, got {values!r}"[:200]) from None
    with np.errstate(over="ignore"):
        v = tuple(float(np.float32(s)) for s in scales)
    if len(v) != 4 or not all(math.isfinite(s) and s > 0 for s in v):
        raise ValueError(f"{func}: {name} must be 4 finite positive scales (input, forget, cell, output gates), "
                         f"got {values!r}")
    return v


def _zero_points(func, **values):
    return (zero_point(v, np.int8, func, n) for n, v in values.items())


def _clip(value, func):
    """``cell_clip`` as its float32 value (clipping applies when it is > 0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{func}: cell_clip must be a float, got {type(value).__name__}")
    with np.errstate(over="ignore"):
        return float(np.float32(value))


@names_its_errors
def tflm_lstm_params(*, input_scale, input_zero_point, input_weight_scales, recurrent_weight_scales,
                     output_state_scale, output_state_zero_point, cell_state_scale, cell_clip=0.0,
                     cell_gate_tanh=True):
    """TFLM's ``PrepareGateParametersInteger`` / ``CreateLstmCellStateInfo``: :class:`LstmParams`.

    Gate FC multipliers ``double(s_in) * double(s_w) / 2^-12`` (``GetQuantizedConvolutionMultipler``), the
    cell products ``2^-15 * s_c / s_c`` and ``2^-30 / s_c``, the hidden product ``2^-30 / s_h`` (double),
    each by ``QuantizeMultiplier``; the cell scale's power by ``CheckedLog2`` with its result ignored; the
    clip ``int16(clamp(double(clip) / double(s_c), -32768, 32767))`` (truncation), applied when
    ``cell_clip > 0``. ``cell_gate_tanh``: whether the fused activation is TANH; for any other code
    ``CalculateLstmGate`` reaches ``TFLITE_ASSERT_FALSE``, a no-op in release builds (NDEBUG), so the
    cell gate keeps its Q3.12 pre-activation, read as Q0.15 by the products.
    """
    func = "tflm_lstm_params"
    input_zero_point, output_state_zero_point = _zero_points(func, input_zero_point=input_zero_point,
                                                             output_state_zero_point=output_state_zero_point)
    cell_gate_tanh = check_flag(cell_gate_tanh, func, "cell_gate_tanh")
    w_in = _four(input_weight_scales, func, "input_weight_scales")
    w_rec = _four(recurrent_weight_scales, func, "recurrent_weight_scales")
    s_in, s_h, s_c = (_positive(v, func, n) for v, n in ((input_scale, "input_scale"),
                                                         (output_state_scale, "output_state_scale"),
                                                         (cell_state_scale, "cell_state_scale")))
    m_in, sh_in = _gate_pairs(s_in * w / _GATE_SCALE for w in w_in)
    m_rec, sh_rec = _gate_pairs(s_h * w / _GATE_SCALE for w in w_rec)
    m_fc, s_fc = quantize_multiplier(_GATE_OUTPUT_SCALE * s_c / s_c)
    m_ic, s_ic = quantize_multiplier(_GATE_OUTPUT_SCALE * _GATE_OUTPUT_SCALE / s_c)
    m_h, s_h_shift = quantize_multiplier(_GATE_OUTPUT_SCALE * _GATE_OUTPUT_SCALE / s_h)
    clip = _clip(cell_clip, func)
    q_clip = int(math.trunc(min(max(clip / s_c, -32768.0), 32767.0))) if clip > 0 else None
    return LstmParams(LstmArithmetic.TFLM, int(input_zero_point), int(output_state_zero_point), m_in, sh_in, m_rec,
                      sh_rec, checked_log2(s_c)[0], m_h, s_h_shift, int(output_state_zero_point),
                      q_clip, m_fc, s_fc, m_ic, s_ic, bool(cell_gate_tanh))


@names_its_errors
def litert_lstm_params(*, input_scale, input_zero_point, input_weight_scales, recurrent_weight_scales,
                       output_state_scale, output_state_zero_point, cell_state_scale, hidden_scale,
                       hidden_zero_point, cell_clip=0.0):
    """LiteRT's ``PopulateQuantizedLstmParams8x8_16`` without layer norm, peephole or projection.

    Gate multipliers from the float32 expressions ``s_w * s_in / 2^-12`` and ``s_w * s_out / 2^-12``;
    ``effective_hidden_scale = float(2^-15 / double(s_hidden) * 2^-15)`` with ``s_hidden``/``z_hidden`` the
    quantization of the op's intermediate tensor 4 (``effective_hidden_scale_intermediate``); each by
    ``QuantizeMultiplier``. The clip is ``int16(clamp(f32(clip / s_c), -32768, 32767))`` (float32 divide,
    truncation), applied when > 0. The cell gate is always tanh (the fused activation is not read).

    A cell scale that fails ``CheckedLog2`` (not a power of two within 1e-3) makes the function return
    its error right there, and ``Prepare`` ignores that status: every parameter after the check keeps
    the zero of ``new OpData()`` (multipliers, shifts, the cell scale power, the hidden zero point;
    the clip was set before). That is what is returned then, as LiteRT runs it.
    """
    func = "litert_lstm_params"
    input_zero_point, output_state_zero_point, hidden_zero_point = _zero_points(
        func, input_zero_point=input_zero_point, output_state_zero_point=output_state_zero_point,
        hidden_zero_point=hidden_zero_point)
    w_in = _four(input_weight_scales, func, "input_weight_scales")
    w_rec = _four(recurrent_weight_scales, func, "recurrent_weight_scales")
    s_in, s_h, s_c, s_hidden = (_positive(v, func, n) for v, n in (
        (input_scale, "input_scale"), (output_state_scale, "output_state_scale"),
        (cell_state_scale, "cell_state_scale"), (hidden_scale, "hidden_scale")))
    clip = _clip(cell_clip, func)
    q_clip = int(math.trunc(min(max(_f32(clip / s_c), -32768.0), 32767.0))) if clip > 0 else 0
    q_clip = q_clip if q_clip > 0 else None
    power, exact = checked_log2(s_c)
    if not exact:
        zeros = (0, 0, 0, 0)
        return LstmParams(LstmArithmetic.LITERT, int(input_zero_point), int(output_state_zero_point), zeros, zeros,
                          zeros, zeros, 0, 0, 0, 0, q_clip)
    m_in, sh_in = _gate_pairs(_f32(_f32(w * s_in) / _GATE_SCALE) for w in w_in)
    m_rec, sh_rec = _gate_pairs(_f32(_f32(w * s_h) / _GATE_SCALE) for w in w_rec)
    m_h, s_h_shift = quantize_multiplier(_f32(_GATE_OUTPUT_SCALE / s_hidden * _GATE_OUTPUT_SCALE))
    return LstmParams(LstmArithmetic.LITERT, int(input_zero_point), int(output_state_zero_point), m_in, sh_in,
                      m_rec, sh_rec, power, m_h, s_h_shift, int(hidden_zero_point), q_clip)


def _positive(v, func, name):
    f = float(np.float32(v)) if isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool) \
        else float("nan")
    if not (math.isfinite(f) and f > 0):
        raise ValueError(f"{func}: {name} must be a finite positive float, got {v!r}")
    return f


# --------------------------------------------------------------------------------------------
# the kernel
# --------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _clamp16(v):
    return min(max(v, -32768), 32767)


@njit(cache=True, inline="always")
def _wrap16(v):
    return ((v + 32768) & 0xFFFF) - 32768


@njit(cache=True, inline="always")
def _sigmoid(v, litert, table):
    if litert:
        return _logistic16(v, 3)
    return _lut_logistic_scalar(_rescale_input(v, 0, 0), table)


@njit(cache=True, inline="always")
def _tanh_gate(v, litert, table):
    if litert:
        return _tanh16(v, 3)
    return _lut_tanh_scalar(_rescale_input(v, 0, 0), table)


@njit(cache=True, inline="always")
def _gate_fc(acc, m, s, wide):
    """A gate FullyConnected's requantization: int16 activations sum in int64 (the int64 MBQM of the 16x8
    kernels), int8 ones in int32 (wrapping)."""
    if wide:
        return _mbqm_int64(acc, m, s)
    return multiply_by_quantized_multiplier_scalar((acc << 32) >> 32, m, s)


@njit(cache=True)
def _lstm(x, w_in, w_rec, bias, h0, c0, litert, zi, zh, m_in, s_in, m_rec, s_rec, power, m_h, s_h, z_hidden,
          clip, m_fc, s_fc, m_ic, s_ic, cell_gate_tanh, tanh_m, tanh_s, table, wide, lo, hi, out, h, c,
          gate_stages, cell_stages):
    n_batch, n_time, n_input = x.shape
    n_cell = w_in.shape[1]
    gates = np.empty((4, n_cell), np.int64)
    for b in range(n_batch):
        for j in range(n_cell):
            h[b, j] = h0[b, j]
            c[b, j] = c0[b, j]
        for t in range(n_time):
            for k in range(4):
                for j in range(n_cell):
                    acc_in = np.int64(0)
                    for col in range(n_input):
                        acc_in += np.int64(w_in[k, j, col]) * (np.int64(x[b, t, col]) - zi)
                    req_in = _gate_fc(acc_in + bias[k, j], m_in[k], s_in[k], wide)
                    acc_rec = np.int64(0)
                    for col in range(n_cell):
                        acc_rec += np.int64(w_rec[k, j, col]) * (np.int64(h[b, col]) - zh)
                    req_rec = _gate_fc(acc_rec, m_rec[k], s_rec[k], wide)
                    part_rec = req_rec if litert else _clamp16(req_rec)
                    pre = _clamp16(_clamp16(req_in) + part_rec)
                    if k == 2:
                        gates[k, j] = _tanh_gate(pre, litert, table) if litert or cell_gate_tanh else pre
                    else:
                        gates[k, j] = _sigmoid(pre, litert, table)
                    if gate_stages is not None:  # LSTM_GATE_STAGES, the int32 sums as the int32 register holds them
                        st = gate_stages[b, t, k, j]
                        st[0] = acc_in if wide else (acc_in << 32) >> 32
                        st[1] = acc_in + bias[k, j] if wide else ((acc_in + bias[k, j]) << 32) >> 32
                        st[2] = req_in
                        st[3] = acc_rec if wide else (acc_rec << 32) >> 32
                        st[4] = req_rec
                        st[5] = pre
                        st[6] = gates[k, j]
            for j in range(n_cell):
                i_g, f_g, g_g, o_g = gates[0, j], gates[1, j], gates[2, j], gates[3, j]
                cell = np.int64(c[b, j])
                if litert:
                    kept = _wrap16(rounding_divide_by_pot_scalar(f_g * cell, 15))
                    added = _wrap16(rounding_divide_by_pot_scalar(i_g * g_g, 30 + power))
                else:
                    kept = _clamp16(multiply_by_quantized_multiplier_scalar(f_g * cell, m_fc, s_fc))
                    added = _clamp16(multiply_by_quantized_multiplier_scalar(i_g * g_g, m_ic, s_ic))
                cell = _clamp16(kept + added)
                if clip >= 0:
                    cell = min(max(cell, -clip), clip)
                c[b, j] = cell
                if litert:  # ApplyTanh writes nothing outside 0..6 integer bits: its buffer holds the input gate
                    tanh_c = _tanh16(cell, 15 + power) if 0 <= 15 + power <= 6 else i_g
                else:
                    tanh_c = _lut_tanh_scalar(_rescale_input(cell, tanh_m, tanh_s), table)
                hidden = multiply_by_quantized_multiplier_scalar(tanh_c * o_g, m_h, s_h)
                gates[0, j] = min(max(hidden + z_hidden, lo), hi)
                if cell_stages is not None:  # LSTM_CELL_STAGES
                    st = cell_stages[b, t, j]
                    st[0] = kept
                    st[1] = added
                    st[2] = cell
                    st[3] = tanh_c
                    st[4] = hidden
                    st[5] = gates[0, j]
            for j in range(n_cell):  # the new hidden state, after every gate has read the old one
                h[b, j] = gates[0, j]
                out[b, t, j] = gates[0, j]


def tflm_cell_tanh_rescale(power):
    """TFLM ``lstm_internal::Tanh`` for ``tanh(cell)``: ``(input_multiplier, input_left_shift)`` of
    :func:`int16_tanh` for a cell scale ``2^power``: left shift ``15 + power - 3`` with multiplier 0
    (the power-of-two case), or multiplier 3 and the negated shift when it is negative."""
    shift = 12 + int(power)
    return (0, shift) if shift >= 0 else (3, -shift)


def _per_gate(values, func, name, lo, hi):
    m = as_int_array(values, func, f"params.{name}", lo, hi)
    if m.shape != (4,):
        raise ValueError(f"{func}: params.{name} must hold 4 values (input, forget, cell, output gates)")
    return np.ascontiguousarray(m.astype(np.int64))


def _scalar(v, func, name, lo, hi):
    return int_in_range(v, lo, hi, func, f"params.{name}")


def lstm(x, input_weights, recurrent_weights, bias, output_state, cell_state, params):
    """An integer LSTM over a sequence (formula and engine table in the module docstring).

    Parameters
    ----------
    x : int8 array (B, T, I), batch major (transpose a time-major input first); int16 with TFLM arithmetic
        (TFLM's 16x8 LSTM: zero points 0, int64 gate sums with the int64 ``MultiplyByQuantizedMultiplier``)
    input_weights : int8 array (4, N, I), the gates in :data:`GATES` order
    recurrent_weights : int8 array (4, N, N)
    bias : int32 array (4, N) (int16 x: int64) or None
    output_state : array (B, N) of x's type, the hidden state before the sequence
    cell_state : int16 array (B, N)
    params : :class:`LstmParams` (:func:`tflm_lstm_params` or :func:`litert_lstm_params`)

    Returns ``(output, output_state, cell_state)``: x's type (B, T, N) and the states after the last step.
    Saturation: gate parts and sums, cell products and the cell to int16; the hidden state to x's type;
    accumulators are int32 (wrapping; int64 for int16 x). Ties: MBQM twice (SRDHM toward +inf, shift away from zero);
    LiteRT's cell shifts away from zero; TFLM's tables round the interpolation as their docstrings say.
    """
    out, h, c, _ = _run(_checked("lstm", x, input_weights, recurrent_weights, bias, output_state, cell_state,
                                 params), False)
    return out, h, c


#: per time step, gate and unit (:func:`lstm_stages`), in the order of the arithmetic
LSTM_GATE_STAGES = ("in_acc", "in_acc_bias", "in_requant", "rec_acc", "rec_requant", "pre", "gate")
#: per time step and unit (:func:`lstm_stages`), in the order of the arithmetic
LSTM_CELL_STAGES = ("forget_cell", "input_cell", "cell", "tanh_cell", "hidden_requant", "hidden")


def lstm_stages(x, input_weights, recurrent_weights, bias, output_state, cell_state, params):
    """:func:`lstm` with every intermediate value of its loop, recorded by the same kernel as it runs.

    Returns ``(output, output_state, cell_state, stages)``; ``stages`` maps each name of
    :data:`LSTM_GATE_STAGES` to an int64 array (B, T, 4, N) (gates in :data:`GATES` order) and each of
    :data:`LSTM_CELL_STAGES` to one (B, T, N):

    * ``in_acc``: the input FC's sum ``sum_c Wx[j,c] * (x[c] - zi)`` before the bias, ``in_acc_bias`` after
      it (both engines add the bias after the sum: TFLM's FullyConnected; LiteRT's
      MatrixBatchVectorMultiplyAccumulate, whose bias also folds ``-zi * row sum``: the same total), wrapped to
      int32 as the register holds them (int64 for int16 x); ``in_requant``: MBQM of ``in_acc_bias``, before
      its int16 clamp;
    * ``rec_acc``: the recurrent FC's sum ``sum_c Wh[j,c] * (h[c] - zh)`` over the previous hidden state (no
      bias: ``rec_acc`` is also its value after the bias); ``rec_requant``: its MBQM, before TFLM's int16 clamp;
    * ``pre``: the gate's pre-activation (Q3.12), ``gate``: sigmoid / tanh of it (Q0.15; TFLM's linear cell
      gate: ``pre``);
    * ``forget_cell`` (``f * c``) and ``input_cell`` (``i * g``) rescaled to the cell's scale, ``cell`` the new
      cell state (clipped), ``tanh_cell``, ``hidden_requant`` the hidden product's MBQM before the zero point
      and clamp, ``hidden`` the new hidden state (``hidden[:, t]`` is ``output[:, t]``).
    """
    return _run(_checked("lstm_stages", x, input_weights, recurrent_weights, bias, output_state, cell_state, params),
                True)


def _checked(func, x, input_weights, recurrent_weights, bias, output_state, cell_state, params):
    """The arguments of :func:`_lstm` up to its output buffers, checked (ValueError / TypeError naming ``func``)."""
    if not isinstance(params, LstmParams):
        raise TypeError(f"{func}: params must be an LstmParams (tflm_lstm_params / litert_lstm_params), got "
                        f"{type(params).__name__}")
    x = check_tensor(x, func, "x", ndim=3, allowed=(np.dtype(np.int8), np.dtype(np.int16)))
    wide = x.dtype == np.int16
    w_in = check_tensor(input_weights, func, "input_weights", ndim=3, allowed=(np.dtype(np.int8),))
    w_rec = check_tensor(recurrent_weights, func, "recurrent_weights", ndim=3, allowed=(np.dtype(np.int8),))
    n_batch, _, n_input = x.shape
    n_cell = w_in.shape[1]
    if w_in.shape != (4, n_cell, n_input):
        raise ValueError(f"{func}: input_weights must have shape (4, N, I) = (4, N, {n_input}), got {w_in.shape}")
    if w_rec.shape != (4, n_cell, n_cell):
        raise ValueError(f"{func}: recurrent_weights must have shape (4, N, N) = (4, {n_cell}, {n_cell}), "
                         f"got {w_rec.shape}")
    bias_type = np.dtype(np.int64) if wide else np.dtype(np.int32)
    b = np.zeros((4, n_cell), bias_type) if bias is None else np.asarray(bias)
    if b.dtype != bias_type or b.shape != (4, n_cell):
        raise ValueError(f"{func}: bias must be {bias_type} of shape (4, {n_cell}), got {b.dtype} {b.shape}")
    h0 = check_tensor(output_state, func, "output_state", ndim=2, allowed=(x.dtype,))
    c0 = check_tensor(cell_state, func, "cell_state", ndim=2, allowed=(np.dtype(np.int16),))
    for name, st in (("output_state", h0), ("cell_state", c0)):
        if st.shape != (n_batch, n_cell):
            raise ValueError(f"{func}: {name} must have shape (B, N) = ({n_batch}, {n_cell}), got {st.shape}")
    p = params
    litert = p.arithmetic == LstmArithmetic.LITERT
    if wide and litert:
        raise ValueError(f"{func}: int16 activations take TFLM arithmetic (LiteRT's integer LSTM is 8x8_16 only)")
    if wide and (p.input_zero_point, p.output_state_zero_point, p.hidden_zero_point) != (0, 0, 0):
        raise ValueError(f"{func}: int16 activations need zero points 0, got {p.input_zero_point}, "
                         f"{p.output_state_zero_point}, {p.hidden_zero_point}")
    if wide and max(p.input_shift + p.recurrent_shift) > 7:
        raise ValueError(f"{func}: the int64 MultiplyByQuantizedMultiplier of int16 gates takes shifts <= 7")
    zi = zero_point(p.input_zero_point, np.int8, func, "params.input_zero_point")
    zh = zero_point(p.output_state_zero_point, np.int8, func, "params.output_state_zero_point")
    z_hidden = zero_point(p.hidden_zero_point, np.int8, func, "params.hidden_zero_point")
    m_in = _per_gate(p.input_multiplier, func, "input_multiplier", 0, (1 << 31) - 1)
    s_in = _per_gate(p.input_shift, func, "input_shift", -31, 30)
    m_rec = _per_gate(p.recurrent_multiplier, func, "recurrent_multiplier", 0, (1 << 31) - 1)
    s_rec = _per_gate(p.recurrent_shift, func, "recurrent_shift", -31, 30)
    m_h = _scalar(p.hidden_multiplier, func, "hidden_multiplier", 0, (1 << 31) - 1)
    s_h = _scalar(p.hidden_shift, func, "hidden_shift", -31, 30)
    clip = -1 if p.cell_clip is None else _scalar(p.cell_clip, func, "cell_clip", 0, 32767)
    if litert:
        power = _scalar(p.cell_scale_power, func, "cell_scale_power", -30, 15)
        m_fc = s_fc = m_ic = s_ic = tanh_m = tanh_s = 0
    else:
        power = _scalar(p.cell_scale_power, func, "cell_scale_power", -43, 2)
        if None in (p.forget_cell_multiplier, p.forget_cell_shift, p.input_cell_multiplier, p.input_cell_shift):
            raise ValueError(f"{func}: TFLM arithmetic needs params.forget_cell_* and params.input_cell_*")
        m_fc = _scalar(p.forget_cell_multiplier, func, "forget_cell_multiplier", 0, (1 << 31) - 1)
        m_ic = _scalar(p.input_cell_multiplier, func, "input_cell_multiplier", 0, (1 << 31) - 1)
        s_fc = _scalar(p.forget_cell_shift, func, "forget_cell_shift", -31, 30)
        s_ic = _scalar(p.input_cell_shift, func, "input_cell_shift", -31, 30)
        tanh_m, tanh_s = check_lut_input_rescale(func, *tflm_cell_tanh_rescale(power))
    return (np.ascontiguousarray(x), np.ascontiguousarray(w_in), np.ascontiguousarray(w_rec),
            np.ascontiguousarray(b.astype(np.int64)), np.ascontiguousarray(h0), np.ascontiguousarray(c0), litert, zi,
            zh, m_in, s_in, m_rec, s_rec, power, m_h, s_h, z_hidden, clip, m_fc, s_fc, m_ic, s_ic,
            bool(p.cell_gate_tanh), tanh_m, tanh_s, SIGMOID_TABLE_UINT16, wide, int(np.iinfo(x.dtype).min),
            int(np.iinfo(x.dtype).max))


def _run(args, record):
    """Run :func:`_lstm` on :func:`_checked`'s ``args``: ``(output, h, c, stages)``, ``stages`` None unless
    ``record``."""
    x, w_in = args[0], args[1]
    n_batch, n_time, _ = x.shape
    n_cell = w_in.shape[1]
    out = np.empty((n_batch, n_time, n_cell), x.dtype)
    h = np.empty((n_batch, n_cell), x.dtype)
    c = np.empty((n_batch, n_cell), np.int16)
    if not record:  # None: the recording branches compiled out
        _lstm(*args, out, h, c, None, None)
        return out, h, c, None
    gate_stages = np.zeros((n_batch, n_time, 4, n_cell, len(LSTM_GATE_STAGES)), np.int64)
    cell_stages = np.zeros((n_batch, n_time, n_cell, len(LSTM_CELL_STAGES)), np.int64)
    _lstm(*args, out, h, c, gate_stages, cell_stages)
    stages = {name: gate_stages[..., k] for k, name in enumerate(LSTM_GATE_STAGES)}
    stages.update({name: cell_stages[..., k] for k, name in enumerate(LSTM_CELL_STAGES)})
    return out, h, c, stages
