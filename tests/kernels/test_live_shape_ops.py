"""dspsim against the live engines, where they are installed (skipped otherwise): the data movement,
resize, selection and cast models of tests/golden/ops run on fresh seeded inputs through LiteRT
(BUILTIN_REF and default) and the tflite-micro interpreter; every output equal, or both refuse."""
from __future__ import annotations

import glob
import os
import zlib

import numpy as np
import pytest

import dspsim.tflite as dt

OPS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "ops")
MODELS = sorted(glob.glob(os.path.join(OPS, "sx_*.tflite")) + [
    os.path.join(OPS, f"{n}.tflite") for n in ("ss_mixed", "ss_negative_stride", "gather_batch_dims", "split_v",
                                                 "mirror_pad_symmetric", "depth_to_space", "resize_bilinear_7x10_hp")])
MODELS = [m for m in MODELS if os.path.exists(m)]


def _inputs(model, seed):
    rng = np.random.default_rng(seed)
    out = []
    for info in model.inputs:
        dtype = np.dtype(info.dtype)
        if dtype.kind == "f":
            out.append(rng.uniform(-300, 300, info.shape).astype(dtype))
        else:
            ii = np.iinfo(dtype)
            out.append(rng.integers(ii.min, int(ii.max) + 1, info.shape).astype(dtype))
    return out


def _litert(path, inputs, reference):
    lite = pytest.importorskip("ai_edge_litert.interpreter")
    kw = {"experimental_op_resolver_type": lite.OpResolverType.BUILTIN_REF} if reference else {}
    it = lite.Interpreter(model_path=path, **kw)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def _tflm(path, inputs):
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    with open(path, "rb") as f:
        it = runtime.Interpreter.from_bytes(f.read(), arena_size=1 << 22)
    for k, x in enumerate(inputs):
        it.set_input(x, k)
    it.invoke()
    return [np.array(it.get_output(k)) for k in range(len(dt.load_model(path, engine="xnnpack").outputs))]


RUNNERS = {"litert": lambda p, x: _litert(p, x, True), "xnnpack": lambda p, x: _litert(p, x, False), "tflm": _tflm}


@pytest.mark.parametrize("engine", sorted(RUNNERS))
@pytest.mark.parametrize("path", MODELS, ids=lambda p: os.path.basename(p)[:-7])
def test_live_engine_agrees_with_dspsim(path, engine):
    try:
        model = dt.load_model(path, engine=engine)
    except ValueError:
        model = None
    seed = zlib.crc32(os.path.basename(path).encode())
    probe = dt.load_model(path, engine="xnnpack") if model is None else model
    inputs = _inputs(probe, seed)
    try:
        want = RUNNERS[engine](path, inputs)
    except (RuntimeError, ValueError):
        assert model is None, "the engine refused the model, dspsim ran it"
        return
    assert model is not None, "dspsim refused a model the engine runs"
    for y, w in zip(model.run(inputs), want):
        assert y.dtype == w.dtype and y.shape == w.shape and np.array_equal(y.view(np.uint8), w.view(np.uint8))
