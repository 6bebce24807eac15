"""The C library's float functions the frontend's init calls, where the result matters to the last bit.

``FreqToMel`` calls ``log1pf``, and a filterbank weight rounds ``floorf(w * 4096 + 0.5f)``: one ulp of ``log1pf``
moves a weight by one (2 of the 316 default weights, measured). The C library pymicro-features runs on
(glibc 2.36, like musl, newlib and bionic) computes ``log1pf`` with Sun's fdlibm algorithm (``s_log1pf.c``), not
correctly rounded; :func:`log1pf_fdlibm` is that algorithm, step by step in float32, written from its
description (reduce ``1 + x`` to ``2^k (1 + f)`` with a correction term ``c``, then
``log(1 + f) = f - hfsq + s (hfsq + R(z))``, ``s = f / (2 + f)``, ``R`` a degree-7 minimax polynomial in
``z = s^2``, ``ln 2`` split into a high and a low part). It agrees with glibc 2.36's ``log1pf`` on 200 000 sampled
floats (docs/frontend.md). ``cosf`` and ``powf`` (window, PCAN table) are the float32 nearest to the double
result, which glibc's agree with on every value the default tables take.
"""
from __future__ import annotations

import struct

import numpy as np

F32 = np.float32


def _bits(x) -> int:
    return struct.unpack("<i", struct.pack("<f", float(x)))[0]


def _from_bits(b: int) -> np.float32:
    return F32(struct.unpack("<f", struct.pack("<i", b))[0])


_LN2_HI, _LN2_LO = _from_bits(0x3F317180), _from_bits(0x3717F7D1)
# Lp1..Lp7, the minimax coefficients of log(1+f) = f - hfsq + s*(hfsq + R), as fdlibm states their bits
_LP = tuple(_from_bits(b) for b in (0x3F2AAAAB, 0x3ECCCCCD, 0x3E924925, 0x3E638E29, 0x3E3A3325, 0x3E1CD04F,
                                    0x3E178897))


def log1pf_fdlibm(x) -> np.float32:
    """fdlibm's ``log1pf(x)`` for finite ``x > -1``, in float32 (no FMA, FLT_EVAL_METHOD 0)."""
    x = F32(x)
    hx = _bits(x)
    ax = hx & 0x7FFFFFFF
    k, c, hu, f = 1, F32(0), 0, F32(0)
    if hx < 0x3ED413D7:
        if ax >= 0x3F800000:
            raise ValueError(f"log1pf_fdlibm: x must be > -1, got {x}")
        if ax < 0x31000000:
            if ax < 0x24800000:
                return x
            return x - x * x * F32(0.5)
        if hx > 0 or hx <= -0x416a09e1:  # (int32_t)0xbe95f61f
            k, f, hu = 0, x, 1
    if k != 0:
        if hx < 0x5A000000:
            u = F32(1.0) + x
            hu = _bits(u)
            k = (hu >> 23) - 127
            c = (F32(1.0) - (u - x)) if k > 0 else (x - (u - F32(1.0)))
            c = c / u
        else:
            u = x
            hu = _bits(u)
            k = (hu >> 23) - 127
            c = F32(0)
        hu &= 0x007FFFFF
        if hu < 0x3504F7:
            u = _from_bits(hu | 0x3F800000)
        else:
            k += 1
            u = _from_bits(hu | 0x3F000000)
            hu = (0x00800000 - hu) >> 2
        f = u - F32(1.0)
    hfsq = F32(0.5) * f * f
    kf = F32(k)
    if hu == 0:
        if f == 0:
            if k == 0:
                return F32(0)
            c = c + kf * _LN2_LO
            return kf * _LN2_HI + c
        R = hfsq * (F32(1.0) - F32(0.66666666666666666) * f)
        if k == 0:
            return f - R
        return kf * _LN2_HI - ((R - (kf * _LN2_LO + c)) - f)
    s = f / (F32(2.0) + f)
    z = s * s
    R = z * (_LP[0] + z * (_LP[1] + z * (_LP[2] + z * (_LP[3] + z * (_LP[4] + z * (_LP[5] + z * _LP[6]))))))
    if k == 0:
        return f - (hfsq - s * (hfsq + R))
    return kf * _LN2_HI - ((hfsq - (s * (hfsq + R) + (kf * _LN2_LO + c))) - f)
