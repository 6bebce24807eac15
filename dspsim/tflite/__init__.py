"""Import an int8 .tflite model and run it through dspsim's kernels, layer by layer.

    model = dspsim.tflite.load_model("model.tflite")
    outputs = model.run(inputs)      # int8 in, int8 out; equal to LiteRT's reference kernels
    model.trace(inputs)              # every intermediate tensor, for a layer-by-layer diff

The flatbuffer is read by a small bounds-checked reader (no TensorFlow, no ``tflite`` package).
Supported builtin ops: see :data:`SUPPORTED_OPS`; anything else is refused with a ValueError that
names the op. ``engine`` picks whose arithmetic is emulated (:data:`ENGINES`: "litert" = LiteRT's
reference kernels, "xnnpack" = LiteRT's default interpreter, "tflite" = LiteRT but FULLY_CONNECTED
with MBQM, as TFLite Micro's and CMSIS-NN's FC); ``accumulator`` runs FC/conv/depthwise on a DSP's register
(:class:`dspsim.Accumulator`). ``dspsim run-tflite`` (:func:`cli_main`) diffs against LiteRT.
"""
from __future__ import annotations

import os

from .flatbuffer import read_model
from .model import Model, TensorInfo, TraceEntry
from .ops import ENGINES, SUPPORTED_OPS

__all__ = ["ENGINES", "Model", "SUPPORTED_OPS", "TensorInfo", "TraceEntry", "cli_main", "load_model"]


def load_model(path_or_bytes, *, engine="litert", accumulator=None) -> Model:
    """Read a .tflite model (a path or the file's bytes) and prepare every operator.

    ``engine``: "litert" (default; LiteRT's reference kernels, ``OpResolverType.BUILTIN_REF``),
    "tflite" (FULLY_CONNECTED requantized with ``MultiplyByQuantizedMultiplier`` as the TFLite /
    TFLM integer kernels) or "xnnpack" (LiteRT's default interpreter: XNNPACK's kernels for FC, conv,
    depthwise, ADD, MUL, MEAN, LEAKY_RELU and QUANTIZE where its delegate takes the node).

    ``accumulator``: a :class:`dspsim.Accumulator` for FC/conv/depthwise (default int32 wrapping), to
    run the whole model on a DSP's narrower or saturating register.

    Raises ValueError for a corrupt or truncated file, an unsupported op (named), or a model that
    LiteRT's reference interpreter refuses; OSError when the path cannot be read.
    """
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(path_or_bytes)
    elif isinstance(path_or_bytes, (str, os.PathLike)):
        with open(path_or_bytes, "rb") as f:
            data = f.read()
    else:
        raise TypeError(f"load_model: expected a path or bytes, got {type(path_or_bytes).__name__}")
    return Model(read_model(data), engine, accumulator)


def cli_main(argv=None) -> int:
    """``dspsim run-tflite MODEL [--input X.npy ...] [--compare-litert] [--out DIR]``; see :mod:`.cli`."""
    from .cli import main

    return main(argv)
