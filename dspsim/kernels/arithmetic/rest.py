"""The rest of TFLite's integer arithmetic builtins (issue 27 part 3): quantized DIV, ABS, ADD_N and CUMSUM (the 8-bit
"rescale to a common scale" scheme), REDUCE_PROD, and the raw-integer NEG, ABS, FLOOR_DIV, FLOOR_MOD, DIV.

Sources (read, docs/engines.md "The rest of the builtins"):

* DIV int8 / uint8 / int16 (``reference/div.h`` ``DivElementwise``; LiteRT ``kernels/div.cc``, tflite-micro
  ``micro/kernels/div.cc``): ``a = x1 - zp1``, ``b = x2 - zp2`` (signs flipped together so that ``b > 0``),
  ``r, rs = GetReciprocal(b, 31)``, ``h = CountLeadingSignBits(a)``, ``q = SRDHM(a << h, r)``, then
  ``zp_out + RoundingDivideByPOT(SRDHM(q, m), -(shift - rs - h))`` clamped (an exponent beyond 31, which small
  dividends reach, computed as x86-64 does: :func:`_rdbpot_any`); ``(m, shift) = QuantizeMultiplier(s1 /
  (s2 * s_out))`` computed in float32 (LiteRT) or as the engine's quotient (tflite-micro: ``TfliteProfile.quotient``).
  ``b == 0`` is a DCHECK in the source (undefined): refused at run time.
* ABS int8 / int16 (``elementwise.cc`` in both): ``|x - zp_in|``, plus ``zp_out`` when the scales are equal, else
  ``MultiplyByQuantizedMultiplier(|x - zp_in|, QuantizeMultiplier(s_in / s_out))`` (float32 quotient) plus
  ``zp_out``; clamped.
* ADD_N and CUMSUM int8 (tflite-micro ``add_n.cc``, ``cumsum.cc``; ``reference/add_n.h``, ``reference/cumsum.h``):
  every input ``(x - zp) << 20`` times ``QuantizeMultiplierSmallerThanOneExp(0.5)``, summed in int32 (wrapping)
  onto a start value that is the same term of ``-zp`` (the source's ``x = input1_offset; // x = 0``), then
  ``MultiplyByQuantizedMultiplierSmallerThanOneExp(sum, QuantizeMultiplier(2 s_in / (2^20 s_out)))`` plus
  ``zp_out``, clamped.
* REDUCE_PROD int8 / int16 (LiteRT ``reduce.cc`` ``QuantizedReduceProd``): ``p = x0 - zp``, then for each further
  element in C order ``p = MultiplyByQuantizedMultiplier(int64(p) * (x - zp), m, shift)`` (the int64 overload),
  and ``MultiplyByQuantizedMultiplier(int64(p), m, shift) + zp_out`` clamped, with ``(m, shift) =
  QuantizeMultiplier(s_in / pow(s_out, 1 / n))``; int32: the wrapping product.
* Raw integers (no quantization applied, LiteRT ``neg.cc``, ``floor_div.cc``, ``floor_mod.cc``, ``div.cc``,
  ``elementwise.cc``): NEG ``-x`` wrapping (also for int8 / int16 codes), ABS ``|x|`` wrapping, FLOOR_DIV
  ``floor(double(x1) / double(x2))`` (exact for 32-bit operands) cast back wrapping, FLOOR_MOD C's ``%`` then moved
  to the divisor's sign, int32 DIV C's truncating ``/``; a zero divisor fails ("Division by 0").
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ...fixedpoint import (
    _mbqm_int64, get_reciprocal, multiply_by_quantized_multiplier, quantize_multiplier, rounding_divide_by_pot_scalar,
    saturating_rounding_doubling_high_mul_scalar, tflite_round, wrap_scalar,
)
from .._checks import broadcast_shape

__all__ = ["abs_table", "add_n_int8", "cumsum_int8", "div_params", "div_table", "floor_div", "floor_mod",
           "flush_denormals", "xnnpack_f32_binary",
           "integer_div", "log_table", "negate", "prod_params", "raw_abs", "reduce_prod_quantized", "reduce_prod_int32",
           "rescale_params", "sqrt_table", "wrap_to"]

ADD_N_LEFT_SHIFT = 20  # kAddNIntegerShift, kCumSumIntegerShift


@njit(cache=True, inline="always")
def _mbqm_smaller_than_one(x, m, shift):
    """``MultiplyByQuantizedMultiplierSmallerThanOneExp`` (default build): RDBPOT(SRDHM(x, m), -shift)."""
    return rounding_divide_by_pot_scalar(saturating_rounding_doubling_high_mul_scalar(x, m), -shift)


@njit(cache=True, inline="always")
def _count_leading_sign_bits32(a):
    """GCC ``__builtin_clrsb`` of an int32 (31 for 0 and -1)."""
    u = a if a >= 0 else ~a
    n = 0
    while n < 31 and not (u & (np.int64(1) << (30 - n))):
        n += 1
    return n


@njit(cache=True, inline="always")
def _rdbpot_any(x, exponent):
    """gemmlowp ``RoundingDivideByPOT`` of an int32 for any ``exponent >= 0`` as x86-64 runs it: beyond 31 (DIV's
    ``total_shift`` reaches -62 for small dividends, past the source's ``assert(exponent <= 31)``) the mask
    ``(1ll << e) - 1`` truncates to -1 in int32, so the threshold is ``-1 + [x < 0]`` and the remainder ``x``
    itself, and ``x >> e`` shifts by ``e & 31`` (SAR masks the count): 0 becomes 1, a negative ``x`` is
    shifted by ``e - 32``."""
    if exponent < 32:
        return rounding_divide_by_pot_scalar(x, exponent)
    threshold = -1 + (1 if x < 0 else 0)
    return (x >> (exponent & 31)) + (1 if x > threshold else 0)


@njit(cache=True)
def _div_one(a, b, m, shift, zo, lo, hi):
    if b < 0:
        a, b = -a, -b
    recip, recip_shift = get_reciprocal(b, 31)
    headroom = _count_leading_sign_bits32(a)
    unscaled = saturating_rounding_doubling_high_mul_scalar(wrap_scalar(a << headroom, 32), recip)
    total_shift = shift - recip_shift - headroom
    v = zo + _rdbpot_any(saturating_rounding_doubling_high_mul_scalar(unscaled, m), -total_shift)
    return min(max(v, lo), hi)


@njit(cache=True)
def _div_table(lo_code, hi_code, z1, z2, m, shift, zo, lo, hi, out):
    n = hi_code - lo_code + 1
    for i in range(n):
        for j in range(n):
            b = lo_code + j - z2
            out[i, j] = 0 if b == 0 else _div_one(lo_code + i - z1, b, m, shift, zo, lo, hi)


def div_params(input1_scale, input2_scale, output_scale, quotient="float32"):
    """DIV Prepare: ``(multiplier, shift) = QuantizeMultiplier(s1 / (s2 * s_out))``, the product and quotient in
    float32 (``quotient="float32"``, as the C++ of both engines writes them) or in double."""
    s1, s2, so = (np.float32(v) for v in (input1_scale, input2_scale, output_scale))
    real = float(np.float32(s1 / np.float32(s2 * so))) if quotient == "float32" else \
        float(np.float64(s1) / (np.float64(s2) * np.float64(so)))
    if not (np.isfinite(real) and real > 0):
        raise ValueError(f"div_params: s1 / (s2 * s_out) = {real} is not a finite positive number")
    m, shift = (int(v) for v in quantize_multiplier(real))
    if shift > 23:  # the dividend's headroom is at least 23 bits for 8-bit codes: the exponent stays >= 0
        raise ValueError(f"div_params: s1 / (s2 * s_out) = {real} needs a left shift of {shift} > 23: "
                         "RoundingDivideByPOT would get a negative exponent (undefined in the engines)")
    return m, shift


def div_table(dtype, input1_zero_point, input2_zero_point, output_zero_point, multiplier, shift, act_min, act_max):
    """Every (x1, x2) code pair of int8 / uint8 ``dtype`` through ``DivElementwise``: a (256, 256) table indexed by
    ``code - min``; pairs whose divisor ``x2 - zp2`` is 0 hold 0 (callers refuse them)."""
    info = np.iinfo(dtype)
    out = np.zeros((256, 256), np.int64)
    _div_table(int(info.min), int(info.max), int(input1_zero_point), int(input2_zero_point), int(multiplier),
               int(shift), int(output_zero_point), int(act_min), int(act_max), out)
    return out.astype(dtype)


def rescale_params(input_scale, output_scale):
    """ABS's output rescaling: None for equal scales, else ``QuantizeMultiplier(float32(s_in / s_out))``."""
    si, so = np.float32(input_scale), np.float32(output_scale)
    if si == so:
        return None
    return tuple(int(v) for v in quantize_multiplier(float(np.float32(si / so))))


def abs_table(dtype, input_zero_point, output_zero_point, rescale):
    """Every code of int8 / int16 ``dtype`` through the quantized ABS (the module docstring): a table indexed by
    ``code - min``."""
    info = np.iinfo(dtype)
    codes = np.arange(int(info.min), int(info.max) + 1, dtype=np.int64)
    v = np.abs(codes - int(input_zero_point))
    if rescale is not None:
        v = multiply_by_quantized_multiplier(v, rescale[0], rescale[1]).astype(np.int64)
    return np.clip(v + int(output_zero_point), info.min, info.max).astype(dtype)


@njit(cache=True)
def _sum_rescaled(xs, z, m_in, e_in, m_out, e_out, zo, lo, hi, out):
    """ADD_N int8: ``xs`` (k, n) codes."""
    start = _mbqm_smaller_than_one(np.int64(-z) << ADD_N_LEFT_SHIFT, m_in, e_in)
    for i in range(xs.shape[1]):
        acc = start
        for j in range(xs.shape[0]):
            acc = wrap_scalar(acc + _mbqm_smaller_than_one((np.int64(xs[j, i]) - z) << ADD_N_LEFT_SHIFT, m_in, e_in),
                              32)
        out[i] = min(max(zo + _mbqm_smaller_than_one(acc, m_out, e_out), lo), hi)


def _add_n_params(input_scale, output_scale):
    s_in, s_out = np.float64(np.float32(input_scale)), np.float64(np.float32(output_scale))
    twice = 2 * s_in
    m_in, e_in = quantize_multiplier(float(s_in / twice))
    real_out = twice / ((1 << ADD_N_LEFT_SHIFT) * s_out)
    if not real_out < 1:
        raise ValueError(f"add_n / cumsum: the output multiplier {real_out} must be < 1 "
                         "(QuantizeMultiplierSmallerThanOneExp aborts)")
    m_out, e_out = quantize_multiplier(float(real_out))
    return int(m_in), int(e_in), int(m_out), int(e_out)


def add_n_int8(xs, input_zero_point, input_scale, output_zero_point, output_scale):
    """tflite-micro's int8 ADD_N of the same-shape int8 arrays ``xs`` (one input quantization)."""
    m_in, e_in, m_out, e_out = _add_n_params(input_scale, output_scale)
    stack = np.stack([np.asarray(x).reshape(-1) for x in xs]).astype(np.int64)
    out = np.empty(stack.shape[1], np.int64)
    _sum_rescaled(stack, int(input_zero_point), m_in, e_in, m_out, e_out, int(output_zero_point), -128, 127, out)
    return out.astype(np.int8).reshape(np.shape(xs[0]))


@njit(cache=True)
def _cumsum(x, z, m_in, e_in, m_out, e_out, zo, exclusive, reverse, out):
    """x, out: (inner, depth, outer) int64 views."""
    start = _mbqm_smaller_than_one(np.int64(-z) << ADD_N_LEFT_SHIFT, m_in, e_in)
    inner, depth, outer = x.shape
    for o in range(outer):
        for i in range(inner):
            acc = start
            for d0 in range(depth):
                d = depth - 1 - d0 if reverse else d0
                y = _mbqm_smaller_than_one((x[i, d, o] - z) << ADD_N_LEFT_SHIFT, m_in, e_in)
                if exclusive:
                    s = acc
                    acc = wrap_scalar(acc + y, 32)
                else:
                    acc = wrap_scalar(acc + y, 32)
                    s = acc
                out[i, d, o] = min(max(zo + _mbqm_smaller_than_one(s, m_out, e_out), -128), 127)


def cumsum_int8(x, axis, exclusive, reverse, input_zero_point, input_scale, output_zero_point, output_scale):
    """tflite-micro's int8 CUMSUM along ``axis`` (module docstring)."""
    x = np.asarray(x)
    axis = int(axis) % x.ndim
    m_in, e_in, m_out, e_out = _add_n_params(input_scale, output_scale)
    inner, depth = int(np.prod(x.shape[:axis])), x.shape[axis]
    v = x.astype(np.int64).reshape(inner, depth, -1)
    out = np.empty_like(v)
    _cumsum(v, int(input_zero_point), m_in, e_in, m_out, e_out, int(output_zero_point), bool(exclusive),
            bool(reverse), out)
    return out.astype(np.int8).reshape(x.shape)


@njit(cache=True)
def _prod_rows(rows, z, m, shift, zo, lo, hi, out):
    for i in range(rows.shape[0]):
        p = rows[i, 0] - z
        for j in range(1, rows.shape[1]):
            p = _mbqm_int64(p * (rows[i, j] - z), m, shift)
        out[i] = min(max(_mbqm_int64(p, m, shift) + zo, lo), hi)


def _rows(x, axes):
    """``x`` with the reduced axes moved last (kept in C order) as (outputs, reduced) rows."""
    x = np.asarray(x)
    axes = sorted({int(a) % x.ndim for a in np.asarray(axes).reshape(-1)}) if x.ndim else []
    kept = [k for k in range(x.ndim) if k not in axes]
    t = np.transpose(x, kept + axes)
    n = int(np.prod([x.shape[k] for k in axes], dtype=np.int64))
    return t.reshape(-1, max(n, 1)), n


def prod_params(input_scale, output_scale, reduced):
    """``QuantizeMultiplier(s_in / pow(s_out, 1 / n))`` (``GetQuantProdScaling``, double)."""
    real = float(np.float32(input_scale)) / float(np.float64(np.float32(output_scale)) ** (1.0 / reduced))
    m, s = quantize_multiplier(real)
    if s >= 8:  # MultiplyByQuantizedMultiplier(int64, ...): TFLITE_DCHECK(shift < 8); beyond, a negative shift count
        raise ValueError(f"reduce_prod: the per-step scale {real} needs a left shift of {s} >= 8, beyond TFLite's "
                         "int64 MultiplyByQuantizedMultiplier (undefined)")
    return int(m), int(s)


def reduce_prod_quantized(x, axes, input_zero_point, input_scale, output_zero_point, output_scale):
    """LiteRT's quantized REDUCE_PROD (int8 / int16) over ``axes``; the output flat (the caller reshapes)."""
    rows, n = _rows(x, axes)
    m, s = prod_params(input_scale, output_scale, n)
    info = np.iinfo(np.asarray(x).dtype)
    out = np.empty(rows.shape[0], np.int64)
    _prod_rows(rows.astype(np.int64), int(input_zero_point), m, s, int(output_zero_point), int(info.min),
               int(info.max), out)
    return out.astype(np.asarray(x).dtype)


def reduce_prod_int32(x, axes):
    """The int32 REDUCE_PROD: the product of each row, wrapping at 32 bits."""
    rows, _ = _rows(x, axes)
    out = np.ones(rows.shape[0], np.int64)
    for j in range(rows.shape[1]):
        out = (out * rows[:, j].astype(np.int64)) & 0xFFFFFFFF
    return out.astype(np.uint32).view(np.int32)


def wrap_to(v, dtype):
    """Integers ``v`` (any width) wrapped to the integer ``dtype`` (two's complement, as the C casts give)."""
    bits = np.dtype(dtype).itemsize * 8
    v = np.asarray(v, np.int64) & ((1 << bits) - 1)
    return (v - ((v >> (bits - 1)) << bits)).astype(dtype)


def negate(x):
    """``-x`` in ``x``'s integer type, wrapping (``reference_ops::Negate``)."""
    return wrap_to(-np.asarray(x, np.int64), np.asarray(x).dtype)


def raw_abs(x):
    """``|x|`` in ``x``'s integer type, wrapping (``std::abs``)."""
    return wrap_to(np.abs(np.asarray(x, np.int64)), np.asarray(x).dtype)


def _check_divisor(x2, func):
    if np.any(np.asarray(x2) == 0):
        raise ValueError(f"{func}: Division by 0 (the engines fail)")


def floor_div(x1, x2):
    """``floor(double(x1) / double(x2))`` cast to the type, wrapping (``reference_ops::FloorDiv``)."""
    _check_divisor(x2, "floor_div")
    a, b = np.asarray(x1, np.int64), np.asarray(x2, np.int64)
    return wrap_to(np.floor_divide(a, b), np.asarray(x1).dtype)


def floor_mod(x1, x2):
    """C's ``x1 % x2`` moved to the divisor's sign (``reference_ops::FloorMod``)."""
    _check_divisor(x2, "floor_mod")
    a, b = np.asarray(x1, np.int64), np.asarray(x2, np.int64)
    return wrap_to(np.mod(a, b), np.asarray(x1).dtype)


def integer_div(x1, x2):
    """int32 DIV: C's truncating ``x1 / x2`` (``reference_ops::Div<int32_t>``), wrapping."""
    _check_divisor(x2, "integer_div")
    a, b = np.asarray(x1, np.int64), np.asarray(x2, np.int64)
    q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
    return wrap_to(q, np.asarray(x1).dtype)


def broadcast_out(func, shape1, shape2):
    """The output shape of two broadcast operands (a ValueError naming ``func`` otherwise)."""
    return broadcast_shape(func, tuple(shape1), tuple(shape2))


def _f32(v):
    return np.float32(v)


def _to_int32(v):
    """C's ``static_cast<int32_t>`` of a finite float (truncation toward zero)."""
    return int(np.trunc(np.float64(v)))


def log_table(input_scale, input_zero_point, output_scale, output_zero_point):
    """LiteRT's int8 LOG (``elementwise.cc`` ``LogLUTPrepare``, ``LUTPopulateInt8``): for each code ``q``, ``x =
    f32(s_in * (q - zi))``, ``y = logf(x)`` (glibc's), or ``f32((-128 - zo) * s_out)`` (the output minimum) where
    ``x <= 0``, then ``clamp(int32(f32(TfLiteRound(f32(y * f32(1 / s_out))) + zo)), -128, 127)``. A 256-entry
    int8 table indexed by ``q + 128``."""
    from ..nonlinear.pointwise import libm_f32  # noqa: PLC0415  (glibc's logf, as the engines call it)
    s_in, s_out = _f32(input_scale), _f32(output_scale)
    zi, zo = int(input_zero_point), int(output_zero_point)
    inverse = _f32(_f32(1.0) / s_out)
    output_min = _f32(_f32(-128 - zo) * s_out)
    out = np.empty(256, np.int8)
    for q in range(-128, 128):
        x = _f32(s_in * _f32(q - zi))
        y = output_min if x <= 0 else libm_f32("logf", x)
        r = _f32(_f32(tflite_round(float(_f32(y * inverse)))) + _f32(zo))
        out[q + 128] = min(max(_to_int32(r), -128), 127)
    return out


def sqrt_table(input_scale, input_zero_point, output_scale, output_zero_point):
    """LiteRT's int8 SQRT (``elementwise.cc`` ``SqrtEvalQuantized``): ``x = f32(s_in * (q - zi))`` (a code below the
    zero point fails: "Sqrt is only defined for non-negative values"), ``int32(f32(sqrtf(x) / s_out)) + zo``
    (truncation toward zero) clamped to int8. Returns (the 256-entry table indexed by ``q + 128``, the lowest code
    it takes)."""
    s_in, s_out = _f32(input_scale), _f32(output_scale)
    zi, zo = int(input_zero_point), int(output_zero_point)
    out = np.zeros(256, np.int8)
    for q in range(max(zi, -128), 128):
        x = _f32(s_in * _f32(q - zi))
        out[q + 128] = min(max(_to_int32(_f32(np.sqrt(x) / s_out)) + zo, -128), 127)
    return out, max(zi, -128)


def log_table_int16(input_scale, output_scale):
    """LiteRT's int16 LOG table (``LogLUTPrepare`` -> ``LUTPopulateInt16<float>``, zero points 0): 513 entries of
    ``f(x) = logf(x)`` (or the output minimum ``f32(-32768 * s_out)`` where ``x <= 0``) sampled over the input range,
    each lowered by half the interpolation error at its interval's middle, every step in float32 (as
    :func:`dspsim.kernels.nonlinear.softmax.lut_populate_int16` does for SOFTMAX's tables). Read with
    :func:`lookup_int16`."""
    from ..nonlinear.pointwise import libm_f32  # noqa: PLC0415
    ft = np.float32
    s_in, s_out = ft(input_scale), ft(output_scale)
    in_min, in_max = ft(s_in * ft(-32768)), ft(s_in * ft(32767))
    out_min, out_max = ft(s_out * ft(-32768)), ft(s_out * ft(32767))

    def f(v):
        return out_min if v <= 0 else libm_f32("logf", v)

    def rnd(v):
        return ft(tflite_round(float(v)))

    step = ft(ft(in_max - in_min) / ft(512))
    half_step = ft(step / ft(2))
    inv = ft(ft(65536) / ft(out_max - out_min))
    lut = np.empty(513, np.int16)
    for i in range(512):
        x_i = ft(in_min + ft(ft(i) * step))
        val, val_mid, val_next = f(x_i), f(ft(x_i + half_step)), f(ft(in_min + ft(ft(i + 1) * step)))
        sample = rnd(ft(val * inv))
        interp = rnd(ft(ft(ft(val_next * inv) + sample) / ft(2)))
        bias = rnd(ft(ft(interp - rnd(ft(val_mid * inv))) / ft(2)))
        lut[i] = int(min(max(ft(sample - bias), -32768.0), 32767.0))
    lut[512] = int(min(max(rnd(ft(f(in_max) * inv)), -32768.0), 32767.0))
    return lut


def lookup_int16(x, lut):
    """TFLite's int16 ``LUTLookup``: ``lut[256 + (x >> 7)]`` plus the slope to the next entry times the low 7 bits,
    ``(slope * (x & 127) + 64) >> 7``, wrapped to int16."""
    v = np.asarray(x, np.int64)
    index = 256 + (v >> 7)
    base = lut.astype(np.int64)[index]
    delta = ((lut.astype(np.int64)[index + 1] - base) * (v & 0x7F) + 64) >> 7
    return wrap_to(base + delta, np.int16)


def sqrt_int16(x, input_scale, input_zero_point, output_scale, output_zero_point):
    """LiteRT's int16 SQRT (``SqrtEvalQuantized<int16_t>``): as :func:`sqrt_table`, clamped to int16. ValueError
    for a code below the zero point."""
    s_in, s_out = _f32(input_scale), _f32(output_scale)
    v = np.asarray(x, np.int64) - int(input_zero_point)
    if v.size and int(v.min()) < 0:
        raise ValueError("Sqrt is only defined for non-negative values (a code below the input zero point)")
    dq = (s_in * v.astype(np.float32)).astype(np.float32)
    q = np.trunc((np.sqrt(dq) / s_out).astype(np.float32).astype(np.float64)).astype(np.int64) + int(output_zero_point)
    return np.clip(q, -32768, 32767).astype(np.int16)


_TINY = np.float32(np.finfo(np.float32).tiny)


def flush_denormals(x):
    """float32 ``x`` with every denormal replaced by a zero of its sign (x86 DAZ / FTZ); NaN and infinities kept."""
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < _TINY, np.copysign(np.float32(0.0), x), x).astype(np.float32)


def xnnpack_f32_binary(ufunc, x1, x2, lo, hi):
    """XNNPACK's float32 ``vmul`` / ``vdiv`` (``ufunc``: ``np.multiply`` or ``np.divide``) as LiteRT's delegate runs
    them, broadcasting: denormal inputs read as zero and denormal results written as zero (the delegate's flush to
    zero), one IEEE operation per element between; then the fused activation's range ``[lo, hi]``, none when both
    are infinite. The clamp replaces only what lies beyond a bound: a NaN stays NaN (measured) and ``-0`` stays.
    Ties: the IEEE operation's round to nearest even; overflow gives infinities, not ``FLT_MAX``."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        y = flush_denormals(ufunc(flush_denormals(x1), flush_denormals(x2), dtype=np.float32))
    if np.isinf(lo) and np.isinf(hi):
        return y
    y = np.where(y < lo, np.float32(lo), y)
    return np.where(y > hi, np.float32(hi), y).astype(np.float32)
