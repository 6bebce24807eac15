"""Import a quantized ONNX model (QDQ or QOperator) and run it on dspsim's kernels; ONNX's
quantization operators standalone.

    model = dspsim.onnx.load_model("model.onnx", engine="onnxruntime")
    outputs = model.run(inputs)        # list in graph-input order, or dict by name
    model.trace(inputs)                # every intermediate tensor

The .onnx protobuf is read by a small bounds-checked reader (:mod:`.proto`; no onnx package).
``engine`` picks whose arithmetic is emulated (:func:`dspsim.engines.names` ``("onnx")``): "onnxruntime"
(CPU provider, graph optimizations off: QDQ nodes run as written; on an x86 host without VNNI),
"onnxruntime-vnni" (the same with VNNI; the default is the one this host runs, :func:`host_engine`), "onnxruntime-optimized" (ORT_ENABLE_ALL: QDQ groups fused into
QLinear ops, :mod:`.fusion`), "onnx-reference" (onnx.reference.ReferenceEvaluator), or a device's profile.
"""
from __future__ import annotations

from .._errors import names_its_errors
from .._io import model_bytes
from ..simd.cpu import host_has_vnni


from ..graph.executor import TensorInfo, TraceEntry
from . import mac as _mac, quantize as _quantize
from .model import Model
from .proto import read_model
from .types import ElemType, QArray

# the public face: what slips past a wrapper's checks (a helper's message, numpy's) still names the function
conv_integer, matmul_integer, qlinear_conv, qlinear_matmul, dequantize_linear, dynamic_quantize_linear, \
    quantize_linear = (names_its_errors(f, f"dspsim.onnx.{f.__name__}") for f in (
        _mac.conv_integer, _mac.matmul_integer, _mac.qlinear_conv, _mac.qlinear_matmul, _quantize.dequantize_linear,
        _quantize.dynamic_quantize_linear, _quantize.quantize_linear))

__all__ = ["ElemType", "Model", "QArray", "TensorInfo", "TraceEntry", "conv_integer",
           "dequantize_linear", "dynamic_quantize_linear", "host_engine", "load_model", "matmul_integer", "qlinear_conv",
           "qlinear_matmul", "quantize_linear"]


def host_engine() -> str:
    """The ONNX Runtime engine of this host: "onnxruntime-vnni" where MLAS's uint8 x int8 GEMMs use VNNI (AVX-512
    VNNI or AVX-VNNI: exact int32 sums), else "onnxruntime" (pair-saturating ``vpmaddubsw``). The default engine of
    ONNX models, so that dspsim gives what the ONNX Runtime installed beside it gives."""
    return "onnxruntime-vnni" if host_has_vnni("onnxruntime") else "onnxruntime"


def load_model(path_or_bytes, engine=None) -> Model:
    """Read an .onnx model (a path or the file's bytes) and prepare every node.

    ``engine``: an engine that runs ONNX models (module docstring), a device's ``.toml`` file or an
    :class:`~dspsim.engines.EngineProfile`; default :func:`host_engine`. A device that requantizes power-of-two QLinearConv / QLinearMatMul /
    QGemm by a shift, as a DSP does: ``requantization = "shift"`` with its ``shift_rounding`` (start from
    "onnxruntime-optimized" for a QDQ model, so that its groups are fused first).

    Raises ValueError for a corrupt or truncated file, an unsupported operator, domain or opset (the
    node named), a missing initializer, invalid quantization parameters; OSError when the path cannot
    be read.
    """
    data = model_bytes(path_or_bytes)
    return Model(read_model(data), host_engine() if engine is None else engine)
