"""The MAC family's builtins: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, BATCH_MATMUL, TRANSPOSE_CONV.

CONV_2D and DEPTHWISE_CONV_2D (int8 x int8 -> int8, per-channel weights; 16x8: int16 activations, int64 bias).

The engine's MAC rule of each family (``g.mac("conv_2d")``, ``g.mac("depthwise_conv_2d")``) gives the
requantization, the accumulator and the bias width. 16x8 (``reference_integer_ops::ConvPerChannel`` /
``DepthwiseConvPerChannel`` on int16 in every engine here): an int64 accumulator and the int64
``MultiplyByQuantizedMultiplier`` (``Requant`` scheme "int64"); zero points 0.

FULLY_CONNECTED (int8 x int8 -> int8; 16x8: int16 activations, int64 bias).

The engine's MAC rule for the family (``g.mac("fully_connected")``) gives the requantization (8-bit and 16x8),
the accumulator and the bias width: LiteRT's reference kernel requantizes in double (``"double_scale"``,
docs/engines.md), TFLM with ``MultiplyByQuantizedMultiplier`` (its 16x8 with the multiplier reduced to 16
bits), XNNPACK in float32.

BATCH_MATMUL and TRANSPOSE_CONV (int8).

BATCH_MATMUL: LiteRT and tflite-micro run the same reference kernel with the same multiplier
(:mod:`dspsim.kernels.mac.batch_matmul`). LiteRT's default interpreter gave the same integers on every
golden case, with the rhs zero point non-zero (``VisitBatchMatMulNode`` refuses those) and zero
(``arith_batch_matmul_rhs_zp0``, two dynamic inputs), so every engine here runs the same kernel.

TRANSPOSE_CONV: see :mod:`dspsim.kernels.mac.transpose_conv`; the engine's MAC rule of the family
(``g.mac("transpose_conv")``) gives the requantization of int8 layers (its int16 ones: TFLite's fixed point).
"""
from __future__ import annotations

import numpy as np

from ... import kernels
from ...engines import Defect, RequantKind
from ...kernels._common import geometry
from ...kernels.mac.batch_matmul import batch_matmul_plan
from ...kernels.mac.transpose_conv import RowFlush, transpose_conv, transpose_conv_stages
from ...accumulator import Accumulator
from ...requant import Requant
from ..prepare import (
    Prepared, activation_range, at_prepare, at_run, builtin, check_arity, check_int_types, constant, mac_bias,
    narrow_16x8_bias,
    has_int4_weights, mac_requant, padding_name, per_tensor_quant, refuse, requant_params, weight_scales,
    check_dtype, check_shape,
    fixed_point_multiplier, defect, mac_rule,
)
from ._lean import binary_run, planned


FAMILY = {"CONV_2D": "conv_2d", "DEPTHWISE_CONV_2D": "depthwise_conv_2d"}
"""The MAC family of each operator."""

_BYTES = (np.dtype(np.int8), np.dtype(np.uint8))


def _activation_types(op, g):
    """The input's type decides the layer's types: int16 (16x8), uint8 (legacy asymmetric: uint8 weights, one
    scale and zero point each) or int8; the weights' type that goes with it."""
    dt = g.tensor(op.inputs[0]).dtype if len(op.inputs) > 0 and op.inputs[0] >= 0 else None
    allowed = (np.dtype(np.int16),) if dt == np.int16 else _BYTES
    check_int_types(op, g, allowed=allowed)
    if dt == np.uint8 or g.tensor(op.outputs[0]).dtype == np.uint8:
        check_dtype(op, g.tensor(op.outputs[0]), (dt,), "output")
        return dt, np.dtype(np.uint8)
    return dt, np.dtype(np.int8)


def _check_uint8_scales(op, g, t_w, s_in, s_w, s_out):
    """uint8 layers (``PopulateConvolutionQuantizationParams`` / ``GetQuantizedConvolutionMultipler``): per-tensor
    weights only, and a bias scale within 0.02 output LSB of ``s_in * s_w`` where the engine derives a fixed-point
    multiplier (XNNPACK's delegate, a float32 requantization, takes the layer before that check)."""
    if np.ndim(s_w):
        refuse(op, "uint8 weights are quantized per channel; LiteRT takes per-channel weights with int8 or int16 "
                   "inputs only (PopulateConvolutionQuantizationParams)")
    if mac_rule(g, FAMILY.get(op.name, "fully_connected"), g.tensor(op.inputs[0])).kind is RequantKind.FLOAT32:
        return
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        t_b = g.tensor(op.inputs[2])
        if t_b.scale.size:  # GetQuantizedConvolutionMultipler: bias scale ~ s_in * s_w
            diff = abs(np.float64(s_in) * np.float64(s_w) - np.float64(t_b.scale[0]))
            if diff / np.float64(s_out) > 0.02:
                refuse(op, "bias scale differs from input_scale * weight_scale by more than 0.02 output LSB "
                           "(GetQuantizedConvolutionMultipler)")


def _conv_common(op, g, axis):
    check_arity(op, (2, 3))
    dt, w_dt = _activation_types(op, g)
    wide = dt == np.int16
    t_in, t_w, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    w = constant(op, g, 1, "filter")
    if w is None or w.ndim != 4 or w.dtype != w_dt:
        refuse(op, f"filter must be a constant {w_dt.name} 4-D tensor")
    bias = mac_bias(op, g, FAMILY[op.name], constant(op, g, 2, "bias"), t_in)
    if len(t_in.shape) != 4:
        refuse(op, f"input must be 4-D NHWC, got shape {t_in.shape}")
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    s_w, zw = weight_scales(op, t_w, axis)
    if dt == np.uint8:
        _check_uint8_scales(op, g, t_w, s_in, s_w, s_out)
    o = op.options
    lo, hi = activation_range(op, o.get("fused_activation_function", 0), t_out)
    if wide and (zi, zo) != (0, 0):
        refuse(op, f"16x8 {op.name} needs zero points 0, got {zi} and {zo}")
    # ConvPerChannel ignores the filter zero point (int8 filters are symmetric); uint8 kernels take it as an offset
    quant = dict(input_zero_point=zi, weight_zero_point=zw if dt == np.uint8 else 0, output_zero_point=zo,
                 requant=mac_requant(op, g, FAMILY[op.name], t_in, s_in, s_w, s_out,
                                     grouped=op.name == "CONV_2D" and w.shape[3] != t_in.shape[3]),
                 act_min=lo, act_max=hi, stride=(o.get("stride_h", 1), o.get("stride_w", 1)), padding=padding_name(op, o.get("padding", 0)),
                 dilation=(o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)))
    if dt != np.int8:
        quant["out_dtype"] = dt.name
    return t_in, t_out, w, bias, quant, (s_in, s_w, s_out)


@builtin("CONV_2D")
def prepare_conv_2d(op, g):
    t_in, t_out, w, bias, quant, scales = _conv_common(op, g, 0)
    acc = None
    if narrow_16x8_bias(op, g, constant(op, g, 2, "bias"), t_in):  # TFLM's requires_int32_accum: int32 sums, the
        acc = Accumulator()                                          # 32-bit MultiplyByQuantizedMultiplier
        quant["requant"] = at_prepare(op, Requant.from_rule, g.mac("conv_2d").int32_bias_16x8_requant, *scales)
    layer = at_prepare(op, kernels.conv2d_plan, t_in.shape, t_in.dtype, w, bias, **quant)
    return Prepared(_runner(op, g, layer, t_out, acc), requant_params(quant), stages=_stages(op, g, layer, acc=acc),
                    problem=_plain(op, g, layer.problem, acc))


@builtin("DEPTHWISE_CONV_2D")
def prepare_depthwise_conv_2d(op, g):
    t_in, t_out, w, bias, quant, scales = _conv_common(op, g, 3)
    c_in, c_out = t_in.shape[3], w.shape[3]
    if w.shape[0] != 1 or c_in == 0 or c_out % c_in:
        refuse(op, f"filter {w.shape} does not fit {c_in} input channels")
    quant["depth_multiplier"] = c_out // c_in  # LiteRT derives the multiplier from the shapes
    layer = at_prepare(op, kernels.depthwise_conv2d_plan, t_in.shape, t_in.dtype, w, bias, **quant)
    run, stages = _runner(op, g, layer, t_out), _stages(op, g, layer)
    rule = mac_rule(g, "depthwise_conv_2d", t_in, int4=has_int4_weights(op, g))
    tail = c_out % rule.vector_channels if rule.vector_channels and t_in.dtype != np.int16 else 0
    if tail:  # the channels past the vector blocks: the scalar loop's tie rule (optimized_ops::Quantize)
        scalar = dict(quant, requant=at_prepare(op, Requant.from_rule, rule.scalar_rule, *scales))
        layer_scalar = at_prepare(op, kernels.depthwise_conv2d_plan, t_in.shape, t_in.dtype, w, bias, **scalar)
        run_scalar, stages_scalar = _runner(op, g, layer_scalar, t_out), _stages(op, g, layer_scalar)

        def run_blocks(inputs):
            out = run(inputs)
            out[..., c_out - tail:] = run_scalar(inputs)[..., c_out - tail:]
            return out

        def stages_blocks(inputs, tap=None):  # the tail's requantization is the scalar loop's
            st = stages(inputs, tap)
            st.requant[..., c_out - tail:] = stages_scalar(inputs).requant[..., c_out - tail:]
            return st
        return Prepared(run_blocks, dict(requant_params(quant), scalar_channels_from=c_out - tail),
                        stages=stages_blocks)
    return Prepared(run, requant_params(quant), stages=stages, problem=_plain(op, g, layer.problem))


def _plain(op, g, problem, acc=None):
    """``problem`` where the layer's run is the plain one a compiled program reproduces (int8 codes and weights,
    weight zero points 0, the engine's default int32 accumulator), else None (:attr:`Prepared.problem`)."""
    if acc is not None or g.mac(FAMILY.get(op.name, "fully_connected")).accumulator is not None:
        return None
    q = problem.quant
    if problem.x.dtype != np.int8 or problem.w.dtype != np.int8 or np.any(q.zw) \
            or np.dtype(q.out_dtype) not in _BYTES:
        return None
    return problem


def _runner(op, g, layer, t_out, acc=None):
    """``run(inputs)`` of a prepared conv layer: the kernel call alone (the model checks the output shape), under
    the engine's accumulator of the family (or ``acc``)."""
    if tuple(layer.out_shape) != tuple(t_out.shape):
        refuse(op, f"computes shape {tuple(layer.out_shape)} but the model declares {tuple(t_out.shape)}")
    acc = acc or g.mac(FAMILY[op.name]).accumulator
    return lambda inputs: at_run(op, layer.run, inputs[0], acc)


def _stages(op, g, layer, family=None, acc=None):
    """``stages(inputs, tap=None)`` of a prepared MAC layer (:attr:`Prepared.stages`): the plan's stages of the
    input under the engine's accumulator of the family (or ``acc``)."""
    acc = acc or g.mac(family or FAMILY[op.name]).accumulator
    return lambda inputs, tap=None: at_run(op, layer.stages, inputs[0], acc, tap)


@builtin("FULLY_CONNECTED")
def prepare_fully_connected(op, g):
    check_arity(op, (2, 3))
    dt, w_dt = _activation_types(op, g)
    wide = dt == np.int16
    t_in, t_w, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    o = op.options
    if o.get("weights_format", 0) != 0:
        refuse(op, "shuffled weights (SHUFFLED4x16INT8) are not supported")
    w = constant(op, g, 1, "weights")
    if w is None or w.ndim != 2 or w.dtype != w_dt:
        refuse(op, f"weights must be a constant {w_dt.name} matrix (N, K)")
    bias = mac_bias(op, g, "fully_connected", constant(op, g, 2, "bias"), t_in)
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    s_w, zw = weight_scales(op, t_w, 0)
    if dt == np.uint8 and np.ndim(s_w):
        _check_uint8_scales(op, g, t_w, s_in, s_w, s_out)
    if wide and (zi, zo) != (0, 0):
        refuse(op, f"16x8 FULLY_CONNECTED needs zero points 0, got {zi} and {zo}")
    n, k = w.shape
    if k == 0 or int(np.prod(t_in.shape)) % k or int(np.prod(t_out.shape)) != int(np.prod(t_in.shape)) // k * n:
        refuse(op, f"input {t_in.shape} and output {t_out.shape} do not fit weights {w.shape}")
    if np.ndim(s_w) == 0 and bias is not None and op.inputs[2] >= 0:
        t_b = g.tensor(op.inputs[2])
        if t_b.scale.size:  # GetQuantizedConvolutionMultipler: bias scale ~ s_in * s_w
            diff = abs(np.float64(s_in) * np.float64(s_w) - np.float64(t_b.scale[0]))
            if diff / np.float64(s_out) > 0.02:
                refuse(op, "bias scale differs from input_scale * weight_scale by more than 0.02 output LSB")
    lo, hi = activation_range(op, o.get("fused_activation_function", 0), t_out)
    acc = g.mac("fully_connected").accumulator
    if narrow_16x8_bias(op, g, constant(op, g, 2, "bias"), t_in):  # TFLM's requires_int32_accum: int32 sums, the
        acc = Accumulator()                                          # 32-bit MultiplyByQuantizedMultiplier
        rq = at_prepare(op, Requant.from_rule, g.mac("fully_connected").int32_bias_16x8_requant, s_in, s_w, s_out)
    else:
        rq = mac_requant(op, g, "fully_connected", t_in, s_in, s_w, s_out)
    quant = dict(input_zero_point=zi, weight_zero_point=zw, output_zero_point=zo, requant=rq, act_min=lo, act_max=hi,
                 out_dtype=t_out.dtype.name)
    layer = at_prepare(op, kernels.fully_connected_plan, (int(np.prod(t_in.shape)) // k, k), t_in.dtype, w, bias,
                       **quant)
    rows, out_shape = layer.rows.x_shape, tuple(t_out.shape)
    stages = _stages(op, g, layer, "fully_connected", acc=acc)
    return Prepared(lambda inputs: at_run(op, layer.run, inputs[0].reshape(rows[0], k), acc).reshape(out_shape),
                    requant_params(quant),
                    stages=lambda inputs, tap=None: stages([inputs[0].reshape(rows[0], k)], tap).reshape(out_shape),
                    problem=_plain(op, g, layer.rows.problem, acc))


@builtin("BATCH_MATMUL")
def prepare_batch_matmul(op, g):
    check_arity(op, 2)
    check_int_types(op, g, ("lhs", "rhs"), allowed=(np.dtype(np.int8), np.dtype(np.int16)))
    tx, ty, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    if not tx.dtype == ty.dtype == t_out.dtype:
        refuse(op, f"lhs, rhs and output must share one type, got {tx.type_name}, {ty.type_name}, {t_out.type_name}")
    (sx, zx), (sy, zy), (so, zo) = (per_tensor_quant(op, t, w)
                                    for t, w in ((tx, "lhs"), (ty, "rhs"), (t_out, "output")))
    m, s = fixed_point_multiplier(op, np.float64(sx) * np.float64(sy) / np.float64(so))
    q = dict(adj_x=bool(op.options.get("adj_x", 0)), adj_y=bool(op.options.get("adj_y", 0)), x_zero_point=zx,
             y_zero_point=zy, output_zero_point=zo, multiplier=m, shift=s)
    plan = planned(batch_matmul_plan, tuple(tx.shape), tuple(ty.shape), tx.dtype, **q)
    stages = getattr(plan, "stages", None)  # a refused plan has none: its run raises
    return Prepared(binary_run(op, g, batch_matmul_plan, **q), q,
                    stages=stages and (lambda inputs, tap=None: at_run(op, stages, inputs[0], inputs[1], tap)))


@builtin("TRANSPOSE_CONV")
def prepare_transpose_conv(op, g):
    check_arity(op, (3, 4))
    if len(op.inputs) < 3 or min(op.inputs[:3]) < 0:
        refuse(op, "expects output_shape, weights and input tensors")
    t_in, t_w, t_out = g.tensor(op.inputs[2]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    dt = check_dtype(op, t_in, (np.dtype(np.int8), np.dtype(np.int16)), "input")
    check_dtype(op, t_out, (dt,), "output")
    w = constant(op, g, 1, "weights")
    if w is None or w.ndim != 4 or w.dtype != np.int8:
        refuse(op, "weights must be a constant int8 4-D tensor (OHWI)")
    bias = mac_bias(op, g, "transpose_conv", constant(op, g, 3, "bias"), t_in)
    if len(t_in.shape) != 4 or len(t_out.shape) != 4:
        refuse(op, f"input and output must be 4-D NHWC, got {t_in.shape} and {t_out.shape}")
    s_in, zi = per_tensor_quant(op, t_in, "input")
    s_out, zo = per_tensor_quant(op, t_out, "output")
    s_w, _ = weight_scales(op, t_w, 0)
    o = op.options
    lo, hi = activation_range(op, o.get("fused_activation_function", 0), t_out)
    if dt == np.int16 and (zi, zo) != (0, 0):
        refuse(op, f"int16 TRANSPOSE_CONV needs zero points 0, got {zi} and {zo}")
    if g.mac("transpose_conv").accumulator is not None:
        refuse(op, f"engine {g.profile.name!r} declares an accumulator for TRANSPOSE_CONV; its kernel sums in the "
                   "exact int32 (int64 for 16x8) only")
    rq = mac_requant(op, g, "transpose_conv", t_in, s_in, s_w, s_out)
    q = dict(output_size=tuple(t_out.shape[1:3]), stride=(o.get("stride_h", 1), o.get("stride_w", 1)),
             padding=padding_name(op, o.get("padding", 0)), input_zero_point=zi, output_zero_point=zo, requant=rq,
             act_min=lo, act_max=hi)
    try:  # the output must hold the filter: the geometry of the forward conv this is the transpose of
        pad_top = geometry(q["output_size"], w.shape[1:3], q["stride"], q["padding"], 1, "TRANSPOSE_CONV").pad_top
    except (TypeError, ValueError) as exc:
        refuse(op, str(exc).removeprefix("TRANSPOSE_CONV: "))
    if dt == np.int8 and _takes_cmsis_nn_row_path(q["stride"], pad_top, t_in.shape[3]) and defect(
            op, g, Defect.CMSIS_NN_TRANSPOSE_CONV_PAD_ROWS, "CMSIS-NN 4ab83cc's arm_transpose_conv_s8 misplaces the "
            "output rows after the top padding and leaves the last one unwritten (pad_top % stride_h != 0)"):
        q["row_flush"] = RowFlush.CMSIS_NN_4AB83CC

    def run(inputs):  # output_shape may be a model input: it must name the declared output shape
        if inputs[0] is not None and tuple(np.asarray(inputs[0]).reshape(-1).tolist()) != tuple(t_out.shape):
            raise ValueError(f"Model.run: operator {op.index} (TRANSPOSE_CONV): output_shape "
                             f"{np.asarray(inputs[0]).tolist()} differs from the declared {tuple(t_out.shape)}")
        return check_shape(op, at_run(op, transpose_conv, inputs[2], w, bias, **q), t_out)

    def stages(inputs, tap=None):
        return at_run(op, transpose_conv_stages, inputs[2], w, bias, tap=tap, **q)

    # CMSIS-NN's row bug leaves rows without sums: no stages there
    return Prepared(run, requant_params(q), stages=None if "row_flush" in q else stages)


def _takes_cmsis_nn_row_path(stride, pad_top, in_channels):
    """Whether CMSIS-NN 4ab83cc's ``arm_transpose_conv_s8`` takes this layer down its buggy row path: the path
    ``arm_transpose_conv_wrapper_s8`` takes unless both strides are <= 2 and there are more than 16 input
    channels, and only where ``pad_top % stride_h != 0`` do its rows move."""
    s_h, s_w = stride
    return not (s_h <= 2 and s_w <= 2 and in_channels > 16) and pad_top % s_h != 0
