"""The C integer helpers that the fixed-point DSP kernels share (numba, and plain Python under ``NUMBA_DISABLE_JIT=1``):
TFLite Micro's Signal library (:mod:`dspsim.kernels.signal`), its microfrontend (:mod:`dspsim.frontend`) and
CMSIS-DSP (:mod:`dspsim.dsp`): C's wrapping casts, the most significant bit, the uint64 view of an int64."""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

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


def msb(n):
    """``MostSignificantBit32/64`` of a non-negative int64: its bit length, 0 for 0.

    Compiled: ``64 - ctlz(n)`` (LLVM's ``llvm.ctlz``, one ``lzcnt``; a loop of a shift per bit cost the PCAN and
    log stages ~20 steps a channel). This Python body is the NUMBA_DISABLE_JIT path."""
    return int(n).bit_length()


@intrinsic
def _ctlz64(typingctx, x):
    def codegen(context, builder, signature, args):
        i64, i1 = ir.IntType(64), ir.IntType(1)
        ctlz = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64, i1]), "llvm.ctlz.i64")
        return builder.call(ctlz, [args[0], ir.Constant(i1, 0)])  # is_zero_poison false: ctlz(0) = 64
    return types.int64(types.int64), codegen


@overload(msb, inline="always")
def _msb_jit(n):
    return lambda n: 64 - _ctlz64(np.int64(n))


@njit(cache=True, nogil=True, inline="always")
def as_u64(v):
    """``(uint64_t)v`` of a signed int64 (sign extension, modulo 2^64)."""
    if v >= 0:
        return np.uint64(v)
    return np.uint64(v & 0x7FFFFFFFFFFFFFFF) + U64_TOP
