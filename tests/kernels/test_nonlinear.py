"""int8 nonlinear operators (LOGISTIC, TANH, SOFTMAX, LOG_SOFTMAX, HARD_SWISH, ELU, PRELU, EXP, RSQRT,
L2_NORMALIZATION): kernels against the oracle on every int8 code, gemmlowp primitives against their Python
twins, and .tflite golden models (tests/golden/ops/nonlinear.npz from make_golden_ops.py, nonlinear_ties.npz
from make_golden_nonlinear.py, both made by the real engines) through dspsim.tflite.load_model for engines
"tflm", "litert" and "xnnpack", refusals included."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.tflite as dt
from dspsim import fixedpoint as fp
from dspsim import oracle as ref
from dspsim.kernels.nonlinear import pointwise as nl
from dspsim.kernels.nonlinear.normalization import l2_normalization
from dspsim.kernels.nonlinear.softmax import (
    log_softmax, optimized_softmax, optimized_softmax_table, softmax, tflite_log_softmax_params,
    tflite_softmax_params,
)

GOLDEN = Path(__file__).parents[1] / "golden" / "ops"
sys.path.insert(0, str(Path(__file__).parents[1] / "golden"))
EVERY_CODE = np.arange(-128, 128, dtype=np.int8)
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)


# ------------------------------------------------------------------ gemmlowp primitives
@settings(max_examples=300, deadline=None)
@given(a=st.integers(-(1 << 31), 0), bits=st.integers(0, 12))
def test_exp_on_negative_values_matches_python_twin(a, bits):
    assert fp.exp_on_negative_values(a, bits) == ref.gemmlowp_exp_on_negative_values(a, bits)


@settings(max_examples=300, deadline=None)
@given(a=INT32, bits=st.integers(0, 8))
def test_logistic_and_tanh_q_match_python_twins(a, bits):
    if a == -(1 << 31):  # -INT32_MIN wraps in gemmlowp; the callers never pass it
        a += 1
    assert fp.logistic_q(a, bits) == ref.gemmlowp_logistic(a, bits)
    assert fp.tanh_q(a, bits) == ref.gemmlowp_tanh(a, bits)


@pytest.mark.parametrize("a", [0, 1, 2, 1 << 30, (1 << 31) - 1, (1 << 31) - 2, 12345678])
def test_one_over_one_plus_x_edges(a):
    assert fp.one_over_one_plus_x_for_x_in_0_1(a) == ref.gemmlowp_one_over_one_plus_x(a)


def test_exp_on_negative_values_real_meaning():
    for v in (-0.001, -0.25, -1.0, -3.3, -10.0):
        got = fp.exp_on_negative_values(int(round(v * 2**26)), 5) / 2**31
        assert abs(got - np.exp(v)) < 2e-6
    assert fp.exp_on_negative_values(0, 5) == fp.INT32_MAX
    assert fp.exp_on_negative_values(-(33 << 22), 9) == 0  # a < -32 with more than 5 integer bits


@pytest.mark.parametrize("e", list(range(-31, 31)))
def test_saturating_rounding_multiply_by_pot_every_exponent(e):
    for x in (0, 1, -1, 3, -3, (1 << 31) - 1, -(1 << 31), 1 << 20, -(1 << 20) - 1):
        got = fp.saturating_rounding_multiply_by_pot(x, e)
        want = ref.saturate(x * 2**e, 32) if e >= 0 else ref.rounding_divide_by_pot(x, -e)
        assert got == want


def test_rounding_half_sum_ties_away_from_zero():
    assert [fp.rounding_half_sum(a, b) for a, b in ((1, 2), (-1, -2), (0, 0), (-1, 0), (2**31 - 1, 2**31 - 1))] \
        == [2, -2, 0, -1, 2**31 - 1]


# ------------------------------------------------------------------ kernels vs oracle, every code
SCALES = [0.0161093808710575, 0.0625, 0.125, 0.17076663672924042, 0.5, 0.003]
ZPS = [-128, -5, 0, 17, 127]


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("zi", ZPS)
def test_tflm_logistic_and_tanh_every_code_match_oracle(scale, zi):
    p = nl.tflm_gemmlowp_input_params(scale).__dict__
    for kernel, oracle in ((nl.tflm_logistic, ref.tflm_logistic_oracle), (nl.tflm_tanh, ref.tflm_tanh_oracle)):
        np.testing.assert_array_equal(kernel(EVERY_CODE, input_zero_point=zi, **p),
                                      oracle(EVERY_CODE, input_zero_point=zi, **p))


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("out_scale", [0.003, 0.026607850566506386, 0.03125, 0.1])
def test_hard_swish_every_code_matches_oracle(scale, out_scale):
    for zi, zo in ((0, -114), (13, 5), (-128, -128)):
        if scale / out_scale >= 128:
            with pytest.raises(ValueError, match="exponent"):
                nl.tflite_hard_swish_params(input_scale=scale, input_zero_point=zi, output_scale=out_scale,
                                            output_zero_point=zo)
            continue
        p = nl.tflite_hard_swish_params(input_scale=scale, input_zero_point=zi, output_scale=out_scale,
                                        output_zero_point=zo)
        np.testing.assert_array_equal(nl.hard_swish(EVERY_CODE, params=p), ref.hard_swish_oracle(EVERY_CODE, params=p))


@pytest.mark.parametrize("alpha_scale", [0.0074, 0.0078125, 0.3])
def test_prelu_every_code_and_alpha_broadcast_match_oracle(alpha_scale):
    x = np.tile(EVERY_CODE, 16).reshape(16, 16, 16)
    alpha = np.arange(-128, 128, 16, dtype=np.int8)  # one alpha per channel (last axis)
    p = nl.tflite_prelu_params(input_scale=0.028, input_zero_point=-4, alpha_scale=alpha_scale, alpha_zero_point=60,
                               output_scale=0.03, output_zero_point=5)
    np.testing.assert_array_equal(nl.prelu(x, alpha, params=p), ref.prelu_oracle(x, alpha, params=p))


@pytest.mark.parametrize("beta", [0.1, 0.5, 1.0, 2.0, 3.7])
@pytest.mark.parametrize("scale", [0.030747152864933014, 0.125, 0.5])
def test_softmax_matches_oracle_any_rank(beta, scale):
    rng = np.random.default_rng(7)
    p = tflite_softmax_params(input_scale=scale, beta=beta)
    for shape in ((1, 256), (4, 64), (2, 2, 4, 16), (3,)):
        x = rng.integers(-128, 128, size=shape).astype(np.int8)
        if x.size >= 256:
            x.reshape(-1)[:256] = EVERY_CODE
        np.testing.assert_array_equal(softmax(x, params=p), ref.softmax_oracle(x, params=p))


@pytest.mark.parametrize("scale", [0.030747152864933014, 0.125, 0.5])
def test_log_softmax_matches_oracle(scale):
    rng = np.random.default_rng(11)
    p = tflite_log_softmax_params(input_scale=scale)
    for shape in ((1, 256), (4, 64), (3, 1, 7)):
        x = rng.integers(-128, 128, size=shape).astype(np.int8)
        if x.size >= 256:
            x.reshape(-1)[:256] = EVERY_CODE
        np.testing.assert_array_equal(log_softmax(x, params=p), ref.log_softmax_oracle(x, params=p))


@pytest.mark.parametrize("out_dtype,zo", [("int8", -128), ("int16", -32768), ("int16", 0)])
def test_optimized_softmax_matches_float32_oracle(out_dtype, zo):
    rng = np.random.default_rng(5)
    table = optimized_softmax_table(input_scale=0.05, beta=0.7)
    s_out = 1.0 / 256 if out_dtype == "int8" else 1.0 / 65536
    for shape in ((1, 256), (16, 16), (2, 3, 5)):
        x = rng.integers(-128, 128, size=shape).astype(np.int8)
        if x.size >= 256:
            x.reshape(-1)[:256] = EVERY_CODE
        kw = dict(table=table, output_scale=s_out, output_zero_point=zo, out_dtype=out_dtype)
        np.testing.assert_array_equal(optimized_softmax(x, **kw), ref.optimized_softmax_oracle(x, **kw))


@pytest.mark.parametrize("zi", ZPS)
def test_l2_normalization_and_rsqrt_every_code_match_oracle(zi):
    x = np.tile(EVERY_CODE, 4).reshape(16, 64)
    np.testing.assert_array_equal(l2_normalization(x, input_zero_point=zi),
                                  ref.l2_normalization_oracle(x, input_zero_point=zi))
    np.testing.assert_array_equal(l2_normalization(np.full((2, 8), zi, np.int8), input_zero_point=zi),
                                  np.zeros((2, 8), np.int8))  # an all-zero row: multiplier INT32_MAX, 0 out
    m, s = nl.tflite_rsqrt_multiplier(input_scale=0.0285, output_scale=0.31)
    codes = EVERY_CODE[EVERY_CODE >= zi]
    kw = dict(input_zero_point=zi, output_zero_point=-128, multiplier=m, shift=s)
    np.testing.assert_array_equal(nl.rsqrt(codes, **kw), ref.rsqrt_oracle(codes, **kw))


@settings(max_examples=200, deadline=None)
@given(x=st.integers(0, (1 << 31) - 1))
def test_inv_sqrt_quantized_multiplier_matches_python_twin(x):
    assert tuple(fp.inv_sqrt_quantized_multiplier_exp(x, -1)) == ref.inv_sqrt_quantized_multiplier_exp(x, -1)


@settings(max_examples=200, deadline=None)
@given(x=st.integers(1 << 19, (1 << 31) - 1))
def test_log_x_matches_python_twin_and_real_log(x):
    got = fp.log_x_for_x_greater_than_or_equal_to_1(x, 12, 5)
    assert got == ref.gemmlowp_log_x_for_x_greater_than_or_equal_to_1(x, 12, 5)
    assert abs(got / 2**26 - np.log(x / 2**19)) < 1e-5


def test_lut_tables_round_ties_as_their_engine():
    # output scale 1/128 and tanh(0)=0: exact; a tie: y * (1/s_out) = k + 1/2 goes away from zero (LiteRT)
    # and to even (XNNPACK). EXP with input 0 and output scale 2/3: 1 * 1.5 = 1.5 -> 2 (LiteRT), 2 (XNNPACK),
    # and 2.5 (scale 0.4) -> 3 (LiteRT) vs 2 (XNNPACK).
    t = nl.tflite_lut_table("exp", input_scale=0.1, input_zero_point=0, output_scale=0.4, output_zero_point=0)
    assert t[128] == 3
    assert nl.xnnpack_lut_table("tanh", input_scale=0.1, input_zero_point=0, output_scale=0.4,
                                output_zero_point=0)[128] == 0
    x = nl.xnnpack_lut_table("xnnpack_sigmoid", input_scale=0.1, input_zero_point=0, output_scale=0.2,
                             output_zero_point=0)
    assert x[128] == 2  # sigmoid(0) / 0.2 = 2.5 -> 2 (ties to even)
    assert nl.tflite_lut_table("logistic", input_scale=0.1, input_zero_point=0, output_scale=0.2,
                               output_zero_point=0)[128] == 3


def test_lut_beyond_int32_saturates():
    # exp(12.7) / 1e-5 = 3.3e10 is beyond int32: LiteRT's x86 build saturates to 127 (golden nlties_exp_overflow)
    t = nl.tflite_lut_table("exp", input_scale=0.1, input_zero_point=0, output_scale=1e-5, output_zero_point=0)
    assert t[255] == 127 and t[128] == 127 and t[0] == 0


# ------------------------------------------------------------------ lookup in byte vectors
@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 200), uint8=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_lookup_table_equals_indexing_on_every_code(n, uint8, seed):
    """The 32-code vector blocks (dspsim.simd.lut_lanes: a nibble per row, 16 rows) and the scalar tail against
    numpy indexing: every code once in a random order, then ``n`` random ones (lengths on both sides of 32)."""
    dtype = np.uint8 if uint8 else np.int8
    lo = int(np.iinfo(dtype).min)
    rng = np.random.default_rng(seed)
    table = rng.integers(lo, lo + 256, 256).astype(dtype)
    x = np.concatenate([rng.permutation(256), rng.integers(0, 256, n)]).astype(np.int64) + lo
    x = x.astype(dtype)
    assert np.array_equal(nl.lookup_table(x, table), table[x.astype(np.int64) - lo])


# ------------------------------------------------------------------ bad input
def test_bad_input_names_function_and_rule():
    with pytest.raises(TypeError, match="lookup_table: x must have dtype int8"):
        nl.lookup_table(EVERY_CODE.astype(np.int16), np.zeros(256, np.int8))
    with pytest.raises(ValueError, match="lookup_table: table must be an int8 array of 256"):
        nl.lookup_table(EVERY_CODE, np.zeros(255, np.int8))
    with pytest.raises(ValueError, match="tflite_lut_table: function must be one of"):
        nl.tflite_lut_table("gelu", input_scale=0.1, input_zero_point=0, output_scale=0.1, output_zero_point=0)
    with pytest.raises(ValueError, match="output_scale must be finite and positive"):
        nl.tflite_lut_table("tanh", input_scale=0.1, input_zero_point=0, output_scale=0.0, output_zero_point=0)
    with pytest.raises(ValueError, match="tflm_tanh: input_left_shift must be an int in"):
        nl.tflm_tanh(EVERY_CODE, input_zero_point=0, input_multiplier=1 << 30, input_left_shift=40,
                     input_range_radius=10)
    with pytest.raises(ValueError, match="tflm_gemmlowp_input_params: input_scale"):
        nl.tflm_gemmlowp_input_params(1e-12)
    with pytest.raises(TypeError, match="hard_swish: params must be a HardSwishParams"):
        nl.hard_swish(EVERY_CODE, params={})
    p = nl.tflite_prelu_params(input_scale=0.1, input_zero_point=0, alpha_scale=0.1, alpha_zero_point=0,
                               output_scale=0.1, output_zero_point=0)
    with pytest.raises(ValueError, match="prelu: alpha of shape"):
        nl.prelu(EVERY_CODE, np.zeros(3, np.int8), params=p)
    with pytest.raises(ValueError, match="QuantizeMultiplierGreaterThanOne"):
        tflite_softmax_params(input_scale=1e-9, beta=1.0)
    with pytest.raises(ValueError, match="rsqrt: Rsqrt is only defined for positive values"):
        nl.rsqrt(EVERY_CODE, input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
    with pytest.raises(ValueError, match="optimized_softmax: table must be a float32 array of 256"):
        optimized_softmax(EVERY_CODE, table=np.zeros(256), output_scale=1 / 256, output_zero_point=-128)
    with pytest.raises(ValueError, match="softmax: out_dtype must be"):
        softmax(EVERY_CODE, params=tflite_softmax_params(input_scale=0.1), out_dtype="uint8")
    with pytest.raises(ValueError, match="softmax: x must not be empty"):
        softmax(np.zeros((2, 0), np.int8), params=tflite_softmax_params(input_scale=0.1))


# ------------------------------------------------------------------ golden models, every engine
ENGINES = {"tflm": "tflm", "litert": "litert_ref", "xnnpack": "litert_default"}
OPS = {"LOGISTIC", "TANH", "ELU", "EXP", "HARD_SWISH", "PRELU", "SOFTMAX", "LOG_SOFTMAX", "RSQRT", "L2_NORMALIZATION"}


def _golden_cases():
    """nonlinear.npz (make_golden_ops.py) and nonlinear_ties.npz (make_golden_nonlinear.py: ties, overflow)."""
    from golden_io import load_packed

    out = []
    for name in ("nonlinear.npz", "nonlinear_ties.npz"):
        if (GOLDEN / name).exists():
            _, cases = load_packed(GOLDEN / name)
            out += [(c, a, eng) for c, a in cases if set(c["ops"]) & OPS for eng in ENGINES]
    return out


GOLDEN_CASES = _golden_cases()


def _load_or_skip(data, engine, case):
    """The model, or a skip when it holds an operator of another family that dspsim lacks."""
    try:
        return dt.load_model(data, engine=engine)
    except ValueError as e:
        foreign = [op for op in case["ops"] if op not in OPS and f" is {op} (" in str(e)]
        if foreign and "does not support" in str(e):
            pytest.skip(f"{case['name']}: dspsim lacks {foreign[0]} (another family)")
        raise


@pytest.mark.skipif(not GOLDEN_CASES, reason="tests/golden/ops/nonlinear.npz not generated")
@pytest.mark.parametrize("case,arrays,engine", GOLDEN_CASES,
                         ids=[f"{c['name']}-{e}" for c, _, e in GOLDEN_CASES])
def test_golden_model_bit_exact_or_refused_like_the_engine(case, arrays, engine):
    run = case["engines"][ENGINES[engine]]
    data = (GOLDEN / case["model"]).read_bytes()
    x = arrays["in0"]
    if run["status"] != "ok":
        if run.get("stage") == "invoke":  # the engine loads the model and fails the invocation
            model = _load_or_skip(data, engine, case)
            with pytest.raises(ValueError, match="Model.run: operator"):
                model.run(x[0])
        else:
            with pytest.raises(ValueError, match="load_model: operator"):
                _load_or_skip(data, engine, case)
        return
    key = f"{ENGINES[engine]}/out0"
    while key not in arrays:
        key = case["aliases"][key]
    model = _load_or_skip(data, engine, case)
    want = arrays[key]
    got = np.stack([np.asarray(model.run(x[f])[0]) for f in range(x.shape[0])])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


RSQRT_CHAINS = [(c, a) for c, a, e in GOLDEN_CASES if e == "tflm" and c["name"] in ("rsqrt_s1", "rsqrt_s4")]


@pytest.mark.skipif(not RSQRT_CHAINS, reason="rsqrt_s1/rsqrt_s4 goldens not generated")
@pytest.mark.parametrize("case,arrays", RSQRT_CHAINS, ids=[c["name"] for c, _ in RSQRT_CHAINS])
def test_golden_rsqrt_inside_abs_add_chain_from_recorded_inputs(case, arrays):
    """The converter wraps RSQRT in ABS and ADD; its own input is recorded by TFLM and LiteRT: feed it."""
    from dspsim.tflite.flatbuffer import read_model

    mdef = read_model((GOLDEN / case["model"]).read_bytes())
    op = next(o for o in mdef.operators if o.name == "RSQRT")
    t_in, t_out = mdef.tensors[op.inputs[0]], mdef.tensors[op.outputs[0]]
    m, s = nl.tflite_rsqrt_multiplier(input_scale=float(t_in.scale[0]), output_scale=float(t_out.scale[0]))
    for engine in ("tflm", "litert_ref"):
        key = f"{engine}/t{op.inputs[0]}"
        while key not in arrays:
            key = case["aliases"][key]
        out_key = f"{engine}/out0"
        while out_key not in arrays:
            out_key = case["aliases"][out_key]
        got = nl.rsqrt(arrays[key], input_zero_point=int(t_in.zero_point[0]),
                       output_zero_point=int(t_out.zero_point[0]), multiplier=m, shift=s)
        np.testing.assert_array_equal(got, arrays[out_key])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), s_in=st.floats(1e-5, 1e-2), s_a=st.floats(1e-3, 0.5), s_out=st.floats(1e-5, 1e-2),
       za=st.integers(-128, 127), edge=st.booleans())
def test_int16_prelu_matches_oracle_with_an_int8_alpha(seed, s_in, s_a, s_out, za, edge):
    """TFLM / LiteRT PRELU on int16 activations (zero points 0 in practice, any allowed): the product of an int16
    input and an int8 alpha fits int32, the clamp is to int16."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-32768, 32768, (3, 5, 8)).astype(np.int16)
    if edge:
        x.reshape(-1)[::2] = np.where(np.arange(x.size)[::2] % 4 == 0, -32768, 32767)
    alpha = rng.integers(-128, 128, (8,)).astype(np.int8)
    try:
        p = nl.tflite_prelu_params(input_scale=s_in, input_zero_point=0, alpha_scale=s_a, alpha_zero_point=za,
                                   output_scale=s_out, output_zero_point=0, dtype="int16")
    except ValueError:  # a multiplier beyond a left shift of 30
        return
    got = nl.prelu(x, alpha, params=p)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, ref.prelu_oracle(x, alpha, params=p))


def test_prelu_refuses_an_int16_alpha_and_an_int32_input():
    p = nl.tflite_prelu_params(input_scale=0.001, input_zero_point=0, alpha_scale=0.01, alpha_zero_point=0,
                               output_scale=0.001, output_zero_point=0, dtype="int16")
    with pytest.raises(TypeError, match="prelu: alpha"):
        nl.prelu(np.zeros(4, np.int16), np.zeros(4, np.int16), params=p)
    with pytest.raises(ValueError, match="tflite_prelu_params: dtype must be int8 or int16"):
        nl.tflite_prelu_params(input_scale=0.001, input_zero_point=0, alpha_scale=0.01, alpha_zero_point=0,
                               output_scale=0.001, output_zero_point=0, dtype="int32")
