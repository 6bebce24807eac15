"""Streaming state in dspsim.tflite: resource variables (VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE),
CALL_ONCE's initialisation subgraph, reset(), the trace of state writes, and several outputs per
operator. The model is built from decoded flatbuffer records (no converter needed): a one-frame delay
line, output(t) = input(t - 1), initialised to zeros by the CALL_ONCE subgraph."""
import numpy as np
import pytest

from dspsim.tflite.model import Model
from toy_models import delay_line_model, op_record

def frames(n):
    return [np.full((1, 4), k + 1, np.int8) for k in range(n)]


def test_resource_variable_carries_the_previous_frame():
    m = Model(delay_line_model())
    outs = [m.run(x)[0] for x in frames(4)]
    assert [int(o[0, 0]) for o in outs] == [0, 1, 2, 3]  # zeros from CALL_ONCE, then the frame before


def test_reset_restores_the_initial_state():
    m = Model(delay_line_model())
    for x in frames(3):
        m.run(x)
    m.reset()
    assert int(m.run(frames(1)[0])[0][0, 0]) == 0


def test_trace_shows_state_reads_and_writes():
    m = Model(delay_line_model())
    m.run(frames(1)[0])
    tr = m.trace(np.full((1, 4), 9, np.int8))
    names = [(e.op, e.name) for e in tr]
    assert names == [("INPUT", "x"), ("READ_VARIABLE", "previous"), ("ASSIGN_VARIABLE", "delay (state write)")]
    assert int(tr[1].value[0, 0]) == 1 and int(tr[2].value[0, 0]) == 9


def test_reading_a_variable_before_it_is_assigned_names_the_operator():
    mdef = delay_line_model()
    mdef.subgraphs[0].operators.pop(0)  # no CALL_ONCE: nothing initialises the variable
    with pytest.raises(ValueError, match=r"operator 2 \(READ_VARIABLE\).*read before any ASSIGN_VARIABLE"):
        Model(mdef).run(frames(1)[0])


def test_call_once_of_a_missing_subgraph_is_refused_at_load():
    mdef = delay_line_model()
    mdef.subgraphs[0].operators[0] = op_record(0, "CALL_ONCE", [], [], init_subgraph_index=5)
    with pytest.raises(ValueError, match="init_subgraph_index 5"):
        Model(mdef)


def test_reset_on_a_stateless_model_does_nothing():
    mdef = delay_line_model()
    m = Model(mdef)
    m.reset()
    m.reset()
    assert int(m.run(frames(1)[0])[0][0, 0]) == 0


def test_wrong_input_shape_for_a_stateful_model_names_the_input():
    with pytest.raises(ValueError, match=r"input 0 \('x'\) must have shape"):
        Model(delay_line_model()).run(np.zeros((2, 4), np.int8))


def test_run_batch_keeps_one_state_per_stream():
    m = Model(delay_line_model())
    a = np.stack([np.full((1, 4), v, np.int8) for v in (5, -7, 9)])
    b = np.stack([np.full((1, 4), v, np.int8) for v in (1, 2, 3)])
    assert m.run_batch(a)[0][:, 0, 0].tolist() == [0, 0, 0]
    assert m.run_batch(b)[0][:, 0, 0].tolist() == [5, -7, 9]  # each stream its own previous frame
    assert int(m.run(frames(1)[0])[0][0, 0]) == 0  # run() has a state of its own
    with pytest.raises(ValueError, match="carries 3 streams; call reset"):
        m.run_batch(b[:2])
    m.reset()
    assert m.run_batch(b[:2])[0][:, 0, 0].tolist() == [0, 0]


def test_run_batch_is_n_calls_of_run_on_a_stateless_model():
    import os

    from dspsim.tflite import load_model

    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "models", "cnn.tflite")
    m = load_model(path)
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, (5,) + m.inputs[0].shape).astype(m.inputs[0].dtype)
    got = m.run_batch(x)[0]
    assert got.shape == (5,) + m.outputs[0].shape
    assert all(np.array_equal(got[i], m.run(x[i])[0]) for i in range(5))
    with pytest.raises(ValueError, match=r"run_batch: input 0 .* must have shape \(N"):
        m.run_batch(x[0])
