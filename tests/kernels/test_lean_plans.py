"""Prepare once, run many: the lean runs that a loaded model calls give what the public kernels give.

The data-movement builtins run index maps made by :func:`dspsim.kernels._plan.index_plan` (the kernel
run once on the element numbers) and the binary ops flatten through :func:`flat_operand`'s maps: both
are second paths to the same values, checked here against the kernels themselves on random shapes,
dtypes and parameters. A model's lean runs still refuse bad data at run time, naming the operator.
"""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim.kernels import data_movement as K
from dspsim.kernels._plan import flat_operand, index_plan
from dspsim.tflite import load_model

SETTINGS = settings(max_examples=60, deadline=None)
OPS = Path(__file__).parents[1] / "golden" / "ops"
DTYPES = (np.int8, np.uint8, np.int16, np.int32, np.float32)
shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
        return
    assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def _values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)


def _check(fn, x, *args, **kw):
    run, out_shapes = index_plan(fn, x.shape, *args, **kw)
    want = fn(x, *args, **kw)
    _same(run(x), want)
    assert out_shapes == tuple(v.shape for v in (want if isinstance(want, tuple) else (want,)))


@SETTINGS
@given(shapes, st.integers(0, 2**31 - 1), st.sampled_from(DTYPES))
def test_index_maps_give_the_strided_slice_slice_and_transpose_kernels_values(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, dtype)
    n = len(shape)
    begin = rng.integers(-6, 6, n)
    end = rng.integers(-6, 6, n)
    strides = rng.choice([-2, -1, 1, 2, 3], n)
    kw = dict(begin_mask=int(rng.integers(0, 2**n)), end_mask=int(rng.integers(0, 2**n)))
    _check(K.strided_slice, x, begin, end, strides, **kw)
    lo = rng.integers(0, shape)
    _check(K.slice_tensor, x, lo, [int(rng.integers(0, d - b + 1)) or -1 for d, b in zip(shape, lo)])
    _check(K.transpose, x, rng.permutation(n))


@SETTINGS
@given(shapes, st.integers(0, 2**31 - 1), st.sampled_from(DTYPES))
def test_index_maps_give_the_split_unpack_and_mirror_pad_kernels_values(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, dtype)
    axis = int(rng.integers(-len(shape), len(shape)))
    d = shape[axis]
    _check(K.split, x, axis, int(rng.choice([k for k in range(1, d + 1) if d % k == 0])))
    cut = sorted(rng.integers(0, d + 1, 2))
    _check(K.split_v, x, np.array([cut[0], cut[1] - cut[0], -1]), axis)
    _check(K.unpack, x, axis)
    mode = K.MirrorPadMode(int(rng.integers(0, 2)))
    off = 1 if mode == K.MirrorPadMode.REFLECT else 0
    pads = np.array([[rng.integers(0, n - off + 1), rng.integers(0, n - off + 1)] for n in shape], np.int32)
    _check(K.mirror_pad, x, pads, mode)


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_index_maps_give_the_block_gather_and_pack_kernels_values(bs, hw, c, seed):
    rng = np.random.default_rng(seed)
    x = _values(rng, (2, bs * hw, bs * (hw + 1), c), np.int8)
    _check(K.space_to_depth, x, bs)
    y = _values(rng, (1, hw, hw + 1, c * bs * bs), np.int16)
    _check(K.depth_to_space, y, bs)
    idx = rng.integers(0, x.shape[2], (2, 3)).astype(np.int32)
    _check(K.gather, x, idx, 2, 0)
    xs = [_values(rng, (hw, c), np.float32) for _ in range(3)]
    run, _ = index_plan(K.pack, [a.shape for a in xs], 1)
    _same(run(xs), K.pack(xs, 1))


@SETTINGS
@given(shapes, st.integers(0, 2**31 - 1))
def test_a_flat_operand_is_the_broadcast_flattened(shape, seed):
    rng = np.random.default_rng(seed)
    small = tuple(1 if rng.random() < 0.5 else d for d in shape)[int(rng.integers(0, len(shape))):]
    x = _values(rng, small, np.int8)
    _same(flat_operand(small, shape)(x), np.broadcast_to(x, shape).reshape(-1))
    _same(flat_operand(small, small)(x[...]), x.reshape(-1))


def _first(model, name):
    return next(k for k, n in model.operators if n == name)


def test_a_lean_quantize_still_refuses_nan_naming_the_operator():
    model = load_model(OPS / "quantize_f32_i16_64.tflite")
    x = np.zeros(model.inputs[0].shape, np.float32)
    x.reshape(-1)[3] = np.nan
    k = _first(model, "QUANTIZE")
    with pytest.raises(ValueError, match=rf"^Model.run: operator {k} \(QUANTIZE\): tflite_quantize: x contains NaN"):
        model.run(x)
    with pytest.raises(ValueError, match=rf"^Model.run: operator {k} \(QUANTIZE\): tflite_quantize: x contains NaN"):
        model.run_operator(k, [x])


def test_a_lean_rsqrt_still_refuses_codes_below_the_zero_point():
    path = next(iter(sorted(OPS.glob("rsqrt*.tflite"))))
    model = load_model(path)
    k = _first(model, "RSQRT")
    zi = model.tensor_info(model.operator_inputs(k)[0]).zero_point
    if zi == -128:
        pytest.skip("no code lies below this model's zero point")
    x = np.full(model.tensor_info(model.operator_inputs(k)[0]).shape, -128, np.int8)
    with pytest.raises(ValueError, match=rf"^Model.run: operator {k} \(RSQRT\): rsqrt: Rsqrt is only defined"):
        model.run_operator(k, [x])
