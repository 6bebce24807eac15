"""ONNX operators as dspsim runs them: one prepare function per op_type, by operator family (the families of
``dspsim.kernels`` and ``dspsim.tflite.builtins``).

``PREPARE[op_type](node, ctx)`` runs once, at load: it reads attributes and constant inputs (scales, zero
points, weights: converted to the kernels' layouts here) and returns ``run(inputs) -> outputs``, which only
calls kernels. A parameter that is a graph input rather than an initializer is read at run time instead (the
backend node tests feed scales as inputs). The com.microsoft operators (QLinear*, QGemm) need an engine whose
profile runs contrib operators (ONNX Runtime).

Float operators (between DequantizeLinear and QuantizeLinear of a QDQ model) are float32 with the summation
order of the kernel the engine runs: for the reference evaluator the numpy calls of onnx/reference/ops; for
ONNX Runtime the MLAS kernels its x86 AVX2/FMA3 build dispatches (:mod:`dspsim.onnx.mlas`; docs/engines.md
"ONNX"). Another host may dispatch other kernels.
"""
from __future__ import annotations

from . import activation, arithmetic, data_movement, mac, nonlinear, pool, quantize, reduce, resize
from ._common import Context, check_constant_scales, check_input_count

FAMILIES = (quantize, mac, arithmetic, activation, nonlinear, reduce, pool, data_movement, resize)
PREPARE = {op_type: prepare for family in FAMILIES for op_type, prepare in family.PREPARE.items()}
"""Every ONNX op_type dspsim runs, to its prepare function."""

__all__ = ["PREPARE", "Context", "check_constant_scales", "check_input_count"]
