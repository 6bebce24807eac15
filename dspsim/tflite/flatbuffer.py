"""A minimal, bounds-checked reader of the TFLite flatbuffer (``schema.fbs``), no dependencies.

Only what dspsim runs is decoded: the operator codes, every subgraph (tensors, inputs, outputs,
operators with their builtin options) and the buffers. Every offset is checked against the
buffer before it is followed, so a corrupt or truncated file raises ``ValueError`` (never an
IndexError or a crash). Field slots below are those of ``tflite/converter/schema/schema.fbs``
(google-ai-edge/LiteRT); a union takes two slots (type, then value).

Flatbuffer layout in one paragraph: the file starts with a uint32 offset to the root table and a
4-byte identifier ("TFL3"). A table starts with an int32 ``soffset``; its vtable sits at
``table - soffset`` and holds uint16 (vtable size, table size, field offsets...), 0 meaning "absent,
take the default". Offsets to strings, vectors and sub-tables are uint32, relative to where they
are stored. Vectors and strings start with a uint32 element count.
"""
from __future__ import annotations

import struct

import numpy as np

from ..graph.ir import ModelDef, OperatorDef, SubgraphDef, TensorDef
from .flexbuffers import read_flexbuffer

_FUNC = "load_model"

# BuiltinOperator codes 0..161 in order (schema.fbs); higher codes are named BUILTIN_<code>.
_OP_NAMES = """
    ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D DEPTH_TO_SPACE DEQUANTIZE EMBEDDING_LOOKUP
    FLOOR FULLY_CONNECTED HASHTABLE_LOOKUP L2_NORMALIZATION L2_POOL_2D LOCAL_RESPONSE_NORMALIZATION
    LOGISTIC LSH_PROJECTION LSTM MAX_POOL_2D MUL RELU RELU_N1_TO_1 RELU6 RESHAPE RESIZE_BILINEAR RNN
    SOFTMAX SPACE_TO_DEPTH SVDF TANH CONCAT_EMBEDDINGS SKIP_GRAM CALL CUSTOM EMBEDDING_LOOKUP_SPARSE PAD
    UNIDIRECTIONAL_SEQUENCE_RNN GATHER BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND TRANSPOSE MEAN SUB DIV SQUEEZE
    UNIDIRECTIONAL_SEQUENCE_LSTM STRIDED_SLICE BIDIRECTIONAL_SEQUENCE_RNN EXP TOPK_V2 SPLIT LOG_SOFTMAX
    DELEGATE BIDIRECTIONAL_SEQUENCE_LSTM CAST PRELU MAXIMUM ARG_MAX MINIMUM LESS NEG PADV2 GREATER
    GREATER_EQUAL LESS_EQUAL SELECT SLICE SIN TRANSPOSE_CONV SPARSE_TO_DENSE TILE EXPAND_DIMS EQUAL
    NOT_EQUAL LOG SUM SQRT RSQRT SHAPE POW ARG_MIN FAKE_QUANT REDUCE_PROD REDUCE_MAX PACK LOGICAL_OR
    ONE_HOT LOGICAL_AND LOGICAL_NOT UNPACK REDUCE_MIN FLOOR_DIV REDUCE_ANY SQUARE ZEROS_LIKE FILL FLOOR_MOD
    RANGE RESIZE_NEAREST_NEIGHBOR LEAKY_RELU SQUARED_DIFFERENCE MIRROR_PAD ABS SPLIT_V UNIQUE CEIL
    REVERSE_V2 ADD_N GATHER_ND COS WHERE RANK ELU REVERSE_SEQUENCE MATRIX_DIAG QUANTIZE MATRIX_SET_DIAG
    ROUND HARD_SWISH IF WHILE NON_MAX_SUPPRESSION_V4 NON_MAX_SUPPRESSION_V5 SCATTER_ND SELECT_V2 DENSIFY
    SEGMENT_SUM BATCH_MATMUL PLACEHOLDER_FOR_GREATER_OP_CODES CUMSUM CALL_ONCE BROADCAST_TO RFFT2D CONV_3D
    IMAG REAL COMPLEX_ABS HASHTABLE HASHTABLE_FIND HASHTABLE_IMPORT HASHTABLE_SIZE REDUCE_ALL CONV_3D_TRANSPOSE
    VAR_HANDLE READ_VARIABLE ASSIGN_VARIABLE BROADCAST_ARGS RANDOM_STANDARD_NORMAL BUCKETIZE RANDOM_UNIFORM
    MULTINOMIAL GELU DYNAMIC_UPDATE_SLICE RELU_0_TO_1 UNSORTED_SEGMENT_PROD UNSORTED_SEGMENT_MAX
    UNSORTED_SEGMENT_SUM ATAN2 UNSORTED_SEGMENT_MIN SIGN BITCAST BITWISE_XOR RIGHT_SHIFT
""".split()

# TensorType -> numpy dtype (None: a type dspsim does not hold as an array)
_TENSOR_TYPES = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_, 7: np.int16,
                 9: np.int8, 10: np.float64, 12: np.uint64, 15: np.uint32, 16: np.uint16}
_TYPE_NAMES = {5: "STRING", 8: "COMPLEX64", 11: "COMPLEX128", 13: "RESOURCE", 14: "VARIANT", 17: "INT4",
               18: "BFLOAT16", 19: "INT2", 20: "UINT4", 21: "FLOAT8_E4M3FN", 22: "FLOAT8_E5M2"}

_INT4 = 17


def _unpacked_int4(buf, raw, shape, what):
    """A constant INT4 tensor's codes as int8: two per byte, the first in the low nibble, each sign-extended
    (TFLite's ``UnpackDenseInt4IntoInt8``; an odd count leaves the last high nibble unused)."""
    n = int(np.prod(shape, dtype=np.int64))
    if raw.size != (n + 1) // 2:
        buf.fail(f"{what} has {raw.size} data bytes, INT4 shape {shape} needs {(n + 1) // 2} (two codes a byte)")
    nibbles = np.empty(2 * raw.size, np.uint8)
    nibbles[0::2], nibbles[1::2] = raw & 0x0F, raw >> 4
    return ((nibbles[:n].astype(np.int8) << 4) >> 4).reshape(shape)


# Builtin options tables: union type value -> (name, fields (slot, attribute, kind, default)).
# kinds: b = int8/bool/enum byte, i = int32, f = float32, s = string, vi = [int]
_ACT = "fused_activation_function"
_OPTIONS = {
    1: ("Conv2DOptions", ((0, "padding", "b", 0), (1, "stride_w", "i", 0), (2, "stride_h", "i", 0),
                          (3, _ACT, "b", 0), (4, "dilation_w_factor", "i", 1), (5, "dilation_h_factor", "i", 1))),
    2: ("DepthwiseConv2DOptions", ((0, "padding", "b", 0), (1, "stride_w", "i", 0), (2, "stride_h", "i", 0),
                                   (3, "depth_multiplier", "i", 0), (4, _ACT, "b", 0),
                                   (5, "dilation_w_factor", "i", 1), (6, "dilation_h_factor", "i", 1))),
    5: ("Pool2DOptions", ((0, "padding", "b", 0), (1, "stride_w", "i", 0), (2, "stride_h", "i", 0),
                          (3, "filter_width", "i", 0), (4, "filter_height", "i", 0), (5, _ACT, "b", 0))),
    8: ("FullyConnectedOptions", ((0, _ACT, "b", 0), (1, "weights_format", "b", 0), (2, "keep_num_dims", "b", 0),
                                  (3, "asymmetric_quantize_inputs", "b", 0))),
    10: ("ConcatenationOptions", ((0, "axis", "i", 0), (1, _ACT, "b", 0))),
    9: ("SoftmaxOptions", ((0, "beta", "f", 0.0),)),
    11: ("AddOptions", ((0, _ACT, "b", 0), (1, "pot_scale_int16", "b", 1))),
    17: ("ReshapeOptions", ((0, "new_shape", "vi", None),)),
    15: ("ResizeBilinearOptions", ((2, "align_corners", "b", 0), (3, "half_pixel_centers", "b", 0))),
    19: ("SpaceToDepthOptions", ((0, "block_size", "i", 0),)),
    23: ("GatherOptions", ((0, "axis", "i", 0), (1, "batch_dims", "i", 0))),
    26: ("TransposeOptions", ()),
    32: ("StridedSliceOptions", ((0, "begin_mask", "i", 0), (1, "end_mask", "i", 0), (2, "ellipsis_mask", "i", 0),
                              (3, "new_axis_mask", "i", 0), (4, "shrink_axis_mask", "i", 0), (5, "offset", "b", 0))),
    35: ("SplitOptions", ((0, "num_splits", "i", 0),)),
    37: ("CastOptions", ((0, "in_data_type", "b", 0), (1, "out_data_type", "b", 0))),
    40: ("ArgMaxOptions", ((0, "output_type", "b", 0),)),
    48: ("SliceOptions", ()),
    59: ("PackOptions", ((0, "values_count", "i", 0), (1, "axis", "i", 0))),
    64: ("UnpackOptions", ((0, "num", "i", 0), (1, "axis", "i", 0))),
    74: ("ResizeNearestNeighborOptions", ((0, "align_corners", "b", 0), (1, "half_pixel_centers", "b", 0))),
    77: ("MirrorPadOptions", ((0, "mode", "b", 0),)),
    79: ("SplitVOptions", ((0, "num_splits", "i", 0),)),
    94: ("DepthToSpaceOptions", ((0, "block_size", "i", 0),)),
    21: ("MulOptions", ((0, _ACT, "b", 0),)),
    22: ("PadOptions", ()),
    27: ("ReducerOptions", ((0, "keep_dims", "b", 0),)),
    28: ("SubOptions", ((0, _ACT, "b", 0), (1, "pot_scale_int16", "b", 1))),
    39: ("MaximumMinimumOptions", ()),
    49: ("TransposeConvOptions", ((0, "padding", "b", 0), (1, "stride_w", "i", 0), (2, "stride_h", "i", 0),
                                 (3, _ACT, "b", 0), (4, "quantized_bias_type", "b", 0))),
    76: ("SquaredDifferenceOptions", ()),
    101: ("BatchMatMulOptions", ((0, "adj_x", "b", 0), (1, "adj_y", "b", 0), (2, "asymmetric_quantize_inputs", "b", 0))),
    30: ("SqueezeOptions", ((0, "squeeze_dims", "vi", None),)),
    38: ("DequantizeOptions", ()),
    43: ("PadV2Options", ()),
    75: ("LeakyReluOptions", ((0, "alpha", "f", 0.0),)),
    89: ("QuantizeOptions", ()),
    6: ("SVDFOptions", ((0, "rank", "i", 0), (1, _ACT, "b", 0), (2, "asymmetric_quantize_inputs", "b", 0))),
    71: ("UnidirectionalSequenceLSTMOptions", ((0, _ACT, "b", 0), (1, "cell_clip", "f", 0.0), (2, "proj_clip", "f", 0.0),
                                               (3, "time_major", "b", 0), (4, "asymmetric_quantize_inputs", "b", 0),
                                               (5, "diagonal_recurrent_tensors", "b", 0))),
    103: ("CallOnceOptions", ((0, "init_subgraph_index", "i", 0),)),
    111: ("VarHandleOptions", ((0, "container", "s", ""), (1, "shared_name", "s", ""))),
    112: ("ReadVariableOptions", ()),
    113: ("AssignVariableOptions", ()),
    29: ("DivOptions", ((0, _ACT, "b", 0),)),
    57: ("ArgMinOptions", ((0, "output_type", "b", 0),)),
    102: ("CumsumOptions", ((0, "exclusive", "b", 0), (1, "reverse", "b", 0))),
}


_CUSTOM = _OP_NAMES.index("CUSTOM")


def op_name(code: int) -> str:
    """The schema name of a builtin operator code (``BUILTIN_<code>`` beyond the named range)."""
    return _OP_NAMES[code] if 0 <= code < len(_OP_NAMES) else f"BUILTIN_{code}"


class _Buf:
    """Bounds-checked little-endian reads from the model bytes."""

    def __init__(self, data: bytes):
        self.data = data
        self.n = len(data)

    def fail(self, what):
        raise ValueError(f"{_FUNC}: corrupt or truncated .tflite ({what})")

    def read(self, fmt, pos, what):
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > self.n:
            self.fail(f"{what} at byte {pos} lies outside the {self.n}-byte file")
        return struct.unpack_from(fmt, self.data, pos)[0]


class _Table:
    """One flatbuffer table: field access by vtable slot."""

    def __init__(self, buf: _Buf, pos: int, what: str):
        self.buf, self.pos, self.what = buf, pos, what
        vt = pos - buf.read("<i", pos, what)
        self.vt = vt
        self.vt_size = buf.read("<H", vt, f"{what} vtable")
        if self.vt_size < 4 or self.vt_size % 2:
            buf.fail(f"{what} vtable size {self.vt_size}")
        self.size = buf.read("<H", vt + 2, f"{what} vtable")
        if pos + self.size > buf.n:
            buf.fail(f"{what} extends past the end of the file")

    def _field(self, slot):
        off = 4 + 2 * slot
        if off >= self.vt_size:
            return None
        o = self.buf.read("<H", self.vt + off, f"{self.what} vtable")
        if o == 0:
            return None
        if o >= self.size:
            self.buf.fail(f"{self.what} field {slot} outside its table")
        return self.pos + o

    def scalar(self, slot, fmt, default):
        p = self._field(slot)
        return default if p is None else self.buf.read(fmt, p, f"{self.what} field {slot}")

    def _target(self, slot):
        p = self._field(slot)
        if p is None:
            return None
        return p + self.buf.read("<I", p, f"{self.what} field {slot}")

    def table(self, slot, what):
        t = self._target(slot)
        return None if t is None else _Table(self.buf, t, what)

    def _vector(self, slot, elem_size, what):
        t = self._target(slot)
        if t is None:
            return None, 0
        n = self.buf.read("<I", t, what)
        if t + 4 + n * elem_size > self.buf.n:
            self.buf.fail(f"{what}: {n} elements run past the end of the file")
        return t + 4, n

    def vector(self, slot, dtype, what):
        """A vector of scalars as a numpy array (None when absent)."""
        dt = np.dtype(dtype).newbyteorder("<")
        start, n = self._vector(slot, dt.itemsize, what)
        if start is None:
            return None
        return np.frombuffer(self.buf.data, dt, n, start).astype(dt.newbyteorder("="))

    def string(self, slot, what):
        start, n = self._vector(slot, 1, what)
        if start is None:
            return None
        return bytes(self.buf.data[start:start + n]).decode("utf-8", errors="replace")

    def tables(self, slot, what):
        start, n = self._vector(slot, 4, what)
        if start is None:
            return []
        out = []
        for i in range(n):
            p = start + 4 * i
            out.append(_Table(self.buf, p + self.buf.read("<I", p, what), f"{what}[{i}]"))
        return out


def _check_index(i, n, what, buf, allow_none=False):
    if (allow_none and i == -1) or 0 <= i < n:
        return int(i)
    buf.fail(f"{what} refers to index {i} of {n}")


def _options(op_t: _Table, what):
    kind = op_t.scalar(3, "<B", 0)
    t = op_t.table(4, f"{what} options")
    if kind == 0 or t is None:
        return kind, {}
    spec = _OPTIONS.get(kind)
    if spec is None:
        return kind, {}
    name, fields = spec
    out = {}
    for slot, attr, k, default in fields:
        if k == "b":
            out[attr] = t.scalar(slot, "<b", default)
        elif k == "i":
            out[attr] = t.scalar(slot, "<i", default)
        elif k == "f":
            out[attr] = t.scalar(slot, "<f", default)
        elif k == "s":
            out[attr] = t.string(slot, f"{what} {attr}") or default
        else:
            v = t.vector(slot, np.int32, f"{what} {attr}")
            out[attr] = None if v is None else tuple(int(a) for a in v)
    return kind, out


def _custom_options(op_t: _Table, what) -> dict:
    """A custom operator's ``custom_options`` (slot 5), decoded as a FlexBuffer (the format TFLite Micro's
    custom ops read): the root map's entries, or ``{"custom_options": value}`` for another root."""
    raw = op_t.vector(5, np.uint8, f"{what} custom_options")
    if raw is None or not raw.size:
        return {}
    value = read_flexbuffer(bytes(raw), f"{_FUNC}: {what}")
    return value if isinstance(value, dict) else {"custom_options": value}


def _buffer_data(buf: _Buf, b: _Table, i):
    arr = b.vector(0, np.uint8, f"buffer {i} data")
    offset = b.scalar(1, "<Q", 0)
    size = b.scalar(2, "<Q", 0)
    if offset > 1:  # data stored after the flatbuffer (models > 2 GB)
        if offset + size > buf.n:
            buf.fail(f"buffer {i} data ({size} bytes at {offset}) past the end of the file")
        return np.frombuffer(buf.data, np.uint8, size, offset)
    return arr


def read_model(data: bytes) -> ModelDef:
    """Decode the model bytes; ValueError (starting with ``load_model:``) on anything malformed."""
    buf = _Buf(data)
    if buf.n < 8:
        buf.fail(f"{buf.n} bytes, a model has at least 8")
    if bytes(data[4:8]) != b"TFL3":
        raise ValueError(f"{_FUNC}: not a TFLite flatbuffer (file identifier {bytes(data[4:8])!r}, expected b'TFL3')")
    root = _Table(buf, buf.read("<I", 0, "root offset"), "Model")
    version = root.scalar(0, "<I", 0)
    codes = []  # (builtin code, version, custom code name)
    for i, c in enumerate(root.tables(1, "operator_codes")):
        deprecated = c.scalar(0, "<b", 0)
        builtin = c.scalar(3, "<i", 0)
        codes.append((max(int(deprecated), int(builtin)), int(c.scalar(2, "<i", 1)),
                      c.string(1, f"operator_codes[{i}] custom_code")))
    subgraphs = root.tables(2, "subgraphs")
    if not subgraphs:
        buf.fail("no subgraph")
    buffers = root.tables(4, "buffers")
    description = root.string(3, "description")
    constants = {}  # (buffer, type, shape) -> array: tensors that share a buffer share its one decoded array
    graphs = [_subgraph(buf, sg, k, buffers, codes, constants) for k, sg in enumerate(subgraphs)]
    return ModelDef(int(version), graphs, description)


def _subgraph(buf, sg, sg_index, buffers, codes, constants) -> "SubgraphDef":
    """Decode subgraph ``sg_index``: its tensors (with constant data), inputs, outputs, operators. ``constants``
    holds the arrays decoded so far by (buffer, type, shape): a file whose tensors all point at one buffer (or one
    tensor table) costs that buffer's memory once, not once per tensor."""
    where = "" if sg_index == 0 else f"subgraph {sg_index} "
    tensor_tables = sg.tables(0, "tensors")
    n_t = len(tensor_tables)
    tensors = []
    for i, t in enumerate(tensor_tables):
        what = f"{where}tensor {i}"
        shape = t.vector(0, np.int32, f"{what} shape")
        ttype = t.scalar(1, "<b", 0)
        b_idx = t.scalar(2, "<I", 0)
        name = t.string(3, f"{what} name") or f"tensor_{i}"
        q = t.table(4, f"{what} quantization")
        scale = np.zeros(0, np.float32)
        zp = np.zeros(0, np.int64)
        qdim = 0
        if q is not None:
            s = q.vector(2, np.float32, f"{what} scale")
            z = q.vector(3, np.int64, f"{what} zero_point")
            scale = np.zeros(0, np.float32) if s is None else s.astype(np.float32)
            zp = np.zeros(0, np.int64) if z is None else z.astype(np.int64)
            qdim = q.scalar(6, "<i", 0)
            if q.scalar(4, "<B", 0) != 0:
                raise ValueError(f"{_FUNC}: tensor {i} ({name!r}) uses custom QuantizationDetails; only affine "
                                 "scale/zero-point quantization is supported")
        if t.table(6, f"{what} sparsity") is not None:
            raise ValueError(f"{_FUNC}: tensor {i} ({name!r}) is sparse; sparse tensors are not supported")
        dtype = _TENSOR_TYPES.get(ttype)
        type_name = _TYPE_NAMES.get(ttype, np.dtype(dtype).name if dtype is not None else f"type {ttype}")
        shape_t = () if shape is None else tuple(int(d) for d in shape)
        if any(d < 0 for d in shape_t):
            raise ValueError(f"{_FUNC}: tensor {i} ({name!r}) has a dynamic shape {shape_t}; only static shapes "
                             "are supported")
        if int(np.prod([max(d, 1) for d in shape_t], dtype=object)) > 2**31 - 1:  # LiteRT's flat sizes are int
            buf.fail(f"tensor {i} ({name!r}) has shape {shape_t}, more than 2^31 - 1 elements (its non-zero "
                     "dimensions multiply beyond the int range: numpy cannot hold it even when a 0 makes it empty)")
        arr = constants.get((b_idx, ttype, shape_t))
        if b_idx != 0 and arr is None:
            _check_index(b_idx, len(buffers), f"{what} buffer", buf)
            raw = _buffer_data(buf, buffers[b_idx], b_idx)
            if raw is not None and raw.size and ttype == _INT4:
                dtype, arr = np.int8, _unpacked_int4(buf, raw, shape_t, f"tensor {i} ({name!r})")
            elif raw is not None and raw.size:
                if dtype is None:
                    raise ValueError(f"{_FUNC}: tensor {i} ({name!r}) holds {type_name} data, which dspsim does "
                                     "not support")
                dt = np.dtype(dtype).newbyteorder("<")
                n_el = int(np.prod(shape_t, dtype=np.int64))
                if raw.size != n_el * dt.itemsize:
                    buf.fail(f"tensor {i} ({name!r}) has {raw.size} data bytes, shape {shape_t} needs "
                             f"{n_el * dt.itemsize}")
                arr = raw.view(dt).astype(dt.newbyteorder("=")).reshape(shape_t)
            constants[(b_idx, ttype, shape_t)] = arr
        elif arr is not None and ttype == _INT4:
            dtype = np.int8
        tensors.append(TensorDef(i, name, shape_t, None if dtype is None else np.dtype(dtype), type_name, arr,
                                 scale, zp, int(qdim), bool(t.scalar(5, "<B", 0))))
    ins = sg.vector(1, np.int32, "subgraph inputs")
    outs = sg.vector(2, np.int32, "subgraph outputs")
    ins = () if ins is None else tuple(_check_index(int(v), n_t, "subgraph input", buf) for v in ins)
    outs = () if outs is None else tuple(_check_index(int(v), n_t, "subgraph output", buf) for v in outs)
    ops = []
    for k, o in enumerate(sg.tables(3, "operators")):
        what = f"{where}operator {k}"
        ci = _check_index(o.scalar(0, "<I", 0), len(codes), f"{what} opcode_index", buf)
        oi = o.vector(1, np.int32, f"{what} inputs")
        oo = o.vector(2, np.int32, f"{what} outputs")
        oi = () if oi is None else tuple(_check_index(int(v), n_t, f"{what} input", buf, True) for v in oi)
        oo = () if oo is None else tuple(_check_index(int(v), n_t, f"{what} output", buf) for v in oo)
        _, opts = _options(o, what)
        code, version, custom = codes[ci]
        name = f"CUSTOM({custom})" if code == _CUSTOM and custom else op_name(code)
        if code == _CUSTOM:
            opts = _custom_options(o, what)
        im = o.vector(8, np.int32, f"{what} intermediates")
        im = () if im is None else tuple(_check_index(int(v), n_t, f"{what} intermediate", buf) for v in im)
        ops.append(OperatorDef(k, code, name, oi, oo, opts, version, im))
    return SubgraphDef(sg_index, sg.string(4, f"{where}name") or f"subgraph_{sg_index}", tensors, ins, outs, ops)
