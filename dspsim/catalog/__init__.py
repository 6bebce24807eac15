"""The operator catalog: one descriptor per operator (kernel, oracle, warm-up calls, suite cases), by family.

======================= ===================================================================================
:mod:`.descriptor`      :class:`~.descriptor.Operator`, :class:`~.descriptor.SuiteCase`, :func:`~.descriptor.register`
:mod:`.quantize`        float <-> int quantizers, Requantize of codes, CAST, XNNPACK's QUANTIZE kernels
:mod:`.mac`             FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, BATCH_MATMUL
:mod:`.arithmetic`      ADD, MUL, SUB, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM
:mod:`.activation`      RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU
:mod:`.nonlinear`       LOGISTIC, TANH, HARD_SWISH, PRELU, RSQRT, L2_NORMALIZATION, SOFTMAX, LOG_SOFTMAX
:mod:`.reduce`          MEAN, SUM, REDUCE_MAX, ARG_MAX
:mod:`.pool`            AVERAGE_POOL_2D, MAX_POOL_2D
:mod:`.data_movement`   slicing, splitting, transposing, gathering, packing, padding, concatenating codes
:mod:`.resize`          RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR
:mod:`.recurrent`       UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF
======================= ===================================================================================

Adding an operator touches its kernel (:mod:`dspsim.kernels`), its oracle (:mod:`dspsim.oracle`), its
descriptor here, its tests, and for models its builtin (:mod:`dspsim.tflite.builtins`) or ONNX op.
"""
from types import MappingProxyType

from .descriptor import Operator, SuiteCase, random_codes, register, registered
from . import quantize, mac, arithmetic, activation, nonlinear, reduce, pool, data_movement, resize, recurrent  # noqa: E402,F401,I001  (registers them, in this order)


def operators() -> MappingProxyType:
    """Every operator by name, family by family (the families above register theirs when imported)."""
    return registered()


__all__ = ["Operator", "SuiteCase", "operators", "random_codes", "register"]
