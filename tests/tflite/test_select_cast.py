"""REDUCE_MAX, ARG_MAX, CAST and TFLite's Requantize (QUANTIZE int8 <-> uint8) against their oracles and
independent numpy readings; the per-engine refusals of the TFLite builtins, with the rule named."""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.tflite as dt
from dspsim import oracle as ref
from dspsim.fixedpoint import quantize_multiplier
from dspsim.kernels.quantize import cast as C
from dspsim.kernels.quantize import requantize as R
from dspsim.kernels.reduce import select as K

SETTINGS = settings(max_examples=50, deadline=None)
OPS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "ops")
TYPES = [np.int8, np.uint8, np.int16, np.int32]


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


def _few_codes(rng, shape, dtype):
    """Codes from a handful of values (ties everywhere), type edges included."""
    info = np.iinfo(dtype)
    return rng.choice(np.array([info.min, 0, 1, info.max], dtype), size=shape)


@SETTINGS
@given(shapes, st.sampled_from(TYPES), st.booleans(), st.integers(0, 2**31 - 1))
def test_reduce_max_matches_the_oracle_and_numpy(shape, dtype, keep, seed):
    rng = np.random.default_rng(seed)
    x = _few_codes(rng, shape, dtype)
    axes = rng.integers(-len(shape), len(shape), size=int(rng.integers(1, 4))).astype(np.int32)  # duplicates too
    y = K.reduce_max(x, axes, keep_dims=keep)
    _same(y, ref.reduce_max_oracle(x, axes, keep_dims=keep))
    _same(y, np.max(x, axis=tuple(sorted({int(a) % len(shape) for a in axes})), keepdims=keep))


def test_reduce_max_over_no_axis_copies_and_bad_axes_are_refused():
    x = np.array([[1, -2]], np.int8)
    _same(K.reduce_max(x, np.array([], np.int32)), x)
    with pytest.raises(ValueError, match="reduce_max: axis 2 is out of range"):
        K.reduce_max(x, np.array([2]))
    with pytest.raises(TypeError, match="reduce_max: axis must be an int"):
        K.reduce_max(x, np.array([0.5]))


@SETTINGS
@given(shapes, st.sampled_from(TYPES), st.sampled_from(["int32", "int64"]), st.integers(0, 2**31 - 1))
def test_arg_max_takes_the_first_of_equal_maxima(shape, dtype, otype, seed):
    rng = np.random.default_rng(seed)
    x = _few_codes(rng, shape, dtype)
    axis = int(rng.integers(-len(shape), len(shape)))
    y = K.arg_max(x, axis, output_type=otype)
    _same(y, ref.arg_max_oracle(x, axis, output_type=otype))
    _same(y, np.argmax(x, axis=axis).astype(otype))  # numpy also returns the first occurrence


def test_arg_max_ties_on_hand_values():
    x = np.array([[5, 9, 9, -1], [-128, -128, -128, -128]], np.int8)
    assert K.arg_max(x, 1).tolist() == [1, 0]
    assert K.arg_max(x, 0, output_type="int64").dtype == np.int64
    with pytest.raises(ValueError, match="arg_max: output_type must be int32 or int64"):
        K.arg_max(x, 0, output_type="int16")


SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, 1e10, -1e10, 2.0**31, -2.0**31, 127.5, 128.0, -128.5, -129.0,
                     255.9, 256.0, -0.5, -0.0, 0.5, 32767.5, -32768.9, 65535.5, 1e-40], np.float32)


@pytest.mark.parametrize("dst", ["int8", "uint8", "int16", "int32"])
@pytest.mark.parametrize("nan", ["max", "zero"])
def test_cast_float_to_int_truncates_and_saturates(dst, nan):
    y = C.cast(SPECIALS, dst, nan=nan)
    _same(y, ref.cast_oracle(SPECIALS, dst, nan=nan))
    info = np.iinfo(dst)
    assert y[0] == y[1] == (info.max if nan == "max" else 0)
    assert (y[2], y[3]) == (info.max, info.min)
    finite = np.isfinite(SPECIALS)
    assert np.array_equal(y[finite], np.clip(np.trunc(SPECIALS[finite].astype(np.float64)), info.min, info.max))


@SETTINGS
@given(st.sampled_from(TYPES), st.sampled_from(TYPES + [np.float32]), st.integers(0, 2**31 - 1))
def test_cast_between_integers_wraps_and_to_float_rounds_to_nearest_even(src, dst, seed):
    info = np.iinfo(src)
    x = np.random.default_rng(seed).integers(info.min, int(info.max) + 1, size=64).astype(src)
    x[:2] = (info.min, info.max)
    y = C.cast(x, np.dtype(dst).name)
    _same(y, ref.cast_oracle(x, np.dtype(dst).name))


def test_cast_hand_values():
    assert C.cast(np.array([200, -129, 65535], np.int32), "int8").tolist() == [-56, 127, -1]
    assert C.cast(np.array([2**24 + 1, 2**24 + 3], np.int32), "float32").tolist() == [2.0**24, 2.0**24 + 4]
    with pytest.raises(TypeError, match="cast: dtype must be one of"):
        C.cast(np.zeros(2, np.int8), "int64")
    with pytest.raises(ValueError, match="cast: nan must be"):
        C.cast(np.zeros(2, np.float32), "int8", nan="min")


CODES8 = np.arange(-128, 128, dtype=np.int16)


@pytest.mark.parametrize("rounding", R.ROUNDINGS)
@pytest.mark.parametrize("src,dst,ratio,zi,zo", [
    ("uint8", "int8", 0.1 / 0.3, 131, -7), ("int8", "uint8", 0.05 / 0.0371, -3, 140),
    ("int8", "uint8", 0.5, 0, 128), ("uint8", "int8", 0.75 / 0.5, 120, 5), ("uint8", "int16", 1 / 7, 128, 3),
    ("int8", "int8", 1 / 300, 0, 0)])
def test_requantize_matches_the_oracle_on_every_code(src, dst, ratio, zi, zo, rounding):
    x = (CODES8 if src == "int8" else CODES8 + 128).astype(src)
    m, s = quantize_multiplier(ratio)
    kw = dict(input_zero_point=zi, output_zero_point=zo, multiplier=m, shift=s, out_dtype=dst, rounding=rounding)
    _same(R.tflite_requantize(x, **kw), ref.tflite_requantize_oracle(x, **kw))


def test_requantize_equal_scales_is_the_xor_0x80_fast_path():
    """LiteRT's reference fast path for int8 <-> uint8 with equal scales and zero points 128 apart
    (``input ^ 0x80``) gives the general formula's codes, in every build."""
    for src, dst, zi, zo in (("int8", "uint8", -3, 125), ("uint8", "int8", 128, 0), ("uint8", "int8", 131, 3)):
        x = (CODES8 if src == "int8" else CODES8 + 128).astype(src)
        for rounding in R.ROUNDINGS:
            y = R.tflite_requantize(x, input_zero_point=zi, output_zero_point=zo, multiplier=1 << 30, shift=1,
                                    out_dtype=dst, rounding=rounding)
            assert np.array_equal(y.view(np.uint8), x.view(np.uint8) ^ 0x80)


def test_requantize_neon_rounds_the_right_shift_ties_up():
    """uint8 code 1, zero point 131: SRDHM(-130, 1431655730) = -87, then / 2: -43.5 -> -44 (reference,
    away from zero) but -43 under the NEON/NEON_2_SSE build (VRSHL, toward +inf)."""
    kw = dict(input_zero_point=131, output_zero_point=-7, multiplier=1431655730, shift=-1)
    x = np.array([1], np.uint8)
    assert R.tflite_requantize(x, rounding="double", **kw)[0] == -51
    assert R.tflite_requantize(x, rounding="neon", **kw)[0] == -50


# --------------------------------------------------------------------------------------------
# the engines' refusals, rule named (models from tests/golden/ops)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model,engine,match", [
    ("depth_to_space.tflite", "litert", "version 2: the op resolver of engine 'litert' registers "
                                        "DEPTH_TO_SPACE versions 1 to 1 only"),
    ("ss_new_axis.tflite", "tflm", "input rank 5 exceeds 4: the STRIDED_SLICE kernel of engine 'tflm' "
                                   "refuses it"),
    ("sx_ss_ellipsis_first.tflite", "tflm", "TFLM's StridedSlice reads one per input dimension"),
    ("sx_ss_offset.tflite", "tflm", "computes shape \\(2, 1, 0, 4\\)"),  # TFLM ignores offset
    ("sx_ss_empty.tflite", "tflm", "no element: the allocator of engine 'tflm' fails"),
    ("arg_max_int64_axis1.tflite", "tflm", "output tensor 2 .* has type int64; supported by engine 'tflm': int32"),
    ("sx_arg_max_ties_uint8_int32_axis2.tflite", "tflm",
     "input tensor 0 .* has type uint8; supported by engine 'tflm': int8"),
    ("sx_cast_float32_uint8.tflite", "tflm", "output tensor 1 .* has type uint8; supported by engine 'tflm': int8, int16"),
])
def test_engine_refusals_name_the_rule(model, engine, match):
    path = os.path.join(OPS, model)
    if not os.path.exists(path):
        pytest.skip(f"{model} not generated")
    with pytest.raises(ValueError, match=match):
        dt.load_model(path, engine=engine)


@pytest.mark.parametrize("model", ["depth_to_space.tflite", "ss_new_axis.tflite", "arg_max_int64_axis1.tflite"])
def test_the_same_models_load_where_the_engine_takes_them(model):
    path = os.path.join(OPS, model)
    for engine in ("xnnpack",) + (("litert",) if model != "depth_to_space.tflite" else ("tflm",)):
        dt.load_model(path, engine=engine)


# --------------------------------------------------------------------------------------------
# QUANTIZE int8 <-> uint8 golden vectors (tests/golden/ops/reductions.npz): the requantize kernel per build
# --------------------------------------------------------------------------------------------
def _quantize_cases():
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden"))
    from golden_io import load_packed

    path = os.path.join(OPS, "reductions.npz")
    if not os.path.exists(path):
        return []
    return [pytest.param(c, a, id=c["name"]) for c, a in load_packed(path)[1]
            if c["ops"] == ["QUANTIZE"] and c["inputs"][0]["dtype"] != "float32"]


@pytest.mark.parametrize("case,arrays", _quantize_cases())
def test_requantize_is_bit_exact_with_each_engine(case, arrays):
    """LiteRT BUILTIN_REF and TFLM: reference Requantize ("double"); LiteRT's default interpreter: XNNPACK
    takes no mixed int8/uint8 QUANTIZE, so optimized_ops::Requantize runs, NEON through NEON_2_SSE ("neon")."""
    from dspsim.tflite.flatbuffer import read_model

    m = read_model(open(os.path.join(OPS, case["model"]), "rb").read())
    t_in, t_out = m.tensors[m.operators[0].inputs[0]], m.tensors[m.operators[0].outputs[0]]
    assert t_in.dtype != t_out.dtype  # mixed: never delegated
    mult, shift = quantize_multiplier(float(np.float64(t_in.scale[0]) / np.float64(t_out.scale[0])))
    kw = dict(input_zero_point=int(t_in.zero_point[0]), output_zero_point=int(t_out.zero_point[0]),
              multiplier=mult, shift=shift, out_dtype=t_out.dtype.name)
    for engine, rounding in (("tflm", "double"), ("litert_ref", "double"), ("litert_default", "neon")):
        key = f"{engine}/out0"
        while key not in arrays:
            key = case["aliases"][key]
        for r in range(case["runs"]):
            _same(R.tflite_requantize(arrays["in0"][r], rounding=rounding, **kw), arrays[key][r])
