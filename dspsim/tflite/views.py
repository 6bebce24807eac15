"""Which operators of a prepared model may hand on views instead of copies (chosen once, at load).

The data-movement ops that cut a window out of their input (STRIDED_SLICE, SLICE, SPLIT, SPLIT_V)
and ASSIGN_VARIABLE have two runs (:attr:`dspsim.graph.executor.Prepared.view`): the copying one,
as the interpreters run them, and one that hands on a view of its input (a slice) or keeps it (a
stored state). The values are the same; only which memory holds them differs. No operator writes
into its inputs and no state is written in place (ASSIGN_VARIABLE replaces the stored array), so a
view is safe wherever nothing outside the run loop can reach and change its memory, and fast wherever
its readers read strided arrays as fast as contiguous ones (:data:`VIEW_READERS`; the MAC kernels
want contiguous inputs and would copy a view more slowly than the slice does).

The streaming ring buffers of microWakeWord-style models are where it counts: per state,
``x = CONCATENATION(READ_VARIABLE(s), frame)``, ``ASSIGN_VARIABLE(s, STRIDED_SLICE(x)[1:])`` and
SPLIT_V / STRIDED_SLICE windows of ``x`` for the convolutions. TFLM copies the state four times per
frame (READ_VARIABLE's and ASSIGN_VARIABLE's ``memcpy``, ``micro_resource_variable.cc``; the
concatenation; the slice); with views the concatenation is the only copy: the slice is a view of
``x`` and the state keeps it, which the next frame's concatenation reads.
"""
from __future__ import annotations

#: operators whose run reads a strided (non-contiguous) input as fast as a contiguous one and writes
#: into none of its inputs: numpy slicing, ``np.concatenate``, ASSIGN_VARIABLE's copy. An output read
#: only by these may be a view of its producer's input (:attr:`dspsim.graph.executor.Prepared.view`).
VIEW_READERS = frozenset({"STRIDED_SLICE", "SLICE", "SPLIT", "SPLIT_V", "CONCATENATION", "ASSIGN_VARIABLE"})

#: operators whose output is always a new array (``np.concatenate``): a view of it shares memory with
#: nothing a caller holds.
_FRESH = frozenset({"CONCATENATION"})
#: the data input of each operator whose view run gives windows of it
_WINDOW_INPUT = {"STRIDED_SLICE": 0, "SLICE": 0, "SPLIT_V": 0, "SPLIT": 1}


def choose_runs(mdef, plans):
    """The ``run`` of every operator of every subgraph (``plans[k]`` = ``[(op, Prepared), ...]`` of
    subgraph ``k``): its view run where :func:`_window_view_ok` or :func:`_state_view_ok` allows it,
    else its copying run."""
    viewable = _variables_read_as_views(mdef)
    runs = []
    for sg, plan in zip(mdef.subgraphs, plans):
        readers = {}
        for op, _ in plan:
            for i in op.inputs:
                readers.setdefault(i, []).append(op.name)
        chosen = {}
        for op, prep in plan:
            if prep.view is not None and op.name in _WINDOW_INPUT and _window_view_ok(sg, op, readers):
                chosen[op.index] = prep.view
        producer = {i: op for op, _ in plan for i in op.outputs}
        handles = _handle_keys(sg)
        for op, prep in plan:
            if prep.view is not None and op.name == "ASSIGN_VARIABLE" and handles.get(op.inputs[0]) in viewable \
                    and _fresh_window(sg, op.inputs[1], producer, chosen):
                chosen[op.index] = prep.view
        runs.append([chosen.get(op.index, prep.run) for op, prep in plan])
    return runs


def _window_view_ok(sg, op, readers):
    """A slice may give views when each output is read, and only read, by :data:`VIEW_READERS` of the
    subgraph, and is no subgraph output and no variable tensor (what a caller receives is a copy)."""
    for i in op.outputs:
        names = readers.get(i)
        if not names or i in sg.outputs or sg.tensors[i].is_variable or any(n not in VIEW_READERS for n in names):
            return False
    return True


def _fresh_window(sg, i, producer, chosen):
    """Whether tensor ``i`` is a view chain (slices running their view run) on a :data:`_FRESH` output of
    this run, no tensor of the chain a subgraph output: memory only the run loop holds."""
    while True:
        op = producer.get(i)
        if op is None or i in sg.outputs or sg.tensors[i].is_variable:
            return False  # a model input, a constant, a variable tensor, what a caller receives
        if op.name in _FRESH:
            return True
        if chosen.get(op.index) is None:
            return False  # a copy (fine too, but then ASSIGN_VARIABLE's own copy is what keeps it apart)
        i = op.inputs[_WINDOW_INPUT[op.name]]


def _handle_keys(sg):
    """Resource tensor index -> (container, shared_name) of each VAR_HANDLE of subgraph ``sg``."""
    return {op.outputs[0]: (op.options.get("container", ""), op.options.get("shared_name", ""))
            for op in sg.operators if op.name == "VAR_HANDLE" and len(op.outputs) == 1}


def _variables_read_as_views(mdef):
    """The resource variables that may hold a view: every READ_VARIABLE of them, in every subgraph,
    has an output read only by :data:`VIEW_READERS` and no subgraph output. Empty when a READ_VARIABLE's
    handle is not a VAR_HANDLE of its subgraph (which variable it reads is then unknown here)."""
    ok, bad = set(), set()
    for sg in mdef.subgraphs:
        handles = _handle_keys(sg)
        for op in sg.operators:
            if op.name != "READ_VARIABLE" or len(op.inputs) != 1 or len(op.outputs) != 1:
                continue
            key = handles.get(op.inputs[0])
            if key is None:
                return set()
            out = op.outputs[0]
            names = [o.name for o in sg.operators if out in o.inputs]
            good = out not in sg.outputs and all(n in VIEW_READERS for n in names)
            (ok if good else bad).add(key)
    return ok - bad
