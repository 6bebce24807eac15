"""LiteRT's optimized kernels that differ from the reference (engine "litert-optimized"): the int8 spatial MEAN,
the int8 SUM, the int8 DEQUANTIZE and the 8-bit ADD and MUL, against the oracle on random codes, every int8 code, exact
ties and saturation. The ADD's blocks run in int32 vector lanes (dspsim.simd.add_lanes, AVX2 hosts) where their int16
narrow cannot wrap: the cases with outputs inside int16 pin those lanes, the seam at int16's edge included."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import oracle as ref
from dspsim.kernels.arithmetic.elementwise import (
    AddParams, add_plan, litert_broadcast_runs, litert_optimized_add_plan, litert_optimized_mul_plan, mul_plan, tflite_add_params,
)
from dspsim.fixedpoint import quantize_multiplier
from dspsim.kernels.reduce.mean import litert_optimized_mean_plan
from dspsim.kernels.reduce.sum import litert_optimized_sum_plan
from dspsim.quantize import litert_optimized_dequantize_plan, litert_optimized_quantize_plan, tflite_dequantize_plan


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 2), hw=st.sampled_from([(1, 1), (1, 2), (2, 2), (2, 4), (3, 5)]),
       c=st.sampled_from([1, 15, 16, 17, 33]), zi=st.integers(-128, 127), zo=st.integers(-128, 127),
       ratio=st.sampled_from([2.0**-3, 0.5, 1.0, 2.0, 8.0, 0.37]), edge=st.booleans())
def test_optimized_mean_matches_the_oracle_on_ties_and_saturation(seed, b, hw, c, zi, zo, ratio, edge):
    """Power-of-two scale ratios over 1, 2, 4 or 8 pixels make the final shift exact, so odd sums are ties: the
    channels in blocks of 16 round them toward +inf, the rest away from zero."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (b, *hw, c)).astype(np.int8)
    if edge:
        x[..., ::2] = rng.choice(np.array([-128, 127], np.int8), x[..., ::2].shape)
    kw = dict(input_scale=0.05, input_zero_point=zi, output_scale=0.05 * ratio, output_zero_point=zo)
    got = litert_optimized_mean_plan(x.shape, x.dtype, **kw)(x)
    assert got.dtype == np.int8 and got.shape == (b, 1, 1, c)
    assert np.array_equal(got, ref.litert_optimized_mean_oracle(x, **kw))


def test_optimized_mean_rounds_ties_up_in_blocks_of_16_and_away_from_zero_in_the_tail():
    x = np.full((1, 1, 2, 17), -1, np.int8)  # sum -2 over 2 pixels at ratio 1/4: -0.5 exactly
    kw = dict(input_scale=1.0, input_zero_point=0, output_scale=2.0, output_zero_point=0)
    got = litert_optimized_mean_plan(x.shape, x.dtype, **kw)(x).reshape(-1)
    assert got[:16].tolist() == [0] * 16 and got[16] == -1


def test_optimized_mean_refuses_what_its_path_does_not_take():
    with pytest.raises(ValueError, match="litert_optimized_mean: x must be 4-D NHWC"):
        litert_optimized_mean_plan((2, 3, 4), np.int8, input_scale=1.0, input_zero_point=0, output_scale=1.0,
                                   output_zero_point=0)
    with pytest.raises((TypeError, ValueError), match="litert_optimized_mean"):
        litert_optimized_mean_plan((1, 2, 2, 3), np.int16, input_scale=1.0, input_zero_point=0, output_scale=1.0,
                                   output_zero_point=0)


@settings(max_examples=80, deadline=None)
@given(shape=st.sampled_from([(1,), (7,), (8,), (2, 9), (3, 5, 7), (4, 33)]), dtype=st.sampled_from(["int8", "uint8",
                                                                                                     "int16"]),
       scale=st.sampled_from([2.0**-7, 2.0**-3, 0.0213, 1.7]), zp=st.integers(-128, 127), seed=st.integers(0, 2**32 - 1))
def test_optimized_quantize_plan_matches_the_oracle(shape, dtype, scale, zp, seed):
    """Blocks of 8 (ties to even) and the tail (ties away from zero) on exact ties k + 1/2, values past the type and
    past int32 (the oracle takes no infinity: test_int16_ops has them)."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(np.dtype(dtype))
    zp = min(max(zp, int(info.min)), int(info.max))
    k = rng.integers(-300, 300, shape) + rng.choice([0.0, 0.5, 0.25], shape)
    x = (k * scale).astype(np.float32)
    x.reshape(-1)[::7] = rng.choice(np.array([-1e12, 3e9, -3e9, 1e12], np.float32), x.reshape(-1)[::7].size)
    got = litert_optimized_quantize_plan(x.shape, scale, zp, dtype)(x)
    assert got.dtype == np.dtype(dtype) and got.shape == x.shape
    assert np.array_equal(got, ref.litert_optimized_quantize_oracle(x, scale, zp, dtype))


def test_optimized_quantize_plan_refuses_nan_and_foreign_parameters():
    run = litert_optimized_quantize_plan((9,), 0.5, 0, "int8")
    with pytest.raises(ValueError, match="litert_optimized_quantize: x contains NaN"):
        run(np.array([0.0] * 8 + [np.nan], np.float32))
    with pytest.raises(ValueError, match="litert_optimized_quantize: dtype"):
        litert_optimized_quantize_plan((9,), 0.5, 0, "int32")
    with pytest.raises(ValueError, match="litert_optimized_quantize"):
        litert_optimized_quantize_plan((9,), 0.5, 200, "int8")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), zp=st.integers(-128, 127), scale=st.floats(1e-4, 10.0), seed=st.integers(0, 2**32 - 1))
def test_optimized_dequantize_matches_the_oracle(n, zp, scale, seed):
    q = np.random.default_rng(seed).integers(-128, 128, n).astype(np.int8)
    got = litert_optimized_dequantize_plan(q.shape, scale, zp)(q)
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), ref.litert_optimized_dequantize_oracle(q, scale, zp).view(np.uint32))


def test_optimized_dequantize_differs_from_the_reference_on_every_int8_code_only_in_the_blocks():
    q = np.arange(-128, 128, dtype=np.int8).reshape(2, 128)[:, :-3].copy()  # 250 codes: a tail of 2
    got = litert_optimized_dequantize_plan(q.shape, 0.05, -7)(q)
    want = tflite_dequantize_plan(q.shape, 0.05, -7)(q)
    flat_g, flat_w = got.reshape(-1), want.reshape(-1)
    assert np.array_equal(flat_g[-2:], flat_w[-2:]) and np.count_nonzero(flat_g[:-2] != flat_w[:-2]) > 0
    assert np.array_equal(got.view(np.uint32), ref.litert_optimized_dequantize_oracle(q, 0.05, -7).view(np.uint32))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from([(2, 3, 4), (1, 5, 2, 3), (16,)]),
       axis=st.sampled_from([0, -1, (0, 1)]), keep=st.booleans(), zi=st.integers(-128, 127), zo=st.integers(-128, 127),
       ratio=st.sampled_from([2.0**-3, 0.25, 1.0, 4.0, 0.37]), edge=st.booleans())
def test_optimized_sum_matches_the_oracle_on_ties_and_saturation(seed, shape, axis, keep, zi, zo, ratio, edge):
    """Power-of-two scale ratios make float32 ties exact: TfLiteRound takes them away from zero."""
    if isinstance(axis, tuple) and len(shape) < 2:
        axis = 0
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, shape).astype(np.int8)
    if edge:
        x.reshape(-1)[::3] = 127
    kw = dict(input_scale=0.05, input_zero_point=zi, output_scale=0.05 / ratio, output_zero_point=zo, keep_dims=keep)
    got = litert_optimized_sum_plan(x.shape, x.dtype, axis, **kw)(x)
    assert np.array_equal(got, ref.litert_optimized_sum_oracle(x, axis, **kw))


def test_optimized_sum_rounds_a_negative_tie_away_from_zero():
    x = np.array([[-1, 0]], np.int8)  # sum -1 at a ratio of 1/2: -0.5 exactly
    got = litert_optimized_sum_plan(x.shape, x.dtype, 1, input_scale=1.0, input_zero_point=0, output_scale=2.0,
                                    output_zero_point=0)(x)
    assert got.tolist() == [-1]


#: operand shapes for each path of the optimized ADD: equal shapes (one elementwise call; 16-lane blocks and a
#: tail), the fivefold pattern with inner runs of 21 or 3 (both input orders), the scalar broadcast in rows of 13
#: or one run of 78, and a generic broadcast (the reference kernel)
_ADD_SHAPES = [((37,), (37,)), ((2, 40), (2, 40)), ((3, 1, 21), (3, 4, 21)), ((3, 4, 21), (3, 1, 21)),
               ((2, 1, 3), (2, 5, 3)), ((2, 3, 1), (2, 3, 13)), ((1,), (2, 3, 13)), ((2, 3, 13), ()),
               ((2, 1, 4, 1, 8), (1, 3, 1, 5, 8)), ((4, 1), (1, 9))]


def _operands(seed, shapes, uint8, edge):
    """(dtype, zero-point offset, x1, x2): random codes of ``shapes``; ``edge``: x1 holds only the extreme codes."""
    dt, off = (np.uint8, 128) if uint8 else (np.int8, 0)
    rng = np.random.default_rng(seed)
    x1, x2 = (rng.integers(-128, 128, s).astype(np.int64) + off for s in shapes)
    if edge:
        x1 = np.where(rng.random(x1.shape) < 0.5, -128, 127) + off
    return dt, off, x1.astype(dt), x2.astype(dt)


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shapes=st.sampled_from(_ADD_SHAPES), uint8=st.booleans(),
       scales=st.tuples(*[st.floats(-4.0, 0.3).map(lambda e: 10.0**e)] * 3),
       zps=st.tuples(*[st.integers(-128, 127)] * 3),
       relu=st.booleans(), edge=st.booleans())
def test_optimized_add_matches_the_oracle_on_every_path(seed, shapes, uint8, scales, zps, relu, edge):
    """Random scales put outputs far beyond int16 (the blocks wrap) and give every input shift; ``edge`` fills
    the operands with the type's extreme codes."""
    dt, off, x1, x2 = _operands(seed, shapes, uint8, edge)
    try:
        params = tflite_add_params(*scales)
    except ValueError:  # an output multiplier >= 1: LiteRT's Prepare refuses it too
        return
    kw = dict(input1_zero_point=zps[0] + off, input2_zero_point=zps[1] + off, output_zero_point=zps[2] + off,
              act_min=max(zps[2] + off, int(np.iinfo(dt).min)) if relu else None)
    got = litert_optimized_add_plan(x1.shape, x2.shape, dt, params, **kw)(x1, x2)
    assert got.dtype == dt and got.shape == np.broadcast_shapes(x1.shape, x2.shape)
    assert np.array_equal(got, ref.litert_optimized_add_oracle(x1, x2, params, **kw))


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shapes=st.sampled_from(_ADD_SHAPES), uint8=st.booleans(),
       real=st.floats(-4.0, 2.0).map(lambda e: 10.0**e), zps=st.tuples(*[st.integers(-128, 127)] * 3),
       relu=st.booleans(), edge=st.booleans())
def test_optimized_mul_matches_the_oracle_on_every_path(seed, shapes, uint8, real, zps, relu, edge):
    """Multipliers up to 100 saturate the int16 narrow, whose zero point then wraps; ``edge``: extreme codes."""
    dt, off, x1, x2 = _operands(seed, shapes, uint8, edge)
    m, s = quantize_multiplier(real)
    kw = dict(input1_zero_point=zps[0] + off, input2_zero_point=zps[1] + off, output_zero_point=zps[2] + off,
              multiplier=int(m), shift=int(s), act_min=max(zps[2] + off, int(np.iinfo(dt).min)) if relu else None)
    got = litert_optimized_mul_plan(x1.shape, x2.shape, dt, **kw)(x1, x2)
    assert got.dtype == dt and got.shape == np.broadcast_shapes(x1.shape, x2.shape)
    assert np.array_equal(got, ref.litert_optimized_mul_oracle(x1, x2, **kw))


def test_optimized_mul_adds_the_zero_point_to_a_saturated_product_in_int16():
    """127 * 127 * 4 saturates at 32,767 in the 16-lane blocks; + 1 wraps to -32,768, then -128. The tail of 1
    clamps at 127, as the reference does everywhere."""
    x = np.full(17, 127, np.int8)
    m, s = quantize_multiplier(4.0)
    kw = dict(input1_zero_point=0, input2_zero_point=0, output_zero_point=1, multiplier=int(m), shift=int(s))
    assert litert_optimized_mul_plan(x.shape, x.shape, x.dtype, **kw)(x, x).tolist() == [-128] * 16 + [127]
    assert mul_plan(x.shape, x.shape, x.dtype, **kw)(x, x).tolist() == [127] * 17


def test_optimized_add_wraps_an_output_beyond_int16_in_its_blocks_and_clamps_it_in_the_tail():
    """(127 + 127) * 256 = 65,024 wraps to -512 in int16 (then -128) in the 16-lane blocks; the tail of 1
    saturates at 127, as the reference does everywhere."""
    x = np.full(17, 127, np.int8)
    params = tflite_add_params(1.0, 1.0, 1.0 / 256)
    kw = dict(input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    got = litert_optimized_add_plan(x.shape, x.shape, x.dtype, params, **kw)(x, x)
    assert got.tolist() == [-128] * 16 + [127]
    assert add_plan(x.shape, x.shape, x.dtype, params, **kw)(x, x).tolist() == [127] * 17


@pytest.mark.parametrize("shapes,scales", [
    (((65536,), (65536,)), (0.004386884160339832, 0.005715631414204836, 0.046526338905096054)),
    (((256, 1), (1, 256)), (0.22879990935325623, 0.0014604281168431044, 0.250219464302063)),
], ids=["elementwise-combined-shift", "scalar-broadcast-floor-shift"])
def test_optimized_add_rounds_inputs_in_the_blocks_order_on_every_code_pair(shapes, scales):
    """Scales (a search's, also golden cases in tests/golden/ops/arith.npz) where the blocks' input rounding
    (one SRDHM after the combined shift; a floor shift after SRDHM) changes a few of the 65,536 outputs."""
    n = np.arange(65536)
    if shapes[0] == shapes[1]:
        x1, x2 = (n % 256 - 128).astype(np.int8), (n // 256 - 128).astype(np.int8)
    else:
        x1, x2 = np.arange(-128, 128, dtype=np.int8).reshape(shapes[0]), np.arange(-128, 128, dtype=np.int8).reshape(
            shapes[1])
    params = tflite_add_params(*scales)
    kw = dict(input1_zero_point=3, input2_zero_point=-2, output_zero_point=1)
    got = litert_optimized_add_plan(x1.shape, x2.shape, x1.dtype, params, **kw)(x1, x2)
    assert np.array_equal(got, ref.litert_optimized_add_oracle(x1, x2, params, **kw))
    assert np.any(got != add_plan(x1.shape, x2.shape, x1.dtype, params, **kw)(x1, x2))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 140), scalar_broadcast=st.booleans(), uint8=st.booleans(),
       ratios=st.tuples(st.sampled_from([1.0, 0.5, 0.25, 2.0**-7]), st.floats(2.0**-12, 1.0),
                        st.floats(2.0**-6, 16.0)),
       zps=st.tuples(*[st.sampled_from([-128, 127, 0, 5])] * 3), relu=st.booleans(), edge=st.booleans())
def test_optimized_add_lanes_match_the_oracle(seed, n, scalar_broadcast, uint8, ratios, zps, relu, edge):
    """Outputs inside int16 (an output scale at most 64 times below the inputs'): the blocks in vector lanes,
    the int8 elementwise kernel's combined shift and the others' floor shift, lengths on both sides of the 8-
    and 32-output blocks and of the 16-lane NEON blocks; power-of-two ratios put sums on ties."""
    shapes = ((3, 1), (3, n)) if scalar_broadcast else ((3, n), (3, n))
    dt, off, x1, x2 = _operands(seed, shapes, uint8, edge)
    params = tflite_add_params(ratios[0], ratios[1], max(ratios[:2]) / ratios[2])
    kw = dict(input1_zero_point=zps[0] + off, input2_zero_point=zps[1] + off, output_zero_point=zps[2] + off,
              act_min=zps[2] + off if relu else None)
    got = litert_optimized_add_plan(x1.shape, x2.shape, dt, params, **kw)(x1, x2)
    assert np.array_equal(got, ref.litert_optimized_add_oracle(x1, x2, params, **kw))


@pytest.mark.parametrize("uint8", [False, True])
def test_optimized_add_lanes_take_an_input_shift_below_zero(uint8):
    """``left_shift + S = 20 - 25 < 0``: the int8 elementwise kernel floor-shifts the inputs right by 5 (and 4)
    before SRDHM; the others shift by 20, then floor-shift by 25 (24) after it. The output halves the sum: the
    inputs' rounding shows in most outputs."""
    codes = np.arange(256)
    dt, off = (np.uint8, 128) if uint8 else (np.int8, 0)
    x1, x2 = (codes - 128 + off).astype(dt), ((codes * 37) % 256 - 128 + off).astype(dt)
    params = AddParams(20, (1 << 31) - 1, -25, 1 << 30, -23, 1 << 30, 0)
    kw = dict(input1_zero_point=3 + off, input2_zero_point=-7 + off, output_zero_point=-1 + off)
    got = litert_optimized_add_plan(x1.shape, x2.shape, dt, params, **kw)(x1, x2)
    assert np.array_equal(got, ref.litert_optimized_add_oracle(x1, x2, params, **kw))
    assert np.count_nonzero(got != add_plan(x1.shape, x2.shape, dt, params, **kw)(x1, x2)) > 16


def test_optimized_add_runs_the_lanes_up_to_int16s_edge_and_wraps_past_it():
    """The extreme sums +-255 * 2 at an output scale 1/64.2 of the inputs' come out near +-32,740: with every
    output zero point from -60 to 60 the largest or the smallest output plus ``zo`` crosses int16's edge. The
    plan runs the lanes exactly while it stays inside (where the lanes' saturation is the narrow's value) and
    wraps past it, as the oracle does."""
    x1 = np.array([127, -128] * 24 + [127] * 16 + [-128] * 16, np.int8)
    params = tflite_add_params(1.0, 1.0, 1.0 / 64.2)
    for zp in (-128, 127):
        for zo in range(-60, 61):
            kw = dict(input1_zero_point=zp, input2_zero_point=zp, output_zero_point=zo)
            got = litert_optimized_add_plan(x1.shape, x1.shape, x1.dtype, params, **kw)(x1, x1)
            assert np.array_equal(got, ref.litert_optimized_add_oracle(x1, x1, params, **kw)), (zp, zo)


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 140), scalar_broadcast=st.booleans(), uint8=st.booleans(),
       real=st.floats(2.0**-14, 0.49), zps=st.tuples(*[st.sampled_from([-128, 127, 0, 5])] * 3), relu=st.booleans(),
       edge=st.booleans())
def test_optimized_mul_lanes_match_the_oracle(seed, n, scalar_broadcast, uint8, real, zps, relu, edge):
    """Products times a multiplier below 0.49 stay inside int16 with any zero point: the blocks in vector lanes."""
    shapes = ((3, 1), (3, n)) if scalar_broadcast else ((3, n), (3, n))
    dt, off, x1, x2 = _operands(seed, shapes, uint8, edge)
    m, s = quantize_multiplier(real)
    kw = dict(input1_zero_point=zps[0] + off, input2_zero_point=zps[1] + off, output_zero_point=zps[2] + off,
              multiplier=int(m), shift=int(s), act_min=zps[2] + off if relu else None)
    got = litert_optimized_mul_plan(x1.shape, x2.shape, dt, **kw)(x1, x2)
    assert np.array_equal(got, ref.litert_optimized_mul_oracle(x1, x2, **kw))


def test_optimized_mul_runs_the_lanes_up_to_int16s_edge_and_narrows_past_it():
    """+-255 * 255 * 0.5036 comes out at +-32,747: with every output zero point from -60 to 60 the largest (or
    smallest) output plus ``zo`` crosses int16's edge, where the saturated product's zero point wraps."""
    x1 = np.array([127, -128] * 24 + [127] * 16 + [-128] * 16, np.int8)
    x2 = np.roll(x1, 1)
    m, s = quantize_multiplier(0.5036)
    for zp1, zp2 in ((-128, -128), (127, -128)):
        for zo in range(-60, 61):
            kw = dict(input1_zero_point=zp1, input2_zero_point=zp2, output_zero_point=zo, multiplier=int(m),
                      shift=int(s))
            got = litert_optimized_mul_plan(x1.shape, x2.shape, x1.dtype, **kw)(x1, x2)
            assert np.array_equal(got, ref.litert_optimized_mul_oracle(x1, x2, **kw)), (zp1, zp2, zo)


def test_optimized_add_walks_operands_as_litert_broadcast_shapes():
    assert litert_broadcast_runs((2, 40), (2, 40)) == (80, True)
    assert litert_broadcast_runs((3, 1, 21), (3, 4, 21)) == (21, True)
    assert litert_broadcast_runs((3, 4, 21), (3, 1, 21)) == (21, True)
    assert litert_broadcast_runs((2, 3, 1), (2, 3, 13)) == (13, False)
    assert litert_broadcast_runs((1,), (2, 3, 13)) == (78, False)
    assert litert_broadcast_runs((2, 1, 4, 1, 8), (1, 3, 1, 5, 8)) is None


def test_optimized_add_refuses_int16_and_foreign_params():
    params = tflite_add_params(0.5, 0.5, 1.0)
    kw = dict(input1_zero_point=0, input2_zero_point=0, output_zero_point=0)
    with pytest.raises((TypeError, ValueError), match="litert_optimized_add"):
        litert_optimized_add_plan((4,), (4,), np.int16, params, **kw)
    with pytest.raises(TypeError, match="litert_optimized_add: params must be an AddParams"):
        litert_optimized_add_plan((4,), (4,), np.int8, (20, 1, 0), **kw)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), axis=st.sampled_from([0, -1, (0, 1)]), keep=st.booleans(),
       ratio=st.sampled_from([2.0**-3, 0.25, 1.0, 4.0, 0.37]))
def test_optimized_int16_sum_matches_the_oracle_and_saturates_to_int16(seed, axis, keep, ratio):
    rng = np.random.default_rng(seed)
    x = rng.integers(-32768, 32768, (3, 4, 5)).astype(np.int16)
    x.reshape(-1)[::4] = 32767
    kw = dict(input_scale=0.001, input_zero_point=0, output_scale=0.001 / ratio, output_zero_point=0, keep_dims=keep)
    got = litert_optimized_sum_plan(x.shape, x.dtype, axis, **kw)(x)
    assert got.dtype == np.int16
    assert np.array_equal(got, ref.litert_optimized_sum_oracle(x, axis, **kw))
