"""Exact int32 GEMM / conv cores against numpy int64 arithmetic reduced modulo 2^32."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import _jit as J
from dspsim.kernels.mac import gemm as G
from dspsim.kernels.mac.gemm import PackedWeights, conv2d_s32, gemm_s32, pack_weights, row_sums

PATHS = list(G.PATHS)
RANGES = {np.int8: (-128, 127), np.uint8: (0, 255)}


def wrap32(v):
    return np.asarray(v, np.int64).astype(np.int32)


def gemm_ref(a, b, za=0, zb=0, bias=0):
    zb = np.reshape(np.asarray(zb, np.int64), (-1, 1))
    return wrap32((a.astype(np.int64) - za) @ (b.astype(np.int64) - zb).T + np.asarray(bias, np.int64))


def conv_ref(x, w, stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), groups=1, zx=0, zw=0, bias=0):
    """TFLite-style loop: only in-bounds taps are summed."""
    n, h, wd, _ = x.shape
    o, kh, kw, ci = w.shape
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = stride, dilation, pads
    oh, ow = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1, (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    xs = x.astype(np.int64) - zx
    ws = w.astype(np.int64) - np.reshape(np.asarray(zw, np.int64), (-1, 1, 1, 1))
    out = np.zeros((n, oh, ow, o), np.int64) + np.asarray(bias, np.int64)
    for oy in range(oh):
        for ox in range(ow):
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * sh + ky * dh - pt, ox * sw + kx * dw - pl
                    if 0 <= iy < h and 0 <= ix < wd:
                        for g in range(groups):
                            out[:, oy, ox, g * og:(g + 1) * og] += (
                                xs[:, iy, ix, g * ci:(g + 1) * ci] @ ws[g * og:(g + 1) * og, ky, kx, :].T)
    return wrap32(out)


def rand(rng, dtype, shape):
    lo, hi = RANGES[dtype]
    return rng.integers(lo, hi + 1, shape).astype(dtype)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 13, 9), (6, 4, 64), (13, 67, 130), (65, 255, 63), (3, 1029, 5)])
def test_gemm_matches_int64_matmul(m, k, n, dtype, path):
    rng = np.random.default_rng(m * 1000 + k + n)
    a, b = rand(rng, dtype, (m, k)), rand(rng, np.int8, (n, k))
    np.testing.assert_array_equal(gemm_s32(a, b, path=path), gemm_ref(a, b))


@pytest.mark.parametrize("path", PATHS)
def test_gemm_every_short_last_tile(path):
    rng = np.random.default_rng(3)
    b = rand(rng, np.int8, (70, 21))
    for m in range(1, 2 * G.MR + 1):  # every row count of the last tile, alone and after a full tile
        a = rand(rng, np.int8, (m, 21))
        np.testing.assert_array_equal(gemm_s32(a, b, a_zero_point=-3, b_zero_point=2, path=path),
                                      gemm_ref(a, b, -3, 2))


@pytest.mark.parametrize("path", PATHS)
def test_gemm_every_panel_width_and_edge(path):
    rng = np.random.default_rng(5)
    a = rand(rng, np.int8, (7, 30))
    for n in (15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 127, 129):  # 1-4 vectors, full and masked
        b = rand(rng, np.int8, (n, 30))
        zb = rng.integers(-128, 128, n)
        np.testing.assert_array_equal(gemm_s32(a, b, b_zero_point=zb, path=path), gemm_ref(a, b, 0, zb))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_gemm_extreme_values(dtype, path):
    lo, hi = RANGES[dtype]
    for av in (lo, hi):
        for bv in (-128, 127):
            a = np.full((7, 37), av, dtype)
            b = np.full((66, 37), bv, np.int8)
            np.testing.assert_array_equal(gemm_s32(a, b, path=path), gemm_ref(a, b))


@pytest.mark.parametrize("path", PATHS)
def test_gemm_wraps_modulo_2_32(path):
    k = 140_000  # 16384 * k > 2^31: the int32 sum overflows and must wrap
    a = np.full((2, k), -128, np.int8)
    b = np.full((3, k), -128, np.int8)
    b[1] = 127
    got = gemm_s32(a, b, path=path)
    np.testing.assert_array_equal(got, gemm_ref(a, b))
    assert got[0, 0] != 16384 * k


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 20), k=st.integers(1, 90), n=st.integers(1, 140), signed=st.booleans(),
       seed=st.integers(0, 2**32 - 1), per_column=st.booleans())
def test_gemm_zero_points_and_bias(path, m, k, n, signed, seed, per_column):
    rng = np.random.default_rng(seed)
    dtype = np.int8 if signed else np.uint8
    a, b = rand(rng, dtype, (m, k)), rand(rng, np.int8, (n, k))
    za = int(rand(rng, dtype, ()))
    zb = rng.integers(-128, 128, n) if per_column else int(rng.integers(-128, 128))
    bias = rng.integers(-2**31, 2**31, n)
    got = gemm_s32(a, b, a_zero_point=za, b_zero_point=zb, bias=bias, path=path)
    np.testing.assert_array_equal(got, gemm_ref(a, b, za, zb, bias))


def test_strided_and_read_only_inputs_are_read_by_value():
    rng = np.random.default_rng(4)
    a_big, b_big = rand(rng, np.uint8, (9, 40)), rand(rng, np.int8, (30, 40))
    a, b = a_big[::2, ::2], b_big[::3, ::2]
    a.flags.writeable = False
    np.testing.assert_array_equal(gemm_s32(a, b), gemm_ref(a, b))
    x = rand(rng, np.int8, (1, 6, 8, 6))[:, :, ::2, ::2]
    w = rand(rng, np.int8, (4, 3, 3, 3))
    np.testing.assert_array_equal(conv2d_s32(x, w, pads=(1, 1, 1, 1), input_zero_point=5),
                                  conv_ref(x, w, pads=(1, 1, 1, 1), zx=5))


@pytest.mark.parametrize("path", PATHS)
def test_unpadded_int8_inputs_are_read_in_place_and_left_unchanged(path):
    """The tiles read int8 codes as ``byte ^ 0x80`` from the input itself (a GEMM, an unpadded conv, a weighted
    one that needs row sums): the results are exact and the input keeps every code, -128 and 127 included."""
    rng = np.random.default_rng(6)
    a = rand(rng, np.int8, (13, 40))
    a[0, :2] = -128, 127
    x = rand(rng, np.int8, (2, 5, 7, 40))
    w = rand(rng, np.int8, (24, 1, 1, 40))
    keep_a, keep_x = a.copy(), x.copy()
    np.testing.assert_array_equal(gemm_s32(a, w.reshape(24, 40), a_zero_point=-7, path=path),
                                  gemm_ref(a, w.reshape(24, 40), -7))
    np.testing.assert_array_equal(conv2d_s32(x, w, input_zero_point=3, weight_zero_point=2, path=path),
                                  conv_ref(x, w, zx=3, zw=2))
    assert np.array_equal(a, keep_a) and np.array_equal(x, keep_x)


def test_gemm_packed_weights_equal_raw_weights():
    rng = np.random.default_rng(1)
    a, b = rand(rng, np.int8, (9, 50)), rand(rng, np.int8, (70, 50))
    packed = pack_weights(b)
    assert isinstance(packed, PackedWeights)
    np.testing.assert_array_equal(gemm_s32(a, packed), gemm_s32(a, b))
    np.testing.assert_array_equal(packed.sums, b.sum(axis=1, dtype=np.int64))
    np.testing.assert_array_equal(row_sums(a), a.sum(axis=1, dtype=np.int64))


def test_gemm_paths_agree_on_random_input():
    rng = np.random.default_rng(2)
    a, b = rand(rng, np.uint8, (50, 300)), rand(rng, np.int8, (200, 300))
    outs = [gemm_s32(a, b, path=p) for p in G.PATHS]
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


def test_gemm_path_env_forces_plain_tile(monkeypatch):
    def boom(*args):
        raise AssertionError("a SIMD driver was used")

    monkeypatch.setenv("DSPSIM_GEMM_PATH", "plain")
    for p in G.PATHS[:-1]:
        monkeypatch.setitem(G._DRIVERS, p, boom)
    a = np.ones((2, 3), np.int8)
    np.testing.assert_array_equal(gemm_s32(a, np.ones((4, 3), np.int8)), np.full((2, 4), 3))
    with pytest.raises(ValueError, match="^gemm_s32: path must be one of"):
        gemm_s32(a, np.ones((4, 3), np.int8), path="sse9")


CONV_CASES = [
    # x shape, w shape, stride, dilation, pads, groups
    ((1, 5, 6, 3), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    ((2, 9, 7, 8), (6, 3, 2, 4), (2, 1), (1, 2), (0, 2, 1, 0), 2),
    ((1, 8, 8, 5), (5, 3, 3, 1), (1, 1), (1, 1), (1, 1, 1, 1), 5),
    ((1, 12, 12, 70), (130, 1, 1, 70), (1, 1), (1, 1), (0, 0, 0, 0), 1),
    ((1, 10, 11, 6), (7, 3, 3, 6), (3, 2), (2, 2), (2, 1, 3, 0), 1),
    ((3, 4, 4, 2), (3, 5, 5, 2), (1, 1), (1, 1), (2, 2, 2, 2), 1),
    ((2, 7, 6, 1), (3, 3, 3, 1), (2, 2), (1, 1), (0, 1, 0, 1), 1),  # grayscale, SAME at stride 2
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("xs,ws,stride,dilation,pads,groups", CONV_CASES)
def test_conv_matches_in_bounds_tap_loop(xs, ws, stride, dilation, pads, groups, dtype, path):
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x, w = rand(rng, dtype, xs), rand(rng, np.int8, ws)
    zx = int(rand(rng, dtype, ()))
    zw = rng.integers(-128, 128, ws[0])
    bias = rng.integers(-2**31, 2**31, ws[0])
    kw = dict(stride=stride, dilation=dilation, pads=pads, groups=groups)
    for q in ({}, {"zx": zx}, {"zx": zx, "zw": zw, "bias": bias}, {"zw": int(zw[0])}):
        got = conv2d_s32(x, w, input_zero_point=q.get("zx", 0), weight_zero_point=q.get("zw", 0),
                         bias=q.get("bias"), path=path, **kw)
        np.testing.assert_array_equal(got, conv_ref(x, w, **kw, **q))


@pytest.mark.parametrize("path", PATHS)
def test_conv_padded_taps_contribute_zero(path):
    x = np.full((1, 4, 4, 3), -7, np.int8)  # every real tap is the zero point too
    w = np.full((5, 3, 3, 3), 127, np.int8)
    got = conv2d_s32(x, w, pads=(1, 1, 1, 1), input_zero_point=-7, bias=np.arange(5), path=path)
    np.testing.assert_array_equal(got, np.broadcast_to(np.arange(5), (1, 4, 4, 5)))


def test_errors_name_the_function_and_rule():
    a, b = np.zeros((2, 3), np.int8), np.zeros((4, 3), np.int8)
    with pytest.raises(TypeError, match="^gemm_s32: a must be int8 or uint8"):
        gemm_s32(a.astype(np.int16), b)
    with pytest.raises(ValueError, match="^gemm_s32: a has K=2"):
        gemm_s32(a[:, :2], b)
    with pytest.raises(ValueError, match="^gemm_s32: a_zero_point must be in"):
        gemm_s32(a, b, a_zero_point=200)
    with pytest.raises(TypeError, match="^pack_weights: weights must be int8"):
        pack_weights(b.astype(np.uint8))
    with pytest.raises(ValueError, match="^conv2d_s32: x must be NHWC with 4 channels"):
        conv2d_s32(np.zeros((1, 3, 3, 3), np.int8), np.zeros((2, 1, 1, 2), np.int8), groups=2)
    with pytest.raises(ValueError, match="^conv2d_s32: the dilated 3x3 kernel does not fit"):
        conv2d_s32(np.zeros((1, 2, 2, 1), np.int8), np.zeros((1, 3, 3, 1), np.int8))


def test_plain_path_runs_without_jit():
    script = textwrap.dedent("""
        import numpy as np
        from dspsim.kernels.mac.gemm import gemm_s32, conv2d_s32
        rng = np.random.default_rng(0)
        a = rng.integers(-128, 128, (5, 7)).astype(np.int8)
        b = rng.integers(-128, 128, (3, 7)).astype(np.int8)
        ref = (a.astype(np.int64) @ b.astype(np.int64).T - 3 * b.sum(1, dtype=np.int64)).astype(np.int32)
        assert (gemm_s32(a, b, a_zero_point=3) == ref).all()
        x = np.full((1, 3, 3, 2), 4, np.uint8)
        w = np.ones((2, 3, 3, 2), np.int8)
        out = conv2d_s32(x, w, pads=(1, 1, 1, 1), input_zero_point=1)
        assert out[0, 1, 1, 0] == 9 * 2 * 3 and out[0, 0, 0, 0] == 4 * 2 * 3, out[..., 0]
        print("ok")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 2), h=st.integers(1, 9), w=st.integers(1, 9), i=st.integers(1, 9),
       groups=st.integers(1, 3), og=st.integers(1, 70), kh=st.integers(1, 3), kw=st.integers(1, 3),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       pads=st.tuples(*[st.integers(0, 2)] * 4), signed=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_conv_random_geometry(path, n, h, w, i, groups, og, kh, kw, stride, dilation, pads, signed, seed):
    (pt, pb, pl, pr), (dh, dw) = pads, dilation
    if h + pt + pb < dh * (kh - 1) + 1 or w + pl + pr < dw * (kw - 1) + 1:
        return
    rng = np.random.default_rng(seed)
    dtype = np.int8 if signed else np.uint8
    x, wt = rand(rng, dtype, (n, h, w, groups * i)), rand(rng, np.int8, (groups * og, kh, kw, i))
    zx, zw = int(rand(rng, dtype, ())), rng.integers(-128, 128, groups * og)
    bias = rng.integers(-2**31, 2**31, groups * og)
    kw_ = dict(stride=stride, dilation=dilation, pads=pads, groups=groups)
    got = conv2d_s32(x, pack_weights(wt, groups=groups), input_zero_point=zx, weight_zero_point=zw, bias=bias,
                     path=path, **kw_)
    np.testing.assert_array_equal(got, conv_ref(x, wt, zx=zx, zw=zw, bias=bias, **kw_))


def test_serial_and_threaded_drivers_agree(monkeypatch):
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (50, 300)).astype(np.int8)
    b = rng.integers(-128, 128, (70, 300)).astype(np.int8)
    x = rng.integers(0, 256, (1, 9, 9, 6)).astype(np.uint8)
    w = rng.integers(-128, 128, (8, 3, 3, 3)).astype(np.int8)
    outs = []
    for limit in (1, 1 << 62):  # every problem threaded, then every problem serial
        monkeypatch.setattr(J, "PARALLEL_MIN", limit)
        outs.append((gemm_s32(a, b, a_zero_point=-3, b_zero_point=2),
                     conv2d_s32(x, w, groups=2, pads=(1, 1, 1, 1), input_zero_point=7, weight_zero_point=-1)))
    assert all(np.array_equal(p, q) for p, q in zip(*outs))
    assert np.array_equal(outs[0][0], (a.astype(np.int64) + 3) @ (b.astype(np.int64) - 2).T)
