"""PCAN gain control (``pcan_gain_control.c``): per-channel automatic gain from the noise estimate.

``gain = WideDynamicFunction(noise_estimate)``: a piecewise-quadratic table lookup of ``2^gain_bits * (x +
offset)^-strength`` by the estimate's bit length (the interval) and its next 10 bits (the fraction), in int32
with C's wraps; ``snr = signal * gain >> snr_shift`` (uint64, kept as uint32); ``PcanShrink``: ``snr^2 >> 20``
below 2 in Q12, else ``(snr >> 6) - 64``.
"""
from __future__ import annotations

import numpy as np

from .._errors import names_its_errors
from ..kernels.signal.pcan import _pcan_kernel, _wide_dynamic_function
from ._checks import int_array
from .config import WIDE_DYNAMIC_FUNCTION_LUT_SIZE


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
