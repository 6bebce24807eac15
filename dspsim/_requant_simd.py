"""TFLite's default requantization (``Arithmetic.FIXED_POINT_DOUBLE``) in int32 vector lanes (LLVM IR).

The same formula as :func:`dspsim.fixedpoint.multiply_by_quantized_multiplier_scalar` then ``+ zp`` and
the clamp, for int32 accumulators (no saturation needed) and int8 / uint8 / int16 outputs, 8 lanes per
vector:

* ``x << left`` in int32 lanes (wraps, as TFLite's ``x * (1 << left)``);
* SRDHM ``(x * m + 2^30) >> 31``, ties toward +inf: ``vpmuldq`` on the even and the odd lanes (exact
  int64 products; ``m`` in [0, 2^31) so the one saturating case cannot occur), the high halves
  re-interleaved;
* RoundingDivideByPOT by ``right``, ties away from zero (gemmlowp's mask / threshold form);
* the clamp to ``[lo - zp, hi - zp]`` BEFORE ``+ zp``: the int32 add cannot wrap, and the value is the
  int64 ``min(max(v + zp, lo), hi)`` of the scalar loop; the store truncates it to the output type.

:func:`requantize_blocks` runs the vector blocks over the front of a row (32 outputs per step, then 8)
and returns where the caller's scalar loop takes over; for other dtypes it does nothing (returns 0).
The IR is plain LLVM vector code, fast with AVX2 (:data:`dspsim.kernels._simd.HAVE_AVX2`): callers
use it only there and keep the scalar loop elsewhere.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from .kernels._simd import HAVE_AVX2, _I32, _I64, _splat

__all__ = ["HAVE_AVX2", "lane_parameters", "requantize_blocks"]

_V8 = ir.VectorType(_I32, 8)
_V4 = ir.VectorType(_I32, 4)
_V4Q = ir.VectorType(_I64, 4)
_OUT_BITS = {types.int8: 8, types.uint8: 8, types.int16: 16}


def _lanes(*idx):
    return ir.Constant(ir.VectorType(_I32, len(idx)), list(idx))


def _mbqm_lanes(b, x, m, left, right):
    """RoundingDivideByPOT(SRDHM(x << left, m), right) of 8 int32 lanes."""
    x = b.shl(x, left)

    def high_half(idx):  # (x * m + 2^30) >> 31 of lanes idx, in int64
        xs, ms = (b.sext(b.shuffle_vector(v, v, _lanes(*idx)), _V4Q) for v in (x, m))
        p = b.mul(xs, ms)
        return b.trunc(b.lshr(b.add(p, ir.Constant(_V4Q, [1 << 30] * 4)), ir.Constant(_V4Q, [31] * 4)), _V4)

    h = b.shuffle_vector(high_half((0, 2, 4, 6)), high_half((1, 3, 5, 7)), _lanes(0, 4, 1, 5, 2, 6, 3, 7))
    one, zero = ir.Constant(_V8, [1] * 8), ir.Constant(_V8, [0] * 8)
    mask = b.sub(b.shl(one, right), one)
    threshold = b.add(b.ashr(mask, one), b.zext(b.icmp_signed("<", h, zero), _V8))
    return b.add(b.ashr(h, right), b.zext(b.icmp_signed(">", b.and_(h, mask), threshold), _V8))


def _block(nvec):
    """An intrinsic for ``8 * nvec`` outputs from ``off``: ``out[off + i] = clamp(MBQM(acc[off + i],
    mult[off + i], left[off + i], right[off + i]) + zp, lo, hi)`` (parameters indexed like the row)."""

    @intrinsic
    def block(typingctx, acc, off, mult, left, right, zp, lo, hi, out):
        elem = ir.IntType(_OUT_BITS[out.dtype])

        def codegen(context, builder, sig, args):
            b = builder
            at = sig.args
            o = context.cast(b, args[1], at[1], types.int64)

            def base(i, t):
                data = context.make_array(at[i])(context, b, args[i]).data
                return b.gep(b.bitcast(data, t.as_pointer()), [o])

            def load(i, k):
                return b.load(b.bitcast(b.gep(base(i, _I32), [ir.Constant(_I64, 8 * k)]), _V8.as_pointer()), align=4)

            def splat(i):
                return _splat(b, context.cast(b, args[i], at[i], types.int32), _V8)

            zpv = splat(5)
            q_lo, q_hi = b.sub(splat(6), zpv), b.sub(splat(7), zpv)
            res = []
            for k in range(nvec):
                q = _mbqm_lanes(b, load(0, k), load(2, k), load(3, k), load(4, k))
                q = b.select(b.icmp_signed("<", q, q_lo), q_lo, q)
                q = b.select(b.icmp_signed(">", q, q_hi), q_hi, q)
                res.append(b.add(q, zpv))
            while len(res) > 1:  # concatenate: 8 -> 16 -> 32 lanes
                w = 2 * res[0].type.count
                res = [b.shuffle_vector(res[i], res[i + 1], _lanes(*range(w))) for i in range(0, len(res), 2)]
            vt = ir.VectorType(elem, 8 * nvec)
            b.store(b.trunc(res[0], vt), b.bitcast(base(8, elem), vt.as_pointer()), align=1)
            return context.get_dummy_value()

        return types.void(acc, off, mult, left, right, zp, lo, hi, out), codegen

    return block


_block32 = _block(4)
_block8 = _block(1)


def requantize_blocks(row, orow, mult, left, right, zp, lo, hi):
    """The vector front of one row: outputs ``[0, returned)`` done (a multiple of 8), the rest for the
    scalar loop. ``mult``, ``left``, ``right`` are int32 per-position parameters (at least ``len(row)``);
    ``zp``, ``lo``, ``hi`` inside the output type. 0 when ``row`` is not C-contiguous int32 or ``orow``
    not C-contiguous int8 / uint8 / int16 (jit only)."""
    raise NotImplementedError("requantize_blocks is a jit primitive")


def _c_array(t, dtypes):
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype in dtypes


@overload(requantize_blocks, jit_options={"cache": True})
def _requantize_blocks(row, orow, mult, left, right, zp, lo, hi):
    if not (_c_array(row, (types.int32,)) and _c_array(orow, tuple(_OUT_BITS)) and
            all(_c_array(p, (types.int32,)) for p in (mult, left, right))):
        return lambda row, orow, mult, left, right, zp, lo, hi: 0

    def impl(row, orow, mult, left, right, zp, lo, hi):
        n = row.shape[0]
        n32 = n - n % 32
        for j in range(0, n32, 32):
            _block32(row, j, mult, left, right, zp, lo, hi, orow)
        n8 = n - n % 8
        for j in range(n32, n8, 8):
            _block8(row, j, mult, left, right, zp, lo, hi, orow)
        return n8

    return impl


@njit(cache=True, nogil=True)
def lane_parameters(mult, shift, n, per_channel):
    """int32 ``(multiplier, left shift, right shift)`` for the ``n`` positions of a row: channel ``j``'s
    values (``per_channel``) or the first ones broadcast."""
    m = np.empty(n, np.int32)
    left = np.empty(n, np.int32)
    right = np.empty(n, np.int32)
    for j in range(n):
        c = j if per_channel else 0
        m[j] = mult[c]
        left[j] = max(shift[c], 0)
        right[j] = max(-shift[c], 0)
    return m, left, right
