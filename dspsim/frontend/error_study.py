"""How far the fixed-point microfrontend is from exact arithmetic, stage by stage (``dspsim frontend-drift``).

Every stage of :func:`dspsim.frontend.microfrontend` is run twice per frame on the same int16 input: the
bit-exact fixed-point kernels, and a float64 twin that does the same algorithm with exact real arithmetic and the
same tables (Q12 window and filterbank weights, the configured smoothing, offset and strength), so that what is
measured is the data path's own error (truncating shifts, kissfft's per-stage 1/radix block scaling in int16,
integer square roots, the PCAN gain table's quadratic interpolation, the log's 128-segment table), not the
quantization of the tables. The twin keeps its own noise estimate, so the stateful stages' drift over time shows.

Stages and the unit each is compared in:

``window``       the windowed int16 samples (LSB of the input);
``fft``          the spectrum, referred to the input (the fixed spectrum divided by ``2^input_shift``);
``filterbank``   the square-rooted mel energies (``FilterbankSqrt``'s output);
``noise_reduction`` and ``pcan``  the per-channel outputs of those stages;
``features``     the uint16 log features (``round(ln(x * 2^correction) * 2^scale_shift)``; 1 LSB = 1/64 nat).

Per stage: SQNR in dB (float power over error power; inf when exact), the largest absolute error, and the RMS
error, in that stage's unit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._errors import names_its_errors
from .._bits import msb
from ._checks import int16_array
from .config import NOISE_REDUCTION_BITS, PCAN_OUTPUT_BITS, PCAN_SNR_BITS, FrontendConfig
from .fft import _fft_input_kernel, _rfft_kernel
from .filterbank import _accumulate_kernel, _energy_kernel, _sqrt_kernel
from .log_scale import _log_scale_kernel
from .microfrontend import _tables
from .noise_reduction import _noise_reduction_kernel
from .pcan import _pcan_kernel
from .tables import FrontendTables
from .window import _window_kernel

STAGES = ("window", "fft", "filterbank", "noise_reduction", "pcan", "features")


@dataclass(frozen=True)
class StageError:
    """One stage's error over the frames compared: SQNR (dB), max and RMS absolute error (stage units)."""

    sqnr_db: float
    max_abs: float
    rms: float

    def as_dict(self) -> dict:
        """JSON-ready: ``sqnr_db`` is None where it is infinite (``exact``: no error; else the exact value is 0)."""
        finite = math.isfinite(self.sqnr_db)
        return {"sqnr_db": self.sqnr_db if finite else None, "exact": self.sqnr_db == math.inf,
                "max_abs": self.max_abs, "rms": self.rms}


def _fixed_frame(t: FrontendTables, frame, estimate) -> dict:
    """One frame through the fixed-point kernels (the order of ``_frames_kernel``), every stage kept."""
    cfg, fb, fft = t.config, t.filterbank, t.fft
    n_ch = cfg.num_channels
    windowed = np.empty(cfg.window_size, np.int16)
    shift = 15 - msb(_window_kernel(frame, t.window, windowed))
    x = np.empty(fft.nfft, np.int16)
    _fft_input_kernel(windowed, shift, x)
    spectrum = np.empty((fft.nfft // 2 + 1, 2), np.int16)
    _rfft_kernel(x, fft.twiddles, fft.stages, fft.leaf_order, fft.super_twiddles, spectrum)
    energy = np.empty(fft.nfft // 2 + 1, np.int32)
    _energy_kernel(spectrum, fb.start_index, fb.end_index, energy)
    work = np.empty(n_ch + 1, np.uint64)
    _accumulate_kernel(energy, fb.channel_frequency_starts, fb.channel_weight_starts, fb.channel_widths,
                       fb.weights, fb.unweights, work)
    sig = np.empty(n_ch, np.int64)
    _sqrt_kernel(work, shift, sig)
    even, odd, min_signal = t.noise_reduction
    reduced = np.empty(n_ch, np.int64)
    _noise_reduction_kernel(sig, estimate, cfg.smoothing_bits, even, odd, min_signal, reduced)
    gained = np.empty(n_ch, np.int64)
    if cfg.enable_pcan:
        _pcan_kernel(reduced, estimate, t.pcan_lut, t.snr_shift, gained)
    else:
        gained[:] = reduced
    feats = np.empty(n_ch, np.int64)
    _log_scale_kernel(gained, cfg.enable_log, cfg.scale_shift, t.correction_bits, t.log_lut, feats)
    spec = (spectrum[:, 0].astype(np.float64) + 1j * spectrum[:, 1]) / float(1 << shift)
    return {"shift": shift, "window": windowed.astype(np.float64), "fft": spec, "filterbank": sig.astype(np.float64),
            "noise_reduction": reduced.astype(np.float64), "pcan": gained.astype(np.float64),
            "features": feats.astype(np.float64)}


def _float_frame(t: FrontendTables, frame, shift: int, estimate) -> dict:
    """The same frame in float64 with exact arithmetic; ``estimate`` (float64) is updated in place.

    ``shift`` is the fixed path's block-scaling shift: the twin applies it exactly (a power of two), so its
    square-rooted energies are on the fixed path's scale.
    """
    cfg, fb, fft = t.config, t.filterbank, t.fft
    windowed = frame.astype(np.float64) * t.window / 4096.0
    x = np.zeros(fft.nfft)
    x[:windowed.shape[0]] = windowed * float(1 << shift)
    spectrum = np.fft.rfft(x) / fft.nfft
    energy = np.zeros(spectrum.shape[0])
    energy[fb.start_index:fb.end_index] = np.abs(spectrum[fb.start_index:fb.end_index]) ** 2
    work, carry = np.empty(cfg.num_channels + 1), 0.0
    for c in range(cfg.num_channels + 1):
        f0, w0, n = fb.channel_frequency_starts[c], fb.channel_weight_starts[c], fb.channel_widths[c]
        e = energy[f0:f0 + n]
        work[c] = carry + float(np.dot(fb.weights[w0:w0 + n].astype(np.float64), e))
        carry = float(np.dot(fb.unweights[w0:w0 + n].astype(np.float64), e))
    sig = np.sqrt(work[1:]) / float(1 << shift)
    even, odd, min_signal = t.noise_reduction
    q = float(1 << NOISE_REDUCTION_BITS)
    smoothing = np.where(np.arange(cfg.num_channels) % 2 == 0, even, odd) / q
    scaled = sig * float(1 << cfg.smoothing_bits)
    estimate[:] = scaled * smoothing + estimate * (1.0 - smoothing)
    reduced = np.maximum((scaled - np.minimum(estimate, scaled)) / float(1 << cfg.smoothing_bits),
                         sig * min_signal / q)
    if cfg.enable_pcan:
        input_bits = cfg.smoothing_bits - t.correction_bits
        gain = float(1 << cfg.gain_bits) * (estimate / float(1 << input_bits) + cfg.pcan_offset) ** -cfg.pcan_strength
        snr = reduced * gain / float(2.0 ** t.snr_shift)
        knee = float(2 << PCAN_SNR_BITS)
        gained = np.where(snr < knee, snr * snr / 2.0 ** (2 + 2 * PCAN_SNR_BITS - PCAN_OUTPUT_BITS),
                          snr / 2.0 ** (PCAN_SNR_BITS - PCAN_OUTPUT_BITS) - float(1 << PCAN_OUTPUT_BITS))
    else:
        gained = reduced
    if cfg.enable_log:
        v = gained * 2.0 ** t.correction_bits
        feats = np.where(v > 1.0, np.log(np.maximum(v, 1.0)) * float(1 << cfg.scale_shift), 0.0)
        feats = np.minimum(feats, 65535.0)
    else:
        feats = np.minimum(gained, 65535.0)
    return {"window": windowed, "fft": spectrum / float(1 << shift), "filterbank": sig, "noise_reduction": reduced,
            "pcan": gained, "features": feats}


def _stage_error(fixed: np.ndarray, exact: np.ndarray) -> StageError:
    err = np.abs(fixed - exact)
    power, noise = float(np.sum(np.abs(exact) ** 2)), float(np.sum(err ** 2))
    if noise == 0.0:
        sqnr = math.inf
    elif power == 0.0:
        sqnr = -math.inf
    else:
        sqnr = 10.0 * math.log10(power / noise)
    return StageError(sqnr, float(err.max(initial=0.0)), math.sqrt(noise / max(err.size, 1)))


@names_its_errors
def stage_errors(pcm, config: FrontendConfig | None = None, *, per_frame: bool = False):
    """The fixed-point microfrontend's error against its exact float64 twin, per stage, over every frame of ``pcm``.

    Parameters
    ----------
    pcm : int16 array, 1-D
        The signal; its frames are those :func:`dspsim.frontend.microfrontend` makes.
    config : FrontendConfig, optional
        pymicro-features' configuration by default.
    per_frame : bool
        Also return each frame's RMS feature error (the stateful stages' drift over time).

    Returns
    -------
    dict
        ``{stage: StageError}`` for every stage of :data:`STAGES`, the fixed features (``"fixed_features"``,
        equal to :func:`microfrontend`'s output, bit for bit), and with ``per_frame`` ``"feature_rms_per_frame"``.
        A signal shorter than one window is a ValueError.
    """
    f = "stage_errors"
    t = _tables(config, f)
    cfg = t.config
    pcm = int16_array(pcm, f, "pcm")
    if pcm.shape[0] < cfg.window_size:
        raise ValueError(f"{f}: the signal has {pcm.shape[0]} samples; one frame needs {cfg.window_size}")
    n_frames = (pcm.shape[0] - cfg.window_size) // cfg.window_step + 1
    est_fixed = np.zeros(cfg.num_channels, np.int64)
    est_float = np.zeros(cfg.num_channels)
    fixed = {s: [] for s in STAGES}
    exact = {s: [] for s in STAGES}
    for k in range(n_frames):
        frame = pcm[k * cfg.window_step:k * cfg.window_step + cfg.window_size]
        a = _fixed_frame(t, frame, est_fixed)
        b = _float_frame(t, frame, a["shift"], est_float)
        for s in STAGES:
            fixed[s].append(a[s])
            exact[s].append(b[s])
    out = {s: _stage_error(np.concatenate(fixed[s]), np.concatenate(exact[s])) for s in STAGES}
    out["fixed_features"] = np.array(fixed["features"], np.uint16)
    if per_frame:
        d = np.array(fixed["features"]) - np.array(exact["features"])
        out["feature_rms_per_frame"] = np.sqrt(np.mean(d * d, axis=1))
    return out


def study_signal(kind: str, level_dbfs: float, seconds: float, sample_rate: int = 16000, seed: int = 0):
    """A deterministic int16 test signal: ``"noise"`` (white, uniform), ``"tone"`` (1 kHz sine) or ``"chirp"``
    (100 Hz to 7 kHz), its peak at ``level_dbfs`` (0 = full scale 32767), rounded half to even, saturated."""
    n = int(round(seconds * sample_rate))
    tt = np.arange(n) / sample_rate
    if kind == "noise":
        base = np.random.default_rng(seed).uniform(-1.0, 1.0, n)
    elif kind == "tone":
        base = np.sin(2 * np.pi * 1000.0 * tt)
    elif kind == "chirp":
        f0, f1 = 100.0, 7000.0
        base = np.sin(2 * np.pi * (f0 * tt + (f1 - f0) * tt * tt / (2 * max(seconds, 1e-9))))
    else:
        raise ValueError(f"study_signal: kind must be 'noise', 'tone' or 'chirp', got {kind!r}")
    peak = 32767.0 * 10.0 ** (level_dbfs / 20.0)
    return np.clip(np.rint(base * peak), -32768, 32767).astype(np.int16)
