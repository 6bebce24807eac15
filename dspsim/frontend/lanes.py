"""The microfrontend's frame over a block of :data:`LANES` streams at once, the streams as SIMD lanes: every buffer is
[..., LANES] (structure of arrays) and each scalar operation of ``FrontendProcessSamples`` a short loop over the
block's lanes, which LLVM turns into AVX-512 / AVX2 vector instructions (16 int32 lanes per zmm register).

The arithmetic is the single-stream kernels' (:mod:`dspsim.frontend.microfrontend`, which states it), rewritten
branch-free where a lane's path depends on its data: the FFT's input shift is a per-lane variable shift; the
square root takes Sqrt32's or Sqrt64's cap by a select; ``WideDynamicFunction`` computes both directions of its
shift and selects, with its small-input case as one more lookup; the log clamps its input to >= 2 and selects 0;
table lookups are gathers. kissfft's values stay in int16 and its products in int32 (``C_MUL``'s ``a*b - c*d +
2^14`` of int16 inputs and twiddles < 2^15 in magnitude never leaves int32), so every product and shift is
written with int32 truncations that let LLVM keep the lanes 32 bits wide; the filterbank sums are uint64 lanes.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._bits import msb
from .fft import _fixdiv32, _sround32, _w16
from .frame import _frame_kernel, _scratch_size
from .config import LOG_COEFF, LOG_SCALE_LOG2, LOG_SEGMENTS_LOG2, NOISE_REDUCTION_BITS
from .plan import (_CORRECTION_BITS, _ENABLE_LOG, _ENABLE_PCAN, _EVEN, _FB_END, _FB_START, _MIN_SIGNAL, _NCH, _NFFT,
                   _ODD, _SCALE_SHIFT, _SIZE, _SMOOTHING_BITS, _SNR_SHIFT, _sections)

LANES = 128
"""Streams per block: eight AVX-512 registers of int32 lanes. Measured per stream-frame (Zen 4, 1 thread): 16 lanes
1.7 us, 32 1.26, 64 1.00, 128 0.94 (the per-row and per-butterfly overheads, the loops' runtime alias checks
among them, are shared by more lanes)."""

SCALAR_BELOW = 40
"""A block of fewer streams than this runs each stream's own frame (:func:`dspsim.frontend.frame._frame_kernel`,
~2.5 us a stream in a block, its samples copied out of the lanes): a block of lanes costs about as much as LANES
streams (~105 us), whatever its streams (24 while a frame cost ~5 us)."""

I32 = np.int32
I16 = np.int16
U64 = np.uint64
_U32 = 0xFFFFFFFF
_U32_MAX = np.uint64(0xFFFFFFFF)
_U16_MAX = np.uint64(0xFFFF)
_U64_1 = np.uint64(1)
_U64_32 = np.uint64(32)


@njit(cache=True, nogil=True, inline="always")
def _bfly4(fr, fi, i0, m, w1r, w1i, w2r, w2i, w3r, w3i):
    """``kf_bfly4`` (forward) on the rows ``i0 + {0, 1, 2, 3} m`` of ``fr``/``fi`` [rows, LANES] (every lane)."""
    i1, i2, i3 = i0 + m, i0 + 2 * m, i0 + 3 * m
    q = I32(8191)
    for ln in range(LANES):
        a0r, a0i = _fixdiv32(fr[i0, ln], q), _fixdiv32(fi[i0, ln], q)
        a1r, a1i = _fixdiv32(fr[i1, ln], q), _fixdiv32(fi[i1, ln], q)
        a2r, a2i = _fixdiv32(fr[i2, ln], q), _fixdiv32(fi[i2, ln], q)
        a3r, a3i = _fixdiv32(fr[i3, ln], q), _fixdiv32(fi[i3, ln], q)
        s0r, s0i = _sround32(I32(a1r * w1r) - I32(a1i * w1i)), _sround32(I32(a1r * w1i) + I32(a1i * w1r))
        s1r, s1i = _sround32(I32(a2r * w2r) - I32(a2i * w2i)), _sround32(I32(a2r * w2i) + I32(a2i * w2r))
        s2r, s2i = _sround32(I32(a3r * w3r) - I32(a3i * w3i)), _sround32(I32(a3r * w3i) + I32(a3i * w3r))
        s5r, s5i = _w16(a0r - s1r), _w16(a0i - s1i)
        f0r, f0i = _w16(a0r + s1r), _w16(a0i + s1i)
        s3r, s3i = _w16(s0r + s2r), _w16(s0i + s2i)
        s4r, s4i = _w16(s0r - s2r), _w16(s0i - s2i)
        fr[i2, ln], fi[i2, ln] = I16(f0r - s3r), I16(f0i - s3i)
        fr[i0, ln], fi[i0, ln] = I16(f0r + s3r), I16(f0i + s3i)
        fr[i1, ln], fi[i1, ln] = I16(s5r + s4i), I16(s5i - s4r)
        fr[i3, ln], fi[i3, ln] = I16(s5r - s4i), I16(s5i + s4r)


@njit(cache=True, nogil=True, inline="always")
def _bfly2(fr, fi, a, m, wr, wi):
    """``kf_bfly2`` on the rows ``a`` and ``a + m`` (every lane)."""
    b = a + m
    q = I32(16383)
    for ln in range(LANES):
        ar, ai = _fixdiv32(fr[a, ln], q), _fixdiv32(fi[a, ln], q)
        br, bi = _fixdiv32(fr[b, ln], q), _fixdiv32(fi[b, ln], q)
        tr, ti = _sround32(I32(br * wr) - I32(bi * wi)), _sround32(I32(br * wi) + I32(bi * wr))
        fr[b, ln], fi[b, ln] = I16(ar - tr), I16(ai - ti)
        fr[a, ln], fi[a, ln] = I16(ar + tr), I16(ai + ti)


@njit(cache=True, nogil=True, inline="always")
def _windowed(row, coef, ln):
    """``WindowProcessSamples``' ``(int16)((int32)x * coef >> 12)`` of lane ``ln`` of a buffer row, as int32."""
    return _w16((I32(row[ln]) * coef) >> 12)


@njit(cache=True, nogil=True)
def _window_lanes(buf, start, window, shift):
    """The window's largest magnitude per lane over the ring buffer ``buf`` [size, LANES] (a column per stream,
    the window's first sample at row ``start``), as ``input_shift = 15 - MostSignificantBit32(max_abs)`` into
    ``shift``. The windowed samples themselves are made again by :func:`_fft_input_lanes` (cheaper than storing
    and loading them)."""
    nl, size = shift.shape[0], window.shape[0]
    max_abs = np.zeros(nl, np.int32)
    for i in range(size):
        coef, row = I32(window[i]), buf[(start + i) % size]
        for ln in range(nl):
            v = _windowed(row, coef, ln)
            a = _w16(-v) if v < 0 else v  # -(-32768) wraps and is never the maximum
            max_abs[ln] = max(max_abs[ln], a)
    for ln in range(nl):
        shift[ln] = 15 - msb(max_abs[ln])


@njit(cache=True, nogil=True)
def _fft_input_lanes(buf, start, window, shift, leaf_order, fr, fi):
    """``FftCompute``'s ``(int16)(w << input_shift)`` of the windowed samples, zero-padded, split into kiss_fftr's
    even (real) and odd (imaginary) samples and put in ``kf_work``'s leaf order."""
    size, nl = window.shape[0], shift.shape[0]
    for j in range(fr.shape[0]):
        t = 2 * leaf_order[j]
        if t + 1 < size:
            c0, row0 = I32(window[t]), buf[(start + t) % size]
            c1, row1 = I32(window[t + 1]), buf[(start + t + 1) % size]
            for ln in range(nl):
                fr[j, ln] = I16(_windowed(row0, c0, ln) << shift[ln])
                fi[j, ln] = I16(_windowed(row1, c1, ln) << shift[ln])
        elif t < size:
            c0, row0 = I32(window[t]), buf[(start + t) % size]
            for ln in range(nl):
                fr[j, ln] = I16(_windowed(row0, c0, ln) << shift[ln])
                fi[j, ln] = 0
        else:
            for ln in range(nl):
                fr[j, ln] = 0
                fi[j, ln] = 0


@njit(cache=True, nogil=True)
def _fft_stages_lanes(fr, fi, twiddles, stages):
    """``kf_work``'s butterflies, innermost stage first, on every lane."""
    ncfft = fr.shape[0]
    for s in range(stages.shape[0] - 1, -1, -1):
        p, m, fstride = stages[s, 0], stages[s, 1], stages[s, 2]
        for base in range(0, ncfft, p * m):
            for k in range(m):
                if p == 4:
                    t1, t2, t3 = k * fstride, 2 * k * fstride, 3 * k * fstride
                    _bfly4(fr, fi, base + k, m, I32(twiddles[t1, 0]), I32(twiddles[t1, 1]), I32(twiddles[t2, 0]),
                           I32(twiddles[t2, 1]), I32(twiddles[t3, 0]), I32(twiddles[t3, 1]))
                else:
                    t1 = k * fstride
                    _bfly2(fr, fi, base + k, m, I32(twiddles[t1, 0]), I32(twiddles[t1, 1]))


@njit(cache=True, nogil=True)
def _split_lanes(fr, fi, super_twiddles, sr, si):
    """``kiss_fftr``'s split of the half-length FFT (fr, fi) into the real FFT's bins (sr, si) [n_bins, LANES]."""
    ncfft, nl = fr.shape[0], fr.shape[1]
    h = I32(16383)
    for ln in range(nl):
        dr, di = _fixdiv32(fr[0, ln], h), _fixdiv32(fi[0, ln], h)
        sr[0, ln], si[0, ln] = _w16(dr + di), 0
        sr[ncfft, ln], si[ncfft, ln] = _w16(dr - di), 0
    for k in range(1, ncfft // 2 + 1):
        nk = ncfft - k
        wr, wi = I32(super_twiddles[k - 1, 0]), I32(super_twiddles[k - 1, 1])
        for ln in range(nl):
            pr, pi = _fixdiv32(fr[k, ln], h), _fixdiv32(fi[k, ln], h)
            nr, ni = _fixdiv32(fr[nk, ln], h), _fixdiv32(_w16(-I32(fi[nk, ln])), h)
            f1r, f1i = _w16(pr + nr), _w16(pi + ni)
            f2r, f2i = _w16(pr - nr), _w16(pi - ni)
            tr, ti = _sround32(I32(f2r * wr) - I32(f2i * wi)), _sround32(I32(f2r * wi) + I32(f2i * wr))
            sr[k, ln], si[k, ln] = _w16(I32(f1r + tr) >> 1), _w16(I32(f1i + ti) >> 1)
            sr[nk, ln], si[nk, ln] = _w16(I32(f1r - tr) >> 1), _w16(I32(ti - f1i) >> 1)


@njit(cache=True, nogil=True)
def _filterbank_lanes(sr, si, start, end, freq_starts, weight_starts, widths, weights, unweights, energy, work):
    """Energy of bins ``start..end-1`` (int32, wrapping) and ``FilterbankAccumulateChannels`` into ``work``
    [num_channels + 1, LANES] (uint64 sums, wrapping)."""
    nl = energy.shape[1]
    for b in range(energy.shape[0]):
        for ln in range(nl):
            energy[b, ln] = 0
    for b in range(start, end):
        for ln in range(nl):
            re, im = I32(sr[b, ln]), I32(si[b, ln])
            energy[b, ln] = I32(I32(re * re) + I32(im * im))
    acc, unacc = np.zeros(nl, np.uint64), np.zeros(nl, np.uint64)
    for c in range(work.shape[0]):
        f0, w0 = freq_starts[c], weight_starts[c]
        for j in range(widths[c]):
            f = f0 + j
            wt, uw = U64(weights[w0 + j]), U64(unweights[w0 + j])  # int16 weights, sign-extended
            for ln in range(nl):
                mag = U64(np.int64(energy[f, ln]))  # C's (uint64_t) of an int32: sign extension
                acc[ln] += wt * mag
                unacc[ln] += uw * mag
        for ln in range(nl):
            work[c, ln] = acc[ln]
            acc[ln] = unacc[ln]
            unacc[ln] = 0


@njit(cache=True, nogil=True, inline="always")
def _sqrt64(num):
    """``Sqrt64`` of a uint64, ``Sqrt32``'s cap below 2^32 (see :mod:`dspsim.kernels.signal.filter_bank`)."""
    res = U64(min(math.sqrt(np.float64(num)), 4294967295.0))
    res = res - _U64_1 if res * res > num else (
        res + _U64_1 if (res != _U32_MAX) & ((res + _U64_1) * (res + _U64_1) <= num) else res)
    cap = _U16_MAX if (num >> _U64_32) == 0 else _U32_MAX
    return res + _U64_1 if (num - res * res > res) & (res != cap) else res


# The table lookups of WideDynamicFunction and Log are gathers, which LLVM's cost model for this CPU does not take:
# each table stage is a vector loop that computes the indices, a scalar loop of loads (_lookup) and a vector loop
# that goes on from the loaded entries. The consecutive entries a stage reads are packed into one int64 per index
# (_packed: 16 bits each), so that one load fetches them all. t[k] below is the k-th [num_channels, LANES] int64
# plane of the scratch.
_VALUE, _EST, _BASE, _FRAC, _ENTRIES, _PLANES = range(6)


@njit(cache=True, nogil=True)
def _packed(lut, k, out):
    """``out[i]`` = entries ``lut[i .. i + k - 1]`` (16 bits each, the first lowest) for every i they exist."""
    for i in range(out.shape[0]):
        v = 0
        for j in range(k):
            v |= (lut[i + j] & 0xFFFF) << (16 * j)
        out[i] = v


@njit(cache=True, nogil=True)
def _lookup(table, index, out):
    """``out = table[index]`` elementwise over [num_channels, LANES]."""
    for c in range(index.shape[0]):
        for ln in range(index.shape[1]):
            out[c, ln] = table[U64(index[c, ln])]


@njit(cache=True, nogil=True, inline="always")
def _entry(v, j):
    """Entry ``j`` of a :func:`_packed` value, as the int16 it is."""
    return np.int64(I16(v >> (16 * j)))


@njit(cache=True, nogil=True)
def _channels_lanes(plan, work, shift, estimate, s0, pcan_triples, log_pairs, t, feats):
    """Square root, noise reduction (``estimate[:, s0:s0 + LANES]`` updated), PCAN, log scale: ``feats``
    [num_channels, LANES] uint16 values from ``work``; ``pcan_triples``, ``log_pairs``: the PCAN table packed by 3
    and the log table by 2 (:func:`_packed`); ``t``: [_PLANES, num_channels, LANES] int64 scratch."""
    sb, msr = plan[_SMOOTHING_BITS], plan[_MIN_SIGNAL]
    nl = feats.shape[1]
    value, est, base, frac, entries = t[_VALUE], t[_EST], t[_BASE], t[_FRAC], t[_ENTRIES]
    for c in range(feats.shape[0]):  # FilterbankSqrt, NoiseReductionApply
        smoothing = plan[_EVEN] if c % 2 == 0 else plan[_ODD]
        one_minus = (1 << NOISE_REDUCTION_BITS) - smoothing
        for ln in range(nl):
            sig = np.int64(_sqrt64(work[c + 1, ln]) >> U64(shift[ln]))
            scaled = (sig << sb) & _U32
            e = ((scaled * smoothing + estimate[c, U64(s0 + ln)] * one_minus) >> NOISE_REDUCTION_BITS) & _U32
            estimate[c, U64(s0 + ln)] = e
            est[c, ln] = e
            subtracted = (scaled - min(e, scaled)) >> sb
            value[c, ln] = max(subtracted, ((sig * msr) >> NOISE_REDUCTION_BITS) & _U32)
    if plan[_ENABLE_PCAN]:  # PcanGainControlApply; WideDynamicFunction by the estimate's interval and fraction
        snr_shift = U64(plan[_SNR_SHIFT])
        for c in range(feats.shape[0]):
            for ln in range(nl):
                x = est[c, ln]
                interval = msb(x)
                base[c, ln] = 4 * interval - 6 if x > 2 else x  # x <= 2: the gain is lut[x]
                frac[c, ln] = ((x << max(11 - interval, 0)) >> max(interval - 11, 0)) & 0x3FF
        _lookup(pcan_triples, base, entries)
        for c in range(feats.shape[0]):
            for ln in range(nl):
                f, g = frac[c, ln], entries[c, ln]
                result = (_entry(g, 2) * f) >> 5
                result = np.int64(I32(result + I32(_entry(g, 1) << 5)))
                result = np.int64(I32(result * f))
                result = np.int64(I32(result + (1 << 14))) >> 15
                gain = np.int64(I16(result + _entry(g, 0))) if est[c, ln] > 2 else _entry(g, 0)
                snr = np.int64(((U64(value[c, ln]) * (U64(gain) & _U32_MAX)) >> snr_shift) & _U32_MAX)
                small = min(snr, 8191)
                value[c, ln] = (small * small) >> 20 if snr < 8192 else (snr >> 6) - 64
    if plan[_ENABLE_LOG]:  # LogScaleApply: Log's integer part, then the table's correction of the fraction
        scale_shift, cb = plan[_SCALE_SHIFT], plan[_CORRECTION_BITS]
        cb_left, cb_right = max(cb, 0), max(-cb, 0)
        for c in range(feats.shape[0]):
            for ln in range(nl):
                v = ((value[c, ln] << cb_left) & _U32) >> cb_right
                value[c, ln] = v
                x = max(v, 2)
                integer = msb(x) - 1
                fr = x - (1 << integer)
                fr = (fr << max(LOG_SCALE_LOG2 - integer, 0)) >> max(integer - LOG_SCALE_LOG2, 0)
                frac[c, ln] = fr
                base[c, ln] = fr >> (LOG_SCALE_LOG2 - LOG_SEGMENTS_LOG2)
                est[c, ln] = integer
        _lookup(log_pairs, base, entries)
        rnd = (1 << LOG_SCALE_LOG2) // 2
        for c in range(feats.shape[0]):
            for ln in range(nl):
                fr, g = frac[c, ln], entries[c, ln]
                c0 = _entry(g, 0) & 0xFFFF  # the log table's entries are uint16
                seg_base = ((1 << LOG_SCALE_LOG2) >> LOG_SEGMENTS_LOG2) * base[c, ln]
                rel_pos = (((_entry(g, 1) & 0xFFFF) - c0) * (fr - seg_base)) >> LOG_SCALE_LOG2
                fraction = (fr + c0 + rel_pos) & _U32
                log2 = ((est[c, ln] << LOG_SCALE_LOG2) + fraction) & _U32
                loge = ((LOG_COEFF * log2 + rnd) >> LOG_SCALE_LOG2) & _U32
                out = ((((loge << scale_shift) & _U32) + rnd) & _U32) >> LOG_SCALE_LOG2
                feats[c, ln] = min(out, 0xFFFF) if value[c, ln] > 1 else 0
    else:
        for c in range(feats.shape[0]):
            for ln in range(nl):
                feats[c, ln] = min(value[c, ln], 0xFFFF)


@njit(cache=True, nogil=True)
def _lane_sizes(ncfft, n_ch):
    """int64 elements of each of :func:`_lane_buffers`' views."""
    n16, n32 = (ncfft + 3) // 4 * LANES, (ncfft + 2) // 2 * LANES
    return (LANES, n16, n16, n32, n32, n32, (n_ch + 1) * LANES, n_ch * LANES,
            _PLANES * n_ch * LANES)


def lane_scratch_size(plan: np.ndarray) -> int:
    """int64 elements of one lane block's working buffers (:func:`_lane_buffers`)."""
    return int(sum(_lane_sizes(int(plan[_NFFT]) // 2, int(plan[_NCH]))))


@njit(cache=True, nogil=True)
def _lane_buffers(row, ncfft, n_ch):
    """The working buffers of a block, views of its scratch ``row`` (int64, :func:`lane_scratch_size`): shift,
    (int32), FFT (real, imaginary), spectrum (real, imaginary), energy, channel sums, features, planes."""
    sizes = _lane_sizes(ncfft, n_ch)
    o = np.empty(len(sizes) + 1, np.int64)
    o[0] = 0
    for i in range(len(sizes)):
        o[i + 1] = o[i] + sizes[i]
    n16, n32 = ncfft * LANES, (ncfft + 1) * LANES
    return (row[o[0]:o[1]].view(np.int32)[:LANES],
            row[o[1]:o[2]].view(np.int16)[:n16].reshape((ncfft, LANES)),
            row[o[2]:o[3]].view(np.int16)[:n16].reshape((ncfft, LANES)),
            row[o[3]:o[4]].view(np.int32)[:n32].reshape((ncfft + 1, LANES)),
            row[o[4]:o[5]].view(np.int32)[:n32].reshape((ncfft + 1, LANES)),
            row[o[5]:o[6]].view(np.int32)[:n32].reshape((ncfft + 1, LANES)),
            row[o[6]:o[7]].view(np.uint64).reshape((n_ch + 1, LANES)), row[o[7]:o[8]].reshape((n_ch, LANES)),
            row[o[8]:o[9]].reshape((_PLANES, n_ch, LANES)))


@njit(cache=True, nogil=True)
def _lanes_kernel(plan, buf, start, estimate, samples, used, take, b0, b1, scratch, out):
    """``FrontendProcessSamples`` on the lane blocks ``b0..b1-1`` of lockstep streams: ``take`` samples of each
    stream (``samples`` (streams, >= take) int16) appended at row ``used`` of the window in its block's ring buffer
    ``buf`` (blocks, window_size, LANES) int16, whose window starts at row ``start``; where they complete the
    window, each stream's features go to ``out[s]`` (the caller then moves ``start`` on by a step). ``estimate``
    (num_channels, padded streams) int64: the noise estimates; ``scratch`` (blocks, :func:`lane_scratch_size`)
    int64, of which row ``b0`` is used."""
    (window, twiddles, stages, leaf_order, super_twiddles, freq_starts, weight_starts, widths, weights, unweights,
     pcan_lut, log_lut, _) = _sections(plan)
    size, n_ch, n_streams = plan[_SIZE], plan[_NCH], samples.shape[0]
    ready = used + take == size
    # one scratch per call, the row of its first block (calls on other threads start at other blocks): the blocks
    # of a call reuse it while it is in cache
    shift, fr, fi, sr, si, energy, work, feats, planes = _lane_buffers(scratch[b0], plan[_NFFT] // 2, n_ch)
    pcan_triples, log_pairs = np.empty(pcan_lut.shape[0] - 2, np.int64), np.empty(log_lut.shape[0] - 1, np.int64)
    _packed(pcan_lut, 3, pcan_triples)
    _packed(log_lut, 2, log_pairs)
    for b in range(b0, b1):
        s0 = b * LANES
        blk = buf[b]
        n = min(LANES, n_streams - s0)
        for i in range(take):
            row = blk[(start + used + i) % size]
            for ln in range(n):
                row[ln] = samples[U64(s0 + ln), i]
        if not ready:
            continue
        if n < SCALAR_BELOW:
            _scalar_block(plan, blk, start, estimate, s0, n, scratch[b0], out)
            continue
        _window_lanes(blk, start, window, shift)
        _fft_input_lanes(blk, start, window, shift, leaf_order, fr, fi)
        _fft_stages_lanes(fr, fi, twiddles, stages)
        _split_lanes(fr, fi, super_twiddles, sr, si)
        _filterbank_lanes(sr, si, plan[_FB_START], plan[_FB_END], freq_starts, weight_starts, widths, weights,
                          unweights, energy, work)
        _channels_lanes(plan, work, shift, estimate, s0, pcan_triples, log_pairs, planes, feats)
        for ln in range(n):
            for c in range(n_ch):
                out[U64(s0 + ln), c] = feats[c, ln]


@njit(cache=True, nogil=True)
def _scalar_block(plan, blk, start, estimate, s0, n, row, out):
    """The frames of a block's ``n`` streams one stream at a time (:data:`SCALAR_BELOW`), in the block's scratch
    ``row``."""
    size = plan[_SIZE]
    k = _scratch_size(plan)
    frame = row[k:k + (size + 3) // 4].view(np.int16)[:size]
    for ln in range(n):
        for i in range(size - start):  # the ring buffer's rows from start, then its first rows: no modulo a sample
            frame[i] = blk[start + i, ln]
        for i in range(start):
            frame[size - start + i] = blk[i, ln]
        _frame_kernel(frame, plan, estimate[:, s0 + ln], row[:k], out[s0 + ln])
