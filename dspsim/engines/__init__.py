"""Engines as data: one :class:`EngineProfile` per engine dspsim emulates, and a device's own datapath declared as one.

    dspsim.engines.get("tflm")                       # the profile of a named engine
    dspsim.engines.names()                           # every name, in one vocabulary for every API and CLI verb
    dspsim.DeviceProfile.load("npu.toml")            # an engine with a device's overrides (docs/devices.md)

Every place that takes an engine takes a name or a profile: ``dspsim.tflite.load_model(engine=...)``,
``dspsim.onnx.load_model(engine=...)``, the MAC kernels' ``requant=``, ``dspsim diagnose | validate |
export-model | run --engine``. Modules: :mod:`.profile` (the dataclasses), :mod:`.named` (the engines dspsim
names), :mod:`.device` (device profiles from TOML).
"""
from __future__ import annotations

from .device import DeviceProfile
from .named import ENGINES, named
from .profile import (MAC_FAMILIES, ApproximationWarning, Defect, EngineDefectWarning, EngineProfile, Kernel, MacProfile, MacRule,
                      ModelFormat, OnnxKernels, OnnxProfile, RealMultiplier, RequantInput, RequantKind, RequantRule,
                      TfliteProfile)

__all__ = ["ApproximationWarning", "DeviceProfile", "Defect", "ENGINES", "EngineDefectWarning", "EngineProfile", "Kernel", "MAC_FAMILIES",
           "MacProfile", "MacRule", "ModelFormat", "OnnxKernels", "OnnxProfile", "RealMultiplier", "RequantInput",
           "RequantKind", "RequantRule", "TfliteProfile", "get", "names"]

def names(fmt: ModelFormat | str | None = None) -> tuple:
    """The named engines (those that run models of format ``fmt``, when given), in the table's order."""
    if fmt is None:
        return tuple(ENGINES)
    fmt = ModelFormat(fmt)
    return tuple(n for n, p in ENGINES.items() if p.runs(fmt))


def get(engine, func: str = "dspsim.engines.get", fmt: ModelFormat | str | None = None) -> EngineProfile:
    """The :class:`EngineProfile` of ``engine``: a profile (returned as it is), an engine name, or the path of a
    device's TOML file (``*.toml``). With ``fmt``, the engine must run models of that format.

    Raises ValueError naming ``func`` and the choices for an unknown name or an engine of another format,
    TypeError for another type.
    """
    if isinstance(engine, EngineProfile):
        profile = engine
    elif isinstance(engine, str):
        if engine.endswith(".toml"):
            profile = DeviceProfile.load(engine)
        else:
            profile = named(engine, func, names(fmt))
    else:
        raise TypeError(f"{func}: engine must be an engine name, a .toml path or an EngineProfile, got "
                        f"{type(engine).__name__}")
    if fmt is not None and not profile.runs(ModelFormat(fmt)):
        raise ValueError(f"{func}: engine {profile.name!r} does not run {ModelFormat(fmt).value} models; those "
                         f"that do: {list(names(fmt))}")
    return profile
