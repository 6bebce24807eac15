"""One function per TFLite builtin op: its Prepare (checks, integer parameters from the float32
scales, exactly as LiteRT's kernel does) returning its Eval (a call to a dspsim kernel).

Every ``prepare_<op>(op, g)`` raises ValueError for a model LiteRT's reference interpreter refuses
(or where its result is undefined behaviour) and returns ``eval(inputs) -> output``, where
``inputs`` are the arrays of the operator's inputs (None for an absent optional input).
Sources: google-ai-edge/LiteRT ``tflite/kernels/*.cc`` and ``internal/reference/``; SEMANTICS 2-3.
"""
from __future__ import annotations

import math

import numpy as np

from .. import kernels
from ..fixedpoint import quantize_multiplier
from ..kernels import elementwise, pool
from ..quantize import tflite_dequantize, tflite_quantize
from ..requant import Requant, requantize

# dspsim requantization of FULLY_CONNECTED / CONV_2D / DEPTHWISE_CONV_2D per engine flavour
ENGINES = {
    "litert": {"fully_connected": "litert", "conv": "tflite"},  # LiteRT 2.x reference kernels (BUILTIN_REF)
    "tflite": {"fully_connected": "tflite", "conv": "tflite"},  # TFLite/TFLM MultiplyByQuantizedMultiplier FC
    "xnnpack": {"fully_connected": "xnnpack", "conv": "xnnpack"},  # fp32 requantization, ties to even;
    # with "xnnpack", ADD, MUL, MEAN, LEAKY_RELU and QUANTIZE also take XNNPACK's kernels wherever
    # LiteRT's delegate would take the node
}
_ACTIVATIONS = {0: None, 1: "relu", 2: "relu_n1_to_1", 3: "relu6"}
_ACT_BOUNDS = {"relu": (0.0, None), "relu6": (0.0, 6.0), "relu_n1_to_1": (-1.0, 1.0)}
_QTYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
_INT32_MIN = -(1 << 31)


class Graph:
    """What an op's Prepare may read: the decoded model, the engine flavour and the accumulator model
    of the MAC ops (None: int32 wrapping, as every engine here)."""

    def __init__(self, mdef, engine, accumulator=None):
        self.mdef = mdef
        self.engine = engine
        self.accumulator = accumulator

    def tensor(self, i):
        return self.mdef.tensors[i]


def refuse(op, msg):
    raise ValueError(f"load_model: operator {op.index} ({op.name}): {msg}")


# --------------------------------------------------------------------------------------------
# Prepare helpers
# --------------------------------------------------------------------------------------------
def _quant(op, t, what):
    """(float32 scale, int zero point) of a per-tensor quantized tensor."""
    if t.scale.size == 0:
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) is not quantized")
    if t.scale.size > 1:
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) is quantized per channel; per-tensor expected")
    zp = int(t.zero_point[0]) if t.zero_point.size else 0
    s = np.float32(t.scale[0])
    if not (np.isfinite(s) and s > 0):
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) has scale {s}; it must be finite and positive")
    return s, zp


def _dtype(op, t, allowed, what):
    if t.dtype not in allowed:
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) has type {t.type_name}; supported: "
                   f"{', '.join(np.dtype(d).name for d in allowed)}")
    return t.dtype


def _n_io(op, n_in, n_out=1):
    ok_in = op.inputs and len(op.inputs) in (n_in if isinstance(n_in, tuple) else (n_in,))
    if not ok_in or len(op.outputs) != n_out:
        refuse(op, f"expects {n_in} input(s) and {n_out} output(s), has {len(op.inputs)} and {len(op.outputs)}")


def _const(op, g, k, what):
    i = op.inputs[k] if k < len(op.inputs) else -1
    if i < 0:
        return None
    t = g.tensor(i)
    if t.data is None:
        refuse(op, f"{what} (tensor {i}, {t.name!r}) must be a constant")
    return t.data


def _quantize_bound(op, f, scale, zp, fused):
    """TFLite's ``zp + int32(round(f / scale))`` (float32 divide, ties away from zero)."""
    v = float(np.float32(np.float32(f) / scale))
    r = math.copysign(math.floor(abs(v) + 0.5), v)
    if fused and not -2.0**31 <= r <= 2.0**31:  # CalculateActivationRangeQuantized's overflow check
        refuse(op, f"the fused activation bound {f} / scale {float(scale):.9g} overflows int32 (LiteRT refuses "
                   "the model)")
    if not fused and not -2.0**31 <= r < 2.0**31:
        refuse(op, f"the bound {f} / output scale {float(scale):.9g} overflows int32 (undefined behaviour in "
                   "LiteRT's ReluX)")
    q = _INT32_MIN if r == 2.0**31 else int(r)  # x86 cvttss2si of 2^31
    return ((zp + q + (1 << 31)) % (1 << 32)) - (1 << 31)


def _act_range(op, code, t_out, kind=None):
    """(act_min, act_max) of a fused activation (CalculateActivationRangeQuantized)."""
    if code not in _ACTIVATIONS:
        refuse(op, f"fused activation {code} (TANH/SIGN_BIT) is not supported on quantized tensors")
    name = _ACTIVATIONS[code] if kind is None else kind
    info = np.iinfo(t_out.dtype)
    if name is None:
        return int(info.min), int(info.max)
    s, zp = _quant(op, t_out, "output")
    lo_f, hi_f = _ACT_BOUNDS[name]
    lo = max(int(info.min), _quantize_bound(op, lo_f, s, zp, kind is None))
    hi = int(info.max) if hi_f is None else min(int(info.max), _quantize_bound(op, hi_f, s, zp, kind is None))
    return lo, hi


def _fixed_point(op, real):
    if not math.isfinite(float(real)) or float(real) <= 0:
        refuse(op, f"the effective scale {float(real)} is not a finite positive number")
    m, s = quantize_multiplier(float(real))
    if s > 30:
        refuse(op, f"the effective scale {real} needs a left shift of {s} > 30 (1 << {s} overflows int32)")
    return m, s


def _weight_scales(op, t_w, axis):
    """float32 scalar (per-tensor) or array (per-channel along ``axis``) and the weight zero point."""
    if t_w.scale.size == 0:
        refuse(op, f"weights tensor {t_w.index} is not quantized")
    if not (np.all(np.isfinite(t_w.scale)) and np.all(t_w.scale > 0)):
        refuse(op, f"weights tensor {t_w.index} has scales that are not finite and positive")
    if t_w.scale.size == 1:
        return np.float32(t_w.scale[0]), int(t_w.zero_point[0]) if t_w.zero_point.size else 0
    if t_w.quantized_dimension != axis or t_w.scale.size != t_w.shape[axis]:
        refuse(op, f"per-channel weights must have {t_w.shape[axis]} scales along dimension {axis}, got "
                   f"{t_w.scale.size} along {t_w.quantized_dimension}")
    return t_w.scale.astype(np.float32), 0  # per-channel kernels ignore the filter zero point


def _padding(op, code):
    if code not in (0, 1):
        refuse(op, f"padding {code} is not SAME (0) or VALID (1)")
    return "SAME" if code == 0 else "VALID"


def _int_types(op, g, what_in=("input",), allowed=(np.dtype(np.int8),)):
    for k, what in enumerate(what_in):
        _dtype(op, g.tensor(op.inputs[k]), allowed, what)
    _dtype(op, g.tensor(op.outputs[0]), allowed, "output")


def _prepared(op, fn, *args, **kw):
    """Call a parameter helper at Prepare time; its ValueError becomes a refusal naming the operator."""
    try:
        return fn(*args, **kw)
    except (ValueError, TypeError) as e:
        refuse(op, str(e))


def _kernel_call(op, fn, *args, **kw):
    """Run a kernel at Eval time; an argument error names the operator (``Model.run: operator k (OP)``)."""
    try:
        return fn(*args, **kw)
    except (ValueError, TypeError) as e:
        raise ValueError(f"Model.run: operator {op.index} ({op.name}): {e}") from None


# --------------------------------------------------------------------------------------------
# the ops
# --------------------------------------------------------------------------------------------
def prepare_fully_connected(op, g):
    _n_io(op, (2, 3))
    _int_types(op, g)
    t_in, t_w, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    o = op.options
    if o.get("weights_format", 0) != 0:
        refuse(op, "shuffled weights (SHUFFLED4x16INT8) are not supported")
    w = _const(op, g, 1, "weights")
    if w is None or w.ndim != 2 or w.dtype != np.int8:
        refuse(op, "weights must be a constant int8 matrix (N, K)")
    bias = _const(op, g, 2, "bias")
    if bias is not None and bias.dtype != np.int32:
        refuse(op, f"bias must be int32, got {bias.dtype}")
    s_in, zi = _quant(op, t_in, "input")
    s_out, zo = _quant(op, t_out, "output")
    s_w, zw = _weight_scales(op, t_w, 0)
    n, k = w.shape
    if int(np.prod(t_in.shape)) % k or int(np.prod(t_out.shape)) != int(np.prod(t_in.shape)) // k * n:
        refuse(op, f"input {t_in.shape} and output {t_out.shape} do not fit weights {w.shape}")
    if np.ndim(s_w) == 0 and bias is not None and op.inputs[2] >= 0:
        t_b = g.tensor(op.inputs[2])
        if t_b.scale.size:  # GetQuantizedConvolutionMultipler: bias scale ~ s_in * s_w
            diff = abs(np.float64(s_in) * np.float64(s_w) - np.float64(t_b.scale[0]))
            if diff / np.float64(s_out) > 0.02:
                refuse(op, "bias scale differs from input_scale * weight_scale by more than 0.02 output LSB")
    lo, hi = _act_range(op, o.get("fused_activation_function", 0), t_out)
    requant = ENGINES[g.engine]["fully_connected"]

    def run(inputs):
        x = inputs[0].reshape(-1, k)
        return _kernel_call(op, kernels.fully_connected, x, w, bias, input_zero_point=zi, weight_zero_point=zw,
                            output_zero_point=zo, input_scale=s_in, weight_scale=s_w, output_scale=s_out,
                            requant=requant, act_min=lo, act_max=hi, accumulator=g.accumulator).reshape(t_out.shape)

    return run


def _conv_common(op, g, axis):
    _n_io(op, (2, 3))
    _int_types(op, g)
    t_in, t_w, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    w = _const(op, g, 1, "filter")
    if w is None or w.ndim != 4 or w.dtype != np.int8:
        refuse(op, "filter must be a constant int8 4-D tensor")
    bias = _const(op, g, 2, "bias")
    if bias is not None and bias.dtype != np.int32:
        refuse(op, f"bias must be int32, got {bias.dtype}")
    if len(t_in.shape) != 4:
        refuse(op, f"input must be 4-D NHWC, got shape {t_in.shape}")
    s_in, zi = _quant(op, t_in, "input")
    s_out, zo = _quant(op, t_out, "output")
    s_w, _ = _weight_scales(op, t_w, axis)
    o = op.options
    lo, hi = _act_range(op, o.get("fused_activation_function", 0), t_out)
    quant = dict(input_zero_point=zi, weight_zero_point=0, output_zero_point=zo, input_scale=s_in,
                 weight_scale=s_w, output_scale=s_out, requant=ENGINES[g.engine]["conv"], act_min=lo, act_max=hi,
                 accumulator=g.accumulator,
                 stride=(o.get("stride_h", 1), o.get("stride_w", 1)), padding=_padding(op, o.get("padding", 0)),
                 dilation=(o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)))
    return t_in, t_out, w, bias, quant


def _check_shape(op, out, t_out):
    if out.shape != tuple(t_out.shape):
        raise ValueError(f"Model.run: operator {op.index} ({op.name}) computes shape {out.shape} but the model "
                         f"declares {tuple(t_out.shape)}")
    return out


def prepare_conv_2d(op, g):
    t_in, t_out, w, bias, quant = _conv_common(op, g, 0)
    # ConvPerChannel ignores the filter zero point (int8 filters are symmetric)
    return lambda inputs: _check_shape(op, _kernel_call(op, kernels.conv2d, inputs[0], w, bias, **quant), t_out)


def prepare_depthwise_conv_2d(op, g):
    t_in, t_out, w, bias, quant = _conv_common(op, g, 3)
    c_in, c_out = t_in.shape[3], w.shape[3]
    if w.shape[0] != 1 or c_out % c_in:
        refuse(op, f"filter {w.shape} does not fit {c_in} input channels")
    mult = c_out // c_in  # LiteRT derives the multiplier from the shapes
    return lambda inputs: _check_shape(op, _kernel_call(op, kernels.depthwise_conv2d, inputs[0], w, bias,
                                                        depth_multiplier=mult, **quant), t_out)


def _relu_x(op, g, kind):
    _n_io(op, 1)
    _int_types(op, g, allowed=(np.dtype(np.int8), np.dtype(np.uint8)))
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    s_in, zi = _quant(op, t_in, "input")
    s_out, zo = _quant(op, t_out, "output")
    m, s = _fixed_point(op, np.float32(s_in / s_out))  # ReluPrepare: float32 quotient
    lo, hi = _act_range(op, 0, t_out, kind)
    return lambda inputs: _kernel_call(op, kernels.relu, inputs[0], input_zero_point=zi, output_zero_point=zo,
                                       multiplier=m, shift=s, act_min=lo, act_max=hi)


def prepare_relu(op, g):
    return _relu_x(op, g, "relu")


def prepare_relu6(op, g):
    return _relu_x(op, g, "relu6")


def prepare_relu_n1_to_1(op, g):
    return _relu_x(op, g, "relu_n1_to_1")


def prepare_leaky_relu(op, g):
    _n_io(op, 1)
    _int_types(op, g, allowed=(np.dtype(np.int8), np.dtype(np.uint8)))
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    s_in, zi = _quant(op, t_in, "input")
    s_out, zo = _quant(op, t_out, "output")
    alpha = float(np.float32(op.options.get("alpha", 0.0)))
    if not alpha >= 0:
        refuse(op, f"alpha = {alpha}: only alpha >= 0 is supported")
    for real in (np.float32(s_in / s_out), np.float32(np.float32(s_in * np.float32(alpha)) / s_out)):
        _fixed_point(op, real)
    q = dict(alpha=alpha, input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
    r = np.float32(s_in / s_out)
    if g.engine == "xnnpack" and t_in.dtype == np.int8 and _xnnpack_takes((r,), 2.0**-8, 2.0**7, False) \
            and abs(np.float32(r * np.float32(alpha))) >= 2.0**-8:
        return lambda inputs: elementwise.xnnpack_leaky_relu(inputs[0], **q)
    return lambda inputs: _kernel_call(op, kernels.leaky_relu, inputs[0], **q)


def _binary(op, g):
    _n_io(op, 2)
    _int_types(op, g, ("input1", "input2"), (np.dtype(np.int8), np.dtype(np.uint8)))
    t1, t2, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    if not (t1.dtype == t2.dtype == t_out.dtype):
        refuse(op, "inputs and output must share one type")
    (s1, z1), (s2, z2), (so, zo) = (_quant(op, t, w) for t, w in ((t1, "input1"), (t2, "input2"), (t_out, "output")))
    lo, hi = _act_range(op, op.options.get("fused_activation_function", 0), t_out)
    return t_out, s1, z1, s2, z2, so, zo, lo, hi


def _xnnpack_takes(ratios, lo, hi, hi_open=True):
    """Whether LiteRT's XNNPACK delegate takes a node whose scale ratios are ``ratios`` (else the node
    runs on a builtin kernel, modelled by the reference)."""
    return all(lo <= r < hi if hi_open else lo <= r <= hi for r in ratios)


def prepare_add(op, g):
    t_out, s1, z1, s2, z2, so, zo, lo, hi = _binary(op, g)
    zps = dict(input1_zero_point=z1, input2_zero_point=z2, output_zero_point=zo, act_min=lo, act_max=hi)
    if g.engine == "xnnpack" and t_out.dtype == np.int8 and _xnnpack_takes((s1 / so, s2 / so), 2.0**-10, 2.0**8):
        xp = elementwise.xnnpack_add_params(s1, s2, so)
        return lambda inputs: _check_shape(op, _kernel_call(op, elementwise.xnnpack_add, inputs[0], inputs[1], xp,
                                                            **zps), t_out)
    params = _prepared(op, elementwise.tflite_add_params, s1, s2, so)
    return lambda inputs: _check_shape(op, _kernel_call(op, elementwise.add, inputs[0], inputs[1], params, **zps),
                                       t_out)


def prepare_mul(op, g):
    t_out, s1, z1, s2, z2, so, zo, lo, hi = _binary(op, g)
    real = np.float32(np.float32(s1 * s2) / so)
    if g.engine == "xnnpack" and _xnnpack_takes((real,), 2.0**-16, 2.0**8):
        q = dict(scale=real)  # qs8-vmul fp32 kernels
    else:
        m, s = _fixed_point(op, real)
        q = dict(multiplier=m, shift=s)
    return lambda inputs: _check_shape(op, _kernel_call(op, elementwise.mul, inputs[0], inputs[1],
                                                        input1_zero_point=z1, input2_zero_point=z2,
                                                        output_zero_point=zo, act_min=lo, act_max=hi, **q), t_out)


def _pool(op, g, fn):
    _n_io(op, 1)
    _int_types(op, g, allowed=(np.dtype(np.int8), np.dtype(np.uint8)))
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    if len(t_in.shape) != 4:
        refuse(op, f"input must be 4-D NHWC, got shape {t_in.shape}")
    o = op.options
    if o.get("stride_h", 0) <= 0 or o.get("stride_w", 0) <= 0:
        refuse(op, "strides must be > 0")
    lo, hi = _act_range(op, o.get("fused_activation_function", 0), t_out)
    args = dict(stride=(o["stride_h"], o["stride_w"]), padding=_padding(op, o.get("padding", 0)), act_min=lo,
                act_max=hi)
    size = (o.get("filter_height", 0), o.get("filter_width", 0))
    return lambda inputs: _check_shape(op, _kernel_call(op, fn, inputs[0], size, **args), t_out)


def prepare_average_pool_2d(op, g):
    return _pool(op, g, pool.average_pool2d)


def prepare_max_pool_2d(op, g):
    return _pool(op, g, pool.max_pool2d)


def _same_elements(op, g):
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    if t_in.dtype != t_out.dtype:
        refuse(op, "input and output types differ")
    if int(np.prod(t_in.shape)) != int(np.prod(t_out.shape)):
        refuse(op, f"input {t_in.shape} and output {t_out.shape} differ in size")
    return lambda inputs: inputs[0].reshape(t_out.shape)


def prepare_reshape(op, g):
    _n_io(op, (1, 2))
    return _same_elements(op, g)


def prepare_squeeze(op, g):
    _n_io(op, 1)
    return _same_elements(op, g)


def prepare_pad(op, g):
    _n_io(op, (2, 3))
    _int_types(op, g, allowed=_QTYPES)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    pads = _const(op, g, 1, "paddings")
    if pads is None or pads.dtype.kind != "i" or pads.shape != (len(t_in.shape), 2) or (pads < 0).any():
        refuse(op, f"paddings must be a constant non-negative int ({len(t_in.shape)}, 2) tensor")
    s_out, zo = _quant(op, t_out, "output")
    value = zo
    if len(op.inputs) == 3 and op.inputs[2] >= 0:  # PADV2: constant_values in the output's quantization
        cv = _const(op, g, 2, "constant_values")
        t_cv = g.tensor(op.inputs[2])
        if cv.size != 1 or cv.dtype != t_out.dtype or _quant(op, t_cv, "constant_values") != (s_out, zo):
            refuse(op, "constant_values must be one value with the output's type, scale and zero point")
        value = int(cv.reshape(-1)[0])
    elif not np.iinfo(t_out.dtype).min <= zo <= np.iinfo(t_out.dtype).max:
        refuse(op, f"output zero point {zo} lies outside {t_out.type_name}")
    return lambda inputs: _check_shape(op, _kernel_call(op, elementwise.pad, inputs[0], pads, value), t_out)


def prepare_concatenation(op, g):
    if not op.inputs or len(op.outputs) != 1:
        refuse(op, "expects at least one input and one output")
    t_out = g.tensor(op.outputs[0])
    _dtype(op, t_out, (np.dtype(np.int8),), "output")
    if op.options.get("fused_activation_function", 0) != 0:
        refuse(op, "a fused activation is not allowed on CONCATENATION")
    q_out = _quant(op, t_out, "output")
    for i in op.inputs:
        t = g.tensor(i)
        _dtype(op, t, (np.dtype(np.int8),), "input")
        q_in = _quant(op, t, "input")
        if q_in != q_out:
            refuse(op, f"input tensor {i} has scale {float(q_in[0]):.9g}, zero point {q_in[1]}, the output scale "
                       f"{float(q_out[0]):.9g}, zero point {q_out[1]}; LiteRT's int8 CONCATENATION does not rescale")
    axis = op.options.get("axis", 0)
    return lambda inputs: _check_shape(op, _kernel_call(op, elementwise.concatenation, inputs, axis), t_out)


def prepare_mean(op, g):
    _n_io(op, 2)
    _int_types(op, g, allowed=(np.dtype(np.int8), np.dtype(np.uint8)))
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    axes = _const(op, g, 1, "axis")
    if axes is None or axes.dtype.kind != "i":
        refuse(op, "axis must be a constant int tensor")
    s_in, zi = _quant(op, t_in, "input")
    s_out, zo = _quant(op, t_out, "output")
    m, s = _fixed_point(op, np.float64(s_in) / np.float64(s_out))  # PrepareMeanOrSum: double quotient
    keep = bool(op.options.get("keep_dims", 0))
    if g.engine == "xnnpack" and t_in.dtype == np.int8:
        return lambda inputs: elementwise.xnnpack_mean(inputs[0], axes.reshape(-1), input_scale=s_in,
                                                       input_zero_point=zi, output_scale=s_out, output_zero_point=zo,
                                                       keep_dims=keep).reshape(t_out.shape)
    return lambda inputs: _kernel_call(op, elementwise.mean, inputs[0], axes.reshape(-1), input_zero_point=zi,
                                       output_zero_point=zo, multiplier=m, shift=s,
                                       keep_dims=keep).reshape(t_out.shape)


def prepare_quantize(op, g):
    _n_io(op, 1)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    _dtype(op, t_out, _QTYPES, "output")
    if t_in.dtype == np.float32:
        if t_out.scale.size > 1:
            scale, zp, axis = t_out.scale, t_out.zero_point, t_out.quantized_dimension
        else:
            (scale, zp), axis = _quant(op, t_out, "output"), None
            if g.engine == "xnnpack" and t_out.dtype == np.int8:
                return lambda inputs: elementwise.xnnpack_quantize(inputs[0], scale=scale, zero_point=zp)
        return lambda inputs: _kernel_call(op, tflite_quantize, inputs[0], scale, zp, t_out.dtype.name, axis)
    _dtype(op, t_in, (np.dtype(np.int8), np.dtype(np.uint8)), "input")
    s_in, zi = _quant(op, t_in, "input")
    s_out, zo = _quant(op, t_out, "output")
    if g.engine == "xnnpack" and t_in.dtype == t_out.dtype == np.int8 \
            and _xnnpack_takes((np.float32(s_in / s_out),), 2.0**-8, 2.0**7, hi_open=False):
        return lambda inputs: elementwise.xnnpack_convert(inputs[0], input_scale=s_in, input_zero_point=zi,
                                                          output_scale=s_out, output_zero_point=zo)
    rq = Requant.fixed_point(*_fixed_point(op, np.float64(s_in) / np.float64(s_out)))  # Requantize, double quotient
    return lambda inputs: requantize(inputs[0].astype(np.int64) - zi, rq, zo, out_dtype=t_out.dtype.name)


def prepare_dequantize(op, g):
    _n_io(op, 1)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    _dtype(op, t_in, _QTYPES, "input")
    _dtype(op, t_out, (np.dtype(np.float32),), "output")
    s, zp = _quant(op, t_in, "input")
    return lambda inputs: tflite_dequantize(inputs[0], s, zp)


PREPARE = {
    "FULLY_CONNECTED": prepare_fully_connected, "CONV_2D": prepare_conv_2d,
    "DEPTHWISE_CONV_2D": prepare_depthwise_conv_2d, "RELU": prepare_relu, "RELU6": prepare_relu6,
    "RELU_N1_TO_1": prepare_relu_n1_to_1, "LEAKY_RELU": prepare_leaky_relu, "ADD": prepare_add, "MUL": prepare_mul,
    "AVERAGE_POOL_2D": prepare_average_pool_2d, "MAX_POOL_2D": prepare_max_pool_2d, "RESHAPE": prepare_reshape,
    "SQUEEZE": prepare_squeeze, "PAD": prepare_pad, "PADV2": prepare_pad, "CONCATENATION": prepare_concatenation,
    "MEAN": prepare_mean, "QUANTIZE": prepare_quantize, "DEQUANTIZE": prepare_dequantize,
}
SUPPORTED_OPS = tuple(PREPARE)
