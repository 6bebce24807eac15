"""CMSIS-DSP's fixed-point complex and real FFTs, q15 and q31 (Source/TransformFunctions: arm_cfft_q15/q31,
arm_cfft_radix4_q15/q31 (the radix-4 butterflies), arm_rfft_q15/q31 with their split steps, arm_bitreversal2), bit
for bit with the library's generic C code (docs/dsp.md §FFT).

The instances carry what CMSIS-DSP's init functions point at, computed here from the definitions of its tables:

* the complex twiddles ``twiddleCoef_<N>_q15 / _q31``: 3N/4 pairs ``cos(2 pi i / N), sin(2 pi i / N)``.
  The tables' comment says ``round(v * 2^15)``; the shipped q15 tables are ``floor(v * 2^15)`` and the q31 tables
  ``floor(v * 2^31 + 0.05)`` (v * 2^31 rounded to one decimal, then floored), both saturated at the top: those
  rules reproduce every entry of every length (checked against the C source's tables), ``round`` does not.
* the bit-reversal tables ``armBitRevIndexTable_fixed_<N>``: swap pairs (k, bitrev(k)) in log2(N) bits, which
  make the butterflies' bit-reversed output natural (the radix-4 butterflies store X2 before X1, so radix-4 and
  radix-4-by-2 lengths are both plainly bit-reversed); here the permutation itself.
* the real-FFT split tables ``realCoefA/BQ15 / Q31`` (n = 4096): ``A = (0.5 (1 - sin t), -0.5 cos t)``,
  ``B = (0.5 (1 + sin t), 0.5 cos t)``, ``t = 2 pi i / (2n)``, ``round(v * 2^15 / 2^31)`` saturated (these match
  their comment), read with the stride ``8192 / fftLenReal``.

The arithmetic, stage by stage (each stage scales down, as the C code; see docs/dsp.md for the output formats):

* q15 radix-4: the first stage reads inputs ``>> 2``; sums and differences saturate (``__SSAT(.., 16)``); outputs
  are halved (``(a >> 1) + (b >> 1)``, middle stages once more ``>> 1``); twiddle products ``(c * r + s * i) >> 16``
  in a C int, truncated to int16.
* q15 radix-4-by-2 (N = 32, 128, 512, 2048): a radix-2 stage on inputs ``>> 1`` (sum ``>> 1`` again; the
  difference times the twiddle, each product ``>> 16``), two radix-4 FFTs of N/2, then every value ``<< 1``
  (wrapping to int16).
* q31 radix-4: the first stage reads inputs ``>> 4``; twiddle products are high words ``(p >> 32)``, their sum
  ``<< 1`` (first stage) or ``>> 1`` (middle stages); sums ``>> 2`` in the middle stages; the last stage adds
  unscaled; every q31 result wraps to int32.
* q31 radix-4-by-2: inputs ``>> 2``; products rounded ``(p + 2^31) >> 32`` (multSub: ``(2^31 - p) >> 32``),
  ``<< 1``; two radix-4 FFTs of N/2, then every value ``<< 1`` (wrapping).
* inverse transforms: the same stages with the conjugate twiddles and the +-j swapped (no 1/N).
* rfft (N real samples, forward): the complex FFT of N/2 on the samples as pairs, then the split step:
  q15 ``(sum of four products) >> 16``, truncated to int16; q31 each product rounded to its high word and summed;
  output 2N values (the mirrored half conjugated: ``-(x >> 16)`` wraps). Inverse (N + 2 values in): the split
  step, the inverse complex FFT, then ``arm_shift(.., 1)`` (saturating).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .._errors import check_flag, names_its_errors
from ._checks import QTYPES, check_q

CFFT_LENGTHS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
"""The lengths arm_cfft_init_q15 / _q31 take (ARM_MATH_ARGUMENT_ERROR otherwise)."""
RFFT_LENGTHS = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
"""The lengths arm_rfft_init_q15 / _q31 take."""
_RADIX4 = (16, 64, 256, 1024, 4096)
_BITS = {"q15": 16, "q31": 32}
_REAL_N = 4096  # the realCoef tables' n


def _sat(v: int, bits: int) -> int:
    hi = (1 << (bits - 1)) - 1
    return max(-hi - 1, min(hi, v))


@functools.cache
def cfft_twiddles(q: str, n: int) -> np.ndarray:
    """``twiddleCoef_<n>_<q>``: 3n/4 interleaved (cos, sin) pairs of ``i * 2 pi / n``; q15 ``floor(v * 2^15)``,
    q31 ``floor(v * 2^31 + 0.05)``, saturated (the shipped tables' rule; see the module docstring)."""
    bits = _BITS[q]
    scale, offset = float(1 << (bits - 1)), (0.0 if q == "q15" else 0.05)
    out = []
    for i in range(3 * n // 4):
        a = i * 2 * math.pi / n
        out += [_sat(math.floor(math.cos(a) * scale + offset), bits),
                _sat(math.floor(math.sin(a) * scale + offset), bits)]
    table = np.array(out, np.int64)
    table.flags.writeable = False
    return table


@functools.cache
def bit_reversal(n: int) -> np.ndarray:
    """The permutation armBitRevIndexTable_fixed_<n> performs: element k and element bitrev(k) (log2(n) bits)
    swap places."""
    bits = n.bit_length() - 1
    perm = np.array([int(format(k, f"0{bits}b")[::-1], 2) for k in range(n)], np.int64)
    perm.flags.writeable = False
    return perm


@functools.cache
def rfft_coefs(q: str) -> tuple:
    """``(realCoefA<q>, realCoefB<q>)``, n = 4096 pairs each, ``round(v * 2^(bits - 1))`` saturated."""
    bits = _BITS[q]
    scale = float(1 << (bits - 1))
    a, b = [], []
    for i in range(_REAL_N):
        t = 2 * math.pi / (2 * _REAL_N) * i
        s, c = math.sin(t), math.cos(t)
        a += [_sat(_round(0.5 * (1.0 - s) * scale), bits), _sat(_round(0.5 * (-1.0 * c) * scale), bits)]
        b += [_sat(_round(0.5 * (1.0 + s) * scale), bits), _sat(_round(0.5 * (1.0 * c) * scale), bits)]
    out = (np.array(a, np.int64), np.array(b, np.int64))
    for t in out:
        t.flags.writeable = False
    return out


def _round(v: float) -> int:
    """C's round(): half away from zero."""
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


# ---- kernels: buf is an int64 array of interleaved (re, im), values in the q format's range -----------------------

@njit(cache=True, nogil=True, inline="always")
def _s16(v):
    return 32767 if v > 32767 else -32768 if v < -32768 else v


@njit(cache=True, nogil=True, inline="always")
def _w16(v):
    v = v & 0xFFFF
    return v - 0x10000 if v >= 0x8000 else v


@njit(cache=True, nogil=True, inline="always")
def _w32(v):
    v = v & 0xFFFFFFFF
    return v - 0x100000000 if v >= 0x80000000 else v


@njit(cache=True, nogil=True)
def _radix4_q15(x, base, n, coef, modifier, sg):
    """arm_radix4_butterfly_q15 (sg = 1) / _inverse_q15 (sg = -1) on the n complex values at x[base:]."""
    n2 = n >> 2
    ic = 0
    for i0 in range(n2):  # first stage: inputs >> 2
        i1 = i0 + n2
        i2 = i1 + n2
        i3 = i2 + n2
        p0, p1, p2, p3 = base + 2 * i0, base + 2 * i1, base + 2 * i2, base + 2 * i3
        T0 = x[p0] >> 2
        T1 = x[p0 + 1] >> 2
        S0 = x[p2] >> 2
        S1 = x[p2 + 1] >> 2
        R0 = _s16(T0 + S0)
        R1 = _s16(T1 + S1)
        S0 = _s16(T0 - S0)
        S1 = _s16(T1 - S1)
        T0 = _s16((x[p1] >> 2) + (x[p3] >> 2))
        T1 = _s16((x[p1 + 1] >> 2) + (x[p3 + 1] >> 2))
        x[p0] = (R0 >> 1) + (T0 >> 1)
        x[p0 + 1] = (R1 >> 1) + (T1 >> 1)
        R0 = _s16(R0 - T0)
        R1 = _s16(R1 - T1)
        c, s = coef[4 * ic], coef[4 * ic + 1]
        T0 = x[p1] >> 2
        T1 = x[p1 + 1] >> 2
        x[p1] = _w16((c * R0 + sg * s * R1) >> 16)
        x[p1 + 1] = _w16((-sg * s * R0 + c * R1) >> 16)
        T0 = _s16(T0 - (x[p3] >> 2))
        T1 = _s16(T1 - (x[p3 + 1] >> 2))
        R0 = _s16(S0 - sg * T1)
        R1 = _s16(S1 + sg * T0)
        S0 = _s16(S0 + sg * T1)
        S1 = _s16(S1 - sg * T0)
        c, s = coef[2 * ic], coef[2 * ic + 1]
        x[p2] = _w16((c * S0 + sg * s * S1) >> 16)
        x[p2 + 1] = _w16((-sg * s * S0 + c * S1) >> 16)
        c, s = coef[6 * ic], coef[6 * ic + 1]
        x[p3] = _w16((c * R0 + sg * s * R1) >> 16)
        x[p3 + 1] = _w16((-sg * s * R0 + c * R1) >> 16)
        ic += modifier
    modifier <<= 2
    k = n // 4
    while k > 4:  # middle stages
        n1 = n2
        n2 >>= 2
        ic = 0
        for j in range(n2):
            c1, s1 = coef[2 * ic], coef[2 * ic + 1]
            c2, s2 = coef[4 * ic], coef[4 * ic + 1]
            c3, s3 = coef[6 * ic], coef[6 * ic + 1]
            ic += modifier
            for i0 in range(j, n, n1):
                p0, p1, p2, p3 = base + 2 * i0, base + 2 * (i0 + n2), base + 2 * (i0 + 2 * n2), \
                    base + 2 * (i0 + 3 * n2)
                T0 = x[p0]
                T1 = x[p0 + 1]
                S0 = x[p2]
                S1 = x[p2 + 1]
                R0 = _s16(T0 + S0)
                R1 = _s16(T1 + S1)
                S0 = _s16(T0 - S0)
                S1 = _s16(T1 - S1)
                T0 = _s16(x[p1] + x[p3])
                T1 = _s16(x[p1 + 1] + x[p3 + 1])
                x[p0] = ((R0 >> 1) + (T0 >> 1)) >> 1
                x[p0 + 1] = ((R1 >> 1) + (T1 >> 1)) >> 1
                R0 = (R0 >> 1) - (T0 >> 1)
                R1 = (R1 >> 1) - (T1 >> 1)
                T0 = x[p1]
                T1 = x[p1 + 1]
                x[p1] = _w16((c2 * R0 + sg * s2 * R1) >> 16)
                x[p1 + 1] = _w16((-sg * s2 * R0 + c2 * R1) >> 16)
                T0 = _s16(T0 - x[p3])
                T1 = _s16(T1 - x[p3 + 1])
                R0 = (S0 >> 1) - sg * (T1 >> 1)
                R1 = (S1 >> 1) + sg * (T0 >> 1)
                S0 = (S0 >> 1) + sg * (T1 >> 1)
                S1 = (S1 >> 1) - sg * (T0 >> 1)
                x[p2] = _w16((c1 * S0 + sg * s1 * S1) >> 16)
                x[p2 + 1] = _w16((-sg * s1 * S0 + c1 * S1) >> 16)
                x[p3] = _w16((c3 * R0 + sg * s3 * R1) >> 16)
                x[p3 + 1] = _w16((-sg * s3 * R0 + c3 * R1) >> 16)
        modifier <<= 2
        k >>= 2
    n1 = n2
    n2 >>= 2
    for i0 in range(0, n - n1 + 1, n1):  # last stage: no twiddles
        p0, p1, p2, p3 = base + 2 * i0, base + 2 * (i0 + n2), base + 2 * (i0 + 2 * n2), base + 2 * (i0 + 3 * n2)
        T0 = x[p0]
        T1 = x[p0 + 1]
        S0 = x[p2]
        S1 = x[p2 + 1]
        R0 = _s16(T0 + S0)
        R1 = _s16(T1 + S1)
        S0 = _s16(T0 - S0)
        S1 = _s16(T1 - S1)
        T0 = _s16(x[p1] + x[p3])
        T1 = _s16(x[p1 + 1] + x[p3 + 1])
        x[p0] = (R0 >> 1) + (T0 >> 1)
        x[p0 + 1] = (R1 >> 1) + (T1 >> 1)
        R0 = (R0 >> 1) - (T0 >> 1)
        R1 = (R1 >> 1) - (T1 >> 1)
        T0 = x[p1]
        T1 = x[p1 + 1]
        x[p1] = R0
        x[p1 + 1] = R1
        T0 = _s16(T0 - x[p3])
        T1 = _s16(T1 - x[p3 + 1])
        x[p2] = (S0 >> 1) + sg * (T1 >> 1)
        x[p2 + 1] = (S1 >> 1) - sg * (T0 >> 1)
        x[p3] = (S0 >> 1) - sg * (T1 >> 1)
        x[p3 + 1] = (S1 >> 1) + sg * (T0 >> 1)


@njit(cache=True, nogil=True, inline="always")
def _hi(p):
    return p >> 32


@njit(cache=True, nogil=True)
def _radix4_q31(x, base, n, coef, modifier, sg):
    """arm_radix4_butterfly_q31 (sg = 1) / _inverse_q31 (sg = -1) on the n complex values at x[base:]."""
    n2 = n >> 2
    ia1 = 0
    for i0 in range(n2):  # first stage: inputs >> 4, products' high words << 1
        p0, p1, p2, p3 = base + 2 * i0, base + 2 * (i0 + n2), base + 2 * (i0 + 2 * n2), base + 2 * (i0 + 3 * n2)
        r1 = (x[p0] >> 4) + (x[p2] >> 4)
        r2 = (x[p0] >> 4) - (x[p2] >> 4)
        t1 = (x[p1] >> 4) + (x[p3] >> 4)
        s1 = (x[p0 + 1] >> 4) + (x[p2 + 1] >> 4)
        s2 = (x[p0 + 1] >> 4) - (x[p2 + 1] >> 4)
        x[p0] = _w32(r1 + t1)
        r1 = _w32(r1 - t1)
        t2 = (x[p1 + 1] >> 4) + (x[p3 + 1] >> 4)
        x[p0 + 1] = _w32(s1 + t2)
        s1 = _w32(s1 - t2)
        t1 = (x[p1 + 1] >> 4) - (x[p3 + 1] >> 4)
        t2 = (x[p1] >> 4) - (x[p3] >> 4)
        c, s = coef[4 * ia1], coef[4 * ia1 + 1]
        x[p1] = _w32((_hi(r1 * c) + sg * _hi(s1 * s)) << 1)
        x[p1 + 1] = _w32((_hi(s1 * c) - sg * _hi(r1 * s)) << 1)
        r1 = _w32(r2 + sg * t1)
        r2 = _w32(r2 - sg * t1)
        s1 = _w32(s2 - sg * t2)
        s2 = _w32(s2 + sg * t2)
        c, s = coef[2 * ia1], coef[2 * ia1 + 1]
        x[p2] = _w32((_hi(r1 * c) + sg * _hi(s1 * s)) << 1)
        x[p2 + 1] = _w32((_hi(s1 * c) - sg * _hi(r1 * s)) << 1)
        c, s = coef[6 * ia1], coef[6 * ia1 + 1]
        x[p3] = _w32((_hi(r2 * c) + sg * _hi(s2 * s)) << 1)
        x[p3 + 1] = _w32((_hi(s2 * c) - sg * _hi(r2 * s)) << 1)
        ia1 += modifier
    modifier <<= 2
    k = n // 4
    while k > 4:  # middle stages: sums >> 2, products' high words >> 1
        n1 = n2
        n2 >>= 2
        ia1 = 0
        for j in range(n2):
            c1, q1 = coef[2 * ia1], coef[2 * ia1 + 1]
            c2, q2 = coef[4 * ia1], coef[4 * ia1 + 1]
            c3, q3 = coef[6 * ia1], coef[6 * ia1 + 1]
            ia1 += modifier
            for i0 in range(j, n, n1):
                p0, p1, p2, p3 = base + 2 * i0, base + 2 * (i0 + n2), base + 2 * (i0 + 2 * n2), \
                    base + 2 * (i0 + 3 * n2)
                r1 = _w32(x[p0] + x[p2])
                r2 = _w32(x[p0] - x[p2])
                s1 = _w32(x[p0 + 1] + x[p2 + 1])
                s2 = _w32(x[p0 + 1] - x[p2 + 1])
                t1 = _w32(x[p1] + x[p3])
                x[p0] = _w32(r1 + t1) >> 2
                r1 = _w32(r1 - t1)
                t2 = _w32(x[p1 + 1] + x[p3 + 1])
                x[p0 + 1] = _w32(s1 + t2) >> 2
                s1 = _w32(s1 - t2)
                t1 = _w32(x[p1 + 1] - x[p3 + 1])
                t2 = _w32(x[p1] - x[p3])
                x[p1] = _w32(_hi(r1 * c2) + sg * _hi(s1 * q2)) >> 1
                x[p1 + 1] = _w32(_hi(s1 * c2) - sg * _hi(r1 * q2)) >> 1
                r1 = _w32(r2 + sg * t1)
                r2 = _w32(r2 - sg * t1)
                s1 = _w32(s2 - sg * t2)
                s2 = _w32(s2 + sg * t2)
                x[p2] = _w32(_hi(r1 * c1) + sg * _hi(s1 * q1)) >> 1
                x[p2 + 1] = _w32(_hi(s1 * c1) - sg * _hi(r1 * q1)) >> 1
                x[p3] = _w32(_hi(r2 * c3) + sg * _hi(s2 * q3)) >> 1
                x[p3 + 1] = _w32(_hi(s2 * c3) - sg * _hi(r2 * q3)) >> 1
        modifier <<= 2
        k >>= 2
    for g in range(n >> 2):  # last stage: groups of four, unscaled; stored a, c, b, d
        p = base + 8 * g
        xa, ya, xb, yb, xc, yc, xd, yd = x[p], x[p + 1], x[p + 2], x[p + 3], x[p + 4], x[p + 5], x[p + 6], x[p + 7]
        x[p] = _w32(xa + xb + xc + xd)
        x[p + 1] = _w32(ya + yb + yc + yd)
        x[p + 2] = _w32(xa - xb + xc - xd)
        x[p + 3] = _w32(ya - yb + yc - yd)
        x[p + 4] = _w32(xa + sg * yb - xc - sg * yd)
        x[p + 5] = _w32(ya - sg * xb - yc + sg * xd)
        x[p + 6] = _w32(xa - sg * yb - xc + sg * yd)
        x[p + 7] = _w32(ya + sg * xb - yc - sg * xd)


@njit(cache=True, nogil=True, inline="always")
def _round_hi(p):
    """SMMULR: a product's rounded high word, (p + 2^31) >> 32."""
    return (p + 0x80000000) >> 32


@njit(cache=True, nogil=True)
def _cfft(x, n, coef, is_q31, sg, perm, bit_reverse):
    """arm_cfft_q15 / _q31 in place on x (int64, 2n interleaved values)."""
    radix4 = n == 16 or n == 64 or n == 256 or n == 1024 or n == 4096
    if radix4:
        if is_q31:
            _radix4_q31(x, 0, n, coef, 1, sg)
        else:
            _radix4_q15(x, 0, n, coef, 1, sg)
    else:
        n2 = n >> 1
        for i in range(n2):  # radix-2 stage
            c, s = coef[2 * i], coef[2 * i + 1]
            pi, pl = 2 * i, 2 * (i + n2)
            if is_q31:
                xt = (x[pi] >> 2) - (x[pl] >> 2)
                x[pi] = (x[pi] >> 2) + (x[pl] >> 2)
                yt = (x[pi + 1] >> 2) - (x[pl + 1] >> 2)
                x[pi + 1] = (x[pl + 1] >> 2) + (x[pi + 1] >> 2)
                if sg == 1:  # multAcc / multSub of a rounded high word
                    r = _round_hi(xt * c) + _round_hi(yt * s)
                    m = _round_hi(yt * c) + ((0x80000000 - xt * s) >> 32)
                else:
                    r = _round_hi(xt * c) + ((0x80000000 - yt * s) >> 32)
                    m = _round_hi(yt * c) + _round_hi(xt * s)
                x[pl] = _w32(r << 1)
                x[pl + 1] = _w32(m << 1)
            else:
                xt = (x[pi] >> 1) - (x[pl] >> 1)
                x[pi] = ((x[pi] >> 1) + (x[pl] >> 1)) >> 1
                yt = (x[pi + 1] >> 1) - (x[pl + 1] >> 1)
                x[pi + 1] = ((x[pl + 1] >> 1) + (x[pi + 1] >> 1)) >> 1
                x[pl] = _w16(((xt * c) >> 16) + sg * ((yt * s) >> 16))
                x[pl + 1] = _w16(((yt * c) >> 16) - sg * ((xt * s) >> 16))
        if is_q31:
            _radix4_q31(x, 0, n2, coef, 2, sg)
            _radix4_q31(x, n, n2, coef, 2, sg)
            for i in range(2 * n):
                x[i] = _w32(x[i] << 1)
        else:
            _radix4_q15(x, 0, n2, coef, 2, sg)
            _radix4_q15(x, n, n2, coef, 2, sg)
            for i in range(2 * n):
                x[i] = _w16(x[i] << 1)
    if bit_reverse:
        y = x.copy()
        for k in range(n):
            x[2 * k] = y[2 * perm[k]]
            x[2 * k + 1] = y[2 * perm[k] + 1]


@njit(cache=True, nogil=True)
def _split_rfft(src, L, ca, cb, modifier, is_q31, dst):
    """arm_split_rfft_q15 / _q31: the complex FFT of L pairs (src, 2L values) -> 4L values of the real FFT."""
    for i in range(1, L):
        ar, ai = src[2 * i], src[2 * i + 1]
        br, bi = src[2 * (L - i)], src[2 * (L - i) + 1]
        k = 2 * i * modifier
        a1, a2, b1, b2 = ca[k], ca[k + 1], cb[k], cb[k + 1]
        if is_q31:  # CMSIS uses -a2 for b2 here (B's imaginary part is -A's)
            dst[2 * i] = _w32(_round_hi(ar * a1) + ((0x80000000 - ai * a2) >> 32) + ((0x80000000 - bi * a2) >> 32)
                              + _round_hi(br * b1))
            dst[2 * i + 1] = _w32(_round_hi(ar * a2) + _round_hi(ai * a1) + ((0x80000000 - bi * b1) >> 32)
                                  + ((0x80000000 - br * a2) >> 32))
        else:
            dst[2 * i] = _w16(_w32(ar * a1 - ai * a2 + br * b1 + bi * b2) >> 16)
            dst[2 * i + 1] = _w32(br * b2 - bi * b1 + ai * a1 + ar * a2) >> 16   # fits int16
    for i in range(1, L):  # the mirrored half, conjugated (a loop of its own: the first one then vectorizes)
        dst[4 * L - 2 * i] = dst[2 * i]
        dst[4 * L - 2 * i + 1] = _w32(-dst[2 * i + 1]) if is_q31 else _w16(-dst[2 * i + 1])
    if is_q31:
        dst[2 * L] = _w32(src[0] - src[1]) >> 1
        dst[0] = _w32(src[0] + src[1]) >> 1
    else:
        dst[2 * L] = (src[0] - src[1]) >> 1
        dst[0] = (src[0] + src[1]) >> 1
    dst[2 * L + 1] = 0
    dst[1] = 0


@njit(cache=True, nogil=True)
def _split_rifft(src, L, ca, cb, modifier, is_q31, dst):
    """arm_split_rifft_q15 / _q31: 2L + 2 spectrum values -> L pairs for the inverse complex FFT."""
    for i in range(L):
        ar, ai = src[2 * i], src[2 * i + 1]
        br, bi = src[2 * (L - i)], src[2 * (L - i) + 1]
        k = 2 * i * modifier
        a1, a2, b1, b2 = ca[k], ca[k + 1], cb[k], cb[k + 1]
        if is_q31:
            out_r = _round_hi(ar * a1) + _round_hi(ai * a2) + _round_hi(bi * a2) + _round_hi(br * b1)
            out_i = _round_hi(ar * -a2) + _round_hi(ai * a1) + ((0x80000000 - bi * b1) >> 32) + _round_hi(br * a2)
            dst[2 * i] = _w32(out_r)
            dst[2 * i + 1] = _w32(out_i)
        else:
            dst[2 * i] = _w16(_w32(br * b1 - bi * b2 + ar * a1 + ai * a2) >> 16)
            dst[2 * i + 1] = _w16(_w32(ai * a1 - ar * a2 - br * b2 - bi * b1) >> 16)


@njit(cache=True, nogil=True)
def _rfft(x, n, ifft, coef, perm, bit_reverse, ca, cb, modifier, is_q31):
    """arm_rfft_q15 / _q31: forward x (n) -> 2n values; inverse x (n + 2) -> n values."""
    L = n >> 1
    sg = -1 if ifft else 1
    if ifft:
        out = np.zeros(n, np.int64)
        _split_rifft(x, L, ca, cb, modifier, is_q31, out)
        _cfft(out, L, coef, is_q31, sg, perm, bit_reverse)
        for i in range(n):  # arm_shift(.., 1): saturating
            v = out[i] << 1
            if is_q31:
                out[i] = 0x7FFFFFFF if v > 0x7FFFFFFF else -0x80000000 if v < -0x80000000 else v
            else:
                out[i] = _s16(v)
        return out
    buf = x.copy()
    _cfft(buf, L, coef, is_q31, sg, perm, bit_reverse)
    out = np.zeros(2 * n, np.int64)
    _split_rfft(buf, L, ca, cb, modifier, is_q31, out)
    return out


# ---- instances and the public functions ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CfftInstance:
    """``arm_cfft_instance_q15`` / ``_q31``: the length, the twiddles and the bit-reversal permutation."""

    q: str
    fft_len: int
    twiddles: np.ndarray
    bit_rev: np.ndarray


@dataclass(frozen=True)
class RfftInstance:
    """``arm_rfft_instance_q15`` / ``_q31``: the real length, the direction, the bit-reversal flag, the complex
    FFT of half the length and the split tables with their stride (twidCoefRModifier)."""

    q: str
    fft_len_real: int
    ifft_flag_r: bool
    bit_reverse_flag: bool
    cfft: CfftInstance
    coef_a: np.ndarray
    coef_b: np.ndarray
    modifier: int


def _length(func, n, lengths):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{func}: the FFT length must be an int, got {type(n).__name__}")
    if int(n) not in lengths:
        raise ValueError(f"{func}: the FFT length must be one of {', '.join(map(str, lengths))} "
                         f"(ARM_MATH_ARGUMENT_ERROR), got {int(n)}")
    return int(n)


def _cfft_init(func, n, q):
    n = _length(func, n, CFFT_LENGTHS)
    return CfftInstance(q, n, cfft_twiddles(q, n), bit_reversal(n))


def _cfft_run(func, S, x, ifft_flag, bit_reverse_flag, q):
    if not isinstance(S, CfftInstance) or S.q != q:
        raise TypeError(f"{func}: S must be a CfftInstance of {q} (from arm_cfft_init_{q}), got {S!r}"[:200])
    x = check_q(x, func, "x", q)
    if x.shape[0] != 2 * S.fft_len:
        raise ValueError(f"{func}: x must hold 2 * fft_len = {2 * S.fft_len} values (re, im interleaved), "
                         f"got {x.shape[0]}")
    ifft = check_flag(ifft_flag, func, "ifft_flag")
    rev = check_flag(bit_reverse_flag, func, "bit_reverse_flag")
    buf = x.astype(np.int64)
    _cfft(buf, S.fft_len, S.twiddles, q == "q31", -1 if ifft else 1, S.bit_rev, rev)
    return buf.astype(QTYPES[q])


def _rfft_init(func, n, ifft_flag_r, bit_reverse_flag, q):
    n = _length(func, n, RFFT_LENGTHS)
    ifft = check_flag(ifft_flag_r, func, "ifft_flag_r")
    rev = check_flag(bit_reverse_flag, func, "bit_reverse_flag")
    a, b = rfft_coefs(q)
    return RfftInstance(q, n, ifft, rev, _cfft_init(func, n // 2, q), a, b, 2 * _REAL_N // n)


def _rfft_run(func, S, x, q):
    if not isinstance(S, RfftInstance) or S.q != q:
        raise TypeError(f"{func}: S must be an RfftInstance of {q} (from arm_rfft_init_{q}), got {S!r}"[:200])
    x = check_q(x, func, "x", q)
    want = S.fft_len_real + 2 if S.ifft_flag_r else S.fft_len_real
    if x.shape[0] != want:
        raise ValueError(f"{func}: x must hold {want} values ({'fft_len_real + 2 spectrum values' if S.ifft_flag_r else 'fft_len_real samples'}), got {x.shape[0]}")
    out = _rfft(x.astype(np.int64), S.fft_len_real, S.ifft_flag_r, S.cfft.twiddles, S.cfft.bit_rev,
                S.bit_reverse_flag, S.coef_a, S.coef_b, S.modifier, q == "q31")
    return out.astype(QTYPES[q])


@names_its_errors
def arm_cfft_init_q15(fft_len) -> CfftInstance:
    """A q15 complex FFT of ``fft_len`` in {16, 32, ..., 4096} points."""
    return _cfft_init("arm_cfft_init_q15", fft_len, "q15")


@names_its_errors
def arm_cfft_init_q31(fft_len) -> CfftInstance:
    """A q31 complex FFT of ``fft_len`` in {16, 32, ..., 4096} points."""
    return _cfft_init("arm_cfft_init_q31", fft_len, "q31")


@names_its_errors
def arm_cfft_q15(S, x, ifft_flag=False, bit_reverse_flag=True):
    """The q15 complex FFT (inverse: ``ifft_flag``) of ``x`` (int16, 2 * fft_len values, re/im interleaved), as
    ``arm_cfft_q15`` leaves the buffer: scaled down by fft_len (see docs/dsp.md), bit-reversed unless
    ``bit_reverse_flag``."""
    return _cfft_run("arm_cfft_q15", S, x, ifft_flag, bit_reverse_flag, "q15")


@names_its_errors
def arm_cfft_q31(S, x, ifft_flag=False, bit_reverse_flag=True):
    """The q31 complex FFT (inverse: ``ifft_flag``) of ``x`` (int32, 2 * fft_len values, re/im interleaved)."""
    return _cfft_run("arm_cfft_q31", S, x, ifft_flag, bit_reverse_flag, "q31")


@names_its_errors
def arm_rfft_init_q15(fft_len_real, ifft_flag_r=False, bit_reverse_flag=True) -> RfftInstance:
    """A q15 real FFT (inverse: ``ifft_flag_r``) of ``fft_len_real`` in {32, 64, ..., 8192} points."""
    return _rfft_init("arm_rfft_init_q15", fft_len_real, ifft_flag_r, bit_reverse_flag, "q15")


@names_its_errors
def arm_rfft_init_q31(fft_len_real, ifft_flag_r=False, bit_reverse_flag=True) -> RfftInstance:
    """A q31 real FFT (inverse: ``ifft_flag_r``) of ``fft_len_real`` in {32, 64, ..., 8192} points."""
    return _rfft_init("arm_rfft_init_q31", fft_len_real, ifft_flag_r, bit_reverse_flag, "q31")


@names_its_errors
def arm_rfft_q15(S, x):
    """Forward: fft_len_real int16 samples -> 2 * fft_len_real values (the whole spectrum, re/im interleaved).
    Inverse: fft_len_real + 2 values (bins 0 .. fft_len_real / 2) -> fft_len_real samples."""
    return _rfft_run("arm_rfft_q15", S, x, "q15")


@names_its_errors
def arm_rfft_q31(S, x):
    """As :func:`arm_rfft_q15`, on int32."""
    return _rfft_run("arm_rfft_q31", S, x, "q31")
