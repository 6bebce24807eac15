"""dspsim.tflite against LiteRT's reference interpreter on real int8 models, tensor by tensor.

The models and every tensor LiteRT's reference kernels (``OpResolverType.BUILTIN_REF``) wrote for
them are committed in tests/golden/models (made by make_golden_tflite_models.py); these tests need
numpy only.
"""
from __future__ import annotations

import glob
import os
import struct

import numpy as np
import pytest

from dspsim.tflite import load_model

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "models")
MODELS = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(HERE, "*.npz")))


def _golden(name):
    z = np.load(os.path.join(HERE, f"{name}.npz"))
    runs = sorted({int(k.split("/")[0][1:]) for k in z.files if k.startswith("r")})
    return z, runs


def _inputs(z, r, model):
    return [z[f"r{r}/in{k}"] for k in range(len(model.inputs))]


def _same(a, b):
    """Bit-exact equality (float tensors compared by bit pattern)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return np.array_equal(a.view(np.uint32), b.view(np.uint32))
    return np.array_equal(a, b)


def _mismatches(model, z, r, source="ref"):
    """{(op index, op name): mismatching elements} over every operator output of run ``r``."""
    out = {}
    for e in model.trace(_inputs(z, r, model)):
        if e.op_index < 0:
            continue
        ref = z[f"r{r}/{source}/t{e.tensor}"]
        assert e.value.shape == ref.shape, (e.op_index, e.op, e.value.shape, ref.shape)
        if e.value.dtype.kind == "f":
            bad = np.count_nonzero(e.value.view(np.uint32) != ref.view(np.uint32))
        else:
            bad = np.count_nonzero(e.value != ref)
        out[(e.op_index, e.op)] = int(bad)
    return out


def test_golden_models_are_present():
    assert len(MODELS) >= 10  # the coverage of every supported op: tests/kernels/test_golden_ops.py


@pytest.mark.parametrize("name", MODELS)
def test_every_layer_matches_litert_reference(name):
    model = load_model(os.path.join(HERE, f"{name}.tflite"))
    z, runs = _golden(name)
    for r in runs:
        bad = {k: v for k, v in _mismatches(model, z, r).items() if v}
        assert bad == {}, f"run {r}: first diverging layer {min(bad)}; per layer {bad}"


@pytest.mark.parametrize("name", MODELS)
def test_run_returns_the_reference_outputs(name):
    model = load_model(os.path.join(HERE, f"{name}.tflite"))
    z, runs = _golden(name)
    for r in runs:
        outs = model.run(_inputs(z, r, model))
        assert len(outs) == len(model.outputs)
        for o, info in zip(outs, model.outputs):
            assert _same(o, z[f"r{r}/ref/t{info.index}"])


def test_trace_lists_inputs_then_every_operator_in_order():
    model = load_model(os.path.join(HERE, "two_inputs.tflite"))
    z, _ = _golden("two_inputs")
    tr = model.trace(_inputs(z, 0, model))
    assert [e.op for e in tr[:2]] == ["INPUT", "INPUT"]
    assert [(e.op_index, e.op) for e in tr[2:]] == model.operators
    assert [e.tensor for e in tr[:2]] == [i.index for i in model.inputs]
    assert all(isinstance(e.name, str) and e.name for e in tr)


def test_fully_connected_needs_litert_float_requantization():
    """LiteRT's reference FC rounds double(acc) * double(scale) (ties away): dspsim's MBQM FC misses."""
    total = 0
    for name in ("cnn_half",):  # its other layers are the same in both engines (TFLM's RELU6 differs: branches)
        model = load_model(os.path.join(HERE, f"{name}.tflite"), engine="tflm")
        z, runs = _golden(name)
        for r in runs:
            total += sum(v for (i, op), v in _mismatches(model, z, r).items() if op == "FULLY_CONNECTED")
    assert total > 0


def test_xnnpack_requantization_differs_from_the_reference_on_ties():
    model = load_model(os.path.join(HERE, "cnn_half.tflite"), engine="xnnpack")
    z, runs = _golden("cnn_half")
    assert sum(sum(_mismatches(model, z, r).values()) for r in runs) > 0


def test_left_shift_models_really_shift_left():
    """The *_left variants hold effective multipliers > 1 (QuantizeMultiplier shift > 0)."""
    from dspsim.fixedpoint import quantize_multiplier
    from dspsim.tflite.flatbuffer import read_model

    mdef = read_model(open(os.path.join(HERE, "cnn_left.tflite"), "rb").read())
    shifts = []
    for op in mdef.operators:
        if op.name == "CONV_2D":
            t_in, t_w, t_out = (mdef.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
            real = np.float64(t_in.scale[0]) * t_w.scale.astype(np.float64) / np.float64(t_out.scale[0])
            shifts.extend(quantize_multiplier(real)[1].tolist())
    assert max(shifts) > 0


def test_model_bytes_and_path_load_the_same():
    path = os.path.join(HERE, "branches.tflite")
    a, b = load_model(path), load_model(open(path, "rb").read())
    z, _ = _golden("branches")
    assert all(_same(x, y) for x, y in zip(a.run(_inputs(z, 0, a)), b.run(_inputs(z, 0, b))))


def _with_custom_op(data: bytes) -> bytes:
    """The model with its first operator code turned into CUSTOM (code 32): an op no engine has."""
    from dspsim.tflite.flatbuffer import _Buf, _Table

    buf = _Buf(data)
    code = _Table(buf, buf.read("<I", 0, "root"), "Model").tables(1, "operator_codes")[0]
    out = bytearray(data)
    for slot, fmt in ((0, "<b"), (3, "<i")):  # deprecated_builtin_code, builtin_code
        pos = code._field(slot)
        if pos is not None:
            struct.pack_into(fmt, out, pos, 32)
    return bytes(out)


def test_unsupported_op_is_refused_by_name_and_version():
    data = _with_custom_op(open(os.path.join(HERE, "cnn.tflite"), "rb").read())
    with pytest.raises(ValueError, match=r"operator 0 is CUSTOM \(version \d+\), which dspsim does not support"):
        load_model(data)


def test_fused_relu6_whose_bound_overflows_int32_is_refused():
    with pytest.raises(ValueError, match="overflows int32"):
        load_model(os.path.join(HERE, "refused_relu6_overflow.tflite"))


def test_int8_concatenation_of_differently_scaled_inputs_is_refused():
    with pytest.raises(ValueError, match="CONCATENATION.*does not rescale"):
        load_model(os.path.join(HERE, "refused_concat_scales.tflite"))


@pytest.mark.parametrize("cut", [0, 3, 7, 8, 20, 100, 500, -200, -1])
def test_truncated_model_raises_value_error(cut):
    data = open(os.path.join(HERE, "cnn.tflite"), "rb").read()
    with pytest.raises(ValueError, match="load_model"):
        load_model(data[:cut])


def test_wrong_file_identifier_is_refused():
    data = bytearray(open(os.path.join(HERE, "cnn.tflite"), "rb").read())
    data[4:8] = b"XXXX"
    with pytest.raises(ValueError, match="not a TFLite flatbuffer"):
        load_model(bytes(data))


def test_corrupted_bytes_raise_value_error_or_load():
    """Random byte corruption never escapes as anything but ValueError (or a model that still loads)."""
    data = open(os.path.join(HERE, "two_inputs.tflite"), "rb").read()
    rng = np.random.default_rng(0)
    for _ in range(300):
        buf = bytearray(data)
        for pos in rng.integers(0, len(buf), size=rng.integers(1, 6)):
            buf[pos] = int(rng.integers(0, 256))
        try:
            model = load_model(bytes(buf))
        except ValueError:
            continue
        try:
            model.run([np.zeros(i.shape, i.dtype) for i in model.inputs])
        except ValueError:
            pass


def test_input_dtype_and_shape_are_checked():
    model = load_model(os.path.join(HERE, "branches.tflite"))
    shape = model.inputs[0].shape
    with pytest.raises(TypeError, match="dtype int8"):
        model.run(np.zeros(shape, np.float32))
    with pytest.raises(ValueError, match="shape"):
        model.run(np.zeros((1,) + shape, np.int8))
    with pytest.raises(ValueError, match="1 input"):
        model.run([np.zeros(shape, np.int8)] * 2)


def test_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="engine"):
        load_model(os.path.join(HERE, "cnn.tflite"), engine="onnx")


# ---------------------------------------------------------------------------- dspsim run-tflite
def test_cli_runs_a_model_on_given_inputs_and_writes_the_trace(tmp_path, capsys):
    from dspsim.harness.run_model import main as cli_main

    z, _ = _golden("two_inputs")
    paths = []
    for k in range(2):
        paths += ["--input", str(tmp_path / f"in{k}.npy")]
        np.save(paths[-1], z[f"r0/in{k}"])
    rc = cli_main([os.path.join(HERE, "two_inputs.tflite"), *paths, "--out", str(tmp_path / "out")])
    assert rc == 0
    assert "FULLY_CONNECTED" in capsys.readouterr().out
    trace = np.load(tmp_path / "out" / "trace.npz")
    for i in (int(t) for t in z["tensors"]):
        assert np.array_equal(trace[f"t{i}"], z[f"r0/ref/t{i}"])
    assert (tmp_path / "out" / "report.md").exists() and (tmp_path / "out" / "report.json").exists()


def test_cli_is_wired_as_dspsim_run_tflite(capsys):
    from dspsim.cli import main

    assert main(["run-tflite", os.path.join(HERE, "cnn.tflite"), "--seed", "3"]) == 0
    assert "DEQUANTIZE" in capsys.readouterr().out


def test_cli_reports_a_bad_model_with_exit_status_2(tmp_path, capsys):
    from dspsim.harness.run_model import main as cli_main

    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x10\x00\x00\x00TFL3" + b"\x00" * 4)
    assert cli_main([str(bad)]) == 2
    assert capsys.readouterr().err.startswith("dspsim: error: load_model: corrupt or truncated")
    custom = tmp_path / "custom.tflite"
    custom.write_bytes(_with_custom_op(open(os.path.join(HERE, "cnn.tflite"), "rb").read()))
    assert cli_main([str(custom)]) == 2
    assert "CUSTOM" in capsys.readouterr().err


def test_cli_compare_litert_needs_ai_edge_litert(capsys):
    try:
        import ai_edge_litert  # noqa: F401
        pytest.skip("ai_edge_litert is installed: the comparison itself runs")
    except ImportError:
        pass
    from dspsim.harness.run_model import main as cli_main

    assert cli_main([os.path.join(HERE, "cnn.tflite"), "--compare-litert"]) == 2
    assert "ai_edge_litert" in capsys.readouterr().err


@pytest.mark.parametrize("name", MODELS)
def test_xnnpack_engine_reproduces_litert_default_interpreter_outputs(name):
    """engine="xnnpack": fp32 FC/conv requantization, XNNPACK's ADD/MUL/MEAN/LEAKY_RELU/convert kernels."""
    model = load_model(os.path.join(HERE, f"{name}.tflite"), engine="xnnpack")
    z, runs = _golden(name)
    for r in runs:
        for k, o in enumerate(model.run(_inputs(z, r, model))):
            assert _same(o, z[f"r{r}/xnnpack/out{k}"]), (r, k)


def test_a_narrow_dsp_accumulator_runs_the_whole_model():
    """mobilenet's accumulators fit 18-bit saturating registers exactly; 17 bits already change layer 0."""
    from dspsim import Accumulator

    z, _ = _golden("mobilenet")
    path = os.path.join(HERE, "mobilenet.tflite")
    assert _mismatches(load_model(path, accumulator=Accumulator(18, "saturate")), z, 0) == \
        _mismatches(load_model(path), z, 0)
    assert sum(_mismatches(load_model(path, accumulator=Accumulator(18, "saturate")), z, 0).values()) == 0
    narrow = _mismatches(load_model(path, accumulator=Accumulator(16, "wrap")), z, 0)
    assert narrow[(0, "CONV_2D")] > 0
    with pytest.raises(TypeError, match="accumulator"):
        load_model(path, accumulator=16)


def test_cli_accumulator_option(capsys):
    from dspsim.harness.run_model import main as cli_main

    path = os.path.join(HERE, "branches.tflite")
    assert cli_main([path, "--accumulator", "24:saturate"]) == 0
    assert "engine='litert accumulator=24,saturate'" in capsys.readouterr().out
    assert cli_main([path, "--accumulator", "8"]) == 2
    assert "bits must be in [16, 64]" in capsys.readouterr().err


def test_cli_runs_a_sequence_of_frames(tmp_path, capsys):
    from dspsim.harness.run_model import main as cli_main

    path = os.path.join(HERE, "cnn.tflite")
    model = load_model(path)
    info = model.inputs[0]
    rng = np.random.default_rng(0)
    seq = rng.integers(-128, 128, size=(3,) + info.shape).astype(info.dtype)
    np.save(tmp_path / "seq.npy", seq)
    assert cli_main([path, "--input", str(tmp_path / "seq.npy")]) == 0
    out = capsys.readouterr().out
    first = model.run(seq[0])[0]
    assert "frame 0:" in out and "frame 1:" in out and "frame 2:" not in out  # the last frame is traced
    assert str(first.reshape(-1).tolist()) in out or f"in [{first.min()}, {first.max()}]" in out
    np.save(tmp_path / "bad.npy", seq[..., :1, :])
    assert cli_main([path, "--input", str(tmp_path / "bad.npy")]) == 2
