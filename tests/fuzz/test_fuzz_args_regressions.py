"""Regressions of the argument fuzz (issue 16): each defect signature the campaigns found, as the one call
that showed it (a valid base call of tests/fuzz/fuzz_args.py with one or two arguments replaced).

Property (tests/fuzz/fuzz_args.py ``check_call``): the call returns, or raises a ValueError / TypeError whose
message starts with the function's name; and, where the rule is the point, the message states it.
"""
import inspect

import numpy as np
import pytest

import fuzz_args as fa

TARGETS = fa.targets()
_0D = np.array(3, np.int8)

#: (function, replaced arguments, what the message must say or None, the defect it was)
CASES = [
    ("arg_max", dict(output_type="bogus"), "output_type must be int32 or int64", "numpy's 'data type not understood'"),
    ("batch_matmul", dict(multiplier=None), None, "the error named fully_connected"),
    ("batch_matmul", dict(adj_x=np.array([True, False])), "adj_x must be a bool", "numpy's truth-value error"),
    ("reduce_max", dict(keep_dims=np.array([True, False])), "keep_dims must be a bool", "numpy's truth-value error"),
    ("strided_slice_plan", dict(shape=None), "shape must be an integer vector", "len() of NoneType"),
    ("strided_slice_plan", dict(begin=(1.5, 1.5)), "begin must be an integer vector", "float index"),
    ("strided_slice", dict(offset=np.array([True, False])), "offset must be a bool", "numpy's truth-value error"),
    ("tflite_log_softmax_params", dict(input_scale=None), None, "the error named tflite_softmax_params"),
    ("tflite_softmax_params", dict(input_scale=1e308), "finite and positive in float32", "inf in float32 accepted"),
    ("optimized_softmax_table", dict(input_scale=1e308), "finite and positive in float32", "a NaN table"),
    ("tflite_pot_add_params", dict(input1_scale=5e-324), "finite and positive in float32", "OverflowError"),
    ("tflite_requantize", dict(out_dtype="bogus"), "out_dtype must be int8, uint8, int16 or int32",
     "numpy's 'data type not understood'"),
    ("tflite_requantize", dict(x=_0D, rounding="neon"), None, "AttributeError on a 0-d input"),
    ("tflm_gemmlowp_input_params", dict(input_scale=1e308), "finite and positive in float32", "OverflowError"),
    ("xnnpack_sub_params", dict(output_scale=None), None, "the error named xnnpack_add_params"),
    ("l2_normalization", dict(x=_0D), "rank >= 1", "IndexError"),
    ("log_softmax", dict(x=_0D), "rank >= 1", "IndexError"),
    ("softmax", dict(x=_0D), "rank >= 1", "IndexError"),
    ("optimized_softmax", dict(x=_0D), "rank >= 1", "IndexError"),
    ("optimized_softmax", dict(table=np.zeros(256, np.float32)), "optimized_softmax_table", "ZeroDivisionError"),
    ("optimized_softmax", dict(output_scale=5e-324), "finite and positive in float32", "ZeroDivisionError"),
    ("reduce_sum", dict(multiplier=[1, 2]), "multiplier must be a scalar int", "numpy's 'only 0-dimensional arrays'"),
    ("svdf", dict(feature_multiplier=[1, 2]), "feature_multiplier must be a scalar int",
     "numpy's 'only 0-dimensional arrays'"),
    ("tflite_hard_swish_params", dict(input_scale=1e308), "finite and positive in float32",
     "the error named quantize_multiplier"),
    ("tflite_lut_table", dict(input_scale=1e308), "finite and positive in float32", "'cannot convert float NaN'"),
    ("tflite_prelu_params", dict(alpha_scale=1e308), "finite and positive in float32",
     "the error named quantize_multiplier"),
    ("tflite_rsqrt_multiplier", dict(input_scale=5e-324), "finite and positive in float32", "ZeroDivisionError"),
    ("transpose_conv", dict(output_zero_point=None), None, "the error named requantize"),
    ("transpose_conv", dict(output_size=(1 << 30, 1 << 30)), r"more than 2\^31 - 1 elements",
     "numpy's 'array is too big'"),
    ("xnnpack_sum", dict(axis=2**63), None, "OverflowError"),
    ("tflm_lstm_params", dict(cell_clip="bogus"), "cell_clip must be a float", "float('bogus') unnamed"),
    ("tflm_lstm_params", dict(input_zero_point=0.1), "input_zero_point", "a float zero point truncated"),
    ("tflm_lstm_params", dict(cell_gate_tanh=np.array([True, False])), "cell_gate_tanh must be a bool",
     "numpy's truth-value error"),
    ("litert_lstm_params", dict(input_weight_scales={"a": 1}), "input_weight_scales must be 4 float scales",
     "float(dict) unnamed"),
    ("litert_lstm_params", dict(hidden_zero_point=2**63), "hidden_zero_point", "int(2^63) accepted"),
    ("resize_nearest_neighbor", dict(size=np.array([2**31 - 1, 2**31 - 1])), r"more than 2\^31 - 1 elements",
     "a Python loop of 2^31 steps (a hang)"),
    ("optimized_resize_nearest_neighbor", dict(size=np.array([2**31 - 1, 2**31 - 1])),
     r"more than 2\^31 - 1 elements", "a hang"),
    ("resize_bilinear", dict(align_corners=np.array([True, False])), "align_corners must be a bool",
     "numpy's truth-value error"),
    ("resize_bilinear", dict(size=np.array([2**31 - 1, 2**31 - 1])), r"more than 2\^31 - 1 elements", "a hang"),
    ("xnnpack_resize_bilinear", dict(size=np.array([2**31 - 1, 2**31 - 1])), r"more than 2\^31 - 1 elements",
     "a hang"),
    # the campaign of seed 2026
    ("leaky_relu", dict(x=_0D, alpha=-0.3), None, "AttributeError: a 0-d input with a negative alpha"),
    ("cast", dict(x=np.array(1.5, np.float32), dtype="int8"), None, "a 0-d float input: numpy-scalar item assignment"),
    ("cast", dict(dtype={"a": 1}), "dtype must be one of", "numpy's ValueError for a dict dtype"),
    # issue 31's campaign (the targets of dspsim.dsp, dspsim.frontend, dspsim.onnx, dspsim.tflite)
    ("frontend_tables", dict(cfg=None), "cfg must be a FrontendConfig", "AttributeError"),
    ("filterbank_tables", dict(cfg="bogus"), "cfg must be a FrontendConfig", "AttributeError"),
    ("fft_tables", dict(nfft=None), "nfft must be an int", "'<' between NoneType and int"),
    ("fft_tables", dict(nfft=1 << 40), r"power of two in \[4, ", "a Python loop of 2^39 steps (a hang)"),
    ("dspsim.onnx.quantize_linear", dict(axis=None), "axis must be an int", "'<=' between int and NoneType"),
    ("dspsim.onnx.dequantize_linear", dict(x=None), "x must be an array of codes", "int() of None"),
    ("dspsim.onnx.matmul_integer", dict(a=np.zeros((0, 5), np.uint8)), None, "numpy's reshape error, unnamed"),
    ("load_model", dict(path_or_bytes=b"\x00"), "dspsim.onnx.load_model: ", "named by its reader, accepted"),
]


@pytest.mark.parametrize("name, replaced, rule, was", CASES, ids=[f"{c[0]}-{'-'.join(c[1])}" for c in CASES])
def test_a_call_that_showed_a_defect_returns_or_refuses_naming_the_function(name, replaced, rule, was):
    fn, bases = TARGETS[name]
    kw = dict(bases[0])
    assert set(replaced) <= set(inspect.signature(fn).parameters), (name, sorted(kw))
    kw.update(replaced)
    assert fa.check_call(name, fn, kw, time_limit=10.0) is None, was
    if rule is not None:
        with pytest.raises((ValueError, TypeError), match=rule):
            fn(**kw)
