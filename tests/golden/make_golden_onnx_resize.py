"""Write tests/golden/onnx/resize.npz: one-node Resize models (modes nearest and linear, every
coordinate_transformation_mode the quantizer's models use, every nearest_mode; float32, uint8 and
int8 data; scales up and down, integer and not, sizes, axes, 2-D inputs, NHWC-shaped scales
[1, s, s, 1] (ORT's integer NHWC kernel on 8-bit data), float specials) run by ONNX Runtime
(CPUExecutionProvider, graph optimizations off) and onnx.reference.ReferenceEvaluator.

Same layout as ops.npz (``Writer`` of make_golden_onnx_ops.py): ``<case>/model``, ``<case>/in{k}``,
``<case>/ort{k}``, ``<case>/ref{k}``, ``meta``. Deterministic (seeded); about 2 s:

    python tests/golden/make_golden_onnx_resize.py
"""
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(__file__))
from make_golden_onnx_ops import Writer, cpu_flags  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "onnx", "resize.npz")
TRANSFORMS = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
SCALES = {"up2": [1, 1, 2, 2], "up1p5x2p5": [1, 1, 1.5, 2.5], "down0p6x0p5": [1, 1, 0.6, 0.5]}


def data(rng, dtype, shape):
    if dtype == np.float32:
        return (rng.standard_normal(shape) * 3).astype(np.float32)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, shape).astype(dtype)
    x.reshape(-1)[:4] = [info.min, info.max, info.min, info.max]  # the extremes next to each other
    return x


def add(w, name, x, attrs, scales=None, sizes=None, opset=19, axes=None):
    inputs = [("x", x), ("roi", np.zeros(0, np.float32))]
    const = ["roi"]
    if scales is not None:
        inputs.append(("scales", np.asarray(scales, np.float32)))
        const.append("scales")
    else:
        inputs += [("scales", np.zeros(0, np.float32)), ("sizes", np.asarray(sizes, np.int64))]
        const += ["scales", "sizes"]
    if axes is not None:
        attrs = dict(attrs, axes=axes)
    w.add(name, "Resize", inputs, [onnx.helper.np_dtype_to_tensor_dtype(x.dtype)], attrs, opset=opset,
          const=tuple(const))


def main():
    rng = np.random.default_rng(1914)
    w = Writer()
    shape = (1, 2, 5, 7)
    for dt in (np.float32, np.uint8, np.int8):
        nm = np.dtype(dt).name
        x = data(rng, dt, shape)
        for t in TRANSFORMS:
            for sk, s in SCALES.items():
                add(w, f"linear_{nm}_{t}_{sk}", x, dict(mode="linear", coordinate_transformation_mode=t), s)
            add(w, f"linear_{nm}_{t}_sizes4x9", x, dict(mode="linear", coordinate_transformation_mode=t),
                sizes=[1, 2, 4, 9])
            if dt != np.float32:  # scales on H, W of an NHWC-shaped tensor: NhwcUpsampleBilinearInteger
                xn = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
                for sk in ("up1p5x2p5", "down0p6x0p5"):
                    s = SCALES[sk]
                    add(w, f"linear_nhwc_{nm}_{t}_{sk}", xn, dict(mode="linear", coordinate_transformation_mode=t),
                        [1, s[2], s[3], 1])
        for t in TRANSFORMS:
            for nmode in NEAREST:
                for sk in ("up1p5x2p5", "down0p6x0p5") if dt == np.float32 else ("up1p5x2p5",):
                    add(w, f"nearest_{nm}_{t}_{nmode}_{sk}", x,
                        dict(mode="nearest", coordinate_transformation_mode=t, nearest_mode=nmode), SCALES[sk])
        x2 = data(rng, dt, (5, 6))
        add(w, f"linear_2d_{nm}_half_pixel", x2, dict(mode="linear"), [1.5, 2.5])
        add(w, f"nearest_2d_{nm}_asymmetric_floor", x2,
            dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), [2, 2])
    x = data(rng, np.float32, shape)
    add(w, "linear_float32_axes23_opset19", x, dict(mode="linear"), [2.0, 1.5], axes=[2, 3])
    add(w, "nearest_float32_axes_sizes_opset19", x, dict(mode="nearest"), sizes=[3, 9], axes=[2, 3])
    add(w, "linear_float32_opset13", x, dict(mode="linear", coordinate_transformation_mode="align_corners"),
        SCALES["up2"], opset=13)
    add(w, "nearest_float32_opset11", x, dict(mode="nearest"), SCALES["up1p5x2p5"], opset=11)
    add(w, "linear_float32_same_size", x, dict(mode="linear"), sizes=list(shape))
    add(w, "nearest_rank3_float32_unit_scale", x[0], dict(mode="nearest"), [1, 1.5, 2])
    sp = x.copy()
    sp[0, 0, 0, :4] = [np.inf, -np.inf, np.nan, -0.0]
    sp[0, 1, 2, 3] = 3e38
    sp[0, 1, 2, 4] = 3.2e38
    for mode in ("linear", "nearest"):
        add(w, f"{mode}_float32_specials", sp, dict(mode=mode), SCALES["up1p5x2p5"])
    versions = dict(onnx=onnx.__version__, onnxruntime=ort.__version__, numpy=np.__version__, cpu=cpu_flags())
    w.arrays["meta"] = np.array(json.dumps(dict(versions=versions, cases=w.meta)))
    np.savez_compressed(OUT, **w.arrays)
    print(f"{len(w.meta)} cases -> {OUT} ({os.path.getsize(OUT)} bytes)")
    for m in w.meta:
        if m["ort_error"] or m["ref_error"]:
            print(" ", m["name"], m["ort_error"], m["ref_error"])


if __name__ == "__main__":
    main()
