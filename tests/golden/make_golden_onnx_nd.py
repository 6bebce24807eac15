"""Write tests/golden/onnx/nd.npz: issue 27 part 6's ONNX cases, one-node models run by ONNX Runtime
(CPUExecutionProvider, graph optimizations off) and onnx.reference.ReferenceEvaluator:

* 3-D ConvInteger (uint8 / int8 inputs and weights, pads, strides, dilations, groups, per-channel weight zero
  points for the reference);
* 3-D QLinearConv (per-channel weight scales, int32 bias, a depthwise 3-D conv, uint8 and int8);
* QLinearMatMul with B batched and its scales and zero points per batch and column ((B..., 1, N), as ONNX
  Runtime takes them), uint8 x int8 and int8 x int8, A broadcast over B's batch.

Inputs are seeded draws holding every code's extremes. Keys ``<case>/in{k}`` (the node's inputs in order, numpy
arrays; absent optional inputs are skipped by the node's input names), ``<case>/ort`` and ``<case>/ref``
(outputs; absent when that engine refused the model: ``meta`` records why). ``meta``: 0-d JSON {versions,
host_engine (the dspsim engine name of this host's ORT: onnxruntime-vnni with AVX-512 VNNI / AVX-VNNI), cases:
[{name, op, attrs, inputs (names), ort_error, ref_error}]}. About 5 s, with the test extras' onnx and
onnxruntime::

    python tests/golden/make_golden_onnx_nd.py
"""
import json
import os
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator

OUT = os.path.join(os.path.dirname(__file__), "onnx", "nd.npz")
TYPES = {np.dtype(np.uint8): TP.UINT8, np.dtype(np.int8): TP.INT8, np.dtype(np.int32): TP.INT32,
         np.dtype(np.float32): TP.FLOAT}


def codes(rng, shape, dtype):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, shape).astype(dtype)
    flat = a.reshape(-1)
    flat[:4] = [info.min, info.max, info.min, info.max][:flat.size]
    return a


def case(name, op, inputs, attrs, out_type):
    """inputs: list of (name, array or None); the array's dtype is the input's type."""
    rng_names = [n for n, v in inputs if v is not None]
    node_inputs = [n if v is not None else "" for n, v in inputs]
    graph = helper.make_graph(
        [helper.make_node(op, node_inputs, ["y"], **attrs)], name,
        [helper.make_tensor_value_info(n, TYPES[np.asarray(v).dtype], np.asarray(v).shape) for n, v in inputs
         if v is not None],
        [onnx.ValueInfoProto(name="y", type=helper.make_tensor_type_proto(out_type, None))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    feeds = {n: np.asarray(v) for n, v in inputs if v is not None}
    meta = {"name": name, "op": op, "attrs": attrs, "inputs": [n for n, _ in inputs], "given": rng_names}
    arrays = {f"{name}/in{k}": np.asarray(v) for k, (n, v) in enumerate(inputs) if v is not None}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        arrays[f"{name}/ort"] = sess.run(None, feeds)[0]
        meta["ort_error"] = None
    except Exception as exc:  # noqa: BLE001 - a refusal is recorded, not fatal
        meta["ort_error"] = str(exc).splitlines()[0][:300]
    try:
        arrays[f"{name}/ref"] = np.asarray(ReferenceEvaluator(model).run(None, feeds)[0])
        meta["ref_error"] = None
    except Exception as exc:  # noqa: BLE001
        meta["ref_error"] = str(exc).splitlines()[0][:300]
    return meta, arrays


def conv_integer_cases():
    out = []
    for tag, xt, wt, xs, ws, attrs, zw_per_channel in (
            ("u8u8_pads", np.uint8, np.uint8, (1, 2, 4, 5, 5), (3, 2, 2, 3, 3), {"pads": [1, 0, 1, 1, 1, 0]}, False),
            ("u8s8_strides_dilations", np.uint8, np.int8, (2, 3, 6, 5, 7), (4, 3, 2, 2, 3),
             {"strides": [2, 1, 2], "dilations": [2, 1, 1]}, False),
            ("s8s8_groups_same", np.int8, np.int8, (1, 4, 5, 4, 4), (4, 2, 3, 3, 3),
             {"group": 2, "auto_pad": "SAME_UPPER"}, False),
            ("u8u8_per_channel_zero_points", np.uint8, np.uint8, (1, 2, 3, 4, 4), (3, 2, 2, 2, 2), {}, True)):
        rng = np.random.default_rng(zlib.crc32(tag.encode()))
        x, w = codes(rng, xs, xt), codes(rng, ws, wt)
        zx = np.asarray(codes(rng, (), xt))
        zw = codes(rng, (ws[0],), wt) if zw_per_channel else np.asarray(codes(rng, (), wt))
        out.append(case(f"conv_integer_3d_{tag}", "ConvInteger", [("x", x), ("w", w), ("x_zero_point", zx),
                                                                   ("w_zero_point", zw)], attrs, TP.INT32))
    return out


def qlinear_conv_cases():
    out = []
    for tag, xt, xs, ws, attrs, bias in (
            ("u8s8_per_channel_bias", np.uint8, (1, 3, 4, 6, 6), (4, 3, 2, 3, 3), {"pads": [0, 1, 1, 1, 1, 0]}, True),
            ("s8s8_strided", np.int8, (2, 2, 5, 5, 5), (3, 2, 3, 3, 3), {"strides": [2, 2, 1]}, False),
            ("s8s8_depthwise", np.int8, (1, 4, 4, 5, 5), (4, 1, 3, 3, 3),
             {"group": 4, "pads": [1, 1, 1, 1, 1, 1]}, True)):
        rng = np.random.default_rng(zlib.crc32(tag.encode()))
        x, w = codes(rng, xs, xt), codes(rng, ws, np.int8)
        taps = int(np.prod(ws[1:]))
        inputs = [("x", x), ("x_scale", np.float32(0.02)), ("x_zero_point", np.asarray(codes(rng, (), xt))),
                  ("w", w), ("w_scale", rng.uniform(0.002, 0.01, ws[0]).astype(np.float32)),
                  ("w_zero_point", np.zeros(ws[0], np.int8)),
                  ("y_scale", np.float32(0.02 * 0.006 * 40 * np.sqrt(taps))),
                  ("y_zero_point", np.asarray(codes(rng, (), xt)))]
        if bias:
            inputs.append(("B", rng.integers(-20000, 20000, ws[0]).astype(np.int32)))
        out.append(case(f"qlinear_conv_3d_{tag}", "QLinearConv", inputs, attrs, TYPES[np.dtype(xt)]))
    return out


def qlinear_matmul_cases():
    out = []
    for tag, at, a_shape, b_shape in (("u8s8_batched", np.uint8, (2, 3, 16), (2, 16, 5)),
                                      ("s8s8_a_broadcast", np.int8, (3, 16), (4, 16, 6)),
                                      ("u8s8_rank4", np.uint8, (2, 1, 2, 8), (1, 3, 8, 4))):
        rng = np.random.default_rng(zlib.crc32(tag.encode()))
        a, b = codes(rng, a_shape, at), codes(rng, b_shape, np.int8)
        col = b_shape[:-2] + (1, b_shape[-1])
        inputs = [("a", a), ("a_scale", np.float32(0.03)), ("a_zero_point", np.asarray(codes(rng, (), at))),
                  ("b", b), ("b_scale", rng.uniform(0.002, 0.02, col).astype(np.float32)),
                  ("b_zero_point", codes(rng, col, np.int8)), ("y_scale", np.float32(0.6)),
                  ("y_zero_point", np.asarray(codes(rng, (), at)))]
        out.append(case(f"qlinear_matmul_per_batch_column_{tag}", "QLinearMatMul", inputs, {}, TYPES[np.dtype(at)]))
    return out


def main():
    import dspsim.onnx

    metas, arrays = [], {}
    for meta, arr in conv_integer_cases() + qlinear_conv_cases() + qlinear_matmul_cases():
        metas.append(meta)
        arrays.update(arr)
        print(meta["name"], "ort:", meta["ort_error"] or "ok", "ref:", meta["ref_error"] or "ok", flush=True)
    meta = {"versions": {"onnx": onnx.__version__, "onnxruntime": ort.__version__},
            "host_engine": dspsim.onnx.host_engine(), "cases": metas}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, meta=np.array(json.dumps(meta)), **arrays)
    print(f"wrote {OUT}: {len(metas)} cases, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
