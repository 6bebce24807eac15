"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR kernels (dspsim.kernels.resize) against their oracles
(exact Fractions, float32 steps through reference.f32) on random shapes, sizes and flags, every int8
code, and hand-derived values; bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import oracle as ref
from dspsim.kernels import resize as K

SETTINGS = settings(max_examples=40, deadline=None)
FLAGS = [(False, False), (True, False), (False, True)]


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    bad = np.flatnonzero(a.reshape(-1) != b.reshape(-1))
    assert bad.size == 0, f"{bad.size} differ, first {a.reshape(-1)[bad[0]]} vs {b.reshape(-1)[bad[0]]}"


cases = st.tuples(st.integers(1, 2), st.integers(1, 7), st.integers(1, 7), st.integers(1, 3), st.integers(1, 16),
                  st.integers(1, 16), st.sampled_from(FLAGS), st.integers(0, 2**31 - 1))


def _input(n, h, w, c, dtype, seed):
    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(info.min, int(info.max) + 1, size=(n, h, w, c)).astype(dtype)
    flat = x.reshape(-1)
    flat[:2] = (info.min, info.max)[: flat.size]
    return x


@SETTINGS
@given(cases, st.sampled_from([np.int8, np.uint8, np.int16]))
def test_nearest_neighbor_matches_the_oracle(case, dtype):
    n, h, w, c, oh, ow, (ac, hp), seed = case
    x = _input(n, h, w, c, dtype, seed)
    size = np.array([oh, ow], np.int32)
    _same(K.resize_nearest_neighbor(x, size, align_corners=ac, half_pixel_centers=hp),
          ref.resize_nearest_neighbor_oracle(x, size, align_corners=ac, half_pixel_centers=hp))
    _same(K.optimized_resize_nearest_neighbor(x, size, align_corners=ac, half_pixel_centers=hp),
          ref.optimized_resize_nearest_neighbor_oracle(x, size, align_corners=ac, half_pixel_centers=hp))


def test_optimized_nearest_neighbor_index_differs_from_the_reference_where_measured():
    """14 -> 46 rows, row 23: the exact source position 23 * 14 / 46 is 7; the reference's float32
    scale (14/46 rounded down) gives 6.9999995 and floors it to row 6, LiteRT's 16.16 index (scale
    rounded up by 2^-16) gives row 7. The engines' golden vectors (shape_ops.npz,
    sx_resize_nearest_14x6_to_46x74) show the same."""
    ref_rows = K.nearest_source_indices(14, 46, False, False).tolist()
    opt_rows = [min((i * ((14 << 16) // 46 + 1)) >> 16, 13) for i in range(46)]
    diff = [i for i in range(46) if ref_rows[i] != opt_rows[i]]
    assert len(diff) == 1
    i = diff[0]
    assert i * 14 % 46 == 0 and (ref_rows[i], opt_rows[i]) == (i * 14 // 46 - 1, i * 14 // 46)


@SETTINGS
@given(cases, st.sampled_from([np.int8, np.int16]), st.sampled_from(["double", "single"]))
def test_reference_bilinear_matches_the_oracle(case, dtype, rounding):
    n, h, w, c, oh, ow, (ac, hp), seed = case
    x = _input(n, h, w, c, dtype, seed)
    size = np.array([oh, ow], np.int32)
    _same(K.resize_bilinear(x, size, align_corners=ac, half_pixel_centers=hp, rounding=rounding),
          ref.resize_bilinear_oracle(x, size, align_corners=ac, half_pixel_centers=hp, rounding=rounding))


@SETTINGS
@given(cases, st.sampled_from([np.int8, np.uint8]))
def test_xnnpack_bilinear_matches_the_oracle(case, dtype):
    n, h, w, c, oh, ow, (ac, hp), seed = case
    x = _input(n, h, w, c, dtype, seed)
    size = np.array([oh, ow], np.int32)
    _same(K.xnnpack_resize_bilinear(x, size, align_corners=ac, half_pixel_centers=hp),
          ref.xnnpack_resize_bilinear_oracle(x, size, align_corners=ac, half_pixel_centers=hp))


@pytest.mark.parametrize("ac,hp", FLAGS)
def test_every_int8_code_through_each_bilinear_kernel(ac, hp):
    x = np.arange(-128, 128, dtype=np.int16).astype(np.int8).reshape(1, 4, 8, 8)
    size = np.array([11, 5], np.int32)
    for fn, oracle, kw in ((K.resize_bilinear, ref.resize_bilinear_oracle, {"rounding": "double"}),
                           (K.resize_bilinear, ref.resize_bilinear_oracle, {"rounding": "single"}),
                           (K.xnnpack_resize_bilinear, ref.xnnpack_resize_bilinear_oracle, {})):
        _same(fn(x, size, align_corners=ac, half_pixel_centers=hp, **kw),
              oracle(x, size, align_corners=ac, half_pixel_centers=hp, **kw))


def test_bilinear_ties_round_by_each_engines_rule():
    """Two taps -3 and -2 half way (1 -> 2 columns with align_corners: positions 0 and 1; 1 -> 4 columns
    legacy: position 0.5 at x = 2): the reference rounds -2.5 away from zero (-3) with double rounding and
    up (-2) with single rounding; XNNPACK rounds up (-2)."""
    x = np.array([[-3, -2]], np.int8).reshape(1, 1, 2, 1)
    size = np.array([1, 4], np.int32)  # legacy scale 2/4: x = 1 samples position 0.5
    assert K.resize_bilinear(x, size)[0, 0, 1, 0] == -3
    assert K.resize_bilinear(x, size, rounding="single")[0, 0, 1, 0] == -2
    assert K.xnnpack_resize_bilinear(x, size)[0, 0, 1, 0] == -2
    assert K.resize_bilinear(-x, size)[0, 0, 1, 0] == 3  # +2.5 -> 3 in every rule
    assert K.xnnpack_resize_bilinear(-x, size)[0, 0, 1, 0] == 3


def test_reference_half_pixel_border_extrapolates_onto_one_tap():
    """At the top-left border the reference's position is negative (scale 1024/4 = 256: 128 - 512),
    lower = upper = 0: the weights 1408 and -384 both fall on pixel 0, which is copied."""
    x = np.array([[10, 20], [30, 40]], np.int8).reshape(1, 2, 2, 1)
    y = K.resize_bilinear(x, np.array([8, 8], np.int32), half_pixel_centers=True)
    assert y[0, 0, 0, 0] == 10 and y[0, -1, -1, 0] == 40


@pytest.mark.parametrize("fn", [K.resize_nearest_neighbor, K.resize_bilinear, K.xnnpack_resize_bilinear])
def test_bad_input_names_the_function_and_rule(fn):
    name = fn.__name__
    x = np.zeros((1, 2, 2, 1), np.int8)
    with pytest.raises(ValueError, match=f"{name}: if half_pixel_centers is True, align_corners must be False"):
        fn(x, np.array([2, 2], np.int32), align_corners=True, half_pixel_centers=True)
    with pytest.raises(ValueError, match=f"{name}: size must be two positive ints"):
        fn(x, np.array([0, 2], np.int32))
    with pytest.raises(ValueError, match=f"{name}: x must be a non-empty NHWC array"):
        fn(np.zeros((2, 2, 1), np.int8), np.array([2, 2], np.int32))
    with pytest.raises(TypeError, match=f"{name}: x must have dtype"):
        fn(x.astype(np.int64), np.array([2, 2], np.int32))
