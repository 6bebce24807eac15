"""The FFT: ``FftCompute`` (``fft.cc``): the window's output shifted and zero-padded into kissfft's fixed-point
real FFT (:mod:`dspsim.kernels.signal.kissfft`, which states its arithmetic and which the Signal library's
``RfftInt16`` shares)."""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ..kernels.signal._bits import wrap16
from ..kernels.signal.kissfft import FftTables, _bfly2, _bfly4_one, _rfft_kernel, _rfft_split
from ._checks import int16_array


@njit(cache=True, nogil=True)
def _fft_input_kernel(windowed, input_shift, x):
    """``FftCompute``'s input: ``(int16)((uint16)w << input_shift)``, zero-padded to the FFT length."""
    n = windowed.shape[0]
    for i in range(n):
        x[i] = wrap16((np.int64(windowed[i]) & 0xFFFF) << input_shift)
    for i in range(n, x.shape[0]):
        x[i] = 0


def stage_twiddles(tables: FftTables) -> np.ndarray:
    """Each stage's twiddles in the order its butterflies use them, innermost stage first: (6, sum of m) int64,
    butterfly k of a radix-4 stage at column offset + k holding w1, w2, w3 (real, imaginary) =
    twiddles[{1, 2, 3} * k * fstride] (zeros for a radix-2 stage). Contiguous in k, so that a stage's loop over its
    butterflies reads them as vectors."""
    out = np.zeros((6, int(tables.stages[:, 1].sum())), np.int64)
    t = 0
    for p, m, fstride in tables.stages[::-1]:
        if p == 4:
            for j in range(1, 4):
                out[2 * j - 2:2 * j, t:t + m] = tables.twiddles[j * np.arange(m) * fstride].T
        t += m
    return out


@njit(cache=True, nogil=True, inline="always")
def _stage4(fr, fi, ncfft, m, stx, t):
    """One radix-4 stage of ``m`` butterflies per base (``kf_bfly4``), its twiddles from column ``t`` of ``stx``."""
    for base in range(0, ncfft, 4 * m):
        for k in range(m):
            tk = np.uint64(t + k)
            _bfly4_one(fr, fi, base + k, m, stx[0, tk], stx[1, tk], stx[2, tk], stx[3, tk], stx[4, tk], stx[5, tk],
                       False, 16)


@njit(cache=True, nogil=True)
def _frame_fft_kernel(windowed, input_shift, twiddles, stx, stages, leaf_order, super_twiddles, out, scratch):
    """``FftCompute`` of one frame: :func:`_fft_input_kernel` and kissfft's real FFT (:func:`rfft`) in one pass,
    the input put straight into ``kf_work``'s leaf order, the radix-4 stages of 1, 4, 16 and 64 butterflies a base
    compiled for their size (LLVM then vectorizes a stage's loop over its butterflies: the distance between their
    points is a constant); ``stx``: :func:`stage_twiddles`; ``scratch`` (2, nfft / 2) int64."""
    size, ncfft = windowed.shape[0], scratch.shape[1]
    fr, fi = scratch[0], scratch[1]
    for j in range(ncfft):
        t = 2 * leaf_order[j]
        fr[j] = wrap16((np.int64(windowed[t]) & 0xFFFF) << input_shift) if t < size else 0
        fi[j] = wrap16((np.int64(windowed[t + 1]) & 0xFFFF) << input_shift) if t + 1 < size else 0
    t = 0
    for s in range(stages.shape[0] - 1, -1, -1):
        p, m, fstride = stages[s, 0], stages[s, 1], stages[s, 2]
        if p == 2:
            for base in range(0, ncfft, 2 * m):
                _bfly2(fr, fi, base, fstride, twiddles, m, 16)
        elif m == 1:
            _stage4(fr, fi, ncfft, 1, stx, t)
        elif m == 4:
            _stage4(fr, fi, ncfft, 4, stx, t)
        elif m == 16:
            _stage4(fr, fi, ncfft, 16, stx, t)
        elif m == 64:
            _stage4(fr, fi, ncfft, 64, stx, t)
        else:
            _stage4(fr, fi, ncfft, m, stx, t)
        t += m
    _rfft_split(fr, fi, super_twiddles, out)


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
