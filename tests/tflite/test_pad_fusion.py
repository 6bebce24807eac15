"""PAD / PADV2 + VALID CONV_2D / DEPTHWISE_CONV_2D run as one conv with explicit pads (dspsim.tflite.fusion).

A synthetic model (decoded flatbuffer records: x -> PAD -> conv -> y) where the fused run must give every
tensor the trace (which runs the PAD and the conv) gives, on one sample and on a batch of 3, under each
engine, int8 and 16x8; variants that must not fuse (a pad value that is not the conv's input zero point,
channel padding, a SAME conv, the padded tensor read elsewhere or returned, a simulated accumulator); and
MobileNetV2 224 (where the development models are), whose fused ``run`` must give the real engines' outputs.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from dspsim import Accumulator
from dspsim.tflite import load_model
from dspsim.graph.ir import ModelDef, OperatorDef, SubgraphDef, TensorDef
from dspsim.tflite.model import Model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
from golden_io import load_real_model  # noqa: E402
from model_steps import recorded_run  # noqa: E402  (the run loop's steps, every tensor recorded)

CODES = {"PAD": 34, "PADV2": 60, "CONV_2D": 3, "DEPTHWISE_CONV_2D": 4}
MOBILENET = "mobilenet_v2_quantized_1x3x224x224"


def _t(i, name, shape, dtype, data=None, scale=(), zp=(), axis=0):
    return TensorDef(i, name, tuple(shape), np.dtype(dtype), np.dtype(dtype).name, data,
                     np.asarray(scale, np.float32), np.asarray(zp, np.int64), axis)


def pad_conv_model(kind="CONV_2D", pads=((0, 0), (1, 1), (0, 1), (0, 0)), wide=False, pad_value=None, padding=1,
                   padded_output=False, second_reader=False):
    """x (1, 9, 10, 4) -> PAD (PADV2 with ``pad_value``) -> a 3x3 stride-2 ``kind`` conv (``padding`` 1 VALID,
    0 SAME) -> y; ``padded_output`` also returns the padded tensor, ``second_reader`` adds a 1x1 conv of it."""
    rng = np.random.default_rng(11)
    dt, bias_t = (np.int16, np.int64) if wide else (np.int8, np.int32)
    zx, zy = (0, 0) if wide else (3, -2)
    (_, _), (t, b), (left, r), (c0, c1) = pads
    hp, wp, cp = 9 + t + b, 10 + left + r, 4 + c0 + c1
    oc = 6 if kind == "CONV_2D" else cp
    w_shape = (oc, 3, 3, cp) if kind == "CONV_2D" else (1, 3, 3, oc)
    w = rng.integers(-127, 128, w_shape).astype(np.int8)
    s_w = rng.uniform(0.002, 0.02, oc)
    bias = rng.integers(-3000, 3000, oc).astype(bias_t)
    out_hw = [-(-n // 2) for n in (hp, wp)] if padding == 0 else [(n - 3) // 2 + 1 for n in (hp, wp)]
    q_x, q_y = dict(scale=[0.05], zp=[zx]), dict(scale=[0.1], zp=[zy])
    tensors = [_t(0, "x", (1, 9, 10, 4), dt, **q_x), _t(1, "paddings", (4, 2), np.int32, np.array(pads, np.int32)),
               _t(2, "padded", (1, hp, wp, cp), dt, **q_x),
               _t(3, "w", w.shape, np.int8, w, s_w, np.zeros(oc), 0 if kind == "CONV_2D" else 3),
               _t(4, "b", (oc,), bias_t, bias, s_w * 0.05, np.zeros(oc)), _t(5, "y", (1, *out_hw, oc), dt, **q_y)]
    conv = dict(padding=padding, stride_h=2, stride_w=2, dilation_h_factor=1, dilation_w_factor=1,
                fused_activation_function=1, depth_multiplier=1)
    pad_inputs = (0, 1)
    if pad_value is not None:
        tensors.append(_t(len(tensors), "constant_values", (), dt, np.array(pad_value, dt), **q_x))
        pad_inputs += (len(tensors) - 1,)
    name = "PAD" if pad_value is None else "PADV2"
    ops = [OperatorDef(0, CODES[name], name, pad_inputs, (2,), {}),
           OperatorDef(1, CODES[kind], kind, (2, 3, 4), (5,), conv)]
    outputs = (5,) + ((2,) if padded_output else ())
    if second_reader:  # a 1x1 CONV_2D of the padded tensor
        w1 = rng.integers(-127, 128, (2, 1, 1, cp)).astype(np.int8)
        tensors += [_t(len(tensors), "w1", w1.shape, np.int8, w1, [0.01, 0.02], [0, 0]),
                    _t(len(tensors) + 1, "y1", (1, hp, wp, 2), dt, **q_y)]
        ops.append(OperatorDef(2, CODES["CONV_2D"], "CONV_2D", (2, len(tensors) - 2), (len(tensors) - 1,),
                               dict(conv, stride_h=1, stride_w=1, padding=1)))
        outputs += (len(tensors) - 1,)
    return ModelDef(3, [SubgraphDef(0, "main", tensors, (0,), outputs, ops)], None)


def _fused_ops(model):
    return len(model._exec.trace_steps[0]) - len(model._exec.steps[0])


def _assert_fused_is_traced(mdef, engine, accumulator=None, dtype=np.int8):
    """Every tensor of the fused run equals the trace's, on 4 samples one by one and as one batch of 4."""
    model = Model(mdef, engine, accumulator)
    info = np.iinfo(dtype)
    xs = np.random.default_rng(5).integers(info.min, info.max + 1, (4, 1, 9, 10, 4)).astype(dtype)
    traces = [{e.tensor: e.value for e in model.trace(x)} for x in xs]
    for k, x in enumerate(xs):
        outs, seen = recorded_run(model, x)
        for i, v in seen.items():
            assert np.array_equal(v, traces[k][i]), f"sample {k}: tensor {i} differs from the trace"
        assert all(np.array_equal(o, traces[k][info_.index]) for o, info_ in zip(outs, model.outputs))
    batched, seen = recorded_run(model, xs, batch=4)
    for i, v in seen.items():
        for k in range(4):
            assert np.array_equal(v[k], traces[k][i][0]), f"batch sample {k}: tensor {i} differs"
    return model


@pytest.mark.parametrize("engine", ["tflm", "litert", "xnnpack"])
@pytest.mark.parametrize("kind", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_pad_of_the_zero_point_then_a_valid_conv_fuses_and_gives_every_traced_tensor(kind, engine):
    m = _assert_fused_is_traced(pad_conv_model(kind), engine)
    assert _fused_ops(m) == 1


@pytest.mark.parametrize("kind", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_padv2_of_the_zero_point_and_uneven_pads_fuse(kind):
    mdef = pad_conv_model(kind, pads=((0, 0), (2, 0), (3, 1), (0, 0)), pad_value=3)
    assert _fused_ops(_assert_fused_is_traced(mdef, "litert")) == 1


@pytest.mark.parametrize("engine", ["tflm", "litert"])
def test_16x8_pad_then_conv_fuses(engine):
    m = _assert_fused_is_traced(pad_conv_model("CONV_2D", wide=True), engine, dtype=np.int16)
    assert _fused_ops(m) == 1


@pytest.mark.parametrize("kw", [dict(pad_value=4), dict(pads=((0, 0), (1, 1), (1, 1), (0, 2))), dict(padding=0),
                                dict(padded_output=True), dict(second_reader=True)],
                         ids=["pad-value-not-zero-point", "channels-padded", "same-conv", "padded-returned",
                              "padded-read-twice"])
@pytest.mark.parametrize("kind", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_a_pad_that_is_not_the_convs_own_padding_is_not_fused(kind, kw):
    m = _assert_fused_is_traced(pad_conv_model(kind, **kw), "litert")
    assert _fused_ops(m) == 0


def test_no_pad_fusion_under_a_simulated_accumulator():
    m = _assert_fused_is_traced(pad_conv_model(), "litert", accumulator=Accumulator(20, overflow="saturate"))
    assert _fused_ops(m) == 0


@pytest.mark.parametrize("record,engine", [("tflm", "tflm"), ("litert_ref", "litert"), ("litert_default", "xnnpack")])
def test_mobilenet_v2_fused_run_gives_the_engines_outputs(record, engine):
    """MobileNetV2 pads explicitly before every 3x3 conv: all 18 PADs fuse, and ``run`` gives the golden's
    outputs (recorded from the real engines by tests/golden/make_golden_real_models.py)."""
    path = os.path.join(ROOT, "..", "shared", "models", "tflite-micro", MOBILENET + ".tflite")
    if not os.path.isfile(path):
        pytest.skip(f"{MOBILENET}.tflite is not on this machine")
    g = load_real_model(os.path.join(ROOT, "tests", "golden", "real_models", MOBILENET + ".npz"))
    run = g.engines[record]
    if run.status != "ok":
        pytest.skip(f"the real engine {run.status} on this model")
    m = load_model(path, engine=engine)
    assert _fused_ops(m) == 18
    for f in range(g.meta["frames"]):
        for k, out in enumerate(m.run([x[f] for x in g.inputs])):
            assert np.array_equal(out, run.outputs[k][f]), f"frame {f} output {k} differs from {record}"
