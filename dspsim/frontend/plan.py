"""A configuration's tables and settings packed into one int64 array (the plan), so that a compiled call takes them
as one argument: numba's dispatch costs about 0.1-0.2 us per argument, and a streaming call per 10 ms chunk could not
afford the 27 of the stages. The header's fields, then the tables in the order of :func:`_sections`."""
from __future__ import annotations

import numpy as np
from numba import njit

from .fft import stage_twiddles
from .tables import FrontendTables

(_SIZE, _STEP, _NFFT, _NCH, _NSTAGES, _NWEIGHTS, _FB_START, _FB_END, _SMOOTHING_BITS, _EVEN, _ODD, _MIN_SIGNAL,
 _ENABLE_PCAN, _SNR_SHIFT, _ENABLE_LOG, _SCALE_SHIFT, _CORRECTION_BITS, _HEADER) = range(18)


def _pack_plan(t: FrontendTables) -> np.ndarray:
    """The plan of ``t`` (see the module docstring)."""
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
             t.pcan_lut, t.log_lut, stage_twiddles(fft))
    return np.concatenate([np.asarray(a, np.int64).ravel() for a in parts])


@njit(cache=True, nogil=True)
def _sections(plan):
    """The plan's tables as views: window, twiddles, stages, leaf order, super twiddles, the filterbank's frequency
    starts, weight starts, widths, weights and unweights, the PCAN and log tables, the stage twiddles."""
    ncfft, n1, nw, ns = plan[_NFFT] // 2, plan[_NCH] + 1, plan[_NWEIGHTS], plan[_NSTAGES]
    o2 = _HEADER + plan[_SIZE] + 2 * ncfft
    sum_m = 0
    for s in range(ns):
        sum_m += plan[o2 + 3 * s + 1]
    sizes = (plan[_SIZE], 2 * ncfft, 3 * ns, ncfft, 2 * (ncfft // 2), n1, n1, n1, nw, nw, 125, 130, 6 * sum_m)
    o = np.empty(len(sizes) + 1, np.int64)
    o[0] = _HEADER
    for i in range(len(sizes)):
        o[i + 1] = o[i] + sizes[i]
    return (plan[o[0]:o[1]], plan[o[1]:o[2]].reshape((ncfft, 2)), plan[o[2]:o[3]].reshape((plan[_NSTAGES], 3)),
            plan[o[3]:o[4]], plan[o[4]:o[5]].reshape((ncfft // 2, 2)), plan[o[5]:o[6]], plan[o[6]:o[7]],
            plan[o[7]:o[8]], plan[o[8]:o[9]], plan[o[9]:o[10]], plan[o[10]:o[11]], plan[o[11]:o[12]],
            plan[o[12]:o[13]].reshape((6, sum_m)))


_PLANS = {}


def _plan(t: FrontendTables) -> np.ndarray:
    """The plan of ``t``, packed once per configuration."""
    if t.config not in _PLANS:
        _PLANS[t.config] = _pack_plan(t)
    return _PLANS[t.config]
