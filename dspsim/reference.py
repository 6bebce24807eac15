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


# =============================================================================================
# quantize / dequantize (TensorFlow, PyTorch, ONNX, TFLite, power-of-two)
# =============================================================================================
# --- TensorFlow QuantizeV2 / Dequantize (docs/semantics.md §1): float32 steps with FTZ, scales via double --
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


# --- PyTorch / FBGEMM (observed, docs/semantics.md §6), ONNX Runtime MLAS (§5), TFLite reference (§3) ------
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


# =============================================================================================
# the kernels' signatures (dspsim.registry oracles)
# =============================================================================================
# Each function below takes exactly the arguments of the public kernel of the same name without
# the ``_oracle`` suffix and returns the same integers. numpy is used only to lay out arrays
# (broadcasting, axes, copies); every value is computed by the scalar functions above.
def _np():
    import numpy as np

    return np


def _range(dtype, act_min, act_max):
    np = _np()
    info = np.iinfo(dtype)
    return (int(info.min) if act_min is None else int(act_min)), (int(info.max) if act_max is None else int(act_max))


def _map(f, dtype, *arrays):
    """``f`` on the Python ints of the broadcast ``arrays``, element by element, as ``dtype``."""
    np = _np()
    bc = np.broadcast_arrays(*[np.asarray(a) for a in arrays])
    flat = [b.reshape(-1).tolist() for b in bc]
    return np.array([f(*vals) for vals in zip(*flat)], dtype=dtype).reshape(bc[0].shape)


def add_oracle(x1, x2, params, *, input1_zero_point, input2_zero_point, output_zero_point, act_min=None,
               act_max=None):
    p = (params.left_shift, (params.input1_multiplier, params.input1_shift),
         (params.input2_multiplier, params.input2_shift), (params.output_multiplier, params.output_shift))
    lo, hi = _range(x1.dtype, act_min, act_max)
    return _map(lambda a, b: tflite_add(a, b, input1_zero_point, input2_zero_point, output_zero_point, p, lo, hi),
                x1.dtype, x1, x2)


def mul_oracle(x1, x2, *, input1_zero_point, input2_zero_point, output_zero_point, multiplier=None, shift=None,
               scale=None, act_min=None, act_max=None):
    lo, hi = _range(x1.dtype, act_min, act_max)
    z1, z2, zo = input1_zero_point, input2_zero_point, output_zero_point
    if scale is not None:
        return _map(lambda a, b: xnnpack_mul(a, b, z1, z2, zo, scale, lo, hi), x1.dtype, x1, x2)
    return _map(lambda a, b: tflite_mul(a, b, z1, z2, zo, multiplier, shift, lo, hi), x1.dtype, x1, x2)


def _reduce(x, axis, keep_dims, f, dtype):
    """``f(list of codes)`` over the axes ``axis`` of ``x`` (negative and repeated axes resolved)."""
    np = _np()
    axes = sorted({int(a) % x.ndim for a in np.atleast_1d(axis).tolist()})
    rest = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, rest + axes).reshape([x.shape[d] for d in rest] + [-1])
    out = np.array([f(v) for v in moved.reshape(-1, moved.shape[-1]).tolist()], dtype=dtype)
    shape = [1 if d in axes else x.shape[d] for d in range(x.ndim)] if keep_dims else [x.shape[d] for d in rest]
    return out.reshape(shape)


def mean_oracle(x, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False):
    lo, hi = _range(x.dtype, None, None)
    return _reduce(x, axis, keep_dims,
                   lambda v: tflite_mean(v, input_zero_point, output_zero_point, multiplier, shift, lo, hi), x.dtype)


def xnnpack_mean_oracle(x, axis, *, input_scale, input_zero_point, output_scale, output_zero_point, keep_dims=False):
    return _reduce(x, axis, keep_dims,
                   lambda v: xnnpack_mean(v, input_zero_point, output_zero_point, input_scale, output_scale), x.dtype)


def pad_oracle(x, paddings, pad_value):
    np = _np()
    pads = [(int(a), int(b)) for a, b in np.asarray(paddings).tolist()]
    out = np.full([n + a + b for n, (a, b) in zip(x.shape, pads)], pad_value, dtype=x.dtype)
    out[tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, pads))] = x
    return out


def concatenation_oracle(xs, axis):
    np = _np()
    ax = int(axis) % xs[0].ndim
    parts = [np.moveaxis(np.asarray(a), ax, 0) for a in xs]
    rows = [row for p in parts for row in p]  # the slabs along the axis, in order
    return np.moveaxis(np.array(rows, dtype=xs[0].dtype), 0, ax)


def _pool_oracle(f, x, filter_size, stride, padding, act_min, act_max):
    np = _np()
    k = (filter_size, filter_size) if np.ndim(filter_size) == 0 else tuple(filter_size)
    s = (stride, stride) if np.ndim(stride) == 0 else tuple(stride)
    lo, hi = _range(x.dtype, act_min, act_max)
    res = f(x.tolist(), k, s, padding.upper(), lo, hi)
    out = np.zeros([max(key[d] for key in res) + 1 for d in range(4)], x.dtype)
    for key, v in res.items():
        out[key] = v
    return out


def average_pool2d_oracle(x, filter_size, *, stride=1, padding="VALID", act_min=None, act_max=None):
    return _pool_oracle(average_pool2d, x, filter_size, stride, padding, act_min, act_max)


def max_pool2d_oracle(x, filter_size, *, stride=1, padding="VALID", act_min=None, act_max=None):
    return _pool_oracle(max_pool2d, x, filter_size, stride, padding, act_min, act_max)


def _out_dtype(x, out_dtype):
    np = _np()
    return x.dtype if out_dtype is None else np.dtype(out_dtype)


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


def xnnpack_add_oracle(x1, x2, params, *, input1_zero_point, input2_zero_point, output_zero_point, act_min=None,
                       act_max=None):
    p = (params.a_multiplier, params.b_multiplier, params.shift)
    lo, hi = _range(x1.dtype, act_min, act_max)
    return _map(lambda a, b: xnnpack_add(a, b, input1_zero_point, input2_zero_point, output_zero_point, p, lo, hi),
                x1.dtype, x1, x2)


def xnnpack_convert_oracle(x, *, input_scale, input_zero_point, output_scale, output_zero_point):
    return _map(lambda q: xnnpack_q8_8(q, input_zero_point, output_zero_point, input_scale, output_scale), x.dtype, x)


def xnnpack_leaky_relu_oracle(x, *, alpha, input_scale, input_zero_point, output_scale, output_zero_point):
    return _map(lambda q: xnnpack_q8_8(q, input_zero_point, output_zero_point, input_scale, output_scale, alpha),
                x.dtype, x)


def xnnpack_quantize_oracle(x, *, scale, zero_point):
    np = _np()
    return _map(lambda v: xnnpack_quantize(v, scale, zero_point), np.int8, x)


def relu_oracle(x, *, input_zero_point, output_zero_point=None, multiplier=None, shift=None, act_min=None,
                act_max=None, rounding="double", out_dtype=None):
    dt = _out_dtype(x, out_dtype)
    zo = input_zero_point if output_zero_point is None else output_zero_point
    m, s = (1 << 30, 1) if multiplier is None else (int(multiplier), int(shift))
    lo, hi = _range(dt, max(int(_np().iinfo(dt).min), zo) if act_min is None else act_min, act_max)
    return _map(lambda q: relu(q, input_zero_point, zo, m, s, lo, hi, rounding), dt, x)


def _same_pads(n, k, stride, dilation, padding):
    """(before, after) padding of one spatial axis: TensorFlow's SAME (odd pixel after), VALID, or given."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return 0, 0
        eff = (k - 1) * dilation + 1
        out = -(-n // stride)
        total = max((out - 1) * stride + eff - n, 0)
        return total // 2, total - total // 2
    return padding


def _explicit_pads(padding):
    """``padding`` as ((top, bottom), (left, right)) for an explicit int / (ph, pw) / nested pair."""
    if isinstance(padding, str):
        return padding, padding
    if isinstance(padding, int):
        return (padding, padding), (padding, padding)
    a, b = padding
    return ((a, a) if isinstance(a, int) else tuple(a)), ((b, b) if isinstance(b, int) else tuple(b))


def _kernel_rq(n, multiplier, shift, rounding, requant, input_scale, weight_scale, output_scale, op):
    """The requantization of a kernel call as :func:`requantize_value`'s dict (see dspsim.requant)."""
    np = _np()
    if requant is not None and not isinstance(requant, str):  # a dspsim.Requant value
        return {"scheme": requant.scheme, "multiplier": list(requant.multiplier), "shift": list(requant.shift),
                "scale": list(requant.scale), "act_times_w": list(requant.act_times_w),
                "rounding": requant.tie.name.lower(), "reciprocal_bias": requant.reciprocal_bias}
    if requant == "shift":
        return {"scheme": "shift", "shift": np.atleast_1d(shift).tolist(),
                "rounding": "half_away_from_zero" if rounding == "double" else str(rounding).lower()}
    if requant is not None or input_scale is not None:
        ws = np.asarray(weight_scale, np.float64)
        return requant_from_scales(float(input_scale), ws.tolist() if ws.ndim else float(ws), float(output_scale),
                                   engine=requant or "tflite", op=op, rounding=rounding)
    return {"scheme": rounding, "multiplier": np.atleast_1d(multiplier).tolist(),
            "shift": np.atleast_1d(shift).tolist()}


def _mac_kernel_oracle(kind, x, w, bias, geometry, input_zero_point, weight_zero_point, output_zero_point,
                       multiplier, shift, act_min, act_max, rounding, accumulator, out_dtype, requant, input_scale,
                       weight_scale, output_scale):
    np = _np()
    w = np.asarray(getattr(w, "weights", w))  # a dspsim.pack_weights result holds its raw weights
    n = w.shape[3] if kind == "depthwise" else w.shape[0]
    lo, hi = _range(np.dtype(out_dtype), act_min, act_max)
    rq = _kernel_rq(n, multiplier, shift, rounding, requant, input_scale, weight_scale, output_scale, kind)
    zw = np.broadcast_to(np.asarray(weight_zero_point), (n,)).tolist()
    b = None if bias is None else np.asarray(bias)
    fb, bi = (b.tolist(), None) if b is not None and b.dtype.kind == "f" else (None, None if b is None else b.tolist())
    acc = (64 if np.asarray(x).dtype == np.int16 else 32, "wrap", False) if accumulator is None else (
        accumulator.bits, accumulator.overflow, accumulator.pair_saturation)  # 16x8: an int64 accumulator
    args = (np.asarray(x).tolist(), w.tolist(), bi, int(input_zero_point), zw, int(output_zero_point), rq, lo, hi)
    if kind == "fully_connected":
        x2 = np.asarray(x).reshape(-1, x.shape[-1])
        out = fully_connected(x2.tolist(), *args[1:], acc_model=acc, float_bias=fb)[0]
        return np.array(out, np.dtype(out_dtype)).reshape(x.shape[:-1] + (n,))
    stride, padding, dilation, mult = geometry
    (sh, sw), (dh, dw) = ((stride, stride) if isinstance(stride, int) else stride,
                          (dilation, dilation) if isinstance(dilation, int) else dilation)
    ph, pw = _explicit_pads(padding)
    pads = (*_same_pads(x.shape[1], w.shape[1], sh, dh, ph), *_same_pads(x.shape[2], w.shape[2], sw, dw, pw))
    kw = dict(stride=(sh, sw), pads=pads, dilation=(dh, dw), acc_model=acc, float_bias=fb)
    if kind == "depthwise":
        out = depthwise_conv2d(*args, depth_multiplier=mult, **kw)[0]
    else:
        out = conv2d(*args, **kw)[0]
    return np.array(out, np.dtype(out_dtype))


def fully_connected_oracle(x, w, bias=None, *, input_zero_point, weight_zero_point=0, output_zero_point,
                           multiplier=None, shift=None, act_min=None, act_max=None, rounding="double",
                           accumulator=None, out_dtype="int8", requant=None, input_scale=None, weight_scale=None,
                           output_scale=None, stats=False):
    return _mac_kernel_oracle("fully_connected", x, w, bias, None, input_zero_point, weight_zero_point,
                              output_zero_point, multiplier, shift, act_min, act_max, rounding, accumulator,
                              out_dtype, requant, input_scale, weight_scale, output_scale)


def conv2d_oracle(x, w, bias=None, *, stride=1, padding="VALID", dilation=1, input_zero_point, weight_zero_point=0,
                  output_zero_point, multiplier=None, shift=None, act_min=None, act_max=None, rounding="double",
                  accumulator=None, out_dtype="int8", requant=None, input_scale=None, weight_scale=None,
                  output_scale=None, stats=False):
    return _mac_kernel_oracle("conv", x, w, bias, (stride, padding, dilation, 1), input_zero_point,
                              weight_zero_point, output_zero_point, multiplier, shift, act_min, act_max, rounding,
                              accumulator, out_dtype, requant, input_scale, weight_scale, output_scale)


def depthwise_conv2d_oracle(x, w, bias=None, *, depth_multiplier=1, stride=1, padding="VALID", dilation=1,
                            input_zero_point, weight_zero_point=0, output_zero_point, multiplier=None, shift=None,
                            act_min=None, act_max=None, rounding="double", accumulator=None, out_dtype="int8",
                            requant=None, input_scale=None, weight_scale=None, output_scale=None, stats=False):
    return _mac_kernel_oracle("depthwise", x, w, bias, (stride, padding, dilation, depth_multiplier),
                              input_zero_point, weight_zero_point, output_zero_point, multiplier, shift, act_min,
                              act_max, rounding, accumulator, out_dtype, requant, input_scale, weight_scale,
                              output_scale)


# --- the quantizers' signatures (per tensor; per channel along ``axis`` where the kernel has one) --
_INT_TYPES = {"qint8": "int8", "quint8": "uint8", "qint16": "int16", "quint16": "uint16", "qint32": "int32"}


def _codes_of(dtype):
    np = _np()
    dt = np.dtype(_INT_TYPES.get(dtype, dtype))
    info = np.iinfo(dt)
    return dt, int(info.min), int(info.max)


def _float32(values):
    np = _np()
    return np.array([float(v) for v in values], np.float32)


def _per_channel(f, x, axis, *params):
    """``f(value, *channel params)`` over ``x``, the params being per-channel along ``axis`` (or scalars)."""
    np = _np()
    x = np.asarray(x)
    if axis is None or all(np.ndim(p) == 0 for p in params):
        scalars = [np.ravel(p)[0].item() if isinstance(p, np.ndarray) else p for p in params]
        return [f(v, *scalars) for v in x.reshape(-1).tolist()]
    ax = axis % x.ndim
    idx = np.moveaxis(np.arange(x.size).reshape(x.shape), ax, -1)
    chans = np.moveaxis(np.broadcast_to(np.arange(x.shape[ax]).reshape([-1 if d == ax else 1 for d in range(x.ndim)]),
                                        x.shape), ax, -1)
    out = [None] * x.size
    flat = x.reshape(-1).tolist()
    for i, c in zip(idx.reshape(-1).tolist(), chans.reshape(-1).tolist()):
        out[i] = f(flat[i], *[np.ravel(p)[c].item() if np.ndim(p) else p for p in params])
    return out


def tf_quantize_oracle(x, min_range, max_range, T, mode="MIN_COMBINED", round_mode="HALF_AWAY_FROM_ZERO",
                       narrow_range=False, axis=None, ensure_minimum_range=0.01):
    """Per-tensor QuantizeV2 (``axis`` None): (codes, output_min, output_max) as the kernel returns them."""
    np = _np()
    codes, mn, mx = tf_quantize(np.asarray(x, np.float32).reshape(-1).tolist(), float(min_range), float(max_range),
                                T, mode, round_mode, narrow_range, ensure_minimum_range)
    dt = _codes_of(T)[0]
    return np.array(codes, dt).reshape(np.shape(x)), np.float32(float(mn)), np.float32(float(mx))


def tf_dequantize_oracle(q, min_range, max_range, mode="MIN_COMBINED", narrow_range=False, axis=None, T=None):
    np = _np()
    q = np.asarray(q)
    t = T or {v: k for k, v in _INT_TYPES.items()}[q.dtype.name]
    return _float32(tf_dequantize(q.reshape(-1).tolist(), float(min_range), float(max_range), t, mode,
                                  narrow_range)).reshape(q.shape)


def quantize_per_tensor_oracle(x, scale, zero_point, dtype):
    dt, lo, hi = _codes_of(dtype)
    fused = dt.itemsize == 1
    return _map(lambda v: torch_quantize(v, float(scale), int(zero_point), lo, hi, fused), dt, x)


def quantize_per_channel_oracle(x, scales, zero_points, axis, dtype):
    np = _np()
    dt, lo, hi = _codes_of(dtype)
    out = _per_channel(lambda v, s, z: torch_quantize(v, s, int(z), lo, hi, False), x, axis, np.asarray(scales),
                       np.asarray(zero_points))
    return np.array(out, dt).reshape(np.shape(x))


def dequantize_per_tensor_oracle(q, scale, zero_point):
    np = _np()
    return _float32(torch_dequantize_per_tensor(v, float(scale), int(zero_point))
                    for v in np.asarray(q).reshape(-1).tolist()).reshape(np.shape(q))


def dequantize_per_channel_oracle(q, scales, zero_points, axis):
    np = _np()
    out = _per_channel(lambda v, s, z: torch_dequantize_per_channel(v, s, int(z)), q, axis, np.asarray(scales),
                       np.asarray(zero_points))
    return _float32(out).reshape(np.shape(q))


def quantize_linear_oracle(x, scale, zero_point=0, axis=1, dtype="uint8"):
    np = _np()
    dt, lo, hi = _codes_of(dtype)
    out = _per_channel(lambda v, s, z: onnx_quantize(v, s, int(z), lo, hi), x, axis, np.asarray(scale),
                       np.asarray(zero_point))
    return np.array(out, dt).reshape(np.shape(x))


def dequantize_linear_oracle(q, scale, zero_point=0, axis=1):
    np = _np()
    out = _per_channel(lambda v, s, z: onnx_dequantize(v, s, int(z)), q, axis, np.asarray(scale),
                       np.asarray(zero_point))
    return _float32(out).reshape(np.shape(q))


def tflite_quantize_oracle(x, scale, zero_point=0, dtype="int8", axis=None):
    np = _np()
    dt, lo, hi = _codes_of(dtype)
    out = _per_channel(lambda v, s, z: tflite_quantize(v, s, int(z), lo, hi), x, axis, np.asarray(scale),
                       np.asarray(zero_point))
    return np.array(out, dt).reshape(np.shape(x))


def tflite_dequantize_oracle(q, scale, zero_point=0):
    np = _np()
    return _float32(tflite_dequantize(v, float(scale), int(zero_point))
                    for v in np.asarray(q).reshape(-1).tolist()).reshape(np.shape(q))


def quantize_pof2_oracle(x, frac_bits, bits=8, rounding="half_to_even", narrow_range=True, axis=None):
    np = _np()
    dt = np.dtype(np.int8 if bits <= 8 else np.int16 if bits <= 16 else np.int32)
    out = _per_channel(lambda v, f: quantize_pof2(v, int(f), bits, rounding, narrow_range), x, axis,
                       np.asarray(frac_bits))
    return np.array(out, dt).reshape(np.shape(x))


def dequantize_pof2_oracle(q, frac_bits, axis=None):
    np = _np()
    return _float32(_per_channel(lambda v, f: dequantize_pof2(v, int(f)), q, axis,
                                 np.asarray(frac_bits))).reshape(np.shape(q))


# =============================================================================================
# arithmetic operators of issue 11: SUB, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, SUM, BATCH_MATMUL,
# TRANSPOSE_CONV (dspsim.kernels.binary, .reduce, .batch_matmul, .transpose_conv)
# =============================================================================================
def tflite_rescaled_difference(x1: int, x2: int, zp1: int, zp2: int, zo: int, params, square: bool, lo: int,
                               hi: int) -> int:
    """SUB (``square`` False) / SQUARED_DIFFERENCE: both inputs onto 2^left_shift * a common scale,
    the difference (squared) in int32, requantized, clamped."""
    ls, (m1, e1), (m2, e2), (mo, eo) = params
    a = multiply_by_quantized_multiplier(wrap((x1 - zp1) * 2**ls, 32), m1, e1)
    b = multiply_by_quantized_multiplier(wrap((x2 - zp2) * 2**ls, 32), m2, e2)
    d = wrap(a - b, 32)
    if square:
        d = wrap(d * d, 32)
    return clamp(multiply_by_quantized_multiplier(d, mo, eo) + zo, lo, hi)


def _rescaled_oracle(square, x1, x2, params, zps, act_min, act_max):
    p = (params.left_shift, (params.input1_multiplier, params.input1_shift),
         (params.input2_multiplier, params.input2_shift), (params.output_multiplier, params.output_shift))
    lo, hi = _range(x1.dtype, act_min, act_max)
    return _map(lambda a, b: tflite_rescaled_difference(a, b, *zps, p, square, lo, hi), x1.dtype, x1, x2)


def sub_oracle(x1, x2, params, *, input1_zero_point, input2_zero_point, output_zero_point, act_min=None,
               act_max=None):
    return _rescaled_oracle(False, x1, x2, params, (input1_zero_point, input2_zero_point, output_zero_point),
                            act_min, act_max)


def squared_difference_oracle(x1, x2, params, *, input1_zero_point, input2_zero_point, output_zero_point):
    return _rescaled_oracle(True, x1, x2, params, (input1_zero_point, input2_zero_point, output_zero_point),
                            None, None)


def maximum_oracle(x1, x2):
    return _map(max, x1.dtype, x1, x2)


def minimum_oracle(x1, x2):
    return _map(min, x1.dtype, x1, x2)


# ============================================================================================
# data movement, resize, selection and cast oracles (TFLite STRIDED_SLICE ... CAST): index by index
# ============================================================================================
def _multi_indices(shape):
    """Every multi-index of ``shape`` in C order (plain tuples)."""
    import itertools

    return itertools.product(*[range(int(n)) for n in shape])


def _from_lists(values, shape, dtype):
    np = _np()
    return np.array(values, dtype=dtype).reshape(tuple(int(n) for n in shape))


def _axis_positions(start, stop, stride):
    """The positions TFLite's strided loop visits: ``start, start + stride, ...`` while
    ``index < stop`` (stride > 0) or ``index > stop`` (stride < 0)."""
    out, i = [], start
    while (i < stop) if stride > 0 else (i > stop):
        out.append(i)
        i += stride
    return out


def strided_slice_oracle(x, begin, end, strides, *, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                         shrink_axis_mask=0, offset=False):
    """TensorFlow's sparse-to-dense slice spec, then ``strided_slice_logic.h``'s StartForAxis /
    StopForAxis (the INT_MIN / INT_MAX form of the masks) on each dense axis."""
    np = _np()
    shape = [int(n) for n in np.shape(x)]
    b = [int(v) for v in np.asarray(begin).reshape(-1)]
    e = [int(v) for v in np.asarray(end).reshape(-1)]
    s = [int(v) for v in np.asarray(strides).reshape(-1)]
    # dense spec: one entry per axis of the input with new axes inserted
    dense = []  # (kind, spec index): kind "new", "all" or "spec"
    n_real = sum(1 for k in range(len(b)) if not (ellipsis_mask >> k & 1) and not (new_axis_mask >> k & 1))
    for k in range(len(b)):
        if ellipsis_mask >> k & 1:
            dense += [("all", k)] * (len(shape) - n_real)
        elif new_axis_mask >> k & 1:
            dense.append(("new", k))
        else:
            dense.append(("spec", k))
    n_dense_real = sum(1 for kind, _ in dense if kind != "new")
    dense += [("all", None)] * (len(shape) - n_dense_real)
    int_min, int_max = -(1 << 31), (1 << 31) - 1
    positions, eff_shape, out_shape, dim = [], [], [], 0
    for kind, k in dense:
        if kind == "new":
            positions.append([0])
            eff_shape.append(1)
            out_shape.append(1)
            continue
        n = shape[dim]
        dim += 1
        eff_shape.append(n)
        if kind == "all":
            positions.append(list(range(n)))
            out_shape.append(n)
            continue
        st = s[k]
        start = (int_min if st > 0 else int_max) if begin_mask >> k & 1 else b[k]
        if start < 0:
            start += n
        start = min(max(start, 0), n) if st > 0 else min(max(start, -1), n - 1)
        if shrink_axis_mask >> k & 1:
            stop = start if start >= n else start + 1
        else:
            stop = e[k] + (start if offset else 0)
            if end_mask >> k & 1:
                stop = int_max if st > 0 else int_min
            if stop < 0:
                stop += n
            stop = min(max(stop, 0), n) if st > 0 else min(max(stop, -1), n - 1)
        positions.append(_axis_positions(start, stop, st))
        if not shrink_axis_mask >> k & 1:
            out_shape.append(len(positions[-1]))
    xe = np.asarray(x).reshape(eff_shape)
    import itertools

    values = [xe[idx].item() for idx in itertools.product(*positions)]
    return _from_lists(values, out_shape, np.asarray(x).dtype)


def slice_tensor_oracle(x, begin, size):
    np = _np()
    b = [int(v) for v in np.asarray(begin).reshape(-1)]
    sz = [int(v) for v in np.asarray(size).reshape(-1)]
    out_shape = [n - lo if k == -1 else k for n, lo, k in zip(np.shape(x), b, sz)]
    values = [x[tuple(lo + i for lo, i in zip(b, idx))].item() for idx in _multi_indices(out_shape)]
    return _from_lists(values, out_shape, np.asarray(x).dtype)


def _parts_along(x, axis, sizes):
    np = _np()
    ax = int(axis) % np.ndim(x)
    out, at = [], 0
    for k in sizes:
        shape = list(np.shape(x))
        shape[ax] = k
        values = []
        for idx in _multi_indices(shape):
            src = list(idx)
            src[ax] += at
            values.append(x[tuple(src)].item())
        out.append(_from_lists(values, shape, np.asarray(x).dtype))
        at += k
    return tuple(out)


def split_oracle(x, axis, num_splits):
    n = x.shape[int(axis) % x.ndim]
    return _parts_along(x, axis, [n // int(num_splits)] * int(num_splits))


def split_v_oracle(x, size_splits, axis):
    sizes = [int(v) for v in size_splits]
    n = x.shape[int(axis) % x.ndim]
    sizes = [n - sum(v for v in sizes if v != -1) if v == -1 else v for v in sizes]
    return _parts_along(x, axis, sizes)


def transpose_oracle(x, perm):
    p = [int(v) for v in perm]
    out_shape = [x.shape[a] for a in p]
    values = []
    for idx in _multi_indices(out_shape):
        src = [0] * x.ndim
        for i, a in enumerate(p):
            src[a] = idx[i]
        values.append(x[tuple(src)].item())
    return _from_lists(values, out_shape, x.dtype)


def gather_oracle(x, indices, axis=0, batch_dims=0):
    np = _np()
    idx = np.asarray(indices)
    ax = int(axis) % x.ndim
    bd = int(batch_dims) % idx.ndim if batch_dims < 0 else int(batch_dims)
    out_shape = list(x.shape[:ax]) + list(idx.shape[bd:]) + list(x.shape[ax + 1:])
    values = []
    for o in _multi_indices(out_shape):
        lead = o[:ax]               # batch dims, then x's dims between batch_dims and axis
        coords = o[ax:ax + idx.ndim - bd]
        tail = o[ax + idx.ndim - bd:]
        pos = int(idx[tuple(lead[:bd]) + tuple(coords)])
        values.append(x[tuple(lead) + (pos,) + tuple(tail)].item())
    return _from_lists(values, out_shape, x.dtype)


def pack_oracle(xs, axis=0):
    np = _np()
    shape = list(np.shape(xs[0]))
    ax = int(axis) % (len(shape) + 1)
    out_shape = shape[:ax] + [len(xs)] + shape[ax:]
    values = [xs[idx[ax]][tuple(idx[:ax] + idx[ax + 1:])].item() for idx in _multi_indices(out_shape)]
    return _from_lists(values, out_shape, np.asarray(xs[0]).dtype)


def unpack_oracle(x, axis=0, num=None):
    ax = int(axis) % x.ndim
    shape = list(x.shape[:ax]) + list(x.shape[ax + 1:])
    return tuple(_from_lists([x[tuple(idx[:ax]) + (k,) + tuple(idx[ax:])].item() for idx in _multi_indices(shape)],
                             shape, x.dtype) for k in range(x.shape[ax]))


def _mirror(i, n, reflect):
    """Index ``i`` (may lie outside ``[0, n)``) folded back by mirroring at the borders."""
    while not 0 <= i < n:
        if i < 0:
            i = -i if reflect else -i - 1
        else:
            i = 2 * (n - 1) - i if reflect else 2 * n - 1 - i
    return i


def mirror_pad_oracle(x, paddings, mode="REFLECT"):
    np = _np()
    pads = [(int(a), int(b)) for a, b in np.asarray(paddings).tolist()]
    reflect = (mode.upper() if isinstance(mode, str) else ("REFLECT", "SYMMETRIC")[int(mode)]) == "REFLECT"
    out_shape = [n + a + b for n, (a, b) in zip(x.shape, pads)]
    values = [x[tuple(_mirror(i - a, n, reflect) for i, n, (a, _) in zip(idx, x.shape, pads))].item()
              for idx in _multi_indices(out_shape)]
    return _from_lists(values, out_shape, x.dtype)


def space_to_depth_oracle(x, block_size):
    bs = int(block_size)
    n, h, w, c = x.shape
    out_shape = [n, h // bs, w // bs, c * bs * bs]
    values = []
    for b, oy, ox, od in _multi_indices(out_shape):
        dy, rem = divmod(od, bs * c)
        dx, ch = divmod(rem, c)
        values.append(x[b, oy * bs + dy, ox * bs + dx, ch].item())
    return _from_lists(values, out_shape, x.dtype)


def depth_to_space_oracle(x, block_size):
    bs = int(block_size)
    n, h, w, d = x.shape
    c = d // (bs * bs)
    out_shape = [n, h * bs, w * bs, c]
    values = []
    for b, oy, ox, ch in _multi_indices(out_shape):
        values.append(x[b, oy // bs, ox // bs, ((oy % bs) * bs + ox % bs) * c + ch].item())
    return _from_lists(values, out_shape, x.dtype)


def tflite_sum(values, zi: int, zo: int, multiplier: int, shift: int, qmin: int, qmax: int) -> int:
    """reference_ops::QuantizedMeanOrSum (sum) of the codes ``values`` of one output element."""
    acc = wrap(sum(values) - zi * len(values), 32)
    return clamp(multiply_by_quantized_multiplier(acc, multiplier, shift) + zo, qmin, qmax)


def reduce_sum_oracle(x, axis, *, input_zero_point, output_zero_point, multiplier, shift, keep_dims=False,
                      codes_as_uint8=False):
    np = _np()
    lo, hi = (0, 255) if codes_as_uint8 else _range(x.dtype, None, None)

    def f(v):  # LiteRT BUILTIN_REF's defect: the bytes summed, clamped to [0, 255], the byte stored as int8
        codes = [c % 256 for c in v] if codes_as_uint8 else v
        out = tflite_sum(codes, input_zero_point, output_zero_point, multiplier, shift, lo, hi)
        return wrap(out, 8) if codes_as_uint8 else out

    return _reduce(np.asarray(x), axis, keep_dims, f, x.dtype)


def xnnpack_sum(values, zi, zo, s_in, s_out) -> int:
    """sum_nd on qs8: int32 sum, then nearbyint(f32(f32(float(sum) * inv) + zp')), inv = f32(s_in / s_out)."""
    inv = _f32(_f32(s_in) / _f32(s_out))
    zp = f32(Fraction(zo) - f32(f32(Fraction(len(values) * zi)) * inv))
    acc = wrap(sum(values), 32)
    return clamp(round_fraction(f32(f32(f32(Fraction(acc)) * inv) + zp), "half_to_even"), -128, 127)


def xnnpack_sum_oracle(x, axis, *, input_scale, input_zero_point, output_scale, output_zero_point, keep_dims=False):
    return _reduce(x, axis, keep_dims,
                   lambda v: xnnpack_sum(v, input_zero_point, output_zero_point, input_scale, output_scale), x.dtype)


def batch_matmul_oracle(x, y, *, adj_x=False, adj_y=False, x_zero_point, y_zero_point, output_zero_point, multiplier,
                        shift):
    """reference_ops::BatchMatMul (int8): per output element an int32 dot product, MBQM, + zo, clamp."""
    np = _np()
    a = np.swapaxes(x, -1, -2) if adj_x else x
    b = np.swapaxes(y, -1, -2) if adj_y else y
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = np.broadcast_to(a, batch + (m, k)).reshape(-1, m, k).tolist()
    b3 = np.broadcast_to(b, batch + (k, n)).reshape(-1, k, n).tolist()
    out = [[[clamp(multiply_by_quantized_multiplier(
        wrap(sum((A[i][d] - x_zero_point) * (B[d][j] - y_zero_point) for d in range(k)), 32), multiplier, shift)
        + output_zero_point, -128, 127) for j in range(n)] for i in range(m)] for A, B in zip(a3, b3)]
    return np.array(out, np.int8).reshape(batch + (m, n))


# =============================================================================================
# nonlinear int8 operators (dspsim.kernels.nonlinear, dspsim.kernels.softmax): gemmlowp
# FixedPoint<int32, m> in plain Python ints, written from fixedpoint.h as real-number steps
# =============================================================================================
def _trunc_div(a: int, b: int) -> int:
    """C integer division: truncates toward zero."""
    return math.trunc(Fraction(a, b))


def _gl_mul(a: int, b: int) -> int:
    """FixedPoint product: SRDHM of the raw values (ties toward +inf, INT32_MIN^2 saturates)."""
    return saturating_rounding_doubling_high_mul(a, b)


def _gl_srmbpot(x: int, e: int) -> int:
    """SaturatingRoundingMultiplyByPOT<e>: x * 2^e saturated to int32, or rounded (ties away) for e < 0."""
    return saturate(x * 2**e, 32) if e >= 0 else rounding_divide_by_pot(x, -e)


def _gl_exp_quarter(a: int) -> int:
    x = wrap(a + 2**28, 32)
    x2 = _gl_mul(x, x)
    x3 = _gl_mul(x2, x)
    x4 = _gl_mul(x2, x2)
    poly = _gl_srmbpot(wrap(_gl_mul(wrap(_gl_srmbpot(x4, -2) + x3, 32), 715827883) + x2, 32), -1)
    return wrap(1895147668 + _gl_mul(1895147668, wrap(x + poly, 32)), 32)


def gemmlowp_exp_on_negative_values(a: int, integer_bits: int) -> int:
    frac = 31 - integer_bits
    quarter = 2 ** (frac - 2)
    a_mod = wrap((a % quarter) - quarter, 32)  # a & (quarter - 1): Python's % is the bitwise remainder here
    result = _gl_exp_quarter(_gl_srmbpot(a_mod, integer_bits))
    remainder = wrap(a_mod - a, 32)
    for k, mult in zip(range(-2, 5), (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        if integer_bits > k and (remainder >> (frac + k)) & 1:
            result = _gl_mul(result, mult)
    if integer_bits > 5 and a < -(2 ** (36 - integer_bits)):
        result = 0
    return INT32_MAX if a == 0 else result


def _gl_reciprocal_q2(a: int) -> int:
    s = a + INT32_MAX
    d = _trunc_div(s + (1 if s >= 0 else -1), 2)  # RoundingHalfSum(a, One)
    x = wrap(1515870810 + _gl_mul(d, -1010580540), 32)
    for _ in range(3):
        x = wrap(x + _gl_srmbpot(_gl_mul(x, wrap(2**29 - _gl_mul(d, x), 32)), 2), 32)
    return x


def gemmlowp_one_over_one_plus_x(a: int) -> int:
    return _gl_srmbpot(_gl_reciprocal_q2(a), 1)


def gemmlowp_logistic(a: int, integer_bits: int) -> int:
    if a == 0:
        return 2**30
    r = gemmlowp_one_over_one_plus_x(gemmlowp_exp_on_negative_values(-abs(a), integer_bits))
    return r if a > 0 else wrap(INT32_MAX - r, 32)


def gemmlowp_tanh(a: int, integer_bits: int) -> int:
    if a == 0:
        return 0
    e = gemmlowp_exp_on_negative_values(-abs(a), integer_bits + 1)
    t = _gl_srmbpot(wrap(_gl_reciprocal_q2(e) - 2**29, 32), 2)
    return -t if a < 0 else t


def lookup_table_oracle(x, table):
    import numpy as np

    return np.array([int(table[int(q) + 128]) for q in np.asarray(x).reshape(-1)], np.int8).reshape(np.shape(x))


def _tflm_sigmoid_oracle(x, zi, multiplier, shift, radius, tanh):
    import numpy as np

    out = []
    for q in np.asarray(x).reshape(-1):
        v = int(q) - zi
        if v <= -radius:
            out.append(-128)
        elif v >= radius:
            out.append(127)
        else:
            a = multiply_by_quantized_multiplier(v, multiplier, shift)
            o = rounding_divide_by_pot(gemmlowp_tanh(a, 4), 24) if tanh else \
                rounding_divide_by_pot(gemmlowp_logistic(a, 4), 23) - 128
            out.append(clamp(o, -128, 127))
    return np.array(out, np.int8).reshape(np.shape(x))


def tflm_logistic_oracle(x, *, input_zero_point, input_multiplier, input_left_shift, input_range_radius):
    return _tflm_sigmoid_oracle(x, input_zero_point, input_multiplier, input_left_shift, input_range_radius, False)


def tflm_tanh_oracle(x, *, input_zero_point, input_multiplier, input_left_shift, input_range_radius):
    return _tflm_sigmoid_oracle(x, input_zero_point, input_multiplier, input_left_shift, input_range_radius, True)


def hard_swish_oracle(x, *, params):
    """reference_ops::HardSwish as real-number steps: every int16 product, shift and rounding."""
    import numpy as np

    p = params
    out = []
    for q in np.asarray(x).reshape(-1):
        h = (int(q) - p.input_zero_point) * 128
        pre = min(round_fraction(Fraction(h * p.output_multiplier_fixedpoint_int16, 2**15), "half_up"), 32767)
        r = h
        if p.reluish_multiplier_exponent > 0:
            r = saturate(r * 2 ** (p.reluish_multiplier_exponent - 1), 16)
        r = min(round_fraction(Fraction(r * p.reluish_multiplier_fixedpoint_int16, 2**15), "half_up"), 32767)
        if p.reluish_multiplier_exponent > 0:
            r = saturate(r * 2, 16)
        if p.reluish_multiplier_exponent < 0:
            r = rounding_divide_by_pot(r, -p.reluish_multiplier_exponent)
        r = (r + 2**15) // 2
        o = rounding_divide_by_pot(_trunc_div(r * pre, 2**15), -p.output_multiplier_exponent) + p.output_zero_point
        out.append(clamp(o, -128, 127))
    return np.array(out, np.int8).reshape(np.shape(x))


def prelu_oracle(x, alpha, *, params):
    import numpy as np

    p = params
    a = np.broadcast_to(np.asarray(alpha), np.shape(x)).reshape(-1)
    out = []
    for q, al in zip(np.asarray(x).reshape(-1), a):
        v = int(q) - p.input_zero_point
        o = multiply_by_quantized_multiplier(v, p.multiplier_1, p.shift_1) if v >= 0 else \
            multiply_by_quantized_multiplier(v * (int(al) - p.alpha_zero_point), p.multiplier_2, p.shift_2)
        out.append(clamp(o + p.output_zero_point, -128, 127))
    return np.array(out, np.int8).reshape(np.shape(x))


def _lut_lookup_int16(v: int, lut) -> int:
    """TFLite LUTLookup (int16): the entry at 256 + floor(v / 128) plus the rounded (ties up) share
    (v mod 128) / 128 of the step to the next entry."""
    i, frac = 256 + v // 128, v % 128
    base = int(lut[i])
    return wrap(base + round_fraction(Fraction((int(lut[i + 1]) - base) * frac, 128), "half_up"), 16)


def _softmax_int16_oracle(x, p):
    """reference_ops::SoftmaxInt16 row by row, in Python ints."""
    import numpy as np

    arr = np.asarray(x)
    rows = arr.reshape(-1, arr.shape[-1])
    out = np.empty(rows.shape, np.int16)
    for r, row in enumerate(rows):
        top = max(int(v) for v in row)
        exps = [_lut_lookup_int16(saturate(multiply_by_quantized_multiplier(int(v) - top, p.input_multiplier,
                                                                            p.input_left_shift) + 32767, 16),
                                  p.exp_lut) for v in row]
        total = wrap(sum(exps), 32)
        headroom_plus_one = 32 - total.bit_length()  # leading zeros of a positive int32
        normalised = round_fraction(Fraction(total * 2 ** (headroom_plus_one - 1), 2**14), "half_up")
        reciprocal = _lut_lookup_int16(saturate(normalised - 3 * 2**15, 16), p.one_over_one_plus_x_lut)
        out[r] = [clamp(round_fraction(Fraction(e * reciprocal, 2 ** (31 - headroom_plus_one)), "half_up"), 0, 32767)
                  for e in exps]
    return out.reshape(arr.shape)


def softmax_oracle(x, *, params, out_dtype=None):
    """reference_ops::Softmax<int8, int8 or int16> row by row (last axis), in Python ints; an int16 x:
    reference_ops::SoftmaxInt16."""
    import numpy as np

    p = params
    if np.asarray(x).dtype == np.int16:
        return _softmax_int16_oracle(x, p)
    bits = 8 if out_dtype in (None, "int8") else 16
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    arr = np.asarray(x)
    rows = arr.reshape(-1, arr.shape[-1])
    out = np.empty(rows.shape, np.dtype(f"int{bits}"))
    for r, row in enumerate(rows):
        diffs = [int(v) - max(int(u) for u in row) for v in row]
        exps = [gemmlowp_exp_on_negative_values(
            saturating_rounding_doubling_high_mul(wrap(d * 2**p.input_left_shift, 32), p.input_multiplier), 5)
            if d >= p.diff_min else None for d in diffs]
        total = sum(_gl_srmbpot(e, -12) for e in exps if e is not None)  # Q0 -> Q12 (no wrap below 2^12 terms)
        headroom = 32 - total.bit_length() if total > 0 else 32
        scale = gemmlowp_one_over_one_plus_x(wrap((total << headroom) - 2**31, 32))
        exponent = 12 - headroom + 31 - bits
        out[r] = [lo if e is None else clamp(rounding_divide_by_pot(_gl_mul(scale, e), exponent) + lo, lo, hi)
                  for e in exps]
    return out.reshape(arr.shape)


def _nearest_index_oracle(i, n, m, align_corners, half_pixel_centers):
    """Reference GetNearestNeighbor with every float32 step through ``f32``."""
    scale = f32(Fraction(n - 1) / f32(m - 1)) if align_corners and m > 1 else f32(Fraction(n) / m)
    v = f32((i + (Fraction(1, 2) if half_pixel_centers else 0)) * scale)
    src = math.floor(v + Fraction(1, 2)) if align_corners else math.floor(v)  # v >= 0: away from zero
    src = min(src, n - 1)
    return max(src, 0) if half_pixel_centers else src


def _gather_pixels(x, ys, xs):
    np = _np()
    n, _, _, c = np.shape(x)
    out_shape = [n, len(ys), len(xs), c]
    values = [x[b, ys[oy], xs[ox], ch].item() for b, oy, ox, ch in _multi_indices(out_shape)]
    return _from_lists(values, out_shape, x.dtype)


def resize_nearest_neighbor_oracle(x, size, *, align_corners=False, half_pixel_centers=False):
    oh, ow = (int(v) for v in size)
    ys = [_nearest_index_oracle(i, x.shape[1], oh, align_corners, half_pixel_centers) for i in range(oh)]
    xs = [_nearest_index_oracle(i, x.shape[2], ow, align_corners, half_pixel_centers) for i in range(ow)]
    return _gather_pixels(x, ys, xs)


def optimized_resize_nearest_neighbor_oracle(x, size, *, align_corners=False, half_pixel_centers=False):
    """16.16 fixed point: the scale ``floor(in * 2^16 / out) + 1``, the index ``floor(i * scale / 2^16)``."""
    if align_corners or half_pixel_centers or x.dtype.itemsize != 1:
        return resize_nearest_neighbor_oracle(x, size, align_corners=align_corners,
                                              half_pixel_centers=half_pixel_centers)
    oh, ow = (int(v) for v in size)
    ys = [min(math.floor(i * (math.floor(Fraction(x.shape[1] * 65536, oh)) + 1) / Fraction(65536)), x.shape[1] - 1)
          for i in range(oh)]
    xs = [min(math.floor(i * (math.floor(Fraction(x.shape[2] * 65536, ow)) + 1) / Fraction(65536)), x.shape[2] - 1)
          for i in range(ow)]
    return _gather_pixels(x, ys, xs)


def _bilinear_taps_reference(i, n, m, align_corners, half_pixel_centers):
    """(lower, upper, weight of upper in 1/1024) of ComputeInterpolationValuesInteger."""
    num, den = (n - 1, m - 1) if align_corners and m > 1 else (n, m)
    scale = _trunc_div(1024 * num + _trunc_div(den, 2), den)
    pos = i * scale + (scale // 2 - 512 if half_pixel_centers else 0)
    lo = max(_trunc_div(pos, 1024), 0)
    hi = min(_trunc_div(pos + 1023, 1024), n - 1)
    return lo, hi, pos - 1024 * lo


def resize_bilinear_oracle(x, size, *, align_corners=False, half_pixel_centers=False, rounding="double"):
    oh, ow = (int(v) for v in size)
    n, h, w, c = x.shape
    ty = [_bilinear_taps_reference(i, h, oh, align_corners, half_pixel_centers) for i in range(oh)]
    tx = [_bilinear_taps_reference(i, w, ow, align_corners, half_pixel_centers) for i in range(ow)]
    values = []
    for b, oy, ox, ch in _multi_indices([n, oh, ow, c]):
        y0, y1, fy = ty[oy]
        x0, x1, fx = tx[ox]
        v = (int(x[b, y0, x0, ch]) * (1024 - fy) * (1024 - fx) + int(x[b, y1, x0, ch]) * fy * (1024 - fx)
             + int(x[b, y0, x1, ch]) * (1024 - fy) * fx + int(x[b, y1, x1, ch]) * fy * fx)
        values.append(round_fraction(Fraction(v, 1 << 20), "half_up" if rounding == "single" else "half_away_from_zero"))
    return _from_lists(values, [n, oh, ow, c], x.dtype)


def _bilinear_taps_xnnpack(i, n, m, align_corners, half_pixel_centers):
    """(top, bottom, 11-bit weight) of xnn_indirection_init_resize_bilinear2d_hwc_q11, float32 via f32."""
    adj = 1 if align_corners and m != 1 else 0
    scale = f32(Fraction(n - adj) / (m - adj))
    if align_corners or not half_pixel_centers:
        p = min(f32(i * scale), Fraction(n - 1))
    else:
        offset = f32(scale / 2 - Fraction(1, 2))
        p = min(max(f32(f32(i * scale) + offset), Fraction(0)), Fraction(n - 1))
    top = math.floor(p)
    return top, min(top + 1, n - 1), round_fraction((p - top) * 2048, "half_to_even")


def xnnpack_resize_bilinear_oracle(x, size, *, align_corners=False, half_pixel_centers=False):
    oh, ow = (int(v) for v in size)
    n, h, w, c = x.shape
    ty = [_bilinear_taps_xnnpack(i, h, oh, align_corners, half_pixel_centers) for i in range(oh)]
    tx = [_bilinear_taps_xnnpack(i, w, ow, align_corners, half_pixel_centers) for i in range(ow)]
    values = []
    for b, oy, ox, ch in _multi_indices([n, oh, ow, c]):
        y0, y1, av = ty[oy]
        x0, x1, ah = tx[ox]
        tl, tr, bl, br = (int(x[b, yy, xx, ch]) for yy, xx in ((y0, x0), (y0, x1), (y1, x0), (y1, x1)))
        top = tl * 2048 + (tr - tl) * ah
        bottom = bl * 2048 + (br - bl) * ah
        values.append(math.floor(Fraction(top * 2048 + (bottom - top) * av + (1 << 21), 1 << 22)))
    return _from_lists(values, [n, oh, ow, c], x.dtype)


def transpose_conv_oracle(x, w, bias=None, *, output_size, stride=1, padding="SAME", input_zero_point,
                          output_zero_point, requant, act_min=None, act_max=None):
    """reference_integer_ops::TransposeConv: scatter into int32 scratch (int16 input: int64), + bias,
    requantize per channel (int16: the int64 MultiplyByQuantizedMultiplier, no zero points)."""
    np = _np()
    bits = 64 if x.dtype == np.int16 else 32
    n, in_h, in_w, c_in = x.shape
    c_out, k_h, k_w, _ = w.shape
    out_h, out_w = (output_size, output_size) if isinstance(output_size, int) else output_size
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    pads = []
    for out, k, s in ((out_h, k_h, sh), (out_w, k_w, sw)):  # ComputePaddingHeightWidth on the output size
        o = -(-out // s) if padding.upper() == "SAME" else (out - k + s) // s
        pads.append(max((o - 1) * s + k - out, 0) // 2)
    xs, ws = np.asarray(x).tolist(), np.asarray(w).tolist()
    acc = [[[[0] * c_out for _ in range(out_w)] for _ in range(out_h)] for _ in range(n)]
    for b in range(n):
        for iy in range(in_h):
            for ix in range(in_w):
                for ic in range(c_in):
                    for fy in range(k_h):
                        for fx in range(k_w):
                            oy, ox = iy * sh - pads[0] + fy, ix * sw - pads[1] + fx
                            if 0 <= oy < out_h and 0 <= ox < out_w:
                                v = xs[b][iy][ix][ic] - input_zero_point
                                for oc in range(c_out):
                                    acc[b][oy][ox][oc] = wrap(acc[b][oy][ox][oc] + v * ws[oc][fy][fx][ic], bits)
    rq = _kernel_rq(c_out, None, None, "double", requant, None, None, None, "conv")
    lo, hi = _range(x.dtype, act_min, act_max)
    bs = [0] * c_out if bias is None else np.asarray(bias).tolist()

    def requantized(a, oc):
        if bits == 64:
            at = oc if len(rq["multiplier"]) > 1 else 0
            return multiply_by_quantized_multiplier_int64(a, rq["multiplier"][at], rq["shift"][at])
        return requantize_value(a, rq, oc, output_zero_point)

    out = [[[[clamp(requantized(wrap(acc[b][oy][ox][oc] + bs[oc], bits), oc), lo, hi)
              for oc in range(c_out)] for ox in range(out_w)] for oy in range(out_h)] for b in range(n)]
    return np.array(out, x.dtype)


def reduce_max_oracle(x, axis, *, keep_dims=False):
    np = _np()
    axes = sorted({int(a) % x.ndim for a in np.asarray(axis).reshape(-1).tolist()})
    if not axes:
        return x.copy()
    out_shape = [1 if d in axes else n for d, n in enumerate(x.shape)]
    best = {}
    for idx in _multi_indices(x.shape):
        key = tuple(0 if d in axes else i for d, i in enumerate(idx))
        v = x[idx].item()
        best[key] = v if key not in best else max(best[key], v)
    out = _from_lists([best[k] for k in _multi_indices(out_shape)], out_shape, x.dtype)
    return out if keep_dims else out.reshape([n for d, n in enumerate(x.shape) if d not in axes])


def arg_max_oracle(x, axis, *, output_type="int32"):
    ax = int(axis) % x.ndim
    out_shape = list(x.shape[:ax]) + list(x.shape[ax + 1:])
    values = []
    for idx in _multi_indices(out_shape):
        column = [x[tuple(idx[:ax]) + (j,) + tuple(idx[ax:])].item() for j in range(x.shape[ax])]
        values.append(column.index(max(column)))  # list.index: the first occurrence
    return _from_lists(values, out_shape, output_type)


def cast_oracle(x, dtype, *, nan="max"):
    np = _np()
    dt = np.dtype(dtype)
    src = np.asarray(x)
    values = []
    for v in src.reshape(-1).tolist():
        if dt.kind == "f":
            values.append(v if src.dtype.kind == "f" else float(f32(v)))  # float32 -> float32 copies
        elif src.dtype.kind != "f":
            bits = 8 * dt.itemsize
            values.append(wrap(int(v), bits) if dt.kind == "i" else int(v) % (1 << bits))
        else:
            info = np.iinfo(dt)
            if math.isnan(v):
                values.append(int(info.max) if str(getattr(nan, "value", nan)) == "max" else 0)
            elif math.isinf(v):
                values.append(int(info.max) if v > 0 else int(info.min))
            else:
                values.append(min(max(math.trunc(v), int(info.min)), int(info.max)))
    return _from_lists(values, src.shape, dt)


def gemmlowp_log_x_for_x_greater_than_or_equal_to_1(x: int, input_integer_bits: int, output_integer_bits: int) -> int:
    """TFLite log_x_for_x_greater_than_or_equal_to_1_impl, step by step in Python ints."""
    accum = output_integer_bits + 1
    quarter = _gl_srmbpot(536870912, -accum)
    hp1 = 32 - x.bit_length()  # CountLeadingZeros of a positive int32
    r_a = _gl_srmbpot(_gl_mul(_gl_srmbpot(x, hp1 - 1), 1518500250), 1)
    za_adj = saturate(_gl_srmbpot(input_integer_bits - hp1, 31 - accum) + quarter, 32)
    z_b = _gl_mul(x, 1518500250)
    hb = 32 - z_b.bit_length() - 1
    r_b = _gl_srmbpot(x, hb)
    zb_adj = saturate(_gl_srmbpot(input_integer_bits - hb, 31 - accum) - quarter, 32)
    r, z_adj = min(r_a, r_b), max(za_adj, zb_adj)
    s = r + 1805811301
    p = _trunc_div(s + (1 if s >= 0 else -1), 2)
    q = wrap(2 * wrap(r - 1805811301, 32), 32)
    sq = _gl_mul(q, q)
    num = wrap(_gl_mul(q, r) + _gl_mul(_gl_mul(q, sq), 117049297), 32)
    den = wrap(_gl_mul(p, wrap(wrap(1057819769 + q, 32) + _gl_mul(127690142, sq), 32)) + _gl_mul(638450708, q), 32)
    recip = gemmlowp_one_over_one_plus_x(den)
    total = wrap(_gl_mul(z_adj, 1488522236) + _gl_mul(_gl_srmbpot(num, -accum), recip), 32)
    return _gl_srmbpot(total, accum - output_integer_bits)


def log_softmax_oracle(x, *, params):
    """reference_integer_ops::LogSoftmax (int8) row by row, in Python ints."""
    import numpy as np

    p = params
    arr = np.asarray(x)
    rows = arr.reshape(-1, arr.shape[-1])
    out = np.empty(rows.shape, np.int8)
    for i, row in enumerate(rows):
        diffs = [int(v) - max(int(u) for u in row) for v in row]
        q5 = [multiply_by_quantized_multiplier(d, p.input_multiplier, p.input_left_shift) for d in diffs]
        total = sum(_gl_srmbpot(gemmlowp_exp_on_negative_values(a, 5), -12)
                    for d, a in zip(diffs, q5) if d >= p.diff_min)
        log_sum = gemmlowp_log_x_for_x_greater_than_or_equal_to_1(total, 12, 5)
        adjusted = max(p.diff_min - 1, multiply_by_quantized_multiplier(log_sum - 2**31, p.reverse_scaling_divisor,
                                                                        -p.reverse_scaling_right_shift))
        out[i] = [clamp(rounding_divide_by_pot(a - log_sum, 22) + 127, -128, 127) if d > adjusted else -128
                  for d, a in zip(diffs, q5)]
    return out.reshape(arr.shape)


def inv_sqrt_quantized_multiplier_exp(x: int, reverse_shift: int) -> tuple[int, int]:
    """GetInvSqrtQuantizedMultiplierExp in Python ints (Newton-Raphson in Q3.28 as TFLite does it)."""
    if x <= 1:
        return INT32_MAX, 0
    shift = 11
    while x >= 2**29:
        x //= 4
        shift += 1
    pairs = (32 - x.bit_length() - 1) // 2 - 1
    shift -= pairs
    x <<= 2 * pairs
    half_input = rounding_divide_by_pot(x >> 1, 1)
    r = 2**28
    for _ in range(5):
        r3 = _gl_srmbpot(_gl_mul(_gl_mul(r, r), r), 6)
        r = _gl_srmbpot(wrap(_gl_mul(3 * 2**27, r) - _gl_mul(half_input, r3), 32), 3)
    r = _gl_mul(r, 1518500250)
    if shift < 0:
        r, shift = wrap(r * 2**-shift, 32), 0
    return r, shift * reverse_shift


def l2_normalization_oracle(x, *, input_zero_point):
    import numpy as np

    arr = np.asarray(x)
    rows = arr.reshape(-1, arr.shape[-1]).astype(object) - input_zero_point
    out = np.empty(rows.shape, np.int8)
    for i, row in enumerate(rows):
        m, s = inv_sqrt_quantized_multiplier_exp(sum(int(v) * int(v) for v in row), -1)
        out[i] = [clamp(multiply_by_quantized_multiplier(int(v), m, s + 7), -128, 127) for v in row]
    return out.reshape(arr.shape)


def rsqrt_oracle(x, *, input_zero_point, output_zero_point, multiplier, shift):
    import numpy as np

    out = []
    for q in np.asarray(x).reshape(-1):
        v = int(q) - input_zero_point
        if v == 0:
            out.append(127)
            continue
        m, s = inv_sqrt_quantized_multiplier_exp(v, -1)
        d = multiply_by_quantized_multiplier(1, m, s + 20)
        out.append(clamp(multiply_by_quantized_multiplier(d, multiplier, shift - 20) + output_zero_point, -128, 127))
    return np.array(out, np.int8).reshape(np.shape(x))


def tflite_requantize_oracle(x, *, input_zero_point, output_zero_point, multiplier, shift, out_dtype="int8",
                             rounding="double"):
    np = _np()
    dt = np.dtype(out_dtype)
    info = np.iinfo(dt)
    values = []
    for v in np.asarray(x).reshape(-1).tolist():
        d = wrap(v - int(input_zero_point), 32)  # TFLite subtracts in int32
        if rounding == "neon":
            left, right = max(int(shift), 0), max(-int(shift), 0)
            high = math.floor(Fraction(wrap(d * 2**left, 32) * int(multiplier) + 2**30, 2**31))  # VQRDMULH
            y = round_fraction(Fraction(high, 2**right), "half_up")                           # VRSHL
        else:
            y = multiply_by_quantized_multiplier(d, int(multiplier), int(shift), rounding)
        values.append(min(max(y + int(output_zero_point), int(info.min)), int(info.max)))
    return _from_lists(values, np.shape(x), dt)


# --- SVDF (dspsim.kernels.recurrent) ------------------------------------------------------------
def svdf_oracle(x, weights_feature, weights_time, bias, state, *, rank, input_zero_point, state_zero_point,
                output_zero_point, feature_multiplier, feature_shift, output_multiplier, output_shift):
    """One SVDF frame as TFLM's EvalIntegerSvdfReference reads: shift, feature MBQM, time sums, MBQM."""
    np = _np()
    xs, wf, wt = x.tolist(), weights_feature.tolist(), weights_time.tolist()
    n_filter, n_memory = len(wt), len(wt[0])
    t_bits = np.dtype(state.dtype).itemsize * 8
    lo, hi = -(1 << (t_bits - 1)), (1 << (t_bits - 1)) - 1
    old = [int(v) for v in np.asarray(state).reshape(-1).tolist()]
    new = old[1:] + old[-1:]  # every slot takes its right neighbour's value
    n_unit = n_filter // rank
    bias = [0] * n_unit if bias is None else [int(v) for v in bias]
    out = []
    for b, row in enumerate(xs):
        for f in range(n_filter):
            dot = wrap(sum(wf[f][c] * (row[c] - input_zero_point) for c in range(len(row))), 32)
            a = clamp(multiply_by_quantized_multiplier(dot, feature_multiplier, feature_shift), lo, hi)
            new[(b * n_filter + f) * n_memory + n_memory - 1] = wrap(state_zero_point + a, t_bits)
        line = []
        for u in range(n_unit):
            acc = bias[u]
            for r in range(rank):
                f = u * rank + r
                base = (b * n_filter + f) * n_memory
                acc += wrap(sum(wt[f][m] * (new[base + m] - state_zero_point) for m in range(n_memory)), 32)
            v = multiply_by_quantized_multiplier(wrap(acc, 32), output_multiplier, output_shift)
            line.append(clamp(v + output_zero_point, -128, 127))
        out.append(line)
    return np.array(out, np.int8), np.array(new, state.dtype).reshape(np.shape(state))


def optimized_softmax_oracle(x, *, table, output_scale, output_zero_point, out_dtype="int8"):
    """LiteRT optimized_ops::Softmax (int8 input): every float32 step as an exact f32() rounding."""
    import numpy as np

    bits = 8 if out_dtype == "int8" else 16
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    s_out = Fraction(float(np.float32(output_scale)))
    arr = np.asarray(x)
    rows = arr.reshape(-1, arr.shape[-1])
    out = np.empty(rows.shape, np.dtype(out_dtype))
    for r, row in enumerate(rows):
        m = max(int(v) for v in row)
        e = [Fraction(float(table[255 - m + int(v)])) for v in row]
        total = Fraction(0)
        for v in e:
            total = f32(total + v)
        inv = f32(1 / f32(total * s_out))
        out[r] = [clamp(round_fraction(f32(v * inv), "half_away_from_zero") + output_zero_point, lo, hi) for v in e]
    return out.reshape(arr.shape)


# =============================================================================================
# int16 sigmoid and tanh (dspsim.kernels.nonlinear_int16): the reference kernels' table with
# interpolation, and gemmlowp FixedPoint<int16, m>, in plain Python ints
# =============================================================================================
def _lut_rescaled_input(q: int, multiplier: int, left_shift: int) -> int:
    if multiplier == 0:
        multiplier, left_shift = 3 << left_shift, 0
    return math.floor(Fraction(q * multiplier + (2 ** (left_shift - 1) if left_shift else 0), 2**left_shift))


def _lut_interpolate(a: int, low_bits: int, saturated: int) -> int:
    """``table[h] * 2^b + t * (table[h + 1] - table[h])`` for ``a = h * 2^b + t``; ``saturated`` for h >= 255."""
    from .kernels.nonlinear_int16 import SIGMOID_TABLE_UINT16 as table

    h, t = divmod(a, 2**low_bits)
    if h >= 255:
        return saturated
    return int(table[h]) * 2**low_bits + t * (int(table[h + 1]) - int(table[h]))


def int16_logistic_oracle(x, input_multiplier=0, input_left_shift=0):
    """reference_integer_ops::Logistic (int16): sigmoid(|v|) interpolated, 1 - it for negative v, Q0.15."""
    np = _np()
    out = []
    for q in np.asarray(x).reshape(-1).tolist():
        v = _lut_rescaled_input(q, input_multiplier, input_left_shift)
        r = _lut_interpolate(abs(v), 9, 0x7FFF * 2**10)
        out.append(math.floor(Fraction(r + 2**9, 2**10)) if v >= 0 else
                   math.floor(Fraction(2**25 - r + 2**9 - 1, 2**10)))
    return np.array(out, np.int16).reshape(np.shape(x))


def int16_tanh_oracle(x, input_multiplier=0, input_left_shift=0):
    """reference_integer_ops::Tanh (int16): 2 sigmoid(2|v|) - 1 interpolated, odd symmetry, Q0.15 (floor)."""
    np = _np()
    out = []
    for q in np.asarray(x).reshape(-1).tolist():
        v = _lut_rescaled_input(q, input_multiplier, input_left_shift)
        r = _lut_interpolate(abs(v), 8, 0xFFFF * 2**8)
        out.append(math.floor(Fraction(r - 2**23 + 2**7, 2**8)) if v >= 0 else
                   math.floor(Fraction(-r + 2**23 + 2**7 - 1, 2**8)))
    return np.array(out, np.int16).reshape(np.shape(x))


def _gl16_mul(a: int, b: int) -> int:
    """int16 FixedPoint product: a * b / 2^15 rounded half up; -1 * -1 saturates to 32767."""
    return min(round_fraction(Fraction(a * b, 2**15), "half_up"), 32767)


def _gl16_srmbpot(x: int, e: int) -> int:
    return saturate(x * 2**e, 16) if e >= 0 else rounding_divide_by_pot(x, -e)


def _gl16_constant(raw32: int) -> int:
    """RescaleConstantInitializer: gemmlowp's int32 constants, rounded to int16 (ties away from zero)."""
    return rounding_divide_by_pot(raw32, 16)


def _gl16_exp_quarter(a: int) -> int:
    ct, third = _gl16_constant(1895147668), _gl16_constant(715827883)
    x = wrap(a + 2**12, 16)
    x2 = _gl16_mul(x, x)
    x3 = _gl16_mul(x2, x)
    x4 = _gl16_mul(x2, x2)
    poly = _gl16_srmbpot(wrap(_gl16_mul(wrap(_gl16_srmbpot(x4, -2) + x3, 16), third) + x2, 16), -1)
    return saturate(ct + _gl16_mul(ct, wrap(x + poly, 16)), 16)


def _gl16_exp_on_negative_values(a: int, integer_bits: int) -> int:
    frac = 15 - integer_bits
    quarter = 2 ** (frac - 2)
    a_mod = wrap((a % quarter) - quarter, 16)
    result = _gl16_exp_quarter(_gl16_srmbpot(a_mod, integer_bits))
    remainder = wrap(a_mod - a, 16)
    for k, mult in zip(range(-2, 5), (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        if integer_bits > k and (remainder >> (frac + k)) & 1:
            result = _gl16_mul(result, _gl16_constant(mult))
    if integer_bits > 5 and a < _gl16_constant(-(2 ** (36 - integer_bits))):
        result = 0
    return 32767 if a == 0 else result


def _gl16_reciprocal_q2(a: int) -> int:
    s = a + 32767
    d = _trunc_div(s + (1 if s >= 0 else -1), 2)  # RoundingHalfSum(a, One)
    x = wrap(_gl16_constant(1515870810) + _gl16_mul(d, _gl16_constant(-1010580540)), 16)
    for _ in range(3):
        x = wrap(x + _gl16_srmbpot(_gl16_mul(x, wrap(2**13 - _gl16_mul(d, x), 16)), 2), 16)
    return x


def fixedpoint16_logistic_oracle(x, integer_bits=3):
    """gemmlowp logistic on FixedPoint<int16, integer_bits>: 1 / (1 + exp(-|a|)), 1 - it for a < 0."""
    np = _np()
    out = []
    for a in np.asarray(x).reshape(-1).tolist():
        if a == 0:
            out.append(2**14)
            continue
        abs_a = a if a > 0 else wrap(-a, 16)
        r = _gl16_srmbpot(_gl16_reciprocal_q2(_gl16_exp_on_negative_values(wrap(-abs_a, 16), integer_bits)), 1)
        out.append(r if a > 0 else wrap(32767 - r, 16))
    return np.array(out, np.int16).reshape(np.shape(x))


def fixedpoint16_tanh_oracle(x, integer_bits=3):
    """gemmlowp tanh on FixedPoint<int16, integer_bits>: (1 - e) / (1 + e), e = exp(-2|a|), sign of a."""
    np = _np()
    out = []
    for a in np.asarray(x).reshape(-1).tolist():
        if a == 0:
            out.append(0)
            continue
        n = a if a < 0 else wrap(-a, 16)
        t = _gl16_srmbpot(wrap(_gl16_reciprocal_q2(_gl16_exp_on_negative_values(n, integer_bits + 1)) - 2**13, 16), 2)
        out.append(wrap(-t, 16) if a < 0 else t)
    return np.array(out, np.int16).reshape(np.shape(x))


# =============================================================================================
# the integer LSTM (dspsim.kernels.lstm): TFLM's lstm_eval.cc and LiteRT's EvalInteger8x8_16
# =============================================================================================
def _lstm_sigmoid(v: int, litert: bool) -> int:
    np = _np()
    if litert:
        return int(fixedpoint16_logistic_oracle(np.array([v], np.int16), 3)[0])
    return int(int16_logistic_oracle(np.array([v], np.int16), 0, 0)[0])


def _lstm_tanh(v: int, litert: bool, integer_bits: int, multiplier: int = 0, left_shift: int = 0) -> int:
    np = _np()
    if litert:
        return int(fixedpoint16_tanh_oracle(np.array([v], np.int16), integer_bits)[0])
    return int(int16_tanh_oracle(np.array([v], np.int16), multiplier, left_shift)[0])


def lstm_oracle(x, input_weights, recurrent_weights, bias, output_state, cell_state, params):
    """Step by step: four gates from two requantized products, the cell update, the new hidden state."""
    np = _np()
    from .kernels.lstm import LstmArithmetic, tflm_cell_tanh_rescale

    p = params
    litert = p.arithmetic == LstmArithmetic.LITERT
    xs, w_in, w_rec = x.tolist(), input_weights.tolist(), recurrent_weights.tolist()
    n_cell = len(w_in[0])
    bias = [[0] * n_cell for _ in range(4)] if bias is None else bias.tolist()
    h_all, c_all = output_state.tolist(), cell_state.tolist()
    tanh_m, tanh_s = tflm_cell_tanh_rescale(p.cell_scale_power)
    out = []
    for b, seq in enumerate(xs):
        h, c = h_all[b], c_all[b]
        steps = []
        for row in seq:
            gate = []
            for k in range(4):
                vals = []
                for j in range(n_cell):
                    acc = wrap(bias[k][j] + sum(w * (v - p.input_zero_point) for w, v in zip(w_in[k][j], row)), 32)
                    part_in = saturate(multiply_by_quantized_multiplier(acc, p.input_multiplier[k], p.input_shift[k]),
                                       16)
                    acc = wrap(sum(w * (v - p.output_state_zero_point) for w, v in zip(w_rec[k][j], h)), 32)
                    part_rec = multiply_by_quantized_multiplier(acc, p.recurrent_multiplier[k], p.recurrent_shift[k])
                    pre = saturate(part_in + (part_rec if litert else saturate(part_rec, 16)), 16)
                    if k != 2:
                        vals.append(_lstm_sigmoid(pre, litert))
                    else:  # TFLM leaves the cell gate linear when the fused activation is not TANH
                        vals.append(_lstm_tanh(pre, litert, 3) if litert or p.cell_gate_tanh else pre)
                gate.append(vals)
            i_g, f_g, g_g, o_g = gate
            new_c, new_h = [], []
            for j in range(n_cell):
                if litert:
                    kept = wrap(rounding_divide_by_pot(f_g[j] * c[j], 15), 16)
                    added = wrap(rounding_divide_by_pot(i_g[j] * g_g[j], 30 + p.cell_scale_power), 16)
                else:
                    kept = saturate(multiply_by_quantized_multiplier(f_g[j] * c[j], p.forget_cell_multiplier,
                                                                     p.forget_cell_shift), 16)
                    added = saturate(multiply_by_quantized_multiplier(i_g[j] * g_g[j], p.input_cell_multiplier,
                                                                      p.input_cell_shift), 16)
                cell = saturate(kept + added, 16)
                if p.cell_clip is not None:
                    cell = clamp(cell, -p.cell_clip, p.cell_clip)
                new_c.append(cell)
                if litert and not 0 <= 15 + p.cell_scale_power <= 6:
                    t = i_g[j]  # LiteRT's ApplyTanh writes nothing: its output buffer still holds the input gate
                else:
                    t = _lstm_tanh(cell, litert, 15 + p.cell_scale_power, tanh_m, tanh_s)
                new_h.append(clamp(multiply_by_quantized_multiplier(t * o_g[j], p.hidden_multiplier, p.hidden_shift)
                                   + p.hidden_zero_point, -128, 127))
            h, c = new_h, new_c
            steps.append(new_h)
        out.append(steps)
        h_all[b], c_all[b] = h, c
    return np.array(out, np.int8), np.array(h_all, np.int8), np.array(c_all, np.int16)


# =============================================================================================
# 16x8 operators (dspsim.kernels.int16): LiteRT's int16 ADD on power-of-two scales
# =============================================================================================
def pot_add_oracle(x1, x2, params, *, act_min=None, act_max=None, subtract=False):
    """LiteRT ``reference_ops::Add`` int16 with ``pot_scale``: each input divided by ``2^-shift`` (ties
    away from zero), summed (``subtract``: the second subtracted, ``Sub16``), saturated to int16, clamped to
    the activation range."""
    np = _np()
    lo = -32768 if act_min is None else int(act_min)
    hi = 32767 if act_max is None else int(act_max)
    values = []
    x1, x2 = np.broadcast_arrays(np.asarray(x1), np.asarray(x2))
    for a, b in zip(x1.reshape(-1).tolist(), x2.reshape(-1).tolist()):
        d = rounding_divide_by_pot(b, -params.input2_shift)
        v = rounding_divide_by_pot(a, -params.input1_shift) + (-d if subtract else d)
        values.append(min(max(saturate(v, 16), lo), hi))
    return _from_lists(values, np.shape(x1), np.int16)


def litert_optimized_quantize_int16_oracle(x, scale, zero_point=0):
    """LiteRT's optimized float -> int16 AffineQuantize: the first ``8 * (n // 8)`` values (C order)
    ``round_half_even(f32(x * f32(1 / s)))``, the rest ``round_half_away(x / s)`` (exact quotient of the
    float32 values); out-of-int32 values become INT32_MIN; ``+ zp`` wraps; clamped to int16."""
    np = _np()
    flat = np.asarray(x, np.float32).reshape(-1).tolist()
    s = Fraction(float(np.float32(scale)))
    inv = f32(1 / s)
    block = len(flat) // 8 * 8
    values = []
    for i, v in enumerate(flat):
        r = round_fraction(f32(Fraction(v) * inv), "half_to_even") if i < block else \
            round_fraction(Fraction(v) / s, "half_away_from_zero")
        if not -(2**31) <= r < 2**31:
            r = -(2**31)
        values.append(min(max(wrap(r + int(zero_point), 32), -32768), 32767))
    return _from_lists(values, np.shape(x), np.int16)
