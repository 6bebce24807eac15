"""dspsim.simd.cpu's SIMD level (DSPSIM_SIMD): its choice, a forced fallback that runs the fallback code (a fresh
process, its own numba cache) with the bits of the default level and of the oracle, and the depthwise tap pairs'
ymm and zmm variants against their formula."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from dspsim.simd import cpu

SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support")
jit_only = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="the levels need the compiler")


# --------------------------------------------------------------------------------------------
# the choice
# --------------------------------------------------------------------------------------------
def test_choose_level_caps_validates_and_defaults():
    assert cpu.choose_level(None, "vnni512", True) == "vnni512"
    assert cpu.choose_level("", "avx2", True) == "avx2"
    assert cpu.choose_level("avx2", "vnni512", True) == "avx2"
    assert cpu.choose_level("vnni512", "avx2", True) == "avx2"  # capped by the CPU
    assert cpu.choose_level("vnni512", "vnni512", False) == "plain"  # NUMBA_DISABLE_JIT
    with pytest.raises(ValueError, match="DSPSIM_SIMD must be one of plain, avx2, avx512, vnni512"):
        cpu.choose_level("avx-512", "vnni512", True)


def test_flags_and_describe_follow_the_level():
    rank = cpu.LEVELS.index(cpu.LEVEL)
    assert (cpu.HAVE_AVX2, cpu.HAVE_AVX512, cpu.HAVE_VNNI) == (rank >= 1, rank >= 2, rank >= 3)
    assert rank <= cpu.LEVELS.index(cpu.HOST_LEVEL)
    d = cpu.describe()
    assert d["level"] == cpu.LEVEL and d["host_level"] == cpu.HOST_LEVEL
    assert set(d["features"]) >= {"avx2", "avx512bw", "avx512vnni", "amx_tile", "amx_int8"}
    assert set(d["paths"]) == {"gemm", "depthwise", "requant", "add"}
    from dspsim.kernels.mac import gemm

    if not os.environ.get("DSPSIM_GEMM_PATH"):
        assert d["paths"]["gemm"] == gemm.PATHS[0]


def test_invalid_setting_fails_at_import():
    env = dict(os.environ, DSPSIM_SIMD="sse2")
    run = subprocess.run([sys.executable, "-c", "import dspsim"], env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "DSPSIM_SIMD must be one of" in run.stderr


# --------------------------------------------------------------------------------------------
# forced levels in fresh processes
# --------------------------------------------------------------------------------------------
def _run_level(level, cache_dir, out, full=False):
    """Run tests/support/simd_levels.py at ``level`` with numba's cache in ``cache_dir``; its outputs and meta."""
    env = dict(os.environ, DSPSIM_SIMD=level, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=SUPPORT)
    subprocess.run([sys.executable, os.path.join(SUPPORT, "simd_levels.py"), str(out)] + ["full"] * full, env=env,
                   check=True)
    with np.load(out) as z:
        res = {k: z[k] for k in z.files if k != "meta"}
        return res, json.loads(str(z["meta"]))


def _check_level(level, meta, cache_dir):
    """The process ran ``level``'s code: its own cache directory, the GEMM tile and the tap pairs of the level,
    compiled there (no overload of the level-dependent kernels came from a disk cache)."""
    assert meta["describe"]["level"] == level
    if level != cpu.HOST_LEVEL:
        assert meta["describe"]["cache_dir"] == os.path.join(str(cache_dir), f"dspsim-simd-{level}")
    code = meta["code"]
    assert code["gemm"]["compiled"] > 0 and code["gemm"]["cache_hits"] == 0
    assert code["gemm"]["vpdpbusd"] == (level == "vnni512")
    pairs = code["pairs"]
    assert pairs["cache_hits"] == 0
    assert (pairs["compiled"] > 0) == (level != "plain")
    assert pairs["zmm_pairs"] == (level in ("avx512", "vnni512"))


def _same(got, want, what):
    assert set(got) == set(want)
    for name in want:
        assert got[name].shape == np.shape(want[name]), (what, name)
        bad = int(np.count_nonzero(got[name].astype(np.int64) != np.asarray(want[name], np.int64)))
        assert bad == 0, f"{what}: {name}: {bad} mismatches"


@jit_only
def test_forced_plain_runs_the_plain_code_with_the_same_bits(tmp_path):
    import simd_levels

    default = simd_levels.outputs()
    _same(default, simd_levels.oracle_outputs(), "default level vs oracle")
    got, meta = _run_level("plain", tmp_path / "cache", tmp_path / "plain.npz")
    _check_level("plain", meta, tmp_path / "cache")
    _same(got, default, "plain vs default")


@pytest.mark.slow
@jit_only
def test_every_level_gives_the_same_bits(tmp_path):
    import simd_levels

    want = simd_levels.oracle_outputs(full=True)
    for level in cpu.LEVELS[:cpu.LEVELS.index(cpu.HOST_LEVEL) + 1]:
        got, meta = _run_level(level, tmp_path / level, tmp_path / f"{level}.npz", full=True)
        _check_level(level, meta, tmp_path / level)
        _same(got, want, f"{level} vs oracle")


@pytest.mark.slow
@jit_only
@pytest.mark.skipif(cpu.HOST_LEVEL == "plain", reason="a host without AVX2 has one level")
def test_a_forced_level_never_loads_the_host_levels_cache(tmp_path):
    """The host level's compiled code in the same NUMBA_CACHE_DIR first: the forced level still compiles its own
    (the tap pairs read a module global, which numba's cache index does not key)."""
    _run_level(cpu.HOST_LEVEL, tmp_path / "cache", tmp_path / "host.npz")
    below = cpu.LEVELS[cpu.LEVELS.index(cpu.HOST_LEVEL) - 1]
    _, meta = _run_level(below, tmp_path / "cache", tmp_path / "below.npz")
    _check_level(below, meta, tmp_path / "cache")


# --------------------------------------------------------------------------------------------
# the tap pairs' variants (ymm, zmm; blocks per pass) against their formula
# --------------------------------------------------------------------------------------------
def _pair_variant(width, lanes, group):
    from dspsim.kernels.mac.depthwise_core import _pair_sums

    pair_sums = _pair_sums(width, lanes, group)

    @njit
    def run(x, base, offs, n_pairs, w, init, acc, n_blocks, period):
        pair_sums(x, base, offs, n_pairs, w, 0, init, 0, acc, 0, n_blocks, period)

    return run


VARIANTS = [(16, 8, 2), (16, 8, 4), (16, 16, 8), (8, 8, 1)]
"""(width, lanes, group): ymm at 2 and 4 blocks a pass, zmm at 8 (those of the levels), the 8-channel blocks."""
_RUNS = {}


@jit_only
@settings(max_examples=60, deadline=None)
@given(variant=st.sampled_from(VARIANTS), signed=st.booleans(), n_taps=st.integers(1, 9),
       n_blocks=st.integers(0, 19), period=st.integers(1, 3), seed=st.integers(0, 2**32 - 1),
       edge=st.booleans())
def test_pair_sums_variants_match_their_formula(variant, signed, n_taps, n_blocks, period, seed, edge):
    width, lanes, group = variant
    if lanes == 16 and not cpu.HAVE_AVX512:
        return  # zmm needs an AVX-512 BW target (and its level)
    rng = np.random.default_rng(seed)
    dtype = np.int8 if signed else np.uint8
    info = np.iinfo(dtype)
    n_pairs = (n_taps + 1) // 2
    offs = np.sort(rng.choice(200, 2 * n_pairs, replace=True)).astype(np.int64)
    x = rng.integers(info.min, info.max + 1, 200 + width * (n_blocks + 1)).astype(dtype)
    w = rng.integers(-255, 256, (period, n_pairs, width, 2)).astype(np.int16)
    init = rng.integers(-(1 << 31), 1 << 31, period * width).astype(np.int32)
    if edge:  # extreme codes and weights, sums that wrap
        x[:] = info.min if signed else info.max
        w[:] = -255
        init[:] = -(1 << 31)
    base = int(rng.integers(0, 8))
    acc = np.zeros(width * n_blocks, np.int32)
    key = variant
    if key not in _RUNS:
        _RUNS[key] = _pair_variant(*variant)
    _RUNS[key](x, base, offs, n_pairs, w.reshape(-1), init, acc, n_blocks, period)
    want = np.empty(width * n_blocks, np.int64)
    for k in range(n_blocks):
        q = k % period
        s = init[q * width:(q + 1) * width].astype(np.int64)
        for p in range(n_pairs):
            for h in range(2):
                o = base + width * k + offs[2 * p + h]
                s = s + x[o:o + width].astype(np.int64) * w[q, p, :, h]
        want[k * width:(k + 1) * width] = s
    want = (want + (1 << 31)) % (1 << 32) - (1 << 31)
    np.testing.assert_array_equal(acc, want)
