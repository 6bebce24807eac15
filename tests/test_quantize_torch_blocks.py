"""quantize_per_tensor's fused 8-bit loop runs in prefetching blocks (dspsim.quantize._torch_fused_run):
every block edge, work-item edge and the prefetch's end of array give the oracle's codes, and a NaN
anywhere is refused."""
import importlib

import numpy as np
import pytest

import dspsim
from dspsim import reference as R

F = np.float32
Q = importlib.import_module("dspsim.quantize")
BOUNDS = {"quint8": (0, 255), "qint8": (-128, 127)}
# two work items (dspsim.quantize._CHUNK) and a ragged last block; the prefetch runs past the end
N = Q._PREFETCH_AHEAD + 3 * Q._PREFETCH_BLOCK + 5
EDGES = sorted({e + d for e in [0, Q._PREFETCH_BLOCK, 2 * Q._PREFETCH_BLOCK, Q._CHUNK, N - Q._PREFETCH_AHEAD, N - 1]
                for d in (-1, 0, 1) if 0 <= e + d < N})


def _edge_input(s: float) -> np.ndarray:
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(N) * 3).astype(F)
    x[::5] = ((rng.integers(-300, 300, x[::5].size) + 0.5) * F(s)).astype(F)  # ties of x / scale
    specials = np.array([np.inf, -np.inf, -0.0, 1e-45, 3e38, -3e38], F)
    x[EDGES] = specials[np.arange(len(EDGES)) % specials.size]
    return x


@pytest.mark.parametrize("dtype, s, zp", [("quint8", 0.0234375, 131), ("qint8", 0.5, -3)])
def test_fused_blocks_give_the_oracles_codes_across_block_and_chunk_edges(dtype, s, zp):
    x = _edge_input(s)
    lo, hi = BOUNDS[dtype]
    got = dspsim.quantize_per_tensor(x, s, zp, dtype).astype(np.int64)
    near = np.unique(np.clip(np.arange(0, N, Q._PREFETCH_BLOCK)[:, None] + np.arange(-2, 3), 0, N - 1))
    at = np.union1d(near, EDGES)  # every element within 2 of a block start, and the chunk / prefetch edges
    assert got[at].tolist() == [R.torch_quantize(v, s, zp, lo, hi, fused=True) for v in x[at].tolist()]


@pytest.mark.parametrize("at", EDGES)
def test_a_nan_at_any_block_or_chunk_edge_is_refused(at):
    x = np.zeros(N, F)
    x[at] = np.nan
    with pytest.raises(ValueError, match="^quantize_per_tensor: x contains NaN"):
        dspsim.quantize_per_tensor(x, 0.1, 3, "quint8")
