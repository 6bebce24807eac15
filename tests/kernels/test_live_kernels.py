"""dspsim against live engines on fresh seeded random layers: PyTorch/FBGEMM quantized linear and conv,
ONNX Runtime and the ONNX reference evaluator (QLinearMatMul, QLinearConv). Skipped when the engine is
not installed. Small layers; a few seeds each.

FBGEMM's GEMM paths saturate adjacent u8*s8 product pairs to int16 on AVX2 hosts and sum exactly on
AVX512-VNNI hosts, so layers that can saturate there are checked against both models (the output must
equal one of them); the depthwise fast path saturates on every x86 host (docs/engines.md).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dspsim

F32 = np.float32
SEEDS = range(4)


# --------------------------------------------------------------------------------------------------
# PyTorch / FBGEMM
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if "fbgemm" not in torch.backends.quantized.supported_engines:
        pytest.skip("this torch build has no fbgemm quantized engine")
    warnings.filterwarnings("ignore", message=".*quantized tensor creation.*")
    return torch


def torch_weight(torch, w_torch_layout, sw):
    if np.ndim(sw):
        return torch._make_per_channel_quantized_tensor(
            torch.from_numpy(w_torch_layout), torch.from_numpy(sw.astype(np.float64)),
            torch.zeros(len(sw), dtype=torch.long), 0)
    return torch._make_per_tensor_quantized_tensor(torch.from_numpy(w_torch_layout), float(sw), 0)


def random_quant(rng, n, per_channel):
    sx = F32(rng.uniform(0.005, 0.05))
    sw = rng.uniform(0.001, 0.02, n).astype(F32) if per_channel else F32(rng.uniform(0.001, 0.02))
    so = F32(rng.uniform(0.1, 1.0))
    return sx, sw, so, int(rng.integers(0, 256)), int(rng.integers(0, 256))


def fbgemm_kwargs(sx, sw, so, zx, zo, relu):
    kw = dict(input_zero_point=zx, weight_zero_point=0, output_zero_point=zo, input_scale=float(sx),
              weight_scale=sw if np.ndim(sw) else float(sw), output_scale=float(so), requant="fbgemm",
              out_dtype="uint8")
    if relu:
        kw["act_min"] = zo
    return kw


def assert_matches_one_model(run, got):
    """``got`` equals dspsim with exact sums or with pair saturation (which one depends on the CPU)."""
    exact = run(dspsim.Accumulator())
    if np.array_equal(exact, got):
        return
    sat = run(dspsim.Accumulator(pair_saturation=True))
    assert np.array_equal(sat, got), (f"{np.count_nonzero(exact != got)} mismatches with exact sums, "
                                      f"{np.count_nonzero(sat != got)} with pair saturation")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("engine", ["fbgemm", "x86"])
@pytest.mark.parametrize("per_channel, relu", [(False, False), (True, True)])
def test_linear_matches_torch(torch, seed, engine, per_channel, relu):
    if engine not in torch.backends.quantized.supported_engines:
        pytest.skip(f"no {engine} engine")
    torch.backends.quantized.engine = engine
    rng = np.random.default_rng([seed, per_channel, relu])
    b, k, n = int(rng.integers(1, 20)), int(rng.integers(1, 80)), int(rng.integers(1, 40))
    x = rng.integers(0, 256, (b, k)).astype(np.uint8)
    w = rng.integers(-128, 128, (n, k)).astype(np.int8)
    bias = rng.normal(0, 1, n).astype(F32)
    sx, sw, so, zx, zo = random_quant(rng, n, per_channel)
    xt = torch._make_per_tensor_quantized_tensor(torch.from_numpy(x), float(sx), zx)
    packed = torch.ops.quantized.linear_prepack(torch_weight(torch, w, sw), torch.from_numpy(bias))
    fn = torch.ops.quantized.linear_relu if relu else torch.ops.quantized.linear
    got = fn(xt, packed, float(so), zo).int_repr().numpy()
    kw = fbgemm_kwargs(sx, sw, so, zx, zo, relu)
    assert_matches_one_model(lambda acc: dspsim.fully_connected(x, w, bias, accumulator=acc, **kw), got)


def torch_conv(torch, x, w_ohwi, bias, sx, sw, so, zx, zo, *, stride, pad, dilation, groups, relu):
    w_t = np.ascontiguousarray(w_ohwi.transpose(0, 3, 1, 2))
    cls = torch.ao.nn.intrinsic.quantized.ConvReLU2d if relu else torch.ao.nn.quantized.Conv2d
    mod = cls(x.shape[-1], w_t.shape[0], w_t.shape[2:], stride=stride, padding=pad, dilation=dilation, groups=groups)
    mod.set_weight_bias(torch_weight(torch, w_t, sw), torch.from_numpy(bias))
    mod.scale, mod.zero_point = float(so), zo
    xt = torch._make_per_tensor_quantized_tensor(torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))),
                                                 float(sx), zx)
    return np.ascontiguousarray(mod(xt).int_repr().numpy().transpose(0, 2, 3, 1))


@pytest.mark.parametrize("seed", SEEDS)
def test_conv2d_matches_torch_fbgemm(torch, seed):
    torch.backends.quantized.engine = "fbgemm"
    rng = np.random.default_rng([seed, 2])
    groups = int(rng.choice([1, 2]))
    icg, ocg = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    kh, kw_ = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pad = (int(rng.integers(0, 2)), int(rng.integers(0, 2)))
    x = rng.integers(0, 256, (int(rng.integers(1, 3)), 9, 8, icg * groups)).astype(np.uint8)
    w = rng.integers(-128, 128, (ocg * groups, kh, kw_, icg)).astype(np.int8)
    bias = rng.normal(0, 1, ocg * groups).astype(F32)
    per_channel, relu = bool(seed % 2), bool(seed // 2 % 2)
    sx, sw, so, zx, zo = random_quant(rng, ocg * groups, per_channel)
    got = torch_conv(torch, x, w, bias, sx, sw, so, zx, zo, stride=stride, pad=pad, dilation=dil, groups=groups,
                     relu=relu)
    kw = fbgemm_kwargs(sx, sw, so, zx, zo, relu)
    assert_matches_one_model(lambda acc: dspsim.conv2d(x, w, bias, stride=stride, dilation=dil, padding=pad,
                                                       accumulator=acc, **kw), got)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("fast_path", [True, False])
def test_depthwise_matches_torch_fbgemm(torch, seed, fast_path):
    """FBGEMM's depthwise fast path (C % 8 == 0, M <= 2, 3x3/5x5, pad (K-1)/2, stride <= 2, dilation 1)
    saturates adjacent-tap pairs on every x86 host; the other shapes take im2col + GEMM."""
    torch.backends.quantized.engine = "fbgemm"
    rng = np.random.default_rng([seed, 3, fast_path])
    c, m = 8 * int(rng.integers(1, 3)), int(rng.integers(1, 3))
    k = int(rng.choice([3, 5]))
    stride = int(rng.integers(1, 3))
    dil, pad = (1, (k - 1) // 2) if fast_path else (2, int(rng.integers(0, 3)))
    x = np.where(rng.random((1, 11, 10, c)) < 0.6, 255, rng.integers(0, 256, (1, 11, 10, c))).astype(np.uint8)
    w = np.where(rng.random((1, k, k, c * m)) < 0.6, rng.choice([-128, 127], (1, k, k, c * m)),
                 rng.integers(-128, 128, (1, k, k, c * m))).astype(np.int8)
    bias = rng.normal(0, 1, c * m).astype(F32)
    sx, sw, so, zx, zo = random_quant(rng, c * m, bool(seed % 2))
    relu = bool(seed // 2 % 2)
    got = torch_conv(torch, x, np.ascontiguousarray(w[0].transpose(2, 0, 1)[..., None]), bias, sx, sw, so, zx, zo,
                     stride=stride, pad=pad, dilation=dil, groups=c, relu=relu)
    kw = fbgemm_kwargs(sx, sw, so, zx, zo, relu)

    def run(acc):
        return dspsim.depthwise_conv2d(x, w, bias, depth_multiplier=m, stride=stride, dilation=dil, padding=pad,
                                       accumulator=acc, **kw)

    if fast_path:
        assert np.array_equal(run(dspsim.Accumulator(pair_saturation=True)), got)
    else:
        assert_matches_one_model(run, got)


# --------------------------------------------------------------------------------------------------
# ONNX Runtime and the ONNX reference evaluator
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def onnx():
    return pytest.importorskip("onnx")


def onnx_model(onnx, node, x, inits, y_dtype):
    from onnx import helper, numpy_helper
    tp = {np.dtype(np.uint8): onnx.TensorProto.UINT8, np.dtype(np.int8): onnx.TensorProto.INT8}
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", tp[x.dtype], list(x.shape))],
                              [helper.make_tensor_value_info("y", tp[np.dtype(y_dtype)], None)],
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def run_onnx(which, model, x):
    if which == "onnxruntime":
        ort = pytest.importorskip("onnxruntime")
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return sess.run(None, {"x": x})[0]
    from onnx.reference import ReferenceEvaluator
    return ReferenceEvaluator(model).run(None, {"x": x})[0]


def onnx_quant(rng, xdt, wdt, n, per_channel, ties):
    """Scales (float32), zero points; ``ties``: powers of two, so many outputs are exact halves."""
    if ties:
        sx, so = F32(2.0**-6), F32(2.0**-9)
        sw = (2.0 ** rng.integers(-8, -6, n)).astype(F32) if per_channel else F32(2.0**-7)
    else:
        sx, so = F32(rng.uniform(0.005, 0.05)), F32(rng.uniform(0.1, 1.0))
        sw = rng.uniform(0.001, 0.02, n).astype(F32) if per_channel else F32(rng.uniform(0.001, 0.02))
    info = np.iinfo(xdt)
    zx, zo = (np.asarray(rng.integers(info.min, info.max + 1), xdt) for _ in range(2))
    zw = np.asarray(0 if wdt == np.int8 else rng.integers(100, 156), wdt)
    return sx, sw, so, zx, zw, zo


def near_or_random(rng, ties, zp, shape, dtype):
    info = np.iinfo(dtype)
    if ties:   # small values around the zero point keep the scaled sums in range
        return np.clip(int(zp) + rng.integers(-8, 9, shape), info.min, info.max).astype(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


DTYPES = [(np.uint8, np.uint8), (np.int8, np.int8), (np.uint8, np.int8)]


def ort_accumulator(which, xdt, wdt):
    """ONNX Runtime's U8S8 GEMM/conv accumulator on this CPU (vpmaddubsw pair saturation without VNNI)."""
    from dspsim.simd.cpu import peer_accumulator

    if which == "onnxruntime" and np.dtype(xdt) == np.uint8 and np.dtype(wdt) == np.int8:
        return peer_accumulator("onnxruntime")
    return None


@pytest.mark.parametrize("which", ["onnxruntime", "onnx-reference"])
@pytest.mark.parametrize("xdt, wdt", DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_qlinear_matmul_matches(onnx, which, xdt, wdt, seed):
    from onnx import helper
    rng = np.random.default_rng([seed, 4, np.dtype(xdt).num, np.dtype(wdt).num])
    ties, per_channel = bool(seed % 2), bool(seed // 2 % 2)
    m, k, n = int(rng.integers(1, 20)), int(rng.integers(1, 80)), int(rng.integers(1, 40))
    sx, sw, so, zx, zw, zo = onnx_quant(rng, xdt, wdt, n, per_channel, ties)
    x = near_or_random(rng, ties, zx, (m, k), xdt)
    w = near_or_random(rng, ties, zw, (n, k), wdt)
    node = helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    inits = dict(xs=sx, xz=zx, w=np.ascontiguousarray(w.T), ws=sw, wz=np.full(n, zw) if per_channel else zw,
                 ys=so, yz=zo)
    got = run_onnx(which, onnx_model(onnx, node, x, inits, xdt), x)
    want = dspsim.fully_connected(x, w, None, input_zero_point=int(zx), weight_zero_point=int(zw),
                                  output_zero_point=int(zo), input_scale=float(sx),
                                  weight_scale=sw if per_channel else float(sw), output_scale=float(so),
                                  requant=which, out_dtype=np.dtype(xdt).name,
                                  accumulator=ort_accumulator(which, xdt, wdt))
    assert np.array_equal(got, want), f"{np.count_nonzero(got != want)} mismatches"


@pytest.mark.parametrize("which", ["onnxruntime", "onnx-reference"])
@pytest.mark.parametrize("xdt, wdt", DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_qlinear_conv_matches(onnx, which, xdt, wdt, seed):
    from onnx import helper
    rng = np.random.default_rng([seed, 5, np.dtype(xdt).num, np.dtype(wdt).num])
    ties, per_channel = bool(seed % 2), bool(seed // 2 % 2)
    depthwise = bool(rng.integers(0, 2))
    c = int(rng.integers(1, 6))
    groups = c if depthwise else int(rng.choice([1, 2]))
    c *= 1 if depthwise else groups
    mult = int(rng.integers(1, 3))
    oc = c * mult if depthwise else groups * int(rng.integers(1, 5))
    kh, kw_ = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    stride = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
    dil = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
    pads = [int(v) for v in rng.integers(0, 2, 4)]          # top, left, bottom, right (ONNX order)
    sx, sw, so, zx, zw, zo = onnx_quant(rng, xdt, wdt, oc, per_channel, ties)
    x = near_or_random(rng, ties, zx, (1, 8, 9, c), xdt)
    w = near_or_random(rng, ties, zw, (oc, kh, kw_, c // groups), wdt)
    bias = rng.integers(-200, 200, oc).astype(np.int32)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            kernel_shape=[kh, kw_], strides=stride, dilations=dil, pads=pads, group=groups)
    inits = dict(xs=sx, xz=zx, w=np.ascontiguousarray(w.transpose(0, 3, 1, 2)), ws=sw,
                 wz=np.full(oc, zw) if per_channel else zw, ys=so, yz=zo, b=bias)
    xn = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    got = run_onnx(which, onnx_model(onnx, node, xn, inits, xdt), xn).transpose(0, 2, 3, 1)
    kw = dict(stride=tuple(stride), dilation=tuple(dil), padding=((pads[0], pads[2]), (pads[1], pads[3])),
              input_zero_point=int(zx), weight_zero_point=int(zw), output_zero_point=int(zo),
              input_scale=float(sx), weight_scale=sw if per_channel else float(sw), output_scale=float(so),
              requant=which, out_dtype=np.dtype(xdt).name)
    if depthwise:
        want = dspsim.depthwise_conv2d(x, np.ascontiguousarray(w[..., 0].transpose(1, 2, 0)[None]), bias,
                                       depth_multiplier=mult, **kw)
    else:  # MLAS's depthwise kernel sums exactly; its conv is a U8S8 GEMM
        want = dspsim.conv2d(x, w, bias, **kw, accumulator=ort_accumulator(which, xdt, wdt))
    assert np.array_equal(got, want), f"{np.count_nonzero(got != want)} mismatches"
