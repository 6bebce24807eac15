"""The quantized ReLU family: TFLite ReluX (requantizing), LeakyReLU, TFLM Relu6, PyTorch relu.

TFLite ``QuantizedReluX`` (``activations.cc``, docs/semantics.md §3)::

    out = clamp(zo + MultiplyByQuantizedMultiplier(q - zi, M, shift), act_min, act_max)

with ``M, shift = QuantizeMultiplier(double(f32(s_in / s_out)))``; equal scales give
``(2^30, 1)``, an exact identity. The requantization is :func:`dspsim.requant.requantize`'s.
"""
from __future__ import annotations

import math
from enum import Enum

import numpy as np

from .._errors import names_its_errors
from numba import njit

from .._jit import parallel_rows
from ..dtypes import int_type
from ..fixedpoint import as_int_array, multiply_by_quantized_multiplier, quantize_multiplier, tflite_round
from ..requant import Arithmetic, FloatBias, Requant, output_range, requantize_value
from ._checks import check_spec, check_tensor, zero_point
from .quantize.xnnpack import xnnpack_q8_8, xnnpack_ratio

_RELU_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
_IDENTITY = (1 << 30, 1)  # QuantizeMultiplier(1.0)
_RANGES = {"none": (None, None), "relu": (0.0, None), "relu6": (0.0, 6.0), "relu_n1_to_1": (-1.0, 1.0)}


def _quantized_bound(f, scale, zo, fused, func):
    """TFLite's ``zo + int32(TfLiteRound(f32(f / scale)))`` (ties away from zero) with its int32 edge cases:
    a rounded value beyond int32 is refused (LiteRT refuses the model: ``CalculateActivationRangeQuantized``'s
    overflow check), 2^31 itself becomes INT32_MIN as x86's ``cvttss2si`` makes it (a fused activation only;
    in the standalone ReluX ops it is undefined behaviour, refused), and ``zo + q`` wraps in int32."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # a non-finite quotient is refused below
        v = np.float32(np.float32(f) / np.float32(scale))
    if not np.isfinite(v):
        raise ValueError(f"{func}: the bound {f} / scale {scale:.9g} is not finite in float32")
    r = tflite_round(v)
    if not -(1 << 31) <= r <= (1 << 31) or (r == 1 << 31 and not fused):
        raise ValueError(f"{func}: the bound {f} / scale {scale:.9g} = {r} overflows int32 "
                         f"({'LiteRT refuses the model' if fused else 'undefined behaviour in ReluX'})")
    q = -(1 << 31) if r == 1 << 31 else r
    return ((zo + q + (1 << 31)) % (1 << 32)) - (1 << 31)


def _check_scale(value, func, name):
    """A scale that is finite and positive after rounding to float32 (TFLite stores float32 scales)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{func}: {name} must be a float, got {type(value).__name__}")
    with np.errstate(over="ignore", under="ignore"):
        f32 = np.float32(value)
    if not math.isfinite(value) or value <= 0 or not np.isfinite(f32) or f32 <= 0:
        raise ValueError(f"{func}: {name} must be finite and positive in float32, got {value}")
    return float(f32)


@names_its_errors
def tflite_activation_range(activation, output_scale, output_zero_point, out_dtype="int8", *, fused=True):
    """TFLite ``CalculateActivationRangeQuantized``: (act_min, act_max) of a fused activation.

    ``q(f) = zo + TfLiteRound(f32(f / s_out))`` (ties away from zero); ``"relu"``:
    ``[max(qmin, q(0)), qmax]``; ``"relu6"``: ``[max(qmin, q(0)), min(qmax, q(6))]``;
    ``"relu_n1_to_1"``: ``[max(qmin, q(-1)), min(qmax, q(1))]``; ``"none"``/None: ``[qmin, qmax]``.
    A bound whose rounded value overflows int32 is refused (ValueError), as LiteRT refuses the model;
    the rounded value 2^31 becomes INT32_MIN (x86) and ``zo + q`` wraps in int32. ``fused=False``: the
    standalone ReLU ops (:func:`relu6`, :func:`relu_n1_to_1`), same formula, where 2^31 is refused too.
    """
    func = "tflite_activation_range"
    key = "none" if activation is None else activation
    if key not in _RANGES:
        raise ValueError(f"{func}: activation must be one of {sorted(_RANGES)} or None, got {activation!r}")
    t = int_type(out_dtype, func)
    s_out = _check_scale(output_scale, func, "output_scale")
    zo = zero_point(output_zero_point, t.dtype, func, "output_zero_point")
    lo_f, hi_f = _RANGES[key]
    lo = t.min if lo_f is None else max(t.min, _quantized_bound(lo_f, s_out, zo, fused, func))
    hi = t.max if hi_f is None else min(t.max, _quantized_bound(hi_f, s_out, zo, fused, func))
    return lo, hi


@names_its_errors
def relu(x, *, input_zero_point, output_zero_point=None, multiplier=None, shift=None, act_min=None,
         act_max=None, rounding="double", out_dtype=None):
    """TFLite ``ReluX`` on integers: requantize ``q - zi`` to the output scale, ``+ zo``, clamp.

    Parameters
    ----------
    x : int8, uint8 or int16 array
    input_zero_point : int
    output_zero_point : int, optional (default ``input_zero_point``)
    multiplier, shift : int, optional
        The input-to-output scale ratio as TFLite's Q31 pair; default ``(2^30, 1)`` (equal scales,
        exact identity). ``rounding``: "double" (default) or "single".
    act_min : int, optional
        Default ``max(qmin, zo)``: the quantized 0, i.e. ReLU.
    act_max : int, optional
        Default ``qmax``; ReLU6 passes ``zo + round(6 / s_out)`` (see :func:`tflite_activation_range`).
    out_dtype : default the dtype of ``x``

    Returns ``clamp(zo + MultiplyByQuantizedMultiplier(x - zi, multiplier, shift), act_min, act_max)``.
    """
    x = check_tensor(x, "relu", "x", allowed=_RELU_TYPES)
    return relu_plan(x.shape, x.dtype, input_zero_point=input_zero_point, output_zero_point=output_zero_point,
                     multiplier=multiplier, shift=shift, act_min=act_min, act_max=act_max, rounding=rounding,
                     out_dtype=out_dtype)(x)


def relu_plan(shape, dtype, *, input_zero_point, output_zero_point=None, multiplier=None, shift=None, act_min=None,
              act_max=None, rounding="double", out_dtype=None):
    """:func:`relu` prepared for codes of ``shape`` and ``dtype`` (every parameter validated once); returns
    the lean ``run(x) -> codes``."""
    func = "relu"
    shape, dtype = check_spec(func, "x", shape, dtype, _RELU_TYPES)
    t = int_type(dtype if out_dtype is None else out_dtype, func)
    zi = zero_point(input_zero_point, dtype, func, "input_zero_point")
    zo = zi if output_zero_point is None else zero_point(output_zero_point, t.dtype, func, "output_zero_point")
    if (multiplier is None) != (shift is None):
        raise ValueError(f"{func}: give both multiplier and shift, or neither")
    m, s = _IDENTITY if multiplier is None else (multiplier, shift)
    try:
        rq = Requant.fixed_point(m, s, rounding)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{func}: {str(e).replace('Requant.fixed_point: ', '')}") from None
    if rq.channels != 1:
        raise ValueError(f"{func}: multiplier and shift must be scalars")
    lo = max(t.min, zo) if act_min is None else act_min
    return _requant_plan(func, shape, zi, rq, zo, lo, act_max, t)


def _make_rows(arith, tie):
    """The ReluX loop ``clamp(zo + requant(q - zi), lo, hi)`` for the fixed-point ``arith``
    (:class:`dspsim.requant.Arithmetic`; None: the identity pair ``(2^30, 1)``, a plain clamp) and its
    tie rule, compile-time constants so that LLVM vectorizes the loop. ``nogil``:
    :func:`dspsim._jit.parallel_rows` runs row ranges on several threads."""
    identity = arith is None
    arith = Arithmetic.FIXED_POINT_DOUBLE if identity else arith

    @njit(cache=True, nogil=True)
    def rows(x, n, zi, zo, mult, shift, lo, hi, out, r0, r1):
        for r in range(r0, r1):
            row = x[r * n:(r + 1) * n]  # row slices vectorize, ``r * n + j`` indices do not
            orow = out[r * n:(r + 1) * n]
            for j in range(row.shape[0]):
                v = np.int64(row[j]) - zi
                if not identity:
                    v = requantize_value(v, arith, FloatBias.NONE, tie, mult, shift, 0.0, np.float32(0),
                                         np.float32(0), 0)
                orow[j] = min(max(v + zo, lo), hi)

    return rows


_ROWS = {}


def _requant_plan(func, shape, zi, rq, zo, lo, hi, t):
    """The lean ``run(x) = clamp(zo + requant(x - zi), lo, hi)`` as ``t`` for codes of ``shape``;
    ``lo``/``hi`` None = the range of ``t``.

    The same integers as :func:`dspsim.requant.requantize` of ``x - zi`` (|x - zi| < 2^17, so the
    fixed-point schemes never saturate the accumulator), without the int64 copy of ``x``.
    """
    t, lo, hi = output_range(t.name, lo, hi, func)
    zo = int(as_int_array(zo, func, "output_zero_point", t.min, t.max))
    m, s = rq.multiplier[0], rq.shift[0]
    arith = None if (m, s) == _IDENTITY else (  # (2^30, 1): exact identity
        Arithmetic.FIXED_POINT_DOUBLE if rq.scheme == "double" else Arithmetic.FIXED_POINT_SINGLE)
    key = (arith, rq.tie)
    if key not in _ROWS:
        _ROWS[key] = _make_rows(*key)
    rows = _ROWS[key]
    size = math.prod(shape)
    n = max(min(size, 1024), 1)
    n_rows, out_dtype = -(-size // n), t.dtype

    def run(x):
        flat = np.ravel(x)
        out = np.empty(size, out_dtype)
        if n_rows == 1:
            rows(flat, n, zi, zo, m, s, lo, hi, out, 0, 1)
        else:
            parallel_rows(lambda r0, r1: rows(flat, n, zi, zo, m, s, lo, hi, out, r0, r1), n_rows, size)
        return out.reshape(shape)

    return run


def _tflite_relu_x(func, kind, x, input_scale, input_zero_point, output_scale, output_zero_point, rounding,
                   out_dtype):
    x = check_tensor(x, func, "x", allowed=_RELU_TYPES)
    t = int_type(x.dtype if out_dtype is None else out_dtype, func)
    s_in = _check_scale(input_scale, func, "input_scale")
    s_out = _check_scale(output_scale, func, "output_scale")
    rq = Requant.from_scales(s_in, None, s_out, engine="tflm", op="relu", rounding=rounding) \
        if rounding in ("double", "single") else None
    if rq is None:
        raise ValueError(f"{func}: rounding must be 'double' or 'single', got {rounding!r}")
    lo, hi = tflite_activation_range(kind, s_out, output_zero_point, t.name, fused=False)
    zi = zero_point(input_zero_point, x.dtype, func, "input_zero_point")
    return _requant_plan(func, x.shape, zi, rq, int(output_zero_point), lo, hi, t)(x)


@names_its_errors
def relu6(x, *, input_scale, input_zero_point, output_scale, output_zero_point, rounding="double", out_dtype=None):
    """TFLite RELU6 from scales: ``M, shift`` of ``f32(s_in/s_out)``, range ``[max(qmin, zo), min(qmax, zo +
    round(6/s_out))]`` (float32 division, ties away from zero)."""
    return _tflite_relu_x("relu6", "relu6", x, input_scale, input_zero_point, output_scale, output_zero_point,
                          rounding, out_dtype)


@names_its_errors
def relu_n1_to_1(x, *, input_scale, input_zero_point, output_scale, output_zero_point, rounding="double",
                 out_dtype=None):
    """TFLite RELU_N1_TO_1 from scales: range ``[max(qmin, zo + round(-1/s_out)), min(qmax, zo + round(1/s_out))]``."""
    return _tflite_relu_x("relu_n1_to_1", "relu_n1_to_1", x, input_scale, input_zero_point, output_scale,
                          output_zero_point, rounding, out_dtype)


class NegativeAlpha(str, Enum):
    """How LEAKY_RELU applies a negative alpha's multiplier ``M < 0`` (``QuantizeMultiplier`` of the negative
    ratio: ``-M`` is the multiplier of ``|ratio|``, the rounding being symmetric)."""

    NEGATE = "negate"
    """``zo - MBQM(v, -M, shift)``: ``reference_ops::QuantizeLeakyRelu`` since LiteRT e022fdc "Fix Leaky Relu
    for negative alpha values" (LiteRT BUILTIN_REF, int8 in every LiteRT kernel type, the TFLM wheel)."""
    SIGNED_MULTIPLIER = "signed_multiplier"
    """``zo + MBQM(v, M, shift)``, which is ``zo + MBQM(-v, -M, shift)``: SRDHM's ties toward +inf fall the
    other way (``optimized_integer_ops::QuantizeLeakyRelu``, int16 under LiteRT's default interpreter)."""


@names_its_errors
def leaky_relu(x, *, alpha, input_scale, input_zero_point, output_scale, output_zero_point, rounding="double",
               out_dtype=None, quotient="float32", negative_alpha="negate"):
    """TFLite ``QuantizeLeakyRelu``: two multipliers, chosen by the sign of ``v = q - zi``.

    ``v >= 0``: ``zo + MBQM(v, M_id, sh_id)`` with ``M_id`` from ``double(f32(s_in / s_out))``;
    ``v < 0``: ``zo + MBQM(v, M_alpha, sh_alpha)`` from ``double(f32(f32(s_in * alpha) / s_out))``;
    clamped to the output type only (no fused activation). A negative ``alpha`` gives a negative
    ``M_alpha``, applied as ``negative_alpha`` (a :class:`NegativeAlpha`) says: the reference negates
    ``MBQM(v, -M_alpha)`` (ties of SRDHM toward -inf in the result), LiteRT's optimized int16 kernel
    multiplies by ``M_alpha`` itself (ties toward +inf). ``quotient`` says how Prepare
    divides: ``"float32"`` as above (LiteRT ``activations.cc`` LeakyReluPrepare), ``"double"``:
    ``double(s_in) / double(s_out)`` and ``double(s_in) * double(alpha) / double(s_out)`` (the TFLM
    wheel's ``leaky_relu_common.cc``; over the 23 seanet int16 models 10 of 63,040 values differ).
    """
    x = check_tensor(x, "leaky_relu", "x", allowed=_RELU_TYPES)
    return leaky_relu_plan(x.shape, x.dtype, alpha=alpha, input_scale=input_scale, input_zero_point=input_zero_point,
                           output_scale=output_scale, output_zero_point=output_zero_point, rounding=rounding,
                           out_dtype=out_dtype, quotient=quotient, negative_alpha=negative_alpha)(x)


def leaky_relu_plan(shape, dtype, *, alpha, input_scale, input_zero_point, output_scale, output_zero_point,
                    rounding="double", out_dtype=None, quotient="float32", negative_alpha="negate"):
    """:func:`leaky_relu` prepared for codes of ``shape`` and ``dtype`` (both multipliers derived once);
    returns the lean ``run(x) -> codes``."""
    func = "leaky_relu"
    dtype = np.dtype(dtype)
    t = int_type(dtype if out_dtype is None else out_dtype, func)
    s_in = _check_scale(input_scale, func, "input_scale")
    s_out = _check_scale(output_scale, func, "output_scale")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)) \
            or not math.isfinite(alpha):
        raise ValueError(f"{func}: alpha must be a finite float, got {alpha!r}")
    if negative_alpha not in tuple(NegativeAlpha):
        raise ValueError(f"{func}: negative_alpha must be one of {[m.value for m in NegativeAlpha]}, "
                         f"got {negative_alpha!r}")
    zi = zero_point(input_zero_point, dtype, func, "input_zero_point")
    zo = zero_point(output_zero_point, t.dtype, func, "output_zero_point")
    if rounding not in ("double", "single"):
        raise ValueError(f"{func}: rounding must be 'double' or 'single', got {rounding!r}")
    if quotient == "double":
        real_id = float(np.float64(s_in) / np.float64(s_out))
        real_alpha = float(np.float64(s_in) * np.float64(np.float32(alpha)) / np.float64(s_out))
    elif quotient == "float32":
        real_id = float(np.float32(np.float32(s_in) / np.float32(s_out)))
        real_alpha = float(np.float32(np.float32(np.float32(s_in) * np.float32(alpha)) / np.float32(s_out)))
    else:
        raise ValueError(f"{func}: quotient must be 'float32' or 'double', got {quotient!r}")
    rq_id = Requant.fixed_point(*quantize_multiplier(real_id, rounding), rounding)
    pos = _requant_plan(func, shape, zi, rq_id, zo, None, None, t)
    if real_alpha >= 0:
        neg = _requant_plan(func, shape, zi, Requant.fixed_point(*quantize_multiplier(real_alpha, rounding),
                                                                 rounding), zo, None, None, t)
    else:
        m, shift = quantize_multiplier(real_alpha, rounding)
        if m == -(1 << 31):  # -M would wrap in int32 (a ratio mantissa rounding up to 1)
            raise ValueError(f"{func}: the alpha multiplier {real_alpha!r} rounds to -2^31, whose negation wraps "
                             "in TFLite (not modelled)")
        negate = NegativeAlpha(negative_alpha) is NegativeAlpha.NEGATE

        # MBQM(v, M) = MBQM(-v, -M) but where v << shift is -2^31 (v = -32768, shift 16): -v << shift wraps in
        # int32, while SRDHM(-2^31, M) is exactly -M (double rounding; single rounding has no int32 shift)
        edge_shift = shift > 0 and rounding == "double" and not negate

        def neg(x):
            v = x.astype(np.int64) - zi
            mag = np.asarray(multiply_by_quantized_multiplier(v if negate else -v, -m, shift, rounding), np.int64)
            if edge_shift:
                mag = np.where(v * (1 << shift) == -(1 << 31), -m, mag)
            return np.clip(zo - mag if negate else zo + mag, t.min, t.max)

    def run(x):
        return np.where(x >= zi, pos(x), neg(x)).astype(t.dtype)

    return run


@names_its_errors
def tflm_relu6(x, *, input_scale, input_zero_point):
    """TFLite Micro RELU6: a clamp in the INPUT domain, ``[zi, clamp_T(zi + round(f32(6 / s_in)))]``.

    TFLM ignores the output tensor's scale and zero point here (docs/semantics.md §3); ``round`` ties away
    from zero. Output dtype = input dtype.
    """
    x = check_tensor(x, "tflm_relu6", "x", allowed=_RELU_TYPES)
    return tflm_relu6_plan(x.shape, x.dtype, input_scale=input_scale, input_zero_point=input_zero_point)(x)


def tflm_relu6_plan(shape, dtype, *, input_scale, input_zero_point):
    """:func:`tflm_relu6` prepared for codes of ``shape`` and ``dtype`` (the clamp derived once); returns the
    lean ``run(x) -> codes``."""
    func = "tflm_relu6"
    _, dtype = check_spec(func, "x", shape, dtype, _RELU_TYPES)
    t = int_type(dtype, func)
    s_in = _check_scale(input_scale, func, "input_scale")
    zi = zero_point(input_zero_point, dtype, func, "input_zero_point")
    with np.errstate(over="ignore"):  # a non-finite quotient is refused below
        six = np.float32(np.float32(6.0) / np.float32(s_in))
    if not np.isfinite(six):
        raise ValueError(f"{func}: 6 / input_scale {s_in:.9g} is not finite in float32")
    hi = min(max(zi + tflite_round(six), t.min), t.max)
    return lambda x: np.minimum(np.maximum(x, zi), hi).astype(t.dtype)


@names_its_errors
def torch_relu(x, *, zero_point):
    """PyTorch ``quantized::relu`` (``qrelu_kernel``): ``max(q, zero_point)``; scale and zero point kept."""
    func = "torch_relu"
    x = check_tensor(x, func, "x", allowed=_RELU_TYPES)
    zp = globals()["zero_point"](zero_point, x.dtype, func, "zero_point")
    return np.maximum(x, zp).astype(x.dtype)


@names_its_errors
def xnnpack_leaky_relu(x, *, alpha, input_scale, input_zero_point, output_scale, output_zero_point):
    """XNNPACK ``qs8-vlrelu`` / ``qu8-vlrelu`` (int8 / uint8): :func:`xnnpack_convert` with a second multiplier for
    ``x < zi``, ``M_neg = lrintf(256 * f32(f32(s_in / s_out) * alpha))`` (the delegate needs |ratio * alpha| >=
    1/256), clamped to x's type."""
    func = "xnnpack_leaky_relu"
    x = check_tensor(x, func, "x", allowed=(np.dtype(np.int8), np.dtype(np.uint8)))
    r = xnnpack_ratio(func, input_scale, output_scale)
    neg = np.float32(r * np.float32(alpha))
    if not (abs(neg) >= 2.0**-8 and -127.99609375 <= neg <= 128):
        raise ValueError(f"{func}: the negative slope ratio {float(neg)} is outside XNNPACK's range")
    return xnnpack_q8_8(x, zero_point(input_zero_point, x.dtype, func, "input_zero_point"),
                         zero_point(output_zero_point, x.dtype, func, "output_zero_point"),
                         int(np.rint(np.float32(256) * r)), int(np.rint(np.float32(256) * neg)), x.dtype)
