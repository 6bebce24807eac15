"""``dspsim frontend WAV --out DIR [--model MODEL.tflite --engine ENGINE]``: a 16 kHz mono int16 WAV through the
microfrontend, and through a streaming wake-word model after it (:mod:`.wakeword`).

Writes ``DIR/frontend.npz`` (``features`` (frames, 40) uint16; with a model also ``inputs``, ``outputs``,
``probabilities``) and ``DIR/summary.json`` / ``DIR/summary.md``. Bad input (not a WAV, not mono 16-bit, another
sample rate, a model that is not a streaming (1, stride, 40) int8 model) is a ValueError naming ``frontend``.
"""
from __future__ import annotations

import json
import os
import wave

import numpy as np

from .._io import open_regular


def read_wav(path, sample_rate: int = 16000) -> np.ndarray:
    """The int16 samples of a mono 16-bit PCM WAV at ``sample_rate``; ValueError naming ``frontend`` otherwise."""
    try:
        with open_regular(path, "frontend") as f, wave.open(f, "rb") as w:
            channels, width, rate, n = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
            size = os.fstat(f.fileno()).st_size
            data = w.readframes(min(n, size // max(1, channels * width)))  # a header claims, the file holds
    except FileNotFoundError:
        raise ValueError(f"frontend: {path}: no such file") from None
    except (wave.Error, EOFError) as exc:
        raise ValueError(f"frontend: {path}: not a PCM WAV file ({exc})") from None
    if channels != 1 or width != 2:
        raise ValueError(f"frontend: {path}: the frontend takes mono 16-bit PCM, got {channels} channel(s) of "
                         f"{8 * width} bits")
    if rate != sample_rate:
        raise ValueError(f"frontend: {path}: the sample rate is {rate} Hz; the frontend is configured for "
                         f"{sample_rate} Hz (resample first)")
    return np.frombuffer(data, "<i2").astype(np.int16)


def run_frontend(args, out, meta: dict, echo=print) -> int:
    """The verb: ``args.wav``, ``args.model``, ``args.engine``; writes into ``out`` (atomically)."""
    import time

    from ..harness.report import atomic_dir
    from .config import FrontendConfig
    from .microfrontend import microfrontend

    cfg = FrontendConfig()
    pcm = read_wav(args.wav, cfg.sample_rate)
    model = None
    if args.model:
        from ..load import load_model

        model = load_model(args.model, args.engine)
    t0 = time.perf_counter()
    feats = microfrontend(pcm, cfg)
    t_front = time.perf_counter() - t0
    arrays = {"features": feats}
    summary = {"wav": str(args.wav), "samples": int(pcm.shape[0]), "seconds_of_audio": pcm.shape[0] / cfg.sample_rate,
               "frames": int(feats.shape[0]), "config": cfg.as_dict(), "frontend_seconds": round(t_front, 4)}
    if model is not None:
        from .wakeword import run_wake_word

        t0 = time.perf_counter()
        r = run_wake_word(model, feats)
        arrays.update(inputs=r["inputs"], outputs=r["outputs"], probabilities=r["probabilities"])
        p = r["probabilities"]
        summary.update(model=str(args.model), engine=args.engine, stride=r["stride"], steps=int(p.shape[0]),
                       max_probability=float(p.max()) if p.size else None,
                       argmax_step=int(p.argmax()) if p.size else None,
                       model_seconds=round(time.perf_counter() - t0, 4))
    summary["run"] = meta
    lines = [f"{summary['frames']} frames of {cfg.num_channels} features from {summary['samples']} samples "
             f"({summary['seconds_of_audio']:.2f} s)"]
    if model is not None:
        mp = summary["max_probability"]
        lines.append(f"{summary['steps']} model steps (stride {summary['stride']}, engine {args.engine}); max "
                     f"probability {'-' if mp is None else f'{mp:.4f}'}"
                     + ("" if mp is None else f" at step {summary['argmax_step']}"))
    with atomic_dir(out, [args.wav] + ([args.model] if args.model else [])) as tmp:
        np.savez_compressed(tmp / "frontend.npz", **arrays)
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        (tmp / "summary.md").write_text("# dspsim frontend\n\n" + "\n".join(f"- {x}" for x in lines) + "\n",
                                        encoding="utf-8")
    for line in lines:
        echo(line)
    echo(f"Report: {out}")
    return 0
