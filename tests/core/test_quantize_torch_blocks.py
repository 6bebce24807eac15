"""quantize_per_tensor's fused 8-bit loop runs in streaming blocks (dspsim.quantize._torch_fused_run):
every block edge, work-item edge, cache-line offset of the output and ragged end give the oracle's
codes, and a NaN anywhere is refused."""
import importlib

import numpy as np
import pytest

import dspsim
from dspsim import oracle as R

F = np.float32
Q = importlib.import_module("dspsim.quantize")
BOUNDS = {"quint8": (0, 255), "qint8": (-128, 127)}
# two work items (dspsim.quantize._CHUNK) and a ragged last block with a partial last line
N = Q._CHUNK + 3 * Q._STREAM_BLOCK + 5
EDGES = sorted({e + d for e in [0, Q._STREAM_BLOCK, 2 * Q._STREAM_BLOCK, Q._CHUNK, N - Q._STREAM_BLOCK, N - 1]
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
    near = np.unique(np.clip(np.arange(0, N, Q._STREAM_BLOCK)[:, None] + np.arange(-2, 3), 0, N - 1))
    at = np.union1d(near, EDGES)  # every element within 2 of a block start, and the chunk / prefetch edges
    assert got[at].tolist() == [R.torch_quantize(v, s, zp, lo, hi, fused=True) for v in x[at].tolist()]


@pytest.mark.parametrize("at", EDGES)
def test_a_nan_at_any_block_or_chunk_edge_is_refused(at):
    x = np.zeros(N, F)
    x[at] = np.nan
    with pytest.raises(ValueError, match="^quantize_per_tensor: x contains NaN"):
        dspsim.quantize_per_tensor(x, 0.1, 3, "quint8")


@pytest.mark.parametrize("offset", range(Q.LINE))
def test_every_cache_line_offset_of_the_output_gets_every_code_once(offset):
    """The codes before the output's first line boundary go in place, the rest through streaming
    blocks: at each of the 64 offsets the run writes exactly out[i:end], every code the oracle's."""
    s, zp, n = 0.0234375, 131, 3 * Q._STREAM_BLOCK + 77
    x = _edge_input(s)[:n]
    buf = np.full(n + 2 * Q.LINE, 7, np.uint8)
    base = (Q.LINE - buf.ctypes.data % Q.LINE) % Q.LINE + offset
    out = buf[base:base + n + 3]
    nan = Q._torch_fused_run(x, out, 1, n, F(1) / F(s), F(zp), F(0), F(255), np.int32(0), np.int32(255))
    want = [R.torch_quantize(v, s, zp, 0, 255, fused=True) for v in x[1:n].tolist()]
    assert not nan and out[1:n].tolist() == want
    assert out[0] == 7 and out[n:].tolist() == [7, 7, 7]  # nothing outside [i, end)
