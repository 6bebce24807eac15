"""Data movement kernels (dspsim.kernels.data_movement) against their oracles in dspsim.oracle and against
numpy's own indexing (an independent reading of the same index rules); bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import oracle as ref
from dspsim.kernels import data_movement as K

SETTINGS = settings(max_examples=60, deadline=None)


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
        return
    assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def _codes(rng, shape, dtype=np.int8):
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)


shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


# --------------------------------------------------------------------------------------------
# STRIDED_SLICE
# --------------------------------------------------------------------------------------------
@st.composite
def slice_specs(draw):
    shape = draw(shapes)
    n = len(shape)
    begin = [draw(st.integers(-8, 8)) for _ in range(n)]
    end = [draw(st.integers(-8, 8)) for _ in range(n)]
    strides = [draw(st.sampled_from([-3, -2, -1, 1, 2, 3])) for _ in range(n)]
    bm, em = draw(st.integers(0, 2**n - 1)), draw(st.integers(0, 2**n - 1))
    # shrink only where the index is in range (TensorFlow rejects the others)
    sm = 0
    for d in range(n):
        if -shape[d] <= begin[d] < shape[d] and strides[d] > 0 and draw(st.booleans()) and not bm >> d & 1:
            sm |= 1 << d
    return shape, begin, end, strides, bm, em, sm, draw(st.integers(0, 2**31 - 1))


def _numpy_index(begin, end, strides, bm, em, sm, ellipsis=0, new_axis=0):
    """TensorFlow's slice spec read as numpy indexing: the same rules, written independently."""
    idx = []
    for k, (b, e, s) in enumerate(zip(begin, end, strides)):
        if ellipsis >> k & 1:
            idx.append(Ellipsis)
        elif new_axis >> k & 1:
            idx.append(None)
        elif sm >> k & 1:
            idx.append(b)
        else:
            idx.append(slice(None if bm >> k & 1 else b, None if em >> k & 1 else e, s))
    return tuple(idx)


@SETTINGS
@given(slice_specs())
def test_strided_slice_matches_the_oracle_and_numpy_slicing(spec):
    shape, begin, end, strides, bm, em, sm, seed = spec
    x = _codes(np.random.default_rng(seed), shape)
    kw = dict(begin_mask=bm, end_mask=em, shrink_axis_mask=sm)
    b, e, s = (np.array(v, np.int32) for v in (begin, end, strides))
    y = K.strided_slice(x, b, e, s, **kw)
    _same(y, ref.strided_slice_oracle(x, b, e, s, **kw))
    _same(y, np.array(x[_numpy_index(begin, end, strides, bm, em, sm)]))


@pytest.mark.parametrize("spec", [
    # (begin, end, strides, masks) on a (2, 5, 6, 4) input: numpy's reading of the same spec
    ([1, 0, 2], [2, 0, 4], [1, 1, 1], dict(ellipsis_mask=2, shrink_axis_mask=1)),
    ([0, 3], [0, 1], [1, -2], dict(ellipsis_mask=1)),
    ([0, 0, 1, 0, 0], [0, 0, 4, 0, 0], [1, 1, 1, 1, 1], dict(new_axis_mask=2, begin_mask=0b11001, end_mask=0b11001)),
    ([0, 0, 1], [0, 0, 4], [1, 1, 2], dict(ellipsis_mask=1, new_axis_mask=2)),
    ([0, 2], [0, 3], [1, 1], dict(ellipsis_mask=1, new_axis_mask=1, shrink_axis_mask=2)),  # both bits: ellipsis
    ([1, 0, 3], [2, 0, 0], [1, 1, -1], dict(new_axis_mask=2, shrink_axis_mask=1, end_mask=4)),
    ([1], [2], [1], {}),  # a short spec takes the remaining axes whole
], ids=lambda s: str(s[3]))
def test_strided_slice_ellipsis_and_new_axis_follow_numpy(spec):
    begin, end, strides, masks = spec
    x = _codes(np.random.default_rng(3), (2, 5, 6, 4))
    b, e, s = (np.array(v, np.int32) for v in (begin, end, strides))
    y = K.strided_slice(x, b, e, s, **masks)
    _same(y, ref.strided_slice_oracle(x, b, e, s, **masks))
    idx = _numpy_index(begin, end, strides, masks.get("begin_mask", 0), masks.get("end_mask", 0),
                       masks.get("shrink_axis_mask", 0), masks.get("ellipsis_mask", 0), masks.get("new_axis_mask", 0))
    _same(y, np.array(x[idx]))


def test_strided_slice_offset_makes_end_a_size():
    x = _codes(np.random.default_rng(4), (2, 5, 6, 4))
    y = K.strided_slice(x, np.array([0, 1, 2, 3], np.int32), np.array([2, 2, 9, -2], np.int32),
                        np.array([1, 1, 2, -1], np.int32), offset=True)
    # end = start + size, then the usual clamping: 2:11 -> 2:6 step 2, 3:1 step -1
    _same(y, x[0:2, 1:3, 2:6:2, 3:1:-1])


@pytest.mark.parametrize("begin,stride", [(7, 1), (3, 1), (1, -1)])
def test_strided_slice_refuses_a_shrink_that_selects_nothing(begin, stride):
    """LiteRT and TFLM would write no element of the output (it keeps whatever memory held)."""
    x = _codes(np.random.default_rng(5), (3, 4))
    with pytest.raises(ValueError, match="strided_slice: shrink axis 0 selects no element"):
        K.strided_slice(x, np.array([begin, 0], np.int32), np.array([8, 4], np.int32),
                        np.array([stride, 1], np.int32), shrink_axis_mask=1)


def test_strided_slice_empty_ranges_give_empty_outputs():
    x = _codes(np.random.default_rng(6), (3, 4))
    y = K.strided_slice(x, np.array([2, 0], np.int32), np.array([1, 4], np.int32), np.array([1, 1], np.int32))
    assert y.shape == (0, 4)
    _same(y, ref.strided_slice_oracle(x, [2, 0], [1, 4], [1, 1]))


def test_strided_slice_negative_strides_clamp_to_minus_one():
    x = np.arange(6, dtype=np.int8)
    # start 100 -> 5, stop -100 -> -1 + 6 = ... clamped to -1: the whole axis reversed
    _same(K.strided_slice(x, [100], [-100], [-1]), x[::-1].copy())
    _same(K.strided_slice(x, [-1], [0], [-2]), np.array([5, 3, 1], np.int8))


@pytest.mark.parametrize("kw,match", [
    (dict(strides=[0, 1]), "non-zero"),
    (dict(strides=[-(1 << 31), 1]), "INT32_MIN"),
    (dict(ellipsis_mask=3), "more than one bit"),
    (dict(shrink_axis_mask=4), "beyond"),
    (dict(begin=[0, 0, 0], end=[1, 1, 1], strides=[1, 1, 1]), "rank-2"),
    (dict(ellipsis_mask=1, offset=True), "offset"),
])
def test_strided_slice_bad_input_names_the_rule(kw, match):
    x = np.zeros((3, 4), np.int8)
    args = dict(begin=[0, 0], end=[1, 1], strides=[1, 1])
    args.update(kw)
    with pytest.raises(ValueError, match=f"strided_slice: .*{match}"):
        K.strided_slice(x, np.array(args.pop("begin")), np.array(args.pop("end")), np.array(args.pop("strides")),
                        **args)


def test_strided_slice_refuses_floats_for_indices_and_strings_for_data():
    with pytest.raises(TypeError, match="strided_slice: begin"):
        K.strided_slice(np.zeros(3, np.int8), [0.5], [1], [1])
    with pytest.raises(TypeError, match="strided_slice: x"):
        K.strided_slice(np.array(["a"]), [0], [1], [1])


# --------------------------------------------------------------------------------------------
# SLICE, SPLIT, SPLIT_V
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(shapes, st.integers(0, 2**31 - 1))
def test_slice_matches_the_oracle_and_numpy(shape, seed):
    rng = np.random.default_rng(seed)
    x = _codes(rng, shape, np.int16)
    begin = [int(rng.integers(0, n)) for n in shape]
    size = [int(rng.choice([-1, rng.integers(0, n - b + 1)])) for n, b in zip(shape, begin)]
    y = K.slice_tensor(x, np.array(begin), np.array(size))
    _same(y, ref.slice_tensor_oracle(x, np.array(begin), np.array(size)))
    _same(y, x[tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))])


def test_slice_refuses_what_litert_refuses():
    x = np.zeros((3, 4), np.int8)
    for begin, size in (([0, -1], [1, 1]), ([1, 2], [3, 1]), ([0, 0], [1, -2])):
        with pytest.raises(ValueError, match="slice_tensor: invalid begin and size"):
            K.slice_tensor(x, np.array(begin), np.array(size))


@SETTINGS
@given(shapes, st.integers(0, 2**31 - 1))
def test_split_and_split_v_match_the_oracles_and_numpy(shape, seed):
    rng = np.random.default_rng(seed)
    x = _codes(rng, shape)
    axis = int(rng.integers(-len(shape), len(shape)))
    n = shape[axis]
    k = int(rng.choice([d for d in range(1, n + 1) if n % d == 0]))
    _same(K.split(x, axis, k), ref.split_oracle(x, axis, k))
    _same(K.split(x, axis, k), tuple(np.split(x, k, axis=axis)))
    cuts = sorted(rng.integers(0, n + 1, size=2).tolist())
    sizes = [cuts[0], cuts[1] - cuts[0], n - cuts[1]]
    sizes_m1 = list(sizes)
    sizes_m1[int(rng.integers(0, 3))] = -1
    y = K.split_v(x, np.array(sizes_m1), axis)
    _same(y, ref.split_v_oracle(x, sizes_m1, axis))
    _same(y, tuple(np.split(x, cuts, axis=axis)))


def test_split_bad_input():
    x = np.zeros((2, 6), np.int8)
    with pytest.raises(ValueError, match="split: dimension 6 .* not a multiple"):
        K.split(x, 1, 4)
    with pytest.raises(ValueError, match="split_v: the size_splits contains more than one -1"):
        K.split_v(x, np.array([-1, -1]), 1)
    with pytest.raises(ValueError, match="split_v: size_splits .* add up"):
        K.split_v(x, np.array([2, 3]), 1)
    with pytest.raises(ValueError, match="split: axis 2 is out of range"):
        K.split(x, 2, 1)


# --------------------------------------------------------------------------------------------
# TRANSPOSE, GATHER, PACK, UNPACK
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(shapes, st.integers(0, 2**31 - 1))
def test_transpose_matches_the_oracle_and_numpy(shape, seed):
    rng = np.random.default_rng(seed)
    x = _codes(rng, shape, np.uint8)
    perm = rng.permutation(len(shape))
    y = K.transpose(x, perm)
    _same(y, ref.transpose_oracle(x, perm))
    _same(y, np.transpose(x, perm).copy())
    assert y.flags["C_CONTIGUOUS"]


def test_transpose_refuses_a_non_permutation():
    with pytest.raises(ValueError, match="transpose: perm \\[0, 0\\] is not a permutation"):
        K.transpose(np.zeros((2, 3), np.int8), np.array([0, 0]))


@SETTINGS
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), st.integers(0, 2**31 - 1))
def test_gather_matches_the_oracle_and_numpy(shape, seed):
    rng = np.random.default_rng(seed)
    x = _codes(rng, shape)
    axis = int(rng.integers(0, len(shape)))
    bd = int(rng.integers(0, axis + 1)) if axis < len(shape) else 0
    bd = min(bd, axis)
    idx_shape = shape[:bd] + tuple(int(v) for v in rng.integers(1, 4, size=int(rng.integers(0, 3))))
    idx = rng.integers(0, shape[axis], size=idx_shape).astype(np.int32)
    y = K.gather(x, idx, axis - len(shape) if rng.integers(2) else axis, bd)
    _same(y, ref.gather_oracle(x, idx, axis, bd))
    if bd == 0:
        _same(y, np.take(x, idx, axis=axis))


def test_gather_refuses_out_of_range_indices_and_bad_batch_dims():
    x = np.zeros((2, 3, 4), np.int8)
    with pytest.raises(ValueError, match="gather: an index lies outside \\[0, 3\\)"):
        K.gather(x, np.array([3], np.int32), axis=1)
    with pytest.raises(ValueError, match="gather: an index lies outside"):
        K.gather(x, np.array([-1], np.int32), axis=1)
    with pytest.raises(ValueError, match="gather: batch_dims 2 must satisfy"):
        K.gather(x, np.zeros((2, 3), np.int32), axis=1, batch_dims=2)
    with pytest.raises(TypeError, match="gather: indices"):
        K.gather(x, np.array([0.0]), axis=1)


@SETTINGS
@given(shapes, st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_pack_and_unpack_match_the_oracles_and_numpy(shape, n, seed):
    rng = np.random.default_rng(seed)
    xs = [_codes(rng, shape, np.int16) for _ in range(n)]
    axis = int(rng.integers(-len(shape) - 1, len(shape) + 1))
    y = K.pack(xs, axis)
    _same(y, ref.pack_oracle(xs, axis))
    _same(y, np.stack(xs, axis=axis))
    back = K.unpack(y, axis)
    _same(back, ref.unpack_oracle(y, axis))
    _same(back, tuple(xs))


def test_pack_refuses_mixed_shapes_and_unpack_a_wrong_num():
    with pytest.raises(ValueError, match="pack: every input must have the shape"):
        K.pack([np.zeros(3, np.int8), np.zeros(4, np.int8)])
    with pytest.raises(ValueError, match="unpack: num 3 differs"):
        K.unpack(np.zeros((2, 4), np.int8), 0, num=3)


# --------------------------------------------------------------------------------------------
# MIRROR_PAD, SPACE_TO_DEPTH, DEPTH_TO_SPACE
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(shapes, st.sampled_from(["REFLECT", "SYMMETRIC"]), st.integers(0, 2**31 - 1))
def test_mirror_pad_matches_the_oracle_and_numpy_pad(shape, mode, seed):
    rng = np.random.default_rng(seed)
    x = _codes(rng, shape)
    off = 1 if mode == "REFLECT" else 0
    pads = np.array([[rng.integers(0, n - off + 1), rng.integers(0, n - off + 1)] for n in shape], np.int32)
    y = K.mirror_pad(x, pads, mode)
    _same(y, ref.mirror_pad_oracle(x, pads, mode))
    _same(y, np.pad(x, pads.tolist(), mode=mode.lower()))


def test_mirror_pad_index_is_the_engines_formula():
    # REFLECT of [a b c] by 2 each side: c b [a b c] b a; SYMMETRIC: b a [a b c] c b
    assert [K.mirror_pad_index(i, 2, 3, 1) for i in range(7)] == [2, 1, 0, 1, 2, 1, 0]
    assert [K.mirror_pad_index(i, 2, 3, 0) for i in range(7)] == [1, 0, 0, 1, 2, 2, 1]


def test_mirror_pad_refuses_paddings_past_tensorflows_limit():
    x = np.zeros((1, 3), np.int8)
    with pytest.raises(ValueError, match="mirror_pad: paddings \\(0, 3\\) of axis 1 must lie in \\[0, 2\\]"):
        K.mirror_pad(x, np.array([[0, 0], [0, 3]]), "REFLECT")
    K.mirror_pad(x, np.array([[0, 0], [0, 3]]), "SYMMETRIC")  # dim itself is allowed there
    with pytest.raises(ValueError, match="mirror_pad: mode"):
        K.mirror_pad(x, np.array([[0, 0], [0, 1]]), "EDGE")


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3),
       st.integers(0, 2**31 - 1))
def test_space_to_depth_and_back_match_the_oracles(n, h, w, c, bs, seed):
    rng = np.random.default_rng(seed)
    x = _codes(rng, (n, h * bs, w * bs, c))
    y = K.space_to_depth(x, bs)
    _same(y, ref.space_to_depth_oracle(x, bs))
    z = K.depth_to_space(y, bs)
    _same(z, ref.depth_to_space_oracle(y, bs))
    _same(z, x)  # the two are inverse


def test_depth_to_space_is_dcr_ordered():
    x = np.arange(8, dtype=np.int8).reshape(1, 1, 1, 8)  # bs 2, C 2: depth = (dy*2 + dx)*2 + c
    y = K.depth_to_space(x, 2)
    assert y[0, :, :, 0].tolist() == [[0, 2], [4, 6]] and y[0, :, :, 1].tolist() == [[1, 3], [5, 7]]


def test_block_ops_refuse_bad_shapes():
    with pytest.raises(ValueError, match="space_to_depth: x must be NHWC with height and width multiples of 2"):
        K.space_to_depth(np.zeros((1, 3, 4, 1), np.int8), 2)
    with pytest.raises(ValueError, match="depth_to_space: x must be NHWC with a depth that is a multiple of 4"):
        K.depth_to_space(np.zeros((1, 1, 1, 6), np.int8), 2)
    with pytest.raises(ValueError, match="depth_to_space: block_size"):
        K.depth_to_space(np.zeros((1, 1, 1, 4), np.int8), 0)


def test_batched_swap_plan_equals_transpose_on_every_perm_it_takes():
    """Every permutation of 1- to 5-d shapes: the plan exists exactly for a kept batch then two swapped runs of
    axes, and gives np.transpose's array."""
    from itertools import permutations

    from dspsim.kernels.data_movement import batched_swap_plan

    rng = np.random.default_rng(5)
    taken = 0
    for rank in range(1, 6):
        shape = tuple(int(d) for d in rng.integers(1, 5, rank))
        x = rng.integers(-128, 128, shape).astype(np.int8)
        for perm in permutations(range(rank)):
            run = batched_swap_plan(shape, perm)
            p = list(perm)
            k = next((i for i in range(rank) if p[i] != i), rank)
            rotation = k < rank and p[k:] == list(range(p[k], rank)) + list(range(k, p[k]))
            assert (run is not None) == rotation, perm
            if run is not None:
                taken += 1
                np.testing.assert_array_equal(run(x), np.transpose(x, perm))
    assert taken == 20  # rank r has (r - 1) r / 2 of them
