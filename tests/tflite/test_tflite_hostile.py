"""The .tflite loader on the malformed models the fuzz campaigns found (issue 16 §2): each model
here is a committed one with one field rewritten where the reader decodes it."""
import os
import struct

import numpy as np
import pytest

import dspsim.tflite as tfl
import fuzz_tflite as fz

OPS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "ops")


def _read(name):
    with open(os.path.join(OPS, name), "rb") as f:
        return f.read()


def rewrite(data, what, value):
    """``data`` with the field the reader calls ``what`` set to ``value`` (in its own format)."""
    hits = [(p, c) for p, c, w in fz.decoded_fields(data, named=True) if w == what]
    assert len(hits) == 1, (what, hits)
    (pos, code), = hits
    buf = bytearray(data)
    struct.pack_into("<" + code, buf, pos, value)
    return bytes(buf)


def _tensor(model, name):
    return next(t for t in model._mdef.tensors if t.name == name)


def test_int_to_int_quantize_of_0d_tensors_runs_as_on_one_element():
    data = _read("quantize_i8_u8_rescale.tflite")
    m1 = tfl.load_model(data)
    shape = m1.inputs[0].shape
    scalar = data
    for t in (0, 1):  # both tensors 0-d: the shape vectors emptied
        scalar = rewrite(scalar, f"tensor {t} shape", 0)
    m0 = tfl.load_model(scalar)
    assert m0.inputs[0].shape == () and m0.outputs[0].shape == ()
    for v in (-128, -3, 0, 77, 127):
        y0 = m0.run([np.array(v, np.int8)])[0]
        y1 = m1.run([np.full(shape, v, np.int8)])[0]
        assert y0.shape == () and y0.dtype == y1.dtype and y0 == y1.reshape(-1)[0]


@pytest.mark.parametrize("model", ["quantize_i8_u8_rescale.tflite", "dequantize_i8.tflite"])
def test_an_elementwise_op_whose_output_shape_is_not_its_inputs_is_refused_at_load(model):
    data = _read(model)
    m = tfl.load_model(data)
    t_out = m.outputs[0].index
    bad = rewrite(data, f"tensor {t_out} shape[0]", 7)
    with pytest.raises(ValueError, match=r"^load_model: operator 0 \(\w+\): output tensor \d+ has shape .* an "
                                         r"elementwise op keeps the shape"):
        tfl.load_model(bad)


def test_zero_size_int_to_int_quantize_is_refused_at_load_not_a_zero_division():
    data = _read("quantize_i8_u8_rescale.tflite")
    bad = rewrite(data, "tensor 0 shape[0]", 0)
    with pytest.raises(ValueError, match=r"^load_model: operator 0 \(QUANTIZE\): .* keeps the shape"):
        tfl.load_model(bad)


@pytest.mark.parametrize("model, dtype, zero_point, initial", [
    ("svdf_int16_state_relu.tflite", np.int16, 2**55, 0),  # LiteRT/TFLM reset a non-int8 variable tensor to 0
    ("svdf_int16_state_relu.tflite", np.int16, 5, 0),
    ("svdf_int8_state_relu.tflite", np.int8, 200, 200 - 256),  # memset(zero point): its low byte
    ("svdf_int8_state_relu.tflite", np.int8, -3, -3),
])
def test_a_variable_tensor_starts_as_the_engines_memset_of_its_zero_point(model, dtype, zero_point, initial):
    data = _read(model)
    m = tfl.load_model(data, engine="tflm")
    state = _tensor(m, "state")
    assert state.is_variable and state.dtype == dtype
    mutant = rewrite(data, f"tensor {state.index} zero_point[0]", zero_point)
    for engine in ("litert", "tflm"):
        try:
            m = tfl.load_model(mutant, engine=engine)
        except ValueError as exc:  # a refusal of the zero point by the op's Prepare is fine too
            assert str(exc).startswith("load_model:")
            continue
        value = m.state.variables_of(m._mdef.main)[state.index]
        assert value.dtype == dtype and np.all(value == initial)
        try:
            m.run([np.zeros(i.shape, i.dtype) for i in m.inputs])
        except ValueError as exc:
            assert str(exc).startswith("Model.run")


def test_a_shape_whose_nonzero_dimensions_overflow_is_refused_even_when_a_zero_makes_it_empty():
    data = _read("mul_3x1x2x2x1__1x4x1x1x6.tflite")
    bad = data
    for k, v in enumerate((0, 2**31 - 1)):  # (0, 2^31 - 1, 2, 2, 1): empty, but 2^33 - 4 once the 0 is skipped
        bad = rewrite(bad, f"tensor 0 shape[{k}]", v)
    with pytest.raises(ValueError, match=r"^load_model: corrupt or truncated .tflite \(tensor 0 .* more than 2\^31 - 1"):
        tfl.load_model(bad)


def test_an_operator_without_the_inputs_its_prepare_reads_is_refused_not_an_index_error():
    data = _read("logistic_s2_pot_both.tflite")
    bad = rewrite(data, "operator 0 inputs", 0)  # the inputs vector emptied
    with pytest.raises(ValueError, match=r"^load_model: operator 0 \(LOGISTIC\)"):
        tfl.load_model(bad)
