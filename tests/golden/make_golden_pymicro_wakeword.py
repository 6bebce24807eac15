"""What pymicro-wakeword's own TFLite C library computes on real speech: the golden vectors that tie it to
the ``litert-optimized`` engine.

pymicro-wakeword 2.5.0 ships ``libtensorflowlite_c.so`` (LiteRT's C API with its builtin optimized kernels, no
delegate) and four streaming microWakeWord models. This script speaks a few phrases with ``espeak-ng``, resamples
them linearly to 16 kHz (a test signal, not an audio pipeline to copy), runs pymicro-wakeword's own feature
front end (``MicroWakeWordFeatures``) and its own input quantization, and invokes each model through the
package's C library, one stream per model, frame after frame. It keeps the int8 input frames and the uint8
outputs:

    tests/golden/pymicro_wakeword.npz: <model>/in (frames, 1, 3, 40) int8, <model>/out (frames, 1) uint8,
    meta (0-d JSON: versions, phrases, models with their sha256)

    python tests/golden/make_golden_pymicro_wakeword.py      # pymicro-wakeword==2.5.0 and espeak-ng; seconds
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
from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pymicro_wakeword.npz")
PHRASES = ["okay nabu", "okay nabu, turn on the lights", "hey jarvis", "alexa what time is it", "hey mycroft",
           "the quick brown fox jumps over the lazy dog"]
MODELS = ("okay_nabu", "alexa", "hey_jarvis", "hey_mycroft")


def speech(text):
    """``text`` spoken by espeak-ng, as 16 kHz int16 samples (linear resampling)."""
    wav = subprocess.run(["espeak-ng", "--stdout", text], capture_output=True, check=True).stdout
    with wave.open(io.BytesIO(wav)) as w:
        rate, pcm = w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), np.int16)
    n = int(len(pcm) * 16000 / rate)
    return np.interp(np.linspace(0, len(pcm) - 1, n), np.arange(len(pcm)), pcm).astype(np.int16)


def run_model(name, audio):
    """(input frames, outputs) of model ``name`` on every phrase, through the package's C library."""
    mww = MicroWakeWord.from_builtin(Model(name))
    lib, frames, outs = mww.lib, [], []
    for pcm in audio:
        windows = list(MicroWakeWordFeatures().process_streaming(pcm.tobytes()))
        for k in range(0, len(windows) - mww.stride + 1, mww.stride):
            stacked = np.concatenate([w.reshape(1, 1, -1) for w in windows[k:k + mww.stride]], axis=1)
            q = np.round(stacked / mww.input_scale + mww.input_zero_point).astype(mww.input_dtype)  # as the package
            lib.TfLiteTensorCopyFromBuffer(mww.input_tensor, q.ctypes.data_as(ctypes.c_void_p), q.nbytes)
            lib.TfLiteInterpreterInvoke(mww.interpreter)
            y = np.empty(lib.TfLiteTensorByteSize(mww.output_tensor), np.uint8)
            lib.TfLiteTensorCopyToBuffer(mww.output_tensor, y.ctypes.data_as(ctypes.c_void_p), y.nbytes)
            frames.append(q.copy())
            outs.append(y.copy())
    with open(mww.tflite_model, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return np.stack(frames), np.stack(outs), digest


def main():
    audio = [speech(t) for t in PHRASES]
    arrays, models = {}, {}
    for name in MODELS:
        arrays[f"{name}/in"], arrays[f"{name}/out"], models[name] = run_model(name, audio)
    espeak = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout.strip()
    meta = {"versions": {"pymicro-wakeword": version("pymicro-wakeword"), "espeak-ng": espeak,
                         "numpy": np.__version__}, "phrases": PHRASES, "models": models}
    np.savez_compressed(OUT, meta=np.array(json.dumps(meta)), **arrays)
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
