"""A toy streaming model built from decoded flatbuffer records (no converter needed): a one-frame delay line,
output(t) = input(t - 1), initialised to zeros by its CALL_ONCE subgraph (tests of state, streams and validate)."""
import numpy as np

from dspsim.graph.ir import ModelDef, OperatorDef, SubgraphDef, TensorDef

CODES = {"CALL_ONCE": 129, "VAR_HANDLE": 142, "READ_VARIABLE": 143, "ASSIGN_VARIABLE": 144}


def tensor_record(i, name, dtype, data=None, shape=(1, 4), type_name=None):
    dt = None if dtype is None else np.dtype(dtype)
    return TensorDef(i, name, shape if dt is not None else (), dt, type_name or (dt.name if dt is not None else
                     "RESOURCE"), data, np.zeros(0, np.float32), np.zeros(0, np.int64), 0)


def op_record(k, name, inputs, outputs, **options):
    return OperatorDef(k, CODES[name], name, tuple(inputs), tuple(outputs), options)


def delay_line_model():
    var = dict(container="", shared_name="delay")
    main = SubgraphDef(0, "main", [
        tensor_record(0, "x", np.int8), tensor_record(1, "handle", None), tensor_record(2, "previous", np.int8)],
        (0,), (2,), [
            op_record(0, "CALL_ONCE", [], [], init_subgraph_index=1),
            op_record(1, "VAR_HANDLE", [], [1], **var),
            op_record(2, "READ_VARIABLE", [1], [2]),
            op_record(3, "ASSIGN_VARIABLE", [1, 0], []),
        ])
    zeros = tensor_record(1, "zeros", np.int8, np.zeros((1, 4), np.int8))
    init = SubgraphDef(1, "NoOp", [tensor_record(0, "handle", None), zeros], (), (),
                       [op_record(0, "VAR_HANDLE", [], [0], **var), op_record(1, "ASSIGN_VARIABLE", [0, 1], [])])
    return ModelDef(3, [main, init], None)
