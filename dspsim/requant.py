"""Requantization: from a wide integer accumulator to the output integer type.

One frozen value type, :class:`Requant`, names a scheme and holds its parameters (one value, or one
per output channel); :func:`requantize_value` is its arithmetic on one accumulator, the numba core that
every kernel calls (looped by :func:`dspsim.kernels.requantize.requantize_into`, whose public face is
:func:`dspsim.requantize`).

Schemes (``Requant.scheme``) and their exact arithmetic, ``acc`` being the accumulator after the
bias (docs/semantics.md §2, 5, 6, 7):

``"double"``  TFLite default / gemmlowp / CMSIS-NN: ``MultiplyByQuantizedMultiplier(acc, M, shift)``
              with two roundings (SRDHM ties toward +inf, then RoundingDivideByPOT ties away from
              zero), ``+ zp``, clamp.
``"single"``  ``TFLITE_SINGLE_ROUNDING``: ``(acc*M + 2^(30-shift)) >> (31-shift)``, one rounding, ties
              toward +inf, ``+ zp``, clamp.
``"shift"``   power-of-two DSP scale: ``acc * 2^shift`` (``shift < 0`` is a right shift) rounded by a
              :class:`~dspsim.fixedpoint.Rounding` tie rule, ``+ zp``, clamp. A left shift cannot
              lose anything: the value is exact, only the final clamp saturates.
``"fbgemm"``  PyTorch/FBGEMM ``ReQuantizeOutput``: int32 bias ``raw_f = float(acc)``; float bias,
              per-channel weights ``raw_f = f32(float(acc) + f32(bias / act_times_w))``, per-tensor
              weights ``raw_f = fma(bias, f32(1 / act_times_w), float(acc))`` (one rounding; found
              with golden vectors, ``reciprocal_bias``); ``cvtps2dq(f32(raw_f * C_mult))`` (ties to
              even) ``+ zp``, clamp.
``"onednn"``  torch's "x86" engine on conv (oneDNN, fitted on golden vectors):
              ``f32(f32(f32(f32(float(acc) * act_times_w) + bias) * f32(1 / s_out)) + zp)``, ties to
              even, saturating conversion, clamp: the zero point enters BEFORE rounding.
``"onnxruntime"`` / ``"xnnpack"``  MLAS ``MlasRequantizeOutput`` and XNNPACK fp32: ``f32(float(acc) *
              scale)``, ties to even, ``+ zp`` after rounding, clamp (the engines clamp in float to
              ``[qmin - zp, qmax - zp]`` before rounding, which gives the same integers).
``"onnx-reference"``  ONNX's Python reference: ``D = float64(acc) * float64(scale)``, ``D += zp``
              BEFORE rounding (float64), ``rint`` (ties to even), clip. An odd zp moves ties.
``"litert-fc"``  LiteRT 2.x reference FULLY_CONNECTED (found with golden vectors, docs/engines.md):
              ``int32(std::round(double(acc) * (double(s_in)*double(s_w)/double(s_out))))``, ties away
              from zero, ``+ zp``, clamp. Its conv/depthwise use ``"double"``. (LiteRT's per-channel FC
              takes the weight zero point as 0: pass 0.)
``"int64"``   the 16x8 kernels (TFLite / TFLM int16 x int8, int64 accumulator and bias):
              ``MultiplyByQuantizedMultiplier(int64 acc, M, shift)`` with ``M`` reduced to 16 bits
              (``(M + 2^15) >> 16``, at most ``0x7FFF``), ``(acc * M16 + 2^(14-shift)) >> (15-shift)``: one
              rounding, ties toward +inf, the result truncated to int32, ``+ zp``, clamp. No int32
              saturation of the accumulator first. ``Requant.fixed_point(m, s, "int64")`` or
              ``from_scales(..., rounding="int64")``; the loader uses it for CONV_2D / DEPTHWISE_CONV_2D 16x8
              (both engines) and TFLM's FULLY_CONNECTED 16x8 (LiteRT's is ``"litert-fc"``).

Out-of-range float-to-int conversions follow x86 (``cvtps2dq``/``cvttsd2si`` give INT32_MIN, the
"integer indefinite"): FBGEMM and LiteRT FC then clamp INT32_MIN + zp to the lower bound, so a huge
positive value comes out as act_min. ONNX Runtime and XNNPACK clamp in float first (no overflow);
ONNX's reference stays in float64.

``float(acc)`` is the int-to-float32 conversion (round to nearest even above 2^24). Float-scale
schemes take the accumulator as the engine's int32 holds it. The fixed-point schemes take an int32:
an accumulator wider than 32 bits is saturated to int32 first (a DSP's saturating store), and
:func:`dspsim.requantize` counts that.

Extension point: an engine whose kernel requantizes differently for one op gets a scheme name
here, an :class:`Arithmetic` and a branch in :func:`requantize_value`; :meth:`Requant.from_scales` maps ``(engine, op)``
to it, as it maps ``("litert", "fully_connected")`` to ``"litert-fc"``.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from numba import njit

from ._jit import fma_f32
from .dtypes import int_type
from .fixedpoint import (
    _mbqm_int64,
    INT32_MAX,
    INT32_MIN,
    Rounding,
    as_int_array,
    multiply_by_quantized_multiplier_scalar,
    multiply_by_quantized_multiplier_single_scalar,
    quantize_multiplier,
    round_half_away_from_zero,
    rounding_mode,
    rounding_right_shift_scalar,
    saturate_scalar,
)


class Arithmetic(IntEnum):
    """The arithmetic :func:`requantize_value` runs for a scheme (a compile-time constant of each loop)."""

    FIXED_POINT_DOUBLE = 0
    """``"double"``: MultiplyByQuantizedMultiplier, two roundings."""
    FIXED_POINT_SINGLE = 1
    """``"single"``: TFLITE_SINGLE_ROUNDING."""
    SHIFT = 2
    """``"shift"``: a power of two and a tie rule."""
    FBGEMM = 3
    """``"fbgemm"``: float32 product, cvtps2dq on the unclamped value."""
    FLOAT32 = 4
    """``"onnxruntime"``, ``"xnnpack"``: float32 product, ties to even, clamped."""
    ONNX_REFERENCE = 5
    """``"onnx-reference"``: float64, zero point before rounding."""
    LITERT_FC = 6
    """``"litert-fc"``: double, std::round, x86 truncating cast."""
    ONEDNN = 7
    """``"onednn"``: dequantize, bias, 1/s_out, zero point before rounding."""
    FIXED_POINT_INT64 = 8
    """``"int64"``: MultiplyByQuantizedMultiplier of an int64 accumulator (the 16x8 kernels)."""


class FloatBias(IntEnum):
    """How a float bias enters a float-scale scheme (see :func:`float_bias_arrays`)."""

    NONE = 0
    ADD_QUOTIENT = 1
    """FBGEMM per channel: ``f32(float(acc) + fb_a)``, ``fb_a = f32(bias / act_times_w)``."""
    FMA_RECIPROCAL = 2
    """FBGEMM per tensor: ``fma(fb_a = bias, fb_b = f32(1 / act_times_w), float(acc))``."""
    ONEDNN = 3
    """oneDNN: ``fb_a = bias`` added after dequantizing."""


REQUANT_SCHEMES = ("double", "single", "shift", "fbgemm", "onnxruntime", "xnnpack", "onnx-reference", "litert-fc",
                   "onednn", "int64")
"""The values of ``Requant.scheme``."""
_ARITHMETIC = {"double": Arithmetic.FIXED_POINT_DOUBLE, "single": Arithmetic.FIXED_POINT_SINGLE,
               "shift": Arithmetic.SHIFT, "fbgemm": Arithmetic.FBGEMM, "onnxruntime": Arithmetic.FLOAT32,
               "xnnpack": Arithmetic.FLOAT32, "onnx-reference": Arithmetic.ONNX_REFERENCE,
               "litert-fc": Arithmetic.LITERT_FC, "onednn": Arithmetic.ONEDNN, "int64": Arithmetic.FIXED_POINT_INT64}
FROM_SCALES_ENGINES = ("tflite", "cmsis-nn", "litert", "fbgemm", "onnxruntime", "onnx-reference", "xnnpack", "onednn")
"""The engines whose prepare step :meth:`Requant.from_scales` derives parameters for."""
FLOAT_SCALE_ENGINES = ("fbgemm", "onnxruntime", "xnnpack", "onnx-reference", "onednn")
"""The float-scale schemes of :meth:`Requant.float_scale`."""
FROM_SCALES_OPS = ("conv", "depthwise", "fully_connected", "relu")
"""The ops :meth:`Requant.from_scales` knows (each engine derives some differently)."""
_FLOAT_LIMIT = float(1 << 40)  # beyond any output range; keeps float -> int conversion defined
_TWO31 = float(1 << 31)


@dataclass(frozen=True)
class Requant:
    """A requantization scheme and its parameters (tuples: one value or one per output channel).

    Build one with :meth:`fixed_point`, :meth:`shift_only`, :meth:`float_scale` or
    :meth:`from_scales`; the fields are read-only and printable, so a run is reproducible from it.

    Attributes
    ----------
    scheme : str
        One of ``"double"``, ``"single"``, ``"shift"``, ``"fbgemm"``, ``"onnxruntime"``,
        ``"xnnpack"``, ``"onnx-reference"``, ``"litert-fc"``, ``"onednn"``, ``"int64"`` (see the module
        docstring for the arithmetic).
    multiplier, shift : tuple of int
        Q31 multiplier in [0, 2^31) and shift in [-31, 30] (> 0 = left) for the fixed-point
        schemes; ``shift`` in [-63, 31] alone for ``"shift"``.
    scale : tuple of float
        The float multiplier as the engine holds it (a float32 value; float64 for onnx-reference).
    act_times_w : tuple of float
        FBGEMM's and oneDNN's ``f32(s_in * s_w)`` (a float bias is divided by it / added after it).
    tie : Rounding
        Tie rule of the ``"shift"`` scheme.
    reciprocal_bias : bool
        FBGEMM with per-tensor weights: the float bias enters as ``fma(bias, f32(1/act_times_w), acc)``.
    """

    scheme: str
    multiplier: tuple = ()
    shift: tuple = ()
    scale: tuple = ()
    act_times_w: tuple = ()
    tie: Rounding = Rounding.HALF_AWAY_FROM_ZERO
    reciprocal_bias: bool = False

    @classmethod
    def fixed_point(cls, multiplier, shift, rounding="double") -> "Requant":
        """TFLite ``MultiplyByQuantizedMultiplier``; ``rounding`` "double" (default build), "single"
        (``TFLITE_SINGLE_ROUNDING``) or "int64": the int64-accumulator overload of the 16x8 kernels
        (the same in both builds): the multiplier reduced to 16 bits, ``(acc * m16 + 2^(14 - shift)) >>
        (15 - shift)``, one rounding, ties toward +inf, the result truncated to int32."""
        func = "Requant.fixed_point"
        if rounding not in ("double", "single", "int64"):
            raise ValueError(f"{func}: rounding must be 'double', 'single' or 'int64', got {rounding!r}")
        m = as_int_array(multiplier, func, "multiplier", 0, INT32_MAX).reshape(-1)
        s = as_int_array(shift, func, "shift", -31, 30).reshape(-1)
        if m.size == 0 or s.size == 0 or (m.size != s.size and 1 not in (m.size, s.size)):
            raise ValueError(f"{func}: multiplier ({m.size}) and shift ({s.size}) must have one value or "
                             "equal lengths")
        m, s = np.broadcast_arrays(m, s)
        return cls(rounding, tuple(int(v) for v in m), tuple(int(v) for v in s))

    @classmethod
    def shift_only(cls, shift, tie="half_away_from_zero") -> "Requant":
        """Power-of-two scale ``2^shift`` (``shift < 0`` = right shift, in [-63, 31]) rounded by the tie rule ``tie``.

        ``tie`` is a :class:`Rounding` or its name: ``half_up`` (ARM ``VRSHL``, ``(x + 2^(s-1)) >> s``),
        ``half_away_from_zero`` (gemmlowp ``RoundingDivideByPOT``), ``half_to_even``, ``floor``
        (plain ``>>``) or ``toward_zero``.
        """
        func = "Requant.shift_only"
        mode = rounding_mode(tie, func)
        s = as_int_array(shift, func, "shift", -63, 31).reshape(-1)
        if s.size == 0:
            raise ValueError(f"{func}: shift must not be empty")
        return cls("shift", (), tuple(int(v) for v in s), tie=mode)

    @classmethod
    def float_scale(cls, scale, engine="onnxruntime", act_times_w=None, reciprocal_bias=False) -> "Requant":
        """A float-scale scheme with the engine's stored multiplier ``scale`` (float32, float64 for
        onnx-reference; oneDNN: ``f32(1 / s_out)``) and, for FBGEMM float bias and oneDNN, ``act_times_w``."""
        func = "Requant.float_scale"
        if engine not in FLOAT_SCALE_ENGINES:
            raise ValueError(f"{func}: engine must be one of {FLOAT_SCALE_ENGINES}, got {engine!r}")
        sc = _float_array(scale, func, "scale")
        if engine != "onnx-reference":
            sc = sc.astype(np.float32)
        atw = () if act_times_w is None else tuple(float(v) for v in _float_array(act_times_w, func,
                                                                                   "act_times_w").astype(np.float32))
        if engine == "onednn" and not atw:
            raise ValueError(f"{func}: engine 'onednn' needs act_times_w")
        return cls(engine, scale=tuple(float(v) for v in sc), act_times_w=atw,
                   reciprocal_bias=bool(reciprocal_bias) and engine == "fbgemm")

    @classmethod
    def from_scales(cls, input_scale, weight_scale, output_scale, engine="tflite", op="conv",
                    rounding="double") -> "Requant":
        """Derive the scheme's parameters from float scales exactly as the engine's prepare step does.

        Every scale is first rounded to float32 (all engines store scales as float32).

        * ``engine="tflite"`` / ``"cmsis-nn"`` / ``"litert"`` (fixed point, ``rounding`` "double" or "single";
          docs/semantics.md §3): ``QuantizeMultiplier`` of ``double(s_in)*double(s_w[c])/double(s_out)`` for
          ``op`` "conv", "depthwise" and per-channel "fully_connected" (``weight_scale`` an array);
          ``double(f32(s_in*s_w))/double(s_out)`` for per-tensor "fully_connected" (scalar
          ``weight_scale``); ``double(f32(s_in/s_out))`` for "relu" (``weight_scale`` ignored).
        * ``"litert"`` with op "fully_connected" (LiteRT 2.x reference kernel): scheme "litert-fc" with
          ``scale = double(s_in)*double(s_w[c])/double(s_out)`` for per-tensor and per-channel weights.
        * ``"fbgemm"``: ``act_times_w = f32(s_in*s_w[c])``, ``scale = f32(act_times_w/s_out)``;
          a scalar ``weight_scale`` sets ``reciprocal_bias``.
        * ``"onednn"``: ``act_times_w = f32(s_in*s_w[c])``, ``scale = f32(1/s_out)``.
        * ``"onnxruntime"``, ``"xnnpack"``, ``"onnx-reference"``: ``scale = f32(f32(s_in*s_w[c])/s_out)``
          (onnx-reference then multiplies in float64).
        """
        func = "Requant.from_scales"
        if engine not in FROM_SCALES_ENGINES:
            raise ValueError(f"{func}: engine must be one of {FROM_SCALES_ENGINES}, got {engine!r}")
        if op not in FROM_SCALES_OPS:
            raise ValueError(f"{func}: op must be one of {FROM_SCALES_OPS}, got {op!r}")
        if op == "relu" and engine not in ("tflite", "cmsis-nn", "litert"):
            raise ValueError(f"{func}: op 'relu' requantizes only in TFLite/CMSIS-NN (engine 'tflite')")
        s_in = _float_array(input_scale, func, "input_scale").astype(np.float32)
        s_out = _float_array(output_scale, func, "output_scale").astype(np.float32)
        if s_in.size != 1 or s_out.size != 1:
            raise ValueError(f"{func}: input_scale and output_scale must be scalars")
        s_in, s_out = s_in[0], s_out[0]
        if op == "relu":
            s_w = np.ones(1, np.float32)
            per_channel = False
        else:
            if weight_scale is None:
                raise ValueError(f"{func}: weight_scale is required for op {op!r}")
            per_channel = np.ndim(weight_scale) > 0
            s_w = _float_array(weight_scale, func, "weight_scale").astype(np.float32)
        if engine == "litert" and op == "fully_connected":
            real = np.float64(s_in) * s_w.astype(np.float64) / np.float64(s_out)
            return cls("litert-fc", scale=tuple(float(v) for v in real))
        if engine in ("tflite", "cmsis-nn", "litert"):
            if op == "relu":
                real = np.float64(np.float32(s_in / s_out))
                real = np.atleast_1d(real)
            elif op == "fully_connected" and not per_channel:
                real = np.float64(np.float32(s_in * s_w)) / np.float64(s_out)
            else:
                real = np.float64(s_in) * s_w.astype(np.float64) / np.float64(s_out)
            m, s = quantize_multiplier(np.asarray(real, np.float64).reshape(-1), "single" if rounding == "single"
                                       else "double")
            return cls.fixed_point(m, s, rounding)
        prod = (s_in * s_w).astype(np.float32)  # float32 * float32, rounded once
        if engine == "onednn":
            return cls.float_scale(np.float32(1) / s_out, engine, prod)
        scale = (prod / s_out).astype(np.float32)
        return cls.float_scale(scale, engine, prod if engine == "fbgemm" else None,
                               reciprocal_bias=not per_channel)

    @property
    def channels(self) -> int:
        """Number of parameter values (1 = per tensor)."""
        return max(len(self.multiplier), len(self.shift), len(self.scale), 1)

    def arrays(self, n: int, func: str):
        """Parameters broadcast to ``n`` channels: (Arithmetic, mult, shift, scale, act_times_w, tie)."""
        if self.channels not in (1, n):
            raise ValueError(f"{func}: requantization has {self.channels} per-channel values but the "
                             f"output has {n} channels")

        def full(t, dtype):
            a = np.asarray(t if len(t) else (0,), dtype=dtype)
            return np.ascontiguousarray(np.broadcast_to(a, (n,)))

        return (_ARITHMETIC[self.scheme], full(self.multiplier, np.int64), full(self.shift, np.int64),
                full(self.scale, np.float64), full(self.act_times_w, np.float32), self.tie)


def _float_array(value, func, name):
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{func}: {name} must be a float or a float array, got {arr.dtype}")
    arr = arr.astype(np.float64).reshape(-1)
    with np.errstate(over="ignore", under="ignore"):
        f32 = arr.astype(np.float32)  # the engines hold scales in float32
    if arr.size == 0 or not np.all(np.isfinite(f32)) or np.any(f32 <= 0) or np.any(arr <= 0):
        raise ValueError(f"{func}: {name} must be finite and positive, in float32 too")
    return arr


# --------------------------------------------------------------------------------------------
# numba core
# --------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _float_to_int_hte(v):
    """Round a float to the nearest integer, ties to even (rint), clamped to +-2^40 first."""
    v = min(max(v, -_FLOAT_LIMIT), _FLOAT_LIMIT)
    return np.int64(np.rint(v))


@njit(cache=True, inline="always")
def _x86_int32(v):
    """x86 float -> int32 of an already rounded value: out of range (>= 2^31 or < -2^31) gives INT32_MIN."""
    if v >= _TWO31 or v < -_TWO31:
        return np.int64(INT32_MIN)
    return np.int64(v)


@njit(cache=True, inline="always")
def _power_of_two_scale(a, shift, tie):
    """``a * 2^shift`` for ``shift`` in [-63, 31]: exact left shift of the int32-saturated ``a``, or a
    right shift rounded by the tie rule ``tie`` (:func:`dspsim.fixedpoint.rounding_right_shift_scalar`);
    selects only."""
    left = saturate_scalar(a, 32) << max(shift, 0)  # exact: |acc| >= 2^31 lies beyond every output range
    right = rounding_right_shift_scalar(a, max(-shift, 0), tie)
    return left if shift >= 0 else right


@njit(cache=True, inline="always")
def requantize_value(acc, arith, float_bias, tie, mult, shift, scale, fb_a, fb_b, zp):
    """The requantized value of the accumulator ``acc`` (int64) before the activation clamp, ``zp``
    included: the numba core of every scheme (jit primitive; kernels call it inside their loops).

    ``arith`` (:class:`Arithmetic`) picks the scheme's arithmetic and ``tie`` (:class:`Rounding`) the
    shift scheme's tie rule; pass compile-time constants so that the branches fold away. Float bias
    (FBGEMM/oneDNN), ``float_bias`` (:class:`FloatBias`): add ``fb_a = f32(bias / act_times_w)``;
    ``fma(fb_a = bias, fb_b = f32(1 / act_times_w), acc)``; oneDNN adds ``fb_a = bias``. oneDNN reads
    ``fb_b = act_times_w``. Never raises.
    """
    if arith == Arithmetic.FIXED_POINT_DOUBLE:  # fixed point: the C kernels take an int32
        return multiply_by_quantized_multiplier_scalar(saturate_scalar(acc, 32), mult, shift) + zp
    if arith == Arithmetic.FIXED_POINT_SINGLE:
        return multiply_by_quantized_multiplier_single_scalar(saturate_scalar(acc, 32), mult, shift) + zp
    if arith == Arithmetic.FIXED_POINT_INT64:  # no int32 saturation: the 16x8 kernels pass the int64 sum
        return _mbqm_int64(acc, mult, shift) + zp
    if arith == Arithmetic.SHIFT:
        return _power_of_two_scale(acc, shift, tie) + zp
    if arith == Arithmetic.ONNX_REFERENCE:  # float64, zero point added before rounding
        return _float_to_int_hte(np.float64(acc) * scale + np.float64(zp))
    if arith == Arithmetic.LITERT_FC:  # double, ties away, x86 truncating cast
        return _x86_int32(round_half_away_from_zero(np.float64(acc) * scale)) + zp
    raw = np.float32(acc)
    if arith == Arithmetic.ONEDNN:  # dequantize, add the bias, scale by 1/s_out, zero point before rounding
        d = np.float32(raw * fb_b)
        if float_bias == FloatBias.ONEDNN:
            d = np.float32(d + fb_a)
        return _float_to_int_hte(np.float64(np.float32(np.float32(d * np.float32(scale)) + np.float32(zp))))
    if float_bias == FloatBias.ADD_QUOTIENT:
        raw = np.float32(raw + fb_a)
    elif float_bias == FloatBias.FMA_RECIPROCAL:
        raw = fma_f32(fb_a, fb_b, raw)
    y = np.float64(np.float32(raw * np.float32(scale)))
    if arith == Arithmetic.FBGEMM:  # cvtps2dq on the unclamped value
        return _x86_int32(np.rint(y)) + zp
    return _float_to_int_hte(y) + zp


# --------------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------------
def output_range(out_dtype, act_min, act_max, func):
    """(IntType, lo, hi): the output type and the activation clamp, checked against each other."""
    t = int_type(out_dtype, func, allowed={k: v for k, v in _OUT_TYPES.items()})
    lo = t.min if act_min is None else int(as_int_array(act_min, func, "act_min", t.min, t.max))
    hi = t.max if act_max is None else int(as_int_array(act_max, func, "act_max", t.min, t.max))
    if lo > hi:
        raise ValueError(f"{func}: act_min ({lo}) must not exceed act_max ({hi})")
    return t, lo, hi


_OUT_TYPES = {name: int_type(name) for name in ("int8", "uint8", "int16", "qint8", "quint8", "qint16")}


def float_bias_arrays(bias, requant: Requant, n: int, func: str):
    """``(fb_a, fb_b, FloatBias)`` of :func:`requantize_value` for a float bias (or ``bias=None``)."""
    atw = np.ascontiguousarray(np.broadcast_to(np.asarray(requant.act_times_w or (0.0,), np.float32), (n,)))
    if bias is None:
        return np.zeros(n, np.float32), atw, FloatBias.NONE
    if requant.scheme not in ("fbgemm", "onednn") or not requant.act_times_w:
        raise ValueError(f"{func}: a float bias needs requant='fbgemm' or 'onednn' (from_scales)")
    b = np.asarray(bias)
    if b.ndim != 1 or b.size != n:
        raise ValueError(f"{func}: bias must have shape ({n},), got {b.shape}")
    b = np.ascontiguousarray(b.astype(np.float32))
    if requant.scheme == "onednn":
        return b, atw, FloatBias.ONEDNN
    with np.errstate(divide="ignore", invalid="ignore"):
        if requant.reciprocal_bias:
            return b, (np.float32(1) / atw).astype(np.float32), FloatBias.FMA_RECIPROCAL
        return np.ascontiguousarray((b / atw).astype(np.float32)), atw, FloatBias.ADD_QUOTIENT
