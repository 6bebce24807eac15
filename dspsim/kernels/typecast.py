"""TFLite CAST between int8, uint8, int16, int32 and float32 (``tflite/kernels/cast.cc``, TFLM
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

_TYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.float32))


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
    x : int8, uint8, int16, int32 or float32 array
    dtype : "int8" | "uint8" | "int16" | "int32" | "float32"
    nan : CastNaN or "max" | "zero"
        The result of a NaN cast to an integer type.
    """
    a = np.asarray(x)
    return cast_plan(a.dtype, dtype, nan=nan)(a)


def cast_plan(x_dtype, dtype, *, nan=CastNaN.MAX):
    """:func:`cast` prepared for inputs of ``x_dtype`` (validated once); returns the lean ``run(x)``."""
    func = "cast"
    src = np.dtype(x_dtype)
    if src not in _TYPES:
        raise TypeError(f"{func}: x must have dtype {', '.join(d.name for d in _TYPES)}, got {src}")
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{func}: dtype must be one of {', '.join(d.name for d in _TYPES)}, got {dtype!r}") from None
    if dt not in _TYPES:
        raise TypeError(f"{func}: dtype must be one of {', '.join(d.name for d in _TYPES)}, got {dt}")
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


def _register():
    from .. import reference as ref
    from ..registry import Operator, SuiteCase, register

    specials = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 127.5, -128.5, 255.9, -0.5, 0.5, 65535.5, -0.0,
                         2.0**31, -2.0**31, 32767.9, -32768.9], np.float32)

    def generate(p, rng):
        from ..registry import random_codes

        if p["from"] == "float32":
            x = np.concatenate([specials, rng.uniform(-70000, 70000, 48).astype(np.float32),
                                (rng.integers(-300, 300, 64) + 0.5).astype(np.float32)])
        else:
            x = random_codes(rng, [128], p["from"])
        return dict(x=x, dtype=p["to"], nan=p["nan"])

    names = tuple(d.name for d in _TYPES)
    register(Operator(
        "cast", cast, ref.cast_oracle,
        lambda: [dict(x=specials, dtype=d, nan=n) for d in names for n in ("max", "zero")] +
                [dict(x=np.arange(-128, 128, dtype=np.int16) * 257, dtype=d) for d in names],
        "TFLite CAST (integers wrap; float -> int truncates and saturates)", generate=generate,
        params={"from": "float32", "to": "int8", "nan": "max"}, choices={"from": names, "to": names,
                                                                         "nan": ("max", "zero")},
        cases=(SuiteCase("cast-float-int8-litert", {}, 1700),
               SuiteCase("cast-float-int16-tflm", {"to": "int16", "nan": "zero"}, 1701),
               SuiteCase("cast-int32-int8-wraps", {"from": "int32", "to": "int8"}, 1702),
               SuiteCase("cast-int32-float32", {"from": "int32", "to": "float32"}, 1703))))


_register()
