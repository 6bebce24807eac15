"""The FFT: ``FftCompute`` (``fft.cc``): the window's output shifted and zero-padded into kissfft's fixed-point
real FFT (:mod:`dspsim.kernels.signal.kissfft`, which states its arithmetic and which the Signal library's
``RfftInt16`` shares)."""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from .._bits import wrap16
from ..kernels.signal.kissfft import _U1, FftTables, _bfly2, _bfly4_one, _rfft_kernel, _rfft_split
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


@njit(cache=True, nogil=True)
def _stage4(fr, fi, ncfft, m, stx, t):
    """One radix-4 stage of ``m`` butterflies per base (``kf_bfly4``), its twiddles from column ``t`` of ``stx``."""
    for base in range(0, ncfft, 4 * m):
        for k in range(m):
            tk = np.uint64(t + k)
            _bfly4_one(fr, fi, base + k, m, stx[0, tk], stx[1, tk], stx[2, tk], stx[3, tk], stx[4, tk], stx[5, tk],
                       False, 16)


I16, I32 = np.int16, np.int32


@njit(cache=True, nogil=True, inline="always")
def _w16(v):
    """``(int16_t)v`` as int32."""
    return I32(I16(v))


@njit(cache=True, nogil=True, inline="always")
def _sround32(x):
    """kissfft's ``sround`` (FIXED_POINT 16): ``(int16)((x + 2^14) >> 15)`` of an int32-exact ``x``."""
    return _w16(I32(I32(x) + I32(16384)) >> 15)


@njit(cache=True, nogil=True, inline="always")
def _fixdiv32(x, q):
    """``C_FIXDIV``: ``sround(x * q)``, q = 32767 / k (16383 or 8191), of an int16 ``x``."""
    return _sround32(I32(x) * q)


@njit(cache=True, nogil=True, inline="always")
def _bfly4_32(re, im, i0, i1, i2, i3, w1r, w1i, w2r, w2i, w3r, w3i):
    """``kf_bfly4`` (forward) on the points i0..i3 of the int16 buffers ``re``/``im``, in int32: ``C_MUL``'s
    ``a*b - c*d + 2^14`` of int16 values and twiddles below 2^15 in magnitude never leaves int32 (its largest
    magnitude is 2 * 8192 * 32767 + 2^14: the inputs are scaled by ``C_FIXDIV(., 4)`` first), every sum of two
    int16 values neither, and each store into a ``short`` is a truncating cast."""
    q = I32(8191)
    a0r, a0i = _fixdiv32(re[i0], q), _fixdiv32(im[i0], q)
    a1r, a1i = _fixdiv32(re[i1], q), _fixdiv32(im[i1], q)
    a2r, a2i = _fixdiv32(re[i2], q), _fixdiv32(im[i2], q)
    a3r, a3i = _fixdiv32(re[i3], q), _fixdiv32(im[i3], q)
    s0r, s0i = _sround32(I32(a1r * w1r) - I32(a1i * w1i)), _sround32(I32(a1r * w1i) + I32(a1i * w1r))
    s1r, s1i = _sround32(I32(a2r * w2r) - I32(a2i * w2i)), _sround32(I32(a2r * w2i) + I32(a2i * w2r))
    s2r, s2i = _sround32(I32(a3r * w3r) - I32(a3i * w3i)), _sround32(I32(a3r * w3i) + I32(a3i * w3r))
    s5r, s5i = _w16(a0r - s1r), _w16(a0i - s1i)
    f0r, f0i = _w16(a0r + s1r), _w16(a0i + s1i)
    s3r, s3i = _w16(s0r + s2r), _w16(s0i + s2i)
    s4r, s4i = _w16(s0r - s2r), _w16(s0i - s2i)
    re[i2], im[i2] = I16(f0r - s3r), I16(f0i - s3i)
    re[i0], im[i0] = I16(f0r + s3r), I16(f0i + s3i)
    re[i1], im[i1] = I16(s5r + s4i), I16(s5i - s4r)
    re[i3], im[i3] = I16(s5r - s4i), I16(s5i + s4r)


@njit(cache=True, nogil=True, inline="always")
def _rows4(re, im, o, m, n, stx, t):
    """``n`` butterflies on the points ``o + j + {0, 1, 2, 3} m``, j < n, all with the twiddles of column ``t``
    of ``stx`` (a loop LLVM vectorizes over j: the points are rows of contiguous int16)."""
    w1r, w1i, w2r, w2i = I32(stx[0, t]), I32(stx[1, t]), I32(stx[2, t]), I32(stx[3, t])
    w3r, w3i = I32(stx[4, t]), I32(stx[5, t])
    for j in range(n):
        i0 = np.uint64(o + j)
        _bfly4_32(re, im, i0, i0 + np.uint64(m), i0 + np.uint64(2 * m), i0 + np.uint64(3 * m),
                  w1r, w1i, w2r, w2i, w3r, w3i)


@njit(cache=True, nogil=True, inline="always")
def _rows4_tw(re, im, o, m, n, stx, t):
    """As :func:`_rows4`, butterfly j with the twiddles of column ``t + j``."""
    for j in range(n):
        i0, tj = np.uint64(o + j), np.uint64(t + j)
        _bfly4_32(re, im, i0, i0 + np.uint64(m), i0 + np.uint64(2 * m), i0 + np.uint64(3 * m),
                  I32(stx[0, tj]), I32(stx[1, tj]), I32(stx[2, tj]), I32(stx[3, tj]), I32(stx[4, tj]),
                  I32(stx[5, tj]))


@njit(cache=True, nogil=True, inline="always")
def _input256(windowed, input_shift, ar, ai):
    """``FftCompute``'s input ``(int16)(w << input_shift)``, zero-padded, as 256 complex points in their natural
    order (real: the even samples, imaginary: the odd)."""
    size = windowed.shape[0]
    sh = I32(input_shift)
    half = min(size // 2, 256)
    for a in range(half):
        ar[a] = I16(I32(windowed[2 * a]) << sh)
        ai[a] = I16(I32(windowed[2 * a + 1]) << sh)
    for a in range(half, 256):
        ar[a] = 0
        ai[a] = 0
    if size & 1 and half < 256:
        ar[half] = I16(I32(windowed[size - 1]) << sh)


@njit(cache=True, nogil=True)
def _frame_fft256(windowed, input_shift, stx, leaf_order, super_twiddles, out, work):
    """``FftCompute`` of one frame for the 512-point real FFT (a 256-point complex FFT of four radix-4 stages;
    :func:`_frame_fft_kernel` for any length), in int32 arithmetic on int16 buffers, every stage a loop over
    contiguous rows that LLVM vectorizes 16 lanes wide. With the point index i = (d3 d2 d1 d0) in base 4 (stage s
    combines the 4 points that differ in d_s; its twiddles depend on the digits below), ``kf_work``'s leaf order
    puts input point rev(i) at i: so the first two stages run on the input in its natural order (stage 0 on rows
    of 64, stage 1 on rows of 16, one twiddle set per row), the leaf order then permutes it once, and stages 2 and 3
    run in kissfft's order (rows of 16 and 64, a twiddle set per butterfly). ``out`` (nfft/2 + 1, 2) int16;
    ``work``: 1280 int16. :func:`_frame_fft256_energy` is the frame's: the split straight into the energies."""
    ar, ai, br, bi = work[0:256], work[256:512], work[512:768], work[768:1024]
    _input256(windowed, input_shift, ar, ai)
    _fft256_stages(ar, ai, br, bi, stx, leaf_order)
    _split32(br, bi, super_twiddles.ravel(), out.ravel())


@njit(cache=True, nogil=True)
def _frame_fft256_energy(windowed, input_shift, stx, leaf_order, super_twiddles, start, end, energy, work):
    """:func:`_frame_fft256` and the filterbank's energies (``filterbank.c``'s ``(int32)(re^2 + im^2)`` of bins
    ``start..end-1``, 0 elsewhere) into ``energy`` (nfft/2 + 1) int64, the spectrum never stored."""
    ar, ai, br, bi = work[0:256], work[256:512], work[512:768], work[768:1024]
    _input256(windowed, input_shift, ar, ai)
    _fft256_stages(ar, ai, br, bi, stx, leaf_order)
    _split_energy256(br, bi, super_twiddles.ravel(), energy, work[1024:1280].view(np.int32))
    for i in range(min(start, energy.shape[0])):
        energy[i] = 0
    for i in range(max(end, 0), energy.shape[0]):
        energy[i] = 0


@njit(cache=True, nogil=True)
def _fft256_stages(ar, ai, br, bi, stx, leaf_order):
    """:func:`_frame_fft256`'s butterflies: (ar, ai) the input in its natural order, (br, bi) the result in
    kissfft's. A function of its own, its buffers arguments: where LLVM sees that they are rows of one array, the
    vector loops of 16 butterflies fall back to their scalar copies (0.6 us a stage instead of 0.07)."""
    _rows4(ar, ai, 0, 64, 64, stx, 0)
    for d0 in range(4):
        _rows4(ar, ai, 64 * d0, 16, 16, stx, 1 + d0)
    for i in range(256):
        s = np.uint64(leaf_order[i])
        br[i], bi[i] = ar[s], ai[s]
    for d3 in range(4):
        _rows4_tw(br, bi, 64 * d3, 16, 16, stx, 5)
    _rows4_tw(br, bi, 0, 64, 64, stx, 21)


@njit(cache=True, nogil=True)
def _split32(fr, fi, super_twiddles, out):
    """``kiss_fftr``'s split (:func:`dspsim.kernels.signal.kissfft._rfft_split`) in int32 on int16 buffers (the super twiddles flat), into
    ``out`` (2 (nfft/2 + 1)) int16 (real, imaginary) pairs: a 1-D array (a 2-D one's row stride is a runtime
    value to LLVM, and its loads and stores would be scalar)."""
    ncfft = fr.shape[0]
    h = I32(16383)
    dr, di = _fixdiv32(fr[0], h), _fixdiv32(fi[0], h)
    out[0], out[1] = I16(dr + di), 0
    out[2 * ncfft], out[2 * ncfft + 1] = I16(dr - di), 0
    for kk in range(1, ncfft // 2 + 1):
        k, nk, tk = np.uint64(kk), np.uint64(ncfft - kk), np.uint64(kk - 1)
        pr, pi = _fixdiv32(fr[k], h), _fixdiv32(fi[k], h)
        nr, ni = _fixdiv32(fr[nk], h), _fixdiv32(_w16(-I32(fi[nk])), h)
        f1r, f1i = _w16(pr + nr), _w16(pi + ni)
        f2r, f2i = _w16(pr - nr), _w16(pi - ni)
        wr, wi = I32(super_twiddles[2 * tk]), I32(super_twiddles[2 * tk + _U1])
        tr, ti = _sround32(I32(f2r * wr) - I32(f2i * wi)), _sround32(I32(f2r * wi) + I32(f2i * wr))
        out[2 * k], out[2 * k + _U1] = I16(I32(f1r + tr) >> 1), I16(I32(f1i + ti) >> 1)
        out[2 * nk], out[2 * nk + _U1] = I16(I32(f1r - tr) >> 1), I16(I32(ti - f1i) >> 1)


@njit(cache=True, nogil=True)
def _split_energy256(fr, fi, super_twiddles, energy, high):
    """:func:`_split32`'s bins k and nfft/2 - k, each as ``(int32)(re^2 + im^2)`` into ``energy``: the loop over
    k stores the low half forward and the high half into ``high`` (nfft/4 int32), copied backwards after (a
    forward and a backward store into one array would keep LLVM from vectorizing the loop)."""
    ncfft = fr.shape[0]
    h = I32(16383)
    dr, di = _fixdiv32(fr[0], h), _fixdiv32(fi[0], h)
    e0, en = _w16(dr + di), _w16(dr - di)
    energy[0], energy[ncfft] = I32(e0 * e0), I32(en * en)
    nh = ncfft // 2
    for kk in range(1, nh + 1):
        k, nk, tk = np.uint64(kk), np.uint64(ncfft - kk), np.uint64(kk - 1)
        pr, pi = _fixdiv32(fr[k], h), _fixdiv32(fi[k], h)
        nr, ni = _fixdiv32(fr[nk], h), _fixdiv32(_w16(-I32(fi[nk])), h)
        f1r, f1i = _w16(pr + nr), _w16(pi + ni)
        f2r, f2i = _w16(pr - nr), _w16(pi - ni)
        wr, wi = I32(super_twiddles[2 * tk]), I32(super_twiddles[2 * tk + _U1])
        tr, ti = _sround32(I32(f2r * wr) - I32(f2i * wi)), _sround32(I32(f2r * wi) + I32(f2i * wr))
        ar, ai = _w16(I32(f1r + tr) >> 1), _w16(I32(f1i + ti) >> 1)
        br, bi = _w16(I32(f1r - tr) >> 1), _w16(I32(ti - f1i) >> 1)
        energy[k] = I32(ar * ar + ai * ai)
        high[tk] = I32(br * br + bi * bi)
    for kk in range(1, nh + 1):  # bin nfft/4 is its own mirror: its second value, as kiss_fftr stores it last
        energy[np.uint64(ncfft - kk)] = high[np.uint64(kk - 1)]


@njit(cache=True, nogil=True)
def _frame_fft_kernel(windowed, input_shift, twiddles, stx, stages, leaf_order, super_twiddles, out, scratch):
    """``FftCompute`` of one frame of any length: :func:`_fft_input_kernel` and kissfft's real FFT (:func:`rfft`)
    in one pass, the input put straight into ``kf_work``'s leaf order, each radix-4 stage's twiddles contiguous
    (``stx``: :func:`stage_twiddles`); ``scratch`` (2, nfft / 2) int64. One generic stage: a copy compiled per
    butterfly count cost a minute of compilation for the lengths that :func:`_frame_fft256` does not take."""
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
