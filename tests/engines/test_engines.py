"""Engines as data (dspsim.engines): every engine one profile, one vocabulary of names, and no code path outside
the profiles that branches on an engine's name."""
import ast
import dataclasses
import pathlib

import numpy as np
import pytest

import dspsim
from dspsim import engines
from dspsim.engines import EngineProfile, ModelFormat, RequantKind
from dspsim.fixedpoint import Rounding

PACKAGE = pathlib.Path(dspsim.__file__).parent
MODELS = pathlib.Path(__file__).parents[1] / "golden" / "models"
ONNX_MODELS = pathlib.Path(__file__).parents[1] / "golden" / "onnx" / "models"
#: Where engine names may be compared: the profiles themselves; the verbs, peers and interpreters that name what
#: they run; the oracle (an independent restatement, keyed by engine name on purpose); the catalog's suite cases
#: (a case names the engine whose kernel variant it exercises); the CPU facts about peers' kernels on this host.
NAMING = ("engines", "harness", "bench", "cli.py", "interpreters.py", "load.py", "oracle", "catalog",
          "simd/cpu.py")


def test_every_named_engine_is_a_profile_under_its_own_name():
    assert set(engines.names()) == set(engines.ENGINES)
    for name, profile in engines.ENGINES.items():
        assert isinstance(profile, EngineProfile) and profile.name == name
        assert engines.get(name) is profile


def test_names_by_format_are_the_engines_that_run_it():
    tflite, onnx = engines.names(ModelFormat.TFLITE), engines.names("onnx")
    assert tflite == ("tflm", "litert", "xnnpack", "litert-optimized", "tflm-cmsis-nn",
                      "tflm-cmsis-nn-4a8f5b5", "tflm-cmsis-nn-m55")
    assert set(onnx) == {"onnxruntime", "onnxruntime-vnni", "onnxruntime-optimized", "onnx-reference"}
    assert not set(tflite) & set(onnx)


@pytest.mark.parametrize("engine, exc, words", [
    ("tflite", ValueError, "now 'tflm'"),
    ("no-such-engine", ValueError, "engine must be one of"),
    (3, TypeError, "engine must be an engine name"),
])
def test_get_refuses_what_is_not_an_engine(engine, exc, words):
    with pytest.raises(exc, match=words) as info:
        engines.get(engine, "f")
    assert str(info.value).startswith("f:")


def test_get_refuses_an_engine_of_another_format():
    with pytest.raises(ValueError, match="does not run onnx models; those that do"):
        engines.get("tflm", "load_model", "onnx")
    with pytest.raises(ValueError, match="does not run onnx models"):
        dspsim.load_model(ONNX_MODELS / "cnn_qdq_s8s8_pc_op21.onnx", engine="litert")


def test_onnxruntime_vnni_is_onnxruntime_with_exact_pairs_as_data_only():
    base, vnni = engines.get("onnxruntime"), engines.get("onnxruntime-vnni")
    assert vnni.base == "onnxruntime"
    assert base.mac.conv_2d.accumulator.pair_saturation
    assert vnni.mac.conv_2d.accumulator is None
    for field in ("formats", "interpreter", "onnx", "tflite", "defects"):
        assert getattr(vnni, field) == getattr(base, field)


def test_xnnpack_requantizes_in_float32_and_litert_fully_connected_with_a_double_scale():
    assert engines.get("xnnpack").mac.conv_2d.requant.kind is RequantKind.FLOAT32
    assert engines.get("litert").mac.fully_connected.requant.kind is RequantKind.DOUBLE_SCALE
    assert engines.get("tflm").mac.fully_connected.requant.kind is RequantKind.FIXED_POINT


def _engine_name_comparisons(path):
    """(line, text) of every comparison of something with a string literal that names an engine."""
    names = set(engines.names())
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        literals = [c.value for o in operands for c in ast.walk(o) if isinstance(c, ast.Constant)]
        if any(isinstance(v, str) and v in names for v in literals):
            hits.append((node.lineno, ast.unparse(node)))
    return hits


def test_litert_optimized_depthwise_keeps_the_scalar_tie_rule_past_its_vector_blocks():
    rule = engines.get("litert-optimized", "test").mac.depthwise_conv_2d.requant
    assert rule.vector_channels == 8 and rule.tie is Rounding.HALF_UP
    assert rule.scalar_rule.tie is Rounding.HALF_AWAY_FROM_ZERO and rule.scalar_rule.vector_channels == 0
    assert engines.get("litert", "test").mac.depthwise_conv_2d.requant.vector_channels == 0
    for bad in (-1, 65, True, 2.5):
        with pytest.raises(ValueError, match="RequantRule: vector_channels must be an int in \\[0, 64\\]"):
            dataclasses.replace(rule, vector_channels=bad)


def test_no_kernel_operator_or_runtime_branches_on_an_engine_name():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in NAMING or rel.as_posix() in NAMING:
            continue
        hits = _engine_name_comparisons(path)
        if hits:
            offenders[str(rel)] = hits
    assert offenders == {}


def test_the_name_check_finds_a_comparison_with_an_engine_name(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("def f(g):\n    return g.engine == 'tflm' or g in ('litert', 'x')\n")
    assert [ln for ln, _ in _engine_name_comparisons(src)] == [2, 2]


def test_a_derived_profile_changes_the_run_only_through_its_fields():
    """A derived profile with the same fields as its base computes the same values; one field changed
    (the conv accumulator) changes them."""
    path = MODELS / "cnn.tflite"
    x = np.load(pathlib.Path(__file__).parents[1] / "golden" / "dumps" / "cnn" / "input0.npy")
    base = engines.get("litert")
    twin = base.derive("litert-twin")
    narrow = dspsim.DeviceProfile.derived(base, {"mac": {"accumulator_bits": 16, "accumulator_overflow": "saturate"}})
    runs = {p.name: dspsim.load_model(path, engine=p).run([x]) for p in (base, twin, narrow)}
    assert all(np.array_equal(a, b) for a, b in zip(runs["litert"], runs["litert-twin"]))
    assert not all(np.array_equal(a, b) for a, b in zip(runs["litert"], runs[narrow.name]))
