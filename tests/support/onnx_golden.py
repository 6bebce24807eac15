"""The committed ONNX golden files as values: tensors decoded from their TensorProto bytes, and outputs as
comparable bits (codes for 8-bit and narrower types, the bit pattern for floats), and a golden file's cases run."""
from __future__ import annotations

import json
import os

import numpy as np

import dspsim.onnx as donnx
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


class GoldenFile:
    """One committed ONNX golden file, ``tests/golden/onnx/<file_name>``: ``z`` (the npz), ``meta``, ``cases`` by
    name, and ``run(name, engine)``: the case's model loaded for ``engine`` and run on the case's inputs."""

    def __init__(self, file_name):
        self.z = np.load(os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "onnx", file_name))
        self.meta = json.loads(str(self.z["meta"]))
        self.cases = {c["name"]: c for c in self.meta["cases"]}

    def run(self, name, engine):
        c = self.cases[name]
        model = donnx.load_model(bytes(self.z[f"{name}/model"]), engine=engine)
        given = dict(decode(self.z[f"{name}/in{k}"]) for k in range(c["n_in"]))
        return model.run({i.name: given[i.name] for i in model.inputs})
