"""The oracle of the quantize family: float <-> int quantization of TensorFlow, PyTorch, ONNX, TFLite, power of two; XNNPACK's QUANTIZE kernels; Requantize of codes; CAST.

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

import math
from fractions import Fraction

from .data_movement import _from_lists
from .fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    _clamp,
    _f32,
    _map,
    _np,
    clamp,
    f32,
    multiply_by_quantized_multiplier,
    round_fraction,
    wrap,
)

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


def xnnpack_q8_8(x, zi, zo, s_in, s_out, alpha=None, lo=-128, hi=127) -> int:
    """qs8-vcvt (alpha None) / qs8-vlrelu: multipliers lrintf(256 * ratio), ((zo << 8) + 128 + d*M) >> 8, clamped to
    [lo, hi] (qu8-vcvt: [0, 255])."""
    r = _f32(_f32(s_in) / _f32(s_out))
    d = x - zi
    if alpha is not None and d < 0:
        r = _f32(r * _f32(alpha))
    m = round_fraction(256 * r, "half_to_even")
    return clamp((zo * 256 + 128 + d * m) >> 8, lo, hi)


def xnnpack_quantize(x, scale, zp, lo=-128, hi=127) -> int:
    """f32-qs8-vcvt: rint(f32(x * f32(1 / scale))) + zp, clamped to int8 (f32-qu8-vcvt: [0, 255])."""
    v = f32(_f32(x) * f32(1 / _f32(scale)))
    return clamp(round_fraction(v, "half_to_even") + zp, lo, hi)


def xnnpack_convert_oracle(x, *, input_scale, input_zero_point, output_scale, output_zero_point):
    np = _np()
    info = np.iinfo(np.asarray(x).dtype)
    return _map(lambda q: xnnpack_q8_8(q, input_zero_point, output_zero_point, input_scale, output_scale, None,
                                       int(info.min), int(info.max)), x.dtype, x)


def xnnpack_quantize_oracle(x, *, scale, zero_point, dtype="int8"):
    np = _np()
    info = np.iinfo(np.dtype(dtype))
    return _map(lambda v: xnnpack_quantize(v, scale, zero_point, int(info.min), int(info.max)), np.dtype(dtype), x)


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


def litert_optimized_dequantize_oracle(q, scale, zero_point=0):
    """LiteRT's optimized int8 / uint8 Dequantize: ``f32(f32(q * s) - f32(zp * s))`` on the first ``n // 8 * 8`` codes (C
    order), the reference ``f32((q - zp) * s)`` on the rest."""
    np = _np()
    flat, s, zp = np.asarray(q).reshape(-1).tolist(), f32(scale), int(zero_point)
    block = len(flat) // 8 * 8
    vals = [f32(f32(v * s) - f32(zp * s)) if i < block else tflite_dequantize(v, float(scale), zp)
            for i, v in enumerate(flat)]
    return _float32(vals).reshape(np.shape(q))


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


def litert_optimized_quantize_oracle(x, scale, zero_point=0, dtype="int16"):
    """LiteRT's optimized float -> int8 / int16 AffineQuantize: the first ``8 * (n // 8)`` values (C order)
    ``round_half_even(f32(x * f32(1 / s)))``, the rest ``round_half_away(x / s)`` (exact quotient of the
    float32 values); out-of-int32 values become INT32_MIN; ``+ zp`` wraps; clamped to ``dtype``."""
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
        info = np.iinfo(np.dtype(dtype))
        values.append(min(max(wrap(r + int(zero_point), 32), int(info.min)), int(info.max)))
    return _from_lists(values, np.shape(x), np.dtype(dtype))


# --- ONNX's float8 / float4 codes (QuantizeLinear / DequantizeLinear to minifloats) and blocked scales ---
# name: (exponent bits, mantissa bits, bias, kind); kind: "ieee" (inf + NaNs), "fn" (S.1111.111 NaN),
# "fnuz" (0x80 NaN, no -0), "none" (float4: no inf, no NaN)
FORMATS = {"FLOAT8E4M3FN": (4, 3, 7, "fn"), "FLOAT8E4M3FNUZ": (4, 3, 8, "fnuz"), "FLOAT8E5M2": (5, 2, 15, "ieee"),
           "FLOAT8E5M2FNUZ": (5, 2, 16, "fnuz"), "FLOAT4E2M1": (2, 1, 1, "none")}


def minifloat_value(code: int, fmt: str):
    """Exact value of a code (Fraction), or the floats inf / nan."""
    e_bits, m_bits, bias, kind = FORMATS[fmt]
    sign_bit = 1 << (e_bits + m_bits)
    neg = bool(code & sign_bit)
    e = (code >> m_bits) & ((1 << e_bits) - 1)
    m = code & ((1 << m_bits) - 1)
    if kind == "fnuz" and code == sign_bit:
        return math.nan
    if kind == "ieee" and e == (1 << e_bits) - 1:
        return (-math.inf if neg else math.inf) if m == 0 else math.nan
    if kind == "fn" and e == (1 << e_bits) - 1 and m == (1 << m_bits) - 1:
        return math.nan
    if e == 0:
        v = Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
    else:
        v = (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)
    return -v if neg else v


def _finite_codes(fmt: str):
    """(code, exact value) of the non-negative finite codes, ascending."""
    e_bits, m_bits, _, _ = FORMATS[fmt]
    pairs = [(c, minifloat_value(c, fmt)) for c in range(1 << (e_bits + m_bits))]
    return tuple((c, v) for c, v in pairs if isinstance(v, Fraction))


def minifloat_encode(x: float, fmt: str, saturate: bool = True) -> int:
    """The code of float ``x``: nearest finite value, ties to the even code; overflow and specials
    by the format's rule (see :func:`dspsim.onnx.types.encode_float`)."""
    e_bits, m_bits, bias, kind = FORMATS[fmt]
    sign_bit = 1 << (e_bits + m_bits)
    neg = math.copysign(1.0, x) < 0
    if math.isnan(x):
        if kind == "fnuz":
            return sign_bit
        if kind == "none":
            return 0 if neg else sign_bit
        nan = sign_bit - 1 if kind == "fn" else sign_bit - 2
        return nan | (sign_bit if neg else 0)
    finite = _finite_codes(fmt)
    max_code, max_val = finite[-1]
    over = kind != "none" and not saturate
    if math.isinf(x):
        code = max_code if not over else None
    else:
        a = abs(Fraction(x))
        ulp = max_val - finite[-2][1]
        cands = list(finite) + [(max_code + 1, max_val + ulp)]  # the virtual value above the largest
        best = min(cands, key=lambda cv: (abs(cv[1] - a), cv[0] % 2))
        code = best[0]
        if code == max_code + 1:
            code = None if over else max_code
    if code is None:
        if kind == "ieee":
            code = sign_bit - (1 << m_bits)  # inf
        elif kind == "fn":
            return (sign_bit - 1) | (sign_bit if neg else 0)
        else:
            return sign_bit
    if neg and not (kind == "fnuz" and code == 0):
        code |= sign_bit
    return code


def quantize_minifloat(x: float, scale: float, zero_point_value, fmt: str, saturate: bool) -> int:
    """QuantizeLinear to float8/float4: ``f32(x / scale)`` (+ the float4 zero point, in float32), encoded."""
    v = f32(Fraction(x) / f32(scale)) if math.isfinite(x) else x
    negative_zero = math.copysign(1.0, x) < 0  # the sign of a zero quotient
    if isinstance(v, Fraction):
        if fmt == "FLOAT4E2M1":  # IEEE: (-0) + (+0) = +0; only -0 + -0 stays -0
            negative_zero = negative_zero and math.copysign(1.0, float(zero_point_value)) < 0
            v = f32(v + Fraction(zero_point_value))
        if v == 0:
            return minifloat_encode(-0.0 if negative_zero else 0.0, fmt, saturate)
        v = float(v)
    return minifloat_encode(v, fmt, saturate)


def dequantize_minifloat(code: int, scale: float, fmt: str):
    v = minifloat_value(code, fmt)
    return v if not isinstance(v, Fraction) else f32(v * f32(scale))


def block_index(index: tuple, axis: int, block_size: int) -> tuple:
    """The scale index of element ``index`` in blocked quantization."""
    return tuple(i // block_size if d == axis else i for d, i in enumerate(index))
