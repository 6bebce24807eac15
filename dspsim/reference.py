"""The oracle: every dspsim primitive, mode and kernel again, slowly, in plain Python integers.

Nothing here uses numba or numpy rounding. Rounding is done on exact rationals
(:class:`fractions.Fraction`), so each function reads as the definition it emulates rather than as
a port of the fast code: where the fast code uses a bit trick, this file uses arithmetic on exact
values. Float32 steps (TensorFlow's and TFLite's per-element float math) are emulated by rounding
each exact intermediate to the nearest float32 (:func:`f32`), ties to even, as IEEE does.

The tests pin the numba code to this module on random and edge inputs.
"""
from __future__ import annotations

import math
import struct
from fractions import Fraction

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


# =============================================================================================
# rounding and overflow on exact values
# =============================================================================================
def round_fraction(v: Fraction, rule: str) -> int:
    """Round an exact rational by a tie rule name (see ``dspsim.fixedpoint.Rounding``)."""
    v = Fraction(v)
    fl = math.floor(v)
    frac = v - fl
    half = Fraction(1, 2)
    if rule == "floor":
        return fl
    if rule == "toward_zero":
        return math.trunc(v)
    if frac != half:
        return fl + (1 if frac > half else 0)
    if rule == "half_up":
        return fl + 1
    if rule == "half_away_from_zero":
        return fl + 1 if v > 0 else fl
    if rule == "half_to_even":
        return fl if fl % 2 == 0 else fl + 1
    raise ValueError(f"unknown rule {rule}")


def saturate(x: int, bits: int) -> int:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return lo if x < lo else hi if x > hi else x


def wrap(x: int, bits: int) -> int:
    m = 2**bits
    r = x % m
    return r - m if r >= m // 2 else r


def c_div(a: int, b: int) -> int:
    """C integer division: truncates toward zero."""
    return math.trunc(Fraction(a, b))


# =============================================================================================
# fixed-point primitives (gemmlowp / TFLite / CMSIS-NN)
# =============================================================================================
def rounding_right_shift(x: int, shift: int, rule: str) -> int:
    return round_fraction(Fraction(x, 2**shift), rule)


def saturating_rounding_doubling_high_mul(a: int, b: int) -> int:
    """a*b/2^31, ties toward +inf; the one overflow (INT32_MIN^2) saturates to INT32_MAX."""
    return min(round_fraction(Fraction(a * b, 2**31), "half_up"), INT32_MAX)


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    """x/2^exponent, ties away from zero."""
    return round_fraction(Fraction(x, 2**exponent), "half_away_from_zero")


def multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int, rounding: str = "double") -> int:
    if rounding == "single":
        return wrap(round_fraction(Fraction(x * multiplier, 2 ** (31 - shift)), "half_up"), 32)
    left, right = max(shift, 0), max(-shift, 0)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(wrap(x * 2**left, 32), multiplier), right)


def multiply_by_quantized_multiplier_int64(x: int, multiplier: int, shift: int) -> int:
    reduced = round_fraction(Fraction(multiplier, 2**16), "half_up") if multiplier < 0x7FFF0000 else 0x7FFF
    return wrap(round_fraction(Fraction(x * reduced, 2 ** (15 - shift)), "half_up"), 32)


def quantize_multiplier(real: float, rounding: str = "double") -> tuple[int, int]:
    """TFLite QuantizeMultiplier: the exact binary value of ``real`` as q * 2^e, q in [1/2, 1)."""
    if real == 0:
        return 0, 0
    v = Fraction(real)  # exact value of the double
    e = 0
    while abs(v) >= 1:
        v /= 2
        e += 1
    while abs(v) < Fraction(1, 2):
        v *= 2
        e -= 1
    m = round_fraction(v * 2**31, "half_away_from_zero")
    if abs(m) == 2**31:
        m //= 2
        e += 1
    if e < -31:
        return 0, 0
    if rounding == "single" and e > 30:
        return INT32_MAX, 30
    return m, e


# =============================================================================================
# float32 emulation (used by the quantize and float-requantization oracles)
# =============================================================================================
def f32(v) -> Fraction:
    """The float32 nearest to the exact value ``v`` (ties to even), as an exact Fraction.

    Overflow gives +-inf (returned as a float); results below 2^-126 in magnitude are returned
    as they round (subnormals kept); callers that emulate FTZ flush them themselves.
    """
    if isinstance(v, float) and not math.isfinite(v):
        return v
    v = Fraction(v)
    if v == 0:
        return Fraction(0)
    sign = -1 if v < 0 else 1
    a = abs(v)
    e = math.floor(math.log2(a.numerator) - math.log2(a.denominator))
    # correct e so that 2^e <= a < 2^(e+1)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, -126)  # subnormal spacing below 2^-126
    ulp = Fraction(2) ** (e - 23)
    r = round_fraction(a / ulp, "half_to_even") * ulp
    if r >= Fraction(2) ** 128:
        return sign * math.inf
    return sign * r


def float32_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


# =============================================================================================
# quantize / dequantize (TensorFlow, PyTorch, ONNX, TFLite, power-of-two)
# =============================================================================================
# --- TensorFlow QuantizeV2 / Dequantize (SEMANTICS 1): float32 steps with FTZ, scales via double --
FLT_MAX = Fraction(2**24 - 1, 2**24) * Fraction(2) ** 128
_TF_TYPES = {"qint8": (8, True), "quint8": (8, False), "qint16": (16, True), "quint16": (16, False),
             "qint32": (32, True)}


def _is_inf(v) -> bool:
    return isinstance(v, float) and math.isinf(v)


def ftz32(v):
    """``f32(v)`` under FTZ/DAZ: results below 2^-126 in magnitude become 0; +-inf passes."""
    r = f32(v)
    if _is_inf(r):
        return r
    return Fraction(0) if abs(r) < Fraction(1, 2**126) else r


def _double(v):
    """The double nearest to ``v`` (Python's int/int true division is correctly rounded)."""
    if _is_inf(v):
        return v
    v = Fraction(v)
    try:
        return Fraction(v.numerator / v.denominator)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _div(a, b):
    """``a / b`` for the exact values of two floats, as C does when ``b`` may be 0 (a != 0)."""
    if b == 0:
        return math.inf if a > 0 else -math.inf
    return Fraction(a) / Fraction(b)


def _type_bounds(bits: int, signed: bool) -> tuple[int, int]:
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)


def _code(v: int, bits: int, signed: bool) -> int:
    """C conversion of an integral value to the type: the low ``bits`` bits."""
    return wrap(v, bits) if signed else v % 2**bits


def tf_adjust_range(min_in: float, max_in: float, ensure_minimum_range: float) -> tuple[Fraction, Fraction]:
    """The range QuantizeV2 works on: contains 0, at least ``eps`` wide (float32, FTZ)."""
    lo, hi, emr = ftz32(min_in), ftz32(max_in), ftz32(ensure_minimum_range)
    min_r = min(Fraction(0), lo)
    eps = ftz32(max(Fraction(1), abs(lo), abs(hi)) * emr)
    max_r = max(Fraction(0), hi, ftz32(min_r + eps))
    return min_r, max_r


def tf_quantize(xs, min_in, max_in, T, mode="MIN_COMBINED", round_mode="HALF_AWAY_FROM_ZERO",
                narrow_range=False, ensure_minimum_range=0.01):
    """One slice of TF QuantizeV2: ``(codes, output_min, output_max)``; a code is None where TF's
    result is undefined (a non-finite pre-cast value)."""
    bits, signed = _TF_TYPES[T]
    tmin, tmax = _type_bounds(bits, signed)
    min_r, max_r = tf_adjust_range(min_in, max_in, ensure_minimum_range)
    xs = [x if _is_inf(x) else ftz32(x) for x in xs]
    codes = []
    if mode == "MIN_COMBINED":
        scale = ftz32(_double(_div(Fraction(tmax - tmin), ftz32(max_r - min_r))))
        for x in xs:
            if _is_inf(scale):
                codes.append(None)
                continue
            y = ftz32(ftz32(min(max(x, min_r), max_r) - min_r) * scale)
            if signed:
                v = round_fraction(ftz32(y - 2 ** (bits - 1)), "half_away_from_zero")
            else:
                v = math.trunc(ftz32(y + Fraction(1, 2)))
            codes.append(_code(v, bits, signed))
        return codes, min_r, max_r
    if mode == "MIN_FIRST":
        rs = Fraction(0) if max_r == min_r else ftz32(_double(_div(Fraction(2**bits - 1), ftz32(max_r - min_r))))
        lower, upper = max(Fraction(tmin), Fraction(-(2**31))), min(f32(tmax), Fraction(2147483520))
        if _is_inf(rs):
            return [None] * len(xs), min_r, max_r
        offset = ftz32(round_fraction(ftz32(min_r * rs), "half_away_from_zero") - tmin)
        for x in xs:
            p = x * rs if not (_is_inf(x) and rs == 0) else None
            p = None if p is None else (p if _is_inf(p) else ftz32(p))
            if p is None:
                codes.append(None)
                continue
            if _is_inf(p):
                v = upper if p > 0 else lower
            else:
                v = min(max(ftz32(round_fraction(p, "half_away_from_zero") - offset), lower), upper)
            codes.append(_code(math.trunc(v), bits, signed))
        return codes, min_r, max_r
    # SCALED
    min_out, max_out = f32(tmin + (1 if narrow_range else 0)), f32(tmax)
    s_min = ftz32(_div(min_out, min_r)) if ftz32(min_out * min_r) > 0 else FLT_MAX
    s_max = ftz32(_div(max_out, max_r)) if ftz32(max_out * max_r) > 0 else FLT_MAX
    s = min(s_min, s_max)
    if _is_inf(s):
        return [None] * len(xs), Fraction(0), Fraction(0)
    min_r, max_r = ftz32(min_out / s), ftz32(max_out / s)
    rule = "half_to_even" if round_mode == "HALF_TO_EVEN" else "half_away_from_zero"
    for x in xs:
        y = ftz32(min(max(x, min_r), max_r) * s)
        codes.append(_code(round_fraction(y, rule), bits, signed))
    return codes, min_r, max_r


def tf_dequantize(codes, min_r, max_r, T, mode="MIN_COMBINED", narrow_range=False, per_tensor=True):
    """One slice of TF Dequantize: the float32 results as exact Fractions (None if undefined).

    Per-tensor SCALED reads the code as ``int(float(q))`` (x86: float 2^31 truncates to INT32_MIN).
    """
    bits, signed = _TF_TYPES[T]
    tmin, tmax = _type_bounds(bits, signed)
    min_r, max_r = ftz32(min_r), ftz32(max_r)
    out = []
    for q in codes:
        fq = f32(q)
        if mode == "SCALED" and per_tensor and fq >= 2**31:
            fq = Fraction(-(2**31))
        if mode == "MIN_COMBINED":
            sf = ftz32(ftz32(max_r - min_r) / ftz32(f32(tmax) - f32(tmin)))
            half = 2 ** (bits - 1) if signed else 0
            out.append(ftz32(ftz32(ftz32(fq + half) * sf) + min_r))
        elif mode == "MIN_FIRST":
            rs = ftz32(_double(ftz32(max_r - min_r) / (2**bits - 1)))
            if max_r == min_r:
                rounded_min = min_r
            elif rs == 0:
                out.append(None)  # min / 0 in C: not a number TF defines
                continue
            else:
                rounded_min = ftz32(round_fraction(ftz32(min_r / rs), "half_away_from_zero") * rs)
            out.append(ftz32(ftz32(rounded_min - ftz32(tmin * rs)) + ftz32(fq * rs)))
        else:
            if tmin == 0:
                sf = ftz32(max_r / f32(tmax))
            else:
                sf = max(ftz32(min_r / f32(tmin + (1 if narrow_range else 0))), ftz32(max_r / f32(tmax)))
            out.append(ftz32(fq * sf))
    return out


# --- PyTorch / FBGEMM (observed, SEMANTICS 6), ONNX Runtime MLAS (5), TFLite reference (3) ------
def _clamp(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


def torch_quantize(x, scale: float, zero_point: int, lo: int, hi: int, fused: bool) -> int:
    """``rint(fmaf(x, inv, zp))`` (fused, per-tensor 8-bit) or ``rint(f32(f32(x*inv) + f32(zp)))``,
    saturated; ``inv = f32(1 / f32(scale))``."""
    inv = f32(1 / f32(scale))
    if _is_inf(x):
        return hi if x > 0 else lo
    t = f32(Fraction(x) * inv + zero_point) if fused else f32(f32(Fraction(x) * inv) + f32(zero_point))
    if _is_inf(t):
        return hi if t > 0 else lo
    return _clamp(round_fraction(t, "half_to_even"), lo, hi)


def torch_dequantize_per_tensor(q: int, scale: float, zero_point: int) -> Fraction:
    return f32(f32(scale) * f32(wrap(q - zero_point, 32)))


def torch_dequantize_per_channel(q: int, scale: float, zero_point: int) -> Fraction:
    return f32(_double(f32(f32(q) - f32(zero_point)) * Fraction(scale)))


def onnx_quantize(x, scale: float, zero_point: int, lo: int, hi: int) -> int:
    """MLAS: ``f32(x / scale)``, clamp to [lo - zp, hi - zp], ties to even, + zp."""
    if _is_inf(x):
        return hi if x > 0 else lo
    v = f32(Fraction(x) / f32(scale))
    v = v if _is_inf(v) else min(max(v, f32(lo - zero_point)), f32(hi - zero_point))
    if _is_inf(v):
        v = f32(hi - zero_point) if v > 0 else f32(lo - zero_point)
    return round_fraction(v, "half_to_even") + zero_point


def onnx_dequantize(q: int, scale: float, zero_point: int) -> Fraction:
    return f32(f32(wrap(q - zero_point, 32)) * f32(scale))


def tflite_quantize(x, scale: float, zero_point: int, lo: int, hi: int) -> int:
    """``clamp(int32(round_haz(f32(x / scale))) + zp)``; beyond int32 the x86 conversion gives
    INT32_MIN and ``+ zp`` wraps."""
    v = x if _is_inf(x) else f32(Fraction(x) / f32(scale))
    r = None if _is_inf(v) else round_fraction(v, "half_away_from_zero")
    if r is None or not INT32_MIN <= r <= INT32_MAX:
        r = INT32_MIN
    return _clamp(wrap(r + zero_point, 32), lo, hi)


def tflite_dequantize(q: int, scale: float, zero_point: int) -> Fraction:
    return f32(_double(f32(scale) * wrap(q - zero_point, 32)))


# --- power-of-two (Q-format) --------------------------------------------------------------------
def quantize_pof2(x, frac_bits: int, bits: int, rule: str, narrow_range: bool) -> int:
    qmax = 2 ** (bits - 1) - 1
    qmin = -qmax if narrow_range else -qmax - 1
    if _is_inf(x):
        return qmax if x > 0 else qmin
    return _clamp(round_fraction(Fraction(x) * Fraction(2) ** frac_bits, rule), qmin, qmax)


def dequantize_pof2(q: int, frac_bits: int) -> Fraction:
    return f32(Fraction(q) * Fraction(2) ** -frac_bits)


def pof2_frac_bits(lo, hi, bits: int, narrow_range: bool) -> int:
    """Largest f with ``hi * 2^f <= 2^(b-1) - 1`` and ``lo * 2^f >=`` the lowest code (searched)."""
    qmax = 2 ** (bits - 1) - 1
    qlow = -qmax if narrow_range else -qmax - 1
    lo, hi = Fraction(lo), Fraction(hi)
    if lo == 0 and hi == 0:
        return bits - 1
    f = 1200
    while not (hi * Fraction(2) ** f <= qmax and lo * Fraction(2) ** f >= qlow):
        f -= 1
    return f


# =============================================================================================
# requantization schemes and kernels
# =============================================================================================
# --- requantization (dspsim.requant) ---------------------------------------------------------
def f64(v) -> Fraction:
    """The double nearest to the exact value ``v`` (ties to even), as an exact Fraction."""
    return Fraction(float(Fraction(v)))  # int/int true division is correctly rounded


def requant_from_scales(input_scale, weight_scale, output_scale, engine="tflite", op="conv", rounding="double"):
    """Engine prepare steps (SEMANTICS 3, 5, 6, 7) as a dict: scheme, multiplier, shift, scale, act_times_w.

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
        pairs = [quantize_multiplier(float(r), rounding) for r in reals]
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


def x86_int32(v: int) -> int:
    """cvtps2dq / cvttsd2si: a value outside int32 becomes INT32_MIN ("integer indefinite")."""
    return v if INT32_MIN <= v <= INT32_MAX else INT32_MIN


def clamp(v: int, lo: int, hi: int) -> int:
    return min(max(v, lo), hi)


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


# --- kernels ---------------------------------------------------------------------------------
def _conv_generic(x, w, bias, zx, zw, zo, rq, lo, hi, stride, pads, dilation, in_channels, acc_model,
                  float_bias=None):
    """TFLite ConvPerChannel loop: output channel oc reads input channels in_channels(oc) and
    filter taps w[oc][fy][fx][i]; ``zw`` an int or one per output channel. Returns (nested output list, total overflow events, pair events)."""
    bits, overflow, pair_mode = acc_model
    n_b, in_h, in_w = len(x), len(x[0]), len(x[0][0])
    k_h, k_w = len(w[0]), len(w[0][0])
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = stride, pads, dilation
    out_h = (in_h + pt + pb - (k_h - 1) * dh - 1) // sh + 1
    out_w = (in_w + pl + pr - (k_w - 1) * dw - 1) // sw + 1
    out, events, pair_events = [], 0, 0
    for b in range(n_b):
        plane = []
        for oy in range(out_h):
            line = []
            for ox in range(out_w):
                pixel = []
                for oc in range(len(w)):
                    chans = in_channels(oc)
                    zwo = zw[oc] if isinstance(zw, (list, tuple)) else zw
                    terms, raw = [], []
                    for fy in range(k_h):
                        for fx in range(k_w):
                            iy, ix = oy * sh - pt + dh * fy, ox * sw - pl + dw * fx
                            inside = 0 <= iy < in_h and 0 <= ix < in_w
                            for i, ic in enumerate(chans):
                                wv = w[oc][fy][fx][i]
                                xv = x[b][iy][ix][ic] if inside else zx
                                raw.append((xv, wv))
                                if inside:
                                    terms.append((xv - zx) * (wv - zwo))
                    pairs = None
                    if pair_mode:
                        k = len(raw)
                        corr = -zx * (sum(v for _, v in raw) - k * zwo) - zwo * sum(u for u, _ in raw)
                        pairs = ([u * v for u, v in raw], corr)
                    bv = 0 if bias is None else bias[oc]
                    acc, e, pe = accumulate(terms, bv, bits, overflow, pairs)
                    events += e
                    pair_events += pe
                    fb = None if float_bias is None else float_bias[oc]
                    pixel.append(clamp(requantize_value(acc, rq, oc, zo, fb), lo, hi))
                line.append(pixel)
            plane.append(line)
        out.append(plane)
    return out, events, pair_events


def conv2d(x, w, bias, zx, zw, zo, rq, lo, hi, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1),
           acc_model=(32, "wrap", False), float_bias=None):
    """TFLite ConvPerChannel (grouped): x NHWC, w OHWI nested lists; ``pads = (top, bottom, left, right)``."""
    icg, c = len(w[0][0][0]), len(x[0][0][0])
    ocg = len(w) // (c // icg)
    return _conv_generic(x, w, bias, zx, zw, zo, rq, lo, hi, stride, pads, dilation,
                         lambda oc: range((oc // ocg) * icg, (oc // ocg + 1) * icg), acc_model, float_bias)


def depthwise_conv2d(x, w, bias, zx, zw, zo, rq, lo, hi, depth_multiplier=1, stride=(1, 1), pads=(0, 0, 0, 0),
                     dilation=(1, 1), acc_model=(32, "wrap", False), float_bias=None):
    """TFLite DepthwiseConvPerChannel: w (1, KH, KW, C*M), output channel oc = ic*M + m reads input ic."""
    k_h, k_w, n_oc = len(w[0]), len(w[0][0]), len(w[0][0][0])
    w_ohwi = [[[[w[0][fy][fx][oc]] for fx in range(k_w)] for fy in range(k_h)] for oc in range(n_oc)]
    return _conv_generic(x, w_ohwi, bias, zx, zw, zo, rq, lo, hi, stride, pads, dilation,
                         lambda oc: [oc // depth_multiplier], acc_model, float_bias)


def fully_connected(x, w, bias, zx, zw, zo, rq, lo, hi, acc_model=(32, "wrap", False), float_bias=None):
    """TFLite FullyConnected: x (M, K), w (N, K) nested lists; acc = sum over d, then + bias."""
    x4 = [[[row]] for row in x]
    w4 = [[[row]] for row in w]
    out, ev, pe = _conv_generic(x4, w4, bias, zx, zw, zo, rq, lo, hi, (1, 1), (0, 0, 0, 0), (1, 1),
                                lambda oc: range(len(x[0])), acc_model, float_bias)
    return [o[0][0] for o in out], ev, pe


# --- ReLU family (dspsim.kernels.relu) -------------------------------------------------------
def haz_f32_div(f, scale) -> int:
    """TfLiteRound(f / scale) with a float32 division."""
    return round_fraction(f32(f32(f) / f32(scale)), "half_away_from_zero")


def tflite_activation_range(activation, output_scale, zo, qmin, qmax):
    lo_hi = {"none": (None, None), "relu": (0, None), "relu6": (0, 6), "relu_n1_to_1": (-1, 1)}[activation]
    lo = qmin if lo_hi[0] is None else max(qmin, zo + haz_f32_div(lo_hi[0], output_scale))
    hi = qmax if lo_hi[1] is None else min(qmax, zo + haz_f32_div(lo_hi[1], output_scale))
    return lo, hi


def relu(q: int, zi: int, zo: int, multiplier: int, shift: int, lo: int, hi: int, rounding="double") -> int:
    """TFLite ReluX: clamp(zo + MBQM(q - zi, M, shift), lo, hi)."""
    return clamp(zo + multiply_by_quantized_multiplier(q - zi, multiplier, shift, rounding), lo, hi)


def leaky_relu(q, zi, zo, alpha, input_scale, output_scale, qmin, qmax, rounding="double") -> int:
    """TFLite QuantizeLeakyRelu with the multipliers of LeakyReluPrepare (float32 ratios)."""
    s_in, s_out = f32(input_scale), f32(output_scale)
    m_id = quantize_multiplier(float(f32(s_in / s_out)), rounding)
    m_al = quantize_multiplier(float(f32(f32(s_in * f32(alpha)) / s_out)), rounding)
    m, s = m_id if q - zi >= 0 else m_al
    return clamp(zo + multiply_by_quantized_multiplier(q - zi, m, s, rounding), qmin, qmax)


def tflm_relu6(q, zi, input_scale, qmin, qmax) -> int:
    return clamp(q, zi, clamp(zi + haz_f32_div(6, input_scale), qmin, qmax))


def torch_relu(q, zp) -> int:
    return max(q, zp)


# (section: tflite ops)
# --- ADD, MUL, MEAN, pooling (dspsim.kernels.elementwise / pool; TFLite reference integer ops) --
def tflite_add_params(s1, s2, s_out, left_shift=20):
    """TFLite ADD Prepare: (left_shift, (M1, S1), (M2, S2), (Mo, So)) from float32 scales."""
    s1, s2, s_out = (float(f32(float(v))) for v in (s1, s2, s_out))
    twice_max = 2 * max(s1, s2)  # float32 * 2: exact
    denom = float(f32(Fraction(2**left_shift) * Fraction(s_out)))
    return (left_shift, quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max),
            quantize_multiplier(twice_max / denom))


def tflite_add(x1: int, x2: int, zp1: int, zp2: int, zo: int, params, lo: int, hi: int) -> int:
    """reference_integer_ops::AddFunc: both inputs onto 2^left_shift * a common scale, sum, requantize."""
    ls, (m1, e1), (m2, e2), (mo, eo) = params
    a = multiply_by_quantized_multiplier(wrap((x1 - zp1) * 2**ls, 32), m1, e1)
    b = multiply_by_quantized_multiplier(wrap((x2 - zp2) * 2**ls, 32), m2, e2)
    return clamp(multiply_by_quantized_multiplier(wrap(a + b, 32), mo, eo) + zo, lo, hi)


def tflite_mul(x1: int, x2: int, zp1: int, zp2: int, zo: int, multiplier: int, shift: int, lo: int, hi: int) -> int:
    """reference_integer_ops::MulElementwise."""
    return clamp(zo + multiply_by_quantized_multiplier((x1 - zp1) * (x2 - zp2), multiplier, shift), lo, hi)


def tflite_mean(values, zi: int, zo: int, multiplier: int, shift: int, qmin: int, qmax: int) -> int:
    """reference_ops::QuantizedMeanOrSum (mean) of the codes ``values`` of one output element."""
    n = len(values)
    k = min(n.bit_length() - 1, 32, 31 + shift)
    m_n = (multiplier * 2**k) // n  # both positive: C++ truncation = floor
    acc = wrap(sum(values) - zi * n, 32)
    return clamp(multiply_by_quantized_multiplier(acc, m_n, shift - k) + zo, qmin, qmax)


def pool_geometry(n: int, k: int, stride: int, padding: str):
    """(out, pad_before) of TFLite's ComputePaddingHeightWidth (dilation 1)."""
    out = -(-n // stride) if padding == "SAME" else -(-(n - k + 1) // stride)
    return out, max(0, ((out - 1) * stride + k - n) // 2)


def _pool_windows(shape, k_hw, stride, padding):
    """(b, oy, ox, taps) for every output pixel; taps = [(iy, ix)] inside the input (TFLite clipping)."""
    n_b, in_h, in_w, _ = shape
    (k_h, k_w), (s_h, s_w) = k_hw, stride
    out_h, p_t = pool_geometry(in_h, k_h, s_h, padding)
    out_w, p_l = pool_geometry(in_w, k_w, s_w, padding)
    for b in range(n_b):
        for oy in range(out_h):
            for ox in range(out_w):
                taps = [(oy * s_h - p_t + fy, ox * s_w - p_l + fx) for fy in range(k_h) for fx in range(k_w)]
                yield b, oy, ox, [(iy, ix) for iy, ix in taps if 0 <= iy < in_h and 0 <= ix < in_w]


def average_pool2d(x, k_hw, stride, padding, lo, hi):
    """TFLite AveragePool on codes: round(sum / count) with ties away from zero, then clamp.

    ``x`` (B, H, W, C) nested sequences, ``padding`` "SAME" | "VALID"; returns {(b, oy, ox, c): code}."""
    out = {}
    for b, oy, ox, taps in _pool_windows(_shape(x), k_hw, stride, padding):
        for c in range(_shape(x)[3]):
            s = sum(int(x[b][iy][ix][c]) for iy, ix in taps)
            out[(b, oy, ox, c)] = clamp(round_fraction(Fraction(s, len(taps)), "half_away_from_zero"), lo, hi)
    return out


def max_pool2d(x, k_hw, stride, padding, lo, hi):
    """TFLite MaxPool on codes: max over the clipped window, clamp; a dict as :func:`average_pool2d`."""
    out = {}
    for b, oy, ox, taps in _pool_windows(_shape(x), k_hw, stride, padding):
        for c in range(_shape(x)[3]):
            out[(b, oy, ox, c)] = clamp(max(int(x[b][iy][ix][c]) for iy, ix in taps), lo, hi)
    return out


def _shape(x):
    return (len(x), len(x[0]), len(x[0][0]), len(x[0][0][0]))


# --- XNNPACK variants (LiteRT's default interpreter; dspsim.kernels.elementwise.xnnpack_*) -----
def _f32(v) -> Fraction:
    return f32(Fraction(float(v)) if not isinstance(v, (int, Fraction)) else v)


def xnnpack_add_params(s1, s2, s_out):
    """(M1, M2, shift) of xnn_init_qs8_add_minmax_scalar_params: 21-bit multipliers of f32 ratios."""
    r1, r2 = _f32(_f32(s1) / _f32(s_out)), _f32(_f32(s2) / _f32(s_out))
    e = math.floor(math.log2(max(r1, r2)))
    while Fraction(2) ** e > max(r1, r2):  # exact exponent of the float32
        e -= 1
    while Fraction(2) ** (e + 1) <= max(r1, r2):
        e += 1
    shift = 20 - e
    return round_fraction(r1 * 2**shift, "half_to_even"), round_fraction(r2 * 2**shift, "half_to_even"), shift


def xnnpack_add(x1, x2, z1, z2, zo, params, lo, hi) -> int:
    """qs8-vadd: one floor shift of an int32 sum that carries the rounding constant 2^(shift-1)."""
    m1, m2, shift = params
    acc = wrap(2 ** (shift - 1) + (x1 - z1) * m1 + (x2 - z2) * m2, 32)
    return clamp((acc >> shift) + zo, lo, hi)


def xnnpack_mul(x1, x2, z1, z2, zo, scale, lo, hi) -> int:
    """qs8-vmul fp32: rint(f32(float(product) * scale)) + zo."""
    return clamp(round_fraction(f32(Fraction((x1 - z1) * (x2 - z2)) * _f32(scale)), "half_to_even") + zo, lo, hi)


def xnnpack_q8_8(x, zi, zo, s_in, s_out, alpha=None) -> int:
    """qs8-vcvt (alpha None) / qs8-vlrelu: multipliers lrintf(256 * ratio), ((zo << 8) + 128 + d*M) >> 8."""
    r = _f32(_f32(s_in) / _f32(s_out))
    d = x - zi
    if alpha is not None and d < 0:
        r = _f32(r * _f32(alpha))
    m = round_fraction(256 * r, "half_to_even")
    return clamp((zo * 256 + 128 + d * m) >> 8, -128, 127)


def xnnpack_mean(values, zi, zo, s_in, s_out) -> int:
    """mean_nd on qs8: int32 sum, then nearbyint(f32(f32(float(sum) * inv) + zp')), see the kernel."""
    n = len(values)
    inv = _f32(_f32(_f32(s_in) / _f32(s_out)) * f32(Fraction(1, n)))
    zp = f32(Fraction(zo) - f32(f32(Fraction(n * zi)) * inv))
    acc = wrap(sum(values), 32)
    return clamp(round_fraction(f32(f32(f32(Fraction(acc)) * inv) + zp), "half_to_even"), -128, 127)


def xnnpack_quantize(x, scale, zp) -> int:
    """f32-qs8-vcvt: rint(f32(x * f32(1 / scale))) + zp, clamped to int8."""
    v = f32(_f32(x) * f32(1 / _f32(scale)))
    return clamp(round_fraction(v, "half_to_even") + zp, -128, 127)
