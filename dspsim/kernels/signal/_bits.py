"""The integer helpers the audio front ends' stage kernels share (numba, and plain Python under
``NUMBA_DISABLE_JIT=1``): TFLite Micro's Signal library here, its microfrontend in :mod:`dspsim.frontend`."""
from __future__ import annotations

import numpy as np
from numba import njit

U64_ZERO = np.uint64(0)
U64_ONE = np.uint64(1)
U64_TOP = np.uint64(1) << np.uint64(63)


@njit(cache=True, nogil=True, inline="always")
def wrap16(v):
    """``(int16_t)v``: two's-complement wrap to 16 bits."""
    return ((v + 0x8000) & 0xFFFF) - 0x8000


@njit(cache=True, nogil=True, inline="always")
def wrap32(v):
    """``(int32_t)v``: two's-complement wrap to 32 bits."""
    return ((v + 0x80000000) & 0xFFFFFFFF) - 0x80000000


@njit(cache=True, nogil=True, inline="always")
def msb(n):
    """``MostSignificantBit32/64`` of a non-negative int64: its bit length, 0 for 0."""
    c = 0
    while n > 0:
        n >>= 1
        c += 1
    return c


@njit(cache=True, nogil=True, inline="always")
def as_u64(v):
    """``(uint64_t)v`` of a signed int64 (sign extension, modulo 2^64)."""
    if v >= 0:
        return np.uint64(v)
    return np.uint64(v & 0x7FFFFFFFFFFFFFFF) + U64_TOP
