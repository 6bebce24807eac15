"""Whole-model workloads: per-inference time of a .tflite model in dspsim beside the real interpreters.

For each model and each peer interpreter (:mod:`dspsim.bench.model_peers`: the TFLM interpreter,
LiteRT BUILTIN_REF, LiteRT default = XNNPACK) one row per thread count: dspsim loaded with the
engine that emulates that peer (``dspsim.tflite.load_model(path, engine=...)``) is timed at batch 1
(``Model.run``) and at batch N (``Model.run_batch``, time divided by N), the peer at batch 1 (its
interpreter has no batch), all by the one rule of :mod:`dspsim.bench.timing` (untimed warm-up:
numba compilation and the first-call caches are kept out). Every row is checked bit-exact: the
outputs of dspsim's timed calls (batch 1: sample 0; batch N: all N samples) against the peer's
outputs on the same inputs.

A state-carrying (streaming) model, e.g. microWakeWord, has N = the number of independent streams:
``run_batch`` advances each of the N streams by one frame, so its time / N is the cost of one
stream-frame; the peer's is one invoke. The check runs :data:`STREAM_CHECK_FRAMES` frames on every
stream from a reset (dspsim ``run_batch`` and ``run`` on stream 0; the peer, a fresh interpreter
per stream).

Sizes (:data:`MODEL_SIZES`): ``quick`` (the two small committed models, batch 4: CI) and ``full``
(plus person detection, speech commands and MobileNetV2 224 from ``../shared/models/tflite-micro``
beside the repository, skipped when it is absent, pymicro-wakeword's ``okay_nabu`` with 256
streams, and the microWakeWord v1 / v2 models of ``../shared/models/fresh`` (:data:`WAKEWORD_MODELS`) with 16).
"""
from __future__ import annotations

import importlib.resources
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from . import model_peers
from .timing import error_status, measure, set_threads

REPO = Path(__file__).resolve().parents[2]
GOLDEN_MODELS = REPO / "tests" / "golden" / "models"
SHARED_MODELS = REPO.parent / "shared" / "models" / "tflite-micro"
FRESH_MODELS = REPO.parent / "shared" / "models" / "fresh"
#: the streaming microWakeWord models of ``full`` timed at batch 1 against TFLM (issue 29: >= 1x per frame)
WAKEWORD_MODELS = ("mww_v1_okay_nabu", "mww_v2_okay_nabu", "mww_v2_vad")
MODEL_SIZES = ("quick", "full")
STREAM_CHECK_FRAMES = 3


def _wakeword_path() -> Path | None:
    try:
        return Path(str(importlib.resources.files("pymicro_wakeword") / "models" / "okay_nabu.tflite"))
    except ModuleNotFoundError:
        return None


@dataclass(frozen=True)
class ModelCase:
    """One model and its batch size (N samples, or N streams for a state-carrying model)."""

    name: str
    path: Path | None
    batch: int
    source: str  # where the file comes from, said when it is missing

    def missing(self) -> str:
        """Why the model cannot run here ("" when its file exists)."""
        return "" if self.path is not None and self.path.is_file() else f"model file not found ({self.source})"


def model_cases(size: str = "quick") -> list[ModelCase]:
    """The model cases of ``size`` (:data:`MODEL_SIZES`)."""
    if size not in MODEL_SIZES:
        raise ValueError(f"model_cases: size must be one of {MODEL_SIZES}, got {size!r}")
    n = 4 if size == "quick" else 16
    out = [ModelCase("cnn", GOLDEN_MODELS / "cnn.tflite", n, "tests/golden/models"),
           ModelCase("mobilenet", GOLDEN_MODELS / "mobilenet.tflite", n, "tests/golden/models")]
    if size == "full":
        shared = "../shared/models/tflite-micro beside the repository"
        out += [ModelCase("person_detect", SHARED_MODELS / "person_detect.tflite", 16, shared),
                ModelCase("micro_speech", SHARED_MODELS / "micro_speech_quantized.tflite", 16, shared),
                ModelCase("mobilenet_v2_224", SHARED_MODELS / "mobilenet_v2_quantized_1x3x224x224.tflite", 16, shared),
                ModelCase("okay_nabu (microWakeWord)", _wakeword_path(), 256, "pymicro_wakeword package")]
        out += [ModelCase(name, FRESH_MODELS / f"{name}.tflite", 16, "../shared/models/fresh beside the repository")
                for name in WAKEWORD_MODELS]
    return out


def model_inputs(model, batch: int, seed: int = 0) -> np.ndarray:
    """Random inputs for ``model``'s single input: ``(N, *shape)``, or ``(N, frames, *shape)`` when it
    carries state (N streams of :data:`STREAM_CHECK_FRAMES` frames). Integers over the dtype's whole
    range; float inputs (a model that starts with QUANTIZE) standard normal."""
    info = model.inputs[0]
    lead = (batch, STREAM_CHECK_FRAMES) if model.stateful else (batch,)
    rng = np.random.default_rng(seed)
    if np.issubdtype(info.dtype, np.integer):
        ii = np.iinfo(info.dtype)
        return rng.integers(ii.min, ii.max + 1, lead + info.shape, dtype=np.int64).astype(info.dtype)
    return rng.standard_normal(lead + info.shape).astype(info.dtype)


def dspsim_calls(model, x: np.ndarray):
    """(batch-1 call, batch-N call) of ``model`` on the inputs of :func:`model_inputs`; a streaming
    model's calls advance its state (``run``'s, and the N streams' of ``run_batch``) by one frame."""
    one, many = (x[0, 0], x[:, 0]) if model.stateful else (x[0], x)
    return (lambda: model.run([one])), (lambda: model.run_batch([many]))


def dspsim_check_outputs(model, x: np.ndarray, batch1, batch_n):
    """dspsim's outputs to diff against the peer's, as (batch-1 outputs, batch-N outputs), each a list
    over the model's outputs shaped like the peer's (:func:`dspsim.interpreters.run`).

    Stateless: the timed calls' results (``batch1``, ``batch_n``: the warm-up results). Streaming:
    every frame from a reset, stream 0 through ``run`` and all streams through ``run_batch``; the
    model is reset afterwards."""
    if not model.stateful:
        return [o[None] for o in batch1], list(batch_n)
    model.reset()
    ones = [model.run([x[0, f]]) for f in range(x.shape[1])]
    manys = [model.run_batch([x[:, f]]) for f in range(x.shape[1])]
    model.reset()
    n_out = len(model.outputs)
    return ([np.stack([o[k] for o in ones])[None] for k in range(n_out)],
            [np.stack([o[k] for o in manys], axis=1) for k in range(n_out)])


def count_mismatches(mine: list, theirs: list) -> tuple[int, int]:
    """(elements that differ, elements compared) between two lists of output arrays; ``theirs`` may
    hold more samples than ``mine`` (the batch-1 check compares sample 0)."""
    bad = total = 0
    for a, b in zip(mine, theirs, strict=True):
        b = b[:len(a)]
        if a.shape != b.shape:
            raise ValueError(f"output shape {a.shape} != the peer's {b.shape}")
        bad += int(np.count_nonzero(a.astype(np.int64) != b.astype(np.int64)))
        total += a.size
    return bad, total


@dataclass
class ModelRow:
    """One line of the model table: dspsim (``engine``) beside one ``peer`` on one model at ``threads``.

    Times are milliseconds per inference (per stream-frame for a streaming model): minimum wall time
    (the rule of :mod:`dspsim.bench.timing`) and, ``*_cpu_ms``, minimum process CPU time (the fair
    figure at 1 thread on a busy host; all threads summed at more); ``*_speedup`` is the peer's time
    over dspsim's (> 1: dspsim is faster), ``cpu_*_speedup`` the same in CPU time."""

    model: str
    input: str
    batch: int
    streaming: bool
    threads: int
    engine: str
    peer: str
    status: str = "ok"
    dspsim_ms: float | None = None
    dspsim_batch_ms: float | None = None
    peer_ms: float | None = None
    batch1_speedup: float | None = None
    batch_speedup: float | None = None
    dspsim_cpu_ms: float | None = None
    dspsim_batch_cpu_ms: float | None = None
    peer_cpu_ms: float | None = None
    cpu_batch1_speedup: float | None = None
    cpu_batch_speedup: float | None = None
    mismatches: int | None = None
    compared: int = 0
    bit_exact: bool | None = None
    runs: int = 0


def _ms(t):
    return None if t is None or t.min_seconds is None else t.min_seconds * 1e3


def _cpu_ms(t):
    return None if t is None or t.cpu_min_seconds is None else t.cpu_min_seconds * 1e3


def _ratio(a, b):
    return a / b if a and b else None


def model_rows(case: ModelCase, threads=(1,), repeats: int = 3, budget: float = 0.2, peers=model_peers.PEERS,
               seed: int = 0, log=None, run_peers: bool = True) -> list[ModelRow]:
    """The rows of ``case``: one per peer and thread count (see the module docstring); with
    ``run_peers`` False only dspsim is timed (the row names the peer it would be checked against)."""
    import dspsim.tflite

    rows = []
    skip = case.missing()
    for peer in peers:
        engine = peer  # a peer is named as the engine that emulates it
        base = dict(model=case.name, input="", batch=case.batch, streaming=False, engine=engine, peer=peer)
        model = None
        if not skip:
            try:
                model = dspsim.tflite.load_model(case.path, engine=engine)
            except ValueError as exc:
                status = f"skipped: dspsim refuses the model ({error_status(exc)[7:]})"
        if model is None:
            rows += [ModelRow(**base, threads=th, status=f"skipped: {skip}" if skip else status) for th in threads]
            continue
        x = model_inputs(model, case.batch, seed)
        base.update(input=f"{'x'.join(map(str, model.inputs[0].shape))} {model.inputs[0].dtype}",
                    streaming=model.stateful)
        reference = None
        for th in threads:
            row = ModelRow(**base, threads=th)
            rows.append(row)
            set_threads(th)
            try:
                if len(model.inputs) != 1:
                    raise ValueError(f"{len(model.inputs)} inputs; the model benchmark takes models with one")
                one, many = dspsim_calls(model, x)
                t1 = measure(one, repeats, budget)
                tn = measure(many, repeats, budget)
                row.dspsim_ms, row.dspsim_batch_ms, row.runs = _ms(t1), _ms(tn) / case.batch, t1.runs
                row.dspsim_cpu_ms, row.dspsim_batch_cpu_ms = _cpu_ms(t1), _cpu_ms(tn) / case.batch
                check = dspsim_check_outputs(model, x, t1.result, tn.result)
            except Exception as exc:  # dspsim failed on this model: record it, keep going
                row.status = error_status(exc)
                continue
            if not run_peers:
                row.status = "peer not run (--no-peers)"
                continue
            try:
                # the peer computes every check output once; at further thread counts it is only timed
                px = x if reference is None else (x[:1, :1] if model.stateful else x[:1])
                outs, tp = model_peers.peer_outputs_and_timing(peer, case.path, px, len(model.outputs),
                                                               model.stateful, th, repeats, budget)
                reference = outs if reference is None else reference
            except model_peers.PeerUnavailable as exc:
                row.status = f"peer skipped: {exc}"
                continue
            except Exception as exc:
                row.status = f"peer {error_status(exc)}"
                continue
            row.peer_ms = _ms(tp)
            row.batch1_speedup = _ratio(row.peer_ms, row.dspsim_ms)
            row.batch_speedup = _ratio(row.peer_ms, row.dspsim_batch_ms)
            row.peer_cpu_ms = _cpu_ms(tp)
            row.cpu_batch1_speedup = _ratio(row.peer_cpu_ms, row.dspsim_cpu_ms)
            row.cpu_batch_speedup = _ratio(row.peer_cpu_ms, row.dspsim_batch_cpu_ms)
            try:
                bad1, n1 = count_mismatches(check[0], reference)
                bad_n, n_n = count_mismatches(check[1], reference)
            except ValueError as exc:
                row.status = error_status(exc)
                continue
            row.mismatches, row.compared = bad1 + bad_n, n1 + n_n
            row.bit_exact = row.mismatches == 0
        if log:
            for row in rows[-len(threads):]:
                log(f"{row.model:28s} {row.engine:8s} vs {row.peer:15s} {row.threads}t "
                    f"dspsim {_fmt(row.dspsim_ms)} ms, batch {_fmt(row.dspsim_batch_ms)} ms/inf, "
                    f"peer {_fmt(row.peer_ms)} ms  {row.status}"
                    + (f"  mismatches={row.mismatches}/{row.compared}" if row.mismatches is not None else ""))
    return rows


def _fmt(v):
    return "-" if v is None else f"{v:.3f}"


def run_models(size: str = "quick", threads=(1,), repeats: int = 3, budget: float = 0.2, log=None,
               run_peers: bool = True, names=None) -> list[dict]:
    """Every row of the model cases of ``size`` (only those named in ``names``, when given), as dictionaries
    (the ``models`` of ``dspsim bench``'s JSON); numba's thread count is restored afterwards."""
    from .._jit import get_num_threads, set_num_threads

    chosen = model_cases(size)
    if names is not None:
        unknown = sorted(set(names) - {c.name for c in chosen})
        if unknown:
            raise ValueError(f"run_models: no model {unknown} in size {size!r}; its models: "
                             f"{', '.join(c.name for c in chosen)}")
        chosen = [c for c in chosen if c.name in names]
    before = get_num_threads()
    try:
        return [asdict(r) for case in chosen for r in model_rows(case, threads, repeats, budget, log=log,
                                                                 run_peers=run_peers)]
    finally:
        set_num_threads(before)
