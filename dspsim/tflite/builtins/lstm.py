"""UNIDIRECTIONAL_SEQUENCE_LSTM, int8 with int16 gates and cell: hidden and cell state are variable tensors.

Prepare per engine: TFLM ``micro/kernels/unidirectional_sequence_lstm.cc`` + ``lstm_eval_common.cc``
(``PrepareGateParametersInteger``, ``CreateLstmCellStateInfo``: ``Kernel.TFLM``); LiteRT
``kernels/unidirectional_sequence_lstm.cc`` (``PopulateQuantizedLstmParams8x8_16``,
``PopulatePrecomputedZPTimesWeightsWithBias``: the reference kernel; XNNPACK's delegate does not take the op,
so LiteRT's default interpreter runs the same). The arithmetic: :mod:`dspsim.kernels.lstm`.

Tensor order (``lstm_shared.h``): 0 input; 1-4 input-to-{input, forget, cell, output} weights; 5-8 the
recurrent weights; 9-11 peephole weights; 12-15 gate biases; 16-17 projection; 18 output (hidden) state;
19 cell state; 20-23 layer-norm coefficients.
"""
from __future__ import annotations

import numpy as np

from ...kernels.lstm import GATES, litert_lstm_params, lstm, tflm_lstm_params
from ...engines import Kernel
from ..prepare import Prepared, at_prepare, at_run, builtin, check_dtype, per_tensor_quant, refuse

_INT8, _INT16, _INT32 = (np.dtype(np.int8),), (np.dtype(np.int16),), (np.dtype(np.int32),)
_TANH = 4  # ActivationFunctionType TANH: the only cell-gate activation TFLM's CalculateLstmGate applies


def _weights(op, g, first, what):
    """The four (N, K) int8 weight matrices from input ``first`` on, stacked (4, N, K), and their scales."""
    mats, scales = [], []
    for k, gate in enumerate(GATES):
        i = op.inputs[first + k]
        if i < 0:
            refuse(op, f"the {gate} gate's {what} weights are absent (CIFG LSTM is not supported)")
        t = g.tensor(i)
        check_dtype(op, t, _INT8, f"{gate} {what} weights")
        if t.data is None or t.data.ndim != 2:
            refuse(op, f"the {gate} gate's {what} weights (tensor {i}) must be a constant 2-D matrix")
        s, zp = per_tensor_quant(op, t, f"{gate} {what} weights")
        if zp != 0:
            refuse(op, f"the {gate} gate's {what} weights have zero point {zp}; integer LSTM weights are symmetric")
        mats.append(t.data)
        scales.append(float(s))
    if len({m.shape for m in mats}) != 1:
        refuse(op, f"the four {what} weight matrices have different shapes {[m.shape for m in mats]}")
    return np.stack(mats), scales


def _biases(op, g, n_cell):
    out = []
    for k, gate in enumerate(GATES):
        i = op.inputs[12 + k]
        t = None if i < 0 else g.tensor(i)
        if t is None or t.data is None or t.dtype != np.int32 or t.data.shape != (n_cell,):
            refuse(op, f"the {gate} gate bias must be a constant int32 vector of {n_cell} values")
        out.append(t.data)
    return np.stack(out).astype(np.int32)


def _hidden_quant(op, g, t_state):
    """LiteRT reads the hidden scale and zero point from intermediate tensor 4; the converter writes the
    output state's quantization there when there is no projection, which is what is used when the
    model reader does not expose the intermediates."""
    inter = getattr(op, "intermediates", None)
    if inter is None:
        return per_tensor_quant(op, t_state, "output_state")
    if len(inter) != 5:
        refuse(op, f"LiteRT needs 5 intermediate tensors for an integer LSTM, the op has {len(inter)}")
    return per_tensor_quant(op, g.tensor(inter[4]), "intermediate 4 (effective_hidden_scale_intermediate)")


@builtin("UNIDIRECTIONAL_SEQUENCE_LSTM")
def prepare_unidirectional_sequence_lstm(op, g):
    if len(op.inputs) != 24 or len(op.outputs) != 1:
        refuse(op, f"expects 24 inputs and 1 output, has {len(op.inputs)} and {len(op.outputs)}")
    for k, what in ((9, "peephole"), (10, "peephole"), (11, "peephole"), (16, "projection"), (17, "projection"),
                    (20, "layer norm"), (21, "layer norm"), (22, "layer norm"), (23, "layer norm")):
        if op.inputs[k] >= 0:
            refuse(op, f"input {k} ({what}) is present; only the LSTM without peephole, projection and layer "
                       "normalisation is supported")
    if min(op.inputs[0], op.inputs[18], op.inputs[19]) < 0:
        refuse(op, "the input, output state and cell state must be present")
    t_in, t_h, t_c, t_out = (g.tensor(i) for i in (op.inputs[0], op.inputs[18], op.inputs[19], op.outputs[0]))
    check_dtype(op, t_in, _INT8, "input")
    check_dtype(op, t_out, _INT8, "output")
    check_dtype(op, t_h, _INT8, "output_state")
    check_dtype(op, t_c, _INT16, "cell_state")
    for t, what in ((t_h, "output_state"), (t_c, "cell_state")):
        if not t.is_variable:
            refuse(op, f"{what} (tensor {t.index}) must be a variable tensor")
    w_in, s_w_in = _weights(op, g, 1, "input")
    w_rec, s_w_rec = _weights(op, g, 5, "recurrent")
    n_cell, n_input = w_in.shape[1:]
    if w_rec.shape[1:] != (n_cell, n_cell):
        refuse(op, f"recurrent weights {w_rec.shape[1:]} must be ({n_cell}, {n_cell}) (no projection)")
    bias = _biases(op, g, n_cell)
    time_major = bool(op.options.get("time_major", 0))
    if len(t_in.shape) != 3 or t_in.shape[2] != n_input:
        refuse(op, f"input shape {t_in.shape} must be 3-D with {n_input} features")
    n_batch = t_in.shape[1] if time_major else t_in.shape[0]
    if int(np.prod(t_h.shape)) != n_batch * n_cell or int(np.prod(t_c.shape)) != n_batch * n_cell:
        refuse(op, f"the states {t_h.shape} / {t_c.shape} must hold batch x cells = {n_batch} x {n_cell} values")
    if tuple(t_out.shape) != tuple(t_in.shape[:2]) + (n_cell,):
        refuse(op, f"output shape {t_out.shape} must be {tuple(t_in.shape[:2]) + (n_cell,)}")
    (s_in, zi), (s_h, zh), (s_c, _) = (per_tensor_quant(op, t, w) for t, w in
                                       ((t_in, "input"), (t_h, "output_state"), (t_c, "cell_state")))
    scales = dict(input_scale=s_in, input_zero_point=zi, input_weight_scales=s_w_in,
                  recurrent_weight_scales=s_w_rec, output_state_scale=s_h, output_state_zero_point=zh,
                  cell_state_scale=s_c, cell_clip=op.options.get("cell_clip", 0.0))
    if g.kernel(op) is Kernel.TFLM:
        # any other code reaches TFLITE_ASSERT_FALSE in CalculateLstmGate: a no-op in release builds
        params = at_prepare(op, tflm_lstm_params, **scales,
                            cell_gate_tanh=op.options.get("fused_activation_function", 0) == _TANH)
    else:  # LiteRT's builtin kernel (the XNNPACK delegate leaves this op to it)
        s_hidden, z_hidden = _hidden_quant(op, g, t_h)
        params = at_prepare(op, litert_lstm_params, **scales, hidden_scale=s_hidden,
                            hidden_zero_point=z_hidden)
    h_index, c_index = op.inputs[18], op.inputs[19]

    def run(inputs):
        x = np.swapaxes(inputs[0], 0, 1) if time_major else inputs[0]
        out, h, c = at_run(op, lstm, x, w_in, w_rec, bias, inputs[18].reshape(n_batch, n_cell),
                           inputs[19].reshape(n_batch, n_cell), params)
        g.state.write_variable(g.subgraph, h_index, h.reshape(t_h.shape))
        g.state.write_variable(g.subgraph, c_index, c.reshape(t_c.shape))
        return np.ascontiguousarray(np.swapaxes(out, 0, 1)) if time_major else out

    return Prepared(run, {"params": params, "time_major": time_major})
