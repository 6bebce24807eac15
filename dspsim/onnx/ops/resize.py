"""The resize family of ONNX: Resize (nearest and linear, float32 and 8-bit codes), its arithmetic in
:mod:`dspsim.onnx.resize`."""
from __future__ import annotations

from functools import partial

import numpy as np

from ..resize import output_geometry, plan_onnxruntime, resize_reference, resize_spec
from ._common import attrs, fail, guard, opt
from ._params import with_params

_DTYPES = (np.dtype(np.float32), np.dtype(np.uint8), np.dtype(np.int8))


def prepare_resize(node, ctx):
    """Resize's prepare function (:mod:`dspsim.onnx.ops`): attributes validated at load; the output geometry,
    indices and weights made once per input shape and type (cached when scales / sizes are constants)."""
    a = attrs(node)
    spec = resize_spec(a, ctx.opset, lambda msg: fail(node, msg))
    channels_last = bool(a.get("channels_last", 0))  # set by .fusion (ORT's NHWC layout)
    reference = ctx.reference
    constant = all(ctx.is_const(node, k) for k in (2, 3))
    cache = {}
    named = {"mode": spec.mode, "coordinate_transformation_mode": spec.transform, "nearest_mode": spec.nearest}
    params = dict(named)

    def run_error(msg):
        return ValueError(f"Resize: {msg}")

    def run(i):
        x = i[0]
        if not isinstance(x, np.ndarray) or x.dtype not in _DTYPES:
            raise TypeError(f"Resize: input X must be float32, uint8 or int8, got "
                            f"{getattr(x, 'dtype', type(x).__name__)}")
        apply = cache.get((x.shape, x.dtype))
        if apply is None:
            out_shape, scales = output_geometry(spec, x.shape, opt(i, 2), opt(i, 3), reference, run_error)
            if reference:
                apply = partial(resize_reference, spec=spec, out_shape=out_shape, scales=scales)
            else:
                apply = plan_onnxruntime(x.shape, x.dtype, spec, out_shape, scales, channels_last, run_error)
            if constant:
                cache[(x.shape, x.dtype)] = apply
        params.clear()  # the tables of this input's plan only
        params.update(named, **getattr(apply, "tables", {}))
        return [apply(x)]
    return with_params(guard(node, run), params)


PREPARE = {"Resize": prepare_resize}
