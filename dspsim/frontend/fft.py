"""The FFT: ``FftCompute`` (``fft.cc``) and kissfft's fixed-point real FFT (``kiss_fftr`` over ``kiss_fft``,
FIXED_POINT=16, kissfft v130 as TFLite Micro builds it).

Arithmetic (``_kiss_fft_guts.h``): int16 scalars; ``C_MUL`` rounds ``(a*b - c*d + 2^14) >> 15`` in int32;
``C_FIXDIV(c, k)`` scales each part by ``32767 / k`` the same way (1/2 and 1/4 per stage: the block scaling that
keeps the FFT in int16); every ``+``/``-`` stored into a ``short`` wraps to 16 bits; ``HALF_OF`` is an arithmetic
shift of the int sum, before the store. A 2^k-point complex FFT runs radix-4 stages and at most one radix-2
stage (``kf_factor``), decimation in time (``kf_work``, written here as its input order and then the stages from
the innermost out).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._bits import wrap16
from ._checks import int16_array
from .tables import FftTables


@njit(cache=True, nogil=True, inline="always")
def _sround(x):
    return wrap16((x + (1 << 14)) >> 15)


@njit(cache=True, nogil=True, inline="always")
def _fixdiv2(x):
    """``C_FIXDIV(x, 2)``: ``sround(x * (32767 / 2))``."""
    return _sround(x * 16383)


@njit(cache=True, nogil=True, inline="always")
def _fixdiv4(x):
    """``C_FIXDIV(x, 4)``: ``sround(x * (32767 / 4))``."""
    return _sround(x * 8191)


@njit(cache=True, nogil=True)
def _bfly2(fr, fi, base, fstride, tw, m):
    for k in range(m):
        a, b = base + k, base + k + m
        fr[a], fi[a] = _fixdiv2(fr[a]), _fixdiv2(fi[a])
        fr[b], fi[b] = _fixdiv2(fr[b]), _fixdiv2(fi[b])
        wr, wi = np.int64(tw[k * fstride, 0]), np.int64(tw[k * fstride, 1])
        tr = _sround(fr[b] * wr - fi[b] * wi)
        ti = _sround(fr[b] * wi + fi[b] * wr)
        fr[b], fi[b] = wrap16(fr[a] - tr), wrap16(fi[a] - ti)
        fr[a], fi[a] = wrap16(fr[a] + tr), wrap16(fi[a] + ti)


@njit(cache=True, nogil=True)
def _bfly4(fr, fi, base, fstride, tw, m):
    for k in range(m):
        i0, i1, i2, i3 = base + k, base + k + m, base + k + 2 * m, base + k + 3 * m
        fr[i0], fi[i0] = _fixdiv4(fr[i0]), _fixdiv4(fi[i0])
        fr[i1], fi[i1] = _fixdiv4(fr[i1]), _fixdiv4(fi[i1])
        fr[i2], fi[i2] = _fixdiv4(fr[i2]), _fixdiv4(fi[i2])
        fr[i3], fi[i3] = _fixdiv4(fr[i3]), _fixdiv4(fi[i3])
        w1r, w1i = np.int64(tw[k * fstride, 0]), np.int64(tw[k * fstride, 1])
        w2r, w2i = np.int64(tw[2 * k * fstride, 0]), np.int64(tw[2 * k * fstride, 1])
        w3r, w3i = np.int64(tw[3 * k * fstride, 0]), np.int64(tw[3 * k * fstride, 1])
        s0r, s0i = _sround(fr[i1] * w1r - fi[i1] * w1i), _sround(fr[i1] * w1i + fi[i1] * w1r)
        s1r, s1i = _sround(fr[i2] * w2r - fi[i2] * w2i), _sround(fr[i2] * w2i + fi[i2] * w2r)
        s2r, s2i = _sround(fr[i3] * w3r - fi[i3] * w3i), _sround(fr[i3] * w3i + fi[i3] * w3r)
        s5r, s5i = wrap16(fr[i0] - s1r), wrap16(fi[i0] - s1i)
        f0r, f0i = wrap16(fr[i0] + s1r), wrap16(fi[i0] + s1i)
        s3r, s3i = wrap16(s0r + s2r), wrap16(s0i + s2i)
        s4r, s4i = wrap16(s0r - s2r), wrap16(s0i - s2i)
        fr[i2], fi[i2] = wrap16(f0r - s3r), wrap16(f0i - s3i)
        fr[i0], fi[i0] = wrap16(f0r + s3r), wrap16(f0i + s3i)
        fr[i1], fi[i1] = wrap16(s5r + s4i), wrap16(s5i - s4r)
        fr[i3], fi[i3] = wrap16(s5r - s4i), wrap16(s5i + s4r)


@njit(cache=True, nogil=True)
def _kiss_fft_kernel(xr, xi, fr, fi, twiddles, stages, leaf_order):
    """``kiss_fft`` forward of the complex sequence (xr, xi) into (fr, fi), int64 buffers of int16 values."""
    n = xr.shape[0]
    for j in range(n):
        fr[j], fi[j] = xr[leaf_order[j]], xi[leaf_order[j]]
    for s in range(stages.shape[0] - 1, -1, -1):
        p, m, fstride = stages[s, 0], stages[s, 1], stages[s, 2]
        for base in range(0, n, p * m):
            if p == 4:
                _bfly4(fr, fi, base, fstride, twiddles, m)
            elif p == 2:
                _bfly2(fr, fi, base, fstride, twiddles, m)


@njit(cache=True, nogil=True)
def _rfft_kernel(x, twiddles, stages, leaf_order, super_twiddles, out):
    """``kiss_fftr``: the nfft real int16 samples ``x`` into ``out`` (nfft/2 + 1, 2) int16."""
    ncfft = x.shape[0] // 2
    xr, xi = np.empty(ncfft, np.int64), np.empty(ncfft, np.int64)
    for k in range(ncfft):
        xr[k], xi[k] = x[2 * k], x[2 * k + 1]
    fr, fi = np.empty(ncfft, np.int64), np.empty(ncfft, np.int64)
    _kiss_fft_kernel(xr, xi, fr, fi, twiddles, stages, leaf_order)
    dr, di = _fixdiv2(fr[0]), _fixdiv2(fi[0])
    out[0, 0], out[0, 1] = wrap16(dr + di), 0
    out[ncfft, 0], out[ncfft, 1] = wrap16(dr - di), 0
    for k in range(1, ncfft // 2 + 1):
        pr, pi = _fixdiv2(fr[k]), _fixdiv2(fi[k])
        nr, ni = _fixdiv2(fr[ncfft - k]), _fixdiv2(wrap16(-fi[ncfft - k]))
        f1r, f1i = wrap16(pr + nr), wrap16(pi + ni)
        f2r, f2i = wrap16(pr - nr), wrap16(pi - ni)
        wr, wi = np.int64(super_twiddles[k - 1, 0]), np.int64(super_twiddles[k - 1, 1])
        tr, ti = _sround(f2r * wr - f2i * wi), _sround(f2r * wi + f2i * wr)
        out[k, 0], out[k, 1] = wrap16((f1r + tr) >> 1), wrap16((f1i + ti) >> 1)
        out[ncfft - k, 0], out[ncfft - k, 1] = wrap16((f1r - tr) >> 1), wrap16((ti - f1i) >> 1)


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
