"""The Signal library's spectral stages (``signal/src/window.cc``, ``fft_auto_scale.cc``, ``rfft_int16.cc``,
``energy.cc``).

* ``ApplyWindow``: ``(int32)x * w >> shift``, saturated to int16.
* ``FftAutoScale``: the largest magnitude ``MaxAbs16`` kept in an int16, so ``-(-32768)`` stores -32768 and every
  later sample compares against that (the "maximum" can end negative or small); ``scale_bits = 15 -
  MostSignificantBit32(max)``, 0 where that is <= 0: 0 for silence (GCC's ``MostSignificantBit32(0)`` is 32) and
  for a negative maximum (its uint32 has bit 31 set); the output ``x * 2^scale_bits`` wraps to int16.
* ``RfftInt16Apply`` / ``RfftInt32Apply``: each row zero-padded to ``fft_length`` through kissfft's real FFT
  (:mod:`.kissfft`), complex int16 output interleaved (re, im).
* ``IrfftInt16Apply`` / ``IrfftInt32Apply``: kissfft's inverse real FFT (``kiss_fftri``) of each row's fft_length/2 + 1 bins.
* ``SpectrumToEnergy``: ``re^2 + im^2`` for the bins ``start_index .. end_index - 1``, exact in uint32 (only
  (-32768, -32768) passes 2^31 - 1, and the C int32 wrap to -2^31 stores 2^31); the other bins are left as they
  were in the C code (here 0).
"""
from __future__ import annotations

import functools

import numpy as np
from numba import njit

from ..._errors import names_its_errors
from .._checks import check_tensor, int_in_range
from ..._bits import msb, wrap16
from .kissfft import FftTables, _irfft_kernel, _rfft_kernel, fft_tables

_I16 = (np.dtype(np.int16),)
_FIXED = (np.dtype(np.int16), np.dtype(np.int32))


@njit(cache=True, nogil=True)
def _window_kernel(x, w, shift, out):
    """``ApplyWindow`` over each ``w``-long block of the flat ``x``."""
    m = w.shape[0]
    for i in range(x.shape[0]):
        raw = (np.int64(x[i]) * np.int64(w[i % m])) >> shift
        out[i] = min(max(raw, -32768), 32767)


@njit(cache=True, nogil=True)
def _fft_auto_scale_kernel(x, out):
    """``FftAutoScale`` into ``out``; returns the scale bits."""
    mx = 0
    for i in range(x.shape[0]):
        v = np.int64(x[i])
        if v > mx:
            mx = v
        elif -v > mx:
            mx = wrap16(-v)
    top = 32 if mx <= 0 else msb(mx)
    scale_bits = max(16 - top - 1, 0)
    for i in range(x.shape[0]):
        out[i] = wrap16(np.int64(x[i]) << scale_bits)
    return scale_bits


@njit(cache=True, nogil=True)
def _rfft_rows_kernel(x, twiddles, stages, leaf_order, super_twiddles, work, out):
    """``RfftInt16Apply`` / ``RfftInt32Apply`` of each row of ``x`` (rows, n <= nfft) zero-padded in ``work``
    (nfft zeros of x's type), into ``out`` (rows, nfft/2 + 1, 2)."""
    for r in range(x.shape[0]):
        work[:x.shape[1]] = x[r]
        _rfft_kernel(work, twiddles, stages, leaf_order, super_twiddles, out[r])


@njit(cache=True, nogil=True)
def _irfft_rows_kernel(spec, twiddles, stages, leaf_order, super_twiddles, out):
    """``IrfftInt16Apply`` of each row of ``spec`` (rows, nfft/2 + 1, 2) into ``out`` (rows, nfft)."""
    for r in range(spec.shape[0]):
        _irfft_kernel(spec[r], twiddles, stages, leaf_order, super_twiddles, out[r])


@njit(cache=True, nogil=True)
def _energy_kernel(spectrum, start, end, out):
    """``SpectrumToEnergy`` of the interleaved int16 ``spectrum`` into ``out`` (int64), 0 outside the bins."""
    for i in range(out.shape[0]):
        out[i] = 0
    for i in range(start, end):
        re, im = np.int64(spectrum[2 * i]), np.int64(spectrum[2 * i + 1])
        out[i] = re * re + im * im


def _fft_length(fft_length, func):
    n = int_in_range(fft_length, 4, 1 << 16, func, "fft_length")
    if n & (n - 1):
        raise ValueError(f"{func}: fft_length must be a power of two (kissfft's radix-2/4 stages), got {n}")
    return n


def _fixed(x, func):
    """``x`` as an int16 or int32 array (kissfft FIXED_POINT 16 / 32) and its bit width."""
    x = np.ascontiguousarray(check_tensor(x, func, "x", allowed=_FIXED))
    if x.ndim < 1:
        raise ValueError(f"{func}: x must have at least one dimension, got a scalar")
    return x, 8 * x.dtype.itemsize


def _int16(x, func, name, ndim=None):
    return np.ascontiguousarray(check_tensor(x, func, name, ndim=ndim, allowed=_I16))


@names_its_errors
def signal_window(x, weights, shift: int):
    """``SignalWindow``: ``x * weights >> shift`` saturated to int16, the int16 ``weights`` applied to each
    consecutive block of the flattened int16 ``x`` (its size a multiple of len(weights)); ``shift`` 0..31."""
    f = "signal_window"
    x = _int16(x, f, "x")
    w = _int16(weights, f, "weights", ndim=1)
    shift = int_in_range(shift, 0, 31, f, "shift")
    if x.size % w.shape[0]:
        raise ValueError(f"{f}: x's size {x.size} must be a multiple of the window's length {w.shape[0]}")
    out = np.empty(x.shape, np.int16)
    _window_kernel(x.reshape(-1), w, shift, out.reshape(-1))
    return out


@names_its_errors
def signal_fft_auto_scale(x):
    """``SignalFftAutoScale``: (``x * 2^scale_bits`` wrapped to int16, ``scale_bits``) of the 1-D int16 ``x``,
    ``scale_bits = max(15 - MostSignificantBit32(MaxAbs16(x)), 0)`` with C's int16 maximum (module docstring)."""
    x = _int16(x, "signal_fft_auto_scale", "x", ndim=1)
    out = np.empty(x.shape, np.int16)
    return out, int(_fft_auto_scale_kernel(x, out))


@functools.lru_cache(maxsize=16)
def rfft_tables(fft_length: int, inverse: bool = False, bits: int = 16) -> FftTables:
    """``kiss_fftr_alloc(fft_length, inverse)``'s tables for FIXED_POINT ``bits`` (cached: a model's Prepare and
    every call share them)."""
    return fft_tables(fft_length, inverse, bits)


@names_its_errors
def signal_rfft(x, fft_length: int):
    """``SignalRfft`` (int16 or int32, kissfft FIXED_POINT 16 / 32): the real FFT of each row of ``x`` (..., n),
    n <= ``fft_length``, zero-padded; (..., fft_length + 2) of x's type, the fft_length/2 + 1 bins' (re, im)
    interleaved, scaled by 1/fft_length as kissfft's block scaling gives it. ``fft_length``: a power of two >= 4
    (the radix-2/4 kissfft dspsim models)."""
    f = "signal_rfft"
    x, bits = _fixed(x, f)
    n = _fft_length(fft_length, f)
    if x.shape[-1] > n:
        raise ValueError(f"{f}: x's last dimension {x.shape[-1]} exceeds fft_length {n}")
    t = rfft_tables(n, False, bits)
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty((rows.shape[0], n // 2 + 1, 2), x.dtype)
    _rfft_rows_kernel(rows, t.twiddles, t.stages, t.leaf_order, t.super_twiddles, np.zeros(n, x.dtype), out)
    return out.reshape(x.shape[:-1] + (n + 2,))


@names_its_errors
def signal_irfft(x, fft_length: int):
    """``SignalIrfft`` (int16 or int32): kissfft's inverse real FFT (``kiss_fftri``) of each row of ``x`` (...,
    fft_length + 2), the fft_length/2 + 1 bins' (re, im) interleaved; (..., fft_length) of x's type, scaled by
    1/fft_length as kissfft's block scaling gives it (and by 1/2 in its split)."""
    f = "signal_irfft"
    x, bits = _fixed(x, f)
    n = _fft_length(fft_length, f)
    if x.ndim < 1 or x.shape[-1] != n + 2:
        raise ValueError(f"{f}: x's last dimension must be fft_length + 2 = {n + 2} (the bins' re, im), got "
                         f"shape {x.shape}")
    t = rfft_tables(n, True, bits)
    spec = x.reshape(-1, n // 2 + 1, 2)
    out = np.empty((spec.shape[0], n), x.dtype)
    _irfft_rows_kernel(spec, t.twiddles, t.stages, t.leaf_order, t.super_twiddles, out)
    return out.reshape(x.shape[:-1] + (n,))


@names_its_errors
def signal_energy(x, start_index: int, end_index: int):
    """``SignalEnergy``: uint32 ``re^2 + im^2`` of the interleaved complex int16 ``x`` (2k,) for the bins
    ``start_index <= i < end_index <= k``; 0 elsewhere (where the C code leaves the output as it was)."""
    f = "signal_energy"
    x = _int16(x, f, "x", ndim=1)
    if x.shape[0] % 2:
        raise ValueError(f"{f}: x must hold (re, im) pairs, got {x.shape[0]} values")
    k = x.shape[0] // 2
    end = int_in_range(end_index, 0, k, f, "end_index")
    start = int_in_range(start_index, 0, end, f, "start_index")
    out = np.empty(k, np.int64)
    _energy_kernel(x, start, end, out)
    return out.astype(np.uint32)
