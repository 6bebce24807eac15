"""What this x86 CPU has: the features the SIMD paths are chosen by, at import, once.

:data:`HAVE_VNNI` and :data:`HAVE_AVX2` say whether numba compiles for a CPU with AVX-512 VNNI
(``vpdpbusd`` on zmm) and with AVX2; every caller of a tile or a lane keeps its plain loop for the
other case. :func:`host_has_vnni` says whether a peer's integer GEMM (FBGEMM, ONNX Runtime's MLAS) takes
its VNNI kernels here: they then sum uint8 x int8 products exactly, else with ``vpmaddubsw``, which
saturates adjacent product pairs to int16 (docs/engines.md; measured on AVX2-only and AVX-512 VNNI hosts).
"""
from __future__ import annotations

import llvmlite.binding as llvm
from numba import config

__all__ = ["HAVE_AVX2", "HAVE_VNNI", "host_has_vnni", "peer_accumulator"]


def _target_has(*features: str) -> bool:
    """True when numba compiles for a CPU with all ``features`` (LLVM names, e.g. ``avx512vnni``)."""
    feats = llvm.get_host_cpu_features()
    host = all(feats.get(f, False) for f in features)
    if config.CPU_NAME is None:
        return host
    # A pinned target (NUMBA_CPU_NAME, e.g. for portable caches) must name the features itself.
    wanted = config.CPU_FEATURES or ""
    return host and all(f"+{f}" in wanted for f in features)


HAVE_VNNI = _target_has("avx512f", "avx512bw", "avx512vnni")
"""numba's target has AVX-512 VNNI: the GEMM cores take :func:`dspsim.simd.tiles.tile_vnni`."""
HAVE_AVX2 = _target_has("avx2")
"""numba's target has AVX2: the AVX2 tiles, the requantization and ADD lanes."""


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
