"""kissfft's fixed-point real FFT (``kiss_fftr`` over ``kiss_fft``, FIXED_POINT=16, kissfft v130 as TFLite Micro
builds it, in the microfrontend and in the Signal library's ``RfftInt16``): the tables ``kiss_fftr_alloc`` derives
and the butterflies.

Arithmetic (``_kiss_fft_guts.h``): int16 scalars; ``C_MUL`` rounds ``(a*b - c*d + 2^14) >> 15`` in int32;
``C_FIXDIV(c, k)`` scales each part by ``32767 / k`` the same way (1/2 and 1/4 per stage: the block scaling that
keeps the FFT in int16); every ``+``/``-`` stored into a ``short`` wraps to 16 bits; ``HALF_OF`` is an arithmetic
shift of the int sum, before the store. A 2^k-point complex FFT runs radix-4 stages and at most one radix-2
stage (``kf_factor``), decimation in time (``kf_work``, written here as its input order and then the stages from
the innermost out).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ._bits import wrap16


def _kf_factor(n: int) -> list:
    """kissfft's ``kf_factor``: radix 4 first, then 2, then odd primes; (p, m) pairs."""
    out, p, floor_sqrt = [], 4, math.floor(math.sqrt(n))
    while True:
        while n % p:
            p = {4: 2, 2: 3}.get(p, p + 2)
            if p > floor_sqrt:
                p = n
        n //= p
        out.append((p, n))
        if n <= 1:
            return out


def _kf_twiddle(phase: float) -> tuple:
    """``kf_cexp`` with FIXED_POINT=16: ``floor(.5 + 32767 * cos(phase))`` (double)."""
    return math.floor(0.5 + 32767 * math.cos(phase)), math.floor(0.5 + 32767 * math.sin(phase))


def _kf_leaf_order(factors, ncfft: int) -> np.ndarray:
    """Which input each output slot of ``kf_work`` holds before the first butterfly (its decimation order)."""
    order = np.empty(ncfft, np.int64)

    def work(out0, in0, fstride, level):
        p, m = factors[level]
        if m == 1:
            for j in range(p):
                order[out0 + j] = in0 + j * fstride
        else:
            for j in range(p):
                work(out0 + j * m, in0 + j * fstride, fstride * p, level + 1)

    work(0, 0, 1, 0)
    return order


@dataclass(frozen=True)
class FftTables:
    """``kiss_fftr_alloc(nfft, inverse)``: the half-length complex FFT's twiddles, stages and leaf order, and the
    real FFT's super twiddles."""

    nfft: int                  # the real FFT's length
    twiddles: np.ndarray       # (ncfft, 2) int16
    stages: np.ndarray         # (n_stages, 3) int64: radix p, m, fstride, innermost stage last
    leaf_order: np.ndarray     # (ncfft,) int64
    super_twiddles: np.ndarray  # (ncfft // 2, 2) int16
    inverse: bool = False      # kiss_fftri's tables (every phase negated)


def fft_tables(nfft: int, inverse: bool = False) -> FftTables:
    """``kiss_fftr_alloc(nfft, inverse)``: every phase's sign flipped for the inverse."""
    if nfft < 4 or nfft & (nfft - 1):
        raise ValueError(f"fft_tables: the real FFT length must be a power of two >= 4, got {nfft}")
    ncfft = nfft // 2
    pi = 3.141592653589793238462643383279502884197169399375105820974944
    sign = 1 if inverse else -1
    tw = np.array([_kf_twiddle(sign * 2 * pi * i / ncfft) for i in range(ncfft)], np.int16).reshape(ncfft, 2)
    pi_r = 3.14159265358979323846264338327
    sup = np.array([_kf_twiddle(sign * pi_r * ((i + 1) / ncfft + .5)) for i in range(ncfft // 2)],
                   np.int16).reshape(ncfft // 2, 2)
    factors = _kf_factor(ncfft) if ncfft > 1 else [(1, 1)]
    stages, fstride = [], 1
    for p, m in factors:
        stages.append((p, m, fstride))
        fstride *= p
    if any(p not in (2, 4) for p, _, _ in stages):  # pragma: no cover - a power of two factors into 4s and a 2
        raise ValueError("fft_tables: only radix-2 and radix-4 stages are modelled")
    return FftTables(nfft, tw, np.array(stages, np.int64).reshape(-1, 3), _kf_leaf_order(factors, ncfft), sup,
                     bool(inverse))



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
def _bfly4(fr, fi, base, fstride, tw, m, inverse):
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
        if inverse:  # the quarter-turn of the other sign
            fr[i1], fi[i1] = wrap16(s5r - s4i), wrap16(s5i + s4r)
            fr[i3], fi[i3] = wrap16(s5r + s4i), wrap16(s5i - s4r)
        else:
            fr[i1], fi[i1] = wrap16(s5r + s4i), wrap16(s5i - s4r)
            fr[i3], fi[i3] = wrap16(s5r - s4i), wrap16(s5i + s4r)


@njit(cache=True, nogil=True)
def _kiss_fft_kernel(xr, xi, fr, fi, twiddles, stages, leaf_order, inverse):
    """``kiss_fft`` of the complex sequence (xr, xi) into (fr, fi), int64 buffers of int16 values (``inverse``: the
    tables' direction)."""
    n = xr.shape[0]
    for j in range(n):
        fr[j], fi[j] = xr[leaf_order[j]], xi[leaf_order[j]]
    for s in range(stages.shape[0] - 1, -1, -1):
        p, m, fstride = stages[s, 0], stages[s, 1], stages[s, 2]
        for base in range(0, n, p * m):
            if p == 4:
                _bfly4(fr, fi, base, fstride, twiddles, m, inverse)
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
    _kiss_fft_kernel(xr, xi, fr, fi, twiddles, stages, leaf_order, False)
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
def _irfft_kernel(spec, twiddles, stages, leaf_order, super_twiddles, out):
    """``kiss_fftri``: the nfft/2 + 1 int16 bins ``spec`` (n, 2) into the nfft int16 samples ``out``, with the
    inverse tables (its own split of the half-length FFT, scaled by 1/2, then the inverse FFT)."""
    ncfft = spec.shape[0] - 1
    xr, xi = np.empty(ncfft, np.int64), np.empty(ncfft, np.int64)
    xr[0] = _fixdiv2(wrap16(np.int64(spec[0, 0]) + np.int64(spec[ncfft, 0])))
    xi[0] = _fixdiv2(wrap16(np.int64(spec[0, 0]) - np.int64(spec[ncfft, 0])))
    for k in range(1, ncfft // 2 + 1):
        pr, pi = _fixdiv2(np.int64(spec[k, 0])), _fixdiv2(np.int64(spec[k, 1]))
        nr, ni = _fixdiv2(np.int64(spec[ncfft - k, 0])), _fixdiv2(wrap16(-np.int64(spec[ncfft - k, 1])))
        er, ei = wrap16(pr + nr), wrap16(pi + ni)
        dr, di = wrap16(pr - nr), wrap16(pi - ni)
        wr, wi = np.int64(super_twiddles[k - 1, 0]), np.int64(super_twiddles[k - 1, 1])
        odr, odi = _sround(dr * wr - di * wi), _sround(dr * wi + di * wr)
        xr[k], xi[k] = wrap16(er + odr), wrap16(ei + odi)
        xr[ncfft - k], xi[ncfft - k] = wrap16(er - odr), wrap16(ei - odi)
        xi[ncfft - k] = wrap16(-xi[ncfft - k])
    fr, fi = np.empty(ncfft, np.int64), np.empty(ncfft, np.int64)
    _kiss_fft_kernel(xr, xi, fr, fi, twiddles, stages, leaf_order, True)
    for k in range(ncfft):
        out[2 * k], out[2 * k + 1] = fr[k], fi[k]
