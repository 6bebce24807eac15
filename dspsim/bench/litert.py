"""The LiteRT peer's model builder, its invoker, and the worker process that times it elsewhere.

``ai_edge_litert`` is used in-process when it is importable. Otherwise ``DSPSIM_LITERT_PYTHON`` names
an interpreter that has it (and perhaps neither numba nor dspsim): :func:`litert_subprocess` runs this
file there as ``python litert.py litert-worker ...``, which builds the same model, times it by the
rule of :mod:`dspsim.bench.timing` and sends back the output and the times. This file therefore
imports only numpy (flatbuffers and ai_edge_litert lazily), and the worker loads timing.py by path.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

_TFL_INT8, _TFL_UINT8, _TFL_INT32, _TFL_FLOAT32 = 9, 3, 2, 0
_TFL_TYPES = {np.dtype(np.int8): _TFL_INT8, np.dtype(np.uint8): _TFL_UINT8, np.dtype(np.int32): _TFL_INT32,
              np.dtype(np.float32): _TFL_FLOAT32}


def litert_model(op: str, a: dict) -> bytes:
    """A one-operator int8 .tflite model with exactly the problem's integers and scales.

    ``op``: fully_connected (per-tensor weights), conv2d / depthwise_conv2d (per-channel, 3x3 SAME,
    stride 1) or quantize (float32 -> uint8). ``a``: the problem's arrays and scalars.
    """
    import flatbuffers
    from ai_edge_litert import schema_py_generated as S

    model = S.ModelT()
    model.version = 3
    model.buffers = [S.BufferT()]
    tensors = []

    def tensor(name, shape, dtype, scale=None, zp=None, data=None, axis=0):
        t = S.TensorT()
        t.name, t.shape, t.type = name, list(shape), _TFL_TYPES[np.dtype(dtype)]
        t.buffer = 0
        if data is not None:
            b = S.BufferT()
            b.data = np.ascontiguousarray(data).view(np.uint8).reshape(-1).tolist()
            model.buffers.append(b)
            t.buffer = len(model.buffers) - 1
        if scale is not None:
            q = S.QuantizationParametersT()
            q.scale = [float(v) for v in np.atleast_1d(scale)]
            q.zeroPoint = [int(v) for v in np.broadcast_to(np.atleast_1d(zp), np.shape(q.scale))]
            q.quantizedDimension = axis
            t.quantization = q
        tensors.append(t)
        return len(tensors) - 1

    x = a["x"]
    code, version = {"fully_connected": (9, 4), "conv2d": (3, 3), "depthwise_conv2d": (4, 3),
                     "quantize": (114, 1)}[op]
    opt = S.OperatorT()
    if op == "quantize":
        ins = [tensor("x", x.shape, np.float32)]
        out = tensor("y", x.shape, np.uint8, a["scale"], a["zp"])
    else:
        w, s_in, s_w, s_out = a["w"], float(a["s_in"]), np.asarray(a["s_w"], np.float32), float(a["s_out"])
        axis = 3 if op == "depthwise_conv2d" else 0
        bias_scale = (np.float32(s_in) * np.atleast_1d(s_w)).astype(np.float32)
        ins = [tensor("x", x.shape, np.int8, s_in, a["zi"]),
               tensor("w", w.shape, np.int8, s_w, 0, w, axis),
               tensor("b", a["bias"].shape, np.int32, bias_scale, 0, a["bias"].astype(np.int32))]
        if op == "fully_connected":
            out_shape = (x.shape[0], w.shape[0])
            opt.builtinOptionsType, opt.builtinOptions = 8, S.FullyConnectedOptionsT()
        else:
            out_shape = x.shape[:3] + (w.shape[0] if op == "conv2d" else w.shape[3],)
            o = S.Conv2DOptionsT() if op == "conv2d" else S.DepthwiseConv2DOptionsT()
            o.padding, o.strideW, o.strideH, o.dilationWFactor, o.dilationHFactor = 0, 1, 1, 1, 1  # SAME
            if op == "depthwise_conv2d":
                o.depthMultiplier = 1
            opt.builtinOptionsType, opt.builtinOptions = (1 if op == "conv2d" else 2), o
        out = tensor("y", out_shape, np.int8, s_out, a["zo"])
    oc = S.OperatorCodeT()
    oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), version
    model.operatorCodes = [oc]
    opt.opcodeIndex, opt.inputs, opt.outputs = 0, ins, [out]
    sg = S.SubGraphT()
    sg.tensors, sg.inputs, sg.outputs, sg.operators = tensors, [0], [out], [opt]
    model.subgraphs = [sg]
    b = flatbuffers.Builder(0)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def litert_invoker(model: bytes, x: np.ndarray, threads: int, resolver: str = "BUILTIN_REF"):
    """A call that runs the model on ``x`` and returns the output: ``resolver`` names LiteRT's
    ``OpResolverType``: ``BUILTIN_REF`` (the reference kernels) or ``AUTO`` (the default interpreter: the
    XNNPACK delegate takes the node)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_content=model, experimental_op_resolver_type=getattr(OpResolverType, resolver),
                     num_threads=threads)
    it.allocate_tensors()
    i_in, i_out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]

    def call():
        it.set_tensor(i_in, x)
        it.invoke()
        return it.get_tensor(i_out)
    return call


def litert_subprocess(python, op, arrays, threads, repeats, budget, resolver: str = "BUILTIN_REF"):
    """Run the LiteRT peer in ``python`` (``resolver``: as :func:`litert_invoker`); returns the
    :class:`~dspsim.bench.timing.Timing` measured there."""
    import subprocess
    import tempfile

    from .timing import Timing
    with tempfile.TemporaryDirectory() as d:
        src, dst = Path(d) / "in.npz", Path(d) / "out.npz"
        np.savez(src, **arrays)
        cmd = [python, __file__, "litert-worker", op, str(src), str(dst), str(threads), str(repeats), str(budget),
               resolver]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if res.returncode != 0:
            raise RuntimeError(f"LiteRT worker failed: {res.stderr.strip().splitlines()[-1:]}")
        with np.load(dst) as f:
            out, (t_min, t_median), runs = f["y"], f["seconds"], int(f["runs"])
    return Timing(out, float(t_min), float(t_median), runs)


def _timing_module():
    """dspsim/bench/timing.py, loaded by path: the worker's interpreter may not have dspsim installed."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("dspsim_bench_timing", Path(__file__).with_name("timing.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _litert_worker(op, src, dst, threads, repeats, budget, resolver):
    """Entry point under an interpreter with ai_edge_litert: build, time (warm-up untimed), save."""
    with np.load(src) as f:
        arrays = {k: f[k] for k in f.files}
    call = litert_invoker(litert_model(op, arrays), arrays["x"], int(threads), resolver)
    t = _timing_module().measure(call, int(repeats), float(budget))
    np.savez(dst, y=t.result, seconds=np.array([t.min_seconds, t.median_seconds]), runs=t.runs)


if __name__ == "__main__" and sys.argv[1:2] == ["litert-worker"]:
    _litert_worker(*sys.argv[2:])
