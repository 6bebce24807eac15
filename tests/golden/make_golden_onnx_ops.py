"""Write tests/golden/onnx/ops.npz: one-node ONNX models of every quantization operator and type,
run by ONNX Runtime (CPUExecutionProvider, graph optimizations off) and onnx.reference.ReferenceEvaluator.

Keys ``<case>/model`` (ModelProto bytes), ``<case>/in{k}`` (TensorProto bytes of input k),
``<case>/ort{k}`` and ``<case>/ref{k}`` (TensorProto bytes of output k; absent when that engine
refused the model: ``meta`` records the error). ``meta``: 0-d JSON {versions, cases: [{name, op,
n_in, n_out, ort_error, ref_error}]}. Deterministic (seeded); about 10 s:

    python tests/golden/make_golden_onnx_ops.py
"""
import json
import os
import warnings

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

OUT = os.path.join(os.path.dirname(__file__), "onnx", "ops.npz")
ML = {TP.INT4: ml_dtypes.int4, TP.UINT4: ml_dtypes.uint4, TP.INT2: ml_dtypes.int2, TP.UINT2: ml_dtypes.uint2,
      TP.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn, TP.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
      TP.FLOAT8E5M2: ml_dtypes.float8_e5m2, TP.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
      TP.FLOAT4E2M1: ml_dtypes.float4_e2m1fn}
NP = {TP.UINT8: np.uint8, TP.INT8: np.int8, TP.UINT16: np.uint16, TP.INT16: np.int16, TP.INT32: np.int32}
INT_RANGE = {TP.UINT8: (0, 255), TP.INT8: (-128, 127), TP.UINT16: (0, 65535), TP.INT16: (-32768, 32767),
             TP.UINT4: (0, 15), TP.INT4: (-8, 7), TP.UINT2: (0, 3), TP.INT2: (-2, 1)}
FMAX = {TP.FLOAT8E4M3FN: 448.0, TP.FLOAT8E4M3FNUZ: 240.0, TP.FLOAT8E5M2: 57344.0, TP.FLOAT8E5M2FNUZ: 57344.0,
        TP.FLOAT4E2M1: 6.0}


def typed(values, t):
    dt = ML.get(t, NP.get(t))
    return np.asarray(values).astype(dt)


def tensor(v, name):
    return numpy_helper.from_array(np.asarray(v), name)


def exotic(v):
    return np.asarray(v).dtype in [np.dtype(d) for d in ML.values()]


def one_node(op, inputs, out_types, attrs, opset, decode_outputs=False, const=(), domain=""):
    """Model with every input a graph input (both engines read them at run time), except values of
    types onnxruntime's Python API cannot feed (int4, float8...), which become initializers.
    ``decode_outputs``: append DequantizeLinear(y, 1.0) so that ORT returns int4/float8 codes as floats.
    ``const``: names of inputs stored as initializers (ORT prepacks constant weights)."""
    g_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype), np.shape(v))
            for n, v in inputs if not (exotic(v) or n in const)]
    inits = [tensor(v, n) for n, v in inputs if exotic(v) or n in const]
    outs = [f"y{k}" for k in range(len(out_types))]
    nodes = [helper.make_node(op, [n for n, _ in inputs], outs, domain=domain, **attrs)]
    if decode_outputs:
        inits.append(tensor(np.float32(1.0), "one"))
        nodes += [helper.make_node("DequantizeLinear", [o, "one"], [o + "_decoded"]) for o in outs]
        outs = [o + "_decoded" for o in outs]
        out_types = [TP.FLOAT] * len(outs)
    g_out = [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, out_types)]
    g = helper.make_graph(nodes, op.lower(), g_in, g_out, initializer=inits)
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    m = helper.make_model(g, opset_imports=imports)
    m.ir_version = 10 if opset <= 21 else 11
    return m


def run_both(m, feeds, m_ort, const=()):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    res = {}
    try:
        s = ort.InferenceSession(m_ort.SerializeToString(), so, providers=["CPUExecutionProvider"])
        res["ort"] = s.run(None, {k: v for k, v in feeds.items() if not (exotic(v) or k in const)})
    except Exception as e:  # noqa: BLE001 (record the refusal)
        res["ort_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][-220:]}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res["ref"] = ReferenceEvaluator(m).run(None, {k: v for k, v in feeds.items() if k not in const})
    except Exception as e:  # noqa: BLE001
        res["ref_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return res


class Writer:
    def __init__(self):
        self.arrays, self.meta = {}, []

    def add(self, name, op, inputs, out_types, attrs=None, opset=21, const=(), domain=""):
        m = one_node(op, inputs, out_types, attrs or {}, opset, const=const, domain=domain)
        decode = any(t in ML for t in out_types)
        m_ort = one_node(op, inputs, out_types, attrs or {}, opset, decode, const, domain) if decode else m
        feeds = {n: np.asarray(v) for n, v in inputs}
        res = run_both(m, feeds, m_ort, const)
        self.arrays[f"{name}/model"] = np.frombuffer(m.SerializeToString(), np.uint8)
        for k, (n, v) in enumerate(inputs):
            self.arrays[f"{name}/in{k}"] = np.frombuffer(tensor(v, n).SerializeToString(), np.uint8)
        for eng in ("ort", "ref"):
            for k, v in enumerate(res.get(eng, [])):
                self.arrays[f"{name}/{eng}{k}"] = np.frombuffer(tensor(v, f"y{k}").SerializeToString(), np.uint8)
        self.meta.append(dict(name=name, op=op, n_in=len(inputs), n_out=len(out_types), opset=opset,
                              ort_decoded=decode,
                              ort_error=res.get("ort_error"), ref_error=res.get("ref_error")))


def float_inputs(rng, scale, lo, hi, n):
    """Values around the whole code range: ties (k + 0.5) * scale, grid points, random, beyond the range."""
    k = rng.integers(lo - 2, hi + 3, n)
    x = np.concatenate([(k + 0.5) * scale, k * scale, rng.uniform(lo - 3, hi + 3, n) * scale,
                        [0.0, -0.0, (hi + 1e3) * scale, (lo - 1e3) * scale]])
    return x.astype(np.float32)


def quantize_cases(w, rng):
    s = np.float32(0.0371)
    for t, (lo, hi) in INT_RANGE.items():
        name = TP.DataType.Name(t).lower()
        zp = typed((lo + hi + 1) // 2 - (1 if lo < 0 else 0) if hi > 3 else lo + 1, t)
        x = float_inputs(rng, float(s), lo, hi, 300 if hi > 300 else 60)
        opset = 25 if t in (TP.INT2, TP.UINT2) else 21
        w.add(f"q_{name}_tensor", "QuantizeLinear", [("x", x), ("s", s), ("zp", zp)], [t], opset=opset)
        w.add(f"dq_{name}_tensor", "DequantizeLinear",
              [("q", typed(rng.integers(lo, hi + 1, 64), t)), ("s", s), ("zp", zp)], [TP.FLOAT], opset=opset)
        sc = np.array([0.02, 0.5, 0.0371], np.float32)
        zpc = typed([lo, hi, (lo + hi) // 2], t)
        xa = np.stack([float_inputs(rng, float(v), lo, hi, 12) for v in sc], axis=1)  # (n, 3), axis 1
        w.add(f"q_{name}_axis", "QuantizeLinear", [("x", xa), ("s", sc), ("zp", zpc)], [t], opset=opset)
        xb = (rng.standard_normal((4, 6)) * 3).astype(np.float32)
        sb = np.abs(rng.standard_normal((4, 2))).astype(np.float32) * 0.3 + 0.05
        zb = typed(rng.integers(lo, hi + 1, (4, 2)), t)
        w.add(f"q_{name}_blocked", "QuantizeLinear", [("x", xb), ("s", sb), ("zp", zb)], [t],
              dict(axis=1, block_size=3), opset=opset)
        w.add(f"dq_{name}_blocked", "DequantizeLinear", [("q", typed(rng.integers(lo, hi + 1, (4, 6)), t)),
                                                         ("s", sb), ("zp", zb)], [TP.FLOAT],
              dict(axis=1, block_size=3), opset=opset)
    for t, fmax in FMAX.items():
        name = TP.DataType.Name(t).lower()
        codes = np.arange(256 if t != TP.FLOAT4E2M1 else 16, dtype=np.uint8)
        vals = codes.view(ML[t]).astype(np.float64) if t != TP.FLOAT4E2M1 else \
            np.array([ml_dtypes.float4_e2m1fn(v) for v in [0, .5, 1, 1.5, 2, 3, 4, 6]], np.float64)
        vals = np.unique(np.abs(vals[np.isfinite(vals)]))
        mids = (vals[:-1] + vals[1:]) / 2
        x = np.concatenate([vals, mids, np.nextafter(mids, 0), -mids, fmax * np.array([1.03, 1.1, 1.2, 2, 100]),
                            -fmax * np.array([1.03, 1.1, 2]), rng.standard_normal(200) * fmax / 4,
                            [np.inf, -np.inf, 0.0, -0.0]]).astype(np.float32)
        opset = 23 if t == TP.FLOAT4E2M1 else 21
        zp = typed([0.0], t)[0] if t != TP.FLOAT4E2M1 else typed(0.0, t)
        for sat in (1, 0):
            attrs = dict(saturate=sat) if t != TP.FLOAT4E2M1 else {}
            if t == TP.FLOAT4E2M1 and sat == 0:
                continue
            w.add(f"q_{name}_sat{sat}", "QuantizeLinear", [("x", x), ("s", np.float32(1.0)), ("zp", zp)], [t],
                  attrs, opset=opset)
            w.add(f"q_{name}_scaled_sat{sat}", "QuantizeLinear", [("x", x), ("s", np.float32(0.37)), ("zp", zp)],
                  [t], attrs, opset=opset)
        w.add(f"dq_{name}", "DequantizeLinear", [("q", codes.view(ML[t]) if t != TP.FLOAT4E2M1 else
                                                   typed(vals, t)), ("s", np.float32(0.37))], [TP.FLOAT], opset=opset)
    xf = (rng.standard_normal(20)).astype(np.float32)
    w.add("q_uint8_float16_scale_dq", "DequantizeLinear", [("q", rng.integers(0, 256, 20).astype(np.uint8)),
                                                           ("s", np.float16(0.0371)), ("zp", np.uint8(7))],
          [TP.FLOAT16])
    del xf


def dynamic_cases(w, rng):
    for i, x in enumerate([rng.standard_normal(50) * 3, rng.uniform(0, 5, 50), -rng.uniform(0, 5, 50),
                           np.zeros(8), np.array([0.5, 0.5, 0.5]), rng.standard_normal((4, 7)) * 1e-3,
                           np.array([-1.0, 254.0]), np.array([-2.5, 0.0, 252.5]), rng.standard_normal(300) * 100]):
        w.add(f"dynamic_{i}", "DynamicQuantizeLinear", [("x", np.asarray(x, np.float32))],
              [TP.UINT8, TP.FLOAT, TP.UINT8], opset=11)


def integer_cases(w, rng):
    for ta, tb in ((np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8), (np.int8, np.uint8)):
        nm = f"{np.dtype(ta).name}_{np.dtype(tb).name}"
        ia, ib = np.iinfo(ta), np.iinfo(tb)
        a = rng.integers(ia.min, ia.max + 1, (2, 5, 37)).astype(ta)
        b = rng.integers(ib.min, ib.max + 1, (37, 11)).astype(tb)
        w.add(f"matmulinteger_{nm}_tensor", "MatMulInteger",
              [("a", a), ("b", b), ("za", ta(3)), ("zb", tb(5))], [TP.INT32], opset=10)
        # per-row a zero point: ORT refuses it (scalar only); onnx.reference broadcasts an (M,) vector
        # along K (an error for M != K), so the per-row case is given as (M, 1)
        w.add(f"matmulinteger_{nm}_rows_cols", "MatMulInteger",
              [("a", a[0]), ("b", b), ("za", rng.integers(ia.min, ia.max + 1, (5, 1)).astype(ta)),
               ("zb", rng.integers(ib.min, ib.max + 1, 11).astype(tb))], [TP.INT32], opset=10)
        w.add(f"matmulinteger_{nm}_cols", "MatMulInteger",
              [("a", a[0]), ("b", b), ("za", ta(ia.max - 9)),
               ("zb", rng.integers(ib.min, ib.max + 1, 11).astype(tb))], [TP.INT32], opset=10)
        w.add(f"matmulinteger_{nm}_const_b", "MatMulInteger",
              [("a", a), ("b", b), ("za", ta(3)), ("zb", tb(5))], [TP.INT32], opset=10, const=("b", "zb"))
        w.add(f"matmulinteger_{nm}_batched_b", "MatMulInteger",
              [("a", a), ("b", rng.integers(ib.min, ib.max + 1, (2, 37, 11)).astype(tb))], [TP.INT32], opset=10)
        x = rng.integers(ia.min, ia.max + 1, (2, 4, 9, 8)).astype(ta)
        wt = rng.integers(ib.min, ib.max + 1, (6, 2, 3, 3)).astype(tb)
        w.add(f"convinteger_{nm}_group2", "ConvInteger",
              [("x", x), ("w", wt), ("zx", ta(ia.min + 7)), ("zw", rng.integers(ib.min, ib.max + 1, 6).astype(tb))],
              [TP.INT32], dict(group=2, pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2]), opset=10)
        w.add(f"convinteger_{nm}_pads", "ConvInteger",
              [("x", x), ("w", rng.integers(ib.min, ib.max + 1, (3, 4, 3, 2)).astype(tb)), ("zx", ta(ia.min + 7)),
               ("zw", tb(ib.max - 3))], [TP.INT32], dict(pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2]),
              opset=10)
        w.add(f"convinteger_{nm}_const_w", "ConvInteger",
              [("x", x), ("w", rng.integers(ib.min, ib.max + 1, (3, 4, 3, 3)).astype(tb)), ("zx", ta(ia.min + 7)),
               ("zw", tb(ib.max - 3))], [TP.INT32], dict(pads=[1, 1, 1, 1]), opset=10, const=("w", "zw"))
        w.add(f"convinteger_{nm}_same", "ConvInteger",
              [("x", x), ("w", rng.integers(ib.min, ib.max + 1, (5, 4, 2, 3)).astype(tb)), ("zx", ta(ia.min + 100))],
              [TP.INT32], dict(auto_pad="SAME_LOWER", strides=[2, 2]), opset=10)


def qlinear_matmul_cases(w, rng):
    for ta in (np.uint8, np.int8):
        ia = np.iinfo(ta)
        nm = np.dtype(ta).name
        a = rng.integers(ia.min, ia.max + 1, (3, 6, 40)).astype(ta)
        b = rng.integers(ia.min, ia.max + 1, (3, 40, 10)).astype(ta)
        for st, dt in (("f32", np.float32), ("f16", np.float16)):
            w.add(f"qlinearmatmul_{nm}_batched_{st}", "QLinearMatMul",
                  [("a", a), ("sa", np.array([0.02], dt)), ("za", np.array([ta(3)])), ("b", b),
                   ("sb", np.array([0.0137], dt)), ("zb", np.array([ta(-4 if ta is np.int8 else 130)])),
                   ("sy", np.array([0.41], dt)), ("zy", np.array([ta(1 if ta is np.int8 else 128)]))],
                  [helper.np_dtype_to_tensor_dtype(np.dtype(ta))])
        # ties: power-of-two multiplier 2^-3 on small accumulators; odd output zero point
        a2 = rng.integers(-3, 4, (8, 4)).astype(np.int16) + (0 if ta is np.int8 else 128)
        b2 = rng.integers(-3, 4, (4, 16)).astype(np.int16) + (0 if ta is np.int8 else 128)
        w.add(f"qlinearmatmul_{nm}_ties_per_column", "QLinearMatMul",
              [("a", a2.astype(ta)), ("sa", np.float32(0.25)), ("za", ta(0 if ta is np.int8 else 128)),
               ("b", b2.astype(ta)), ("sb", np.full(16, 0.5, np.float32)),
               ("zb", np.full(16, 0 if ta is np.int8 else 128).astype(ta)), ("sy", np.float32(1.0)),
               ("zy", ta(3 if ta is np.int8 else 131))], [helper.np_dtype_to_tensor_dtype(np.dtype(ta))])


def cpu_flags():
    """The x86 features that decide MLAS's kernels (VNNI: exact u8 x s8 sums; without: pair saturation)."""
    try:
        flags = set(open("/proc/cpuinfo").read().split())
    except OSError:
        return []
    return sorted(flags & {"avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni"})


def qoperator_cases(w, rng):
    """com.microsoft QLinear ops (ORT only), uint8 and int8, with odd lengths (vector tails), broadcasting,
    scalar operands and power-of-two scales (exact ties)."""
    ms = "com.microsoft"
    for dt in (np.uint8, np.int8):
        nm, info = np.dtype(dt).name, np.iinfo(dt)
        t = helper.np_dtype_to_tensor_dtype(np.dtype(dt))
        mid = dt(0 if dt is np.int8 else 128)

        def codes(shape):
            return rng.integers(info.min, info.max + 1, shape).astype(dt)

        for op in ("QLinearAdd", "QLinearMul"):
            for tag, sa, sb, sc in (("rand", 0.031, 0.047, 0.05), ("pof2", 0.25, 0.125, 0.5)):
                for shape_a, shape_b in (((37,), (37,)), ((3, 5), (5,)), ((1,), (41,)), ((2, 33), (1,))):
                    w.add(f"{op.lower()}_{nm}_{tag}_{len(shape_a)}{len(shape_b)}_{shape_a[-1]}_{shape_b[-1]}", op,
                          [("a", codes(shape_a)), ("sa", np.float32(sa)), ("za", dt(mid + 3)), ("b", codes(shape_b)),
                           ("sb", np.float32(sb)), ("zb", dt(mid - 5)), ("sc", np.float32(sc)), ("zc", dt(mid + 1))],
                          [t], domain=ms)
        all_codes = np.arange(256).astype(np.uint8).view(dt).reshape(16, 16)
        w.add(f"qlinearsigmoid_{nm}", "QLinearSigmoid",
              [("x", all_codes), ("sx", np.float32(0.05)), ("zx", dt(mid + 7)), ("sy", np.float32(1 / 256)),
               ("zy", dt(info.min))], [t], domain=ms)
        w.add(f"qlinearleakyrelu_{nm}", "QLinearLeakyRelu", [("x", all_codes), ("sx", np.float32(0.05)),
                                                             ("zx", dt(mid - 9)), ("sy", np.float32(0.04)),
                                                             ("zy", dt(mid))], [t], dict(alpha=0.1), domain=ms)
        for shape, axis in (((4, 10), -1), ((2, 5, 3), 1)):
            w.add(f"qlinearsoftmax_{nm}_{len(shape)}d", "QLinearSoftmax",
                  [("x", codes(shape)), ("sx", np.float32(0.07)), ("zx", dt(mid)), ("sy", np.float32(1 / 256)),
                   ("zy", dt(info.min))], [t], dict(axis=axis, opset=13), domain=ms)
        x4 = codes((2, 3, 9, 9))
        for cip in (0, 1):
            w.add(f"qlinearaveragepool_{nm}_pad_cip{cip}", "QLinearAveragePool",
                  [("x", x4), ("sx", np.float32(0.02)), ("zx", dt(mid + 2)), ("sy", np.float32(0.03)),
                   ("zy", dt(mid - 1))], [t],
                  dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=cip), domain=ms)
        w.add(f"qlinearglobalaveragepool_{nm}", "QLinearGlobalAveragePool",
              [("x", codes((2, 3, 5, 7))), ("sx", np.float32(0.02)), ("zx", dt(mid + 2)), ("sy", np.float32(0.01)),
               ("zy", dt(mid - 1))], [t], dict(channels_last=0), domain=ms)
        w.add(f"qlinearconcat_{nm}", "QLinearConcat",
              [("ys", np.float32(0.05)), ("yz", dt(mid)), ("x1", codes((2, 3, 4))), ("s1", np.float32(0.05)),
               ("z1", dt(mid)), ("x2", codes((2, 5, 4))), ("s2", np.float32(0.031)), ("z2", dt(mid + 11))], [t],
              dict(axis=1), domain=ms)
        for trans_b, alpha in ((0, 1.0), (1, 0.5)):
            b = rng.integers(-128, 128, (7, 40) if trans_b else (40, 7)).astype(np.int8)  # QGemm B: int8
            w.add(f"qgemm_{nm}_s8_transb{trans_b}", "QGemm",
                  [("a", codes((5, 40))), ("sa", np.float32(0.02)), ("za", dt(mid + 3)), ("b", b),
                   ("sb", np.full(7, 0.013, np.float32) * np.arange(1, 8, dtype=np.float32)),
                   ("zb", np.zeros(7, np.int8)), ("c", rng.integers(-500, 500, 7).astype(np.int32)),
                   ("sy", np.float32(0.2)), ("zy", dt(mid - 2))], [t], dict(transB=trans_b, alpha=alpha), domain=ms,
                  const=("b", "sb", "zb", "c"))


def softmax_saturation_cases(w, rng):
    """QLinearSoftmax whose requantized value passes the type's maximum (a dominant logit, output
    zero points from min to max, 1/sy = 128, 256, 300): int8 saturates at 127 in onnxruntime 1.32."""
    for dt, zys in ((np.int8, (-128, 0, 127)), (np.uint8, (0, 200))):
        t = TP.INT8 if dt == np.int8 else TP.UINT8
        info = np.iinfo(dt)
        for zy in zys:
            for inv in (128, 256, 300):
                x = rng.integers(info.min, info.max + 1, (16, 6)).astype(dt)
                x[:6, 0] = info.max
                w.add(f"qlinearsoftmax_{np.dtype(dt).name}_saturation_zy{zy}_inv{inv}", "QLinearSoftmax",
                      [("x", x), ("sx", np.float32(0.07)), ("zx", dt(0)), ("sy", np.float32(1 / inv)), ("zy", dt(zy))],
                      [t], dict(axis=-1, opset=13), domain="com.microsoft")


def main():
    rng = np.random.default_rng(14)
    w = Writer()
    quantize_cases(w, rng)
    dynamic_cases(w, rng)
    integer_cases(w, rng)
    qlinear_matmul_cases(w, rng)
    qoperator_cases(w, rng)
    softmax_saturation_cases(w, np.random.default_rng(1413))
    versions = dict(onnx=onnx.__version__, onnxruntime=ort.__version__, numpy=np.__version__, cpu=cpu_flags())
    w.arrays["meta"] = np.array(json.dumps(dict(versions=versions, cases=w.meta)))
    np.savez_compressed(OUT, **w.arrays)
    n_ort = sum(m["ort_error"] is None for m in w.meta)
    print(f"{len(w.meta)} cases ({n_ort} run by ORT) -> {OUT} ({os.path.getsize(OUT)} bytes)")
    for m in w.meta:
        if m["ort_error"] or m["ref_error"]:
            print(" ", m["name"], m["ort_error"], m["ref_error"])


if __name__ == "__main__":
    main()
