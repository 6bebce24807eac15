"""Mutation fuzzing of the .onnx importer: mutants of the committed models, and the verdict on one.

A mutant is a model of the corpus (every .onnx committed under tests/ but the saved mutants of tests/fuzz, and
../shared/models' when beside the checkout) with one to three mutations. :func:`mutant` makes byte mutations (a
bit flip, a byte set to a protobuf-significant value: tags, varint lengths; a truncation).
:func:`proto_mutant` edits the protobuf structure (with the ``onnx`` package) so that the file stays well-formed
and its meaning changes: an initializer's dims, data type or data length, a scale set to 0 / -0 / NaN / inf /
a denormal / 1e38, a zero point to the edges of its type, a graph input's shape or type, a node's attributes,
inputs, outputs, op type or domain, the opset version, a node or an initializer removed. :func:`campaign_mutant`
draws either kind.

The verdict (:func:`verdict`) loads the mutant with every engine and runs it on a zero input and a random one.
Allowed outcomes: a result, or a ValueError / TypeError whose message starts with ``dspsim.onnx.load_model:`` or
``Model.run``. Anything else is a defect signature, returned as a one-line string.

``python tests/fuzz/fuzz_onnx.py SEED START N`` prints the verdicts of campaign mutants START .. START + N - 1
(tests/fuzz/fuzz_campaign.py runs it in subprocesses with a memory and a time limit).
"""
from __future__ import annotations

import glob
import os
import sys

import numpy as np

import dspsim.onnx as onnx_mod
from fuzz_campaign import worker_main

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The models issue 16's byte mutants were drawn from (its regressions name mutants by index into them).
ISSUE_16_CORPUS = sorted(glob.glob(os.path.join(HERE, "golden", "onnx", "models", "*.onnx")))
CORPUS = sorted(p for p in glob.glob(os.path.join(HERE, "**", "*.onnx"), recursive=True)
                if not p.startswith(os.path.join(HERE, "fuzz", "")))  # not the saved mutants
SHARED_MODELS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "..", "shared", "models")
CAMPAIGN_CORPUS = CORPUS + sorted(glob.glob(os.path.join(SHARED_MODELS, "**", "*.onnx"), recursive=True))
ENGINES = ("onnxruntime", "onnxruntime-optimized", "onnx-reference")
PREFIXES = ("dspsim.onnx.load_model:", "Model.run")
MAX_RUN_ELEMENTS = 1 << 20  # inputs beyond it are not run (their load is still judged)
_EDGE_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x08, 0x10, 0x12, 0x1A, 0x22)
_FLOAT_EDGES = (0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45, 1e-40, 1e-30, 1e38, 3.4028235e38,
                -1.0, 1.0)
_INT_EDGES = (0, 1, -1, 2, 7, 127, -128, 255, 256, 32767, -32768, 65535, 2**31 - 1, -2**31, 2**31, 2**40, 2**63 - 1)
_DIM_EDGES = (0, 1, 2, 3, -1, 7, 2**31 - 1, 2**31, 2**40, 2**62)


def load_corpus(paths=CORPUS):
    """[(name, bytes)] of ``paths``."""
    out = []
    for p in paths:
        with open(p, "rb") as f:
            out.append((os.path.basename(p), f.read()))
    return out


def mutant(files, seed, k):
    """(name, bytes, description) of byte mutant ``k`` of ``seed`` (reproducible: the regressions name them)."""
    rng = np.random.default_rng([seed, k])
    name, data = files[int(rng.integers(len(files)))]
    buf = bytearray(data)
    what = []
    for _ in range(int(rng.choice([1, 1, 2, 3]))):
        if not buf:
            break
        kind = rng.choice(["flip", "set", "set", "truncate"])
        p = int(rng.integers(len(buf)))
        if kind == "flip":
            b = int(rng.integers(8))
            buf[p] ^= 1 << b
            what.append(f"flip {p}.{b}")
        elif kind == "set":
            buf[p] = _EDGE_BYTES[int(rng.integers(len(_EDGE_BYTES)))]
            what.append(f"set {p}={buf[p]:#x}")
        else:
            del buf[p:]
            what.append(f"truncate {p}")
    return name, bytes(buf), "; ".join(what)


# ---------------------------------------------------------------------------------------------
# structural mutations (the onnx package parses and writes the protobuf)
# ---------------------------------------------------------------------------------------------
def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def _edit_values(rng, t, numpy_helper):
    """One element of a small initializer set to an edge of its kind (a scale: 0, NaN, inf...; a zero point:
    the type's edges and beyond, wrapped)."""
    try:
        a = numpy_helper.to_array(t).copy()
    except (ValueError, TypeError, KeyError):  # an initializer an earlier mutation already broke
        return None
    if a.size == 0 or a.size > 4096 or a.dtype.kind not in "iuf":
        return None
    i = int(rng.integers(a.size))
    flat = a.reshape(-1)
    if a.dtype.kind == "f":
        flat[i] = _pick(rng, _FLOAT_EDGES)
    else:
        flat[i] = np.array(_pick(rng, _INT_EDGES)).astype(np.int64).astype(a.dtype)
    t.CopyFrom(numpy_helper.from_array(a, t.name))
    return f"initializer {t.name!r}[{i}]={flat[i]!r}"


def _edit_initializer(rng, g, numpy_helper):
    if not len(g.initializer):
        return None
    t = _pick(rng, g.initializer)
    kind = _pick(rng, ["values", "values", "values", "dims", "type", "length"])
    if kind == "values":
        return _edit_values(rng, t, numpy_helper)
    if kind == "dims":
        if len(t.dims) and rng.random() < 0.7:
            d = int(rng.integers(len(t.dims)))
            t.dims[d] = _pick(rng, _DIM_EDGES)
            return f"initializer {t.name!r} dims[{d}]={t.dims[d]}"
        t.dims.append(_pick(rng, _DIM_EDGES[:4]))
        return f"initializer {t.name!r} dims {list(t.dims)}"
    if kind == "type":
        t.data_type = _pick(rng, (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16, 17, 21, 22, 25, 99))
        return f"initializer {t.name!r} data_type={t.data_type}"
    if t.raw_data:
        n = int(rng.integers(len(t.raw_data) + 2))
        t.raw_data = t.raw_data[:n] if n <= len(t.raw_data) else t.raw_data + b"\x01" * 3
        return f"initializer {t.name!r} raw_data length {len(t.raw_data)}"
    for field in ("float_data", "int32_data", "int64_data", "double_data"):
        values = getattr(t, field)
        if len(values):
            values.append(values[0]) if rng.random() < 0.5 else values.pop()
            return f"initializer {t.name!r} {field} length {len(values)}"
    return None


def _edit_value_info(rng, g):
    vis = list(g.input) + list(g.output)
    if not vis:
        return None
    vi = _pick(rng, vis)
    tt = vi.type.tensor_type
    if rng.random() < 0.3:
        tt.elem_type = _pick(rng, (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 16, 21, 99))
        return f"{vi.name!r} elem_type={tt.elem_type}"
    dims = tt.shape.dim
    if not len(dims) or rng.random() < 0.2:
        dims.add().dim_value = _pick(rng, _DIM_EDGES[:4])
        return f"{vi.name!r} rank {len(dims)}"
    d = dims[int(rng.integers(len(dims)))]
    if rng.random() < 0.2:
        d.dim_param = "N"
        return f"{vi.name!r} a dim named N"
    d.dim_value = _pick(rng, _DIM_EDGES)
    return f"{vi.name!r} dim={d.dim_value}"


def _edit_attribute(rng, n, a):
    from onnx import AttributeProto as A

    if a.type == A.INT:
        a.i = _pick(rng, _INT_EDGES + (-2, 3, 4))
        return f"{n.op_type} {a.name}={a.i}"
    if a.type == A.INTS:
        if len(a.ints) and rng.random() < 0.6:
            j = int(rng.integers(len(a.ints)))
            a.ints[j] = _pick(rng, _INT_EDGES + (-2, 3))
        elif len(a.ints) and rng.random() < 0.5:
            a.ints.pop()
        else:
            a.ints.append(_pick(rng, (0, 1, -1, 2)))
        return f"{n.op_type} {a.name}={list(a.ints)}"
    if a.type == A.FLOAT:
        a.f = _pick(rng, _FLOAT_EDGES)
        return f"{n.op_type} {a.name}={a.f}"
    if a.type == A.STRING:
        a.s = _pick(rng, (b"", b"bogus", b"NOTSET", b"SAME_UPPER", b"VALID", b"\xff"))
        return f"{n.op_type} {a.name}={a.s!r}"
    a.type = _pick(rng, (A.INT, A.FLOAT, A.STRING, A.INTS))
    return f"{n.op_type} {a.name} type={a.type}"


def _edit_node(rng, g):
    if not len(g.node):
        return None
    n = _pick(rng, g.node)
    kind = _pick(rng, ["attribute", "attribute", "input", "output", "op_type", "domain", "remove"])
    if kind == "attribute" and len(n.attribute):
        return _edit_attribute(rng, n, _pick(rng, n.attribute))
    if kind == "input" and len(n.input):
        j = int(rng.integers(len(n.input)))
        choice = rng.random()
        if choice < 0.3:
            del n.input[j]
            return f"{n.op_type} input {j} removed"
        if choice < 0.5:
            n.input.append(n.input[j])
            return f"{n.op_type} input {j} repeated"
        names = [x for m in g.node for x in m.output] + [t.name for t in g.initializer] + ["", "nowhere"]
        n.input[j] = _pick(rng, names)
        return f"{n.op_type} input {j}={n.input[j]!r}"
    if kind == "output" and len(n.output):
        if rng.random() < 0.5:
            n.output.append(f"extra_{len(n.output)}")
            return f"{n.op_type} an extra output"
        n.output[0] = _pick(rng, [x for m in g.node for x in m.input] + [""])
        return f"{n.op_type} output 0={n.output[0]!r}"
    if kind == "op_type":
        n.op_type = _pick(rng, sorted({m.op_type for m in g.node}) + ["Bogus"])
        return f"a node's op_type={n.op_type}"
    if kind == "domain":
        n.domain = _pick(rng, ("com.microsoft", "ai.onnx.ml", "bogus", ""))
        return f"{n.op_type} domain={n.domain!r}"
    j = int(rng.integers(len(g.node)))
    del g.node[j]
    return f"node {j} removed"


def proto_mutant(files, seed, k):
    """(name, bytes, description) of structural mutant ``k`` of ``seed``."""
    import onnx
    from onnx import numpy_helper

    rng = np.random.default_rng([seed, k, 1])
    name, data = files[int(rng.integers(len(files)))]
    m = onnx.load_from_string(data)
    g = m.graph
    what = []
    for _ in range(int(rng.choice([1, 1, 2, 3]))):
        kind = _pick(rng, ["initializer", "initializer", "value_info", "node", "node", "opset", "drop"])
        if kind == "initializer":
            w = _edit_initializer(rng, g, numpy_helper)
        elif kind == "value_info":
            w = _edit_value_info(rng, g)
        elif kind == "node":
            w = _edit_node(rng, g)
        elif kind == "opset" and len(m.opset_import):
            m.opset_import[0].version = _pick(rng, (1, 6, 7, 10, 11, 13, 19, 21, 23, 100, -1))
            w = f"opset {m.opset_import[0].version}"
        elif kind == "drop" and len(g.initializer):
            j = int(rng.integers(len(g.initializer)))
            w = f"initializer {g.initializer[j].name!r} removed"
            del g.initializer[j]
        else:
            w = None
        if w:
            what.append(w)
    return name, m.SerializeToString(), "; ".join(what)


def campaign_mutant(files, seed, k):
    """Mutant ``k`` of the campaign of ``seed``: a structural mutant or a byte mutant, one in two each."""
    if np.random.default_rng([seed, k, 2]).random() < 0.5:
        return proto_mutant(files, seed, k)
    return mutant(files, seed, k)


# ---------------------------------------------------------------------------------------------
# the verdict
# ---------------------------------------------------------------------------------------------
_NP = {"FLOAT": np.float32, "DOUBLE": np.float64, "UINT8": np.uint8, "INT8": np.int8, "UINT16": np.uint16,
       "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "BOOL": np.bool_}


def _inputs(m, rng):
    """A zero input and a random one for model ``m`` (None when an input type has no numpy dtype or the inputs
    exceed :data:`MAX_RUN_ELEMENTS`)."""
    specs = []
    for i in m.inputs:
        dt = _NP.get(getattr(i.elem_type, "name", ""))
        if dt is None:
            return None
        specs.append((tuple(d if isinstance(d, int) and d >= 0 else 1 for d in i.shape), np.dtype(dt)))
    if sum(int(np.prod(shape, dtype=object)) for shape, _ in specs) > MAX_RUN_ELEMENTS:
        return None
    zeros = [np.zeros(shape, dt) for shape, dt in specs]
    rand = []
    for shape, dt in specs:
        if dt.kind in "iu":
            rand.append(rng.integers(np.iinfo(dt).min, int(np.iinfo(dt).max) + 1, size=shape, dtype=dt))
        elif dt.kind == "b":
            rand.append(rng.random(shape) < 0.5)
        else:
            rand.append((rng.standard_normal(shape) * 4).astype(dt))
    return zeros, rand


def _check(exc, stage):
    if isinstance(exc, (ValueError, TypeError)) and str(exc).startswith(PREFIXES):
        return None
    return f"{stage}: {type(exc).__name__}: {str(exc)[:200]}"


def verdict(data, seed):
    """(None or the defect, stats): ``stats["engines"]`` says per engine whether the mutant was refused, loaded
    (not run: inputs too big or of no numpy type) or ran; ``stats["ran"]`` counts the runs."""
    stats = {"loaded": 0, "ran": 0, "elements": 0, "engines": {}}
    for engine in ENGINES:
        try:
            m = onnx_mod.load_model(data, engine=engine)
        except Exception as exc:  # noqa: BLE001 - the verdict is about which exception
            bad = _check(exc, f"load_model(engine={engine!r})")
            if bad:
                return bad, stats
            stats["engines"][engine] = "refused"
            continue
        stats["loaded"] += 1
        stats["engines"][engine] = "loaded"
        pair = _inputs(m, np.random.default_rng(seed))
        for inputs in pair or ():
            try:
                outs = m.run(inputs)
            except Exception as exc:  # noqa: BLE001
                bad = _check(exc, f"Model.run(engine={engine!r})")
                if bad:
                    return bad, stats
                continue
            stats["ran"] += 1
            stats["elements"] += sum(int(np.size(o)) for o in outs)
            stats["engines"][engine] = "ran"
    return None, stats


def main(argv):
    """``SEED START N``: the verdicts of campaign mutants START .. START + N - 1; ``--file PATH ...``: of files."""
    def mutants(seed):
        files = load_corpus(CAMPAIGN_CORPUS)
        return lambda k: campaign_mutant(files, seed, k)

    worker_main(argv, mutants, verdict)


if __name__ == "__main__":
    main(sys.argv[1:])
