"""The oracle of the activation family: RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU (TFLite, TFLM, XNNPACK, PyTorch).

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

from fractions import Fraction

from .fixedpoint import (
    _map,
    _np,
    _out_dtype,
    _range,
    clamp,
    f32,
    haz_f32_div,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)
from .quantize import xnnpack_q8_8


def tflite_activation_range(activation, output_scale, zo, qmin, qmax):
    lo_hi = {"none": (None, None), "relu": (0, None), "relu6": (0, 6), "relu_n1_to_1": (-1, 1)}[activation]
    lo = qmin if lo_hi[0] is None else max(qmin, zo + haz_f32_div(lo_hi[0], output_scale))
    hi = qmax if lo_hi[1] is None else min(qmax, zo + haz_f32_div(lo_hi[1], output_scale))
    return lo, hi


def relu(q: int, zi: int, zo: int, multiplier: int, shift: int, lo: int, hi: int, rounding="double") -> int:
    """TFLite ReluX: clamp(zo + MBQM(q - zi, M, shift), lo, hi)."""
    return clamp(zo + multiply_by_quantized_multiplier(q - zi, multiplier, shift, rounding), lo, hi)


def leaky_relu(q, zi, zo, alpha, input_scale, output_scale, qmin, qmax, rounding="double", quotient="float32",
               negative_alpha="negate") -> int:
    """TFLite QuantizeLeakyRelu with the multipliers of LeakyReluPrepare (float32 ratios; ``quotient="double"``:
    the exact ratios of the float32 scales rounded once to double, as TFLM's wheel). A negative alpha's
    multiplier M < 0: ``"negate"`` gives ``zo - MBQM(v, -M)``, ``"signed_multiplier"`` ``zo + MBQM(v, M)``."""
    s_in, s_out = f32(input_scale), f32(output_scale)
    if quotient == "double":
        m_id = quantize_multiplier(float(s_in / s_out), rounding)
        m_al = quantize_multiplier(float(Fraction(float(s_in * f32(alpha))) / s_out), rounding)
    else:
        m_id = quantize_multiplier(float(f32(s_in / s_out)), rounding)
        m_al = quantize_multiplier(float(f32(f32(s_in * f32(alpha)) / s_out)), rounding)
    m, s = m_id if q - zi >= 0 else m_al
    if m < 0 and negative_alpha == "negate":
        return clamp(zo - multiply_by_quantized_multiplier(q - zi, -m, s, rounding), qmin, qmax)
    return clamp(zo + multiply_by_quantized_multiplier(q - zi, m, s, rounding), qmin, qmax)


def tflm_relu6(q, zi, input_scale, qmin, qmax) -> int:
    return clamp(q, zi, clamp(zi + haz_f32_div(6, input_scale), qmin, qmax))


def torch_relu(q, zp) -> int:
    return max(q, zp)


def _relu_x_oracle(kind, x, input_scale, input_zero_point, output_scale, output_zero_point, rounding, out_dtype):
    np = _np()
    dt = _out_dtype(x, out_dtype)
    info = np.iinfo(dt)
    m, s = quantize_multiplier(float(f32(f32(input_scale) / f32(output_scale))), rounding)
    lo, hi = tflite_activation_range(kind, float(f32(output_scale)), output_zero_point, int(info.min), int(info.max))
    return _map(lambda q: relu(q, input_zero_point, output_zero_point, m, s, lo, hi, rounding), dt, x)


def relu6_oracle(x, *, input_scale, input_zero_point, output_scale, output_zero_point, rounding="double",
                 out_dtype=None):
    return _relu_x_oracle("relu6", x, input_scale, input_zero_point, output_scale, output_zero_point, rounding,
                          out_dtype)


def relu_n1_to_1_oracle(x, *, input_scale, input_zero_point, output_scale, output_zero_point, rounding="double",
                        out_dtype=None):
    return _relu_x_oracle("relu_n1_to_1", x, input_scale, input_zero_point, output_scale, output_zero_point,
                          rounding, out_dtype)


def leaky_relu_oracle(x, *, alpha, input_scale, input_zero_point, output_scale, output_zero_point,
                      rounding="double", out_dtype=None, quotient="float32", negative_alpha="negate"):
    np = _np()
    dt = _out_dtype(x, out_dtype)
    info = np.iinfo(dt)
    return _map(lambda q: leaky_relu(q, input_zero_point, output_zero_point, alpha, input_scale, output_scale,
                                     int(info.min), int(info.max), rounding, quotient, negative_alpha), dt, x)


def tflm_relu6_oracle(x, *, input_scale, input_zero_point):
    np = _np()
    info = np.iinfo(x.dtype)
    return _map(lambda q: tflm_relu6(q, input_zero_point, input_scale, int(info.min), int(info.max)), x.dtype, x)


def torch_relu_oracle(x, *, zero_point):
    return _map(lambda q: torch_relu(q, zero_point), x.dtype, x)


def xnnpack_leaky_relu_oracle(x, *, alpha, input_scale, input_zero_point, output_scale, output_zero_point):
    import numpy as np

    info = np.iinfo(np.asarray(x).dtype)
    return _map(lambda q: xnnpack_q8_8(q, input_zero_point, output_zero_point, input_scale, output_scale, alpha,
                                       int(info.min), int(info.max)), x.dtype, x)


def relu_oracle(x, *, input_zero_point, output_zero_point=None, multiplier=None, shift=None, act_min=None,
                act_max=None, rounding="double", out_dtype=None):
    dt = _out_dtype(x, out_dtype)
    zo = input_zero_point if output_zero_point is None else output_zero_point
    m, s = (1 << 30, 1) if multiplier is None else (int(multiplier), int(shift))
    lo, hi = _range(dt, max(int(_np().iinfo(dt).min), zo) if act_min is None else act_min, act_max)
    return _map(lambda q: relu(q, input_zero_point, zo, m, s, lo, hi, rounding), dt, x)
