"""Hostile .tflite files written with the flatbuffers package alone (no converter): a tensor table pointed at many
times, a buffer shared by many tensors, a huge variable tensor that no operator uses (issue 31)."""
import flatbuffers
import numpy as np

INT8 = 9


def _vector(b, offsets):
    b.StartVector(4, len(offsets), 4)
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def _tensor(b, name, shape, buffer=0, zero_point=None, variable=False):
    shape = b.CreateNumpyVector(np.array(shape, np.int32))
    name = b.CreateString(name)
    q = None
    if zero_point is not None:
        scale = b.CreateNumpyVector(np.array([1.0], np.float32))
        zp = b.CreateNumpyVector(np.array([zero_point], np.int64))
        b.StartObject(7)
        b.PrependUOffsetTRelativeSlot(2, scale, 0)
        b.PrependUOffsetTRelativeSlot(3, zp, 0)
        q = b.EndObject()
    b.StartObject(7)
    b.PrependUOffsetTRelativeSlot(0, shape, 0)
    b.PrependInt8Slot(1, INT8, 0)
    b.PrependUint32Slot(2, buffer, 0)
    b.PrependUOffsetTRelativeSlot(3, name, 0)
    if q is not None:
        b.PrependUOffsetTRelativeSlot(4, q, 0)
    b.PrependBoolSlot(5, variable, False)
    return b.EndObject()


def _model(b, tensors, inputs, outputs, buffers):
    """Finish a one-subgraph model of ``tensors`` (table offsets) and no operator; ``buffers``: data (bytes) of
    buffers 1.. (buffer 0 is the empty one)."""
    bufs = []
    for data in [None, *buffers]:
        vec = None if data is None else b.CreateNumpyVector(np.frombuffer(data, np.uint8))
        b.StartObject(3)
        if vec is not None:
            b.PrependUOffsetTRelativeSlot(0, vec, 0)
        bufs.append(b.EndObject())
    tv = _vector(b, tensors)
    ins = b.CreateNumpyVector(np.array(inputs, np.int32))
    outs = b.CreateNumpyVector(np.array(outputs, np.int32))
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(0, tv, 0)
    b.PrependUOffsetTRelativeSlot(1, ins, 0)
    b.PrependUOffsetTRelativeSlot(2, outs, 0)
    sg = b.EndObject()
    sgs, bv = _vector(b, [sg]), _vector(b, bufs)
    b.StartObject(5)
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(2, sgs, 0)
    b.PrependUOffsetTRelativeSlot(4, bv, 0)
    b.Finish(b.EndObject(), file_identifier=b"TFL3")
    return bytes(b.Output())


def one_table_many_times(n_tensors: int, nbytes: int) -> bytes:
    """A model whose ``n_tensors`` tensors are one tensor table, pointed at ``n_tensors`` times: an int8 constant of
    ``nbytes`` bytes (its buffer in the file once)."""
    b = flatbuffers.Builder(nbytes + 1024)
    t = _tensor(b, "w", [nbytes], buffer=1)
    return _model(b, [t] * n_tensors, [0], [0], [bytes(nbytes)])


def unused_huge_variable(elements: int = 2**31 - 1, zero_point: int = 5) -> bytes:
    """A model whose output is its input (int8 (1, 4)), beside an int8 variable tensor of ``elements`` elements and
    zero point ``zero_point`` (its reset value) that no operator reads or writes."""
    b = flatbuffers.Builder(1024)
    x = _tensor(b, "x", [1, 4], zero_point=0)
    v = _tensor(b, "state", [elements], zero_point=zero_point, variable=True)
    return _model(b, [x, v], [0], [0], [])
