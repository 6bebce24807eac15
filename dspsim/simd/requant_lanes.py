"""TFLite's default requantization (``Arithmetic.FIXED_POINT_DOUBLE``) in int32 vector lanes (LLVM IR).

The same formula as :func:`dspsim.fixedpoint.multiply_by_quantized_multiplier_scalar` then ``+ zp`` and
the clamp, for int32 accumulators (no saturation needed) and int8 / uint8 / int16 outputs, 8 or 16 lanes per
vector (:func:`fixed_lanes`):

* SRDHM ``(x * m + 2^30) >> 31``, ties toward +inf, then RoundingDivideByPOT by ``right``, ties away from
  zero, on exact int64 products (``vpmuldq`` on the even and the odd lanes; ``m`` in [0, 2^31), so the
  one saturating case cannot occur);
* where every lane of a block has ``right`` in [2, 31] (multipliers below 1/4: the common case) the two
  roundings are one floor, :func:`_mbqm_lanes_one_floor`; for 8-bit codes that floor is first taken in
  float32 lanes, :func:`_mbqm_lanes_float`, which flags every lane it cannot prove exact (a value within
  ``2^-12`` of an integer: ~1 lane in 2000), and a block with a flagged lane takes the exact lanes; elsewhere
  :func:`_mbqm_lanes` writes them as
  TFLite does, ``x << left`` first in int32 lanes (wrapping, as TFLite's ``x * (1 << left)``), then
  gemmlowp's mask / threshold form of the second rounding;
* the codes stored by :func:`store_codes`: the value is the int64 ``min(max(v + zp, lo), hi)`` of the
  scalar loop (8-bit codes through saturating packs, int16 through the int32 clamp).

:func:`requantize_blocks` runs the vector blocks over the front of a row (``4 * LANES`` outputs per step, then
``LANES``, then 8; :data:`LANES` is 16 where this process takes the AVX-512 paths, else 8) and returns where the caller's scalar loop takes over; for other dtypes it does nothing (returns 0);
:func:`requantize_rows` does the same for the rows of a block given by offsets. Both read the parameters of
each position from one array, :func:`lane_parameters`.
The IR is plain LLVM vector code, fast with AVX2 (:data:`dspsim.simd.cpu.HAVE_AVX2`): callers
use it only there and keep the scalar loop elsewhere.

The float-scale schemes FBGEMM (``Arithmetic.FBGEMM``, every float-bias mode) and ONNX Runtime / XNNPACK
(``Arithmetic.FLOAT32``) run in 8 float32 lanes, :func:`requantize_float_row` (the front of a row, as
:func:`requantize_blocks`; the parameters from :func:`float_lane_parameters`), the same values as
:func:`dspsim.requant.requantize_value`:

* ``vcvtdq2ps`` (int32 -> float32, ties to even), then ``vfmadd`` with the bias lanes
  ``fma(bias_a, bias_b, raw)``, one rounding: FBGEMM's per-tensor ``fma(bias, f32(1/act_times_w), raw)``
  as it is, its per-channel ``f32(raw + f32(bias/act_times_w))`` as ``fma(quotient, 1, raw)`` (the
  same single rounding), no bias as ``fma(0, 0, raw) = raw``;
* ``f32(raw * scale)``; ONNX Runtime / XNNPACK then clamp in float to ``[lo - zp, hi - zp]``, FBGEMM
  does not;
* ``vcvtps2dq``: ties to even (the default MXCSR, as FBGEMM's ``_mm256_cvtps_epi32``), and a value
  outside int32 (or NaN) becomes INT32_MIN, the x86 "integer indefinite" that FBGEMM then clamps to
  ``lo``: a huge positive value comes out as act_min, as in FBGEMM;
* :func:`store_codes` (the same clamp as the fixed-point lanes).

:func:`float_lanes` and :func:`fixed_lanes` are those steps on vectors of 8 or 16 lanes: the VNNI tile that
requantizes in its registers (:func:`dspsim.simd.tiles.tile_vnni_requant`) runs them on its zmm sums. 16 lanes
on one Zen 4 core: the fixed-point rows 0.144 -> 0.135 ns per 8-bit code, the float rows unchanged (0.109).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ..fixedpoint import Rounding
from ..requant import Arithmetic, FloatBias
from .cpu import HAVE_AVX2, HAVE_AVX512
from ._ir import _F32, _I8, _I16, _I32, _I64, _splat, _x86

__all__ = ["HAVE_AVX2", "LANES", "LANE_ROWS", "float_lane_parameters", "lane_parameters", "requantize_blocks", "lane_kind", "FIXED_LANES", "FLOAT_LANES",
           "requantize_float_row", "requantize_float_rows", "requantize_rows"]

_V8 = ir.VectorType(_I32, 8)
_OUT_BITS = {types.int8: 8, types.uint8: 8, types.int16: 16}
_OUT_TYPE = {t: ir.IntType(bits) for t, bits in _OUT_BITS.items()}
_V8F = ir.VectorType(_F32, 8)

LANE_ROWS = 7
"""Rows of the :func:`lane_parameters` array: multiplier, left shift, right shift, rounding, then the float32
bits of :func:`_mbqm_lanes_float`'s scale and its nudges for ``x >= 0`` and ``x < 0``."""
_MULT, _LEFT, _RIGHT, _ROUNDING, _SCALE, _NUDGE_POS, _NUDGE_NEG = range(LANE_ROWS)
FLOAT_MARGIN = 2.0 ** -12
"""The float lanes' margin: a value whose float32 estimate lies within it of an integer takes the exact lanes."""


def _lanes(*idx):
    return ir.Constant(ir.VectorType(_I32, len(idx)), list(idx))


def _vec(n, value):
    """``value`` in each of ``n`` int32 lanes (a constant)."""
    return ir.Constant(ir.VectorType(_I32, n), [value] * n)


def _q(v, n=8):
    """``v`` in each int64 half-lane pair of ``n`` int32 lanes (``n // 2`` int64 lanes)."""
    return ir.Constant(ir.VectorType(_I64, n // 2), [v] * (n // 2))


def _low_halves(b, v):
    """The even lanes of ``v`` (8 or 16 int32 lanes) sign-extended to int64 (``vpmuldq`` reads only those)."""
    n = v.type.count
    return b.ashr(b.shl(b.bitcast(v, ir.VectorType(_I64, n // 2)), _q(32, n)), _q(32, n))


def _odd_down(b, v):
    """The odd lanes moved into the even ones: a shuffle, not a shift."""
    return b.shuffle_vector(v, v, _lanes(*(i | 1 for i in range(v.type.count))))


def _mbqm_lanes(b, x, m, left, right):
    """RoundingDivideByPOT(SRDHM(x << left, m), right) of 8 or 16 int32 lanes, every shift (``left`` None: no left
    shift): the two roundings one after the other, as TFLite writes them.

    Zen 2 runs vector shifts on one pipe, a variable shift in two cycles: the odd lanes move down by a
    shuffle and the left shift comes only when a lane has one."""
    n = x.type.count
    vt = x.type
    if left is not None:
        x = b.shl(x, left)
    # (p + 2^30) >> 31 lands in the low half of an even product's lane; (p + 2^30) << 1 puts the same bits in
    # the high half of an odd one's; a blend joins them.
    even = b.mul(_low_halves(b, x), _low_halves(b, m))
    odd = b.mul(_low_halves(b, _odd_down(b, x)), _low_halves(b, _odd_down(b, m)))
    he = b.bitcast(b.lshr(b.add(even, _q(1 << 30, n)), _q(31, n)), vt)
    ho = b.bitcast(b.shl(b.add(odd, _q(1 << 30, n)), _q(1, n)), vt)
    h = b.shuffle_vector(he, ho, _lanes(*(i + n * (i & 1) for i in range(n))))
    one, zero = _vec(n, 1), _vec(n, 0)
    mask = b.sub(b.shl(one, right), one)
    threshold = b.sub(b.lshr(mask, one), b.sext(b.icmp_signed("<", h, zero), vt))
    return b.sub(b.ashr(h, right), b.sext(b.icmp_signed(">", b.and_(h, mask), threshold), vt))


def _mbqm_lanes_one_floor(b, x, m, right, rounding):
    """The same value as :func:`_mbqm_lanes` with ``left = 0`` and ``right`` in [2, 31], in one floor.

    With ``p = x * m`` (exact int64) and ``s`` its sign, SRDHM then RoundingDivideByPOT are
    ``floor((p + 2^30 + 2^(30 + right) - s * 2^31) / 2^(31 + right))``: SRDHM is ``floor((p + 2^30) / 2^31)``
    (ties toward +inf) and the second rounding, ties away from zero, adds ``2^(right - 1)`` less one for a
    negative value; the floor of a floor by a power of two is the floor of the whole. (For ``-2^30 <= p < 0``
    SRDHM is 0 and so is the formula with either sign.) As ``2^(30 + right)`` is a multiple of ``2^32``,
    that is ``(hi + 2^(right - 2)) >> (right - 1)``, ``hi`` the high half of ``p +- 2^30`` (a blend on the
    product's sign bit): no 64-bit shift, no mask, no threshold. ``|hi| <= 2^30 + 1``: nothing wraps.
    ``rounding`` holds ``2^(right - 2)`` per lane (:func:`lane_parameters`)."""
    n = x.type.count

    def high_after_nudge(p):
        return b.add(p, b.select(b.icmp_signed("<", p, _q(0, n)), _q(-(1 << 30), n), _q(1 << 30, n)))

    even = high_after_nudge(b.mul(_low_halves(b, x), _low_halves(b, m)))
    odd = high_after_nudge(b.mul(_low_halves(b, _odd_down(b, x)), _low_halves(b, _odd_down(b, m))))
    # the high halves: even lane i of the even products' (i + 1), odd lane i of the odd products' (i)
    take = _lanes(*(i + (n if i & 1 else 1) for i in range(n)))
    hi = b.shuffle_vector(b.bitcast(even, x.type), b.bitcast(odd, x.type), take)
    return b.ashr(b.add(hi, rounding), b.sub(right, _vec(n, 1)))


def _mbqm_lanes_float(b, x, scale, nudge_pos, nudge_neg):
    """The one-floor value of :func:`_mbqm_lanes_one_floor` in float32 lanes, where it can be proven, for
    8-bit codes: ``(q, fraction)``, ``q`` exact in every lane whose ``fraction`` (``y - floor(y)``, float32) is at
    least ``2 * margin`` (a lane below it is flagged).

    The exact value is ``floor(T)``, ``T = x * s + e`` with ``s = m / 2^(31 + right)`` and ``e = 1/2 + 2^-(1 + right)``
    for ``x >= 0``, ``1/2 - 2^-(1 + right)`` for ``x < 0`` (the one floor's numerator over its divisor). The
    lanes compute ``y = fma(f32(x), f32(s), f32(e + margin))`` (``margin = 2^-12``, :data:`FLOAT_MARGIN`) and
    ``floor(y)``, flagging ``y - floor(y) < 2 * margin``. Where ``|x * s| <= 2^10``, ``|y - (T + margin)| <=
    2^10 * (2 * 2^-24 + 2^-48) + 2^-25 + (2^10 + 2) * 2^-24 < margin`` (the roundings of ``x``, ``s``, ``e +
    margin`` and of the fma), so an unflagged lane has ``floor(y) < T < floor(y) + 1``: ``floor(y) = floor(T)``,
    ties included (an exact tie, ``T`` an integer, is always flagged). Where ``|x * s| > 2^10`` the floor may be
    off, by less than ``|x * s| * 2^-22``, but it and the exact value have the same sign and exceed 1000 in
    magnitude: both saturate any 8-bit code (``|zp| < 256``); ``|y| < 2^29`` (``s < 1/4``), so the
    conversion does not overflow."""
    n = x.type.count
    vf = ir.VectorType(_F32, n)
    nudge = b.select(b.icmp_signed("<", x, _vec(n, 0)), nudge_neg, nudge_pos)
    y = _x86(b, f"llvm.fma.v{n}f32", vf, b.sitofp(x, vf), scale, nudge)
    whole = _x86(b, f"llvm.floor.v{n}f32", vf, y)
    return b.fptosi(whole, x.type), b.fsub(y, whole)


def _any_flagged(b, fractions):
    """i1: some lane of the ``fractions`` of :func:`_mbqm_lanes_float` (vectors of 8 or 16 lanes) is below
    ``2 * margin``: the smallest fractions, then one compare."""
    least = fractions[0]
    n = least.type.count
    for f in fractions[1:]:
        least = b.select(b.fcmp_ordered("<", f, least), f, least)
    flagged = b.fcmp_ordered("<", least, ir.Constant(least.type, [2 * FLOAT_MARGIN] * n))
    return b.icmp_unsigned("!=", b.bitcast(flagged, ir.IntType(n)), ir.Constant(ir.IntType(n), 0))


def clamped_codes(b, q, zpv, q_lo, q_hi, elem):
    """``min(max(q, q_lo), q_hi) + zpv`` truncated to ``elem`` (int32 vectors; ``q_lo = lo - zp``, ``q_hi =
    hi - zp``): the clamp before ``+ zp``, so the add cannot wrap and the code is the int64 ``min(max(q + zp,
    lo), hi)``."""
    q = b.select(b.icmp_signed("<", q, q_lo), q_lo, q)
    q = b.select(b.icmp_signed(">", q, q_hi), q_hi, q)
    return b.trunc(b.add(q, zpv), ir.VectorType(elem, q.type.count))


def store_codes(b, qs, zp, lo, hi, dtype, ptr):
    """Store the int32 vectors ``qs`` (1 or 4 of them, 8 or 16 lanes each) as their codes ``min(max(q + zp,
    lo), hi)`` of ``dtype`` (int8, uint8, int16) at ``ptr`` (that type's pointer); ``zp``, ``lo``, ``hi`` int32
    scalars inside the type.

    8-bit codes of 8-lane vectors: saturating packs to int16, ``+ zp`` saturating in int16, a saturating pack
    to 8 bits, then the clamp in bytes (4 int32 vectors in 9 instructions). Every saturation keeps the side a
    value is on: a value past the int16 range stays past the 8-bit range after ``+ zp`` (``|zp| < 256``), so
    the clamp gives what it gives on the exact int64 ``q + zp``. int16 codes, and 16-lane vectors (AVX-512
    narrows with ``vpmovdb`` / ``vpmovdw``): :func:`clamped_codes`."""
    elem = ir.IntType(_OUT_BITS[dtype])
    width = qs[0].type.count
    if width == 16:
        zpv = _splat(b, zp, qs[0].type)
        q_lo, q_hi = b.sub(_splat(b, lo, qs[0].type), zpv), b.sub(_splat(b, hi, qs[0].type), zpv)
        vt = ir.VectorType(elem, 16)
        for k, q in enumerate(qs):
            b.store(clamped_codes(b, q, zpv, q_lo, q_hi, elem),
                    b.bitcast(b.gep(ptr, [ir.Constant(_I64, 16 * k)]), vt.as_pointer()), align=1)
        return
    n = 8 * len(qs)
    if elem.width == 16:
        zpv = _splat(b, zp, _V8)
        q_lo, q_hi = b.sub(_splat(b, lo, _V8), zpv), b.sub(_splat(b, hi, _V8), zpv)
        res = []
        for q in qs:
            q = b.select(b.icmp_signed("<", q, q_lo), q_lo, q)
            q = b.select(b.icmp_signed(">", q, q_hi), q_hi, q)
            res.append(b.add(q, zpv))
        while len(res) > 1:  # concatenate: 8 -> 16 -> 32 lanes
            w = 2 * res[0].type.count
            res = [b.shuffle_vector(res[i], res[i + 1], _lanes(*range(w))) for i in range(0, len(res), 2)]
        codes = b.trunc(res[0], ir.VectorType(elem, n))
    else:
        unsigned = dtype == types.uint8
        width = "128" if len(qs) == 1 else "256"
        words_t = ir.VectorType(_I16, 8 if len(qs) == 1 else 16)
        bytes_t = ir.VectorType(_I8, 16 if len(qs) == 1 else 32)
        packssdw = {"128": "llvm.x86.sse2.packssdw.128", "256": "llvm.x86.avx2.packssdw"}[width]
        pack8 = {("128", False): "llvm.x86.sse2.packsswb.128", ("128", True): "llvm.x86.sse2.packuswb.128",
                 ("256", False): "llvm.x86.avx2.packsswb", ("256", True): "llvm.x86.avx2.packuswb"}[width, unsigned]
        zp16 = _splat(b, b.trunc(zp, _I16), words_t)

        def plus_zp(words):
            return _x86(b, f"llvm.sadd.sat.v{words_t.count}i16", words_t, words, zp16)

        if len(qs) == 1:  # 128-bit packs: the 8 codes in order in the low half
            halves = [b.shuffle_vector(qs[0], qs[0], _lanes(*r)) for r in ((0, 1, 2, 3), (4, 5, 6, 7))]
            words = plus_zp(_x86(b, packssdw, words_t, *halves))
            codes = b.shuffle_vector(_x86(b, pack8, bytes_t, words, words), ir.Constant(bytes_t, None),
                                     _lanes(*range(8)))
        else:  # 256-bit packs work in 128-bit halves: one dword permutation puts the 32 codes in order
            words = [plus_zp(_x86(b, packssdw, words_t, qs[i], qs[i + 1])) for i in (0, 2)]
            packed = b.bitcast(_x86(b, pack8, bytes_t, *words), _V8)
            codes = b.bitcast(b.shuffle_vector(packed, packed, _lanes(0, 4, 1, 5, 2, 6, 3, 7)), bytes_t)
        lo8, hi8 = (_splat(b, b.trunc(v, _I8), codes.type) for v in (lo, hi))
        compare = b.icmp_unsigned if unsigned else b.icmp_signed
        codes = b.select(compare("<", codes, lo8), lo8, codes)
        codes = b.select(compare(">", codes, hi8), hi8, codes)
    vt = ir.VectorType(elem, n)
    b.store(codes, b.bitcast(ptr, vt.as_pointer()), align=1)


def fixed_lanes(b, xs, param, eight_bit):
    """MBQM of the int32 vectors ``xs`` (8 or 16 lanes each): the values before ``+ zp`` and the clamp, where
    ``param(row, k, vtype)`` loads row ``row`` of :func:`lane_parameters` for vector ``k`` as ``vtype`` (int32 or
    float32 lanes). Every position with a rounding (a right shift in [2, 31]): the one floor
    (:func:`_mbqm_lanes_one_floor`), for ``eight_bit`` codes first in float32 lanes (:func:`_mbqm_lanes_float`;
    a flagged lane sends all ``xs`` to the one floor, out of line); else the two roundings (:func:`_mbqm_lanes`),
    as TFLite writes them. Ties and saturation: those of :func:`_mbqm_lanes`."""
    vi = xs[0].type
    vf = ir.VectorType(_F32, vi.count)
    slots = [cgutils.alloca_once(b, vi) for _ in xs]

    def put(qs):
        for slot, q in zip(slots, qs):
            b.store(q, slot)

    roundings = [param(_ROUNDING, k, vi) for k in range(len(xs))]

    def one_floor():
        put([_mbqm_lanes_one_floor(b, x, param(_MULT, k, vi), param(_RIGHT, k, vi), roundings[k])
             for k, x in enumerate(xs)])

    # Right shifts in [2, 31] (the common case: multipliers below 1/4): the float32 lanes for 8-bit codes,
    # unless one flags its value; the rest takes the exact lanes.
    with b.if_else(_all_one_floor(b, roundings), likely=True) as (floor_case, other):
        with floor_case:
            if eight_bit:
                qs, fractions = zip(*(_mbqm_lanes_float(b, x, *(param(r, k, vf) for r in
                                                                (_SCALE, _NUDGE_POS, _NUDGE_NEG)))
                                      for k, x in enumerate(xs)))
                with b.if_else(_any_flagged(b, fractions), likely=False) as (exact, fast):
                    with exact:
                        one_floor()
                    with fast:
                        put(qs)
            else:
                one_floor()
        with other:
            put([_mbqm_lanes(b, x, param(_MULT, k, vi), param(_LEFT, k, vi), param(_RIGHT, k, vi))
                 for k, x in enumerate(xs)])
    return [b.load(slot) for slot in slots]


def _all_one_floor(b, roundings):
    """i1: every lane of ``roundings`` (vectors of 8 or 16 lanes) is >= 0 (every position's right shift in
    [2, 31])."""
    any_other = roundings[0]
    n = any_other.type.count
    for v in roundings[1:]:
        any_other = b.or_(any_other, v)
    signs = b.bitcast(b.icmp_signed("<", any_other, _vec(n, 0)), ir.IntType(n))
    return b.icmp_unsigned("==", signs, ir.Constant(ir.IntType(n), 0))


def _block(nvec, width):
    """An intrinsic for ``width * nvec`` outputs (vectors of ``width`` = 8 or 16 lanes): ``out[o_off + i] =
    clamp(MBQM(acc[a_off + i], ...) + zp, lo, hi)`` with the parameters of position ``p = p_off + i``,
    ``lanes[:, p]`` (:func:`lane_parameters`): :func:`fixed_lanes`, then :func:`store_codes`."""
    vi = ir.VectorType(_I32, width)

    @intrinsic
    def block(typingctx, acc, a_off, lanes, p_off, zp, lo, hi, out, o_off):
        eight_bit = _OUT_BITS[out.dtype] == 8

        def codegen(context, builder, sig, args):
            b = builder
            at = sig.args

            def base(i, t, off):
                data = context.make_array(at[i])(context, b, args[i]).data
                return b.gep(b.bitcast(data, t.as_pointer()), [context.cast(b, args[off], at[off], types.int64)])

            params = context.make_array(at[2])(context, b, args[2])
            row_len = cgutils.unpack_tuple(b, params.shape, 2)[1]
            p_base = b.gep(b.bitcast(params.data, _I32.as_pointer()), [context.cast(b, args[3], at[3], types.int64)])
            acc_ptr, out_ptr = base(0, _I32, 1), base(7, _OUT_TYPE[at[7].dtype], 8)

            def param(row, k, vt):
                ptr = b.gep(p_base, [b.add(b.mul(row_len, ir.Constant(_I64, row)), ir.Constant(_I64, width * k))])
                return b.load(b.bitcast(ptr, vt.as_pointer()), align=4)

            xs = [b.load(b.bitcast(b.gep(acc_ptr, [ir.Constant(_I64, width * k)]), vi.as_pointer()), align=4)
                  for k in range(nvec)]
            qs = fixed_lanes(b, xs, param, eight_bit)
            store_codes(b, qs, *(context.cast(b, args[i], at[i], types.int32) for i in (4, 5, 6)), at[7].dtype,
                        out_ptr)
            return context.get_dummy_value()

        return types.void(acc, a_off, lanes, p_off, zp, lo, hi, out, o_off), codegen

    return block


LANES = 16 if HAVE_AVX512 else 8
"""The lanes of the row blocks' vectors: zmm where this process takes the AVX-512 paths (``dspsim.simd.cpu``'s
level), else ymm."""
_block_wide = _block(4, LANES)
_block_vec = _block(1, LANES)
_block8 = _block(1, 8)


def requantize_blocks(row, orow, lanes, p0, zp, lo, hi):
    """The vector front of one row: outputs ``[0, returned)`` done (a multiple of 8), the rest for the
    scalar loop. Output ``j`` takes the parameters ``lanes[:, p0 + j]`` of :func:`lane_parameters` (at least
    ``p0 + len(row)`` positions); ``zp``, ``lo``, ``hi`` inside the output type. 0 when ``row`` is not
    C-contiguous int32 or ``orow`` not C-contiguous int8 / uint8 / int16 (jit only)."""
    raise NotImplementedError("requantize_blocks is a jit primitive")


def requantize_rows(block, ldb, rows, n, out, o0, ldc, lanes, p0, zp, lo, hi):
    """:func:`requantize_blocks` of ``rows`` rows of ``n`` values, row ``r`` at ``block[r * ldb:]`` into
    ``out[o0 + r * ldc:]`` (flat arrays, offsets instead of slices: a slice costs a reference count, which a
    6-row tile cannot afford per row); returns the columns done in every row (jit only)."""
    raise NotImplementedError("requantize_rows is a jit primitive")


def _c_array(t, dtypes):
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype in dtypes


def _fixed_lanes_apply(acc, out, lanes):
    return _c_array(acc, (types.int32,)) and _c_array(out, tuple(_OUT_BITS)) and \
        isinstance(lanes, types.Array) and lanes.ndim == 2 and lanes.layout == "C" and lanes.dtype == types.int32


@overload(requantize_blocks, jit_options={"cache": True}, inline="always")
def _requantize_blocks(row, orow, lanes, p0, zp, lo, hi):
    if not _fixed_lanes_apply(row, orow, lanes):
        return lambda row, orow, lanes, p0, zp, lo, hi: 0

    def impl(row, orow, lanes, p0, zp, lo, hi):
        return requantize_rows(row, 0, 1, row.shape[0], orow, 0, 0, lanes, p0, zp, lo, hi)

    return impl


@overload(requantize_rows, jit_options={"cache": True}, inline="always")
def _requantize_rows(block, ldb, rows, n, out, o0, ldc, lanes, p0, zp, lo, hi):
    if not _fixed_lanes_apply(block, out, lanes):
        return lambda block, ldb, rows, n, out, o0, ldc, lanes, p0, zp, lo, hi: 0

    def impl(block, ldb, rows, n, out, o0, ldc, lanes, p0, zp, lo, hi):
        n_wide, n_vec, n8 = n - n % (4 * LANES), n - n % LANES, n - n % 8
        for r in range(rows):
            a, o = r * ldb, o0 + r * ldc
            for j in range(0, n_wide, 4 * LANES):
                _block_wide(block, a + j, lanes, p0 + j, zp, lo, hi, out, o + j)
            for j in range(n_wide, n_vec, LANES):
                _block_vec(block, a + j, lanes, p0 + j, zp, lo, hi, out, o + j)
            for j in range(n_vec, n8, 8):  # none when LANES is 8
                _block8(block, a + j, lanes, p0 + j, zp, lo, hi, out, o + j)
        return n8

    return impl


@njit(cache=True, nogil=True)
def lane_parameters(mult, shift, n, per_channel):
    """The int32 ``(LANE_ROWS, n)`` parameters of the ``n`` positions of a row: channel ``j``'s (``per_channel``)
    or the first ones broadcast. Rows: the multiplier, the left and the right shift, the rounding
    ``2^(right - 2)`` where the right shift is in [2, 31] (the one-floor lanes; -1 elsewhere: a block with one
    such position takes the two-rounding lanes), then the float32 bits of :func:`_mbqm_lanes_float`'s
    ``f32(m / 2^(31 + right))`` and ``f32(1/2 +- 2^-(1 + right) + margin)`` (zero off the one-floor shifts)."""
    lanes = np.zeros((LANE_ROWS, n), np.int32)
    floats = np.zeros((3, n), np.float32)
    for j in range(n):
        c = j if per_channel else 0
        right = max(-shift[c], 0)
        lanes[_MULT, j] = mult[c]
        lanes[_LEFT, j] = max(shift[c], 0)
        lanes[_RIGHT, j] = right
        lanes[_ROUNDING, j] = -1
        if 2 <= right <= 31:
            lanes[_ROUNDING, j] = 1 << (right - 2)
            # float64 sums and products of powers of two and a 31-bit integer are exact: one rounding each
            floats[0, j] = mult[c] * 2.0 ** -(31 + right)
            floats[1, j] = 0.5 + 2.0 ** -(1 + right) + FLOAT_MARGIN
            floats[2, j] = 0.5 - 2.0 ** -(1 + right) + FLOAT_MARGIN
    lanes[_SCALE:] = floats.view(np.int32)
    return lanes


# --------------------------------------------------------------------------------------------
# float-scale schemes (FBGEMM, ONNX Runtime / XNNPACK) in float32 lanes
# --------------------------------------------------------------------------------------------
_F64 = ir.DoubleType()


def float_bounds(b, q_lo, q_hi, clamp):
    """The float bounds of :func:`float_lanes`: ``q_lo``, ``q_hi`` (int32 vectors, ``lo - zp`` and ``hi - zp``)
    as floats when ``clamp`` (an i1), else -inf and +inf (no clamp). int -> float is exact: ``|q| < 2^17``."""
    vf = ir.VectorType(_F32, q_lo.type.count)
    inf = ir.Constant(vf, float("inf"))
    return b.select(clamp, b.sitofp(q_lo, vf), b.fneg(inf)), b.select(clamp, b.sitofp(q_hi, vf), inf)


def float_lanes(b, acc, bias, scale, f_lo, f_hi):
    """``cvtps2dq(min(max(y, f_lo), f_hi))`` with ``y = f32(fma(bias_a, bias_b, float32(acc)) * scale)`` of one
    vector of 8 or 16 int32 lanes: :func:`requantize_float_row`'s value before the code's clamp. ``bias``:
    ``(bias_a, bias_b)`` float vectors, or None for no float bias (``fma(0, 0, raw) = raw`` exactly: ``raw``
    is never -0). The conversions round ties to even; ``cvtps2dq`` gives INT32_MIN outside int32 or for NaN
    (which the clamps keep: an ordered compare is false)."""
    n = acc.type.count
    vf, vi = ir.VectorType(_F32, n), ir.VectorType(_I32, n)
    raw = b.sitofp(acc, vf)
    if bias is not None:
        raw = _x86(b, f"llvm.fma.v{n}f32", vf, bias[0], bias[1], raw)
    y = b.fmul(raw, scale)
    y = b.select(b.fcmp_ordered("<", y, f_lo), f_lo, y)  # NaN stays NaN
    y = b.select(b.fcmp_ordered(">", y, f_hi), f_hi, y)
    if n == 8:
        return _x86(b, "llvm.x86.avx.cvt.ps2dq.256", vi, y)
    # the current rounding mode (4: _MM_FROUND_CUR_DIRECTION), every lane
    return _x86(b, "llvm.x86.avx512.mask.cvtps2dq.512", vi, y, ir.Constant(vi, None), ir.Constant(_I16, -1),
                ir.Constant(_I32, 4))


def _float_block(nvec, width):
    """An intrinsic for ``width * nvec`` outputs (vectors of ``width`` = 8 or 16 lanes): ``y = f32(fma(bias_a,
    bias_b, float32(acc)) * scale)``, clamped in float to ``[lo - zp, hi - zp]`` when ``clamp`` (else to +-inf: not
    at all), ``q = cvtps2dq(y)``, ``out = min(max(q, lo - zp), hi - zp) + zp``: ``acc`` from ``a_off``, the
    parameter arrays from ``p_off``, ``out`` from ``o_off`` (``scale`` float32, or float64 holding float32
    values)."""
    vi, vf, vd = (ir.VectorType(t, width) for t in (_I32, _F32, _F64))

    @intrinsic
    def block(typingctx, acc, a_off, bias_a, bias_b, scale, p_off, clamp, zp, lo, hi, out, o_off):
        elem = _OUT_TYPE[out.dtype]
        wide_scale = scale.dtype == types.float64

        def codegen(context, builder, sig, args):
            b = builder
            at = sig.args
            a_off, p_off, o_off = (context.cast(b, args[i], at[i], types.int64) for i in (1, 5, 11))

            def load(i, k, t, vt):
                data = context.make_array(at[i])(context, b, args[i]).data
                start = b.add(a_off if i == 0 else p_off, ir.Constant(_I64, width * k))
                ptr = b.gep(b.bitcast(data, t.as_pointer()), [start])
                return b.load(b.bitcast(ptr, vt.as_pointer()), align=4)

            def splat(i, t, vt):
                return _splat(b, context.cast(b, args[i], at[i], t), vt)

            zpv = splat(7, types.int32, vi)
            q_lo, q_hi = b.sub(splat(8, types.int32, vi), zpv), b.sub(splat(9, types.int32, vi), zpv)
            f_lo, f_hi = float_bounds(b, q_lo, q_hi, context.cast(b, args[6], at[6], types.boolean))
            res = []
            for k in range(nvec):
                s = b.fptrunc(load(4, k, _F64, vd), vf) if wide_scale else load(4, k, _F32, vf)
                res.append(float_lanes(b, load(0, k, _I32, vi), (load(2, k, _F32, vf), load(3, k, _F32, vf)),
                                       s, f_lo, f_hi))
            data = context.make_array(at[10])(context, b, args[10]).data
            store_codes(b, res, *(context.cast(b, args[i], at[i], types.int32) for i in (7, 8, 9)), at[10].dtype,
                        b.gep(b.bitcast(data, elem.as_pointer()), [o_off]))
            return context.get_dummy_value()

        return types.void(acc, a_off, bias_a, bias_b, scale, p_off, clamp, zp, lo, hi, out, o_off), codegen

    return block


_float_block_wide = _float_block(4, LANES)
_float_block_vec = _float_block(1, LANES)
_float_block8 = _float_block(1, 8)


def requantize_float_row(row, orow, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float):
    """FBGEMM / ONNX Runtime / XNNPACK requantization of one row in float32 lanes (jit only):
    ``orow[j] = min(max(cvtps2dq(y), lo - zp), hi - zp) + zp`` with ``y = f32(fma(bias_a[j], bias_b[j],
    float32(row[j])) * scale[j])``, first clamped in float to ``[lo - zp, hi - zp]`` when
    ``clamp_in_float`` (ONNX Runtime, XNNPACK; FBGEMM: False). ``cvtps2dq`` rounds ties to even and
    gives INT32_MIN outside int32 (then ``lo``). Equal to :func:`dspsim.requant.requantize_value` then
    the clamp, for the parameters of :func:`float_lane_parameters`.

    ``row`` C-contiguous int32, ``orow`` C-contiguous int8 / uint8 / int16 of the same length,
    ``bias_a``, ``bias_b`` float32 and ``scale`` float32 or float64 (float32 values) per position (at
    least ``len(row)``); ``zp``, ``lo``, ``hi`` inside the output type. As :func:`requantize_blocks`, it
    does the vector front of the row and returns where the caller's scalar loop takes over
    (``len(row) - len(row) % 8``; 0 for other dtypes).
    """
    raise NotImplementedError("requantize_float_row is a jit primitive")


def requantize_float_rows(block, ldb, rows, n, out, o0, ldc, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float):
    """:func:`requantize_float_row` of ``rows`` rows of ``n`` values, row ``r`` at ``block[r * ldb:]`` into
    ``out[o0 + r * ldc:]`` (as :func:`requantize_rows`); returns the columns done in every row (jit only)."""
    raise NotImplementedError("requantize_float_rows is a jit primitive")


def _float_lanes_apply(acc, out, bias_a, bias_b, scale):
    return _c_array(acc, (types.int32,)) and _c_array(out, tuple(_OUT_BITS)) and \
        _c_array(bias_a, (types.float32,)) and _c_array(bias_b, (types.float32,)) and \
        _c_array(scale, (types.float32, types.float64))


@overload(requantize_float_row, jit_options={"cache": True}, inline="always")
def _requantize_float_row(row, orow, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float):
    if not _float_lanes_apply(row, orow, bias_a, bias_b, scale):
        return lambda row, orow, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float: 0

    def impl(row, orow, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float):
        return requantize_float_rows(row, 0, 1, row.shape[0], orow, 0, 0, bias_a, bias_b, scale, zp, lo, hi,
                                     clamp_in_float)

    return impl


@overload(requantize_float_rows, jit_options={"cache": True}, inline="always")
def _requantize_float_rows(block, ldb, rows, n, out, o0, ldc, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float):
    if not _float_lanes_apply(block, out, bias_a, bias_b, scale):
        return lambda block, ldb, rows, n, out, o0, ldc, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float: 0

    def impl(block, ldb, rows, n, out, o0, ldc, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float):
        n_wide, n_vec, n8 = n - n % (4 * LANES), n - n % LANES, n - n % 8
        for r in range(rows):
            a, o = r * ldb, o0 + r * ldc
            for j in range(0, n_wide, 4 * LANES):
                _float_block_wide(block, a + j, bias_a, bias_b, scale, j, clamp_in_float, zp, lo, hi, out, o + j)
            for j in range(n_wide, n_vec, LANES):
                _float_block_vec(block, a + j, bias_a, bias_b, scale, j, clamp_in_float, zp, lo, hi, out, o + j)
            for j in range(n_vec, n8, 8):  # none when LANES is 8
                _float_block8(block, a + j, bias_a, bias_b, scale, j, clamp_in_float, zp, lo, hi, out, o + j)
        return n8

    return impl


FIXED_LANES, FLOAT_LANES = 1, 2
"""The lanes a scheme has (:func:`lane_kind`): TFLite's fixed-point int32 lanes, the float32 lanes."""


def lane_kind(arith, float_bias, tie) -> int:
    """Which lanes requantize the scheme ``(arith, float_bias, tie)`` of :func:`dspsim.requant.requantize_value`:
    :data:`FIXED_LANES` for ``"double"`` with gemmlowp's tie rule and no float bias, :data:`FLOAT_LANES` for
    ``"fbgemm"`` (but oneDNN's bias) and ``"float32"`` with ties to even, 0 for the others (the callers' scalar
    loops). The one place that says where the lanes are exact; callers add the host's AVX2 and the jit."""
    if arith == Arithmetic.FIXED_POINT_DOUBLE and tie == Rounding.HALF_AWAY_FROM_ZERO and float_bias == FloatBias.NONE:
        return FIXED_LANES
    if float_bias != FloatBias.ONEDNN and (arith == Arithmetic.FBGEMM or
                                          (arith == Arithmetic.FLOAT32 and tie == Rounding.HALF_TO_EVEN)):
        return FLOAT_LANES
    return 0


def float_lane_parameters(arith, float_bias, scale, fb_a, fb_b):
    """``(bias_a, bias_b, scale, clamp_in_float)`` of :func:`requantize_float_row` for the parameters of
    :func:`dspsim.requant.requantize_value` of a scheme with :data:`FLOAT_LANES` (``scale``, ``fb_a``, ``fb_b``
    one value per channel, as ``Requant.arrays`` and ``float_bias_arrays`` give them; float32 arrays of
    ``len(scale)``).

    ``FloatBias.NONE``: ``fma(0, 0, raw)``; ``ADD_QUOTIENT``: ``fma(fb_a, 1, raw)``;
    ``FMA_RECIPROCAL``: ``fma(fb_a, fb_b, raw)``.
    """
    n = len(scale)
    fa, fb = np.zeros(n, np.float32), np.zeros(n, np.float32)
    if float_bias != FloatBias.NONE:
        fa[:] = np.asarray(fb_a, np.float32)
        fb[:] = 1 if float_bias == FloatBias.ADD_QUOTIENT else np.asarray(fb_b, np.float32)
    return fa, fb, np.asarray(scale, np.float64).astype(np.float32), bool(arith == Arithmetic.FLOAT32)
