"""Noise reduction (``noise_reduction.c``): a per-channel running noise estimate, subtracted with a floor.

Per channel (even and odd channels smooth at different Q14 rates): ``scaled = signal << smoothing_bits``
(uint32, wrapping); ``estimate = (scaled * s + estimate * (2^14 - s)) >> 14`` in uint64, kept as uint32 and
stored as the state; the output is ``(scaled - min(estimate, scaled)) >> smoothing_bits``, but not below
``signal * min_signal_remaining >> 14``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._checks import int_array
from .config import NOISE_REDUCTION_BITS

_U32 = 0xFFFFFFFF


@njit(cache=True, nogil=True)
def _noise_reduction_kernel(signal, estimate, smoothing_bits, even, odd, min_signal_remaining, out):
    """``NoiseReductionApply``: ``out`` from ``signal`` (uint32 values in int64); ``estimate`` updated in place."""
    for i in range(signal.shape[0]):
        smoothing = even if (i & 1) == 0 else odd
        one_minus = (1 << NOISE_REDUCTION_BITS) - smoothing
        scaled = (signal[i] << smoothing_bits) & _U32
        est = ((scaled * smoothing + estimate[i] * one_minus) >> NOISE_REDUCTION_BITS) & _U32
        estimate[i] = est
        if est > scaled:
            est = scaled
        floor = ((signal[i] * min_signal_remaining) >> NOISE_REDUCTION_BITS) & _U32
        subtracted = (scaled - est) >> smoothing_bits
        out[i] = subtracted if subtracted > floor else floor


@names_its_errors
def noise_reduction(signal, estimate, *, smoothing_bits: int, even_smoothing: int, odd_smoothing: int,
                    min_signal_remaining: int):
    """One frame of noise reduction: (output uint32, new estimate uint32). The Q14 parameters are integers
    0..16384 (:func:`dspsim.frontend.tables.noise_reduction_params`); ``smoothing_bits`` 0..16."""
    f = "noise_reduction"
    signal = int_array(signal, f, "signal", 0, 2 ** 32 - 1)
    estimate = int_array(estimate, f, "estimate", 0, 2 ** 32 - 1, shape=signal.shape).copy()
    for name, v, hi in (("smoothing_bits", smoothing_bits, 16), ("even_smoothing", even_smoothing, 16384),
                        ("odd_smoothing", odd_smoothing, 16384), ("min_signal_remaining", min_signal_remaining,
                                                                   16384)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v <= hi:
            raise ValueError(f"{f}: {name} must be an int in 0..{hi}, got {v!r}")
    if signal.ndim != 1:
        raise ValueError(f"{f}: signal must be 1-D, got shape {signal.shape}")
    out = np.empty_like(signal)
    _noise_reduction_kernel(signal, estimate, int(smoothing_bits), int(even_smoothing), int(odd_smoothing),
                            int(min_signal_remaining), out)
    return out.astype(np.uint32), estimate.astype(np.uint32)
