"""microWakeWord's streaming pipeline after the frontend, as pymicro-wakeword 2.5.0 runs it
(``MicroWakeWord.process_streaming_prob``): features -> int8 input -> streaming model -> probability.

* Features: the frontend's uint16 values times 0.0390625 (pymicro-features' float features, exact).
* Stride: the model's input time dimension (``input.shape[1]``, 3 for the four pymicro-wakeword models); the
  features of ``stride`` consecutive frames are stacked (1, stride, 40) and the model runs once per ``stride``
  frames, never on overlapping windows.
* Quantization: ``np.round(features / input_scale + input_zero_point).astype(int8)`` in float64, with the input
  scale as the float32 value the model stores. np.round ties to even; the cast wraps modulo 256 (numpy's
  float64 -> int8 conversion goes through a C integer and keeps the low 8 bits: loud features above
  ``127 * scale - zp`` wrap to negative codes, as they do in the package).
* Probability: ``(output - output_zero_point) * output_scale`` in float32 (pymicro-wakeword then averages a
  sliding window of these, ``sliding_window_size`` from its JSON; detection is that mean > ``probability_cutoff``).

The model is any object with dspsim's Model interface (``inputs``, ``outputs``, ``run``, ``reset``): this layer
does not load files (:func:`dspsim.load_model` does).
"""
from __future__ import annotations

import numpy as np

from .._errors import names_its_errors
from .microfrontend import features_as_float


@names_its_errors
def quantize_features(features, scale: float, zero_point: int, dtype=np.int8) -> np.ndarray:
    """pymicro-wakeword's input quantization of uint16 ``features``: round half to even of
    ``f * 0.0390625 / scale + zero_point`` in float64, wrapped to ``dtype`` (int8 or uint8)."""
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.int8), np.dtype(np.uint8)):
        raise TypeError(f"quantize_features: dtype must be int8 or uint8, got {dtype}")
    scale = float(scale)
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"quantize_features: scale must be a finite number > 0, got {scale}")
    q = np.round(features_as_float(features) / scale + int(zero_point)).astype(np.int64)
    lo = -128 if dtype == np.int8 else 0
    return ((q - lo) % 256 + lo).astype(dtype)


@names_its_errors
def run_wake_word(model, features) -> dict:
    """Stream uint16 ``features`` (frames, channels) through ``model`` from its initial state, ``stride`` frames
    per invocation: {"inputs": (steps, *input shape), "outputs": (steps, *output shape) raw, "probabilities":
    (steps,) float32 of the first output element, "stride": int}."""
    features = np.asarray(features)
    if features.dtype != np.uint16 or features.ndim != 2:
        raise TypeError(f"run_wake_word: features must be a 2-D uint16 array, got {features.dtype} {features.shape}")
    if len(model.inputs) != 1 or len(model.outputs) < 1:
        raise ValueError("run_wake_word: the model must have one input (a streaming microWakeWord model)")
    info, out_info = model.inputs[0], model.outputs[0]
    shape = tuple(info.shape)
    if len(shape) != 3 or shape[0] != 1 or shape[2] != features.shape[1]:
        raise ValueError(f"run_wake_word: the model's input {shape} is not (1, stride, {features.shape[1]})")
    if info.dtype not in (np.dtype(np.int8), np.dtype(np.uint8)) or not info.scale:
        raise ValueError(f"run_wake_word: the model's input must be quantized int8 or uint8, got {info.dtype}")
    stride = shape[1]
    model.reset()
    ins, outs = [], []
    for k in range(0, features.shape[0] - stride + 1, stride):
        x = quantize_features(features[k:k + stride], info.scale, info.zero_point, info.dtype).reshape(shape)
        y = model.run(x)
        y = y[0] if isinstance(y, (list, tuple)) else y
        ins.append(x)
        outs.append(np.asarray(y).copy())
    out_shape = tuple(out_info.shape)
    outputs = np.array(outs, out_info.dtype).reshape((-1,) + out_shape)
    first = outputs.reshape(len(outs), -1)[:, 0] if outs else np.zeros(0, out_info.dtype)
    scale = np.float32(out_info.scale or 1.0)
    probs = (first.astype(np.float32) - np.float32(out_info.zero_point or 0)) * scale
    return {"inputs": np.array(ins, info.dtype).reshape((-1,) + shape), "outputs": outputs,
            "probabilities": probs.astype(np.float32), "stride": stride}
