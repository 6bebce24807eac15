"""Filterbank (``filterbank.c``): power spectrum, mel channels, square root.

* ``FilterbankConvertFftComplexToEnergy``: ``re*re + im*im`` in int32 (only (-32768, -32768) overflows, to
  -2^31), for the bins ``start_index .. end_index - 1``.
* ``FilterbankAccumulateChannels``: per channel, uint64 sums of ``weight * (uint64)energy`` (an int32 energy is
  sign-extended) and of ``unweight * energy``; channel ``i``'s output is its weighted sum plus channel ``i - 1``'s
  unweighted sum (the triangles' rising and falling halves). Sums wrap modulo 2^64.
* ``FilterbankSqrt``: the bitwise integer square root of each of channels 1..num_channels, rounded up when the
  remainder exceeds the root (``Sqrt32`` below 2^32, saturating at 0xFFFF; ``Sqrt64`` above, at 0xFFFFFFFF), then
  shifted right by the FFT's input shift.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._errors import names_its_errors
from .._bits import U64_ONE, U64_ZERO, wrap32
from ..kernels.signal.filter_bank import _accumulate_kernel, _sqrt_kernel
from ._checks import int16_array, int_array
from .tables import FilterbankTables


@njit(cache=True, nogil=True)
def _energy_kernel(spectrum, start, end, energy):
    """``energy[i] = (int32)(re^2 + im^2)`` for start <= i < end, 0 elsewhere."""
    for i in range(energy.shape[0]):
        energy[i] = 0
    for i in range(start, end):
        b = np.uint64(i)  # unsigned: no negative-index wraparound
        re, im = np.int64(spectrum[b, U64_ZERO]), np.int64(spectrum[b, U64_ONE])
        energy[b] = wrap32(re * re + im * im)


def _check_tables(tables, func):
    if not isinstance(tables, FilterbankTables):
        raise TypeError(f"{func}: tables must be dspsim.frontend.tables.FilterbankTables (filterbank_tables(cfg))")


@names_its_errors
def filterbank_energy(spectrum, tables: FilterbankTables):
    """The power spectrum of the kissfft output ``spectrum`` ((n, 2) int16): int32 per bin, 0 outside the band."""
    _check_tables(tables, "filterbank_energy")
    spectrum = int16_array(spectrum, "filterbank_energy", "spectrum", ndim=2)
    if spectrum.shape[1] != 2 or spectrum.shape[0] < tables.end_index:
        raise ValueError(f"filterbank_energy: spectrum must be (n >= {tables.end_index}, 2) int16, got "
                         f"{spectrum.shape}")
    energy = np.empty(spectrum.shape[0], np.int32)
    _energy_kernel(spectrum, tables.start_index, tables.end_index, energy)
    return energy


@names_its_errors
def filterbank_accumulate(energy, tables: FilterbankTables):
    """``FilterbankAccumulateChannels``: (num_channels + 1,) uint64 channel sums of the int32 ``energy``."""
    _check_tables(tables, "filterbank_accumulate")
    need = int(np.max(tables.channel_frequency_starts + tables.channel_widths))
    energy = int_array(energy, "filterbank_accumulate", "energy", -2 ** 31, 2 ** 31 - 1)
    if energy.ndim != 1 or energy.shape[0] < need:
        raise ValueError(f"filterbank_accumulate: energy must be 1-D with at least {need} bins, got "
                         f"{energy.shape}")
    work = np.empty(tables.num_channels + 1, np.uint64)
    _accumulate_kernel(energy, tables.channel_frequency_starts, tables.channel_weight_starts,
                       tables.channel_widths, tables.weights, tables.unweights, work)
    return work


@names_its_errors
def filterbank_sqrt(work, scale_down_shift: int):
    """``FilterbankSqrt``: the rounded square roots of ``work[1:]`` (uint64) shifted right by ``scale_down_shift``
    (0..31), as uint32."""
    a = np.asarray(work)
    if a.dtype != np.uint64 or a.ndim != 1 or a.shape[0] < 1:
        raise TypeError(f"filterbank_sqrt: work must be a 1-D uint64 array, got {a.dtype} {a.shape}")
    if isinstance(scale_down_shift, bool) or not isinstance(scale_down_shift, (int, np.integer)) \
            or not 0 <= scale_down_shift <= 31:
        raise ValueError(f"filterbank_sqrt: scale_down_shift must be an int in 0..31, got {scale_down_shift!r}")
    out = np.empty(a.shape[0] - 1, np.int64)
    _sqrt_kernel(np.ascontiguousarray(a), int(scale_down_shift), out)
    return out.astype(np.uint32)
