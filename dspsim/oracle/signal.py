"""TensorFlow Lite Micro's Signal library (``signal/src``) again, slowly, in plain Python integers: one
``<kernel>_oracle`` per :mod:`dspsim.kernels.signal` wrapper, with its signature.

Each reads as the C statement it emulates: a C type's wrap is written out (``% 2**32``, ``_s16``), C's ``>>`` of
a negative int is Python's (arithmetic, floor), and the bit tricks are arithmetic on the value (the square root
by bisection on exact integers, the log's leading one by ``bit_length``). The kissfft real FFT is the
microfrontend's oracle (:mod:`.frontend`), which the C code shares.
"""
from __future__ import annotations

import math

from . import frontend as _fe

_U32, _U64 = 2 ** 32, 2 ** 64


def _np():
    import numpy as np

    return np


def _ints(x) -> list:
    return [int(v) for v in _np().asarray(x).reshape(-1).tolist()]


def _s16(v: int) -> int:
    return (v + 2 ** 15) % 2 ** 16 - 2 ** 15


def _msb32(x: int) -> int:
    """``MostSignificantBit32`` as GCC builds it: the bit length of the uint32, and 32 for 0."""
    x %= _U32
    return x.bit_length() if x else 32


def signal_window_oracle(x, weights, shift: int):
    np = _np()
    xs, w = _ints(x), _ints(weights)
    out = [min(max((v * w[i % len(w)]) >> shift, -32768), 32767) for i, v in enumerate(xs)]
    return np.array(out, np.int16).reshape(np.shape(x))


def signal_fft_auto_scale_oracle(x):
    np = _np()
    xs = _ints(x)
    mx = 0  # an int16: -(-32768) stores -32768
    for v in xs:
        if v > mx:
            mx = v
        elif -v > mx:
            mx = _s16(-v)
    scale_bits = max(16 - _msb32(mx) - 1, 0)
    return np.array([_s16(v * 2 ** scale_bits) for v in xs], np.int16), scale_bits


def signal_rfft_oracle(x, fft_length: int):
    np = _np()
    a = np.asarray(x)
    bits = 8 * a.dtype.itemsize   # kissfft FIXED_POINT 16 or 32
    rows = a.reshape(-1, a.shape[-1]).tolist()
    out = []
    for r in rows:
        spec = _fe.rfft([int(v) for v in r] + [0] * (fft_length - len(r)), bits)
        out.append([v for pair in spec for v in pair])
    return np.array(out, a.dtype).reshape(a.shape[:-1] + (fft_length + 2,))


def signal_irfft_oracle(x, fft_length: int):
    """``kiss_fftri``: the split of the bins into a half-length complex sequence, then the inverse FFT."""
    np = _np()
    a = np.asarray(x)
    bits = 8 * a.dtype.itemsize   # kissfft FIXED_POINT 16 or 32

    def w(v):
        return _fe._wrap(v, bits)

    ncfft = fft_length // 2
    sup = _fe.super_twiddles(ncfft, inverse=True, bits=bits)
    out = []
    for r in a.reshape(-1, a.shape[-1]).tolist():
        f = [(int(r[2 * k]), int(r[2 * k + 1])) for k in range(ncfft + 1)]
        tmp = [None] * ncfft
        tmp[0] = _fe._fixdiv((w(f[0][0] + f[ncfft][0]), w(f[0][0] - f[ncfft][0])), 2, bits)
        for k in range(1, ncfft // 2 + 1):
            fk = _fe._fixdiv(f[k], 2, bits)
            fnkc = _fe._fixdiv((f[ncfft - k][0], w(-f[ncfft - k][1])), 2, bits)
            fek = (w(fk[0] + fnkc[0]), w(fk[1] + fnkc[1]))
            fok = _fe._cmul((w(fk[0] - fnkc[0]), w(fk[1] - fnkc[1])), sup[k - 1], bits)
            tmp[k] = (w(fek[0] + fok[0]), w(fek[1] + fok[1]))
            tmp[ncfft - k] = (w(fek[0] - fok[0]), w(-w(fek[1] - fok[1])))
        out.append([v for pair in _fe.kiss_fft(tmp, inverse=True, bits=bits) for v in pair])
    return np.array(out, a.dtype).reshape(a.shape[:-1] + (fft_length,))


def signal_energy_oracle(x, start_index: int, end_index: int):
    np = _np()
    xs = _ints(x)
    out = [0] * (len(xs) // 2)
    for i in range(start_index, end_index):
        out[i] = (xs[2 * i] ** 2 + xs[2 * i + 1] ** 2) % _U32  # int32 in C: only 2^31 wraps, and uint32 keeps it
    return np.array(out, np.uint32)


def signal_filter_bank_oracle(x, weights, unweights, channel_frequency_starts, channel_weight_starts,
                              channel_widths, num_channels: int):
    np = _np()
    xs, w, uw = _ints(x), _ints(weights), _ints(unweights)
    fs, ws, wd = _ints(channel_frequency_starts), _ints(channel_weight_starts), _ints(channel_widths)
    out, carry = [], 0
    for c in range(num_channels + 1):
        acc = carry + sum((w[ws[c] + j] % _U64) * xs[fs[c] + j] for j in range(wd[c]))
        carry = sum((uw[ws[c] + j] % _U64) * xs[fs[c] + j] for j in range(wd[c]))
        out.append(acc % _U64)
    return np.array(out[1:], np.uint64)


def _sqrt(num: int, half_bits: int) -> int:
    """``Sqrt32`` (half_bits 16) / ``Sqrt64`` (32): floor(sqrt(num)), +1 when num - root^2 > root (the rounding
    to nearest), unless the root is all ones in ``half_bits``."""
    root = math.isqrt(num)
    if num - root * root > root and root != 2 ** half_bits - 1:
        root += 1
    return root


def signal_filter_bank_square_root_oracle(x, scale_bits: int):
    np = _np()
    return np.array([_sqrt(v, 16 if v < _U32 else 32) >> scale_bits for v in _ints(x)], np.uint32)


def signal_filter_bank_spectral_subtraction_oracle(x, noise_estimate, smoothing: int, one_minus_smoothing: int,
                                                   alternate_smoothing: int, alternate_one_minus_smoothing: int,
                                                   smoothing_bits: int, spectral_subtraction_bits: int,
                                                   min_signal_remaining: int, clamping: bool):
    np = _np()
    xs, est = _ints(x), _ints(noise_estimate)
    out = []
    for i, v in enumerate(xs):
        s, oms = (smoothing, one_minus_smoothing) if i % 2 == 0 else (alternate_smoothing,
                                                                       alternate_one_minus_smoothing)
        scaled = (v << smoothing_bits) % _U32
        est[i] = ((scaled * s + est[i] * oms) % _U64 >> spectral_subtraction_bits) % _U32
        clamped = min(est[i], scaled)
        if clamping:
            est[i] = clamped
        floor = ((v * min_signal_remaining) >> spectral_subtraction_bits) % _U32
        out.append(max((scaled - clamped) >> smoothing_bits, floor))
    return np.array(out, np.uint32), np.array(est, np.uint32)


def signal_pcan_oracle(x, noise_estimate, gain_lut, snr_shift: int):
    np = _np()
    return np.array(_fe.pcan(_ints(x), _ints(noise_estimate), _ints(gain_lut), snr_shift), np.uint32)


def _log32(x: int, out_scale: int) -> int:
    """``Log32``: log2 as (bit length - 1) + a table-corrected 16-bit fraction, to ln in Q16, then scaled."""
    lut = _fe.log_lut()
    integer = x.bit_length() - 1
    frac = x - (1 << integer)
    frac = frac << (16 - integer) if integer < 16 else frac >> (integer - 16)
    seg = frac >> 9
    c0, c1 = lut[seg], lut[seg + 1]
    fraction = frac + c0 + (((c1 - c0) * (frac - (seg << 9))) >> 16)
    log2 = ((integer << 16) + fraction) % _U32
    loge = (45426 * log2 + 2 ** 15) >> 16
    return ((out_scale * loge) % _U32 + 2 ** 15) % _U32 >> 16   # uint32 arithmetic in C


def signal_filter_bank_log_oracle(x, output_scale: int, input_correction_bits: int):
    np = _np()
    out = []
    for v in _ints(x):
        scaled = (v << input_correction_bits) % _U32
        out.append(min(_log32(scaled, output_scale), 32767) if scaled > 1 else 0)
    return np.array(out, np.int16)


def signal_delay_oracle(x, history, delay_length: int):
    np = _np()
    a = np.asarray(x)
    rows = a.reshape(-1, a.shape[-1]).tolist()
    hist = np.asarray(history).reshape(len(rows), delay_length).tolist()
    outs, news = [], []
    for r, h in zip(rows, hist):
        line = [int(v) for v in h] + [int(v) for v in r]   # the FIFO: delay_length older samples, then this frame
        outs.append(line[:len(r)])
        news.append(line[len(r):])
    return np.array(outs, np.int16).reshape(a.shape), np.array(news, np.int16).reshape(len(rows), delay_length)


def signal_framer_oracle(x, fifo, previous, frame_size: int, frame_step: int):
    np = _np()
    a = np.asarray(x)
    rows = a.reshape(-1, a.shape[-1]).tolist()
    n = len(rows[0]) // frame_step
    queues = [[int(v) for v in q] for q in np.asarray(fifo).reshape(len(rows), -1).tolist()]
    out = np.asarray(previous).reshape(len(rows), n, frame_size).tolist()
    valid = True
    for i, r in enumerate(rows):
        for k in range(n):
            queues[i] += [int(v) for v in r[k * frame_step:(k + 1) * frame_step]]
            if len(queues[i]) >= frame_size:
                out[i][k] = queues[i][:frame_size]
                del queues[i][:frame_step]
            else:
                valid = False
    shape = a.shape[:-1] + (n, frame_size)
    return np.array(out, np.int16).reshape(shape), valid, np.array(queues, np.int16).reshape(len(rows), -1)


def signal_stacker_oracle(x, fifo, num_channels: int, left_context: int, right_context: int, step: int, previous):
    np = _np()
    frame = _ints(x)
    queue = frame * (left_context + 1) if fifo is None else _ints(fifo) + frame
    width = (left_context + right_context + 1) * num_channels
    if len(queue) < width:
        return np.array(_ints(previous), np.int16), False, np.array(queue, np.int16)
    return np.array(queue[:width], np.int16), True, np.array(queue[step * num_channels:], np.int16)


def signal_overlap_add_oracle(x, buffer, frame_step: int):
    np = _np()
    a = np.asarray(x)
    is_int = a.dtype == np.int16
    frames = a.reshape(-1, a.shape[-2], a.shape[-1])
    bufs = np.asarray(buffer).reshape(frames.shape[0], a.shape[-1])
    outs, news = [], []
    for rows, buf in zip(frames, bufs):
        buf, out = list(buf), []
        for frame in rows:
            for k, v in enumerate(frame):
                buf[k] = min(max(int(buf[k]) + int(v), -32768), 32767) if is_int else np.float32(buf[k]) + v
            out += buf[:frame_step]
            buf = buf[frame_step:] + [0] * frame_step
        outs.append(out)
        news.append(buf)
    return (np.array(outs, a.dtype).reshape(a.shape[:-2] + (frames.shape[1] * frame_step,)),
            np.array(news, a.dtype).reshape(bufs.shape))
