"""dspsim's affine quantize/dequantize against live PyTorch (FBGEMM) and ONNX Runtime, on fresh seeded
data with exact ties.  Skipped when torch / onnx / onnxruntime are not installed."""
from __future__ import annotations

import numpy as np
import pytest

import dspsim

pytestmark = [pytest.mark.live,
              pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")]

F32 = np.float32
SEEDS = range(6)


def _x(rng, n, scale, zp, dtype, inv=None):
    """Uniform values over the code range (± 10 %), ties k + 0.5 in code space, and the SEMANTICS 9
    probe.  ``inv``: also ties of f32(x * inv) (torch multiplies by the float reciprocal)."""
    info = np.iinfo(dtype)
    lo, hi = (info.min - zp) * scale, (info.max - zp) * scale
    if info.bits == 32:
        lo, hi = -(2.0 ** 25) * scale, 2.0 ** 25 * scale
    x = rng.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), n)
    k = rng.integers(max(info.min - zp, -(2 ** 24)) - 2, min(info.max - zp, 2 ** 24) + 2, n)
    ties = (k + 0.5) * scale
    if inv is not None:
        ties[::2] = (k[::2] + 0.5) / float(inv)
    pick = rng.random(n) < 0.4
    x[pick] = ties[pick]
    x[rng.integers(0, n)] = 0.273939937
    return x.astype(F32)


def _assert_same(got, want, what, x=None):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape)
    bits = (lambda a: a.view(np.uint32)) if want.dtype == np.float32 else (lambda a: a)
    bad = np.flatnonzero(bits(got).ravel() != bits(want).ravel())
    assert bad.size == 0, (f"{what}: {bad.size} of {want.size} mismatches at {bad[:5].tolist()}, "
                           f"x={None if x is None else np.asarray(x).ravel()[bad[:5]].tolist()}, "
                           f"engine={want.ravel()[bad[:5]].tolist()}, dspsim={got.ravel()[bad[:5]].tolist()}")


# --------------------------------------------------------------------------------------------------
# PyTorch
# --------------------------------------------------------------------------------------------------

TORCH_TYPES = {"uint8": ("quint8", np.uint8), "int8": ("qint8", np.int8), "int32": ("qint32", np.int32)}


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if "fbgemm" not in torch.backends.quantized.supported_engines:
        pytest.skip("torch without the fbgemm quantized engine")
    torch.backends.quantized.engine = "fbgemm"
    return torch


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", sorted(TORCH_TYPES))
def test_quantize_per_tensor_matches_live_torch(torch, dtype, seed):
    tname, dt = TORCH_TYPES[dtype]
    rng = np.random.default_rng([seed, 1])
    info = np.iinfo(dt)
    for _ in range(8):
        scale = float(np.exp(rng.uniform(np.log(1e-4), np.log(10.0))))
        if rng.random() < 0.3:
            scale = float(2.0 ** rng.integers(-10, 3))
        zp = int(rng.integers(max(info.min, -1000), min(info.max, 1000) + 1))
        n = int(rng.integers(1, 300))
        x = _x(rng, n, scale, zp, dt, inv=F32(1) / F32(scale))
        qt = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, getattr(torch, tname))
        want = qt.int_repr().numpy()
        _assert_same(dspsim.quantize_per_tensor(x, scale, zp, dtype), want, f"q s={scale!r} zp={zp}", x)
        _assert_same(dspsim.dequantize_per_tensor(want, scale, zp), qt.dequantize().numpy(),
                     f"dq s={scale!r} zp={zp}", want)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", sorted(TORCH_TYPES))
def test_quantize_per_channel_matches_live_torch(torch, dtype, seed):
    tname, dt = TORCH_TYPES[dtype]
    rng = np.random.default_rng([seed, 2])
    info = np.iinfo(dt)
    for shape, axis in (((3, 29), 0), ((17, 4), 1), ((2, 5, 13), 1)):
        c = shape[axis]
        scales = np.exp(rng.uniform(np.log(1e-3), np.log(4.0), c))
        zps = rng.integers(max(info.min, -500), min(info.max, 500) + 1, c).astype(np.int64)
        x = np.empty(shape, F32)
        for j in range(c):
            idx = (slice(None),) * axis + (j,)
            x[idx] = _x(rng, x[idx].size, scales[j], int(zps[j]), dt,
                        inv=F32(1) / F32(scales[j])).reshape(x[idx].shape)
        qt = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales), torch.from_numpy(zps),
                                        axis, getattr(torch, tname))
        want = qt.int_repr().numpy()
        _assert_same(dspsim.quantize_per_channel(x, scales, zps, axis, dtype), want, f"q {shape}", x)
        _assert_same(dspsim.dequantize_per_channel(want, scales, zps, axis), qt.dequantize().numpy(),
                     f"dq {shape}", want)


# --------------------------------------------------------------------------------------------------
# ONNX Runtime (and onnx.reference on finite x)
# --------------------------------------------------------------------------------------------------

ONNX_TYPES = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16, "uint16": np.uint16}


@pytest.fixture(scope="module")
def ort_run():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    def run(op, x, scale, zp, axis, out_elem):
        attrs = {} if axis is None else {"axis": axis}
        node = helper.make_node(op, ["x", "s", "z"], ["y"], **attrs)
        in_elem = helper.np_dtype_to_tensor_dtype(x.dtype)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", in_elem, list(x.shape))],
                              [helper.make_tensor_value_info("y", out_elem, list(x.shape))],
                              [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
        m.ir_version = 10
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(None, {"x": x})[0], ReferenceEvaluator(m).run(None, {"x": x})[0]

    run.elem = lambda dt: helper.np_dtype_to_tensor_dtype(np.dtype(dt))
    run.float = onnx.TensorProto.FLOAT
    return run


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", sorted(ONNX_TYPES))
def test_quantize_linear_matches_live_onnxruntime(ort_run, dtype, seed):
    dt = ONNX_TYPES[dtype]
    info = np.iinfo(dt)
    rng = np.random.default_rng([seed, 3])
    cases = [((int(rng.integers(1, 300)),), None, ())]
    cases += [((5, 3, 7), 1, (3,)), ((11, 4), 0, (11,)), ((2, 3, 9), -1, (9,))]
    for shape, axis, pshape in cases:
        scale = np.asarray(np.exp(rng.uniform(np.log(1e-4), np.log(10.0), pshape)), F32)
        zp = np.asarray(rng.integers(info.min, info.max + 1, pshape), dt)
        x = np.empty(shape, F32)
        if axis is None:
            x[...] = _x(rng, x.size, float(scale), int(zp), dt).reshape(shape)
        else:
            ax = axis % len(shape)
            for j in range(shape[ax]):
                idx = (slice(None),) * ax + (j,)
                x[idx] = _x(rng, x[idx].size, float(scale[j]), int(zp[j]), dt).reshape(x[idx].shape)
        q, q_ref = ort_run("QuantizeLinear", x, scale, zp, axis, ort_run.elem(dt))
        ax = 1 if axis is None else axis
        got = dspsim.quantize_linear(x, scale, zp, axis=ax, dtype=dtype)
        _assert_same(got, q, f"QuantizeLinear {shape} axis={axis}", x)
        _assert_same(got, q_ref.astype(dt), f"onnx.reference QuantizeLinear {shape}", x)
        dq, dq_ref = ort_run("DequantizeLinear", q, scale, zp, axis, ort_run.float)
        got = dspsim.dequantize_linear(q, scale, zp, axis=ax)
        _assert_same(got, dq, f"DequantizeLinear {shape}", q)
        _assert_same(got, dq_ref, f"onnx.reference DequantizeLinear {shape}", q)
