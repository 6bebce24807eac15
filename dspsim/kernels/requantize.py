"""TFLite's Requantize of codes (QUANTIZE between int8 / uint8 / int16 / int32), per kernel build.

``out = clamp(MultiplyByQuantizedMultiplier(x - input_zero_point, multiplier, shift) +
output_zero_point)``, with ``(multiplier, shift) = QuantizeMultiplier(double(s_in) / double(s_out))``
(``tflite/kernels/quantize.cc``). Three builds compute the product differently:

* ``"double"``: ``reference_ops::Requantize`` (LiteRT BUILTIN_REF, TFLM): gemmlowp's
  ``RoundingDivideByPOT(SRDHM(x << left, m), right)``, the right shift rounding ties away from zero.
  Its int8 <-> uint8 fast path (equal scales and a zero-point difference of 128: ``x ^ 0x80``) gives
  the same codes as the general formula, which is exact there (``m = 2^30, shift = 1``).
* ``"single"``: ``TFLITE_SINGLE_ROUNDING`` builds, one rounding, ties toward +inf.
* ``"neon"``: ``optimized_ops::Requantize`` (LiteRT's default interpreter when XNNPACK does not take
  the node: int8 <-> uint8, or a scale ratio outside [1/256, 128]): on x86 the NEON code through
  NEON_2_SSE (``neon_check.h`` defines USE_NEON with SSE4.1), ``MultiplyByQuantizedMultiplier4Rows``
  = ``VRSHL(VQRDMULH(x << left, m), -right)``: the right shift rounds ties toward +inf. Measured:
  uint8 (s 0.1, zp 131) -> int8 (s 0.3, zp -7) differs from the reference on 396 of 1024 codes.
"""
from __future__ import annotations

import math
import numpy as np
from numba import njit

from .._errors import names_its_errors
from ._common import int_in_range
from ..fixedpoint import (CHUNK, Rounding, multiply_by_quantized_multiplier_scalar,
                          multiply_by_quantized_multiplier_single_scalar, rounding_right_shift_scalar,
                          saturating_rounding_doubling_high_mul_scalar, wrap_scalar)

_IN_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32))
_OUT_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32))
ROUNDINGS = ("double", "single", "neon")


@njit(cache=True)
def _requantize_codes(x, zi, zo, multiplier, shift, build, lo, hi, out):
    """One chunk (int64 in and out): ``clamp(MBQM(int32(x - zi)) + zo, lo, hi)``; ``build`` indexes ROUNDINGS."""
    left = max(shift, 0)
    right = max(-shift, 0)
    for i in range(x.shape[0]):
        d = wrap_scalar(x[i] - zi, 32)  # TFLite's int32 subtraction
        if build == 0:
            y = multiply_by_quantized_multiplier_scalar(d, multiplier, shift)
        elif build == 1:
            y = multiply_by_quantized_multiplier_single_scalar(d, multiplier, shift)
        else:  # VRSHL(VQRDMULH(x << left, m), -right): the left shift wraps, the right shift ties toward +inf
            y = rounding_right_shift_scalar(
                saturating_rounding_doubling_high_mul_scalar(wrap_scalar(d << left, 32), multiplier), right,
                Rounding.HALF_UP)
        out[i] = min(max(y + zo, lo), hi)


@names_its_errors
def tflite_requantize(x, *, input_zero_point, output_zero_point, multiplier, shift, out_dtype="int8",
                      rounding="double"):
    """TFLite Requantize of integer codes ``x`` to ``out_dtype`` (see the module docstring).

    Tie rules: ``"double"`` SRDHM ties toward +inf then the right shift ties away from zero;
    ``"single"`` one rounding ties toward +inf; ``"neon"`` both steps ties toward +inf. The result
    saturates to ``out_dtype``'s range (the clamp after adding the output zero point). ``x - input_zero_point``
    is an int32 subtraction in TFLite: it wraps (only an int32 ``x`` can reach beyond int32).

    Parameters
    ----------
    x : int8, uint8, int16 or int32 array
    input_zero_point, output_zero_point : int
    multiplier : int in [0, 2^31), shift : int in [-31, 30] (TFLite convention, > 0 is left)
    out_dtype : "int8" | "uint8" | "int16" | "int32"
    rounding : "double" | "single" | "neon"
    """
    a = np.asarray(x)
    if a.dtype not in _IN_TYPES:
        raise TypeError(f"tflite_requantize: x must have dtype int8, uint8, int16 or int32, got {a.dtype}")
    return tflite_requantize_plan(a.shape, a.dtype, input_zero_point=input_zero_point,
                                  output_zero_point=output_zero_point, multiplier=multiplier, shift=shift,
                                  out_dtype=out_dtype, rounding=rounding)(a)


def tflite_requantize_plan(shape, dtype, *, input_zero_point, output_zero_point, multiplier, shift, out_dtype="int8",
                           rounding="double"):
    """:func:`tflite_requantize` prepared for codes of ``shape`` and ``dtype`` (every parameter validated
    once); returns the lean ``run(x) -> codes``."""
    func = "tflite_requantize"
    if np.dtype(dtype) not in _IN_TYPES:
        raise TypeError(f"{func}: x must have dtype int8, uint8, int16 or int32, got {np.dtype(dtype)}")
    try:
        dt = np.dtype(out_dtype)
    except (TypeError, ValueError):
        dt = None
    if dt not in _OUT_TYPES:
        raise TypeError(f"{func}: out_dtype must be int8, uint8, int16 or int32, got {out_dtype!r}")
    if not isinstance(rounding, str) or rounding not in ROUNDINGS:
        raise ValueError(f"{func}: rounding must be one of {ROUNDINGS}, got {rounding!r}")
    for name, v in (("input_zero_point", input_zero_point), ("output_zero_point", output_zero_point)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not -(1 << 16) <= v <= (1 << 16):
            raise ValueError(f"{func}: {name} must be an int of at most 16 bits, got {v!r}")
    int_in_range(multiplier, 0, (1 << 31) - 1, func, "multiplier")
    int_in_range(shift, -31, 30, func, "shift")
    info = np.iinfo(dt)
    shape = tuple(int(d) for d in shape)
    size = math.prod(shape)
    args = (int(input_zero_point), int(output_zero_point), int(multiplier), int(shift), ROUNDINGS.index(rounding),
            int(info.min), int(info.max))

    def run(x):
        if size <= CHUNK:  # one int64 chunk
            out = np.empty(size, np.int64)
            wide = np.ravel(x).astype(np.int64)
            wide.flags.writeable = False  # read-only as nditer's chunks below: one numba specialisation
            _requantize_codes(wide, *args, out)
            return out.astype(dt).reshape(shape)
        out = np.empty(shape, dt)
        it = np.nditer([x, out], flags=["external_loop", "buffered", "zerosize_ok"],
                       op_flags=[["readonly"], ["writeonly"]], op_dtypes=[np.int64, np.int64], casting="unsafe",
                       buffersize=CHUNK)  # int64 chunks: temporaries of a few 256 KiB, whatever the input
        with it:
            for chunk, out_chunk in it:
                _requantize_codes(chunk, *args, out_chunk)
        return out

    return run


def _register():
    from .. import reference as ref
    from ..registry import Operator, SuiteCase, register

    codes = np.arange(-128, 128, dtype=np.int16)

    def generate(p, rng):
        from ..fixedpoint import quantize_multiplier

        m, s = quantize_multiplier(p["ratio"])
        x = (codes if p["from"] == "int8" else codes + 128).astype(p["from"])
        return dict(x=x, input_zero_point=p["input_zero_point"], output_zero_point=p["output_zero_point"],
                    multiplier=m, shift=s, out_dtype=p["to"], rounding=p["rounding"])

    register(Operator(
        "tflite_requantize", tflite_requantize, ref.tflite_requantize_oracle,
        lambda: [dict(x=codes.astype(np.int8), input_zero_point=z, output_zero_point=128 + z, multiplier=1 << 30,
                      shift=1, out_dtype="uint8", rounding=r) for z in (0, -3) for r in ROUNDINGS] +
                [dict(x=(codes + 128).astype(np.uint8), input_zero_point=131, output_zero_point=-7,
                      multiplier=1431655730, shift=-1, out_dtype=o, rounding=r) for o in ("int8", "int16")
                 for r in ROUNDINGS],
        "TFLite Requantize of int8/uint8 codes (reference, single rounding, NEON/NEON_2_SSE)", generate=generate,
        params={"from": "uint8", "to": "int8", "ratio": 1 / 3, "input_zero_point": 131, "output_zero_point": -7,
                "rounding": "neon"},
        choices={"from": ("int8", "uint8"), "to": ("int8", "uint8", "int16"), "rounding": ROUNDINGS},
        cases=(SuiteCase("requantize-u8-i8-neon-ties", {}, 1800),
               SuiteCase("requantize-u8-i8-reference", {"rounding": "double"}, 1801),
               SuiteCase("requantize-i8-u8-same-scale", {"from": "int8", "to": "uint8", "ratio": 1.0,
                                                         "input_zero_point": -3, "output_zero_point": 125,
                                                         "rounding": "double"}, 1802))))


_register()
