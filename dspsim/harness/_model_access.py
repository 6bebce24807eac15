"""The two Model reads that diagnose / export-model need and :class:`dspsim.tflite.Model` does not
expose publicly: how many tensors the subgraph has, and a constant tensor's data (weights, biases).

The only place in the harness that touches ``Model``'s private attributes; it uses
``Model.num_tensors`` / ``Model.tensor_value`` instead as soon as the model has them.
"""
from __future__ import annotations

import numpy as np


def num_tensors(model) -> int:
    """Number of tensors in the model's subgraph (tensor indices are 0 .. n-1)."""
    if hasattr(model, "num_tensors"):
        return int(model.num_tensors)
    return len(model._mdef.tensors)


def tensor_value(model, index: int):
    """The constant data of tensor ``index`` (weights, biases, shapes), or None for an activation."""
    if hasattr(model, "tensor_value"):
        return model.tensor_value(index)
    data = model._mdef.tensors[index].data
    return None if data is None else np.asarray(data)


def constant_tensors(model) -> list:
    """Indices of every tensor that holds constant data, in index order."""
    return [i for i in range(num_tensors(model)) if tensor_value(model, i) is not None]
