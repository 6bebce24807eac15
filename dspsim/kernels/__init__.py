"""Integer kernels by operator family, each a lean numba kernel behind a validating wrapper.

The families are those of :mod:`dspsim.catalog`, :mod:`dspsim.oracle` and :mod:`dspsim.tflite.builtins`:
:mod:`.quantize`, :mod:`.mac`, :mod:`.arithmetic`, :mod:`.activation`, :mod:`.nonlinear`, :mod:`.reduce`,
:mod:`.pool`, :mod:`.data_movement`, :mod:`.resize`, :mod:`.recurrent`; the argument checks are in
:mod:`._checks`, the prepare-once helpers in :mod:`._plan` and :mod:`._common`. This package re-exports every
public kernel.
"""
from .mac.batch_matmul import batch_matmul  # noqa: I001
from .arithmetic.binary import (
    maximum, minimum, squared_difference, sub, tflite_squared_difference_params, tflite_sub_params,
    xnnpack_sub_params,
)
from .mac.conv import conv2d, conv2d_plan, depthwise_conv2d, depthwise_conv2d_plan
from .mac.dense import fully_connected, fully_connected_plan
from .arithmetic.elementwise import (
    AddParams, XnnpackAddParams, add, mul, tflite_add_params, tflite_mul_multiplier, xnnpack_add, xnnpack_add_params,
)
from .data_movement import concatenation, pad
from .reduce.mean import mean, xnnpack_mean
from .quantize.xnnpack import xnnpack_convert, xnnpack_quantize
from .activation import xnnpack_leaky_relu
from .mac.gemm import PackedWeights, pack_weights
from .reduce.sum import reduce_sum, xnnpack_sum  # noqa: I001
from .pool import average_pool2d, max_pool2d
from .recurrent.svdf import svdf
from .recurrent.lstm import LstmArithmetic, LstmParams, litert_lstm_params, lstm, tflm_lstm_params  # noqa: I001
from .nonlinear.int16 import fixedpoint16_logistic, fixedpoint16_tanh, int16_logistic, int16_tanh
from .nonlinear.pointwise import (
    HardSwishParams, LutFunction, PreluParams, hard_swish, lookup_table, prelu, rsqrt, tflite_hard_swish_params,
    tflite_lut_table, tflite_prelu_params, tflite_rsqrt_multiplier, tflm_gemmlowp_input_params, tflm_logistic,
    tflm_tanh, xnnpack_lut_table,
)
from .nonlinear.normalization import l2_normalization
from .nonlinear.softmax import (
    LogSoftmaxParams, SoftmaxParams, log_softmax, optimized_log_softmax, optimized_softmax, optimized_softmax_table,
    softmax, tflite_log_softmax_params, tflite_softmax_params,
)
from .resize import (float_resize_bilinear, optimized_resize_nearest_neighbor, resize_bilinear, resize_nearest_neighbor,
                     xnnpack_resize_bilinear)
from .quantize.cast import CastNaN, cast
from .quantize.requantize import tflite_requantize
from .reduce.select import arg_max, reduce_max
from .data_movement import (
    MirrorPadMode, depth_to_space, gather, mirror_pad, pack, slice_tensor, space_to_depth, split, split_v,
    strided_slice, strided_slice_plan, transpose, unpack,
)
from .mac.transpose_conv import transpose_conv  # noqa: I001
from .arithmetic.pot_add import PotAddParams, pot_add, tflite_pot_add_params  # noqa: I001
from .signal import (  # noqa: I001
    signal_delay, signal_energy, signal_fft_auto_scale, signal_filter_bank, signal_filter_bank_log,
    signal_filter_bank_spectral_subtraction, signal_filter_bank_square_root, signal_framer, signal_overlap_add,
    signal_irfft, signal_pcan, signal_rfft, signal_stacker, signal_window,
)
from .activation import leaky_relu, relu, relu6, relu_n1_to_1, tflite_activation_range, tflm_relu6, torch_relu

__all__ = ["svdf", "HardSwishParams", "LogSoftmaxParams", "LutFunction", "PreluParams", "SoftmaxParams", "hard_swish",
           "l2_normalization", "log_softmax", "lookup_table", "optimized_log_softmax", "optimized_softmax",
           "optimized_softmax_table", "prelu", "rsqrt", "softmax", "tflite_log_softmax_params",
           "tflite_rsqrt_multiplier", "tflite_hard_swish_params", "tflite_lut_table", "tflite_prelu_params",
           "tflite_softmax_params", "tflm_gemmlowp_input_params", "tflm_logistic", "tflm_tanh", "xnnpack_lut_table",
           "AddParams", "PackedWeights", "XnnpackAddParams", "add", "average_pool2d", "concatenation", "conv2d",
           "conv2d_plan", "depthwise_conv2d", "depthwise_conv2d_plan", "fully_connected", "fully_connected_plan", "leaky_relu", "max_pool2d", "mean", "mul", "pack_weights", "pad",
           "relu", "relu6", "relu_n1_to_1", "tflite_activation_range", "tflite_add_params", "tflite_mul_multiplier",
           "tflm_relu6", "torch_relu", "xnnpack_add", "xnnpack_add_params", "xnnpack_convert",
           "xnnpack_leaky_relu", "xnnpack_mean", "xnnpack_quantize"]
__all__ += ["MirrorPadMode", "depth_to_space", "gather", "mirror_pad", "pack", "slice_tensor", "space_to_depth",
            "split", "split_v", "strided_slice", "strided_slice_plan", "transpose", "unpack",
            "optimized_resize_nearest_neighbor", "resize_bilinear", "resize_nearest_neighbor", "xnnpack_resize_bilinear",
            "float_resize_bilinear",
            "arg_max", "reduce_max", "CastNaN", "cast", "tflite_requantize"]
__all__ += ["maximum", "minimum", "squared_difference", "sub", "tflite_squared_difference_params",
            "tflite_sub_params", "xnnpack_sub_params"]
__all__ += ["reduce_sum", "xnnpack_sum"]
__all__ += ["batch_matmul"]
__all__ += ["transpose_conv"]
__all__ += ["LstmArithmetic", "LstmParams", "litert_lstm_params", "lstm", "tflm_lstm_params",
            "fixedpoint16_logistic", "fixedpoint16_tanh", "int16_logistic", "int16_tanh"]
__all__ += ["PotAddParams", "pot_add", "tflite_pot_add_params"]
__all__ += ["signal_delay", "signal_energy", "signal_fft_auto_scale", "signal_filter_bank", "signal_filter_bank_log",
            "signal_filter_bank_spectral_subtraction", "signal_filter_bank_square_root", "signal_framer",
            "signal_irfft", "signal_overlap_add", "signal_pcan", "signal_rfft", "signal_stacker", "signal_window"]
