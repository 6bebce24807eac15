"""Quantized SUM (int8 / uint8 / int16): TFLite's ``QuantizedMeanOrSum`` (compute_sum) and XNNPACK's ``sum_nd``.

TFLite (``reference/reduce.h::QuantizedMeanOrSum``, tflite-micro ``reduce_common.cc``, LiteRT
``reduce.cc``): an int32 sum of the codes over the reduced axes, the input zero point times the
element count taken off, ``MultiplyByQuantizedMultiplier`` with ``QuantizeMultiplier(double(s_in) /
double(s_out))``, the output zero point added, clamped to the type. LiteRT 2.3's *reference*
registration (``Register_SUM_REF``, i.e. ``OpResolverType.BUILTIN_REF``) instantiates that kernel with
``uint8_t`` data for int8 tensors (``QuantizedMeanOrSum<...>(GetTensorData<uint8_t>(...))``): it reads
every int8 code as its byte (``-1`` as 255) and clamps to [0, 255] before the byte is stored into
the int8 output. ``codes_as_uint8=True`` reproduces that defect; tflite-micro and LiteRT's optimized
kernel compute the sum of the int8 codes. Its int16 SUM is the same instantiation: the first half of the int16
input's bytes are read as uint8 codes and only the first half of the output's bytes are written (the rest is
whatever the arena held), so dspsim refuses an int16 SUM under the LiteRT reference engine.
"""
from __future__ import annotations

import numpy as np

from ..._errors import check_flag, names_its_errors
from .._checks import float32_scale, q31_multiplier, resolve_axes, scalar_int
from ..quantize.requantize import _requantize_codes
from .._checks import check_spec, check_tensor, zero_point

__all__ = ["reduce_sum", "reduce_sum_plan", "xnnpack_sum", "xnnpack_sum_plan"]

_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


def _spec_and_axes(func, shape, dtype, axis, input_zero_point, output_zero_point):
    shape, dt = check_spec(func, "x", shape, dtype, _TYPES)
    axes = resolve_axes(axis, len(shape), func)
    zi = zero_point(input_zero_point, dt, func, "input_zero_point")
    zo = zero_point(output_zero_point, dt, func, "output_zero_point")
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if axes else 1
    return shape, dt, axes, zi, zo, n


def _int32_sum(x, axes, keep_dims):
    total = x.astype(np.int64).sum(axis=axes, keepdims=keep_dims)
    return (total + (1 << 31)) % (1 << 32) - (1 << 31)


@names_its_errors
def reduce_sum(x, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False,
               codes_as_uint8=False):
    """TFLite quantized SUM (``reference_ops::QuantizedMeanOrSum``, compute_sum=true)::

        acc = int32(sum of the codes over ``axis`` - zp_in * n)     # n = reduced element count; wraps
        out = clamp(MBQM(acc, multiplier, shift) + zp_out)          # to the dtype's range

    MBQM (``MultiplyByQuantizedMultiplier``) rounds twice: SRDHM ties toward +inf, the right shift
    ties away from zero; a left shift (``shift > 0``) wraps in int32. The clamp is the only saturation.
    ``multiplier``/``shift`` = ``QuantizeMultiplier(double(s_in) / double(s_out))``. Negative and
    repeated axes resolve as TFLite's ResolveAxis does.

    ``codes_as_uint8=True`` (int8 only) is LiteRT 2.3 BUILTIN_REF's defect: the codes are summed as
    their bytes (``c mod 256``) and the result is clamped to [0, 255], then stored as that byte (so
    200 comes back as -56); the zero points are the int8 ones.
    """
    x = check_tensor(x, "reduce_sum", "x", allowed=_TYPES)
    return reduce_sum_plan(x.shape, x.dtype, axis, input_zero_point=input_zero_point,
                           output_zero_point=output_zero_point, multiplier=multiplier, shift=shift,
                           keep_dims=keep_dims, codes_as_uint8=codes_as_uint8)(x)


def reduce_sum_plan(shape, dtype, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False,
                    codes_as_uint8=False):
    """:func:`reduce_sum` prepared for codes of ``shape`` and ``dtype`` (validated once); returns the lean
    ``run(x) -> codes``."""
    func = "reduce_sum"
    shape, dt, axes, zi, zo, n = _spec_and_axes(func, shape, dtype, axis, input_zero_point, output_zero_point)
    m = q31_multiplier(multiplier, func, "multiplier")
    s = scalar_int(shift, func, "shift", -31, 30)
    keep_dims = check_flag(keep_dims, func, "keep_dims")
    as_bytes = check_flag(codes_as_uint8, func, "codes_as_uint8")
    if as_bytes:
        if dt != np.int8:
            raise ValueError(f"{func}: codes_as_uint8 models LiteRT's int8 defect; x must be int8, got {dt}")
        lo, hi = 0, 255
    else:
        info = np.iinfo(dt)
        lo, hi = int(info.min), int(info.max)
    offset, args = zi * n, (0, zo, m, s, 0, lo, hi)  # the "double" MBQM of tflite_requantize's core

    def run(x):
        acc = (x.view(np.uint8) if as_bytes else x).astype(np.int64).sum(axis=axes, keepdims=keep_dims) - offset
        # the int32 sum (TFLite's accumulator) and the zero-point term wrap in the core, as one int32 wrap
        v = np.empty(np.size(acc), np.int64)
        _requantize_codes(np.ravel(acc), *args, v)
        out = v.astype(np.uint8).view(np.int8) if as_bytes else v.astype(dt)
        return out.reshape(np.shape(acc))

    return run


@names_its_errors
def xnnpack_sum(x, axis, *, input_scale, input_zero_point, output_scale, output_zero_point, keep_dims=False):
    """XNNPACK ``sum_nd`` on int8 (LiteRT's default interpreter): an int32 sum of the codes, then
    XNNPACK's reference int32 -> qs8 convert with the zero point folded in (``reduce-nd.c``)::

        inv = f32(s_in / s_out)
        zp' = f32(zo - f32(float(n * zi) * inv))
        out = clamp(nearbyint(f32(f32(float(sum) * inv) + zp')))   # ties to even

    ``float(sum)`` rounds above 2^24; no fused multiply-add (baseline x86-64 build). Like
    :func:`dspsim.kernels.reduce.mean.xnnpack_mean` with the ``1 / n`` factor left out.
    """
    if np.asarray(x).dtype != np.int8:
        raise TypeError(f"xnnpack_sum: x must be int8, got {np.asarray(x).dtype}")
    x = check_tensor(x, "xnnpack_sum", "x", allowed=_TYPES)
    return xnnpack_sum_plan(x.shape, x.dtype, axis, input_scale=input_scale, input_zero_point=input_zero_point,
                            output_scale=output_scale, output_zero_point=output_zero_point, keep_dims=keep_dims)(x)


def xnnpack_sum_plan(shape, dtype, axis, *, input_scale, input_zero_point, output_scale, output_zero_point,
                     keep_dims=False):
    """:func:`xnnpack_sum` prepared for int8 codes of ``shape`` (validated and derived once); returns the lean
    ``run(x) -> int8``."""
    func = "xnnpack_sum"
    if np.dtype(dtype) != np.int8:
        raise TypeError(f"{func}: x must be int8, got {np.dtype(dtype)}")
    shape, dt, axes, zi, zo, n = _spec_and_axes(func, shape, dtype, axis, input_zero_point, output_zero_point)
    inv = np.float32(float32_scale(input_scale, func, "input_scale") / float32_scale(output_scale, func, "output_scale"))
    zp = np.float32(np.float32(zo) - np.float32(np.float32(np.int64(n * zi).astype(np.int32)) * inv))
    keep_dims = check_flag(keep_dims, func, "keep_dims")

    def run(x):
        acc = _int32_sum(x, axes, keep_dims).astype(np.int32)
        y = np.rint(np.float32(np.float32(acc.astype(np.float32) * inv) + zp))
        return np.clip(y, -128, 127).astype(np.int8)

    return run


@names_its_errors
def litert_optimized_sum_plan(shape, dtype, axis, *, input_scale, input_zero_point, output_scale, output_zero_point,
                              keep_dims=False):
    """LiteRT's optimized int8 / int16 SUM (``reduce.cc`` ``kGenericOptimized``: the float ``QuantizedMeanOrSum``)
    prepared for codes of ``shape``; returns the lean ``run(x) -> codes``::

        scale = f32(s_in / s_out);  bias = f32(f32(-zi * scale) * n)
        out   = clamp(TfLiteRound(f32(f32(float(sum of the raw codes) * scale) + bias)) + zo, type min, type max)

    float32 throughout, ``float(sum)`` rounding above 2^24; ties away from zero (``TfLiteRound``), where
    XNNPACK's ``sum_nd`` rounds them to even. The clamp is the only saturation. Measured: the 8 int8 SUM
    goldens of ``tests/golden/litert_optimized.npz``, power-of-two ties included.
    """
    func = "litert_optimized_sum"
    if np.dtype(dtype) not in (np.int8, np.int16):
        raise TypeError(f"{func}: x must be int8 or int16, got {np.dtype(dtype)}")
    shape, dt, axes, zi, zo, n = _spec_and_axes(func, shape, dtype, axis, input_zero_point, output_zero_point)
    scale = np.float32(float32_scale(input_scale, func, "input_scale") / float32_scale(output_scale, func,
                                                                                      "output_scale"))
    bias = np.float32(np.float32(np.float32(-zi) * scale) * np.float32(n))
    keep_dims = check_flag(keep_dims, func, "keep_dims")
    lo, hi = int(np.iinfo(dt).min), int(np.iinfo(dt).max)

    def run(x):
        y = np.float32(np.float32(_int32_sum(x, axes, keep_dims).astype(np.int32).astype(np.float32) * scale) + bias)
        r = np.sign(y) * np.floor(np.abs(y) + np.float32(0.5))  # TfLiteRound: ties away from zero
        return np.clip(r + zo, lo, hi).astype(dt)

    return run
