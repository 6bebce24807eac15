"""One frame of the microfrontend on one stream (``FrontendProcessSamples`` once a window is complete): the stage
kernels in turn, their tables and settings from the packed plan (:mod:`.plan`), their working buffers from one
int64 scratch."""
from __future__ import annotations

import numpy as np
from numba import njit

from .._bits import msb
from .fft import _frame_fft256_energy, _frame_fft_kernel
from .filterbank import _accumulate_kernel, _energy_kernel, _sqrt_kernel
from .log_scale import _log_scale_kernel
from .noise_reduction import _noise_reduction_kernel
from .pcan import _pcan_kernel
from .plan import (_CORRECTION_BITS, _ENABLE_LOG, _ENABLE_PCAN, _EVEN, _FB_END, _FB_START, _MIN_SIGNAL, _NCH, _NFFT,
                   _NSTAGES, _ODD, _SCALE_SHIFT, _SIZE, _SMOOTHING_BITS, _SNR_SHIFT, _sections)
from .window import _window_kernel


@njit(cache=True, nogil=True)
def _scratch_size(plan):
    """int64 elements of one frame's working buffers (:func:`_frame_kernel`)."""
    nfft, n_ch = plan[_NFFT], plan[_NCH]
    n_bins = nfft // 2 + 1
    return plan[_SIZE] + (n_bins + 1) // 2 + n_bins + (n_ch + 1) + 3 * n_ch + nfft


@njit(cache=True, nogil=True)
def _frame_kernel(frame, plan, estimate, scratch, out):
    """``FrontendProcessSamples`` on one complete window ``frame``: ``out`` (num_channels) features; ``estimate``
    (the noise reduction's state) updated; ``scratch``: :func:`_scratch_size` int64 elements."""
    (window, twiddles, stages, leaf_order, super_twiddles, freq_starts, weight_starts, widths, weights, unweights,
     pcan_lut, log_lut, stx) = _sections(plan)
    size, nfft, n_ch = plan[_SIZE], plan[_NFFT], plan[_NCH]
    n_bins = nfft // 2 + 1
    o1 = size
    o2 = o1 + (n_bins + 1) // 2  # the int16 spectrum: 2 * n_bins int16 in as many int64 halves
    o3 = o2 + n_bins
    o4 = o3 + n_ch + 1
    windowed = scratch[:size]
    spectrum = scratch[o1:o2].view(np.int16)[:2 * n_bins].reshape((n_bins, 2))
    energy, work = scratch[o2:o3], scratch[o3:o4].view(np.uint64)
    sig, tmp, feats = scratch[o4:o4 + n_ch], scratch[o4 + n_ch:o4 + 2 * n_ch], scratch[o4 + 2 * n_ch:o4 + 3 * n_ch]
    fft_work = scratch[o4 + 3 * n_ch:o4 + 3 * n_ch + nfft].reshape((2, nfft // 2))
    max_abs = _window_kernel(frame, window, windowed)
    shift = 15 - msb(max_abs)
    if nfft == 512 and plan[_NSTAGES] == 4 and size <= nfft:  # the 512-point real FFT of TFLM's configurations
        _frame_fft256_energy(windowed, shift, stx, leaf_order, super_twiddles, plan[_FB_START], plan[_FB_END],
                             energy, fft_work.ravel().view(np.int16))
    else:
        _frame_fft_kernel(windowed, shift, twiddles, stx, stages, leaf_order, super_twiddles, spectrum, fft_work)
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
