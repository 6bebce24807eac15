"""A small, bounds-checked reader of FlexBuffers, the format of a custom operator's ``custom_options``.

Only what custom operators store is decoded: a root map (or vector) of ints, uints, bools, floats, strings and
vectors of them. Every offset, length and nesting level is checked before it is followed, so hostile bytes raise
``ValueError`` naming ``what`` (never an IndexError, a loop or a crash).

Layout (google/flatbuffers ``flexbuffers.h``): the buffer ends with the root value, its packed type (``type << 2 |
log2(byte width)``) and the root's byte width. A scalar is stored inline; a string, vector or map is an unsigned
offset back from where it is stored. A vector holds its length one element before its first element, then
(untyped vectors and maps) one packed type byte per element after the last; a map's keys are a typed key vector
found three elements before its values (offset, then its byte width, then the length).
"""
from __future__ import annotations

import struct

_NULL, _INT, _UINT, _FLOAT, _KEY, _STRING = 0, 1, 2, 3, 4, 5
_INDIRECT_INT, _INDIRECT_UINT, _INDIRECT_FLOAT, _MAP, _VECTOR = 6, 7, 8, 9, 10
_VECTOR_INT, _VECTOR_UINT, _VECTOR_FLOAT, _VECTOR_KEY = 11, 12, 13, 14
_BLOB, _BOOL, _VECTOR_BOOL = 25, 26, 36
_MAX_DEPTH = 8
_MAX_ELEMENTS = 1 << 16


class _Reader:
    def __init__(self, data: bytes, what: str):
        self.data = bytes(data)
        self.what = what

    def fail(self, msg):
        raise ValueError(f"{self.what}: custom options (flexbuffer) {msg}")

    def uint(self, pos, width):
        if width not in (1, 2, 4, 8):
            self.fail(f"has a byte width of {width} (1, 2, 4 or 8 expected)")
        if pos < 0 or pos + width > len(self.data):
            self.fail(f"reads {width} bytes at {pos}, past the end of its {len(self.data)} bytes")
        return int.from_bytes(self.data[pos:pos + width], "little")

    def int(self, pos, width):
        v = self.uint(pos, width)
        return v - (1 << (8 * width)) if v >> (8 * width - 1) else v

    def float(self, pos, width):
        if width not in (4, 8):
            self.fail(f"holds a float {width} bytes wide (4 or 8 expected)")
        self.uint(pos, width)
        return struct.unpack_from("<f" if width == 4 else "<d", self.data, pos)[0]

    def target(self, pos, width):
        off = self.uint(pos, width)
        if off > pos:
            self.fail(f"has an offset {off} at {pos} pointing outside the buffer")
        return pos - off

    def length(self, vec, width):
        n = self.uint(vec - width, width)
        if n > _MAX_ELEMENTS or vec + n * width > len(self.data):
            self.fail(f"has a vector of {n} elements at {vec} running past the end")
        return n

    def key(self, pos):
        end = self.data.find(b"\0", pos)
        if pos < 0 or end < 0:
            self.fail(f"has a key at {pos} without its terminating zero")
        return self.data[pos:end].decode("utf-8", "replace")

    def value(self, pos, parent_width, packed, depth):
        if depth > _MAX_DEPTH:
            self.fail(f"nests deeper than {_MAX_DEPTH} levels")
        kind, width = packed >> 2, 1 << (packed & 3)
        if kind == _NULL:
            return None
        if kind == _INT:
            return self.int(pos, parent_width)
        if kind in (_UINT, _BOOL):
            v = self.uint(pos, parent_width)
            return bool(v) if kind == _BOOL else v
        if kind == _FLOAT:
            return self.float(pos, parent_width)
        at = self.target(pos, parent_width)
        if kind == _INDIRECT_INT:
            return self.int(at, width)
        if kind == _INDIRECT_UINT:
            return self.uint(at, width)
        if kind == _INDIRECT_FLOAT:
            return self.float(at, width)
        if kind == _KEY:
            return self.key(at)
        if kind in (_STRING, _BLOB):
            n = self.length(at, width)
            raw = self.data[at:at + n]
            return raw.decode("utf-8", "replace") if kind == _STRING else raw
        if kind in (_VECTOR, _MAP):
            return self.vector(at, width, depth, kind == _MAP)
        if kind in (_VECTOR_INT, _VECTOR_UINT, _VECTOR_FLOAT, _VECTOR_BOOL):
            n = self.length(at, width)
            read = {_VECTOR_INT: self.int, _VECTOR_UINT: self.uint, _VECTOR_FLOAT: self.float,
                    _VECTOR_BOOL: lambda p, w: bool(self.uint(p, w))}[kind]
            return [read(at + i * width, width) for i in range(n)]
        self.fail(f"holds a value of type {kind}, which dspsim does not read")

    def vector(self, at, width, depth, is_map):
        n = self.length(at, width)
        types = at + n * width
        if types + n > len(self.data):
            self.fail(f"has the element types of a vector at {at} past the end")
        values = [self.value(at + i * width, width, self.data[types + i], depth + 1) for i in range(n)]
        if not is_map:
            return values
        keys_at = self.target(at - 3 * width, width)
        keys_width = self.uint(at - 2 * width, width)
        if self.length(keys_at, keys_width) != n:
            self.fail(f"has a map at {at} with a different number of keys and values")
        keys = [self.key(self.target(keys_at + i * keys_width, keys_width)) for i in range(n)]
        return dict(zip(keys, values))


def read_flexbuffer(data: bytes, what: str = "read_flexbuffer"):
    """The value of the FlexBuffer ``data`` (a dict for a map, a list for a vector, else the scalar); ValueError
    starting with ``what`` on malformed or hostile bytes."""
    r = _Reader(data, what)
    if len(r.data) < 3:
        r.fail(f"has {len(r.data)} bytes; a flexbuffer has at least 3")
    width = r.data[-1]
    packed = r.data[-2]
    return r.value(len(r.data) - 2 - width, width, packed, 0)
