"""The integer LSTM (dspsim.kernels.recurrent.lstm, UNIDIRECTIONAL_SEQUENCE_LSTM) against the oracle, its Prepare
rules per engine, its state across frames in a real model, and bad input. Bit-exactness against TFLM and
LiteRT on the three real LSTM models is tests/tflite/test_real_models.py (-k "lstm or dtln")."""
from __future__ import annotations

import dataclasses
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import oracle as ref
from dspsim.fixedpoint import quantize_multiplier
from dspsim.kernels import LstmArithmetic, LstmParams, litert_lstm_params, lstm, tflm_lstm_params
from dspsim.catalog import random_codes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "..", "shared", "models", "tflite-micro")
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))


def _scales(rng, weight_scale, cell_scale, clip, zh=-3):
    return dict(input_scale=0.06, input_zero_point=int(rng.integers(-128, 128)),
                input_weight_scales=list(weight_scale * rng.uniform(0.5, 1.5, 4)),
                recurrent_weight_scales=list(weight_scale * rng.uniform(0.5, 1.5, 4)),
                output_state_scale=0.0078, output_state_zero_point=zh, cell_state_scale=cell_scale, cell_clip=clip)


def _params(rng, arithmetic, weight_scale=0.02, cell_scale=2.0**-11, clip=10.0):
    s = _scales(rng, weight_scale, cell_scale, clip, zh=int(rng.integers(-128, 128)))
    if arithmetic == "tflm":
        return tflm_lstm_params(**s)
    return litert_lstm_params(**s, hidden_scale=s["output_state_scale"] * rng.uniform(0.9, 1.1),
                              hidden_zero_point=int(rng.integers(-128, 128)))


def _case(rng, b, t, i, n, params, bias_bits=16):
    return dict(x=random_codes(rng, (b, t, i), np.int8), input_weights=random_codes(rng, (4, n, i), np.int8),
                recurrent_weights=random_codes(rng, (4, n, n), np.int8),
                bias=rng.integers(-2**bias_bits, 2**bias_bits, (4, n)).astype(np.int32),
                output_state=random_codes(rng, (b, n), np.int8), cell_state=random_codes(rng, (b, n), np.int16),
                params=params)


def _agree(case):
    got, want = lstm(**case), ref.lstm_oracle(**case)
    for g, w, dtype in zip(got, want, (np.int8, np.int8, np.int16)):
        assert g.dtype == dtype and np.array_equal(g, w)
    return got


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), arithmetic=st.sampled_from(["tflm", "litert"]), b=st.integers(1, 2),
       t=st.integers(1, 4), i=st.integers(1, 6), n=st.integers(1, 5),
       weight_scale=st.sampled_from([0.002, 0.02, 0.1, 0.5]), power=st.integers(-15, -9),
       clip=st.sampled_from([0.0, 0.001, 0.5, 10.0]), bias_bits=st.integers(4, 24))
def test_lstm_matches_the_oracle(seed, arithmetic, b, t, i, n, weight_scale, power, clip, bias_bits):
    rng = np.random.default_rng(seed)
    params = _params(rng, arithmetic, weight_scale, 2.0**power, clip)
    _agree(_case(rng, b, t, i, n, params, bias_bits))


@pytest.mark.parametrize("arithmetic", ["tflm", "litert"])
def test_saturating_gates_and_clipped_cells_match_the_oracle(arithmetic):
    """Weights 10x too large: gate parts beyond int16, sigmoid/tanh saturated, the cell clip hit."""
    rng = np.random.default_rng(7)
    case = _case(rng, 2, 6, 8, 6, _params(rng, arithmetic, weight_scale=2.0, clip=0.5), bias_bits=24)
    _, _, cell = _agree(case)
    assert np.max(np.abs(cell.astype(int))) == case["params"].cell_clip == 1024  # 0.5 / 2^-11


def test_every_int8_input_code_reaches_the_gates():
    rng = np.random.default_rng(8)
    for arithmetic in ("tflm", "litert"):
        case = _case(rng, 1, 256, 1, 3, _params(rng, arithmetic))
        case["x"] = np.arange(-128, 128, dtype=np.int8).reshape(1, 256, 1)
        _agree(case)


def test_tflm_recurrent_part_is_clamped_before_the_gate_sum_litert_after():
    """One cell, x = 0, multipliers that are exactly 1 (2^30 with a left shift of 1). The forget gate's
    input part is its bias, -32000; its recurrent part is 1 * 40000 (multiplier 40000 * 2^15, left shift
    16). TFLM saturates both FullyConnected outputs to int16 before the saturating add (-32000 + 32767 =
    767), LiteRT adds the raw second product (8000). The input gate's cell gate is 0, so the new cell is
    c * sigmoid(pre / 4096) alone."""
    one = (1 << 30, 1)
    cells = {}
    for arithmetic in ("tflm", "litert"):
        s = {**_scales(np.random.default_rng(0), 0.02, 2.0**-11, 0.0, zh=0), "input_zero_point": 0}
        p = tflm_lstm_params(**s) if arithmetic == "tflm" else \
            litert_lstm_params(**s, hidden_scale=0.0078, hidden_zero_point=0)
        p = dataclasses.replace(p, input_multiplier=(one[0],) * 4, input_shift=(one[1],) * 4,
                                recurrent_multiplier=(one[0], 40000 << 15, one[0], one[0]),
                                recurrent_shift=(one[1], 16, one[1], one[1]))
        case = dict(x=np.zeros((1, 1, 1), np.int8), input_weights=np.zeros((4, 1, 1), np.int8),
                    recurrent_weights=np.array([0, 1, 0, 0], np.int8).reshape(4, 1, 1),
                    bias=np.array([[0], [-32000], [0], [0]], np.int32), output_state=np.ones((1, 1), np.int8),
                    cell_state=np.full((1, 1), 16000, np.int16), params=p)
        cells[arithmetic] = int(_agree(case)[2][0, 0])
    assert abs(cells["tflm"] - 16000 / (1 + math.exp(-767 / 4096))) < 20
    assert abs(cells["litert"] - 16000 / (1 + math.exp(-8000 / 4096))) < 20


# ------------------------------------------------------------------ Prepare: the two engines' parameters
def test_power_of_two_scales_give_the_same_multipliers_in_both_engines():
    s = dict(input_scale=2.0**-7, input_zero_point=0, input_weight_scales=[2.0**-8] * 4,
             recurrent_weight_scales=[2.0**-9] * 4, output_state_scale=2.0**-7, output_state_zero_point=0,
             cell_state_scale=2.0**-11)
    a, b = tflm_lstm_params(**s), litert_lstm_params(**s, hidden_scale=2.0**-7, hidden_zero_point=0)
    assert (a.input_multiplier, a.input_shift, a.hidden_multiplier) == (b.input_multiplier, b.input_shift,
                                                                        b.hidden_multiplier)


def test_litert_rounds_the_effective_scales_to_float32_tflm_keeps_double():
    """micro_speech_lstm's hidden scale: TFLM QuantizeMultiplier(2^-30 / s), LiteRT that of its float32."""
    s_h = float(np.float32(0.007843137718737125))
    s = dict(input_scale=0.6114379167556763, input_zero_point=-128, input_weight_scales=[0.0034976] * 4,
             recurrent_weight_scales=[0.0045481] * 4, output_state_scale=s_h, output_state_zero_point=-1,
             cell_state_scale=2.0**-11)
    a, b = tflm_lstm_params(**s), litert_lstm_params(**s, hidden_scale=s_h, hidden_zero_point=-1)
    assert a.hidden_multiplier == quantize_multiplier(2.0**-30 / s_h)[0]
    assert b.hidden_multiplier == quantize_multiplier(float(np.float32(2.0**-30 / s_h)))[0]
    w_s_in = float(np.float32(0.0034976)) * float(np.float32(0.6114379167556763))
    assert a.input_multiplier[0] == quantize_multiplier(w_s_in * 4096)[0]
    assert b.input_multiplier[0] == quantize_multiplier(float(np.float32(w_s_in)) * 4096)[0]


def test_cell_mul_parameters_of_tflm():
    p = tflm_lstm_params(**_scales(np.random.default_rng(0), 0.02, 2.0**-11, 10.0))
    assert (p.forget_cell_multiplier, p.forget_cell_shift) == (1 << 30, -14)  # 2^-15 * s_c / s_c
    assert (p.input_cell_multiplier, p.input_cell_shift) == (1 << 30, -18)  # 2^-30 / 2^-11 = 2^-19
    assert p.cell_clip == 20480 and p.cell_scale_power == -11


def test_a_cell_clip_below_one_step_clamps_the_tflm_cell_to_zero_and_is_ignored_by_litert():
    rng = np.random.default_rng(0)
    s = _scales(rng, 0.02, 2.0**-11, 1e-4)
    assert tflm_lstm_params(**s).cell_clip == 0
    assert litert_lstm_params(**s, hidden_scale=0.0078, hidden_zero_point=0).cell_clip is None


def test_a_cell_scale_that_is_not_a_power_of_two_is_rounded_by_tflm_and_zeroes_litert():
    """TFLM ignores CheckedLog2's verdict and rounds; LiteRT's PopulateQuantizedLstmParams8x8_16 returns at
    the failed check and Prepare ignores the status: everything after it stays zero (the clip was set)."""
    s = _scales(np.random.default_rng(0), 0.02, 0.0005, 10.0)  # log2 = -10.97
    assert tflm_lstm_params(**s).cell_scale_power == -11
    p = litert_lstm_params(**s, hidden_scale=0.0078, hidden_zero_point=5)
    assert p.input_multiplier == p.recurrent_multiplier == (0, 0, 0, 0) and p.hidden_multiplier == 0
    assert (p.cell_scale_power, p.hidden_zero_point, p.cell_clip) == (0, 0, 20000)
    rng = np.random.default_rng(2)
    out, h, _ = _agree(_case(rng, 1, 3, 4, 3, p))
    assert not out.any() and not h.any()  # hidden = MBQM(., 0, 0) + 0


def test_litert_tanh_outside_its_integer_bits_leaves_the_input_gate_in_place():
    """A cell scale of 2^-8 asks ApplyTanh for 7 integer bits: its switch writes nothing, so the hidden
    state is computed from whatever the buffer held, the step's input gate."""
    rng = np.random.default_rng(3)
    _agree(_case(rng, 2, 4, 5, 3, _params(rng, "litert", cell_scale=2.0**-8)))


def test_tflm_cell_gate_stays_linear_without_a_tanh_activation():
    rng = np.random.default_rng(4)
    p = tflm_lstm_params(**_scales(rng, 0.02, 2.0**-11, 10.0), cell_gate_tanh=False)
    case = _case(rng, 1, 4, 5, 3, p)
    linear = _agree(case)
    assert not np.array_equal(linear[2], lstm(**{**case, "params": dataclasses.replace(p, cell_gate_tanh=True)})[2])


# ------------------------------------------------------------------ state in a model
def test_model_state_persists_across_frames_and_reset_clears_it():
    path = os.path.join(MODELS, "dtln_noise_suppression.tflite")
    if not os.path.isfile(path):
        pytest.skip("dtln_noise_suppression.tflite is not on this machine")
    from golden_io import load_real_model

    from dspsim.tflite import load_model

    g = load_real_model(os.path.join(ROOT, "tests", "golden", "real_models", "dtln_noise_suppression.npz"))
    x0 = g.inputs[0][0]
    for engine in ("tflm", "litert"):
        m = load_model(path, engine=engine)
        first = m.run([x0])[0]
        again = m.run([x0])[0]
        assert not np.array_equal(first, again)  # the second frame starts from the first one's state
        m.reset()
        assert np.array_equal(m.run([x0])[0], first)


EDIT_GOLDENS = sorted((Path(ROOT) / "tests" / "golden" / "lstm_edits").glob("*.npz"))


@pytest.mark.parametrize("engine,golden_engine", [("tflm", "tflm"), ("litert", "litert_ref"),
                                                  ("xnnpack", "litert_default")])
@pytest.mark.parametrize("path", EDIT_GOLDENS, ids=[p.stem for p in EDIT_GOLDENS])
def test_edited_models_match_the_engines_on_every_tensor_of_every_frame(path, engine, golden_engine):
    """trained_lstm_int8 with one edit of tests/golden/_lstm_edits.py (cell clip hit, saturated gates,
    another cell scale, a cell scale that is not a power of two, a RELU fused activation), recorded by the
    real engines (make_golden_lstm_edits.py); the edit is re-applied here to the shared model."""
    from _lstm_edits import EDITS, MODEL, apply
    from golden_io import load_real_model

    from dspsim.tflite import load_model

    base = os.path.join(MODELS, f"{MODEL}.tflite")
    if not os.path.isfile(base):
        pytest.skip(f"{MODEL}.tflite is not on this machine")
    g = load_real_model(str(path))
    run = g.engines[golden_engine]
    assert run.status == "ok"
    with open(base, "rb") as f:
        model = load_model(apply(f.read(), EDITS[path.stem][1]), engine=engine)
    bad = []
    for frame in range(g.meta["frames"]):
        trace = model.trace([x[frame] for x in g.inputs])
        produced = {e.tensor: e.value for e in trace if e.op_index >= 0 and "(state write)" not in e.name}
        if not np.array_equal(produced[model.outputs[0].index], run.outputs[0][frame]):
            bad.append(f"frame {frame} output")
        for index in g.tensors if run.sha256 is not None else ():
            if not g.tensor_matches(golden_engine, index, frame, produced[index]):
                bad.append(f"frame {frame} tensor {index}")
    assert not bad, bad[:5]


# ------------------------------------------------------------------ bad input
def test_bad_arguments_are_refused_with_the_function_named():
    rng = np.random.default_rng(1)
    case = _case(rng, 1, 2, 3, 2, _params(rng, "tflm"))
    for key, value, exc, rule in (
            ("x", case["x"].astype(np.uint8), TypeError, "x must have dtype"),
            ("x", case["x"][0], ValueError, "x must have rank 3"),
            ("input_weights", case["input_weights"][:3], ValueError, r"input_weights must have shape \(4, N, I\)"),
            ("recurrent_weights", case["recurrent_weights"][:, :1], ValueError, "recurrent_weights must have shape"),
            ("bias", case["bias"].astype(np.int64), ValueError, "bias must be int32"),
            ("cell_state", case["cell_state"].astype(np.int8), TypeError, "cell_state must have dtype"),
            ("output_state", case["output_state"][:, :1], ValueError, "output_state must have shape"),
            ("params", {"a": 1}, TypeError, "params must be an LstmParams")):
        with pytest.raises(exc, match=f"lstm: {rule}"):
            lstm(**{**case, key: value})
    bad = dataclasses.replace(case["params"], input_shift=(0, 0, 0))
    with pytest.raises(ValueError, match="lstm: params.input_shift must hold 4 values"):
        lstm(**{**case, "params": bad})
    bad = dataclasses.replace(case["params"], forget_cell_multiplier=None)
    with pytest.raises(ValueError, match="lstm: TFLM arithmetic needs"):
        lstm(**{**case, "params": bad})
    bad = dataclasses.replace(case["params"], arithmetic=LstmArithmetic.LITERT, cell_scale_power=-31)
    with pytest.raises(ValueError, match=r"lstm: params.cell_scale_power must be an int in \[-30, 15\]"):
        lstm(**{**case, "params": bad})


def test_scale_builders_refuse_bad_scales():
    s = _scales(np.random.default_rng(0), 0.02, 2.0**-11, 10.0)
    with pytest.raises(ValueError, match="tflm_lstm_params: input_weight_scales must be 4"):
        tflm_lstm_params(**{**s, "input_weight_scales": [0.1] * 3})
    with pytest.raises(ValueError, match="tflm_lstm_params: cell_state_scale must be a finite positive"):
        tflm_lstm_params(**{**s, "cell_state_scale": -1.0})
    with pytest.raises(ValueError, match="litert_lstm_params: hidden_scale must be a finite positive"):
        litert_lstm_params(**s, hidden_scale=math.inf, hidden_zero_point=0)


def test_params_are_a_frozen_record():
    p = _params(np.random.default_rng(0), "litert")
    assert isinstance(p, LstmParams) and p.arithmetic == LstmArithmetic.LITERT
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.cell_clip = 3


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 2), t=st.integers(1, 4), i=st.integers(1, 6),
       n=st.integers(1, 5), weight_scale=st.sampled_from([0.002, 0.02, 0.1, 0.5]), power=st.integers(-15, -9),
       clip=st.sampled_from([0.0, 0.5, 10.0]), bias_bits=st.integers(4, 40))
def test_int16_lstm_matches_the_oracle(seed, b, t, i, n, weight_scale, power, clip, bias_bits):
    """TFLM's 16x8 LSTM: int16 input and hidden state (zero points 0), int64 biases and gate sums, the int64 MBQM;
    the extremes of the int16 codes and 40-bit biases included."""
    rng = np.random.default_rng(seed)
    s = dict(_scales(rng, weight_scale, 2.0**power, clip, zh=0), input_zero_point=0,
             input_scale=3.0e-5, output_state_scale=2.1e-5)
    case = dict(x=random_codes(rng, (b, t, i), np.int16), input_weights=random_codes(rng, (4, n, i), np.int8),
                recurrent_weights=random_codes(rng, (4, n, n), np.int8),
                bias=rng.integers(-2**bias_bits, 2**bias_bits, (4, n)).astype(np.int64),
                output_state=random_codes(rng, (b, n), np.int16), cell_state=random_codes(rng, (b, n), np.int16),
                params=tflm_lstm_params(**s))
    got, want = lstm(**case), ref.lstm_oracle(**case)
    for g, w, dtype in zip(got, want, (np.int16, np.int16, np.int16)):
        assert g.dtype == dtype and np.array_equal(g, w)


def test_int16_lstm_refuses_litert_arithmetic_and_an_int32_bias():
    rng = np.random.default_rng(5)
    case = _case(rng, 1, 2, 3, 2, _params(rng, "litert"))
    case.update(x=case["x"].astype(np.int16), output_state=case["output_state"].astype(np.int16))
    with pytest.raises(ValueError, match="lstm: bias must be int64"):
        lstm(**case)
    case["bias"] = case["bias"].astype(np.int64)
    with pytest.raises(ValueError, match="lstm: int16 activations take TFLM arithmetic"):
        lstm(**case)
