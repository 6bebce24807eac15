"""The requantization fused into the depthwise tap pairs' store (depthwise_core.prepare_depthwise_requantize, the
prepared ``depthwise_conv2d_plan``) and the float-scale lanes it uses (dspsim.simd.requant_lanes.requantize_float_row),
against the plain-Python oracle and against the unfused path (int32 sums, then the requantization loop).

Compile budget: the layers here use the ``_pair_rows`` specializations the other depthwise tests compile too (int8 in
and out, uint8 in and out); the int16-output and exhaustive sweeps are ``slow``."""
from fractions import Fraction

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import dspsim
from dspsim.simd import requant_lanes as simd
from dspsim import kernels
from dspsim import oracle as ref
from dspsim.kernels.mac import depthwise_core as core
from dspsim.kernels.mac.gemm import FusedRequant
from dspsim.requant import Arithmetic, FloatBias, Requant, float_bias_arrays
from depthwise_cases import CHANNELS, CLAMPS, RANGES, SCHEMES, codes, pairs_only, run_layer, scheme_kwargs
from oracle_views import oracle_requant

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
OUT = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16}
lanes_only = pytest.mark.skipif(not (simd.HAVE_AVX2 and not numba.config.DISABLE_JIT),
                                reason="the float lanes are jit primitives compiled for AVX2")


@njit
def float_row(row, orow, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float):
    return simd.requantize_float_row(row, orow, bias_a, bias_b, scale, zp, lo, hi, clamp_in_float)


def lanes_of(rq, n, bias):
    """The lane parameters of a float-scale Requant for ``n`` channels (and a float bias)."""
    fb_a, fb_b, fb_mode = float_bias_arrays(bias, rq, n, "test")
    arith, _, _, scale, _, _ = rq.arrays(n, "test")
    return simd.float_lane_parameters(arith, fb_mode, scale, fb_a, fb_b)


def edge_accumulators():
    specials = [INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 0, 1, -1, (1 << 24) + 1, -(1 << 24) - 1]
    for i in range(31):
        specials += [1 << i, -(1 << i), (1 << i) + 1, -(1 << i) - 1]
    return specials


scales = st.one_of(st.sampled_from([1.0, 0.5, 0.25, 2.0 ** -20, 3.0]), st.floats(1e-4, 10.0))


# --------------------------------------------------------------------------------------------
# the float lanes
# --------------------------------------------------------------------------------------------
@lanes_only
@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(1, 70), engine=st.sampled_from(["fbgemm", "onnxruntime", "xnnpack"]),
       per_channel=st.booleans(), with_bias=st.booleans(), out_name=st.sampled_from(["int8", "int16"]))
def test_float_lanes_equal_the_oracle(data, n, engine, per_channel, with_bias, out_name):
    s_in, s_out = data.draw(scales), data.draw(scales)
    s_w = data.draw(st.lists(scales, min_size=n, max_size=n)) if per_channel else data.draw(scales)
    rq = Requant.from_scales(s_in, s_w, s_out, engine=engine, op="depthwise")
    bias = None
    if engine == "fbgemm" and with_bias:  # a float bias: per channel f32(raw + q), per tensor the fma
        bias = np.array(data.draw(st.lists(st.floats(-1e4, 1e4, width=32), min_size=n, max_size=n)), np.float32)
    a, b, s, clamp_in_float = lanes_of(rq, n, bias)
    acc = data.draw(st.lists(st.sampled_from(edge_accumulators()) | st.integers(INT32_MIN, INT32_MAX), min_size=n,
                             max_size=n))
    zp, lo, hi = data.draw(st.sampled_from(CLAMPS[out_name]))
    got = np.zeros(n, OUT[out_name])
    done = float_row(np.array(acc, np.int32), got, a, b, s, zp, lo, hi, clamp_in_float)
    assert done == n - n % 8  # the vector front; the caller's loop does the rest
    orq = oracle_requant(rq)
    want = [ref.clamp(ref.requantize_value(v, orq, j, zp, None if bias is None else Fraction(float(bias[j]))), lo, hi)
            for j, v in enumerate(acc[:done])]
    assert got[:done].tolist() == want


@lanes_only
@pytest.mark.parametrize("scheme", ["fbgemm", "float32"])
def test_float_lanes_round_ties_to_even(scheme):
    acc = np.arange(-63, 64, 2, dtype=np.int32)  # 64 odd values: acc * 0.5 and acc * 1.5 are ties, acc * 0.25 never
    for scale in (0.5, 0.25, 1.5):
        rq = Requant.float_scale(scale, scheme)
        a, b, s32, clamp = lanes_of(rq, acc.size, None)
        got = np.zeros(acc.size, np.int16)
        float_row(acc, got, a, b, s32, 0, -32768, 32767, clamp)
        assert got.tolist() == [int(np.rint(v * scale)) for v in acc.tolist()]


@lanes_only
def test_float_lanes_out_of_int32_follow_x86_in_fbgemm_and_clamp_in_float_elsewhere():
    # y beyond int32, infinite or NaN: cvtps2dq gives INT32_MIN, which FBGEMM clamps to lo; XNNPACK / ONNX Runtime
    # clamp in float first (hi for a huge positive value)
    acc = np.array([INT32_MAX, INT32_MIN, 1 << 30, -(1 << 30), 5, 5, 5, 5, 7, 7, 7, 7, 7, 7, 7, 7], np.int32)
    scale = np.full(acc.size, 8.0, np.float32)
    bias_a = np.array([0, 0, 0, 0, np.inf, -np.inf, np.nan, 3e38] + [0] * 8, np.float32)
    bias_b = np.array([0, 0, 0, 0, 1, 1, 1, 10] + [0] * 8, np.float32)
    zp, lo, hi = 3, -128, 127
    fbgemm, other = np.zeros(acc.size, np.int8), np.zeros(acc.size, np.int8)
    float_row(acc, fbgemm, bias_a, bias_b, scale, zp, lo, hi, False)
    float_row(acc, other, bias_a, bias_b, scale, zp, lo, hi, True)
    assert fbgemm.tolist() == [lo, lo, lo, lo, lo, lo, lo, lo] + [59] * 8
    assert other.tolist() == [hi, lo, hi, lo, hi, lo, lo, hi] + [59] * 8


def test_float_lane_parameters_cover_only_the_float32_schemes():
    n = 4
    for rq in (Requant.fixed_point(1 << 30, -3), Requant.shift_only(-2), Requant.float_scale(0.1, "float64"),
               Requant.from_scales(0.1, 0.2, 0.3, engine="onednn"), Requant.from_scales(0.1, 0.2, 0.3, "litert",
                                                                                         "fully_connected")):
        arith, _, _, scale, _, tie = rq.arrays(n, "test")
        assert simd.lane_kind(arith, FloatBias.NONE, tie) != simd.FLOAT_LANES
    a, b, s, clamp = simd.float_lane_parameters(Arithmetic.FBGEMM, FloatBias.ADD_QUOTIENT, np.full(n, 0.5),
                                                np.arange(n, dtype=np.float32), np.full(n, 7, np.float32))
    assert a.tolist() == [0, 1, 2, 3] and b.tolist() == [1] * n and s.dtype == np.float32 and not clamp


@lanes_only
def test_float_lanes_compile_to_vcvtps2dq_and_vfmadd():
    fresh = njit(float_row.py_func)  # not cached: its assembly is available
    z = np.zeros(64, np.float32)
    fresh(np.ones(64, np.int32), np.zeros(64, np.int8), z, z, z, 0, -128, 127, False)
    asm = next(iter(fresh.inspect_asm().values()))
    assert "vcvtps2dq" in asm and "vfmadd" in asm and "vcvtdq2ps" in asm


@st.composite
def layer_cases(draw, out_types=("same",)):
    c = draw(st.sampled_from(CHANNELS + [64]))
    kh, kw = draw(st.sampled_from([(3, 3), (3, 3), (1, 1), (2, 3), (5, 1)]))
    xd = draw(st.sampled_from(["int8", "uint8"]))
    return dict(
        b=draw(st.integers(1, 2)), h=draw(st.integers(1, 9)), w=draw(st.integers(1, 9)), c=c, k=(kh, kw),
        mult=draw(st.sampled_from([1, 1, 1, 2, 3])) if c <= 9 else 1,
        stride=(draw(st.integers(1, 2)), draw(st.integers(1, 2))),
        dil=(draw(st.integers(1, 2)), draw(st.integers(1, 2))),
        pads=[draw(st.integers(0, 2)) for _ in range(4)], xd=xd,
        zx=draw(st.one_of(st.sampled_from(RANGES[xd]), st.integers(*RANGES[xd]))), zw=draw(st.integers(-128, 127)),
        per_channel_zw=draw(st.booleans()), edge=draw(st.booleans()), seed=draw(st.integers(0, 2**32 - 1)),
        scheme=draw(st.sampled_from(SCHEMES)), out=draw(st.sampled_from(out_types)),
        clamp=draw(st.integers(0, 3)))


@settings(max_examples=60, deadline=None)
@given(cs=layer_cases())
def test_fused_layer_equals_oracle_and_unfused_path(cs):
    got, unfused, want = run_layer(cs)
    assert got.shape == want.shape and got.dtype == unfused.dtype
    assert np.array_equal(unfused, want)
    assert np.array_equal(got, want)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(cs=layer_cases(out_types=("same", "int8", "uint8", "int16")))
def test_fused_layer_every_output_type_equals_oracle(cs):
    got, unfused, want = run_layer(cs)
    assert np.array_equal(unfused, want) and np.array_equal(got, want)


@pairs_only
@pytest.mark.parametrize("scheme", ["double", "fbgemm-per-tensor", "xnnpack"])
@pytest.mark.parametrize("stride", [1, 2])
def test_small_blocks_and_row_windows_change_nothing(monkeypatch, scheme, stride):
    """Blocks of one period (lcm(C, 16) values) or of ~4096 values requantized in rows of one period, and a window of
    the fewest padded rows, or patches: many block, row and window boundaries, the same codes as the unfused path."""
    rng = np.random.default_rng(stride)
    cases = [((2, 13, 11, 24), (3, 3), (1, 1)), ((3, 17, 1, 40), (5, 1), (2, 1)), ((1, 9, 12, 3), (2, 3), (1, 2))]
    for shape, k, dil in cases:
        c = shape[3]
        x = codes(rng, shape, "int8" if scheme == "double" else "uint8", True)
        w = codes(rng, (1, *k, c), "int8", True)
        kw_q, bias, _ = scheme_kwargs(scheme, rng, c)
        kw_all = dict(stride=stride, dilation=dil, padding="SAME", input_zero_point=int(x.flat[0]),
                      output_zero_point=1, out_dtype=str(x.dtype), **kw_q)
        want = dspsim.depthwise_conv2d(x, w, bias, **kw_all)
        monkeypatch.setattr(core, "RING_BYTES", 1)
        monkeypatch.setattr(core, "ROW_VALUES", 1)  # lane parameters of one period: rows and tails across them
        for mode in (core._RING, core._PATCHES):  # patches: block boundaries between patched and in-place pixels
            monkeypatch.setattr(core, "_read_mode", lambda *args, mode=mode: mode)
            for chunk in (1, 4096):
                monkeypatch.setattr(core, "CHUNK_VALUES", chunk)
                got = kernels.depthwise_conv2d_plan(x.shape, x.dtype, w, bias, **kw_all).run(x)
                assert np.array_equal(got, want), (shape, k, dil, mode, chunk)
        monkeypatch.undo()


@pairs_only
def test_every_shift_and_edge_multiplier_through_the_fused_store():
    """64 channels: shifts -31..30 and the edge multipliers 0, 1, 2^30, 2^31 - 1, on extreme codes and a bias that
    takes the int32 sums to both ends; the fused store against the unfused path and the oracle."""
    rng = np.random.default_rng(7)
    c = 64
    shift = np.concatenate([np.arange(-31, 31), [0, -1]])
    mult = rng.integers(1 << 30, 1 << 31, c)
    mult[::4], mult[1::4], mult[2::4] = 0, 1, 1 << 30
    mult[3::8] = INT32_MAX
    x = codes(rng, (2, 5, 6, c), "int8", True)
    w = codes(rng, (1, 3, 3, c), "int8", True)
    bias = np.where(np.arange(c) % 3 == 0, INT32_MAX - 1000, np.where(np.arange(c) % 3 == 1, INT32_MIN + 1000,
                                                                       0)).astype(np.int32)
    kw_all = dict(padding="SAME", input_zero_point=-128, weight_zero_point=0, output_zero_point=-5,
                  requant=Requant.fixed_point(mult, shift))
    layer = kernels.depthwise_conv2d_plan(x.shape, x.dtype, w, bias, **kw_all)
    got = layer.run(x)
    assert np.array_equal(got, dspsim.depthwise_conv2d(x, w, bias, **kw_all))
    want, _, _ = ref.depthwise_conv2d(x.tolist(), w.tolist(), bias.tolist(), -128, 0, -5,
                                      oracle_requant(kw_all["requant"]), -128, 127, pads=(1, 1, 1, 1))
    assert np.array_equal(got, np.array(want))
    assert len(np.unique(got)) > 40  # the codes spread over the range: the shifts are exercised


@pairs_only
def test_store_requant_is_prepared_only_for_schemes_with_lanes():
    weights = core.prepare_depthwise_weights(np.ones((3, 3, 8), np.int8), np.zeros(8, np.int64))
    wide = core.prepare_depthwise_weights(np.ones((3, 3, 16), np.int8), np.zeros(16, np.int64), 2)

    def store(rq, bias=None, acc_bits=32, w=weights):
        n = w.tap_sum.shape[0]
        epi = FusedRequant.prepare(n, acc_bits, rq, float_bias_arrays(bias, rq, n, "test"), 0, -128, 127, "int8")
        return core.prepare_store_requant(epi, w)

    assert store(Requant.fixed_point(1 << 30, -3)).lanes[0] == 1
    for rq in (Requant.float_scale(0.1, "fbgemm"), Requant.float_scale(0.1, "float32")):
        assert store(rq).lanes[0] == 2
    s = store(Requant.from_scales(0.1, np.full(8, 0.2), 0.3, engine="fbgemm"), np.ones(8, np.float32))
    assert s.lanes[0] == 2 and s.lanes[1] % 16 == 0 and s.lanes[2] % 16 == 0  # a block, a row of lane parameters
    assert s.lanes[5].tolist() == [1.0] * (s.lanes[2] + 8)  # a row's positions and 8 past it
    for rq in (Requant.fixed_point(1 << 30, -3, "single"), Requant.shift_only(-2),
               Requant.float_scale(0.1, "float64"), Requant.from_scales(0.1, 0.2, 0.3, engine="onednn"),
               Requant.fixed_point(1 << 30, -3, tie="half_to_even"), Requant.float_scale(0.1, tie="half_up")):
        assert store(rq) is None
    assert store(Requant.fixed_point(1 << 30, -3), acc_bits=24) is None  # sums wrapped to 24 bits first
    assert store(Requant.fixed_point(1 << 30, -3), w=wide).lanes[0] == 1  # depth multiplier 2: expanded input
