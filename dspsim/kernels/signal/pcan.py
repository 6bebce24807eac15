"""The Signal library's PCAN (``signal/src/pcan_argc_fixed.cc``), which TFLite Micro's microfrontend shares
(``pcan_gain_control.c``): per-channel automatic gain from the noise estimate.

``gain = WideDynamicFunction(noise_estimate)``: a piecewise-quadratic table lookup of ``2^gain_bits * (x +
offset)^-strength`` by the estimate's bit length (the interval) and its next 10 bits (the fraction), in int32
with C's wraps; ``snr = signal * gain >> snr_shift`` (uint64, kept as uint32); ``PcanShrink``: ``snr^2 >> 20``
below 2 in Q12, else ``(snr >> 6) - 64``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..._errors import names_its_errors
from .._checks import check_tensor, int_in_range
from ..._bits import as_u64, msb, wrap16, wrap32

PCAN_SNR_BITS = 12     # kPcanSnrBits
PCAN_OUTPUT_BITS = 6   # kPcanOutputBits
GAIN_LUT_SIZE = 125    # the entries WideDynamicFunction reads: 4 * 32 - 6 + 2 + 1
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
def signal_pcan(x, noise_estimate, gain_lut, snr_shift: int):
    """``SignalPCAN``: the uint32 channels ``x`` after PCAN gain control by ``noise_estimate`` (uint32, the
    spectral subtraction's estimate) through the int16 ``gain_lut`` (at least 125 entries); ``snr_shift`` 0..63."""
    f = "signal_pcan"
    u32 = (np.dtype(np.uint32),)
    x = check_tensor(x, f, "x", ndim=1, allowed=u32)
    est = check_tensor(noise_estimate, f, "noise_estimate", ndim=1, allowed=u32)
    if est.shape != x.shape:
        raise ValueError(f"{f}: noise_estimate must have x's shape {x.shape}, got {est.shape}")
    lut = check_tensor(gain_lut, f, "gain_lut", ndim=1, allowed=(np.dtype(np.int16),))
    if lut.shape[0] < GAIN_LUT_SIZE:
        raise ValueError(f"{f}: gain_lut must have at least {GAIN_LUT_SIZE} entries (WideDynamicFunction reads up "
                         f"to index {GAIN_LUT_SIZE - 1}), got {lut.shape[0]}")
    shift = int_in_range(snr_shift, 0, 63, f, "snr_shift")
    out = np.empty(x.shape[0], np.int64)
    _pcan_kernel(x.astype(np.int64), est.astype(np.int64), np.ascontiguousarray(lut), shift, out)
    return out.astype(np.uint32)
