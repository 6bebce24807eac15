"""Peer engines that dspsim is benchmarked against, on the same integers, in the same run.

:func:`runners` returns, for a :class:`dspsim.bench.Case` and its problem, one
:class:`dspsim.bench.Runner` per peer: the timed call (inputs prepared, weights prepacked, session
built, all outside the timing) and how to read its result as integers in dspsim's layout (NHWC), so
:func:`dspsim.bench.run_case` can diff it against dspsim's output of the scheme it emulates:

================== ============================================== ================================
peer               runs                                            compared with dspsim's
================== ============================================== ================================
numpy-int64        the naive bit-exact route: int64 GEMM / im2col, ``rounding="double"`` (TFLite)
                   gemmlowp MultiplyByQuantizedMultiplier in int64
torch-fbgemm       quantized::linear (prepacked), quantized::conv2d ``requant="fbgemm"`` (depthwise:
                   (channels-last), torch.quantize_per_tensor,     with ``Accumulator(pair_
                   torch.relu on a quint8 tensor                   saturation=True)``)
onnxruntime        QLinearMatMul / QLinearConv / QuantizeLinear    ``requant="onnxruntime"``
litert-ref         LiteRT interpreter, reference kernels           ``rounding="double"`` (FC:
                   (``OpResolverType.BUILTIN_REF``), if importable ``Requant "litert-fc"``),
                                                                   tflite_quantize
================== ============================================== ================================

torch, onnxruntime and ai_edge_litert are imported lazily; a missing engine gives a skipped row.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

try:
    from dspsim.bench import KERNEL_OPS, Case, Runner
except ImportError:  # run as the LiteRT worker under an interpreter without dspsim (see _litert_worker)
    if __name__ != "__main__":
        raise

NUMPY_MAX_MACS = 3e9  # the naive int64 route beyond this takes minutes


class Unavailable(Exception):
    """The peer cannot run this case (engine not installed, or out of its reach)."""


def available() -> dict:
    """Version of each peer engine, or why it is missing."""
    import os
    out = {"numpy": np.__version__}
    for name in ("torch", "onnxruntime", "ai_edge_litert"):
        try:
            mod = __import__(name)
            out[name] = getattr(mod, "__version__", "installed")
        except Exception as exc:
            out[name] = f"missing ({type(exc).__name__})"
    if out["ai_edge_litert"].startswith("missing") and os.environ.get("DSPSIM_LITERT_PYTHON"):
        out["ai_edge_litert"] = f"worker process: {os.environ['DSPSIM_LITERT_PYTHON']}"
    return out


def engines(case: Case) -> list[str]:
    """Names of the peers of ``case`` (installed or not)."""
    return [engine for engine, _, _ in _PEERS.get(_key(case), ())]


def runners(case: Case, p: dict, threads: int) -> list[Runner]:
    """One :class:`Runner` per peer of ``case`` (skipped ones carry the reason)."""
    out = []
    for engine, compared, build in _PEERS.get(_key(case), ()):
        try:
            built = build(case, p, threads)
        except Unavailable as exc:
            out.append(Runner(engine, compared_with=compared, skip=str(exc)))
            continue
        if isinstance(built, Runner):
            built.engine, built.compared_with = engine, built.compared_with or compared
            out.append(built)
        else:
            out.append(Runner(engine, *built, compared_with=compared))
    return out


def _key(case: Case):
    return ("kernel" if case.op in KERNEL_OPS else case.op, case.variant)


# --------------------------------------------------------------------------------------------
# numpy: the naive int64 route
# --------------------------------------------------------------------------------------------
def _wrap32(a):
    return ((a + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def np_mbqm_double(acc, m, shift):
    """gemmlowp ``MultiplyByQuantizedMultiplier`` (SRDHM ties up, then RoundingDivideByPOT ties away)
    on int64 arrays; ``m``, ``shift`` broadcast along the last axis."""
    m = np.asarray(m, np.int64)
    shift = np.asarray(shift, np.int64)
    x = _wrap32(_wrap32(acc) << np.maximum(shift, 0))  # C: x * (1 << left), wraps
    ab = x * m
    t = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    high = np.where(t >= 0, t >> 31, -((-t) >> 31))  # C division truncates; m >= 0: no saturation case
    right = np.maximum(-shift, 0)
    mask = (np.int64(1) << right) - 1
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + ((high & mask) > threshold)


def np_mbqm_single(acc, m, shift):
    """TFLITE_SINGLE_ROUNDING: ``(acc*M + 2^(30-shift)) >> (31-shift)`` on int64 arrays."""
    t = 31 - np.asarray(shift, np.int64)
    return (_wrap32(acc) * np.asarray(m, np.int64) + (np.int64(1) << (t - 1))) >> t


def _np_clamp(v, zo, dtype):
    info = np.iinfo(dtype)
    return np.clip(v + zo, info.min, info.max).astype(dtype)


def _np_accumulate(case: Case, p: dict):
    """The int64 accumulators (bias included) of a kernel case, plainly."""
    x = p["x"].astype(np.int64) - p["zi"]
    w = p["w"].astype(np.int64) - p["zw"]
    if case.op == "fully_connected":
        acc = x @ w.T
    else:
        xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))  # SAME 3x3: a padding tap adds exactly 0
        n, h, wd, c = x.shape
        if case.op == "conv2d":
            win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))  # n,h,w,c,3,3
            cols = win.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * wd, 9 * c)      # (fy, fx, c) = OHWI order
            acc = (cols @ w.reshape(w.shape[0], -1).T).reshape(n, h, wd, -1)
        else:
            acc = np.zeros((n, h, wd, c), np.int64)
            for fy in range(3):
                for fx in range(3):
                    acc += xp[:, fy:fy + h, fx:fx + wd, :] * w[0, fy, fx, :]
    return acc + p["bias"].astype(np.int64)


def _numpy_kernel(case, p, threads):
    if case.work > NUMPY_MAX_MACS:
        raise Unavailable(f"{case.work / 1e9:.0f} GMAC is too slow for the naive route")
    return (lambda: _np_clamp(np_mbqm_double(_np_accumulate(case, p), p["multiplier"], p["shift"]),
                              p["zo"], np.int8)), np.asarray


def _numpy_relu(case, p, threads):
    if case.variant == "clamp":
        return (lambda: np.maximum(p["x"], np.uint8(p["zi"]))), np.asarray
    # TFLite ReLU: zp_out + MBQM(q - zp_in), clamped to [zp_out, 127]
    return (lambda: np.maximum(_np_clamp(np_mbqm_double(p["x"].astype(np.int64) - p["zi"], p["multiplier"],
                                                        p["shift"]), p["zo"], np.int8), np.int8(p["zo"]))), np.asarray


def _numpy_quantize(case, p, threads):
    x, scale, zp = p["x"], np.float32(p["scale"]), p["zp"]
    if case.variant == "onnx":  # ONNX reference: f32(x / scale), rint (ties to even), + zp, clip
        return (lambda: _np_clamp(np.rint(x / scale), zp, np.uint8)), np.asarray

    def tflite():  # AffineQuantize: TfLiteRound (ties away) of f32(x / scale), + zp, clamp
        v = (x / scale).astype(np.float64)
        return _np_clamp(np.copysign(np.floor(np.abs(v) + 0.5), v), zp, np.uint8)
    return tflite, np.asarray


def _numpy_requantize(case, p, threads):
    acc, zo, v = p["acc"], p["zo"], case.variant
    if v == "double":
        return (lambda: _np_clamp(np_mbqm_double(acc.astype(np.int64), p["multiplier"], p["shift"]), zo,
                                  np.int8)), np.asarray
    if v == "single":
        return (lambda: _np_clamp(np_mbqm_single(acc.astype(np.int64), p["multiplier"], p["shift"]), zo,
                                  np.int8)), np.asarray
    if v == "shift":  # ties away from zero: floor((|a| + 2^(s-1)) / 2^s) with the sign restored
        s = -p["shift_only"]
        return (lambda: _np_clamp(np.sign(acc) * ((np.abs(acc.astype(np.int64)) + (1 << (s - 1))) >> s), zo,
                                  np.int8)), np.asarray
    scale = np.float32(p["scale"])  # fbgemm without float bias, onnxruntime, xnnpack: lrintf(f32(acc * s))
    return (lambda: _np_clamp(np.rint(acc.astype(np.float32) * scale).astype(np.int64), zo, np.int8)), np.asarray


# --------------------------------------------------------------------------------------------
# PyTorch / FBGEMM
# --------------------------------------------------------------------------------------------
def _torch(threads):
    try:
        import torch
    except Exception as exc:
        raise Unavailable(f"torch not importable ({type(exc).__name__})") from None
    if "fbgemm" not in torch.backends.quantized.supported_engines:
        raise Unavailable("torch has no fbgemm engine")
    torch.backends.quantized.engine = "fbgemm"
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")
    warnings.filterwarnings("ignore", message=".*deprecated.*", category=UserWarning, module="torch")
    return torch


def _torch_weight(torch, w_ohwi, s_w):
    """int8 OHWI (or (N, K)) weights as a qint8 tensor, per channel when ``s_w`` is an array."""
    w = torch.from_numpy(np.ascontiguousarray(w_ohwi))
    if w.dim() == 4:
        w = w.permute(0, 3, 1, 2).contiguous()  # OIHW
    if np.ndim(s_w) == 0:
        return torch._make_per_tensor_quantized_tensor(w, float(s_w), 0)
    n = w.shape[0]
    return torch._make_per_channel_quantized_tensor(w, torch.from_numpy(np.asarray(s_w, np.float64)),
                                                    torch.zeros(n, dtype=torch.int64), 0)


def _torch_kernel(case, p, threads):
    torch = _torch(threads)
    x = torch.from_numpy(p["x"])
    bias = torch.from_numpy(p["bias"])
    s_out, zo = float(p["s_out"]), int(p["zo"])
    if case.op == "fully_connected":
        qx = torch._make_per_tensor_quantized_tensor(x, float(p["s_in"]), int(p["zi"]))
        packed = torch.ops.quantized.linear_prepack(_torch_weight(torch, p["w"], p["s_w"]), bias)
        return (lambda: torch.ops.quantized.linear(qx, packed, s_out, zo)), lambda y: y.int_repr().numpy()
    qx = torch._make_per_tensor_quantized_tensor(x.permute(0, 3, 1, 2), float(p["s_in"]), int(p["zi"]))
    assert qx.is_contiguous(memory_format=torch.channels_last)
    if case.op == "conv2d":
        qw, groups = _torch_weight(torch, p["w"], p["s_w"]), 1
    else:  # depthwise (1, 3, 3, C) -> (C, 1, 3, 3), groups = C
        qw, groups = _torch_weight(torch, np.ascontiguousarray(p["w"].transpose(3, 1, 2, 0)), p["s_w"]), p["w"].shape[3]
    packed = torch.ops.quantized.conv2d_prepack(qw, bias, [1, 1], [1, 1], [1, 1], groups)
    fn = lambda: torch.ops.quantized.conv2d(qx, packed, s_out, zo)  # noqa: E731
    to_numpy = lambda y: y.int_repr().permute(0, 2, 3, 1).numpy()  # noqa: E731
    if case.op == "conv2d":
        return fn, to_numpy
    # FBGEMM's depthwise kernel adds adjacent product pairs with int16 saturation (vpmaddubsw) even on
    # AVX-512 VNNI machines, where its GEMM-based linear/conv do not: compare with that model.
    import dspsim
    from dspsim.bench import kernel_kwargs
    kw = kernel_kwargs(case, p, dspsim.Accumulator(pair_saturation=True))
    return Runner("", fn, to_numpy, "dspsim requant=fbgemm, Accumulator(pair_saturation=True)",
                  reference=lambda: dspsim.depthwise_conv2d(p["x"], p["w"], p["bias"], **kw))


def _torch_relu(case, p, threads):
    torch = _torch(threads)
    qx = torch._make_per_tensor_quantized_tensor(torch.from_numpy(p["x"]), 0.1, int(p["zi"]))
    return (lambda: torch.relu(qx)), lambda y: y.int_repr().numpy()


def _torch_quantize(case, p, threads):
    torch = _torch(threads)
    x = torch.from_numpy(p["x"])
    s, zp = float(p["scale"]), int(p["zp"])
    return (lambda: torch.quantize_per_tensor(x, s, zp, torch.quint8)), lambda y: y.int_repr().numpy()


# --------------------------------------------------------------------------------------------
# ONNX Runtime
# --------------------------------------------------------------------------------------------
def _ort_session(nodes, inputs, outputs, inits, threads):
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except Exception as exc:
        raise Unavailable(f"onnxruntime/onnx not importable ({type(exc).__name__})") from None
    types = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
             np.dtype(np.float32): TensorProto.FLOAT}
    graph = helper.make_graph(
        nodes, "bench",
        [helper.make_tensor_value_info(name, types[a.dtype], list(a.shape)) for name, a in inputs.items()],
        [helper.make_tensor_value_info(name, types[np.dtype(dt)], None) for name, dt in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feed = dict(inputs)
    return lambda: sess.run(None, feed)[0]


def _ort_kernel(case, p, threads):
    from onnx import helper
    x, w = p["x"], p["w"]
    s_w = np.asarray(p["s_w"], np.float32)
    common = {"x_s": np.float32(p["s_in"]), "x_zp": np.uint8(p["zi"]), "y_s": np.float32(p["s_out"]),
              "y_zp": np.uint8(p["zo"]), "w_s": s_w, "w_zp": np.zeros(s_w.shape, np.int8)}
    if case.op == "fully_connected":  # QLinearMatMul has no bias: the problem's bias is 0
        node = helper.make_node("QLinearMatMul", ["x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp"], ["y"])
        fn = _ort_session([node], {"x": x}, [("y", np.uint8)], {**common, "w": np.ascontiguousarray(w.T)}, threads)
        return fn, np.asarray
    if case.op == "conv2d":
        w_oihw, group = np.ascontiguousarray(w.transpose(0, 3, 1, 2)), 1
    else:
        w_oihw, group = np.ascontiguousarray(w.transpose(3, 0, 1, 2)), w.shape[3]
    node = helper.make_node("QLinearConv", ["x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp", "b"], ["y"],
                            pads=[1, 1, 1, 1], group=group, kernel_shape=[3, 3])
    x_nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    fn = _ort_session([node], {"x": x_nchw}, [("y", np.uint8)],
                      {**common, "w": w_oihw, "b": p["bias"].astype(np.int32)}, threads)
    return fn, lambda y: np.asarray(y).transpose(0, 2, 3, 1)


def _ort_quantize(case, p, threads):
    from onnx import helper
    node = helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"])
    fn = _ort_session([node], {"x": p["x"]}, [("y", np.uint8)],
                      {"s": np.float32(p["scale"]), "zp": np.uint8(p["zp"])}, threads)
    return fn, np.asarray


# --------------------------------------------------------------------------------------------
# LiteRT reference kernels
# --------------------------------------------------------------------------------------------
# ai_edge_litert is importable in-process, or through a worker: DSPSIM_LITERT_PYTHON names an
# interpreter that has it (without numba or dspsim: this file then runs as ``peers.py litert-worker``).
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


def litert_invoker(model: bytes, x: np.ndarray, threads: int):
    """A call that runs the model on ``x`` with LiteRT's reference kernels and returns the output."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     num_threads=threads)
    it.allocate_tensors()
    i_in, i_out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]

    def call():
        it.set_tensor(i_in, x)
        it.invoke()
        return it.get_tensor(i_out)
    return call


_LITERT_KEYS = ("x", "w", "bias", "s_in", "s_w", "s_out", "zi", "zo", "scale", "zp")


def _litert(case, p, threads):
    import os
    op = case.op if case.op in KERNEL_OPS else "quantize"
    arrays = {k: np.asarray(p[k]) for k in _LITERT_KEYS if k in p}
    try:
        import ai_edge_litert  # noqa: F401
        runner = Runner("", litert_invoker(litert_model(op, arrays), arrays["x"], threads))
    except ImportError:
        python = os.environ.get("DSPSIM_LITERT_PYTHON")
        if not python:
            raise Unavailable("ai_edge_litert not importable (set DSPSIM_LITERT_PYTHON to a python that has it)") \
                from None
        runner = Runner("", measure=lambda repeats, budget: _litert_subprocess(
            python, op, arrays, threads, repeats, budget))
    if op == "fully_connected":  # LiteRT's reference FC requantizes in double (docs/engines.md)
        import dspsim
        from dspsim.requant import Requant
        rq = Requant.from_scales(p["s_in"], p["s_w"], p["s_out"], engine="litert", op="fully_connected")
        runner.compared_with = "dspsim requant=litert-fc"
        runner.reference = lambda: dspsim.fully_connected(
            p["x"], p["w"], p["bias"], input_zero_point=p["zi"], weight_zero_point=p["zw"],
            output_zero_point=p["zo"], requant=rq, out_dtype=p["out_dtype"])
    return runner


def _litert_subprocess(python, op, arrays, threads, repeats, budget):
    """Run the LiteRT peer in ``python``; returns (output, min s, median s, runs) as measured there."""
    import statistics
    import subprocess
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        src, dst = Path(d) / "in.npz", Path(d) / "out.npz"
        np.savez(src, **arrays)
        cmd = [python, __file__, "litert-worker", op, str(src), str(dst), str(threads), str(repeats), str(budget)]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if res.returncode != 0:
            raise RuntimeError(f"LiteRT worker failed: {res.stderr.strip().splitlines()[-1:]}")
        with np.load(dst) as f:
            out, times = f["y"], f["times"]
    return out, float(times.min()), float(statistics.median(times)), len(times)


def _litert_worker(op, src, dst, threads, repeats, budget):
    """Entry point under an interpreter with ai_edge_litert: build, warm up, time, save."""
    import time
    with np.load(src) as f:
        arrays = {k: f[k] for k in f.files}
    call = litert_invoker(litert_model(op, arrays), arrays["x"], int(threads))
    y = call()  # warm-up, untimed
    times, deadline = [], time.perf_counter() + float(budget)
    while len(times) < int(repeats) or (time.perf_counter() < deadline and len(times) < 100):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    np.savez(dst, y=y, times=np.array(times))


DSPSIM_DOUBLE = "dspsim rounding=double"
_PEERS = {
    ("kernel", "double"): [("numpy-int64", DSPSIM_DOUBLE, _numpy_kernel), ("litert-ref", DSPSIM_DOUBLE, _litert)],
    ("kernel", "fbgemm"): [("torch-fbgemm", "dspsim requant=fbgemm", _torch_kernel)],
    ("kernel", "onnxruntime"): [("onnxruntime", "dspsim requant=onnxruntime", _ort_kernel)],
    ("relu", "clamp"): [("numpy", "dspsim relu", _numpy_relu), ("torch", "dspsim relu", _torch_relu)],
    ("relu", "requant"): [("numpy-int64", "dspsim relu (double)", _numpy_relu)],
    ("quantize", "torch"): [("torch", "dspsim quantize_per_tensor", _torch_quantize)],
    ("quantize", "onnx"): [("onnxruntime", "dspsim quantize_linear", _ort_quantize),
                           ("numpy", "dspsim quantize_linear", _numpy_quantize)],
    ("quantize", "tflite"): [("numpy", "dspsim tflite_quantize", _numpy_quantize),
                             ("litert-ref", "dspsim tflite_quantize", _litert)],
    **{("requantize", v): [("numpy-int64" if v in ("double", "single", "shift") else "numpy-f32",
                            f"dspsim requantize[{v}]", _numpy_requantize)]
       for v in ("double", "single", "shift", "fbgemm", "onnxruntime", "xnnpack")},
}


if __name__ == "__main__" and sys.argv[1:2] == ["litert-worker"]:
    _litert_worker(*sys.argv[2:])
