"""LiteRT's time per operator of a .tflite model: each operator cut out as a one-operator model and timed alone.

Not a test and not a pytest-benchmark: the peer column of ``benches/batch_profile.py --peer-python``, which runs
this file in a Python that has ``ai_edge_litert`` (it imports only that, flatbuffers and numpy; no dspsim). LiteRT
has no per-operator profiler in its Python API, so each operator becomes its own model: the same tensors,
buffers and options, its non-constant inputs as the model's inputs (batch resized to ``--batch``, random codes),
its outputs as the model's outputs. Each is invoked ``--repeat`` times after one warm-up; the least wall time is
printed as one JSON line ``{"index", "op", "us"}`` (or ``"error"`` where the cut model does not run).

Caveat: in the whole model XNNPACK fuses a PAD into the convolution after it, so a PAD's own line is time the
whole model does not spend. Run it at 1 thread::

    python benches/litert_op_times.py MODEL.tflite [--batch 16] [--repeat 7] [--resolver default]
"""
from __future__ import annotations

import argparse
import copy
import json
import time

import numpy as np

RESOLVERS = ("default", "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF")
"""``default``: XNNPACK; the others name ``OpResolverType`` members (LiteRT's optimized and reference kernels)."""


def _one_op_model(model, index):
    """The flatbuffer bytes of ``model`` (a ``ModelT``) cut down to operator ``index`` of its first subgraph."""
    import flatbuffers

    graph = model.subgraphs[0]
    op = graph.operators[index]

    def constant(t):
        data = model.buffers[graph.tensors[t].buffer].data
        return data is not None and len(data) > 0

    sub = copy.copy(graph)
    sub.operators = [op]
    sub.inputs = [t for t in op.inputs if t >= 0 and not constant(t)]
    sub.outputs = list(op.outputs)
    cut = copy.copy(model)
    cut.subgraphs = [sub]
    builder = flatbuffers.Builder(0)
    builder.Finish(cut.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _time_op(content, batch, repeat, resolver, rng):
    """Least wall-clock seconds of ``repeat`` invokes of the one-operator model ``content`` at ``batch``."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kwargs = {} if resolver == "default" else {"experimental_op_resolver_type": getattr(OpResolverType, resolver)}
    it = Interpreter(model_content=content, num_threads=1, **kwargs)
    for d in it.get_input_details():
        if len(d["shape"]):
            it.resize_tensor_input(d["index"], [batch, *d["shape"][1:]])
    it.allocate_tensors()
    for d in it.get_input_details():
        info = np.iinfo(d["dtype"]) if np.issubdtype(d["dtype"], np.integer) else None
        x = (rng.integers(max(info.min, -128), min(info.max, 127) + 1, d["shape"]) if info is not None
             else rng.standard_normal(d["shape"]))
        it.set_tensor(d["index"], x.astype(d["dtype"]))
    it.invoke()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        it.invoke()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    from ai_edge_litert import schema_py_generated as schema

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--resolver", choices=RESOLVERS, default="default")
    a = ap.parse_args(argv)
    with open(a.model, "rb") as f:
        model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(f.read(), 0))
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    rng = np.random.default_rng(0)
    for index, op in enumerate(model.subgraphs[0].operators):
        code = model.operatorCodes[op.opcodeIndex]
        line = {"index": index, "op": names.get(max(code.builtinCode, code.deprecatedBuiltinCode), "?")}
        try:
            line["us"] = 1e6 * _time_op(_one_op_model(model, index), a.batch, a.repeat, a.resolver, rng)
        except (RuntimeError, ValueError) as e:  # a cut model LiteRT cannot prepare (e.g. a reshape's fixed shape)
            line["error"] = str(e).splitlines()[0][:200]
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
