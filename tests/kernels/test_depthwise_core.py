"""The depthwise core (dspsim.kernels.mac.depthwise_core) against the plain-Python oracle, on the shapes that take its
vpmaddwd tap pairs (runs of pixels at stride 1, 16- and 8-channel blocks per pixel at stride > 1) and its direct
loops (borders, odd channel counts, depth multiplier > 1), and its int32 wrap modulo 2^32."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import oracle as ref
from dspsim.kernels.mac import depthwise_core as core
from dspsim.requant import Requant
from oracle_views import oracle_requant
from depthwise_cases import CHANNELS, RANGES, codes, plain_sums, run_case

@st.composite
def cases(draw):
    c = draw(st.sampled_from(CHANNELS))
    mult = draw(st.sampled_from([1, 1, 1, 2])) if c <= 9 else 1
    kh, kw = draw(st.sampled_from([(3, 3), (3, 3), (1, 1), (2, 3), (3, 1), (5, 1), (1, 2)]))
    xd, wd = draw(st.sampled_from(["int8", "uint8"])), draw(st.sampled_from(["int8", "uint8"]))
    return dict(
        b=draw(st.integers(1, 3)), h=draw(st.integers(1, 7)), w=draw(st.integers(1, 7)), c=c, mult=mult, k=(kh, kw),
        stride=(draw(st.integers(1, 2)), draw(st.integers(1, 2))),
        dil=(draw(st.integers(1, 2)), draw(st.integers(1, 2))),
        pads=[draw(st.integers(0, 2)) for _ in range(4)], xd=xd, wd=wd,
        zx=draw(st.one_of(st.sampled_from(RANGES[xd]), st.integers(*RANGES[xd]))),
        zw=draw(st.one_of(st.sampled_from(RANGES[wd]), st.integers(*RANGES[wd]))),
        per_channel_zw=draw(st.booleans()), edge=draw(st.booleans()), seed=draw(st.integers(0, 2**32 - 1)),
        shift=draw(st.integers(-5, -3)))


@settings(max_examples=200, deadline=None)
@given(cs=cases())
def test_depthwise_core_matches_oracle_on_every_path(cs):
    got, want = run_case(cs)
    assert got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("shape, k, stride, padding, mult", [
    ((3, 9, 10, 64), (3, 3), 1, "SAME", 1),     # runs of 4 blocks per pixel, N > 1
    ((2, 9, 9, 40), (3, 3), 2, "SAME", 1),      # stride 2: two 16-blocks + an 8-block per pixel
    ((4, 12, 1, 24), (5, 1), 1, "VALID", 1),    # microWakeWord-style (T, 1, C) with a (5, 1) kernel, C = 24
    ((5, 7, 11, 8), (3, 3), 1, "SAME", 1),      # C = 8: a run of two pixels per block
    ((2, 49, 40, 1), (10, 8), 2, "SAME", 8),    # micro_speech: 1 channel times 8, stride 2 (one 8-block per pixel)
    ((2, 6, 7, 3), (3, 3), 2, "SAME", 4),       # M = 4 over 3 channels: 12 per pixel, two overlapping 8-blocks
    ((1, 5, 9, 2), (3, 3), 1, "VALID", 3),      # M = 3, stride 1: runs of 6-channel pixels
])
def test_depthwise_mcu_shapes_match_oracle(shape, k, stride, padding, mult):
    rng = np.random.default_rng(sum(shape) + stride)
    c = shape[3]
    x = codes(rng, shape, "int8", True)
    w = codes(rng, (1, *k, c * mult), "int8", True)
    bias = rng.integers(-(1 << 16), 1 << 16, c * mult).astype(np.int32)
    rq = Requant.shift_only(-2)
    got = dspsim.depthwise_conv2d(x, w, bias, depth_multiplier=mult, stride=stride, padding=padding,
                                  input_zero_point=-128, output_zero_point=0, requant=rq, out_dtype="int16")
    g = dspsim.kernels._common.geometry(shape[1:3], k, stride, padding, 1, "test")
    want, _, _ = ref.depthwise_conv2d(x.tolist(), w.tolist(), bias.tolist(), -128, 0, 0, oracle_requant(rq), -32768,
                                      32767, depth_multiplier=mult, stride=g.stride, pads=g.pads, dilation=(1, 1))
    assert np.array_equal(got, np.array(want))


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_accumulate_wraps_modulo_2_32_and_is_exact_in_int64(stride):
    c = 24
    x = np.full((2, 6, 7, c), -128, np.int8)
    x[:, ::2] = 127
    w = np.full((3, 3, c), -128, np.int8)
    zw = np.full(c, 127, np.int64)  # (x - zx) * (w - zw) = +-255 * -255: the largest products
    bias = np.where(np.arange(c) % 2 == 0, (1 << 31) - 1, -(1 << 31)).astype(np.int64)  # the sums leave int32
    zx = 127 if stride == 1 else -128
    prepared = core.prepare_depthwise_weights(w, zw)
    want, out_h, out_w = plain_sums(x, w, zx, zw, bias, (stride, stride), (1, 1, 1, 1))
    assert max(abs(int(v)) for v in want.reshape(-1)) > 1 << 31
    got32 = core.depthwise_accumulate(x, prepared, zx, bias, (stride, stride), (1, 1), 1, 1, out_h, out_w, 32)
    got64 = core.depthwise_accumulate(x, prepared, zx, bias, (stride, stride), (1, 1), 1, 1, out_h, out_w, 64)
    wrapped = np.array([((int(v) + (1 << 31)) % (1 << 32)) - (1 << 31) for v in want.reshape(-1)]).reshape(want.shape)
    assert got32.dtype == np.int32 and np.array_equal(got32, wrapped)
    assert got64.dtype == np.int64 and np.array_equal(got64, want.astype(np.int64))


def test_depthwise_pairs_path_is_compiled_on_avx2_hosts():
    """The vector path is the one the shape tests above exercise on this host (else they test the direct loop)."""
    from dspsim.simd.cpu import HAVE_AVX2
    assert core.USE_PAIRS == (HAVE_AVX2 and not __import__("numba").config.DISABLE_JIT)


@st.composite
def padded_cases(draw):
    """Layers with padding, wide and narrow (1-pixel) images, strides 1-3, channel counts on and off 16 (C % 16 = 0 at
    stride > 1: a row's pixels one run of blocks that skips the pixels between them)."""
    c = draw(st.sampled_from([1, 7, 8, 9, 16, 17, 24, 32, 33, 40, 48]))
    kh, kw = draw(st.sampled_from([(3, 3), (3, 3), (1, 1), (2, 3), (3, 1), (5, 5), (1, 2)]))
    return dict(b=draw(st.integers(1, 2)), h=draw(st.integers(1, 12)), w=draw(st.integers(1, 12)), c=c, k=(kh, kw),
                stride=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
                dil=(draw(st.integers(1, 2)), draw(st.integers(1, 2))),
                pads=[draw(st.integers(0, 2)) for _ in range(4)], zx=draw(st.sampled_from([-128, -1, 0, 5, 127])),
                edge=draw(st.booleans()), seed=draw(st.integers(0, 2**32 - 1)))


@pytest.mark.skipif(not core.USE_PAIRS, reason="the read modes are the tap pairs' (AVX2, jit)")
@settings(max_examples=150, deadline=None)
@given(cs=padded_cases())
def test_every_read_mode_of_the_pairs_gives_the_exact_sums(cs):
    """The tap pairs reading a window of padded rows, or the input in place and a patch of taps for the pixels that
    read padding (any mode on any layer, whichever _read_mode picks), against plain Python ints."""
    rng = np.random.default_rng(cs["seed"])
    (kh, kw), (dh, dw), pads = cs["k"], cs["dil"], cs["pads"]
    if cs["h"] + pads[0] + pads[1] < (kh - 1) * dh + 1 or cs["w"] + pads[2] + pads[3] < (kw - 1) * dw + 1:
        pads = [(kh - 1) * dh, (kh - 1) * dh, (kw - 1) * dw, (kw - 1) * dw]
    x = codes(rng, (cs["b"], cs["h"], cs["w"], cs["c"]), "int8", cs["edge"])
    w = codes(rng, (kh, kw, cs["c"]), "int8", cs["edge"])
    zw = rng.integers(-128, 128, cs["c"])
    bias = rng.integers(-(1 << 12), 1 << 12, cs["c"]).astype(np.int64)
    want, out_h, out_w = plain_sums(x, w, cs["zx"], zw, bias, cs["stride"], pads, cs["dil"])
    prepared = core.prepare_depthwise_weights(w, zw)
    for mode in (core._RING, core._PATCHES):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(core, "_read_mode", lambda *args, mode=mode: mode)
            got = core.depthwise_accumulate(x, prepared, cs["zx"], bias, cs["stride"], cs["dil"], pads[0], pads[2],
                                            out_h, out_w, 32)
        assert np.array_equal(got, want.astype(np.int64)), mode


@pytest.mark.skipif(not core.USE_PAIRS, reason="the read modes are the tap pairs' (AVX2, jit)")
@pytest.mark.parametrize("shape, stride, pads, want_mode", [
    ((2, 112, 112, 96), 2, (1, 1, 1, 1), core._PATCHES),   # MobileNetV2's stride 2 layers: a left column, a top row
    ((2, 14, 14, 576), 2, (1, 1, 1, 1), core._PATCHES),
    ((2, 56, 56, 144), 1, (1, 1, 1, 1), core._PATCHES),
    ((2, 7, 7, 960), 1, (1, 1, 1, 1), core._RING),         # half the pixels read padding: one padded copy is less
    ((2, 16, 1, 24), 1, (2, 2, 0, 0), core._RING),         # a (T, 1, C) stream under a (3, 1) kernel: the column runs
    ((2, 8, 8, 16), 1, (0, 0, 0, 0), core._IN_PLACE),
])
def test_read_mode_of_mobilenet_layers(shape, stride, pads, want_mode):
    k = (3, 1) if shape[2] == 1 else (3, 3)
    out_h, out_w = ((n + p0 + p1 - kk) // stride + 1 for n, p0, p1, kk in
                    ((shape[1], pads[0], pads[1], k[0]), (shape[2], pads[2], pads[3], k[1])))
    assert core._read_mode(shape, k, (stride, stride), (1, 1), pads[0], pads[2], out_h, out_w) == want_mode


@pytest.mark.parametrize("n", [0, 1, 9, 16, 960, 4096])
def test_the_arrays_the_pairs_read_start_on_a_cache_line(n):
    """Weights, lane parameters and the sums' blocks start on a 64-byte line (no zmm access splits two lines)."""
    c = max(n % 97, 1)
    prepared = core.prepare_depthwise_weights(np.ones((3, 3, c), np.int8), np.zeros(c, np.int64))
    values = np.arange(n, dtype=np.float32).reshape(-1, 1)
    for a in (prepared.pairs16, prepared.pairs8, core._aligned(values), core._aligned_int32(n)):
        assert a.flags.c_contiguous and (a.size == 0 or a.ctypes.data % core.LINE == 0)
    assert np.array_equal(core._aligned(values), values) and core._aligned_int32(n).shape == (n,)
