"""Mutation fuzzing of the .tflite loader: mutants of the committed models, and the verdict on one.

A mutant is a model of the corpus with one to three mutations, each one of:

- a byte flip (one random bit of one random byte);
- a truncation (the file cut at a random length);
- a field rewrite: a value the reader actually decodes (found by recording every read the
  flatbuffer reader makes on the original file: vtable entries, offsets, tensor shapes, types,
  buffer indices, operator inputs, options, scales, zero points) replaced by an edge value of
  its type (0, -1, 1, type min/max, 2^31, ...; for a float32 scale: 0, -0, inf, NaN, a denormal,
  1e-30, 1e30);
- a model edit: the same, on the fields that keep the file well-formed and change what it means (a
  tensor's shape, scale, zero point, type or buffer; a buffer's offset or size; an operator's
  inputs, outputs or options), so that the mutant reaches the builtins' Prepare and the kernels.

The corpus (:data:`CORPUS`) is every .tflite committed under tests/ but the saved mutants of tests/fuzz; the
campaign's (:data:`CAMPAIGN_CORPUS`) adds ../shared/models when it is beside the checkout.

The verdict (:func:`verdict`) loads the mutant with every engine and runs it on a zero input and
a random one. Allowed outcomes: a result, or a ValueError / TypeError whose message starts with
``load_model:`` or ``Model.run``. Anything else (another exception type, an error that does not
name its function) is a defect signature, returned as a one-line string.

``python tests/fuzz/fuzz_tflite.py SEED START N`` prints the verdicts of mutants START .. START + N - 1 of the
campaign corpus, one line each (tests/fuzz/fuzz_campaign.py runs it in subprocesses with a memory and a time
limit).
"""
from __future__ import annotations

import glob
import math
import os
import re
import struct
import sys

import numpy as np

import dspsim.tflite as tfl
from dspsim.tflite import flatbuffer
from fuzz_campaign import worker_main

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = sorted(p for p in glob.glob(os.path.join(HERE, "**", "*.tflite"), recursive=True)
                if not p.startswith(os.path.join(HERE, "fuzz", "")))  # not the saved mutants
SHARED_MODELS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "..", "shared", "models")
CAMPAIGN_CORPUS = CORPUS + sorted(glob.glob(os.path.join(SHARED_MODELS, "**", "*.tflite"), recursive=True))
ENGINES = ("litert", "tflm", "xnnpack")
ALLOWED_PREFIXES = ("load_model:", "Model.run")

_INT_EDGES = {
    "b": (0, 1, -1, 2, 3, 4, 5, 127, -128),
    "B": (0, 1, 2, 3, 4, 5, 9, 17, 255),
    "H": (0, 2, 4, 6, 8, 0xFFFE, 0xFFFF, 0x8000),
    "h": (0, 1, -1, 0x7FFF, -0x8000),
    "i": (0, 1, -1, 2, 3, 7, 255, 256, 65535, 2**31 - 1, -2**31, 2**24, 1 << 30),
    "I": (0, 1, 2, 3, 4, 8, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 1 << 20),
    "q": (0, 1, -1, 2**63 - 1, -2**63, 2**31, -2**31 - 1, 255, 256, -129),
    "Q": (0, 1, 2, 2**64 - 1, 2**63, 1 << 32),
}
_FLOAT_EDGES = (0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45, 1.17549435e-38, 1e-30, 1e30,
                3.4028235e38, -1.0, 1.0, 0.5)
#: What a model edit rewrites: the fields (named as the reader names them) that carry the model's meaning.
_EDITED = re.compile(r"shape\[|scale\[|zero_point\[|^tensors\[\d+\] field|^buffers\[\d+\] field|inputs\[|"
                     r"outputs\[|options field|quantized_dimension")


class _RecordingBuf(flatbuffer._Buf):
    """The reader's bounds-checked buffer, recording (position, struct format) of every read."""

    def __init__(self, data):
        super().__init__(data)
        self.reads = []

    def read(self, fmt, pos, what):
        v = super().read(fmt, pos, what)
        self.reads.append((pos, fmt[-1], what))
        return v


def decoded_fields(data: bytes, named=False):
    """Every (position, struct format) the reader decodes in ``data``, scales and zero points
    included; with ``named``, (position, format, what the reader calls it) instead."""
    orig = flatbuffer._Buf
    rec = {}

    def make(d):
        b = _RecordingBuf(d)
        rec["buf"] = b
        return b

    flatbuffer._Buf = make
    orig_vector = flatbuffer._Table.vector

    def vector(self, slot, dtype, what):  # vectors are read whole by numpy: record each element
        dt = np.dtype(dtype)
        start, n = self._vector(slot, dt.itemsize, what)
        if start is not None:
            code = {1: "b", 2: "h", 4: "f" if dt.kind == "f" else "i", 8: "q"}[dt.itemsize]
            if what.endswith(" data"):
                n = min(n, 64)  # constant data: a few elements are enough
            rec["buf"].reads.extend((start + k * dt.itemsize, code, f"{what}[{k}]") for k in range(n))
        return orig_vector(self, slot, dtype, what)

    flatbuffer._Table.vector = vector
    try:
        flatbuffer.read_model(data)
    except ValueError:  # a model the reader refuses (UINT4 data): the fields read until then
        pass
    finally:
        flatbuffer._Buf = orig
        flatbuffer._Table.vector = orig_vector
    reads = sorted(set(rec["buf"].reads))
    return reads if named else sorted({(p, c) for p, c, _ in reads})


class Mutator:
    """Seeded mutants of the corpus; ``mutant(k)`` is the k-th (reproducible from seed and k)."""

    def __init__(self, seed: int, corpus=CORPUS):
        self.seed = seed
        self.files = []
        for p in corpus:
            with open(p, "rb") as f:
                data = f.read()
            named = decoded_fields(data, named=True)
            fields = sorted({(pos, code) for pos, code, _ in named})
            edits = sorted({(pos, code) for pos, code, what in named if _EDITED.search(what)})
            self.files.append((os.path.basename(p), data, fields, edits))

    def mutant(self, k: int):
        """(name, bytes, description) of mutant ``k``."""
        rng = np.random.default_rng([self.seed, k])
        name, data, fields, edits = self.files[int(rng.integers(len(self.files)))]
        buf = bytearray(data)
        what = []
        for _ in range(int(rng.choice([1, 1, 1, 2, 3]))):
            kind = rng.choice(["field", "field", "edit", "edit", "flip", "truncate"])
            pool = edits if kind == "edit" and edits else fields
            if kind == "flip" and buf:
                p = int(rng.integers(len(buf)))
                b = int(rng.integers(8))
                buf[p] ^= 1 << b
                what.append(f"flip byte {p} bit {b}")
            elif kind == "truncate" and buf:
                n = int(rng.integers(len(buf)))
                del buf[n:]
                what.append(f"truncate to {n}")
            elif pool:
                pos, code = pool[int(rng.integers(len(pool)))]
                size = struct.calcsize(code)
                if pos + size > len(buf):
                    continue
                if code == "f":
                    v = _FLOAT_EDGES[int(rng.integers(len(_FLOAT_EDGES)))]
                    struct.pack_into("<f", buf, pos, v)
                else:
                    edges = _INT_EDGES[code]
                    v = edges[int(rng.integers(len(edges)))]
                    if rng.random() < 0.3:  # a nearby value instead of an edge
                        old = struct.unpack_from("<" + code, buf, pos)[0]
                        v = old + int(rng.choice([-2, -1, 1, 2, 4, 8]))
                    lo, hi = _range(code)
                    v = min(max(v, lo), hi)
                    struct.pack_into("<" + code, buf, pos, v)
                what.append(f"{'edit' if kind == 'edit' else 'set'} {code}@{pos}={v}")
        return name, bytes(buf), "; ".join(what)


def _range(code):
    bits = struct.calcsize(code) * 8
    return (0, 2**bits - 1) if code.isupper() else (-2**(bits - 1), 2**(bits - 1) - 1)


def _inputs(model, rng):
    out = []
    for info in model.inputs:
        dt = np.dtype(info.dtype)
        if dt.kind in "iu":
            ii = np.iinfo(dt)
            out.append(rng.integers(ii.min, int(ii.max) + 1, size=info.shape, dtype=dt))
        elif dt.kind == "b":
            out.append(rng.random(info.shape) < 0.5)
        else:
            out.append((rng.standard_normal(info.shape) * 4).astype(dt))
    return out


FILE_LIMIT_S = 280  # a saved mutant (regressions/memory: gigabytes declared) may page for minutes on a busy host
MAX_RUN_ELEMENTS = 1 << 22  # in-process runs skip mutants that declare more (the subprocess campaign runs them)


def _declared_elements(model):
    return sum(math.prod(t.shape) for t in model._mdef.tensors)  # Python ints: no int64 overflow


def _check_error(exc, stage):
    if not isinstance(exc, (ValueError, TypeError)):
        return f"{stage}: {type(exc).__name__}: {str(exc)[:200]}"
    msg = str(exc)
    if not msg.startswith(ALLOWED_PREFIXES):
        return f"{stage}: {type(exc).__name__} without the function's name: {msg[:200]}"
    return None


def verdict(data: bytes, seed: int = 0, max_elements=MAX_RUN_ELEMENTS):
    """None when every engine loads-and-runs ``data`` or refuses it properly, else the defect, one line.

    Also returns counts (loaded, ran, elements, skipped; ``engines``: per engine whether the mutant was refused,
    loaded or ran) as a dict in the second position."""
    stats = {"loaded": 0, "ran": 0, "elements": 0, "skipped": 0, "engines": {}}
    for engine in ENGINES:
        try:
            model = tfl.load_model(data, engine=engine)
        except Exception as exc:  # noqa: BLE001 - the verdict is about which exception
            bad = _check_error(exc, f"load_model(engine={engine!r})")
            if bad:
                return bad, stats
            stats["engines"][engine] = "refused"
            continue
        stats["loaded"] += 1
        stats["engines"][engine] = "loaded"
        if _declared_elements(model) > max_elements:
            stats["skipped"] += 1
            continue
        rng = np.random.default_rng(seed)
        try:
            pairs = ([np.zeros(i.shape, i.dtype) for i in model.inputs], _inputs(model, rng))
        except MemoryError:  # the verdict cannot even build inputs that big: nothing of dspsim's to judge
            stats["skipped"] += 1
            continue
        for inputs in pairs:
            try:
                outs = model.run(inputs)
            except Exception as exc:  # noqa: BLE001
                bad = _check_error(exc, f"Model.run(engine={engine!r})")
                if bad:
                    return bad, stats
                continue
            stats["ran"] += 1
            stats["elements"] += sum(int(np.size(o)) for o in outs)
            stats["engines"][engine] = "ran"
    return None, stats


def main(argv):
    """``SEED START N``: the verdicts of campaign mutants START .. START + N - 1; ``--file PATH ...``: of files."""
    worker_main(argv, lambda seed: Mutator(seed, CAMPAIGN_CORPUS).mutant,
                lambda data, k: verdict(data, seed=k, max_elements=1 << 62), file_limit=FILE_LIMIT_S)


if __name__ == "__main__":
    main(sys.argv[1:])
