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

from ..._errors import check_flag



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


def _kf_twiddle(phase: float, samp_max: int) -> tuple:
    """``kf_cexp`` with FIXED_POINT: ``floor(.5 + SAMP_MAX * cos(phase))`` (double; SAMP_MAX 32767 or 2^31 - 1)."""
    return math.floor(0.5 + samp_max * math.cos(phase)), math.floor(0.5 + samp_max * math.sin(phase))


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
    twiddles: np.ndarray       # (ncfft, 2) int16 (int32 for FIXED_POINT 32)
    stages: np.ndarray         # (n_stages, 3) int64: radix p, m, fstride, innermost stage last
    leaf_order: np.ndarray     # (ncfft,) int64
    super_twiddles: np.ndarray  # (ncfft // 2, 2) int16 (int32)
    inverse: bool = False      # kiss_fftri's tables (every phase negated)


#: The longest real FFT :func:`fft_tables` builds (the tables are made in a Python loop; the frontend's window is
#: at most 32768 samples).
MAX_NFFT = 1 << 20


def fft_tables(nfft: int, inverse: bool = False, bits: int = 16) -> FftTables:
    """``kiss_fftr_alloc(nfft, inverse)`` with FIXED_POINT = ``bits`` (16 or 32): every phase's sign flipped for
    the inverse."""
    if isinstance(nfft, (bool, np.bool_)) or not isinstance(nfft, (int, np.integer)):
        raise TypeError(f"fft_tables: nfft must be an int, got {nfft!r}"[:200])
    if nfft < 4 or nfft > MAX_NFFT or nfft & (nfft - 1):
        raise ValueError(f"fft_tables: the real FFT length must be a power of two in [4, {MAX_NFFT}], got {nfft}")
    if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer)) or bits not in (16, 32):
        raise ValueError(f"fft_tables: bits must be 16 or 32, got {bits!r}"[:200])
    inverse = check_flag(inverse, "fft_tables", "inverse")
    ncfft = nfft // 2
    pi = 3.141592653589793238462643383279502884197169399375105820974944
    sign = 1 if inverse else -1
    dtype, samp_max = (np.int16, 32767) if bits == 16 else (np.int32, 2 ** 31 - 1)
    tw = np.array([_kf_twiddle(sign * 2 * pi * i / ncfft, samp_max) for i in range(ncfft)], dtype).reshape(ncfft, 2)
    pi_r = 3.14159265358979323846264338327
    sup = np.array([_kf_twiddle(sign * pi_r * ((i + 1) / ncfft + .5), samp_max) for i in range(ncfft // 2)],
                   dtype).reshape(ncfft // 2, 2)
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
def _wrap(v, bits):
    """``(kiss_fft_scalar)v``: two's-complement wrap to ``bits`` (16 or 32), as a truncating cast."""
    if bits == 16:
        return np.int64(np.int16(v))
    return np.int64(np.int32(v))


@njit(cache=True, nogil=True, inline="always")
def _sround(x, bits):
    """``sround``: ``(x + 2^(FRACBITS - 1)) >> FRACBITS``, FRACBITS = bits - 1, stored as the scalar."""
    return _wrap((x + (1 << (bits - 2))) >> (bits - 1), bits)


@njit(cache=True, nogil=True, inline="always")
def _fixdiv(x, k, bits):
    """``C_FIXDIV(x, k)``: ``sround(x * (SAMP_MAX / k))`` (32767 / k for int16, 2147483647 / k for int32), k 2 or
    4: the quotients written out (an integer division here would cost more than the butterfly)."""
    if bits == 16:
        return _sround(x * (16383 if k == 2 else 8191), bits)
    return _sround(x * (1073741823 if k == 2 else 536870911), bits)


# Indices are cast to uint64 where they are made: numba skips the negative-index wraparound of an unsigned index,
# a quarter of a butterfly's instructions.
_U0, _U1 = np.uint64(0), np.uint64(1)


@njit(cache=True, nogil=True)
def _bfly2(fr, fi, base, fstride, tw, m, bits):
    for k in range(m):
        a, b = np.uint64(base + k), np.uint64(base + k + m)
        t = np.uint64(k * fstride)
        fr[a], fi[a] = _fixdiv(fr[a], 2, bits), _fixdiv(fi[a], 2, bits)
        fr[b], fi[b] = _fixdiv(fr[b], 2, bits), _fixdiv(fi[b], 2, bits)
        wr, wi = np.int64(tw[t, _U0]), np.int64(tw[t, _U1])
        tr = _sround(fr[b] * wr - fi[b] * wi, bits)
        ti = _sround(fr[b] * wi + fi[b] * wr, bits)
        fr[b], fi[b] = _wrap(fr[a] - tr, bits), _wrap(fi[a] - ti, bits)
        fr[a], fi[a] = _wrap(fr[a] + tr, bits), _wrap(fi[a] + ti, bits)


@njit(cache=True, nogil=True, inline="always")
def _bfly4(fr, fi, base, fstride, tw, m, inverse, bits):
    for k in range(m):
        t1, t2, t3 = np.uint64(k * fstride), np.uint64(2 * k * fstride), np.uint64(3 * k * fstride)
        _bfly4_one(fr, fi, base + k, m, np.int64(tw[t1, _U0]), np.int64(tw[t1, _U1]), np.int64(tw[t2, _U0]),
                   np.int64(tw[t2, _U1]), np.int64(tw[t3, _U0]), np.int64(tw[t3, _U1]), inverse, bits)


@njit(cache=True, nogil=True, inline="always")
def _bfly4_one(fr, fi, i, m, w1r, w1i, w2r, w2i, w3r, w3i, inverse, bits):
    """``kf_bfly4``'s body for the four points ``i + {0, 1, 2, 3} m`` with their twiddles (fr and fi may alias:
    the inputs are loaded once)."""
    i0, i1 = np.uint64(i), np.uint64(i + m)
    i2, i3 = np.uint64(i + 2 * m), np.uint64(i + 3 * m)
    a0r, a0i = _fixdiv(fr[i0], 4, bits), _fixdiv(fi[i0], 4, bits)
    a1r, a1i = _fixdiv(fr[i1], 4, bits), _fixdiv(fi[i1], 4, bits)
    a2r, a2i = _fixdiv(fr[i2], 4, bits), _fixdiv(fi[i2], 4, bits)
    a3r, a3i = _fixdiv(fr[i3], 4, bits), _fixdiv(fi[i3], 4, bits)
    s0r, s0i = _sround(a1r * w1r - a1i * w1i, bits), _sround(a1r * w1i + a1i * w1r, bits)
    s1r, s1i = _sround(a2r * w2r - a2i * w2i, bits), _sround(a2r * w2i + a2i * w2r, bits)
    s2r, s2i = _sround(a3r * w3r - a3i * w3i, bits), _sround(a3r * w3i + a3i * w3r, bits)
    s5r, s5i = _wrap(a0r - s1r, bits), _wrap(a0i - s1i, bits)
    f0r, f0i = _wrap(a0r + s1r, bits), _wrap(a0i + s1i, bits)
    s3r, s3i = _wrap(s0r + s2r, bits), _wrap(s0i + s2i, bits)
    s4r, s4i = _wrap(s0r - s2r, bits), _wrap(s0i - s2i, bits)
    fr[i2], fi[i2] = _wrap(f0r - s3r, bits), _wrap(f0i - s3i, bits)
    fr[i0], fi[i0] = _wrap(f0r + s3r, bits), _wrap(f0i + s3i, bits)
    if inverse:  # the quarter-turn of the other sign
        fr[i1], fi[i1] = _wrap(s5r - s4i, bits), _wrap(s5i + s4r, bits)
        fr[i3], fi[i3] = _wrap(s5r + s4i, bits), _wrap(s5i - s4r, bits)
    else:
        fr[i1], fi[i1] = _wrap(s5r + s4i, bits), _wrap(s5i - s4r, bits)
        fr[i3], fi[i3] = _wrap(s5r - s4i, bits), _wrap(s5i + s4r, bits)


@njit(cache=True, nogil=True)
def _kiss_fft_kernel(xr, xi, fr, fi, twiddles, stages, leaf_order, inverse, bits):
    """``kiss_fft`` of the complex sequence (xr, xi) into (fr, fi), int64 buffers of ``bits``-wide values
    (``inverse``: the tables' direction)."""
    n = xr.shape[0]
    for j in range(n):
        src = np.uint64(leaf_order[j])
        fr[j], fi[j] = xr[src], xi[src]
    for s in range(stages.shape[0] - 1, -1, -1):
        p, m, fstride = stages[s, 0], stages[s, 1], stages[s, 2]
        if p == 4 and m == 1:  # the first stage: every twiddle is twiddles[0], loaded once
            w0r, w0i = np.int64(twiddles[_U0, _U0]), np.int64(twiddles[_U0, _U1])
            for base in range(0, n, 4):
                _bfly4_one(fr, fi, base, 1, w0r, w0i, w0r, w0i, w0r, w0i, inverse, bits)
            continue
        for base in range(0, n, p * m):
            if p == 4:
                _bfly4(fr, fi, base, fstride, twiddles, m, inverse, bits)
            elif p == 2:
                _bfly2(fr, fi, base, fstride, twiddles, m, bits)


@njit(cache=True, nogil=True)
def _rfft_kernel(x, twiddles, stages, leaf_order, super_twiddles, out):
    """``kiss_fftr``: the nfft real samples ``x`` into ``out`` (nfft/2 + 1, 2), int16 or int32 (FIXED_POINT 16 or
    32: the scalar's width is the output's)."""
    scratch = np.empty((4, x.shape[0] // 2), np.int64)
    _rfft_scratch_kernel(x, twiddles, stages, leaf_order, super_twiddles, out, scratch)


@njit(cache=True, nogil=True)
def _rfft_scratch_kernel(x, twiddles, stages, leaf_order, super_twiddles, out, scratch):
    """:func:`_rfft_kernel` with its working buffers passed in: ``scratch`` (4, nfft / 2) int64 (a caller that
    runs many frames allocates them once)."""
    bits = 8 * out.itemsize
    ncfft = x.shape[0] // 2
    xr, xi, fr, fi = scratch[0], scratch[1], scratch[2], scratch[3]
    for k in range(ncfft):
        xr[k], xi[k] = x[np.uint64(2 * k)], x[np.uint64(2 * k + 1)]
    _kiss_fft_kernel(xr, xi, fr, fi, twiddles, stages, leaf_order, False, bits)
    _rfft_split(fr, fi, super_twiddles, out)


@njit(cache=True, nogil=True)
def _rfft_split(fr, fi, super_twiddles, out):
    """``kiss_fftr``'s last step: the half-length complex FFT (fr, fi) split into the nfft/2 + 1 bins ``out``."""
    bits = 8 * out.itemsize
    ncfft = fr.shape[0]
    dr, di = _fixdiv(fr[0], 2, bits), _fixdiv(fi[0], 2, bits)
    out[0, 0], out[0, 1] = _wrap(dr + di, bits), 0
    out[ncfft, 0], out[ncfft, 1] = _wrap(dr - di, bits), 0
    for kk in range(1, ncfft // 2 + 1):
        k, nk, tk = np.uint64(kk), np.uint64(ncfft - kk), np.uint64(kk - 1)
        pr, pi = _fixdiv(fr[k], 2, bits), _fixdiv(fi[k], 2, bits)
        nr, ni = _fixdiv(fr[nk], 2, bits), _fixdiv(_wrap(-fi[nk], bits), 2, bits)
        f1r, f1i = _wrap(pr + nr, bits), _wrap(pi + ni, bits)
        f2r, f2i = _wrap(pr - nr, bits), _wrap(pi - ni, bits)
        wr, wi = np.int64(super_twiddles[tk, _U0]), np.int64(super_twiddles[tk, _U1])
        tr, ti = _sround(f2r * wr - f2i * wi, bits), _sround(f2r * wi + f2i * wr, bits)
        # HALF_OF shifts the C int sum: it wraps at 32 bits first (int32 scalars), never for int16 ones
        out[k, _U0], out[k, _U1] = _wrap(_wrap(f1r + tr, 32) >> 1, bits), _wrap(_wrap(f1i + ti, 32) >> 1, bits)
        out[nk, _U0] = _wrap(_wrap(f1r - tr, 32) >> 1, bits)
        out[nk, _U1] = _wrap(_wrap(ti - f1i, 32) >> 1, bits)


@njit(cache=True, nogil=True)
def _irfft_kernel(spec, twiddles, stages, leaf_order, super_twiddles, out):
    """``kiss_fftri``: the nfft/2 + 1 int16 bins ``spec`` (n, 2) into the nfft int16 samples ``out``, with the
    inverse tables (its own split of the half-length FFT, scaled by 1/2, then the inverse FFT); int16 or int32 as
    ``out``."""
    bits = 8 * out.itemsize
    ncfft = spec.shape[0] - 1
    xr, xi = np.empty(ncfft, np.int64), np.empty(ncfft, np.int64)
    xr[0] = _fixdiv(_wrap(np.int64(spec[0, 0]) + np.int64(spec[ncfft, 0]), bits), 2, bits)
    xi[0] = _fixdiv(_wrap(np.int64(spec[0, 0]) - np.int64(spec[ncfft, 0]), bits), 2, bits)
    for k in range(1, ncfft // 2 + 1):
        pr, pi = _fixdiv(np.int64(spec[k, 0]), 2, bits), _fixdiv(np.int64(spec[k, 1]), 2, bits)
        nr = _fixdiv(np.int64(spec[ncfft - k, 0]), 2, bits)
        ni = _fixdiv(_wrap(-np.int64(spec[ncfft - k, 1]), bits), 2, bits)
        er, ei = _wrap(pr + nr, bits), _wrap(pi + ni, bits)
        dr, di = _wrap(pr - nr, bits), _wrap(pi - ni, bits)
        wr, wi = np.int64(super_twiddles[k - 1, 0]), np.int64(super_twiddles[k - 1, 1])
        odr, odi = _sround(dr * wr - di * wi, bits), _sround(dr * wi + di * wr, bits)
        xr[k], xi[k] = _wrap(er + odr, bits), _wrap(ei + odi, bits)
        xr[ncfft - k], xi[ncfft - k] = _wrap(er - odr, bits), _wrap(ei - odi, bits)
        xi[ncfft - k] = _wrap(-xi[ncfft - k], bits)
    fr, fi = np.empty(ncfft, np.int64), np.empty(ncfft, np.int64)
    _kiss_fft_kernel(xr, xi, fr, fi, twiddles, stages, leaf_order, True, bits)
    for k in range(ncfft):
        out[2 * k], out[2 * k + 1] = fr[k], fi[k]
