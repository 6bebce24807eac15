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

RANGES = {"int8": (-128, 127), "uint8": (0, 255)}
# 1 and 3 (runs only), 7 (direct), 8/9 (two overlapping 8-blocks), 16/17/24 (16-blocks, tails), 33 (two 16-blocks + tail)
CHANNELS = [1, 3, 7, 8, 9, 16, 17, 24, 33]


def codes(rng, shape, dtype, edge):
    """Random codes of ``dtype``, a quarter of them at the type's min/max when ``edge``."""
    lo, hi = RANGES[dtype]
    a = rng.integers(lo, hi + 1, shape)
    if edge:
        pick = rng.random(shape)
        a = np.where(pick < 0.125, lo, np.where(pick < 0.25, hi, a))
    return a.astype(dtype)


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


def run_case(cs):
    rng = np.random.default_rng(cs["seed"])
    (kh, kw), (dh, dw), pads = cs["k"], cs["dil"], list(cs["pads"])
    if cs["h"] + pads[0] + pads[1] < (kh - 1) * dh + 1 or cs["w"] + pads[2] + pads[3] < (kw - 1) * dw + 1:
        pads = [(kh - 1) * dh, (kh - 1) * dh, (kw - 1) * dw, (kw - 1) * dw]
    oc = cs["c"] * cs["mult"]
    x = codes(rng, (cs["b"], cs["h"], cs["w"], cs["c"]), cs["xd"], cs["edge"])
    w = codes(rng, (1, kh, kw, oc), cs["wd"], cs["edge"])
    lo, hi = RANGES[cs["wd"]]
    zw = [int(v) for v in rng.integers(lo, hi + 1, oc)] if cs["per_channel_zw"] else cs["zw"]
    bias = rng.integers(-(1 << 12), 1 << 12, oc).astype(np.int32)
    # shift-only to int16: |sum| <= 9 * 255 * 255 + 2^12, divided by 8 to 32 it fits, so a wrong sum shows
    rq = Requant.shift_only(cs["shift"])
    top, bottom, left, right = pads
    got = dspsim.depthwise_conv2d(x, w, bias, depth_multiplier=cs["mult"], stride=cs["stride"], dilation=cs["dil"],
                                  padding=((top, bottom), (left, right)), input_zero_point=cs["zx"],
                                  weight_zero_point=zw, output_zero_point=0, requant=rq, out_dtype="int16")
    want, _, _ = ref.depthwise_conv2d(x.tolist(), w.tolist(), bias.tolist(), cs["zx"], zw, 0, oracle_requant(rq),
                                      -32768, 32767, depth_multiplier=cs["mult"], stride=cs["stride"],
                                      pads=tuple(pads), dilation=cs["dil"])
    # the core's sums themselves, against plain Python ints
    zw_c = np.broadcast_to(np.asarray(zw, np.int64), (oc,))
    w_s, zw_s = (w.astype(np.int64) - 128, zw_c - 128) if cs["wd"] == "uint8" else (w.astype(np.int64), zw_c)
    prepared = core.prepare_depthwise_weights(w_s[0].astype(np.int8), zw_s, cs["mult"])
    sums, out_h, out_w = plain_sums(x, w_s[0], cs["zx"], zw_s, bias, cs["stride"], pads, cs["dil"], cs["mult"])
    assert got.shape[1:3] == (out_h, out_w)
    for bits in (32, 64):
        acc = core.depthwise_accumulate(x, prepared, cs["zx"], bias.astype(np.int64), cs["stride"], cs["dil"], top,
                                        left, out_h, out_w, bits)
        assert np.array_equal(acc, sums.astype(np.int64)), bits
    return got, np.array(want, np.int64)


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


def plain_sums(x, w, zx, zw, bias, stride, pads, dilation=(1, 1), mult=1):
    """Exact Python-int depthwise sums ``(B*OH*OW, C*M)`` of ``w`` (KH, KW, C*M), taps outside the input skipped."""
    n_b, in_h, in_w, c = x.shape
    k_h, k_w, n_oc = w.shape
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = stride, pads, dilation
    out_h, out_w = (in_h + pt + pb - (k_h - 1) * dh - 1) // sh + 1, (in_w + pl + pr - (k_w - 1) * dw - 1) // sw + 1
    out = np.zeros((n_b, out_h, out_w, n_oc), object)
    for b in range(n_b):
        for oy in range(out_h):
            for ox in range(out_w):
                for oc in range(n_oc):
                    s = int(bias[oc])
                    for fy in range(k_h):
                        for fx in range(k_w):
                            iy, ix = oy * sh - pt + dh * fy, ox * sw - pl + dw * fx
                            if 0 <= iy < in_h and 0 <= ix < in_w:
                                s += (int(x[b, iy, ix, oc // mult]) - zx) * (int(w[fy, fx, oc]) - int(zw[oc]))
                    out[b, oy, ox, oc] = s
    return out.reshape(-1, n_oc), out_h, out_w


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
