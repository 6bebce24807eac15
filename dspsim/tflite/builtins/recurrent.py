"""The recurrent family's builtins: UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF.

UNIDIRECTIONAL_SEQUENCE_LSTM, int8 with int16 gates and cell (and TFLM's 16x8: int16 input and hidden state, int64
biases; LiteRT's integer LSTM takes int8 only): hidden and cell state are variable tensors.

Prepare per engine: TFLM ``micro/kernels/unidirectional_sequence_lstm.cc`` + ``lstm_eval_common.cc``
(``PrepareGateParametersInteger``, ``CreateLstmCellStateInfo``: ``Kernel.TFLM``); LiteRT
``kernels/unidirectional_sequence_lstm.cc`` (``PopulateQuantizedLstmParams8x8_16``,
``PopulatePrecomputedZPTimesWeightsWithBias``: the reference kernel; XNNPACK's delegate does not take the op,
so LiteRT's default interpreter runs the same). The arithmetic: :mod:`dspsim.kernels.recurrent.lstm`.

Tensor order (``lstm_shared.h``): 0 input; 1-4 input-to-{input, forget, cell, output} weights; 5-8 the
recurrent weights; 9-11 peephole weights; 12-15 gate biases; 16-17 projection; 18 output (hidden) state;
19 cell state; 20-23 layer-norm coefficients.

SVDF: a recurrent layer whose activation state is a variable tensor carried between invocations.
"""
from __future__ import annotations

import numpy as np

from ... import kernels
from ...engines import Defect, Kernel
from ...graph.state import initial_value
from ...kernels._common import NamedStages, sum_taps
from ...kernels.recurrent.lstm import GATES, litert_lstm_params, lstm, lstm_stages, tflm_lstm_params
from ...kernels.recurrent.svdf import svdf_stages
from ..prepare import (
    Prepared, at_prepare, at_run, builtin, check_dtype, constant, defect, fixed_point_multiplier, per_tensor_quant,
    refuse,
)


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


def _biases(op, g, n_cell, dtype):
    """The four gate biases, stacked (4, N): int32 (int64 for int16 activations)."""
    out = []
    for k, gate in enumerate(GATES):
        i = op.inputs[12 + k]
        t = None if i < 0 else g.tensor(i)
        if t is None or t.data is None or t.dtype != dtype or t.data.shape != (n_cell,):
            refuse(op, f"the {gate} gate bias must be a constant {np.dtype(dtype).name} vector of {n_cell} values")
        out.append(t.data)
    return np.stack(out).astype(dtype)


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
    tflm = g.kernel(op) is Kernel.TFLM
    dt = check_dtype(op, t_in, _INT8 + _INT16 if tflm else _INT8, "input", g)  # int16: TFLM's 16x8 LSTM only
    check_dtype(op, t_out, (dt,), "output")
    check_dtype(op, t_h, (dt,), "output_state")
    check_dtype(op, t_c, _INT16, "cell_state")
    for t, what in ((t_h, "output_state"), (t_c, "cell_state")):
        if not t.is_variable:
            refuse(op, f"{what} (tensor {t.index}) must be a variable tensor")
    w_in, s_w_in = _weights(op, g, 1, "input")
    w_rec, s_w_rec = _weights(op, g, 5, "recurrent")
    n_cell, n_input = w_in.shape[1:]
    if w_rec.shape[1:] != (n_cell, n_cell):
        refuse(op, f"recurrent weights {w_rec.shape[1:]} must be ({n_cell}, {n_cell}) (no projection)")
    bias = _biases(op, g, n_cell, np.int64 if dt == np.int16 else np.int32)
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
    if tflm:
        # any other code reaches TFLITE_ASSERT_FALSE in CalculateLstmGate: a no-op in release builds
        params = at_prepare(op, tflm_lstm_params, **scales,
                            cell_gate_tanh=op.options.get("fused_activation_function", 0) == _TANH)
    else:  # LiteRT's builtin kernel (the XNNPACK delegate leaves this op to it)
        s_hidden, z_hidden = _hidden_quant(op, g, t_h)
        params = at_prepare(op, litert_lstm_params, **scales, hidden_scale=s_hidden,
                            hidden_zero_point=z_hidden)
    h_index, c_index = op.inputs[18], op.inputs[19]
    lay = (lambda a: np.swapaxes(a, 0, 1)) if time_major else (lambda a: a)  # batch major <-> the op's layout
    reset = defect(op, g, Defect.CMSIS_NN_LSTM_STATE_RESET, "TFLM's CMSIS-NN LSTM starts every invocation from the "
                                                             "reset state and never writes its hidden and cell state "
                                                             "tensors")
    stages_shape = tuple(t_in.shape[:2]) + (4, n_cell)  # (b, t, gate, unit) in the op's layout
    if reset:
        h_reset, c_reset = (initial_value(t).reshape(n_batch, n_cell) for t in (t_h, t_c))

    def states(inputs):
        """The hidden and cell state the op starts from."""
        if reset:
            return h_reset, c_reset
        return inputs[18].reshape(n_batch, n_cell), inputs[19].reshape(n_batch, n_cell)

    def stages(inputs, tap=None):
        x, (h0, c0) = lay(inputs[0]), states(inputs)
        st = at_run(op, lstm_stages, x, w_in, w_rec, bias, h0, c0, params)[3]
        taps = None
        if tap is not None:  # (b, t, gate, unit) of the op's layout: the input FC's taps, then the recurrent FC's
            i0, i1, k, j = np.unravel_index(tap, stages_shape)
            b, t = (i1, i0) if time_major else (i0, i1)
            h_prev = h0[b] if t == 0 else st["hidden"][b, t - 1]
            bits = None if dt == np.int16 else 32
            taps = sum_taps(f"operator {op.index} (UNIDIRECTIONAL_SEQUENCE_LSTM)",
                            [(x[b, t], w_in[k, j], params.input_zero_point, 0, 0, 0, bits,
                              st["in_acc"][b, t, k, j]),
                             (h_prev, w_rec[k, j], params.output_state_zero_point, 0, 3, 0, bits,
                              st["rec_acc"][b, t, k, j])])
        return NamedStages({name: lay(a) for name, a in st.items()}, taps)

    if reset:
        def stateless(inputs):
            out = at_run(op, lstm, lay(inputs[0]), w_in, w_rec, bias, h_reset, c_reset, params)[0]
            return np.ascontiguousarray(lay(out))
        return Prepared(stateless, {"params": params, "time_major": time_major, "state": "reset every invocation"},
                        stages=stages, stages_shape=stages_shape)

    def run(inputs):
        out, h, c = at_run(op, lstm, lay(inputs[0]), w_in, w_rec, bias, *states(inputs), params)
        g.state.write_variable(g.subgraph, h_index, h.reshape(t_h.shape))
        g.state.write_variable(g.subgraph, c_index, c.reshape(t_c.shape))
        return np.ascontiguousarray(lay(out))

    return Prepared(run, {"params": params, "time_major": time_major}, stages=stages, stages_shape=stages_shape)


@builtin("SVDF")
def prepare_svdf(op, g):
    if len(op.inputs) != 5 or len(op.outputs) != 1 or min(op.inputs[:3] + op.inputs[4:]) < 0:
        refuse(op, "expects input, weights_feature, weights_time, bias (optional) and activation_state, one output")
    t_in, t_wf, t_wt, t_state = (g.tensor(op.inputs[k]) for k in (0, 1, 2, 4))
    t_out = g.tensor(op.outputs[0])
    check_dtype(op, t_in, (np.dtype(np.int8),), "input")
    check_dtype(op, t_out, (np.dtype(np.int8),), "output")
    check_dtype(op, t_state, (np.dtype(np.int16), np.dtype(np.int8)), "activation_state")
    if not t_state.is_variable:
        refuse(op, f"activation_state (tensor {t_state.index}) must be a variable tensor")
    wf = constant(op, g, 1, "weights_feature")
    wt = constant(op, g, 2, "weights_time")
    bias = constant(op, g, 3, "bias")
    if wf is None or wt is None or wf.dtype != np.int8 or wt.dtype != t_state.dtype or wf.ndim != 2 or wt.ndim != 2:
        refuse(op, "weights_feature must be constant int8 (F, I) and weights_time constant (F, M) of the state's type")
    rank = op.options.get("rank", 0)
    if rank < 1 or wf.shape[0] % rank or wt.shape[0] != wf.shape[0]:
        refuse(op, f"rank {rank} does not divide the {wf.shape[0]} filters (or the weights disagree)")
    if len(t_in.shape) != 2 or t_in.shape[1] != wf.shape[1] or int(np.prod(t_state.shape)) != \
            t_in.shape[0] * wf.shape[0] * wt.shape[1]:
        refuse(op, f"input {t_in.shape}, weights {wf.shape} / {wt.shape} and state {t_state.shape} do not fit")
    (s_in, zi), (s_wf, _), (s_wt, _), (s_st, zs), (s_out, zo) = (
        per_tensor_quant(op, t, w) for t, w in ((t_in, "input"), (t_wf, "weights_feature"), (t_wt, "weights_time"),
                                                 (t_state, "activation_state"), (t_out, "output")))
    if bias is not None:
        t_b = g.tensor(op.inputs[3])
        if bias.dtype != np.int32 or (t_b.scale.size and
                                      abs(float(t_b.scale[0]) - float(np.float32(s_st * s_wt))) >= 1e-5):
            refuse(op, "bias must be int32 with scale activation_state_scale * weights_time_scale (TFLM's check)")
    if g.kernel(op) is not Kernel.TFLM:  # LiteRT's reference SVDF (and its default interpreter's)
        if op.options.get("fused_activation_function", 0) != 1:
            refuse(op, "LiteRT's integer SVDF requires a fused RELU (svdf.cc: params->activation != kTfLiteActRelu)")
        if t_state.dtype == np.int8:
            refuse(op, "LiteRT's reference SVDF with an int8 state reads it out of bounds (undefined behaviour: its "
                       "outputs change from run to run); TFLM's kernel runs this model")
        # LiteRT: float32 products and quotients, then double
        reals = (np.float32(np.float32(s_in * s_wf) / s_st), np.float32(np.float32(s_st * s_wt) / s_out))
    else:  # the tflite-micro interpreter: the products of the float32 scales in double (golden vectors)
        reals = (np.float64(s_in) * np.float64(s_wf) / np.float64(s_st),
                 np.float64(s_st) * np.float64(s_wt) / np.float64(s_out))
    (m1, s1), (m2, s2) = (fixed_point_multiplier(op, r) for r in reals)
    q = dict(rank=rank, input_zero_point=zi, state_zero_point=zs, output_zero_point=zo, feature_multiplier=m1,
             feature_shift=s1, output_multiplier=m2, output_shift=s2)
    if t_state.dtype == np.int8 and defect(op, g, Defect.CMSIS_NN_SVDF_INT8_STATE,
                                           "CMSIS-NN's arm_svdf_s8 ignores the int8 state's zero point and wraps new "
                                           "state entries outside int8 (clamped to int16, then truncated)"):
        q.update(state_zero_point=0, activation_range=(-(1 << 15), (1 << 15) - 1))
        if defect(op, g, Defect.CMSIS_NN_SVDF_MVE_KERNEL_SUMS, "CMSIS-NN's Helium SVDF adds input_zp * state_zp * "
                                                                "input_size to every feature sum"):
            q["feature_offset"] = int(np.int32(np.int64(zi) * zs * t_in.shape[1]))
    state_index = op.inputs[4]

    def run(inputs):
        out, new_state = at_run(op, kernels.svdf, inputs[0], wf, wt, bias, inputs[4], **q)
        g.state.write_variable(g.subgraph, state_index, new_state)
        return out.reshape(t_out.shape)

    def stages(inputs, tap=None):
        _, new_state, st = at_run(op, svdf_stages, inputs[0], wf, wt, bias, inputs[4], **q)
        taps = None
        if tap is not None:  # (b, filter): the feature FC's taps, then the time FC's over the shifted state
            b, f = np.unravel_index(tap, st["time_acc"].shape)
            taps = sum_taps(f"operator {op.index} (SVDF)",
                            [(inputs[0][b], wf[f], zi, 0, 0, q.get("feature_offset", 0), 32, st["feature_acc"][b, f]),
                             (new_state.reshape(st["time_acc"].shape + (-1,))[b, f], wt[f], q["state_zero_point"], 0,
                              3, 0, 32, st["time_acc"][b, f])])
        return NamedStages(st, taps)

    return Prepared(run, q, stages=stages, stages_shape=(t_in.shape[0], wf.shape[0]))
