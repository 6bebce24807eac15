"""Accumulator-level vectors of the recurrent operators (issue 30 item 1): UNIDIRECTIONAL_SEQUENCE_LSTM's gate FCs,
gates, cell and hidden state per time step, SVDF's feature and time FCs, recorded by the kernels that compute the
outputs, on the state each operator started from (``Trace.state_before``), through ``--stages`` and
``--partial-sums``."""
import json
from pathlib import Path

import numpy as np
import pytest

from dspsim import cli
from dspsim.harness import stages as stg
from dspsim.harness.export_model import FORMATS, export_frames, export_model
from dspsim.harness.run_model import _random_inputs
from dspsim.kernels.recurrent.lstm import (
    LSTM_CELL_STAGES, LSTM_GATE_STAGES, _clamp16, _gate_fc, _sigmoid, _tanh_gate, litert_lstm_params, lstm,
    lstm_stages, tflm_lstm_params,
)
from dspsim.kernels.nonlinear.int16 import SIGMOID_TABLE_UINT16
from dspsim.kernels.recurrent.svdf import svdf_stages
from dspsim.tflite import load_model
from shared_models import tflite_micro_model
from stage_exports import assert_exported_stages

OPS = Path(__file__).parents[1] / "golden" / "ops"
SVDF_MODELS = ["svdf_int16_state", "svdf_int16_state_relu", "svdf_int16_state_relu_r2", "svdf_int8_state_relu"]
SVDF_ENGINES = ["tflm", "litert", "tflm-cmsis-nn", "tflm-cmsis-nn-m55"]


def _wrap32(a):
    return (np.asarray(a, np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)


def _lstm_case(arithmetic, seed=3, b=2, t=5, i=6, n=4):
    rng = np.random.default_rng(seed)
    scales = dict(input_scale=0.05, input_zero_point=5, input_weight_scales=[0.02, 0.03, 0.025, 0.015],
                  recurrent_weight_scales=[0.03, 0.02, 0.02, 0.04], output_state_scale=2.0**-7,
                  output_state_zero_point=-3, cell_state_scale=2.0**-11)
    params = tflm_lstm_params(**scales) if arithmetic == "tflm" else \
        litert_lstm_params(**scales, hidden_scale=2.0**-7, hidden_zero_point=-3)
    x = rng.integers(-128, 128, (b, t, i)).astype(np.int8)
    w_in = rng.integers(-128, 128, (4, n, i)).astype(np.int8)
    w_rec = rng.integers(-128, 128, (4, n, n)).astype(np.int8)
    bias = rng.integers(-40000, 40000, (4, n)).astype(np.int32)
    h0 = rng.integers(-128, 128, (b, n)).astype(np.int8)
    c0 = rng.integers(-20000, 20000, (b, n)).astype(np.int16)
    return (x, w_in, w_rec, bias, h0, c0, params)


@pytest.mark.parametrize("arithmetic", ["tflm", "litert"])
def test_lstm_stages_end_at_its_outputs_and_each_step_recomputes_with_the_kernels_own_functions(arithmetic):
    case = _lstm_case(arithmetic)
    x, w_in, w_rec, bias, h0, c0, p = case
    out, h, c, st = lstm_stages(*case)
    for got, want in zip((out, h, c), lstm(*case)):
        assert np.array_equal(got, want)
    assert set(st) == set(LSTM_GATE_STAGES + LSTM_CELL_STAGES)
    assert np.array_equal(st["hidden"], out) and np.array_equal(st["hidden"][:, -1], h)
    assert np.array_equal(st["cell"][:, -1], c)
    litert = arithmetic == "litert"
    h_prev = np.concatenate([h0[:, None], out[:, :-1]], axis=1).astype(np.int64)  # the state each step reads
    want_in = np.einsum("kjc,btc->btkj", w_in.astype(np.int64), x.astype(np.int64) - p.input_zero_point)
    want_rec = np.einsum("kjc,btc->btkj", w_rec.astype(np.int64), h_prev - p.output_state_zero_point)
    assert np.array_equal(st["in_acc"], _wrap32(want_in)) and np.array_equal(st["rec_acc"], _wrap32(want_rec))
    assert np.array_equal(st["in_acc_bias"], _wrap32(st["in_acc"] + bias[None, None]))
    for (bi, ti, k, j), pre in np.ndenumerate(st["pre"]):
        req_in = _gate_fc(st["in_acc_bias"][bi, ti, k, j], p.input_multiplier[k], p.input_shift[k], False)
        req_rec = _gate_fc(st["rec_acc"][bi, ti, k, j], p.recurrent_multiplier[k], p.recurrent_shift[k], False)
        assert (req_in, req_rec) == (st["in_requant"][bi, ti, k, j], st["rec_requant"][bi, ti, k, j])
        assert pre == _clamp16(_clamp16(req_in) + (req_rec if litert else _clamp16(req_rec)))
        gate = (_tanh_gate if k == 2 else _sigmoid)(pre, litert, SIGMOID_TABLE_UINT16)
        assert st["gate"][bi, ti, k, j] == gate, (bi, ti, k, j)
    assert np.array_equal(st["hidden"], np.clip(st["hidden_requant"] + p.hidden_zero_point, -128, 127))
    assert np.array_equal(st["cell"], np.clip(st["forget_cell"] + st["input_cell"], -32768, 32767))


def _lstm_op(m):
    return next(k for k, n in m.operators if n == "UNIDIRECTIONAL_SEQUENCE_LSTM")


def _frames_agree(m, frames=3):
    """Over ``frames`` frames (the state carried): the last step's captured hidden state is the op's output and its
    cell state the one the op wrote; returns the last frame's stage arrays and trace."""
    k = _lstm_op(m)
    time_major = m.operator_params(k)["time_major"]
    for frame in range(frames):
        trace = m.trace(_random_inputs(m, frame))
        arrays = stg.capture(m, trace)
        out = next(e.value for e in trace if e.op_index == k and e.tensor == m.outputs_of(k)[0])
        assert np.array_equal(arrays[f"op{k}_hidden"], out), frame
        last = arrays[f"op{k}_cell"][-1] if time_major else arrays[f"op{k}_cell"][:, -1]
        cell = m.variables().get(m.operator_inputs(k)[19])
        if m.operator_params(k).get("state") is None:  # the op wrote its cell state
            assert np.array_equal(last.reshape(-1), cell.reshape(-1)), frame
    return arrays, trace


@pytest.mark.parametrize("name", ["i16v_lstm_batch_major", "i16v_lstm_time_major_clip"])
def test_int16_lstm_stages_follow_the_state_the_op_started_from_frame_after_frame(name):
    m = load_model(OPS / f"{name}.tflite", engine="tflm")
    k = _lstm_op(m)
    arrays, trace = _frames_agree(m)
    before = trace.state_before[k]
    assert set(before) == {m.operator_inputs(k)[18], m.operator_inputs(k)[19]}
    assert np.any(before[m.operator_inputs(k)[19]] != 0)  # frame 3 starts from frame 2's cell, not the reset state
    m.reset()
    fresh = stg.capture(m, m.trace(_random_inputs(m, 2)))
    assert not np.array_equal(fresh[f"op{k}_rec_acc"], arrays[f"op{k}_rec_acc"])


@pytest.mark.filterwarnings("ignore::dspsim.engines.EngineDefectWarning")
@pytest.mark.parametrize("engine", ["tflm", "litert", "tflm-cmsis-nn"])
def test_int8_lstm_stages_give_a_real_models_output_under_each_engine(engine):
    path = tflite_micro_model("trained_lstm_int8.tflite")
    if path is None:
        pytest.skip("needs ../shared/models")
    m = load_model(path, engine=engine)
    arrays, trace = _frames_agree(m)
    k = _lstm_op(m)
    flat = int(np.prod(m.stages_shape(k))) - 1  # the last step's output gate, last unit: int32 sums
    arrays = stg.capture(m, trace, (k, flat))
    ps, n_in = arrays[f"op{k}_taps_partial_sum"], np.count_nonzero(arrays[f"op{k}_taps_kind"] == 0)
    assert ps[n_in - 1] == arrays[f"op{k}_in_acc"].reshape(-1)[flat]
    assert ps[-1] == arrays[f"op{k}_rec_acc"].reshape(-1)[flat]


def test_lstm_partial_sums_address_step_gate_unit_and_run_the_input_then_the_recurrent_fc():
    m = load_model(OPS / "i16v_lstm_time_major_clip.tflite", engine="tflm")  # time major: (t, b, gate, unit)
    k = _lstm_op(m)
    shape = m.stages_shape(k)
    t, b, gate, unit = shape[0] - 1, shape[1] - 1, 2, 1
    op, flat, multi = stg.parse_partial_sums(f"{k}:{t},{b},{gate},{unit}", m)
    assert (op, multi) == (k, (t, b, gate, unit)) and flat == np.ravel_multi_index(multi, shape)
    m.trace(_random_inputs(m, 0))  # the second frame starts from a state: the recurrent taps read it
    trace = m.trace(_random_inputs(m, 1))
    arrays = stg.capture(m, trace, (k, flat))
    taps = {f: arrays[f"op{k}_taps_{f}"] for f in stg.TAP_FIELDS}
    n_in = m.tensor_info(m.operator_inputs(k)[0]).shape[2]
    n_cell = shape[3]
    assert taps["kind"].tolist() == [0] * n_in + [3] * n_cell
    assert taps["partial_sum"][n_in - 1] == arrays[f"op{k}_in_acc"][t, b, gate, unit]
    assert taps["partial_sum"][-1] == arrays[f"op{k}_rec_acc"][t, b, gate, unit]
    assert np.array_equal(taps["x"][n_in:], arrays[f"op{k}_hidden"][t - 1, b])  # the previous step's hidden state
    x = next(e.value for e in trace if e.op_index == -1)
    assert np.array_equal(taps["x"][:n_in], x[t, b])


def _svdf(name, engine):
    try:
        return load_model(OPS / f"{name}.tflite", engine=engine)
    except ValueError as exc:  # LiteRT refuses a SVDF without RELU and one with an int8 state
        pytest.skip(str(exc)[:120])


@pytest.mark.filterwarnings("ignore::dspsim.engines.EngineDefectWarning")
@pytest.mark.parametrize("engine", SVDF_ENGINES)
@pytest.mark.parametrize("name", SVDF_MODELS)
def test_svdf_requant_plus_zero_point_clamped_is_its_output_and_the_state_entry_is_stored(name, engine):
    m = _svdf(name, engine)
    k = next(k for k, n in m.operators if n == "SVDF")
    p = m.operator_params(k)
    bias = m.tensor_value(m.operator_inputs(k)[3])
    shape = m.stages_shape(k)
    for frame in range(3):
        trace = m.trace(_random_inputs(m, frame))
        arrays = stg.capture(m, trace, (k, frame % shape[1]))
        out = next(e.value for e in trace if e.op_index == k and e.tensor == m.outputs_of(k)[0])
        assert np.array_equal(np.clip(arrays[f"op{k}_requant"] + p["output_zero_point"], -128, 127), out), frame
        assert np.array_equal(arrays[f"op{k}_acc_bias"], _wrap32(arrays[f"op{k}_acc"] + bias)), frame
        state = m.variables()[m.operator_inputs(k)[4]].reshape(shape + (-1,))
        assert np.array_equal(arrays[f"op{k}_state_entry"], state[..., -1]), frame
        taps = {f: arrays[f"op{k}_taps_{f}"].astype(np.int64) for f in stg.TAP_FIELDS}
        n_in = int((taps["kind"] == 0).sum())
        assert taps["partial_sum"][n_in - 1] == arrays[f"op{k}_feature_acc"].reshape(-1)[frame % shape[1]]
        assert taps["partial_sum"][-1] == arrays[f"op{k}_time_acc"].reshape(-1)[frame % shape[1]]
        assert np.array_equal(taps["x"][n_in:], state[0, frame % shape[1]])
        assert (taps["partial_sum"][0] - (taps["x"][0] - taps["x_zero_point"][0]) * taps["w"][0]
                == p.get("feature_offset", 0))  # CMSIS-NN's Helium sum starts at its offset


@pytest.mark.filterwarnings("ignore::dspsim.engines.EngineDefectWarning")
@pytest.mark.parametrize("engine", ["tflm", "litert", "tflm-cmsis-nn"])
def test_svdf_stages_give_every_svdf_output_of_a_real_model(engine):
    path = tflite_micro_model("keyword_scrambled.tflite")  # 7 SVDF layers, int16 state
    if path is None:
        pytest.skip("needs ../shared/models")
    m = load_model(path, engine=engine)
    svdfs = [k for k, n in m.operators if n == "SVDF"]
    for frame in range(3):
        trace = m.trace(_random_inputs(m, frame))
        arrays = stg.capture(m, trace)
        values = {e.tensor: e.value for e in trace}
        for k in svdfs:
            zo = m.operator_params(k)["output_zero_point"]
            got = np.clip(arrays[f"op{k}_requant"] + zo, -128, 127)
            assert np.array_equal(got, values[m.outputs_of(k)[0]]), (frame, k)


@pytest.mark.filterwarnings("ignore::dspsim.engines.EngineDefectWarning")
def test_svdf_stages_differ_where_the_cmsis_nn_defects_change_the_path():
    got = {}
    for engine in ("tflm", "tflm-cmsis-nn"):  # arm_svdf_s8: int16 clamp, then the int8 store wraps
        m = _svdf("svdf_int8_state_relu", engine)
        for frame in range(2):
            got[engine] = stg.capture(m, m.trace(_random_inputs(m, frame)))
    assert np.array_equal(got["tflm"]["op0_feature_requant"], got["tflm-cmsis-nn"]["op0_feature_requant"])
    assert not np.array_equal(got["tflm"]["op0_state_entry"], got["tflm-cmsis-nn"]["op0_state_entry"])
    # the Helium path's offset (zero in the golden model: its state zero point is 0) starts the feature sum
    m = _svdf("svdf_int8_state_relu", "tflm-cmsis-nn-m55")
    args = [m.tensor_value(i) for i in m.operator_inputs(0)]
    args[0], args[4] = _random_inputs(m, 0)[0], np.zeros(m.tensor_info(m.operator_inputs(0)[4]).shape, np.int8)
    q = dict(m.operator_params(0))
    base = svdf_stages(*args, **q)[2]
    shifted = svdf_stages(*args, **{**q, "feature_offset": 1 << 30})[2]
    assert np.array_equal(shifted["feature_acc"], _wrap32(base["feature_acc"] + (1 << 30)))


def test_run_stages_and_partial_sums_write_the_recurrent_vectors(tmp_path, capsys):
    out = tmp_path / "r"
    assert cli.main(["run", str(OPS / "svdf_int16_state_relu.tflite"), "--frames", "2", "--stages", "--partial-sums",
                     "0:0,3", "--out", str(out)]) == 0
    z = np.load(out / "trace.npz")
    assert {"op0_feature_acc", "op0_time_acc", "op0_acc_bias", "op0_requant", "op0_taps_kind"} <= set(z.files)
    rep = json.loads((out / "report.json").read_text())["stages"]
    assert rep["operators"][0]["op"] == "SVDF" and rep["partial_sums"]["index"] == [0, 3]
    assert z["op0_time_acc"].shape == (2, 1, 8)  # frames, batch, filters
    assert rep["partial_sums"]["acc"] == z["op0_time_acc"][-1, 0, 3]  # the last tap's partial sum: the time FC's


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_model_writes_the_lstm_stage_vectors_in_every_format(tmp_path, fmt):
    m = load_model(OPS / "i16v_lstm_batch_major.tflite", engine="tflm")
    x = _random_inputs(m, 0)
    man = export_model(m, x, fmt, tmp_path, stages=True, partial_sums="0:0,1,3,0")
    m.reset()
    want = stg.capture(m, m.trace(x), (0, int(np.ravel_multi_index((0, 1, 3, 0), m.stages_shape(0)))))
    assert set(want) >= {f"op0_{s}" for s in LSTM_GATE_STAGES + LSTM_CELL_STAGES}
    assert_exported_stages(tmp_path, man, want, fmt, keys=("op0_in_acc", "op0_hidden", "op0_taps_partial_sum"))


def test_export_frames_write_each_frames_svdf_stages_on_the_state_carried(tmp_path):
    m = load_model(OPS / "svdf_int16_state_relu.tflite")
    frames = [_random_inputs(m, t) for t in range(3)]
    export_frames(m, frames, "npz", tmp_path, stages=True, partial_sums="0:0,2")
    m.reset()
    for t, x in enumerate(frames):
        want = stg.capture(m, m.trace(x), (0, 2))
        got = np.load(tmp_path / f"frame{t:04d}" / "stages.npz")
        assert set(got.files) == set(want) and all(np.array_equal(got[k], want[k]) for k in want), t
    m.reset()
    fresh = stg.capture(m, m.trace(frames[2]))  # the third frame from the reset state: other time sums
    assert not np.array_equal(fresh["op0_time_acc"], want["op0_time_acc"])
