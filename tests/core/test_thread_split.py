"""Threads that scale (issue 29 item 2): the split rule (never more threads than the work has full tiles for,
never a chunk smaller than a tile) and bit-exactness of every split at 1, 2, 3 and 7 threads.

The thread count is this thread's dspsim setting (``dspsim._jit._THREADS``, what :func:`dspsim.set_num_threads`
sets) set directly, so that 3 and 7 threads run on a 2-core machine too; ``PARALLEL_MIN = 1`` makes every call
split (the work decides nothing), so each kernel's chunk boundaries are exercised at these counts.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import _jit as J
from dspsim.graph import model as graph_model
from dspsim.kernels.mac import depthwise_core, gemm
from dspsim.requant import Requant

from depthwise_cases import run_case, run_layer

COUNTS = (1, 2, 3, 7)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def threads(monkeypatch):
    """``threads(n)``: run this test's kernel calls on ``n`` threads, every call split."""
    monkeypatch.setattr(J, "PARALLEL_MIN", 1)
    before = getattr(J._THREADS, "n", None)

    def use(n):
        J._THREADS.n = n

    yield use
    J._THREADS.n = before


# --------------------------------------------------------------------------------------------
# the split rule
# --------------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 5000), st.integers(0, 1 << 24), st.integers(1, 64), st.integers(1, 16),
       st.integers(1, 1 << 20))
def test_a_split_never_has_more_threads_than_full_tiles_and_never_a_chunk_below_a_tile(n_rows, work, grain,
                                                                                        setting, minimum):
    saved, before = J.PARALLEL_MIN, getattr(J._THREADS, "n", None)
    J.PARALLEL_MIN, J._THREADS.n = minimum, setting
    try:
        t = J.split_threads(n_rows, work, grain)
    finally:
        J.PARALLEL_MIN, J._THREADS.n = saved, before
    assert 1 <= t <= setting
    if t > 1:  # every thread has a tile of rows and a thread's worth of work
        assert t <= n_rows // grain and t <= work // minimum
    cut = J.chunk_cuts(n_rows, t, grain)
    sizes = np.diff(cut)
    assert cut[0] == 0 and cut[-1] == n_rows and (sizes >= 0).all()
    assert len(sizes) <= max(1, J.CHUNKS_PER_THREAD * t)
    if len(sizes) > 1:
        assert sizes.min() >= grain and len(sizes) >= t


@pytest.mark.parametrize("n_rows, work, grain, want", [(100, 10 << 19, 8, 2), (15, 10 << 19, 8, 1), (16, 10 << 19, 8, 2),
                                                       (100, (4 << 19) - 1, 1, 1), (100, 4 << 19, 1, 2)])
def test_split_threads_takes_the_fewest_of_setting_tiles_and_work(n_rows, work, grain, want, monkeypatch):
    monkeypatch.setattr(J, "PARALLEL_MIN", 1 << 20)
    monkeypatch.setattr(J, "get_num_threads", lambda: 2)
    assert J.split_threads(n_rows, work, grain) == want


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(1, 2000), st.integers(0, 1 << 30), st.sampled_from(COUNTS))
def test_a_gemm_row_chunk_is_at_least_min_chunk_tiles_of_its_panel(panels, m_tiles, work, setting):
    before = getattr(J._THREADS, "n", None)
    J._THREADS.n = setting
    try:
        chunks = gemm.split_items(panels, m_tiles, work)
    finally:
        J._THREADS.n = before
    assert 1 <= chunks and (chunks == 1 or m_tiles // chunks >= gemm.MIN_CHUNK_TILES)
    assert chunks == 1 or panels < 8 * setting  # enough panels: whole panels per item


def test_a_depthwise_band_holds_its_halo_to_a_quarter_of_the_rows_it_reads():
    for k_h, dil, stride in [(3, 1, 1), (3, 1, 2), (5, 2, 1), (1, 1, 1), (7, 3, 2)]:
        work, grain = depthwise_core._split_work(4 << 20, k_h, dil, stride)
        halo = (k_h - 1) * dil
        assert work == (4 << 20) // depthwise_core.MACS_PER_ELEMENT
        assert 4 * halo <= grain * stride + halo  # the halo is at most a quarter of the band's input rows


def test_a_chunks_own_kernel_calls_stay_on_its_thread(threads):
    threads(3)
    seen = J.parallel_rows(lambda r0, r1: J.get_num_threads(), 12, 12)
    assert len(seen) == 12 and set(seen) == {1} and J.get_num_threads() == 3


# --------------------------------------------------------------------------------------------
# every split gives the same integers
# --------------------------------------------------------------------------------------------
def test_gemm_and_conv_are_the_same_at_every_thread_count(threads, monkeypatch):
    monkeypatch.setattr(gemm, "MIN_CHUNK_TILES", 1)  # the smallest chunks too
    rng = np.random.default_rng(29)
    cases = []
    for m, k, n in [(1, 5, 3), (37, 300, 70), (200, 64, 130)]:
        a = rng.integers(-128, 128, (m, k)).astype(np.int8)
        b = rng.integers(-128, 128, (n, k)).astype(np.int8)
        want = (a.astype(np.int64) + 3) @ (b.astype(np.int64) - 2).T
        cases.append((lambda a=a, b=b: gemm.gemm_s32(a, gemm.pack_weights(b), a_zero_point=-3, b_zero_point=2),
                      want.astype(np.int32)))
    for n_img, groups in [(1, 1), (9, 2)]:  # batch 1, and a batch larger than the threads
        x = rng.integers(0, 256, (n_img, 11, 7, 6)).astype(np.uint8)
        w = rng.integers(-128, 128, (8, 3, 3, 6 // groups)).astype(np.int8)
        cases.append((lambda x=x, w=w, g=groups: gemm.conv2d_s32(x, w, groups=g, pads=(1, 0, 2, 1), stride=(2, 1),
                                                                 input_zero_point=7, weight_zero_point=-1), None))
    outs = []
    for n in COUNTS:
        threads(n)
        outs.append([f() for f, _ in cases])
    for (_, want), got in zip(cases, outs[0]):
        if want is not None:
            np.testing.assert_array_equal(got, want)
    for other in outs[1:]:
        assert all(np.array_equal(p, q) for p, q in zip(outs[0], other))


DEPTHWISE = [dict(seed=1, b=1, h=13, w=9, c=24, mult=1, k=(3, 3), dil=(1, 1), stride=(1, 1), pads=(1, 1, 1, 1)),
             dict(seed=2, b=9, h=7, w=5, c=17, mult=1, k=(3, 3), dil=(1, 1), stride=(2, 2), pads=(1, 1, 1, 1)),
             dict(seed=3, b=3, h=11, w=1, c=8, mult=2, k=(5, 1), dil=(2, 1), stride=(1, 1), pads=(4, 4, 0, 0))]


@pytest.mark.parametrize("cs", DEPTHWISE, ids=["b1", "b9-stride2", "stream-dilated-mult2"])
@pytest.mark.parametrize("one_row", [False, True], ids=["bands", "rows"])
def test_depthwise_is_the_oracle_at_every_thread_count(cs, one_row, threads, monkeypatch):
    if one_row:  # chunks of one output row: each reloads its window
        monkeypatch.setattr(depthwise_core, "_split_work", lambda macs, *geometry: (macs, 1))
    base = dict(xd="int8", wd="int8", edge=True, per_channel_zw=True, zw=0, shift=3, zx=-5)
    outs = []
    for n in COUNTS:
        threads(n)
        got, want = run_case({**base, **cs})  # the core's int32 and int64 sums against plain ints inside
        np.testing.assert_array_equal(got, want)
        layer = run_layer({**base, **cs, "scheme": "double", "out": "same", "clamp": 1})
        np.testing.assert_array_equal(layer[0], layer[2])  # the prepared (fused) layer
        outs.append(layer[0])
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


def test_elementwise_kernels_are_the_same_at_every_thread_count(threads):
    rng = np.random.default_rng(7)
    acc = rng.integers(-(1 << 31), 1 << 31, 3001, dtype=np.int64).astype(np.int32)
    x = rng.integers(-128, 128, (5, 601)).astype(np.int8)
    f = rng.standard_normal(4099).astype(np.float32)
    outs = []
    for n in COUNTS:
        threads(n)
        outs.append((dspsim.requantize(acc, Requant.fixed_point(1 << 30, -9), 3, out_dtype="int8"),
                     dspsim.relu(x, input_zero_point=-2, output_zero_point=1, multiplier=1 << 30, shift=1),
                     dspsim.quantize_per_tensor(f, 0.05, 3, "quint8")))
    for other in outs[1:]:
        assert all(np.array_equal(p, q) for p, q in zip(outs[0], other))


# --------------------------------------------------------------------------------------------
# a model's batch split by samples (streams)
# --------------------------------------------------------------------------------------------
def _load(name):
    import dspsim.tflite

    return dspsim.tflite.load_model(os.path.join(ROOT, "tests", "golden", "models", name), engine="tflm")


@pytest.mark.parametrize("n_samples", [1, 2, 9])
def test_a_batch_split_by_samples_is_n_runs_at_every_thread_count(n_samples, threads, monkeypatch):
    monkeypatch.setattr(graph_model, "PART_OPERATOR_WORK", 1)  # every batch of >= threads samples split
    model = _load("mobilenet.tflite")
    info = model.inputs[0]
    x = np.random.default_rng(n_samples).integers(-128, 128, (n_samples, *info.shape)).astype(info.dtype)
    want = [model.run([s])[0] for s in x]
    for n in COUNTS:
        threads(n)
        assert model._parts(n_samples) == (1 if n == 1 or n_samples < n else min(n_samples, graph_model.PARTS_PER_THREAD * n))
        got = model.run_batch([x])[0]
        assert all(np.array_equal(got[i], want[i]) for i in range(n_samples)), n


def test_a_streaming_batch_keeps_each_streams_state_in_its_part(threads, monkeypatch):
    from toy_models import delay_line_model

    from dspsim.tflite.model import Model

    monkeypatch.setattr(graph_model, "PART_OPERATOR_WORK", 1)
    monkeypatch.setattr(Model, "BATCH_BYTES", 8)  # two streams per chunk: parts of several chunks
    frames = np.random.default_rng(5).integers(-128, 128, (4, 7, 1, 4)).astype(np.int8)
    for n in COUNTS:
        threads(n)
        model = Model(delay_line_model(), "tflm")
        outs = [model.run_batch([f])[0] for f in frames]
        assert model._streams[2] == (1 if n == 1 else min(7, graph_model.PARTS_PER_THREAD * n))
        threads(1)  # a later call at another count keeps the streams' parts
        outs.append(model.run_batch([frames[0]])[0])
        np.testing.assert_array_equal(outs[0], np.zeros((7, 1, 4), np.int8))
        for t in range(1, 5):  # each stream is its own delay line
            np.testing.assert_array_equal(outs[t], frames[t - 1])
