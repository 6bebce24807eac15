"""Window: ``WindowProcessSamples``'s arithmetic on one full window (``window.c``).

Each sample times its Q12 coefficient, in int32, arithmetic shift right by 12, kept as int16; the largest
magnitude of the result is tracked as C does it, in int16: ``-(-32768)`` wraps to -32768, which is never the
maximum (the FFT's input shift then ignores it).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from .._bits import wrap16
from ._checks import int16_array
from .config import FRONTEND_WINDOW_BITS


@njit(cache=True, nogil=True)
def _window_kernel(frame, coefficients, out):
    """``out[i] = (int16)((int32)frame[i] * coefficients[i] >> 12)``; returns ``max_abs_output_value``."""
    max_abs = 0
    for i in range(frame.shape[0]):
        v = wrap16((np.int64(frame[i]) * np.int64(coefficients[i])) >> FRONTEND_WINDOW_BITS)
        out[i] = v
        if v < 0:
            v = wrap16(-v)
        if v > max_abs:
            max_abs = v
    return max_abs


@names_its_errors
def apply_window(frame, coefficients):
    """One window of int16 samples times int16 Q12 ``coefficients``: (int16 output, ``max_abs_output_value``)."""
    frame = int16_array(frame, "apply_window", "frame")
    coefficients = int16_array(coefficients, "apply_window", "coefficients")
    if frame.shape != coefficients.shape:
        raise ValueError(f"apply_window: frame and coefficients must have the same length, got {frame.shape[0]} "
                         f"and {coefficients.shape[0]}")
    out = np.empty(frame.shape[0], np.int16)
    return out, int(_window_kernel(frame, coefficients, out))
