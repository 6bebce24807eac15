"""Golden vectors for the regimes of the data movement / resize / selection / cast operators that
make_golden_ops.py's "movement" and "reductions" families leave out, from the same three engines
(TFLite Micro, LiteRT BUILTIN_REF, LiteRT default):

* STRIDED_SLICE with the ellipsis and new-axis masks, ``offset``, shrink on negative strides and
  out-of-range (clamped) indices: models built from the schema (the converter never writes these
  masks; it emits RESHAPE + a mask-free STRIDED_SLICE); and 40 seeded random specs (declared shape
  TensorFlow's);
* RESIZE_NEAREST_NEIGHBOR at a size where LiteRT's optimized 16.16 index differs from the
  reference's float32 index (14 -> 46 rows, 6 -> 74 columns);
* RESIZE_BILINEAR at odd up- and down-sampling ratios, each flag combination, an output of 1; 12
  seeded random sizes and flags for bilinear and nearest neighbour;
* int16 (16x8 converter) RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, STRIDED_SLICE and TRANSPOSE;
* ARG_MAX on raw int8 / uint8 inputs full of ties (first index wins), int32 and int64 outputs;
* CAST between float32, int8, uint8, int16 and int32, with ties (k + 0.5), out-of-range values,
  +-inf and NaN in separate cases (C++ leaves those undefined; what the engines do is recorded).

Run with the golden venv from the repository root (about 4 minutes)::

    /work/goldvenv/bin/python tests/golden/make_golden_shape_ops.py

Output: ``tests/golden/ops/shape_ops.npz`` (packed format of make_golden_ops.py, README "Per-operator
models") and the models ``tests/golden/ops/sx_*.tflite``.
"""
from __future__ import annotations

import os
import sys
import tempfile
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden_ops as G  # noqa: E402
from _tflite_edit import S, one_op_model  # noqa: E402

RUNS = G.RUNS


def _ss(name, shape, out_shape, begin, end, strides, **masks):
    n = len(begin)
    opts = S.StridedSliceOptionsT()
    opts.beginMask, opts.endMask = masks.get("begin_mask", 0), masks.get("end_mask", 0)
    opts.ellipsisMask, opts.newAxisMask = masks.get("ellipsis_mask", 0), masks.get("new_axis_mask", 0)
    opts.shrinkAxisMask, opts.offset = masks.get("shrink_axis_mask", 0), masks.get("offset", False)
    i8 = S.TensorType.INT8
    tensors = [("x", shape, i8, 0.1, 0, None),
               ("begin", (n,), S.TensorType.INT32, None, 0, np.array(begin, np.int32)),
               ("end", (n,), S.TensorType.INT32, None, 0, np.array(end, np.int32)),
               ("strides", (n,), S.TensorType.INT32, None, 0, np.array(strides, np.int32)),
               ("y", out_shape, i8, 0.1, 0, None)]
    mb = one_op_model(S.BuiltinOperator.STRIDED_SLICE, S.BuiltinOptions.StridedSliceOptions, opts, tensors,
                      [0, 1, 2, 3], [4], version=4 if len(shape) > 4 else 2)
    return G.Case("shape_ops", name, mb, f"strided slice {shape} begin {begin} end {end} strides {strides} {masks}")


def strided_slice_cases():
    x4 = (2, 5, 6, 4)
    return [
        _ss("sx_ss_ellipsis_shrink", x4, (5, 6, 2), [1, 0, 2], [2, 0, 5], [1, 1, 1], ellipsis_mask=2,
            shrink_axis_mask=1),
        _ss("sx_ss_ellipsis_first", x4, (2, 5, 6, 1), [0, 3], [0, 1], [1, -2], ellipsis_mask=1),
        _ss("sx_ss_new_axis", (5, 6, 4), (5, 1, 3, 4), [0, 0, 1, 0], [0, 0, 4, 0], [1, 1, 1, 1], new_axis_mask=2,
            begin_mask=9, end_mask=9),
        _ss("sx_ss_new_axis_ellipsis", x4, (2, 5, 6, 1, 2), [0, 0, 1], [0, 0, 4], [1, 1, 2], ellipsis_mask=1,
            new_axis_mask=2),
        _ss("sx_ss_offset", x4, (2, 2, 2, 4), [0, 1, 2, 0], [2, 2, 2, 4], [1, 1, 1, 1], offset=True),
        _ss("sx_ss_shrink_negative", x4, (3, 4, 4), [-1, 3, -2, 0], [0, 0, 0, 0], [1, -1, -1, 1],
            shrink_axis_mask=1, end_mask=8),
        _ss("sx_ss_clamped", x4, (2, 2, 2, 4), [-10, 1, 7, 0], [10, 100, -100, 4], [1, 2, -3, 1]),
        _ss("sx_ss_empty", x4, (2, 0, 6, 4), [0, 3, 0, 0], [2, 1, 6, 4], [1, 1, 1, 1]),
        _ss("sx_ss_short_spec", x4, (1, 5, 6, 4), [1], [2], [1]),
    ]


def random_strided_slice_cases(n=40):
    """Seeded random slice specs (ranks 1-4, indices in [-7, 7], strides +-1..3, random masks, at most one
    ellipsis, new axes), the declared output shape TensorFlow's; specs TensorFlow rejects are skipped."""
    t = G.tf()
    rng = np.random.default_rng(20261201)
    out = []
    while len(out) < n:
        rank = int(rng.integers(1, 5))
        shape = tuple(int(v) for v in rng.integers(1, 6, rank))
        count = int(np.clip(rank + rng.integers(-1, 2), 1, 5))
        begin = [int(v) for v in rng.integers(-7, 8, count)]
        end = [int(v) for v in rng.integers(-7, 8, count)]
        strides = [int(rng.choice([-3, -2, -1, 1, 1, 2, 3])) for _ in range(count)]
        bits = lambda p: sum(1 << k for k in range(count) if rng.random() < p)  # noqa: E731
        masks = dict(begin_mask=bits(0.3), end_mask=bits(0.3), new_axis_mask=bits(0.15), shrink_axis_mask=bits(0.2))
        masks["ellipsis_mask"] = (1 << int(rng.integers(0, count))) if rng.random() < 0.3 else 0
        try:
            y = t.strided_slice(t.zeros(shape), begin, end, strides, **masks)
        except Exception:  # noqa: BLE001  (TensorFlow refuses the spec)
            continue
        if len(y.shape) > 5 or int(np.prod(y.shape)) == 0:
            continue
        out.append(_ss(f"sx_ss_random{len(out):02d}", shape, tuple(int(v) for v in y.shape), begin, end, strides,
                       **masks))
    return out


def int16_cases():
    """16x8 converter models (int16 activations): bilinear and nearest resizes, a strided slice, a transpose."""
    t = G.tf()
    bl = t.compat.v1.image.resize_bilinear
    out = []
    for name, fn, shape in (
            ("sx_i16_resize_bilinear_hp", lambda x: bl(x, (7, 9), half_pixel_centers=True), (1, 4, 5, 3)),
            ("sx_i16_resize_bilinear_ac", lambda x: bl(x, (7, 9), align_corners=True), (1, 4, 5, 3)),
            ("sx_i16_resize_nearest", lambda x: t.compat.v1.image.resize_nearest_neighbor(x, (46, 9)), (1, 14, 5, 2)),
            ("sx_i16_strided_slice", lambda x: x[:, ::-2, 1:4, :], (2, 5, 6, 4)),
            ("sx_i16_transpose", lambda x: t.transpose(x, (0, 3, 1, 2)), (2, 3, 4, 5))):
        mb = G.convert(fn, [shape], zlib.crc32(name.encode()), int16=True, autograph=False)
        out.append(G.Case("shape_ops", name, mb, f"int16 (16x8) {name[8:]}"))
    return out


def random_resize_cases(n=12):
    """Seeded random bilinear and nearest-neighbour resizes (sizes 1-12, random flags), int8 converter models."""
    t = G.tf()
    rng = np.random.default_rng(20261202)
    out = []
    for k in range(n):
        h, w, oh, ow = (int(v) for v in rng.integers(1, 13, 4))
        ac, hp = [(False, False), (True, False), (False, True)][int(rng.integers(0, 3))]
        for kind, f1 in (("bilinear", t.compat.v1.image.resize_bilinear),
                         ("nearest", t.compat.v1.image.resize_nearest_neighbor)):
            name = f"sx_resize_random{k:02d}_{kind}"
            fn = (lambda x, f1=f1, s=(oh, ow), a=ac, p=hp: f1(x, s, align_corners=a, half_pixel_centers=p))
            out.append(G.Case("shape_ops", name, G.conv(fn, [(1, h, w, 2)], zlib.crc32(name.encode())),
                              f"{kind} {h}x{w} -> {oh}x{ow}, align_corners {ac}, half_pixel_centers {hp}"))
    return out


def resize_cases():
    t = G.tf()
    out = []

    def add(name, fn, shape, what):
        out.append(G.Case("shape_ops", name, G.conv(fn, [shape], zlib.crc32(name.encode())), what))

    nn = t.compat.v1.image.resize_nearest_neighbor
    bl = t.compat.v1.image.resize_bilinear
    add("sx_resize_nearest_14x6_to_46x74", lambda x: nn(x, (46, 74)), (1, 14, 6, 2),
        "nearest 14x6 -> 46x74: LiteRT's optimized 16.16 index differs from the float32 reference")
    add("sx_resize_nearest_14x6_to_46x74_hp", lambda x: nn(x, (46, 74), half_pixel_centers=True), (1, 14, 6, 2),
        "nearest, half_pixel_centers")
    add("sx_resize_nearest_14x6_to_46x74_ac", lambda x: nn(x, (46, 74), align_corners=True), (1, 14, 6, 2),
        "nearest, align_corners")
    for (h, w), (oh, ow) in (((5, 7), (13, 11)), ((6, 9), (4, 5)), ((3, 4), (1, 1)), ((1, 3), (5, 8))):
        for ac, hp in ((False, False), (True, False), (False, True)):
            name = f"sx_resize_bilinear_{h}x{w}_to_{oh}x{ow}{'_ac' if ac else ''}{'_hp' if hp else ''}"
            add(name, lambda x, s=(oh, ow), a=ac, p=hp: bl(x, s, align_corners=a, half_pixel_centers=p), (2, h, w, 3),
                f"bilinear {h}x{w} -> {oh}x{ow}, align_corners {ac}, half_pixel_centers {hp}")
    return out


def _raw(fn, shape, dtype):
    t = G.tf()
    conc = t.function(fn, input_signature=[t.TensorSpec(shape, dtype)], autograph=False).get_concrete_function()
    return t.lite.TFLiteConverter.from_concrete_functions([conc]).convert()


def arg_max_cases():
    t = G.tf()
    out = []
    for src in ("int8", "uint8"):  # the converter has no int16 ARG_MAX (it needs Flex)
        for ot in ("int32", "int64"):
            for axis in (2, 0):
                name = f"sx_arg_max_ties_{src}_{ot}_axis{axis}"
                mb = _raw(lambda x, a=axis, o=getattr(t, ot): t.argmax(x, axis=a, output_type=o), (3, 4, 6),
                          getattr(t, src))
                out.append(G.Case("shape_ops", name, mb, f"argmax of raw {src} codes with ties, axis {axis}, {ot}"))
    return out


def cast_cases():
    t = G.tf()
    out = []
    pairs = [("float32", d) for d in ("int8", "uint8", "int16", "int32")] + [
        ("int8", "uint8"), ("uint8", "int8"), ("int16", "int8"), ("int32", "int16"), ("int32", "float32"),
        ("uint8", "int32"), ("int16", "float32")]
    for src, dst in pairs:
        kinds = ("in_range", "special") if src == "float32" else ("in_range",)
        for kind in kinds:
            name = f"sx_cast_{src}_{dst}" + ("_special" if kind == "special" else "")
            mb = _raw(lambda x, d=getattr(t, dst): t.cast(x, d), (4, 64), getattr(t, src))
            out.append(G.Case("shape_ops", name, mb, f"cast {src} -> {dst} ({kind} values)"))
    return out


def make_inputs(model, name):
    """Inputs of the arg-max and cast cases (ties, wide ranges, special floats); else make_golden_ops's."""
    sg = model.subgraphs[0]
    tt = sg.tensors[sg.inputs[0]]
    shape = tuple(int(v) for v in tt.shape)
    n = int(np.prod(shape))
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    dt = G.NP_DTYPES[tt.type]
    if name.startswith("sx_arg_max"):
        info = np.iinfo(dt)
        runs = [rng.integers(-1, 2, n), rng.choice([info.min, info.max], n), np.full(n, 7),
                rng.integers(info.min, info.max + 1, n)]
    elif name.startswith("sx_cast_float32"):
        if name.endswith("_special"):
            special = np.array([np.nan, -np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, -3e9, 2.0**31, -2.0**31,
                                2.0**31 - 128, 65535.5, 65536.0, -32768.5, -32769.0, 32767.5, 32768.0, 255.5, 256.0,
                                -0.5, -1.0, 127.5, 128.0, -128.5, -129.0, 1e-40, -0.0], np.float32)
            runs = [np.resize(special, n), rng.uniform(-1e5, 1e5, n), rng.uniform(-400, 400, n),
                    np.resize(special[::-1], n)]
        else:
            lo, hi = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
                      "int32": (-2.0**31, 2.0**31 - 128)}[name.split("_")[3]]
            ties = np.arange(n) * 0.5 - n / 4 + (lo + hi) / 2 if hi < 2**16 else (np.arange(n) - n / 2) * 1e7 + 0.5
            runs = [np.clip(ties, lo, hi), rng.uniform(lo, hi, n), np.clip(rng.normal(0, 50, n), lo, hi),
                    np.linspace(lo, hi, n)]
    elif name.startswith("sx_cast") and dt == np.int32:
        big = rng.integers(-2**31, 2**31, n)
        runs = [np.arange(n) - n // 2, big, rng.integers(-70000, 70000, n), (2**24 + rng.integers(0, 64, n)) *
                rng.choice([-1, 1], n)]
    else:
        return _default_inputs(model, name)
    return [np.stack([np.asarray(r).reshape(shape) for r in runs]).astype(dt)]


_default_inputs = G.make_inputs


def main():
    G.make_inputs = make_inputs  # record_case looks the name up at call time
    os.makedirs(G.HERE, exist_ok=True)
    vers = G.versions()
    packer = G.Packer()
    with tempfile.TemporaryDirectory() as tmp:
        for case in (strided_slice_cases() + random_strided_slice_cases() + resize_cases() + random_resize_cases()
                     + int16_cases() + arg_max_cases() + cast_cases()):
            meta, inputs, results = G.record_case(case, tmp)
            G.pack_case(packer, meta, inputs, results)
            print(G.describe(meta), flush=True)
    path = os.path.join(G.HERE, "shape_ops.npz")
    packer.write(path, {"family": "shape_ops", "versions": vers, "engines": list(G.ENGINES)})
    print(f"wrote {path}: {len(packer.cases)} cases, {os.path.getsize(path)} bytes", flush=True)


if __name__ == "__main__":
    main()
