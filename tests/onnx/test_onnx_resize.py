"""ONNX Resize in dspsim.onnx against ONNX Runtime and onnx.reference on one-node models
(tests/golden/onnx/resize.npz, made by tests/golden/make_golden_onnx_resize.py): nearest and linear,
half_pixel / asymmetric / align_corners / pytorch_half_pixel, every nearest_mode, float32 / uint8 /
int8, scales up and down, sizes, axes, 2-D, NHWC-shaped scales, float specials. Bit-exact: 0
mismatches, element for element, for each engine that ran the model. The graph-level cases (Resize
inside quantized U-Net-like models, ORT_ENABLE_ALL's NHWC integer kernel) are in test_onnx_models.py.
"""

import numpy as np
import pytest

import dspsim.onnx as donnx
from dspsim.onnx import resize as rz

from onnx_golden import GoldenFile, bit_list, decode

GOLDEN = GoldenFile("resize.npz")
Z, META, CASES, run_case = GOLDEN.z, GOLDEN.meta, GOLDEN.cases, GOLDEN.run


def ids(key):
    return [n for n, c in CASES.items() if c[key] is None]


@pytest.mark.parametrize("name", ids("ort_error"))
def test_resize_matches_onnxruntime(name):
    (got,) = run_case(name, "onnxruntime")
    _, want = decode(Z[f"{name}/ort0"])
    assert bit_list(got) == bit_list(want)


@pytest.mark.parametrize("name", ids("ref_error"))
def test_resize_matches_onnx_reference(name):
    (got,) = run_case(name, "onnx-reference")
    _, want = decode(Z[f"{name}/ref0"])
    assert bit_list(got) == bit_list(want)


def test_golden_covers_every_mode_transform_and_type_for_both_engines():
    names = [n for n in CASES if CASES[n]["ort_error"] is None and CASES[n]["ref_error"] is None]
    for t in ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"):
        for dt in ("float32", "uint8", "int8"):
            assert any(n.startswith(f"linear_{dt}_{t}") for n in names)
            assert any(n.startswith(f"nearest_{dt}_{t}") for n in names)
    assert len(names) >= 130


def _values(name, key):
    return decode(Z[f"{name}/{key}0"])[1]


def test_onnxruntime_truncates_8_bit_linear_resize_where_the_reference_rounds():
    """ORT's 8-bit kernels truncate toward zero (static_cast / integer division); the reference
    evaluator rounds half to even: ORT's codes are mostly the lower ones where they differ."""
    linear = [n for n in CASES if n.startswith("linear_") and "float32" not in n and CASES[n]["ref_error"] is None]
    diff = sum(int(np.count_nonzero(_values(n, "ort") != _values(n, "ref"))) for n in linear)
    lower = sum(int(np.count_nonzero(_values(n, "ort").astype(int) < _values(n, "ref"))) for n in linear)
    assert diff > 100 and lower > 0.6 * diff


def test_nearest_engines_differ_only_where_align_corners_meets_a_fractional_output_length():
    """align_corners: ORT maps x -> x * (in - 1) / (out - 1) with the integer output length, the
    reference with ``scale * in`` (7.5 for 1.5 x 5, where out = 7): other pixels picked."""
    nearest = [n for n in CASES if n.startswith("nearest_") and "float32" not in n and "2d" not in n]
    differ = {n for n in nearest if not np.array_equal(_values(n, "ort"), _values(n, "ref"))}
    assert differ == {n for n in nearest if "align_corners" in n}


def test_onnxruntime_8_bit_kernels_differ_between_nchw_and_nhwc():
    """Scales [1, 1, s, s] take float weights and truncation; [1, s, s, 1] the 10-bit integer weights:
    the same image gives different codes."""
    diff = 0
    for dt in ("uint8", "int8"):
        for t in ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"):
            nchw = _values(f"linear_{dt}_{t}_up1p5x2p5", "ort")
            nhwc = _values(f"linear_nhwc_{dt}_{t}_up1p5x2p5", "ort").transpose(0, 3, 1, 2)
            diff += int(np.count_nonzero(nchw != nhwc))
    assert diff > 20


# ---------------------------------------------------------------------------------------------
# the kernels' pieces, by hand
# ---------------------------------------------------------------------------------------------
def test_ort_source_coordinates_follow_each_transform():
    T = rz.CoordinateTransform
    np.testing.assert_array_equal(rz.ort_source_coordinates(T.HALF_PIXEL, 4, 2, 2.0), [-0.25, 0.25, 0.75, 1.25])
    np.testing.assert_array_equal(rz.ort_source_coordinates(T.ASYMMETRIC, 4, 2, 2.0), [0, 0.5, 1, 1.5])
    np.testing.assert_array_equal(rz.ort_source_coordinates(T.ALIGN_CORNERS, 4, 2, 2.0), np.float32([0, 1, 2, 3]) / 3)
    np.testing.assert_array_equal(rz.ort_source_coordinates(T.PYTORCH_HALF_PIXEL, 1, 4, 0.25), [0])
    np.testing.assert_array_equal(rz.ort_source_coordinates(T.HALF_PIXEL, 1, 4, 0.25), [1.5])


def test_ort_nearest_modes_break_ties_as_named_and_clamp():
    c = np.float32([-0.5, 0.5, 1.5, 2.5, 1.2, 1.7, 9.0])
    N = rz.NearestMode
    assert rz.ort_nearest_index(c, N.ROUND_PREFER_FLOOR, 4).tolist() == [0, 0, 1, 2, 1, 2, 3]
    assert rz.ort_nearest_index(c, N.ROUND_PREFER_CEIL, 4).tolist() == [0, 1, 2, 3, 1, 2, 3]
    assert rz.ort_nearest_index(c, N.FLOOR, 4).tolist() == [0, 0, 1, 2, 1, 1, 3]
    assert rz.ort_nearest_index(c, N.CEIL, 4).tolist() == [0, 1, 2, 3, 2, 2, 3]


def test_integer_weights_sum_to_1024_and_truncate_the_coordinate():
    i1, i2, d1, d2 = rz.ort_bilinear_weights_integer(rz.CoordinateTransform.ALIGN_CORNERS, 8, 4, 2.0)
    assert np.all(d1 + d2 == 1024)
    # x = 1 * 3 / 7 = 0.428571...: trunc(0.428571 * 1024) = 438
    assert (i1[1], i2[1], d1[1]) == (0, 1, 438)
    assert (i1[-1], i2[-1], d1[-1], d2[-1]) == (3, 3, 512, 512)  # the last column: one neighbour


# ---------------------------------------------------------------------------------------------
# refused input
# ---------------------------------------------------------------------------------------------
def _model(attrs, opset=19, x_shape=(1, 1, 2, 2), scales=(1, 1, 2, 2)):
    pytest.importorskip("onnx")
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper

    node = helper.make_node("Resize", ["x", "", "s"], ["y"], **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TP.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                          initializer=[numpy_helper.from_array(np.float32(scales), "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return m.SerializeToString()


@pytest.mark.parametrize("attrs, rule", [
    (dict(mode="cubic"), "mode 'cubic' is not supported"),
    (dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize"), "tf_crop_and_resize"),
    (dict(mode="nearest", nearest_mode="round"), "nearest_mode 'round' is not valid"),
    (dict(mode="linear", antialias=1), "antialias"),
    (dict(mode="nearest", keep_aspect_ratio_policy="not_larger"), "keep_aspect_ratio_policy"),
])
def test_unsupported_attributes_are_refused_at_load_naming_the_node(attrs, rule):
    with pytest.raises(ValueError, match=rf"node 0 \(Resize\).*{rule}"):
        donnx.load_model(_model(attrs))


def test_resize_10_is_refused_at_load():
    with pytest.raises(ValueError, match=r"node 0 \(Resize\).*Resize-10"):
        donnx.load_model(_model(dict(mode="nearest"), opset=10))


def test_linear_resize_of_a_rank_3_tensor_is_refused_for_onnxruntime():
    model = donnx.load_model(_model(dict(mode="linear"), x_shape=(1, 2, 2), scales=(1, 2, 2)))
    with pytest.raises(ValueError, match=r"Resize.*2-D inputs and 4-D inputs"):
        model.run([np.zeros((1, 2, 2), np.float32)])


def test_non_positive_scales_are_refused_naming_the_rule():
    model = donnx.load_model(_model(dict(mode="nearest"), scales=(1, 1, 0, 2)))
    with pytest.raises(ValueError, match="scales must be 4 positive finite float32 values"):
        model.run([np.zeros((1, 1, 2, 2), np.float32)])


# ---------------------------------------------------------------------------------------------
# the 8-bit bilinear kernels against the per-pixel oracle (dspsim.onnx.reference)
# ---------------------------------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dspsim import oracle  # noqa: E402


@settings(max_examples=120, deadline=None)
@given(signed=st.booleans(), h=st.integers(1, 5), w=st.integers(1, 6), data=st.data(),
       transform=st.sampled_from([t.value for t in rz.CoordinateTransform]), integer=st.booleans(),
       scale_h=st.sampled_from([0.5, 0.6, 1.0, 1.5, 2.0, 2.5, 3.0]),
       scale_w=st.sampled_from([0.4, 1.0, 1.75, 2.0, 4.0]))
def test_8_bit_bilinear_kernels_match_the_per_pixel_oracle(signed, h, w, data, transform, integer, scale_h, scale_w):
    lo, hi = (-128, 127) if signed else (0, 255)
    codes = data.draw(st.lists(st.sampled_from([lo, lo + 1, hi - 1, hi]) | st.integers(lo, hi),
                               min_size=h * w, max_size=h * w))
    x = np.array(codes, np.int8 if signed else np.uint8).reshape(1, 1, h, w)
    out = (1, 1, int(np.float32(scale_h) * np.float32(h)), int(np.float32(scale_w) * np.float32(w)))
    if 0 in out:
        return
    spec = rz.ResizeSpec(rz.ResizeMode.LINEAR, rz.CoordinateTransform(transform), rz.NearestMode.FLOOR, None)
    scales = [np.float32(1), np.float32(1), np.float32(scale_h), np.float32(scale_w)]
    got = rz.resize_onnxruntime(x, spec, out, scales, channels_last_integer=integer)
    want = oracle.ort_bilinear_8bit(x[0, 0].astype(int).tolist(), out[2], out[3], float(np.float32(scale_h)),
                                    float(np.float32(scale_w)), transform, integer, lo, hi)
    assert got[0, 0].tolist() == want


@pytest.mark.parametrize("reference", [False, True])
def test_a_resize_asking_for_a_huge_output_is_refused_before_anything_is_allocated(reference):
    """A fuzzed Resize with sizes 2^31 made the reference path allocate 16 GiB before failing (seed 4102, mutant
    729): the output size is bounded where it is derived."""
    spec = rz.ResizeSpec(rz.ResizeMode.NEAREST, rz.CoordinateTransform.ASYMMETRIC, rz.NearestMode.FLOOR, None)
    with pytest.raises(ValueError, match=r"would hold 2147483648 elements, more than the 134217728"):
        rz.output_geometry(spec, (1, 1, 2, 2), None, np.array([1, 1, 1 << 16, 1 << 15], np.int64), reference,
                           ValueError)
    out, _ = rz.output_geometry(spec, (1, 1, 2, 2), None, np.array([1, 1, 64, 64], np.int64), reference, ValueError)
    assert out == (1, 1, 64, 64)
