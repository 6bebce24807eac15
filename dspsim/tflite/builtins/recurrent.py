"""SVDF: a recurrent layer whose activation state is a variable tensor carried between invocations."""
from __future__ import annotations

import numpy as np

from ... import kernels
from ...engines import Kernel
from ..prepare import (Prepared, at_run, builtin, check_dtype, constant, fixed_point_multiplier, per_tensor_quant,
                       refuse)


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
    state_index = op.inputs[4]

    def run(inputs):
        out, new_state = at_run(op, kernels.svdf, inputs[0], wf, wt, bias, inputs[4], **q)
        g.state.write_variable(g.subgraph, state_index, new_state)
        return out.reshape(t_out.shape)

    return Prepared(run, q)
