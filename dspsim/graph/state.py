"""What a model keeps between invocations: resource variables, CALL_ONCE initialisations, variable tensors."""
from __future__ import annotations

import numpy as np


class State:
    """What a model keeps between invocations: resource variables (VAR_HANDLE / ASSIGN_VARIABLE /
    READ_VARIABLE, by (container, shared_name)), which CALL_ONCE initialisations already ran, and the
    values of variable tensors. Writes are logged so that a trace can show them."""

    def __init__(self):
        self.resources = {}
        self.called = set()
        self.variables = {}  # (subgraph index, tensor index) -> value
        self._writes = []

    def reset(self):
        self.resources.clear()
        self.called.clear()
        self.variables.clear()
        self._writes.clear()

    def swap(self, other: "State") -> None:
        """Exchange contents with ``other`` (one stream's state in, the previous one out): the operators
        keep this object, so a model runs several independent streams by swapping their states in."""
        for name in ("resources", "called", "variables", "_writes"):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, theirs)
            setattr(other, name, mine)

    def assign(self, key, value, tensor):
        """Set resource ``key`` to ``value`` (written from tensor index ``tensor``), logging the write."""
        self.resources[key] = value
        self._writes.append((tensor, "/".join(k for k in key if k), value))

    def write_variable(self, sg, tensor, value):
        """Set variable tensor ``tensor`` of subgraph ``sg`` (its value in the next invocation)."""
        self.variables[(sg.index, tensor)] = value
        self._writes.append((tensor, sg.tensors[tensor].name, value))

    def variables_of(self, sg):
        """Current values of ``sg``'s variable tensors: the last written, else the initial value: the
        tensor's buffer, or what LiteRT's ``ResetVariableTensor`` and TFLM's ``ResetTensorData`` write,
        ``memset(data, value, bytes)`` with ``value`` the zero point for an int8 tensor (so only its
        low byte counts) and 0 for every other type."""
        out = {}
        for t in variable_tensors(sg):
            v = self.variables.get((sg.index, t.index))
            out[t.index] = v if v is not None else initial_value(t)
        return out

    def has_writes(self) -> bool:
        return bool(self._writes)

    def drain_writes(self):
        out, self._writes = self._writes, []
        return out


def variable_tensors(sg):
    """The variable tensors of subgraph ``sg`` (state carried between invocations) that an operator reads or writes
    or the subgraph outputs, found once: one that nothing uses is never given a value (a file may declare it of
    any size)."""
    found = getattr(sg, "_variable_tensors", None)
    if found is None:
        used = {i for op in sg.operators for i in (*op.inputs, *op.outputs)} | set(sg.outputs)
        found = [t for t in sg.tensors if t.is_variable and t.dtype is not None and t.index in used]
        sg._variable_tensors = found
    return found


def initial_value(t):
    """Variable tensor ``t`` after a reset: its buffer where it has one, else ``memset(data, value, bytes)`` with
    value = the zero point for int8 (its low byte), 0 for every other type."""
    if t.data is not None:
        return t.data
    value = int(t.zero_point[0]) if t.dtype == np.int8 and t.zero_point.size else 0
    return np.full(t.shape, value & 0xFF, np.uint8).view(np.int8) if value else np.zeros(t.shape, t.dtype)
