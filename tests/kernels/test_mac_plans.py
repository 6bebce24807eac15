"""The MAC kernels' plans (conv2d_plan, depthwise_conv2d_plan, fully_connected_plan) give exactly what the
public kernels give on the same arguments, called as every plan is (``plan(x)``) or with an accumulator and
statistics (``plan.run(x, accumulator, stats)``), and refuse an input of another shape or dtype."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim.kernels import conv2d_plan, depthwise_conv2d_plan, fully_connected_plan

SETTINGS = settings(max_examples=20, deadline=None)  # each new scheme compiles a fused driver


def _codes(rng, shape, dtype):
    ii = np.iinfo(dtype)
    return rng.integers(ii.min, ii.max + 1, shape).astype(dtype)


@st.composite
def window_case(draw, depthwise):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    b, h, w, c = draw(st.integers(1, 3)), draw(st.integers(1, 7)), draw(st.integers(1, 7)), draw(st.integers(1, 9))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    xd = draw(st.sampled_from([np.int8, np.uint8]))
    mult = draw(st.integers(1, 2)) if depthwise else 1
    oc = c * mult if depthwise else draw(st.integers(1, 9))
    wshape = (1, kh, kw, oc) if depthwise else (oc, kh, kw, c)
    kw_args = dict(stride=draw(st.integers(1, 2)), padding=draw(st.sampled_from(["SAME", "VALID"])),
                   input_zero_point=int(draw(st.integers(*((-128, 127) if xd == np.int8 else (0, 255))))),
                   output_zero_point=draw(st.integers(-128, 127)), input_scale=draw(st.floats(1e-3, 1.0)),
                   weight_scale=draw(st.floats(1e-3, 0.1)), output_scale=draw(st.floats(1e-3, 1.0)),
                   requant=draw(st.sampled_from(["tflm", "xnnpack"])),  # the schemes models use
                   rounding=draw(st.sampled_from(["double", "single"])))
    if kw_args["requant"] != "tflm":
        kw_args.pop("rounding")
    if depthwise:
        kw_args["depth_multiplier"] = mult
    if kw_args["padding"] == "VALID" and (h < kh or w < kw):
        kw_args["padding"] = "SAME"
    bias = rng.integers(-(1 << 20), 1 << 20, oc).astype(np.int32) if draw(st.booleans()) else None
    return _codes(rng, (b, h, w, c), xd), _codes(rng, wshape, np.int8), bias, kw_args


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv2d", "depthwise"])
@SETTINGS
@given(data=st.data())
def test_a_window_plan_is_the_public_kernel(depthwise, data):
    x, w, bias, kw = data.draw(window_case(depthwise))
    public, make = (dspsim.depthwise_conv2d, depthwise_conv2d_plan) if depthwise else (dspsim.conv2d, conv2d_plan)
    plan = make(x.shape, x.dtype, w, bias, **kw)
    assert np.array_equal(plan(x), public(x, w, bias, **kw))
    acc = dspsim.Accumulator(16, "saturate")  # the checked kernel: passed through
    got, stats = plan.run(x, acc, stats=True)
    want, want_stats = public(x, w, bias, **kw, accumulator=acc, stats=True)
    assert np.array_equal(got, want) and stats == want_stats


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 40), k=st.integers(1, 70), n=st.integers(1, 40),
       requant=st.sampled_from(["tflm", "litert", "xnnpack"]))
def test_a_dense_plan_is_the_public_kernel(seed, rows, k, n, requant):
    rng = np.random.default_rng(seed)
    x, w = _codes(rng, (rows, k), np.int8), _codes(rng, (n, k), np.int8)
    bias = rng.integers(-(1 << 24), 1 << 24, n).astype(np.int32)
    kw = dict(input_zero_point=int(rng.integers(-128, 128)), output_zero_point=int(rng.integers(-128, 128)),
              input_scale=0.02, weight_scale=0.004, output_scale=float(rng.uniform(0.01, 0.5)), requant=requant)
    plan = fully_connected_plan(x.shape, x.dtype, w, bias, **kw)
    assert np.array_equal(plan(x), dspsim.fully_connected(x, w, bias, **kw))


def test_a_plan_refuses_an_input_of_another_shape_or_dtype():
    w = np.ones((4, 3, 3, 2), np.int8)
    plan = conv2d_plan((1, 5, 5, 2), np.int8, w, input_zero_point=0, output_zero_point=0, multiplier=1 << 30,
                       shift=0)
    with pytest.raises(ValueError, match=r"conv2d_plan: the plan was prepared for int8 \(1, 5, 5, 2\)"):
        plan(np.zeros((1, 6, 5, 2), np.int8))
    with pytest.raises(ValueError, match="prepared for int8"):
        plan.run(np.zeros((1, 5, 5, 2), np.uint8))
    with pytest.raises(TypeError, match="conv2d_plan: x_shape must be a tuple of ints"):
        conv2d_plan("bogus", np.int8, w, input_zero_point=0, output_zero_point=0, multiplier=1 << 30, shift=0)
