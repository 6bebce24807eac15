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
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import glob
import importlib.util
import os
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--engine", default="tflm")
    ap.add_argument("--streams", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    for path in a.models or _wakeword_models():
        least, median, per_step = profile(path, a.engine, a.streams, a.repeat)
        by_op = collections.defaultdict(float)
        for (_, name), us in per_step.items():
            by_op[name] += us
        print(f"{os.path.basename(path)} ({a.engine}, {a.streams} streams): batch least {least:.0f} µs, median "
              f"{median:.0f} µs = {least / a.streams:.2f} µs per stream-frame; steps {sum(by_op.values()):.0f} µs")
        for name, us in sorted(by_op.items(), key=lambda kv: -kv[1]):
            print(f"    {name:24s} {us:8.1f} µs")
        if a.verbose:
            for (index, name), us in sorted(per_step.items()):
                print(f"        {index:4d} {name:24s} {us:7.1f} µs")


if __name__ == "__main__":
    main()
