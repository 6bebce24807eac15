"""TFLite CAST between int8, uint8, int16, int32, uint32 and float32 (``tflite/kernels/cast.cc``, TFLM
``micro/kernels/cast.cc``).

* integer -> integer: C++'s ``static_cast``, two's complement: the value modulo 2^bits (wraps).
* integer -> float32: the nearest float32 (ties to even; exact up to 2^24).
* float32 -> integer: truncation toward zero, saturated to the target range (LiteRT's
  ``SafeCast``; TFLM's ``static_cast`` measured the same on the tflite-micro wheel). NaN gives the
  target's maximum under LiteRT and 0 under TFLM (:class:`CastNaN`).
* float32 -> float32 and same-type casts copy.
"""
from __future__ import annotations

from enum import Enum

import numpy as np

CAST_TYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.uint32, np.float32))


class CastNaN(str, Enum):
    """What a float32 NaN becomes when cast to an integer type."""

    MAX = "max"
    """The target type's maximum (LiteRT's ``SafeCast<ToT>(value, max)``)."""
    ZERO = "zero"
    """0 (TFLM, measured on the tflite-micro interpreter; its source is a plain ``static_cast``)."""


def cast(x, dtype, *, nan=CastNaN.MAX):
    """TFLite CAST of ``x`` to ``dtype`` (see the module docstring for each direction).

    Parameters
    ----------
    x : int8, uint8, int16, int32, uint32 or float32 array
    dtype : "int8" | "uint8" | "int16" | "int32" | "uint32" | "float32"
    nan : CastNaN or "max" | "zero"
        The result of a NaN cast to an integer type.
    """
    a = np.asarray(x)
    return cast_plan(a.dtype, dtype, nan=nan)(a)


def cast_plan(x_dtype, dtype, *, nan=CastNaN.MAX):
    """:func:`cast` prepared for inputs of ``x_dtype`` (validated once); returns the lean ``run(x)``."""
    func = "cast"
    src = np.dtype(x_dtype)
    if src not in CAST_TYPES:
        raise TypeError(f"{func}: x must have dtype {', '.join(d.name for d in CAST_TYPES)}, got {src}")
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{func}: dtype must be one of {', '.join(d.name for d in CAST_TYPES)}, got {dtype!r}") from None
    if dt not in CAST_TYPES:
        raise TypeError(f"{func}: dtype must be one of {', '.join(d.name for d in CAST_TYPES)}, got {dt}")
    try:
        nan = CastNaN(nan)
    except ValueError:
        raise ValueError(f"{func}: nan must be 'max' or 'zero', got {nan!r}") from None
    if src.kind != "f" or dt.kind == "f":
        return lambda a: a.astype(dt)  # wraps (integers), rounds to nearest even (to float32): numpy's C casts
    info = np.iinfo(dt)
    nan_code = info.max if nan == CastNaN.MAX else 0

    def run(a):
        t = np.trunc(a.astype(np.float64))
        out = np.asarray(np.clip(t, info.min, info.max))  # +-inf saturate; NaN stays NaN until the next line
        out[np.isnan(t)] = nan_code
        return out.astype(dt)

    return run
