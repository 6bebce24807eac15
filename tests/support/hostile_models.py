"""Models with hostile names, made from the committed test models without a converter (issue 31).

A flatbuffer string is a little-endian uint32 length, the bytes and a NUL: a name is rewritten in place
by another of the same length in bytes, which keeps every offset of the file valid.
"""
import struct
from pathlib import Path

MODELS = Path(__file__).parents[1] / "golden" / "models"

#: A 32-byte tensor name that leaves a C comment (``*/``), starts a preprocessor line, holds a quote,
#: a backslash, a newline, an ANSI escape (ESC [ 2 J: clear the screen) and a non-ASCII letter.
HOSTILE_NAME = '*/\n#error "pwned\\" \x1b[2J\u00e9 /*x'.encode("utf-8")
HOSTILE_NAME += b"x" * (32 - len(HOSTILE_NAME))


def renamed(model: bytes, renames: dict) -> bytes:
    """``model`` (a .tflite file's bytes) with each string ``old`` of ``renames`` (bytes -> bytes of the same
    length) rewritten; every ``old`` must occur exactly once."""
    out = bytearray(model)
    for old, new in renames.items():
        assert len(old) == len(new), (old, new)
        key = struct.pack("<I", len(old)) + old + b"\0"
        at = bytes(out).find(key)
        assert at >= 0 and bytes(out).find(key, at + 1) < 0, old
        out[at + 4:at + 4 + len(old)] = new
    return bytes(out)


def hostile_cnn() -> bytes:
    """cnn.tflite with tensor 11 named :data:`HOSTILE_NAME`."""
    return renamed((MODELS / "cnn.tflite").read_bytes(), {b"Relu6_1;add_1;depthwise;add_1/y1": HOSTILE_NAME})
