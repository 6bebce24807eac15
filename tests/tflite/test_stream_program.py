"""A small streaming model's frame as one compiled call (dspsim.graph.program, dspsim.tflite.lowering).

Pinned: each instruction against what it stands for (a MAC against the kernel plans it is lowered from, over
geometries, zero points, rounding and per-channel scales; a gather against numpy's take; a table per element and
one for all); a lowered model's run against the step loop it replaces, frame by frame, with traces, resets and
run_batch streams in chunks between the frames (every installed microWakeWord model, every engine); which models
are not lowered; and that no value a caller holds shares the arena the next compiled run writes.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

from dspsim import kernels
from dspsim.graph.program import Program
from dspsim.graph.state import State
from dspsim.tflite import load_model
from dspsim.tflite import lowering
from dspsim.tflite.builtins.state import ResourceHandle
from dspsim.tflite.model import Model
from shared_models import fresh_model, pymicro_wakeword_model
from toy_models import delay_line_model

WAKEWORD = [p for p in [pymicro_wakeword_model(f"models/{n}.tflite") for n in ("okay_nabu", "hey_jarvis")]
            + [fresh_model(f"mww_{n}.tflite") for n in ("v1_okay_nabu", "v2_vad")] if p]


def _run_mac(problem, x):
    """``problem`` as a one-instruction program on ``x``: the output codes."""
    prog = Program()
    inp = prog.tensor("x", x.shape, x.dtype)
    g = problem.geometry
    out = prog.tensor("y", (x.shape[0], g.out_h, g.out_w, problem.w.shape[0]), problem.quant.out_dtype)
    prog.mac(out, inp, problem, x.shape)
    prog.finish()
    prog.view("x")[...] = x
    prog.run()
    return prog.view("y")


def _mac_case(seed):
    """A random conv, depthwise or fully connected layer: (plan, its ConvProblem, input)."""
    rng = np.random.default_rng(seed)
    kind = ("conv", "depthwise", "fc")[seed % 3]
    n_b, h, w_, c = int(rng.integers(1, 3)), int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.integers(1, 9))
    n_oc = int(rng.integers(1, 12))
    q = dict(input_zero_point=int(rng.integers(-128, 128)), output_zero_point=int(rng.integers(-128, 128)),
             multiplier=rng.integers(1 << 30, (1 << 31) - 1, n_oc), shift=rng.integers(-12, 2, n_oc),
             rounding=("double", "single")[seed % 2], act_min=int(rng.integers(-128, -60)), act_max=int(rng.integers(60, 128)))
    if kind == "fc":
        x = rng.integers(-128, 128, (n_b, c * 5), dtype=np.int8)
        w = rng.integers(-128, 128, (n_oc, c * 5), dtype=np.int8)
        plan = kernels.fully_connected_plan(x.shape, x.dtype, w, rng.integers(-5000, 5000, n_oc).astype(np.int32), **q)
        return plan, plan.rows.problem, x
    kh, kw = int(rng.integers(1, min(h, 3) + 1)), int(rng.integers(1, min(w_, 3) + 1))
    geo = dict(stride=(int(rng.integers(1, 3)), int(rng.integers(1, 3))), padding=("VALID", "SAME")[seed % 2],
               dilation=(1, int(rng.integers(1, 2))))
    x = rng.integers(-128, 128, (n_b, h, w_, c), dtype=np.int8)
    if kind == "depthwise":
        mult = int(rng.integers(1, 3))
        n_oc = c * mult
        q.update(multiplier=q["multiplier"][:1].repeat(n_oc), shift=q["shift"][:1].repeat(n_oc))
        w = rng.integers(-128, 128, (1, kh, kw, n_oc), dtype=np.int8)
        plan = kernels.depthwise_conv2d_plan(x.shape, x.dtype, w, rng.integers(-5000, 5000, n_oc).astype(np.int32),
                                             depth_multiplier=mult, **geo, **q)
    else:
        w = rng.integers(-128, 128, (n_oc, kh, kw, c), dtype=np.int8)
        plan = kernels.conv2d_plan(x.shape, x.dtype, w, rng.integers(-5000, 5000, n_oc).astype(np.int32), **geo, **q)
    return plan, plan.problem, x


@pytest.mark.parametrize("seed", range(36))
def test_mac_instruction_gives_the_kernel_plans_codes(seed):
    plan, problem, x = _mac_case(seed)
    want = plan(x)
    got = _run_mac(problem, x.reshape(problem.x.shape))
    assert np.array_equal(got.reshape(want.shape), want)


def test_mac_instruction_wraps_the_sum_at_32_bits_as_the_kernel():
    # 2^31 / (255 * 127) taps: the int32 sum wraps, the fast cores' modulo 2^32 sum is what is requantized
    k = 70_000
    x = np.full((1, k), 127, np.int8)
    w = np.full((2, k), -128, np.int8)
    plan = kernels.fully_connected_plan(x.shape, x.dtype, w, None, input_zero_point=-128, output_zero_point=0,
                                        multiplier=[1 << 30, 1 << 30], shift=[-20, -20])
    assert np.array_equal(_run_mac(plan.rows.problem, x.reshape(plan.rows.problem.x.shape)).reshape(1, 2), plan(x))


def test_gather_copies_positions_as_numpy_take():
    rng = np.random.default_rng(0)
    prog = Program()
    src = prog.tensor("src", (50,), np.int8)
    dst = prog.tensor("dst", (40,), np.int8)
    positions = np.concatenate([np.arange(10, 30), rng.integers(0, 50, 12), np.arange(45, 50), [3, 3, 4]])
    prog.gather(dst, src + positions)
    prog.finish()
    prog.view("src")[...] = rng.integers(-128, 128, 50)
    prog.run()
    assert np.array_equal(prog.view("dst"), np.take(prog.view("src"), positions))


@pytest.mark.parametrize("per_element", [False, True])
def test_table_maps_each_byte_through_its_elements_table(per_element):
    rng = np.random.default_rng(1)
    prog = Program()
    inp = prog.tensor("x", (6,), np.int8)
    out = prog.tensor("y", (6,), np.uint8)
    tables = rng.integers(0, 256, (6 if per_element else 1, 256)).astype(np.uint8)
    prog.table(out, inp, 6, tables)
    prog.finish()
    x = rng.integers(-128, 128, 6).astype(np.int8)
    prog.view("x")[...] = x
    prog.run()
    rows = np.arange(6) if per_element else np.zeros(6, int)
    assert np.array_equal(prog.view("y"), tables[rows, x.view(np.uint8)])


# ------------------------------------------------------------------ lowered models against the step loop
def _loop_twin(path, engine):
    twin = load_model(path, engine=engine)
    twin._exec.stream_plans[0] = None  # the step loop only
    return twin


@pytest.mark.parametrize("engine", ["tflm", "litert", "xnnpack"])
@pytest.mark.parametrize("path", WAKEWORD or [None])
def test_lowered_wakeword_model_gives_the_step_loops_frames(path, engine):
    if path is None:
        pytest.skip("no microWakeWord model here (pymicro_wakeword, ../shared/models/fresh)")
    m, twin = load_model(path, engine=engine), _loop_twin(path, engine)
    rng = np.random.default_rng(2)
    frames = rng.integers(-128, 128, (24, *m.inputs[0].shape)).astype(m.inputs[0].dtype)
    for f, x in enumerate(frames):
        if f == 8:  # the step loop in between, through the same state
            got = [e.value for e in m.trace(x) if e.op_index == len(m.operators) - 1]
            want = [e.value for e in twin.trace(x) if e.op_index == len(twin.operators) - 1]
        elif f == 16:
            m.reset()
            twin.reset()
            continue
        else:
            got, want = m.run(x), twin.run(x)
        assert all(np.array_equal(a, b) for a, b in zip(got, want)), f"frame {f}"
    assert m._exec.stream_plans[0].plan is not None


def test_lowered_streams_in_chunks_give_each_streams_run():
    path = WAKEWORD[0] if WAKEWORD else pytest.skip("no microWakeWord model here")
    m, twin = load_model(path, engine="tflm"), _loop_twin(path, "tflm")
    m.BATCH_BYTES = 1  # one stream per chunk: the chunks' states swap through one executor
    states = [State() for _ in range(3)]
    rng = np.random.default_rng(3)
    for x in rng.integers(-128, 128, (5, 3, *m.inputs[0].shape)).astype(np.int8):
        got = m.run_batch(x)[0]
        for s, state in enumerate(states):  # the twin runs stream s on its own state
            twin.state.swap(state)
            try:
                assert np.array_equal(got[s], twin.run(x[s])[0])
            finally:
                twin.state.swap(state)
            mine = m._streams[1][s].resources  # the output saturates: the states themselves too
            assert mine.keys() == state.resources.keys()
            assert all(np.array_equal(mine[k], state.resources[k]) for k in mine)


def test_trace_values_stay_as_they_were_after_compiled_frames():
    path = WAKEWORD[0] if WAKEWORD else pytest.skip("no microWakeWord model here")
    m = load_model(path, engine="tflm")
    x = np.zeros(m.inputs[0].shape, np.int8)
    for _ in range(3):
        m.run(x)
    trace = m.trace(x)
    kept = copy.deepcopy([e.value for e in trace])
    rng = np.random.default_rng(4)
    for _ in range(3):
        m.run(rng.integers(-128, 128, m.inputs[0].shape).astype(np.int8))
    assert all(np.array_equal(np.asarray(a), np.asarray(e.value)) for a, e in zip(kept, trace) if a is not None)


def test_delay_line_model_is_lowered_and_keeps_the_previous_frame():
    m = Model(delay_line_model(), engine="tflm")
    frames = [np.full((1, 4), k, np.int8) for k in range(1, 5)]
    outs = [m.run(x)[0] for x in frames]
    assert m._exec.stream_plans[0].plan is not None
    assert np.array_equal(outs[0], np.zeros((1, 4), np.int8))
    assert all(np.array_equal(o, x) for o, x in zip(outs[1:], frames))


def _plan_after_two_runs(model):
    x = [np.zeros(i.shape, i.dtype) for i in model.inputs]
    model.run(x)
    assert model._exec.stream_plans[0].plan is None  # nothing lowered for a model run once
    model.run(x)
    return model._exec.stream_plans[0].plan


def test_stateless_and_large_models_are_not_lowered(monkeypatch):
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert _plan_after_two_runs(load_model(os.path.join(root, "tests", "golden", "models", "cnn.tflite"))) is None
    path = WAKEWORD[0] if WAKEWORD else pytest.skip("no microWakeWord model here")
    assert _plan_after_two_runs(load_model(path, engine="tflm")) is not None
    monkeypatch.setattr(lowering, "MAX_MACS", 0)
    assert _plan_after_two_runs(load_model(path, engine="tflm")) is None


def test_run_operator_hands_out_no_view_of_the_arena():
    path = WAKEWORD[0] if WAKEWORD else pytest.skip("no microWakeWord model here")
    m = load_model(path, engine="tflm")
    x = np.zeros(m.inputs[0].shape, np.int8)
    for _ in range(3):
        m.run(x)
    handle_op = next(k for k, name in m.operators if name == "VAR_HANDLE")
    read_op = next(k for k, name in m.operators if name == "READ_VARIABLE"
                   and m.operator_inputs(k)[0] == m.outputs_of(handle_op)[0])
    handle = ResourceHandle(**m.operator_params(handle_op))
    value = m.run_operator(read_op, [handle])
    kept = value.copy()
    m.run(np.full(m.inputs[0].shape, 77, np.int8))
    assert np.array_equal(value, kept)
