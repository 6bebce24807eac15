"""Accumulator-level vectors (issue 30 item 1): every MAC operator's accumulator before and after the bias and its
requantized value before the output zero point and clamp, and one output's per-tap partial sums, from the kernel
that computes the outputs: ``--stages`` / ``--partial-sums`` of ``dspsim run`` and ``dspsim export-model``."""
import json
from pathlib import Path

import numpy as np
import pytest

import dspsim
from dspsim import Accumulator, DeviceProfile, cli
from dspsim.harness import stages as stg
from dspsim.harness.export_model import FORMATS, export_model
from dspsim.kernels import conv2d_plan, depthwise_conv2d_plan, fully_connected_plan
from dspsim.harness.run_model import _random_inputs
from dspsim.tflite import load_model
from shared_models import fresh_model, tflite_micro_model
from stage_exports import assert_exported_stages

MODELS = Path(__file__).parents[1] / "golden" / "models"


def _model(name, engine="litert"):
    m = load_model(MODELS / f"{name}.tflite", engine=engine)
    z = np.load(MODELS / f"{name}.npz")
    return m, [z[f"r0/in{k}"] for k in range(len(m.inputs))]


def _capture(m, x, partial=None):
    """The stage arrays of one run of ``m`` on ``x``."""
    return stg.capture(m, m.trace(x), partial)


def _device(tmp_path, text):
    p = tmp_path / "npu.toml"
    p.write_text(text, encoding="utf-8")
    return DeviceProfile.load(p)


def _assert_stages_give_every_output(m, x, partial=None):
    """``clip(requant + zo, act_min, act_max)`` is every MAC operator's traced output, bit for bit; returns the
    stage arrays and the traced values."""
    trace = m.trace(x)
    arrays = stg.capture(m, trace, partial)
    values = {e.tensor: e.value for e in trace}
    macs = [k for k, _ in m.operators if m.has_stages(k)]
    assert macs and {f"op{k}_{s}" for k in macs for s in stg.STAGES} <= set(arrays)
    for k in macs:
        out = values[m.outputs_of(k)[0]]
        p = m.operator_params(k)
        lo, hi = p.get("act_min", np.iinfo(out.dtype).min), p.get("act_max", np.iinfo(out.dtype).max)
        got = np.clip(arrays[f"op{k}_requant"].astype(np.int64) + p["output_zero_point"], lo, hi)
        assert got.shape == out.shape and np.array_equal(got, out), (k, int(np.count_nonzero(got != out)))
    return arrays, values


@pytest.mark.parametrize("engine", ["litert", "tflm", "xnnpack", "litert-optimized"])
@pytest.mark.parametrize("name", ["cnn", "mobilenet", "branches", "cnn_pot"])
def test_requant_plus_zero_point_and_clamp_is_every_mac_output_on_the_golden_models(name, engine):
    m, x = _model(name, engine)
    arrays, _ = _assert_stages_give_every_output(m, x)
    for k in (k for k, _ in m.operators if m.has_stages(k)):  # a wide int32 accumulator: the bias adds exactly
        bias = m.tensor_value(m.operator_inputs(k)[2]).astype(np.int64)
        assert np.array_equal(arrays[f"op{k}_acc_bias"], arrays[f"op{k}_acc"].astype(np.int64) + bias)


def test_litert_stages_reproduce_litert_reference_outputs_recorded_in_the_goldens():
    m, x = _model("mobilenet")
    z = np.load(MODELS / "mobilenet.npz")
    arrays = _capture(m, x)
    for k in (k for k, _ in m.operators if m.has_stages(k)):
        t = m.outputs_of(k)[0]
        p = m.operator_params(k)
        got = np.clip(arrays[f"op{k}_requant"] + p["output_zero_point"], p["act_min"], p["act_max"])
        assert np.array_equal(got, z[f"r0/ref/t{t}"]), k


def test_a_narrow_saturating_device_accumulator_is_in_the_stages_and_still_gives_the_outputs(tmp_path):
    dev = _device(tmp_path, 'name = "npu16"\nengine = "tflm"\n[mac]\naccumulator_bits = 16\n'
                            'accumulator_overflow = "saturate"\n')
    m, x = _model("mobilenet", dev)
    arrays, _ = _assert_stages_give_every_output(m, x)
    acc = np.concatenate([arrays[f"op{k}_{s}"].reshape(-1) for k, _ in m.operators if m.has_stages(k)
                          for s in ("acc", "acc_bias")])
    assert acc.min() >= -(1 << 15) and acc.max() <= (1 << 15) - 1
    assert np.count_nonzero(np.abs(acc) >= (1 << 15) - 1) > 100  # the register saturated, often
    wide = _capture(*_model("mobilenet", "tflm"))
    assert any(not np.array_equal(arrays[key], wide[key]) for key in arrays)


@pytest.mark.parametrize("path", [tflite_micro_model("person_detect.tflite"),
                                  fresh_model("coral_mobilenet_v1_0.25_128_quant.tflite"),
                                  fresh_model("mww_v2_okay_nabu.tflite")], ids=["person_detect", "mobilenet_v1_uint8",
                                                                             "okay_nabu"])
@pytest.mark.parametrize("narrow", [False, True], ids=["engine", "npu16"])
def test_stages_give_every_mac_output_of_a_real_model(tmp_path, path, narrow):
    if path is None:
        pytest.skip("needs ../shared/models")
    engine = "litert" if "coral" in path else "tflm"
    if narrow:
        if "coral" in path:
            pytest.skip("uint8 layers: the device's base engine runs int8 only")
        engine = _device(tmp_path, 'name = "npu16"\nengine = "tflm"\n[mac]\naccumulator_bits = 16\n'
                                   'accumulator_overflow = "saturate"\n')
    m = load_model(path, engine=engine)
    _assert_stages_give_every_output(m, _random_inputs(m, 0))


def test_a_wrapping_narrow_accumulator_wraps_in_the_stages(tmp_path):
    dev = _device(tmp_path, 'name = "npu18"\nengine = "tflm"\n[mac]\naccumulator_bits = 18\n')
    m, x = _model("mobilenet", dev)
    arrays, _ = _assert_stages_give_every_output(m, x)
    wide = _capture(*_model("mobilenet", "tflm"))
    for key in arrays:
        w = wide[key].astype(np.int64)
        if key.endswith("_requant"):
            continue
        assert np.array_equal(arrays[key], (w + (1 << 17)) % (1 << 18) - (1 << 17)), key


def test_depthwise_tail_channels_take_the_scalar_loops_requantization_in_the_stages(tmp_path):
    dev = _device(tmp_path, 'name = "vec"\nengine = "tflm"\n[depthwise_conv_2d]\nvector_channels = 12\n'
                            'shift_rounding = "half_up"\n')
    m, x = _model("mobilenet", dev)
    assert any(m.operator_params(k).get("scalar_channels_from") for k, _ in m.operators)
    _assert_stages_give_every_output(m, x)


def _taps_check(m, x, k, flat):
    arrays, values = _assert_stages_give_every_output(m, x, (k, flat))
    taps = {f: arrays[f"op{k}_taps_{f}"].astype(np.int64) for f in stg.TAP_FIELDS}
    assert taps["partial_sum"][-1] == arrays[f"op{k}_acc"].reshape(-1)[flat]
    contrib = np.diff(np.concatenate([[0], taps["partial_sum"]]))
    mac = (taps["x"] - taps["x_zero_point"]) * (taps["w"] - taps["w_zero_point"])
    assert np.array_equal(contrib, np.where(taps["kind"] == 0, mac, 0))
    return taps, values


def test_conv_taps_run_filter_y_then_filter_x_then_input_channel_with_padding_taps_marked():
    m, x = _model("mobilenet")
    k = 0  # CONV_2D 32x32 -> 16x16, 3x3, stride 2, SAME: pad_top 0, pad_bottom 1
    w = m.tensor_value(m.operator_inputs(k)[1])
    oy, ox, oc = 15, 15, 5  # the bottom-right output: its last filter row and column are padding
    taps, values = _taps_check(m, x, k, (oy * 16 + ox) * 16 + oc)
    src = values[m.operator_inputs(k)[0]][0]
    kh, kw, ic = w.shape[1:]
    assert src.shape[:2] == (32, 32) and (kh, kw) == (3, 3)
    zx = m.operator_params(k)["input_zero_point"]
    want_x = [src[2 * oy + fy, 2 * ox + fx, c] if 2 * oy + fy < 32 and 2 * ox + fx < 32 else zx
              for fy in range(kh) for fx in range(kw) for c in range(ic)]
    assert np.array_equal(taps["x"], want_x) and np.array_equal(taps["w"], w[oc].reshape(-1))
    assert np.count_nonzero(taps["kind"] == 1) == 5 * ic


def test_depthwise_and_fully_connected_taps_end_at_the_accumulator():
    m, x = _model("mobilenet")
    dw = next(k for k, n in m.operators if n == "DEPTHWISE_CONV_2D")
    taps, _ = _taps_check(m, x, dw, 16 * 7 + 3)
    assert len(taps["x"]) == 9
    fc = next(k for k, n in m.operators if n == "FULLY_CONNECTED")
    taps, values = _taps_check(m, x, fc, 4)
    assert np.array_equal(taps["x"], values[m.operator_inputs(fc)[0]].reshape(-1))


def test_taps_of_a_saturating_accumulator_stop_at_the_rail(tmp_path):
    dev = _device(tmp_path, 'name = "npu16"\nengine = "tflm"\n[mac]\naccumulator_bits = 16\n'
                            'accumulator_overflow = "saturate"\n')
    m, x = _model("mobilenet", dev)
    k = 4  # CONV_2D, 32 input channels: long sums
    arrays = _capture(m, x, (k, 0))
    ps = arrays[f"op{k}_taps_partial_sum"].astype(np.int64)
    assert ps[-1] == arrays[f"op{k}_acc"].reshape(-1)[0]
    assert ps.min() >= -(1 << 15) and ps.max() <= (1 << 15) - 1


@pytest.mark.parametrize("make", ["conv", "depthwise", "fc"])
def test_kernel_stages_match_the_plans_output_under_every_accumulator(make):
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (1, 5, 5, 8)).astype(np.int8)
    q = dict(input_zero_point=3, output_zero_point=-4, multiplier=1 << 30, shift=-8, act_min=-100, act_max=110)
    if make == "conv":
        plan = conv2d_plan(x.shape, x.dtype, rng.integers(-128, 128, (4, 3, 3, 8)).astype(np.int8),
                           rng.integers(-9000, 9000, 4).astype(np.int32), padding="SAME", **q)
    elif make == "depthwise":
        plan = depthwise_conv2d_plan(x.shape, x.dtype, rng.integers(-128, 128, (1, 3, 3, 16)).astype(np.int8),
                                     rng.integers(-9000, 9000, 16).astype(np.int32), depth_multiplier=2,
                                     padding="SAME", **q)
    else:
        x = x.reshape(5, 40)
        plan = fully_connected_plan(x.shape, x.dtype, rng.integers(-128, 128, (6, 40)).astype(np.int8),
                                    rng.integers(-9000, 9000, 6).astype(np.int32), **q)
    for acc in (None, Accumulator(16, "saturate"), Accumulator(17), Accumulator(40)):
        st = plan.stages(x, acc, tap=3)
        out = plan.run(x, acc)
        assert np.array_equal(np.clip(st.requant + q["output_zero_point"], -100, 110), out), acc
        assert st.taps["partial_sum"][-1] == st.acc.reshape(-1)[3]


def test_stages_are_refused_on_an_operator_without_them_and_on_a_bad_tap():
    m, x = _model("cnn")
    with pytest.raises(ValueError, match=r"Model.operator_stages: operator 3 \(AVERAGE_POOL_2D\) has no"):
        m.operator_stages(3, [None])
    with pytest.raises(ValueError, match=r"tap must be a flat index in \[0, 512\)"):
        m.operator_stages(1, [np.zeros((1, 8, 8, 3), np.int8)], tap=512)


@pytest.mark.parametrize("text, rule", [("1", "expected OP:INDEX"), ("x:1", "expected OP:INDEX"),
                                        ("99:0", r"operator index must be in \[0, 11\)"),
                                        ("3:0", "not a MAC operator"), ("1:512", r"flat index must be in \[0, 512\)"),
                                        ("1:0,8,0,0", "within the output")])
def test_a_bad_partial_sums_choice_names_the_rule(text, rule):
    m, _ = _model("cnn")
    with pytest.raises(ValueError, match=rule):
        stg.parse_partial_sums(text, m)


def test_partial_sums_take_a_multi_index_or_the_same_flat_index():
    m, _ = _model("cnn")
    assert stg.parse_partial_sums("1:0,2,3,5", m) == (1, (2 * 8 + 3) * 8 + 5, (0, 2, 3, 5))
    assert stg.parse_partial_sums("1:157", m)[:2] == (1, 157)


def test_run_writes_stages_and_taps_into_trace_npz_and_report(tmp_path, capsys):
    out = tmp_path / "r"
    assert cli.main(["run", str(MODELS / "cnn.tflite"), "--stages", "--partial-sums", "9:0,4", "--out",
                     str(out)]) == 0
    assert "partial sums of operator 9's output (0, 4): 64 taps" in capsys.readouterr().out
    z = np.load(out / "trace.npz")
    assert {"op1_acc", "op2_acc_bias", "op9_requant", "op9_taps_partial_sum"} <= set(z.files)
    assert z["op9_taps_partial_sum"][-1] == z["op9_acc"].reshape(-1)[4]
    rep = json.loads((out / "report.json").read_text())["stages"]
    assert [o["op_index"] for o in rep["operators"]] == [1, 2, 9] and rep["partial_sums"]["flat_index"] == 4
    md = (out / "report.md").read_text()
    assert "## Partial sums of operator 9, output (0, 4)" in md
    assert md.rstrip().splitlines()[-1].endswith(f"| {z['op9_acc'].reshape(-1)[4]} |")  # the last tap's sum: acc


def test_run_without_stages_writes_no_stage_entries(tmp_path, capsys):
    out = tmp_path / "r"
    assert cli.main(["run", str(MODELS / "cnn.tflite"), "--out", str(out)]) == 0
    assert not [f for f in np.load(out / "trace.npz").files if f.startswith("op")]
    assert json.loads((out / "report.json").read_text())["stages"] is None


def test_run_refuses_a_bad_partial_sums_in_one_line(capsys):
    assert cli.main(["run", str(MODELS / "cnn.tflite"), "--partial-sums", "3:0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "operator 3 (AVERAGE_POOL_2D) is not a MAC operator" in err


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_model_writes_the_stage_vectors_in_every_format(tmp_path, fmt):
    m, x = _model("cnn")
    man = export_model(m, x, fmt, tmp_path, stages=True, partial_sums="2:0,1,1,7")
    m.reset()
    want = _capture(m, x, (2, (1 * 4 + 1) * 8 + 7))
    assert_exported_stages(tmp_path, man, want, fmt)
    assert json.loads((tmp_path / "manifest.json").read_text())["stages"]["partial_sums"]["index"] == [0, 1, 1, 7]


def test_export_model_cli_refuses_a_bad_partial_sums_before_writing(tmp_path, capsys):
    m, x = _model("cnn")
    np.save(tmp_path / "x.npy", x[0])
    out = tmp_path / "e"
    assert cli.main(["export-model", str(MODELS / "cnn.tflite"), "--input", str(tmp_path / "x.npy"),
                     "--partial-sums", "5:0", "--out", str(out)]) == 2
    assert "not a MAC operator" in capsys.readouterr().err and not out.exists()


OPS = Path(__file__).parents[1] / "golden" / "ops"


@pytest.mark.parametrize("engine", ["litert", "tflm", "xnnpack"])
@pytest.mark.parametrize("name", ["tconv_s1_same", "tconv_s2_same", "tconv_s3_k2", "tconv16_s2_same",
                                  "tconv16_s1_valid_nobias"])
def test_transpose_conv_stages_give_its_output_and_its_taps_end_at_the_accumulator(name, engine):
    m = load_model(OPS / f"{name}.tflite", engine=engine)
    k = next(k for k, n in m.operators if n == "TRANSPOSE_CONV")
    size = int(np.prod(m.tensor_info(m.outputs_of(k)[0]).shape))
    arrays, values = _assert_stages_give_every_output(m, _random_inputs(m, 0), (k, size // 2))
    taps = {f: arrays[f"op{k}_taps_{f}"].astype(np.int64) for f in stg.TAP_FIELDS}
    assert len(taps["x"]) and taps["partial_sum"][-1] == arrays[f"op{k}_acc"].reshape(-1)[size // 2]
    contrib = np.diff(np.concatenate([[0], taps["partial_sum"]]))
    assert np.array_equal(contrib, (taps["x"] - taps["x_zero_point"]) * taps["w"])
    assert set(taps["x"].tolist()) <= set(values[m.operator_inputs(k)[2]].reshape(-1).tolist())


def test_pair_saturation_taps_sum_by_pairs_and_end_with_the_zero_point_correction(tmp_path):
    path = fresh_model("coral_mobilenet_v1_0.25_128_quant.tflite")  # uint8 activations: vpmaddubsw's operands
    if path is None:
        pytest.skip("needs ../shared/models")
    m = load_model(path, engine=_device(tmp_path, 'name = "x86"\nengine = "litert"\n[mac]\npair_saturation = true\n'))
    k = 1  # DEPTHWISE_CONV_2D, 3x3: 9 taps, pairs (0, 1) .. (6, 7), 8 alone
    arrays, _ = _assert_stages_give_every_output(m, _random_inputs(m, 0), (k, 7))
    kind, ps = arrays[f"op{k}_taps_kind"], arrays[f"op{k}_taps_partial_sum"]
    assert kind[-1] == 2 and len(kind) == 10 and ps[-1] == arrays[f"op{k}_acc"].reshape(-1)[7]
    assert all(ps[i] == (ps[i - 1] if i else 0) for i in (0, 2, 4, 6))  # a pair's first tap adds nothing yet


@pytest.mark.parametrize("engine", ["litert", "tflm", "xnnpack"])
@pytest.mark.parametrize("name", ["batch_matmul", "batch_matmul_broadcast", "batch_matmul_adj_x", "batch_matmul_adj_y",
                                  "arith_batch_matmul_rhs_zp0", "i16v_batch_matmul_adj_x_broadcast"])
def test_batch_matmul_stages_give_its_output_and_its_taps_run_over_k(name, engine):
    m = load_model(OPS / f"{name}.tflite", engine=engine)
    k = next(k for k, n in m.operators if n == "BATCH_MATMUL")
    shape = m.tensor_info(m.outputs_of(k)[0]).shape
    flat = int(np.prod(shape)) - 2
    arrays, values = _assert_stages_give_every_output(m, _random_inputs(m, 0), (k, flat))
    assert np.array_equal(arrays[f"op{k}_acc"], arrays[f"op{k}_acc_bias"])  # no bias
    taps = {f: arrays[f"op{k}_taps_{f}"].astype(np.int64) for f in stg.TAP_FIELDS}
    assert taps["partial_sum"][-1] == arrays[f"op{k}_acc"].reshape(-1)[flat]
    contrib = np.diff(np.concatenate([[0], taps["partial_sum"]]))
    assert np.array_equal(contrib, (taps["x"] - taps["x_zero_point"]) * (taps["w"] - taps["w_zero_point"]))
    lhs = values[m.operator_inputs(k)[0]] if m.tensor_value(m.operator_inputs(k)[0]) is None \
        else m.tensor_value(m.operator_inputs(k)[0])
    assert set(taps["x"].tolist()) <= set(lhs.reshape(-1).tolist())


def test_stages_on_a_model_without_mac_stages_say_so_in_one_line(tmp_path, capsys):
    onnx_model = Path(__file__).parents[1] / "golden" / "onnx" / "models" / "mlp_qdq_s8s8_pc_op21.onnx"  # unfused
    assert cli.main(["run", str(onnx_model), "--stages", "--out", str(tmp_path / "r")]) == 0
    assert capsys.readouterr().err == f"dspsim: note: {stg.NO_STAGES}\n"
    assert json.loads((tmp_path / "r" / "report.json").read_text())["stages"] == {"operators": []}


ONNX_MODELS = Path(__file__).parents[1] / "golden" / "onnx" / "models"


@pytest.mark.parametrize("name, engine", [("cnn_qop_u8s8_pt_op13", "onnxruntime"),  # pair saturation (no VNNI)
                                          ("dwsep_qop_s8s8_pc_op21", "onnxruntime-vnni")])
def test_onnx_qlinearconv_stages_give_its_output_in_nchw(name, engine):
    m = dspsim.load_model(ONNX_MODELS / f"{name}.onnx", engine)
    trace = m.trace(_random_inputs(m, 0))
    convs = [k for k, n in m.operators if n == "QLinearConv"]
    assert convs and all(m.has_stages(k) for k in convs)
    arrays = stg.capture(m, trace, (convs[-1], 37))
    values = {e.tensor: e.value for e in trace}
    for k in convs:
        out = values[m.outputs_of(k)[0]]
        zo = int(np.asarray(m.tensor_value(m.operator_inputs(k)[7])).reshape(-1)[0])
        info = np.iinfo(out.dtype)
        assert np.array_equal(np.clip(arrays[f"op{k}_requant"].astype(np.int64) + zo, info.min, info.max), out)
    k = convs[-1]  # the NCHW tap 37 is the kernel's NHWC one: its last partial sum is acc there
    assert arrays[f"op{k}_taps_partial_sum"][-1] == arrays[f"op{k}_acc"].reshape(-1)[37]
    assert (arrays[f"op{k}_taps_kind"][-1] == 2) == (engine == "onnxruntime")
