"""uint8 (legacy asymmetric, per-tensor) operators on the LiteRT engines, against LiteRT itself.

The goldens (tests/golden/uint8.npz, made by make_golden_uint8.py with ai-edge-litert 2.3.0) hold one-operator uint8
models with their inputs and what LiteRT's reference kernels (``litert``), its optimized kernels
(``litert-optimized``) and its default interpreter (``xnnpack``) computed: every value must match, and a model
an engine refuses must be refused by dspsim (a ValueError naming ``load_model``). TFLite Micro (its Python
interpreter, the ``tflm`` record) takes no uint8 in these operators but RESHAPE and DEQUANTIZE: the ``tflm`` engine
refuses the others as it does. The new kernel parameters are checked against the
plain-Python oracle with hypothesis.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dspsim.kernels.activation import xnnpack_leaky_relu
from dspsim.kernels.data_movement import concatenation
from dspsim.kernels.quantize.xnnpack import xnnpack_convert, xnnpack_quantize
from dspsim.kernels.nonlinear.pointwise import (
    LutFunction, hard_swish, lookup_table, tflite_hard_swish_params, tflite_lut_table, xnnpack_lut_table,
)
from dspsim.kernels.nonlinear.normalization import l2_normalization
from dspsim.kernels.nonlinear.softmax import (
    optimized_softmax, optimized_softmax_table, softmax, tflite_softmax_params,
)
from dspsim.kernels.reduce.mean import litert_optimized_mean_plan, xnnpack_mean_plan
from dspsim.kernels.resize import float_resize_bilinear
from dspsim.oracle.activation import xnnpack_leaky_relu_oracle
from dspsim.oracle.data_movement import concatenation_oracle
from dspsim.oracle.nonlinear import (
    hard_swish_oracle, l2_normalization_oracle, lookup_table_oracle, optimized_softmax_oracle, softmax_oracle,
)
from dspsim.oracle.quantize import (
    litert_optimized_dequantize_oracle, litert_optimized_quantize_oracle, xnnpack_convert_oracle,
    xnnpack_quantize_oracle,
)
from dspsim.oracle.reduce import litert_optimized_mean_oracle, xnnpack_mean_oracle
from dspsim.oracle.resize import float_resize_bilinear_oracle
from dspsim.quantize import litert_optimized_dequantize_plan, litert_optimized_quantize
from dspsim.tflite import load_model

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "uint8.npz")
ENGINES = {"litert_ref": "litert", "litert_optimized": "litert-optimized", "litert_default": "xnnpack", "tflm": "tflm"}


def _golden():
    with np.load(GOLDEN) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(str(arrays.pop("meta"))), arrays


META, ARRAYS = _golden()


def _case_ids():
    for name in META["cases"]:
        for record, engine in ENGINES.items():
            yield pytest.param(name, record, id=f"{name}-{engine}")


@pytest.mark.parametrize("name,record", list(_case_ids()))
def test_uint8_operator_matches_litert(name, record):
    status = META["cases"][name]["engines"][record]
    model = ARRAYS[f"{name}/model"].tobytes()
    if status["status"] == "refused":
        with pytest.raises(ValueError, match="load_model"):
            load_model(model, engine=ENGINES[record])
        return
    assert status["status"] == "ok", status
    m = load_model(model, engine=ENGINES[record])
    inputs = [ARRAYS[f"{name}/in{j}"] for j in range(len([k for k in ARRAYS if k.startswith(f"{name}/in")]))]
    bad = []
    for r in range(inputs[0].shape[0]):
        got = m.run([x[r] for x in inputs])
        got = got if isinstance(got, (list, tuple)) else [got]
        for k, g in enumerate(got):
            want = ARRAYS[f"{name}/{record}/out{k}"][r]
            if g.dtype != want.dtype or g.shape != want.shape:
                bad.append(f"run {r} output {k}: {g.dtype}{g.shape} vs {want.dtype}{want.shape}")
            elif not np.array_equal(g.view(np.uint8), want.view(np.uint8)):
                bad.append(f"run {r} output {k}: {np.count_nonzero(g != want)} of {g.size} differ")
    assert not bad, bad


def test_tflm_refuses_the_uint8_operators():
    """TFLite Micro ran the uint8 RESHAPE and DEQUANTIZE only (and the int8 twin): every other case it refused."""
    ran = {n for n, c in META["cases"].items() if c["engines"]["tflm"]["status"] == "ok"}
    assert ran == {"reshape", "dequantize_u8", "conv_grouped_int8_ties"}


def test_the_goldens_exercise_the_differences():
    """The cases separate the engines where they differ: the optimized conv's half-up ties and the reference's,
    XNNPACK's float requantization, the optimized softmax and resize, and the refusals."""
    def differ(name, a, b):
        return not np.array_equal(ARRAYS[f"{name}/{a}/out0"], ARRAYS[f"{name}/{b}/out0"])

    assert differ("conv_ties", "litert_ref", "litert_optimized")
    assert differ("fc_ties", "litert_ref", "litert_optimized")
    assert not differ("dw_ties", "litert_ref", "litert_optimized")  # uint8 depthwise: gemmlowp's ties away
    assert differ("dw_ties", "litert_ref", "litert_default")
    assert differ("resize_align_corners", "litert_ref", "litert_optimized")
    assert differ("softmax_kernels_apart", "litert_ref", "litert_optimized")
    assert not differ("conv_grouped_ties", "litert_ref", "litert_optimized")  # grouped: the reference kernel
    assert not differ("conv_grouped_int8_ties", "litert_ref", "litert_optimized")
    refused = {n for n, c in META["cases"].items() if c["engines"]["litert_ref"]["status"] == "refused"}
    assert refused == {"conv_per_channel_refused", "conv_bias_scale_refused"}


# ----------------------------------------------------------------------------------------------
# the kernels' uint8 parameters against the oracle
# ----------------------------------------------------------------------------------------------
_codes = st.integers(0, 255)


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 3), depth=st.integers(1, 40), scale=st.floats(1e-3, 0.5), beta=st.floats(0.1, 2.0),
       seed=st.integers(0, 2**32 - 1))
def test_uint8_softmax_matches_the_oracle(rows, depth, scale, beta, seed):
    x = np.random.default_rng(seed).integers(0, 256, (rows, depth)).astype(np.uint8)
    params = tflite_softmax_params(input_scale=scale, beta=beta)
    assert np.array_equal(softmax(x, params=params), softmax_oracle(x, params=params))
    table = optimized_softmax_table(input_scale=scale, beta=beta)
    for s_out, zo in ((1 / 256, 0), (1 / 200, 7)):
        kw = dict(table=table, output_scale=s_out, output_zero_point=zo)
        got, want = optimized_softmax(x, **kw), optimized_softmax_oracle(x, **kw)
        assert got.dtype == np.uint8 and np.array_equal(got, want)
    assert np.array_equal(softmax(x, params=params, out_dtype="int16"),
                          softmax_oracle(x, params=params, out_dtype="int16"))
    kw = dict(table=table, output_scale=1 / 65536, output_zero_point=-32768, out_dtype="int16")
    got = optimized_softmax(x, **kw)
    assert got.dtype == np.int16 and np.array_equal(got, optimized_softmax_oracle(x, **kw))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 3), s=st.lists(st.floats(1e-3, 1.0), min_size=3, max_size=3),
       z=st.lists(_codes, min_size=3, max_size=3), seed=st.integers(0, 2**32 - 1))
def test_uint8_concatenation_with_scaling_matches_the_oracle(n, s, z, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.integers(0, 256, (2, k + 1)).astype(np.uint8) for k in range(n)]
    kw = dict(input_scales=s[:n], input_zero_points=z[:n], output_scale=s[2], output_zero_point=z[2])
    assert np.array_equal(concatenation(xs, 1, **kw), concatenation_oracle(xs, 1, **kw))


def test_concatenation_scaling_ties_round_away_from_zero():
    """Scale ratio 1/2: ``q * 0.5`` is a tie for every odd code, rounded up (away from zero)."""
    x = np.arange(256, dtype=np.uint8).reshape(1, 256)
    y = concatenation([x], 0, input_scales=[0.25], input_zero_points=[0], output_scale=0.5, output_zero_point=0)
    assert np.array_equal(y[0], (np.arange(256) + 1) // 2)


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 5), w=st.integers(1, 5), oh=st.integers(1, 9), ow=st.integers(1, 9),
       mode=st.sampled_from(["legacy", "align_corners", "half_pixel_centers"]), premultiplied=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_uint8_float_resize_bilinear_matches_the_oracle(h, w, oh, ow, mode, premultiplied, seed):
    x = np.random.default_rng(seed).integers(0, 256, (1, h, w, 2)).astype(np.uint8)
    kw = dict(align_corners=mode == "align_corners", half_pixel_centers=mode == "half_pixel_centers",
              premultiplied=premultiplied)
    assert np.array_equal(float_resize_bilinear(x, (oh, ow), **kw), float_resize_bilinear_oracle(x, (oh, ow), **kw))


def test_refusals_name_the_function_and_the_rule():
    with pytest.raises(ValueError, match=r"softmax: out_dtype must be one of \('uint8', 'int16'\)"):
        softmax(np.zeros((1, 4), np.uint8), params=tflite_softmax_params(input_scale=0.1), out_dtype="int8")
    with pytest.raises(ValueError, match="concatenation: rescaling takes uint8 inputs"):
        concatenation([np.zeros((1, 2), np.int8)], 0, input_scales=[0.1], input_zero_points=[0], output_scale=0.2,
                      output_zero_point=0)
    with pytest.raises(TypeError, match="float_resize_bilinear: x must have dtype uint8"):
        float_resize_bilinear(np.zeros((1, 2, 2, 8), np.int8), (16, 16))


@settings(max_examples=20, deadline=None)
@given(h=st.integers(1, 4), w=st.integers(1, 4), blocks=st.integers(1, 2), seed=st.integers(0, 2**32 - 1))
def test_uint8_resize_888_matches_the_oracle(h, w, blocks, seed):
    """The optimized kernel's exact 8x half-pixel upsampling (ResizeBilinear888Uint8): 8.8 fixed point, half up."""
    x = np.random.default_rng(seed).integers(0, 256, (1, h, w, 8 * blocks)).astype(np.uint8)
    kw = dict(half_pixel_centers=True, premultiplied=True)
    size = (8 * h, 8 * w)
    if min(size) < 8:
        return
    assert np.array_equal(float_resize_bilinear(x, size, **kw), float_resize_bilinear_oracle(x, size, **kw))


@settings(max_examples=40, deadline=None)
@given(s_in=st.floats(0.01, 1.0), s_out=st.floats(0.01, 1.0), zi=_codes, zo=_codes, seed=st.integers(0, 2**32 - 1))
def test_uint8_xnnpack_converts_match_the_oracle(s_in, s_out, zi, zo, seed):
    """qu8-vcvt and f32-qu8-vcvt: the int8 converts' steps, clamped to [0, 255]."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, 64).astype(np.uint8)
    ratio = np.float32(np.float32(s_in) / np.float32(s_out))
    if 2.0**-8 <= ratio <= 2.0**7:
        kw = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
        got = xnnpack_convert(x, **kw)
        assert got.dtype == np.uint8 and np.array_equal(got, xnnpack_convert_oracle(x, **kw))
    f = rng.uniform(-300 * s_out, 300 * s_out, 64).astype(np.float32)
    got = xnnpack_quantize(f, scale=s_out, zero_point=zo, dtype="uint8")
    assert got.dtype == np.uint8
    assert np.array_equal(got, xnnpack_quantize_oracle(f, scale=s_out, zero_point=zo, dtype="uint8"))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), scale=st.floats(0.001, 1.0), zp=_codes, seed=st.integers(0, 2**32 - 1))
def test_uint8_litert_optimized_quantize_and_dequantize_match_the_oracle(n, scale, zp, seed):
    """LiteRT's optimized uint8 AffineQuantize and Dequantize: blocks of 8 and the scalar tail."""
    rng = np.random.default_rng(seed)
    f = (rng.integers(-300, 300, n) * np.float32(scale) / 2).astype(np.float32)  # many exact half steps: ties
    got = litert_optimized_quantize(f, scale, zp, "uint8")
    assert got.dtype == np.uint8 and np.array_equal(got, litert_optimized_quantize_oracle(f, scale, zp, "uint8"))
    q = rng.integers(0, 256, n).astype(np.uint8)
    got = litert_optimized_dequantize_plan(q.shape, scale, zp, "uint8")(q)
    assert np.array_equal(got.view(np.uint32), litert_optimized_dequantize_oracle(q, scale, zp).view(np.uint32))


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 5), w=st.integers(1, 5), c=st.integers(1, 20), s_in=st.floats(0.01, 1.0),
       s_out=st.floats(0.01, 1.0), zi=_codes, zo=_codes, seed=st.integers(0, 2**32 - 1))
def test_uint8_means_match_the_oracle(h, w, c, s_in, s_out, zi, zo, seed):
    """XNNPACK's qu8 mean_nd and LiteRT's optimized uint8 spatial Mean: the int8 kernels' steps, clamped to [0, 255]."""
    x = np.random.default_rng(seed).integers(0, 256, (1, h, w, c)).astype(np.uint8)
    kw = dict(input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
    got = xnnpack_mean_plan(x.shape, x.dtype, (1, 2), **kw)(x)
    assert got.dtype == np.uint8 and np.array_equal(got, xnnpack_mean_oracle(x, (1, 2), **kw))
    try:
        run = litert_optimized_mean_plan(x.shape, x.dtype, **kw)
    except ValueError:  # a multiplier QuantizeMultiplier cannot hold
        return
    got = run(x)
    assert got.dtype == np.uint8 and np.array_equal(got, litert_optimized_mean_oracle(x, **kw))


def test_uint8_lookup_tables_match_the_oracle():
    """LiteRT's LUTPopulate<uint8_t> and XNNPACK's qu8 tables, indexed by the code itself."""
    x = np.arange(256, dtype=np.uint8).reshape(4, 64)
    for build in (tflite_lut_table, xnnpack_lut_table):
        for fn, q_out in ((LutFunction.LOGISTIC, (1 / 256, 0)), (LutFunction.TANH, (1 / 128, 128))):
            table = build(fn, input_scale=0.05, input_zero_point=128, output_scale=q_out[0],
                          output_zero_point=q_out[1], dtype="uint8")
            assert table.dtype == np.uint8
            assert np.array_equal(lookup_table(x, table), lookup_table_oracle(x, table))
            assert np.array_equal(lookup_table(x, table).reshape(-1), table)


@settings(max_examples=30, deadline=None)
@given(s_in=st.floats(0.005, 0.5), s_out=st.floats(0.005, 0.5), zi=_codes, zo=_codes)
def test_uint8_hard_swish_matches_the_oracle(s_in, s_out, zi, zo):
    """LiteRT's HardSwish<uint8_t>: the int8 steps, clamped to [0, 255]."""
    try:
        params = tflite_hard_swish_params(input_scale=s_in, input_zero_point=zi, output_scale=s_out,
                                          output_zero_point=zo, dtype="uint8")
    except ValueError:  # s_in / s_out >= 128: refused, as LiteRT does
        return
    x = np.arange(256, dtype=np.uint8)
    got = hard_swish(x, params=params)
    assert got.dtype == np.uint8 and np.array_equal(got, hard_swish_oracle(x, params=params))


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 3), depth=st.integers(1, 40), zi=_codes, seed=st.integers(0, 2**32 - 1))
def test_uint8_l2_normalization_matches_the_oracle(rows, depth, zi, seed):
    """LiteRT's legacy uint8 L2Normalization: 128 + MBQM(128 * d, m, s), clamped to [0, 255]."""
    x = np.random.default_rng(seed).integers(0, 256, (rows, depth)).astype(np.uint8)
    x[0, :] = zi  # an all-zero row
    got = l2_normalization(x, input_zero_point=zi)
    assert got.dtype == np.uint8 and np.array_equal(got, l2_normalization_oracle(x, input_zero_point=zi))


@settings(max_examples=30, deadline=None)
@given(alpha=st.floats(-2.0, 2.0), s_in=st.floats(0.01, 0.5), s_out=st.floats(0.01, 0.5), zi=_codes, zo=_codes)
def test_uint8_xnnpack_leaky_relu_matches_the_oracle(alpha, s_in, s_out, zi, zo):
    """XNNPACK's qu8-vlrelu: the qs8 steps, clamped to [0, 255]."""
    kw = dict(alpha=alpha, input_scale=s_in, input_zero_point=zi, output_scale=s_out, output_zero_point=zo)
    x = np.arange(256, dtype=np.uint8)
    try:
        got = xnnpack_leaky_relu(x, **kw)
    except ValueError:  # a ratio the delegate declines
        return
    assert got.dtype == np.uint8 and np.array_equal(got, xnnpack_leaky_relu_oracle(x, **kw))
