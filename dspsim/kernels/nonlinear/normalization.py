"""int8 L2_NORMALIZATION over the last axis: TFLite's ``reference_integer_ops::L2Normalization``
(LiteRT BUILTIN_REF and TFLM; LiteRT's optimized kernel and the XNNPACK delegate do not take int8); uint8: LiteRT's
legacy ``reference_ops::L2Normalization`` (its optimized kernel computes the same).

Per row: ``acc = sum (q - zi)^2`` (int32, exact for rows below 2^15 entries), ``(m, s) =
GetInvSqrtQuantizedMultiplierExp(acc, -1)`` (:func:`dspsim.fixedpoint.inv_sqrt_quantized_multiplier_exp`),
int8 ``out = clamp(MultiplyByQuantizedMultiplier(q - zi, m, s + 7))``: steps of 1/128 around 0, whatever the
output tensor's scale (LiteRT refuses another scale, TFLM does not look); uint8 ``out = clamp(128 +
MultiplyByQuantizedMultiplierSmallerThanOneExp(128 * (q - zi), m, s), 0, 255)``: the shift by 7 before the
multiply, not folded into its exponent, so it rounds otherwise.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ...fixedpoint import inv_sqrt_quantized_multiplier_exp, multiply_by_quantized_multiplier_scalar
from .._checks import check_tensor, zero_point

_INT8 = (np.dtype(np.int8),)
_BYTES = (np.dtype(np.int8), np.dtype(np.uint8))


@njit(cache=True)
def _l2_rows(x, depth, zi, legacy_uint8, out):
    for r in range(x.shape[0] // depth):
        acc = np.int64(0)
        for c in range(depth):
            v = np.int64(x[r * depth + c]) - zi
            acc += v * v
        m, s = inv_sqrt_quantized_multiplier_exp(acc, -1)
        for c in range(depth):
            v = np.int64(x[r * depth + c]) - zi
            if legacy_uint8:
                out[r * depth + c] = min(max(128 + multiply_by_quantized_multiplier_scalar(128 * v, m, s), 0), 255)
            else:
                out[r * depth + c] = min(max(multiply_by_quantized_multiplier_scalar(v, m, s + 7), -128), 127)


def l2_normalization(x, *, input_zero_point):
    """TFLite int8 or uint8 L2_NORMALIZATION over the last axis (see the module text; the output has x's type); the
    multiplies are TFLite's ``MultiplyByQuantizedMultiplier`` (SRDHM ties toward +inf, then a rounding shift, ties
    away from zero); an all-zero row (``acc <= 1``) uses the multiplier INT32_MAX with shift 7 (int8), 0 (uint8)."""
    func = "l2_normalization"
    x = check_tensor(x, func, "x", allowed=_BYTES)
    if x.ndim < 1:
        raise ValueError(f"{func}: x must have rank >= 1")
    zi = zero_point(input_zero_point, x.dtype, func, "input_zero_point")
    depth = x.shape[-1]
    if depth >= 1 << 15:
        raise ValueError(f"{func}: the last axis has {depth} entries; the int32 sum of squares holds fewer than 2^15")
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, x.dtype)
    _l2_rows(flat, depth, zi, x.dtype == np.uint8, out)
    return out.reshape(x.shape)
