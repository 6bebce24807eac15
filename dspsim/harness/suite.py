"""Suites: lists of cases, the built-in default one or a user's TOML file; running them.

A case is one op (see :func:`dspsim.harness.ops.vocabulary`) with parameters and a seed. Running it
generates the tensors from the seed (or reads them from a vector file), runs dspsim, compares the
result bit for bit with the oracle :mod:`dspsim.oracle`, measures the error against the float
model and tries the alternative schemes (see :mod:`dspsim.harness.ops`). A case passes when every
bit-exact check has 0 mismatches.

TOML schema (``dspsim suite my.toml``)::

    [suite]                      # optional
    name = "my-suite"            # used in the report directory name (the rule of case names below)
    seed = 0                     # default seed of the cases

    [[case]]
    name = "fc-ties"             # unique; default "<op>-<index>"; names become file names: 1 to 128
                                 # characters of A-Z a-z 0-9 _ . ^ + = , - (first a letter, digit or _)
    op = "fully_connected"       # any operator of `dspsim suite --ops` (every registered one)
    seed = 3                     # optional, else the suite seed
    vectors = "dump.npz"         # optional, relative to the TOML file: tensors that replace the
                                 # generated ones (input, weight, bias, multiplier, shift), and
                                 # "expected": a tensor dspsim's output must equal bit for bit
    batch = 4                    # every other key is a parameter of the op
    in_features = 64
    multiplier = 1073741824      # 0.5 in Q31, times 2^shift = 0.25: accumulators = 2 mod 4 are ties
    shift = -1
    input_range = [-8, 8]        # small inputs keep the outputs off the saturation bounds

Parameters of the operators with a study (defaults in brackets; lists mean "per channel"); every
other operator's parameters and defaults are printed by ``dspsim suite --ops``:

- ``tf_quantize``: T [qint8] (qint8 quint8 qint16 quint16 qint32), mode [MIN_COMBINED]
  (MIN_FIRST SCALED), round_mode [HALF_AWAY_FROM_ZERO] (HALF_TO_EVEN: SCALED only), narrow_range
  [false], min_range [-1.0], max_range [1.0] (lists with axis), axis, ensure_minimum_range [0.01],
  shape [[257]], data [uniform] (ties wide), values [none: floats written over the first
  elements of the generated input, e.g. a tie you care about]; the same data / values for the
  next two ops.
- ``affine_quantize``: convention [torch] (onnx tflite), dtype [int8] (uint8 int16 uint16 int32),
  scale [0.05], zero_point [0], axis [1] (per-channel when scale is a list), shape, data.
- ``pof2_quantize``: bits [8], narrow_range [true], frac_bits [derived from max_abs], max_abs
  [4.0], rounding [half_to_even] (half_away_from_zero half_up floor toward_zero), shape, data.
- ``relu``: dtype [int8], shape, input_scale / output_scale [0.05], input_zero_point /
  output_zero_point [0], multiplier / shift [from the scales; when given, they define the
  output scale], activation [relu] (relu6 relu_n1_to_1), scheme [double] (single).
- ``fully_connected`` (batch [4], in_features [64], out_features [16]), ``conv2d``
  (input_shape [[1,8,8,4]] NHWC, kernel [[3,3]], out_channels [8], stride [1], padding [VALID]
  (SAME), dilation [1]), ``depthwise_conv2d`` (same, depth_multiplier [1] instead of
  out_channels), all with: input_dtype [int8] (uint8), output_dtype [int8], input_scale [0.05],
  input_zero_point [0], weight_scale [0.01] (list = per channel), per_channel [false] (true: random
  per-channel scales), weight_zero_point [0], output_scale [0.1], output_zero_point [0],
  multiplier / shift [from the scales, TFLite's derivation; when given, they define the output
  scale], input_range [the type's range] and weight_range [full] (narrow, or [low, high]) of the
  generated integers, activation [none] (relu relu6 relu_n1_to_1), act_min / act_max [from
  activation], scheme [double] (single fbgemm onnxruntime onnx-reference xnnpack), bias_spread
  [1.0: a quarter of the accumulator's typical size], accumulator_bits [none: int32 wrap; 16-64],
  accumulator_overflow [wrap] (saturate). A vector file's input and weight set the shapes.

Errors in the file (TOML syntax, unknown op or parameter, bad choice or type, missing or corrupt
vector file) raise :class:`SuiteError` with a one-line message naming the case.
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._io import FileRefused, read_bytes
from ._interrupt import SwallowedInterrupts, is_swallowed_interrupt
from .compare import compare
from .ops import Outcome, vocabulary
from .safe_io import NAME_MAX, check_name
from .vectors import VectorError, load_vectors


class SuiteError(ValueError):
    """A suite definition that cannot be used (one-line message)."""


@dataclass(frozen=True, eq=False)
class Case:
    """One case: an op name, its parameters (missing ones take the op's defaults) and a seed."""

    name: str
    op: str
    params: dict = field(default_factory=dict)
    seed: int = 0
    vectors: str | None = None

    def resolved(self) -> dict:
        """The op's defaults updated with this case's parameters."""
        return {**vocabulary()[self.op].defaults, **self.params}


@dataclass
class CaseResult:
    """The outcome of one case; ``status`` is ``"pass"``, ``"fail"`` (a check mismatched) or ``"error"``."""

    case: Case
    status: str
    seconds: float
    outcome: Outcome | None = None
    error: str | None = None

    @property
    def checks(self) -> list:
        return [] if self.outcome is None else self.outcome.checks

    def to_dict(self) -> dict:
        o = self.outcome
        return {
            "name": self.case.name,
            "op": self.case.op,
            "seed": self.case.seed,
            "params": _jsonable(self.case.params),
            "vectors": self.case.vectors,
            "status": self.status,
            "error": self.error,
            "seconds": round(self.seconds, 4),
            "n_outputs": 0 if o is None else o.n_outputs,
            "checks": [c.to_dict() for c in self.checks],
            "float": None if o is None or o.float is None else o.float.to_dict(),
            "schemes": [] if o is None else [s.to_dict() for s in o.schemes],
            "notes": [] if o is None else list(o.notes),
        }


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


#: Parameters that may also be lists (one value per channel / per axis).
LIST_PARAMS = {"values", "min_range", "max_range", "scale", "zero_point", "weight_scale", "multiplier", "shift", "stride",
               "dilation", "input_range", "weight_range"}


def _check_type(name: str, key: str, value, default) -> None:
    """The value's kind must match the default's (numbers, booleans, strings, (nested) lists of numbers)."""
    def is_num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    ok = True
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif is_num(default):
        ok = is_num(value) or (key in LIST_PARAMS and isinstance(value, list) and all(map(is_num, value)))
    elif isinstance(default, list):  # numbers, or lists of numbers (a shape list, a (rank, 2) padding table)
        def numbers(v):
            return isinstance(v, list) and all(is_num(x) or numbers(x) for x in v)
        ok = numbers(value)
    elif isinstance(default, str):
        ok = isinstance(value, str) or (key in LIST_PARAMS and isinstance(value, list))
    elif default is None and value is not None:
        ok = is_num(value) or (key in LIST_PARAMS and isinstance(value, list) and all(map(is_num, value)))
    if not ok:
        raise SuiteError(f"case {name!r}: {key} = {value!r} has the wrong type (default: {default!r})")


def validate_case(case: Case) -> None:
    """Check the op name, parameter names and enumerated choices of ``case`` (SuiteError)."""
    vocab = vocabulary()
    if case.op not in vocab:
        raise SuiteError(f"case {case.name!r}: unknown op {case.op!r}; expected one of {sorted(vocab)}")
    op = vocab[case.op]
    for key, value in case.params.items():
        if key not in op.defaults:
            raise SuiteError(f"case {case.name!r}: op {case.op!r} has no parameter {key!r}; "
                             f"it takes {sorted(op.defaults)}")
        allowed = op.choices.get(key)
        if allowed is not None and value is not None and value not in allowed:
            raise SuiteError(f"case {case.name!r}: {key} = {value!r} is not one of {list(allowed)}")
        _check_type(case.name, key, value, op.defaults[key])
    if not isinstance(case.seed, int) or isinstance(case.seed, bool):
        raise SuiteError(f"case {case.name!r}: seed must be an integer, got {case.seed!r}")
    given = {**op.defaults, **case.params}
    if "multiplier" in given and "shift" in given and (given["multiplier"] is None) != (given["shift"] is None):
        raise SuiteError(f"case {case.name!r}: multiplier and shift go together: give both or neither")


def _safe(name: str, what: str, p: Path) -> str:
    """A name that becomes a file or folder name: :func:`dspsim.harness.safe_io.check_name`'s rule."""
    try:
        return check_name(name, what, "load_suite")
    except ValueError as exc:
        raise SuiteError(f"{p}: {exc}") from None


def _stem_name(p: Path) -> str:
    """The suite's name when ``[suite]`` gives none: its file's stem, made safe."""
    stem = re.sub(r"[^A-Za-z0-9_.^+=,-]", "_", p.stem)[:NAME_MAX]
    return stem if stem and (stem[0].isalnum() or stem[0] == "_") else f"suite{stem}"[:NAME_MAX]


def load_suite(path) -> tuple[str, list]:
    """Read a TOML suite; returns ``(suite name, cases)``. Raises SuiteError on any problem."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the same parser as the tomli package, a dependency there
        import tomli as tomllib
    p = Path(path)
    if not p.exists():
        raise SuiteError(f"{p}: no such file")
    try:
        doc = tomllib.loads(read_bytes(p, "load_suite").decode("utf-8"))
    except FileRefused as exc:
        raise SuiteError(str(exc)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{p}: invalid TOML: {exc}") from None
    head = doc.get("suite", {})
    if not isinstance(head, dict):
        raise SuiteError(f"{p}: [suite] must be a table")
    unknown = set(doc) - {"suite", "case"}
    if unknown:
        raise SuiteError(f"{p}: unknown top-level key(s) {sorted(unknown)}; expected [suite] and [[case]]")
    name = _safe(str(head["name"]), "suite name", p) if "name" in head else _stem_name(p)
    seed = head.get("seed", 0)
    raw = doc.get("case", [])
    if not isinstance(raw, list) or not raw:
        raise SuiteError(f"{p}: no cases: add [[case]] tables")
    cases, seen = [], set()
    for i, entry in enumerate(raw):
        entry = dict(entry)
        op = entry.pop("op", None)
        cname = _safe(str(entry["name"]), "case name", p) if "name" in entry else f"{op}-{i}"
        entry.pop("name", None)
        if op is None:
            raise SuiteError(f"{p}: case {cname!r} has no 'op'")
        if cname in seen:
            raise SuiteError(f"{p}: duplicate case name {cname!r}")
        seen.add(cname)
        cseed = entry.pop("seed", seed)
        vec = entry.pop("vectors", None)
        if vec is not None:
            vp = Path(vec)
            vec = str(vp if vp.is_absolute() else (p.parent / vp))
            try:
                load_vectors(vec)  # fail now, with the file's name, if it is missing or corrupt
            except VectorError as exc:
                raise SuiteError(f"case {cname!r}: {exc}") from None
        case = Case(cname, str(op), entry, cseed, vec)
        validate_case(case)
        cases.append(case)
    return name, cases


def run_case(case: Case) -> CaseResult:
    """Run one case; exceptions from the op become ``status="error"`` with a one-line message."""
    t0 = time.perf_counter()
    try:
        vec = load_vectors(case.vectors) if case.vectors else {}
        rng = np.random.default_rng(case.seed)
        outcome = vocabulary()[case.op].run(case.resolved(), rng, vec)
        if "expected" in vec:
            outcome.checks.append(compare(vec["expected"], outcome.vectors["output"], "vectors: expected"))
    except Exception as exc:  # noqa: BLE001 - one bad case must not end a long run; Ctrl-C still does
        if is_swallowed_interrupt(exc):  # a Ctrl-C lost inside numba's compiler
            raise KeyboardInterrupt from exc
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return CaseResult(case, "error", time.perf_counter() - t0, error=f"{type(exc).__name__}: {msg}")
    status = "pass" if all(c.passed for c in outcome.checks) else "fail"
    return CaseResult(case, status, time.perf_counter() - t0, outcome)


@dataclass
class SuiteResult:
    """All case results of a run, with the run's metadata."""

    name: str
    results: list
    seconds: float
    meta: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(r.status == "pass" for r in self.results)

    def summary(self) -> dict:
        checks = [c for r in self.results for c in r.checks]
        return {
            "cases": len(self.results),
            "passed": sum(r.status == "pass" for r in self.results),
            "failed": sum(r.status == "fail" for r in self.results),
            "errors": sum(r.status == "error" for r in self.results),
            "checks": len(checks),
            "checked_values": sum(c.count for c in checks),
            "mismatches": sum(c.mismatches for c in checks),
        }

    def to_dict(self) -> dict:
        return {
            "schema": "dspsim.suite/1",
            "kind": "suite",
            "run": {"name": self.name, "seconds": round(self.seconds, 3), **self.meta},
            "summary": self.summary(),
            "cases": [r.to_dict() for r in self.results],
        }


def run_suite(cases, name: str = "suite", progress=None, meta: dict | None = None) -> SuiteResult:
    """Run ``cases`` in order; ``progress(i, n, result)`` is called after each one."""
    t0 = time.perf_counter()
    results = []
    with SwallowedInterrupts() as interrupts:
        for i, case in enumerate(cases):
            r = run_case(case)
            interrupts.check()
            results.append(r)
            if progress is not None:
                progress(i + 1, len(cases), r)
    return SuiteResult(name, results, time.perf_counter() - t0, dict(meta or {}))


def find_cases(names, cases) -> list:
    """The cases called ``names`` (in that order); SuiteError naming the first unknown one."""
    by_name = {c.name: c for c in cases}
    missing = [n for n in names if n not in by_name]
    if missing:
        close = [c for c in by_name if missing[0] in c][:5]
        hint = f"; similar: {close}" if close else "; `dspsim suite --list` prints the names"
        raise SuiteError(f"no case named {missing[0]!r}{hint}")
    return [by_name[n] for n in names]
