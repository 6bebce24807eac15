"""dspsim: a bit-exact simulator of DSP / NPU integer arithmetic for quantized NN layers.

The public API is re-exported here; see README.md for a tour, docs/design.md for the layout
and docs/semantics.md for the engine arithmetic it emulates.
"""
from importlib.metadata import PackageNotFoundError as _PackageNotFoundError, version as _version

try:
    __version__ = _version("dspsim-bitexact")  # the installed distribution (pyproject.toml's name and version)
except _PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"

from .simd import cpu as _cpu  # noqa: F401  first: the SIMD level (DSPSIM_SIMD) and its numba cache dir
from .dtypes import IntType, int_type, qint8, quint8, qint16, quint16, qint32
from ._jit import get_num_threads, set_num_threads  # _jit.py: the one thread-count setting
from .fixedpoint import (
    Rounding,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    quantize_multiplier,
    rounding_divide_by_pot,
    rounding_right_shift,
    saturate,
    saturating_rounding_doubling_high_mul,
    wrap,
)
from .quantize import (  # quantize.py
    QuantizeResult,
    dequantize,
    dequantize_linear,
    dequantize_per_channel,
    dequantize_per_tensor,
    dequantize_pof2,
    pof2_frac_bits,
    quantize,
    quantize_linear,
    quantize_per_channel,
    quantize_per_tensor,
    quantize_pof2,
    tflite_dequantize,
    tflite_quantize,
)
from . import engines  # engines as data: dspsim.engines.get / names
from .engines import DeviceProfile, EngineProfile
from .requant import Requant
from .kernels.quantize.requantize import requantize
from .accumulator import Accumulator, KernelStats  # accumulator.py
from .kernels import (
    conv2d, depthwise_conv2d, fully_connected, leaky_relu, pack_weights, relu, relu6, relu_n1_to_1,
    tflite_activation_range, tflm_relu6, torch_relu,
)
from .qparams import QParams, choose_qparams  # qparams.py, observers.py, qtensor.py
from .observers import MinMaxObserver, MovingAverageMinMaxObserver, PercentileObserver
from .qtensor import QTensor
from . import tflite  # dspsim.tflite.load_model
from . import onnx  # dspsim.onnx.load_model
from .load import load_model  # either format, by the file's content


def warmup() -> None:
    """Compile every numba kernel on tiny inputs: each registered operator's examples
    (:mod:`dspsim.catalog`) and every path of the gemm drivers.

    Call it once before timing anything: compile time then stays out of the measurements. Kernels
    are cached on disk (``cache=True``) and load in well under a second afterwards.
    """
    from .kernels.mac import gemm
    from .catalog import operators

    gemm.warmup()
    for op in operators().values():
        for call in op.examples():
            op.kernel(**call)

__all__ = [
    "warmup", "engines", "DeviceProfile", "EngineProfile", "load_model", "get_num_threads", "set_num_threads", "onnx",
    "tflite",
    "MinMaxObserver", "MovingAverageMinMaxObserver", "PercentileObserver", "QParams", "QTensor", "choose_qparams",
    "Accumulator", "KernelStats", "leaky_relu", "relu6", "relu_n1_to_1", "requantize", "tflite_activation_range",
    "tflm_relu6", "torch_relu", "IntType", "QuantizeResult", "Requant", "Rounding",
    "conv2d", "depthwise_conv2d", "dequantize", "dequantize_linear", "dequantize_per_channel",
    "dequantize_per_tensor", "dequantize_pof2", "fully_connected", "int_type",
    "multiply_by_quantized_multiplier", "multiply_by_quantized_multiplier_int64", "pack_weights", "pof2_frac_bits",
    "qint16", "qint32", "qint8", "quantize", "quantize_linear", "quantize_multiplier",
    "quantize_per_channel", "quantize_per_tensor", "quantize_pof2", "quint16", "quint8", "relu",
    "rounding_divide_by_pot", "rounding_right_shift", "saturate",
    "saturating_rounding_doubling_high_mul", "tflite_dequantize", "tflite_quantize", "wrap",
]
