"""The quantized ReLU family: TFLite ReluX (requantizing), LeakyReLU, TFLM Relu6, PyTorch relu.

TFLite ``QuantizedReluX`` (``activations.cc``, SEMANTICS 3)::

    out = clamp(zo + MultiplyByQuantizedMultiplier(q - zi, M, shift), act_min, act_max)

with ``M, shift = QuantizeMultiplier(double(f32(s_in / s_out)))``; equal scales give
``(2^30, 1)``, an exact identity. The requantization is :func:`dspsim.requant.requantize`'s.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..dtypes import int_type
from ..fixedpoint import as_int_array, quantize_multiplier
from ..requant import Requant, _parallel_rows, _requantized, output_range
from ._common import check_tensor, zero_point

_RELU_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
_IDENTITY = (1 << 30, 1)  # QuantizeMultiplier(1.0)
_RANGES = {"none": (None, None), "relu": (0.0, None), "relu6": (0.0, 6.0), "relu_n1_to_1": (-1.0, 1.0)}


def _haz_f32_div(f, scale):
    """``TfLiteRound(f / scale)`` with the division in float32 and ties away from zero."""
    v = float(np.float32(np.float32(f) / np.float32(scale)))
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def _check_scale(value, func, name):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{func}: {name} must be a float, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{func}: {name} must be finite and positive, got {value}")
    return float(np.float32(value))


def tflite_activation_range(activation, output_scale, output_zero_point, out_dtype="int8"):
    """TFLite ``CalculateActivationRangeQuantized``: (act_min, act_max) of a fused activation.

    ``q(f) = zo + TfLiteRound(f32(f / s_out))`` (ties away from zero); ``"relu"``:
    ``[max(qmin, q(0)), qmax]``; ``"relu6"``: ``[max(qmin, q(0)), min(qmax, q(6))]``;
    ``"relu_n1_to_1"``: ``[max(qmin, q(-1)), min(qmax, q(1))]``; ``"none"``/None: ``[qmin, qmax]``.
    The standalone ReLU ops (:func:`relu6`, :func:`relu_n1_to_1`) use the same formula.
    """
    func = "tflite_activation_range"
    key = "none" if activation is None else activation
    if key not in _RANGES:
        raise ValueError(f"{func}: activation must be one of {sorted(_RANGES)} or None, got {activation!r}")
    t = int_type(out_dtype, func)
    s_out = _check_scale(output_scale, func, "output_scale")
    zo = zero_point(output_zero_point, t.dtype, func, "output_zero_point")
    lo_f, hi_f = _RANGES[key]
    lo = t.min if lo_f is None else max(t.min, zo + _haz_f32_div(lo_f, s_out))
    hi = t.max if hi_f is None else min(t.max, zo + _haz_f32_div(hi_f, s_out))
    return lo, hi


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
    func = "relu"
    x = check_tensor(x, func, "x", allowed=_RELU_TYPES)
    t = int_type(x.dtype if out_dtype is None else out_dtype, func)
    zi = zero_point(input_zero_point, x.dtype, func, "input_zero_point")
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
    return _requant(func, x, zi, rq, zo, lo, act_max, t)


def _make_rows(code):
    """The ReluX loop ``clamp(zo + requant(q - zi), lo, hi)`` for scheme ``code`` (0 "double", 1 "single",
    -1 the identity pair ``(2^30, 1)``: a plain clamp), a compile-time constant so that LLVM vectorizes
    the loop. ``nogil``: :func:`dspsim.requant._parallel_rows` runs row ranges on several threads."""

    @njit(cache=True, nogil=True)
    def rows(x, n, zi, zo, mult, shift, lo, hi, out, r0, r1):
        for r in range(r0, r1):
            row = x[r * n:(r + 1) * n]  # row slices vectorize, ``r * n + j`` indices do not
            orow = out[r * n:(r + 1) * n]
            for j in range(row.shape[0]):
                v = np.int64(row[j]) - zi
                if code >= 0:
                    v = _requantized(v, code, 0, 0, mult, shift, 0.0, np.float32(0), np.float32(0), 0)
                orow[j] = min(max(v + zo, lo), hi)

    return rows


_ROWS = {}


def _requant(func, x, zi, rq, zo, lo, hi, t):
    """``clamp(zo + requant(x - zi), lo, hi)`` as ``t``; ``lo``/``hi`` None = the range of ``t``.

    The same integers as :func:`dspsim.requant.requantize` of ``x - zi`` (|x - zi| < 2^17, so the
    fixed-point schemes never saturate the accumulator), without the int64 copy of ``x``.
    """
    t, lo, hi = output_range(t.name, lo, hi, func)
    zo = int(as_int_array(zo, func, "output_zero_point", t.min, t.max))
    m, s = rq.multiplier[0], rq.shift[0]
    code = -1 if (m, s) == _IDENTITY else (0 if rq.scheme == "double" else 1)  # (2^30, 1): exact identity
    if code not in _ROWS:
        _ROWS[code] = _make_rows(code)
    rows = _ROWS[code]
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, t.dtype)
    n = max(min(flat.size, 1024), 1)
    _parallel_rows(lambda r0, r1: rows(flat, n, zi, zo, m, s, lo, hi, out, r0, r1), -(-flat.size // n), flat.size)
    return out.reshape(x.shape)


def _tflite_relu_x(func, kind, x, input_scale, input_zero_point, output_scale, output_zero_point, rounding,
                   out_dtype):
    x = check_tensor(x, func, "x", allowed=_RELU_TYPES)
    t = int_type(x.dtype if out_dtype is None else out_dtype, func)
    s_in = _check_scale(input_scale, func, "input_scale")
    s_out = _check_scale(output_scale, func, "output_scale")
    rq = Requant.from_scales(s_in, None, s_out, engine="tflite", op="relu", rounding=rounding) \
        if rounding in ("double", "single") else None
    if rq is None:
        raise ValueError(f"{func}: rounding must be 'double' or 'single', got {rounding!r}")
    lo, hi = tflite_activation_range(kind, s_out, output_zero_point, t.name)
    zi = zero_point(input_zero_point, x.dtype, func, "input_zero_point")
    return _requant(func, x, zi, rq, int(output_zero_point), lo, hi, t)


def relu6(x, *, input_scale, input_zero_point, output_scale, output_zero_point, rounding="double", out_dtype=None):
    """TFLite RELU6 from scales: ``M, shift`` of ``f32(s_in/s_out)``, range ``[max(qmin, zo), min(qmax, zo +
    round(6/s_out))]`` (float32 division, ties away from zero)."""
    return _tflite_relu_x("relu6", "relu6", x, input_scale, input_zero_point, output_scale, output_zero_point,
                          rounding, out_dtype)


def relu_n1_to_1(x, *, input_scale, input_zero_point, output_scale, output_zero_point, rounding="double",
                 out_dtype=None):
    """TFLite RELU_N1_TO_1 from scales: range ``[max(qmin, zo + round(-1/s_out)), min(qmax, zo + round(1/s_out))]``."""
    return _tflite_relu_x("relu_n1_to_1", "relu_n1_to_1", x, input_scale, input_zero_point, output_scale,
                          output_zero_point, rounding, out_dtype)


def leaky_relu(x, *, alpha, input_scale, input_zero_point, output_scale, output_zero_point, rounding="double",
               out_dtype=None):
    """TFLite ``QuantizeLeakyRelu``: two multipliers, chosen by the sign of ``v = q - zi``.

    ``v >= 0``: ``zo + MBQM(v, M_id, sh_id)`` with ``M_id`` from ``double(f32(s_in / s_out))``;
    ``v < 0``: ``zo + MBQM(v, M_alpha, sh_alpha)`` from ``double(f32(f32(s_in * alpha) / s_out))``;
    clamped to the output type only (no fused activation). ``alpha`` must be >= 0 (TFLite would
    build a negative Q31 multiplier, TFLM negates; neither is modelled).
    """
    func = "leaky_relu"
    x = check_tensor(x, func, "x", allowed=_RELU_TYPES)
    t = int_type(x.dtype if out_dtype is None else out_dtype, func)
    s_in = _check_scale(input_scale, func, "input_scale")
    s_out = _check_scale(output_scale, func, "output_scale")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)) \
            or not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"{func}: alpha must be a finite float >= 0, got {alpha!r}")
    zi = zero_point(input_zero_point, x.dtype, func, "input_zero_point")
    zo = zero_point(output_zero_point, t.dtype, func, "output_zero_point")
    if rounding not in ("double", "single"):
        raise ValueError(f"{func}: rounding must be 'double' or 'single', got {rounding!r}")
    real_id = float(np.float32(np.float32(s_in) / np.float32(s_out)))
    real_alpha = float(np.float32(np.float32(np.float32(s_in) * np.float32(alpha)) / np.float32(s_out)))
    rq_id = Requant.fixed_point(*quantize_multiplier(real_id, rounding), rounding)
    rq_alpha = Requant.fixed_point(*quantize_multiplier(real_alpha, rounding), rounding)
    pos = _requant(func, x, zi, rq_id, zo, None, None, t)
    neg = _requant(func, x, zi, rq_alpha, zo, None, None, t)
    return np.where(x.astype(np.int64) - zi >= 0, pos, neg).astype(t.dtype)


def tflm_relu6(x, *, input_scale, input_zero_point):
    """TFLite Micro RELU6: a clamp in the INPUT domain, ``[zi, clamp_T(zi + round(f32(6 / s_in)))]``.

    TFLM ignores the output tensor's scale and zero point here (SEMANTICS 3); ``round`` ties away
    from zero. Output dtype = input dtype.
    """
    func = "tflm_relu6"
    x = check_tensor(x, func, "x", allowed=_RELU_TYPES)
    t = int_type(x.dtype, func)
    s_in = _check_scale(input_scale, func, "input_scale")
    zi = zero_point(input_zero_point, x.dtype, func, "input_zero_point")
    hi = min(max(zi + _haz_f32_div(6.0, s_in), t.min), t.max)
    return np.minimum(np.maximum(x, zi), hi).astype(t.dtype)


def torch_relu(x, *, zero_point):
    """PyTorch ``quantized::relu`` (``qrelu_kernel``): ``max(q, zero_point)``; scale and zero point kept."""
    func = "torch_relu"
    x = check_tensor(x, func, "x", allowed=_RELU_TYPES)
    zp = globals()["zero_point"](zero_point, x.dtype, func, "zero_point")
    return np.maximum(x, zp).astype(x.dtype)
