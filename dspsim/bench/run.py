"""Running the cases: one row per engine and case (:func:`run_engine`, :func:`run_case`), the whole
``dspsim bench`` run (:func:`run`) and its command line (:func:`main`)."""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from numbers import Integral
from pathlib import Path

import numpy as np

from . import cost_model, host, peers as peer_engines
from .frontend import CHUNKS as FRONTEND_SIZES, run_frontend
from .models import MODEL_SIZES, model_cases, run_models
from .summary import format_table, issue_targets, model_targets, scaling, targets
from .timing import error_status, measure, set_threads
from .workloads import OPS, SIZES, Case, Runner, cases, channel_cases, dspsim_runner, problem


@dataclass
class Row:
    """One line of the results table (one engine on one case)."""

    case: str
    op: str
    variant: str
    size: str
    shape: str
    unit: str
    work: int
    engine: str
    threads: int = 1
    status: str = "ok"
    seconds: float | None = None
    median_seconds: float | None = None
    runs: int = 0
    throughput: float | None = None       # G unit / s
    compared_with: str = ""
    mismatches: int | None = None
    bit_exact: bool | None = None
    dspsim_over_peer: float | None = None  # dspsim throughput / this engine's, at the same thread count
    note: str = ""


def _row(case: Case, runner: Runner, threads: int = 1) -> Row:
    return Row(case=case.name, op=case.op, variant=case.variant, size=case.size,
               shape="x".join(map(str, case.shape)), unit=case.unit, work=case.work, engine=runner.engine,
               threads=threads, compared_with=runner.compared_with, note=runner.note)


def parse_counts(value, what: str = "thread counts") -> tuple[int, ...]:
    """Counts, ascending, each once: ``"1,2"`` (``--threads``, ``--model-threads``, ``--channels``), an int,
    or a sequence of ints. Raises ValueError (naming ``what``) for anything but integers >= 1."""
    items = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else [value]
    counts = []
    for t in items:
        if isinstance(t, str) and t.strip().isascii() and t.strip().isdigit():
            t = int(t)
        if not isinstance(t, Integral) or isinstance(t, bool) or t < 1:
            raise ValueError(f"parse_counts: {what} must be comma-separated integers >= 1, got {value!r}")
        counts.append(int(t))
    if not counts:
        raise ValueError(f"parse_counts: {what} must be comma-separated integers >= 1, got {value!r}")
    return tuple(sorted(set(counts)))


def run_engine(case: Case, runner: Runner, reference=None, repeats: int = 5, budget: float = 0.5,
               benchmark=None, settle: float = 0.0, threads: int = 1):
    """Time one engine on ``case`` (:func:`dspsim.bench.timing.measure`) and diff its output.

    ``reference``: dspsim's integer output of the case, which a peer's output is diffed against
    unless the runner brings its own ``reference()`` or is timed for speed only (empty
    ``compared_with``). ``benchmark``: a pytest-benchmark fixture that does the repeated timing;
    ``settle``: seconds of pause after the warm-up call (see :func:`dspsim.bench.timing.measure`);
    ``threads``: the thread count the runner was built for (recorded in the row). Returns
    ``(row, output as integers)``; exceptions propagate (:func:`run_case` records them).
    """
    row = _row(case, runner, threads)
    if runner.skip:
        row.status = f"skipped: {runner.skip}"
        return row, None
    if runner.measure is not None:
        if benchmark is not None:
            raise ValueError(f"{runner.engine} is timed in a worker process, not by pytest-benchmark")
        t = runner.measure(repeats, budget)
    else:
        t = measure(runner.fn, repeats, budget, settle=settle, benchmark=benchmark)
    out = runner.to_numpy(t.result)
    row.seconds, row.median_seconds, row.runs = t.min_seconds, t.median_seconds, t.runs
    row.throughput = case.work / t.min_seconds / 1e9 if t.min_seconds else None
    if runner.engine != "dspsim" and runner.compared_with and (reference is not None or runner.reference):
        expected = np.asarray(reference if runner.reference is None else runner.reference())
        if np.shape(out) != np.shape(expected):
            row.status = f"error: output shape {np.shape(out)} != dspsim's {np.shape(expected)}"
        else:
            row.mismatches = int(np.count_nonzero(np.asarray(out, np.int64) != np.asarray(expected, np.int64)))
            row.bit_exact = row.mismatches == 0
    return row, out


THREAD_ROUNDS = 3
"""Rounds of a run at several thread counts: the counts alternate, each round with a third of the time budget,
and each row keeps its least time. On a shared host another process may hold a core through one count's whole
window; alternating gives every count several windows (one pass: FBGEMM 1.8x at 2 threads, dspsim 0.97x;
alternating: dspsim 1.8x on the same dense layer, docs/engines.md)."""


def run_case(case: Case, peers=peer_engines, threads=2, repeats: int = 5, budget: float = 0.5,
             seed: int = 0) -> list[Row]:
    """dspsim's row and one row per peer of ``case`` (``peers``: the peers module, or None), at each
    thread count of ``threads`` (an int or a sequence; :func:`parse_counts`): dspsim (numba) and every
    peer run at the same count, and ``dspsim_over_peer`` compares rows of the same count. Several counts
    run in :data:`THREAD_ROUNDS` alternating rounds (``repeats`` calls and ``budget / THREAD_ROUNDS``
    seconds each); a row keeps its least time, its runs summed and the most mismatches of a round."""
    p = problem(case, seed)
    counts = parse_counts(threads)
    rounds = THREAD_ROUNDS if len(counts) > 1 else 1
    best = {th: [] for th in counts}
    for _ in range(rounds):
        for th in counts:
            here = _pass(case, p, peers, th, repeats, budget / rounds)
            best[th] = here if not best[th] else [_least(a, b) for a, b in zip(best[th], here, strict=True)]
    rows = []
    for th in counts:
        here = best[th]
        if here[0].throughput:
            for row in here[1:]:
                if row.throughput:
                    row.dspsim_over_peer = here[0].throughput / row.throughput
        rows += here
    return rows


def _pass(case: Case, p: dict, peers, th: int, repeats: int, budget: float) -> list[Row]:
    """One timing of dspsim and each peer of ``case`` at ``th`` threads."""
    set_threads(th)
    try:
        runners = [dspsim_runner(case, p)]
    except Exception as exc:  # dspsim refused the case, or its API moved
        runners = [Runner("dspsim", skip=error_status(exc))]
    if peers is not None:
        runners += peers.runners(case, p, th)
    here, ref = [], None
    for r in runners:
        try:
            row, out = run_engine(case, r, ref, repeats, budget, threads=th)
        except Exception as exc:  # a refused case or a broken engine: record it, keep going
            row = _row(case, r, th)
            row.status = error_status(exc)
        else:
            if r.engine == "dspsim":
                ref = out
        here.append(row)
    return here


def _least(a: Row, b: Row) -> Row:
    """The row of the two rounds ``a``, ``b`` (one engine, one count) with the least time; runs summed, the
    most mismatches kept, a failed round's status kept."""
    if a.engine != b.engine:
        raise RuntimeError(f"run_case: the engines changed between rounds ({a.engine} != {b.engine})")
    keep = b if b.seconds is not None and (a.seconds is None or b.seconds < a.seconds) else a
    other = a if keep is b else b
    keep.runs += other.runs
    if other.mismatches is not None:
        keep.mismatches = max(keep.mismatches or 0, other.mismatches)
        keep.bit_exact = keep.mismatches == 0
    if other.status != "ok":
        keep.status = other.status
    return keep


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def run(sizes=("small",), threads=2, repeats: int = 5, budget: float = 0.5, ops=OPS,
        cost_size: str | None = "small", memory_size: str | None = "small", peers=True,
        log=None, models: str | None = None, model_threads=(1,), frontend: str | None = None,
        channels=(), model_names=None) -> dict:
    """Run the cases of ``sizes`` at each thread count of ``threads`` (an int or a sequence: dspsim and
    every peer at the same count), the cost model (at the largest count), the whole-model rows of ``models``
    (a size of :data:`dspsim.bench.models.MODEL_SIZES`, or None) at each of ``model_threads`` and the
    front-end rows of ``frontend`` (``quick``, ``full`` or None: :mod:`dspsim.bench.frontend`, at 1 thread
    and the largest count); ``channels``: also the conv / depthwise cases of
    :func:`dspsim.bench.workloads.channel_cases`; ``model_names``: only those models of ``models``. Returns the
    result dictionary (see ``--json``)."""
    import dspsim

    counts = parse_counts(threads)
    peer_mod = peer_engines if peers else None
    head = host.header(peer_mod.available() if peer_mod else "not run (--no-peers)")
    if log:
        log("\n".join(line for line in host.format_header(head) if line))
    rows = []
    for case in cases(sizes, ops) + channel_cases(channels, ops):
        for row in run_case(case, peer_mod, counts, repeats, budget):
            rows.append(asdict(row))
            if log:
                log(f"{row.case:42s} {row.threads}t {row.engine:17s} {_fmt(row.throughput, '9.3f')} G{row.unit}/s  "
                    f"{row.status}" + (f"  mismatches={row.mismatches}" if row.mismatches is not None else ""))
    th = set_threads(counts[-1])
    cost = {}
    if cost_size:
        cost["macs"] = cost_model.cost_macs(cost_size, repeats, budget)
        cost["channels"] = cost_model.cost_channels(cost_size, repeats, budget)
        cost["packing"] = cost_model.cost_packing(cost_size, repeats, budget)
        cost["accumulator"] = cost_model.cost_accumulator(cost_size, repeats, budget)
    if memory_size:
        cost["memory"] = cost_model.cost_memory(memory_size)
    model_rows = run_models(models, model_threads, min(repeats, 3), budget, log, peers, model_names) if models else []
    fe = run_frontend(frontend, tuple(sorted({1, th["numba"]})), repeats, budget, log, peers) if frontend else None
    set_threads(counts[-1])
    return dict(run=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), version=dspsim.__version__,
                threads={**th, "counts": list(counts)}, sizes=list(sizes), repeats=repeats, budget_seconds=budget,
                machine=f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
                        f"python {platform.python_version()}, numpy {np.__version__}",
                host=head, peers_available=head["peers"], rows=rows, targets=targets(rows),
                scaling=scaling(rows), cost_model=cost, models=model_rows, model_targets=model_targets(model_rows),
                issue_targets=issue_targets(rows, model_rows, head), frontend=fe)


def main(argv=None) -> int:
    """``dspsim bench [--quick] [--size S[,S]] [--json FILE] [--out DIR] [--threads N[,N]] [--channels C[,C]]
    [--no-peers] [--models quick|full|none] [--model-names M[,M]] [--model-threads N[,N]]
    [--frontend quick|full|none]``."""
    from ..harness.report import plot_bench

    ap = argparse.ArgumentParser(prog="dspsim bench", description="Throughput of dspsim beside peer engines.")
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (a few seconds)")
    ap.add_argument("--size", default=None,
                    help="comma-separated sizes among quick, small, medium, large (default small,medium)")
    ap.add_argument("--ops", default=None, help=f"comma-separated subset of {', '.join(OPS)}")
    ap.add_argument("--json", dest="json_path", default=None, help="also write the results as JSON here")
    ap.add_argument("--out", default=None, help="run directory for bench.md/json/png (default reports/bench-<time>)")
    ap.add_argument("--threads", default="2",
                    help="comma-separated thread counts: every case runs at each, dspsim and every peer at the same "
                         "count (default 2; e.g. 1,2 for the speed-up N/1)")
    ap.add_argument("--channels", default=None,
                    help="comma-separated channel counts: also conv2d / depthwise_conv2d on medium's 56x56 image "
                         "with that many channels (issue 29's targets name 64 and 128)")
    ap.add_argument("--no-peers", action="store_true", help="benchmark dspsim alone")
    ap.add_argument("--models", choices=MODEL_SIZES + ("none",), default=None,
                    help="whole-model rows: quick (the committed test models; default with --quick), full "
                         "(plus person detection, speech, MobileNetV2 224, microWakeWord; the default) or none")
    ap.add_argument("--frontend", choices=tuple(FRONTEND_SIZES) + ("none",), default=None,
                    help="audio front-end rows (microfrontend beside pymicro-features, CMSIS-DSP kernels beside "
                         "cmsisdsp): quick (8 chunks, 8 streams; default with --quick), full (50 chunks, 256 "
                         "streams; the default) or none")
    ap.add_argument("--model-names", default=None,
                    help="comma-separated model names: only these of --models (issue 29's: mobilenet_v2_224, "
                         "mww_v1_okay_nabu, mww_v2_okay_nabu, mww_v2_vad)")
    ap.add_argument("--model-threads", default=None,
                    help="comma-separated thread counts of the model rows (default 1 with --quick, else 1,2)")
    args = ap.parse_args(argv)
    if args.quick:
        sizes, repeats, budget, cost_size, mem_size = ["small"], 3, 0.05, "quick", "quick"
    else:
        sizes, repeats, budget, cost_size, mem_size = ["small", "medium"], 5, 0.5, "medium", "medium"
    if args.size:
        sizes = [s.strip() for s in args.size.split(",") if s.strip()]
        bad = [s for s in sizes if s not in SIZES]
        if bad:
            ap.error(f"unknown size(s) {bad}; expected among {list(SIZES)}")
        mem_size = max(sizes, key=SIZES.index)
        cost_size = "quick" if mem_size == "quick" else ("small" if mem_size == "small" else "medium")
    ops = OPS
    if args.ops:
        ops = tuple(o.strip() for o in args.ops.split(","))
        bad = [o for o in ops if o not in OPS]
        if bad:
            ap.error(f"unknown op(s) {bad}; expected among {list(OPS)}")
    models = args.models or ("quick" if args.quick else "full")
    frontend = args.frontend or ("quick" if args.quick else "full")
    try:
        threads = parse_counts(args.threads)
        model_threads = parse_counts(args.model_threads or ("1" if args.quick else "1,2"))
        channels = parse_counts(args.channels, "channel counts") if args.channels else ()
    except ValueError as exc:
        ap.error(f"--threads / --model-threads / --channels: {exc}")
    model_names = None
    if args.model_names:
        model_names = [n.strip() for n in args.model_names.split(",") if n.strip()]
        known = {c.name for c in model_cases(models)} if models != "none" else set()
        if not model_names or set(model_names) - known:
            ap.error(f"--model-names: unknown model(s) {sorted(set(model_names) - known)} for --models {models}; "
                     f"expected among {sorted(known)}")
    from ..harness.safe_io import atomic_dir, atomic_write_text, check_output_dir, check_output_file

    out_dir = Path(args.out) if args.out else Path("reports") / f"bench-{time.strftime('%Y%m%d-%H%M%S')}"
    try:  # before any timing: a bad --out / --json is a usage error (dspsim.harness.safe_io)
        check_output_dir(out_dir)
        if args.json_path:
            check_output_file(args.json_path)
    except ValueError as exc:
        ap.error(str(exc))
    result = run(sizes, threads, repeats, budget, ops, cost_size, mem_size, not args.no_peers,
                 log=lambda s: print(s, file=sys.stderr, flush=True),
                 models=None if models == "none" else models, model_threads=model_threads,
                 frontend=None if frontend == "none" else frontend, channels=channels, model_names=model_names)
    table = format_table(result)
    print(table)
    text = json.dumps(result, indent=1, default=float)
    with atomic_dir(out_dir) as tmp:
        (tmp / "bench.json").write_text(text)
        (tmp / "bench.md").write_text(table)
        try:
            gate = result["threads"]["counts"][0]  # one bar per engine and case: the fewest threads
            plot_bench({**result, "rows": [r for r in result["rows"] if r["threads"] == gate],
                        "threads": {**result["threads"], "numba": gate}}, tmp / "bench.png")
        except Exception as exc:  # a plot must never lose the figures
            print(f"dspsim bench: plot not written ({error_status(exc)})", file=sys.stderr)
    if args.json_path:
        atomic_write_text(args.json_path, text)
    print(f"dspsim bench: wrote {out_dir}/bench.md, bench.json, bench.png", file=sys.stderr)
    return 0
