"""A device's datapath declared as data (dspsim.DeviceProfile): TOML in, the profile's fields, TOML back, bad
files refused with the key named, and the model run under it as the fields say."""
import pathlib

import numpy as np
import pytest

import dspsim
from dspsim import Accumulator, DeviceProfile, engines
from dspsim.engines import RequantInput, RequantKind
from dspsim.engines.device import MAC_KEYS, with_options
from dspsim.fixedpoint import Rounding

HERE = pathlib.Path(__file__).parents[1]
CNN = HERE / "golden" / "models" / "cnn.tflite"
CNN_INPUT = HERE / "golden" / "dumps" / "cnn" / "input0.npy"
DOCS = HERE.parent / "docs" / "devices.md"

NPU = """
name = "acme-npu"
engine = "tflm"
summary = "int8 MACs into a 24-bit saturating register, Q15 multipliers"

[mac]
accumulator_bits = 24
accumulator_overflow = "saturate"
multiplier_bits = 15
shift_rounding = "half_up"

[depthwise_conv_2d]
rounding = "single"
bias_bits = 16
"""


def test_a_device_file_sets_every_mac_family_and_a_family_table_wins():
    p = DeviceProfile.loads(NPU)
    assert p.name == "acme-npu" and p.base == "tflm" and p.summary.startswith("int8 MACs")
    for fam in ("fully_connected", "conv_2d", "transpose_conv"):
        rule = p.mac.family(fam)
        assert rule.accumulator == Accumulator(24, "saturate")
        assert rule.requant.multiplier_bits == 15 and rule.requant.shift_rounding is Rounding.HALF_UP
        assert rule.requant.rounding == "double" and rule.bias_bits == 32
    dw = p.mac.family("depthwise_conv_2d")
    assert dw.requant.rounding == "single" and dw.bias_bits == 16 and dw.accumulator.bits == 24
    base = engines.get("tflm")
    assert (p.tflite, p.formats, p.interpreter) == (base.tflite, base.formats, base.interpreter)


def test_to_toml_reads_back_into_an_equal_profile():
    p = DeviceProfile.loads(NPU)
    q = DeviceProfile.loads(p.to_toml())
    assert q == p and q.to_toml() == p.to_toml()


def test_load_reads_a_file_and_engine_takes_its_path(tmp_path):
    f = tmp_path / "npu.toml"
    f.write_text(NPU)
    assert DeviceProfile.load(f) == DeviceProfile.loads(NPU)
    assert engines.get(str(f)).mac == DeviceProfile.loads(NPU).mac


@pytest.mark.parametrize("text, words", [
    ('engine = "tflm"\n[mac]\naccumulator_width = 24\n', "unknown key 'mac.accumulator_width'"),
    ('engine = "tflm"\n[mac]\naccumulator_bits = 12\n', r"mac.accumulator_bits must be an integer in \[16, 64\]"),
    ('engine = "tflm"\n[mac]\naccumulator_bits = true\n', "accumulator_bits must be an integer"),
    ('engine = "tflm"\n[mac]\nshift_rounding = "nearest"\n', "shift_rounding must be one of 'half_up'"),
    ('engine = "tflm"\n[mac]\npair_saturation = 1\n', "pair_saturation must be true or false"),
    ('engine = "tflm"\n[mac]\nrequantization = "float16"\n', "requantization must be one of"),
    ('engine = "tflm"\n[dense]\nbias_bits = 16\n', "unknown key 'dense'"),
    ('engine = "tflm"\nmac = 3\n', "mac must be a table"),
    ('name = "x"\n', "'engine' is required"),
    ('engine = "tflite"\n', "now 'tflm'"),
    ('engine = "onnxruntime"\n[tflite]\nrounding = "single"\n', "runs no TFLite models"),
    ('engine = "tflm"\n[tflite]\nmultiplier_bits = 15\n', "unknown key 'tflite.multiplier_bits'"),
    ('engine = tflm\n', "not valid TOML"),
    ('engine = "litert"\n[mac]\nvector_channels = 8\n',
     r"'mac.vector_channels' is not modelled there; put vector_channels in \[depthwise_conv_2d\]"),
    ('engine = "litert"\n[conv_2d]\nvector_channels = 8\n', "'conv_2d.vector_channels' is not modelled there"),
    ('engine = "litert"\n[depthwise_conv_2d]\nvector_channels = 65\n',
     r"vector_channels must be an integer in \[0, 64\]"),
])
def test_a_bad_device_file_is_refused_naming_the_key(text, words):
    with pytest.raises(ValueError, match=words) as info:
        DeviceProfile.loads(text, "npu.toml")
    assert str(info.value).startswith("npu.toml:")


def test_every_documented_key_has_its_allowed_values():
    assert set(MAC_KEYS) == {"accumulator_bits", "accumulator_overflow", "pair_saturation", "bias_bits",
                             "requantization", "multiplier_bits", "rounding", "shift_rounding", "requant_input",
                             "float_rounding", "vector_channels"}
    doc = dspsim.engines.device.__doc__
    assert all(f"``{k}``" in doc for k in MAC_KEYS)


def test_requantization_and_input_keys_set_the_rule():
    p = DeviceProfile.loads('engine = "litert"\n[mac]\nrequantization = "float32"\nfloat_rounding = "half_up"\n'
                            'requant_input = "accumulator"\n')
    rq = p.mac.conv_2d.requant
    assert rq.kind is RequantKind.FLOAT32 and rq.float_rounding is Rounding.HALF_UP
    assert rq.requant_input is RequantInput.ACCUMULATOR


def test_vector_channels_declares_the_optimized_depthwise_blocks_and_reads_back():
    """LiteRT's reference engine with the optimized depthwise kernel's blocks of 8 (ties toward +inf, the scalar
    tail's ties away from zero) is, for DEPTHWISE_CONV_2D, the rule of engine "litert-optimized"."""
    p = DeviceProfile.loads('engine = "litert"\n[depthwise_conv_2d]\nvector_channels = 8\nshift_rounding = "half_up"\n')
    rule = p.mac.depthwise_conv_2d.requant
    assert rule == engines.get("litert-optimized").mac.depthwise_conv_2d.requant
    assert rule.vector_channels == 8 and rule.scalar_rule.shift_rounding is None
    assert p.mac.conv_2d == engines.get("litert").mac.conv_2d
    assert DeviceProfile.loads(p.to_toml()) == p and "vector_channels = 8" in p.to_toml()


def test_a_device_profile_of_a_device_profile_merges_and_names_a_known_engine():
    inner = DeviceProfile.loads(NPU)
    outer = DeviceProfile.derived(inner, {"mac": {"multiplier_bits": 7}})
    assert outer.base == "tflm" and outer.mac.conv_2d.requant.multiplier_bits == 7
    assert outer.mac.conv_2d.accumulator == Accumulator(24, "saturate")
    assert 'engine = "tflm"' in outer.to_toml()


def test_with_options_is_the_load_model_shorthand_as_a_device_profile():
    base = engines.get("litert")
    assert with_options(base) is base
    p = with_options(base, Accumulator(20, "saturate"), "single")
    assert p.mac.fully_connected.accumulator == Accumulator(20, "saturate")
    assert p.tflite.rounding == "single" and p.mac.conv_2d.requant.rounding == "single"
    with pytest.raises(TypeError, match="accumulator must be a dspsim.Accumulator"):
        with_options(base, 24)
    with pytest.raises(ValueError, match="rounding must be one of"):
        with_options(base, rounding="triple")


def test_a_model_under_a_device_profile_equals_one_loaded_with_the_same_accumulator():
    x = np.load(CNN_INPUT)
    via_toml = dspsim.load_model(CNN, engine=DeviceProfile.loads(
        'engine = "litert"\n[mac]\naccumulator_bits = 16\naccumulator_overflow = "saturate"\n'))
    via_kw = dspsim.tflite.load_model(CNN, engine="litert", accumulator=Accumulator(16, "saturate"))
    plain = dspsim.load_model(CNN)
    a, b, c = (m.run([x]) for m in (via_toml, via_kw, plain))
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not all(np.array_equal(u, v) for u, v in zip(a, c))  # the register saturates on this input


def test_the_worked_profiles_of_docs_devices_load():
    text = DOCS.read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```toml\n")[1:]]
    assert len(blocks) >= 2
    for b in blocks:
        p = DeviceProfile.loads(b, "docs/devices.md")
        assert DeviceProfile.loads(p.to_toml()) == p
