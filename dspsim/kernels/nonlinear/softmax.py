"""SOFTMAX over the last axis: TFLite's gemmlowp fixed-point int8 reference and its int16 table kernel
(LiteRT BUILTIN_REF and TFLM); LOG_SOFTMAX; LiteRT's optimized float32-table int8 kernels.

``reference_ops::Softmax<int8_t, int8_t>`` (LiteRT ``kernels/internal/reference/softmax.h``; TFLM calls the
same function): per row, ``d = q - max(row)``; entries with ``d >= diff_min`` contribute
``exp_on_negative_values(MBQM>1(d))`` (Q5.26 in, Q0.31 out) rescaled to Q12.19 and summed; the sum is
inverted by ``GetReciprocal``; each output is ``RoundingDivideByPOT(SRDHM(recip, exp), nbu + 23) - 128``,
clamped; entries below ``diff_min`` give -128. Any rank, any beta (beta only enters the multiplier).

``reference_ops::SoftmaxInt16`` (int16 in and out, both engines; LiteRT's optimized build calls it too):
per row ``d = q - max(row)`` is rescaled so that [-65535, 0] means [-10, 0], looked up in a 513-entry exp
table with interpolation (``LUTLookup``), summed, and the sum normalised and inverted by a second table
of ``1 / (1 + x)``. The tables are built at Prepare in float arithmetic, float32 in TFLM and double in
LiteRT (:class:`Int16SoftmaxPrepare`), so the two engines differ by 1 LSB on a few outputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
from numba import njit

from ...fixedpoint import (
    count_leading_zeros32, rounding_divide_by_pot_scalar, saturating_rounding_doubling_high_mul_scalar,
    exp_on_negative_values, get_reciprocal, log_x_for_x_greater_than_or_equal_to_1,
    multiply_by_quantized_multiplier_scalar, quantize_multiplier, rescale, round_half_away_from_zero, wrap_scalar,
)
from ..._errors import names_its_errors
from .._checks import float32_scale
from .pointwise import libm_f32
from .._checks import check_tensor, int_in_range, zero_point

_INT8 = (np.dtype(np.int8),)
_INT16 = (np.dtype(np.int16),)
_BYTES = (np.dtype(np.int8), np.dtype(np.uint8))  # int8 or uint8 (legacy asymmetric) codes


def _out_range(out_dtype):
    """(min, max) of an output type: the reference adds the minimum (``numeric_limits<OutputT>::min()``)."""
    info = np.iinfo(np.dtype(out_dtype))
    return int(info.min), int(info.max)
_SCALED_DIFF_INTEGER_BITS = 5
_ACCUMULATION_INTEGER_BITS = 12


@dataclass(frozen=True)
class SoftmaxParams:
    """TFLite ``SoftmaxParams`` of the int8 reference: ``input_multiplier``/``input_left_shift`` (beta times
    the input scale, in Q5.26 per input step) and ``diff_min`` (differences below it give exp 0)."""

    input_multiplier: int
    input_left_shift: int
    diff_min: int


def tflite_softmax_params(*, input_scale, beta=1.0):
    """TFLite ``PreprocessSoftmaxScaling(beta, s_in, 5)`` + ``CalculateInputRadius(5, shift)`` (default
    double-rounding build): ``real = min(double(beta) * double(s_in) * 2^26, 2^31 - 1)``,
    ``QuantizeMultiplierGreaterThanOne(real)`` (refused when ``real <= 1``, as TFLite's CHECK aborts),
    ``diff_min = -floor(31 * 2^26 / 2^shift)``. ``beta`` and ``s_in`` are float32 values, as in the model."""
    func = "tflite_softmax_params"
    for name, v in (("input_scale", input_scale), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
            raise TypeError(f"{func}: {name} must be a float, got {type(v).__name__}")
        float32_scale(v, func, name)
    real = min(float(np.float32(beta)) * float(np.float32(input_scale)) * float(1 << 26), float((1 << 31) - 1))
    if not real > 1.0:
        raise ValueError(f"{func}: beta * input_scale * 2^26 = {real} must exceed 1 (QuantizeMultiplierGreaterThanOne)")
    m, shift = quantize_multiplier(real)
    if not 0 <= shift <= 31:
        raise ValueError(f"{func}: the left shift {shift} is outside [0, 31]")
    radius = math.floor(31.0 * 2.0**26 / 2.0**shift)
    return SoftmaxParams(int(m), int(shift), -radius)


def _check_fields(func, params, ranges):
    """ValueError naming ``params.<field>`` unless every ``(field, lo, hi)`` of ``ranges`` is an int in [lo, hi]."""
    for name, lo, hi in ranges:
        int_in_range(getattr(params, name), lo, hi, func, f"params.{name}")


def _q12_19_depth(func, x):
    """The length of the last axis, refused from 4096 on: the int8 kernels' Q12.19 sum of exps (terms of at
    most 1) holds fewer."""
    depth = x.shape[-1]
    if depth >= 1 << 12:
        raise ValueError(f"{func}: the last axis has {depth} entries; the Q12.19 sum of exps holds fewer than 4096")
    return depth


@njit(cache=True, inline="always")
def _diff_q5_26(d, multiplier, left_shift):
    """An input difference ``d <= 0`` in Q5.26: ``MultiplyByQuantizedMultiplierGreaterThanOne``,
    ``SRDHM(int32(d << left_shift), multiplier)`` (ties toward +inf; the shift wraps as int32 does). For
    a ``multiplier >= 2^30`` it is also LOG_SOFTMAX's ``MultiplyByQuantizedMultiplier(d, multiplier,
    left_shift)``: a left shift leaves its right shift 0, and SRDHM cannot saturate."""
    return saturating_rounding_doubling_high_mul_scalar(wrap_scalar(d << left_shift, 32), multiplier)


@njit(cache=True, inline="always")
def _max_and_sum_of_exps(row, multiplier, left_shift, diff_min):
    """An int8 row's max and ``sum exp_on_negative_values(Q5.26(d))`` in Q12.19 over ``d = q - max >=
    diff_min`` (the shared first half of SOFTMAX and LOG_SOFTMAX; int32 wrapping, which fewer than 2^12
    terms of at most 1 never reach)."""
    max_in_row = np.int64(-128)
    for c in range(row.shape[0]):
        max_in_row = max(max_in_row, np.int64(row[c]))
    sum_of_exps = np.int64(0)
    for c in range(row.shape[0]):
        d = np.int64(row[c]) - max_in_row
        if d >= diff_min:
            e = exp_on_negative_values(_diff_q5_26(d, multiplier, left_shift), 5)
            sum_of_exps = wrap_scalar(sum_of_exps + rescale(e, 0, 12), 32)
    return max_in_row, sum_of_exps


@njit(cache=True)
def _softmax_rows(x, depth, multiplier, left_shift, diff_min, out_bits, out_min, out_max, out):
    for r in range(x.shape[0] // depth):
        row = x[r * depth:(r + 1) * depth]
        orow = out[r * depth:(r + 1) * depth]
        max_in_row, sum_of_exps = _max_and_sum_of_exps(row, multiplier, left_shift, diff_min)
        shifted_scale, num_bits_over_unit = get_reciprocal(sum_of_exps, 12)
        exponent = num_bits_over_unit + 31 - out_bits
        for c in range(depth):
            d = np.int64(row[c]) - max_in_row
            if d >= diff_min:
                e = exp_on_negative_values(_diff_q5_26(d, multiplier, left_shift), 5)
                o = rounding_divide_by_pot_scalar(saturating_rounding_doubling_high_mul_scalar(shifted_scale, e), exponent) + out_min
                orow[c] = min(max(o, out_min), out_max)
            else:
                orow[c] = out_min


def softmax(x, *, params, out_dtype=None):
    """TFLite SOFTMAX over the last axis, int8, uint8 or int16 input.

    **int8 input** (see the module text): ``out_dtype`` "int8" (the default; output scale 1/256, zero point
    -128; final shift ``nbu + 23``) or "int16" (``Softmax<int8_t, int16_t>``: scale 1/65536, zero point
    -32768; shift ``nbu + 15``). **uint8 input** (``Softmax<uint8_t, uint8_t>``): the same recipe, the output
    type's minimum 0 added instead of -128 (scale 1/256, zero point 0); ``out_dtype`` "uint8", the default, or
    "int16" (``Softmax<uint8_t, int16_t>``, as for an int8 input). ``MBQM>1(d) = SRDHM(int32(d * 2^shift), multiplier)`` (TFLite's
    ``MultiplyByQuantizedMultiplierGreaterThanOne`` in the default build: one rounding, ties toward +inf);
    the final shift ties away from zero; the sum of exps in Q12.19 cannot overflow for rows of fewer than
    2^12 entries (each term is at most 1). ``params``: a :class:`SoftmaxParams` from
    :func:`tflite_softmax_params`.

    **int16 input** (``reference_ops::SoftmaxInt16``; output int16, scale 1/32768, zero point 0):
    ``params`` an :class:`Int16SoftmaxParams` from :func:`tflite_int16_softmax_params`; see
    :func:`_softmax_int16_rows` for the integer recipe (two 513-entry tables with interpolation, ties of
    the final shift toward +inf, outputs clamped to [0, 32767]).
    """
    func = "softmax"
    x = check_tensor(x, func, "x", allowed=_BYTES + _INT16)
    if x.ndim < 1:
        raise ValueError(f"{func}: x must have rank >= 1")
    if x.dtype == np.int16:
        return _softmax_int16(func, x, params, out_dtype)
    if out_dtype is None:
        out_dtype = x.dtype.name
    if not isinstance(params, SoftmaxParams):
        raise TypeError(f"{func}: params must be a SoftmaxParams for an int8 x, got {type(params).__name__}")
    _check_fields(func, params, (("input_multiplier", 1 << 30, (1 << 31) - 1), ("input_left_shift", 0, 31),
                                 ("diff_min", -(1 << 31), 0)))
    depth = _q12_19_depth(func, x)
    outs = ("int8", "int16") if x.dtype == np.int8 else ("uint8", "int16")
    if out_dtype not in outs:
        raise ValueError(f"{func}: out_dtype must be one of {outs} for a {x.dtype} x, got {out_dtype!r}")
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.dtype(out_dtype))
    _softmax_rows(flat, depth, int(params.input_multiplier), int(params.input_left_shift), int(params.diff_min),
                  8 * out.itemsize, *_out_range(out_dtype), out)
    return out.reshape(x.shape)



# --------------------------------------------------------------------------------------------
# int16 SOFTMAX (reference_ops::SoftmaxInt16: LiteRT, every kernel type, and TFLM)
# --------------------------------------------------------------------------------------------
class Int16SoftmaxPrepare(str, Enum):
    """Whose Prepare derives the int16 SOFTMAX parameters. The kernel, ``reference_ops::SoftmaxInt16``, is
    the same in both engines (and LiteRT's optimized build calls it too); the tables and the multiplier are
    not."""

    LITERT = "litert"
    """LiteRT ``activations.cc`` SoftmaxPrepare: both tables by ``LUTPopulate<int16_t>`` in **double** (the
    deprecated double overload: glibc ``exp``, ``1.0 / (1.0 + x)``); the input multiplier of
    ``double(f32(s_in * beta)) / (10.0 / 65535.0)`` (the product of the two floats is rounded to float32)."""
    TFLM = "tflm"
    """TFLM ``softmax_common.cc`` CalculateSoftmaxParams: both tables by ``LUTPopulate<int16_t>`` in
    **float32** (glibc ``expf``, ``1.0f / (1.0f + x)``); the input multiplier of
    ``double(s_in) * double(beta) / (10.0 / 65535.0)``."""


class Int16LutFunction(str, Enum):
    """The function an int16 softmax table samples."""

    EXP = "exp"
    """``exp(x)`` on [-10, 0] (input scale 10/65535, zero point 32767)."""
    ONE_OVER_ONE_PLUS_X = "one_over_one_plus_x"
    """``1 / (1 + x)`` on [0, 1] (input scale 1/65535, zero point -32768)."""


def _transform(function, v, ftype):
    if function is Int16LutFunction.EXP:
        return libm_f32("expf", v) if ftype is np.float32 else math.exp(v)
    return np.float32(np.float32(1.0) / np.float32(np.float32(1.0) + v)) if ftype is np.float32 else 1.0 / (1.0 + v)


def _round_half_away(v, ftype):
    return ftype(round_half_away_from_zero(float(v)))


def lut_populate_int16(function, *, input_scale, input_zero_point, output_scale, output_zero_point,
                       float_type="float32"):
    """TFLite ``LUTPopulateInt16<FloatT>`` (``kernels/internal/common.h``): the 513 int16 entries of a
    table of ``function`` (an :class:`Int16LutFunction`) read by :func:`lut_lookup_int16`.

    Every step in ``float_type`` ("float32": ``LUTPopulate<int16_t>(float ...)``, TFLM; "float64": the
    double overload, LiteRT), in the source's order: ``x_i = in_min + i * step`` with ``step = (in_max -
    in_min) / 512``; entry ``i < 512`` is ``round(f(x_i) * inv) - round((round((f(x_{i+1}) * inv +
    round(f(x_i) * inv)) / 2) - round(f(x_i + step / 2) * inv)) / 2)`` (the sample lowered by half the
    interpolation error at the middle of its interval), entry 512 ``round(f(in_max) * inv)``, with
    ``inv = 65536 / (out_max - out_min)``; every ``round`` is ``std::round`` (ties away from zero), every
    entry clamped to [-32768, 32767]. The engines' own libm (glibc ``expf``/``exp``) is called.
    """
    func = "lut_populate_int16"
    function = Int16LutFunction(function)
    if float_type not in ("float32", "float64"):
        raise ValueError(f"{func}: float_type must be 'float32' or 'float64', got {float_type!r}")
    ft = np.float32 if float_type == "float32" else float
    s_in, s_out = ft(input_scale), ft(output_scale)
    in_min = ft(s_in * ft(-32768 - int(input_zero_point)))
    in_max = ft(s_in * ft(32767 - int(input_zero_point)))
    out_min = ft(s_out * ft(-32768 - int(output_zero_point)))
    out_max = ft(s_out * ft(32767 - int(output_zero_point)))
    step = ft(ft(in_max - in_min) / ft(512))
    half_step = ft(step / ft(2))
    inv = ft(ft(65536) / ft(out_max - out_min))
    lut = np.empty(513, np.int16)
    for i in range(512):
        x_i = ft(in_min + ft(ft(i) * step))
        val = _transform(function, x_i, ft)
        val_mid = _transform(function, ft(x_i + half_step), ft)
        val_next = _transform(function, ft(in_min + ft(ft(i + 1) * step)), ft)
        sample = _round_half_away(ft(val * inv), ft)
        interp = _round_half_away(ft(ft(ft(val_next * inv) + sample) / ft(2)), ft)
        bias = _round_half_away(ft(ft(interp - _round_half_away(ft(val_mid * inv), ft)) / ft(2)), ft)
        lut[i] = int(min(max(ft(sample - bias), -32768.0), 32767.0))
    lut[512] = int(min(max(_round_half_away(ft(_transform(function, in_max, ft) * inv), ft), -32768.0), 32767.0))
    lut.setflags(write=False)
    return lut


@dataclass(frozen=True, eq=False)
class Int16SoftmaxParams:
    """What the int16 SOFTMAX Prepare derives: ``input_multiplier``/``input_left_shift`` (one input step in
    units of 10/65535, TFLite's convention: shift > 0 is a left shift) and the two 513-entry int16 tables
    ``exp_lut`` (exp on [-10, 0]) and ``one_over_one_plus_x_lut`` (1/(1+x) on [0, 1])."""

    input_multiplier: int
    input_left_shift: int
    exp_lut: np.ndarray
    one_over_one_plus_x_lut: np.ndarray


def tflite_int16_softmax_params(*, input_scale, beta=1.0, prepare="litert"):
    """The int16 SOFTMAX Prepare of LiteRT or TFLM (``prepare``, an :class:`Int16SoftmaxPrepare`):
    ``QuantizeMultiplier(real)`` of ``real = s_in * beta / (10 / 65535)`` (the product as the engine forms
    it) and the tables of :func:`lut_populate_int16` (exp: input scale ``10 / 65535``, zero point 32767;
    1/(1+x): input scale ``1 / 65535``, zero point -32768; both output scale ``2 / 65535``, zero point 0),
    in the engine's float type. ``input_scale`` and ``beta`` are float32 values, as in the model."""
    func = "tflite_int16_softmax_params"
    prepare = Int16SoftmaxPrepare(prepare)
    for name, v in (("input_scale", input_scale), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
            raise TypeError(f"{func}: {name} must be a float, got {type(v).__name__}")
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"{func}: {name} must be finite and positive, got {v}")
    s_in, b = np.float32(input_scale), np.float32(beta)
    product = float(s_in) * float(b) if prepare is Int16SoftmaxPrepare.TFLM else float(np.float32(s_in * b))
    m, shift = quantize_multiplier(product / (10.0 / 65535.0))
    if shift > 30:
        raise ValueError(f"{func}: s_in * beta = {product} needs a left shift {shift} above 30")
    if prepare is Int16SoftmaxPrepare.TFLM:
        ft, exp_s, rec_s, out_s = "float32", np.float32(10.0) / np.float32(65535), np.float32(1.0) / np.float32(65535), \
            np.float32(2.0) / np.float32(65535)
    else:
        ft, exp_s, rec_s, out_s = "float64", 10.0 / 65535, 1.0 / 65535, 2.0 / 65535
    exp_lut = lut_populate_int16(Int16LutFunction.EXP, input_scale=exp_s, input_zero_point=32767,
                                 output_scale=out_s, output_zero_point=0, float_type=ft)
    recip_lut = lut_populate_int16(Int16LutFunction.ONE_OVER_ONE_PLUS_X, input_scale=rec_s, input_zero_point=-32768,
                                   output_scale=out_s, output_zero_point=0, float_type=ft)
    return Int16SoftmaxParams(int(m), int(shift), exp_lut, recip_lut)


@njit(cache=True, inline="always")
def lut_lookup_int16(value, lut):
    """TFLite ``LUTLookup(int16_t, const int16_t*)``: ``lut[256 + (v >> 7)]`` plus the slope to the next
    entry times the low 7 bits, ``(slope * (v & 127) + 64) >> 7`` (ties toward +inf), wrapped to int16."""
    index = 256 + (value >> 7)
    base = np.int64(lut[index])
    delta = ((np.int64(lut[index + 1]) - base) * (value & 0x7F) + 64) >> 7
    return wrap_scalar(base + delta, 16)


@njit(cache=True)
def _softmax_int16_rows(x, depth, multiplier, left_shift, exp_lut, recip_lut, out):
    """``reference_ops::SoftmaxInt16`` per row: ``d = q - max``; ``e = LUT_exp(clamp16(MBQM(d) + 32767))``
    (Q0.15; MBQM the double-rounding ``MultiplyByQuantizedMultiplier``); ``S = sum e`` (int32, wrapping);
    ``h = clz32(S)``; ``r = LUT_recip(clamp16((((S << (h - 1)) + 2^13) >> 14) - 3 * 2^15))``; each output
    ``clamp((e * r + 2^(30 - h)) >> (31 - h), 0, 32767)``."""
    for row in range(x.shape[0] // depth):
        base = row * depth
        max_in_row = np.int64(-32768)
        for c in range(depth):
            max_in_row = max(max_in_row, np.int64(x[base + c]))
        sum_of_exps = np.int64(0)
        for c in range(depth):
            scaled = multiply_by_quantized_multiplier_scalar(np.int64(x[base + c]) - max_in_row, multiplier, left_shift)
            e = lut_lookup_int16(min(max(scaled + 32767, -32768), 32767), exp_lut)
            out[base + c] = e
            sum_of_exps = wrap_scalar(sum_of_exps + e, 32)
        headroom_plus_one = count_leading_zeros32(sum_of_exps)
        shifted_sum = ((np.int64(sum_of_exps) << (headroom_plus_one - 1)) + (1 << 13)) >> 14
        sym = min(max(shifted_sum - ((1 << 15) + (1 << 16)), -32768), 32767)
        reciprocal = lut_lookup_int16(sym, recip_lut)
        right_shift = 31 - headroom_plus_one
        rnd = np.int64(1) << (right_shift - 1)
        for c in range(depth):
            r = wrap_scalar((np.int64(out[base + c]) * reciprocal + rnd) >> right_shift, 32)
            out[base + c] = min(max(r, 0), 32767)


def _check_lut(func, name, lut):
    t = np.asarray(lut)
    if t.dtype != np.int16 or t.shape != (513,):
        raise ValueError(f"{func}: params.{name} must be an int16 array of 513 entries, got {t.dtype} {t.shape}")
    return np.ascontiguousarray(t)


def _softmax_int16(func, x, params, out_dtype):
    if not isinstance(params, Int16SoftmaxParams):
        raise TypeError(f"{func}: params must be an Int16SoftmaxParams for an int16 x, got {type(params).__name__}")
    if out_dtype not in (None, "int16"):
        raise ValueError(f"{func}: an int16 x gives an int16 output (SoftmaxInt16), got out_dtype {out_dtype!r}")
    _check_fields(func, params, (("input_multiplier", 0, (1 << 31) - 1), ("input_left_shift", -31, 30)))
    if x.shape[-1] > 1 << 16:
        raise ValueError(f"{func}: the last axis has {x.shape[-1]} entries; the int32 sum of Q0.15 exps holds "
                         "at most 65536")
    exp_lut = _check_lut(func, "exp_lut", params.exp_lut)
    recip_lut = _check_lut(func, "one_over_one_plus_x_lut", params.one_over_one_plus_x_lut)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.int16)
    _softmax_int16_rows(flat, x.shape[-1], int(params.input_multiplier), int(params.input_left_shift),
                        exp_lut, recip_lut, out)
    return out.reshape(x.shape)


# --------------------------------------------------------------------------------------------
# LOG_SOFTMAX (LiteRT reference_integer_ops::LogSoftmax; TFLM the same)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogSoftmaxParams:
    """What ``PreprocessLogSoftmaxScalingExp(1.0, s_in, 5)`` derives: the Q5.26 input rescaling, the
    reverse rescaling (``reverse_scaling_right_shift >= 0``) and ``diff_min``."""

    input_multiplier: int
    input_left_shift: int
    reverse_scaling_divisor: int
    reverse_scaling_right_shift: int
    diff_min: int


@names_its_errors
def tflite_log_softmax_params(*, input_scale):
    """LiteRT ``LogSoftmaxPrepare`` / TFLM ``CalculateOpData`` (int8, beta 1): the softmax scaling of
    :func:`tflite_softmax_params`, then ``QuantizeMultiplierSmallerThanOneExp(2^(31 - shift) / multiplier)``
    (double; refused unless the quotient is in (0, 1), as TFLite's CHECK aborts)."""
    sp = tflite_softmax_params(input_scale=input_scale, beta=1.0)
    real = float(1 << (31 - sp.input_left_shift)) / float(sp.input_multiplier) if sp.input_left_shift <= 31 else 0.0
    if not 0.0 < real < 1.0:
        raise ValueError(f"tflite_log_softmax_params: the reverse scaling {real} must be in (0, 1) "
                         "(QuantizeMultiplierSmallerThanOneExp)")
    m, shift = quantize_multiplier(real)
    return LogSoftmaxParams(sp.input_multiplier, sp.input_left_shift, int(m), -int(shift), sp.diff_min)


@njit(cache=True)
def _log_softmax_rows(x, depth, multiplier, shift, rev_multiplier, rev_shift, diff_min, out):
    for r in range(x.shape[0] // depth):
        row = x[r * depth:(r + 1) * depth]
        orow = out[r * depth:(r + 1) * depth]
        max_in_row, sum_of_exps = _max_and_sum_of_exps(row, multiplier, shift, diff_min)
        log_sum = log_x_for_x_greater_than_or_equal_to_1(sum_of_exps, 12, 5)
        shifted_log_sum = wrap_scalar(log_sum - (1 << 31), 32)
        adjusted_diff_min = max(diff_min - 1,
                                multiply_by_quantized_multiplier_scalar(shifted_log_sum, rev_multiplier, -rev_shift))
        for c in range(depth):
            d = np.int64(row[c]) - max_in_row
            if d > adjusted_diff_min:
                q5 = _diff_q5_26(d, multiplier, shift)
                o = rounding_divide_by_pot_scalar(wrap_scalar(q5 - log_sum, 32), 22) + 127
                orow[c] = min(max(o, -128), 127)
            else:
                orow[c] = -128


def log_softmax(x, *, params):
    """TFLite int8 LOG_SOFTMAX over the last axis (output scale 16/256, zero point 127).

    Per row: ``d = q - max``; ``S = sum exp_on_negative_values(MBQM(d))`` in Q12.19 over ``d >= diff_min``;
    ``L = log_x_for_x_greater_than_or_equal_to_1(S)`` in Q5.26; entries with ``d >
    max(diff_min - 1, MBQM(L - 2^31, reverse_multiplier, -reverse_shift))`` give
    ``clamp(RoundingDivideByPOT(MBQM(d) - L, 22) + 127)`` (ties away from zero), the others -128.
    MBQM is ``MultiplyByQuantizedMultiplier`` (double rounding). ``params`` from
    :func:`tflite_log_softmax_params`.
    """
    func = "log_softmax"
    x = check_tensor(x, func, "x", allowed=_INT8)
    if x.ndim < 1:
        raise ValueError(f"{func}: x must have rank >= 1")
    if not isinstance(params, LogSoftmaxParams):
        raise TypeError(f"{func}: params must be a LogSoftmaxParams, got {type(params).__name__}")
    _check_fields(func, params, (("input_multiplier", 1 << 30, (1 << 31) - 1), ("input_left_shift", 0, 30),
                                 ("reverse_scaling_divisor", 0, (1 << 31) - 1), ("reverse_scaling_right_shift", 0, 31),
                                 ("diff_min", -(1 << 31), 0)))
    depth = _q12_19_depth(func, x)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.int8)
    _log_softmax_rows(flat, depth, int(params.input_multiplier), int(params.input_left_shift),
                      int(params.reverse_scaling_divisor), int(params.reverse_scaling_right_shift),
                      int(params.diff_min), out)
    return out.reshape(x.shape)


# --------------------------------------------------------------------------------------------
# LiteRT's optimized SOFTMAX / LOG_SOFTMAX (the default interpreter: the XNNPACK delegate takes no int8 softmax)
# --------------------------------------------------------------------------------------------
def optimized_softmax_table(*, input_scale, beta=1.0):
    """LiteRT ``PopulateSoftmaxLookupTable``: ``table[255 - v] = expf(f32(-s_in * beta) * v)`` for v in 0..255
    (float32, glibc ``expf``): ``exp`` of ``v`` input steps below the row maximum."""
    func = "optimized_softmax_table"
    for name, v in (("input_scale", input_scale), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
            raise TypeError(f"{func}: {name} must be a float, got {type(v).__name__}")
        float32_scale(v, func, name)
    scale = np.float32(-np.float32(input_scale) * np.float32(beta))
    table = np.empty(256, np.float32)
    for v in range(256):
        table[255 - v] = libm_f32("expf", np.float32(scale * np.float32(v)))
    return table


def _optimized_args(func, x, table, output_scale, output_zero_point, out_dtype, allowed=_BYTES):
    x = check_tensor(x, func, "x", allowed=allowed)
    if out_dtype is None:
        out_dtype = x.dtype.name
    if x.ndim < 1:
        raise ValueError(f"{func}: x must have rank >= 1")
    t = np.asarray(table)
    if t.dtype != np.float32 or t.shape != (256,):
        raise ValueError(f"{func}: table must be a float32 array of 256 entries, got {t.dtype} {t.shape}")
    if t[255] != 1 or not np.all((t >= 0) & (t <= 1)):
        raise ValueError(f"{func}: table must be an optimized_softmax_table: exp(-v * steps), 1 at index 255, "
                         "every entry in [0, 1]")
    outs = ("int8", "int16") if x.dtype == np.int8 else ("uint8", "int16")
    if out_dtype not in outs:
        raise ValueError(f"{func}: out_dtype must be one of {outs} for a {x.dtype} x, got {out_dtype!r}")
    if isinstance(output_scale, bool) or not isinstance(output_scale, (int, float, np.floating, np.integer)):
        raise TypeError(f"{func}: output_scale must be a float, got {type(output_scale).__name__}")
    s_out = float32_scale(output_scale, func, "output_scale")
    zo = zero_point(output_zero_point, np.dtype(out_dtype), func, "output_zero_point")
    return x, np.ascontiguousarray(t), s_out, zo, out_dtype


@njit(cache=True)
def _optimized_softmax_rows(x, depth, table, output_scale, zo, lo, hi, add_half, out):
    for r in range(x.shape[0] // depth):
        row = x[r * depth:(r + 1) * depth]
        max_val = np.int64(-128)
        for c in range(depth):
            max_val = max(max_val, np.int64(row[c]))
        sum_exp = np.float32(0.0)
        for c in range(depth):  # sequential float32 sum, as compiled (no reassociation)
            sum_exp = np.float32(sum_exp + table[255 - max_val + np.int64(row[c])])
        inv_sum_exp = np.float32(np.float32(1.0) / np.float32(sum_exp * output_scale))
        for c in range(depth):
            prob = np.float32(table[255 - max_val + np.int64(row[c])] * inv_sum_exp)
            if add_half:  # int32_t(prob + 0.5f): the float32 sum truncated, no zero point
                q = np.int64(np.float32(prob + np.float32(0.5)))
            else:
                q = np.int64(round_half_away_from_zero(np.float64(prob))) + zo
            out[r * depth + c] = min(max(q, lo), hi)


def optimized_softmax(x, *, table, output_scale, output_zero_point, out_dtype=None):
    """LiteRT ``optimized_ops::Softmax`` (int8 or uint8 input, x86 build): float32 throughout.

    Per row: ``e_j = table[255 - max + q_j]`` (:func:`optimized_softmax_table`), ``S = e_0 + e_1 + ...``
    summed in order in float32, ``inv = f32(1 / f32(S * s_out))``, ``out_j = clamp(std::round(f32(e_j *
    inv)) + zo)``: ties away from zero; the output zero point IS used (the reference adds the type's
    minimum instead). ``out_dtype`` "int8" or "int16" for an int8 x; "uint8" or "int16" for a uint8 x. A uint8
    output's ``QuantizeSoftmaxOutput<uint8_t>`` (every build but aarch64) is ``int32_t(f32(p + 0.5f))``: the float32
    sum truncated, and no zero point added (LiteRT's Prepare checks none for a uint8 output). None: x's type.
    """
    func = "optimized_softmax"
    x, t, s_out, zo, out_dtype = _optimized_args(func, x, table, output_scale, output_zero_point, out_dtype)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.dtype(out_dtype))
    _optimized_softmax_rows(flat, x.shape[-1], t, s_out, zo, *_out_range(out_dtype), out_dtype == "uint8", out)
    return out.reshape(x.shape)


def optimized_log_softmax(x, *, table, input_scale, output_scale, output_zero_point):
    """LiteRT ``optimized_ops::LogSoftmax`` (int8): per row ``S = sum e_j`` as in :func:`optimized_softmax`,
    ``L = logf(S)``, ``k = f32(s_in / s_out)``, ``p = f32(f32(f32(s_in * max) + L) / s_out)``,
    ``out_j = clamp(rint(f32(f32(k * q_j) - p)) + zo)``: ties to even (``std::rint``)."""
    func = "optimized_log_softmax"
    x, t, s_out, zo, _ = _optimized_args(func, x, table, output_scale, output_zero_point, "int8", _INT8)
    if isinstance(input_scale, bool) or not isinstance(input_scale, (int, float, np.floating, np.integer)) \
            or not math.isfinite(input_scale) or input_scale <= 0:
        raise ValueError(f"{func}: input_scale must be a finite positive float, got {input_scale!r}")
    s_in = np.float32(input_scale)
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1]).astype(np.int64)
    out = np.empty(rows.shape, np.int8)
    k = np.float32(s_in / s_out)
    for r, row in enumerate(rows):  # one logf per row: the prepare-time libm call keeps glibc's rounding
        m = int(row.max())
        total = np.float32(0.0)
        for q in row:
            total = np.float32(total + t[255 - m + int(q)])
        precomputed = np.float32(np.float32(np.float32(s_in * np.float32(m)) + libm_f32("logf", total)) / s_out)
        vals = np.rint((k * row.astype(np.float32)).astype(np.float32) - precomputed).astype(np.int64) + zo
        out[r] = np.clip(vals, -128, 127)
    return out.reshape(x.shape)


@names_its_errors
def float_log_softmax(x):
    """TFLite's float32 ``reference_ops::LogSoftmax`` (TFLM and LiteRT's reference kernel) over the last axis.

    Per row, in IEEE float32 and the C library's own ``expf`` / ``logf`` (glibc's, not correctly rounded, as the
    engines call them): ``m = max(row)``; ``S = sum_j expf(x_j - m)``, summed left to right from 0;
    ``out_j = (x_j - m) - logf(S)``, the two subtractions rounded one at a time. NaNs come out as x86 SSE makes them
    (``inf - inf`` the default NaN 0xFFC00000, an operand's NaN propagated, the first operand's first); a NaN is never
    the row's maximum (``std::max``); no saturation. LiteRT's optimized kernel (Eigen's vectorized exp and
    packet-order sum) rounds otherwise and is not this function.
    """
    x = check_tensor(x, "float_log_softmax", "x", allowed=(np.dtype(np.float32),))
    with np.errstate(invalid="ignore", over="ignore"):
        return _float_log_softmax(x)


def _float_log_softmax(x):
    if x.ndim == 0:
        raise ValueError("float_log_softmax: x must have at least one axis (the classes), got a scalar")
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1]) if x.shape[-1] else x.reshape(0, 0)
    out = np.empty(rows.shape, np.float32)
    lowest = np.float32(np.finfo(np.float32).min)
    for r, row in enumerate(rows):
        m = lowest
        for v in row:  # std::max(max, v): a NaN never replaces the running maximum
            m = v if m < v else m
        total = np.float32(0.0)
        for v in row:
            total = _sse_add(total, libm_f32("expf", np.float32(v - m)))
        log_sum = libm_f32("logf", total)
        out[r] = np.float32(row - m) - log_sum
    return out.reshape(x.shape)


def _sse_add(a, b):
    """``a + b`` as x86 ``addss`` computes it, NaNs included: a NaN ``a`` is the result, else a NaN ``b`` (numpy's
    scalar add may take its operands in the other order, which changes which NaN comes out)."""
    if a != a:
        return a
    if b != b:
        return b
    return np.float32(a + b)
