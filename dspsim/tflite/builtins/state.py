"""Streaming state and subgraph calls: CALL_ONCE, VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE.

TFLite keeps resource variables across invocations: VAR_HANDLE names one by ``(container,
shared_name)``, ASSIGN_VARIABLE stores a tensor in it, READ_VARIABLE reads it back, and CALL_ONCE runs
an initialisation subgraph (which typically assigns zeros) on the first invocation only. The values
live in the model's :class:`~dspsim.tflite.prepare.State`; ``Model.reset()`` clears them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...kernels._plan import contiguous_copy
from ..prepare import Prepared, builtin, check_dtype, refuse


@dataclass(frozen=True)
class ResourceHandle:
    """The value of a RESOURCE tensor: the variable's key."""

    container: str
    shared_name: str

    @property
    def key(self):
        return (self.container, self.shared_name)


@builtin("CALL_ONCE")
def prepare_call_once(op, g):
    if op.inputs or op.outputs:
        refuse(op, "expects no inputs and no outputs")
    index = op.options.get("init_subgraph_index", 0)
    if not 0 < index < len(g.mdef.subgraphs) or index == g.subgraph.index:
        refuse(op, f"init_subgraph_index {index} is not another subgraph of the model "
                   f"({len(g.mdef.subgraphs)} subgraphs)")
    if g.mdef.subgraphs[index].inputs:
        refuse(op, f"the initialisation subgraph {index} must take no inputs")

    def run(inputs):
        if index not in g.state.called:
            g.state.called.add(index)
            g.call(index)

    return Prepared(run, {"init_subgraph_index": index})


@builtin("VAR_HANDLE")
def prepare_var_handle(op, g):
    if op.inputs or len(op.outputs) != 1 or g.tensor(op.outputs[0]).type_name != "RESOURCE":
        refuse(op, "expects no inputs and one RESOURCE output")
    handle = ResourceHandle(op.options.get("container", ""), op.options.get("shared_name", ""))
    return Prepared(lambda inputs: handle, {"container": handle.container, "shared_name": handle.shared_name})


def _handle(op, value):
    if not isinstance(value, ResourceHandle):
        raise ValueError(f"Model.run: operator {op.index} ({op.name}): input 0 is not a resource handle")
    return value


@builtin("READ_VARIABLE")
def prepare_read_variable(op, g):
    if len(op.inputs) != 1 or len(op.outputs) != 1 or min(op.inputs) < 0:
        refuse(op, "expects one resource input and one output")
    t_out = g.tensor(op.outputs[0])
    check_dtype(op, t_out, (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32),
                            np.dtype(np.float32)), "output")

    dtype, shape = t_out.dtype, tuple(t_out.shape)

    def run(inputs):
        key = _handle(op, inputs[0]).key
        if key not in g.state.resources:
            raise ValueError(f"Model.run: operator {op.index} ({op.name}): variable {'/'.join(key)!r} is read "
                             "before any ASSIGN_VARIABLE")
        v = g.state.resources[key]
        if v.dtype != dtype or v.shape != shape:
            raise ValueError(f"Model.run: operator {op.index} ({op.name}): variable {'/'.join(key)!r} holds "
                             f"{v.dtype} {v.shape}, the output is {t_out.dtype} {tuple(t_out.shape)}")
        return v

    return Prepared(run)


@builtin("ASSIGN_VARIABLE")
def prepare_assign_variable(op, g):
    if len(op.inputs) != 2 or op.outputs or min(op.inputs) < 0:
        refuse(op, "expects a resource and a value input, and no output")
    value_tensor = op.inputs[1]
    if g.tensor(value_tensor).dtype is None:
        refuse(op, f"the value tensor {value_tensor} has unsupported type {g.tensor(value_tensor).type_name}")

    def run(inputs):
        g.state.assign(_handle(op, inputs[0]).key, contiguous_copy(np.asarray(inputs[1])), value_tensor)

    def keep(inputs):  # the value itself: a view only the run loop holds (dspsim.tflite.views)
        g.state.assign(_handle(op, inputs[0]).key, inputs[1], value_tensor)

    return Prepared(run, view=keep)
