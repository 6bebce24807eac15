"""ADD and MUL (int8 / uint8 / int16, broadcasting).

Per kernel (``g.kernel(op)``): TFLite's reference (LiteRT; its int16 ADD takes the shift-only kernel on
power-of-two scales), TFLM's (int16 ADD always the general path, any zero points; int16 MUL's multiplier from
double products), XNNPACK's (``qs8-vadd`` / ``qs8-vmul`` where its delegate takes the scales).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...kernels import elementwise, int16
from ...engines import Kernel
from ..prepare import (Prepared, activation_range, at_prepare, builtin, check_arity, check_int_types,
                       fixed_point_multiplier, per_tensor_quant, refuse, xnnpack_delegates)
from ._lean import binary_run


def _binary(op, g):
    check_arity(op, 2)
    check_int_types(op, g, ("input1", "input2"), (np.dtype(np.int8), np.dtype(np.uint8)))
    t1, t2, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    if not (t1.dtype == t2.dtype == t_out.dtype):
        refuse(op, "inputs and output must share one type")
    (s1, z1), (s2, z2), (so, zo) = (per_tensor_quant(op, t, w) for t, w in
                                    ((t1, "input1"), (t2, "input2"), (t_out, "output")))
    lo, hi = activation_range(op, op.options.get("fused_activation_function", 0), t_out)
    return t_out, s1, z1, s2, z2, so, zo, lo, hi


_INT16 = np.dtype(np.int16)


def _binary_int16(op, g, tflm_needs_zero_points=True):
    """An int16 ADD / MUL: the quantization and fused range. Zero points must be 0 in TFLite's reference
    Prepare (ADD, MUL) and TFLM's MUL (``mul_common.cc``); TFLM's ADD takes any."""
    check_arity(op, 2)
    check_int_types(op, g, ("input1", "input2"), (_INT16,))
    t_out = g.tensor(op.outputs[0])
    (s1, z1), (s2, z2), (so, zo) = (per_tensor_quant(op, g.tensor(i), w) for i, w in
                                    zip((*op.inputs, op.outputs[0]), ("input1", "input2", "output")))
    if (g.kernel(op) is not Kernel.TFLM or tflm_needs_zero_points) and (z1, z2, zo) != (0, 0, 0):
        refuse(op, f"int16 {op.name} needs zero points 0, got {z1}, {z2}, {zo}")
    lo, hi = activation_range(op, op.options.get("fused_activation_function", 0), t_out)
    return t_out, s1, z1, s2, z2, so, zo, lo, hi


def _prepare_add_int16(op, g):
    """int16 ADD. TFLM (``add_common.cc``) always takes the general path, ``left_shift = 15``; LiteRT
    (``add.cc``, every resolver) takes the shift-only kernel when ``pot_scale_int16`` is set and all three
    scales are powers of two, the general path otherwise."""
    t_out, s1, z1, s2, z2, so, zo, lo, hi = _binary_int16(op, g, tflm_needs_zero_points=False)
    if g.kernel(op) is not Kernel.TFLM and op.options.get("pot_scale_int16", 1) \
            and all(int16.checked_log2(s)[1] for s in (s1, s2, so)):
        params = at_prepare(op, int16.tflite_pot_add_params, s1, s2, so)
        if tuple(g.tensor(op.inputs[0]).shape) != tuple(g.tensor(op.inputs[1]).shape):
            refuse(op, "LiteRT's int16 power-of-two ADD kernel does not broadcast")
        q = dict(act_min=lo, act_max=hi)
        return Prepared(binary_run(op, g, int16.pot_add_plan, params, **q), {**q, **dataclasses.asdict(params)})
    zps = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo, act_max=hi)
    params = at_prepare(op, elementwise.tflite_add_params, s1, s2, so, left_shift=15)
    return Prepared(binary_run(op, g, elementwise.add_plan, params, **zps), {**zps, **dataclasses.asdict(params)})


def _is_int16(op, g):
    return len(op.inputs) > 0 and op.inputs[0] >= 0 and g.tensor(op.inputs[0]).dtype == _INT16


@builtin("ADD")
def prepare_add(op, g):
    if _is_int16(op, g):
        return _prepare_add_int16(op, g)
    t_out, s1, z1, s2, z2, so, zo, lo, hi = _binary(op, g)
    zps = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo, act_max=hi)
    if g.kernel(op) is Kernel.XNNPACK and xnnpack_delegates((s1 / so, s2 / so), 2.0**-10, 2.0**8):  # qs8, qu8-vadd
        xp = elementwise.xnnpack_add_params(s1, s2, so)
        return Prepared(binary_run(op, g, elementwise.xnnpack_add_plan, xp, **zps), {**zps, **dataclasses.asdict(xp)})
    params = at_prepare(op, elementwise.tflite_add_params, s1, s2, so)
    return Prepared(binary_run(op, g, elementwise.add_plan, params, **zps), {**zps, **dataclasses.asdict(params)})


@builtin("MUL")
def prepare_mul(op, g):
    int16_mul = _is_int16(op, g)
    t_out, s1, z1, s2, z2, so, zo, lo, hi = (_binary_int16 if int16_mul else _binary)(op, g)
    real = np.float32(np.float32(s1 * s2) / so)
    if int16_mul and g.kernel(op) is Kernel.TFLM:  # mul_common.cc: double(s1) * double(s2) / double(s_out)
        real = np.float64(s1) * np.float64(s2) / np.float64(so)
    if g.kernel(op) is Kernel.XNNPACK and not int16_mul and xnnpack_delegates((real,), 2.0**-16, 2.0**8):
        q = dict(scale=real)  # qs8-vmul fp32 kernels
    else:
        m, s = fixed_point_multiplier(op, real)
        q = dict(multiplier=m, shift=s)
    q.update(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo, act_max=hi)
    return Prepared(binary_run(op, g, elementwise.mul_plan, **q), q)
