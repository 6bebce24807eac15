"""The oracle of the recurrent family: SVDF and the integer LSTM (TFLM's and LiteRT's).

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

from .fixedpoint import (
    _np,
    clamp,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    rounding_divide_by_pot,
    saturate,
    wrap,
)
from .nonlinear import (
    fixedpoint16_logistic_oracle,
    fixedpoint16_tanh_oracle,
    int16_logistic_oracle,
    int16_tanh_oracle,
)


# --- SVDF (dspsim.kernels.recurrent.svdf) ------------------------------------------------------------
def svdf_oracle(x, weights_feature, weights_time, bias, state, *, rank, input_zero_point, state_zero_point,
                output_zero_point, feature_multiplier, feature_shift, output_multiplier, output_shift,
                activation_range=None, feature_offset=0):
    """One SVDF frame as TFLM's EvalIntegerSvdfReference reads: shift, feature MBQM, time sums, MBQM
    (``activation_range``: the clamp of the new activation, default the state type's range;
    ``feature_offset``: added to each feature sum)."""
    np = _np()
    xs, wf, wt = x.tolist(), weights_feature.tolist(), weights_time.tolist()
    n_filter, n_memory = len(wt), len(wt[0])
    t_bits = np.dtype(state.dtype).itemsize * 8
    lo, hi = (-(1 << (t_bits - 1)), (1 << (t_bits - 1)) - 1) if activation_range is None else activation_range
    old = [int(v) for v in np.asarray(state).reshape(-1).tolist()]
    new = old[1:] + old[-1:]  # every slot takes its right neighbour's value
    n_unit = n_filter // rank
    bias = [0] * n_unit if bias is None else [int(v) for v in bias]
    out = []
    for b, row in enumerate(xs):
        for f in range(n_filter):
            dot = wrap(feature_offset + sum(wf[f][c] * (row[c] - input_zero_point) for c in range(len(row))), 32)
            a = clamp(multiply_by_quantized_multiplier(dot, feature_multiplier, feature_shift), lo, hi)
            new[(b * n_filter + f) * n_memory + n_memory - 1] = wrap(state_zero_point + a, t_bits)
        line = []
        for u in range(n_unit):
            acc = bias[u]
            for r in range(rank):
                f = u * rank + r
                base = (b * n_filter + f) * n_memory
                acc += wrap(sum(wt[f][m] * (new[base + m] - state_zero_point) for m in range(n_memory)), 32)
            v = multiply_by_quantized_multiplier(wrap(acc, 32), output_multiplier, output_shift)
            line.append(clamp(v + output_zero_point, -128, 127))
        out.append(line)
    return np.array(out, np.int8), np.array(new, state.dtype).reshape(np.shape(state))


def _lstm_sigmoid(v: int, litert: bool) -> int:
    np = _np()
    if litert:
        return int(fixedpoint16_logistic_oracle(np.array([v], np.int16), 3)[0])
    return int(int16_logistic_oracle(np.array([v], np.int16), 0, 0)[0])


def _lstm_tanh(v: int, litert: bool, integer_bits: int, multiplier: int = 0, left_shift: int = 0) -> int:
    np = _np()
    if litert:
        return int(fixedpoint16_tanh_oracle(np.array([v], np.int16), integer_bits)[0])
    return int(int16_tanh_oracle(np.array([v], np.int16), multiplier, left_shift)[0])


def _tflm_cell_tanh_rescale(power: int):
    """TFLM ``lstm_internal::Tanh`` of the cell (scale ``2^power``): the int16 TANH's input rescale, a left
    shift of ``12 + power`` (multiplier 0, the power-of-two case), or multiplier 3 and the opposite shift."""
    return (0, 12 + power) if 12 + power >= 0 else (3, -(12 + power))


def lstm_oracle(x, input_weights, recurrent_weights, bias, output_state, cell_state, params):
    """Step by step: four gates from two requantized products, the cell update, the new hidden state. int16 ``x``
    (TFLM's 16x8 LSTM): the gate sums are exact (int64) and requantized by the int64 MBQM, the hidden state is
    int16."""
    np = _np()
    p = params
    wide = x.dtype == np.int16
    lo, hi = (-32768, 32767) if wide else (-128, 127)

    def gate_fc(acc, m, s):
        if wide:
            return multiply_by_quantized_multiplier_int64(acc, m, s)
        return multiply_by_quantized_multiplier(wrap(acc, 32), m, s)
    litert = p.arithmetic.name == "LITERT"  # kernels.lstm.LstmArithmetic, read by name
    xs, w_in, w_rec = x.tolist(), input_weights.tolist(), recurrent_weights.tolist()
    n_cell = len(w_in[0])
    bias = [[0] * n_cell for _ in range(4)] if bias is None else bias.tolist()
    h_all, c_all = output_state.tolist(), cell_state.tolist()
    tanh_m, tanh_s = _tflm_cell_tanh_rescale(p.cell_scale_power)
    out = []
    for b, seq in enumerate(xs):
        h, c = h_all[b], c_all[b]
        steps = []
        for row in seq:
            gate = []
            for k in range(4):
                vals = []
                for j in range(n_cell):
                    acc = bias[k][j] + sum(w * (v - p.input_zero_point) for w, v in zip(w_in[k][j], row))
                    part_in = saturate(gate_fc(acc, p.input_multiplier[k], p.input_shift[k]), 16)
                    acc = sum(w * (v - p.output_state_zero_point) for w, v in zip(w_rec[k][j], h))
                    part_rec = gate_fc(acc, p.recurrent_multiplier[k], p.recurrent_shift[k])
                    pre = saturate(part_in + (part_rec if litert else saturate(part_rec, 16)), 16)
                    if k != 2:
                        vals.append(_lstm_sigmoid(pre, litert))
                    else:  # TFLM leaves the cell gate linear when the fused activation is not TANH
                        vals.append(_lstm_tanh(pre, litert, 3) if litert or p.cell_gate_tanh else pre)
                gate.append(vals)
            i_g, f_g, g_g, o_g = gate
            new_c, new_h = [], []
            for j in range(n_cell):
                if litert:
                    kept = wrap(rounding_divide_by_pot(f_g[j] * c[j], 15), 16)
                    added = wrap(rounding_divide_by_pot(i_g[j] * g_g[j], 30 + p.cell_scale_power), 16)
                else:
                    kept = saturate(multiply_by_quantized_multiplier(f_g[j] * c[j], p.forget_cell_multiplier,
                                                                     p.forget_cell_shift), 16)
                    added = saturate(multiply_by_quantized_multiplier(i_g[j] * g_g[j], p.input_cell_multiplier,
                                                                      p.input_cell_shift), 16)
                cell = saturate(kept + added, 16)
                if p.cell_clip is not None:
                    cell = clamp(cell, -p.cell_clip, p.cell_clip)
                new_c.append(cell)
                if litert and not 0 <= 15 + p.cell_scale_power <= 6:
                    t = i_g[j]  # LiteRT's ApplyTanh writes nothing: its output buffer still holds the input gate
                else:
                    t = _lstm_tanh(cell, litert, 15 + p.cell_scale_power, tanh_m, tanh_s)
                new_h.append(clamp(multiply_by_quantized_multiplier(t * o_g[j], p.hidden_multiplier, p.hidden_shift)
                                   + p.hidden_zero_point, lo, hi))
            h, c = new_h, new_c
            steps.append(new_h)
        out.append(steps)
        h_all[b], c_all[b] = h, c
    return np.array(out, x.dtype), np.array(h_all, x.dtype), np.array(c_all, np.int16)
