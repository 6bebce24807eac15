"""The oracle: every dspsim primitive, mode and kernel again, slowly, in plain Python integers.

One module per operator family, the families of :mod:`dspsim.kernels` and :mod:`dspsim.catalog`, and
:mod:`.fixedpoint` (the primitives) and :mod:`.requant` (accumulators and their requantization) under them. It
imports nothing of dspsim (it computes its own tables, such as TFLite's sigmoid table): the kernels are checked
against it, never the other way round.

Nothing here uses numba or numpy rounding. Rounding is done on exact rationals
(:class:`fractions.Fraction`), so each function reads as the definition it emulates rather than as
a port of the fast code: where the fast code uses a bit trick, this file uses arithmetic on exact
values. Float32 steps (TensorFlow's and TFLite's per-element float math) are emulated by rounding
each exact intermediate to the nearest float32 (:func:`f32`), ties to even, as IEEE does.

The tests pin the numba code to this module on random and edge inputs.
"""
from .activation import (  # noqa: F401
    leaky_relu,
    leaky_relu_oracle,
    relu,
    relu6_oracle,
    relu_n1_to_1_oracle,
    relu_oracle,
    tflite_activation_range,
    tflm_relu6,
    tflm_relu6_oracle,
    torch_relu,
    torch_relu_oracle,
    xnnpack_leaky_relu_oracle,
)
from .arithmetic import (  # noqa: F401
    add_oracle,
    maximum_oracle,
    minimum_oracle,
    mul_oracle,
    pot_add_oracle,
    squared_difference_oracle,
    sub_oracle,
    tflite_add,
    tflite_add_params,
    tflite_mul,
    tflite_rescaled_difference,
    xnnpack_add,
    xnnpack_add_oracle,
    xnnpack_add_params,
    xnnpack_mul,
)
from .data_movement import (  # noqa: F401
    concatenation_oracle,
    depth_to_space_oracle,
    gather_oracle,
    mirror_pad_oracle,
    pack_oracle,
    pad_oracle,
    slice_tensor_oracle,
    space_to_depth_oracle,
    split_oracle,
    split_v_oracle,
    strided_slice_oracle,
    transpose_oracle,
    unpack_oracle,
)
from .fixedpoint import (  # noqa: F401
    INT32_MAX,
    INT32_MIN,
    clamp,
    f32,
    f64,
    haz_f32_div,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    quantize_multiplier,
    round_fraction,
    rounding_divide_by_pot,
    rounding_right_shift,
    saturate,
    saturating_rounding_doubling_high_mul,
    wrap,
    x86_int32,
)
from .mac import (  # noqa: F401
    batch_matmul_oracle,
    conv2d,
    conv2d_oracle,
    conv_integer,
    depthwise_conv2d,
    depthwise_conv2d_oracle,
    fully_connected,
    fully_connected_oracle,
    matmul_integer,
    transpose_conv_oracle,
)
from .nonlinear import (  # noqa: F401
    fixedpoint16_logistic_oracle,
    fixedpoint16_tanh_oracle,
    gemmlowp_exp_on_negative_values,
    gemmlowp_log_x_for_x_greater_than_or_equal_to_1,
    gemmlowp_logistic,
    gemmlowp_one_over_one_plus_x,
    gemmlowp_tanh,
    hard_swish_oracle,
    int16_logistic_oracle,
    int16_tanh_oracle,
    inv_sqrt_quantized_multiplier_exp,
    l2_normalization_oracle,
    log_softmax_oracle,
    lookup_table_oracle,
    optimized_softmax_oracle,
    prelu_oracle,
    rsqrt_oracle,
    softmax_oracle,
    tflm_logistic_oracle,
    tflm_tanh_oracle,
)
from .pool import (  # noqa: F401
    average_pool2d,
    average_pool2d_oracle,
    max_pool2d,
    max_pool2d_oracle,
    pool_geometry,
)
from .quantize import (  # noqa: F401
    FLT_MAX,
    FORMATS,
    block_index,
    cast_oracle,
    dequantize_linear_oracle,
    dequantize_minifloat,
    dequantize_per_channel_oracle,
    dequantize_per_tensor_oracle,
    dequantize_pof2,
    dequantize_pof2_oracle,
    ftz32,
    litert_optimized_quantize_oracle,
    minifloat_encode,
    minifloat_value,
    onnx_dequantize,
    onnx_quantize,
    pof2_frac_bits,
    quantize_linear_oracle,
    quantize_minifloat,
    quantize_per_channel_oracle,
    quantize_per_tensor_oracle,
    quantize_pof2,
    quantize_pof2_oracle,
    tf_adjust_range,
    tf_dequantize,
    tf_dequantize_oracle,
    tf_quantize,
    tf_quantize_oracle,
    litert_optimized_dequantize_oracle,
    tflite_dequantize,
    tflite_dequantize_oracle,
    tflite_quantize,
    tflite_quantize_oracle,
    tflite_requantize_oracle,
    torch_dequantize_per_channel,
    torch_dequantize_per_tensor,
    torch_quantize,
    xnnpack_convert_oracle,
    xnnpack_q8_8,
    xnnpack_quantize,
    xnnpack_quantize_oracle,
)
from .recurrent import (  # noqa: F401
    lstm_oracle,
    svdf_oracle,
)
from .reduce import (  # noqa: F401
    arg_max_oracle,
    litert_optimized_mean_oracle,
    mean_oracle,
    reduce_max_oracle,
    reduce_sum_oracle,
    tflite_mean,
    tflite_sum,
    xnnpack_mean,
    xnnpack_mean_oracle,
    xnnpack_sum,
    xnnpack_sum_oracle,
)
from .requant import (  # noqa: F401
    acc_add,
    accumulate,
    engine_rule,
    fixed_point,
    requant_from_rule,
    requant_from_scales,
    requantize_scale,
    requantize_value,
    rule_dict,
)
from .resize import (  # noqa: F401
    optimized_resize_nearest_neighbor_oracle,
    ort_bilinear_8bit,
    ort_source_coordinate,
    resize_bilinear_oracle,
    resize_nearest_neighbor_oracle,
    xnnpack_resize_bilinear_oracle,
)
