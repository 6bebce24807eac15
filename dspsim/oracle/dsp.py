"""CMSIS-DSP's fixed-point kernels again, in plain Python integers: the oracle of :mod:`dspsim.dsp`.

Each function takes and returns lists of Python ints (q7, q15 and q31 values as their integer codes) and reads as
the arithmetic the C code does (docs/dsp.md): ``>>`` is C's arithmetic shift of a signed value (floor), ``ssat``
is ``__SSAT``, ``wrap`` a cast to a narrower C integer (two's complement). Nothing here imports dspsim or numpy.
"""
from __future__ import annotations

BITS = {"q7": 8, "q15": 16, "q31": 32}


def ssat(v: int, bits: int) -> int:
    """``__SSAT(v, bits)``: clamp to [-2^(bits-1), 2^(bits-1) - 1]."""
    hi = (1 << (bits - 1)) - 1
    return hi if v > hi else -hi - 1 if v < -hi - 1 else v


def wrap(v: int, bits: int) -> int:
    """A cast to a signed C integer of ``bits`` bits (two's complement, as gcc does)."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


# ---- basic math ---------------------------------------------------------------------------------------------------

def add(q: str, a, b):
    """arm_add_<q>: a + b, saturated."""
    return [ssat(x + y, BITS[q]) for x, y in zip(a, b)]


def sub(q: str, a, b):
    """arm_sub_<q>: a - b, saturated."""
    return [ssat(x - y, BITS[q]) for x, y in zip(a, b)]


def mult(q: str, a, b):
    """arm_mult_<q>: (a * b) >> (bits - 1) (floor), saturated; q31: (a * b) >> 32, saturated to 31 bits, << 1."""
    if q == "q31":
        return [ssat((x * y) >> 32, 31) << 1 for x, y in zip(a, b)]
    return [ssat((x * y) >> (BITS[q] - 1), BITS[q]) for x, y in zip(a, b)]


def negate(q: str, a):
    """arm_negate_<q>: -a, the minimum going to the maximum."""
    return [ssat(-x, BITS[q]) for x in a]


def abs_(q: str, a):
    """arm_abs_<q>: |a|, the minimum going to the maximum."""
    return [ssat(abs(x), BITS[q]) for x in a]


def dot_prod(q: str, a, b) -> int:
    """arm_dot_prod_<q>: q7 sums a * b in an int32 (wrapping), q15 in an int64; q31 sums (a * b) >> 14 (floor, per
    product) in an int64."""
    if q == "q31":
        return wrap(sum((x * y) >> 14 for x, y in zip(a, b)), 64)
    return wrap(sum(x * y for x, y in zip(a, b)), 32 if q == "q7" else 64)


def scale(q: str, a, fract: int, shift: int):
    """arm_scale_<q>: q7 / q15: (a * fract) >> (bits - 1 - shift), saturated; q31: t = (a * fract) >> 32, then
    t << (shift + 1) saturated (the sign of t picks the rail) or t >> -(shift + 1)."""
    if q != "q31":
        k = BITS[q] - 1 - shift
        return [ssat(wrap(x * fract, 32) >> k, BITS[q]) for x in a]
    k = shift + 1
    out = []
    for x in a:
        t = (x * fract) >> 32
        if k >= 0:
            v = t << k
            out.append(v if v == wrap(v, 32) else (2**31 - 1 if t >= 0 else -2**31))
        else:
            out.append(t >> -k)
    return out


def shift(q: str, a, shift_bits: int):
    """arm_shift_<q>: a << shift saturated, or a >> -shift (floor)."""
    if shift_bits >= 0:
        return [ssat(x << shift_bits, BITS[q]) for x in a]
    return [x >> -shift_bits for x in a]


# ---- FIR ----------------------------------------------------------------------------------------------------------

def fir(q: str, coeffs, state, x, fast: bool = False):
    """arm_fir(_fast)_<q> on one block: returns (y, new state). ``state`` holds the last numTaps - 1 inputs, oldest
    first; output n is sum_i coeffs[i] * w[n + i] over the window w = state + x (coefficients time-reversed, as
    CMSIS stores them).

    q15: the sum in an int64 (fast: an int32, wrapping), >> 15 (floor), saturated to 16 bits.
    q31: the sum in an int64, >> 31 (floor), cast to int32 (wrapping, no saturation); fast: each product rounded
    to its high word, (p + 2^31) >> 32, summed in an int32 (wrapping), then << 1 (wrapping).
    """
    taps = len(coeffs)
    w = list(state) + list(x)
    y = []
    for n in range(len(x)):
        win = w[n:n + taps]
        if q == "q15":
            acc = sum(c * v for c, v in zip(coeffs, win))
            y.append(ssat(wrap(acc, 32 if fast else 64) >> 15, 16))
        elif fast:
            acc = wrap(sum((c * v + (1 << 31)) >> 32 for c, v in zip(coeffs, win)), 32)
            y.append(wrap(acc << 1, 32))
        else:
            y.append(wrap(wrap(sum(c * v for c, v in zip(coeffs, win)), 64) >> 31, 32))
    return y, w[len(x):]


# ---- biquad cascades (direct form I) ------------------------------------------------------------------------------

def biquad_df1(q: str, coeffs, post_shift: int, state, x, fast: bool = False):
    """arm_biquad_cascade_df1(_fast)_<q> on one block: returns (y, new state).

    Per stage, coefficients b0 b1 b2 a1 a2 (q15: b0 0 b1 b2 a1 a2) and state [x1, x2, y1, y2]; each stage's
    output feeds the next. acc = b0 x + b1 x1 + b2 x2 + a1 y1 + a2 y2, then:
    q15: in an int64, >> (15 - postShift) (floor), cast to int32, saturated to 16 bits; fast: in an int32
    (wrapping), >> (15 - postShift), saturated.
    q31: in an int64 (wrapping), >> (31 - postShift) (floor), cast to int32 (no saturation); fast: each product
    rounded to its high word, (p + 2^31) >> 32, summed in an int32 (wrapping), then << (postShift + 1) (wrapping).
    """
    per = 6 if q == "q15" else 5
    stages = len(coeffs) // per
    state = list(state)
    cur = list(x)
    for s in range(stages):
        c = coeffs[s * per:(s + 1) * per]
        b0, b1, b2, a1, a2 = (c[0], c[2], c[3], c[4], c[5]) if q == "q15" else tuple(c)
        x1, x2, y1, y2 = state[4 * s:4 * s + 4]
        out = []
        for v in cur:
            terms = (b0 * v, b1 * x1, b2 * x2, a1 * y1, a2 * y2)
            if q == "q15":
                acc = sum(terms)
                r = ssat(wrap(acc, 32) >> (15 - post_shift), 16) if fast else \
                    ssat(wrap(acc >> (15 - post_shift), 32), 16)
            elif fast:
                acc = wrap(sum((p + (1 << 31)) >> 32 for p in terms), 32)
                r = wrap(acc << (post_shift + 1), 32)
            else:
                r = wrap(wrap(sum(terms), 64) >> (31 - post_shift), 32)
            x2, x1, y2, y1 = x1, v, y1, r
            out.append(r)
        state[4 * s:4 * s + 4] = [x1, x2, y1, y2]
        cur = out
    return cur, state
