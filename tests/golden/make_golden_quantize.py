"""Regenerate the quantize/dequantize golden vectors from the real engines.

Run from the repository root, in an environment with tensorflow-cpu, torch==2.13.0, onnx,
onnxruntime and ai-edge-litert::

    python tests/golden/make_golden_quantize.py            # every file
    python tests/golden/make_golden_quantize.py tf torch   # a subset: tf torch onnx tflite drift
    python tests/golden/make_golden_quantize.py --onednn-diff   # finding only, writes nothing

Writes ``tests/golden/quantize_{tf,torch,onnx,tflite}.npz`` and ``tests/golden/drift_tf.npz``; the
key scheme of each file is described in ``tests/golden/README.md``.  Generation is deterministic
(fixed seeds, no threading-dependent choices).  Heavy imports happen inside the engine functions so
that importing this module is cheap; pytest never collects it (no ``test_`` prefix).
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
F32 = np.float32

TF_T = {"qint8": (np.int8, 8, True), "quint8": (np.uint8, 8, False), "qint16": (np.int16, 16, True),
        "quint16": (np.uint16, 16, False), "qint32": (np.int32, 32, True)}
PLAIN = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32}
TF_MODES = ("MIN_COMBINED", "MIN_FIRST", "SCALED")
HAZ, HTE = "HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN"


class Store:
    """Cases of one engine, packed: every array field of every case is appended to one flat array per
    (field, dtype), saved as ``"{field}.{dtype}"``; case metadata (one JSON list) records, per field,
    ``[key, start, shape]`` (see README.md).  Packing keeps the zip small: thousands of tiny .npy
    members would cost ~250 bytes of headers each."""

    def __init__(self):
        self.meta = []
        self.parts = {}
        self.sizes = {}

    def add(self, meta, **arrays):
        idx = len(self.meta)
        meta = dict(meta, idx=idx, arrays={})
        for field, v in arrays.items():
            v = np.asarray(v)
            key = f"{field}.{v.dtype.name}"
            start = self.sizes.get(key, 0)
            self.parts.setdefault(key, []).append(v.ravel())
            self.sizes[key] = start + v.size
            meta["arrays"][field] = [key, start, list(v.shape)]
        self.meta.append(meta)
        return idx

    def save(self, name, versions, **extra):
        path = os.path.join(HERE, name)
        packed = {k: np.concatenate(v) for k, v in self.parts.items()}
        np.savez_compressed(path, meta=np.array(json.dumps(self.meta)),
                            versions=np.array(json.dumps(versions)), **packed, **extra)
        print(f"wrote {path}: {len(self.meta)} cases, {os.path.getsize(path)} bytes")


def load(path):
    """(meta list, versions dict, per-case array getter) of a file written by :class:`Store`."""
    z = dict(np.load(path))
    meta = json.loads(str(z["meta"]))

    def arrays(m):
        out = {}
        for field, (key, start, shape) in m["arrays"].items():
            n = int(np.prod(shape))
            out[field] = z[key][start:start + n].reshape(shape)
        return out
    return meta, json.loads(str(z["versions"])), arrays


def base_versions():
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    flags = " ".join(x for x in ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni")
                                     if x in have)
                    break
    except OSError:
        pass
    return {"python": platform.python_version(), "numpy": np.__version__,
            "machine": platform.machine(), "cpu_flags": flags}


def scatter(rng, n, specials, ties, lo, hi):
    """n float32 values: uniform over [lo, hi] widened by 15 %, with specials and ties at random places."""
    lo, hi = float(lo), float(hi)
    w = hi - lo
    if not w > 0:
        w = max(abs(lo), abs(hi), 1e-3)
    x = rng.uniform(lo - 0.15 * w, hi + 0.15 * w, n)
    specials = list(specials)[: max(1, n // 4)]
    with np.errstate(over="ignore"):
        t32 = np.asarray(ties, np.float64).astype(F32)
    near = t32[: len(t32) // 3]                      # one float32 step either side of a tie
    ties = np.concatenate([t32, np.nextafter(near, F32(np.inf)), np.nextafter(near, F32(-np.inf))])
    ties = ties[np.isfinite(ties)].astype(np.float64)
    if len(ties) > n // 2:
        ties = rng.choice(ties, n // 2, replace=False)
    fill = np.concatenate([np.asarray(specials, np.float64), ties])
    pos = rng.permutation(n)[: len(fill)]
    x[pos] = fill
    with np.errstate(over="ignore"):
        return x.astype(F32)


# --------------------------------------------------------------------------------------------------
# TensorFlow QuantizeV2 / Dequantize
# --------------------------------------------------------------------------------------------------

def f32_adjust(lo, hi, emr):
    """SEMANTICS 1.1 in float32 (only to aim tie values; TF's own output is what gets stored)."""
    lo, hi, emr = F32(lo), F32(hi), F32(emr)
    mn = min(F32(0), lo)
    eps = F32(max(F32(1), max(abs(lo), abs(hi))) * emr)
    mx = max(F32(0), max(hi, F32(mn + eps)))
    return mn, mx


def tie_points(rng, mode, T, lo, hi, emr, narrow, count=60):
    """Float values whose pre-rounding value is (close to) k + 0.5, and exact grid points."""
    dt, bits, signed = TF_T[T]
    info = np.iinfo(dt)
    with np.errstate(all="ignore"):
        mn, mx = f32_adjust(lo, hi, 0.01 if emr is None else emr)
        levels = 2.0 ** bits - 1
        if mode == "SCALED":
            lo_q = float(info.min) + (1 if narrow else 0)
            hi_q = float(info.max)
            s_min = lo_q / float(mn) if lo_q * float(mn) > 0 else np.inf
            s_max = hi_q / float(mx) if hi_q * float(mx) > 0 else np.inf
            step = 1.0 / min(s_min, s_max)
            origin, kmin, kmax = 0.0, info.min, info.max
        else:
            width = float(F32(mx - mn))
            if not width > 0:
                return []
            step = width / levels
            if mode == "MIN_COMBINED":
                origin, kmin, kmax = float(mn), 0, levels
            else:
                origin = np.round(float(mn) / step) * step
                kmin, kmax = 0, levels
    if not (np.isfinite(step) and step > 0):
        return []
    if bits <= 16:
        ks = rng.integers(int(kmin) - 2, int(kmax) + 2, count)
    else:
        ks = np.concatenate([rng.integers(int(kmin), int(kmax), count - 6),
                             [kmin - 1, kmin, kmin + 1, kmax - 2, kmax - 1, kmax]]).astype(np.float64)
    half = np.where(np.arange(len(ks)) % 4 == 3, 0.0, 0.5)     # every 4th value: a grid point
    with np.errstate(all="ignore"):
        v = origin + (ks.astype(np.float64) + half) * step
    return v[np.isfinite(v) & (np.abs(v) < 3e38)]


def tf_specials(lo, hi, emr):
    mn, mx = f32_adjust(lo, hi, 0.01 if emr is None else emr)
    return [0.0, -0.0, lo, hi, float(mn), float(mx), lo - 1.0, hi + 1.0, 2.0 * hi + 1.0,
            -2.0 * abs(lo) - 1.0, 1e-40, -1e-40, 1.5e-38, -3e38, 3e38, np.inf, -np.inf]


def tf_scale_finite(mode, T, lo, hi, emr, narrow):
    """False when the float32 scale overflows (SEMANTICS 1.7: no defined code then)."""
    dt, bits, _ = TF_T[T]
    mn, mx = f32_adjust(lo, hi, 0.01 if emr is None else emr)
    with np.errstate(all="ignore"):
        if mode == "SCALED":                       # SEMANTICS 1.4, float32
            info = np.iinfo(dt)
            lo_q, hi_q = F32(info.min + (1 if narrow else 0)), F32(info.max)
            s_min = F32(lo_q / mn) if lo_q * mn > 0 else np.finfo(F32).max
            s_max = F32(hi_q / mx) if hi_q * mx > 0 else np.finfo(F32).max
            return bool(np.isfinite(min(s_min, s_max)))
        width = F32(mx - mn)
        return bool(np.isfinite(F32(np.float64(2.0 ** bits - 1) / np.float64(width))))


class TF:
    def __init__(self):
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "0")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf
        tf.get_logger().setLevel("ERROR")
        self.tf = tf
        self.T = {"qint8": tf.qint8, "quint8": tf.quint8, "qint16": tf.qint16, "quint16": tf.quint16,
                  "qint32": tf.qint32}

    def quantize(self, x, lo, hi, T, mode, rm, narrow, axis, emr):
        tf = self.tf
        kw = dict(mode=mode, round_mode=rm, narrow_range=narrow, axis=axis)
        if emr is not None:
            kw["ensure_minimum_range"] = float(emr)
        r = tf.quantization.quantize(tf.constant(x), tf.constant(lo), tf.constant(hi), self.T[T], **kw)
        q = np.asarray(r.output.numpy()).view(TF_T[T][0])
        return q, r.output_min.numpy().astype(F32), r.output_max.numpy().astype(F32)

    def dequantize(self, q, lo, hi, T, mode, narrow, axis):
        tf = self.tf
        d = tf.quantization.dequantize(tf.constant(q, dtype=self.T[T]), tf.constant(lo),
                                       tf.constant(hi), mode=mode, narrow_range=narrow, axis=axis)
        return d.numpy().astype(F32)

    def refusal(self, fn, *a):
        try:
            fn(*a)
        except (self.tf.errors.OpError, ValueError, TypeError) as e:
            return type(e).__name__
        return None


TF_RANGES = [(-1.0, 1.0), (0.0, 255.0), (-128.0, 127.0), (0.0, 6.0), (-10.0, 9.0), (0.5, 1.0),
             (-3.0, -1.0), (0.0, 0.0), (0.0, 0.001), (-1e-30, 1e-30), (-1e30, 1e30), (0.0, 65535.0),
             (-32768.0, 32767.0), (-2.5, 7.75), (-0.75, 0.25), (-6.0, 0.0), (0.0, 1.0), (-1.0, 0.0625)]
TF_EMR_RANGES = [(-1.0, 1.0), (0.0, 0.0), (0.0, 0.001), (-1e-30, 1e-30), (-3.0, -1.0), (0.5, 1.0),
                 (-1e30, 1e30), (0.0, 255.0)]
TF_EMRS = [0.0, 5.0]


def tf_combos():
    for mode in TF_MODES:
        for T in TF_T:
            for rm in ((HAZ, HTE) if mode == "SCALED" else (HAZ,)):
                for narrow in (False, True):
                    yield mode, T, rm, narrow


def consistent_elements(eng, x, lo, hi, T, mode, rm, narrow, emr, q):
    """Indices whose code is the same when the element is quantized alone (scalar Eigen path) and
    when the array is reversed (vector body <-> scalar tail).  Everything else is engine-undefined."""
    keep = np.ones(x.size, bool)
    qr = eng.quantize(x[::-1].copy(), lo, hi, T, mode, rm, narrow, None, emr)[0][::-1]
    keep &= qr == q
    special = ~np.isfinite(x) | (np.abs(x) > 1e30) | (np.abs(x) < 1e-37)
    for i in np.flatnonzero(special):
        qi = eng.quantize(x[i:i + 1].copy(), lo, hi, T, mode, rm, narrow, None, emr)[0]
        keep[i] &= qi[0] == q[i]
    return keep


def gen_tf(versions_out):
    eng = TF()
    rng = np.random.default_rng(20261130)
    st = Store()
    dropped = []
    lengths = [37, 100, 37, 53, 100, 37, 19]

    def per_tensor(name, mode, T, rm, narrow, lo, hi, emr, n):
        lo32, hi32 = F32(lo), F32(hi)
        if not tf_scale_finite(mode, T, lo32, hi32, emr, narrow):
            dropped.append(f"{name}: float32 scale overflows (no defined code)")
            return
        x = scatter(rng, n, tf_specials(float(lo32), float(hi32), emr),
                    tie_points(rng, mode, T, lo32, hi32, emr, narrow), lo, hi)
        q, omin, omax = eng.quantize(x, lo32, hi32, T, mode, rm, narrow, None, emr)
        keep = consistent_elements(eng, x, lo32, hi32, T, mode, rm, narrow, emr, q)
        if not keep.all():
            dropped.append(f"{name}: {int((~keep).sum())} position-dependent elements removed")
            x = x[keep]
            q, omin, omax = eng.quantize(x, lo32, hi32, T, mode, rm, narrow, None, emr)
        dq = eng.dequantize(q, omin, omax, T, mode, narrow, None)
        st.add(dict(kind="quantize", name=name, mode=mode, T=T, round_mode=rm, narrow_range=narrow,
                    axis=None, ensure_minimum_range=None if emr is None else float(F32(emr)),
                    n=int(x.size)),
               x=x, min=lo32, max=hi32, q=q, omin=omin, omax=omax, dq=dq)

    k = 0
    for mode, T, rm, narrow in tf_combos():
        tag = f"{mode}/{T}/{'HTE' if rm == HTE else 'HAZ'}/{'narrow' if narrow else 'full'}"
        for lo, hi in TF_RANGES:
            n = 1001 if (lo, hi) == (-2.5, 7.75) else lengths[k % len(lengths)]
            k += 1
            per_tensor(f"{tag}/[{lo:g},{hi:g}]/n{n}", mode, T, rm, narrow, lo, hi, None, n)
        for emr in TF_EMRS:
            for lo, hi in TF_EMR_RANGES:
                n = lengths[k % len(lengths)]
                k += 1
                per_tensor(f"{tag}/[{lo:g},{hi:g}]/emr{emr:g}/n{n}", mode, T, rm, narrow, lo, hi, emr, n)

        # per-channel: non-last axis, last axis, middle axis of a 3-D tensor, 1-element axes
        chan = [
            ("axis0", (3, 37), 0, [(-1.0, 1.0), (0.0, 6.0), (-3.0, -1.0)], None),
            ("axis-1", (23, 4), -1, [(-1.0, 1.0), (0.0, 0.001), (-10.0, 9.0), (0.0, 255.0)], None),
            ("axis1of3", (2, 5, 11), 1, [(-1.0, 1.0), (-0.5, 2.0), (0.0, 0.0), (-7.0, 7.0), (0.25, 0.5)],
             0.01),
            ("axis1emr0", (4, 3), 1, [(-1.0, 1.0), (-1e-30, 1e-30) if T != "qint32" else (-1e-20, 1e-20),
                                      (0.5, 1.0)], 0.0),
            ("axis0len1", (1, 100), 0, [(-2.5, 7.75)], None),
            ("axis-1len1", (100, 1), -1, [(-0.75, 0.25)], None),
        ]
        for cname, shape, axis, ranges, emr in chan:
            ax = axis % len(shape)
            lo = np.array([r[0] for r in ranges], F32)
            hi = np.array([r[1] for r in ranges], F32)
            x = np.empty(shape, F32)
            for c, (a, b) in enumerate(ranges):
                sl = [slice(None)] * len(shape)
                sl[ax] = c
                m = x[tuple(sl)].size
                sp = [v for v in tf_specials(a, b, emr) if np.isfinite(v) and 1e-37 < abs(v) < 1e30]
                x[tuple(sl)] = scatter(rng, m, sp, tie_points(rng, mode, T, a, b, emr, narrow), a, b
                                       ).reshape(x[tuple(sl)].shape)
            name = f"{tag}/{cname}{shape}"
            meta = dict(mode=mode, T=T, round_mode=rm, narrow_range=narrow, axis=axis,
                        ensure_minimum_range=emr, n=int(x.size), name=name)
            err = eng.refusal(eng.quantize, x, lo, hi, T, mode, rm, narrow, axis, emr)
            if err:
                st.add(dict(meta, kind="quantize_refused", error=err), x=x, min=lo, max=hi)
                continue
            q, omin, omax = eng.quantize(x, lo, hi, T, mode, rm, narrow, axis, emr)
            dq = eng.dequantize(q, omin, omax, T, mode, narrow, axis)
            st.add(dict(meta, kind="quantize"), x=x, min=lo, max=hi, q=q, omin=omin, omax=omax, dq=dq)

    # refusals that are not covered above
    x = scatter(rng, 37, [], [], -1, 1)
    for mode in TF_MODES:
        for T in TF_T:
            if mode != "SCALED":
                e = eng.refusal(eng.quantize, x, F32(-1), F32(1), T, mode, HTE, False, None, None)
                st.add(dict(kind="quantize_refused", name=f"{mode}/{T}/HTE", mode=mode, T=T,
                            round_mode=HTE, narrow_range=False, axis=None, ensure_minimum_range=None,
                            error=e, n=37), x=x, min=F32(-1), max=F32(1))
        for T in ("qint8", "quint16"):
            e = eng.refusal(eng.quantize, x, F32(1), F32(-1), T, mode, HAZ, False, None, None)
            st.add(dict(kind="quantize_refused", name=f"{mode}/{T}/max<min", mode=mode, T=T,
                        round_mode=HAZ, narrow_range=False, axis=None, ensure_minimum_range=None,
                        error=e, n=37), x=x, min=F32(1), max=F32(-1))
        x2 = scatter(rng, 12, [], [], -1, 1).reshape(3, 4)
        for lo, hi, why in [([-1, -1], [1, 1], "min/max count != dim(axis)"),
                            ([-1, 2, -1], [1, 1, 1], "max<min in one slice")]:
            lo, hi = np.array(lo, F32), np.array(hi, F32)
            e = eng.refusal(eng.quantize, x2, lo, hi, "qint8", mode, HAZ, False, 0, None)
            st.add(dict(kind="quantize_refused", name=f"{mode}/qint8/axis0/{why}", mode=mode, T="qint8",
                        round_mode=HAZ, narrow_range=False, axis=0, ensure_minimum_range=None,
                        error=e, n=12), x=x2, min=lo, max=hi)
        e = eng.refusal(eng.quantize, x2, np.array([-1, -1, -1], F32), np.array([1, 1, 1], F32),
                        "qint8", mode, HAZ, False, None, None)
        st.add(dict(kind="quantize_refused", name=f"{mode}/qint8/3 ranges without axis", mode=mode,
                    T="qint8", round_mode=HAZ, narrow_range=False, axis=None, ensure_minimum_range=None,
                    error=e, n=12), x=x2, min=np.array([-1, -1, -1], F32), max=np.array([1, 1, 1], F32))

    # dequantize of arbitrary codes with raw (unadjusted) ranges
    dq_ranges = [(-1.0, 1.0), (0.0, 6.0), (-3.0, -1.0), (0.5, 1.0), (0.0, 0.0), (-1e-30, 1e-30),
                 (-10.0, 9.921875), (2.0, 1.0), (-1e30, 1e30)]
    for mode in TF_MODES:
        for T, (dt, bits, signed) in TF_T.items():
            info = np.iinfo(dt)
            if bits == 8:
                codes = np.arange(info.min, info.max + 1)
            elif bits == 16:
                codes = np.concatenate([np.arange(info.min, info.min + 40), np.arange(info.max - 40, info.max + 1),
                                        rng.integers(info.min, info.max + 1, 220), np.arange(-20, 20) + (0 if signed else 32768)])
            else:
                edge = [info.min, info.min + 1, info.min + 2, info.max - 2, info.max - 1, info.max, 0, 1, -1,
                        2 ** 24, 2 ** 24 + 1, -(2 ** 24) - 1, 2 ** 30, -(2 ** 30) - 1]
                codes = np.concatenate([edge, rng.integers(info.min, info.max + 1, 90)])
            codes = codes.astype(dt)
            for narrow in (False, True):
                for lo, hi in dq_ranges:
                    lo32, hi32 = F32(lo), F32(hi)
                    name = f"{mode}/{T}/{'narrow' if narrow else 'full'}/dq[{lo:g},{hi:g}]"
                    meta = dict(name=name, mode=mode, T=T, narrow_range=narrow, axis=None,
                                n=int(codes.size))
                    e = eng.refusal(eng.dequantize, codes, lo32, hi32, T, mode, narrow, None)
                    if e:
                        st.add(dict(meta, kind="dequantize_refused", error=e), q=codes, min=lo32, max=hi32)
                        continue
                    d = eng.dequantize(codes, lo32, hi32, T, mode, narrow, None)
                    rev = eng.dequantize(codes[::-1].copy(), lo32, hi32, T, mode, narrow, None)[::-1]
                    if not np.array_equal(d.view(np.uint32), rev.view(np.uint32)):
                        dropped.append(f"{name}: position-dependent dequantize, case dropped")
                        continue
                    st.add(dict(meta, kind="dequantize"), q=codes, min=lo32, max=hi32, dq=d)
                # per-channel dequantize (axis 0 of (3, m)); MIN_FIRST is refused by TF
                m = min(codes.size // 3, 60)     # rows: lowest codes, highest codes, random codes
                q3 = codes[np.r_[0:m, codes.size - m:codes.size, rng.integers(0, codes.size, m)]].reshape(3, m)
                lo3, hi3 = np.array([-1, 0, -3], F32), np.array([1, 6, -1], F32)
                name = f"{mode}/{T}/{'narrow' if narrow else 'full'}/dq axis0"
                meta = dict(name=name, mode=mode, T=T, narrow_range=narrow, axis=0, n=int(q3.size))
                e = eng.refusal(eng.dequantize, q3, lo3, hi3, T, mode, narrow, 0)
                if e:
                    st.add(dict(meta, kind="dequantize_refused", error=e), q=q3, min=lo3, max=hi3)
                else:
                    st.add(dict(meta, kind="dequantize"), q=q3, min=lo3, max=hi3,
                           dq=eng.dequantize(q3, lo3, hi3, T, mode, narrow, 0))

    v = dict(versions_out, tensorflow=eng.tf.__version__,
             TF_ENABLE_ONEDNN_OPTS=os.environ["TF_ENABLE_ONEDNN_OPTS"])
    st.save("quantize_tf.npz", v, dropped=np.array(json.dumps(dropped)))
    for d in dropped:
        print("  dropped:", d)


def gen_drift(versions_out):
    eng = TF()
    rng = np.random.default_rng(257)
    x0 = rng.uniform(-1.0, 1.3, 257).astype(F32)
    cycles = 30
    st = Store()
    lo0, hi0 = F32(x0.min()), F32(x0.max())
    for mode in TF_MODES:
        for T in ("qint8", "quint8", "qint16"):
            for narrow in (False, True):
                for policy in ("fixed", "returned", "data", "fixed_dq_requested"):
                    x = x0
                    lo, hi = lo0, hi0
                    Q, D, LO, HI, OLO, OHI = [], [], [], [], [], []
                    for _ in range(cycles):
                        q, omin, omax = eng.quantize(x, lo, hi, T, mode, HAZ, narrow, None, None)
                        if policy == "fixed_dq_requested":
                            d = eng.dequantize(q, lo, hi, T, mode, narrow, None)
                        else:
                            d = eng.dequantize(q, omin, omax, T, mode, narrow, None)
                        Q.append(q), D.append(d), LO.append(lo), HI.append(hi), OLO.append(omin), OHI.append(omax)
                        x = d
                        if policy == "returned":
                            lo, hi = omin, omax
                        elif policy == "data":
                            lo, hi = F32(d.min()), F32(d.max())
                    st.add(dict(name=f"{mode}/{T}/{'narrow' if narrow else 'full'}/{policy}", mode=mode,
                                T=T, narrow_range=narrow, policy=policy, cycles=cycles,
                                round_mode=HAZ, ensure_minimum_range=None),
                           q=np.stack(Q), dq=np.stack(D), min=np.array(LO, F32), max=np.array(HI, F32),
                           omin=np.array(OLO, F32), omax=np.array(OHI, F32))
    v = dict(versions_out, tensorflow=eng.tf.__version__,
             TF_ENABLE_ONEDNN_OPTS=os.environ["TF_ENABLE_ONEDNN_OPTS"])
    st.save("drift_tf.npz", v, x0=x0)


def onednn_diff():
    """Re-run quantize_tf.npz's cases with oneDNN on (in a child process) and print differences."""
    if os.environ.get("TF_ENABLE_ONEDNN_OPTS") != "1":
        env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1")
        sys.exit(subprocess.call([sys.executable, os.path.abspath(__file__), "--onednn-diff"], env=env))
    eng = TF()
    meta, _, arrays = load(os.path.join(HERE, "quantize_tf.npz"))
    stats = {}
    for m in meta:
        if m["kind"] != "quantize":
            continue
        a = arrays(m)
        key = f"{m['mode']}/{m['T']}/{m['round_mode'][5:8]}/{'axis' if m['axis'] is not None else 'tensor'}"
        st = stats.setdefault(key, dict(cases=0, q_cases=0, q_elems=0, elems=0, range_cases=0,
                                        dq_cases=0, dq_errors=0, examples=[]))
        st["cases"] += 1
        st["elems"] += a["x"].size
        try:
            q, omin, omax = eng.quantize(a["x"], a["min"], a["max"], m["T"], m["mode"], m["round_mode"],
                                         m["narrow_range"], m["axis"], m["ensure_minimum_range"])
        except eng.tf.errors.OpError as e:
            st["q_errors"] = st.get("q_errors", 0) + 1
            st["q_error"] = type(e).__name__
            continue
        nq = int((q != a["q"]).sum())
        st["q_cases"] += nq > 0
        st["q_elems"] += nq
        st["range_cases"] += not (np.array_equal(omin, a["omin"]) and np.array_equal(omax, a["omax"]))
        if nq and len(st["examples"]) < 2:
            i = np.flatnonzero(q.ravel() != a["q"].ravel())[0]
            st["examples"].append(f"{m['name']}: x={a['x'].ravel()[i]!r} eigen={a['q'].ravel()[i]} "
                                  f"onednn={q.ravel()[i]}")
        try:
            dq = eng.dequantize(a["q"], a["omin"], a["omax"], m["T"], m["mode"], m["narrow_range"], m["axis"])
            st["dq_cases"] += bool((dq.view(np.uint32) != a["dq"].view(np.uint32)).any())
        except eng.tf.errors.OpError:
            st["dq_errors"] += 1
    for key, st in sorted(stats.items()):
        ex = st.pop("examples")
        print(key, st)
        for e in ex:
            print("    ", e)


# --------------------------------------------------------------------------------------------------
# PyTorch quantize_per_tensor / quantize_per_channel
# --------------------------------------------------------------------------------------------------

TORCH_DT = {"quint8": ("uint8", np.uint8), "qint8": ("int8", np.int8), "qint32": ("int32", np.int32)}


def affine_ties(rng, scale, zp, dt, count=40, inv=None):
    """x with x/scale (or x*f32(1/scale)) exactly or nearly k + 0.5, k over the code range ± 2."""
    info = np.iinfo(dt)
    if info.bits <= 16:
        ks = rng.integers(info.min - zp - 2, info.max - zp + 2, count).astype(np.float64)
    else:
        ks = np.concatenate([rng.integers(-(2 ** 24), 2 ** 24, count // 2),
                             rng.integers(info.min, info.max, count // 4)]).astype(np.float64)
    v = [(ks + 0.5) * scale]
    if inv is not None:             # x with f32(x * inv) == k + 0.5 exactly (torch's reciprocal)
        v.append((ks[: count // 2] + 0.5) / float(inv))
    v = np.concatenate(v)
    return v[np.abs(v) < 3e38]


def gen_torch(versions_out):
    import torch
    torch.backends.quantized.engine = "fbgemm"
    TQ = {"quint8": torch.quint8, "qint8": torch.qint8, "qint32": torch.qint32}
    rng = np.random.default_rng(613)
    st = Store()
    dropped = []
    scales = [1.0, 0.5, 0.25, 0.1, 0.00214854861, 1 / 255, 0.02, 3.7, 2.0 ** -10, 1e-5, 1e4, 0.0078125,
              0.3333333333333333]
    zps = {"quint8": [0, 3, 128, 255, 77], "qint8": [0, -128, 127, 3, -5], "qint32": [0, 3, -7, 1000]}
    lengths = [37, 100, 15, 33, 1001, 17, 100, 37]
    k = 0

    def q_pt(x, s, z, T):
        return torch.quantize_per_tensor(torch.from_numpy(x), s, z, TQ[T])

    for T, (dname, dt) in TORCH_DT.items():
        info = np.iinfo(dt)
        for s in scales:
            for z in zps[T]:
                n = lengths[k % len(lengths)]
                k += 1
                inv = F32(1.0) / F32(s)
                lo = (info.min - z) * s if info.bits <= 16 else -(2.0 ** 26) * s
                hi = (info.max - z) * s if info.bits <= 16 else (2.0 ** 26) * s
                spec = [0.0, -0.0, 0.273939937, -0.273939937, 0.5 * s, -0.5 * s, 1.5 * s, -1.5 * s,
                        2.5 * s, (info.min - z) * s, (info.max - z) * s, (info.max - z + 0.5) * s]
                if info.bits == 32:
                    spec += [2.0 ** 31 * s, -(2.0 ** 31) * s, 2.0 ** 33 * s, -(2.0 ** 33) * s]
                x = scatter(rng, n, spec, affine_ties(rng, s, z, dt, inv=inv), lo, hi)
                qt = q_pt(x, s, z, T)
                q = qt.int_repr().numpy().astype(dt)
                qr = q_pt(x[::-1].copy(), s, z, T).int_repr().numpy().astype(dt)[::-1]
                keep = qr == q
                name = f"per_tensor/{T}/s{s:g}/zp{z}/n{n}"
                if not keep.all():
                    dropped.append(f"{name}: {int((~keep).sum())} position-dependent elements removed "
                                   f"(x={x[~keep][:4].tolist()})")
                    x = x[keep]
                    qt = q_pt(x, s, z, T)
                    q = qt.int_repr().numpy().astype(dt)
                dq = qt.dequantize().numpy().astype(F32)
                st.add(dict(kind="per_tensor", name=name, dtype=dname, torch_dtype=T, n=int(x.size)),
                       x=x, scale=np.float64(s), zp=np.int64(z), q=q, dq=dq)

    # per-channel
    chan = [((4, 37), 0), ((37, 3), 1), ((2, 3, 17), 1), ((2, 3, 17), 2), ((5, 21), -1)]
    for T, (dname, dt) in TORCH_DT.items():
        info = np.iinfo(dt)
        for shape, axis in chan:
            ax = axis % len(shape)
            c = shape[ax]
            for variant in range(3):
                sc = rng.choice(scales, c).astype(np.float64)
                if variant == 1:
                    sc[:] = 0.00214854861
                zp = rng.choice(zps[T], c).astype(np.int64)
                if variant == 2:
                    zp[:] = zps[T][3]
                    sc = np.array([0.5, 0.25, 1.0, 0.125, 2.0][:c] * (c // 5 + 1))[:c]
                x = np.empty(shape, F32)
                for j in range(c):
                    sl = [slice(None)] * len(shape)
                    sl[ax] = j
                    s, z = float(sc[j]), int(zp[j])
                    lo = (info.min - z) * s if info.bits <= 16 else -(2.0 ** 26) * s
                    hi = (info.max - z) * s if info.bits <= 16 else (2.0 ** 26) * s
                    m = x[tuple(sl)].size
                    spec = [0.0, 0.273939937, -0.273939937, 0.5 * s, -0.5 * s, 2.5 * s]
                    x[tuple(sl)] = scatter(rng, m, spec, affine_ties(rng, s, z, dt, inv=F32(1) / F32(s)),
                                           lo, hi).reshape(x[tuple(sl)].shape)
                qt = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(sc),
                                                torch.from_numpy(zp), axis if axis >= 0 else ax, TQ[T])
                q = qt.int_repr().numpy().astype(dt)
                dq = qt.dequantize().numpy().astype(F32)
                st.add(dict(kind="per_channel", name=f"per_channel/{T}/{shape}/axis{axis}/v{variant}",
                            dtype=dname, torch_dtype=T, axis=axis, n=int(x.size)),
                       x=x, scale=sc, zp=zp, q=q, dq=dq)

    # dequantize of arbitrary codes (incl. the qint32 extremes where q - zp wraps)
    for T, (dname, dt) in TORCH_DT.items():
        info = np.iinfo(dt)
        if info.bits == 8:
            codes = np.arange(info.min, info.max + 1).astype(dt)
        else:
            codes = np.concatenate([[info.min, info.min + 1, info.max, info.max - 1, 0, 1, -1, 2 ** 24 + 1,
                                     -(2 ** 24) - 1, 2 ** 30], rng.integers(info.min, info.max, 91)]).astype(dt)
        for s in (1.0, 0.1, 0.00214854861, 3.7, 1e-5):
            for z in zps[T] + ([-(2 ** 31), 2 ** 31 - 1] if info.bits == 32 else []):
                qt = torch._make_per_tensor_quantized_tensor(torch.from_numpy(codes.copy()), s, z)
                dq = qt.dequantize().numpy().astype(F32)
                st.add(dict(kind="dq_per_tensor", name=f"dq_per_tensor/{T}/s{s:g}/zp{z}", dtype=dname,
                            torch_dtype=T, n=int(codes.size)),
                       q=codes, scale=np.float64(s), zp=np.int64(z), dq=dq)
        m = codes.size // 4
        q4 = codes[rng.permutation(codes.size)[: 4 * m]].reshape(4, m)
        sc = np.array([1.0, 0.1, 0.00214854861, 3.7])
        zp = np.array(zps[T][:4], np.int64)
        for axis, qq in ((0, q4), (1, q4.T.copy())):
            qt = torch._make_per_channel_quantized_tensor(torch.from_numpy(qq), torch.from_numpy(sc),
                                                          torch.from_numpy(zp), axis)
            st.add(dict(kind="dq_per_channel", name=f"dq_per_channel/{T}/axis{axis}", dtype=dname,
                        torch_dtype=T, axis=axis, n=int(qq.size)),
                   q=qq, scale=sc, zp=zp, dq=qt.dequantize().numpy().astype(F32))

    v = dict(versions_out, torch=torch.__version__, torch_engine=torch.backends.quantized.engine,
             torch_cpu_capability=torch.backends.cpu.get_cpu_capability())
    st.save("quantize_torch.npz", v, dropped=np.array(json.dumps(dropped)))
    for d in dropped:
        print("  dropped:", d)


# --------------------------------------------------------------------------------------------------
# ONNX Runtime and onnx.reference QuantizeLinear / DequantizeLinear
# --------------------------------------------------------------------------------------------------

def gen_onnx(versions_out, opset=21):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    TP = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
          "uint16": TensorProto.UINT16, "int32": TensorProto.INT32}
    so = ort.SessionOptions()
    so.log_severity_level = 3

    def model(op, in_type, out_type, shape, scale, zp, axis):
        inits = [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(zp, "zp")]
        attrs = {} if axis is None else {"axis": axis}
        node = helper.make_node(op, ["x", "scale", "zp"], ["y"], **attrs)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", in_type, list(shape))],
                              [helper.make_tensor_value_info("y", out_type, list(shape))], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 10
        return m

    def run(m, x):
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        y_ort = sess.run(None, {"x": x})[0]
        y_ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
        return y_ort, y_ref

    rng = np.random.default_rng(21)
    st = Store()
    scales = [1.0, 0.5, 0.1, 0.00214854861, 1 / 255, 0.02, 3.7, 2.0 ** -10, 1e-5, 1e4, 0.3333333333]
    zps = {"uint8": [0, 3, 128, 255], "int8": [0, -128, 127, -5], "uint16": [0, 3, 32768, 65535],
           "int16": [0, -32768, 32767, 3]}
    lengths = [37, 100, 15, 1001, 33, 17]
    k = 0
    for dname in ("uint8", "int8", "int16", "uint16"):
        dt = PLAIN[dname]
        info = np.iinfo(dt)
        for s in scales:
            for z in zps[dname]:
                n = lengths[k % len(lengths)]
                k += 1
                s32 = F32(s)
                spec = [0.0, -0.0, 0.273939937, -0.273939937, 0.5 * s, -0.5 * s, 1.5 * s, 2.5 * s,
                        -2.5 * s, (info.min - z) * s, (info.max - z) * s, np.inf, -np.inf]
                x = scatter(rng, n, spec, affine_ties(rng, float(s32), z, dt), (info.min - z) * s,
                            (info.max - z) * s)
                m = model("QuantizeLinear", TensorProto.FLOAT, TP[dname], x.shape, np.array(s32),
                          np.array(z, dt), None)
                q, q_ref = run(m, x)
                md = model("DequantizeLinear", TP[dname], TensorProto.FLOAT, x.shape, np.array(s32),
                           np.array(z, dt), None)
                dq, dq_ref = run(md, q)
                st.add(dict(kind="per_tensor", name=f"per_tensor/{dname}/s{s:g}/zp{z}/n{n}", dtype=dname,
                            axis=None, n=int(n)),
                       x=x, scale=s32, zp=np.array(z, dt), q=q, q_ref=q_ref.astype(dt), dq=dq, dq_ref=dq_ref)
        for shape, axis in (((3, 4, 9), None), ((3, 4, 9), 1), ((37, 3), 1), ((4, 37), 0), ((2, 3, 17), -1)):
            ax = 1 if axis is None else axis % len(shape)
            c = shape[ax]
            sc = rng.choice(scales, c).astype(F32)
            zp = rng.choice(zps[dname], c).astype(dt)
            x = np.empty(shape, F32)
            for j in range(c):
                sl = [slice(None)] * len(shape)
                sl[ax] = j
                s, z = float(sc[j]), int(zp[j])
                spec = [0.0, 0.273939937, 0.5 * s, -0.5 * s, 2.5 * s]
                x[tuple(sl)] = scatter(rng, x[tuple(sl)].size, spec, affine_ties(rng, s, z, dt),
                                       (info.min - z) * s, (info.max - z) * s).reshape(x[tuple(sl)].shape)
            m = model("QuantizeLinear", TensorProto.FLOAT, TP[dname], shape, sc, zp, axis)
            q, q_ref = run(m, x)
            md = model("DequantizeLinear", TP[dname], TensorProto.FLOAT, shape, sc, zp, axis)
            dq, dq_ref = run(md, q)
            st.add(dict(kind="per_axis", name=f"per_axis/{dname}/{shape}/axis{axis}", dtype=dname,
                        axis=axis, n=int(x.size)),
                   x=x, scale=sc, zp=zp, q=q, q_ref=q_ref.astype(dt), dq=dq, dq_ref=dq_ref)
    # dequantize of arbitrary codes, incl. int32 (zero point 0 only in the spec)
    for dname, dt in PLAIN.items():
        info = np.iinfo(dt)
        if info.bits == 8:
            codes = np.arange(info.min, info.max + 1)
        else:
            codes = np.concatenate([[info.min, info.min + 1, info.max, info.max - 1, 0, 1],
                                    rng.integers(info.min, info.max, 95)])
            if info.bits == 32:
                codes = np.concatenate([codes, [2 ** 24 + 1, -(2 ** 24) - 1, 2 ** 30 + 3]])
        codes = codes.astype(dt)
        for s in (1.0, 0.1, 0.00214854861, 3.7, 1e-5):
            for z in ([0] if dname == "int32" else zps[dname]):
                md = model("DequantizeLinear", TP[dname], TensorProto.FLOAT, codes.shape, np.array(F32(s)),
                           np.array(z, dt), None)
                dq, dq_ref = run(md, codes)
                st.add(dict(kind="dq_per_tensor", name=f"dq/{dname}/s{s:g}/zp{z}", dtype=dname, axis=None,
                            n=int(codes.size)),
                       q=codes, scale=F32(s), zp=np.array(z, dt), dq=dq, dq_ref=dq_ref)
    v = dict(versions_out, onnx=onnx.__version__, onnxruntime=ort.__version__, opset=opset)
    st.save("quantize_onnx.npz", v)


# --------------------------------------------------------------------------------------------------
# TFLite / LiteRT QUANTIZE and DEQUANTIZE
# --------------------------------------------------------------------------------------------------

def gen_tflite(versions_out):
    import flatbuffers
    from ai_edge_litert import interpreter as litert
    from tensorflow.lite.python import schema_py_generated as fb

    TT = {"int8": fb.TensorType.INT8, "uint8": fb.TensorType.UINT8, "int16": fb.TensorType.INT16,
          "float32": fb.TensorType.FLOAT32}

    def model(op, in_t, out_t, n, scale, zp):
        """One-op model; the quantized side carries (scale, zp) exactly as given (float32, int64)."""
        m = fb.ModelT()
        m.version = 3
        oc = fb.OperatorCodeT()
        oc.builtinCode = op
        oc.deprecatedBuiltinCode = op
        oc.version = 1 if in_t != "int16" and out_t != "int16" else 3
        m.operatorCodes = [oc]
        qp = fb.QuantizationParametersT()
        qp.scale = [float(scale)]
        qp.zeroPoint = [int(zp)]
        tensors = []
        for i, t in enumerate((in_t, out_t)):
            tt = fb.TensorT()
            tt.shape = [n]
            tt.type = TT[t]
            tt.buffer = 0
            tt.name = ("in", "out")[i].encode()
            if t != "float32":
                tt.quantization = qp
            tensors.append(tt)
        sg = fb.SubGraphT()
        sg.tensors, sg.inputs, sg.outputs = tensors, [0], [1]
        o = fb.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = 0, [0], [1]
        sg.operators = [o]
        m.subgraphs = [sg]
        m.buffers = [fb.BufferT()]
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    R = litert.OpResolverType

    def run(buf, x, resolver):
        kw = {} if resolver is None else {"experimental_op_resolver_type": resolver}
        it = litert.Interpreter(model_content=buf, **kw)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        return it.get_tensor(it.get_output_details()[0]["index"]).copy()

    rng = np.random.default_rng(2026)
    st = Store()
    scales = [1.0, 0.5, 0.1, 0.00214854861, 1 / 255, 0.02, 3.7, 2.0 ** -10, 1e-5, 1e4, 0.0078125]
    zps = {"int8": [0, -128, 127, 3, -5], "uint8": [0, 3, 128, 255], "int16": [0]}
    lengths = [37, 5, 100, 15, 1001, 8, 33, 16]
    k = 0
    for dname in ("int8", "uint8", "int16"):
        dt = PLAIN[dname]
        info = np.iinfo(dt)
        for s in scales:
            for z in zps[dname]:
                n = lengths[k % len(lengths)]
                k += 1
                s32 = F32(s)
                spec = [0.0, -0.0, 0.273939937, -0.273939937, float(F32(2.5 * s32)), 1.25 if s == 0.5 else 0.5 * s,
                        -0.5 * s, 1.5 * s, -2.5 * s, (info.min - z) * s, (info.max - z) * s, 3e38, -3e38]
                x = scatter(rng, n, spec, affine_ties(rng, float(s32), z, dt, inv=F32(1) / s32),
                            (info.min - z) * s, (info.max - z) * s)
                buf = model(fb.BuiltinOperator.QUANTIZE, "float32", dname, n, s32, z)
                q = run(buf, x, R.BUILTIN_REF)
                q_builtin = run(buf, x, R.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
                q_default = run(buf, x, None)
                dbuf = model(fb.BuiltinOperator.DEQUANTIZE, dname, "float32", n, s32, z)
                dq = run(dbuf, q, R.BUILTIN_REF)
                dq_builtin = run(dbuf, q, R.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
                dq_default = run(dbuf, q, None)
                st.add(dict(kind="quantize", name=f"{dname}/s{s:g}/zp{z}/n{n}", dtype=dname, n=int(n)),
                       x=x, scale=s32, zp=np.int64(z), q=q, dq=dq, q_builtin=q_builtin,
                       q_default=q_default, dq_builtin=dq_builtin, dq_default=dq_default)
        codes = (np.arange(info.min, info.max + 1) if info.bits == 8 else
                 np.concatenate([[info.min, info.max, 0, 1, -1], rng.integers(info.min, info.max, 200)]))
        codes = codes.astype(dt)
        for s in (1.0, 0.1, 0.00214854861, 3.7, 1e-5):
            for z in zps[dname]:
                dbuf = model(fb.BuiltinOperator.DEQUANTIZE, dname, "float32", codes.size, F32(s), z)
                st.add(dict(kind="dequantize", name=f"dq/{dname}/s{s:g}/zp{z}", dtype=dname,
                            n=int(codes.size)),
                       q=codes, scale=F32(s), zp=np.int64(z), dq=run(dbuf, codes, R.BUILTIN_REF),
                       dq_builtin=run(dbuf, codes, R.BUILTIN_WITHOUT_DEFAULT_DELEGATES),
                       dq_default=run(dbuf, codes, None))
    import ai_edge_litert
    v = dict(versions_out, ai_edge_litert=getattr(ai_edge_litert, "__version__", "?"),
             resolver="BUILTIN_REF (q, dq); BUILTIN_WITHOUT_DEFAULT_DELEGATES (*_builtin); "
                      "default Interpreter (*_default)")
    st.save("quantize_tflite.npz", v)


def main(argv):
    if "--onednn-diff" in argv:
        onednn_diff()
        return
    which = [a for a in argv if not a.startswith("-")] or ["tf", "torch", "onnx", "tflite", "drift"]
    vers = base_versions()
    gens = {"tf": gen_tf, "torch": gen_torch, "onnx": gen_onnx, "tflite": gen_tflite, "drift": gen_drift}
    for w in which:
        gens[w](vers)


if __name__ == "__main__":
    main(sys.argv[1:])
