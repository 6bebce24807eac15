"""The reduce family of ONNX: ReduceMax and ReduceMin (exact: numpy's max and min)."""
from __future__ import annotations

import numpy as np

from ._common import attrs


def _reduce(fn):
    def prep(node, ctx):
        a = attrs(node)
        keep = bool(a.get("keepdims", 1))

        def run(i):
            axes = a.get("axes")
            if len(i) > 1 and i[1] is not None:
                axes = i[1]
            ax = None if axes is None or len(axes) == 0 else tuple(int(v) for v in np.asarray(axes).reshape(-1))
            return [np.asarray(fn(i[0], axis=ax, keepdims=keep))]
        return run
    return prep


PREPARE = {
    "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
}
