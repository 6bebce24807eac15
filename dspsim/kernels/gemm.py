"""Exact integer GEMM cores: int8/uint8 x int8 products summed in int32.

``gemm_s32(a, b)`` returns ``C[m, n] = sum_k a[m, k] * b[n, k]`` in int32, wrapping modulo 2^32
(each product is exact; the sum wraps exactly as a C int32 accumulator with -fwrapv would).
Callers decompose zero points around it: for ``sum_k (a + za)(b + zb)`` they add
``za * rowsum(b) + zb * rowsum(a) + K * za * zb``, which is exact modulo 2^32.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True)
def _gemm_s32(a, b, out):
    m_dim, k_dim = a.shape
    n_dim = b.shape[0]
    for m in prange(m_dim):
        for n in range(n_dim):
            acc = np.int32(0)
            for k in range(k_dim):
                acc += np.int32(a[m, k]) * np.int32(b[n, k])
            out[m, n] = acc


def gemm_s32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a (M, K) int8|uint8`` times ``b (N, K) int8`` transposed, exact in int32 (wraps mod 2^32)."""
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.int32)
    _gemm_s32(np.ascontiguousarray(a), np.ascontiguousarray(b), out)
    return out
