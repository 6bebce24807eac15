"""The oracle of the pool family: AVERAGE_POOL_2D, MAX_POOL_2D.

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

from fractions import Fraction

from .fixedpoint import _np, _range, _shape, clamp, round_fraction


def pool_geometry(n: int, k: int, stride: int, padding: str):
    """(out, pad_before) of TFLite's ComputePaddingHeightWidth (dilation 1)."""
    out = -(-n // stride) if padding == "SAME" else -(-(n - k + 1) // stride)
    return out, max(0, ((out - 1) * stride + k - n) // 2)


def _pool_windows(shape, k_hw, stride, padding):
    """(b, oy, ox, taps) for every output pixel; taps = [(iy, ix)] inside the input (TFLite clipping)."""
    n_b, in_h, in_w, _ = shape
    (k_h, k_w), (s_h, s_w) = k_hw, stride
    out_h, p_t = pool_geometry(in_h, k_h, s_h, padding)
    out_w, p_l = pool_geometry(in_w, k_w, s_w, padding)
    for b in range(n_b):
        for oy in range(out_h):
            for ox in range(out_w):
                taps = [(oy * s_h - p_t + fy, ox * s_w - p_l + fx) for fy in range(k_h) for fx in range(k_w)]
                yield b, oy, ox, [(iy, ix) for iy, ix in taps if 0 <= iy < in_h and 0 <= ix < in_w]


def average_pool2d(x, k_hw, stride, padding, lo, hi):
    """TFLite AveragePool on codes: round(sum / count) with ties away from zero, then clamp.

    ``x`` (B, H, W, C) nested sequences, ``padding`` "SAME" | "VALID"; returns {(b, oy, ox, c): code}."""
    out = {}
    for b, oy, ox, taps in _pool_windows(_shape(x), k_hw, stride, padding):
        for c in range(_shape(x)[3]):
            s = sum(int(x[b][iy][ix][c]) for iy, ix in taps)
            out[(b, oy, ox, c)] = clamp(round_fraction(Fraction(s, len(taps)), "half_away_from_zero"), lo, hi)
    return out


def max_pool2d(x, k_hw, stride, padding, lo, hi):
    """TFLite MaxPool on codes: max over the clipped window, clamp; a dict as :func:`average_pool2d`."""
    out = {}
    for b, oy, ox, taps in _pool_windows(_shape(x), k_hw, stride, padding):
        for c in range(_shape(x)[3]):
            out[(b, oy, ox, c)] = clamp(max(int(x[b][iy][ix][c]) for iy, ix in taps), lo, hi)
    return out


def _pool_oracle(f, x, filter_size, stride, padding, act_min, act_max):
    np = _np()
    k = (filter_size, filter_size) if np.ndim(filter_size) == 0 else tuple(filter_size)
    s = (stride, stride) if np.ndim(stride) == 0 else tuple(stride)
    lo, hi = _range(x.dtype, act_min, act_max)
    res = f(x.tolist(), k, s, padding.upper(), lo, hi)
    out = np.zeros([max(key[d] for key in res) + 1 for d in range(4)], x.dtype)
    for key, v in res.items():
        out[key] = v
    return out


def average_pool2d_oracle(x, filter_size, *, stride=1, padding="VALID", act_min=None, act_max=None):
    return _pool_oracle(average_pool2d, x, filter_size, stride, padding, act_min, act_max)


def max_pool2d_oracle(x, filter_size, *, stride=1, padding="VALID", act_min=None, act_max=None):
    return _pool_oracle(max_pool2d, x, filter_size, stride, padding, act_min, act_max)
