"""In-place byte edits of a real LSTM model (numpy and struct only: the golden script and the tests share it).

The edited models are never stored: the golden script (make_golden_lstm_edits.py) and tests/kernels/test_lstm.py
both apply :data:`EDITS` to ``../shared/models/tflite-micro/trained_lstm_int8.tflite``. Each edit rewrites
fields the file already holds (a tensor's first scale, a float or byte of the LSTM's options), so the
flatbuffer layout is unchanged. Slots: schema.fbs (Model.subgraphs 2, SubGraph.tensors 0 / operators 3,
Tensor.quantization 4, QuantizationParameters.scale 2, Operator.builtin_options 4,
UnidirectionalSequenceLSTMOptions.fused_activation_function 0 / cell_clip 1).
"""
from __future__ import annotations

import struct

MODEL = "trained_lstm_int8"
LSTM_WEIGHTS = (15, 14, 13, 12, 11, 10, 9, 8)  # the op's inputs 1-8 in this model
CELL_STATE = 17

#: name -> (what, [("scale", tensor, factor) | ("clip", value) | ("activation", code)])
EDITS = {
    "lstm_edit_cell_clip": ("cell_clip 0.25 (1024 cell steps): the clip is hit", [("clip", 0.25)]),
    "lstm_edit_saturating": ("every weight scale x 16: gate parts beyond int16, saturated gates",
                             [("scale", t, 16.0) for t in LSTM_WEIGHTS]),
    "lstm_edit_cell_2^-11": ("cell state scale 2^-11 (a power of two the calibration did not choose)",
                             [("scale", CELL_STATE, 2.0)]),
    "lstm_edit_cell_not_pot": ("cell state scale 2^-12 x 1.3: TFLM rounds its log2, LiteRT refuses",
                               [("scale", CELL_STATE, 1.3)]),
    "lstm_edit_activation_relu": ("fused activation RELU: TFLM's cell gate asserts, LiteRT ignores it",
                                  [("activation", 1)]),
}


def _u32(b, p):
    return struct.unpack_from("<I", b, p)[0]


def _field(b, table, slot):
    """Byte position of field ``slot`` of the table at ``table`` (None when absent)."""
    vtable = table - struct.unpack_from("<i", b, table)[0]
    vt_size = struct.unpack_from("<H", b, vtable)[0]
    if 4 + 2 * slot >= vt_size:
        return None
    off = struct.unpack_from("<H", b, vtable + 4 + 2 * slot)[0]
    return table + off if off else None


def _deref(b, pos):
    return pos + _u32(b, pos)


def _vector_item(b, table, slot, k):
    vec = _deref(b, _field(b, table, slot))
    return vec + 4 + 4 * k  # the k-th element (a uoffset for vectors of tables)


def _subgraph0(b):
    root = _u32(b, 0)
    return _deref(b, _vector_item(b, root, 2, 0))


def apply(data, edits):
    """``data`` (model bytes) with ``edits`` applied; ValueError if a field to edit is absent."""
    b = bytearray(data)
    sg = _subgraph0(b)
    for edit in edits:
        if edit[0] == "scale":
            _, t, factor = edit
            tensor = _deref(b, _vector_item(b, sg, 0, t))
            quant = _deref(b, _field(b, tensor, 4))
            pos = _vector_item(b, quant, 2, 0)
            struct.pack_into("<f", b, pos, struct.unpack_from("<f", b, pos)[0] * factor)
        else:
            op = _deref(b, _vector_item(b, sg, 3, 0))
            opts = _deref(b, _field(b, op, 4))
            pos = _field(b, opts, 1 if edit[0] == "clip" else 0)
            if pos is None:
                raise ValueError(f"{edit}: the options field is absent from the model")
            struct.pack_into("<f" if edit[0] == "clip" else "<b", b, pos, edit[1])
    return bytes(b)
