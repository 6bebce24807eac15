"""The oracle of the requant family: requantization of accumulators (every dspsim.Requant scheme) and the accumulator model.

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

from fractions import Fraction

from .fixedpoint import (
    clamp,
    f32,
    f64,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    quantize_multiplier,
    round_fraction,
    saturate,
    wrap,
    x86_int32,
)


# The kind of requantization each engine's Prepare derives for an op (engine names of dspsim.engines;
# the oracle keeps its own table): (kind, per-tensor FC real multiplier from the float32 product).
_ENGINE_KINDS = {"tflm": "fixed_point", "litert": "fixed_point", "xnnpack": "float32", "onnxruntime": "float32",
                 "onnxruntime-vnni": "float32", "onnxruntime-optimized": "float32", "onnx-reference": "float64",
                 "fbgemm": "fbgemm", "onednn": "onednn"}


def engine_rule(engine: str, op: str, rounding: str = "double") -> dict:
    """The oracle's rule (a dict of :func:`requant_from_rule`) of ``engine``'s Prepare for ``op`` ("conv",
    "depthwise", "fully_connected", "transpose_conv"), with the build's fixed-point ``rounding``."""
    kind = _ENGINE_KINDS[engine]
    if engine == "litert" and op == "fully_connected":  # LiteRT 2.x reference FC: double scale
        kind = "double_scale"
    return {"kind": kind, "rounding": rounding, "shift_rounding": None, "multiplier_bits": 31,
            "requant_input": "int32", "float_rounding": "half_to_even",
            "per_tensor_real": "float32_product" if engine == "tflm" and op == "fully_connected" else "double"}


def rule_dict(rule) -> dict:
    """A :class:`dspsim.engines.RequantRule` (read by its attributes' names and values) as the oracle's dict."""
    def name(v):
        return None if v is None else getattr(v, "value", None) if isinstance(getattr(v, "value", None), str) \
            else v.name.lower()

    return {"kind": rule.kind.value, "rounding": rule.rounding, "shift_rounding": name(rule.shift_rounding),
            "multiplier_bits": rule.multiplier_bits, "requant_input": rule.requant_input.value,
            "per_tensor_real": rule.per_tensor_real.value, "float_rounding": name(rule.float_rounding)}


def requant_from_rule(rule: dict, input_scale, weight_scale, output_scale) -> dict:
    """A Prepare following ``rule`` (:func:`engine_rule`, :func:`rule_dict`) as :func:`requantize_value`'s dict:
    scheme, multiplier, shift, scale, act_times_w, rounding (the final tie rule), saturate_input.

    ``weight_scale`` a list means per channel; every scale is first rounded to float32.
    """
    s_in, s_out = f32(input_scale), f32(output_scale)
    per_channel = isinstance(weight_scale, (list, tuple))
    s_w = [f32(v) for v in weight_scale] if per_channel else [f32(1 if weight_scale is None else weight_scale)]
    kind = rule["kind"]
    if kind == "double_scale":
        return {"scheme": "double_scale", "scale": [f64(s_in * w / s_out) for w in s_w]}
    if kind in ("fixed_point", "shift"):
        if not per_channel and rule["per_tensor_real"] == "float32_product":
            reals = [f64(f32(s_in * s_w[0]) / s_out)]
        else:
            reals = [f64(s_in * w / s_out) for w in s_w]  # the product of two floats is exact in double
        if kind == "shift":
            shifts = []
            for r in reals:  # a power of two, exactly
                k = r.numerator.bit_length() - r.denominator.bit_length()
                if Fraction(2) ** k != r:
                    raise ValueError("shift-only requantization needs power-of-two scales")
                shifts.append(k)
            return {"scheme": "shift", "shift": shifts, "rounding": rule["shift_rounding"] or "half_away_from_zero"}
        rounding = rule["rounding"]
        pairs = [quantize_multiplier(float(r), "single" if rounding == "single" else "double") for r in reals]
        bits = rule["multiplier_bits"]
        drop = 31 - bits
        mults = [p[0] if drop == 0 else min(round_fraction(Fraction(p[0], 2**drop), "half_up"), 2**bits - 1) * 2**drop
                 for p in pairs]
        tie = rule["shift_rounding"] or ("half_away_from_zero" if rounding == "double" else "half_up")
        return {"scheme": rounding, "multiplier": mults, "shift": [p[1] for p in pairs], "rounding": tie,
                "saturate_input": rule["requant_input"] == "int32"}
    atw = [f32(s_in * w) for w in s_w]
    if kind == "onednn":
        return {"scheme": kind, "scale": [f32(1 / s_out)], "act_times_w": atw}
    return {"scheme": kind, "scale": [f32(a / s_out) for a in atw], "act_times_w": atw,
            "reciprocal_bias": kind == "fbgemm" and not per_channel, "rounding": rule["float_rounding"]}


def requant_from_scales(input_scale, weight_scale, output_scale, engine="tflm", op="conv", rounding="double"):
    """Engine prepare steps (docs/semantics.md §3, 5, 6, 7) as a dict (:func:`requant_from_rule`); ``op`` "relu":
    TFLite's ReluPrepare, ``QuantizeMultiplier(double(f32(s_in / s_out)))``."""
    if op == "relu":
        real = f32(f32(input_scale) / f32(output_scale))
        m, s = quantize_multiplier(float(real), "single" if rounding == "single" else "double")
        return {"scheme": rounding, "multiplier": [m], "shift": [s]}
    return requant_from_rule(engine_rule(engine, op, rounding), input_scale, weight_scale, output_scale)


def fixed_point(acc: int, multiplier: int, shift: int, rounding: str, tie: str, wide: bool) -> int:
    """``MultiplyByQuantizedMultiplier`` with the final tie rule ``tie``: ``"double"`` rounds the high half of
    ``x 2^left * m`` up at bit 31 (SRDHM, ties toward +inf), then divides by ``2^right`` rounding by ``tie``;
    ``"single"`` rounds ``x * m / 2^(31 - shift)`` once by ``tie``. ``wide`` False: ``x`` is ``acc`` saturated to
    int32, the left shift and the result wrap at 32 bits (TFLite's int32); True: exact, nothing wraps."""
    x = acc if wide else saturate(acc, 32)
    if rounding == "single":
        v = round_fraction(Fraction(x * multiplier, 2 ** (31 - shift)), tie)
        return v if wide else wrap(v, 32)
    left, right = max(shift, 0), max(-shift, 0)
    xl = x * 2**left if wide else wrap(x * 2**left, 32)
    high = round_fraction(Fraction(xl * multiplier, 2**31), "half_up")
    return round_fraction(Fraction(high, 2**right), tie)


def requantize_value(acc: int, rq: dict, c: int, zp: int, float_bias=None) -> int:
    """One accumulator through scheme ``rq`` (channel ``c``) and ``+ zp``, before the activation clamp.

    ``rq`` as from :func:`requant_from_rule`, or ``{"scheme": "shift", "shift": [...], "rounding": rule}``.
    """
    def at(key):
        v = rq[key]
        return v[c] if len(v) > 1 else v[0]

    scheme = rq["scheme"]
    if scheme in ("double", "single"):
        default = "half_away_from_zero" if scheme == "double" else "half_up"
        tie, wide = rq.get("rounding") or default, not rq.get("saturate_input", True)
        if tie == default and not wide:
            return multiply_by_quantized_multiplier(saturate(acc, 32), at("multiplier"), at("shift"), scheme) + zp
        return fixed_point(acc, at("multiplier"), at("shift"), scheme, tie, wide) + zp
    if scheme == "int64":  # the 16x8 kernels: the int64 sum, 16-bit multiplier
        return multiply_by_quantized_multiplier_int64(acc, at("multiplier"), at("shift")) + zp
    if scheme == "shift":
        return round_fraction(Fraction(acc) * Fraction(2) ** at("shift"), rq["rounding"]) + zp
    scale = Fraction(at("scale"))
    if scheme == "float64":  # float64, zero point before rounding
        return round_fraction(f64(f64(acc * scale) + zp), "half_to_even")
    if scheme == "double_scale":  # int32(std::round(double)), x86: out of range -> INT32_MIN
        return x86_int32(round_fraction(f64(acc * scale), "half_away_from_zero")) + zp
    raw = f32(acc)
    if scheme == "onednn":  # dequantize, + bias, * f32(1/s_out), + zp, round
        d = f32(raw * at("act_times_w"))
        if float_bias is not None:
            d = f32(d + f32(float_bias))
        return round_fraction(f32(f32(d * scale) + zp), "half_to_even")
    if scheme == "fbgemm" and float_bias is not None:
        if rq.get("reciprocal_bias"):  # per-tensor weights: fma(bias, f32(1/act_times_w), acc)
            raw = f32(f32(float_bias) * f32(1 / at("act_times_w")) + raw)
        else:
            raw = f32(raw + f32(f32(float_bias) / at("act_times_w")))
    if scheme == "fbgemm":  # cvtps2dq: ties to even, out of range -> INT32_MIN
        return x86_int32(round_fraction(f32(raw * scale), "half_to_even")) + zp
    return round_fraction(f32(raw * scale), rq.get("rounding") or "half_to_even") + zp  # float32: clamped in float


# --- accumulator model (dspsim.accumulator) --------------------------------------------------
def acc_add(acc: int, term: int, bits: int = 32, overflow: str = "wrap"):
    """(acc + term in a ``bits``-bit register, 1 if it left the range else 0)."""
    s = acc + term
    if saturate(s, bits) == s:
        return s, 0
    return (saturate(s, bits) if overflow == "saturate" else wrap(s, bits)), 1


def accumulate(terms, bias, bits=32, overflow="wrap", pairs=None):
    """Sum ``terms`` MAC by MAC then add ``bias``; returns (acc, overflow events, pair saturations).

    ``pairs = (raw_products, correction)``: the vpmaddubsw model, raw products summed two by two
    with int16 saturation, then ``correction`` and ``bias`` added.
    """
    acc, events, pair_events = 0, 0, 0
    if pairs is None:
        for t in terms:
            acc, e = acc_add(acc, t, bits, overflow)
            events += e
    else:
        raw, correction = pairs
        for i in range(0, len(raw), 2):
            p = sum(raw[i:i + 2])
            if saturate(p, 16) != p:
                pair_events += 1
            acc, e = acc_add(acc, saturate(p, 16), bits, overflow)
            events += e
        acc, e = acc_add(acc, correction, bits, overflow)
        events += e
    acc, e = acc_add(acc, bias, bits, overflow)
    return acc, events + e, pair_events


def requantize_scale(acc: int, multiplier, zp: int, lo: int, hi: int, scheme: str) -> int:
    """One accumulator requantized by ``multiplier`` (the engine's stored value) with the float-scale ``scheme``."""
    rq = {"scheme": scheme, "scale": [multiplier]}
    return clamp(requantize_value(acc, rq, 0, zp), lo, hi)
