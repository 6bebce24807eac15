"""Integer kernels: one module per op, each a private numba kernel behind a validating wrapper."""
from .conv import conv2d, depthwise_conv2d
from .dense import fully_connected
from .relu import (
    leaky_relu,
    relu,
    relu6,
    relu_n1_to_1,
    tflite_activation_range,
    tflm_relu6,
    torch_relu,
)

__all__ = ["conv2d", "depthwise_conv2d", "fully_connected", "leaky_relu", "relu", "relu6", "relu_n1_to_1",
           "tflite_activation_range", "tflm_relu6", "torch_relu", "warmup"]


def warmup():
    """Compile every kernel (and each requantization branch) on tiny inputs, so timings exclude JIT."""
    import numpy as np

    from ..accumulator import Accumulator

    x = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)
    quant = dict(input_zero_point=1, output_zero_point=2, multiplier=1 << 30, shift=-1)
    for out_dtype in ("uint8", "int16"):  # the remaining output types of the requantization loop
        fully_connected(x.reshape(2, 4), np.ones((3, 4), np.int8), None, **quant, out_dtype=out_dtype)
        depthwise_conv2d(x, np.ones((1, 2, 2, 2), np.int8), None, **quant, out_dtype=out_dtype)
    for xx in (x, x.astype(np.uint8)):
        fully_connected(xx.reshape(2, 4), np.ones((3, 4), np.int8), np.arange(3, dtype=np.int32), **quant)
        fully_connected(xx.reshape(2, 4), np.ones((3, 4), np.int8), None, **quant,
                        accumulator=Accumulator(16, "saturate"), stats=True)
        conv2d(xx, np.ones((2, 2, 2, 2), np.int8), None, padding="SAME", **quant)
        conv2d(xx, np.ones((2, 1, 1, 1), np.int8), None, **quant)
        depthwise_conv2d(xx, np.ones((1, 2, 2, 2), np.int8), None, padding="SAME", **quant)
    for rq in ("fbgemm", "onnxruntime", "onnx-reference"):
        fully_connected(x.reshape(2, 4), np.ones((3, 4), np.int8), None, input_zero_point=0, output_zero_point=0,
                        input_scale=0.1, weight_scale=0.2, output_scale=0.3, requant=rq)
    fully_connected(x.reshape(2, 4), np.ones((3, 4), np.int8), None, input_zero_point=0, output_zero_point=0,
                    requant="shift", shift=-2)
    relu(x, input_zero_point=0)
    leaky_relu(x, alpha=0.1, input_scale=0.1, input_zero_point=0, output_scale=0.1, output_zero_point=0)
