"""The interpreters a whole .tflite model is benchmarked against, run here or in a worker process.

========================= ============================================== =============================
peer (an engine name)     runs                                           compared with
========================= ============================================== =============================
``tflm``                  the TensorFlow Lite Micro interpreter           dspsim ``engine="tflm"``
                          (``tflite_micro`` runtime; single-threaded)
``litert``                LiteRT, ``OpResolverType.BUILTIN_REF``          dspsim ``engine="litert"``
``xnnpack``               LiteRT's default interpreter (XNNPACK delegate) dspsim ``engine="xnnpack"``
========================= ============================================== =============================

Each peer runs in-process when its package is importable, else in a worker process under the
interpreter named by ``DSPSIM_TFLM_PYTHON`` (tflm) or ``DSPSIM_LITERT_PYTHON`` (both LiteRT peers), else by
``DSPSIM_INTERPRETER_PYTHON`` (as ``dspsim validate``):
:mod:`dspsim.interpreters` (the peers are three of its kinds) computes the outputs of the check
inputs and times one inference by the rule of :mod:`dspsim.bench.timing` (loaded by path in the worker).

Inputs (one model input; ``x`` int8/float32 as the model's):

- stateless model: ``x`` of shape ``(N, *input.shape)``; the outputs are ``(N, *output.shape)``, one
  inference per sample; the timed call is one inference on sample 0.
- state-carrying model (streaming): ``x`` of shape ``(S, F, *input.shape)``, S independent streams of F
  frames; each stream starts from a fresh interpreter; the outputs are ``(S, F, *output.shape)``; the
  timed call is one frame (one invoke) of one stream.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import interpreters

PEERS = ("tflm", "litert", "xnnpack")
"""The peers, each named as the dspsim engine (and :class:`dspsim.interpreters.Kind`) whose arithmetic it has."""
#: the package a peer needs in-process, and the environment variable naming a python that has it
PACKAGE = {"tflm": ("tflite_micro", "DSPSIM_TFLM_PYTHON"), "litert": ("ai_edge_litert", "DSPSIM_LITERT_PYTHON"),
           "xnnpack": ("ai_edge_litert", "DSPSIM_LITERT_PYTHON")}
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
    python = interpreters.worker_python(var)
    if python:
        return python
    raise PeerUnavailable(f"{package} not importable (set {var} or {interpreters.INTERPRETER_PYTHON} to a python "
                          "that has it)")


def peer_outputs_and_timing(peer: str, model_path, x: np.ndarray, n_out: int, stateful: bool, threads: int,
                            repeats: int, budget: float):
    """The peer's outputs of ``x`` (stacked over the samples, and frames) and the Timing of one inference,
    in-process or in the peer's worker process (:func:`dspsim.interpreters.run` / ``run_in``)."""
    from .timing import Timing, measure
    python = where(peer)
    args = (peer, Path(model_path).read_bytes(), [x])
    kw = dict(streaming=stateful, n_outputs=n_out, threads=threads, arena_bytes=TFLM_ARENA_BYTES)
    if python == "in-process":
        res = interpreters.run(*args, **kw, timing=(measure, repeats, budget))
    else:
        try:
            res = interpreters.run_in(python, *args, **kw, timing=(str(Path(__file__).with_name("timing.py")), repeats,
                                                                   budget), timeout=3600)
        except interpreters.WorkerFailed as exc:
            raise RuntimeError(f"{peer} worker failed: {exc.stderr.strip().splitlines()[-1:]}") from None
    outs = [res[f"out{k}"] for k in range(n_out)]
    (t_min, t_median, t_cpu), runs = res["seconds"], int(res["runs"])
    return outs, Timing(outs, float(t_min), float(t_median), runs, float(t_cpu))
