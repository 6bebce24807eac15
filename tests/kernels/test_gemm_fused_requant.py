"""The requantization fused into the gemm cores' store (gemm.FusedRequant) against dspsim.oracle.

The fused epilogue must give the codes that the oracle's fully connected / convolution loop gives (plain
Python integers and Fractions), and exactly what the separate pass ``requantize_into`` gives on the
int32 result, for every scheme the matrix kernels use, per tensor and per channel, with a float bias,
with a narrow wrapping accumulator, on every SIMD path; and it refuses a wrong epilogue by name.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import oracle as ref
from dspsim.kernels.mac import gemm as G
from dspsim.fixedpoint import multiply_by_quantized_multiplier_scalar
from dspsim.requant import Requant, float_bias_arrays
from dspsim.kernels.quantize.requantize import requantize_into
from oracle_views import oracle_requant

SETTINGS = settings(max_examples=30, deadline=None)  # each new scheme x output type compiles a driver
OUT_RANGES = {np.int8: (-128, 127), np.uint8: (0, 255), np.int16: (-32768, 32767)}
EDGES = {np.int8: [-128, -127, -1, 0, 1, 126, 127], np.uint8: [0, 1, 127, 128, 254, 255]}
TIES = ["half_up", "half_away_from_zero", "half_to_even", "floor", "toward_zero"]


def codes(draw, dtype, shape):
    lo, hi = OUT_RANGES[dtype]
    n = int(np.prod(shape))
    vals = st.one_of(st.integers(lo, hi), st.sampled_from(EDGES[dtype]))
    return np.array(draw(st.lists(vals, min_size=n, max_size=n)), dtype).reshape(shape)


@st.composite
def schemes(draw, n):
    """(Requant, float bias (n,) float32 or None): every scheme and bias mode the matrix kernels fuse."""
    kind = draw(st.sampled_from(["double", "single", "shift", "fbgemm", "fbgemm-float-bias", "onnxruntime",
                                 "onnx-reference"]))
    per_channel = draw(st.booleans())
    c = n if per_channel else 1
    if kind in ("double", "single"):
        mult = draw(st.lists(st.one_of(st.integers(1 << 30, (1 << 31) - 1), st.sampled_from([1 << 30, (1 << 31) - 1])),
                             min_size=c, max_size=c))
        shift = draw(st.lists(st.integers(-31, 30), min_size=c, max_size=c))  # every shift, both directions
        return Requant.fixed_point(mult, shift, kind), None
    if kind == "shift":
        return Requant.shift_only(draw(st.integers(-20, 3)), draw(st.sampled_from(TIES))), None
    s_in = draw(st.floats(1e-3, 1.0))
    s_w = draw(st.lists(st.floats(1e-3, 1.0), min_size=c, max_size=c))
    s_out = draw(st.sampled_from([1e-7, 1e-3, 0.05, 1.0, 30.0]))  # 1e-7: far beyond int32 (x86 INT32_MIN)
    engine = "fbgemm" if kind.startswith("fbgemm") else kind
    rq = Requant.from_scales(s_in, s_w if per_channel else s_w[0], s_out, engine=engine, op="fully_connected")
    bias = None
    if kind == "fbgemm-float-bias":
        bias = np.array(draw(st.lists(st.floats(-1e4, 1e4, width=32), min_size=n, max_size=n)), np.float32)
    return rq, bias


@st.composite
def gemm_cases(draw, acc_bits=(32,)):
    """A GEMM and its epilogue; ``acc_bits``: the accumulator widths drawn (32: what the prepared layers fuse;
    the -m slow sweep adds a 16-bit wrapping one)."""
    m, k, n = draw(st.integers(1, 14)), draw(st.integers(1, 40)), draw(st.integers(1, 70))
    xd = draw(st.sampled_from([np.int8, np.uint8]))
    od = draw(st.sampled_from([np.int8, np.uint8, np.int16]))
    lo_t, hi_t = OUT_RANGES[od]
    lo, hi = sorted(draw(st.tuples(st.integers(lo_t, hi_t), st.integers(lo_t, hi_t))))
    rq, fbias = draw(schemes(n))
    zx = draw(st.sampled_from(EDGES[xd]))
    return dict(a=codes(draw, xd, (m, k)), b=codes(draw, np.int8, (n, k)), zx=zx,
                zw=draw(st.one_of(st.integers(-128, 127), st.lists(st.integers(-128, 127), min_size=n, max_size=n))),
                bias=draw(st.one_of(st.none(), st.lists(st.integers(-(1 << 31), (1 << 31) - 1), min_size=n,
                                                         max_size=n))) if fbias is None else None,
                rq=rq, fbias=fbias, zo=draw(st.integers(lo_t, hi_t)), lo=lo, hi=hi, od=od,
                acc_bits=draw(st.sampled_from(acc_bits)))


def fused(c, n, path=None, conv=None):
    fb = float_bias_arrays(c["fbias"], c["rq"], n, "test")
    ep = G.FusedRequant.prepare(n, c["acc_bits"], c["rq"], fb, c["zo"], c["lo"], c["hi"], c["od"])
    if conv is None:
        return G.gemm_s32(c["a"], G.pack_weights(c["b"]), a_zero_point=c["zx"], b_zero_point=c["zw"],
                          bias=c["bias"], path=path, epilogue=ep)
    return G.conv2d_s32(c["a"], G.pack_weights(c["b"], groups=conv["groups"]), epilogue=ep, path=path,
                        input_zero_point=c["zx"], weight_zero_point=c["zw"], bias=c["bias"],
                        **{k: v for k, v in conv.items()})


@SETTINGS
@given(c=gemm_cases())
def test_fused_gemm_matches_the_oracle_fully_connected(c):
    n = c["b"].shape[0]
    got = fused(c, n)
    zw = c["zw"] if isinstance(c["zw"], int) else list(c["zw"])
    want, _, _ = ref.fully_connected(c["a"].tolist(), c["b"].tolist(), c["bias"], c["zx"], zw, c["zo"],
                                     oracle_requant(c["rq"]), c["lo"], c["hi"], acc_model=(c["acc_bits"], "wrap", False),
                                     float_bias=None if c["fbias"] is None else c["fbias"].tolist())
    assert got.dtype == np.dtype(c["od"]) and got.shape == (c["a"].shape[0], n)
    assert got.tolist() == want


@pytest.mark.slow  # every SIMD path x every scheme: one driver compile each (minutes on a cold cache)
@settings(max_examples=25, deadline=None)
@given(c=gemm_cases(acc_bits=(32, 32, 16)), path=st.sampled_from(G.PATHS))
def test_fused_gemm_equals_the_separate_requantize_pass_on_every_path(c, path):
    n = c["b"].shape[0]
    acc = G.gemm_s32(c["a"], G.pack_weights(c["b"]), a_zero_point=c["zx"], b_zero_point=c["zw"], bias=c["bias"],
                     path=path)
    want = np.empty(acc.size, c["od"])
    requantize_into(acc.reshape(-1), n, c["acc_bits"], c["rq"], float_bias_arrays(c["fbias"], c["rq"], n, "test"),
                    c["zo"], c["lo"], c["hi"], want, "test")
    np.testing.assert_array_equal(fused(c, n, path).reshape(-1), want)


# Each (scheme, output type, per channel) is one fused driver to compile: a few, each with every output type once.
LANE_SCHEMES = [("double", np.int8, True), ("double", np.int16, False), ("fbgemm", np.int8, False),
                ("fbgemm-float-bias", np.uint8, True), ("xnnpack", np.int8, True)]


@pytest.mark.parametrize("kind,od,per_channel", LANE_SCHEMES)
@settings(max_examples=8, deadline=None)
@given(data=st.data(), m=st.integers(1, 13), n=st.sampled_from([8, 31, 32, 40, 64, 65, 96, 144, 150]))
def test_fused_requant_in_vector_lanes_matches_the_oracle_on_every_width(data, m, n, kind, od, per_channel):
    # TFLite's default scheme runs the front of each tile row in int32 lanes (32, then 8 at a time), the
    # float schemes (FBGEMM, XNNPACK / ONNX Runtime) in float32 lanes, the scalar loop the last n % 8; a
    # narrow last panel computes only the vectors it stores.
    k = data.draw(st.integers(1, 24))
    c = n if per_channel else 1
    fbias = None
    if kind == "double":
        mult = data.draw(st.lists(st.sampled_from([1 << 30, (1 << 30) + 1, 1518500250, (1 << 31) - 1]), min_size=c,
                                  max_size=c))
        rq = Requant.fixed_point(mult, data.draw(st.lists(st.integers(-31, 30), min_size=c, max_size=c)), "double")
    else:
        s_w = data.draw(st.lists(st.floats(1e-3, 1.0), min_size=c, max_size=c))
        s_out = data.draw(st.sampled_from([1e-7, 1e-3, 0.05, 1.0]))  # 1e-7: beyond int32 (x86 INT32_MIN)
        rq = Requant.from_scales(0.02, s_w if per_channel else s_w[0], s_out, engine=kind.split("-")[0],
                                 op="fully_connected")
        if kind == "fbgemm-float-bias":
            fbias = np.array(data.draw(st.lists(st.floats(-1e4, 1e4, width=32), min_size=n, max_size=n)), np.float32)
    lo_t, hi_t = OUT_RANGES[od]
    case = dict(a=codes(data.draw, np.int8, (m, k)), b=codes(data.draw, np.int8, (n, k)), zx=-1, zw=3,
                bias=None if fbias is not None else data.draw(st.lists(st.integers(-(1 << 31), (1 << 31) - 1),
                                                                       min_size=n, max_size=n)),
                rq=rq, fbias=fbias, zo=data.draw(st.integers(lo_t, hi_t)), lo=lo_t, hi=hi_t, od=od, acc_bits=32)
    want, _, _ = ref.fully_connected(case["a"].tolist(), case["b"].tolist(), case["bias"], -1, 3, case["zo"],
                                     oracle_requant(rq), lo_t, hi_t, acc_model=(32, "wrap", False),
                                     float_bias=None if fbias is None else fbias.tolist())
    assert fused(case, n).tolist() == want


@settings(max_examples=10, deadline=None)
@given(c=gemm_cases(), h=st.integers(1, 7), w=st.integers(1, 7), groups=st.sampled_from([1, 2]),
       kh=st.integers(1, 3), stride=st.sampled_from([1, 2]), pads=st.sampled_from([(0, 0, 0, 0), (1, 1, 1, 1),
                                                                                    (2, 0, 1, 0)]))
def test_fused_conv_matches_the_oracle_conv2d(c, h, w, groups, kh, stride, pads):
    rng = np.random.default_rng(h * 100 + w)
    ci, og = 3, 2 + int(rng.integers(0, 40))
    n = og * groups
    if h + pads[0] + pads[1] < kh or w + pads[2] + pads[3] < kh:
        pads = (kh, kh, kh, kh)
    lo_x = -128 if c["a"].dtype == np.int8 else 0
    c = dict(c, a=rng.integers(lo_x, lo_x + 256, (2, h, w, groups * ci)).astype(c["a"].dtype),
             b=rng.integers(-128, 128, (n, kh, kh, ci)).astype(np.int8), zw=int(rng.integers(-128, 128)),
             bias=None if c["fbias"] is not None else rng.integers(-(1 << 20), 1 << 20, n).tolist())
    if c["rq"].channels not in (1, n) or (c["fbias"] is not None and c["fbias"].size != n):
        c["rq"], c["fbias"] = Requant.fixed_point(1 << 30, -7, "double"), None
    got = fused(c, n, conv=dict(groups=groups, stride=stride, pads=pads))
    want, _, _ = ref.conv2d(c["a"].tolist(), c["b"].tolist(), c["bias"], c["zx"], c["zw"], c["zo"], oracle_requant(c["rq"]),
                            c["lo"], c["hi"], stride=(stride, stride), pads=pads,
                            acc_model=(c["acc_bits"], "wrap", False),
                            float_bias=None if c["fbias"] is None else c["fbias"].tolist())
    assert got.tolist() == want


def test_fused_requant_of_a_saturating_fbgemm_output_follows_x86():
    """acc * scale beyond int32: cvtps2dq gives INT32_MIN, so the output clamps to the *low* bound."""
    a, b = np.full((1, 4), 255, np.uint8), np.full((2, 4), 127, np.int8)
    rq = Requant.from_scales(1.0, 1.0, 1e-6, engine="fbgemm", op="fully_connected")
    ep = G.FusedRequant.prepare(2, 32, rq, float_bias_arrays(None, rq, 2, "t"), 3, 0, 255, np.uint8)
    assert G.gemm_s32(a, b, epilogue=ep).tolist() == [[0, 0]]
    assert G.gemm_s32(a, -b, epilogue=ep).tolist() == [[0, 0]]  # -huge: INT32_MIN too


def test_wrong_epilogue_is_refused_by_name():
    a, b = np.ones((2, 3), np.int8), np.ones((4, 3), np.int8)
    rq = Requant.fixed_point(1 << 30, -1)
    ep5 = G.FusedRequant.prepare(5, 32, rq, float_bias_arrays(None, rq, 5, "t"), 0, -128, 127, np.int8)
    with pytest.raises(ValueError, match="^gemm_s32: epilogue is prepared for 5 channels, the output has 4"):
        G.gemm_s32(a, b, epilogue=ep5)
    with pytest.raises(TypeError, match="^conv2d_s32: epilogue must be a FusedRequant or None, got Requant"):
        G.conv2d_s32(np.ones((1, 3, 3, 1), np.int8), np.ones((4, 1, 1, 1), np.int8), epilogue=rq)


@st.composite
def float_schemes(draw, n):
    """(Requant, float bias or None) of the schemes whose codes the VNNI tile makes in its registers: XNNPACK /
    ONNX Runtime (clamp in float), FBGEMM with no, a per-tensor (fma) or a per-channel (quotient) float bias, and
    float32 scales that make ties (0.5, 0.25) and saturate both rails (1e-7: INT32_MIN; 3e3)."""
    kind = draw(st.sampled_from(["xnnpack", "onnxruntime", "fbgemm", "fbgemm-float-bias", "float32-ties"]))
    c = n if draw(st.booleans()) else 1
    if kind == "float32-ties":
        scale = draw(st.lists(st.sampled_from([0.5, 0.25, 1e-7, 3e3]) | st.floats(1e-4, 4.0), min_size=c,
                              max_size=c))
        return Requant.float_scale(scale, "float32"), None
    s_w = draw(st.lists(st.floats(1e-3, 1.0), min_size=c, max_size=c))
    rq = Requant.from_scales(0.02, s_w if c > 1 else s_w[0], draw(st.sampled_from([1e-7, 1e-3, 0.05, 1.0])),
                             engine=kind.split("-")[0], op="fully_connected")
    if kind != "fbgemm-float-bias":
        return rq, None
    return rq, np.array(draw(st.lists(st.floats(-1e4, 1e4, width=32), min_size=n, max_size=n)), np.float32)


@pytest.mark.skipif("vnni" not in G.PATHS, reason="the requantizing tile is VNNI's")
@settings(max_examples=60, deadline=None)
@given(data=st.data(), m=st.integers(1, 20), n=st.integers(1, 80), k=st.integers(1, 40),
       xd=st.sampled_from([np.int8, np.uint8]), od=st.sampled_from([np.int8, np.uint8, np.int16]))
def test_requantizing_vnni_tile_equals_the_separate_pass(data, m, n, k, xd, od):
    # Float-scale codes made in the tile's registers (16 lanes, a masked store for a partial vector, rows of a
    # short last tile), bit for bit the plain tile's int32 sums requantized by the separate pass.
    rq, fbias = data.draw(float_schemes(n))
    lo_t, hi_t = OUT_RANGES[od]
    lo, hi = sorted(data.draw(st.tuples(st.integers(lo_t, hi_t), st.integers(lo_t, hi_t))))
    c = dict(a=codes(data.draw, xd, (m, k)), b=codes(data.draw, np.int8, (n, k)),
             zx=data.draw(st.sampled_from(EDGES[xd])), zw=data.draw(st.sampled_from([0, 0, -128, 127, 5])),
             bias=None if fbias is not None else data.draw(st.none() | st.lists(
                 st.integers(-(1 << 31), (1 << 31) - 1), min_size=n, max_size=n)),
             rq=rq, fbias=fbias, zo=data.draw(st.integers(lo_t, hi_t)), lo=lo, hi=hi, od=od, acc_bits=32)
    acc = G.gemm_s32(c["a"], G.pack_weights(c["b"]), a_zero_point=c["zx"], b_zero_point=c["zw"], bias=c["bias"],
                     path="plain")
    want = np.empty(acc.size, od)
    requantize_into(acc.reshape(-1), n, 32, rq, float_bias_arrays(fbias, rq, n, "test"), c["zo"], lo, hi, want,
                    "test")
    np.testing.assert_array_equal(fused(c, n, "vnni").reshape(-1), want)


@st.composite
def fixed_schemes(draw, n):
    """TFLite's fixed-point Requant (gemmlowp's roundings) the VNNI tile requantizes in its registers: multipliers
    from 2^30 (every sum an exact tie at a right shift of 1) to 2^31 - 1, every shift in [-31, 30] (left shifts
    wrap, large ones saturate both rails), per tensor or per channel; a shift in [-4, -2] for every channel
    makes the 8-bit float lanes take most blocks (their flagged lanes the exact ones)."""
    c = n if draw(st.booleans()) else 1
    mult = st.sampled_from([1 << 30, (1 << 30) + 1, (1 << 31) - 1, (1 << 31) - 2, 1518500250]) | \
        st.integers(1 << 30, (1 << 31) - 1)
    shifts = st.integers(-31, 30) if draw(st.booleans()) else st.integers(-12, -2)
    return Requant.fixed_point(draw(st.lists(mult, min_size=c, max_size=c)),
                               draw(st.lists(shifts, min_size=c, max_size=c)))


def scalar_requant(acc, rq, n, zo, lo, hi, od):
    """clamp(MBQM(acc, m, s) + zo, lo, hi) of each int32 sum by the scalar primitive (channel = column)."""
    mult, shift = np.broadcast_to(rq.multiplier, (n,)), np.broadcast_to(rq.shift, (n,))
    out = np.empty(acc.shape, od)
    for (i, j), v in np.ndenumerate(acc):
        out[i, j] = min(max(multiply_by_quantized_multiplier_scalar(int(v), int(mult[j]), int(shift[j])) + zo, lo), hi)
    return out


@pytest.mark.skipif("vnni" not in G.PATHS, reason="the requantizing tile is VNNI's")
@settings(max_examples=60, deadline=None)
@given(data=st.data(), m=st.integers(1, 20), n=st.integers(1, 80), k=st.integers(1, 40),
       xd=st.sampled_from([np.int8, np.uint8]), od=st.sampled_from([np.int8, np.uint8, np.int16]))
def test_requantizing_vnni_tile_equals_the_scalar_fixed_point_requantization(data, m, n, k, xd, od):
    # TFLite's scheme in the tile's registers (16 lanes: the float lanes and their flagged-lane fallback for 8-bit
    # codes, the one floor, the two roundings; a masked store for a partial vector, rows of a short last tile),
    # bit for bit the scalar multiply_by_quantized_multiplier of the plain tile's int32 sums.
    rq = data.draw(fixed_schemes(n))
    lo_t, hi_t = OUT_RANGES[od]
    lo, hi = sorted(data.draw(st.tuples(st.integers(lo_t, hi_t), st.integers(lo_t, hi_t))))
    c = dict(a=codes(data.draw, xd, (m, k)), b=codes(data.draw, np.int8, (n, k)),
             zx=data.draw(st.sampled_from(EDGES[xd])), zw=0,
             bias=data.draw(st.none() | st.lists(st.integers(-(1 << 31), (1 << 31) - 1), min_size=n, max_size=n)),
             rq=rq, fbias=None, zo=data.draw(st.integers(lo_t, hi_t)), lo=lo, hi=hi, od=od, acc_bits=32)
    acc = G.gemm_s32(c["a"], G.pack_weights(c["b"]), a_zero_point=c["zx"], bias=c["bias"], path="plain")
    np.testing.assert_array_equal(fused(c, n, "vnni"), scalar_requant(acc, rq, n, c["zo"], lo, hi, od))
