"""The real interpreters behind one face, here or in a worker process under another Python.

========================= ==========================================================================
:class:`Kind`             the interpreter (its value is the name of the dspsim engine that emulates it)
========================= ==========================================================================
``litert``                LiteRT (``ai_edge_litert``), ``OpResolverType.BUILTIN_REF``: the reference kernels
``litert-optimized``      LiteRT, ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``: the optimized builtin kernels
``xnnpack``               LiteRT's default interpreter (``AUTO``: the XNNPACK delegate)
``tflm``                  TensorFlow Lite Micro (``tflite_micro.python.tflite_micro.runtime``)
``onnxruntime``           ONNX Runtime's CPU provider, graph optimizations off
``onnxruntime-optimized`` ONNX Runtime, ``ORT_ENABLE_ALL``
``onnx-reference``        ``onnx.reference.ReferenceEvaluator``
========================= ==========================================================================

:class:`Interpreter` is one of them on a model, in its initial state (a streaming model's state is
fresh): :meth:`~Interpreter.invoke` sets the inputs, invokes and returns copies of the outputs,
:meth:`~Interpreter.tensor` reads any tensor after it (a TFLite tensor by index, an ONNX one by name;
``preserve_all_tensors``: LiteRT's ``experimental_preserve_all_tensors``, TFLM's
``InterpreterConfig.kPreserveAllTensors``, ONNX Runtime with every value the graph's shape inference types
made an output (not with graph optimizations, which that would change), the reference evaluator's
intermediate results, so that the intermediates survive the invoke).

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

if __name__ == "__main__":  # a worker: this file's folder (dspsim/, which holds an ``onnx`` package) off the path
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import numpy as np  # noqa: E402


class Kind(str, Enum):
    """Which interpreter (the module docstring's table)."""

    LITERT = "litert"
    LITERT_OPTIMIZED = "litert-optimized"
    XNNPACK = "xnnpack"
    TFLM = "tflm"
    ONNXRUNTIME = "onnxruntime"
    ONNXRUNTIME_OPTIMIZED = "onnxruntime-optimized"
    ONNX_REFERENCE = "onnx-reference"


_LITERT = (Kind.LITERT, Kind.LITERT_OPTIMIZED, Kind.XNNPACK)
_ONNX = (Kind.ONNXRUNTIME, Kind.ONNXRUNTIME_OPTIMIZED, Kind.ONNX_REFERENCE)
#: The module each kind imports, and the pip package that has it.
MODULE = {**{k: "ai_edge_litert.interpreter" for k in _LITERT}, Kind.TFLM: "tflite_micro.python.tflite_micro.runtime",
          Kind.ONNXRUNTIME: "onnxruntime", Kind.ONNXRUNTIME_OPTIMIZED: "onnxruntime", Kind.ONNX_REFERENCE: "onnx"}
PIP = {**{k: "ai-edge-litert" for k in _LITERT}, Kind.TFLM: "tflite-micro", Kind.ONNXRUNTIME: "onnxruntime",
       Kind.ONNXRUNTIME_OPTIMIZED: "onnxruntime", Kind.ONNX_REFERENCE: "onnx"}
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


class _Onnx:
    """An ONNX model under ONNX Runtime or the reference evaluator, with :class:`Interpreter`'s calls."""

    def __init__(self, kind, model: bytes, n_outputs: int, preserve_all_tensors: bool, threads):
        self.kind, self.n_outputs, self._values = kind, n_outputs, {}
        if kind is Kind.ONNX_REFERENCE:
            from onnx.reference import ReferenceEvaluator

            self._ref = ReferenceEvaluator(model)
            self._inputs, self._outputs = list(self._ref.input_names), list(self._ref.output_names)[:n_outputs]
            return
        import onnxruntime as ort

        if preserve_all_tensors and kind is Kind.ONNXRUNTIME:  # every typed value an output (no fusion to change)
            import onnx

            m = onnx.load_from_string(model)
            typed = onnx.shape_inference.infer_shapes(m)
            have = {o.name for o in m.graph.output}
            made = {o for node in m.graph.node for o in node.output}
            m.graph.output.extend(v for v in typed.graph.value_info if v.name in made and v.name not in have)
            model = m.SerializeToString()
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL if kind is \
            Kind.ONNXRUNTIME_OPTIMIZED else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        if threads:
            so.intra_op_num_threads = int(threads)
        so.log_severity_level = 3
        self._sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        self._inputs = [i.name for i in self._sess.get_inputs()]
        self._all = [o.name for o in self._sess.get_outputs()]
        self._outputs = self._all[:n_outputs]

    def invoke(self, inputs) -> list:
        feeds = dict(zip(self._inputs, inputs))
        if self.kind is Kind.ONNX_REFERENCE:
            self._values = {k: np.asarray(v) for k, v in self._ref.run(None, feeds, intermediate=True).items()}
        else:
            self._values = dict(zip(self._all, self._sess.run(None, feeds)))
        return [np.array(self._values[o]) for o in self._outputs]

    def tensor(self, name):
        v = self._values.get(name)
        return None if v is None else np.array(v)


class Interpreter:
    """One interpreter of ``kind`` on ``model`` (the file's bytes), in its initial state.

    ``n_outputs``: how many outputs :meth:`invoke` returns (TFLM cannot list them); ``threads``:
    LiteRT's and ONNX Runtime's thread count (None: its default); ``arena_bytes``: TFLM's first arena size.
    """

    def __init__(self, kind, model: bytes, n_outputs: int, *, preserve_all_tensors=False, threads=None,
                 arena_bytes=None):
        self.kind, self.n_outputs = Kind(kind), n_outputs
        if self.kind is Kind.TFLM:
            self._it = _tflm(model, preserve_all_tensors, arena_bytes)
            return
        if self.kind in _ONNX:
            self._it = _Onnx(self.kind, model, n_outputs, preserve_all_tensors, threads)
            return
        from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

        resolver = {Kind.LITERT: OpResolverType.BUILTIN_REF,
                    Kind.LITERT_OPTIMIZED: OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                    Kind.XNNPACK: OpResolverType.AUTO}[self.kind]
        self._it = LiteRT(model_content=model, experimental_op_resolver_type=resolver, num_threads=threads,
                          experimental_preserve_all_tensors=preserve_all_tensors)
        self._it.allocate_tensors()
        self._ins = [d["index"] for d in self._it.get_input_details()]
        self._outs = [d["index"] for d in self._it.get_output_details()[:n_outputs]]

    def invoke(self, inputs) -> list:
        """Set ``inputs`` (one array per model input, in order), invoke, return copies of the outputs."""
        it = self._it
        if self.kind in _ONNX:
            return it.invoke(inputs)
        if self.kind is Kind.TFLM:
            for k, x in enumerate(inputs):
                it.set_input(x, k)
            it.invoke()
            return [np.array(it.get_output(k)) for k in range(self.n_outputs)]
        for i, x in zip(self._ins, inputs):
            it.set_tensor(i, x)
        it.invoke()
        return [it.get_tensor(i).copy() for i in self._outs]

    def tensor(self, index) -> np.ndarray:
        """A copy of tensor ``index`` (an ONNX tensor's name) as the last invoke left it (None for an ONNX value
        the interpreter did not keep)."""
        if self.kind in _ONNX:
            return self._it.tensor(index)
        if self.kind is Kind.TFLM:
            return np.array(self._it.GetTensor(int(index), 0)["tensor_data"])
        return self._it.get_tensor(int(index)).copy()


def run(kind, model: bytes, arrays, *, streaming: bool, n_outputs: int, tensors=(), preserve_all_tensors=False,
        threads=None, arena_bytes=None, timing=None) -> dict:
    """Every sample (every frame of every stream) of ``arrays`` through ``kind`` (module docstring).

    ``tensors``: the tensors to return beside the outputs (indices; an ONNX model's names), as ``"t<k>"`` for the
    k-th (an ONNX value the interpreter did not keep is left out). ``timing``: ``(measure, repeats, budget)``
    (:func:`dspsim.bench.timing.measure`) adds ``"seconds"`` (min, median, least CPU) and ``"runs"``.
    """
    def new():
        return Interpreter(kind, model, n_outputs, preserve_all_tensors=preserve_all_tensors, threads=threads,
                           arena_bytes=arena_bytes)

    tensors = [i if isinstance(i, str) else int(i) for i in tensors]
    outs, ts, it = [], {k: [] for k in range(len(tensors))}, None
    for s in range(arrays[0].shape[0]):
        if streaming or it is None:  # a fresh state for every stream
            it = new()
        frames = [[a[s, t] for a in arrays] for t in range(arrays[0].shape[1])] if streaming else \
            [[a[s] for a in arrays]]
        steps = []
        for xs in frames:
            steps.append((it.invoke(xs), {k: it.tensor(i) for k, i in enumerate(tensors)}))
        outs.append([np.stack([st[0][k] for st in steps]) if streaming else steps[0][0][k]
                     for k in range(len(steps[0][0]))])
        for k in ts:
            vals = [st[1][k] for st in steps]
            ts[k].append(None if any(v is None for v in vals) else np.stack(vals) if streaming else vals[0])
    res = {f"out{k}": np.stack([o[k] for o in outs]) for k in range(len(outs[0]))}
    res.update({f"t{k}": np.stack(v) for k, v in ts.items() if all(x is not None for x in v)})
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
               "tensors": [i if isinstance(i, str) else int(i) for i in tensors],
               "preserve_all_tensors": bool(preserve_all_tensors),
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
