"""The graph every front end produces: subgraphs of tensors and operators in execution order.

A model format is only a way to reach these: :mod:`dspsim.tflite` decodes a flatbuffer into them,
:mod:`dspsim.onnx` a protobuf. The executor (:mod:`.executor`) runs their prepared operators; nothing here
knows a file format.

* :class:`TensorDef`: index, name, shape (``None`` entries or a ``None`` shape where the format leaves them
  open), numpy dtype (None for a type with no numpy array: a resource handle, a 4-bit ONNX type), constant
  data, per-tensor or per-channel quantization, whether it is a variable (state carried between runs);
* :class:`OperatorDef`: index, name (the format's operator name), input and output tensor indices (-1: an
  optional input or output left out), options;
* :class:`SubgraphDef`, :class:`ModelDef`: the main subgraph is 0 (others are called by operators such as
  TFLite's CALL_ONCE).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class TensorDef:
    """One tensor of the subgraph: static shape, dtype, constant data (None for activations), quantization."""

    index: int
    name: str
    shape: tuple
    dtype: np.dtype | None
    type_name: str
    data: np.ndarray | None
    scale: np.ndarray  # float32, empty when not quantized
    zero_point: np.ndarray  # int64
    quantized_dimension: int
    is_variable: bool = False  # a variable tensor: its value persists between invocations (TFLM, LSTM/SVDF state)


@dataclass
class OperatorDef:
    """One operator: builtin code, name (``CUSTOM(<custom code>)`` for a custom op), tensor indices
    (-1 = optional input absent), builtin options, the operator code's version and its intermediate
    tensors."""

    index: int
    code: int
    name: str
    inputs: tuple
    outputs: tuple
    options: dict = field(default_factory=dict)
    version: int = 1
    intermediates: tuple = ()  # tensors that only carry quantization (the LSTM's gate scales)


@dataclass
class SubgraphDef:
    """One subgraph, decoded: tensors, inputs, outputs and operators (in execution order)."""

    index: int
    name: str
    tensors: list
    inputs: tuple
    outputs: tuple
    operators: list


@dataclass
class ModelDef:
    """A .tflite model, decoded: every subgraph (0 is the main one; others are called by CALL_ONCE,
    IF, WHILE...), the schema version and the description."""

    version: int
    subgraphs: list
    description: str | None

    @property
    def main(self) -> SubgraphDef:
        return self.subgraphs[0]

    @property
    def tensors(self):
        return self.main.tensors

    @property
    def inputs(self):
        return self.main.inputs

    @property
    def outputs(self):
        return self.main.outputs

    @property
    def operators(self):
        return self.main.operators

    @property
    def subgraph_count(self) -> int:
        return len(self.subgraphs)
