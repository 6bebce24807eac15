"""Drift: how error grows over repeated quantize → dequantize cycles, and over requantizing layers.

TensorFlow's documentation says MIN_COMBINED introduces "a larger and larger error" over repeated
quantize/dequantize iterations. docs/semantics.md §1.8 found otherwise against TF 2.21: with the range kept
fixed, the codes are the same from the first cycle on (dequantize(quantize(x)) is a fixed point).
This module measures, with dspsim's bit-exact emulations, where error does grow and by how much:

Cycles (:func:`tf_chain`, :func:`affine_chain`): ``x_0`` is quantized and dequantized, the result
fed back, ``cycles`` times. Range policies (the names of ``tests/golden/drift_tf.npz``):

- ``fixed``: the range requested every cycle is ``[min(x_0), max(x_0)]``; dequantize with the
  range TF returns;
- ``returned``: cycle c+1 requests the range TF returned in cycle c;
- ``data``: cycle c+1 requests ``[min(dq_c), max(dq_c)]``, re-estimated from the data;
- ``fixed_dq_requested``: like ``fixed`` but dequantize with the *requested* range instead of the
  returned one (the misuse of docs/semantics.md §1.8 (c)).

Affine (PyTorch per-tensor, ONNX QuantizeLinear) and power-of-two chains take ``fixed`` (scale and
zero point from ``x_0``'s range) and ``data`` (re-derived from each cycle's result).

Depth (:func:`fc_chain`): ``depth`` int8 fully-connected layers with random float weights,
quantized per tensor; each layer's output scale is calibrated on the float chain. The integer chain
feeds each layer's int8 output to the next; the float chain runs in float64 on the same quantized
weights and biases and the same quantized input, so the only error is requantization. Chains:
identity activation and ReLU with calibrated scales (schemes ``double``, ``single``, ``fbgemm``,
``onnxruntime``, ``onnx-reference``, ``xnnpack``), and power-of-two scales where the multiplier is
an exact power of two, so every accumulator with the right low bits is a tie (schemes ``double``,
``single``, and shift-only DSP requantization with each tie rule).

Statistics per cycle / layer (:func:`error_stats`): bias (mean error), RMS and max |error| in real
units and in LSB, and the number of codes that changed from the previous cycle (0 for the first)
or that differ from the double-rounding chain.
"""
from __future__ import annotations

import numpy as np

TF_DRIFT_TYPES = ("qint8", "quint8", "qint16", "quint16", "qint32")
TF_DRIFT_MODES = (  # (mode, round_mode, narrow_range)
    ("MIN_COMBINED", "HALF_AWAY_FROM_ZERO", False),
    ("MIN_FIRST", "HALF_AWAY_FROM_ZERO", False),
    ("SCALED", "HALF_AWAY_FROM_ZERO", False),
    ("SCALED", "HALF_AWAY_FROM_ZERO", True),
    ("SCALED", "HALF_TO_EVEN", False),
    ("SCALED", "HALF_TO_EVEN", True),
)
TF_POLICIES = ("fixed", "returned", "data", "fixed_dq_requested")
CALIBRATED_SCHEMES = ("double", "single", "fbgemm", "onnxruntime", "onnx-reference", "xnnpack")
POF2_SCHEMES = ("double", "single", "shift/half_to_even", "shift/half_away_from_zero", "shift/half_up",
                "shift/floor")


def x0_default(n: int = 257, seed: int = 257) -> np.ndarray:
    """The default chain start: ``n`` float32 values uniform in [-1, 1.3] (as the TF golden file)."""
    return np.random.default_rng(seed).uniform(-1.0, 1.3, n).astype(np.float32)


# =============================================================================================
# cycles
# =============================================================================================
def tf_chain(x0, T, mode="MIN_COMBINED", policy="fixed", cycles=25, round_mode="HALF_AWAY_FROM_ZERO",
             narrow_range=False, ensure_minimum_range=0.01) -> dict:
    """Quantize → dequantize ``cycles`` times through dspsim's TF emulation.

    Returns ``{"q": (cycles, n), "dq": (cycles, n) float32, "min", "max" (requested, per cycle),
    "omin", "omax" (returned, per cycle)}`` laid out as ``tests/golden/drift_tf.npz``.
    """
    from dspsim import dequantize, quantize

    if policy not in TF_POLICIES:
        raise ValueError(f"tf_chain: policy must be one of {TF_POLICIES}, got {policy!r}")
    x = np.asarray(x0, dtype=np.float32)
    lo, hi = np.float32(x.min()), np.float32(x.max())
    qs, dqs, mins, maxs, omins, omaxs = [], [], [], [], [], []
    for _ in range(cycles):
        q, omin, omax = quantize(x, lo, hi, T, mode=mode, round_mode=round_mode, narrow_range=narrow_range,
                                 ensure_minimum_range=ensure_minimum_range)
        dq_lo, dq_hi = (lo, hi) if policy == "fixed_dq_requested" else (omin, omax)
        dq = np.asarray(dequantize(q, dq_lo, dq_hi, mode=mode, narrow_range=narrow_range, T=T), dtype=np.float32)
        qs.append(np.asarray(q))
        dqs.append(dq)
        mins.append(lo)
        maxs.append(hi)
        omins.append(np.float32(omin))
        omaxs.append(np.float32(omax))
        if policy == "returned":
            lo, hi = np.float32(omin), np.float32(omax)
        elif policy == "data":
            lo, hi = np.float32(dq.min()), np.float32(dq.max())
        x = dq
    return {"q": np.stack(qs), "dq": np.stack(dqs), "min": np.array(mins, np.float32),
            "max": np.array(maxs, np.float32), "omin": np.array(omins, np.float32),
            "omax": np.array(omaxs, np.float32)}


def affine_params(lo: float, hi: float, dtype: str = "int8") -> tuple[float, int]:
    """(scale, zero point) covering [min(lo, 0), max(hi, 0)] (PyTorch MinMaxObserver, asymmetric).

    ``scale = f32((max - min) / (qmax - qmin))``, ``zp = clamp(qmin - round_half_even(min / scale))``.
    """
    qmin, qmax = (-128, 127) if dtype == "int8" else (0, 255)
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = float(np.float32((hi - lo) / (qmax - qmin))) or 1.0
    zp = int(min(max(qmin - np.rint(lo / scale), qmin), qmax))
    return scale, zp


def affine_chain(x0, convention="torch", policy="fixed", cycles=25, dtype="int8") -> dict:
    """Quantize → dequantize cycles in PyTorch (per-tensor), ONNX or power-of-two convention.

    ``convention``: "torch" | "onnx" (asymmetric, :func:`affine_params`) | "pof2" (symmetric 8-bit,
    scale ``2^-f`` with f from :func:`dspsim.pof2_frac_bits`, ties to even). ``policy``: "fixed"
    (parameters from ``x0``) or "data" (re-derived from each cycle's input). Returns ``{"q", "dq",
    "scale", "zero_point"}`` (per cycle).
    """
    import dspsim

    if policy not in ("fixed", "data"):
        raise ValueError(f"affine_chain: policy must be 'fixed' or 'data', got {policy!r}")
    x = np.asarray(x0, dtype=np.float32)
    qs, dqs, scales, zps = [], [], [], []
    params = None
    for _ in range(cycles):
        if params is None or policy == "data":
            if convention == "pof2":
                f = int(dspsim.pof2_frac_bits(np.array([x.min(), x.max()], np.float64), 8, narrow_range=True))
                params = (2.0**-f, 0, f)
            else:
                params = affine_params(x.min(), x.max(), dtype)
        if convention == "torch":
            q = dspsim.quantize_per_tensor(x, params[0], params[1], dtype)
            dq = dspsim.dequantize_per_tensor(q, params[0], params[1])
        elif convention == "onnx":
            q = dspsim.quantize_linear(x, np.float32(params[0]), params[1], dtype=dtype)
            dq = dspsim.dequantize_linear(q, np.float32(params[0]), params[1])
        elif convention == "pof2":
            q = dspsim.quantize_pof2(x, params[2], 8)
            dq = dspsim.dequantize_pof2(q, params[2])
        else:
            raise ValueError(f"affine_chain: convention must be 'torch', 'onnx' or 'pof2', got {convention!r}")
        qs.append(np.asarray(q))
        dqs.append(np.asarray(dq, np.float32))
        scales.append(params[0])
        zps.append(params[1])
        x = dqs[-1]
    return {"q": np.stack(qs), "dq": np.stack(dqs), "scale": np.array(scales), "zero_point": np.array(zps)}


def error_stats(values, reference, lsb, codes=None) -> dict:
    """Per-row statistics of ``values - reference`` (rows = cycles or layers).

    ``lsb``: scalar or one per row. ``codes``: integer rows; ``codes_changed[i]`` counts the
    elements of row i that differ from row i-1 (0 for row 0).
    """
    v = np.asarray(values, np.float64)
    r = np.broadcast_to(np.asarray(reference, np.float64), v.shape)
    e = v - r
    lsb = np.broadcast_to(np.asarray(lsb, np.float64).reshape(-1, *([1] * (v.ndim - 1))) if np.ndim(lsb) else
                          np.float64(lsb), v.shape)
    el = e / lsb
    axes = tuple(range(1, v.ndim))

    def six(a):  # 6 significant digits: plenty for a report, and keeps results.json small
        return [float(f"{x:.6g}") for x in a]

    out = {
        "mean": six(e.mean(axis=axes)),
        "rms": six(np.sqrt((e**2).mean(axis=axes))),
        "max_abs": six(np.abs(e).max(axis=axes)),
        "mean_lsb": six(el.mean(axis=axes)),
        "rms_lsb": six(np.sqrt((el**2).mean(axis=axes))),
        "max_abs_lsb": six(np.abs(el).max(axis=axes)),
    }
    if codes is not None:
        c = np.asarray(codes).astype(np.int64)
        changed = [0] + [int(np.count_nonzero(c[i] != c[i - 1])) for i in range(1, len(c))]
        out["codes_changed"] = changed
    return out


def _tf_lsb(T, mode, omin, omax) -> float:
    tmin, tmax = {"qint8": (-128, 127), "quint8": (0, 255), "qint16": (-32768, 32767), "quint16": (0, 65535),
                  "qint32": (-(2**31), 2**31 - 1)}[T]
    return float(omax) / tmax if mode == "SCALED" else (float(omax) - float(omin)) / (float(tmax) - tmin)


def cycle_runs(x0, cycles: int, progress=None, starts=None) -> list:
    """Every TF mode x T x policy (for each start), and the affine / power-of-two chains.

    ``starts``: ``{label: x0}``; default ``x0`` (a range containing 0) and ``x0`` mapped onto
    [0.25, 1.3] (a range TF widens to include 0, so the requested and returned ranges differ).
    """
    if starts is None:
        x = np.asarray(x0, np.float64)
        pos = (0.25 + (x - x.min()) * (1.05 / max(float(x.max() - x.min()), 1e-30))).astype(np.float32)
        starts = {"x0 spans 0": np.asarray(x0, np.float32), "x0 > 0": pos}
    runs = []
    for start, xs in starts.items():
        for T in TF_DRIFT_TYPES:
            for mode, rm, narrow in TF_DRIFT_MODES:
                label = f"{mode}/{'HTE' if rm == 'HALF_TO_EVEN' else 'HAZ'}{'/narrow' if narrow else ''}"
                for policy in TF_POLICIES:
                    ch = tf_chain(xs, T, mode, policy, cycles, rm, narrow)
                    lsb = _tf_lsb(T, mode, ch["omin"][0], ch["omax"][0])
                    runs.append({"name": f"{label}/{T}", "family": "tf", "family_label": f"TF {label}",
                                 "start": start, "mode": mode, "T": T, "round_mode": rm, "narrow_range": narrow,
                                 "policy": policy, "n": int(len(xs)), "cycles": cycles, "lsb": lsb,
                                 "stats": error_stats(ch["dq"], xs, lsb, ch["q"])})
            if progress:
                progress(f"TF {T} ({start}): {len(TF_DRIFT_MODES) * len(TF_POLICIES)} chains")
    x0 = np.asarray(x0, np.float32)
    for conv, label in (("torch", "PyTorch per-tensor int8"), ("onnx", "ONNX QuantizeLinear int8"),
                        ("pof2", "power-of-two int8")):
        for policy in ("fixed", "data"):
            ch = affine_chain(x0, conv, policy, cycles)
            lsb = float(ch["scale"][0])
            runs.append({"name": label, "family": conv, "family_label": label, "start": "x0 spans 0",
                         "mode": conv, "T": "int8", "round_mode": "HALF_TO_EVEN", "narrow_range": conv == "pof2",
                         "policy": policy, "n": int(len(x0)), "cycles": cycles, "lsb": lsb,
                         "stats": error_stats(ch["dq"], x0, lsb, ch["q"])})
    if progress:
        progress("affine and power-of-two chains")
    return runs


# =============================================================================================
# depth: requantization chains
# =============================================================================================
def _quantize_sym(w):
    s = float(np.float32(np.max(np.abs(w)) / 127.0))
    return np.clip(np.rint(w / s), -127, 127).astype(np.int8), s


def _pof2_scale(max_abs: float, qmax: int) -> float:
    """The smallest power of two 2^-f with max_abs <= qmax * 2^-f."""
    return 2.0 ** -int(np.floor(np.log2(qmax / max_abs)))


def fc_chain(depth=16, width=64, batch=32, activation="none", scales="calibrated", seed=0, schemes=None) -> dict:
    """Chains of int8 FC layers, one per scheme, against the float chain (see the module docstring).

    Returns ``{"schemes": {name: {"stats": ..., "outputs": [(batch, width) int8 per layer]}},
    "float": [float64 per layer], "out_scale": [...], "out_zero_point": [...]}``.
    """
    import dspsim

    rng = np.random.default_rng(seed)
    relu = activation == "relu"
    pof2 = scales == "pof2"
    schemes = schemes or (POF2_SCHEMES if pof2 else CALIBRATED_SCHEMES)
    x_real = rng.normal(0.0, 1.0, (batch, width))
    ws = [rng.normal(0.0, (2.0 if relu else 1.0) / np.sqrt(width), (width, width)) for _ in range(depth)]
    bs = [rng.normal(0.0, 0.1, width) for _ in range(depth)]
    # input quantization (symmetric int8) and weights
    s_in0 = _pof2_scale(np.max(np.abs(x_real)), 127) if pof2 else float(np.float32(np.max(np.abs(x_real)) / 127))
    x_q0 = np.clip(np.rint(x_real / s_in0), -128, 127).astype(np.int8)
    layers = []
    y_cal = x_q0.astype(np.float64) * s_in0
    s_in, zp_in = s_in0, 0
    for w, b in zip(ws, bs):
        if pof2:
            s_w = _pof2_scale(np.max(np.abs(w)), 127)
            w_q = np.clip(np.rint(w / s_w), -127, 127).astype(np.int8)
        else:
            w_q, s_w = _quantize_sym(w)
        acc_scale = s_in * s_w
        b_q = np.rint(b / acc_scale).astype(np.int32)
        y_cal = y_cal @ (w_q.astype(np.float64) * s_w).T + b_q * acc_scale
        if relu:
            y_cal = np.maximum(y_cal, 0.0)
            top = max(float(y_cal.max()), 1e-6)
            s_out = _pof2_scale(top, 255) if pof2 else float(np.float32(top / 255))
            zp_out = -128
        else:
            top = max(float(np.abs(y_cal).max()), 1e-6)
            s_out = _pof2_scale(top, 127) if pof2 else float(np.float32(top / 127))
            zp_out = 0
        layers.append({"w": w_q, "s_w": s_w, "b": b_q, "s_in": s_in, "zp_in": zp_in, "s_out": s_out, "zp_out": zp_out})
        s_in, zp_in = s_out, zp_out
    # the float chain: exact arithmetic on the quantized weights, biases and input
    floats = []
    y = x_q0.astype(np.float64) * s_in0
    for L in layers:
        y = y @ (L["w"].astype(np.float64) * L["s_w"]).T + L["b"] * (L["s_in"] * L["s_w"])
        if relu:
            y = np.maximum(y, 0.0)
        floats.append(y)
    out = {"float": floats, "out_scale": [L["s_out"] for L in layers],
           "out_zero_point": [L["zp_out"] for L in layers], "schemes": {}}
    for scheme in schemes:
        x_q = x_q0
        outs = []
        for L in layers:
            act_min = L["zp_out"] if relu else -128
            common = dict(input_zero_point=L["zp_in"], output_zero_point=L["zp_out"], act_min=act_min, act_max=127)
            real = L["s_in"] * L["s_w"] / L["s_out"]
            if scheme in ("double", "single"):
                m, s = dspsim.quantize_multiplier(real)
                x_q = dspsim.fully_connected(x_q, L["w"], L["b"], multiplier=int(m), shift=int(s), rounding=scheme,
                                             **common)
            elif scheme.startswith("shift/"):
                k = int(np.round(np.log2(real)))  # exact: every scale is a power of two
                x_q = dspsim.fully_connected(x_q, L["w"], L["b"], requant="shift", shift=k,
                                             tie=scheme.split("/", 1)[1], **common)
            else:
                x_q = dspsim.fully_connected(x_q, L["w"], L["b"], input_scale=L["s_in"], weight_scale=L["s_w"],
                                             output_scale=L["s_out"], requant=scheme, **common)
            outs.append(np.asarray(x_q))
        real_out = np.stack([(o.astype(np.float64) - L["zp_out"]) * L["s_out"] for o, L in zip(outs, layers)])
        stats = error_stats(real_out, np.stack(floats), np.array(out["out_scale"]))
        out["schemes"][scheme] = {"stats": stats, "outputs": outs}
    base = out["schemes"].get("double")
    for sch in out["schemes"].values():
        sch["stats"]["differ_from_double"] = (
            [int(np.count_nonzero(a != b)) for a, b in zip(sch["outputs"], base["outputs"])] if base else [])
    return out


def depth_runs(depth: int, progress=None) -> list:
    runs = []
    for chain, activation, scales in (("FC, calibrated scales", "none", "calibrated"),
                                      ("FC+ReLU, calibrated scales", "relu", "calibrated"),
                                      ("FC, power-of-two scales", "none", "pof2")):
        res = fc_chain(depth=depth, activation=activation, scales=scales)
        for scheme, r in res["schemes"].items():
            runs.append({"name": f"{chain}: {scheme}", "chain": chain, "scheme": scheme, "width": 64, "batch": 32,
                         "depth": depth, "stats": r["stats"]})
        if progress:
            progress(f"depth chain '{chain}': {len(res['schemes'])} schemes x {depth} layers")
    return runs


# =============================================================================================
def _growth(r) -> str:
    st = r["stats"]
    return (f"RMS {st['rms_lsb'][0]:.3g} → {st['rms_lsb'][-1]:.3g} LSB, bias {st['mean_lsb'][0]:+.3g} → "
            f"{st['mean_lsb'][-1]:+.3g} LSB over {r['cycles']} cycles")


def _findings(cycles: list, depth: list) -> list:
    f = []
    tf = [r for r in cycles if r["family"] == "tf"]
    narrow_t = [r for r in tf if r["T"] != "qint32"]
    for policy in TF_POLICIES:
        runs = [r for r in narrow_t if r["policy"] == policy]
        moving = [r for r in runs if sum(r["stats"]["codes_changed"][1:])]
        line = (f"TF 8/16-bit, policy `{policy}`: codes change after cycle 1 in {len(moving)} of {len(runs)} "
                f"runs")
        if moving:
            g = max(moving, key=lambda r: r["stats"]["rms_lsb"][-1] - r["stats"]["rms_lsb"][0])
            modes = sorted({r["mode"] for r in moving})
            line += f" ({', '.join(modes)}; start {', '.join(sorted({r['start'] for r in moving}))}); worst " \
                    f"{g['name']} ({g['start']}): {_growth(g)}"
        else:
            line += " (dequantize(quantize(x)) is a fixed point from cycle 1 on, docs/semantics.md §1.8)"
        f.append(line + ".")
    q32 = [r for r in tf if r["T"] == "qint32" and sum(r["stats"]["codes_changed"][1:])]
    if q32:
        pure = [r for r in q32 if r["mode"] == "MIN_FIRST" and r["policy"] == "fixed" and r["start"] == "x0 spans 0"]
        g = pure[0] if pure else q32[0]
        f.append(f"TF qint32: codes keep changing in {len(q32)} runs: a 32-bit code has more bits than the float32 "
                 f"that carries it, so dequantize → quantize is not a fixed point; {g['name']} {g['policy']} "
                 f"({g['start']}): {_growth(g)} (RMS {g['stats']['rms'][0]:.3g} → {g['stats']['rms'][-1]:.3g} in "
                 f"real units). MIN_COMBINED/SCALED also wrap x >= max to INT32_MIN (docs/semantics.md §1.2), a full-range "
                 f"error on those elements.")
    q8 = [r for r in tf if r["T"] == "qint8" and r["policy"] == "fixed" and r["start"] == "x0 spans 0"]
    if q8:
        f.append("TF qint8, range fixed, bias (mean error) by mode: "
                 + "; ".join(f"{r['name'].rsplit('/', 1)[0]} {r['stats']['mean_lsb'][0]:+.4f} LSB" for r in q8) + ".")
    for r in cycles:
        if r["family"] != "tf" and r["policy"] == "data":
            st = r["stats"]
            f.append(f"{r['name']}, parameters re-derived each cycle: {_growth(r)}, "
                     f"{sum(st['codes_changed'][1:])} code changes after cycle 1.")
    chains = {}
    for r in depth:
        chains.setdefault(r["chain"], []).append(r)
    for chain, runs in chains.items():
        parts = [f"{r['scheme']} {r['stats']['rms_lsb'][-1]:.2f} ({r['stats']['mean_lsb'][-1]:+.2f}, "
                 f"{r['stats']['differ_from_double'][-1]} ≠ double)" for r in runs]
        f.append(f"{chain}, RMS error (bias, outputs differing from double) after {runs[0]['depth']} layers, "
                 f"LSB: " + "; ".join(parts) + ".")
    return f


def run_drift(cycles: int = 25, depth: int = 16, n: int = 257, seed: int = 257, progress=None) -> dict:
    """Every cycle run and depth chain; returns the ``results.json`` dict (without ``run``)."""
    x0 = x0_default(n, seed)
    cyc = cycle_runs(x0, cycles, progress)
    dep = depth_runs(depth, progress)
    return {"schema": "dspsim.drift/1", "kind": "drift", "x0": {"n": n, "seed": seed, "low": -1.0, "high": 1.3},
            "cycles": cyc, "depth": dep, "findings": _findings(cyc, dep)}
