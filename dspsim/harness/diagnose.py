"""Diff a device's per-layer dumps against a model and find which arithmetic explains the difference.

:func:`diagnose` runs the model (TFLite or ONNX, :func:`dspsim.load_model`) under a base engine (``--engine``:
a name, a device's ``.toml`` file, or a profile), compares every dumped tensor (:mod:`dspsim.harness.dumps`)
bit for bit, in execution order, and:

1. names the **first divergence**: the first dumped tensor that differs (an operator's output, or
   a model input or constant the device holds differently), with mismatch count, max |diff| in LSB,
   first index and a histogram of the signed differences; every diverging integer tensor gets its **clue**
   (:mod:`dspsim.harness.clues`: the exact histogram, device - dspsim, and the pattern of its differences in
   one sentence, e.g. "every difference is +64, all in channel 5: bit 6 stuck at 1"; 1-LSB differences of a MAC
   operator are placed at or off the ties of dspsim's own requantization, :func:`_exact_requant`);
   the operator outputs the device did **not dump** are listed (:func:`not_dumped`), with the caveat that the
   first divergence may begin at one of them, when they run before it;
2. says for every diverging operator whether the divergence is **local** (the operator, run alone
   on the device's own inputs where those were dumped and on the model's values elsewhere, still
   differs from the device) or **inherited** (given what the device fed it, it agrees);
3. **searches the device profiles** dspsim can run (:mod:`dspsim.engines.device`): every engine of the
   model's format and its build's rounding (:func:`engine_variants`), then, on the base and on the engines
   that come closest, the accumulator register (widths 16..48 wrapping and saturating, pair saturation where
   the MAC ops are uint8 x int8: :func:`accumulator_variants`), and the requantization's fields one at a time
   (multiplier width, the final shift's tie rule, the bias width, float32 requantization and its tie rule:
   :func:`field_variants`), keeping each change that brings the dumps closer, until none does; each on the
   whole model and on the diverging operator alone. The profile that reproduces every dump is printed as
   TOML (``profile_toml``), ready to save as the device's file.

A variant is a device profile's document (the TOML as a dict, :class:`dspsim.DeviceProfile`), named by what
it changes from the base (:func:`variant_label`, parsed back by :func:`parse_variant`): ``"engine=tflm"``,
``"rounding=single"`` (the build's ``MultiplyByQuantizedMultiplier``, ``load_model(rounding=)``),
``"accumulator=24,saturate"`` (``load_model(accumulator=)``: ``accumulator_bits``, ``accumulator_overflow``,
``pair_saturation``), any key of a device's ``[mac]`` table as ``key=value`` (``"multiplier_bits=15"``,
``"shift_rounding=half_up"``) and of another table as ``table.key=value`` (``"depthwise_conv_2d.rounding=single"``),
several separated by spaces. A variant whose dumped tensors are identical to those of a simpler one (an engine
that computes these inputs exactly as the base does; an accumulator wide enough never to overflow on them) is
reported as ``same_as`` that one and left out of ``reproduced_by``.

The result is a dict (``results.json`` of ``dspsim diagnose``, schema ``dspsim.diagnose/2``)::

    {"schema": "dspsim.diagnose/2", "kind": "diagnose", "model", "engine" (base label), "dumps",
     "dumped" (count), "ignored" (files), "passed" (every dump matches),
     "first_divergence": null | {"op_index" (null for a constant, -1 for a model input), "op",
         "tensor", "name", "mismatches", "count", "max_abs_diff", "first_index", "expected",
         "actual", "histogram", "locality" ("local" | "inherited" | null), "undumped_inputs",
         "exact_histogram" ({"+64": 312, ...} | null), "clue" (one sentence | null)},
     "not_dumped": {"tensors", "of", "before_first_divergence", "caveat" (one sentence | null)},
     "reproduced_by": [label], "op_reproduced_by": [label], "profile_toml": null | str,
     "variants": [{"variant", "profile" (its TOML document), "mismatches" (all dumps, whole model),
                   "tensors_matched", "tensors", "first_op" (first diverging op index or null),
                   "op_mismatches" (the diverging operator alone; null if not run), "same_as", "op_same_as"
                   (the simpler variant with the same values on the whole model / on the operator), "error"}],
     "search": {"variants", "skipped": [reason]},
     "layers": [{"op_index", "op", "tensor", "name", "shape", "dtype", "dumped", "file",
                 "file_dtype", "locality", "comparison": comparison | null,
                 "clue": null | {"histogram", "patterns": [{"pattern", "text", ...}], "clue"}}]}

(``expected`` is dspsim's value, ``actual`` the device's.)

:func:`diagnose_frames` diagnoses T frames of a streaming model, the state carried from frame to frame: the
dumps are ``frame<t:04d>/`` subfolders of the dump directory (the layout ``export-model`` writes for T frames;
any subset of the frames), compared frame by frame until one diverges; that frame is diagnosed as above, the
base and every variant first running the frames before it (each with its own arithmetic, as the device's
state would have been). The result adds ``"frame"`` (the frame diagnosed: the first that diverges, else the
last dumped), ``"frames"`` (T), ``"frames_dumped"`` (the frames compared; ``"dumped"`` counts their dumps) and
``"frame_rows"``: ``[{"frame", "folder", "dumped", "mismatches",
"tensors_differing"}]`` for the frames compared (a frame with no folder: ``dumped`` 0, ``mismatches`` null).
"""
from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import numpy as np

from .. import engines
from ..engines import ModelFormat
from ..engines.device import MAC_KEYS, DeviceProfile
from ..load import default_engine, load_model, model_format
from .._io import model_bytes
from . import _model_access as access
from . import clues
from .compare import compare
from .dumps import Dump, DumpError, load_dumps

SCHEMA = "dspsim.diagnose/2"
#: Accumulator widths searched, each wrapping and saturating.
ACCUMULATOR_BITS = range(16, 49)
#: The fields searched one at a time after the engines and the accumulator, with the values tried.
FIELD_VALUES = {"multiplier_bits": (15, 7), "shift_rounding": ("half_up", "half_to_even", "floor", "toward_zero",
                                                               "half_away_from_zero"),
                "bias_bits": (24, 16), "rounding": ("single", "double")}
_MAC_OPS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D", "MatMulInteger", "ConvInteger", "QLinearConv",
            "QLinearMatMul", "QGemm")
_ACC_KEYS = ("accumulator_bits", "accumulator_overflow", "pair_saturation")


# ---------------------------------------------------------------------------------------------
# variants: device profile documents and their names
# ---------------------------------------------------------------------------------------------
def base_document(engine) -> dict:
    """The device document of an engine (a name, a ``.toml`` path, a profile): ``{"engine": name}`` for a named
    engine, the device's overrides for a device profile."""
    profile = engines.get(engine, "diagnose")
    if isinstance(profile, DeviceProfile):
        return _plain(profile.overrides)
    if profile.base is not None and engines.ENGINES.get(profile.name) is not profile:  # unnamed: no document
        raise ValueError(f"diagnose: engine {profile.name!r} is a derived profile; give it as a DeviceProfile "
                         "(its TOML) so that its variants can be named")
    return {"engine": profile.name}


def _plain(doc) -> dict:
    return {k: (dict(v) if hasattr(v, "items") else v) for k, v in doc.items()}


def document(kwargs: dict, base: dict) -> dict:
    """A variant's device document: ``base`` with ``kwargs`` applied: ``engine``, the ``load_model`` shorthands
    ``accumulator`` (an :class:`~dspsim.Accumulator`) and ``rounding``, and TOML tables (``"mac"``, a family,
    ``"tflite"``) whose keys override the base's."""
    doc = _plain(base)
    for key, value in kwargs.items():
        if key == "engine":
            doc["engine"] = value
        elif key == "accumulator":
            mac = doc.setdefault("mac", {})
            if value is None:
                for k in _ACC_KEYS:
                    mac.pop(k, None)
            else:
                mac.update(accumulator_bits=value.bits, accumulator_overflow=value.overflow,
                           pair_saturation=bool(value.pair_saturation))
        elif key == "rounding":
            doc.setdefault("mac", {})["rounding"] = value
            doc.setdefault("tflite", {})["rounding"] = value
        elif isinstance(value, dict):
            doc[key] = {**doc.get(key, {}), **value}
        else:
            doc[key] = value
    return {k: v for k, v in doc.items() if v != {}}


def _source_and_base(source, base):
    """(the model's bytes, its format, the base document) of a diagnosis: ``base`` None (the format's default
    engine), a profile or engine name, a document, or the keyword arguments of one."""
    data = model_bytes(source, "diagnose")
    fmt = model_format(data)
    if base is None:
        base = {"engine": default_engine(fmt)}
    elif not isinstance(base, dict):
        base = base_document(base)
    elif not _is_document(base):
        base = document(base, {})
    return data, fmt, base


def variant_profile(doc: dict, fmt=None):
    """The :class:`~dspsim.engines.EngineProfile` of a document: the named engine itself when the document
    changes nothing else, else a :class:`~dspsim.DeviceProfile`. ``tflite.rounding`` is dropped for an engine
    that runs no TFLite models."""
    if set(doc) <= {"engine"}:
        return engines.get(doc.get("engine"), "diagnose", fmt)
    base = engines.get(doc["engine"], "diagnose", fmt)
    if base.tflite is None and "tflite" in doc:
        doc = {k: v for k, v in doc.items() if k != "tflite"}
    rest = _words(doc, {"engine": doc["engine"]})
    return DeviceProfile.from_dict({"name": f"{doc['engine']} {rest}".strip(), **doc}, "diagnose")


def _flat(doc: dict) -> dict:
    """(table, key) -> value of a document's tables, and ("", "engine")."""
    out = {("", "engine"): doc.get("engine")}
    for table, values in doc.items():
        if isinstance(values, dict):
            out.update({(table, k): v for k, v in values.items()})
    return out


def _words(doc: dict, base: dict) -> str:
    """What ``doc`` changes from ``base``, as words (the module docstring's naming)."""
    a, b = _flat(doc), _flat(base)
    changed = {k: v for k, v in a.items() if b.get(k) != v}
    words = []
    if ("", "engine") in changed:
        words.append(f"engine={changed.pop(('', 'engine'))}")
    if changed.get(("mac", "rounding")) is not None and changed.get(("mac", "rounding")) == changed.get(
            ("tflite", "rounding")):
        words.append(f"rounding={changed.pop(('mac', 'rounding'))}")
        changed.pop(("tflite", "rounding"))
    acc = [changed.get(("mac", k)) for k in _ACC_KEYS]
    if acc[0] is not None and acc[1] is not None:
        words.append(f"accumulator={acc[0]},{acc[1]}" + (",pair_saturation" if acc[2] else ""))
        for k in _ACC_KEYS:
            changed.pop(("mac", k), None)
    for (table, key), v in changed.items():
        text = str(v).lower() if isinstance(v, bool) else v
        words.append(f"{key}={text}" if table == "mac" else f"{table}.{key}={text}")
    return " ".join(words)


def variant_label(doc: dict, base: dict) -> str:
    """The words naming ``doc`` relative to ``base`` (documents, or ``load_model`` keyword sets), e.g.
    ``"engine=tflm"``; ``"base"`` when nothing differs."""
    base = document(base, {}) if not _is_document(base) else base
    doc = document(doc, base) if not _is_document(doc) else doc
    return _words(doc, base) or "base"


def _is_document(d: dict) -> bool:
    return not any(k in d for k in ("accumulator", "rounding"))


def variant_words(doc: dict) -> str:
    """The full name of a document: its engine, then whatever differs from it, e.g. ``"engine=litert
    accumulator=16,saturate"``."""
    rest = variant_label(doc, {"engine": doc["engine"]})
    return f"engine={doc['engine']}" + ("" if rest == "base" else f" {rest}")


def _parse_value(key, text):
    allowed = MAC_KEYS.get(key)
    if isinstance(allowed, range):
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"parse_variant: {key}={text!r}: an integer is needed") from None
    if allowed == (False, True):
        if text not in ("true", "false"):
            raise ValueError(f"parse_variant: {key}={text!r}: true or false")
        return text == "true"
    return text


def parse_variant(text: str, base: dict | None = None) -> dict:
    """The device document a variant label names (the inverse of :func:`variant_label`), applied on top of
    ``base`` (a document). Words: ``engine=E``, ``rounding=double|single``,
    ``accumulator=BITS,wrap|saturate[,pair_saturation]``, ``KEY=VALUE`` for a ``[mac]`` key, ``TABLE.KEY=VALUE``.
    Raises ValueError naming the word it cannot read (the values are checked when the profile is made)."""
    from ..accumulator import Accumulator

    doc = _plain(base or {})
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep or not value:
            raise ValueError(f"parse_variant: {word!r} is not KEY=VALUE (engine=E, rounding=R, "
                             "accumulator=BITS,OVERFLOW, a [mac] key, or TABLE.KEY)")
        if key == "engine":
            doc["engine"] = value
        elif key == "rounding":
            doc = document({"rounding": value}, doc)
        elif key == "accumulator":
            parts = value.split(",")
            try:
                bits = int(parts[0])
            except ValueError:
                raise ValueError(f"parse_variant: {word!r}: accumulator bits must be an integer") from None
            overflow = parts[1] if len(parts) > 1 else "wrap"
            extra = parts[2:]
            if extra not in ([], ["pair_saturation"]):
                raise ValueError(f"parse_variant: {word!r}: only 'pair_saturation' may follow the overflow rule")
            try:
                acc = Accumulator(bits, overflow, pair_saturation=bool(extra))
            except (ValueError, TypeError) as exc:
                raise ValueError(f"parse_variant: {word!r}: {exc}") from None
            doc = document({"accumulator": acc}, doc)
        else:
            table, dot, name = key.rpartition(".")
            table = table if dot else "mac"
            if name not in MAC_KEYS and not (table == "tflite" and name == "rounding"):
                raise ValueError(f"parse_variant: {word!r}: {key!r} is not engine, rounding, accumulator or a key "
                                 f"of a device profile ({', '.join(MAC_KEYS)})")
            doc.setdefault(table, {})[name] = _parse_value(name, value)
    return doc


def _pair_saturation_applies(model) -> bool:
    """True when some MAC operator multiplies uint8 activations by int8 weights (vpmaddubsw's case)."""
    for k, name in model.operators:
        if name in _MAC_OPS:
            ins = model.operator_inputs(k)
            if len(ins) < 2 or min(ins) < 0:
                continue
            a, w = (model.tensor_info(i).dtype for i in (ins[0], ins[3] if name.startswith("QLinear") else ins[1]))
            if a == np.uint8 and w == np.int8:
                return True
    return False


def engine_variants(base: dict, fmt) -> list:
    """The base, then every engine of format ``fmt`` (the base's own first) in each build rounding (TFLite), the
    base's other overrides kept."""
    out = [dict(base)]
    roundings = ("double", "single") if ModelFormat(fmt) is ModelFormat.TFLITE else (None,)
    names = engines.names(fmt)
    own = [base.get("engine")] if base.get("engine") in names else []
    for e in own + [n for n in names if n not in own]:  # the base's engine first: its variants are the simpler
        for r in roundings:
            doc = document({"engine": e} if r is None else {"engine": e, "rounding": r}, base)
            if r == "double":  # the default build: no override
                for table in ("mac", "tflite"):
                    if doc.get(table, {}).get("rounding") == "double" and base.get(table, {}).get("rounding") is None:
                        doc[table] = {k: v for k, v in doc[table].items() if k != "rounding"}
                doc = {k: v for k, v in doc.items() if v != {}}
            if doc not in out:
                out.append(doc)
    return out


def accumulator_variants(model, on: dict) -> tuple:
    """(variants, skipped reasons): the accumulator register ``bits`` wide, wrapping and saturating, for bits in
    16..48 on top of ``on``, plus pair saturation (32-bit wrap and saturate) when the model's MAC ops are
    uint8 x int8."""
    from ..accumulator import Accumulator

    out = [document({"accumulator": Accumulator(b, ov)}, on) for b in ACCUMULATOR_BITS for ov in ("wrap", "saturate")]
    skipped = []
    if _pair_saturation_applies(model):
        out += [document({"accumulator": Accumulator(32, ov, pair_saturation=True)}, on)
                for ov in ("wrap", "saturate")]
    else:
        skipped.append("pair saturation: no MAC operator takes uint8 activations and int8 weights "
                       "(vpmaddubsw's case); the model is int8 x int8")
    return out, skipped


def field_variants(on: dict) -> list:
    """One [mac] field changed at a time on top of ``on`` (:data:`FIELD_VALUES`; float32 requantization with
    each tie rule), the values ``on`` already has left out."""
    mac = on.get("mac", {})
    out = []
    for key, values in FIELD_VALUES.items():
        out += [document({"mac": {key: v}}, on) for v in values if mac.get(key) != v]
    if mac.get("requantization") != "float32":
        out += [document({"mac": {"requantization": "float32", "float_rounding": t}}, on)
                for t in ("half_to_even", "half_away_from_zero", "half_up")]
    return out


# ---------------------------------------------------------------------------------------------
# comparing a run with the dumps
# ---------------------------------------------------------------------------------------------
def _expected_values(model, trace) -> dict:
    """tensor index -> dspsim's value: the trace plus every constant tensor."""
    values = {t: access.tensor_value(model, t) for t in access.constant_tensors(model)}
    values.update({e.tensor: e.value for e in trace})
    return values


def _ordered_rows(model, trace) -> list:
    """(op_index, op, tensor, name) in execution order: constants (op_index None), inputs, ops."""
    consts = [(None, "CONSTANT", t, model.tensor_info(t).name) for t in access.constant_tensors(model)]
    return consts + [(e.op_index, e.op, e.tensor, e.name) for e in trace]


def _mismatches(values: dict, dumps: dict) -> dict:
    """tensor -> mismatch count of dspsim's ``values`` against each dump."""
    out = {}
    for k, d in dumps.items():
        v = values.get(k)
        out[k] = int(d.value.size) if v is None else compare(v, d.value).mismatches
    return out


def _device_inputs(model, op_index: int, dumps: dict, values: dict, state=None) -> tuple:
    """(inputs for run_operator, undumped inputs): the device's dump of each activation input where
    it was dumped, dspsim's value elsewhere (a model input: the one given), None for constants and
    absent inputs; a variable tensor (LSTM / SVDF state) its value before the run, from ``state``
    (tensor index -> value; its dump and trace value are what the run wrote). The undumped inputs are the
    operator outputs that were not dumped."""
    model_inputs = {t.index for t in model.inputs}
    ins, undumped = [], []
    for i in model.operator_inputs(op_index):
        if i < 0 or access.tensor_value(model, i) is not None:
            ins.append(None)
        elif state and i in state:
            ins.append(state[i])
        elif i in dumps:  # a wider dump (int32 codes of an int8 tensor) is fed in the tensor's dtype
            dtype = model.tensor_info(i).dtype
            ins.append(dumps[i].value.astype(dtype if dtype is not None else np.asarray(values[i]).dtype,
                                             copy=False))
        else:
            ins.append(values[i])
            if i not in model_inputs:
                undumped.append(i)
    return ins, undumped


def _op_output(model, op_index: int, out_tensor: int, dumps: dict, values: dict, state=None) -> tuple:
    """(output, undumped inputs) of operator ``op_index`` run alone on the device's inputs where
    dumped (:func:`_device_inputs`), the output shaped as its dump; for a state write (``out_tensor`` a
    variable tensor the operator updates, LSTM / SVDF state) the variable's value after it (None where the
    model does not show it)."""
    ins, undumped = _device_inputs(model, op_index, dumps, values, state)
    y = model.run_operator(op_index, ins)
    if out_tensor not in model.outputs_of(op_index):  # run_operator updates the model's state
        y = (model.variables() if hasattr(model, "variables") else {}).get(out_tensor)
        if y is None:
            return None, undumped
    return np.asarray(y).reshape(dumps[out_tensor].value.shape), undumped


def compare_layers(model, trace, dumps: dict, state=None, fmt: str = "tflite") -> list:
    """One row per tensor of the run (and per constant), in execution order, each dumped one compared
    with dspsim's value; diverging operators get their locality (``state``: the variable tensors before the
    run, :func:`_state_before`), diverging integer tensors their clue (:func:`_clue`; ``fmt``: the model's
    format, which says where the channels are)."""
    values = _expected_values(model, trace)
    rows = []
    for op_index, op, t, name in _ordered_rows(model, trace):
        info = model.tensor_info(t)
        d: Dump | None = dumps.get(t)
        value = values.get(t)  # an ONNX tensor's shape and type may be known only from its value
        shape = info.shape if info.shape is not None else np.shape(value)
        dtype = info.dtype if info.dtype is not None else getattr(value, "dtype", None)
        row = {"op_index": op_index, "op": op, "tensor": t, "name": name, "shape": list(shape),
               "dtype": None if dtype is None else np.dtype(dtype).name, "dumped": d is not None, "file": None if d is None else d.path.name,
               "file_dtype": None if d is None else d.file_dtype, "locality": None, "undumped_inputs": [],
               "comparison": None, "clue": None}
        if d is not None:
            c = compare(values[t], d.value, name)
            row["comparison"] = c.to_dict()
            if c.mismatches:
                real = partial(_exact_requant, model, op_index, t, values) \
                    if op_index is not None and op_index >= 0 else None
                row["clue"] = _clue(values[t], d.value, info.zero_point, fmt, real)
            if c.mismatches and op_index is not None and op_index >= 0:
                y, row["undumped_inputs"] = _op_output(model, op_index, t, dumps, values, state)
                if y is not None:
                    row["locality"] = "local" if compare(y, d.value).mismatches else "inherited"
        if op_index is None and d is None:
            continue  # constants appear only when the device dumped them
        rows.append(row)
    return rows


def _clue(expected, actual, zero_point, fmt: str, real=None):
    """:func:`dspsim.harness.clues.analyze` of a diverging tensor (dspsim's value, the device's), None for a float
    tensor or a dump of another element count. ``real``: a function giving dspsim's value before the final
    rounding (or None), called only when the differences are 1-LSB rounding (it runs the operator again)."""
    ref, dev = np.asarray(expected), np.asarray(actual)
    if ref.dtype.kind not in "iu" or dev.dtype.kind not in "iu" or ref.size != dev.size:
        return None
    kw = dict(zero_point=zero_point, **clues.layout(fmt, ref.ndim))
    found = clues.analyze(ref, dev.reshape(ref.shape), **kw)
    exact = real() if real is not None and any(p["pattern"] == "off_by_one" for p in found["patterns"]) else None
    return found if exact is None else clues.analyze(ref, dev.reshape(ref.shape), real=exact, **kw)


def _exact_requant(model, op_index: int, tensor: int, values: dict):
    """dspsim's value of MAC operator ``op_index``'s output before its final rounding, in output LSB (whose
    fraction a tie rule acts on), from the operator's accumulator after the bias on dspsim's own inputs
    (``values``) and its prepared requantization: a fixed-point multiplier and shift (single rounding:
    ``acc * m * 2^(shift - 31)``, its fraction exact in integers; double: SaturatingRoundingDoublingHighMul's
    result over ``2^-shift``, what RoundingDivideByPOT rounds) or a float scale (``acc * scale`` in the engine's
    float32 / double). None for any other operator or requantization."""
    from .bench_params import bench_params

    if tensor not in model.outputs_of(op_index)[:1]:
        return None
    ins = [None if i < 0 or access.tensor_value(model, i) is not None else values[i]
           for i in model.operator_inputs(op_index)]
    try:
        acc = np.asarray(model.operator_stages(op_index, ins).acc_bias, dtype=np.int64)
        p = bench_params(model, op_index)
    except (ValueError, TypeError):
        return None
    try:
        return _before_rounding(acc, p.names.get("requant_scheme"), p.numbers)
    except ValueError:  # parameters that do not broadcast over this accumulator (per-batch columns): no tie info
        return None


def _before_rounding(acc, scheme, n):
    """:func:`_exact_requant`'s value from the accumulator ``acc`` and the exported parameters ``n``."""
    fixed = scheme in ("double", "single") and "multiplier" in n and np.abs(acc).max(initial=0) < 2 ** 31
    if fixed and scheme == "double":
        shift = n["shift"].astype(np.int64)
        ab = (acc << np.maximum(shift, 0)) * n["multiplier"].astype(np.int64)
        t = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
        high = np.where(t >= 0, t >> 31, -((-t) >> 31))  # SRDHM: C's division by 2^31 truncates toward zero
        return high / 2.0 ** np.maximum(-shift, 0)
    if fixed:
        num = acc * n["multiplier"].astype(np.int64)  # |acc|, m < 2^31: exact in int64
        e = np.broadcast_to(31 - n["shift"].astype(np.int64), num.shape)
        whole = np.where(e > 0, num >> np.maximum(e, 0), num << np.maximum(-e, 0))
        return whole + np.where(e > 0, (num - (whole << np.maximum(e, 0))) / 2.0 ** np.maximum(e, 0), 0.0)
    if scheme in ("double_scale", "float64") and "scale" in n:
        return acc.astype(np.float64) * n["scale"].astype(np.float64)
    if scheme == "float32" and "scale" in n:
        return (acc.astype(np.float32) * n["scale"].astype(np.float32)).astype(np.float64)
    return None


def _first_divergence(rows: list):
    for r in rows:
        c = r["comparison"]
        if c is not None and c["mismatches"]:
            return {"op_index": r["op_index"], "op": r["op"], "tensor": r["tensor"], "name": r["name"],
                    "mismatches": c["mismatches"], "count": c["count"], "max_abs_diff": c["max_abs_diff"],
                    "first_index": c["first_index"], "expected": c["expected"], "actual": c["actual"],
                    "histogram": c["histogram"], "locality": r["locality"], "undumped_inputs": r["undumped_inputs"],
                    "exact_histogram": r["clue"]["histogram"] if r["clue"] else None,
                    "clue": r["clue"]["clue"] if r["clue"] else None}
    return None


def not_dumped(rows: list) -> dict:
    """The operator outputs the device did not dump: ``{"tensors" (their indices, in execution order), "of"
    (every operator output), "before_first_divergence" (those run before it: it may begin there), "caveat" (one
    sentence, None when every operator output was dumped)}``."""
    outputs = [r for r in rows if r["op_index"] is not None and r["op_index"] >= 0]
    missing = [r["tensor"] for r in outputs if not r["dumped"]]
    first = next((k for k, r in enumerate(outputs) if r["comparison"] and r["comparison"]["mismatches"]), None)
    before = [] if first is None else [r["tensor"] for r in outputs[:first] if not r["dumped"]]
    names = ", ".join(f"t{t}" for t in (before or missing)[:8]) + (", …" if len(before or missing) > 8 else "")
    if before:
        f = outputs[first]
        caveat = (f"{len(before)} operator output(s) run before the first divergence were not dumped ({names}): the "
                  f"divergence may begin earlier than op {f['op_index']} {f['op']}")
    elif missing:
        caveat = (f"{len(missing)} of {len(outputs)} operator outputs were not dumped ({names}) and not compared"
                  + (": the device may differ there" if first is None else
                     ", none of them before the first divergence"))
    else:
        caveat = None
    return {"tensors": missing, "of": len(outputs), "before_first_divergence": before, "caveat": caveat}


# ---------------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------------
def _state_before(model) -> dict:
    """The model's variable tensors (LSTM / SVDF state) as the next run reads them, copied."""
    return {k: np.array(v) for k, v in model.variables().items()} if hasattr(model, "variables") else {}


def search_variants(source, inputs, dumps: dict, variants: list, base: dict, *, fmt=None, first=None,
                    base_values=None, order=(), progress=None, start: int = 0, total: int | None = None,
                    warmup=()) -> list:
    """Evaluate each device document of ``variants`` against the dumps.

    For each: the whole model is traced on ``inputs`` and every dump compared (``mismatches``,
    ``tensors_matched``, ``first_op``; ``_prefix``: how many dumps match in execution ``order`` before the first
    that does not); with ``first`` (the first divergence, an operator) the diverging operator alone is run on
    the device's inputs where dumped, ``base_values`` (dspsim's base-run values) elsewhere (``op_mismatches``).
    A variant the loader or a kernel refuses gets ``error`` (one line). ``progress(i, n, label)`` is called
    before each. ``warmup``: the frames (input lists) each variant runs first, its state carried into the
    frame of ``inputs`` (a streaming model's later frame). Returns one dict per variant (see the module
    docstring), with ``_values`` (its values at the dumped tensors) for the equivalence check and ``_doc`` (its
    document).
    """
    n = total if total is not None else len(variants)
    out = []
    for i, doc in enumerate(variants):
        doc = doc if _is_document(doc) else document(doc, base)
        label = variant_label(doc, base)
        if progress:
            progress(start + i + 1, n, label)
        row = {"variant": label, "profile": doc, "mismatches": None, "tensors_matched": None, "tensors": len(dumps),
               "first_op": None, "op_mismatches": None, "same_as": None, "op_same_as": None, "error": None,
               "_doc": doc, "_prefix": -1}
        try:
            m = load_model(source, variant_profile(doc, fmt))
            for frame in warmup:
                m.run(frame)
            state = _state_before(m)
            trace = m.trace(inputs)
            values = _expected_values(m, trace)
            mism = _mismatches(values, dumps)
            row["mismatches"] = sum(mism.values())
            row["tensors_matched"] = sum(1 for v in mism.values() if v == 0)
            row["first_op"] = next((e.op_index for e in trace if mism.get(e.tensor)), None)
            row["_prefix"] = next((k for k, t in enumerate(order) if mism.get(t)), len(order))
            row["_values"] = {k: values.get(k) for k in dumps}
            if first is not None and first["op_index"] is not None and first["op_index"] >= 0:
                y, _ = _op_output(m, first["op_index"], first["tensor"], dumps, base_values, state)
                if y is not None:
                    row["op_mismatches"] = compare(y, dumps[first["tensor"]].value).mismatches
                    row["_op_value"] = y
        except (ValueError, TypeError) as exc:
            row["error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        out.append(row)
    return out


def _same_values(a: dict, b: dict) -> bool:
    return all(x is not None and y is not None and np.shape(x) == np.shape(y) and np.array_equal(x, y)
               for x, y in ((a[k], b[k]) for k in a))


def _mark_equivalents(rows: list, parents: dict) -> None:
    """Set ``same_as`` on each row whose dumped tensors equal those of its parent in ``parents``
    (label -> row: the base for an engine variant, the document without the change for an accumulator or
    field variant), ``op_same_as`` where the diverging operator's output does."""
    for r in rows:
        p = parents.get(r["variant"])
        if p is None or p is r:
            continue
        if "_values" in r and "_values" in p and _same_values(r["_values"], p["_values"]):
            r["same_as"] = p["variant"]
        if "_op_value" in r and "_op_value" in p and np.array_equal(r["_op_value"], p["_op_value"]):
            r["op_same_as"] = p["variant"]


def _closer(row) -> tuple:
    """How close a row comes: more dumps matching in execution order first, then fewer mismatches."""
    if row["error"] is not None or row["mismatches"] is None:
        return (-1, float("-inf"))
    return (row["_prefix"], -row["mismatches"])


def _default_search(source, inputs, dumps, model, base: dict, kw: dict) -> tuple:
    """(rows, skipped): the engine variants; the accumulator variants on the base and on the engine variants
    that differ from it and come closest; then from each of those (the closest first), one field at a time
    (:func:`field_variants`, and the accumulator again once the fields settle), keeping a change that comes
    closer, until none does or the dumps are reproduced; equivalent variants marked."""
    stage1 = engine_variants(base, kw["fmt"])
    found = search_variants(source, inputs, dumps, stage1, base, **kw)
    for i, r in enumerate(found[1:], 1):  # the same values as an earlier (simpler) engine variant?
        twin = next((p for p in found[:i] if p["same_as"] is None and "_values" in p and "_values" in r
                     and _same_values(r["_values"], p["_values"])), None)
        if twin is not None:
            _mark_equivalents([r], {r["variant"]: twin})
    distinct = [r for r in found[1:] if r["error"] is None and r["same_as"] is None]
    best = max((_closer(r) for r in distinct), default=None)
    on = [found[0]] + [r for r in distinct if _closer(r) == best]
    parents, skipped, seen = {}, [], {r["variant"] for r in found}

    def explore(docs, parent):
        rows = search_variants(source, inputs, dumps, [d for d in docs if variant_label(d, base) not in seen],
                               base, start=len(found), total=len(found) + len(docs), **kw)
        seen.update(r["variant"] for r in rows)
        parents.update({r["variant"]: parent for r in rows})
        found.extend(rows)
        return rows

    starts = []
    for p in on:  # from the base and from each closest engine: its accumulators, then the closest of them
        accs, skipped = accumulator_variants(model, p["_doc"])
        rows = explore(accs, p)
        starts.append(max([p] + [r for r in rows if r["error"] is None], key=_closer))

    def descend(current):
        """Fields one at a time, then the accumulator again, keeping a change that comes closer."""
        for _ in range(3):
            while current["mismatches"]:
                better = max(explore(field_variants(current["_doc"]), current), key=_closer, default=None)
                if better is None or _closer(better) <= _closer(current):
                    break
                current = better
            if not current["mismatches"]:
                break
            better = max(explore(accumulator_variants(model, current["_doc"])[0], current), key=_closer, default=None)
            if better is None or _closer(better) <= _closer(current):
                break
            current = better
        return current

    for start in sorted(starts, key=_closer, reverse=True):
        if start["error"] is None and descend(start)["mismatches"] == 0:
            break
    _mark_equivalents(found, parents)
    return [r for r in found if r["variant"] != "base"], skipped


def _profile_toml(doc: dict, fmt) -> str:
    """A variant as the TOML file a device keeps (a named engine: its one line)."""
    profile = variant_profile(doc, fmt)
    if isinstance(profile, DeviceProfile):
        return profile.to_toml()
    return f'engine = "{profile.name}"\n'


def diagnose(source, inputs, dumps_dir, base=None, *, variants=None, search: bool = True,
             progress=None, hex_layout=None, warmup=()) -> dict:
    """Compare a device's dumps with the model under ``base`` and search for the device profile that explains them.

    Parameters
    ----------
    source : path or bytes
        The model (.tflite or .onnx).
    inputs : list of arrays
        The model inputs the device ran on.
    dumps_dir : path
        The device's dump directory (:mod:`dspsim.harness.dumps`).
    base : engine name, .toml path, EngineProfile or device document, optional
        The reference (default the format's engine, :data:`dspsim.load.DEFAULT_ENGINES`). A document (a dict,
        the TOML of a device, or ``load_model`` keywords ``engine`` / ``accumulator`` / ``rounding``).
    variants : list of dict, optional
        Device documents (or ``load_model`` keyword sets) to search (default: the search of the module
        docstring).
    search : bool
        False: only compare (no variant search).
    progress : callable, optional
        ``progress(i, n, label)`` before each variant.
    hex_layout : HexLayout, optional
        How the ``.hex`` dumps pack values (:class:`dspsim.harness.vectors.HexLayout`; default one per word).
    warmup : list of input lists, optional
        Frames run first (by the base and by every variant), the state carried into the frame of ``inputs``
        (:func:`diagnose_frames`).

    Returns
    -------
    dict
        See the module docstring. ``passed`` is True when every dump matches the base.

    Raises
    ------
    DumpError
        For a bad dump directory or file (one line).
    ValueError, TypeError, OSError
        For a model, an engine or inputs that ``load_model`` / ``Model.run`` refuse.
    """
    data, fmt, base = _source_and_base(source, base)
    model = load_model(data, variant_profile(base, fmt))
    for frame in warmup:
        model.run(frame)
    state = _state_before(model)
    trace = model.trace(inputs)
    dumps, ignored = load_dumps(model, dumps_dir, _expected_values(model, trace), hex_layout)
    rows = compare_layers(model, trace, dumps, state, fmt.value)
    first = _first_divergence(rows)
    d = {"schema": SCHEMA, "kind": "diagnose", "model": str(source) if not isinstance(source, bytes) else "<bytes>",
         "engine": variant_words(base), "dumps": str(dumps_dir), "dumped": len(dumps), "ignored": ignored,
         "passed": first is None, "first_divergence": first, "not_dumped": not_dumped(rows),
         "reproduced_by": [], "op_reproduced_by": [],
         "profile_toml": None, "variants": [], "search": {"variants": 0, "skipped": []}, "layers": rows}
    if first is None or not search:
        return d
    if first["op_index"] is None or first["op_index"] < 0:
        what = "a constant (weights, bias)" if first["op_index"] is None else "a model input"
        d["search"]["skipped"].append(f"the first divergence is {what} the device holds differently: "
                                      "no arithmetic variant changes it")
        return d
    order = [e.tensor for e in trace if e.tensor in dumps]
    kw = dict(fmt=fmt, first=first, base_values=_expected_values(model, trace), order=order, progress=progress,
              warmup=list(warmup))
    if variants is not None:
        found = search_variants(data, inputs, dumps, list(variants), base, **kw)
    else:
        found, d["search"]["skipped"] = _default_search(data, inputs, dumps, model, base, kw)
    d["variants"] = sorted(found, key=lambda r: (r["error"] is not None, r["mismatches"] if r["mismatches"] is not None
                                                 else 1 << 62, r["same_as"] is not None, r["op_mismatches"] or 0,
                                                 len(r["variant"].split())))
    d["search"]["variants"] = len(found)
    reproducing = [r for r in d["variants"] if r["mismatches"] == 0 and r["same_as"] is None]
    d["reproduced_by"] = [r["variant"] for r in reproducing]
    d["op_reproduced_by"] = [r["variant"] for r in d["variants"]
                             if r["op_mismatches"] == 0 and r["op_same_as"] is None]
    if reproducing:
        d["profile_toml"] = _profile_toml(reproducing[0]["_doc"], fmt)
    for r in found:
        for k in ("_values", "_op_value", "_doc", "_prefix"):
            r.pop(k, None)
    return d


def frame_dump_dirs(dumps_dir) -> dict:
    """Frame index -> folder, for each ``frame<t>`` subfolder of a dump directory of T frames."""
    d = Path(dumps_dir)
    out = {}
    if d.is_dir():
        for p in d.iterdir():
            m = re.fullmatch(r"frame(\d{1,9})", p.name)
            if m and p.is_dir():
                out[int(m.group(1))] = p
    return out


def diagnose_frames(source, frames, dumps_dir, base=None, *, variants=None, search: bool = True, progress=None,
                    hex_layout=None) -> dict:
    """:func:`diagnose` over T frames of a streaming model (the module docstring): ``frames`` is a list of
    per-frame input lists, ``dumps_dir`` holds ``frame<t>/`` dump folders. DumpError when it holds none, or one
    for a frame past the input's."""
    data, fmt, base = _source_and_base(source, base)
    folders = frame_dump_dirs(dumps_dir)
    if not folders:
        raise DumpError(f"{dumps_dir}: the input has {len(frames)} frames, but there is no frame<t> folder of dumps "
                        "(frame0000/, frame0001/, ... as export-model writes T frames)")
    past = [t for t in sorted(folders) if t >= len(frames)]
    if past:
        raise DumpError(f"{folders[past[0]]}: frame {past[0]}, but the input has {len(frames)} frames")
    model = load_model(data, variant_profile(base, fmt))
    rows, diverging = [], None
    for t, inputs in enumerate(frames):
        if t > max(folders):
            break
        trace = model.trace(inputs)
        if t not in folders:
            rows.append({"frame": t, "folder": None, "dumped": 0, "mismatches": None, "tensors_differing": None})
            continue
        values = _expected_values(model, trace)
        dumps, _ = load_dumps(model, folders[t], values, hex_layout)
        mism = _mismatches(values, dumps)
        rows.append({"frame": t, "folder": folders[t].name, "dumped": len(dumps), "mismatches": sum(mism.values()),
                     "tensors_differing": sum(1 for v in mism.values() if v)})
        if rows[-1]["mismatches"]:
            diverging = t
            break
    t = diverging if diverging is not None else max(folders)
    d = diagnose(data, frames[t], folders[t], base, variants=variants, search=search, progress=progress,
                 hex_layout=hex_layout, warmup=frames[:t])
    d.update(model=str(source) if not isinstance(source, bytes) else "<bytes>", dumps=str(dumps_dir), frame=t,
             frames=len(frames), frame_rows=rows, dumped=sum(r["dumped"] for r in rows),
             frames_dumped=sum(1 for r in rows if r["dumped"]))
    return d
