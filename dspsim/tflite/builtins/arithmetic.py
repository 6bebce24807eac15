"""The arithmetic family's builtins: ADD, MUL, SUB, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM.

ADD and MUL (int8 / uint8 / int16, broadcasting); ADD, SUB and MUL on unquantized int32 tensors (wrapping, the fused
activation's int32 range; TFLM's int32 ADD ignores its fused activation); float32 MUL, one IEEE product per element
(``arithmetic_rest.prepare_float_binary``, as float32 DIV).

Per kernel (``g.kernel(op)``): TFLite's reference (LiteRT; its int16 ADD takes the shift-only kernel on
power-of-two scales), TFLM's (int16 ADD always the general path, any zero points; int16 MUL's multiplier from
double products), XNNPACK's (``qs8-vadd`` / ``qs8-vmul`` where its delegate takes the scales), LiteRT's optimized
8-bit ADD and MUL (engine "litert-optimized", and the XNNPACK engine's ADDs and MULs its delegate leaves: NEON
blocks that wrap beyond int16). TFLM's MUL takes its multiplier from double products for every type.

SUB, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM (int8; uint8 where LiteRT takes it; MAXIMUM / MINIMUM also plain int32),
with broadcasting.

Per kernel (``g.kernel(op)``; uint8 only where the engine's kernels take it, ``TfliteProfile.takes_uint8``;
docs/engines.md, "Arithmetic operators"):

* SUB: LiteRT ``sub.cc`` derives the multipliers from double quotients; so does the tflite-micro
  wheel (measured: ``tests/golden/ops/arith.npz`` ``sub_tflm_quotients_all_pairs``), although
  tflite-micro's ``sub_common.cc`` divides in float32, which a GCC build of the source computes
  (``TfliteProfile.quotient``; engine "tflm-cmsis-nn"). LiteRT's XNNPACK delegate takes
  an int8 or uint8 SUB whose scale ratios lie in [2^-10, 2^8) and runs ``qs8-vadd`` / ``qu8-vadd`` (same
  parameters) with input 2 negated.
* SQUARED_DIFFERENCE: LiteRT refuses an output multiplier >= 1, tflite-micro shifts left; XNNPACK
  takes float SQUARED_DIFFERENCE only. int16 (zero points 0, left shift 0): tflite-micro only, LiteRT refuses it.
* MAXIMUM / MINIMUM: the codes compared; XNNPACK takes the float ops only. ``MaximumMinimumBroadcastSlow``
  is declared for N = 5 dimensions, yet all three engines computed rank-6 broadcasts correctly
  (measured), so rank <= 6 is taken as for the other binary ops.
"""
from __future__ import annotations

import dataclasses
import math
import numpy as np

from ...engines import Kernel
from ...kernels.arithmetic import elementwise, pot_add as int16, binary, wrapping
from ..prepare import (
    Prepared, activation_range, at_prepare, builtin, check_arity, check_int_types, fixed_point_multiplier,
    per_tensor_quant, refuse, xnnpack_delegates,
)
from ._lean import binary_run
from .arithmetic_rest import prepare_float_binary


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


_INT32 = np.dtype(np.int32)
#: CalculateActivationRange<int32_t> of each fused activation code (None: the whole range)
_INT32_ACTIVATIONS = {0: (None, None), 1: (0, None), 2: (-1, 1), 3: (0, 6)}


def _is_int32(op, g):
    return len(op.inputs) > 0 and op.inputs[0] >= 0 and g.tensor(op.inputs[0]).dtype == _INT32


def _prepare_int32(op, g, kind):
    """Unquantized int32 ADD / SUB / MUL: wrapping arithmetic, the fused activation's int32 range. TFLM's ADD
    ignores the fused activation on int32 (``add.cc`` sets the whole int32 range; measured)."""
    check_arity(op, 2)
    check_int_types(op, g, ("input1", "input2"), (_INT32,))
    code = op.options.get("fused_activation_function", 0)
    if code not in _INT32_ACTIVATIONS:
        refuse(op, f"fused activation {code} (TANH/SIGN_BIT) is not supported")
    lo, hi = _INT32_ACTIVATIONS[code]
    if kind is wrapping.IntegerOp.ADD and g.kernel(op) is Kernel.TFLM:
        lo, hi = None, None
    q = dict(act_min=lo, act_max=hi)
    return Prepared(binary_run(op, g, wrapping.integer_binary_plan, kind, **q), q)


@builtin("ADD")
def prepare_add(op, g):
    if _is_int32(op, g):
        return _prepare_int32(op, g, wrapping.IntegerOp.ADD)
    if _is_int16(op, g):
        return _prepare_add_int16(op, g)
    t_out, s1, z1, s2, z2, so, zo, lo, hi = _binary(op, g)
    zps = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo, act_max=hi)
    if g.kernel(op) is Kernel.XNNPACK and xnnpack_delegates((s1 / so, s2 / so), 2.0**-10, 2.0**8):  # qs8, qu8-vadd
        xp = elementwise.xnnpack_add_params(s1, s2, so)
        return Prepared(binary_run(op, g, elementwise.xnnpack_add_plan, xp, **zps), {**zps, **dataclasses.asdict(xp)})
    params = at_prepare(op, elementwise.tflite_add_params, s1, s2, so)
    # LiteRT's optimized kernel: for engine "litert-optimized", and where the XNNPACK delegate leaves the node
    optimized = g.kernel(op) in (Kernel.LITERT_OPTIMIZED, Kernel.XNNPACK)
    plan = elementwise.litert_optimized_add_plan if optimized else elementwise.add_plan
    return Prepared(binary_run(op, g, plan, params, **zps), {**zps, **dataclasses.asdict(params)})


@builtin("MUL")
def prepare_mul(op, g):
    if _is_int32(op, g):
        return _prepare_int32(op, g, wrapping.IntegerOp.MUL)
    if op.inputs and op.inputs[0] >= 0 and g.tensor(op.inputs[0]).dtype == np.float32:  # an IEEE product per element
        return prepare_float_binary(op, g, np.multiply, (np.dtype(np.float32), _INT32, np.dtype(np.int8),
                                                         np.dtype(np.int16)))
    int16_mul = _is_int16(op, g)
    t_out, s1, z1, s2, z2, so, zo, lo, hi = (_binary_int16 if int16_mul else _binary)(op, g)
    real = np.float32(np.float32(s1 * s2) / so)
    if g.kernel(op) is Kernel.TFLM:  # mul_common.cc: double(s1) * double(s2) / double(s_out), every type
        real = np.float64(s1) * np.float64(s2) / np.float64(so)
    plan = elementwise.mul_plan
    if g.kernel(op) is Kernel.XNNPACK and not int16_mul and xnnpack_delegates((real,), 2.0**-16, 2.0**8):
        q = dict(scale=real)  # qs8-vmul fp32 kernels
    else:
        m, s = fixed_point_multiplier(op, real)
        q = dict(multiplier=m, shift=s)
        if g.kernel(op) in (Kernel.LITERT_OPTIMIZED, Kernel.XNNPACK) and not int16_mul:  # mul.cc: int16 reference
            plan = elementwise.litert_optimized_mul_plan
    q.update(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo, act_max=hi)
    return Prepared(binary_run(op, g, plan, **q), q)


_INT8 = np.dtype(np.int8)


def _check_rank(op, g, max_rank):
    for k in (i for i in op.inputs if i >= 0):
        t = g.tensor(k)
        if len(t.shape) > max_rank:
            refuse(op, f"input tensor {k} has rank {len(t.shape)}; the engine's broadcasting kernel takes rank <= "
                       f"{max_rank}")


def _int8_only(op, t_out, why):
    if t_out.dtype != _INT8:
        refuse(op, f"{t_out.type_name} is not supported ({why}); int8 only")


def _is_pot(scale):
    """LiteRT's ``CheckedLog2``: |log2(s) - round(log2(s))| < 1e-3."""
    v = math.log2(float(scale))
    return abs(v - round(v)) < 1e-3


def _sub_quotient(op, g):
    """LiteRT's sub.cc divides in double; TFLM's sub_common.cc ``float / float``, as the engine's build evaluates it
    (``TfliteProfile.quotient``)."""
    return g.tflite.quotient if g.kernel(op) is Kernel.TFLM else "double"


def _prepare_sub_int16(op, g):
    """int16 SUB, general scales: ``left_shift = 15`` (LiteRT ``PrepareGeneralSubOp``, TFLM
    ``CalculateOpDataSub``); LiteRT requires zero points 0 and takes power-of-two scales (with
    ``pot_scale_int16``, the default) to its shift-only ``Sub16`` kernel (:func:`dspsim.kernels.arithmetic.pot_add.pot_add`
    with ``subtract``)."""
    check_arity(op, 2)
    check_int_types(op, g, ("input1", "input2"), (_INT16,))
    t_out = g.tensor(op.outputs[0])
    (s1, z1), (s2, z2), (so, zo) = (per_tensor_quant(op, g.tensor(i), w) for i, w in
                                    zip((*op.inputs, op.outputs[0]), ("input1", "input2", "output")))
    tflm = g.kernel(op) is Kernel.TFLM
    if not tflm and (z1, z2, zo) != (0, 0, 0):
        refuse(op, "int16 SUB needs zero points 0 (LiteRT sub.cc)")
    lo, hi = activation_range(op, op.options.get("fused_activation_function", 0), t_out)
    if not tflm and op.options.get("pot_scale_int16", 1) and all(_is_pot(s) for s in (s1, s2, so)):
        pot = at_prepare(op, int16.tflite_pot_add_params, s1, s2, so)  # LiteRT sub.cc PrepareInt16SubOpPOT
        q = dict(act_min=lo, act_max=hi, subtract=True)
        return Prepared(binary_run(op, g, int16.pot_add_plan, pot, **q), {**q, **dataclasses.asdict(pot)})
    zps = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo, act_max=hi)
    params = at_prepare(op, binary.tflite_sub_params, s1, s2, so, left_shift=15, quotient=_sub_quotient(op, g))
    return Prepared(binary_run(op, g, binary.sub_plan, params, **zps), {**zps, **dataclasses.asdict(params)})


@builtin("SUB")
def prepare_sub(op, g):
    _check_rank(op, g, 6)
    if _is_int32(op, g):
        return _prepare_int32(op, g, wrapping.IntegerOp.SUB)
    if op.inputs and op.inputs[0] >= 0 and g.tensor(op.inputs[0]).dtype == _INT16:
        return _prepare_sub_int16(op, g)
    t_out, s1, z1, s2, z2, so, zo, lo, hi = _binary(op, g)
    zps = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo, act_max=hi)
    if g.kernel(op) is Kernel.XNNPACK and xnnpack_delegates((s1 / so, s2 / so), 2.0**-10, 2.0**8):  # qs8/qu8-vadd
        xp = binary.xnnpack_sub_params(s1, s2, so)
        return Prepared(binary_run(op, g, elementwise.xnnpack_add_plan, xp, **zps), {**zps, **dataclasses.asdict(xp)})
    params = at_prepare(op, binary.tflite_sub_params, s1, s2, so, quotient=_sub_quotient(op, g))
    return Prepared(binary_run(op, g, binary.sub_plan, params, **zps), {**zps, **dataclasses.asdict(params)})


@builtin("SQUARED_DIFFERENCE")
def prepare_squared_difference(op, g):
    tflm = g.kernel(op) is Kernel.TFLM
    if _is_int16(op, g):  # tflite-micro only (squared_difference.cc, left shift 0); LiteRT refuses int16
        if not tflm:
            refuse(op, "LiteRT's SquaredDifference takes float32, int32 and int8, not int16")
        t_out, s1, z1, s2, z2, so, zo, _, _ = _binary_int16(op, g)
    else:
        t_out, s1, z1, s2, z2, so, zo, _, _ = _binary(op, g)
        _int8_only(op, t_out, "the quantized SquaredDifference kernels are int8")
    _check_rank(op, g, 6)
    params = at_prepare(op, binary.tflite_squared_difference_params, s1, s2, so, output_multiplier_below_one=not tflm,
                        left_shift=0 if t_out.dtype == _INT16 else 7)
    zps = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo)
    return Prepared(binary_run(op, g, binary.squared_difference_plan, params, **zps),
                    {**zps, **dataclasses.asdict(params)})


def _prepare_max_min(op, g, fn):
    if g.tensor(op.inputs[0]).dtype == np.int32:  # plain int32 values (TFLM's and LiteRT's int32 kernels)
        check_arity(op, 2)
        check_int_types(op, g, ("input1", "input2"), (np.dtype(np.int32),))
    else:
        _binary(op, g)
    _check_rank(op, g, 6)
    return Prepared(binary_run(op, g, fn), {})


@builtin("MAXIMUM")
def prepare_maximum(op, g):
    return _prepare_max_min(op, g, binary.maximum_plan)


@builtin("MINIMUM")
def prepare_minimum(op, g):
    return _prepare_max_min(op, g, binary.minimum_plan)
