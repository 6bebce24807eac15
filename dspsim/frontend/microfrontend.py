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
from .._jit import parallel_rows
from ..kernels.signal.kissfft import _rfft_scratch_kernel
from ._bits import msb
from ._checks import int16_array, int_array
from .config import FrontendConfig
from .fft import _fft_input_kernel
from .filterbank import _accumulate_kernel, _energy_kernel, _sqrt_kernel
from .log_scale import _log_scale_kernel
from .noise_reduction import _noise_reduction_kernel
from .pcan import _pcan_kernel
from .tables import FrontendTables, frontend_tables
from .window import _window_kernel

_INT16 = np.dtype(np.int16)  # numpy's one int16 dtype object: an identity test is the cheapest check a call can make
_UINT16 = np.dtype(np.uint16)
FEATURE_SCALE = 0.0390625
"""pymicro-features' ``FLOAT32_SCALE`` (10/256): its float features are the uint16 features times this, exactly."""

# A configuration's tables and settings packed into one int64 array (the plan), so that a compiled call takes them
# as one argument: numba's dispatch costs about 0.2 us per argument, and a streaming call per 10 ms chunk could not
# afford the 27 of the stages. The header's fields, then the tables in the order of _sections.
(_SIZE, _STEP, _NFFT, _NCH, _NSTAGES, _NWEIGHTS, _FB_START, _FB_END, _SMOOTHING_BITS, _EVEN, _ODD, _MIN_SIGNAL,
 _ENABLE_PCAN, _SNR_SHIFT, _ENABLE_LOG, _SCALE_SHIFT, _CORRECTION_BITS, _HEADER) = range(18)

_FRAME_WORK = 1 << 14
"""Elements of work (:func:`dspsim._jit.parallel_rows`) one frame counts as: its ~5 us at ~0.3 ns per element."""


def _pack_plan(t: FrontendTables) -> np.ndarray:
    """The plan of ``t`` (see the comment above)."""
    cfg, fb, fft = t.config, t.filterbank, t.fft
    even, odd, min_signal = t.noise_reduction
    header = np.zeros(_HEADER, np.int64)
    header[[_SIZE, _STEP, _NFFT, _NCH, _NSTAGES, _NWEIGHTS, _FB_START, _FB_END, _SMOOTHING_BITS, _EVEN, _ODD,
            _MIN_SIGNAL, _ENABLE_PCAN, _SNR_SHIFT, _ENABLE_LOG, _SCALE_SHIFT, _CORRECTION_BITS]] = [
        cfg.window_size, cfg.window_step, fft.nfft, cfg.num_channels, fft.stages.shape[0], fb.weights.shape[0],
        fb.start_index, fb.end_index, cfg.smoothing_bits, even, odd, min_signal, cfg.enable_pcan, t.snr_shift,
        cfg.enable_log, cfg.scale_shift, t.correction_bits]
    parts = (header, t.window, fft.twiddles, fft.stages, fft.leaf_order, fft.super_twiddles,
             fb.channel_frequency_starts, fb.channel_weight_starts, fb.channel_widths, fb.weights, fb.unweights,
             t.pcan_lut, t.log_lut)
    return np.concatenate([np.asarray(a, np.int64).ravel() for a in parts])


@njit(cache=True, nogil=True)
def _sections(plan):
    """The plan's tables as views: window, twiddles, stages, leaf order, super twiddles, the filterbank's frequency
    starts, weight starts, widths, weights and unweights, the PCAN and log tables."""
    ncfft, n1, nw = plan[_NFFT] // 2, plan[_NCH] + 1, plan[_NWEIGHTS]
    sizes = (plan[_SIZE], 2 * ncfft, 3 * plan[_NSTAGES], ncfft, 2 * (ncfft // 2), n1, n1, n1, nw, nw, 125, 130)
    o = np.empty(len(sizes) + 1, np.int64)
    o[0] = _HEADER
    for i in range(len(sizes)):
        o[i + 1] = o[i] + sizes[i]
    return (plan[o[0]:o[1]], plan[o[1]:o[2]].reshape((ncfft, 2)), plan[o[2]:o[3]].reshape((plan[_NSTAGES], 3)),
            plan[o[3]:o[4]], plan[o[4]:o[5]].reshape((ncfft // 2, 2)), plan[o[5]:o[6]], plan[o[6]:o[7]],
            plan[o[7]:o[8]], plan[o[8]:o[9]], plan[o[9]:o[10]], plan[o[10]:o[11]], plan[o[11]:o[12]])


def _scratch_size(plan: np.ndarray) -> int:
    """int64 elements of one frame's working buffers (:func:`_frame_kernel`)."""
    nfft, n_ch = int(plan[_NFFT]), int(plan[_NCH])
    n_bins = nfft // 2 + 1
    return int(plan[_SIZE]) + nfft + (n_bins + 1) // 2 + n_bins + (n_ch + 1) + 3 * n_ch + 2 * nfft


@njit(cache=True, nogil=True)
def _frame_kernel(frame, plan, estimate, scratch, out):
    """``FrontendProcessSamples`` on one complete window ``frame``: ``out`` (num_channels) features; ``estimate``
    (the noise reduction's state) updated; ``scratch``: :func:`_scratch_size` int64 elements."""
    (window, twiddles, stages, leaf_order, super_twiddles, freq_starts, weight_starts, widths, weights, unweights,
     pcan_lut, log_lut) = _sections(plan)
    size, nfft, n_ch = plan[_SIZE], plan[_NFFT], plan[_NCH]
    n_bins = nfft // 2 + 1
    o1 = size + nfft
    o2 = o1 + (n_bins + 1) // 2  # the int16 spectrum: 2 * n_bins int16 in as many int64 halves
    o3 = o2 + n_bins
    o4 = o3 + n_ch + 1
    windowed, x = scratch[:size], scratch[size:o1]
    spectrum = scratch[o1:o2].view(np.int16)[:2 * n_bins].reshape((n_bins, 2))
    energy, work = scratch[o2:o3], scratch[o3:o4].view(np.uint64)
    sig, tmp, feats = scratch[o4:o4 + n_ch], scratch[o4 + n_ch:o4 + 2 * n_ch], scratch[o4 + 2 * n_ch:o4 + 3 * n_ch]
    fft_work = scratch[o4 + 3 * n_ch:o4 + 3 * n_ch + 2 * nfft].reshape((4, nfft // 2))
    max_abs = _window_kernel(frame, window, windowed)
    shift = 15 - msb(max_abs)
    _fft_input_kernel(windowed, shift, x)
    _rfft_scratch_kernel(x, twiddles, stages, leaf_order, super_twiddles, spectrum, fft_work)
    _energy_kernel(spectrum, plan[_FB_START], plan[_FB_END], energy)
    _accumulate_kernel(energy, freq_starts, weight_starts, widths, weights, unweights, work)
    _sqrt_kernel(work, shift, sig)
    _noise_reduction_kernel(sig, estimate, plan[_SMOOTHING_BITS], plan[_EVEN], plan[_ODD], plan[_MIN_SIGNAL], tmp)
    if plan[_ENABLE_PCAN]:
        _pcan_kernel(tmp, estimate, pcan_lut, plan[_SNR_SHIFT], sig)
    else:
        sig[:] = tmp
    _log_scale_kernel(sig, plan[_ENABLE_LOG], plan[_SCALE_SHIFT], plan[_CORRECTION_BITS], log_lut, feats)
    for c in range(n_ch):
        out[c] = feats[c]


@njit(cache=True, nogil=True)
def _frames_kernel(pcm, n_frames, plan, estimate, scratch, out):
    """Frames ``0..n_frames-1`` of ``pcm`` (frame k = pcm[k*step : k*step + window_size]) into ``out``."""
    size, step = plan[_SIZE], plan[_STEP]
    for k in range(n_frames):
        _frame_kernel(pcm[k * step:k * step + size], plan, estimate, scratch, out[k])


@njit(cache=True, nogil=True)
def _stream_step(plan, state, samples, scratch, out):
    """``FrontendProcessSamples`` on one stream, whose ``state`` is [samples buffered, noise estimate
    (num_channels), window buffer (window_size)]: returns the samples read from ``samples``; ``out`` is written
    when they complete a window."""
    size, step, n_ch = plan[_SIZE], plan[_STEP], plan[_NCH]
    used = state[0]
    buf = state[1 + n_ch:]
    take = min(size - used, samples.shape[0])
    for i in range(take):
        buf[used + i] = samples[i]
    used += take
    if used == size:
        _frame_kernel(buf, plan, state[1:1 + n_ch], scratch, out)
        for i in range(size - step):
            buf[i] = buf[i + step]
        used -= step
    state[0] = used
    return take


@njit(cache=True, nogil=True)
def _streams_kernel(plan, state, samples, s0, s1, scratch, out):
    """:func:`_stream_step` on streams ``s0..s1-1`` (rows of ``state``, ``samples`` and ``out``), which have
    buffered as many samples: returns the samples read from each."""
    take = 0
    for s in range(s0, s1):
        take = _stream_step(plan, state[s], samples[s], scratch, out[s])
    return take


def _run_frames(t: FrontendTables, pcm, n_frames, estimate):
    plan = _plan(t)
    out = np.empty((n_frames, t.config.num_channels), np.uint16)
    _frames_kernel(pcm, n_frames, plan, estimate, np.empty(_scratch_size(plan), np.int64), out)
    return out


_TABLES = {}
_PLANS = {}


def _plan(t: FrontendTables) -> np.ndarray:
    if t.config not in _PLANS:
        _PLANS[t.config] = _pack_plan(t)
    return _PLANS[t.config]

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
    ``FrontendReset``): feed int16 chunks of any length, get each window's features as it completes.

    ``streams=N`` runs N independent streams in lockstep: ``process_samples`` takes (N, chunk) int16 and
    returns (N, num_channels) features, every stream as its own ``MicroFrontend`` would give them, computed in one
    compiled call split over the threads of :func:`dspsim.set_num_threads` when it is large enough
    (:func:`dspsim._jit.parallel_rows`). Without ``streams`` the chunks and features are 1-D.
    """

    def __init__(self, config: FrontendConfig | None = None, *, streams: int | None = None):
        self.tables = _tables(config, "MicroFrontend")
        self.config = self.tables.config
        if streams is not None and (isinstance(streams, bool) or not isinstance(streams, (int, np.integer))
                                    or streams < 1):
            raise ValueError(f"MicroFrontend: streams must be None or an int >= 1, got {streams!r}"[:200])
        self.streams = None if streams is None else int(streams)
        # everything a call needs, made once: the plan, the scratch, the shapes
        self._plan = _plan(self.tables)
        self._scratch = np.empty(_scratch_size(self._plan), np.int64)
        self._ndim = 1 if streams is None else 2
        self._out_shape = (self.config.num_channels,) if streams is None else (self.streams,
                                                                                 self.config.num_channels)
        self._unused_out = np.empty(self._out_shape, np.uint16)  # the kernels' out while no window completes
        self._size, self._step = self.config.window_size, self.config.window_step
        self.reset()

    def reset(self) -> None:
        """``FrontendReset``: an empty window buffer and a zero noise estimate (every stream)."""
        n_ch = self.config.num_channels
        self._state = np.zeros((self.streams or 1, 1 + n_ch + self._size), np.int64)
        self._used = 0
        self._state0 = self._state[0]
        self.estimate = self._state[:, 1:1 + n_ch] if self.streams else self._state0[1:1 + n_ch]

    def process_samples(self, samples):
        """``FrontendProcessSamples``: (features uint16 (num_channels,) or None, samples read); with ``streams``:
        (features (streams, num_channels) or None, samples read from each stream). Reads at most what completes
        the window; call again with the rest."""
        if not (type(samples) is np.ndarray and samples.dtype is _INT16 and samples.ndim == self._ndim):
            samples = int16_array(samples, "MicroFrontend.process_samples", "samples", ndim=self._ndim)
        room, take = self._size - self._used, samples.shape[-1]
        if take >= room:
            take, out = room, np.empty(self._out_shape, _UINT16)
        else:
            out = self._unused_out
        ready = take == room
        if self.streams is None:
            _stream_step(self._plan, self._state0, samples, self._scratch, out)
        else:
            n = samples.shape[0]
            if n != self.streams:
                raise ValueError(f"MicroFrontend.process_samples: samples must have one row per stream "
                                 f"({self.streams}), got shape {samples.shape}")
            k = self._scratch.shape[0]
            parallel_rows(lambda s0, s1: _streams_kernel(self._plan, self._state, samples, s0, s1,
                                                         np.empty(k, np.int64), out), n, n * _FRAME_WORK * ready)
        if not ready:
            self._used += take
            return None, take
        self._used += take - self._step
        return out, take

    def process(self, pcm) -> np.ndarray:
        """Every window that ``pcm`` completes (the stream goes on): (frames, num_channels) uint16; with
        ``streams``, ``pcm`` is (streams, samples) and the result (streams, frames, num_channels)."""
        ndim = 1 if self.streams is None else 2
        pcm = int16_array(pcm, "MicroFrontend.process", "pcm", ndim=ndim)
        frames, pos = [], 0
        while pos < pcm.shape[-1]:
            feats, n = self.process_samples(np.ascontiguousarray(pcm[..., pos:]))
            pos += n
            if feats is not None:
                frames.append(feats)
        shape = (-1, self.config.num_channels) if ndim == 1 else (pcm.shape[0], -1, self.config.num_channels)
        if ndim == 1:
            return np.array(frames, np.uint16).reshape(shape)
        return np.stack(frames, axis=1).reshape(shape) if frames else np.zeros((pcm.shape[0], 0,
                                                                                  self.config.num_channels), np.uint16)


def features_as_float(features) -> np.ndarray:
    """pymicro-features' float features: each uint16 times :data:`FEATURE_SCALE` (float32, exact), as float64."""
    a = np.asarray(features)
    if a.dtype != np.uint16:
        raise TypeError(f"features_as_float: features must be uint16, got {a.dtype}")
    return (a.astype(np.float32) * np.float32(FEATURE_SCALE)).astype(np.float64)
