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
from numba import njit

from ._common import bias_arrays, check_tensor, geometry, im2col, resolve_quant, run, signed_weights
from .gemm import gemm_s32

_QUANT_DOC = """
    bias : int32 array (OC,), float array (OC,) (FBGEMM only), or None (= zero)
    input_zero_point, weight_zero_point, output_zero_point, multiplier, shift, act_min, act_max,
    rounding, requant, input_scale, weight_scale, output_scale, accumulator, out_dtype, stats :
        As in :func:`dspsim.fully_connected` (``Requant.from_scales`` with op "conv"/"depthwise":
        ``double(s_in) * double(s_w[c]) / double(s_out)``).
    stride, dilation : int or (h, w), >= 1
    padding : "VALID" | "SAME" | int | (ph, pw) | ((top, bottom), (left, right))
        "SAME" as TFLite/TensorFlow (odd pixel at the bottom/right).

    Returns
    -------
    ndarray (B, OH, OW, OC) of ``out_dtype`` [, KernelStats]
"""


def conv2d(x, w, bias=None, *, stride=1, padding="VALID", dilation=1, input_zero_point, weight_zero_point=0,
           output_zero_point, multiplier=None, shift=None, act_min=None, act_max=None, rounding="double",
           accumulator=None, out_dtype="int8", requant=None, input_scale=None, weight_scale=None,
           output_scale=None, stats=False):
    func = "conv2d"
    x = check_tensor(x, func, "x", ndim=4)
    w = check_tensor(w, func, "w", ndim=4)
    n_b, in_h, in_w, c = x.shape
    n_oc, k_h, k_w, icg = w.shape
    if c % icg:
        raise ValueError(f"{func}: input channels ({c}) must be a multiple of the filter's input channels ({icg})")
    groups = c // icg
    if n_oc % groups:
        raise ValueError(f"{func}: output channels ({n_oc}) must be a multiple of groups ({groups})")
    g = geometry((in_h, in_w), (k_h, k_w), stride, padding, dilation, func)
    q = resolve_quant(func, "conv", x.dtype, w.dtype, n_oc, input_zero_point=input_zero_point,
                      weight_zero_point=weight_zero_point, output_zero_point=output_zero_point,
                      multiplier=multiplier, shift=shift, rounding=rounding, requant=requant,
                      input_scale=input_scale, weight_scale=weight_scale, output_scale=output_scale,
                      act_min=act_min, act_max=act_max, out_dtype=out_dtype)
    bias_i, fbias = bias_arrays(bias, n_oc, q, func)
    ws, q = signed_weights(w, q)
    x = np.ascontiguousarray(x)
    wm = ws.reshape(n_oc, -1)
    k = wm.shape[1]
    ocg = n_oc // groups
    zx, zw = q.zx, q.zw

    def fast(exact_bits):
        m = n_b * g.out_h * g.out_w
        s = None if groups == 1 else np.empty((m, n_oc), np.int32)
        row = np.zeros((m, groups) if zw.any() else (1, 1), np.int64)
        for gi in range(groups):
            a = im2col(x, (k_h, k_w), gi * icg, icg, g, zx)
            part = gemm_s32(a, wm[gi * ocg:(gi + 1) * ocg])
            if groups == 1:
                s = part
            else:
                s[:, gi * ocg:(gi + 1) * ocg] = part
            if zw.any():
                row[:, gi] = a.sum(axis=1, dtype=np.int64)
        if groups > 1 and zw.any():
            row = np.repeat(row, ocg, axis=1)  # one activation sum per output channel
        col = -zx * wm.sum(axis=1, dtype=np.int64) + k * zx * zw + bias_i
        return s, row, -zw, col

    return run(func, q, accumulator, stats, x4=x, w4=ws, ch_base=(np.arange(n_oc) // ocg) * icg, g=g, wm=wm,
               bias_i=bias_i, fbias=fbias, fast=fast, exact_fast=False)


conv2d.__doc__ = """Quantized 2-D convolution (grouped when ``w.shape[3] < x.shape[3]``), bit-exact with TFLite.

    Parameters
    ----------
    x : int8 or uint8 array (B, H, W, C), NHWC
    w : int8 or uint8 array (OC, KH, KW, C / groups), OHWI
""" + _QUANT_DOC + """
    The gemm fast path is im2col (padding filled with the input zero point) + ``gemm_s32`` per
    group, finished exactly by the zero-point identity (see ``dspsim.accumulator``).
"""


@njit(cache=True)
def _depthwise(x, w, zx, zw, depth_multiplier, stride_h, stride_w, dil_h, dil_w, pad_t, pad_l, out_h, out_w, acc):
    """Exact int64 depthwise sums: ``acc[(b*OH + oy)*OW + ox, ic*M + m] = sum (x - zx)(w - zw)``.

    ``w`` is (KH, KW, C*M). Skipped taps (outside the input) add nothing. Never raises.
    """
    n_b, in_h, in_w, c = x.shape
    k_h, k_w, _ = w.shape
    for b in range(n_b):
        for oy in range(out_h):
            for ox in range(out_w):
                row = (b * out_h + oy) * out_w + ox
                a = acc[row]
                a[:] = 0
                for fy in range(k_h):
                    iy = oy * stride_h - pad_t + dil_h * fy
                    if iy < 0 or iy >= in_h:
                        continue
                    for fx in range(k_w):
                        ix = ox * stride_w - pad_l + dil_w * fx
                        if ix < 0 or ix >= in_w:
                            continue
                        xrow = x[b, iy, ix]
                        wrow = w[fy, fx]
                        if depth_multiplier == 1:  # the common case: one straight, vectorizable loop
                            for oc in range(c):
                                a[oc] += (np.int64(xrow[oc]) - zx) * (np.int64(wrow[oc]) - zw[oc])
                        else:
                            for ic in range(c):
                                xv = np.int64(xrow[ic]) - zx
                                for mm in range(depth_multiplier):
                                    oc = ic * depth_multiplier + mm
                                    a[oc] += xv * (np.int64(wrow[oc]) - zw[oc])


def depthwise_conv2d(x, w, bias=None, *, depth_multiplier=1, stride=1, padding="VALID", dilation=1,
                     input_zero_point, weight_zero_point=0, output_zero_point, multiplier=None, shift=None,
                     act_min=None, act_max=None, rounding="double", accumulator=None, out_dtype="int8",
                     requant=None, input_scale=None, weight_scale=None, output_scale=None, stats=False):
    func = "depthwise_conv2d"
    x = check_tensor(x, func, "x", ndim=4)
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
                      weight_zero_point=weight_zero_point, output_zero_point=output_zero_point,
                      multiplier=multiplier, shift=shift, rounding=rounding, requant=requant,
                      input_scale=input_scale, weight_scale=weight_scale, output_scale=output_scale,
                      act_min=act_min, act_max=act_max, out_dtype=out_dtype)
    bias_i, fbias = bias_arrays(bias, n_oc, q, func)
    ws, q = signed_weights(w, q)
    x = np.ascontiguousarray(x)
    w3 = np.ascontiguousarray(ws[0])
    w4 = np.ascontiguousarray(w3.transpose(2, 0, 1)[..., None])  # (OC, KH, KW, 1) for the checked kernel

    def fast(exact_bits):
        acc = np.empty((n_b * g.out_h * g.out_w, n_oc), np.int64)
        _depthwise(x, w3, q.zx, q.zw, mult, g.stride[0], g.stride[1], g.dilation[0], g.dilation[1], g.pad_top,
                   g.pad_left, g.out_h, g.out_w, acc)
        return acc, np.zeros((1, 1), np.int64), np.zeros(n_oc, np.int64), bias_i

    return run(func, q, accumulator, stats, x4=x, w4=w4, ch_base=np.arange(n_oc) // mult, g=g,
               wm=w4.reshape(n_oc, -1), bias_i=bias_i, fbias=fbias, fast=fast, exact_fast=True)


depthwise_conv2d.__doc__ = """Quantized depthwise convolution, bit-exact with TFLite's DepthwiseConvPerChannel.

    Parameters
    ----------
    x : int8 or uint8 array (B, H, W, C), NHWC
    w : int8 or uint8 array (1, KH, KW, C * depth_multiplier); output channel ``oc = ic * M + m``
    depth_multiplier : int >= 1
""" + _QUANT_DOC + """
    The fast path is a direct loop with exact int64 sums (wrapped to the accumulator at the end).
"""
