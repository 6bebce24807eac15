"""Per-operator overhead of a loaded dspsim.tflite Model: each prepared operator's ``run`` timed alone.

Not a test and not a pytest-benchmark: a script for issue 13's "<= 15 us per op" target. Each model
is loaded, run once on random inputs to get every tensor's value, then each operator's ``prep.run`` is
called on its traced inputs: least CPU time (``time.thread_time_ns``) of ``--repeat`` calls. Run it
at 1 thread::

    NUMBA_NUM_THREADS=1 python benches/op_overhead.py [--json out.json] [--ops ADD,MUL] [MODEL ...]

Without MODEL it takes tests/golden/models/*.tflite, /work/shared/models/tflite-micro/*.tflite and
pymicro-wakeword's models (where present). The summary is one row per operator type: instances,
least and median over the instances of each instance's least time, in microseconds.
"""
from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GLOBS = (str(ROOT / "tests/golden/models/*.tflite"), "/work/shared/models/tflite-micro/*.tflite",
                 "/work/goldvenv/lib/python3.11/site-packages/pymicro_wakeword/models/*.tflite")


def _random_input(info, rng):
    if np.issubdtype(info.dtype, np.floating):
        return rng.standard_normal(info.shape).astype(info.dtype)
    if info.dtype == np.bool_:
        return rng.integers(0, 2, info.shape).astype(bool)
    i = np.iinfo(info.dtype)
    return rng.integers(max(i.min, -128), min(i.max, 127) + 1, info.shape).astype(info.dtype)


def time_model(path, engine, repeat, ops, max_per_type):
    from dspsim.tflite import load_model

    try:
        m = load_model(path, engine=engine)
    except Exception as exc:  # refused or unsupported: not this script's business
        return [], f"{Path(path).name}: not loaded ({str(exc)[:80]})"
    rng = np.random.default_rng(0)
    try:
        values = {i: m.tensor_value(i) for i in range(m.num_tensors) if m.tensor_value(i) is not None}
        values.update((e.tensor, e.value) for e in m.trace([_random_input(i, rng) for i in m.inputs]))
    except Exception as exc:
        return [], f"{Path(path).name}: run failed ({str(exc)[:80]})"
    rows, seen = [], {}
    for op, prep in m._plan:
        if any(i >= 0 and i not in values for i in op.inputs):  # a value the trace does not show
            continue
        args = [values[i] if i >= 0 else None for i in op.inputs]
        try:
            y = prep.run(args)  # warm-up (jit compile, caches); gives the values the trace leaves out (resources)
        except (ValueError, TypeError):  # refused on these (random) inputs: not timed
            continue
        for i, v in zip(op.outputs, y if isinstance(y, (tuple, list)) else (y,)):
            values.setdefault(i, v)
        if ops and op.name not in ops or seen.get(op.name, 0) >= max_per_type:
            continue
        seen[op.name] = seen.get(op.name, 0) + 1
        best = None
        for _ in range(repeat):
            t0 = time.thread_time_ns()
            prep.run(args)
            dt = time.thread_time_ns() - t0
            best = dt if best is None or dt < best else best
        m.state.drain_writes()
        out = values.get(op.outputs[0]) if op.outputs else None
        rows.append(dict(model=Path(path).name, engine=engine, op_index=op.index, op=op.name, us=best / 1e3,
                         out_size=int(np.size(out)) if isinstance(out, np.ndarray) else 0))
    return rows, None


def summarize(rows):
    by = {}
    for r in rows:
        by.setdefault(r["op"], []).append(r["us"])
    return {op: dict(n=len(v), min=min(v), median=statistics.median(v), max=max(v)) for op, v in sorted(by.items())}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*")
    p.add_argument("--engine", default="litert", help="comma-separated engines (default litert)")
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--ops", default="", help="comma-separated builtin names to time (default all)")
    p.add_argument("--max-per-type", type=int, default=4, help="instances per op type per model")
    p.add_argument("--json", help="write the rows and the summary here")
    a = p.parse_args(argv)
    paths = a.models or sorted(f for g in DEFAULT_GLOBS for f in glob.glob(g))
    ops = set(filter(None, a.ops.split(",")))
    rows = []
    for path in paths:
        for engine in a.engine.split(","):
            r, note = time_model(path, engine, a.repeat, ops, a.max_per_type)
            rows += r
            if note:
                print(note, file=sys.stderr)
    summary = summarize(rows)
    print(f"{'op':24s} {'n':>4s} {'min us':>9s} {'median us':>10s} {'max us':>9s}")
    for op, s in summary.items():
        print(f"{op:24s} {s['n']:4d} {s['min']:9.1f} {s['median']:10.1f} {s['max']:9.1f}")
    if a.json:
        Path(a.json).write_text(json.dumps(dict(rows=rows, summary=summary), indent=1))


if __name__ == "__main__":
    main()
