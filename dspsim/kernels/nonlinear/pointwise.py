"""int8 nonlinear activations: lookup tables (LiteRT, TFLM, XNNPACK), gemmlowp fixed point (TFLM), HARD_SWISH,
PRELU and RSQRT.

Three recipes, by engine (docs/engines.md, "Nonlinear operators"):

* **Lookup tables filled with float math at prepare time.** LiteRT's ``LUTPopulate`` (kernels/internal/
  common.h; LOGISTIC, TANH, ELU, EXP) and TFLM's ``PopulateLookupTable`` (micro/kernels/elu.cc): for each
  code ``q``, ``y = f(f32(s_in * (q - zi)))`` in float32 (glibc ``expf``/``tanhf``/``expm1f``), then
  ``clamp(zo + TfLiteRound(f32(y * f32(1 / s_out))))`` (ties away from zero). XNNPACK's unary
  reference (src/reference/unary-elementwise.cc) dequantizes as ``f32(f32(q - zi) * s_in)`` and
  quantizes as ``nearbyint(f32(y * f32(1/s_out) + zo))`` (ties to even), its sigmoid computed in double.
  :func:`tflite_lut_table` and :func:`xnnpack_lut_table` build the table once; :func:`lookup_table` runs it.
* **gemmlowp fixed point (TFLM LOGISTIC and TANH).** ``reference_integer_ops::Logistic/Tanh``: the input
  difference rescaled to Q4.27 by ``MultiplyByQuantizedMultiplier``, gemmlowp ``logistic``/``tanh``
  (:func:`dspsim.fixedpoint.logistic_q`, :func:`dspsim.fixedpoint.tanh_q`), and a rounding shift to the
  output: 2^-8 steps + (-128) for LOGISTIC, 2^-7 steps for TANH, whatever the output tensor's scale.
* **int16 fixed point (HARD_SWISH, both engines)**, **two multipliers (PRELU)** and **a Newton-Raphson
  inverse square root (RSQRT**, :func:`dspsim.fixedpoint.inv_sqrt_quantized_multiplier_exp`).

The float math of the tables calls the C library (``libm``) through ctypes: the engines call the same
functions, and these are not correctly rounded, so no other implementation would do.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
from numba import njit

from ...fixedpoint import (
    rounding_divide_by_pot_scalar, inv_sqrt_quantized_multiplier_exp, logistic_q,
    multiply_by_quantized_multiplier_scalar, quantize_multiplier, saturating_rounding_doubling_high_mul16_scalar,
    tanh_q, tflite_round,
)
from ..._errors import names_its_errors
from .._plan import flat_operand
from ...simd.add_lanes import USE_LANES
from ...simd.lut_lanes import lookup_lanes, lut_rows
from .._checks import float32_scale
from .._checks import check_spec, check_tensor, int_in_range, zero_point

_INT8 = (np.dtype(np.int8),)
_BYTES = (np.dtype(np.int8), np.dtype(np.uint8))
_PRELU_TYPES = (np.dtype(np.int8), np.dtype(np.int16))  # the lookup tables' codes: int8, or uint8 (LiteRT LUTPopulate<uint8_t>)
_LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
for _name in ("expf", "tanhf", "expm1f", "logf"):
    getattr(_LIBM, _name).restype = ctypes.c_float
    getattr(_LIBM, _name).argtypes = (ctypes.c_float,)
_LIBM.exp.restype = ctypes.c_double
_LIBM.exp.argtypes = (ctypes.c_double,)
_f32 = np.float32


def libm_f32(name, x):
    """glibc's float32 ``name`` ("expf", "tanhf", "expm1f", "logf") of ``x``: the engines' own math, which
    is not correctly rounded (so no numpy function can stand in for it)."""
    return _f32(getattr(_LIBM, name)(float(_f32(x))))


class LutFunction(str, Enum):
    """The float function a lookup table samples, spelled as the engine's Prepare spells it (float32
    unless stated)."""

    LOGISTIC = "logistic"
    """LiteRT LOGISTIC: ``1.0f / (1.0f + expf(-x))``."""
    TANH = "tanh"
    """LiteRT TANH, XNNPACK tanh: ``tanhf(x)``."""
    ELU = "elu"
    """LiteRT ELU: ``x < 0 ? expm1f(x) : x``."""
    TFLM_ELU = "tflm_elu"
    """TFLM ELU: ``x < 0 ? expf(x) - 1.0f : x``."""
    EXP = "exp"
    """LiteRT EXP: ``expf(x)``."""
    XNNPACK_SIGMOID = "xnnpack_sigmoid"
    """XNNPACK sigmoid: ``x > 100 ? 1 : x < -100 ? 0 : float(e / (1 + e))``, ``e = exp(double(x))``."""
    XNNPACK_ELU = "xnnpack_elu"
    """XNNPACK elu (alpha 1): ``x < 0 ? 1.0f * expm1f(x) : x``."""


def _transform(function, x):
    x = float(_f32(x))
    if function is LutFunction.LOGISTIC:
        return _f32(_f32(1.0) / _f32(_f32(1.0) + _f32(_LIBM.expf(-x))))
    if function is LutFunction.TANH:
        return _f32(_LIBM.tanhf(x))
    if function is LutFunction.ELU or function is LutFunction.XNNPACK_ELU:
        return _f32(_LIBM.expm1f(x)) if x < 0 else _f32(x)
    if function is LutFunction.TFLM_ELU:
        return _f32(_f32(_LIBM.expf(x)) - _f32(1.0)) if x < 0 else _f32(x)
    if function is LutFunction.EXP:
        return _f32(_LIBM.expf(x))
    if x > 100:  # XNNPACK_SIGMOID
        return _f32(1.0)
    if x < -100:
        return _f32(0.0)
    e = _LIBM.exp(x)
    return _f32(e / (1.0 + e))


def _lut_args(func, function, input_scale, input_zero_point, output_scale, output_zero_point, dtype=np.int8):
    dt = np.dtype(dtype)
    if dt not in _BYTES:
        raise ValueError(f"{func}: dtype must be int8 or uint8, got {dt}")
    try:
        fn = LutFunction(function)
    except ValueError:
        choices = [f.value for f in LutFunction]
        raise ValueError(f"{func}: function must be one of {choices}, got {function!r}") from None
    scales = []
    for name, s in (("input_scale", input_scale), ("output_scale", output_scale)):
        if isinstance(s, bool) or not isinstance(s, (int, float, np.floating, np.integer)):
            raise TypeError(f"{func}: {name} must be a float, got {type(s).__name__}")
        scales.append(float32_scale(s, func, name))
    zi = zero_point(input_zero_point, dt, func, "input_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    return fn, scales[0], zi, scales[1], zo


def _codes(dtype):
    """(dtype, min, max) of a table's codes."""
    dt = np.dtype(dtype)
    return dt, int(np.iinfo(dt).min), int(np.iinfo(dt).max)


@names_its_errors
def tflite_lut_table(function, *, input_scale, input_zero_point, output_scale, output_zero_point, dtype="int8"):
    """LiteRT ``LUTPopulate<int8_t>`` (``<uint8_t>`` for ``dtype`` "uint8") / TFLM ``PopulateLookupTable``: the
    table of ``function`` over the codes of ``dtype``.

    For each code ``q`` (table index ``q - min``: ``q + 128`` for int8, ``q`` for uint8): ``x = f32(s_in * (q -
    zi))``, ``y = f(x)`` in float32 (:class:`LutFunction`), ``code = clamp(int32(f32(TfLiteRound(f32(y * f32(1 /
    s_out))) + zo)), min, max)``: ties away from zero, saturating at the type's range. A value beyond the int32
    range (undefined behaviour in C++) saturates too: LiteRT 2.3's x86 build gives 127 there (measured, golden
    ``nlties_exp_overflow``).

    Returns a ``dtype`` array of 256 entries for :func:`lookup_table`.
    """
    fn, s_in, zi, s_out, zo = _lut_args("tflite_lut_table", function, input_scale, input_zero_point, output_scale,
                                        output_zero_point, dtype)
    dt, lo, hi = _codes(dtype)
    inverse_scale = _f32(_f32(1.0) / s_out)
    table = np.empty(256, dt)
    for q in range(lo, hi + 1):
        y = _f32(_transform(fn, _f32(s_in * _f32(q - zi))) * inverse_scale)
        r = float(_f32(_f32(tflite_round(float(y))) + _f32(zo))) if math.isfinite(y) else float(y)
        table[q - lo] = int(min(max(r, float(lo)), float(hi)))  # saturates, as measured (tests/golden nlties_exp_*)
    return table


def xnnpack_lut_table(function, *, input_scale, input_zero_point, output_scale, output_zero_point, dtype="int8"):
    """XNNPACK's int8 (qs8) or uint8 (qu8) lookup table of a unary operator (``init_lut_op_with_config`` over the
    reference ukernel): ``x = f32(f32(q - zi) * s_in)``, ``y = f(x)`` (:class:`LutFunction`), ``code =
    clamp(nearbyint(f32(f32(y * f32(1 / s_out)) + zo)))``: ties to even, saturating at the type's range (NaN -> 0).

    Returns a ``dtype`` array of 256 entries (index ``q - min``) for :func:`lookup_table`.
    """
    fn, s_in, zi, s_out, zo = _lut_args("xnnpack_lut_table", function, input_scale, input_zero_point, output_scale,
                                        output_zero_point, dtype)
    dt, lo, hi = _codes(dtype)
    inverse_scale = _f32(_f32(1.0) / s_out)
    table = np.empty(256, dt)
    with np.errstate(over="ignore", invalid="ignore"):
        for q in range(lo, hi + 1):
            y = _f32(_f32(_transform(fn, _f32(_f32(q - zi) * s_in)) * inverse_scale) + _f32(zo))
            v = 0.0 if math.isnan(y) else float(np.rint(y))
            table[q - lo] = int(min(max(v, float(lo)), float(hi)))
    return table


@njit(cache=True)
def _lookup(x, table, offset, rows, out):
    i0 = 0
    if USE_LANES:  # 32 codes per step in byte vectors (AVX2, jit only): the same values
        i0 = lookup_lanes(x, rows, out)
    for i in range(i0, x.shape[0]):
        out[i] = table[np.int64(x[i]) + offset]


def lookup_table(x, table):
    """``table[q - min]`` for every int8 or uint8 code ``q`` of ``x`` (LiteRT ``LookupTable``): no arithmetic,
    so no rounding or saturation beyond what built the table (:func:`tflite_lut_table`,
    :func:`xnnpack_lut_table`). ``table``: 256 entries of ``x``'s type."""
    x = check_tensor(x, "lookup_table", "x", allowed=_BYTES)
    return lookup_table_plan(x.shape, x.dtype, table)(x)


def lookup_table_plan(shape, dtype, table):
    """:func:`lookup_table` prepared for int8 or uint8 codes of ``shape`` (the table checked once); returns the lean
    ``run(x)``."""
    func = "lookup_table"
    shape, dt = check_spec(func, "x", shape, dtype, _BYTES)
    t = np.asarray(table)
    if t.dtype != dt or t.shape != (256,):
        article = "an" if dt == np.int8 else "a"
        raise ValueError(f"{func}: table must be {article} {dt} array of 256 entries (the codes' type), got {t.dtype} "
                         f"{t.shape}")
    t, size, offset = np.ascontiguousarray(t), math.prod(shape), -int(np.iinfo(dt).min)
    rows = lut_rows(t)

    def run(x):
        out = np.empty(size, dt)
        _lookup(np.ravel(x), t, offset, rows, out)
        return out.reshape(shape)

    return run


# --------------------------------------------------------------------------------------------
# TFLM LOGISTIC / TANH: gemmlowp fixed point
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GemmlowpInputParams:
    """What TFLM's LOGISTIC/TANH Prepare derives from the input scale: the Q4.27 rescaling
    ``(input_multiplier, input_left_shift)`` and ``input_range_radius`` (beyond it the output saturates)."""

    input_multiplier: int
    input_left_shift: int
    input_range_radius: int


@names_its_errors
def tflm_gemmlowp_input_params(input_scale):
    """TFLM ``CalculateArithmeticOpDataLogistic`` / tanh ``CalculateArithmeticOpData`` for int8.

    ``q, shift = frexp(double(s_in) * 2^27)``, ``multiplier = int32(TfLiteRound(q * 2^31))`` (ties away
    from zero), ``radius = floor(15 * 2^27 / 2^shift)`` (``CalculateInputRadius(4, shift, 31)``).
    A scale below 2^-28 (negative shift: ``1LL << shift`` is undefined behaviour in TFLM) is refused.
    """
    func = "tflm_gemmlowp_input_params"
    if isinstance(input_scale, bool) or not isinstance(input_scale, (int, float, np.floating, np.integer)):
        raise TypeError(f"{func}: input_scale must be a float, got {type(input_scale).__name__}")
    q, shift = math.frexp(float(float32_scale(input_scale, func, "input_scale")) * float(1 << 27))
    if not 0 <= shift <= 30:
        raise ValueError(f"{func}: input_scale {input_scale} gives the left shift {shift}; TFLM supports 0..30")
    m = int(math.floor(q * 2.0**31 + 0.5))
    if m == 1 << 31:  # static_cast<int32_t>(2^31) on x86
        m = -(1 << 31)
    radius = math.floor(15.0 * 2.0**27 / 2.0**shift)
    return GemmlowpInputParams(m, shift, radius)


@njit(cache=True)
def _tflm_sigmoid(x, zi, radius, multiplier, shift, is_tanh, out):
    for i in range(x.shape[0]):
        v = np.int64(x[i]) - zi
        if v <= -radius:
            out[i] = -128
        elif v >= radius:
            out[i] = 127
        else:
            q4 = multiply_by_quantized_multiplier_scalar(v, multiplier, shift)
            if is_tanh:
                o = rounding_divide_by_pot_scalar(tanh_q(q4, 4), 24)
            else:
                o = rounding_divide_by_pot_scalar(logistic_q(q4, 4), 23) - 128
            out[i] = min(max(o, -128), 127)


def _tflm_sigmoid_family(func, is_tanh, x, input_zero_point, input_multiplier, input_left_shift, input_range_radius):
    x = check_tensor(x, func, "x", allowed=_INT8)
    zi = zero_point(input_zero_point, np.int8, func, "input_zero_point")
    for name, v, lo, hi in (("input_multiplier", input_multiplier, 0, (1 << 31) - 1),
                            ("input_left_shift", input_left_shift, 0, 30),
                            ("input_range_radius", input_range_radius, 0, (1 << 31) - 1)):
        int_in_range(v, lo, hi, func, name)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.int8)
    _tflm_sigmoid(flat, zi, int(input_range_radius), int(input_multiplier), int(input_left_shift), is_tanh, out)
    return out.reshape(x.shape)


def tflm_logistic(x, *, input_zero_point, input_multiplier, input_left_shift, input_range_radius):
    """TFLM int8 LOGISTIC (``reference_integer_ops::Logistic``), output scale 1/256 and zero point -128.

    ``v = q - zi``; ``v <= -radius`` -> -128, ``v >= radius`` -> 127; else ``a = MBQM(v, multiplier,
    left_shift)`` (Q4.27; double rounding), ``out = clamp(RoundingDivideByPOT(logistic_q(a), 23) - 128)``
    (ties away from zero). Parameters from :func:`tflm_gemmlowp_input_params`.
    """
    return _tflm_sigmoid_family("tflm_logistic", False, x, input_zero_point, input_multiplier, input_left_shift,
                                input_range_radius)


def tflm_tanh(x, *, input_zero_point, input_multiplier, input_left_shift, input_range_radius):
    """TFLM int8 TANH (``reference_integer_ops::Tanh``): output in steps of 1/128 with zero point 0,
    whatever the output tensor says.

    As :func:`tflm_logistic` with ``out = clamp(RoundingDivideByPOT(tanh_q(a), 24))`` (ties away from zero).
    """
    return _tflm_sigmoid_family("tflm_tanh", True, x, input_zero_point, input_multiplier, input_left_shift,
                                input_range_radius)


# --------------------------------------------------------------------------------------------
# HARD_SWISH (LiteRT reference and TFLM: the same int16 fixed point)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HardSwishParams:
    """TFLite ``HardSwishParams``: zero points and two int16 Q15 multipliers with their exponents."""

    input_zero_point: int
    output_zero_point: int
    output_multiplier_fixedpoint_int16: int
    output_multiplier_exponent: int
    reluish_multiplier_fixedpoint_int16: int
    reluish_multiplier_exponent: int


def _downscale_int32_to_int16_multiplier(m):
    """TFLite ``DownScaleInt32ToInt16Multiplier``: ``(m + 2^15) >> 16``, 32767 from ``2^31 - 1 - 2^15`` up."""
    return 32767 if m >= (1 << 31) - 1 - (1 << 15) else (m + (1 << 15)) >> 16


@names_its_errors
def tflite_hard_swish_params(*, input_scale, input_zero_point, output_scale, output_zero_point, dtype="int8"):
    """LiteRT / TFLM ``HardSwishPrepare`` (int8; LiteRT also uint8, ``dtype``: the zero points' type): ``hires =
    f32(s_in / 128)``, output multiplier ``f32(hires / s_out)`` and reluish multiplier ``f32(hires / f32(3 /
    32768))``, each through ``QuantizeMultiplier`` (double) and ``DownScaleInt32ToInt16Multiplier``. An output
    multiplier exponent above 0 (``s_in / s_out >= 128``) is refused, as both engines do."""
    func = "tflite_hard_swish_params"
    _, s_in, zi, s_out, zo = _lut_args(func, "tanh", input_scale, input_zero_point, output_scale, output_zero_point,
                                       dtype)
    hires = _f32(_f32(1.0 / 128.0) * s_in)
    m_out, e_out = quantize_multiplier(float(_f32(hires / s_out)))
    m_rel, e_rel = quantize_multiplier(float(_f32(hires / _f32(3.0 / 32768.0))))
    if e_out > 0:
        raise ValueError(f"{func}: the output multiplier exponent is {e_out} > 0 (input_scale / output_scale "
                         "must be below 128)")
    return HardSwishParams(zi, zo, _downscale_int32_to_int16_multiplier(m_out), e_out,
                           _downscale_int32_to_int16_multiplier(m_rel), e_rel)


@njit(cache=True, inline="always")
def _saturate16(v):
    return min(max(v, np.int64(-32768)), np.int64(32767))


@njit(cache=True)
def _hard_swish(x, zi, zo, m_out, e_out, m_rel, e_rel, lo, hi, out):
    for i in range(x.shape[0]):
        hires = (np.int64(x[i]) - zi) * 128
        preshift = saturating_rounding_doubling_high_mul16_scalar(hires, m_out)
        reluish = hires
        if e_rel > 0:
            reluish = _saturate16(reluish << (e_rel - 1))
        reluish = saturating_rounding_doubling_high_mul16_scalar(reluish, m_rel)
        if e_rel > 0:
            reluish = _saturate16(reluish << 1)
        if e_rel < 0:
            reluish = rounding_divide_by_pot_scalar(reluish, -e_rel)
        reluish = (reluish + 32768) >> 1
        p = reluish * preshift  # reluish >= 0: the -32768 * -32768 overflow cannot occur
        prod = p // 32768 if p >= 0 else -((-p) // 32768)  # truncating division, no rounding
        o = rounding_divide_by_pot_scalar(prod, -e_out) + zo
        out[i] = min(max(o, lo), hi)


def hard_swish(x, *, params):
    """TFLite int8 or uint8 HARD_SWISH (``reference_ops::HardSwish<T>``): ``x * relu6(x + 3) / 6`` in int16 fixed
    point, clamped to ``T`` at the end.

    ``h = (q - zi) * 128``; ``pre = SRDHM16(h, m_out)``; the reluish value ``r`` = ``h`` scaled by
    ``m_rel * 2^e_rel`` (saturating left shifts around an SRDHM16 when ``e_rel > 0``, a
    RoundingDivideByPOT when ``e_rel < 0``), then ``(r + 2^15) >> 1`` (from [-1, 1] to [0, 1]);
    ``out = clamp(zo + RoundingDivideByPOT(SaturatingDoublingHighMul(r, pre), -e_out))`` where the last
    high multiply truncates toward zero (no rounding) and SRDHM16 ties toward +inf. ``params``: a
    :class:`HardSwishParams` from :func:`tflite_hard_swish_params`.
    """
    x = check_tensor(x, "hard_swish", "x", allowed=_BYTES)
    return hard_swish_plan(x.shape, x.dtype, params=params)(x)


def hard_swish_plan(shape, dtype, *, params):
    """:func:`hard_swish` prepared for int8 or uint8 codes of ``shape`` (``params`` checked once); returns the lean
    ``run(x)``."""
    func = "hard_swish"
    shape, dt = check_spec(func, "x", shape, dtype, _BYTES)
    if not isinstance(params, HardSwishParams):
        raise TypeError(f"{func}: params must be a HardSwishParams, got {type(params).__name__}")
    zi = zero_point(params.input_zero_point, dt, func, "params.input_zero_point")
    zo = zero_point(params.output_zero_point, dt, func, "params.output_zero_point")
    for name, v, lo, hi in (("output_multiplier_fixedpoint_int16", params.output_multiplier_fixedpoint_int16, 0, 32767),
                            ("output_multiplier_exponent", params.output_multiplier_exponent, -31, 0),
                            ("reluish_multiplier_fixedpoint_int16", params.reluish_multiplier_fixedpoint_int16, 0,
                             32767),
                            ("reluish_multiplier_exponent", params.reluish_multiplier_exponent, -31, 15)):
        int_in_range(v, lo, hi, func, f"params.{name}")
    args = (zi, zo, int(params.output_multiplier_fixedpoint_int16), int(params.output_multiplier_exponent),
            int(params.reluish_multiplier_fixedpoint_int16), int(params.reluish_multiplier_exponent),
            int(np.iinfo(dt).min), int(np.iinfo(dt).max))
    size = math.prod(shape)

    def run(x):
        out = np.empty(size, dt)
        _hard_swish(np.ravel(x), *args, out)
        return out.reshape(shape)

    return run


# --------------------------------------------------------------------------------------------
# PRELU (LiteRT reference and TFLM)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PreluParams:
    """TFLite ``PreluParams``: zero points and the two ``(multiplier, shift)`` pairs."""

    input_zero_point: int
    alpha_zero_point: int
    output_zero_point: int
    multiplier_1: int
    shift_1: int
    multiplier_2: int
    shift_2: int


@names_its_errors
def tflite_prelu_params(*, input_scale, input_zero_point, alpha_scale, alpha_zero_point, output_scale,
                        output_zero_point, dtype="int8"):
    """LiteRT / TFLM ``PreluPrepare``: ``QuantizeMultiplier`` (double) of ``f32(s_in / s_out)`` and of
    ``f32(f32(s_in * s_alpha) / s_out)`` (the quotients are float32 in both engines). ``dtype``: the input's and
    output's, int8 or int16 (the alpha is int8 either way: TFLM's ``PreluPrepare`` requires it for int16)."""
    func = "tflite_prelu_params"
    dt = np.dtype(dtype)
    if dt not in _PRELU_TYPES:
        raise ValueError(f"{func}: dtype must be int8 or int16, got {dt}")
    s_in, s_a, s_out = (float32_scale(v, func, n) for v, n in ((input_scale, "input_scale"),
                                                               (alpha_scale, "alpha_scale"),
                                                               (output_scale, "output_scale")))
    zi = zero_point(input_zero_point, dt, func, "input_zero_point")
    za = zero_point(alpha_zero_point, np.int8, func, "alpha_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    m1, sh1 = quantize_multiplier(float(_f32(s_in / s_out)))
    m2, sh2 = quantize_multiplier(float(_f32(_f32(s_in * s_a) / s_out)))
    for m, sh in ((m1, sh1), (m2, sh2)):
        if sh > 30:
            raise ValueError(f"{func}: a multiplier needs the left shift {sh} > 30")
    return PreluParams(zi, za, zo, m1, sh1, m2, sh2)


@njit(cache=True)
def _prelu(x, alpha, zi, za, zo, m1, s1, m2, s2, lo, hi, out):
    for i in range(x.shape[0]):
        v = np.int64(x[i]) - zi
        if v >= 0:
            o = multiply_by_quantized_multiplier_scalar(v, m1, s1)
        else:
            o = multiply_by_quantized_multiplier_scalar(v * (np.int64(alpha[i]) - za), m2, s2)
        out[i] = min(max(o + zo, lo), hi)


def prelu(x, alpha, *, params):
    """TFLite int8 / int16 PRELU (``reference_ops::Prelu`` / ``BroadcastPrelu4DSlow<T, U>``), ``alpha`` (int8)
    broadcast to ``x``.

    ``v = q - zi``; ``v >= 0``: ``MBQM(v, m1, s1)``; else ``MBQM(v * (alpha - za), m2, s2)`` (the product fits
    int32: at most 65535 * 255; double rounding: SRDHM ties toward +inf, the shift ties away from zero); ``+ zo``,
    clamped to x's type (the only saturation).
    ``params``: a :class:`PreluParams` from :func:`tflite_prelu_params`.
    """
    x = check_tensor(x, "prelu", "x", allowed=_PRELU_TYPES)
    a = check_tensor(alpha, "prelu", "alpha", allowed=_INT8)
    return prelu_plan(x.shape, a.shape, x.dtype, params=params)(x, a)


def prelu_plan(shape, alpha_shape, dtype, *, params):
    """:func:`prelu` prepared for int8 / int16 ``x`` of ``shape`` and int8 ``alpha`` of ``alpha_shape`` (validated
    once, the broadcast of alpha an index map); returns the lean ``run(x, alpha)``."""
    func = "prelu"
    shape, dt = check_spec(func, "x", shape, dtype, _PRELU_TYPES)
    alpha_shape, _ = check_spec(func, "alpha", alpha_shape, np.int8, _INT8)
    if not isinstance(params, PreluParams):
        raise TypeError(f"{func}: params must be a PreluParams, got {type(params).__name__}")
    try:
        np.broadcast_to(np.empty(alpha_shape, np.int8), shape)
    except ValueError:
        raise ValueError(f"{func}: alpha of shape {alpha_shape} does not broadcast to x of shape {shape}") from None
    zi = zero_point(params.input_zero_point, dt, func, "params.input_zero_point")
    za = zero_point(params.alpha_zero_point, np.int8, func, "params.alpha_zero_point")
    zo = zero_point(params.output_zero_point, dt, func, "params.output_zero_point")
    for name, lo, hi in (("multiplier_1", 0, (1 << 31) - 1), ("multiplier_2", 0, (1 << 31) - 1), ("shift_1", -31, 30),
                         ("shift_2", -31, 30)):
        int_in_range(getattr(params, name), lo, hi, func, f"params.{name}")
    info = np.iinfo(dt)
    args = (zi, za, zo, int(params.multiplier_1), int(params.shift_1), int(params.multiplier_2), int(params.shift_2),
            int(info.min), int(info.max))
    flat_alpha, size = flat_operand(alpha_shape, shape), math.prod(shape)

    def run(x, alpha):
        out = np.empty(size, dt)
        _prelu(np.ravel(x), flat_alpha(alpha), *args, out)
        return out.reshape(shape)

    return run



# --------------------------------------------------------------------------------------------
# RSQRT (LiteRT elementwise.cc and TFLM elementwise.cc: the same integer recipe)
# --------------------------------------------------------------------------------------------
@names_its_errors
def tflite_rsqrt_multiplier(*, input_scale, output_scale):
    """``SetRsqrtOutputMultiplier``: ``QuantizeMultiplier(1. / double(f32(sqrtf(s_in) * s_out)))``."""
    func = "tflite_rsqrt_multiplier"
    _, s_in, _, s_out, _ = _lut_args(func, "tanh", input_scale, 0, output_scale, 0)
    denominator = float(_f32(np.sqrt(s_in) * s_out))
    if not 0 < denominator < math.inf:
        raise ValueError(f"{func}: sqrt(input_scale) * output_scale = {denominator} in float32; it must be finite "
                         "and positive")
    m, sh = quantize_multiplier(1.0 / denominator)
    if not -31 + 20 <= sh <= 30:
        raise ValueError(f"{func}: the output shift {sh} is outside [-11, 30]")
    return int(m), int(sh)


@njit(cache=True)
def _rsqrt(x, zi, zo, multiplier, shift, out):
    for i in range(x.shape[0]):
        v = np.int64(x[i]) - zi
        if v == 0:
            out[i] = 127
            continue
        m, s = inv_sqrt_quantized_multiplier_exp(v, -1)
        data = multiply_by_quantized_multiplier_scalar(1, m, s + 20)
        o = multiply_by_quantized_multiplier_scalar(data, multiplier, shift - 20) + zo
        out[i] = min(max(o, -128), 127)


def rsqrt(x, *, input_zero_point, output_zero_point, multiplier, shift):
    """TFLite int8 RSQRT (``RsqrtEvalQuantizedInt8``): ``v = q - zi``; ``v == 0`` -> 127; else
    ``(m, s) = GetInvSqrtQuantizedMultiplierExp(v, -1)``, ``d = MBQM(1, m, s + 20)`` (2^20 / sqrt(v)),
    ``out = clamp(MBQM(d, multiplier, shift - 20) + zo)`` (double rounding). A code below ``zi`` is a
    ValueError, as both engines fail the invocation ("Rsqrt is only defined for positive values").
    ``multiplier, shift`` from :func:`tflite_rsqrt_multiplier`."""
    x = check_tensor(x, "rsqrt", "x", allowed=_INT8)
    return rsqrt_plan(x.shape, x.dtype, input_zero_point=input_zero_point, output_zero_point=output_zero_point,
                      multiplier=multiplier, shift=shift)(x)


def rsqrt_plan(shape, dtype, *, input_zero_point, output_zero_point, multiplier, shift):
    """:func:`rsqrt` prepared for int8 codes of ``shape`` (validated once); the lean ``run(x)`` still refuses
    a code below the input zero point."""
    func = "rsqrt"
    shape, _ = check_spec(func, "x", shape, dtype, _INT8)
    zi = zero_point(input_zero_point, np.int8, func, "input_zero_point")
    zo = zero_point(output_zero_point, np.int8, func, "output_zero_point")
    m, s = int_in_range(multiplier, 0, (1 << 31) - 1, func, "multiplier"), int_in_range(shift, -11, 30, func, "shift")
    size = math.prod(shape)

    def run(x):
        flat = np.ravel(x)
        if flat.min() < zi:
            raise ValueError(f"{func}: Rsqrt is only defined for positive values (a code is below the input zero "
                             f"point {zi})")
        out = np.empty(size, np.int8)
        _rsqrt(flat, zi, zo, m, s, out)
        return out.reshape(shape)

    return run


_EXPM1F = np.frompyfunc(lambda v: _LIBM.expm1f(v), 1, 1)


@names_its_errors
def float_elu(x):
    """TFLite's float32 ``reference_ops::Elu`` (TFLM; LiteRT's optimized kernel calls the same): ``x < 0 ?
    expm1f(x) : x`` with the C library's own ``expm1f`` (glibc's, as the engines call it through ``std::expm1``).
    No rounding beyond ``expm1f``'s, no saturation; a NaN and -0 pass through (``-0 < 0`` is false)."""
    x = check_tensor(x, "float_elu", "x", allowed=(np.dtype(np.float32),))
    out = x.copy()
    neg = x < 0
    if neg.any():
        out[neg] = _EXPM1F(x[neg].astype(np.float64)).astype(np.float32)
    return out
