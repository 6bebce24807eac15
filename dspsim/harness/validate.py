"""``dspsim validate``: run a whole data set through a model and diff it, layer by layer.

:func:`validate` runs a data set through a .tflite or .onnx model (:func:`dspsim.load_model`) in chunks with
:meth:`dspsim.graph.model.Model.run_batch` (a stateless
model: the leading axis holds the samples; a streaming model: the leading axis holds independent
streams, the second their frames, and each ``run_batch`` call advances every stream of the chunk
by one frame). With a comparison it also traces every sample (every frame of every stream) with
:meth:`~dspsim.graph.model.Model.trace` and diffs each tensor against

* another dspsim engine or device profile (``against="tflm"``: the same model loaded with that engine), or
* the real interpreter (:data:`INTERPRETERS`, named as the engine that emulates it: ``"litert"``: ai_edge_litert
  with ``OpResolverType.BUILTIN_REF`` and ``experimental_preserve_all_tensors``; ``"tflm"``: tflite-micro's
  Python interpreter with ``InterpreterConfig.kPreserveAllTensors``; ``"onnxruntime"``, ``"onnx-reference"``
  for an .onnx model, every value they keep), run in a subprocess of ``DSPSIM_INTERPRETER_PYTHON`` (default:
  this Python) by :func:`dspsim.interpreters.run_in` (that Python needs neither dspsim nor numba).

The chunks are the unit of work: run one after the other here, or on a Dask distributed cluster
(``scheduler=ADDRESS``; for a streaming model a chunk is a set of whole streams). Each chunk's
result is a pure function of its samples, and the results are merged in chunk order, so a cluster
run gives exactly the result of a local run.

Dask sends each task to the workers as a pickle and the results back as pickles, and unpickling runs code: whoever
can reach a plaintext (``tcp://``) scheduler can run code on its workers, and whoever can impersonate it, on this
machine. A ``tcp://`` address that is not loopback therefore gets a :class:`PlaintextSchedulerWarning`; a
``tls://`` address with ``security`` (a ``distributed.Security``, e.g. :func:`tls_security` of a CA, a client
certificate and its key) encrypts and authenticates both ends. A chunk that kills every worker that runs it (Dask's
``KilledWorker``) is lost, not fatal: the other chunks finish and are reported, and ``"lost"`` names the lost ones.

Data sets: a ``.npy`` whose leading axis is the samples (shape ``(N, *input.shape)``, or ``(N,
*input.shape[1:])`` when the input's batch dimension is 1; a streaming model: ``(N, T, ...)``), a
``.npz`` with one such array per model input (named after the inputs, or ``arr_0``, ``arr_1``... in
input order), or a directory of ``.npy`` files, one sample (one stream) each, sorted by name.

Results (``results.json``, schema ``dspsim.validate/1``)::

    {"schema", "kind": "validate", "run": {...}, "model", "engine", "against" (engine name,
     "interpreter:<kind>", or null), "streaming", "samples": N, "frames": T | null,
     "chunk", "scheduler", "seconds", "samples_per_second", "passed" (no element differs and no sample was
     lost; true without a comparison), "lost": [{"start", "stop", "why"}] (chunks whose samples never finished:
     every Dask worker that ran them died; their rows of ``output_<k>.npy`` are zeros),
     "outputs": [{"index", "name", "count", "mismatches", "max_abs_diff", "unit", "samples_differing",
                  "samples" (the first SAMPLE_LIMIT differing sample indices)}],
     "layers": [{"op_index", "op", "count", "mismatches", "max_abs_diff", "unit", "samples_differing",
                 "samples", "histogram" ({"<signed diff>": count}, reference - dspsim), "local_mismatches",
                 "locality" ("local" | "inherited" | null), "tensors":
                 [{"tensor", "name", "count", "mismatches", "max_abs_diff", "unit"}]}]}

``mismatches`` counts output elements of the operator (its state writes included) that differ,
summed over all samples and frames; ``max_abs_diff`` is in LSB for integer tensors, ULP for float
ones (:func:`dspsim.harness.compare.compare`). ``local_mismatches`` counts those that still differ when the
operator runs alone (:meth:`~dspsim.graph.model.Model.run_operator`) on the reference's values of its inputs:
``locality`` is "local" when some do (the operator itself computes differently), "inherited" when none do (it
only passes on a difference made upstream), null when nothing differs or a stateful model (whose operators
cannot run alone on one frame's state) was compared; :func:`locality_line` says it in one sentence.
"""
from __future__ import annotations

import ipaddress
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._io import load_npy, load_npz, model_bytes
from ..interpreters import MODULE, PIP, Kind, WorkerFailed, run_in, worker_python

#: Interpreters ``--against-interpreter`` can run (those that keep the intermediate tensors), by model format.
INTERPRETERS = {Kind.LITERT.value: "tflite", Kind.LITERT_OPTIMIZED.value: "tflite", Kind.TFLM.value: "tflite",
                Kind.ONNXRUNTIME.value: "onnx", Kind.ONNXRUNTIME_OPTIMIZED.value: "onnx",
                Kind.ONNX_REFERENCE.value: "onnx"}
#: How many differing sample indices a layer row lists (the count is always complete).
SAMPLE_LIMIT = 1000
#: Seconds to wait for a Dask scheduler to answer.
CONNECT_TIMEOUT = 5
_STATE_WRITE = " (state write)"  # the suffix Model.trace gives a state write's name


class ValidateError(ValueError):
    """Bad input to validate (data that does not fit the model, a missing package, an unreachable
    scheduler): one line, for exit status 2."""


class PlaintextSchedulerWarning(UserWarning):
    """A Dask scheduler reached without encryption from another host: pickled tasks run code on its workers."""


# =============================================================================================
# the model, as something a worker can load
# =============================================================================================
@dataclass(frozen=True)
class ModelSource:
    """A model file's bytes (or, for models that exist only in memory, a picklable ``factory(engine) -> Model``),
    named for the report."""

    name: str
    data: bytes | None = field(default=None, repr=False)
    factory: object = None

    @classmethod
    def from_path(cls, path) -> "ModelSource":
        return cls(str(path), model_bytes(path, "validate"))

    def load(self, engine):
        """The model under ``engine`` (None: its format's engine)."""
        if self.factory is not None:
            return self.factory(engine)
        from dspsim.load import load_model

        return load_model(self.data, engine=engine)

    @property
    def format(self):
        """The model file's format (None for a factory)."""
        from dspsim.load import model_format

        return None if self.data is None else model_format(self.data).value


_CACHE = {}  # (source, engine, thread) -> Model: each worker thread prepares a model once


def _model(source: ModelSource, engine: str):
    key = (source.name, hash(source.data), id(source.factory) if source.factory else 0, engine, threading.get_ident())
    if key not in _CACHE:
        _CACHE[key] = source.load(engine)
    return _CACHE[key]


# =============================================================================================
# data sets
# =============================================================================================
class DataSet:
    """A data set opened lazily: ``n`` samples (streams), ``frames`` per stream (None: stateless), and
    :meth:`chunk` giving samples ``[start, stop)`` as one array per model input, shaped ``(n, *shape)``
    or ``(n, frames, *shape)`` with the model's exact input shapes."""

    def __init__(self, path, model):
        self.path = Path(path)
        self.streaming = bool(model.stateful)
        self._infos = model.inputs
        if self.path.is_dir():
            self._files = sorted(self.path.glob("*.npy"))
            if not self._files:
                raise ValidateError(f"--data {path}: the directory holds no .npy file")
            if len(self._infos) != 1:
                raise ValidateError(f"--data {path}: a directory of .npy files feeds a one-input model; this model has "
                                    f"{len(self._infos)} inputs (give a .npz with one array per input)")
            first = self._load_one(self._files[0])
            self._arrays = None
            self._shape, self._dtype = first.shape, first.dtype
            self.n = len(self._files)
            self._extra = self._check(0, (1, *first.shape), first.dtype, f"{self._files[0].name}")
        else:
            arrays = self._open_file(self.path)
            self._files = None
            self._arrays = arrays
            self.n = arrays[0].shape[0] if arrays[0].ndim else 0
            self._extra = [self._check(k, a.shape, a.dtype, f"input {k}") for k, a in enumerate(arrays)]
            if any(a.shape[0] != self.n for a in arrays):
                raise ValidateError(f"--data {path}: the inputs disagree on the number of samples: "
                                    f"{[a.shape[0] for a in arrays]}")
        if self.n < 1:
            raise ValidateError(f"--data {path}: no samples")

    def _load_one(self, f):
        """One sample file of a ``--data`` directory; ValidateError when it cannot be read (a directory named
        .npy, a corrupt or unreadable file)."""
        try:
            return load_npy(f, "validate", mmap=True)
        except (OSError, ValueError) as exc:
            raise ValidateError(f"--data {self.path}: cannot read {f.name} "
                                f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None

    def _open_file(self, path):
        try:
            if path.suffix == ".npz":
                z = load_npz(path, "validate")
                names = [i.name for i in self._infos]
                keys = names if all(n in z for n in names) else [f"arr_{k}" for k in range(len(names))]
                missing = [k for k in keys if k not in z]
                if missing or len(z) != len(names):
                    raise ValidateError(f"--data {path}: needs one array per model input ({names}, or arr_0.. in "
                                        f"input order), has {list(z)}")
                return [z[k] for k in keys]
            a = load_npy(path, "validate", mmap=True)
        except ValidateError:
            raise
        except (OSError, ValueError) as exc:
            raise ValidateError(f"--data {path}: cannot read it ({str(exc).splitlines()[0] if str(exc) else exc})") \
                from None
        if len(self._infos) != 1:
            raise ValidateError(f"--data {path}: the model has {len(self._infos)} inputs; give a .npz with one array "
                                "per input")
        return [a]

    def _check(self, k, shape, dtype, what) -> bool:
        """Whether the array (samples first) needs the input's batch axis of 1 added; ValidateError
        when its shape or dtype does not fit input ``k``."""
        info = self._infos[k]
        lead = 2 if self.streaming else 1
        layout = "(streams, frames, *shape)" if self.streaming else "(samples, *shape)"
        if np.dtype(dtype) != info.dtype:
            raise ValidateError(f"--data {self.path}: {what} has dtype {np.dtype(dtype)}, the model's input "
                                f"{info.name!r} takes {info.dtype}")
        rest = tuple(shape[lead:])
        if len(shape) >= lead and _fits(rest, info.shape):
            return False
        if len(shape) >= lead and info.shape[:1] == (1,) and _fits(rest, info.shape[1:]):
            return True
        raise ValidateError(f"--data {self.path}: {what} has shape {tuple(shape)}; the model's input {info.name!r} "
                            f"{info.shape} needs {layout}" + (" from a directory: each file one stream "
                                                              "(frames, *shape)" if self._files else ""))

    @property
    def frames(self):
        if not self.streaming:
            return None
        return (self._shape[0] if self._files else self._arrays[0].shape[1])

    def chunk(self, start: int, stop: int) -> list:
        lead = 2 if self.streaming else 1
        if self._files is not None:
            parts = []
            for f in self._files[start:stop]:
                a = self._load_one(f)
                if a.shape != self._shape or a.dtype != self._dtype:
                    raise ValidateError(f"--data {self.path}: {f.name} has {a.dtype} {a.shape}, the first file "
                                        f"{self._dtype} {self._shape}")
                parts.append(np.asarray(a))
            arrays, extra = [np.stack(parts)], [self._extra]
        else:
            arrays, extra = [np.ascontiguousarray(a[start:stop]) for a in self._arrays], self._extra
        return [a.reshape(a.shape[:lead] + (1,) + a.shape[lead:]) if e else a for a, e in zip(arrays, extra)]


def _fits(shape, declared) -> bool:
    """Whether ``shape`` is the declared one (a ``None`` dimension, an ONNX symbolic one, takes any size)."""
    return declared is not None and len(shape) == len(declared) and all(
        d is None or d < 0 or d == s for s, d in zip(shape, declared))


# =============================================================================================
# one chunk: run, trace, diff
# =============================================================================================
@dataclass(frozen=True)
class ChunkSpec:
    """Samples ``[start, start + n)`` and what to do with them; the task a worker runs."""

    source: ModelSource
    engine: str
    against: str | None
    interpreter: str | None
    python: str | None
    start: int
    arrays: list = field(repr=False)
    streaming: bool


def _diff_stats(expected, actual):
    """(count, mismatches, max |diff|, unit, histogram) of two tensors (one home: harness.compare)."""
    from dspsim.harness.compare import compare

    c = compare(expected, actual)
    return c.count, c.mismatches, c.max_abs_diff, c.unit, c.histogram


class _Tally:
    """The diff of one trace position (one tensor of one operator), summed over samples."""

    def __init__(self, op_index, op, tensor, name):
        self.op_index, self.op, self.tensor, self.name = op_index, op, tensor, name
        self.count = self.mismatches = 0
        self.max_abs_diff, self.unit, self.histogram, self.samples = 0, "LSB", {}, []
        self.local = 0  # elements differing with the reference's inputs fed in; None once a sample could not tell

    def add(self, sample, expected, actual, local):
        count, bad, mx, unit, hist = _diff_stats(expected, actual)
        self._sum(count, bad, mx, unit, hist, [sample], local)

    def merge(self, other: "_Tally") -> None:
        """Add the tally of later samples (the next chunk)."""
        self._sum(other.count, other.mismatches, other.max_abs_diff, other.unit, other.histogram, other.samples,
                  other.local)

    def _sum(self, count, bad, mx, unit, hist, samples, local):
        self.count += count
        self.unit = unit
        self.local = None if self.local is None or local is None else self.local + local
        if bad:
            self.mismatches += bad
            self.max_abs_diff = _max(self.max_abs_diff, mx)
            for k, v in hist.items():
                self.histogram[k] = self.histogram.get(k, 0) + v
            for s in samples:
                if not self.samples or self.samples[-1] != s:
                    self.samples.append(s)


def _max(a, b):
    if "inf" in (a, b):
        return "inf"
    return max(a, b)


def _run_outputs(model, arrays, streaming):
    """run_batch over the chunk: the outputs, ``(n, *out)`` or ``(n, frames, *out)``."""
    if not streaming:
        return model.run_batch(arrays)
    model.reset()
    frames = [model.run_batch([a[:, t] for a in arrays]) for t in range(arrays[0].shape[1])]
    model.reset()
    return [np.stack([f[k] for f in frames], axis=1) for k in range(len(model.outputs))]


def _traces(model, arrays, streaming, i):
    """The traces of sample (stream) ``i``: one list of TraceEntry per frame."""
    if not streaming:
        return [model.trace([a[i] for a in arrays])]
    model.reset()
    out = [model.trace([a[i, t] for a in arrays]) for t in range(arrays[0].shape[1])]
    model.reset()
    return out


def run_chunk(spec: ChunkSpec) -> dict:
    """Run one chunk: ``{"start", "n", "outputs": [arrays], "tallies": [_Tally] | None,
    "output_tallies": [_Tally] | None}``. Pure in its samples: the same chunk gives the same result
    wherever it runs."""
    model = _model(spec.source, spec.engine)
    n = spec.arrays[0].shape[0]
    outputs = _run_outputs(model, spec.arrays, spec.streaming)
    res = {"start": spec.start, "n": n, "outputs": outputs, "tallies": None, "output_tallies": None}
    if spec.against is None and spec.interpreter is None:
        return res
    ref_model = _model(spec.source, spec.against) if spec.against else None
    ref_tensors = None
    if spec.interpreter:
        wanted = sorted({e.tensor for e in _traces(model, [a[:1] for a in spec.arrays], spec.streaming, 0)[0]
                         if e.op_index >= 0 and not e.name.endswith(_STATE_WRITE)} | {o.index for o in model.outputs})
        names = [model.tensor_info(t).name for t in wanted] if INTERPRETERS[spec.interpreter] == "onnx" else None
        ref_tensors = interpreter_tensors(spec.source.data, spec.interpreter, spec.arrays, spec.streaming, wanted,
                                          len(model.outputs), spec.python, names)
    tallies, out_tallies = None, [_Tally(-2, "OUTPUT", o.index, o.name) for o in model.outputs]
    for i in range(n):
        sample = spec.start + i
        mine = _traces(model, spec.arrays, spec.streaming, i)
        theirs = _traces(ref_model, spec.arrays, spec.streaming, i) if ref_model else None
        for t, trace in enumerate(mine):
            if tallies is None:
                tallies = [_Tally(e.op_index, e.op, e.tensor, e.name) for e in trace if e.op_index >= 0]
            rows = [e for e in trace if e.op_index >= 0]
            if theirs is not None:
                ref = {(e.op_index, e.tensor, e.name): e.value for e in theirs[t]}
                refs = [ref.get((e.op_index, e.tensor, e.name)) for e in rows]
            else:
                idx = (i, t) if spec.streaming else (i,)
                refs = [None if e.name.endswith(_STATE_WRITE) or e.tensor not in ref_tensors else
                        np.asarray(ref_tensors[e.tensor][idx]).reshape(np.shape(e.value)) for e in rows]
            ref_values = {e.tensor: r for e, r in zip(rows, refs) if r is not None}
            own = {e.tensor: e.value for e in trace}
            for tally, e, r in zip(tallies, rows, refs):
                if r is not None:
                    local = None if spec.streaming else _local_mismatches(model, e, r, ref_values, own)
                    tally.add(sample, e.value, r, local)
        for k, (tally, o) in enumerate(zip(out_tallies, model.outputs)):
            mine_o = outputs[k][i]
            if theirs is not None:
                ref_o = np.stack([next(e.value for e in tr if e.tensor == o.index and e.op_index >= 0)
                                  for tr in theirs]) if spec.streaming else \
                    next(e.value for e in theirs[0] if e.tensor == o.index and e.op_index >= 0)
            else:
                ref_o = np.asarray(ref_tensors[f"out{k}"][i]).reshape(mine_o.shape)
            tally.add(sample, mine_o, ref_o, None)
    res["tallies"], res["output_tallies"] = tallies, out_tallies
    return res


def _local_mismatches(model, entry, reference, ref_values: dict, own: dict):
    """How many elements of trace ``entry`` still differ from ``reference`` when its operator runs alone on the
    reference's values of its inputs (``ref_values``, tensor -> value; a model input, or a tensor the reference
    did not keep: ``own``, this run's values); 0 where nothing differs, None where the operator cannot run alone
    (a state write, inputs the reference holds in another dtype or shape)."""
    from dspsim.harness._model_access import tensor_value
    from dspsim.harness.compare import compare

    if np.array_equal(entry.value, reference):
        return 0
    if entry.name.endswith(_STATE_WRITE):
        return None
    ins = [None if i < 0 or tensor_value(model, i) is not None else ref_values.get(i, own.get(i))
           for i in model.operator_inputs(entry.op_index)]
    try:
        y = model.run_operator(entry.op_index, ins)
    except (ValueError, TypeError):
        return None
    if isinstance(y, list):
        y = y[list(model.outputs_of(entry.op_index)).index(entry.tensor)]
    return compare(np.asarray(y).reshape(np.shape(reference)), reference).mismatches

# =============================================================================================
# the real interpreter, in a subprocess
# =============================================================================================
def interpreter_python() -> str:
    """The Python that runs the interpreter: ``DSPSIM_INTERPRETER_PYTHON``, else this one."""
    return worker_python() or sys.executable


def check_interpreter(kind: str, python: str | None = None) -> None:
    """Raise ValidateError (one line, the package to install) unless ``python`` can import ``kind``."""
    if kind not in INTERPRETERS:
        raise ValidateError(f"--against-interpreter must be one of {sorted(INTERPRETERS)}, got {kind!r}")
    python = python or interpreter_python()
    module, package = MODULE[Kind(kind)], PIP[Kind(kind)]
    try:
        r = subprocess.run([python, "-c", f"import {module}"], capture_output=True, timeout=300)
    except OSError as exc:
        raise ValidateError(f"--against-interpreter {kind}: cannot run {python} ({exc.strerror or exc})") from None
    if r.returncode != 0:
        raise ValidateError(f"--against-interpreter {kind} needs the {package} package: pip install {package}"
                            + ("" if python == sys.executable else f" (into {python}, DSPSIM_INTERPRETER_PYTHON)")
                            + "; the [engines] extra installs every interpreter")


def interpreter_tensors(model_bytes, kind, arrays, streaming, tensors, n_outputs, python=None, names=None) -> dict:
    """Run the real interpreter on a chunk in a subprocess (:func:`dspsim.interpreters.run_in`):
    ``{tensor index: (n[, frames], ...), "out<k>": ...}``, each stream on a fresh interpreter; ``names``: the
    tensors' names, by which an ONNX interpreter finds them (a tensor it did not keep is left out)."""
    if model_bytes is None:
        raise ValidateError("--against-interpreter needs a model file")
    try:
        res = run_in(python or interpreter_python(), Kind(kind), model_bytes, arrays, streaming=streaming,
                     n_outputs=n_outputs, tensors=names if names is not None else tensors, preserve_all_tensors=True)
    except WorkerFailed as exc:
        raise ValidateError(f"the {kind} interpreter failed (exit {exc.returncode})"
                            + (f": {exc.last_line[:300]}" if exc.last_line else "")) from None
    return {(tensors[int(k[1:])] if k.startswith("t") else k): v for k, v in res.items()}


# =============================================================================================
# the run: chunks here or on a Dask cluster, merged in order
# =============================================================================================
#: Scheduler address schemes whose traffic is encrypted (TLS, secure websockets) or stays in this process.
_PRIVATE_SCHEMES = ("tls", "wss", "inproc")
#: The files ``--tls DIR`` takes from DIR (the key may instead be appended to the certificate).
TLS_DIR_FILES = {"ca_file": "ca.pem", "cert": "cert.pem", "key": "key.pem"}


def _split_address(address: str):
    """(scheme, host) of a Dask address (``tcp://10.0.0.5:8786``, ``[::1]:8786``, ``host``; no scheme: tcp)."""
    scheme, sep, loc = address.partition("://")
    if not sep:
        scheme, loc = "tcp", address
    if loc.startswith("["):
        host = loc[1:loc.find("]")] if "]" in loc else loc[1:]
    else:
        host = loc.rsplit(":", 1)[0] if loc.count(":") == 1 else loc
    return scheme.lower(), host


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def plaintext_risk(address: str) -> str | None:
    """The warning for Dask scheduler ``address`` when its traffic is plaintext and may leave this host, else None
    (a loopback address, ``tls://`` / ``wss://`` / ``inproc://``)."""
    scheme, host = _split_address(address)
    if scheme in _PRIVATE_SCHEMES or _is_loopback(host):
        return None
    return (f"the Dask scheduler {address} is reached in plaintext: Dask ships tasks and results as pickles, which run "
            "code when loaded, so anyone who can reach it can run code on its workers (and anyone on the network "
            "path can read the model and data, or impersonate it to this machine); use a tls:// address with "
            "--tls-ca-file/--tls-cert/--tls-key or --tls DIR (Python: security=tls_security(...)), or reach it "
            "through an SSH tunnel on 127.0.0.1")


def tls_security(ca_file, cert, key=None):
    """A ``distributed.Security`` that requires TLS, with CA ``ca_file`` and this client's certificate ``cert`` and
    ``key`` (PEM files; ``key`` None: appended to ``cert``); ValidateError naming a file that cannot be read."""
    try:
        from distributed import Security
    except ImportError:
        raise ValidateError("--tls needs dask.distributed: pip install 'dask[distributed]' "
                            "(or dspsim-bitexact[dask])") from None
    for option, path in (("--tls-ca-file", ca_file), ("--tls-cert", cert), ("--tls-key", key)):
        if path is None:
            continue
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise ValidateError(f"{option} {path}: {exc.strerror or exc}") from None
    return Security(tls_ca_file=str(ca_file), tls_client_cert=str(cert), tls_client_key=None if key is None
                    else str(key), require_encryption=True)


def tls_dir_security(directory):
    """:func:`tls_security` of the files :data:`TLS_DIR_FILES` in ``directory`` (key.pem optional)."""
    d = Path(directory)
    holds = f"(it holds {', '.join(TLS_DIR_FILES.values())})"
    if not d.is_dir():
        raise ValidateError(f"--tls {directory}: not a directory {holds}")
    for role in ("ca_file", "cert"):
        if not (d / TLS_DIR_FILES[role]).is_file():
            raise ValidateError(f"--tls {directory}: no {TLS_DIR_FILES[role]} {holds}")
    key = d / TLS_DIR_FILES["key"]
    return tls_security(d / TLS_DIR_FILES["ca_file"], d / TLS_DIR_FILES["cert"], key if key.exists() else None)


def _no_tls_in_dask_config() -> bool:
    from distributed import Security

    return Security().get_connection_args("client")["ssl_context"] is None


def _client(address, security=None):
    try:
        from dask.distributed import Client
    except ImportError:
        raise ValidateError("--scheduler needs dask.distributed: pip install 'dask[distributed]' "
                            "(or dspsim-bitexact[dask])") from None
    scheme = _split_address(address)[0]
    if security is not None and scheme not in ("tls", "wss"):
        raise ValidateError(f"TLS certificates need a tls:// scheduler address, got {address}")
    if security is None and scheme == "tls" and _no_tls_in_dask_config():
        raise ValidateError(f"the scheduler {address} speaks TLS: give --tls DIR or --tls-ca-file/--tls-cert/"
                            "--tls-key (Python: security=tls_security(...))")
    risk = None if security is not None else plaintext_risk(address)
    if risk:
        warnings.warn(risk, PlaintextSchedulerWarning, stacklevel=4)
    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False, security=security)
    except (OSError, TimeoutError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValidateError(f"cannot reach the Dask scheduler at {address} ({msg[:200]})") from None


def _local(specs):
    for spec in specs:
        yield run_chunk(spec)


def _lost(spec: ChunkSpec, why: str) -> dict:
    """The result of a chunk whose samples never finished."""
    return {"start": spec.start, "n": spec.arrays[0].shape[0], "lost": why}


def _distributed(client, specs, in_flight):
    """run_chunk on the cluster, at most ``in_flight`` chunks submitted at a time (bounded memory). A chunk that
    killed every worker that ran it gives :func:`_lost` and the others go on."""
    from dask.distributed import KilledWorker, as_completed

    specs = iter(specs)
    pending = as_completed(loop=client.loop)
    futures = {}  # future -> its ChunkSpec

    def submit(spec):
        f = client.submit(run_chunk, spec, pure=False)
        futures[f] = spec
        pending.add(f)

    try:
        for spec in specs:
            submit(spec)
            if pending.count() >= in_flight:
                break
        for f in pending:
            try:
                res = f.result()
            except KilledWorker:
                res = _lost(futures[f], "every Dask worker that ran it died (KilledWorker)")
            yield res
            del futures[f]
            f.release()
            nxt = next(specs, None)
            if nxt is not None:
                submit(nxt)
    finally:
        client.cancel(list(futures))


def _merge_tallies(into, new):
    if into is None:
        return new
    for a, b in zip(into, new):
        a.merge(b)
    return into


def _row(t, extra=None) -> dict:
    r = {"count": t.count, "mismatches": t.mismatches, "max_abs_diff": t.max_abs_diff, "unit": t.unit,
         "samples_differing": len(t.samples), "samples": t.samples[:SAMPLE_LIMIT]}
    r.update(extra or {})
    return r


def _layers(model, tallies) -> list:
    """One row per operator, in model order: its tensors' tallies summed."""
    rows = []
    for op_index, op in model.operators:
        mine = [t for t in tallies or [] if t.op_index == op_index]
        samples = sorted({s for t in mine for s in t.samples})
        hist = {}
        for t in mine:
            for k, v in t.histogram.items():
                hist[k] = hist.get(k, 0) + v
        mx = 0
        for t in mine:
            if t.mismatches:
                mx = _max(mx, t.max_abs_diff)
        local = [t.local for t in mine if t.mismatches]
        known = bool(local) and None not in local
        rows.append({"op_index": op_index, "op": op, "count": sum(t.count for t in mine),
                     "mismatches": sum(t.mismatches for t in mine), "max_abs_diff": mx,
                     "unit": "/".join(sorted({t.unit for t in mine})) or "LSB",
                     "samples_differing": len(samples), "samples": samples[:SAMPLE_LIMIT], "histogram": hist,
                     "local_mismatches": sum(local) if known else None,
                     "locality": ("local" if sum(local) else "inherited") if known else None,
                     "tensors": [{"tensor": t.tensor, "name": t.name, "count": t.count, "mismatches": t.mismatches,
                                  "max_abs_diff": t.max_abs_diff, "unit": t.unit} for t in mine]})
    return rows


class _OutputFile:
    """``output_<k>.npy`` for ``n`` samples, written chunk by chunk with plain writes at their offsets (not
    memory-mapped: a full disk is an OSError (ENOSPC) here, where a mapped page would end the process with
    SIGBUS)."""

    def __init__(self, path: Path, n: int, like: np.ndarray):
        self.dtype, self.row = like.dtype, like.shape[1:]
        self.row_bytes = int(np.prod(self.row, dtype=np.int64)) * like.dtype.itemsize
        self.f = open(path, "wb")
        np.lib.format.write_array_header_1_0(self.f, {"descr": np.lib.format.dtype_to_descr(like.dtype),
                                                       "fortran_order": False, "shape": (n, *self.row)})
        self.start = self.f.tell()
        self.f.truncate(self.start + n * self.row_bytes)

    def __setitem__(self, rows: slice, value) -> None:
        a = np.ascontiguousarray(value, dtype=self.dtype)
        self.f.seek(self.start + rows.start * self.row_bytes)
        self.f.write(a.tobytes())

    def flush(self) -> None:
        if not self.f.closed:
            self.f.close()


def _output_files(directory, n, outputs) -> list:
    """``output_<k>.npy`` in ``directory`` for ``n`` samples shaped like a chunk's ``outputs``."""
    return [_OutputFile(Path(directory) / f"output_{k}.npy", n, o) for k, o in enumerate(outputs)]


def validate(source, data, *, engine=None, against=None, interpreter=None, scheduler=None, security=None, chunk=64,
             outputs_dir=None, progress=None, in_flight=None, float_model=None, float_executor="auto") -> dict:
    """Run data set ``data`` through ``source`` and (optionally) diff every layer.

    Parameters
    ----------
    source : ModelSource or path
    data : path of a ``.npy`` / ``.npz`` / directory (module docstring)
    engine : the dspsim engine run (a name, a device's .toml, a profile; None: the format's engine)
    against : another dspsim engine (or device profile) to diff against, layer by layer
    interpreter : a kind of :data:`INTERPRETERS` for the model's format: diff against the real interpreter instead
        (a subprocess)
    scheduler : a Dask scheduler address: run the chunks there (a plaintext ``tcp://`` address that is not
        loopback: a :class:`PlaintextSchedulerWarning`)
    security : a ``distributed.Security`` for a ``tls://`` scheduler (:func:`tls_security`), or None
    chunk : samples (streams) per chunk: the bound on memory and the unit of distribution
    outputs_dir : a directory where ``output_<k>.npy`` (every sample's outputs) is written
    progress : a :class:`dspsim.harness.progress.Progress` (``start(total, unit)``, ``update(n)``), or None
    float_model : the float model's path: add ``"float_error"``, the per-layer error of the dequantized integers
        against it (:mod:`dspsim.harness.quant_error`, a pass of its own over the data set, here)
    float_executor : what runs the float model (:data:`dspsim.harness.quant_error.EXECUTORS`)

    Returns the results dict (module docstring; ``"lost"`` names the chunks every worker died on). Raises
    ValidateError for bad input.
    """
    from dspsim.harness._interrupt import SwallowedInterrupts

    with SwallowedInterrupts() as guard:  # a Ctrl-C that numba's compile callback swallows, raised again
        d = _validate(source, data, engine, against, interpreter, scheduler, security, chunk, outputs_dir,
                      progress, in_flight, guard)
        if float_model is not None:
            d["float_error"] = _float_error(source, data, engine, chunk, float_model, float_executor)
        return d


def _float_error(source, data, engine, chunk, float_model, executor) -> dict:
    """The ``float_error`` entry: every chunk of the data set through the model and the float model."""
    from dspsim.harness.quant_error import LayerErrors

    try:
        source = source if isinstance(source, ModelSource) else ModelSource.from_path(source)
        with open(float_model, "rb") as f:
            float_data = f.read()
        model = source.load(engine)
        fe = LayerErrors(model, source.data, float_data, float_name=str(float_model), executor=executor,
                         traces=_traces)
        ds = DataSet(data, model)
        for s in range(0, ds.n, chunk):
            fe.add(ds.chunk(s, min(s + chunk, ds.n)))
    except OSError as exc:
        raise ValidateError(f"--float-model {float_model}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValidateError(str(exc).splitlines()[0]) from None
    return fe.result()


def _validate(source, data, engine, against, interpreter, scheduler, security, chunk, outputs_dir, progress,
              in_flight, guard):
    from dspsim.harness._interrupt import is_swallowed_interrupt

    if not isinstance(source, ModelSource):
        try:
            source = ModelSource.from_path(source)
        except OSError as exc:
            raise ValidateError(f"{source}: {exc.strerror or exc}") from None
    if against is not None and interpreter is not None:
        raise ValidateError("give --against or --against-interpreter, not both")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValidateError(f"--chunk must be an integer >= 1, got {chunk!r}")
    try:
        model = source.load(engine)
        if against is not None:
            source.load(against)
    except (OSError, ValueError, TypeError) as exc:
        raise ValidateError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    ds = DataSet(data, model)
    guard.check()
    python = None
    if interpreter is not None:
        if source.data is None:
            raise ValidateError("--against-interpreter needs a model file")
        if interpreter in INTERPRETERS and INTERPRETERS[interpreter] != source.format:
            raise ValidateError(f"--against-interpreter {interpreter} runs .{INTERPRETERS[interpreter]} models; "
                                f"this one is .{source.format}")
        python = interpreter_python()
        check_interpreter(interpreter, python)
    client = _client(scheduler, security) if scheduler else None
    if progress is not None:
        progress.start(ds.n, "streams" if ds.streaming else "samples")
    t0 = time.perf_counter()
    specs = (ChunkSpec(source, engine, against, interpreter, python, s, ds.chunk(s, min(s + chunk, ds.n)),
                       ds.streaming) for s in range(0, ds.n, chunk))
    mems = None
    results, lost = {}, []
    try:
        if client is not None:
            workers = sum(client.nthreads().values()) or 1
            stream = _distributed(client, specs, in_flight or 2 * workers)
        else:
            stream = _local(specs)
        for res in stream:
            if "lost" in res:
                lost.append({"start": res["start"], "stop": res["start"] + res["n"], "why": res["lost"]})
            elif outputs_dir is not None:
                mems = mems or _output_files(outputs_dir, ds.n, res["outputs"])
                for m, o in zip(mems, res["outputs"]):
                    m[res["start"]:res["start"] + res["n"]] = o
            if "lost" not in res:
                results[res["start"]] = (res["tallies"], res["output_tallies"])
            if progress is not None:
                progress.update(res["n"])
            guard.check()
    except RuntimeError as exc:
        if is_swallowed_interrupt(exc):
            raise KeyboardInterrupt("interrupted during a numba compile") from None
        raise
    finally:
        if client is not None:
            client.close()
        for m in mems or []:
            m.flush()
        del mems
    seconds = time.perf_counter() - t0
    tallies = out_tallies = None
    for start in sorted(results):
        tallies = _merge_tallies(tallies, results[start][0])
        out_tallies = _merge_tallies(out_tallies, results[start][1])
    compared = against is not None or interpreter is not None
    layers = _layers(model, tallies) if compared else []
    outputs = [_row(t, {"index": k, "name": t.name}) for k, t in enumerate(out_tallies or [])] if compared else []
    return {"schema": "dspsim.validate/1", "kind": "validate", "model": source.name, "engine": model.engine,
            "against": against if against else f"interpreter:{interpreter}" if interpreter else None,
            "streaming": ds.streaming, "samples": ds.n, "frames": ds.frames, "chunk": chunk,
            "scheduler": scheduler, "seconds": round(seconds, 3),
            "samples_per_second": round(ds.n / seconds, 3) if seconds > 0 else None,
            "passed": not lost and not any(r["mismatches"] for r in layers + outputs),
            "lost": sorted(lost, key=lambda r: r["start"]), "outputs": outputs, "layers": layers}


# =============================================================================================
# the report
# =============================================================================================
def render_md(d: dict) -> str:
    """``summary.md`` of a validate run."""
    from dspsim.harness.report import _fmt, _hist_text, _run_lines, _table

    lines = [f"# dspsim validate: {Path(d['model']).name}", ""] + (_run_lines(d["run"]) if "run" in d else [])
    unit = "streams" if d["streaming"] else "samples"
    frames = f" x {d['frames']:,} frames" if d["streaming"] else ""
    lines += [f"Engine `{d['engine']}`, {d['samples']:,} {unit}{frames}, chunks of {d['chunk']}"
              + (f" on the Dask cluster `{d['scheduler']}`" if d["scheduler"] else "")
              + f": {d['seconds']:.2f} s ({_fmt(d['samples_per_second'], 1)} {unit}/s).", ""]
    if d.get("lost"):
        lines += [f"**Incomplete**: {lost_line(d)}.", ""]
    if d["against"] is None:
        lines += ["No comparison asked (`--against` / `--against-interpreter`).", ""]
        return "\n".join(lines)
    bad = [r for r in d["layers"] if r["mismatches"]]
    lines += [f"Against `{d['against']}`: **{'PASS' if d['passed'] else 'FAIL'}**"
              + (f", first diverging operator {bad[0]['op_index']} ({bad[0]['op']})" if bad else
                 ": every layer bit-exact on every sample") + ".", ""]
    lines += ["## Outputs", ""]
    lines += _table(["output", "mismatches", "max |diff|", f"{unit} differing", f"first {unit}"],
                    [[f"{o['index']} `{o['name']}`", f"{o['mismatches']:,} / {o['count']:,}",
                      f"{o['max_abs_diff']} {o['unit']}", f"{o['samples_differing']:,}",
                      ", ".join(map(str, o["samples"][:10])) or "–"] for o in d["outputs"]])
    lines += ["## Layers", ""] + ([locality_line(d) + ".", ""] if bad else [])
    lines += _table(["op", "name", "mismatches", "max |diff|", f"{unit} differing", f"first {unit}",
                     "histogram (reference - dspsim: count)", "locality (differing alone)"],
                    [[r["op_index"], r["op"], f"{r['mismatches']:,} / {r['count']:,}",
                      f"{r['max_abs_diff']} {r['unit']}" if r["mismatches"] else "–", f"{r['samples_differing']:,}",
                      ", ".join(map(str, r["samples"][:10])) or "–", _hist_text(r["histogram"]) or "–",
                      f"{r['locality']} ({r['local_mismatches']:,})" if r["locality"] else "–"]
                     for r in d["layers"]])
    return "\n".join(lines)


def write_report(d: dict, tmp: Path, plots: bool = True) -> None:
    """``results.json``, ``summary.md`` and the per-layer plot into ``tmp`` (an :func:`atomic_dir`)."""
    from dspsim.harness.report import plot_layer_mismatches, write_json_file

    write_json_file(d, tmp / "results.json")
    md = render_md(d)
    if "float_error" in d:
        from dspsim.harness import quant_error

        md += "\n" + quant_error.render_md(d["float_error"])
        if plots and d["float_error"]["layers"]:
            quant_error.plot(d["float_error"], f"{Path(d['model']).name} ({d['engine']}) against "
                             f"{Path(d['float_error']['float_model']).name}, {d['samples']:,} samples",
                             tmp / "float_error.png")
            md += "\n![float_error.png](float_error.png)\n"
    if plots and d["layers"]:
        plot_layer_mismatches(d, tmp / "layer_mismatches.png")
        md += "\n## Plots\n\n![layer_mismatches.png](layer_mismatches.png)\n"
    (tmp / "summary.md").write_text(md, encoding="utf-8")


def add_arguments(p) -> None:
    """The ``dspsim validate`` options, on argparse parser ``p``."""
    from dspsim.harness.quant_error import EXECUTORS

    p.add_argument("model", help="the .tflite or .onnx file")
    p.add_argument("--data", required=True, metavar="X.npy|X.npz|DIR",
                   help="samples first (a streaming model: streams x frames x input); a .npz with one array per "
                        "input; or a directory of .npy files, one sample (stream) each")
    p.add_argument("--engine", help="the dspsim engine run: an engine name or a device's .toml file (default: litert "
                                    "for .tflite, onnxruntime for .onnx)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--against", metavar="E2", help="diff every layer against this dspsim engine (or device .toml)")
    g.add_argument("--against-interpreter", choices=sorted(INTERPRETERS),
                   help="diff every layer against the real interpreter (its package installed in "
                        "DSPSIM_INTERPRETER_PYTHON, default this Python)")
    p.add_argument("--chunk", type=int, default=64, metavar="N",
                   help="samples (streams) per chunk: bounds memory; the unit of distribution (default 64)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the chunks on this Dask distributed scheduler. Dask ships tasks as pickles, which run "
                        "code on the workers: a plaintext tcp:// address that is not loopback gets a warning; give "
                        "a tls:// address and the certificates below")
    tls = p.add_mutually_exclusive_group()
    tls.add_argument("--tls", metavar="DIR", help="TLS for a tls:// --scheduler: DIR holds ca.pem (the cluster's CA), "
                                                  "cert.pem (this client's certificate) and key.pem (its key, unless "
                                                  "appended to cert.pem)")
    tls.add_argument("--tls-ca-file", metavar="PEM", help="TLS: the cluster's CA certificate (with --tls-cert)")
    p.add_argument("--tls-cert", metavar="PEM", help="TLS: this client's certificate (with --tls-ca-file)")
    p.add_argument("--tls-key", metavar="PEM", help="TLS: this client's private key (default: appended to --tls-cert)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE (- for stdout)")
    p.add_argument("--out", help="report directory, with every sample's outputs (default: "
                                 "reports/validate-<UTC timestamp> unless --json)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plot")
    p.add_argument("--float-model", metavar="FLOAT", help="the float .tflite / .onnx model the quantized one was made "
                                                          "from: report every layer's error against it (SQNR, max, "
                                                          "mean and mean absolute error, per channel)")
    p.add_argument("--float-executor", choices=EXECUTORS, default="auto",
                   help="what runs the float model: dspsim's float kernels, the interpreter (LiteRT / ONNX Runtime "
                        "in DSPSIM_INTERPRETER_PYTHON), or auto: dspsim when it loads the model (default)")


def lost_line(d: dict) -> str:
    """One line naming the lost chunks of results ``d`` and what the results cover."""
    unit = "streams" if d["streaming"] else "samples"
    chunks = ", ".join(f"{r['start']}..{r['stop'] - 1}" for r in d["lost"])
    n_lost = sum(r["stop"] - r["start"] for r in d["lost"])
    return (f"{unit} {chunks} were lost: {d['lost'][0]['why']}; the results cover the {d['samples'] - n_lost:,} of "
            f"{d['samples']:,} {unit} that finished")


def security_from_args(args):
    """The ``distributed.Security`` of the ``--tls*`` options (None without them); ValidateError for a partial set."""
    if args.tls:
        if args.tls_cert or args.tls_key:
            raise ValidateError("give --tls DIR or --tls-ca-file/--tls-cert/--tls-key, not both")
        return tls_dir_security(args.tls)
    if not (args.tls_ca_file or args.tls_cert or args.tls_key):
        return None
    if not (args.tls_ca_file and args.tls_cert):
        raise ValidateError("TLS needs both --tls-ca-file and --tls-cert (and --tls-key unless the key is in the "
                            "certificate file)")
    return tls_security(args.tls_ca_file, args.tls_cert, args.tls_key)


def summary_lines(d: dict) -> list:
    """What ``dspsim validate`` prints when done."""
    unit = "streams" if d["streaming"] else "samples"
    lines = [f"{d['samples']:,} {unit}" + (f" x {d['frames']:,} frames" if d["streaming"] else "")
             + f" in {d['seconds']:.2f} s ({d['samples_per_second'] or 0:,.1f} {unit}/s), engine {d['engine']}"
             + (f", on {d['scheduler']}" if d["scheduler"] else "")]
    if "float_error" in d:
        from dspsim.harness.quant_error import summary_lines as float_lines

        lines += float_lines(d["float_error"])
    if d["against"] is None:
        return lines
    for r in d["layers"]:
        if r["mismatches"]:
            lines.append(f"op {r['op_index']} {r['op']}: {r['mismatches']:,} / {r['count']:,} differ, max |diff| "
                         f"{r['max_abs_diff']} {r['unit']}, {r['samples_differing']:,} {unit} (first "
                         f"{', '.join(map(str, r['samples'][:5]))})")
    n_out = sum(o["mismatches"] for o in d["outputs"])
    differ = sum(1 for r in d["layers"] if r["mismatches"])
    lines.append(f"{'PASS' if d['passed'] else 'FAIL'} against {d['against']}: "
                 + (locality_line(d) if differ else f"0 of {len(d['layers'])} operators differ")
                 + f", {n_out:,} output elements differ")
    return lines


def locality_line(d: dict) -> str:
    """The differing operators in one sentence: "1 operator differs locally (op 17 CONV_2D); 81 inherit its
    difference" (and how many could not be run alone: a stateful model's)."""
    bad = [r for r in d["layers"] if r["mismatches"]]
    local = [r for r in bad if r["locality"] == "local"]
    inherited = sum(1 for r in bad if r["locality"] == "inherited")
    unknown = len(bad) - len(local) - inherited
    names = ", ".join(f"op {r['op_index']} {r['op']}" for r in local[:8]) + (", …" if len(local) > 8 else "")
    parts = [f"{len(local)} of {len(d['layers'])} operator{'s' if len(d['layers']) != 1 else ''} "
             f"differ{'s' if len(local) == 1 else ''} locally" + (f" ({names})" if local else ""),
             f"{inherited} inherit{'s' if inherited == 1 else ''} {'its' if len(local) == 1 else 'their'} difference"]
    if unknown:
        parts.append(f"{unknown} not run alone (a stateful model)")
    return "; ".join(parts)

