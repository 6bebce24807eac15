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
from ._checks import int16_array, int_array
from .config import FrontendConfig
from .frame import _frame_kernel, _scratch_size
from .lanes import LANES, _lanes_kernel, lane_scratch_size
from .plan import _NCH, _SIZE, _STEP, _plan
from .tables import FrontendTables, frontend_tables

_INT16 = np.dtype(np.int16)  # numpy's one int16 dtype object: an identity test is the cheapest check a call can make
_UINT16 = np.dtype(np.uint16)
FEATURE_SCALE = 0.0390625
"""pymicro-features' ``FLOAT32_SCALE`` (10/256): its float features are the uint16 features times this, exactly."""

_FRAME_WORK = 1 << 14
"""Elements of work (:func:`dspsim._jit.parallel_rows`) one frame counts as: its ~5 us at ~0.3 ns per element."""


@njit(cache=True, nogil=True)
def _frames_kernel(pcm, n_frames, plan, estimate, scratch, out):
    """Frames ``0..n_frames-1`` of ``pcm`` (frame k = pcm[k*step : k*step + window_size]) into ``out``."""
    size, step = plan[_SIZE], plan[_STEP]
    for k in range(n_frames):
        _frame_kernel(pcm[k * step:k * step + size], plan, estimate, scratch, out[k])


@njit(cache=True, nogil=True)
def _stream_step(ctx, samples, out):
    """``FrontendProcessSamples`` on one stream whose context ``ctx`` (:func:`_stream_context`) is [offset o of the
    state, the plan, the state: samples buffered, noise estimate (num_channels), window buffer (window_size); the
    frame's scratch]: returns 2 * (the samples read from ``samples``) + 1 if they complete a window (then written
    to ``out``), + 0 if not. One array for all of it: numba's dispatch costs ~0.1 us per argument."""
    o = ctx[0]
    plan = ctx[1:o]
    size, step, n_ch = plan[_SIZE], plan[_STEP], plan[_NCH]
    state = ctx[o:o + 1 + n_ch + size]
    used = state[0]
    buf = state[1 + n_ch:]
    take = min(size - used, samples.shape[0])
    for i in range(take):
        buf[used + i] = samples[i]
    used += take
    ready = used == size
    if ready:
        _frame_kernel(buf, plan, state[1:1 + n_ch], ctx[o + 1 + n_ch + size:], out)
        for i in range(size - step):
            buf[i] = buf[i + step]
        used -= step
    state[0] = used
    return 2 * take + ready


def _stream_context(plan: np.ndarray) -> np.ndarray:
    """A fresh stream's context for :func:`_stream_step`: the plan, a zero state, the scratch."""
    n_state = 1 + int(plan[_NCH]) + int(plan[_SIZE])
    return np.concatenate([[1 + plan.shape[0]], plan, np.zeros(n_state + _scratch_size(plan), np.int64)])


def _run_frames(t: FrontendTables, pcm, n_frames, estimate):
    plan = _plan(t)
    out = np.empty((n_frames, t.config.num_channels), np.uint16)
    _frames_kernel(pcm, n_frames, plan, estimate, np.empty(_scratch_size(plan), np.int64), out)
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
    ``FrontendReset``): feed int16 chunks of any length, get each window's features as it completes.

    ``streams=N`` runs N independent streams in lockstep: ``process_samples`` takes (N, chunk) int16 and
    returns (N, num_channels) features, every stream as its own ``MicroFrontend`` would give them, computed in one
    compiled call: the streams as SIMD lanes in blocks of :data:`dspsim.frontend.lanes.LANES` (:mod:`.lanes`), the
    blocks split over the threads of :func:`dspsim.set_num_threads` when there is enough work
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
        self._ndim = 1 if streams is None else 2
        self._one, self._n_ch = streams is None, self.config.num_channels
        self._out_shape = (self.config.num_channels,) if streams is None else (self.streams,
                                                                                 self.config.num_channels)
        self._unused_out = np.empty(self._out_shape, np.uint16)  # the kernels' out while no window completes
        self._size, self._step = self.config.window_size, self.config.window_step
        self._blocks = 0 if streams is None else -(-self.streams // LANES)
        self.reset()

    def reset(self) -> None:
        """``FrontendReset``: an empty window buffer and a zero noise estimate (every stream)."""
        n_ch = self.config.num_channels
        self._used = 0
        if self.streams is None:
            self._ctx = _stream_context(self._plan)
            o = int(self._ctx[0])
            self.estimate = self._ctx[o + 1:o + 1 + n_ch]
            return
        # the streams as lanes (lanes.py): a column per stream, padded to whole blocks of LANES
        self._buf = np.zeros((self._blocks, self._size, LANES), np.int16)
        self._estimates = np.zeros((n_ch, self._blocks * LANES), np.int64)
        self._lane_scratch = np.empty((self._blocks, lane_scratch_size(self._plan)), np.int64)
        self._start = 0  # the window's first row in the ring buffer
        self.estimate = self._estimates[:, :self.streams].T

    def process_samples(self, samples):
        """``FrontendProcessSamples``: (features uint16 (num_channels,) or None, samples read); with ``streams``:
        (features (streams, num_channels) or None, samples read from each stream). Reads at most what completes
        the window; call again with the rest."""
        if self._one and type(samples) is np.ndarray and samples.dtype is _INT16 and samples.ndim == 1:
            # the call per 10 ms chunk, as little Python as it takes: the kernel keeps the count of samples
            # buffered and says whether the window completed
            out = np.empty(self._n_ch, _UINT16)
            r = _stream_step(self._ctx, samples, out)
            return (out if r & 1 else None), r >> 1
        samples = int16_array(samples, "MicroFrontend.process_samples", "samples", ndim=self._ndim)
        if self._one:
            return self.process_samples(samples)
        if samples.shape[0] != self.streams:
            raise ValueError(f"MicroFrontend.process_samples: samples must have one row per stream "
                             f"({self.streams}), got shape {samples.shape}")
        room, take = self._size - self._used, samples.shape[1]
        ready = take >= room
        take, out = (room, np.empty(self._out_shape, _UINT16)) if ready else (take, self._unused_out)
        plan, buf, start, est, used = self._plan, self._buf, self._start, self._estimates, self._used
        scratch = self._lane_scratch
        parallel_rows(lambda b0, b1: _lanes_kernel(plan, buf, start, est, samples, used, take, b0, b1, scratch, out),
                      self._blocks, self.streams * _FRAME_WORK * ready)
        if not ready:
            self._used += take
            return None, take
        self._start = (start + self._step) % self._size
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
