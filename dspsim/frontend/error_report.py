"""``dspsim frontend-drift``: the microfrontend's per-stage error (:mod:`.error_study`) over input level, signal kind
and length, as a report (``frontend_drift.md`` / ``.json``) and two plots.

``stages_vs_level.png``: per signal kind, each stage's SQNR (dB) against the input's peak level (dBFS);
``features_over_time.png``: the RMS feature error of each frame of a long signal (the noise estimate's drift).
"""
from __future__ import annotations

import json
import math

import numpy as np

from .config import FrontendConfig
from .error_study import STAGES, stage_errors, study_signal

DEFAULT_LEVELS = (0, -10, -20, -30, -40, -50, -60, -70, -80, -90)
DEFAULT_KINDS = ("noise", "tone", "chirp")


def sweep(kinds=DEFAULT_KINDS, levels=DEFAULT_LEVELS, seconds: float = 1.0, long_seconds: float = 10.0,
          long_level: float = -30.0, wav=None, config: FrontendConfig | None = None, progress=None) -> dict:
    """Every (kind, level) pair's :func:`stage_errors`, plus one long noise signal per frame, plus a WAV's
    (``wav``: int16 samples) at its own level. ``progress(done, total)`` is called after each signal."""
    cfg = config or FrontendConfig()
    rows = []
    total = len(kinds) * len(levels) + 1 + (wav is not None)
    done = 0
    for kind in kinds:
        for level in levels:
            r = stage_errors(study_signal(kind, level, seconds, cfg.sample_rate), cfg)
            rows.append({"signal": kind, "level_dbfs": float(level), "seconds": seconds,
                         **{s: r[s].as_dict() for s in STAGES}})
            done += 1
            if progress:
                progress(done, total)
    long = stage_errors(study_signal("noise", long_level, long_seconds, cfg.sample_rate, seed=1), cfg,
                        per_frame=True)
    done += 1
    if progress:
        progress(done, total)
    result = {"config": cfg.as_dict(), "rows": rows,
              "long": {"signal": "noise", "level_dbfs": float(long_level), "seconds": long_seconds,
                       "frame_seconds": cfg.window_step / cfg.sample_rate,
                       "feature_rms_per_frame": [float(v) for v in long["feature_rms_per_frame"]],
                       **{s: long[s].as_dict() for s in STAGES}}}
    if wav is not None:
        peak = int(np.max(np.abs(wav.astype(np.int64)))) if wav.size else 0
        level = 20 * math.log10(peak / 32767) if peak else -math.inf
        r = stage_errors(wav, cfg)
        result["wav"] = {"level_dbfs": level, "seconds": wav.shape[0] / cfg.sample_rate,
                         **{s: r[s].as_dict() for s in STAGES}}
        if progress:
            progress(total, total)
    return result


def _fmt(e: dict) -> str:
    if e["sqnr_db"] is None:
        return "exact" if e["exact"] else "-inf"
    return f"{e['sqnr_db']:.1f}"


def _plotted(e: dict) -> float:
    """SQNR for the plot: exact drawn at 150 dB, an all-error stage at 0."""
    return e["sqnr_db"] if e["sqnr_db"] is not None else (150.0 if e["exact"] else 0.0)


def markdown(result: dict) -> str:
    """The report: a table of SQNR (dB) per stage for every signal, the long run's drift, what it means."""
    head = "| signal | level (dBFS) | " + " | ".join(STAGES) + " | features max err (LSB) |"
    lines = ["# dspsim frontend-drift: the fixed-point microfrontend against exact arithmetic", "",
             "Each stage's SQNR (dB) of the bit-exact fixed-point microfrontend against a float64 twin that runs the "
             "same algorithm with the same tables and exact arithmetic (dspsim.frontend.error_study). Units: window "
             "and fft in input LSB (the spectrum referred to the input), filterbank / noise_reduction / pcan in "
             "their outputs' units, features in uint16 LSB (1/64 nat).", "", head,
             "|" + "---|" * (len(STAGES) + 3)]
    for r in result["rows"]:
        lines.append(f"| {r['signal']} | {r['level_dbfs']:.0f} | " + " | ".join(_fmt(r[s]) for s in STAGES)
                     + f" | {r['features']['max_abs']:.0f} |")
    if "wav" in result:
        w = result["wav"]
        lines.append(f"| WAV | {w['level_dbfs']:.1f} | " + " | ".join(_fmt(w[s]) for s in STAGES)
                     + f" | {w['features']['max_abs']:.0f} |")
    g = result["long"]
    per = np.asarray(g["feature_rms_per_frame"])
    n = per.shape[0]
    first, last = per[: max(n // 10, 1)].mean(), per[-max(n // 10, 1):].mean()
    lines += ["", f"Long run: {g['seconds']:.0f} s of noise at {g['level_dbfs']:.0f} dBFS, {n} frames: RMS feature "
              f"error {first:.2f} LSB over the first tenth of the frames, {last:.2f} over the last tenth "
              "(the noise estimate's state: features_over_time.png).", "",
              "Reading it:", "",
              "- window: the truncating Q12 shift costs at most 1 LSB, so its SQNR falls 20 dB per 20 dB of level.",
              "- fft: kissfft's int16 per-stage 1/radix scaling leaves a noise floor that the input shift (block "
              "floating point) only partly recovers: about 50-60 dB at the top, falling with the level below "
              "-30 dBFS.",
              "- pcan: the gain is an int16 table value; on loud inputs the noise estimate is large and the gain is "
              "a few counts (1 where exact arithmetic gives 1.36), so PCAN's error grows with the level.",
              "- features: noise reduction removes what is stationary and PCAN normalises it, so much of the output "
              "sits at a few integer counts, where one count is a large step of the log (0 against ln(1.1 * 8) * 64 "
              "= 139 LSB); channels the signal does not reach carry the FFT's floor the same way. The features' "
              "SQNR is therefore far below the spectrum's at every level."]
    return "\n".join(lines) + "\n"


def plots(result: dict, out) -> list:
    """The two figures into ``out``; their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted({r["signal"] for r in result["rows"]}, key=list(DEFAULT_KINDS).index)
    with plt.rc_context({"font.size": 11, "axes.titlesize": 12, "legend.fontsize": 10}):
        fig, axes = plt.subplots(1, len(kinds), figsize=(5.0 * len(kinds), 4.6), sharey=True, squeeze=False)
        markers = "os^vDP"
        for ax, kind in zip(axes[0], kinds):
            rows = [r for r in result["rows"] if r["signal"] == kind]
            levels = [r["level_dbfs"] for r in rows]
            for s, m in zip(STAGES, markers):
                y = [min(_plotted(r[s]), 150.0) for r in rows]
                ax.plot(levels, y, marker=m, linewidth=1.5, markersize=5, label=s)
            ax.set_title(f"{kind}")
            ax.set_xlabel("input peak level (dBFS)")
            ax.grid(True, alpha=0.3)
        axes[0, 0].set_ylabel("SQNR against exact arithmetic (dB)")
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=len(STAGES), frameon=False)
        fig.suptitle("Fixed-point microfrontend: error per stage")
        fig.tight_layout(rect=(0, 0.08, 1, 0.95))
        fig.savefig(out / "stages_vs_level.png", dpi=110)
        plt.close(fig)

        g = result["long"]
        per = np.asarray(g["feature_rms_per_frame"])
        fig, ax = plt.subplots(figsize=(9.0, 3.8))
        ax.plot(np.arange(per.shape[0]) * g["frame_seconds"], per, linewidth=1.2)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("RMS feature error (LSB, 1/64 nat)")
        ax.set_title(f"Noise at {g['level_dbfs']:.0f} dBFS: feature error per frame")
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "features_over_time.png", dpi=110)
        plt.close(fig)
    return ["stages_vs_level.png", "features_over_time.png"]


def _numbers(text: str, what: str, lo: float, hi: float) -> tuple:
    try:
        vals = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise ValueError(f"frontend-drift: {what} must be comma-separated numbers, got {text!r}") from None
    if not vals or any(not (lo <= v <= hi) for v in vals):
        raise ValueError(f"frontend-drift: every {what} must be in {lo:g}..{hi:g}, got {text!r}")
    return vals


def run_frontend_drift(args, out, meta: dict, echo=print, progress=None) -> int:
    """The verb: ``args.levels``, ``args.signals``, ``args.seconds``, ``args.wav``, ``args.no_plots``."""
    from ..harness.report import atomic_dir
    from .cli import read_wav

    levels = _numbers(args.levels, "level", -120.0, 0.0) if args.levels else DEFAULT_LEVELS
    kinds = tuple(args.signals.split(",")) if args.signals else DEFAULT_KINDS
    bad = [k for k in kinds if k not in DEFAULT_KINDS]
    if bad:
        raise ValueError(f"frontend-drift: --signals takes {', '.join(DEFAULT_KINDS)}; got {', '.join(bad)}")
    if not 0.05 <= args.seconds <= 600:
        raise ValueError(f"frontend-drift: --seconds must be in 0.05..600, got {args.seconds}")
    cfg = FrontendConfig()
    wav = read_wav(args.wav, cfg.sample_rate) if args.wav else None
    result = sweep(kinds, levels, seconds=args.seconds, long_seconds=max(10.0, args.seconds), wav=wav, config=cfg,
                   progress=progress)
    result["run"] = meta
    with atomic_dir(out, [args.wav] if args.wav else []) as tmp:
        (tmp / "frontend_drift.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        (tmp / "frontend_drift.md").write_text(markdown(result), encoding="utf-8")
        if not args.no_plots:
            plots(result, tmp)
    worst = min(_plotted(r["features"]) for r in result["rows"])
    echo(f"{len(result['rows'])} signals, {len(STAGES)} stages; the features' SQNR is {worst:.1f} dB at worst; "
         f"report in {out}")
    return 0
