"""int16 sigmoid and tanh: the reference kernels' lookup table with interpolation, and gemmlowp's int16 fixed point.

Two algorithms compute the same functions on int16 codes, and the engines pick different ones:

* **Table plus interpolation** (TFLite ``reference_integer_ops::Logistic`` / ``Tanh`` for int16, in
  ``kernels/internal/reference/integer_ops/logistic.h`` and ``tanh.h``; TFLM's int16 LOGISTIC/TANH and
  its integer LSTM gates, ``micro/kernels/lstm_eval.cc``). The input is first rescaled by
  ``v = (x * multiplier + round) >> left_shift`` (``multiplier == 0`` means the power-of-two case,
  ``multiplier = 3 << left_shift`` and no shift: Q3.12 input times 3/4). ``|v|`` indexes
  :data:`SIGMOID_TABLE_UINT16` (``sigmoid(i / 24)`` in 0.16) by its high bits and interpolates
  linearly in the low bits (9 for the sigmoid, 8 for tanh, which reads ``tanh(x) = 2 sigmoid(2x) - 1``);
  the sign is restored by symmetry, then a right shift (truncating after a +1/2 nudge) gives Q0.15.
* **gemmlowp fixed point on int16 raw values** (``gemmlowp::logistic`` / ``gemmlowp::tanh`` of a
  ``FixedPoint<int16_t, integer_bits>``; LiteRT's integer LSTM, ``tensor_utils::ApplySigmoid`` and
  ``ApplyTanh`` in ``kernels/internal/reference/portable_tensor_utils.cc``, and its optimized int16
  LOGISTIC/TANH on power-of-two scales). The same exp / Newton-Raphson recipe as the int32 functions
  of :mod:`dspsim.fixedpoint` (``logistic_q``, ``tanh_q``), but every step in 16 bits: products are
  int16 SRDHM (ties toward +inf, ``-32768 * -32768`` saturates), the int32 constants are rounded to
  int16 by ``RoundingDivideByPOT(c, 16)`` (gemmlowp ``RescaleConstantInitializer``), additions wrap
  at 16 bits except the last one of the exp polynomial, which saturates (``AddSaturatingIf16Bit``).

Both give Q0.15 results (sigmoid in [0, 32767], tanh in [-32767, 32767] for the table,
[-32768, 32767] for gemmlowp). The engine differences this makes: docs/engines.md, "LSTM".
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...fixedpoint import rounding_divide_by_pot_scalar, saturating_rounding_doubling_high_mul16_scalar
from .._checks import check_spec, check_tensor, int_in_range

_INT16 = (np.dtype(np.int16),)
_INT32_MAX = (1 << 31) - 1


def _sigmoid_table():
    """``sigmoid(i / 24)`` in 0.16 for i in 0..255, each entry lowered by half the error that linear
    interpolation makes at the middle of its interval (so that interpolated values are centred), the last
    entry the saturation value 65535: the values of ``sigmoid_table_uint16`` in TFLite's
    ``kernels/internal/common.h``."""
    def sigmoid(v):
        return 65536.0 / (1.0 + math.exp(-v))

    h = 1.0 / 24
    table = [int(round(sigmoid(i * h) - ((sigmoid(i * h) + sigmoid((i + 1) * h)) / 2 - sigmoid((i + 0.5) * h)) / 2))
             for i in range(255)]
    return np.array(table + [65535], np.int64)


SIGMOID_TABLE_UINT16 = _sigmoid_table()
SIGMOID_TABLE_UINT16.setflags(write=False)


# --------------------------------------------------------------------------------------------
# table plus interpolation (TFLite / TFLM reference_integer_ops)
# --------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _rescale_input(x, multiplier, left_shift):
    """``(x * multiplier + round) >> left_shift`` with ``round = 2^(left_shift - 1)`` (0 for no shift),
    after the power-of-two substitution ``multiplier == 0 -> (3 << left_shift, 0)``; arithmetic shift."""
    if multiplier == 0:
        multiplier = np.int64(3) << left_shift
        left_shift = 0
    rnd = (np.int64(1) << (left_shift - 1)) if left_shift > 0 else np.int64(0)
    return (np.int64(x) * multiplier + rnd) >> left_shift


@njit(cache=True, inline="always")
def _lut_logistic_scalar(v, table):
    """Q0.15 logistic of the rescaled input ``v``: ``|v| >> 9`` indexes the table, the low 9 bits interpolate."""
    a = abs(v)
    uh = a >> 9
    if uh >= 255:
        result = np.int64(0x7FFF) << 10
    else:
        ua = table[uh]
        result = (ua << 9) + (a & 0x1FF) * (table[uh + 1] - ua)
    if v >= 0:
        result = result + (1 << 9)
    else:
        result = (np.int64(1) << 25) - result + (1 << 9) - 1
    return result >> 10


@njit(cache=True, inline="always")
def _lut_tanh_scalar(v, table):
    a = abs(v)
    uh = a >> 8
    if uh >= 255:
        result = np.int64(0xFFFF) << 8
    else:
        ua = table[uh]
        result = (ua << 8) + (a & 0xFF) * (table[uh + 1] - ua)
    if v >= 0:
        result = result - (1 << 23) + (1 << 7)
    else:
        result = -result + (1 << 23) + (1 << 7) - 1
    return result >> 8  # arithmetic: floor


@njit(cache=True)
def _lut_sigmoid_loop(x, multiplier, left_shift, is_tanh, table, out):
    for i in range(x.shape[0]):
        v = _rescale_input(x[i], multiplier, left_shift)
        out[i] = _lut_tanh_scalar(v, table) if is_tanh else _lut_logistic_scalar(v, table)


def check_lut_input_rescale(func, input_multiplier, input_left_shift):
    """Validate the ``(input_multiplier, input_left_shift)`` of :func:`int16_logistic` / :func:`int16_tanh`.

    Both are ints, ``multiplier`` in [0, 2^31), ``left_shift`` in [0, 31] (TFLite DCHECKs a non-negative
    shift); the rescaling product ``32768 * multiplier + round`` must fit int32 (beyond it the engine's
    int32 arithmetic is undefined behaviour). ValueError naming ``func`` otherwise.
    """
    for name, v, lo, hi in (("input_multiplier", input_multiplier, 0, _INT32_MAX),
                            ("input_left_shift", input_left_shift, 0, 31)):
        int_in_range(v, lo, hi, func, name)
    m, s = int(input_multiplier), int(input_left_shift)
    if m == 0:
        m, s = 3 << s, 0
    if 32768 * m + ((1 << (s - 1)) if s else 0) > _INT32_MAX:
        raise ValueError(f"{func}: x * input_multiplier overflows int32 for int16 inputs (multiplier {m}, "
                         f"left shift {s}): undefined behaviour in the engine")
    return int(input_multiplier), int(input_left_shift)


def checked_log2(scale):
    """TFLite ``CheckedLog2`` of a float32 scale: ``(power, exact)`` with ``power = round(logf(s) * (1 /
    logf(2)))`` in float32 (ties away from zero) and ``exact`` whether that log2 is within 1e-3 of it."""
    s = np.float32(scale)
    log2 = np.float32(np.float32(math.log(float(s))) * np.float32(1.0 / np.float32(math.log(2.0))))
    rounded = np.float32(math.copysign(math.floor(abs(float(log2)) + 0.5), float(log2)))
    return int(rounded), abs(float(np.float32(log2 - rounded))) < float(np.float32(1e-3))


def tflite_int16_sigmoid_rescale(input_scale, *, tanh):
    """The ``(input_multiplier, input_left_shift)`` of int16 LOGISTIC (``tanh=False``) or TANH, as TFLM's
    ``LogisticPrepare``/``TanhPrepare`` and LiteRT's ``SigmoidPrepare``/``TanhPrepare`` compute them.

    ``left_shift = 12 + log2(s_in)`` (``CheckedLog2``); a power-of-two scale with ``left_shift == 0`` (also
    1 for TANH) keeps it with multiplier 0. Otherwise ``m = double(s_in) * 4096 * 3`` is doubled while
    ``m <= 32767 / 2`` (at most 31 times, counting the doublings as the left shift) and truncated to int.
    """
    func = "tflite_int16_sigmoid_rescale"
    if isinstance(input_scale, bool) or not isinstance(input_scale, (int, float, np.floating, np.integer)) or \
            not (math.isfinite(float(input_scale)) and float(input_scale) > 0):
        raise ValueError(f"{func}: input_scale must be a finite positive float, got {input_scale!r}")
    power, exact = checked_log2(input_scale)
    left_shift = 12 + power
    if exact and left_shift in ((0, 1) if tanh else (0,)):
        return 0, left_shift
    m, left_shift = float(np.float32(input_scale)) * 4096.0 * 3.0, 0
    while m <= 32767.0 / 2.0 and left_shift <= 30:
        left_shift += 1
        m *= 2.0
    return int(m), left_shift


def _lut_family(func, is_tanh, x, input_multiplier, input_left_shift):
    x = check_tensor(x, func, "x", allowed=_INT16)
    return _lut_plan(func, is_tanh, x.shape, x.dtype, input_multiplier, input_left_shift)(x)


def _lut_plan(func, is_tanh, shape, dtype, input_multiplier, input_left_shift):
    shape, _ = check_spec(func, "x", shape, dtype, _INT16)
    m, s = check_lut_input_rescale(func, input_multiplier, input_left_shift)
    size = math.prod(shape)

    def run(x):
        out = np.empty(size, np.int16)
        _lut_sigmoid_loop(np.ravel(x), m, s, is_tanh, SIGMOID_TABLE_UINT16, out)
        return out.reshape(shape)

    return run


def int16_logistic_plan(shape, dtype, input_multiplier=0, input_left_shift=0):
    """:func:`int16_logistic` prepared for int16 codes of ``shape`` (the rescale checked once): the lean ``run(x)``."""
    return _lut_plan("int16_logistic", False, shape, dtype, input_multiplier, input_left_shift)


def int16_tanh_plan(shape, dtype, input_multiplier=0, input_left_shift=0):
    """:func:`int16_tanh` prepared for int16 codes of ``shape``: the lean ``run(x)``."""
    return _lut_plan("int16_tanh", True, shape, dtype, input_multiplier, input_left_shift)


def int16_logistic(x, input_multiplier=0, input_left_shift=0):
    """TFLite/TFLM int16 LOGISTIC by table and interpolation (``reference_integer_ops::Logistic``).

    ``v = (x * m + round) >> s`` (``m == 0``: ``m = 3 << s, s = 0``, the Q3.12 power-of-two case; the
    shift rounds ties up, as ``+ 2^(s-1)`` then an arithmetic shift); ``|v| >> 9`` indexes
    :data:`SIGMOID_TABLE_UINT16`, the low 9 bits interpolate; ``|v| >= 255 * 512`` saturates to
    ``0x7FFF << 10``. Positive ``v``: ``(r + 2^9) >> 10``; negative: ``(2^25 - r + 2^9 - 1) >> 10``
    (symmetry ``sigmoid(-x) = 1 - sigmoid(x)``). Output Q0.15 in [0, 32767]: int16, same shape.
    ``m, s`` are TFLite's ``input_multiplier`` and ``input_left_shift`` (LSTM gates: ``0, 0``).
    """
    return _lut_family("int16_logistic", False, x, input_multiplier, input_left_shift)


def int16_tanh(x, input_multiplier=0, input_left_shift=0):
    """TFLite/TFLM int16 TANH by table and interpolation (``reference_integer_ops::Tanh``).

    The input rescaling of :func:`int16_logistic`; then ``|v| >> 8`` indexes the sigmoid table (``tanh(x)
    = 2 sigmoid(2x) - 1``), the low 8 bits interpolate, ``|v| >= 255 * 256`` saturates to ``0xFFFF << 8``;
    positive ``v``: ``(r - 2^23 + 2^7) >> 8``, negative: ``(-r + 2^23 + 2^7 - 1) >> 8`` (arithmetic shift,
    floor). Output Q0.15 in [-32767, 32767]. The LSTM's cell gate uses ``0, 0``; its ``tanh(cell)`` uses
    ``left_shift = 12 + log2(cell scale)`` (``m = 0``), or ``m = 3`` with the negated shift when negative.
    """
    return _lut_family("int16_tanh", True, x, input_multiplier, input_left_shift)


# --------------------------------------------------------------------------------------------
# gemmlowp FixedPoint<int16_t, integer_bits> (LiteRT's integer LSTM, optimized int16 LOGISTIC/TANH)
# --------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _wrap16(x):
    return ((x + 32768) & 0xFFFF) - 32768


@njit(cache=True, inline="always")
def _mul16(a, b):
    return saturating_rounding_doubling_high_mul16_scalar(a, b)


@njit(cache=True, inline="always")
def _constant16(raw32):
    """gemmlowp ``RescaleConstantInitializer``: an int32 raw constant as int16, ``RoundingDivideByPOT(c, 16)``."""
    return rounding_divide_by_pot_scalar(np.int64(raw32), 16)


@njit(cache=True, inline="always")
def _saturating_multiply_by_pot16(x, exponent):
    """gemmlowp ``SaturatingRoundingMultiplyByPOT<exponent>`` on int16: a left shift saturating beyond
    ``+-(2^(15 - exponent) - 1)``, or a rounding right shift (ties away from zero) for a negative exponent."""
    if exponent > 0:
        threshold = (np.int64(1) << (15 - exponent)) - 1
        if x > threshold:
            return np.int64(32767)
        if x < -threshold:
            return np.int64(-32768)
        return np.int64(x) << exponent
    if exponent < 0:
        return rounding_divide_by_pot_scalar(np.int64(x), -exponent)
    return np.int64(x)


@njit(cache=True)
def _exp_on_interval16(a):
    """``exp(a)`` for Q0.15 ``a`` in [-1/4, 0): the Taylor polynomial around -1/8 in int16 steps."""
    constant_term = _constant16(1895147668)
    constant_1_over_3 = _constant16(715827883)
    x = _wrap16(a + (1 << 12))
    x2 = _mul16(x, x)
    x3 = _mul16(x2, x)
    x4 = _mul16(x2, x2)
    x4_over_4 = rounding_divide_by_pot_scalar(x4, 2)
    poly = rounding_divide_by_pot_scalar(_wrap16(_mul16(_wrap16(x4_over_4 + x3), constant_1_over_3) + x2), 1)
    return min(max(constant_term + _mul16(constant_term, _wrap16(x + poly)), -32768), 32767)


@njit(cache=True)
def _exp_on_negative_values16(a, integer_bits):
    """gemmlowp ``exp_on_negative_values`` of a Q``integer_bits``.(15 - integer_bits) ``a <= 0``, Q0.15."""
    fractional_bits = 15 - integer_bits
    one_quarter = np.int64(1) << (fractional_bits - 2)
    a_mod_quarter_minus_one_quarter = _wrap16((a & (one_quarter - 1)) - one_quarter)
    result = _exp_on_interval16(_saturating_multiply_by_pot16(a_mod_quarter_minus_one_quarter, integer_bits))
    remainder = _wrap16(a_mod_quarter_minus_one_quarter - a)
    multipliers = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)
    for k in range(7):
        exponent = k - 2
        if integer_bits > exponent and remainder & (np.int64(1) << (fractional_bits + exponent)):
            result = _mul16(result, _constant16(multipliers[k]))
    if integer_bits > 5 and a < _constant16(-(np.int64(1) << (36 - integer_bits))):
        result = np.int64(0)
    if a == 0:
        result = np.int64(32767)
    return result


@njit(cache=True)
def _newton_reciprocal16(a):
    """The Q2.13 ``x ~= 1 / ((1 + a) / 2)`` of gemmlowp's two ``..._for_x_in_0_1`` divisions in int16."""
    s = np.int64(a) + 32767
    t = s + 1 if s >= 0 else s - 1
    half_denominator = t // 2 if t >= 0 else -((-t) // 2)  # RoundingHalfSum: C division truncates
    x = _wrap16(_constant16(1515870810) + _mul16(half_denominator, _constant16(-1010580540)))
    for _ in range(3):
        one_minus = _wrap16((1 << 13) - _mul16(half_denominator, x))
        x = _wrap16(x + _saturating_multiply_by_pot16(_mul16(x, one_minus), 2))
    return x


@njit(cache=True)
def _logistic16(a, integer_bits):
    if a == 0:
        return np.int64(1 << 14)
    abs_input = a if a > 0 else _wrap16(-a)
    positive = _saturating_multiply_by_pot16(
        _newton_reciprocal16(_exp_on_negative_values16(_wrap16(-abs_input), integer_bits)), 1)
    return positive if a > 0 else _wrap16(32767 - positive)


@njit(cache=True)
def _tanh16(a, integer_bits):
    if a == 0:
        return np.int64(0)
    n = a if a < 0 else _wrap16(-a)
    t = _saturating_multiply_by_pot16(
        _wrap16(_newton_reciprocal16(_exp_on_negative_values16(n, integer_bits + 1)) - (1 << 13)), 2)
    return _wrap16(-t) if a < 0 else t


@njit(cache=True)
def _fixedpoint16_loop(x, integer_bits, is_tanh, out):
    for i in range(x.shape[0]):
        a = np.int64(x[i])  # widen on load: numpy int16 scalars wrap without the jit
        out[i] = _tanh16(a, integer_bits) if is_tanh else _logistic16(a, integer_bits)


def _fixedpoint16_family(func, is_tanh, x, integer_bits, max_bits):
    x = check_tensor(x, func, "x", allowed=_INT16)
    int_in_range(integer_bits, 0, max_bits, func, "integer_bits")
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.int16)
    _fixedpoint16_loop(flat, int(integer_bits), is_tanh, out)
    return out.reshape(x.shape)


def fixedpoint16_logistic(x, integer_bits=3):
    """gemmlowp ``logistic`` of ``FixedPoint<int16_t, integer_bits>`` raw values: Q0.15 raw results.

    ``x > 0``: ``1 / (1 + exp(-x))`` as ``one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(-x))``;
    ``x < 0``: ``32767 - logistic(-x)`` (``-(-32768)`` wraps to itself, as in gemmlowp); ``x == 0``:
    16384. Every step in int16 (module docstring): SRDHM ties toward +inf, rounding shifts ties away from
    zero, saturating POT multiplies. LiteRT's integer LSTM gates use ``integer_bits=3`` (Q3.12).
    ``integer_bits`` in [0, 13].
    """
    return _fixedpoint16_family("fixedpoint16_logistic", False, x, integer_bits, 13)


def fixedpoint16_tanh(x, integer_bits=3):
    """gemmlowp ``tanh`` of ``FixedPoint<int16_t, integer_bits>`` raw values: Q0.15 raw results.

    ``n = -|x|``; ``t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(2n))``, with
    ``2n`` the same raw value read with one more integer bit; ``-t`` for ``x < 0`` (wrapping), 0 for 0.
    int16 steps as :func:`fixedpoint16_logistic`. LiteRT's integer LSTM: the cell gate with 3 integer
    bits, ``tanh(cell)`` with ``15 + log2(cell scale)``. ``integer_bits`` in [0, 12].
    """
    return _fixedpoint16_family("fixedpoint16_tanh", True, x, integer_bits, 12)
