"""What Arm CMSIS-DSP's fixed-point kernels compute (the Python package ``cmsisdsp==1.10.3``, the library's C code
built for the host: no ARM_MATH_DSP, the generic C paths): the golden vectors of dspsim.dsp.

Inputs: seeded random values of the full range, edge values (type minimum and maximum, +-1, 0, each pair of them),
the alternating +max/-max square, and audio-like 16 kHz signals (a 50-7900 Hz chirp near full scale, white noise,
speech from espeak-ng resampled to 16 kHz when espeak-ng is installed, else a second noise). q31 signals are the q15
ones shifted left by 16 plus random low bits; q7 signals the q15 ones shifted right by 8.

Each file holds, per case, the inputs, the parameters and the package's output, as ``<function>/<case>/<field>``:

    tests/golden/cmsisdsp_basic.npz    arm_add/sub/mult/negate/abs/scale/shift/dot_prod, q7 q15 q31
    tests/golden/cmsisdsp_filter.npz   arm_fir(_fast) q15 q31, arm_biquad_cascade_df1(_fast) q15 q31: block by
                                       block on one instance (``x`` (blocks, block), ``y`` the same shape)
    tests/golden/cmsisdsp_fft.npz      arm_cfft / arm_rfft q15 q31 (forward, inverse, no bit reversal; every
                                       length the package takes)
    tests/golden/cmsisdsp_matrix.npz   arm_mat_mult q7 q15 q31, arm_mat_mult_fast q15 q31, arm_mat_mult_opt q31
    tests/golden/cmsisdsp_fastmath.npz arm_sin / arm_cos / arm_sqrt q15 (every input) q31
    tests/golden/cmsisdsp_mfcc.npz     arm_mfcc q15 q31 and its pieces: arm_cmplx_mag, arm_divide, arm_vlog_q31,
                                       arm_absmax, arm_mat_vec_mult, arm_offset_q31
    tests/golden/cmsisdsp_multirate.npz arm_fir_decimate(_fast) q15 q31, arm_fir_interpolate q15 q31, block by block
    tests/golden/cmsisdsp_misc.npz     arm_fir_q7 (block by block), arm_vlog_q15 (every int16 input),
                                       arm_cmplx_mag_squared q15 q31, arm_cmplx_mult_cmplx q15 q31, arm_cmplx_mag_fast_q15,
                                       arm_power q7 q15 q31, arm_mean q15 q31, arm_rms q15 q31,
                                       arm_biquad_cas_df1_32x64_q31
    tests/golden/cmsisdsp_conv.npz     arm_conv, arm_correlate q7 q15 q31
    meta (0-d JSON string): the package version and the case counts

    /tmp/cmsisdsp/bin/python tests/golden/make_golden_cmsisdsp.py     # pip install cmsisdsp==1.10.3 numpy
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import wave
from importlib.metadata import version

import cmsisdsp as dsp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RATE = 16000
RNG = np.random.default_rng(20261205)
INFO = {"int8": np.iinfo(np.int8), "int16": np.iinfo(np.int16), "int32": np.iinfo(np.int32)}
QTYPE = {"q7": np.int8, "q15": np.int16, "q31": np.int32}


def speech(n):
    """``n`` samples of espeak-ng speech at 16 kHz (linear resampling), or None without espeak-ng."""
    if shutil.which("espeak-ng") is None:
        return None
    wav = subprocess.run(["espeak-ng", "--stdout", "the quick brown fox jumps over the lazy dog"],
                         capture_output=True, check=True).stdout
    with wave.open(io.BytesIO(wav)) as w:
        rate, pcm = w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), np.int16)
    m = int(len(pcm) * RATE / rate)
    pcm = np.interp(np.linspace(0, len(pcm) - 1, m), np.arange(len(pcm)), pcm)
    start = int(np.argmax(np.abs(pcm) > 1000))
    return np.round(pcm[start:start + n]).astype(np.int16)


def q15_signals(n):
    t = np.arange(n) / RATE
    chirp = 0.95 * np.sin(2 * np.pi * (50 * t + (7900 - 50) / (2 * t[-1]) * t * t))
    sp = speech(n)
    out = {
        "random": RNG.integers(-32768, 32768, n),
        "alternating": np.where(np.arange(n) % 2 == 0, 32767, -32768),
        "chirp": np.round(chirp * 32767),
        "noise": np.clip(np.round(RNG.normal(0, 6000, n)), -32768, 32767),
        "speech": sp if sp is not None and len(sp) == n else np.clip(np.round(RNG.normal(0, 2000, n)), -32768, 32767),
        "min": np.full(n, -32768), "max": np.full(n, 32767), "zero": np.zeros(n),
    }
    return {k: np.asarray(v).astype(np.int16) for k, v in out.items()}


def signals(q, n):
    s = q15_signals(n)
    if q == "q15":
        return s
    if q == "q7":
        return {k: (v >> 8).astype(np.int8) for k, v in s.items()}
    out = {k: (v.astype(np.int64) << 16 | RNG.integers(0, 1 << 16, n)).astype(np.int32) for k, v in s.items()}
    out["random"] = RNG.integers(-2**31, 2**31, n).astype(np.int32)
    out["min"], out["max"], out["zero"] = np.full(n, -2**31, np.int32), np.full(n, 2**31 - 1, np.int32), np.zeros(n, np.int32)
    return out


def edges(q):
    """Each pair of the edge values (minimum, minimum + 1, -2, -1, 0, 1, 2, maximum - 1, maximum): a, b."""
    info = INFO[np.dtype(QTYPE[q]).name]
    e = np.array([info.min, info.min + 1, -2, -1, 0, 1, 2, info.max - 1, info.max], np.int64)
    a, b = np.meshgrid(e, e, indexing="ij")
    return a.ravel().astype(QTYPE[q]), b.ravel().astype(QTYPE[q])


def pairs(q, n=203):
    """(case, a, b) for the binary kernels."""
    s = signals(q, n)
    out = [("edges",) + edges(q)]
    out.append(("random", s["random"], QTYPE[q](RNG.integers(INFO[np.dtype(QTYPE[q]).name].min,
                                                                INFO[np.dtype(QTYPE[q]).name].max + 1, n))))
    out.append(("alternating", s["alternating"], s["alternating"]))
    out.append(("alternating_shifted", s["alternating"], np.roll(s["alternating"], 1)))
    out.append(("chirp_noise", s["chirp"], s["noise"]))
    out.append(("speech_chirp", s["speech"], s["chirp"]))
    out.append(("min_min", s["min"], s["min"]))
    out.append(("max_min", s["max"], s["min"]))
    out.append(("zero_random", s["zero"], s["random"]))
    return out


def basic(store):
    """``<q>/<case>/a``, ``b`` and each function's output (``arm_dot_prod``: of the prefixes of length 1, 2, 3, 4,
    5, 7 and of the whole); ``<q>/scale/x``, ``params`` (k, 2: fract, shift), ``out`` (k, n); ``<q>/shift/x``,
    ``shifts``, ``out``."""
    for q in ("q7", "q15", "q31"):
        for case, a, b in pairs(q):
            key = f"{q}/{case}"
            store[f"{key}/a"], store[f"{key}/b"] = a, b
            for name in ("arm_add", "arm_sub", "arm_mult"):
                store[f"{key}/{name}"] = np.asarray(getattr(dsp, f"{name}_{q}")(a, b), QTYPE[q])
            for name in ("arm_negate", "arm_abs"):
                store[f"{key}/{name}"] = np.asarray(getattr(dsp, f"{name}_{q}")(a), QTYPE[q])
            fn = getattr(dsp, f"arm_dot_prod_{q}")
            store[f"{key}/arm_dot_prod"] = np.array([fn(a[:m], b[:m]) for m in DOT_LENGTHS + (len(a),)], np.int64)
        # scale and shift: every shift the C code defines, a few factors, on the edges and two signals
        bits = {"q7": 8, "q15": 16, "q31": 32}[q]
        ea, _ = edges(q)
        x = np.concatenate([np.unique(ea), signals(q, 40)["chirp"], signals(q, 40)["random"]]).astype(QTYPE[q])
        lo, hi = SCALE_SHIFTS[q]
        info = INFO[np.dtype(QTYPE[q]).name]
        params, out = [], []
        for fract in (info.max, info.min, 1 << (bits - 2), -(1 << (bits - 3)) - 3, 1, 0, -1):
            shifts = range(lo, hi + 1) if fract in (info.max, info.min, 1 << (bits - 2)) else (lo, -1, 0, 1, hi)
            for sh in shifts:
                params.append((fract, sh))
                out.append(np.asarray(getattr(dsp, f"arm_scale_{q}")(x, int(fract), sh), QTYPE[q]))
        store[f"{q}/scale/x"], store[f"{q}/scale/params"] = x, np.array(params, np.int64)
        store[f"{q}/scale/out"] = np.stack(out)
        lo, hi = SHIFTS[q]
        store[f"{q}/shift/x"], store[f"{q}/shift/shifts"] = x, np.arange(lo, hi + 1)
        store[f"{q}/shift/out"] = np.stack([np.asarray(getattr(dsp, f"arm_shift_{q}")(x, sh), QTYPE[q])
                                            for sh in range(lo, hi + 1)])


DOT_LENGTHS = (1, 2, 3, 4, 5, 7)
SCALE_SHIFTS = {"q7": (-24, 7), "q15": (-16, 15), "q31": (-32, 30)}
SHIFTS = {"q7": (-31, 24), "q15": (-31, 16), "q31": (-31, 31)}


def lowpass_q15(taps, cutoff=0.2):
    n = np.arange(taps) - (taps - 1) / 2
    h = np.sinc(2 * cutoff * n) * np.hamming(taps) * 2 * cutoff
    return h


def filters(store):
    """``arm_fir_<q>/<case>/coeffs``, ``x`` (blocks, block), ``y`` and ``y_fast`` (the _fast kernel on a fresh
    instance); ``arm_biquad_cascade_df1_<q>/<case>/coeffs``, ``post_shift``, ``x``, ``y``, ``y_fast``."""
    blocks = (5, 32, 64)
    for q in ("q15", "q31"):
        one = 32768 if q == "q15" else 2**31
        info = INFO[np.dtype(QTYPE[q]).name]
        sig = signals(q, 160)
        for taps in (2, 4, 17, 32, 63):
            if q == "q15" and taps % 2:
                continue
            coefs = {"lowpass": np.round(lowpass_q15(taps) * one * 0.999),
                     "random": RNG.integers(info.min, info.max + 1, taps),
                     "max": np.full(taps, info.max), "min": np.full(taps, info.min)}
            for cname, c in coefs.items():
                c = np.clip(c, info.min, info.max).astype(QTYPE[q])
                for kind in (("random", "chirp", "speech", "alternating", "min") if cname == "lowpass"
                             else ("random", "alternating", "max", "min")):
                    block = blocks[(taps + len(cname) + len(kind)) % len(blocks)]
                    x = sig[kind][:(len(sig[kind]) // block) * block].reshape(-1, block)
                    key = f"arm_fir_{q}/t{taps}_{cname}_{kind}"
                    store[f"{key}/coeffs"], store[f"{key}/x"] = c, x
                    for fast in ("", "_fast"):
                        S = getattr(dsp, f"arm_fir_instance_{q}")()
                        st = np.zeros(taps + block - 1, QTYPE[q])
                        status = getattr(dsp, f"arm_fir_init_{q}")(S, taps, c, st)
                        assert status in (0, None), status
                        fn = getattr(dsp, f"arm_fir{fast}_{q}")
                        store[f"{key}/y{fast}"] = np.stack([np.asarray(fn(S, xb), QTYPE[q]) for xb in x])
        # biquads: low-pass / high-pass designs (RBJ cookbook) scaled by 2^-postShift, and random coefficients
        for stages in (1, 3):
            for post in (0, 1, 3, 15) if q == "q15" else (0, 1, 3, 30):
                for dname in ("design", "random"):
                    if dname == "design":
                        coefs = rbj_cascade(stages, post)
                    else:
                        coefs = RNG.integers(info.min, info.max + 1, (stages, 5)).astype(np.float64) / one
                    c = np.clip(np.round(coefs * one), info.min, info.max).astype(np.int64)
                    if q == "q15":
                        c = np.concatenate([c[:, :1], np.zeros((stages, 1), np.int64), c[:, 1:]], axis=1)
                    c = c.ravel().astype(QTYPE[q])
                    for kind in ("random", "chirp", "speech", "alternating", "max", "zero") if dname == "design" \
                            else ("random", "alternating"):
                        block = blocks[(stages + post + len(kind)) % len(blocks)]
                        x = sig[kind][:(len(sig[kind]) // block) * block].reshape(-1, block)
                        key = f"arm_biquad_cascade_df1_{q}/n{stages}_p{post}_{dname}_{kind}"
                        store[f"{key}/coeffs"], store[f"{key}/x"] = c, x
                        store[f"{key}/post_shift"] = np.int64(post)
                        for fast in ("", "_fast"):
                            S = getattr(dsp, f"arm_biquad_casd_df1_inst_{q}")()
                            st = np.zeros(4 * stages, QTYPE[q])
                            getattr(dsp, f"arm_biquad_cascade_df1_init_{q}")(S, stages, c, st, post)
                            fn = getattr(dsp, f"arm_biquad_cascade_df1{fast}_{q}")
                            store[f"{key}/y{fast}"] = np.stack([np.asarray(fn(S, xb), QTYPE[q]) for xb in x])


def rbj_cascade(stages, post):
    """``stages`` biquads (b0 b1 b2 a1 a2, CMSIS sign: y = b.x + a1 y1 + a2 y2), scaled by 2^-post."""
    out = []
    for k in range(stages):
        f, qq = [(0.05, 0.707), (0.2, 4.0), (0.35, 0.9)][k % 3]
        w = 2 * np.pi * f
        alpha = np.sin(w) / (2 * qq)
        if k % 2 == 0:   # low-pass
            b = np.array([(1 - np.cos(w)) / 2, 1 - np.cos(w), (1 - np.cos(w)) / 2])
        else:            # high-pass
            b = np.array([(1 + np.cos(w)) / 2, -(1 + np.cos(w)), (1 + np.cos(w)) / 2])
        a = np.array([1 + alpha, -2 * np.cos(w), 1 - alpha])
        b, a = b / a[0], a / a[0]
        out.append(np.concatenate([b, -a[1:]]) / 2.0 ** post)
    return np.clip(np.array(out), -1, 1 - 2.0 ** -31)


CFFT_LENGTHS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
RFFT_LENGTHS = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
HASHED = 1024
"""From this length on, the outputs are kept as their sha256 (the inputs in full)."""


def _keep(store, key, y, n):
    y = np.ascontiguousarray(y)
    if n >= HASHED:
        store[key + "_sha256"] = np.frombuffer(hashlib.sha256(y.tobytes()).digest(), np.uint8)
    else:
        store[key] = y


def fft_signals(q, n, small):
    """Test signals of n values (q15 / q31)."""
    s = signals(q, n)
    info = INFO[np.dtype(QTYPE[q]).name]
    imp = np.zeros(n, QTYPE[q])
    imp[0] = info.max
    if not small:
        return {"speech": s["speech"]}
    return {"random": s["random"], "chirp": s["chirp"], "alternating": s["alternating"], "max": s["max"],
            "min": s["min"], "impulse": imp}


def ffts(store):
    """``arm_cfft_<q>/n<N>_<signal>/x`` (2N values, re/im interleaved) with ``y`` (forward, bit-reversed to natural
    order), ``y_inv`` (the inverse transform of the same x), ``y_norev`` (forward, bitReverseFlag 0; some lengths);
    ``arm_rfft_<q>/n<N>_<signal>/x`` (N samples) with ``y`` (2N values), ``y_inv`` (the inverse of x followed by its
    first two values: N + 2 in), ``y_norev``. Lengths from 1024 on keep ``<name>_sha256`` instead of the output."""
    for q in ("q15", "q31"):
        for n in CFFT_LENGTHS:
            for sname, x in fft_signals(q, 2 * n, n <= 256).items():
                key = f"arm_cfft_{q}/n{n}_{sname}"
                store[f"{key}/x"] = x
                for flag, rev, name in ((0, 1, "y"), (1, 1, "y_inv"), (0, 0, "y_norev")):
                    if name == "y_norev" and n not in (16, 32, 256, 512, 2048):
                        continue
                    S = getattr(dsp, f"arm_cfft_instance_{q}")()
                    assert getattr(dsp, f"arm_cfft_init_{q}")(S, n) == 0
                    _keep(store, f"{key}/{name}", np.asarray(getattr(dsp, f"arm_cfft_{q}")(S, x, flag, rev),
                                                             QTYPE[q]), n)
        for n in RFFT_LENGTHS:
            for sname, x in fft_signals(q, n, n <= 256).items():
                key = f"arm_rfft_{q}/n{n}_{sname}"
                store[f"{key}/x"] = x
                for flag, rev, name in ((0, 1, "y"), (1, 1, "y_inv"), (0, 0, "y_norev")):
                    if name == "y_norev" and n not in (32, 64, 512, 4096):
                        continue
                    S = getattr(dsp, f"arm_rfft_instance_{q}")()
                    assert getattr(dsp, f"arm_rfft_init_{q}")(S, n, flag, rev) == 0
                    xin = np.concatenate([x, x[:2]]) if flag else x
                    _keep(store, f"{key}/{name}", np.asarray(getattr(dsp, f"arm_rfft_{q}")(S, xin), QTYPE[q]),
                          n)


def matrices(store):
    """``<q>/<case>/a``, ``b`` and ``arm_mat_mult``, ``arm_mat_mult_fast``, ``arm_mat_mult_opt`` (where the package
    has it): shapes (1,1)..(9,13)x(13,7) with odd and even dimensions, random full-range, rails, audio-like."""
    for q in ("q7", "q15", "q31"):
        info = INFO[np.dtype(QTYPE[q]).name]
        shapes = ((1, 1, 1), (2, 3, 4), (3, 4, 5), (4, 4, 4), (5, 7, 3), (9, 13, 7), (16, 16, 16))
        for m, k, n in shapes:
            for kind in ("random", "max", "min", "max_min", "audio"):
                if kind == "random":
                    a, b = (RNG.integers(info.min, info.max + 1, s) for s in ((m, k), (k, n)))
                elif kind == "max":
                    a, b = np.full((m, k), info.max), np.full((k, n), info.max)
                elif kind == "min":
                    a, b = np.full((m, k), info.min), np.full((k, n), info.min)
                elif kind == "max_min":
                    a = np.where(np.indices((m, k)).sum(0) % 2, info.max, info.min)
                    b = np.where(np.indices((k, n)).sum(0) % 2, info.min, info.max)
                else:
                    sig = signals(q, m * k + k * n)
                    a, b = sig["chirp"][:m * k].reshape(m, k), sig["speech"][m * k:].reshape(k, n)
                a, b = np.ascontiguousarray(a, QTYPE[q]), np.ascontiguousarray(b, QTYPE[q])
                key = f"{q}/m{m}k{k}n{n}_{kind}"
                store[f"{key}/a"], store[f"{key}/b"] = a, b
                for name in ("arm_mat_mult", "arm_mat_mult_fast", "arm_mat_mult_opt"):
                    fn = getattr(dsp, f"{name}_{q}", None)
                    if fn is None:
                        continue
                    args = (a, b) if (q, name) in (("q31", "arm_mat_mult"), ("q31", "arm_mat_mult_fast")) \
                        else (a, b, np.zeros(b.size, QTYPE[q]))
                    status, y = fn(*args)
                    assert status == 0, (key, name, status)
                    store[f"{key}/{name}"] = np.asarray(y, QTYPE[q]).reshape(m, n)


def fastmath(store):
    """q15: every int16 input: ``q15/<name>_sha256`` of the int16 outputs over x = -32768..32767 in order, and
    ``q15/sample_x`` with each function's outputs in full; q31: ``q31/x`` (edges, powers of two and their
    neighbours, random) and each function's outputs. arm_sqrt also ``<name>_status`` (0 / -1)."""
    every = np.arange(-32768, 32768).astype(np.int16)
    sample = np.concatenate([every[::97], every[-8:], every[32760:32776]])
    p2 = np.array([(1 << k) + d for k in range(31) for d in (-1, 0, 1)], np.int64)
    x31 = np.unique(np.clip(np.concatenate([p2, -p2, [-2**31, -2**31 + 1, 2**31 - 1, 2**31 - 2, 0],
                                            RNG.integers(-2**31, 2**31, 3000)]), -2**31, 2**31 - 1)).astype(np.int32)
    store["q15/sample_x"], store["q31/x"] = sample, x31
    for name in ("arm_sin", "arm_cos", "arm_sqrt"):
        for q, xs in (("q15", every), ("q31", x31)):
            fn = getattr(dsp, f"{name}_{q}")
            if name == "arm_sqrt":
                res = [fn(int(v)) for v in xs]
                out = np.array([r[1] for r in res], QTYPE[q])
                st = np.array([r[0] for r in res], np.int8)
            else:
                out = np.array([fn(int(v)) for v in xs], np.int64).astype(QTYPE[q])
                st = None
            if q == "q15":
                store[f"q15/{name}_sha256"] = np.frombuffer(hashlib.sha256(out.tobytes()).digest(), np.uint8)
                idx = sample.astype(np.int64) + 32768
                store[f"q15/{name}"] = out[idx]
                if st is not None:
                    store[f"q15/{name}_status_sha256"] = np.frombuffer(hashlib.sha256(st.tobytes()).digest(),
                                                                       np.uint8)
                    store[f"q15/{name}_status"] = st[idx]
            else:
                store[f"q31/{name}"] = out
                if st is not None:
                    store[f"q31/{name}_status"] = st


def mfccs(store):
    """The pieces of arm_mfcc and arm_mfcc itself.

    ``<q>/cmplx_mag/x`` and ``out``; ``<q>/divide/pairs`` (k, 2) and ``out`` (k, 3: status, quotient, shift);
    ``q31/vlog/x`` and ``out``; ``<q>/absmax/x`` (k, n) and ``out`` (k, 2); ``<q>/mat_vec/<case>/a``, ``v``, ``out``;
    ``q31/offset/x``, ``offsets``, ``out`` (k, n); ``arm_mfcc_<q>/n<N>_<config>/dct``, ``pos``, ``lengths``,
    ``coefs``, ``window``, ``x`` (frames, N), ``y`` (frames, nb_dct)."""
    from cmsisdsp import mfcc as cm
    from cmsisdsp.datatype import Q15, Q31
    for q in ("q15", "q31"):
        info = INFO[np.dtype(QTYPE[q]).name]
        e, f = edges(q)
        sig = signals(q, 256)
        x = np.concatenate([np.stack([e, f], 1).ravel(), sig["random"], sig["chirp"]]).astype(QTYPE[q])
        store[f"{q}/cmplx_mag/x"] = x
        store[f"{q}/cmplx_mag/out"] = np.asarray(getattr(dsp, f"arm_cmplx_mag_{q}")(x), QTYPE[q])
        vals = np.unique(np.concatenate([e, [info.max // 3, 7, 1000, -1000], RNG.integers(info.min, info.max + 1, 30)]))
        pairs = np.array([(a, b) for a in vals for b in vals], np.int64)
        store[f"{q}/divide/pairs"] = pairs
        store[f"{q}/divide/out"] = np.array([getattr(dsp, f"arm_divide_{q}")(int(a), int(b)) for a, b in pairs],
                                            np.int64)
        rows = [sig[k][:33] for k in ("random", "chirp", "alternating", "min", "max", "zero", "speech")]
        rows += [np.where(np.arange(33) == 17, info.min, 0).astype(QTYPE[q]), np.array([3, -3] * 16 + [2], QTYPE[q])]
        absx = np.stack(rows).astype(QTYPE[q])
        store[f"{q}/absmax/x"] = absx
        store[f"{q}/absmax/out"] = np.array([getattr(dsp, f"arm_absmax_{q}")(r) for r in absx], np.int64)
        for (m, n), kind in (((1, 1), "random"), ((4, 7), "random"), ((5, 8), "random"), ((13, 20), "random"),
                             ((13, 40), "random"), ((6, 9), "max"), ((6, 9), "min")):
            if kind == "random":
                a, v = RNG.integers(info.min, info.max + 1, (m, n)), RNG.integers(info.min, info.max + 1, n)
            else:
                val = info.max if kind == "max" else info.min
                a, v = np.full((m, n), val), np.full(n, val)
            a, v = a.astype(QTYPE[q]), v.astype(QTYPE[q])
            key = f"{q}/mat_vec/m{m}n{n}_{kind}"
            store[f"{key}/a"], store[f"{key}/v"] = a, v
            store[f"{key}/out"] = np.asarray(getattr(dsp, f"arm_mat_vec_mult_{q}")(a, v), QTYPE[q])
    p2 = np.array([(1 << k) + d for k in range(31) for d in (-1, 0, 1)], np.int64)
    x31 = np.unique(np.clip(np.concatenate([p2, -p2, [-2**31, 2**31 - 1, 0], RNG.integers(-2**31, 2**31, 2000),
                                            RNG.integers(1, 2**20, 200)]), -2**31, 2**31 - 1)).astype(np.int32)
    store["q31/vlog/x"] = x31
    store["q31/vlog/out"] = np.asarray(dsp.arm_vlog_q31(x31), np.int32)
    xo = np.concatenate([edges("q31")[0][:9], RNG.integers(-2**31, 2**31, 40)]).astype(np.int32)
    offs = np.array([0, 1, -1, 2**31 - 1, -2**31, 2**30, -2**30, 1234567], np.int64)
    store["q31/offset/x"], store["q31/offset/offsets"] = xo, offs
    store["q31/offset/out"] = np.stack([np.asarray(dsp.arm_offset_q31(xo, int(o)), np.int32) for o in offs])
    # arm_mfcc: configurations as CMSIS-DSP's own Python helpers build them
    for q, dt, conv in (("q15", Q15, lambda a: np.asarray(np.clip(np.round(a * 32768), -32768, 32767), np.int16)),
                        ("q31", Q31, lambda a: np.asarray(np.clip(np.round(a * 2.0**31), -2**31, 2**31 - 1),
                                                          np.int32))):
        info = INFO[np.dtype(QTYPE[q]).name]
        for n, mels, dcts, fmax in ((256, 20, 13, 8000), (512, 40, 13, 8000), (1024, 40, 20, 8000), (128, 10, 5, 4000)):
            lengths, pos, coefs = cm.melFilterMatrix(dt, 64, fmax, mels, 16000, n)
            dct = np.asarray(cm.dctMatrix(dt, dcts, mels)).reshape(-1)
            window = conv(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n))
            key = f"arm_mfcc_{q}/n{n}_m{mels}_d{dcts}"
            S = getattr(dsp, f"arm_mfcc_instance_{q}")()
            lengths, pos = np.asarray(lengths, np.uint32), np.asarray(pos, np.uint32)
            coefs, dct = np.asarray(coefs, QTYPE[q]), np.asarray(dct, QTYPE[q])
            assert getattr(dsp, f"arm_mfcc_init_{q}")(S, n, mels, dcts, dct, pos, lengths, coefs, window) == 0
            sig = signals(q, 3 * n)
            frames = [sig["speech"][:n], sig["speech"][n:2 * n], sig["chirp"][:n], sig["noise"][:n],
                      sig["random"][:n], sig["alternating"][:n], sig["max"][:n], sig["min"][:n], sig["zero"][:n],
                      (sig["speech"][:n] >> (12 if q == "q15" else 28)).astype(QTYPE[q]),   # quiet: normalized up
                      np.where(np.arange(n) == 5, 1, 0).astype(QTYPE[q]),                   # largest magnitude 1
                      np.where(np.arange(n) % 7 == 0, -1, 0).astype(QTYPE[q])]
            xs = np.stack(frames).astype(QTYPE[q])
            ys = []
            for fr in xs:
                tmp = np.zeros(2 * n, np.int32)
                res = getattr(dsp, f"arm_mfcc_{q}")(S, fr, tmp)
                status, out = res if isinstance(res, tuple) else (0, res)
                assert status == 0, (key, status)
                ys.append(np.asarray(out, QTYPE[q]))
            store[f"{key}/dct"], store[f"{key}/pos"], store[f"{key}/lengths"] = dct, pos, lengths
            store[f"{key}/coefs"], store[f"{key}/window"] = coefs, window
            store[f"{key}/x"], store[f"{key}/y"] = xs, np.stack(ys)


def multirate(store):
    """``arm_fir_decimate_<q>/<case>/coeffs``, ``m``, ``x`` (blocks, block), ``y`` and ``y_fast``;
    ``arm_fir_interpolate_<q>/<case>/coeffs``, ``l``, ``x``, ``y``."""
    for q in ("q15", "q31"):
        one = 32768 if q == "q15" else 2**31
        info = INFO[np.dtype(QTYPE[q]).name]
        sig = signals(q, 168)
        for taps, m in ((5, 2), (16, 3), (29, 4), (8, 1)):
            coefs = {"lowpass": np.round(lowpass_q15(taps, 0.4 / m) * one * 0.999),
                     "random": RNG.integers(info.min, info.max + 1, taps), "min": np.full(taps, info.min)}
            for cname, c in coefs.items():
                c = np.clip(c, info.min, info.max).astype(QTYPE[q])
                for kind in ("random", "chirp", "speech", "min", "alternating") if cname == "lowpass" \
                        else ("random", "min", "max"):
                    block = m * (7 if (taps + len(kind)) % 2 else 12)
                    x = sig[kind][:(len(sig[kind]) // block) * block].reshape(-1, block)
                    key = f"arm_fir_decimate_{q}/t{taps}_m{m}_{cname}_{kind}"
                    store[f"{key}/coeffs"], store[f"{key}/m"], store[f"{key}/x"] = c, np.int64(m), x
                    for fast in ("", "_fast"):
                        S = getattr(dsp, f"arm_fir_decimate_instance_{q}")()
                        st = np.zeros(taps + block - 1, QTYPE[q])
                        assert getattr(dsp, f"arm_fir_decimate_init_{q}")(S, taps, m, c, st) == 0
                        fn = getattr(dsp, f"arm_fir_decimate{fast}_{q}")
                        store[f"{key}/y{fast}"] = np.stack([np.asarray(fn(S, xb), QTYPE[q]) for xb in x])
        for phase, l_factor in ((3, 2), (8, 3), (5, 4), (4, 1)):
            taps = phase * l_factor
            coefs = {"lowpass": np.round(lowpass_q15(taps, 0.45 / l_factor) * one * l_factor * 0.999),
                     "random": RNG.integers(info.min, info.max + 1, taps), "min": np.full(taps, info.min)}
            for cname, c in coefs.items():
                c = np.clip(c, info.min, info.max).astype(QTYPE[q])
                for kind in ("random", "chirp", "speech", "min", "alternating") if cname == "lowpass" \
                        else ("random", "min", "max"):
                    block = 7 if (taps + len(kind)) % 2 else 16
                    x = sig[kind][:(len(sig[kind]) // block) * block].reshape(-1, block)
                    key = f"arm_fir_interpolate_{q}/p{phase}_l{l_factor}_{cname}_{kind}"
                    store[f"{key}/coeffs"], store[f"{key}/l"], store[f"{key}/x"] = c, np.int64(l_factor), x
                    S = getattr(dsp, f"arm_fir_interpolate_instance_{q}")()
                    st = np.zeros(taps + block - 1, QTYPE[q])
                    assert getattr(dsp, f"arm_fir_interpolate_init_{q}")(S, l_factor, taps, c, st) == 0
                    fn = getattr(dsp, f"arm_fir_interpolate_{q}")
                    store[f"{key}/y"] = np.stack([np.asarray(fn(S, xb), QTYPE[q]) for xb in x])


def misc(store):
    """``arm_fir_q7/<case>/coeffs``, ``x`` (blocks, block), ``y``; ``arm_vlog_q15/sha256`` of the outputs over
    every int16 input in order, ``sample_x`` and ``sample_out`` (every 61st); ``cmplx_<q>/a``, ``b`` (pairs) with
    ``arm_cmplx_mag_squared`` (of a), ``arm_cmplx_mult_cmplx`` (a b), ``arm_cmplx_mag_fast`` (q15, of a);
    ``stats_<q>/x<i>`` vectors with ``names`` (arm_power, arm_mean, arm_rms) and ``out`` (vectors, names);
    ``arm_biquad_cas_df1_32x64_q31/<case>/coeffs``, ``post_shift``, ``x`` (blocks, block), ``y``."""
    sig = signals("q7", 160)
    for taps in (1, 3, 4, 16, 33):
        coefs = {"lowpass": np.clip(np.round(lowpass_q15(taps) * 128 * 0.99), -128, 127),
                 "random": RNG.integers(-128, 128, taps), "min": np.full(taps, -128)}
        for cname, c in coefs.items():
            c = np.asarray(c, np.int8)
            for kind in ("random", "chirp", "speech", "min", "alternating") if cname == "lowpass" \
                    else ("random", "min", "max"):
                block = (5, 32, 16)[(taps + len(kind)) % 3]
                x = sig[kind][:(len(sig[kind]) // block) * block].reshape(-1, block)
                S = dsp.arm_fir_instance_q7()
                dsp.arm_fir_init_q7(S, taps, c, np.zeros(taps + block - 1, np.int8))
                key = f"arm_fir_q7/t{taps}_{cname}_{kind}"
                store[f"{key}/coeffs"], store[f"{key}/x"] = c, x
                store[f"{key}/y"] = np.stack([np.asarray(dsp.arm_fir_q7(S, xb), np.int8) for xb in x])
    every = np.arange(-32768, 32768).astype(np.int16)
    out = np.asarray(dsp.arm_vlog_q15(every), np.int16)
    store["arm_vlog_q15/sha256"] = np.frombuffer(hashlib.sha256(out.tobytes()).digest(), np.uint8)
    store["arm_vlog_q15/sample_x"] = every[::61]
    store["arm_vlog_q15/sample_out"] = out[::61]
    for q in ("q15", "q31"):
        e, f = edges(q)
        sig = signals(q, 200)
        a = np.concatenate([np.stack([e, f], 1).ravel(), sig["random"], sig["chirp"], sig["min"][:8]]).astype(QTYPE[q])
        b = np.concatenate([np.stack([f, e], 1).ravel(), sig["noise"], sig["speech"], sig["min"][:8]]).astype(QTYPE[q])
        store[f"cmplx_{q}/a"], store[f"cmplx_{q}/b"] = a, b
        store[f"cmplx_{q}/arm_cmplx_mag_squared"] = np.asarray(getattr(dsp, f"arm_cmplx_mag_squared_{q}")(a), QTYPE[q])
        store[f"cmplx_{q}/arm_cmplx_mult_cmplx"] = np.asarray(getattr(dsp, f"arm_cmplx_mult_cmplx_{q}")(a, b),
                                                              QTYPE[q])
        if q == "q15":
            store["cmplx_q15/arm_cmplx_mag_fast"] = np.asarray(dsp.arm_cmplx_mag_fast_q15(a), np.int16)
    # statistics: power (q7 q15 q31), mean and rms (q15 q31) of vectors of lengths 1-200
    for q in ("q7", "q15", "q31"):
        sig = signals(q, 200)
        vecs = [sig[k][:n] for k in ("random", "chirp", "speech", "noise", "alternating", "max", "min", "zero")
                for n in (1, 3, 4, 7, 64, 200)]
        for i, v in enumerate(vecs):
            store[f"stats_{q}/x{i:02d}"] = np.asarray(v, QTYPE[q])
        names = ("arm_power",) + (("arm_mean", "arm_rms") if q != "q7" else ())
        out = [[int(np.asarray(getattr(dsp, f"{n}_{q}")(np.asarray(v, QTYPE[q]))).ravel()[0]) for n in names]
               for v in vecs]
        store[f"stats_{q}/names"] = np.array(names)
        store[f"stats_{q}/out"] = np.array(out, np.int64)
    # arm_biquad_cas_df1_32x64_q31: the DF1 q31 cascade with 64-bit state
    info = INFO["int32"]
    sig = signals("q31", 160)
    for stages in (1, 3):
        for post in (0, 3, 30):
            for dname in ("design", "random"):
                coefs = rbj_cascade(stages, post) if dname == "design" else \
                    RNG.integers(info.min, info.max + 1, (stages, 5)).astype(np.float64) / 2**31
                c = np.clip(np.round(coefs * 2**31), info.min, info.max).astype(np.int32).ravel()
                for kind in ("random", "speech", "alternating", "max") if dname == "design" else ("random", "min"):
                    block = (5, 32, 64)[(stages + post + len(kind)) % 3]
                    x = sig[kind][:(len(sig[kind]) // block) * block].reshape(-1, block)
                    S = dsp.arm_biquad_cas_df1_32x64_ins_q31()
                    dsp.arm_biquad_cas_df1_32x64_init_q31(S, stages, c, np.zeros(4 * stages, np.int64), post)
                    key = f"arm_biquad_cas_df1_32x64_q31/n{stages}_p{post}_{dname}_{kind}"
                    store[f"{key}/coeffs"], store[f"{key}/x"], store[f"{key}/post_shift"] = c, x, np.int64(post)
                    store[f"{key}/y"] = np.stack([np.asarray(dsp.arm_biquad_cas_df1_32x64_q31(S, xb), np.int32)
                                                  for xb in x])


def convolutions(store):
    """``<q>/<case>/a``, ``b``, ``arm_conv`` (len a + len b - 1) and ``arm_correlate`` (2 max - 1; only the
    len a + len b - 1 entries the C code writes are meaningful: from len a - len b on if a is the longer, else from
    0; the others are whatever the wrapper's buffer held)."""
    for q in ("q7", "q15", "q31"):
        info = INFO[np.dtype(QTYPE[q]).name]
        sig = signals(q, 64)
        for la, lb in ((1, 1), (5, 3), (3, 5), (8, 8), (17, 4), (4, 17), (33, 9)):
            for kind in ("random", "speech_chirp", "min", "max_min"):
                if kind == "random":
                    a, b = RNG.integers(info.min, info.max + 1, la), RNG.integers(info.min, info.max + 1, lb)
                elif kind == "speech_chirp":
                    a, b = sig["speech"][:la], sig["chirp"][:lb]
                elif kind == "min":
                    a, b = np.full(la, info.min), np.full(lb, info.min)
                else:
                    a, b = np.full(la, info.max), np.full(lb, info.min)
                a, b = np.asarray(a, QTYPE[q]), np.asarray(b, QTYPE[q])
                key = f"{q}/a{la}_b{lb}_{kind}"
                store[f"{key}/a"], store[f"{key}/b"] = a, b
                store[f"{key}/arm_conv"] = np.asarray(getattr(dsp, f"arm_conv_{q}")(a, la, b, lb), QTYPE[q])
                store[f"{key}/arm_correlate"] = np.asarray(getattr(dsp, f"arm_correlate_{q}")(a, la, b, lb), QTYPE[q])


def main():
    meta = {"cmsisdsp": version("cmsisdsp"), "numpy": np.__version__}
    for name, fill in (("basic", basic), ("filter", filters), ("fft", ffts), ("matrix", matrices), ("fastmath", fastmath), ("mfcc", mfccs), ("multirate", multirate), ("misc", misc), ("conv", convolutions)):
        store = {}
        fill(store)
        meta[name] = len({k.rsplit("/", 1)[0] for k in store})
        store["meta"] = np.array(json.dumps({"cmsisdsp": meta["cmsisdsp"], "cases": meta[name]}))
        np.savez_compressed(os.path.join(HERE, f"cmsisdsp_{name}.npz"), **store)
        print(name, len({k.rsplit('/', 1)[0] for k in store}), "cases",
              os.path.getsize(os.path.join(HERE, f"cmsisdsp_{name}.npz")), "bytes")


if __name__ == "__main__":
    main()
