"""The header of a ``dspsim bench`` report: the CPU, its SIMD features, the paths dspsim takes on it and
each peer's version and whether its integer GEMM takes VNNI here.

The features and paths are :func:`dspsim.simd.cpu.describe`'s (LLVM's host features: what numba compiles
for, the facts the SIMD paths are chosen by); the CPU's name comes from ``/proc/cpuinfo``.
"""
from __future__ import annotations

import os
import platform

#: the features of the header beyond :func:`dspsim.simd.cpu.describe`'s (LLVM names): AVX-VNNI (ymm ``vpdpbusd``, which MLAS
#: takes where AVX-512 VNNI is absent)
EXTRA_FEATURES = ("avxvnni",)


def cpu_model() -> str:
    """The CPU's name (``model name`` of ``/proc/cpuinfo``; elsewhere :func:`platform.processor`)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def peer_vnni() -> dict:
    """Whether FBGEMM's and ONNX Runtime's MLAS u8 x s8 GEMM take their VNNI kernels here
    (:func:`dspsim.simd.cpu.host_has_vnni`); without them they saturate product pairs to int16."""
    from ..simd.cpu import host_has_vnni

    return {"torch-fbgemm": host_has_vnni("fbgemm"), "onnxruntime": host_has_vnni("onnxruntime")}


def header(peers_available: dict | str) -> dict:
    """The header of a report: ``cpu`` (its name), ``llvm_cpu``, ``load_average``, ``features`` (LLVM
    names, bools), ``level`` (dspsim's SIMD level), ``paths`` (:func:`dspsim.simd.cpu.describe`'s and the GEMM paths
    runnable here, numba's most threads), ``peers`` (versions, as :func:`dspsim.bench.peers.available`, or
    why none ran) and ``peer_vnni`` (:func:`peer_vnni`)."""
    import llvmlite.binding as llvm
    import numba

    from ..kernels.mac import gemm
    from ..simd.cpu import describe

    facts = describe()
    feats = llvm.get_host_cpu_features()
    return dict(cpu=cpu_model(), llvm_cpu=facts["cpu"], load_average=_load_average(),
                features={**facts["features"], **{f: bool(feats.get(f)) for f in EXTRA_FEATURES}},
                level=facts["level"], paths={**facts["paths"], "gemm_runnable": list(gemm.PATHS),
                                                 "numba_threads": numba.config.NUMBA_NUM_THREADS},
                peers=peers_available, peer_vnni=peer_vnni())


def _load_average() -> float | None:
    """The 1-minute load average when the run starts (a shared host: the other processes' demand), or None."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def format_header(h: dict) -> list[str]:
    """The header as Markdown lines."""
    feats = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in h["features"].items())
    paths = "; ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in h["paths"].items())
    peers = h["peers"] if isinstance(h["peers"], str) else "; ".join(f"{k} {v}" for k, v in h["peers"].items())
    vnni = ", ".join(f"{k} {'VNNI (exact int32 sums)' if v else 'no VNNI (vpmaddubsw: pair saturation)'}"
                     for k, v in h["peer_vnni"].items())
    load = "" if h.get("load_average") is None else f"; load average {h['load_average']:.2f} at the start"
    return [f"CPU: {h['cpu']} (LLVM {h['llvm_cpu']}), {os.cpu_count()} CPUs{load}: {feats}", "",
            f"dspsim SIMD level {h['level'] or '-'}, paths: {paths}", "",
            f"peers: {peers}", "", f"peer u8 x s8 GEMM here: {vnni}", ""]
