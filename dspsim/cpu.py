"""What this x86 CPU's features mean for the peers' integer kernels.

FBGEMM (PyTorch) and ONNX Runtime's MLAS multiply uint8 activations by int8 weights with ``vpdpbusd``
when the CPU has VNNI: products summed exactly in int32. Without it they use ``vpmaddubsw``, which
adds adjacent product pairs with int16 saturation (docs/engines.md; measured on AVX2-only and
AVX-512 VNNI hosts). :func:`peer_accumulator` is the :class:`dspsim.Accumulator` that reproduces a
peer on this machine.
"""
from __future__ import annotations

from .accumulator import Accumulator

__all__ = ["host_has_vnni", "peer_accumulator"]


def host_has_vnni(engine: str) -> bool:
    """True when ``engine``'s u8 x s8 GEMM kernels use VNNI on this CPU: FBGEMM with AVX-512 VNNI, ONNX
    Runtime's MLAS with AVX-512 VNNI or AVX-VNNI (``QgemmU8X8KernelAvx2.S``)."""
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    return bool(features.get("avx512vnni") or (engine == "onnxruntime" and features.get("avxvnni")))


def peer_accumulator(engine: str) -> Accumulator:
    """The accumulator of ``engine``'s ("fbgemm" or "onnxruntime") uint8 x int8 GEMM and conv on this
    CPU: exact int32 with VNNI, else int32 with pair saturation (``vpmaddubsw``)."""
    if engine not in ("fbgemm", "onnxruntime"):
        raise ValueError(f"peer_accumulator: engine must be 'fbgemm' or 'onnxruntime', got {engine!r}")
    return Accumulator() if host_has_vnni(engine) else Accumulator(pair_saturation=True)
