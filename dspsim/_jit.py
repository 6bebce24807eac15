"""The JIT machinery every kernel shares: one way to use threads, and the fused multiply-add intrinsic.

Threads
-------
A kernel that is worth splitting is a ``nogil`` numba function over a range of rows (or work items);
:func:`parallel_rows` cuts that range into a few contiguous chunks per thread, which the calling
thread and a thread pool take in turn, and returns every chunk's result in order. Because the
chunks are plain (not ``prange``) loops, every kernel compiles with ``cache=True`` and loads from
disk in later processes; numba cannot cache ``parallel=True`` functions.

* The work decides the threads (:func:`split_threads`): each thread gets at least
  :data:`PARALLEL_MIN` elements of work (handing work to a thread costs tens of microseconds: the
  pool thread's wake-up and the GIL), and at least ``grain`` rows, the kernel's tile (a gemm's
  row tile of a panel, a depthwise layer's band of output rows that amortises its halo), so no
  thread count runs a call slower than a smaller one for want of work, and no chunk re-reads a
  tile's inputs (weights, halo rows) to compute less than a tile.
* A chunk's own calls run on its thread (a model's samples split over threads run their
  operators single-threaded): no nested split.
* One setting for the thread count: :func:`set_num_threads` / :func:`get_num_threads`. It is numba's
  own (``numba.set_num_threads``; default ``NUMBA_NUM_THREADS``, else the number of CPUs), so code
  that sets numba's count sets dspsim's.

Fused multiply-add
------------------
:func:`fma_f32` is C's ``fmaf``: LLVM's ``llvm.fma.f32`` when compiled (one ``vfmadd`` per vector,
it vectorizes), an exact emulation under ``NUMBA_DISABLE_JIT=1``.
"""
from __future__ import annotations

import itertools
import math
import threading

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

PARALLEL_MIN = 1 << 19
"""Elements of work each thread gets at least: about 0.2 ms of an elementwise loop on one core (a
kernel counts its work in such elements: a gemm MAC is 1/64 of one, a depthwise MAC 1/4). Measured on
a 2-core Zen 4 (issue 29): a split of 0.1 ms per thread runs at 0.94x of one thread, 0.2 ms at 1.3x."""
CHUNKS_PER_THREAD = 4
"""Chunks a split gives each thread at most, taken in turn: a thread that starts late (a busy machine) leaves its
chunks to the others."""

_POOL_LOCK = threading.Lock()


_THREADS = threading.local()  # this thread's setting, as last set through set_num_threads


def get_num_threads() -> int:
    """Threads a large kernel call splits over: numba's setting (``NUMBA_NUM_THREADS`` by default),
    as :func:`set_num_threads` last set it on this thread (kept here: numba's own getter costs
    microseconds, which a prepared model's small operators cannot afford)."""
    n = getattr(_THREADS, "n", None)
    if n is None:
        n = _THREADS.n = numba.get_num_threads()
    return n


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (1 <= n <= ``NUMBA_NUM_THREADS``) for every large kernel call from now on.

    This is ``numba.set_num_threads(n)``: one setting for dspsim's threads and numba's (like numba's,
    it holds for the thread that sets it).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"set_num_threads: n must be an int, got {type(n).__name__}")
    limit = numba.config.NUMBA_NUM_THREADS
    if not 1 <= n <= limit:
        raise ValueError(f"set_num_threads: n must be in [1, {limit}] (NUMBA_NUM_THREADS), got {n}")
    numba.set_num_threads(int(n))
    _THREADS.n = int(n)


class _Workers:
    """Pool threads that run the functions handed to :meth:`submit`, taken from one ``SimpleQueue`` (a
    hand-off is one put and one wake-up, no future)."""

    def __init__(self):
        import queue

        self.tasks = queue.SimpleQueue()
        self.size = 0

    def grow(self, workers: int):
        """Start threads until there are ``workers``."""
        for i in range(self.size, workers):
            threading.Thread(target=self._serve, name=f"dspsim_{i}", daemon=True).start()
        self.size = max(self.size, workers)

    def _serve(self):
        while True:
            self.tasks.get()()

    def submit(self, fn):
        self.tasks.put(fn)


_POOL = _Workers()


def _pool(workers: int) -> _Workers:
    """The thread pool, with at least ``workers`` threads (grown when a larger count is set)."""
    if _POOL.size < workers:
        with _POOL_LOCK:
            _POOL.grow(workers)
    return _POOL


def split_threads(n_rows: int, work: int, grain: int = 1) -> int:
    """Threads that a call of ``n_rows`` rows and ``work`` elements runs on:
    ``min(get_num_threads(), n_rows // grain, work // PARALLEL_MIN)``, at least 1: every thread gets
    at least :data:`PARALLEL_MIN` elements of work and ``grain`` rows (a tile)."""
    if work < 2 * PARALLEL_MIN or n_rows < 2 * grain:  # one thread's worth: no thread count to look up
        return 1
    return max(1, min(get_num_threads(), n_rows // grain, work // PARALLEL_MIN))


def chunk_cuts(n_rows: int, threads: int, grain: int = 1) -> list:
    """The boundaries ``[0, ..., n_rows]`` of the chunks of a split over ``threads``: up to
    :data:`CHUNKS_PER_THREAD` per thread, each at least ``grain`` rows (one chunk when ``n_rows < 2 * grain``)."""
    n_chunks = max(1, min(n_rows // max(grain, 1), CHUNKS_PER_THREAD * threads))
    return [n_rows * t // n_chunks for t in range(n_chunks + 1)]


def parallel_rows(call, n_rows: int, work: int, grain: int = 1) -> list:
    """``[call(r0, r1), ...]`` over a split of ``range(n_rows)`` into contiguous chunks, in order.

    ``work`` is the call's size in elements (a gemm passes its MACs / 64); it runs on
    :func:`split_threads` ``(n_rows, work, grain)`` threads, i.e. on the calling thread alone when it is
    small, in chunks of at least ``grain`` rows (:func:`chunk_cuts`). ``call`` must run a ``nogil``
    numba function, so that the chunks run in parallel; a kernel called inside ``call`` runs on its
    thread. There are up to :data:`CHUNKS_PER_THREAD` chunks per thread, taken in turn by the
    calling thread and the pool's: a pool thread that the OS schedules late (a busy machine) finds
    the chunks done instead of holding the call up, so a call never takes much longer than on one
    thread.
    """
    threads = split_threads(n_rows, work, grain)
    if threads <= 1:
        return [call(0, n_rows)]
    cut = chunk_cuts(n_rows, threads, grain)
    n_chunks = len(cut) - 1
    results = [None] * n_chunks
    errors = []
    tickets = itertools.count()  # next() is atomic under the GIL
    finished = threading.Semaphore(0)

    def take_chunks():
        setting = getattr(_THREADS, "n", None)
        _THREADS.n = 1  # the chunk's own kernel calls stay on this thread
        try:
            while (i := next(tickets)) < n_chunks:
                try:
                    results[i] = call(cut[i], cut[i + 1])
                except BaseException as e:  # re-raised on the calling thread
                    errors.append(e)
                finally:
                    finished.release()
        finally:
            _THREADS.n = setting

    pool = _pool(threads - 1)
    for _ in range(threads - 1):
        pool.submit(take_chunks)
    take_chunks()
    for _ in range(n_chunks):  # every chunk has been taken; wait for those still running elsewhere
        finished.acquire()
    if errors:
        raise errors[0]
    return results


# --------------------------------------------------------------------------------------------
# fused multiply-add
# --------------------------------------------------------------------------------------------
def fma_f32(a, b, c):
    """``fmaf(a, b, c)`` of three float32: the exact ``a*b + c`` rounded once to float32 (ties to even).

    Compiled code uses LLVM's ``llvm.fma.f32`` (one ``vfmadd`` per vector on x86 with FMA, else
    libm's exact ``fmaf``). This Python body is the NUMBA_DISABLE_JIT path: ``a*b`` of two float32
    is exact in float64, the sum is made exact as ``s + err`` (TwoSum) and rounded to odd in
    float64 when inexact, so the final float64 -> float32 rounding is the single correct one
    (53 >= 24 + 2 bits).
    """
    p = np.float64(a) * np.float64(b)
    cc = np.float64(c)
    s = p + cc
    bb = s - p
    err = (p - (s - bb)) + (cc - bb)
    if err != 0.0 and np.isfinite(s):  # (+-inf * inv has no error to keep)
        m, _ = math.frexp(s)
        if (np.int64(m * 9007199254740992.0) & 1) == 0:  # even last bit: step toward the exact value
            s = np.nextafter(s, np.inf if err > 0.0 else -np.inf)
    return np.float32(s)


@intrinsic
def _llvm_fma_f32(typingctx, a, b, c):
    def codegen(context, builder, signature, args):
        f32 = ir.FloatType()
        fma = builder.module.declare_intrinsic("llvm.fma", [f32], ir.FunctionType(f32, [f32, f32, f32]))
        return builder.call(fma, args)
    return types.float32(types.float32, types.float32, types.float32), codegen


@overload(fma_f32, inline="always")
def _fma_f32_jit(a, b, c):
    return lambda a, b, c: _llvm_fma_f32(np.float32(a), np.float32(b), np.float32(c))
