"""Peer engines that dspsim is benchmarked against, on the same integers, in the same run.

:func:`runners` returns, for a :class:`~dspsim.bench.workloads.Case` and its problem, one
:class:`~dspsim.bench.workloads.Runner` per peer: the timed call (inputs prepared, weights prepacked,
session built, all outside the timing) and how to read its result as integers in dspsim's layout
(NHWC), so that :func:`dspsim.bench.run.run_engine` can diff it against dspsim's output of the
scheme it emulates:

================== ============================================== ================================
peer               runs                                            compared with dspsim's
================== ============================================== ================================
numpy-int64        the naive bit-exact route: int64 GEMM / im2col, ``rounding="double"`` (TFLite)
                   gemmlowp MultiplyByQuantizedMultiplier in int64
torch-fbgemm       quantized::linear (prepacked), quantized::conv2d ``requant="fbgemm"`` (depthwise,
                   (channels-last), torch.quantize_per_tensor,     and linear/conv on a CPU without
                   torch.relu on a quint8 tensor                   AVX-512 VNNI: with ``Accumulator(
                                                                   pair_saturation=True)``); beside
                                                                   the int32 cores: speed only
onnxruntime        QLinearMatMul / QLinearConv / QuantizeLinear    ``requant="onnxruntime"`` (QLinear-
                                                                   MatMul/Conv without AVX-512 VNNI:
                                                                   pair saturation, as FBGEMM)
ort-matmulinteger  MatMulInteger (MLAS integer GEMM, int32 out)    ``gemm_s32``: the core's output, or
                   beside QLinearMatMul and the gemm_s32 core      the dense case's int32 sums (with
                                                                   VNNI; without: speed only, a note)
litert             LiteRT interpreter, reference kernels           ``rounding="double"`` (FC:
                   (``OpResolverType.BUILTIN_REF``), in-process or ``requant="litert"``),
                   in a worker (:mod:`dspsim.bench.litert`)        tflite_quantize
litert-xnnpack     LiteRT's default interpreter (``AUTO``: the     ``requant="xnnpack"``
                   XNNPACK delegate) on the same one-op models
================== ============================================== ================================

torch, onnxruntime and ai_edge_litert are imported lazily; a missing engine gives a skipped row.
The numpy routes are written out independently of dspsim on purpose: they are what dspsim is checked
against, like :mod:`dspsim.oracle`.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..simd.cpu import host_has_vnni
from ..interpreters import worker_python

from .litert import litert_invoker, litert_model, litert_subprocess
from .timing import error_status
from .workloads import CORE_OPS, KERNEL_OPS, Case, Runner, kernel_kwargs

NUMPY_MAX_MACS = 3e9  # the naive int64 route beyond this takes minutes


class Unavailable(Exception):
    """The peer cannot run this case (engine not installed, or out of its reach)."""


def available() -> dict:
    """Version of each peer engine (LiteRT: also XNNPACK's; tflite_micro: the model rows' TFLM), or why it is
    missing."""
    out = {"numpy": np.__version__}
    for name in ("torch", "onnxruntime", "ai_edge_litert", "tflite_micro"):
        try:
            mod = __import__(name)
            out[name] = getattr(mod, "__version__", "installed")
        except Exception as exc:
            out[name] = f"missing ({type(exc).__name__})"
    for package, dist, var in (("ai_edge_litert", "ai-edge-litert", "DSPSIM_LITERT_PYTHON"),
                               ("tflite_micro", "tflite-micro", "DSPSIM_TFLM_PYTHON")):
        if out[package].startswith("missing") and worker_python(var):
            out[package] = f"{_worker_version(worker_python(var), dist)} (worker process: {worker_python(var)})"
    return out


def _worker_version(python: str, dist: str) -> str:
    """The version of distribution ``dist`` installed for the worker interpreter ``python`` (or why not known)."""
    import subprocess

    try:
        res = subprocess.run([python, "-c", "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))", dist],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"version unknown ({type(exc).__name__})"
    return res.stdout.strip() if res.returncode == 0 else "version unknown"


def engines(case: Case) -> list[str]:
    """Names of the peers of ``case`` (installed or not)."""
    return [engine for engine, _, _ in _peers_of(case)]


def runners(case: Case, p: dict, threads: int) -> list[Runner]:
    """One :class:`Runner` per peer of ``case`` (skipped ones carry the reason: the engine is missing,
    or it failed while being set up, which must not end the other engines' run)."""
    out = []
    for engine, compared, build in _peers_of(case):
        try:
            built = build(case, p, threads)
        except Unavailable as exc:
            out.append(Runner(engine, compared_with=compared, skip=str(exc)))
            continue
        except Exception as exc:
            out.append(Runner(engine, compared_with=compared, skip=f"set-up failed ({error_status(exc)})"))
            continue
        if isinstance(built, Runner):  # a note without compared_with: its bits cannot match here, speed only
            built.engine, built.compared_with = engine, built.compared_with or ("" if built.note else compared)
            out.append(built)
        else:
            out.append(Runner(engine, *built, compared_with=compared))
    return out


def _peers_of(case: Case) -> list:
    """The (engine, compared with, builder) entries of ``case``: those of its family, then its op's own."""
    if case.op in CORE_OPS:
        return _PEERS.get((case.op, "any path"), [])
    family = ("kernel" if case.op in KERNEL_OPS else case.op, case.variant)
    own = _PEERS.get((case.op, case.variant), []) if case.op in KERNEL_OPS else []
    return _PEERS.get(family, []) + own


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


def _pair_saturated(case, p, fn, to_numpy, engine: str) -> Runner:
    """A runner diffed against dspsim with ``Accumulator(pair_saturation=True)`` (x86 ``vpmaddubsw``)."""
    import dspsim
    kw = kernel_kwargs(case, p, dspsim.Accumulator(pair_saturation=True))
    op = getattr(dspsim, case.op)
    return Runner("", fn, to_numpy, f"dspsim requant={engine}, Accumulator(pair_saturation=True)",
                  reference=lambda: op(p["x"], p["w"], p["bias"], **kw))


def _torch_kernel(case, p, threads):
    torch = _torch(threads)
    x = torch.from_numpy(p["x"])
    bias = torch.from_numpy(p["bias"])
    s_out, zo = float(p["s_out"]), int(p["zo"])
    if case.op == "fully_connected":
        qx = torch._make_per_tensor_quantized_tensor(x, float(p["s_in"]), int(p["zi"]))
        packed = torch.ops.quantized.linear_prepack(_torch_weight(torch, p["w"], p["s_w"]), bias)
        fn, to_numpy = (lambda: torch.ops.quantized.linear(qx, packed, s_out, zo)), lambda y: y.int_repr().numpy()
        return (fn, to_numpy) if host_has_vnni("fbgemm") else _pair_saturated(case, p, fn, to_numpy, "fbgemm")
    qx = torch._make_per_tensor_quantized_tensor(x.permute(0, 3, 1, 2), float(p["s_in"]), int(p["zi"]))
    assert qx.is_contiguous(memory_format=torch.channels_last)
    if case.op == "conv2d":
        qw, groups = _torch_weight(torch, p["w"], p["s_w"]), 1
    else:  # depthwise (1, 3, 3, C) -> (C, 1, 3, 3), groups = C
        qw, groups = _torch_weight(torch, np.ascontiguousarray(p["w"].transpose(3, 1, 2, 0)), p["s_w"]), p["w"].shape[3]
    packed = torch.ops.quantized.conv2d_prepack(qw, bias, [1, 1], [1, 1], [1, 1], groups)
    fn = lambda: torch.ops.quantized.conv2d(qx, packed, s_out, zo)  # noqa: E731
    to_numpy = lambda y: y.int_repr().permute(0, 2, 3, 1).numpy()  # noqa: E731
    # FBGEMM's depthwise kernel adds adjacent product pairs with int16 saturation (vpmaddubsw) even on
    # AVX-512 VNNI machines, where its GEMM-based linear/conv do not: compare with that model.
    if case.op == "conv2d" and host_has_vnni("fbgemm"):
        return fn, to_numpy
    return _pair_saturated(case, p, fn, to_numpy, "fbgemm")


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
def _onnx():
    """(onnx, onnxruntime), or Unavailable."""
    try:
        import onnx
        import onnxruntime
    except Exception as exc:
        raise Unavailable(f"onnxruntime/onnx not importable ({type(exc).__name__})") from None
    return onnx, onnxruntime


def _ort_session(nodes, inputs, outputs, inits, threads):
    onnx, ort = _onnx()
    TensorProto, helper, numpy_helper = onnx.TensorProto, onnx.helper, onnx.numpy_helper
    types = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
             np.dtype(np.int32): TensorProto.INT32, np.dtype(np.float32): TensorProto.FLOAT}
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
    helper = _onnx()[0].helper
    x, w = p["x"], p["w"]
    s_w = np.asarray(p["s_w"], np.float32)
    common = {"x_s": np.float32(p["s_in"]), "x_zp": np.uint8(p["zi"]), "y_s": np.float32(p["s_out"]),
              "y_zp": np.uint8(p["zo"]), "w_s": s_w, "w_zp": np.zeros(s_w.shape, np.int8)}
    if case.op == "fully_connected":  # QLinearMatMul has no bias: the problem's bias is 0
        node = helper.make_node("QLinearMatMul", ["x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp"], ["y"])
        fn = _ort_session([node], {"x": x}, [("y", np.uint8)], {**common, "w": np.ascontiguousarray(w.T)}, threads)
        if host_has_vnni("onnxruntime"):
            return fn, np.asarray
        return _pair_saturated(case, p, fn, np.asarray, "onnxruntime")
    if case.op == "conv2d":
        w_oihw, group = np.ascontiguousarray(w.transpose(0, 3, 1, 2)), 1
    else:
        w_oihw, group = np.ascontiguousarray(w.transpose(3, 0, 1, 2)), w.shape[3]
    node = helper.make_node("QLinearConv", ["x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp", "b"], ["y"],
                            pads=[1, 1, 1, 1], group=group, kernel_shape=[3, 3])
    x_nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    fn = _ort_session([node], {"x": x_nchw}, [("y", np.uint8)],
                      {**common, "w": w_oihw, "b": p["bias"].astype(np.int32)}, threads)
    to_numpy = lambda y: np.asarray(y).transpose(0, 2, 3, 1)  # noqa: E731
    # depthwise (group > 1) matched the plain int32 model on both the AVX2 and the AVX-512 VNNI host
    if group > 1 or host_has_vnni("onnxruntime"):
        return fn, to_numpy
    return _pair_saturated(case, p, fn, to_numpy, "onnxruntime")


def _ort_matmul_integer(case, p, threads):
    """ONNX Runtime's MatMulInteger: MLAS's u8 x s8 integer GEMM, int32 sums, no requantization.

    Diffed against dspsim's exact int32 GEMM (``gemm_s32``) on the same integers: beside a core, its
    output; beside a dense case, ``gemm_s32`` of the case's input and weights (the requantization is
    the part MatMulInteger leaves out). Without VNNI MLAS adds product pairs with ``vpmaddubsw``
    (int16 saturation), which no dspsim int32 core models: speed only, with a note."""
    helper = _onnx()[0].helper
    x, w, zi = p["x"], p["w"], p["zi"]
    node = helper.make_node("MatMulInteger", ["x", "w", "x_zp"], ["y"])
    fn = _ort_session([node], {"x": x}, [("y", np.int32)], {"w": np.ascontiguousarray(w.T), "x_zp": np.uint8(zi)},
                      threads)
    if not host_has_vnni("onnxruntime"):
        return Runner("", fn, note="not compared: MLAS without VNNI saturates adjacent u8 x s8 product pairs to "
                                   "int16 (vpmaddubsw); dspsim's gemm_s32 is exact")
    if case.op == "gemm_s32":
        return fn, np.asarray
    from ..kernels.mac import gemm
    packed = gemm.pack_weights(w)
    return Runner("", fn, compared_with="dspsim gemm_s32 (int32 sums, no requantization)",
                  reference=lambda: gemm.gemm_s32(x, packed, a_zero_point=zi))


def _ort_quantize(case, p, threads):
    helper = _onnx()[0].helper
    node = helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"])
    fn = _ort_session([node], {"x": p["x"]}, [("y", np.uint8)],
                      {"s": np.float32(p["scale"]), "zp": np.uint8(p["zp"])}, threads)
    return fn, np.asarray

def _torch_core(case, p, threads):
    """FBGEMM's quantized::linear / conv2d on the core's integers: speed only, its call also requantizes."""
    torch = _torch(threads)
    x = torch.from_numpy(p["x"])
    w = p["w"]
    zero_bias = torch.zeros(w.shape[0])
    if case.op == "gemm_s32":
        qx = torch._make_per_tensor_quantized_tensor(x, 0.05, int(p["zi"]))
        packed = torch.ops.quantized.linear_prepack(_torch_weight(torch, w, np.float32(0.02)), zero_bias)
        return (lambda: torch.ops.quantized.linear(qx, packed, 0.5, 10)), lambda y: y.int_repr().numpy()
    qx = torch._make_per_tensor_quantized_tensor(x.permute(0, 3, 1, 2), 0.05, int(p["zi"]))  # channels-last
    packed = torch.ops.quantized.conv2d_prepack(_torch_weight(torch, w, np.float32(0.02)), zero_bias,
                                                [1, 1], [1, 1], [1, 1], 1)
    return (lambda: torch.ops.quantized.conv2d(qx, packed, 0.5, 10)), lambda y: y.int_repr().permute(0, 2, 3, 1).numpy()


# --------------------------------------------------------------------------------------------
# LiteRT reference kernels (the model builder and the worker process: dspsim.bench.litert)
# --------------------------------------------------------------------------------------------
_LITERT_KEYS = ("x", "w", "bias", "s_in", "s_w", "s_out", "zi", "zo", "scale", "zp")


def _litert_runner(op, p, threads, resolver):
    """The one-op LiteRT model of the problem run by ``resolver`` (:func:`dspsim.bench.litert.litert_invoker`),
    in-process or in the worker."""
    arrays = {k: np.asarray(p[k]) for k in _LITERT_KEYS if k in p}
    try:
        import ai_edge_litert  # noqa: F401
        return Runner("", litert_invoker(litert_model(op, arrays), arrays["x"], threads, resolver))
    except ImportError:
        python = worker_python("DSPSIM_LITERT_PYTHON")
        if not python:
            raise Unavailable("ai_edge_litert not importable (set DSPSIM_LITERT_PYTHON or DSPSIM_INTERPRETER_PYTHON "
                              "to a python that has it)") from None
        return Runner("", measure=lambda repeats, budget: litert_subprocess(
            python, op, arrays, threads, repeats, budget, resolver))


def _litert(case, p, threads):
    op = case.op if case.op in KERNEL_OPS else "quantize"
    runner = _litert_runner(op, p, threads, "BUILTIN_REF")
    if op == "fully_connected":  # LiteRT's reference FC requantizes in double (docs/engines.md)
        import dspsim
        from dspsim.requant import Requant
        rq = Requant.from_scales(p["s_in"], p["s_w"], p["s_out"], engine="litert", op="fully_connected")
        runner.compared_with = "dspsim requant=litert"
        runner.reference = lambda: dspsim.fully_connected(
            p["x"], p["w"], p["bias"], input_zero_point=p["zi"], weight_zero_point=p["zw"],
            output_zero_point=p["zo"], requant=rq, out_dtype=p["out_dtype"])
    return runner


def _xnnpack(case, p, threads):
    """LiteRT's default interpreter (``OpResolverType.AUTO``: the XNNPACK delegate) on the case's one-op
    model; XNNPACK derives its own float32 scale from the tensors' scales: diffed against dspsim
    ``requant="xnnpack"`` on the same integers and scales."""
    import dspsim
    runner = _litert_runner(case.op, p, threads, "AUTO")
    kw = {k: v for k, v in kernel_kwargs(case, p).items() if k not in ("multiplier", "shift", "rounding")}
    kw.update(input_scale=p["s_in"], weight_scale=p["s_w"], output_scale=p["s_out"], requant="xnnpack")
    op = getattr(dspsim, case.op)
    runner.reference = lambda: op(p["x"], p["w"], p["bias"], **kw)
    return runner


DSPSIM_DOUBLE = "dspsim rounding=double"
_PEERS = {
    ("kernel", "double"): [("numpy-int64", DSPSIM_DOUBLE, _numpy_kernel), ("litert", DSPSIM_DOUBLE, _litert),
                           ("litert-xnnpack", "dspsim requant=xnnpack", _xnnpack)],
    ("kernel", "fbgemm"): [("torch-fbgemm", "dspsim requant=fbgemm", _torch_kernel)],
    ("kernel", "onnxruntime"): [("onnxruntime", "dspsim requant=onnxruntime", _ort_kernel)],
    ("fully_connected", "onnxruntime"): [("ort-matmulinteger", "", _ort_matmul_integer)],
    ("relu", "clamp"): [("numpy", "dspsim relu", _numpy_relu), ("torch", "dspsim relu", _torch_relu)],
    ("relu", "requant"): [("numpy-int64", "dspsim relu (double)", _numpy_relu)],
    ("quantize", "torch"): [("torch", "dspsim quantize_per_tensor", _torch_quantize)],
    ("quantize", "onnx"): [("onnxruntime", "dspsim quantize_linear", _ort_quantize),
                           ("numpy", "dspsim quantize_linear", _numpy_quantize)],
    ("quantize", "tflite"): [("numpy", "dspsim tflite_quantize", _numpy_quantize),
                             ("litert", "dspsim tflite_quantize", _litert)],
    **{("requantize", v): [("numpy-int64" if v in ("double", "single", "shift") else "numpy-f32",
                            f"dspsim requantize[{v}]", _numpy_requantize)]
       for v in ("double", "single", "shift", "fbgemm", "onnxruntime", "xnnpack")},
    ("gemm_s32", "any path"): [("torch-fbgemm", "", _torch_core),  # speed only
                               ("ort-matmulinteger", "dspsim gemm_s32", _ort_matmul_integer)],
    ("conv2d_s32", "any path"): [("torch-fbgemm", "", _torch_core)],
}

