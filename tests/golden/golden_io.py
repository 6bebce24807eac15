"""Readers for the golden files of ``real_models/`` and ``ops/`` (numpy only; no engine needed).

Formats: tests/golden/README.md, sections "Real models" and "Per-operator models".
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np


@dataclass
class EngineRun:
    """One engine's record of a model.

    ``status`` is ``"ok"``, ``"refused"`` (``error`` holds the engine's first error line) or
    ``"crashed"`` (the subprocess died; ``error`` holds the exit code). ``outputs[k]`` has shape
    ``(frames, *output_shape)``. ``sha256`` has shape ``(frames, len(tensors), 32)`` (uint8 digests of
    each intermediate's C-order bytes, rows in the order of ``tensors``), or is None for an engine
    that exposes no intermediates (``litert_default``). ``full[i]`` is intermediate ``i`` in full,
    ``(frames, *shape)``, for the small ones. ``tensor_info[i]`` = (dtype name, shape) as the engine
    reported it.
    """

    status: str
    error: str | None
    outputs: list = field(default_factory=list)
    sha256: np.ndarray | None = None
    full: dict = field(default_factory=dict)
    tensor_info: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)


@dataclass
class RealModelGolden:
    """Golden record of one real model: ``meta`` (the JSON dict), ``inputs[k]`` of shape
    ``(frames, *input_shape)``, ``tensors`` (indices of the recorded intermediates, subgraph 0, in
    index order), ``engines[name]`` an :class:`EngineRun` for ``tflm``, ``litert_ref`` and
    ``litert_default``."""

    meta: dict
    inputs: list
    tensors: list
    engines: dict

    def tensor_matches(self, engine, index, frame, array):
        """True iff ``array`` equals, in dtype, shape and every byte, what ``engine`` computed for
        tensor ``index`` on ``frame`` (checked by sha256; arrays stored in full are compared too)."""
        run = self.engines[engine]
        dtype, shape = run.tensor_info[index]
        a = np.asarray(array)
        if str(a.dtype) != dtype or list(a.shape) != list(shape):
            return False
        row = self.tensors.index(index)
        digest = np.frombuffer(hashlib.sha256(np.ascontiguousarray(a).tobytes()).digest(), np.uint8)
        return bool(np.array_equal(digest, run.sha256[frame, row]))


def _resolve(z, aliases, key):
    while key not in z and key in aliases:
        key = aliases[key]
    return z[key]


def load_real_model(path):
    """Read ``real_models/<model>.npz`` into a :class:`RealModelGolden` (aliases resolved: an array
    equal to an earlier engine's is stored once and listed in ``meta["aliases"]``)."""
    with np.load(path) as zf:
        z = {k: zf[k] for k in zf.files}
    meta = json.loads(str(z["meta"]))
    aliases = meta["aliases"]
    tensors = [t["index"] for t in meta["tensors"]]
    inputs = [z[f"in{k}"] for k in range(len(meta["inputs"]))]
    engines = {}
    for name, st in meta["engines"].items():
        run = EngineRun(st["status"], st.get("error"), info=st)
        if st["status"] == "ok":
            run.outputs = [_resolve(z, aliases, f"{name}/out{k}") for k in range(len(meta["outputs"]))]
            if f"{name}/sha256" in z:
                run.sha256 = z[f"{name}/sha256"]
                run.tensor_info = {int(i): tuple(v) for i, v in st["tensors"].items()}
                for i in tensors:
                    key = f"{name}/t{i}"
                    if key in z or key in aliases:
                        run.full[i] = _resolve(z, aliases, key)
        engines[name] = run
    return RealModelGolden(meta, inputs, tensors, engines)


def load_packed(path):
    """Read a packed ``ops/*.npz`` file: returns ``(meta, cases)`` where ``meta`` is the file's JSON
    dict and ``cases`` a list of (case dict, arrays) with ``arrays[field]`` the case's array
    ``z[key][start:start + prod(shape)].reshape(shape)`` for every ``case["arrays"][field] = [key,
    start, shape]``, and aliases resolved (``arrays["litert_ref/out0"]`` is there even when it was
    stored once as ``tflm/out0``). Field names: ``in{k}``, ``{engine}/out{k}``, ``{engine}/t{i}``."""
    with np.load(path) as zf:
        z = {k: zf[k] for k in zf.files}
    meta = json.loads(str(z["meta"]))
    cases = []
    for case in meta["cases"]:
        arrays = {f: z[k][s:s + int(np.prod(sh, dtype=np.int64))].reshape(sh)
                  for f, (k, s, sh) in case["arrays"].items()}
        for alias, target in case.get("aliases", {}).items():
            arrays[alias] = arrays[target]
        cases.append((case, arrays))
    return meta, cases
