"""The quantize family of ONNX: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (functional: their
parameters may be runtime inputs), Cast, and the int8 <-> uint8 flips ONNX Runtime's fusion inserts
(``_S8ToU8``, ``_U8ToS8``)."""
from __future__ import annotations

import numpy as np

from ..quantize import dequantize_linear, dynamic_quantize_linear, quantize_linear
from ..types import ElemType, NATIVE
from ...fixedpoint import Rounding
from ._common import attrs, fail, guard, keep_layout, opt
from ._params import with_params


def _quantize(node, ctx):
    a = attrs(node)
    if a.get("precision"):
        raise fail(node, "the 'precision' attribute is not supported")
    kw = dict(axis=a.get("axis", 1), block_size=a.get("block_size", 0), saturate=bool(a.get("saturate", 1)),
              output_dtype=a.get("output_dtype") or None, engine=ctx.profile)
    params = {"axis": kw["axis"], "block_size": kw["block_size"], "saturate": kw["saturate"],
              "tie": Rounding.HALF_TO_EVEN}  # x / scale in float32, rounded to nearest even

    def run(i):
        params.update(_scale_zero_point(i))
        y = quantize_linear(i[0], i[1], opt(i, 2), **kw)
        return [keep_layout(i[0], y) if ctx.reference else y]
    return with_params(guard(node, run), params)


def _scale_zero_point(i) -> dict:
    """A QuantizeLinear's / DequantizeLinear's scale and zero point as its run reads them (absent: 0; a 4-bit or
    float8 zero point as its codes)."""
    zp = opt(i, 2)
    return {"scale": np.asarray(i[1]), "zero_point": np.asarray(0 if zp is None else getattr(zp, "codes", zp))}


def _dequantize(node, ctx):
    a = attrs(node)
    kw = dict(axis=a.get("axis", 1), block_size=a.get("block_size", 0), output_dtype=a.get("output_dtype") or None)
    params = {"axis": kw["axis"], "block_size": kw["block_size"]}

    def run(i):
        params.update(_scale_zero_point(i))
        y = dequantize_linear(i[0], i[1], opt(i, 2), **kw)
        return [keep_layout(i[0], y) if ctx.reference else y]
    return with_params(guard(node, run), params)


def _dynamic_quantize(node, ctx):
    return guard(node, lambda i: list(dynamic_quantize_linear(i[0], engine=ctx.profile)))


def _cast(node, ctx):
    to = ElemType(attrs(node)["to"])
    if to not in NATIVE:
        raise fail(node, f"Cast to {to.name} is not supported")
    dt = NATIVE[to]

    def run(i):
        with np.errstate(invalid="ignore", over="ignore"):  # ONNX leaves out-of-range float->int undefined
            return [np.asarray(i[0]).astype(dt)]
    return run


def _s8_to_u8(node, ctx):
    return lambda i: [(np.asarray(i[0]).astype(np.int16) + 128).astype(np.uint8)]


def _u8_to_s8(node, ctx):
    return lambda i: [(np.asarray(i[0]).astype(np.int16) - 128).astype(np.int8)]


PREPARE = {
    "QuantizeLinear": _quantize,
    "DequantizeLinear": _dequantize,
    "DynamicQuantizeLinear": _dynamic_quantize,
    "Cast": _cast,
    "_S8ToU8": _s8_to_u8,
    "_U8ToS8": _u8_to_s8,
}
