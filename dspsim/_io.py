"""Reading a model file, shared by :mod:`dspsim.tflite` and :mod:`dspsim.onnx`."""
from __future__ import annotations

import os


class UnreadableModel(OSError, ValueError):
    """A model path that cannot be read: an OSError (its errno kept) and a ValueError naming the function."""


def model_bytes(path_or_bytes, func: str = "load_model") -> bytes:
    """The bytes of a model given as a path or as the file's bytes (TypeError for anything else;
    :class:`UnreadableModel`, an OSError and a ValueError, when the path cannot be read)."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes)
    if isinstance(path_or_bytes, (str, os.PathLike)):
        try:
            with open(path_or_bytes, "rb") as f:
                return f.read()
        except OSError as exc:
            err = UnreadableModel(f"{func}: cannot read the model {os.fspath(path_or_bytes)!r}: {exc.strerror or exc}")
            err.errno = exc.errno
            raise err from None
    raise TypeError(f"{func}: expected a path or bytes, got {type(path_or_bytes).__name__}")
