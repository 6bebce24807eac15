"""Mutation fuzzing of the .onnx importer (issue 16, "the fuzzers also cover dspsim.onnx"): byte
flips, truncations and byte rewrites (protobuf tags, varint lengths, float bytes) of the committed
models in tests/golden/onnx/models, each loaded with every engine and run on a zero input and a
random one. Allowed outcomes: a result, or a ValueError / TypeError whose message starts with
``dspsim.onnx.load_model:`` or ``Model.run``."""
import glob
import os
import time

import numpy as np
import pytest

onnx_mod = pytest.importorskip("dspsim.onnx")

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = sorted(glob.glob(os.path.join(HERE, "golden", "onnx", "models", "*.onnx")))
ENGINES = ("onnxruntime", "onnxruntime-optimized", "onnx-reference")
PREFIXES = ("dspsim.onnx.load_model:", "Model.run")
BUDGET_S = 30.0
MUTANTS = 1500
_EDGE_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x08, 0x10, 0x12, 0x1A, 0x22)


def mutant(files, seed, k):
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


_NP = {"FLOAT": np.float32, "DOUBLE": np.float64, "UINT8": np.uint8, "INT8": np.int8, "UINT16": np.uint16,
       "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "BOOL": np.bool_}


def _inputs(m, rng):
    """A zero input and a random one for model ``m`` (None when an input type has no numpy dtype)."""
    specs = []
    for i in m.inputs:
        dt = _NP.get(getattr(i.elem_type, "name", ""))
        if dt is None:
            return None
        specs.append((tuple(d if isinstance(d, int) and d >= 0 else 1 for d in i.shape), np.dtype(dt)))
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
    ran = 0
    for engine in ENGINES:
        try:
            m = onnx_mod.load_model(data, engine=engine)
        except Exception as exc:  # noqa: BLE001 - the verdict is about which exception
            return _check(exc, f"load_model(engine={engine!r})"), ran
        pair = _inputs(m, np.random.default_rng(seed))
        if pair is None or sum(a.size for a in pair[0]) > 1 << 20:
            continue
        for inputs in pair:
            try:
                m.run(inputs)
            except Exception as exc:  # noqa: BLE001
                return _check(exc, f"Model.run(engine={engine!r})"), ran
            ran += 1
    return None, ran


@pytest.fixture(scope="module")
def files():
    out = []
    for p in CORPUS:
        with open(p, "rb") as f:
            out.append((os.path.basename(p), f.read()))
    return out


def test_the_onnx_corpus_loads_and_runs_without_a_defect(files):
    assert len(files) >= 10
    for name, data in files:
        bad, ran = verdict(data, 0)
        assert bad is None and ran > 0, (name, bad)


def test_a_node_with_too_few_inputs_is_refused_at_load_naming_the_node_and_the_rule(files):
    """Regression (seed 16, mutant 1211: one bit of an Add's input list flipped): an IndexError at run time."""
    data = dict(files)["mlp_qdq_u8s8_pt_op13.onnx"]
    name, mutated, what = mutant(files, 16, 1211)
    assert (name, what) == ("mlp_qdq_u8s8_pt_op13.onnx", "flip 1349.4") and mutated != data
    for engine in ENGINES:
        with pytest.raises(ValueError,
                           match=r"^dspsim\.onnx\.load_model: node \d+ \(\w+.*\): \w+ takes 2 inputs, got 1"):
            onnx_mod.load_model(mutated, engine=engine)


def test_a_node_without_a_required_attribute_is_refused_at_load_naming_the_node(files):
    """Regression (campaign seed 2026, mutant 217: a Concat's attribute lost): KeyError 'axis' at load."""
    name, mutated, what = mutant(files, 2026, 217)
    assert (name, what) == ("dwsep_pof2_qdq_s8s8.onnx", "set 4536=0x0")
    for engine in ENGINES:
        with pytest.raises(ValueError, match=r"^dspsim\.onnx\.load_model: node \d+ \((QLinear)?Concat "
                                             r".*needs the attribute 'axis'"):
            onnx_mod.load_model(mutated, engine=engine)


def test_a_node_with_too_many_outputs_is_refused_at_load_naming_the_node(files):
    """Regression (campaign seed 2026, mutant 732: a DequantizeLinear's zero-point input re-tagged as a second
    output): a KeyError at run time, reading the tensor the node never wrote."""
    name, mutated, what = mutant(files, 2026, 732)
    assert (name, what) == ("dwsep_pof2_qdq_s8s8.onnx", "set 943=0x12")
    for engine in ENGINES:
        with pytest.raises(ValueError, match=r"^dspsim\.onnx\.load_model: node 8 \(DequantizeLinear.*takes 1 "
                                             r"outputs, got 2"):
            onnx_mod.load_model(mutated, engine=engine)


def test_a_bounded_onnx_mutation_campaign_finds_no_defect(files):
    t0 = time.perf_counter()
    defects, n, ran = [], 0, 0
    while n < MUTANTS and time.perf_counter() - t0 < BUDGET_S:
        name, data, what = mutant(files, 16, n)
        bad, r = verdict(data, n)
        ran += r
        if bad:
            defects.append(f"mutant {n} of {name} ({what}): {bad}")
        n += 1
    assert defects == [], defects[:20]
    assert n >= 100 and ran > 0
    print(f"\n{n} onnx mutants, {ran} runs")
