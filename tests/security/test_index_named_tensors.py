"""Issue 31: a tensor named like the index form (``t12``) never shadows another tensor's dump, nor is shadowed:
``t12`` that could mean tensor 12 or the tensor named ``t12`` is refused naming both, and ``#<index>`` always
means the index."""
import struct
from pathlib import Path

import numpy as np
import pytest

from dspsim.harness.dumps import DumpError, load_dumps
from dspsim.tflite import load_model

MODELS = Path(__file__).parents[1] / "golden" / "models"


def _cnn_with_tensor_16_named(name: bytes):
    """cnn.tflite with tensor 16 ('Relu', 4 bytes) renamed to the shorter ``name`` (its length field rewritten,
    the spare bytes NUL: every offset stays valid)."""
    data = bytearray((MODELS / "cnn.tflite").read_bytes())
    key = struct.pack("<I", 4) + b"Relu\0"
    at = bytes(data).find(key)
    assert at >= 0 and bytes(data).find(key, at + 1) < 0
    data[at:at + 9] = struct.pack("<I", len(name)) + name + b"\0" * (5 - len(name))
    model = load_model(bytes(data))
    assert model.tensor_info(16).name == name.decode()
    return model


@pytest.fixture(scope="module")
def model():
    return _cnn_with_tensor_16_named(b"t12")


@pytest.fixture(scope="module")
def trace(model):
    return {e.tensor: e.value for e in model.trace([np.load(MODELS / "cnn.npz")["r0/in0"]])}


def test_a_stem_that_is_an_index_and_another_tensors_name_is_refused_naming_both(model, trace, tmp_path):
    np.save(tmp_path / "t12.npy", trace[12])
    with pytest.raises(DumpError, match=r"'t12' could be tensor 12 or 16 .* name the dump #<tensor index>"):
        load_dumps(model, tmp_path)


def test_the_hash_index_form_reaches_both_tensors(model, trace, tmp_path):
    np.save(tmp_path / "#12.npy", trace[12])
    np.save(tmp_path / "#16.npy", trace[16])
    dumps, _ = load_dumps(model, tmp_path)
    assert sorted(dumps) == [12, 16]
    assert np.array_equal(dumps[12].value, trace[12]) and np.array_equal(dumps[16].value, trace[16])


def test_a_name_in_the_index_form_beyond_the_tensor_count_is_read_by_name(tmp_path):
    m = _cnn_with_tensor_16_named(b"t99")
    x = np.load(MODELS / "cnn.npz")["r0/in0"]
    value = {e.tensor: e.value for e in m.trace([x])}[16]
    np.save(tmp_path / "t99.npy", value)
    dumps, _ = load_dumps(m, tmp_path)
    assert list(dumps) == [16]
