"""dspsim._jit: the one thread split (parallel_rows), its threshold, and the thread-count setting."""
import numba
import numpy as np
import pytest

import dspsim
from dspsim import _jit as J


@pytest.mark.parametrize("n_rows, work, limit, chunks", [(10, 100, 1, 8), (1, 100, 1, 1), (10, 3, 4, 1),
                                                         (0, 0, 1, 1), (7, 7 << 20, J.PARALLEL_MIN, 7)])
def test_parallel_rows_covers_the_range_in_order_in_up_to_four_chunks_per_thread(n_rows, work, limit, chunks,
                                                                                 monkeypatch):
    monkeypatch.setattr(J, "get_num_threads", lambda: 2)
    monkeypatch.setattr(J, "PARALLEL_MIN", limit)
    parts = J.parallel_rows(lambda r0, r1: (r0, r1), n_rows, work)
    assert len(parts) == chunks
    assert parts[0][0] == 0 and parts[-1][1] == n_rows
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))


def test_a_pool_thread_that_never_starts_does_not_hold_the_call_up(monkeypatch):
    class Stalled:  # a busy machine at its worst: the pool thread is never scheduled
        def submit(self, fn):
            pass

    monkeypatch.setattr(J, "get_num_threads", lambda: 2)
    monkeypatch.setattr(J, "PARALLEL_MIN", 1)
    monkeypatch.setattr(J, "_pool", lambda workers: Stalled())
    assert J.parallel_rows(lambda r0, r1: (r0, r1), 4, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]


def test_parallel_rows_runs_chunks_on_the_pool_and_reraises_their_errors(monkeypatch):
    import threading
    import time

    monkeypatch.setattr(J, "get_num_threads", lambda: 2)
    monkeypatch.setattr(J, "PARALLEL_MIN", 1)

    def chunk(r0, r1):
        time.sleep(0.05)  # long enough for the pool thread to take the other chunks
        return threading.current_thread().name

    names = J.parallel_rows(chunk, 8, 8)
    assert any(n.startswith("dspsim") for n in names) and threading.current_thread().name in names

    def fail(r0, r1):
        raise RuntimeError(f"chunk {r0}")

    with pytest.raises(RuntimeError, match="^chunk"):
        J.parallel_rows(fail, 8, 8)


def test_set_num_threads_is_numbas_setting_and_sets_the_split(monkeypatch):
    monkeypatch.setattr(J, "PARALLEL_MIN", 1)
    before = dspsim.get_num_threads()
    x = np.linspace(-3, 3, (1 << 16) + 7, dtype=np.float32)
    outs = []
    try:
        for n in sorted({1, before}):
            dspsim.set_num_threads(n)
            assert dspsim.get_num_threads() == numba.get_num_threads() == n
            assert len(J.parallel_rows(lambda r0, r1: None, 8, 8)) == (1 if n == 1 else 8)
            outs.append(dspsim.quantize_per_tensor(x, 0.05, 3, "quint8"))
    finally:
        dspsim.set_num_threads(before)
    assert dspsim.get_num_threads() == before
    assert all(np.array_equal(o, outs[0]) for o in outs)


@pytest.mark.parametrize("n, exc", [(0, ValueError), (numba.config.NUMBA_NUM_THREADS + 1, ValueError),
                                    (1.0, TypeError), (True, TypeError)])
def test_set_num_threads_refuses_counts_numba_cannot_run(n, exc):
    with pytest.raises(exc, match="^set_num_threads: n must be"):
        dspsim.set_num_threads(n)
