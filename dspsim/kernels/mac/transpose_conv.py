"""Quantized TRANSPOSE_CONV (int8 or int16 input, int8 per-channel weights, int32 / int64 bias).

TFLite's reference kernel (``reference_integer_ops::TransposeConv``, used by LiteRT ``transpose_conv.cc``
with ``kReference`` and by tflite-micro ``transpose_conv.cc``) scatters every input pixel into an
int32 scratch buffer, ``scratch[b, in_y*stride - pad_top + fy, in_x*stride - pad_left + fx, oc] +=
(x - zx) * w[oc, fy, fx, ic]`` (taps outside the output are dropped), then per output element adds the
bias, requantizes per output channel, adds the output zero point and clamps. The filter zero point
is not used (int8 filters are symmetric). The padding is TFLite's ``ComputePaddingHeightWidth`` run on
the *output* size (SAME: ``total = max((ceil(out / s) - 1) * s + k - out, 0)``, ``pad = total // 2``;
VALID: 0). The requantization is any :class:`dspsim.Requant`: ``Requant.from_scales(..., engine="tflm", op="transpose_conv")``
for LiteRT/TFLM (``MultiplyByQuantizedMultiplier``), ``engine="xnnpack"`` for XNNPACK's deconvolution
(float32 scale, ties to even). The 16x8 kernel (int16 input and output, zero points 0) accumulates in
int64 and requantizes with the int64 ``MultiplyByQuantizedMultiplier`` (15-bit multiplier, one rounding).
"""
from __future__ import annotations

from enum import Enum
from typing import NamedTuple

import numpy as np
from numba import njit

from ...fixedpoint import as_int_array, multiply_by_quantized_multiplier_int64
from ...requant import Requant, float_bias_arrays, output_range
from ..quantize.requantize import requantize, requantize_into
from ..._errors import names_its_errors
from .._common import geometry
from .._checks import check_tensor, pair, zero_point

__all__ = ["RowFlush", "transpose_conv", "transpose_conv_stages"]


class RowFlush(str, Enum):
    """How the int8 kernel hands finished output rows over, where an engine computes them row by row."""

    EXACT = "exact"
    """Every output row gets its own sums (TFLite's reference kernel; CMSIS-NN from 4a8f5b5 on)."""
    CMSIS_NN_4AB83CC = "cmsis-nn-4ab83cc"
    """``arm_transpose_conv_s8`` of CMSIS-NN 4ab83cc (the commit TFLM 90b983c pins): input rows accumulate into
    a rolling buffer of ``max(KH, SH)`` rows, and after input row ``j`` it flushes ``SH`` rows once the top
    padding is behind it, none before, never the partial count of the row where the padding ends. Where
    ``pad_top % SH != 0`` every later row is shifted by one buffer position (sums meant for a neighbour mixed
    in) and the last row is left unwritten: it keeps what the output buffer held, 0 here (TFLM's arena, as
    measured). CMSIS-NN issue #230."""
    CMSIS_NN_4A8F5B5 = "cmsis-nn-4a8f5b5"
    """The same rolling buffer with the fix of 4a8f5b5 (the row where the padding ends flushes its partial
    count): the integers of :attr:`EXACT`, computed the way that kernel schedules them."""


@njit(cache=True)
def _scatter(x, w, zx, stride_h, stride_w, pad_top, pad_left, acc):
    """``acc[b, oy, ox, oc] += (x[b, iy, ix, ic] - zx) * w[oc, fy, fx, ic]`` in int64 (exact; the int8
    kernel's int32 wrap is taken once at the end, which is the same modulo 2^32)."""
    n, in_h, in_w, c_in = x.shape
    c_out, k_h, k_w, _ = w.shape
    out_h, out_w = acc.shape[1], acc.shape[2]
    for b in range(n):
        for iy in range(in_h):
            for ix in range(in_w):
                oy0 = iy * stride_h - pad_top
                ox0 = ix * stride_w - pad_left
                for fy in range(k_h):
                    oy = oy0 + fy
                    if oy < 0 or oy >= out_h:
                        continue
                    for fx in range(k_w):
                        ox = ox0 + fx
                        if ox < 0 or ox >= out_w:
                            continue
                        for ic in range(c_in):
                            v = np.int64(x[b, iy, ix, ic]) - zx
                            for oc in range(c_out):
                                acc[b, oy, ox, oc] += v * w[oc, fy, fx, ic]


class _Layer(NamedTuple):
    """A resolved :func:`transpose_conv` call."""

    x: np.ndarray
    w: np.ndarray
    b: np.ndarray
    g: object
    zx: int
    zo: int
    out_hw: tuple
    wide: bool
    row_flush: RowFlush


def _resolve(func, x, w, bias, output_size, stride, padding, input_zero_point, output_zero_point, requant,
             row_flush):
    """:func:`transpose_conv`'s arguments checked and resolved: a :class:`_Layer`."""
    x = check_tensor(x, func, "x", ndim=4, allowed=(np.dtype(np.int8), np.dtype(np.int16)))
    w = check_tensor(w, func, "w", ndim=4, allowed=(np.dtype(np.int8),))
    if w.shape[3] != x.shape[3]:
        raise ValueError(f"{func}: w has {w.shape[3]} input channels (OHWI), x has {x.shape[3]}")
    if not isinstance(requant, Requant):
        raise TypeError(f"{func}: requant must be a dspsim.Requant, got {type(requant).__name__}")
    if not (isinstance(padding, str) and padding.upper() in ("SAME", "VALID")):
        raise ValueError(f"{func}: padding must be 'SAME' or 'VALID', got {padding!r}")
    out_h, out_w = pair(output_size, func, "output_size", lo=1)
    g = geometry((out_h, out_w), w.shape[1:3], stride, padding, 1, func)
    zx = zero_point(input_zero_point, x.dtype, func, "input_zero_point")
    zo = zero_point(output_zero_point, x.dtype, func, "output_zero_point")
    n_out = x.shape[0] * out_h * out_w * w.shape[0]
    if n_out >= 1 << 31:
        raise ValueError(f"{func}: the output ({x.shape[0]}, {out_h}, {out_w}, {w.shape[0]}) has more than 2^31 - 1 "
                         "elements (TFLite's int sizes)")
    wide = x.dtype == np.int16
    if wide and (zx != 0 or zo != 0 or requant.scheme not in ("double", "single")):
        raise ValueError(f"{func}: the 16x8 kernel needs zero points 0 and a fixed-point requant (its int64 MBQM is "
                         "the same in both builds), "
                         f"got {zx}, {zo}, {requant.scheme!r}")
    try:
        row_flush = RowFlush(row_flush)
    except ValueError:
        raise ValueError(f"{func}: row_flush must be one of {[r.value for r in RowFlush]}, got {row_flush!r}") from None
    if wide and row_flush is not RowFlush.EXACT:
        raise ValueError(f"{func}: row_flush {row_flush.value!r} is an int8 kernel's; the 16x8 kernel is exact")
    if row_flush is not RowFlush.EXACT and w.shape[1] < g.stride[0]:
        raise ValueError(f"{func}: arm_transpose_conv_s8 writes past its output when the filter ({w.shape[1]} rows) is "
                         f"shorter than the stride ({g.stride[0]}): undefined behaviour, no integers to give")
    c_out = w.shape[0]
    b = np.zeros(c_out, np.int64)
    if bias is not None:
        bits = 63 if wide else 31
        b = as_int_array(bias, func, "bias", -(1 << bits), (1 << bits) - 1)
        if b.shape != (c_out,):
            raise ValueError(f"{func}: bias must have shape ({c_out},), got {b.shape}")
    return _Layer(x, w, b, g, zx, zo, (out_h, out_w), wide, row_flush)


@names_its_errors
def transpose_conv(x, w, bias=None, *, output_size, stride=1, padding="SAME", input_zero_point, output_zero_point,
                   requant: Requant, act_min=None, act_max=None, row_flush=RowFlush.EXACT):
    """TFLite TRANSPOSE_CONV (reference kernel: scratch accumulation, then per-channel requantization).

    int8: ``acc = int32(scatter sum of (x - zx) * w + bias[oc])`` (wraps in int32), ``out =
    clamp(requant(acc) + zo, act_min, act_max)``. With a fixed-point ``requant`` MBQM rounds twice
    (SRDHM ties toward +inf, the right shift ties away from zero); with XNNPACK's float scale, ties to
    even. int16 (16x8): ``acc`` in int64 (exact), ``out = clamp(MBQM_int64(acc))`` (15-bit multiplier,
    ties toward +inf, result truncated to int32 before the clamp). The clamp is the only saturation.

    Parameters
    ----------
    x : int8 or int16 array (N, H, W, C_in), NHWC
    w : int8 array (C_out, KH, KW, C_in), OHWI (TFLite's transpose-conv filter layout)
    bias : int32 array (C_out,) (int16 input: int64), optional
    output_size : (out_h, out_w)
        The spatial size of TFLite's ``output_shape`` input.
    stride : int or (sh, sw)
    padding : "SAME" | "VALID"
    input_zero_point, output_zero_point : int
    requant : Requant
        One multiplier/shift (or scale) per output channel, or one for all; int16 input: fixed point
        (``Requant.fixed_point`` / ``from_scales(engine="tflm")``, either rounding), zero points 0.
    act_min, act_max : int, optional
        Fused activation range (default the full range of x's dtype).
    row_flush : RowFlush
        int8 only: :attr:`RowFlush.CMSIS_NN_4AB83CC` reproduces that kernel's row bug (see the enum).

    Returns an array of x's dtype (N, out_h, out_w, C_out).
    """
    layer = _resolve("transpose_conv", x, w, bias, output_size, stride, padding, input_zero_point, output_zero_point,
                     requant, row_flush)
    x, w, b, g, zx, zo, (out_h, out_w), wide, row_flush = layer
    c_out = w.shape[0]
    if row_flush is not RowFlush.EXACT:
        acc, written = _rolling_rows(x, w, zx, b.astype(np.int64), g, out_h, out_w,
                                     partial_flush=row_flush is RowFlush.CMSIS_NN_4A8F5B5)
        out = requantize((acc + (1 << 31)) % (1 << 32) - (1 << 31), requant, zo, act_min, act_max, out_dtype="int8")
        out.reshape(-1, out_w, c_out)[written:] = 0  # never written: the output buffer's 0
        return out
    _, lo, hi = output_range("int16" if wide else "int8", act_min, act_max, "transpose_conv")
    return _requantized(layer, _wrapped(layer, _exact_sums(layer) + b), requant, lo, hi, x.dtype)


def _exact_sums(layer):
    """The scatter sums before the bias, exact in int64."""
    x, w, _, g, zx, _, (out_h, out_w), _, _ = layer
    acc = np.zeros((x.shape[0], out_h, out_w, w.shape[0]), np.int64)
    _scatter(x, w, zx, g.stride[0], g.stride[1], g.pad_top, g.pad_left, acc)
    return acc


def _wrapped(layer, acc):
    """``acc`` in the kernel's accumulator: the int8 kernel's int32 (wrapping), the 16x8 kernel's int64."""
    return acc if layer.wide else (acc + (1 << 31)) % (1 << 32) - (1 << 31)


def _requantized(layer, acc, requant, lo, hi, dtype):
    """Requantize the accumulators: ``+ zo`` and the clamp to [lo, hi], as ``dtype`` (int64 and its extremes: the
    value before the clamp)."""
    if layer.wide:  # the 16x8 kernel: int64 MBQM, zero points 0
        v = multiply_by_quantized_multiplier_int64(acc, np.asarray(requant.multiplier), np.asarray(requant.shift),
                                                   axis=-1)
        return np.clip(v, lo, hi).astype(dtype)
    n = acc.shape[-1]
    per_channel = max(requant.channels, len(requant.act_times_w)) > 1
    out = np.empty(acc.size, dtype)
    requantize_into(np.ascontiguousarray(acc).reshape(-1), n, 64, requant,
                    float_bias_arrays(None, requant, n if per_channel else 1, "transpose_conv"), layer.zo, lo, hi,
                    out, "transpose_conv")
    return out.reshape(acc.shape)


@names_its_errors
def transpose_conv_stages(x, w, bias=None, *, output_size, stride=1, padding="SAME", input_zero_point,
                          output_zero_point, requant: Requant, act_min=None, act_max=None, row_flush=RowFlush.EXACT,
                          tap=None):
    """The :class:`~dspsim.kernels._common.MacStages` of :func:`transpose_conv` (same arguments; ``act_min`` /
    ``act_max`` unused): the scratch sums before and after the bias in the kernel's accumulator (int32 wrapping,
    int64 for 16x8) and the requantized value before ``+ zo`` and the clamp, through :func:`transpose_conv`'s own
    requantization; ``tap`` (a flat index into the output) adds that output's taps in the scatter's order (input
    row, input column, filter row, filter column, input channel). The exact kernel only (``RowFlush.EXACT``)."""
    from .._common import MacStages  # the driver's stage type (it imports this package's gemm)

    func = "transpose_conv_stages"
    layer = _resolve(func, x, w, bias, output_size, stride, padding, input_zero_point, output_zero_point, requant,
                     row_flush)
    if layer.row_flush is not RowFlush.EXACT:
        raise ValueError(f"{func}: row_flush {layer.row_flush.value!r} leaves rows unwritten; the stages are the "
                         "exact kernel's")
    pre = _exact_sums(layer)
    acc_bias = _wrapped(layer, pre + layer.b)
    info = np.iinfo(np.int64)
    value = _requantized(layer, acc_bias, requant, info.min, info.max, np.int64) - layer.zo
    taps = None if tap is None else _taps(layer, int(tap))
    return MacStages(_wrapped(layer, pre), acc_bias, value, taps)


def _taps(layer, tap):
    """Output ``tap``'s taps in :func:`_scatter`'s order, with the sum after each (in the accumulator)."""
    x, w, _, g, zx, _, (out_h, out_w), _, _ = layer
    b, oy, ox, oc = np.unravel_index(tap, (x.shape[0], out_h, out_w, w.shape[0]))
    rows = [(x[b, iy, ix, ic], w[oc, fy, fx, ic])
            for iy in range(x.shape[1]) for ix in range(x.shape[2])
            for fy in [oy - (iy * g.stride[0] - g.pad_top)] if 0 <= fy < w.shape[1]
            for fx in [ox - (ix * g.stride[1] - g.pad_left)] if 0 <= fx < w.shape[2]
            for ic in range(x.shape[3])]
    xs, ws = (np.array([r[i] for r in rows], np.int64).reshape(-1) for i in (0, 1))
    k = len(xs)
    return {"x": xs, "w": ws, "x_zero_point": np.full(k, zx, np.int64), "w_zero_point": np.zeros(k, np.int64),
            "kind": np.zeros(k, np.int64), "partial_sum": _wrapped(layer, np.cumsum((xs - zx) * ws))}




def _rolling_rows(x, w, zx, bias, g, out_h, out_w, partial_flush):
    """The int32 sums (int64 here) of ``arm_transpose_conv_s8``'s rolling row buffer, as that C code schedules
    them: each input row's filter rows added into consecutive buffer rows from the current one, finished rows
    flushed to the output in order (``partial_flush``: the fixed count of 4a8f5b5; else the bug of 4ab83cc),
    the leftover rows written where they fall inside the output. Returns the sums (N, out_h, out_w, C_out) and
    how many output rows (counted across the batch) were written; the rest hold no sums."""
    n, in_h, in_w, _ = x.shape
    c_out, k_h, k_w, _ = w.shape
    (s_h, s_w), pad_top, pad_left = g.stride, g.pad_top, g.pad_left
    buf_w, buf_h = (in_w - 1) * s_w + max(k_w, s_w), max(k_h, s_h)
    xs = x.astype(np.int64) - zx
    wt = w.astype(np.int64)
    rows = []  # the output pointer advances row by row across the batch
    for b in range(n):
        slots = np.broadcast_to(bias, (buf_h, buf_w, c_out)).copy()
        current = 0
        for j in range(in_h):
            skip_top = max(0, pad_top - j * s_h)
            skip_bottom = max(0, j * s_h + k_h - (pad_top + out_h) - 1)
            for r, ky in enumerate(range(skip_top, k_h - skip_bottom)):
                slot = slots[(current + r) % buf_h]
                for kx in range(k_w):
                    slot[kx:kx + s_w * (in_w - 1) + 1:s_w] += xs[b, j] @ wt[:, ky, kx, :].T
            if partial_flush:
                count = max(0, (j + 1) * s_h - pad_top) - max(0, j * s_h - pad_top)
            else:
                count = s_h if skip_top == 0 else 0
            for _ in range(count):
                rows.append(slots[current, pad_left:pad_left + out_w].copy())
                slots[current] = bias
                current = (current + 1) % buf_h
        for y in range(k_h - s_h):
            if pad_top <= in_h * s_h + y < pad_top + out_h:
                rows.append(slots[current, pad_left:pad_left + out_w].copy())
            current = (current + 1) % buf_h
    acc = np.zeros((n * out_h, out_w, c_out), np.int64)
    kept = rows[:n * out_h]  # writes past the output (none on valid shapes) are the C code's overflow
    if kept:
        acc[:len(kept)] = np.stack(kept)
    return acc.reshape(n, out_h, out_w, c_out), len(kept)
