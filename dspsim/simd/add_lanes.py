"""TFLite's quantized ADD (``reference_integer_ops::AddFunc``) and XNNPACK's (``qs8-vadd`` / ``qu8-vadd``) in int32
vector lanes (LLVM IR), 8 lanes per vector.

Per lane the formula of :func:`dspsim.kernels.arithmetic.elementwise.add` (``MBQM`` = MultiplyByQuantizedMultiplier, shifts
<= 0, the lanes of :func:`dspsim.simd.requant_lanes._mbqm_lanes`)::

    v1 = MBQM((x1 - zp1) << left_shift, M1, S1)
    v2 = MBQM((x2 - zp2) << left_shift, M2, S2)
    out = clamp(MBQM(v1 + v2, Mo, So) + zo, act_min, act_max)

* the codes sign- (int8, int16) or zero-extended (uint8) to int32, ``- zp`` exact;
* ``<< left_shift`` and ``v1 + v2`` in int32 lanes: they wrap as the scalar loop's ``wrap_scalar(., 32)`` does
  (for TFLite's own parameters nothing wraps: ``255 << 20`` and ``65535 << 15`` fit);
* SRDHM ties toward +inf, RoundingDivideByPOT ties away from zero (``_mbqm_lanes``);
* ``clamp(v + zo, lo, hi)`` as the int64 scalar loop computes it, stored by
  :func:`dspsim.simd.requant_lanes.store_codes` (saturating packs for 8-bit codes).

:func:`add_lanes` runs the blocks over the front of the flat operands (32 outputs per step, then 8) and returns
where the caller's scalar loop takes over. :func:`xnnpack_add_lanes` does the same for
:func:`dspsim.kernels.arithmetic.elementwise.xnnpack_add` (int8, uint8): ``acc = bias + x1 * M1 + x2 * M2`` in
wrapping int32 lanes, ``acc >> shift`` (``bias`` carries ``2^(shift-1)``: ties toward +inf), the same store.
Plain LLVM vector code, fast with AVX2: :data:`USE_LANES` is true only there and never under
``NUMBA_DISABLE_JIT`` (the intrinsics need the compiler).
"""
from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from .cpu import HAVE_AVX2
from .requant_lanes import _V8F, _all_one_floor, _any_flagged, _mbqm_lanes, _mbqm_lanes_float, store_codes
from .tiles import _I32, _I64, _splat

__all__ = ["USE_LANES", "add_lanes", "xnnpack_add_lanes"]

#: whether :func:`dspsim.kernels.arithmetic.elementwise.add` runs :func:`add_lanes` (the AVX2 level and up, jit on;
#: its cached loop reads this global: a forced level has its own cache, :mod:`dspsim.simd.cpu`)
USE_LANES = bool(HAVE_AVX2 and not numba.config.DISABLE_JIT)

_V8 = ir.VectorType(_I32, 8)
_BITS = {types.int8: 8, types.uint8: 8, types.int16: 16}


def _operands(context, bld, sig, args):
    """The flat operands of a block whose arguments are ``(a, b, off, ...)`` and whose last is ``out`` (one
    dtype): ``base(i)``, the pointer to element ``off`` of array argument ``i``; ``load(i, k)``, its 8 codes
    from ``off + 8 k`` sign- (int8, int16) or zero-extended (uint8) to int32 lanes; ``splat(i)``, int
    argument ``i`` as int32 in 8 lanes."""
    at = sig.args
    dtype = at[-1].dtype
    elem = ir.IntType(_BITS[dtype])
    extend = bld.zext if dtype == types.uint8 else bld.sext
    o = context.cast(bld, args[2], at[2], types.int64)

    def base(i):
        data = context.make_array(at[i])(context, bld, args[i]).data
        return bld.gep(bld.bitcast(data, elem.as_pointer()), [o])

    def load(i, k):
        ptr = bld.gep(base(i), [ir.Constant(_I64, 8 * k)])
        return extend(bld.load(bld.bitcast(ptr, ir.VectorType(elem, 8).as_pointer()), align=1), _V8)

    def splat(i):
        return _splat(bld, context.cast(bld, args[i], at[i], types.int32), _V8)

    return base, load, splat


def _add_block(nvec):
    """An intrinsic for the ``8 * nvec`` outputs from ``off``: ``out[off + i]`` of ``a[off + i]``, ``b[off + i]``;
    the other arguments are the int scalars of :func:`add_lanes`."""

    @intrinsic
    def block(typingctx, a, b, off, mults, zp1, zp2, zo, left_shift, r1, r2, ro, lo, hi, out):
        def codegen(context, builder, sig, args):
            bld = builder
            at = sig.args
            base, load, splat = _operands(context, bld, sig, args)

            def multiplier(k, vt=_V8):  # loaded in the block, not splat: see add_lanes
                data = context.make_array(at[3])(context, bld, args[3]).data
                ptr = bld.gep(bld.bitcast(data, _I32.as_pointer()), [ir.Constant(_I64, 8 * k)])
                return bld.load(bld.bitcast(ptr, vt.as_pointer()), align=4)

            zp1v, zp2v, ls = splat(4), splat(5), splat(7)
            r1v, r2v, rov = splat(8), splat(9), splat(10)
            m1v, m2v, mov = multiplier(0), multiplier(1), multiplier(2)
            no_shift = ir.Constant(_V8, [0] * 8)
            sums = []
            for k in range(nvec):
                v1 = _mbqm_lanes(bld, bld.sub(load(0, k), zp1v), m1v, ls, r1v)
                v2 = _mbqm_lanes(bld, bld.sub(load(1, k), zp2v), m2v, ls, r2v)
                sums.append(bld.add(v1, v2))
            zo, lo, hi = (context.cast(bld, args[i], at[i], types.int32) for i in (6, 11, 12))

            def store(qs):
                store_codes(bld, qs, zo, lo, hi, at[13].dtype, base(13))

            def exact():
                store([_mbqm_lanes(bld, v, mov, no_shift, rov) for v in sums])

            if _BITS[out.dtype] != 8:
                exact()
                return context.get_dummy_value()
            # 8-bit codes: the output's requantization in the float32 lanes of dspsim.simd.requant_lanes where its
            # right shift is in [2, 31] and no lane is flagged, else exactly
            with bld.if_else(_all_one_floor(bld, [multiplier(3)]), likely=True) as (one_floor, other):
                with one_floor:
                    qs, fractions = zip(*(_mbqm_lanes_float(bld, v, *(multiplier(r, _V8F) for r in (4, 5, 6)))
                                          for v in sums))
                    with bld.if_else(_any_flagged(bld, fractions), likely=False) as (flagged_block, fast):
                        with flagged_block:
                            exact()
                        with fast:
                            store(list(qs))
                with other:
                    exact()
            return context.get_dummy_value()

        return types.void(a, b, off, mults, zp1, zp2, zo, left_shift, r1, r2, ro, lo, hi, out), codegen

    return block


_add_block32 = _add_block(4)
_add_block8 = _add_block(1)


def add_lanes(a, b, mults, zp1, zp2, zo, left_shift, s1, s2, so, lo, hi, out):
    """The vector front of a flat ADD (jit only): outputs ``[0, returned)`` done (a multiple of 8), the rest for
    the scalar loop. ``a``, ``b``, ``out`` flat arrays of one dtype (int8, uint8 or int16) and ``out``'s length;
    ``mults`` int32 ``[M1] * 8 + [M2] * 8 + [Mo] * 8`` then rows 3-6 of the output's
    :func:`dspsim.simd.requant_lanes.lane_parameters` (``Mo``, ``So``), 8 of each; the other parameters those of
    :func:`dspsim.kernels.arithmetic.elementwise.add_plan` (validated there: multipliers in [0, 2^31), shifts in [-31, 0],
    zero points and clamp inside the dtype). Returns 0 for other types or layouts.

    The multipliers are loaded in each block, not splat from scalars: a splat is hoisted out of the loop, and
    LLVM's instruction selection, which sees one basic block, then cannot tell that the odd lanes' ``>> 32``
    operands are sign-extended 32-bit values, and emulates a 64 x 64-bit multiply (three ``vpmuludq``) instead
    of one ``vpmuldq``: 1.6 against 1.2 ns per element (AVX2, AMD EPYC)."""
    raise NotImplementedError("add_lanes is a jit primitive")


def _c_array(t):
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype in _BITS


@overload(add_lanes, jit_options={"cache": True}, inline="always")
def _add_lanes(a, b, mults, zp1, zp2, zo, left_shift, s1, s2, so, lo, hi, out):
    if not (_c_array(a) and _c_array(b) and _c_array(out) and a.dtype == b.dtype == out.dtype
            and isinstance(mults, types.Array) and mults.dtype == types.int32 and mults.layout == "C"):
        return lambda a, b, mults, zp1, zp2, zo, left_shift, s1, s2, so, lo, hi, out: 0

    def impl(a, b, mults, zp1, zp2, zo, left_shift, s1, s2, so, lo, hi, out):
        n = out.shape[0]
        r1, r2, ro = -s1, -s2, -so
        n32 = n - n % 32
        for j in range(0, n32, 32):
            _add_block32(a, b, j, mults, zp1, zp2, zo, left_shift, r1, r2, ro, lo, hi, out)
        n8 = n - n % 8
        for j in range(n32, n8, 8):
            _add_block8(a, b, j, mults, zp1, zp2, zo, left_shift, r1, r2, ro, lo, hi, out)
        return n8

    return impl


def _xnnpack_add_block(nvec):
    """An intrinsic for the ``8 * nvec`` outputs from ``off`` of XNNPACK's ADD: ``out[off + i]`` of ``a[off + i]``,
    ``b[off + i]``; the other arguments the int scalars of :func:`xnnpack_add_lanes`."""

    @intrinsic
    def block(typingctx, a, b, off, bias, ma, mb, shift, zo, lo, hi, out):
        def codegen(context, builder, sig, args):
            base, load, splat = _operands(context, builder, sig, args)
            biasv, mav, mbv, shiftv = (splat(i) for i in (3, 4, 5, 6))
            qs = [builder.ashr(builder.add(builder.add(biasv, builder.mul(load(0, k), mav)),
                                           builder.mul(load(1, k), mbv)), shiftv)
                  for k in range(nvec)]
            zo_, lo_, hi_ = (context.cast(builder, args[i], sig.args[i], types.int32) for i in (7, 8, 9))
            store_codes(builder, qs, zo_, lo_, hi_, sig.args[10].dtype, base(10))
            return context.get_dummy_value()

        return types.void(a, b, off, bias, ma, mb, shift, zo, lo, hi, out), codegen

    return block


_xnnpack_add_block32 = _xnnpack_add_block(4)
_xnnpack_add_block8 = _xnnpack_add_block(1)


def xnnpack_add_lanes(a, b, bias, ma, mb, shift, zo, lo, hi, out):
    """The vector front of XNNPACK's flat ADD (jit only): outputs ``[0, returned)`` done (a multiple of 8), the
    rest for the caller's scalar loop. ``a``, ``b``, ``out`` flat int8 or uint8 arrays of one dtype and ``out``'s
    length; the scalars those of :func:`dspsim.kernels.arithmetic.elementwise.xnnpack_add_plan` (validated
    there: ``shift`` in [1, 31], zero points and clamp inside the dtype; ``bias`` and the multipliers count
    modulo 2^32, as in the scalar loop). Returns 0 for other types or layouts.

    Per lane ``acc = bias + a * ma + b * mb`` in int32 (``vpmulld``, wrapping as the scalar loop's
    ``wrap_scalar(., 32)``, as XNNPACK's int32 lanes), then ``acc >> shift`` (arithmetic: the added
    ``2^(shift-1)`` in ``bias`` makes ties round toward +inf) and :func:`store_codes`' ``clamp(q + zo, lo,
    hi)``."""
    raise NotImplementedError("xnnpack_add_lanes is a jit primitive")


@overload(xnnpack_add_lanes, jit_options={"cache": True}, inline="always")
def _xnnpack_add_lanes(a, b, bias, ma, mb, shift, zo, lo, hi, out):
    if not (_c_array(a) and _c_array(b) and _c_array(out) and a.dtype == b.dtype == out.dtype
            and _BITS[out.dtype] == 8):
        return lambda a, b, bias, ma, mb, shift, zo, lo, hi, out: 0

    def impl(a, b, bias, ma, mb, shift, zo, lo, hi, out):
        n = out.shape[0]
        n32 = n - n % 32
        for j in range(0, n32, 32):
            _xnnpack_add_block32(a, b, j, bias, ma, mb, shift, zo, lo, hi, out)
        n8 = n - n % 8
        for j in range(n32, n8, 8):
            _xnnpack_add_block8(a, b, j, bias, ma, mb, shift, zo, lo, hi, out)
        return n8

    return impl
