"""The oracle: every dspsim primitive, mode and kernel again, slowly, in plain Python integers.

Nothing here uses numba or numpy rounding. Rounding is done on exact rationals
(:class:`fractions.Fraction`), so each function reads as the definition it emulates rather than as
a port of the fast code: where the fast code uses a bit trick, this file uses arithmetic on exact
values. Float32 steps (TensorFlow's and TFLite's per-element float math) are emulated by rounding
each exact intermediate to the nearest float32 (:func:`f32`), ties to even, as IEEE does.

The tests pin the numba code to this module on random and edge inputs.
"""
from __future__ import annotations

import math
import struct
from fractions import Fraction

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


# =============================================================================================
# rounding and overflow on exact values
# =============================================================================================
def round_fraction(v: Fraction, rule: str) -> int:
    """Round an exact rational by a tie rule name (see ``dspsim.fixedpoint.Rounding``)."""
    v = Fraction(v)
    fl = math.floor(v)
    frac = v - fl
    half = Fraction(1, 2)
    if rule == "floor":
        return fl
    if rule == "toward_zero":
        return math.trunc(v)
    if frac != half:
        return fl + (1 if frac > half else 0)
    if rule == "half_up":
        return fl + 1
    if rule == "half_away_from_zero":
        return fl + 1 if v > 0 else fl
    if rule == "half_to_even":
        return fl if fl % 2 == 0 else fl + 1
    raise ValueError(f"unknown rule {rule}")


def saturate(x: int, bits: int) -> int:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return lo if x < lo else hi if x > hi else x


def wrap(x: int, bits: int) -> int:
    m = 2**bits
    r = x % m
    return r - m if r >= m // 2 else r


def c_div(a: int, b: int) -> int:
    """C integer division: truncates toward zero."""
    return math.trunc(Fraction(a, b))


# =============================================================================================
# fixed-point primitives (gemmlowp / TFLite / CMSIS-NN)
# =============================================================================================
def rounding_right_shift(x: int, shift: int, rule: str) -> int:
    return round_fraction(Fraction(x, 2**shift), rule)


def saturating_rounding_doubling_high_mul(a: int, b: int) -> int:
    """a*b/2^31, ties toward +inf; the one overflow (INT32_MIN^2) saturates to INT32_MAX."""
    return min(round_fraction(Fraction(a * b, 2**31), "half_up"), INT32_MAX)


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    """x/2^exponent, ties away from zero."""
    return round_fraction(Fraction(x, 2**exponent), "half_away_from_zero")


def multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int, rounding: str = "double") -> int:
    if rounding == "single":
        return wrap(round_fraction(Fraction(x * multiplier, 2 ** (31 - shift)), "half_up"), 32)
    left, right = max(shift, 0), max(-shift, 0)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(wrap(x * 2**left, 32), multiplier), right)


def multiply_by_quantized_multiplier_int64(x: int, multiplier: int, shift: int) -> int:
    reduced = round_fraction(Fraction(multiplier, 2**16), "half_up") if multiplier < 0x7FFF0000 else 0x7FFF
    return wrap(round_fraction(Fraction(x * reduced, 2 ** (15 - shift)), "half_up"), 32)


def quantize_multiplier(real: float, rounding: str = "double") -> tuple[int, int]:
    """TFLite QuantizeMultiplier: the exact binary value of ``real`` as q * 2^e, q in [1/2, 1)."""
    if real == 0:
        return 0, 0
    v = Fraction(real)  # exact value of the double
    e = 0
    while abs(v) >= 1:
        v /= 2
        e += 1
    while abs(v) < Fraction(1, 2):
        v *= 2
        e -= 1
    m = round_fraction(v * 2**31, "half_away_from_zero")
    if abs(m) == 2**31:
        m //= 2
        e += 1
    if e < -31:
        return 0, 0
    if rounding == "single" and e > 30:
        return INT32_MAX, 30
    return m, e


# =============================================================================================
# float32 emulation (used by the quantize and float-requantization oracles)
# =============================================================================================
def f32(v) -> Fraction:
    """The float32 nearest to the exact value ``v`` (ties to even), as an exact Fraction.

    Overflow gives +-inf (returned as a float); results below 2^-126 in magnitude are returned
    as they round (subnormals kept); callers that emulate FTZ flush them themselves.
    """
    if isinstance(v, float) and not math.isfinite(v):
        return v
    v = Fraction(v)
    if v == 0:
        return Fraction(0)
    sign = -1 if v < 0 else 1
    a = abs(v)
    e = math.floor(math.log2(a.numerator) - math.log2(a.denominator))
    # correct e so that 2^e <= a < 2^(e+1)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, -126)  # subnormal spacing below 2^-126
    ulp = Fraction(2) ** (e - 23)
    r = round_fraction(a / ulp, "half_to_even") * ulp
    if r >= Fraction(2) ** 128:
        return sign * math.inf
    return sign * r


def float32_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


# =============================================================================================
# quantize / dequantize (TensorFlow, PyTorch, ONNX, TFLite, power-of-two)
# =============================================================================================
# (section: quantize)


# =============================================================================================
# requantization schemes and kernels
# =============================================================================================
# (section: kernels)
