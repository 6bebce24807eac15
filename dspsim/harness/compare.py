"""Bit-exact comparison of two tensors, and error against a float model.

:func:`compare` answers "are these integers identical, and if not, where and by how much": the
number of mismatching elements, the first one (as an index tuple, C order), the largest absolute
difference in LSB (for integer tensors one code is one LSB) and a histogram of the signed
differences ``actual - expected``. Float tensors are compared by their bit patterns (``-0.0`` and
``0.0`` differ, a NaN equals a NaN with the same bits); their differences are reported in units of
``lsb`` when given (the quantization step), else in float32/float64 ULPs.

:func:`compare_files` pairs the arrays of two vector files (``.npz``, ``.npy``, raw ``.bin``,
``$readmemh`` ``.hex``, decimal ``.txt``) by name and compares each pair, reshaping a flat dump to
the other side's shape and noting a dtype difference between arrays of equal values.

:func:`float_error` measures a quantized result against the exact (float) model: bias (mean
error), RMS and max |error| in LSB, and SQNR in dB.

Both return frozen dataclasses with ``to_dict()`` for ``results.json`` (see ``report.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._io import read_bytes
from .vectors import VectorError, load_vectors, read_array

#: Signed differences beyond this many LSB are pooled into the ``"<-N"`` / ``">N"`` histogram bins.
HISTOGRAM_LIMIT = 16


@dataclass(frozen=True)
class Comparison:
    """The result of a bit-exact comparison of ``actual`` against ``expected``.

    ``max_abs_diff`` and the histogram keys are in LSB (codes) for integer tensors, in ``lsb``
    units or ULPs for float tensors (``unit`` says which). ``sampled`` describes the subset compared
    when not every element was (``None``: all of them).
    """

    name: str
    shape: tuple
    count: int
    mismatches: int
    first_index: tuple | None = None
    expected_value: float | int | None = None
    actual_value: float | int | None = None
    max_abs_diff: float = 0
    histogram: dict = field(default_factory=dict)
    unit: str = "LSB"
    sampled: str | None = None

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "count": self.count,
            "mismatches": self.mismatches,
            "passed": self.passed,
            "first_index": None if self.first_index is None else list(self.first_index),
            "expected": self.expected_value,
            "actual": self.actual_value,
            "max_abs_diff": self.max_abs_diff,
            "unit": self.unit,
            "histogram": dict(self.histogram),
            "sampled": self.sampled,
        }


def _histogram(diff: np.ndarray) -> dict:
    """Counts of the nonzero signed differences, beyond +-HISTOGRAM_LIMIT pooled."""
    d = diff[diff != 0]
    if d.size == 0:
        return {}
    hist = {}
    lo, hi = d < -HISTOGRAM_LIMIT, d > HISTOGRAM_LIMIT
    if lo.any():
        hist[f"<-{HISTOGRAM_LIMIT}"] = int(lo.sum())
    values, counts = np.unique(d[~lo & ~hi], return_counts=True)
    hist.update({str(int(v)): int(c) for v, c in zip(values, counts)})
    if hi.any():
        hist[f">{HISTOGRAM_LIMIT}"] = int(hi.sum())
    return hist


def _scalar(v):
    v = v.item()
    return v if not isinstance(v, float) or math.isfinite(v) else str(v)


def compare(expected, actual, name: str = "", *, lsb: float | None = None, sampled: str | None = None) -> Comparison:
    """Compare two tensors element for element, bit for bit.

    Parameters
    ----------
    expected, actual : array_like
        Same shape. Both integer (compared as exact integers, whatever their widths), or both
        floating (compared by bit pattern after casting ``actual`` to ``expected``'s dtype).
    name : str
        Label carried into the report.
    lsb : float, optional
        For float tensors, the quantization step in which to express differences (rounded to the
        nearest integer for the histogram). Without it, float differences are in ULPs.
    sampled : str, optional
        Description of the subset compared, carried into the report.

    Raises
    ------
    ValueError
        If the shapes differ, or one tensor is integer and the other floating.
    """
    e, a = np.asarray(expected), np.asarray(actual)
    if e.shape != a.shape:
        raise ValueError(f"compare: shapes differ: expected {e.shape}, actual {a.shape}")
    kinds = {e.dtype.kind, a.dtype.kind}
    if kinds <= set("iub"):
        diff = a.astype(np.int64) - e.astype(np.int64)
        if e.dtype == np.uint64 or a.dtype == np.uint64:  # exact via Python ints
            diff = np.array([int(y) - int(x) for x, y in zip(e.ravel(), a.ravel())], dtype=object).reshape(e.shape)
        bad = diff != 0
        mag = np.abs(diff)
        unit = "LSB"
        hist_diff = diff
    elif kinds <= set("f"):
        a = a.astype(e.dtype)
        bits = np.dtype(f"i{e.dtype.itemsize}")
        eb, ab = e.view(bits).astype(np.int64), a.view(bits).astype(np.int64)
        bad = eb != ab
        if lsb:
            with np.errstate(invalid="ignore", over="ignore"):
                d = (a.astype(np.float64) - e.astype(np.float64)) / lsb
            d = np.where(bad & ~np.isfinite(d), np.inf, np.where(bad, d, 0.0))
            mag = np.abs(d)
            hist_diff = np.where(np.isfinite(d), np.rint(d), np.sign(d) * (HISTOGRAM_LIMIT + 1)).astype(np.int64)
            hist_diff = np.where(bad & (hist_diff == 0), np.sign(d).astype(np.int64), hist_diff)
            unit = "LSB"
        else:
            # ULP distance: map sign-magnitude bit patterns onto a monotonic integer line
            mask = np.int64(2 ** (8 * e.dtype.itemsize - 1) - 1)
            eo = np.where(eb < 0, -(eb & mask), eb & mask)
            ao = np.where(ab < 0, -(ab & mask), ab & mask)
            hist_diff = ao - eo
            mag = np.abs(hist_diff)
            unit = "ULP"
        diff = hist_diff
    else:
        raise ValueError(f"compare: cannot compare {e.dtype} with {a.dtype} (integer with float)")
    n_bad = int(np.count_nonzero(bad))
    first = None
    ev = av = None
    if n_bad:
        flat = int(np.flatnonzero(np.asarray(bad).ravel())[0])
        first = tuple(int(i) for i in np.unravel_index(flat, e.shape)) if e.ndim else ()
        ev, av = _scalar(e.ravel()[flat]), _scalar(a.ravel()[flat])
    max_abs = 0
    if n_bad:
        m = np.max(np.asarray(mag)[np.asarray(bad)])
        max_abs = int(m) if unit == "LSB" and kinds <= set("iub") else float(m) if math.isfinite(m) else "inf"
    return Comparison(
        name=name,
        shape=tuple(e.shape),
        count=int(e.size),
        mismatches=n_bad,
        first_index=first,
        expected_value=ev,
        actual_value=av,
        max_abs_diff=max_abs,
        histogram=_histogram(np.asarray(diff, dtype=np.int64)) if n_bad else {},
        unit=unit,
        sampled=sampled,
    )


_SHAPED = (".npz", ".npy")  # files that carry dtype and shape; the others are raw dumps
#: The largest ``manifest.json`` read to find a raw dump's dtype and shape.
MANIFEST_BYTES = 64 << 20


def manifest_entry(path) -> tuple | None:
    """(dtype, shape, manifest path) of a raw file that ``dspsim export-model`` wrote, from the
    ``manifest.json`` beside it (or one folder up, for a file in an operator's folder); None when no manifest
    lists it."""
    import json

    path = Path(path)
    for folder in (path.parent, path.parent.parent):
        m = folder / "manifest.json"
        try:
            if not m.is_file():
                continue
            doc = json.loads(read_bytes(m, "compare", MANIFEST_BYTES).decode("utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("dspsim.export-model/"):
            continue
        rel = path.relative_to(folder).as_posix()
        rows = list(doc.get("tensors") or []) + [p for op in doc.get("operators") or []
                                                 for p in (op.get("params") or {}).values()]
        for row in rows:
            if isinstance(row, dict) and row.get("file") == rel and row.get("key") is None:
                try:
                    return np.dtype(row["dtype"]), tuple(int(d) for d in row["shape"]), m
                except (KeyError, TypeError, ValueError):
                    return None
    return None


def _load_side(path: Path, key, dtype, shape, like, hex_layout=None, notes=None) -> dict:
    """{name: array} of one file: a ``.npz`` by entry (``key``: only that one), anything else one
    array under its file stem; a raw dump takes ``dtype`` / ``shape``, else the export manifest's
    beside it (:func:`manifest_entry`), else ``like``'s."""
    if path.suffix.lower() == ".npz":
        return load_vectors(path, key)
    if path.suffix.lower() == ".npy":
        return load_vectors(path)
    found = manifest_entry(path) if dtype is None or shape is None else None
    if found is not None and (dtype is None or np.dtype(dtype) == found[0]):
        if notes is not None:
            notes.append(f"`{path.name}`: dtype {found[0]} and shape {found[1]} from {found[2]}")
        dtype, shape = found[0], found[1] if shape is None else shape
    if dtype is None and like is None:
        raise VectorError(f"{path}: a raw {path.suffix} dump has no dtype; give --dtype (or compare a file of a "
                          "dspsim export-model folder, whose manifest.json gives it)")
    return {path.stem: read_array(path, dtype=like.dtype if dtype is None else dtype,
                                  shape=like.shape if shape is None and like is not None else shape,
                                  hex_layout=hex_layout)}


def _one(arrays: dict, key):
    return next(iter(arrays.values())) if len(arrays) == 1 else arrays.get(key)


def compare_files(expected, actual, key: str | None = None, *, dtype=None, shape=None, hex_layout=None) -> dict:
    """Compare the arrays of two vector files, bit for bit.

    Parameters
    ----------
    expected, actual : path-like
        ``.npz`` (arrays by entry name), ``.npy`` (one array, named by the file stem), or a raw dump
        ``.bin`` / ``.hex`` / ``.txt`` (one array, see :mod:`dspsim.harness.vectors`).
    key : str, optional
        Compare only this array. A ``.npz`` that lacks it is a VectorError (the CLI's exit 2).
    dtype : numpy dtype, optional
        The dtype of raw dumps (default: the other file's array's).
    shape : tuple of int, optional
        The shape of raw dumps (default: the other file's array's; the element counts must agree).
    hex_layout : HexLayout, optional
        How ``.hex`` words pack values (:class:`dspsim.harness.vectors.HexLayout`; default one per word).

    A raw file that ``dspsim export-model`` wrote takes its dtype and shape from the export's
    ``manifest.json`` (beside it, or one folder up for a file in an operator's folder), unless ``dtype`` says otherwise;
    the other side then takes them from it (noted).

    Pairing: two single arrays pair whatever their names unless both files are ``.npz``;
    otherwise arrays pair by name and an array on one side only is a problem (a failure). No
    name in common is a VectorError. A pair of equal size where one side is flat (1-D) is
    compared after reshaping ``actual`` to ``expected``'s shape (noted); other shape differences
    are problems. Equal values in different dtypes pass, with a note saying so.

    Returns
    -------
    dict
        ``{"checks": [Comparison.to_dict()], "problems": [str], "notes": [str], "passed": bool}``.

    Raises
    ------
    VectorError
        A missing or unreadable file, a missing ``key``, a raw dump without a dtype or of the wrong
        size, no array name in common.
    """
    e_path, a_path = Path(expected), Path(actual)
    problems, notes = [], []
    kw = dict(hex_layout=hex_layout, notes=notes)
    if e_path.suffix.lower() not in _SHAPED and (a_path.suffix.lower() in _SHAPED or (
            manifest_entry(e_path) is None and manifest_entry(a_path) is not None)):
        act = _load_side(a_path, key, dtype, shape, None, **kw)  # the shaped side first: the other one takes its
        exp = _load_side(e_path, key, dtype, shape, _one(act, key), **kw)  # dtype and shape
    else:
        exp = _load_side(e_path, key, dtype, shape, None, **kw)
        act = _load_side(a_path, key, dtype, shape, _one(exp, key), **kw)
    both_named = e_path.suffix.lower() == ".npz" and a_path.suffix.lower() == ".npz"
    if len(exp) == 1 and len(act) == 1 and (key or not both_named or set(exp) == set(act)):
        pairs = [(key or next(iter(exp)), next(iter(exp.values())), next(iter(act.values())))]
    else:
        common = [k for k in exp if k in act]
        problems += [f"`{k}` only in expected" for k in exp if k not in act]
        problems += [f"`{k}` only in actual" for k in act if k not in exp]
        if not common:
            raise VectorError(f"no array names in common: expected has {sorted(exp)}, actual has {sorted(act)}; "
                              "pick one with --key")
        pairs = [(k, exp[k], act[k]) for k in common]
    checks = []
    for name, e, a in pairs:
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape and e.size == a.size and (e.ndim <= 1 or a.ndim <= 1):
            notes.append(f"`{name}`: actual {a.shape} reshaped to expected {e.shape} (C order)")
            a = a.reshape(e.shape)
        try:
            c = compare(e, a, name)
        except ValueError as exc:
            problems.append(f"`{name}`: {exc}")
            continue
        if e.dtype != a.dtype:
            notes.append(f"`{name}`: dtypes differ: expected {e.dtype}, actual {a.dtype}"
                         + ("; the values are equal" if c.passed else ""))
        checks.append(c.to_dict())
    return {"checks": checks, "problems": problems, "notes": notes,
            "passed": not problems and all(c["passed"] for c in checks)}


@dataclass(frozen=True)
class FloatError:
    """Error of a quantized result against the float model, in LSB of the result's scale.

    ``mean_lsb`` is the bias (signed mean error), ``rms_lsb`` and ``max_abs_lsb`` its spread;
    ``sqnr_db`` = 10 log10(sum(exact^2) / sum(error^2)) (``None`` when the error is exactly 0).
    ``saturated`` counts elements whose exact value lies outside the representable range (their
    error is measured against the clamped exact value, so it reports rounding only).
    """

    count: int
    mean_lsb: float
    rms_lsb: float
    max_abs_lsb: float
    sqnr_db: float | None
    saturated: int = 0

    def to_dict(self) -> dict:
        return {
            "count": self.count,
            "mean_lsb": self.mean_lsb,
            "rms_lsb": self.rms_lsb,
            "max_abs_lsb": self.max_abs_lsb,
            "sqnr_db": self.sqnr_db,
            "saturated": self.saturated,
        }


def float_error(approx, exact, lsb, lo: float | None = None, hi: float | None = None) -> FloatError:
    """Error of ``approx`` (real values of a quantized tensor) against ``exact`` (the float model).

    ``lsb`` is the quantization step (scalar, or broadcastable per channel). If ``lo``/``hi`` are
    given, ``exact`` is clamped to them first and the clamped count is reported as ``saturated``.
    SQNR uses the unclamped signal power.
    """
    x = np.asarray(exact, dtype=np.float64)
    y = np.asarray(approx, dtype=np.float64)
    sat = 0
    ref = x
    if lo is not None or hi is not None:
        ref = np.clip(x, -np.inf if lo is None else lo, np.inf if hi is None else hi)
        sat = int(np.count_nonzero(ref != x))
    err = (y - ref) / np.asarray(lsb, dtype=np.float64)
    n = int(err.size)
    if n == 0:
        return FloatError(0, 0.0, 0.0, 0.0, None, 0)
    noise = float(np.sum((y - ref) ** 2))
    signal = float(np.sum(x**2))
    sqnr = None if noise == 0 else (10 * math.log10(signal / noise) if signal > 0 else -math.inf)
    if sqnr is not None and not math.isfinite(sqnr):
        sqnr = None
    return FloatError(
        count=n,
        mean_lsb=float(np.mean(err)),
        rms_lsb=float(np.sqrt(np.mean(err**2))),
        max_abs_lsb=float(np.max(np.abs(err))),
        sqnr_db=sqnr,
        saturated=sat,
    )
