"""Reading a model file, shared by :mod:`dspsim.tflite` and :mod:`dspsim.onnx`."""
from __future__ import annotations

import os


def model_bytes(path_or_bytes, func: str = "load_model") -> bytes:
    """The bytes of a model given as a path or as the file's bytes (TypeError for anything else;
    OSError when the path cannot be read)."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes)
    if isinstance(path_or_bytes, (str, os.PathLike)):
        with open(path_or_bytes, "rb") as f:
            return f.read()
    raise TypeError(f"{func}: expected a path or bytes, got {type(path_or_bytes).__name__}")
