"""What this x86 CPU has, and the one SIMD level every SIMD path obeys: chosen at import, once.

The level is the highest of :data:`LEVELS` whose features numba's target has (:data:`HOST_LEVEL`), or a lower
one named by the environment variable ``DSPSIM_SIMD`` (a forced fallback; a level above the CPU's is capped
to it); ``plain`` under ``NUMBA_DISABLE_JIT``, where no intrinsic compiles.

=========== ============================================= =================================================
level       needs (LLVM feature names)                    what runs
=========== ============================================= =================================================
``vnni512`` avx512f, avx512bw, avx512vl, avx512vnni       GEMM / conv tile ``vpdpbusd`` zmm; depthwise tap
                                                          pairs ``vpdpwssd`` zmm; requant and ADD lanes
``avx512``  avx512f, avx512bw, avx512vl                   GEMM / conv AVX2 tile; depthwise pairs
                                                          ``vpmaddwd`` zmm; requant and ADD lanes
``avx2``    avx2                                          GEMM / conv AVX2 tile; depthwise pairs
                                                          ``vpmaddwd`` ymm; requant and ADD lanes
``plain``   nothing                                       numba loops only (LLVM still vectorizes them for
                                                          the target)
=========== ============================================= =================================================

:data:`HAVE_AVX2`, :data:`HAVE_AVX512` and :data:`HAVE_VNNI` say whether this process takes those paths (the
target has the features and the level allows them); every caller keeps its plain loop for the other case.

numba's on-disk cache does not key a compiled function by the module globals it read, and these flags are
read at compile time (a branch on a global is pruned, an intrinsic is chosen by one). So a level below the
host's keeps its own cache: ``numba.config.CACHE_DIR`` becomes ``<NUMBA_CACHE_DIR or numba's user cache
dir>/dspsim-simd-<level>`` (set here, before any dspsim function is compiled: ``dspsim/__init__`` imports this
module first), and a forced fallback never loads the host level's code. :func:`describe` reports it all.

:func:`host_has_vnni` says whether a peer's integer GEMM (FBGEMM, ONNX Runtime's MLAS) takes its VNNI kernels
here: they then sum uint8 x int8 products exactly, else with ``vpmaddubsw``, which saturates adjacent product
pairs to int16 (docs/engines.md; measured on AVX2-only and AVX-512 VNNI hosts). AMX (``tdpbusd``) is detected
for :func:`describe` only: no AMX host was at hand, so no AMX tile exists (docs/engines.md, issue 29).
"""
from __future__ import annotations

import os

import llvmlite.binding as llvm
from numba import config

__all__ = ["ENV", "HAVE_AVX2", "HAVE_AVX512", "HAVE_VNNI", "HOST_LEVEL", "LEVEL", "LEVELS", "describe",
           "host_has_vnni", "peer_accumulator"]

ENV = "DSPSIM_SIMD"
"""The environment variable that forces a lower SIMD level."""
LEVELS = ("plain", "avx2", "avx512", "vnni512")
"""The SIMD levels, lowest first."""
_AVX512 = ("avx2", "avx512f", "avx512bw", "avx512vl")
_NEEDS = {"plain": (), "avx2": ("avx2",), "avx512": _AVX512, "vnni512": _AVX512 + ("avx512vnni",)}


def _target_has(*features: str) -> bool:
    """True when numba compiles for a CPU with all ``features`` (LLVM names, e.g. ``avx512vnni``)."""
    feats = llvm.get_host_cpu_features()
    host = all(feats.get(f, False) for f in features)
    if config.CPU_NAME is None:
        return host
    # A pinned target (NUMBA_CPU_NAME, e.g. for portable caches) must name the features itself.
    wanted = config.CPU_FEATURES or ""
    return host and all(f"+{f}" in wanted for f in features)


def choose_level(setting, host: str, jit: bool) -> str:
    """The level a process runs: ``host`` (the target's best), or ``setting`` (a ``DSPSIM_SIMD`` value: one of
    :data:`LEVELS`, or None / "" for the host's) capped to ``host``; ``"plain"`` without ``jit``."""
    if setting and setting not in LEVELS:
        raise ValueError(f"dspsim.simd.cpu: the environment variable {ENV} must be one of {', '.join(LEVELS)} "
                         f"(or unset), got {setting!r}")
    if not jit:
        return "plain"
    return LEVELS[min(LEVELS.index(setting), LEVELS.index(host))] if setting else host


HOST_LEVEL = [lv for lv in LEVELS if _target_has(*_NEEDS[lv])][-1]
"""The best level numba's target has (``DSPSIM_SIMD`` aside)."""
LEVEL = choose_level(os.environ.get(ENV), HOST_LEVEL, not config.DISABLE_JIT)
"""The level this process runs (:func:`choose_level`)."""
_RANK = LEVELS.index(LEVEL)
HAVE_AVX2 = _RANK >= LEVELS.index("avx2")
"""This process takes the AVX2 paths: the GEMM AVX2 tiles, the ymm tap pairs, the requantization and ADD lanes."""
HAVE_AVX512 = _RANK >= LEVELS.index("avx512")
"""This process takes the AVX-512 BW depthwise tap pairs (zmm)."""
HAVE_VNNI = _RANK >= LEVELS.index("vnni512")
"""This process takes the AVX-512 VNNI paths: :func:`dspsim.simd.tiles.tile_vnni`, ``vpdpwssd`` tap pairs."""

if LEVEL != HOST_LEVEL and not config.DISABLE_JIT:  # a forced fallback: its own compiled code (see above)
    from numba.misc.appdirs import AppDirs

    config.CACHE_DIR = os.path.join(config.CACHE_DIR or AppDirs(appname="numba", appauthor=False).user_cache_dir,
                                    f"dspsim-simd-{LEVEL}")


def _amx_flags() -> dict:
    """``amx_tile`` and ``amx_int8`` from /proc/cpuinfo's flags (Linux), else LLVM's host features."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
        return {name: name in flags for name in ("amx_tile", "amx_int8")}
    except OSError:
        feats = llvm.get_host_cpu_features()
        return {name: bool(feats.get(name.replace("_", "-"))) for name in ("amx_tile", "amx_int8")}


def describe() -> dict:
    """The CPU's SIMD features and the paths this process takes (for ``dspsim bench`` and reports).

    Returns
    -------
    dict
        ``cpu`` (LLVM's host CPU name), ``features`` (the AVX2 / AVX-512 / AMX features, bools),
        ``host_level``, ``requested`` (``$DSPSIM_SIMD`` or None), ``level``, ``paths`` (``gemm`` tile
        (``$DSPSIM_GEMM_PATH`` overrides it), ``depthwise`` pairs, ``requant`` and ``add`` lanes) and
        ``cache_dir`` (numba's, None for the in-tree ``__pycache__``).
    """
    feats = llvm.get_host_cpu_features()
    features = {f: bool(feats.get(f)) for f in _NEEDS["vnni512"]}
    features.update(_amx_flags())
    gemm = "vnni" if HAVE_VNNI else "avx2" if HAVE_AVX2 else "plain"
    pairs = ("vpdpwssd zmm" if HAVE_VNNI else "vpmaddwd zmm" if HAVE_AVX512 else "vpmaddwd ymm" if HAVE_AVX2
             else "direct loop")
    lanes = "int32/float32 lanes" if HAVE_AVX2 else "scalar loop"
    return dict(cpu=llvm.get_host_cpu_name(), features=features, host_level=HOST_LEVEL,
                requested=os.environ.get(ENV) or None, level=LEVEL,
                paths=dict(gemm=os.environ.get("DSPSIM_GEMM_PATH") or gemm, depthwise=pairs, requant=lanes,
                           add=lanes),
                cache_dir=config.CACHE_DIR or None)


def host_has_vnni(peer: str) -> bool:
    """True when ``peer``'s u8 x s8 GEMM kernels use VNNI on this CPU: FBGEMM with AVX-512 VNNI, ONNX
    Runtime's MLAS with AVX-512 VNNI or AVX-VNNI (``QgemmU8X8KernelAvx2.S``)."""
    features = llvm.get_host_cpu_features()
    return bool(features.get("avx512vnni") or (peer == "onnxruntime" and features.get("avxvnni")))


def peer_accumulator(peer: str):
    """The :class:`dspsim.Accumulator` of ``peer``'s ("fbgemm" or "onnxruntime") uint8 x int8 GEMM and conv
    on this CPU: exact int32 with VNNI, else int32 with pair saturation (``vpmaddubsw``)."""
    from ..accumulator import Accumulator

    if peer not in ("fbgemm", "onnxruntime"):
        raise ValueError(f"peer_accumulator: engine must be 'fbgemm' or 'onnxruntime', got {peer!r}")
    return Accumulator() if host_has_vnni(peer) else Accumulator(pair_saturation=True)
