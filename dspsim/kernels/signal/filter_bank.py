"""The Signal library's filter bank stages (``signal/src/filter_bank*.cc``, ``square_root_*.cc``, ``log.cc``),
which TFLite Micro's microfrontend shares in part (its accumulation, square roots and log table).

* ``FilterbankAccumulateChannels``: per channel, uint64 sums of ``weight * (uint64)input`` (an int16 weight is
  sign-extended) and of ``unweight * input``, wrapping modulo 2^64; channel ``i`` = its weighted sum plus channel
  ``i - 1``'s unweighted sum; element 0 is scratch and is dropped.
* ``FilterbankSqrt``: the bitwise integer square root, rounded up where the remainder exceeds the root (``Sqrt32``
  below 2^32, the round-up refused at 0xFFFF; ``Sqrt64`` above, at 0xFFFFFFFF), then ``>> scale_down_bits``.
* ``FilterbankSpectralSubtraction``: ``scaled = input << smoothing_bits`` (uint32, wraps); the noise estimate
  ``(scaled * s + estimate * (1 - s)) >> spectral_subtraction_bits`` in uint64 (wraps), kept as uint32, with
  ``s`` alternating between even and odd channels; output ``max((scaled - min(estimate, scaled)) >>
  smoothing_bits, input * min_signal_remaining >> spectral_subtraction_bits)``; ``clamping`` stores the clamped
  estimate back.
* ``FilterbankLog``: ``Log32(input << correction_bits)`` (the shift wraps in uint32), 0 for values 0 and 1, capped
  at 32767: the log2 integer part is the bit length - 1, its fraction the top 16 bits after the leading one
  corrected by a 128-segment table; ``loge = (45426 * log2 + 2^15) >> 16`` (uint64), then ``(output_scale * loge
  + 2^15) >> 16`` in uint32 arithmetic, which wraps for large scales.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..._errors import names_its_errors
from .._checks import check_tensor, int_in_range
from ..._bits import U64_ONE, U64_ZERO, as_u64, msb

LOG_SEGMENTS_LOG2 = 7   # kLogSegmentsLog2
_LOG_COEFF = 45426      # kLogCoeff: 2^16 ln 2
_U32 = 0xFFFFFFFF
_I16 = (np.dtype(np.int16),)
_U32_T = (np.dtype(np.uint32),)
_U64_T = (np.dtype(np.uint64),)


def log_lut() -> np.ndarray:
    """``kLogLut``: 128 + 2 entries, ``round(2^16 * (log2(1 + i/128) - i/128))``; the last two are 0."""
    n = 1 << LOG_SEGMENTS_LOG2
    out = np.zeros(n + 2, np.uint16)
    for i in range(n):
        out[i] = math.floor((math.log2(1 + i / n) - i / n) * 65536 + 0.5)
    return out


_LOG_LUT = log_lut().astype(np.int64)


@njit(cache=True, nogil=True)
def _accumulate_kernel(energy, freq_starts, weight_starts, widths, weights, unweights, work):
    """``FilterbankAccumulateChannels`` into ``work`` (num_channels + 1,) uint64."""
    acc, unacc = U64_ZERO, U64_ZERO
    for c in range(work.shape[0]):
        f0, w0 = freq_starts[c], weight_starts[c]
        for j in range(widths[c]):
            f, w = np.uint64(f0 + j), np.uint64(w0 + j)  # unsigned: no negative-index wraparound
            mag = as_u64(np.int64(energy[f]))
            acc += as_u64(np.int64(weights[w])) * mag
            unacc += as_u64(np.int64(unweights[w])) * mag
        work[c] = acc
        acc, unacc = unacc, U64_ZERO


# Sqrt32 / Sqrt64 are the bitwise (digit-by-digit) square root: the floor of the square root and its remainder
# num - root^2, then root + 1 where the remainder exceeds the root. The floor is taken here from the float64 square
# root, corrected by one step either way (float64 holds num exactly below 2^53 and to 2^-52 above; the correctly
# rounded sqrt is then within one of the floor), instead of a data-dependent loop of up to 32 steps.
_U32_MAX = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _sqrt32(num):
    """``Sqrt32`` of 0 <= num < 2^32 (int64): the root rounded up where the remainder exceeds it, not past
    0xFFFF."""
    res = np.int64(math.sqrt(np.float64(num)))
    if res * res > num:
        res -= 1
    elif (res + 1) * (res + 1) <= num:
        res += 1
    if num - res * res > res and res != 0xFFFF:
        res += 1
    return res


@njit(cache=True, nogil=True)
def _sqrt64(num):
    """``Sqrt64`` of a uint64: the root rounded up where the remainder exceeds it, not past 0xFFFFFFFF."""
    if (num >> np.uint64(32)) == U64_ZERO:
        return _sqrt32(np.int64(num))
    res = np.uint64(min(math.sqrt(np.float64(num)), 4294967295.0))
    if res * res > num:
        res -= U64_ONE
    elif res != _U32_MAX and (res + U64_ONE) * (res + U64_ONE) <= num:
        res += U64_ONE
    if num - res * res > res and res != _U32_MAX:
        res += U64_ONE
    return np.int64(res)


@njit(cache=True, nogil=True)
def _sqrt_kernel(work, scale_down_shift, out):
    """``FilterbankSqrt``: ``out[i] = Sqrt64(work[i + 1]) >> scale_down_shift`` (uint32 values in int64)."""
    for i in range(out.shape[0]):
        out[i] = _sqrt64(work[i + 1]) >> scale_down_shift


@njit(cache=True, nogil=True)
def _spectral_subtraction_kernel(x, estimate, smoothing, alt_smoothing, smoothing_bits, ss_bits,
                                 min_signal_remaining, clamping, out):
    """``FilterbankSpectralSubtraction`` in place on ``estimate`` (uint64 arrays of uint32 values);
    ``smoothing`` / ``alt_smoothing``: (s, 1 - s) of the even / odd channels."""
    u32 = np.uint64(_U32)
    sb, ssb = np.uint64(smoothing_bits), np.uint64(ss_bits)
    for i in range(x.shape[0]):
        s, oms = (smoothing[0], smoothing[1]) if i % 2 == 0 else (alt_smoothing[0], alt_smoothing[1])
        scaled = (x[i] << sb) & u32
        estimate[i] = ((scaled * s + estimate[i] * oms) >> ssb) & u32
        est = estimate[i]
        if est > scaled:
            est = scaled
            if clamping:
                estimate[i] = est
        floor = ((x[i] * min_signal_remaining) >> ssb) & u32
        subtracted = (scaled - est) >> sb
        out[i] = subtracted if subtracted > floor else floor


@njit(cache=True, nogil=True, inline="always")
def _log2_fraction(x, log2x):
    """``Log2FractionPart32``: the 16-bit fraction of log2(x) above ``log2x``, table-corrected (int32)."""
    frac = x - (1 << log2x)
    if log2x < 16:
        frac <<= 16 - log2x
    else:
        frac >>= log2x - 16
    base_seg = frac >> (16 - LOG_SEGMENTS_LOG2)
    c0, c1 = _LOG_LUT[base_seg], _LOG_LUT[base_seg + 1]
    rel_pos = ((c1 - c0) * (frac - (base_seg << (16 - LOG_SEGMENTS_LOG2)))) >> 16
    return frac + c0 + rel_pos


@njit(cache=True, nogil=True)
def _log_kernel(x, output_scale, correction_bits, out):
    """``FilterbankLog``: ``out[i]`` (int16 values) from ``x[i]`` (uint32 values in int64)."""
    for i in range(x.shape[0]):
        scaled = (x[i] << correction_bits) & _U32
        if scaled <= 1:
            out[i] = 0
            continue
        integer = msb(scaled) - 1
        log2 = ((integer << 16) + _log2_fraction(scaled, integer)) & _U32
        loge = (_LOG_COEFF * log2 + (1 << 15)) >> 16
        value = (((output_scale * loge) & _U32) + (1 << 15)) & _U32
        value >>= 16
        out[i] = value if value < 32767 else 32767


def _u32_vector(x, func, name):
    return np.ascontiguousarray(check_tensor(x, func, name, ndim=1, allowed=_U32_T), dtype=np.int64)


def _i16_vector(x, func, name, n=None):
    a = check_tensor(x, func, name, ndim=1, allowed=_I16)
    if n is not None and a.shape[0] < n:
        raise ValueError(f"{func}: {name} must have at least {n} entries, got {a.shape[0]}")
    return np.ascontiguousarray(a, dtype=np.int64)


@names_its_errors
def signal_filter_bank(x, weights, unweights, channel_frequency_starts, channel_weight_starts, channel_widths,
                       num_channels: int):
    """``SignalFilterBank``: (num_channels,) uint64 mel channel sums of the uint32 power spectrum ``x``.

    The int16 tables hold num_channels + 1 entries (channel 0 is scratch); every channel's bins and weights must
    lie inside ``x`` and ``weights`` / ``unweights`` (the C code reads past them otherwise). Sums wrap modulo
    2^64 (an int16 weight is sign-extended to uint64 first).
    """
    f = "signal_filter_bank"
    n = int_in_range(num_channels, 1, 1 << 15, f, "num_channels")
    x = _u32_vector(x, f, "x")
    weights, unweights = _i16_vector(weights, f, "weights"), _i16_vector(unweights, f, "unweights")
    fs = _i16_vector(channel_frequency_starts, f, "channel_frequency_starts", n + 1)
    ws = _i16_vector(channel_weight_starts, f, "channel_weight_starts", n + 1)
    wd = _i16_vector(channel_widths, f, "channel_widths", n + 1)
    fs, ws, wd = fs[:n + 1], ws[:n + 1], wd[:n + 1]
    if unweights.shape[0] != weights.shape[0]:
        raise ValueError(f"{f}: weights and unweights must have the same length, got {weights.shape[0]} and "
                         f"{unweights.shape[0]}")
    if (wd < 0).any() or (fs < 0).any() or (ws < 0).any():
        raise ValueError(f"{f}: channel starts and widths must be >= 0")
    if (fs + wd).max() > x.shape[0] or (ws + wd).max() > weights.shape[0]:
        raise ValueError(f"{f}: every channel's bins must lie inside x ({x.shape[0]}) and its weights inside "
                         f"weights ({weights.shape[0]})")
    work = np.empty(n + 1, np.uint64)
    _accumulate_kernel(x, fs, ws, wd, weights, unweights, work)
    return work[1:].copy()


@names_its_errors
def signal_filter_bank_square_root(x, scale_bits: int):
    """``SignalFilterBankSquareRoot``: ``Sqrt64(x) >> scale_bits`` of the uint64 channels ``x``, as uint32
    (``scale_bits`` in 0..31; the model feeds it ``SignalFftAutoScale``'s shift)."""
    f = "signal_filter_bank_square_root"
    x = check_tensor(x, f, "x", ndim=1, allowed=_U64_T)
    shift = int_in_range(scale_bits, 0, 31, f, "scale_bits")
    work = np.concatenate((np.zeros(1, np.uint64), x))
    out = np.empty(x.shape[0], np.int64)
    _sqrt_kernel(work, shift, out)
    return out.astype(np.uint32)


@names_its_errors
def signal_filter_bank_spectral_subtraction(x, noise_estimate, smoothing: int, one_minus_smoothing: int,
                                            alternate_smoothing: int, alternate_one_minus_smoothing: int,
                                            smoothing_bits: int, spectral_subtraction_bits: int,
                                            min_signal_remaining: int, clamping: bool):
    """``SignalFilterBankSpectralSubtraction``: (output, new noise estimate), both uint32 like ``x``.

    ``noise_estimate`` is the state the op keeps between invocations (zeros after a reset). Coefficients are the
    C config's uint32 values (0..2^32-1); ``smoothing_bits`` 0..31 and ``spectral_subtraction_bits`` 0..63 (a
    wider shift is undefined in C).
    """
    f = "signal_filter_bank_spectral_subtraction"
    x = check_tensor(x, f, "x", ndim=1, allowed=_U32_T)
    est = check_tensor(noise_estimate, f, "noise_estimate", ndim=1, allowed=_U32_T)
    if est.shape != x.shape:
        raise ValueError(f"{f}: noise_estimate must have x's shape {x.shape}, got {est.shape}")
    coeffs = [int_in_range(v, 0, _U32, f, name) for v, name in (
        (smoothing, "smoothing"), (one_minus_smoothing, "one_minus_smoothing"),
        (alternate_smoothing, "alternate_smoothing"), (alternate_one_minus_smoothing, "alternate_one_minus_smoothing"),
        (min_signal_remaining, "min_signal_remaining"))]
    sb = int_in_range(smoothing_bits, 0, 31, f, "smoothing_bits")
    ssb = int_in_range(spectral_subtraction_bits, 0, 63, f, "spectral_subtraction_bits")
    if not isinstance(clamping, (bool, np.bool_)):
        raise TypeError(f"{f}: clamping must be a bool, got {clamping!r}")
    estimate = est.astype(np.uint64)
    out = np.empty(x.shape[0], np.uint64)
    _spectral_subtraction_kernel(x.astype(np.uint64), estimate, np.array(coeffs[:2], np.uint64),
                                 np.array(coeffs[2:4], np.uint64), sb, ssb, np.uint64(coeffs[4]), bool(clamping),
                                 out)
    return out.astype(np.uint32), estimate.astype(np.uint32)


@names_its_errors
def signal_filter_bank_log(x, output_scale: int, input_correction_bits: int):
    """``SignalFilterBankLog``: int16 ``min(Log32(x << input_correction_bits, output_scale), 32767)`` of the uint32
    channels ``x``, 0 where the shifted value is 0 or 1 (``output_scale`` 0..2^32-1 as the C uint32 takes it;
    ``input_correction_bits`` 0..31)."""
    f = "signal_filter_bank_log"
    x = _u32_vector(x, f, "x")
    scale = int_in_range(output_scale, 0, _U32, f, "output_scale")
    bits = int_in_range(input_correction_bits, 0, 31, f, "input_correction_bits")
    out = np.empty(x.shape[0], np.int16)
    _log_kernel(x, scale, bits, out)
    return out
