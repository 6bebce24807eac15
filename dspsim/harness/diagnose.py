"""Diff a device's per-layer dumps against a model and find which arithmetic explains the difference.

:func:`diagnose` runs the model (``dspsim.tflite``) under a base configuration (``--engine``),
compares every dumped tensor (:mod:`dspsim.harness.dumps`) bit for bit, in execution order, and:

1. names the **first divergence**: the first dumped tensor that differs (an operator's output, or
   a model input or constant the device holds differently), with mismatch count, max |diff| in LSB,
   first index and a histogram of the signed differences;
2. says for every diverging operator whether the divergence is **local** (the operator, run alone
   on the device's own inputs where those were dumped and on the model's values elsewhere, still
   differs from the device) or **inherited** (given what the device fed it, it agrees);
3. **searches the variants** dspsim emulates (:func:`engine_variants`: every engine, both
   rounding flavours of the fixed-point requantization; :func:`accumulator_variants`:
   ``Accumulator`` widths 16..48 wrapping and saturating, pair saturation where the MAC ops are
   uint8 x int8), each as a set of ``load_model`` keywords, on the diverging operator alone and
   on the whole model, and lists the variants that reproduce every dumped tensor and how close the
   others come.

Variants are named relative to the base configuration, in the words ``load_model`` takes
(:func:`variant_label`, parsed back by :func:`parse_variant`): ``"engine=tflm"``,
``"rounding=single"``, ``"accumulator=24,saturate"``, ``"accumulator=32,wrap,pair_saturation"``,
or several separated by spaces (``"engine=tflm accumulator=18,saturate"``). A variant whose dumped
tensors are identical to those of a simpler one (an engine that computes these inputs exactly as
the base does; an accumulator wide enough never to overflow on them) is reported as ``same_as``
that one and left out of ``reproduced_by``; accumulators are searched on the base and on the
engine variants that differ from it and come closest.

The result is a dict (``results.json`` of ``dspsim diagnose``, schema ``dspsim.diagnose/1``)::

    {"schema": "dspsim.diagnose/1", "kind": "diagnose", "model", "engine" (base label), "dumps",
     "dumped" (count), "ignored" (files), "passed" (every dump matches),
     "first_divergence": null | {"op_index" (null for a constant, -1 for a model input), "op",
         "tensor", "name", "mismatches", "count", "max_abs_diff", "first_index", "expected",
         "actual", "histogram", "locality" ("local" | "inherited" | null), "undumped_inputs"},
     "reproduced_by": [label], "op_reproduced_by": [label],
     "variants": [{"variant", "kwargs", "mismatches" (all dumps, whole model), "tensors_matched",
                   "tensors", "first_op" (first diverging op index or null), "op_mismatches"
                   (the diverging operator alone; null if not run), "same_as", "op_same_as"
                   (the variant without its accumulator, when the accumulator changes nothing on
                   the whole model / on the operator), "error"}],
     "search": {"variants", "skipped": [reason]},
     "layers": [{"op_index", "op", "tensor", "name", "shape", "dtype", "dumped", "file",
                 "file_dtype", "locality", "comparison": comparison | null}]}

(``expected`` is dspsim's value, ``actual`` the device's.)
"""
from __future__ import annotations

import inspect

import numpy as np

from . import _model_access as access
from .compare import compare
from .dumps import Dump, load_dumps

SCHEMA = "dspsim.diagnose/1"
#: Accumulator widths searched, each wrapping and saturating.
ACCUMULATOR_BITS = range(16, 49)
_MAC_OPS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D")
_KEYS = ("engine", "rounding", "accumulator")  # the load_model keywords a variant sets


# ---------------------------------------------------------------------------------------------
# variants: load_model keyword sets and their names
# ---------------------------------------------------------------------------------------------
def _acc_words(acc) -> str:
    return f"{acc.bits},{acc.overflow}" + (",pair_saturation" if acc.pair_saturation else "")


def _loader_defaults() -> dict:
    from .. import tflite

    params = inspect.signature(tflite.load_model).parameters
    return {k: params[k].default for k in _KEYS if k in params}


def variant_label(kwargs: dict, base: dict) -> str:
    """The words naming ``kwargs`` relative to ``base`` (the keywords that differ, ``load_model``'s
    defaults filled in), e.g. ``"engine=tflm"``; ``"base"`` when nothing differs."""
    defaults = _loader_defaults()
    kwargs, base = {**defaults, **kwargs}, {**defaults, **base}
    words = []
    for key in _KEYS:
        v, b = kwargs.get(key), base.get(key)
        if v == b:
            continue
        if key == "accumulator":
            words.append("accumulator=" + ("32,wrap" if v is None else _acc_words(v)))
        else:
            words.append(f"{key}={v}")
    return " ".join(words) or "base"


def variant_words(kwargs: dict) -> str:
    """The full name of a keyword set: its engine, then whatever differs from ``load_model``'s
    defaults, e.g. ``"engine=litert accumulator=16,saturate"``."""
    engine = {**_loader_defaults(), **kwargs}["engine"]
    rest = variant_label(kwargs, {"engine": engine})
    return f"engine={engine}" + ("" if rest == "base" else f" {rest}")


def parse_variant(text: str, base: dict | None = None) -> dict:
    """``load_model`` keywords from a variant label (the inverse of :func:`variant_label`).

    ``text``: space-separated ``engine=E``, ``rounding=double|single``,
    ``accumulator=BITS,wrap|saturate[,pair_saturation]``; applied on top of ``base``.
    Raises ValueError naming the word it cannot read.
    """
    from ..accumulator import Accumulator

    kw = dict(base or {})
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep or key not in ("engine", "rounding", "accumulator") or not value:
            raise ValueError(f"parse_variant: {word!r} is not engine=E, rounding=R or accumulator=BITS,OVERFLOW")
        if key == "accumulator":
            parts = value.split(",")
            try:
                bits = int(parts[0])
            except ValueError:
                raise ValueError(f"parse_variant: {word!r}: accumulator bits must be an integer") from None
            overflow = parts[1] if len(parts) > 1 else "wrap"
            extra = parts[2:]
            if extra not in ([], ["pair_saturation"]):
                raise ValueError(f"parse_variant: {word!r}: only 'pair_saturation' may follow the overflow rule")
            kw["accumulator"] = Accumulator(bits, overflow, pair_saturation=bool(extra))
        else:
            kw[key] = value
    return kw


def _loader_options():
    """(engines, roundings or None) that ``dspsim.tflite.load_model`` accepts."""
    from .. import tflite
    from ..tflite.prepare import ROUNDINGS

    roundings = ROUNDINGS if "rounding" in inspect.signature(tflite.load_model).parameters else None
    return tuple(e.value for e in tflite.Engine), roundings


def _pair_saturation_applies(model) -> bool:
    """True when some MAC operator multiplies uint8 activations by int8 weights (vpmaddubsw's case)."""
    for k, name in model.operators:
        if name in _MAC_OPS:
            ins = model.operator_inputs(k)
            if model.tensor_info(ins[0]).dtype == np.uint8 and model.tensor_info(ins[1]).dtype == np.int8:
                return True
    return False


def engine_variants(base: dict) -> list:
    """Every engine x rounding flavour the loader offers (the base's accumulator kept), base first."""
    engines, roundings = _loader_options()
    defaults = _loader_defaults()
    out = [dict(base)]
    seen = [{**defaults, **base}]
    for e in engines:
        for r in roundings or (None,):
            kw = {**base, "engine": e}
            if r is not None:
                kw["rounding"] = r
            if {**defaults, **kw} not in seen:
                seen.append({**defaults, **kw})
                out.append(kw)
    return out


def accumulator_variants(model, on: dict) -> tuple:
    """(variants, skipped reasons): ``Accumulator(bits, wrap|saturate)`` for bits in 16..48 on top of
    ``on``, plus pair saturation (32-bit wrap and saturate) when the model's MAC ops are uint8 x int8."""
    from ..accumulator import Accumulator

    out = [{**on, "accumulator": Accumulator(b, ov)} for b in ACCUMULATOR_BITS for ov in ("wrap", "saturate")]
    skipped = []
    if _pair_saturation_applies(model):
        out += [{**on, "accumulator": Accumulator(32, ov, pair_saturation=True)} for ov in ("wrap", "saturate")]
    else:
        skipped.append("pair saturation: no MAC operator takes uint8 activations and int8 weights "
                       "(vpmaddubsw's case); the model is int8 x int8")
    return out, skipped


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


def _device_inputs(model, op_index: int, dumps: dict, values: dict) -> tuple:
    """(inputs for run_operator, undumped inputs): the device's dump of each activation input where
    it was dumped, dspsim's value elsewhere (a model input: the one given), None for constants and
    absent inputs. The undumped inputs are the operator outputs that were not dumped."""
    model_inputs = {t.index for t in model.inputs}
    ins, undumped = [], []
    for i in model.operator_inputs(op_index):
        if i < 0 or access.tensor_value(model, i) is not None:
            ins.append(None)
        elif i in dumps:  # a wider dump (int32 codes of an int8 tensor) is fed in the tensor's dtype
            ins.append(dumps[i].value.astype(model.tensor_info(i).dtype, copy=False))
        else:
            ins.append(values[i])
            if i not in model_inputs:
                undumped.append(i)
    return ins, undumped


def _op_output(model, op_index: int, out_tensor: int, dumps: dict, values: dict) -> tuple:
    """(output, undumped inputs) of operator ``op_index`` run alone on the device's inputs where
    dumped (:func:`_device_inputs`), the output shaped as its dump."""
    ins, undumped = _device_inputs(model, op_index, dumps, values)
    return np.asarray(model.run_operator(op_index, ins)).reshape(dumps[out_tensor].value.shape), undumped


def compare_layers(model, trace, dumps: dict) -> list:
    """One row per tensor of the run (and per constant), in execution order, each dumped one compared
    with dspsim's value; diverging operators get their locality."""
    values = _expected_values(model, trace)
    rows = []
    for op_index, op, t, name in _ordered_rows(model, trace):
        info = model.tensor_info(t)
        d: Dump | None = dumps.get(t)
        row = {"op_index": op_index, "op": op, "tensor": t, "name": name, "shape": list(info.shape),
               "dtype": np.dtype(info.dtype).name, "dumped": d is not None, "file": None if d is None else d.path.name,
               "file_dtype": None if d is None else d.file_dtype, "locality": None, "undumped_inputs": [],
               "comparison": None}
        if d is not None:
            c = compare(values[t], d.value, name)
            row["comparison"] = c.to_dict()
            if c.mismatches and op_index is not None and op_index >= 0:
                y, row["undumped_inputs"] = _op_output(model, op_index, t, dumps, values)
                row["locality"] = "local" if compare(y, d.value).mismatches else "inherited"
        if op_index is None and d is None:
            continue  # constants appear only when the device dumped them
        rows.append(row)
    return rows


def _first_divergence(rows: list):
    for r in rows:
        c = r["comparison"]
        if c is not None and c["mismatches"]:
            return {"op_index": r["op_index"], "op": r["op"], "tensor": r["tensor"], "name": r["name"],
                    "mismatches": c["mismatches"], "count": c["count"], "max_abs_diff": c["max_abs_diff"],
                    "first_index": c["first_index"], "expected": c["expected"], "actual": c["actual"],
                    "histogram": c["histogram"], "locality": r["locality"], "undumped_inputs": r["undumped_inputs"]}
    return None


# ---------------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------------
def search_variants(source, inputs, dumps: dict, variants: list, base: dict, *, first=None,
                    base_values=None, progress=None, start: int = 0, total: int | None = None) -> list:
    """Evaluate each ``load_model`` keyword set of ``variants`` against the dumps.

    For each: the whole model is traced on ``inputs`` and every dump compared (``mismatches``,
    ``tensors_matched``, ``first_op``); with ``first`` (the first divergence, an operator) the
    diverging operator alone is run on the device's inputs where dumped, ``base_values`` (dspsim's
    base-run values) elsewhere (``op_mismatches``). A variant the loader or a kernel refuses gets
    ``error`` (one line). ``progress(i, n, label)`` is called before each.
    Returns one dict per variant (see the module docstring), with ``_values`` (its values at the
    dumped tensors) for the equivalence check.
    """
    from .. import tflite

    n = total if total is not None else len(variants)
    out = []
    for i, kw in enumerate(variants):
        label = variant_label(kw, base)
        if progress:
            progress(start + i + 1, n, label)
        row = {"variant": label, "kwargs": _kwargs_text(kw), "mismatches": None, "tensors_matched": None,
               "tensors": len(dumps), "first_op": None, "op_mismatches": None, "same_as": None, "op_same_as": None,
               "error": None}
        try:
            m = tflite.load_model(source, **kw)
            trace = m.trace(inputs)
            values = _expected_values(m, trace)
            mism = _mismatches(values, dumps)
            row["mismatches"] = sum(mism.values())
            row["tensors_matched"] = sum(1 for v in mism.values() if v == 0)
            row["first_op"] = next((e.op_index for e in trace if mism.get(e.tensor)), None)
            row["_values"] = {k: values.get(k) for k in dumps}
            if first is not None and first["op_index"] is not None and first["op_index"] >= 0:
                y, _ = _op_output(m, first["op_index"], first["tensor"], dumps, base_values)
                row["op_mismatches"] = compare(y, dumps[first["tensor"]].value).mismatches
                row["_op_value"] = y
        except (ValueError, TypeError) as exc:
            row["error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        out.append(row)
    return out


def _kwargs_text(kw: dict) -> dict:
    return {k: (repr(v) if k == "accumulator" and v is not None else v) for k, v in kw.items()}


def _same_values(a: dict, b: dict) -> bool:
    return all(x is not None and y is not None and x.shape == y.shape and np.array_equal(x, y)
               for x, y in ((a[k], b[k]) for k in a))


def _mark_equivalents(rows: list, parents: dict) -> None:
    """Set ``same_as`` on each row whose dumped tensors equal those of its parent in ``parents``
    (label -> row: the base for an engine variant, the same keywords without the accumulator for
    an accumulator variant), ``op_same_as`` where the diverging operator's output does."""
    for r in rows:
        p = parents.get(r["variant"])
        if p is None:
            continue
        if "_values" in r and "_values" in p and _same_values(r["_values"], p["_values"]):
            r["same_as"] = p["variant"]
        if "_op_value" in r and "_op_value" in p and np.array_equal(r["_op_value"], p["_op_value"]):
            r["op_same_as"] = p["variant"]


def _default_search(source, inputs, dumps, model, base: dict, kw: dict) -> tuple:
    """(rows, skipped): the engine variants, then the accumulator variants on the base and on the
    engine variants that differ from the base and come closest; equivalent variants marked."""
    stage1 = engine_variants(base)
    n_acc = len(accumulator_variants(model, base)[0])
    found = search_variants(source, inputs, dumps, stage1, base, total=len(stage1) + n_acc, **kw)
    for i, r in enumerate(found[1:], 1):  # the same values as an earlier (simpler) engine variant?
        twin = next((p for p in found[:i] if p["same_as"] is None and "_values" in p and "_values" in r
                     and _same_values(r["_values"], p["_values"])), None)
        if twin is not None:
            _mark_equivalents([r], {r["variant"]: twin})
    distinct = [(v, r) for v, r in zip(stage1[1:], found[1:]) if r["error"] is None and r["same_as"] is None]
    best = min((r["mismatches"] for _, r in distinct), default=None)
    on = [base] + [v for v, r in distinct if r["mismatches"] == best]
    parents, skipped = {}, []
    for i, p in enumerate(on):
        accs, skipped = accumulator_variants(model, p)
        rows = search_variants(source, inputs, dumps, accs, base, start=len(stage1) + i * len(accs),
                               total=len(stage1) + len(on) * len(accs), **kw)
        parents.update({r["variant"]: found[stage1.index(p)] for r in rows})
        found += rows
    _mark_equivalents(found, parents)
    return [r for r in found if r["variant"] != "base"], skipped


def diagnose(source, inputs, dumps_dir, base: dict | None = None, *, variants=None, search: bool = True,
             progress=None) -> dict:
    """Compare a device's dumps with the model under ``base`` and search for the variant that explains them.

    Parameters
    ----------
    source : path or bytes
        The .tflite model.
    inputs : list of arrays
        The model inputs the device ran on.
    dumps_dir : path
        The device's dump directory (:mod:`dspsim.harness.dumps`).
    base : dict, optional
        ``load_model`` keywords of the reference (default ``{"engine": "litert"}``).
    variants : list of dict, optional
        ``load_model`` keyword sets to search (default: :func:`engine_variants`, then
        :func:`accumulator_variants` on the base and on the distinct engine variants that came
        closest).
    search : bool
        False: only compare (no variant search).
    progress : callable, optional
        ``progress(i, n, label)`` before each variant.

    Returns
    -------
    dict
        See the module docstring. ``passed`` is True when every dump matches the base.

    Raises
    ------
    DumpError
        For a bad dump directory or file (one line).
    ValueError, TypeError, OSError
        For a model or inputs that ``load_model`` / ``Model.run`` refuse.
    """
    from .. import tflite

    base = dict(base or {"engine": "litert"})
    model = tflite.load_model(source, **base)
    dumps, ignored = load_dumps(model, dumps_dir)
    trace = model.trace(inputs)
    rows = compare_layers(model, trace, dumps)
    first = _first_divergence(rows)
    d = {"schema": SCHEMA, "kind": "diagnose", "model": str(source) if not isinstance(source, bytes) else "<bytes>",
         "engine": variant_words(base), "dumps": str(dumps_dir), "dumped": len(dumps), "ignored": ignored,
         "passed": first is None, "first_divergence": first, "reproduced_by": [], "op_reproduced_by": [],
         "variants": [], "search": {"variants": 0, "skipped": []}, "layers": rows}
    if first is None or not search:
        return d
    if first["op_index"] is None or first["op_index"] < 0:
        what = "a constant (weights, bias)" if first["op_index"] is None else "a model input"
        d["search"]["skipped"].append(f"the first divergence is {what} the device holds differently: "
                                      "no arithmetic variant changes it")
        return d
    kw = dict(first=first, base_values=_expected_values(model, trace), progress=progress)
    if variants is not None:
        found = search_variants(source, inputs, dumps, list(variants), base, **kw)
    else:
        found, d["search"]["skipped"] = _default_search(source, inputs, dumps, model, base, kw)
    for r in found:
        r.pop("_values", None)
        r.pop("_op_value", None)
    d["variants"] = sorted(found, key=lambda r: (r["error"] is not None, r["mismatches"] if r["mismatches"] is not None
                                                 else 1 << 62, r["same_as"] is not None, r["op_mismatches"] or 0,
                                                 len(r["variant"].split())))
    d["search"]["variants"] = len(found)
    d["reproduced_by"] = [r["variant"] for r in d["variants"] if r["mismatches"] == 0 and r["same_as"] is None]
    d["op_reproduced_by"] = [r["variant"] for r in d["variants"]
                             if r["op_mismatches"] == 0 and r["op_same_as"] is None]
    return d

