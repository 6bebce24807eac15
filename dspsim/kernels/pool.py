"""Quantized 2-D pooling, TFLite reference integer kernels (``reference_integer_ops/pooling.h``).

Both ops work on the raw codes, NHWC, with the input's scale and zero point kept (TFLite's Prepare
DCHECKs that input and output share them). The window of output ``(out_y, out_x)`` starts at
``in_y = out_y * stride_h - pad_top`` (same for x) and is clipped to the input: padded taps are
skipped, not counted.
"""
from __future__ import annotations

import numpy as np

from .._errors import names_its_errors
from numba import njit

from ..requant import output_range
from ._common import geometry
from ._checks import check_tensor, pair

_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


@njit(cache=True)
def _pool(x, k_h, k_w, s_h, s_w, pad_t, pad_l, out_h, out_w, is_max, lowest, lo, hi, out):
    """Average (``is_max`` False) or max pooling into ``out``; returns False when a window has no
    input tap (TFLite's AveragePool then fails). Never raises. Per output pixel the window's rows of ``depth``
    codes are folded into one row of int64 accumulators: contiguous loops over the channels, which vectorize."""
    n_b, in_h, in_w, depth = x.shape
    acc = np.empty(depth, np.int64)
    for b in range(n_b):
        for oy in range(out_h):
            for ox in range(out_w):
                iy0 = oy * s_h - pad_t
                ix0 = ox * s_w - pad_l
                fy0 = max(0, -iy0)
                fy1 = min(k_h, in_h - iy0)
                fx0 = max(0, -ix0)
                fx1 = min(k_w, in_w - ix0)
                count = max(fy1 - fy0, 0) * max(fx1 - fx0, 0)
                acc[:] = lowest if is_max else 0
                for fy in range(fy0, fy1):
                    for fx in range(fx0, fx1):
                        row = x[b, iy0 + fy, ix0 + fx]
                        if is_max:
                            for c in range(depth):
                                acc[c] = max(acc[c], np.int64(row[c]))
                        else:
                            for c in range(depth):
                                acc[c] += np.int64(row[c])
                if not is_max:
                    if count == 0:
                        return False
                    # C division truncates toward zero: ties go away from zero
                    for c in range(depth):
                        a = acc[c]
                        acc[c] = (a + count // 2) // count if a > 0 else -((-a + count // 2) // count)
                o = out[b, oy, ox]
                for c in range(depth):
                    o[c] = min(max(acc[c], lo), hi)
    return True


def _run(func, x, filter_size, stride, padding, act_min, act_max, is_max):
    x = check_tensor(x, func, "x", ndim=4, allowed=_TYPES)
    return pool2d_plan(x.shape, x.dtype, filter_size, stride=stride, padding=padding, act_min=act_min,
                       act_max=act_max, is_max=is_max, func=func)(x)


def pool2d_plan(shape, dtype, filter_size, *, stride=1, padding="VALID", act_min=None, act_max=None, is_max,
                func="pool2d_plan"):
    """:func:`average_pool2d` (``is_max`` False) or :func:`max_pool2d` prepared for inputs of ``shape``
    (B, H, W, C) and ``dtype``: the window geometry and clamp derived once; returns the lean
    ``run(x) -> codes``."""
    dtype = np.dtype(dtype)
    k_h, k_w = pair(filter_size, func, "filter_size")
    g = geometry(shape[1:3], (k_h, k_w), stride, padding, 1, func)
    t, lo, hi = output_range(dtype.name, act_min, act_max, func)
    out_shape = (shape[0], g.out_h, g.out_w, shape[3])
    args = (k_h, k_w, g.stride[0], g.stride[1], g.pad_top, g.pad_left, g.out_h, g.out_w, is_max, t.min, lo, hi)

    def run(x):
        out = np.empty(out_shape, dtype)
        if not _pool(np.ascontiguousarray(x), *args, out):
            raise ValueError(f"{func}: a pooling window lies entirely in the padding (TFLite's AveragePool fails)")
        return out

    return run


@names_its_errors
def average_pool2d(x, filter_size, *, stride=1, padding="VALID", act_min=None, act_max=None):
    """TFLite AVERAGE_POOL_2D on codes: ``clamp(round(sum / count), act_min, act_max)``.

    ``sum`` is the int32 sum of the codes in the clipped window and ``count`` the number of taps
    that lie inside the input (padding is not counted). Rounding is TFLite's
    ``acc > 0 ? (acc + count/2) / count : (acc - count/2) / count`` with C's truncating division:
    ties away from zero (codes, not ``code - zero_point``, are averaged, so the tie rule acts on
    codes).

    Parameters
    ----------
    x : int8, uint8 or int16 array (B, H, W, C)
    filter_size, stride : int or (h, w)
    padding : "VALID" | "SAME" | explicit (as :func:`dspsim.conv2d`)
    act_min, act_max : int, optional (fused activation; default the dtype's range)
    """
    return _run("average_pool2d", x, filter_size, stride, padding, act_min, act_max, False)


@names_its_errors
def max_pool2d(x, filter_size, *, stride=1, padding="VALID", act_min=None, act_max=None):
    """TFLite MAX_POOL_2D on codes: the largest code of the clipped window (the dtype's minimum if the
    window has no tap), then ``max(act_min)``, ``min(act_max)``. Exact: no rounding."""
    return _run("max_pool2d", x, filter_size, stride, padding, act_min, act_max, True)
