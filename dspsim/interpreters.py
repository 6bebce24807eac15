"""The real TFLite interpreters behind one face, here or in a worker process under another Python.

=================== ====================================================================================
:class:`Kind`       the interpreter
=================== ====================================================================================
``litert-ref``      LiteRT (``ai_edge_litert``), ``OpResolverType.BUILTIN_REF``: the reference kernels
``litert-builtin``  LiteRT, ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``: the optimized builtin kernels
``litert-default``  LiteRT's default interpreter (``AUTO``: the XNNPACK delegate)
``tflm``            TensorFlow Lite Micro (``tflite_micro.python.tflite_micro.runtime``)
=================== ====================================================================================

:class:`Interpreter` is one of them on a model, in its initial state (a streaming model's state is
fresh): :meth:`~Interpreter.invoke` sets the inputs, invokes and returns copies of the outputs,
:meth:`~Interpreter.tensor` reads any tensor after it (``preserve_all_tensors``: LiteRT's
``experimental_preserve_all_tensors``, TFLM's ``InterpreterConfig.kPreserveAllTensors``, so that the
intermediates survive the invoke).

:func:`run` runs a chunk of samples: stateless, ``arrays[k]`` is ``(n, *input_k.shape)`` and one
interpreter takes every sample; streaming, ``(streams, frames, *input_k.shape)`` and each stream gets
a fresh interpreter. It returns ``{"out<k>": (n[, frames], *out.shape), "t<i>": tensor i likewise}``,
and with ``timing`` the times of one more inference (sample 0; streaming: frame 0 of a fresh stream).
:func:`run_in` does the same in ``python interpreters.py worker REQUEST.npz RESULT.npz`` under another
Python: this file imports only numpy and the standard library at import time (the interpreters'
packages when used) and nothing of dspsim, so that a Python with neither dspsim nor numba runs it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from enum import Enum
from pathlib import Path

import numpy as np


class Kind(str, Enum):
    """Which interpreter (the module docstring's table)."""

    LITERT_REF = "litert-ref"
    LITERT_BUILTIN = "litert-builtin"
    LITERT_DEFAULT = "litert-default"
    TFLM = "tflm"


#: The module each kind imports, and the pip package that has it.
MODULE = {Kind.LITERT_REF: "ai_edge_litert.interpreter", Kind.LITERT_BUILTIN: "ai_edge_litert.interpreter",
          Kind.LITERT_DEFAULT: "ai_edge_litert.interpreter", Kind.TFLM: "tflite_micro.python.tflite_micro.runtime"}
PIP = {Kind.LITERT_REF: "ai-edge-litert", Kind.LITERT_BUILTIN: "ai-edge-litert", Kind.LITERT_DEFAULT: "ai-edge-litert",
       Kind.TFLM: "tflite-micro"}
INTERPRETER_PYTHON = "DSPSIM_INTERPRETER_PYTHON"
"""The environment variable naming a Python that has the interpreters' packages (``dspsim validate``, and
``dspsim bench`` where its own variable is unset)."""


def worker_python(variable: str | None = None) -> str | None:
    """The Python named by ``variable`` (a peer's own), else by :data:`INTERPRETER_PYTHON`, else None."""
    return (os.environ.get(variable) if variable else None) or os.environ.get(INTERPRETER_PYTHON) or None


#: The environment of a worker: TensorFlow's oneDNN rewrites off, its info logging quiet.
WORKER_ENV = {"TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}


class WorkerFailed(RuntimeError):
    """The worker process exited non-zero (or wrote no result): its exit status and stderr."""

    def __init__(self, returncode: int, stderr: str):
        self.returncode, self.stderr = returncode, stderr
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        self.last_line = lines[-1] if lines else ""
        super().__init__(f"interpreter worker failed (exit {returncode})" + (f": {self.last_line}" if lines else ""))


def _tflm(model: bytes, preserve_all_tensors: bool, arena_bytes):
    """A TFLM interpreter; the arena (default ``max(1 MiB, 16 x model)``) grows 4x at a time, up to 4
    times, while allocation fails."""
    from tflite_micro.python.tflite_micro import runtime

    config = runtime.InterpreterConfig.kPreserveAllTensors if preserve_all_tensors else \
        runtime.InterpreterConfig.kAllocationRecording
    arena, err = arena_bytes or max(1 << 20, 16 * len(model)), None
    for _ in range(5):
        try:
            return runtime.Interpreter.from_bytes(model, arena_size=arena, intrepreter_config=config)
        except RuntimeError as exc:
            err, arena = exc, arena * 4
    raise err


class Interpreter:
    """One interpreter of ``kind`` on ``model`` (.tflite bytes), in its initial state.

    ``n_outputs``: how many outputs :meth:`invoke` returns (TFLM cannot list them); ``threads``:
    LiteRT's ``num_threads`` (None: its default); ``arena_bytes``: TFLM's first arena size.
    """

    def __init__(self, kind, model: bytes, n_outputs: int, *, preserve_all_tensors=False, threads=None,
                 arena_bytes=None):
        self.kind, self.n_outputs = Kind(kind), n_outputs
        if self.kind is Kind.TFLM:
            self._it = _tflm(model, preserve_all_tensors, arena_bytes)
            return
        from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

        resolver = {Kind.LITERT_REF: OpResolverType.BUILTIN_REF,
                    Kind.LITERT_BUILTIN: OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                    Kind.LITERT_DEFAULT: OpResolverType.AUTO}[self.kind]
        self._it = LiteRT(model_content=model, experimental_op_resolver_type=resolver, num_threads=threads,
                          experimental_preserve_all_tensors=preserve_all_tensors)
        self._it.allocate_tensors()
        self._ins = [d["index"] for d in self._it.get_input_details()]
        self._outs = [d["index"] for d in self._it.get_output_details()[:n_outputs]]

    def invoke(self, inputs) -> list:
        """Set ``inputs`` (one array per model input, in order), invoke, return copies of the outputs."""
        it = self._it
        if self.kind is Kind.TFLM:
            for k, x in enumerate(inputs):
                it.set_input(x, k)
            it.invoke()
            return [np.array(it.get_output(k)) for k in range(self.n_outputs)]
        for i, x in zip(self._ins, inputs):
            it.set_tensor(i, x)
        it.invoke()
        return [it.get_tensor(i).copy() for i in self._outs]

    def tensor(self, index: int) -> np.ndarray:
        """A copy of tensor ``index`` as the last invoke left it."""
        if self.kind is Kind.TFLM:
            return np.array(self._it.GetTensor(int(index), 0)["tensor_data"])
        return self._it.get_tensor(int(index)).copy()


def run(kind, model: bytes, arrays, *, streaming: bool, n_outputs: int, tensors=(), preserve_all_tensors=False,
        threads=None, arena_bytes=None, timing=None) -> dict:
    """Every sample (every frame of every stream) of ``arrays`` through ``kind`` (module docstring).

    ``tensors``: the tensor indices to return beside the outputs. ``timing``: ``(measure, repeats,
    budget)`` (:func:`dspsim.bench.timing.measure`) adds ``"seconds"`` (min, median, least CPU) and
    ``"runs"``.
    """
    def new():
        return Interpreter(kind, model, n_outputs, preserve_all_tensors=preserve_all_tensors, threads=threads,
                           arena_bytes=arena_bytes)

    tensors = [int(i) for i in tensors]
    outs, ts, it = [], {i: [] for i in tensors}, None
    for s in range(arrays[0].shape[0]):
        if streaming or it is None:  # a fresh state for every stream
            it = new()
        frames = [[a[s, t] for a in arrays] for t in range(arrays[0].shape[1])] if streaming else \
            [[a[s] for a in arrays]]
        steps = []
        for xs in frames:
            steps.append((it.invoke(xs), {i: it.tensor(i) for i in tensors}))
        outs.append([np.stack([st[0][k] for st in steps]) if streaming else steps[0][0][k]
                     for k in range(len(steps[0][0]))])
        for i in tensors:
            vals = [st[1][i] for st in steps]
            ts[i].append(np.stack(vals) if streaming else vals[0])
    res = {f"out{k}": np.stack([o[k] for o in outs]) for k in range(len(outs[0]))}
    res.update({f"t{i}": np.stack(v) for i, v in ts.items()})
    if timing is not None:
        measure, repeats, budget = timing
        it = new() if streaming else it
        sample = [a[0, 0] if streaming else a[0] for a in arrays]
        t = measure(lambda: it.invoke(sample), repeats, budget)
        res.update(seconds=np.array([t.min_seconds, t.median_seconds, t.cpu_min_seconds]), runs=np.asarray(t.runs))
    return res


def run_in(python: str, kind, model: bytes, arrays, *, streaming: bool, n_outputs: int, tensors=(),
           preserve_all_tensors=False, threads=None, arena_bytes=None, timing=None, timeout=None) -> dict:
    """:func:`run` in a worker process under ``python``; ``timing``: ``(path of a module with
    measure(call, repeats, budget), repeats, budget)``. :class:`WorkerFailed` when the worker fails."""
    options = {"kind": Kind(kind).value, "streaming": bool(streaming), "n_outputs": int(n_outputs),
               "tensors": [int(i) for i in tensors], "preserve_all_tensors": bool(preserve_all_tensors),
               "threads": threads, "arena_bytes": arena_bytes, "timing": timing}
    with tempfile.TemporaryDirectory(prefix="dspsim-interpreter-") as d:
        src, dst = Path(d) / "in.npz", Path(d) / "out.npz"
        np.savez(src, options=np.asarray(json.dumps(options)), model=np.frombuffer(model, np.uint8),
                 **{f"in{k}": a for k, a in enumerate(arrays)})
        r = subprocess.run([python, __file__, "worker", str(src), str(dst)], capture_output=True, text=True,
                           env={**os.environ, **WORKER_ENV}, timeout=timeout)
        if r.returncode != 0 or not dst.exists():
            raise WorkerFailed(r.returncode, r.stderr)
        with np.load(dst) as z:
            return {k: z[k] for k in z.files}


def _load_by_path(path, name: str):
    """The module in file ``path``, imported as ``name`` without its package (a Python without dspsim)."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _worker(src, dst):
    """Entry point under the interpreter's Python: :func:`run` on the request ``src``, the result to ``dst``."""
    with np.load(src) as z:
        options = json.loads(str(z["options"]))
        model = z["model"].tobytes()
        arrays = [z[f"in{k}"] for k in range(sum(1 for f in z.files if f.startswith("in")))]
    if options["timing"] is not None:
        module, repeats, budget = options["timing"]
        options["timing"] = (_load_by_path(module, "dspsim_worker_timing").measure, repeats, budget)
    np.savez(dst, **run(options.pop("kind"), model, arrays, **options))


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    _worker(*sys.argv[2:])
