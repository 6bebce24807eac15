"""What pymicro-features' MicroFrontend (TFLite Micro's audio microfrontend as a C extension) and the microWakeWord
models compute on real and edge audio: the golden vectors of dspsim.frontend.

Kinds of 16 kHz int16 audio, a few seconds each, every stream run from a fresh frontend: speech (espeak-ng,
resampled linearly to 16 kHz: a test signal), the same speech at full scale (clipped), white noise at two levels,
silence and a +-1 dither, full-scale tones (1 kHz sine, a 100-7900 Hz sweep, the Nyquist square
+32767/-32768, both DC rails), and uniform random int16. Each stream goes through ``MicroFrontend.process_samples``
160 samples at a time, advancing by ``samples_read``, as pymicro-wakeword feeds it; the float features are
exact multiples of 0.0390625 and are kept as the frontend's uint16 values.

On the speech streams, each of pymicro-wakeword's four models then runs as the package runs it (stride = the
input's time dimension, ``np.round(features / input_scale + zero_point).astype(int8)``), through the package's
own LiteRT C library (``<model>/litert_out``) and through the tflite-micro wheel's interpreter on the same int8
input (``<model>/tflm_out``), one fresh interpreter per stream; so do the nine deployed microWakeWord models of
../shared/models/fresh (``mww_*``, v1 with stride 1, v2 with stride 3), through the tflite-micro wheel only.

    tests/golden/microfrontend.npz: <kind>/pcm int16, <kind>/features (frames, 40) uint16,
    <kind>/<model>/in (steps, 1, stride, 40) int8, <kind>/<model>/litert_out, <kind>/<model>/tflm_out (steps, 1)
    uint8 (the mww_* models: in and tflm_out), meta (0-d JSON: versions, kinds, models and fresh_models with
    sha256)

    /tmp/interp/bin/python tests/golden/make_golden_microfrontend.py   # pymicro-features 2.0.2,
                                                                        # pymicro-wakeword 2.5.0, tflite-micro
"""
import ctypes
import hashlib
import io
import json
import os
import subprocess
import wave
from importlib.metadata import version

import numpy as np
from pymicro_features import MicroFrontend
from pymicro_wakeword import MicroWakeWord, Model

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "microfrontend.npz")
RATE = 16000
SCALE = 0.0390625
PHRASES = {"okay_nabu": "okay nabu", "hey_jarvis": "hey jarvis, turn on the lights",
           "alexa": "alexa, what time is it"}
MODELS = ("okay_nabu", "alexa", "hey_jarvis", "hey_mycroft")
FRESH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "models", "fresh")
FRESH_MODELS = ("mww_v1_alexa", "mww_v1_hey_jarvis", "mww_v1_okay_nabu", "mww_v2_okay_nabu", "mww_v2_vad",
                "mww_v2x_choo_choo_homie", "mww_v2x_hey_home_assistant", "mww_v2x_hey_peppa_pig",
                "mww_v2x_okay_computer")


def speech(text):
    """``text`` spoken by espeak-ng, as 16 kHz int16 samples (linear resampling)."""
    wav = subprocess.run(["espeak-ng", "--stdout", text], capture_output=True, check=True).stdout
    with wave.open(io.BytesIO(wav)) as w:
        rate, pcm = w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), np.int16)
    n = int(len(pcm) * RATE / rate)
    return np.interp(np.linspace(0, len(pcm) - 1, n), np.arange(len(pcm)), pcm).astype(np.int16)


def kinds():
    rng = np.random.default_rng(20261205)
    t = np.arange(RATE) / RATE
    out = {f"speech_{k}": speech(v) for k, v in PHRASES.items()}
    loud = out["speech_hey_jarvis"].astype(np.float64)
    out["speech_full_scale"] = np.clip(np.round(loud * (4 * 32767 / np.abs(loud).max())), -32768, 32767)
    out["noise_1000"] = np.clip(np.round(rng.normal(0, 1000, RATE)), -32768, 32767)
    out["noise_12000"] = np.clip(np.round(rng.normal(0, 12000, RATE)), -32768, 32767)
    out["silence"] = np.zeros(RATE // 2)
    out["dither"] = rng.integers(-1, 2, RATE // 2)
    out["tone_1k_full_scale"] = np.round(32767 * np.sin(2 * np.pi * 1000 * t))
    sweep = 2 * np.pi * (100 * t + (7900 - 100) / 2 * t * t)
    out["sweep_full_scale"] = np.round(32767 * np.sin(sweep))
    out["nyquist_square"] = np.tile([32767, -32768], RATE // 4)
    out["dc_max"] = np.full(RATE // 4, 32767)
    out["dc_min"] = np.full(RATE // 4, -32768)
    out["random_int16"] = rng.integers(-32768, 32768, 2 * RATE)
    return {k: np.asarray(v).astype(np.int16) for k, v in out.items()}


def features(pcm):
    """Every frame pymicro-features gives for ``pcm``, fed 160 samples at a time, as its uint16 values."""
    fe, frames, i = MicroFrontend(), [], 0
    while i + 160 <= len(pcm):
        r = fe.process_samples(pcm[i:i + 160].tobytes())
        i += r.samples_read
        if r.features:
            f = np.array(r.features)
            q = np.round(f / SCALE)
            assert (q * SCALE == f).all() and q.min() >= 0 and q.max() <= 65535
            frames.append(q.astype(np.uint16))
    return np.array(frames, np.uint16).reshape(-1, 40)


def run_model(name, feats):
    """(int8 inputs, LiteRT uint8 outputs, TFLM uint8 outputs, sha256) of model ``name`` streaming ``feats``."""
    from tflite_micro.python.tflite_micro import runtime

    mww = MicroWakeWord.from_builtin(Model(name))
    tflm = runtime.Interpreter.from_file(str(mww.tflite_model), arena_size=1 << 22)
    lib, ins, outs, touts = mww.lib, [], [], []
    windows = [f.astype(np.float32) * np.float32(SCALE) for f in feats]  # the float features pymicro gives
    windows = [np.asarray(w, np.float64).reshape(1, 1, -1) for w in windows]
    for k in range(0, len(windows) - mww.stride + 1, mww.stride):
        stacked = np.concatenate(windows[k:k + mww.stride], axis=1)
        q = np.round(stacked / mww.input_scale + mww.input_zero_point).astype(mww.input_dtype)  # as the package
        lib.TfLiteTensorCopyFromBuffer(mww.input_tensor, q.ctypes.data_as(ctypes.c_void_p), q.nbytes)
        lib.TfLiteInterpreterInvoke(mww.interpreter)
        y = np.empty(lib.TfLiteTensorByteSize(mww.output_tensor), np.uint8)
        lib.TfLiteTensorCopyToBuffer(mww.output_tensor, y.ctypes.data_as(ctypes.c_void_p), y.nbytes)
        tflm.set_input(q, 0)
        tflm.invoke()
        ins.append(q.copy())
        outs.append(y.reshape(1).copy())
        touts.append(np.asarray(tflm.get_output(0)).reshape(1).astype(np.uint8))
    with open(mww.tflite_model, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    shape = (-1, 1, mww.stride, 40)
    return (np.array(ins, np.int8).reshape(shape), np.array(outs, np.uint8).reshape(-1, 1),
            np.array(touts, np.uint8).reshape(-1, 1), digest)


def run_fresh_model(path, feats):
    """(int8 inputs, TFLM uint8 outputs, sha256) of a deployed microWakeWord model streaming ``feats`` through the
    tflite-micro wheel, fed as pymicro-wakeword feeds its own models (stride = input time dimension, same
    quantization with the float32 input scale as a Python float)."""
    from tflite_micro.python.tflite_micro import runtime

    it = runtime.Interpreter.from_file(path, arena_size=1 << 22)
    d = it.get_input_details(0)
    shape, dtype = tuple(int(v) for v in d["shape"]), d["dtype"]
    scale = float(d["quantization_parameters"]["scales"][0])
    zero_point = int(d["quantization_parameters"]["zero_points"][0])
    stride = shape[1]
    windows = [np.asarray(f.astype(np.float32) * np.float32(SCALE), np.float64).reshape(1, 1, -1) for f in feats]
    ins, outs = [], []
    for k in range(0, len(windows) - stride + 1, stride):
        q = np.round(np.concatenate(windows[k:k + stride], axis=1) / scale + zero_point).astype(dtype)
        it.set_input(q.reshape(shape), 0)
        it.invoke()
        ins.append(q.reshape(shape).copy())
        outs.append(np.asarray(it.get_output(0)).reshape(1).astype(np.uint8))
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return np.array(ins, dtype).reshape((-1,) + shape), np.array(outs, np.uint8).reshape(-1, 1), digest


def main():
    arrays, models, counts, fresh = {}, {}, {}, {}
    for kind, pcm in kinds().items():
        feats = features(pcm)
        arrays[f"{kind}/pcm"], arrays[f"{kind}/features"] = pcm, feats
        counts[kind] = {"samples": int(len(pcm)), "frames": int(len(feats))}
        if kind.startswith("speech_"):
            for name in MODELS:
                x, y, ty, models[name] = run_model(name, feats)
                arrays[f"{kind}/{name}/in"], arrays[f"{kind}/{name}/litert_out"] = x, y
                arrays[f"{kind}/{name}/tflm_out"] = ty
            for name in FRESH_MODELS:
                path = os.path.join(FRESH, f"{name}.tflite")
                if os.path.isfile(path):
                    arrays[f"{kind}/{name}/in"], arrays[f"{kind}/{name}/tflm_out"], fresh[name] = \
                        run_fresh_model(path, feats)
    espeak = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout.strip()
    meta = {"versions": {p: version(p) for p in ("pymicro-features", "pymicro-wakeword", "tflite-micro", "numpy")},
            "espeak-ng": espeak, "phrases": PHRASES, "kinds": counts, "models": models, "fresh_models": fresh,
            "feature_scale": SCALE}
    np.savez_compressed(OUT, meta=np.array(json.dumps(meta)), **arrays)
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
