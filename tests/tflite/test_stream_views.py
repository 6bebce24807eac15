"""Zero-copy slices, kept ring-buffer states and the split-depthwise fusion give the copies' values.

dspsim.tflite.views lets a slice hand on a view and ASSIGN_VARIABLE keep one where nothing outside the
run loop can reach the memory; dspsim.tflite.fusion runs a SPLIT_V -> [STRIDED_SLICE] -> DEPTHWISE_CONV_2D
-> CONCATENATION group as one depthwise conv (run and run_batch; trace runs every operator). Pinned here:
the window maps and the void-run copy against numpy; a synthetic streaming MixConv model (built from
decoded flatbuffer records) and every installed microWakeWord model, where the fused run must give
every tensor it computes as the trace gives it, and the real engines' outputs; the cases that must not
fuse or view (a part read elsewhere, differing activations, a simulated accumulator, a state assigned
from a model input, a slice the caller receives).
"""
from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest

from dspsim import Accumulator
from dspsim.kernels import data_movement as K
from dspsim.kernels._plan import contiguous_copy, index_plan, index_views, window_of
from dspsim.tflite import load_model
from dspsim.graph.ir import ModelDef, OperatorDef, SubgraphDef, TensorDef
from dspsim.tflite.model import Model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
from golden_io import load_real_model  # noqa: E402
from model_steps import recorded_run

WAKEWORD = sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "real_models", "*.npz")))


# ------------------------------------------------------------------ window maps and the copy
@pytest.mark.parametrize("seed", range(40))
def test_window_of_gives_np_take_of_every_positive_strided_slice(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 6, int(rng.integers(1, 5))))
    n = len(shape)
    begin, end = rng.integers(-6, 6, n), rng.integers(-6, 6, n)
    strides = rng.choice([1, 2, 3], n)
    probe = np.arange(int(np.prod(shape))).reshape(shape)
    try:
        m = np.asarray(K.strided_slice(probe, begin, end, strides, begin_mask=int(rng.integers(0, 2 ** n)),
                                       shrink_axis_mask=int(rng.integers(0, 2 ** n))))
    except ValueError:  # a shrink axis that selects nothing: refused by the kernel, no map
        return
    found = window_of(m.astype(np.intp), shape)
    if m.size == 0 or m.ndim == 0:
        assert found is None
        return
    assert found is not None
    index, out = found
    x = rng.integers(-128, 128, shape).astype(np.int8)
    assert np.array_equal(x[index].reshape(out), np.take(x, m)) and np.shares_memory(x[index], x)


def test_window_of_refuses_reversed_permuted_and_repeated_maps():
    probe = np.arange(24).reshape(2, 3, 4)
    assert window_of(probe[:, ::-1].astype(np.intp), (2, 3, 4)) is None
    assert window_of(probe.transpose(0, 2, 1).astype(np.intp), (2, 3, 4)) is None
    assert window_of(np.repeat(probe, 2, axis=1).astype(np.intp), (2, 3, 4)) is None
    assert window_of(probe[:, [0, 2]].astype(np.intp), (2, 3, 4)) is not None  # every other row: a step of 2


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.float32])
def test_contiguous_copy_is_numpys_copy_on_every_kind_of_view(dtype):
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, (64, 15, 1, 64)).astype(dtype)
    views = [x[:, 6:, :, :32], x[:, :, :, 32:], x[:, 1:], x[..., ::2], x[:, 1:, :, :60], x[:, ::-1], x[:, 3:, :, 3:4],
             x[:, :4].transpose(0, 1, 3, 2), x[:0], x[5, 2, 0, 7:9], x[:, 2:3, :, 5:21], np.asarray(x[0, 0, 0, 0])]
    for v in views:
        c = contiguous_copy(v)
        assert c.dtype == v.dtype and c.shape == v.shape and c.flags.c_contiguous and np.array_equal(c, v)
        assert not np.shares_memory(c, x)


def test_index_views_share_the_input_and_give_index_plans_values():
    x = np.random.default_rng(2).integers(-128, 128, (3, 9, 1, 10)).astype(np.int8)
    for fn, args in ((K.split_v, (np.array([4, 6]), -1)), (K.split, (1, 3)),
                     (K.strided_slice, (np.array([0, 2, 0, 0]), np.array([3, 9, 1, 10]), np.array([1, 1, 1, 1])))):
        views = index_views(fn, x.shape, *args)
        copies, _ = index_plan(fn, x.shape, *args)
        got, want = views(x), copies(x)
        for g, w in zip(*(((a,) if isinstance(a, np.ndarray) else a) for a in (got, want))):
            assert np.array_equal(g, w) and np.shares_memory(g, x) and not np.shares_memory(w, x)
    assert index_views(K.transpose, x.shape, np.array([0, 3, 1, 2])) is None  # a permutation: no window


# ------------------------------------------------------------------ a synthetic streaming MixConv model
CODES = {"CALL_ONCE": 129, "VAR_HANDLE": 142, "READ_VARIABLE": 143, "ASSIGN_VARIABLE": 144, "CONCATENATION": 2,
         "STRIDED_SLICE": 45, "SPLIT_V": 102, "DEPTHWISE_CONV_2D": 4}
S_X, Z_X, S_Y, Z_Y = 0.05, 3, 0.1, -2


def _t(i, name, shape, dtype, data=None, scale=(), zp=(), axis=0):
    dt = None if dtype is None else np.dtype(dtype)
    return TensorDef(i, name, tuple(shape) if dt is not None else (), dt, dt.name if dt is not None else "RESOURCE",
                     data, np.asarray(scale, np.float32), np.asarray(zp, np.int64), axis)


def _op(k, name, inputs, outputs, **options):
    return OperatorDef(k, CODES[name], name, tuple(inputs), tuple(outputs), options)


def mixconv_model(activations=(1, 1), split_output=False, tail_output=False):
    """x (1, 1, 1, 8) -> ring buffer of 5 rows -> channels [3, 5]: a 3-row depthwise on the last 3 rows of
    the first part, a 5-row one on the second -> concatenated: the output (1, 1, 1, 8). ``split_output``
    also outputs the second part (which then must not fuse), ``tail_output`` the state's new value."""
    rng = np.random.default_rng(7)
    w0 = rng.integers(-127, 128, (1, 3, 1, 3)).astype(np.int8)
    w1 = rng.integers(-127, 128, (1, 5, 1, 5)).astype(np.int8)
    s_w0, s_w1 = rng.uniform(0.002, 0.02, 3), rng.uniform(0.002, 0.02, 5)
    b0 = rng.integers(-3000, 3000, 3).astype(np.int32)
    b1 = rng.integers(-3000, 3000, 5).astype(np.int32)
    q_x, q_y = dict(scale=[S_X], zp=[Z_X]), dict(scale=[S_Y], zp=[Z_Y])
    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    tensors = [
        _t(0, "x", (1, 1, 1, 8), np.int8, **q_x), _t(1, "ring", (), None), _t(2, "state", (1, 4, 1, 8), np.int8, **q_x),
        _t(3, "window", (1, 5, 1, 8), np.int8, **q_x), _t(4, "tail", (1, 4, 1, 8), np.int8, **q_x),
        _t(5, "part0", (1, 5, 1, 3), np.int8, **q_x), _t(6, "part1", (1, 5, 1, 5), np.int8, **q_x),
        _t(7, "rows0", (1, 3, 1, 3), np.int8, **q_x), _t(8, "dw0", (1, 1, 1, 3), np.int8, **q_y),
        _t(9, "dw1", (1, 1, 1, 5), np.int8, **q_y), _t(10, "y", (1, 1, 1, 8), np.int8, **q_y),
        _t(11, "begin_tail", (4,), np.int32, i32(0, 1, 0, 0)), _t(12, "end", (4,), np.int32, i32(1, 5, 1, 8)),
        _t(13, "ones", (4,), np.int32, i32(1, 1, 1, 1)), _t(14, "sizes", (2,), np.int32, i32(3, 5)),
        _t(15, "axis", (), np.int32, np.array(-1, np.int32)), _t(16, "begin_rows", (4,), np.int32, i32(0, 2, 0, 0)),
        _t(17, "end_rows", (4,), np.int32, i32(1, 5, 1, 3)),
        _t(18, "w0", w0.shape, np.int8, w0, s_w0, np.zeros(3), 3), _t(19, "b0", (3,), np.int32, b0, s_w0 * S_X,
                                                                      np.zeros(3)),
        _t(20, "w1", w1.shape, np.int8, w1, s_w1, np.zeros(5), 3), _t(21, "b1", (5,), np.int32, b1, s_w1 * S_X,
                                                                      np.zeros(5)),
    ]
    dw = dict(padding=1, stride_w=1, stride_h=1, depth_multiplier=1, dilation_w_factor=1, dilation_h_factor=1)
    var = dict(container="", shared_name="ring")
    ops = [
        _op(0, "CALL_ONCE", [], [], init_subgraph_index=1), _op(1, "VAR_HANDLE", [], [1], **var),
        _op(2, "READ_VARIABLE", [1], [2]), _op(3, "CONCATENATION", [2, 0], [3], axis=1),
        _op(4, "STRIDED_SLICE", [3, 11, 12, 13], [4]), _op(5, "ASSIGN_VARIABLE", [1, 4], []),
        _op(6, "SPLIT_V", [3, 14, 15], [5, 6], num_splits=2), _op(7, "STRIDED_SLICE", [5, 16, 17, 13], [7]),
        _op(8, "DEPTHWISE_CONV_2D", [7, 18, 19], [8], fused_activation_function=activations[0], **dw),
        _op(9, "DEPTHWISE_CONV_2D", [6, 20, 21], [9], fused_activation_function=activations[1], **dw),
        _op(10, "CONCATENATION", [8, 9], [10], axis=-1),
    ]
    outputs = (10,) + ((6,) if split_output else ()) + ((4,) if tail_output else ())
    main = SubgraphDef(0, "main", tensors, (0,), outputs, ops)
    zeros = np.full((1, 4, 1, 8), Z_X, np.int8)
    init = SubgraphDef(1, "init", [_t(0, "ring", (), None), _t(1, "zeros", zeros.shape, np.int8, zeros, **q_x)], (), (),
                       [_op(0, "VAR_HANDLE", [], [0], **var), _op(1, "ASSIGN_VARIABLE", [0, 1], [])])
    return ModelDef(3, [main, init], None)


def _assert_fused_is_traced(make, frames, engine="tflm", accumulator=None):
    """Frame by frame: every tensor of the fused run equals the trace's, on one stream and on 3 streams."""
    fused, traced = make(engine, accumulator), make(engine, accumulator)
    streams = [make(engine, accumulator) for _ in range(3)]
    for f, x in enumerate(frames):
        outs, seen = recorded_run(fused, x)
        values = {e.tensor: e.value for e in traced.trace(x) if "(state write)" not in e.name}
        for i, v in seen.items():
            assert np.array_equal(v, values[i]), f"frame {f}: tensor {i} differs from the trace"
        xs = np.stack([x] + [np.roll(x, k + 1) for k in range(2)])
        batched, seen_b = recorded_run(fused, xs, batch=3)
        for k, m in enumerate(streams):
            one = {e.tensor: e.value for e in m.trace(xs[k]) if "(state write)" not in e.name}
            for i, v in seen_b.items():
                assert np.array_equal(v[k], one[i][0]), f"frame {f} stream {k}: tensor {i} differs"
    return fused


def _synthetic(**kw):
    return lambda engine, accumulator: Model(mixconv_model(**kw), engine, accumulator)


def _frames(n, shape=(1, 1, 1, 8), seed=3):
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(n)]


def _fused_ops(model):
    return len(model._exec.trace_steps[0]) - len(model._exec.steps[0])


@pytest.mark.parametrize("engine", ["tflm", "litert", "xnnpack"])
def test_split_depthwise_group_fuses_and_gives_every_traced_tensor(engine):
    m = _assert_fused_is_traced(_synthetic(), _frames(7), engine)
    assert _fused_ops(m) == 4  # SPLIT_V, STRIDED_SLICE, 2 depthwise, CONCATENATION -> one depthwise
    state = m.state.resources[("", "ring")]
    assert state.base is not None  # the ring buffer keeps the slice of the concatenation: no copy


@pytest.mark.parametrize("kw", [dict(activations=(1, 0)), dict(split_output=True)])
def test_a_group_whose_parts_differ_or_escape_is_not_fused(kw):
    m = _assert_fused_is_traced(_synthetic(**kw), _frames(5))
    assert _fused_ops(m) == 0


def test_no_fusion_under_a_simulated_accumulator():
    m = _assert_fused_is_traced(_synthetic(), _frames(4), accumulator=Accumulator(20, overflow="saturate"))
    assert _fused_ops(m) == 0


def test_a_state_slice_the_caller_receives_is_a_copy():
    m = Model(mixconv_model(tail_output=True), "tflm")
    ref = Model(mixconv_model(tail_output=True), "tflm")
    for x in _frames(4):
        y, tail = m.run(x)
        assert not np.shares_memory(tail, m.state.resources[("", "ring")])
        tail[...] = 99  # the caller's array: the model's state must not change with it
        want = ref.run(x)
        assert np.array_equal(y, want[0])


def test_a_state_assigned_from_a_model_input_is_a_copy():
    from toy_models import delay_line_model  # x -> state, read back next frame

    m = Model(delay_line_model())
    x = np.full((1, 4), 5, np.int8)
    m.run(x)
    x[...] = 7  # the caller reuses its buffer
    assert int(m.run(x)[0][0, 0]) == 5


# ------------------------------------------------------------------ the installed microWakeWord models
def _wakeword_cases():
    for f in WAKEWORD:
        g = load_real_model(f)
        if not g.meta["source"].startswith("pymicro_wakeword/"):
            continue
        for rec, engine in (("tflm", "tflm"), ("litert_ref", "litert"), ("litert_default", "xnnpack")):
            yield pytest.param(f, rec, engine, id=f"{os.path.basename(f)[:-4]}-{engine}")


@pytest.mark.parametrize("golden,record,engine", list(_wakeword_cases()))
def test_wakeword_fused_run_gives_the_trace_and_the_engine(golden, record, engine):
    pymicro = pytest.importorskip("pymicro_wakeword")
    g = load_real_model(golden)
    path = os.path.join(os.path.dirname(pymicro.__file__), g.meta["source"].split("/", 1)[1])
    run = g.engines[record]
    if not os.path.isfile(path) or run.status != "ok":
        pytest.skip(f"{g.meta['source']}: absent, or the engine {run.status}")
    frames = [[x[f] for x in g.inputs][0] for f in range(g.meta["frames"])]
    m = _assert_fused_is_traced(lambda e, a: load_model(path, engine=e), frames, engine)
    m.reset()
    for f, x in enumerate(frames):
        for k, out in enumerate(m.run(x)):
            assert np.array_equal(out, run.outputs[k][f]), f"frame {f} output {k} differs from {record}"
