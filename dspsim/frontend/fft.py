"""The FFT: ``FftCompute`` (``fft.cc``): the window's output shifted and zero-padded into kissfft's fixed-point
real FFT (:mod:`dspsim.kernels.signal.kissfft`, which states its arithmetic and which the Signal library's
``RfftInt16`` shares)."""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ..kernels.signal._bits import wrap16
from ..kernels.signal.kissfft import FftTables, _rfft_kernel
from ._checks import int16_array


@njit(cache=True, nogil=True)
def _fft_input_kernel(windowed, input_shift, x):
    """``FftCompute``'s input: ``(int16)((uint16)w << input_shift)``, zero-padded to the FFT length."""
    n = windowed.shape[0]
    for i in range(n):
        x[i] = wrap16((np.int64(windowed[i]) & 0xFFFF) << input_shift)
    for i in range(n, x.shape[0]):
        x[i] = 0


@names_its_errors
def rfft(x, tables: FftTables):
    """kissfft's fixed-point real FFT of the int16 sequence ``x`` (length ``tables.nfft``): (nfft/2 + 1, 2) int16,
    [:, 0] real and [:, 1] imaginary, scaled by 1/nfft as kissfft's per-stage block scaling gives it."""
    if not isinstance(tables, FftTables):
        raise TypeError("rfft: tables must be dspsim.frontend.tables.FftTables (fft_tables(nfft))")
    x = int16_array(x, "rfft", "x")
    if x.shape[0] != tables.nfft:
        raise ValueError(f"rfft: x must have the FFT length {tables.nfft}, got {x.shape[0]}")
    out = np.empty((tables.nfft // 2 + 1, 2), np.int16)
    _rfft_kernel(x, tables.twiddles, tables.stages, tables.leaf_order, tables.super_twiddles, out)
    return out


@names_its_errors
def fft_compute(windowed, input_shift: int, tables: FftTables):
    """``FftCompute``: the window's output shifted left by ``input_shift`` (0..15, wrapping in int16),
    zero-padded, through :func:`rfft`."""
    windowed = int16_array(windowed, "fft_compute", "windowed")
    if isinstance(input_shift, bool) or not isinstance(input_shift, (int, np.integer)) or not 0 <= input_shift <= 15:
        raise ValueError(f"fft_compute: input_shift must be an int in 0..15, got {input_shift!r}")
    if not isinstance(tables, FftTables):
        raise TypeError("fft_compute: tables must be dspsim.frontend.tables.FftTables (fft_tables(nfft))")
    if windowed.shape[0] > tables.nfft:
        raise ValueError(f"fft_compute: the window ({windowed.shape[0]}) is longer than the FFT ({tables.nfft})")
    x = np.empty(tables.nfft, np.int16)
    _fft_input_kernel(windowed, int(input_shift), x)
    return rfft(x, tables)
