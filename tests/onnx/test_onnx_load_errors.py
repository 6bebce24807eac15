"""Bad ONNX input: every refusal is a ValueError naming the node and the rule, never a protobuf or
numpy traceback. Small models are written here with a minimal protobuf encoder (no onnx package)."""
import os
import struct

import numpy as np
import pytest

import dspsim.onnx as donnx

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "onnx", "models")


# ---- a minimal protobuf writer for the test models --------------------------------------------
def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, value):
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    if isinstance(value, float):
        return varint(num << 3 | 5) + struct.pack("<f", value)
    if isinstance(value, str):
        value = value.encode()
    return varint(num << 3 | 2) + varint(len(value)) + value


def tensor(name, arr, data_type):
    arr = np.asarray(arr)
    return b"".join([*(field(1, int(d)) for d in arr.shape), field(2, data_type), field(8, name),
                     field(9, arr.tobytes())])


def value_info(name, elem_type, shape):
    dims = b"".join(field(1, field(1, d)) for d in shape)
    return field(1, name) + field(2, field(1, field(1, elem_type) + field(2, dims)))


def node(op, inputs, outputs, name="", domain="", attrs=b""):
    return b"".join([*(field(1, i) for i in inputs), *(field(2, o) for o in outputs), field(3, name),
                     field(4, op), field(7, domain), attrs])


def model(nodes, inits, inputs, outputs, opset=21, domains=()):
    g = b"".join([*(field(1, n) for n in nodes), field(2, "g"), *(field(5, t) for t in inits),
                  *(field(11, v) for v in inputs), *(field(12, v) for v in outputs)])
    ops = field(8, field(1, "") + field(2, opset)) + b"".join(field(8, field(1, d) + field(2, 1)) for d in domains)
    return field(1, 10) + ops + field(7, g)


FLOAT, UINT8, INT8, INT32 = 1, 2, 3, 6


def qdq_model(scale=0.5, zp=3, zp_type=UINT8, op="Relu", drop_init=None, opset=21):
    """input -> QuantizeLinear -> DequantizeLinear -> op -> output (float)."""
    np_zp = np.array(zp, np.uint8 if zp_type == UINT8 else np.int8) if -128 <= zp <= 255 else np.array(zp, np.int32)
    inits = {"s": tensor("s", np.array(scale, np.float32), FLOAT), "z": tensor("z", np_zp, zp_type if
                                                                               np_zp.dtype != np.int32 else INT32)}
    if drop_init:
        inits.pop(drop_init)
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["q"], "quant"), node("DequantizeLinear", ["q", "s", "z"], ["d"],
                                                                            "dequant"),
             node(op, ["d"], ["y"], "act")]
    return model(nodes, list(inits.values()), [value_info("x", FLOAT, [1, 4])], [value_info("y", FLOAT, [1, 4])],
                 opset=opset)


def test_the_hand_built_model_runs():
    m = donnx.load_model(qdq_model())
    y = m.run([np.array([[-1.0, 0.2, 0.26, 300.0]], np.float32)])[0]
    assert y.tolist() == [[0.0, 0.0, 0.5, 126.0]]


def test_unsupported_operator_is_named():
    with pytest.raises(ValueError, match=r"node 2 \(Tanh 'act'\): operator Tanh is not supported"):
        donnx.load_model(qdq_model(op="Tanh"))


@pytest.mark.parametrize("opset", [7, 9, 29])
def test_unsupported_opset_is_refused_naming_the_opset_and_the_range(opset):
    with pytest.raises(ValueError, match=rf"ai.onnx opset {opset} is outside the supported range \[10, 28\]"):
        donnx.load_model(qdq_model(opset=opset))


@pytest.mark.parametrize("opset", [22, 23, 28])
def test_recent_opsets_load(opset):
    x = np.array([[-3.0, 0.26, 1.75, 300.0]], np.float32)
    want = donnx.load_model(qdq_model(opset=21)).run([x])[0]
    assert np.array_equal(donnx.load_model(qdq_model(opset=opset)).run([x])[0], want)


def test_missing_initializer_is_named():
    with pytest.raises(ValueError, match=r"node 0 \(QuantizeLinear 'quant'\) reads 's'"):
        donnx.load_model(qdq_model(drop_init="s"))


@pytest.mark.parametrize("scale", [0.0, -0.5, float("inf"), float("nan")])
def test_scale_not_positive_and_finite_names_the_node_at_load(scale):
    with pytest.raises(ValueError, match=r"node 0 \(QuantizeLinear 'quant'\): scale input 1 .*positive and finite"):
        donnx.load_model(qdq_model(scale=scale))


def test_zero_point_outside_its_type_is_refused():
    as_int32_data = field(2, UINT8) + field(8, "z") + field(5, 300)  # a UINT8 scalar holding 300
    bad = model([node("DequantizeLinear", ["x", "s", "z"], ["y"], "dq")],
                [tensor("s", np.array(0.5, np.float32), FLOAT), as_int32_data],
                [value_info("x", UINT8, [4])], [value_info("y", FLOAT, [4])])
    with pytest.raises(ValueError, match="initializer 'z' holds values outside UINT8"):
        donnx.load_model(bad)


def test_zero_point_of_another_type_than_the_codes_names_the_node():
    bad = model([node("DequantizeLinear", ["x", "s", "z"], ["y"], "dq")],
                [tensor("s", np.array(0.5, np.float32), FLOAT), tensor("z", np.array(3, np.int8), INT8)],
                [value_info("x", UINT8, [4])], [value_info("y", FLOAT, [4])])
    m = donnx.load_model(bad)
    with pytest.raises(ValueError, match=r"node 0 \(DequantizeLinear 'dq'\).*zero point's type INT8 differs"):
        m.run([np.zeros(4, np.uint8)])


def test_mismatched_per_axis_lengths_name_the_node():
    bad = model([node("DequantizeLinear", ["x", "s", "z"], ["y"], "dq")],
                [tensor("s", np.ones(3, np.float32), FLOAT), tensor("z", np.zeros(3, np.uint8), UINT8)],
                [value_info("x", UINT8, [2, 4])], [value_info("y", FLOAT, [2, 4])])
    m = donnx.load_model(bad)
    with pytest.raises(ValueError, match=r"node 0 \(DequantizeLinear 'dq'\).*1-D with 4 values"):
        m.run([np.zeros((2, 4), np.uint8)])


def test_unknown_domain_is_refused():
    bad = model([node("Foo", ["x"], ["y"], "f", domain="com.example")], [], [value_info("x", FLOAT, [1])],
                [value_info("y", FLOAT, [1])], domains=("com.example",))
    with pytest.raises(ValueError, match="domain 'com.example' is not supported"):
        donnx.load_model(bad)


def test_corrupt_files_give_a_clear_value_error():
    data = open(os.path.join(HERE, "cnn_qop_u8s8_pt_op13.onnx"), "rb").read()
    rng = np.random.default_rng(0)
    cuts = sorted(set(rng.integers(1, len(data), 150).tolist()) | {1, 2, 3, len(data) - 1})
    for cut in cuts:
        with pytest.raises(ValueError, match="dspsim.onnx.load_model"):
            donnx.load_model(data[:cut])
    for pos in rng.integers(0, len(data), 150):
        broken = bytearray(data)
        broken[pos] ^= 0xFF
        try:
            donnx.load_model(bytes(broken))
        except ValueError as e:
            assert "dspsim.onnx.load_model" in str(e) or "node" in str(e)
    with pytest.raises(ValueError, match="empty"):
        donnx.load_model(b"")
    with pytest.raises(ValueError, match="corrupt ONNX protobuf"):
        donnx.load_model(b"\x0a\xff\xff\xff\xff\x0f")
    with pytest.raises(TypeError, match="path or bytes"):
        donnx.load_model(12)
