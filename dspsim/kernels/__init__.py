"""Integer kernels: one module per op, each a private numba kernel behind a validating wrapper."""
from .conv import conv2d, depthwise_conv2d
from .dense import fully_connected
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
from .pool import average_pool2d, max_pool2d
from .relu import (
    leaky_relu,
    relu,
    relu6,
    relu_n1_to_1,
    tflite_activation_range,
    tflm_relu6,
    torch_relu,
)

__all__ = ["AddParams", "PackedWeights", "XnnpackAddParams", "add", "average_pool2d", "concatenation", "conv2d",
           "depthwise_conv2d", "fully_connected", "leaky_relu", "max_pool2d", "mean", "mul", "pack_weights", "pad",
           "relu", "relu6", "relu_n1_to_1", "tflite_activation_range", "tflite_add_params", "tflite_mul_multiplier",
           "tflm_relu6", "torch_relu", "warmup", "xnnpack_add", "xnnpack_add_params", "xnnpack_convert",
           "xnnpack_leaky_relu", "xnnpack_mean", "xnnpack_quantize"]


def warmup():
    """Compile every kernel (the gemm drivers, each requantization scheme, the element-wise and pooling
    kernels) on tiny inputs, so that timings exclude JIT. Compiled code is cached on disk except the
    threaded gemm drivers, so later processes mostly load it."""
    import numpy as np

    from ..accumulator import Accumulator
    from ..requant import Requant, requantize
    from . import gemm

    gemm.warmup()
    x = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)
    w2 = np.ones((3, 4), np.int8)
    quant = dict(input_zero_point=1, output_zero_point=2, multiplier=1 << 30, shift=-1)
    for out_dtype in ("uint8", "int16"):  # the remaining output types of the requantization loop
        fully_connected(x.reshape(2, 4), w2, None, **quant, out_dtype=out_dtype)
        depthwise_conv2d(x, np.ones((1, 2, 2, 2), np.int8), None, **quant, out_dtype=out_dtype)
    for xx in (x, x.astype(np.uint8)):
        fully_connected(xx.reshape(2, 4), w2, np.arange(3, dtype=np.int32), **quant)
        fully_connected(xx.reshape(2, 4), pack_weights(w2), None, **quant, rounding="single")
        fully_connected(xx.reshape(2, 4), w2, None, **quant, accumulator=Accumulator(16, "saturate"), stats=True)
        fully_connected(xx.reshape(2, 4), w2, None, **quant, accumulator=Accumulator(40))  # exact int64 sums
        conv2d(xx, np.ones((2, 2, 2, 2), np.int8), None, padding="SAME", **quant)
        conv2d(xx, np.ones((2, 1, 1, 1), np.int8), None, **quant)
        depthwise_conv2d(xx, np.ones((1, 2, 2, 2), np.int8), None, padding="SAME", **quant)
        depthwise_conv2d(xx, np.ones((1, 2, 2, 4), np.int8), None, depth_multiplier=2, **quant,
                         accumulator=Accumulator(64))
    for rq in ("fbgemm", "onnxruntime", "onnx-reference", "onednn"):
        for out_dtype in ("int8", "uint8"):
            fully_connected(x.reshape(2, 4), w2, None, input_zero_point=0, output_zero_point=0, input_scale=0.1,
                            weight_scale=0.2, output_scale=0.3, requant=rq, out_dtype=out_dtype)
    fully_connected(x.reshape(2, 4), w2, np.ones(3, np.float32), input_zero_point=0, output_zero_point=0,
                    input_scale=0.1, weight_scale=np.full(3, 0.2), output_scale=0.3, requant="fbgemm")
    fully_connected(x.reshape(2, 4), w2, None, input_zero_point=0, output_zero_point=0, input_scale=0.1,
                    weight_scale=0.2, output_scale=0.3, requant="litert")
    fully_connected(x.reshape(2, 4), w2, None, input_zero_point=0, output_zero_point=0, requant="shift", shift=-2)
    for acc in (np.zeros(4, np.int32), np.zeros(4, np.int64)):  # requantize() on both accumulator types
        requantize(acc, Requant.fixed_point(1 << 30, -1))
    relu(x, input_zero_point=0)
    leaky_relu(x, alpha=0.1, input_scale=0.1, input_zero_point=0, output_scale=0.1, output_zero_point=0)
    add(x, x, tflite_add_params(0.1, 0.2, 0.3), input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    mul(x, x, input1_zero_point=0, input2_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
    mul(x, x, input1_zero_point=0, input2_zero_point=0, output_zero_point=0, scale=0.5)
    mean(x, (1, 2), input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
    xnnpack_add(x, x, xnnpack_add_params(0.1, 0.2, 0.3), input1_zero_point=0, input2_zero_point=0,
                output_zero_point=0)
    xnnpack_convert(x, input_scale=0.1, input_zero_point=0, output_scale=0.2, output_zero_point=0)
    xnnpack_leaky_relu(x, alpha=0.1, input_scale=0.1, input_zero_point=0, output_scale=0.1, output_zero_point=0)
    xnnpack_mean(x, (1, 2), input_scale=0.1, input_zero_point=0, output_scale=0.1, output_zero_point=0)
    xnnpack_quantize(np.zeros(4, np.float32), scale=0.1, zero_point=0)
    average_pool2d(x, 2, padding="SAME")
    max_pool2d(x, 2)
