"""Front-end rows of ``dspsim bench`` (issue 28 part 5): per-frame time of TFLite Micro's audio microfrontend
beside pymicro-features (its C code through the Python binding) and of a few CMSIS-DSP kernels beside the
cmsisdsp package (Arm's C code).

Rows (:class:`FrontendRow`; time in microseconds, the rule of :mod:`dspsim.bench.timing`: an untimed warm-up
call, then the minimum of the timed calls, least process CPU time beside it):

- ``microfrontend batch 1``: a call per 10 ms chunk (160 samples), as pymicro-features is called: dspsim's
  ``MicroFrontend().process_samples(int16 chunk)`` and pymicro-features' ``MicroFrontend().process_samples(bytes)``
  over :data:`CHUNKS` chunks of a stream whose window is already full, so that every chunk gives a frame: time
  per frame. The features of the warm-up call are diffed (pymicro-features' floats are exact multiples of
  0.0390625).
- ``microfrontend N streams``: dspsim's ``MicroFrontend(streams=N)`` (one call per chunk for all N streams, the
  streams as SIMD lanes in blocks of :data:`dspsim.frontend.lanes.LANES`, the blocks split over the threads)
  beside the C code called per stream (N pymicro-features objects): time per stream-frame, at each thread count
  (the C code is single-threaded).
- ``microfrontend lanes: <stage>``: each stage of the lanes' frame on one block, per stream-frame (1 thread; no
  peer): where the N-stream time goes.
- ``microfrontend whole signal``: dspsim's ``microfrontend(pcm)`` (one compiled loop), per frame; no peer.
- CMSIS-DSP: ``arm_rfft_q15`` (512), ``arm_fir_q15`` (32 taps, 160-sample block), ``arm_biquad_cascade_df1_q15``
  (3 stages), ``arm_mfcc_q15`` (512, 40 mel filters, 13 DCT outputs): a call each, the first call's output of a
  fresh instance diffed. cmsisdsp runs in-process when importable, else in a worker process under
  ``DSPSIM_CMSISDSP_PYTHON`` (:mod:`dspsim.bench.cmsisdsp_peer`), else its rows say it was skipped. The FIR,
  biquad and MFCC tables are those of the committed CMSIS-DSP goldens (``tests/golden/cmsisdsp_*.npz``).

``speedup`` = peer time / dspsim time (> 1: dspsim is faster); ``cpu_speedup`` the same in CPU time (all threads
summed). The issue's targets (:data:`FRONTEND_TARGETS`): batch 1 >= 1x the C code per frame, N = 256 streams >=
10x its throughput; judged at 1 thread (the gate), other thread counts shown.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .timing import error_status, measure, set_threads

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
CHUNK = 160
CHUNKS = {"quick": 8, "full": 50}
STREAMS = {"quick": 8, "full": 256}
FEATURE_SCALE = 0.0390625
CMSISDSP_PYTHON = "DSPSIM_CMSISDSP_PYTHON"
FRONTEND_TARGETS = (
    # (label, case, threshold on the peer's time over dspsim's)
    ("microfrontend batch 1 >= 1x pymicro-features (C) per frame", "microfrontend batch 1", 1.0),
    ("microfrontend 256 streams >= 10x the C code per stream-frame", "microfrontend 256 streams", 10.0),
)


@dataclass
class FrontendRow:
    """One front-end case at one thread count, dspsim beside its peer (see the module docstring)."""

    case: str
    detail: str
    threads: int
    peer: str
    status: str = "ok"
    dspsim_us: float | None = None
    peer_us: float | None = None
    speedup: float | None = None
    dspsim_cpu_us: float | None = None
    peer_cpu_us: float | None = None
    cpu_speedup: float | None = None
    mismatches: int | None = None
    compared: int = 0
    bit_exact: bool | None = None


def cpu_features() -> str:
    """The CPU's model and its SIMD features (Linux ``/proc/cpuinfo``), and the CPUs this process may use."""
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not model:
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    simd = [f for f in ("sse4_2", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni")
            if f in flags]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model or 'unknown CPU'}; {' '.join(simd) or 'no SIMD flags read'}; {cpus} CPUs usable"


def bench_signal(n_samples: int, streams: int = 1, seed: int = 0) -> np.ndarray:
    """(streams, n_samples) int16: a tone and a chirp in noise at a stream's own level, clipped."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_samples) / 16000.0
    out = np.empty((streams, n_samples), np.int16)
    for s in range(streams):
        level = 500.0 * (1 + s % 40)
        x = level * (np.sin(2 * np.pi * (300 + 17 * s) * t) + np.sin(2 * np.pi * (200 + 3000 * t) * t))
        out[s] = np.clip(np.round(x + rng.normal(0, level / 4, n_samples)), -32768, 32767)
    return out


def _us(t, n):
    return None if t.min_seconds is None else t.min_seconds / n * 1e6


def _cpu_us(t, n):
    return None if t.cpu_min_seconds is None else t.cpu_min_seconds / n * 1e6


def _ratio(a, b):
    return a / b if a and b else None


def _c_frontend():
    """pymicro-features' MicroFrontend class, or None when it is not installed."""
    try:
        from pymicro_features import MicroFrontend as CFrontend
    except ImportError:
        return None
    return CFrontend


def stream_calls(pcm: np.ndarray, n_chunks: int):
    """(a maker of dspsim's timed call, the C code's timed call or None) on the (streams, samples) ``pcm``: each
    frontend is fresh and pre-rolled by 320 samples (two chunks), then every call feeds the next ``n_chunks``
    chunks and returns their features (a list over the chunks; the C code's: over the streams, then chunks)."""
    from ..frontend import MicroFrontend

    streams = pcm.shape[0]
    chunks = [np.ascontiguousarray(pcm[:, k * CHUNK:(k + 1) * CHUNK]) for k in range(2 + n_chunks)]
    mine = chunks if streams > 1 else [c[0] for c in chunks]

    def make_dspsim_call():
        fe = MicroFrontend(streams=streams) if streams > 1 else MicroFrontend()
        fe.process_samples(mine[0])
        fe.process_samples(mine[1])
        return lambda: [fe.process_samples(c)[0] for c in mine[2:]]

    CFrontend = _c_frontend()
    if CFrontend is None:
        return make_dspsim_call, None
    cs = [CFrontend() for _ in range(streams)]
    data = [[c[s].tobytes() for c in chunks] for s in range(streams)]
    for s, fe in enumerate(cs):  # it reads at most 160 samples a call
        fe.process_samples(data[s][0])
        fe.process_samples(data[s][1])
    return make_dspsim_call, lambda: [[fe.process_samples(b).features for b in data[s][2:]]
                                      for s, fe in enumerate(cs)]


def dspsim_features(feats, streams: int) -> np.ndarray:
    """dspsim's list over chunks as (streams, chunks, channels) int64."""
    a = np.asarray(feats, np.int64)
    return a[None] if streams == 1 else a.transpose(1, 0, 2)


def c_features(feats) -> np.ndarray:
    return np.round(np.asarray(feats, np.float64) / FEATURE_SCALE).astype(np.int64)


def microfrontend_rows(size: str, threads, repeats: int, budget: float, run_peers: bool = True) -> list:
    """The microfrontend's rows (batch 1 at 1 thread; N streams at each of ``threads``; the whole signal)."""
    from ..frontend import microfrontend

    n_chunks, n_streams = CHUNKS[size], STREAMS[size]
    rows = []
    for case, streams, ths in (("microfrontend batch 1", 1, (1,)), (f"microfrontend {n_streams} streams",
                                                                       n_streams, threads)):
        pcm = bench_signal(320 + n_chunks * CHUNK, streams)
        make_dspsim_call, peer_call = stream_calls(pcm, n_chunks)
        peer_t, peer_out = None, None
        for th in ths:
            row = FrontendRow(case, f"{streams} x {n_chunks} chunks of {CHUNK} samples", th, "pymicro-features")
            rows.append(row)
            set_threads(th)
            frames = streams * n_chunks
            try:
                t = measure(make_dspsim_call(), repeats, budget)
            except Exception as exc:  # dspsim failed: record it, keep going
                row.status = error_status(exc)
                continue
            row.dspsim_us, row.dspsim_cpu_us = _us(t, frames), _cpu_us(t, frames)
            if not run_peers or peer_call is None:
                row.status = "peer not run (--no-peers)" if not run_peers else "peer skipped: pymicro-features " \
                                                                               "not installed"
                continue
            if peer_t is None:  # the C code is single-threaded: timed once
                peer_t = measure(peer_call, repeats, budget)
                peer_out = c_features(peer_t.result)
            row.peer_us, row.peer_cpu_us = _us(peer_t, frames), _cpu_us(peer_t, frames)
            row.speedup, row.cpu_speedup = _ratio(row.peer_us, row.dspsim_us), _ratio(row.peer_cpu_us,
                                                                                        row.dspsim_cpu_us)
            got = dspsim_features(t.result, streams)
            row.compared = got.size
            row.mismatches = int(np.count_nonzero(got != peer_out)) if got.shape == peer_out.shape else got.size
            row.bit_exact = row.mismatches == 0
    pcm = bench_signal(16000)[0]
    row = FrontendRow("microfrontend whole signal", f"microfrontend(pcm), {pcm.shape[0]} samples", 1, "")
    set_threads(1)
    t = measure(lambda: microfrontend(pcm), repeats, budget)
    n = t.result.shape[0]
    row.dspsim_us, row.dspsim_cpu_us, row.status = _us(t, n), _cpu_us(t, n), "no peer (the compiled loop's floor)"
    rows.append(row)
    return rows + lane_stage_rows(repeats, budget)


def lane_stage_calls() -> list:
    """(name, call) of each stage of the lanes' frame (:mod:`dspsim.frontend.lanes`) on one block of LANES streams
    of :func:`bench_signal` whose window is full."""
    from ..frontend import MicroFrontend
    from ..frontend import lanes as ln
    from ..frontend.plan import _FB_END, _FB_START, _NCH, _NFFT, _SIZE, _sections

    fe = MicroFrontend(streams=ln.LANES)
    fe.process_samples(bench_signal(int(fe._plan[_SIZE]), ln.LANES))
    plan, blk = fe._plan, fe._buf[0]
    (window, twiddles, stages, leaf_order, super_twiddles, fstart, wstart, widths, weights, unweights, pcan_lut,
     log_lut, _) = _sections(plan)
    shift, fr, fi, sr, si, energy, work, feats, planes = ln._lane_buffers(fe._lane_scratch[0], int(plan[_NFFT]) // 2,
                                                                          int(plan[_NCH]))
    est = np.zeros_like(fe._estimates)
    pcan_triples, log_pairs = np.empty(pcan_lut.shape[0] - 2, np.int64), np.empty(log_lut.shape[0] - 1, np.int64)
    ln._packed(pcan_lut, 3, pcan_triples)
    ln._packed(log_lut, 2, log_pairs)
    stage_calls = (
        ("window (largest magnitude, input shift)", lambda: ln._window_lanes(blk, 0, window, shift)),
        ("FFT input (window again, shift, leaf order)",
         lambda: ln._fft_input_lanes(blk, 0, window, shift, leaf_order, fr, fi)),
        ("FFT butterflies", lambda: ln._fft_stages_lanes(fr, fi, twiddles, stages)),
        ("real FFT split", lambda: ln._split_lanes(fr, fi, super_twiddles, sr, si)),
        ("energy and filterbank", lambda: ln._filterbank_lanes(sr, si, plan[_FB_START], plan[_FB_END], fstart, wstart,
                                                               widths, weights, unweights, energy, work)),
        ("sqrt, noise reduction, PCAN, log", lambda: ln._channels_lanes(plan, work, shift, est, 0, pcan_triples,
                                                                         log_pairs, planes, feats)))
    return list(stage_calls)


def lane_stage_rows(repeats: int, budget: float) -> list:
    """One row per stage of :func:`lane_stage_calls`, per stream-frame (1 thread)."""
    from ..frontend.lanes import LANES

    set_threads(1)
    rows = []
    for name, call in lane_stage_calls():
        row = FrontendRow(f"microfrontend lanes: {name}", f"one block of {LANES} streams", 1, "")
        t = measure(call, repeats, budget)
        row.dspsim_us, row.dspsim_cpu_us = _us(t, LANES), _cpu_us(t, LANES)
        row.status = "no peer (a stage of the N-stream frame)"
        rows.append(row)
    return rows


def dsp_problems() -> dict:
    """The CMSIS-DSP cases' inputs and tables, ``<case>/<array>`` (:mod:`dspsim.bench.cmsisdsp_peer`); a case
    whose golden file is absent is left out."""
    p = {"arm_rfft_q15/x": bench_signal(512, seed=1)[0]}
    filt, mfcc = GOLDEN / "cmsisdsp_filter.npz", GOLDEN / "cmsisdsp_mfcc.npz"
    if filt.is_file():
        with np.load(filt) as z:
            p["arm_fir_q15/coeffs"] = z["arm_fir_q15/t32_lowpass_random/coeffs"]
            p["arm_fir_q15/x"] = bench_signal(CHUNK, seed=2)[0]
            key = "arm_biquad_cascade_df1_q15/n3_p1_design_random/"
            p["arm_biquad_cascade_df1_q15/coeffs"] = z[key + "coeffs"]
            p["arm_biquad_cascade_df1_q15/post_shift"] = np.int64(z[key + "post_shift"])
            p["arm_biquad_cascade_df1_q15/x"] = bench_signal(CHUNK, seed=3)[0]
    if mfcc.is_file():
        with np.load(mfcc) as z:
            for name in ("dct", "pos", "lengths", "coefs", "window"):
                p[f"arm_mfcc_q15/{name}"] = z[f"arm_mfcc_q15/n512_m40_d13/{name}"]
            p["arm_mfcc_q15/x"] = bench_signal(512, seed=4)[0]
    return p


def dspsim_dsp_calls(p: dict) -> dict:
    """dspsim's call of each case in ``p`` (a fresh instance each)."""
    from .. import dsp

    out = {}
    if "arm_rfft_q15/x" in p:
        xr = p["arm_rfft_q15/x"]
        rfft = dsp.arm_rfft_init_q15(xr.shape[0])
        out["arm_rfft_q15"] = lambda: dsp.arm_rfft_q15(rfft, xr)
    if "arm_fir_q15/x" in p:
        xf = p["arm_fir_q15/x"]
        fir = dsp.arm_fir_init_q15(p["arm_fir_q15/coeffs"])
        out["arm_fir_q15"] = lambda: dsp.arm_fir_q15(fir, xf)
    if "arm_biquad_cascade_df1_q15/x" in p:
        cb, xb = p["arm_biquad_cascade_df1_q15/coeffs"], p["arm_biquad_cascade_df1_q15/x"]
        bq = dsp.arm_biquad_cascade_df1_init_q15(cb.shape[0] // 6, cb, int(p["arm_biquad_cascade_df1_q15/post_shift"]))
        out["arm_biquad_cascade_df1_q15"] = lambda: dsp.arm_biquad_cascade_df1_q15(bq, xb)
    if "arm_mfcc_q15/x" in p:
        k, xm = "arm_mfcc_q15/", p["arm_mfcc_q15/x"]
        n_mel = p[k + "pos"].shape[0]
        mfcc = dsp.arm_mfcc_init_q15(xm.shape[0], n_mel, p[k + "dct"].shape[0] // n_mel, p[k + "dct"],
                                     p[k + "pos"], p[k + "lengths"], p[k + "coefs"], p[k + "window"])
        out["arm_mfcc_q15"] = lambda: dsp.arm_mfcc_q15(mfcc, xm)
    return out


def _cmsisdsp_results(p: dict, repeats: int, budget: float) -> dict:
    """:func:`dspsim.bench.cmsisdsp_peer.run_cases` in-process or in the worker; RuntimeError when neither can
    run (the message says why)."""
    from . import cmsisdsp_peer

    try:
        import cmsisdsp  # noqa: F401
    except ImportError:
        python = os.environ.get(CMSISDSP_PYTHON)
        if not python:
            raise RuntimeError(f"cmsisdsp not importable (set {CMSISDSP_PYTHON} to a python that has it)") from None
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
            np.savez(src, **p)
            proc = subprocess.run([python, cmsisdsp_peer.__file__, str(src), str(dst),
                                   str(Path(__file__).with_name("timing.py")), str(repeats), str(budget)],
                                  capture_output=True, text=True, timeout=600, check=False)
            if proc.returncode:
                raise RuntimeError(f"cmsisdsp worker failed: {proc.stderr.strip().splitlines()[-1:]}")
            with np.load(dst) as z:
                return {k: z[k] for k in z.files}
    return cmsisdsp_peer.run_cases(p, measure, repeats, budget)


def dsp_rows(repeats: int, budget: float, run_peers: bool = True) -> list:
    """One row per CMSIS-DSP case (1 thread: the kernels are single-threaded on both sides)."""
    p = dsp_problems()
    set_threads(1)
    peer_res, peer_status = {}, ""
    if run_peers:
        try:
            peer_res = _cmsisdsp_results(p, repeats, budget)
        except Exception as exc:  # a missing or broken peer gives skipped rows, never a failed bench
            peer_status = f"peer skipped: {error_status(exc)[7:]}"
    rows = []
    for case, call in dspsim_dsp_calls(p).items():
        row = FrontendRow(case, ", ".join(f"{k.split('/')[1]} {v.shape}" for k, v in p.items()
                                          if k.startswith(case + "/") and np.ndim(v)), 1, "cmsisdsp")
        rows.append(row)
        try:
            t = measure(call, repeats, budget)
        except Exception as exc:
            row.status = error_status(exc)
            continue
        row.dspsim_us, row.dspsim_cpu_us = _us(t, 1), _cpu_us(t, 1)
        if f"{case}/out" not in peer_res:
            row.status = peer_status or ("peer not run (--no-peers)" if not run_peers else "peer gave no output")
            continue
        (p_min, _, p_cpu), theirs = peer_res[f"{case}/seconds"], np.asarray(peer_res[f"{case}/out"], np.int64)
        row.peer_us, row.peer_cpu_us = p_min * 1e6, p_cpu * 1e6
        row.speedup, row.cpu_speedup = _ratio(row.peer_us, row.dspsim_us), _ratio(row.peer_cpu_us, row.dspsim_cpu_us)
        mine = np.asarray(t.result, np.int64)
        row.compared = mine.size
        row.mismatches = int(np.count_nonzero(mine != theirs)) if mine.shape == theirs.shape else mine.size
        row.bit_exact = row.mismatches == 0
    return rows


def frontend_targets(rows: list[dict]) -> list[dict]:
    """The issue's front-end targets against the rows: the 1-thread row is the gate (bit-exact only); the other
    thread counts are shown in the note."""
    out = []
    for label, case, threshold in FRONTEND_TARGETS:
        done = [r for r in rows if r["case"] == case and r["speedup"] is not None]
        gate = [r for r in done if r["threads"] == 1]
        if not gate:
            out.append(dict(target=label, value=None, met=None, note=f"not measured at 1 thread ({case})"))
            continue
        g = gate[0]
        others = "; ".join(f"{r['speedup']:.2f}x at {r['threads']} threads" for r in done if r["threads"] != 1)
        out.append(dict(target=label, value=g["speedup"], met=g["speedup"] >= threshold and g["bit_exact"],
                        note=f"{g['speedup']:.2f}x at 1 thread (CPU time {g['cpu_speedup']:.2f}x); bit-exact: "
                             f"{g['bit_exact']}" + (f"; shown: {others}" if others else "")))
    return out


def run_frontend(size: str = "quick", threads=(1,), repeats: int = 3, budget: float = 0.2, log=None,
                 run_peers: bool = True) -> dict:
    """Every front-end row of ``size`` (``quick``: 8 chunks, 8 streams; ``full``: 50 chunks, 256 streams) as
    dictionaries, the CPU, and the targets; numba's thread count is restored afterwards."""
    from .._jit import get_num_threads, set_num_threads

    if size not in CHUNKS:
        raise ValueError(f"run_frontend: size must be one of {tuple(CHUNKS)}, got {size!r}")
    before = get_num_threads()
    try:
        rows = [asdict(r) for r in microfrontend_rows(size, threads, repeats, budget, run_peers)
                + dsp_rows(repeats, budget, run_peers)]
    finally:
        set_num_threads(before)
    if log:
        for r in rows:
            log(f"{r['case']:32s} {r['threads']}t dspsim {_fmt(r['dspsim_us'])} us, {r['peer'] or '-'} "
                f"{_fmt(r['peer_us'])} us, x{_fmt(r['speedup'])}  {r['status']}"
                + (f"  mismatches={r['mismatches']}/{r['compared']}" if r["mismatches"] is not None else ""))
    return dict(cpu=cpu_features(), python=sys.version.split()[0], rows=rows, targets=frontend_targets(rows))


def _fmt(v):
    return "-" if v is None else f"{v:.3f}"


def format_frontend(fe: dict) -> list[str]:
    """The front-end section of bench.md, as lines."""
    lines = ["", "## Audio front end and CMSIS-DSP kernels (us per frame / call)", "", f"CPU: {fe['cpu']}", "",
             "speedup = peer us / dspsim us (> 1: dspsim is faster); CPU: least process CPU time (all threads "
             "summed); mismatches: output values that differ from the peer's.", "",
             "| case | detail | threads | dspsim us | peer | peer us | speedup | CPU us dspsim / peer | CPU speedup | "
             "mismatches / compared | status |", "|---|---|---:|---:|---|---:|---:|---|---:|---|---|"]
    for r in fe["rows"]:
        exact = "" if r["mismatches"] is None else f"{r['mismatches']} / {r['compared']}"
        lines.append(f"| {r['case']} | {r['detail']} | {r['threads']} | {_fmt(r['dspsim_us'])} | {r['peer']} | "
                     f"{_fmt(r['peer_us'])} | {_fmt(r['speedup'])} | {_fmt(r['dspsim_cpu_us'])} / "
                     f"{_fmt(r['peer_cpu_us'])} | {_fmt(r['cpu_speedup'])} | {exact} | {r['status']} |")
    lines += ["", "### Front-end targets", ""]
    lines += [f"- {t['target']}: {'MET' if t['met'] else ('NOT MET' if t['met'] is False else 'n/a')} ({t['note']})"
              for t in fe["targets"]]
    return lines
