"""A device's own datapath, declared: an engine with the overrides of what the hardware does differently.

A bring-up team writes a small TOML file (docs/devices.md has two worked ones)::

    name = "acme-npu"            # how reports name it
    engine = "tflm"              # the engine it starts from (dspsim.engines.names())

    [mac]                        # every MAC family: FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV
    accumulator_bits = 24        # the accumulator register, 16..64
    accumulator_overflow = "saturate"
    multiplier_bits = 15         # a Q15 requantization multiplier
    shift_rounding = "half_up"   # the tie rule of the final shift

    [depthwise_conv_2d]          # one family, where it differs
    rounding = "single"

and loads it wherever an engine is taken: ``load_model(model, engine=dspsim.DeviceProfile.load("npu.toml"))`` or
``--engine npu.toml``. Keys (:data:`MAC_KEYS`), in ``[mac]`` or a family's table (which wins):

=========================  ===========================================================================
``accumulator_bits``       16..64: the register the products are summed in
``accumulator_overflow``   ``"wrap"`` | ``"saturate"`` (each addition, MAC by MAC)
``pair_saturation``        ``true``: adjacent products summed with int16 saturation first (x86 ``vpmaddubsw``)
``bias_bits``              8..32: the bias register (an int32 bias is saturated to it)
``requantization``         ``"fixed_point"`` | ``"float32"`` | ``"double_scale"`` | ``"float64"`` | ``"shift"``
``multiplier_bits``        2..31 (31, 15 and 7: int32, int16, int8 multipliers): fixed point
``rounding``               ``"double"`` (SRDHM then the shift) | ``"single"`` (one rounding shift): fixed point
``shift_rounding``         the final shift's tie rule: ``"half_away_from_zero"`` | ``"half_up"`` |
                           ``"half_to_even"`` | ``"floor"`` (truncating shift) | ``"toward_zero"``
``requant_input``          ``"int32"`` (the accumulator saturated to int32 first) | ``"accumulator"`` (as it is)
``float_rounding``         float32 requantization's tie rule (the same names)
``vector_channels``        0..64, ``[depthwise_conv_2d]`` only: the output channels in vector blocks of this
                           many take ``shift_rounding``, the last ``C % vector_channels`` the rounding's own tie
                           rule (a scalar tail loop, as LiteRT's optimized depthwise kernel: 8)
=========================  ===========================================================================

and ``[tflite] rounding = "double" | "single"`` for the fixed-point operators outside the MAC families, ``[tflite]
quotient = "double" | "float32"`` for TFLM Prepares that divide two float32 scales (LEAKY_RELU, SUB), ``[tflite]
approximate_float = true`` to run the float32 operators whose engine kernel dspsim does not reproduce with the
reference IEEE arithmetic, each named in a warning (``TfliteProfile.approximate_float``). A key
that is not one of these, or a value outside its set, is refused with a ValueError naming the key and the
allowed values. :meth:`DeviceProfile.to_toml` writes a profile back (``dspsim diagnose`` prints the one that
reproduces a device's dumps that way).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from .._io import read_bytes
from ..accumulator import Accumulator
from ..fixedpoint import Rounding
from .named import named
from .profile import MAC_FAMILIES, EngineProfile, RequantInput, RequantKind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["DeviceProfile", "MAC_KEYS", "with_options"]

_TIES = tuple(r.name.lower() for r in Rounding)
_KINDS = tuple(k.value for k in (RequantKind.FIXED_POINT, RequantKind.FLOAT32, RequantKind.DOUBLE_SCALE,
                                 RequantKind.FLOAT64, RequantKind.SHIFT))

MAC_KEYS = MappingProxyType({
    "accumulator_bits": range(16, 65),
    "accumulator_overflow": ("wrap", "saturate"),
    "pair_saturation": (False, True),
    "bias_bits": range(8, 33),
    "requantization": _KINDS,
    "multiplier_bits": range(2, 32),
    "rounding": ("double", "single"),
    "shift_rounding": _TIES,
    "requant_input": tuple(r.value for r in RequantInput),
    "float_rounding": _TIES,
    "vector_channels": range(0, 65),
})
"""The keys of a MAC table and their allowed values."""
#: keys that only some families' kernels model, and those families
_FAMILY_ONLY = MappingProxyType({"vector_channels": ("depthwise_conv_2d",)})
_TFLITE_KEYS = MappingProxyType({"rounding": ("double", "single"), "quotient": ("double", "float32"),
                                  "approximate_float": (False, True)})
_TOP_KEYS = ("name", "engine", "summary")
_TABLES = ("mac", "tflite") + MAC_FAMILIES


def _allowed_text(allowed) -> str:
    if isinstance(allowed, range):
        return f"an integer in [{allowed.start}, {allowed.stop - 1}]"
    if allowed == (False, True):
        return "true or false"
    return "one of " + ", ".join(repr(v) for v in allowed)


def _check_value(where, key, value, allowed):
    if isinstance(allowed, range):
        ok = isinstance(value, int) and not isinstance(value, bool) and value in allowed
    elif allowed == (False, True):
        ok = isinstance(value, bool)
    else:
        ok = isinstance(value, str) and value in allowed
    if not ok:
        raise ValueError(f"{where}: {key} must be {_allowed_text(allowed)}, got {value!r}")


def _checked(overrides: dict, where: str) -> dict:
    """``overrides`` (a parsed TOML document) checked key by key; every table normalised to a plain dict."""
    if not isinstance(overrides, dict):
        raise TypeError(f"{where}: a device profile is a table of keys, got {type(overrides).__name__}")
    unknown = sorted(set(overrides) - set(_TOP_KEYS) - set(_TABLES))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; a device profile has {list(_TOP_KEYS)} and the "
                         f"tables {list(_TABLES)}")
    if "engine" not in overrides:
        raise ValueError(f"{where}: 'engine' is required: the engine the device starts from")
    for key in _TOP_KEYS:
        if key in overrides and (not isinstance(overrides[key], str) or not overrides[key]):
            raise ValueError(f"{where}: {key} must be a non-empty string, got {overrides[key]!r}")
    out = {k: overrides[k] for k in _TOP_KEYS if k in overrides}
    for table in _TABLES:
        if table not in overrides:
            continue
        values = overrides[table]
        if not isinstance(values, dict):
            raise ValueError(f"{where}: {table} must be a table ([{table}]), got {values!r}")
        keys = _TFLITE_KEYS if table == "tflite" else MAC_KEYS
        for key, value in values.items():
            if key not in keys:
                raise ValueError(f"{where}: unknown key '{table}.{key}'; [{table}] takes {list(keys)}")
            if table not in _FAMILY_ONLY.get(key, (table,)):
                raise ValueError(f"{where}: '{table}.{key}' is not modelled there; put {key} in "
                                 + " or ".join(f"[{t}]" for t in _FAMILY_ONLY[key]))
            _check_value(where, f"{table}.{key}", value, keys[key])
        out[table] = dict(values)
    return out


def _mac_rule(rule, keys: dict):
    """``rule`` (a MacRule) with the TOML ``keys`` applied (8-bit requantization; the accumulator and the
    bias of every layer)."""
    acc = rule.accumulator or Accumulator()
    acc = Accumulator(keys.get("accumulator_bits", acc.bits), keys.get("accumulator_overflow", acc.overflow),
                      keys.get("pair_saturation", acc.pair_saturation))
    rq = rule.requant
    changes = {}
    if "requantization" in keys:
        changes["kind"] = RequantKind(keys["requantization"])
    for key in ("rounding", "multiplier_bits", "vector_channels"):
        if key in keys:
            changes[key] = keys[key]
    for key in ("shift_rounding", "float_rounding"):
        if key in keys:
            changes[key] = Rounding[keys[key].upper()]
    if "requant_input" in keys:
        changes["requant_input"] = RequantInput(keys["requant_input"])
    rq16 = rule.requant_16x8  # 16x8 layers take the build's rounding only (the int64 overload has none)
    if "rounding" in keys and rq16.kind is RequantKind.FIXED_POINT and rq16.rounding != "int64":
        rq16 = replace(rq16, rounding=keys["rounding"])
    rq_u8, rq_grouped = rule.requant_uint8, rule.requant_grouped  # an engine's own rules take the 8-bit keys too
    if changes:
        rq_u8, rq_grouped = (None if r is None else replace(r, **changes) for r in (rq_u8, rq_grouped))
    return replace(rule, requant=replace(rq, **changes) if changes else rq, requant_16x8=rq16, requant_uint8=rq_u8,
                   requant_grouped=rq_grouped,
                   accumulator=None if acc == Accumulator() and rule.accumulator is None else acc,
                   bias_bits=keys.get("bias_bits", rule.bias_bits))


@dataclass(frozen=True, repr=False)
class DeviceProfile(EngineProfile):
    """An :class:`EngineProfile` made from an engine and a device's overrides (the module docstring's keys).

    Build one with :meth:`load` (a TOML file), :meth:`loads` (TOML text) or :meth:`from_dict` (the same
    document as a dict); :meth:`to_toml` gives the file back. :attr:`overrides` holds the document as given.
    """

    overrides: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def __hash__(self):
        return hash((self.name, self.base, self.to_toml()))

    @classmethod
    def from_dict(cls, document: dict, source: str = "DeviceProfile") -> "DeviceProfile":
        """The profile a TOML document describes (ValueError naming ``source`` and the key on a bad one)."""
        doc = _checked(document, source)
        base = named(doc["engine"], source)
        return cls.derived(base, doc, source)

    @classmethod
    def derived(cls, base: EngineProfile, document: dict, source: str = "DeviceProfile") -> "DeviceProfile":
        """``base`` with the overrides of ``document`` (its ``engine`` key, if any, is ``base``'s name). A device
        profile as ``base`` merges its overrides under the new ones (so that the TOML written back names an
        engine dspsim knows)."""
        if isinstance(base, DeviceProfile):
            merged = {k: (dict(v) if isinstance(v, MappingProxyType) else v) for k, v in base.overrides.items()}
            for key, value in document.items():
                if key == "engine":
                    continue
                merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) else value
            return cls.from_dict(merged, source)
        doc = _checked({**document, "engine": base.name}, source)
        mac = base.mac
        common = doc.get("mac", {})
        rules = {fam: _mac_rule(mac.family(fam), {**common, **doc.get(fam, {})}) for fam in MAC_FAMILIES
                 if common or fam in doc}
        changes = {"mac": mac.with_rules(**rules)} if rules else {}
        if "tflite" in doc:
            if base.tflite is None:
                raise ValueError(f"{source}: [tflite] is set, but engine {base.name!r} runs no TFLite models")
            changes["tflite"] = replace(base.tflite, **doc["tflite"])
        name = doc.get("name", f"{base.name}+device")
        summary = doc.get("summary", f"{base.name} with a device's datapath ({', '.join(_changed_keys(doc))})")
        fields_ = {f: getattr(base, f) for f in ("formats", "interpreter", "tflite", "onnx", "defects")}
        fields_.update(changes)
        return cls(name, summary, fields_.pop("mac", base.mac), base=base.name,
                   overrides=MappingProxyType({k: (MappingProxyType(dict(v)) if isinstance(v, dict) else v)
                                               for k, v in doc.items()}), **fields_)

    @classmethod
    def loads(cls, text: str, source: str = "DeviceProfile.loads") -> "DeviceProfile":
        """The profile of TOML ``text``."""
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{source}: not valid TOML: {exc}") from None
        return cls.from_dict(doc, source)

    @classmethod
    def load(cls, path) -> "DeviceProfile":
        """The profile of the TOML file ``path`` (OSError when it cannot be read; ValueError when it is not a regular
        file or is larger than ``dspsim._io.MAX_TEXT``)."""
        p = Path(path)
        return cls.loads(read_bytes(p, "DeviceProfile.load").decode("utf-8"), f"DeviceProfile: {p}")

    def to_toml(self) -> str:
        """The profile as a TOML document that :meth:`loads` reads back into an equal profile."""
        doc = self.overrides
        lines = [f"{k} = {_toml_value(doc[k])}" for k in _TOP_KEYS if k in doc]
        for table in _TABLES:
            if table in doc and doc[table]:
                lines += ["", f"[{table}]"] + [f"{k} = {_toml_value(v)}" for k, v in doc[table].items()]
        return "\n".join(lines) + "\n"


def _changed_keys(doc: dict) -> list:
    return [f"{t}.{k}" for t in _TABLES for k in doc.get(t, {})]


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    text = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def with_options(profile: EngineProfile, accumulator=None, rounding=None, func: str = "with_options",
                 approximate_float: bool = False) -> EngineProfile:
    """``profile`` with the ``load_model`` shorthands applied: ``accumulator`` (an :class:`~dspsim.Accumulator`
    for every MAC family), ``rounding`` ("double" | "single": the build's ``MultiplyByQuantizedMultiplier``,
    ``TFLITE_SINGLE_ROUNDING``) and ``approximate_float`` (``TfliteProfile.approximate_float``); ``profile`` itself
    when none is given. The result is a :class:`DeviceProfile` whose TOML says the same."""
    if not isinstance(approximate_float, bool):
        raise TypeError(f"{func}: approximate_float must be a bool, got {type(approximate_float).__name__}")
    doc = {}
    if accumulator is not None:
        if not isinstance(accumulator, Accumulator):
            raise TypeError(f"{func}: accumulator must be a dspsim.Accumulator, got {type(accumulator).__name__}")
        doc["mac"] = {"accumulator_bits": accumulator.bits, "accumulator_overflow": accumulator.overflow,
                      "pair_saturation": bool(accumulator.pair_saturation)}
    if rounding is not None:
        if rounding not in ("double", "single"):
            raise ValueError(f"{func}: rounding must be one of ('double', 'single'), got {rounding!r}")
        if rounding != (profile.tflite.rounding if profile.tflite is not None else "double"):
            doc.setdefault("mac", {})["rounding"] = rounding
            if profile.tflite is not None:
                doc["tflite"] = {"rounding": rounding}
    approximate = bool(approximate_float) and profile.tflite is not None and not profile.tflite.approximate_float
    if approximate:
        doc.setdefault("tflite", {})["approximate_float"] = True
    if not doc:
        return profile
    words = ([f"accumulator={accumulator.bits},{accumulator.overflow}"
              + (",pair_saturation" if accumulator.pair_saturation else "")] if accumulator is not None else []) \
        + ([f"rounding={rounding}"] if "rounding" in doc.get("tflite", {}) or "rounding" in doc.get("mac", {})
           else []) + (["approximate-float"] if approximate else [])
    return DeviceProfile.derived(profile, {**doc, "name": " ".join([profile.name, *words])}, func)
