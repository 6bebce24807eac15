"""conv2d (incl. grouped) and depthwise_conv2d against the oracle, geometry, live ORT, refusals."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import oracle as ref
from dspsim.kernels._common import geometry
from dspsim.requant import Requant
from oracle_views import oracle_requant

SETTINGS = settings(max_examples=150, deadline=None)
RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def arr(draw, shape, dtype):
    lo, hi = RANGES[dtype]
    size = int(np.prod(shape))
    vals = draw(st.lists(st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi])), min_size=size, max_size=size))
    return np.array(vals, dtype).reshape(shape)


@st.composite
def window_case(draw, depthwise):
    b, h, w_ = draw(st.integers(1, 2)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    xd, wd = draw(st.sampled_from(["int8", "uint8"])), draw(st.sampled_from(["int8", "uint8"]))
    if depthwise:
        c, mult = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        oc, icg = c * mult, 1
        wshape = (1, kh, kw, oc)
    else:
        groups, icg, ocg = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
        c, oc, mult = groups * icg, groups * ocg, None
        wshape = (oc, kh, kw, icg)
    pads = [draw(st.integers(0, 2)) for _ in range(4)]
    eff = ((kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1)
    if h + pads[0] + pads[1] < eff[0] or w_ + pads[2] + pads[3] < eff[1]:
        pads = [eff[0], eff[0], eff[1], eff[1]]
    per_channel = draw(st.booleans())
    n = oc if per_channel else 1
    return dict(
        x=arr(draw, (b, h, w_, c), xd), w=arr(draw, wshape, wd), mult=mult, stride=stride, dil=dil, pads=pads,
        bias=draw(st.one_of(st.none(), st.lists(st.integers(-(1 << 20), 1 << 20), min_size=oc, max_size=oc))),
        zx=draw(st.integers(*RANGES[xd])), zw=draw(st.integers(*RANGES[wd])), zo=draw(st.integers(-128, 127)),
        m=draw(st.lists(st.integers(1 << 30, (1 << 31) - 1), min_size=n, max_size=n)),
        s=draw(st.lists(st.integers(-20, 4), min_size=n, max_size=n)),
        rounding=draw(st.sampled_from(["double", "single"])),
        acc=draw(st.sampled_from([(32, "wrap"), (16, "saturate"), (16, "wrap"), (20, "saturate"), (64, "wrap")])))


def run_both(c, depthwise):
    top, bottom, left, right = c["pads"]
    kw = dict(stride=c["stride"], dilation=c["dil"], padding=((top, bottom), (left, right)),
              input_zero_point=c["zx"], weight_zero_point=c["zw"], output_zero_point=c["zo"], multiplier=c["m"],
              shift=c["s"], rounding=c["rounding"], accumulator=dspsim.Accumulator(*c["acc"]), stats=True)
    bias = None if c["bias"] is None else np.array(c["bias"], np.int32)
    rq = oracle_requant(Requant.fixed_point(c["m"], c["s"], c["rounding"]))
    args = (c["x"].tolist(), c["w"].tolist(), c["bias"], c["zx"], c["zw"], c["zo"], rq, -128, 127)
    geo = dict(stride=c["stride"], pads=tuple(c["pads"]), dilation=c["dil"], acc_model=(*c["acc"], False))
    if depthwise:
        got, stats = dspsim.depthwise_conv2d(c["x"], c["w"], bias, depth_multiplier=c["mult"], **kw)
        want, events, _ = ref.depthwise_conv2d(*args, depth_multiplier=c["mult"], **geo)
    else:
        got, stats = dspsim.conv2d(c["x"], c["w"], bias, **kw)
        want, events, _ = ref.conv2d(*args, **geo)
    return got, stats, want, events


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv2d", "depthwise"])
@SETTINGS
@given(data=st.data())
def test_window_ops_match_oracle(depthwise, data):
    got, stats, want, events = run_both(data.draw(window_case(depthwise)), depthwise)
    assert got.tolist() == want
    assert stats.overflow_events == events


def test_padding_taps_contribute_zero_not_the_raw_zero_point():
    x = np.full((1, 1, 1, 1), 7, np.int8)
    w = np.ones((1, 3, 3, 1), np.int8)
    out = dspsim.conv2d(x, w, None, padding="SAME", input_zero_point=5, output_zero_point=0, multiplier=1 << 30,
                        shift=1)
    assert out.tolist() == [[[[2]]]]  # only the centre tap: 7 - 5


@pytest.mark.parametrize("in_hw,k,stride,dil,padding,out_hw,pads", [
    ((5, 5), (3, 3), 1, 1, "SAME", (5, 5), (1, 1)),
    ((6, 6), (3, 3), 2, 1, "SAME", (3, 3), (0, 0)),  # total 1: the odd pixel goes bottom/right
    ((7, 7), (3, 3), 2, 1, "SAME", (4, 4), (1, 1)),
    ((7, 7), (3, 3), 2, 1, "VALID", (3, 3), (0, 0)),
    ((10, 10), (3, 3), 1, 2, "VALID", (6, 6), (0, 0)),
    ((4, 4), (2, 2), 1, 1, ((1, 0), (0, 2)), (4, 5), (1, 0)),
    ((4, 4), (3, 3), 1, 1, 1, (4, 4), (1, 1)),
])
def test_geometry(in_hw, k, stride, dil, padding, out_hw, pads):
    g = geometry(in_hw, k, stride, padding, dil, "conv2d")
    assert (g.out_h, g.out_w) == out_hw and (g.pad_top, g.pad_left) == pads


def test_grouped_conv_equals_separate_convs():
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (2, 5, 5, 6)).astype(np.int8)
    w = rng.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    q = dict(input_zero_point=3, output_zero_point=-4, multiplier=1 << 30, shift=-8, padding="SAME")
    out = dspsim.conv2d(x, w, None, **q)
    assert np.array_equal(out[..., :2], dspsim.conv2d(x[..., :3], w[:2], None, **q))
    assert np.array_equal(out[..., 2:], dspsim.conv2d(x[..., 3:], w[2:], None, **q))


def test_depthwise_equals_grouped_conv():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 256, (1, 6, 7, 3)).astype(np.uint8)
    w = rng.integers(-128, 128, (1, 3, 3, 6)).astype(np.int8)
    q = dict(input_zero_point=120, weight_zero_point=2, output_zero_point=-4, multiplier=[1 << 30] * 6,
             shift=list(range(-10, -4)), padding="SAME", stride=2)
    dw = dspsim.depthwise_conv2d(x, w, None, depth_multiplier=2, **q)
    grouped = dspsim.conv2d(x, np.ascontiguousarray(w[0].transpose(2, 0, 1)[..., None]), None, **q)
    assert np.array_equal(dw, grouped)


def bad_conv(**kw):
    args = dict(x=np.zeros((1, 4, 4, 4), np.int8), w=np.zeros((4, 3, 3, 2), np.int8), bias=None,
                input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
    args.update(kw)
    x, w, b = args.pop("x"), args.pop("w"), args.pop("bias")
    return lambda: dspsim.conv2d(x, w, b, **args)


@pytest.mark.parametrize("call,exc,msg", [
    (bad_conv(w=np.zeros((4, 3, 3, 3), np.int8)), ValueError, r"input channels \(4\) must be a multiple of"),
    (bad_conv(w=np.zeros((3, 3, 3, 2), np.int8)), ValueError, r"output channels \(3\) must be a multiple of groups"),
    (bad_conv(x=np.zeros((4, 4, 4), np.int8)), ValueError, "x must have rank 4"),
    (bad_conv(x=np.zeros((1, 4, 4, 4), np.int32)), TypeError, "x must have dtype"),
    (bad_conv(stride=0), ValueError, "stride must be >= 1"),
    (bad_conv(dilation=(1, 0)), ValueError, "dilation must be >= 1"),
    (bad_conv(stride=1.5), TypeError, "stride must be an int or a pair"),
    (bad_conv(padding="FULL"), ValueError, "padding must be 'VALID', 'SAME' or explicit"),
    (bad_conv(padding=-1), ValueError, "padding must be >= 0"),
    (bad_conv(dilation=3), ValueError, r"the padded input \(4, 4\) is smaller than the dilated filter"),
    (bad_conv(shift=[0, 0]), ValueError, "requantization has 2 per-channel values but the output has 4"),
    (bad_conv(bias=np.zeros(2, np.int32)), ValueError, r"bias must have shape \(4,\)"),
])
def test_conv_refusals(call, exc, msg):
    with pytest.raises(exc, match="^conv2d: " + msg):
        call()


@pytest.mark.parametrize("kw,exc,msg", [
    (dict(depth_multiplier=0), ValueError, "depth_multiplier must be >= 1"),
    (dict(depth_multiplier=2), ValueError, r"w must have shape \(1, KH, KW, C \* depth_multiplier\)"),
    (dict(depth_multiplier=1.0), TypeError, "depth_multiplier must be an int"),
])
def test_depthwise_refusals(kw, exc, msg):
    with pytest.raises(exc, match="^depthwise_conv2d: " + msg):
        dspsim.depthwise_conv2d(np.zeros((1, 3, 3, 2), np.int8), np.zeros((1, 2, 2, 2), np.int8), None,
                                input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0, **kw)


@pytest.mark.parametrize("engine", ["onnxruntime", "onnx-reference"])
def test_live_onnx_qlinearconv_matches(engine):
    helper = pytest.importorskip("onnx.helper")
    from onnx import TensorProto, numpy_helper
    rng = np.random.default_rng(8)
    x = rng.integers(0, 256, (1, 7, 6, 4)).astype(np.uint8)
    w = rng.integers(-128, 128, (5, 3, 3, 4)).astype(np.int8)
    bias = rng.integers(-3000, 3000, 5).astype(np.int32)
    s_in, zx, s_w, s_out, zo = 0.02, 131, rng.uniform(0.002, 0.02, 5).astype(np.float32), 0.3, 117
    inits = [numpy_helper.from_array(np.asarray(v, dtype=t), name) for name, v, t in [
        ("xs", s_in, np.float32), ("xz", zx, np.uint8), ("w", w.transpose(0, 3, 1, 2).copy(), np.int8),
        ("ws", s_w, np.float32), ("wz", np.zeros(5), np.int8), ("ys", s_out, np.float32), ("yz", zo, np.uint8),
        ("b", bias, np.int32)]]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1, 0, 1, 2], strides=[2, 1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, 7, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    feed = {"x": x.transpose(0, 3, 1, 2).copy()}
    if engine == "onnxruntime":
        ort = pytest.importorskip("onnxruntime")
        want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    else:
        reference = pytest.importorskip("onnx.reference")
        want = reference.ReferenceEvaluator(model).run(None, feed)[0]
    from dspsim.simd.cpu import peer_accumulator

    acc = peer_accumulator(engine) if engine == "onnxruntime" else None  # MLAS: vpmaddubsw without VNNI
    got = dspsim.conv2d(x, w, bias, stride=(2, 1), padding=((1, 1), (0, 2)), input_zero_point=zx, output_zero_point=zo,
                        input_scale=s_in, weight_scale=s_w, output_scale=s_out, requant=engine, out_dtype="uint8",
                        accumulator=acc)
    assert np.array_equal(got, want.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_prepacked_weights_give_the_raw_weights_output(groups):
    rng = np.random.default_rng(groups)
    x = rng.integers(-128, 128, (2, 7, 6, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (6, 3, 2, 8 // groups)).astype(np.int8)
    kw = dict(stride=(2, 1), padding="SAME", dilation=(1, 2), input_zero_point=3, weight_zero_point=rng.integers(-3, 3, 6),
              output_zero_point=1, multiplier=(1 << 30) + 7, shift=-9)
    want = dspsim.conv2d(x, w, None, **kw)
    assert np.array_equal(dspsim.conv2d(x, dspsim.pack_weights(w, groups=groups), None, **kw), want)


def test_conv2d_refuses_weights_packed_with_other_groups():
    with pytest.raises(ValueError, match="conv2d: weights packed with groups=1"):
        dspsim.conv2d(np.ones((1, 3, 3, 4), np.int8), dspsim.pack_weights(np.ones((4, 1, 1, 2), np.int8)),
                      input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)


@pytest.mark.parametrize("mult", [1, 2])
def test_depthwise_sums_beyond_int32_in_a_wide_accumulator(mult):
    # bias INT32_MAX plus positive products: int32 would wrap, a 64-bit accumulator holds the sum
    # (the int64 direct loop), which the fixed-point requantization then saturates to int32.
    x = np.full((1, 3, 3, 2), 127, np.int8)
    w = np.full((1, 2, 2, 2 * mult), 127, np.int8)
    bias = np.full(2 * mult, (1 << 31) - 1, np.int64)
    kw = dict(depth_multiplier=mult, padding="SAME", input_zero_point=0, output_zero_point=0, multiplier=1 << 30,
              shift=-20, out_dtype="int16", stats=True)
    wide, st_w = dspsim.depthwise_conv2d(x, w, bias, accumulator=dspsim.Accumulator(64), **kw)
    narrow, _ = dspsim.depthwise_conv2d(x, w, bias, **kw)
    assert st_w.fast_path and st_w.requant_saturations == wide.size
    assert np.all(wide == 1024) and np.all(narrow < 0)  # 2^31 / 2^21 vs the int32 wrap
