"""The committed ONNX golden files as values: tensors decoded from their TensorProto bytes, and outputs as
comparable bits (codes for 8-bit and narrower types, the bit pattern for floats)."""
from __future__ import annotations

import numpy as np
from dspsim.onnx.proto import read_tensor
from dspsim.onnx.types import QArray


def decode(b):
    b = bytes(b)
    t = read_tensor(memoryview(b), (0, len(b)))
    return t.name, t.array()


def bit_list(v):
    """Comparable bits: codes for QArray, the bit pattern for floats (all NaNs alike), values otherwise."""
    if isinstance(v, QArray):
        return v.type.name, v.codes.astype(np.int64).tolist()
    v = np.asarray(v)
    if v.dtype.kind == "f":
        u = v.reshape(-1).view(f"u{v.dtype.itemsize}").astype(np.int64)
        return v.dtype.name, np.where(np.isnan(v.reshape(-1)), -1, u).tolist()
    return v.dtype.name, v.reshape(-1).tolist()
