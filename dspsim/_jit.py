"""The JIT machinery every kernel shares: one way to use threads, and the fused multiply-add intrinsic.

Threads
-------
A kernel that is worth splitting is a ``nogil`` numba function over a range of rows (or work items);
:func:`parallel_rows` cuts that range into a few contiguous chunks per thread, which the calling
thread and a thread pool take in turn, and returns every chunk's result in order. Because the
chunks are plain (not ``prange``) loops, every kernel compiles with ``cache=True`` and loads from
disk in later processes; numba cannot cache ``parallel=True`` functions.

* One threshold, :data:`PARALLEL_MIN`: each thread gets at least that many elements of work, so a
  call below ``2 * PARALLEL_MIN`` stays on the calling thread (handing work to a thread costs tens
  of microseconds on a busy machine).
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

PARALLEL_MIN = 1 << 18
"""Elements of work each thread gets at least (about 0.1 ms of an elementwise loop on one core)."""
_CHUNKS_PER_THREAD = 4

_POOL = {}
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


def _pool(workers: int):
    """The thread pool, with at least ``workers`` threads (made once, grown if a larger count is set)."""
    with _POOL_LOCK:
        if _POOL.get("workers", 0) < workers:
            from concurrent.futures import ThreadPoolExecutor

            old = _POOL.get("pool")
            _POOL.update(pool=ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dspsim"), workers=workers)
            if old is not None:
                old.shutdown(wait=False)
        return _POOL["pool"]


def parallel_rows(call, n_rows: int, work: int) -> list:
    """``[call(r0, r1), ...]`` over a split of ``range(n_rows)`` into contiguous chunks, in order.

    ``work`` is the call's size in elements (a gemm passes its MACs / 8); it runs on
    ``min(get_num_threads(), n_rows, work // PARALLEL_MIN)`` threads, i.e. on the calling thread
    alone when it is small. ``call`` must run a ``nogil`` numba function, so that the chunks run in
    parallel. There are up to :data:`_CHUNKS_PER_THREAD` chunks per thread, taken in turn by the
    calling thread and the pool's: a pool thread that the OS schedules late (a busy machine) finds
    the chunks done instead of holding the call up, so a call never takes much longer than on one
    thread.
    """
    if work < 2 * PARALLEL_MIN:  # one thread's worth: no thread count to look up
        return [call(0, n_rows)]
    threads = min(get_num_threads(), n_rows, work // PARALLEL_MIN)
    if threads <= 1:
        return [call(0, n_rows)]
    n_chunks = min(n_rows, _CHUNKS_PER_THREAD * threads)
    cut = [n_rows * t // n_chunks for t in range(n_chunks + 1)]
    results = [None] * n_chunks
    errors = []
    tickets = itertools.count()  # next() is atomic under the GIL
    finished = threading.Semaphore(0)

    def take_chunks():
        while (i := next(tickets)) < n_chunks:
            try:
                results[i] = call(cut[i], cut[i + 1])
            except BaseException as e:  # re-raised on the calling thread
                errors.append(e)
            finally:
                finished.release()

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
