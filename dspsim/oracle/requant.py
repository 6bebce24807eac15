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


def requant_from_scales(input_scale, weight_scale, output_scale, engine="tflite", op="conv", rounding="double"):
    """Engine prepare steps (docs/semantics.md §3, 5, 6, 7) as a dict: scheme, multiplier, shift, scale, act_times_w.

    ``weight_scale`` a list means per channel; every scale is first rounded to float32.
    """
    s_in, s_out = f32(input_scale), f32(output_scale)
    per_channel = isinstance(weight_scale, (list, tuple))
    s_w = [f32(v) for v in weight_scale] if per_channel else [f32(1 if weight_scale is None else weight_scale)]
    if engine == "litert" and op == "fully_connected":  # LiteRT 2.x reference FC: double scale
        return {"scheme": "litert-fc", "scale": [f64(s_in * w / s_out) for w in s_w]}
    if engine in ("tflite", "cmsis-nn", "litert"):
        if op == "relu":
            reals = [f32(s_in / s_out)]
        elif op == "fully_connected" and not per_channel:
            reals = [f64(f32(s_in * s_w[0]) / s_out)]
        else:
            reals = [f64(s_in * w / s_out) for w in s_w]  # the product of two floats is exact in double
        pairs = [quantize_multiplier(float(r), "single" if rounding == "single" else "double") for r in reals]
        return {"scheme": rounding, "multiplier": [p[0] for p in pairs], "shift": [p[1] for p in pairs]}
    atw = [f32(s_in * w) for w in s_w]
    if engine == "onednn":
        return {"scheme": engine, "scale": [f32(1 / s_out)], "act_times_w": atw}
    return {"scheme": engine, "scale": [f32(a / s_out) for a in atw], "act_times_w": atw,
            "reciprocal_bias": engine == "fbgemm" and not per_channel}


def requantize_value(acc: int, rq: dict, c: int, zp: int, float_bias=None) -> int:
    """One accumulator through scheme ``rq`` (channel ``c``) and ``+ zp``, before the activation clamp.

    ``rq`` as from :func:`requant_from_scales`, or ``{"scheme": "shift", "shift": [...], "rounding": rule}``.
    """
    def at(key):
        v = rq[key]
        return v[c] if len(v) > 1 else v[0]

    scheme = rq["scheme"]
    if scheme in ("double", "single"):
        return multiply_by_quantized_multiplier(saturate(acc, 32), at("multiplier"), at("shift"), scheme) + zp
    if scheme == "int64":  # the 16x8 kernels: the int64 sum, 16-bit multiplier
        return multiply_by_quantized_multiplier_int64(acc, at("multiplier"), at("shift")) + zp
    if scheme == "shift":
        return round_fraction(Fraction(acc) * Fraction(2) ** at("shift"), rq["rounding"]) + zp
    scale = Fraction(at("scale"))
    if scheme == "onnx-reference":  # float64, zero point before rounding
        return round_fraction(f64(f64(acc * scale) + zp), "half_to_even")
    if scheme == "litert-fc":  # int32(std::round(double)), x86: out of range -> INT32_MIN
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
    v = round_fraction(f32(raw * scale), "half_to_even")
    return (x86_int32(v) if scheme == "fbgemm" else v) + zp  # MLAS/XNNPACK clamp in float first


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
