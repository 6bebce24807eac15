"""A 256-entry lookup table over 8-bit codes (LiteRT's ``LookupTable``) in 32-byte vectors (LLVM IR, AVX2).

Per code ``q`` (int8 or uint8) the output is ``table[q - min]``: the index's low nibble picks a byte inside a
16-entry row (``vpshufb``), its high nibble the row (16 compares and blends). No arithmetic, so the values are the
scalar loop's. :func:`lookup_lanes` runs the blocks over the front of the flat codes (32 per step) and returns where
the caller's scalar loop takes over; :func:`lut_rows` lays a table out as the blocks read it. Fast with AVX2:
callers use it only where :data:`dspsim.simd.add_lanes.USE_LANES` is true.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from ._ir import _I8, _I64, _x86

__all__ = ["lookup_lanes", "lut_rows"]

_V32 = ir.VectorType(_I8, 32)
_BYTES = (types.int8, types.uint8)


def lut_rows(table):
    """The ``(16, 32)`` uint8 rows of a 256-entry 8-bit ``table``: row ``h`` holds entries ``16 h .. 16 h + 15``,
    twice (``vpshufb`` looks up within each 16-byte half)."""
    rows = np.ascontiguousarray(table).view(np.uint8).reshape(16, 16)
    return np.ascontiguousarray(np.concatenate([rows, rows], axis=1))


@intrinsic
def _lookup_block(typingctx, x, off, rows, out):
    """``out[off + i] = table[x[off + i] - min]`` for 32 codes; ``rows`` from :func:`lut_rows`."""

    def codegen(context, bld, sig, args):
        def pointer(i):
            data = context.make_array(sig.args[i])(context, bld, args[i]).data
            return bld.bitcast(data, _I8.as_pointer())

        o = context.cast(bld, args[1], sig.args[1], types.int64)
        x_ptr = bld.bitcast(bld.gep(pointer(0), [o]), _V32.as_pointer())
        idx = bld.load(x_ptr, align=1)
        if sig.args[0].dtype == types.int8:  # the index q + 128: the sign bit flipped
            idx = bld.xor(idx, ir.Constant(_V32, [0x80] * 32))
        low = bld.and_(idx, ir.Constant(_V32, [0x0F] * 32))
        high = bld.lshr(idx, ir.Constant(_V32, [4] * 32))
        res = ir.Constant(_V32, [0] * 32)
        for h in range(16):
            row = bld.load(bld.bitcast(bld.gep(pointer(2), [ir.Constant(_I64, 32 * h)]), _V32.as_pointer()), align=1)
            hit = bld.icmp_unsigned("==", high, ir.Constant(_V32, [h] * 32))
            res = bld.select(hit, _x86(bld, "llvm.x86.avx2.pshuf.b", _V32, row, low), res)
        bld.store(res, bld.bitcast(bld.gep(pointer(3), [o]), _V32.as_pointer()), align=1)
        return context.get_dummy_value()

    return types.void(x, off, rows, out), codegen


def lookup_lanes(x, rows, out):
    """The vector front of a flat lookup (jit only): ``out[:returned]`` done (a multiple of 32), the rest for the
    scalar loop. ``x``, ``out`` flat C arrays of 8-bit codes (int8 or uint8; ``out`` the table's type), ``rows``
    :func:`lut_rows` of the table. Returns 0 for other types or layouts."""
    raise NotImplementedError("lookup_lanes is a jit primitive")


def _flat_bytes(t):
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype in _BYTES


@overload(lookup_lanes, jit_options={"cache": True}, inline="always")
def _lookup_lanes(x, rows, out):
    if not (_flat_bytes(x) and _flat_bytes(out) and isinstance(rows, types.Array) and rows.dtype == types.uint8
            and rows.layout == "C"):
        return lambda x, rows, out: 0

    def impl(x, rows, out):
        n32 = x.shape[0] - x.shape[0] % 32
        for j in range(0, n32, 32):
            _lookup_block(x, j, rows, out)
        return n32

    return impl
