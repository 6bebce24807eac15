"""One entry for every model format: :func:`load_model` reads a ``.tflite`` or ``.onnx`` file (path or bytes)
with the front end its content names, under an engine of that format.

    model = dspsim.load_model("model.tflite")                       # engine "litert"
    model = dspsim.load_model("model.onnx", engine="onnxruntime-optimized")
    model = dspsim.load_model("model.tflite", engine="npu.toml")    # a device's own datapath

Every bring-up verb (``dspsim run | export-model | diagnose | validate``) loads models here.
"""
from __future__ import annotations

from ._io import model_bytes
from .engines import ModelFormat
from .engines import get as engine_profile

#: The engine each format runs under when none is named (ONNX: :func:`dspsim.onnx.host_engine`, the ONNX Runtime
#: build this CPU runs: with or without VNNI).
DEFAULT_ENGINES = {ModelFormat.TFLITE: "litert", ModelFormat.ONNX: "onnxruntime (with VNNI where the host has it)"}


def model_format(data: bytes) -> ModelFormat:
    """The format of a model file's bytes: a TFLite flatbuffer carries the identifier ``TFL3`` at bytes 4..8;
    anything else is read as an ONNX protobuf (whose reader refuses what is not one)."""
    return ModelFormat.TFLITE if data[4:8] == b"TFL3" else ModelFormat.ONNX


def default_engine(fmt: ModelFormat) -> str:
    """The engine a model of format ``fmt`` runs under when none is named: "litert" for TFLite; for ONNX the ONNX
    Runtime this host runs ("onnxruntime-vnni" on a CPU with AVX-512 VNNI or AVX-VNNI, else "onnxruntime")."""
    if ModelFormat(fmt) is ModelFormat.ONNX:
        from .onnx import host_engine

        return host_engine()
    return DEFAULT_ENGINES[ModelFormat(fmt)]


def load_model(path_or_bytes, engine=None):
    """Read a model (a path or the file's bytes), TFLite or ONNX by its content, under ``engine`` (a name, a
    device's ``.toml`` file or an :class:`~dspsim.engines.EngineProfile`; default :func:`default_engine`).

    Raises ValueError for a corrupt file, an unsupported operator, an engine that does not run the format;
    OSError when the path cannot be read.
    """
    data = model_bytes(path_or_bytes)
    fmt = model_format(data)
    profile = engine_profile(default_engine(fmt) if engine is None else engine, "load_model", fmt)
    if fmt is ModelFormat.TFLITE:
        from . import tflite

        return tflite.load_model(data, engine=profile)
    from . import onnx

    return onnx.load_model(data, engine=profile)
