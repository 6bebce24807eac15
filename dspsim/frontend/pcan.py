"""PCAN gain control (``pcan_gain_control.c``): per-channel automatic gain from the noise estimate.

``gain = WideDynamicFunction(noise_estimate)``: a piecewise-quadratic table lookup of ``2^gain_bits * (x +
offset)^-strength`` by the estimate's bit length (the interval) and its next 10 bits (the fraction), in int32
with C's wraps; ``snr = signal * gain >> snr_shift`` (uint64, kept as uint32); ``PcanShrink``: ``snr^2 >> 20``
below 2 in Q12, else ``(snr >> 6) - 64``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._bits import as_u64, msb, wrap16, wrap32
from ._checks import int_array
from .config import PCAN_OUTPUT_BITS, PCAN_SNR_BITS, WIDE_DYNAMIC_FUNCTION_LUT_SIZE

_U32 = 0xFFFFFFFF


@njit(cache=True, nogil=True)
def _wide_dynamic_function(x, lut):
    """``WideDynamicFunction`` of 0 <= x < 2^32: an int16."""
    if x <= 2:
        return np.int64(lut[x])
    interval = msb(x)
    base = 4 * interval - 6
    if interval < 11:
        frac = (x << (11 - interval)) & 0x3FF
    else:
        frac = (x >> (interval - 11)) & 0x3FF
    result = (np.int64(lut[base + 2]) * frac) >> 5
    result = wrap32(result + wrap32((np.int64(lut[base + 1]) << 5) & _U32))
    result = wrap32(result * frac)
    result = wrap32(result + (1 << 14)) >> 15
    return wrap16(result + np.int64(lut[base]))


@njit(cache=True, nogil=True, inline="always")
def _pcan_shrink(x):
    if x < (2 << PCAN_SNR_BITS):
        return (x * x) >> (2 + 2 * PCAN_SNR_BITS - PCAN_OUTPUT_BITS)
    return (x >> (PCAN_SNR_BITS - PCAN_OUTPUT_BITS)) - (1 << PCAN_OUTPUT_BITS)


@njit(cache=True, nogil=True)
def _pcan_kernel(signal, noise_estimate, lut, snr_shift, out):
    """``PcanGainControlApply``: ``out`` from ``signal`` (uint32 values in int64)."""
    for i in range(signal.shape[0]):
        gain = as_u64(_wide_dynamic_function(noise_estimate[i], lut)) & np.uint64(_U32)
        snr = (np.uint64(signal[i]) * gain) >> np.uint64(snr_shift)
        out[i] = _pcan_shrink(np.int64(snr & np.uint64(_U32)))


@names_its_errors
def wide_dynamic_function(x, lut):
    """``WideDynamicFunction`` elementwise over ``x`` (uint32 values): int16 gains from the 125-entry ``lut``."""
    x = int_array(x, "wide_dynamic_function", "x", 0, 2 ** 32 - 1)
    lut = int_array(lut, "wide_dynamic_function", "lut", -32768, 32767, shape=(WIDE_DYNAMIC_FUNCTION_LUT_SIZE,))
    flat = x.ravel()
    out = np.empty(flat.shape[0], np.int16)
    for i in range(flat.shape[0]):
        out[i] = _wide_dynamic_function(flat[i], lut)
    return out.reshape(x.shape)


@names_its_errors
def pcan_gain_control(signal, noise_estimate, lut, snr_shift: int):
    """One frame of PCAN: uint32 outputs from ``signal`` and the noise reduction's ``noise_estimate`` (uint32)."""
    f = "pcan_gain_control"
    signal = int_array(signal, f, "signal", 0, 2 ** 32 - 1)
    noise_estimate = int_array(noise_estimate, f, "noise_estimate", 0, 2 ** 32 - 1, shape=signal.shape)
    lut = int_array(lut, f, "lut", -32768, 32767, shape=(WIDE_DYNAMIC_FUNCTION_LUT_SIZE,))
    if isinstance(snr_shift, bool) or not isinstance(snr_shift, (int, np.integer)) or not 0 <= snr_shift <= 63:
        raise ValueError(f"{f}: snr_shift must be an int in 0..63, got {snr_shift!r}")
    out = np.empty_like(signal)
    _pcan_kernel(signal, noise_estimate, lut, int(snr_shift), out)
    return out.astype(np.uint32)
