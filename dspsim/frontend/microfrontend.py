"""The whole microfrontend (``frontend.c``): window -> FFT -> filterbank -> noise reduction -> PCAN -> log, frame
by frame with the noise estimate as state.

``FrontendProcessSamples`` per frame: window the last ``window_size`` samples; ``input_shift = 15 -
MostSignificantBit32(max_abs_output_value)`` scales the window up for the FFT (block floating point) and the
filterbank's square roots back down; the log scale corrects by ``MostSignificantBit32(fft_size) - 7`` bits.

:func:`microfrontend` runs a whole int16 signal (every complete window, ``window_step`` apart) in one compiled
loop; :class:`MicroFrontend` is the streaming state machine of the C API (``process_samples`` consumes at most
what completes the next window and returns its features or None), which pymicro-features wraps.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._bits import msb
from ._checks import int16_array, int_array
from .config import FrontendConfig
from .fft import _fft_input_kernel, _rfft_kernel
from .filterbank import _accumulate_kernel, _energy_kernel, _sqrt_kernel
from .log_scale import _log_scale_kernel
from .noise_reduction import _noise_reduction_kernel
from .pcan import _pcan_kernel
from .tables import FrontendTables, frontend_tables
from .window import _window_kernel

FEATURE_SCALE = 0.0390625
"""pymicro-features' ``FLOAT32_SCALE`` (10/256): its float features are the uint16 features times this, exactly."""

@njit(cache=True, nogil=True)
def _frames_kernel(pcm, n_frames, step, window, twiddles, stages, leaf_order, super_twiddles,
                   fb_start, fb_end, freq_starts, weight_starts, widths, weights, unweights,
                   smoothing_bits, even, odd, min_signal, estimate,
                   enable_pcan, pcan_lut, snr_shift, enable_log, scale_shift, correction_bits, log_lut, out):
    """Frames ``0..n_frames-1`` of ``pcm`` (frame k = pcm[k*step : k*step + len(window)]) into ``out``."""
    size = window.shape[0]
    nfft = leaf_order.shape[0] * 2
    n_ch = out.shape[1]
    windowed = np.empty(size, np.int16)
    x = np.empty(nfft, np.int16)
    spectrum = np.empty((nfft // 2 + 1, 2), np.int16)
    energy = np.empty(nfft // 2 + 1, np.int32)
    work = np.empty(n_ch + 1, np.uint64)
    sig = np.empty(n_ch, np.int64)
    tmp = np.empty(n_ch, np.int64)
    feats = np.empty(n_ch, np.int64)
    for k in range(n_frames):
        max_abs = _window_kernel(pcm[k * step:k * step + size], window, windowed)
        shift = 15 - msb(max_abs)
        _fft_input_kernel(windowed, shift, x)
        _rfft_kernel(x, twiddles, stages, leaf_order, super_twiddles, spectrum)
        _energy_kernel(spectrum, fb_start, fb_end, energy)
        _accumulate_kernel(energy, freq_starts, weight_starts, widths, weights, unweights, work)
        _sqrt_kernel(work, shift, sig)
        _noise_reduction_kernel(sig, estimate, smoothing_bits, even, odd, min_signal, tmp)
        if enable_pcan:
            _pcan_kernel(tmp, estimate, pcan_lut, snr_shift, sig)
        else:
            sig[:] = tmp
        _log_scale_kernel(sig, enable_log, scale_shift, correction_bits, log_lut, feats)
        for c in range(n_ch):
            out[k, c] = feats[c]

def _run_frames(tables: FrontendTables, pcm, n_frames, estimate):
    cfg, fb, fft = tables.config, tables.filterbank, tables.fft
    out = np.empty((n_frames, cfg.num_channels), np.uint16)
    even, odd, min_signal = tables.noise_reduction
    _frames_kernel(pcm, n_frames, cfg.window_step, tables.window, fft.twiddles, fft.stages, fft.leaf_order,
                   fft.super_twiddles, fb.start_index, fb.end_index, fb.channel_frequency_starts,
                   fb.channel_weight_starts, fb.channel_widths, fb.weights, fb.unweights, cfg.smoothing_bits,
                   even, odd, min_signal, estimate, cfg.enable_pcan, tables.pcan_lut, tables.snr_shift,
                   cfg.enable_log, cfg.scale_shift, tables.correction_bits, tables.log_lut, out)
    return out

_TABLES = {}

def _tables(config, func: str) -> FrontendTables:
    if config is None:
        config = FrontendConfig()
    if not isinstance(config, FrontendConfig):
        raise TypeError(f"{func}: config must be a dspsim.frontend.FrontendConfig, got {type(config).__name__}")
    if config not in _TABLES:
        _TABLES[config] = frontend_tables(config)
    return _TABLES[config]

@names_its_errors
def microfrontend(pcm, config: FrontendConfig | None = None, *, sample_rate: int | None = None, estimate=None):
    """TFLite Micro's microfrontend over the whole int16 signal ``pcm``: (frames, num_channels) uint16 features,
    one frame per complete window (``(len - window_size) // window_step + 1``, none if shorter).

    ``sample_rate``, where given, must be the configuration's (16000 by default): the features of a signal at
    another rate would be silently wrong. ``estimate`` (uint32, num_channels) is the noise reduction's state to
    start from (zeros, as after ``FrontendReset``); pass an array of int64 to have it updated in place.
    """
    f = "microfrontend"
    t = _tables(config, f)
    cfg = t.config
    if sample_rate is not None and sample_rate != cfg.sample_rate:
        raise ValueError(f"{f}: the signal's sample_rate {sample_rate} Hz is not the configuration's "
                         f"{cfg.sample_rate} Hz (resample first, or configure the frontend for it)")
    pcm = int16_array(pcm, f, "pcm")
    n = pcm.shape[0]
    n_frames = 0 if n < cfg.window_size else (n - cfg.window_size) // cfg.window_step + 1
    if estimate is None:
        est = np.zeros(cfg.num_channels, np.int64)
    elif isinstance(estimate, np.ndarray) and estimate.dtype == np.int64 and estimate.shape == (cfg.num_channels,):
        int_array(estimate, f, "estimate", 0, 2 ** 32 - 1)
        est = estimate
    else:
        est = int_array(estimate, f, "estimate", 0, 2 ** 32 - 1, shape=(cfg.num_channels,)).copy()
    return _run_frames(t, pcm, n_frames, est)

class MicroFrontend:
    """The streaming frontend of the C API (``FrontendPopulateState`` / ``FrontendProcessSamples`` /
    ``FrontendReset``): feed int16 chunks of any length, get each window's features as it completes."""

    def __init__(self, config: FrontendConfig | None = None):
        self.tables = _tables(config, "MicroFrontend")
        self.config = self.tables.config
        self.reset()

    def reset(self) -> None:
        """``FrontendReset``: an empty window buffer and a zero noise estimate."""
        self._buffer = np.zeros(self.config.window_size, np.int16)
        self._used = 0
        self.estimate = np.zeros(self.config.num_channels, np.int64)

    def process_samples(self, samples):
        """``FrontendProcessSamples``: (features uint16 (num_channels,) or None, samples read). Reads at most
        what completes the window; call again with the rest."""
        samples = int16_array(samples, "MicroFrontend.process_samples", "samples")
        size, step = self.config.window_size, self.config.window_step
        take = min(size - self._used, samples.shape[0])
        self._buffer[self._used:self._used + take] = samples[:take]
        self._used += take
        if self._used < size:
            return None, take
        out = _run_frames(self.tables, self._buffer, 1, self.estimate)[0]
        self._buffer[:size - step] = self._buffer[step:].copy()
        self._used -= step
        return out, take

    def process(self, pcm) -> np.ndarray:
        """Every window that ``pcm`` completes (the stream goes on): (frames, num_channels) uint16."""
        pcm = int16_array(pcm, "MicroFrontend.process", "pcm")
        frames, pos = [], 0
        while pos < pcm.shape[0]:
            feats, n = self.process_samples(pcm[pos:])
            pos += n
            if feats is not None:
                frames.append(feats)
        return np.array(frames, np.uint16).reshape(-1, self.config.num_channels)

def features_as_float(features) -> np.ndarray:
    """pymicro-features' float features: each uint16 times :data:`FEATURE_SCALE` (float32, exact), as float64."""
    a = np.asarray(features)
    if a.dtype != np.uint16:
        raise TypeError(f"features_as_float: features must be uint16, got {a.dtype}")
    return (a.astype(np.float32) * np.float32(FEATURE_SCALE)).astype(np.float64)
