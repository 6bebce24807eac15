"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR, per engine.

* the reference kernels (``reference_ops::ResizeNearestNeighbor``, and for int8 / int16
  ``ResizeBilinearInteger``: LiteRT's ``resize_bilinear.cc`` and TFLM's call the same code);
* ``Kernel.XNNPACK`` (RESIZE_BILINEAR): LiteRT's default interpreter delegates it to XNNPACK (int8 / uint8;
  ``VisitResizeBilinearNode``), whose 11-bit ``s8-ibilinear`` differs from the reference by one code
  on some outputs;
* ``Kernel.LITERT_OPTIMIZED`` (RESIZE_NEAREST_NEIGHBOR): LiteRT's optimized kernel (16.16 fixed point for
  8-bit codes without align_corners / half_pixel_centers).

The codes are carried without requantization (no engine rescales here), so the output's scale and
zero point are those of the input in every converted model.
"""
from __future__ import annotations

import numpy as np

from ...kernels import resize as K
from ...engines import Kernel
from ..prepare import (Prepared, builtin, check_arity, check_dtype, check_int_types, constant, engine_types,
                       per_tensor_quant, refuse)
from ._lean import unary_run

_I8, _U8, _I16, _I32, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.float32))


def _common(op, g, allowed):
    check_arity(op, 2)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    check_dtype(op, t_out, allowed, "output")
    check_dtype(op, t_in, (t_out.dtype,), "input")
    if len(t_in.shape) != 4:
        refuse(op, f"input must be 4-D (NHWC), got shape {tuple(t_in.shape)}")
    size = constant(op, g, 1, "size")
    if size is None or size.dtype != np.int32 or size.shape != (2,) or (size <= 0).any():
        refuse(op, "size must be a constant int32 tensor of two positive values")
    want = (t_in.shape[0], int(size[0]), int(size[1]), t_in.shape[3])
    if tuple(t_out.shape) != want:
        refuse(op, f"output shape {tuple(t_out.shape)} differs from {want}")
    ac = bool(op.options.get("align_corners", 0))
    hp = bool(op.options.get("half_pixel_centers", 0))
    if ac and hp:
        refuse(op, "if half_pixel_centers is True, align_corners must be False")
    return t_in, t_out, size, ac, hp


@builtin("RESIZE_NEAREST_NEIGHBOR")
def prepare_resize_nearest_neighbor(op, g):
    t_in, t_out, size, ac, hp = _common(op, g, engine_types(op, g, (_F32, _I8, _U8, _I16, _I32)))
    optimized = g.kernel(op) is Kernel.LITERT_OPTIMIZED
    fn = K.optimized_resize_nearest_neighbor if optimized else K.resize_nearest_neighbor
    plan = K.optimized_resize_nearest_neighbor_plan if optimized else K.resize_nearest_neighbor_plan
    kw = dict(align_corners=ac, half_pixel_centers=hp)
    return Prepared(unary_run(op, g, plan, size, **kw), dict(kw, size=size, kernel=fn.__name__))


@builtin("RESIZE_BILINEAR")
def prepare_resize_bilinear(op, g):
    xnnpack = g.kernel(op) is Kernel.XNNPACK
    t_in, t_out, size, ac, hp = _common(op, g, (_I8, _U8, _I16) if xnnpack else engine_types(op, g, (_I8, _U8, _I16)))
    if t_in.dtype == _U8:
        check_int_types(op, g, allowed=(_U8,))
    kw = dict(align_corners=ac, half_pixel_centers=hp)
    if xnnpack and t_in.dtype != _I16:
        if per_tensor_quant(op, t_in, "input") != per_tensor_quant(op, t_out, "output"):
            refuse(op, "XNNPACK's resize needs the input's scale and zero point on the output "
                       "(xnn_define_static_resize_bilinear_2d fails otherwise)")
        return Prepared(unary_run(op, g, K.xnnpack_resize_bilinear_plan, size, **kw),
                        dict(kw, size=size, kernel="xnnpack_resize_bilinear"))
    if t_in.dtype == _U8:  # LiteRT's float template on the codes: reference or optimized (premultiplied weights)
        kw["premultiplied"] = g.kernel(op) is not Kernel.REFERENCE
        return Prepared(unary_run(op, g, K.float_resize_bilinear_plan, size, **kw),
                        dict(kw, size=size, kernel="float_resize_bilinear"))
    kw["rounding"] = g.tflite.rounding
    return Prepared(unary_run(op, g, K.resize_bilinear_plan, size, **kw), dict(kw, size=size, kernel="resize_bilinear"))
