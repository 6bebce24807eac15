"""XNNPACK's 8-bit converts (what LiteRT's default interpreter delegates for QUANTIZE): ``qs8-vcvt`` / ``qu8-vcvt``
(int8 -> int8, uint8 -> uint8) and ``f32-qs8-vcvt`` / ``f32-qu8-vcvt`` (float32 -> int8 / uint8), in numpy, a bounded
chunk at a time."""
from __future__ import annotations

import numpy as np

from ..._errors import names_its_errors
from ...fixedpoint import as_int_array
from .._checks import check_tensor, float32_scale, zero_point

_CHUNK = 1 << 15  # elements per numpy step of the XNNPACK converts: temporaries bounded, whatever the input
_BYTES = (np.dtype(np.int8), np.dtype(np.uint8))


def _byte_type(func, dtype):
    dt = np.dtype(dtype)
    if dt not in _BYTES:
        raise ValueError(f"{func}: dtype must be int8 or uint8 (qs8 / qu8), got {dt}")
    return dt


def xnnpack_q8_8(x, zi, zo, m_pos, m_neg, dtype=np.int8):
    """``clamp(((zo << 8) + 128 + (x - zi) * M) >> 8)`` to ``dtype`` (int8: qs8, uint8: qu8) with ``M`` chosen by the
    sign of ``x - zi``, :data:`_CHUNK` elements at a time."""
    out = np.empty(x.shape, dtype)
    info = np.iinfo(out.dtype)
    src, dst = x.reshape(-1), out.reshape(-1)
    for s in range(0, src.size, _CHUNK):
        d = src[s:s + _CHUNK].astype(np.int64) - zi
        acc = (zo << 8) + 0x80 + d * np.where(d >= 0, m_pos, m_neg)  # |acc| < 2^24: no int32 wrap
        dst[s:s + _CHUNK] = np.clip(acc >> 8, int(info.min), int(info.max))
    return out


def xnnpack_ratio(func, input_scale, output_scale):
    r = np.float32(float32_scale(input_scale, func, "input_scale") / float32_scale(output_scale, func, "output_scale"))
    if not 2.0**-8 <= r <= 2.0**7:
        raise ValueError(f"{func}: the scale ratio {float(r)} lies outside [1/256, 128]: LiteRT does not delegate it")
    return r


@names_its_errors
def xnnpack_convert(x, *, input_scale, input_zero_point, output_scale, output_zero_point):
    """XNNPACK ``qs8-vcvt`` / ``qu8-vcvt`` (int8 -> int8, uint8 -> uint8 QUANTIZE under LiteRT's default interpreter).

    ``M = lrintf(256 * f32(s_in / s_out))`` (8 fractional bits), ``out = clamp(((zo << 8) + 128 +
    (x - zi) * M) >> 8)``: ties toward +inf on a multiplier rounded to 1/256. The delegate takes ratios in
    [1/256, 128] only (ValueError otherwise).
    """
    x = check_tensor(x, "xnnpack_convert", "x", allowed=_BYTES)
    return xnnpack_convert_plan(input_scale=input_scale, input_zero_point=input_zero_point, output_scale=output_scale,
                                output_zero_point=output_zero_point, dtype=x.dtype)(x)


def xnnpack_convert_plan(*, input_scale, input_zero_point, output_scale, output_zero_point, dtype="int8"):
    """:func:`xnnpack_convert`'s parameters validated and derived once for codes of ``dtype`` (int8 or uint8, in
    and out); returns the lean ``run(x)``."""
    func = "xnnpack_convert"
    dt = _byte_type(func, dtype)
    r = xnnpack_ratio(func, input_scale, output_scale)
    m = int(np.rint(np.float32(256) * r))
    zi = zero_point(input_zero_point, dt, func, "input_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    return lambda x: xnnpack_q8_8(x, zi, zo, m, m, dt)


@names_its_errors
def xnnpack_quantize(x, *, scale, zero_point, dtype="int8"):
    """XNNPACK ``f32-qs8-vcvt`` / ``f32-qu8-vcvt`` (float -> int8 / uint8 QUANTIZE under LiteRT's default
    interpreter).

    ``v = f32(x * f32(1 / s))`` (a reciprocal multiply, not TFLite's divide), clamped in float to
    ``[min - zp, max - zp]`` of ``dtype``, rounded to nearest with ties to even, ``+ zp`` (docs/semantics.md §9).
    NaN is not modelled.
    """
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise TypeError(f"xnnpack_quantize: x must be float32, got {x.dtype}")
    return xnnpack_quantize_plan(scale=scale, zero_point=zero_point, dtype=dtype)(x)


def xnnpack_quantize_plan(*, scale, zero_point, dtype="int8"):
    """:func:`xnnpack_quantize`'s parameters validated and derived once; returns the lean ``run(x)`` to ``dtype``
    (int8 or uint8; ``x`` float32)."""
    func = "xnnpack_quantize"
    dt = _byte_type(func, dtype)
    info = np.iinfo(dt)
    zp = int(as_int_array(zero_point, func, "zero_point", int(info.min), int(info.max)))
    inv = np.float32(np.float32(1) / float32_scale(scale, func, "scale"))
    lo, hi = np.float32(int(info.min) - zp), np.float32(int(info.max) - zp)

    def run(x):
        out = np.empty(x.shape, dt)
        src, dst = x.reshape(-1), out.reshape(-1)
        for s in range(0, src.size, _CHUNK):
            v = np.clip(np.float32(src[s:s + _CHUNK] * inv), lo, hi)
            dst[s:s + _CHUNK] = np.rint(v).astype(np.int32) + zp
        return out

    return run
