"""TFLite's quantized ADD (``reference_integer_ops::AddFunc``) and MUL, LiteRT's optimized ADD and XNNPACK's
(``qs8-vadd`` / ``qu8-vadd``) in int32 vector lanes (LLVM IR), 8 lanes per vector.

Per lane the formula of :func:`dspsim.kernels.arithmetic.elementwise.add` and of LiteRT's optimized kernel's blocks
(``MBQM`` = MultiplyByQuantizedMultiplier, shifts <= 0, SRDHM and RDBP = RoundingDivideByPOT as in
:func:`dspsim.simd.requant_lanes._mbqm_lanes`), each input with its steps ``(pre, left, round, floor)``::

    v1 = RDBP(SRDHM(((x1 - zp1) >> pre1) << left1, M1), round1) >> floor1
    v2 = RDBP(SRDHM(((x2 - zp2) >> pre2) << left2, M2), round2) >> floor2
    out = clamp(MBQM(v1 + v2, Mo, So) + zo, act_min, act_max)

TFLite's reference takes ``(0, left_shift, -S, 0)``: ``v = MBQM((x - zp) << left_shift, M, S)``; LiteRT's optimized
int8 elementwise kernel ``(max(-n, 0), max(n, 0), 0, 0)`` with ``n = left_shift + S`` (one SRDHM after a combined
shift), its other kernels ``(0, left_shift, 0, -S)`` (a floor shift after SRDHM).

* the codes sign- (int8, int16) or zero-extended (uint8) to int32, ``- zp`` exact;
* ``>> pre`` and ``>> floor`` floor shifts; ``<< left`` and ``v1 + v2`` in int32 lanes: they wrap as the scalar loop's
  ``wrap_scalar(., 32)`` does (for TFLite's own parameters nothing wraps: ``255 << 22`` and ``65535 << 15`` fit);
* SRDHM ties toward +inf, RoundingDivideByPOT ties away from zero (``_mbqm_lanes``; by 0 it is the identity);
* ``clamp(v + zo, lo, hi)`` as the int64 scalar loop computes it, stored by
  :func:`dspsim.simd.requant_lanes.store_codes` (saturating packs for 8-bit codes). LiteRT's optimized kernel
  narrows ``v`` to int16 by wrapping first: its caller runs these lanes only where that cannot wrap.

:func:`add_lanes` runs the blocks over a range of the flat operands (32 outputs per step, then 8) and returns
where the caller's scalar loop takes over. :func:`mul_lanes` does the same for TFLite's MUL of 8-bit codes
(:func:`dspsim.kernels.arithmetic.elementwise.mul`): ``clamp(MBQM((x1 - zp1) * (x2 - zp2), M, S) + zo)``, the product
exact in int32, the requantization and the store those of the ADD's output (:func:`_store_requantized`). :func:`xnnpack_add_lanes` does the same for
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
from ._ir import _I32, _I64, _splat

__all__ = ["USE_LANES", "add_lanes", "mul_lanes", "xnnpack_add_lanes"]

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


def _input_sums(context, bld, args, at, xs, ms):
    """``v1 + v2`` of each pair of 8 int32 lanes in ``xs``, each input's ``v`` by the module's formula with its
    multiplier lanes in ``ms`` and its steps ``(pre, left, round, floor)``, arguments 7 and 8 of the block. The two
    floor shifts cost a tenth of TFLite's ADD (vector shifts share a pipe): they run in a branch of their own,
    taken where a step has one (LiteRT's optimized kernels but the int8 elementwise one)."""
    steps = [[context.cast(bld, bld.extract_value(args[i], k), at[i].dtype, types.int32) for k in range(4)]
             for i in (7, 8)]

    def sums(floors):
        def value(x, m, st):
            pre, left, rnd, flr = (_splat(bld, v, _V8) for v in st)
            if not floors:
                return _mbqm_lanes(bld, x, m, left, rnd)
            return bld.ashr(_mbqm_lanes(bld, bld.ashr(x, pre), m, left, rnd), flr)

        return [bld.add(*(value(x, m, st) for x, m, st in zip(pair, ms, steps))) for pair in xs]

    floors = bld.or_(bld.or_(steps[0][0], steps[0][3]), bld.or_(steps[1][0], steps[1][3]))
    with bld.if_else(bld.icmp_signed("!=", floors, ir.Constant(_I32, 0))) as (shifted, plain):
        with shifted:
            with_floors, shifted_end = sums(True), bld.block
        with plain:
            without, plain_end = sums(False), bld.block
    merged = []
    for f, w in zip(with_floors, without):
        phi = bld.phi(_V8)
        phi.add_incoming(f, shifted_end)
        phi.add_incoming(w, plain_end)
        merged.append(phi)
    return merged


def _row_loader(context, bld, mults_type, mults):
    """``row(k, vt)``: the 8 values of row ``k`` of the block's int32 ``mults`` argument as a vector ``vt``, loaded
    in the block, not splat (see :func:`add_lanes`)."""
    def row(k, vt=_V8):
        data = context.make_array(mults_type)(context, bld, mults).data
        ptr = bld.gep(bld.bitcast(data, _I32.as_pointer()), [ir.Constant(_I64, 8 * k)])
        return bld.load(bld.bitcast(ptr, vt.as_pointer()), align=4)

    return row


def _store_requantized(bld, sums, row, first, left, right, zo, lo, hi, dtype, ptr):
    """Store ``clamp(MBQM(v, Mo, So) + zo, lo, hi)`` of each 8-lane int32 vector ``v`` of ``sums`` (1 or 4) as codes
    of ``dtype`` at ``ptr``: ``row(first)`` holds ``Mo``, rows ``first + 1 ..`` rows 3-6 of its
    :func:`dspsim.simd.requant_lanes.lane_parameters`; ``left``, ``right`` its shifts (8 lanes). 8-bit codes take
    the float32 lanes where the right shift is in [2, 31] and no lane is flagged, else the exact lanes."""
    mov = row(first)

    def store(qs):
        store_codes(bld, qs, zo, lo, hi, dtype, ptr)

    def exact():
        store([_mbqm_lanes(bld, v, mov, left, right) for v in sums])

    if _BITS[dtype] != 8:
        exact()
        return
    with bld.if_else(_all_one_floor(bld, [row(first + 1)]), likely=True) as (one_floor, other):
        with one_floor:
            qs, fractions = zip(*(_mbqm_lanes_float(bld, v, *(row(first + r, _V8F) for r in (2, 3, 4)))
                                  for v in sums))
            with bld.if_else(_any_flagged(bld, fractions), likely=False) as (flagged_block, fast):
                with flagged_block:
                    exact()
                with fast:
                    store(list(qs))
        with other:
            exact()


def _add_block(nvec):
    """An intrinsic for the ``8 * nvec`` outputs from ``off``: ``out[off + i]`` of ``a[off + i]``, ``b[off + i]``;
    the other arguments are those of :func:`add_lanes`, ``ro = -So``."""

    @intrinsic
    def block(typingctx, a, b, off, mults, zp1, zp2, zo, steps1, steps2, ro, lo, hi, out):
        def codegen(context, bld, sig, args):
            at = sig.args
            base, load, splat = _operands(context, bld, sig, args)
            row = _row_loader(context, bld, at[3], args[3])
            xs = [(bld.sub(load(0, k), splat(4)), bld.sub(load(1, k), splat(5))) for k in range(nvec)]
            sums = _input_sums(context, bld, args, at, xs, (row(0), row(1)))
            zo_, lo_, hi_ = (context.cast(bld, args[i], at[i], types.int32) for i in (6, 10, 11))
            _store_requantized(bld, sums, row, 2, ir.Constant(_V8, [0] * 8), splat(9), zo_, lo_, hi_, at[12].dtype,
                               base(12))
            return context.get_dummy_value()

        return types.void(a, b, off, mults, zp1, zp2, zo, steps1, steps2, ro, lo, hi, out), codegen

    return block


def _mul_block(nvec):
    """An intrinsic for the ``8 * nvec`` outputs from ``off`` of a MUL: ``out[off + i]`` of ``a[off + i]``,
    ``b[off + i]``; the other arguments are those of :func:`mul_lanes`, ``left = max(So, 0)``, ``right =
    max(-So, 0)``."""

    @intrinsic
    def block(typingctx, a, b, off, mults, zp1, zp2, zo, left, right, lo, hi, out):
        def codegen(context, bld, sig, args):
            at = sig.args
            base, load, splat = _operands(context, bld, sig, args)
            products = [bld.mul(bld.sub(load(0, k), splat(4)), bld.sub(load(1, k), splat(5))) for k in range(nvec)]
            zo_, lo_, hi_ = (context.cast(bld, args[i], at[i], types.int32) for i in (6, 9, 10))
            _store_requantized(bld, products, _row_loader(context, bld, at[3], args[3]), 0, splat(7), splat(8), zo_,
                               lo_, hi_, at[11].dtype, base(11))
            return context.get_dummy_value()

        return types.void(a, b, off, mults, zp1, zp2, zo, left, right, lo, hi, out), codegen

    return block


_add_block32 = _add_block(4)
_add_block8 = _add_block(1)
_mul_block32 = _mul_block(4)
_mul_block8 = _mul_block(1)


def add_lanes(a, b, start, stop, mults, zp1, zp2, zo, steps1, steps2, so, lo, hi, out):
    """The vector lanes of a flat ADD over ``[start, stop)`` (jit only): outputs ``[start, returned)`` done (a
    multiple of 8 of them), the rest for the scalar loop. ``a``, ``b``, ``out`` flat arrays of one dtype (int8,
    uint8 or int16); ``mults`` int32 ``[M1] * 8 + [M2] * 8 + [Mo] * 8`` then rows 3-6 of the output's
    :func:`dspsim.simd.requant_lanes.lane_parameters` (``Mo``, ``So``), 8 of each; ``steps1``, ``steps2`` each
    input's int tuple ``(pre, left, round, floor)`` (the module's formula); the other parameters those of
    :func:`dspsim.kernels.arithmetic.elementwise.add_plan` (validated there: multipliers in [0, 2^31), shifts in
    [0, 31] and ``So`` in [-31, 0], zero points and clamp inside the dtype). Returns ``start`` for other types or
    layouts.

    The multipliers are loaded in each block, not splat from scalars: a splat is hoisted out of the loop, and
    LLVM's instruction selection, which sees one basic block, then cannot tell that the odd lanes' ``>> 32``
    operands are sign-extended 32-bit values, and emulates a 64 x 64-bit multiply (three ``vpmuludq``) instead
    of one ``vpmuldq``: 1.6 against 1.2 ns per element (AVX2, AMD EPYC)."""
    raise NotImplementedError("add_lanes is a jit primitive")


def _c_array(t):
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype in _BITS


def _steps(t):
    return isinstance(t, types.UniTuple) and t.count == 4 and isinstance(t.dtype, types.Integer)


@overload(add_lanes, jit_options={"cache": True}, inline="always")
def _add_lanes(a, b, start, stop, mults, zp1, zp2, zo, steps1, steps2, so, lo, hi, out):
    if not (_c_array(a) and _c_array(b) and _c_array(out) and a.dtype == b.dtype == out.dtype
            and isinstance(mults, types.Array) and mults.dtype == types.int32 and mults.layout == "C"
            and _steps(steps1) and _steps(steps2)):
        return lambda a, b, start, stop, mults, zp1, zp2, zo, steps1, steps2, so, lo, hi, out: start

    def impl(a, b, start, stop, mults, zp1, zp2, zo, steps1, steps2, so, lo, hi, out):
        n = stop - start
        end32 = stop - n % 32
        for j in range(start, end32, 32):
            _add_block32(a, b, j, mults, zp1, zp2, zo, steps1, steps2, -so, lo, hi, out)
        end8 = stop - n % 8
        for j in range(end32, end8, 8):
            _add_block8(a, b, j, mults, zp1, zp2, zo, steps1, steps2, -so, lo, hi, out)
        return end8

    return impl


def mul_lanes(a, b, start, stop, mults, zp1, zp2, zo, so, lo, hi, out):
    """The vector lanes of TFLite's flat MUL (``reference_integer_ops::MulElementwise``) over ``[start, stop)`` (jit
    only): ``clamp(MBQM((a - zp1) * (b - zp2), Mo, So) + zo, lo, hi)``, outputs ``[start, returned)`` done (a
    multiple of 8 of them). ``a``, ``b``, ``out`` flat int8 or uint8 arrays of one dtype (int16 MUL takes zero
    points 0 only: the scalar loop); ``mults`` int32 ``[Mo] * 8`` then rows 3-6 of its
    :func:`dspsim.simd.requant_lanes.lane_parameters`, 8 of each; ``So`` in [-31, 30]; the product of two 8-bit
    differences (``|p| <= 255^2``) is exact in int32 (``vpmulld``), MBQM as ADD's output (SRDHM ties toward +inf,
    RoundingDivideByPOT away from zero, a left shift wrapping). Returns ``start`` for other types or layouts."""
    raise NotImplementedError("mul_lanes is a jit primitive")


@overload(mul_lanes, jit_options={"cache": True}, inline="always")
def _mul_lanes(a, b, start, stop, mults, zp1, zp2, zo, so, lo, hi, out):
    if not (_c_array(a) and _c_array(b) and _c_array(out) and a.dtype == b.dtype == out.dtype
            and _BITS[out.dtype] == 8 and isinstance(mults, types.Array) and mults.dtype == types.int32
            and mults.layout == "C"):
        return lambda a, b, start, stop, mults, zp1, zp2, zo, so, lo, hi, out: start

    def impl(a, b, start, stop, mults, zp1, zp2, zo, so, lo, hi, out):
        n = stop - start
        left, right = max(so, 0), max(-so, 0)
        end32 = stop - n % 32
        for j in range(start, end32, 32):
            _mul_block32(a, b, j, mults, zp1, zp2, zo, left, right, lo, hi, out)
        end8 = stop - n % 8
        for j in range(end32, end8, 8):
            _mul_block8(a, b, j, mults, zp1, zp2, zo, left, right, lo, hi, out)
        return end8

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
