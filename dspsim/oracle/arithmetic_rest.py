"""Oracles of :mod:`dspsim.kernels.arithmetic.rest` and :mod:`dspsim.kernels.arithmetic.compare`: TFLite's
comparison rescaling, quantized DIV, ABS, ADD_N, CUMSUM and REDUCE_PROD, element by element in Python integers
(the sources are cited in the kernels' module docstrings)."""
from __future__ import annotations

from .fixedpoint import (
    multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_int64, quantize_multiplier,
    rounding_divide_by_pot, saturating_rounding_doubling_high_mul, wrap,
)
from .nonlinear import gemmlowp_one_over_one_plus_x


def _mbqm_smaller_than_one(x: int, m: int, shift: int) -> int:
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, m), -shift)


def comparison_scaled_oracle(code: int, zero_point: int, multiplier: int, shift: int) -> int:
    """One code as TFLite's quantized comparison sees it: ``RDBPOT(SRDHM((code - zp) * 2^8, m), -shift)``."""
    return _mbqm_smaller_than_one((code - zero_point) * 256, multiplier, shift)


def comparison_oracle(x1, x2, op: str, scaling=None):
    """Nested lists or scalars -> the bool results of comparison ``op`` on two same-length flat sequences (the
    broadcast done by the caller)."""
    f = {"EQUAL": lambda a, b: a == b, "NOT_EQUAL": lambda a, b: a != b, "LESS": lambda a, b: a < b,
         "LESS_EQUAL": lambda a, b: a <= b, "GREATER": lambda a, b: a > b, "GREATER_EQUAL": lambda a, b: a >= b}[op]
    out = []
    for a, b in zip(x1, x2):
        a, b = int(a), int(b)
        if scaling is not None:
            a = comparison_scaled_oracle(a, *scaling[0])
            b = comparison_scaled_oracle(b, *scaling[1])
        out.append(f(a, b))
    return out


def _clrsb32(a: int) -> int:
    """GCC ``__builtin_clrsb`` of an int32: the redundant sign bits below the sign bit."""
    return 31 - (a if a >= 0 else ~a).bit_length()


def _rdbpot_x86(x: int, e: int) -> int:
    """gemmlowp RoundingDivideByPOT of an int32 for any ``e >= 0``, as x86-64 computes it (the kernel's
    ``_rdbpot_any``): beyond 31 the int32 mask is -1 and the shift count is ``e mod 32``."""
    if e < 32:
        return rounding_divide_by_pot(x, e)
    threshold = -1 + (1 if x < 0 else 0)
    return (x >> (e % 32)) + (1 if x > threshold else 0)


def div_oracle(x1: int, x2: int, z1: int, z2: int, zo: int, multiplier: int, shift: int, lo: int, hi: int) -> int:
    """One quantized DIV element (``reference/div.h`` ``DivElementwise``); ``x2 != z2``."""
    a, b = x1 - z1, x2 - z2
    if b < 0:
        a, b = -a, -b
    clz = 32 - b.bit_length()
    recip = gemmlowp_one_over_one_plus_x(wrap((b << clz) - 2**31, 32))
    recip_shift = 31 - clz
    headroom = _clrsb32(a)
    q = saturating_rounding_doubling_high_mul(wrap(a * 2**headroom, 32), recip)
    v = zo + _rdbpot_x86(saturating_rounding_doubling_high_mul(q, multiplier), -(shift - recip_shift - headroom))
    return min(max(v, lo), hi)


def abs_oracle(x: int, zi: int, zo: int, rescale, lo: int, hi: int) -> int:
    """One quantized ABS element: ``|x - zi|`` (rescaled by ``rescale = (m, shift)`` unless None) plus ``zo``."""
    v = abs(x - zi)
    if rescale is not None:
        v = multiply_by_quantized_multiplier(v, rescale[0], rescale[1])
    return min(max(v + zo, lo), hi)


def _sum_params(input_scale: float, output_scale: float):
    twice = 2 * input_scale
    m_in, e_in = quantize_multiplier(input_scale / twice)
    m_out, e_out = quantize_multiplier(twice / ((1 << 20) * output_scale))
    return m_in, e_in, m_out, e_out


def add_n_oracle(columns, zi: int, input_scale: float, zo: int, output_scale: float):
    """tflite-micro's int8 ADD_N: ``columns`` a list of per-element tuples (one code per input); the scales as
    doubles (of the float32 values)."""
    m_in, e_in, m_out, e_out = _sum_params(input_scale, output_scale)
    out = []
    for codes in columns:
        acc = _mbqm_smaller_than_one(-zi * 2**20, m_in, e_in)  # the source's start value (x = input1_offset)
        for c in codes:
            acc = wrap(acc + _mbqm_smaller_than_one((c - zi) * 2**20, m_in, e_in), 32)
        out.append(min(max(zo + _mbqm_smaller_than_one(acc, m_out, e_out), -128), 127))
    return out


def cumsum_oracle(row, exclusive: bool, reverse: bool, zi: int, input_scale: float, zo: int, output_scale: float):
    """tflite-micro's int8 CUMSUM of one line of codes along the axis."""
    m_in, e_in, m_out, e_out = _sum_params(input_scale, output_scale)
    n = len(row)
    out = [0] * n
    acc = _mbqm_smaller_than_one(-zi * 2**20, m_in, e_in)
    for k in range(n):
        d = n - 1 - k if reverse else k
        y = _mbqm_smaller_than_one((row[d] - zi) * 2**20, m_in, e_in)
        before = acc
        acc = wrap(acc + y, 32)
        out[d] = min(max(zo + _mbqm_smaller_than_one(before if exclusive else acc, m_out, e_out), -128), 127)
    return out


def reduce_prod_oracle(values, zi: int, zo: int, multiplier: int, shift: int, lo: int, hi: int) -> int:
    """LiteRT's quantized REDUCE_PROD of one group of codes (in C order)."""
    p = values[0] - zi
    for v in values[1:]:
        p = multiply_by_quantized_multiplier_int64(p * (v - zi), multiplier, shift)
    return min(max(multiply_by_quantized_multiplier_int64(p, multiplier, shift) + zo, lo), hi)


def floor_div_oracle(a: int, b: int, bits: int) -> int:
    """FLOOR_DIV of two integers of ``bits``: the exact floor, wrapped to the type."""
    return wrap(a // b, bits)


def floor_mod_oracle(a: int, b: int, bits: int) -> int:
    """FLOOR_MOD: C's truncating remainder moved to the divisor's sign."""
    r = abs(a) % abs(b) * (1 if a >= 0 else -1)
    return wrap(r + b if r != 0 and (r < 0) != (b < 0) else r, bits)
