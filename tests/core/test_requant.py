"""Requant: parameter derivation per engine and the requantization of every scheme, against the oracle."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import oracle as ref
from dspsim.fixedpoint import Rounding
from dspsim import Requant, requantize
from oracle_views import oracle_requant

SETTINGS = settings(max_examples=300, deadline=None)
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def edge_ints(lo, hi):
    """Integers in [lo, hi] with extra weight on +-2^i +-{0,1} and the ends."""
    specials = {lo, hi, 0, 1, -1}
    for i in range(64):
        for d in (-1, 0, 1):
            for v in ((1 << i) + d, -(1 << i) + d):
                if lo <= v <= hi:
                    specials.add(v)
    return st.one_of(st.sampled_from(sorted(specials)), st.integers(lo, hi))


multipliers = st.one_of(st.sampled_from([0, 1, 1 << 30, (1 << 30) + 1, INT32_MAX, INT32_MAX - 1, 1717986918]),
                        st.integers(1 << 30, INT32_MAX))
scales = st.floats(1e-6, 10.0, allow_nan=False, allow_infinity=False)


def test_semantics9_mbqm_vectors_through_requantize():
    rows = [(-6, 1 << 30, -1, -2, -1), (-2, 1 << 30, -1, -1, 0), (6, 1 << 30, -1, 2, 2), (-5, 1 << 30, 0, -2, -2),
            (2, 1717986918, -2, 1, 0)]
    for acc, m, s, double, single in rows:
        assert requantize(acc, Requant.fixed_point(m, s, "double"), 0, -1000, 1000, out_dtype="int16") == double
        assert requantize(acc, Requant.fixed_point(m, s, "single"), 0, -1000, 1000, out_dtype="int16") == single


def test_float_schemes_place_the_zero_point_as_their_engines_do():
    # SEMANTICS 9: acc 1, 3, -1, multiplier 0.5, y_zp 1
    acc = np.array([1, 3, -1])
    onnx_ref = requantize(acc, Requant.float_scale(0.5, "float64"), 1)
    ort = requantize(acc, Requant.float_scale(0.5, "float32"), 1)
    fbgemm = requantize(acc, Requant.float_scale(0.5, "fbgemm"), 1)
    assert onnx_ref.tolist() == [2, 2, 0]
    assert ort.tolist() == [1, 3, 1] and fbgemm.tolist() == [1, 3, 1]


def test_float_schemes_round_the_accumulator_to_float32_first():
    # 16777217 becomes 16777216 in float32: times 2^-25 is exactly 0.5 -> 0 (ties to even); float64 keeps 1
    assert requantize(16777217, Requant.float_scale(2.0**-25, "float32"), 0) == 0
    assert requantize(16777217, Requant.float_scale(2.0**-25, "float64"), 0) == 1


@pytest.mark.parametrize("rule,expected", [("half_up", [-2, 3, -1]), ("half_away_from_zero", [-3, 3, -2]),
                                           ("half_to_even", [-2, 2, -2]), ("floor", [-3, 2, -2]),
                                           ("toward_zero", [-2, 2, -1])])
def test_shift_only_tie_rules(rule, expected):
    rq = Requant.shift_only(-1, rule)
    assert requantize(np.array([-5, 5, -3]), rq, 0).tolist() == expected


@pytest.mark.parametrize("rule", [r.name.lower() for r in Rounding])
@pytest.mark.parametrize("acc", [(1 << 63) - 1, -(1 << 63), (1 << 62) - 1, -(1 << 62), (1 << 62) + 1])
def test_shift_only_by_63_rounds_the_int64_ends_like_the_oracle(acc, rule):
    # INT64_MAX / 2^63 is just below 1: its remainder 2^63 - 1 must not overflow the tie test
    want = ref.round_fraction(Fraction(acc, 1 << 63), rule)
    assert requantize(np.array([acc], np.int64), Requant.shift_only(-63, rule), 0).tolist() == [want]


@pytest.mark.parametrize("acc, scale, want", [(-1, 0.5 - 2.0**-54, 0), (1, 0.5 - 2.0**-54, 0), (-1, 0.5, -1),
                                              (1, 0.5, 1), (-3, 0.5, -2), (-1, 0.5 + 2.0**-53, -1)])
def test_double_scale_rounds_like_std_round_next_to_one_half(acc, scale, want):
    # double(acc) * scale = -0.49999999999999994: std::round gives -0, but d - floor(d) = 0.5 + 2^-54
    # rounds to 0.5, so a floor-based rounding would give -1
    assert requantize(acc, Requant("double_scale", scale=(scale,)), 0) == want
    assert ref.requantize_value(acc, {"scheme": "double_scale", "scale": [Fraction(scale)]}, 0, 0) == want


def test_shift_only_left_shift_is_exact_then_clamped():
    rq = Requant.shift_only(3)
    assert requantize(np.array([5, -16, 1 << 40, -(1 << 40)]), rq, 1, out_dtype="int16").tolist() == \
        [41, -127, 32767, -32768]


def test_fixed_point_saturates_wide_accumulators_to_int32_first():
    rq = Requant.fixed_point(1 << 30, -20)  # 2^-21
    wide = (1 << 40) + 12345
    assert requantize(wide, rq, 0, out_dtype="int16") == requantize(INT32_MAX, rq, 0, out_dtype="int16") == 1024


def test_from_scales_tflite_formulas_differ_between_per_tensor_fc_and_conv():
    # find scales where double(f32(a*b))/c and double(a)*double(b)/c give different Q31 multipliers
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(2000):
        a, b, c = (float(np.float32(v)) for v in rng.uniform(0.001, 1.0, 3))
        fc = Requant.from_scales(a, b, c, op="fully_connected")
        conv = Requant.from_scales(a, b, c, op="conv")
        hits += fc.multiplier != conv.multiplier
        assert fc.multiplier == (ref.requant_from_scales(a, b, c, op="fully_connected")["multiplier"][0],)
    assert hits > 0


@SETTINGS
@given(s_in=scales, s_out=scales, s_w=st.one_of(scales, st.lists(scales, min_size=1, max_size=4)),
       engine=st.sampled_from(["tflm", "litert", "fbgemm", "onnxruntime", "onnx-reference", "xnnpack", "onednn"]),
       op=st.sampled_from(["conv", "depthwise", "fully_connected", "relu"]),
       rounding=st.sampled_from(["double", "single"]))
def test_from_scales_matches_oracle(s_in, s_out, s_w, engine, op, rounding):
    if op == "relu" and engine not in ("tflm", "litert", "xnnpack"):
        with pytest.raises(ValueError, match="^Requant.from_scales: op 'relu'"):
            Requant.from_scales(s_in, s_w, s_out, engine=engine, op=op)
        return
    rq = Requant.from_scales(s_in, s_w, s_out, engine=engine, op=op, rounding=rounding)
    want = ref.requant_from_scales(s_in, s_w, s_out, engine, op, rounding)
    if want["scheme"] in ("double", "single"):
        n = len(want["multiplier"])
        assert rq.scheme == rounding
        assert list(rq.multiplier) == want["multiplier"] and list(rq.shift) == want["shift"] and rq.channels == n
    else:
        assert rq.scheme == want["scheme"]
        assert [Fraction(v) for v in rq.scale] == want["scale"]
        if engine in ("fbgemm", "onednn"):
            assert [Fraction(v) for v in rq.act_times_w] == want["act_times_w"]
        assert rq.reciprocal_bias == want.get("reciprocal_bias", False)


@SETTINGS
@given(acc=st.lists(edge_ints(-(1 << 34), 1 << 34), min_size=1, max_size=6), m=multipliers,
       s=edge_ints(-31, 30), rounding=st.sampled_from(["double", "single"]), zp=st.integers(-128, 127),
       lo_hi=st.tuples(st.integers(-128, 127), st.integers(-128, 127)))
def test_fixed_point_requantize_matches_oracle(acc, m, s, rounding, zp, lo_hi):
    lo, hi = min(lo_hi), max(lo_hi)
    rq = Requant.fixed_point(m, s, rounding)
    got = requantize(np.array(acc), rq, zp, lo, hi)
    want = [ref.clamp(ref.requantize_value(a, oracle_requant(rq), 0, zp), lo, hi) for a in acc]
    assert got.dtype == np.int8 and got.tolist() == want


@SETTINGS
@given(acc=st.lists(edge_ints(-(1 << 40), 1 << 40), min_size=1, max_size=6), s=st.integers(-63, 31),
       rule=st.sampled_from([r.name.lower() for r in Rounding]), zp=st.integers(-32768, 32767))
def test_shift_only_requantize_matches_oracle(acc, s, rule, zp):
    rq = Requant.shift_only(s, rule)
    got = requantize(np.array(acc), rq, zp, out_dtype="int16")
    want = [ref.clamp(ref.requantize_value(a, oracle_requant(rq), 0, zp), -32768, 32767) for a in acc]
    assert got.tolist() == want


@SETTINGS
@given(acc=st.lists(edge_ints(INT32_MIN, INT32_MAX), min_size=1, max_size=4),
       scale=st.floats(1e-9, 4.0), zp=st.integers(0, 255),
       scheme=st.sampled_from(["fbgemm", "float32", "float64", "double_scale"]),
       fbias=st.one_of(st.none(), st.floats(-1e6, 1e6, width=32)), atw=st.floats(2.0**-20, 1.0, width=32))
def test_float_requantize_matches_oracle(acc, scale, zp, scheme, fbias, atw):
    rq = Requant.float_scale(scale, scheme, act_times_w=atw if scheme == "fbgemm" else None)
    use_bias = fbias is not None and scheme == "fbgemm"
    got = requantize(np.array(acc).reshape(-1, 1), rq, zp, out_dtype="uint8",
                     float_bias=np.array([fbias], np.float32) if use_bias else None)
    want = [ref.clamp(ref.requantize_value(a, oracle_requant(rq), 0, zp, fbias if use_bias else None), 0, 255)
            for a in acc]
    assert got.reshape(-1).tolist() == want


def test_per_channel_parameters_run_along_the_last_axis():
    rq = Requant.fixed_point([1 << 30, 1 << 30], [0, -1])
    assert requantize(np.array([[8, 8], [-8, -8]]), rq, 0).tolist() == [[4, 2], [-4, -2]]
    with pytest.raises(ValueError, match="^requantize: .*2 per-channel values but the output has 3"):
        requantize(np.zeros((1, 3), np.int64), rq, 0)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: Requant.fixed_point(1 << 31, 0), ValueError, r"^Requant.fixed_point: multiplier must be in \[0, "),
    (lambda: Requant.fixed_point(-1, 0), ValueError, r"^Requant.fixed_point: multiplier"),
    (lambda: Requant.fixed_point(1 << 30, 31), ValueError, r"^Requant.fixed_point: shift must be in \[-31, 30\]"),
    (lambda: Requant.fixed_point(1 << 30, -32), ValueError, r"^Requant.fixed_point: shift"),
    (lambda: Requant.fixed_point(1 << 30, 0, "triple"), ValueError, r"^Requant.fixed_point: rounding"),
    (lambda: Requant.fixed_point([1, 2, 3], [0, 0]), ValueError, r"^Requant.fixed_point: multiplier \(3\)"),
    (lambda: Requant.fixed_point(1.5, 0), TypeError, r"^Requant.fixed_point: multiplier must be an integer"),
    (lambda: Requant.shift_only(32), ValueError, r"^Requant.shift_only: shift"),
    (lambda: Requant.shift_only(-1, "nearest"), ValueError, r"^Requant.shift_only: unknown rounding"),
    (lambda: Requant.float_scale(0.5, "tflite"), ValueError, r"^Requant.float_scale: scheme must be one of"),
    (lambda: Requant.float_scale(0.5, "fbgemm", tie="half_up"), ValueError, r"^Requant.float_scale: tie= is the"),
    (lambda: Requant.fixed_point(1 << 30, 0, "int64", tie="floor"), ValueError, r"^Requant.fixed_point: rounding 'int64'"),
    (lambda: Requant.from_scales(0.1, 0.1, 0.1, engine="tflite"), ValueError, r"engine 'tflite' is now 'tflm'"),
    (lambda: Requant.from_scales(0.1, None, 0.1, engine="fbgemm", op="relu"), ValueError,
     r"^Requant.from_scales: op 'relu' requantizes as TFLite's ReluPrepare: engine 'fbgemm'"),
    (lambda: Requant.float_scale(-0.5), ValueError, r"^Requant.float_scale: scale must be finite and positive"),
    (lambda: Requant.from_scales(0.1, 0.1, 0.1, engine="tvm"), ValueError, r"^Requant.from_scales: engine"),
    (lambda: Requant.from_scales(0.1, 0.1, 0.1, op="pool"), ValueError, r"^Requant.from_scales: op"),
    (lambda: Requant.from_scales(0.1, None, 0.1), ValueError, r"^Requant.from_scales: weight_scale is required"),
    (lambda: requantize(0, "double"), TypeError, r"^requantize: requant must be a Requant"),
    (lambda: requantize(0, Requant.shift_only(0), 0, 5, 4), ValueError, r"^requantize: act_min \(5\) must not"),
    (lambda: requantize(0, Requant.shift_only(0), 128), ValueError, r"^requantize: output_zero_point"),
    (lambda: requantize(0, Requant.shift_only(0), 0, out_dtype="int32"), ValueError, r"^requantize: unknown"),
    (lambda: requantize(0, Requant.float_scale(0.5), 0, float_bias=[1.0]), ValueError, r"^requantize: a float bias"),
])
def test_refusals_name_the_function_and_rule(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_requant_is_a_frozen_printable_value():
    rq = Requant.from_scales(0.5, [0.25, 0.125], 0.5)
    assert rq == Requant.fixed_point([1 << 30, 1 << 30], [-1, -2])
    with pytest.raises(AttributeError):
        rq.scheme = "single"
    assert "double" in repr(rq)


def _litert_cases(op):
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", f"litert_{op}.npz")
    if not os.path.exists(path):
        pytest.skip(f"{path} missing")
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    return {str(c): {k.split("__", 1)[1]: v for k, v in data.items() if k.startswith(f"{c}__")} for c in data["cases"]}


@pytest.mark.parametrize("op", ["fc", "conv", "dwconv"])
def test_xnnpack_scheme_matches_litert_xnnpack_delegate(op):
    """The golden LiteRT files also hold the XNNPACK delegate's output: fp32 requantization, every case."""
    import dspsim
    checked = 0
    for name, c in _litert_cases(op).items():
        if not bool(c["ok_xnnpack"]):
            continue
        act = str(c["activation"])
        zo = int(c["output_zero_point"])
        lo, hi = dspsim.tflite_activation_range(None if act == "NONE" else act.lower(), float(c["output_scale"]), zo)
        ws = c["weight_scale"] if c["weight_scale"].size > 1 else np.float32(c["weight_scale"][0])
        kw = dict(input_zero_point=int(c["input_zero_point"]), weight_zero_point=int(c["weight_zero_point"]),
                  output_zero_point=zo, input_scale=c["input_scale"], weight_scale=ws, output_scale=c["output_scale"],
                  requant="xnnpack", act_min=lo, act_max=hi)
        if op == "fc":
            got = dspsim.fully_connected(c["x"], c["w"], c["bias"], **kw)
        else:
            geo = dict(stride=tuple(int(v) for v in c["stride"]), dilation=tuple(int(v) for v in c["dilation"]),
                       padding=str(c["padding"]))
            if op == "conv":
                got = dspsim.conv2d(c["x"], c["w"], c["bias"], **geo, **kw)
            else:
                got = dspsim.depthwise_conv2d(c["x"], c["w"], c["bias"], depth_multiplier=int(c["depth_multiplier"]),
                                              **geo, **kw)
        assert np.array_equal(got, c["out_xnnpack"]), name
        checked += 1
    assert checked > 20


@pytest.mark.parametrize("rq", [
    Requant.fixed_point([(1 << 30) + 17, 1717986918, (1 << 31) - 1], [-9, 2, -31], "double"),
    Requant.fixed_point(1 << 30, -3, "single"),
    Requant.shift_only([-5, 3, 0], "half_to_even"),
    Requant.float_scale([0.01, 0.3, 7.0], "fbgemm"),
    Requant.float_scale(0.001, "float64"),
    Requant.from_scales(0.1, 0.2, 0.3, engine="litert", op="fully_connected"),
    Requant.from_scales(0.1, [0.2, 0.01, 0.5], 0.3, engine="onednn"),
])
def test_large_tensors_split_over_threads_match_small_calls(rq):
    # > 2^19 elements: rows split over threads, per-tensor parameters on long rows; one small call per row agrees
    acc = np.random.default_rng(2).integers(-(1 << 34), 1 << 34, (200000, 3))
    big = requantize(acc, rq, 5, out_dtype="int16")
    rows = np.stack([requantize(acc[i], rq, 5, out_dtype="int16") for i in range(0, 200000, 997)])
    assert np.array_equal(big[::997], rows)
    assert np.array_equal(requantize(acc.astype(np.int32), rq, 5), requantize(acc.astype(np.int32).astype(np.int64), rq, 5))


@pytest.mark.parametrize("rounding", ["double", "single"])
def test_vectorized_fixed_point_equals_the_scalar_primitive_on_edges(rounding):
    # every shift, edge multipliers, accumulators around ties and the int32 ends: the branch-free
    # loop of requantize gives the integers of fixedpoint.multiply_by_quantized_multiplier
    from dspsim.fixedpoint import multiply_by_quantized_multiplier
    accs = np.array(sorted({v + d for v in (0, 1, 3, 1 << 10, 1 << 20, 1 << 30, INT32_MAX, -(1 << 10), -(1 << 20),
                                              -(1 << 30), INT32_MIN) for d in (-2, -1, 0, 1, 2)
                            if INT32_MIN <= v + d <= INT32_MAX}), np.int64)
    for m in (0, 1, 1 << 30, (1 << 30) + 1, 1717986918, INT32_MAX):
        shifts = np.arange(-31, 31)
        rq = Requant.fixed_point(np.full(shifts.size, m), shifts, rounding)
        acc = np.repeat(accs[:, None], shifts.size, axis=1)
        want = multiply_by_quantized_multiplier(acc, m, shifts, rounding, axis=1)
        got = requantize(acc, rq, 0, -(1 << 15), (1 << 15) - 1, out_dtype="int16")
        assert np.array_equal(got, np.clip(want, -(1 << 15), (1 << 15) - 1))


@pytest.mark.parametrize("fused", [True, False])
def test_fbgemm_float_bias_vector_loop_matches_oracle(fused):
    # long rows (vector lanes, llvm.fma when fused): fma(bias, f32(1/atw), acc) for per-tensor weights,
    # f32(acc + f32(bias/atw)) per channel, against the exact oracle; ties of the bias sum included
    rng = np.random.default_rng(7)
    c = 37
    atw = rng.uniform(2.0**-14, 2.0**-6, c).astype(np.float32)
    rq = Requant.float_scale(rng.uniform(0.001, 0.2, 1 if fused else c), "fbgemm",
                             act_times_w=atw[:1] if fused else atw, reciprocal_bias=fused)
    bias = (rng.integers(-400, 400, c) * 0.5).astype(np.float32)
    acc = np.concatenate([rng.integers(-(1 << 26), 1 << 26, (40, c)), rng.integers(-300, 300, (20, c))])
    got = requantize(acc, rq, 3, -100, 100, float_bias=bias)
    orq = {"scheme": "fbgemm", "scale": list(rq.scale), "act_times_w": list(rq.act_times_w), "reciprocal_bias": fused}
    want = [[ref.clamp(ref.requantize_value(int(a), orq, j, 3, float(bias[j])), -100, 100) for j, a in enumerate(row)]
            for row in acc]
    assert got.tolist() == want


def test_fbgemm_per_tensor_float_bias_is_one_fused_rounding():
    # bias * f32(1/atw) = 0.5 * (1 - 2^-46): fmaf(bias, inv, acc) of an odd acc in [2^23, 2^24) (ulp 1) stays at
    # acc, so y = acc * 2^-9 lies just below the tie n + 1/2; rounding the product first to 0.5 makes acc + 0.5
    # a float32 tie that goes to the even acc + 1, y = n + 1/2 exactly, and rint gives n + 1 for odd n
    atw = np.float32(1 - 2.0**-23)  # f32(1/atw) = 1 + 2^-23
    bias = np.full(1, 0.5 * (1 - 2.0**-23), np.float32)
    n = np.arange(16385, 32767, 2)
    acc = (256 * (2 * n + 1) - 1).reshape(-1, 1)
    rq = Requant.float_scale(2.0**-9, "fbgemm", act_times_w=atw, reciprocal_bias=True)
    assert requantize(acc, rq, 0, out_dtype="int16", float_bias=bias).reshape(-1).tolist() == n.tolist()


# ---------------------------------------------------------------------------------------------
# a device's requantization: tie rules of the final shift, the whole accumulator, narrow multipliers
# ---------------------------------------------------------------------------------------------
TIES = [r.name.lower() for r in Rounding]


def oracle_device_requant(rq: Requant) -> dict:
    return {**oracle_requant(rq), "saturate_input": rq.saturate_input}


@SETTINGS
@given(acc=st.lists(edge_ints(-(1 << 40), 1 << 40), min_size=1, max_size=6), m=multipliers,
       s=edge_ints(-31, 30), rounding=st.sampled_from(["double", "single"]), tie=st.sampled_from(TIES),
       saturate_input=st.booleans(), zp=st.integers(-128, 127))
def test_fixed_point_with_any_tie_rule_and_accumulator_input_matches_oracle(acc, m, s, rounding, tie,
                                                                            saturate_input, zp):
    rq = Requant.fixed_point(m, s, rounding, tie, saturate_input)
    got = requantize(np.array(acc), rq, zp, out_dtype="int16")
    want = [ref.clamp(ref.requantize_value(a, oracle_device_requant(rq), 0, zp), -32768, 32767) for a in acc]
    assert got.tolist() == want


def test_the_final_shift_tie_rules_differ_on_exact_halves():
    # acc * 2^30 / 2^31 = acc / 2: -3 -> -1.5, -1 -> -0.5, 1 -> 0.5, 3 -> 1.5 (single rounding: one rounding)
    acc = np.array([-3, -1, 1, 3])
    want = {"half_away_from_zero": [-2, -1, 1, 2], "half_up": [-1, 0, 1, 2], "half_to_even": [-2, 0, 0, 2],
            "floor": [-2, -1, 0, 1], "toward_zero": [-1, 0, 0, 1]}
    for tie, values in want.items():
        assert requantize(acc, Requant.fixed_point(1 << 30, 0, "single", tie), 0).tolist() == values, tie


@SETTINGS
@given(s_in=scales, s_out=scales, s_w=st.one_of(scales, st.lists(scales, min_size=1, max_size=4)),
       bits=st.integers(2, 31), rounding=st.sampled_from(["double", "single"]),
       tie=st.one_of(st.none(), st.sampled_from(TIES)), requant_input=st.sampled_from(["int32", "accumulator"]),
       acc=st.lists(edge_ints(-(1 << 36), 1 << 36), min_size=1, max_size=4))
def test_from_rule_of_a_device_fixed_point_rule_matches_oracle(s_in, s_out, s_w, bits, rounding, tie,
                                                               requant_input, acc):
    from dspsim.engines import RequantInput, RequantKind, RequantRule

    rule = RequantRule(RequantKind.FIXED_POINT, rounding=rounding, multiplier_bits=bits,
                       shift_rounding=None if tie is None else Rounding[tie.upper()],
                       requant_input=RequantInput(requant_input))
    rq = Requant.from_rule(rule, s_in, s_w, s_out)
    want = ref.requant_from_rule(ref.rule_dict(rule), s_in, s_w, s_out)
    assert list(rq.multiplier) == want["multiplier"] and list(rq.shift) == want["shift"]
    assert all(m % (1 << (31 - bits)) == 0 for m in rq.multiplier)  # the low bits of a narrow multiplier are 0
    c = len(rq.multiplier)
    got = requantize(np.array(acc).reshape(-1, 1).repeat(c, 1), rq, 0, out_dtype="int16")
    exp = [[ref.clamp(ref.requantize_value(a, want, j, 0), -32768, 32767) for j in range(c)] for a in acc]
    assert got.tolist() == exp


@SETTINGS
@given(acc=st.lists(edge_ints(INT32_MIN, INT32_MAX), min_size=1, max_size=6), scale=st.floats(1e-9, 4.0),
       tie=st.sampled_from(TIES), zp=st.integers(-128, 127))
def test_float32_requantization_with_any_tie_rule_matches_oracle(acc, scale, tie, zp):
    rq = Requant.float_scale(scale, "float32", tie=tie)
    got = requantize(np.array(acc), rq, zp)
    want = [ref.clamp(ref.requantize_value(a, oracle_requant(rq), 0, zp), -128, 127) for a in acc]
    assert got.tolist() == want


def test_float32_tie_rules_differ_on_exact_halves():
    acc = np.array([-3, -1, 1, 3])
    got = {t: requantize(acc, Requant.float_scale(0.5, "float32", tie=t), 0).tolist() for t in TIES}
    assert got["half_to_even"] == [-2, 0, 0, 2] and got["half_up"] == [-1, 0, 1, 2]
    assert got["half_away_from_zero"] == [-2, -1, 1, 2]
