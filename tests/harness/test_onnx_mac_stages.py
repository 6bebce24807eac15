"""Accumulator-level vectors of the ONNX MAC operators besides QLinearConv (issue 30 item 1): QLinearMatMul (per
batch, B's scales per column or per batch and column), QGemm, and MatMulInteger / ConvInteger, whose int32 outputs
are the accumulators (``op<k>_acc`` alone), each from the kernel that computes the output."""
from pathlib import Path

import numpy as np
import pytest

import dspsim
from dspsim.harness import stages as stg
from dspsim.harness.run_model import _random_inputs
from dspsim.onnx import load_model
from dspsim.onnx.mac import conv_integer_stages, matmul_integer_stages, qlinear_matmul, qlinear_matmul_stages
from onnx_golden import GoldenFile, decode

ENGINES = ["onnxruntime", "onnxruntime-vnni", "onnx-reference"]
OPS, ND = GoldenFile("ops.npz"), GoldenFile("nd.npz")
QMATMUL = [n for n, c in OPS.cases.items() if c["op"] == "QLinearMatMul"]
PER_BATCH_COLUMN = [n for n in ND.cases if n.startswith("qlinear_matmul_per_batch_column")]
INTEGER = [n for n, c in OPS.cases.items() if c["op"] in ("MatMulInteger", "ConvInteger")]
MODELS = Path(__file__).parents[1] / "golden" / "onnx" / "models"


def _traced(golden, name, engine):
    """The case's model for ``engine`` (skipped where the engine refuses it), its stage operator and its trace."""
    c = golden.cases[name]
    try:
        m = load_model(bytes(golden.z[f"{name}/model"]), engine=engine)
        given = dict(decode(golden.z[f"{name}/in{k}"]) for k in range(c["n_in"]))
        trace = m.trace({i.name: given[i.name] for i in m.inputs})
    except ValueError as exc:
        pytest.skip(str(exc)[:120])
    k = next(k for k, _ in m.operators if m.has_stages(k))
    return m, k, trace


def _output(trace, m, k):
    return next(e.value for e in trace if e.op_index == k and e.tensor == m.outputs_of(k)[0])


def _taps_end_at(arrays, k, flat):
    taps = {f: arrays[f"op{k}_taps_{f}"].astype(np.int64) for f in stg.TAP_FIELDS}
    assert taps["partial_sum"][-1] == arrays[f"op{k}_acc"].reshape(-1)[flat]
    return taps


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", QMATMUL)
def test_qlinear_matmul_requant_plus_zero_point_clamped_is_its_output_batch_by_batch(name, engine):
    m, k, trace = _traced(OPS, name, engine)
    y = _output(trace, m, k)
    flat = y.size - 1  # the last batch's last output: a per-batch tap
    arrays = stg.capture(m, trace, (k, flat))
    zy = np.asarray(m.tensor_value(m.operator_inputs(k)[7]) if m.tensor_value(m.operator_inputs(k)[7]) is not None
                    else next(e.value for e in trace if e.tensor == m.operator_inputs(k)[7])).reshape(-1)[0]
    info = np.iinfo(y.dtype)
    assert arrays[f"op{k}_requant"].shape == y.shape
    assert np.array_equal(np.clip(arrays[f"op{k}_requant"].astype(np.int64) + int(zy), info.min, info.max), y)
    assert np.array_equal(arrays[f"op{k}_acc"], arrays[f"op{k}_acc_bias"])  # no bias
    _taps_end_at(arrays, k, flat)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", PER_BATCH_COLUMN)
def test_qlinear_matmul_stages_with_b_scales_per_batch_and_column_take_each_batchs_requantization(name, engine):
    args = [ND.z[f"{name}/in{k}"] for k in range(8)]
    y = qlinear_matmul(*args, engine=engine)
    for flat in (0, y.size - 1):  # the first batch's first output, the last batch's last
        st = qlinear_matmul_stages(*args, engine=engine, tap=flat)
        info = np.iinfo(y.dtype)
        assert np.array_equal(np.clip(st.requant + int(args[7]), info.min, info.max), y)
        assert st.taps["partial_sum"][-1] == st.acc.reshape(-1)[flat]
        assert len({tuple(r) for r in np.asarray(args[4]).reshape(-1, y.shape[-1])}) > 1  # scales vary per batch


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", INTEGER)
def test_integer_matmul_and_conv_outputs_are_their_accumulators_and_taps_end_there(name, engine):
    m, k, trace = _traced(OPS, name, engine)
    y = _output(trace, m, k)
    arrays = stg.capture(m, trace)
    assert set(arrays) == {f"op{k}_acc"} and np.array_equal(arrays[f"op{k}_acc"], y)
    flat = (y.size * 2) // 3
    try:
        arrays = stg.capture(m, trace, (k, flat))
    except ValueError as exc:  # uint8 x int8 pairs on ONNX Runtime without VNNI
        assert engine == "onnxruntime" and "product pairs" in str(exc)
        return
    taps = _taps_end_at(arrays, k, flat)
    contrib = np.diff(np.concatenate([[0], taps["partial_sum"]]))
    want = np.where(taps["kind"] == 0, (taps["x"] - taps["x_zero_point"]) * (taps["w"] - taps["w_zero_point"]), 0)
    assert np.array_equal(contrib, want)


def test_conv_integer_taps_run_channel_then_filter_row_then_column_with_padding_marked():
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (1, 4, 5, 5)).astype(np.int8)
    w = rng.integers(-128, 128, (6, 2, 3, 3)).astype(np.int8)
    st = conv_integer_stages(x, w, np.int8(3), np.int8(-2), tap=int(np.ravel_multi_index((0, 4, 0, 0), (1, 6, 5, 5))),
                             pads=[1, 1, 1, 1], group=2)
    taps = st.taps
    assert len(taps["x"]) == 2 * 3 * 3 and np.array_equal(taps["w"], w[4].reshape(-1))
    inside = np.array([[[fy >= 1 and fx >= 1 for fx in range(3)] for fy in range(3)]] * 2).reshape(-1)
    assert np.array_equal(taps["kind"], np.where(inside, 0, 1))  # the top row and left column are padding
    assert np.array_equal(taps["x"][inside], x[0, 2:4, 0:2, 0:2].reshape(-1))  # output channel 4: group 1
    assert taps["partial_sum"][-1] == st.acc[0, 4, 0, 0]


def test_integer_stages_refuse_a_tap_outside_the_output():
    a = np.zeros((2, 3), np.int8)
    with pytest.raises(ValueError, match=r"matmul_integer_stages: tap must be a flat index in \[0, 4\)"):
        matmul_integer_stages(a, np.zeros((3, 2), np.int8), tap=4)


@pytest.mark.parametrize("engine", ["onnxruntime", "onnxruntime-vnni"])
@pytest.mark.parametrize("name", ["mlp_qop_u8s8_pt_op13", "mlp_qop_s8s8_pc_op21"])
def test_qgemm_and_qlinear_matmul_stages_give_every_output_of_a_model(name, engine):
    m = dspsim.load_model(MODELS / f"{name}.onnx", engine)
    trace = m.trace(_random_inputs(m, 0))
    macs = [k for k, n in m.operators if n in ("QGemm", "QLinearMatMul")]
    assert macs
    arrays = stg.capture(m, trace, (macs[0], 3))
    values = {e.tensor: e.value for e in trace}
    for k in macs:
        y = values[m.outputs_of(k)[0]]
        zy = int(np.asarray(m.tensor_value(m.operator_inputs(k)[8 if m.operators[k][1] == "QGemm" else 7]))
                 .reshape(-1)[0])
        info = np.iinfo(y.dtype)
        assert np.array_equal(np.clip(arrays[f"op{k}_requant"].astype(np.int64) + zy, info.min, info.max), y), k
    _taps_end_at(arrays, macs[0], 3)
