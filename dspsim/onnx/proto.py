"""A minimal, bounds-checked reader of the ONNX protobuf (``onnx.proto``), no dependencies.

Only what dspsim runs is decoded: ModelProto (ir_version, opset_import, graph), GraphProto (node,
initializer, input, output, value_info), NodeProto, AttributeProto, TensorProto and ValueInfoProto
(tensor element type and shape). Field numbers are those of ``onnx/onnx.proto``.

Protobuf wire format in one paragraph: a message is a sequence of (key, value) records; the key is
a varint ``field_number << 3 | wire_type``. Wire type 0 is a varint (7 bits per byte, low first,
the top bit set on every byte but the last; negative int64 take 10 bytes), 1 a little-endian 64-bit
value, 2 a varint length followed by that many bytes (strings, sub-messages, packed repeated
scalars), 5 a little-endian 32-bit value. Unknown fields are skipped. Every length is checked
against the enclosing message before it is followed, so a corrupt or truncated file raises
``ValueError`` naming the message being read (never an IndexError, a protobuf traceback or a hang).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from .._io import shape_size
from .types import INT_QUANT, MINIFLOATS, NATIVE, PACKED_BITS, ElemType, QArray, code_dtype, type_name, unpack

_FUNC = "dspsim.onnx.load_model"


def _err(where: str, msg: str) -> ValueError:
    return ValueError(f"{_FUNC}: corrupt ONNX protobuf in {where}: {msg}")


def _varint(buf: bytes, pos: int, end: int, where: str):
    result = shift = 0
    while True:
        if pos >= end:
            raise _err(where, "truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _err(where, "varint longer than 10 bytes")


def _signed64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _fields(buf: bytes, start: int, end: int, where: str):
    """Yield (field number, wire type, value) of a message; value: int (types 0, 1, 5) or (start, end)."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos, end, where)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise _err(where, "field number 0")
        if wt == 0:
            v, pos = _varint(buf, pos, end, where)
        elif wt == 1:
            if pos + 8 > end:
                raise _err(where, f"truncated 64-bit field {num}")
            v = int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        elif wt == 5:
            if pos + 4 > end:
                raise _err(where, f"truncated 32-bit field {num}")
            v = int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        elif wt == 2:
            n, pos = _varint(buf, pos, end, where)
            if n > end - pos:
                raise _err(where, f"field {num} is {n} bytes long but only {end - pos} remain")
            v = (pos, pos + n)
            pos += n
        else:
            raise _err(where, f"unsupported wire type {wt} (field {num})")
        yield num, wt, v


def _packed_varints(buf, span, where):
    out = []
    pos, end = span
    while pos < end:
        v, pos = _varint(buf, pos, end, where)
        out.append(v)
    return out


def _repeated_ints(buf, wt, v, where, out):
    if wt == 0:
        out.append(_signed64(v))
    elif wt == 2:
        out.extend(_signed64(u) for u in _packed_varints(buf, v, where))
    else:
        raise _err(where, f"integer field with wire type {wt}")


def _repeated_fixed(buf, wt, v, where, out, fmt):
    size = struct.calcsize(fmt)
    if wt in (1, 5):
        if size != (8 if wt == 1 else 4):
            raise _err(where, f"fixed field of the wrong width (wire type {wt})")
        out.append(struct.unpack("<" + fmt, v.to_bytes(size, "little"))[0])
    elif wt == 2:
        a, b = v
        if (b - a) % size:
            raise _err(where, f"packed field of {b - a} bytes is not a multiple of {size}")
        out.extend(struct.unpack(f"<{(b - a) // size}{fmt}", buf[a:b]))
    else:
        raise _err(where, f"float field with wire type {wt}")


def _string(buf, wt, v, where) -> str:
    if wt != 2:
        raise _err(where, f"string field with wire type {wt}")
    try:
        return bytes(buf[v[0]:v[1]]).decode("utf-8")
    except UnicodeDecodeError:
        raise _err(where, "string is not UTF-8") from None


def _span(wt, v, where):
    if wt != 2:
        raise _err(where, f"sub-message with wire type {wt}")
    return v


def _scalar(wt, v, where) -> int:
    if wt != 0:
        raise _err(where, f"integer field with wire type {wt}")
    return _signed64(v)


# ------------------------------------------------------------------------------------------------
@dataclass
class TensorDef:
    """A TensorProto: ``name``, ``data_type`` (:class:`ElemType` value), ``dims`` and its storage."""

    name: str = ""
    data_type: int = 0
    dims: tuple = ()
    raw: bytes | None = None
    int32_data: list = field(default_factory=list)
    int64_data: list = field(default_factory=list)
    uint64_data: list = field(default_factory=list)
    float_data: list = field(default_factory=list)
    double_data: list = field(default_factory=list)
    external: bool = False

    def array(self, where: str = "tensor"):
        """The tensor's value: a numpy array for numpy-native types, a :class:`QArray` for int4/uint4/
        int2/uint2/float8/float4. ValueError for another type, external data or a size mismatch."""
        where = f"{where} {self.name!r}" if self.name else where
        if self.external:
            raise ValueError(f"{_FUNC}: {where} keeps its data in an external file, which dspsim does not read")
        try:
            t = ElemType(self.data_type)
        except ValueError:
            raise ValueError(f"{_FUNC}: {where} has unknown data_type {self.data_type}") from None
        if t not in NATIVE and t not in INT_QUANT and t not in MINIFLOATS:
            raise ValueError(f"{_FUNC}: {where} has element type {type_name(t)}, which dspsim does not support")
        if any(d < 0 for d in self.dims):
            raise ValueError(f"{_FUNC}: {where} has a negative dimension {self.dims}")
        try:
            n = shape_size(self.dims, _FUNC)
        except ValueError as exc:
            raise ValueError(f"{_FUNC}: {where}: {str(exc).split(': ', 1)[1]}") from None
        if t in PACKED_BITS or t in MINIFLOATS:
            if self.raw is not None:
                data = self.raw
            else:  # int32_data holds one storage byte per value (packed for sub-byte types)
                data = bytes(np.asarray(self.int32_data, np.int64).astype(np.uint8))
            try:
                return QArray(unpack(data, t, self.dims), t)
            except ValueError as e:
                raise ValueError(f"{_FUNC}: {where}: {str(e).split(': ', 1)[1]}") from None
        dt = code_dtype(t)
        if self.raw is not None:
            if len(self.raw) != n * dt.itemsize:
                raise ValueError(f"{_FUNC}: {where} of shape {self.dims} needs {n * dt.itemsize} raw bytes, "
                                 f"got {len(self.raw)}")
            return np.frombuffer(self.raw, dt.newbyteorder("<")).astype(dt).reshape(self.dims)
        if t == ElemType.FLOAT:
            vals = np.asarray(self.float_data, np.float32)
        elif t == ElemType.DOUBLE:
            vals = np.asarray(self.double_data, np.float64)
        elif t == ElemType.INT64:
            vals = np.asarray(self.int64_data, np.int64)
        elif t in (ElemType.UINT32, ElemType.UINT64):
            vals = np.asarray(self.uint64_data, np.uint64).astype(dt)
        elif t == ElemType.FLOAT16:  # bit patterns in int32_data
            vals = np.asarray(self.int32_data, np.int64).astype(np.uint16).view(np.float16)
        else:
            vals = np.asarray(self.int32_data, np.int64)
            info = np.iinfo(dt) if dt.kind in "iu" else None
            if info is not None and vals.size and (vals.min() < info.min or vals.max() > info.max):
                raise ValueError(f"{_FUNC}: {where} holds values outside {type_name(t)}")
            vals = vals.astype(dt)
        if vals.size != n:
            raise ValueError(f"{_FUNC}: {where} of shape {self.dims} needs {n} values, got {vals.size}")
        return vals.reshape(self.dims)


@dataclass
class ValueInfo:
    """A ValueInfoProto: name, element type (0 = unknown or not a tensor), shape (None entries are
    symbolic or unknown dimensions; shape None = unknown rank)."""

    name: str = ""
    elem_type: int = 0
    shape: tuple | None = None


@dataclass
class AttributeDef:
    name: str = ""
    type: int = 0
    f: float | None = None
    i: int | None = None
    s: bytes | None = None
    t: TensorDef | None = None
    floats: list = field(default_factory=list)
    ints: list = field(default_factory=list)
    strings: list = field(default_factory=list)
    has_graph: bool = False

    @property
    def value(self):
        """The attribute's value, by its declared type (AttributeProto.AttributeType)."""
        kinds = {1: self.f, 2: self.i, 3: self.s, 4: self.t, 6: self.floats, 7: self.ints, 8: self.strings}
        if self.type in kinds:
            v = kinds[self.type]
            return 0.0 if self.type == 1 and v is None else (0 if self.type == 2 and v is None else v)
        for v in (self.t, self.s, self.i, self.f):  # no declared type (old files): the field that is set
            if v is not None:
                return v
        return self.ints or self.floats or self.strings


@dataclass
class NodeDef:
    index: int = 0
    name: str = ""
    op_type: str = ""
    domain: str = ""
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    attributes: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"node {self.index} ({self.op_type}{' ' + repr(self.name) if self.name else ''})"


@dataclass
class GraphDef:
    name: str = ""
    nodes: list = field(default_factory=list)
    initializers: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    value_info: dict = field(default_factory=dict)
    sparse: int = 0


@dataclass
class ModelDef:
    ir_version: int = 0
    opsets: dict = field(default_factory=dict)  # domain -> version ("" = ai.onnx)
    graph: GraphDef = field(default_factory=GraphDef)
    producer: str = ""


# ------------------------------------------------------------------------------------------------
def read_tensor(buf: bytes, span, where: str = "TensorProto") -> TensorDef:
    t = TensorDef()
    dims: list = []
    for num, wt, v in _fields(buf, span[0], span[1], where):
        if num == 1:
            _repeated_ints(buf, wt, v, where, dims)
        elif num == 2:
            t.data_type = _scalar(wt, v, where)
        elif num == 3:
            raise _err(where, "segmented tensors are not supported")
        elif num == 4:
            _repeated_fixed(buf, wt, v, where, t.float_data, "f")
        elif num == 5:
            _repeated_ints(buf, wt, v, where, t.int32_data)
        elif num == 7:
            _repeated_ints(buf, wt, v, where, t.int64_data)
        elif num == 8:
            t.name = _string(buf, wt, v, where)
        elif num == 9:
            a, b = _span(wt, v, where)
            t.raw = bytes(buf[a:b])
        elif num == 10:
            _repeated_fixed(buf, wt, v, where, t.double_data, "d")
        elif num == 11:
            if wt == 0:
                t.uint64_data.append(v)
            else:
                t.uint64_data.extend(_packed_varints(buf, _span(wt, v, where), where))
        elif num == 14:
            t.external = _scalar(wt, v, where) == 1
    t.dims = tuple(dims)
    return t


def _read_attribute(buf, span, where) -> AttributeDef:
    a = AttributeDef()
    for num, wt, v in _fields(buf, span[0], span[1], where):
        if num == 1:
            a.name = _string(buf, wt, v, where)
        elif num == 2:
            fl: list = []
            _repeated_fixed(buf, wt, v, where, fl, "f")
            a.f = fl[-1]
        elif num == 3:
            a.i = _scalar(wt, v, where)
        elif num == 4:
            s = _span(wt, v, where)
            a.s = bytes(buf[s[0]:s[1]])
        elif num == 5:
            a.t = read_tensor(buf, _span(wt, v, where), f"{where} tensor")
        elif num in (6, 11):
            a.has_graph = True
        elif num == 7:
            _repeated_fixed(buf, wt, v, where, a.floats, "f")
        elif num == 8:
            _repeated_ints(buf, wt, v, where, a.ints)
        elif num == 9:
            s = _span(wt, v, where)
            a.strings.append(bytes(buf[s[0]:s[1]]))
        elif num == 20:
            a.type = _scalar(wt, v, where)
    return a


def _read_node(buf, span, index) -> NodeDef:
    n = NodeDef(index=index)
    where = f"node {index}"
    for num, wt, v in _fields(buf, span[0], span[1], where):
        if num == 1:
            n.inputs.append(_string(buf, wt, v, where))
        elif num == 2:
            n.outputs.append(_string(buf, wt, v, where))
        elif num == 3:
            n.name = _string(buf, wt, v, where)
        elif num == 4:
            n.op_type = _string(buf, wt, v, where)
        elif num == 5:
            a = _read_attribute(buf, _span(wt, v, where), f"{where} attribute")
            n.attributes[a.name] = a
        elif num == 7:
            n.domain = _string(buf, wt, v, where)
    return n


def _read_shape(buf, span, where):
    dims = []
    for num, wt, v in _fields(buf, span[0], span[1], where):
        if num == 1:
            d = None
            for n2, w2, v2 in _fields(buf, *_span(wt, v, where), where):
                if n2 == 1:
                    d = _scalar(w2, v2, where)
            dims.append(d)
    return tuple(dims)


def _read_value_info(buf, span, where) -> ValueInfo:
    vi = ValueInfo()
    for num, wt, v in _fields(buf, span[0], span[1], where):
        if num == 1:
            vi.name = _string(buf, wt, v, where)
        elif num == 2:  # TypeProto
            for n2, w2, v2 in _fields(buf, *_span(wt, v, where), where):
                if n2 == 1:  # tensor_type
                    for n3, w3, v3 in _fields(buf, *_span(w2, v2, where), where):
                        if n3 == 1:
                            vi.elem_type = _scalar(w3, v3, where)
                        elif n3 == 2:
                            vi.shape = _read_shape(buf, _span(w3, v3, where), where)
    return vi


def read_graph(buf, span) -> GraphDef:
    g = GraphDef()
    where = "GraphProto"
    for num, wt, v in _fields(buf, span[0], span[1], where):
        if num == 1:
            g.nodes.append(_read_node(buf, _span(wt, v, where), len(g.nodes)))
        elif num == 2:
            g.name = _string(buf, wt, v, where)
        elif num == 5:
            t = read_tensor(buf, _span(wt, v, where), f"initializer {len(g.initializers)}")
            g.initializers[t.name] = t
        elif num == 11:
            g.inputs.append(_read_value_info(buf, _span(wt, v, where), "graph input"))
        elif num == 12:
            g.outputs.append(_read_value_info(buf, _span(wt, v, where), "graph output"))
        elif num == 13:
            vi = _read_value_info(buf, _span(wt, v, where), "value_info")
            g.value_info[vi.name] = vi
        elif num == 15:
            g.sparse += 1
    return g


def read_model(data: bytes) -> ModelDef:
    """Parse the bytes of a .onnx file (ModelProto). ValueError for anything that is not one."""
    buf = memoryview(bytes(data))
    if len(buf) == 0:
        raise ValueError(f"{_FUNC}: the file is empty")
    m = ModelDef()
    graph_span = None
    where = "ModelProto"
    for num, wt, v in _fields(buf, 0, len(buf), where):
        if num == 1:
            m.ir_version = _scalar(wt, v, where)
        elif num == 2:
            m.producer = _string(buf, wt, v, where)
        elif num == 7:
            graph_span = _span(wt, v, where)
        elif num == 8:
            dom, ver = "", 0
            for n2, w2, v2 in _fields(buf, *_span(wt, v, where), "opset_import"):
                if n2 == 1:
                    dom = _string(buf, w2, v2, "opset_import")
                elif n2 == 2:
                    ver = _scalar(w2, v2, "opset_import")
            m.opsets["" if dom == "ai.onnx" else dom] = ver
    if graph_span is None:
        raise ValueError(f"{_FUNC}: the file holds no graph (not an ONNX ModelProto?)")
    m.graph = read_graph(buf, graph_span)
    return m
