"""The case vocabulary: what each suite ``op`` generates, runs, checks and measures.

An op turns a parameter dict and a seeded generator into an :class:`Outcome`:

- ``vectors``: the tensors and constants of the case (what ``dspsim export`` writes), including
  dspsim's output under the case's own scheme;
- ``checks``: bit-exact comparisons of dspsim against the oracle :mod:`dspsim.oracle` (and
  against an ``expected`` tensor given in a vector file);
- ``float``: the error of dspsim's result against the float model, in LSB;
- ``schemes``: the same inputs under the other schemes (rounding, requantization, quantization
  convention): how many outputs differ from the case's own scheme and their float error.

The vocabulary is built from the operator catalog (:func:`vocabulary`, :mod:`dspsim.catalog`):
every registered operator is a suite ``op``. Most run the generic case (kernel and oracle on the
same generated arguments); the ones that name a :data:`STUDIES` entry (the quantizers, ReLU and
the MAC kernels) also get the float model and the other schemes. The oracle is plain Python:
kernels whose MAC count exceeds ``ORACLE_MAC_BUDGET`` are checked on a deterministic sample of
batch rows / output channels (the check's ``sampled`` field says which); elementwise ops are
checked in full.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from .compare import FloatError, compare, float_error

#: Oracle cost cap, in multiply-accumulates per kernel call (plain-Python ints).
ORACLE_MAC_BUDGET = 120_000

TF_TYPES = ("qint8", "quint8", "qint16", "quint16", "qint32")
TF_MODES = ("MIN_COMBINED", "MIN_FIRST", "SCALED")
ROUND_MODES = ("HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN")
POF2_ROUNDINGS = ("half_to_even", "half_away_from_zero", "half_up", "floor", "toward_zero")
AFFINE_TYPES = ("int8", "uint8", "int16", "uint16", "int32")
FIXED_SCHEMES = ("double", "single")
FLOAT_SCHEMES = ("fbgemm", "onnxruntime", "onnx-reference", "xnnpack")
TYPE_RANGE = {
    "qint8": (-128, 127), "quint8": (0, 255), "qint16": (-32768, 32767), "quint16": (0, 65535),
    "qint32": (-(2**31), 2**31 - 1), "int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
    "uint16": (0, 65535), "int32": (-(2**31), 2**31 - 1),
}


class OpError(ValueError):
    """A case that cannot be built from its parameters (bad value, missing API)."""


@dataclass
class Outcome:
    """What running one case produced (see the module docstring)."""

    vectors: dict
    constants: dict
    checks: list = field(default_factory=list)
    float: FloatError | None = None
    schemes: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    n_outputs: int = 0


@dataclass(frozen=True)
class SchemeResult:
    """One alternative scheme on the case's inputs, against the case's own scheme (``baseline``).

    ``differ`` counts outputs whose integer (or, for quantize ops, dequantized real value) differs
    from the baseline's; ``note`` says why a scheme could not run (then ``differ`` is ``None``).
    """

    name: str
    baseline: str
    count: int
    differ: int | None
    max_abs_diff: float | None = None
    float: FloatError | None = None
    note: str | None = None
    histogram: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "baseline": self.baseline,
            "count": self.count,
            "differ": self.differ,
            "max_abs_diff": self.max_abs_diff,
            "histogram": dict(self.histogram),
            "float": None if self.float is None else self.float.to_dict(),
            "note": self.note,
        }


def _scheme(name, baseline, base, other, ferr, lsb=None) -> SchemeResult:
    """``other`` (an alternative scheme's output) against ``base`` (the case's own)."""
    c = compare(base, other, name, lsb=lsb)
    return SchemeResult(name, baseline, c.count, c.mismatches, c.max_abs_diff, ferr, histogram=c.histogram)


# ---------------------------------------------------------------------------------------------
# access to dspsim (imported lazily) and the oracle
# ---------------------------------------------------------------------------------------------
def _api(name: str):
    import dspsim

    return getattr(dspsim, name)


def _ref(name: str):
    from .. import oracle

    fn = getattr(oracle, name, None)
    if fn is None:
        raise OpError(f"the oracle dspsim.oracle.{name} is not available")
    return fn


# ---------------------------------------------------------------------------------------------
# the oracle (dspsim.oracle works on Python scalars and nested lists): array adapters
# ---------------------------------------------------------------------------------------------
def _to_f32(values) -> np.ndarray:
    """Exact oracle results (Fractions, None where undefined) as float32 (NaN for None)."""
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float32)


def _slices(x: np.ndarray, axis):
    """(index arrays, slice number) of the per-slice loops (one slice without an axis)."""
    if axis is None:
        yield np.arange(x.size), 0
        return
    ax = axis % x.ndim
    idx = np.arange(x.size).reshape(x.shape)
    for c in range(x.shape[ax]):
        yield np.take(idx, c, axis=ax).ravel(), c


def _oracle_tf(x, lo, hi, p, mode, round_mode, narrow):
    """The oracle's QuantizeV2 + Dequantize (fed its own returned range), slice by slice."""
    T, axis, emr = p["T"], p["axis"], p["ensure_minimum_range"]
    per_slice = np.ndim(lo) > 0 and axis is not None and x.shape[axis % x.ndim] > 1
    q = np.zeros(x.size, np.int64)
    dq = np.zeros(x.size, np.float32)
    n_sl = x.shape[axis % x.ndim] if per_slice else 1
    rlo, rhi = np.zeros(n_sl, np.float32), np.zeros(n_sl, np.float32)
    flat = x.ravel()
    for idx, c in _slices(x, axis if per_slice else None):
        lo_c = float(np.ravel(lo)[c if per_slice else 0])
        hi_c = float(np.ravel(hi)[c if per_slice else 0])
        codes, mn, mx = _ref("tf_quantize")([float(v) for v in flat[idx]], lo_c, hi_c, T, mode=mode,
                                            round_mode=round_mode, narrow_range=narrow, ensure_minimum_range=emr)
        q[idx] = [0 if v is None else v for v in codes]
        rlo[c], rhi[c] = float(mn), float(mx)
        dq[idx] = _to_f32(_ref("tf_dequantize")(codes, mn, mx, T, mode=mode, narrow_range=narrow))
    dtype = {"qint8": np.int8, "quint8": np.uint8, "qint16": np.int16, "quint16": np.uint16, "qint32": np.int32}[T]
    shape_r = (n_sl,) if per_slice else ()
    return q.astype(dtype).reshape(x.shape), rlo.reshape(shape_r), rhi.reshape(shape_r), dq.reshape(x.shape)


def _oracle_affine(conv, x, scale, zp, dtype, axis):
    """The oracle's affine quantize and dequantize, element by element (per-channel along axis)."""
    lo, hi = TYPE_RANGE[dtype]
    per_channel = np.ndim(scale) > 0
    q = np.zeros(x.size, np.int64)
    dq = np.zeros(x.size, np.float32)
    flat = x.ravel()
    for idx, c in _slices(x, axis if per_channel else None):
        sc = float(np.ravel(scale)[c])
        z = int(np.ravel(zp)[c])
        if conv == "torch":
            fused = not per_channel and dtype in ("int8", "uint8")
            codes = [_ref("torch_quantize")(float(v), sc, z, lo, hi, fused) for v in flat[idx]]
            deq = _ref("torch_dequantize_per_channel" if per_channel else "torch_dequantize_per_tensor")
        else:
            codes = [_ref(f"{conv}_quantize")(float(v), sc, z, lo, hi) for v in flat[idx]]
            deq = _ref(f"{conv}_dequantize")
        q[idx] = codes
        dq[idx] = _to_f32([deq(k, sc, z) for k in codes])
    return q.astype(_NP_DTYPE[dtype]).reshape(x.shape), dq.reshape(x.shape)


def _oracle_kernel(kind, s, scheme, geo, op_name, acc_model=(32, "wrap", False), events=False):
    """The oracle's kernel on (a sample of) the case, under a fixed-point or float-scale scheme.

    With ``events``, also return the number of accumulator overflow events.
    """
    if scheme in FIXED_SCHEMES:
        rq = {"scheme": scheme, "multiplier": [int(v) for v in s["mult"]], "shift": [int(v) for v in s["shift"]]}
    else:
        ws = float(s["s_w"][0]) if s["per_tensor"] else [float(v) for v in s["s_w"]]
        rq = _ref("requant_from_scales")(s["s_in"], ws, s["s_out"], engine=scheme, op=op_name)
    args = (s["x"].astype(np.int64).tolist(), s["w"].astype(np.int64).tolist(), s["bias"].astype(np.int64).tolist(),
            s["zp_in"], s["zp_w"], s["zp_out"], rq, s["act_min"], s["act_max"])
    if kind == "fully_connected":
        res = _ref("fully_connected")(*args, acc_model=acc_model)
    else:
        st, dl = _pair(geo["stride"]), _pair(geo["dilation"])
        kh, kw = s["w"].shape[1:3]
        pt, pb, _ = _pad_amounts(s["x"].shape[1], kh, st[0], dl[0], geo["padding"])
        pl, pr, _ = _pad_amounts(s["x"].shape[2], kw, st[1], dl[1], geo["padding"])
        kw_ = dict(stride=st, pads=(pt, pb, pl, pr), dilation=dl, acc_model=acc_model)
        if kind == "depthwise_conv2d":
            kw_["depth_multiplier"] = geo["depth_multiplier"]
        res = _ref(kind)(*args, **kw_)
    out = np.array(res[0], dtype=np.int64)
    return (out, int(res[1])) if events else out


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------
def _float_data(rng, shape, lo, hi, kind: str, step=None) -> np.ndarray:
    """float32 test data over [lo, hi] (arrays broadcast over the last axes).

    ``uniform``: uniform over the range widened by 10 % each side (some saturate), with the
    range ends and 0 planted at the front; ``ties``: half-way points ``lo + (k + 1/2) * step``
    (exact ties when the step is a power of two); ``wide``: uniform over 3x the range.
    """
    shape = tuple(shape)
    lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), shape)
    hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), shape)
    span = hi - lo
    if kind == "ties":
        if step is None:
            raise OpError("data = 'ties' needs a quantization step")
        step = np.broadcast_to(np.asarray(step, dtype=np.float64), shape)
        levels = np.maximum(np.floor(span / step), 1)
        k = np.floor(rng.random(shape) * levels)
        x = lo + (k + 0.5) * step
    elif kind == "wide":
        x = lo - span + 3 * span * rng.random(shape)
    elif kind == "uniform":
        x = lo - 0.1 * span + 1.2 * span * rng.random(shape)
        flat = x.reshape(-1)
        specials = [lo.reshape(-1), hi.reshape(-1), np.zeros(flat.size)]
        for i, s in enumerate(specials):
            if i < flat.size:
                flat[i] = s[i]
    else:
        raise OpError(f"unknown data kind {kind!r}; expected 'uniform', 'ties' or 'wide'")
    return x.astype(np.float32)


def _plant(x: np.ndarray, values) -> np.ndarray:
    """``x`` with ``values`` (float32) written over its first elements (C order)."""
    if values:
        v = np.asarray(values, np.float32).ravel()
        if v.size > x.size:
            raise OpError(f"values has {v.size} entries but the tensor only {x.size}")
        x.reshape(-1)[: v.size] = v
    return x


def _int_range(value, lo: int, hi: int, name: str) -> tuple:
    if not (isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        raise OpError(f"{name} must be [low, high] integers, got {value!r}")
    if not lo <= value[0] <= value[1] <= hi:
        raise OpError(f"{name} {list(value)} is not within [{lo}, {hi}]")
    return int(value[0]), int(value[1])


def _int_data(rng, shape, lo: int, hi: int) -> np.ndarray:
    return rng.integers(lo, hi + 1, size=tuple(shape), dtype=np.int64)


def _channel_shape(ndim: int, axis) -> tuple:
    """Reshape target for a per-channel vector along ``axis`` of an ``ndim`` tensor."""
    if axis is None:
        return ()
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return tuple(shape)


# ---------------------------------------------------------------------------------------------
# ops
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Op:
    """One entry of the case vocabulary: ``run(params, rng, vectors) -> Outcome``, the parameters with
    their defaults, the enumerated choices, and a one-line description."""

    name: str
    run: object
    defaults: dict
    choices: dict
    doc: str


@dataclass(frozen=True)
class Study:
    """A runner that does more than the registry's generic oracle check (float model, other
    schemes); it defines its own parameters. An operator names it with ``Operator.study``."""

    run: object
    defaults: dict
    choices: dict


def _tf_roundtrip(x, lo, hi, p, mode, round_mode, narrow):
    quantize, dequantize = _api("quantize"), _api("dequantize")
    res = quantize(x, lo, hi, p["T"], mode=mode, round_mode=round_mode, narrow_range=narrow,
                   axis=p["axis"], ensure_minimum_range=p["ensure_minimum_range"])
    q, rlo, rhi = res
    y = dequantize(q, rlo, rhi, mode=mode, narrow_range=narrow, axis=p["axis"])
    return np.asarray(q), np.asarray(rlo, dtype=np.float32), np.asarray(rhi, dtype=np.float32), np.asarray(y)


def _tf_lsb(rlo, rhi, T, mode, ndim, axis):
    tmin, tmax = TYPE_RANGE[T]
    rlo, rhi = np.asarray(rlo, np.float64), np.asarray(rhi, np.float64)
    lsb = rhi / tmax if mode == "SCALED" else (rhi - rlo) / (float(tmax) - tmin)
    return lsb.reshape(_channel_shape(ndim, axis)) if lsb.ndim else lsb


def _run_tf_quantize(p, rng, vec):
    T, mode, rm, narrow, axis = p["T"], p["mode"], p["round_mode"], p["narrow_range"], p["axis"]
    lo, hi = p["min_range"], p["max_range"]
    shape = tuple(p["shape"])
    if isinstance(lo, list) != isinstance(hi, list):
        raise OpError("min_range and max_range must both be numbers or both be lists (one per slice)")
    cs = _channel_shape(len(shape), axis) if isinstance(lo, list) else ()
    lo_b = np.asarray(lo, np.float32).reshape(cs) if cs else np.float32(lo)
    hi_b = np.asarray(hi, np.float32).reshape(cs) if cs else np.float32(hi)
    tmin, tmax = TYPE_RANGE[T]
    if "input" in vec:
        x = np.asarray(vec["input"], dtype=np.float32)
    else:
        step = (hi_b.astype(np.float64) - lo_b) / (float(tmax) - tmin)
        x = _plant(_float_data(rng, shape, lo_b, hi_b, p["data"], step), p["values"])
    lo_a = np.asarray(lo, np.float32)
    hi_a = np.asarray(hi, np.float32)
    q, rlo, rhi, y = _tf_roundtrip(x, lo_a, hi_a, p, mode, rm, narrow)
    out = Outcome(
        vectors={"input": x, "min_range": lo_a, "max_range": hi_a, "output": q, "output_min": rlo,
                 "output_max": rhi, "dequantized": y},
        constants={"T": T, "mode": mode, "round_mode": rm, "narrow_range": bool(narrow),
                   "ensure_minimum_range": float(p["ensure_minimum_range"])},
        n_outputs=int(q.size),
    )
    ref_q, ref_lo, ref_hi, ref_y = _oracle_tf(x, lo_a, hi_a, p, mode, rm, narrow)
    lsb = _tf_lsb(rlo, rhi, T, mode, x.ndim, axis)
    out.checks += [
        compare(ref_q, q, "oracle: codes"),
        compare(ref_lo, rlo, "oracle: output_min"),
        compare(ref_hi, rhi, "oracle: output_max"),
        compare(ref_y, y.astype(np.float32), "oracle: dequantized", lsb=float(np.min(lsb))),
    ]
    cs_r = _channel_shape(x.ndim, axis) if rlo.ndim else ()
    lo_r, hi_r = (rlo.reshape(cs_r), rhi.reshape(cs_r)) if cs_r else (rlo, rhi)
    out.float = float_error(y, x, lsb, lo_r, hi_r)
    wrapped = int(np.count_nonzero((q.astype(np.int64) == -(2**31)) & (x > 0))) if T == "qint32" else 0
    if wrapped:
        out.notes.append(f"{wrapped} value(s) at or above the top of the range quantized to INT32_MIN: TF's qint32 "
                         "cast wraps 2^31 (docs/semantics.md §1.2); they dominate the float error")
    variants = [(m, r, n) for m in TF_MODES for r in ROUND_MODES for n in (False, True)
                if (r == "HALF_AWAY_FROM_ZERO" or m == "SCALED") and (not n or m == "SCALED")
                and not (m == "MIN_FIRST" and rlo.ndim)]
    for m, r, n in variants:
        if (m, r, n) == (mode, rm, bool(narrow)):
            continue
        name = f"{m}/{'HAZ' if r == 'HALF_AWAY_FROM_ZERO' else 'HTE'}{'/narrow' if n else ''}"
        try:
            _, vlo, vhi, vy = _tf_roundtrip(x, lo_a, hi_a, p, m, r, n)
        except (OpError, ValueError) as exc:
            out.schemes.append(SchemeResult(name, "this case", int(x.size), None, note=str(exc)))
            continue
        vlsb = _tf_lsb(vlo, vhi, T, m, x.ndim, axis)
        vlo_r, vhi_r = (vlo.reshape(cs_r), vhi.reshape(cs_r)) if cs_r else (vlo, vhi)
        out.schemes.append(_scheme(name, "this case", y.astype(np.float32), vy.astype(np.float32),
                                   float_error(vy, x, vlsb, vlo_r, vhi_r), lsb=float(np.min(lsb))))
    return out


_AFFINE_FUNCS = {
    # convention: (quantize per tensor, quantize per channel, dequantize), called through _affine
    "torch": ("quantize_per_tensor", "quantize_per_channel", "dequantize_per_tensor", "dequantize_per_channel"),
    "onnx": ("quantize_linear", "quantize_linear", "dequantize_linear", "dequantize_linear"),
    "tflite": ("tflite_quantize", "tflite_quantize", "tflite_dequantize", "tflite_dequantize"),
}


def _affine(conv, x, scale, zp, dtype, axis):
    """dspsim's (codes, dequantized) under an affine convention (per-channel when scale is an array)."""
    per_channel = np.ndim(scale) > 0
    qn, qcn, dn, dcn = _AFFINE_FUNCS[conv]
    if conv == "torch":
        if per_channel:
            q = _api(qcn)(x, scale, zp, axis, dtype)
            y = _api(dcn)(q, scale, zp, axis)
        else:
            q = _api(qn)(x, scale, zp, dtype)
            y = _api(dn)(q, scale, zp)
    elif conv == "onnx":
        q = _api(qn)(x, scale, zp, axis=axis if per_channel else 1, dtype=dtype)
        y = _api(dn)(q, scale, zp, axis=axis if per_channel else 1)
    elif per_channel:  # TFLite DEQUANTIZE is per-tensor: dequantize slice by slice
        q = np.asarray(_api(qn)(x, scale, zp, dtype, axis=axis))
        y = np.zeros(q.shape, np.float32).ravel()
        for idx, c in _slices(q, axis):
            y[idx] = _api(dn)(q.ravel()[idx], float(scale[c]), int(zp[c]))
        y = y.reshape(q.shape)
    else:
        q = _api(qn)(x, scale, zp, dtype)
        y = _api(dn)(q, scale, zp)
    return np.asarray(q), np.asarray(y)


def _run_affine_quantize(p, rng, vec):
    conv, dtype, axis = p["convention"], p["dtype"], p["axis"]
    shape = tuple(p["shape"])
    scale, zp = p["scale"], p["zero_point"]
    per_channel = isinstance(scale, list)
    if isinstance(zp, list) and not per_channel:
        raise OpError("zero_point is a list but scale is not: per-channel needs both as lists")
    if per_channel and not isinstance(zp, list):
        zp = [zp] * len(scale)
    tmin, tmax = TYPE_RANGE[dtype]
    s_arr = np.asarray(scale, np.float32)
    z_arr = np.asarray(zp, np.int64)
    cs = _channel_shape(len(shape), axis) if per_channel else ()
    s_b = s_arr.reshape(cs) if cs else s_arr
    z_b = z_arr.reshape(cs) if cs else z_arr
    lo = (tmin - z_b.astype(np.float64)) * s_b
    hi = (tmax - z_b.astype(np.float64)) * s_b
    if "input" in vec:
        x = np.asarray(vec["input"], np.float32)
    else:
        x = _plant(_float_data(rng, shape, lo, hi, p["data"], s_b), p["values"])
    scale_arg = s_arr if per_channel else float(s_arr)
    zp_arg = z_arr if per_channel else int(z_arr)
    q, y = _affine(conv, x, scale_arg, zp_arg, dtype, axis)
    out = Outcome(
        vectors={"input": x, "scale": s_arr, "zero_point": z_arr, "output": q, "dequantized": y},
        constants={"convention": conv, "dtype": dtype, **({"axis": axis} if per_channel else {})},
        n_outputs=int(q.size),
    )
    rq, ry = _oracle_affine(conv, x, scale_arg, zp_arg, dtype, axis)
    out.checks += [
        compare(rq, q, "oracle: codes"),
        compare(ry, y.astype(np.float32), "oracle: dequantized", lsb=float(np.min(s_arr))),
    ]
    out.float = float_error(y, x, s_b, lo, hi)
    for other in _AFFINE_FUNCS:
        if other == conv:
            continue
        try:
            oq, oy = _affine(other, x, scale_arg, zp_arg, dtype, axis)
        except (OpError, ValueError, TypeError) as exc:
            out.schemes.append(SchemeResult(other, conv, int(x.size), None, note=str(exc)))
            continue
        out.schemes.append(_scheme(other, conv, q, oq, float_error(oy, x, s_b, lo, hi)))
    return out


def _run_pof2_quantize(p, rng, vec):
    bits, narrow, rm, shape = int(p["bits"]), bool(p["narrow_range"]), p["rounding"], tuple(p["shape"])
    qmax = 2 ** (bits - 1) - 1
    qmin = -qmax if narrow else -qmax - 1
    amax = float(p["max_abs"])
    fb = p["frac_bits"]
    if fb is None:
        fb = int(_api("pof2_frac_bits")(amax, bits, narrow_range=narrow))
        fb_ref = _ref("pof2_frac_bits")(-amax, amax, bits, narrow)
        if fb_ref != fb:
            raise OpError(f"pof2_frac_bits({amax}) = {fb}, the oracle says {fb_ref}")
    fb = int(fb)
    lsb = 2.0**-fb
    if "input" in vec:
        x = np.asarray(vec["input"], np.float32)
    else:
        x = _plant(_float_data(rng, shape, -amax, amax, p["data"], lsb), p["values"])

    def run(rule):
        return np.asarray(_api("quantize_pof2")(x, fb, bits, rounding=rule, narrow_range=narrow))

    q = run(rm)
    y = np.asarray(_api("dequantize_pof2")(q, fb))
    out = Outcome(vectors={"input": x, "output": q, "dequantized": y},
                  constants={"frac_bits": fb, "bits": bits, "narrow_range": narrow, "rounding": rm},
                  n_outputs=int(q.size))
    xs = [float(v) for v in x.ravel()]
    rq = np.array([_ref("quantize_pof2")(v, fb, bits, rm, narrow) for v in xs], np.int64).reshape(x.shape)
    out.checks.append(compare(rq, q, "oracle: codes"))
    ry = _to_f32([_ref("dequantize_pof2")(int(k), fb) for k in rq.ravel()]).reshape(x.shape)
    out.checks.append(compare(ry, y.astype(np.float32), "oracle: dequantized", lsb=lsb))
    out.float = float_error(y, x, lsb, qmin * lsb, qmax * lsb)
    for other in POF2_ROUNDINGS:
        if other == rm:
            continue
        try:
            oq = run(other)
        except (OpError, ValueError) as exc:
            out.schemes.append(SchemeResult(other, rm, int(x.size), None, note=_one_line(exc)))
            continue
        oy = oq.astype(np.float64) * lsb
        out.schemes.append(_scheme(other, rm, q, oq, float_error(oy, x, lsb, qmin * lsb, qmax * lsb)))
    return out


# ----------------------------------------------------------------- integer kernels (+ ReLU)
def _quantize_multiplier(real: float):
    from dspsim.fixedpoint import quantize_multiplier

    m, s = quantize_multiplier(real)
    return int(m), int(s)


def _act_range(act: str, s_out: float, zp_out: int, out_dtype: str):
    """TFLite CalculateActivationRangeQuantized: :func:`dspsim.tflite_activation_range`."""
    try:
        return _api("tflite_activation_range")(act, s_out, zp_out, out_dtype)
    except ValueError as e:
        raise OpError(str(e)) from None


def _sample_indices(n: int, k: int) -> np.ndarray:
    """``k`` evenly spread indices of ``range(n)``, always including the first and the last."""
    if k >= n:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, max(k, 1))).astype(np.int64))


def _kernel_setup(p, rng, vec, kind):
    """Inputs, weights, bias and integer parameters of a kernel case (TFLite's Prepare)."""
    in_dtype, out_dtype = p["input_dtype"], p["output_dtype"]
    imin, imax = TYPE_RANGE[in_dtype]
    given = np.shape(vec["input"]) if "input" in vec else None  # a vector file's input sets the shapes
    if kind == "fully_connected":
        x_shape = given or (p["batch"], p["in_features"])
        w_shape = (p["out_features"], x_shape[-1])
    else:
        x_shape = given or tuple(p["input_shape"])
        kh, kw = p["kernel"]
        c = x_shape[-1]
        w_shape = (p["out_channels"], kh, kw, c) if kind == "conv2d" else (1, kh, kw, c * p["depth_multiplier"])
    if "weight" in vec:
        w_shape = np.shape(vec["weight"])
    n_out = w_shape[0] if kind != "depthwise_conv2d" else w_shape[3]
    wr = p["weight_range"]
    if wr in ("narrow", "full"):
        wlo, whi = (-127 if wr == "narrow" else -128), 127
    else:
        wlo, whi = _int_range(wr, -128, 127, "weight_range")
    xr = p["input_range"]
    xlo, xhi = (imin, imax) if xr is None else _int_range(xr, imin, imax, "input_range")
    x = np.asarray(vec["input"]) if "input" in vec else _int_data(rng, x_shape, xlo, xhi).astype(_NP_DTYPE[in_dtype])
    w = np.asarray(vec["weight"]) if "weight" in vec else _int_data(rng, w_shape, wlo, whi).astype(np.int8)
    s_in = float(np.float32(p["input_scale"]))
    ws = p["weight_scale"]
    per_channel = isinstance(ws, list) or p["per_channel"]
    if isinstance(ws, list):
        s_w = np.asarray(ws, np.float32)
        if s_w.size != n_out:
            raise OpError(f"weight_scale has {s_w.size} entries, the kernel has {n_out} output channels")
    elif p["per_channel"]:
        s_w = (float(ws) * 2.0 ** rng.uniform(-1.5, 1.5, size=n_out)).astype(np.float32)
    else:
        s_w = np.asarray([ws] * n_out, np.float32)
    if "bias" in vec:
        bias = np.asarray(vec["bias"], np.int32)
    else:
        k_taps = int(np.prod(w_shape[1:])) if kind != "depthwise_conv2d" else w_shape[1] * w_shape[2]
        # bias_spread 1: a quarter of the accumulator's typical magnitude
        spread = p["bias_spread"] * math.sqrt(k_taps) * (xhi - xlo) * (whi - wlo) / 48
        bias = np.round(rng.normal(0, spread, size=n_out)).astype(np.int32)
    s_out = p["output_scale"]
    if p["multiplier"] is not None:
        if p["shift"] is None:
            raise OpError("multiplier needs shift")
        mult = np.broadcast_to(np.asarray(p["multiplier"], np.int64), (n_out,)).copy()
        shift = np.broadcast_to(np.asarray(p["shift"], np.int64), (n_out,)).copy()
        # the output scale the multiplier stands for (channel 0): used by the float model and schemes
        real = float(mult[0]) * 2.0 ** (float(shift[0]) - 31)
        s_out = float(np.float32(s_in * float(s_w[0]) / real))
    else:
        if s_out is None:
            raise OpError("give output_scale, or multiplier and shift")
        s_out = float(np.float32(s_out))
        if per_channel or kind != "fully_connected":
            reals = [s_in * float(sw) / s_out for sw in s_w]  # double(s_in) * double(s_w) / double(s_out)
        else:
            reals = [float(np.float32(s_in * float(s_w[0]))) / s_out] * n_out  # f32 product first
        mq = [_quantize_multiplier(r) for r in reals]
        mult = np.asarray([m for m, _ in mq], np.int64)
        shift = np.asarray([s for _, s in mq], np.int64)
    if "multiplier" in vec:
        mult = np.asarray(vec["multiplier"], np.int64)
    if "shift" in vec:
        shift = np.asarray(vec["shift"], np.int64)
    zp_in, zp_w, zp_out = int(p["input_zero_point"]), int(p["weight_zero_point"]), int(p["output_zero_point"])
    act_min, act_max = _act_range(p["activation"], s_out, zp_out, out_dtype)
    if p["act_min"] is not None:
        act_min = int(p["act_min"])
    if p["act_max"] is not None:
        act_max = int(p["act_max"])
    uniform = per_channel is False and np.all(mult == mult[0]) and np.all(shift == shift[0])
    return dict(x=x, w=w, bias=bias, s_in=s_in, s_w=s_w, s_out=s_out, mult=mult, shift=shift,
                zp_in=zp_in, zp_w=zp_w, zp_out=zp_out, act_min=act_min, act_max=act_max,
                per_tensor=bool(uniform), n_out=n_out, out_dtype=out_dtype)


_NP_DTYPE = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32}


def _geometry_kwargs(p, kind):
    if kind == "fully_connected":
        return {}
    kw = {"stride": p["stride"], "padding": p["padding"], "dilation": p["dilation"]}
    if kind == "depthwise_conv2d":
        kw["depth_multiplier"] = p["depth_multiplier"]
    return kw


def _kernel_call(kind, s, scheme, geo, accumulator=None, stats=False):
    """Run dspsim's kernel under a fixed-point or float-scale scheme (``stats``: also its KernelStats)."""
    fn = _api(kind)
    common = dict(input_zero_point=s["zp_in"], weight_zero_point=s["zp_w"], output_zero_point=s["zp_out"],
                  act_min=s["act_min"], act_max=s["act_max"], out_dtype=s["out_dtype"], **geo)
    if accumulator is not None:
        common.update(accumulator=accumulator, stats=stats)
    if scheme in FIXED_SCHEMES:
        m = int(s["mult"][0]) if s["per_tensor"] else s["mult"]
        sh = int(s["shift"][0]) if s["per_tensor"] else s["shift"]
        res = fn(s["x"], s["w"], s["bias"], multiplier=m, shift=sh, rounding=scheme, **common)
    else:
        ws = float(s["s_w"][0]) if s["per_tensor"] else s["s_w"]
        res = fn(s["x"], s["w"], s["bias"], input_scale=s["s_in"], weight_scale=ws, output_scale=s["s_out"],
                 requant=scheme, **common)
    return (np.asarray(res[0]), res[1]) if common.get("stats") else np.asarray(res)


def _float_kernel(kind, s, geo):
    """The float model: real input times real weights plus real bias, float64, no rounding."""
    xr = (s["x"].astype(np.float64) - s["zp_in"]) * s["s_in"]
    wr = s["w"].astype(np.float64) - s["zp_w"]
    s_w = s["s_w"].astype(np.float64)  # one per output channel (the last output axis)
    acc = xr @ wr.T if kind == "fully_connected" else _float_conv(xr, wr, kind, geo)
    return (acc + s["bias"].astype(np.float64) * s["s_in"]) * s_w


def _pad_amounts(size, k, stride, dilation, padding):
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        return 0, 0, (size - eff) // stride + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2, out


def _float_conv(xr, wr, kind, geo):
    stride, dilation, padding = geo["stride"], geo["dilation"], geo["padding"]
    sh, sw = (stride, stride) if np.ndim(stride) == 0 else stride
    dh, dw = (dilation, dilation) if np.ndim(dilation) == 0 else dilation
    n, h, w, c = xr.shape
    _, kh, kw, _ = wr.shape
    pt, pb, oh = _pad_amounts(h, kh, sh, dh, padding)
    pl, pr, ow = _pad_amounts(w, kw, sw, dw, padding)
    xp = np.pad(xr, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    if kind == "conv2d":
        out = np.zeros((n, oh, ow, wr.shape[0]))
    else:
        m = geo["depth_multiplier"]
        out = np.zeros((n, oh, ow, c * m))
    for fy in range(kh):
        for fx in range(kw):
            patch = xp[:, fy * dh : fy * dh + (oh - 1) * sh + 1 : sh, fx * dw : fx * dw + (ow - 1) * sw + 1 : sw, :]
            if kind == "conv2d":
                out += np.einsum("nhwc,oc->nhwo", patch, wr[:, fy, fx, :])
            else:
                out += np.repeat(patch, m, axis=3) * wr[0, fy, fx, :]
    return out


def _oracle_sample(kind, s, geo):
    """Slices of (x, w, bias, mult, shift) that keep the oracle under ORACLE_MAC_BUDGET.

    Returns (sliced setup, (batch indices or None, output-channel indices or None), description or None).
    """
    x, w = s["x"], s["w"]
    if kind == "fully_connected":
        per_row = w.shape[0] * w.shape[1]
        rows = _sample_indices(x.shape[0], max(ORACLE_MAC_BUDGET // max(per_row, 1), 1))
        if rows.size == x.shape[0]:
            return s, (None, None), None
        return {**s, "x": x[rows]}, (rows, None), f"batch rows {rows.tolist()} of {x.shape[0]}"
    _, kh, kw, _ = w.shape
    h_out = _pad_amounts(x.shape[1], kh, _pair(geo["stride"])[0], _pair(geo["dilation"])[0], geo["padding"])[2]
    w_out = _pad_amounts(x.shape[2], kw, _pair(geo["stride"])[1], _pair(geo["dilation"])[1], geo["padding"])[2]
    taps = kh * kw * (x.shape[3] if kind == "conv2d" else 1)
    per_image = h_out * w_out * s["n_out"] * taps
    n_img = _sample_indices(x.shape[0], max(ORACLE_MAC_BUDGET // max(per_image, 1), 1))
    sub = {**s, "x": x[n_img]}
    desc = [] if n_img.size == x.shape[0] else [f"images {n_img.tolist()} of {x.shape[0]}"]
    if per_image > ORACLE_MAC_BUDGET:
        per_channel = h_out * w_out * taps
        if kind == "conv2d":
            oc = _sample_indices(s["n_out"], max(ORACLE_MAC_BUDGET // per_channel, 1))
            sub.update(w=w[oc], bias=s["bias"][oc], mult=s["mult"][oc], shift=s["shift"][oc], s_w=s["s_w"][oc],
                       n_out=oc.size)
        else:
            m = geo["depth_multiplier"]
            ic = _sample_indices(x.shape[3], max(ORACLE_MAC_BUDGET // (per_channel * m), 1))
            oc = (ic[:, None] * m + np.arange(m)[None, :]).ravel()
            sub.update(x=sub["x"][..., ic], w=w[..., oc], bias=s["bias"][oc], mult=s["mult"][oc],
                       shift=s["shift"][oc], s_w=s["s_w"][oc], n_out=oc.size)
        desc.append(f"output channels {oc.tolist()} of {s['n_out']}")
        return sub, (n_img, oc), ", ".join(desc)
    if not desc:
        return s, (None, None), None
    return sub, (n_img, None), ", ".join(desc)


def _take(y, idx):
    """The sampled part of a kernel output: batch rows first, then output channels (last axis)."""
    rows, channels = idx
    y = y if rows is None else y[rows]
    return y if channels is None else y[..., channels]


def _pair(v):
    return (v, v) if np.ndim(v) == 0 else tuple(v)


def _accumulator(p):
    if p["accumulator_bits"] is None:
        return None
    return _api("Accumulator")(int(p["accumulator_bits"]), overflow=p["accumulator_overflow"])


def _run_kernel(kind):
    def run(p, rng, vec):
        s = _kernel_setup(p, rng, vec, kind)
        geo = _geometry_kwargs(p, kind)
        scheme = p["scheme"]
        acc = _accumulator(p)
        y = _kernel_call(kind, s, scheme, geo, accumulator=acc, stats=acc is not None)
        kstats = None
        if acc is not None:
            y, kstats = y
        consts = {"input_zero_point": s["zp_in"], "weight_zero_point": s["zp_w"], "output_zero_point": s["zp_out"],
                  "act_min": s["act_min"], "act_max": s["act_max"], "input_scale": s["s_in"],
                  "output_scale": s["s_out"], "scheme": scheme}
        if s["per_tensor"]:
            consts.update(multiplier=int(s["mult"][0]), shift=int(s["shift"][0]))
        if kind != "fully_connected":
            consts.update({k: v for k, v in geo.items() if np.ndim(v) == 0})
        if p["accumulator_bits"] is not None:
            consts.update(accumulator_bits=int(p["accumulator_bits"]), accumulator_overflow=p["accumulator_overflow"])
        arrays = {"input": s["x"], "weight": s["w"], "bias": s["bias"],
                  "multiplier": s["mult"].astype(np.int32), "shift": s["shift"].astype(np.int32),
                  "weight_scale": s["s_w"], "output": y}
        out = Outcome(vectors=arrays, constants=consts, n_outputs=int(y.size))
        sub, idx, desc = _oracle_sample(kind, s, geo)
        acc_model = (32, "wrap", False)
        if acc is not None:
            acc_model = (int(p["accumulator_bits"]), p["accumulator_overflow"], False)
        expected, events = _oracle_kernel(kind, sub, scheme, geo, _REQUANT_OP[kind], acc_model, events=True)
        out.checks.append(compare(expected, _take(y, idx), f"oracle: {scheme}", sampled=desc))
        exact = _float_kernel(kind, s, geo) / s["s_out"] + s["zp_out"]
        lo, hi = s["act_min"], s["act_max"]
        out.float = float_error(y.astype(np.float64), exact, 1.0, lo, hi)
        if kstats is not None:  # the accumulator model: its overflow count must match the oracle's too
            if desc is None:
                out.checks.append(compare(np.array([events]), np.array([kstats.overflow_events]),
                                          "oracle: accumulator overflow events"))
            out.notes.append(f"{p['accumulator_bits']}-bit accumulator ({p['accumulator_overflow']}): "
                             f"{kstats.overflow_events} overflow events in {kstats.overflowed_outputs} of "
                             f"{y.size} outputs")
            return out
        for other in FIXED_SCHEMES + FLOAT_SCHEMES:
            if other == scheme:
                continue
            try:
                oy = _kernel_call(kind, s, other, geo)
            except (OpError, ValueError, TypeError) as exc:
                out.schemes.append(SchemeResult(other, scheme, int(y.size), None, note=_one_line(exc)))
                continue
            out.schemes.append(_scheme(other, scheme, y, oy, float_error(oy.astype(np.float64), exact, 1.0, lo, hi)))
            oexp = _oracle_kernel(kind, sub, other, geo, _REQUANT_OP[kind])
            out.checks.append(compare(oexp, _take(oy, idx), f"oracle: {other}", sampled=desc))
        return out

    return run


_REQUANT_OP = {"fully_connected": "fully_connected", "conv2d": "conv", "depthwise_conv2d": "depthwise"}


def _one_line(exc) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _run_relu(p, rng, vec):
    dtype = p["dtype"]
    tmin, tmax = TYPE_RANGE[dtype]
    x = np.asarray(vec["input"]) if "input" in vec else _int_data(rng, p["shape"], tmin, tmax).astype(_NP_DTYPE[dtype])
    s_in, s_out = float(np.float32(p["input_scale"])), float(np.float32(p["output_scale"]))
    zp_in, zp_out = int(p["input_zero_point"]), int(p["output_zero_point"])
    if p["multiplier"] is not None:
        m, sh = int(p["multiplier"]), int(p["shift"])
        s_out = float(np.float32(s_in / (m * 2.0 ** (sh - 31))))  # the output scale it stands for
    else:
        m, sh = _quantize_multiplier(float(np.float32(s_in / s_out)))  # ReluPrepare: f32 ratio, then double
    act_min, act_max = _act_range(p["activation"], s_out, zp_out, dtype)

    def call(rounding):
        return np.asarray(_api("relu")(x, input_zero_point=zp_in, output_zero_point=zp_out, multiplier=m,
                                       shift=sh, act_min=act_min, act_max=act_max, rounding=rounding))

    def oracle(rounding):
        f = _ref("relu")
        return np.array([f(int(v), zp_in, zp_out, m, sh, act_min, act_max, rounding) for v in x.ravel()],
                        np.int64).reshape(x.shape)

    scheme = p["scheme"]
    y = call(scheme)
    out = Outcome(vectors={"input": x, "output": y},
                  constants={"input_zero_point": zp_in, "output_zero_point": zp_out, "multiplier": m, "shift": sh,
                             "act_min": act_min, "act_max": act_max, "scheme": scheme},
                  n_outputs=int(y.size))
    out.checks.append(compare(oracle(scheme), y, f"oracle: {scheme}"))
    lo_f = {"relu": 0.0, "relu6": 0.0, "relu_n1_to_1": -1.0}[p["activation"]]
    exact = np.maximum((x.astype(np.float64) - zp_in) * s_in, lo_f) / s_out + zp_out
    out.float = float_error(y.astype(np.float64), exact, 1.0, act_min, act_max)
    for other in FIXED_SCHEMES:
        if other == scheme:
            continue
        oy = call(other)
        out.schemes.append(_scheme(other, scheme, y, oy, float_error(oy.astype(np.float64), exact, 1.0,
                                                                     act_min, act_max)))
        out.checks.append(compare(oracle(other), oy, f"oracle: {other}"))
    return out


_KERNEL_DEFAULTS = {
    "input_dtype": "int8", "output_dtype": "int8", "input_scale": 0.05, "input_zero_point": 0, "input_range": None,
    "weight_scale": 0.01, "weight_zero_point": 0, "per_channel": False, "weight_range": "full",
    "output_scale": 0.1, "output_zero_point": 0, "multiplier": None, "shift": None,
    "activation": "none", "act_min": None, "act_max": None, "scheme": "double", "bias_spread": 1.0,
    "accumulator_bits": None, "accumulator_overflow": "wrap",
}
_KERNEL_CHOICES = {
    "input_dtype": ("int8", "uint8"), "output_dtype": ("int8", "uint8"),
    "activation": ("none", "relu", "relu6", "relu_n1_to_1"), "scheme": FIXED_SCHEMES + FLOAT_SCHEMES,
    "accumulator_overflow": ("wrap", "saturate"),
}
_CONV_DEFAULTS = {"input_shape": [1, 8, 8, 4], "kernel": [3, 3], "stride": 1, "padding": "VALID", "dilation": 1}

STUDIES = {
    "tf_quantize": Study(
        _run_tf_quantize,
        {"T": "qint8", "mode": "MIN_COMBINED", "round_mode": "HALF_AWAY_FROM_ZERO", "narrow_range": False,
         "min_range": -1.0, "max_range": 1.0, "axis": None, "ensure_minimum_range": 0.01, "shape": [257],
         "data": "uniform", "values": None},
        {"T": TF_TYPES, "mode": TF_MODES, "round_mode": ROUND_MODES, "data": ("uniform", "ties", "wide")},
    ),
    "affine_quantize": Study(
        _run_affine_quantize,
        {"convention": "torch", "dtype": "int8", "scale": 0.05, "zero_point": 0, "axis": 1, "shape": [257],
         "data": "uniform", "values": None},
        {"convention": tuple(_AFFINE_FUNCS), "dtype": AFFINE_TYPES, "data": ("uniform", "ties", "wide")},
    ),
    "pof2_quantize": Study(
        _run_pof2_quantize,
        {"bits": 8, "narrow_range": True, "frac_bits": None, "max_abs": 4.0, "rounding": "half_to_even",
         "shape": [257], "data": "uniform", "values": None},
        {"rounding": POF2_ROUNDINGS, "data": ("uniform", "ties", "wide")},
    ),
    "relu": Study(
        _run_relu,
        {"dtype": "int8", "shape": [257], "input_scale": 0.05, "output_scale": 0.05, "input_zero_point": 0,
         "output_zero_point": 0, "multiplier": None, "shift": None, "activation": "relu", "scheme": "double"},
        {"dtype": ("int8", "uint8", "int16"), "activation": ("relu", "relu6", "relu_n1_to_1"),
         "scheme": FIXED_SCHEMES},
    ),
    "fully_connected": Study(
        _run_kernel("fully_connected"),
        {"batch": 4, "in_features": 64, "out_features": 16, **_KERNEL_DEFAULTS},
        _KERNEL_CHOICES,
    ),
    "conv2d": Study(
        _run_kernel("conv2d"),
        {**_CONV_DEFAULTS, "out_channels": 8, **_KERNEL_DEFAULTS},
        {**_KERNEL_CHOICES, "padding": ("VALID", "SAME")},
    ),
    "depthwise_conv2d": Study(
        _run_kernel("depthwise_conv2d"),
        {**_CONV_DEFAULTS, "depth_multiplier": 1, **_KERNEL_DEFAULTS},
        {**_KERNEL_CHOICES, "padding": ("VALID", "SAME")},
    ),
}


# ---------------------------------------------------------------------------------------------
# the vocabulary: every registered operator
# ---------------------------------------------------------------------------------------------
def _split_call(kwargs: dict):
    """(arrays, constants) of a kernel call, for export: arrays by argument name (a list of arrays
    as ``name.0``, ``name.1``, ...), scalars, strings and dataclass fields as constants."""
    import dataclasses

    arrays, consts = {}, {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            arrays[k] = v
        elif isinstance(v, (list, tuple)) and v and all(isinstance(a, np.ndarray) for a in v):
            arrays.update({f"{k}.{i}": a for i, a in enumerate(v)})
        elif dataclasses.is_dataclass(v):
            consts.update({f"{k}.{f}": x for f, x in dataclasses.asdict(v).items()})
        elif isinstance(v, (list, tuple)):
            arrays[k] = np.asarray(v)
        elif v is not None:
            consts[k] = v.item() if isinstance(v, np.generic) else v
    return arrays, consts


def _generic_run(op):
    """The registry's case: the operator's kernel and its oracle on the same generated arguments
    (inputs in a vector file replace the generated ones of the same name), diffed bit for bit."""

    def run(p, rng, vec):
        kwargs = op.generate(p, rng)
        for k in kwargs:
            if k in vec:
                kwargs[k] = np.asarray(vec[k])
        got = op.kernel(**kwargs)
        want = op.oracle(**kwargs)
        got_t, want_t = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        arrays, consts = _split_call(kwargs)
        names = ["output"] + [f"output{i}" for i in range(1, len(got_t))]
        out = Outcome(vectors={**arrays, **dict(zip(names, map(np.asarray, got_t)))}, constants=consts,
                      n_outputs=int(sum(np.size(g) for g in got_t)))
        for name, g, w in zip(names, got_t, want_t):
            out.checks.append(compare(np.asarray(w), np.asarray(g), f"oracle: {name}"))
        return out

    return run


@functools.cache
def vocabulary() -> dict:
    """The suite's ``op`` names: every registered operator (:mod:`dspsim.catalog`) as an :class:`Op`."""
    from ..catalog import operators

    vocab = {}
    for name, op in operators().items():
        if op.study is not None:
            st = STUDIES[op.study]
            vocab[name] = Op(name, st.run, st.defaults, st.choices, op.doc)
        elif op.generate is not None:
            vocab[name] = Op(name, _generic_run(op), dict(op.params), dict(op.choices), op.doc)
    return vocab
