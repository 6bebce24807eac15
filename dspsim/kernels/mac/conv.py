"""Quantized 2-D convolution (incl. grouped) and depthwise convolution, TFLite layouts.

``conv2d``: x NHWC, w OHWI; output channel ``oc`` of group ``g = oc // (OC/groups)`` reads input
channels ``[g*I, (g+1)*I)`` with ``I = w.shape[3]``, ``groups = C / I`` (TFLite ConvPerChannel,
CMSIS-NN arm_convolve_s8). ``depthwise_conv2d``: w (1, KH, KW, C*M), ``oc = ic*M + m``
(TFLite DepthwiseConvPerChannel). Both: ``in_y = out_y*stride_h - pad_top + dilation_h*filter_y``;
taps outside the input contribute an exact zero (TFLite skips them, CMSIS fills the input zero
point); ``acc = sum over filter_y, filter_x, in_channel`` then ``+ bias``, requantize, ``+ zo``,
clamp.
"""
from __future__ import annotations

import numpy as np

from ..._errors import names_its_errors

from .._common import ACT_TYPES16, ConvPlan, ConvProblem, geometry, resolve_quant, weights_and_pack
from ..quantize.requantize import prepare_requantize_into
from .depthwise_core import (
    depthwise_accumulate, prepare_depthwise_requantize, prepare_depthwise_weights, prepare_store_requant,
    takes_pairs,
)
from .gemm import _choose_path, conv2d_s32, pack_weights, prepare_conv2d_s32
from .._checks import check_tensor, probe_array

_QUANT_DOC = """
    bias : int32 array (OC,), float array (OC,) (FBGEMM only), or None (= zero)
    input_zero_point, weight_zero_point, output_zero_point, multiplier, shift, act_min, act_max,
    rounding, requant, input_scale, weight_scale, output_scale, tie, accumulator, out_dtype, stats :
        As in :func:`dspsim.fully_connected` (``Requant.from_scales`` with op "conv"/"depthwise":
        ``double(s_in) * double(s_w[c]) / double(s_out)``).
    stride, dilation : int or (h, w), >= 1
    padding : "VALID" | "SAME" | int | (ph, pw) | ((top, bottom), (left, right))
        "SAME" as TFLite/TensorFlow (odd pixel at the bottom/right).

    Returns
    -------
    ndarray (B, OH, OW, OC) of ``out_dtype`` [, KernelStats]
"""


@names_its_errors
def conv2d(x, w, bias=None, *, stride=1, padding="VALID", dilation=1, input_zero_point, weight_zero_point=0,
           output_zero_point, multiplier=None, shift=None, act_min=None, act_max=None, rounding="double",
           accumulator=None, out_dtype="int8", requant=None, input_scale=None, weight_scale=None,
           output_scale=None, tie=None, stats=False):
    # One call: the separate requantization pass (one compiled driver per SIMD path, whatever the
    # scheme); a plan (conv2d_plan) fuses it into the store.
    return _conv_problem("conv2d", x, w, bias, **_call_keywords(locals())).run(accumulator, stats)


@names_its_errors
def conv2d_plan(x_shape, x_dtype, w, bias=None, **kw) -> ConvPlan:
    """:func:`conv2d` prepared once for inputs of ``x_shape`` and ``x_dtype`` (TFLite's Prepare): the
    keywords are those of :func:`conv2d` except ``accumulator`` and ``stats``, which
    ``plan.run(x, accumulator, stats)`` takes. ``conv2d_plan(x.shape, x.dtype, w, bias, **kw)(x)`` is
    ``conv2d(x, w, bias, **kw)``; raw weights are packed here, once."""
    return ConvPlan(_conv_problem("conv2d_plan", probe_array(x_shape, x_dtype, "conv2d_plan"), w, bias, **kw),
                    _conv_prepare_fast, fused=True)


@names_its_errors
def conv2d_stages(x, w, bias=None, *, accumulator=None, tap=None, **kw):
    """The :class:`~dspsim.kernels._common.MacStages` of ``conv2d(x, w, bias, accumulator=accumulator, **kw)``
    (:meth:`~dspsim.kernels._common.ConvProblem.stages`); ``tap`` a flat index into its (B, OH, OW, OC) output."""
    return _conv_problem("conv2d_stages", x, w, bias, **kw).stages(accumulator, tap)


def _call_keywords(kw):
    return {k: v for k, v in kw.items() if k not in ("x", "w", "bias", "accumulator", "stats")}


def _conv_problem(func, x, w, bias, *, stride=1, padding="VALID", dilation=1, input_zero_point, weight_zero_point=0,
                  output_zero_point, multiplier=None, shift=None, act_min=None, act_max=None, rounding="double",
                  out_dtype="int8", requant=None, input_scale=None, weight_scale=None, output_scale=None, tie=None):
    """The validated, resolved :class:`ConvProblem` of a :func:`conv2d` call."""
    x = check_tensor(x, func, "x", ndim=4, allowed=ACT_TYPES16)
    n_b, in_h, in_w, c = x.shape
    w, packed = weights_and_pack(w, func, 4)
    n_oc, k_h, k_w, icg = w.shape
    if c % icg:
        raise ValueError(f"{func}: input channels ({c}) must be a multiple of the filter's input channels ({icg})")
    groups = c // icg
    if packed is not None and packed.groups != groups:
        raise ValueError(f"{func}: weights packed with groups={packed.groups}, but x has {c} channels and the "
                         f"filter {icg}: groups={groups}")
    if n_oc % groups:
        raise ValueError(f"{func}: output channels ({n_oc}) must be a multiple of groups ({groups})")
    g = geometry((in_h, in_w), (k_h, k_w), stride, padding, dilation, func)
    q = resolve_quant(func, "conv", x.dtype, w.dtype, n_oc, input_zero_point=input_zero_point,
                      weight_zero_point=weight_zero_point, output_zero_point=output_zero_point, multiplier=multiplier,
                      shift=shift, rounding=rounding, tie=tie, requant=requant, input_scale=input_scale,
                      weight_scale=weight_scale, output_scale=output_scale, act_min=act_min, act_max=act_max,
                      out_dtype=out_dtype)
    return ConvProblem.build(func, q, x, w, bias, (np.arange(n_oc) // (n_oc // groups)) * icg, g, _conv_fast,
                             packed=packed)


def _conv_prepare_fast(p, epilogue):
    """:func:`_conv_fast` prepared for a layer, requantizing in the core's store (``epilogue``, a
    :class:`~dspsim.kernels.mac.gemm.FusedRequant`): ``run(x) -> (M, OC)`` codes, or None."""
    g, q, n_oc = p.geometry, p.quant, p.w.shape[0]
    if _mostly_padding(p):
        return None
    packed = p.packed or pack_weights(p.w, groups=p.x.shape[3] // p.w.shape[3])  # p.w: signed int8 (build)
    run = prepare_conv2d_s32(p.x.shape, p.x.dtype, packed, g.stride, g.dilation, g.pads,
                             q.zx + (128 if p.x.dtype == np.int8 else 0), np.asarray(q.zw, np.int64), p.bias,
                             _choose_path(None, "conv2d"), epilogue=epilogue)
    return lambda x: run(x).reshape(-1, n_oc)


def _mostly_padding(p):
    g = p.geometry
    _, h, w, _ = p.x.shape
    return (h + g.pad_top + g.pad_bottom) * (w + g.pad_left + g.pad_right) > 4 * h * w + 4096


def _conv_fast(p, exact_bits):
    """The implicit-GEMM fast path of :class:`ConvProblem` (int32 modulo 2^32 only)."""
    if exact_bits != 32:  # the exact int64 value is needed: the checked kernel computes it
        return None
    g, q, n_oc = p.geometry, p.quant, p.w.shape[0]
    _, h, w, _ = p.x.shape
    if _mostly_padding(p):
        return None  # the padded copy would be mostly padding (a huge dilation): the checked kernel skips it
    groups = p.x.shape[3] // p.w.shape[3]
    acc = conv2d_s32(p.x, p.packed or pack_weights(p.w, groups=groups), stride=g.stride, dilation=g.dilation,
                     pads=g.pads, groups=groups, input_zero_point=q.zx, weight_zero_point=q.zw, bias=p.bias)
    return acc.reshape(-1, n_oc)


conv2d.__doc__ = """Quantized 2-D convolution (grouped when ``w.shape[3] < x.shape[3]``), bit-exact with TFLite.

    Parameters
    ----------
    x : int8 or uint8 array (B, H, W, C), NHWC
    w : int8 or uint8 array (OC, KH, KW, C / groups), OHWI, or ``dspsim.pack_weights(w, groups=groups)``
        of an int8 one (pack once per layer to keep packing out of timings, as FBGEMM's prepack).
""" + _QUANT_DOC + """
    The fast path is the implicit-GEMM core :func:`dspsim.kernels.mac.gemm.conv2d_s32` (no im2col),
    with zero points and bias folded into its store; its int32 sum is exact modulo 2^32 (see
    ``dspsim.accumulator`` for when that is the accumulator).
"""


@names_its_errors
def depthwise_conv2d(x, w, bias=None, *, depth_multiplier=1, stride=1, padding="VALID", dilation=1,
                     input_zero_point, weight_zero_point=0, output_zero_point, multiplier=None, shift=None,
                     act_min=None, act_max=None, rounding="double", accumulator=None, out_dtype="int8",
                     requant=None, input_scale=None, weight_scale=None, output_scale=None, tie=None, stats=False):
    return _depthwise_problem("depthwise_conv2d", x, w, bias, **_call_keywords(locals())).run(accumulator, stats)


@names_its_errors
def depthwise_conv2d_plan(x_shape, x_dtype, w, bias=None, **kw) -> ConvPlan:
    """:func:`depthwise_conv2d` prepared once for inputs of ``x_shape`` and ``x_dtype`` (keywords as
    :func:`depthwise_conv2d` except ``accumulator`` and ``stats``, which ``plan.run(x, accumulator, stats)``
    takes): ``depthwise_conv2d_plan(x.shape, x.dtype, w, bias, **kw)(x)`` is ``depthwise_conv2d(x, w, bias, **kw)``;
    the weights' layouts are made here, once, and the requantization is fused into the tap pairs' store where it
    can be."""
    problem = _depthwise_problem("depthwise_conv2d_plan", probe_array(x_shape, x_dtype, "depthwise_conv2d_plan"), w,
                                 bias, **kw)
    return ConvPlan(problem, _depthwise_prepare_fast, fused=True)


@names_its_errors
def depthwise_conv2d_stages(x, w, bias=None, *, accumulator=None, tap=None, **kw):
    """The :class:`~dspsim.kernels._common.MacStages` of ``depthwise_conv2d(x, w, bias, accumulator=accumulator,
    **kw)``; ``tap`` a flat index into its (B, OH, OW, OC) output."""
    return _depthwise_problem("depthwise_conv2d_stages", x, w, bias, **kw).stages(accumulator, tap)


def _depthwise_problem(func, x, w, bias, *, depth_multiplier=1, stride=1, padding="VALID", dilation=1,
                       input_zero_point, weight_zero_point=0, output_zero_point, multiplier=None, shift=None,
                       act_min=None, act_max=None, rounding="double", out_dtype="int8", requant=None,
                       input_scale=None, weight_scale=None, output_scale=None, tie=None):
    """The validated, resolved :class:`ConvProblem` of a :func:`depthwise_conv2d` call."""
    x = check_tensor(x, func, "x", ndim=4, allowed=ACT_TYPES16)
    w = check_tensor(w, func, "w", ndim=4)
    n_b, in_h, in_w, c = x.shape
    one, k_h, k_w, n_oc = w.shape
    if isinstance(depth_multiplier, bool) or not isinstance(depth_multiplier, (int, np.integer)):
        raise TypeError(f"{func}: depth_multiplier must be an int, got {depth_multiplier!r}")
    if depth_multiplier < 1:
        raise ValueError(f"{func}: depth_multiplier must be >= 1, got {depth_multiplier}")
    if one != 1 or n_oc != c * depth_multiplier:
        raise ValueError(f"{func}: w must have shape (1, KH, KW, C * depth_multiplier) = (1, KH, KW, "
                         f"{c * depth_multiplier}), got {w.shape}")
    mult = int(depth_multiplier)
    g = geometry((in_h, in_w), (k_h, k_w), stride, padding, dilation, func)
    q = resolve_quant(func, "depthwise", x.dtype, w.dtype, n_oc, input_zero_point=input_zero_point,
                      weight_zero_point=weight_zero_point, output_zero_point=output_zero_point, multiplier=multiplier,
                      shift=shift, rounding=rounding, tie=tie, requant=requant, input_scale=input_scale,
                      weight_scale=weight_scale, output_scale=output_scale, act_min=act_min, act_max=act_max,
                      out_dtype=out_dtype)
    w4 = np.ascontiguousarray(w[0].transpose(2, 0, 1)[..., None])  # (OC, KH, KW, 1) for the checked kernel
    return ConvProblem.build(func, q, x, w4, bias, np.arange(n_oc) // mult, g, _depthwise_fast, exact_fast=True)


def _depthwise_prepare_fast(p, epilogue):
    """:func:`_depthwise_fast` prepared for a layer, with the requantization of ``epilogue`` (a
    :class:`~dspsim.kernels.mac.gemm.FusedRequant`): ``run(x) -> (M, OC)`` codes. The weights' layouts are made once;
    the sums are requantized in the tap pairs' store
    (:func:`~dspsim.kernels.mac.depthwise_core.prepare_depthwise_requantize`) where the scheme has lanes, else the int32
    sums go through the requantization loop prepared here."""
    g, q, n_oc = p.geometry, p.quant, p.w.shape[0]
    weights = prepare_depthwise_weights(p.w[..., 0].transpose(1, 2, 0), q.zw, n_oc // p.x.shape[3])
    geom = (g.stride, g.dilation, g.pad_top, g.pad_left, g.out_h, g.out_w)
    store = prepare_store_requant(epilogue, weights)
    if store is not None and takes_pairs(p.x.shape, weights, g.stride, g.dilation, g.out_h, g.out_w):
        return prepare_depthwise_requantize(p.x.shape, weights, q.zx, p.bias, *geom, store)
    requant = prepare_requantize_into(p.x.shape[0] * g.out_h * g.out_w * n_oc, n_oc, 32, False, q.requant,
                                      p.float_bias, q.zo, q.lo, q.hi, p.func)

    def run(x):
        acc = depthwise_accumulate(x, weights, q.zx, p.bias, *geom, 32)
        out = np.empty(acc.size, q.out_dtype)
        requant(acc.reshape(-1), out)
        return out.reshape(-1, n_oc)

    return run


def _depthwise_fast(p, exact_bits):
    """The direct-loop fast path of :class:`ConvProblem` for depthwise weights ``p.w`` (OC, KH, KW, 1):
    :func:`dspsim.kernels.mac.depthwise_core.depthwise_accumulate` (weights prepared per call here; a
    prepared layer keeps its :class:`~dspsim.kernels.mac.depthwise_core.DepthwiseWeights`)."""
    g = p.geometry
    n_oc = p.w.shape[0]
    weights = prepare_depthwise_weights(p.w[..., 0].transpose(1, 2, 0), p.quant.zw, n_oc // p.x.shape[3])
    return depthwise_accumulate(p.x, weights, p.quant.zx, p.bias, g.stride, g.dilation, g.pad_top, g.pad_left,
                                g.out_h, g.out_w, exact_bits)


depthwise_conv2d.__doc__ = """Quantized depthwise convolution, bit-exact with TFLite's DepthwiseConvPerChannel.

    Parameters
    ----------
    x : int8 or uint8 array (B, H, W, C), NHWC
    w : int8 or uint8 array (1, KH, KW, C * depth_multiplier); output channel ``oc = ic * M + m``
    depth_multiplier : int >= 1
""" + _QUANT_DOC + """
    The fast path is :func:`dspsim.kernels.mac.depthwise_core.depthwise_accumulate`: int32 sums exact
    modulo 2^32 (pairs of taps per ``vpmaddwd`` on AVX2) or, when the accumulator is wider and may
    exceed int32, a direct loop in int64; threads split the output rows.
"""
