"""Log scale (``log_scale.c``): ``round(ln(x * 2^correction) * 2^scale_shift)`` in fixed point, saturated to
uint16.

``Log``: the bit length gives log2's integer part; the next 16 bits of the mantissa, plus a 128-segment
linearly interpolated correction table (``kLogLut``: ``2^16 * (log2(1 + f) - f)``), its fraction (Q16); times
``kLogCoeff`` = round(2^16 ln 2) with rounding, then times ``2^scale_shift`` with rounding, both in uint32.
Values <= 1 after the correction shift give 0.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from .._bits import msb
from ._checks import int_array
from .config import LOG_COEFF, LOG_SCALE_LOG2, LOG_SEGMENTS_LOG2

_U32 = 0xFFFFFFFF


@njit(cache=True, nogil=True)
def _log(x, scale_shift, lut):
    """``Log(x, scale_shift)`` of 2 <= x < 2^32."""
    integer = msb(x) - 1
    frac = x - (1 << integer)
    if integer < LOG_SCALE_LOG2:
        frac <<= LOG_SCALE_LOG2 - integer
    else:
        frac >>= integer - LOG_SCALE_LOG2
    base_seg = frac >> (LOG_SCALE_LOG2 - LOG_SEGMENTS_LOG2)
    c0, c1 = np.int64(lut[base_seg]), np.int64(lut[base_seg + 1])
    seg_base = ((1 << LOG_SCALE_LOG2) >> LOG_SEGMENTS_LOG2) * base_seg
    rel_pos = ((c1 - c0) * (frac - seg_base)) >> LOG_SCALE_LOG2
    fraction = (frac + c0 + rel_pos) & _U32
    log2 = ((integer << LOG_SCALE_LOG2) + fraction) & _U32
    rnd = (1 << LOG_SCALE_LOG2) // 2
    loge = ((LOG_COEFF * log2 + rnd) >> LOG_SCALE_LOG2) & _U32
    return ((((loge << scale_shift) & _U32) + rnd) & _U32) >> LOG_SCALE_LOG2


@njit(cache=True, nogil=True)
def _log_scale_kernel(signal, enable_log, scale_shift, correction_bits, lut, out):
    """``LogScaleApply``: ``out`` (uint16 values) from ``signal`` (uint32 values in int64)."""
    for i in range(signal.shape[0]):
        value = signal[i]
        if enable_log:
            if correction_bits < 0:
                value >>= -correction_bits
            else:
                value = (value << correction_bits) & _U32
            value = _log(value, scale_shift, lut) if value > 1 else 0
        out[i] = value if value < 0xFFFF else 0xFFFF


@names_its_errors
def log_scale(signal, *, correction_bits: int, scale_shift: int = 6, enable_log: bool = True, lut=None):
    """``LogScaleApply`` on uint32 ``signal``: uint16 features. ``correction_bits`` -31..31 (the frontend passes
    ``MostSignificantBit32(fft_size) - 7``), ``scale_shift`` 0..16, ``lut`` :func:`tables.log_lut` by default."""
    from .tables import log_lut

    f = "log_scale"
    signal = int_array(signal, f, "signal", 0, 2 ** 32 - 1)
    for name, v, lo, hi in (("correction_bits", correction_bits, -31, 31), ("scale_shift", scale_shift, 0, 16)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise ValueError(f"{f}: {name} must be an int in {lo}..{hi}, got {v!r}")
    lut = log_lut() if lut is None else int_array(lut, f, "lut", 0, 65535, shape=(130,))
    out = np.empty_like(signal)
    _log_scale_kernel(signal.ravel(), bool(enable_log), int(scale_shift), int(correction_bits), lut, out.ravel())
    return out.astype(np.uint16)
