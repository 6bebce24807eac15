"""The oracle of the fixedpoint family: gemmlowp's and TFLite's fixed-point primitives, exact float32 / float64 values, and the small helpers every family uses.

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

import math
from fractions import Fraction

INT32_MIN = -(1 << 31)


INT32_MAX = (1 << 31) - 1


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


# --- PyTorch / FBGEMM (observed, docs/semantics.md §6), ONNX Runtime MLAS (§5), TFLite reference (§3) ------
def _clamp(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


# --- requantization (dspsim.requant) ---------------------------------------------------------
def f64(v) -> Fraction:
    """The double nearest to the exact value ``v`` (ties to even), as an exact Fraction."""
    return Fraction(float(Fraction(v)))  # int/int true division is correctly rounded


def x86_int32(v: int) -> int:
    """cvtps2dq / cvttsd2si: a value outside int32 becomes INT32_MIN ("integer indefinite")."""
    return v if INT32_MIN <= v <= INT32_MAX else INT32_MIN


def clamp(v: int, lo: int, hi: int) -> int:
    return min(max(v, lo), hi)


# --- ReLU family (dspsim.kernels.activation) -------------------------------------------------------
def haz_f32_div(f, scale) -> int:
    """TfLiteRound(f / scale) with a float32 division."""
    return round_fraction(f32(f32(f) / f32(scale)), "half_away_from_zero")


def _shape(x):
    return (len(x), len(x[0]), len(x[0][0]), len(x[0][0][0]))


# --- XNNPACK variants (LiteRT's default interpreter; dspsim.kernels.arithmetic.elementwise.xnnpack_*) -----
def _f32(v) -> Fraction:
    return f32(Fraction(float(v)) if not isinstance(v, (int, Fraction)) else v)


# Each function below takes exactly the arguments of the public kernel of the same name without
# the ``_oracle`` suffix and returns the same integers. numpy is used only to lay out arrays
# (broadcasting, axes, copies); every value is computed by the scalar functions above.
def _np():
    import numpy as np

    return np


def _range(dtype, act_min, act_max):
    np = _np()
    info = np.iinfo(dtype)
    return (int(info.min) if act_min is None else int(act_min)), (int(info.max) if act_max is None else int(act_max))


def _map(f, dtype, *arrays):
    """``f`` on the Python ints of the broadcast ``arrays``, element by element, as ``dtype``."""
    np = _np()
    bc = np.broadcast_arrays(*[np.asarray(a) for a in arrays])
    flat = [b.reshape(-1).tolist() for b in bc]
    return np.array([f(*vals) for vals in zip(*flat)], dtype=dtype).reshape(bc[0].shape)


def _out_dtype(x, out_dtype):
    np = _np()
    return x.dtype if out_dtype is None else np.dtype(out_dtype)


def _trunc_div(a: int, b: int) -> int:
    """C integer division: truncates toward zero."""
    return math.trunc(Fraction(a, b))
