"""Requantization: from a wide integer accumulator to the output integer type.

One frozen value type, :class:`Requant`, names a scheme and holds its parameters (one value, or one
per output channel); :func:`requantize_value` is its arithmetic on one accumulator, the numba core that
every kernel calls (looped by :func:`dspsim.kernels.quantize.requantize.requantize_into`, whose public face is
:func:`dspsim.requantize`). :meth:`Requant.from_rule` derives the parameters from the float scales as an
engine's Prepare does (its :class:`~dspsim.engines.RequantRule`); :meth:`Requant.from_scales` takes the
engine's name.

Schemes (``Requant.scheme``) and their exact arithmetic, ``acc`` being the accumulator after the
bias (docs/semantics.md §2, 5, 6, 7):

``"double"``  TFLite default / gemmlowp / CMSIS-NN: ``MultiplyByQuantizedMultiplier(acc, M, shift)``
              with two roundings (SRDHM ties toward +inf, then RoundingDivideByPOT ties away from
              zero, or the tie rule ``tie``), ``+ zp``, clamp.
``"single"``  ``TFLITE_SINGLE_ROUNDING``: ``(acc*M + 2^(30-shift)) >> (31-shift)``, one rounding, ties
              toward +inf (or the tie rule ``tie``), ``+ zp``, clamp.
              Both take an int32: an accumulator wider than 32 bits is saturated to int32 first (a DSP's
              saturating store, which :func:`dspsim.requantize` counts), unless ``saturate_input`` is
              False: then the whole accumulator is multiplied, exactly, and nothing wraps.
``"int64"``   the 16x8 kernels (TFLite / TFLM int16 x int8, int64 accumulator and bias):
              ``MultiplyByQuantizedMultiplier(int64 acc, M, shift)`` with ``M`` reduced to 16 bits
              (``(M + 2^15) >> 16``, at most ``0x7FFF``), ``(acc * M16 + 2^(14-shift)) >> (15-shift)``: one
              rounding, ties toward +inf, the result truncated to int32, ``+ zp``, clamp. No int32
              saturation of the accumulator first.
``"shift"``   power-of-two DSP scale: ``acc * 2^shift`` (``shift < 0`` is a right shift) rounded by a
              :class:`~dspsim.fixedpoint.Rounding` tie rule, ``+ zp``, clamp. A left shift cannot
              lose anything: the value is exact, only the final clamp saturates.
``"float32"`` MLAS ``MlasRequantizeOutput`` and XNNPACK fp32: ``f32(float(acc) * scale)``, rounded by the
              tie rule ``tie`` (ties to even in both), ``+ zp`` after rounding, clamp (the engines clamp in
              float to ``[qmin - zp, qmax - zp]`` before rounding, which gives the same integers).
``"float64"`` ONNX's Python reference: ``D = float64(acc) * float64(scale)``, ``D += zp`` BEFORE rounding
              (float64), ``rint`` (ties to even), clip. An odd zp moves ties.
``"double_scale"``  LiteRT 2.x reference FULLY_CONNECTED (found with golden vectors, docs/engines.md):
              ``int32(std::round(double(acc) * (double(s_in)*double(s_w)/double(s_out))))``, ties away
              from zero, ``+ zp``, clamp. (LiteRT's per-channel FC takes the weight zero point as 0: pass 0.)
``"fbgemm"``  PyTorch/FBGEMM ``ReQuantizeOutput``: int32 bias ``raw_f = float(acc)``; float bias,
              per-channel weights ``raw_f = f32(float(acc) + f32(bias / act_times_w))``, per-tensor
              weights ``raw_f = fma(bias, f32(1 / act_times_w), float(acc))`` (one rounding; found
              with golden vectors, ``reciprocal_bias``); ``cvtps2dq(f32(raw_f * C_mult))`` (ties to
              even) ``+ zp``, clamp.
``"onednn"``  torch's "x86" engine on conv (oneDNN, fitted on golden vectors):
              ``f32(f32(f32(f32(float(acc) * act_times_w) + bias) * f32(1 / s_out)) + zp)``, ties to
              even, saturating conversion, clamp: the zero point enters BEFORE rounding.

Out-of-range float-to-int conversions follow x86 (``cvtps2dq``/``cvttsd2si`` give INT32_MIN, the
"integer indefinite"): FBGEMM and LiteRT FC then clamp INT32_MIN + zp to the lower bound, so a huge
positive value comes out as act_min. ONNX Runtime and XNNPACK clamp in float first (no overflow);
ONNX's reference stays in float64. ``float(acc)`` is the int-to-float32 conversion (round to nearest even
above 2^24). Float-scale schemes take the accumulator as the engine's int32 holds it.

Extension point: an engine whose kernel requantizes differently gets a scheme name here, an
:class:`Arithmetic`, a branch in :func:`requantize_value` and a :class:`~dspsim.engines.RequantKind` that
:meth:`Requant.from_rule` maps to it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from types import MappingProxyType

import numpy as np

from numba import njit

from ._jit import fma_f32
from .dtypes import int_type
from .engines import RealMultiplier, RequantInput, RequantKind, RequantRule
from .engines import get as engine_profile
from .fixedpoint import (
    _mbqm_int64,
    INT32_MAX,
    INT32_MIN,
    Rounding,
    as_int_array,
    multiply_by_quantized_multiplier_scalar,
    multiply_by_quantized_multiplier_single_scalar,
    multiply_by_quantized_multiplier_tie_scalar,
    quantize_multiplier,
    round_half_away_from_zero,
    rounding_mode,
    rounding_right_shift_scalar,
    saturate_scalar,
)


class Arithmetic(IntEnum):
    """The arithmetic :func:`requantize_value` runs for a scheme (a compile-time constant of each loop)."""

    FIXED_POINT_DOUBLE = 0
    """``"double"``: MultiplyByQuantizedMultiplier, two roundings, of an int32."""
    FIXED_POINT_SINGLE = 1
    """``"single"``: TFLITE_SINGLE_ROUNDING, of an int32."""
    SHIFT = 2
    """``"shift"``: a power of two and a tie rule."""
    FBGEMM = 3
    """``"fbgemm"``: float32 product, cvtps2dq on the unclamped value."""
    FLOAT32 = 4
    """``"float32"``: float32 product, a tie rule, clamped."""
    FLOAT64 = 5
    """``"float64"``: float64, zero point before rounding."""
    DOUBLE_SCALE = 6
    """``"double_scale"``: double, std::round, x86 truncating cast."""
    ONEDNN = 7
    """``"onednn"``: dequantize, bias, 1/s_out, zero point before rounding."""
    FIXED_POINT_INT64 = 8
    """``"int64"``: MultiplyByQuantizedMultiplier of an int64 accumulator (the 16x8 kernels)."""
    FIXED_POINT_DOUBLE_WIDE = 9
    """``"double"`` of the whole accumulator (``saturate_input`` False)."""
    FIXED_POINT_SINGLE_WIDE = 10
    """``"single"`` of the whole accumulator (``saturate_input`` False)."""


class FloatBias(IntEnum):
    """How a float bias enters a float-scale scheme (see :func:`float_bias_arrays`)."""

    NONE = 0
    ADD_QUOTIENT = 1
    """FBGEMM per channel: ``f32(float(acc) + fb_a)``, ``fb_a = f32(bias / act_times_w)``."""
    FMA_RECIPROCAL = 2
    """FBGEMM per tensor: ``fma(fb_a = bias, fb_b = f32(1 / act_times_w), float(acc))``."""
    ONEDNN = 3
    """oneDNN: ``fb_a = bias`` added after dequantizing."""


REQUANT_SCHEMES = ("double", "single", "int64", "shift", "float32", "float64", "double_scale", "fbgemm", "onednn")
"""The values of ``Requant.scheme``."""
_ARITHMETIC = {"double": Arithmetic.FIXED_POINT_DOUBLE, "single": Arithmetic.FIXED_POINT_SINGLE,
               "shift": Arithmetic.SHIFT, "fbgemm": Arithmetic.FBGEMM, "float32": Arithmetic.FLOAT32,
               "float64": Arithmetic.FLOAT64, "double_scale": Arithmetic.DOUBLE_SCALE, "onednn": Arithmetic.ONEDNN,
               "int64": Arithmetic.FIXED_POINT_INT64}
_WIDE = {"double": Arithmetic.FIXED_POINT_DOUBLE_WIDE, "single": Arithmetic.FIXED_POINT_SINGLE_WIDE}
FLOAT_SCHEMES = ("float32", "float64", "double_scale", "fbgemm", "onednn")
"""The float-scale schemes of :meth:`Requant.float_scale`."""
FROM_SCALES_OPS = MappingProxyType({"fully_connected": "fully_connected", "conv": "conv_2d",
                                    "depthwise": "depthwise_conv_2d", "transpose_conv": "transpose_conv"})
"""The ops :meth:`Requant.from_scales` knows, and the MAC family of each (``"relu"`` too: its own rule)."""
_DEFAULT_TIE = {"double": Rounding.HALF_AWAY_FROM_ZERO, "single": Rounding.HALF_UP, "int64": Rounding.HALF_UP}
_FLOAT_LIMIT = float(1 << 40)  # beyond any output range; keeps float -> int conversion defined
_TWO31 = float(1 << 31)


@dataclass(frozen=True)
class Requant:
    """A requantization scheme and its parameters (tuples: one value or one per output channel).

    Build one with :meth:`fixed_point`, :meth:`shift_only`, :meth:`float_scale`, :meth:`from_rule` or
    :meth:`from_scales`; the fields are read-only and printable, so a run is reproducible from it.

    Attributes
    ----------
    scheme : str
        One of :data:`REQUANT_SCHEMES` (see the module docstring for the arithmetic).
    multiplier, shift : tuple of int
        Q31 multiplier in [0, 2^31) and shift in [-31, 30] (> 0 = left) for the fixed-point
        schemes; ``shift`` in [-63, 31] alone for ``"shift"``.
    scale : tuple of float
        The float multiplier as the engine holds it (a float32 value; float64 for ``"float64"``).
    act_times_w : tuple of float
        FBGEMM's and oneDNN's ``f32(s_in * s_w)`` (a float bias is divided by it / added after it).
    tie : Rounding
        The tie rule of the final rounding: the shift of the fixed-point schemes (half away from zero after
        SRDHM, half up in single rounding, by default) and of ``"shift"``, the conversion of ``"float32"``
        (ties to even by default).
    reciprocal_bias : bool
        FBGEMM with per-tensor weights: the float bias enters as ``fma(bias, f32(1/act_times_w), acc)``.
    saturate_input : bool
        ``"double"`` / ``"single"``: the accumulator is saturated to int32 before the multiply (TFLite's
        kernels take an ``int32_t``); False: the whole accumulator is multiplied exactly.
    """

    scheme: str
    multiplier: tuple = ()
    shift: tuple = ()
    scale: tuple = ()
    act_times_w: tuple = ()
    tie: Rounding = Rounding.HALF_AWAY_FROM_ZERO
    reciprocal_bias: bool = False
    saturate_input: bool = True

    @classmethod
    def fixed_point(cls, multiplier, shift, rounding="double", tie=None, saturate_input=True) -> "Requant":
        """TFLite ``MultiplyByQuantizedMultiplier``; ``rounding`` "double" (default build), "single"
        (``TFLITE_SINGLE_ROUNDING``) or "int64": the int64-accumulator overload of the 16x8 kernels
        (the same in both builds): the multiplier reduced to 16 bits, ``(acc * m16 + 2^(14 - shift)) >>
        (15 - shift)``, one rounding, ties toward +inf, the result truncated to int32.

        ``tie`` (a :class:`Rounding` or its name; None: the rounding's own, half away from zero after SRDHM,
        half up in single rounding) rounds the final shift, as a DSP's shifter does; ``saturate_input``
        False multiplies the whole accumulator (the module docstring)."""
        func = "Requant.fixed_point"
        if rounding not in ("double", "single", "int64"):
            raise ValueError(f"{func}: rounding must be 'double', 'single' or 'int64', got {rounding!r}")
        mode = _DEFAULT_TIE[rounding] if tie is None else rounding_mode(tie, func)
        if rounding == "int64" and (mode != Rounding.HALF_UP or not saturate_input):
            raise ValueError(f"{func}: rounding 'int64' is TFLite's 16x8 overload: it takes no tie rule or "
                             "saturate_input")
        if not isinstance(saturate_input, (bool, np.bool_)):
            raise TypeError(f"{func}: saturate_input must be a bool, got {type(saturate_input).__name__}")
        m = as_int_array(multiplier, func, "multiplier", 0, INT32_MAX).reshape(-1)
        s = as_int_array(shift, func, "shift", -31, 30).reshape(-1)
        if m.size == 0 or s.size == 0 or (m.size != s.size and 1 not in (m.size, s.size)):
            raise ValueError(f"{func}: multiplier ({m.size}) and shift ({s.size}) must have one value or "
                             "equal lengths")
        m, s = np.broadcast_arrays(m, s)
        return cls(rounding, tuple(int(v) for v in m), tuple(int(v) for v in s), tie=mode,
                   saturate_input=bool(saturate_input))

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
    def float_scale(cls, scale, scheme="float32", act_times_w=None, reciprocal_bias=False, tie=None) -> "Requant":
        """A float-scale scheme (:data:`FLOAT_SCHEMES`) with the engine's stored multiplier ``scale`` (float32;
        float64 for ``"float64"`` and ``"double_scale"``; oneDNN: ``f32(1 / s_out)``) and, for FBGEMM's float bias
        and oneDNN, ``act_times_w``. ``tie``: the tie rule of ``"float32"`` (default ties to even)."""
        func = "Requant.float_scale"
        if scheme not in FLOAT_SCHEMES:
            raise ValueError(f"{func}: scheme must be one of {FLOAT_SCHEMES}, got {scheme!r}")
        if tie is not None and scheme != "float32":
            raise ValueError(f"{func}: tie= is the tie rule of scheme 'float32', got scheme {scheme!r}")
        sc = _float_array(scale, func, "scale")
        if scheme not in ("float64", "double_scale"):
            sc = sc.astype(np.float32)
        atw = () if act_times_w is None else tuple(float(v) for v in _float_array(act_times_w, func,
                                                                                   "act_times_w").astype(np.float32))
        arith = _ARITHMETIC[scheme]
        if arith is Arithmetic.ONEDNN and not atw:
            raise ValueError(f"{func}: scheme 'onednn' needs act_times_w")
        mode = Rounding.HALF_TO_EVEN if tie is None else rounding_mode(tie, func)
        return cls(scheme, scale=tuple(float(v) for v in sc), act_times_w=atw,
                   reciprocal_bias=bool(reciprocal_bias) and arith is Arithmetic.FBGEMM, tie=mode)

    @classmethod
    def from_rule(cls, rule: RequantRule, input_scale, weight_scale, output_scale) -> "Requant":
        """Derive the parameters from float scales as a Prepare that follows ``rule`` does.

        Every scale is first rounded to float32 (all engines store scales as float32). ``weight_scale``: a
        scalar (per-tensor weights) or one per output channel.

        * :attr:`~RequantKind.FIXED_POINT`: ``QuantizeMultiplier`` of the real multiplier
          ``double(s_in) * double(s_w[c]) / double(s_out)`` (per-tensor weights with
          :attr:`~RealMultiplier.FLOAT32_PRODUCT`: ``double(f32(s_in * s_w)) / double(s_out)``), reduced to
          ``rule.multiplier_bits`` (the top bits of the Q31 multiplier, rounded, the largest ``2^bits - 1``,
          kept in Q31 form), with the rule's rounding, tie rule and input saturation.
        * :attr:`~RequantKind.DOUBLE_SCALE`: ``scale = double(s_in) * double(s_w[c]) / double(s_out)``.
        * :attr:`~RequantKind.FLOAT32`, :attr:`~RequantKind.FLOAT64`: ``scale = f32(f32(s_in * s_w[c]) / s_out)``
          (FLOAT64 then multiplies in float64); FLOAT32 rounds by ``rule.float_rounding``.
        * :attr:`~RequantKind.FBGEMM`: ``act_times_w = f32(s_in * s_w[c])``, ``scale = f32(act_times_w /
          s_out)``; per-tensor weights set ``reciprocal_bias``. :attr:`~RequantKind.ONEDNN`: ``act_times_w``
          as FBGEMM's, ``scale = f32(1 / s_out)``.
        * :attr:`~RequantKind.SHIFT`: ``shift = log2(s_in * s_w[c] / s_out)`` (exact in float64), rounded by
          ``rule.shift_rounding``; a multiplier that is not a power of two is refused (ValueError).
        """
        func = "Requant.from_rule"
        if not isinstance(rule, RequantRule):
            raise TypeError(f"{func}: rule must be a RequantRule, got {type(rule).__name__}")
        s_in, s_w, s_out, per_channel = _scales(input_scale, weight_scale, output_scale, func)
        kind = rule.kind
        if kind is RequantKind.FIXED_POINT:
            if not per_channel and rule.per_tensor_real is RealMultiplier.FLOAT32_PRODUCT:
                real = np.float64(np.float32(s_in * s_w)) / np.float64(s_out)
            else:
                real = np.float64(s_in) * s_w.astype(np.float64) / np.float64(s_out)
            m, s = quantize_multiplier(np.asarray(real, np.float64).reshape(-1),
                                       "single" if rule.rounding == "single" else "double")
            m = _narrow_multiplier(np.asarray(m, np.int64), rule.multiplier_bits)
            if rule.rounding == "int64":
                return cls.fixed_point(m, s, "int64")
            return cls.fixed_point(m, s, rule.rounding, rule.tie, rule.requant_input is RequantInput.INT32)
        if kind is RequantKind.DOUBLE_SCALE:
            return cls.float_scale(np.float64(s_in) * s_w.astype(np.float64) / np.float64(s_out), "double_scale")
        if kind is RequantKind.SHIFT:
            real = np.float64(s_in) * s_w.astype(np.float64) / np.float64(s_out)
            mant, exp = np.frexp(real)
            if np.any(mant != 0.5):
                raise ValueError(f"{func}: shift-only requantization needs power-of-two scales; the multipliers "
                                 f"s_in*s_w/s_out are {real[mant != 0.5][:3].tolist()}")
            return cls.shift_only(exp - 1, rule.tie)
        prod = (s_in * s_w).astype(np.float32)  # float32 * float32, rounded once
        if kind is RequantKind.ONEDNN:
            return cls.float_scale(np.float32(1) / s_out, "onednn", prod)
        scale = (prod / s_out).astype(np.float32)
        if kind is RequantKind.FBGEMM:
            return cls.float_scale(scale, "fbgemm", prod, reciprocal_bias=not per_channel)
        if kind is RequantKind.FLOAT64:
            return cls.float_scale(scale, "float64")
        return cls.float_scale(scale, "float32", tie=rule.float_rounding)

    @classmethod
    def from_scales(cls, input_scale, weight_scale, output_scale, engine="tflm", op="conv",
                    rounding=None) -> "Requant":
        """Derive the parameters from float scales exactly as ``engine``'s Prepare does for ``op``.

        ``engine``: an engine name (:func:`dspsim.engines.names`) or an :class:`~dspsim.engines.EngineProfile`;
        ``op``: "fully_connected", "conv", "depthwise" or "transpose_conv" (its MAC family's rule,
        :meth:`from_rule`), or "relu": TFLite's ReluPrepare, ``QuantizeMultiplier(double(f32(s_in / s_out)))``
        (``weight_scale`` ignored; engines that run TFLite models). ``rounding``: None (the rule's), or
        "double" / "single" / "int64" for a fixed-point rule (ignored by the others), as a build flag changes
        it.
        """
        func = "Requant.from_scales"
        profile = engine_profile(engine, func)
        if op != "relu" and op not in FROM_SCALES_OPS:
            raise ValueError(f"{func}: op must be one of {[*FROM_SCALES_OPS, 'relu']}, got {op!r}")
        if rounding is not None and rounding not in ("double", "single", "int64"):
            raise ValueError(f"{func}: rounding must be None, 'double', 'single' or 'int64', got {rounding!r}")
        if op == "relu":
            if profile.tflite is None:
                raise ValueError(f"{func}: op 'relu' requantizes as TFLite's ReluPrepare: engine {profile.name!r} "
                                 "runs no TFLite models")
            s_in = _float_array(input_scale, func, "input_scale").astype(np.float32)
            s_out = _float_array(output_scale, func, "output_scale").astype(np.float32)
            if s_in.size != 1 or s_out.size != 1:
                raise ValueError(f"{func}: input_scale and output_scale must be scalars")
            rnd = rounding or profile.tflite.rounding
            m, s = quantize_multiplier(np.atleast_1d(np.float64(np.float32(s_in[0] / s_out[0]))),
                                       "single" if rnd == "single" else "double")
            return cls.fixed_point(m, s, rnd)
        if weight_scale is None:
            raise ValueError(f"{func}: weight_scale is required for op {op!r}")
        rule = profile.mac.family(FROM_SCALES_OPS[op]).requant
        if rounding is not None and rule.kind is RequantKind.FIXED_POINT:
            rule = replace(rule, rounding=rounding)
        return cls.from_rule(rule, input_scale, weight_scale, output_scale)

    @property
    def channels(self) -> int:
        """Number of parameter values (1 = per tensor)."""
        return max(len(self.multiplier), len(self.shift), len(self.scale), 1)

    def params(self) -> dict:
        """The requantization as operator parameters (what ``Model.operator_params`` shows a test bench):
        ``requant_scheme``, ``tie`` (a :class:`Rounding`) and each of ``multiplier``, ``shift``, ``scale``,
        ``act_times_w`` the scheme uses, one value or an array of one per output channel."""
        out = {"requant_scheme": self.scheme, "tie": self.tie}
        for name in ("multiplier", "shift", "scale", "act_times_w"):
            values = getattr(self, name)
            if len(values):
                out[name] = values[0] if len(values) == 1 else np.asarray(values)
        return out

    def arrays(self, n: int, func: str):
        """Parameters broadcast to ``n`` channels: (Arithmetic, mult, shift, scale, act_times_w, tie)."""
        if self.channels not in (1, n):
            raise ValueError(f"{func}: requantization has {self.channels} per-channel values but the "
                             f"output has {n} channels")

        def full(t, dtype):
            a = np.asarray(t if len(t) else (0,), dtype=dtype)
            return np.ascontiguousarray(np.broadcast_to(a, (n,)))

        arith = _ARITHMETIC[self.scheme] if self.saturate_input else _WIDE[self.scheme]
        return (arith, full(self.multiplier, np.int64), full(self.shift, np.int64),
                full(self.scale, np.float64), full(self.act_times_w, np.float32), self.tie)


def _scales(input_scale, weight_scale, output_scale, func):
    """``(s_in, s_w array, s_out, per_channel)``: the scales as float32 values, checked."""
    s_in = _float_array(input_scale, func, "input_scale").astype(np.float32)
    s_out = _float_array(output_scale, func, "output_scale").astype(np.float32)
    if s_in.size != 1 or s_out.size != 1:
        raise ValueError(f"{func}: input_scale and output_scale must be scalars")
    if weight_scale is None:
        raise ValueError(f"{func}: weight_scale is required")
    s_w = _float_array(weight_scale, func, "weight_scale").astype(np.float32)
    return s_in[0], s_w, s_out[0], np.ndim(weight_scale) > 0


def _narrow_multiplier(m, bits):
    """Q31 multipliers rounded to their top ``bits`` bits (``(m + 2^(30-bits)) >> (31-bits)``, at most
    ``2^bits - 1``, as TFLite's 16x8 kernels reduce theirs to 16 bits), back in Q31 form."""
    if bits >= 31:
        return m
    drop = 31 - bits
    return np.minimum((m + (1 << (drop - 1))) >> drop, (1 << bits) - 1) << drop


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
def _float_to_int(v, tie):
    """Round a float to an integer by the tie rule ``tie``, clamped to +-2^40 first (exact: ``v`` is a float32
    value held in a float64, so ``v + 0.5`` loses nothing)."""
    v = min(max(v, -_FLOAT_LIMIT), _FLOAT_LIMIT)
    if tie == Rounding.HALF_TO_EVEN:
        return np.int64(np.rint(v))
    if tie == Rounding.HALF_AWAY_FROM_ZERO:
        return np.int64(round_half_away_from_zero(v))
    if tie == Rounding.HALF_UP:
        return np.int64(np.floor(v + 0.5))
    if tie == Rounding.FLOOR:
        return np.int64(np.floor(v))
    return np.int64(np.trunc(v))  # TOWARD_ZERO


@njit(cache=True, inline="always")
def requantize_value(acc, arith, float_bias, tie, mult, shift, scale, fb_a, fb_b, zp):
    """The requantized value of the accumulator ``acc`` (int64) before the activation clamp, ``zp``
    included: the numba core of every scheme (jit primitive; kernels call it inside their loops).

    ``arith`` (:class:`Arithmetic`) picks the scheme's arithmetic and ``tie`` (:class:`Rounding`) the tie rule
    of its final rounding (fixed point, shift, float32); pass compile-time constants so that the branches
    fold away. Float bias (FBGEMM/oneDNN), ``float_bias`` (:class:`FloatBias`): add ``fb_a = f32(bias /
    act_times_w)``; ``fma(fb_a = bias, fb_b = f32(1 / act_times_w), acc)``; oneDNN adds ``fb_a = bias``.
    oneDNN reads ``fb_b = act_times_w``. Never raises.
    """
    if arith == Arithmetic.FIXED_POINT_DOUBLE:  # fixed point: the C kernels take an int32
        if tie == Rounding.HALF_AWAY_FROM_ZERO:
            return multiply_by_quantized_multiplier_scalar(saturate_scalar(acc, 32), mult, shift) + zp
        return multiply_by_quantized_multiplier_tie_scalar(saturate_scalar(acc, 32), mult, shift, False, tie,
                                                           False) + zp
    if arith == Arithmetic.FIXED_POINT_SINGLE:
        if tie == Rounding.HALF_UP:
            return multiply_by_quantized_multiplier_single_scalar(saturate_scalar(acc, 32), mult, shift) + zp
        return multiply_by_quantized_multiplier_tie_scalar(saturate_scalar(acc, 32), mult, shift, True, tie,
                                                           False) + zp
    if arith == Arithmetic.FIXED_POINT_DOUBLE_WIDE:  # the whole accumulator, exactly
        return multiply_by_quantized_multiplier_tie_scalar(acc, mult, shift, False, tie, True) + zp
    if arith == Arithmetic.FIXED_POINT_SINGLE_WIDE:
        return multiply_by_quantized_multiplier_tie_scalar(acc, mult, shift, True, tie, True) + zp
    if arith == Arithmetic.FIXED_POINT_INT64:  # no int32 saturation: the 16x8 kernels pass the int64 sum
        return _mbqm_int64(acc, mult, shift) + zp
    if arith == Arithmetic.SHIFT:
        return _power_of_two_scale(acc, shift, tie) + zp
    if arith == Arithmetic.FLOAT64:  # float64, zero point added before rounding
        return _float_to_int(np.float64(acc) * scale + np.float64(zp), Rounding.HALF_TO_EVEN)
    if arith == Arithmetic.DOUBLE_SCALE:  # double, ties away, x86 truncating cast
        return _x86_int32(round_half_away_from_zero(np.float64(acc) * scale)) + zp
    raw = np.float32(acc)
    if arith == Arithmetic.ONEDNN:  # dequantize, add the bias, scale by 1/s_out, zero point before rounding
        d = np.float32(raw * fb_b)
        if float_bias == FloatBias.ONEDNN:
            d = np.float32(d + fb_a)
        return _float_to_int(np.float64(np.float32(np.float32(d * np.float32(scale)) + np.float32(zp))),
                             Rounding.HALF_TO_EVEN)
    if float_bias == FloatBias.ADD_QUOTIENT:
        raw = np.float32(raw + fb_a)
    elif float_bias == FloatBias.FMA_RECIPROCAL:
        raw = fma_f32(fb_a, fb_b, raw)
    y = np.float64(np.float32(raw * np.float32(scale)))
    if arith == Arithmetic.FBGEMM:  # cvtps2dq on the unclamped value
        return _x86_int32(np.rint(y)) + zp
    return _float_to_int(y, tie) + zp


# --------------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------------
def loop_tie(arith, tie) -> Rounding:
    """The tie rule as a requantization loop's compile-time constant: the scheme's own where its arithmetic reads
    it (fixed point, shift, float32), one value for the other schemes (so that they share a compiled loop)."""
    reads = arith in (Arithmetic.FIXED_POINT_DOUBLE, Arithmetic.FIXED_POINT_SINGLE, Arithmetic.FIXED_POINT_DOUBLE_WIDE,
                      Arithmetic.FIXED_POINT_SINGLE_WIDE, Arithmetic.SHIFT, Arithmetic.FLOAT32)
    return Rounding(tie) if reads else Rounding.HALF_AWAY_FROM_ZERO


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
    arith = _ARITHMETIC[requant.scheme]
    if arith not in (Arithmetic.FBGEMM, Arithmetic.ONEDNN) or not requant.act_times_w:
        raise ValueError(f"{func}: a float bias needs requant='fbgemm' or 'onednn' (from_scales)")
    b = np.asarray(bias)
    if b.ndim != 1 or b.size != n:
        raise ValueError(f"{func}: bias must have shape ({n},), got {b.shape}")
    b = np.ascontiguousarray(b.astype(np.float32))
    if arith is Arithmetic.ONEDNN:
        return b, atw, FloatBias.ONEDNN
    with np.errstate(divide="ignore", invalid="ignore"):
        if requant.reciprocal_bias:
            return b, (np.float32(1) / atw).astype(np.float32), FloatBias.FMA_RECIPROCAL
        return np.ascontiguousarray((b / atw).astype(np.float32)), atw, FloatBias.ADD_QUOTIENT
