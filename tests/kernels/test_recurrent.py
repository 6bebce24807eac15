"""SVDF (dspsim.kernels.recurrent.svdf) against the oracle, and against TFLM and LiteRT on the keyword model."""
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import oracle as ref
from dspsim.kernels import svdf
from dspsim.catalog import random_codes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEYWORD = os.path.join(ROOT, "..", "shared", "models", "tflite-micro", "keyword_scrambled.tflite")


def _case(rng, b, i, f, m, rank, dtype, zs):
    return dict(x=random_codes(rng, (b, i), np.int8), weights_feature=random_codes(rng, (f, i), np.int8),
                weights_time=random_codes(rng, (f, m), dtype), bias=rng.integers(-2**24, 2**24, f // rank).astype(np.int32),
                state=random_codes(rng, (b, f * m), dtype), rank=rank, input_zero_point=int(rng.integers(-128, 128)),
                state_zero_point=zs, output_zero_point=int(rng.integers(-128, 128)),
                feature_multiplier=int(rng.integers(1 << 30, 1 << 31)), feature_shift=int(rng.integers(-20, 3)),
                output_multiplier=int(rng.integers(1 << 30, 1 << 31)), output_shift=int(rng.integers(-31, -5)))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 3), i=st.integers(1, 9), units=st.integers(1, 4),
       rank=st.integers(1, 3), m=st.integers(1, 5), int8_state=st.booleans(),
       activation_range=st.sampled_from([None, (-(1 << 15), (1 << 15) - 1), (-3, 5)]))
def test_svdf_matches_the_oracle(seed, b, i, units, rank, m, int8_state, activation_range):
    rng = np.random.default_rng(seed)
    dtype = np.int8 if int8_state else np.int16
    zs = int(rng.integers(-128, 128)) if int8_state else 0
    case = _case(rng, b, i, units * rank, m, rank, dtype, zs)
    case["activation_range"] = activation_range
    (out, st_new), (want, want_st) = svdf(**case), ref.svdf_oracle(**case)
    assert out.dtype == np.int8 and np.array_equal(out, want)
    assert st_new.dtype == dtype and np.array_equal(st_new, want_st)


def test_svdf_state_shifts_by_one_slot_per_frame():
    rng = np.random.default_rng(1)
    case = _case(rng, 1, 4, 2, 3, 1, np.int16, 0)
    _, s1 = svdf(**case)
    assert np.array_equal(s1.reshape(2, 3)[:, :2], case["state"].reshape(2, 3)[:, 1:])  # the oldest slot drops out


def test_svdf_int8_state_wraps_when_the_zero_point_carries_it_out():
    """TFLM clamps to int8 BEFORE adding the state zero point; the C conversion then wraps."""
    rng = np.random.default_rng(2)
    case = _case(rng, 1, 1, 1, 1, 1, np.int8, 100)
    case.update(x=np.array([[127]], np.int8), weights_feature=np.array([[127]], np.int8), input_zero_point=-128,
                feature_multiplier=1 << 30, feature_shift=0)  # a = round(255 * 127 / 2) clamps to 127
    _, s = svdf(**case)
    assert int(s.reshape(-1)[-1]) == ((100 + 127 + 128) % 256) - 128


def test_cmsis_nn_int8_state_stores_the_activation_clamped_to_int16_and_wrapped():
    """arm_svdf_s8: no zero point, the int16 clamp, then the int8 store truncates (wraps mod 256)."""
    rng = np.random.default_rng(3)
    case = _case(rng, 1, 1, 1, 1, 1, np.int8, 0)
    case.update(x=np.array([[127]], np.int8), weights_feature=np.array([[127]], np.int8), input_zero_point=-128,
                feature_multiplier=1 << 30, feature_shift=0, activation_range=(-(1 << 15), (1 << 15) - 1))
    _, s = svdf(**case)  # a = round(255 * 127 / 2) = 16193, stored as its low byte
    assert int(s.reshape(-1)[-1]) == ((16193 + 128) % 256) - 128
    with pytest.raises(ValueError, match="svdf: activation_range must have lo <= hi"):
        svdf(**{**case, "activation_range": (5, -5)})
    with pytest.raises(TypeError, match="svdf: activation_range must be a"):
        svdf(**{**case, "activation_range": 7})


def test_svdf_refuses_mismatched_shapes_and_ranks():
    rng = np.random.default_rng(3)
    case = _case(rng, 1, 4, 4, 2, 2, np.int16, 0)
    with pytest.raises(ValueError, match="svdf: rank"):
        svdf(**{**case, "rank": 3})
    with pytest.raises(ValueError, match="svdf: state"):
        svdf(**{**case, "state": case["state"][:, :3]})
    with pytest.raises(TypeError, match="svdf: x"):
        svdf(**{**case, "x": case["x"].astype(np.int16)})


@pytest.mark.skipif(not os.path.isfile(KEYWORD), reason="../shared/models/tflite-micro is not beside the repository")
@pytest.mark.parametrize("engine,golden_engine", [("tflm", "tflm"), ("litert", "litert_ref")])
def test_keyword_model_svdf_layers_match_the_engines_over_24_frames(engine, golden_engine):
    """Every tensor up to the final softmax, 24 frames with the SVDF states carried."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
    from golden_io import load_real_model

    from dspsim.tflite.flatbuffer import read_model
    from dspsim.tflite.model import Model

    g = load_real_model(os.path.join(ROOT, "tests", "golden", "real_models", "keyword_scrambled.npz"))
    mdef = read_model(open(KEYWORD, "rb").read())
    ops = mdef.main.operators
    k = next(i for i, o in enumerate(ops) if o.name == "SOFTMAX")
    mdef.main.operators, mdef.main.outputs = ops[:k], (ops[k - 1].outputs[0],)
    model = Model(mdef, engine)
    checked = 0
    for frame in range(g.meta["frames"]):
        for e in model.trace([x[frame] for x in g.inputs]):
            if e.op_index >= 0 and e.tensor in g.tensors and "(state write)" not in e.name:
                assert g.tensor_matches(golden_engine, e.tensor, frame, e.value), (frame, e.op_index, e.op)
                checked += 1
    assert checked == 13 * g.meta["frames"]
