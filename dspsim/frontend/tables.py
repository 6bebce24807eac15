"""Every table of the microfrontend, derived from the configuration as the C ``*PopulateState`` functions and
kissfft's ``kiss_fft_alloc`` / ``kiss_fftr_alloc`` derive them (TFLite Micro's Prepare for the frontend).

The C code computes in ``float`` (window, filterbank, PCAN gain table) or ``double`` (kissfft's twiddles). Each
float32 step here is a numpy float32 operation (one IEEE rounding, as the C statement with FLT_EVAL_METHOD 0 and
no FMA contraction on x86-64); ``cosf``, ``log1pf`` and ``powf`` are the float32 nearest to the double result
(glibc's float functions agree with that on every value these tables take, which the goldens pin).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .config import (
    FILTERBANK_BITS,
    FRONTEND_WINDOW_BITS,
    NOISE_REDUCTION_BITS,
    PCAN_SNR_BITS,
    WIDE_DYNAMIC_FUNCTION_BITS,
    WIDE_DYNAMIC_FUNCTION_LUT_SIZE,
    FrontendConfig,
)
from ..kernels.signal.filter_bank import log_lut  # noqa: F401  (the log table's home)
from ..kernels.signal.kissfft import FftTables, fft_tables  # noqa: F401  (the FFT's tables)
from .libm import log1pf_fdlibm

F32 = np.float32
_FILTERBANK_INDEX_ALIGNMENT = 2   # kFilterbankIndexAlignment (4 bytes) / sizeof(int16_t)
_FILTERBANK_CHANNEL_BLOCK_SIZE = 4


def msb32(n: int) -> int:
    """``MostSignificantBit32``: the bit length of ``n`` (0 for 0)."""
    return int(n).bit_length()


def window_coefficients(size: int) -> np.ndarray:
    """``WindowPopulateState``: a periodic Hann window in Q12, ``floorf(w * 4096 + 0.5f)``."""
    arg = F32(F32(math.pi) * F32(2.0)) / F32(size)
    out = np.empty(size, np.int16)
    for i in range(size):
        c = F32(math.cos(float(arg * (F32(i) + F32(0.5)))))
        v = F32(0.5) - F32(0.5) * c
        out[i] = math.floor(float(v * F32(1 << FRONTEND_WINDOW_BITS) + F32(0.5)))
    return out


def _freq_to_mel(freq) -> np.float32:
    """``FreqToMel``: ``1127.0f * log1pf(freq / 700.0f)``."""
    return F32(1127.0) * log1pf_fdlibm(F32(freq) / F32(700.0))


@dataclass(frozen=True)
class FilterbankTables:
    """``FilterbankPopulateState``: the channels' (aligned) starts and padded widths in FFT bins, their weight
    offsets, and the Q12 weights and unweights (1 - weight)."""

    num_channels: int
    start_index: int
    end_index: int
    channel_frequency_starts: np.ndarray  # (num_channels + 1,) int64
    channel_weight_starts: np.ndarray
    channel_widths: np.ndarray
    weights: np.ndarray                   # int16
    unweights: np.ndarray


def _config(cfg, func: str) -> FrontendConfig:
    """``cfg`` when it is a FrontendConfig (its fields were checked when it was made), else a TypeError."""
    if not isinstance(cfg, FrontendConfig):
        raise TypeError(f"{func}: cfg must be a FrontendConfig, got {type(cfg).__name__}")
    return cfg


def filterbank_tables(cfg: FrontendConfig) -> FilterbankTables:
    n1 = _config(cfg, "filterbank_tables").num_channels + 1
    spectrum_size = cfg.fft_size // 2 + 1
    mel_low, mel_hi = _freq_to_mel(F32(cfg.lower_band_limit)), _freq_to_mel(F32(cfg.upper_band_limit))
    spacing = F32(mel_hi - mel_low) / F32(n1)
    center = [F32(mel_low + spacing * F32(i + 1)) for i in range(n1)]
    hz_per_sbin = F32(F32(0.5) * F32(cfg.sample_rate)) / F32(F32(spectrum_size) - F32(1))
    start_index = int(F32(1.5) + F32(cfg.lower_band_limit) / hz_per_sbin)
    freq_starts, weight_starts, widths = [0] * n1, [0] * n1, [0] * n1
    actual_starts, actual_widths = [0] * n1, [0] * n1
    chan_start, weight_index, needs_zeros = start_index, 0, False
    for chan in range(n1):
        f = chan_start
        while _freq_to_mel(F32(f) * hz_per_sbin) <= center[chan]:
            f += 1
            if f > spectrum_size + 1:
                raise ValueError("filterbank_tables: a channel's center is beyond the spectrum")
        width = f - chan_start
        actual_starts[chan], actual_widths[chan] = chan_start, width
        if width == 0:
            freq_starts[chan], weight_starts[chan] = 0, 0
            widths[chan] = _FILTERBANK_CHANNEL_BLOCK_SIZE
            if not needs_zeros:
                needs_zeros = True
                for j in range(chan):
                    weight_starts[j] += _FILTERBANK_CHANNEL_BLOCK_SIZE
                weight_index += _FILTERBANK_CHANNEL_BLOCK_SIZE
        else:
            aligned = (chan_start // _FILTERBANK_INDEX_ALIGNMENT) * _FILTERBANK_INDEX_ALIGNMENT
            aligned_width = chan_start - aligned + width
            padded = ((aligned_width - 1) // _FILTERBANK_CHANNEL_BLOCK_SIZE + 1) * _FILTERBANK_CHANNEL_BLOCK_SIZE
            freq_starts[chan], weight_starts[chan], widths[chan] = aligned, weight_index, padded
            weight_index += padded
        chan_start = f
    weights = np.zeros(weight_index, np.int16)
    unweights = np.zeros(weight_index, np.int16)
    end_index = 0
    one = F32(1 << FILTERBANK_BITS)
    for chan in range(n1):
        frequency = actual_starts[chan]
        offset = frequency - freq_starts[chan]
        denom = mel_low if chan == 0 else center[chan - 1]
        for j in range(actual_widths[chan]):
            w = F32(center[chan] - _freq_to_mel(F32(frequency) * hz_per_sbin)) / F32(center[chan] - denom)
            k = weight_starts[chan] + offset + j
            weights[k] = math.floor(float(w * one + F32(0.5)))
            unweights[k] = math.floor(float(F32(F32(1.0) - w) * one + F32(0.5)))
            frequency += 1
        end_index = max(end_index, frequency)
    if end_index >= spectrum_size:
        raise ValueError(f"filterbank_tables: the filterbank's end index {end_index} is above the spectrum size "
                         f"{spectrum_size} (FilterbankPopulateState refuses it)")
    as_i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    return FilterbankTables(cfg.num_channels, start_index, end_index, as_i64(freq_starts), as_i64(weight_starts),
                            as_i64(widths), weights, unweights)


def noise_reduction_params(cfg: FrontendConfig) -> tuple:
    """``NoiseReductionPopulateState``: (even, odd, min_signal_remaining) in Q14, truncated from float32."""
    q = F32(1 << NOISE_REDUCTION_BITS)
    return tuple(int(F32(F32(v) * q)) for v in (cfg.even_smoothing, cfg.odd_smoothing, cfg.min_signal_remaining))


def input_correction_bits(cfg: FrontendConfig) -> int:
    """``MostSignificantBit32(fft_size) - 1 - kFilterbankBits / 2``: the log scale's and PCAN's correction."""
    return msb32(cfg.fft_size) - 1 - FILTERBANK_BITS // 2


def _pcan_gain(cfg: FrontendConfig, input_bits: int, x: int) -> int:
    """``PcanGainLookupFunction``: ``2^gain_bits * (x / 2^input_bits + offset) ^ -strength``, float32, saturated
    at 32767 and truncated after + 0.5."""
    x_f = F32(x) / F32(1 << input_bits)
    p = F32(math.pow(float(F32(x_f + F32(cfg.pcan_offset))), -float(F32(cfg.pcan_strength))))
    g = F32(1 << cfg.gain_bits) * p
    if g > F32(32767):
        return 32767
    return int(F32(g + F32(0.5)))


def pcan_tables(cfg: FrontendConfig) -> tuple:
    """``PcanGainControlPopulateState``: (gain LUT of 125 int16, snr_shift). The LUT holds y(0), y(1), then per
    interval 2..32 the quadratic (y0, a1, a2) at ``4 * interval - 6`` (the fourth slot is never read)."""
    corr = input_correction_bits(cfg)
    snr_shift = cfg.gain_bits - corr - PCAN_SNR_BITS
    input_bits = cfg.smoothing_bits - corr
    if not 0 <= snr_shift <= 63 or not 0 <= input_bits <= 31:
        raise ValueError(f"pcan_tables: gain_bits {cfg.gain_bits} and smoothing_bits {cfg.smoothing_bits} give "
                         f"snr_shift {snr_shift} and input_bits {input_bits}; C needs 0..63 and 0..31")
    lut = np.zeros(WIDE_DYNAMIC_FUNCTION_LUT_SIZE, np.int16)
    lut[0], lut[1] = _pcan_gain(cfg, input_bits, 0), _pcan_gain(cfg, input_bits, 1)
    for interval in range(2, WIDE_DYNAMIC_FUNCTION_BITS + 1):
        x0 = 1 << (interval - 1)
        x1 = x0 + (x0 >> 1)
        x2 = x0 + (x0 - 1) if interval == WIDE_DYNAMIC_FUNCTION_BITS else 2 * x0
        y0, y1, y2 = (_pcan_gain(cfg, input_bits, x) for x in (x0, x1, x2))
        a1 = 4 * (y1 - y0) - (y2 - y0)
        a2 = (y2 - y0) - a1
        k = 4 * interval - 6
        lut[k] = y0
        lut[k + 1] = ((a1 + 0x8000) & 0xFFFF) - 0x8000
        lut[k + 2] = ((a2 + 0x8000) & 0xFFFF) - 0x8000
    return lut, snr_shift


@dataclass(frozen=True)
class FrontendTables:
    """Everything :func:`dspsim.frontend.microfrontend` derives once from a :class:`FrontendConfig`."""

    config: FrontendConfig
    window: np.ndarray
    fft: FftTables
    filterbank: FilterbankTables
    noise_reduction: tuple        # (even, odd, min_signal_remaining) Q14
    pcan_lut: np.ndarray
    snr_shift: int
    log_lut: np.ndarray
    correction_bits: int          # input_correction_bits


def frontend_tables(cfg: FrontendConfig) -> FrontendTables:
    """``FrontendPopulateState``, for ``cfg``."""
    if _config(cfg, "frontend_tables").enable_pcan:
        lut, snr_shift = pcan_tables(cfg)
    else:
        lut, snr_shift = np.zeros(WIDE_DYNAMIC_FUNCTION_LUT_SIZE, np.int16), 0
    return FrontendTables(cfg, window_coefficients(cfg.window_size), fft_tables(cfg.fft_size),
                          filterbank_tables(cfg), noise_reduction_params(cfg), lut, snr_shift, log_lut(),
                          input_correction_bits(cfg))
