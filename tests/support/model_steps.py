"""A model's run with every tensor its fused steps compute recorded: what the stream-view and pad-fusion tests
compare against the trace."""
from __future__ import annotations

import dataclasses

import numpy as np

import dspsim


def recorded_run(model, inputs, batch=None):
    """``run`` (or ``run_batch``, on one thread: one part, one executor of size ``batch``) with every tensor its
    steps compute recorded (copies): (outputs, values)."""
    ex = model._exec if batch is None else model._executors(batch, 1)[0]  # the run loop's steps: no public hook
    seen, steps = {}, ex.steps[0]

    def recording(step):
        def run(xs):
            y = step.run(xs)
            for i, v in zip(step.outputs, y if isinstance(y, (tuple, list)) else (y,)):
                if isinstance(v, np.ndarray):
                    seen[i] = v.copy()
            return y
        return dataclasses.replace(step, run=run)

    ex.steps[0] = [recording(s) for s in steps]
    threads = dspsim.get_num_threads()
    dspsim.set_num_threads(1)
    try:
        outs = model.run(inputs) if batch is None else model.run_batch(inputs)
    finally:
        ex.steps[0] = steps
        dspsim.set_num_threads(threads)
    return outs, seen
