"""A subgraph run as one compiled :class:`~.program.Program`, its resource variables kept in the program's arena.

Between compiled runs the :class:`~.state.State`'s resources hold views of the arena (one per variable): a frame
copies nothing in or out but the inputs and outputs. Every other way of running (the step loop for a trace, the
first frame before CALL_ONCE, another stream's state swapped in) first calls :meth:`StreamPlan.detach`, which
gives the state it was synchronised with copies of those views, so that no value a caller or another state holds
shares memory the next compiled run writes.
"""
from __future__ import annotations

import numpy as np


class LazyStreamPlan:
    """A :class:`StreamPlan` built by ``build()`` (None: the subgraph has none) when a second run asks for it: a
    model loaded to be traced, or run once, never pays for the lowering."""

    def __init__(self, build):
        self._build = build
        self._asked = 0
        self.plan = None  # the StreamPlan once built

    def run(self, state, inputs, n_tensors):
        """:meth:`StreamPlan.run`, or None (the step loop) before the plan is built and where there is none."""
        if self.plan is None:
            self._asked += 1
            if self._asked != 2:
                return None
            self.plan = self._build()
            if self.plan is None:
                return None
        return self.plan.run(state, inputs, n_tensors)

    def detach(self):
        """:meth:`StreamPlan.detach` once built."""
        if self.plan is not None:
            self.plan.detach()


class StreamPlan:
    """Subgraph ``inputs`` -> ``outputs`` (tensor indices) as ``program``, with resource ``variables`` (keys of
    ``State.resources``, each a region of the program by the same key) and the CALL_ONCE subgraphs ``calls``
    that must have run first."""

    def __init__(self, program, inputs, outputs, variables, calls):
        self.program = program
        self._inputs = [program.view(i) for i in inputs]
        self._outputs = [(i, program.view(i)) for i in outputs]
        self._variables = [(key, program.view(key)) for key in variables]
        self._calls = tuple(calls)
        self._synced = None  # the resources dict whose variables are this arena's views

    def detach(self):
        """Hand the state last synchronised with the arena copies of its variables (nothing to do when none is)."""
        held = self._synced
        if held is not None:
            for key, view in self._variables:
                if held.get(key) is view:
                    held[key] = view.copy()
            self._synced = None

    def run(self, state, inputs, n_tensors):
        """One run on ``inputs`` (checked values, in input order) with ``state``'s variables: the tensor value
        list (outputs set, the rest None), or None where the state is not ready (a CALL_ONCE not run yet, a
        variable unset or of another shape): the caller runs the step loop."""
        res = state.resources
        if self._synced is not res:
            self.detach()
        called = state.called
        for index in self._calls:
            if index not in called:
                return None
        for key, view in self._variables:
            cur = res.get(key)
            if cur is view:
                continue
            if type(cur) is not np.ndarray or cur.shape != view.shape or cur.dtype != view.dtype:
                return None
            view[...] = cur
        for view, x in zip(self._inputs, inputs):
            view[...] = x
        self.program.run()
        for key, view in self._variables:
            res[key] = view
        self._synced = res
        values = [None] * n_tensors
        for i, view in self._outputs:
            values[i] = view.copy()
        return values
