"""fully_connected against the oracle, SEMANTICS 9, live engines, and its refusals."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import oracle as ref
from dspsim.accumulator import KernelStats
from dspsim.requant import Requant
from oracle_views import oracle_requant

SETTINGS = settings(max_examples=200, deadline=None)
RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}
QUANT = dict(input_zero_point=-1, output_zero_point=3, multiplier=1 << 30, shift=-1)


def test_semantics9_fc_vector_double_single_and_relu():
    x, w, b = np.array([[1, -3]], np.int8), np.array([[2, 5]], np.int8), np.array([0], np.int32)
    assert dspsim.fully_connected(x, w, b, **QUANT).tolist() == [[1]]
    assert dspsim.fully_connected(x, w, b, **QUANT, rounding="single").tolist() == [[2]]
    act_min, act_max = dspsim.kernels.tflite_activation_range("relu", 0.05, 3)
    assert dspsim.fully_connected(x, w, None, **QUANT, act_min=act_min, act_max=act_max).tolist() == [[3]]


@st.composite
def fc_case(draw):
    m, k, n = draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(1, 4))
    xd, wd, od = draw(st.sampled_from(["int8", "uint8"])), draw(st.sampled_from(["int8", "uint8"])), \
        draw(st.sampled_from(["int8", "uint8", "int16"]))
    xlo, xhi = RANGES[xd]
    wlo, whi = RANGES[wd]
    olo, ohi = RANGES[od]
    x = np.array(draw(st.lists(st.integers(xlo, xhi), min_size=m * k, max_size=m * k)), xd).reshape(m, k)
    w = np.array(draw(st.lists(st.integers(wlo, whi), min_size=n * k, max_size=n * k)), wd).reshape(n, k)
    bias = draw(st.one_of(st.none(), st.lists(st.integers(-(1 << 31), (1 << 31) - 1), min_size=n, max_size=n)))
    per_channel = draw(st.booleans())
    c = n if per_channel else 1
    mult = draw(st.lists(st.one_of(st.integers(1 << 30, (1 << 31) - 1), st.sampled_from([0, (1 << 31) - 1])),
                         min_size=c, max_size=c))
    shift = draw(st.lists(st.integers(-31, 30), min_size=c, max_size=c))
    lo, hi = sorted(draw(st.tuples(st.integers(olo, ohi), st.integers(olo, ohi))))
    return dict(x=x, w=w, bias=None if bias is None else np.array(bias, np.int32),
                zx=draw(st.integers(xlo, xhi)), zw=draw(st.integers(wlo, whi)), zo=draw(st.integers(olo, ohi)),
                mult=mult, shift=shift, lo=lo, hi=hi, od=od, rounding=draw(st.sampled_from(["double", "single"])))


@SETTINGS
@given(fc_case())
def test_fully_connected_matches_oracle(c):
    got = dspsim.fully_connected(c["x"], c["w"], c["bias"], input_zero_point=c["zx"], weight_zero_point=c["zw"],
                                 output_zero_point=c["zo"], multiplier=c["mult"], shift=c["shift"],
                                 act_min=c["lo"], act_max=c["hi"], rounding=c["rounding"], out_dtype=c["od"])
    rq = oracle_requant(Requant.fixed_point(c["mult"], c["shift"], c["rounding"]))
    want, _, _ = ref.fully_connected(c["x"].tolist(), c["w"].tolist(), None if c["bias"] is None else
                                     c["bias"].tolist(), c["zx"], c["zw"], c["zo"], rq, c["lo"], c["hi"])
    assert got.dtype == np.dtype(c["od"]) and got.tolist() == want


@SETTINGS
@given(fc=fc_case(), engine=st.sampled_from(["fbgemm", "onnxruntime", "onnx-reference", "xnnpack", "tflm", "litert",
                                             "onednn"]),
       s_in=st.floats(1e-4, 1.0), s_w=st.one_of(st.floats(1e-4, 1.0), st.just([0.01, 0.02, 0.03, 0.04])),
       s_out=st.floats(1e-3, 10.0), float_bias=st.booleans())
def test_float_scale_schemes_match_oracle(fc, engine, s_in, s_w, s_out, float_bias):
    bias = fc["bias"]
    if isinstance(s_w, list):
        s_w = s_w[:fc["w"].shape[0]]
    if float_bias and engine in ("fbgemm", "onednn"):
        bias = np.random.default_rng(len(fc["w"])).normal(0, 100, fc["w"].shape[0]).astype(np.float32)
    got = dspsim.fully_connected(fc["x"], fc["w"], bias, input_zero_point=fc["zx"], weight_zero_point=fc["zw"],
                                 output_zero_point=fc["zo"], input_scale=s_in, weight_scale=s_w,
                                 output_scale=s_out, requant=engine, out_dtype=fc["od"])
    rq = ref.requant_from_scales(s_in, s_w, s_out, engine, "fully_connected")
    lo, hi = RANGES[fc["od"]]
    is_float = bias is not None and bias.dtype == np.float32
    want, _, _ = ref.fully_connected(fc["x"].tolist(), fc["w"].tolist(),
                                     None if bias is None or is_float else bias.tolist(), fc["zx"], fc["zw"],
                                     fc["zo"], rq, lo, hi, float_bias=bias.tolist() if is_float else None)
    assert got.tolist() == want


def test_batch_dimensions_are_kept():
    x = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    w = np.ones((5, 4), np.int8)
    out = dspsim.fully_connected(x, w, None, **QUANT)
    assert out.shape == (2, 3, 5)
    assert np.array_equal(out.reshape(6, 5), dspsim.fully_connected(x.reshape(6, 4), w, None, **QUANT))


def test_shift_only_requant_takes_its_tie_rule_from_tie():
    x, w = np.array([[10, 7]], np.int8), np.array([[1, 1]], np.int8)
    kw = dict(input_zero_point=0, output_zero_point=0, requant="shift", shift=-1)
    assert dspsim.fully_connected(x, w, None, **kw, tie="half_to_even").tolist() == [[8]]  # 17/2 = 8.5 -> 8
    assert dspsim.fully_connected(x, w, None, **kw, tie=dspsim.Rounding.FLOOR).tolist() == [[8]]
    assert dspsim.fully_connected(-x, w, None, **kw, tie="half_up").tolist() == [[-8]]  # -8.5 -> -8
    assert dspsim.fully_connected(x, w, None, **kw).tolist() == [[9]]  # default: ties away from zero


@pytest.mark.parametrize("kw, msg", [
    (dict(requant="shift", shift=-1, rounding="single"), "rounding='single' is a fixed-point build; requant='shift' "
                                                         "takes tie="),
    (dict(multiplier=1 << 30, shift=-1, tie="half_up"), "tie= is the tie rule of requant='shift'"),
    (dict(requant="shift", shift=-1, tie="nearest"), "fully_connected: unknown rounding 'nearest'"),
])
def test_tie_and_rounding_keywords_are_refused_where_they_do_not_apply(kw, msg):
    x, w = np.array([[10, 7]], np.int8), np.array([[1, 1]], np.int8)
    with pytest.raises(ValueError, match=msg):
        dspsim.fully_connected(x, w, None, input_zero_point=0, output_zero_point=0, **kw)


def test_stats_report_clamps_and_fast_path():
    x, w = np.array([[100, 100]], np.int8), np.array([[100, -100], [100, 100]], np.int8)
    out, st_ = dspsim.fully_connected(x, w, None, input_zero_point=0, output_zero_point=0, multiplier=1 << 30,
                                      shift=0, stats=True)
    assert isinstance(st_, KernelStats)
    assert out.tolist() == [[0, 127]] and st_.clamped_high == 1 and st_.clamped_low == 0 and st_.fast_path


def bad(**kw):
    args = dict(x=np.zeros((1, 4), np.int8), w=np.zeros((2, 4), np.int8), bias=None, **QUANT)
    args.update(kw)
    x, w, b = args.pop("x"), args.pop("w"), args.pop("bias")
    return lambda: dspsim.fully_connected(x, w, b, **args)


@pytest.mark.parametrize("call,exc,msg", [
    (bad(x=np.zeros((1, 4), np.int32)), TypeError, "x must have dtype int8 or uint8"),
    (bad(w=np.zeros((2, 4), np.float32)), TypeError, "w must have dtype"),
    (bad(w=np.zeros((2, 5), np.int8)), ValueError, "x has 4 features but w has shape"),
    (bad(w=np.zeros((2, 2, 2), np.int8)), ValueError, "w must have rank 2"),
    (bad(bias=np.zeros(3, np.int32)), ValueError, r"bias must have shape \(2,\)"),
    (bad(bias=np.zeros(2, np.float32)), ValueError, "a float bias needs requant='fbgemm'"),
    (bad(multiplier=[1 << 30] * 3, shift=[0] * 3), ValueError,
     "requantization has 3 per-channel values but the output has 2"),
    (bad(multiplier=1 << 31), ValueError, r"multiplier must be in \[0, 2147483647\]"),
    (bad(shift=31), ValueError, r"shift must be in \[-31, 30\]"),
    (bad(act_min=5, act_max=4), ValueError, r"act_min \(5\) must not exceed act_max \(4\)"),
    (bad(act_min=-129), ValueError, r"act_min must be in \[-128, 127\]"),
    (bad(input_zero_point=128), ValueError, r"input_zero_point must be in \[-128, 127\]"),
    (bad(output_zero_point=-1, out_dtype="uint8"), ValueError, r"output_zero_point must be in \[0, 255\]"),
    (bad(weight_zero_point=200), ValueError, "weight_zero_point"),
    (bad(out_dtype="int32"), ValueError, "unknown integer type"),
    (bad(rounding="nearest"), ValueError, "rounding must be 'double'"),
    (bad(multiplier=None), ValueError, "give multiplier and shift"),
    (bad(input_scale=0.1), ValueError, "float-scale requantization needs input_scale, weight_scale"),
    (bad(accumulator="int32"), TypeError, "accumulator must be an Accumulator"),
    (bad(accumulator=dspsim.Accumulator(pair_saturation=True)), ValueError, "pair_saturation models vpmaddubsw"),
])
def test_refusals(call, exc, msg):
    with pytest.raises(exc, match="^fully_connected: " + msg):
        call()


# --- live engines (skip when absent) ---------------------------------------------------------
def test_live_torch_fbgemm_linear_matches():
    torch = pytest.importorskip("torch")
    if "fbgemm" not in torch.backends.quantized.supported_engines:
        pytest.skip("no fbgemm")
    torch.backends.quantized.engine = "fbgemm"
    rng = np.random.default_rng(5)
    m, k, n = 7, 37, 11
    s_in, zx, s_out, zo = 0.0371, 121, 0.173, 64
    s_w = rng.uniform(0.002, 0.02, n).astype(np.float32)
    x = rng.integers(0, 128, (m, k)).astype(np.uint8)  # reduce_range: 7-bit activations, no pair saturation
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    bias = rng.normal(0, 2, n).astype(np.float32)
    qx = torch._make_per_tensor_quantized_tensor(torch.from_numpy(x), s_in, zx)
    qw = torch._make_per_channel_quantized_tensor(torch.from_numpy(w), torch.from_numpy(s_w.astype(np.float64)),
                                                  torch.zeros(n, dtype=torch.long), 0)
    packed = torch.ops.quantized.linear_prepack(qw, torch.from_numpy(bias))
    want = torch.ops.quantized.linear(qx, packed, s_out, zo).int_repr().numpy()
    got = dspsim.fully_connected(x, w, bias, input_zero_point=zx, output_zero_point=zo, input_scale=s_in,
                                 weight_scale=s_w, output_scale=s_out, requant="fbgemm", out_dtype="uint8")
    assert np.array_equal(got, want)


def test_live_onnxruntime_qlinearmatmul_matches():
    ort = pytest.importorskip("onnxruntime")
    helper = pytest.importorskip("onnx.helper")
    from onnx import TensorProto, numpy_helper
    rng = np.random.default_rng(6)
    m, k, n = 5, 29, 9
    x = rng.integers(0, 256, (m, k)).astype(np.uint8)
    w = rng.integers(-128, 128, (n, k)).astype(np.int8)
    s_in, zx, s_w, zw, s_out, zo = 0.02, 131, 0.011, 0, 0.41, 117
    inits = [numpy_helper.from_array(np.array(v, dtype=t), name) for name, v, t in [
        ("xs", s_in, np.float32), ("xz", zx, np.uint8), ("w", w.T.copy(), np.int8), ("ws", s_w, np.float32),
        ("wz", zw, np.int8), ("ys", s_out, np.float32), ("yz", zo, np.uint8)]]
    node = helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [m, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    from dspsim.simd.cpu import peer_accumulator

    got = dspsim.fully_connected(x, w, None, input_zero_point=zx, weight_zero_point=zw, output_zero_point=zo,
                                 input_scale=s_in, weight_scale=s_w, output_scale=s_out, requant="onnxruntime",
                                 out_dtype="uint8", accumulator=peer_accumulator("onnxruntime"))
    assert np.array_equal(got, want)


def test_prepacked_weights_give_the_raw_weights_output():
    rng = np.random.default_rng(11)
    x = rng.integers(0, 256, (37, 70)).astype(np.uint8)
    w = rng.integers(-128, 128, (19, 70)).astype(np.int8)
    kw = dict(input_zero_point=130, weight_zero_point=rng.integers(-5, 5, 19), output_zero_point=-3,
              multiplier=rng.integers(1 << 30, 1 << 31, 19), shift=rng.integers(-12, -6, 19))
    packed = dspsim.pack_weights(w)
    bias = rng.integers(-1000, 1000, 19).astype(np.int32)
    want = dspsim.fully_connected(x, w, bias, **kw)
    assert np.array_equal(dspsim.fully_connected(x, packed, bias, **kw), want)
    assert np.array_equal(dspsim.fully_connected(x, packed, bias, **kw), want)  # second call: cached bounds
    narrow = dict(kw, accumulator=dspsim.Accumulator(16, "saturate"), stats=True)  # checked kernel reads the raw copy
    got, st_ = dspsim.fully_connected(x, packed, bias, **narrow)
    want_n, st_w = dspsim.fully_connected(x, w, bias, **narrow)
    assert np.array_equal(got, want_n) and st_ == st_w and not st_.fast_path


def test_wide_accumulator_beyond_int32_uses_the_exact_raw_sum():
    # K * max|x| * max|w| < 2^31 but the zero-point adjusted sum exceeds int32: exact int64 fast path
    x = np.full((1, 40000), 127, np.int8)
    w = np.full((1, 40000), 100, np.int8)
    kw = dict(input_zero_point=-128, weight_zero_point=-128, output_zero_point=0, requant="shift", shift=-20,
              out_dtype="int16", accumulator=dspsim.Accumulator(48), stats=True)
    got, st_ = dspsim.fully_connected(x, w, None, **kw)
    assert st_.fast_path and got.tolist() == [[min(round(40000 * 255 * 228 / 2**20), 32767)]]


def test_packed_weights_of_a_conv_are_refused():
    w = dspsim.pack_weights(np.ones((2, 1, 1, 3), np.int8))
    with pytest.raises(ValueError, match="fully_connected: packed weights must come from a 2-D"):
        dspsim.fully_connected(np.ones((1, 3), np.int8), w, **QUANT)
