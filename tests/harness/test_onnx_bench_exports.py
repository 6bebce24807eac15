"""Issue 30 item 2 for ONNX: each prepared operator's parameters (zero points, the requantization's scheme,
scales and tie rule, the accumulator, geometry, tables) in every export, as numbers and names, enough for a bench
that reads only the export to recompute the MAC operators bit for bit."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dspsim import Accumulator, Requant, load_model
from dspsim.harness.bench_params import bench_params
from dspsim.harness.export_model import export_model
from dspsim.kernels import conv2d, depthwise_conv2d, fully_connected

ONNX = Path(__file__).parents[1] / "golden" / "onnx"
QOP = sorted((ONNX / "models").glob("*_qop_*.onnx"))
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _input(path):
    return np.load(ONNX / f"models_{path.stem.split('_')[0]}.npz")[f"{path.stem}/r0/in"]


def _export(path, tmp_path, fmt="npz"):
    """Export one run of a golden model under "onnxruntime" (the AVX2 host: uint8 x int8 sums pair-saturated)."""
    m = load_model(path, engine="onnxruntime")
    out = tmp_path / f"{path.stem}-{fmt}"
    out.mkdir()
    return m, out, export_model(m, [_input(path)], fmt, out)


def _bench_keywords(p):
    """What a bench reads from one MAC operator's npz: zero points, the requantization, the accumulator, the clamp."""
    return dict(input_zero_point=int(p["input_zero_point"]), weight_zero_point=p["weight_zero_point"],
                output_zero_point=int(p["output_zero_point"]), out_dtype=str(p["out_dtype"]),
                requant=Requant.float_scale(p["scale"], str(p["requant_scheme"]), tie=str(p["tie"])),
                act_min=int(p["act_min"]), act_max=int(p["act_max"]),
                accumulator=Accumulator(int(p["accumulator_bits"]), str(p["accumulator_overflow"]),
                                        bool(p["pair_saturation"])))


def _conv(t, p, op):
    x, w = t[f"t{op['inputs'][0]}"], t[f"t{op['inputs'][3]}"]
    bias = t[f"t{op['inputs'][8]}"] if len(op["inputs"]) > 8 else None
    ohwi = w.transpose(0, 2, 3, 1)  # OIHW -> OHWI
    kw = dict(_bench_keywords(p), stride=tuple(p["stride"]), dilation=tuple(p["dilation"]),
              padding=((int(p["pad_top"]), int(p["pad_bottom"])), (int(p["pad_left"]), int(p["pad_right"]))))
    x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    if "depth_multiplier" in p:
        y = depthwise_conv2d(x, np.ascontiguousarray(ohwi.transpose(3, 1, 2, 0)), bias,
                             depth_multiplier=int(p["depth_multiplier"]), **kw)
    else:
        assert int(p["group"]) == 1
        y = conv2d(x, np.ascontiguousarray(ohwi), bias, **kw)
    return y.transpose(0, 3, 1, 2)


def _matmul(t, p, op):
    a, b = t[f"t{op['inputs'][0]}"], t[f"t{op['inputs'][3]}"]
    return fully_connected(a, np.ascontiguousarray(b.T), None, **_bench_keywords(p))


def _gemm(t, p, op):
    a, b = t[f"t{op['inputs'][0]}"], t[f"t{op['inputs'][3]}"]
    bias = t[f"t{op['inputs'][6]}"] if len(op["inputs"]) > 6 and op["inputs"][6] >= 0 else None
    assert float(p["alpha"]) == 1.0
    return fully_connected(a, np.ascontiguousarray(b if int(p["trans_b"]) else b.T), bias, **_bench_keywords(p))


@pytest.mark.parametrize("name", ["cnn_qop_u8s8_pt_op13", "dwsep_qop_s8s8_pc_op21", "mlp_qop_s8s8_pc_op21",
                                  "residual_qop_u8s8_pt_op13"])
def test_exported_parameters_alone_reproduce_qlinearconv_qlinearmatmul_and_qgemm_through_the_kernels(tmp_path,
                                                                                                      name):
    """A bench that reads only tensors.npz and each operator's .npz (explicit pads, stride, dilation, zero points,
    float32 scales per channel, the tie rule, the pair-saturating accumulator, the clamp) computes every
    QLinearConv, QLinearMatMul and QGemm output bit for bit."""
    m, out, man = _export(ONNX / "models" / f"{name}.onnx", tmp_path)
    t = np.load(out / "tensors.npz")
    checked = {}
    for op in man["operators"]:
        bench = {"QLinearConv": _conv, "QLinearMatMul": _matmul, "QGemm": _gemm}.get(op["op"])
        if bench is None:
            continue
        p = np.load(out / op["file"])
        assert np.array_equal(bench(t, p, op), t[f"t{op['outputs'][0]}"]), op["op_index"]
        checked[op["op"]] = checked.get(op["op"], 0) + 1
    assert checked.get("QLinearConv", 0) + checked.get("QLinearMatMul", 0), name
    if "u8s8" in name:  # the exported accumulator is the one that changes the bits
        assert all(bool(np.load(out / o["file"])["pair_saturation"]) for o in man["operators"]
                   if o["op"] in ("QLinearConv", "QLinearMatMul", "QGemm"))


def test_a_depthwise_qlinearconv_exports_its_depth_multiplier_and_group(tmp_path):
    m, out, man = _export(ONNX / "models" / "dwsep_qop_s8s8_pc_op21.onnx", tmp_path)
    depthwise = [np.load(out / o["file"]) for o in man["operators"] if o["op"] == "QLinearConv"
                 and "depth_multiplier" in np.load(out / o["file"])]
    assert depthwise and all(int(p["group"]) > 1 and p["scale"].dtype == np.float32 for p in depthwise)


@pytest.mark.parametrize("path", QOP, ids=lambda p: p.stem)
def test_every_onnx_parameter_is_a_number_or_a_name_never_a_repr(tmp_path, path):
    m, out, man = _export(path, tmp_path)
    want = {"QLinearConv": {"scale", "weight_zero_point", "pad_top", "stride", "pair_saturation"},
            "QLinearMatMul": {"scale", "weight_zero_point", "pair_saturation"}, "QGemm": {"scale", "trans_b"},
            "QuantizeLinear": {"scale", "zero_point", "axis", "saturate"}, "DequantizeLinear": {"scale", "zero_point"},
            "QLinearAdd": {"input1_ratio", "input2_ratio", "offset"}, "QLinearMul": {"ratio"},
            "QLinearGlobalAveragePool": {"scale", "count"}, "QLinearAveragePool": {"filter_size", "pad_right"},
            "QLinearSigmoid": {"table"}, "QLinearLeakyRelu": {"table"}, "QLinearSoftmax": {"exp_table"},
            "QLinearConcat": {"output_scale", "input0_zero_point"}, "MaxPool": {"filter_size", "stride"},
            "Resize": {"axis2_index", "axis3_index"}}
    linear = {"y1", "y2", "x1", "x2", "dy1", "dy2", "dx1", "dx2"}  # a linear Resize's corners and weights
    for op in man["operators"]:
        need = linear if op["settings"].get("mode") == "LINEAR" else want.get(op["op"], set())
        assert need <= set(op["params"]), (op["op_index"], op["op"])
        z = np.load(out / op["file"])
        for name, row in op["params"].items():
            assert np.dtype(row["dtype"]).kind in "iuf" and z[name].dtype.name == row["dtype"], (op["op"], name)
        assert all(isinstance(v, str) for v in op["settings"].values())
    assert not re.search(r"array\(|<[A-Za-z.]+ object|Rounding\.|ResizeMode\.", json.dumps(man))


def test_the_float32_scheme_is_named_with_its_tie_rule():
    m = load_model(ONNX / "models" / "cnn_qop_s8s8_pc_op21.onnx", engine="onnxruntime")
    m.run([_input(ONNX / "models" / "cnn_qop_s8s8_pc_op21.onnx")])
    conv = next(bench_params(m, k) for k, op in m.operators if op == "QLinearConv")
    assert conv.names["requant_scheme"] == "float32" and conv.names["tie"] == "HALF_TO_EVEN"
    assert conv.rounding == "float32: float32(acc) * scale in float32, rounded (ties half to even)"


def test_an_onnx_operator_shows_its_parameters_from_its_first_run():
    """The input's shape (and any scale fed as an input) decides an ONNX operator's parameters: empty at load,
    those of the last run after it."""
    path = ONNX / "models" / "cnn_qop_u8s8_pt_op13.onnx"
    m = load_model(path, engine="onnxruntime")
    conv = next(k for k, op in m.operators if op == "QLinearConv")
    assert m.operator_params(conv) == {}
    m.run([_input(path)])
    assert m.operator_params(conv)["pair_saturation"] is True


def test_the_exported_tables_are_the_ones_the_kernels_hold(tmp_path):
    """QLinearSigmoid's / QLinearLeakyRelu's table, indexed by the code's byte, is what the operator gives for
    every code; Resize's indices are where each output takes its value."""
    path = ONNX / "models" / "misc_qop_u8s8_pt_op13.onnx"
    m = load_model(path, engine="onnxruntime")
    m.run([_input(path)])
    seen = 0
    for k, op in m.operators:
        if op not in ("QLinearSigmoid", "QLinearLeakyRelu"):
            continue
        table = bench_params(m, k).numbers["table"]
        codes = np.arange(256, dtype=np.uint8).view(table.dtype)
        shape = m.tensor_info(m.operator_inputs(k)[0]).shape
        x = np.resize(codes, int(np.prod(shape))).reshape(shape) if shape else codes
        y = m.run_operator(k, [x] + [None] * 4)
        assert np.array_equal(np.asarray(y).reshape(-1), table[x.reshape(-1).view(np.uint8)])
        seen += 1
    assert seen == 2
    path = ONNX / "models" / "unet_qop_u8s8_pt_op13.onnx"
    m = load_model(path, engine="onnxruntime")
    trace = {e.tensor: e.value for e in m.trace([_input(path)])}
    k = next(k for k, op in m.operators if op == "Resize")
    p = bench_params(m, k)
    x, y = trace[m.operator_inputs(k)[0]], trace[m.outputs_of(k)[0]]
    assert np.array_equal(x[:, :, p.numbers["axis2_index"]][:, :, :, p.numbers["axis3_index"]], y)
    assert p.names["mode"] == "NEAREST" and p.names["nearest_mode"] == "ROUND_PREFER_FLOOR"


@pytest.mark.parametrize("fmt", ["hex", "bin"])
def test_every_onnx_operator_parameter_has_its_file_in_hex_and_bin(tmp_path, fmt):
    m, out, man = _export(ONNX / "models" / "residual_qop_u8s8_pt_op13.onnx", tmp_path, fmt)
    files = {p["file"] for o in man["operators"] for p in o["params"].values()}
    assert files == {p.relative_to(out).as_posix() for p in out.glob(f"op*/*.{fmt}")}
    conv = next(o for o in man["operators"] if o["op"] == "QLinearConv")
    assert {"scale", "pair_saturation", "pad_top"} <= set(conv["params"]) and conv["settings"]["tie"] == "HALF_TO_EVEN"


@needs_gcc
@pytest.mark.parametrize("name", ["cnn_qop_u8s8_pt_op13", "unet_qop_s8s8_pc_op21"])
def test_an_onnx_export_header_compiles_with_werror(tmp_path, name):
    m, out, man = _export(ONNX / "models" / f"{name}.onnx", tmp_path, "c-header")
    conv = next(o for o in man["operators"] if o["op"] == "QLinearConv")
    c = f"op{conv['op_index']:03d}"
    (out / "main.c").write_text(f'#include "model.h"\nint main(void) {{ return {c.upper()}_PAIR_SATURATION + '
                                f'(int){c}_scale[0] + (int)sizeof({c.upper()}_REQUANT_SCHEME); }}\n')
    r = subprocess.run(["gcc", "-std=c99", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic",
                        "-Wno-unused-const-variable", str(out / "main.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
