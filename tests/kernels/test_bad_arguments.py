"""Bad arguments the fuzz campaign of issue 16 found accepted or answered with the wrong exception
(§1 scales that are inf or 0 in float32, §3 exception types and unnamed errors, §7 bad values):
each now raises a ValueError / TypeError that names the function and the rule."""
import numpy as np
import pytest

import dspsim
import dspsim.kernels as K

X8 = np.arange(-4, 4, dtype=np.int8).reshape(2, 4)
W8 = np.ones((3, 4), np.int8)
RQ = dspsim.Requant.fixed_point(1 << 30, -3)


def _raises(fn, name, rule, exc=(ValueError, TypeError)):
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    assert msg.startswith(name) and rule in msg, msg


# §1: validation after the float32 cast ------------------------------------------------------
@pytest.mark.parametrize("input_scale", [1e308, 5e-324])
def test_fully_connected_refuses_an_input_scale_that_is_inf_or_0_in_float32(input_scale):
    _raises(lambda: K.fully_connected(X8, W8, input_zero_point=0, output_zero_point=0, input_scale=input_scale,
                                      weight_scale=0.01, output_scale=0.1, requant="litert"),
            "fully_connected", "finite and positive")


def test_leaky_relu_refuses_an_output_scale_that_is_inf_in_float32():
    _raises(lambda: K.leaky_relu(X8, input_scale=0.1, input_zero_point=0, output_scale=1e308, output_zero_point=0,
                                 alpha=0.1), "leaky_relu", "finite and positive")


@pytest.mark.parametrize("fn, name", [
    (lambda s: K.tflm_relu6(X8, input_scale=s, input_zero_point=0), "tflm_relu6"),
    (lambda s: dspsim.tflite_activation_range("relu6", s, 3), "tflite_activation_range"),
])
@pytest.mark.parametrize("scale, rule", [(1e308, "finite and positive"), (1e-45, "finite"),
                                         (5e-324, "finite and positive")])
def test_relu6_bounds_refuse_scales_that_are_inf_0_or_denormal_in_float32(fn, name, scale, rule):
    _raises(lambda: fn(scale), name, rule)


# §3: exception types -------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_requantize_of_an_empty_input_is_an_empty_output(shape):
    y = dspsim.requantize(np.zeros(shape, np.int32), RQ, 1)
    assert y.shape == shape and y.dtype == np.int8


@pytest.mark.parametrize("axis, exc", [(2**31, ValueError), (-3, ValueError), (1.5, TypeError), ("0", TypeError)])
def test_requantize_refuses_an_axis_beyond_the_rank_or_not_an_int(axis, exc):
    _raises(lambda: dspsim.requantize(np.zeros((2, 3), np.int32), RQ, axis=axis), "requantize", "axis", exc)


def test_fully_connected_refuses_a_0d_input():
    _raises(lambda: K.fully_connected(np.int8(3), W8, input_zero_point=0, output_zero_point=0, multiplier=1 << 30,
                                      shift=0), "fully_connected", "0-d")


@pytest.mark.parametrize("fn", [K.conv2d, K.depthwise_conv2d])
@pytest.mark.parametrize("arg", ["stride", "dilation"])
@pytest.mark.parametrize("value", [2**63, 2**31])
def test_conv_refuses_a_stride_or_dilation_beyond_int32(fn, arg, value):
    x = np.zeros((1, 4, 4, 2), np.int8)
    w = np.ones((2, 2, 2, 2), np.int8) if fn is K.conv2d else np.ones((1, 2, 2, 2), np.int8)
    _raises(lambda: fn(x, w, input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0, **{arg: value}),
            fn.__name__, f"{arg} must be at most 2^31 - 1", ValueError)


def test_xnnpack_mean_over_2_to_the_25_elements_wraps_n_times_zi_in_int32():
    n = 1 << 25
    y = K.xnnpack_mean(np.full(n, 100, np.int8), (0,), input_scale=0.1, input_zero_point=100, output_scale=0.1,
                       output_zero_point=0)
    assert y.dtype == np.int8 and y.shape == ()


@pytest.mark.parametrize("call, name", [
    (lambda: dspsim.multiply_by_quantized_multiplier(np.arange(6, dtype=np.int32), 1 << 30, -1, axis="0"),
     "multiply_by_quantized_multiplier"),
    (lambda: dspsim.multiply_by_quantized_multiplier(np.arange(6, dtype=np.int32), 1 << 30, -1, axis=1.5),
     "multiply_by_quantized_multiplier"),
    (lambda: dspsim.quantize(np.zeros(3, np.float32), -1.0, 1.0, ["qint8"]), "quantize"),
    (lambda: dspsim.tflite_activation_range(["relu6"], 0.1, 0), "tflite_activation_range"),
    (lambda: K.mul(X8, X8, input1_zero_point=0, input2_zero_point=0, output_zero_point=0, multiplier=[1, 2],
                   shift=0), "mul"),
    (lambda: K.concatenation(None, axis=0), "concatenation"),
    (lambda: K.concatenation([X8, X8], axis=2**63), "concatenation"),
    (lambda: K.average_pool2d(np.zeros((1, 4, 4, 1), np.int8), filter_size=2**63), "average_pool2d"),
    (lambda: K.relu6(X8, input_scale=0.1, input_zero_point=0, output_scale=0.1, output_zero_point=None), "relu6"),
    (lambda: K.xnnpack_leaky_relu(X8, alpha="bogus", input_scale=0.1, input_zero_point=0, output_scale=0.1,
                                  output_zero_point=0), "xnnpack_leaky_relu"),
    (lambda: dspsim.dequantize_pof2(np.arange(4, dtype=">i2"), 3), "dequantize_pof2"),
])
def test_errors_that_used_to_come_without_the_functions_name_now_name_it(call, name):
    _raises(call, name, "")


# §4: memory ----------------------------------------------------------------------------------
def test_conv2d_with_a_huge_same_padding_is_refused_or_computed_without_the_padded_copy():
    import tracemalloc

    x = np.ones((1, 5, 5, 1), np.int8)
    w = np.ones((1, 3, 3, 1), np.int8)
    tracemalloc.start()
    try:
        try:
            y = K.conv2d(x, w, input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0,
                         dilation=20000, padding="SAME")
            assert y.shape == (1, 5, 5, 1)
        except ValueError as exc:
            assert str(exc).startswith("conv2d")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


def test_pad_refuses_paddings_whose_output_cannot_be_allocated():
    x = np.zeros((1, 2, 2, 1), np.int8)
    _raises(lambda: K.pad(x, ((0, 0), (1 << 24, 1 << 24), (1 << 24, 1 << 24), (0, 0)), 0), "pad",
            "more than 2^31 - 1 elements", ValueError)
    assert K.pad(x, ((0, 0), (1, 2), (0, 1), (0, 0)), 5).shape == (1, 5, 3, 1)


# §7: bad values accepted ---------------------------------------------------------------------
@pytest.mark.parametrize("call, name", [
    (lambda: dspsim.dequantize_linear(np.zeros(3, np.int8), 0.1, 300), "dequantize_linear"),
    (lambda: dspsim.dequantize_linear(np.zeros(3, np.uint8), 0.1, -1), "dequantize_linear"),
    (lambda: dspsim.dequantize_per_tensor(np.zeros(3, np.int8), 0.1, 128), "dequantize_per_tensor"),
    (lambda: dspsim.tflite_quantize(np.zeros(3, np.float32), 0.1, 300), "tflite_quantize"),
    (lambda: dspsim.tflite_quantize(np.zeros(3, np.float32), 0.1, -1, "uint8"), "tflite_quantize"),
])
def test_zero_points_outside_the_type_are_refused(call, name):
    _raises(call, name, "zero_point must be in", ValueError)


@pytest.mark.parametrize("call, name", [
    (lambda: dspsim.quantize_linear(np.zeros(3, np.float32), 0.1, 0, axis="1"), "quantize_linear"),
    (lambda: dspsim.dequantize_linear(np.zeros(3, np.int8), 0.1, 0, axis=1.0), "dequantize_linear"),
    (lambda: dspsim.tflite_quantize(np.zeros(3, np.float32), 0.1, 0, axis=[0]), "tflite_quantize"),
    (lambda: dspsim.multiply_by_quantized_multiplier(np.zeros(3, np.int32), 1 << 30, 0, axis="x"),
     "multiply_by_quantized_multiplier"),
])
def test_an_axis_of_the_wrong_type_is_refused_on_per_tensor_calls(call, name):
    _raises(call, name, "axis must be an int", TypeError)


@pytest.mark.parametrize("kw, rule", [(dict(eps="bogus"), "eps must be"), (dict(bits="x"), "bits must be"),
                                      (dict(scheme="torch_affine", eps="bogus"), "eps must be"),
                                      (dict(scheme="pof2", bits="x"), "bits must be")])
def test_choose_qparams_refuses_eps_and_bits_of_the_wrong_type(kw, rule):
    _raises(lambda: dspsim.choose_qparams(-1.0, 1.0, **kw), "choose_qparams", rule)
