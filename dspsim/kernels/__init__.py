"""Integer kernels: one module per op, each a private numba kernel behind a validating wrapper."""
from .batch_matmul import batch_matmul  # noqa: I001
from .binary import (maximum, minimum, squared_difference, sub, tflite_squared_difference_params,  # noqa: I001
                     tflite_sub_params, xnnpack_sub_params)
from .conv import conv2d, conv2d_layer, depthwise_conv2d, depthwise_conv2d_layer
from .dense import fully_connected, fully_connected_layer
from .elementwise import (
    AddParams,
    XnnpackAddParams,
    add,
    concatenation,
    mean,
    mul,
    pad,
    tflite_add_params,
    tflite_mul_multiplier,
    xnnpack_add,
    xnnpack_add_params,
    xnnpack_convert,
    xnnpack_leaky_relu,
    xnnpack_mean,
    xnnpack_quantize,
)
from .gemm import PackedWeights, pack_weights
from .reduce import reduce_sum, xnnpack_sum  # noqa: I001
from .pool import average_pool2d, max_pool2d
from .recurrent import svdf
from .lstm import LstmArithmetic, LstmParams, litert_lstm_params, lstm, tflm_lstm_params  # noqa: I001
from .nonlinear_int16 import fixedpoint16_logistic, fixedpoint16_tanh, int16_logistic, int16_tanh
from .nonlinear import (
    HardSwishParams,
    LutFunction,
    PreluParams,
    hard_swish,
    lookup_table,
    prelu,
    rsqrt,
    tflite_hard_swish_params,
    tflite_lut_table,
    tflite_prelu_params,
    tflite_rsqrt_multiplier,
    tflm_gemmlowp_input_params,
    tflm_logistic,
    tflm_tanh,
    xnnpack_lut_table,
)
from .normalization import l2_normalization
from .softmax import (
    LogSoftmaxParams,
    SoftmaxParams,
    log_softmax,
    optimized_log_softmax,
    optimized_softmax,
    optimized_softmax_table,
    softmax,
    tflite_log_softmax_params,
    tflite_softmax_params,
)
from .resize import optimized_resize_nearest_neighbor, resize_bilinear, resize_nearest_neighbor, xnnpack_resize_bilinear
from .typecast import CastNaN, cast
from .requantize import tflite_requantize
from .select import arg_max, reduce_max
from .shape import (
    MirrorPadMode,
    depth_to_space,
    gather,
    mirror_pad,
    pack,
    slice_tensor,
    space_to_depth,
    split,
    split_v,
    strided_slice,
    strided_slice_plan,
    transpose,
    unpack,
)
from .transpose_conv import transpose_conv  # noqa: I001
from .int16 import PotAddParams, pot_add, tflite_pot_add_params  # noqa: I001
from .relu import (
    leaky_relu,
    relu,
    relu6,
    relu_n1_to_1,
    tflite_activation_range,
    tflm_relu6,
    torch_relu,
)

__all__ = ["svdf", "HardSwishParams", "LogSoftmaxParams", "LutFunction", "PreluParams", "SoftmaxParams", "hard_swish",
           "l2_normalization", "log_softmax", "lookup_table", "optimized_log_softmax", "optimized_softmax",
           "optimized_softmax_table", "prelu", "rsqrt", "softmax", "tflite_log_softmax_params",
           "tflite_rsqrt_multiplier", "tflite_hard_swish_params", "tflite_lut_table", "tflite_prelu_params",
           "tflite_softmax_params", "tflm_gemmlowp_input_params", "tflm_logistic", "tflm_tanh", "xnnpack_lut_table",
           "AddParams", "PackedWeights", "XnnpackAddParams", "add", "average_pool2d", "concatenation", "conv2d",
           "conv2d_layer", "depthwise_conv2d", "depthwise_conv2d_layer", "fully_connected", "fully_connected_layer", "leaky_relu", "max_pool2d", "mean", "mul", "pack_weights", "pad",
           "relu", "relu6", "relu_n1_to_1", "tflite_activation_range", "tflite_add_params", "tflite_mul_multiplier",
           "tflm_relu6", "torch_relu", "xnnpack_add", "xnnpack_add_params", "xnnpack_convert",
           "xnnpack_leaky_relu", "xnnpack_mean", "xnnpack_quantize"]
__all__ += ["MirrorPadMode", "depth_to_space", "gather", "mirror_pad", "pack", "slice_tensor", "space_to_depth",
            "split", "split_v", "strided_slice", "strided_slice_plan", "transpose", "unpack",
            "optimized_resize_nearest_neighbor", "resize_bilinear", "resize_nearest_neighbor", "xnnpack_resize_bilinear",
            "arg_max", "reduce_max", "CastNaN", "cast", "tflite_requantize"]
__all__ += ["maximum", "minimum", "squared_difference", "sub", "tflite_squared_difference_params",
            "tflite_sub_params", "xnnpack_sub_params"]
__all__ += ["reduce_sum", "xnnpack_sum"]
__all__ += ["batch_matmul"]
__all__ += ["transpose_conv"]
__all__ += ["LstmArithmetic", "LstmParams", "litert_lstm_params", "lstm", "tflm_lstm_params",
            "fixedpoint16_logistic", "fixedpoint16_tanh", "int16_logistic", "int16_tanh"]
__all__ += ["PotAddParams", "pot_add", "tflite_pot_add_params"]
