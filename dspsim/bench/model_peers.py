"""The interpreters a whole .tflite model is benchmarked against, and the worker process that runs them.

========================= ============================================== =============================
peer                      runs                                           compared with
========================= ============================================== =============================
``tflm``                  the TensorFlow Lite Micro interpreter           dspsim ``engine="tflm"``
                          (``tflite_micro`` runtime; single-threaded)
``litert-ref``            LiteRT, ``OpResolverType.BUILTIN_REF``          dspsim ``engine="litert"``
``litert-default``        LiteRT's default interpreter (XNNPACK delegate) dspsim ``engine="xnnpack"``
========================= ============================================== =============================

Each peer runs in-process when its package is importable, else in a worker process under the
interpreter named by ``DSPSIM_TFLM_PYTHON`` (tflm) or ``DSPSIM_LITERT_PYTHON`` (both LiteRT peers):
``python model_peers.py model-worker ...`` computes the outputs of the check inputs and times one
inference by the rule of :mod:`dspsim.bench.timing` (loaded by path, as :mod:`dspsim.bench.litert`'s
worker does). This file therefore imports only numpy at import time, and nothing of dspsim.

Inputs (one model input; ``x`` int8/float32 as the model's):

- stateless model: ``x`` of shape ``(N, *input.shape)``; the outputs are ``(N, *output.shape)``, one
  inference per sample; the timed call is one inference on sample 0.
- state-carrying model (streaming): ``x`` of shape ``(S, F, *input.shape)``, S independent streams of F
  frames; each stream starts from a fresh interpreter; the outputs are ``(S, F, *output.shape)``; the
  timed call is one frame (one invoke) of one stream.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

PEERS = ("tflm", "litert-ref", "litert-default")
#: the dspsim engine whose arithmetic each peer has
DSPSIM_ENGINE = {"tflm": "tflm", "litert-ref": "litert", "litert-default": "xnnpack"}
#: the package a peer needs in-process, and the environment variable naming a python that has it
PACKAGE = {"tflm": ("tflite_micro", "DSPSIM_TFLM_PYTHON"), "litert-ref": ("ai_edge_litert", "DSPSIM_LITERT_PYTHON"),
           "litert-default": ("ai_edge_litert", "DSPSIM_LITERT_PYTHON")}
TFLM_ARENA_BYTES = 16 << 20


class PeerUnavailable(Exception):
    """The peer's package is neither importable nor reachable through its worker variable."""


def _importable(package: str) -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def where(peer: str) -> str:
    """``"in-process"``, or the worker python, for ``peer``; :class:`PeerUnavailable` otherwise."""
    package, var = PACKAGE[peer]
    if _importable(package):
        return "in-process"
    if os.environ.get(var):
        return os.environ[var]
    raise PeerUnavailable(f"{package} not importable (set {var} to a python that has it)")


def invoker(peer: str, model: bytes, n_out: int, threads: int):
    """``new()``: a fresh interpreter's ``call(x) -> list of its n_out outputs`` (one inference, copies)."""
    if peer == "tflm":
        from tflite_micro.python.tflite_micro import runtime

        def new():
            it = runtime.Interpreter.from_bytes(model, arena_size=TFLM_ARENA_BYTES)

            def call(x):
                it.set_input(x, 0)
                it.invoke()
                return [np.array(it.get_output(k)) for k in range(n_out)]
            return call
        return new
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    resolver = OpResolverType.BUILTIN_REF if peer == "litert-ref" else OpResolverType.AUTO

    def new():
        it = Interpreter(model_content=model, experimental_op_resolver_type=resolver, num_threads=threads)
        it.allocate_tensors()
        i_in, outs = it.get_input_details()[0]["index"], [d["index"] for d in it.get_output_details()[:n_out]]

        def call(x):
            it.set_tensor(i_in, x)
            it.invoke()
            return [it.get_tensor(i).copy() for i in outs]
        return call
    return new


def run_peer(peer: str, model: bytes, x: np.ndarray, n_out: int, stateful: bool, threads: int, repeats: int,
             budget: float, measure):
    """(outputs as a list of arrays stacked over the samples (and frames), Timing of one inference)."""
    new = invoker(peer, model, n_out, threads)
    if stateful:
        per_stream = []
        for s in range(x.shape[0]):
            call = new()
            per_stream.append([call(x[s, f]) for f in range(x.shape[1])])
        outs = [np.stack([np.stack([frame[k] for frame in stream]) for stream in per_stream])
                for k in range(len(per_stream[0][0]))]
        call = new()
    else:
        call = new()
        per_sample = [call(x[n]) for n in range(x.shape[0])]
        outs = [np.stack([o[k] for o in per_sample]) for k in range(len(per_sample[0]))]
    sample = x[0, 0] if stateful else x[0]
    return outs, measure(lambda: call(sample), repeats, budget)


def peer_outputs_and_timing(peer: str, model_path, x: np.ndarray, n_out: int, stateful: bool, threads: int,
                            repeats: int, budget: float):
    """:func:`run_peer` in-process or in the peer's worker process; returns (outputs, Timing)."""
    from .timing import Timing, measure
    model = Path(model_path).read_bytes()
    python = where(peer)
    if python == "in-process":
        return run_peer(peer, model, x, n_out, stateful, threads, repeats, budget, measure)
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src, dst = Path(d) / "in.npz", Path(d) / "out.npz"
        np.savez(src, x=x)
        cmd = [python, __file__, "model-worker", peer, str(model_path), str(src), str(dst), str(n_out),
               str(int(stateful)), str(threads), str(repeats), str(budget)]
        env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=env)
        if res.returncode != 0:
            raise RuntimeError(f"{peer} worker failed: {res.stderr.strip().splitlines()[-1:]}")
        with np.load(dst) as f:
            outs = [f[f"y{k}"] for k in range(int(f["n_out"]))]
            (t_min, t_median, t_cpu), runs = f["seconds"], int(f["runs"])
    return outs, Timing(outs, float(t_min), float(t_median), runs, float(t_cpu))


def _worker(peer, model_path, src, dst, n_out, stateful, threads, repeats, budget):
    """Entry point under a python with the peer's package: outputs of the inputs, one inference timed."""
    sys.path.insert(0, str(Path(__file__).parent))
    import timing  # dspsim/bench/timing.py (standard library only), without dspsim installed

    with np.load(src) as f:
        x = f["x"]
    outs, t = run_peer(peer, Path(model_path).read_bytes(), x, int(n_out), stateful == "1", int(threads),
                       int(repeats), float(budget), timing.measure)
    np.savez(dst, n_out=len(outs), seconds=np.array([t.min_seconds, t.median_seconds, t.cpu_min_seconds]), runs=t.runs,
             **{f"y{k}": o for k, o in enumerate(outs)})


if __name__ == "__main__" and sys.argv[1:2] == ["model-worker"]:
    _worker(*sys.argv[2:])
