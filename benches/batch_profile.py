"""Where a ``Model.run_batch`` call spends its time: each prepared step timed inside the run loop.

Not a test and not a pytest-benchmark: a script for issue 13's streaming figures. Each model runs
``run_batch`` on N streams (random int8 frames) ``--repeat`` times untouched (the batch time: least
and median CPU time, ``time.process_time_ns``), then as many times with every step of the run loop
wrapped in a timer (the steps as ``run`` executes them: fused operators and view-giving slices
included). Prints per model the batch time, the sum of the steps' least times (the rest is the run
loop's own Python and ``run_batch``'s checks), one row per operator type (sum of the least time of
each instance) and, with ``-v``, every step. Run it at 1 thread::

    NUMBA_NUM_THREADS=1 python benches/batch_profile.py [--streams 256] [--repeat 300] [-v] [MODEL ...]

Without MODEL it takes pymicro-wakeword's models (where installed).

With ``--peer-python PY`` (a Python that has ai_edge_litert; engine ``xnnpack``, ``litert-optimized`` or
``litert``) the LiteRT build that the engine emulates times each operator alone at the same batch
(``benches/litert_op_times.py``, run there), and every row and step also shows the peer's time and
peer / dspsim. The peer's sums take the operators that are dspsim steps: a PAD that the engine fuses into the
next convolution (as XNNPACK does) is in neither.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import glob
import importlib.util
import json
import os
import subprocess
import sys
import time

import numpy as np


def _wakeword_models():
    spec = importlib.util.find_spec("pymicro_wakeword")
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "models", "*.tflite")))


def profile(path, engine, n, repeat):
    """(least batch µs, median batch µs, {(op index, op name): least µs}) of ``run_batch`` on ``n`` streams."""
    from dspsim.tflite import load_model

    m = load_model(path, engine=engine)
    info = m.inputs[0]
    frames = np.random.default_rng(0).integers(-128, 128, (repeat + 1, n) + info.shape).astype(info.dtype)
    m.run_batch(frames[0])  # prepares the batch-N executor, compiles what is not cached
    ex = m._executors(n, 1)[0]  # the run loop's steps: no public hook
    times = collections.defaultdict(list)

    def timed(step):
        run, key = step.run, (step.op.index, step.op.name)

        def run_timed(inputs):
            t0 = time.process_time_ns()
            y = run(inputs)
            times[key].append(time.process_time_ns() - t0)
            return y
        return dataclasses.replace(step, run=run_timed)

    batch = []
    for x in frames[1:]:
        t0 = time.process_time_ns()
        m.run_batch(x)
        batch.append(time.process_time_ns() - t0)
    steps = ex.steps[0]
    ex.steps[0] = [timed(s) for s in steps]
    try:
        for x in frames[1:]:
            m.run_batch(x)
    finally:
        ex.steps[0] = steps
    return min(batch) / 1e3, float(np.median(batch)) / 1e3, {k: min(v) / 1e3 for k, v in times.items()}


PEER_RESOLVERS = {"xnnpack": "default", "litert-optimized": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
                  "litert": "BUILTIN_REF"}
"""The LiteRT op resolver each engine emulates (``benches/litert_op_times.py --resolver``)."""


def peer_times(python, path, engine, batch):
    """{op index: µs} of LiteRT alone per operator (:data:`PEER_RESOLVERS` [engine]) at ``batch``, run in ``python``."""
    if engine not in PEER_RESOLVERS:
        raise SystemExit(f"batch_profile: --peer-python needs engine one of {sorted(PEER_RESOLVERS)}, got {engine!r}")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "litert_op_times.py")
    done = subprocess.run([python, script, path, "--batch", str(batch), "--resolver", PEER_RESOLVERS[engine]],
                          capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {d["index"]: d["us"] for d in lines if "us" in d}


def _row(name, us, peer):
    """One printed row: dspsim's µs and, where the peer has a time, its µs and peer / dspsim."""
    tail = f"   peer {peer:8.1f} µs  x{peer / us:5.2f}" if peer is not None and us > 0 else ""
    return f"{name:24s} {us:8.1f} µs{tail}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--engine", default="tflm")
    ap.add_argument("--streams", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument("--peer-python", help="a Python with ai_edge_litert: LiteRT's time per operator beside dspsim's")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    for path in a.models or _wakeword_models():
        least, median, per_step = profile(path, a.engine, a.streams, a.repeat)
        peer = peer_times(a.peer_python, path, a.engine, a.streams) if a.peer_python else {}
        by_op = collections.defaultdict(float)
        peer_by_op = collections.defaultdict(float)
        for (index, name), us in per_step.items():
            by_op[name] += us
            if index in peer:
                peer_by_op[name] += peer[index]
        print(f"{os.path.basename(path)} ({a.engine}, {a.streams} streams): batch least {least:.0f} µs, median "
              f"{median:.0f} µs = {least / a.streams:.2f} µs per stream-frame; steps {sum(by_op.values()):.0f} µs"
              + (f"; peer's operators {sum(peer_by_op.values()):.0f} µs" if peer else ""))
        for name, us in sorted(by_op.items(), key=lambda kv: -kv[1]):
            print("    " + _row(name, us, peer_by_op.get(name)))
        if a.verbose:
            for (index, name), us in sorted(per_step.items()):
                print(f"        {index:4d} " + _row(name, us, peer.get(index)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
