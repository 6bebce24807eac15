"""Model.run_batch runs the batch-N model (dspsim.tflite.batching): bit-identical to N calls of run().

Checked on every committed model and on every real model on this machine (../shared/models/tflite-micro,
pymicro_wakeword's streaming models: several frames, one state per stream), for every engine that
loads it, including chunked batches (a small Model.BATCH_BYTES) and the one-by-one fallback.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import warnings

import numpy as np
import pytest

from dspsim.tflite import load_model
from dspsim.tflite.batching import batch_blocker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMITTED = sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "models", "*.tflite")))
SHARED = sorted(glob.glob(os.path.join(ROOT, "..", "shared", "models", "tflite-micro", "*.tflite")))


def _wakeword_models():
    spec = importlib.util.find_spec("pymicro_wakeword")
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "models", "*.tflite")))


def _load(path, engine):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # engine-defect warnings: reproduced on purpose
        try:
            return load_model(path, engine=engine)
        except ValueError as e:  # the engine refuses the model: nothing to batch
            pytest.skip(f"{engine} refuses it: {str(e)[:120]}")


def _inputs(model, n, seed):
    """N random samples per input: int codes over the full range, floats around the input's scale."""
    rng = np.random.default_rng(seed)
    out = []
    for info in model.inputs:
        if info.dtype.kind == "f":
            out.append(rng.standard_normal((n, *info.shape)).astype(info.dtype))
        elif info.dtype == np.int32 and len(info.shape) == 1:  # a shape operand (TRANSPOSE_CONV's output_shape)
            pytest.skip("the model takes a shape as input")
        else:
            ii = np.iinfo(info.dtype)
            out.append(rng.integers(ii.min, ii.max + 1, (n, *info.shape)).astype(info.dtype))
    return out


def assert_batch_is_stacked_runs(model, n=3, frames=1, seed=0):
    xs = [_inputs(model, n, seed + f) for f in range(frames)]
    model.reset()
    batched = [model.run_batch(x) for x in xs]
    for i in range(n):
        model.reset()
        for f in range(frames):
            one = model.run([x[i] for x in xs[f]])
            for k, (b, o) in enumerate(zip(batched[f], one)):
                assert b.shape == (n, *o.shape)
                assert np.array_equal(b[i], o), f"frame {f} sample {i} output {k} differs"


def _cases(paths):
    for p in paths:
        for engine in ("tflm", "litert", "xnnpack"):
            yield pytest.param(p, engine, id=f"{os.path.basename(p)[:-7]}-{engine}")


@pytest.mark.parametrize("path,engine", list(_cases(COMMITTED)))
def test_run_batch_of_a_committed_model_is_n_runs(path, engine):
    assert_batch_is_stacked_runs(_load(path, engine))


@pytest.mark.parametrize("path,engine", list(_cases(SHARED)))
def test_run_batch_of_a_real_model_is_n_runs(path, engine):
    model = _load(path, engine)
    assert_batch_is_stacked_runs(model, frames=3 if model.stateful else 1)


@pytest.mark.parametrize("path", _wakeword_models())
def test_run_batch_advances_every_stream_of_a_wakeword_model_as_its_own(path):
    model = _load(path, "tflm")
    assert model.stateful and model.batch_blocker == ""
    assert_batch_is_stacked_runs(model, n=4, frames=4)


def test_large_batches_run_in_chunks_with_the_same_result(monkeypatch):
    model = _load(os.path.join(ROOT, "tests", "golden", "models", "cnn.tflite"), "tflm")
    x = _inputs(model, 7, 1)
    whole = model.run_batch(x)
    monkeypatch.setattr(type(model), "BATCH_BYTES", 1)  # one sample per chunk
    assert np.array_equal(model.run_batch(x)[0], whole[0])
    monkeypatch.setattr(type(model), "BATCH_BYTES", 3 * 4096)  # a few samples per chunk, a short last one
    assert np.array_equal(model.run_batch(x)[0], whole[0])


def test_streams_in_chunks_keep_one_state_each(monkeypatch):
    paths = _wakeword_models()
    if not paths:
        pytest.skip("pymicro_wakeword is not installed")
    model = _load(paths[0], "tflm")
    monkeypatch.setattr(type(model), "BATCH_BYTES", 1)
    assert_batch_is_stacked_runs(model, n=3, frames=3)


def test_a_model_that_mixes_the_batch_runs_one_by_one():
    path = os.path.join(ROOT, "tests", "golden", "models", "requantize_left.tflite")
    model = _load(path, "tflm")
    assert "no batch of 1" in model.batch_blocker
    assert batch_blocker(model._mdef) == model.batch_blocker
    assert_batch_is_stacked_runs(model)
