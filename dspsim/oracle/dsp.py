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

    q15: the sum in an int64 (fast: an int32, wrapping), >> 15 (floor), saturated to 16 bits; the first
    4 * (len(x) // 4) outputs (the unrolled loop's) add the products of taps 2k, 2k + 1 in a C int first (the host
    build's __SMLALD: wrapping at 32 bits).
    q7: the sum in an int32 (wrapping), >> 7, saturated to 8 bits.
    q31: the sum in an int64, >> 31 (floor), cast to int32 (wrapping, no saturation); fast: each product rounded
    to its high word, (p + 2^31) >> 32, summed in an int32 (wrapping), then << 1 (wrapping).
    """
    taps = len(coeffs)
    w = list(state) + list(x)
    y = []
    for n in range(len(x)):
        win = w[n:n + taps]
        if q == "q7":
            y.append(ssat(wrap(sum(c * v for c, v in zip(coeffs, win)), 32) >> 7, 8))
        elif q == "q15" and not fast and n < 4 * (len(x) // 4):
            acc = sum(wrap(coeffs[i] * win[i] + coeffs[i + 1] * win[i + 1], 32) for i in range(0, taps, 2))
            y.append(ssat(acc >> 15, 16))
        elif q == "q15":
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


def biquad_df1_32x64(coeffs, post_shift: int, state, x):
    """arm_biquad_cas_df1_32x64_q31 on one block: (y, new state); state per stage [x1, x2, y1, y2] with y1, y2 the
    64-bit accumulators << (postShift + 1); acc = b0 x + b1 x1 + b2 x2 + mult32x64(y1, a1) + mult32x64(y2, a2)
    (mult32x64(v, a) = ((v mod 2^32) a >> 32) + (v >> 32) a), wrapping at 64 bits; the output
    acc >> (31 - postShift) cast to int32."""
    def m(v, a):
        return (((v & 0xFFFFFFFF) * a) >> 32) + ((v >> 32) * a)

    state = list(state)
    cur = list(x)
    for s in range(len(coeffs) // 5):
        b0, b1, b2, a1, a2 = coeffs[5 * s:5 * s + 5]
        x1, x2, y1, y2 = state[4 * s:4 * s + 4]
        out = []
        for v in cur:
            acc = wrap(b0 * v + b1 * x1 + b2 * x2 + m(y1, a1) + m(y2, a2), 64)
            x2, x1, y2, y1 = x1, v, y1, wrap(acc << (post_shift + 1), 64)
            out.append(wrap(acc >> (31 - post_shift), 32))
        state[4 * s:4 * s + 4] = [x1, x2, y1, y2]
        cur = out
    return cur, state


# ---- FFT ----------------------------------------------------------------------------------------------------------

def cfft_twiddles(q: str, n: int) -> list:
    """twiddleCoef_<n>_<q>: (cos, sin) of 2 pi i / n for i < 3n/4; q15 floor(v 2^15), q31 floor(v 2^31 + 0.05),
    saturated (the rule that reproduces CMSIS-DSP's shipped tables)."""
    import math

    bits = BITS[q]
    off = 0.0 if q == "q15" else 0.05
    out = []
    for i in range(3 * n // 4):
        a = i * 2 * math.pi / n
        out.append((ssat(math.floor(math.cos(a) * (1 << (bits - 1)) + off), bits),
                    ssat(math.floor(math.sin(a) * (1 << (bits - 1)) + off), bits)))
    return out


def real_coefs(q: str) -> tuple:
    """realCoefA / realCoefB (n = 4096): round(v 2^(bits-1)) (half away from zero), saturated."""
    import math

    bits = BITS[q]
    one = 1 << (bits - 1)

    def r(v):
        return ssat(int(math.floor(abs(v) * one + 0.5)) * (1 if v >= 0 else -1), bits)

    a, b = [], []
    for i in range(4096):
        t = 2 * math.pi / 8192 * i
        a.append((r(0.5 * (1.0 - math.sin(t))), r(0.5 * -math.cos(t))))
        b.append((r(0.5 * (1.0 + math.sin(t))), r(0.5 * math.cos(t))))
    return a, b


def _rot(q, re, im, c, s, inverse):
    """(re + j im) times the twiddle's conjugate (forward) or the twiddle (inverse): q15 (.. ) >> 16 per sum, q31
    the products' high words summed."""
    sg = -1 if inverse else 1
    if q == "q15":
        return wrap((c * re + sg * s * im) >> 16, 16), wrap((c * im - sg * s * re) >> 16, 16)
    return (((c * re) >> 32) + sg * ((s * im) >> 32), ((c * im) >> 32) - sg * ((s * re) >> 32))


def _radix4(q, x, n, tw, step, inverse):
    """arm_radix4_butterfly_<q> / _inverse_<q> on the list x of n complex (re, im) pairs, in place."""
    sg = -1 if inverse else 1
    sat = (lambda v: ssat(v, 16)) if q == "q15" else (lambda v: wrap(v, 32))
    w32 = (lambda v: v) if q == "q15" else (lambda v: wrap(v, 32))
    quarter = n // 4
    first = True
    while quarter >= 1:
        last = quarter == 1
        for j in range(quarter):
            w1, w2, w3 = tw[j * step], tw[2 * j * step], tw[3 * j * step]
            for g in range(j, n, 4 * quarter):
                i0, i1, i2, i3 = g, g + quarter, g + 2 * quarter, g + 3 * quarter
                a, b, c, d = x[i0], x[i1], x[i2], x[i3]
                if q == "q15":
                    pre = 2 if first else 0
                    a, b, c, d = [(v[0] >> pre, v[1] >> pre) for v in (a, b, c, d)]
                    r = (sat(a[0] + c[0]), sat(a[1] + c[1]))      # a + c
                    s = (sat(a[0] - c[0]), sat(a[1] - c[1]))      # a - c
                    t = (sat(b[0] + d[0]), sat(b[1] + d[1]))      # b + d
                    u = (sat(b[0] - d[0]), sat(b[1] - d[1]))      # b - d
                    half = 1 if (first or last) else 2
                    x0 = (((r[0] >> 1) + (t[0] >> 1)) >> (half - 1), ((r[1] >> 1) + (t[1] >> 1)) >> (half - 1))
                    if first:
                        rt = (sat(r[0] - t[0]), sat(r[1] - t[1]))
                        sp = (sat(s[0] - sg * u[1]), sat(s[1] + sg * u[0]))   # s -+ j u
                        sm = (sat(s[0] + sg * u[1]), sat(s[1] - sg * u[0]))
                    else:
                        rt = ((r[0] >> 1) - (t[0] >> 1), (r[1] >> 1) - (t[1] >> 1))
                        sp = ((s[0] >> 1) - sg * (u[1] >> 1), (s[1] >> 1) + sg * (u[0] >> 1))
                        sm = ((s[0] >> 1) + sg * (u[1] >> 1), (s[1] >> 1) - sg * (u[0] >> 1))
                    if last:   # twiddles 1: X2 -> i1, X1 -> i2, X3 -> i3
                        x[i0], x[i1], x[i2], x[i3] = x0, rt, sm, sp
                    else:
                        x[i0], x[i1] = x0, _rot(q, rt[0], rt[1], *w2, inverse)
                        x[i2], x[i3] = _rot(q, sm[0], sm[1], *w1, inverse), _rot(q, sp[0], sp[1], *w3, inverse)
                else:
                    if last:
                        x[i0] = (w32(a[0] + b[0] + c[0] + d[0]), w32(a[1] + b[1] + c[1] + d[1]))
                        x[i1] = (w32(a[0] - b[0] + c[0] - d[0]), w32(a[1] - b[1] + c[1] - d[1]))
                        x[i2] = (w32(a[0] + sg * b[1] - c[0] - sg * d[1]), w32(a[1] - sg * b[0] - c[1] + sg * d[0]))
                        x[i3] = (w32(a[0] - sg * b[1] - c[0] + sg * d[1]), w32(a[1] + sg * b[0] - c[1] - sg * d[0]))
                        continue
                    if first:
                        a, b, c, d = [(v[0] >> 4, v[1] >> 4) for v in (a, b, c, d)]
                    r, s = (w32(a[0] + c[0]), w32(a[1] + c[1])), (w32(a[0] - c[0]), w32(a[1] - c[1]))
                    t, u = (w32(b[0] + d[0]), w32(b[1] + d[1])), (w32(b[0] - d[0]), w32(b[1] - d[1]))
                    x0 = (w32(r[0] + t[0]), w32(r[1] + t[1]))
                    if not first:
                        x0 = (x0[0] >> 2, x0[1] >> 2)
                    rt = (w32(r[0] - t[0]), w32(r[1] - t[1]))
                    sm = (w32(s[0] + sg * u[1]), w32(s[1] - sg * u[0]))
                    sp = (w32(s[0] - sg * u[1]), w32(s[1] + sg * u[0]))

                    def out(v, w, first=first):
                        re, im = _rot(q, v[0], v[1], *w, inverse)
                        return (wrap(re << 1, 32), wrap(im << 1, 32)) if first else \
                            (wrap(re, 32) >> 1, wrap(im, 32) >> 1)
                    x[i0], x[i1], x[i2], x[i3] = x0, out(rt, w2), out(sm, w1), out(sp, w3)
        first = False
        step *= 4
        quarter //= 4


def cfft(q: str, x, inverse: bool = False, bit_reverse: bool = True):
    """arm_cfft_<q> on x (2n ints, re/im interleaved): the list CMSIS-DSP leaves in the buffer."""
    n = len(x) // 2
    tw = cfft_twiddles(q, n)
    v = [(x[2 * k], x[2 * k + 1]) for k in range(n)]
    sg = -1 if inverse else 1
    if n in (16, 64, 256, 1024, 4096):
        _radix4(q, v, n, tw, 1, inverse)
    else:
        h = n // 2
        for i in range(h):
            (ar, ai), (br, bi), (c, s) = v[i], v[i + h], tw[i]
            if q == "q15":
                xt, yt = (ar >> 1) - (br >> 1), (ai >> 1) - (bi >> 1)
                v[i] = (((ar >> 1) + (br >> 1)) >> 1, ((ai >> 1) + (bi >> 1)) >> 1)
                v[i + h] = (wrap(((xt * c) >> 16) + sg * ((yt * s) >> 16), 16),
                            wrap(((yt * c) >> 16) - sg * ((xt * s) >> 16), 16))
            else:
                xt, yt = (ar >> 2) - (br >> 2), (ai >> 2) - (bi >> 2)
                v[i] = ((ar >> 2) + (br >> 2), (ai >> 2) + (bi >> 2))
                # rounded high words: (p + 2^31) >> 32; a subtracted product: (2^31 - p) >> 32
                re = ((xt * c + (1 << 31)) >> 32) + (((yt * s + (1 << 31)) >> 32) if sg == 1
                                                     else (((1 << 31) - yt * s) >> 32))
                im = ((yt * c + (1 << 31)) >> 32) + ((((1 << 31) - xt * s) >> 32) if sg == 1
                                                     else ((xt * s + (1 << 31)) >> 32))
                v[i + h] = (wrap(re << 1, 32), wrap(im << 1, 32))
        first, second = v[:h], v[h:]
        _radix4(q, first, h, tw, 2, inverse)
        _radix4(q, second, h, tw, 2, inverse)
        v = [(wrap(a << 1, BITS[q]), wrap(b << 1, BITS[q])) for a, b in first + second]
    if bit_reverse:
        bits = n.bit_length() - 1
        v = [v[int(format(k, f"0{bits}b")[::-1], 2)] for k in range(n)]
    return [c for pair in v for c in pair]


def rfft(q: str, x, inverse: bool = False, bit_reverse: bool = True):
    """arm_rfft_<q>: forward n samples -> 2n values; inverse n + 2 values -> n samples."""
    bits = BITS[q]
    n = len(x) - 2 if inverse else len(x)
    L = n // 2
    ca, cb = real_coefs(q)
    m = 8192 // n

    def hr(p):      # a rounded high word (multAcc / mult)
        return (p + (1 << 31)) >> 32

    def hs(p):      # a subtracted one (multSub)
        return ((1 << 31) - p) >> 32

    if not inverse:
        z = cfft(q, list(x), False, bit_reverse)
        out = [0] * (2 * n)
        for i in range(1, L):
            ar, ai, br, bi = z[2 * i], z[2 * i + 1], z[2 * (L - i)], z[2 * (L - i) + 1]
            (a1, a2), (b1, b2) = ca[i * m], cb[i * m]
            if q == "q15":
                re = wrap(wrap(ar * a1 - ai * a2 + br * b1 + bi * b2, 32) >> 16, 16)
                im = wrap(br * b2 - bi * b1 + ai * a1 + ar * a2, 32) >> 16
                out[2 * i], out[2 * i + 1] = re, wrap(im, 16)
                out[2 * n - 2 * i], out[2 * n - 2 * i + 1] = re, wrap(-im, 16)
            else:
                re = wrap(hr(ar * a1) + hs(ai * a2) + hs(bi * a2) + hr(br * b1), 32)
                im = wrap(hr(ar * a2) + hr(ai * a1) + hs(bi * b1) + hs(br * a2), 32)
                out[2 * i], out[2 * i + 1] = re, im
                out[2 * n - 2 * i], out[2 * n - 2 * i + 1] = re, wrap(-im, 32)
        out[n] = wrap(z[0] - z[1], 32) >> 1
        out[0] = wrap(z[0] + z[1], 32) >> 1
        return out
    z = []
    for i in range(L):
        ar, ai, br, bi = x[2 * i], x[2 * i + 1], x[2 * (L - i)], x[2 * (L - i) + 1]
        (a1, a2), (b1, b2) = ca[i * m], cb[i * m]
        if q == "q15":
            z += [wrap(wrap(br * b1 - bi * b2 + ar * a1 + ai * a2, 32) >> 16, 16),
                  wrap(wrap(ai * a1 - ar * a2 - br * b2 - bi * b1, 32) >> 16, 16)]
        else:
            z += [wrap(hr(ar * a1) + hr(ai * a2) + hr(bi * a2) + hr(br * b1), 32),
                  wrap(hr(ar * -a2) + hr(ai * a1) + hs(bi * b1) + hr(br * a2), 32)]
    return [ssat(v << 1, bits) for v in cfft(q, z, True, bit_reverse)]


# ---- matrix multiply ----------------------------------------------------------------------------------------------

def mat_mult(q: str, a, b, fast: bool = False):
    """arm_mat_mult(_fast)_<q> on lists of rows: q7 int32 sums >> 7 saturated; q15 int64 sums >> 15 saturated
    (fast: int32 sums, >> 15, wrapped to 16 bits); q31 int64 sums >> 31 wrapped (fast: the products' high words
    p >> 32 summed in an int32, << 1)."""
    k = len(b)
    out = []
    for row in a:
        line = []
        for j in range(len(b[0])):
            prods = [row[t] * b[t][j] for t in range(k)]
            if q == "q7":
                line.append(ssat(wrap(sum(prods), 32) >> 7, 8))
            elif q == "q15":
                line.append(wrap(wrap(sum(prods), 32) >> 15, 16) if fast else ssat(wrap(sum(prods) >> 15, 32), 16))
            elif fast:
                line.append(wrap(wrap(sum(p >> 32 for p in prods), 32) << 1, 32))
            else:
                line.append(wrap(wrap(sum(prods), 64) >> 31, 32))
        out.append(line)
    return out


# ---- fast math ----------------------------------------------------------------------------------------------------

def sin_table(q: str) -> list:
    """sinTable_<q>: sin(2 pi n / 512), n = 0..512, rounded half away from zero, saturated."""
    import math

    bits = BITS[q]
    out = []
    for n in range(513):
        v = math.sin(2 * 3.14159265358979 * n / 512) * (1 << (bits - 1))
        out.append(ssat(int(v + (0.5 if v > 0 else -0.5)), bits))
    return out


def sin_cos(q: str, x: int, cos: bool = False) -> int:
    """arm_sin_<q> / arm_cos_<q> of one angle (a fraction of half a turn): the table entry pair around it,
    interpolated with a 9-bit fraction, doubled."""
    bits = BITS[q]
    if cos:
        x = wrap(x + (1 << (bits - 3)), bits)
    if x < 0:
        x += 1 << (bits - 1)
    shift = bits - 10
    index, fract = x >> shift, (x & ((1 << shift) - 1)) << 9
    t = sin_table(q)
    a, b = t[index], t[index + 1]
    s = ((1 << (bits - 1)) - fract) * a >> bits           # (1 - f) a, truncated to the high half
    s = wrap(((s << bits) + fract * b) >> bits, bits)     # + f b
    return wrap(s << 1, bits)


def sqrt(q: str, x: int) -> tuple:
    """arm_sqrt_<q> of one value: (status, result); 0 for x <= 0 (status -1 for x < 0)."""
    import math

    if x <= 0:
        return (0 if x == 0 else -1), 0
    bits = BITS[q]
    qb, nb = (15, 4) if q == "q15" else (31, 5)
    lut = [min(round(1.0 / math.sqrt(i / 2**qb) / 8.0 * 2**qb), 2**qb - 1)
           for i in range(1 << (qb - 2), (1 << qb) + (1 << (qb - 2)), 1 << (qb - nb))]
    sign_bits = (32 - x.bit_length()) - (17 if q == "q15" else 1)
    even = sign_bits - (sign_bits % 2)
    n = wrap(x << even, bits)
    v = lut[(n >> (qb - nb)) - (1 << (nb - 2))]
    frac = qb - 3                                   # the guess 1/sqrt(n) has 1.0 = 2^(qb - 3)
    three = 3 << frac                               # 3.0 in that format (the C's 0x3000 / 0x30000000)
    for _ in range(3):                              # Newton: v = v (3 - n v^2) / 2
        t = wrap((v * v) >> frac, bits)
        t = wrap((n * t) >> qb, bits)
        t = wrap(three - t, bits)
        v = wrap((v * t) >> (frac + 1), bits)
    v = wrap((n * v) >> frac, bits)
    return 0, v >> (even // 2)


def mat_vec_mult(q: str, a, v):
    """arm_mat_vec_mult_<q>: q15 int64 sums >> 15 (cast to int32) saturated, where the C's __SMLALD adds pairs of
    products in a C int first (rows in groups of four: columns 2k, 2k + 1; the other rows: the pairs of each group
    of four columns); q31 int64 sums >> 31 wrapped."""
    rows, cols = len(a), len(v)
    out = []
    for i, row in enumerate(a):
        if q == "q31":
            out.append(wrap(sum(x * y for x, y in zip(row, v)) >> 31, 32))
            continue
        paired = 2 * (cols // 2) if i < 4 * (rows // 4) else 4 * (cols // 4)
        acc = sum(wrap(row[t] * v[t] + row[t + 1] * v[t + 1], 32) for t in range(0, paired, 2))
        acc += sum(row[t] * v[t] for t in range(paired, cols))
        out.append(ssat(wrap(acc >> 15, 32), 16))
    return out


# ---- MFCC and its pieces ------------------------------------------------------------------------------------------

def cmplx_mag(q: str, x):
    """arm_cmplx_mag_<q>: q15 sqrt_q31((re^2 + im^2) >> 1) >> 16; q31 sqrt_q31((re^2 >> 33) + (im^2 >> 33))."""
    out = []
    for re, im in zip(x[0::2], x[1::2]):
        if q == "q15":
            out.append(sqrt("q31", (re * re + im * im) >> 1)[1] >> 16)
        else:
            out.append(sqrt("q31", ((re * re) >> 33) + ((im * im) >> 33))[1])
    return out


def divide(q: str, num: int, den: int) -> tuple:
    """arm_divide_<q>: (status, quotient, shift) with num / den = quotient * 2^shift."""
    bits = BITS[q]
    hi = (1 << (bits - 1)) - 1
    neg = (num < 0) != (den < 0)
    if den == 0:
        return -4, (-hi - 1 if neg else hi), 0
    num, den = min(abs(num), hi), min(abs(den), hi)
    t = (num << (bits - 1)) // den
    shift = max(0, (t.bit_length() - 15) if q == "q15" else (t >> 31).bit_length())
    t >>= shift
    return 0, wrap(-t if neg else t, bits), shift


def vlog_q31(x: int) -> int:
    """arm_vlog_q31 of one value (read as unsigned): ln in q5.26, log2 found bit by bit by squaring."""
    src = x & 0xFFFFFFFF
    c = 32 - src.bit_length()
    v = src >> 1 if c == 0 else (src << (c - 1)) & 0xFFFFFFFF
    y, inc = 0, 1 << 25
    for _ in range(31):
        v = ((v * v) >> 30) & 0xFFFFFFFF
        if v >= 1 << 31:
            y += inc
            v >>= 1
        inc >>= 1
    return wrap((wrap(y - (c << 26), 32) * 0x58B90BFB) >> 31, 32)


def vlog_q15(x: int) -> int:
    """arm_vlog_q15 of one value (read as unsigned): ln in q4.11, log2 bit by bit by 15 squarings."""
    src = x & 0xFFFF
    c = 16 - src.bit_length()
    v = src >> 1 if c == 0 else (src << (c - 1)) & 0xFFFF
    y, inc = 0, 1 << 10
    for _ in range(15):
        v = ((v * v) >> 14) & 0xFFFF
        if v >= 1 << 15:
            y += inc
            v >>= 1
        inc >>= 1
    return wrap((wrap(y - (c << 11), 16) * 0x58B9) >> 15, 16)


def mfcc(q: str, x, window, filter_pos, filter_lengths, filter_coefs, dct, nb_dct):
    """arm_mfcc_<q> of one frame (the steps of dspsim.dsp.mfcc)."""
    bits = BITS[q]
    top = (1 << (bits - 1)) - 1
    n = len(x)
    m = max(min(abs(v), top) for v in x)
    norm = m not in (0, top)
    if norm:
        _, quot, sh = divide(q, top, m)
        x = scale(q, x, quot, sh) if q == "q15" else scale(q, x, quot, sh - 32 if sh == 31 else sh)
    x = mult(q, x, window)
    mag = cmplx_mag(q, rfft(q, x)[:2 * (n // 2 + 1)])
    mel, start = [], 0
    for p, ln in zip(filter_pos, filter_lengths):
        acc = dot_prod(q, mag[p:p + ln], filter_coefs[start:start + ln]) + (0x219 if q == "q15" else 0x08637BD0)
        start += ln
        mel.append(ssat(wrap(acc >> (10 if q == "q15" else 28), 32), 31))
    if norm:
        mel = scale("q31", mel, m << 16 if q == "q15" else m, 0)
    offset = (n.bit_length() - 1 + 12) * 0x02C5C860
    mel = [ssat(vlog_q31(v) + offset, 32) >> (19 if q == "q15" else 3) for v in mel]
    if q == "q15":
        mel = [wrap(v, 16) for v in mel]
    rows = [dct[r * len(mel):(r + 1) * len(mel)] for r in range(nb_dct)]
    return mat_vec_mult(q, rows, mel)


# ---- decimators and interpolators ---------------------------------------------------------------------------------

def _fir_out(q: str, acc: int, fast: bool) -> int:
    if q == "q15":
        return ssat(wrap(acc, 32) >> 15, 16) if fast else ssat(wrap(acc >> 15, 32), 16)
    return wrap(wrap(acc, 32) << 1, 32) if fast else wrap(wrap(acc, 64) >> 31, 32)


def fir_decimate(q: str, coeffs, m: int, state, x, fast: bool = False):
    """arm_fir_decimate(_fast)_<q> on one block: (y, new state); output k is the FIR at window offset k m (fast
    q31: the products' truncated high words p >> 32 in an int32, then << 1)."""
    taps = len(coeffs)
    w = list(state) + list(x)
    y = []
    for k in range(len(x) // m):
        prods = [c * v for c, v in zip(coeffs, w[k * m:k * m + taps])]
        acc = sum(p >> 32 for p in prods) if (fast and q == "q31") else sum(prods)
        y.append(_fir_out(q, acc, fast))
    return y, w[len(w) - (taps - 1):] if taps > 1 else []


def fir_interpolate(q: str, coeffs, l_factor: int, state, x):
    """arm_fir_interpolate_<q> on one block: (y, new state); L outputs per input, output j of input n from the
    polyphase coefficients coeffs[L - 1 - j + k L] over w[n + k]."""
    phase = len(coeffs) // l_factor
    w = list(state) + list(x)
    y = []
    for n in range(len(x)):
        for j in range(l_factor):
            acc = sum(coeffs[l_factor - 1 - j + k * l_factor] * w[n + k] for k in range(phase))
            y.append(_fir_out(q, acc, False))
    return y, w[len(w) - (phase - 1):] if phase > 1 else []


def cmplx_mag_squared(q: str, x):
    """arm_cmplx_mag_squared_<q>: q15 (re^2 + im^2) >> 17; q31 (re^2 >> 33) + (im^2 >> 33)."""
    return [(re * re + im * im) >> 17 if q == "q15" else ((re * re) >> 33) + ((im * im) >> 33)
            for re, im in zip(x[0::2], x[1::2])]


def cmplx_mult_cmplx(q: str, x, y):
    """arm_cmplx_mult_cmplx_<q>: each product >> 17 (q15) / >> 33 (q31), then the sum or difference."""
    sh = 17 if q == "q15" else 33
    out = []
    for a, b, c, d in zip(x[0::2], x[1::2], y[0::2], y[1::2]):
        out += [((a * c) >> sh) - ((b * d) >> sh), ((a * d) >> sh) + ((b * c) >> sh)]
    return out


def cmplx_mag_fast_q15(x):
    """arm_cmplx_mag_fast_q15: arm_sqrt_q15 of (re^2 + im^2) >> 17."""
    return [sqrt("q15", v)[1] for v in cmplx_mag_squared("q15", x)]


# ---- statistics ---------------------------------------------------------------------------------------------------

def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def power(q: str, x) -> int:
    """arm_power_<q>: sum of squares, q7 in an int32 (wrapping), q15 in an int64, q31 each square >> 14."""
    if q == "q31":
        return wrap(sum((v * v) >> 14 for v in x), 64)
    return wrap(sum(v * v for v in x), 32 if q == "q7" else 64)


def mean(q: str, x) -> int:
    """arm_mean_<q>: the sum (q15 in an int32) divided by the length, truncating toward zero."""
    return wrap(_c_div(wrap(sum(x), 32 if q == "q15" else 64), len(x)), BITS[q])


def rms(q: str, x) -> int:
    """arm_rms_<q>: sqrt of the mean square: q15 sqrt_q15(ssat16(int32((sum x^2 / n) >> 15))); q31
    sqrt_q31(clip31((sum x^2 mod 2^64) / n >> 31))."""
    if q == "q15":
        return sqrt("q15", ssat(wrap(_c_div(sum(v * v for v in x), len(x)) >> 15, 32), 16))[1]
    total = sum(v * v for v in x) % 2**64
    return sqrt("q31", ssat(wrap((total // len(x)) >> 31, 64), 32))[1]


# ---- convolution and correlation ----------------------------------------------------------------------------------

def _conv_out(q: str, acc: int) -> int:
    if q == "q31":
        return wrap(wrap(acc, 64) >> 31, 32)
    if q == "q7":
        return ssat(wrap(acc, 32) >> 7, 8)
    return ssat(wrap(acc >> 15, 32), 16)


def conv(q: str, a, b):
    """arm_conv_<q>: y[i] = sum_j a[j] b[i - j], len(a) + len(b) - 1 values."""
    return [_conv_out(q, sum(a[j] * b[i - j] for j in range(len(a)) if 0 <= i - j < len(b)))
            for i in range(len(a) + len(b) - 1)]


def correlate(q: str, a, b):
    """arm_correlate_<q>, 2 max(len) - 1 values: r[i] = sum_j a[j] b[B - 1 - i + j] placed at the end (A >= B),
    or the roles swapped and written in reverse from the start (A < B); the unwritten entries 0."""
    swap = len(a) < len(b)
    x, y = (b, a) if swap else (a, b)
    tot = len(x) + len(y) - 2
    core = [_conv_out(q, sum(x[j] * y[len(y) - 1 - (i - j)] for j in range(len(x)) if 0 <= i - j < len(y)))
            for i in range(tot + 1)]
    out = [0] * (2 * max(len(a), len(b)) - 1)
    if swap:
        out[:tot + 1] = core[::-1]
    else:
        out[len(x) - len(y):] = core
    return out
