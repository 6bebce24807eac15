"""TFLite's default requantization (``Arithmetic.FIXED_POINT_DOUBLE``) in int32 vector lanes (LLVM IR).

The same formula as :func:`dspsim.fixedpoint.multiply_by_quantized_multiplier_scalar` then ``+ zp`` and
the clamp, for int32 accumulators (no saturation needed) and int8 / uint8 / int16 outputs, 8 lanes per
vector:

* ``x << left`` in int32 lanes (wraps, as TFLite's ``x * (1 << left)``), skipped for a block of
  lanes that all have ``left = 0`` (multipliers below 1: the common case);
* SRDHM ``(x * m + 2^30) >> 31``, ties toward +inf: ``vpmuldq`` on the even and the odd lanes (exact
  int64 products; ``m`` in [0, 2^31) so the one saturating case cannot occur), the high halves
  re-interleaved;
* RoundingDivideByPOT by ``right``, ties away from zero (gemmlowp's mask / threshold form, the mask
  ``(1 << right) - 1`` precomputed per position by :func:`lane_parameters`);
* the clamp to ``[lo - zp, hi - zp]`` BEFORE ``+ zp``: the int32 add cannot wrap, and the value is the
  int64 ``min(max(v + zp, lo), hi)`` of the scalar loop; the store truncates it to the output type.

:func:`requantize_blocks` runs the vector blocks over the front of a row (32 outputs per step, then 8)
and returns where the caller's scalar loop takes over; for other dtypes it does nothing (returns 0).
The IR is plain LLVM vector code, fast with AVX2 (:data:`dspsim.kernels._simd.HAVE_AVX2`): callers
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
* the int32 clamp to ``[lo - zp, hi - zp]`` before ``+ zp`` (no wrap), the store truncates.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from .kernels._simd import HAVE_AVX2, _I32, _I64, _splat

__all__ = ["HAVE_AVX2", "float_lane_parameters", "lane_parameters", "requantize_blocks",
           "requantize_float_row"]

_V8 = ir.VectorType(_I32, 8)
_V4 = ir.VectorType(_I32, 4)
_V4Q = ir.VectorType(_I64, 4)
_OUT_BITS = {types.int8: 8, types.uint8: 8, types.int16: 16}


def _lanes(*idx):
    return ir.Constant(ir.VectorType(_I32, len(idx)), list(idx))


def _mbqm_lanes(b, x, m, left, right, mask=None):
    """RoundingDivideByPOT(SRDHM(x << left, m), right) of 8 int32 lanes (``left`` None: no left shift;
    ``mask``: ``(1 << right) - 1``, computed here when None).

    Zen 2 runs vector shifts on one pipe, a variable shift in two cycles: the odd lanes move down by a
    shuffle, the mask comes precomputed and the left shift only when a lane has one."""
    if left is not None:
        x = b.shl(x, left)

    def q(v):
        return ir.Constant(_V4Q, [v] * 4)

    def low_halves(v):  # lanes 0, 2, 4, 6 sign-extended to int64 (vpmuldq reads only those)
        return b.ashr(b.shl(b.bitcast(v, _V4Q), q(32)), q(32))

    def odd_down(v):  # lanes 1, 3, 5, 7 moved into the low halves: a shuffle, not a shift
        return b.shuffle_vector(v, v, _lanes(1, 1, 3, 3, 5, 5, 7, 7))

    # (p + 2^30) >> 31 lands in the low half of an even product's lane; (p + 2^30) << 1 puts the same bits in
    # the high half of an odd one's; a blend joins them.
    even = b.mul(low_halves(x), low_halves(m))
    odd = b.mul(low_halves(odd_down(x)), low_halves(odd_down(m)))
    he = b.bitcast(b.lshr(b.add(even, q(1 << 30)), q(31)), _V8)
    ho = b.bitcast(b.shl(b.add(odd, q(1 << 30)), q(1)), _V8)
    h = b.shuffle_vector(he, ho, _lanes(0, 9, 2, 11, 4, 13, 6, 15))
    one, zero = ir.Constant(_V8, [1] * 8), ir.Constant(_V8, [0] * 8)
    if mask is None:
        mask = b.sub(b.shl(one, right), one)
    threshold = b.sub(b.lshr(mask, one), b.sext(b.icmp_signed("<", h, zero), _V8))
    return b.sub(b.ashr(h, right), b.sext(b.icmp_signed(">", b.and_(h, mask), threshold), _V8))


def store_codes(b, qs, zpv, q_lo, q_hi, elem, ptr):
    """Store the 8-lane int32 vectors ``qs`` as ``8 * len(qs)`` codes of the integer type ``elem`` at
    ``ptr`` (an ``elem*``): each clamped to ``[q_lo, q_hi]`` (the output range minus the zero point)
    BEFORE ``+ zpv``, so the int32 add cannot wrap; the store truncates."""
    res = []
    for q in qs:
        q = b.select(b.icmp_signed("<", q, q_lo), q_lo, q)
        q = b.select(b.icmp_signed(">", q, q_hi), q_hi, q)
        res.append(b.add(q, zpv))
    while len(res) > 1:  # concatenate: 8 -> 16 -> 32 lanes
        w = 2 * res[0].type.count
        res = [b.shuffle_vector(res[i], res[i + 1], _lanes(*range(w))) for i in range(0, len(res), 2)]
    vt = ir.VectorType(elem, 8 * len(qs))
    b.store(b.trunc(res[0], vt), b.bitcast(ptr, vt.as_pointer()), align=1)


def _block(nvec):
    """An intrinsic for ``8 * nvec`` outputs from ``off``: ``out[off + i] = clamp(MBQM(acc[off + i],
    mult[off + i], left[off + i], right[off + i]) + zp, lo, hi)`` (parameters indexed like the row;
    ``mask = (1 << right) - 1``)."""

    @intrinsic
    def block(typingctx, acc, off, mult, left, right, mask, zp, lo, hi, out):
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

            zpv = splat(6)
            q_lo, q_hi = b.sub(splat(7), zpv), b.sub(splat(8), zpv)
            lefts = [load(3, k) for k in range(nvec)]
            any_left = lefts[0]
            for v in lefts[1:]:
                any_left = b.or_(any_left, v)
            wide = ir.IntType(256)
            # Multipliers below 1 (the common case) shift nothing left: the variable shift is skipped.
            with b.if_else(b.icmp_signed("!=", b.bitcast(any_left, wide), ir.Constant(wide, 0))) as (some, none):
                for block_, ls in ((some, lefts), (none, [None] * nvec)):
                    with block_:
                        qs = [_mbqm_lanes(b, load(0, k), load(2, k), ls[k], load(4, k), load(5, k))
                              for k in range(nvec)]
                        store_codes(b, qs, zpv, q_lo, q_hi, elem, base(9, elem))
            return context.get_dummy_value()

        return types.void(acc, off, mult, left, right, mask, zp, lo, hi, out), codegen

    return block


_block32 = _block(4)
_block8 = _block(1)


def requantize_blocks(row, orow, mult, left, right, mask, zp, lo, hi):
    """The vector front of one row: outputs ``[0, returned)`` done (a multiple of 8), the rest for the
    scalar loop. ``mult``, ``left``, ``right``, ``mask`` are the int32 per-position parameters of
    :func:`lane_parameters` (at least ``len(row)``);
    ``zp``, ``lo``, ``hi`` inside the output type. 0 when ``row`` is not C-contiguous int32 or ``orow``
    not C-contiguous int8 / uint8 / int16 (jit only)."""
    raise NotImplementedError("requantize_blocks is a jit primitive")


def _c_array(t, dtypes):
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype in dtypes


@overload(requantize_blocks, jit_options={"cache": True}, inline="always")
def _requantize_blocks(row, orow, mult, left, right, mask, zp, lo, hi):
    if not (_c_array(row, (types.int32,)) and _c_array(orow, tuple(_OUT_BITS)) and
            all(_c_array(p, (types.int32,)) for p in (mult, left, right, mask))):
        return lambda row, orow, mult, left, right, mask, zp, lo, hi: 0

    def impl(row, orow, mult, left, right, mask, zp, lo, hi):
        n = row.shape[0]
        n32 = n - n % 32
        for j in range(0, n32, 32):
            _block32(row, j, mult, left, right, mask, zp, lo, hi, orow)
        n8 = n - n % 8
        for j in range(n32, n8, 8):
            _block8(row, j, mult, left, right, mask, zp, lo, hi, orow)
        return n8

    return impl


@njit(cache=True, nogil=True)
def lane_parameters(mult, shift, n, per_channel):
    """int32 ``(multiplier, left shift, right shift, (1 << right shift) - 1)`` for the ``n`` positions
    of a row: channel ``j``'s values (``per_channel``) or the first ones broadcast."""
    m = np.empty(n, np.int32)
    left = np.empty(n, np.int32)
    right = np.empty(n, np.int32)
    mask = np.empty(n, np.int32)
    for j in range(n):
        c = j if per_channel else 0
        m[j] = mult[c]
        left[j] = max(shift[c], 0)
        right[j] = max(-shift[c], 0)
        mask[j] = (np.int64(1) << right[j]) - 1
    return m, left, right, mask


# --------------------------------------------------------------------------------------------
# float-scale schemes (FBGEMM, ONNX Runtime / XNNPACK) in float32 lanes
# --------------------------------------------------------------------------------------------
_F32, _F64 = ir.FloatType(), ir.DoubleType()
_V8F = ir.VectorType(_F32, 8)
_V8D = ir.VectorType(_F64, 8)


def _float_block(nvec):
    """An intrinsic for ``8 * nvec`` outputs from ``off``: ``y = f32(fma(bias_a, bias_b, float32(acc)) *
    scale)``, clamped in float to ``[lo - zp, hi - zp]`` when ``clamp`` (else to +-inf: not at all), ``q =
    cvtps2dq(y)``, ``out = min(max(q, lo - zp), hi - zp) + zp`` (array parameters indexed like the row;
    ``scale`` float32, or float64 holding float32 values)."""

    @intrinsic
    def block(typingctx, acc, off, bias_a, bias_b, scale, clamp, zp, lo, hi, out):
        elem = ir.IntType(_OUT_BITS[out.dtype])
        wide_scale = scale.dtype == types.float64

        def codegen(context, builder, sig, args):
            b = builder
            at = sig.args
            o = context.cast(b, args[1], at[1], types.int64)

            def load(i, k, t, vt):
                data = context.make_array(at[i])(context, b, args[i]).data
                ptr = b.gep(b.bitcast(data, t.as_pointer()), [b.add(o, ir.Constant(_I64, 8 * k))])
                return b.load(b.bitcast(ptr, vt.as_pointer()), align=4)

            def splat(i, t, vt):
                return _splat(b, context.cast(b, args[i], at[i], t), vt)

            fma = cgutils.get_or_insert_function(b.module, ir.FunctionType(_V8F, [_V8F] * 3), "llvm.fma.v8f32")
            cvt = cgutils.get_or_insert_function(b.module, ir.FunctionType(_V8, [_V8F]), "llvm.x86.avx.cvt.ps2dq.256")
            zpv = splat(6, types.int32, _V8)
            q_lo, q_hi = b.sub(splat(7, types.int32, _V8), zpv), b.sub(splat(8, types.int32, _V8), zpv)
            clamp_ = context.cast(b, args[5], at[5], types.boolean)
            inf = ir.Constant(_V8F, float("inf"))
            f_lo = b.select(clamp_, b.sitofp(q_lo, _V8F), b.fneg(inf))  # int -> float exact: |q| < 2^17
            f_hi = b.select(clamp_, b.sitofp(q_hi, _V8F), inf)
            res = []
            for k in range(nvec):
                raw = b.sitofp(load(0, k, _I32, _V8), _V8F)
                raw = b.call(fma, [load(2, k, _F32, _V8F), load(3, k, _F32, _V8F), raw])
                s = b.fptrunc(load(4, k, _F64, _V8D), _V8F) if wide_scale else load(4, k, _F32, _V8F)
                y = b.fmul(raw, s)
                y = b.select(b.fcmp_ordered("<", y, f_lo), f_lo, y)  # NaN stays NaN
                y = b.select(b.fcmp_ordered(">", y, f_hi), f_hi, y)
                res.append(b.call(cvt, [y]))
            data = context.make_array(at[9])(context, b, args[9]).data
            store_codes(b, res, zpv, q_lo, q_hi, elem, b.gep(b.bitcast(data, elem.as_pointer()), [o]))
            return context.get_dummy_value()

        return types.void(acc, off, bias_a, bias_b, scale, clamp, zp, lo, hi, out), codegen

    return block


_float_block32 = _float_block(4)
_float_block8 = _float_block(1)


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


@overload(requantize_float_row, jit_options={"cache": True}, inline="always")
def _requantize_float_row(row, orow, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float):
    if not (_c_array(row, (types.int32,)) and _c_array(orow, tuple(_OUT_BITS)) and
            _c_array(bias_a, (types.float32,)) and _c_array(bias_b, (types.float32,)) and
            _c_array(scale, (types.float32, types.float64))):
        return lambda row, orow, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float: 0

    def impl(row, orow, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float):
        n = row.shape[0]
        n32 = n - n % 32
        for j in range(0, n32, 32):
            _float_block32(row, j, bias_a, bias_b, scale, clamp_in_float, zp, lo, hi, orow)
        n8 = n - n % 8
        for j in range(n32, n8, 8):
            _float_block8(row, j, bias_a, bias_b, scale, clamp_in_float, zp, lo, hi, orow)
        return n8

    return impl


def float_lane_parameters(arith, float_bias, scale, fb_a, fb_b):
    """``(bias_a, bias_b, scale, clamp_in_float)`` of :func:`requantize_float_row` for the parameters of
    :func:`dspsim.requant.requantize_value` (``scale``, ``fb_a``, ``fb_b`` one value per channel, as
    ``Requant.arrays`` and ``float_bias_arrays`` give them; float32 arrays of ``len(scale)``), or None
    for the schemes that have no float lanes (fixed point, shift, onnx-reference, litert-fc, oneDNN).

    ``FloatBias.NONE``: ``fma(0, 0, raw)``; ``ADD_QUOTIENT``: ``fma(fb_a, 1, raw)``;
    ``FMA_RECIPROCAL``: ``fma(fb_a, fb_b, raw)``.
    """
    from .requant import Arithmetic, FloatBias

    if arith not in (Arithmetic.FBGEMM, Arithmetic.FLOAT32) or float_bias == FloatBias.ONEDNN:
        return None
    n = len(scale)
    fa, fb = np.zeros(n, np.float32), np.zeros(n, np.float32)
    if float_bias != FloatBias.NONE:
        fa[:] = np.asarray(fb_a, np.float32)
        fb[:] = 1 if float_bias == FloatBias.ADD_QUOTIENT else np.asarray(fb_b, np.float32)
    return fa, fb, np.asarray(scale, np.float64).astype(np.float32), bool(arith == Arithmetic.FLOAT32)
