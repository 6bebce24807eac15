"""Import an int8 .tflite model and run it through dspsim's kernels, layer by layer.

    model = dspsim.tflite.load_model("model.tflite")
    outputs = model.run(inputs)      # int8 in, int8 out; equal to LiteRT's reference kernels
    model.trace(inputs)              # every intermediate tensor, for a layer-by-layer diff

The flatbuffer is read by a small bounds-checked reader (no TensorFlow, no ``tflite`` package).
Supported builtin ops: :func:`supported_ops` (one module per family in :mod:`dspsim.tflite.builtins`);
anything else is refused with a ValueError that names the op and its version. ``engine`` picks
whose arithmetic is emulated (:mod:`dspsim.engines`: "litert" = LiteRT's reference kernels, "tflm" =
TensorFlow Lite Micro's reference kernels, "xnnpack" = LiteRT's default interpreter, or a device's own
profile, :class:`dspsim.DeviceProfile`); ``accumulator`` and ``rounding`` are shorthands for a device's
accumulator and its build's MultiplyByQuantizedMultiplier. ``dspsim run`` runs it layer by layer and diffs
against LiteRT.
"""
from __future__ import annotations

from .._io import model_bytes
from ..graph.executor import TensorInfo, TraceEntry
from .flatbuffer import read_model
from .model import Model
from .prepare import BUILTINS

__all__ = ["Model", "TensorInfo", "TraceEntry", "load_model", "supported_ops"]


def supported_ops() -> tuple:
    """The builtin operator names dspsim can load, sorted."""
    return tuple(sorted(BUILTINS))


def load_model(path_or_bytes, *, engine="litert", accumulator=None, rounding=None, approximate_float=False) -> Model:
    """Read a .tflite model (a path or the file's bytes) and prepare every operator.

    ``engine``: an engine name, a device's ``.toml`` file or an :class:`~dspsim.engines.EngineProfile`:
    "litert" (default, also for None; LiteRT's reference kernels, ``OpResolverType.BUILTIN_REF``), "tflm" (TensorFlow Lite
    Micro's reference kernels, e.g. FULLY_CONNECTED requantized with ``MultiplyByQuantizedMultiplier``),
    "xnnpack" (LiteRT's default interpreter: XNNPACK's kernels for FC, conv, depthwise, ADD, MUL, MEAN,
    LEAKY_RELU and QUANTIZE where its delegate takes the node), or a device's datapath
    (``dspsim.DeviceProfile.load("npu.toml")``).

    ``rounding``: "double" (the default build) or "single" (``TFLITE_SINGLE_ROUNDING``); ``accumulator``: a
    :class:`dspsim.Accumulator` for FC/conv/depthwise (default int32 wrapping), to run the whole model on a
    DSP's narrower or saturating register. Both are shorthands for a :class:`dspsim.DeviceProfile`.

    ``approximate_float``: run the float32 operators whose engine kernel dspsim does not reproduce (XNNPACK's f32
    SQRT, LiteRT's optimized float LOG_SOFTMAX) with TFLite's reference arithmetic instead of refusing them; each is
    named in an :class:`dspsim.engines.ApproximationWarning` with its measured difference, and listed in
    :attr:`Model.approximations`. Outputs downstream of one are not bit-exact with the engine.

    Raises ValueError for a corrupt or truncated file, an unsupported op (named), or a model that
    LiteRT's reference interpreter refuses; OSError when the path cannot be read.
    """
    data = model_bytes(path_or_bytes)
    return Model(read_model(data), engine, accumulator, rounding, approximate_float)
