"""The real interpreters behind one face (dspsim.interpreters): the sample/stream protocol of run, the
worker process of run_in and its failure, and (live) the interpreters themselves."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dspsim import interpreters as it
from dspsim.harness import validate as v
from dspsim.tflite import load_model

MOBILENET = Path(__file__).parents[1] / "golden" / "models" / "mobilenet.tflite"


class _Accumulating:
    """A stand-in interpreter with state: each output is the running sum of the inputs it was given;
    tensor ``i`` is ``i`` times that sum. Counts how many were made."""

    made = 0

    def __init__(self, kind, model, n_outputs, **_):
        type(self).made += 1
        self.state = 0

    def invoke(self, inputs):
        self.state = self.state + sum(int(x.sum()) for x in inputs)
        return [np.array([self.state]), np.array([-self.state])]

    def tensor(self, index):
        return np.array([index * self.state])


@pytest.fixture
def fake(monkeypatch):
    _Accumulating.made = 0
    monkeypatch.setattr(it, "Interpreter", _Accumulating)
    return _Accumulating


def test_each_stream_starts_from_a_fresh_interpreter(fake):
    x = np.arange(2 * 3 * 2).reshape(2, 3, 2)  # 2 streams, 3 frames of a 2-vector
    res = it.run("tflm", b"", [x], streaming=True, n_outputs=2, tensors=[5])
    running = np.cumsum(x.sum(axis=2), axis=1)  # per stream, from 0
    np.testing.assert_array_equal(res["out0"][..., 0], running)
    np.testing.assert_array_equal(res["out1"][..., 0], -running)
    np.testing.assert_array_equal(res["t0"][..., 0], 5 * running)  # the first tensor asked for
    assert res["out0"].shape == (2, 3, 1) and fake.made == 2


def test_stateless_samples_share_one_interpreter_in_order(fake):
    x = np.arange(4 * 2).reshape(4, 2)
    res = it.run("litert", b"", [x, x], streaming=False, n_outputs=2)
    np.testing.assert_array_equal(res["out0"][:, 0], np.cumsum(2 * x.sum(axis=1)))
    assert res["out0"].shape == (4, 1) and fake.made == 1 and not [k for k in res if k.startswith("t")]


def test_timing_times_sample_zero_on_a_fresh_stream(fake):
    class T:
        min_seconds, median_seconds, cpu_min_seconds, runs = 1.0, 2.0, 3.0, 7

    seen = []

    def measure(call, repeats, budget):
        seen.append((call()[0].tolist(), repeats, budget))
        return T

    x = np.full((2, 3, 1), 4)
    res = it.run("tflm", b"", [x], streaming=True, n_outputs=2, timing=(measure, 5, 0.1))
    assert seen == [([4], 5, 0.1)] and fake.made == 3  # frame 0 on a third interpreter: no state carried
    assert res["seconds"].tolist() == [1.0, 2.0, 3.0] and int(res["runs"]) == 7


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="'litert-ref' is not a valid Kind"):
        it.Interpreter("litert-ref", b"", 1)  # the old name of "litert"


def _lacks(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode != 0


@pytest.mark.skipif(not _lacks("ai_edge_litert.interpreter"), reason="ai_edge_litert is installed here")
def test_a_failing_worker_reports_its_exit_status_and_last_stderr_line():
    with pytest.raises(it.WorkerFailed) as info:
        it.run_in(sys.executable, "litert", MOBILENET.read_bytes(), [np.zeros((1, 1, 32, 32, 3), np.int8)],
                  streaming=False, n_outputs=1)
    assert info.value.returncode == 1 and "ModuleNotFoundError" in info.value.last_line
    with pytest.raises(v.ValidateError, match=r"^the litert interpreter failed \(exit 1\): ModuleNotFoundError"):
        v.interpreter_tensors(MOBILENET.read_bytes(), "litert", [np.zeros((1, 1, 32, 32, 3), np.int8)], False,
                              [0], 1, sys.executable)


def test_a_peer_variable_wins_over_the_shared_interpreter_python(monkeypatch):
    from dspsim.bench import model_peers

    for var in ("DSPSIM_TFLM_PYTHON", "DSPSIM_LITERT_PYTHON", it.INTERPRETER_PYTHON):
        monkeypatch.delenv(var, raising=False)
    assert it.worker_python("DSPSIM_TFLM_PYTHON") is None and v.interpreter_python() == sys.executable
    monkeypatch.setenv(it.INTERPRETER_PYTHON, "/opt/shared/python")
    assert it.worker_python("DSPSIM_TFLM_PYTHON") == "/opt/shared/python" == v.interpreter_python()
    monkeypatch.setenv("DSPSIM_TFLM_PYTHON", "/opt/tflm/python")
    assert it.worker_python("DSPSIM_TFLM_PYTHON") == "/opt/tflm/python"
    assert it.worker_python("DSPSIM_LITERT_PYTHON") == "/opt/shared/python"
    monkeypatch.setattr(model_peers, "_importable", lambda package: False)  # as in a venv without the peers
    assert model_peers.where("tflm") == "/opt/tflm/python" and model_peers.where("litert") == "/opt/shared/python"
    monkeypatch.delenv(it.INTERPRETER_PYTHON)
    with pytest.raises(model_peers.PeerUnavailable, match="DSPSIM_LITERT_PYTHON or DSPSIM_INTERPRETER_PYTHON"):
        model_peers.where("xnnpack")


# ---------------------------------------------------------------------------------------------
# live: the interpreters themselves, in a worker under DSPSIM_LITERT_PYTHON / DSPSIM_TFLM_PYTHON
# ---------------------------------------------------------------------------------------------
def _python(var, module):
    python = os.environ.get(var)
    if not python or subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode:
        pytest.skip(f"set {var} to a python with {module}")
    return python


@pytest.mark.live
@pytest.mark.parametrize("kind", ["litert", "litert-optimized", "xnnpack", "tflm"])
def test_a_worker_run_is_the_samples_run_one_by_one_and_the_output_tensor_is_the_output(kind):
    var = "DSPSIM_TFLM_PYTHON" if kind == "tflm" else "DSPSIM_LITERT_PYTHON"
    python = _python(var, it.MODULE[it.Kind(kind)])
    model = MOBILENET.read_bytes()
    x = np.random.default_rng(0).integers(-128, 128, size=(3, 1, 32, 32, 3), dtype=np.int8)
    preserve = kind != "xnnpack"  # the delegate keeps no intermediates
    tensors = [20] if preserve else []  # 20: the output tensor "Identity"
    whole = it.run_in(python, kind, model, [x], streaming=False, n_outputs=1, tensors=tensors,
                      preserve_all_tensors=preserve)
    alone = [it.run_in(python, kind, model, [x[s:s + 1]], streaming=False, n_outputs=1)["out0"][0] for s in range(3)]
    np.testing.assert_array_equal(whole["out0"], np.stack(alone))
    assert whole["out0"].shape == (3, 1, 10) and whole["out0"].dtype == np.int8
    if preserve:
        np.testing.assert_array_equal(whole["t20"], whole["out0"])


@pytest.mark.live
@pytest.mark.parametrize("kind", ["litert", "tflm"])
def test_a_stream_run_with_others_is_the_stream_run_alone(kind):
    var = "DSPSIM_TFLM_PYTHON" if kind == "tflm" else "DSPSIM_LITERT_PYTHON"
    python = _python(var, it.MODULE[it.Kind(kind)])
    where = subprocess.run([python, "-c", "import os, pymicro_wakeword as m; print(os.path.dirname(m.__file__))"],
                           capture_output=True, text=True)
    if where.returncode:
        pytest.skip("pymicro_wakeword (the streaming model) is not installed there")
    path = Path(where.stdout.strip()) / "models" / "okay_nabu.tflite"
    model = path.read_bytes()
    frame = np.random.default_rng(1).integers(-128, 128, size=(1, 1, 3, 40), dtype=np.int8)
    x = np.stack([np.repeat(frame, 6, axis=0), -frame.repeat(6, axis=0)])  # 2 streams of 6 equal frames each
    tensors = sorted({e.tensor for e in load_model(path).trace([x[0, 0]]) if e.op_index >= 0
                      and not e.name.endswith(" (state write)")})
    run = dict(streaming=True, n_outputs=1, tensors=tensors, preserve_all_tensors=True)
    both, second = it.run_in(python, kind, model, [x], **run), it.run_in(python, kind, model, [x[1:]], **run)
    moving = [i for i in tensors if len({f.tobytes() for f in both[f"t{i}"][1]}) > 1]
    assert moving  # the same frame again gives other values: the state carries over within a stream
    for i in moving:  # ... and not from one stream into the next
        np.testing.assert_array_equal(both[f"t{i}"][1], second[f"t{i}"][0])
    assert both["out0"].shape == (2, 6, 1, 1)
