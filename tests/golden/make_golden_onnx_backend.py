"""Write tests/golden/onnx/backend_nodes.npz: the onnx package's backend node tests for every
quantization operator, regenerated from the installed wheel (which ships the generators,
``onnx.backend.test.case.node.*``, not the data).

A case is selected when its graph uses a quantization operator (QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger); the ``_expanded``
DynamicQuantizeLinear cases (the function body as a graph of 16 nodes) are included, with the
expected outputs the generator computed. Stored per case (keys ``<case>/...``, uint8 byte arrays):
``model`` (ModelProto bytes), ``in{k}`` / ``out{k}`` (TensorProto bytes of data set 0). ``meta``:
0-d JSON with the case list, onnx version and opsets. dspsim decodes everything with its own
protobuf reader; the tests need no onnx package.

    python tests/golden/make_golden_onnx_backend.py      # about 10 s, deterministic
"""
import json
import os
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node

QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearMatMul", "QLinearConv",
             "MatMulInteger", "ConvInteger"}
OUT = os.path.join(os.path.dirname(__file__), "onnx", "backend_nodes.npz")


def quantization_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    return {c.name: c for c in cases if {n.op_type for n in c.model.graph.node} & QUANT_OPS}


def tensor_bytes(v, name):
    tp = v if isinstance(v, onnx.TensorProto) else numpy_helper.from_array(np.asarray(v), name)
    return np.frombuffer(tp.SerializeToString(), np.uint8)


def main():
    cases = quantization_cases()
    arrays, meta = {}, []
    for name in sorted(cases):
        c = cases[name]
        ins, outs = c.data_sets[0]
        g = c.model.graph
        arrays[f"{name}/model"] = np.frombuffer(c.model.SerializeToString(), np.uint8)
        for k, v in enumerate(ins):
            arrays[f"{name}/in{k}"] = tensor_bytes(v, g.input[k].name)
        for k, v in enumerate(outs):
            arrays[f"{name}/out{k}"] = tensor_bytes(v, g.output[k].name)
        meta.append(dict(name=name, ops=sorted({n.op_type for n in g.node}), n_in=len(ins), n_out=len(outs),
                         opset=c.model.opset_import[0].version, data_sets=len(c.data_sets)))
    arrays["meta"] = np.array(json.dumps(dict(onnx=onnx.__version__, cases=meta)))
    np.savez_compressed(OUT, **arrays)
    print(f"{len(meta)} cases -> {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
